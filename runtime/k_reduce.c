/* k_reduce.c -- reductions (sum, mean, prod, amax/amin, max/min with
 * indices, argmax/argmin, var/std, logsumexp, all/any) and softmax.
 *
 * Every reduction runs through one engine.  An op is described by a
 * `reducer`: an accumulator type plus functions that fold a strided run of
 * inputs into ONE accumulator ("row"), fold a run of inputs into as MANY
 * accumulators ("col"), combine partial accumulators, and write results.
 * The engine splits the input's dims into kept dims (the output) and
 * reduced dims, drops size-1 dims, orders the reduced dims by stride
 * (except for index-returning reducers, whose indices follow logical order),
 * merges dims that are contiguous, and picks one of two loop shapes:
 *   row  each output element walks its reduced elements; used when the
 *        innermost reduced dim is contiguous (x.sum(-1));
 *   col  a kept dim is processed in blocks of outputs whose accumulators
 *        are all updated for every reduced index: used when that kept dim
 *        is contiguous and the reduced one is not (x.sum(0): sequential
 *        reads, vectorized updates), and for very short reductions
 *        (x.sum(-1) of an (N, 4) tensor) to avoid a call per output.
 * Work is split over output blocks on the thread pool.  When there are
 * fewer blocks than threads (full reductions, a few long rows) the reduced
 * range is split into chunks whose partial accumulators are combined in
 * chunk order, so "first index" semantics survive.
 *
 * Accumulation: float sums, products, means, var/std and logsumexp use
 * double accumulators, with NL independent lanes on contiguous runs (gcc
 * vectorizes them without reassociating; more accurate than PyTorch's
 * float32 cascade sum).  Integer sums and products wrap in uint64 like
 * PyTorch's int64 arithmetic, without signed-overflow UB.  max/min compare
 * in the input's own type and propagate NaN.  Multi-pass reducers (var:
 * mean, then squared deviations -- the stable two-pass algorithm;
 * logsumexp: max, then sum of exp) run their passes back to back with a
 * `mid` step between.
 *
 * softmax/log_softmax make the input contiguous (float16/bfloat16 are
 * computed in float32), then run a row kernel (dim innermost), a column
 * kernel over blocks of inner dims, or, for many tiny rows, the column
 * kernel across rows; all subtract the max first and sum in double.
 * float32 exp is a branch-free polynomial (jexpf) so these loops vectorize;
 * hot loops also get AVX2 clones chosen at load time.
 */
#include "jn_runtime.h"
#include "k_fastmath.h" /* sat_i64 */

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Lets gcc if-convert float compares (selects in max/min/exp loops) and so
 * vectorize them; nothing here relies on floating-point exception flags. */
#pragma GCC optimize("no-trapping-math")

/* Hot loops are also compiled for AVX2 and AVX-512 and picked at load time
 * (ifunc); without FMA contraction (ISO C mode) all clones round
 * identically, and the explicit lanes keep the summation order fixed. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define HOT __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define HOT
#endif
#define UNIT_MAX 256      /* outputs per work unit in row mode */
#define UNIT_MAX_COL 4096 /* outputs per work unit in col mode */

/* exp for float32, written branch-free so loops over it vectorize (the libm
 * call does not): Cody-Waite reduction by ln 2, Cephes' degree-6
 * polynomial, scaling by 2^k in two halves so results near the underflow
 * and overflow edges round correctly.  Max error ~1.4 ulp; exp(-inf) = 0,
 * exp(+inf) = inf, NaN stays NaN. */
static inline float jexpf(float x) {
    uint32_t xb, rb;
    memcpy(&xb, &x, 4);
    uint32_t nan = 0u - (uint32_t)((xb & 0x7fffffffu) > 0x7f800000u);
    uint32_t cb = xb & ~nan; /* NaN -> 0 so the int conversion below is defined */
    float xc;
    memcpy(&xc, &cb, 4);
    xc = xc < -110.0f ? -110.0f : xc;
    xc = xc > 89.0f ? 89.0f : xc;
    float fk = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to int */
    int32_t k = (int32_t)fk;
    float r = xc - fk * 0.693359375f;
    r = r - fk * -2.12194440e-4f;
    float q = 1.9875691500E-4f;
    q = q * r + 1.3981999507E-3f;
    q = q * r + 8.3334519073E-3f;
    q = q * r + 4.1665795894E-2f;
    q = q * r + 1.6666665459E-1f;
    q = q * r + 5.0000001201E-1f;
    q = q * r * r + r + 1.0f;
    int32_t k1 = k >> 1, k2 = k - k1;
    uint32_t b1 = (uint32_t)(k1 + 127) << 23, b2 = (uint32_t)(k2 + 127) << 23;
    float s1, s2;
    memcpy(&s1, &b1, 4);
    memcpy(&s2, &b2, 4);
    float res = q * s1 * s2;
    memcpy(&rb, &res, 4);
    rb = (rb & ~nan) | (xb & nan);
    memcpy(&res, &rb, 4);
    return res;
}

/* float16 / bfloat16 -> float32 inline and branch-free (the runtime's
 * converters are out-of-line calls, which keeps loops from vectorizing).
 * Same results as jn_f16_to_f32 / jn_bf16_to_f32, NaN payloads included. */
