/* k_fused.c -- fused RNN cells (LSTM, GRU) and optimizer updates (Adam, SGD).
 *
 * An eager LSTM step written with table ops is two GEMMs and a dozen tiny
 * pointwise ops forward (add, four chunk views, three sigmoids, three tanhs,
 * three muls, an add) and about twice as many backward; at small batch
 * sizes their dispatch, allocation and autograd bookkeeping cost more than
 * the arithmetic.  lstm_cell / gru_cell do the pointwise part in one pass
 * and keep what their backward needs (activated gates, the previous state,
 * tanh(c')) in a workspace output, so autograd saves only the outputs and
 * the gate pre-activations die right away; their *_backward ops (used by
 * the derivative table) turn the output gradients into gate gradients in
 * one more pass.  The activations are the elementwise ops' own functions
 * (k_ewmath.h's sigmoid and tanh, no FMA contraction), so the fused
 * forward is bit-identical to the unfused one.
 *
 * adam_ and sgd_ are torch.optim's single-tensor updates, computed with the
 * same operation order (and float32 rounding points) as the unfused update
 * janus.optim writes with in-place ops, in one pass instead of eight; they
 * write their first inputs in place (the dispatcher bumps every written
 * tensor's version).
 *
 * Every kernel works on [rows, H] blocks of contiguous memory; other
 * layouts are copied contiguous first (the cells' inputs are GEMM outputs,
 * so this is rare).  Rows are split over the thread pool when the work is
 * large.  float32 and float64 only: the Python modules fall back to the
 * unfused ops for the half types.
 */
#include "jn_runtime.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#pragma GCC optimize("no-trapping-math", "fp-contract=off")

#include "k_ewmath.h" /* after the pragma: its functions get the same flags */

#define SIMD __attribute__((target_clones("avx512f", "avx2", "default")))
#define PAR_ELEMS 32768 /* below this many elements a kernel runs on the caller's thread */

static const char *dn(jn_dtype d) { return jn_dtype_names[d]; }


/* ------------------------------------------------------------ checking */
static jn_status check_dtype(const char *op, int nin, jn_tensor *const *in) {
    jn_dtype d = in[0]->dtype;
    if (d != JN_F32 && d != JN_F64)
        return jn_error(JN_ERR_TYPE, "%s: only float32 and float64 are supported, got %s (use the unfused ops)", op,
                        dn(d));
    for (int i = 1; i < nin; i++)
        if (in[i]->dtype != d)
            return jn_error(JN_ERR_TYPE, "%s: input %d has dtype %s but input 0 has %s; all inputs must have one dtype",
                            op, i, dn(in[i]->dtype), dn(d));
    return JN_OK;
}

/* t must have shape lead + [width]. */
static jn_status check_shape(const char *op, int i, const jn_tensor *t, int nd, const int64_t *lead, int64_t width) {
    int64_t want[JN_MAX_DIMS];
    memcpy(want, lead, sizeof(int64_t) * (size_t)(nd - 1));
    want[nd - 1] = width;
    if (!jn_same_shape(t->ndim, t->shape, nd, want)) {
        char s1[160], s2[160];
        return jn_error(JN_ERR_SHAPE, "%s: input %d has shape %s, expected %s", op, i,
                        jn_shape_str(t->ndim, t->shape, s1, sizeof s1), jn_shape_str(nd, want, s2, sizeof s2));
    }
    return JN_OK;
}

/* The last dim of a cell's [..., g*H] tensor (`what`: gates or workspace). */
static jn_status gate_width(const char *op, const char *what, const jn_tensor *t, int g, int64_t *H) {
    if (t->ndim < 1)
        return jn_error(JN_ERR_SHAPE, "%s: the %s must have at least 1 dim ([..., %d*hidden]), got a 0-d tensor", op,
                        what, g);
    int64_t w = t->shape[t->ndim - 1];
    if (w % g) {
        char s1[160];
        return jn_error(JN_ERR_SHAPE, "%s: the last dim of the %s must be %d*hidden, got shape %s", op, what, g,
                        jn_shape_str(t->ndim, t->shape, s1, sizeof s1));
    }
    *H = w / g;
    return JN_OK;
}

static void meta_of(jn_meta *m, jn_dtype d, int nd, const int64_t *lead, int64_t width) {
    m->dtype = d;
    m->ndim = nd;
    memcpy(m->shape, lead, sizeof(int64_t) * (size_t)(nd - 1));
    m->shape[nd - 1] = width;
}

