/* dispatch.c -- the op table expanded into metadata, and the one dispatcher.
 *
 * jn_dispatch() is the single entry point every op runs through: it checks
 * arity, fills Philox attributes for random ops, infers output metadata
 * without touching data, allocates outputs (or view headers sharing the
 * input's storage), runs the kernel of the inputs' backend (jn_backend.h:
 * the CPU path pays one compare for it), bumps versions for in-place writes
 * and finally calls the recording/capture hook.  The table hash covers every
 * row of ops.def so a trace store can refuse traces from another table.
 */
#include "jn_autocast.h"
#include "jn_autograd.h"
#include "jn_backend.h"

#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static jn_opinfo infos[JN_NOPS] = {
#define JN_OP(name, nin, nout, flags, attrs) {#name, nin, nout, flags, attrs, 0, {0}, {{0}}, {0}, {0}},
#include "ops.def"
#undef JN_OP
};

static const jn_infer_fn infer_tab[JN_NOPS] = {
#define JN_OP(name, nin, nout, flags, attrs) jn_infer_##name,
#include "ops.def"
#undef JN_OP
};

jn_status jn_op_infer(jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    if ((int)op < 0 || op >= JN_NOPS || nin < 0 || nin > JN_MAX_INS)
        return jn_error(JN_ERR_VALUE, "jn_op_infer: no op %d with %d inputs", (int)op, nin);
    if (op == JN_OP_one_hot && a->a[0].i < 0)
        return jn_error(JN_ERR_VALUE, "one_hot(num_classes=-1): the shape is read from the data");
    memset(out, 0, sizeof(jn_meta) * JN_MAX_OUTS);
    return infer_tab[op](nin, in, a, out);
}

static pthread_once_t parse_once = PTHREAD_ONCE_INIT;

/* The position attributes of ops_pos.def: op, comma-separated names. */
static const struct {
    jn_op op;
    const char *names;
} positions[] = {
#define JN_OP_POS(name, attrs) {JN_OP_##name, attrs},
#include "ops_pos.def"
#undef JN_OP_POS
};

/* Split each schema "a:i,b:L" into names and kinds once; mark positions. */
static void parse_schemas(void) {
    for (int op = 0; op < JN_NOPS; op++) {
        jn_opinfo *in = &infos[op];
        const char *p = in->schema;
        int n = 0;
        while (*p) {
            const char *colon = strchr(p, ':');
            if (!colon || n >= JN_MAX_ATTRS) break; /* table bug: caught by the test suite */
            size_t len = (size_t)(colon - p);
            if (len >= sizeof in->attr_name[0]) len = sizeof in->attr_name[0] - 1;
            memcpy(in->attr_name[n], p, len);
            in->attr_name[n][len] = 0;
            in->attr_kind[n] = colon[1];
            in->attr_default[n] = colon[1] == JN_A_DTYPE ? -1 : 0;
            p = colon + 2;
            if (*p == '=') {
                char *end;
                in->attr_default[n] = strtod(p + 1, &end);
                p = end;
            }
            n++;
            if (*p == ',') p++;
        }
        in->nattrs = n;
    }
    /* a name that is no int attribute of its op is a table bug: it marks
     * nothing, and test_core's op-table test fails on it */
    for (size_t i = 0; i < sizeof positions / sizeof positions[0]; i++) {
        jn_opinfo *in = &infos[positions[i].op];
        for (const char *p = positions[i].names; *p;) {
            size_t len = strcspn(p, ",");
            for (int k = 0; k < in->nattrs; k++)
                if (strlen(in->attr_name[k]) == len && !strncmp(in->attr_name[k], p, len) && in->attr_kind[k] == JN_A_INT)
                    in->attr_pos[k] = 1;
            p += len + (p[len] == ',');
        }
    }
}

const jn_opinfo *jn_op_info(jn_op op) {
    pthread_once(&parse_once, parse_schemas);
    return (unsigned)op < JN_NOPS ? &infos[op] : NULL;
}

