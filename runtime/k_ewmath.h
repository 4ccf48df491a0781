/* k_ewmath.h -- the per-element math of every elementwise op, written once.
 *
 * Each formula here is the one definition of what an elementwise op of
 * ops.def computes for one element, per class of compute type where the
 * classes differ: float (float32, float64; float16/bfloat16 compute in
 * float32), integer (int64, int32, uint8, wrapping like PyTorch through
 * the unsigned twin type; bool arithmetic computes as uint8) and bool (0/1
 * truth values).  The formulas are expanded into functions
 *
 *     jn_ew_<id>_<sfx>(operands..., parameters...)
 *
 * sfx one of f32 f64 (float), i64 i32 u8 (integer), b (bool); the
 * selects on raw elements are macros (JN_EW_BITSEL).  Every consumer calls
 * these and writes no math of its own:
 *
 *   runtime/k_elementwise.c   the eager CPU loops, expanded from the id
 *                             lists below (JN_EW_UNARY_FLOAT, ...)
 *   codegen/emit_ops.c        the member statements of generated C and
 *                             CUDA call them; emit_c.c and emit_cuda.c embed
 *                             this file's text (CMake, as k_fastmath.h)
 *   runtime/cuda/kernels.cu   the eager CUDA kernel (nvcc)
 *   runtime/k_fused.c         (and kernels.cu) the cells' activations and
 *                             the optimizer steps (jn_ew_adam_, jn_ew_sgd_)
 *
 * so eager, generated and CUDA kernels compute the same bits, given no FP
 * contraction anywhere (the fp-contract=off pragma / -ffp-contract=off,
 * nvcc --fmad=false, NVRTC -fmad=false); the libm calls (pow, atan2,
 * log1p, expm1, sin, cos, and exp/log/tanh/erf in float64) are the
 * platform's, so CUDA matches those within its documented ulps only.
 *
 * Parameters come as the attribute's own type (alpha and clamp bounds as
 * double, an integer alpha as int64) and are converted here.  Integer
 * division by zero gives 0 and sets *zd through JN_EW_ZERO_DIV (define it
 * before including to make the store atomic).
 *
 * It must compile as C11 (gcc, clang), under nvcc (host and device) and
 * under NVRTC (device only, -default-device), and stay self-contained
 * (k_fastmath.h, <math.h>, <stdint.h>): the emitters drop the include
 * lines and their generated prologue provides those.  Include it after
 * `#pragma GCC optimize("no-trapping-math", "fp-contract=off")` (or compile
 * with -ffp-contract=off), as k_fastmath.h.
 */
#ifndef JN_K_EWMATH_H
#define JN_K_EWMATH_H

#include <math.h>
#include <stdint.h>

#include "k_fastmath.h"

#if defined(__CUDACC__)
#define JN_EW_FN static __forceinline__ __host__ __device__
#elif defined(__GNUC__)
#define JN_EW_FN static inline __attribute__((always_inline))
#else
#define JN_EW_FN static inline
#endif

/* A module uses few of these (CUDA: no "declared but never referenced"),
 * and uint8's `x < 0` is constant false by design. */
#if defined(__CUDACC__)
#pragma nv_diag_suppress 177
#pragma nv_diag_suppress 186
#elif defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtype-limits"
#endif

#ifndef JN_EW_ZERO_DIV
#define JN_EW_ZERO_DIV(zd) (*(zd) = 1)
#endif

/* ---------------------------------------------------------- the types */
/* Compute types: suffix, C type, unsigned twin, libm suffix (sinf / sin). */
#define JN_EW_FLOATS(M, ...) M(f32, float, uint32_t, f, __VA_ARGS__) M(f64, double, uint64_t, , __VA_ARGS__)
#define JN_EW_INTS(M, ...)                                                                              \
    M(i64, int64_t, uint64_t, , __VA_ARGS__) M(i32, int32_t, uint32_t, , __VA_ARGS__)                   \
    M(u8, uint8_t, uint8_t, , __VA_ARGS__)
#define JN_EW_LO_i64 INT64_MIN
#define JN_EW_HI_i64 INT64_MAX
#define JN_EW_LO_i32 INT32_MIN
#define JN_EW_HI_i32 INT32_MAX
#define JN_EW_LO_u8 0
#define JN_EW_HI_u8 255

