/* k_elementwise.c -- elementwise math, comparisons, selects, casts and fills.
 *
 * One engine runs every op here: ew_run() walks the broadcast output with
 * jn_nditer and calls a typed inner loop, in the manner of numpy's ufunc
 * loops.  Each op has a descriptor (ew_op) holding one inner loop per
 * compute dtype (float32, float64, int64, int32, uint8, bool).  The math
 * of every element is k_ewmath.h's (the one definition that the code
 * generators and the CUDA kernels share): the loops here are expanded from
 * its id lists and call its jn_ew_<id>_<sfx> functions, so this file holds
 * no formula of its own.  Each generated loop has fast paths for
 * contiguous operands (simple loops gcc vectorizes at -O3) and for a
 * stride-0 scalar operand.
 *
 * Operands whose dtype differs from what the loop wants (float16/bfloat16,
 * which compute in float32; mixed-dtype inputs; an out= destination of
 * another dtype) go through a buffered wrapper that converts blocks of
 * EW_CHUNK elements on the stack with the converting loops of tensor.c, so
 * no full-size temporaries are made.  Small or broadcast inputs are instead
 * converted once up front so the direct loops still run.
 *
 * Integer arithmetic wraps like PyTorch (computed through the unsigned twin
 * type, so no signed-overflow UB); integer division by zero is reported as a
 * ValueError ("ZeroDivisionError") after the loop, through a flag.
 */
#include "jn_runtime.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Let gcc if-convert float selects (x < lo ? lo : x) so those loops
 * vectorize (we never read the FP exception flags, results are unchanged),
 * and never contract a*b+c into an FMA, so the AVX2/AVX-512 clones below
 * give bit-identical results on every machine (traces replay exactly). */
#pragma GCC optimize("no-trapping-math", "fp-contract=off")

/* the integer division flag is shared by the pool's threads */
#define JN_EW_ZERO_DIV(zd) __atomic_store_n((zd), 1, __ATOMIC_RELAXED)
#include "k_ewmath.h" /* after the pragma: its functions (and k_fastmath.h's) get the same flags */

#define EW_CHUNK 512 /* elements per buffered block */

/* Scalar parameters an inner loop may read (through its ctx). */
typedef struct {
    double f0, f1;  /* alpha (float result) / clamp bounds */
    int64_t i0;     /* alpha (integer result) */
    uint64_t bits;  /* a fill value, stored in the operand's dtype */
    int err;        /* set (atomically) on integer division by zero */
} ew_params;

/* How an op's result dtype follows from its inputs. */
enum {
    RT_PROMOTE, /* jn_result_type of the inputs */
    RT_FLOAT,   /* same, but integral/bool results become float32 */
    RT_CMP,     /* bool result; compare in the promoted dtype */
    RT_LOGICAL, /* bool result; inputs read as truth values */
    RT_KEEP     /* the input's dtype; integers pass through unchanged */
};

typedef struct {
    const char *name;
    int rule;
    jn_loop_fn loop[JN_NDTYPES]; /* by compute dtype; NULL where undefined */
} ew_op;

/* --------------------------------------------------- inner loop makers */
/* Inside an inner loop: T is the compute type, P the ew_params, PRE
 * hoists the parameters EXPR reads into locals (P may alias the output),
 * EXPR computes one element from a, b (binary) or x. */
#define BIN_LOOP(name, IT, OT, PRE, EXPR)                                               \
    static void name(char **p_, const int64_t *s_, int64_t n_, void *ctx_) {            \
        typedef IT T;                                                                   \
        ew_params *P = ctx_;                                                            \
        (void)P;                                                                        \
        PRE                                                                             \
        const int64_t so = s_[0], sa = s_[1], sb = s_[2];                               \
        const int64_t E = (int64_t)sizeof(T), EO = (int64_t)sizeof(OT);                 \
        OT *o = (OT *)p_[0];                                                            \
        const T *A = (const T *)p_[1], *B = (const T *)p_[2];                           \
        if (so == EO && sa == E && sb == E) {                                           \
            for (int64_t i = 0; i < n_; i++) {                                          \
                const T a = A[i], b = B[i];                                             \
                o[i] = (EXPR);                                                          \
            }                                                                           \
        } else if (so == EO && sa == E && sb == 0) {                                    \
            const T b = *B;                                                             \
            for (int64_t i = 0; i < n_; i++) {                                          \
                const T a = A[i];                                                       \
                o[i] = (EXPR);                                                          \
            }                                                                           \
        } else if (so == EO && sa == 0 && sb == E) {                                    \
            const T a = *A;                                                             \
            for (int64_t i = 0; i < n_; i++) {                                          \
                const T b = B[i];                                                       \
                o[i] = (EXPR);                                                          \
            }                                                                           \
        } else {                                                                        \
            char *po = p_[0];                                                           \
            const char *pa = p_[1], *pb = p_[2];                                        \
            for (int64_t i = 0; i < n_; i++, po += so, pa += sa, pb += sb) {            \
                const T a = *(const T *)pa, b = *(const T *)pb;                         \
                *(OT *)po = (EXPR);                                                     \
            }                                                                           \
        }                                                                               \
    }

#define UN_LOOP(name, IT, OT, PRE, EXPR) UN_LOOP_A(name, IT, OT, , PRE, EXPR)
#define UN_LOOP_A(name, IT, OT, ATTR, PRE, EXPR)                                        \
    ATTR static void name(char **p_, const int64_t *s_, int64_t n_, void *ctx_) {       \
        typedef IT T;                                                                   \
        ew_params *P = ctx_;                                                            \
        (void)P;                                                                        \
        PRE                                                                             \
        const int64_t so = s_[0], sx = s_[1];                                           \
        if (so == (int64_t)sizeof(OT) && sx == (int64_t)sizeof(T)) {                    \
            OT *o = (OT *)p_[0];                                                        \
            const T *X = (const T *)p_[1];                                              \
            for (int64_t i = 0; i < n_; i++) {                                          \
                const T x = X[i];                                                       \
                o[i] = (EXPR);                                                          \
            }                                                                           \
        } else {                                                                        \
            char *po = p_[0];                                                           \
            const char *px = p_[1];                                                     \
            for (int64_t i = 0; i < n_; i++, po += so, px += sx) {                      \
                const T x = *(const T *)px;                                             \
                *(OT *)po = (EXPR);                                                     \
            }                                                                           \
        }                                                                               \
    }

