/* dtype.c -- dtype tables, PyTorch type promotion and element conversions.
 *
 * Everything about dtypes that is not a kernel lives here: names, sizes,
 * categories, promote_types, result_type over mixed tensors/Python numbers,
 * and half/bfloat16 conversion (round to nearest even, NaN preserved).
 */
#include "jn_runtime.h"

#include <math.h>
#include <string.h>

const char *const jn_dtype_names[JN_NDTYPES] = {
#define X(e, n, t, s, f, i) #n,
    JN_DTYPES(X)
#undef X
};
const size_t jn_dtype_size[JN_NDTYPES] = {
#define X(e, n, t, s, f, i) s,
    JN_DTYPES(X)
#undef X
};
static const int is_float_tab[JN_NDTYPES] = {
#define X(e, n, t, s, f, i) f,
    JN_DTYPES(X)
#undef X
};
static const int is_int_tab[JN_NDTYPES] = {
#define X(e, n, t, s, f, i) i,
    JN_DTYPES(X)
#undef X
};

int jn_dtype_is_float(jn_dtype d) { return is_float_tab[d]; }
int jn_dtype_is_int(jn_dtype d) { return is_int_tab[d]; }

/* Rank within a category: larger wins. */
static int rank(jn_dtype d) {
    switch (d) {
    case JN_U8: return 1;
    case JN_I32: return 3;
    case JN_I64: return 4;
    case JN_F16: case JN_BF16: return 1;
    case JN_F32: return 2;
    case JN_F64: return 3;
    default: return 0;
    }
}

jn_dtype jn_promote(jn_dtype a, jn_dtype b) {
    if (a == b) return a;
    if (a == JN_BOOL) return b;
    if (b == JN_BOOL) return a;
    int fa = is_float_tab[a], fb = is_float_tab[b];
    if (fa && fb) {
        if ((a == JN_F16 && b == JN_BF16) || (a == JN_BF16 && b == JN_F16)) return JN_F32;
        return rank(a) >= rank(b) ? a : b;
    }
    if (fa) return a;
    if (fb) return b;
    /* both integral: uint8 with a signed type gives the signed type */
    return rank(a) >= rank(b) ? a : b;
}

int jn_dtype_from_name(const char *name) {
    static const struct { const char *n; jn_dtype d; } alias[] = {
        {"float", JN_F32}, {"double", JN_F64}, {"half", JN_F16}, {"long", JN_I64},
        {"int", JN_I32},   {"byte", JN_U8},    {"float32", JN_F32}, {"float64", JN_F64},
        {"float16", JN_F16}, {"bfloat16", JN_BF16}, {"int64", JN_I64}, {"int32", JN_I32},
        {"uint8", JN_U8},  {"bool", JN_BOOL},
    };
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
        if (!strcmp(alias[i].n, name)) return (int)alias[i].d;
    return -1;
}

/* PyTorch's result_type: three priority levels, combined by category. */
static int category(jn_dtype d) { return d == JN_BOOL ? 0 : is_float_tab[d] ? 2 : 1; }

static int combine(int higher, int lower) {
    if (higher < 0) return lower;
    if (lower < 0) return higher;
    if (is_float_tab[higher]) return higher;
    if (higher == JN_BOOL || category((jn_dtype)lower) > category((jn_dtype)higher))
        return jn_promote((jn_dtype)higher, (jn_dtype)lower);
    return higher;
}

jn_dtype jn_result_type(int n, jn_tensor *const *ts) {
    int dim = -1, zero = -1, wrapped = -1;
    for (int i = 0; i < n; i++) {
        const jn_tensor *t = ts[i];
        if (!t) continue;
        int *slot = t->wrapped_number ? &wrapped : t->ndim == 0 ? &zero : &dim;
        jn_dtype d = t->dtype;
        if (t->wrapped_number && is_float_tab[d]) d = JN_DEFAULT_DTYPE;
        *slot = *slot < 0 ? (int)d : (int)jn_promote((jn_dtype)*slot, d);
    }
    int r = combine(dim, combine(zero, wrapped));
    return r < 0 ? JN_DEFAULT_DTYPE : (jn_dtype)r;
}

