/* test_gemm.c -- the float32 GEMM of the runtime (runtime/k_gemm.c) against
 * a float64 reference: every transpose combination, ragged shapes around
 * the kernel's 16-float vectors and register tiles, padded leading dims,
 * beta 0 (C's old nan must not leak) and 1, the three NT strategies
 * (packing op(B), computing C^T, and for few rows B's blocks transposed in
 * registers, which gives the NN product's bits over a transposed B), the OpenBLAS fallback for what the small
 * kernel refuses, products cut over the thread pool giving the same bits
 * as on one thread (CPUs with AVX-512 or AVX2; elsewhere everything is
 * OpenBLAS's), each kernel family the CPU has (the AVX-512 one and its
 * AVX2 port, which give the same bits: checked where both run), and the
 * level switch that picks a family or turns the kernel off. */
#include "jn_runtime.h"
#include "jn_test.h"
#include "k_gemm.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 88172645463325252ull;
static float frand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 - 0.5);
}

/* Worst error of C = alpha op(A) op(B) + beta C over C, in units of the
 * float32 rounding bound: |C - ref| / ((K + 2) u (sum_k |a b| + |beta old C|)),
 * so a correct product scores at most 1 (summation order is free). */
static double check(int small, int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, float beta, int pad) {
    int64_t ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
    int64_t lda = ac + pad, ldb = bc + pad, ldc = N + pad;
    float *A = malloc(sizeof(float) * (size_t)(ar * lda + 1)), *B = malloc(sizeof(float) * (size_t)(br * ldb + 1));
    float *C = malloc(sizeof(float) * (size_t)(M * ldc + 1));
    double *old = malloc(sizeof(double) * (size_t)(M * ldc + 1));
    for (int64_t i = 0; i < ar * lda; i++) A[i] = frand();
    for (int64_t i = 0; i < br * ldb; i++) B[i] = frand();
    for (int64_t i = 0; i < M * ldc; i++) {
        C[i] = beta == 0 ? NAN : frand();
        old[i] = C[i];
    }
    double worst = 0;
    if (small) {
        if (!jn_rt_sgemm_small(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) worst = INFINITY;
    } else {
        jn_rt_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    }
    for (int64_t i = 0; i < M && worst < INFINITY; i++) {
        for (int64_t j = 0; j < N; j++) {
            double s = 0, mag = 0;
            for (int64_t k = 0; k < K; k++) {
                double a = ta ? A[k * lda + i] : A[i * lda + k], b = tb ? B[j * ldb + k] : B[k * ldb + j];
                s += a * b;
                mag += fabs(a * b);
            }
            double ref = alpha * s + (beta == 0 ? 0 : beta * old[i * ldc + j]);
            mag = fabs(alpha) * mag + (beta == 0 ? 0 : fabs(beta * old[i * ldc + j])) + 1e-30;
            double e = fabs((double)C[i * ldc + j] - ref) / (mag * (double)(K + 2) * 0x1p-24);
            if (!(e <= worst)) worst = e; /* nan counts as worst */
        }
        /* the padding between rows is never written */
        for (int64_t j = N; j < ldc && i + 1 < M; j++)
            if (!(C[i * ldc + j] == (float)old[i * ldc + j] || (isnan(C[i * ldc + j]) && isnan(old[i * ldc + j]))))
                worst = INFINITY;
    }
    free(A);
    free(B);
    free(C);
    free(old);
    return worst;
}

/* jn_rt_sgemm_bias equals copying bias into every row and jn_rt_sgemm
 * with beta 1, bit for bit (both run the same kernel path). */
static int bias_same(int ta, int tb, int64_t M, int64_t N, int64_t K) {
    int64_t ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
    float *A = malloc(sizeof(float) * (size_t)(ar * ac)), *B = malloc(sizeof(float) * (size_t)(br * bc));
    float *bias = malloc(sizeof(float) * (size_t)N), *C1 = malloc(sizeof(float) * (size_t)(M * N));
    float *C2 = malloc(sizeof(float) * (size_t)(M * N));
    for (int64_t i = 0; i < ar * ac; i++) A[i] = frand();
    for (int64_t i = 0; i < br * bc; i++) B[i] = frand();
    for (int64_t j = 0; j < N; j++) bias[j] = frand();
    for (int64_t i = 0; i < M * N; i++) C1[i] = NAN; /* never read */
    jn_rt_sgemm_bias(ta, tb, M, N, K, A, ac, B, bc, bias, C1, N);
    for (int64_t i = 0; i < M; i++) memcpy(C2 + i * N, bias, sizeof(float) * (size_t)N);
    jn_rt_sgemm(ta, tb, M, N, K, 1.0f, A, ac, B, bc, 1.0f, C2, N);
    int same = !memcmp(C1, C2, sizeof(float) * (size_t)(M * N));
    free(A), free(B), free(bias), free(C1), free(C2);
    return same;
}

/* A thread of its own runs products that need scratch and exits: the
 * scratch goes with it (a leak here shows under LeakSanitizer). */
static void *thread_products(void *arg) {
    int *ok = arg;
    *ok = check(1, 0, 1, 32, 512, 128, 1.0f, 1.0f, 0) <= 1.0 && check(1, 0, 1, 1024, 96, 128, 1.0f, 0.0f, 0) <= 1.0;
    return NULL;
}

/* op(A) op(B) (+ bias rows, or + C when acc) on nt pool threads into C
 * (fresh data from a fixed seed each call, so calls are comparable). */
static void product_on(int nt, int ta, int tb, int64_t M, int64_t N, int64_t K, int mode, float *C) {
    int64_t ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
    float *A = malloc(sizeof(float) * (size_t)(ar * ac)), *B = malloc(sizeof(float) * (size_t)(br * bc));
    float *bias = malloc(sizeof(float) * (size_t)N);
    rng = 12345;
    for (int64_t i = 0; i < ar * ac; i++) A[i] = frand();
    for (int64_t i = 0; i < br * bc; i++) B[i] = frand();
    for (int64_t j = 0; j < N; j++) bias[j] = frand();
    for (int64_t i = 0; i < M * N; i++) C[i] = frand();
    jn_set_num_threads(nt);
    if (mode == 2) jn_rt_sgemm_bias(ta, tb, M, N, K, A, ac, B, bc, bias, C, N);
    else jn_rt_sgemm(ta, tb, M, N, K, 1.0f, A, ac, B, bc, mode ? 1.0f : 0.0f, C, N);
    free(A), free(B), free(bias);
}

/* The same product on 1, 2 and 3 threads: identical bits (bands are cut on
 * the kernel's chunk boundaries and the plan is the whole product's). */
static int threads_same(int ta, int tb, int64_t M, int64_t N, int64_t K, int mode) {
    size_t n = (size_t)(M * N);
    float *c1 = malloc(sizeof(float) * n), *c2 = malloc(sizeof(float) * n), *c3 = malloc(sizeof(float) * n);
    product_on(1, ta, tb, M, N, K, mode, c1);
    product_on(2, ta, tb, M, N, K, mode, c2);
    product_on(3, ta, tb, M, N, K, mode, c3);
    int same = !memcmp(c1, c2, sizeof(float) * n) && !memcmp(c1, c3, sizeof(float) * n);
    if (!same)
        fprintf(stderr, "  threads differ: ta=%d tb=%d M=%lld N=%lld K=%lld mode=%d\n", ta, tb, (long long)M,
                (long long)N, (long long)K, mode);
    free(c1), free(c2), free(c3);
    return same;
}

/* NT with few rows (B's blocks transposed in registers) gives the bits of
 * the NN product over op(B) transposed beforehand, with and without bias
 * and accumulation: what a graph holding W^T as a value would compute. */
static int nt_same_as_nn(int ta, int64_t M, int64_t N, int64_t K, int mode) {
    int64_t ar = ta ? K : M, ac = ta ? M : K;
    float *A = malloc(sizeof(float) * (size_t)(ar * ac)), *B = malloc(sizeof(float) * (size_t)(N * K));
    float *Bt = malloc(sizeof(float) * (size_t)(K * N)), *bias = malloc(sizeof(float) * (size_t)N);
    float *C1 = malloc(sizeof(float) * (size_t)(M * N)), *C2 = malloc(sizeof(float) * (size_t)(M * N));
    for (int64_t i = 0; i < ar * ac; i++) A[i] = frand();
    for (int64_t i = 0; i < N * K; i++) B[i] = frand();
    for (int64_t j = 0; j < N; j++)
        for (int64_t k = 0; k < K; k++) Bt[k * N + j] = B[j * K + k];
    for (int64_t j = 0; j < N; j++) bias[j] = frand();
    for (int64_t i = 0; i < M * N; i++) C1[i] = C2[i] = frand();
    if (mode == 2) {
        jn_rt_sgemm_bias(ta, 1, M, N, K, A, ac, B, K, bias, C1, N);
        jn_rt_sgemm_bias(ta, 0, M, N, K, A, ac, Bt, N, bias, C2, N);
    } else {
        jn_rt_sgemm(ta, 1, M, N, K, 1.0f, A, ac, B, K, mode ? 1.0f : 0.0f, C1, N);
        jn_rt_sgemm(ta, 0, M, N, K, 1.0f, A, ac, Bt, N, mode ? 1.0f : 0.0f, C2, N);
    }
    int same = !memcmp(C1, C2, sizeof(float) * (size_t)(M * N));
    if (!same)
        fprintf(stderr, "  NT differs from NN over B^T: ta=%d M=%lld N=%lld K=%lld mode=%d\n", ta, (long long)M,
                (long long)N, (long long)K, mode);
    free(A), free(B), free(Bt), free(bias), free(C1), free(C2);
    return same;
}

/* The small kernel of the family the level selects: every layout, ragged
 * shapes, products a thread of its own runs, NT with 1..12 rows. */
static void kernel_checks(const int64_t *dims, int nd, double tol) {
    int bad = 0, runs = 0;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int mi = 0; mi < nd; mi++)
                for (int ni = 0; ni < nd; ni += 2)
                    for (int ki = 0; ki < nd; ki += 3) {
                        float beta = (mi + ni + ki) % 2 ? 1.0f : 0.0f;
                        double e = check(1, ta, tb, dims[mi], dims[ni], dims[ki], 1.0f, beta, (mi + ki) % 3);
                        runs++;
                        if (!(e <= tol)) {
                            if (bad++ < 5)
                                fprintf(stderr, "  small ta=%d tb=%d M=%lld N=%lld K=%lld beta=%g: error %g\n",
                                        ta, tb, (long long)dims[mi], (long long)dims[ni], (long long)dims[ki],
                                        beta, e);
                        }
                    }
    CHECK(bad == 0);
    CHECK(runs == 4 * nd * 6 * 4);
    /* NT with few rows (computed as C^T) and with many (op(B) packed),
     * the shapes of x @ W^T in an LSTM step and in its output layer */
    CHECK(check(1, 0, 1, 32, 512, 128, 1.0f, 1.0f, 0) <= tol);
    CHECK(check(1, 0, 1, 32, 512, 32, 1.0f, 0.0f, 0) <= tol);
    CHECK(check(1, 0, 1, 1024, 96, 128, 1.0f, 1.0f, 0) <= tol);
    CHECK(check(1, 1, 1, 40, 300, 20, 1.0f, 1.0f, 2) <= tol);
    pthread_t th;
    int ok = 0;
    CHECK(pthread_create(&th, NULL, thread_products, &ok) == 0 && pthread_join(th, NULL) == 0 && ok);
    /* NT with 1..12 rows (a GRU/LSTM step's x @ W^T at a small batch):
     * every row count, ragged N and K around the 16 x 16 blocks */
    static const int64_t nn[] = {16, 17, 96, 130}, kk[] = {16, 31, 32, 33, 100};
    int ntbad = 0;
    for (int ta = 0; ta < 2; ta++)
        for (int64_t m = 1; m <= 12; m++)
            for (int ni = 0; ni < 4; ni++)
                for (int ki = 0; ki < 5; ki++) {
                    if (m * nn[ni] * kk[ki] < 4096) continue; /* below the kernel's range */
                    double e = check(1, ta, 1, m, nn[ni], kk[ki], 1.0f, (float)((ni + ki) % 2), (int)(m % 3));
                    if (!(e <= tol) && ntbad++ < 5)
                        fprintf(stderr, "  NT rows ta=%d M=%lld N=%lld K=%lld: error %g\n", ta, (long long)m,
                                (long long)nn[ni], (long long)kk[ki], e);
                    for (int mode = 0; mode < 3; mode++) ntbad += !nt_same_as_nn(ta, m, nn[ni], kk[ki], mode);
                }
    CHECK(ntbad == 0);
    /* long K crosses the kernel's K blocks; the accumulation carries over */
    CHECK(check(1, 0, 0, 32, 128, 512, 1.0f, 0.0f, 0) <= tol);
    CHECK(check(1, 1, 0, 96, 128, 1024, 1.0f, 1.0f, 1) <= tol);
}

