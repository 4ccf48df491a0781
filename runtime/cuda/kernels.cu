/* kernels.cu -- the CUDA backend's kernels (sm_90 SASS + compute_90 PTX).
 *
 * One generic strided elementwise kernel: each thread maps a linear index to
 * per-operand offsets through the jn_cu_iter (shape + element strides, 0
 * where broadcast), loads every input converted to the math type (float for
 * float32/float16/bfloat16, double, int64 for integers and bool), applies
 * the op's function of runtime/k_ewmath.h -- the one the CPU kernels and
 * the generated code call -- and stores converted to the output dtype.  The op is a kernel argument
 * (a uniform branch), so one kernel per math type serves the whole table.
 * Reductions and softmax work on a contiguous [outer, inner] layout the host
 * prepares (reduced dims moved last); one block reduces one row.
 *
 * No kernel ever synchronizes; launchers return cudaGetLastError().
 */
#include "jn_cuda.h"
#include "jn_runtime.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <math.h>
#include <stdint.h>
#include <type_traits>

/* The elementwise math (and k_fastmath.h's float32 exp/log/tanh/erf) as
 * host and device functions, compiled with --fmad=false like the C code
 * with -ffp-contract=off, so what is built from + - * / sqrt and the fast
 * math rounds as on the CPU: float32 results equal the CPU's, not merely
 * come close (the cells' backward formulas, 1 - tanh^2 near saturation,
 * would magnify a one-ulp difference of the activations). */
#include "k_ewmath.h"

#define THREADS 256

static inline unsigned grid_for(int64_t n) {
    int64_t b = (n + THREADS - 1) / THREADS;
    if (b > 65535LL * 16) b = 65535LL * 16; /* grid-stride loops cover the rest */
    return (unsigned)(b > 0 ? b : 1);
}

__constant__ int elsize_c[8] = {4, 8, 2, 2, 8, 4, 1, 1}; /* JN_DTYPES order: f32 f64 f16 bf16 i64 i32 u8 bool */

/* ---- loads and stores of any dtype ---- */
template <typename T> __device__ __forceinline__ T ld(const char *p, int dt) {
    switch (dt) {
    case JN_F32: return (T) * (const float *)p;
    case JN_F64: return (T) * (const double *)p;
    case JN_F16: return (T)__half2float(*(const __half *)p);
    case JN_BF16: return (T)__bfloat162float(*(const __nv_bfloat16 *)p);
    case JN_I64: return (T) * (const int64_t *)p;
    case JN_I32: return (T) * (const int32_t *)p;
    case JN_U8: return (T) * (const uint8_t *)p;
    default: return (T)(*(const uint8_t *)p != 0);
    }
}

template <typename T> __device__ __forceinline__ void st(char *p, int dt, T v) {
    switch (dt) {
    case JN_F32: *(float *)p = (float)v; break;
    case JN_F64: *(double *)p = (double)v; break;
    case JN_F16: *(__half *)p = __float2half_rn((float)v); break;
    case JN_BF16: *(__nv_bfloat16 *)p = __float2bfloat16_rn((float)v); break;
    case JN_I64: *(int64_t *)p = (int64_t)v; break;
    case JN_I32: *(int32_t *)p = (int32_t)v; break;
    case JN_U8: *(uint8_t *)p = (uint8_t)v; break;
    default: *(uint8_t *)p = v != (T)0; break;
    }
}

/* Offsets (elements) of linear index i for the first nops operands. */
__device__ __forceinline__ void offsets(const jn_cu_iter &it, int64_t i, int64_t *off) {
    for (int k = 0; k < JN_CU_MAXOPS; k++) off[k] = 0;
    for (int d = it.ndim - 1; d >= 0; d--) {
        int64_t n = it.shape[d], c = i % n;
        i /= n;
        for (int k = 0; k < it.nops; k++) off[k] += c * it.stride[k][d];
    }
}

__device__ __forceinline__ char *at(const jn_cu_iter &it, int k, const int64_t *off) {
    return it.ptr[k] + off[k] * elsize_c[it.dtype[k]];
}

/* ---- the per-element math: k_ewmath.h's function for the op, by math type
 * (odt: the output dtype, whose range an integer clamp saturates to) ---- */
#define EW_APPLY_FLOAT(sfx, T, U, F, ...)                                                                       \
    __device__ __forceinline__ T ew_apply(int op, T a, T b, T c, const jn_cu_params &p, int odt) {              \
        (void)odt;                                                                                              \
        switch (op) {                                                                                           \
        case JN_OP_add: return jn_ew_add_##sfx(a, b, p.f0);                                                     \
        case JN_OP_sub: return jn_ew_sub_##sfx(a, b, p.f0);                                                     \
        case JN_OP_mul: return jn_ew_mul_##sfx(a, b);                                                           \
        case JN_OP_div:                                                                                         \
            return p.i0 == 1 ? jn_ew_div_trunc_##sfx(a, b) : p.i0 == 2 ? jn_ew_div_floor_##sfx(a, b)            \
                                                                      : jn_ew_div_true_##sfx(a, b);             \
        case JN_OP_pow: return jn_ew_pow_##sfx(a, b);                                                           \
        case JN_OP_remainder: return jn_ew_remainder_##sfx(a, b);                                               \
        case JN_OP_maximum: return jn_ew_maximum_##sfx(a, b);                                                   \
        case JN_OP_minimum: return jn_ew_minimum_##sfx(a, b);                                                   \
        case JN_OP_atan2: return jn_ew_atan2_##sfx(a, b);                                                       \
        case JN_OP_neg: return jn_ew_neg_##sfx(a);                                                              \
        case JN_OP_exp: return jn_ew_exp_##sfx(a);                                                              \
        case JN_OP_log: return jn_ew_log_##sfx(a);                                                              \
        case JN_OP_log1p: return jn_ew_log1p_##sfx(a);                                                          \
        case JN_OP_expm1: return jn_ew_expm1_##sfx(a);                                                          \
        case JN_OP_sqrt: return jn_ew_sqrt_##sfx(a);                                                            \
        case JN_OP_rsqrt: return jn_ew_rsqrt_##sfx(a);                                                          \
        case JN_OP_abs: return jn_ew_abs_##sfx(a);                                                              \
        case JN_OP_sign: return jn_ew_sign_##sfx(a);                                                            \
        case JN_OP_reciprocal: return jn_ew_reciprocal_##sfx(a);                                                \
        case JN_OP_tanh: return jn_ew_tanh_##sfx(a);                                                            \
        case JN_OP_sigmoid: return jn_ew_sigmoid_##sfx(a);                                                      \
        case JN_OP_relu: return jn_ew_relu_##sfx(a);                                                            \
        case JN_OP_gelu: return p.i0 == 1 ? jn_ew_gelu_tanh_##sfx(a) : jn_ew_gelu_erf_##sfx(a);                 \
        case JN_OP_silu: return jn_ew_silu_##sfx(a);                                                            \
        case JN_OP_sin: return jn_ew_sin_##sfx(a);                                                              \
        case JN_OP_cos: return jn_ew_cos_##sfx(a);                                                              \
        case JN_OP_erf: return jn_ew_erf_##sfx(a);                                                              \
        case JN_OP_floor: return jn_ew_floor_##sfx(a);                                                          \
        case JN_OP_ceil: return jn_ew_ceil_##sfx(a);                                                            \
        case JN_OP_round: return jn_ew_round_##sfx(a);                                                          \
        case JN_OP_clamp:                                                                                       \
            return jn_ew_clamp_##sfx(a, jn_ew_clamp_bound_##sfx(p.b0 ? p.f0 : -INFINITY),                       \
                                     jn_ew_clamp_bound_##sfx(p.b1 ? p.f1 : INFINITY));                          \
        case JN_OP_isnan: return jn_ew_isnan_##sfx(a);                                                          \
        case JN_OP_where: return jn_ew_where_##sfx(a != 0, b, c);                                               \
        case JN_OP_masked_fill: return jn_ew_masked_fill_##sfx(a, b != 0, (T)p.f1);                             \
        EW_APPLY_ANY(sfx)                                                                                       \
        default: return a; /* the host only launches implemented ops */                                         \
        }                                                                                                       \
    }
