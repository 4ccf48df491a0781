/* k_dist.c -- the collectives as table ops (ops.def: all_reduce_, broadcast_).
 *
 * A collective dispatched through the table is recorded like any op, so the
 * analyzer puts it inside the step's graph instead of cutting the step
 * there, and replay runs it from the compiled graph at the segment's end
 * (or eagerly, in the same place of the same order, on a miss).  The
 * kernels call the process group of runtime/dist.c, which owns every piece
 * of distributed state; here are only the checks that need no data (so a
 * wrong call fails where it is made, also while replay captures) and the
 * calls.  Both work on output 0, which the dispatcher and the executor make
 * input 0 itself or its functional copy.
 */
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

jn_status jn_infer_all_reduce_(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *m) {
    (void)nin;
    same_meta(in, m);
    jn_status s = need_group("all_reduce");
    if (s) return s;
    int64_t op = a->a[0].i;
    if (op < 0 || op >= JN_DIST_NOPS)
        return jn_error(JN_ERR_VALUE, "all_reduce: unknown ReduceOp %lld (janus.distributed.ReduceOp: SUM, AVG, "
                        "PRODUCT, MIN, MAX, BAND, BOR, BXOR)", (long long)op);
    int fl = jn_dtype_is_float(in[0]->dtype);
    if (op == JN_DIST_AVG && !fl)
        return jn_error(JN_ERR_TYPE, "all_reduce: ReduceOp.AVG needs a floating tensor (got %s): use SUM",
                        jn_dtype_names[in[0]->dtype]);
    if (op >= JN_DIST_BAND && fl)
        return jn_error(JN_ERR_TYPE, "all_reduce: ReduceOp.%s needs an integer tensor (got %s)", RED_NAMES[op],
                        jn_dtype_names[in[0]->dtype]);
    return JN_OK;
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