int jn_op_lookup(const char *name) {
    for (int i = 0; i < JN_NOPS; i++)
        if (!strcmp(infos[i].name, name)) return i;
    return -1;
}

int jn_op_attr_index(jn_op op, const char *name) {
    const jn_opinfo *in = jn_op_info(op);
    for (int i = 0; in && i < in->nattrs; i++)
        if (!strcmp(in->attr_name[i], name)) return i;
    return -1;
}

uint64_t jn_optable_hash(void) {
    uint64_t h = 1469598103934665603ull;
    char row[256];
    for (int i = 0; i < JN_NOPS; i++) {
        int n = snprintf(row, sizeof row, "%s/%d/%d/%d/%s;", infos[i].name, infos[i].nin,
                         infos[i].nout, infos[i].flags, infos[i].schema);
        for (int k = 0; k < n && k < (int)sizeof row; k++) {
            h ^= (unsigned char)row[k];
            h *= 1099511628211ull;
        }
    }
    return h;
}

/* ------------------------------------------------------------- generator */
static pthread_mutex_t rng_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t rng_seed = 67280421310721ull, rng_offset = 0;

void jn_manual_seed(uint64_t seed) {
    pthread_mutex_lock(&rng_lock);
    rng_seed = seed;
    rng_offset = 0;
    pthread_mutex_unlock(&rng_lock);
}
uint64_t jn_rng_seed(void) { return rng_seed; }
uint64_t jn_rng_offset(void) { return rng_offset; }
void jn_rng_set_state(uint64_t seed, uint64_t offset) {
    pthread_mutex_lock(&rng_lock);
    rng_seed = seed;
    rng_offset = offset;
    pthread_mutex_unlock(&rng_lock);
}

void jn_rt_philox4(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    jn_philox4_inline(ctr, key, out);
}

void jn_philox(uint64_t counter, uint64_t key, uint32_t out[4]) { jn_philox_inline(counter, key, out); }

/* ------------------------------------------------------------- dispatcher */
static jn_dispatch_hook hook;

void jn_set_dispatch_hook(const jn_dispatch_hook *h) {
    if (h) hook = *h;
    else memset(&hook, 0, sizeof hook);
}

int jn_dispatch_hook_installed(void) { return hook.after != NULL; }

/* Arity and presence; *dev = the backend's device.  The CPU path costs the
 * or-ing of the inputs' device numbers (JN_CPU is 0); anything else goes
 * through jn_rt_select_device (mixed devices, CPU scalars, unsupported ops). */
static jn_status check_inputs(jn_op op, const jn_opinfo *info, int nin, jn_tensor *const *in, int *dev) {
    int ok = (info->flags & JN_F_VARIADIC) ? nin >= info->nin : nin == info->nin;
    if (!ok || nin > JN_MAX_INS)
        return jn_error(JN_ERR_VALUE, "%s: expected %s%d tensor inputs, got %d", info->name,
                        (info->flags & JN_F_VARIADIC) ? "at least " : "", info->nin, nin);
    int any = nin ? JN_CPU : jn_rt_factory_device();
    for (int i = 0; i < nin; i++) {
        if (!in[i]) return jn_error(JN_ERR_VALUE, "%s: input %d is missing", info->name, i);
        if (in[i]->storage) any |= in[i]->storage->device;
    }
    *dev = JN_CPU;
    return any ? jn_rt_resolve_device(op, nin, in, dev) : JN_OK;
}

/* A device op's CPU 0-d inputs (Python numbers, t.sum() results) are copied
 * to the device first, unless the backend's kernel takes them by value
 * (host_scalars); the copies keep the wrapped-number flag so type
 * promotion is unchanged.  staged[i] is NULL where in[i] is used as is. */
