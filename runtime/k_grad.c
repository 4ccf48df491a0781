/* k_grad.c -- kernels that only derivative formulas use: the two gradients
 * of conv2d (w.r.t. its input and its weight) and the backward passes of
 * avg_pool2d, adaptive_avg_pool2d and max_pool2d, with PyTorch's semantics.
 *
 * Convolution gradients are GEMM + col2im / im2col + GEMM, per group:
 *   input:  cols[Ckk x P] = W_g^T [Ckk x O_g] @ dY_g [O_g x P], then col2im
 *           adds every column entry back into the input pixel it came from;
 *   weight: dW_g [O_g x Ckk] += dY_g [O_g x P] @ im2col(x_g)^T [P x Ckk].
 * (P = outH*outW, Ckk = C/groups*kH*kW.)  Several images share one GEMM by
 * laying their columns side by side: grad_out is first copied to an
 * [O, N*P] layout so that a run of images is one strided matrix.  Like
 * conv2d's forward, products that OpenBLAS runs single-threaded anyway are
 * spread over the batch on the thread pool (weight: one partial sum per
 * task, added in task order, so results do not depend on timing); so are
 * thin ones (small O_g x Ckk, e.g. a first layer), as GEMMs over column
 * slices of each image.  Larger ones run chunk by chunk with BLAS
 * threading, im2col/col2im on the pool.  Stride-1 undilated convolutions
 * use the wide layout of conv2d's forward (see im2col_wide).
 *
 * Pool backwards zero each input plane and scatter grad/divisor over each
 * output cell's window (max pool: grad at the window's argmax, in the
 * order scatter_add would add it), one (batch, channel) plane per task.
 * float16 and bfloat16 are computed in float32 and narrowed at the end.
 * Shapes are re-derived from the attributes exactly as the forward ops
 * compute them and grad_out must match.
 */
#include "k_conv.h"

#include <cblas.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* OpenBLAS runs a GEMM with M*N*K at most this on the calling thread only,
 * so such calls may run concurrently from our pool (see k_linalg.c). */
#define BLAS_SINGLE_THREAD_MNK 262144.0
/* OpenBLAS's small-matrix kernels skip packing, about twice as fast on
 * LeNet-sized products (M*N*K up to SMALL_GEMM_MNK); on Skylake-X they take
 * dY @ cols^T (the weight gradient) only while the result block has at most
 * SMALL_NT_ENTRIES entries, so such a product runs in row blocks of cols
 * that fit (of 16 rows or more; larger products keep one GEMM). */
#define SMALL_NT_ENTRIES 1200
/* The wide layout pays off for output rows shorter than this (see k_conv.h). */
#define WIDE_MAX_OW JN_RT_WIDE_MAX_OW
#define SMALL_GEMM_MNK 1e6
/* Column buffer size (elements) that the BLAS-threaded path aims for. */
#define COL_TARGET_ELEMS ((int64_t)1 << 22)

static const char *dn(jn_dtype d) { return jn_dtype_names[d]; }
static int is_half(jn_dtype d) { return d == JN_F16 || d == JN_BF16; }

/* A size attribute (input_size / weight_size) with a length in [lo, hi]
 * and non-negative entries whose product fits in memory arithmetic. */
static jn_status size_attr(const char *op, const char *name, const jn_ints *l, int lo, int hi) {
    char s1[160];
    if (l->n < lo || l->n > hi) {
        if (lo == hi)
            return jn_error(JN_ERR_VALUE, "%s: %s must have %d entries, got %s", op, name, lo,
                            jn_shape_str(l->n, l->v, s1, sizeof s1));
        return jn_error(JN_ERR_VALUE, "%s: %s must have %d or %d entries (unbatched or batched), got %s", op, name,
                        lo, hi, jn_shape_str(l->n, l->v, s1, sizeof s1));
    }
    int64_t n = 1;
    for (int i = 0; i < l->n; i++) {
        if (l->v[i] < 0)
            return jn_error(JN_ERR_VALUE, "%s: %s must not have negative entries, got %s", op, name,
                            jn_shape_str(l->n, l->v, s1, sizeof s1));
        if (l->v[i] && n > (INT64_MAX >> 4) / l->v[i])
            return jn_error(JN_ERR_VALUE, "%s: %s %s is too large", op, name, jn_shape_str(l->n, l->v, s1, sizeof s1));
        n *= l->v[i] ? l->v[i] : 1;
    }
    return JN_OK;
}

static jn_status check_float(const char *op, const char *what, const jn_tensor *t) {
    if (!jn_dtype_is_float(t->dtype))
        return jn_error(JN_ERR_TYPE, "%s: not implemented for '%s' %s; gradients are floating point", op,
                        dn(t->dtype), what);
    return JN_OK;
}

/* grad_out must have exactly the shape the forward op produced. */
static jn_status check_grad_shape(const char *op, const jn_tensor *g, int nd, const int64_t *want,
                                  const char *why) {
    char s1[160], s2[160];
    if (!jn_same_shape(g->ndim, g->shape, nd, want))
        return jn_error(JN_ERR_SHAPE, "%s: expected grad_output of size %s (%s), but got grad_output of size %s", op,
                        jn_shape_str(nd, want, s1, sizeof s1), why, jn_shape_str(g->ndim, g->shape, s2, sizeof s2));
    return JN_OK;
}

/* ====================================================== conv2d geometry */
typedef struct {
    int64_t N, C, H, W, O, G, Cg, Og, kh, kw, sh, sw, ph, pw, dh, dw, OH, OW, P, Kc;
    int batched;
} cgeom;

/* Output length of conv2d along one dim, or -1 when the (dilated) kernel
 * does not fit the padded input, -2 on arithmetic overflow. */
static int64_t conv_len(int64_t in, int64_t k, int64_t pad, int64_t st, int64_t dil) {
    int64_t padded, ek;
    if (__builtin_mul_overflow(pad, 2, &padded) || __builtin_add_overflow(padded, in, &padded) ||
        __builtin_mul_overflow(dil, k - 1, &ek) || __builtin_add_overflow(ek, 1, &ek))
        return -2;
    return padded >= ek ? (padded - ek) / st + 1 : -1;
}

/* Validate the convolution described by the input size xs (3 or 4 dims),
 * the weight size ws and the attributes (schema: size, stride, padding,
 * dilation, groups), and check grad_out's shape against it. */
