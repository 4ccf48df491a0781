/* k_lapack.c -- decompositions and solvers over LAPACK: linalg_inv,
 * linalg_solve, linalg_det, linalg_slogdet, linalg_cholesky_ex,
 * linalg_solve_triangular, linalg_eigh, linalg_svd, linalg_qr, linalg_pinv.
 *
 * OpenBLAS exports the Fortran LAPACK routines; their prototypes are
 * declared here (LP64: 32-bit integers, the hidden character lengths
 * gfortran appends).  Each matrix of a batch [..., m, n] is copied into a
 * column-major scratch buffer whatever its strides, factorized (getrf: LU
 * with partial pivoting; potrf: Cholesky; syevd; gesdd; geqrf + orgqr) and
 * the results copied out: the factorization of the matrix itself, as
 * torch's CPU path computes it, so pivots, determinant signs, vector signs
 * and the index named by a singular or not-positive-definite error are
 * torch's.  The inverse is the solve against the identity (getrs, as
 * torch's linalg.inv); the triangular solve is cblas trsm.  float32 and
 * float64 only (torch refuses the low precision and integer dtypes the
 * same way).  Batches run one matrix after another: these are small, rare
 * ops in a training step.  No CUDA kernel: a CUDA tensor gets the
 * dispatcher's unsupported-op error.
 */
#include "jn_runtime.h"

#include <cblas.h>

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
void ssyevd_(const char *jobz, const char *uplo, const lp_int *n, float *a, const lp_int *lda, float *w, float *work,
             const lp_int *lwork, lp_int *iwork, const lp_int *liwork, lp_int *info, size_t jobz_len, size_t uplo_len);
void dsyevd_(const char *jobz, const char *uplo, const lp_int *n, double *a, const lp_int *lda, double *w,
             double *work, const lp_int *lwork, lp_int *iwork, const lp_int *liwork, lp_int *info, size_t jobz_len,
             size_t uplo_len);
void sgesdd_(const char *jobz, const lp_int *m, const lp_int *n, float *a, const lp_int *lda, float *s, float *u,
             const lp_int *ldu, float *vt, const lp_int *ldvt, float *work, const lp_int *lwork, lp_int *iwork,
             lp_int *info, size_t jobz_len);
void dgesdd_(const char *jobz, const lp_int *m, const lp_int *n, double *a, const lp_int *lda, double *s, double *u,
             const lp_int *ldu, double *vt, const lp_int *ldvt, double *work, const lp_int *lwork, lp_int *iwork,
             lp_int *info, size_t jobz_len);
void sgeqrf_(const lp_int *m, const lp_int *n, float *a, const lp_int *lda, float *tau, float *work,
             const lp_int *lwork, lp_int *info);
void dgeqrf_(const lp_int *m, const lp_int *n, double *a, const lp_int *lda, double *tau, double *work,
             const lp_int *lwork, lp_int *info);
void sorgqr_(const lp_int *m, const lp_int *n, const lp_int *k, float *a, const lp_int *lda, const float *tau,
             float *work, const lp_int *lwork, lp_int *info);
void dorgqr_(const lp_int *m, const lp_int *n, const lp_int *k, double *a, const lp_int *lda, const double *tau,
             double *work, const lp_int *lwork, lp_int *info);

/* torch's scalar type names, which its linalg errors print */
static const char *torch_name(jn_dtype d) {
    static const char *const names[JN_NDTYPES] = {[JN_F32] = "Float", [JN_F64] = "Double", [JN_F16] = "Half",
                                                  [JN_BF16] = "BFloat16", [JN_I64] = "Long", [JN_I32] = "Int",
                                                  [JN_U8] = "Byte", [JN_BOOL] = "Bool"};
    return names[d];
}

/* A batch of float32/float64 matrices (square ones when square), checked
 * in torch's order. */