static inline float h2f(uint16_t h) {
    uint32_t em = h & 0x7fffu, bits = em << 13, fb;
    float f;
    memcpy(&f, &bits, 4);
    f *= 0x1p112f; /* rebias the exponent; also turns half subnormals into floats exactly */
    memcpy(&fb, &f, 4);
    uint32_t infnan = 0u - (uint32_t)(em >= 0x7c00u);
    fb = (fb & ~infnan) | ((0x7f800000u | bits) & infnan);
    fb |= (uint32_t)(h & 0x8000u) << 16;
    memcpy(&f, &fb, 4);
    return f;
}
static inline float bf2f(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* ------------------------------------------------------------ reducers */
typedef struct {
    jn_dtype out_dt; /* dtype of output 0 */
    int64_t nred;    /* reduced elements per output */
    double corr;     /* var/std: correction */
    int flag;        /* mean: divide by nred; std: sqrt; arg: indices only */
} rctx;

typedef struct {
    size_t accsz;
    int npass;
    int ordered; /* returns indices: keep reduced dims in logical order */
    void (*init)(void *acc, int64_t n, const rctx *c);
    /* fold n inputs at byte stride bs (linear reduced index r0..) into acc[0] */
    void (*row)(void *acc, const char *p, int64_t n, int64_t bs, int64_t r0, int pass,
                const rctx *c);
    /* fold n inputs at byte stride bs (all at reduced index r) into acc[0..n) */
    void (*col)(void *acc, const char *p, int64_t n, int64_t bs, int64_t r, int pass,
                const rctx *c);
    /* dst[j] op= src[j]; src covers reduced indices after dst's */
    void (*comb)(void *dst, const void *src, int64_t n, int pass, const rctx *c);
    void (*mid)(void *acc, int64_t n, int pass, const rctx *c);
    /* write n results: output element oidx + j * ostr of each output */
    void (*fin)(const void *acc, int64_t n, char *const *outs, int64_t oidx, int64_t ostr,
                const rctx *c);
} reducer;

/* Store a double as element `i` of a tensor of dtype dt. */
static inline void put_f64(char *base, jn_dtype dt, int64_t i, double v) {
    if (dt == JN_F32) ((float *)base)[i] = (float)v;
    else if (dt == JN_F64) ((double *)base)[i] = v;
    else jn_store_f64(base + i * (int64_t)jn_dtype_size[dt], dt, v);
}


/* Per-dtype parameters: tag, storage type, compute type, load (storage ->
 * compute), store (compute -> storage), is_float, lowest, highest, and the
 * exp used by logsumexp (float32 precision for float32/16 inputs). */
#define LDID(x) (x)
#define LDBOOL(x) ((uint8_t)((x) != 0))
#define RED_DTYPES(X)                                                                   \
    X(f32, float, float, LDID, LDID, 1, -INFINITY, INFINITY, EXPF_D)                    \
    X(f64, double, double, LDID, LDID, 1, -INFINITY, INFINITY, exp)                     \
    X(f16, uint16_t, float, h2f, jn_f32_to_f16, 1, -INFINITY, INFINITY, EXPF_D)          \
    X(bf16, uint16_t, float, bf2f, jn_f32_to_bf16, 1, -INFINITY, INFINITY, EXPF_D)       \
    X(i64, int64_t, int64_t, LDID, LDID, 0, INT64_MIN, INT64_MAX, exp)                  \
    X(i32, int32_t, int32_t, LDID, LDID, 0, INT32_MIN, INT32_MAX, exp)                  \
    X(u8, uint8_t, uint8_t, LDID, LDID, 0, 0, UINT8_MAX, exp)                           \
    X(b, uint8_t, uint8_t, LDBOOL, LDID, 0, 0, 1, exp)
#define EXPF_D(v) ((double)jexpf((float)(v)))

#define ISNAN_1(v) isnan(v)
#define ISNAN_0(v) 0
#define TOI_1(v) sat_i64((double)(v))
#define TOI_0(v) ((int64_t)(v))
/* "v replaces acc": strictly better, or the first NaN (NaN propagates) */
#define BETTER(F, CMP, v, acc) ((v) CMP (acc) || (ISNAN_##F(v) && !ISNAN_##F(acc)))

/* ---- shared pieces that do not depend on the input dtype ---- */
static void init_zero(void *a, int64_t n, const rctx *c) { memset(a, 0, (size_t)n * 8); }
static void init_one_f(void *a, int64_t n, const rctx *c) {
    for (int64_t j = 0; j < n; j++) ((double *)a)[j] = 1.0;
}
static void init_one_u(void *a, int64_t n, const rctx *c) {
    for (int64_t j = 0; j < n; j++) ((uint64_t *)a)[j] = 1;
}
static void comb_addf(void *d, const void *s, int64_t n, int pass, const rctx *c) {
    for (int64_t j = 0; j < n; j++) ((double *)d)[j] += ((const double *)s)[j];
}
static void comb_mulf(void *d, const void *s, int64_t n, int pass, const rctx *c) {
    for (int64_t j = 0; j < n; j++) ((double *)d)[j] *= ((const double *)s)[j];
}
static void comb_addu(void *d, const void *s, int64_t n, int pass, const rctx *c) {
    for (int64_t j = 0; j < n; j++) ((uint64_t *)d)[j] += ((const uint64_t *)s)[j];
}
static void comb_mulu(void *d, const void *s, int64_t n, int pass, const rctx *c) {
    for (int64_t j = 0; j < n; j++) ((uint64_t *)d)[j] *= ((const uint64_t *)s)[j];
}
static void no_mid(void *a, int64_t n, int pass, const rctx *c) {}
static void fin_f(const void *a, int64_t n, char *const *outs, int64_t oidx, int64_t ostr,
                  const rctx *c) {
    const double *s = a;
    /* a float32 row of sums stored in a loop the compiler vectorizes (the
     * bias gradients of a small step: a generic store and a division by 1
     * per element were 2% of its graph) */
    if (c->out_dt == JN_F32 && ostr == 1 && !c->flag) {
        float *o = (float *)outs[0] + oidx;
        for (int64_t j = 0; j < n; j++) o[j] = (float)s[j];
        return;
    }
    double div = c->flag ? (double)c->nred : 1.0; /* mean: sum / count (0/0 = nan) */
    for (int64_t j = 0; j < n; j++) put_f64(outs[0], c->out_dt, oidx + j * ostr, s[j] / div);
}
static void fin_u(const void *a, int64_t n, char *const *outs, int64_t oidx, int64_t ostr,
                  const rctx *c) {
    const uint64_t *s = a;
    char *o = outs[0];
    size_t es = jn_dtype_size[c->out_dt];
    for (int64_t j = 0; j < n; j++) /* two's complement wrap, as PyTorch */
        jn_store_i64(o + (oidx + j * ostr) * (int64_t)es, c->out_dt, (int64_t)s[j]);
}

/* var/std: pass 0 sums (s), mid turns s into the mean, pass 1 sums squared
 * deviations (m2). */
typedef struct { double s, m2; } var_acc;
static void var_mid(void *a, int64_t n, int pass, const rctx *c) {
    var_acc *v = a;
    for (int64_t j = 0; j < n; j++) v[j].s /= (double)c->nred;
}
static void var_comb(void *d, const void *s, int64_t n, int pass, const rctx *c) {
    var_acc *x = d;
    const var_acc *y = s;
    for (int64_t j = 0; j < n; j++) {
        if (pass == 0) x[j].s += y[j].s;
        else x[j].m2 += y[j].m2;
    }
}
static void var_fin(const void *a, int64_t n, char *const *outs, int64_t oidx, int64_t ostr,
                    const rctx *c) {
    const var_acc *v = a;
    double dof = (double)c->nred - c->corr;
    if (dof < 0) dof = 0; /* PyTorch: max(0, N - correction); 0 gives nan/inf */
    for (int64_t j = 0; j < n; j++) {
        double r = v[j].m2 / dof;
        put_f64(outs[0], c->out_dt, oidx + j * ostr, c->flag ? sqrt(r) : r);
    }
}

/* logsumexp: pass 0 finds the max m, pass 1 sums exp(x - m). */
typedef struct { double m, s; } lse_acc;
static void lse_init(void *a, int64_t n, const rctx *c) {
    lse_acc *v = a;
    for (int64_t j = 0; j < n; j++) v[j].m = -INFINITY, v[j].s = 0;
}
static void lse_mid(void *a, int64_t n, int pass, const rctx *c) {
    lse_acc *v = a; /* an infinite max (all -inf, or +inf present) is not subtracted */
    for (int64_t j = 0; j < n; j++)
        if (isinf(v[j].m)) v[j].m = 0;
}
static void lse_comb(void *d, const void *s, int64_t n, int pass, const rctx *c) {
    lse_acc *x = d;
    const lse_acc *y = s;
    for (int64_t j = 0; j < n; j++) {
        if (pass == 0) x[j].m = BETTER(1, >, y[j].m, x[j].m) ? y[j].m : x[j].m;
        else x[j].s += y[j].s;
    }
}
static void lse_fin(const void *a, int64_t n, char *const *outs, int64_t oidx, int64_t ostr,
                    const rctx *c) {
    const lse_acc *v = a;
    for (int64_t j = 0; j < n; j++)
        put_f64(outs[0], c->out_dt, oidx + j * ostr, log(v[j].s) + v[j].m);
}

/* all/any: one byte per output */
static void init_all(void *a, int64_t n, const rctx *c) { memset(a, 1, (size_t)n); }
static void init_any(void *a, int64_t n, const rctx *c) { memset(a, 0, (size_t)n); }
static void comb_all(void *d, const void *s, int64_t n, int pass, const rctx *c) {
    for (int64_t j = 0; j < n; j++) ((uint8_t *)d)[j] &= ((const uint8_t *)s)[j];
}
static void comb_any(void *d, const void *s, int64_t n, int pass, const rctx *c) {
    for (int64_t j = 0; j < n; j++) ((uint8_t *)d)[j] |= ((const uint8_t *)s)[j];
}
static void fin_bool(const void *a, int64_t n, char *const *outs, int64_t oidx, int64_t ostr,
                     const rctx *c) {
    for (int64_t j = 0; j < n; j++) ((uint8_t *)outs[0])[oidx + j * ostr] = ((const uint8_t *)a)[j];
}

/* ---- per-dtype folds ---- */
/* Contiguous runs use NL independent lanes: the fixed-length inner loop is
 * vectorized by gcc at -O3 without reassociating the accumulation (and the
 * lanes make float sums more accurate, like pairwise summation). */
#define NL 32
#define LANES(T, LD, ACCT, INIT, STEP, MERGE)                                    \
    if (bs == (int64_t)sizeof(T)) {                                              \
        const T *x = (const T *)p;                                               \
        ACCT l[NL];                                                              \
        for (int k = 0; k < NL; k++) l[k] = INIT;                                \
        int64_t i = 0;                                                           \
        for (; i + NL <= n; i += NL)                                             \
            for (int k = 0; k < NL; k++) STEP(l[k], LD(x[i + k]));               \
        for (int k = 0; k < NL; k++) MERGE(acc, l[k]);                           \
        for (; i < n; i++) STEP(acc, LD(x[i]));                                  \
    } else {                                                                     \
        for (int64_t i = 0; i < n; i++) STEP(acc, LD(*(const T *)(p + i * bs))); \
    }
/* Column folds: element j (at byte stride bs) goes to accumulator j. */
#define COLS(T, BODY)                                                                  \
    if (bs == (int64_t)sizeof(T)) {                                                    \
        const T *x_ = (const T *)p;                                                    \
        for (int64_t j = 0; j < n; j++) { const T xj = x_[j]; BODY; }                  \
    } else {                                                                           \
        for (int64_t j = 0; j < n; j++) { const T xj = *(const T *)(p + j * bs); BODY; } \
    }

#define ADDF(a, v) ((a) += (double)(v))
#define MULF(a, v) ((a) *= (double)(v))
#define ADDU(a, v) ((a) += (v))
#define MULU(a, v) ((a) *= (v))
#define ADDI_1(a, v) ((a) += (uint64_t)sat_i64((double)(v)))
#define ADDI_0(a, v) ((a) += (uint64_t)(int64_t)(v))
#define MULI_1(a, v) ((a) *= (uint64_t)sat_i64((double)(v)))
#define MULI_0(a, v) ((a) *= (uint64_t)(int64_t)(v))
#define SQDEV(a, v) ((a) += ((double)(v) - mean) * ((double)(v) - mean))
/* branch-free selects (bitwise |) so the lane loops vectorize; NaN propagates */
#define max_STEP_1(a, v) ((a) = (((v) > (a)) | ((v) != (v))) ? (v) : (a))
#define max_STEP_0(a, v) ((a) = (v) > (a) ? (v) : (a))
#define min_STEP_1(a, v) ((a) = (((v) < (a)) | ((v) != (v))) ? (v) : (a))
#define min_STEP_0(a, v) ((a) = (v) < (a) ? (v) : (a))
#define LSEMAX(a, v) max_STEP_1(a, (double)(v))
#define LSEEXP_exp(a, v) ((a) += exp((double)(v) - m))
#define LSEEXP_EXPF_D(a, v) ((a) += (double)jexpf((float)(v) - (float)m))
static void init_zero2(void *a, int64_t n, const rctx *c) { memset(a, 0, (size_t)n * 16); }

#define DEF_RED(t, T, CT, LD, ST, F, LO, HI, EXPD)                                          \
    /* float sum / mean (double accumulator) */                                             \
    HOT static void sumf_row_##t(void *a, const char *p, int64_t n, int64_t bs, int64_t r0,       \
                             int pass, const rctx *c) {                                     \
        double acc = 0;                                                                     \
        LANES(T, LD, double, 0.0, ADDF, ADDF)                                              \
        *(double *)a += acc;                                                                \
    }                                                                                       \
    HOT static void sumf_col_##t(void *a, const char *p, int64_t n, int64_t bs, int64_t r,        \
                             int pass, const rctx *c) {                                     \
        double *acc = a;                                                                    \
        COLS(T, acc[j] += (double)LD(xj))                                                   \
    }                                                                                       \
    static const reducer sumf_##t = {8, 1, 0, init_zero, sumf_row_##t, sumf_col_##t,        \
                                     comb_addf, no_mid, fin_f};                             \
    /* float product */                                                                     \
    HOT static void prodf_row_##t(void *a, const char *p, int64_t n, int64_t bs, int64_t r0,      \
                              int pass, const rctx *c) {                                    \
        double acc = 1;                                                                     \
        LANES(T, LD, double, 1.0, MULF, MULF)                                              \
        *(double *)a *= acc;                                                                \
    }                                                                                       \
    HOT static void prodf_col_##t(void *a, const char *p, int64_t n, int64_t bs, int64_t r,       \
                              int pass, const rctx *c) {                                    \
        double *acc = a;                                                                    \
        COLS(T, acc[j] *= (double)LD(xj))                                                   \
    }                                                                                       \
    static const reducer prodf_##t = {8, 1, 0, init_one_f, prodf_row_##t, prodf_col_##t,    \
                                      comb_mulf, no_mid, fin_f};                            \
    /* integer sum / product: elements converted to int64, wrapping uint64 math */           \
    HOT static void sumi_row_##t(void *a, const char *p, int64_t n, int64_t bs, int64_t r0,       \
                             int pass, const rctx *c) {                                     \
        uint64_t acc = 0;                                                                   \
        LANES(T, LD, uint64_t, 0, ADDI_##F, ADDU)                                          \
        *(uint64_t *)a += acc;                                                              \
    }                                                                                       \
    HOT static void sumi_col_##t(void *a, const char *p, int64_t n, int64_t bs, int64_t r,        \
                             int pass, const rctx *c) {                                     \
        uint64_t *acc = a;                                                                  \
        COLS(T, ADDI_##F(acc[j], LD(xj)))                                                   \
    }                                                                                       \
    static const reducer sumi_##t = {8, 1, 0, init_zero, sumi_row_##t, sumi_col_##t,        \
                                     comb_addu, no_mid, fin_u};                             \
    HOT static void prodi_row_##t(void *a, const char *p, int64_t n, int64_t bs, int64_t r0,      \
                              int pass, const rctx *c) {                                    \
        uint64_t acc = 1;                                                                   \
        LANES(T, LD, uint64_t, 1, MULI_##F, MULU)                                          \
        *(uint64_t *)a *= acc;                                                              \
    }                                                                                       \
    HOT static void prodi_col_##t(void *a, const char *p, int64_t n, int64_t bs, int64_t r,       \
                              int pass, const rctx *c) {                                    \
        uint64_t *acc = a;                                                                  \
        COLS(T, MULI_##F(acc[j], LD(xj)))                                                   \
    }                                                                                       \
    static const reducer prodi_##t = {8, 1, 0, init_one_u, prodi_row_##t, prodi_col_##t,   \
                                      comb_mulu, no_mid, fin_u};                            \
    DEF_MM(t, T, CT, LD, ST, F, max, LO)                                                    \
    DEF_MM(t, T, CT, LD, ST, F, min, HI)                                                    \
    DEF_ARG(t, T, CT, LD, ST, F, argmax, max, >, LO)                                        \
    DEF_ARG(t, T, CT, LD, ST, F, argmin, min, <, HI)                                        \
    /* var / std: two passes in double */                                                   \
    HOT static void var_row_##t(void *a, const char *p, int64_t n, int64_t bs, int64_t r0,        \
                            int pass, const rctx *c) {                                      \
        var_acc *v = a;                                                                     \
        double acc = 0;                                                                     \
        if (pass == 0) {                                                                    \
            LANES(T, LD, double, 0.0, ADDF, ADDF)                                          \
            v->s += acc;                                                                    \
        } else {                                                                            \
            const double mean = v->s;                                                       \
            LANES(T, LD, double, 0.0, SQDEV, ADDF)                                         \
            v->m2 += acc;                                                                   \
        }                                                                                   \
    }                                                                                       \
    HOT static void var_col_##t(void *a, const char *p, int64_t n, int64_t bs, int64_t r,         \
                            int pass, const rctx *c) {                                      \
        var_acc *v = a;                                                                     \
        if (pass == 0) {                                                                    \
            COLS(T, v[j].s += (double)LD(xj))                                               \
        } else {                                                                            \
            COLS(T, const double d = (double)LD(xj) - v[j].s; v[j].m2 += d * d)             \
        }                                                                                   \
    }                                                                                       \
    static const reducer var_##t = {sizeof(var_acc), 2, 0, init_zero2, var_row_##t,          \
                                    var_col_##t, var_comb, var_mid, var_fin};               \
    /* logsumexp */                                                                         \
    HOT static void lse_row_##t(void *a, const char *p, int64_t n, int64_t bs, int64_t r0,        \
                            int pass, const rctx *c) {                                      \
        lse_acc *v = a;                                                                     \
        if (pass == 0) {                                                                    \
            double acc = v->m;                                                              \
            LANES(T, LD, double, -INFINITY, LSEMAX, max_STEP_1)                            \
            v->m = acc;                                                                     \
        } else {                                                                            \
            const double m = v->m;                                                          \
            double acc = 0;                                                                 \
            LANES(T, LD, double, 0.0, LSEEXP_##EXPD, ADDF)                                        \
            v->s += acc;                                                                    \
        }                                                                                   \
    }                                                                                       \
    HOT static void lse_col_##t(void *a, const char *p, int64_t n, int64_t bs, int64_t r,         \
                            int pass, const rctx *c) {                                      \
        lse_acc *v = a;                                                                     \
        if (pass == 0) {                                                                    \
            COLS(T, LSEMAX(v[j].m, LD(xj)))                                                 \
        } else {                                                                            \
            COLS(T, v[j].s += EXPD((double)LD(xj) - v[j].m))                                \
        }                                                                                   \
    }                                                                                       \
    static const reducer lse_##t = {sizeof(lse_acc), 2, 0, lse_init, lse_row_##t,            \
                                    lse_col_##t, lse_comb, lse_mid, lse_fin};               \
    /* all / any (NaN counts as true, like any nonzero) */                                  \
    HOT static void all_row_##t(void *a, const char *p, int64_t n, int64_t bs, int64_t r0,        \
                            int pass, const rctx *c) {                                      \
        uint8_t *v = a;                                                                     \
        for (int64_t i = 0; i < n && *v; i++)                                               \
            if (LD(*(const T *)(p + i * bs)) == 0) *v = 0;                                  \
    }                                                                                       \
    HOT static void all_col_##t(void *a, const char *p, int64_t n, int64_t bs, int64_t r,         \
                            int pass, const rctx *c) {                                      \
        uint8_t *v = a;                                                                     \
        COLS(T, v[j] &= LD(xj) != 0)                                                        \
    }                                                                                       \
    static const reducer all_##t = {1, 1, 0, init_all, all_row_##t, all_col_##t, comb_all,  \
                                    no_mid, fin_bool};                                      \
    HOT static void any_row_##t(void *a, const char *p, int64_t n, int64_t bs, int64_t r0,        \
                            int pass, const rctx *c) {                                      \
        uint8_t *v = a;                                                                     \
        for (int64_t i = 0; i < n && !*v; i++)                                              \
            if (LD(*(const T *)(p + i * bs)) != 0) *v = 1;                                  \
    }                                                                                       \
    HOT static void any_col_##t(void *a, const char *p, int64_t n, int64_t bs, int64_t r,         \
                            int pass, const rctx *c) {                                      \
        uint8_t *v = a;                                                                     \
        COLS(T, v[j] |= LD(xj) != 0)                                                        \
    }                                                                                       \
    static const reducer any_##t = {1, 1, 0, init_any, any_row_##t, any_col_##t, comb_any,  \
                                    no_mid, fin_bool};