/* comparisons (in the promoted type) and logical ops (on truth values) */
#define EW_APPLY_ANY(sfx)                                                                                       \
    case JN_OP_eq: return jn_ew_eq_##sfx(a, b);                                                                 \
    case JN_OP_ne: return jn_ew_ne_##sfx(a, b);                                                                 \
    case JN_OP_lt: return jn_ew_lt_##sfx(a, b);                                                                 \
    case JN_OP_le: return jn_ew_le_##sfx(a, b);                                                                 \
    case JN_OP_gt: return jn_ew_gt_##sfx(a, b);                                                                 \
    case JN_OP_ge: return jn_ew_ge_##sfx(a, b);                                                                 \
    case JN_OP_logical_and: return jn_ew_logical_and_b(a != 0, b != 0);                                         \
    case JN_OP_logical_or: return jn_ew_logical_or_b(a != 0, b != 0);                                           \
    case JN_OP_logical_xor: return jn_ew_logical_xor_b(a != 0, b != 0);                                         \
    case JN_OP_logical_not: return jn_ew_logical_not_b(a != 0);
JN_EW_FLOATS(EW_APPLY_FLOAT, )

/* Integers compute in int64 and narrow on the store: every integer formula
 * wraps or is exact, so that equals computing in the narrower type, except
 * clamp, whose bounds saturate to the output dtype's range. */
__device__ __forceinline__ int64_t ew_apply(int op, int64_t a, int64_t b, int64_t c, const jn_cu_params &p, int odt) {
    int zd = 0; /* division by zero: 0, as the CPU (which also reports it) */
    switch (op) {
    case JN_OP_add: return jn_ew_add_i64(a, b, (int64_t)p.f0);
    case JN_OP_sub: return jn_ew_sub_i64(a, b, (int64_t)p.f0);
    case JN_OP_mul: return jn_ew_mul_i64(a, b);
    case JN_OP_div: /* integer results only for trunc / floor */
        return p.i0 == 2 ? jn_ew_div_floor_i64(a, b, &zd) : jn_ew_div_trunc_i64(a, b, &zd);
    case JN_OP_pow: return jn_ew_pow_i64(a, b);
    case JN_OP_remainder: return jn_ew_remainder_i64(a, b, &zd);
    case JN_OP_maximum: return jn_ew_maximum_i64(a, b);
    case JN_OP_minimum: return jn_ew_minimum_i64(a, b);
    case JN_OP_neg: return jn_ew_neg_i64(a);
    case JN_OP_abs: return jn_ew_abs_i64(a);
    case JN_OP_sign: return jn_ew_sign_i64(a);
    case JN_OP_relu: return jn_ew_relu_i64(a);
    case JN_OP_floor: return jn_ew_floor_i64(a);
    case JN_OP_ceil: return jn_ew_ceil_i64(a);
    case JN_OP_round: return jn_ew_round_i64(a);
    case JN_OP_clamp: {
        const double lo = p.b0 ? p.f0 : -INFINITY, hi = p.b1 ? p.f1 : INFINITY;
        switch (odt) {
        case JN_I32: return jn_ew_clamp_i32((int32_t)a, jn_ew_clamp_bound_i32(lo), jn_ew_clamp_bound_i32(hi));
        case JN_U8: return jn_ew_clamp_u8((uint8_t)a, jn_ew_clamp_bound_u8(lo), jn_ew_clamp_bound_u8(hi));
        default: return jn_ew_clamp_i64(a, jn_ew_clamp_bound_i64(lo), jn_ew_clamp_bound_i64(hi));
        }
    }
    case JN_OP_isnan: return jn_ew_isnan_i64(a);
    case JN_OP_where: return jn_ew_where_i64(a != 0, b, c);
    case JN_OP_masked_fill: return jn_ew_masked_fill_i64(a, b != 0, (int64_t)p.f1);
    EW_APPLY_ANY(i64)
    default: return a; /* the host only launches implemented ops */
    }
}

/* Input k of the elementwise kernel: loaded, or the host scalar passed by value. */
template <typename T> __device__ __forceinline__ T operand(const jn_cu_iter &it, int k, const int64_t *off) {
    if (k >= it.nops) return (T)0;
    if (it.imm >> k & 1) {
        if constexpr (std::is_floating_point<T>::value) return (T)it.imm_f[k];
        else return (T)it.imm_i[k];
    }
    return ld<T>(at(it, k, off), it.dtype[k]);
}

template <typename T> __global__ void ew_kernel(int op, jn_cu_iter it, jn_cu_params p) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < it.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[JN_CU_MAXOPS];
        offsets(it, i, off);
        T a = operand<T>(it, 1, off), b = operand<T>(it, 2, off), c = operand<T>(it, 3, off);
        st<T>(at(it, 0, off), it.dtype[0], ew_apply(op, a, b, c, p, it.dtype[0]));
    }
}

extern "C" cudaError_t jn_cu_ew(int op, int ct, const jn_cu_iter *it, const jn_cu_params *p, cudaStream_t s) {
    if (it->n == 0) return cudaSuccess;
    unsigned g = grid_for(it->n);
    if (ct == JN_CU_F64) ew_kernel<double><<<g, THREADS, 0, s>>>(op, *it, *p);
    else if (ct == JN_CU_I64) ew_kernel<int64_t><<<g, THREADS, 0, s>>>(op, *it, *p);
    else ew_kernel<float><<<g, THREADS, 0, s>>>(op, *it, *p);
    return cudaGetLastError();
}

/* ---- copies, fills, factories ---- */
__device__ __forceinline__ int is_intlike(int dt) { return dt == JN_I64 || dt == JN_I32 || dt == JN_U8 || dt == JN_BOOL; }

__global__ void copy_kernel(jn_cu_iter it) {
    const int ints = is_intlike(it.dtype[0]) && is_intlike(it.dtype[1]);
    const int es = elsize_c[it.dtype[0]], same = it.dtype[0] == it.dtype[1];
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < it.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[JN_CU_MAXOPS];
        offsets(it, i, off);
        char *d = at(it, 0, off);
        const char *sp = at(it, 1, off);
        if (same) {
            switch (es) {
            case 8: *(uint64_t *)d = *(const uint64_t *)sp; break;
            case 4: *(uint32_t *)d = *(const uint32_t *)sp; break;
            case 2: *(uint16_t *)d = *(const uint16_t *)sp; break;
            default: *(uint8_t *)d = *(const uint8_t *)sp; break;
            }
        } else if (ints) {
            st<int64_t>(d, it.dtype[0], ld<int64_t>(sp, it.dtype[1]));
        } else if (it.dtype[0] == JN_BOOL) {
            *(uint8_t *)d = ld<double>(sp, it.dtype[1]) != 0;
        } else if (is_intlike(it.dtype[1])) {
            st<double>(d, it.dtype[0], (double)ld<int64_t>(sp, it.dtype[1]));
        } else {
            st<double>(d, it.dtype[0], ld<double>(sp, it.dtype[1]));
        }
    }
}