/* ---- half / bfloat16 ---- */
float jn_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0) {
        if (man == 0) bits = sign;
        else { /* subnormal: normalize */
            int e = -1;
            do { e++; man <<= 1; } while (!(man & 0x400));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
        }
    } else if (exp == 31) bits = sign | 0x7f800000u | (man << 13);
    else bits = sign | ((exp + 112) << 23) | (man << 13);
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t jn_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* overflow to inf */
    if (ax < 0x38800000u) { /* subnormal or zero in half */
        float a;
        memcpy(&a, &ax, 4);
        /* scale so the half subnormal unit is 1, round to nearest even */
        float s = a * 16777216.0f; /* 2^24 */
        uint32_t m = (uint32_t)nearbyintf(s);
        return (uint16_t)(sign | m);
    }
    uint32_t e = ((ax >> 23) - 112) << 10, m = ax & 0x7fffff;
    uint32_t h = e | (m >> 13);
    uint32_t rest = m & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

float jn_bf16_to_f32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t jn_f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

double jn_load_f64(const void *p, jn_dtype d) {
    switch (d) {
    case JN_F32: return *(const float *)p;
    case JN_F64: return *(const double *)p;
    case JN_F16: return jn_f16_to_f32(*(const uint16_t *)p);
    case JN_BF16: return jn_bf16_to_f32(*(const uint16_t *)p);
    case JN_I64: return (double)*(const int64_t *)p;
    case JN_I32: return *(const int32_t *)p;
    case JN_U8: return *(const uint8_t *)p;
    case JN_BOOL: return *(const uint8_t *)p != 0;
    default: return 0;
    }
}

/* Float -> integer casts of out-of-range values are undefined in C; clamp
 * (saturate) so UBSan stays quiet and results are deterministic. */
static int64_t f2i(double v, double lo, double hi) {
    if (v != v) return 0;
    if (v <= lo) return (int64_t)lo;
    if (v >= hi) return (int64_t)hi;
    return (int64_t)v;
}

void jn_store_f64(void *p, jn_dtype d, double v) {
    switch (d) {
    case JN_F32: *(float *)p = (float)v; break;
    case JN_F64: *(double *)p = v; break;
    case JN_F16: *(uint16_t *)p = jn_f32_to_f16((float)v); break;
    case JN_BF16: *(uint16_t *)p = jn_f32_to_bf16((float)v); break;
    case JN_I64: *(int64_t *)p = f2i(v, -9223372036854775808.0, 9223372036854774784.0); break;
    case JN_I32: *(int32_t *)p = (int32_t)f2i(v, -2147483648.0, 2147483647.0); break;
    case JN_U8: *(uint8_t *)p = (uint8_t)(f2i(v, -9223372036854775808.0, 9223372036854774784.0) & 0xff); break;
    case JN_BOOL: *(uint8_t *)p = v != 0; break;
    default: break;
    }
}

int64_t jn_load_i64(const void *p, jn_dtype d) {
    switch (d) {
    case JN_I64: return *(const int64_t *)p;
    case JN_I32: return *(const int32_t *)p;
    case JN_U8: return *(const uint8_t *)p;
    case JN_BOOL: return *(const uint8_t *)p != 0;
    default: return f2i(jn_load_f64(p, d), -9223372036854775808.0, 9223372036854774784.0);
    }
}

void jn_store_i64(void *p, jn_dtype d, int64_t v) {
    switch (d) {
    case JN_I64: *(int64_t *)p = v; break;
    case JN_I32: *(int32_t *)p = (int32_t)v; break;
    case JN_U8: *(uint8_t *)p = (uint8_t)v; break;
    case JN_BOOL: *(uint8_t *)p = v != 0; break;
    default: jn_store_f64(p, d, (double)v); break;
    }
}