/* amax / amin: accumulator in the compute type, NaN propagates */
#define DEF_MM(t, T, CT, LD, ST, F, name, INIT)                                            \
    static void name##_init_##t(void *a, int64_t n, const rctx *c) {                      \
        for (int64_t j = 0; j < n; j++) ((CT *)a)[j] = INIT;                               \
    }                                                                                      \
    HOT static void name##_row_##t(void *a, const char *p, int64_t n, int64_t bs, int64_t r0,   \
                               int pass, const rctx *c) {                                  \
        CT acc = *(CT *)a;                                                                 \
        LANES(T, LD, CT, (CT)(INIT), name##_STEP_##F, name##_STEP_##F)                    \
        *(CT *)a = acc;                                                                    \
    }                                                                                      \
    HOT static void name##_col_##t(void *a, const char *p, int64_t n, int64_t bs, int64_t r,    \
                               int pass, const rctx *c) {                                  \
        CT *acc = a;                                                                       \
        COLS(T, const CT v = LD(xj); name##_STEP_##F(acc[j], v))                           \
    }                                                                                      \
    static void name##_comb_##t(void *d, const void *s, int64_t n, int pass, const rctx *c) { \
        for (int64_t j = 0; j < n; j++) name##_STEP_##F(((CT *)d)[j], ((const CT *)s)[j]); \
    }                                                                                      \
    static void name##_fin_##t(const void *a, int64_t n, char *const *outs, int64_t oidx,   \
                               int64_t ostr, const rctx *c) {                              \
        for (int64_t j = 0; j < n; j++) ((T *)outs[0])[oidx + j * ostr] = ST(((const CT *)a)[j]); \
    }                                                                                      \
    static const reducer name##_##t = {sizeof(CT), 1, 0, name##_init_##t, name##_row_##t,   \
                                       name##_col_##t, name##_comb_##t, no_mid, name##_fin_##t};

