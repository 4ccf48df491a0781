/* k_fastmath.h -- branch-free float32 exp, log, tanh and erf that gcc
 * vectorizes (glibc's are scalar calls, 3-30x slower), and the saturating
 * float -> integer conversion of casts, shared by the elementwise kernels
 * (k_elementwise.c), the fused kernels (k_fused.c), the reductions and
 * conversions (k_reduce.c, tensor.c), the elementwise formulas
 * (k_ewmath.h), the CUDA kernels (runtime/cuda/kernels.cu) and the C and
 * CUDA that codegen generates (codegen/emit_c.c and emit_cuda.c embed this
 * file's text at build time), so a fused or
 * generated kernel computes bit-identical results to the same ops run one by
 * one.  Measured against double precision over their whole range: exp <= 1
 * ulp, log <= 0.8 ulp, tanh <= 1.4 ulp, erf <= 8 ulp (absolute error <
 * 5e-7).  Include it after
 * `#pragma GCC optimize("no-trapping-math", "fp-contract=off")` (or compile
 * with -ffp-contract=off) so these functions get the same flags.  It must
 * stay self-contained (only standard headers): generated code includes it.
 */
#ifndef JN_K_FASTMATH_H
#define JN_K_FASTMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* host and device functions under nvcc (runtime/cuda/kernels.cu) and
 * NVRTC (generated CUDA) */
#ifdef __CUDACC__
#define JN_FM_FN static inline __host__ __device__
#else
#define JN_FM_FN static inline
#endif

JN_FM_FN float bits_to_f32(int32_t i) {
    float f;
    memcpy(&f, &i, sizeof f);
    return f;
}
JN_FM_FN int32_t f32_to_bits(float f) {
    int32_t i;
    memcpy(&i, &f, sizeof i);
    return i;
}

/* Cephes expf: exp(x) = 2^n exp(r), |r| <= ln2/2; 2^n is applied as two
 * factors so results down to the subnormals and up to inf come out right. */
JN_FM_FN float fast_expf(float x) {
    float xc = x > 89.0f ? 89.0f : x;
    xc = xc < -104.0f ? -104.0f : xc;
    xc = xc == xc ? xc : 0.0f;
    float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round */
    float r = (xc - n * 0.693359375f) + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    float y = p * r * r + r + 1.0f;
    int32_t ni = (int32_t)n, n1 = ni / 2, n2 = ni - n1;
    y = y * bits_to_f32((n1 + 127) << 23) * bits_to_f32((n2 + 127) << 23);
    return x == x ? y : x;
}

/* Cephes tanhf: an odd polynomial below 0.625, 1 - 2/(e^2|x| + 1) above. */
JN_FM_FN float fast_tanhf(float x) {
    float ax = fabsf(x), z = x * x;
    float s = -5.70498872745e-3f;
    s = s * z + 2.06390887954e-2f;
    s = s * z - 5.37397155531e-2f;
    s = s * z + 1.33314422036e-1f;
    s = s * z - 3.33332819422e-1f;
    s = ax + ax * (z * s);
    float b = 1.0f - 2.0f / (fast_expf(2.0f * ax) + 1.0f);
    return copysignf(ax < 0.625f ? s : b, x);
}

/* Cephes logf: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(1 + (m - 1))
 * by a polynomial; subnormals are scaled up first. */
JN_FM_FN float fast_logf(float x) {
    int sub = x < 1.17549435e-38f;
    float xs = sub ? x * 8388608.0f : x;
    int32_t b = f32_to_bits(xs);
    float e = (float)(((b >> 23) & 0xff) - 126) - (sub ? 23.0f : 0.0f);
    float m = bits_to_f32((b & (int32_t)0x807fffff) | 0x3f000000); /* [0.5, 1) */
    int lo = m < 0.707106781186547524f;
    e = lo ? e - 1.0f : e;
    m = lo ? m + m - 1.0f : m - 1.0f;
    float z = m * m;
    float y = 7.0376836292e-2f;
    y = y * m - 1.1514610310e-1f;
    y = y * m + 1.1676998740e-1f;
    y = y * m - 1.2420140846e-1f;
    y = y * m + 1.4249322787e-1f;
    y = y * m - 1.6668057665e-1f;
    y = y * m + 2.0000714765e-1f;
    y = y * m - 2.4999993993e-1f;
    y = y * m + 3.3333331174e-1f;
    y = y * m * z - 2.12194440e-4f * e - 0.5f * z;
    float r = (m + y) + 0.693359375f * e;
    r = x == INFINITY ? x : r;
    r = x == 0 ? -INFINITY : r;
    return (x < 0 || x != x) ? NAN : r;
}

/* erf as an odd/even rational function on [-4, 4] (as in Eigen/XLA). */
JN_FM_FN float fast_erff(float a) {
    float x = a > 4.0f ? 4.0f : a;
    x = x < -4.0f ? -4.0f : x;
    float x2 = x * x;
    float p = -2.72614225801306e-10f;
    p = p * x2 + 2.77068142495902e-08f;
    p = p * x2 - 2.10102402082508e-06f;
    p = p * x2 - 5.69250639462346e-05f;
    p = p * x2 - 7.34990630326855e-04f;
    p = p * x2 - 2.95459980854025e-03f;
    p = p * x2 - 1.60960333262415e-02f;
    float q = -1.45660718464996e-05f;
    q = q * x2 - 2.13374055278905e-04f;
    q = q * x2 - 1.68282697438203e-03f;
    q = q * x2 - 7.37332916720468e-03f;
    q = q * x2 - 1.42647390514189e-02f;
    return x * p / q;
}

/* float -> int64 as casts store it: NaN 0, saturating at the ends. */
JN_FM_FN int64_t sat_i64(double v) {
    if (v != v) return 0;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    return (int64_t)v;
}

#endif