static jn_status stage_scalars(jn_op op, int dev, int nin, jn_tensor *const *in, jn_tensor **use,
                               jn_tensor **staged) {
    int keep = op == JN_OP_copy_ || jn_rt_backends[dev]->host_scalars[op];
    for (int i = 0; i < nin; i++) {
        use[i] = in[i];
        staged[i] = NULL;
        if (keep || in[i]->ndim || !in[i]->storage || in[i]->storage->device == dev) continue;
        jn_status s = jn_rt_materialize(in[i]);
        if (s || !(staged[i] = jn_rt_to_device(in[i], dev, 1))) {
            for (int k = 0; k < i; k++) jn_tensor_decref(staged[k]);
            return s ? s : JN_ERR_NOMEM;
        }
        staged[i]->wrapped_number = in[i]->wrapped_number;
        use[i] = staged[i];
    }
    return JN_OK;
}

/* Random ops take their stream position from the default generator. */
static void fill_rng(jn_op op, const jn_opinfo *info, jn_attrs *a, const jn_meta *m) {
    int ks = jn_op_attr_index(op, "seed"), ko = jn_op_attr_index(op, "offset");
    (void)info;
    pthread_mutex_lock(&rng_lock);
    a->a[ks].i = (int64_t)rng_seed;
    a->a[ko].i = (int64_t)rng_offset;
    rng_offset += (uint64_t)jn_shape_numel(m->ndim, m->shape);
    pthread_mutex_unlock(&rng_lock);
}

/* ---------------------------------------------------------- lazy capture */
static jn_rt_capture_hook capture_hook;
int jn_rt_capturing;

void jn_rt_set_capture_hook(const jn_rt_capture_hook *h) {
    if (h) capture_hook = *h;
    else memset(&capture_hook, 0, sizeof capture_hook);
    jn_rt_capturing = 0;
}

int jn_rt_capture_hook_installed(void) { return capture_hook.capture != NULL; }

jn_status jn_rt_capture_backward(int n, jn_tensor *const *roots, jn_tensor *const *grads, int retain, int *handled) {
    *handled = 0;
    if (!capture_hook.backward) return JN_OK;
    return capture_hook.backward(capture_hook.ctx, n, roots, grads, retain, handled);
}

int jn_rt_capture_expects(jn_op op, const jn_tensor *t) {
    return jn_rt_capturing && capture_hook.expects && capture_hook.expects(capture_hook.ctx, op, t);
}

int64_t jn_rt_storage_refs(const jn_storage *st) {
    if (!jn_rt_capturing || !st->ext || !capture_hook.held_only || st->refcnt == 1) return st->refcnt;
    return st->refcnt - capture_hook.held_only(capture_hook.ctx, st);
}

int64_t jn_rt_tensor_refs_slow(const jn_tensor *t) {
    return capture_hook.held_refs ? t->refcnt - capture_hook.held_refs(capture_hook.ctx, t) : t->refcnt;
}

jn_status jn_rt_materialize_slow(jn_tensor *t) {
    if (capture_hook.materialize) return capture_hook.materialize(capture_hook.ctx, t);
    return jn_error(JN_ERR_RUNTIME, "a tensor's data is pending but no replay is running (internal error)");
}

/* A device kernel over inputs as captured: CPU numbers a captured device op
 * kept (the matcher reads their value on the host) are staged here, when it
 * runs; eager device ops arrive staged already (the loop finds nothing). */
static jn_status run_device_kernel(jn_op op, int dev, int nin, jn_tensor *const *in, const jn_attrs *a,
                                   jn_tensor *const *out) {
    jn_tensor *use[JN_MAX_INS], *staged[JN_MAX_INS];
    jn_status s = stage_scalars(op, dev, nin, in, use, staged);
    if (s) return s;
    s = jn_rt_backends[dev]->kernel[op](nin, use, a, out);
    for (int i = 0; i < nin; i++) jn_tensor_decref(staged[i]);
    return s;
}

/* ------------------------------------------------------- kernel clock */
typedef struct {
    int on, depth;
    double t0, sec;
    uint64_t calls;
    double *op_sec;     /* per op, while jn_rt_kclock_set_ops is on (JN_NOPS each) */
    uint64_t *op_calls;
} kclock;
static _Thread_local kclock kc;
int jn_rt_kclock_threads;

