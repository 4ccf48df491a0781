/* test_ewmath.c -- runtime/k_ewmath.h, the one definition of the
 * elementwise math.
 *
 * Coverage: every elementwise op of ops.def (JN_F_EW) has its function
 * families in the spec's id lists (JN_EW_ALL), no family is listed twice,
 * and every family names an elementwise op; cast is the one exception (a
 * conversion: tensor.c's loops and k_fastmath.h's sat_i64).
 *
 * Spec vs eager: every family of JN_EW_ALL, for every compute type it is
 * defined on (f32 f64 i64 i32 u8, bool), runs through jn_dispatch on edge
 * values -- NaN (both signs, with a payload), +-inf, +-0, denormals, the
 * largest and smallest normals, the integer types' extremes -- as every
 * pair (binary ops: a [E, 1] against b [E]) and with each attribute
 * variant (alphas, rounding modes, gelu's approximation, clamp bounds
 * given, missing, crossed, NaN, beyond the integer range), and each
 * element must equal the spec's function evaluated here bit for bit.  The
 * generated C kernels are compared with eager bit for bit on the same edge
 * values in test_emit.c (its edges_* cases), and test_emit_cuda.c compiles
 * those with NVRTC, so all three consumers are checked against one set of
 * formulas.  Plus where/masked_fill (whose eager loops select through a
 * bit mask) against the typed selects, and the fused optimizer steps
 * against adam_ / sgd_.
 */
#pragma GCC optimize("no-trapping-math", "fp-contract=off") /* as every consumer (k_ewmath.h) */
#include <stdint.h>

#include "jn_test.h"
#include "k_ewmath.h"

/* ------------------------------------------------------------ coverage */
typedef struct {
    const char *id, *op;
} family;
#define FAMILY_ROW(id, op, ...) {#id, #op},
static const family families[] = {JN_EW_ALL(FAMILY_ROW, )};
#define NFAM ((int)(sizeof families / sizeof families[0]))

static void test_coverage(void) {
    for (int i = 0; i < NFAM; i++) {
        for (int j = 0; j < i; j++) CHECK(strcmp(families[i].id, families[j].id) != 0);
        int op = jn_op_lookup(families[i].op);
        CHECK(op >= 0 && (jn_op_info((jn_op)op)->flags & JN_F_EW));
    }
    int ew = 0;
    for (int op = 0; op < JN_NOPS; op++) {
        const jn_opinfo *info = jn_op_info((jn_op)op);
        if (!(info->flags & JN_F_EW)) continue;
        ew++;
        int n = 0;
        for (int i = 0; i < NFAM; i++) n += !strcmp(families[i].op, info->name);
        if (!strcmp(info->name, "cast")) CHECK(n == 0);
        else CHECK(n >= 1);
        if (n == 0 && strcmp(info->name, "cast")) fprintf(stderr, "elementwise op %s has no formula in k_ewmath.h\n", info->name);
    }
    CHECK(ew == 45 && NFAM == 47); /* 44 ops with formulas + cast; div has 3 families, gelu 2 */
    if (ew != 45 || NFAM != 47) fprintf(stderr, "%d elementwise ops, %d families\n", ew, NFAM);
}

/* ------------------------------------------------------------ edge values */
static float f32_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static double f64_bits(uint64_t u) {
    double f;
    memcpy(&f, &u, 8);
    return f;
}
#define NF 31
static float ef32[NF];
static double ef64[NF];
static const double FEDGE[NF - 3] = {INFINITY, -INFINITY, 0.0, -0.0, 1, -1, 0.5, -0.5, 2, -2, 2.5, -2.5, 3, -3,
                                     0.1, 0.7, 10, 20, -20, 1e-8, 88.8, -104.5, 700, -750, 1e30, -1e30, 0.625, 4.5};
#define NI 19
static const int64_t IEDGE[NI] = {0, 1, -1, 2, -2, 3, -3, 7, -7, 127, 128, 255, 256, -128,
                                  INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, INT64_MIN + 1};

