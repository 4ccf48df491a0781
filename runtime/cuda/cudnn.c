/* cudnn.c -- conv2d forward, input gradient and weight gradient on the GPU
 * through cuDNN's legacy (v7-style) API: tensor, filter and convolution
 * descriptors, cudnnGetConvolution*Algorithm_v7 for the choice of
 * algorithm, the workspace from the CUDA caching allocator.
 *
 * cuDNN is dlopen'ed at the first convolution, never linked (as cuBLAS in
 * cuda_backend.c): a process that never convolves on a GPU never maps it,
 * and a machine without it gets a clear JN_ERR_UNSUPPORTED naming the
 * library and the fix.  The few types and entry points used are declared
 * here; when cudnn.h is around at build time the enum values and the perf
 * struct's layout are checked against it at compile time.
 *
 * Math: float32 and float64 run with CUDNN_FMA_MATH -- not
 * CUDNN_DEFAULT_MATH, which since cuDNN 8 permits TF32 tensor cores on
 * Ampere and newer (an H200 included) -- so float32 convolutions round as
 * float32, the cuBLAS policy (CUBLAS_DEFAULT_MATH there is TF32-free).
 * float16/bfloat16 allow tensor cores, accumulating in float32.
 *
 * The chosen algorithm and its workspace size are cached per (pass, dtype,
 * sizes, strides, padding, stride, dilation, groups) in a small in-process
 * table.  The table is exported to and imported from run.db's algos table
 * (schema v5) as text rows: the key text is parsed back and checked to be
 * canonical and consistent (its output sizes and strides are recomputed),
 * so a damaged row is refused rather than handed to cuDNN, and the rows
 * are filed under the GPU's name and compute capability so a store moved to
 * another GPU reuses nothing.  An imported entry is a cache hit: cuDNN's
 * heuristics are not asked again.  exec/algos.c does the store I/O.
 */
#include "jn_cudnn.h"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jn_backend.h"
#include "jn_settings.h"

/* ------------------------------------------------------------ cuDNN ABI */
enum {
    JN_CUDNN_STATUS_SUCCESS = 0,
    JN_CUDNN_DATA_FLOAT = 0,
    JN_CUDNN_DATA_DOUBLE = 1,
    JN_CUDNN_DATA_HALF = 2,
    JN_CUDNN_DATA_BFLOAT16 = 9,
    JN_CUDNN_TENSOR_NCHW = 0,
    JN_CUDNN_CROSS_CORRELATION = 1,
    JN_CUDNN_TENSOR_OP_MATH = 1,
    JN_CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION = 2,
    JN_CUDNN_FMA_MATH = 3,
    JN_CUDNN_DETERMINISTIC = 1,
};

/* cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t share this layout */
typedef struct {
    int algo, status;
    float time;
    size_t memory;
    int determinism, mathType;
    int reserved[3];
} jn_cudnn_perf;

#if defined(__has_include)
#if __has_include(<cudnn.h>)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <cudnn.h>
_Static_assert((int)JN_CUDNN_DATA_FLOAT == (int)CUDNN_DATA_FLOAT && (int)JN_CUDNN_DATA_DOUBLE == (int)CUDNN_DATA_DOUBLE &&
                   (int)JN_CUDNN_DATA_HALF == (int)CUDNN_DATA_HALF && (int)JN_CUDNN_DATA_BFLOAT16 == (int)CUDNN_DATA_BFLOAT16,
               "cuDNN data types");
_Static_assert((int)JN_CUDNN_TENSOR_NCHW == (int)CUDNN_TENSOR_NCHW && (int)JN_CUDNN_CROSS_CORRELATION == (int)CUDNN_CROSS_CORRELATION,
               "cuDNN layout / mode");
_Static_assert((int)JN_CUDNN_TENSOR_OP_MATH == (int)CUDNN_TENSOR_OP_MATH && (int)JN_CUDNN_FMA_MATH == (int)CUDNN_FMA_MATH &&
                   (int)JN_CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION == (int)CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION,
               "cuDNN math types");
_Static_assert((int)JN_CUDNN_DETERMINISTIC == (int)CUDNN_DETERMINISTIC && (int)JN_CUDNN_STATUS_SUCCESS == (int)CUDNN_STATUS_SUCCESS,
               "cuDNN determinism / status");
