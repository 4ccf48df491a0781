/* jn_test_exec.h -- what the C tests that run IR graphs share: one run of
 * a graph through the executor (every output, state writes included, in
 * output order), and element comparison.
 * Included by test_codegen.c and test_exec.c after jn_test.h.
 */
#ifndef JN_TEST_EXEC_H
#define JN_TEST_EXEC_H

#include "jn_cg.h"
#include "jn_exec.h"
#include "jn_ir.h"

/* m's generated C kernels emitted, compiled and loaded; NULL when there
 * are none, or there is no C compiler (*no_cc set, said once; later calls
 * return NULL at once).  Failures are CHECKed and printed naming `what`. */
static inline jn_ex_lib *jt_compile_lib(const jn_ir_module *m, const char *what, int *no_cc) {
    char *src = NULL;
    size_t len = 0, sl = 0;
    int nk = 0;
    void *so = NULL;
    uint64_t h = 0;
    jn_ex_lib *lib = NULL;
    if (*no_cc) return NULL;
    jn_status st = jn_cg_emit_c(m, &src, &len, &nk);
    CHECK(st == JN_OK);
    if (st == JN_OK && nk > 0) {
        st = jn_cg_compile_so(src, len, NULL, &so, &sl, NULL);
        if (st != JN_OK && strstr(jn_errmsg(), "no C compiler")) {
            printf("no C compiler: compiled kernels not tested (%s)\n", jn_errmsg());
            *no_cc = 1;
        } else {
            CHECK(st == JN_OK && jn_cg_module_hash(m, &h) == JN_OK);
            if (st == JN_OK) st = jn_ex_lib_open(so, sl, h, what, &lib);
            CHECK(st == JN_OK);
        }
        if (st != JN_OK && !*no_cc) fprintf(stderr, "%s: %s\n", what, jn_errmsg());
    }
    free(src);
    free(so);
    return lib;
}

/* Runs graph gi of m once through the executor (lib, flags) at symbol
 * values sv with inputs from jn_ex_make_inputs(seed); outs[0 .. noutputs) get every
 * output in g->outputs order (a state output: the state input tensor after
 * the write-back).  st (may be NULL) gets the run's stats; hook (may be
 * NULL) sees every generated kernel call (jn_ex_set_kcall_hook).
 * JN_OK or the executor's error (message set); outs untouched on failure. */
static inline jn_status jt_run_graph_hooked(const jn_ir_module *m, int32_t gi, const jn_ex_lib *lib, int flags,
                                            const int64_t *sv, uint64_t seed, jn_tensor **outs, jn_ex_stats *st,
                                            jn_ex_kcall_hook hook, void *hook_ctx) {
    const jn_ir_graph *g = m->graphs[gi];
    jn_tensor **in = calloc((size_t)g->ninputs + 1, sizeof *in), **keep = calloc((size_t)g->noutputs + 1, sizeof *keep);
    jn_ex_exec *x = NULL;
    jn_status s = in && keep ? jn_ex_make_inputs(g, sv, seed, in) : JN_ERR_NOMEM;
    if (s == JN_OK) s = jn_ex_new(m, gi, lib, flags, &x);
    if (s == JN_OK) jn_ex_set_kcall_hook(x, hook, hook_ctx);
    if (s == JN_OK) s = jn_ex_run(x, in, sv, keep);
    if (s == JN_OK && st) jn_ex_last_stats(x, st);
    for (int32_t i = 0, k = 0; i < g->noutputs && s == JN_OK; i++) {
        if (g->outputs[i].kind == JN_IR_OUT_KEEP) outs[i] = keep[k++];
        else {
            outs[i] = in[g->outputs[i].state];
            jn_tensor_incref(outs[i]);
        }
    }
    jn_ex_free(x);
    for (int32_t i = 0; in && i < g->ninputs; i++)
        if (in[i]) jn_tensor_decref(in[i]);
    free(in);
    free(keep);
    return s;
}

/* jt_run_graph_hooked with no kernel-call hook. */
static inline jn_status jt_run_graph(const jn_ir_module *m, int32_t gi, const jn_ex_lib *lib, int flags,
                                     const int64_t *sv, uint64_t seed, jn_tensor **outs, jn_ex_stats *st) {
    return jt_run_graph_hooked(m, gi, lib, flags, sv, seed, outs, st, NULL, NULL);
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
/* Within rtol of a's largest magnitude (normwise): a GPU sums in another
 * order than the CPU, and the rounding that leaves scales with the summands,
 * not with each result -- an element near 0 from cancelling 1e12-sized
 * terms (a recurrent graph on random data) is off by ~1e-7 of those. */
static inline int jt_close_norm(const jn_tensor *a, const jn_tensor *b, double rtol) {
    if (a->dtype != b->dtype || !jn_same_shape(a->ndim, a->shape, b->ndim, b->shape)) return 0;
    int64_t n = jn_numel(a);
    double big = 0;
    for (int64_t k = 0; k < n; k++) {
        double x = fabs(jt_elem(a, k));
        if (x > big && x != INFINITY) big = x;
    }
    for (int64_t k = 0; k < n; k++) {
        double x = jt_elem(a, k), y = jt_elem(b, k);
        if (!(x == y || (x != x && y != y) || fabs(x - y) <= rtol * big + rtol)) return 0;
    }
    return 1;
}

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