/* libm by type (sqrtf / sqrt); the fast float32 functions of k_fastmath.h,
 * libm's for float64 */
#define JN_EW_FAST(name, F) JN_EW_FAST_##name##F
#define JN_EW_FAST_expf fast_expf
#define JN_EW_FAST_exp exp
#define JN_EW_FAST_logf fast_logf
#define JN_EW_FAST_log log
#define JN_EW_FAST_tanhf fast_tanhf
#define JN_EW_FAST_tanh tanh
#define JN_EW_FAST_erff fast_erff
#define JN_EW_FAST_erf erf

/* ------------------------------------------------------------ helpers */
/* Integer division, remainder and power for every integer type, done in
 * int64 (int32/uint8 values fit; results wrap when narrowed back).
 * b == -1 is special-cased because INT64_MIN / -1 traps. */
JN_EW_FN int64_t jn_ew_idiv_trunc(int64_t a, int64_t b, int *zd) {
    if (b == 0) { JN_EW_ZERO_DIV(zd); return 0; }
    if (b == -1) return (int64_t)(0 - (uint64_t)a);
    return a / b;
}
JN_EW_FN int64_t jn_ew_idiv_floor(int64_t a, int64_t b, int *zd) {
    if (b == 0) { JN_EW_ZERO_DIV(zd); return 0; }
    if (b == -1) return (int64_t)(0 - (uint64_t)a);
    int64_t q = a / b, r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}
JN_EW_FN int64_t jn_ew_irem(int64_t a, int64_t b, int *zd) {
    if (b == 0) { JN_EW_ZERO_DIV(zd); return 0; }
    if (b == -1) return 0;
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
JN_EW_FN int64_t jn_ew_ipow(int64_t a, int64_t b) {
    if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0; /* as PyTorch */
    uint64_t r = 1, x = (uint64_t)a;
    for (; b; b >>= 1, x *= x)
        if (b & 1) r *= x;
    return (int64_t)r;
}
/* Python-style floor division and remainder for floats (PyTorch's
 * div_floor_floating and remainder): jn_ew_floordivf / jn_ew_floordiv;
 * float pow (jn_ew_fpowf / jn_ew_fpow, see JN_EWF_pow). */
#define JN_EW_FLOAT_HELPERS(sfx, T, U, F, ...)                                                         \
    JN_EW_FN T jn_ew_floordiv##F(T a, T b) {                                                            \
        if (b == 0) return a / b;                                                                       \
        T mod = fmod##F(a, b), div = (a - mod) / b;                                                     \
        if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;                                                 \
        if (div == 0) return copysign##F((T)0, a / b);                                                  \
        T fd = floor##F(div);                                                                           \
        return div - fd > (T)0.5 ? fd + 1 : fd;                                                         \
    }                                                                                                   \
    JN_EW_FN T jn_ew_fremainder##F(T a, T b) {                                                          \
        T mod = fmod##F(a, b);                                                                          \
        return (mod != 0 && (b < 0) != (mod < 0)) ? mod + b : mod;                                      \
    }                                                                                               \
    JN_EW_FN T jn_ew_fpow##F(T a, T b) {                                                            \
        if (b == 2) return a * a;                                                                   \
        if (b == 1) return a;                                                                       \
        if (b == (T)0.5) return sqrt##F(a);                                                         \
        if (b == 3) return a * a * a;                                                               \
        if (b == -1) return 1 / a;                                                                  \
        if (b == -2) return 1 / (a * a);                                                            \
        if (b == (T)-0.5) return 1 / sqrt##F(a);                                                    \
        if (b == 0) return 1;                                                                       \
        return pow##F(a, b);                                                                        \
    }
JN_EW_FLOATS(JN_EW_FLOAT_HELPERS, )

/* ======================================================== the formulas
 * JN_EWF_<id>(T, F, operands...): float class; JN_EWI_<id>(T, U,
 * operands...): integer class; JN_EWB_<id>: bool; JN_EW_<id>: one formula
 * for every class.  Each list names its ids with the ops.def op they
 * implement: X(id, op, ...). */