void jn_rt_kclock_begin_slow(void) {
    if (kc.on && !kc.depth++) kc.t0 = jn_rt_seconds();
}
void jn_rt_kclock_end_slow(void) { jn_rt_kclock_end_op_slow(JN_NOPS); } /* under no op */
void jn_rt_kclock_end_op_slow(jn_op op) {
    if (kc.on && !--kc.depth) {
        double d = jn_rt_seconds() - kc.t0;
        kc.sec += d;
        kc.calls++;
        if (kc.op_sec && (unsigned)op < JN_NOPS) {
            kc.op_sec[op] += d;
            kc.op_calls[op]++;
        }
    }
}
jn_status jn_rt_kclock_set_ops(int on) {
    if (on && !kc.op_sec) {
        kc.op_sec = calloc(JN_NOPS, sizeof *kc.op_sec);
        kc.op_calls = calloc(JN_NOPS, sizeof *kc.op_calls);
        if (!kc.op_sec || !kc.op_calls) on = 0;
        if (!on) {
            free(kc.op_sec), free(kc.op_calls);
            kc.op_sec = NULL, kc.op_calls = NULL;
            return jn_error(JN_ERR_NOMEM, "the kernel clock: out of memory for the per-op table");
        }
    } else if (!on && kc.op_sec) {
        free(kc.op_sec), free(kc.op_calls);
        kc.op_sec = NULL, kc.op_calls = NULL;
    }
    return JN_OK;
}
int jn_rt_kclock_read_ops(double *seconds, uint64_t *calls) {
    if (!kc.op_sec) return 0;
    memcpy(seconds, kc.op_sec, sizeof *seconds * JN_NOPS);
    memcpy(calls, kc.op_calls, sizeof *calls * JN_NOPS);
    return 1;
}
void jn_rt_kclock_set(int on) {
    on = !!on;
    if (on == kc.on) return;
    kc.on = on;
    kc.depth = 0; /* between ops */
    __atomic_add_fetch(&jn_rt_kclock_threads, on ? 1 : -1, __ATOMIC_RELAXED);
}
void jn_rt_kclock_read(double *seconds, uint64_t *calls) {
    *seconds = kc.sec;
    *calls = kc.calls;
}

jn_status jn_rt_run_kernel(jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
#ifndef NDEBUG /* a pending tensor reaching a kernel is a bug (a view's kernel reads no data) */
    for (int i = 0; i < nin && !(infos[op].flags & JN_F_VIEW); i++)
        assert(in[i]->storage->data || !in[i]->storage->nbytes);
#endif
    jn_rt_private_ids++;
    /* outputs live where the op runs (in-place and view outputs are inputs) */
    int dev = out[0]->storage->device;
    jn_rt_kclock_begin();
    jn_status s = __builtin_expect(dev != JN_CPU, 0) ? run_device_kernel(op, dev, nin, in, a, out)
                                                     : jn_rt_cpu_backend.kernel[op](nin, in, a, out);
    jn_rt_kclock_end_op(op);
    jn_rt_private_ids--;
    return s;
}

/* Eager mode never hands a kernel a pending tensor: it is run first. */
static jn_status ready_inputs(int nin, jn_tensor *const *in) {
    jn_status s = JN_OK;
    for (int i = 0; i < nin && s == JN_OK; i++) s = jn_rt_materialize(in[i]);
    return s;
}

static inline __attribute__((always_inline)) jn_status dispatch(jn_op op, const jn_opinfo *info, int dev, int nin, jn_tensor *const *in,
                          const jn_attrs *a_in, jn_tensor **out, jn_rt_infer_cache *ic);

/* ------------------------------------------------- cached inference */
/* Inference is a function of the op's attributes and its inputs' dtype,
 * shape, strides, offset and wrapped-number flag (one_hot, which reads
 * data, is never cached): equal ones give the metadata inferred before. */