/* max/min with index, argmax/argmin: first occurrence wins, the first NaN
 * wins over everything.  i = -1 means "nothing better than the initial
 * value seen yet" (then every element equals it, and index 0 is right).
 * Contiguous rows first find the extreme value with the vectorized amax
 * fold, then the first index holding it. */
#define DEF_ARG(t, T, CT, LD, ST, F, name, mm, CMP, INIT)                                  \
    typedef struct { CT v; int64_t i; } name##_acc_##t;                                    \
    static void name##_init_##t(void *a, int64_t n, const rctx *c) {                      \
        name##_acc_##t *s = a;                                                             \
        for (int64_t j = 0; j < n; j++) s[j].v = INIT, s[j].i = -1;                        \
    }                                                                                      \
    HOT static void name##_row_##t(void *a, const char *p, int64_t n, int64_t bs, int64_t r0,   \
                               int pass, const rctx *c) {                                  \
        name##_acc_##t *s = a;                                                             \
        if (bs == (int64_t)sizeof(T) && n >= 16) {                                         \
            CT e = (CT)(INIT);                                                             \
            mm##_row_##t(&e, p, n, bs, r0, pass, c);                                       \
            if (!BETTER(F, CMP, e, s->v)) return;                                          \
            const T *x = (const T *)p;                                                     \
            int64_t i = 0;                                                                 \
            if (!ISNAN_##F(e)) /* skip blocks without a match, vectorized */              \
                for (; i + NL <= n; i += NL) {                                             \
                    int hit = 0;                                                           \
                    for (int k = 0; k < NL; k++) hit |= LD(x[i + k]) == e;                 \
                    if (hit) break;                                                        \
                }                                                                          \
            for (; i < n; i++) {                                                           \
                CT v = LD(x[i]);                                                           \
                if (v == e || (ISNAN_##F(v) && ISNAN_##F(e))) {                            \
                    s->v = v, s->i = r0 + i;                                               \
                    return;                                                                \
                }                                                                          \
            }                                                                              \
        }                                                                                  \
        CT best = s->v;                                                                    \
        int64_t bi = s->i;                                                                 \
        for (int64_t i = 0; i < n; i++) {                                                  \
            CT v = LD(*(const T *)(p + i * bs));                                           \
            if (BETTER(F, CMP, v, best)) best = v, bi = r0 + i;                            \
        }                                                                                  \
        s->v = best, s->i = bi;                                                            \
    }                                                                                      \
    HOT static void name##_col_##t(void *a, const char *p, int64_t n, int64_t bs, int64_t r,    \
                               int pass, const rctx *c) {                                  \
        name##_acc_##t *s = a;                                                             \
        COLS(T, const CT v = LD(xj); const int b = BETTER(F, CMP, v, s[j].v);              \
             s[j].v = b ? v : s[j].v; s[j].i = b ? r : s[j].i)                             \
    }                                                                                      \
    static void name##_comb_##t(void *d, const void *s_, int64_t n, int pass, const rctx *c) { \
        name##_acc_##t *x = d;                                                             \
        const name##_acc_##t *y = s_;                                                      \
        for (int64_t j = 0; j < n; j++)                                                    \
            if (y[j].i >= 0 && (x[j].i < 0 || BETTER(F, CMP, y[j].v, x[j].v))) x[j] = y[j]; \
    }                                                                                      \
    static void name##_fin_##t(const void *a, int64_t n, char *const *outs, int64_t oidx,   \
                               int64_t ostr, const rctx *c) {                              \
        const name##_acc_##t *s = a;                                                       \
        int64_t *idx = (int64_t *)outs[c->flag ? 0 : 1];                                   \
        for (int64_t j = 0; j < n; j++) {                                                  \
            int64_t o = oidx + j * ostr;                                                   \
            if (!c->flag) ((T *)outs[0])[o] = ST(s[j].v);                                  \
            idx[o] = s[j].i < 0 ? 0 : s[j].i;                                              \
        }                                                                                  \
    }                                                                                      \
    static const reducer name##_##t = {sizeof(name##_acc_##t), 1, 1, name##_init_##t,       \
                                       name##_row_##t, name##_col_##t, name##_comb_##t,    \
                                       no_mid, name##_fin_##t};

