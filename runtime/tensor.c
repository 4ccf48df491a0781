/* tensor.c -- tensor and storage lifetime, shapes, broadcasting, the strided
 * N-d iterator every kernel uses, and dtype-converting copies.
 *
 * Storage is refcounted and owns (or borrows, for numpy buffers) the bytes;
 * a tensor header is refcounted separately so views share storage and its
 * version counter.  Errors go to a thread-local message buffer.
 */
#include "jn_backend.h"
#include "jn_runtime.h"
#include "k_gemm.h"
#include "jn_settings.h"
#include "k_fastmath.h" /* sat_i64 */

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ errors */
static _Thread_local char errbuf[1024];

jn_status jn_error(jn_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, sizeof errbuf, fmt, ap);
    va_end(ap);
    return s;
}

const char *jn_errmsg(void) { return errbuf; }

const char *jn_status_name(jn_status s) {
    static const char *n[] = {"ok", "value error", "type error", "index error", "shape error",
                              "runtime error", "out of memory", "unsupported", "I/O error"};
    return (unsigned)s < sizeof n / sizeof n[0] ? n[s] : "unknown error";
}

/* ----------------------------------------------------------------- tensors */
static int64_t next_id = 1; /* tensor ids for the recorder; only needs uniqueness */
/* Headers made inside kernels (and by the graph executor) take ids from a
 * second counter, so the ids of every tensor the dispatcher hands out do not
 * depend on WHEN kernels run: replay's lazy capture runs them later than
 * eager mode, and state is guarded by the ids the recording saw. */
static int64_t next_private_id = (int64_t)1 << 62;
int jn_rt_private_ids;

int64_t jn_rt_reserve_ids(int64_t n) { return __atomic_fetch_add(&next_id, n, __ATOMIC_RELAXED); }

/* Freed headers are kept per thread for the next ones.  A step of small ops
 * makes and drops hundreds of headers in bursts (a replayed segment's
 * pending list lets go of all of its own at the segment's end), more than
 * the C library's per-thread cache holds of one size (7), so most went
 * through its slower bins: malloc and free were ~15% of a replayed chain of
 * small ops.  Bounded (HDR_KEEP a thread: at most ~570 kB with the
 * storages; a replayed step of ~700 small ops lets go of ~900 headers at
 * its end, and with 512 kept a few hundred went back to malloc every
 * step), freed when the thread exits.
 * Under AddressSanitizer every header goes back to malloc, so a use after
 * free is still caught. */
#if defined(__SANITIZE_ADDRESS__)
#define HDR_KEEP 0
#else
#define HDR_KEEP 2048
#endif
/* ... storages with at most 64 bytes inline (a wrapped Python number per
 * `x * 2.0`, a loss's 0-d values: ~250 per step of a small LSTM) ... */
#define TINY_KEEP (HDR_KEEP / 2)
/* ... and blocks of SMALL_MIN to SMALL_MAX bytes by size class
 * (jn_rt_small_alloc): storages with their data inline (an [8 x 32]
 * activation) and autograd nodes.  The C library's per-thread cache takes
 * no block above 1032 bytes, and its large-request path first
 * consolidates the fast bins: malloc and free were ~19% of a chain of
 * small grad-requiring ops.  SMALL_STEP-byte classes, SMALL_KEEP_BYTES a
 * thread in all.  Smaller blocks stay the C library's (through classes
 * here they measured 5-15 ns slower per op). */
#define SMALL_MIN 1032
#define SMALL_STEP 64
#define SMALL_MAX 8192
#define SMALL_CLASSES (SMALL_MAX / SMALL_STEP)
#define SMALL_KEEP_BYTES (HDR_KEEP > 0 ? (size_t)4 << 20 : 0)
typedef struct {
    int n, ns, ntiny;
    jn_tensor *h[HDR_KEEP > 0 ? HDR_KEEP : 1];
    /* storages without inline data (a captured op's pending output: one
     * per op, dropped in bursts like the headers) */
    jn_storage *s[HDR_KEEP > 0 ? HDR_KEEP : 1];
    void *tiny[TINY_KEEP > 0 ? TINY_KEEP : 1];
    void *small[SMALL_CLASSES]; /* free blocks of class k: (k + 1) * SMALL_STEP bytes, linked by their first word */
    size_t small_bytes;
} hdr_cache;
static _Thread_local hdr_cache *hcache;
static pthread_key_t hcache_key;
static pthread_once_t hcache_once = PTHREAD_ONCE_INIT;
static int hcache_key_ok;

static void hcache_free(void *p) {
    hdr_cache *c = p;
    for (int i = 0; i < c->n; i++) free(c->h[i]);
    for (int i = 0; i < c->ns; i++) free(c->s[i]);
    for (int i = 0; i < c->ntiny; i++) free(c->tiny[i]);
    for (int k = 0; k < SMALL_CLASSES; k++)
        while (c->small[k]) {
            void *b = c->small[k];
            c->small[k] = *(void **)b;
            free(b);
        }
    free(c);
}
static void hcache_make_key(void) { hcache_key_ok = pthread_key_create(&hcache_key, hcache_free) == 0; }

