/* bench_sgemm_small.c -- ns per call of the runtime's float32 GEMM
 * (runtime/k_gemm.c) on a recurrent step's small products, for each kernel
 * level this CPU has (2 AVX-512, 1 its AVX2 port, 0 OpenBLAS) in the same
 * process: the levels alternate in rounds (so load changes hit each), each
 * round times `calls` calls in thread CPU time, and the median round is
 * reported, with the levels' ratios to OpenBLAS.  C, without the Python
 * dispatch that bench_gemm.py --small includes, so the figures are the
 * kernels' (and OpenBLAS's per-call packing and overhead).
 *
 *   cmake --build build --target bench_sgemm_small
 *   OPENBLAS_NUM_THREADS=1 build/bench_sgemm_small [rounds]
 *
 * On an AVX-512 CPU, OPENBLAS_CORETYPE=Haswell makes OpenBLAS run its AVX2
 * kernels: the comparison an AVX2-only CPU would see for level 1.
 */
#include "jn_runtime.h"
#include "k_gemm.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* what: 0 linear x[M,K] @ W[N,K]^T + b; 1 mm dY[M,K] @ W[K,N]; 2 acc
 * C[M,N] += dY[K,M]^T @ x[K,N] (the accumulated weight gradient) */
typedef struct {
    const char *name;
    int what;
    int64_t M, N, K;
} shape;

static void call(const shape *s, const float *A, const float *B, const float *bias, float *C) {
    if (s->what == 0) jn_rt_sgemm_bias(0, 1, s->M, s->N, s->K, A, s->K, B, s->K, bias, C, s->N);
    else if (s->what == 1) jn_rt_sgemm(0, 0, s->M, s->N, s->K, 1.0f, A, s->K, B, s->N, 0.0f, C, s->N);
    else jn_rt_sgemm(1, 0, s->M, s->N, s->K, 1.0f, A, s->M, B, s->N, 1.0f, C, s->N);
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 15;
    static const shape shapes[] = {
        {"linear (LSTM x W_ih^T, TBPTT)", 0, 8, 256, 16}, {"linear (LSTM h W_hh^T, TBPTT)", 0, 8, 256, 64},
        {"linear (head, TBPTT)", 0, 8, 16, 64},           {"linear (GRU gates)", 0, 8, 96, 32},
        {"linear (GRU head)", 0, 8, 32, 32},              {"linear 1 row", 0, 1, 96, 33},
        {"linear 12 rows", 0, 12, 100, 37},               {"linear 4 512 128", 0, 4, 512, 128},
        {"mm dY W (TBPTT)", 1, 8, 64, 256},               {"mm dY W (GRU)", 1, 8, 32, 96},
        {"acc dW (TBPTT W_hh)", 2, 256, 64, 8},           {"acc dW (GRU)", 2, 96, 32, 8},
    };
    const int ns = (int)(sizeof shapes / sizeof shapes[0]);
    jn_set_num_threads(1);
    int best = jn_rt_sgemm_level(-1);
    printf("small float32 products, one thread, ns per call (median of %d rounds), best level %d\n", rounds, best);
    printf("%-32s %5s %5s %5s", "product", "M", "N", "K");
    for (int l = best; l >= 0; l--) printf(" %10s", l == 2 ? "AVX-512" : l == 1 ? "AVX2" : "OpenBLAS");
    for (int l = best; l >= 1; l--) printf(" %9s", l == 2 ? "512/BLAS" : "AVX2/BLAS");
    printf("\n");
    for (int si = 0; si < ns; si++) {
        const shape *s = &shapes[si];
        size_t na = (size_t)(s->M * s->K), nb = (size_t)(s->N * s->K), nc = (size_t)(s->M * s->N);
        float *A = malloc(na * sizeof(float)), *B = malloc(nb * sizeof(float)), *C = malloc(nc * sizeof(float));
        float *bias = malloc((size_t)s->N * sizeof(float));
        for (size_t i = 0; i < na; i++) A[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
        for (size_t i = 0; i < nb; i++) B[i] = (float)((i * 53) % 103) / 103.0f - 0.5f;
        for (size_t i = 0; i < nc; i++) C[i] = 0.0f;
        for (int64_t j = 0; j < s->N; j++) bias[j] = 0.01f * (float)j;
        double mnk = (double)s->M * (double)s->N * (double)s->K;
        int calls = mnk < 1e5 ? 2000 : mnk < 1e6 ? 400 : 100;
        double *t[3];
        for (int l = 0; l <= best; l++) t[l] = malloc(sizeof(double) * (size_t)rounds);
        for (int r = 0; r < rounds; r++)
            for (int l = 0; l <= best; l++) {
                int lv = (l + r) % (best + 1); /* rotated: no level always first */
                jn_rt_sgemm_level(lv);
                for (int i = 0; i < 50; i++) call(s, A, B, bias, C);
                if (s->what == 2)
                    for (size_t i = 0; i < nc; i++) C[i] = 0.0f; /* keep the accumulator bounded */
                double t0 = now_ns();
                for (int i = 0; i < calls; i++) call(s, A, B, bias, C);
                t[lv][r] = (now_ns() - t0) / calls;
            }
        jn_rt_sgemm_level(JN_SGEMM_KERNEL);
        double med[3];
        for (int l = 0; l <= best; l++) {
            qsort(t[l], (size_t)rounds, sizeof(double), cmp);
            med[l] = t[l][rounds / 2];
        }
        printf("%-32s %5lld %5lld %5lld", s->name, (long long)s->M, (long long)s->N, (long long)s->K);
        for (int l = best; l >= 0; l--) printf(" %10.0f", med[l]);
        for (int l = best; l >= 1; l--) printf(" %9.2f", med[l] / med[0]);
        printf("\n");
        fflush(stdout);
        for (int l = 0; l <= best; l++) free(t[l]);
        free(A), free(B), free(C), free(bias);
    }
    return 0;
}