RED_DTYPES(DEF_RED)

#define RTAB(name)                                                                       \
    static const reducer *const name##_tab[JN_NDTYPES] = {                               \
        &name##_f32, &name##_f64, &name##_f16, &name##_bf16,                             \
        &name##_i64, &name##_i32, &name##_u8,  &name##_b};
RTAB(sumf)
RTAB(prodf)
RTAB(sumi)
RTAB(prodi)
RTAB(max)
RTAB(min)
RTAB(argmax)
RTAB(argmin)
RTAB(var)
RTAB(lse)
RTAB(all)
RTAB(any)

/* -------------------------------------------------------------- engine */
typedef struct {
    const reducer *R;
    const rctx *c;
    const char *in;
    int nk, nr;
    int64_t ks[JN_MAX_DIMS], kin[JN_MAX_DIMS], kout[JN_MAX_DIMS]; /* kept: size, bytes, elems */
    int64_t rs[JN_MAX_DIMS], rin[JN_MAX_DIMS];                    /* reduced: size, bytes */
    int64_t nout, nred;
    int col, vd;              /* col mode and its vector (kept) dim */
    int64_t U, nblk, nunits;  /* outputs per unit; col: blocks along vd */
    char *const *outs;
    int64_t nchunks, clen;    /* split of the reduced range */
    char *accs;               /* chunked mode: [unit][chunk][U] accumulators */
    int pass;
} plan;

/* Unit u -> number of outputs, input byte offset of its first output,
 * output index of its first output and the output stride between them. */
static int64_t unit_out(const plan *P, int64_t u, int64_t *inoff, int64_t *oidx, int64_t *ostr) {
    int64_t off = 0, cnt;
    if (!P->col) {
        int64_t o0 = u * P->U, rem = o0;
        cnt = P->nout - o0 < P->U ? P->nout - o0 : P->U;
        for (int d = P->nk - 1; d >= 0; d--) {
            off += (rem % P->ks[d]) * P->kin[d];
            rem /= P->ks[d];
        }
        *oidx = o0;
        *ostr = 1;
    } else {
        int64_t q = u / P->nblk, j0 = (u % P->nblk) * P->U, o = j0 * P->kout[P->vd];
        cnt = P->ks[P->vd] - j0 < P->U ? P->ks[P->vd] - j0 : P->U;
        off = j0 * P->kin[P->vd];
        for (int d = P->nk - 1; d >= 0; d--) {
            if (d == P->vd) continue;
            int64_t i = q % P->ks[d];
            q /= P->ks[d];
            off += i * P->kin[d];
            o += i * P->kout[d];
        }
        *oidx = o;
        *ostr = P->kout[P->vd];
    }
    *inoff = off;
    return cnt;
}

/* Reduced linear index r -> multi-index and byte offset. */
static int64_t red_pos(const plan *P, int64_t r, int64_t *idx) {
    int64_t off = 0;
    for (int d = P->nr - 1; d >= 0; d--) {
        idx[d] = r % P->rs[d];
        r /= P->rs[d];
        off += idx[d] * P->rin[d];
    }
    return off;
}

/* Fold reduced indices [rb, re) of unit u into acc. */
static void fold_unit(const plan *P, int64_t u, char *acc, int64_t rb, int64_t re, int pass) {
    if (rb >= re) return;
    const reducer *R = P->R;
    int64_t inoff, oidx, ostr, cnt = unit_out(P, u, &inoff, &oidx, &ostr);
    int nr = P->nr, in_ = nr - 1;
    int64_t ridx0[JN_MAX_DIMS], roff0 = red_pos(P, rb, ridx0);
    if (!P->col) {
        int64_t kidx[JN_MAX_DIMS], rem = oidx;
        for (int d = P->nk - 1; d >= 0; d--) {
            kidx[d] = rem % P->ks[d];
            rem /= P->ks[d];
        }
        for (int64_t j = 0; j < cnt; j++) {
            const char *base = P->in + inoff;
            int64_t ridx[JN_MAX_DIMS], roff = roff0;
            memcpy(ridx, ridx0, sizeof ridx);
            for (int64_t r = rb; r < re;) {
                int64_t len = P->rs[in_] - ridx[in_];
                if (len > re - r) len = re - r;
                R->row(acc + (size_t)j * R->accsz, base + roff, len, P->rin[in_], r, pass, P->c);
                r += len;
                ridx[in_] += len;
                roff += len * P->rin[in_];
                if (ridx[in_] < P->rs[in_]) continue;
                roff -= P->rs[in_] * P->rin[in_];
                ridx[in_] = 0;
                for (int d = in_ - 1; d >= 0; d--) {
                    roff += P->rin[d];
                    if (++ridx[d] < P->rs[d]) break;
                    roff -= P->rs[d] * P->rin[d];
                    ridx[d] = 0;
                }
            }
            for (int d = P->nk - 1; d >= 0; d--) { /* next output */
                inoff += P->kin[d];
                if (++kidx[d] < P->ks[d]) break;
                inoff -= P->ks[d] * P->kin[d];
                kidx[d] = 0;
            }
        }
    } else {
        const char *base = P->in + inoff;
        int64_t roff = roff0;
        for (int64_t r = rb; r < re; r++) {
            R->col(acc, base + roff, cnt, P->kin[P->vd], r, pass, P->c);
            for (int d = in_; d >= 0; d--) {
                roff += P->rin[d];
                if (++ridx0[d] < P->rs[d]) break;
                roff -= P->rs[d] * P->rin[d];
                ridx0[d] = 0;
            }
        }
    }
}

static void task_units(int64_t b, int64_t e, void *ctx) {
    const plan *P = ctx;
    const reducer *R = P->R;
    _Alignas(16) char acc[16384]; /* >= U * accsz in both modes */
    for (int64_t u = b; u < e; u++) {
        int64_t inoff, oidx, ostr, cnt = unit_out(P, u, &inoff, &oidx, &ostr);
        R->init(acc, cnt, P->c);
        for (int pass = 0; pass < R->npass; pass++) {
            fold_unit(P, u, acc, 0, P->nred, pass);
            if (pass + 1 < R->npass) R->mid(acc, cnt, pass, P->c);
        }
        R->fin(acc, cnt, P->outs, oidx, ostr, P->c);
    }
}

static void task_chunks(int64_t b, int64_t e, void *ctx) {
    const plan *P = ctx;
    for (int64_t t = b; t < e; t++) {
        int64_t u = t / P->nchunks, rb = (t % P->nchunks) * P->clen;
        int64_t re = rb + P->clen < P->nred ? rb + P->clen : P->nred;
        fold_unit(P, u, P->accs + (size_t)t * (size_t)P->U * P->R->accsz, rb, re, P->pass);
    }
}

