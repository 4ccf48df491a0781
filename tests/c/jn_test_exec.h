/* jn_test_exec.h -- what the C tests that run IR graphs share: inputs from
 * a seeded stream, one run of a graph through the executor (every output,
 * state writes included, in output order), and element comparison.
 * Included by test_codegen.c and test_exec.c after jn_test.h.
 */
#ifndef JN_TEST_EXEC_H
#define JN_TEST_EXEC_H

#include "jn_exec.h"
#include "jn_ir.h"

/* Input i of g at symbol values sv: float tensors from the pseudo-random
 * stream *seed (uniform in [-2, 2)), integer and bool tensors zero (valid
 * indices), scalars and constants their recorded value as wrapped numbers. */
static inline jn_tensor *jt_make_input(const jn_ir_graph *g, const int64_t *sv, int32_t i, uint64_t *seed) {
    const jn_ir_input *in = &g->inputs[i];
    const jn_ir_value *x = &g->values[in->value];
    if (in->kind == JN_IR_IN_CONST || in->kind == JN_IR_IN_SCALAR)
        return jn_dtype_is_float(x->dtype) ? jn_scalar_f64(in->scalar, x->dtype, 1)
                                           : jn_scalar_i64((int64_t)in->scalar, x->dtype, 1);
    int64_t shape[JN_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++)
        if (jn_ir_dim_eval(g, x->shape[d], sv, &shape[d]) != JN_OK || shape[d] < 0) return NULL;
    jn_tensor *t = jn_tensor_zeros(x->dtype, x->ndim, shape);
    if (t && (x->dtype == JN_F32 || x->dtype == JN_F64)) {
        int64_t n = jn_numel(t);
        for (int64_t k = 0; k < n; k++) {
            *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
            double r = (double)(*seed >> 11) / 9007199254740992.0 * 4.0 - 2.0;
            if (x->dtype == JN_F32) ((float *)jn_data(t))[k] = (float)r;
            else ((double *)jn_data(t))[k] = r;
        }
    }
    return t;
}

/* Runs graph gi of m once through the executor (lib, flags) at symbol
 * values sv with inputs from stream `seed`; outs[0 .. noutputs) get every
 * output in g->outputs order (a state output: the state input tensor after
 * the write-back).  st (may be NULL) gets the run's stats.  JN_OK or the
 * executor's error (message set); outs untouched on failure. */
static inline jn_status jt_run_graph(const jn_ir_module *m, int32_t gi, const jn_rt_exec_lib *lib, int flags,
                                     const int64_t *sv, uint64_t seed, jn_tensor **outs, jn_rt_exec_stats *st) {
    const jn_ir_graph *g = m->graphs[gi];
    jn_tensor **in = calloc((size_t)g->ninputs + 1, sizeof *in), **keep = calloc((size_t)g->noutputs + 1, sizeof *keep);
    jn_rt_exec *x = NULL;
    jn_status s = in && keep ? JN_OK : JN_ERR_NOMEM;
    for (int32_t i = 0; i < g->ninputs && s == JN_OK; i++) /* same stream for the same input index */
        if (!(in[i] = jt_make_input(g, sv, i, &seed)) && g->inputs[i].kind != JN_IR_IN_RNG)
            s = jn_error(JN_ERR_VALUE, "input %d not made", i);
    if (s == JN_OK) s = jn_rt_exec_new(m, gi, lib, flags, &x);
    if (s == JN_OK) s = jn_rt_exec_run(x, in, sv, keep);
    if (s == JN_OK && st) jn_rt_exec_last_stats(x, st);
    for (int32_t i = 0, k = 0; i < g->noutputs && s == JN_OK; i++) {
        if (g->outputs[i].kind == JN_IR_OUT_KEEP) outs[i] = keep[k++];
        else {
            outs[i] = in[g->outputs[i].state];
            jn_tensor_incref(outs[i]);
        }
    }
    jn_rt_exec_free(x);
    for (int32_t i = 0; in && i < g->ninputs; i++)
        if (in[i]) jn_tensor_decref(in[i]);
    free(in);
    free(keep);
    return s;
}

/* Element k of t in row-major order, through its strides, as a double. */
static inline double jt_elem(const jn_tensor *t, int64_t k) {
    int64_t off = 0, rem = k;
    for (int d = t->ndim - 1; d >= 0; d--) {
        off += (rem % t->shape[d]) * t->strides[d];
        rem /= t->shape[d];
    }
    const char *p = (const char *)t->storage->data + (t->offset + off) * (int64_t)jn_dtype_size[t->dtype];
    switch (t->dtype) {
    case JN_F32: return *(const float *)p;
    case JN_F64: return *(const double *)p;
    case JN_I64: return (double)*(const int64_t *)p;
    case JN_I32: return *(const int32_t *)p;
    case JN_U8:
    case JN_BOOL: return *(const uint8_t *)p;
    case JN_F16: return jn_f16_to_f32(*(const uint16_t *)p);
    case JN_BF16: return jn_bf16_to_f32(*(const uint16_t *)p);
    default: return 0;
    }
}

/* Same dtype and shape, and elements equal: mode 0 numerically (NaN equals
 * NaN, -0.0 equals 0.0), mode 1 bitwise (the bytes of each element; any two
 * NaNs equal: their sign and payload follow operand order), mode
 * 2 within relative tolerance rtol (and atol near zero). */
static inline int jt_same(const jn_tensor *a, const jn_tensor *b, int mode, double rtol) {
    if (a->dtype != b->dtype || !jn_same_shape(a->ndim, a->shape, b->ndim, b->shape)) return 0;
    int64_t n = jn_numel(a);
    for (int64_t k = 0; k < n; k++) {
        double x = jt_elem(a, k), y = jt_elem(b, k);
        if (mode == 1) {
            if (x != x && y != y) continue; /* which NaN an operation returns depends on operand order */
            if (a->dtype == JN_F32) {
                float fx = (float)x, fy = (float)y;
                if (memcmp(&fx, &fy, sizeof fx)) return 0;
            } else if (memcmp(&x, &y, sizeof x)) {
                return 0;
            }
        } else if (mode == 2) {
            if (!(x == y || (x != x && y != y) || fabs(x - y) <= rtol * (fabs(x) > fabs(y) ? fabs(x) : fabs(y)) + rtol))
                return 0;
        } else if (!(x == y || (x != x && y != y))) {
            return 0;
        }
    }
    return 1;
}
#endif