_Static_assert(sizeof(jn_cudnn_perf) == sizeof(cudnnConvolutionFwdAlgoPerf_t) &&
                   sizeof(jn_cudnn_perf) == sizeof(cudnnConvolutionBwdDataAlgoPerf_t) &&
                   sizeof(jn_cudnn_perf) == sizeof(cudnnConvolutionBwdFilterAlgoPerf_t) &&
                   offsetof(jn_cudnn_perf, memory) == offsetof(cudnnConvolutionFwdAlgoPerf_t, memory) &&
                   offsetof(jn_cudnn_perf, mathType) == offsetof(cudnnConvolutionFwdAlgoPerf_t, mathType),
               "cuDNN perf struct layout");
#pragma GCC diagnostic pop
#endif
#endif

typedef void *hnd; /* cudnnHandle_t and the descriptor types: opaque pointers */
typedef int st_t;  /* cudnnStatus_t */

static struct {
    st_t (*create)(hnd *);
    st_t (*set_stream)(hnd, void *);
    const char *(*err)(st_t);
    st_t (*tensor_create)(hnd *);
    st_t (*tensor_set)(hnd, int, int, const int *, const int *);
    st_t (*tensor_destroy)(hnd);
    st_t (*filter_create)(hnd *);
    st_t (*filter_set)(hnd, int, int, int, const int *);
    st_t (*filter_destroy)(hnd);
    st_t (*conv_create)(hnd *);
    st_t (*conv_set)(hnd, int, int, int, int, int, int, int, int);
    st_t (*conv_groups)(hnd, int);
    st_t (*conv_math)(hnd, int);
    st_t (*conv_destroy)(hnd);
    /* v7 choice: (handle, d1, d2, conv, d3, requested, *returned, perf) */
    st_t (*get_algo[3])(hnd, hnd, hnd, hnd, hnd, int, int *, jn_cudnn_perf *);
    /* workspace: (handle, d1, d2, conv, d3, algo, *size) */
    st_t (*ws_size[3])(hnd, hnd, hnd, hnd, hnd, int, size_t *);
    /* run: (handle, alpha, d1, p1, d2, p2, conv, algo, ws, ws_size, beta, d3, p3) */
    st_t (*run[3])(hnd, const void *, hnd, const void *, hnd, const void *, hnd, int, void *, size_t, const void *,
                   hnd, void *);
    int loaded;
    hnd handle;
    pthread_mutex_t mu;
} dnn = {.mu = PTHREAD_MUTEX_INITIALIZER};

static const char *const pass_name[3] = {"forward", "backward data", "backward filter"};