/* Reduce x over the dims flagged in mask with R; outputs are contiguous. */
static jn_status run_reduce(const jn_tensor *x, const uint8_t *mask, const reducer *R,
                            const rctx *c, char *const *outs) {
    plan P;
    memset(&P, 0, sizeof P);
    P.R = R;
    P.c = c;
    P.outs = outs;
    P.in = jn_data(x);
    int64_t es = (int64_t)jn_elsize(x);
    P.nout = P.nred = 1;
    for (int d = 0; d < x->ndim; d++) {
        int64_t n = x->shape[d];
        if (mask[d]) P.nred *= n;
        else P.nout *= n;
        if (n == 1) continue;
        if (mask[d]) P.rs[P.nr] = n, P.rin[P.nr++] = x->strides[d] * es;
        else P.ks[P.nk] = n, P.kin[P.nk++] = x->strides[d] * es;
    }
    if (P.nout == 0) return JN_OK;
    /* output element strides over the kept dims (the output is contiguous) */
    for (int64_t d = P.nk - 1, s = 1; d >= 0; d--) P.kout[d] = s, s *= P.ks[d];
    /* order-free reducers: innermost = smallest stride, broadcast dims outermost */
    if (!R->ordered)
        for (int i = 1; i < P.nr; i++)
            for (int j = i; j > 0; j--) {
                uint64_t a = (uint64_t)P.rin[j - 1] - 1, b = (uint64_t)P.rin[j] - 1; /* 0 -> max */
                if (a >= b) break;
                int64_t t0 = P.rs[j], t1 = P.rin[j];
                P.rs[j] = P.rs[j - 1], P.rin[j] = P.rin[j - 1];
                P.rs[j - 1] = t0, P.rin[j - 1] = t1;
            }
    /* merge adjacent dims that are contiguous with each other */
    int m = 0;
    for (int d = 1; d < P.nr; d++) {
        if (P.rin[m] == P.rin[d] * P.rs[d]) P.rs[m] *= P.rs[d], P.rin[m] = P.rin[d];
        else m++, P.rs[m] = P.rs[d], P.rin[m] = P.rin[d];
    }
    if (P.nr) P.nr = m + 1;
    m = 0;
    for (int d = 1; d < P.nk; d++) {
        if (P.kin[m] == P.kin[d] * P.ks[d])
            P.ks[m] *= P.ks[d], P.kin[m] = P.kin[d], P.kout[m] = P.kout[d];
        else m++, P.ks[m] = P.ks[d], P.kin[m] = P.kin[d], P.kout[m] = P.kout[d];
    }
    if (P.nk) P.nk = m + 1;
    if (P.nr == 0) P.nr = 1, P.rs[0] = 1, P.rin[0] = 0;
    if (P.nk == 0) P.nk = 1, P.ks[0] = 1, P.kin[0] = 0, P.kout[0] = 0;

    /* col mode when the reduced run is not contiguous but a kept dim is,
     * or when reductions are so short that a call per output would dominate */
    int nt = jn_num_threads();
    P.vd = -1;
    if (P.rin[P.nr - 1] != es)
        for (int d = 0; d < P.nk; d++)
            if (P.kin[d] == es && P.ks[d] >= 8 && (P.vd < 0 || P.ks[d] > P.ks[P.vd])) P.vd = d;
    if (P.vd < 0 && P.nred <= 16)
        for (int d = 0; d < P.nk; d++)
            if (P.kin[d] && P.ks[d] >= 32 && (P.vd < 0 || P.kin[d] < P.kin[P.vd])) P.vd = d;
    P.col = P.vd >= 0;
    if (P.col) {
        /* long blocks (accumulators up to 16 KiB) for long sequential reads, but
         * enough blocks to feed every thread */
        int64_t len = P.ks[P.vd], cap = 16384 / (int64_t)R->accsz, outer = P.nout / len;
        if (cap > UNIT_MAX_COL) cap = UNIT_MAX_COL;
        P.U = len < cap ? len : cap;
        if (outer * ((len + P.U - 1) / P.U) < nt && P.U > 64) {
            int64_t want = (len + nt - 1) / nt;
            P.U = want < 64 ? 64 : (want + 15) / 16 * 16;
            if (P.U > cap) P.U = cap;
        }
        P.nblk = (len + P.U - 1) / P.U;
        P.nunits = outer * P.nblk;
    } else {
        P.U = P.nout < UNIT_MAX ? P.nout : UNIT_MAX;
        P.nunits = (P.nout + P.U - 1) / P.U;
    }

    if (nt > 1 && P.nunits < nt && P.nred >= 16384 && P.nout * P.nred >= 65536) {
        /* few outputs, long reductions: split the reduced range too */
        P.nchunks = P.nred / 8192 < nt ? P.nred / 8192 : nt;
        P.clen = (P.nred + P.nchunks - 1) / P.nchunks;
        size_t blk = (size_t)P.U * R->accsz, ntask = (size_t)(P.nunits * P.nchunks);
        P.accs = malloc(blk * ntask);
        if (!P.accs) return jn_error(JN_ERR_NOMEM, "out of memory for reduction partials");
        for (size_t t = 0; t < ntask; t++) R->init(P.accs + t * blk, P.U, c);
        for (P.pass = 0; P.pass < R->npass; P.pass++) {
            jn_parallel_for((int64_t)ntask, 1, task_chunks, &P);
            for (int64_t u = 0; u < P.nunits; u++) {
                int64_t inoff, oidx, ostr, cnt = unit_out(&P, u, &inoff, &oidx, &ostr);
                char *a0 = P.accs + (size_t)(u * P.nchunks) * blk;
                for (int64_t ch = 1; ch < P.nchunks; ch++)
                    R->comb(a0, a0 + ch * blk, cnt, P.pass, c);
                if (P.pass + 1 < R->npass) {
                    R->mid(a0, cnt, P.pass, c);
                    for (int64_t ch = 1; ch < P.nchunks; ch++) memcpy(a0 + ch * blk, a0, blk);
                } else {
                    R->fin(a0, cnt, outs, oidx, ostr, c);
                }
            }
        }
        free(P.accs);
        return JN_OK;
    }
    int64_t per = P.nred >= 32768 ? 32768 : P.U * (P.nred > 0 ? P.nred : 1) * R->npass;
    int64_t grain = per >= 32768 ? 1 : 32768 / per; /* units per task */
    jn_parallel_for(P.nunits, grain, task_units, &P);
    return JN_OK;
}

/* ------------------------------------------------------------ inference */
/* The dims list -> mask; an empty list means every dim.  Wraps negative
 * dims, rejects duplicates.  A 0-d tensor accepts dims 0 and -1. */
static jn_status dims_mask(const jn_tensor *x, const jn_ints *l, const char *op, uint8_t *mask) {
    memset(mask, 0, JN_MAX_DIMS);
    if (l->n < 0 || l->n > JN_MAX_DIMS)
        return jn_error(JN_ERR_VALUE, "%s(): at most %d dims can be reduced, got %d", op,
                        JN_MAX_DIMS, l->n);
    if (l->n == 0) {
        memset(mask, 1, (size_t)x->ndim);
        return JN_OK;
    }
    for (int k = 0; k < l->n; k++) {
        int64_t d = l->v[k];
        jn_status s = jn_wrap_dim(&d, x->ndim, op);
        if (s) return s;
        if (mask[d])
            return jn_error(JN_ERR_RUNTIME,
                            "%s(): dim %lld appears multiple times in the list of dims", op,
                            (long long)d);
        mask[d] = 1;
    }
    return JN_OK;
}

static void red_shape(const jn_tensor *x, const uint8_t *mask, int keepdim, jn_dtype dt,
                      jn_meta *m) {
    m->dtype = dt;
    m->ndim = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (!mask[d]) m->shape[m->ndim++] = x->shape[d];
        else if (keepdim) m->shape[m->ndim++] = 1;
    }
}

/* max/min style reductions have no identity: a zero-size reduced dim is an error. */
static jn_status check_nonempty(const jn_tensor *x, const uint8_t *mask, int all, const char *op) {
    if (all && x->ndim && jn_numel(x) == 0)
        return jn_error(JN_ERR_RUNTIME,
                        "%s(): Expected reduction dim to be specified for input.numel() == 0. "
                        "Specify the reduction dim with the 'dim' argument.", op);
    for (int d = 0; d < x->ndim; d++)
        if (mask[d] && x->shape[d] == 0)
            return jn_error(JN_ERR_INDEX, "%s(): Expected reduction dim %d to have non-zero size.",
                            op, d);
    return JN_OK;
}

