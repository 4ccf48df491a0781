/* autocast.c -- mixed precision: PyTorch's autocast as one policy table.
 *
 * The policy of every op is one row of `policy` below, keyed by the op enum
 * from ops.def, with a column per device type (PyTorch keeps separate lists
 * for AutocastCPU and AutocastCUDA, and they differ: on the cpu softmax,
 * exp, log and sum run in the region's dtype, on cuda in float32).  Ops
 * without a row run on their inputs' dtypes.  Composite functions of the
 * Python front end that PyTorch dispatches as single ops (the losses,
 * layer_norm, batch_norm) have rows in a second table keyed by name; the
 * front end casts their inputs through the same planner and runs their
 * body with autocast suspended, as PyTorch runs one kernel.
 *
 * jn_dispatch reaches jn_rt_autocast_dispatch only while some thread has
 * a region enabled (a global counter, so a process that never uses
 * autocast pays one load per op).  Casts are `cast` ops through the
 * dispatcher: differentiable (the engine casts the gradient back to the
 * input's dtype), recorded, captured by replay like any op.  Casts of leaf
 * parameters to the region's dtype are cached per thread until the
 * outermost region exits (PyTorch's cache_enabled), and recast when the
 * parameter was written in place since or its cast's history was released
 * by a backward pass (a Janus node cannot be backpropagated twice).
 *
 * Derivative formulas run with autocast suspended (autograd.c): backward
 * ops compute in the dtypes of the forward ops, as PyTorch documents.
 */
#include "jn_autocast.h"
#include "jn_autograd.h"
#include "jn_backend.h"

#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------------- policy */
enum { LOWER = JN_AC_LOWER, FP32 = JN_AC_FP32, PROMOTE = JN_AC_PROMOTE, RSCALAR = JN_AC_FP32_RSCALAR };

/* [op] = {cpu, cuda}: PyTorch 2.x's autocast_mode.cpp lists restricted to
 * the ops this table has (atan2 promotes natively in PyTorch's cpu path;
 * the row gives Janus's kernel the same inputs).  The fused RNN cells are
 * PyTorch's _thnn_fused_*_cell without the GEMMs (those are `linear` here,
 * lower precision), so they promote: a float32 state stays float32. */
static const unsigned char policy[JN_NOPS][JN_NDEVICES] = {
    [JN_OP_mm] = {LOWER, LOWER},
    [JN_OP_bmm] = {LOWER, LOWER},
    [JN_OP_matmul] = {LOWER, LOWER},
    [JN_OP_addmm] = {LOWER, LOWER},
    [JN_OP_linear] = {LOWER, LOWER},
    [JN_OP_conv2d] = {LOWER, LOWER},
    [JN_OP_prod] = {FP32, FP32},
    [JN_OP_sum] = {0, FP32},
    [JN_OP_softmax] = {0, FP32},
    [JN_OP_log_softmax] = {0, FP32},
    [JN_OP_logsumexp] = {0, FP32},
    [JN_OP_exp] = {0, FP32},
    [JN_OP_expm1] = {0, FP32},
    [JN_OP_log] = {0, FP32},
    [JN_OP_log1p] = {0, FP32},
    [JN_OP_pow] = {0, FP32},
    [JN_OP_reciprocal] = {0, FP32},
    [JN_OP_rsqrt] = {0, FP32},
    [JN_OP_div] = {0, RSCALAR},
    [JN_OP_cat] = {PROMOTE, PROMOTE},
    [JN_OP_stack] = {PROMOTE, PROMOTE},
    [JN_OP_atan2] = {PROMOTE, PROMOTE},
    [JN_OP_scatter_add] = {0, PROMOTE},
    [JN_OP_lstm_cell] = {PROMOTE, PROMOTE},
    [JN_OP_gru_cell] = {PROMOTE, PROMOTE},
    /* LAPACK has no low precision: torch's cpu list runs these in float32
     * (not det, slogdet, solve_triangular, which refuse bfloat16 there too);
     * they have no CUDA kernel */
    [JN_OP_linalg_inv] = {FP32, 0},
    [JN_OP_linalg_solve] = {FP32, 0},
    [JN_OP_linalg_cholesky_ex] = {FP32, 0},
    [JN_OP_linalg_eigh] = {FP32, 0},
    [JN_OP_linalg_svd] = {FP32, 0},
    [JN_OP_linalg_qr] = {FP32, 0},
};

/* Python-level composites (janus/nn/functional.py) that PyTorch runs as
 * one op: the front end casts their tensor arguments by these rows and runs
 * the body with autocast suspended. */
