/* jn_runtime.h -- the Janus tensor runtime: dtypes, tensors, the op table,
 * the dispatcher and the helpers kernels share.
 *
 * Everything here carries the jn_ prefix (jn_rt_ for runtime-internal
 * helpers that other libraries may still call).  A tensor is a refcounted
 * header over refcounted storage; views share storage and its version
 * counter.  Every op runs through jn_dispatch(), which looks the op up in the
 * tables expanded from ops.def.  User-caused failures return a jn_status and
 * leave a message in a thread-local buffer (jn_errmsg()); asserts guard only
 * internal invariants.
 */
#ifndef JN_RUNTIME_H
#define JN_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define JN_MAX_DIMS 8    /* tensors have at most this many dims */
#define JN_MAX_ATTRS 8   /* attributes per op */
#define JN_MAX_OUTS 4    /* outputs per op */
#define JN_MAX_INS 64    /* tensor inputs per op (cat/stack/index) */

/* ---------------------------------------------------------------- status */
typedef enum {
    JN_OK = 0,
    JN_ERR_VALUE,       /* bad argument value           -> ValueError   */
    JN_ERR_TYPE,        /* bad dtype / argument type    -> TypeError    */
    JN_ERR_INDEX,       /* index out of range           -> IndexError   */
    JN_ERR_SHAPE,       /* incompatible shapes          -> RuntimeError */
    JN_ERR_RUNTIME,     /* anything else at run time    -> RuntimeError */
    JN_ERR_NOMEM,       /* allocation failed            -> MemoryError  */
    JN_ERR_UNSUPPORTED, /* op/dtype/device not supported -> NotImplementedError */
    JN_ERR_IO           /* file or database trouble     -> OSError      */
} jn_status;