typedef enum { K_SUM, K_MEAN, K_PROD, K_AMAX, K_AMIN, K_MAXD, K_MIND, K_ARGMAX, K_ARGMIN,
               K_VAR, K_STD, K_LSE, K_ALL, K_ANY } rkind;

static const char *const kname[] = {"sum", "mean", "prod", "amax", "amin", "max", "min",
                                    "argmax", "argmin", "var", "std", "logsumexp", "all", "any"};

/* Resolve attributes for kind k: mask, keepdim, output dtype. */
static jn_status red_setup(rkind k, const jn_tensor *x, const jn_attrs *a, uint8_t *mask,
                           int *keepdim, jn_dtype *odt) {
    const char *op = kname[k];
    jn_dtype in = x->dtype;
    jn_status s;
    int all = 0;
    switch (k) {
    case K_MAXD: case K_MIND: case K_ARGMAX: case K_ARGMIN: {
        int has_dim = (k == K_ARGMAX || k == K_ARGMIN) ? a->a[2].i != 0 : 1;
        memset(mask, 0, JN_MAX_DIMS);
        if (has_dim) {
            int64_t d = a->a[0].i;
            if ((s = jn_wrap_dim(&d, x->ndim, op))) return s;
            mask[d] = 1;
        } else {
            memset(mask, 1, (size_t)x->ndim);
            all = 1;
        }
        *keepdim = a->a[1].i != 0;
        if ((s = check_nonempty(x, mask, all, op))) return s;
        *odt = (k == K_ARGMAX || k == K_ARGMIN) ? JN_I64 : in;
        return JN_OK;
    }
    case K_VAR: case K_STD:
        *keepdim = a->a[2].i != 0;
        break;
    default:
        *keepdim = a->a[1].i != 0;
        break;
    }
    if ((s = dims_mask(x, &a->a[0].l, op, mask))) return s;
    all = a->a[0].l.n == 0;
    int64_t want = (k == K_SUM || k == K_MEAN || k == K_PROD) ? a->a[2].i : -1;
    if (want < -1 || want >= JN_NDTYPES)
        return jn_error(JN_ERR_VALUE, "%s(): bad dtype code %lld", op, (long long)want);
    switch (k) {
    case K_SUM: case K_PROD:
        *odt = want >= 0 ? (jn_dtype)want : jn_dtype_is_float(in) ? in : JN_I64;
        break;
    case K_MEAN:
        if (want >= 0 && !jn_dtype_is_float((jn_dtype)want))
            return jn_error(JN_ERR_TYPE,
                            "mean(): could not infer output dtype. Optional dtype must be either a "
                            "floating point or complex dtype. Got: %s", jn_dtype_names[want]);
        if (want < 0 && !jn_dtype_is_float(in))
            return jn_error(JN_ERR_TYPE,
                            "mean(): could not infer output dtype. Input dtype must be either a "
                            "floating point or complex dtype. Got: %s. Convert the input with "
                            ".float() or pass dtype=float32", jn_dtype_names[in]);
        *odt = want >= 0 ? (jn_dtype)want : in;
        break;
    case K_AMAX: case K_AMIN:
        if ((s = check_nonempty(x, mask, all, op))) return s;
        *odt = in;
        break;
    case K_VAR: case K_STD:
        if (!jn_dtype_is_float(in))
            return jn_error(JN_ERR_TYPE,
                            "%s(): std and var only support floating point and complex dtypes, "
                            "got %s; convert the input with .float()", op, jn_dtype_names[in]);
        *odt = in;
        break;
    case K_LSE:
        *odt = jn_dtype_is_float(in) ? in : JN_DEFAULT_DTYPE; /* ints and bool promote */
        break;
    default: /* all/any: bool, except uint8 stays uint8 (as PyTorch) */
        *odt = in == JN_U8 ? JN_U8 : JN_BOOL;
        break;
    }
    return JN_OK;
}

static jn_status red_infer(rkind k, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    uint8_t mask[JN_MAX_DIMS];
    int keepdim;
    jn_dtype odt;
    jn_status s = red_setup(k, in[0], a, mask, &keepdim, &odt);
    if (s) return s;
    red_shape(in[0], mask, keepdim, odt, &out[0]);
    if (k == K_MAXD || k == K_MIND) red_shape(in[0], mask, keepdim, JN_I64, &out[1]);
    return JN_OK;
}

static jn_status red_run(rkind k, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    const jn_tensor *x = in[0];
    uint8_t mask[JN_MAX_DIMS];
    int keepdim;
    jn_dtype odt;
    jn_status s = red_setup(k, x, a, mask, &keepdim, &odt);
    if (s) return s;
    rctx c = {odt, 1, 0, 0};
    for (int d = 0; d < x->ndim; d++)
        if (mask[d]) c.nred *= x->shape[d];
    jn_dtype dt = x->dtype;
    const reducer *R = NULL;
    switch (k) {
    case K_SUM: case K_PROD:
        if (odt == JN_BOOL) R = (k == K_SUM ? any_tab : all_tab)[dt]; /* + and * on bool: or, and */
        else if (jn_dtype_is_float(odt)) R = (k == K_SUM ? sumf_tab : prodf_tab)[dt];
        else R = (k == K_SUM ? sumi_tab : prodi_tab)[dt];
        break;
    case K_MEAN: R = sumf_tab[dt], c.flag = 1; break;
    case K_AMAX: R = max_tab[dt]; break;
    case K_AMIN: R = min_tab[dt]; break;
    case K_MAXD: R = argmax_tab[dt]; break;
    case K_MIND: R = argmin_tab[dt]; break;
    case K_ARGMAX: R = argmax_tab[dt], c.flag = 1; break;
    case K_ARGMIN: R = argmin_tab[dt], c.flag = 1; break;
    case K_VAR: case K_STD: R = var_tab[dt], c.corr = a->a[1].f, c.flag = k == K_STD; break;
    case K_LSE: R = lse_tab[dt]; break;
    case K_ALL: R = all_tab[dt]; break;
    case K_ANY: R = any_tab[dt]; break;
    }
    char *outs[2] = {jn_data(out[0]), (k == K_MAXD || k == K_MIND) ? jn_data(out[1]) : NULL};
    return run_reduce(x, mask, R, &c, outs);
}

#define RED_OP(name, kind)                                                                    \
    jn_status jn_infer_##name(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) { \
        return red_infer(kind, in, a, out);                                                   \
    }                                                                                         \
    jn_status jn_cpu_##name(int nin, jn_tensor *const *in, const jn_attrs *a,                 \
                            jn_tensor *const *out) {                                          \
        return red_run(kind, in, a, out);                                                     \
    }
RED_OP(sum, K_SUM)
RED_OP(mean, K_MEAN)
RED_OP(prod, K_PROD)
RED_OP(amax, K_AMAX)
RED_OP(amin, K_AMIN)
RED_OP(max_dim, K_MAXD)
RED_OP(min_dim, K_MIND)
RED_OP(argmax, K_ARGMAX)
RED_OP(argmin, K_ARGMIN)
RED_OP(var, K_VAR)
RED_OP(std, K_STD)
RED_OP(logsumexp, K_LSE)
RED_OP(all, K_ALL)
RED_OP(any, K_ANY)

/* -------------------------------------------------------------- softmax */
typedef struct {
    const char *x;
    char *y;
    int64_t O, L, I, nblk;
    int64_t ls, js; /* column kernels: element strides along dim and across softmaxes */
    int64_t blk;    /* column kernels: softmaxes per unit (<= SM_BLOCK) */
    int log;
} sm_plan;

#define SM_BLOCK 128

/* Row kernel (dim innermost): max, exp into y, sum in double, then scale
 * (softmax) or x - max - log(sum) (log_softmax); each loop vectorizes. */