/* ------------------------------------------------------------ op tables */
/* The loops of one function family of k_ewmath.h for one compute type
 * (sfx, T from its type lists): PRE(sfx), then CALL(id, sfx) per element. */
#define OUT_SAME(T) T
#define OUT_BOOL(T) uint8_t
#define LOOP_BIN(sfx, T, U, F, id, OUTM, PRE, CALL) BIN_LOOP(id##_##sfx, T, OUTM(T), PRE(sfx), CALL(id, sfx))
#define LOOP_UN(sfx, T, U, F, id, OUTM, PRE, CALL) UN_LOOP(id##_##sfx, T, OUTM(T), PRE(sfx), CALL(id, sfx))
/* The float32 math loops are compute-bound: build AVX2/AVX-512 clones too,
 * picked at load time (bit-identical results: no FP contraction). */
#if defined(__x86_64__) && defined(__ELF__) /* ifunc dispatch */
#define SIMD_f32 __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SIMD_f32
#endif
#define SIMD_f64
#define LOOP_UN_SIMD(sfx, T, U, F, id, OUTM, PRE, CALL)                                 \
    UN_LOOP_A(id##_##sfx, T, OUTM(T), SIMD_##sfx, PRE(sfx), CALL(id, sfx))
/* the parameters, hoisted */
#define NOPRE(sfx)
#define PRE_ALPHA_F(sfx) const double al = P->f0;
#define PRE_ALPHA_I(sfx) const int64_t al = P->i0;
#define PRE_CLAMP(sfx) const T lo = jn_ew_clamp_bound_##sfx(P->f0); const T hi = jn_ew_clamp_bound_##sfx(P->f1);
/* the calls, by argument list */
#define CALL_X(id, sfx) jn_ew_##id##_##sfx(x)
#define CALL_AB(id, sfx) jn_ew_##id##_##sfx(a, b)
#define CALL_ALPHA(id, sfx) jn_ew_##id##_##sfx(a, b, al)
#define CALL_ZD(id, sfx) jn_ew_##id##_##sfx(a, b, &P->err)
#define CALL_CLAMP(id, sfx) jn_ew_##id##_##sfx(x, lo, hi)

#define LOOPS_F(id) [JN_F32] = id##_f32, [JN_F64] = id##_f64
#define LOOPS_I(id) [JN_I64] = id##_i64, [JN_I32] = id##_i32, [JN_U8] = id##_u8

#define DEF_ALPHA(id, op, ...)                                                          \
    JN_EW_FLOATS(LOOP_BIN, id, OUT_SAME, PRE_ALPHA_F, CALL_ALPHA)                       \
    JN_EW_INTS(LOOP_BIN, id, OUT_SAME, PRE_ALPHA_I, CALL_ALPHA)                         \
    static const ew_op OP_##id = {#op, RT_PROMOTE, {LOOPS_F(id), LOOPS_I(id)}};
JN_EW_ALPHA(DEF_ALPHA, )

#define DEF_BINARY(id, op, ...)                                                         \
    JN_EW_FLOATS(LOOP_BIN, id, OUT_SAME, NOPRE, CALL_AB)                                \
    JN_EW_INTS(LOOP_BIN, id, OUT_SAME, NOPRE, CALL_AB)                                  \
    static const ew_op OP_##id = {#op, RT_PROMOTE, {LOOPS_F(id), LOOPS_I(id)}};
JN_EW_BINARY(DEF_BINARY, )

#define DEF_DIVIDE(id, op, ...)                                                         \
    JN_EW_FLOATS(LOOP_BIN, id, OUT_SAME, NOPRE, CALL_AB)                                \
    JN_EW_INTS(LOOP_BIN, id, OUT_SAME, NOPRE, CALL_ZD)                                  \
    static const ew_op OP_##id = {#op, RT_PROMOTE, {LOOPS_F(id), LOOPS_I(id)}};
JN_EW_DIVIDE(DEF_DIVIDE, )

#define DEF_BINARY_FLOAT(id, op, ...)                                                   \
    JN_EW_FLOATS(LOOP_BIN, id, OUT_SAME, NOPRE, CALL_AB)                                \
    static const ew_op OP_##id = {#op, RT_FLOAT, {LOOPS_F(id)}};
JN_EW_BINARY_FLOAT(DEF_BINARY_FLOAT, )

#define DEF_COMPARE(id, op, ...)                                                        \
    JN_EW_FLOATS(LOOP_BIN, id, OUT_BOOL, NOPRE, CALL_AB)                                \
    JN_EW_INTS(LOOP_BIN, id, OUT_BOOL, NOPRE, CALL_AB)                                  \
    static const ew_op OP_##id = {#op, RT_CMP, {LOOPS_F(id), LOOPS_I(id)}};
JN_EW_COMPARE(DEF_COMPARE, )

/* logical ops: inputs converted to bool (0/1) first */
#define DEF_LOGICAL(id, op, ...)                                                        \
    BIN_LOOP(id##_b, uint8_t, uint8_t, , CALL_AB(id, b))                                \
    static const ew_op OP_##id = {#op, RT_LOGICAL, {[JN_BOOL] = id##_b}};
JN_EW_LOGICAL(DEF_LOGICAL, )
UN_LOOP(logical_not_b, uint8_t, uint8_t, , CALL_X(logical_not, b))
static const ew_op OP_logical_not = {"logical_not", RT_LOGICAL, {[JN_BOOL] = logical_not_b}};

#define DEF_UNARY(id, op, ...)                                                          \
    JN_EW_FLOATS(LOOP_UN, id, OUT_SAME, NOPRE, CALL_X)                                  \
    JN_EW_INTS(LOOP_UN, id, OUT_SAME, NOPRE, CALL_X)                                    \
    static const ew_op OP_##id = {#op, RT_PROMOTE, {LOOPS_F(id), LOOPS_I(id)}};
JN_EW_UNARY(DEF_UNARY, )

#define DEF_UNARY_FLOAT(id, op, ...)                                                    \
    JN_EW_FLOATS(LOOP_UN_SIMD, id, OUT_SAME, NOPRE, CALL_X)                             \
    static const ew_op OP_##id = {#op, RT_FLOAT, {LOOPS_F(id)}};
JN_EW_UNARY_FLOAT(DEF_UNARY_FLOAT, )

/* rounding keeps the input's dtype (integers pass through) */
#define DEF_ROUNDING(id, op, ...)                                                       \
    JN_EW_FLOATS(LOOP_UN, id, OUT_SAME, NOPRE, CALL_X)                                  \
    JN_EW_INTS(LOOP_UN, id, OUT_SAME, NOPRE, CALL_X)                                    \
    static const ew_op OP_##id = {#op, RT_KEEP, {LOOPS_F(id), LOOPS_I(id)}};
JN_EW_ROUNDING(DEF_ROUNDING, )

JN_EW_FLOATS(LOOP_UN, isnan, OUT_BOOL, NOPRE, CALL_X)
JN_EW_INTS(LOOP_UN, isnan, OUT_BOOL, NOPRE, CALL_X)
static const ew_op OP_isnan = {"isnan", RT_CMP, {LOOPS_F(isnan), LOOPS_I(isnan)}};

/* clamp: P->f0, P->f1 the bounds (-inf / +inf where not given) */
JN_EW_FLOATS(LOOP_UN, clamp, OUT_SAME, PRE_CLAMP, CALL_CLAMP)
JN_EW_INTS(LOOP_UN, clamp, OUT_SAME, PRE_CLAMP, CALL_CLAMP)
static const ew_op OP_clamp = {"clamp", RT_PROMOTE, {LOOPS_F(clamp), LOOPS_I(clamp)}};

/* --------------------------------------- dtype-agnostic loops by size */
/* copy (o = x), fill (o = v), where (o = c ? a : b), masked fill
 * (o = m ? v : x): they only move elements, so one loop per element size.
 * The selects are k_ewmath.h's: through its all-ones/zero mask
 * (JN_EW_BITSEL) where contiguous, so random masks don't branch, else its
 * conditional (reading one operand). */
#define SIZED(M) M(1, uint8_t) M(2, uint16_t) M(4, uint32_t) M(8, uint64_t)
#define DEF_SIZED(N, T)                                                                 \
    static void copy_##N(char **p, const int64_t *s, int64_t n, void *ctx) {            \
        (void)ctx;                                                                      \
        if (s[0] == N && s[1] == N) {                                                   \
            memmove(p[0], p[1], (size_t)n * N);                                         \
            return;                                                                     \
        }                                                                               \
        for (int64_t i = 0; i < n; i++) *(T *)(p[0] + i * s[0]) = *(const T *)(p[1] + i * s[1]); \
    }                                                                                   \
    static void fill_##N(char **p, const int64_t *s, int64_t n, void *ctx) {            \
        T v;                                                                            \
        memcpy(&v, &((const ew_params *)ctx)->bits, N);                                 \
        if (s[0] == N) {                                                                \
            T *o = (T *)p[0];                                                           \
            for (int64_t i = 0; i < n; i++) o[i] = v;                                   \
        } else                                                                          \
            for (int64_t i = 0; i < n; i++) *(T *)(p[0] + i * s[0]) = v;                \
    }                                                                                   \
    static void where_##N(char **p, const int64_t *s, int64_t n, void *ctx) {           \
        (void)ctx;                                                                      \
        if (s[0] == N && s[1] == 1 && (s[2] == N || s[2] == 0) && (s[3] == N || s[3] == 0)) { \
            T *o = (T *)p[0];                                                           \
            const uint8_t *c = (const uint8_t *)p[1];                                   \
            const T *a = (const T *)p[2], *b = (const T *)p[3];                         \
            const int64_t ia = s[2] / N, ib = s[3] / N;                                 \
            if (ia && ib)                                                               \
                for (int64_t i = 0; i < n; i++) {                                       \
                    const T m = JN_EW_MASK(T, c[i]);                                    \
                    o[i] = JN_EW_BITSEL(T, m, a[i], b[i]);                              \
                }                                                                       \
            else                                                                        \
                for (int64_t i = 0; i < n; i++) {                                       \
                    const T m = JN_EW_MASK(T, c[i]);                                    \
                    o[i] = JN_EW_BITSEL(T, m, a[i * ia], b[i * ib]);                    \
                }                                                                       \
            return;                                                                     \
        }                                                                               \
        for (int64_t i = 0; i < n; i++) /* a conditional: one operand read */          \
            *(T *)(p[0] + i * s[0]) = JN_EW_where(*(const uint8_t *)(p[1] + i * s[1]),  \
                                                  *(const T *)(p[2] + i * s[2]),        \
                                                  *(const T *)(p[3] + i * s[3]));       \
    }                                                                                   \
    static void mfill_##N(char **p, const int64_t *s, int64_t n, void *ctx) {           \
        T v;                                                                            \
        memcpy(&v, &((const ew_params *)ctx)->bits, N);                                 \
        if (s[0] == N && s[1] == N && s[2] == 1) {                                      \
            T *o = (T *)p[0];                                                           \
            const T *x = (const T *)p[1];                                               \
            const uint8_t *mk = (const uint8_t *)p[2];                                  \
            for (int64_t i = 0; i < n; i++) {                                           \
                const T m = JN_EW_MASK(T, mk[i]);                                       \
                o[i] = JN_EW_BITSEL(T, m, v, x[i]);                                     \
            }                                                                           \
            return;                                                                     \
        }                                                                               \
        for (int64_t i = 0; i < n; i++)                                                 \
            *(T *)(p[0] + i * s[0]) =                                                   \
                JN_EW_masked_fill(*(const T *)(p[1] + i * s[1]), *(const uint8_t *)(p[2] + i * s[2]), v); \
    }