static jn_status check_matrix(const char *fn, const jn_tensor *A, const char *name, int square) {
    if (A->ndim < 2)
        return jn_error(JN_ERR_SHAPE, "%s: The input tensor %s must have at least 2 dimensions.", fn, name);
    int64_t r = A->shape[A->ndim - 2], c = A->shape[A->ndim - 1];
    if (square && r != c)
        return jn_error(JN_ERR_SHAPE, "%s: %s must be batches of square matrices, but they are %lld by %lld matrices",
                        fn, name, (long long)r, (long long)c);
    if (A->dtype == JN_F16 || A->dtype == JN_BF16)
        return jn_error(JN_ERR_UNSUPPORTED, "%s: Low precision dtypes not supported. Got %s", fn,
                        torch_name(A->dtype));
    if (A->dtype != JN_F32 && A->dtype != JN_F64) /* NotImplementedError, as torch's */
        return jn_error(JN_ERR_UNSUPPORTED, "%s: Expected a floating point or complex tensor as input. Got %s", fn,
                        torch_name(A->dtype));
    int64_t big = r > c ? r : c; /* LAPACK's 32-bit integers index the whole (square) matrix */
    if (big > INT_MAX / (big ? big : 1))
        return jn_error(JN_ERR_VALUE, "%s: %lld by %lld matrices are too large for LAPACK", fn, (long long)r,
                        (long long)c);
    return JN_OK;
}
static jn_status check_square(const char *fn, const jn_tensor *A, const char *name) {
    return check_matrix(fn, A, name, 1);
}

