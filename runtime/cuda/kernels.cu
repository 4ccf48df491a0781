/* kernels.cu -- the CUDA backend's kernels (sm_90 SASS + compute_90 PTX).
 *
 * One generic strided elementwise kernel: each thread maps a linear index to
 * per-operand offsets through the jn_cu_iter (shape + element strides, 0
 * where broadcast), loads every input converted to the math type (float for
 * float32/float16/bfloat16, double, int64 for integers and bool), applies
 * the op's per-element expression -- written to match runtime/k_elementwise.c
 * -- and stores converted to the output dtype.  The op is a kernel argument
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

/* ---- the per-element expressions (runtime/k_elementwise.c's semantics) ---- */
template <typename T> __device__ __forceinline__ T ew_apply(int op, T a, T b, T c, const jn_cu_params &p) {
    if constexpr (std::is_floating_point<T>::value) {
        switch (op) {
        case JN_OP_add: return a + (T)p.f0 * b;
        case JN_OP_sub: return a - (T)p.f0 * b;
        case JN_OP_mul: return a * b;
        case JN_OP_div: {
            T q = a / b;
            return p.i0 == 1 ? trunc(q) : p.i0 == 2 ? floor(q) : q;
        }
        case JN_OP_pow: return b == (T)2 ? a * a : pow(a, b); /* as the CPU (k_elementwise.c) */
        case JN_OP_remainder: {
            T r = fmod(a, b);
            return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
        }
        case JN_OP_maximum: return (isnan(a) || isnan(b)) ? a + b : (a > b ? a : b);
        case JN_OP_minimum: return (isnan(a) || isnan(b)) ? a + b : (a < b ? a : b);
        case JN_OP_atan2: return atan2(a, b);
        case JN_OP_neg: return -a;
        case JN_OP_exp: return exp(a);
        case JN_OP_log: return log(a);
        case JN_OP_log1p: return log1p(a);
        case JN_OP_expm1: return expm1(a);
        case JN_OP_sqrt: return sqrt(a);
        case JN_OP_rsqrt: return (T)1 / sqrt(a);
        case JN_OP_abs: return fabs(a);
        case JN_OP_sign: return isnan(a) ? a : (T)((a > 0) - (a < 0));
        case JN_OP_reciprocal: return (T)1 / a;
        case JN_OP_tanh: return tanh(a);
        case JN_OP_sigmoid: return (T)1 / ((T)1 + exp(-a));
        case JN_OP_relu: return a > 0 ? a : (isnan(a) ? a : (T)0);
        case JN_OP_gelu:
            if (p.i0 == 1) {
                const T k = (T)0.7978845608028654, c3 = (T)0.044715;
                return (T)0.5 * a * ((T)1 + tanh(k * (a + c3 * a * a * a)));
            }
            return (T)0.5 * a * ((T)1 + erf(a * (T)0.7071067811865476));
        case JN_OP_silu: return a / ((T)1 + exp(-a));
        case JN_OP_sin: return sin(a);
        case JN_OP_cos: return cos(a);
        case JN_OP_erf: return erf(a);
        case JN_OP_floor: return floor(a);
        case JN_OP_ceil: return ceil(a);
        case JN_OP_round: return rint(a);
        case JN_OP_clamp: {
            if (isnan(a)) return a;
            T r = a;
            if (p.b0 && r < (T)p.f0) r = (T)p.f0;
            if (p.b1 && r > (T)p.f1) r = (T)p.f1;
            return r;
        }
        default: break;
        }
    } else {
        switch (op) {
        case JN_OP_add: return a + (T)p.f0 * b;
        case JN_OP_sub: return a - (T)p.f0 * b;
        case JN_OP_mul: return a * b;
        case JN_OP_div: { /* integer results only for trunc / floor */
            if (b == 0) return 0;
            T q = a / b;
            if (p.i0 == 2 && (a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
            return q;
        }
        case JN_OP_pow: {
            if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
            T r = 1, x = a;
            for (T e = b; e; e >>= 1, x *= x)
                if (e & 1) r *= x;
            return r;
        }
        case JN_OP_remainder: {
            if (b == 0) return 0;
            T r = a % b;
            return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
        }
        case JN_OP_maximum: return a > b ? a : b;
        case JN_OP_minimum: return a < b ? a : b;
        case JN_OP_neg: return -a;
        case JN_OP_abs: return a < 0 ? -a : a;
        case JN_OP_sign: return (T)((a > 0) - (a < 0));
        case JN_OP_relu: return a > 0 ? a : 0;
        case JN_OP_floor:
        case JN_OP_ceil:
        case JN_OP_round: return a;
        case JN_OP_clamp: {
            T r = a;
            if (p.b0 && (double)r < p.f0) r = (T)ceil(p.f0);
            if (p.b1 && (double)r > p.f1) r = (T)floor(p.f1);
            return r;
        }
        default: break;
        }
    }
    switch (op) { /* every math type */
    case JN_OP_eq: return a == b;
    case JN_OP_ne: return a != b;
    case JN_OP_lt: return a < b;
    case JN_OP_le: return a <= b;
    case JN_OP_gt: return a > b;
    case JN_OP_ge: return a >= b;
    case JN_OP_logical_and: return (a != 0) && (b != 0);
    case JN_OP_logical_or: return (a != 0) || (b != 0);
    case JN_OP_logical_xor: return (a != 0) != (b != 0);
    case JN_OP_logical_not: return a == 0;
    case JN_OP_isnan: return a != a;
    case JN_OP_where: return a != 0 ? b : c;
    case JN_OP_masked_fill: return b != 0 ? (T)p.f1 : a;
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
        st<T>(at(it, 0, off), it.dtype[0], ew_apply<T>(op, a, b, c, p));
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

/* ---- fused optimizer updates: runtime/k_fused.c's operations in its order ---- */
template <typename T>
__global__ void adam_kernel(T *p, T *m, T *v, const T *gr, int64_t n, T decay, T wd, T w1, T b2, T w2, T bc, T eps,
                            T ns, int dec, int mx, int hw) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        T g = mx ? -gr[i] : gr[i], pv = p[i];
        if (hw) {
            if (dec) pv = pv * decay;
            else g = g + wd * pv;
        }
        T mv = m[i] + w1 * (g - m[i]);
        T vv = v[i] * b2;
        vv = vv + w2 * (g * g);
        T den = sqrt(vv) / bc + eps;
        m[i] = mv;
        v[i] = vv;
        p[i] = pv + ns * (mv / den);
    }
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
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        T g = mx ? -gr[i] : gr[i];
        if (hw) g = g + wd * p[i];
        T b = first ? g : buf[i] * mom + damp * g;
        buf[i] = b;
        g = nest ? g + mom * b : b;
        p[i] = p[i] + nl * g;
    }
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