static jn_status conv_geom(const char *op, int xnd, const int64_t *xs, const int64_t *ws, const jn_tensor *gout,
                           const jn_attrs *a, cgeom *g) {
    char s1[160], s2[160], why[400];
    int64_t st[2] = {0, 0}, pad[2] = {0, 0}, dil[2] = {0, 0};
    jn_status s;
    memset(g, 0, sizeof *g);
    if ((s = jn_rt_pair_attr(op, "stride", &a->a[1].l, 1, st))) return s;
    if ((s = jn_rt_pair_attr(op, "padding", &a->a[2].l, 0, pad))) return s;
    if ((s = jn_rt_pair_attr(op, "dilation", &a->a[3].l, 1, dil))) return s;
    g->G = a->a[4].i;
    if (st[0] <= 0 || st[1] <= 0)
        return jn_error(JN_ERR_VALUE, "%s: non-positive stride is not supported (got [%lld, %lld])", op,
                        (long long)st[0], (long long)st[1]);
    if (pad[0] < 0 || pad[1] < 0)
        return jn_error(JN_ERR_VALUE, "%s: negative padding is not supported (got [%lld, %lld])", op,
                        (long long)pad[0], (long long)pad[1]);
    if (dil[0] <= 0 || dil[1] <= 0)
        return jn_error(JN_ERR_VALUE, "%s: dilation should be greater than zero (got [%lld, %lld])", op,
                        (long long)dil[0], (long long)dil[1]);
    if (g->G <= 0)
        return jn_error(JN_ERR_VALUE, "%s: non-positive groups is not supported (got %lld)", op, (long long)g->G);
    if (gout->ndim != xnd)
        return jn_error(JN_ERR_SHAPE, "%s: grad_output of size %s must have as many dims as the input (%s)", op,
                        jn_shape_str(gout->ndim, gout->shape, s1, sizeof s1), jn_shape_str(xnd, xs, s2, sizeof s2));
    g->batched = xnd == 4;
    int o = g->batched;
    g->N = o ? xs[0] : 1;
    g->C = xs[o];
    g->H = xs[o + 1];
    g->W = xs[o + 2];
    g->O = ws[0];
    g->kh = ws[2];
    g->kw = ws[3];
    if (g->O % g->G)
        return jn_error(JN_ERR_SHAPE,
                        "%s: given groups=%lld, expected weight to be divisible by %lld at dimension 0, but got "
                        "weight of size %s instead",
                        op, (long long)g->G, (long long)g->G, jn_shape_str(4, ws, s1, sizeof s1));
    if (ws[1] > INT64_MAX / g->G || ws[1] * g->G != g->C)
        return jn_error(JN_ERR_SHAPE,
                        "%s: given groups=%lld, weight of size %s, expected input%s to have %lld channels, but got "
                        "%lld channels instead",
                        op, (long long)g->G, jn_shape_str(4, ws, s1, sizeof s1), jn_shape_str(xnd, xs, s2, sizeof s2),
                        ws[1] > INT64_MAX / g->G ? -1LL : (long long)(ws[1] * g->G), (long long)g->C);
    if (g->kh <= 0 || g->kw <= 0)
        return jn_error(JN_ERR_SHAPE, "%s: weight of size %s has an empty kernel", op,
                        jn_shape_str(4, ws, s1, sizeof s1));
    g->sh = st[0], g->sw = st[1], g->ph = pad[0], g->pw = pad[1], g->dh = dil[0], g->dw = dil[1];
    g->OH = conv_len(g->H, g->kh, g->ph, g->sh, g->dh);
    g->OW = conv_len(g->W, g->kw, g->pw, g->sw, g->dw);
    if (g->OH == -2 || g->OW == -2)
        return jn_error(JN_ERR_VALUE, "%s: padding/dilation too large (padding [%lld, %lld], dilation [%lld, %lld])",
                        op, (long long)pad[0], (long long)pad[1], (long long)dil[0], (long long)dil[1]);
    if (g->OH < 0 || g->OW < 0)
        return jn_error(JN_ERR_SHAPE,
                        "%s: calculated padded input size per channel: (%lld x %lld). Kernel size: (%lld x %lld). "
                        "Kernel size can't be greater than actual input size (input %s)",
                        op, (long long)(g->H + 2 * g->ph), (long long)(g->W + 2 * g->pw),
                        (long long)(g->dh * (g->kh - 1) + 1), (long long)(g->dw * (g->kw - 1) + 1),
                        jn_shape_str(xnd, xs, s1, sizeof s1));
    int64_t want[4] = {g->N, g->O, g->OH, g->OW};
    snprintf(why, sizeof why, "conv2d of input %s with weight %s, stride [%lld, %lld], padding [%lld, %lld], "
             "dilation [%lld, %lld], groups %lld",
             jn_shape_str(xnd, xs, s1, sizeof s1), jn_shape_str(4, ws, s2, sizeof s2), (long long)st[0],
             (long long)st[1], (long long)pad[0], (long long)pad[1], (long long)dil[0], (long long)dil[1],
             (long long)g->G);
    if ((s = check_grad_shape(op, gout, xnd, o ? want : want + 1, why))) return s;
    g->Cg = g->C / g->G;
    g->Og = g->O / g->G;
    g->P = g->OH * g->OW;
    g->Kc = g->Cg * g->kh * g->kw;
    return JN_OK;
}

/* ============================================================ conv jobs */
typedef struct {
    cgeom g;
    jn_dtype cd;          /* F32 or F64: the compute dtype */
    const char *gt;       /* grad_out of dtype cd: element (o, n, p) at o*gso + n*gsn + p */
    int64_t gso, gsn;
    int64_t B;            /* images per chunk */
    int64_t cw;           /* columns per GEMM call (splits a chunk's columns) */
    /* input gradient */
    const char *w;        /* contiguous [O, Kc] */
    char *dx;             /* contiguous [N, C, H, W] */
    /* weight gradient */
    const char *x;        /* input of dtype cd */
    int64_t xs[4];        /* its element strides as [N, C, H, W] */
    char *dw;             /* ntask partial sums (or the result) of [O, Kc] each */
    int64_t ntask;
    int failed;
    /* the wide layout (stride 1, no dilation; see wide_plan) */
    int wide;
    int64_t Hp, Wp;       /* padded plane */
    int64_t L, LW;        /* meaningful / allocated columns per image: (OH-1)*Wp + OW, OH*Wp */
    int64_t Pc;           /* columns per image in the column matrices: P, or LW when wide */
    int64_t rb;           /* weight grad: column-matrix rows per GEMM (see SMALL_NT_ENTRIES) */
    const char *xp;       /* weight grad: the planes rows are copied from (x itself or a padded copy) */
    int64_t xpn, xpc;     /* their element strides per image and per channel */
    char *acc;            /* input grad: [N, C, Hp*Wp] planes col2im adds into (dx itself when unpadded) */
} cjob;

/* Row r = (c, i, j) of image n's column matrix for group gr: the input
 * pixels the kernel tap (i, j) of channel c sees at every output position.
 * Padding reads as zero. */
#define IM2COL_ROW(NAME, T)                                                                       \
    static void NAME(const cjob *j, int64_t n, int64_t gr, int64_t r, T *dst) {                   \
        const cgeom *g = &j->g;                                                                   \
        int64_t c = r / (g->kh * g->kw), ki = r / g->kw % g->kh, kj = r % g->kw;                  \
        const T *xc = (const T *)j->x + n * j->xs[0] + (gr * g->Cg + c) * j->xs[1];               \
        int64_t woff = kj * g->dw - g->pw; /* iw = ow*sw + woff */                                \
        int64_t lo = jn_rt_ceildiv(-woff, g->sw), hi = jn_rt_ceildiv(g->W - woff, g->sw);                     \
        if (lo < 0) lo = 0;                                                                       \
        if (hi > g->OW) hi = g->OW;                                                               \
        if (hi < lo) hi = lo;                                                                     \
        const int64_t xsw = j->xs[3], step = g->sw * xsw;                                         \
        for (int64_t oh = 0; oh < g->OH; oh++) {                                                  \
            T *d = dst + oh * g->OW;                                                              \
            int64_t ih = oh * g->sh - g->ph + ki * g->dh;                                         \
            if (ih < 0 || ih >= g->H) {                                                           \
                memset(d, 0, sizeof(T) * (size_t)g->OW);                                          \
                continue;                                                                         \
            }                                                                                     \
            for (int64_t ow = 0; ow < lo; ow++) d[ow] = 0;                                        \
            for (int64_t ow = hi; ow < g->OW; ow++) d[ow] = 0;                                    \
            const T *s = xc + ih * j->xs[2];                                                      \
            if (step == 1) /* the common case: a contiguous run of the input row */              \
                memcpy(d + lo, s + lo + woff, sizeof(T) * (size_t)(hi - lo));                     \
            else                                                                                  \
                for (int64_t ow = lo; ow < hi; ow++) d[ow] = s[ow * step + woff * xsw];           \
        }                                                                                         \
    }
IM2COL_ROW(im2col_row_f32, float)
IM2COL_ROW(im2col_row_f64, double)

/* Adds the kh*kw column rows of channel c (of image n, group gr) into that
 * channel's plane of dx, which it zeroes first. */
#define COL2IM_CHAN(NAME, T)                                                                      \
    static void NAME(const cjob *j, int64_t n, int64_t gr, int64_t c, const T *col, int64_t ldc) { \
        const cgeom *g = &j->g;                                                                   \
        T *plane = (T *)j->dx + (n * g->C + gr * g->Cg + c) * g->H * g->W;                        \
        memset(plane, 0, sizeof(T) * (size_t)(g->H * g->W));                                      \
        for (int64_t ki = 0; ki < g->kh; ki++)                                                    \
            for (int64_t kj = 0; kj < g->kw; kj++) {                                              \
                const T *row = col + ((c * g->kh + ki) * g->kw + kj) * ldc;                       \
                int64_t woff = kj * g->dw - g->pw;                                                \
                int64_t lo = jn_rt_ceildiv(-woff, g->sw), hi = jn_rt_ceildiv(g->W - woff, g->sw);             \
                if (lo < 0) lo = 0;                                                               \
                if (hi > g->OW) hi = g->OW;                                                       \
                for (int64_t oh = 0; oh < g->OH; oh++) {                                          \
                    int64_t ih = oh * g->sh - g->ph + ki * g->dh;                                 \
                    if (ih < 0 || ih >= g->H) continue;                                           \
                    T *d = plane + ih * g->W; /* pixel iw = ow*sw + woff */                       \
                    const T *s = row + oh * g->OW;                                                \
                    if (g->sw == 1)                                                               \
                        for (int64_t ow = lo; ow < hi; ow++) d[ow + woff] += s[ow];               \
                    else                                                                          \
                        for (int64_t ow = lo; ow < hi; ow++) d[ow * g->sw + woff] += s[ow];       \
                }                                                                                 \
            }                                                                                     \
    }
