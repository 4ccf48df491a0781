/* k_gemm.c -- float32 GEMM: an AVX-512 kernel (or its AVX2 port,
 * k_gemm_avx2.c) for small products, OpenBLAS for the rest.
 *
 * Eager training of small models is made of small GEMMs: an LSTM step at
 * batch 32 and hidden 128 multiplies [32,128] by [128,512] and back, six
 * times per time step.  OpenBLAS packs both operands into its own layouts
 * for every call and reaches 50-110 GFLOP/s on those shapes (its transposed
 * "NT" case x @ W^T, the layout of every linear layer, is the slowest);
 * this kernel reaches 140-150 on the same core without packing:
 *
 *   C[MR x 16*NV] += A[MR x K] @ B[K x 16*NV]  for MR x NV register tiles
 *   (6x4, 8x3, 12x2, 12x1 vectors of 16 floats), each A element broadcast
 *   straight from memory, so A may have any strides (op(A) = A^T costs
 *   nothing); B must have unit stride along N.  K is cut into blocks whose
 *   B panel stays in L1 while all row tiles stream past it.
 *
 * op(B) = B^T (the NT case) has no unit stride along N.  With at most
 * NT_ROWS rows (x @ W^T of a recurrent step at a small batch) B's 16 x 16
 * blocks are transposed in registers as they are read (gemm_nt_rows, the
 * bits of gemm_nn over a transposed copy of B).  Otherwise op(B) is either
 * packed (its transpose copied into scratch, N*K floats), or the product is
 * computed transposed, C^T = op(B)^T @ op(A)^T, whose right operand op(A)^T
 * is A itself when op(A) = A^T and otherwise a copy of M*K floats, with C^T
 * transposed back into C while it is added: whichever moves fewer floats.
 * For x[32,128] @ W[512,128]^T that is 4K floats instead of OpenBLAS's
 * packing of all of W.
 *
 * The kernel runs for alpha == 1, beta 0 or 1 and the sizes use_small
 * admits, on CPUs with AVX-512F, or with AVX2 and FMA through the AVX2
 * family of the same routines (8-float vectors, 8 x 8 register transposes;
 * checked at run time, jn_rt_sgemm_level; the files build anywhere);
 * everything else, and every larger product, goes to cblas_sgemm.  The
 * driver below (plan, bands, scratch) is shared, and both families run the
 * same FMA chain per element, so they give the same bits.  Products of
 * PAR_MNK multiply-adds and more are cut into column (or row) bands run by
 * the thread pool.  Sums are accumulated in
 * float32 in order of k, so results differ from OpenBLAS's in the last
 * bits, never in being deterministic or in depending on the thread count.
 * The path (OpenBLAS, NN, NT rows, packed op(B), C^T) is chosen in one
 * place, use_small and small_gemm, from ta, tb, M, N, K alone -- never
 * from addresses, alignment or leading dims -- so eager and a compiled
 * graph making the same product get the same bits.  Below 4K
 * multiply-adds OpenBLAS 0.3.21's own small-matrix kernels are as fast
 * or faster in most layouts (benchmarks/results/fastpath.md).
 */
#include "k_gemm.h"

#include "jn_runtime.h"
#include "jn_settings.h"
#include "k_gemm_kern.h"

#include <cblas.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The kernel's range in multiply-adds: below the lower end its call is
 * cheaper than our operand transposes; up to SMALL_MNK_MAX it beats
 * OpenBLAS's packing on this project's shapes, and up to WIDE_MNK_MAX too
 * while op(B) stays small (its K x N panel streams from L2: a layer's
 * weight of up to 256K floats, e.g. 784 x 256) -- measured 118 vs 136
 * GFLOP/s for the MLP's first layer and 119 vs 138 for char_lstm's output
 * layer over a whole sequence.  Beyond that OpenBLAS's cache blocking wins
 * (512^3: 86 vs 67 GFLOP/s). */
#define SMALL_MNK_MIN 4096.0
#define SMALL_MNK_MAX (16.0 * 1024 * 1024)
#define WIDE_MNK_MAX (64.0 * 1024 * 1024)
#define WIDE_NK_MAX (256.0 * 1024)

