/* cuda_backend.c -- the CUDA backend's host side: lazy initialization, the
 * caching device allocator, the compute stream, host/device transfers,
 * cuBLAS GEMMs and the per-op wrappers that fill jn_rt_backends[JN_CUDA].
 *
 * Nothing here runs at import or load time: the first jn_cuda_device_count()
 * or CUDA tensor calls cudaGetDeviceCount, so a machine with the toolkit and
 * no GPU (or no driver) only ever sees that call fail, and answers "no CUDA
 * device" with the driver's reason.  Every CUDA and cuBLAS status is checked
 * and becomes a jn_error naming the call and what it was doing (the op, the
 * kernel, the transfer).
 *
 * Allocator: blocks are rounded to quarter powers of two (>= 512 bytes) and
 * kept on per-class free lists when freed; a freed block is reused by later
 * work on the same (single) stream, so stream order makes reuse safe without
 * events.  A failed cudaMalloc frees the cache and retries once.
 * memory_allocated counts the rounded sizes of live blocks.
 *
 * cuBLAS is dlopen'ed at initialization, never linked: a CPU-only process
 * does not map its hundreds of megabytes (JANUS_CUBLAS_PATH, found by
 * CMake, is tried before the soname).
 *
 * Math: cuBLAS with CUBLAS_DEFAULT_MATH (no TF32) and CUBLAS_COMPUTE_32F /
 * 64F, so float32 GEMMs are IEEE float32 like the CPU's OpenBLAS.
 */