jn_status jn_rt_cudnn_load(void) {
    if (__atomic_load_n(&dnn.loaded, __ATOMIC_ACQUIRE)) return JN_OK;
    pthread_mutex_lock(&dnn.mu);
    jn_status s = JN_OK;
    if (dnn.loaded) goto done;
    const char *env = NULL;
    if ((s = jn_setting_str(JN_S_CUDNN_PATH, &env))) goto done;
    const char *tried[] = {"libcudnn.so.9", "/usr/local/cuda/lib64/libcudnn.so.9", "libcudnn.so"};
    void *h = NULL;
    char why[512] = "";
    if (env && *env) {
        if (!(h = dlopen(env, RTLD_NOW | RTLD_LOCAL))) snprintf(why, sizeof why, "%s", dlerror());
    } else {
        for (size_t i = 0; i < sizeof tried / sizeof tried[0] && !h; i++)
            if (!(h = dlopen(tried[i], RTLD_NOW | RTLD_LOCAL)) && !*why) snprintf(why, sizeof why, "%s", dlerror());
    }
    if (!h) {
        s = jn_error(JN_ERR_UNSUPPORTED,
                     "convolutions on CUDA need cuDNN 9, but libcudnn could not be loaded (%s; tried %s): install "
                     "cuDNN 9 for your CUDA (e.g. the libcudnn9-cuda-12/13 package) and put its directory on "
                     "LD_LIBRARY_PATH, set JANUS_CUDNN_PATH to libcudnn.so.9, or run the convolution on the cpu",
                     why, env && *env ? env : "libcudnn.so.9 on the loader path and /usr/local/cuda/lib64");
        goto done;
    }
    struct {
        void **slot;
        const char *name;
    } syms[] = {
        {(void **)&dnn.create, "cudnnCreate"},
        {(void **)&dnn.set_stream, "cudnnSetStream"},
        {(void **)&dnn.err, "cudnnGetErrorString"},
        {(void **)&dnn.tensor_create, "cudnnCreateTensorDescriptor"},
        {(void **)&dnn.tensor_set, "cudnnSetTensorNdDescriptor"},
        {(void **)&dnn.tensor_destroy, "cudnnDestroyTensorDescriptor"},
        {(void **)&dnn.filter_create, "cudnnCreateFilterDescriptor"},
        {(void **)&dnn.filter_set, "cudnnSetFilterNdDescriptor"},
        {(void **)&dnn.filter_destroy, "cudnnDestroyFilterDescriptor"},
        {(void **)&dnn.conv_create, "cudnnCreateConvolutionDescriptor"},
        {(void **)&dnn.conv_set, "cudnnSetConvolution2dDescriptor"},
        {(void **)&dnn.conv_groups, "cudnnSetConvolutionGroupCount"},
        {(void **)&dnn.conv_math, "cudnnSetConvolutionMathType"},
        {(void **)&dnn.conv_destroy, "cudnnDestroyConvolutionDescriptor"},
        {(void **)&dnn.get_algo[0], "cudnnGetConvolutionForwardAlgorithm_v7"},
        {(void **)&dnn.get_algo[1], "cudnnGetConvolutionBackwardDataAlgorithm_v7"},
        {(void **)&dnn.get_algo[2], "cudnnGetConvolutionBackwardFilterAlgorithm_v7"},
        {(void **)&dnn.ws_size[0], "cudnnGetConvolutionForwardWorkspaceSize"},
        {(void **)&dnn.ws_size[1], "cudnnGetConvolutionBackwardDataWorkspaceSize"},
        {(void **)&dnn.ws_size[2], "cudnnGetConvolutionBackwardFilterWorkspaceSize"},
        {(void **)&dnn.run[0], "cudnnConvolutionForward"},
        {(void **)&dnn.run[1], "cudnnConvolutionBackwardData"},
        {(void **)&dnn.run[2], "cudnnConvolutionBackwardFilter"},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++)
        if (!(*syms[i].slot = dlsym(h, syms[i].name))) {
            s = jn_error(JN_ERR_UNSUPPORTED,
                         "convolutions on CUDA need cuDNN 9, but the loaded libcudnn lacks %s (an older or "
                         "incomplete cuDNN): install cuDNN 9 or set JANUS_CUDNN_PATH to its libcudnn.so.9",
                         syms[i].name);
            dlclose(h);
            goto done;
        }
    __atomic_store_n(&dnn.loaded, 1, __ATOMIC_RELEASE);
done:
    pthread_mutex_unlock(&dnn.mu);
    return s;
}

/* ------------------------------------------------------------ geometry */
static int fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