SIZED(DEF_SIZED)
#define BY_SIZE(f) {[1] = f##_1, [2] = f##_2, [4] = f##_4, [8] = f##_8}
static const jn_loop_fn copy_loops[9] = BY_SIZE(copy), fill_loops[9] = BY_SIZE(fill),
                        where_loops[9] = BY_SIZE(where), mfill_loops[9] = BY_SIZE(mfill);

/* ------------------------------------------------- block conversions */
/* The buffered path converts blocks with vectorizable loops; the
 * half-precision ones are branch-free and round exactly like jn_f32_to_f16 /
 * jn_f32_to_bf16 (nearest even; NaN stays NaN), which the tests check bit
 * for bit. */
static inline float f16_to_f32(uint16_t h) { /* F. Giesen's half_to_float */
    uint32_t o = (uint32_t)(h & 0x7fff) << 13, e = o & (0x7c00u << 13);
    o += (uint32_t)(127 - 15) << 23;
    uint32_t inf_nan = o + ((uint32_t)(128 - 16) << 23);
    float sub = bits_to_f32((int32_t)(o + (1u << 23))) - bits_to_f32(113 << 23);
    o = e == (0x7c00u << 13) ? inf_nan : e == 0 ? (uint32_t)f32_to_bits(sub) : o;
    return bits_to_f32((int32_t)(o | (uint32_t)(h & 0x8000) << 16));
}
static inline uint16_t f32_to_f16(float f) { /* F. Giesen's float_to_half_fast3_rtne */
    const uint32_t denorm_magic = ((127 - 15) + (23 - 10) + 1) << 23;
    uint32_t x = (uint32_t)f32_to_bits(f), sign = x & 0x80000000u;
    x ^= sign;
    uint32_t big = x > (255u << 23) ? 0x7e00 : 0x7c00;
    uint32_t sub = (uint32_t)f32_to_bits(fabsf(f) + bits_to_f32((int32_t)denorm_magic)) - denorm_magic;
    uint32_t norm = (x + ((uint32_t)(15 - 127) << 23) + 0xfff + ((x >> 13) & 1)) >> 13;
    uint32_t o = x >= (127u + 16) << 23 ? big : x < (113u << 23) ? sub : norm;
    return (uint16_t)(o | sign >> 16);
}
static inline float bf16_to_f32(uint16_t h) { return bits_to_f32((int32_t)((uint32_t)h << 16)); }
static inline uint16_t f32_to_bf16(float f) {
    uint32_t x = (uint32_t)f32_to_bits(f);
    uint32_t r = (x + 0x7fff + ((x >> 16) & 1)) >> 16;
    return (uint16_t)((x & 0x7fffffffu) > 0x7f800000u ? (x >> 16) | 0x40 : r);
}
#define HALF_CVT(name, ST, DT, FN)                                                      \
    SIMD_f32 static void name(char **p, const int64_t *s, int64_t n, void *ctx) {       \
        (void)ctx;                                                                      \
        if (s[0] == (int64_t)sizeof(DT) && s[1] == (int64_t)sizeof(ST)) {               \
            DT *o = (DT *)p[0];                                                         \
            const ST *x = (const ST *)p[1];                                             \
            for (int64_t i = 0; i < n; i++) o[i] = FN(x[i]);                            \
        } else                                                                          \
            for (int64_t i = 0; i < n; i++)                                             \
                *(DT *)(p[0] + i * s[0]) = FN(*(const ST *)(p[1] + i * s[1]));          \
    }