static void init_edges(void) {
    ef32[0] = NAN, ef32[1] = -NAN, ef32[2] = f32_bits(0x7fc01234u);
    ef64[0] = NAN, ef64[1] = -NAN, ef64[2] = f64_bits(0x7ff8000000abcdefull);
    for (int i = 3; i < NF; i++) ef32[i] = (float)FEDGE[i - 3], ef64[i] = FEDGE[i - 3];
    /* denormals, the smallest and largest normals */
    ef32[13] = f32_bits(1), ef32[14] = -f32_bits(0x00400000u), ef32[15] = 1.17549435e-38f, ef32[16] = 3.4028235e38f;
    ef64[13] = f64_bits(1), ef64[14] = -1e-310, ef64[15] = 2.2250738585072014e-308, ef64[16] = 1.7976931348623157e308;
}

/* An [n] or [n, 1] tensor of dtype d holding the edges of its class; skip0:
 * without zero (integer divisors). */
static jn_tensor *edges(jn_dtype d, int col, int skip0, int *n_out) {
    int64_t n = 0, buf[64];
    double fb[64];
    if (d == JN_F32 || d == JN_F64) {
        for (int i = 0; i < NF; i++) fb[n++] = d == JN_F32 ? ef32[i] : ef64[i];
    } else if (d == JN_BOOL) {
        buf[n++] = 0, buf[n++] = 1;
    } else {
        for (int i = 0; i < NI; i++) { /* skip0: no value that is 0 in d (256 is 0 in uint8) */
            uint64_t w = (uint64_t)IEDGE[i];
            if (!(skip0 && (d == JN_U8 ? (uint8_t)w : d == JN_I32 ? (uint32_t)w : w) == 0)) buf[n++] = IEDGE[i];
        }
    }
    int64_t shape[2] = {n, 1};
    jn_tensor *t = jn_tensor_new(d, col ? 2 : 1, shape);
    char *p = jn_data(t);
    for (int64_t i = 0; i < n; i++) {
        switch (d) {
        case JN_F32: ((float *)p)[i] = (float)fb[i]; break; /* NaN payloads survive the double round trip */
        case JN_F64: ((double *)p)[i] = fb[i]; break;
        case JN_I64: ((int64_t *)p)[i] = buf[i]; break;
        case JN_I32: ((int32_t *)p)[i] = (int32_t)(uint32_t)(uint64_t)buf[i]; break; /* wraps */
        default: ((uint8_t *)p)[i] = (uint8_t)(uint64_t)buf[i]; break;
        }
    }
    *n_out = (int)n;
    return t;
}

/* Bit for bit; the first difference is reported. */
static int same_bits(const void *got, const void *want, size_t es, int64_t n, const char *what) {
    for (int64_t i = 0; i < n; i++)
        if (memcmp((const char *)got + i * (int64_t)es, (const char *)want + i * (int64_t)es, es)) {
            uint64_t g = 0, w = 0;
            memcpy(&g, (const char *)got + i * (int64_t)es, es);
            memcpy(&w, (const char *)want + i * (int64_t)es, es);
            fprintf(stderr, "%s: element %lld: eager bits %llx, spec %llx\n", what, (long long)i, (unsigned long long)g,
                    (unsigned long long)w);
            return 0;
        }
    return 1;
}

/* ------------------------------------------- spec vs eager, per family */
/* One family on one compute type: the op and its attributes for variant
 * v (0 when there is none), and the expected values from the spec. */
typedef struct {
    const char *id;
    jn_dtype d; /* compute type (= the inputs' dtype) */
    int nin;    /* 1 unary, 2 binary */
    int divisor; /* integer division: no zero divisors */
    int out_bool;
    /* expected out[i * nb + j] (binary) or out[i] (unary) */
    void (*ref)(const void *a, const void *b, int na, int nb, void *out, const double *prm);
} fcase;

/* The attributes of variant v of family id; prm gets the parameters the
 * spec function takes.  0: no such variant. */