/* ---- binary with alpha: a +/- alpha * b (float and integer; result
 * dtype promoted) */
#define JN_EW_ALPHA(X, ...) X(add, add, __VA_ARGS__) X(sub, sub, __VA_ARGS__)
#define JN_EWF_add(T, F, a, b, al) (a + (T)al * b)
#define JN_EWI_add(T, U, a, b, al) ((T)((U)a + (U)al * (U)b))
#define JN_EWF_sub(T, F, a, b, al) (a - (T)al * b)
#define JN_EWI_sub(T, U, a, b, al) ((T)((U)a - (U)al * (U)b))

/* ---- binary (float and integer; promoted).  A float pow by 2, 1, 0.5,
 * 3, -1, -2, -0.5 or 0 is computed as PyTorch's pow with a scalar
 * exponent does (Pow.cpp: 0 fills 1, 1 copies; PowKernel.cpp: x*x, x*x*x,
 * 1/(x*x), and sqrt, 1/sqrt, 1/x as its sqrt, rsqrt and reciprocal
 * kernels): correctly rounded, no libm call (clip_grad_norm_ squares every
 * gradient, and the derivative of x**2 is a pow by 1); other exponents
 * call libm's pow (jn_ew_fpow).  Negative integer exponents of integers:
 * see jn_ew_ipow */
#define JN_EW_BINARY(X, ...)                                                                            \
    X(mul, mul, __VA_ARGS__) X(pow, pow, __VA_ARGS__) X(maximum, maximum, __VA_ARGS__)                  \
    X(minimum, minimum, __VA_ARGS__)
#define JN_EWF_mul(T, F, a, b) (a * b)
#define JN_EWI_mul(T, U, a, b) ((T)((U)a * (U)b))
#define JN_EWF_pow(T, F, a, b) jn_ew_fpow##F(a, b)
#define JN_EWI_pow(T, U, a, b) ((T)jn_ew_ipow(a, b))
/* a NaN on either side wins */
#define JN_EWF_maximum(T, F, a, b) ((a > b || isnan(a)) ? a : b)
#define JN_EWI_maximum(T, U, a, b) (a > b ? a : b)
#define JN_EWF_minimum(T, F, a, b) ((a < b || isnan(a)) ? a : b)
#define JN_EWI_minimum(T, U, a, b) (a < b ? a : b)

/* ---- division with rounding ('trunc', 'floor') and remainder (float and
 * integer; promoted); the integer ones report division by zero in *zd */
#define JN_EW_DIVIDE(X, ...)                                                                            \
    X(div_trunc, div, __VA_ARGS__) X(div_floor, div, __VA_ARGS__) X(remainder, remainder, __VA_ARGS__)
#define JN_EWF_div_trunc(T, F, a, b) trunc##F(a / b)
#define JN_EWI_div_trunc(T, U, a, b, zd) ((T)jn_ew_idiv_trunc(a, b, zd))
#define JN_EWF_div_floor(T, F, a, b) jn_ew_floordiv##F(a, b)
#define JN_EWI_div_floor(T, U, a, b, zd) ((T)jn_ew_idiv_floor(a, b, zd))
#define JN_EWF_remainder(T, F, a, b) jn_ew_fremainder##F(a, b)
#define JN_EWI_remainder(T, U, a, b, zd) ((T)jn_ew_irem(a, b, zd))

/* ---- binary, float only (integer inputs compute in float32) */
#define JN_EW_BINARY_FLOAT(X, ...) X(div_true, div, __VA_ARGS__) X(atan2, atan2, __VA_ARGS__)
#define JN_EWF_div_true(T, F, a, b) (a / b)
#define JN_EWF_atan2(T, F, a, b) atan2##F(a, b)

/* ---- comparisons: bool result, compared in the promoted type */
#define JN_EW_COMPARE(X, ...)                                                                           \
    X(eq, eq, __VA_ARGS__) X(ne, ne, __VA_ARGS__) X(lt, lt, __VA_ARGS__) X(le, le, __VA_ARGS__)         \
    X(gt, gt, __VA_ARGS__) X(ge, ge, __VA_ARGS__)
