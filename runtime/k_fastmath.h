/* k_fastmath.h -- branch-free float32 exp and tanh that gcc vectorizes,
 * shared by the elementwise kernels (k_elementwise.c) and the fused kernels
 * (k_fused.c), so a fused LSTM/GRU cell computes bit-identical activations
 * to the same cell written with separate table ops.  Measured against double
 * precision over their whole range: exp <= 1 ulp, tanh <= 1.4 ulp.
 * Include it after `#pragma GCC optimize("no-trapping-math", "fp-contract=off")`
 * so these functions are compiled (and inlined) with the same flags.
 */
#ifndef JN_K_FASTMATH_H
#define JN_K_FASTMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float bits_to_f32(int32_t i) {
    float f;
    memcpy(&f, &i, sizeof f);
    return f;
}
static inline int32_t f32_to_bits(float f) {
    int32_t i;
    memcpy(&i, &f, sizeof i);
    return i;
}

/* Cephes expf: exp(x) = 2^n exp(r), |r| <= ln2/2; 2^n is applied as two
 * factors so results down to the subnormals and up to inf come out right. */
static inline float fast_expf(float x) {
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
static inline float fast_tanhf(float x) {
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

#endif