#include "jn_backend.h"
#include "jn_cuda.h"
#include "jn_cuda_host.h"
#include "jn_cudnn.h"
#include "k_conv.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ status */
static jn_status cu_fail(cudaError_t e, const char *call, const char *what) {
    /* a failed call is also the runtime's "last error": cleared, or the next
     * kernel launcher's cudaGetLastError would report it again, as its own */
    (void)cudaGetLastError();
    return jn_error(e == cudaErrorMemoryAllocation ? JN_ERR_NOMEM : JN_ERR_RUNTIME, "CUDA error in %s (%s): %s (%s)",
                    call, what, cudaGetErrorString(e), cudaGetErrorName(e));
}
#define CU(call, what)                                            \
    do {                                                          \
        cudaError_t e_ = (call);                                  \
        if (e_ != cudaSuccess) return cu_fail(e_, #call, (what)); \
    } while (0)
#define BLAS(call, what)                                                                                         \
    do {                                                                                                         \
        cublasStatus_t b_ = (call);                                                                              \
        if (b_ != CUBLAS_STATUS_SUCCESS)                                                                         \
            return jn_error(JN_ERR_RUNTIME, "cuBLAS error in %s (%s): %s", #call, (what), blas.status_string(b_)); \
    } while (0)

/* ------------------------------------------------------------ cuBLAS */
static struct {
    __typeof__(&cublasCreate_v2) create;
    __typeof__(&cublasSetStream_v2) set_stream;
    __typeof__(&cublasSetMathMode) set_math_mode;
    __typeof__(&cublasGemmStridedBatchedEx) gemm;
    __typeof__(&cublasGetStatusString) status_string;
} blas;

#ifndef JANUS_CUBLAS_PATH
#define JANUS_CUBLAS_PATH "libcublas.so"
#endif

static jn_status load_cublas(void) {
    if (blas.gemm) return JN_OK;
    const char *tried[] = {JANUS_CUBLAS_PATH, "libcublas.so.13", "libcublas.so.12", "libcublas.so"};
    void *h = NULL;
    for (size_t i = 0; i < sizeof tried / sizeof tried[0] && !h; i++) h = dlopen(tried[i], RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return jn_error(JN_ERR_UNSUPPORTED, "CUDA is not available: cuBLAS could not be loaded (%s; tried %s and "
                        "libcublas.so.13/.12): install the CUDA toolkit's cuBLAS or set LD_LIBRARY_PATH",
                        dlerror(), JANUS_CUBLAS_PATH);
    *(void **)&blas.create = dlsym(h, "cublasCreate_v2");
    *(void **)&blas.set_stream = dlsym(h, "cublasSetStream_v2");
    *(void **)&blas.set_math_mode = dlsym(h, "cublasSetMathMode");
    *(void **)&blas.status_string = dlsym(h, "cublasGetStatusString");
    *(void **)&blas.gemm = dlsym(h, "cublasGemmStridedBatchedEx");
    if (!blas.create || !blas.set_stream || !blas.set_math_mode || !blas.status_string || !blas.gemm) {
        blas.gemm = NULL;
        return jn_error(JN_ERR_UNSUPPORTED, "CUDA is not available: the loaded cuBLAS lacks cublasGemmStridedBatchedEx "
                        "or its helpers (cuBLAS 11.4 or newer is needed)");
    }
    return JN_OK;
}

/* ------------------------------------------------------------ state */
static struct {
    pthread_mutex_t mu;
    int counted, count; /* cudaGetDeviceCount asked / its answer */
    int ready;          /* init done (stream, cuBLAS, table installed) */
    char why[512];
    cudaStream_t stream;
    cublasHandle_t blas;
    int *flag; /* a device int kernels set on a bad index */
    int ordinal; /* the one device this process uses (jn_cuda_set_device; 0 by default) */
} cu = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, {0}, 0, 0, 0, 0};

static const jn_rt_backend cuda_backend;

int jn_cuda_built(void) { return 1; }

static int count_locked(void) {
    if (!cu.counted) {
        cu.counted = 1;
        int n = 0;
        cudaError_t e = cudaGetDeviceCount(&n);
        if (e != cudaSuccess) {
            snprintf(cu.why, sizeof cu.why, "no CUDA device: cudaGetDeviceCount failed: %s (%s)",
                     cudaGetErrorString(e), cudaGetErrorName(e));
            (void)cudaGetLastError(); /* clear the sticky-free error */
            n = 0;
        } else if (n == 0) {
            snprintf(cu.why, sizeof cu.why, "no CUDA device: cudaGetDeviceCount found 0 GPUs");
        }
        cu.count = n;
    }
    return cu.count;
}

int jn_cuda_device_count(const char **why) {
    pthread_mutex_lock(&cu.mu);
    int n = count_locked();
    pthread_mutex_unlock(&cu.mu);
    if (why) *why = n ? "" : cu.why;
    return n;
}

static jn_status init_locked(void) {
    if (cu.ready) return JN_OK;
    if (!count_locked()) return jn_error(JN_ERR_UNSUPPORTED, "CUDA is not available: %s", cu.why);
    CU(cudaSetDevice(cu.ordinal), "initializing the CUDA backend");
    CU(cudaStreamCreateWithFlags(&cu.stream, cudaStreamNonBlocking), "creating the compute stream");
    CU(cudaMalloc((void **)&cu.flag, sizeof(int)), "allocating the index-check flag");
    jn_status s = load_cublas();
    if (s) return s;
    BLAS(blas.create(&cu.blas), "creating the cuBLAS handle");
    BLAS(blas.set_stream(cu.blas, cu.stream), "binding cuBLAS to the compute stream");
    /* TF32 off: float32 GEMMs round like float32 on the CPU */
    BLAS(blas.set_math_mode(cu.blas, CUBLAS_DEFAULT_MATH), "setting cuBLAS math mode");
    jn_rt_backends[JN_CUDA] = &cuda_backend;
    cu.ready = 1;
    return JN_OK;
}

jn_status jn_cuda_set_device(int ordinal) {
    pthread_mutex_lock(&cu.mu);
    jn_status s = JN_OK;
    int n = ordinal >= 0 && !cu.ready ? count_locked() : 0;
    if (ordinal < 0)
        s = jn_error(JN_ERR_VALUE, "CUDA device %d: a device number is 0 or more", ordinal);
    else if (cu.ready && ordinal != cu.ordinal)
        s = jn_error(JN_ERR_RUNTIME, "CUDA device %d: janus uses one device per process and this one already runs "
                     "on device %d: choose the device (LOCAL_RANK, janus.cuda.set_device) before the first CUDA "
                     "tensor", ordinal, cu.ordinal);
    else if (!cu.ready && !n)
        s = jn_error(JN_ERR_UNSUPPORTED, "CUDA device %d: CUDA is not available: %s", ordinal, cu.why);
    else if (!cu.ready && ordinal >= n)
        s = jn_error(JN_ERR_VALUE, "CUDA device %d does not exist: %d device%s visible (a rank's LOCAL_RANK must "
                     "be below its host's GPUs; CUDA_VISIBLE_DEVICES narrows them)", ordinal, n, n == 1 ? " is" : "s are");
    else
        cu.ordinal = ordinal;
    pthread_mutex_unlock(&cu.mu);
    return s;
}

int jn_cuda_current_device(void) { return cu.ordinal; }

jn_status jn_cuda_init(void) {
    if (cu.ready) return JN_OK;
    pthread_mutex_lock(&cu.mu);
    jn_status s = init_locked();
    pthread_mutex_unlock(&cu.mu);
    return s;
}

/* the compute stream (a cudaStream_t is a CUstream): the graph executor
 * launches its generated kernels on it and captures CUDA Graphs from it */
void *jn_cuda_stream(void) { return cu.ready ? (void *)cu.stream : NULL; }

jn_status jn_cuda_synchronize(void) {
    if (!cu.ready) return JN_OK; /* nothing was ever queued */
    CU(cudaStreamSynchronize(cu.stream), "synchronize");
    return JN_OK;
}

static jn_status cuda_sync(void) { return jn_cuda_synchronize(); }

/* Is the compute stream being captured into a CUDA Graph (the graph
 * executor's jn_ex_cuda_graphs)?  Then nothing may wait for it. */
static int is_capturing(void) {
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    if (!cu.ready || cudaStreamIsCapturing(cu.stream, &st) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return st == cudaStreamCaptureStatusActive;
}

/* ------------------------------------------------------------ allocator */
#define NCLASS 256
#define MIN_BLOCK 512

typedef struct cu_block {
    void *ptr;
    size_t size;
    int cls;
    struct cu_block *next;
} cu_block;

static struct {
    pthread_mutex_t mu;
    cu_block *free_list[NCLASS];
    size_t allocated, peak, reserved;
} pool = {PTHREAD_MUTEX_INITIALIZER, {0}, 0, 0, 0};

/* Quarter powers of two, as the CPU block cache (tensor.c): <= 25% slack. */
static int size_class(size_t sz, size_t *rounded) {
    if (sz < MIN_BLOCK) sz = MIN_BLOCK;
    int e = 63 - __builtin_clzll((unsigned long long)sz);
    size_t base = (size_t)1 << e, step = base >> 2;
    size_t k = (sz - base + step - 1) / step;
    *rounded = base + k * step;
    return e * 4 + (int)k;
}

static void empty_locked(void) {
    for (int c = 0; c < NCLASS; c++) {
        cu_block *b = pool.free_list[c];
        while (b) {
            cu_block *n = b->next;
            cudaFree(b->ptr); /* waits for queued work using it */
            pool.reserved -= b->size;
            free(b);
            b = n;
        }
        pool.free_list[c] = NULL;
    }
}

void jn_cuda_empty_cache(void) {
    pthread_mutex_lock(&pool.mu);
    if (cu.ready) empty_locked();
    pthread_mutex_unlock(&pool.mu);
}

static cu_block *block_alloc(size_t nbytes) {
    size_t r;
    int c = size_class(nbytes, &r);
    pthread_mutex_lock(&pool.mu);
    cu_block *b = c < NCLASS ? pool.free_list[c] : NULL;
    if (b) {
        pool.free_list[c] = b->next;
    } else {
        b = calloc(1, sizeof *b);
        if (!b) {
            pthread_mutex_unlock(&pool.mu);
            jn_error(JN_ERR_NOMEM, "out of host memory for a CUDA block record");
            return NULL;
        }
        /* During a CUDA Graph capture cudaMalloc is a "potentially unsafe"
         * call, refused unless this thread's capture mode is relaxed; it is
         * safe here (the graph keeps the block: jn_cuda_hold_begin), so the
         * mode is relaxed around it.  cudaFree is never safe in a capture:
         * the cache is not emptied then. */
        int capturing = is_capturing();
        enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
        if (capturing) (void)cudaThreadExchangeStreamCaptureMode(&mode);
        cudaError_t e = cudaMalloc(&b->ptr, r);
        if (e == cudaErrorMemoryAllocation && !capturing) { /* give the cache back and try once more */
            (void)cudaGetLastError();
            empty_locked();
            e = cudaMalloc(&b->ptr, r);
        }
        if (capturing) (void)cudaThreadExchangeStreamCaptureMode(&mode);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            size_t al = pool.allocated, rs = pool.reserved;
            pthread_mutex_unlock(&pool.mu);
            free(b);
            if (e == cudaErrorMemoryAllocation)
                jn_error(JN_ERR_NOMEM, "CUDA out of memory: cudaMalloc of %zu bytes failed: %s (%zu bytes allocated "
                         "by tensors, %zu reserved); free tensors or use smaller batches", r, cudaGetErrorString(e), al, rs);
            else
                jn_error(JN_ERR_RUNTIME, "cudaMalloc of %zu bytes failed%s: %s (%s)", r,
                         capturing ? " during a CUDA Graph capture" : "", cudaGetErrorString(e), cudaGetErrorName(e));
            return NULL;
        }
        b->size = r;
        b->cls = c;
        pool.reserved += r;
    }
    pool.allocated += b->size;
    if (pool.allocated > pool.peak) pool.peak = pool.allocated;
    pthread_mutex_unlock(&pool.mu);
    return b;
}

/* jn_storage.release: back on the free list (no CUDA call, so a tensor
 * dying after the context is gone at exit is harmless). */
static cu_block *held;  /* blocks freed while a CUDA Graph is captured */
static int holding;

static void block_release(void *ctx) {
    cu_block *b = ctx;
    pthread_mutex_lock(&pool.mu);
    pool.allocated -= b->size;
    if (holding) { /* a captured graph may write it again on replay: not reusable yet */
        b->next = held;
        held = b;
        b = NULL;
    } else if (b->cls < NCLASS) {
        b->next = pool.free_list[b->cls];
        pool.free_list[b->cls] = b;
        b = NULL;
    } else {
        pool.reserved -= b->size;
    }
    pthread_mutex_unlock(&pool.mu);
    if (b) {
        cudaFree(b->ptr);
        free(b);
    }
}

/* A CUDA Graph writes the addresses it was captured with on every replay,
 * temporaries a kernel freed during the capture included: those blocks
 * are held (jn_cuda_hold_end) until the graph is gone (jn_cuda_hold_release). */
void jn_cuda_hold_begin(void) {
    pthread_mutex_lock(&pool.mu);
    holding = 1;
    pthread_mutex_unlock(&pool.mu);
}
void *jn_cuda_hold_end(void) {
    pthread_mutex_lock(&pool.mu);
    cu_block *h = held;
    held = NULL;
    holding = 0;
    pthread_mutex_unlock(&pool.mu);
    return h;
}
void jn_cuda_hold_release(void *h) {
    cu_block *big = NULL;
    pthread_mutex_lock(&pool.mu);
    for (cu_block *b = h, *n; b; b = n) {
        n = b->next;
        if (b->cls < NCLASS) {
            b->next = pool.free_list[b->cls];
            pool.free_list[b->cls] = b;
        } else { /* oversized: freed as block_release frees it, outside the lock */
            pool.reserved -= b->size;
            b->next = big;
            big = b;
        }
    }
    pthread_mutex_unlock(&pool.mu);
    for (cu_block *b = big, *n; b; b = n) {
        n = b->next;
        cudaFree(b->ptr);
        free(b);
    }
}

size_t jn_cuda_memory_allocated(void) { return pool.allocated; }
size_t jn_cuda_max_memory_allocated(void) { return pool.peak; }
size_t jn_cuda_memory_reserved(void) { return pool.reserved; }
void jn_cuda_reset_peak_memory_stats(void) {
    pthread_mutex_lock(&pool.mu);
    pool.peak = pool.allocated;
    pthread_mutex_unlock(&pool.mu);
}

static jn_tensor *cuda_tensor_new(const jn_meta *m) {
    if (jn_cuda_init()) return NULL;
    int64_t n = jn_shape_numel(m->ndim, m->shape);
    for (int i = 0; i < m->ndim; i++)
        if (m->shape[i] < 0) {
            jn_error(JN_ERR_VALUE, "negative dimension %lld in a tensor shape", (long long)m->shape[i]);
            return NULL;
        }
    size_t nbytes = (size_t)n * jn_dtype_size[m->dtype];
    cu_block *b = block_alloc(nbytes);
    if (!b) return NULL;
    jn_tensor *t = jn_tensor_from_memory(b->ptr, nbytes, m->dtype, m->ndim, m->shape, NULL, 0, block_release, b);
    if (!t) {
        block_release(b);
        return NULL;
    }
    t->storage->device = JN_CUDA;
    return t;
}

/* ------------------------------------------------------------ iterators */
static int is_cuda(const jn_tensor *t) { return t->storage && t->storage->device == JN_CUDA; }

static void iter_init(jn_cu_iter *it, const jn_tensor *out) {
    memset(it, 0, sizeof *it);
    it->ndim = out->ndim;
    it->n = jn_numel(out);
    memcpy(it->shape, out->shape, sizeof(int64_t) * (size_t)out->ndim);
    memcpy(it->stride[0], out->strides, sizeof(int64_t) * (size_t)out->ndim);
    it->ptr[0] = jn_data(out);
    it->dtype[0] = out->dtype;
    it->nops = 1;
}

/* Add t broadcast to the iterator's shape; a CPU 0-d t (only the
 * elementwise ops, flagged host_scalars, receive one) goes by value. */
static void iter_add(jn_cu_iter *it, const jn_tensor *t) {
    int k = it->nops++;
    if (!is_cuda(t)) {
        it->imm |= 1u << k;
        it->imm_f[k] = jn_load_f64(jn_data(t), t->dtype);
        it->imm_i[k] = jn_load_i64(jn_data(t), t->dtype);
        it->dtype[k] = t->dtype;
        return;
    }
    int64_t bs[JN_MAX_DIMS];
    jn_broadcast_byte_strides(t, it->ndim, it->shape, bs);
    for (int d = 0; d < it->ndim; d++) it->stride[k][d] = bs[d] / (int64_t)jn_elsize(t);
    it->ptr[k] = jn_data(t);
    it->dtype[k] = t->dtype;
}

static jn_status launched(cudaError_t e, const char *kernel, const char *op) {
    if (e == cudaSuccess) return JN_OK;
    (void)cudaGetLastError();
    char what[192];
    snprintf(what, sizeof what, "kernel %s for op %.64s", kernel, op);
    return cu_fail(e, "launch", what);
}

/* dst (device) <- src (device), converting, src broadcast to dst's shape. */
static jn_status dev_copy(jn_tensor *dst, const jn_tensor *src, const char *op) {
    if (jn_rt_same_view(dst, src)) return JN_OK; /* planned in place (a scatter over its base) */
    jn_cu_iter it;
    iter_init(&it, dst);
    iter_add(&it, src);
    return launched(jn_cu_copy(&it, cu.stream), "copy", op);
}

/* A contiguous device copy of t with dims in order perm (NULL = as is). */
static jn_tensor *dev_contiguous_perm(const jn_tensor *t, const int *perm, const char *op) {
    jn_meta m = {t->dtype, t->ndim, {0}};
    jn_tensor view = *t;
    for (int d = 0; d < t->ndim; d++) {
        int s = perm ? perm[d] : d;
        m.shape[d] = view.shape[d] = t->shape[s];
        view.strides[d] = t->strides[s];
    }
    jn_tensor *r = cuda_tensor_new(&m);
    if (!r) return NULL;
    if (dev_copy(r, &view, op)) {
        jn_tensor_decref(r);
        return NULL;
    }
    return r;
}

/* ------------------------------------------------------------ transfers */
static jn_status cuda_copy_into(jn_tensor *dst, const jn_tensor *src) {
    jn_status s;
    if ((s = jn_cuda_init()) || (s = jn_rt_copy_shape_check(dst, src))) return s;
    if (is_cuda(dst) && is_cuda(src)) return dev_copy(dst, src, "copy");
    int64_t n = jn_numel(dst);
    size_t nbytes = (size_t)n * jn_elsize(dst);
    if (is_cuda(dst)) { /* host -> device: the host side made dense in dst's dtype first */
        jn_tensor *h = jn_tensor_new(dst->dtype, dst->ndim, dst->shape);
        if (!h) return JN_ERR_NOMEM;
        if ((s = jn_copy_into(h, src))) goto h2d_done;
        jn_tensor *d = dst;
        if (!jn_is_contiguous(dst) && !(d = jn_contiguous(dst))) {
            s = JN_ERR_NOMEM;
            goto h2d_done;
        }
        /* from pageable memory the call returns once the bytes are staged
         * (CUDA's documented "API synchronization behavior"), so h may be
         * freed right after without a stream sync */
        cudaError_t e = cudaMemcpyAsync(jn_data(d), jn_data(h), nbytes, cudaMemcpyHostToDevice, cu.stream);
        if (e != cudaSuccess) s = cu_fail(e, "cudaMemcpyAsync", "copying a tensor from the cpu to cuda:0");
        if (!s && d != dst) s = dev_copy(dst, d, "copy");
        if (d != dst) jn_tensor_decref(d);
    h2d_done:
        jn_tensor_decref(h);
        return s;
    }
    /* device -> host: contiguous on the device, one transfer, then the CPU
     * copy does broadcasting and dtype conversion */
    jn_tensor *d = (jn_tensor *)src;
    if (!jn_is_contiguous(src) && !(d = dev_contiguous_perm(src, NULL, "copy"))) return JN_ERR_NOMEM;
    jn_tensor *h = jn_tensor_new(src->dtype, src->ndim, src->shape);
    if (!h) {
        s = JN_ERR_NOMEM;
    } else {
        size_t sb = (size_t)jn_numel(src) * jn_elsize(src);
        cudaError_t e = cudaMemcpyAsync(jn_data(h), jn_data(d), sb, cudaMemcpyDeviceToHost, cu.stream);
        if (e == cudaSuccess) e = cudaStreamSynchronize(cu.stream);
        s = e != cudaSuccess ? cu_fail(e, "cudaMemcpyAsync", "copying a tensor from cuda:0 to the cpu")
                             : jn_copy_into(dst, h);
        jn_tensor_decref(h);
    }
    if (d != src) jn_tensor_decref(d);
    return s;
}

/* ------------------------------------------------------------ elementwise */
static int math_type(jn_dtype d) { return d == JN_F64 ? JN_CU_F64 : jn_dtype_is_float(d) ? JN_CU_F32 : JN_CU_I64; }

static jn_status ew(jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_cu_iter it;
    iter_init(&it, out[0]);
    for (int i = 0; i < nin; i++) iter_add(&it, in[i]);
    jn_dtype mt = out[0]->dtype;
    /* comparisons, logical ops and isnan compare in the inputs' type */
    if (out[0]->dtype == JN_BOOL && op != JN_OP_where && op != JN_OP_masked_fill) mt = jn_result_type(nin, in);
    jn_cu_params p;
    memset(&p, 0, sizeof p);
    switch (op) {
    case JN_OP_add:
    case JN_OP_sub: p.f0 = a->a[0].f; break;
    case JN_OP_div:
    case JN_OP_gelu: p.i0 = a->a[0].i; break;
    case JN_OP_clamp:
        p.f0 = a->a[0].f;
        p.f1 = a->a[1].f;
        p.b0 = (int)a->a[2].i;
        p.b1 = (int)a->a[3].i;
        break;
    case JN_OP_masked_fill: p.f1 = a->a[0].f; break;
    default: break;
    }
    return launched(jn_cu_ew(op, math_type(mt), &it, &p, cu.stream), "elementwise", jn_op_info(op)->name);
}

#define EW_OPS(X)                                                                                                 \
    X(add) X(sub) X(mul) X(div) X(pow) X(remainder) X(maximum) X(minimum) X(atan2) X(eq) X(ne) X(lt) X(le) X(gt)  \
    X(ge) X(logical_and) X(logical_or) X(logical_xor) X(logical_not) X(neg) X(exp) X(log) X(log1p) X(expm1)      \
    X(sqrt) X(rsqrt) X(abs) X(sign) X(reciprocal) X(tanh) X(sigmoid) X(relu) X(gelu) X(silu) X(sin) X(cos) X(erf) \
    X(floor) X(ceil) X(round) X(isnan) X(clamp) X(where) X(masked_fill)

#define X(name)                                                                                   \
    static jn_status cu_##name(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) { \
        return ew(JN_OP_##name, nin, in, a, out);                                                 \
    }
EW_OPS(X)
#undef X

static jn_status cu_cast(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return dev_copy(out[0], in[0], "cast");
}
static jn_status cu_clone(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return dev_copy(out[0], in[0], "clone");
}

static jn_status fill(jn_tensor *t, double v, const char *op) {
    jn_cu_iter it;
    iter_init(&it, t);
    int64_t iv = v >= -9.2e18 && v <= 9.2e18 ? (int64_t)v : 0; /* the infer checked the value fits */
    return launched(jn_cu_fill(&it, v, iv, cu.stream), "fill", op);
}
static jn_status cu_fill_(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return fill(in[0], a->a[0].f, "fill_");
}
static jn_status cu_full(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return fill(out[0], a->a[1].f, "full");
}
static jn_status cu_empty(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) { return JN_OK; }
static jn_status cu_arange(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    int is_int = !jn_dtype_is_float(out[0]->dtype);
    return launched(jn_cu_arange(jn_data(out[0]), out[0]->dtype, jn_numel(out[0]), a->a[0].f, a->a[2].f, is_int,
                                 cu.stream), "arange", "arange");
}
static jn_status cu_eye(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return launched(jn_cu_eye(jn_data(out[0]), out[0]->dtype, out[0]->shape[0], out[0]->shape[1], cu.stream), "eye",
                    "eye");
}

/* ------------------------------------------------------------ reductions */
/* x as rows: the dims marked in red moved last and made contiguous (x
 * itself when already so), *outer rows of *inner elements; the kept dims
 * stay in order, so row r is element r of a contiguous result. */
static jn_status as_rows(const char *name, jn_tensor *x, const int *red, jn_tensor **c, int64_t *outer,
                         int64_t *inner) {
    int perm[JN_MAX_DIMS], np = 0, ident = 1;
    *outer = *inner = 1;
    for (int d = 0; d < x->ndim; d++)
        if (!red[d]) perm[np++] = d, *outer *= x->shape[d];
    for (int d = 0; d < x->ndim; d++)
        if (red[d]) perm[np++] = d, *inner *= x->shape[d];
    for (int d = 0; d < x->ndim; d++) ident &= perm[d] == d;
    *c = x;
    if (!(ident && jn_is_contiguous(x)) && !(*c = dev_contiguous_perm(x, perm, name))) return JN_ERR_NOMEM;
    return JN_OK;
}

/* red[] from a dims list (empty = all); a 0-d tensor reduces to itself. */
static jn_status dims_mask(const char *name, const jn_tensor *x, const jn_ints *dims, int *red) {
    memset(red, 0, sizeof(int) * JN_MAX_DIMS);
    for (int i = 0; i < dims->n && x->ndim; i++) {
        int64_t d = dims->v[i];
        jn_status s = jn_wrap_dim(&d, x->ndim, name);
        if (s) return s;
        red[d] = 1;
    }
    if (!dims->n)
        for (int d = 0; d < x->ndim; d++) red[d] = 1;
    return JN_OK;
}

/* Reduce in[0] over attribute dims into out (kept dims in order). */
static jn_status reduce(jn_op op, jn_tensor *x, const jn_ints *dims, jn_tensor *out, int ct) {
    const char *name = jn_op_info(op)->name;
    int red[JN_MAX_DIMS];
    int64_t outer, inner;
    jn_tensor *c;
    jn_status s = dims_mask(name, x, dims, red);
    if (s || (s = as_rows(name, x, red, &c, &outer, &inner))) return s;
    double scale = op == JN_OP_mean ? (inner ? 1.0 / (double)inner : NAN) : 1.0;
    jn_op rop = op == JN_OP_mean ? JN_OP_sum : op;
    s = launched(jn_cu_reduce(rop, ct, jn_data(c), c->dtype, jn_data(out), out->dtype, outer, inner, scale,
                              cu.stream), "reduce", name);
    if (c != x) jn_tensor_decref(c);
    return s;
}

/* max_dim/min_dim (values, indices) and argmax/argmin (indices; over
 * everything when has_dim is 0) */
static jn_status argreduce(jn_op op, jn_tensor *x, const jn_attrs *a, jn_tensor *vals, jn_tensor *idx, int is_max) {
    const char *name = jn_op_info(op)->name;
    int red[JN_MAX_DIMS] = {0};
    int has_dim = (op == JN_OP_argmax || op == JN_OP_argmin) ? a->a[2].i != 0 : 1;
    if (has_dim && x->ndim) {
        int64_t d = a->a[0].i;
        jn_status s = jn_wrap_dim(&d, x->ndim, name);
        if (s) return s;
        red[d] = 1;
    } else {
        for (int d = 0; d < x->ndim; d++) red[d] = 1;
    }
    int64_t outer, inner;
    jn_tensor *c;
    jn_status s = as_rows(name, x, red, &c, &outer, &inner);
    if (s) return s;
    s = launched(jn_cu_argreduce(is_max, math_type(x->dtype), jn_data(c), c->dtype, vals ? jn_data(vals) : NULL,
                                 (int64_t *)jn_data(idx), outer, inner, cu.stream), "argreduce", name);
    if (c != x) jn_tensor_decref(c);
    return s;
}

static jn_status cu_max_dim(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return argreduce(JN_OP_max_dim, in[0], a, out[0], out[1], 1);
}
static jn_status cu_min_dim(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return argreduce(JN_OP_min_dim, in[0], a, out[0], out[1], 0);
}
static jn_status cu_argmax(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return argreduce(JN_OP_argmax, in[0], a, NULL, out[0], 1);
}
static jn_status cu_argmin(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return argreduce(JN_OP_argmin, in[0], a, NULL, out[0], 0);
}

/* A [rows, cols] header over t's data with the given element strides. */
static jn_tensor grid(const jn_tensor *t, int64_t rows, int64_t cols, int64_t srow, int64_t scol) {
    jn_tensor v = *t;
    v.ndim = 2;
    v.shape[0] = rows;
    v.shape[1] = cols;
    v.strides[0] = srow;
    v.strides[1] = scol;
    return v;
}

/* var/std: two passes over rows -- the mean, then the sum of squared
 * deviations over (n - correction) (<= 0 gives inf/nan, as torch). */
static jn_status var_std(jn_op op, jn_tensor *x, const jn_attrs *a, jn_tensor *out) {
    const char *name = jn_op_info(op)->name;
    int red[JN_MAX_DIMS];
    int64_t outer, inner;
    jn_tensor *c, *m = NULL, *d = NULL;
    jn_status s = dims_mask(name, x, &a->a[0].l, red);
    if (s || (s = as_rows(name, x, red, &c, &outer, &inner))) return s;
    int ct = math_type(x->dtype);
    jn_meta mm = {x->dtype, 1, {outer}}, dm = {x->dtype, 2, {outer, inner}};
    if (!(m = cuda_tensor_new(&mm)) || !(d = cuda_tensor_new(&dm))) {
        s = JN_ERR_NOMEM;
        goto done;
    }
    if ((s = launched(jn_cu_reduce(JN_OP_sum, ct, jn_data(c), c->dtype, jn_data(m), m->dtype, outer, inner,
                                   inner ? 1.0 / (double)inner : NAN, cu.stream), "reduce", name)))
        goto done;
    jn_tensor cv = grid(c, outer, inner, inner, 1), mv = grid(m, outer, 1, 1, 0);
    jn_cu_iter it;
    jn_cu_params p = {1, 0, 0, 0, 0};
    iter_init(&it, d);
    iter_add(&it, &cv);
    iter_add(&it, &mv);
    if ((s = launched(jn_cu_ew(JN_OP_sub, ct, &it, &p, cu.stream), "elementwise", name))) goto done;
    iter_init(&it, d);
    iter_add(&it, d);
    iter_add(&it, d);
    if ((s = launched(jn_cu_ew(JN_OP_mul, ct, &it, &p, cu.stream), "elementwise", name))) goto done;
    double dof = (double)inner - a->a[1].f;
    if ((s = launched(jn_cu_reduce(JN_OP_sum, ct, jn_data(d), d->dtype, jn_data(out), out->dtype, outer, inner,
                                   dof > 0 ? 1.0 / dof : INFINITY, cu.stream), "reduce", name)))
        goto done;
    if (op == JN_OP_std) {
        iter_init(&it, out);
        iter_add(&it, out);
        s = launched(jn_cu_ew(JN_OP_sqrt, ct, &it, &p, cu.stream), "elementwise", name);
    }
done:
    jn_tensor_decref(m);
    jn_tensor_decref(d);
    if (c != x) jn_tensor_decref(c);
    return s;
}
static jn_status cu_var(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return var_std(JN_OP_var, in[0], a, out[0]);
}
static jn_status cu_std(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return var_std(JN_OP_std, in[0], a, out[0]);
}

static jn_status cu_sum(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return reduce(JN_OP_sum, in[0], &a->a[0].l, out[0], math_type(out[0]->dtype));
}
static jn_status cu_mean(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return reduce(JN_OP_mean, in[0], &a->a[0].l, out[0], math_type(out[0]->dtype));
}
static jn_status cu_prod(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return reduce(JN_OP_prod, in[0], &a->a[0].l, out[0], math_type(out[0]->dtype));
}
static jn_status cu_amax(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return reduce(JN_OP_amax, in[0], &a->a[0].l, out[0], math_type(in[0]->dtype));
}
static jn_status cu_amin(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return reduce(JN_OP_amin, in[0], &a->a[0].l, out[0], math_type(in[0]->dtype));
}
static jn_status cu_all(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return reduce(JN_OP_all, in[0], &a->a[0].l, out[0], math_type(in[0]->dtype));
}
static jn_status cu_any(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return reduce(JN_OP_any, in[0], &a->a[0].l, out[0], math_type(in[0]->dtype));
}

/* (log_)softmax: the dim moved last and made contiguous, rows reduced, the
 * result written back through the inverse permutation. */
static jn_status softmax(jn_tensor *x, int64_t dim, jn_tensor *out, int logm, const char *name) {
    jn_status s = jn_wrap_dim(&dim, x->ndim ? x->ndim : 1, name);
    if (s) return s;
    if (!jn_dtype_is_float(x->dtype) || out->dtype != x->dtype)
        return jn_error(JN_ERR_UNSUPPORTED, "%s on CUDA takes a float tensor and returns its dtype (got %s)", name,
                        jn_dtype_names[x->dtype]);
    int perm[JN_MAX_DIMS], np = 0;
    for (int d = 0; d < x->ndim; d++)
        if (d != dim) perm[np++] = d;
    if (x->ndim) perm[np++] = (int)dim;
    int64_t inner = x->ndim ? x->shape[dim] : 1, outer = inner ? jn_numel(x) / inner : 0;
    int last = x->ndim == 0 || dim == x->ndim - 1;
    jn_tensor *c = x, *o = out;
    if (!(last && jn_is_contiguous(x)) && !(c = dev_contiguous_perm(x, perm, name))) return JN_ERR_NOMEM;
    if (!last && !(o = dev_contiguous_perm(c, NULL, name))) s = JN_ERR_NOMEM; /* scratch of c's shape */
    if (!s)
        s = launched(jn_cu_softmax(jn_data(c), jn_data(o), x->dtype, math_type(x->dtype), outer, inner, logm,
                                   cu.stream), "softmax", name);
    if (!s && o != out) { /* out viewed in the permuted order <- o */
        jn_tensor view = *out;
        for (int d = 0; d < x->ndim; d++) {
            view.shape[d] = out->shape[perm[d]];
            view.strides[d] = out->strides[perm[d]];
        }
        s = dev_copy(&view, o, name);
    }
    if (o != out && o) jn_tensor_decref(o);
    if (c != x) jn_tensor_decref(c);
    return s;
}
static jn_status cu_softmax(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return softmax(in[0], a->a[0].i, out[0], 0, "softmax");
}
static jn_status cu_log_softmax(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return softmax(in[0], a->a[0].i, out[0], 1, "log_softmax");
}

/* ------------------------------------------------------------ GEMM */
/* One operand of C[b] = A[b] @ B[b]: a batch of r x c row-major-indexed
 * matrices at p with element strides (bs, sr, sc). */
typedef struct {
    const char *p;
    int64_t bs, sr, sc, r, c;
} mat;

static mat mat_of(const jn_tensor *t, int64_t bs, int64_t sr, int64_t sc, int64_t r, int64_t c) {
    mat m = {jn_data(t), bs, sr, sc, r, c};
    return m;
}

/* cuBLAS is column-major: a row-major [r, c] with unit column stride is its
 * transpose as stored (op N for the operand order used below, ld = sr);
 * unit row stride is the matrix itself (op T, ld = sc).  Else: no view. */
static int blas_view(const mat *m, cublasOperation_t *op, int64_t *ld) {
    int64_t sr = m->r == 1 ? m->c : m->sr, sc = m->c == 1 ? 1 : m->sc;
    if (sc == 1 && sr >= (m->c > 1 ? m->c : 1)) {
        *op = CUBLAS_OP_N;
        *ld = sr;
        return 1;
    }
    sr = m->r == 1 ? 1 : m->sr;
    sc = m->c == 1 ? (m->r > 1 ? m->r : 1) : m->sc;
    if (sr == 1 && sc >= (m->r > 1 ? m->r : 1)) {
        *op = CUBLAS_OP_T;
        *ld = sc;
        return 1;
    }
    return 0;
}

/* C (contiguous [batch, M, N] at c) = alpha A @ B + beta C, math in the
 * dtype (float32 without TF32, float64; half types accumulate in float). */
static jn_status gemm(const char *name, jn_dtype dt, mat A, mat B, void *c, int64_t batch, double alpha, double beta) {
    int64_t M = A.r, K = A.c, N = B.c;
    if (M == 0 || N == 0 || batch == 0) return JN_OK;
    cudaDataType_t ty;
    cublasComputeType_t ct = CUBLAS_COMPUTE_32F;
    switch (dt) {
    case JN_F32: ty = CUDA_R_32F; break;
    case JN_F64: ty = CUDA_R_64F; ct = CUBLAS_COMPUTE_64F; break;
    case JN_F16: ty = CUDA_R_16F; break;
    case JN_BF16: ty = CUDA_R_16BF; break;
    default:
        return jn_error(JN_ERR_UNSUPPORTED, "op %s is not supported on CUDA yet for %s tensors (cuBLAS GEMMs take "
                        "float32/float64/float16/bfloat16)", name, jn_dtype_names[dt]);
    }
    if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX || batch > INT32_MAX)
        return jn_error(JN_ERR_UNSUPPORTED, "%s: matrix sizes above 2^31 are not supported on CUDA", name);
    cublasOperation_t oa, ob;
    int64_t lda, ldb;
    if (!blas_view(&A, &oa, &lda) || !blas_view(&B, &ob, &ldb))
        return jn_error(JN_ERR_RUNTIME, "%s: operand layout not viewable by cuBLAS (internal error)", name);
    double ad = alpha, bd = beta;
    float af = (float)alpha, bf = (float)beta;
    const void *pa = ct == CUBLAS_COMPUTE_64F ? (const void *)&ad : (const void *)&af;
    const void *pb = ct == CUBLAS_COMPUTE_64F ? (const void *)&bd : (const void *)&bf;
    char what[192];
    snprintf(what, sizeof what, "op %s, [%lld x %lld] @ [%lld x %lld] x %lld", name, (long long)M, (long long)K,
             (long long)K, (long long)N, (long long)batch);
    /* C^T (N x M, column-major = C row-major) = B^T A^T */
    BLAS(blas.gemm(cu.blas, ob, oa, (int)N, (int)M, (int)K, pa, B.p, ty, (int)ldb, B.bs, A.p, ty,
                                    (int)lda, A.bs, pb, c, ty, (int)N, M * N, (int)batch, ct, CUBLAS_GEMM_DEFAULT),
         what);
    return JN_OK;
}

/* t as a batch of [r, c] matrices over its leading dims: a view when the
 * leading dims fold into one stride, else (or when not viewable by cuBLAS)
 * a contiguous copy kept in *tmp. */
static jn_status batch_mat(const char *name, jn_tensor *t, int64_t r, int64_t c, jn_tensor **tmp, mat *m) {
    *tmp = NULL;
    int nd = t->ndim;
    int64_t sr = nd >= 2 ? t->strides[nd - 2] : 0, sc = t->strides[nd - 1];
    if (nd == 1) { /* a vector as [1, c] or [r, 1] */
        if (r == 1) sr = c * sc;
        else sr = sc, sc = 1;
    }
    int64_t batch = 1, bs = r * c;
    int fold = 1;
    for (int d = nd - 3; d >= 0; d--) {
        if (t->shape[d] == 1) continue;
        if (batch == 1) bs = t->strides[d];
        else if (t->strides[d] != bs * batch) fold = 0;
        batch *= t->shape[d];
    }
    *m = mat_of(t, batch > 1 ? bs : 0, sr, sc, r, c);
    cublasOperation_t op;
    int64_t ld;
    if (fold && blas_view(m, &op, &ld)) return JN_OK;
    if (!(*tmp = dev_contiguous_perm(t, NULL, name))) return JN_ERR_NOMEM;
    *m = mat_of(*tmp, batch > 1 ? r * c : 0, nd == 1 && r != 1 ? 1 : c, 1, r, c);
    return JN_OK;
}

/* A [.., M, K] @ B [.., K, N] with batch dims broadcast to out's. */
static jn_status matmul(const char *name, jn_tensor *a, jn_tensor *b, jn_tensor *out, double alpha, double beta) {
    int na = a->ndim, nb = b->ndim;
    int64_t M = na >= 2 ? a->shape[na - 2] : 1, K = a->shape[na - 1], N = nb >= 2 ? b->shape[nb - 1] : 1;
    int64_t batch = 1;
    int bd = out->ndim - (na >= 2 ? 1 : 0) - (nb >= 2 ? 1 : 0); /* out's batch dims */
    for (int d = 0; d < bd; d++) batch *= out->shape[d];
    jn_tensor *ta = NULL, *tb = NULL, *ea = NULL, *eb = NULL;
    jn_status s = JN_OK;
    if (K == 0) { /* an empty sum: beta * out (out = 0 when beta is 0, never read) */
        if (beta == 0) return fill(out, 0.0, name);
        jn_cu_iter it;
        iter_init(&it, out);
        iter_add(&it, out);
        iter_add(&it, out);
        jn_cu_params p = {beta - 1, 0, 0, 0, 0}; /* out + (beta - 1) out */
        return launched(jn_cu_ew(JN_OP_add, math_type(out->dtype), &it, &p, cu.stream), "elementwise", name);
    }
    /* fold a's batch into M when b has none (x @ W) */
    if (nb <= 2 && na > 2 && batch > 1) {
        jn_tensor *c = a;
        if (!jn_is_contiguous(a) && !(ta = c = dev_contiguous_perm(a, NULL, name))) return JN_ERR_NOMEM;
        jn_tensor *bv = b;
        mat A = mat_of(c, 0, K, 1, M * batch, K), B;
        if (!(s = batch_mat(name, bv, K, N, &tb, &B))) s = gemm(name, out->dtype, A, B, jn_data(out), 1, alpha, beta);
        jn_tensor_decref(ta);
        jn_tensor_decref(tb);
        return s;
    }
    /* broadcast batch dims: an operand whose batch differs is expanded densely */
    jn_tensor *ops[2] = {a, b}, **ex[2] = {&ea, &eb};
    for (int k = 0; k < 2; k++) {
        jn_tensor *t = ops[k];
        int mdims = t->ndim >= 2 ? 2 : 1;
        int64_t tb_n = 1;
        for (int d = 0; d < t->ndim - mdims; d++) tb_n *= t->shape[d];
        if (tb_n == batch || tb_n == 1) continue;
        jn_meta m = {t->dtype, bd + mdims, {0}};
        memcpy(m.shape, out->shape, sizeof(int64_t) * (size_t)bd);
        for (int d = 0; d < mdims; d++) m.shape[bd + d] = t->shape[t->ndim - mdims + d];
        if (!(*ex[k] = cuda_tensor_new(&m))) { s = JN_ERR_NOMEM; goto done; }
        if ((s = dev_copy(*ex[k], t, name))) goto done;
        ops[k] = *ex[k];
    }
    mat A, B;
    if ((s = batch_mat(name, ops[0], M, K, &ta, &A)) || (s = batch_mat(name, ops[1], K, N, &tb, &B))) goto done;
    /* (a batch-1 operand has batch stride 0: it repeats) */
    s = gemm(name, out->dtype, A, B, jn_data(out), batch, alpha, beta);
done:
    jn_tensor_decref(ta);
    jn_tensor_decref(tb);
    jn_tensor_decref(ea);
    jn_tensor_decref(eb);
    return s;
}

static jn_status cu_mm(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return matmul("mm", in[0], in[1], out[0], 1, 0);
}
static jn_status cu_bmm(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return matmul("bmm", in[0], in[1], out[0], 1, 0);
}
static jn_status cu_matmul(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return matmul("matmul", in[0], in[1], out[0], 1, 0);
}
/* addmm: out = beta input + alpha m1 @ m2 (input broadcast into out first;
 * beta 0 never reads it, as torch) */
static jn_status cu_addmm(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    double beta = a->a[0].f, alpha = a->a[1].f;
    jn_status s;
    if (beta != 0 && jn_data(out[0]) != jn_data(in[0]) && (s = dev_copy(out[0], in[0], "addmm"))) return s;
    return matmul("addmm", in[1], in[2], out[0], alpha, beta);
}
/* linear: out = x @ w^T (+ bias): w [N, K] read transposed in place */
static jn_status cu_linear(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_tensor *x = in[0], *w = in[1];
    jn_status s;
    int has_bias = nin > 2 && in[2];
    if (has_bias && (s = dev_copy(out[0], in[2], "linear"))) return s;
    jn_tensor wt = *w; /* the [K, N] view of w */
    if (w->ndim == 2) {
        wt.shape[0] = w->shape[1];
        wt.shape[1] = w->shape[0];
        wt.strides[0] = w->strides[1];
        wt.strides[1] = w->strides[0];
    }
    return matmul("linear", x, &wt, out[0], 1, has_bias ? 1 : 0);
}

/* ------------------------------------------------------------ indexing */
/* Index checks: a kernel sets cu.flag on a bad index; the op reads it back
 * (a sync) and clears it.  Inside a CUDA Graph capture nothing may wait, so
 * the flag is neither cleared before the kernel nor read after it: the
 * first such op's message is kept (jn_cuda_flag_deferred) and the graph's
 * runner reads the flag after each launch of the graph (jn_cuda_flag_check). */
static char deferred[200];

static jn_status flag_clear(const char *name) {
    if (is_capturing()) return JN_OK;
    CU(cudaMemsetAsync(cu.flag, 0, sizeof(int), cu.stream), name);
    return JN_OK;
}

static jn_status read_flag(const char *name, jn_status kind, const char *msg) {
    int bad = 0;
    CU(cudaMemcpyAsync(&bad, cu.flag, sizeof bad, cudaMemcpyDeviceToHost, cu.stream), name);
    CU(cudaStreamSynchronize(cu.stream), name);
    if (!bad) return JN_OK;
    CU(cudaMemsetAsync(cu.flag, 0, sizeof(int), cu.stream), name); /* clear for the next check */
    return jn_error(kind, "%s: %s", name, msg);
}

static jn_status check_flag_kind(const char *name, jn_status kind, const char *msg) {
    if (!is_capturing()) return read_flag(name, kind, msg);
    if (!deferred[0]) snprintf(deferred, sizeof deferred, "%s: %s", name, msg);
    return JN_OK;
}

static jn_status check_flag(const char *name, const char *msg) { return check_flag_kind(name, JN_ERR_INDEX, msg); }

const char *jn_cuda_flag_deferred(void) {
    static char taken[sizeof deferred];
    memcpy(taken, deferred, sizeof taken);
    deferred[0] = 0;
    return taken;
}

jn_status jn_cuda_flag_check(const char *msg) {
    if (!cu.ready) return JN_OK;
    int bad = 0;
    CU(cudaMemcpyAsync(&bad, cu.flag, sizeof bad, cudaMemcpyDeviceToHost, cu.stream), "a CUDA Graph's index checks");
    CU(cudaStreamSynchronize(cu.stream), "a CUDA Graph's index checks");
    if (!bad) return JN_OK;
    CU(cudaMemsetAsync(cu.flag, 0, sizeof(int), cu.stream), "a CUDA Graph's index checks");
    return jn_error(JN_ERR_INDEX, "%s (in a CUDA Graph: the first op that checks indices named)", msg);
}

/* out = x gathered along dim by idx (idx broadcast to out's shape; the
 * index range is checked on the device and reported after a sync). */
static jn_status gather_into(const char *name, jn_tensor *x, const jn_tensor *idx, int64_t dim, jn_tensor *out) {
    jn_cu_iter it;
    iter_init(&it, out);
    iter_add(&it, idx);
    jn_status s = flag_clear(name);
    if (s) return s;
    s = launched(jn_cu_gather(&it, (int)dim, x->strides, jn_data(x), x->shape[dim], cu.flag, cu.stream),
                           "gather", name);
    return s ? s : check_flag(name, "index out of range");
}

static jn_status cu_gather(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_tensor *x = in[0], *idx = in[1];
    int64_t dim = a->a[0].i;
    jn_status s = jn_wrap_dim(&dim, x->ndim ? x->ndim : 1, "gather");
    if (s) return s;
    if (x->ndim == 0) return dev_copy(out[0], x, "gather");
    return gather_into("gather", x, idx, dim, out[0]);
}

/* index_select = gather with the index vector spread over out's shape */
static jn_status cu_index_select(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_tensor *x = in[0], *y = out[0];
    int64_t dim = a->a[0].i;
    jn_status s = jn_wrap_dim(&dim, x->ndim ? x->ndim : 1, "index_select");
    if (s) return s;
    if (x->ndim == 0) return dev_copy(y, x, "index_select");
    jn_tensor iv = *in[1];
    iv.ndim = y->ndim;
    for (int d = 0; d < y->ndim; d++) {
        iv.shape[d] = y->shape[d];
        iv.strides[d] = d == dim && in[1]->ndim ? in[1]->strides[0] : 0;
    }
    return gather_into("index_select", x, &iv, dim, y);
}

/* embedding = rows of weight [V, D] picked by the (flattened) indices */
static jn_status cu_embedding(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_tensor *w = in[0], *idx = in[1], *y = out[0];
    jn_tensor *c = idx;
    if (!jn_is_contiguous(idx) && !(c = dev_contiguous_perm(idx, NULL, "embedding"))) return JN_ERR_NOMEM;
    int64_t n = jn_numel(idx), D = w->shape[1];
    jn_tensor yv = *y, iv = *c;
    yv.ndim = iv.ndim = 2;
    yv.shape[0] = iv.shape[0] = n;
    yv.shape[1] = iv.shape[1] = D;
    yv.strides[0] = D;
    yv.strides[1] = 1;
    iv.strides[0] = 1;
    iv.strides[1] = 0;
    jn_status s = gather_into("embedding", w, &iv, 0, &yv);
    if (c != idx) jn_tensor_decref(c);
    return s;
}

static jn_status cu_scatter_add(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_tensor *x = in[0], *idx = in[1], *src = in[2], *o = out[0];
    int64_t dim = a->a[0].i;
    jn_status s = jn_wrap_dim(&dim, x->ndim ? x->ndim : 1, "scatter_add");
    if (s) return s;
    if (o->dtype != JN_F32 && o->dtype != JN_F64)
        return jn_error(JN_ERR_UNSUPPORTED, "op scatter_add is not supported on CUDA yet for %s tensors (float32 "
                        "and float64 only)", jn_dtype_names[o->dtype]);
    if ((s = dev_copy(o, x, "scatter_add"))) return s;
    if (x->ndim == 0) return JN_OK;
    /* over the index's shape; src addressed with its own strides */
    jn_cu_iter it;
    iter_init(&it, idx);
    it.ptr[0] = jn_data(src);
    it.dtype[0] = src->dtype;
    memcpy(it.stride[0], src->strides, sizeof(int64_t) * (size_t)src->ndim);
    iter_add(&it, idx);
    /* the index range is checked with gather's kernel first (reads o) */
    jn_meta gm = {o->dtype, idx->ndim, {0}};
    memcpy(gm.shape, idx->shape, sizeof gm.shape);
    jn_tensor *g = cuda_tensor_new(&gm);
    if (!g) return JN_ERR_NOMEM;
    jn_cu_iter git;
    iter_init(&git, g);
    iter_add(&git, idx);
    if ((s = flag_clear("scatter_add"))) {
        jn_tensor_decref(g);
        return s;
    }
    s = launched(jn_cu_gather(&git, (int)dim, o->strides, jn_data(o), o->shape[dim], cu.flag, cu.stream), "gather",
                 "scatter_add");
    jn_tensor_decref(g);
    if (s || (s = check_flag("scatter_add", "index out of range"))) return s;
    return launched(jn_cu_scatter_add(&it, (int)dim, o->strides, jn_data(o), o->shape[dim], cu.stream), "scatter_add",
                    "scatter_add");
}

/* ------------------------------------------------------------ fused updates */
static jn_status float_only(const char *name, jn_dtype d) {
    if (d == JN_F32 || d == JN_F64) return JN_OK;
    return jn_error(JN_ERR_UNSUPPORTED, "op %s is not supported on CUDA yet for %s tensors (float32 and float64 only)",
                    name, jn_dtype_names[d]);
}

static jn_status cu_adam_(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_status s = float_only("adam_", in[0]->dtype);
    if (s) return s;
    double lr = a->a[0].f, b1 = a->a[1].f, b2 = a->a[2].f, eps = a->a[3].f, wd = a->a[4].f, step = a->a[5].f;
    double c[8] = {1 - lr * wd, wd, 1 - b1, b2, 1 - b2, sqrt(1 - pow(b2, step)), eps, -(lr / (1 - pow(b1, step)))};
    return launched(jn_cu_adam(jn_data(in[0]), jn_data(in[1]), jn_data(in[2]), jn_data(in[3]), in[0]->dtype == JN_F64,
                               jn_numel(in[0]), c, a->a[6].i != 0, a->a[7].i != 0, wd != 0, cu.stream),
                    "adam", "adam_");
}

static jn_status cu_sgd_(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_status s = float_only("sgd_", in[0]->dtype);
    if (s) return s;
    double c[4] = {-a->a[0].f, a->a[1].f, 1 - a->a[2].f, a->a[3].f};
    return launched(jn_cu_sgd(jn_data(in[0]), jn_data(in[1]), jn_data(in[2]), in[0]->dtype == JN_F64,
                              jn_numel(in[0]), c, a->a[5].i != 0, a->a[3].f != 0, a->a[4].i != 0, a->a[6].i != 0,
                              cu.stream),
                    "sgd", "sgd_");
}

/* ------------------------------------------------------------ random */
/* Random ops run their CPU kernel on host buffers and upload the result:
 * the draws are the CPU Philox stream's (seed, offset) exactly, so a CUDA
 * run samples what a CPU run samples; slow (a transfer per call) but
 * right.  In-place ones (uniform_, normal_) copy the result back in.  sort
 * runs the same way (the CPU kernel's order, ties and NaN placement). */
static jn_status on_host(jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    const jn_opinfo *info = jn_op_info(op);
    int nw = (info->flags & JN_F_INPLACE) ? info->nout : 0;
    jn_tensor *hin[JN_MAX_INS] = {0}, *hout[JN_MAX_OUTS] = {0};
    jn_status s = JN_OK;
    for (int i = 0; i < nin && !s; i++)
        if (!(hin[i] = jn_rt_to_device(in[i], JN_CPU, 1))) s = JN_ERR_NOMEM;
    for (int k = 0; k < info->nout && !s; k++) {
        if (k < nw) {
            hout[k] = hin[k];
            jn_tensor_incref(hout[k]);
            continue;
        }
        jn_meta m = {out[k]->dtype, out[k]->ndim, {0}};
        memcpy(m.shape, out[k]->shape, sizeof m.shape);
        if (!(hout[k] = jn_tensor_new_meta(&m))) s = JN_ERR_NOMEM;
    }
    if (!s) s = jn_rt_cpu_backend.kernel[op](nin, hin, a, hout);
    for (int k = 0; k < info->nout && !s; k++) s = jn_copy_into(out[k], hout[k]);
    for (int i = 0; i < nin; i++) jn_tensor_decref(hin[i]);
    for (int k = 0; k < info->nout; k++) jn_tensor_decref(hout[k]);
    return s;
}

#define HOST_OPS(X) X(randn) X(randint) X(randperm) X(uniform_) X(normal_) X(bernoulli) X(sort)
#define X(name)                                                                                           \
    static jn_status cu_##name(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) { \
        return on_host(JN_OP_##name, nin, in, a, out);                                                    \
    }
HOST_OPS(X)
#undef X

/* rand and dropout_mask draw on the device (integer-built uniforms: the
 * CPU's values exactly); outputs are fresh and contiguous. */
static jn_status cu_rand(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return launched(jn_cu_random(0, jn_data(out[0]), out[0]->dtype, jn_numel(out[0]), (uint64_t)a->a[2].i,
                                 (uint64_t)a->a[3].i, 0, cu.stream), "rand", "rand");
}
static jn_status cu_dropout_mask(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return launched(jn_cu_random(1, jn_data(out[0]), JN_BOOL, jn_numel(out[0]), (uint64_t)a->a[2].i,
                                 (uint64_t)a->a[3].i, a->a[1].f, cu.stream), "dropout_mask", "dropout_mask");
}

/* ------------------------------------------------------------ convolution (cuDNN) */
/* Workspace for cuDNN from the caching allocator (a uint8 tensor). */
static void *ws_alloc(size_t n, void **token) {
    jn_meta m = {JN_U8, 1, {(int64_t)n}};
    jn_tensor *t = cuda_tensor_new(&m);
    *token = t;
    return t ? jn_data(t) : NULL;
}
static void ws_release(void *token) { jn_tensor_decref(token); }
static const jn_rt_cudnn_ws cudnn_ws = {ws_alloc, ws_release};

/* A contiguous device version of t (a new reference either way). */
static jn_tensor *dense(jn_tensor *t, const char *op) {
    if (jn_is_contiguous(t)) {
        jn_tensor_incref(t);
        return t;
    }
    return dev_contiguous_perm(t, NULL, op);
}

/* NCHW sizes of a 3-D (unbatched) or 4-D shape list. */
static void nchw(int nd, const int64_t *shape, int64_t out[4]) {
    out[0] = nd == 4 ? shape[0] : 1;
    for (int i = 0; i < 3; i++) out[1 + i] = shape[nd - 3 + i];
}

/* stride, padding, dilation (attributes first..first+2) and groups. */
static jn_status conv_attrs(const char *op, const jn_attrs *a, int first, int64_t st[2], int64_t pad[2], int64_t dil[2],
                            int64_t *groups) {
    jn_status s;
    if ((s = jn_rt_pair_attr(op, "stride", &a->a[first].l, 1, st)) ||
        (s = jn_rt_pair_attr(op, "padding", &a->a[first + 1].l, 0, pad)) ||
        (s = jn_rt_pair_attr(op, "dilation", &a->a[first + 2].l, 1, dil)))
        return s;
    *groups = a->a[first + 3].i;
    return JN_OK;
}

/* One cuDNN pass: a, b made contiguous, out fresh (contiguous). */
static jn_status conv_pass(int kind, const char *op, jn_tensor *a, jn_tensor *b, jn_tensor *out, const int64_t x[4],
                           const int64_t w[4], const jn_attrs *at, int first) {
    int64_t st[2] = {0, 0}, pad[2] = {0, 0}, dil[2] = {0, 0}, g = 0;
    jn_rt_cudnn_conv c;
    jn_status s = conv_attrs(op, at, first, st, pad, dil, &g);
    if (s || (s = jn_rt_cudnn_conv_geom(&c, out->dtype, x, w, st, pad, dil, g, op))) return s;
    jn_tensor *ca = dense(a, op), *cb = ca ? dense(b, op) : NULL;
    if (!ca || !cb) s = JN_ERR_NOMEM;
    else s = jn_rt_cudnn_conv_run(kind, &c, cu.stream, jn_data(ca), jn_data(cb), jn_data(out), &cudnn_ws, op);
    jn_tensor_decref(ca);
    jn_tensor_decref(cb);
    return s;
}

static jn_status cu_conv2d(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_tensor *x = in[0], *w = in[1], *y = out[0];
    int64_t xs[4];
    nchw(x->ndim, x->shape, xs);
    jn_status s = JN_OK;
    if (jn_numel(y) == 0) return JN_OK;
    if (xs[1] == 0) s = fill(y, 0.0, "conv2d"); /* nothing to sum: the bias alone */
    else s = conv_pass(JN_RT_CUDNN_FWD, "conv2d", x, w, y, xs, w->shape, a, 0);
    if (s || nin < 3 || !in[2]) return s;
    /* + bias [O] broadcast over [.., O, OH, OW] */
    jn_tensor bv = *in[2];
    bv.ndim = 3;
    bv.shape[1] = bv.shape[2] = 1;
    bv.strides[1] = bv.strides[2] = 0;
    jn_cu_iter it;
    jn_cu_params p = {1, 0, 0, 0, 0};
    iter_init(&it, y);
    iter_add(&it, y);
    iter_add(&it, &bv);
    return launched(jn_cu_ew(JN_OP_add, math_type(y->dtype), &it, &p, cu.stream), "elementwise", "conv2d");
}

/* (grad_out, weight) -> grad_input of size input_size */
static jn_status cu_conv2d_input_grad(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    int64_t xs[4];
    nchw(out[0]->ndim, out[0]->shape, xs);
    if (jn_numel(out[0]) == 0) return JN_OK;
    if (jn_numel(in[0]) == 0) return fill(out[0], 0.0, "conv2d_input_grad");
    return conv_pass(JN_RT_CUDNN_BWD_DATA, "conv2d_input_grad", in[0], in[1], out[0], xs, in[1]->shape, a, 1);
}

/* (grad_out, input) -> grad_weight of size weight_size */
static jn_status cu_conv2d_weight_grad(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    int64_t xs[4];
    nchw(in[1]->ndim, in[1]->shape, xs);
    if (jn_numel(out[0]) == 0) return JN_OK;
    if (jn_numel(in[0]) == 0 || jn_numel(in[1]) == 0) return fill(out[0], 0.0, "conv2d_weight_grad");
    return conv_pass(JN_RT_CUDNN_BWD_FILTER, "conv2d_weight_grad", in[0], in[1], out[0], xs, out[0]->shape, a, 1);
}

/* ------------------------------------------------------------ pooling (own kernels) */
/* cuDNN's pooling is not used: it returns no indices (max_pool2d's second
 * output, which routes the gradient), has no adaptive mode, and sizes
 * outputs without ceil_mode's clipped last window; these kernels follow
 * k_conv.c / k_grad.c exactly instead. */

/* Geometry of x (3-D or 4-D) with output size OH x OW. */
static void pool_of(jn_cu_pool *p, const jn_tensor *x, int64_t OH, int64_t OW) {
    memset(p, 0, sizeof *p);
    int o = x->ndim - 3;
    int64_t N = o ? x->shape[0] : 1;
    p->C = x->shape[o];
    p->H = x->shape[o + 1];
    p->W = x->shape[o + 2];
    p->planes = N * p->C;
    p->sn = o ? x->strides[0] : 0;
    p->sc = x->strides[o];
    p->xh = x->strides[o + 1];
    p->xw = x->strides[o + 2];
    p->OH = OH;
    p->OW = OW;
}

/* Plane geometry of an input_size attribute (3 or 4 entries). */
static void pool_of_size(jn_cu_pool *p, const jn_ints *size, int64_t OH, int64_t OW) {
    jn_tensor t;
    memset(&t, 0, sizeof t);
    t.ndim = size->n;
    memcpy(t.shape, size->v, sizeof(int64_t) * (size_t)size->n);
    jn_contiguous_strides(t.ndim, t.shape, t.strides);
    pool_of(p, &t, OH, OW);
}

/* kernel / stride (empty = kernel) / padding / dilation attributes. */
static jn_status pool_attrs(const char *op, const jn_attrs *a, int first, int has_dil, jn_cu_pool *p) {
    int64_t k[2] = {0, 0}, st[2] = {0, 0}, pad[2] = {0, 0}, dil[2] = {1, 1};
    jn_status s;
    if ((s = jn_rt_pair_attr(op, "kernel_size", &a->a[first].l, -1, k))) return s;
    if (a->a[first + 1].l.n == 0) st[0] = k[0], st[1] = k[1];
    else if ((s = jn_rt_pair_attr(op, "stride", &a->a[first + 1].l, -1, st))) return s;
    if ((s = jn_rt_pair_attr(op, "padding", &a->a[first + 2].l, 0, pad))) return s;
    if (has_dil && (s = jn_rt_pair_attr(op, "dilation", &a->a[first + 3].l, 1, dil))) return s;
    p->kh = k[0], p->kw = k[1], p->sh = st[0], p->sw = st[1], p->ph = pad[0], p->pw = pad[1];
    p->dh = dil[0], p->dw = dil[1];
    return JN_OK;
}

static jn_status cu_max_pool2d(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_tensor *v = out[0];
    jn_cu_pool p;
    pool_of(&p, in[0], v->shape[v->ndim - 2], v->shape[v->ndim - 1]);
    jn_status s = pool_attrs("max_pool2d", a, 0, 1, &p);
    if (s) return s;
    return launched(jn_cu_maxpool(&p, jn_data(in[0]), in[0]->dtype, jn_data(v), (int64_t *)jn_data(out[1]),
                                  cu.stream), "maxpool", "max_pool2d");
}

static jn_status cu_avg_pool2d(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_tensor *v = out[0];
    jn_cu_pool p;
    pool_of(&p, in[0], v->shape[v->ndim - 2], v->shape[v->ndim - 1]);
    jn_status s = pool_attrs("avg_pool2d", a, 0, 0, &p);
    if (s) return s;
    p.count_include_pad = a->a[4].i != 0;
    return launched(jn_cu_avgpool(&p, 0, jn_data(in[0]), in[0]->dtype, jn_data(v), cu.stream), "avgpool",
                    "avg_pool2d");
}

static jn_status cu_adaptive_avg_pool2d(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_tensor *v = out[0];
    jn_cu_pool p;
    pool_of(&p, in[0], v->shape[v->ndim - 2], v->shape[v->ndim - 1]);
    return launched(jn_cu_avgpool(&p, 1, jn_data(in[0]), in[0]->dtype, jn_data(v), cu.stream), "avgpool",
                    "adaptive_avg_pool2d");
}

/* A pool backward in float32/float64: g (grad_out) widened from a half
 * type when needed, dx computed into out or a float32 scratch narrowed
 * into it.  kind: 0 avg, 1 adaptive, 2 max (idx given). */
static jn_status pool_backward(int kind, const char *op, jn_cu_pool *p, jn_tensor *g, const jn_tensor *idx,
                               jn_tensor *out) {
    if (jn_numel(out) == 0) return JN_OK;
    int half = g->dtype == JN_F16 || g->dtype == JN_BF16;
    jn_tensor *gc = g, *dx = out;
    jn_status s = JN_OK;
    if (half) {
        jn_meta gm = {JN_F32, g->ndim, {0}}, dm = {JN_F32, out->ndim, {0}};
        memcpy(gm.shape, g->shape, sizeof gm.shape);
        memcpy(dm.shape, out->shape, sizeof dm.shape);
        gc = cuda_tensor_new(&gm);
        dx = gc ? cuda_tensor_new(&dm) : NULL;
        if (!gc || !dx || (s = dev_copy(gc, g, op))) {
            s = s ? s : JN_ERR_NOMEM;
            goto done;
        }
    }
    int o = gc->ndim - 3;
    p->gs[0] = o ? gc->strides[0] : 0;
    for (int d = 1; d < 4; d++) p->gs[d] = gc->strides[d - 1 + o];
    int f64 = gc->dtype == JN_F64;
    if (kind == 2) {
        p->is[0] = o ? idx->strides[0] : 0;
        for (int d = 1; d < 4; d++) p->is[d] = idx->strides[d - 1 + o];
        if ((s = fill(dx, 0.0, op))) goto done;
        if ((s = flag_clear(op))) goto done;
        if ((s = launched(jn_cu_maxpool_bwd(p, jn_data(gc), (const int64_t *)jn_data(idx), f64, jn_data(dx), cu.flag,
                                            cu.stream), "maxpool_bwd", op)) ||
            (s = check_flag(op, "an index is outside the input plane; indices must come from max_pool2d over an "
                                "input of size input_size")))
            goto done;
    } else if ((s = launched(jn_cu_avgpool_bwd(p, kind, jn_data(gc), f64, jn_data(dx), cu.stream), "avgpool_bwd",
                             op))) {
        goto done;
    }
    if (dx != out) s = dev_copy(out, dx, op);
done:
    if (gc != g) jn_tensor_decref(gc);
    if (dx != out) jn_tensor_decref(dx);
    return s;
}

static jn_status cu_avg_pool2d_backward(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_tensor *g = in[0];
    jn_cu_pool p;
    pool_of_size(&p, &a->a[0].l, g->shape[g->ndim - 2], g->shape[g->ndim - 1]);
    jn_status s = pool_attrs("avg_pool2d_backward", a, 1, 0, &p);
    if (s) return s;
    p.count_include_pad = a->a[5].i != 0;
    return pool_backward(0, "avg_pool2d_backward", &p, g, NULL, out[0]);
}

static jn_status cu_adaptive_avg_pool2d_backward(int nin, jn_tensor *const *in, const jn_attrs *a,
                                                 jn_tensor *const *out) {
    jn_tensor *g = in[0];
    jn_cu_pool p;
    pool_of_size(&p, &a->a[0].l, g->shape[g->ndim - 2], g->shape[g->ndim - 1]);
    return pool_backward(1, "adaptive_avg_pool2d_backward", &p, g, NULL, out[0]);
}

static jn_status cu_max_pool2d_backward(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_tensor *g = in[0];
    jn_cu_pool p;
    pool_of_size(&p, &a->a[0].l, g->shape[g->ndim - 2], g->shape[g->ndim - 1]);
    return pool_backward(2, "max_pool2d_backward", &p, g, in[1], out[0]);
}

/* ------------------------------------------------------------ fused RNN cells */
/* kind as jn_cu_cell; `state` is the input whose last dim is H. */
static jn_status cell(int kind, const char *op, int nin, jn_tensor *const *in, int nout, jn_tensor *const *out,
                      const jn_tensor *state) {
    jn_status s = float_only(op, in[0]->dtype);
    if (s) return s;
    int64_t H = state->shape[state->ndim - 1], rows = H ? jn_numel(state) / H : 0;
    jn_tensor *c[3] = {0};
    const void *ip[3] = {0};
    void *op_[3] = {0};
    for (int i = 0; i < nin && !s; i++)
        if (!(c[i] = dense(in[i], op))) s = JN_ERR_NOMEM;
        else ip[i] = jn_data(c[i]);
    for (int k = 0; k < nout; k++) op_[k] = jn_data(out[k]);
    if (!s) s = launched(jn_cu_cell(kind, in[0]->dtype == JN_F64, rows, H, ip, op_, cu.stream), "cell", op);
    for (int i = 0; i < nin; i++) jn_tensor_decref(c[i]);
    return s;
}
static jn_status cu_lstm_cell(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return cell(0, "lstm_cell", 3, in, 3, out, in[2]);
}
static jn_status cu_lstm_cell_backward(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return cell(1, "lstm_cell_backward", 3, in, 2, out, in[0]);
}
static jn_status cu_gru_cell(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return cell(2, "gru_cell", 3, in, 2, out, in[2]);
}
static jn_status cu_gru_cell_backward(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return cell(3, "gru_cell_backward", 2, in, 3, out, in[0]);
}

/* ------------------------------------------------------------ logsumexp, linspace */
static jn_status cu_logsumexp(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_tensor *x = in[0], *c;
    int red[JN_MAX_DIMS];
    int64_t outer, inner;
    jn_status s = dims_mask("logsumexp", x, &a->a[0].l, red);
    if (s || (s = as_rows("logsumexp", x, red, &c, &outer, &inner))) return s;
    s = launched(jn_cu_logsumexp(jn_data(c), c->dtype, jn_data(out[0]), out[0]->dtype, outer, inner, cu.stream),
                 "logsumexp", "logsumexp");
    if (c != x) jn_tensor_decref(c);
    return s;
}

/* k_shape.c's bounds: integer dtypes and float64 in double after rounding
 * the bounds to the dtype, float32 and the half types in float (halves'
 * bounds rounded to the half type first); a single step is start. */
static jn_status cu_linspace(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_dtype dt = out[0]->dtype;
    int64_t steps = a->a[2].i, half = steps == 1 ? 1 : steps / 2;
    double start, end, step;
    if (dt == JN_F64 || !jn_dtype_is_float(dt)) {
        unsigned char v[8];
        jn_store_f64(v, dt, a->a[0].f);
        start = jn_load_f64(v, dt);
        jn_store_f64(v, dt, a->a[1].f);
        end = jn_load_f64(v, dt);
        step = steps > 1 ? (end - start) / (double)(steps - 1) : 0;
    } else {
        float fs = (float)a->a[0].f, fe = (float)a->a[1].f;
        if (dt != JN_F32) {
            unsigned char v[2];
            jn_store_f64(v, dt, fs);
            fs = (float)jn_load_f64(v, dt);
            jn_store_f64(v, dt, fe);
            fe = (float)jn_load_f64(v, dt);
        }
        start = fs, end = fe;
        step = steps > 1 ? (double)((fe - fs) / (float)(steps - 1)) : 0;
    }
    return launched(jn_cu_linspace(jn_data(out[0]), dt, steps, half, start, end, step, cu.stream), "linspace",
                    "linspace");
}

/* ------------------------------------------------------------ scatter, one_hot */
/* A 0-d tensor as 1-d of size 1 (PyTorch's gather/scatter shape rule). */
static jn_tensor as_1d(const jn_tensor *t) {
    jn_tensor v = *t;
    if (!v.ndim) {
        v.ndim = 1;
        v.shape[0] = 1;
        v.strides[0] = 0;
    }
    return v;
}

static jn_status cu_scatter(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_tensor *x = in[0], *o = out[0], *sc = NULL;
    int64_t dim = a->a[0].i;
    jn_status s = jn_wrap_dim(&dim, x->ndim ? x->ndim : 1, "scatter");
    if (s || (s = dev_copy(o, x, "scatter")) || jn_numel(in[1]) == 0) return s;
    jn_tensor *src = in[2];
    if (src->dtype != x->dtype) { /* a Python number: in x's dtype first */
        jn_meta m = {x->dtype, src->ndim, {0}};
        memcpy(m.shape, src->shape, sizeof m.shape);
        if (!(sc = cuda_tensor_new(&m))) return JN_ERR_NOMEM;
        if ((s = dev_copy(sc, src, "scatter"))) goto done;
        src = sc;
    }
    jn_tensor iv = as_1d(in[1]), ov = as_1d(o), sv = as_1d(src);
    int value = src->ndim == 0;
    int64_t L = iv.shape[dim], istr = iv.strides[dim], sstr = value ? 0 : sv.strides[dim];
    jn_tensor rows = iv; /* the iteration space: the index's shape, dim of extent 1 */
    rows.shape[dim] = 1;
    jn_tensor srows = rows;
    srows.storage = src->storage;
    srows.offset = src->offset;
    srows.dtype = src->dtype;
    for (int d = 0; d < rows.ndim; d++) srows.strides[d] = value ? 0 : sv.strides[d];
    jn_cu_iter it;
    iter_init(&it, &srows);
    iter_add(&it, &rows);
    if ((s = flag_clear("scatter"))) goto done;
    if ((s = launched(jn_cu_scatter(&it, (int)dim, L, istr, sstr, ov.strides, jn_data(o), ov.shape[dim], cu.flag,
                                    cu.stream), "scatter", "scatter")))
        goto done;
    char msg[128];
    snprintf(msg, sizeof msg, "an index is out of bounds for dimension %d with size %lld", (int)dim,
             (long long)ov.shape[dim]);
    s = check_flag("scatter", msg);
done:
    jn_tensor_decref(sc);
    return s;
}

static jn_status cu_one_hot(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_tensor *y = out[0];
    int64_t C = y->shape[y->ndim - 1];
    jn_status s = fill(y, 0.0, "one_hot");
    if (s || jn_numel(in[0]) == 0) return s;
    jn_cu_iter it;
    iter_init(&it, in[0]);
    iter_add(&it, in[0]);
    if ((s = flag_clear("one_hot"))) return s;
    if ((s = launched(jn_cu_one_hot(&it, C, (int64_t *)jn_data(y), cu.flag, cu.stream), "one_hot", "one_hot")))
        return s;
    char msg[120];
    snprintf(msg, sizeof msg, "class values must be non-negative and smaller than num_classes (%lld)", (long long)C);
    return check_flag_kind("one_hot()", JN_ERR_RUNTIME, msg);
}

/* ------------------------------------------------------------ advanced indexing */
/* jn_rt_cuda_index_offsets (jn_cuda_host.h): the CPU kernel does the
 * work, so the geometry, negative indices, masks and the IndexError
 * messages are the CPU's.  Offsets are linear in the coordinates, so
 * indexing one proxy per x dim -- [size_d] values c * stride_d, broadcast
 * (stride 0) over the other dims -- and summing the results gives them.
 * Index tensors are read on the host, as the CPU kernel reads them. */
jn_status jn_rt_cuda_index_offsets(jn_tensor *x, int nidx, jn_tensor *const *idx, const jn_attrs *a,
                                   jn_tensor **offsets) {
    jn_tensor *hin[JN_MAX_INS] = {0}, *total = NULL, *part = NULL, *buf = NULL;
    jn_status s = JN_OK;
    *offsets = NULL;
    if (nidx + 1 > JN_MAX_INS) return jn_error(JN_ERR_VALUE, "index: too many index tensors (%d)", nidx);
    for (int k = 0; k < nidx && !s; k++)
        if (!(hin[1 + k] = jn_rt_to_device(idx[k], JN_CPU, 0))) s = JN_ERR_NOMEM;
    int nd = x->ndim ? x->ndim : 1;
    for (int d = 0; d < nd && !s; d++) {
        int64_t n = x->ndim ? x->shape[d] : 1;
        if (!(buf = jn_tensor_new(JN_I64, 1, &n))) {
            s = JN_ERR_NOMEM;
            break;
        }
        for (int64_t i = 0; i < n; i++) ((int64_t *)jn_data(buf))[i] = x->ndim ? i * x->strides[d] : 0;
        jn_tensor proxy = *buf;
        proxy.ndim = x->ndim;
        for (int e = 0; e < x->ndim; e++) {
            proxy.shape[e] = x->shape[e];
            proxy.strides[e] = e == d ? 1 : 0;
        }
        hin[0] = &proxy;
        jn_meta m;
        if (!(s = jn_infer_index(1 + nidx, hin, a, &m))) {
            if (!(part = jn_tensor_new_meta(&m))) s = JN_ERR_NOMEM;
            else if (!(s = jn_cpu_index(1 + nidx, hin, a, &part))) {
                if (!total) {
                    total = part;
                    part = NULL;
                } else {
                    int64_t *t = (int64_t *)jn_data(total), *p = (int64_t *)jn_data(part), cnt = jn_numel(total);
                    for (int64_t i = 0; i < cnt; i++) t[i] += p[i];
                }
            }
        }
        jn_tensor_decref(part);
        part = NULL;
        hin[0] = NULL;
        jn_tensor_decref(buf);
        buf = NULL;
    }
    for (int k = 0; k < nidx; k++) jn_tensor_decref(hin[1 + k]);
    if (s) jn_tensor_decref(total);
    else *offsets = total;
    return s;
}

/* The offsets on the device. */
static jn_status index_offsets(jn_tensor *x, int nidx, jn_tensor *const *idx, const jn_attrs *a, jn_tensor **res) {
    jn_tensor *h;
    jn_status s = jn_rt_cuda_index_offsets(x, nidx, idx, a, &h);
    if (s) return s;
    *res = jn_rt_to_device(h, JN_CUDA, 0);
    jn_tensor_decref(h);
    return *res ? JN_OK : JN_ERR_NOMEM;
}

static jn_status cu_index(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_tensor *off;
    jn_status s = index_offsets(in[0], nin - 1, in + 1, a, &off);
    if (s) return s;
    jn_cu_iter it;
    iter_init(&it, out[0]);
    iter_add(&it, off);
    s = launched(jn_cu_index_offsets(0, &it, jn_data(in[0]), cu.stream), "index", "index");
    jn_tensor_decref(off);
    return s;
}

/* x[idx...] = values (or += with accumulate: atomics, so repeated indices
 * sum in no fixed order; plain writes to a repeated index keep one of the
 * values, as PyTorch's CUDA index_put_). */
static jn_status cu_index_put_(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_tensor *x = in[0], *v = in[1], *vc = NULL, *off = NULL;
    int acc = a->a[1].i != 0;
    jn_dtype dt = x->dtype;
    if (acc && dt != JN_F32 && dt != JN_F64 && dt != JN_I64 && dt != JN_I32)
        return jn_error(JN_ERR_UNSUPPORTED, "index_put_ with accumulate=True is not supported on CUDA yet for %s "
                        "tensors (float32, float64, int32 and int64)", jn_dtype_names[dt]);
    jn_status s = index_offsets(x, nin - 2, in + 2, a, &off);
    if (s) return s;
    if (v->dtype != dt || v->storage == x->storage) { /* x's dtype, and never aliasing what is written */
        jn_meta m = {dt, v->ndim, {0}};
        memcpy(m.shape, v->shape, sizeof m.shape);
        if (!(vc = cuda_tensor_new(&m))) {
            s = JN_ERR_NOMEM;
            goto done;
        }
        if ((s = dev_copy(vc, v, "index_put_"))) goto done;
        v = vc;
    }
    /* values: leading size-1 dims beyond the result's rank dropped, then broadcast */
    jn_tensor vv = *v;
    while (vv.ndim > off->ndim && vv.shape[0] == 1) {
        memmove(vv.shape, vv.shape + 1, sizeof(int64_t) * (size_t)(vv.ndim - 1));
        memmove(vv.strides, vv.strides + 1, sizeof(int64_t) * (size_t)(vv.ndim - 1));
        vv.ndim--;
    }
    jn_cu_iter it;
    iter_init(&it, off);
    iter_add(&it, off);
    int64_t bs[JN_MAX_DIMS];
    jn_broadcast_byte_strides(&vv, off->ndim, off->shape, bs);
    for (int d = 0; d < off->ndim; d++) it.stride[0][d] = bs[d] / (int64_t)jn_elsize(v);
    it.ptr[0] = jn_data(v);
    it.dtype[0] = dt;
    s = launched(jn_cu_index_offsets(acc ? 2 : 1, &it, jn_data(x), cu.stream), "index_put", "index_put_");
done:
    jn_tensor_decref(vc);
    jn_tensor_decref(off);
    return s;
}

/* ------------------------------------------------------------ the table */
static const jn_rt_backend cuda_backend = {
    "cuda",
    JN_CUDA,
    cuda_tensor_new,
    cuda_copy_into,
    cuda_sync,
    {
#define X(name) [JN_OP_##name] = cu_##name,
        EW_OPS(X) HOST_OPS(X)
#undef X
        [JN_OP_cast] = cu_cast, [JN_OP_copy_] = jn_cpu_copy_ /* jn_copy_into transfers */, [JN_OP_fill_] = cu_fill_, [JN_OP_clone] = cu_clone,
        [JN_OP_full] = cu_full, [JN_OP_empty] = cu_empty, [JN_OP_arange] = cu_arange, [JN_OP_eye] = cu_eye,
        [JN_OP_sum] = cu_sum, [JN_OP_mean] = cu_mean, [JN_OP_prod] = cu_prod, [JN_OP_amax] = cu_amax,
        [JN_OP_amin] = cu_amin, [JN_OP_all] = cu_all, [JN_OP_any] = cu_any, [JN_OP_softmax] = cu_softmax,
        [JN_OP_log_softmax] = cu_log_softmax, [JN_OP_mm] = cu_mm, [JN_OP_bmm] = cu_bmm, [JN_OP_matmul] = cu_matmul,
        [JN_OP_addmm] = cu_addmm, [JN_OP_linear] = cu_linear, [JN_OP_gather] = cu_gather,
        [JN_OP_scatter_add] = cu_scatter_add, [JN_OP_adam_] = cu_adam_, [JN_OP_sgd_] = cu_sgd_,
        [JN_OP_index_select] = cu_index_select, [JN_OP_embedding] = cu_embedding, [JN_OP_max_dim] = cu_max_dim,
        [JN_OP_min_dim] = cu_min_dim, [JN_OP_argmax] = cu_argmax, [JN_OP_argmin] = cu_argmin, [JN_OP_var] = cu_var,
        [JN_OP_std] = cu_std, [JN_OP_rand] = cu_rand, [JN_OP_dropout_mask] = cu_dropout_mask,
        [JN_OP_conv2d] = cu_conv2d, [JN_OP_conv2d_input_grad] = cu_conv2d_input_grad,
        [JN_OP_conv2d_weight_grad] = cu_conv2d_weight_grad, [JN_OP_max_pool2d] = cu_max_pool2d,
        [JN_OP_avg_pool2d] = cu_avg_pool2d, [JN_OP_adaptive_avg_pool2d] = cu_adaptive_avg_pool2d,
        [JN_OP_max_pool2d_backward] = cu_max_pool2d_backward, [JN_OP_avg_pool2d_backward] = cu_avg_pool2d_backward,
        [JN_OP_adaptive_avg_pool2d_backward] = cu_adaptive_avg_pool2d_backward, [JN_OP_lstm_cell] = cu_lstm_cell,
        [JN_OP_lstm_cell_backward] = cu_lstm_cell_backward, [JN_OP_gru_cell] = cu_gru_cell,
        [JN_OP_gru_cell_backward] = cu_gru_cell_backward, [JN_OP_logsumexp] = cu_logsumexp,
        [JN_OP_linspace] = cu_linspace, [JN_OP_scatter] = cu_scatter, [JN_OP_one_hot] = cu_one_hot,
        [JN_OP_index] = cu_index, [JN_OP_index_put_] = cu_index_put_,
        /* collectives: runtime/dist.c takes CUDA tensors to NCCL on janus's stream */
        [JN_OP_all_reduce_] = jn_cpu_all_reduce_, [JN_OP_broadcast_] = jn_cpu_broadcast_,
        [JN_OP_all_gather] = jn_cpu_all_gather, [JN_OP_reduce_scatter] = jn_cpu_reduce_scatter,
        [JN_OP_barrier] = jn_cpu_barrier, /* its token: jn_copy_into a CUDA 0-d tensor */
        /* these CPU kernels only copy windows with jn_copy_into, which the
         * CUDA backend carries out (they read no data themselves) */
        [JN_OP_cat] = jn_cpu_cat, [JN_OP_stack] = jn_cpu_stack, [JN_OP_slice_scatter] = jn_cpu_slice_scatter,
        [JN_OP_select_scatter] = jn_cpu_select_scatter,
        /* views only set shape/strides/offset: the CPU kernels read no data */
        [JN_OP_view] = jn_cpu_view, [JN_OP_permute] = jn_cpu_permute, [JN_OP_transpose] = jn_cpu_transpose,
        [JN_OP_squeeze] = jn_cpu_squeeze, [JN_OP_unsqueeze] = jn_cpu_unsqueeze, [JN_OP_expand] = jn_cpu_expand,
        [JN_OP_slice] = jn_cpu_slice, [JN_OP_select] = jn_cpu_select, [JN_OP_as_strided] = jn_cpu_as_strided,
    },
    { /* the elementwise kernels take CPU scalars by value (no upload per op) */
#define X(name) [JN_OP_##name] = 1,
        EW_OPS(X)
#undef X
    },
};

int jn_cuda_op_supported(jn_op op) { return (unsigned)op < JN_NOPS && cuda_backend.kernel[op] != NULL; }