/* The AVX2 family gives the AVX-512 family's bits (the same FMA chain per
 * element, the same plan): every path, ragged edges of both vector widths,
 * bias and accumulation. */
static int families_same(int ta, int tb, int64_t M, int64_t N, int64_t K, int mode) {
    size_t n = (size_t)(M * N);
    float *c1 = malloc(sizeof(float) * n), *c2 = malloc(sizeof(float) * n);
    jn_rt_sgemm_level(JN_SGEMM_AVX2);
    product_on(1, ta, tb, M, N, K, mode, c1);
    jn_rt_sgemm_level(JN_SGEMM_AVX512);
    product_on(1, ta, tb, M, N, K, mode, c2);
    int same = !memcmp(c1, c2, sizeof(float) * n);
    if (!same)
        fprintf(stderr, "  AVX2 differs from AVX-512: ta=%d tb=%d M=%lld N=%lld K=%lld mode=%d\n", ta, tb,
                (long long)M, (long long)N, (long long)K, mode);
    free(c1), free(c2);
    return same;
}

/* Where jn_rt_sgemm_nt_is_nn says so, x @ W^T + b over a W^T made
 * beforehand (tb 0) has the bits of the product over W (tb 1); the
 * transposed copy is W^T's bits.  Over a thread count of nt. */