jn_status jn_rt_cudnn_conv_geom(jn_rt_cudnn_conv *c, jn_dtype dt, const int64_t x[4], const int64_t w[4],
                                const int64_t stride[2], const int64_t pad[2], const int64_t dil[2], int64_t groups,
                                const char *op) {
    char s1[128], s2[128], s3[128];
    memset(c, 0, sizeof *c);
    if (dt != JN_F32 && dt != JN_F64 && dt != JN_F16 && dt != JN_BF16)
        return jn_error(JN_ERR_TYPE, "%s on CUDA: cuDNN convolves float32, float64, float16 and bfloat16 tensors, "
                        "not %s", op, jn_dtype_names[dt]);
    for (int i = 0; i < 2; i++)
        if (stride[i] <= 0 || pad[i] < 0 || dil[i] <= 0)
            return jn_error(JN_ERR_VALUE, "%s: stride and dilation must be positive and padding non-negative (got "
                            "stride [%lld, %lld], padding [%lld, %lld], dilation [%lld, %lld])", op,
                            (long long)stride[0], (long long)stride[1], (long long)pad[0], (long long)pad[1],
                            (long long)dil[0], (long long)dil[1]);
    if (groups <= 0 || w[0] % groups || w[1] * groups != x[1])
        return jn_error(JN_ERR_SHAPE, "%s: weight %s with groups=%lld does not fit input %s (weight[0] must be "
                        "divisible by groups and weight[1] * groups must equal the input's channels)", op,
                        jn_shape_str(4, w, s1, sizeof s1), (long long)groups, jn_shape_str(4, x, s2, sizeof s2));
    int64_t y[4] = {x[0], w[0], 0, 0};
    for (int i = 0; i < 2; i++) {
        int64_t ek = dil[i] * (w[2 + i] - 1) + 1, padded = x[2 + i] + 2 * pad[i];
        y[2 + i] = padded >= ek ? (padded - ek) / stride[i] + 1 : 0;
    }
    for (int i = 0; i < 4; i++)
        if (x[i] <= 0 || w[i] <= 0 || y[i] <= 0)
            return jn_error(JN_ERR_SHAPE, "%s on CUDA: input %s and weight %s give an empty convolution (output "
                            "%s); cuDNN takes non-empty tensors only", op, jn_shape_str(4, x, s1, sizeof s1),
                            jn_shape_str(4, w, s2, sizeof s2), jn_shape_str(4, y, s3, sizeof s3));
    const int64_t *dims[3] = {x, w, y};
    for (int t = 0; t < 3; t++) {
        int64_t n = 1;
        for (int i = 0; i < 4; i++) n = n > INT_MAX ? n : n * dims[t][i];
        if (n > INT_MAX)
            return jn_error(JN_ERR_UNSUPPORTED, "%s on CUDA: the %s %s has 2^31 elements or more, beyond cuDNN's "
                            "int sizes; split the batch", op, t == 0 ? "input" : t == 1 ? "weight" : "output",
                            jn_shape_str(4, dims[t], s1, sizeof s1));
    }
    for (int i = 0; i < 2; i++)
        if (!fits_int(stride[i]) || !fits_int(pad[i]) || !fits_int(dil[i]) || !fits_int(groups))
            return jn_error(JN_ERR_UNSUPPORTED, "%s on CUDA: stride/padding/dilation/groups beyond cuDNN's int range",
                            op);
    c->dtype = dt;
    for (int i = 0; i < 4; i++) c->x[i] = (int)x[i], c->w[i] = (int)w[i], c->y[i] = (int)y[i];
    c->xs[3] = c->ys[3] = 1;
    for (int i = 2; i >= 0; i--) {
        c->xs[i] = c->xs[i + 1] * c->x[i + 1];
        c->ys[i] = c->ys[i + 1] * c->y[i + 1];
    }
    for (int i = 0; i < 2; i++) c->pad[i] = (int)pad[i], c->stride[i] = (int)stride[i], c->dil[i] = (int)dil[i];
    c->groups = (int)groups;
    return JN_OK;
}

size_t jn_rt_cudnn_key(const jn_rt_cudnn_conv *c, int kind, char *buf, size_t n) {
    int k = snprintf(buf, n,
                     "%d:%d:x%d,%d,%d,%d/%d,%d,%d,%d:w%d,%d,%d,%d:y%d,%d,%d,%d/%d,%d,%d,%d:p%d,%d:s%d,%d:d%d,%d:g%d",
                     kind, c->dtype, c->x[0], c->x[1], c->x[2], c->x[3], c->xs[0], c->xs[1], c->xs[2], c->xs[3],
                     c->w[0], c->w[1], c->w[2], c->w[3], c->y[0], c->y[1], c->y[2], c->y[3], c->ys[0], c->ys[1],
                     c->ys[2], c->ys[3], c->pad[0], c->pad[1], c->stride[0], c->stride[1], c->dil[0], c->dil[1],
                     c->groups);
    return k < 0 ? 0 : (size_t)k;
}

/* ------------------------------------------------------------ the cache */
#define KEY_MAX JN_RT_CUDNN_KEY_MAX
static struct {
    pthread_mutex_t mu;
    struct {
        char key[KEY_MAX];
        int algo;
        size_t ws;
        double sec; /* what choosing it took (0 when imported without it) */
    } e[JN_RT_CUDNN_CACHE_SLOTS];
    int n, next; /* used slots; the slot a new key replaces when full */
} cache = {.mu = PTHREAD_MUTEX_INITIALIZER};

