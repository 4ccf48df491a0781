/* k_conv.c -- 2-D convolution and pooling: conv2d, max_pool2d, avg_pool2d,
 * adaptive_avg_pool2d, with PyTorch's shapes, defaults and error rules.
 *
 * conv2d is im2col + GEMM: for each batch element and group the receptive
 * fields are unrolled into a [C/groups*kH*kW, outH*outW] column matrix
 * (read straight from the input's strides, padding written as zeros) and
 * multiplied by the [out/groups, C/groups*kH*kW] weight slice with
 * sgemm/dgemm into the output, which already holds the bias.  A 1x1,
 * stride-1, unpadded convolution over plane-contiguous input skips the
 * unrolling; other stride-1 undilated ones use the wide layout (see
 * wide_image): one copy per column row instead of one per output row.
 * Small per-image products (which OpenBLAS runs single-threaded) are spread
 * over the batch on the thread pool, each worker with its own column
 * buffer; large ones run image by image with BLAS threading.
 *
 * Pools read the input through its strides and write contiguous outputs,
 * one (batch, channel) plane per task; 2x2 stride-2 max pooling has a
 * branch-free path.  float16/bfloat16 are computed in float32 (widened
 * copy, narrowed result), as PyTorch does.
 */
#include "k_conv.h"

#include <cblas.h>
#include <limits.h>
#include <math.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif
#include <stdlib.h>
#include <string.h>

#define BLAS_SINGLE_THREAD_MNK 262144.0 /* see k_linalg.c */

static const char *dn(jn_dtype d) { return jn_dtype_names[d]; }


/* 3-D (unbatched) or 4-D input with non-empty non-batch dims. */
static jn_status check_pool_input(const char *op, const jn_tensor *x) {
    char s1[128];
    if (x->ndim != 3 && x->ndim != 4)
        return jn_error(JN_ERR_SHAPE,
                        "%s: expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, "
                        "but got: %s", op, jn_shape_str(x->ndim, x->shape, s1, sizeof s1));
    for (int d = x->ndim - 3; d < x->ndim; d++)
        if (x->shape[d] == 0)
            return jn_error(JN_ERR_SHAPE,
                            "%s: expected input to have non-zero size for non-batch dimensions, but input has "
                            "sizes %s with dimension %d being empty",
                            op, jn_shape_str(x->ndim, x->shape, s1, sizeof s1), d);
    return JN_OK;
}

/* Planes view of a pool input: N (1 for 3-D), C, H, W and element strides. */
typedef struct {
    int64_t N, C, H, W;
    int64_t sn, sc, sh, sw;
} planes;

static planes planes_of(const jn_tensor *x) {
    planes p;
    int o = x->ndim - 3;
    p.N = o ? x->shape[0] : 1;
    p.sn = o ? x->strides[0] : 0;
    p.C = x->shape[o];
    p.H = x->shape[o + 1];
    p.W = x->shape[o + 2];
    p.sc = x->strides[o];
    p.sh = x->strides[o + 1];
    p.sw = x->strides[o + 2];
    return p;
}

/* PyTorch's pooling_output_shape. */

/* Half-precision inputs: compute on a float32 copy into a float32 result. */
static int is_half(jn_dtype d) { return d == JN_F16 || d == JN_BF16; }

/* ================================================================ conv2d */
typedef struct {
    int64_t N, C, H, W, O, G, Cg, Og, kh, kw, sh, sw, ph, pw, dh, dw, OH, OW, P, Kc;
    jn_dtype cd;        /* F32 or F64 */
    const char *x;
    int64_t xs[4];      /* element strides of x as [N, C, H, W] */
    const char *w;      /* contiguous [O, Kc] */
    char *out;          /* contiguous [N, O, P] */
    double beta;        /* 1: out already holds the bias */
    const char *bias;   /* wide path: [O] bias to add, or NULL */
    int direct;         /* 1x1 on a plane-contiguous input: no unrolling */
    int wide;           /* stride-1 undilated: whole-plane column rows (see wide_image) */
    int padcopy;        /* wide, and the planes need padding or are not row-contiguous */
    int64_t Hp, Wp, L;  /* wide: padded plane size, column row length */
    int failed;
} conv_job;

