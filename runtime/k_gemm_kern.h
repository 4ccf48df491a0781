/* k_gemm_kern.h -- private to k_gemm.c and k_gemm_avx2.c: the three
 * routines a small-product kernel family provides, so one driver
 * (k_gemm.c's small_gemm: the plan, the thread bands, the scratch) runs
 * either family.  Both accumulate every element of C by the same chain of
 * FMAs in order of k from the same start (0, C or bias), so for a given
 * plan the AVX2 and AVX-512 families give the same bits; only the vector
 * width and register tiles differ.
 */
#ifndef JN_K_GEMM_KERN_H
#define JN_K_GEMM_KERN_H

#include <stdint.h>

typedef struct {
    /* C[M,N] = (acc ? (bias ? bias rows : C) : 0) + A @ B; A(i,k) at
     * A[i*ars + k*acs], B row-major with unit stride along N */
    void (*nn)(int64_t M, int64_t N, int64_t K, const float *A, int64_t ars, int64_t acs, const float *B,
               int64_t ldb, float *C, int64_t ldc, int acc, const float *bias);
    /* columns [j0, j1) of C[mr x N] = start + A @ B^T for mr <= 12, B [N x K]
     * row-major, its blocks transposed in registers (the bits of nn over B^T) */
    void (*nt_rows)(int mr, int64_t j0, int64_t j1, int64_t K, const float *A, int64_t ars, int64_t acs,
                    const float *B, int64_t ldb, float *C, int64_t ldc, int acc, const float *bias);
    /* dst[Cn x R] = src[R x Cn]^T (+ dst when acc, + bias[R] rows instead when bias) */
    void (*transpose)(const float *src, int64_t lds, int64_t R, int64_t Cn, float *dst, int64_t ldd, int acc,
                      const float *bias);
    int nt_cols; /* nt_rows' column block: thread bands are cut at multiples of it */
} jn_rt_sg_kernels;

#if defined(__x86_64__) && defined(__GNUC__)
extern const jn_rt_sg_kernels jn_rt_sg_avx2; /* k_gemm_avx2.c: CPUs with AVX2 and FMA */
#endif

#endif