extern "C" cudaError_t jn_cu_copy(const jn_cu_iter *it, cudaStream_t s) {
    if (it->n == 0) return cudaSuccess;
    copy_kernel<<<grid_for(it->n), THREADS, 0, s>>>(*it);
    return cudaGetLastError();
}

__global__ void fill_kernel(jn_cu_iter it, double v, int64_t iv) {
    const int ints = is_intlike(it.dtype[0]) && it.dtype[0] != JN_BOOL;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < it.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[JN_CU_MAXOPS];
        offsets(it, i, off);
        if (ints) st<int64_t>(at(it, 0, off), it.dtype[0], iv);
        else st<double>(at(it, 0, off), it.dtype[0], v);
    }
}

extern "C" cudaError_t jn_cu_fill(const jn_cu_iter *it, double v, int64_t iv, cudaStream_t s) {
    if (it->n == 0) return cudaSuccess;
    fill_kernel<<<grid_for(it->n), THREADS, 0, s>>>(*it, v, iv);
    return cudaGetLastError();
}

__global__ void arange_kernel(char *out, int dt, int64_t n, double start, double step, int is_int) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        char *p = out + i * elsize_c[dt];
        /* k_shape.c's arange: int64 math on the truncated bounds; halves in
         * float (as PyTorch); float32/64 in double */
        if (is_int) st<int64_t>(p, dt, (int64_t)((uint64_t)(int64_t)start + (uint64_t)(int64_t)step * (uint64_t)i));
        else if (dt == JN_F16 || dt == JN_BF16) st<float>(p, dt, (float)start + (float)step * (float)i);
        else st<double>(p, dt, start + step * (double)i);
    }
}

extern "C" cudaError_t jn_cu_arange(void *out, int dtype, int64_t n, double start, double step, int is_int,
                                    cudaStream_t s) {
    if (n == 0) return cudaSuccess;
    arange_kernel<<<grid_for(n), THREADS, 0, s>>>((char *)out, dtype, n, start, step, is_int);
    return cudaGetLastError();
}

__global__ void eye_kernel(char *out, int dt, int64_t n, int64_t m) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n * m; i += (int64_t)gridDim.x * blockDim.x)
        st<int64_t>(out + i * elsize_c[dt], dt, (int64_t)(i / m == i % m));
}

extern "C" cudaError_t jn_cu_eye(void *out, int dtype, int64_t n, int64_t m, cudaStream_t s) {
    if (n * m == 0) return cudaSuccess;
    eye_kernel<<<grid_for(n * m), THREADS, 0, s>>>((char *)out, dtype, n, m);
    return cudaGetLastError();
}

/* ---- reductions: one block per row of a contiguous [outer, inner] ---- */
template <typename T> __device__ __forceinline__ T red_init(int op) {
    switch (op) {
    case JN_OP_prod:
    case JN_OP_all: return (T)1;
    case JN_OP_amax:
        if constexpr (std::is_floating_point<T>::value) return (T)-INFINITY;
        else return (T)INT64_MIN;
    case JN_OP_amin:
        if constexpr (std::is_floating_point<T>::value) return (T)INFINITY;
        else return (T)INT64_MAX;
    default: return (T)0;
    }
}

template <typename T> __device__ __forceinline__ T red_join(int op, T a, T b) {
    switch (op) {
    case JN_OP_prod: return a * b;
    case JN_OP_amax:
        if constexpr (std::is_floating_point<T>::value) { if (isnan(a) || isnan(b)) return a + b; }
        return a > b ? a : b;
    case JN_OP_amin:
        if constexpr (std::is_floating_point<T>::value) { if (isnan(a) || isnan(b)) return a + b; }
        return a < b ? a : b;
    case JN_OP_all: return (T)((a != 0) && (b != 0));
    case JN_OP_any: return (T)((a != 0) || (b != 0));
    default: return a + b;
    }
}

template <typename T>
__global__ void reduce_kernel(int op, const char *in, int idt, char *out, int odt, int64_t outer, int64_t inner,
                              double scale) {
    __shared__ T sh[THREADS];
    for (int64_t row = blockIdx.x; row < outer; row += gridDim.x) {
        T acc = red_init<T>(op);
        const char *base = in + row * inner * elsize_c[idt];
        for (int64_t j = threadIdx.x; j < inner; j += blockDim.x) acc = red_join<T>(op, acc, ld<T>(base + j * elsize_c[idt], idt));
        sh[threadIdx.x] = acc;
        __syncthreads();
        for (int w = blockDim.x / 2; w > 0; w >>= 1) {
            if ((int)threadIdx.x < w) sh[threadIdx.x] = red_join<T>(op, sh[threadIdx.x], sh[threadIdx.x + w]);
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            T r = sh[0];
            if (scale != 1.0) r = (T)((double)r * scale);
            st<T>(out + row * elsize_c[odt], odt, r);
        }
        __syncthreads();
    }
}

extern "C" cudaError_t jn_cu_reduce(int op, int ct, const void *in, int in_dtype, void *out, int out_dtype,
                                    int64_t outer, int64_t inner, double scale, cudaStream_t s) {
    if (outer == 0) return cudaSuccess;
    unsigned g = (unsigned)(outer < 65535 * 16 ? outer : 65535 * 16);
    if (ct == JN_CU_F64)
        reduce_kernel<double><<<g, THREADS, 0, s>>>(op, (const char *)in, in_dtype, (char *)out, out_dtype, outer, inner, scale);
    else if (ct == JN_CU_I64)
        reduce_kernel<int64_t><<<g, THREADS, 0, s>>>(op, (const char *)in, in_dtype, (char *)out, out_dtype, outer, inner, scale);
    else
        reduce_kernel<float><<<g, THREADS, 0, s>>>(op, (const char *)in, in_dtype, (char *)out, out_dtype, outer, inner, scale);
    return cudaGetLastError();
}

/* ---- max/min with their index over rows: the first occurrence wins, a NaN
 * beats every number (the first NaN), as runtime/k_reduce.c ---- */
template <typename T> __device__ __forceinline__ bool arg_better(int is_max, T v, int64_t i, T bv, int64_t bi) {
    if constexpr (std::is_floating_point<T>::value) {
        bool vn = isnan(v), bn = isnan(bv);
        if (vn || bn) return vn && (!bn || i < bi);
    }
    if (v == bv) return i < bi;
    return is_max ? v > bv : v < bv;
}

template <typename T>
__global__ void argred_kernel(int is_max, const char *in, int idt, char *vout, int vdt, int64_t *iout, int64_t outer,
                              int64_t inner) {
    __shared__ T sv[THREADS];
    __shared__ int64_t si[THREADS];
    const int es = elsize_c[idt];
    for (int64_t row = blockIdx.x; row < outer; row += gridDim.x) {
        const char *base = in + row * inner * es;
        T bv = 0;
        int64_t bi = -1;
        for (int64_t j = threadIdx.x; j < inner; j += blockDim.x) {
            T v = ld<T>(base + j * es, idt);
            if (bi < 0 || arg_better<T>(is_max, v, j, bv, bi)) bv = v, bi = j;
        }
        sv[threadIdx.x] = bv;
        si[threadIdx.x] = bi;
        __syncthreads();
        for (int w = blockDim.x / 2; w > 0; w >>= 1) {
            if ((int)threadIdx.x < w) {
                int64_t oi = si[threadIdx.x + w];
                if (oi >= 0 && (si[threadIdx.x] < 0 || arg_better<T>(is_max, sv[threadIdx.x + w], oi, sv[threadIdx.x],
                                                                     si[threadIdx.x]))) {
                    sv[threadIdx.x] = sv[threadIdx.x + w];
                    si[threadIdx.x] = oi;
                }
            }
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            if (vout) st<T>(vout + row * elsize_c[vdt], vdt, sv[0]);
            iout[row] = si[0];
        }
        __syncthreads();
    }
}