/* Contiguous versions of the inputs (new references; NULL entries on OOM). */
static jn_status contig_all(int nin, jn_tensor *const *in, jn_tensor **c) {
    jn_status s = JN_OK;
    for (int i = 0; i < nin; i++) {
        if (jn_is_contiguous(in[i])) {
            c[i] = in[i];
            jn_tensor_incref(in[i]);
        } else if (!(c[i] = jn_contiguous(in[i]))) {
            s = JN_ERR_NOMEM;
        }
    }
    return s;
}
static void release_all(int n, jn_tensor **c) {
    for (int i = 0; i < n; i++) jn_tensor_decref(c[i]);
}

/* ---------------------------------------------------------------- rows */
/* Row kernels: n rows of width H; every operand contiguous.  One typed copy
 * per dtype, through a macro, as in k_elementwise.c. */
#define LSTM_FWD(SUF, T, SIG, TANH)                                                                         \
    SIMD static void lstm_fwd_##SUF(int64_t r0, int64_t r1, int64_t H, const T *restrict gx,                \
                                    const T *restrict gh, const T *restrict c, T *restrict h2,              \
                                    T *restrict c2, T *restrict ws) {                                       \
        for (int64_t r = r0; r < r1; r++) {                                                                 \
            const T *restrict x = gx + r * 4 * H, *restrict y = gh + r * 4 * H;                             \
            const T *restrict cr = c + r * H;                                                               \
            T *restrict w = ws + r * 6 * H, *restrict hr = h2 + r * H, *restrict cn = c2 + r * H;           \
            _Pragma("GCC ivdep") for (int64_t j = 0; j < H; j++) {                                          \
                T i = SIG(x[j] + y[j]), f = SIG(x[H + j] + y[H + j]);                                       \
                T g = TANH(x[2 * H + j] + y[2 * H + j]), o = SIG(x[3 * H + j] + y[3 * H + j]);              \
                T cc = f * cr[j] + i * g, tc = TANH(cc);                                                    \
                cn[j] = cc;                                                                                 \
                hr[j] = o * tc;                                                                             \
                w[j] = i;                                                                                   \
                w[H + j] = f;                                                                               \
                w[2 * H + j] = g;                                                                           \
                w[3 * H + j] = o;                                                                           \
                w[4 * H + j] = cr[j];                                                                       \
                w[5 * H + j] = tc;                                                                          \
            }                                                                                               \
        }                                                                                                   \
    }
LSTM_FWD(f32, float, jn_ew_sigmoid_f32, jn_ew_tanh_f32)
LSTM_FWD(f64, double, jn_ew_sigmoid_f64, jn_ew_tanh_f64)

#define LSTM_BWD(SUF, T)                                                                                    \
    SIMD static void lstm_bwd_##SUF(int64_t r0, int64_t r1, int64_t H, const T *restrict dh,                \
    const T *restrict dc, const T *restrict ws, T *restrict dg,                                             \
    T *restrict dcp) {                                                                                      \
    for (int64_t r = r0; r < r1; r++) {                                                                     \
    const T *restrict w = ws + r * 6 * H, *restrict dhr = dh + r * H, *restrict dcr = dc + r * H;           \
    T *restrict d = dg + r * 4 * H, *restrict dp = dcp + r * H;                                             \
    _Pragma("GCC ivdep") for (int64_t j = 0; j < H; j++) {                                                  \
    T i = w[j], f = w[H + j], g = w[2 * H + j], o = w[3 * H + j], c = w[4 * H + j];                         \
    T tc = w[5 * H + j];                                                                                    \
    T dcs = dcr[j] + dhr[j] * o * (1 - tc * tc);                                                            \
    d[j] = dcs * g * (i * (1 - i));                                                                         \
    d[H + j] = dcs * c * (f * (1 - f));                                                                     \
                d[2 * H + j] = dcs * i * (1 - g * g);                                                       \
                d[3 * H + j] = dhr[j] * tc * (o * (1 - o));                                                 \
                dp[j] = dcs * f;                                                                            \
            }                                                                                               \
        }                                                                                                   \
    }
LSTM_BWD(f32, float)
LSTM_BWD(f64, double)