#define LOAD_AS_IS(x) (x)
#define LOAD_BOOL(x) ((x) != 0)
/* The exact conversions (to float, and integer widening) the buffered path
 * meets most (int/bool tensors mixed with float ones, float32 with
 * float64); the others (saturating float -> int, narrowing, -> bool) use
 * tensor.c's loops. */
#define FAST_CVTS(X)                                                                    \
    X(f16, uint16_t, f32, float, f16_to_f32) X(bf16, uint16_t, f32, float, bf16_to_f32) \
    X(f32, float, f16, uint16_t, f32_to_f16) X(f32, float, bf16, uint16_t, f32_to_bf16) \
    X(f64, double, f32, float, LOAD_AS_IS) X(i64, int64_t, f32, float, LOAD_AS_IS)      \
    X(i32, int32_t, f32, float, LOAD_AS_IS) X(u8, uint8_t, f32, float, LOAD_AS_IS)      \
    X(b, uint8_t, f32, float, LOAD_BOOL) X(f32, float, f64, double, LOAD_AS_IS)         \
    X(i64, int64_t, f64, double, LOAD_AS_IS) X(i32, int32_t, f64, double, LOAD_AS_IS)   \
    X(u8, uint8_t, f64, double, LOAD_AS_IS) X(b, uint8_t, f64, double, LOAD_BOOL)       \
    X(i32, int32_t, i64, int64_t, LOAD_AS_IS) X(u8, uint8_t, i64, int64_t, LOAD_AS_IS)  \
    X(b, uint8_t, i64, int64_t, LOAD_BOOL) X(u8, uint8_t, i32, int32_t, LOAD_AS_IS)     \
    X(b, uint8_t, i32, int32_t, LOAD_BOOL) X(b, uint8_t, u8, uint8_t, LOAD_BOOL)
#define DEF_FAST_CVT(sn, ST, dn, DT, FN) HALF_CVT(cvt_##sn##_##dn, ST, DT, FN)
FAST_CVTS(DEF_FAST_CVT)
#define DTYPE_f32 JN_F32
#define DTYPE_f64 JN_F64
#define DTYPE_f16 JN_F16
#define DTYPE_bf16 JN_BF16
#define DTYPE_i64 JN_I64
#define DTYPE_i32 JN_I32
#define DTYPE_u8 JN_U8
#define DTYPE_b JN_BOOL
#define FAST_CVT_ENTRY(sn, ST, dn, DT, FN) [DTYPE_##sn][DTYPE_##dn] = cvt_##sn##_##dn,
static const jn_loop_fn fast_cvt[JN_NDTYPES][JN_NDTYPES] = {FAST_CVTS(FAST_CVT_ENTRY)};

static jn_loop_fn convert_loop(jn_dtype from, jn_dtype to) {
    return fast_cvt[from][to] ? fast_cvt[from][to] : jn_rt_cast_loop(from, to);
}