extern "C" cudaError_t jn_cu_argreduce(int is_max, int ct, const void *in, int in_dtype, void *vout, int64_t *iout,
                                       int64_t outer, int64_t inner, cudaStream_t s) {
    if (outer == 0) return cudaSuccess;
    unsigned g = (unsigned)(outer < 65535 * 16 ? outer : 65535 * 16);
    if (ct == JN_CU_F64)
        argred_kernel<double><<<g, THREADS, 0, s>>>(is_max, (const char *)in, in_dtype, (char *)vout, in_dtype, iout, outer, inner);
    else if (ct == JN_CU_I64)
        argred_kernel<int64_t><<<g, THREADS, 0, s>>>(is_max, (const char *)in, in_dtype, (char *)vout, in_dtype, iout, outer, inner);
    else
        argred_kernel<float><<<g, THREADS, 0, s>>>(is_max, (const char *)in, in_dtype, (char *)vout, in_dtype, iout, outer, inner);
    return cudaGetLastError();
}

/* ---- softmax / log_softmax over rows ---- */
template <typename T> __device__ T block_reduce(T v, int is_max, T *sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {
        if ((int)threadIdx.x < w) {
            T o = sh[threadIdx.x + w];
            sh[threadIdx.x] = is_max ? (o > sh[threadIdx.x] || isnan(o) ? o : sh[threadIdx.x]) : sh[threadIdx.x] + o;
        }
        __syncthreads();
    }
    T r = sh[0];
    __syncthreads();
    return r;
}

template <typename T>
__global__ void softmax_kernel(const char *in, char *out, int dt, int64_t outer, int64_t inner, int logm) {
    __shared__ T sh[THREADS];
    const int es = elsize_c[dt];
    for (int64_t row = blockIdx.x; row < outer; row += gridDim.x) {
        const char *x = in + row * inner * es;
        char *y = out + row * inner * es;
        T mx = (T)-INFINITY;
        for (int64_t j = threadIdx.x; j < inner; j += blockDim.x) {
            T v = ld<T>(x + j * es, dt);
            mx = (v > mx || isnan(v)) ? v : mx;
        }
        mx = block_reduce<T>(mx, 1, sh);
        if (isinf(mx) && mx < 0) mx = 0; /* a row of -inf: exp(-inf - 0) = 0, as the CPU */
        T sum = 0;
        for (int64_t j = threadIdx.x; j < inner; j += blockDim.x) sum += exp(ld<T>(x + j * es, dt) - mx);
        sum = block_reduce<T>(sum, 0, sh);
        T lse = log(sum);
        for (int64_t j = threadIdx.x; j < inner; j += blockDim.x) {
            T v = ld<T>(x + j * es, dt) - mx;
            st<T>(y + j * es, dt, logm ? v - lse : exp(v) / sum);
        }
    }
}

extern "C" cudaError_t jn_cu_softmax(const void *in, void *out, int dtype, int ct, int64_t outer, int64_t inner,
                                     int log, cudaStream_t s) {
    if (outer == 0 || inner == 0) return cudaSuccess;
    unsigned g = (unsigned)(outer < 65535 * 16 ? outer : 65535 * 16);
    if (ct == JN_CU_F64) softmax_kernel<double><<<g, THREADS, 0, s>>>((const char *)in, (char *)out, dtype, outer, inner, log);
    else softmax_kernel<float><<<g, THREADS, 0, s>>>((const char *)in, (char *)out, dtype, outer, inner, log);
    return cudaGetLastError();
}

/* ---- random: runtime/k_random.c's normative stream definition ----
 * Element i (C order) takes Philox block (counter offset + i, key seed)
 * through the shared jn_philox_inline.  Only the draws built from integer
 * bits alone run here (rand: U24/U53/U11/U8; dropout_mask: U24 >= p), so
 * they equal the CPU's bit for bit; the rest draw on the host. */
__global__ void rand_kernel(char *out, int dt, int64_t n, uint64_t seed, uint64_t offset) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        uint32_t r[4];
        jn_philox_inline(offset + (uint64_t)i, seed, r);
        switch (dt) {
        case JN_F64: ((double *)out)[i] = (double)(((uint64_t)r[0] << 32 | r[1]) >> 11) * 0x1p-53; break;
        case JN_F16: st<float>(out + i * 2, dt, (float)(r[0] >> 21) * 0x1p-11f); break; /* exact in half */
        case JN_BF16: st<float>(out + i * 2, dt, (float)(r[0] >> 24) * 0x1p-8f); break;
        default: ((float *)out)[i] = (float)(r[0] >> 8) * 0x1p-24f; break;
        }
    }
}

__global__ void dropout_mask_kernel(uint8_t *out, int64_t n, uint64_t seed, uint64_t offset, double p) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        uint32_t r[4];
        jn_philox_inline(offset + (uint64_t)i, seed, r);
        out[i] = (double)(r[0] >> 8) * 0x1p-24 >= p;
    }
}

extern "C" cudaError_t jn_cu_random(int kind, void *out, int dtype, int64_t n, uint64_t seed, uint64_t offset,
                                    double p, cudaStream_t s) {
    if (n == 0) return cudaSuccess;
    if (kind == 0) rand_kernel<<<grid_for(n), THREADS, 0, s>>>((char *)out, dtype, n, seed, offset);
    else dropout_mask_kernel<<<grid_for(n), THREADS, 0, s>>>((uint8_t *)out, n, seed, offset, p);
    return cudaGetLastError();
}

/* ---- gather / scatter_add along dim ----
 * it: operand 0 = out (gather) or src (scatter_add), operand 1 = index; the
 * shape is the index's.  x / out are addressed with their own strides. */
__global__ void gather_kernel(jn_cu_iter it, int dim, jn_cu_iter xs, const char *x, int64_t xdim, int *bad) {
    const int es = elsize_c[it.dtype[0]];
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < it.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[JN_CU_MAXOPS], xo = 0, r = i;
        offsets(it, i, off);
        int64_t idx = ld<int64_t>(at(it, 1, off), it.dtype[1]);
        if (idx < 0) idx += xdim;
        if (idx < 0 || idx >= xdim) {
            *bad = 1;
            idx = 0;
        }
        for (int d = it.ndim - 1; d >= 0; d--) {
            int64_t c = r % it.shape[d];
            r /= it.shape[d];
            xo += (d == dim ? idx : c) * xs.stride[0][d];
        }
        const char *sp = x + xo * es;
        char *dp = at(it, 0, off);
        switch (es) {
        case 8: *(uint64_t *)dp = *(const uint64_t *)sp; break;
        case 4: *(uint32_t *)dp = *(const uint32_t *)sp; break;
        case 2: *(uint16_t *)dp = *(const uint16_t *)sp; break;
        default: *(uint8_t *)dp = *(const uint8_t *)sp; break;
        }
    }
}

extern "C" cudaError_t jn_cu_gather(const jn_cu_iter *it, int dim, const int64_t *xstride, const char *x,
                                    int64_t xdim_size, int *bad_index, cudaStream_t s) {
    if (it->n == 0) return cudaSuccess;
    jn_cu_iter xs = *it;
    for (int d = 0; d < it->ndim; d++) xs.stride[0][d] = xstride[d];
    gather_kernel<<<grid_for(it->n), THREADS, 0, s>>>(*it, dim, xs, x, xdim_size, bad_index);
    return cudaGetLastError();
}

