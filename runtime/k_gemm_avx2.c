/* k_gemm_avx2.c -- the small-product kernels of k_gemm.c for CPUs with
 * AVX2 and FMA but no AVX-512 (vectors of 8 floats, 16 registers).
 *
 * The same three routines as the AVX-512 family, driven by the same plan
 * (k_gemm.c's small_gemm): register tiles C[MR x 8*NV] += A @ B with each A
 * element broadcast from memory (4x24, 6x16 and 12x8 tiles: 12-14 of the
 * 16 registers hold accumulators), and for x @ W^T with at most 12 rows
 * W's 8 x 8 blocks transposed in registers as they are read.  Each element
 * of C is the same FMA chain in order of k from the same start as in the
 * AVX-512 kernels, so both families give the same bits for a given plan
 * (tests/c/test_gemm.c checks that where both run) and eager and a graph
 * making the same product agree whichever this CPU runs.
 *
 * An earlier port (history.md, "the AVX2 port") was at parity with
 * OpenBLAS's Haswell kernels on products of LSTM-training size; what it
 * wins is the per-call cost on the tiny per-time-step products of a small
 * batch (benchmarks/results/graph_small.md).
 */
#include "k_gemm_kern.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define TGT __attribute__((target("avx2,fma")))
#define INL __attribute__((always_inline)) static inline