#define GRU_FWD(SUF, T, SIG, TANH)                                                                          \
    SIMD static void gru_fwd_##SUF(int64_t r0, int64_t r1, int64_t H, const T *restrict gx,                 \
                                   const T *restrict gh, const T *restrict h, T *restrict h2,               \
                                   T *restrict ws) {                                                        \
        for (int64_t r = r0; r < r1; r++) {                                                                 \
            const T *restrict x = gx + r * 3 * H, *restrict y = gh + r * 3 * H;                             \
            const T *restrict hr = h + r * H;                                                               \
            T *restrict w = ws + r * 5 * H, *restrict out = h2 + r * H;                                     \
            _Pragma("GCC ivdep") for (int64_t j = 0; j < H; j++) {                                          \
                T rg = SIG(x[j] + y[j]), z = SIG(x[H + j] + y[H + j]), hn = y[2 * H + j];                   \
                T n = TANH(x[2 * H + j] + rg * hn);                                                         \
                out[j] = (1 - z) * n + z * hr[j];                                                           \
                w[j] = rg;                                                                                  \
                w[H + j] = z;                                                                               \
                w[2 * H + j] = n;                                                                           \
                w[3 * H + j] = hn;                                                                          \
                w[4 * H + j] = hr[j];                                                                       \
            }                                                                                               \
        }                                                                                                   \
    }
GRU_FWD(f32, float, jn_ew_sigmoid_f32, jn_ew_tanh_f32)
GRU_FWD(f64, double, jn_ew_sigmoid_f64, jn_ew_tanh_f64)

#define GRU_BWD(SUF, T)                                                                                     \
    SIMD static void gru_bwd_##SUF(int64_t r0, int64_t r1, int64_t H, const T *restrict dh,                 \
    const T *restrict ws, T *restrict dgx, T *restrict dgh,                                                 \
    T *restrict dhp) {                                                                                      \
    for (int64_t r = r0; r < r1; r++) {                                                                     \
    const T *restrict w = ws + r * 5 * H, *restrict dr = dh + r * H;                                        \
            T *restrict a = dgx + r * 3 * H, *restrict b = dgh + r * 3 * H, *restrict p = dhp + r * H;      \
            _Pragma("GCC ivdep") for (int64_t j = 0; j < H; j++) {                                          \
                T rg = w[j], z = w[H + j], n = w[2 * H + j], hn = w[3 * H + j], g = dr[j];                  \
                T dn = g * (1 - z) * (1 - n * n);                                                           \
                T dz = g * (w[4 * H + j] - n) * (z * (1 - z));                                              \
                T drg = dn * hn * (rg * (1 - rg));                                                          \
                a[j] = b[j] = drg;                                                                          \
                a[H + j] = b[H + j] = dz;                                                                   \
                a[2 * H + j] = dn;                                                                          \
                b[2 * H + j] = dn * rg;                                                                     \
                p[j] = g * z;                                                                               \
            }                                                                                               \
        }                                                                                                   \
    }
GRU_BWD(f32, float)
GRU_BWD(f64, double)

/* One context for every row kernel: up to 8 operand pointers. */
typedef struct {
    int kind;   /* K_* below */
    int f64;
    int64_t H;
    const void *in[5];
    void *out[3];
} rows_job;
enum { K_LSTM_FWD, K_LSTM_BWD, K_GRU_FWD, K_GRU_BWD };

static void run_rows(int64_t r0, int64_t r1, void *ctx) {
    const rows_job *j = ctx;
    const void *const *i = j->in;
    void *const *o = j->out;
    switch (j->kind * 2 + j->f64) {
    case K_LSTM_FWD * 2: lstm_fwd_f32(r0, r1, j->H, i[0], i[1], i[2], o[0], o[1], o[2]); break;
    case K_LSTM_FWD * 2 + 1: lstm_fwd_f64(r0, r1, j->H, i[0], i[1], i[2], o[0], o[1], o[2]); break;
    case K_LSTM_BWD * 2: lstm_bwd_f32(r0, r1, j->H, i[0], i[1], i[2], o[0], o[1]); break;
    case K_LSTM_BWD * 2 + 1: lstm_bwd_f64(r0, r1, j->H, i[0], i[1], i[2], o[0], o[1]); break;
    case K_GRU_FWD * 2: gru_fwd_f32(r0, r1, j->H, i[0], i[1], i[2], o[0], o[1]); break;
    case K_GRU_FWD * 2 + 1: gru_fwd_f64(r0, r1, j->H, i[0], i[1], i[2], o[0], o[1]); break;
    case K_GRU_BWD * 2: gru_bwd_f32(r0, r1, j->H, i[0], i[1], o[0], o[1], o[2]); break;
    case K_GRU_BWD * 2 + 1: gru_bwd_f64(r0, r1, j->H, i[0], i[1], o[0], o[1], o[2]); break;
    default: break;
    }
}

