/* k_lapack.c -- decompositions and solvers over LAPACK: linalg_inv,
 * linalg_solve, linalg_det, linalg_slogdet, linalg_cholesky_ex.
 *
 * OpenBLAS exports the Fortran LAPACK routines; their prototypes are
 * declared here (LP64: 32-bit integers, the hidden character lengths
 * gfortran appends).  Each matrix of a batch [..., n, n] is copied into a
 * column-major scratch buffer whatever its strides, factorized (getrf: LU
 * with partial pivoting; potrf: Cholesky) and the result copied out: the
 * factorization of the matrix itself, as torch's CPU path computes it, so
 * pivots, determinant signs and the index named by a singular or
 * not-positive-definite error are torch's.  The inverse is the solve
 * against the identity (getrs, as torch's linalg.inv), so it needs no
 * workspace query.  float32 and float64 only (torch refuses the low
 * precision and integer dtypes the same way).  Batches run one matrix
 * after another: these are small, rare ops in a training step.
 * No CUDA kernel: a CUDA tensor gets the dispatcher's unsupported-op error.
 */
#include "jn_runtime.h"

#include <assert.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int lp_int;
void sgetrf_(const lp_int *m, const lp_int *n, float *a, const lp_int *lda, lp_int *ipiv, lp_int *info);
void dgetrf_(const lp_int *m, const lp_int *n, double *a, const lp_int *lda, lp_int *ipiv, lp_int *info);
void sgetrs_(const char *trans, const lp_int *n, const lp_int *nrhs, const float *a, const lp_int *lda,
             const lp_int *ipiv, float *b, const lp_int *ldb, lp_int *info, size_t trans_len);
void dgetrs_(const char *trans, const lp_int *n, const lp_int *nrhs, const double *a, const lp_int *lda,
             const lp_int *ipiv, double *b, const lp_int *ldb, lp_int *info, size_t trans_len);
void spotrf_(const char *uplo, const lp_int *n, float *a, const lp_int *lda, lp_int *info, size_t uplo_len);
void dpotrf_(const char *uplo, const lp_int *n, double *a, const lp_int *lda, lp_int *info, size_t uplo_len);

/* torch's scalar type names, which its linalg errors print */
static const char *torch_name(jn_dtype d) {
    static const char *const names[JN_NDTYPES] = {[JN_F32] = "Float", [JN_F64] = "Double", [JN_F16] = "Half",
                                                  [JN_BF16] = "BFloat16", [JN_I64] = "Long", [JN_I32] = "Int",
                                                  [JN_U8] = "Byte", [JN_BOOL] = "Bool"};
    return names[d];
}

/* A batch of square float32/float64 matrices, checked in torch's order. */
static jn_status check_square(const char *fn, const jn_tensor *A, const char *name) {
    if (A->ndim < 2)
        return jn_error(JN_ERR_SHAPE, "%s: The input tensor %s must have at least 2 dimensions.", fn, name);
    int64_t r = A->shape[A->ndim - 2], c = A->shape[A->ndim - 1];
    if (r != c)
        return jn_error(JN_ERR_SHAPE, "%s: %s must be batches of square matrices, but they are %lld by %lld matrices",
                        fn, name, (long long)r, (long long)c);
    if (A->dtype == JN_F16 || A->dtype == JN_BF16)
        return jn_error(JN_ERR_UNSUPPORTED, "%s: Low precision dtypes not supported. Got %s", fn,
                        torch_name(A->dtype));
    if (A->dtype != JN_F32 && A->dtype != JN_F64) /* NotImplementedError, as torch's */
        return jn_error(JN_ERR_UNSUPPORTED, "%s: Expected a floating point or complex tensor as input. Got %s", fn,
                        torch_name(A->dtype));
    if (r > INT_MAX / (r ? r : 1)) /* LAPACK's 32-bit integers index the whole matrix */
        return jn_error(JN_ERR_VALUE, "%s: %lld by %lld matrices are too large for LAPACK", fn, (long long)r,
                        (long long)r);
    return JN_OK;
}