/* -------------------------------------------------------------- engine */
typedef struct {
    jn_loop_fn fn;
    void *ctx;
    int nops;
    jn_dtype have[4], want[4];
    jn_loop_fn cvt[4]; /* have -> want for inputs, want -> have for the output */
} buf_ctx;

/* Run b->fn over blocks, converting operands whose dtype differs from the
 * loop's into stack buffers (inputs before, the output after). */
static void buffered_loop(char **p, const int64_t *s, int64_t n, void *vctx) {
    const buf_ctx *b = vctx;
    _Alignas(64) char buf[4][EW_CHUNK * 8];
    char *q[4];
    int64_t qs[4];
    for (int64_t i = 0; i < n; i += EW_CHUNK) {
        int64_t m = n - i < EW_CHUNK ? n - i : EW_CHUNK;
        for (int k = 0; k < b->nops; k++) {
            char *src = p[k] + i * s[k];
            if (b->have[k] == b->want[k]) {
                q[k] = src;
                qs[k] = s[k];
                continue;
            }
            q[k] = buf[k];
            qs[k] = (k > 0 && s[k] == 0) ? 0 : (int64_t)jn_dtype_size[b->want[k]];
            if (k == 0) continue;
            char *cp[2] = {buf[k], src};
            int64_t cs[2] = {qs[k], s[k]};
            b->cvt[k](cp, cs, s[k] == 0 ? 1 : m, NULL);
        }
        b->fn(q, qs, m, b->ctx);
        if (b->have[0] != b->want[0]) {
            char *cp[2] = {p[0] + i * s[0], buf[0]};
            int64_t cs[2] = {s[0], (int64_t)jn_dtype_size[b->want[0]]};
            b->cvt[0](cp, cs, m, NULL);
        }
    }
}

/* PyTorch refuses to write a tensor whose elements share memory. */
static jn_status check_writable(const char *name, const jn_tensor *out) {
    for (int d = 0; d < out->ndim; d++)
        if (out->shape[d] > 1 && out->strides[d] == 0)
            return jn_error(JN_ERR_RUNTIME,
                            "%s: unsupported operation: more than one element of the written-to "
                            "tensor refers to a single memory location (dim %d has stride 0); "
                            "clone() the tensor before writing to it",
                            name, d);
    return JN_OK;
}

/* Run fn over out's shape: operand 0 is out, 1..nin the (broadcast)
 * inputs.  want[k] is the dtype the loop expects for operand k. */
static jn_status ew_run(const char *name, int nin, jn_tensor *const *in, jn_tensor *out,
                        const jn_dtype *want, jn_loop_fn fn, ew_params *P) {
    jn_status s = check_writable(name, out);
    if (s) return s;
    int64_t total = jn_numel(out);
    if (total == 0) return JN_OK;
    int nd = out->ndim, nops = nin + 1, direct = 1;
    char *base[4];
    int64_t st[4][JN_MAX_DIMS];
    jn_tensor *tmp[3] = {NULL, NULL, NULL};
    buf_ctx b = {fn, P, nops, {out->dtype}, {want[0]}, {NULL}};
    base[0] = jn_data(out);
    for (int d = 0; d < nd; d++) st[0][d] = out->strides[d] * (int64_t)jn_elsize(out);
    for (int k = 0; k < nin; k++) {
        jn_tensor *t = in[k];
        /* scalars and broadcast inputs are converted once, up front */
        if (t->dtype != want[k + 1] && (t->ndim == 0 || jn_numel(t) * 2 <= total)) {
            if (!(tmp[k] = jn_to_dtype(t, want[k + 1]))) {
                s = JN_ERR_NOMEM;
                goto done;
            }
            t = tmp[k];
        }
        b.have[k + 1] = t->dtype;
        b.want[k + 1] = want[k + 1];
        base[k + 1] = jn_data(t);
        jn_broadcast_byte_strides(t, nd, out->shape, st[k + 1]);
    }
    b.cvt[0] = convert_loop(b.want[0], b.have[0]);
    for (int k = 1; k < nops; k++) b.cvt[k] = convert_loop(b.have[k], b.want[k]);
    for (int k = 0; k < nops; k++) direct &= b.have[k] == b.want[k];
    if (direct) jn_nditer(nops, base, nd, out->shape, st, fn, P, 1);
    else jn_nditer(nops, base, nd, out->shape, st, buffered_loop, &b, 1);
    if (P->err)
        s = jn_error(JN_ERR_VALUE, "%s: ZeroDivisionError: integer division by zero (the divisor "
                                   "holds a 0)", name);
done:
    for (int k = 0; k < nin; k++) jn_tensor_decref(tmp[k]);
    return s;
}

/* Write one value (given as double) everywhere in out. */
static jn_status fill_value(const char *name, jn_tensor *out, jn_dtype as, double v) {
    ew_params P = {0};
    jn_store_f64(&P.bits, as, v);
    return ew_run(name, 0, NULL, out, &as, fill_loops[jn_dtype_size[as]], &P);
}

/* ------------------------------------------------ generic infer / exec */
/* Prefix the last error message with the op name. */
static jn_status name_error(jn_status s, const char *name) {
    char msg[900];
    snprintf(msg, sizeof msg, "%s", jn_errmsg());
    return jn_error(s, "%s: %s", name, msg);
}

static jn_status broadcast_all(const char *name, int nin, jn_tensor *const *in, jn_meta *m) {
    m->ndim = 0;
    for (int i = 0; i < nin; i++) {
        jn_status s = jn_broadcast_shapes(m->ndim, m->shape, in[i]->ndim, in[i]->shape, &m->ndim,
                                          m->shape);
        if (s) return name_error(s, name);
    }
    return JN_OK;
}

static jn_dtype ew_result(const ew_op *op, int nin, jn_tensor *const *in) {
    jn_dtype r = jn_result_type(nin, in);
    switch (op->rule) {
    case RT_FLOAT: return jn_dtype_is_float(r) ? r : JN_DEFAULT_DTYPE;
    case RT_CMP: case RT_LOGICAL: return JN_BOOL;
    case RT_KEEP: return in[0]->dtype;
    default: return r;
    }
}

/* The dtype the inner loop computes in (from the inputs, never from out:
 * out= may hold another dtype). */
