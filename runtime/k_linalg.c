/* k_linalg.c -- matrix products: mm, bmm, matmul, addmm, linear.
 *
 * Every product here reduces to one batched, strided GEMM driver.  float32
 * and float64 go to OpenBLAS (cblas_sgemm / cblas_dgemm); float16 and
 * bfloat16 are widened to float32, multiplied by sgemm and narrowed after
 * (PyTorch also accumulates them in float32); integer dtypes use a plain loop
 * that accumulates in int64 with wrap-around (unsigned) arithmetic.  bool is
 * refused, as in PyTorch.
 *
 * Layouts: a matrix whose last stride is 1 goes to BLAS row-major with
 * lda = its row stride, one whose first stride is 1 goes as the transpose of
 * a row-major matrix; anything else (stride-0 rows, arbitrary strides,
 * overlapping rows) is copied contiguous first.  Batch dims broadcast through
 * per-batch element offsets (stride 0 along broadcast dims), so an expanded
 * operand is never materialized.  When the right operand is shared by the
 * whole batch and the left one's batch and row dims fold into one uniform
 * row stride (x @ W, linear on [B, S, in]) the batch becomes one large GEMM.
 * Many small matrices (which OpenBLAS runs single-threaded anyway) are spread
 * over the thread pool; large ones run one after another with BLAS threading.
 */
#include "jn_runtime.h"
#include "k_gemm.h"

#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* OpenBLAS runs a GEMM with M*N*K at most this on the calling thread only
 * (SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD), so such calls may run
 * concurrently from our pool without oversubscribing. */
#define BLAS_SINGLE_THREAD_MNK 262144.0

static const char *dn(jn_dtype d) { return jn_dtype_names[d]; }

/* "2x3" for error messages (PyTorch's mm wording). */
static const char *mat_str(int64_t r, int64_t c, char *buf, size_t n) {
    snprintf(buf, n, "%lldx%lld", (long long)r, (long long)c);
    return buf;
}

/* A new header over t's storage with its own shape and strides. */
static jn_tensor *view_of(jn_tensor *t, int nd, const int64_t *shape, const int64_t *strides) {
    jn_tensor *v = jn_tensor_alias(t);
    if (!v) return NULL;
    v->ndim = nd;
    memset(v->shape, 0, sizeof v->shape);
    memset(v->strides, 0, sizeof v->strides);
    if (nd) {
        memcpy(v->shape, shape, sizeof(int64_t) * (size_t)nd);
        memcpy(v->strides, strides, sizeof(int64_t) * (size_t)nd);
    }
    return v;
}

/* ------------------------------------------------------------- checks */
/* Shared dtype rule of every product: equal dtypes, not bool. */
static jn_status check_dtypes(const char *op, const jn_tensor *a, const jn_tensor *b) {
    if (a->dtype != b->dtype)
        return jn_error(JN_ERR_TYPE,
                        "%s: expected m1 and m2 to have the same dtype, but got: %s != %s "
                        "(convert one of them, e.g. with .to(%s))",
                        op, dn(a->dtype), dn(b->dtype), dn(a->dtype));
    if (a->dtype == JN_BOOL)
        return jn_error(JN_ERR_TYPE,
                        "%s: not implemented for 'bool' tensors; convert them first (e.g. .int() or .float())",
                        op);
    return JN_OK;
}

static jn_status check_bias_dtype(const char *op, const jn_tensor *bias, const jn_tensor *a) {
    if (bias->dtype != a->dtype)
        return jn_error(JN_ERR_TYPE,
                        "%s: expected bias and mat1 to have the same dtype, but got: %s != %s", op,
                        dn(bias->dtype), dn(a->dtype));
    return JN_OK;
}