static void meta_of(const jn_tensor *t, jn_meta *m) {
    m->dtype = t->dtype;
    m->ndim = t->ndim;
    memcpy(m->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
}

/* Element offset of matrix b of t's batch (its dims before the last two). */
static int64_t batch_off(const jn_tensor *t, int64_t b) {
    int64_t off = 0;
    for (int d = t->ndim - 3; d >= 0; d--) {
        off += (b % t->shape[d]) * t->strides[d];
        b /= t->shape[d];
    }
    return off;
}
/* Element offset of entry b of a batch-shaped tensor (all dims batch). */
static int64_t batch_off2(const jn_tensor *t, int64_t b) {
    int64_t off = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        off += (b % t->shape[d]) * t->strides[d];
        b /= t->shape[d];
    }
    return off;
}
static int64_t batch_count(const jn_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->ndim - 2; d++) n *= t->shape[d];
    return n;
}

/* "(Batch element 3): " before a batched input's message, as torch. */
static const char *batch_prefix(const jn_tensor *A, int64_t b, char *buf, size_t n) {
    buf[0] = 0;
    if (A->ndim > 2) snprintf(buf, n, "(Batch element %lld): ", (long long)b);
    return buf;
}

/* ------------------------------------------------------------------ infer */
jn_status jn_infer_linalg_inv(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    jn_status s = check_square("linalg.inv", in[0], "A");
    if (!s) meta_of(in[0], out);
    return s;
}

jn_status jn_infer_linalg_det(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    jn_status s = check_square("linalg.det", in[0], "A");
    if (s) return s;
    meta_of(in[0], out);
    out->ndim -= 2;
    return JN_OK;
}

jn_status jn_infer_linalg_slogdet(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    jn_status s = check_square("linalg.slogdet", in[0], "A");
    if (s) return s;
    meta_of(in[0], &out[0]);
    out[0].ndim -= 2;
    out[1] = out[0];
    return JN_OK;
}

jn_status jn_infer_linalg_cholesky_ex(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    jn_status s = check_square("linalg.cholesky", in[0], "A");
    if (s) return s;
    meta_of(in[0], &out[0]);
    out[1] = out[0];
    out[1].ndim -= 2;
    out[1].dtype = JN_I32;
    return JN_OK;
}

jn_status jn_infer_linalg_solve(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    const jn_tensor *A = in[0], *B = in[1];
    jn_status s = check_square("linalg.solve", A, "A");
    if (s) return s;
    if (B->dtype != A->dtype)
        return jn_error(JN_ERR_RUNTIME,
                        "linalg.solve: Expected A and B to have the same dtype, but found A of type %s and B of "
                        "type %s instead", torch_name(A->dtype), torch_name(B->dtype));
    int same = B->ndim == A->ndim && B->shape[B->ndim - 2] == A->shape[A->ndim - 1];
    for (int d = 0; same && d < A->ndim - 2; d++) same = A->shape[d] == B->shape[d];
    if (!same) /* the batch dims are janus.linalg.solve's to broadcast: torch names the matrices */
        return jn_error(JN_ERR_SHAPE, "linalg.solve: Incompatible shapes of A and B for the equation AX = B (%lldx%lld "
                        "and %lldx%lld)", (long long)A->shape[A->ndim - 2], (long long)A->shape[A->ndim - 1],
                        (long long)B->shape[B->ndim - 2], (long long)B->shape[B->ndim - 1]);
    if (B->shape[B->ndim - 1] > INT_MAX)
        return jn_error(JN_ERR_VALUE, "linalg.solve: B has too many columns for LAPACK");
    meta_of(B, out);
    return JN_OK;
}

/* ---------------------------------------------------------------- kernels */
/* Per element type T with LAPACK prefix P: copy a rows x cols matrix at
 * element offset off of t into column-major buf (ld rows) and back; then
 * the kernels.  Errors are returned after the scratch is freed. */