int jn_rt_cudnn_cache_get(const char *key, int *algo, size_t *workspace) {
    int hit = 0;
    pthread_mutex_lock(&cache.mu);
    for (int i = 0; i < cache.n && !hit; i++)
        if (!strcmp(cache.e[i].key, key)) {
            *algo = cache.e[i].algo;
            *workspace = cache.e[i].ws;
            hit = 1;
        }
    pthread_mutex_unlock(&cache.mu);
    return hit;
}

static void cache_put(const char *key, int algo, size_t workspace, double seconds) {
    if (strlen(key) >= KEY_MAX) return; /* never store a truncated key */
    pthread_mutex_lock(&cache.mu);
    int slot = -1;
    for (int i = 0; i < cache.n && slot < 0; i++)
        if (!strcmp(cache.e[i].key, key)) slot = i;
    if (slot < 0) {
        if (cache.n < JN_RT_CUDNN_CACHE_SLOTS) {
            slot = cache.n++;
        } else {
            slot = cache.next;
            cache.next = (cache.next + 1) % JN_RT_CUDNN_CACHE_SLOTS;
        }
    }
    snprintf(cache.e[slot].key, KEY_MAX, "%s", key);
    cache.e[slot].algo = algo;
    cache.e[slot].ws = workspace;
    cache.e[slot].sec = seconds;
    pthread_mutex_unlock(&cache.mu);
}

void jn_rt_cudnn_cache_put(const char *key, int algo, size_t workspace) { cache_put(key, algo, workspace, 0); }

int jn_rt_cudnn_cache_count(void) {
    pthread_mutex_lock(&cache.mu);
    int n = cache.n;
    pthread_mutex_unlock(&cache.mu);
    return n;
}

void jn_rt_cudnn_cache_clear(void) {
    pthread_mutex_lock(&cache.mu);
    cache.n = cache.next = 0;
    pthread_mutex_unlock(&cache.mu);
}

/* ------------------------------------------------ run.db rows (schema v5) */
int jn_rt_cudnn_cache_export(jn_rt_cudnn_entry *out, int cap) {
    pthread_mutex_lock(&cache.mu);
    int n = cache.n < cap ? cache.n : cap;
    for (int i = 0; i < n; i++) {
        snprintf(out[i].key, sizeof out[i].key, "%s", cache.e[i].key);
        out[i].algo = cache.e[i].algo;
        out[i].workspace = cache.e[i].ws;
        out[i].seconds = cache.e[i].sec;
    }
    pthread_mutex_unlock(&cache.mu);
    return n;
}