#define IM2COL(NAME, T)                                                                           \
    static void NAME(const conv_job *j, int64_t n, int64_t g, T *col, int64_t r0, int64_t r1) {    \
        const int64_t P = j->P, OW = j->OW, OH = j->OH, kh = j->kh, kw = j->kw, H = j->H;          \
        const int64_t sh = j->sh, sw = j->sw, ph = j->ph, dh = j->dh, xs2 = j->xs[2], xs3 = j->xs[3]; \
        const T *x0 = (const T *)j->x + n * j->xs[0] + g * j->Cg * j->xs[1];                       \
        const int64_t xs1 = j->xs[1], dw = j->dw, pw = j->pw, W = j->W;                            \
        for (int64_t r = r0; r < r1; r++) {                                                        \
            int64_t c = r / (kh * kw), i = r / kw % kh, jj = r % kw;                               \
            const T *xc = x0 + c * xs1;                                                            \
            T *row = col + r * P;                                                                  \
            int64_t woff = jj * dw - pw; /* iw = ow*sw + woff */                                   \
            int64_t lo = jn_rt_ceildiv(-woff, sw), hi = jn_rt_ceildiv(W - woff, sw);               \
            if (lo < 0) lo = 0;                                                                    \
            if (hi > OW) hi = OW;                                                                  \
            if (hi < lo) hi = lo;                                                                  \
            for (int64_t oh = 0; oh < OH; oh++) {                                                  \
                T *d = row + oh * OW;                                                              \
                int64_t ih = oh * sh - ph + i * dh;                                                \
                if (ih < 0 || ih >= H || lo >= hi) {                                               \
                    memset(d, 0, sizeof(T) * (size_t)OW);                                          \
                    continue;                                                                      \
                }                                                                                  \
                for (int64_t ow = 0; ow < lo; ow++) d[ow] = 0;                                     \
                for (int64_t ow = hi; ow < OW; ow++) d[ow] = 0;                                    \
                const T *src = xc + ih * xs2;                                                      \
                if (sw == 1 && xs3 == 1)                                                           \
                    memcpy(d + lo, src + lo + woff, sizeof(T) * (size_t)(hi - lo));                \
                else {                                                                             \
                    const int64_t st = sw * xs3;                                                   \
                    const T *s0 = src + woff * xs3;                                                \
                    for (int64_t ow = lo; ow < hi; ow++) d[ow] = s0[ow * st];                      \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }
IM2COL(im2col_f32, float)
IM2COL(im2col_f64, double)

static void im2col(const conv_job *j, int64_t n, int64_t g, void *col, int64_t r0, int64_t r1) {
    if (j->cd == JN_F32) im2col_f32(j, n, g, col, r0, r1);
    else im2col_f64(j, n, g, col, r0, r1);
}

typedef struct {
    const conv_job *j;
    int64_t n, g;
    void *col;
} im2col_task_ctx;

static void im2col_task(int64_t b, int64_t e, void *ctx) {
    const im2col_task_ctx *c = ctx;
    im2col(c->j, c->n, c->g, c->col, b, e);
}

/* ---- the wide layout (stride 1, no dilation) ----
 * Column row (c, ki, kj) at output position (oh, ow) reads padded-plane
 * element (oh+ki)*Wp + ow+kj.  Indexing positions by oh*Wp + ow instead of
 * oh*OW + ow (a "wide" output row of Wp entries, the last kw-1 of them
 * garbage) makes the whole row one contiguous run of the plane: one copy of
 * L = (OH-1)*Wp + OW elements instead of OH short copies plus edge zeroing,
 * which dominate im2col when rows are short (LeNet: OW = 10).  The GEMM then
 * has L columns instead of OH*OW, and the garbage columns of its result are
 * dropped when the rows are compacted into the output. */
static size_t wide_elems(const conv_job *j) {
    return (size_t)(j->Kc * j->L + j->Og * j->OH * j->Wp + (j->padcopy ? j->Cg * j->Hp * j->Wp : 0));
}

/* Zero-padded copies of the Cg planes of image n, group g ([Cg, Hp*Wp]). */
#define WIDE_PAD(NAME, T)                                                                         \
    static void NAME(const conv_job *j, int64_t n, int64_t g, T *dst) {                           \
        const int64_t Hp = j->Hp, Wp = j->Wp, H = j->H, W = j->W, xs2 = j->xs[2], xs3 = j->xs[3];  \
        memset(dst, 0, sizeof(T) * (size_t)(j->Cg * Hp * Wp));                                     \
        for (int64_t c = 0; c < j->Cg; c++) {                                                     \
            const T *xc = (const T *)j->x + n * j->xs[0] + (g * j->Cg + c) * j->xs[1];            \
            T *pc = dst + c * Hp * Wp + j->ph * Wp + j->pw;                                       \
            for (int64_t h = 0; h < H; h++)                                                       \
                if (xs3 == 1) memcpy(pc + h * Wp, xc + h * xs2, sizeof(T) * (size_t)W);           \
                else                                                                              \
                    for (int64_t w = 0; w < W; w++) pc[h * Wp + w] = xc[h * xs2 + w * xs3];       \
        }                                                                                         \
    }
WIDE_PAD(wide_pad_f32, float)
WIDE_PAD(wide_pad_f64, double)

/* Output planes of group g = the wide result rows without their garbage
 * columns, plus the bias. */
#define WIDE_COMPACT(NAME, T)                                                                     \
    static void NAME(const conv_job *j, int64_t g, const T *tmp, T *out) {                        \
        const int64_t OH = j->OH, OW = j->OW, Wp = j->Wp, P = j->P;                               \
        for (int64_t o = 0; o < j->Og; o++) {                                                     \
            const T bv = j->bias ? ((const T *)j->bias)[g * j->Og + o] : (T)0;                    \
            for (int64_t oh = 0; oh < OH; oh++) {                                                 \
                const T *s = tmp + (o * OH + oh) * Wp;                                            \
                T *d = out + o * P + oh * OW;                                                     \
                for (int64_t ow = 0; ow < OW; ow++) d[ow] = s[ow] + bv;                           \
            }                                                                                     \
        }                                                                                         \
    }
WIDE_COMPACT(wide_compact_f32, float)
WIDE_COMPACT(wide_compact_f64, double)

typedef struct {
    const conv_job *j;
    const char *planes;
    int64_t pstride;
    char *col;
} wide_rows_ctx;

static void wide_rows(int64_t b, int64_t e, void *ctx) {
    const wide_rows_ctx *c = ctx;
    const conv_job *j = c->j;
    size_t es = jn_dtype_size[j->cd];
    const int64_t kk = j->kh * j->kw;
    for (int64_t r = b; r < e; r++) {
        int64_t ch = r / kk, ki = r / j->kw % j->kh, kj = r % j->kw;
        memcpy(c->col + (size_t)(r * j->L) * es, c->planes + (size_t)(ch * c->pstride + ki * j->Wp + kj) * es,
               (size_t)j->L * es);
    }
}

static void wide_image(const conv_job *j, int64_t n, char *buf, int par_unroll) {
    const int64_t Kc = j->Kc, Og = j->Og, L = j->L, LW = j->OH * j->Wp;
    size_t es = jn_dtype_size[j->cd];
    char *col = buf, *tmp = buf + (size_t)(Kc * L) * es, *pbuf = tmp + (size_t)(Og * LW) * es;
    for (int64_t g = 0; g < j->G; g++) {
        wide_rows_ctx c = {j, pbuf, j->Hp * j->Wp, col};
        if (j->padcopy) {
            if (j->cd == JN_F32) wide_pad_f32(j, n, g, (float *)pbuf);
            else wide_pad_f64(j, n, g, (double *)pbuf);
        } else {
            c.planes = j->x + (size_t)((n * j->xs[0] + g * j->Cg * j->xs[1]) * (int64_t)es);
            c.pstride = j->xs[1];
        }
        if (par_unroll && Kc * L >= (1 << 16)) jn_parallel_for(Kc, (1 << 15) / (L + 1) + 1, wide_rows, &c);
        else wide_rows(0, Kc, &c);
        const char *A = j->w + (size_t)(g * Og * Kc * (int64_t)es);
        char *out = j->out + (size_t)((n * j->O + g * Og) * j->P * (int64_t)es);
        if (j->cd == JN_F32) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)Og, (int)L, (int)Kc, 1.0f, (const float *)A,
                        (int)Kc, (const float *)col, (int)L, 0.0f, (float *)tmp, (int)LW);
            wide_compact_f32(j, g, (const float *)tmp, (float *)out);
        } else {
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)Og, (int)L, (int)Kc, 1.0, (const double *)A,
                        (int)Kc, (const double *)col, (int)L, 0.0, (double *)tmp, (int)LW);
            wide_compact_f64(j, g, (const double *)tmp, (double *)out);
        }
    }
}

/* Column buffer elements one image needs. */
static size_t col_elems(const conv_job *j) {
    return j->wide ? wide_elems(j) : (size_t)(j->Kc * j->P);
}