#define LAPACK_KERNELS(T, P)                                                                                \
    static void load_##P(const jn_tensor *t, int64_t off, int64_t rows, int64_t cols, T *buf) {           \
        const T *src = (const T *)jn_data(t) + off;                                                        \
        int64_t sr = t->strides[t->ndim - 2], sc = t->strides[t->ndim - 1];                                 \
        for (int64_t j = 0; j < cols; j++)                                                                  \
            for (int64_t i = 0; i < rows; i++) buf[i + j * rows] = src[i * sr + j * sc];                    \
    }                                                                                                       \
    static void store_##P(const jn_tensor *t, int64_t off, int64_t rows, int64_t cols, const T *buf) {    \
        T *dst = (T *)jn_data(t) + off;                                                                     \
        int64_t sr = t->strides[t->ndim - 2], sc = t->strides[t->ndim - 1];                                 \
        for (int64_t i = 0; i < rows; i++)                                                                  \
            for (int64_t j = 0; j < cols; j++) dst[i * sr + j * sc] = buf[i + j * rows];                    \
    }                                                                                                       \
    /* X = A^-1 B per matrix (B NULL: the identity: the inverse) */                                         \
    static jn_status solve_##P(const jn_tensor *A, const jn_tensor *B, const jn_tensor *X) {               \
        lp_int n = (lp_int)A->shape[A->ndim - 1], k = B ? (lp_int)B->shape[B->ndim - 1] : n, ld = n ? n : 1; \
        int64_t nb = batch_count(A);                                                                       \
        if (!n || !k || !nb) return JN_OK;                                                                  \
        T *a = malloc(sizeof(T) * ((size_t)n * (size_t)n + (size_t)n * (size_t)k));                        \
        lp_int *piv = malloc(sizeof(lp_int) * (size_t)n);                                                   \
        const char *fn = B ? "linalg.solve" : "linalg.inv";                                                \
        jn_status s = a && piv ? JN_OK : jn_error(JN_ERR_NOMEM, "out of memory in %s", fn);                \
        T *x = a ? a + (size_t)n * (size_t)n : NULL;                                                       \
        for (int64_t b = 0; b < nb && !s; b++) {                                                            \
            lp_int info = 0;                                                                               \
            load_##P(A, batch_off(A, b), n, n, a);                                                          \
            if (B) {                                                                                        \
                load_##P(B, batch_off(B, b), n, k, x);                                                      \
            } else {                                                                                        \
                memset(x, 0, sizeof(T) * (size_t)n * (size_t)n);                                            \
                for (lp_int i = 0; i < n; i++) x[i + (size_t)i * (size_t)n] = 1;                            \
            }                                                                                               \
            P##getrf_(&n, &n, a, &ld, piv, &info);                                                          \
            if (info > 0) {                                                                                 \
                char pre[48];                                                                               \
                batch_prefix(A, b, pre, sizeof pre);                                                        \
                s = B ? jn_error(JN_ERR_RUNTIME, "torch.linalg.solve: %sThe solver failed because the input matrix " \
                                 "is singular.", pre)                                                       \
                      : jn_error(JN_ERR_RUNTIME, "linalg.inv: %sThe diagonal element %d is zero, the inversion " \
                                 "could not be completed because the input matrix is singular.", pre, info); \
                break;                                                                                      \
            }                                                                                               \
            P##getrs_("N", &n, &k, a, &ld, piv, x, &ld, &info, 1);                                          \
            assert(info == 0); /* a negative info is a bad argument: ours */                                \
            store_##P(X, batch_off(X, b), n, k, x);                                                         \
        }                                                                                                   \
        free(a);                                                                                            \
        free(piv);                                                                                          \
        return s;                                                                                           \
    }                                                                                                       \
    /* log|det| and sign (log_out NULL: det into det_out instead) from LU;                                  \
     * an exactly zero pivot: sign 0, log -inf, det 0 (torch's values) */                                   \
    static jn_status det_##P(const jn_tensor *A, const jn_tensor *log_out, const jn_tensor *det_out) {      \
        lp_int n = (lp_int)A->shape[A->ndim - 1], ld = n ? n : 1;                                          \
        int64_t nb = batch_count(A);                                                                       \
        T *a = malloc(sizeof(T) * ((size_t)n * (size_t)n + 1));                                            \
        lp_int *piv = malloc(sizeof(lp_int) * ((size_t)n + 1));                                             \
        if (!a || !piv) {                                                                                   \
            free(a);                                                                                        \
            free(piv);                                                                                      \
            return jn_error(JN_ERR_NOMEM, "out of memory in linalg.det");                                   \
        }                                                                                                   \
        for (int64_t b = 0; b < nb; b++) {                                                                  \
            lp_int info = 0;                                                                               \
            T sign = 1, logabs = 0, det = 1;                                                                \
            if (n) {                                                                                        \
                load_##P(A, batch_off(A, b), n, n, a);                                                      \
                P##getrf_(&n, &n, a, &ld, piv, &info);                                                      \
            }                                                                                               \
            for (lp_int i = 0; i < n; i++) {                                                                \
                T d = a[i + (size_t)i * (size_t)n];                                                         \
                det *= piv[i] != i + 1 ? -d : d;                                                            \
                if (piv[i] != i + 1) sign = -sign;                                                          \
                if (d < 0) sign = -sign;                                                                    \
                logabs += (T)log(fabs((double)d));                                                          \
            }                                                                                               \
            if (info > 0) { /* U has a zero pivot */                                                        \
                sign = 0;                                                                                   \
                logabs = (T)-INFINITY;                                                                      \
            }                                                                                               \
            if (log_out) {                                                                                  \
                ((T *)jn_data(log_out))[batch_off2(log_out, b)] = logabs;                                  \
                ((T *)jn_data(det_out))[batch_off2(det_out, b)] = sign;                                    \
            } else {                                                                                        \
                ((T *)jn_data(det_out))[batch_off2(det_out, b)] = det;                                     \
            }                                                                                               \
        }                                                                                                   \
        free(a);                                                                                            \
        free(piv);                                                                                          \
        return JN_OK;                                                                                       \
    }                                                                                                       \
    /* L (or U) into L, the LAPACK info into info[b]; the other triangle 0 */                               \
    static jn_status cholesky_##P(const jn_tensor *A, int upper, int check, const jn_tensor *L,            \
                                  const jn_tensor *info_out) {                                             \
        lp_int n = (lp_int)A->shape[A->ndim - 1], ld = n ? n : 1;                                          \
        int64_t nb = batch_count(A);                                                                       \
        T *a = malloc(sizeof(T) * ((size_t)n * (size_t)n + 1));                                            \
        if (!a) return jn_error(JN_ERR_NOMEM, "out of memory in linalg.cholesky");                          \
        jn_status s = JN_OK;                                                                               \
        for (int64_t b = 0; b < nb && !s; b++) {                                                            \
            lp_int info = 0;                                                                               \
            if (n) {                                                                                        \
                load_##P(A, batch_off(A, b), n, n, a);                                                      \
                P##potrf_(upper ? "U" : "L", &n, a, &ld, &info, 1);                                         \
                for (lp_int j = 0; j < n; j++)                                                              \
                    for (lp_int i = 0; i < n; i++)                                                          \
                        if (upper ? i > j : i < j) a[i + (size_t)j * (size_t)n] = 0;                        \
                store_##P(L, batch_off(L, b), n, n, a);                                                     \
            }                                                                                               \
            ((int32_t *)jn_data(info_out))[batch_off2(info_out, b)] = info;                                \
            if (info > 0 && check) {                                                                        \
                char pre[48];                                                                               \
                s = jn_error(JN_ERR_RUNTIME, "linalg.cholesky: %sThe factorization could not be completed "  \
                             "because the input is not positive-definite (the leading minor of order %d is " \
                             "not positive-definite).", batch_prefix(A, b, pre, sizeof pre), info);         \
            }                                                                                               \
        }                                                                                                   \
        free(a);                                                                                            \
        return s;                                                                                           \
    }

LAPACK_KERNELS(float, s)
LAPACK_KERNELS(double, d)

jn_status jn_cpu_linalg_inv(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return in[0]->dtype == JN_F64 ? solve_d(in[0], NULL, out[0]) : solve_s(in[0], NULL, out[0]);
}

jn_status jn_cpu_linalg_solve(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return in[0]->dtype == JN_F64 ? solve_d(in[0], in[1], out[0]) : solve_s(in[0], in[1], out[0]);
}

jn_status jn_cpu_linalg_det(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return in[0]->dtype == JN_F64 ? det_d(in[0], NULL, out[0]) : det_s(in[0], NULL, out[0]);
}

jn_status jn_cpu_linalg_slogdet(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return in[0]->dtype == JN_F64 ? det_d(in[0], out[0], out[1]) : det_s(in[0], out[0], out[1]);
}

jn_status jn_cpu_linalg_cholesky_ex(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    int upper = a->a[0].i != 0, check = a->a[1].i != 0;
    return in[0]->dtype == JN_F64 ? cholesky_d(in[0], upper, check, out[0], out[1])
                                  : cholesky_s(in[0], upper, check, out[0], out[1]);
}