jn_status jn_rt_cudnn_key_parse(const char *key, jn_rt_cudnn_conv *c, int *kind) {
    jn_rt_cudnn_conv p;
    int k = -1, used = -1;
    memset(&p, 0, sizeof p);
    if (!key || strlen(key) >= KEY_MAX ||
        sscanf(key, "%d:%d:x%d,%d,%d,%d/%d,%d,%d,%d:w%d,%d,%d,%d:y%d,%d,%d,%d/%d,%d,%d,%d:p%d,%d:s%d,%d:d%d,%d:g%d%n",
               &k, &p.dtype, &p.x[0], &p.x[1], &p.x[2], &p.x[3], &p.xs[0], &p.xs[1], &p.xs[2], &p.xs[3], &p.w[0],
               &p.w[1], &p.w[2], &p.w[3], &p.y[0], &p.y[1], &p.y[2], &p.y[3], &p.ys[0], &p.ys[1], &p.ys[2],
               &p.ys[3], &p.pad[0], &p.pad[1], &p.stride[0], &p.stride[1], &p.dil[0], &p.dil[1], &p.groups,
               &used) != 29 || used < 0 || key[used])
        return jn_error(JN_ERR_VALUE, "cuDNN algorithm key '%.120s' is not a convolution key (want "
                        "pass:dtype:xN,C,H,W/strides:wO,C,kh,kw:yN,O,H,W/strides:pH,W:sH,W:dH,W:gG as "
                        "jn_rt_cudnn_key writes it)", key ? key : "(null)");
    char again[KEY_MAX + 1];
    jn_rt_cudnn_key(&p, k, again, sizeof again);
    if (strcmp(again, key)) /* e.g. "+1" or " 1": text scanf takes but never writes */
        return jn_error(JN_ERR_VALUE, "cuDNN algorithm key '%.120s' is not in canonical form ('%.120s')", key, again);
    if (k < JN_RT_CUDNN_FWD || k > JN_RT_CUDNN_BWD_FILTER ||
        (p.dtype != JN_F32 && p.dtype != JN_F64 && p.dtype != JN_F16 && p.dtype != JN_BF16))
        return jn_error(JN_ERR_VALUE, "cuDNN algorithm key '%.120s' names pass %d and dtype %d; passes are 0-2 and "
                        "dtypes float32/float64/float16/bfloat16", key, k, p.dtype);
    /* the sizes and strides must be the ones the geometry gives */
    int64_t x[4], w[4], st[2], pad[2], dil[2];
    for (int i = 0; i < 4; i++) x[i] = p.x[i], w[i] = p.w[i];
    for (int i = 0; i < 2; i++) st[i] = p.stride[i], pad[i] = p.pad[i], dil[i] = p.dil[i];
    jn_rt_cudnn_conv g;
    if (jn_rt_cudnn_conv_geom(&g, (jn_dtype)p.dtype, x, w, st, pad, dil, p.groups, "cuDNN algorithm key") ||
        memcmp(&g, &p, sizeof g))
        return jn_error(JN_ERR_VALUE, "cuDNN algorithm key '%.120s' is not a consistent convolution (its output "
                        "size or strides do not follow from input, weight and attributes)", key);
    if (c) *c = p;
    if (kind) *kind = k;
    return JN_OK;
}

jn_status jn_rt_cudnn_cache_import(const jn_rt_cudnn_entry *rows, int n, const char *where) {
    if (n < 0 || (n && !rows)) return jn_error(JN_ERR_VALUE, "jn_rt_cudnn_cache_import: bad row array (%d rows)", n);
    /* all or nothing: every row is checked before the first is used */
    for (int i = 0; i < n; i++) {
        char why[300] = "";
        if (jn_rt_cudnn_key_parse(rows[i].key, NULL, NULL)) snprintf(why, sizeof why, "%s", jn_errmsg());
        else if (rows[i].algo < 0 || rows[i].algo >= JN_RT_CUDNN_MAX_ALGO)
            snprintf(why, sizeof why, "algorithm number %d outside [0, %d)", rows[i].algo, JN_RT_CUDNN_MAX_ALGO);
        else if (!(rows[i].seconds >= 0)) snprintf(why, sizeof why, "seconds %g not >= 0", rows[i].seconds);
        if (*why)
            return jn_error(JN_ERR_VALUE, "%s: cuDNN algorithm row %d refused, nothing imported: %s; delete the "
                            "store's algos rows (DELETE FROM algos) and the choices are made again",
                            where ? where : "cuDNN algorithm rows", i, why);
    }
    for (int i = 0; i < n; i++) cache_put(rows[i].key, rows[i].algo, rows[i].workspace, rows[i].seconds);
    return JN_OK;
}

size_t jn_rt_cudnn_device_name(const char *gpu, int major, int minor, char *buf, size_t n) {
    int k = snprintf(buf, n, "%s sm_%d%d", gpu && *gpu ? gpu : "unnamed GPU", major, minor);
    return k < 0 ? 0 : (size_t)k;
}

jn_status jn_rt_cudnn_device(char *buf, size_t n) {
    const char *why = NULL;
    if (jn_cuda_device_count(&why) <= 0)
        return jn_error(JN_ERR_UNSUPPORTED, "cuDNN algorithm cache: %s", why ? why : "no CUDA device");
    struct cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, 0); /* the backend runs on device 0 */
    if (e != cudaSuccess)
        return jn_error(JN_ERR_RUNTIME, "CUDA error in cudaGetDeviceProperties (device 0, naming the GPU for the "
                        "cuDNN algorithm cache): %s", cudaGetErrorString(e));
    p.name[sizeof p.name - 1] = 0;
    jn_rt_cudnn_device_name(p.name, p.major, p.minor, buf, n);
    return JN_OK;
}