/* Integer products take integral alpha/beta only (PyTorch's rule). */
static jn_status check_int_scalars(const char *op, jn_dtype d, double alpha, double beta) {
    if (!jn_dtype_is_int(d)) return JN_OK;
    if (alpha != floor(alpha) || fabs(alpha) > 9.0e18)
        return jn_error(JN_ERR_VALUE,
                        "%s: for integral input tensors, argument alpha must not be a floating point "
                        "number (got %g)", op, alpha);
    if (beta != floor(beta) || fabs(beta) > 9.0e18)
        return jn_error(JN_ERR_VALUE,
                        "%s: for integral input tensors, argument beta must not be a floating point "
                        "number (got %g)", op, beta);
    return JN_OK;
}

/* Output/batch shape of matmul for operand shapes (PyTorch's torch.matmul).
 * The 1-D cases prepend/append a 1 that is dropped again from the result. */
static jn_status matmul_shapes(const char *op, int na, const int64_t *sa, int nb, const int64_t *sb,
                               jn_meta *out, int *nbatch, int64_t *bshape) {
    char s1[128], s2[128];
    if (na == 0 || nb == 0)
        return jn_error(JN_ERR_SHAPE, "%s: both arguments need to be at least 1D, but they are %dD and %dD",
                        op, na, nb);
    int64_t k1 = sa[na - 1], k2 = nb == 1 ? sb[0] : sb[nb - 2];
    if (k1 != k2) {
        if (na == 1 && nb == 1)
            return jn_error(JN_ERR_SHAPE,
                            "%s: inconsistent tensor size, expected tensor [%lld] and src [%lld] to have "
                            "the same number of elements, but got %lld and %lld elements respectively",
                            op, (long long)k1, (long long)k2, (long long)k1, (long long)k2);
        if (na <= 2 && nb == 2)
            return jn_error(JN_ERR_SHAPE, "%s: mat1 and mat2 shapes cannot be multiplied (%s and %s)", op,
                            mat_str(na == 2 ? sa[0] : 1, k1, s1, sizeof s1), mat_str(sb[0], sb[1], s2, sizeof s2));
        return jn_error(JN_ERR_SHAPE,
                        "%s: shapes %s and %s cannot be multiplied: the last dim of the first (%lld) must "
                        "equal the %s dim of the second (%lld)",
                        op, jn_shape_str(na, sa, s1, sizeof s1), jn_shape_str(nb, sb, s2, sizeof s2),
                        (long long)k1, nb == 1 ? "only" : "second-to-last", (long long)k2);
    }
    int bna = na > 2 ? na - 2 : 0, bnb = nb > 2 ? nb - 2 : 0;
    jn_status s = jn_broadcast_shapes(bna, sa, bnb, sb, nbatch, bshape);
    if (s)
        return jn_error(JN_ERR_SHAPE,
                        "%s: the batch dims of %s and %s cannot be broadcast together (they must match "
                        "or be 1, counting from the right)",
                        op, jn_shape_str(na, sa, s1, sizeof s1), jn_shape_str(nb, sb, s2, sizeof s2));
    int nd = *nbatch;
    memcpy(out->shape, bshape, sizeof(int64_t) * (size_t)nd);
    if (na >= 2) out->shape[nd++] = sa[na - 2];
    if (nb >= 2) out->shape[nd++] = sb[nb - 1];
    out->ndim = nd;
    return JN_OK;
}

/* ------------------------------------------------------------- driver */
/* How BLAS can read a strided R x C matrix (element strides rs, cs) without a
 * copy: 1 with *trans and *ld set, or 0. */
static int blas_layout(int64_t R, int64_t C, int64_t rs, int64_t cs, int *trans, int64_t *ld) {
    if ((C == 1 || cs == 1) && (R == 1 || (rs >= C && rs >= 1))) {
        *trans = 0;
        *ld = R == 1 ? (C > 1 ? C : 1) : rs;
    } else if ((R == 1 || rs == 1) && (C == 1 || (cs >= R && cs >= 1))) {
        *trans = 1;
        *ld = C == 1 ? (R > 1 ? R : 1) : cs;
    } else {
        return 0;
    }
    return *ld <= INT_MAX;
}

