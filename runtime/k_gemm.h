/* k_gemm.h -- the float32 GEMM entry point of the runtime's kernels.
 *
 * jn_rt_sgemm has cblas_sgemm's row-major contract and is what k_linalg.c,
 * k_conv.c and k_grad.c call instead of it: small products (the per-time-
 * step GEMMs of an eager RNN, a small batch through a layer) run on an
 * AVX-512 or AVX2 kernel without OpenBLAS's packing and call overhead, everything
 * else goes to OpenBLAS.  See k_gemm.c for when which is used.
 */
#ifndef JN_K_GEMM_H
#define JN_K_GEMM_H

#include <stdint.h>

/* C[M,N] = alpha * op(A)[M,K] @ op(B)[K,N] + beta * C, all row-major with
 * leading dims lda/ldb/ldc (elements); op(X) = X^T when tX is nonzero.
 * beta == 0 never reads C (nan/inf in it do not propagate), as in BLAS.
 * Dims must fit an int (the callers check); M, N or K may be 0. */
void jn_rt_sgemm(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                 const float *B, int64_t ldb, float beta, float *C, int64_t ldc);

/* C[M,N] = op(A) @ op(B) + bias (bias[N] contiguous, added to every row):
 * linear's x W^T + b.  The same values as copying bias into each row of C
 * and calling jn_rt_sgemm with beta 1, without that copy. */
void jn_rt_sgemm_bias(int ta, int tb, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                      int64_t ldb, const float *bias, float *C, int64_t ldc);

/* 1 when jn_rt_sgemm_bias / jn_rt_sgemm with tb (op(B) = B^T) make every
 * element of this product as the same product over a B^T made beforehand
 * (tb = 0) does: the same FMAs in order of k from the same start, so the
 * same bits.  Only for the small kernel's plans that read op(B) as NN (a
 * few rows, or B packed); 0 for its C^T plan and for OpenBLAS.  linear
 * (k_linalg.c) reads a weight laid out transposed this way and else copies
 * it back, so its bits do not depend on the weight's layout. */
int jn_rt_sgemm_nt_is_nn(int ta, int64_t M, int64_t N, int64_t K);

/* dst[cols x rows] = src[rows x cols]^T, 32-bit elements copied as they are
 * (row strides lds and ldd): the small kernel's blocked transpose; 0 when
 * this CPU has none (the caller copies element by element). */
int jn_rt_stranspose(const float *src, int64_t lds, int64_t rows, int64_t cols, float *dst, int64_t ldd);

/* The small-product kernel alone (no OpenBLAS fallback), for tests: 0 when
 * this CPU or these arguments are outside what it supports. */
int jn_rt_sgemm_small(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                      const float *B, int64_t ldb, float beta, float *C, int64_t ldc);

/* Which kernel small products use: the best this CPU has (JN_SGEMM_AVX512
 * with AVX-512F, else JN_SGEMM_AVX2 with AVX2 and FMA, else
 * JN_SGEMM_OPENBLAS) at most cap.  cap < 0 only asks; JANUS_GEMM_KERNEL
 * sets the first cap, and benchmarks and tests set lower ones to time or
 * check OpenBLAS or the AVX2 family in the same process (a process-wide
 * level: eager and the graphs it runs use the same kernel for a shape).
 * Both families give the same bits (k_gemm_kern.h).  Returns the level now
 * in use.  JN_SGEMM_KERNEL: no cap. */
enum { JN_SGEMM_OPENBLAS, JN_SGEMM_AVX2, JN_SGEMM_AVX512, JN_SGEMM_KERNEL = JN_SGEMM_AVX512 };
int jn_rt_sgemm_level(int cap);

#endif