static const struct {
    const char *name;
    unsigned char pol[JN_NDEVICES];
} composites[] = {
    {"nll_loss", {FP32, FP32}},
    {"cross_entropy", {FP32, FP32}},
    {"mse_loss", {FP32, FP32}},
    {"l1_loss", {FP32, FP32}},
    {"binary_cross_entropy_with_logits", {FP32, FP32}},
    {"binary_cross_entropy", {FP32, FP32}},
    {"smooth_l1_loss", {FP32, FP32}},
    {"huber_loss", {FP32, FP32}},
    {"kl_div", {FP32, FP32}},
    {"layer_norm", {0, FP32}},
    {"group_norm", {0, FP32}},
    {"batch_norm", {0, 0}},
};

int jn_autocast_policy(int device, jn_op op) {
    return (unsigned)device < JN_NDEVICES && (unsigned)op < JN_NOPS ? policy[op][device] : JN_AC_NONE;
}

int jn_autocast_composite_lookup(const char *name) {
    for (int i = 0; i < (int)(sizeof composites / sizeof composites[0]); i++)
        if (!strcmp(composites[i].name, name)) return i;
    return -1;
}

int jn_autocast_composite_policy(int index, int device) {
    if (index < 0 || index >= (int)(sizeof composites / sizeof composites[0]) || (unsigned)device >= JN_NDEVICES)
        return JN_AC_NONE;
    return composites[index].pol[device];
}

/* ---------------------------------------------------------- thread state */
typedef struct {
    jn_tensor *src;   /* held: its address is the key and must not be reused */
    jn_tensor *cast;
    uint64_t version; /* src's storage version when cast */
} cache_entry;

typedef struct {
    jn_autocast_state dev[JN_NDEVICES];
    int counted;      /* this thread adds 1 to jn_rt_autocast_threads */
    int suspended;
    int nesting;
    cache_entry *cache;
    int ncache, capcache;
} ac_thread;

int jn_rt_autocast_threads;

static _Thread_local ac_thread ac = {
    {{0, JN_BF16, 1}, {0, JN_F16, 1}}, 0, 0, 0, NULL, 0, 0};

jn_autocast_state jn_autocast_get(int device) {
    jn_autocast_state none = {0, JN_F32, 1};
    return (unsigned)device < JN_NDEVICES ? ac.dev[device] : none;
}

jn_status jn_autocast_set(int device, jn_autocast_state st) {
    if ((unsigned)device >= JN_NDEVICES)
        return jn_error(JN_ERR_VALUE, "autocast: unsupported device type %d (use 'cpu' or 'cuda')", device);
    if (st.dtype != JN_F16 && st.dtype != JN_BF16)
        return jn_error(JN_ERR_VALUE, "autocast: dtype %s is not a lower precision dtype (use float16 or bfloat16)",
                        (unsigned)st.dtype < JN_NDTYPES ? jn_dtype_names[st.dtype] : "?");
    st.enabled = st.enabled != 0;
    st.cache_enabled = st.cache_enabled != 0;
    ac.dev[device] = st;
    int on = 0;
    for (int d = 0; d < JN_NDEVICES; d++) on |= ac.dev[d].enabled;
    if (on != ac.counted) {
        __atomic_add_fetch(&jn_rt_autocast_threads, on ? 1 : -1, __ATOMIC_RELAXED);
        ac.counted = on;
    }
    return JN_OK;
}

int jn_autocast_increment_nesting(void) { return ++ac.nesting; }
int jn_autocast_decrement_nesting(void) { return ac.nesting > 0 ? --ac.nesting : 0; }

int jn_autocast_suspend(void) {
    int t = ac.suspended;
    ac.suspended = 1;
    return t;
}
void jn_autocast_resume(int token) { ac.suspended = token; }

int jn_autocast_active(void) { return ac.counted && !ac.suspended; }

void jn_autocast_clear_cache(void) {
    for (int i = 0; i < ac.ncache; i++) {
        jn_tensor_decref(ac.cache[i].cast);
        jn_tensor_decref(ac.cache[i].src);
    }
    free(ac.cache);
    ac.cache = NULL;
    ac.ncache = ac.capcache = 0;
}

int jn_autocast_cache_size(void) { return ac.ncache; }

/* ------------------------------------------------------------- planning */
int jn_autocast_device_of(int nin, jn_tensor *const *in) {
    for (int i = 0; i < nin; i++)
        if (in[i] && in[i]->storage && in[i]->storage->device != JN_CPU) return in[i]->storage->device;
    return JN_CPU;
}

/* PyTorch's is_autocast_eligible: a floating tensor on the region's
 * device; Python numbers are not tensors there, so never cast here. */
static int eligible(const jn_tensor *t, int dev) {
    return t && t->storage && t->storage->device == dev && !t->wrapped_number && jn_dtype_is_float(t->dtype);
}