/* Run a row kernel over contiguous copies of the inputs; `state` is an
 * operand of shape [..., H] (its element count / H = the row count). */
static jn_status exec_rows(int kind, int nin, jn_tensor *const *in, int nout, jn_tensor *const *out,
                           const jn_tensor *state, int64_t width) {
    int64_t H = state->shape[state->ndim - 1];
    jn_tensor *c[5] = {0};
    jn_status s = contig_all(nin, in, c);
    if (s) {
        release_all(nin, c);
        return s;
    }
    rows_job j;
    memset(&j, 0, sizeof j);
    j.kind = kind;
    j.f64 = in[0]->dtype == JN_F64;
    j.H = H;
    for (int i = 0; i < nin; i++) j.in[i] = jn_data(c[i]);
    for (int k = 0; k < nout; k++) j.out[k] = jn_data(out[k]);
    int64_t rows = H ? jn_numel(state) / H : 0;
    int64_t grain = width ? PAR_ELEMS / width + 1 : rows;
    if (rows && H) jn_parallel_for(rows, grain, run_rows, &j);
    release_all(nin, c);
    return JN_OK;
}

/* ------------------------------------------------------------ lstm_cell */
jn_status jn_infer_lstm_cell(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    (void)a;
    int64_t H;
    jn_status s = check_dtype("lstm_cell", nin, in);
    if (!s) s = gate_width("lstm_cell", "gates", in[0], 4, &H);
    const jn_tensor *x = in[0];
    int nd = x->ndim;
    if (!s) s = check_shape("lstm_cell", 1, in[1], nd, x->shape, 4 * H);
    if (!s) s = check_shape("lstm_cell", 2, in[2], nd, x->shape, H);
    if (s) return s;
    meta_of(&out[0], x->dtype, nd, x->shape, H);
    meta_of(&out[1], x->dtype, nd, x->shape, H);
    meta_of(&out[2], x->dtype, nd, x->shape, 6 * H);
    return JN_OK;
}

jn_status jn_cpu_lstm_cell(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    (void)a;
    return exec_rows(K_LSTM_FWD, nin, in, 3, out, in[2], in[0]->shape[in[0]->ndim - 1]);
}

jn_status jn_infer_lstm_cell_backward(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    (void)a;
    int64_t H;
    jn_status s = check_dtype("lstm_cell_backward", nin, in);
    if (!s) s = gate_width("lstm_cell_backward", "workspace", in[2], 6, &H);
    const jn_tensor *w = in[2];
    int nd = w->ndim;
    for (int i = 0; i < 2 && !s; i++) s = check_shape("lstm_cell_backward", i, in[i], nd, w->shape, H);
    if (s) return s;
    meta_of(&out[0], w->dtype, nd, w->shape, 4 * H);
    meta_of(&out[1], w->dtype, nd, w->shape, H);
    return JN_OK;
}

jn_status jn_cpu_lstm_cell_backward(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    (void)a;
    return exec_rows(K_LSTM_BWD, nin, in, 2, out, in[0], in[2]->shape[in[2]->ndim - 1]);
}

/* ------------------------------------------------------------- gru_cell */
jn_status jn_infer_gru_cell(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    (void)a;
    int64_t H;
    jn_status s = check_dtype("gru_cell", nin, in);
    if (!s) s = gate_width("gru_cell", "gates", in[0], 3, &H);
    const jn_tensor *x = in[0];
    int nd = x->ndim;
    if (!s) s = check_shape("gru_cell", 1, in[1], nd, x->shape, 3 * H);
    if (!s) s = check_shape("gru_cell", 2, in[2], nd, x->shape, H);
    if (s) return s;
    meta_of(&out[0], x->dtype, nd, x->shape, H);
    meta_of(&out[1], x->dtype, nd, x->shape, 5 * H);
    return JN_OK;
}

jn_status jn_cpu_gru_cell(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    (void)a;
    return exec_rows(K_GRU_FWD, nin, in, 2, out, in[2], out[1]->shape[out[1]->ndim - 1]);
}