typedef struct {
    jn_dtype cd;              /* compute dtype: F32, F64 or I64 */
    int64_t M, N, K;
    const char *a, *b;        /* first elements */
    char *c;                  /* contiguous [batch, M, N] */
    const int64_t *aoff, *boff; /* per-batch element offsets, NULL = all 0 */
    int64_t ars, acs, brs, bcs; /* element strides (integer loop) */
    int ta, tb;               /* BLAS transposes */
    int64_t lda, ldb;
    double alpha, beta;
} gemm_job;

static void float_one(const gemm_job *j, int64_t i) {
    int64_t ao = j->aoff ? j->aoff[i] : 0, bo = j->boff ? j->boff[i] : 0;
    int M = (int)j->M, N = (int)j->N, K = (int)j->K;
    if (j->cd == JN_F32) {
        const float *A = (const float *)j->a + ao, *B = (const float *)j->b + bo;
        float *C = (float *)j->c + i * j->M * j->N;
        jn_rt_sgemm(j->ta, j->tb, M, N, K, (float)j->alpha, A, j->lda, B, j->ldb, (float)j->beta, C, N);
    } else {
        const double *A = (const double *)j->a + ao, *B = (const double *)j->b + bo;
        double *C = (double *)j->c + i * j->M * j->N;
        cblas_dgemm(CblasRowMajor, j->ta ? CblasTrans : CblasNoTrans, j->tb ? CblasTrans : CblasNoTrans, M, N, K,
                    j->alpha, A, (int)j->lda, B, (int)j->ldb, j->beta, C, N);
    }
}

/* Integer rows [r0, r1) of the flattened [batch * M] output rows:
 * C = beta*C + alpha * A@B, all in wrap-around uint64 arithmetic. */
static void int_rows(const gemm_job *j, int64_t r0, int64_t r1) {
    const int64_t M = j->M, N = j->N, K = j->K;
    const uint64_t alpha = (uint64_t)(int64_t)j->alpha, beta = (uint64_t)(int64_t)j->beta;
    for (int64_t r = r0; r < r1; r++) {
        int64_t bi = r / M, i = r % M;
        const int64_t *A = (const int64_t *)j->a + (j->aoff ? j->aoff[bi] : 0) + i * j->ars;
        const int64_t *B = (const int64_t *)j->b + (j->boff ? j->boff[bi] : 0);
        uint64_t *C = (uint64_t *)j->c + r * N;
        if (beta == 0) memset(C, 0, sizeof(uint64_t) * (size_t)N);
        else if (beta != 1)
            for (int64_t x = 0; x < N; x++) C[x] *= beta;
        const int64_t bcs = j->bcs;
        for (int64_t k = 0; k < K; k++) {
            uint64_t av = alpha * (uint64_t)A[k * j->acs];
            const int64_t *Bk = B + k * j->brs;
            if (bcs == 1)
                for (int64_t x = 0; x < N; x++) C[x] += av * (uint64_t)Bk[x];
            else
                for (int64_t x = 0; x < N; x++) C[x] += av * (uint64_t)Bk[x * bcs];
        }
    }
}

static void gemm_task(int64_t b, int64_t e, void *ctx) {
    const gemm_job *j = ctx;
    if (j->cd == JN_I64) int_rows(j, b, e);
    else
        for (int64_t i = b; i < e; i++) float_one(j, i);
}

/* C (contiguous, n elements of cd) = beta * C; beta == 0 writes zeros. */
static void scale_c(jn_dtype cd, char *c, int64_t n, double beta) {
    if (beta == 0) {
        memset(c, 0, (size_t)n * jn_dtype_size[cd]);
    } else if (beta != 1) {
        if (cd == JN_F32)
            for (int64_t i = 0; i < n; i++) ((float *)c)[i] *= (float)beta;
        else if (cd == JN_F64)
            for (int64_t i = 0; i < n; i++) ((double *)c)[i] *= beta;
        else
            for (int64_t i = 0; i < n; i++) ((uint64_t *)c)[i] *= (uint64_t)(int64_t)beta;
    }
}

