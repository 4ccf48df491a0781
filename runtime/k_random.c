/* k_random.c -- random numbers from the counter-based Philox stream.
 *
 * Every value depends only on (seed, offset, element index), never on the
 * order in which threads produce it, so results are identical for any thread
 * count and the CUDA backend can reproduce them bit for bit.
 *
 * STREAM DEFINITION (normative; the CUDA backend implements exactly this)
 * ------------------------------------------------------------------------
 * The dispatcher fills the last two attributes (seed, offset) from the
 * default generator and then advances its offset by the output numel.
 * Element i of the output (of x for the in-place ops, whatever x's strides),
 * in C (row-major) order of its shape, uses one Philox4x32-10 block:
 *     r[0..3] = jn_philox(counter = offset + i (mod 2^64), key = seed)
 * (counter words c0..c3 = lo32(counter), hi32(counter), 0, 0; key words
 * k0, k1 = lo32(seed), hi32(seed)).  With X = r[0] << 32 | r[1] (64 bits):
 *   U24 = (r[0] >> 8) * 2^-24                 in [0, 1), exact in float32
 *   U53 = (X >> 11) * 2^-53                   in [0, 1), exact in float64
 *   U11 = (r[0] >> 21) * 2^-11, U8 = (r[0] >> 24) * 2^-8  (exact in float16 / bfloat16)
 * rand           float32: U24, float64: U53, float16: U11, bfloat16: U8.
 * uniform_(lo,hi) v = lo + (hi - lo) * U in double (U as for rand; two
 *                separately rounded operations, no FMA), rounded to the
 *                dtype (float16/bfloat16 through float32); if the rounded
 *                value == hi it becomes lo (PyTorch's bound reversal).
 *                rand is uniform_(0, 1), which is exactly U.
 * randn / normal_(mean, std)
 *                float32/float16/bfloat16: u1 = ((r[0] >> 8) + 1) * 2^-24 in (0, 1],
 *                                          u2 = (r[1] >> 8) * 2^-24;
 *                float64: u1 = ((X >> 11) + 1) * 2^-53,
 *                         u2 = ((r[2] << 32 | r[3]) >> 11) * 2^-53;
 *                z = sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2) in double,
 *                v = mean + std * z in double (no FMA), rounded to the dtype
 *                (halves through float32).  randn is normal_(0, 1) = z.
 *                (log/cos come from libm: a GPU libm may differ by an ulp
 *                in double, which after rounding to float32 almost never shows.)
 * randint(lo,hi) v = lo + floor(X * R / 2^64) with R = hi - lo (computed mod
 *                2^64): the high word of the 128-bit product (Lemire's
 *                multiply-shift without rejection; CUDA: __umul64hi).  Its
 *                bias, at most R / 2^64 per value (< 2^-32 for R < 2^32),
 *                is accepted for speed and simplicity.
 * randperm(n)    key_i = X of element i, i in [0, n); the output is the list
 *                of indices sorted by key, ties broken by index (a stable
 *                argsort).  Consumes n counters.
 * bernoulli(p)   out_i = (U < p_i) ? 1 : 0 with U = U53 for float64 p, U24
 *                otherwise; p is read in its C order.
 * dropout_mask(p) keep_i = U24 >= p.
 */
#include "jn_runtime.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SHAPE_BUF 160
#define GRAIN (1 << 14) /* elements per thread chunk; a Philox block is ~30 ns */

/* The Philox rounds are jn_philox_inline (jn_runtime.h): inlined into the
 * fill loops, about 25% faster than a call per element. */
#define philox jn_philox_inline

static inline uint64_t x64(const uint32_t *r) { return (uint64_t)r[0] << 32 | r[1]; }
static inline double u24(const uint32_t *r) { return (double)(r[0] >> 8) * 0x1p-24; }
static inline double u53(const uint32_t *r) { return (double)(x64(r) >> 11) * 0x1p-53; }

/* The uniform of `rand` for each float dtype. */
static inline double unif(const uint32_t *r, jn_dtype dt) {
    switch (dt) {
    case JN_F64: return u53(r);
    case JN_F16: return (double)(r[0] >> 21) * 0x1p-11;
    case JN_BF16: return (double)(r[0] >> 24) * 0x1p-8;
    default: return u24(r);
    }
}