static jn_tensor *header_alloc(void) {
    hdr_cache *c = hcache;
    if (c && c->n) {
        jn_tensor *t = c->h[--c->n];
        memset(t, 0, sizeof *t);
        return t;
    }
    return calloc(1, sizeof(jn_tensor));
}

static hdr_cache *__attribute__((noinline)) hcache_make(void) {
    hdr_cache *c = NULL;
    if (HDR_KEEP > 0) { /* this thread's first: its cache, freed with the thread */
        pthread_once(&hcache_once, hcache_make_key);
        if (hcache_key_ok && (c = calloc(1, sizeof *c)) && pthread_setspecific(hcache_key, c) != 0) {
            free(c);
            c = NULL;
        }
        hcache = c;
    }
    return c;
}

static void header_release(jn_tensor *t) {
    hdr_cache *c = hcache;
    if (!c) c = hcache_make();
    if (c && c->n < HDR_KEEP) c->h[c->n++] = t;
    else free(t);
}

/* A zeroed storage header without inline data, and its release. */
static jn_storage *bare_storage_alloc(void) {
    hdr_cache *c = hcache;
    if (c && c->ns) {
        jn_storage *st = c->s[--c->ns];
        memset(st, 0, sizeof *st);
        return st;
    }
    return calloc(1, sizeof(jn_storage));
}

static void bare_storage_release(jn_storage *st) {
    hdr_cache *c = hcache;
    if (!c) c = hcache_make();
    if (c && c->ns < HDR_KEEP) c->s[c->ns++] = st;
    else free(st);
}

static inline void *small_alloc(size_t size, int *cls) {
    size_t k = (size + SMALL_STEP - 1) / SMALL_STEP - 1;
    hdr_cache *c = hcache;
    if (SMALL_KEEP_BYTES == 0 || size <= SMALL_MIN || k >= SMALL_CLASSES) {
        *cls = -1;
        return malloc(size ? size : 1);
    }
    *cls = (int)k;
    if (c && c->small[k]) {
        void *b = c->small[k];
        c->small[k] = *(void **)b;
        c->small_bytes -= (k + 1) * SMALL_STEP;
        return b;
    }
    return malloc((k + 1) * SMALL_STEP); /* the class's full size: reused for anything of the class */
}

static inline void small_free(void *b, int cls) {
    if (!b) return;
    hdr_cache *c = hcache;
    size_t sz = (size_t)(cls + 1) * SMALL_STEP;
    if (cls < 0 || cls >= SMALL_CLASSES) {
        free(b);
        return;
    }
    if (!c) c = hcache_make();
    if (!c || c->small_bytes + sz > SMALL_KEEP_BYTES) {
        free(b);
        return;
    }
    *(void **)b = c->small[cls];
    c->small[cls] = b;
    c->small_bytes += sz;
}
/* exported (the autograd layer's nodes); the runtime's own calls inline the above */
void *jn_rt_small_alloc(size_t size, int *cls) { return small_alloc(size, cls); }
void jn_rt_small_free(void *b, int cls) { small_free(b, cls); }

/* A storage block with its data inline: one of at most 64 bytes goes to
 * `tiny` (a block of that size, whatever nbytes it had), larger ones to
 * their class. */
static void storage_block_release(jn_storage *st) {
    hdr_cache *c = hcache;
    if (st->nbytes <= 64) {
        if (!c) c = hcache_make();
        if (c && c->ntiny < TINY_KEEP) {
            c->tiny[c->ntiny++] = st;
            return;
        }
        free(st);
        return;
    }
    small_free(st, st->block_class);
}

static jn_tensor *header(jn_storage *st, jn_dtype dtype, int ndim, const int64_t *shape) {
    /* The id first: a locked add waits for the stores before it to drain, and
     * after header_alloc's clearing those include the header's own lines (cold
     * when the header comes from the cache: measured ~2/3 of this function). */
    int64_t id = __atomic_fetch_add(jn_rt_private_ids ? &next_private_id : &next_id, 1, __ATOMIC_RELAXED);
    jn_tensor *t = header_alloc();
    if (!t) {
        jn_error(JN_ERR_NOMEM, "out of memory allocating a tensor header");
        return NULL;
    }
    t->refcnt = 1;
    t->storage = st;
    t->dtype = dtype;
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++) t->shape[d] = shape[d]; /* a few dims: no libc call */
    jn_contiguous_strides(ndim, t->shape, t->strides);
    t->id = id;
    return t;
}