/* Batch strides of view t (dims [tbatch..., R, C]) broadcast to bshape. */
static void batch_strides(const jn_tensor *t, int nb, int64_t *st) {
    for (int d = 0; d < nb; d++) {
        int td = t->ndim - 2 - nb + d;
        st[d] = (td >= 0 && t->shape[td] != 1) ? t->strides[td] : 0;
    }
}

/* Can A's batch dims and its rows fold into one row dim of uniform stride?
 * Sets *rs to that stride. (Requires A to vary along every batch dim > 1.) */
static int fold_rows(const jn_tensor *A, int nb, const int64_t *bshape, const int64_t *bst, int64_t *rs) {
    int64_t sz[JN_MAX_DIMS + 1], st[JN_MAX_DIMS + 1];
    int n = 0;
    for (int d = 0; d < nb; d++) {
        if (bshape[d] == 1) continue;
        if (bst[d] == 0) return 0; /* A is broadcast along this batch dim */
        sz[n] = bshape[d];
        st[n++] = bst[d];
    }
    int64_t M = A->shape[A->ndim - 2];
    if (M != 1) {
        sz[n] = M;
        st[n++] = A->strides[A->ndim - 2];
    }
    for (int i = 0; i + 1 < n; i++)
        if (st[i] != st[i + 1] * sz[i + 1]) return 0;
    *rs = n ? st[n - 1] : 0;
    return 1;
}

/* Fill per-batch element offsets for strides st over bshape. */
static void batch_offsets(int nb, const int64_t *bshape, const int64_t *st, int64_t *off, int64_t nbatch) {
    int64_t idx[JN_MAX_DIMS] = {0}, o = 0;
    for (int64_t i = 0; i < nbatch; i++) {
        off[i] = o;
        for (int d = nb - 1; d >= 0; d--) {
            o += st[d];
            if (++idx[d] < bshape[d]) break;
            o -= st[d] * bshape[d];
            idx[d] = 0;
        }
    }
}

/* out (contiguous, numel batch*M*N) = alpha * a @ b + beta * out, where a is
 * viewed as [abatch..., M, K], b as [bbatch..., K, N] and the batch dims
 * broadcast to bshape.  With beta != 0 the caller has put the addend in out.
 * Takes no references; a and b may be borrowed views. */