static void meta_of(const jn_tensor *t, jn_meta *m) {
    m->dtype = t->dtype;
    m->ndim = t->ndim;
    memcpy(m->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
}

/* Element offset of item b of t's batch: its dims before the last `inner`
 * (2 for a matrix, 1 for a vector, 0 for a scalar). */
static int64_t batch_off(const jn_tensor *t, int64_t b, int inner) {
    int64_t off = 0;
    for (int d = t->ndim - 1 - inner; d >= 0; d--) {
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

static jn_status infer_solve(const char *fn, jn_tensor *const *in, jn_meta *out) {
    const jn_tensor *A = in[0], *B = in[1];
    jn_status s = check_square(fn, A, "A");
    if (s) return s;
    if (B->dtype != A->dtype)
        return jn_error(JN_ERR_RUNTIME,
                        "%s: Expected A and B to have the same dtype, but found A of type %s and B of "
                        "type %s instead", fn, torch_name(A->dtype), torch_name(B->dtype));
    int same = B->ndim == A->ndim && B->shape[B->ndim - 2] == A->shape[A->ndim - 1];
    for (int d = 0; same && d < A->ndim - 2; d++) same = A->shape[d] == B->shape[d];
    if (!same) /* the batch dims are janus.linalg.solve's to broadcast: torch names the matrices */
        return jn_error(JN_ERR_SHAPE, "%s: Incompatible shapes of A and B for the equation AX = B (%lldx%lld and "
                        "%lldx%lld)", fn, (long long)A->shape[A->ndim - 2], (long long)A->shape[A->ndim - 1],
                        (long long)B->shape[B->ndim - 2], (long long)B->shape[B->ndim - 1]);
    if (B->shape[B->ndim - 1] > INT_MAX)
        return jn_error(JN_ERR_VALUE, "%s: B has too many columns for LAPACK", fn);
    meta_of(B, out);
    return JN_OK;
}
jn_status jn_infer_linalg_solve(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    return infer_solve("linalg.solve", in, out);
}
jn_status jn_infer_linalg_solve_triangular(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    return infer_solve("linalg.solve_triangular", in, out);
}

jn_status jn_infer_linalg_eigh(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    jn_status s = check_square("linalg.eigh", in[0], "A");
    if (s) return s;
    meta_of(in[0], &out[1]);
    out[0] = out[1];
    out[0].ndim -= 1;
    return JN_OK;
}

/* [..., rows, cols] over A's batch */
static jn_meta batch_matrix(const jn_tensor *A, int64_t rows, int64_t cols) {
    jn_meta m;
    meta_of(A, &m);
    m.shape[m.ndim - 2] = rows;
    m.shape[m.ndim - 1] = cols;
    return m;
}

jn_status jn_infer_linalg_svd(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    const jn_tensor *A = in[0];
    jn_status s = check_matrix("linalg.svd", A, "A", 0);
    if (s) return s;
    int64_t m = A->shape[A->ndim - 2], n = A->shape[A->ndim - 1], k = m < n ? m : n;
    int full = a->a[0].i != 0;
    out[0] = batch_matrix(A, 0, 0);
    out[0].ndim -= 1;
    out[0].shape[out[0].ndim - 1] = k;
    out[1] = batch_matrix(A, m, full ? m : k);
    out[2] = batch_matrix(A, full ? n : k, n);
    return JN_OK;
}

jn_status jn_infer_linalg_pinv(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    const jn_tensor *A = in[0];
    jn_status s = check_matrix("linalg.pinv", A, "A", 0);
    if (!s) *out = batch_matrix(A, A->shape[A->ndim - 1], A->shape[A->ndim - 2]);
    return s;
}

jn_status jn_infer_linalg_qr(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    const jn_tensor *A = in[0];
    jn_status s = check_matrix("linalg.qr", A, "A", 0);
    if (s) return s;
    int64_t m = A->shape[A->ndim - 2], n = A->shape[A->ndim - 1], k = m < n ? m : n, mode = a->a[0].i;
    if (mode < 0 || mode > 2)
        return jn_error(JN_ERR_VALUE, "linalg.qr: mode %lld is not 0 ('reduced'), 1 ('complete') or 2 ('r')",
                        (long long)mode);
    out[0] = batch_matrix(A, m, mode == 1 ? m : k);
    if (mode == 2) { /* torch's empty Q */
        out[0].ndim = 1;
        out[0].shape[0] = 0;
    }
    out[1] = batch_matrix(A, mode == 1 ? m : k, n);
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
            load_##P(A, batch_off(A, b, 2), n, n, a);                                                          \
            if (B) {                                                                                        \
                load_##P(B, batch_off(B, b, 2), n, k, x);                                                      \
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
            store_##P(X, batch_off(X, b, 2), n, k, x);                                                         \
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
                load_##P(A, batch_off(A, b, 2), n, n, a);                                                      \
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
                ((T *)jn_data(log_out))[batch_off(log_out, b, 0)] = logabs;                                  \
                ((T *)jn_data(det_out))[batch_off(det_out, b, 0)] = sign;                                    \
            } else {                                                                                        \
                ((T *)jn_data(det_out))[batch_off(det_out, b, 0)] = det;                                     \
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
                load_##P(A, batch_off(A, b, 2), n, n, a);                                                      \
                P##potrf_(upper ? "U" : "L", &n, a, &ld, &info, 1);                                         \
                for (lp_int j = 0; j < n; j++)                                                              \
                    for (lp_int i = 0; i < n; i++)                                                          \
                        if (upper ? i > j : i < j) a[i + (size_t)j * (size_t)n] = 0;                        \
                store_##P(L, batch_off(L, b, 2), n, n, a);                                                     \
            }                                                                                               \
            ((int32_t *)jn_data(info_out))[batch_off(info_out, b, 0)] = info;                                \
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

/* A LAPACK workspace query's answer (work[0]) as a count. */
#define LWORK(x) ((lp_int)(x) > 1 ? (lp_int)(x) : 1)

/* Per type again: triangular solve (cblas trsm: no singularity check, an
 * exactly zero diagonal gives inf/nan as torch's), symmetric eigensolver
 * (syevd), SVD (gesdd), QR (geqrf + orgqr).  Workspaces are sized by a
 * query on the first matrix and kept for the batch. */
#define LAPACK_KERNELS2(T, P)                                                                               \
    static jn_status solve_tri_##P(const jn_tensor *A, const jn_tensor *B, int upper, int unit,            \
                                   const jn_tensor *X) {                                                   \
        lp_int n = (lp_int)A->shape[A->ndim - 1], k = (lp_int)B->shape[B->ndim - 1], ld = n ? n : 1;       \
        int64_t nb = batch_count(A);                                                                       \
        if (!n || !k || !nb) return JN_OK;                                                                  \
        T *a = malloc(sizeof(T) * ((size_t)n * (size_t)n + (size_t)n * (size_t)k));                        \
        if (!a) return jn_error(JN_ERR_NOMEM, "out of memory in linalg.solve_triangular");                  \
        T *x = a + (size_t)n * (size_t)n;                                                                  \
        for (int64_t b = 0; b < nb; b++) {                                                                  \
            load_##P(A, batch_off(A, b, 2), n, n, a);                                                       \
            load_##P(B, batch_off(B, b, 2), n, k, x);                                                       \
            cblas_##P##trsm(CblasColMajor, CblasLeft, upper ? CblasUpper : CblasLower, CblasNoTrans,        \
                            unit ? CblasUnit : CblasNonUnit, n, k, 1, a, ld, x, ld);                        \
            store_##P(X, batch_off(X, b, 2), n, k, x);                                                      \
        }                                                                                                   \
        free(a);                                                                                            \
        return JN_OK;                                                                                       \
    }                                                                                                       \
    static jn_status eigh_##P(const jn_tensor *A, int upper, const jn_tensor *L, const jn_tensor *V) {     \
        lp_int n = (lp_int)A->shape[A->ndim - 1], ld = n ? n : 1, info = 0, lwork = -1, liwork = -1, iq = 0; \
        int64_t nb = batch_count(A);                                                                       \
        if (!n || !nb) return JN_OK;                                                                        \
        T q = 0, *a = malloc(sizeof(T) * ((size_t)n * (size_t)n + (size_t)n));                             \
        if (!a) return jn_error(JN_ERR_NOMEM, "out of memory in linalg.eigh");                              \
        T *w = a + (size_t)n * (size_t)n;                                                                  \
        const char *uplo = upper ? "U" : "L";                                                               \
        P##syevd_("V", uplo, &n, a, &ld, w, &q, &lwork, &iq, &liwork, &info, 1, 1);                         \
        lwork = LWORK(q);                                                                                   \
        liwork = iq > 1 ? iq : 1;                                                                          \
        T *work = malloc(sizeof(T) * (size_t)lwork);                                                        \
        lp_int *iwork = malloc(sizeof(lp_int) * (size_t)liwork);                                            \
        jn_status s = work && iwork ? JN_OK : jn_error(JN_ERR_NOMEM, "out of memory in linalg.eigh");       \
        for (int64_t b = 0; b < nb && !s; b++) {                                                            \
            load_##P(A, batch_off(A, b, 2), n, n, a);                                                       \
            P##syevd_("V", uplo, &n, a, &ld, w, work, &lwork, iwork, &liwork, &info, 1, 1);                 \
            if (info > 0) {                                                                                 \
                char pre[48];                                                                               \
                s = jn_error(JN_ERR_RUNTIME, "linalg.eigh: %sThe algorithm failed to converge because the "  \
                             "input matrix is ill-conditioned or has too many repeated eigenvalues (error "   \
                             "code: %d).", batch_prefix(A, b, pre, sizeof pre), info);                       \
                break;                                                                                      \
            }                                                                                               \
            T *l = (T *)jn_data(L) + batch_off(L, b, 1);                                                    \
            for (lp_int i = 0; i < n; i++) l[i * L->strides[L->ndim - 1]] = w[i];                          \
            store_##P(V, batch_off(V, b, 2), n, n, a); /* eigenvectors are a's columns */                   \
        }                                                                                                   \
        free(a);                                                                                            \
        free(work);                                                                                         \
        free(iwork);                                                                                        \
        return s;                                                                                           \
    }                                                                                                       \
    static void eye_##P(T *buf, lp_int rows, lp_int cols) {                                                 \
        memset(buf, 0, sizeof(T) * (size_t)rows * (size_t)cols);                                            \
        for (lp_int i = 0; i < rows && i < cols; i++) buf[i + (size_t)i * (size_t)rows] = 1;                \
    }                                                                                                       \
    static jn_status svd_##P(const jn_tensor *A, int full, jn_tensor *const *out) {                        \
        lp_int m = (lp_int)A->shape[A->ndim - 2], n = (lp_int)A->shape[A->ndim - 1], k = m < n ? m : n;    \
        lp_int uc = full ? m : k, vr = full ? n : k, ldm = m ? m : 1, ldv = vr ? vr : 1, info = 0, lwork = -1; \
        int64_t nb = batch_count(A);                                                                       \
        if (!nb) return JN_OK;                                                                              \
        size_t na = (size_t)m * (size_t)n, nu = (size_t)m * (size_t)uc, nv = (size_t)vr * (size_t)n;       \
        T q = 0, *a = malloc(sizeof(T) * (na + nu + nv + (size_t)k + 1));                                  \
        lp_int *iwork = malloc(sizeof(lp_int) * (8 * (size_t)k + 1));                                      \
        if (!a || !iwork) {                                                                                 \
            free(a);                                                                                        \
            free(iwork);                                                                                    \
            return jn_error(JN_ERR_NOMEM, "out of memory in linalg.svd");                                   \
        }                                                                                                   \
        T *u = a + na, *vt = u + nu, *sv = vt + nv, *work = NULL;                                          \
        const char *jobz = full ? "A" : "S";                                                                \
        if (k) P##gesdd_(jobz, &m, &n, a, &ldm, sv, u, &ldm, vt, &ldv, &q, &lwork, iwork, &info, 1);        \
        lwork = LWORK(q);                                                                                   \
        jn_status s = JN_OK;                                                                               \
        if (k && !(work = malloc(sizeof(T) * (size_t)lwork)))                                               \
            s = jn_error(JN_ERR_NOMEM, "out of memory in linalg.svd");                                      \
        for (int64_t b = 0; b < nb && !s; b++) {                                                            \
            load_##P(A, batch_off(A, b, 2), m, n, a);                                                       \
            if (k) {                                                                                        \
                for (size_t i = 0; i < na; i++)                                                             \
                    if (!isfinite(a[i])) {                                                                  \
                        char pre[48];                                                                       \
                        s = jn_error(JN_ERR_RUNTIME, "linalg.svd: %sThe algorithm failed to converge because " \
                                     "the input matrix contained non-finite values.",                        \
                                     batch_prefix(A, b, pre, sizeof pre));                                  \
                        break;                                                                              \
                    }                                                                                       \
                if (s) break;                                                                               \
                P##gesdd_(jobz, &m, &n, a, &ldm, sv, u, &ldm, vt, &ldv, work, &lwork, iwork, &info, 1);     \
                if (info > 0) {                                                                             \
                    char pre[48];                                                                           \
                    s = jn_error(JN_ERR_RUNTIME, "linalg.svd: %sThe algorithm failed to converge because the " \
                                 "input matrix is ill-conditioned or has too many repeated singular values "  \
                                 "(error code: %d).", batch_prefix(A, b, pre, sizeof pre), info);            \
                    break;                                                                                  \
                }                                                                                           \
            } else { /* no singular values: full factors are identities */                                  \
                eye_##P(u, m, uc);                                                                          \
                eye_##P(vt, vr, n);                                                                         \
            }                                                                                               \
            T *sd = (T *)jn_data(out[0]) + batch_off(out[0], b, 1);                                         \
            for (lp_int i = 0; i < k; i++) sd[i * out[0]->strides[out[0]->ndim - 1]] = sv[i];               \
            store_##P(out[1], batch_off(out[1], b, 2), m, uc, u);                                           \
            store_##P(out[2], batch_off(out[2], b, 2), vr, n, vt);                                          \
        }                                                                                                   \
        free(a);                                                                                            \
        free(iwork);                                                                                        \
        free(work);                                                                                         \
        return s;                                                                                           \
    }                                                                                                       \
    /* A^+ = V diag(1/s) U^T over the singular values above the cutoff */                                   \
    static jn_status pinv_##P(const jn_tensor *A, double atol, double rtol, const jn_tensor *X) {          \
        lp_int m = (lp_int)A->shape[A->ndim - 2], n = (lp_int)A->shape[A->ndim - 1], k = m < n ? m : n;    \
        lp_int ldm = m ? m : 1, ldk = k ? k : 1, info = 0, lwork = -1;                                     \
        int64_t nb = batch_count(A);                                                                       \
        if (!nb || !m || !n) return JN_OK; /* an empty A^+: nothing to write */                            \
        size_t na = (size_t)m * (size_t)n, nu = (size_t)m * (size_t)k, nv = (size_t)k * (size_t)n;         \
        T q = 0, *a = malloc(sizeof(T) * (2 * na + nu + nv + (size_t)k)), *work = NULL;                    \
        lp_int *iwork = malloc(sizeof(lp_int) * 8 * (size_t)k);                                            \
        T *u = a ? a + na : NULL, *vt = u ? u + nu : NULL, *sv = vt ? vt + nv : NULL, *x = sv ? sv + k : NULL; \
        jn_status s = a && iwork ? JN_OK : jn_error(JN_ERR_NOMEM, "out of memory in linalg.pinv");         \
        if (!s) P##gesdd_("S", &m, &n, a, &ldm, sv, u, &ldm, vt, &ldk, &q, &lwork, iwork, &info, 1);       \
        lwork = LWORK(q);                                                                                   \
        if (!s && !(work = malloc(sizeof(T) * (size_t)lwork)))                                              \
            s = jn_error(JN_ERR_NOMEM, "out of memory in linalg.pinv");                                     \
        for (int64_t b = 0; b < nb && !s; b++) {                                                            \
            load_##P(A, batch_off(A, b, 2), m, n, a);                                                       \
            for (size_t i = 0; i < na && !s; i++)                                                           \
                if (!isfinite(a[i])) {                                                                      \
                    char pre[48];                                                                           \
                    s = jn_error(JN_ERR_RUNTIME, "linalg.svd: %sThe algorithm failed to converge because "   \
                                 "the input matrix contained non-finite values.",                            \
                                 batch_prefix(A, b, pre, sizeof pre));                                      \
                }                                                                                           \
            if (s) break;                                                                                   \
            P##gesdd_("S", &m, &n, a, &ldm, sv, u, &ldm, vt, &ldk, work, &lwork, iwork, &info, 1);          \
            if (info > 0) {                                                                                 \
                char pre[48];                                                                               \
                s = jn_error(JN_ERR_RUNTIME, "linalg.svd: %sThe algorithm failed to converge because the "  \
                             "input matrix is ill-conditioned or has too many repeated singular values "      \
                             "(error code: %d).", batch_prefix(A, b, pre, sizeof pre), info);                \
                break;                                                                                      \
            }                                                                                               \
            double cut = rtol * (double)sv[0] > atol ? rtol * (double)sv[0] : atol;                          \
            for (lp_int l = 0; l < k; l++) { /* U's columns scaled by 1/s (0 past the cutoff) */            \
                T inv = (double)sv[l] > cut ? 1 / sv[l] : 0;                                                \
                for (lp_int i = 0; i < m; i++) u[i + (size_t)l * (size_t)m] *= inv;                         \
            }                                                                                               \
            /* x (n x m) = Vt^T (scaled U)^T */                                                             \
            cblas_##P##gemm(CblasColMajor, CblasTrans, CblasTrans, n, m, k, 1, vt, ldk, u, ldm, 0, x, n);   \
            store_##P(X, batch_off(X, b, 2), n, m, x);                                                      \
        }                                                                                                   \
        free(a);                                                                                            \
        free(iwork);                                                                                        \
        free(work);                                                                                         \
        return s;                                                                                           \
    }                                                                                                       \
    static jn_status qr_##P(const jn_tensor *A, int mode, jn_tensor *const *out) {                         \
        lp_int m = (lp_int)A->shape[A->ndim - 2], n = (lp_int)A->shape[A->ndim - 1], k = m < n ? m : n;    \
        lp_int qc = mode == 1 ? m : k, rr = mode == 1 ? m : k, ac = n > qc ? n : qc, ld = m ? m : 1;       \
        lp_int info = 0, lwork = -1;                                                                        \
        int64_t nb = batch_count(A);                                                                       \
        if (!nb || !m) return JN_OK;                                                                        \
        size_t na = (size_t)m * (size_t)ac, nr = (size_t)rr * (size_t)n;                                    \
        T q1 = 0, q2 = 0, *a = malloc(sizeof(T) * (na + nr + (size_t)k + 1)), *work = NULL;                \
        if (!a) return jn_error(JN_ERR_NOMEM, "out of memory in linalg.qr");                                \
        T *r = a + na, *tau = r + nr;                                                                      \
        if (k) P##geqrf_(&m, &n, a, &ld, tau, &q1, &lwork, &info);                                          \
        if (mode != 2 && qc) P##orgqr_(&m, &qc, &k, a, &ld, tau, &q2, &lwork, &info);                       \
        lwork = LWORK(q1 > q2 ? q1 : q2);                                                                   \
        if (!(work = malloc(sizeof(T) * (size_t)lwork))) {                                                  \
            free(a);                                                                                        \
            return jn_error(JN_ERR_NOMEM, "out of memory in linalg.qr");                                    \
        }                                                                                                   \
        for (int64_t b = 0; b < nb; b++) {                                                                  \
            load_##P(A, batch_off(A, b, 2), m, n, a);                                                       \
            if (k) P##geqrf_(&m, &n, a, &ld, tau, work, &lwork, &info);                                     \
            assert(info == 0);                                                                              \
            for (lp_int j = 0; j < n; j++) /* R: the upper triangle of the factored rows */                \
                for (lp_int i = 0; i < rr; i++)                                                             \
                    r[i + (size_t)j * (size_t)rr] = i <= j ? a[i + (size_t)j * (size_t)m] : 0;              \
            store_##P(out[1], batch_off(out[1], b, 2), rr, n, r);                                           \
            if (mode == 2 || !qc) continue;                                                                 \
            P##orgqr_(&m, &qc, &k, a, &ld, tau, work, &lwork, &info); /* Q from the reflectors */           \
            assert(info == 0);                                                                              \
            store_##P(out[0], batch_off(out[0], b, 2), m, qc, a);                                           \
        }                                                                                                   \
        free(a);                                                                                            \
        free(work);                                                                                         \
        return JN_OK;                                                                                       \
    }