static int icache_hit(const jn_rt_infer_cache *c, jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a) {
    if (!c->valid || c->nin != nin) return 0;
    for (int i = 0; i < nin; i++) {
        const jn_tensor *t = in[i];
        int nd = t->ndim;
        if (c->in[i].dtype != (int8_t)t->dtype || c->in[i].ndim != nd || c->in[i].wrapped != (int8_t)t->wrapped_number ||
            c->in[i].offset != t->offset || memcmp(c->in[i].shape, t->shape, sizeof(int64_t) * (size_t)nd) ||
            memcmp(c->in[i].strides, t->strides, sizeof(int64_t) * (size_t)nd))
            return 0;
    }
    const jn_opinfo *info = &infos[op];
    for (int k = 0; k < info->nattrs; k++) {
        const jn_attr *x = &a->a[k], *y = &c->a.a[k];
        if (info->attr_kind[k] == JN_A_INTS
                ? x->l.n != y->l.n || (unsigned)x->l.n > JN_MAX_DIMS ||
                      memcmp(x->l.v, y->l.v, sizeof(int64_t) * (size_t)x->l.n)
                : x->i != y->i) /* the bits: a float compares as its bits too */
            return 0;
    }
    return 1;
}

static void icache_store(jn_rt_infer_cache *c, const jn_opinfo *info, int nin, jn_tensor *const *in,
                         const jn_attrs *a, const jn_meta *meta) {
    c->valid = 0;
    for (int k = 0; k < info->nattrs; k++)
        if (info->attr_kind[k] == JN_A_INTS && (unsigned)a->a[k].l.n > JN_MAX_DIMS) return;
    c->nin = nin;
    for (int i = 0; i < nin; i++) {
        const jn_tensor *t = in[i];
        c->in[i].dtype = (int8_t)t->dtype;
        c->in[i].ndim = (int8_t)t->ndim;
        c->in[i].wrapped = (int8_t)t->wrapped_number;
        c->in[i].offset = t->offset;
        memcpy(c->in[i].shape, t->shape, sizeof t->shape);
        memcpy(c->in[i].strides, t->strides, sizeof t->strides);
    }
    memcpy(c->a.a, a->a, sizeof(jn_attr) * (size_t)info->nattrs);
    memcpy(c->out, meta, sizeof(jn_meta) * (size_t)info->nout);
    c->valid = 1;
}

jn_status jn_rt_dispatch_cached(jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor **out,
                                jn_rt_infer_cache *c) {
    const jn_opinfo *info = jn_op_info(op); /* the parsed schema: icache_hit reads attribute kinds */
    if (!info || nin > JN_RT_ICACHE_INS || op == JN_OP_one_hot ||
        __atomic_load_n(&jn_rt_autocast_threads, __ATOMIC_RELAXED) != 0 ||
        (jn_rt_capturing && capture_hook.device != JN_CPU))
        return jn_dispatch(op, nin, in, a, out);
    int dev;
    jn_status s = check_inputs(op, info, nin, in, &dev);
    if (s) return s;
    if (dev != JN_CPU) return jn_dispatch(op, nin, in, a, out);
    return dispatch(op, info, JN_CPU, nin, in, a, out, c);
}

/* Autocast (autocast.c) costs this path one load while no thread uses it;
 * jn_rt_dispatch_plain is the dispatcher without that test (a tail call). */
jn_status jn_dispatch(jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a_in,
                      jn_tensor **out) {
    if (__builtin_expect(__atomic_load_n(&jn_rt_autocast_threads, __ATOMIC_RELAXED) != 0, 0))
        return jn_rt_autocast_dispatch(op, nin, in, a_in, out);
    return jn_rt_dispatch_plain(op, nin, in, a_in, out);
}

/* An op on another device than the one replay captures (capture_hook.device:
 * a device op in a CPU replay, a CPU op in a CUDA replay) is not captured:
 * the segment ends before it as at a data read -- its graph runs, or its
 * ops eagerly, a miss -- and the op and the rest of the segment run
 * eagerly.  A factory (no tensor to read) runs eagerly with capture paused
 * around it (*done set, *s its status).  Never on the eager CPU path. */