static jn_status matmul_driver(jn_tensor *a, jn_tensor *b, int nb, const int64_t *bshape, jn_tensor *out,
                               double alpha, double beta) {
    const int64_t M = a->shape[a->ndim - 2], K = a->shape[a->ndim - 1], N = b->shape[b->ndim - 1];
    const int64_t nbatch = jn_shape_numel(nb, bshape);
    if (M == 0 || N == 0 || nbatch == 0) return JN_OK;
    jn_dtype dt = out->dtype;
    jn_dtype cd = (dt == JN_F64) ? JN_F64 : jn_dtype_is_float(dt) ? JN_F32 : JN_I64;
    if (cd != JN_I64 && (M > INT_MAX || N > INT_MAX || K > INT_MAX))
        return jn_error(JN_ERR_UNSUPPORTED, "matrix product of %lldx%lld and %lldx%lld is too large for BLAS",
                        (long long)M, (long long)K, (long long)K, (long long)N);

    jn_status s = JN_OK;
    jn_tensor *C = out, *A = NULL, *B = NULL;
    int64_t *offs = NULL;
    if (cd != dt) {
        C = jn_tensor_new(cd, out->ndim, out->shape);
        if (!C) return JN_ERR_NOMEM;
        if (beta != 0 && (s = jn_copy_into(C, out))) goto done;
    }
    if (K == 0) {
        scale_c(cd, jn_data(C), nbatch * M * N, beta);
        goto finish;
    }

    /* operands in the compute dtype (a no-op for float32/float64 / int64) */
    if (a->dtype != cd) A = jn_to_dtype(a, cd);
    else { A = a; jn_tensor_incref(a); }
    if (b->dtype != cd) B = jn_to_dtype(b, cd);
    else { B = b; jn_tensor_incref(b); }
    if (!A || !B) { s = JN_ERR_NOMEM; goto done; }

    gemm_job j;
    memset(&j, 0, sizeof j);
    j.cd = cd;
    j.N = N;
    j.K = K;
    j.alpha = alpha;
    j.beta = beta;
    int64_t ast[JN_MAX_DIMS], bst[JN_MAX_DIMS];
    int folded = 0;
    int64_t rows = M, ars = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        batch_strides(A, nb, ast);
        batch_strides(B, nb, bst);
        int b_shared = 1;
        for (int d = 0; d < nb; d++) b_shared &= bst[d] == 0 || bshape[d] == 1;
        folded = nbatch > 1 && b_shared && fold_rows(A, nb, bshape, ast, &ars);
        rows = folded ? nbatch * M : M;
        if (!folded) ars = A->strides[A->ndim - 2];
        int64_t acs = A->strides[A->ndim - 1];
        if (cd == JN_I64 || (rows <= INT_MAX && blas_layout(rows, K, ars, acs, &j.ta, &j.lda))) break;
        if (attempt) { s = jn_error(JN_ERR_RUNTIME, "matmul: internal layout error"); goto done; }
        jn_tensor *cp = jn_contiguous(A); /* only now known to be unreadable by BLAS */
        if (!cp) { s = JN_ERR_NOMEM; goto done; }
        jn_tensor_decref(A);
        A = cp;
    }
    if (cd != JN_I64 && !blas_layout(K, N, B->strides[B->ndim - 2], B->strides[B->ndim - 1], &j.tb, &j.ldb)) {
        jn_tensor *cp = jn_contiguous(B);
        if (!cp) { s = JN_ERR_NOMEM; goto done; }
        jn_tensor_decref(B);
        B = cp;
        batch_strides(B, nb, bst);
        blas_layout(K, N, B->strides[B->ndim - 2], B->strides[B->ndim - 1], &j.tb, &j.ldb);
    }
    j.M = rows;
    j.a = jn_data(A);
    j.b = jn_data(B);
    j.c = jn_data(C);
    j.ars = ars;
    j.acs = A->strides[A->ndim - 1];
    j.brs = B->strides[B->ndim - 2];
    j.bcs = B->strides[B->ndim - 1];
    int64_t count = folded ? 1 : nbatch;
    if (count > 1) {
        offs = malloc(sizeof(int64_t) * 2 * (size_t)count);
        if (!offs) { s = jn_error(JN_ERR_NOMEM, "matmul: out of memory for batch offsets"); goto done; }
        batch_offsets(nb, bshape, ast, offs, count);
        batch_offsets(nb, bshape, bst, offs + count, count);
        j.aoff = offs;
        j.boff = offs + count;
    }

    double mnk = (double)j.M * (double)N * (double)K;
    if (cd == JN_I64) {
        int64_t nrows = count * j.M;
        int64_t grain = (int64_t)(65536.0 / ((double)N * (double)K + 1.0)) + 1;
        jn_parallel_for(nrows, grain, gemm_task, &j);
    } else if (count > 1 && mnk <= BLAS_SINGLE_THREAD_MNK) {
        int64_t grain = (int64_t)(65536.0 / (mnk + 1.0)) + 1;
        jn_parallel_for(count, grain, gemm_task, &j);
    } else {
        gemm_task(0, count, &j); /* BLAS threads each product itself */
    }

finish:
    if (C != out) s = jn_copy_into(out, C);
done:
    free(offs);
    jn_tensor_decref(A);
    jn_tensor_decref(B);
    if (C != out) jn_tensor_decref(C);
    return s;
}