#define JN_EW_eq(a, b) (a == b)
#define JN_EW_ne(a, b) (a != b)
#define JN_EW_lt(a, b) (a < b)
#define JN_EW_le(a, b) (a <= b)
#define JN_EW_gt(a, b) (a > b)
#define JN_EW_ge(a, b) (a >= b)

/* ---- logical: inputs already truth values (0/1) */
#define JN_EW_LOGICAL(X, ...)                                                                           \
    X(logical_and, logical_and, __VA_ARGS__) X(logical_or, logical_or, __VA_ARGS__)                     \
    X(logical_xor, logical_xor, __VA_ARGS__)
#define JN_EWB_logical_and(a, b) (a & b)
#define JN_EWB_logical_or(a, b) (a | b)
#define JN_EWB_logical_xor(a, b) (a ^ b)
#define JN_EWB_logical_not(x) (x ^ 1)

/* ---- unary (float and integer; promoted) */
#define JN_EW_UNARY(X, ...)                                                                             \
    X(neg, neg, __VA_ARGS__) X(abs, abs, __VA_ARGS__) X(sign, sign, __VA_ARGS__) X(relu, relu, __VA_ARGS__)
#define JN_EWF_neg(T, F, x) (-x)
#define JN_EWI_neg(T, U, x) ((T)(0 - (U)x))
#define JN_EWF_abs(T, F, x) fabs##F(x)
#define JN_EWI_abs(T, U, x) (x < 0 ? (T)(0 - (U)x) : x)
#define JN_EWF_sign(T, F, x) ((T)((0 < x) - (x < 0))) /* NaN gives 0 */
#define JN_EWI_sign(T, U, x) ((T)((0 < x) - (x < 0)))
#define JN_EWF_relu(T, F, x) (x < 0 ? 0 : x) /* NaN and -0 pass through */
#define JN_EWI_relu(T, U, x) (x < 0 ? 0 : x)

/* ---- unary float math (integer inputs compute in float32) */
#define JN_EW_UNARY_FLOAT(X, ...)                                                                       \
    X(exp, exp, __VA_ARGS__) X(log, log, __VA_ARGS__) X(log1p, log1p, __VA_ARGS__)                      \
    X(expm1, expm1, __VA_ARGS__) X(sqrt, sqrt, __VA_ARGS__) X(rsqrt, rsqrt, __VA_ARGS__)                \
    X(reciprocal, reciprocal, __VA_ARGS__) X(tanh, tanh, __VA_ARGS__) X(sigmoid, sigmoid, __VA_ARGS__)  \
    X(gelu_erf, gelu, __VA_ARGS__) X(gelu_tanh, gelu, __VA_ARGS__) X(silu, silu, __VA_ARGS__)           \
    X(sin, sin, __VA_ARGS__) X(cos, cos, __VA_ARGS__) X(erf, erf, __VA_ARGS__)
#define JN_EWF_exp(T, F, x) JN_EW_FAST(exp, F)(x)
#define JN_EWF_log(T, F, x) JN_EW_FAST(log, F)(x)
#define JN_EWF_log1p(T, F, x) log1p##F(x)
#define JN_EWF_expm1(T, F, x) expm1##F(x)
#define JN_EWF_sqrt(T, F, x) sqrt##F(x)
#define JN_EWF_rsqrt(T, F, x) (1 / sqrt##F(x))
#define JN_EWF_reciprocal(T, F, x) (1 / x)
#define JN_EWF_tanh(T, F, x) JN_EW_FAST(tanh, F)(x)
#define JN_EWF_sigmoid(T, F, x) (1 / (1 + JN_EW_FAST(exp, F)(-x)))
/* gelu approximate='none' (erf) and 'tanh' */
#define JN_EWF_gelu_erf(T, F, x) ((T)0.5 * x * (1 + JN_EW_FAST(erf, F)(x * (T)0.70710678118654752440)))
#define JN_EWF_gelu_tanh(T, F, x)                                                                       \
    ((T)0.5 * x * (1 + JN_EW_FAST(tanh, F)((T)0.79788456080286535588 * (x + (T)0.044715 * x * x * x))))