int jn_autocast_plan(int pol, int dev, int nin, jn_tensor *const *in, int *target) {
    int any = 0;
    jn_dtype to = ac.dev[(unsigned)dev < JN_NDEVICES ? dev : 0].dtype;
    if (pol == RSCALAR) pol = nin > 0 && in[0] && in[0]->wrapped_number ? FP32 : JN_AC_NONE;
    if (pol == FP32) to = JN_F32;
    if (pol == PROMOTE)
        for (int i = 0; i < nin; i++)
            if (eligible(in[i], dev)) to = jn_promote(to, in[i]->dtype);
    for (int i = 0; i < nin; i++) {
        target[i] = -1;
        if (pol == JN_AC_NONE || !eligible(in[i], dev) || in[i]->dtype == to) continue;
        if (pol != PROMOTE && in[i]->dtype == JN_F64) continue; /* PyTorch leaves float64 alone */
        target[i] = (int)to;
        any = 1;
    }
    return any;
}

/* ---------------------------------------------------------------- casts */
static jn_status cast_op(jn_tensor *t, jn_dtype to, jn_tensor **out) {
    jn_attrs a;
    memset(&a, 0, sizeof a);
    a.a[0].i = to;
    return jn_rt_dispatch_plain(JN_OP_cast, 1, &t, &a, out);
}

static int cache_find(const jn_tensor *src) {
    for (int i = 0; i < ac.ncache; i++)
        if (ac.cache[i].src == src) return i;
    return -1;
}

/* PyTorch caches float32 -> lower precision casts of leaves that require
 * grad (model parameters, used by every step of a region); the cast is made
 * with grad mode on so a no_grad use first does not poison later uses. */
static jn_status cached_cast(jn_tensor *t, jn_dtype to, jn_tensor **out) {
    int k = cache_find(t);
    if (k >= 0) {
        cache_entry *e = &ac.cache[k];
        if (e->cast->dtype == to && e->version == t->storage->version && !jn_ag_history_released(e->cast)) {
            jn_tensor_incref(e->cast);
            *out = e->cast;
            return JN_OK;
        }
    }
    int was = jn_grad_enabled();
    jn_set_grad_enabled(1);
    jn_status s = cast_op(t, to, out);
    jn_set_grad_enabled(was);
    if (s) return s;
    if (k < 0) {
        if (ac.ncache == ac.capcache) {
            int cap = ac.capcache ? 2 * ac.capcache : 16;
            cache_entry *n = realloc(ac.cache, (size_t)cap * sizeof *n);
            if (!n) return JN_OK; /* not caching costs only time */
            ac.cache = n;
            ac.capcache = cap;
        }
        k = ac.ncache++;
        jn_tensor_incref(t);
        ac.cache[k].src = t;
    } else {
        jn_tensor_decref(ac.cache[k].cast);
    }
    jn_tensor_incref(*out);
    ac.cache[k].cast = *out;
    ac.cache[k].version = t->storage->version;
    return JN_OK;
}

jn_status jn_autocast_cast_inputs(int nin, jn_tensor *const *in, const int *target, jn_tensor **use) {
    jn_status s = JN_OK;
    int i;
    for (i = 0; i < nin; i++) {
        use[i] = in[i];
        if (target[i] < 0) continue;
        jn_tensor *t = in[i];
        jn_dtype to = (jn_dtype)target[i];
        int dev = t->storage->device;
        int cache = ac.dev[dev].cache_enabled && to == ac.dev[dev].dtype && t->dtype == JN_F32 &&
                    jn_requires_grad(t) && jn_is_leaf(t) && !t->is_view;
        s = cache ? cached_cast(t, to, &use[i]) : cast_op(t, to, &use[i]);
        if (s) break;
    }
    if (s) {
        for (int k = 0; k < i; k++)
            if (target[k] >= 0) jn_tensor_decref(use[k]);
    }
    return s;
}

/* ------------------------------------------------------------- dispatch */
jn_status jn_rt_autocast_dispatch(jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor **out) {
    if (!ac.counted || ac.suspended || nin <= 0 || nin > JN_MAX_INS || (unsigned)op >= JN_NOPS)
        return jn_rt_dispatch_plain(op, nin, in, a, out);
    int dev = jn_autocast_device_of(nin, in);
    if ((unsigned)dev >= JN_NDEVICES || !ac.dev[dev].enabled || !policy[op][dev])
        return jn_rt_dispatch_plain(op, nin, in, a, out);
    /* PyTorch's fp32_set_opt_dtype: an explicit dtype= is the caller's */
    int kd = jn_op_info(op)->nattrs && policy[op][dev] == FP32 ? jn_op_attr_index(op, "dtype") : -1;
    if (kd >= 0 && a->a[kd].i >= 0) return jn_rt_dispatch_plain(op, nin, in, a, out);
    int target[JN_MAX_INS];
    if (!jn_autocast_plan(policy[op][dev], dev, nin, in, target)) return jn_rt_dispatch_plain(op, nin, in, a, out);
    jn_tensor *use[JN_MAX_INS];
    jn_status s = jn_autocast_cast_inputs(nin, in, target, use);
    if (s) return s;
    s = jn_rt_dispatch_plain(op, nin, use, a, out);
    for (int i = 0; i < nin; i++)
        if (target[i] >= 0) jn_tensor_decref(use[i]);
    return s;
}