__global__ void scatter_add_kernel(jn_cu_iter it, int dim, jn_cu_iter os, char *out, int64_t odim) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < it.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[JN_CU_MAXOPS], oo = 0, r = i;
        offsets(it, i, off);
        int64_t idx = ld<int64_t>(at(it, 1, off), it.dtype[1]);
        if (idx < 0) idx += odim;
        if (idx < 0 || idx >= odim) continue; /* checked on the host before the launch */
        for (int d = it.ndim - 1; d >= 0; d--) {
            int64_t c = r % it.shape[d];
            r /= it.shape[d];
            oo += (d == dim ? idx : c) * os.stride[0][d];
        }
        if (it.dtype[0] == JN_F64) atomicAdd((double *)out + oo, *(const double *)at(it, 0, off));
        else atomicAdd((float *)out + oo, *(const float *)at(it, 0, off));
    }
}

extern "C" cudaError_t jn_cu_scatter_add(const jn_cu_iter *it, int dim, const int64_t *ostride, char *out,
                                         int64_t odim_size, cudaStream_t s) {
    if (it->n == 0) return cudaSuccess;
    jn_cu_iter os = *it;
    for (int d = 0; d < it->ndim; d++) os.stride[0][d] = ostride[d];
    scatter_add_kernel<<<grid_for(it->n), THREADS, 0, s>>>(*it, dim, os, out, odim_size);
    return cudaGetLastError();
}

/* ---- fused optimizer updates: k_ewmath.h's steps (k_fused.c's), one thread per element ---- */
#define OPTIM_STEPS(sfx, T, U, F, ...)                                                                          \
    __device__ __forceinline__ void adam_step(T *p, T *m, T *v, T gr, T decay, T wd, T w1, T b2, T w2, T bc,     \
                                              T eps, T ns, int dec, int mx, int hw) {                           \
        jn_ew_adam_##sfx(p, m, v, gr, decay, wd, w1, b2, w2, bc, eps, ns, dec, mx, hw);                         \
    }                                                                                                           \
    __device__ __forceinline__ void sgd_step(T *p, T *buf, T gr, T nl, T mom, T damp, T wd, int mx, int hw,      \
                                             int nest, int first) {                                             \
        jn_ew_sgd_##sfx(p, buf, gr, nl, mom, damp, wd, mx, hw, nest, first);                                    \
    }
JN_EW_FLOATS(OPTIM_STEPS, )

template <typename T>
__global__ void adam_kernel(T *p, T *m, T *v, const T *gr, int64_t n, T decay, T wd, T w1, T b2, T w2, T bc, T eps,
                            T ns, int dec, int mx, int hw) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        adam_step(&p[i], &m[i], &v[i], gr[i], decay, wd, w1, b2, w2, bc, eps, ns, dec, mx, hw);
}

/* c: decay, wd, w1, b2, w2, bc2_sqrt, eps, neg_step */
extern "C" cudaError_t jn_cu_adam(void *p, void *m, void *v, const void *g, int f64, int64_t n, const double *c,
                                  int decoupled, int maximize, int has_wd, cudaStream_t s) {
    if (n == 0) return cudaSuccess;
    if (f64)
        adam_kernel<double><<<grid_for(n), THREADS, 0, s>>>((double *)p, (double *)m, (double *)v, (const double *)g, n,
                                                            c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], decoupled,
                                                            maximize, has_wd);
    else
        adam_kernel<float><<<grid_for(n), THREADS, 0, s>>>((float *)p, (float *)m, (float *)v, (const float *)g, n,
                                                           (float)c[0], (float)c[1], (float)c[2], (float)c[3],
                                                           (float)c[4], (float)c[5], (float)c[6], (float)c[7],
                                                           decoupled, maximize, has_wd);
    return cudaGetLastError();
}

template <typename T>
__global__ void sgd_kernel(T *p, T *buf, const T *gr, int64_t n, T nl, T mom, T damp, T wd, int mx, int hw, int nest,
                           int first) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        sgd_step(&p[i], &buf[i], gr[i], nl, mom, damp, wd, mx, hw, nest, first);
}

/* c: neg_lr, momentum, 1 - dampening, weight_decay */
extern "C" cudaError_t jn_cu_sgd(void *p, void *buf, const void *g, int f64, int64_t n, const double *c, int maximize,
                                 int has_wd, int nesterov, int first, cudaStream_t s) {
    if (n == 0) return cudaSuccess;
    if (f64)
        sgd_kernel<double><<<grid_for(n), THREADS, 0, s>>>((double *)p, (double *)buf, (const double *)g, n, c[0], c[1],
                                                           c[2], c[3], maximize, has_wd, nesterov, first);
    else
        sgd_kernel<float><<<grid_for(n), THREADS, 0, s>>>((float *)p, (float *)buf, (const float *)g, n, (float)c[0],
                                                          (float)c[1], (float)c[2], (float)c[3], maximize, has_wd,
                                                          nesterov, first);
    return cudaGetLastError();
}

/* ---- pooling: one thread per output (forward) or input (backward) element ----
 * Planes are (n, c) pairs; x is read through its element strides, outputs
 * are contiguous [planes, OH, OW] / [planes, H, W].  The rules are k_conv.c's
 * and k_grad.c's (window starts, clipping, NaN wins, divisors). */
__device__ __forceinline__ void avg_window(int64_t o, int64_t st, int64_t pad, int64_t k, int64_t in, int64_t *lo,
                                           int64_t *hi, int64_t *plen) { /* = jn_rt_avg_window (k_conv.h) */
    int64_t a = o * st - pad, b = a + k;
    if (b > in + pad) b = in + pad;
    *plen = b - a;
    *lo = a < 0 ? 0 : a;
    *hi = b > in ? in : b;
}

/* max_pool2d: the window's first in-range tap is the start index, a value
 * replaces the best when greater or NaN (k_conv.c's MAXPOOL), math in T
 * (double for float dtypes: exact for every stored value). */
template <typename T>
__global__ void maxpool_kernel(jn_cu_pool p, const char *x, int dt, char *val, int64_t *idx) {
    const int es = elsize_c[dt];
    const int64_t n = p.planes * p.OH * p.OW;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t ow = i % p.OW, oh = i / p.OW % p.OH, pl = i / (p.OW * p.OH);
        const char *xp = x + ((pl / p.C) * p.sn + (pl % p.C) * p.sc) * es;
        int64_t h0 = oh * p.sh - p.ph, h1 = h0 + (p.kh - 1) * p.dh + 1;
        int64_t w0 = ow * p.sw - p.pw, w1 = w0 + (p.kw - 1) * p.dw + 1;
        if (h1 > p.H) h1 = p.H;
        if (w1 > p.W) w1 = p.W;
        while (h0 < 0) h0 += p.dh;
        while (w0 < 0) w0 += p.dw;
        T best;
        if constexpr (std::is_floating_point<T>::value) best = (T)-INFINITY;
        else best = (T)(dt == JN_I32 ? INT32_MIN : dt == JN_U8 ? 0 : INT64_MIN);
        int64_t bi = h0 * p.W + w0;
        for (int64_t ih = h0; ih < h1; ih += p.dh)
            for (int64_t iw = w0; iw < w1; iw += p.dw) {
                T v = ld<T>(xp + (ih * p.xh + iw * p.xw) * es, dt);
                bool take = v > best;
                if constexpr (std::is_floating_point<T>::value) take = take || isnan(v);
                if (take) best = v, bi = ih * p.W + iw;
            }
        st<T>(val + i * es, dt, best);
        idx[i] = bi;
    }
}