/* One image: every group's product.  `par_unroll` spreads the unrolling. */
static void conv_image(const conv_job *j, int64_t n, void *col, int par_unroll) {
    const int64_t P = j->P, Kc = j->Kc, Og = j->Og;
    size_t es = jn_dtype_size[j->cd];
    if (j->wide) {
        wide_image(j, n, col, par_unroll);
        return;
    }
    for (int64_t g = 0; g < j->G; g++) {
        const char *B;
        int64_t ldb;
        if (j->direct) {
            B = j->x + (size_t)((n * j->xs[0] + g * j->Cg * j->xs[1]) * (int64_t)es);
            ldb = j->Cg > 1 ? j->xs[1] : (P > 1 ? P : 1);
        } else {
            if (par_unroll && Kc * P >= (1 << 16)) {
                im2col_task_ctx c = {j, n, g, col};
                jn_parallel_for(Kc, (1 << 15) / (P > 0 ? P : 1) + 1, im2col_task, &c);
            } else {
                im2col(j, n, g, col, 0, Kc);
            }
            B = col;
            ldb = P > 1 ? P : 1;
        }
        const char *A = j->w + (size_t)(g * Og * Kc * (int64_t)es);
        char *C = j->out + (size_t)((n * j->O + g * Og) * P * (int64_t)es);
        if (j->cd == JN_F32)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)Og, (int)P, (int)Kc, 1.0f,
                        (const float *)A, (int)Kc, (const float *)B, (int)ldb, (float)j->beta, (float *)C,
                        (int)P);
        else
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)Og, (int)P, (int)Kc, 1.0,
                        (const double *)A, (int)Kc, (const double *)B, (int)ldb, j->beta, (double *)C,
                        (int)P);
    }
}

static void conv_batch_task(int64_t b, int64_t e, void *ctx) {
    conv_job *j = ctx;
    void *col = NULL;
    if (!j->direct) {
        col = malloc(col_elems(j) * jn_dtype_size[j->cd] + 1);
        if (!col) {
            __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
            return;
        }
    }
    for (int64_t n = b; n < e; n++) conv_image(j, n, col, 0);
    free(col);
}

/* Validated conv2d geometry shared by infer and kernel. */
typedef struct {
    int64_t N, C, H, W, O, kh, kw, G, st[2], pad[2], dil[2], OH, OW;
    int batched;
} conv_geom;

static jn_status conv_check(int nin, jn_tensor *const *in, const jn_attrs *a, conv_geom *g) {
    const jn_tensor *x = in[0], *w = in[1];
    char s1[128], s2[128];
    jn_status s;
    if (nin > 3)
        return jn_error(JN_ERR_VALUE, "conv2d: expected input, weight and an optional bias, got %d tensors", nin);
    if (x->ndim != 3 && x->ndim != 4)
        return jn_error(JN_ERR_SHAPE, "conv2d: expected 3D (unbatched) or 4D (batched) input, but got input of size: %s",
                        jn_shape_str(x->ndim, x->shape, s1, sizeof s1));
    if (w->ndim != 4)
        return jn_error(JN_ERR_SHAPE,
                        "conv2d: expected a 4-D weight [out_channels, in_channels/groups, kH, kW], but got weight "
                        "of size %s", jn_shape_str(w->ndim, w->shape, s1, sizeof s1));
    if (!jn_dtype_is_float(x->dtype))
        return jn_error(JN_ERR_TYPE, "conv2d: not implemented for '%s' input; convert it to a floating dtype first",
                        dn(x->dtype));
    if (w->dtype != x->dtype)
        return jn_error(JN_ERR_TYPE, "conv2d: input type (%s) and weight type (%s) should be the same",
                        dn(x->dtype), dn(w->dtype));
    if (nin == 3 && in[2]->dtype != x->dtype)
        return jn_error(JN_ERR_TYPE, "conv2d: input type (%s) and bias type (%s) should be the same",
                        dn(x->dtype), dn(in[2]->dtype));
    if ((s = jn_rt_pair_attr("conv2d", "stride", &a->a[0].l, 1, g->st))) return s;
    if ((s = jn_rt_pair_attr("conv2d", "padding", &a->a[1].l, 0, g->pad))) return s;
    if ((s = jn_rt_pair_attr("conv2d", "dilation", &a->a[2].l, 1, g->dil))) return s;
    g->G = a->a[3].i;
    if (g->st[0] <= 0 || g->st[1] <= 0)
        return jn_error(JN_ERR_VALUE, "conv2d: non-positive stride is not supported (got [%lld, %lld])",
                        (long long)g->st[0], (long long)g->st[1]);
    if (g->pad[0] < 0 || g->pad[1] < 0)
        return jn_error(JN_ERR_VALUE, "conv2d: negative padding is not supported (got [%lld, %lld])",
                        (long long)g->pad[0], (long long)g->pad[1]);
    if (g->dil[0] <= 0 || g->dil[1] <= 0)
        return jn_error(JN_ERR_VALUE, "conv2d: dilation should be greater than zero (got [%lld, %lld])",
                        (long long)g->dil[0], (long long)g->dil[1]);
    if (g->G <= 0) return jn_error(JN_ERR_VALUE, "conv2d: non-positive groups is not supported (got %lld)", (long long)g->G);
    g->batched = x->ndim == 4;
    int o = g->batched;
    g->N = o ? x->shape[0] : 1;
    g->C = x->shape[o];
    g->H = x->shape[o + 1];
    g->W = x->shape[o + 2];
    g->O = w->shape[0];
    g->kh = w->shape[2];
    g->kw = w->shape[3];
    if (g->O % g->G)
        return jn_error(JN_ERR_SHAPE,
                        "conv2d: given groups=%lld, expected weight to be divisible by %lld at dimension 0, but "
                        "got weight of size %s instead",
                        (long long)g->G, (long long)g->G, jn_shape_str(4, w->shape, s1, sizeof s1));
    if (w->shape[1] * g->G != g->C)
        return jn_error(JN_ERR_SHAPE,
                        "conv2d: given groups=%lld, weight of size %s, expected input%s to have %lld channels, "
                        "but got %lld channels instead",
                        (long long)g->G, jn_shape_str(4, w->shape, s1, sizeof s1),
                        jn_shape_str(x->ndim, x->shape, s2, sizeof s2), (long long)(w->shape[1] * g->G),
                        (long long)g->C);
    if (g->kh <= 0 || g->kw <= 0)
        return jn_error(JN_ERR_SHAPE, "conv2d: weight of size %s has an empty kernel",
                        jn_shape_str(4, w->shape, s1, sizeof s1));
    if (nin == 3) {
        const jn_tensor *b = in[2];
        if (b->ndim != 1 || b->shape[0] != g->O)
            return jn_error(JN_ERR_SHAPE,
                            "conv2d: given weight of size %s, expected bias to be 1-dimensional with %lld "
                            "elements, but got bias of size %s instead",
                            jn_shape_str(4, w->shape, s1, sizeof s1), (long long)g->O,
                            jn_shape_str(b->ndim, b->shape, s2, sizeof s2));
    }
    int64_t ph = g->H + 2 * g->pad[0], pw = g->W + 2 * g->pad[1];
    int64_t ekh = g->dil[0] * (g->kh - 1) + 1, ekw = g->dil[1] * (g->kw - 1) + 1;
    g->OH = ph >= ekh ? (ph - ekh) / g->st[0] + 1 : 0;
    g->OW = pw >= ekw ? (pw - ekw) / g->st[1] + 1 : 0;
    if (ph < ekh || pw < ekw)
        return jn_error(JN_ERR_SHAPE,
                        "conv2d: calculated padded input size per channel: (%lld x %lld). Kernel size: (%lld x "
                        "%lld). Kernel size can't be greater than actual input size (the output would be %lld x %lld)",
                        (long long)ph, (long long)pw, (long long)ekh, (long long)ekw,
                        (long long)jn_rt_floordiv(ph - ekh, g->st[0]) + 1, (long long)jn_rt_floordiv(pw - ekw, g->st[1]) + 1);
    return JN_OK;
}