static int use_small(int64_t M, int64_t N, int64_t K) {
    double mnk = (double)M * (double)N * (double)K, nk = (double)N * (double)K;
    return mnk >= SMALL_MNK_MIN && (mnk <= SMALL_MNK_MAX || (mnk <= WIDE_MNK_MAX && nk <= WIDE_NK_MAX));
}
static int small_gemm(int ta, int tb, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                      int64_t ldb, int acc, const float *bias, float *C, int64_t ldc);

void jn_rt_sgemm(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                 const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    if (use_small(M, N, K) && jn_rt_sgemm_small(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) return;
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)M, (int)N,
                (int)K, alpha, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define TGT __attribute__((target("avx512f")))
#define INL __attribute__((always_inline)) static inline

/* Lanes [0, n) of a 16-float vector. */
static inline __mmask16 lanes(int64_t n) { return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1); }

/* ------------------------------------------------------------- kernel */
/* C[MR x NV*16] = (acc ? C : 0) + A[MR x K] @ B[K x NV*16]; A(i,k) at
 * A[i*ars + k*acs], B(k,j) at B[k*ldb + j]; the last vector of each row is
 * masked by m.  With bias (and acc), every row starts from bias[0, NV*16)
 * instead of C: linear's bias without first copying it into each row.  MR
 * and NV are constants at every call site, so after inlining the
 * accumulators live in registers. */
TGT INL void tile(const int MR, const int NV, __mmask16 m, int64_t K, const float *A, int64_t ars, int64_t acs,
                  const float *B, int64_t ldb, float *C, int64_t ldc, int acc, const float *bias) {
    __m512 c[12][4];
#pragma GCC unroll 12
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            __mmask16 mv = v == NV - 1 ? m : 0xffff;
            c[r][v] = !acc ? _mm512_setzero_ps()
                      : bias ? _mm512_maskz_loadu_ps(mv, bias + 16 * v)
                             : _mm512_maskz_loadu_ps(mv, C + r * ldc + 16 * v);
        }
    for (int64_t k = 0; k < K; k++) {
        __m512 b[4];
        const float *bk = B + k * ldb, *ak = A + k * acs;
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) b[v] = _mm512_maskz_loadu_ps(v == NV - 1 ? m : 0xffff, bk + 16 * v);
#pragma GCC unroll 12
        for (int r = 0; r < MR; r++) {
            __m512 a = _mm512_set1_ps(ak[r * ars]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) c[r][v] = _mm512_fmadd_ps(a, b[v], c[r][v]);
        }
    }
#pragma GCC unroll 12
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) _mm512_mask_storeu_ps(C + r * ldc + 16 * v, v == NV - 1 ? m : 0xffff, c[r][v]);
}

/* One function per tile width, switching on the row count (the last row
 * tile of a product may be short). */
#define TILE_ARGS __mmask16 m, int64_t K, const float *A, int64_t ars, int64_t acs, const float *B, int64_t ldb, \
                  float *C, int64_t ldc, int acc, const float *bias
#define T(MR, NV) \
    case MR: tile(MR, NV, m, K, A, ars, acs, B, ldb, C, ldc, acc, bias); break;
TGT __attribute__((noinline)) static void tiles4(int mr, TILE_ARGS) {
    switch (mr) { T(1, 4) T(2, 4) T(3, 4) T(4, 4) T(5, 4) default: T(6, 4) }
}
TGT __attribute__((noinline)) static void tiles3(int mr, TILE_ARGS) {
    switch (mr) { T(1, 3) T(2, 3) T(3, 3) T(4, 3) T(5, 3) T(6, 3) T(7, 3) default: T(8, 3) }
}
TGT __attribute__((noinline)) static void tiles2(int mr, TILE_ARGS) {
    switch (mr) {
        T(1, 2) T(2, 2) T(3, 2) T(4, 2) T(5, 2) T(6, 2) T(7, 2) T(8, 2) T(9, 2) T(10, 2) T(11, 2) default: T(12, 2)
    }
}
TGT __attribute__((noinline)) static void tiles1(int mr, TILE_ARGS) {
    switch (mr) {
        T(1, 1) T(2, 1) T(3, 1) T(4, 1) T(5, 1) T(6, 1) T(7, 1) T(8, 1) T(9, 1) T(10, 1) T(11, 1) default: T(12, 1)
    }
}
#undef T
#undef TILE_ARGS