static jn_status __attribute__((noinline)) uncaptured_op(jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a_in,
                                                         jn_tensor **out, jn_tensor *dst, int *done) {
    *done = 0;
    if (!nin && !dst) {
        *done = 1;
        jn_rt_capturing = 0;
        jn_status s = jn_rt_dispatch_plain(op, nin, in, a_in, out);
        jn_rt_capturing = 1;
        return s;
    }
    jn_tensor *t = nin ? in[0] : dst;
    return t && capture_hook.materialize ? capture_hook.materialize(capture_hook.ctx, t) : JN_OK;
}

jn_status jn_rt_dispatch_plain(jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a_in, jn_tensor **out) {
    /* the table's static columns (name, arity, flags) need no parsed schema */
    if ((unsigned)op >= JN_NOPS) return jn_error(JN_ERR_VALUE, "unknown op number %d", (int)op);
    const jn_opinfo *info = &infos[op];
    int dev, done;
    jn_status s = check_inputs(op, info, nin, in, &dev);
    if (s) return s;
    if (__builtin_expect(dev == JN_CPU, 1)) {
        /* a CPU op while a CUDA replay captures: one predictable branch */
        if (__builtin_expect(jn_rt_capturing && capture_hook.device != JN_CPU, 0) &&
            ((s = uncaptured_op(op, nin, in, a_in, out, NULL, &done)) || done))
            return s;
        return dispatch(op, info, dev, nin, in, a_in, out, NULL);
    }
    if ((s = jn_rt_device_ready(op, dev))) return s;
    /* captured as it is: CPU numbers are staged when the op runs */
    if (jn_rt_capturing && dev == capture_hook.device) return dispatch(op, info, dev, nin, in, a_in, out, NULL);
    if (jn_rt_capturing && ((s = uncaptured_op(op, nin, in, a_in, out, NULL, &done)) || done)) return s;
    jn_tensor *use[JN_MAX_INS], *staged[JN_MAX_INS];
    if ((s = stage_scalars(op, dev, nin, in, use, staged))) return s;
    s = dispatch(op, info, dev, nin, use, a_in, out, NULL);
    for (int i = 0; i < nin; i++) jn_tensor_decref(staged[i]);
    return s;
}

/* inlined into both callers: the CPU path pays no extra call */
static inline __attribute__((always_inline)) jn_status dispatch(jn_op op, const jn_opinfo *info, int dev, int nin, jn_tensor *const *in,
                          const jn_attrs *a_in, jn_tensor **out, jn_rt_infer_cache *ic) {
    jn_status s;
    /* one_hot(num_classes=-1) is the one shape that depends on data */
    if (jn_rt_capturing && op == JN_OP_one_hot && a_in->a[0].i < 0 && (s = ready_inputs(nin, in))) return s;
    int cap = jn_rt_capturing;
    if (!cap && (s = ready_inputs(nin, in))) return s;
    /* the caller's attributes as they are (no copy); a random op's copy
     * takes the stream position */
    const jn_attrs *ap = a_in;
    jn_attrs a;
    jn_meta meta[JN_MAX_OUTS];
    if (ic && icache_hit(ic, op, nin, in, ap)) {
        memcpy(meta, ic->out, sizeof(jn_meta) * (size_t)info->nout);
    } else {
        memset(meta, 0, sizeof(jn_meta) * (size_t)info->nout);
        if ((s = infer_tab[op](nin, in, ap, meta))) return s;
        if (ic) icache_store(ic, info, nin, in, ap, meta);
    }
    if (__builtin_expect(info->flags & JN_F_RAND, 0)) {
        a = *a_in;
        fill_rng(op, info, &a, &meta[0]);
        ap = &a;
    }

    /* An in-place op writes its first nwritten inputs and returns them as
     * its outputs (the same tensors, so a recorder sees the same ids). */
    int nwritten = (info->flags & JN_F_INPLACE) ? info->nout : 0;
    for (int i = 0; i < nwritten; i++)
        if ((s = jn_ag_check_inplace(op, in[i]))) return s;
    jn_tensor *res[JN_MAX_OUTS] = {0};
    for (int i = 0; i < info->nout; i++) {
        if (i < nwritten) {
            res[i] = in[i];
            jn_tensor_incref(in[i]);
        } else if (info->flags & JN_F_VIEW) {
            res[i] = jn_tensor_alias(in[0]);
            if (res[i]) {
                res[i]->is_view = 1;
                res[i]->ndim = meta[i].ndim;
                memcpy(res[i]->shape, meta[i].shape, sizeof(int64_t) * JN_MAX_DIMS);
            }
        } else {
            res[i] = cap ? jn_rt_tensor_new_pending(&meta[i])
                  : dev ? jn_rt_backends[dev]->tensor_new(&meta[i]) : jn_tensor_new_meta(&meta[i]);
            if (cap && dev && res[i]) res[i]->storage->device = dev; /* pending on the device it will live on */
        }
        if (!res[i]) {
            s = JN_ERR_NOMEM;
            goto fail;
        }
    }
    /* captured: only a view's kernel runs (it sets strides, reads no data) */
    if ((!cap || (info->flags & JN_F_VIEW)) && (s = jn_rt_run_kernel(op, nin, in, ap, res))) goto fail;
    for (int i = 0; i < nwritten; i++) in[i]->storage->version++;
    if (jn_grad_enabled() &&
        (s = jn_ag_record(op, nin, in, ap, info->nout, res, nwritten ? in[0] : NULL)))
        goto fail;
    /* ops writing several inputs are no-grad (checked by test_op_table):
     * this only cuts the history of the other written tensors */
    for (int i = 1; i < nwritten && jn_grad_enabled(); i++)
        if ((s = jn_ag_record(op, nin, in, ap, 0, res, in[i]))) goto fail;
    if (cap && (s = capture_hook.capture(capture_hook.ctx, op, nin, in, ap, info->nout, res, 0))) goto fail;
    for (int i = 0; i < info->nout; i++) out[i] = res[i];
    if (hook.after) hook.after(hook.ctx, op, nin, in, ap, info->nout, res);
    return JN_OK;
fail:
    for (int i = 0; i < info->nout; i++) jn_tensor_decref(res[i]);
    return s;
}