static int nt_as_nn(int ta, int64_t M, int64_t N, int64_t K, int nt) {
    float *A = malloc(sizeof(float) * (size_t)(M * K)), *W = malloc(sizeof(float) * (size_t)(N * K));
    float *WT = malloc(sizeof(float) * (size_t)(N * K)), *b = malloc(sizeof(float) * (size_t)N);
    float *C1 = malloc(sizeof(float) * (size_t)(M * N)), *C2 = malloc(sizeof(float) * (size_t)(M * N));
    int ok = A && W && WT && b && C1 && C2;
    for (int64_t i = 0; ok && i < M * K; i++) A[i] = frand();
    for (int64_t i = 0; ok && i < N * K; i++) W[i] = frand();
    for (int64_t i = 0; ok && i < N; i++) b[i] = frand();
    if (ok && !jn_rt_stranspose(W, K, N, K, WT, N)) /* no kernel: the element loop */
        for (int64_t j = 0; j < N; j++)
            for (int64_t k = 0; k < K; k++) WT[k * N + j] = W[j * K + k];
    for (int64_t j = 0; ok && j < N; j++)
        for (int64_t k = 0; k < K; k++) ok &= !memcmp(&WT[k * N + j], &W[j * K + k], sizeof(float));
    if (ok) {
        jn_set_num_threads(nt);
        jn_rt_sgemm_bias(ta, 1, M, N, K, A, ta ? M : K, W, K, b, C1, N);
        jn_rt_sgemm_bias(ta, 0, M, N, K, A, ta ? M : K, WT, N, b, C2, N);
        jn_set_num_threads(1);
        ok = !memcmp(C1, C2, sizeof(float) * (size_t)(M * N));
    }
    free(A), free(W), free(WT), free(b), free(C1), free(C2);
    return ok;
}