/* C[M,N] = (acc ? C : 0) + A @ B over register tiles; A(i,k) at
 * A[i*ars + k*acs], B row-major with unit stride along N.  bias (with acc):
 * the addend is bias[N] in every row instead of C's old value. */
TGT static void gemm_nn(int64_t M, int64_t N, int64_t K, const float *A, int64_t ars, int64_t acs,
                        const float *B, int64_t ldb, float *C, int64_t ldc, int acc, const float *bias) {
    for (int64_t j0 = 0; j0 < N; j0 += 64) {
        int64_t nr = N - j0 < 64 ? N - j0 : 64;
        int nv = (int)((nr + 15) / 16);
        __mmask16 m = lanes(nr - 16 * (nv - 1));
        int mrmax = nv == 4 ? 6 : nv == 3 ? 8 : 12;
        int64_t kc = 8192 / (16 * nv); /* a 32 KB panel of B stays in L1 */
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
                case 4: tiles4(mr, m, kl, Ap, ars, acs, Bp, ldb, Cp, ldc, a2, bp); break;
                case 3: tiles3(mr, m, kl, Ap, ars, acs, Bp, ldb, Cp, ldc, a2, bp); break;
                case 2: tiles2(mr, m, kl, Ap, ars, acs, Bp, ldb, Cp, ldc, a2, bp); break;
                default: tiles1(mr, m, kl, Ap, ars, acs, Bp, ldb, Cp, ldc, a2, bp); break;
                }
            }
        }
    }
}

/* ---------------------------------------------------------- transposes */
/* In-register transpose of 16 rows of 16 floats: interleave pairs of rows
 * (32-bit, then 64-bit units), then gather 128-bit lanes in two rounds. */
TGT INL void tr16x16(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4)
        for (int j = 0; j < 2; j++) {
            __m512d a = _mm512_castps_pd(t[i + j]), b = _mm512_castps_pd(t[i + 2 + j]);
            r[i + 2 * j] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
            r[i + 2 * j + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
        }
    for (int i = 0; i < 16; i += 8)
        for (int j = 0; j < 4; j++) {
            t[i + j] = _mm512_shuffle_f32x4(r[i + j], r[i + 4 + j], 0x88);
            t[i + 4 + j] = _mm512_shuffle_f32x4(r[i + j], r[i + 4 + j], 0xdd);
        }
    for (int j = 0; j < 8; j++) {
        r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
        r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
    }
}

/* dst(j, i) = src(i, j) (+ dst(j, i) when acc, + bias[i] when bias) for an
 * R x Cn block of src (R, Cn <= 16); rows of src at stride lds, rows of dst
 * at stride ldd. */
TGT INL void tr_block(const float *src, int64_t lds, int64_t R, int64_t Cn, float *dst, int64_t ldd, int acc,
                      const float *bias) {
    __m512 r[16];
    __mmask16 mc = lanes(Cn), mr = lanes(R);
    for (int i = 0; i < 16; i++) r[i] = i < R ? _mm512_maskz_loadu_ps(mc, src + i * lds) : _mm512_setzero_ps();
    tr16x16(r);
    for (int j = 0; j < Cn; j++) {
        __m512 v = r[j];
        if (bias) v = _mm512_add_ps(_mm512_maskz_loadu_ps(mr, bias), v);
        else if (acc) v = _mm512_add_ps(_mm512_maskz_loadu_ps(mr, dst + j * ldd), v);
        _mm512_mask_storeu_ps(dst + j * ldd, mr, v);
    }
}

/* dst[C x R] (row stride ldd) = src[R x C]^T (+ dst when acc, + the row
 * vector bias[R] instead when bias). */