extern "C" cudaError_t jn_cu_maxpool(const jn_cu_pool *p, const void *x, int dtype, void *val, int64_t *idx,
                                     cudaStream_t s) {
    int64_t n = p->planes * p->OH * p->OW;
    if (n == 0) return cudaSuccess;
    if (dtype == JN_I64 || dtype == JN_I32 || dtype == JN_U8)
        maxpool_kernel<int64_t><<<grid_for(n), THREADS, 0, s>>>(*p, (const char *)x, dtype, (char *)val, idx);
    else
        maxpool_kernel<double><<<grid_for(n), THREADS, 0, s>>>(*p, (const char *)x, dtype, (char *)val, idx);
    return cudaGetLastError();
}

/* avg_pool2d (mode 0; float dtypes summed in double, int64 in uint64 and
 * truncated as the CPU) and adaptive_avg_pool2d (mode 1). */
__global__ void avgpool_kernel(jn_cu_pool p, int adaptive, const char *x, int dt, char *out) {
    const int es = elsize_c[dt];
    const int64_t n = p.planes * p.OH * p.OW;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t ow = i % p.OW, oh = i / p.OW % p.OH, pl = i / (p.OW * p.OH);
        const char *xp = x + ((pl / p.C) * p.sn + (pl % p.C) * p.sc) * es;
        int64_t h0, h1, hn, w0, w1, wn, div;
        if (adaptive) {
            h0 = oh * p.H / p.OH, h1 = ((oh + 1) * p.H + p.OH - 1) / p.OH;
            w0 = ow * p.W / p.OW, w1 = ((ow + 1) * p.W + p.OW - 1) / p.OW;
            div = (h1 - h0) * (w1 - w0);
        } else {
            avg_window(oh, p.sh, p.ph, p.kh, p.H, &h0, &h1, &hn);
            avg_window(ow, p.sw, p.pw, p.kw, p.W, &w0, &w1, &wn);
            div = p.count_include_pad ? hn * wn : (h1 - h0) * (w1 - w0);
        }
        if (h0 >= h1 || w0 >= w1) {
            st<double>(out + i * es, dt, 0.0);
            continue;
        }
        if (dt == JN_I64) {
            uint64_t sum = 0;
            for (int64_t ih = h0; ih < h1; ih++)
                for (int64_t iw = w0; iw < w1; iw++) sum += (uint64_t)ld<int64_t>(xp + (ih * p.xh + iw * p.xw) * es, dt);
            *(int64_t *)(out + i * es) = (int64_t)sum / div;
        } else {
            double sum = 0;
            for (int64_t ih = h0; ih < h1; ih++)
                for (int64_t iw = w0; iw < w1; iw++) sum += ld<double>(xp + (ih * p.xh + iw * p.xw) * es, dt);
            st<double>(out + i * es, dt, sum / (double)div);
        }
    }
}

extern "C" cudaError_t jn_cu_avgpool(const jn_cu_pool *p, int adaptive, const void *x, int dtype, void *out,
                                     cudaStream_t s) {
    int64_t n = p->planes * p->OH * p->OW;
    if (n == 0) return cudaSuccess;
    avgpool_kernel<<<grid_for(n), THREADS, 0, s>>>(*p, adaptive, (const char *)x, dtype, (char *)out);
    return cudaGetLastError();
}

/* avg / adaptive backward, gathered: each input pixel adds grad/divisor of
 * every window that covers it, in (oh, ow) order -- the order in which the
 * CPU's scatter adds them, so the float sums round identically.  T is the
 * compute type (float for float32, double for float64); g is strided
 * ([N, C, OH, OW] element strides in p.sn.. via gs), dx contiguous. */
template <typename T>
__global__ void avgpool_bwd_kernel(jn_cu_pool p, int adaptive, const T *g, T *dx) {
    const int64_t n = p.planes * p.H * p.W;
    const int64_t g0 = p.gs[0], g1 = p.gs[1], g2 = p.gs[2], g3 = p.gs[3];
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t iw = i % p.W, ih = i / p.W % p.H, pl = i / (p.W * p.H);
        const T *gp = g + (pl / p.C) * g0 + (pl % p.C) * g1;
        int64_t ohl, ohh, owl, owh;
        if (adaptive) { /* windows covering ih: a few around ih * OH / H */
            ohl = ih * p.OH / p.H - 2, ohh = (ih + 1) * p.OH / p.H + 2;
            owl = iw * p.OW / p.W - 2, owh = (iw + 1) * p.OW / p.W + 2;
        } else { /* a = o*st - pad <= i < a + k */
            ohl = (ih + p.ph - p.kh + 1) / p.sh - 1, ohh = (ih + p.ph) / p.sh + 1;
            owl = (iw + p.pw - p.kw + 1) / p.sw - 1, owh = (iw + p.pw) / p.sw + 1;
        }
        if (ohl < 0) ohl = 0;
        if (owl < 0) owl = 0;
        if (ohh > p.OH) ohh = p.OH;
        if (owh > p.OW) owh = p.OW;
        T acc = 0;
        for (int64_t oh = ohl; oh < ohh; oh++) {
            int64_t h0, h1, hn;
            if (adaptive) h0 = oh * p.H / p.OH, h1 = ((oh + 1) * p.H + p.OH - 1) / p.OH, hn = 0;
            else avg_window(oh, p.sh, p.ph, p.kh, p.H, &h0, &h1, &hn);
            if (ih < h0 || ih >= h1) continue;
            for (int64_t ow = owl; ow < owh; ow++) {
                int64_t w0, w1, wn;
                if (adaptive) w0 = ow * p.W / p.OW, w1 = ((ow + 1) * p.W + p.OW - 1) / p.OW, wn = 0;
                else avg_window(ow, p.sw, p.pw, p.kw, p.W, &w0, &w1, &wn);
                if (iw < w0 || iw >= w1) continue;
                int64_t div = adaptive || !p.count_include_pad ? (h1 - h0) * (w1 - w0) : hn * wn;
                acc += gp[oh * g2 + ow * g3] / (T)div;
            }
        }
        dx[i] = acc;
    }
}

extern "C" cudaError_t jn_cu_avgpool_bwd(const jn_cu_pool *p, int adaptive, const void *g, int f64, void *dx,
                                         cudaStream_t s) {
    int64_t n = p->planes * p->H * p->W;
    if (n == 0) return cudaSuccess;
    if (f64) avgpool_bwd_kernel<double><<<grid_for(n), THREADS, 0, s>>>(*p, adaptive, (const double *)g, (double *)dx);
    else avgpool_bwd_kernel<float><<<grid_for(n), THREADS, 0, s>>>(*p, adaptive, (const float *)g, (float *)dx);
    return cudaGetLastError();
}

/* max_pool2d_backward: each output cell's grad added at its recorded index
 * (dx zeroed by the host first).  The indices need not come from a window
 * (the op only knows input_size), so this scatters with atomics: exact
 * when no two cells share an argmax (non-overlapping windows); otherwise
 * the few colliding sums may round in another order than the CPU's. */
template <typename T> __global__ void maxpool_bwd_kernel(jn_cu_pool p, const T *g, const int64_t *idx, T *dx, int *bad) {
    const int64_t n = p.planes * p.OH * p.OW, HW = p.H * p.W;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t ow = i % p.OW, oh = i / p.OW % p.OH, pl = i / (p.OW * p.OH), nn = pl / p.C, c = pl % p.C;
        int64_t k = idx[nn * p.is[0] + c * p.is[1] + oh * p.is[2] + ow * p.is[3]];
        if ((uint64_t)k >= (uint64_t)HW) {
            *bad = 1;
            continue;
        }
        atomicAdd(dx + pl * HW + k, g[nn * p.gs[0] + c * p.gs[1] + oh * p.gs[2] + ow * p.gs[3]]);
    }
}