int main(void) {
    static const int64_t dims[] = {1, 3, 15, 16, 17, 31, 33, 64, 65, 97, 130};
    const int nd = (int)(sizeof dims / sizeof dims[0]);
    __builtin_cpu_init();
    int avx512 = __builtin_cpu_supports("avx512f");
    int best = avx512 ? JN_SGEMM_AVX512
               : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? JN_SGEMM_AVX2
                                                                                 : JN_SGEMM_OPENBLAS;
    const double tol = 1.0;

    /* the small kernel of each family this CPU has: every layout, ragged shapes */
    for (int level = JN_SGEMM_AVX2; level <= JN_SGEMM_AVX512; level++) {
        if (level > best) break;
        CHECK(jn_rt_sgemm_level(level) == level);
        kernel_checks(dims, nd, tol);
    }
    jn_rt_sgemm_level(JN_SGEMM_KERNEL);
    if (best == JN_SGEMM_AVX512) {
        static const int64_t fs[][3] = {{1, 17, 300}, {3, 9, 31}, {8, 256, 16}, {12, 33, 100}, {13, 40, 7},
                                        {32, 512, 128}, {1024, 96, 128}, {100, 200, 129}, {40, 300, 20},
                                        {8, 2100, 70}};
        int fbad = 0;
        for (int si = 0; si < 10; si++)
            for (int ta = 0; ta < 2; ta++)
                for (int tb = 0; tb < 2; tb++)
                    for (int mode = 0; mode < 3; mode++)
                        fbad += !families_same(ta, tb, fs[si][0], fs[si][1], fs[si][2], mode);
        CHECK(fbad == 0);
        jn_rt_sgemm_level(JN_SGEMM_KERNEL);
    }
    if (best == JN_SGEMM_OPENBLAS) {
        CHECK(!jn_rt_sgemm_small(0, 0, 16, 16, 16, 1.0f, NULL, 16, NULL, 16, 0.0f, NULL, 16));
    }
    /* x @ W^T + b over a W^T made beforehand: the bits of the product over W
     * wherever jn_rt_sgemm_nt_is_nn says so (the rows plan, packed op(B)),
     * at each level; and it does say so for the rows plan where the kernel
     * runs, never for C^T, OpenBLAS or below the kernel's range */
    for (int level = best; level >= JN_SGEMM_OPENBLAS; level--) {
        jn_rt_sgemm_level(level);
        static const int64_t ws[][3] = {{8, 256, 64}, {8, 256, 16}, {1, 96, 64}, {12, 100, 37}, {13, 256, 64},
                                        {32, 512, 32}, {32, 512, 128}, {4, 512, 128}, {8, 2100, 70}, {2, 3, 5}};
        int said = 0, bad = 0;
        for (int si = 0; si < 10; si++)
            for (int ta = 0; ta < 2; ta++) {
                if (!jn_rt_sgemm_nt_is_nn(ta, ws[si][0], ws[si][1], ws[si][2])) continue;
                said++;
                bad += !nt_as_nn(ta, ws[si][0], ws[si][1], ws[si][2], 1) + !nt_as_nn(ta, ws[si][0], ws[si][1], ws[si][2], 2);
            }
        CHECK(bad == 0);
        CHECK(level == JN_SGEMM_OPENBLAS ? said == 0 : said >= 12);
        CHECK(level == JN_SGEMM_OPENBLAS || jn_rt_sgemm_nt_is_nn(0, 8, 256, 64));
        CHECK(!jn_rt_sgemm_nt_is_nn(0, 32, 512, 128) && !jn_rt_sgemm_nt_is_nn(0, 2, 3, 5)); /* C^T; OpenBLAS */
    }
    jn_rt_sgemm_level(JN_SGEMM_KERNEL);
    /* linear's bias: the small paths (packed op(B), C^T) and OpenBLAS's */
    CHECK(bias_same(0, 1, 32, 512, 32));
    CHECK(bias_same(0, 1, 32, 512, 128));
    CHECK(bias_same(0, 1, 1024, 96, 128));
    CHECK(bias_same(1, 0, 40, 300, 700)); /* several K blocks */
    CHECK(bias_same(0, 1, 2, 3, 5));      /* below the kernel's range */
    CHECK(bias_same(0, 1, 300, 300, 300)); /* above 16M, op(B) small: still the kernel */
    CHECK(bias_same(0, 1, 200, 600, 600)); /* op(B) too large: OpenBLAS */
    CHECK(bias_same(0, 1, 7, 9, 0));
    /* what the kernel refuses, it says so; jn_rt_sgemm then uses OpenBLAS */
    float one = 1, c = 5;
    CHECK(!jn_rt_sgemm_small(0, 0, 1, 1, 1, 2.0f, &one, 1, &one, 1, 0.0f, &c, 1)); /* alpha != 1 */
    CHECK(!jn_rt_sgemm_small(0, 0, 1, 1, 1, 1.0f, &one, 1, &one, 1, 0.5f, &c, 1)); /* beta not 0/1 */
    CHECK(!jn_rt_sgemm_small(0, 0, 1, 1, 0, 1.0f, &one, 1, &one, 1, 0.0f, &c, 1)); /* K == 0 */
    CHECK(c == 5);
    CHECK(check(0, 0, 1, 33, 17, 65, 2.0f, 0.5f, 1) <= tol);
    CHECK(check(0, 1, 0, 17, 33, 9, -1.0f, 0.0f, 0) <= tol);
    CHECK(check(0, 0, 0, 300, 200, 300, 1.0f, 1.0f, 0) <= tol); /* the wide range */
    CHECK(check(0, 0, 1, 100, 600, 600, 1.0f, 1.0f, 0) <= tol); /* op(B) too large: OpenBLAS */
    /* products large enough to be cut over the pool: column bands (NN,
     * packed op(B)), row bands (few columns), C^T bands, ragged edges; only
     * the kernel promises the same bits on any thread count (OpenBLAS's
     * differ with it on AVX2 CPUs) */
    if (best != JN_SGEMM_OPENBLAS) {
        static const int64_t shapes[][3] = {{32, 512, 128}, {1024, 96, 128}, {512, 128, 32}, {32, 130, 1000},
                                            {700, 33, 64}, {64, 515, 40}, {100, 200, 129},
                                            {8, 2100, 70}};
        for (int si = 0; si < 8; si++)
            for (int ta = 0; ta < 2; ta++)
                for (int tb = 0; tb < 2; tb++)
                    for (int mode = 0; mode < 3; mode++)
                        CHECK(threads_same(ta, tb, shapes[si][0], shapes[si][1], shapes[si][2], mode));
        /* and the parallel products are still right */
        jn_set_num_threads(2);
        CHECK(check(1, 0, 1, 32, 512, 128, 1.0f, 1.0f, 0) <= tol);
        CHECK(check(1, 0, 0, 700, 33, 64, 1.0f, 0.0f, 1) <= tol);
        CHECK(check(1, 1, 1, 64, 515, 40, 1.0f, 1.0f, 2) <= tol);
    } else { /* OpenBLAS on its threads: right, if not bit-stable */
        jn_set_num_threads(2);
        CHECK(check(0, 0, 1, 32, 512, 128, 1.0f, 1.0f, 0) <= tol);
        CHECK(check(0, 0, 0, 700, 33, 64, 1.0f, 0.0f, 1) <= tol);
        CHECK(check(0, 1, 1, 64, 515, 40, 1.0f, 1.0f, 2) <= tol);
    }
    /* the level switch benchmarks use: OpenBLAS alone, then back */
    CHECK(jn_rt_sgemm_level(-1) == best);
    CHECK(jn_rt_sgemm_level(JN_SGEMM_OPENBLAS) == JN_SGEMM_OPENBLAS);
    CHECK(!jn_rt_sgemm_small(0, 1, 32, 512, 128, 1.0f, NULL, 128, NULL, 128, 0.0f, NULL, 512));
    CHECK(check(0, 0, 1, 32, 512, 128, 1.0f, 1.0f, 0) <= tol);
    CHECK(jn_rt_sgemm_level(JN_SGEMM_AVX2) == (best < JN_SGEMM_AVX2 ? best : JN_SGEMM_AVX2));
    CHECK(jn_rt_sgemm_level(JN_SGEMM_KERNEL) == best);
    JT_DONE();
}
