/* jn_cuda.h -- what the CUDA backend's host code (cuda_backend.c, C11) and
 * its kernels (kernels.cu, CUDA C++) share: the strided iterator handed to
 * every elementwise kernel by value, the kernel parameters, and the
 * extern "C" launchers.
 *
 * A launcher enqueues its kernel on the given stream and returns the launch
 * status (cudaGetLastError), never synchronizing; the host code turns a
 * failure into a jn_error naming the kernel and the op.  Operands are
 * described by element strides (0 along broadcast dims) and a dtype number
 * (jn_dtype), so one kernel serves every layout and dtype.
 */
#ifndef JN_CUDA_H
#define JN_CUDA_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define JN_CU_MAXOPS 4 /* operands of one elementwise kernel: the output + 3 inputs */
#define JN_CU_MAXDIMS 8 /* == JN_MAX_DIMS */

typedef struct {
    int ndim, nops;
    int64_t n;                                   /* elements (product of shape) */
    int64_t shape[JN_CU_MAXDIMS];
    int64_t stride[JN_CU_MAXOPS][JN_CU_MAXDIMS]; /* elements; operand 0 is the output */
    char *ptr[JN_CU_MAXOPS];                     /* element 0 of each operand (device) */
    int dtype[JN_CU_MAXOPS];                     /* jn_dtype */
    /* operand k is a host scalar passed by value when bit k is set (ptr
     * unused): imm_f for float math, imm_i for integer math */
    unsigned imm;
    double imm_f[JN_CU_MAXOPS];
    int64_t imm_i[JN_CU_MAXOPS];
} jn_cu_iter;

/* Per-op scalars: alpha (add/sub), rounding mode / gelu approximation /
 * masked_fill value / clamp bounds, as the CPU kernels read them. */
typedef struct {
    double f0, f1;
    int64_t i0;
    int b0, b1;
} jn_cu_params;

/* The type elementwise math runs in (PyTorch's: half types compute in float). */
enum { JN_CU_F32 = 0, JN_CU_F64 = 1, JN_CU_I64 = 2 };

/* out = op(inputs) over it (operand 0 = output), math in type ct. */
cudaError_t jn_cu_ew(int op, int ct, const jn_cu_iter *it, const jn_cu_params *p, cudaStream_t s);
/* operand 0 <- operand 1, converting dtypes (casts, copies, contiguous). */
cudaError_t jn_cu_copy(const jn_cu_iter *it, cudaStream_t s);
/* every element of operand 0 <- v (ints from iv when the dtype is integral). */
cudaError_t jn_cu_fill(const jn_cu_iter *it, double v, int64_t iv, cudaStream_t s);
/* out[i] = start + i * step (contiguous, n elements); ints in int64 math when is_int. */
cudaError_t jn_cu_arange(void *out, int dtype, int64_t n, double start, double step, int is_int, cudaStream_t s);
/* out[i, j] = i == j over a contiguous [n, m]. */
cudaError_t jn_cu_eye(void *out, int dtype, int64_t n, int64_t m, cudaStream_t s);
/* Reduce a contiguous [outer, inner] over inner: op is JN_OP_sum/prod/amax/amin/all/any
 * (mean: sum with scale 1/inner); accumulates in ct. */
cudaError_t jn_cu_reduce(int op, int ct, const void *in, int in_dtype, void *out, int out_dtype, int64_t outer,
                         int64_t inner, double scale, cudaStream_t s);
/* Max (is_max) or min of each row of a contiguous [outer, inner] with its
 * index (first occurrence; NaN wins): values (input dtype) to vout unless
 * NULL, int64 indices to iout. */
cudaError_t jn_cu_argreduce(int is_max, int ct, const void *in, int in_dtype, void *vout, int64_t *iout,
                            int64_t outer, int64_t inner, cudaStream_t s);
/* (log_)softmax over the rows of a contiguous [outer, inner] (float dtypes, math in ct). */
cudaError_t jn_cu_softmax(const void *in, void *out, int dtype, int ct, int64_t outer, int64_t inner, int log,
                          cudaStream_t s);
/* Philox draws into a contiguous out of n elements: kind 0 = rand (float
 * dtypes), 1 = dropout_mask (bool, keep = U24 >= p). */
cudaError_t jn_cu_random(int kind, void *out, int dtype, int64_t n, uint64_t seed, uint64_t offset, double p,
                         cudaStream_t s);