/* matmul of a and b (any ranks >= 1) into out, with the 1-D views. */
static jn_status matmul_any(jn_tensor *a, jn_tensor *b, jn_tensor *out, double alpha, double beta) {
    jn_tensor *av = a, *bv = b;
    jn_status s = JN_OK;
    if (a->ndim == 1) {
        int64_t sh[2] = {1, a->shape[0]}, st[2] = {0, a->strides[0]};
        if (!(av = view_of(a, 2, sh, st))) return JN_ERR_NOMEM;
    }
    if (b->ndim == 1) {
        int64_t sh[2] = {b->shape[0], 1}, st[2] = {b->strides[0], 0};
        if (!(bv = view_of(b, 2, sh, st))) { s = JN_ERR_NOMEM; goto done; }
    }
    int nb;
    int64_t bshape[JN_MAX_DIMS];
    if ((s = jn_broadcast_shapes(av->ndim - 2, av->shape, bv->ndim - 2, bv->shape, &nb, bshape))) goto done;
    s = matmul_driver(av, bv, nb, bshape, out, alpha, beta);
done:
    if (av != a) jn_tensor_decref(av);
    if (bv != b && bv) jn_tensor_decref(bv);
    return s;
}

/* ------------------------------------------------------------------ mm */
jn_status jn_infer_mm(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    const jn_tensor *x = in[0], *y = in[1];
    char s1[64], s2[64];
    if (x->ndim != 2) return jn_error(JN_ERR_SHAPE, "mm: mat1 must be a matrix (2-D), got %d-D", x->ndim);
    if (y->ndim != 2) return jn_error(JN_ERR_SHAPE, "mm: mat2 must be a matrix (2-D), got %d-D", y->ndim);
    jn_status s = check_dtypes("mm", x, y);
    if (s) return s;
    if (x->shape[1] != y->shape[0])
        return jn_error(JN_ERR_SHAPE, "mm: mat1 and mat2 shapes cannot be multiplied (%s and %s)",
                        mat_str(x->shape[0], x->shape[1], s1, sizeof s1),
                        mat_str(y->shape[0], y->shape[1], s2, sizeof s2));
    out->dtype = x->dtype;
    out->ndim = 2;
    out->shape[0] = x->shape[0];
    out->shape[1] = y->shape[1];
    return JN_OK;
}

jn_status jn_cpu_mm(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return matmul_driver(in[0], in[1], 0, NULL, out[0], 1.0, 0.0);
}

/* ----------------------------------------------------------------- bmm */
jn_status jn_infer_bmm(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    const jn_tensor *x = in[0], *y = in[1];
    char s1[128], s2[128];
    if (x->ndim != 3) return jn_error(JN_ERR_SHAPE, "bmm: batch1 must be a 3D tensor, got %d-D", x->ndim);
    if (y->ndim != 3) return jn_error(JN_ERR_SHAPE, "bmm: batch2 must be a 3D tensor, got %d-D", y->ndim);
    jn_status s = check_dtypes("bmm", x, y);
    if (s) return s;
    if (x->shape[0] != y->shape[0] || x->shape[2] != y->shape[1])
        return jn_error(JN_ERR_SHAPE,
                        "bmm: expected size for first two dimensions of batch2 tensor to be: [%lld, %lld] "
                        "but got: [%lld, %lld] (batch1 %s, batch2 %s)",
                        (long long)x->shape[0], (long long)x->shape[2], (long long)y->shape[0],
                        (long long)y->shape[1], jn_shape_str(3, x->shape, s1, sizeof s1),
                        jn_shape_str(3, y->shape, s2, sizeof s2));
    out->dtype = x->dtype;
    out->ndim = 3;
    out->shape[0] = x->shape[0];
    out->shape[1] = x->shape[1];
    out->shape[2] = y->shape[2];
    return JN_OK;
}

jn_status jn_cpu_bmm(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    int64_t bshape[1] = {in[0]->shape[0]};
    return matmul_driver(in[0], in[1], 1, bshape, out[0], 1.0, 0.0);
}

/* -------------------------------------------------------------- matmul */
jn_status jn_infer_matmul(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    const jn_tensor *x = in[0], *y = in[1];
    int nb;
    int64_t bshape[JN_MAX_DIMS];
    jn_status s = matmul_shapes("matmul", x->ndim, x->shape, y->ndim, y->shape, out, &nb, bshape);
    if (s) return s;
    if ((s = check_dtypes("matmul", x, y))) return s;
    out->dtype = x->dtype;
    return JN_OK;
}