/* Lanes [0, n) of an 8-float vector, as a maskload/maskstore mask. */
TGT INL __m256i lanes(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n >= 8 ? 8 : n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* ------------------------------------------------------------- kernel */
/* C[MR x NV*8] = start + A[MR x K] @ B[K x NV*8]; the last vector of each
 * row is masked by m (start and the arguments as k_gemm.c's tile). */
TGT INL void tile(const int MR, const int NV, __m256i m, int64_t K, const float *A, int64_t ars, int64_t acs,
                  const float *B, int64_t ldb, float *C, int64_t ldc, int acc, const float *bias) {
    __m256 c[12][3];
#pragma GCC unroll 12
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 3
        for (int v = 0; v < NV; v++) {
            const float *p = bias ? bias + 8 * v : C + r * ldc + 8 * v;
            c[r][v] = !acc ? _mm256_setzero_ps() : v == NV - 1 ? _mm256_maskload_ps(p, m) : _mm256_loadu_ps(p);
        }
    for (int64_t k = 0; k < K; k++) {
        __m256 b[3];
        const float *bk = B + k * ldb, *ak = A + k * acs;
#pragma GCC unroll 3
        for (int v = 0; v < NV; v++)
            b[v] = v == NV - 1 ? _mm256_maskload_ps(bk + 8 * v, m) : _mm256_loadu_ps(bk + 8 * v);
#pragma GCC unroll 12
        for (int r = 0; r < MR; r++) {
            __m256 a = _mm256_broadcast_ss(ak + r * ars);
#pragma GCC unroll 3
            for (int v = 0; v < NV; v++) c[r][v] = _mm256_fmadd_ps(a, b[v], c[r][v]);
        }
    }
#pragma GCC unroll 12
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 3
        for (int v = 0; v < NV; v++) {
            if (v == NV - 1) _mm256_maskstore_ps(C + r * ldc + 8 * v, m, c[r][v]);
            else _mm256_storeu_ps(C + r * ldc + 8 * v, c[r][v]);
        }
}

#define TILE_ARGS __m256i m, int64_t K, const float *A, int64_t ars, int64_t acs, const float *B, int64_t ldb, \
                  float *C, int64_t ldc, int acc, const float *bias
#define T(MR, NV) \
    case MR: tile(MR, NV, m, K, A, ars, acs, B, ldb, C, ldc, acc, bias); break;
TGT __attribute__((noinline)) static void tiles3(int mr, TILE_ARGS) {
    switch (mr) { T(1, 3) T(2, 3) T(3, 3) default: T(4, 3) }
}
TGT __attribute__((noinline)) static void tiles2(int mr, TILE_ARGS) {
    switch (mr) { T(1, 2) T(2, 2) T(3, 2) T(4, 2) T(5, 2) default: T(6, 2) }
}
TGT __attribute__((noinline)) static void tiles1(int mr, TILE_ARGS) {
    switch (mr) {
        T(1, 1) T(2, 1) T(3, 1) T(4, 1) T(5, 1) T(6, 1) T(7, 1) T(8, 1) T(9, 1) T(10, 1) T(11, 1) default: T(12, 1)
    }
}
#undef T
#undef TILE_ARGS

TGT static void gemm_nn(int64_t M, int64_t N, int64_t K, const float *A, int64_t ars, int64_t acs, const float *B,
                        int64_t ldb, float *C, int64_t ldc, int acc, const float *bias) {
    for (int64_t j0 = 0; j0 < N; j0 += 24) {
        int64_t nr = N - j0 < 24 ? N - j0 : 24;
        int nv = (int)((nr + 7) / 8);
        __m256i m = lanes(nr - 8 * (nv - 1));
        int mrmax = nv == 3 ? 4 : nv == 2 ? 6 : 12;
        int64_t kc = 8192 / (8 * nv); /* a B panel of up to 32 KB stays in L1 */
        for (int64_t k0 = 0; k0 < K; k0 += kc) {
            int64_t kl = K - k0 < kc ? K - k0 : kc;
            int a2 = acc || k0 > 0;
            const float *bp = bias && k0 == 0 ? bias + j0 : NULL; /* later k blocks go on from C */
            const float *Bp = B + k0 * ldb + j0;
            for (int64_t i0 = 0; i0 < M; i0 += mrmax) {
                int mr = (int)(M - i0 < mrmax ? M - i0 : mrmax);
                const float *Ap = A + i0 * ars + k0 * acs;
                float *Cp = C + i0 * ldc + j0;
                switch (nv) {
                case 3: tiles3(mr, m, kl, Ap, ars, acs, Bp, ldb, Cp, ldc, a2, bp); break;
                case 2: tiles2(mr, m, kl, Ap, ars, acs, Bp, ldb, Cp, ldc, a2, bp); break;
                default: tiles1(mr, m, kl, Ap, ars, acs, Bp, ldb, Cp, ldc, a2, bp); break;
                }
            }
        }
    }
}

/* ---------------------------------------------------------- transposes */
/* In-register transpose of 8 rows of 8 floats: interleave pairs of rows,
 * gather 64-bit pairs, then swap 128-bit halves. */
TGT INL void tr8x8(__m256 r[8]) {
    __m256 t[8], s[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        s[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        s[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        s[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        s[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int j = 0; j < 4; j++) {
        r[j] = _mm256_permute2f128_ps(s[j], s[4 + j], 0x20);
        r[4 + j] = _mm256_permute2f128_ps(s[j], s[4 + j], 0x31);
    }
}

/* dst(j, i) = src(i, j) (+ dst(j, i) when acc, + bias[i] when bias) for an
 * R x Cn block of src (R, Cn <= 8). */
TGT INL void tr_block(const float *src, int64_t lds, int64_t R, int64_t Cn, float *dst, int64_t ldd, int acc,
                      const float *bias) {
    __m256 r[8];
    __m256i mc = lanes(Cn), mr = lanes(R);
    for (int i = 0; i < 8; i++) r[i] = i < R ? _mm256_maskload_ps(src + i * lds, mc) : _mm256_setzero_ps();
    tr8x8(r);
    for (int j = 0; j < Cn; j++) {
        __m256 v = r[j];
        if (bias) v = _mm256_add_ps(_mm256_maskload_ps(bias, mr), v);
        else if (acc) v = _mm256_add_ps(_mm256_maskload_ps(dst + j * ldd, mr), v);
        _mm256_maskstore_ps(dst + j * ldd, mr, v);
    }
}

TGT static void transpose(const float *src, int64_t lds, int64_t R, int64_t Cn, float *dst, int64_t ldd, int acc,
                          const float *bias) {
    for (int64_t i = 0; i < R; i += 8)
        for (int64_t j = 0; j < Cn; j += 8)
            tr_block(src + i * lds + j, lds, R - i < 8 ? R - i : 8, Cn - j < 8 ? Cn - j : 8, dst + j * ldd + i, ldd,
                     acc, bias ? bias + i : NULL);
}

/* ------------------------------------------------- NT with few rows */
/* C[MR x N] = start + A[MR x K] @ B[N x K]^T, MR <= 12: each 8 x 8 block of
 * B (8 columns of C, 8 values of k) is transposed in registers as it is
 * read; the broadcast-FMA loop then runs as in tile, in order of k. */
TGT INL void nt_rows(const int MR, int64_t j0, int64_t j1, int64_t K, const float *A, int64_t ars, int64_t acs,
                     const float *B, int64_t ldb, float *C, int64_t ldc, int acc, const float *bias) {
    for (; j0 < j1; j0 += 8) {
        int64_t nj = j1 - j0 < 8 ? j1 - j0 : 8;
        __m256i m = lanes(nj);
        __m256 c[12];
#pragma GCC unroll 12
        for (int r = 0; r < MR; r++)
            c[r] = !acc ? _mm256_setzero_ps() : _mm256_maskload_ps(bias ? bias + j0 : C + r * ldc + j0, m);
        for (int64_t k0 = 0; k0 < K; k0 += 8) {
            int64_t kl = K - k0 < 8 ? K - k0 : 8;
            __m256 b[8];
            if (kl == 8 && nj == 8) {
#pragma GCC unroll 8
                for (int i = 0; i < 8; i++) b[i] = _mm256_loadu_ps(B + (j0 + i) * ldb + k0);
            } else {
                __m256i mk = lanes(kl);
                for (int i = 0; i < 8; i++)
                    b[i] = i < nj ? _mm256_maskload_ps(B + (j0 + i) * ldb + k0, mk) : _mm256_setzero_ps();
            }
            tr8x8(b); /* b[k] = B[j0 .. j0+8, k0 + k] */
            const float *ak = A + k0 * acs;
            if (MR > 6) { /* 12 accumulators + 8 vectors of B exceed 16 registers: B's go to L1 */
                float bt[64] __attribute__((aligned(32)));
#pragma GCC unroll 8
                for (int k = 0; k < 8; k++) _mm256_store_ps(bt + 8 * k, b[k]);
                for (int k = 0; k < kl; k++) {
                    __m256 bk = _mm256_load_ps(bt + 8 * k);
#pragma GCC unroll 12
                    for (int r = 0; r < MR; r++)
                        c[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(ak + r * ars + k * acs), bk, c[r]);
                }
            } else if (kl == 8) {
#pragma GCC unroll 8
                for (int k = 0; k < 8; k++)
#pragma GCC unroll 12
                    for (int r = 0; r < MR; r++)
                        c[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(ak + r * ars + k * acs), b[k], c[r]);
            } else {
                for (int k = 0; k < kl; k++)
#pragma GCC unroll 12
                    for (int r = 0; r < MR; r++)
                        c[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(ak + r * ars + k * acs), b[k], c[r]);
            }
        }
#pragma GCC unroll 12
        for (int r = 0; r < MR; r++) _mm256_maskstore_ps(C + r * ldc + j0, m, c[r]);
    }
}

#define R(MR) \
    case MR: nt_rows(MR, j0, j1, K, A, ars, acs, B, ldb, C, ldc, acc, bias); break;
TGT __attribute__((noinline)) static void gemm_nt_rows(int mr, int64_t j0, int64_t j1, int64_t K, const float *A,
                                                       int64_t ars, int64_t acs, const float *B, int64_t ldb,
                                                       float *C, int64_t ldc, int acc, const float *bias) {
    switch (mr) {
        R(1) R(2) R(3) R(4) R(5) R(6) R(7) R(8) R(9) R(10) R(11) default: R(12)
    }
}
#undef R

const jn_rt_sg_kernels jn_rt_sg_avx2 = {gemm_nn, gemm_nt_rows, transpose, 8};

#endif