static int variant(const char *id, jn_dtype d, int v, jn_op *op, jn_attrs *a, double *prm) {
    memset(a, 0, sizeof *a);
    int fl = d == JN_F32 || d == JN_F64;
    for (int i = 0; i < NFAM; i++)
        if (!strcmp(families[i].id, id)) *op = (jn_op)jn_op_lookup(families[i].op);
    const jn_opinfo *info = jn_op_info(*op);
    for (int k = 0; k < info->nattrs; k++) {
        if (info->attr_kind[k] == JN_A_FLOAT) a->a[k].f = info->attr_default[k];
        else a->a[k].i = (int64_t)info->attr_default[k];
    }
    if (!strcmp(id, "add") || !strcmp(id, "sub")) {
        static const double fa[] = {1, 0.5, -2, 1e30}, ia[] = {1, -3, 7, 0};
        if (v >= 4) return 0;
        prm[0] = a->a[0].f = fl ? fa[v] : ia[v];
        return 1;
    }
    if (!strncmp(id, "div_", 4)) {
        a->a[0].i = !strcmp(id, "div_true") ? 0 : !strcmp(id, "div_trunc") ? 1 : 2;
        return v == 0;
    }
    if (!strncmp(id, "gelu_", 5)) {
        a->a[0].i = !strcmp(id, "gelu_tanh");
        return v == 0;
    }
    if (!strcmp(id, "clamp")) {
        /* bounds given, crossed, missing (NAN here), NaN, infinite, beyond
         * the integer types' range; integers take integral bounds only
         * (others make the result float) */
        static const double flo[] = {-1, 0.5, NAN, -3, NAN, -1, -INFINITY}, fhi[] = {1, 0.25, 2, NAN, 1, NAN, 7};
        static const int fnan[] = {0, 0, 0, 0, 1, 2, 0}; /* a NaN bound given: 1 min, 2 max */
        static const double ilo[] = {-1, 3, NAN, -3, 300, -3e9, 7}, ihi[] = {1, -2, 2, NAN, 400, 3e9, 7};
        if (v >= 7) return 0;
        double lo = fl ? flo[v] : ilo[v], hi = fl ? fhi[v] : ihi[v];
        int given_lo = !isnan(lo) || (fl && fnan[v] == 1), given_hi = !isnan(hi) || (fl && fnan[v] == 2);
        a->a[0].f = lo, a->a[1].f = hi, a->a[2].i = given_lo, a->a[3].i = given_hi;
        prm[0] = given_lo ? lo : -INFINITY;
        prm[1] = given_hi ? hi : INFINITY;
        return 1;
    }
    if (!strcmp(id, "masked_fill")) {
        static const double fv[] = {-1.5, 0, NAN, 3}, iv[] = {7, 255, 0, 3};
        if (v >= 4) return 0;
        prm[0] = a->a[0].f = fl ? fv[v] : iv[v];
        return 1;
    }
    return v == 0;
}

/* The expected values, from the spec's functions. */
#define REF_BIN(name, T, O, CALL)                                                                               \
    static void name(const void *a_, const void *b_, int na, int nb, void *o_, const double *prm) {           \
        const T *A = a_, *B = b_;                                                                               \
        O *o = o_;                                                                                              \
        int zd = 0;                                                                                             \
        (void)prm, (void)zd;                                                                                    \
        for (int i = 0; i < na; i++)                                                                            \
            for (int j = 0; j < nb; j++) {                                                                      \
                const T a = A[i], b = B[j];                                                                     \
                o[i * nb + j] = CALL;                                                                           \
            }                                                                                                   \
    }
#define REF_UN(name, T, O, PRE, CALL)                                                                           \
    static void name(const void *a_, const void *b_, int na, int nb, void *o_, const double *prm) {           \
        typedef T T_; /* for PRE */                                                                             \
        const T_ *A = a_;                                                                                       \
        O *o = o_;                                                                                              \
        (void)b_, (void)nb, (void)prm;                                                                          \
        PRE                                                                                                     \
        for (int i = 0; i < na; i++) {                                                                          \
            const T_ x = A[i];                                                                                  \
            o[i] = CALL;                                                                                        \
        }                                                                                                       \
    }