/* ---------------------------------------------------------- block cache */
/* Large buffers are kept for reuse instead of going back to the C library:
 * glibc serves them with mmap, so every fresh activation or gradient of a
 * training step would otherwise be zero-filled page by page by the kernel
 * (measured: more than half of an MLP's Adam step).  Blocks are rounded to
 * quarter powers of two (at most 25% slack) and cached per class up to
 * JANUS_CACHE_MB (default 512) in all; the rest is freed, as are blocks
 * above CACHE_MAX. */
#define CACHE_MIN ((size_t)64 << 10)
/* Larger blocks go straight back: a one-off buffer such as a whole
 * dataset's float conversion (fashion-MNIST: 188 MB) would otherwise stay
 * resident for the rest of the run, and a buffer that size costs far more
 * to compute than its pages cost to fault in. */
#define CACHE_MAX ((size_t)64 << 20)
#define CACHE_CLASSES 192

static struct {
    pthread_mutex_t mu;
    void *head[CACHE_CLASSES]; /* free blocks; the first word links them */
    size_t bytes, cap;
    int init;
} bcache = {PTHREAD_MUTEX_INITIALIZER, {0}, 0, 0, 0};

static int block_class(size_t sz, size_t *rounded) {
    int e = 63 - __builtin_clzll((unsigned long long)sz); /* 2^e <= sz */
    size_t base = (size_t)1 << e, step = base >> 2;
    size_t k = (sz - base + step - 1) / step;             /* 0..4 quarters above 2^e */
    *rounded = base + k * step;
    return e * 4 + (int)k;
}

static size_t class_bytes(int cls) {
    return ((size_t)1 << (cls / 4)) + (size_t)(cls % 4) * (((size_t)1 << (cls / 4)) >> 2);
}

static void (*_Atomic block_miss_hook)(void);

void jn_rt_set_block_miss_hook(void (*hook)(void)) { block_miss_hook = hook; }

static void *block_alloc(size_t sz, int *cls) {
    size_t r;
    int c = sz >= CACHE_MIN && sz <= CACHE_MAX ? block_class(sz, &r) : -1;
    if (c >= 0 && c < CACHE_CLASSES) {
        /* its own class first, then a block up to 4 classes (2x) larger,
         * which goes back to its own class when freed: buffers whose size
         * follows the data (a sequence length) then reuse the largest ones
         * instead of each size keeping blocks of its own (char_lstm: 11 MB
         * of its peak were blocks of lengths not seen again) */
        pthread_mutex_lock(&bcache.mu);
        void *b = NULL;
        int u = c;
        for (; u < CACHE_CLASSES && u <= c + 4 && !(b = bcache.head[u]); u++) {}
        if (b) {
            bcache.head[u] = *(void **)b;
            bcache.bytes -= class_bytes(u);
        }
        pthread_mutex_unlock(&bcache.mu);
        *cls = b ? u : c;
        if (b) return b;
        void (*hook)(void) = block_miss_hook;
        if (hook) hook();
        return aligned_alloc(64, r);
    }
    *cls = -1;
    return aligned_alloc(64, sz);
}

static void block_free(void *b, int cls) {
    if (cls >= 0) {
        size_t r = class_bytes(cls);
        pthread_mutex_lock(&bcache.mu);
        if (!bcache.init) {
            /* lazily, under a free: a bad value was refused by `import janus` / the janus command */
            bcache.cap = (size_t)jn_setting_int_lazy(JN_S_CACHE_MB) << 20;
            bcache.init = 1;
        }
        if (bcache.bytes + r <= bcache.cap) {
            *(void **)b = bcache.head[cls];
            bcache.head[cls] = b;
            bcache.bytes += r;
            b = NULL;
        }
        pthread_mutex_unlock(&bcache.mu);
    }
    free(b);
}

/* Frees every cached block; the bytes given back.  Replay calls it before
 * a graph's large arena is allocated: eager work that ran first (a
 * fallback) left its freed buffers here, and the arena would otherwise
 * come on top of them. */
size_t jn_rt_block_cache_release(void) {
    pthread_mutex_lock(&bcache.mu);
    size_t n = bcache.bytes;
    for (int c = 0; c < CACHE_CLASSES; c++)
        while (bcache.head[c]) {
            void *b = bcache.head[c];
            bcache.head[c] = *(void **)b;
            free(b);
        }
    bcache.bytes = 0;
    pthread_mutex_unlock(&bcache.mu);
    return n;
}

/* Small tensors dominate eager dispatch cost, so storage header and data
 * share one malloc block (data 64-byte aligned for vector loads, placed
 * after the header); big buffers get their own aligned allocation. */
#define INLINE_DATA_MAX 4096

