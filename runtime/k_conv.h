/* k_conv.h -- geometry shared by the convolution/pooling kernels
 * (k_conv.c) and their gradients (k_grad.c): attribute pairs and output
 * lengths, defined once so forward and backward can never disagree. */
#ifndef JN_K_CONV_H
#define JN_K_CONV_H

#include "jn_runtime.h"

static inline int64_t jn_rt_floordiv(int64_t a, int64_t b) { /* b > 0 */
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}
static inline int64_t jn_rt_ceildiv(int64_t a, int64_t b) { /* b > 0 */
    return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

/* An attribute list of 1 or 2 entries (1 means both dims); empty gives dflt
 * when dflt >= 0, else is an error. */
static inline jn_status jn_rt_pair_attr(const char *op, const char *name, const jn_ints *l, int64_t dflt,
                                        int64_t out[2]) {
    if (l->n == 0 && dflt >= 0) {
        out[0] = out[1] = dflt;
        return JN_OK;
    }
    if (l->n != 1 && l->n != 2)
        return jn_error(JN_ERR_VALUE, "%s: %s must be an int or a list of 1 or 2 ints, got %d values", op, name,
                        l->n);
    out[0] = l->v[0];
    out[1] = l->n == 2 ? l->v[1] : l->v[0];
    return JN_OK;
}

/* PyTorch's pooling_output_shape: output length of a pool along one dim;
 * with ceil_mode the last window must still start inside the input or its
 * left padding.  -2 on arithmetic overflow. */
static inline int64_t jn_rt_pool_out_len(int64_t in, int64_t k, int64_t pad, int64_t st, int64_t dil,
                                         int ceil_mode) {
    int64_t num, ek;
    if (__builtin_mul_overflow(pad, 2, &num) || __builtin_add_overflow(num, in, &num) ||
        __builtin_mul_overflow(dil, k - 1, &ek) || __builtin_sub_overflow(num, ek + 1, &num) ||
        __builtin_add_overflow(num, ceil_mode ? st - 1 : 0, &num))
        return -2;
    int64_t o = jn_rt_floordiv(num, st) + 1;
    if (ceil_mode && (o - 1) * st >= in + pad) o--;
    return o;
}

/* One avg-pool window along one dim, PyTorch's rule: the window starting at
 * o*stride - pad is first clipped to the padded input (its length then is
 * the count_include_pad divisor), then to the real input [lo, hi). */
static inline void jn_rt_avg_window(int64_t o, int64_t stride, int64_t pad, int64_t k, int64_t in,
                                    int64_t *lo, int64_t *hi, int64_t *padded_len) {
    int64_t a = o * stride - pad, b = a + k;
    if (b > in + pad) b = in + pad;
    *padded_len = b - a;
    *lo = a < 0 ? 0 : a;
    *hi = b > in ? in : b;
}

/* Stride-1 convolutions use the wide-row layout (k_conv.c's wide_image,
 * k_grad.c's im2col_wide) only for output rows shorter than this: there the
 * per-row copies of plain im2col dominate; longer rows copy efficiently and
 * the wide layout's padded copies and finiteness scan cost more than they
 * save (measured on 56-wide rows). */
#define JN_RT_WIDE_MAX_OW 32

#endif
