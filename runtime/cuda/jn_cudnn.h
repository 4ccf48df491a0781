/* jn_cudnn.h -- the CUDA backend's convolutions through cuDNN
 * (runtime/cuda/cudnn.c): conv2d forward, its input gradient and its weight
 * gradient, with cuDNN's legacy (v7-style) API.
 *
 * The host-side half -- geometry checked and turned into the int dims and
 * strides cuDNN's descriptors take, the algorithm-cache key and the cache
 * itself -- touches no GPU and no cuDNN, so tests/c/test_backend.c runs it
 * for real on any machine.  This header includes no CUDA header: the stream
 * is a void pointer.
 */
#ifndef JN_CUDNN_H
#define JN_CUDNN_H

#include "jn_runtime.h"

#include <stddef.h>

/* One 2-D convolution as cuDNN sees it: NCHW input x, filter w [O, C/G, kh,
 * kw], output y, packed (contiguous) strides, all in cuDNN's ints. */
typedef struct {
    int dtype; /* jn_dtype of x, w and y: float32, float64, float16 or bfloat16 */
    int x[4], w[4], y[4];
    int xs[4], ys[4];
    int pad[2], stride[2], dil[2], groups;
} jn_rt_cudnn_conv;

/* The three convolution passes. */
enum { JN_RT_CUDNN_FWD, JN_RT_CUDNN_BWD_DATA, JN_RT_CUDNN_BWD_FILTER };

/* Fills c from an NCHW input size x, a filter size w and the attributes;
 * `op` names the caller in errors.  Fails (JN_ERR_SHAPE / JN_ERR_VALUE /
 * JN_ERR_UNSUPPORTED) on inconsistent shapes, an empty output, a dtype
 * cuDNN does not take, or a size beyond cuDNN's int range. */
jn_status jn_rt_cudnn_conv_geom(jn_rt_cudnn_conv *c, jn_dtype dt, const int64_t x[4], const int64_t w[4],
                                const int64_t stride[2], const int64_t pad[2], const int64_t dil[2], int64_t groups,
                                const char *op);

/* The algorithm-cache key of a pass over c: every field that changes
 * cuDNN's choice (kind, dtype, sizes, strides, padding, stride, dilation,
 * groups) as text; returns its length (truncated keys are never cached). */
size_t jn_rt_cudnn_key(const jn_rt_cudnn_conv *c, int kind, char *buf, size_t n);

/* The in-process algorithm cache (a small table, the least recently
 * stored entry replaced when full): get returns 1 and the algorithm and
 * workspace size when the key is there. */
#define JN_RT_CUDNN_CACHE_SLOTS 64
int jn_rt_cudnn_cache_get(const char *key, int *algo, size_t *workspace);
void jn_rt_cudnn_cache_put(const char *key, int algo, size_t workspace);
int jn_rt_cudnn_cache_count(void);
void jn_rt_cudnn_cache_clear(void);

/* ---- the cache as run.db rows (db/jn_db.h algos, schema v5) ----
 * Key text: jn_rt_cudnn_key's, "pass:dtype:xN,C,H,W/xstrides:wO,C/G,kh,kw:
 * yN,O,H,W/ystrides:pH,W:sH,W:dH,W:gG" with pass 0 forward, 1 backward
 * data, 2 backward filter and dtype the jn_dtype number (stable: the event
 * codec stores the same numbers). */
#define JN_RT_CUDNN_KEY_MAX 400 /* > the longest key: 29 ints of up to 11 characters and separators */
#define JN_RT_CUDNN_MAX_ALGO 64 /* cuDNN 9 has fewer than 10 per pass: a larger number is damage */
typedef struct {
    char key[JN_RT_CUDNN_KEY_MAX];
    int algo;
    size_t workspace;
    double seconds; /* what choosing took (heuristics + workspace query), 0 if unknown */
} jn_rt_cudnn_entry;
/* Copies up to cap cache entries into out; returns how many. */
int jn_rt_cudnn_cache_export(jn_rt_cudnn_entry *out, int cap);
/* Parses a key back (c and kind may be NULL); JN_ERR_VALUE naming the key
 * unless it is canonical text of a consistent convolution. */
jn_status jn_rt_cudnn_key_parse(const char *key, jn_rt_cudnn_conv *c, int *kind);
/* Puts rows into the cache, where later convolutions take them as hits
 * (no cudnnGet*Algorithm call).  All or nothing: a row with a damaged key,
 * an algorithm outside [0, JN_RT_CUDNN_MAX_ALGO) or negative seconds is
 * refused with JN_ERR_VALUE naming `where` (e.g. the store's path), the
 * row and the fix.  More rows than JN_RT_CUDNN_CACHE_SLOTS: the last ones
 * stay. */
jn_status jn_rt_cudnn_cache_import(const jn_rt_cudnn_entry *rows, int n, const char *where);
/* The device string rows are filed under: "<GPU name> sm_<major><minor>"
 * ("NVIDIA H200 sm_90"); _name formats it (host-only, for tests), _device
 * asks CUDA about device 0: JN_ERR_UNSUPPORTED (with the reason) without
 * a GPU. */
size_t jn_rt_cudnn_device_name(const char *gpu, int major, int minor, char *buf, size_t n);
jn_status jn_rt_cudnn_device(char *buf, size_t n);

/* Choose the algorithm from cuDNN's perf list (n entries of status,
 * determinism, math type): the first that succeeded, skipping tensor-op
 * (TF32) entries for float32/float64 and, for the backward passes,
 * preferring a deterministic one.  -1 when none succeeded.  Host-only
 * logic, exposed for the test. */
typedef struct {
    int algo, status, determinism, math;
} jn_rt_cudnn_choice;
int jn_rt_cudnn_pick(const jn_rt_cudnn_choice *perf, int n, int kind, jn_dtype dt);

/* dlopen libcudnn (JANUS_CUDNN_PATH when set -- then only that file --
 * else libcudnn.so.9 from the loader path or /usr/local/cuda) once;
 * JN_ERR_UNSUPPORTED naming libcudnn and the fix when it is missing. */
jn_status jn_rt_cudnn_load(void);

/* Device workspace from the caller's allocator (the CUDA caching allocator). */
typedef struct {
    void *(*alloc)(size_t nbytes, void **token);
    void (*release)(void *token);
} jn_rt_cudnn_ws;

/* Runs one pass on `stream` (out = the pass of a and b, beta 0):
 *   FWD        a = x,  b = w, out = y
 *   BWD_DATA   a = dy, b = w, out = dx
 *   BWD_FILTER a = dy, b = x, out = dw
 * Every cuDNN status is checked and named with the call and `op`. */
jn_status jn_rt_cudnn_conv_run(int kind, const jn_rt_cudnn_conv *c, void *stream, const void *a, const void *b,
                               void *out, const jn_rt_cudnn_ws *ws, const char *op);

#endif