jn_status jn_infer_conv2d(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    conv_geom g;
    memset(&g, 0, sizeof g);
    jn_status s = conv_check(nin, in, a, &g);
    if (s) return s;
    out->dtype = in[0]->dtype;
    out->ndim = in[0]->ndim;
    int64_t sh[4] = {g.N, g.O, g.OH, g.OW};
    memcpy(out->shape, g.batched ? sh : sh + 1, sizeof(int64_t) * (size_t)out->ndim);
    return JN_OK;
}

jn_status jn_cpu_conv2d(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    conv_geom g;
    memset(&g, 0, sizeof g);
    jn_status s = conv_check(nin, in, a, &g);
    if (s) return s;
    conv_job j;
    memset(&j, 0, sizeof j);
    j.N = g.N, j.C = g.C, j.H = g.H, j.W = g.W, j.O = g.O, j.G = g.G;
    j.Cg = g.C / g.G, j.Og = g.O / g.G, j.kh = g.kh, j.kw = g.kw;
    j.sh = g.st[0], j.sw = g.st[1], j.ph = g.pad[0], j.pw = g.pad[1], j.dh = g.dil[0], j.dw = g.dil[1];
    j.OH = g.OH, j.OW = g.OW, j.P = g.OH * g.OW, j.Kc = j.Cg * g.kh * g.kw;
    if (jn_numel(out[0]) == 0) return JN_OK;
    if (j.Og > INT_MAX || j.P > INT_MAX || j.Kc > INT_MAX || (j.Cg > 1 && in[0]->strides[g.batched] > INT_MAX))
        return jn_error(JN_ERR_UNSUPPORTED, "conv2d: problem too large for BLAS (output plane %lld, kernel rows %lld)",
                        (long long)j.P, (long long)j.Kc);
    jn_dtype dt = in[0]->dtype;
    j.cd = dt == JN_F64 ? JN_F64 : JN_F32;
    jn_tensor *x = NULL, *w = NULL, *b = NULL, *o = out[0];
    x = is_half(dt) ? jn_to_dtype(in[0], JN_F32) : in[0];
    if (x == in[0]) jn_tensor_incref(x);
    w = jn_to_dtype(in[1], j.cd);
    if (nin == 3) b = jn_to_dtype(in[2], j.cd);
    if (is_half(dt)) o = jn_tensor_new(JN_F32, out[0]->ndim, out[0]->shape);
    else jn_tensor_incref(o);
    if (!x || !w || (nin == 3 && !b) || !o) {
        s = JN_ERR_NOMEM;
        goto done;
    }
    j.x = jn_data(x);
    j.xs[0] = g.batched ? x->strides[0] : 0; /* unbatched: one image */
    for (int d = 1; d < 4; d++) j.xs[d] = x->strides[d - 1 + g.batched];
    j.w = jn_data(w);
    j.out = jn_data(o);
    j.direct = j.kh == 1 && j.kw == 1 && j.sh == 1 && j.sw == 1 && j.ph == 0 && j.pw == 0 &&
               (j.W == 1 || j.xs[3] == 1) && (j.H == 1 || j.xs[2] == j.W) && (j.Cg == 1 || j.xs[1] >= j.P);
    /* wide rows pay kw-1 garbage columns per output row: worth it while that is under half a row,
     * and rows are short enough for per-row copies to dominate */
    j.Hp = j.H + 2 * j.ph;
    j.Wp = j.W + 2 * j.pw;
    j.wide = j.Kc > 0 && !j.direct && j.sh == 1 && j.sw == 1 && j.dh == 1 && j.dw == 1 &&
             j.OW < JN_RT_WIDE_MAX_OW && 2 * (j.kw - 1) <= j.OW && j.Hp * j.Wp <= INT_MAX;
    j.padcopy = j.ph || j.pw || (j.W > 1 && j.xs[3] != 1) || (j.H > 1 && j.xs[2] != j.W);
    j.L = (j.OH - 1) * j.Wp + j.OW;
    /* the output starts as the bias (beta = 1) or zeros when there is nothing to multiply; the
     * wide path adds the bias as it compacts its rows instead */
    if (j.wide) j.bias = b ? jn_data(b) : NULL;
    else if (b || j.Kc == 0) {
        int64_t planes_n = j.N * j.O;
        for (int64_t p = 0; p < planes_n; p++) {
            int64_t oc = p % j.O;
            if (j.cd == JN_F32) {
                float v = b ? ((const float *)jn_data(b))[oc] : 0.0f, *d = (float *)j.out + p * j.P;
                for (int64_t q = 0; q < j.P; q++) d[q] = v;
            } else {
                double v = b ? ((const double *)jn_data(b))[oc] : 0.0, *d = (double *)j.out + p * j.P;
                for (int64_t q = 0; q < j.P; q++) d[q] = v;
            }
        }
        j.beta = 1.0;
    }
    if (j.Kc > 0) {
        double mnk = (double)j.Og * (double)j.P * (double)j.Kc;
        if (j.N > 1 && mnk <= BLAS_SINGLE_THREAD_MNK) {
            int64_t grain = (int64_t)(65536.0 / (mnk * (double)j.G + 1.0)) + 1;
            jn_parallel_for(j.N, grain, conv_batch_task, &j);
            if (j.failed) s = jn_error(JN_ERR_NOMEM, "conv2d: out of memory for the column buffer");
        } else {
            void *col = NULL;
            if (!j.direct && !(col = malloc(col_elems(&j) * jn_dtype_size[j.cd] + 1))) {
                s = jn_error(JN_ERR_NOMEM, "conv2d: out of memory for a %lld x %lld column buffer",
                             (long long)j.Kc, (long long)j.P);
                goto done;
            }
            for (int64_t n = 0; n < j.N; n++) conv_image(&j, n, col, 1);
            free(col);
        }
    }
    if (!s && o != out[0]) s = jn_copy_into(out[0], o);
done:
    jn_tensor_decref(x);
    jn_tensor_decref(w);
    jn_tensor_decref(b);
    jn_tensor_decref(o);
    return s;
}

/* ============================================================ max_pool2d */
typedef struct {
    planes p;
    int64_t kh, kw, sh, sw, ph, pw, dh, dw, OH, OW;
    const char *x;
    char *val;
    int64_t *idx;
} pool_job;