#define DEF_SOFTMAX(sfx, CT, EXP)                                                         \
    HOT static void sm_rows_##sfx(int64_t b, int64_t e, void *ctx) {                      \
        const sm_plan *S = ctx;                                                           \
        int64_t L = S->L;                                                                 \
        for (int64_t o = b; o < e; o++) {                                                 \
            const CT *x = (const CT *)S->x + o * L;                                       \
            CT *y = (CT *)S->y + o * L;                                                   \
            CT l[NL], m = -INFINITY;                                                      \
            for (int k = 0; k < NL; k++) l[k] = -INFINITY;                                \
            int64_t i = 0;                                                                \
            for (; i + NL <= L; i += NL)                                                  \
                for (int k = 0; k < NL; k++) max_STEP_1(l[k], x[i + k]);                  \
            for (int k = 0; k < NL; k++) max_STEP_1(m, l[k]);                             \
            for (; i < L; i++) max_STEP_1(m, x[i]);                                       \
            double d[NL] = {0}, s = 0;                                                    \
            for (i = 0; i + NL <= L; i += NL)                                             \
                for (int k = 0; k < NL; k++) {                                            \
                    const CT ev = EXP(x[i + k] - m);                                      \
                    y[i + k] = ev;                                                        \
                    d[k] += (double)ev;                                                   \
                }                                                                         \
            for (; i < L; i++) s += (double)(y[i] = EXP(x[i] - m));                       \
            for (int k = 0; k < NL; k++) s += d[k];                                       \
            if (!S->log) {                                                                \
                const CT inv = (CT)(1.0 / s);                                             \
                for (i = 0; i < L; i++) y[i] *= inv;                                      \
            } else {                                                                      \
                const CT ls = (CT)log(s);                                                 \
                for (i = 0; i < L; i++) y[i] = (x[i] - m) - ls;                           \
            }                                                                             \
        }                                                                                 \
    }                                                                                     \
    DEF_SM_COLS(sm_cols_##sfx, CT, EXP, 1)                                                \
    DEF_SM_COLS(sm_tiny_##sfx, CT, EXP, S->js)

/* Column kernel: SM_BLOCK independent softmaxes side by side, element l of
 * softmax j at l * ls + j * JS.  With JS = 1 this is the dim-has-inner-dims
 * case (contiguous, vectorized); with JS = L it handles many tiny rows
 * without per-row overhead. */
#define DEF_SM_COLS(fn, CT, EXP, JS)                                                      \
    HOT static void fn(int64_t b, int64_t e, void *ctx) {                               \
        const sm_plan *S = ctx;                                                           \
        const int64_t L = S->L, I = S->I, ls = S->ls;                                     \
        CT m[SM_BLOCK], f[SM_BLOCK];                                                      \
        double s[SM_BLOCK];                                                               \
        for (int64_t u = b; u < e; u++) {                                                 \
            int64_t o = u / S->nblk, j0 = (u % S->nblk) * S->blk;                         \
            int64_t n = I - j0 < S->blk ? I - j0 : S->blk;                                \
            const CT *x = (const CT *)S->x + o * L * I + j0 * (JS);                       \
            CT *y = (CT *)S->y + o * L * I + j0 * (JS);                                   \
            for (int64_t j = 0; j < n; j++) m[j] = -INFINITY, s[j] = 0;                   \
            for (int64_t l = 0; l < L; l++)                                               \
                for (int64_t j = 0; j < n; j++) max_STEP_1(m[j], x[l * ls + j * (JS)]);   \
            for (int64_t l = 0; l < L; l++)                                               \
                for (int64_t j = 0; j < n; j++) {                                         \
                    const CT ev = EXP(x[l * ls + j * (JS)] - m[j]);                       \
                    y[l * ls + j * (JS)] = ev;                                            \
                    s[j] += (double)ev;                                                   \
                }                                                                         \
            if (!S->log) {                                                                \
                for (int64_t j = 0; j < n; j++) f[j] = (CT)(1.0 / s[j]);                  \
                for (int64_t l = 0; l < L; l++)                                           \
                    for (int64_t j = 0; j < n; j++) y[l * ls + j * (JS)] *= f[j];         \
            } else {                                                                      \
                for (int64_t j = 0; j < n; j++) f[j] = (CT)log(s[j]);                     \
                for (int64_t l = 0; l < L; l++)                                           \
                    for (int64_t j = 0; j < n; j++)                                       \
                        y[l * ls + j * (JS)] = (x[l * ls + j * (JS)] - m[j]) - f[j];      \
            }                                                                             \
        }                                                                                 \
    }
DEF_SOFTMAX(f32, float, jexpf)
DEF_SOFTMAX(f64, double, exp)

static jn_status sm_infer(const char *op, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    const jn_tensor *x = in[0];
    if (!jn_dtype_is_float(x->dtype))
        return jn_error(JN_ERR_TYPE,
                        "%s(): expected a floating point input, got %s; convert it with .float() "
                        "or pass dtype=float32", op, jn_dtype_names[x->dtype]);
    int64_t d = a->a[0].i;
    jn_status s = jn_wrap_dim(&d, x->ndim, op);
    if (s) return s;
    out->dtype = x->dtype;
    out->ndim = x->ndim;
    memcpy(out->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    return JN_OK;
}

static jn_status sm_run(const char *op, int log_, jn_tensor *const *in, const jn_attrs *a,
                        jn_tensor *const *out) {
    jn_meta m;
    jn_status s = sm_infer(op, in, a, &m);
    if (s) return s;
    jn_tensor *x = in[0], *y = out[0];
    if (jn_numel(x) == 0) return JN_OK;
    int64_t d = a->a[0].i;
    jn_wrap_dim(&d, x->ndim, op);
    sm_plan S = {0};
    S.log = log_;
    S.O = S.L = S.I = 1;
    for (int i = 0; i < x->ndim; i++) {
        if (i < d) S.O *= x->shape[i];
        else if (i == d) S.L = x->shape[i];
        else S.I *= x->shape[i];
    }
    /* compute in float32 (double for float64) on a contiguous input */
    jn_dtype cdt = x->dtype == JN_F64 ? JN_F64 : JN_F32;
    jn_tensor *xc = jn_to_dtype(x, cdt), *yc = y;
    if (!xc) return JN_ERR_NOMEM;
    if (y->dtype != cdt && !(yc = jn_tensor_new(cdt, y->ndim, y->shape))) {
        jn_tensor_decref(xc);
        return JN_ERR_NOMEM;
    }
    S.x = jn_data(xc);
    S.y = jn_data(yc);
    jn_range_fn fn;
    int64_t units, per;
    if (S.I == 1 && (S.L >= 32 || S.O < 64)) { /* a row per softmax */
        fn = cdt == JN_F64 ? sm_rows_f64 : sm_rows_f32;
        units = S.O, per = S.L;
    } else {
        if (S.I == 1) { /* many short rows: run them side by side as columns */
            S.I = S.O, S.O = 1, S.ls = 1, S.js = S.L;
            fn = cdt == JN_F64 ? sm_tiny_f64 : sm_tiny_f32;
        } else {
            S.ls = S.I, S.js = 1;
            fn = cdt == JN_F64 ? sm_cols_f64 : sm_cols_f32;
        }
        /* a unit's columns (L x blk) should stay in L2 across its three passes */
        S.blk = 262144 / S.L / 16 * 16;
        S.blk = S.blk < 16 ? 16 : S.blk > SM_BLOCK ? SM_BLOCK : S.blk;
        S.nblk = (S.I + S.blk - 1) / S.blk;
        units = S.O * S.nblk, per = S.L * (S.I < S.blk ? S.I : S.blk);
    }
    jn_parallel_for(units, per >= 16384 ? 1 : 16384 / per, fn, &S);
    if (yc != y) {
        s = jn_copy_into(y, yc);
        jn_tensor_decref(yc);
    }
    jn_tensor_decref(xc);
    return s;
}

jn_status jn_infer_softmax(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    return sm_infer("softmax", in, a, out);
}
jn_status jn_cpu_softmax(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return sm_run("softmax", 0, in, a, out);
}
jn_status jn_infer_log_softmax(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    return sm_infer("log_softmax", in, a, out);
}
jn_status jn_cpu_log_softmax(int nin, jn_tensor *const *in, const jn_attrs *a,
                             jn_tensor *const *out) {
    return sm_run("log_softmax", 1, in, a, out);
}