static inline __attribute__((always_inline)) jn_status dispatch_into(jn_op op, const jn_opinfo *info, int nin, jn_tensor *const *in,
                               const jn_attrs *a, jn_tensor *dst);

jn_status jn_dispatch_into(jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a,
                           jn_tensor *dst) {
    const jn_opinfo *info = jn_op_info(op);
    if (!info) return jn_error(JN_ERR_VALUE, "unknown op number %d", (int)op);
    /* elementwise ops write any dst; addmm only its own addend (torch's
     * addmm_: a GEMM accumulating with beta into the tensor it reads) */
    int addmm_self = op == JN_OP_addmm && nin == 3 && in[0] == dst && jn_is_contiguous(dst);
    if ((!(info->flags & JN_F_EW) && !addmm_self) || info->nout != 1)
        return jn_error(JN_ERR_UNSUPPORTED, "%s has no in-place/out= form%s", info->name,
                        op == JN_OP_addmm ? " (except into its contiguous first input, as addmm_)" : "");
    int dev;
    jn_status s = check_inputs(op, info, nin, in, &dev);
    if (s) return s;
    int ddev = dst->storage ? dst->storage->device : JN_CPU;
    if (ddev != dev)
        return jn_error(JN_ERR_RUNTIME,
                        "Expected all tensors to be on the same device, but found at least two devices, "
                        "%s and %s! (op %s: the output is on %s, the inputs on %s)",
                        jn_device_name(dev), jn_device_name(ddev), info->name, jn_device_name(ddev),
                        jn_device_name(dev));
    int done;
    if (__builtin_expect(dev == JN_CPU, 1)) {
        if (__builtin_expect(jn_rt_capturing && capture_hook.device != JN_CPU, 0) &&
            (s = uncaptured_op(op, nin, in, a, NULL, dst, &done)))
            return s;
        return dispatch_into(op, info, nin, in, a, dst);
    }
    if ((s = jn_rt_device_ready(op, dev))) return s;
    if (jn_rt_capturing && dev == capture_hook.device) return dispatch_into(op, info, nin, in, a, dst);
    if (jn_rt_capturing && (s = uncaptured_op(op, nin, in, a, NULL, dst, &done))) return s;
    jn_tensor *use[JN_MAX_INS], *staged[JN_MAX_INS];
    if ((s = stage_scalars(op, dev, nin, in, use, staged))) return s;
    s = dispatch_into(op, info, nin, use, a, dst);
    for (int i = 0; i < nin; i++) jn_tensor_decref(staged[i]);
    return s;
}