extern "C" cudaError_t jn_cu_maxpool_bwd(const jn_cu_pool *p, const void *g, const int64_t *idx, int f64, void *dx,
                                         int *bad, cudaStream_t s) {
    int64_t n = p->planes * p->OH * p->OW;
    if (n == 0) return cudaSuccess;
    if (f64) maxpool_bwd_kernel<double><<<grid_for(n), THREADS, 0, s>>>(*p, (const double *)g, idx, (double *)dx, bad);
    else maxpool_bwd_kernel<float><<<grid_for(n), THREADS, 0, s>>>(*p, (const float *)g, idx, (float *)dx, bad);
    return cudaGetLastError();
}

/* ---- fused RNN cells: runtime/k_fused.c's per-element formulas, in its
 * order; the activations are k_ewmath.h's sigmoid and tanh (as the CPU).
 * Operands contiguous [rows, G*H]; one thread per (row, j). */
template <typename T> __device__ __forceinline__ T cell_sig(T x) {
    if constexpr (std::is_same<T, float>::value) return jn_ew_sigmoid_f32(x);
    else return jn_ew_sigmoid_f64(x);
}
template <typename T> __device__ __forceinline__ T cell_tanh(T x) {
    if constexpr (std::is_same<T, float>::value) return jn_ew_tanh_f32(x);
    else return jn_ew_tanh_f64(x);
}

template <typename T>
__global__ void lstm_fwd_kernel(int64_t rows, int64_t H, const T *gx, const T *gh, const T *c, T *h2, T *c2, T *ws) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < rows * H; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = e / H, j = e % H;
        const T *x = gx + r * 4 * H, *y = gh + r * 4 * H;
        T *w = ws + r * 6 * H;
        T i = cell_sig<T>(x[j] + y[j]), f = cell_sig<T>(x[H + j] + y[H + j]);
        T g = cell_tanh<T>(x[2 * H + j] + y[2 * H + j]), o = cell_sig<T>(x[3 * H + j] + y[3 * H + j]);
        T cr = c[e], cc = f * cr + i * g, tc = cell_tanh<T>(cc);
        c2[e] = cc;
        h2[e] = o * tc;
        w[j] = i;
        w[H + j] = f;
        w[2 * H + j] = g;
        w[3 * H + j] = o;
        w[4 * H + j] = cr;
        w[5 * H + j] = tc;
    }
}

template <typename T>
__global__ void lstm_bwd_kernel(int64_t rows, int64_t H, const T *dh, const T *dc, const T *ws, T *dg, T *dcp) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < rows * H; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = e / H, j = e % H;
        const T *w = ws + r * 6 * H;
        T *d = dg + r * 4 * H;
        T i = w[j], f = w[H + j], g = w[2 * H + j], o = w[3 * H + j], c = w[4 * H + j], tc = w[5 * H + j];
        T dcs = dc[e] + dh[e] * o * (1 - tc * tc);
        d[j] = dcs * g * (i * (1 - i));
        d[H + j] = dcs * c * (f * (1 - f));
        d[2 * H + j] = dcs * i * (1 - g * g);
        d[3 * H + j] = dh[e] * tc * (o * (1 - o));
        dcp[e] = dcs * f;
    }
}

template <typename T>
__global__ void gru_fwd_kernel(int64_t rows, int64_t H, const T *gx, const T *gh, const T *h, T *h2, T *ws) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < rows * H; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = e / H, j = e % H;
        const T *x = gx + r * 3 * H, *y = gh + r * 3 * H;
        T *w = ws + r * 5 * H;
        T rg = cell_sig<T>(x[j] + y[j]), z = cell_sig<T>(x[H + j] + y[H + j]), hn = y[2 * H + j];
        T n = cell_tanh<T>(x[2 * H + j] + rg * hn);
        h2[e] = (1 - z) * n + z * h[e];
        w[j] = rg;
        w[H + j] = z;
        w[2 * H + j] = n;
        w[3 * H + j] = hn;
        w[4 * H + j] = h[e];
    }
}

template <typename T>
__global__ void gru_bwd_kernel(int64_t rows, int64_t H, const T *dh, const T *ws, T *dgx, T *dgh, T *dhp) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < rows * H; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = e / H, j = e % H;
        const T *w = ws + r * 5 * H;
        T *a = dgx + r * 3 * H, *b = dgh + r * 3 * H;
        T rg = w[j], z = w[H + j], n = w[2 * H + j], hn = w[3 * H + j], g = dh[e];
        T dn = g * (1 - z) * (1 - n * n);
        T dz = g * (w[4 * H + j] - n) * (z * (1 - z));
        T drg = dn * hn * (rg * (1 - rg));
        a[j] = b[j] = drg;
        a[H + j] = b[H + j] = dz;
        a[2 * H + j] = dn;
        b[2 * H + j] = dn * rg;
        dhp[e] = g * z;
    }
}

/* kind: 0 lstm_cell, 1 lstm_cell_backward, 2 gru_cell, 3 gru_cell_backward;
 * in/out: the op's inputs and outputs in table order (contiguous). */
template <typename T>
static void cell_launch(int kind, int64_t rows, int64_t H, const void *const *in, void *const *out, cudaStream_t s) {
    unsigned g = grid_for(rows * H);
    const T *a = (const T *)in[0], *b = (const T *)in[1], *c = (const T *)in[2];
    T *o0 = (T *)out[0], *o1 = (T *)out[1], *o2 = (T *)out[2];
    switch (kind) {
    case 0: lstm_fwd_kernel<T><<<g, THREADS, 0, s>>>(rows, H, a, b, c, o0, o1, o2); break;
    case 1: lstm_bwd_kernel<T><<<g, THREADS, 0, s>>>(rows, H, a, b, c, o0, o1); break;
    case 2: gru_fwd_kernel<T><<<g, THREADS, 0, s>>>(rows, H, a, b, c, o0, o1); break;
    default: gru_bwd_kernel<T><<<g, THREADS, 0, s>>>(rows, H, a, b, o0, o1, o2); break;
    }
}

extern "C" cudaError_t jn_cu_cell(int kind, int f64, int64_t rows, int64_t H, const void *const *in, void *const *out,
                                  cudaStream_t s) {
    if (rows * H == 0) return cudaSuccess;
    if (f64) cell_launch<double>(kind, rows, H, in, out, s);
    else cell_launch<float>(kind, rows, H, in, out, s);
    return cudaGetLastError();
}

/* ---- logsumexp over the rows of a contiguous [outer, inner] ----
 * k_reduce.c: the max (NaN wins), an infinite max replaced by 0, then the
 * sum in double of exp(x - m) -- in float32 for float32 and the half types,
 * as the CPU (whose jexpf and this fast_expf are both Cephes' polynomial,
 * within ~1 ulp of each other) -- and log(sum) + m. */
__global__ void logsumexp_kernel(const char *in, int dt, char *out, int odt, int64_t outer, int64_t inner) {
    __shared__ double sh[THREADS];
    const int es = elsize_c[dt];
    const bool f32 = dt == JN_F32 || dt == JN_F16 || dt == JN_BF16;
    for (int64_t row = blockIdx.x; row < outer; row += gridDim.x) {
        const char *x = in + row * inner * es;
        double m = -INFINITY;
        for (int64_t j = threadIdx.x; j < inner; j += blockDim.x) {
            double v = ld<double>(x + j * es, dt);
            if (v > m || (isnan(v) && !isnan(m))) m = v;
        }
        sh[threadIdx.x] = m;
        __syncthreads();
        for (int w = blockDim.x / 2; w > 0; w >>= 1) {
            if ((int)threadIdx.x < w) {
                double o = sh[threadIdx.x + w], c = sh[threadIdx.x];
                if (o > c || (isnan(o) && !isnan(c))) sh[threadIdx.x] = o;
            }
            __syncthreads();
        }
        m = sh[0];
        __syncthreads();
        if (isinf(m)) m = 0;
        double sum = 0;
        for (int64_t j = threadIdx.x; j < inner; j += blockDim.x) {
            double v = ld<double>(x + j * es, dt);
            sum += f32 ? (double)fast_expf((float)v - (float)m) : exp(v - m);
        }
        sum = block_reduce<double>(sum, 0, sh);
        if (threadIdx.x == 0) st<double>(out + row * elsize_c[odt], odt, log(sum) + m);
        __syncthreads();
    }
}