static inline double normal01(const uint32_t *r, jn_dtype dt) {
    double u1, u2;
    if (dt == JN_F64) {
        u1 = (double)((x64(r) >> 11) + 1) * 0x1p-53;
        u2 = (double)(((uint64_t)r[2] << 32 | r[3]) >> 11) * 0x1p-53;
    } else {
        u1 = (double)((r[0] >> 8) + 1) * 0x1p-24;
        u2 = (double)(r[1] >> 8) * 0x1p-24;
    }
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* v rounded to a float dtype, as a double (halves round through float32). */
static inline double round_to(double v, jn_dtype dt) {
    switch (dt) {
    case JN_F64: return v;
    case JN_F16: return jn_f16_to_f32(jn_f32_to_f16((float)v));
    case JN_BF16: return jn_bf16_to_f32(jn_f32_to_bf16((float)v));
    default: return (float)v;
    }
}

/* Store an already rounded value into a float dtype. */
static inline void store_float(char *out, int64_t i, jn_dtype dt, double v) {
    switch (dt) {
    case JN_F64: ((double *)out)[i] = v; break;
    case JN_F16: ((uint16_t *)out)[i] = jn_f32_to_f16((float)v); break;
    case JN_BF16: ((uint16_t *)out)[i] = jn_f32_to_bf16((float)v); break;
    default: ((float *)out)[i] = (float)v; break;
    }
}

/* ------------------------------------------------------- shared checks */
static jn_status check_shape(const char *op, const jn_ints *l) {
    char buf[SHAPE_BUF];
    int64_t n = 1;
    for (int k = 0; k < l->n; k++) {
        if (l->v[k] < 0)
            return jn_error(JN_ERR_VALUE, "%s: Trying to create tensor with negative dimension %lld: %s", op,
                            (long long)l->v[k], jn_shape_str(l->n, l->v, buf, sizeof buf));
        if (__builtin_mul_overflow(n, l->v[k], &n))
            return jn_error(JN_ERR_VALUE, "%s: shape %s has too many elements", op,
                            jn_shape_str(l->n, l->v, buf, sizeof buf));
    }
    return JN_OK;
}

static jn_status need_float(const char *op, jn_dtype dt, const char *what) {
    if (!jn_dtype_is_float(dt))
        return jn_error(JN_ERR_TYPE,
                        "%s: %s must be a floating point dtype (float32, float64, float16 or "
                        "bfloat16), got %s",
                        op, what, jn_dtype_names[dt]);
    return JN_OK;
}

static void meta_set(jn_meta *m, jn_dtype dt, int ndim, const int64_t *shape) {
    memset(m, 0, sizeof *m);
    m->dtype = dt;
    m->ndim = ndim;
    if (ndim) memcpy(m->shape, shape, sizeof(int64_t) * (size_t)ndim);
}

/* In-place fills write each element once; a stride-0 dim would make several
 * elements share one location (PyTorch refuses the same). */
static jn_status check_no_overlap(const char *op, const jn_tensor *x) {
    for (int d = 0; d < x->ndim; d++)
        if (x->shape[d] > 1 && x->strides[d] == 0)
            return jn_error(JN_ERR_RUNTIME,
                            "%s: unsupported operation: more than one element of the written-to "
                            "tensor refers to a single memory location. Please clone() the tensor "
                            "before performing the operation.",
                            op);
    return JN_OK;
}

/* ------------------------------------------------------ fill kernels */
typedef struct {
    jn_dtype dt;
    uint64_t seed, offset;
    double a, b; /* uniform: low, high; normal: mean, std; dropout: p */
    int64_t low; /* randint */
    uint64_t range;
    char *out;      /* contiguous output */
    const char *p;  /* bernoulli: contiguous probabilities */
    uint64_t *keys; /* randperm */
} rjob;

static void uniform_range(int64_t b, int64_t e, void *c) {
    const rjob *j = c;
    uint32_t r[4];
    if (j->a == 0.0 && j->b == 1.0) { /* rand: U itself, exact in the dtype */
        if (j->dt == JN_F32) {
            float *o = (float *)j->out;
            for (int64_t i = b; i < e; i++) {
                philox(j->offset + (uint64_t)i, j->seed, r);
                o[i] = (float)(r[0] >> 8) * 0x1p-24f;
            }
            return;
        }
        for (int64_t i = b; i < e; i++) {
            philox(j->offset + (uint64_t)i, j->seed, r);
            store_float(j->out, i, j->dt, unif(r, j->dt));
        }
        return;
    }
    double lo = j->a, range = j->b - j->a, lo_r = round_to(lo, j->dt);
    for (int64_t i = b; i < e; i++) {
        philox(j->offset + (uint64_t)i, j->seed, r);
        double prod = range * unif(r, j->dt);
        double v = round_to(lo + prod, j->dt);
        store_float(j->out, i, j->dt, v == j->b ? lo_r : v);
    }
}

static void normal_range(int64_t b, int64_t e, void *c) {
    const rjob *j = c;
    uint32_t r[4];
    for (int64_t i = b; i < e; i++) {
        philox(j->offset + (uint64_t)i, j->seed, r);
        double sz = j->b * normal01(r, j->dt);
        store_float(j->out, i, j->dt, round_to(j->a + sz, j->dt));
    }
}

static void randint_range(int64_t b, int64_t e, void *c) {
    const rjob *j = c;
    uint32_t r[4];
    size_t es = jn_dtype_size[j->dt];
    for (int64_t i = b; i < e; i++) {
        philox(j->offset + (uint64_t)i, j->seed, r);
        /* high word of the 128-bit product; gcc defines the uint64 -> int64
         * conversion as modular */
        uint64_t k = (uint64_t)(((unsigned __int128)x64(r) * j->range) >> 64);
        int64_t v = (int64_t)((uint64_t)j->low + k);
        if (j->dt == JN_I64) ((int64_t *)j->out)[i] = v;
        else jn_store_i64(j->out + (size_t)i * es, j->dt, v);
    }
}

static void bernoulli_range(int64_t b, int64_t e, void *c) {
    const rjob *j = c;
    uint32_t r[4];
    size_t es = jn_dtype_size[j->dt];
    for (int64_t i = b; i < e; i++) {
        philox(j->offset + (uint64_t)i, j->seed, r);
        double p = jn_load_f64(j->p + (size_t)i * es, j->dt);
        double u = j->dt == JN_F64 ? u53(r) : u24(r);
        store_float(j->out, i, j->dt, u < p ? 1.0 : 0.0);
    }
}

static void dropout_range(int64_t b, int64_t e, void *c) {
    const rjob *j = c;
    uint32_t r[4];
    uint8_t *o = (uint8_t *)j->out;
    float p = (float)j->a;
    /* U24 is exact in float32, so when p is a float32 value the float
     * comparison (which vectorizes better) equals the double one */
    int exact = (double)p == j->a;
    if (exact) {
        for (int64_t i = b; i < e; i++) {
            philox(j->offset + (uint64_t)i, j->seed, r);
            o[i] = (float)(r[0] >> 8) * 0x1p-24f >= p;
        }
    } else {
        for (int64_t i = b; i < e; i++) {
            philox(j->offset + (uint64_t)i, j->seed, r);
            o[i] = u24(r) >= j->a;
        }
    }
}

static void randperm_keys(int64_t b, int64_t e, void *c) {
    const rjob *j = c;
    uint32_t r[4];
    for (int64_t i = b; i < e; i++) {
        philox(j->offset + (uint64_t)i, j->seed, r);
        j->keys[i] = x64(r);
    }
}

static rjob job_for(const jn_attrs *a, int kseed, jn_tensor *out) {
    rjob j;
    memset(&j, 0, sizeof j);
    j.dt = out->dtype;
    j.seed = (uint64_t)a->a[kseed].i;
    j.offset = (uint64_t)a->a[kseed + 1].i;
    j.out = jn_data(out);
    return j;
}

/* Run fn over a contiguous tensor t; non-contiguous t gets a contiguous
 * temporary that is copied back, so values follow t's C order. */
static jn_status run_fill(jn_tensor *t, rjob *j, jn_range_fn fn) {
    int64_t n = jn_numel(t);
    if (n == 0) return JN_OK;
    if (jn_is_contiguous(t)) {
        j->out = jn_data(t);
        jn_parallel_for(n, GRAIN, fn, j);
        return JN_OK;
    }
    jn_tensor *tmp = jn_tensor_new(t->dtype, t->ndim, t->shape);
    if (!tmp) return JN_ERR_NOMEM;
    j->out = jn_data(tmp);
    jn_parallel_for(n, GRAIN, fn, j);
    jn_status s = jn_copy_into(t, tmp);
    jn_tensor_decref(tmp);
    return s;
}

/* ----------------------------------------------------------- rand, randn */
static jn_status rand_infer(const char *op, const jn_attrs *a, jn_meta *out) {
    jn_dtype dt = a->a[1].i < 0 ? JN_DEFAULT_DTYPE : (jn_dtype)a->a[1].i;
    jn_status s;
    if ((s = check_shape(op, &a->a[0].l)) || (s = need_float(op, dt, "dtype"))) return s;
    meta_set(out, dt, a->a[0].l.n, a->a[0].l.v);
    return JN_OK;
}

jn_status jn_infer_rand(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    (void)nin; (void)in;
    return rand_infer("rand", a, out);
}

jn_status jn_cpu_rand(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    (void)nin; (void)in;
    rjob j = job_for(a, 2, out[0]);
    j.a = 0.0;
    j.b = 1.0;
    return run_fill(out[0], &j, uniform_range);
}

jn_status jn_infer_randn(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    (void)nin; (void)in;
    return rand_infer("randn", a, out);
}

jn_status jn_cpu_randn(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    (void)nin; (void)in;
    rjob j = job_for(a, 2, out[0]);
    j.a = 0.0;
    j.b = 1.0;
    return run_fill(out[0], &j, normal_range);
}

/* ---------------------------------------------------------------- randint */
/* Largest magnitude every integer up to which the dtype holds exactly. */
static double exact_limit(jn_dtype dt) {
    switch (dt) {
    case JN_F32: return 16777216.0;
    case JN_F64: return 9007199254740992.0;
    case JN_F16: return 2048.0;
    case JN_BF16: return 256.0;
    default: return 0;
    }
}

/* Can every integer in [lo, hi] be stored in dt? */
static int int_range_fits(jn_dtype dt, int64_t lo, int64_t hi) {
    switch (dt) {
    case JN_I64: return 1;
    case JN_I32: return lo >= INT32_MIN && hi <= INT32_MAX;
    case JN_U8: return lo >= 0 && hi <= 255;
    case JN_BOOL: return lo >= 0 && hi <= 1;
    default: {
        double l = exact_limit(dt);
        return (double)lo >= -l && (double)hi <= l;
    }
    }
}

static jn_status randint_check(const jn_attrs *a, jn_dtype *dt) {
    int64_t low = a->a[0].i, high = a->a[1].i;
    *dt = a->a[3].i < 0 ? JN_I64 : (jn_dtype)a->a[3].i;
    jn_status s = check_shape("randint", &a->a[2].l);
    if (s) return s;
    if (high <= low)
        return jn_error(JN_ERR_VALUE, "randint: expects 'low' to be less than 'high', but got low=%lld >= high=%lld",
                        (long long)low, (long long)high);
    if (!int_range_fits(*dt, low, high - 1))
        return jn_error(JN_ERR_VALUE, "randint: the range [%lld, %lld) does not fit in dtype %s",
                        (long long)low, (long long)high, jn_dtype_names[*dt]);
    return JN_OK;
}

jn_status jn_infer_randint(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    (void)nin; (void)in;
    jn_dtype dt;
    jn_status s = randint_check(a, &dt);
    if (s) return s;
    meta_set(out, dt, a->a[2].l.n, a->a[2].l.v);
    return JN_OK;
}

jn_status jn_cpu_randint(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    (void)nin; (void)in;
    rjob j = job_for(a, 4, out[0]);
    j.low = a->a[0].i;
    j.range = (uint64_t)a->a[1].i - (uint64_t)a->a[0].i;
    return run_fill(out[0], &j, randint_range);
}

/* --------------------------------------------------------------- randperm */
static jn_status randperm_check(const jn_attrs *a, jn_dtype *dt) {
    int64_t n = a->a[0].i;
    *dt = a->a[1].i < 0 ? JN_I64 : (jn_dtype)a->a[1].i;
    if (n < 0) return jn_error(JN_ERR_VALUE, "randperm: n must be non-negative, got %lld", (long long)n);
    if (*dt == JN_BOOL) return jn_error(JN_ERR_TYPE, "randperm: not implemented for dtype bool");
    if (n > 0 && !int_range_fits(*dt, 0, n - 1))
        return jn_error(JN_ERR_VALUE, "randperm: n = %lld is too large for dtype %s (the values 0..n-1 must be exact)",
                        (long long)n, jn_dtype_names[*dt]);
    return JN_OK;
}

jn_status jn_infer_randperm(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    (void)nin; (void)in;
    jn_dtype dt;
    jn_status s = randperm_check(a, &dt);
    if (s) return s;
    meta_set(out, dt, 1, &a->a[0].i);
    return JN_OK;
}

typedef struct {
    uint64_t key;
    int64_t idx;
} kv;

static int kv_cmp(const void *a, const void *b) {
    const kv *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Stable argsort of n random 64-bit keys into idx: one bucket pass on the
 * top bits (about 8 keys per bucket, keeping index order), then insertion
 * sort inside each bucket; unusually full buckets fall back to qsort on
 * (key, index), a total order.  sk is n keys of scratch. */
static jn_status argsort_keys(const uint64_t *key, int64_t n, int64_t *idx, uint64_t *sk) {
    int bits = 1;
    while (bits < 20 && ((int64_t)1 << (bits + 3)) < n) bits++;
    int64_t nb = (int64_t)1 << bits;
    int shift = 64 - bits;
    int64_t *pos = calloc((size_t)nb + 1, sizeof *pos);
    if (!pos) return jn_error(JN_ERR_NOMEM, "randperm: out of memory");
    for (int64_t i = 0; i < n; i++) pos[(key[i] >> shift) + 1]++;
    for (int64_t b = 0; b < nb; b++) pos[b + 1] += pos[b];
    for (int64_t i = 0; i < n; i++) {
        int64_t p = pos[key[i] >> shift]++;
        sk[p] = key[i];
        idx[p] = i;
    }
    /* pos[b] is now the end of bucket b */
    jn_status s = JN_OK;
    for (int64_t b = 0, lo = 0; b < nb; lo = pos[b++]) {
        int64_t hi = pos[b];
        if (hi - lo <= 48) {
            for (int64_t i = lo + 1; i < hi; i++) {
                uint64_t k = sk[i];
                int64_t v = idx[i], q = i;
                for (; q > lo && sk[q - 1] > k; q--) {
                    sk[q] = sk[q - 1];
                    idx[q] = idx[q - 1];
                }
                sk[q] = k;
                idx[q] = v;
            }
            continue;
        }
        kv *t = malloc((size_t)(hi - lo) * sizeof *t);
        if (!t) {
            s = jn_error(JN_ERR_NOMEM, "randperm: out of memory");
            break;
        }
        for (int64_t i = lo; i < hi; i++) t[i - lo] = (kv){sk[i], idx[i]};
        qsort(t, (size_t)(hi - lo), sizeof *t, kv_cmp);
        for (int64_t i = lo; i < hi; i++) idx[i] = t[i - lo].idx;
        free(t);
    }
    free(pos);
    return s;
}

jn_status jn_cpu_randperm(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    (void)nin; (void)in;
    int64_t n = a->a[0].i;
    if (n == 0) return JN_OK;
    if (n > INT64_MAX / 64) return jn_error(JN_ERR_NOMEM, "randperm: n = %lld is too large", (long long)n);
    rjob j = job_for(a, 2, out[0]);
    int wide = out[0]->dtype == JN_I64; /* sort straight into the output */
    uint64_t *buf = malloc((size_t)n * (wide ? 2 : 3) * sizeof(uint64_t));
    if (!buf) return jn_error(JN_ERR_NOMEM, "randperm: out of memory for %lld sort keys", (long long)n);
    j.keys = buf;
    jn_parallel_for(n, GRAIN, randperm_keys, &j);
    int64_t *idx = wide ? (int64_t *)jn_data(out[0]) : (int64_t *)(buf + 2 * n);
    jn_status s = argsort_keys(buf, n, idx, buf + n);
    if (!s && !wide) {
        char *o = jn_data(out[0]);
        size_t es = jn_elsize(out[0]);
        for (int64_t i = 0; i < n; i++) jn_store_i64(o + (size_t)i * es, out[0]->dtype, idx[i]);
    }
    free(buf);
    return s;
}

/* ----------------------------------------------------- uniform_, normal_ */
jn_status jn_infer_uniform_(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    (void)nin;
    const jn_tensor *x = in[0];
    double lo = a->a[0].f, hi = a->a[1].f;
    jn_status s;
    if ((s = need_float("uniform_", x->dtype, "the tensor")) || (s = check_no_overlap("uniform_", x))) return s;
    if (!(lo <= hi))
        return jn_error(JN_ERR_VALUE, "uniform_: expects to return a [from, to) range, but found from=%g > to=%g", lo, hi);
    double lim = x->dtype == JN_F64 ? DBL_MAX : x->dtype == JN_F32 ? FLT_MAX
                 : x->dtype == JN_F16 ? 65504.0 : 3.3895313892515355e38;
    if (!(hi - lo <= lim))
        return jn_error(JN_ERR_VALUE,
                        "uniform_: expects to-from <= the largest %s, but found to=%g and from=%g "
                        "which result in to-from to exceed the limit",
                        jn_dtype_names[x->dtype], hi, lo);
    meta_set(out, x->dtype, x->ndim, x->shape);
    return JN_OK;
}

jn_status jn_cpu_uniform_(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    (void)nin;
    rjob j = job_for(a, 2, out[0]);
    j.a = a->a[0].f;
    j.b = a->a[1].f;
    return run_fill(in[0], &j, uniform_range);
}

jn_status jn_infer_normal_(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    (void)nin;
    const jn_tensor *x = in[0];
    jn_status s;
    if ((s = need_float("normal_", x->dtype, "the tensor")) || (s = check_no_overlap("normal_", x))) return s;
    if (!(a->a[1].f >= 0.0))
        return jn_error(JN_ERR_VALUE, "normal_: expects std >= 0.0, but found std %g", a->a[1].f);
    meta_set(out, x->dtype, x->ndim, x->shape);
    return JN_OK;
}

jn_status jn_cpu_normal_(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    (void)nin;
    rjob j = job_for(a, 2, out[0]);
    j.a = a->a[0].f;
    j.b = a->a[1].f;
    return run_fill(in[0], &j, normal_range);
}

/* -------------------------------------------------- bernoulli, dropout */
jn_status jn_infer_bernoulli(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    (void)nin; (void)a;
    jn_status s = need_float("bernoulli", in[0]->dtype, "the probability tensor p");
    if (s) return s;
    meta_set(out, in[0]->dtype, in[0]->ndim, in[0]->shape);
    return JN_OK;
}

jn_status jn_cpu_bernoulli(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    (void)nin;
    jn_tensor *p = in[0];
    int64_t n = jn_numel(p);
    if (n == 0) return JN_OK;
    jn_tensor *pc = jn_is_contiguous(p) ? (jn_tensor_incref(p), p) : jn_contiguous(p);
    if (!pc) return JN_ERR_NOMEM;
    size_t es = jn_elsize(pc);
    const char *pd = jn_data(pc);
    for (int64_t i = 0; i < n; i++) {
        double v = jn_load_f64(pd + (size_t)i * es, pc->dtype);
        if (!(v >= 0.0 && v <= 1.0)) {
            jn_tensor_decref(pc);
            return jn_error(JN_ERR_VALUE, "bernoulli: expected all probabilities p to be in [0, 1], but got p = %g", v);
        }
    }
    rjob j = job_for(a, 0, out[0]);
    j.p = pd;
    jn_parallel_for(n, GRAIN, bernoulli_range, &j);
    jn_tensor_decref(pc);
    return JN_OK;
}

static jn_status dropout_check(const jn_attrs *a) {
    double p = a->a[1].f;
    jn_status s = check_shape("dropout_mask", &a->a[0].l);
    if (s) return s;
    if (!(p >= 0.0 && p <= 1.0))
        return jn_error(JN_ERR_VALUE, "dropout_mask: dropout probability has to be between 0 and 1, but got %g", p);
    return JN_OK;
}

jn_status jn_infer_dropout_mask(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    (void)nin; (void)in;
    jn_status s = dropout_check(a);
    if (s) return s;
    meta_set(out, JN_BOOL, a->a[0].l.n, a->a[0].l.v);
    return JN_OK;
}

jn_status jn_cpu_dropout_mask(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    (void)nin; (void)in;
    rjob j = job_for(a, 2, out[0]);
    j.a = a->a[1].f;
    return run_fill(out[0], &j, dropout_range);
}