static jn_storage *storage_new(size_t nbytes, int zero) {
    size_t sz = (nbytes + 63) & ~(size_t)63;
    if (!sz) sz = 64; /* at least one line so data != NULL */
    jn_storage *st;
    if (sz <= INLINE_DATA_MAX) {
        size_t head = (sizeof *st + 63) & ~(size_t)63;
        int cls = -1;
        hdr_cache *c = hcache;
        char *blk = sz == 64 && c && c->ntiny ? (char *)c->tiny[--c->ntiny] : small_alloc(head + sz + 63, &cls);
        if (!blk) return NULL;
        st = (jn_storage *)blk;
        memset(st, 0, sizeof *st);
        st->data = (void *)(((uintptr_t)blk + head + 63) & ~(uintptr_t)63);
        st->owns_data = 2; /* freed with the header */
        st->block_class = cls; /* its small-block class */
    } else {
        st = bare_storage_alloc();
        if (!st) return NULL;
        st->data = block_alloc(sz, &st->block_class);
        if (!st->data) {
            free(st);
            return NULL;
        }
        st->owns_data = 1;
    }
    st->refcnt = 1;
    st->nbytes = nbytes;
    if (zero) memset(st->data, 0, sz);
    return st;
}

static void storage_decref(jn_storage *st);

static jn_tensor *tensor_new(jn_dtype dtype, int ndim, const int64_t *shape, int zero) {
    if (ndim < 0 || ndim > JN_MAX_DIMS) {
        jn_error(JN_ERR_VALUE, "tensors have at most %d dims, got %d", JN_MAX_DIMS, ndim);
        return NULL;
    }
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) {
            jn_error(JN_ERR_VALUE, "negative dimension %lld in a tensor shape", (long long)shape[i]);
            return NULL;
        }
        if (shape[i] && n > INT64_MAX / 16 / shape[i]) {
            jn_error(JN_ERR_NOMEM, "tensor shape is too large to allocate");
            return NULL;
        }
        n *= shape[i];
    }
    jn_storage *st = storage_new((size_t)n * jn_dtype_size[dtype], zero);
    if (!st) {
        jn_error(JN_ERR_NOMEM, "out of memory allocating %lld elements of %s", (long long)n,
                 jn_dtype_names[dtype]);
        return NULL;
    }
    jn_tensor *t = header(st, dtype, ndim, shape);
    if (!t) storage_decref(st); /* its only reference */
    return t;
}

jn_tensor *jn_tensor_new(jn_dtype dtype, int ndim, const int64_t *shape) {
    return tensor_new(dtype, ndim, shape, 0);
}
jn_tensor *jn_tensor_zeros(jn_dtype dtype, int ndim, const int64_t *shape) {
    return tensor_new(dtype, ndim, shape, 1);
}
jn_tensor *jn_tensor_new_meta(const jn_meta *m) { return tensor_new(m->dtype, m->ndim, m->shape, 0); }

jn_tensor *jn_rt_tensor_new_pending(const jn_meta *m) {
    int64_t n = jn_shape_numel(m->ndim, m->shape);
    jn_storage *st = bare_storage_alloc();
    if (!st) {
        jn_error(JN_ERR_NOMEM, "out of memory allocating a tensor header");
        return NULL;
    }
    st->refcnt = 1;
    st->nbytes = (size_t)n * jn_dtype_size[m->dtype];
    st->owns_data = 1;
    st->block_class = -1;
    st->lazy = JN_LAZY_PENDING;
    jn_tensor *t = header(st, m->dtype, m->ndim, m->shape);
    if (!t) free(st);
    return t;
}

jn_status jn_rt_storage_alloc(jn_storage *st) {
    if (st->data) return JN_OK;
    size_t sz = (st->nbytes + 63) & ~(size_t)63;
    if (!sz) sz = 64;
    st->data = block_alloc(sz, &st->block_class);
    if (!st->data) return jn_error(JN_ERR_NOMEM, "out of memory allocating %zu bytes", st->nbytes);
    st->owns_data = 1;
    return JN_OK;
}

jn_tensor *jn_tensor_from_memory(void *data, size_t nbytes, jn_dtype dtype, int ndim,
                                 const int64_t *shape, const int64_t *strides, int64_t offset,
                                 void (*release)(void *), void *ctx) {
    jn_storage *st = bare_storage_alloc();
    if (!st) {
        jn_error(JN_ERR_NOMEM, "out of memory");
        return NULL;
    }
    st->refcnt = 1;
    st->data = data;
    st->nbytes = nbytes;
    st->release = release;
    st->release_ctx = ctx;
    jn_tensor *t = header(st, dtype, ndim, shape);
    if (!t) {
        free(st);
        return NULL;
    }
    if (strides) memcpy(t->strides, strides, sizeof(int64_t) * (size_t)ndim);
    t->offset = offset;
    return t;
}

jn_tensor *jn_tensor_alias(jn_tensor *src) {
    jn_tensor *t = header(src->storage, src->dtype, src->ndim, src->shape);
    if (!t) return NULL;
    __atomic_fetch_add(&src->storage->refcnt, 1, __ATOMIC_RELAXED);
    memcpy(t->strides, src->strides, sizeof t->strides);
    t->offset = src->offset;
    return t;
}