#define R_ALPHA_F(sfx, T, U, F, id) REF_BIN(ref_##id##_##sfx, T, T, jn_ew_##id##_##sfx(a, b, prm[0]))
#define R_ALPHA_I(sfx, T, U, F, id) REF_BIN(ref_##id##_##sfx, T, T, jn_ew_##id##_##sfx(a, b, (int64_t)prm[0]))
#define R_AB(sfx, T, U, F, id) REF_BIN(ref_##id##_##sfx, T, T, jn_ew_##id##_##sfx(a, b))
#define R_ZD(sfx, T, U, F, id) REF_BIN(ref_##id##_##sfx, T, T, jn_ew_##id##_##sfx(a, b, &zd))
#define R_CMP(sfx, T, U, F, id) REF_BIN(ref_##id##_##sfx, T, uint8_t, jn_ew_##id##_##sfx(a, b))
#define R_X(sfx, T, U, F, id) REF_UN(ref_##id##_##sfx, T, T, , jn_ew_##id##_##sfx(x))
#define R_ISNAN(sfx, T, U, F, id) REF_UN(ref_##id##_##sfx, T, uint8_t, , jn_ew_##id##_##sfx(x))
#define CLAMP_PRE(sfx) const T_ lo = jn_ew_clamp_bound_##sfx(prm[0]); const T_ hi = jn_ew_clamp_bound_##sfx(prm[1]);
#define R_CLAMP(sfx, T, U, F, id) REF_UN(ref_##id##_##sfx, T, T, CLAMP_PRE(sfx), jn_ew_##id##_##sfx(x, lo, hi))
#define R_LOGICAL(id, op, ...) REF_BIN(ref_##id##_b, uint8_t, uint8_t, jn_ew_##id##_b(a, b))

#define DEF_ALPHA(id, op, ...) JN_EW_FLOATS(R_ALPHA_F, id) JN_EW_INTS(R_ALPHA_I, id)
#define DEF_BINARY(id, op, ...) JN_EW_FLOATS(R_AB, id) JN_EW_INTS(R_AB, id)
#define DEF_DIVIDE(id, op, ...) JN_EW_FLOATS(R_AB, id) JN_EW_INTS(R_ZD, id)
#define DEF_BINARY_FLOAT(id, op, ...) JN_EW_FLOATS(R_AB, id)
#define DEF_COMPARE(id, op, ...) JN_EW_FLOATS(R_CMP, id) JN_EW_INTS(R_CMP, id)
#define DEF_UNARY(id, op, ...) JN_EW_FLOATS(R_X, id) JN_EW_INTS(R_X, id)
#define DEF_UNARY_FLOAT(id, op, ...) JN_EW_FLOATS(R_X, id)
JN_EW_ALPHA(DEF_ALPHA, )
JN_EW_BINARY(DEF_BINARY, )
JN_EW_DIVIDE(DEF_DIVIDE, )
JN_EW_BINARY_FLOAT(DEF_BINARY_FLOAT, )
JN_EW_COMPARE(DEF_COMPARE, )
JN_EW_LOGICAL(R_LOGICAL, )
JN_EW_UNARY(DEF_UNARY, )
JN_EW_UNARY_FLOAT(DEF_UNARY_FLOAT, )
JN_EW_ROUNDING(DEF_UNARY, )
JN_EW_FLOATS(R_ISNAN, isnan)
JN_EW_INTS(R_ISNAN, isnan)
JN_EW_FLOATS(R_CLAMP, clamp)
JN_EW_INTS(R_CLAMP, clamp)
REF_UN(ref_logical_not_b, uint8_t, uint8_t, , jn_ew_logical_not_b(x))