static jn_dtype ew_compute(const ew_op *op, int nin, jn_tensor *const *in) {
    if (op->rule == RT_LOGICAL) return JN_BOOL;
    jn_dtype r = jn_result_type(nin, in);
    if (op->rule == RT_FLOAT && !jn_dtype_is_float(r)) r = JN_DEFAULT_DTYPE;
    if (r == JN_F16 || r == JN_BF16) r = JN_F32;
    if (r == JN_BOOL && !op->loop[JN_BOOL]) r = JN_U8;
    return r;
}

static jn_status ew_infer(const ew_op *op, int nin, jn_tensor *const *in, jn_meta *m) {
    jn_status s = broadcast_all(op->name, nin, in, m);
    if (s) return s;
    m->dtype = ew_result(op, nin, in);
    return JN_OK;
}

static jn_status ew_exec(const ew_op *op, int nin, jn_tensor *const *in, jn_tensor *out,
                         ew_params *P) {
    jn_dtype want[4], c = ew_compute(op, nin, in);
    jn_loop_fn fn = op->loop[c];
    if (!fn)
        return jn_error(JN_ERR_UNSUPPORTED, "%s: not implemented for dtype %s", op->name,
                        jn_dtype_names[c]);
    want[0] = (op->rule == RT_CMP || op->rule == RT_LOGICAL) ? JN_BOOL : c;
    for (int k = 0; k < nin; k++) want[k + 1] = c;
    return ew_run(op->name, nin, in, out, want, fn, P);
}

#define EW_OP(id, OP)                                                                   \
    jn_status jn_infer_##id(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *m) { \
        return ew_infer(&OP, nin, in, m);                                               \
    }                                                                                   \
    jn_status jn_cpu_##id(int nin, jn_tensor *const *in, const jn_attrs *a,             \
                          jn_tensor *const *out) {                                      \
        ew_params P = {0};                                                              \
        return ew_exec(&OP, nin, in, out[0], &P);                                       \
    }
#define EW_SIMPLE(id, ...) EW_OP(id, OP_##id)
EW_SIMPLE(mul)
EW_SIMPLE(remainder)
EW_SIMPLE(maximum)
EW_SIMPLE(minimum)
EW_SIMPLE(atan2)
JN_EW_COMPARE(EW_SIMPLE, )
JN_EW_LOGICAL(EW_SIMPLE, )
EW_SIMPLE(logical_not)
EW_SIMPLE(abs)
EW_SIMPLE(sign)
EW_SIMPLE(exp)
EW_SIMPLE(log)
EW_SIMPLE(log1p)
EW_SIMPLE(expm1)
EW_SIMPLE(sqrt)
EW_SIMPLE(rsqrt)
EW_SIMPLE(reciprocal)
EW_SIMPLE(tanh)
EW_SIMPLE(sigmoid)
EW_SIMPLE(silu)
EW_SIMPLE(sin)
EW_SIMPLE(cos)
EW_SIMPLE(erf)
JN_EW_ROUNDING(EW_SIMPLE, )
EW_SIMPLE(isnan) /* integers are never NaN */

/* ------------------------------------------------ ops with extra rules */
static int any_bool(int nin, jn_tensor *const *in) {
    for (int i = 0; i < nin; i++)
        if (in[i]->dtype == JN_BOOL) return 1;
    return 0;
}

/* add/sub: integer results need an integral alpha. */
static jn_status alpha_params(const char *name, jn_dtype r, double alpha, ew_params *P) {
    P->f0 = alpha;
    if (jn_dtype_is_float(r)) return JN_OK;
    if (!(alpha == floor(alpha) && fabs(alpha) < 9.2e18))
        return jn_error(JN_ERR_TYPE, "%s: for integral input tensors (result dtype %s), argument "
                                     "alpha must be an integer, got %g", name, jn_dtype_names[r], alpha);
    P->i0 = (int64_t)alpha;
    return JN_OK;
}

static jn_status sub_check(int nin, jn_tensor *const *in) {
    if (nin == 2 && in[0]->dtype == JN_BOOL && in[1]->dtype == JN_BOOL)
        return jn_error(JN_ERR_TYPE, "sub: Subtraction, the `-` operator, with two bool tensors is "
                                     "not supported. Use the `^` or `logical_xor()` operator instead.");
    if (any_bool(nin, in))
        return jn_error(JN_ERR_TYPE, "sub: Subtraction, the `-` operator, with a bool tensor is not "
                                     "supported. If you are trying to invert a mask, use the `~` or "
                                     "`logical_not()` operator instead.");
    return JN_OK;
}

jn_status jn_infer_add(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *m) {
    ew_params P = {0};
    jn_status s = ew_infer(&OP_add, nin, in, m);
    return s ? s : alpha_params("add", m->dtype, a->a[0].f, &P);
}
jn_status jn_cpu_add(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    ew_params P = {0};
    jn_status s = alpha_params("add", jn_result_type(nin, in), a->a[0].f, &P);
    return s ? s : ew_exec(&OP_add, nin, in, out[0], &P);
}
jn_status jn_infer_sub(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *m) {
    ew_params P = {0};
    jn_status s = sub_check(nin, in);
    if (!s) s = ew_infer(&OP_sub, nin, in, m);
    return s ? s : alpha_params("sub", m->dtype, a->a[0].f, &P);
}
jn_status jn_cpu_sub(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    ew_params P = {0};
    jn_status s = sub_check(nin, in);
    if (!s) s = alpha_params("sub", jn_result_type(nin, in), a->a[0].f, &P);
    return s ? s : ew_exec(&OP_sub, nin, in, out[0], &P);
}

/* div: rounding_mode 0 = true division, 1 = 'trunc', 2 = 'floor'. */
static const ew_op *div_op(int64_t mode) {
    return mode == 0 ? &OP_div_true : mode == 1 ? &OP_div_trunc : mode == 2 ? &OP_div_floor : NULL;
}
jn_status jn_infer_div(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *m) {
    const ew_op *op = div_op(a->a[0].i);
    if (!op)
        return jn_error(JN_ERR_VALUE, "div: rounding_mode must be 0 (true division), 1 ('trunc') or "
                                      "2 ('floor'), got %lld", (long long)a->a[0].i);
    return ew_infer(op, nin, in, m);
}
jn_status jn_cpu_div(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    ew_params P = {0};
    const ew_op *op = div_op(a->a[0].i);
    jn_meta m;
    jn_status s = jn_infer_div(nin, in, a, &m);
    return s ? s : ew_exec(op, nin, in, out[0], &P);
}