int jn_rt_cudnn_pick(const jn_rt_cudnn_choice *perf, int n, int kind, jn_dtype dt) {
    int full = dt == JN_F32 || dt == JN_F64; /* no TF32: FMA-only algorithms */
    int first = -1;
    for (int i = 0; i < n; i++) {
        if (perf[i].status != JN_CUDNN_STATUS_SUCCESS) continue;
        if (full && (perf[i].math == JN_CUDNN_TENSOR_OP_MATH || perf[i].math == JN_CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION))
            continue;
        if (kind == JN_RT_CUDNN_FWD || perf[i].determinism == JN_CUDNN_DETERMINISTIC) return perf[i].algo;
        if (first < 0) first = perf[i].algo;
    }
    return first;
}

/* ------------------------------------------------------------ running */
#define DNN(call, what)                                                                                            \
    do {                                                                                                           \
        st_t st_ = (call);                                                                                         \
        if (st_ != JN_CUDNN_STATUS_SUCCESS) {                                                                      \
            s = jn_error(JN_ERR_RUNTIME, "cuDNN error in %s (%s %s, input %s, weight %s): %s (status %d)", #call,  \
                         op, (what), jn_shape_str(4, x64, s1, sizeof s1), jn_shape_str(4, w64, s2, sizeof s2),     \
                         dnn.err(st_), st_);                                                                       \
            goto done;                                                                                             \
        }                                                                                                          \
    } while (0)

static int data_type(int dt) {
    switch (dt) {
    case JN_F64: return JN_CUDNN_DATA_DOUBLE;
    case JN_F16: return JN_CUDNN_DATA_HALF;
    case JN_BF16: return JN_CUDNN_DATA_BFLOAT16;
    default: return JN_CUDNN_DATA_FLOAT;
    }
}