extern "C" cudaError_t jn_cu_logsumexp(const void *in, int in_dtype, void *out, int out_dtype, int64_t outer,
                                       int64_t inner, cudaStream_t s) {
    if (outer == 0) return cudaSuccess;
    unsigned g = (unsigned)(outer < 65535 * 16 ? outer : 65535 * 16);
    logsumexp_kernel<<<g, THREADS, 0, s>>>((const char *)in, in_dtype, (char *)out, out_dtype, outer, inner);
    return cudaGetLastError();
}

/* ---- linspace: k_shape.c's halves (up from start, down from end), float
 * math for float32 and the half types, double otherwise ---- */
__global__ void linspace_kernel(char *out, int dt, int64_t steps, int64_t half, double start, double end,
                                double step) {
    const int es = elsize_c[dt];
    const bool fm = dt == JN_F32 || dt == JN_F16 || dt == JN_BF16;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < steps; i += (int64_t)gridDim.x * blockDim.x) {
        if (fm) {
            float fs = (float)start, fe = (float)end, fst = (float)step;
            st<float>(out + i * es, dt, i < half ? fs + fst * (float)i : fe - fst * (float)(steps - i - 1));
        } else {
            double v = i < half ? start + step * (double)i : end - step * (double)(steps - i - 1);
            if (dt == JN_F64) *(double *)(out + i * es) = v;
            else st<int64_t>(out + i * es, dt, (int64_t)v);
        }
    }
}

extern "C" cudaError_t jn_cu_linspace(void *out, int dtype, int64_t steps, int64_t half, double start, double end,
                                      double step, cudaStream_t s) {
    if (steps == 0) return cudaSuccess;
    linspace_kernel<<<grid_for(steps), THREADS, 0, s>>>((char *)out, dtype, steps, half, start, end, step);
    return cudaGetLastError();
}

/* ---- scatter (plain writes): one thread per row of positions that differ
 * only along dim, walking the row in order, so duplicates keep the last
 * write in C order as on the CPU; rows never collide.  it: operand 0 = src
 * (stride 0 for a value), operand 1 = index, shape = the index's with dim
 * of size 1; L / istr / sstr: the row length and strides along dim. */
__global__ void scatter_kernel(jn_cu_iter it, int dim, int64_t L, int64_t istr, int64_t sstr, jn_cu_iter os,
                               char *out, int64_t odim, int *bad) {
    const int es = elsize_c[it.dtype[0]];
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < it.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[JN_CU_MAXOPS], oo = 0, r = i;
        offsets(it, i, off);
        for (int d = it.ndim - 1; d >= 0; d--) {
            int64_t c = r % it.shape[d];
            r /= it.shape[d];
            if (d != dim) oo += c * os.stride[0][d];
        }
        for (int64_t j = 0; j < L; j++) {
            int64_t idx = ld<int64_t>(it.ptr[1] + (off[1] + j * istr) * elsize_c[it.dtype[1]], it.dtype[1]);
            if (idx < 0 || idx >= odim) {
                *bad = 1;
                break;
            }
            const char *sp = it.ptr[0] + (off[0] + j * sstr) * es;
            char *dp = out + (oo + idx * os.stride[0][dim]) * es;
            switch (es) {
            case 8: *(uint64_t *)dp = *(const uint64_t *)sp; break;
            case 4: *(uint32_t *)dp = *(const uint32_t *)sp; break;
            case 2: *(uint16_t *)dp = *(const uint16_t *)sp; break;
            default: *(uint8_t *)dp = *(const uint8_t *)sp; break;
            }
        }
    }
}

extern "C" cudaError_t jn_cu_scatter(const jn_cu_iter *it, int dim, int64_t L, int64_t istr, int64_t sstr,
                                     const int64_t *ostride, char *out, int64_t odim_size, int *bad, cudaStream_t s) {
    if (it->n == 0 || L == 0) return cudaSuccess;
    jn_cu_iter os = *it;
    for (int d = 0; d < it->ndim; d++) os.stride[0][d] = ostride[d];
    scatter_kernel<<<grid_for(it->n), THREADS, 0, s>>>(*it, dim, L, istr, sstr, os, out, odim_size, bad);
    return cudaGetLastError();
}

/* ---- one_hot: out (int64, zeroed) [n, C]; a class outside [0, C) sets bad ---- */
__global__ void one_hot_kernel(jn_cu_iter it, int64_t C, int64_t *out, int *bad) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < it.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[JN_CU_MAXOPS];
        offsets(it, i, off);
        int64_t v = ld<int64_t>(at(it, 1, off), it.dtype[1]);
        if (v < 0 || v >= C) {
            *bad = 1;
            continue;
        }
        out[i * C + v] = 1;
    }
}

extern "C" cudaError_t jn_cu_one_hot(const jn_cu_iter *it, int64_t C, int64_t *out, int *bad, cudaStream_t s) {
    if (it->n == 0) return cudaSuccess;
    one_hot_kernel<<<grid_for(it->n), THREADS, 0, s>>>(*it, C, out, bad);
    return cudaGetLastError();
}

/* ---- advanced indexing through element offsets ----
 * it: operand 0 = the result of index (or the values of index_put_,
 * broadcast), operand 1 = the int64 element offsets into x of every result
 * position (contiguous, computed on the host).  mode 0: out <- x[off];
 * 1: x[off] <- v; 2: x[off] += v (atomics; float32/64, int32/64). */
__global__ void offsets_kernel(int mode, jn_cu_iter it, char *x) {
    const int es = elsize_c[it.dtype[0]], dt = it.dtype[0];
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < it.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[JN_CU_MAXOPS];
        offsets(it, i, off);
        char *xp = x + *(const int64_t *)at(it, 1, off) * es;
        char *vp = at(it, 0, off);
        if (mode == 2) {
            switch (dt) {
            case JN_F64: atomicAdd((double *)xp, *(const double *)vp); break;
            case JN_F32: atomicAdd((float *)xp, *(const float *)vp); break;
            case JN_I64: atomicAdd((unsigned long long *)xp, (unsigned long long)*(const int64_t *)vp); break;
            default: atomicAdd((int *)xp, *(const int *)vp); break;
            }
            continue;
        }
        char *dp = mode ? xp : vp;
        const char *sp = mode ? vp : xp;
        switch (es) {
        case 8: *(uint64_t *)dp = *(const uint64_t *)sp; break;
        case 4: *(uint32_t *)dp = *(const uint32_t *)sp; break;
        case 2: *(uint16_t *)dp = *(const uint16_t *)sp; break;
        default: *(uint8_t *)dp = *(const uint8_t *)sp; break;
        }
    }
}

extern "C" cudaError_t jn_cu_index_offsets(int mode, const jn_cu_iter *it, void *x, cudaStream_t s) {
    if (it->n == 0) return cudaSuccess;
    offsets_kernel<<<grid_for(it->n), THREADS, 0, s>>>(mode, *it, (char *)x);
    return cudaGetLastError();
}