TGT static void transpose(const float *src, int64_t lds, int64_t R, int64_t Cn, float *dst, int64_t ldd, int acc,
                          const float *bias) {
    for (int64_t i = 0; i < R; i += 16)
        for (int64_t j = 0; j < Cn; j += 16)
            tr_block(src + i * lds + j, lds, R - i < 16 ? R - i : 16, Cn - j < 16 ? Cn - j : 16, dst + j * ldd + i,
                     ldd, acc, bias ? bias + i : NULL);
}

/* ------------------------------------------------- NT with few rows */
/* C[MR x N] = start + A[MR x K] @ B[N x K]^T for MR <= NT_ROWS, B read
 * row-major as stored: each 16 x 16 block of B (16 columns of C, 16 values
 * of k) is transposed in registers as it is read, so the broadcast-FMA
 * tile above runs with all 16 lanes busy and nothing is copied to memory
 * (the C^T plan used 8 of 16 lanes at batch 8; packing op(B) per call cost
 * what the lanes saved).  start: 0, C (acc) or bias[N] (acc with bias).
 * Every element accumulates its products in order of k from the same
 * start as gemm_nn over a packed op(B), so both give the same bits. */
#define NT_ROWS 12

TGT INL void nt_rows(const int MR, int64_t j0, int64_t j1, int64_t K, const float *A, int64_t ars, int64_t acs,
                     const float *B, int64_t ldb, float *C, int64_t ldc, int acc, const float *bias) {
    for (; j0 < j1; j0 += 16) {
        int64_t nj = j1 - j0 < 16 ? j1 - j0 : 16;
        __mmask16 m = lanes(nj);
        __m512 c[NT_ROWS];
#pragma GCC unroll 12
        for (int r = 0; r < MR; r++)
            c[r] = !acc ? _mm512_setzero_ps()
                   : bias ? _mm512_maskz_loadu_ps(m, bias + j0)
                          : _mm512_maskz_loadu_ps(m, C + r * ldc + j0);
        for (int64_t k0 = 0; k0 < K; k0 += 16) {
            int64_t kl = K - k0 < 16 ? K - k0 : 16;
            __mmask16 mk = lanes(kl);
            __m512 b[16];
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++)
                b[i] = i < nj ? _mm512_maskz_loadu_ps(mk, B + (j0 + i) * ldb + k0) : _mm512_setzero_ps();
            tr16x16(b); /* b[k] = B[j0 .. j0+16, k0 + k] */
            const float *ak = A + k0 * acs;
            if (kl == 16) {
#pragma GCC unroll 16
                for (int k = 0; k < 16; k++)
#pragma GCC unroll 12
                    for (int r = 0; r < MR; r++)
                        c[r] = _mm512_fmadd_ps(_mm512_set1_ps(ak[r * ars + k * acs]), b[k], c[r]);
            } else {
                for (int k = 0; k < kl; k++)
#pragma GCC unroll 12
                    for (int r = 0; r < MR; r++)
                        c[r] = _mm512_fmadd_ps(_mm512_set1_ps(ak[r * ars + k * acs]), b[k], c[r]);
            }
        }
#pragma GCC unroll 12
        for (int r = 0; r < MR; r++) _mm512_mask_storeu_ps(C + r * ldc + j0, m, c[r]);
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

/* ------------------------------------------------------------- driver */
/* Per-thread scratch for packed operands (products may run concurrently
 * from the thread pool); grown as needed, kept for the thread's life and
 * freed when it exits (a thread-specific key's destructor). */
static _Thread_local float *scratch;
static _Thread_local size_t scratch_cap;
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static int scratch_key_ok;

static void scratch_make_key(void) { scratch_key_ok = pthread_key_create(&scratch_key, free) == 0; }

static float *scratch_get(size_t n) {
    if (n <= scratch_cap) return scratch;
    pthread_once(&scratch_once, scratch_make_key);
    float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    if (!p || !scratch_key_ok || pthread_setspecific(scratch_key, p) != 0) {
        free(p);
        return NULL; /* the caller falls back to OpenBLAS */
    }
    free(scratch);
    scratch = p;
    scratch_cap = n;
    return p;
}

/* Read by every product, on any pool thread: atomics (the CPU check may
 * run twice at first, with the same answer).  The cap starts at
 * JANUS_GEMM_KERNEL's word (default: no cap), stored before `best`
 * is published. */
static int level_cap = -1;

static int level_from_setting(void) {
    const char *w = "";
    if (jn_setting_str(JN_S_GEMM_KERNEL, &w) != JN_OK) w = ""; /* refused at import (janus/__init__.py) */
    return !strcmp(w, "openblas") ? JN_SGEMM_OPENBLAS : !strcmp(w, "avx2") ? JN_SGEMM_AVX2 : JN_SGEMM_KERNEL;
}

int jn_rt_sgemm_level(int cap) {
    static int best = -1;
    int b = __atomic_load_n(&best, __ATOMIC_ACQUIRE); /* seen set: the first cap is too */
    if (b < 0) {
        __builtin_cpu_init();
        b = __builtin_cpu_supports("avx512f")                                        ? JN_SGEMM_AVX512
            : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? JN_SGEMM_AVX2
                                                                               : JN_SGEMM_OPENBLAS;
        int c0 = level_from_setting(), none = -1;
        __atomic_compare_exchange_n(&level_cap, &none, c0, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
        __atomic_store_n(&best, b, __ATOMIC_RELEASE);
    }
    if (cap >= 0) __atomic_store_n(&level_cap, cap, __ATOMIC_RELAXED);
    int c = __atomic_load_n(&level_cap, __ATOMIC_RELAXED);
    return b < c ? b : c;
}

static const jn_rt_sg_kernels sg_avx512 = {gemm_nn, gemm_nt_rows, transpose, 16};

/* The kernel family small products use now, NULL for OpenBLAS. */
static const jn_rt_sg_kernels *kernels(void) {
    int l = jn_rt_sgemm_level(-1);
    return l == JN_SGEMM_AVX512 ? &sg_avx512 : l == JN_SGEMM_AVX2 ? &jn_rt_sg_avx2 : NULL;
}

/* One small product, planned once and cut into column (or row) bands that
 * the thread pool runs side by side.  Every element is accumulated by the
 * same sequence of FMAs whatever the cut: bands are cut at multiples of the
 * 64-column chunks gemm_nn tiles by (its k blocking depends on the chunk's
 * width only) and the plan (NN, packed B, or C^T) is chosen for the whole
 * product, so results do not depend on the thread count. */
enum { SG_NN, SG_CT, SG_NTR }; /* packed B is NN over the packed copy; SG_NTR: gemm_nt_rows */

typedef struct {
    const jn_rt_sg_kernels *kf;
    int path, acc, by_rows;
    int64_t M, N, K, band;            /* band: columns (or rows) per task unit */
    const float *A, *B, *At, *bias;   /* At: op(A)^T as [K x M] (SG_CT) */
    float *S;                         /* SG_CT: C^T [N x M], the caller's scratch */
    int64_t ars, acs, ldb, ldat, ldc;
    float *C;
} sg_job;

static void sg_band(int64_t b0, int64_t b1, void *ctx) {
    const sg_job *j = ctx;
    const jn_rt_sg_kernels *kf = j->kf;
    int64_t lim = j->by_rows ? j->M : j->N;
    if (j->path == SG_NTR) { /* bands of whole nt_cols-column blocks */
        int64_t lo = b0 * j->band, hi = b1 * j->band < lim ? b1 * j->band : lim;
        if (lo < hi) kf->nt_rows((int)j->M, lo, hi, j->K, j->A, j->ars, j->acs, j->B, j->ldb, j->C, j->ldc, j->acc,
                                  j->bias);
        return;
    }
    if (j->path == SG_NN) {
        int64_t lo = b0 * j->band, hi = b1 * j->band < lim ? b1 * j->band : lim;
        if (lo >= hi) return;
        if (j->by_rows)
            kf->nn(hi - lo, j->N, j->K, j->A + lo * j->ars, j->ars, j->acs, j->B, j->ldb, j->C + lo * j->ldc,
                    j->ldc, j->acc, j->bias);
        else
            kf->nn(j->M, hi - lo, j->K, j->A, j->ars, j->acs, j->B + lo, j->ldb, j->C + lo, j->ldc, j->acc,
                    j->bias ? j->bias + lo : NULL);
        return;
    }
    /* SG_CT, cut by columns of C (rows of C^T): each band computes its
     * rows of C^T into its own part of S, then adds them transposed */
    for (int64_t b = b0; b < b1; b++) {
        int64_t c0 = b * j->band, n = c0 + j->band < lim ? j->band : lim - c0;
        if (n <= 0) break;
        float *S = j->S + c0 * j->M;
        kf->nn(n, j->M, j->K, j->B + c0 * j->ldb, j->ldb, 1, j->At, j->ldat, S, j->M, 0, NULL);
        kf->transpose(S, j->M, n, j->M, j->C + c0, j->ldc, j->acc, j->acc && j->bias ? j->bias + c0 : NULL);
    }
}

/* Products below this many multiply-adds run on the calling thread: a
 * band's share must outweigh handing it to a (spinning) worker: at 512K
 * (an LSTM step's x @ W_ih^T) two threads took 1.3x longer than one, at 2M
 * 1.1x to 1.5x less (best of 200 runs on this 2-core machine). */
#define PAR_MNK (1024.0 * 1024)

/* The plan of a product with op(B) = B^T (tb): gemm_nt_rows for a few rows,
 * else op(B) packed (SG_NN over the packed copy) when that copy is smaller
 * than what computing C^T moves, else C^T (SG_CT). */
static int nt_plan(int ta, int64_t M, int64_t N, int64_t K) {
    if (M <= NT_ROWS) return SG_NTR;
    double pack_b = (double)N * (double)K;
    double via_ct = (ta ? 0.0 : (double)M * (double)K) + 2.0 * (double)M * (double)N;
    return pack_b <= via_ct ? SG_NN : SG_CT;
}

int jn_rt_stranspose(const float *src, int64_t lds, int64_t rows, int64_t cols, float *dst, int64_t ldd) {
    const jn_rt_sg_kernels *kf = kernels();
    if (!kf || rows <= 0 || cols <= 0) return 0;
    kf->transpose(src, lds, rows, cols, dst, ldd, 0, NULL);
    return 1;
}

/* gemm_nt_rows and the packed B accumulate each element as the NN product
 * over op(B)^T does: the same FMAs in order of k from the same start */
int jn_rt_sgemm_nt_is_nn(int ta, int64_t M, int64_t N, int64_t K) {
    return M > 0 && N > 0 && K > 0 && use_small(M, N, K) && kernels() && nt_plan(ta, M, N, K) != SG_CT;
}

/* C = (acc ? (bias ? bias rows : C) : 0) + op(A) @ op(B); 0 when this CPU
 * has neither kernel family (or the level turned them off) or scratch
 * cannot be had.  The plan depends on ta, tb, M, N, K alone, not on the
 * family: both give the same bits. */
static int small_gemm(int ta, int tb, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                      int64_t ldb, int acc, const float *bias, float *C, int64_t ldc) {
    const jn_rt_sg_kernels *kf = kernels();
    if (!kf) return 0;
    sg_job j = {.kf = kf, .path = SG_NN, .acc = acc, .M = M, .N = N, .K = K, .A = A, .B = B, .bias = bias, .ldb = ldb,
                .ldc = ldc, .C = C};
    j.ars = ta ? 1 : lda; /* op(A)(i,k) = A[i*ars + k*acs] */
    j.acs = ta ? lda : 1;
    int nt = jn_num_threads();
    int par = nt > 1 && (double)M * (double)N * (double)K >= PAR_MNK;
    int plan = tb ? nt_plan(ta, M, N, K) : SG_NN;
    if (plan == SG_NTR) { /* one row tile: B's blocks transposed in registers */
        j.path = SG_NTR;
        int64_t bw = kf->nt_cols, blocks = (N + bw - 1) / bw;
        j.band = bw * (par ? (blocks + nt - 1) / nt : blocks);
        if (par) jn_parallel_for((N + j.band - 1) / j.band, 1, sg_band, &j);
        else sg_band(0, 1, &j);
        return 1;
    }
    if (tb) {
        /* op(B)(k,j) = B[j*ldb + k]: pack op(B), or compute C^T (see the top) */
        if (plan == SG_NN) {
            float *P = scratch_get((size_t)(N * K));
            if (!P) return 0;
            kf->transpose(B, ldb, N, K, P, N, 0, NULL); /* P[K x N], shared read-only by the bands */
            j.B = P;
            j.ldb = N;
        } else {
            j.path = SG_CT;
            /* the caller's scratch holds S = C^T [N x M] for every band
             * (workers never allocate), then op(A)^T */
            int64_t bandn = par ? (N + nt - 1) / nt : N;
            float *S = scratch_get((size_t)(N * M + (ta ? 0 : M * K)));
            if (!S) return 0;
            j.S = S;
            j.At = A;
            j.ldat = lda;
            if (!ta) {
                float *P = S + N * M;
                kf->transpose(A, lda, M, K, P, M, 0, NULL);
                j.At = P;
                j.ldat = M;
            }
            j.band = bandn;
            if (par) jn_parallel_for((N + bandn - 1) / bandn, 1, sg_band, &j);
            else sg_band(0, 1, &j); /* band = N: one */
            return 1;
        }
    }
    if (!par) {
        kf->nn(M, N, K, j.A, j.ars, j.acs, j.B, j.ldb, C, ldc, acc, bias);
        return 1;
    }
    /* NN: bands of whole 64-column chunks when there are enough, else rows */
    int64_t chunks = (N + 63) / 64;
    if (chunks >= nt) {
        j.band = 64 * ((chunks + nt - 1) / nt);
    } else {
        j.by_rows = 1;
        j.band = (M + nt - 1) / nt;
    }
    int64_t lim = j.by_rows ? M : N;
    jn_parallel_for((lim + j.band - 1) / j.band, 1, sg_band, &j);
    return 1;
}

#else /* no AVX-512 kernel on this architecture */

int jn_rt_sgemm_level(int cap) {
    (void)cap;
    return JN_SGEMM_OPENBLAS;
}

int jn_rt_sgemm_nt_is_nn(int ta, int64_t M, int64_t N, int64_t K) {
    (void)ta, (void)M, (void)N, (void)K;
    return 0;
}

int jn_rt_stranspose(const float *src, int64_t lds, int64_t rows, int64_t cols, float *dst, int64_t ldd) {
    (void)src, (void)lds, (void)rows, (void)cols, (void)dst, (void)ldd;
    return 0;
}

static int small_gemm(int ta, int tb, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                      int64_t ldb, int acc, const float *bias, float *C, int64_t ldc) {
    (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)A, (void)lda, (void)B, (void)ldb, (void)acc, (void)bias;
    (void)C, (void)ldc;
    return 0;
}

#endif

int jn_rt_sgemm_small(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                      const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    if (alpha != 1.0f || (beta != 0.0f && beta != 1.0f) || M <= 0 || N <= 0 || K <= 0) return 0;
    return small_gemm(ta, tb, M, N, K, A, lda, B, ldb, beta != 0.0f, NULL, C, ldc);
}

void jn_rt_sgemm_bias(int ta, int tb, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                      int64_t ldb, const float *bias, float *C, int64_t ldc) {
    if (M <= 0 || N <= 0) return;
    if (K > 0 && use_small(M, N, K) && small_gemm(ta, tb, M, N, K, A, lda, B, ldb, 1, bias, C, ldc)) return;
    for (int64_t i = 0; i < M; i++) memcpy(C + i * ldc, bias, sizeof(float) * (size_t)N);
    if (K > 0)
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)M, (int)N,
                    (int)K, 1.0f, A, (int)lda, B, (int)ldb, 1.0f, C, (int)ldc);
}