LAPACK_KERNELS2(float, s)
LAPACK_KERNELS2(double, d)

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

jn_status jn_cpu_linalg_solve_triangular(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    int upper = a->a[0].i != 0, unit = a->a[1].i != 0;
    return in[0]->dtype == JN_F64 ? solve_tri_d(in[0], in[1], upper, unit, out[0])
                                  : solve_tri_s(in[0], in[1], upper, unit, out[0]);
}

jn_status jn_cpu_linalg_eigh(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    int upper = a->a[0].i != 0;
    return in[0]->dtype == JN_F64 ? eigh_d(in[0], upper, out[0], out[1]) : eigh_s(in[0], upper, out[0], out[1]);
}

jn_status jn_cpu_linalg_svd(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    int full = a->a[0].i != 0;
    return in[0]->dtype == JN_F64 ? svd_d(in[0], full, out) : svd_s(in[0], full, out);
}

jn_status jn_cpu_linalg_qr(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    int mode = (int)a->a[0].i;
    return in[0]->dtype == JN_F64 ? qr_d(in[0], mode, out) : qr_s(in[0], mode, out);
}

jn_status jn_cpu_linalg_pinv(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return in[0]->dtype == JN_F64 ? pinv_d(in[0], a->a[0].f, a->a[1].f, out[0])
                                  : pinv_s(in[0], a->a[0].f, a->a[1].f, out[0]);
}