COL2IM_CHAN(col2im_chan_f32, float)
COL2IM_CHAN(col2im_chan_f64, double)

/* ---- the wide layout (stride 1, no dilation), as conv2d's forward ----
 * Output position (oh, ow) is column oh*Wp + ow of an image's LW = OH*Wp
 * columns (the last kw-1 of each output row are garbage), so that column
 * row (c, ki, kj) is one contiguous run of the padded plane c from
 * ki*Wp + kj, and col2im adds whole runs back: kh*kw long loops per channel
 * instead of kh*kw*OH short ones.  grad_out is laid out the same way with
 * zeros in the garbage columns, so they contribute exact zeros to both
 * products as long as the other factor is finite (wide_plan checks). */
#if defined(__x86_64__) && defined(__ELF__) /* ifunc dispatch, as k_elementwise.c */
#define SIMD_ADD __attribute__((target_clones("avx2", "default")))
#else
#define SIMD_ADD
#endif
static SIMD_ADD void addto_f32(float *restrict d, const float *restrict s, int64_t n) {
    for (int64_t i = 0; i < n; i++) d[i] += s[i];
}
static SIMD_ADD void addto_f64(double *restrict d, const double *restrict s, int64_t n) {
    for (int64_t i = 0; i < n; i++) d[i] += s[i];
}

static void im2col_wide(const cjob *j, int64_t n0, int64_t nb, int64_t gr, char *col, int64_t t0, int64_t t1) {
    const cgeom *g = &j->g;
    const int64_t Kc = g->Kc, kk = g->kh * g->kw, L = j->L, LW = j->LW, ld = nb * LW;
    size_t es = jn_dtype_size[j->cd];
    for (int64_t t = t0; t < t1; t++) { /* t = b*Kc + r */
        int64_t b = t / Kc, r = t % Kc, c = r / kk, ki = r / g->kw % g->kh, kj = r % g->kw;
        const char *src = j->xp + (size_t)((n0 + b) * j->xpn + (gr * g->Cg + c) * j->xpc + ki * j->Wp + kj) * es;
        char *dst = col + (size_t)(r * ld + b * LW) * es;
        memcpy(dst, src, (size_t)L * es);
        memset(dst + (size_t)L * es, 0, (size_t)(LW - L) * es); /* only the last row's garbage */
    }
}

static void col2im_wide(const cjob *j, int64_t n0, int64_t nb, int64_t gr, const char *col, int64_t t0,
                        int64_t t1) {
    const cgeom *g = &j->g;
    const int64_t Cg = g->Cg, L = j->L, ld = nb * j->LW, HW = j->Hp * j->Wp;
    size_t es = jn_dtype_size[j->cd];
    for (int64_t t = t0; t < t1; t++) { /* t = b*Cg + c */
        int64_t b = t / Cg, c = t % Cg;
        char *plane = j->acc + (size_t)(((n0 + b) * g->C + gr * Cg + c) * HW) * es;
        memset(plane, 0, (size_t)HW * es);
        for (int64_t ki = 0; ki < g->kh; ki++)
            for (int64_t kj = 0; kj < g->kw; kj++) {
                int64_t r = (c * g->kh + ki) * g->kw + kj;
                const char *src = col + (size_t)(r * ld + b * j->LW) * es;
                char *dst = plane + (size_t)(ki * j->Wp + kj) * es;
                if (j->cd == JN_F32) addto_f32((float *)dst, (const float *)src, L);
                else addto_f64((double *)dst, (const double *)src, L);
            }
    }
}

/* im2col of images [n0, n0+nb) for group gr, rows [r0, r1): image b's
 * columns start at column b*P of each row (row length nb*P). */
static void im2col_rows(const cjob *j, int64_t n0, int64_t nb, int64_t gr, void *col, int64_t t0, int64_t t1) {
    if (j->wide) {
        im2col_wide(j, n0, nb, gr, col, t0, t1);
        return;
    }
    const int64_t P = j->Pc, Kc = j->g.Kc, ld = nb * P;
    for (int64_t t = t0; t < t1; t++) { /* t = b*Kc + r */
        int64_t b = t / Kc, r = t % Kc;
        if (j->cd == JN_F32) im2col_row_f32(j, n0 + b, gr, r, (float *)col + r * ld + b * P);
        else im2col_row_f64(j, n0 + b, gr, r, (double *)col + r * ld + b * P);
    }
}

static void col2im_chans(const cjob *j, int64_t n0, int64_t nb, int64_t gr, const void *col, int64_t t0,
                         int64_t t1) {
    if (j->wide) {
        col2im_wide(j, n0, nb, gr, col, t0, t1);
        return;
    }
    const int64_t P = j->Pc, Cg = j->g.Cg, ld = nb * P;
    for (int64_t t = t0; t < t1; t++) { /* t = b*Cg + c */
        int64_t b = t / Cg, c = t % Cg;
        if (j->cd == JN_F32) col2im_chan_f32(j, n0 + b, gr, c, (const float *)col + b * P, ld);
        else col2im_chan_f64(j, n0 + b, gr, c, (const double *)col + b * P, ld);
    }
}

typedef struct {
    const cjob *j;
    int64_t n0, nb, gr;
    void *col;
} rows_ctx;

static void im2col_task(int64_t b, int64_t e, void *ctx) {
    const rows_ctx *c = ctx;
    im2col_rows(c->j, c->n0, c->nb, c->gr, c->col, b, e);
}
static void col2im_task(int64_t b, int64_t e, void *ctx) {
    const rows_ctx *c = ctx;
    col2im_chans(c->j, c->n0, c->nb, c->gr, c->col, b, e);
}

/* grad_out rows of group gr for images from n0: [Og x nb*P], ld = gso. */
static const char *gmat(const cjob *j, int64_t gr, int64_t n0) {
    return j->gt + (size_t)((gr * j->g.Og * j->gso + n0 * j->gsn) * (int64_t)jn_dtype_size[j->cd]);
}

/* C = alpha*op(A) @ op(B) + beta*C in the compute dtype. */
static void gemm(jn_dtype cd, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *A, int64_t lda,
                 const void *B, int64_t ldb, double beta, void *C, int64_t ldc) {
    enum CBLAS_TRANSPOSE tA = ta ? CblasTrans : CblasNoTrans, tB = tb ? CblasTrans : CblasNoTrans;
    if (cd == JN_F32)
        cblas_sgemm(CblasRowMajor, tA, tB, (int)m, (int)n, (int)k, 1.0f, A, (int)lda, B, (int)ldb, (float)beta, C,
                    (int)ldc);
    else
        cblas_dgemm(CblasRowMajor, tA, tB, (int)m, (int)n, (int)k, 1.0, A, (int)lda, B, (int)ldb, beta, C,
                    (int)ldc);
}

/* Input gradient of images [n0, n0+nb): per group, cols = W_g^T @ dY_g
 * (in GEMMs of at most cw columns), then col2im; `par` spreads col2im over
 * the pool. */
static void dx_chunk(const cjob *j, int64_t n0, int64_t nb, void *col, int par) {
    const cgeom *g = &j->g;
    size_t es = jn_dtype_size[j->cd];
    const int64_t ncol = nb * j->Pc;
    for (int64_t gr = 0; gr < g->G; gr++) {
        const char *Wg = j->w + (size_t)(gr * g->Og * g->Kc * (int64_t)es);
        const char *Gm = gmat(j, gr, n0);
        for (int64_t c0 = 0; c0 < ncol; c0 += j->cw) {
            int64_t w = ncol - c0 < j->cw ? ncol - c0 : j->cw;
            gemm(j->cd, 1, 0, g->Kc, w, g->Og, Wg, g->Kc, Gm + c0 * (int64_t)es, j->gso, 0.0,
                 (char *)col + c0 * (int64_t)es, ncol);
        }
        rows_ctx c = {j, n0, nb, gr, col};
        int64_t tasks = nb * g->Cg;
        if (par && tasks > 1 && g->Kc * nb * j->Pc >= (1 << 16))
            jn_parallel_for(tasks, (int64_t)(32768 / (g->kh * g->kw * j->Pc + 1)) + 1, col2im_task, &c);
        else
            col2im_chans(j, n0, nb, gr, col, 0, tasks);
    }
}