jn_status jn_infer_gru_cell_backward(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    (void)a;
    int64_t H;
    jn_status s = check_dtype("gru_cell_backward", nin, in);
    if (!s) s = gate_width("gru_cell_backward", "workspace", in[1], 5, &H);
    const jn_tensor *w = in[1];
    int nd = w->ndim;
    if (!s) s = check_shape("gru_cell_backward", 0, in[0], nd, w->shape, H);
    if (s) return s;
    meta_of(&out[0], w->dtype, nd, w->shape, 3 * H);
    meta_of(&out[1], w->dtype, nd, w->shape, 3 * H);
    meta_of(&out[2], w->dtype, nd, w->shape, H);
    return JN_OK;
}

jn_status jn_cpu_gru_cell_backward(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    (void)a;
    return exec_rows(K_GRU_BWD, nin, in, 3, out, in[0], in[1]->shape[in[1]->ndim - 1]);
}

/* ---------------------------------------------------------- optimizers */
/* The in-place updates need one shape, one dtype, contiguous memory (the
 * optimizer's own state always is; Python falls back otherwise), and the
 * `nwritten` tensors they write must not overlap any other input
 * (the loops read and write each element once, through restrict pointers). */
static jn_status check_update(const char *op, int nin, int nwritten, jn_tensor *const *in,
                              const char *const *names) {
    jn_status s = check_dtype(op, nin, in);
    if (s) return s;
    for (int i = 0; i < nwritten; i++)
        for (int k = 0; k < nin; k++)
            if (k != i && jn_rt_may_overlap(in[i], in[k]))
                return jn_error(JN_ERR_VALUE, "%s: %s and %s share memory; the update writes %s in place", op,
                                names[k < i ? k : i], names[k < i ? i : k], names[i]);
    for (int i = 0; i < nin; i++) {
        char s1[160], s2[160];
        if (!jn_same_shape(in[i]->ndim, in[i]->shape, in[0]->ndim, in[0]->shape))
            return jn_error(JN_ERR_SHAPE, "%s: %s has shape %s but param has shape %s", op, names[i],
                            jn_shape_str(in[i]->ndim, in[i]->shape, s1, sizeof s1),
                            jn_shape_str(in[0]->ndim, in[0]->shape, s2, sizeof s2));
        if (!jn_is_contiguous(in[i]))
            return jn_error(JN_ERR_VALUE, "%s: %s must be contiguous (use the unfused update for strided tensors)", op,
                            names[i]);
    }
    return JN_OK;
}

static void same_meta(jn_meta *out, int n, const jn_tensor *t) {
    for (int k = 0; k < n; k++) {
        out[k].dtype = t->dtype;
        out[k].ndim = t->ndim;
        memcpy(out[k].shape, t->shape, sizeof t->shape);
    }
}

static const char *const adam_names[4] = {"param", "exp_avg", "exp_avg_sq", "grad"};

jn_status jn_infer_adam_(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    jn_status s = check_update("adam_", nin, 3, in, adam_names);
    if (s) return s;
    if (!(a->a[5].f >= 1))
        return jn_error(JN_ERR_VALUE, "adam_: step must be >= 1 (the count after this update), got %g", a->a[5].f);
    same_meta(out, 3, in[0]);
    return JN_OK;
}

typedef struct {
    void *p, *m, *v;
    const void *g;
    int f64, decoupled, maximize, has_wd;
    double decay, wd, w1, b2, w2, bc2_sqrt, eps, neg_step;
} adam_job;

/* The unfused update's operations in its order and precision (the step
 * is k_ewmath.h's jn_ew_adam_, shared with the CUDA kernel):
 *   g = -g; p = p * (1 - lr wd) | g = g + wd p; m = m + (1 - b1) (g - m);
 *   v = v b2; v = v + (1 - b2) (g g); p = p + (-lr/bc1) (m / (sqrt(v) / sqrt(bc2) + eps)) */
#define ADAM(SUF, T)                                                                                        \
    SIMD static void adam_##SUF(const adam_job *j, int64_t i0, int64_t i1) {                                \
        T *restrict p = j->p, *restrict m = j->m, *restrict v = j->v;                                       \
        const T *restrict gr = j->g;                                                                        \
        const T decay = (T)j->decay, wd = (T)j->wd, w1 = (T)j->w1, b2 = (T)j->b2, w2 = (T)j->w2;            \
        const T bc = (T)j->bc2_sqrt, eps = (T)j->eps, ns = (T)j->neg_step;                                  \
        const int dec = j->decoupled, hw = j->has_wd, mx = j->maximize;                                     \
        for (int64_t i = i0; i < i1; i++)                                                                   \
            jn_ew_adam_##SUF(&p[i], &m[i], &v[i], gr[i], decay, wd, w1, b2, w2, bc, eps, ns, dec, mx, hw);  \
    }
