/* k_dist.c -- the collectives as table ops (ops.def: all_reduce_, broadcast_,
 * all_gather, reduce_scatter, barrier).
 *
 * A collective dispatched through the table is recorded like any op, so the
 * analyzer puts it inside the step's graph instead of cutting the step
 * there, and replay runs it from the compiled graph at the segment's end
 * (or eagerly, in the same place of the same order, on a miss).  The
 * kernels call the process group of runtime/dist.c, which owns every piece
 * of distributed state; here are only the checks that need no data (so a
 * wrong call fails where it is made, also while replay captures) and the
 * calls.  all_reduce_ and broadcast_ work on output 0, which the dispatcher
 * and the executor make input 0 itself or its functional copy; the others
 * write a new output.
 */
#include "jn_backend.h" /* jn_rt_to_device: a contiguous copy of a strided input */
#include "jn_dist.h"

#include <string.h>

static const char *const RED_NAMES[JN_DIST_NOPS] = {"SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"};

static void same_meta(jn_tensor *const *in, jn_meta *m) {
    m->dtype = in[0]->dtype;
    m->ndim = in[0]->ndim;
    memcpy(m->shape, in[0]->shape, sizeof m->shape);
}

static jn_status need_group(const char *what) {
    if (!jn_rt_dist_initialized())
        return jn_error(JN_ERR_RUNTIME, "%s: the default process group is not initialized: call "
                        "janus.distributed.init_process_group(backend=\"mpi\") first", what);
    return JN_OK;
}

/* ReduceOp op over dtype d: AVG takes floats, the bitwise ops integers */
static jn_status check_red(const char *what, int64_t op, jn_dtype d) {
    if (op < 0 || op >= JN_DIST_NOPS)
        return jn_error(JN_ERR_VALUE, "%s: unknown ReduceOp %lld (janus.distributed.ReduceOp: SUM, AVG, "
                        "PRODUCT, MIN, MAX, BAND, BOR, BXOR)", what, (long long)op);
    int fl = jn_dtype_is_float(d);
    if (op == JN_DIST_AVG && !fl)
        return jn_error(JN_ERR_TYPE, "%s: ReduceOp.AVG needs a floating tensor (got %s): use SUM", what,
                        jn_dtype_names[d]);
    if (op >= JN_DIST_BAND && fl)
        return jn_error(JN_ERR_TYPE, "%s: ReduceOp.%s needs an integer tensor (got %s)", what, RED_NAMES[op],
                        jn_dtype_names[d]);
    return JN_OK;
}

jn_status jn_infer_all_reduce_(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *m) {
    (void)nin;
    same_meta(in, m);
    jn_status s = need_group("all_reduce");
    return s ? s : check_red("all_reduce", a->a[0].i, in[0]->dtype);
}

jn_status jn_cpu_all_reduce_(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_meta m;
    jn_status s = jn_infer_all_reduce_(nin, in, a, &m);
    return s ? s : jn_rt_dist_all_reduce(out[0], (jn_dist_op)a->a[0].i);
}

jn_status jn_infer_broadcast_(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *m) {
    (void)nin;
    same_meta(in, m);
    jn_status s = need_group("broadcast");
    if (s) return s;
    int64_t src = a->a[0].i;
    if (src < 0 || src >= jn_rt_dist_world_size())
        return jn_error(JN_ERR_VALUE, "broadcast: src=%lld is not a rank of this world of %d", (long long)src,
                        jn_rt_dist_world_size());
    return JN_OK;
}

jn_status jn_cpu_broadcast_(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_meta m;
    jn_status s = jn_infer_broadcast_(nin, in, a, &m);
    return s ? s : jn_rt_dist_broadcast(out[0], (int)a->a[0].i);
}

/* t itself when contiguous, else a contiguous copy on its device (a new
 * reference; NULL with *s set when out of memory): MPI and NCCL take
 * buffers, and a graph may hand the kernel a strided view */
static jn_tensor *dense(jn_tensor *t, jn_status *s) {
    jn_tensor *c = jn_rt_to_device(t, t->storage ? t->storage->device : JN_CPU, 0);
    if (!c) *s = jn_error(JN_ERR_NOMEM, "out of memory making a contiguous copy for a collective");
    return c;
}

jn_status jn_infer_all_gather(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *m) {
    (void)nin, (void)a;
    same_meta(in, m);
    jn_status s = need_group("all_gather");
    if (s) return s;
    int64_t w = jn_rt_dist_world_size();
    if (!m->ndim) { /* a 0-d tensor per rank: one element each */
        m->ndim = 1;
        m->shape[0] = w;
    } else {
        m->shape[0] *= w;
    }
    return JN_OK;
}

jn_status jn_cpu_all_gather(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_meta m;
    jn_status s = jn_infer_all_gather(nin, in, a, &m);
    jn_tensor *c = s ? NULL : dense(in[0], &s);
    if (c) s = jn_rt_dist_all_gather(out[0], c);
    if (c) jn_tensor_decref(c);
    return s;
}

jn_status jn_infer_reduce_scatter(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *m) {
    (void)nin;
    same_meta(in, m);
    jn_status s = need_group("reduce_scatter");
    if (s || (s = check_red("reduce_scatter", a->a[0].i, in[0]->dtype))) return s;
    int64_t w = jn_rt_dist_world_size();
    if (!m->ndim || m->shape[0] % w)
        return jn_error(JN_ERR_SHAPE, "reduce_scatter: the input's first dimension (%s%lld) must split into %lld "
                        "equal shares, one per rank: pass a tensor of world_size * n rows", m->ndim ? "" : "a 0-d "
                        "tensor has none: ", (long long)(m->ndim ? m->shape[0] : 0), (long long)w);
    m->shape[0] /= w;
    return JN_OK;
}

jn_status jn_cpu_reduce_scatter(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_meta m;
    jn_status s = jn_infer_reduce_scatter(nin, in, a, &m);
    jn_tensor *c = s ? NULL : dense(in[0], &s);
    if (c) s = jn_rt_dist_reduce_scatter(out[0], c, (jn_dist_op)a->a[0].i);
    if (c) jn_tensor_decref(c);
    return s;
}

jn_status jn_infer_barrier(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *m) {
    (void)nin, (void)in, (void)a;
    memset(m, 0, sizeof *m);
    m->dtype = JN_I32;
    return need_group("barrier");
}

jn_status jn_cpu_barrier(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_meta m;
    jn_status s = jn_infer_barrier(nin, in, a, &m);
    if (s || (s = jn_rt_dist_barrier())) return s;
    /* the token: 0 on whichever backend made it (jn_copy_into crosses devices) */
    jn_tensor *z = jn_tensor_zeros(JN_I32, 0, NULL);
    if (!z) return jn_error(JN_ERR_NOMEM, "barrier: out of memory");
    s = jn_copy_into(out[0], z);
    jn_tensor_decref(z);
    return s;
}