static jn_status pool_geom(const char *op, const jn_tensor *x, const jn_attrs *a, int has_dil, pool_job *j,
                           int *ceil_mode) {
    jn_status s;
    int64_t k[2] = {0, 0}, st[2] = {0, 0}, pad[2] = {0, 0}, dil[2] = {1, 1};
    char s1[128];
    if ((s = check_pool_input(op, x))) return s;
    if ((s = jn_rt_pair_attr(op, "kernel_size", &a->a[0].l, -1, k))) return s;
    if (a->a[1].l.n == 0) st[0] = k[0], st[1] = k[1];
    else if ((s = jn_rt_pair_attr(op, "stride", &a->a[1].l, -1, st))) return s;
    if ((s = jn_rt_pair_attr(op, "padding", &a->a[2].l, 0, pad))) return s;
    if (has_dil && (s = jn_rt_pair_attr(op, "dilation", &a->a[3].l, 1, dil))) return s;
    *ceil_mode = (int)(has_dil ? a->a[4].i : a->a[3].i) != 0;
    if (k[0] <= 0 || k[1] <= 0)
        return jn_error(JN_ERR_VALUE, "%s: kernel size should be greater than zero, but got kH: %lld kW: %lld", op,
                        (long long)k[0], (long long)k[1]);
    if (st[0] <= 0 || st[1] <= 0)
        return jn_error(JN_ERR_VALUE, "%s: stride should be greater than zero, but got dH: %lld dW: %lld", op,
                        (long long)st[0], (long long)st[1]);
    if (dil[0] <= 0 || dil[1] <= 0)
        return jn_error(JN_ERR_VALUE, "%s: dilation should be greater than zero, but got dilationH: %lld dilationW: %lld",
                        op, (long long)dil[0], (long long)dil[1]);
    if (pad[0] < 0 || pad[1] < 0)
        return jn_error(JN_ERR_VALUE, "%s: pad must be non-negative, but got padH: %lld padW: %lld", op,
                        (long long)pad[0], (long long)pad[1]);
    if (pad[0] > k[0] / 2 || pad[1] > k[1] / 2)
        return jn_error(JN_ERR_VALUE,
                        "%s: pad should be smaller than or equal to half of kernel size, but got padW = %lld, "
                        "padH = %lld, kW = %lld, kH = %lld",
                        op, (long long)pad[1], (long long)pad[0], (long long)k[1], (long long)k[0]);
    j->p = planes_of(x);
    j->kh = k[0], j->kw = k[1], j->sh = st[0], j->sw = st[1];
    j->ph = pad[0], j->pw = pad[1], j->dh = dil[0], j->dw = dil[1];
    j->OH = jn_rt_pool_out_len(j->p.H, k[0], pad[0], st[0], dil[0], *ceil_mode);
    j->OW = jn_rt_pool_out_len(j->p.W, k[1], pad[1], st[1], dil[1], *ceil_mode);
    if (j->OH < 1 || j->OW < 1)
        return jn_error(JN_ERR_SHAPE,
                        "%s: given input size: (%lldx%lldx%lld). Calculated output size: (%lldx%lldx%lld). Output "
                        "size is too small (input %s)",
                        op, (long long)j->p.C, (long long)j->p.H, (long long)j->p.W, (long long)j->p.C,
                        (long long)j->OH, (long long)j->OW, jn_shape_str(x->ndim, x->shape, s1, sizeof s1));
    return JN_OK;
}