jn_status jn_cpu_matmul(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return matmul_any(in[0], in[1], out[0], 1.0, 0.0);
}

/* --------------------------------------------------------------- addmm */
jn_status jn_infer_addmm(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    const jn_tensor *bias = in[0];
    jn_status s = jn_infer_mm(2, in + 1, NULL, out);
    if (s) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", jn_errmsg());
        return jn_error(s, "add%s", msg); /* "mm: ..." -> "addmm: ..." */
    }
    if ((s = check_bias_dtype("addmm", bias, in[1]))) return s;
    if ((s = check_int_scalars("addmm", bias->dtype, a->a[1].f, a->a[0].f))) return s;
    int nd;
    int64_t bs[JN_MAX_DIMS];
    char s1[128], s2[128];
    if (jn_broadcast_shapes(bias->ndim, bias->shape, 2, out->shape, &nd, bs) ||
        !jn_same_shape(nd, bs, 2, out->shape))
        return jn_error(JN_ERR_SHAPE, "addmm: the bias (self) of shape %s can't be broadcast to the result shape %s",
                        jn_shape_str(bias->ndim, bias->shape, s1, sizeof s1),
                        jn_shape_str(2, out->shape, s2, sizeof s2));
    return JN_OK;
}

jn_status jn_cpu_addmm(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    double beta = a->a[0].f, alpha = a->a[1].f;
    jn_status s;
    /* beta == 0 ignores the bias entirely (nan/inf in it do not propagate);
     * out == in[0] is addmm_ through jn_dispatch_into (or the graph
     * executor's in-place accumulator): the addend is there */
    if (beta != 0 && !jn_rt_same_view(out[0], in[0]) && (s = jn_copy_into(out[0], in[0]))) return s;
    return matmul_driver(in[1], in[2], 0, NULL, out[0], alpha, beta);
}

/* -------------------------------------------------------------- linear */
/* weight^T as a view: [in, out] for a 2-D weight, [in] for a 1-D one. */
static jn_tensor *weight_t(jn_tensor *w) {
    if (w->ndim == 1) {
        jn_tensor_incref(w);
        return w;
    }
    int64_t sh[2] = {w->shape[1], w->shape[0]}, st[2] = {w->strides[1], w->strides[0]};
    return view_of(w, 2, sh, st);
}

jn_status jn_infer_linear(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    const jn_tensor *x = in[0], *w = in[1];
    char s1[128], s2[128], s3[128], s4[128];
    if (nin > 3) return jn_error(JN_ERR_VALUE, "linear: expected input, weight and an optional bias, got %d tensors", nin);
    if (x->ndim == 0 || w->ndim == 0)
        return jn_error(JN_ERR_SHAPE, "linear: both arguments need to be at least 1D, but they are %dD and %dD",
                        x->ndim, w->ndim);
    if (w->ndim > 2)
        return jn_error(JN_ERR_SHAPE, "linear: weight must be [out_features, in_features] (or 1-D), got %s",
                        jn_shape_str(w->ndim, w->shape, s1, sizeof s1));
    jn_status s = check_dtypes("linear", x, w);
    if (s) return s;
    int64_t in_f = x->shape[x->ndim - 1], w_in = w->shape[w->ndim - 1];
    if (in_f != w_in) {
        int64_t rows = jn_shape_numel(x->ndim - 1, x->shape);
        return jn_error(JN_ERR_SHAPE,
                        "linear: mat1 and mat2 shapes cannot be multiplied (%s and %s): input %s, weight %s",
                        mat_str(rows, in_f, s1, sizeof s1),
                        mat_str(w_in, w->ndim == 2 ? w->shape[0] : 1, s2, sizeof s2),
                        jn_shape_str(x->ndim, x->shape, s3, sizeof s3), jn_shape_str(w->ndim, w->shape, s4, sizeof s4));
    }
    out->dtype = x->dtype;
    out->ndim = x->ndim - 1 + (w->ndim == 2);
    memcpy(out->shape, x->shape, sizeof(int64_t) * (size_t)(x->ndim - 1));
    if (w->ndim == 2) out->shape[out->ndim - 1] = w->shape[0];
    if (nin == 3) {
        const jn_tensor *bias = in[2];
        if ((s = check_bias_dtype("linear", bias, x))) return s;
        int nd;
        int64_t bs[JN_MAX_DIMS];
        if (jn_broadcast_shapes(bias->ndim, bias->shape, out->ndim, out->shape, &nd, bs) ||
            !jn_same_shape(nd, bs, out->ndim, out->shape))
            return jn_error(JN_ERR_SHAPE, "linear: the bias of shape %s can't be broadcast to the output shape %s",
                            jn_shape_str(bias->ndim, bias->shape, s1, sizeof s1),
                            jn_shape_str(out->ndim, out->shape, s2, sizeof s2));
    }
    return JN_OK;
}