static inline __attribute__((always_inline)) jn_status dispatch_into(jn_op op, const jn_opinfo *info, int nin, jn_tensor *const *in,
                               const jn_attrs *a, jn_tensor *dst) {
    jn_status s;
    int cap = jn_rt_capturing;
    if (!cap && ((s = ready_inputs(nin, in)) || (s = jn_rt_materialize(dst)))) return s;
    jn_meta m;
    if ((s = infer_tab[op](nin, in, a, &m))) return s;
    char sa[128], sb[128];
    if (!jn_same_shape(m.ndim, m.shape, dst->ndim, dst->shape))
        return jn_error(JN_ERR_SHAPE,
                        "%s: output with shape %s doesn't match the broadcast shape %s",
                        info->name, jn_shape_str(dst->ndim, dst->shape, sa, sizeof sa),
                        jn_shape_str(m.ndim, m.shape, sb, sizeof sb));
    /* PyTorch's can_cast: no float -> integral, no integral/float -> bool */
    int bad = (jn_dtype_is_float(m.dtype) && !jn_dtype_is_float(dst->dtype)) ||
              (m.dtype != JN_BOOL && dst->dtype == JN_BOOL);
    if (bad)
        return jn_error(JN_ERR_TYPE, "%s: result type %s can't be cast to the desired output type %s",
                        info->name, jn_dtype_names[m.dtype], jn_dtype_names[dst->dtype]);
    if ((s = jn_ag_check_inplace(op, dst))) return s;
    jn_tensor *outv[1] = {dst};
    if (cap) {
        dst->storage->version++;
        if (jn_grad_enabled() && (s = jn_ag_record(op, nin, in, a, 1, outv, dst))) return s;
        if ((s = capture_hook.capture(capture_hook.ctx, op, nin, in, a, 1, outv, 1))) return s;
        /* as jn_dispatch does: the hook sees captured ops too (a replay's region log) */
        if (hook.after) hook.after(hook.ctx, op, nin, in, a, 1, outv);
        return JN_OK;
    }
    if ((s = jn_rt_run_into(op, nin, in, a, dst))) return s;
    dst->storage->version++;
    if (jn_grad_enabled() && (s = jn_ag_record(op, nin, in, a, 1, outv, dst))) return s;
    if (hook.after) hook.after(hook.ctx, op, nin, in, a, 1, outv);
    return JN_OK;
}

jn_status jn_rt_run_into(jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *dst) {
    /* Inputs overlapping dst in any other layout are copied first, so the
     * kernel never reads what it has already written. */
    jn_status s = JN_OK;
    jn_rt_private_ids++;
    jn_tensor *safe[JN_MAX_INS];
    int ncopies = 0;
    jn_tensor *copies[JN_MAX_INS];
    for (int i = 0; i < nin; i++) {
        safe[i] = in[i];
        if (in[i] != dst && jn_rt_may_overlap(in[i], dst) &&
            !(in[i]->offset == dst->offset && jn_same_shape(in[i]->ndim, in[i]->shape, dst->ndim, dst->shape) &&
              !memcmp(in[i]->strides, dst->strides, sizeof(int64_t) * (size_t)dst->ndim))) {
            jn_tensor *c = jn_contiguous(in[i]);
            if (!c) { s = JN_ERR_NOMEM; goto done; }
            safe[i] = copies[ncopies++] = c;
        }
    }
    jn_tensor *outv[1] = {dst};
    s = jn_rt_run_kernel(op, nin, safe, a, outv);
done:
    for (int i = 0; i < ncopies; i++) jn_tensor_decref(copies[i]);
    jn_rt_private_ids--;
    return s;
}