static void pool_out_meta(const jn_tensor *x, const pool_job *j, jn_meta *m) {
    m->dtype = x->dtype;
    m->ndim = x->ndim;
    memcpy(m->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    m->shape[x->ndim - 2] = j->OH;
    m->shape[x->ndim - 1] = j->OW;
}

jn_status jn_infer_max_pool2d(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    pool_job j;
    int cm;
    jn_status s = pool_geom("max_pool2d", in[0], a, 1, &j, &cm);
    if (s) return s;
    if (in[0]->dtype == JN_BOOL)
        return jn_error(JN_ERR_TYPE, "max_pool2d: not implemented for 'bool' input; convert it first (e.g. .int())");
    pool_out_meta(in[0], &j, &out[0]);
    out[1] = out[0];
    out[1].dtype = JN_I64;
    return JN_OK;
}

/* PyTorch's CPU max pool: windows start at the first in-range position,
 * nan wins, ties keep the first index. */
#define MAXPOOL(NAME, T, LOWEST, ISNAN)                                                          \
    static void NAME(int64_t b, int64_t e, void *ctx) {                                           \
        const pool_job *j = ctx;                                                                  \
        /* locals: the int64 index stores could alias the job's fields */                         \
        const int64_t C = j->p.C, H = j->p.H, W = j->p.W, sn = j->p.sn, sc = j->p.sc;             \
        const int64_t xsh = j->p.sh, xsw = j->p.sw, OH = j->OH, OW = j->OW;                       \
        const int64_t kh = j->kh, kw = j->kw, sh = j->sh, sw = j->sw, ph = j->ph, pw = j->pw;     \
        const int64_t dh = j->dh, dw = j->dw;                                                     \
        for (int64_t pl = b; pl < e; pl++) {                                                      \
            const T *x = (const T *)j->x + (pl / C) * sn + (pl % C) * sc;                         \
            T *v = (T *)j->val + pl * OH * OW;                                                    \
            int64_t *ix = j->idx + pl * OH * OW;                                                  \
            for (int64_t oh = 0; oh < OH; oh++) {                                                 \
                int64_t h0 = oh * sh - ph;                                                        \
                int64_t h1 = h0 + (kh - 1) * dh + 1;                                              \
                if (h1 > H) h1 = H;                                                               \
                while (h0 < 0) h0 += dh;                                                          \
                for (int64_t ow = 0; ow < OW; ow++) {                                             \
                    int64_t w0 = ow * sw - pw;                                                    \
                    int64_t w1 = w0 + (kw - 1) * dw + 1;                                          \
                    if (w1 > W) w1 = W;                                                           \
                    while (w0 < 0) w0 += dw;                                                      \
                    T best = LOWEST;                                                              \
                    int64_t bi = h0 * W + w0;                                                     \
                    for (int64_t ih = h0; ih < h1; ih += dh)                                      \
                        for (int64_t iw = w0; iw < w1; iw += dw) {                                \
                            T val = x[ih * xsh + iw * xsw];                                       \
                            int take = (val > best) | ISNAN(val); /* branch-free: cmov */         \
                            best = take ? val : best;                                             \
                            bi = take ? ih * W + iw : bi;                                         \
                        }                                                                         \
                    v[oh * OW + ow] = best;                                                       \
                    ix[oh * OW + ow] = bi;                                                        \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }
#define FNAN(v) ((v) != (v))
#define NONAN(v) 0
MAXPOOL(maxpool_f32_any, float, -INFINITY, FNAN)
MAXPOOL(maxpool_f64_any, double, -INFINITY, FNAN)

/* The common 2x2, stride-2 pool with no padding or dilation over rows of
 * unit stride: the same scan order and tie/nan rule as MAXPOOL (the window's
 * first element starts as the best, since anything beats or ties LOWEST),
 * but branch-free over a whole output row so that it vectorizes; the
 * generic loop's data-dependent branches mispredict on every other element. */
#define MAXPOOL22(NAME, T)                                                                        \
    static SIMD_POOL void NAME(const pool_job *j, int64_t b, int64_t e) {                         \
        const int64_t C = j->p.C, W = j->p.W, sn = j->p.sn, sc = j->p.sc, xsh = j->p.sh;          \
        const int64_t OH = j->OH, OW = j->OW;                                                     \
        for (int64_t pl = b; pl < e; pl++) {                                                      \
            const T *x = (const T *)j->x + (pl / C) * sn + (pl % C) * sc;                         \
            T *v = (T *)j->val + pl * OH * OW;                                                    \
            int64_t *ix = j->idx + pl * OH * OW;                                                  \
            for (int64_t oh = 0; oh < OH; oh++) {                                                 \
                const T *r0 = x + 2 * oh * xsh, *r1 = r0 + xsh;                                   \
                T *vr = v + oh * OW;                                                              \
                int64_t *ir = ix + oh * OW, base = 2 * oh * W;                                    \
                for (int64_t ow = 0; ow < OW; ow++) {                                             \
                    T a = r0[2 * ow], bb = r0[2 * ow + 1], c = r1[2 * ow], d = r1[2 * ow + 1];    \
                    T best = a;                                                                   \
                    int64_t k = 0;                                                                \
                    int t = (bb > best) | (bb != bb);                                             \
                    best = t ? bb : best;                                                         \
                    k = t ? 1 : k;                                                                \
                    t = (c > best) | (c != c);                                                    \
                    best = t ? c : best;                                                          \
                    k = t ? W : k;                                                                \
                    t = (d > best) | (d != d);                                                    \
                    best = t ? d : best;                                                          \
                    k = t ? W + 1 : k;                                                            \
                    vr[ow] = best;                                                                \
                    ir[ow] = base + 2 * ow + k;                                                   \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }
#if defined(__x86_64__) && defined(__ELF__) /* ifunc dispatch, as k_elementwise.c */
#define SIMD_POOL __attribute__((target_clones("avx2", "default")))
#else
#define SIMD_POOL
#endif
MAXPOOL22(maxpool22_f32, float)
MAXPOOL22(maxpool22_f64, double)

static int is_pool22(const pool_job *j) {
    return j->kh == 2 && j->kw == 2 && j->sh == 2 && j->sw == 2 && j->ph == 0 && j->pw == 0 && j->dh == 1 &&
           j->dw == 1 && (j->p.sw == 1 || j->OW == 0) && 2 * j->OH <= j->p.H && 2 * j->OW <= j->p.W;
}
#if defined(__x86_64__) && defined(__GNUC__)
/* The same 2x2 pool for float32 with AVX2 by hand: 8 (or 4) windows at a
 * time, the even/odd columns of each row pair split by shuffles, and the
 * row's last block overlapping the previous one (the same values written
 * twice) instead of a scalar tail; LeNet's pooled rows are 14 and 5 wide,
 * which leave the compiler's vector loop mostly in its scalar epilogue. */
/* Even (0x88) or odd (0xDD) elements of l:h in order: an in-lane shuffle,
 * then the 64-bit blocks back in place. */
#define SPLIT8(l, h, sel) \
    _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(l, h, sel)), 0xD8))
__attribute__((target("avx2"))) static void maxpool22_f32_avx2(const pool_job *j, int64_t b, int64_t e) {
    const int64_t C = j->p.C, W = j->p.W, sn = j->p.sn, sc = j->p.sc, xsh = j->p.sh, OH = j->OH, OW = j->OW;
    const __m256i k1 = _mm256_set1_epi32(1), kw = _mm256_set1_epi32((int)W), kw1 = _mm256_set1_epi32((int)W + 1);
    const __m256i q2 = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    const __m128i k1s = _mm_set1_epi32(1), kws = _mm_set1_epi32((int)W), kw1s = _mm_set1_epi32((int)W + 1);
    const __m128i q2s = _mm_setr_epi32(0, 2, 4, 6);
    for (int64_t pl = b; pl < e; pl++) {
        const float *x = (const float *)j->x + (pl / C) * sn + (pl % C) * sc;
        float *v = (float *)j->val + pl * OH * OW;
        int64_t *ix = j->idx + pl * OH * OW;
        for (int64_t oh = 0; oh < OH; oh++) {
            const float *r0 = x + 2 * oh * xsh, *r1 = r0 + xsh;
            float *vr = v + oh * OW;
            int64_t *ir = ix + oh * OW, base = 2 * oh * W;
            if (OW >= 8) {
                for (int64_t ow = 0; ow < OW; ow += 8) {
                    if (ow + 8 > OW) ow = OW - 8; /* overlap the last block */
                    __m256 l0 = _mm256_loadu_ps(r0 + 2 * ow), h0 = _mm256_loadu_ps(r0 + 2 * ow + 8);
                    __m256 l1 = _mm256_loadu_ps(r1 + 2 * ow), h1 = _mm256_loadu_ps(r1 + 2 * ow + 8);
                    __m256 a = SPLIT8(l0, h0, 0x88), bb = SPLIT8(l0, h0, 0xDD);
                    __m256 c = SPLIT8(l1, h1, 0x88), d = SPLIT8(l1, h1, 0xDD);
                    __m256 best = a;
                    __m256i k = _mm256_setzero_si256();
                    __m256 t = _mm256_or_ps(_mm256_cmp_ps(bb, best, _CMP_GT_OQ), _mm256_cmp_ps(bb, bb, _CMP_UNORD_Q));
                    best = _mm256_blendv_ps(best, bb, t);
                    k = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(k), _mm256_castsi256_ps(k1), t));
                    t = _mm256_or_ps(_mm256_cmp_ps(c, best, _CMP_GT_OQ), _mm256_cmp_ps(c, c, _CMP_UNORD_Q));
                    best = _mm256_blendv_ps(best, c, t);
                    k = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(k), _mm256_castsi256_ps(kw), t));
                    t = _mm256_or_ps(_mm256_cmp_ps(d, best, _CMP_GT_OQ), _mm256_cmp_ps(d, d, _CMP_UNORD_Q));
                    best = _mm256_blendv_ps(best, d, t);
                    k = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(k), _mm256_castsi256_ps(kw1), t));
                    _mm256_storeu_ps(vr + ow, best);
                    k = _mm256_add_epi32(k, q2); /* 2q + k: under 2^31 (W is) */
                    __m256i bs = _mm256_set1_epi64x(base + 2 * ow);
                    _mm256_storeu_si256((__m256i *)(ir + ow),
                                        _mm256_add_epi64(bs, _mm256_cvtepi32_epi64(_mm256_castsi256_si128(k))));
                    _mm256_storeu_si256((__m256i *)(ir + ow + 4),
                                        _mm256_add_epi64(bs, _mm256_cvtepi32_epi64(_mm256_extracti128_si256(k, 1))));
                }
            } else if (OW >= 4) {
                for (int64_t ow = 0; ow < OW; ow += 4) {
                    if (ow + 4 > OW) ow = OW - 4;
                    __m128 l0 = _mm_loadu_ps(r0 + 2 * ow), h0 = _mm_loadu_ps(r0 + 2 * ow + 4);
                    __m128 l1 = _mm_loadu_ps(r1 + 2 * ow), h1 = _mm_loadu_ps(r1 + 2 * ow + 4);
                    __m128 a = _mm_shuffle_ps(l0, h0, 0x88), bb = _mm_shuffle_ps(l0, h0, 0xDD);
                    __m128 c = _mm_shuffle_ps(l1, h1, 0x88), d = _mm_shuffle_ps(l1, h1, 0xDD);
                    __m128 best = a;
                    __m128i k = _mm_setzero_si128();
                    __m128 t = _mm_or_ps(_mm_cmpgt_ps(bb, best), _mm_cmpunord_ps(bb, bb));
                    best = _mm_blendv_ps(best, bb, t);
                    k = _mm_castps_si128(_mm_blendv_ps(_mm_castsi128_ps(k), _mm_castsi128_ps(k1s), t));
                    t = _mm_or_ps(_mm_cmpgt_ps(c, best), _mm_cmpunord_ps(c, c));
                    best = _mm_blendv_ps(best, c, t);
                    k = _mm_castps_si128(_mm_blendv_ps(_mm_castsi128_ps(k), _mm_castsi128_ps(kws), t));
                    t = _mm_or_ps(_mm_cmpgt_ps(d, best), _mm_cmpunord_ps(d, d));
                    best = _mm_blendv_ps(best, d, t);
                    k = _mm_castps_si128(_mm_blendv_ps(_mm_castsi128_ps(k), _mm_castsi128_ps(kw1s), t));
                    _mm_storeu_ps(vr + ow, best);
                    __m256i k64 = _mm256_cvtepi32_epi64(_mm_add_epi32(k, q2s));
                    _mm256_storeu_si256((__m256i *)(ir + ow), _mm256_add_epi64(_mm256_set1_epi64x(base + 2 * ow), k64));
                }
            } else {
                for (int64_t ow = 0; ow < OW; ow++) {
                    float a = r0[2 * ow], bb = r0[2 * ow + 1], c = r1[2 * ow], d = r1[2 * ow + 1], best = a;
                    int64_t k = 0;
                    if ((bb > best) | (bb != bb)) best = bb, k = 1;
                    if ((c > best) | (c != c)) best = c, k = W;
                    if ((d > best) | (d != d)) best = d, k = W + 1;
                    vr[ow] = best;
                    ir[ow] = base + 2 * ow + k;
                }
            }
        }
    }
}
#define HAVE_POOL22_AVX2 1
#endif