jn_tensor *jn_scalar_f64(double v, jn_dtype dtype, int wrapped) {
    jn_tensor *t = jn_tensor_new(dtype, 0, NULL);
    if (!t) return NULL;
    jn_store_f64(jn_data(t), dtype, v);
    t->wrapped_number = wrapped;
    return t;
}

jn_tensor *jn_scalar_i64(int64_t v, jn_dtype dtype, int wrapped) {
    jn_tensor *t = jn_tensor_new(dtype, 0, NULL);
    if (!t) return NULL;
    jn_store_i64(jn_data(t), dtype, v);
    t->wrapped_number = wrapped;
    return t;
}


static void storage_decref(jn_storage *st) {
    if (!st || __atomic_sub_fetch(&st->refcnt, 1, __ATOMIC_ACQ_REL) != 0) return;
    if (st->release) st->release(st->release_ctx);
    else if (st->owns_data == 1) block_free(st->data, st->block_class);
    if (st->owns_data == 2) storage_block_release(st); /* its data is inside the block */
    else bare_storage_release(st);
}

/* Set by the autograd layer to free what it hangs on tensors. */
void (*jn_rt_autograd_free)(jn_tensor *t) = NULL;
void (*jn_rt_record_free)(const jn_tensor *t) = NULL;
void (*jn_rt_record_alias)(const jn_tensor *from, const jn_tensor *to) = NULL;

/* The last reference of jn_tensor_decref (jn_runtime.h) is gone. */
void jn_rt_tensor_free(jn_tensor *t) {
    if (jn_rt_record_free) jn_rt_record_free(t);
    if (t->autograd && jn_rt_autograd_free) jn_rt_autograd_free(t);
    storage_decref(t->storage);
    header_release(t);
}

/* ------------------------------------------------------------------ shapes */
int64_t jn_shape_numel(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return n;
}
int64_t jn_numel(const jn_tensor *t) { return jn_shape_numel(t->ndim, t->shape); }

void jn_contiguous_strides(int ndim, const int64_t *shape, int64_t *strides) {
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = s;
        s *= shape[i] > 1 ? shape[i] : 1;
    }
}

int jn_is_contiguous(const jn_tensor *t) {
    int64_t s = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] == 0) return 1;
        if (t->shape[i] != 1 && t->strides[i] != s) return 0;
        s *= t->shape[i];
    }
    return 1;
}

jn_status jn_wrap_dim(int64_t *dim, int ndim, const char *opname) {
    int n = ndim > 0 ? ndim : 1; /* a 0-d tensor accepts dim 0 and -1 */
    if (*dim < -n || *dim >= n)
        return jn_error(JN_ERR_INDEX,
                        "%s: dimension out of range (expected to be in range of [%d, %d], but got %lld)",
                        opname, -n, n - 1, (long long)*dim);
    if (*dim < 0) *dim += n;
    return JN_OK;
}

const char *jn_shape_str(int ndim, const int64_t *shape, char *buf, size_t n) {
    size_t k = 0;
    k += (size_t)snprintf(buf + k, n - k, "[");
    for (int i = 0; i < ndim && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (k < n) snprintf(buf + k, n - k, "]");
    return buf;
}

int jn_same_shape(int nd_a, const int64_t *a, int nd_b, const int64_t *b) {
    if (nd_a != nd_b) return 0;
    for (int i = 0; i < nd_a; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

jn_status jn_broadcast_shapes(int nd_a, const int64_t *a, int nd_b, const int64_t *b,
                              int *nd_out, int64_t *out) {
    int nd = nd_a > nd_b ? nd_a : nd_b;
    int64_t r[JN_MAX_DIMS];
    for (int i = 0; i < nd; i++) {
        int ia = nd_a - nd + i, ib = nd_b - nd + i;
        int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
        if (da == db || db == 1) r[i] = da;
        else if (da == 1) r[i] = db;
        else {
            char sa[128], sb[128];
            return jn_error(JN_ERR_SHAPE,
                            "shapes %s and %s cannot be broadcast together: the size of dim %d "
                            "(%lld) must match the size of dim %d (%lld) or one must be 1",
                            jn_shape_str(nd_a, a, sa, sizeof sa), jn_shape_str(nd_b, b, sb, sizeof sb),
                            ia, (long long)da, ib, (long long)db);
        }
    }
    memcpy(out, r, sizeof(int64_t) * (size_t)nd);
    *nd_out = nd;
    return JN_OK;
}

void jn_broadcast_byte_strides(const jn_tensor *t, int ndim, const int64_t *shape, int64_t *bs) {
    int64_t es = (int64_t)jn_dtype_size[t->dtype];
    for (int i = 0; i < ndim; i++) {
        int it = t->ndim - ndim + i;
        bs[i] = (it >= 0 && t->shape[it] == shape[i] && shape[i] != 1) ? t->strides[it] * es : 0;
    }
}

/* Byte range [lo, hi) a tensor's elements can touch. */
static void byte_extent(const jn_tensor *t, uintptr_t *lo, uintptr_t *hi) {
    int64_t es = (int64_t)jn_dtype_size[t->dtype], mn = 0, mx = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] == 0) {
            *lo = *hi = 0;
            return;
        }
        int64_t span = (t->shape[i] - 1) * t->strides[i];
        if (span < 0) mn += span;
        else mx += span;
    }
    uintptr_t base = (uintptr_t)jn_data(t);
    *lo = base + (uintptr_t)(mn * es);
    *hi = base + (uintptr_t)((mx + 1) * es);
}