jn_status jn_rt_cudnn_conv_run(int kind, const jn_rt_cudnn_conv *c, void *stream, const void *a, const void *b,
                               void *out, const jn_rt_cudnn_ws *ws, const char *op) {
    jn_status s = jn_rt_cudnn_load();
    if (s) return s;
    char s1[96], s2[96];
    int64_t x64[4], w64[4];
    for (int i = 0; i < 4; i++) x64[i] = c->x[i], w64[i] = c->w[i];
    hnd xd = NULL, yd = NULL, wd = NULL, cd = NULL;
    void *token = NULL, *wsp = NULL;
    const char *what = pass_name[kind];
    /* one handle for the process, bound to the single compute stream */
    pthread_mutex_lock(&dnn.mu);
    if (!dnn.handle) {
        hnd h = NULL;
        st_t st = dnn.create(&h);
        if (st == JN_CUDNN_STATUS_SUCCESS) st = dnn.set_stream(h, stream);
        if (st != JN_CUDNN_STATUS_SUCCESS)
            s = jn_error(JN_ERR_RUNTIME, "cuDNN error in cudnnCreate/cudnnSetStream (%s): %s (status %d)", op,
                         dnn.err(st), st);
        else dnn.handle = h;
    }
    pthread_mutex_unlock(&dnn.mu);
    if (s) return s;
    int ty = data_type(c->dtype), ct = c->dtype == JN_F64 ? JN_CUDNN_DATA_DOUBLE : JN_CUDNN_DATA_FLOAT;
    int full = c->dtype == JN_F32 || c->dtype == JN_F64;
    DNN(dnn.tensor_create(&xd), what);
    DNN(dnn.tensor_create(&yd), what);
    DNN(dnn.filter_create(&wd), what);
    DNN(dnn.conv_create(&cd), what);
    DNN(dnn.tensor_set(xd, ty, 4, c->x, c->xs), what);
    DNN(dnn.tensor_set(yd, ty, 4, c->y, c->ys), what);
    DNN(dnn.filter_set(wd, ty, JN_CUDNN_TENSOR_NCHW, 4, c->w), what);
    DNN(dnn.conv_set(cd, c->pad[0], c->pad[1], c->stride[0], c->stride[1], c->dil[0], c->dil[1],
                     JN_CUDNN_CROSS_CORRELATION, ct), what);
    DNN(dnn.conv_groups(cd, c->groups), what);
    DNN(dnn.conv_math(cd, full ? JN_CUDNN_FMA_MATH : JN_CUDNN_TENSOR_OP_MATH), what);
    /* descriptor order of each pass's calls */
    hnd d1 = kind == JN_RT_CUDNN_FWD ? xd : kind == JN_RT_CUDNN_BWD_DATA ? wd : xd;
    hnd d2 = kind == JN_RT_CUDNN_FWD ? wd : yd;
    hnd d3 = kind == JN_RT_CUDNN_FWD ? yd : kind == JN_RT_CUDNN_BWD_DATA ? xd : wd;
    char key[KEY_MAX + 1];
    int algo = -1;
    size_t wsize = 0;
    jn_rt_cudnn_key(c, kind, key, sizeof key);
    if (!jn_rt_cudnn_cache_get(key, &algo, &wsize)) {
        jn_cudnn_perf perf[16];
        jn_rt_cudnn_choice ch[16];
        int got = 0, oom = 0;
        double t0 = jn_rt_seconds();
        memset(perf, 0, sizeof perf);
        DNN(dnn.get_algo[kind](dnn.handle, d1, d2, cd, d3, 16, &got, perf), what);
        got = got < 16 ? got : 16;
        for (int i = 0; i < got; i++)
            ch[i] = (jn_rt_cudnn_choice){perf[i].algo, perf[i].status, perf[i].determinism, perf[i].mathType};
        /* the preferred algorithm whose workspace can be had: one that
         * fails to allocate is dropped and the next one tried */
        for (;;) {
            if ((algo = jn_rt_cudnn_pick(ch, got, kind, c->dtype)) < 0) {
                if (oom) s = JN_ERR_NOMEM; /* the allocator's message names the size */
                else
                    s = jn_error(JN_ERR_UNSUPPORTED, "%s on CUDA: cuDNN offers no %salgorithm for the %s pass of "
                                 "input %s with weight %s; run it on the cpu", op, full ? "non-TF32 " : "", what,
                                 jn_shape_str(4, x64, s1, sizeof s1), jn_shape_str(4, w64, s2, sizeof s2));
                goto done;
            }
            DNN(dnn.ws_size[kind](dnn.handle, d1, d2, cd, d3, algo, &wsize), what);
            if (!wsize || (wsp = ws->alloc(wsize, &token))) break;
            oom = 1;
            for (int i = 0; i < got; i++)
                if (ch[i].algo == algo) ch[i].status = -1;
        }
        cache_put(key, algo, wsize, jn_rt_seconds() - t0);
    } else if (wsize && !(wsp = ws->alloc(wsize, &token))) {
        s = JN_ERR_NOMEM; /* the allocator set the message */
        goto done;
    }
    double ad = 1, bd = 0;
    float af = 1, bf = 0;
    const void *alpha = c->dtype == JN_F64 ? (const void *)&ad : (const void *)&af;
    const void *beta = c->dtype == JN_F64 ? (const void *)&bd : (const void *)&bf;
    /* FWD (x, w) -> y; BWD_DATA (w, dy) -> dx; BWD_FILTER (x, dy) -> dw */
    hnd r1 = kind == JN_RT_CUDNN_BWD_DATA ? wd : xd, r2 = kind == JN_RT_CUDNN_FWD ? wd : yd;
    const void *p1 = kind == JN_RT_CUDNN_FWD ? a : b, *p2 = kind == JN_RT_CUDNN_FWD ? b : a;
    DNN(dnn.run[kind](dnn.handle, alpha, r1, p1, r2, p2, cd, algo, wsp, wsize, beta, d3, out), what);
done:
    /* the workspace block goes back to the cache: later work on the one
     * stream is queued after this convolution, so reuse is safe */
    if (token) ws->release(token);
    if (cd) dnn.conv_destroy(cd);
    if (wd) dnn.filter_destroy(wd);
    if (yd) dnn.tensor_destroy(yd);
    if (xd) dnn.tensor_destroy(xd);
    return s;
}