/* Record an error message (printf-style) and return `s`. */
jn_status jn_error(jn_status s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
const char *jn_errmsg(void);
const char *jn_status_name(jn_status s);

/* ----------------------------------------------------------------- dtypes */
/* X(enum, name, C type used for storage, element size, is_float, is_int) */
#define JN_DTYPES(X)                                   \
    X(JN_F32, float32, float, 4, 1, 0)                 \
    X(JN_F64, float64, double, 8, 1, 0)                \
    X(JN_F16, float16, uint16_t, 2, 1, 0)              \
    X(JN_BF16, bfloat16, uint16_t, 2, 1, 0)            \
    X(JN_I64, int64, int64_t, 8, 0, 1)                 \
    X(JN_I32, int32, int32_t, 4, 0, 1)                 \
    X(JN_U8, uint8, uint8_t, 1, 0, 1)                  \
    X(JN_BOOL, bool, uint8_t, 1, 0, 0)

typedef enum {
#define X(e, n, t, s, f, i) e,
    JN_DTYPES(X)
#undef X
    JN_NDTYPES
} jn_dtype;

#define JN_DEFAULT_DTYPE JN_F32

extern const char *const jn_dtype_names[JN_NDTYPES];
extern const size_t jn_dtype_size[JN_NDTYPES];
int jn_dtype_is_float(jn_dtype d);
int jn_dtype_is_int(jn_dtype d); /* integral, not bool */
/* PyTorch's promote_types for two dtypes. */
jn_dtype jn_promote(jn_dtype a, jn_dtype b);
/* Parse a dtype name ("float32", "float", "long", ...); -1 if unknown. */
int jn_dtype_from_name(const char *name);

/* Half-precision conversions (round to nearest even). */
float jn_f16_to_f32(uint16_t h);
uint16_t jn_f32_to_f16(float f);
float jn_bf16_to_f32(uint16_t h);
uint16_t jn_f32_to_bf16(float f);

/* Load/store one element of any dtype through double / int64 (slow paths). */
double jn_load_f64(const void *p, jn_dtype d);
void jn_store_f64(void *p, jn_dtype d, double v);
int64_t jn_load_i64(const void *p, jn_dtype d);
void jn_store_i64(void *p, jn_dtype d, int64_t v);

/* ---------------------------------------------------------------- tensors */
typedef enum { JN_CPU = 0, JN_CUDA = 1 } jn_device_type;

typedef struct jn_storage {
    int64_t refcnt;
    void *data;          /* NULL for meta-only tensors (lazy capture, analyzer) */
    size_t nbytes;
    int device;          /* jn_device_type */
    int owns_data;       /* 1: data is its own allocation; 2: inside this block */
    int block_class;     /* size class in the runtime's block cache, or -1 (owns_data 2: its small-block class) */
    uint64_t version;    /* bumped by every in-place write; shared by views */
    void (*release)(void *ctx); /* external memory (numpy buffers) */
    void *release_ctx;
    int lazy;            /* lazy capture: JN_LAZY_* (0 = data is current) */
    void *ext;           /* the capture hook's record on it (see jn_tensor.ext); NULL: none */
} jn_storage;

/* jn_storage.lazy: why the bytes are not (yet) what eager mode would hold. */
enum {
    JN_LAZY_PENDING = 1,  /* an op captured by replay writes or creates it and has not run */
    JN_LAZY_LOST = 2,     /* made inside a compiled graph that did not keep it (data NULL) */
    JN_LAZY_DEFERRED = 4  /* ditto, but replay can still compute it when it is read */
};

typedef struct jn_tensor {
    int64_t refcnt;
    jn_storage *storage;
    jn_dtype dtype;
    int ndim;
    int64_t shape[JN_MAX_DIMS];
    int64_t strides[JN_MAX_DIMS]; /* in elements */
    int64_t offset;               /* in elements */
    int64_t id;                   /* unique per tensor header (recording) */
    int wrapped_number;           /* a Python scalar (type promotion) */
    int is_view;                  /* made by a view op: shares another tensor's storage */
    void *autograd;               /* owned by the autograd layer */
    void *pyobj;                  /* borrowed back-pointer to the Python wrapper */
    /* Owned by the layer that installed the capture hook (replay: its
     * record of the references it holds on this header); NULL otherwise.
     * Opaque to the runtime, which only asks the hook about it
     * (jn_rt_tensor_refs); never copied to another header. */
    void *ext;
} jn_tensor;

typedef struct {
    jn_dtype dtype;
    int ndim;
    int64_t shape[JN_MAX_DIMS];
} jn_meta;

/* Allocate a contiguous tensor (uninitialized data). NULL + error on failure. */
jn_tensor *jn_tensor_new(jn_dtype dtype, int ndim, const int64_t *shape);
jn_tensor *jn_tensor_new_meta(const jn_meta *m);
/* Zero-filled. */
jn_tensor *jn_tensor_zeros(jn_dtype dtype, int ndim, const int64_t *shape);
/* A tensor header over existing memory; `release(ctx)` runs when the storage dies. */
jn_tensor *jn_tensor_from_memory(void *data, size_t nbytes, jn_dtype dtype, int ndim,
                                 const int64_t *shape, const int64_t *strides,
                                 int64_t offset, void (*release)(void *), void *ctx);
/* A new header sharing t's storage (shape/strides/offset copied). */
jn_tensor *jn_tensor_alias(jn_tensor *t);
/* A 0-d tensor holding a scalar. wrapped=1 marks a Python number. */
jn_tensor *jn_scalar_f64(double v, jn_dtype dtype, int wrapped);
jn_tensor *jn_scalar_i64(int64_t v, jn_dtype dtype, int wrapped);
/* Inline: every dispatched op takes and drops several references (an
 * out-of-line call each was measurable per op); the last reference's free
 * is out of line. */
void jn_rt_tensor_free(jn_tensor *t);
static inline void jn_tensor_incref(jn_tensor *t) { __atomic_fetch_add(&t->refcnt, 1, __ATOMIC_RELAXED); }
static inline void jn_tensor_decref(jn_tensor *t) {
    if (t && __atomic_sub_fetch(&t->refcnt, 1, __ATOMIC_ACQ_REL) == 0) jn_rt_tensor_free(t);
}

int64_t jn_numel(const jn_tensor *t);
int64_t jn_shape_numel(int ndim, const int64_t *shape);
int jn_is_contiguous(const jn_tensor *t);
void jn_contiguous_strides(int ndim, const int64_t *shape, int64_t *strides);
/* Pointer to element 0 (storage data + offset). */
static inline char *jn_data(const jn_tensor *t) {
    return (char *)t->storage->data + t->offset * (int64_t)jn_dtype_size[t->dtype];
}
static inline size_t jn_elsize(const jn_tensor *t) { return jn_dtype_size[t->dtype]; }
/* Wrap a possibly negative dim into [0, ndim); error names the op. */
jn_status jn_wrap_dim(int64_t *dim, int ndim, const char *opname);
/* Broadcast two shapes (numpy rules). */
jn_status jn_broadcast_shapes(int nd_a, const int64_t *a, int nd_b, const int64_t *b,
                              int *nd_out, int64_t *out);
/* Shapes equal? */
int jn_same_shape(int nd_a, const int64_t *a, int nd_b, const int64_t *b);
/* Format a shape as "[2, 3]" into buf (for error messages). */
const char *jn_shape_str(int ndim, const int64_t *shape, char *buf, size_t n);

/* Result dtype of an op over these tensors by PyTorch's rules (dimensioned
 * tensors > zero-dim tensors > wrapped Python numbers, by category). */
jn_dtype jn_result_type(int n, jn_tensor *const *ts);

/* ------------------------------------------------------------- iteration */
/* Inner loop: ptrs[k] points at operand k's first element, strides[k] is the
 * byte stride of operand k along the loop, n elements. */
typedef void (*jn_loop_fn)(char **ptrs, const int64_t *strides, int64_t n, void *ctx);

/* Byte strides of t broadcast to `shape` (0 along broadcast dims). */
void jn_broadcast_byte_strides(const jn_tensor *t, int ndim, const int64_t *shape,
                               int64_t *bstrides);

/* Run fn over every element of `shape` for nops operands with byte strides
 * bstrides[k][d].  Dims are coalesced; the innermost is handed to fn.  If
 * `parallel` and the work is large, outer rows are split over the thread
 * pool (fn must then be safe to run concurrently on disjoint rows). */
void jn_nditer(int nops, char **base, int ndim, const int64_t *shape,
               int64_t (*bstrides)[JN_MAX_DIMS], jn_loop_fn fn, void *ctx, int parallel);

/* Copy src into dst (same shape or src broadcastable), converting dtype. */
jn_status jn_copy_into(jn_tensor *dst, const jn_tensor *src);
/* JN_ERR_SHAPE (naming both shapes) unless src broadcasts to dst's shape. */
jn_status jn_rt_copy_shape_check(const jn_tensor *dst, const jn_tensor *src);
/* Could a and b share memory? (byte ranges intersect; also catches two
 * imported views of one numpy buffer, which have different storages) */
int jn_rt_may_overlap(const jn_tensor *a, const jn_tensor *b);
/* Do a and b show the very same elements (data, dtype, shape, strides)? */
int jn_rt_same_view(const jn_tensor *a, const jn_tensor *b);
/* The converting inner loop for src -> dst dtype (ptrs[0] = dst, ptrs[1] = src). */
jn_loop_fn jn_rt_cast_loop(jn_dtype src, jn_dtype dst);
/* Set by the autograd layer: frees what it hangs on a dying tensor. */
extern void (*jn_rt_autograd_free)(jn_tensor *t);
/* Set by the recorder while it records: a tensor header is about to die
 * (which of this step's tensors are still alive where a segment ends). */
extern void (*jn_rt_record_free)(const jn_tensor *t);
/* Set by the recorder while it records: `to` is a second header over the
 * value of `from`, with its id (autograd's detach and saved tensors): it
 * takes from's role. */
extern void (*jn_rt_record_alias)(const jn_tensor *from, const jn_tensor *to);
/* New contiguous tensor (a new reference even when t is contiguous). */
jn_tensor *jn_contiguous(jn_tensor *t);
/* New contiguous tensor of `dtype` (or a new ref to t if already so). */
jn_tensor *jn_to_dtype(jn_tensor *t, jn_dtype dtype);

/* ----------------------------------------------------------- thread pool */
typedef void (*jn_range_fn)(int64_t begin, int64_t end, void *ctx);
/* Split [0, n) into chunks of at least `grain` and run them on the pool. */
void jn_parallel_for(int64_t n, int64_t grain, jn_range_fn fn, void *ctx);
int jn_num_threads(void);
void jn_set_num_threads(int n);

/* -------------------------------------------------------------- op table */
enum {
    JN_F_EW = 1 << 0,        /* elementwise over broadcast inputs; supports out= */
    JN_F_RED = 1 << 1,       /* reduction */
    JN_F_VIEW = 1 << 2,      /* output aliases input 0's storage */
    JN_F_INPLACE = 1 << 3,   /* writes inputs 0..nout-1; output k is input k */
    JN_F_RAND = 1 << 4,      /* consumes the Philox stream (seed, offset attrs) */
    JN_F_FACTORY = 1 << 5,   /* creates a tensor from attributes only */
    JN_F_VARIADIC = 1 << 6,  /* nin is a minimum */
    JN_F_NOGRAD = 1 << 7,    /* not differentiable */
    JN_F_COLL = 1 << 8       /* a collective (runtime/k_dist.c): every rank must run it, once, in program
                              * order, so no pass removes, merges, folds, moves or recomputes it */
};

typedef enum {
#define JN_OP(name, nin, nout, flags, attrs) JN_OP_##name,
#include "ops.def"
#undef JN_OP
    JN_NOPS
} jn_op;

typedef enum { JN_A_INT = 'i', JN_A_FLOAT = 'f', JN_A_BOOL = 'b', JN_A_INTS = 'L', JN_A_DTYPE = 'd' } jn_attr_kind;

typedef struct {
    int n;
    int64_t v[JN_MAX_DIMS];
} jn_ints;

typedef union {
    int64_t i;   /* int, bool, dtype */
    double f;
    jn_ints l;
} jn_attr;

typedef struct {
    jn_attr a[JN_MAX_ATTRS];
} jn_attrs;

typedef struct {
    const char *name;
    int nin, nout, flags;
    const char *schema;                 /* as written in ops.def */
    int nattrs;
    char attr_kind[JN_MAX_ATTRS];       /* jn_attr_kind */
    char attr_name[JN_MAX_ATTRS][24];
    double attr_default[JN_MAX_ATTRS];  /* for numeric attrs ("alpha:f=1") */
    uint8_t attr_pos[JN_MAX_ATTRS];     /* 1: an int attribute that is a position in a
                                         * tensor (slice start/end, select index): ops_pos.def */
} jn_opinfo;

typedef jn_status (*jn_infer_fn)(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out);
typedef jn_status (*jn_kernel_fn)(int nin, jn_tensor *const *in, const jn_attrs *a,
                                  jn_tensor *const *out);

/* Per-op functions, declared from the table. */
#define JN_OP(name, nin, nout, flags, attrs)                                             \
    jn_status jn_infer_##name(int, jn_tensor *const *, const jn_attrs *, jn_meta *);     \
    jn_status jn_cpu_##name(int, jn_tensor *const *, const jn_attrs *, jn_tensor *const *);
#include "ops.def"
#undef JN_OP

const jn_opinfo *jn_op_info(jn_op op);
int jn_op_lookup(const char *name); /* -1 if unknown */
/* 64-bit FNV-1a over every row of the table (names, arity, flags, schema). */
uint64_t jn_optable_hash(void);
/* eq, ne, lt, le, gt, ge: what `if x < y:` evaluates (the recorder and
 * replay tie a following bool() sync to the latest one). */
static inline int jn_op_is_comparison(jn_op op) {
    return op == JN_OP_eq || op == JN_OP_ne || op == JN_OP_lt || op == JN_OP_le || op == JN_OP_gt || op == JN_OP_ge;
}
/* An op's output metadata from its inputs' metadata alone, as dispatch
 * infers it (no data read, no check of the inputs' devices): the analyzer
 * asks what an output's shape moves with.  one_hot(num_classes=-1), whose
 * shape is data, is JN_ERR_VALUE. */
jn_status jn_op_infer(jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out);
/* Index of attribute `name` of op, or -1. */
int jn_op_attr_index(jn_op op, const char *name);

/* The CPU features of this machine that generated code may rely on, gcc's
 * names space-separated ("sse4.2 avx avx2 fma avx512f ..."), into buf (NUL
 * terminated when n > 0).  Returns the full length, like snprintf: a
 * result >= n was cut short.  runtime/cpu.c. */
size_t jn_rt_cpu_features(char *buf, size_t n);

/* --------------------------------------------------------------- dispatch */
/* Run `op` on inputs with attributes; on success out[0..nout) hold new
 * references.  In-place ops return a new reference to in[0]. */
jn_status jn_dispatch(jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a,
                      jn_tensor **out);
/* Elementwise ops: write the result into an existing tensor `dst`
 * (x.add_(y) is add with dst = x).  The broadcast result shape must equal
 * dst's shape and the result dtype must cast to dst's dtype.  Also addmm
 * with dst = in[0] contiguous (torch's addmm_).  Bumps the version of dst. */
jn_status jn_dispatch_into(jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a,
                           jn_tensor *dst);

/* jn_dispatch for a caller that issues the same op with inputs of the
 * same metadata again and again (a replaced region's template op): the
 * output metadata inferred on one call is kept in *c with what it was
 * inferred from (the op's attributes, each input's dtype, shape, strides,
 * offset and wrapped-number flag) and reused while those compare equal;
 * anything else (another device, autocast, more than JN_RT_ICACHE_INS
 * inputs, one_hot, a failed inference) takes jn_dispatch's path.  Same
 * results, same errors.  A zeroed jn_rt_infer_cache is empty. */
#define JN_RT_ICACHE_INS 4
typedef struct {
    int valid, nin;
    jn_attrs a;
    struct {
        int8_t dtype, ndim, wrapped;
        int64_t offset;
        int64_t shape[JN_MAX_DIMS], strides[JN_MAX_DIMS];
    } in[JN_RT_ICACHE_INS];
    jn_meta out[JN_MAX_OUTS];
} jn_rt_infer_cache;
jn_status jn_rt_dispatch_cached(jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor **out,
                                jn_rt_infer_cache *c);

/* Hook for recording / lazy capture (set by later layers; NULL = eager). */
typedef struct jn_dispatch_hook {
    /* Called after an op ran or was captured (lazy capture), once per op. */
    void (*after)(void *ctx, jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a,
                  int nout, jn_tensor *const *out);
    void *ctx;
} jn_dispatch_hook;
void jn_set_dispatch_hook(const jn_dispatch_hook *h);
/* One hook at a time: whether one is installed (a recorder, or replay). */
int jn_dispatch_hook_installed(void);

/* ------------------------------------------------------- lazy capture */
/* Replay (replay/, jn_replay.h) installs this, ctx its object.  While
 * jn_rt_capturing is set, jn_dispatch / jn_dispatch_into infer their
 * outputs, create them pending (jn_rt_tensor_new_pending: storage data
 * NULL, lazy set), bump versions and record autograd exactly as eagerly,
 * run no kernel (view ops still set their strides) and hand the op to
 * `capture`, which owns what happens next (the outputs may already hold
 * data when it returns).
 * `materialize` makes a tensor's data current: flushes the pending ops. */
typedef struct jn_rt_capture_hook {
    jn_status (*capture)(void *ctx, jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, int nout,
                         jn_tensor *const *out, int into);
    jn_status (*materialize)(void *ctx, jn_tensor *t);
    /* Tensor headers on storage st that only the capture keeps alive
     * (views the engine made and eager would have freed by now); asked
     * only when st->ext is set. */
    int64_t (*held_only)(void *ctx, const jn_storage *st);
    /* The references to t the capture holds (of t->refcnt; eager would not
     * hold them); asked only when t->ext is set. */
    int64_t (*held_refs)(void *ctx, const jn_tensor *t);
    /* backward() while the hook is installed (jn_backward), capturing or
     * not (jn_rt_capturing says): *handled = 1 when the capture took the
     * call over (its status returned), 0 to run the engine.  May be NULL. */
    jn_status (*backward)(void *ctx, int n, jn_tensor *const *roots, jn_tensor *const *grads, int retain,
                          int *handled);
    /* Whether the followed graph expects op next reading t as input 0 (a
     * peek, jn_rt_capture_expects).  May be NULL. */
    int (*expects)(void *ctx, jn_op op, const jn_tensor *t);
    void *ctx;
    /* The device whose ops are captured (jn_device_type; 0 = JN_CPU): ops
     * on another device end the segment and run eagerly (a factory runs
     * eagerly with capture paused), so one replay's graphs hold one device. */
    int device;
} jn_rt_capture_hook;
void jn_rt_set_capture_hook(const jn_rt_capture_hook *h);
/* One capture hook at a time: whether one is installed (a replay). */
int jn_rt_capture_hook_installed(void);
/* The capture hook's backward callback (*handled = 0 without one). */
jn_status jn_rt_capture_backward(int n, jn_tensor *const *roots, jn_tensor *const *grads, int retain, int *handled);
/* While capturing: whether the graph being followed expects op next with
 * t as its first input (0 when not capturing).  For ops whose choice the
 * data makes, not the program: reshape's copy or view, contiguous's copy
 * or nothing, which torch documents may not be relied on. */
int jn_rt_capture_expects(jn_op op, const jn_tensor *t);
/* n consecutive tensor ids, none of them given to a tensor: the first. */
int64_t jn_rt_reserve_ids(int64_t n);
extern int jn_rt_capturing;
/* The one helper everything that reads or writes tensor data outside
 * jn_dispatch calls first: JN_OK at once for an ordinary tensor; for a
 * pending one, the capture hook runs what is pending (a lost one is an
 * error saying why). */
jn_status jn_rt_materialize_slow(jn_tensor *t);
/* st->refcnt as eager execution would see it: without the headers only
 * replay's capture keeps alive (== st->refcnt when not capturing). */
int64_t jn_rt_storage_refs(const jn_storage *st);
/* t->refcnt as eager execution would see it: without the references the
 * capture holds (autograd's decisions to reuse a gradient buffer in place
 * must come out as eagerly).  One load and branch unless t->ext is set. */
int64_t jn_rt_tensor_refs_slow(const jn_tensor *t);
static inline int64_t jn_rt_tensor_refs(const jn_tensor *t) {
    return t->ext ? jn_rt_tensor_refs_slow(t) : t->refcnt;
}
static inline jn_status jn_rt_materialize(jn_tensor *t) {
    return t && t->storage && t->storage->lazy ? jn_rt_materialize_slow(t) : JN_OK;
}
/* Nonzero while kernels (or the graph executor) run: tensor headers made
 * then get ids from a separate range (see tensor.c), so the ids Python and
 * the recorder see are the same whether kernels run eagerly or later. */
extern int jn_rt_private_ids;
/* The kernel clock (benchmarks: the host time per step outside kernels).
 * While on, per thread, the wall time inside the outermost kernel call --
 * eager's jn_rt_run_kernel, a graph node's kernel, a generated kernel; a
 * device kernel's launch -- is summed with the count of such calls (a
 * kernel that dispatches another counts once).  Switched per thread from
 * Python between ops (janus._C._kernel_clock), never inside a kernel.
 * The call sites test jn_rt_kclock_threads, the number of threads whose
 * clock is on (a plain load: a thread-local one costs a __tls_get_addr
 * call in this shared object), and only then the thread's own state. */
extern int jn_rt_kclock_threads;
double jn_rt_seconds(void); /* CLOCK_MONOTONIC seconds: every timer of the runtime and of replay */
void jn_rt_kclock_begin_slow(void);
void jn_rt_kclock_end_slow(void);
static inline void jn_rt_kclock_begin(void) {
    if (__builtin_expect(jn_rt_kclock_threads != 0, 0)) jn_rt_kclock_begin_slow();
}
static inline void jn_rt_kclock_end(void) {
    if (__builtin_expect(jn_rt_kclock_threads != 0, 0)) jn_rt_kclock_end_slow();
}
void jn_rt_kclock_end_op_slow(jn_op op);
static inline void jn_rt_kclock_end_op(jn_op op) { /* jn_rt_kclock_end of op's eager kernel */
    if (__builtin_expect(jn_rt_kclock_threads != 0, 0)) jn_rt_kclock_end_op_slow(op);
}
/* This thread's clock on or off (between ops); its seconds and calls so far. */
void jn_rt_kclock_set(int on);
void jn_rt_kclock_read(double *seconds, uint64_t *calls);
/* Per op as well (a profiler): an eager op's kernel (jn_rt_run_kernel) is
 * also summed under its op while on (the clock must be on too); graph
 * nodes and generated kernels count in the totals only.  Read: the
 * seconds and calls per op so far (JN_NOPS each); 0 when off. */
jn_status jn_rt_kclock_set_ops(int on);
int jn_rt_kclock_read_ops(double *seconds, uint64_t *calls);
/* A contiguous tensor whose storage has no data yet (lazy = PENDING). */
jn_tensor *jn_rt_tensor_new_pending(const jn_meta *m);
/* Give a data-less storage its bytes (uninitialized). */
jn_status jn_rt_storage_alloc(jn_storage *st);
/* Blocks of 1-8 kB from a per-thread cache by size class (above the C
 * library's per-thread cache): storages with their data inline, autograd
 * nodes; other sizes are malloc's (*cls -1).  Uninitialized; *cls goes
 * back with the block to jn_rt_small_free (from any thread). */
void *jn_rt_small_alloc(size_t size, int *cls);
void jn_rt_small_free(void *b, int cls);
/* Frees the large buffers the runtime keeps for reuse (its block cache);
 * the bytes given back.  Before a graph's large arena is allocated. */
size_t jn_rt_block_cache_release(void);
/* Called (outside the cache's lock) before the block cache allocates a
 * block afresh because none of that size was free: the graph executor
 * gives back its idle shared arena there (see exec.c).  NULL: none. */
void jn_rt_set_block_miss_hook(void (*hook)(void));
/* The eager kernel of op over tensors whose storages hold data (no checks,
 * no versions, no autograd, no hook): what replay's fallback runs. */
jn_status jn_rt_run_kernel(jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out);
/* jn_dispatch_into's kernel part (inputs overlapping dst copied first). */
jn_status jn_rt_run_into(jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *dst);

/* ------------------------------------------------------------ randomness */
/* Functions the CUDA kernels share with the CPU (runtime/cuda/kernels.cu
 * includes this header): host and device code under nvcc, plain C here. */
#ifdef __CUDACC__
#define JN_HD __host__ __device__
#else
#define JN_HD
#endif

/* Philox4x32-10 (Salmon et al., SC'11) on a 128-bit counter and 64-bit key:
 * the one definition of the rounds, inline so the random fill loops pay no
 * call per element (and the CUDA backend's draw the same numbers).
 * Known-answer tested in tests/c/test_core.c. */
static inline JN_HD void jn_philox4_inline(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}
/* Four 32-bit outputs for a 64-bit counter (upper counter words 0). */
static inline JN_HD void jn_philox_inline(uint64_t counter, uint64_t key, uint32_t out[4]) {
    const uint32_t c[4] = {(uint32_t)counter, (uint32_t)(counter >> 32), 0, 0};
    const uint32_t k[2] = {(uint32_t)key, (uint32_t)(key >> 32)};
    jn_philox4_inline(c, k, out);
}
void jn_philox(uint64_t counter, uint64_t key, uint32_t out[4]);
/* The same on a full 128-bit counter and 64-bit key (known-answer tests). */
void jn_rt_philox4(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
void jn_manual_seed(uint64_t seed);
uint64_t jn_rng_seed(void);
uint64_t jn_rng_offset(void);
void jn_rng_set_state(uint64_t seed, uint64_t offset);

/* Helpers shared by kernels for checking arguments. */
#define JN_CHECK(cond, status, ...) \
    do { if (!(cond)) return jn_error((status), __VA_ARGS__); } while (0)

#ifdef __cplusplus
}
#endif
#endif