#define DT_f32 JN_F32
#define DT_f64 JN_F64
#define DT_i64 JN_I64
#define DT_i32 JN_I32
#define DT_u8 JN_U8
#define C_BIN(sfx, T, U, F, id) {#id, DT_##sfx, 2, 0, 0, ref_##id##_##sfx},
#define C_DIV_I(sfx, T, U, F, id) {#id, DT_##sfx, 2, 1, 0, ref_##id##_##sfx},
#define C_CMP(sfx, T, U, F, id) {#id, DT_##sfx, 2, 0, 1, ref_##id##_##sfx},
#define C_UN(sfx, T, U, F, id) {#id, DT_##sfx, 1, 0, 0, ref_##id##_##sfx},
#define C_UN_BOOL(sfx, T, U, F, id) {#id, DT_##sfx, 1, 0, 1, ref_##id##_##sfx},
#define CASES_BIN(id, op, ...) JN_EW_FLOATS(C_BIN, id) JN_EW_INTS(C_BIN, id)
#define CASES_DIVIDE(id, op, ...) JN_EW_FLOATS(C_BIN, id) JN_EW_INTS(C_DIV_I, id)
#define CASES_BIN_F(id, op, ...) JN_EW_FLOATS(C_BIN, id)
#define CASES_CMP(id, op, ...) JN_EW_FLOATS(C_CMP, id) JN_EW_INTS(C_CMP, id)
#define CASES_LOGICAL(id, op, ...) {#id, JN_BOOL, 2, 0, 1, ref_##id##_b},
#define CASES_UN(id, op, ...) JN_EW_FLOATS(C_UN, id) JN_EW_INTS(C_UN, id)
#define CASES_UN_F(id, op, ...) JN_EW_FLOATS(C_UN, id)

/* Every family of the spec on every type it is defined on (where and
 * masked_fill: test_selects). */
static const fcase fcases[] = {
    JN_EW_ALPHA(CASES_BIN, ) JN_EW_BINARY(CASES_BIN, ) JN_EW_DIVIDE(CASES_DIVIDE, )
    JN_EW_BINARY_FLOAT(CASES_BIN_F, ) JN_EW_COMPARE(CASES_CMP, ) JN_EW_LOGICAL(CASES_LOGICAL, )
    JN_EW_UNARY(CASES_UN, ) JN_EW_UNARY_FLOAT(CASES_UN_F, ) JN_EW_ROUNDING(CASES_UN, )
    JN_EW_FLOATS(C_UN_BOOL, isnan) JN_EW_INTS(C_UN_BOOL, isnan) JN_EW_FLOATS(C_UN, clamp) JN_EW_INTS(C_UN, clamp)
    {"logical_not", JN_BOOL, 1, 0, 1, ref_logical_not_b},
};

static void test_eager(void) {
    int ran = 0, seen[NFAM] = {0};
    for (size_t c = 0; c < sizeof fcases / sizeof fcases[0]; c++) {
        const fcase *f = &fcases[c];
        for (int v = 0;; v++) {
            jn_op op = JN_OP_add;
            jn_attrs at;
            double prm[2] = {0, 0};
            if (!variant(f->id, f->d, v, &op, &at, prm)) break;
            int na = 0, nb = 1;
            jn_tensor *in[2] = {edges(f->d, f->nin == 2, 0, &na), f->nin == 2 ? edges(f->d, 0, f->divisor, &nb) : NULL};
            jn_tensor *out[JN_MAX_OUTS] = {NULL};
            char what[128];
            snprintf(what, sizeof what, "%s on %s, variant %d", f->id, jn_dtype_names[f->d], v);
            jn_status st = jn_dispatch(op, f->nin, in, &at, out);
            CHECK(st == JN_OK);
            if (st) fprintf(stderr, "%s: %s\n", what, jn_errmsg());
            int64_t n = (int64_t)na * nb;
            jn_dtype od = f->out_bool ? JN_BOOL : f->d; /* the compute type, or bool */
            if (!st) CHECK(out[0]->dtype == od && jn_numel(out[0]) == n);
            if (!st && out[0]->dtype == od && jn_numel(out[0]) == n) {
                void *want = calloc((size_t)n, jn_dtype_size[od]);
                f->ref(jn_data(in[0]), f->nin == 2 ? jn_data(in[1]) : NULL, na, nb, want, prm);
                CHECK(same_bits(jn_data(out[0]), want, jn_dtype_size[od], n, what));
                free(want);
                ran++;
            }
            for (int i = 0; i < NFAM; i++) seen[i] |= !strcmp(families[i].id, f->id);
            jn_tensor_decref(out[0]);
            jn_tensor_decref(in[0]);
            jn_tensor_decref(in[1]);
        }
    }
    for (int i = 0; i < NFAM; i++) /* where, masked_fill: test_selects */
        CHECK(seen[i] || !strcmp(families[i].id, "where") || !strcmp(families[i].id, "masked_fill"));
    CHECK(ran > 200);
}