#define JN_EWF_silu(T, F, x) (x / (1 + JN_EW_FAST(exp, F)(-x)))
#define JN_EWF_sin(T, F, x) sin##F(x)
#define JN_EWF_cos(T, F, x) cos##F(x)
#define JN_EWF_erf(T, F, x) JN_EW_FAST(erf, F)(x)

/* ---- rounding: floats round (round: half to even), integers pass
 * through unchanged (the result keeps the input's dtype) */
#define JN_EW_ROUNDING(X, ...) X(floor, floor, __VA_ARGS__) X(ceil, ceil, __VA_ARGS__) X(round, round, __VA_ARGS__)
#define JN_EWF_floor(T, F, x) floor##F(x)
#define JN_EWF_ceil(T, F, x) ceil##F(x)
#define JN_EWF_round(T, F, x) nearbyint##F(x)
#define JN_EWI_floor(T, U, x) (x)
#define JN_EWI_ceil(T, U, x) (x)
#define JN_EWI_round(T, U, x) (x)

/* ---- isnan: bool result; integers are never NaN */
#define JN_EWF_isnan(T, F, x) isnan(x)
#define JN_EWI_isnan(T, U, x) 0

/* ---- clamp(x, lo, hi) = min(max(x, lo), hi): lo > hi gives hi, a NaN x
 * stays NaN (like PyTorch).  The bounds are the attributes (doubles, -inf
 * / +inf where not given) made once per kernel by jn_ew_clamp_bound_<sfx>:
 * float rounds them to T, and a NaN bound makes every element NaN;
 * integer saturates them to the type's range. */
#define JN_EW_CLAMP(x, lo, hi) ((x < lo ? lo : x) > hi ? hi : (x < lo ? lo : x))
#define JN_EWF_clamp(T, F, x, lo, hi) ((lo != lo || hi != hi) ? (T)NAN : JN_EW_CLAMP(x, lo, hi))
#define JN_EWI_clamp(T, U, x, lo, hi) JN_EW_CLAMP(x, lo, hi)
#define JN_EWF_clamp_bound(T, F, v) ((T)v)
#define JN_EWI_clamp_bound(T, U, v, TLO, THI) ((T)(v <= (double)TLO ? TLO : v >= (double)THI ? THI : (int64_t)v))

/* ---- where(w, a, b) and masked_fill(x, m, v): selects.  On values of a
 * compute type (generated code, CUDA) a conditional; on raw elements by
 * size (the eager CPU loops, which move float16 as uint16) the same select
 * through an all-ones/zero mask where the loop vectorizes (random masks
 * don't branch, 8-byte elements vectorize without SSE4): JN_EW_MASK,
 * JN_EW_BITSEL, written inline there (gcc's vectorizer makes a shorter
 * loop of them than of the inlined function). */
#define JN_EW_where(w, a, b) ((w) ? (a) : (b))
#define JN_EW_masked_fill(x, m, v) ((m) ? (v) : (x))
#define JN_EW_MASK(T, w) ((T)(0 - (T)((w) != 0)))
#define JN_EW_BITSEL(T, m, a, b) ((T)(((a) & (m)) | ((b) & (T) ~(m))))

/* ================================================== the functions */
#define JN_EW_DEF_ALPHA_F(sfx, T, U, F, id)                                                             \
    JN_EW_FN T jn_ew_##id##_##sfx(T a, T b, double al) { return JN_EWF_##id(T, F, a, b, al); }
#define JN_EW_DEF_ALPHA_I(sfx, T, U, F, id)                                                             \
    JN_EW_FN T jn_ew_##id##_##sfx(T a, T b, int64_t al) { return JN_EWI_##id(T, U, a, b, al); }
#define JN_EW_DEF_ALPHA(id, op, ...) JN_EW_FLOATS(JN_EW_DEF_ALPHA_F, id) JN_EW_INTS(JN_EW_DEF_ALPHA_I, id)
JN_EW_ALPHA(JN_EW_DEF_ALPHA, )