/* Weight gradient of images [n0, n0+nb) added into dst [O, Kc]. */
static void dw_chunk(const cjob *j, int64_t n0, int64_t nb, void *col, char *dst, int par) {
    const cgeom *g = &j->g;
    size_t es = jn_dtype_size[j->cd];
    for (int64_t gr = 0; gr < g->G; gr++) {
        rows_ctx c = {j, n0, nb, gr, col};
        int64_t tasks = nb * g->Kc;
        if (par && tasks > 1 && g->Kc * nb * j->Pc >= (1 << 16))
            jn_parallel_for(tasks, (int64_t)(32768 / (j->Pc + 1)) + 1, im2col_task, &c);
        else
            im2col_rows(j, n0, nb, gr, col, 0, tasks);
        char *Dg = dst + (size_t)(gr * g->Og * g->Kc * (int64_t)es);
        const char *Gm = gmat(j, gr, n0);
        const int64_t ncol = nb * j->Pc;
        for (int64_t c0 = 0; c0 < ncol; c0 += j->cw) {
            int64_t w = ncol - c0 < j->cw ? ncol - c0 : j->cw;
            for (int64_t r0 = 0; r0 < g->Kc; r0 += j->rb) {
                int64_t rn = g->Kc - r0 < j->rb ? g->Kc - r0 : j->rb;
                gemm(j->cd, 0, 1, g->Og, rn, w, Gm + c0 * (int64_t)es, j->gso,
                     (const char *)col + (r0 * ncol + c0) * (int64_t)es, ncol, 1.0, Dg + r0 * (int64_t)es, g->Kc);
            }
        }
    }
}