/* pow: a negative Python-int exponent of an integer base is an error. */
jn_status jn_infer_pow(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *m) {
    return ew_infer(&OP_pow, nin, in, m);
}
jn_status jn_cpu_pow(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    ew_params P = {0};
    jn_dtype c = ew_compute(&OP_pow, nin, in);
    if (!jn_dtype_is_float(c) && in[1]->wrapped_number && !jn_dtype_is_float(in[1]->dtype) &&
        jn_load_i64(jn_data(in[1]), in[1]->dtype) < 0)
        return jn_error(JN_ERR_VALUE, "pow: Integers to negative integer powers are not allowed "
                                      "(base dtype %s); use a float base", jn_dtype_names[in[0]->dtype]);
    return ew_exec(&OP_pow, nin, in, out[0], &P);
}

/* neg/relu refuse bool like PyTorch. */
#define EW_NO_BOOL(id, MSG)                                                             \
    jn_status jn_infer_##id(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *m) { \
        if (in[0]->dtype == JN_BOOL) return jn_error(JN_ERR_TYPE, #id ": " MSG);        \
        return ew_infer(&OP_##id, nin, in, m);                                          \
    }                                                                                   \
    jn_status jn_cpu_##id(int nin, jn_tensor *const *in, const jn_attrs *a,             \
                          jn_tensor *const *out) {                                      \
        ew_params P = {0};                                                              \
        if (in[0]->dtype == JN_BOOL) return jn_error(JN_ERR_TYPE, #id ": " MSG);        \
        return ew_exec(&OP_##id, nin, in, out[0], &P);                                  \
    }
EW_NO_BOOL(neg, "Negation, the `-` operator, on a bool tensor is not supported. If you are "
                "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
EW_NO_BOOL(relu, "Boolean inputs not supported for relu")

/* gelu: approximate 0 = exact (erf), 1 = tanh. */
jn_status jn_infer_gelu(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *m) {
    if (a->a[0].i != 0 && a->a[0].i != 1)
        return jn_error(JN_ERR_VALUE, "gelu: approximate must be 0 ('none') or 1 ('tanh'), got %lld",
                        (long long)a->a[0].i);
    return ew_infer(&OP_gelu_erf, nin, in, m);
}
jn_status jn_cpu_gelu(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    ew_params P = {0};
    jn_status s = jn_infer_gelu(nin, in, a, &(jn_meta){0});
    return s ? s : ew_exec(a->a[0].i ? &OP_gelu_tanh : &OP_gelu_erf, nin, in, out[0], &P);
}

/* clamp: the result dtype is result_type(x, bounds).  The bounds arrive as
 * doubles, so an integral-valued bound counts as a Python int (an integer
 * tensor stays integral) and any other bound as a Python float. */
static int integral(double v) { return v == floor(v) && fabs(v) < 9.2e18; }

static jn_dtype clamp_result(const jn_tensor *x, const jn_attrs *a) {
    if (jn_dtype_is_float(x->dtype)) return x->dtype;
    if ((a->a[2].i && !integral(a->a[0].f)) || (a->a[3].i && !integral(a->a[1].f)))
        return JN_DEFAULT_DTYPE;
    return x->dtype == JN_BOOL ? JN_I64 : x->dtype;
}

jn_status jn_infer_clamp(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *m) {
    if (!a->a[2].i && !a->a[3].i)
        return jn_error(JN_ERR_VALUE, "clamp: at least one of 'min' or 'max' must not be None");
    jn_status s = broadcast_all("clamp", nin, in, m);
    m->dtype = clamp_result(in[0], a);
    return s;
}

static void int_range(jn_dtype d, int64_t *lo, int64_t *hi) {
    switch (d) {
    case JN_I32: *lo = INT32_MIN; *hi = INT32_MAX; break;
    case JN_U8: *lo = 0; *hi = 255; break;
    default: *lo = INT64_MIN; *hi = INT64_MAX; break;
    }
}

jn_status jn_cpu_clamp(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    ew_params P = {0};
    jn_meta m;
    jn_status s = jn_infer_clamp(nin, in, a, &m);
    if (s) return s;
    jn_dtype c = m.dtype == JN_F16 || m.dtype == JN_BF16 ? JN_F32 : m.dtype;
    P.f0 = a->a[2].i ? a->a[0].f : -INFINITY;
    P.f1 = a->a[3].i ? a->a[1].f : INFINITY;
    jn_dtype want[2] = {c, c};
    return ew_run("clamp", 1, in, out[0], want, OP_clamp.loop[c], &P);
}

/* where(cond, a, b): a pure select, so it runs on raw elements of the
 * result dtype (float16 included). */
jn_status jn_infer_where(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *m) {
    if (in[0]->dtype != JN_BOOL)
        return jn_error(JN_ERR_TYPE, "where: expected condition to be a boolean tensor, but got a "
                                     "tensor with dtype %s", jn_dtype_names[in[0]->dtype]);
    jn_status s = broadcast_all("where", nin, in, m);
    m->dtype = jn_result_type(2, in + 1);
    return s;
}
jn_status jn_cpu_where(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    ew_params P = {0};
    jn_meta m;
    jn_status s = jn_infer_where(nin, in, a, &m);
    if (s) return s;
    jn_dtype want[4] = {m.dtype, JN_BOOL, m.dtype, m.dtype};
    return ew_run("where", 3, in, out[0], want, where_loops[jn_dtype_size[m.dtype]], &P);
}

/* fill_ / masked_fill: an integer destination must hold the value. */
static jn_status check_fits(const char *name, double v, jn_dtype d) {
    if (!jn_dtype_is_int(d)) return JN_OK;
    int64_t lo, hi;
    int_range(d, &lo, &hi);
    if (!(v >= (double)lo && v < (double)hi + 1.0))
        return jn_error(JN_ERR_RUNTIME, "%s: value %g cannot be converted to type %s without overflow",
                        name, v, jn_dtype_names[d]);
    return JN_OK;
}

jn_status jn_infer_masked_fill(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *m) {
    const jn_tensor *x = in[0], *mask = in[1];
    char sa[128], sb[128];
    if (mask->dtype != JN_BOOL)
        return jn_error(JN_ERR_TYPE, "masked_fill: only boolean masks are supported, but got mask "
                                     "with dtype %s", jn_dtype_names[mask->dtype]);
    jn_status s = broadcast_all("masked_fill", nin, in, m);
    if (s || !jn_same_shape(m->ndim, m->shape, x->ndim, x->shape))
        return jn_error(JN_ERR_SHAPE, "masked_fill: mask of shape %s cannot be broadcast to the "
                                      "input shape %s",
                        jn_shape_str(mask->ndim, mask->shape, sa, sizeof sa),
                        jn_shape_str(x->ndim, x->shape, sb, sizeof sb));
    m->dtype = x->dtype;
    return check_fits("masked_fill", a->a[0].f, x->dtype);
}
jn_status jn_cpu_masked_fill(int nin, jn_tensor *const *in, const jn_attrs *a,
                             jn_tensor *const *out) {
    ew_params P = {0};
    jn_meta m;
    jn_status s = jn_infer_masked_fill(nin, in, a, &m);
    if (s) return s;
    jn_store_f64(&P.bits, m.dtype, a->a[0].f);
    jn_dtype want[3] = {m.dtype, m.dtype, JN_BOOL};
    return ew_run("masked_fill", 2, in, out[0], want, mfill_loops[jn_dtype_size[m.dtype]], &P);
}

/* cast(x, dtype) */
jn_status jn_infer_cast(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *m) {
    if (a->a[0].i < 0 || a->a[0].i >= JN_NDTYPES)
        return jn_error(JN_ERR_VALUE, "cast: a target dtype is required (got dtype code %lld)",
                        (long long)a->a[0].i);
    jn_status s = broadcast_all("cast", nin, in, m);
    m->dtype = (jn_dtype)a->a[0].i;
    return s;
}
jn_status jn_cpu_cast(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    ew_params P = {0};
    jn_meta m;
    jn_status s = jn_infer_cast(nin, in, a, &m);
    if (s || (s = check_writable("cast", out[0]))) return s;
    if (out[0]->dtype == m.dtype) return jn_copy_into(out[0], in[0]);
    /* out= of another dtype: round to the target dtype first */
    jn_dtype want[2] = {m.dtype, m.dtype};
    return ew_run("cast", 1, in, out[0], want, copy_loops[jn_dtype_size[m.dtype]], &P);
}

/* copy_(dst, src): src broadcast into dst, converting dtype. */
jn_status jn_infer_copy_(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *m) {
    const jn_tensor *dst = in[0], *src = in[1];
    char sa[128], sb[128];
    int nd;
    int64_t shape[JN_MAX_DIMS];
    jn_status s = jn_broadcast_shapes(dst->ndim, dst->shape, src->ndim, src->shape, &nd, shape);
    if (s || !jn_same_shape(nd, shape, dst->ndim, dst->shape))
        return jn_error(JN_ERR_SHAPE, "copy_: the source of shape %s cannot be broadcast to the "
                                      "destination shape %s",
                        jn_shape_str(src->ndim, src->shape, sa, sizeof sa),
                        jn_shape_str(dst->ndim, dst->shape, sb, sizeof sb));
    m->dtype = dst->dtype;
    m->ndim = dst->ndim;
    memcpy(m->shape, dst->shape, sizeof m->shape);
    return JN_OK;
}
/* Byte range [lo, hi) a tensor's elements span. */
static void byte_extent(const jn_tensor *t, uintptr_t *lo, uintptr_t *hi) {
    intptr_t a = 0, b = 0, es = (intptr_t)jn_elsize(t);
    for (int d = 0; d < t->ndim; d++) {
        intptr_t span = (intptr_t)(t->shape[d] - 1) * (intptr_t)t->strides[d] * es;
        if (span < 0) a += span;
        else b += span;
    }
    *lo = (uintptr_t)jn_data(t) + (uintptr_t)a;
    *hi = (uintptr_t)jn_data(t) + (uintptr_t)b + (uintptr_t)es;
}

jn_status jn_cpu_copy_(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_tensor *dst = out[0], *src = in[1];
    jn_meta m;
    jn_status s = jn_infer_copy_(nin, in, a, &m);
    if (s || (s = check_writable("copy_", dst)) || jn_numel(dst) == 0) return s;
    if (jn_numel(src) == 0) return JN_OK;
    int same = jn_data(src) == jn_data(dst) && src->dtype == dst->dtype &&
               jn_same_shape(src->ndim, src->shape, dst->ndim, dst->shape) &&
               !memcmp(src->strides, dst->strides, sizeof(int64_t) * (size_t)dst->ndim);
    if (same) return JN_OK;
    /* a source overlapping dst in another layout (compared by address, so
     * separately imported views of one buffer count too) is read from a copy */
    uintptr_t slo, shi, dlo, dhi;
    byte_extent(src, &slo, &shi);
    byte_extent(dst, &dlo, &dhi);
    if (slo < dhi && dlo < shi) {
        jn_tensor *c = jn_contiguous(src);
        if (!c) return JN_ERR_NOMEM;
        s = jn_copy_into(dst, c);
        jn_tensor_decref(c);
        return s;
    }
    return jn_copy_into(dst, src);
}

/* fill_(x, value) */
jn_status jn_infer_fill_(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *m) {
    m->dtype = in[0]->dtype;
    m->ndim = in[0]->ndim;
    memcpy(m->shape, in[0]->shape, sizeof m->shape);
    return check_fits("fill_", a->a[0].f, in[0]->dtype);
}
jn_status jn_cpu_fill_(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_meta m;
    jn_status s = jn_infer_fill_(nin, in, a, &m);
    return s ? s : fill_value("fill_", out[0], out[0]->dtype, a->a[0].f);
}