#define JN_EW_DEF_BIN_F(sfx, T, U, F, id) JN_EW_FN T jn_ew_##id##_##sfx(T a, T b) { return JN_EWF_##id(T, F, a, b); }
#define JN_EW_DEF_BIN_I(sfx, T, U, F, id) JN_EW_FN T jn_ew_##id##_##sfx(T a, T b) { return JN_EWI_##id(T, U, a, b); }
#define JN_EW_DEF_BINARY(id, op, ...) JN_EW_FLOATS(JN_EW_DEF_BIN_F, id) JN_EW_INTS(JN_EW_DEF_BIN_I, id)
JN_EW_BINARY(JN_EW_DEF_BINARY, )

#define JN_EW_DEF_DIV_I(sfx, T, U, F, id)                                                               \
    JN_EW_FN T jn_ew_##id##_##sfx(T a, T b, int *zd) { return JN_EWI_##id(T, U, a, b, zd); }
#define JN_EW_DEF_DIVIDE(id, op, ...) JN_EW_FLOATS(JN_EW_DEF_BIN_F, id) JN_EW_INTS(JN_EW_DEF_DIV_I, id)
JN_EW_DIVIDE(JN_EW_DEF_DIVIDE, )

#define JN_EW_DEF_BINARY_FLOAT(id, op, ...) JN_EW_FLOATS(JN_EW_DEF_BIN_F, id)
JN_EW_BINARY_FLOAT(JN_EW_DEF_BINARY_FLOAT, )

#define JN_EW_DEF_CMP_T(sfx, T, U, F, id) JN_EW_FN uint8_t jn_ew_##id##_##sfx(T a, T b) { return JN_EW_##id(a, b); }
#define JN_EW_DEF_COMPARE(id, op, ...) JN_EW_FLOATS(JN_EW_DEF_CMP_T, id) JN_EW_INTS(JN_EW_DEF_CMP_T, id)
JN_EW_COMPARE(JN_EW_DEF_COMPARE, )

#define JN_EW_DEF_LOGICAL(id, op, ...) JN_EW_FN uint8_t jn_ew_##id##_b(uint8_t a, uint8_t b) { return JN_EWB_##id(a, b); }
JN_EW_LOGICAL(JN_EW_DEF_LOGICAL, )
JN_EW_FN uint8_t jn_ew_logical_not_b(uint8_t x) { return JN_EWB_logical_not(x); }

#define JN_EW_DEF_UN_F(sfx, T, U, F, id) JN_EW_FN T jn_ew_##id##_##sfx(T x) { return JN_EWF_##id(T, F, x); }
#define JN_EW_DEF_UN_I(sfx, T, U, F, id) JN_EW_FN T jn_ew_##id##_##sfx(T x) { return JN_EWI_##id(T, U, x); }
#define JN_EW_DEF_UNARY(id, op, ...) JN_EW_FLOATS(JN_EW_DEF_UN_F, id) JN_EW_INTS(JN_EW_DEF_UN_I, id)
JN_EW_UNARY(JN_EW_DEF_UNARY, )
JN_EW_ROUNDING(JN_EW_DEF_UNARY, )
#define JN_EW_DEF_UNARY_FLOAT(id, op, ...) JN_EW_FLOATS(JN_EW_DEF_UN_F, id)
JN_EW_UNARY_FLOAT(JN_EW_DEF_UNARY_FLOAT, )

#define JN_EW_DEF_ISNAN_F(sfx, T, U, F, ...) JN_EW_FN uint8_t jn_ew_isnan_##sfx(T x) { return JN_EWF_isnan(T, F, x); }
#define JN_EW_DEF_ISNAN_I(sfx, T, U, F, ...) JN_EW_FN uint8_t jn_ew_isnan_##sfx(T x) { (void)x; return JN_EWI_isnan(T, U, x); }
JN_EW_FLOATS(JN_EW_DEF_ISNAN_F, )
JN_EW_INTS(JN_EW_DEF_ISNAN_I, )

#define JN_EW_DEF_CLAMP_F(sfx, T, U, F, ...)                                                            \
    JN_EW_FN T jn_ew_clamp_bound_##sfx(double v) { return JN_EWF_clamp_bound(T, F, v); }                \
    JN_EW_FN T jn_ew_clamp_##sfx(T x, T lo, T hi) { return JN_EWF_clamp(T, F, x, lo, hi); }