jn_status jn_rt_copy_shape_check(const jn_tensor *dst, const jn_tensor *src) {
    int nd;
    int64_t shape[JN_MAX_DIMS];
    jn_status s = jn_broadcast_shapes(dst->ndim, dst->shape, src->ndim, src->shape, &nd, shape);
    if (s || !jn_same_shape(nd, shape, dst->ndim, dst->shape)) {
        char a[128], b[128];
        return jn_error(JN_ERR_SHAPE, "cannot copy a tensor of shape %s into one of shape %s",
                        jn_shape_str(src->ndim, src->shape, a, sizeof a),
                        jn_shape_str(dst->ndim, dst->shape, b, sizeof b));
    }
    return JN_OK;
}

int jn_rt_same_view(const jn_tensor *a, const jn_tensor *b) {
    return jn_data(a) == jn_data(b) && a->dtype == b->dtype && jn_same_shape(a->ndim, a->shape, b->ndim, b->shape) &&
           !memcmp(a->strides, b->strides, sizeof(int64_t) * (size_t)a->ndim);
}

int jn_rt_may_overlap(const jn_tensor *a, const jn_tensor *b) {
    if (!a->storage->data || !b->storage->data) return 0;
    uintptr_t alo, ahi, blo, bhi;
    byte_extent(a, &alo, &ahi);
    byte_extent(b, &blo, &bhi);
    return alo < bhi && blo < ahi;
}

/* --------------------------------------------------------------- iterator */
#define ITER_MAX_OPS 8

typedef struct {
    int nops, ndim;
    char *base[ITER_MAX_OPS];
    int64_t shape[JN_MAX_DIMS];
    int64_t st[ITER_MAX_OPS][JN_MAX_DIMS];
    jn_loop_fn fn;
    void *ctx;
} iter_state;

/* Run rows [begin, end) of the outer index space (all dims but the last). */
static void iter_rows(const iter_state *s, int64_t begin, int64_t end) {
    int nd = s->ndim, nops = s->nops;
    int64_t inner = s->shape[nd - 1];
    int64_t istr[ITER_MAX_OPS];
    for (int k = 0; k < nops; k++) istr[k] = s->st[k][nd - 1];
    int64_t idx[JN_MAX_DIMS] = {0};
    int64_t r = begin;
    for (int d = nd - 2; d >= 0; d--) {
        idx[d] = r % s->shape[d];
        r /= s->shape[d];
    }
    char *p[ITER_MAX_OPS];
    for (int64_t row = begin; row < end; row++) {
        for (int k = 0; k < nops; k++) {
            char *q = s->base[k];
            for (int d = 0; d < nd - 1; d++) q += idx[d] * s->st[k][d];
            p[k] = q;
        }
        s->fn(p, istr, inner, s->ctx);
        for (int d = nd - 2; d >= 0; d--) {
            if (++idx[d] < s->shape[d]) break;
            idx[d] = 0;
        }
    }
}

static void iter_rows_task(int64_t b, int64_t e, void *ctx) { iter_rows(ctx, b, e); }

typedef struct {
    const iter_state *s;
} inner_split;

static void iter_inner_task(int64_t b, int64_t e, void *ctx) {
    const iter_state *s = ctx;
    char *p[ITER_MAX_OPS];
    int64_t istr[ITER_MAX_OPS];
    for (int k = 0; k < s->nops; k++) {
        istr[k] = s->st[k][0];
        p[k] = s->base[k] + b * istr[k];
    }
    s->fn(p, istr, e - b, s->ctx);
}