static void maxpool_f32(int64_t b, int64_t e, void *ctx) {
    if (is_pool22(ctx)) {
#ifdef HAVE_POOL22_AVX2
        if (((const pool_job *)ctx)->p.W < ((int64_t)1 << 30) && __builtin_cpu_supports("avx2")) {
            maxpool22_f32_avx2(ctx, b, e);
            return;
        }
#endif
        maxpool22_f32(ctx, b, e);
    } else {
        maxpool_f32_any(b, e, ctx);
    }
}
static void maxpool_f64(int64_t b, int64_t e, void *ctx) {
    if (is_pool22(ctx)) maxpool22_f64(ctx, b, e);
    else maxpool_f64_any(b, e, ctx);
}
MAXPOOL(maxpool_i64, int64_t, INT64_MIN, NONAN)
MAXPOOL(maxpool_i32, int32_t, INT32_MIN, NONAN)
MAXPOOL(maxpool_u8, uint8_t, 0, NONAN)

/* Planes per task so that each task has some 32k window reads. */
static int64_t plane_grain(const pool_job *j, int64_t window) {
    double work = (double)j->OH * (double)j->OW * (double)window + 1.0;
    return (int64_t)(32768.0 / work) + 1;
}

jn_status jn_cpu_max_pool2d(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    pool_job j;
    int cm;
    jn_status s = pool_geom("max_pool2d", in[0], a, 1, &j, &cm);
    if (s) return s;
    jn_dtype dt = in[0]->dtype;
    jn_tensor *x = in[0], *v = out[0];
    if (is_half(dt)) {
        x = jn_to_dtype(in[0], JN_F32);
        v = jn_tensor_new(JN_F32, out[0]->ndim, out[0]->shape);
        if (!x || !v) {
            s = JN_ERR_NOMEM;
            goto done;
        }
    }
    if (x != in[0]) j.p = planes_of(x);
    j.x = jn_data(x);
    j.val = jn_data(v);
    j.idx = (int64_t *)jn_data(out[1]);
    jn_range_fn fn = NULL;
    switch (x->dtype) {
    case JN_F32: fn = maxpool_f32; break;
    case JN_F64: fn = maxpool_f64; break;
    case JN_I64: fn = maxpool_i64; break;
    case JN_I32: fn = maxpool_i32; break;
    case JN_U8: fn = maxpool_u8; break;
    default: s = jn_error(JN_ERR_TYPE, "max_pool2d: not implemented for '%s'", dn(dt)); goto done;
    }
    jn_parallel_for(j.p.N * j.p.C, plane_grain(&j, j.kh * j.kw), fn, &j);
    if (v != out[0]) s = jn_copy_into(out[0], v);
done:
    if (x != in[0]) jn_tensor_decref(x);
    if (v != out[0]) jn_tensor_decref(v);
    return s;
}

/* ============================================================ avg_pool2d */
typedef struct {
    pool_job j;
    int count_include_pad;
} avg_job;

jn_status jn_infer_avg_pool2d(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    pool_job j;
    int cm;
    jn_status s = pool_geom("avg_pool2d", in[0], a, 0, &j, &cm);
    if (s) return s;
    jn_dtype d = in[0]->dtype;
    if (!jn_dtype_is_float(d) && d != JN_I64)
        return jn_error(JN_ERR_TYPE,
                        "avg_pool2d: not implemented for '%s' input (floating dtypes and int64 are); convert it first",
                        dn(d));
    pool_out_meta(in[0], &j, out);
    return JN_OK;
}

/* PyTorch's CPU avg pool: the divisor counts the padded window clipped to
 * input+padding (count_include_pad) or only the in-range elements; integer
 * averages truncate toward zero. */