ADAM(f32, float)
ADAM(f64, double)

static void adam_range(int64_t i0, int64_t i1, void *ctx) {
    const adam_job *j = ctx;
    if (j->f64) adam_f64(j, i0, i1);
    else adam_f32(j, i0, i1);
}

jn_status jn_cpu_adam_(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    (void)nin; (void)out;
    double lr = a->a[0].f, b1 = a->a[1].f, b2 = a->a[2].f, eps = a->a[3].f, wd = a->a[4].f, step = a->a[5].f;
    adam_job j;
    memset(&j, 0, sizeof j);
    j.p = jn_data(in[0]);
    j.m = jn_data(in[1]);
    j.v = jn_data(in[2]);
    j.g = jn_data(in[3]);
    j.f64 = in[0]->dtype == JN_F64;
    j.decoupled = a->a[6].i != 0;
    j.maximize = a->a[7].i != 0;
    j.has_wd = wd != 0;
    j.decay = 1 - lr * wd;
    j.wd = wd;
    j.w1 = 1 - b1;
    j.b2 = b2;
    j.w2 = 1 - b2;
    j.bc2_sqrt = sqrt(1 - pow(b2, step));
    j.eps = eps;
    j.neg_step = -(lr / (1 - pow(b1, step)));
    jn_parallel_for(jn_numel(in[0]), PAR_ELEMS, adam_range, &j);
    return JN_OK;
}

static const char *const sgd_names[3] = {"param", "momentum_buffer", "grad"};

jn_status jn_infer_sgd_(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    (void)a;
    jn_status s = check_update("sgd_", nin, 2, in, sgd_names);
    if (s) return s;
    same_meta(out, 2, in[0]);
    return JN_OK;
}

typedef struct {
    void *p, *buf;
    const void *g;
    int f64, maximize, has_wd, nesterov, first;
    double neg_lr, mom, damp, wd;
} sgd_job;

/* g = -g; g = g + wd p; buf = g (first) | buf = buf mom + (1 - damp) g;
 * g = g + mom buf (nesterov) | g = buf; p = p + (-lr) g (jn_ew_sgd_) */
#define SGD(SUF, T)                                                                                         \
    SIMD static void sgd_##SUF(const sgd_job *j, int64_t i0, int64_t i1) {                                  \
        T *restrict p = j->p, *restrict buf = j->buf;                                                       \
        const T *restrict gr = j->g;                                                                        \
        const T nl = (T)j->neg_lr, mom = (T)j->mom, damp = (T)j->damp, wd = (T)j->wd;                       \
        const int mx = j->maximize, hw = j->has_wd, nest = j->nesterov, first = j->first;                   \
        for (int64_t i = i0; i < i1; i++) jn_ew_sgd_##SUF(&p[i], &buf[i], gr[i], nl, mom, damp, wd, mx, hw, nest, first); \
    }
SGD(f32, float)
SGD(f64, double)

static void sgd_range(int64_t i0, int64_t i1, void *ctx) {
    const sgd_job *j = ctx;
    if (j->f64) sgd_f64(j, i0, i1);
    else sgd_f32(j, i0, i1);
}

jn_status jn_cpu_sgd_(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    (void)nin; (void)out;
    sgd_job j;
    memset(&j, 0, sizeof j);
    j.p = jn_data(in[0]);
    j.buf = jn_data(in[1]);
    j.g = jn_data(in[2]);
    j.f64 = in[0]->dtype == JN_F64;
    j.neg_lr = -a->a[0].f;
    j.mom = a->a[1].f;
    j.damp = 1 - a->a[2].f;
    j.wd = a->a[3].f;
    j.has_wd = a->a[3].f != 0;
    j.nesterov = a->a[4].i != 0;
    j.maximize = a->a[5].i != 0;
    j.first = a->a[6].i != 0;
    jn_parallel_for(jn_numel(in[0]), PAR_ELEMS, sgd_range, &j);
    return JN_OK;
}