void jn_nditer(int nops, char **base, int ndim, const int64_t *shape,
               int64_t (*bstrides)[JN_MAX_DIMS], jn_loop_fn fn, void *ctx, int parallel) {
    iter_state s;
    s.nops = nops;
    s.fn = fn;
    s.ctx = ctx;
    for (int k = 0; k < nops; k++) s.base[k] = base[k];
    /* drop size-1 dims, then merge dims that are contiguous for every operand */
    int nd = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 0) return;
        if (shape[d] == 1) continue;
        s.shape[nd] = shape[d];
        for (int k = 0; k < nops; k++) s.st[k][nd] = bstrides[k][d];
        nd++;
    }
    if (nd == 0) {
        s.shape[0] = 1;
        for (int k = 0; k < nops; k++) s.st[k][0] = 0;
        nd = 1;
    }
    int m = 0;
    for (int d = 1; d < nd; d++) {
        int ok = 1;
        for (int k = 0; k < nops && ok; k++) ok = s.st[k][m] == s.st[k][d] * s.shape[d];
        if (ok) {
            s.shape[m] *= s.shape[d];
            for (int k = 0; k < nops; k++) s.st[k][m] = s.st[k][d];
        } else {
            m++;
            s.shape[m] = s.shape[d];
            for (int k = 0; k < nops; k++) s.st[k][m] = s.st[k][d];
        }
    }
    s.ndim = nd = m + 1;
    int64_t inner = s.shape[nd - 1], rows = jn_shape_numel(nd - 1, s.shape);
    const int64_t big = 1 << 15;
    if (parallel && rows * inner >= big && jn_num_threads() > 1) {
        if (rows > 1) {
            int64_t grain = big / inner > 0 ? big / inner : 1;
            jn_parallel_for(rows, grain, iter_rows_task, &s);
        } else {
            jn_parallel_for(inner, big, iter_inner_task, &s);
        }
        return;
    }
    iter_rows(&s, 0, rows);
}

/* ------------------------------------------------------------------ copies */
/* One converting loop per (src, dst) dtype pair, generated below. */
#define LD_float(p) (*(const float *)(p))
#define LD_double(p) (*(const double *)(p))
#define LD_f16(p) jn_f16_to_f32(*(const uint16_t *)(p))
#define LD_bf16(p) jn_bf16_to_f32(*(const uint16_t *)(p))
#define LD_i64(p) (*(const int64_t *)(p))
#define LD_i32(p) (*(const int32_t *)(p))
#define LD_u8(p) (*(const uint8_t *)(p))
#define LD_b(p) (*(const uint8_t *)(p) != 0)

#define ST_float(p, v) (*(float *)(p) = (float)(v))
#define ST_double(p, v) (*(double *)(p) = (double)(v))
#define ST_f16(p, v) (*(uint16_t *)(p) = jn_f32_to_f16((float)(v)))
#define ST_bf16(p, v) (*(uint16_t *)(p) = jn_f32_to_bf16((float)(v)))
#define ST_i64(p, v) (*(int64_t *)(p) = sat_i64((double)(v)))
#define ST_i32(p, v) (*(int32_t *)(p) = (int32_t)sat_i64((double)(v)))
#define ST_u8(p, v) (*(uint8_t *)(p) = (uint8_t)sat_i64((double)(v)))
#define ST_b(p, v) (*(uint8_t *)(p) = (v) != 0)
/* integer -> integer stores wrap (like C / PyTorch), no double round trip */
#define STI_i64(p, v) (*(int64_t *)(p) = (int64_t)(v))
#define STI_i32(p, v) (*(int32_t *)(p) = (int32_t)(v))
#define STI_u8(p, v) (*(uint8_t *)(p) = (uint8_t)(v))

#define CVT(name, LD, ST)                                                              \
    static void name(char **p, const int64_t *s, int64_t n, void *ctx) {               \
        (void)ctx;                                                                     \
        char *d = p[0];                                                                \
        const char *x = p[1];                                                          \
        for (int64_t i = 0; i < n; i++, d += s[0], x += s[1]) ST(d, LD(x));            \
    }