/* where and masked_fill on every type: eager (whose by-size loops call the
 * raw bit-mask selects) against the typed selects of generated code and
 * CUDA, and the raw selects against the typed ones. */
#define SELECTS(sfx, T, U, F, ...)                                                                              \
    {                                                                                                           \
        int na = 0, nb = 0;                                                                                     \
        jn_tensor *a = edges(DT_##sfx, 1, 0, &na), *b = edges(DT_##sfx, 0, 0, &nb);                             \
        const T *A = (const T *)jn_data(a), *B = (const T *)jn_data(b);                                                             \
        int64_t ws[3] = {2, 1, 1}, xs[2] = {2, nb}, ms[2] = {2, 1};                                             \
        jn_tensor *w = jn_tensor_new(JN_BOOL, 3, ws), *x = jn_tensor_new(DT_##sfx, 2, xs);                      \
        jn_tensor *m = jn_tensor_new(JN_BOOL, 2, ms);                                                           \
        ((uint8_t *)jn_data(w))[0] = ((uint8_t *)jn_data(m))[0] = 0;                                            \
        ((uint8_t *)jn_data(w))[1] = ((uint8_t *)jn_data(m))[1] = 1;                                            \
        memcpy(jn_data(x), B, sizeof(T) * (size_t)nb);                                                          \
        memcpy((T *)jn_data(x) + nb, B, sizeof(T) * (size_t)nb);                                                \
        T *want = calloc((size_t)(2 * na * nb), sizeof(T));                                                     \
        jn_tensor *in[3] = {w, a, b}, *out[JN_MAX_OUTS] = {NULL};                                               \
        jn_attrs at;                                                                                            \
        memset(&at, 0, sizeof at);                                                                              \
        CHECK(jn_dispatch(JN_OP_where, 3, in, &at, out) == JN_OK);                                              \
        for (int k = 0; k < 2; k++)                                                                             \
            for (int i = 0; i < na; i++)                                                                        \
                for (int j = 0; j < nb; j++) {                                                                  \
                    T r = jn_ew_where_##sfx((uint8_t)k, A[i], B[j]);                                            \
                    want[(k * na + i) * nb + j] = r;                                                            \
                    CHECK(raw_where(sizeof(T), (uint8_t)k, &A[i], &B[j], &r));                                  \
                }                                                                                               \
        if (out[0]) CHECK(same_bits(jn_data(out[0]), want, sizeof(T), 2 * (int64_t)na * nb, "where on " #sfx)); \
        jn_tensor_decref(out[0]);                                                                               \
        for (int v = 0;; v++) { /* masked_fill(x [2, nb], mask [2, 1] = {0, 1}, value) */                       \
            jn_op op;                                                                                           \
            double prm[2];                                                                                      \
            if (!variant("masked_fill", DT_##sfx, v, &op, &at, prm)) break;                                     \
            jn_tensor *mi[2] = {x, m}, *mo[JN_MAX_OUTS] = {NULL};                                               \
            CHECK(jn_dispatch(JN_OP_masked_fill, 2, mi, &at, mo) == JN_OK);                                     \
            const T fv = (T)prm[0];                                                                             \
            for (int k = 0; k < 2; k++)                                                                         \
                for (int j = 0; j < nb; j++) {                                                                  \
                    T r = jn_ew_masked_fill_##sfx(B[j], (uint8_t)k, fv);                                        \
                    want[k * nb + j] = r;                                                                       \
                    CHECK(raw_where(sizeof(T), (uint8_t)k, &fv, &B[j], &r));                                    \
                }                                                                                               \
            if (mo[0]) CHECK(same_bits(jn_data(mo[0]), want, sizeof(T), 2 * (int64_t)nb, "masked_fill on " #sfx)); \
            jn_tensor_decref(mo[0]);                                                                            \
        }                                                                                                       \
        free(want);                                                                                             \
        jn_tensor_decref(a);                                                                                    \
        jn_tensor_decref(b);                                                                                    \
        jn_tensor_decref(w);                                                                                    \
        jn_tensor_decref(x);                                                                                    \
        jn_tensor_decref(m);                                                                                    \
    }

/* The eager loops' bit-mask select on raw elements of es bytes (w ? *a :
 * *b) equals *want, the typed select's result. */
#define RAW_SEL(U)                                                                                              \
    {                                                                                                           \
        U ua, ub, r, m = JN_EW_MASK(U, w);                                                                      \
        memcpy(&ua, a, sizeof ua), memcpy(&ub, b, sizeof ub);                                                   \
        r = JN_EW_BITSEL(U, m, ua, ub);                                                                         \
        return !memcmp(&r, want, sizeof r) && JN_EW_where(w, ua, ub) == r;                                      \
    }
static int raw_where(size_t es, uint8_t w, const void *a, const void *b, const void *want) {
    switch (es) {
    case 1: RAW_SEL(uint8_t)
    case 2: RAW_SEL(uint16_t)
    case 4: RAW_SEL(uint32_t)
    default: RAW_SEL(uint64_t)
    }
}

static void test_selects(void) {
    JN_EW_FLOATS(SELECTS, )
    JN_EW_INTS(SELECTS, )
}

/* ------------------------------------------------ the optimizer steps */
#define ELEMS(t, T) ((T *)(void *)jn_data(t))
/* adam_ and sgd_ (k_fused.c's loops) against the spec's steps. */
static void test_optim(void) {
    int64_t n = 257;
    for (int f64 = 0; f64 < 2; f64++)
        for (int var = 0; var < 8; var++) {
            jn_dtype d = f64 ? JN_F64 : JN_F32;
            jn_tensor *t[4];
            for (int k = 0; k < 4; k++) {
                t[k] = jn_tensor_new(d, 1, &n);
                for (int64_t i = 0; i < n; i++) {
                    double v = sin((double)(i * 7 + k * 13)) * 3 + (k == 2 ? 3.5 : 0); /* exp_avg_sq >= 0 */
                    if (i == 5 && k == 3) v = 0;
                    jn_store_f64((char *)jn_data(t[k]) + i * (int64_t)jn_dtype_size[d], d, v);
                }
            }
            jn_tensor *ref[4];
            for (int k = 0; k < 4; k++) ref[k] = jn_contiguous(t[k]); /* a copy: t[k] is updated in place */
            jn_attrs a;
            memset(&a, 0, sizeof a);
            double lr = 1e-2, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = (var & 1) ? 0.01 : 0, step = 1 + var;
            a.a[0].f = lr, a.a[1].f = b1, a.a[2].f = b2, a.a[3].f = eps, a.a[4].f = wd, a.a[5].f = step;
            a.a[6].i = (var >> 1) & 1, a.a[7].i = (var >> 2) & 1;
            jn_tensor *o[JN_MAX_OUTS] = {NULL};
            CHECK(jn_dispatch(JN_OP_adam_, 4, t, &a, o) == JN_OK);
            /* the constants as jn_cpu_adam_ makes them */
            double c[8] = {1 - lr * wd, wd, 1 - b1, b2, 1 - b2, sqrt(1 - pow(b2, step)), eps, -(lr / (1 - pow(b1, step)))};
            for (int64_t i = 0; i < n; i++) {
                if (f64) {
                    double *p = ELEMS(ref[0], double), *m = ELEMS(ref[1], double), *v = ELEMS(ref[2], double), *g = ELEMS(ref[3], double);
                    jn_ew_adam_f64(&p[i], &m[i], &v[i], g[i], c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7],
                                   (int)a.a[6].i, (int)a.a[7].i, wd != 0);
                } else {
                    float *p = ELEMS(ref[0], float), *m = ELEMS(ref[1], float), *v = ELEMS(ref[2], float), *g = ELEMS(ref[3], float);
                    jn_ew_adam_f32(&p[i], &m[i], &v[i], g[i], (float)c[0], (float)c[1], (float)c[2], (float)c[3],
                                   (float)c[4], (float)c[5], (float)c[6], (float)c[7], (int)a.a[6].i, (int)a.a[7].i,
                                   wd != 0);
                }
            }
            for (int k = 0; k < 3; k++) CHECK(same_bits(jn_data(t[k]), jn_data(ref[k]), jn_dtype_size[d], n, "adam_"));
            for (int k = 0; k < 3; k++) jn_tensor_decref(o[k]);
            /* sgd_ on (param, buf, grad) = t[0], t[1], t[3] */
            memset(&a, 0, sizeof a);
            double mom = (var & 1) ? 0.9 : 0, damp = 0.1, swd = (var & 2) ? 1e-4 : 0;
            a.a[0].f = lr, a.a[1].f = mom, a.a[2].f = damp, a.a[3].f = swd;
            a.a[4].i = (var >> 2) & 1, a.a[5].i = var == 3, a.a[6].i = var == 5;
            jn_tensor *si[3] = {t[0], t[1], t[3]};
            CHECK(jn_dispatch(JN_OP_sgd_, 3, si, &a, o) == JN_OK);
            for (int64_t i = 0; i < n; i++) {
                if (f64) {
                    double *p = ELEMS(ref[0], double), *b = ELEMS(ref[1], double), *g = ELEMS(ref[3], double);
                    jn_ew_sgd_f64(&p[i], &b[i], g[i], -lr, mom, 1 - damp, swd, (int)a.a[5].i, swd != 0, (int)a.a[4].i,
                                  (int)a.a[6].i);
                } else {
                    float *p = ELEMS(ref[0], float), *b = ELEMS(ref[1], float), *g = ELEMS(ref[3], float);
                    jn_ew_sgd_f32(&p[i], &b[i], g[i], (float)-lr, (float)mom, (float)(1 - damp), (float)swd,
                                  (int)a.a[5].i, swd != 0, (int)a.a[4].i, (int)a.a[6].i);
                }
            }
            CHECK(same_bits(jn_data(t[0]), jn_data(ref[0]), jn_dtype_size[d], n, "sgd_ param"));
            CHECK(same_bits(jn_data(t[1]), jn_data(ref[1]), jn_dtype_size[d], n, "sgd_ buffer"));
            for (int k = 0; k < 2; k++) jn_tensor_decref(o[k]);
            for (int k = 0; k < 4; k++) jn_tensor_decref(t[k]), jn_tensor_decref(ref[k]);
        }
}

/* Integer division by zero: 0, and the flag set. */
static void test_zero_division(void) {
    int zd = 0;
    CHECK(jn_ew_div_trunc_i32(7, 0, &zd) == 0 && zd == 1);
    zd = 0;
    CHECK(jn_ew_remainder_u8(7, 0, &zd) == 0 && zd == 1);
    zd = 0;
    CHECK(jn_ew_div_floor_i64(INT64_MIN, -1, &zd) == INT64_MIN && zd == 0); /* wraps, no trap */
    CHECK(jn_ew_div_floor_i64(-7, 2, &zd) == -4 && jn_ew_remainder_i64(-7, 2, &zd) == 1 && zd == 0);
}

int main(void) {
    init_edges();
    test_coverage();
    test_eager();
    test_selects();
    test_optim();
    test_zero_division();
    JT_DONE();
}