/* gather along dim: out (contiguous, shape = index shape) from x by index
 * (int64, strided).  scatter_add: out[..index..] += src (out already holds
 * x; float dtypes; atomics).  Strides in elements. */
cudaError_t jn_cu_gather(const jn_cu_iter *it, int dim, const int64_t *xstride, const char *x, int64_t xdim_size,
                         int *bad_index, cudaStream_t s);
cudaError_t jn_cu_scatter_add(const jn_cu_iter *it, int dim, const int64_t *ostride, char *out,
                              int64_t odim_size, cudaStream_t s);
/* The fused optimizer updates (runtime/k_fused.c's formulas), contiguous float32/float64. */
cudaError_t jn_cu_adam(void *p, void *m, void *v, const void *g, int f64, int64_t n, const double *c, int decoupled,
                       int maximize, int has_wd, cudaStream_t s);
cudaError_t jn_cu_sgd(void *p, void *buf, const void *g, int f64, int64_t n, const double *c, int maximize,
                      int has_wd, int nesterov, int first, cudaStream_t s);

/* Pooling geometry: planes = N*C (batch, channel) pairs; x read with the
 * element strides sn, sc (per batch, channel) and xh, xw; gs / is: element
 * strides of grad_out / indices as [N, C, OH, OW] (backward passes).
 * Outputs and dx are contiguous. */
typedef struct {
    int64_t planes, C, H, W, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw;
    int64_t sn, sc, xh, xw;
    int64_t gs[4], is[4];
    int count_include_pad;
} jn_cu_pool;

/* max_pool2d values (x's dtype) and int64 indices; avg_pool2d (adaptive 0)
 * or adaptive_avg_pool2d (1). */
cudaError_t jn_cu_maxpool(const jn_cu_pool *p, const void *x, int dtype, void *val, int64_t *idx, cudaStream_t s);
cudaError_t jn_cu_avgpool(const jn_cu_pool *p, int adaptive, const void *x, int dtype, void *out, cudaStream_t s);
/* Backward passes in float32 (f64 = 0) or float64: avg/adaptive gather into
 * every dx element; max scatters (dx zeroed first), an index outside the
 * plane sets *bad. */
cudaError_t jn_cu_avgpool_bwd(const jn_cu_pool *p, int adaptive, const void *g, int f64, void *dx, cudaStream_t s);
cudaError_t jn_cu_maxpool_bwd(const jn_cu_pool *p, const void *g, const int64_t *idx, int f64, void *dx, int *bad,
                              cudaStream_t s);
/* The fused RNN cells (runtime/k_fused.c), kind 0 lstm_cell, 1
 * lstm_cell_backward, 2 gru_cell, 3 gru_cell_backward: in/out are the op's
 * contiguous inputs/outputs in table order, rows x H elements of state. */
cudaError_t jn_cu_cell(int kind, int f64, int64_t rows, int64_t H, const void *const *in, void *const *out,
                       cudaStream_t s);
/* logsumexp over the rows of a contiguous [outer, inner]. */
cudaError_t jn_cu_logsumexp(const void *in, int in_dtype, void *out, int out_dtype, int64_t outer, int64_t inner,
                            cudaStream_t s);
/* linspace into a contiguous out (start/end/step already rounded as the CPU does). */
cudaError_t jn_cu_linspace(void *out, int dtype, int64_t steps, int64_t half, double start, double end, double step,
                           cudaStream_t s);
/* scatter: it over the index's shape with dim's extent 1 (operand 0 src,
 * 1 index); each thread walks one row of L entries (index / src strides
 * istr / sstr along dim) in order.  A bad index sets *bad. */
cudaError_t jn_cu_scatter(const jn_cu_iter *it, int dim, int64_t L, int64_t istr, int64_t sstr,
                          const int64_t *ostride, char *out, int64_t odim_size, int *bad, cudaStream_t s);
/* one_hot: operand 1 of it = the classes (operand 0 unused); out zeroed [n, C]. */
cudaError_t jn_cu_one_hot(const jn_cu_iter *it, int64_t C, int64_t *out, int *bad, cudaStream_t s);
/* Advanced indexing through int64 element offsets into x (operand 1):
 * mode 0 operand 0 <- x[off], 1 x[off] <- operand 0, 2 x[off] += operand 0. */
cudaError_t jn_cu_index_offsets(int mode, const jn_cu_iter *it, void *x, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