#define DSTS(SRC, LDSRC, INTSRC)                                                        \
    CVT(cvt_##SRC##_float, LDSRC, ST_float) CVT(cvt_##SRC##_double, LDSRC, ST_double)   \
    CVT(cvt_##SRC##_f16, LDSRC, ST_f16) CVT(cvt_##SRC##_bf16, LDSRC, ST_bf16)           \
    CVT(cvt_##SRC##_i64, LDSRC, INTSRC##i64) CVT(cvt_##SRC##_i32, LDSRC, INTSRC##i32)   \
    CVT(cvt_##SRC##_u8, LDSRC, INTSRC##u8) CVT(cvt_##SRC##_b, LDSRC, ST_b)
DSTS(float, LD_float, ST_)
DSTS(double, LD_double, ST_)
DSTS(f16, LD_f16, ST_)
DSTS(bf16, LD_bf16, ST_)
DSTS(i64, LD_i64, STI_)
DSTS(i32, LD_i32, STI_)
DSTS(u8, LD_u8, STI_)
DSTS(b, LD_b, STI_)

#define ROW(SRC) {cvt_##SRC##_float, cvt_##SRC##_double, cvt_##SRC##_f16, cvt_##SRC##_bf16, \
                  cvt_##SRC##_i64, cvt_##SRC##_i32, cvt_##SRC##_u8, cvt_##SRC##_b}
/* indexed [src][dst] in jn_dtype order */
static const jn_loop_fn cvt_tab[JN_NDTYPES][JN_NDTYPES] = {
    ROW(float), ROW(double), ROW(f16), ROW(bf16), ROW(i64), ROW(i32), ROW(u8), ROW(b)};

static void copy_same(char **p, const int64_t *s, int64_t n, void *ctx) {
    size_t es = *(const size_t *)ctx;
    if ((size_t)s[0] == es && (size_t)s[1] == es) {
        memcpy(p[0], p[1], (size_t)n * es);
        return;
    }
    char *d = p[0];
    const char *x = p[1];
    switch (es) {
    case 1: for (int64_t i = 0; i < n; i++, d += s[0], x += s[1]) *d = *x; break;
    case 2: for (int64_t i = 0; i < n; i++, d += s[0], x += s[1]) memcpy(d, x, 2); break;
    case 4: for (int64_t i = 0; i < n; i++, d += s[0], x += s[1]) memcpy(d, x, 4); break;
    default: for (int64_t i = 0; i < n; i++, d += s[0], x += s[1]) memcpy(d, x, 8); break;
    }
}

jn_loop_fn jn_rt_cast_loop(jn_dtype src, jn_dtype dst) { return cvt_tab[src][dst]; }

jn_status jn_copy_into(jn_tensor *dst, const jn_tensor *src) {
    int nd;
    int64_t shape[JN_MAX_DIMS];
    jn_status s;
    /* pending device tensors too (a CUDA replay captures device ops) */
    if ((s = jn_rt_materialize((jn_tensor *)src)) || (s = jn_rt_materialize(dst))) return s;
    /* onto itself: nothing to move (a kernel whose output the graph planned
     * over its input, such as a scatter writing its base's window) */
    if (dst->storage->device == src->storage->device && jn_rt_same_view(dst, src)) return JN_OK;
    /* a device on either side: that backend copies (and transfers) */
    if (__builtin_expect(dst->storage->device | src->storage->device, 0)) {
        int dev = dst->storage->device ? dst->storage->device : src->storage->device;
        if (!jn_rt_backends[dev])
            return jn_error(JN_ERR_UNSUPPORTED, "copy: the %s backend is not available", jn_device_name(dev));
        return jn_rt_backends[dev]->copy_into(dst, src);
    }
    if ((s = jn_rt_copy_shape_check(dst, src))) return s;
    nd = dst->ndim;
    memcpy(shape, dst->shape, sizeof(int64_t) * (size_t)nd);
    int64_t st[2][JN_MAX_DIMS];
    for (int i = 0; i < nd; i++) st[0][i] = dst->strides[i] * (int64_t)jn_elsize(dst);
    jn_broadcast_byte_strides(src, nd, shape, st[1]);
    char *base[2] = {jn_data(dst), jn_data(src)};
    size_t es = jn_elsize(dst);
    /* a transposed matrix of 32-bit elements into a row-major one (a weight
     * transposed once per graph run, codegen's wt pass): blocks of 16 x 16 */
    if (dst->dtype == src->dtype && es == 4 && nd == 2 && src->ndim == 2 && src->shape[0] == shape[0] &&
        src->shape[1] == shape[1] && dst->strides[1] == 1 && dst->strides[0] == shape[1] && src->strides[0] == 1 &&
        src->strides[1] >= shape[0] && shape[0] > 1 && shape[1] > 1 &&
        jn_rt_stranspose((const float *)base[1], src->strides[1], shape[1], shape[0], (float *)base[0], shape[1]))
        return JN_OK;
    if (dst->dtype == src->dtype) jn_nditer(2, base, nd, shape, st, copy_same, &es, 1);
    else jn_nditer(2, base, nd, shape, st, cvt_tab[src->dtype][dst->dtype], NULL, 1);
    return JN_OK;
}

/* A new contiguous tensor like t (dtype d) on t's device. */
static jn_tensor *new_like(const jn_tensor *t, jn_dtype d) {
    if (__builtin_expect(t->storage->device != JN_CPU, 0)) {
        const jn_rt_backend *be = jn_rt_backends[t->storage->device];
        jn_meta m = {d, t->ndim, {0}};
        memcpy(m.shape, t->shape, sizeof m.shape);
        if (!be) {
            jn_error(JN_ERR_UNSUPPORTED, "the %s backend is not available", jn_device_name(t->storage->device));
            return NULL;
        }
        return be->tensor_new(&m);
    }
    return jn_tensor_new(d, t->ndim, t->shape);
}

jn_tensor *jn_contiguous(jn_tensor *t) {
    jn_tensor *r = new_like(t, t->dtype);
    if (!r) return NULL;
    if (jn_copy_into(r, t)) {
        jn_tensor_decref(r);
        return NULL;
    }
    return r;
}

jn_tensor *jn_to_dtype(jn_tensor *t, jn_dtype dtype) {
    if (t->dtype == dtype && jn_is_contiguous(t)) {
        jn_tensor_incref(t);
        return t;
    }
    jn_tensor *r = new_like(t, dtype);
    if (!r) return NULL;
    if (jn_copy_into(r, t)) {
        jn_tensor_decref(r);
        return NULL;
    }
    return r;
}