/* float32 x[M,K] @ w[N,K]^T + bias[N] straight into a fresh out[M,N] (the
 * bias added in the GEMM instead of copied into every row first); 0 when
 * the operands are not of that form. */
static int linear_bias_f32(jn_tensor *x, jn_tensor *w, jn_tensor *bias, jn_tensor *out) {
    if (out->dtype != JN_F32 || x->dtype != JN_F32 || w->dtype != JN_F32 || bias->dtype != JN_F32 ||
        x->ndim != 2 || w->ndim != 2 || bias->ndim != 1 || bias->shape[0] != w->shape[0] ||
        (bias->shape[0] > 1 && bias->strides[0] != 1) || !jn_is_contiguous(out))
        return 0;
    int64_t M = x->shape[0], K = x->shape[1], N = w->shape[0], lda, ldb;
    int ta, tb;
    if (M > INT_MAX || N > INT_MAX || K > INT_MAX || !blas_layout(M, K, x->strides[0], x->strides[1], &ta, &lda) ||
        !blas_layout(N, K, w->strides[0], w->strides[1], &tb, &ldb))
        return 0;
    /* a weight laid out transposed (tb): read as it is only where that gives
     * the row-major weight's bits (jn_rt_sgemm_nt_is_nn), else jn_cpu_linear
     * copies it back */
    if (tb && !jn_rt_sgemm_nt_is_nn(ta, M, N, K)) return 0;
    /* w as [N,K] read by BLAS with tb; its transpose is the right operand */
    jn_rt_sgemm_bias(ta, !tb, M, N, K, (const float *)jn_data(x), lda, (const float *)jn_data(w), ldb,
                     (const float *)jn_data(bias), (float *)jn_data(out), N);
    return 1;
}

/* linear's bits do not depend on the weight's layout: a weight that is not
 * row-major (W^T contiguous: codegen's wt pass transposes a weight once per
 * graph run) is read as it is only where linear_bias_f32 proves that gives
 * the row-major weight's bits, and otherwise copied row-major first. */
jn_status jn_cpu_linear(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_status s;
    if (nin == 3 && linear_bias_f32(in[0], in[1], in[2], out[0])) return JN_OK;
    jn_tensor *w = in[1], *wr = NULL;
    if (w->ndim == 2 && w->shape[1] > 1 && w->strides[1] != 1) {
        if (!(wr = jn_contiguous(w))) return JN_ERR_NOMEM;
        w = wr;
        if (nin == 3 && linear_bias_f32(in[0], w, in[2], out[0])) {
            jn_tensor_decref(wr);
            return JN_OK;
        }
    }
    if (nin == 3 && (s = jn_copy_into(out[0], in[2]))) {
        jn_tensor_decref(wr);
        return s;
    }
    jn_tensor *wt = weight_t(w);
    jn_tensor_decref(wr);
    if (!wt) return JN_ERR_NOMEM;
    s = matmul_any(in[0], wt, out[0], 1.0, nin == 3 ? 1.0 : 0.0);
    jn_tensor_decref(wt);
    return s;
}