/* Batch-parallel path: task t owns images [t*N/ntask, (t+1)*N/ntask). */
static void dx_task(int64_t b, int64_t e, void *ctx) {
    cjob *j = ctx;
    void *col = malloc((size_t)(j->g.Kc * j->B * j->Pc) * jn_dtype_size[j->cd] + 1);
    if (!col) {
        __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    for (int64_t t = b; t < e; t++) {
        int64_t n1 = (t + 1) * j->g.N / j->ntask;
        for (int64_t n = t * j->g.N / j->ntask; n < n1; n += j->B)
            dx_chunk(j, n, n1 - n < j->B ? n1 - n : j->B, col, 0);
    }
    free(col);
}

static void dw_task(int64_t b, int64_t e, void *ctx) {
    cjob *j = ctx;
    void *col = malloc((size_t)(j->g.Kc * j->B * j->Pc) * jn_dtype_size[j->cd] + 1);
    if (!col) {
        __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    size_t wbytes = (size_t)(j->g.O * j->g.Kc) * jn_dtype_size[j->cd];
    for (int64_t t = b; t < e; t++) {
        char *dst = j->dw + (size_t)t * wbytes;
        memset(dst, 0, wbytes);
        int64_t n1 = (t + 1) * j->g.N / j->ntask;
        for (int64_t n = t * j->g.N / j->ntask; n < n1; n += j->B)
            dw_chunk(j, n, n1 - n < j->B ? n1 - n : j->B, col, dst, 0);
    }
    free(col);
}

/* Sum of the ntask partial weight gradients, in task order. */
typedef struct {
    const cjob *j;
    char *dst;
} sum_ctx;

static void sum_partials(int64_t b, int64_t e, void *ctx) {
    const sum_ctx *s = ctx;
    const int64_t wn = s->j->g.O * s->j->g.Kc, nt = s->j->ntask;
    if (s->j->cd == JN_F32) {
        const float *p = (const float *)s->j->dw;
        float *d = (float *)s->dst;
        for (int64_t i = b; i < e; i++) d[i] = p[i];
        for (int64_t t = 1; t < nt; t++)
            for (int64_t i = b; i < e; i++) d[i] += p[t * wn + i];
    } else {
        const double *p = (const double *)s->j->dw;
        double *d = (double *)s->dst;
        for (int64_t i = b; i < e; i++) d[i] = p[i];
        for (int64_t t = 1; t < nt; t++)
            for (int64_t i = b; i < e; i++) d[i] += p[t * wn + i];
    }
}

/* Chooses the execution plan.  Batch-parallel (j->ntask > 1) when every
 * GEMM call can stay under OpenBLAS's single-thread size: several images
 * per call when one image is small, one image in column slices of j->cw
 * when O_g x Ckk is small (a thin product: memory-bound, and OpenBLAS
 * threads it poorly).  Otherwise chunks of j->B images, one BLAS-threaded
 * GEMM per chunk and group.  `rows`: rows of the column matrix per GEMM. */
static void plan(cjob *j, int64_t rows) {
    const cgeom *g = &j->g;
    double mk = (double)g->Og * (double)rows, mnk = mk * (double)j->Pc;
    int nt = jn_num_threads();
    if (g->N > 1 && nt > 1 && (mnk <= BLAS_SINGLE_THREAD_MNK || mk * 64.0 <= BLAS_SINGLE_THREAD_MNK)) {
        j->ntask = g->N < nt ? g->N : nt;
        int64_t per = (g->N + j->ntask - 1) / j->ntask, b = (int64_t)(BLAS_SINGLE_THREAD_MNK / (mnk + 1.0));
        j->B = b < 1 ? 1 : b > per ? per : b;
        j->cw = mnk <= BLAS_SINGLE_THREAD_MNK ? j->B * j->Pc : (int64_t)(BLAS_SINGLE_THREAD_MNK / mk);
    } else {
        j->ntask = 1;
        int64_t b = COL_TARGET_ELEMS / (g->Kc * j->Pc + 1);
        j->B = b < 1 ? 1 : b > g->N ? g->N : b;
        j->cw = j->B * j->Pc;
        /* one thread: a thin product in slices, as above (small GEMMs skip packing) */
        if (nt == 1 && mk * 64.0 <= BLAS_SINGLE_THREAD_MNK && (double)j->cw * mk > BLAS_SINGLE_THREAD_MNK)
            j->cw = (int64_t)(BLAS_SINGLE_THREAD_MNK / mk);
    }
}

/* grad_out (of any layout and float dtype) in the compute dtype, laid out so
 * that plan's chunks of images are strided matrices: *own is the tensor to
 * release (may be gout itself, with a new reference). */
static jn_status grad_layout(cjob *j, jn_tensor *gout, jn_tensor **own) {
    const cgeom *g = &j->g;
    int o = g->batched;
    const int64_t *gs = gout->strides;
    int plane_contig = (g->OW == 1 || gs[o + 2] == 1) && (g->OH == 1 || gs[o + 1] == g->OW);
    /* BLAS needs a row stride of at least P, also between groups */
    if (!j->wide && gout->dtype == j->cd && j->B == 1 && plane_contig && gs[o] >= g->P) {
        jn_tensor_incref(gout);
        *own = gout;
        j->gt = jn_data(gout);
        j->gso = gs[o];
        j->gsn = o ? gs[0] : 0;
        return JN_OK;
    }
    /* wide: rows of Wp with zeros after the first OW (the garbage columns) */
    int64_t rw = j->wide ? j->Wp : g->OW, shape[4] = {g->O, g->N, g->OH, rw};
    jn_tensor *t = j->wide ? jn_tensor_zeros(j->cd, 4, shape) : jn_tensor_new(j->cd, 4, shape);
    if (!t) return JN_ERR_NOMEM;
    jn_tensor *v = jn_tensor_alias(t); /* t seen as [N, O, OH, OW] (or [O, OH, OW]) */
    if (!v) {
        jn_tensor_decref(t);
        return JN_ERR_NOMEM;
    }
    int64_t vs[4] = {j->Pc, g->N * j->Pc, rw, 1}, vsh[4] = {g->N, g->O, g->OH, g->OW};
    v->ndim = gout->ndim;
    memcpy(v->shape, vsh + !o, sizeof(int64_t) * (size_t)v->ndim);
    memcpy(v->strides, vs + !o, sizeof(int64_t) * (size_t)v->ndim);
    jn_status s = jn_copy_into(v, gout);
    jn_tensor_decref(v);
    if (s) {
        jn_tensor_decref(t);
        return s;
    }
    *own = t;
    j->gt = jn_data(t);
    j->gso = g->N * j->Pc;
    j->gsn = j->Pc;
    return JN_OK;
}

/* Is every element of the [N, C, H, W]-strided (or contiguous [n]) float
 * array finite?  The wide layout's garbage columns are only exact zeros then. */
#define ALL_FINITE(NAME, T)                                                                       \
    static SIMD_ADD int NAME(const T *x, const int64_t *sh, const int64_t *st) {                  \
        int bad = 0;                                                                              \
        for (int64_t a = 0; a < sh[0]; a++)                                                       \
            for (int64_t b = 0; b < sh[1]; b++)                                                   \
                for (int64_t c = 0; c < sh[2]; c++) {                                             \
                    const T *r = x + a * st[0] + b * st[1] + c * st[2];                           \
                    for (int64_t d = 0; d < sh[3]; d++) bad |= (r[d * st[3]] - r[d * st[3]]) != 0; \
                }                                                                                 \
        return !bad;                                                                              \
    }
ALL_FINITE(all_finite_f32, float)
ALL_FINITE(all_finite_f64, double)

static int all_finite(jn_dtype cd, const char *x, const int64_t *sh, const int64_t *st) {
    return cd == JN_F32 ? all_finite_f32((const float *)x, sh, st) : all_finite_f64((const double *)x, sh, st);
}

/* Chooses the wide layout (stride 1, no dilation, short output rows,
 * garbage under half a row, `other` finite: the weight for the input grad,
 * the input for the weight grad) and sets Pc; call before plan(). */
static void wide_plan(cjob *j, const char *other, const int64_t *sh, const int64_t *st) {
    const cgeom *g = &j->g;
    j->Hp = g->H + 2 * g->ph;
    j->Wp = g->W + 2 * g->pw;
    j->L = (g->OH - 1) * j->Wp + g->OW;
    j->LW = g->OH * j->Wp;
    j->wide = g->sh == 1 && g->sw == 1 && g->dh == 1 && g->dw == 1 && g->OH > 0 && g->OW > 0 &&
              g->OW < WIDE_MAX_OW && 2 * (g->kw - 1) <= g->OW && j->Hp * j->Wp <= INT_MAX &&
              all_finite(j->cd, other, sh, st);
    j->Pc = j->wide ? j->LW : g->P;
}

static jn_status blas_fits(const char *op, const cjob *j) {
    const cgeom *g = &j->g;
    if (g->Og > INT_MAX || g->Kc > INT_MAX || j->B * j->Pc > INT_MAX || j->gso > INT_MAX)
        return jn_error(JN_ERR_UNSUPPORTED,
                        "%s: problem too large for BLAS (kernel rows %lld, output channels per group %lld, "
                        "columns %lld)", op, (long long)g->Kc, (long long)g->Og, (long long)(j->B * j->Pc));
    return JN_OK;
}

/* dx (contiguous, of the compute dtype) = the interior of the padded
 * planes acc [N, C, Hp, Wp]. */
static jn_status crop_into(const cjob *j, jn_tensor *acc, jn_tensor *dx) {
    const cgeom *g = &j->g;
    jn_tensor *src = jn_tensor_alias(acc), *dst = jn_tensor_alias(dx);
    jn_status s = JN_ERR_NOMEM;
    if (src && dst) {
        int64_t sh[4] = {g->N, g->C, g->H, g->W};
        memcpy(src->shape, sh, sizeof sh);
        src->offset += g->ph * j->Wp + g->pw;
        dst->ndim = 4;
        memcpy(dst->shape, sh, sizeof sh);
        jn_contiguous_strides(4, sh, dst->strides);
        s = jn_copy_into(dst, src);
    }
    jn_tensor_decref(src);
    jn_tensor_decref(dst);
    return s;
}

/* ==================================================== conv2d_input_grad */
static jn_status input_grad_check(jn_tensor *const *in, const jn_attrs *a, cgeom *g) {
    const char *op = "conv2d_input_grad";
    const jn_tensor *gout = in[0], *w = in[1];
    char s1[160];
    jn_status s;
    if ((s = check_float(op, "grad_output", gout))) return s;
    if (w->dtype != gout->dtype)
        return jn_error(JN_ERR_TYPE, "%s: grad_output type (%s) and weight type (%s) should be the same", op,
                        dn(gout->dtype), dn(w->dtype));
    if ((s = size_attr(op, "input_size", &a->a[0].l, 3, 4))) return s;
    if (w->ndim != 4)
        return jn_error(JN_ERR_SHAPE,
                        "%s: expected a 4-D weight [out_channels, in_channels/groups, kH, kW], but got weight of "
                        "size %s", op, jn_shape_str(w->ndim, w->shape, s1, sizeof s1));
    return conv_geom(op, a->a[0].l.n, a->a[0].l.v, w->shape, gout, a, g);
}

jn_status jn_infer_conv2d_input_grad(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    cgeom g;
    jn_status s = input_grad_check(in, a, &g);
    if (s) return s;
    out->dtype = in[0]->dtype;
    out->ndim = a->a[0].l.n;
    memcpy(out->shape, a->a[0].l.v, sizeof(int64_t) * (size_t)out->ndim);
    return JN_OK;
}

jn_status jn_cpu_conv2d_input_grad(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    const char *op = "conv2d_input_grad";
    cjob j;
    memset(&j, 0, sizeof j);
    jn_status s = input_grad_check(in, a, &j.g);
    if (s) return s;
    if (jn_numel(out[0]) == 0) return JN_OK;
    if (j.g.Og == 0) { /* no output channels: nothing flows back */
        memset(jn_data(out[0]), 0, (size_t)jn_numel(out[0]) * jn_elsize(out[0]));
        return JN_OK;
    }
    j.cd = in[0]->dtype == JN_F64 ? JN_F64 : JN_F32;
    jn_tensor *gt = NULL, *w = NULL, *dx = out[0], *acc = NULL;
    if (!(w = jn_to_dtype(in[1], j.cd))) return JN_ERR_NOMEM;
    int64_t wsh[4] = {1, 1, j.g.O, j.g.Kc}, wst[4] = {0, 0, j.g.Kc, 1};
    wide_plan(&j, jn_data(w), wsh, wst);
    plan(&j, j.g.Kc);
    if ((s = blas_fits(op, &j))) goto done;
    if ((s = grad_layout(&j, in[0], &gt))) goto done;
    if (is_half(out[0]->dtype) && !(dx = jn_tensor_new(JN_F32, out[0]->ndim, out[0]->shape))) {
        s = JN_ERR_NOMEM;
        goto done;
    }
    j.w = jn_data(w);
    j.dx = jn_data(dx);
    j.acc = j.dx;
    if (j.wide && (j.g.ph || j.g.pw)) { /* col2im into padded planes, cropped into dx after */
        int64_t ash[4] = {j.g.N, j.g.C, j.Hp, j.Wp};
        if (!(acc = jn_tensor_new(j.cd, 4, ash))) {
            s = JN_ERR_NOMEM;
            goto done;
        }
        j.acc = jn_data(acc);
    }
    if (j.ntask > 1) {
        jn_parallel_for(j.ntask, 1, dx_task, &j);
        if (j.failed) s = jn_error(JN_ERR_NOMEM, "%s: out of memory for the column buffers", op);
    } else {
        void *col = malloc((size_t)(j.g.Kc * j.B * j.Pc) * jn_dtype_size[j.cd] + 1);
        if (!col) {
            s = jn_error(JN_ERR_NOMEM, "%s: out of memory for a %lld x %lld column buffer", op, (long long)j.g.Kc,
                         (long long)(j.B * j.Pc));
            goto done;
        }
        for (int64_t n = 0; n < j.g.N; n += j.B) dx_chunk(&j, n, j.g.N - n < j.B ? j.g.N - n : j.B, col, 1);
        free(col);
    }
    if (!s && acc) s = crop_into(&j, acc, dx);
    if (!s && dx != out[0]) s = jn_copy_into(out[0], dx);
done:
    jn_tensor_decref(gt);
    jn_tensor_decref(w);
    jn_tensor_decref(acc);
    if (dx != out[0]) jn_tensor_decref(dx);
    return s;
}

/* *out = x (of the compute dtype) zero-padded to [N, C, Hp, Wp]. */
static jn_status pad_planes(const cjob *j, jn_tensor *x, jn_tensor **out) {
    const cgeom *g = &j->g;
    int64_t psh[4] = {g->N, g->C, j->Hp, j->Wp}, sh[4] = {g->N, g->C, g->H, g->W};
    jn_tensor *p = jn_tensor_zeros(j->cd, 4, psh), *v = p ? jn_tensor_alias(p) : NULL;
    jn_status s = JN_ERR_NOMEM;
    if (v) {
        memcpy(v->shape, sh, sizeof sh);
        v->offset += g->ph * j->Wp + g->pw;
        s = jn_copy_into(v, x);
    }
    jn_tensor_decref(v);
    if (s) {
        jn_tensor_decref(p);
        return s;
    }
    *out = p;
    return JN_OK;
}

/* =================================================== conv2d_weight_grad */
static jn_status weight_grad_check(jn_tensor *const *in, const jn_attrs *a, cgeom *g) {
    const char *op = "conv2d_weight_grad";
    const jn_tensor *gout = in[0], *x = in[1];
    char s1[160];
    jn_status s;
    if ((s = check_float(op, "grad_output", gout))) return s;
    if (x->dtype != gout->dtype)
        return jn_error(JN_ERR_TYPE, "%s: grad_output type (%s) and input type (%s) should be the same", op,
                        dn(gout->dtype), dn(x->dtype));
    if ((s = size_attr(op, "weight_size", &a->a[0].l, 4, 4))) return s;
    if (x->ndim != 3 && x->ndim != 4)
        return jn_error(JN_ERR_SHAPE, "%s: expected 3D (unbatched) or 4D (batched) input, but got input of size: %s",
                        op, jn_shape_str(x->ndim, x->shape, s1, sizeof s1));
    return conv_geom(op, x->ndim, x->shape, a->a[0].l.v, gout, a, g);
}

jn_status jn_infer_conv2d_weight_grad(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    cgeom g;
    jn_status s = weight_grad_check(in, a, &g);
    if (s) return s;
    out->dtype = in[0]->dtype;
    out->ndim = 4;
    memcpy(out->shape, a->a[0].l.v, sizeof(int64_t) * 4);
    return JN_OK;
}

jn_status jn_cpu_conv2d_weight_grad(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    const char *op = "conv2d_weight_grad";
    cjob j;
    memset(&j, 0, sizeof j);
    jn_status s = weight_grad_check(in, a, &j.g);
    if (s) return s;
    if (jn_numel(out[0]) == 0) return JN_OK;
    if (j.g.N == 0) { /* an empty batch contributes nothing */
        memset(jn_data(out[0]), 0, (size_t)jn_numel(out[0]) * jn_elsize(out[0]));
        return JN_OK;
    }
    j.cd = in[0]->dtype == JN_F64 ? JN_F64 : JN_F32;
    jn_tensor *gt = NULL, *x = NULL, *xpad = NULL, *dw = out[0];
    char *partials = NULL;
    if (!(x = is_half(in[1]->dtype) ? jn_to_dtype(in[1], JN_F32) : in[1])) return JN_ERR_NOMEM;
    if (x == in[1]) jn_tensor_incref(x);
    j.x = jn_data(x);
    j.xs[0] = j.g.batched ? x->strides[0] : 0;
    for (int d = 1; d < 4; d++) j.xs[d] = x->strides[d - 1 + j.g.batched];
    int64_t xsh[4] = {j.g.N, j.g.C, j.g.H, j.g.W};
    wide_plan(&j, j.x, xsh, j.xs);
    j.rb = j.g.Kc > 0 ? j.g.Kc : 1;
    if (j.g.Og > 0 && j.g.Og * j.g.Kc > SMALL_NT_ENTRIES && j.g.Og <= SMALL_NT_ENTRIES / 16 &&
        (double)j.g.Og * (double)j.g.Kc * (double)j.Pc <= SMALL_GEMM_MNK)
        j.rb = SMALL_NT_ENTRIES / j.g.Og;
    plan(&j, j.rb);
    if ((s = blas_fits(op, &j))) goto done;
    if ((s = grad_layout(&j, in[0], &gt))) goto done;
    if (is_half(out[0]->dtype) && !(dw = jn_tensor_new(JN_F32, 4, out[0]->shape))) {
        s = JN_ERR_NOMEM;
        goto done;
    }
    if (j.wide) { /* the wide rows read whole planes: pad them (or make their rows contiguous) first */
        j.xp = j.x;
        j.xpn = j.xs[0];
        j.xpc = j.xs[1];
        if (j.g.ph || j.g.pw || (j.g.W > 1 && j.xs[3] != 1) || (j.g.H > 1 && j.xs[2] != j.g.W)) {
            if ((s = pad_planes(&j, x, &xpad))) goto done;
            j.xp = jn_data(xpad);
            j.xpn = j.g.C * j.Hp * j.Wp;
            j.xpc = j.Hp * j.Wp;
        }
    }
    size_t wbytes = (size_t)(j.g.O * j.g.Kc) * jn_dtype_size[j.cd];
    if (j.ntask > 1) {
        if (!(partials = malloc(wbytes * (size_t)j.ntask))) {
            s = jn_error(JN_ERR_NOMEM, "%s: out of memory for %lld partial sums", op, (long long)j.ntask);
            goto done;
        }
        j.dw = partials;
        jn_parallel_for(j.ntask, 1, dw_task, &j);
        if (j.failed) {
            s = jn_error(JN_ERR_NOMEM, "%s: out of memory for the column buffers", op);
            goto done;
        }
        sum_ctx sc = {&j, jn_data(dw)};
        int64_t wn = j.g.O * j.g.Kc;
        jn_parallel_for(wn, 16384 / j.ntask + 1, sum_partials, &sc);
    } else {
        void *col = malloc((size_t)(j.g.Kc * j.B * j.Pc) * jn_dtype_size[j.cd] + 1);
        if (!col) {
            s = jn_error(JN_ERR_NOMEM, "%s: out of memory for a %lld x %lld column buffer", op, (long long)j.g.Kc,
                         (long long)(j.B * j.Pc));
            goto done;
        }
        memset(jn_data(dw), 0, wbytes);
        for (int64_t n = 0; n < j.g.N; n += j.B)
            dw_chunk(&j, n, j.g.N - n < j.B ? j.g.N - n : j.B, col, jn_data(dw), 1);
        free(col);
    }
    if (dw != out[0]) s = jn_copy_into(out[0], dw);
done:
    free(partials);
    jn_tensor_decref(gt);
    jn_tensor_decref(x);
    jn_tensor_decref(xpad);
    if (dw != out[0]) jn_tensor_decref(dw);
    return s;
}

/* ========================================================== pool backward */
typedef struct {
    int64_t N, C, H, W, OH, OW, kh, kw, sh, sw, ph, pw;
    int count_include_pad;
    jn_dtype cd;
    const char *g;
    int64_t gs[4];      /* grad_out element strides as [N, C, OH, OW] */
    char *dx;           /* contiguous [N, C, H, W] of dtype cd */
    const int64_t *idx; /* max pool: argmax indices into each H*W plane */
    int64_t is[4];      /* their element strides as [N, C, OH, OW] */
    int bad;            /* max pool: an index was out of range */
} pjob;

/* input_size of a pool: 3 or 4 dims with non-empty non-batch dims (the
 * forward refuses anything else), and grad_out's float dtype. */
static jn_status pool_input(const char *op, const jn_tensor *gout, const jn_attrs *a, pjob *p) {
    const jn_ints *l = &a->a[0].l;
    char s1[160], s2[160];
    jn_status s;
    if ((s = check_float(op, "grad_output", gout))) return s;
    if ((s = size_attr(op, "input_size", l, 3, 4))) return s;
    for (int d = l->n - 3; d < l->n; d++)
        if (l->v[d] == 0)
            return jn_error(JN_ERR_SHAPE,
                            "%s: expected input to have non-zero size for non-batch dimensions, but input_size is "
                            "%s with dimension %d being empty", op, jn_shape_str(l->n, l->v, s1, sizeof s1), d);
    if (gout->ndim != l->n)
        return jn_error(JN_ERR_SHAPE, "%s: grad_output of size %s must have as many dims as input_size %s", op,
                        jn_shape_str(gout->ndim, gout->shape, s1, sizeof s1), jn_shape_str(l->n, l->v, s2, sizeof s2));
    memset(p, 0, sizeof *p);
    int o = l->n - 3;
    p->N = o ? l->v[0] : 1;
    p->C = l->v[o];
    p->H = l->v[o + 1];
    p->W = l->v[o + 2];
    return JN_OK;
}

static int64_t pool_len(int64_t in, int64_t k, int64_t pad, int64_t st, int ceil_mode) {
    return jn_rt_pool_out_len(in, k, pad, st, 1, ceil_mode);
}

static jn_status avg_geom(const jn_tensor *gout, const jn_attrs *a, pjob *p) {
    const char *op = "avg_pool2d_backward";
    int64_t k[2] = {0, 0}, st[2] = {0, 0}, pad[2] = {0, 0};
    char s1[160], why[300];
    jn_status s;
    if ((s = pool_input(op, gout, a, p))) return s;
    if ((s = jn_rt_pair_attr(op, "kernel_size", &a->a[1].l, -1, k))) return s;
    if (a->a[2].l.n == 0) st[0] = k[0], st[1] = k[1];
    else if ((s = jn_rt_pair_attr(op, "stride", &a->a[2].l, -1, st))) return s;
    if ((s = jn_rt_pair_attr(op, "padding", &a->a[3].l, 0, pad))) return s;
    int ceil_mode = a->a[4].i != 0;
    p->count_include_pad = a->a[5].i != 0;
    if (k[0] <= 0 || k[1] <= 0)
        return jn_error(JN_ERR_VALUE, "%s: kernel size should be greater than zero, but got kH: %lld kW: %lld", op,
                        (long long)k[0], (long long)k[1]);
    if (st[0] <= 0 || st[1] <= 0)
        return jn_error(JN_ERR_VALUE, "%s: stride should be greater than zero, but got dH: %lld dW: %lld", op,
                        (long long)st[0], (long long)st[1]);
    if (pad[0] < 0 || pad[1] < 0)
        return jn_error(JN_ERR_VALUE, "%s: pad must be non-negative, but got padH: %lld padW: %lld", op,
                        (long long)pad[0], (long long)pad[1]);
    if (pad[0] > k[0] / 2 || pad[1] > k[1] / 2)
        return jn_error(JN_ERR_VALUE,
                        "%s: pad should be smaller than or equal to half of kernel size, but got padW = %lld, padH = "
                        "%lld, kW = %lld, kH = %lld",
                        op, (long long)pad[1], (long long)pad[0], (long long)k[1], (long long)k[0]);
    p->kh = k[0], p->kw = k[1], p->sh = st[0], p->sw = st[1], p->ph = pad[0], p->pw = pad[1];
    p->OH = pool_len(p->H, k[0], pad[0], st[0], ceil_mode);
    p->OW = pool_len(p->W, k[1], pad[1], st[1], ceil_mode);
    const jn_ints *l = &a->a[0].l;
    if (p->OH == -2 || p->OW == -2)
        return jn_error(JN_ERR_VALUE, "%s: kernel/stride/padding too large", op);
    if (p->OH < 1 || p->OW < 1)
        return jn_error(JN_ERR_SHAPE,
                        "%s: given input size: (%lldx%lldx%lld). Calculated output size: (%lldx%lldx%lld). Output "
                        "size is too small (input_size %s)",
                        op, (long long)p->C, (long long)p->H, (long long)p->W, (long long)p->C, (long long)p->OH,
                        (long long)p->OW, jn_shape_str(l->n, l->v, s1, sizeof s1));
    int64_t want[4] = {p->N, p->C, p->OH, p->OW};
    snprintf(why, sizeof why, "avg_pool2d of input %s with kernel [%lld, %lld], stride [%lld, %lld], padding "
             "[%lld, %lld], ceil_mode %d", jn_shape_str(l->n, l->v, s1, sizeof s1), (long long)k[0],
             (long long)k[1], (long long)st[0], (long long)st[1], (long long)pad[0], (long long)pad[1], ceil_mode);
    return check_grad_shape(op, gout, l->n, l->n == 4 ? want : want + 1, why);
}

/* Element strides of grad_out as [N, C, OH, OW]. */
static void grad_strides(const jn_tensor *g, int64_t gs[4]) {
    int o = g->ndim - 3;
    gs[0] = o ? g->strides[0] : 0;
    for (int d = 1; d < 4; d++) gs[d] = g->strides[d - 1 + o];
}

/* Each output cell's window, clipped exactly as avg_pool2d's forward does,
 * receives grad/divisor on its in-range pixels. */
#define AVG_BWD(NAME, T)                                                                          \
    static void NAME(int64_t b, int64_t e, void *ctx) {                                           \
        const pjob *p = ctx;                                                                      \
        for (int64_t pl = b; pl < e; pl++) {                                                      \
            const T *g = (const T *)p->g + (pl / p->C) * p->gs[0] + (pl % p->C) * p->gs[1];       \
            T *dx = (T *)p->dx + pl * p->H * p->W;                                                \
            memset(dx, 0, sizeof(T) * (size_t)(p->H * p->W));                                     \
            for (int64_t oh = 0; oh < p->OH; oh++) {                                              \
                int64_t h0, h1, hn, w0, w1, wn;                                                   \
                jn_rt_avg_window(oh, p->sh, p->ph, p->kh, p->H, &h0, &h1, &hn);                   \
                for (int64_t ow = 0; ow < p->OW; ow++) {                                          \
                    jn_rt_avg_window(ow, p->sw, p->pw, p->kw, p->W, &w0, &w1, &wn);               \
                    if (h0 >= h1 || w0 >= w1) continue;                                           \
                    int64_t div = p->count_include_pad ? hn * wn : (h1 - h0) * (w1 - w0);          \
                    T d = g[oh * p->gs[2] + ow * p->gs[3]] / (T)div;                              \
                    for (int64_t ih = h0; ih < h1; ih++)                                          \
                        for (int64_t iw = w0; iw < w1; iw++) dx[ih * p->W + iw] += d;             \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }
AVG_BWD(avg_bwd_f32, float)
AVG_BWD(avg_bwd_f64, double)

/* Window of output i: [floor(i*In/Out), ceil((i+1)*In/Out)). */
#define ADAPTIVE_BWD(NAME, T)                                                                     \
    static void NAME(int64_t b, int64_t e, void *ctx) {                                           \
        const pjob *p = ctx;                                                                      \
        for (int64_t pl = b; pl < e; pl++) {                                                      \
            const T *g = (const T *)p->g + (pl / p->C) * p->gs[0] + (pl % p->C) * p->gs[1];       \
            T *dx = (T *)p->dx + pl * p->H * p->W;                                                \
            memset(dx, 0, sizeof(T) * (size_t)(p->H * p->W));                                     \
            for (int64_t oh = 0; oh < p->OH; oh++) {                                              \
                int64_t h0 = oh * p->H / p->OH, h1 = ((oh + 1) * p->H + p->OH - 1) / p->OH;       \
                for (int64_t ow = 0; ow < p->OW; ow++) {                                          \
                    int64_t w0 = ow * p->W / p->OW, w1 = ((ow + 1) * p->W + p->OW - 1) / p->OW;   \
                    T d = g[oh * p->gs[2] + ow * p->gs[3]] / (T)((h1 - h0) * (w1 - w0));          \
                    for (int64_t ih = h0; ih < h1; ih++)                                          \
                        for (int64_t iw = w0; iw < w1; iw++) dx[ih * p->W + iw] += d;             \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }
ADAPTIVE_BWD(adaptive_bwd_f32, float)
ADAPTIVE_BWD(adaptive_bwd_f64, double)

#define MAX_BWD(NAME, T)                                                                          \
    static void NAME(int64_t b, int64_t e, void *ctx) {                                           \
        pjob *p = ctx;                                                                            \
        const int64_t HW = p->H * p->W, OH = p->OH, OW = p->OW, C = p->C;                         \
        int bad = 0;                                                                              \
        for (int64_t pl = b; pl < e; pl++) {                                                      \
            const T *g = (const T *)p->g + (pl / C) * p->gs[0] + (pl % C) * p->gs[1];             \
            const int64_t *ix = p->idx + (pl / C) * p->is[0] + (pl % C) * p->is[1];               \
            T *dx = (T *)p->dx + pl * HW;                                                         \
            memset(dx, 0, sizeof(T) * (size_t)HW);                                                \
            for (int64_t oh = 0; oh < OH; oh++)                                                   \
                for (int64_t ow = 0; ow < OW; ow++) {                                             \
                    int64_t k = ix[oh * p->is[2] + ow * p->is[3]];                                \
                    if ((uint64_t)k >= (uint64_t)HW) {                                            \
                        bad = 1;                                                                  \
                        continue;                                                                 \
                    }                                                                             \
                    dx[k] += g[oh * p->gs[2] + ow * p->gs[3]];                                    \
                }                                                                                 \
        }                                                                                         \
        if (bad) __atomic_store_n(&p->bad, 1, __ATOMIC_RELAXED);                                  \
    }
MAX_BWD(max_bwd_f32, float)
MAX_BWD(max_bwd_f64, double)

/* Runs a pool backward over every (batch, channel) plane; half dtypes go
 * through float32 copies. */
static jn_status pool_bwd_run(pjob *p, jn_tensor *gout, jn_tensor *out, double window, jn_range_fn f32,
                              jn_range_fn f64) {
    jn_status s = JN_OK;
    jn_tensor *g = gout, *dx = out;
    if (jn_numel(out) == 0) return JN_OK;
    if (is_half(gout->dtype)) {
        g = jn_to_dtype(gout, JN_F32);
        dx = jn_tensor_new(JN_F32, out->ndim, out->shape);
        if (!g || !dx) {
            s = JN_ERR_NOMEM;
            goto done;
        }
    }
    p->cd = g->dtype;
    p->g = jn_data(g);
    grad_strides(g, p->gs);
    p->dx = jn_data(dx);
    double work = (double)p->H * (double)p->W + (double)p->OH * (double)p->OW * (window + 1.0);
    jn_parallel_for(p->N * p->C, (int64_t)(32768.0 / work) + 1, p->cd == JN_F64 ? f64 : f32, p);
    if (dx != out) s = jn_copy_into(out, dx);
done:
    if (g != gout) jn_tensor_decref(g);
    if (dx != out) jn_tensor_decref(dx);
    return s;
}

/* ================================================== avg_pool2d_backward */
jn_status jn_infer_avg_pool2d_backward(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    pjob p;
    jn_status s = avg_geom(in[0], a, &p);
    if (s) return s;
    out->dtype = in[0]->dtype;
    out->ndim = a->a[0].l.n;
    memcpy(out->shape, a->a[0].l.v, sizeof(int64_t) * (size_t)out->ndim);
    return JN_OK;
}

jn_status jn_cpu_avg_pool2d_backward(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    pjob p;
    jn_status s = avg_geom(in[0], a, &p);
    if (s) return s;
    return pool_bwd_run(&p, in[0], out[0], (double)(p.kh * p.kw), avg_bwd_f32, avg_bwd_f64);
}

/* ========================================= adaptive_avg_pool2d_backward */
static jn_status adaptive_geom(const jn_tensor *gout, const jn_attrs *a, pjob *p) {
    const char *op = "adaptive_avg_pool2d_backward";
    char s1[160], s2[160];
    jn_status s;
    if ((s = pool_input(op, gout, a, p))) return s;
    const jn_ints *l = &a->a[0].l;
    int o = l->n - 3;
    for (int d = 0; d < o + 1; d++) /* batch and channel dims: the output size is grad_out's own */
        if (gout->shape[d] != l->v[d])
            return jn_error(JN_ERR_SHAPE,
                            "%s: grad_output of size %s does not match input_size %s in dimension %d", op,
                            jn_shape_str(gout->ndim, gout->shape, s1, sizeof s1),
                            jn_shape_str(l->n, l->v, s2, sizeof s2), d);
    p->OH = gout->shape[o + 1];
    p->OW = gout->shape[o + 2];
    int64_t t;
    if (__builtin_mul_overflow(p->OH + 1, p->H, &t) || __builtin_mul_overflow(p->OW + 1, p->W, &t))
        return jn_error(JN_ERR_VALUE, "%s: output size %s and input_size %s are too large", op,
                        jn_shape_str(gout->ndim, gout->shape, s1, sizeof s1), jn_shape_str(l->n, l->v, s2, sizeof s2));
    return JN_OK;
}

jn_status jn_infer_adaptive_avg_pool2d_backward(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    pjob p;
    jn_status s = adaptive_geom(in[0], a, &p);
    if (s) return s;
    out->dtype = in[0]->dtype;
    out->ndim = a->a[0].l.n;
    memcpy(out->shape, a->a[0].l.v, sizeof(int64_t) * (size_t)out->ndim);
    return JN_OK;
}

jn_status jn_cpu_adaptive_avg_pool2d_backward(int nin, jn_tensor *const *in, const jn_attrs *a,
                                              jn_tensor *const *out) {
    pjob p;
    jn_status s = adaptive_geom(in[0], a, &p);
    if (s) return s;
    double win = (double)(p.H / (p.OH ? p.OH : 1) + 1) * (double)(p.W / (p.OW ? p.OW : 1) + 1);
    return pool_bwd_run(&p, in[0], out[0], win, adaptive_bwd_f32, adaptive_bwd_f64);
}

/* ================================================== max_pool2d_backward */
static jn_status max_bwd_geom(jn_tensor *const *in, const jn_attrs *a, pjob *p) {
    const char *op = "max_pool2d_backward";
    const jn_tensor *gout = in[0], *ix = in[1];
    char s1[160], s2[160];
    jn_status s;
    if ((s = pool_input(op, gout, a, p))) return s;
    const jn_ints *l = &a->a[0].l;
    int o = l->n - 3;
    for (int d = 0; d < o + 1; d++) /* batch and channel dims: grad_out's own */
        if (gout->shape[d] != l->v[d])
            return jn_error(JN_ERR_SHAPE, "%s: grad_output of size %s does not match input_size %s in dimension %d",
                            op, jn_shape_str(gout->ndim, gout->shape, s1, sizeof s1),
                            jn_shape_str(l->n, l->v, s2, sizeof s2), d);
    if (ix->dtype != JN_I64)
        return jn_error(JN_ERR_TYPE, "%s: indices must be int64 (max_pool2d's second output), got '%s'", op,
                        dn(ix->dtype));
    if (!jn_same_shape(ix->ndim, ix->shape, gout->ndim, gout->shape))
        return jn_error(JN_ERR_SHAPE, "%s: indices of size %s must have grad_output's size %s", op,
                        jn_shape_str(ix->ndim, ix->shape, s1, sizeof s1),
                        jn_shape_str(gout->ndim, gout->shape, s2, sizeof s2));
    p->OH = gout->shape[o + 1];
    p->OW = gout->shape[o + 2];
    return JN_OK;
}

jn_status jn_infer_max_pool2d_backward(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    pjob p;
    jn_status s = max_bwd_geom(in, a, &p);
    if (s) return s;
    out->dtype = in[0]->dtype;
    out->ndim = a->a[0].l.n;
    memcpy(out->shape, a->a[0].l.v, sizeof(int64_t) * (size_t)out->ndim);
    return JN_OK;
}

jn_status jn_cpu_max_pool2d_backward(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    pjob p;
    jn_status s = max_bwd_geom(in, a, &p);
    if (s) return s;
    p.idx = (const int64_t *)jn_data(in[1]);
    grad_strides(in[1], p.is);
    if ((s = pool_bwd_run(&p, in[0], out[0], 1.0, max_bwd_f32, max_bwd_f64))) return s;
    if (p.bad)
        return jn_error(JN_ERR_INDEX,
                        "max_pool2d_backward: an index is outside the %lld x %lld input plane; indices must come "
                        "from max_pool2d over an input of size input_size",
                        (long long)p.H, (long long)p.W);
    return JN_OK;
}