#define JN_EW_DEF_CLAMP_I(sfx, T, U, F, ...)                                                            \
    JN_EW_FN T jn_ew_clamp_bound_##sfx(double v) {                                                      \
        return JN_EWI_clamp_bound(T, U, v, JN_EW_LO_##sfx, JN_EW_HI_##sfx);                             \
    }                                                                                                   \
    JN_EW_FN T jn_ew_clamp_##sfx(T x, T lo, T hi) { return (T)JN_EWI_clamp(T, U, x, lo, hi); }
JN_EW_FLOATS(JN_EW_DEF_CLAMP_F, )
JN_EW_INTS(JN_EW_DEF_CLAMP_I, )

#define JN_EW_DEF_SELECT(sfx, T, U, F, ...)                                                             \
    JN_EW_FN T jn_ew_where_##sfx(uint8_t w, T a, T b) { return JN_EW_where(w, a, b); }                  \
    JN_EW_FN T jn_ew_masked_fill_##sfx(T x, uint8_t m, T v) { return JN_EW_masked_fill(x, m, v); }
JN_EW_FLOATS(JN_EW_DEF_SELECT, )
JN_EW_INTS(JN_EW_DEF_SELECT, )

/* ---- the fused optimizer updates adam_ and sgd_ (k_fused.c, and
 * runtime/cuda/kernels.cu): one element of torch.optim's single-tensor
 * step, with the operations, order and rounding points of the unfused
 * update janus.optim writes with in-place ops (k_fused.c says which).  The
 * parameters are the step's constants, computed once by the caller in T. */
#define JN_EW_DEF_OPTIM(sfx, T, U, F, ...)                                                              \
    JN_EW_FN void jn_ew_adam_##sfx(T *p, T *m, T *v, T gr, T decay, T wd, T w1, T b2, T w2, T bc, T eps,  \
                                   T ns, int dec, int mx, int hw) {                                     \
        T g = mx ? -gr : gr, pv = *p;                                                                   \
        if (hw) {                                                                                       \
            if (dec) pv = pv * decay;                                                                   \
            else g = g + wd * pv;                                                                       \
        }                                                                                               \
        T mv = *m + w1 * (g - *m);                                                                      \
        T vv = *v * b2;                                                                                 \
        vv = vv + w2 * (g * g);                                                                         \
        T den = sqrt##F(vv) / bc + eps;                                                                 \
        *m = mv;                                                                                        \
        *v = vv;                                                                                        \
        *p = pv + ns * (mv / den);                                                                      \
    }                                                                                                   \
    JN_EW_FN void jn_ew_sgd_##sfx(T *p, T *buf, T gr, T nl, T mom, T damp, T wd, int mx, int hw, int nest, \
                                  int first) {                                                          \
        T g = mx ? -gr : gr;                                                                            \
        if (hw) g = g + wd * *p;                                                                        \
        T b = first ? g : *buf * mom + damp * g;                                                        \
        *buf = b;                                                                                       \
        g = nest ? g + mom * b : b;                                                                     \
        *p = *p + nl * g;                                                                               \
    }
JN_EW_FLOATS(JN_EW_DEF_OPTIM, )

/* Every id above, for the tests (one row per function family). */
#define JN_EW_ALL(X, ...)                                                                               \
    JN_EW_ALPHA(X, __VA_ARGS__) JN_EW_BINARY(X, __VA_ARGS__) JN_EW_DIVIDE(X, __VA_ARGS__)               \
    JN_EW_BINARY_FLOAT(X, __VA_ARGS__) JN_EW_COMPARE(X, __VA_ARGS__) JN_EW_LOGICAL(X, __VA_ARGS__)      \
    JN_EW_UNARY(X, __VA_ARGS__) JN_EW_UNARY_FLOAT(X, __VA_ARGS__) JN_EW_ROUNDING(X, __VA_ARGS__)        \
    X(logical_not, logical_not, __VA_ARGS__) X(isnan, isnan, __VA_ARGS__) X(clamp, clamp, __VA_ARGS__)  \
    X(where, where, __VA_ARGS__) X(masked_fill, masked_fill, __VA_ARGS__)

#if defined(__CUDACC__)
#pragma nv_diag_default 177
#pragma nv_diag_default 186
#elif defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#endif