#define AVGPOOL(NAME, T, ACC, DIV)                                                                \
    static void NAME(int64_t b, int64_t e, void *ctx) {                                           \
        const avg_job *aj = ctx;                                                                  \
        const pool_job *j = &aj->j;                                                               \
        const planes *p = &j->p;                                                                  \
        for (int64_t pl = b; pl < e; pl++) {                                                      \
            const T *x = (const T *)j->x + (pl / p->C) * p->sn + (pl % p->C) * p->sc;             \
            T *v = (T *)j->val + pl * j->OH * j->OW;                                              \
            for (int64_t oh = 0; oh < j->OH; oh++) {                                              \
                int64_t h0, h1, hn, w0, w1, wn;                                                   \
                jn_rt_avg_window(oh, j->sh, j->ph, j->kh, p->H, &h0, &h1, &hn);                   \
                for (int64_t ow = 0; ow < j->OW; ow++) {                                          \
                    jn_rt_avg_window(ow, j->sw, j->pw, j->kw, p->W, &w0, &w1, &wn);               \
                    if (h0 >= h1 || w0 >= w1) {                                                   \
                        v[oh * j->OW + ow] = 0;                                                   \
                        continue;                                                                 \
                    }                                                                             \
                    ACC sum = 0;                                                                  \
                    for (int64_t ih = h0; ih < h1; ih++)                                          \
                        for (int64_t iw = w0; iw < w1; iw++) sum += (ACC)x[ih * p->sh + iw * p->sw]; \
                    int64_t div = aj->count_include_pad ? hn * wn : (h1 - h0) * (w1 - w0);        \
                    v[oh * j->OW + ow] = DIV(sum, div);                                           \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }
#define FDIV(s, d) ((s) / (double)(d))
#define IDIV(s, d) ((int64_t)(s) / (d))
AVGPOOL(avgpool_f32, float, double, FDIV)
AVGPOOL(avgpool_f64, double, double, FDIV)
AVGPOOL(avgpool_i64, int64_t, uint64_t, IDIV)

jn_status jn_cpu_avg_pool2d(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    avg_job aj;
    int cm;
    jn_status s = pool_geom("avg_pool2d", in[0], a, 0, &aj.j, &cm);
    if (s) return s;
    aj.count_include_pad = a->a[4].i != 0;
    jn_dtype dt = in[0]->dtype;
    jn_tensor *x = in[0], *v = out[0];
    if (is_half(dt)) {
        x = jn_to_dtype(in[0], JN_F32);
        v = jn_tensor_new(JN_F32, out[0]->ndim, out[0]->shape);
        if (!x || !v) {
            s = JN_ERR_NOMEM;
            goto done;
        }
        aj.j.p = planes_of(x);
    }
    aj.j.x = jn_data(x);
    aj.j.val = jn_data(v);
    jn_range_fn fn = x->dtype == JN_F32 ? avgpool_f32 : x->dtype == JN_F64 ? avgpool_f64 : avgpool_i64;
    jn_parallel_for(aj.j.p.N * aj.j.p.C, plane_grain(&aj.j, aj.j.kh * aj.j.kw), fn, &aj);
    if (v != out[0]) s = jn_copy_into(out[0], v);
done:
    if (x != in[0]) jn_tensor_decref(x);
    if (v != out[0]) jn_tensor_decref(v);
    return s;
}

/* =================================================== adaptive_avg_pool2d */
static jn_status adaptive_geom(const jn_tensor *x, const jn_attrs *a, int64_t os[2]) {
    jn_status s;
    if ((s = check_pool_input("adaptive_avg_pool2d", x))) return s;
    if ((s = jn_rt_pair_attr("adaptive_avg_pool2d", "output_size", &a->a[0].l, -1, os))) return s;
    if (os[0] < 0 || os[1] < 0)
        return jn_error(JN_ERR_VALUE,
                        "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but "
                        "received {%lld, %lld}", (long long)os[0], (long long)os[1]);
    if (!jn_dtype_is_float(x->dtype))
        return jn_error(JN_ERR_TYPE,
                        "adaptive_avg_pool2d: not implemented for '%s' input; convert it to a floating dtype first",
                        dn(x->dtype));
    return JN_OK;
}

jn_status jn_infer_adaptive_avg_pool2d(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    int64_t os[2] = {0, 0};
    jn_status s = adaptive_geom(in[0], a, os);
    if (s) return s;
    pool_job j;
    j.OH = os[0];
    j.OW = os[1];
    pool_out_meta(in[0], &j, out);
    return JN_OK;
}

/* Window of output i: [floor(i*In/Out), ceil((i+1)*In/Out)). */
#define ADAPTIVE(NAME, T)                                                                         \
    static void NAME(int64_t b, int64_t e, void *ctx) {                                           \
        const pool_job *j = ctx;                                                                  \
        const planes *p = &j->p;                                                                  \
        for (int64_t pl = b; pl < e; pl++) {                                                      \
            const T *x = (const T *)j->x + (pl / p->C) * p->sn + (pl % p->C) * p->sc;             \
            T *v = (T *)j->val + pl * j->OH * j->OW;                                              \
            for (int64_t oh = 0; oh < j->OH; oh++) {                                              \
                int64_t h0 = oh * p->H / j->OH, h1 = ((oh + 1) * p->H + j->OH - 1) / j->OH;       \
                for (int64_t ow = 0; ow < j->OW; ow++) {                                          \
                    int64_t w0 = ow * p->W / j->OW, w1 = ((ow + 1) * p->W + j->OW - 1) / j->OW;   \
                    double sum = 0;                                                               \
                    for (int64_t ih = h0; ih < h1; ih++)                                          \
                        for (int64_t iw = w0; iw < w1; iw++) sum += x[ih * p->sh + iw * p->sw];   \
                    v[oh * j->OW + ow] = (T)(sum / (double)((h1 - h0) * (w1 - w0)));              \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }
ADAPTIVE(adaptive_f32, float)
ADAPTIVE(adaptive_f64, double)

jn_status jn_cpu_adaptive_avg_pool2d(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    int64_t os[2] = {0, 0};
    jn_status s = adaptive_geom(in[0], a, os);
    if (s) return s;
    if (jn_numel(out[0]) == 0) return JN_OK;
    pool_job j;
    memset(&j, 0, sizeof j);
    j.OH = os[0];
    j.OW = os[1];
    jn_tensor *x = in[0], *v = out[0];
    if (is_half(in[0]->dtype)) {
        x = jn_to_dtype(in[0], JN_F32);
        v = jn_tensor_new(JN_F32, out[0]->ndim, out[0]->shape);
        if (!x || !v) {
            s = JN_ERR_NOMEM;
            goto done;
        }
    }
    j.p = planes_of(x);
    j.x = jn_data(x);
    j.val = jn_data(v);
    int64_t win = (j.p.H / (j.OH ? j.OH : 1) + 1) * (j.p.W / (j.OW ? j.OW : 1) + 1);
    jn_parallel_for(j.p.N * j.p.C, plane_grain(&j, win), x->dtype == JN_F64 ? adaptive_f64 : adaptive_f32, &j);
    if (v != out[0]) s = jn_copy_into(out[0], v);
done:
    if (x != in[0]) jn_tensor_decref(x);
    if (v != out[0]) jn_tensor_decref(v);
    return s;
}
