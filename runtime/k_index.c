/* k_index.c -- gathers, scatters, advanced indexing.
 *
 * index_select, gather, embedding and advanced indexing (x[i, :, j]) read
 * through index tensors; scatter, scatter_add (both out of place) and
 * index_put_ write through them; one_hot builds class indicator rows.
 * Indices are int64 or int32 (advanced indexing also takes bool/uint8
 * masks).  Bounds are checked against the data, so the kernels return the
 * status and the dispatcher frees the outputs on error; PyTorch's message
 * "index 7 is out of bounds for dimension 0 with size 5" is used throughout.
 * Only advanced indexing wraps negative indices, as in PyTorch.
 *
 * Reads use jn_nditer with one extra operand that carries the index (or a
 * precomputed byte offset), so they coalesce dims and run on the thread
 * pool.  Writes that may collide (scatter*, index_put_) run in C order of
 * the index tensor, so duplicate indices are deterministic: plain writes
 * keep the last value, accumulating writes add in that order.  scatter*
 * parallelize over the non-scatter dims, where no two rows can collide.
 *
 * Advanced indexing computes its geometry once (adv_plan: which x dims the
 * index tensors consume, the broadcast index shape B and where it lands in
 * the result) for both infer and kernel, turns the index tensors into one
 * B-shaped tensor of byte offsets into x (validating every index before
 * anything is written) and then runs a single strided loop over the result.
 *
 * Beyond PyTorch: gather/scatter also take int32 indices; scatter takes a
 * Python number as src (PyTorch's scatter(dim, index, value)); index_put_
 * casts values to x's dtype (as x[i] = v does); a bool mask may sit at any
 * slot of advanced indexing.  one_hot(num_classes=-1) is the one infer that
 * reads data (the max class) and fails with JN_ERR_UNSUPPORTED on meta-only
 * tensors; so does a bool-mask index, whose result has nnz rows.
 */
#include "jn_backend.h" /* jn_rt_to_device: masks / classes of device tensors are read on the host */
#include "jn_runtime.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ helpers */
static int is_index_dtype(jn_dtype d) { return d == JN_I64 || d == JN_I32; }

static jn_status check_index_dtype(const char *op, const char *what, const jn_tensor *t) {
    if (is_index_dtype(t->dtype)) return JN_OK;
    return jn_error(JN_ERR_TYPE, "%s(): expected dtype int64 or int32 for %s, got %s", op, what,
                    jn_dtype_names[t->dtype]);
}

static jn_status oob(const char *op, int64_t v, int dim, int64_t size) {
    return jn_error(JN_ERR_INDEX, "%s(): index %lld is out of bounds for dimension %d with size %lld",
                    op, (long long)v, dim, (long long)size);
}

static int es_slot(size_t es) { return es == 1 ? 0 : es == 2 ? 1 : es == 4 ? 2 : 3; }

/* PyTorch treats a 0-d tensor as 1-d of size 1 in gather/scatter shape rules. */
static int nonempty_dim(const jn_tensor *t) { return t->ndim ? t->ndim : 1; }
static int64_t nonempty_size(const jn_tensor *t, int d) { return t->ndim ? t->shape[d] : 1; }
static int64_t nonempty_stride(const jn_tensor *t, int d) { return t->ndim ? t->strides[d] : 0; }

/* Contiguous int64 copy of an index tensor (a new reference either way). */
static jn_status index_i64(jn_tensor *t, jn_tensor **res) {
    *res = jn_to_dtype(t, JN_I64);
    return *res ? JN_OK : JN_ERR_NOMEM;
}

/* Error reporting from loops that may run on several threads: the first
 * bad index wins, the others only stop their chunk. */
typedef struct {
    int bad;
    int64_t val;
    int which; /* entry number, for advanced indexing */
} bad_flag;

static void flag_bad(bad_flag *b, int64_t v, int which) {
    if (!__atomic_exchange_n(&b->bad, 1, __ATOMIC_RELAXED)) {
        b->val = v;
        b->which = which;
    }
}
static int is_bad(bad_flag *b) { return __atomic_load_n(&b->bad, __ATOMIC_RELAXED); }

/* Element operations: copies by size, accumulations by dtype (jn_dtype
 * order).  Half types add in float32 and round per add, like PyTorch's CPU
 * kernels; integers wrap; bool "adds" as logical or. */
#define CPY1(d, s) memcpy((d), (s), 1)
#define CPY2(d, s) memcpy((d), (s), 2)
#define CPY4(d, s) memcpy((d), (s), 4)
#define CPY8(d, s) memcpy((d), (s), 8)
#define ADD_F32(d, s) (*(float *)(d) += *(const float *)(s))
#define ADD_F64(d, s) (*(double *)(d) += *(const double *)(s))
#define ADD_F16(d, s) \
    (*(uint16_t *)(d) = jn_f32_to_f16(jn_f16_to_f32(*(uint16_t *)(d)) + jn_f16_to_f32(*(const uint16_t *)(s))))
#define ADD_BF16(d, s) \
    (*(uint16_t *)(d) = jn_f32_to_bf16(jn_bf16_to_f32(*(uint16_t *)(d)) + jn_bf16_to_f32(*(const uint16_t *)(s))))
#define ADD_I64(d, s) (*(int64_t *)(d) = (int64_t)((uint64_t)*(int64_t *)(d) + (uint64_t)*(const int64_t *)(s)))
#define ADD_I32(d, s) (*(int32_t *)(d) = (int32_t)((uint32_t)*(int32_t *)(d) + (uint32_t)*(const int32_t *)(s)))
#define ADD_U8(d, s) (*(uint8_t *)(d) = (uint8_t)(*(uint8_t *)(d) + *(const uint8_t *)(s)))
#define ADD_BOOL(d, s) (*(uint8_t *)(d) = (uint8_t)((*(uint8_t *)(d) | *(const uint8_t *)(s)) != 0))

#define COPY_OPS(X) X(c1, CPY1) X(c2, CPY2) X(c4, CPY4) X(c8, CPY8)
#define ELEM_OPS(X) COPY_OPS(X) \
    X(af32, ADD_F32) X(af64, ADD_F64) X(af16, ADD_F16) X(abf16, ADD_BF16) \
    X(ai64, ADD_I64) X(ai32, ADD_I32) X(au8, ADD_U8) X(ab, ADD_BOOL)

/* Slot in ELEM_OPS order: copies 0..3 by element size, adds 4.. by dtype. */
static int elem_op(jn_dtype dt, int accumulate) {
    return accumulate ? 4 + (int)dt : es_slot(jn_dtype_size[dt]);
}

/* ------------------------------------------------------ index gathers */
/* Operands: out, x (stride 0 along the gathered dim), index.  Used by gather,
 * and by index_select / embedding when their fast paths do not apply. */
typedef struct {
    int64_t dstride; /* byte stride of x along the gathered dim */
    int64_t size;    /* valid indices are [0, size) */
    bad_flag bad;
} gather_ctx;

#define GATHER_LOOP(NAME, IT, CPY)                                                   \
    static void NAME(char **p, const int64_t *s, int64_t n, void *vc) {              \
        gather_ctx *c = vc;                                                          \
        char *o = p[0];                                                              \
        const char *x = p[1], *ix = p[2];                                            \
        if (is_bad(&c->bad)) return;                                                 \
        if (s[2] == 0) { /* one index for the whole run: a strided row copy */       \
            int64_t v = *(const IT *)ix;                                             \
            if ((uint64_t)v >= (uint64_t)c->size) {                                  \
                flag_bad(&c->bad, v, 0);                                             \
                return;                                                              \
            }                                                                        \
            x += v * c->dstride;                                                     \
            for (int64_t i = 0; i < n; i++) CPY(o + i * s[0], x + i * s[1]);         \
            return;                                                                  \
        }                                                                            \
        for (int64_t i = 0; i < n; i++) {                                            \
            int64_t v = *(const IT *)(ix + i * s[2]);                                \
            if ((uint64_t)v >= (uint64_t)c->size) {                                  \
                flag_bad(&c->bad, v, 0);                                             \
                return;                                                              \
            }                                                                        \
            CPY(o + i * s[0], x + i * s[1] + v * c->dstride);                        \
        }                                                                            \
    }
#define GATHER_PAIR(N, CPY) GATHER_LOOP(gather64_##N, int64_t, CPY) GATHER_LOOP(gather32_##N, int32_t, CPY)
COPY_OPS(GATHER_PAIR)
static const jn_loop_fn gather_fns[2][4] = {{gather64_c1, gather64_c2, gather64_c4, gather64_c8},
                                            {gather32_c1, gather32_c2, gather32_c4, gather32_c8}};

static jn_status run_gather(const char *op, int dim, int nd, const int64_t *shape,
                            int64_t (*bs)[JN_MAX_DIMS], char **base, jn_dtype idt, size_t es,
                            int64_t dstride, int64_t size) {
    gather_ctx c = {dstride, size, {0, 0, 0}};
    jn_nditer(3, base, nd, shape, bs, gather_fns[idt == JN_I32][es_slot(es)], &c, 1);
    if (c.bad.bad) return oob(op, c.bad.val, dim, size);
    return JN_OK;
}

/* Row copies for index_select / embedding over contiguous rows:
 * out[o, j, :] = x[o, idx[j], :] for o < units / n. */
typedef struct {
    char *out;
    const char *x;
    const int64_t *idx;
    int64_t n, rowb, xrow, xouter;
} rows_ctx;

#define ROWS_LOOP(NB)                                                                  \
    for (int64_t u = b; u < e; u++, dst += c->rowb) {                                  \
        memcpy(dst, c->x + o * c->xouter + c->idx[j] * c->xrow, NB);                   \
        if (++j == c->n) {                                                             \
            j = 0;                                                                     \
            o++;                                                                       \
        }                                                                              \
    }

static void rows_task(int64_t b, int64_t e, void *vc) {
    const rows_ctx *c = vc;
    int64_t o = b / c->n, j = b % c->n;
    char *dst = c->out + b * c->rowb;
    switch (c->rowb) { /* constant sizes let memcpy become one load/store */
    case 1: ROWS_LOOP(1) break;
    case 2: ROWS_LOOP(2) break;
    case 4: ROWS_LOOP(4) break;
    case 8: ROWS_LOOP(8) break;
    default: ROWS_LOOP((size_t)c->rowb) break;
    }
}

static void run_rows(rows_ctx *c, int64_t units) {
    if (units <= 0 || c->rowb <= 0) return;
    int64_t grain = (1 << 16) / c->rowb;
    jn_parallel_for(units, grain > 0 ? grain : 1, rows_task, c);
}

/* Check every entry of a contiguous int64 index against [0, size). */
static jn_status check_range(const char *op, const jn_tensor *idx64, int dim, int64_t size) {
    const int64_t *v = (const int64_t *)jn_data(idx64);
    int64_t n = jn_numel(idx64);
    for (int64_t i = 0; i < n; i++)
        if ((uint64_t)v[i] >= (uint64_t)size) return oob(op, v[i], dim, size);
    return JN_OK;
}

/* --------------------------------------------------------- index_select */
jn_status jn_infer_index_select(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    const jn_tensor *x = in[0], *idx = in[1];
    char sb[128];
    jn_status s = check_index_dtype("index_select", "index", idx);
    if (s) return s;
    if (idx->ndim > 1)
        return jn_error(JN_ERR_INDEX,
                        "index_select(): index is supposed to be a vector (0-d or 1-d), got shape %s",
                        jn_shape_str(idx->ndim, idx->shape, sb, sizeof sb));
    int64_t dim = a->a[0].i;
    if ((s = jn_wrap_dim(&dim, x->ndim, "index_select"))) return s;
    int64_t n = jn_numel(idx);
    if (x->ndim == 0 && n != 1)
        return jn_error(JN_ERR_SHAPE, "index_select(): index to a 0-d tensor can have only 1 value, got %lld",
                        (long long)n);
    out->dtype = x->dtype;
    out->ndim = x->ndim;
    memcpy(out->shape, x->shape, sizeof out->shape);
    if (x->ndim) out->shape[dim] = n;
    return JN_OK;
}

jn_status jn_cpu_index_select(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_tensor *x = in[0], *y = out[0], *idx64;
    int64_t dim = a->a[0].i;
    jn_wrap_dim(&dim, x->ndim, "index_select");
    int64_t xd = nonempty_size(x, (int)dim), n = jn_numel(in[1]);
    jn_status s = index_i64(in[1], &idx64);
    if (s) return s;
    if ((s = check_range("index_select", idx64, (int)dim, xd)) || jn_numel(y) == 0) goto done;
    size_t es = jn_elsize(x);
    if (jn_is_contiguous(x)) {
        int64_t outer = 1, inner = 1;
        for (int d = 0; d < dim; d++) outer *= x->shape[d];
        for (int d = (int)dim + 1; d < x->ndim; d++) inner *= x->shape[d];
        rows_ctx c = {jn_data(y), jn_data(x), (const int64_t *)jn_data(idx64), n,
                      inner * (int64_t)es, inner * (int64_t)es, xd * inner * (int64_t)es};
        run_rows(&c, outer * n);
    } else {
        int64_t bs[3][JN_MAX_DIMS];
        int64_t ys[JN_MAX_DIMS];
        jn_contiguous_strides(y->ndim, y->shape, ys);
        for (int d = 0; d < y->ndim; d++) {
            bs[0][d] = ys[d] * (int64_t)es;
            bs[1][d] = d == dim ? 0 : x->strides[d] * (int64_t)es;
            bs[2][d] = d == dim ? 8 : 0;
        }
        char *base[3] = {jn_data(y), jn_data(x), jn_data(idx64)};
        s = run_gather("index_select", (int)dim, y->ndim, y->shape, bs, base, JN_I64, es,
                       nonempty_stride(x, (int)dim) * (int64_t)es, xd);
    }
done:
    jn_tensor_decref(idx64);
    return s;
}

/* --------------------------------------------------------------- gather */
jn_status jn_infer_gather(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    const jn_tensor *x = in[0], *idx = in[1];
    char sa[128], sb[128];
    jn_status s = check_index_dtype("gather", "index", idx);
    if (s) return s;
    int64_t dim = a->a[0].i;
    if ((s = jn_wrap_dim(&dim, x->ndim, "gather"))) return s;
    if (jn_numel(idx) > 0) {
        if (nonempty_dim(x) != nonempty_dim(idx))
            return jn_error(JN_ERR_SHAPE,
                            "gather(): index tensor must have the same number of dimensions as input "
                            "tensor (index %s, input %s)",
                            jn_shape_str(idx->ndim, idx->shape, sa, sizeof sa),
                            jn_shape_str(x->ndim, x->shape, sb, sizeof sb));
        for (int d = 0; d < nonempty_dim(x); d++)
            if (d != dim && nonempty_size(idx, d) > nonempty_size(x, d))
                return jn_error(JN_ERR_SHAPE,
                                "gather(): size does not match at dimension %d: expected index %s to be "
                                "smaller than self %s apart from dimension %d",
                                d, jn_shape_str(idx->ndim, idx->shape, sa, sizeof sa),
                                jn_shape_str(x->ndim, x->shape, sb, sizeof sb), (int)dim);
    } /* PyTorch skips the shape checks for an empty index: the result is empty */
    out->dtype = x->dtype;
    out->ndim = idx->ndim;
    memcpy(out->shape, idx->shape, sizeof out->shape);
    return JN_OK;
}

jn_status jn_cpu_gather(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_tensor *x = in[0], *idx = in[1], *y = out[0];
    int64_t dim = a->a[0].i;
    jn_wrap_dim(&dim, x->ndim, "gather");
    if (jn_numel(idx) == 0) return JN_OK;
    size_t es = jn_elsize(x);
    int nd = nonempty_dim(idx);
    int64_t shape[JN_MAX_DIMS], ys[JN_MAX_DIMS], bs[3][JN_MAX_DIMS];
    for (int d = 0; d < nd; d++) shape[d] = nonempty_size(idx, d);
    jn_contiguous_strides(nd, shape, ys);
    for (int d = 0; d < nd; d++) {
        bs[0][d] = ys[d] * (int64_t)es;
        bs[1][d] = d == dim ? 0 : nonempty_stride(x, d) * (int64_t)es;
        bs[2][d] = nonempty_stride(idx, d) * (int64_t)jn_elsize(idx);
    }
    char *base[3] = {jn_data(y), jn_data(x), jn_data(idx)};
    return run_gather("gather", (int)dim, nd, shape, bs, base, idx->dtype, es,
                      nonempty_stride(x, (int)dim) * (int64_t)es, nonempty_size(x, (int)dim));
}

/* ------------------------------------------------- scatter, scatter_add */
/* One row = all index positions that differ only along `dim`; rows never
 * write the same output element, so they run in parallel while each row
 * runs in order. */
typedef struct scatter_ctx scatter_ctx;
typedef int (*scatter_row_fn)(char *o, const char *ix, const char *s, const scatter_ctx *c, int64_t *bad);
struct scatter_ctx {
    int nd; /* outer dims: all but dim */
    int64_t shape[JN_MAX_DIMS];
    int64_t st[3][JN_MAX_DIMS]; /* byte strides of out, index, src */
    char *base[3];
    int64_t L, ist, sst, ost, size; /* row length; byte strides along dim; x.size(dim) */
    scatter_row_fn fn;
    bad_flag bad;
};

#define SCATTER_ROW(NAME, IT, OP)                                                                  \
    static int NAME(char *o, const char *ix, const char *s, const scatter_ctx *c, int64_t *bad) { \
        for (int64_t j = 0; j < c->L; j++) {                                                       \
            int64_t v = *(const IT *)(ix + j * c->ist);                                            \
            if ((uint64_t)v >= (uint64_t)c->size) {                                                \
                *bad = v;                                                                          \
                return 1;                                                                          \
            }                                                                                      \
            OP(o + v * c->ost, s + j * c->sst);                                                    \
        }                                                                                          \
        return 0;                                                                                  \
    }
#define SCATTER_PAIR(N, OP) SCATTER_ROW(sc64_##N, int64_t, OP) SCATTER_ROW(sc32_##N, int32_t, OP)
ELEM_OPS(SCATTER_PAIR)
#define SC64_ENTRY(N, OP) sc64_##N,
#define SC32_ENTRY(N, OP) sc32_##N,
static const scatter_row_fn scatter_fns[2][12] = {{ELEM_OPS(SC64_ENTRY)}, {ELEM_OPS(SC32_ENTRY)}};

static void scatter_task(int64_t b, int64_t e, void *vc) {
    scatter_ctx *c = vc;
    int64_t cnt[JN_MAX_DIMS], r = b;
    for (int d = c->nd - 1; d >= 0; d--) {
        cnt[d] = r % c->shape[d];
        r /= c->shape[d];
    }
    for (int64_t row = b; row < e; row++) {
        if (is_bad(&c->bad)) return;
        char *p[3];
        for (int k = 0; k < 3; k++) {
            p[k] = c->base[k];
            for (int d = 0; d < c->nd; d++) p[k] += cnt[d] * c->st[k][d];
        }
        int64_t v;
        if (c->fn(p[0], p[1], p[2], c, &v)) {
            flag_bad(&c->bad, v, 0);
            return;
        }
        for (int d = c->nd - 1; d >= 0; d--) {
            if (++cnt[d] < c->shape[d]) break;
            cnt[d] = 0;
        }
    }
}

static jn_status scatter_infer(const char *op, int allow_value, jn_tensor *const *in, const jn_attrs *a,
                               jn_meta *out) {
    const jn_tensor *x = in[0], *idx = in[1], *src = in[2];
    char sa[128], sb[128], sc[128];
    jn_status s = check_index_dtype(op, "index", idx);
    if (s) return s;
    int64_t dim = a->a[0].i;
    if ((s = jn_wrap_dim(&dim, x->ndim, op))) return s;
    int value = allow_value && src->ndim == 0 && src->wrapped_number; /* scatter(dim, index, value) */
    if (!value && src->dtype != x->dtype)
        return jn_error(JN_ERR_TYPE, "%s(): expected self.dtype to be equal to src.dtype (got %s and %s)",
                        op, jn_dtype_names[x->dtype], jn_dtype_names[src->dtype]);
    if (jn_numel(idx) > 0) {
        if (nonempty_dim(x) != nonempty_dim(idx))
            return jn_error(JN_ERR_SHAPE,
                            "%s(): index tensor must have the same number of dimensions as self tensor "
                            "(index %s, self %s)",
                            op, jn_shape_str(idx->ndim, idx->shape, sa, sizeof sa),
                            jn_shape_str(x->ndim, x->shape, sb, sizeof sb));
        if (!value && nonempty_dim(src) != nonempty_dim(idx))
            return jn_error(JN_ERR_SHAPE,
                            "%s(): index tensor must have the same number of dimensions as src tensor "
                            "(index %s, src %s)",
                            op, jn_shape_str(idx->ndim, idx->shape, sa, sizeof sa),
                            jn_shape_str(src->ndim, src->shape, sb, sizeof sb));
        for (int d = 0; d < nonempty_dim(x); d++) {
            int64_t n = nonempty_size(idx, d);
            if ((d != dim && n > nonempty_size(x, d)) || (!value && n > nonempty_size(src, d)))
                return jn_error(JN_ERR_SHAPE,
                                "%s(): expected index %s to be smaller than self %s apart from dimension "
                                "%d and to be smaller than src %s",
                                op, jn_shape_str(idx->ndim, idx->shape, sa, sizeof sa),
                                jn_shape_str(x->ndim, x->shape, sb, sizeof sb), (int)dim,
                                jn_shape_str(src->ndim, src->shape, sc, sizeof sc));
        }
    }
    out->dtype = x->dtype;
    out->ndim = x->ndim;
    memcpy(out->shape, x->shape, sizeof out->shape);
    return JN_OK;
}

static jn_status scatter_run(const char *op, int accumulate, jn_tensor *const *in, const jn_attrs *a,
                             jn_tensor *y) {
    jn_tensor *x = in[0], *idx = in[1], *src = in[2];
    jn_status s = jn_copy_into(y, x);
    if (s || jn_numel(idx) == 0) return s;
    int64_t dim = a->a[0].i;
    jn_wrap_dim(&dim, x->ndim, op);
    jn_tensor *sv = src; /* a Python-number value becomes a 0-d tensor of x's dtype */
    if (src->dtype != x->dtype && !(sv = jn_to_dtype(src, x->dtype))) return JN_ERR_NOMEM;
    int64_t es = (int64_t)jn_elsize(x), is = (int64_t)jn_elsize(idx);
    scatter_ctx c;
    memset(&c, 0, sizeof c);
    int nd = nonempty_dim(idx);
    int64_t ys[JN_MAX_DIMS];
    int64_t yshape[JN_MAX_DIMS];
    for (int d = 0; d < nonempty_dim(y); d++) yshape[d] = nonempty_size(y, d);
    jn_contiguous_strides(nonempty_dim(y), yshape, ys);
    int srcval = sv->ndim == 0;
    for (int d = 0; d < nd; d++) {
        int64_t sst = srcval ? 0 : nonempty_stride(sv, d) * es;
        if (d == dim) {
            c.L = nonempty_size(idx, d);
            c.ist = nonempty_stride(idx, d) * is;
            c.sst = sst;
            c.ost = ys[d] * es;
            continue;
        }
        c.shape[c.nd] = nonempty_size(idx, d);
        c.st[0][c.nd] = ys[d] * es;
        c.st[1][c.nd] = nonempty_stride(idx, d) * is;
        c.st[2][c.nd] = sst;
        c.nd++;
    }
    c.size = nonempty_size(x, (int)dim);
    c.base[0] = jn_data(y);
    c.base[1] = jn_data(idx);
    c.base[2] = jn_data(sv);
    c.fn = scatter_fns[idx->dtype == JN_I32][elem_op(x->dtype, accumulate)];
    int64_t rows = jn_shape_numel(c.nd, c.shape);
    int64_t grain = (1 << 15) / c.L;
    jn_parallel_for(rows, grain > 0 ? grain : 1, scatter_task, &c);
    if (sv != src) jn_tensor_decref(sv);
    if (c.bad.bad) return oob(op, c.bad.val, (int)dim, c.size);
    return JN_OK;
}

jn_status jn_infer_scatter(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    return scatter_infer("scatter", 1, in, a, out);
}
jn_status jn_cpu_scatter(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return scatter_run("scatter", 0, in, a, out[0]);
}
jn_status jn_infer_scatter_add(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    return scatter_infer("scatter_add", 0, in, a, out);
}
jn_status jn_cpu_scatter_add(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    return scatter_run("scatter_add", 1, in, a, out[0]);
}

/* ------------------------------------------------------------ embedding */
/* Inputs (weight[V, D], indices); padding_idx only matters to the backward. */
jn_status jn_infer_embedding(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    const jn_tensor *w = in[0], *idx = in[1];
    char sb[128];
    if (w->ndim != 2)
        return jn_error(JN_ERR_SHAPE, "embedding(): 'weight' must be 2-D, got a tensor of shape %s",
                        jn_shape_str(w->ndim, w->shape, sb, sizeof sb));
    if (!is_index_dtype(idx->dtype))
        return jn_error(JN_ERR_TYPE, "embedding(): expected indices of dtype int64 or int32, got %s",
                        jn_dtype_names[idx->dtype]);
    int64_t pad = a->a[0].i;
    if (pad != -1 && (pad < 0 || pad >= w->shape[0]))
        return jn_error(JN_ERR_VALUE,
                        "embedding(): padding_idx %lld must be within num_embeddings (%lld), or -1 for none",
                        (long long)pad, (long long)w->shape[0]);
    if (idx->ndim + 1 > JN_MAX_DIMS)
        return jn_error(JN_ERR_VALUE, "embedding(): indices with %d dims would give a result with more than %d dims",
                        idx->ndim, JN_MAX_DIMS);
    out->dtype = w->dtype;
    out->ndim = idx->ndim + 1;
    memcpy(out->shape, idx->shape, sizeof(int64_t) * (size_t)idx->ndim);
    out->shape[idx->ndim] = w->shape[1];
    return JN_OK;
}

jn_status jn_cpu_embedding(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_tensor *w = in[0], *y = out[0], *idx64;
    int64_t V = w->shape[0], D = w->shape[1], n = jn_numel(in[1]);
    int64_t es = (int64_t)jn_elsize(w);
    jn_status s = index_i64(in[1], &idx64);
    if (s) return s;
    if ((s = check_range("embedding", idx64, 0, V)) || n == 0 || D == 0) goto done;
    if (w->strides[1] == 1 || D == 1) { /* rows are contiguous: one memcpy per index */
        rows_ctx c = {jn_data(y), jn_data(w), (const int64_t *)jn_data(idx64), n, D * es,
                      w->strides[0] * es, 0};
        run_rows(&c, n);
    } else {
        int64_t shape[2] = {n, D};
        int64_t bs[3][JN_MAX_DIMS] = {{D * es, es}, {0, w->strides[1] * es}, {8, 0}};
        char *base[3] = {jn_data(y), jn_data(w), jn_data(idx64)};
        s = run_gather("embedding", 0, 2, shape, bs, base, JN_I64, (size_t)es, w->strides[0] * es, V);
    }
done:
    jn_tensor_decref(idx64);
    return s;
}

/* -------------------------------------------------------------- one_hot */
/* Largest class value (and a check for negatives); needs the data. */
static jn_status one_hot_max(jn_tensor *idx, int64_t *mx) {
    jn_tensor *i64;
    jn_status s = index_i64(idx, &i64);
    if (s) return s;
    const int64_t *v = (const int64_t *)jn_data(i64);
    int64_t n = jn_numel(i64), m = INT64_MIN;
    for (int64_t i = 0; i < n; i++) {
        if (v[i] < 0) {
            s = jn_error(JN_ERR_RUNTIME, "one_hot(): class values must be non-negative, got %lld",
                         (long long)v[i]);
            break;
        }
        if (v[i] > m) m = v[i];
    }
    jn_tensor_decref(i64);
    *mx = m;
    return s;
}

jn_status jn_infer_one_hot(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    jn_tensor *idx = in[0];
    int64_t C = a->a[0].i;
    if (!is_index_dtype(idx->dtype))
        return jn_error(JN_ERR_TYPE, "one_hot(): is only applicable to index tensors of dtype int64 "
                                     "(or int32), got %s", jn_dtype_names[idx->dtype]);
    if (C < -1)
        return jn_error(JN_ERR_VALUE, "one_hot(): num_classes must be -1 (infer) or non-negative, got %lld",
                        (long long)C);
    if (idx->ndim + 1 > JN_MAX_DIMS)
        return jn_error(JN_ERR_VALUE, "one_hot(): a %d-d index would give a result with more than %d dims",
                        idx->ndim, JN_MAX_DIMS);
    if (jn_numel(idx) == 0 && C <= 0)
        return jn_error(JN_ERR_RUNTIME, "one_hot(): can not infer the total number of classes from an "
                                        "empty tensor; pass num_classes");
    if (C == -1) {
        /* The one shape that depends on data: infer reads it when present. */
        if (!idx->storage || !idx->storage->data)
            return jn_error(JN_ERR_UNSUPPORTED, "one_hot(): num_classes=-1 needs the index values to "
                                                "know the result shape; pass num_classes explicitly");
        int64_t mx;
        jn_tensor *h = idx->storage->device == JN_CPU ? idx : jn_rt_to_device(idx, JN_CPU, 0); /* read on the host */
        if (!h) return JN_ERR_NOMEM;
        jn_status s = one_hot_max(h, &mx);
        if (h != idx) jn_tensor_decref(h);
        if (s) return s;
        if (mx == INT64_MAX)
            return jn_error(JN_ERR_VALUE, "one_hot(): class value %lld is too large", (long long)mx);
        C = mx + 1;
    }
    out->dtype = JN_I64;
    out->ndim = idx->ndim + 1;
    memcpy(out->shape, idx->shape, sizeof(int64_t) * (size_t)idx->ndim);
    out->shape[idx->ndim] = C;
    return JN_OK;
}

static void zero_task(int64_t b, int64_t e, void *o) {
    memset((int64_t *)o + b, 0, (size_t)(e - b) * sizeof(int64_t));
}

jn_status jn_cpu_one_hot(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_tensor *y = out[0], *idx64;
    int64_t C = y->shape[y->ndim - 1];
    jn_status s = index_i64(in[0], &idx64);
    if (s) return s;
    int64_t *o = (int64_t *)jn_data(y);
    jn_parallel_for(jn_numel(y), 1 << 16, zero_task, o);
    const int64_t *v = (const int64_t *)jn_data(idx64);
    int64_t n = jn_numel(idx64);
    for (int64_t i = 0; i < n; i++) {
        if (v[i] < 0) {
            s = jn_error(JN_ERR_RUNTIME, "one_hot(): class values must be non-negative, got %lld",
                         (long long)v[i]);
            break;
        }
        if (v[i] >= C) {
            s = jn_error(JN_ERR_RUNTIME, "one_hot(): class values must be smaller than num_classes (%lld), got %lld",
                         (long long)C, (long long)v[i]);
            break;
        }
        o[i * C + v[i]] = 1;
    }
    jn_tensor_decref(idx64);
    return s;
}

/* ---------------------------------------------------- advanced indexing */
/* The mask attribute lists index slots from dim 0 of x: 0 = a full slice
 * (one dim), 1 = the next index tensor.  An int64/int32 index consumes one
 * dim (negative values wrap); a bool/uint8 mask of ndim m consumes m dims and
 * stands for its nonzero() coordinates; dims beyond the mask are full slices.
 * The index shapes (a mask counts as [nnz]) broadcast to B; if the indexed
 * slots are adjacent B replaces them in place, otherwise B goes first. */
typedef struct {
    jn_tensor *t; /* the index tensor */
    int isbool;   /* a mask of t->ndim dims */
    int xdim;     /* first x dim it consumes */
    int64_t nnz;  /* masks: number of set entries */
} adv_entry;

typedef struct {
    int nent;
    adv_entry ent[JN_MAX_DIMS];
    int nb;
    int64_t bshape[JN_MAX_DIMS];
    int rnd;
    int64_t rshape[JN_MAX_DIMS];
    int rxdim[JN_MAX_DIMS]; /* per result dim: x dim it slices, -1 inside B */
} adv_plan;

/* Walk the rows (all dims but the last) of a mask of any layout; the
 * callback sees each row's first byte and the last dim's length/stride. */
typedef void (*mask_row_fn)(const uint8_t *row, int64_t n, int64_t st, const int64_t *cnt, void *ctx);

static void mask_rows(const jn_tensor *t, mask_row_fn fn, void *ctx) {
    int nd = t->ndim, outer = nd > 0 ? nd - 1 : 0;
    int64_t n = nd ? t->shape[nd - 1] : 1, st = nd ? t->strides[nd - 1] : 0;
    int64_t rows = jn_shape_numel(outer, t->shape), cnt[JN_MAX_DIMS] = {0}, off = 0;
    const uint8_t *p = (const uint8_t *)jn_data(t);
    if (n == 0) return;
    for (int64_t r = 0; r < rows; r++) {
        fn(p + off, n, st, cnt, ctx);
        for (int d = outer - 1; d >= 0; d--) {
            off += t->strides[d];
            if (++cnt[d] < t->shape[d]) break;
            off -= cnt[d] * t->strides[d];
            cnt[d] = 0;
        }
    }
}

static void nnz_row(const uint8_t *row, int64_t n, int64_t st, const int64_t *cnt, void *ctx) {
    int64_t k = 0;
    for (int64_t j = 0; j < n; j++) k += row[j * st] != 0;
    *(int64_t *)ctx += k;
}

static int64_t mask_nnz(const jn_tensor *t) {
    int64_t nnz = 0;
    mask_rows(t, nnz_row, &nnz);
    return nnz;
}

static jn_status adv_plan_build(const char *op, jn_tensor *x, int nidx, jn_tensor *const *idx,
                                const jn_ints *mask, adv_plan *p) {
    char sa[128], sb[128];
    memset(p, 0, sizeof *p);
    int ones = 0;
    for (int s = 0; s < mask->n; s++) {
        if (mask->v[s] != 0 && mask->v[s] != 1)
            return jn_error(JN_ERR_VALUE, "%s(): mask entries must be 0 (full slice) or 1 (index tensor), got %lld",
                            op, (long long)mask->v[s]);
        ones += (int)mask->v[s];
    }
    if (ones != nidx)
        return jn_error(JN_ERR_VALUE, "%s(): the mask marks %d indexed slots but %d index tensors were given",
                        op, ones, nidx);
    int consumed[JN_MAX_DIMS] = {0};
    int d = 0, k = 0, gap = 0, seen_one = 0, zero_after_one = 0;
    for (int s = 0; s < mask->n; s++) {
        if (mask->v[s] == 0) {
            if (d >= x->ndim)
                return jn_error(JN_ERR_INDEX, "%s(): too many indices for tensor of dimension %d", op, x->ndim);
            d++;
            if (seen_one) zero_after_one = 1;
            continue;
        }
        if (zero_after_one) gap = 1;
        seen_one = 1;
        jn_tensor *t = idx[k];
        adv_entry *e = &p->ent[k];
        e->t = t;
        e->xdim = d;
        int m;
        if (t->dtype == JN_BOOL || t->dtype == JN_U8) {
            e->isbool = 1;
            m = t->ndim;
        } else if (is_index_dtype(t->dtype)) {
            m = 1;
        } else {
            return jn_error(JN_ERR_INDEX, "%s(): tensors used as indices must be int64, int32, uint8 or "
                                          "bool tensors; index %d has dtype %s",
                            op, k, jn_dtype_names[t->dtype]);
        }
        if (d + m > x->ndim)
            return jn_error(JN_ERR_INDEX, "%s(): too many indices for tensor of dimension %d", op, x->ndim);
        for (int j = 0; e->isbool && j < m; j++)
            if (t->shape[j] != x->shape[d + j])
                return jn_error(JN_ERR_INDEX, "%s(): the shape of the mask %s at index %d does not match "
                                              "the shape of the indexed tensor %s at index %d",
                                op, jn_shape_str(t->ndim, t->shape, sa, sizeof sa), j,
                                jn_shape_str(x->ndim, x->shape, sb, sizeof sb), d + j);
        if (e->isbool) {
            if (!t->storage || !t->storage->data)
                return jn_error(JN_ERR_UNSUPPORTED, "%s(): indexing with a boolean mask needs the mask's "
                                                    "values to know the result shape; they are not available "
                                                    "for a meta-only tensor", op);
            jn_tensor *h = t->storage->device == JN_CPU ? t : jn_rt_to_device(t, JN_CPU, 0); /* a device mask */
            if (!h) return JN_ERR_NOMEM;
            e->nnz = mask_nnz(h);
            if (h != t) jn_tensor_decref(h);
        }
        for (int j = 0; j < m; j++) consumed[d + j] = 1;
        d += m;
        k++;
    }
    p->nent = nidx;
    /* broadcast the index shapes */
    for (k = 0; k < nidx; k++) {
        const adv_entry *e = &p->ent[k];
        int64_t one[1] = {e->nnz};
        int end = e->isbool ? 1 : e->t->ndim;
        const int64_t *esh = e->isbool ? one : e->t->shape;
        if (jn_broadcast_shapes(p->nb, p->bshape, end, esh, &p->nb, p->bshape)) {
            char list[512];
            size_t n = 0;
            for (int j = 0; j < nidx && n < sizeof list; j++) {
                int64_t o1[1] = {p->ent[j].nnz};
                n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", j ? ", " : "",
                                      p->ent[j].isbool ? jn_shape_str(1, o1, sa, sizeof sa)
                                                       : jn_shape_str(p->ent[j].t->ndim, p->ent[j].t->shape, sa, sizeof sa));
            }
            return jn_error(JN_ERR_INDEX, "%s(): shape mismatch: indexing tensors could not be broadcast "
                                          "together with shapes %s", op, list);
        }
    }
    /* result = slices before B, B, slices after (or B first when split) */
    int nslice = 0;
    for (int j = 0; j < x->ndim; j++) nslice += !consumed[j];
    if (nslice + p->nb > JN_MAX_DIMS)
        return jn_error(JN_ERR_VALUE, "%s(): the result would have %d dims; tensors have at most %d", op,
                        nslice + p->nb, JN_MAX_DIMS);
    int bstart = (nidx == 0 || gap) ? 0 : p->ent[0].xdim; /* all x dims before it are slices */
    int r = 0, nsl = 0;
    for (int j = 0; j <= x->ndim; j++) {
        if (nsl == bstart && r == nsl)
            for (int b = 0; b < p->nb; b++, r++) {
                p->rshape[r] = p->bshape[b];
                p->rxdim[r] = -1;
            }
        if (j < x->ndim && !consumed[j]) {
            p->rshape[r] = x->shape[j];
            p->rxdim[r++] = j;
            nsl++;
        }
    }
    p->rnd = r;
    return JN_OK;
}

/* Byte offsets into x for every position of B (contiguous int64 tensor). */
typedef struct {
    const adv_plan *p;
    int64_t *off;
    int64_t inner;                  /* B's last dim (1 when B is 0-d) */
    const char *base[JN_MAX_DIMS];  /* per entry: index values, or mask offsets */
    int64_t st[JN_MAX_DIMS][JN_MAX_DIMS]; /* per entry: byte strides over B */
    int64_t xsize[JN_MAX_DIMS], xbs[JN_MAX_DIMS];
    int is32[JN_MAX_DIMS], isoff[JN_MAX_DIMS];
    bad_flag bad;
} offs_ctx;

static void offs_task(int64_t b, int64_t e, void *vc) {
    offs_ctx *c = vc;
    const adv_plan *p = c->p;
    int nb = p->nb, outer = nb > 0 ? nb - 1 : 0;
    int64_t cnt[JN_MAX_DIMS], r = b;
    for (int d = outer - 1; d >= 0; d--) {
        cnt[d] = r % p->bshape[d];
        r /= p->bshape[d];
    }
    int64_t ist[JN_MAX_DIMS];
    for (int k = 0; k < p->nent; k++) ist[k] = nb ? c->st[k][nb - 1] : 0;
    for (int64_t row = b; row < e; row++) {
        if (is_bad(&c->bad)) return;
        int64_t *o = c->off + row * c->inner;
        for (int64_t i = 0; i < c->inner; i++) o[i] = 0;
        for (int k = 0; k < p->nent; k++) {
            const char *q = c->base[k];
            for (int d = 0; d < outer; d++) q += cnt[d] * c->st[k][d];
            if (c->isoff[k]) {
                for (int64_t i = 0; i < c->inner; i++) o[i] += *(const int64_t *)(q + i * ist[k]);
                continue;
            }
            int64_t size = c->xsize[k], xbs = c->xbs[k];
            for (int64_t i = 0; i < c->inner; i++) {
                int64_t v = c->is32[k] ? *(const int32_t *)(q + i * ist[k]) : *(const int64_t *)(q + i * ist[k]);
                int64_t w = v < 0 ? v + size : v;
                if ((uint64_t)w >= (uint64_t)size) {
                    flag_bad(&c->bad, v, k);
                    return;
                }
                o[i] += w * xbs;
            }
        }
        for (int d = outer - 1; d >= 0; d--) {
            if (++cnt[d] < p->bshape[d]) break;
            cnt[d] = 0;
        }
    }
}

/* Byte offsets into x of the set entries of a mask consuming x dims
 * xdim.. (C order). */
typedef struct {
    int64_t *o, w;
    int64_t xbs[JN_MAX_DIMS]; /* x byte strides of the consumed dims */
    int nd;
} moff_ctx;

static void moff_row(const uint8_t *row, int64_t n, int64_t st, const int64_t *cnt, void *vc) {
    moff_ctx *c = vc;
    int64_t base = 0, xs = c->nd ? c->xbs[c->nd - 1] : 0, w = c->w;
    for (int d = 0; d < c->nd - 1; d++) base += cnt[d] * c->xbs[d];
    for (int64_t j = 0; j < n; j++)
        if (row[j * st]) c->o[w++] = base + j * xs;
    c->w = w;
}

static jn_tensor *mask_offsets(const jn_tensor *x, const adv_entry *e) {
    int64_t n1[1] = {e->nnz};
    jn_tensor *r = jn_tensor_new(JN_I64, 1, n1);
    if (!r) return NULL;
    moff_ctx c = {(int64_t *)jn_data(r), 0, {0}, e->t->ndim};
    for (int d = 0; d < c.nd; d++) c.xbs[d] = x->strides[e->xdim + d] * (int64_t)jn_elsize(x);
    mask_rows(e->t, moff_row, &c);
    return r;
}

static jn_status adv_offsets(const char *op, jn_tensor *x, const adv_plan *p, jn_tensor **res) {
    if (p->nent == 1 && p->ent[0].isbool) { /* x[mask]: B is [nnz], nothing to combine */
        *res = mask_offsets(x, &p->ent[0]);
        return *res ? JN_OK : JN_ERR_NOMEM;
    }
    jn_tensor *off = jn_tensor_new(JN_I64, p->nb, p->bshape), *moff[JN_MAX_DIMS] = {0};
    if (!off) return JN_ERR_NOMEM;
    jn_status s = JN_OK;
    offs_ctx c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.off = (int64_t *)jn_data(off);
    c.inner = p->nb ? p->bshape[p->nb - 1] : 1;
    for (int k = 0; k < p->nent; k++) {
        const adv_entry *e = &p->ent[k];
        const jn_tensor *src = e->t;
        if (e->isbool) {
            if (!(moff[k] = mask_offsets(x, e))) {
                s = JN_ERR_NOMEM;
                goto done;
            }
            src = moff[k];
            c.isoff[k] = 1;
        } else {
            c.is32[k] = e->t->dtype == JN_I32;
            c.xsize[k] = x->shape[e->xdim];
            c.xbs[k] = x->strides[e->xdim] * (int64_t)jn_elsize(x);
        }
        c.base[k] = jn_data(src);
        jn_broadcast_byte_strides(src, p->nb, p->bshape, c.st[k]);
    }
    int64_t numel = jn_shape_numel(p->nb, p->bshape);
    if (numel > 0) {
        int64_t rows = numel / c.inner, grain = (1 << 14) / (c.inner * (p->nent ? p->nent : 1));
        jn_parallel_for(rows, grain > 0 ? grain : 1, offs_task, &c);
    }
    if (c.bad.bad) {
        const adv_entry *e = &p->ent[c.bad.which];
        s = oob(op, c.bad.val, e->xdim, x->shape[e->xdim]);
    }
done:
    for (int k = 0; k < p->nent; k++) jn_tensor_decref(moff[k]);
    if (s) jn_tensor_decref(off);
    else *res = off;
    return s;
}

/* Byte strides over the result for x (slices only) and off (B only). */
static void adv_strides(const jn_tensor *x, const adv_plan *p, int64_t *xbs, int64_t *obs) {
    int64_t bst[JN_MAX_DIMS];
    jn_contiguous_strides(p->nb, p->bshape, bst);
    int b = 0;
    for (int r = 0; r < p->rnd; r++) {
        if (p->rxdim[r] >= 0) {
            xbs[r] = x->strides[p->rxdim[r]] * (int64_t)jn_elsize(x);
            obs[r] = 0;
        } else {
            xbs[r] = 0;
            obs[r] = bst[b++] * 8;
        }
    }
}

/* Operands: out, x, off (bytes).  A run with one offset (a full slice
 * innermost) is a row copy: memcpy when both sides are contiguous. */
#define OFFGET_LOOP(NAME, CPY, ES)                                                 \
    static void NAME(char **p, const int64_t *s, int64_t n, void *ctx) {           \
        (void)ctx;                                                                 \
        if (s[2] == 0) {                                                           \
            const char *x = p[1] + *(const int64_t *)p[2];                         \
            if (s[0] == ES && s[1] == ES) memcpy(p[0], x, (size_t)n * ES);         \
            else for (int64_t i = 0; i < n; i++) CPY(p[0] + i * s[0], x + i * s[1]); \
            return;                                                                \
        }                                                                          \
        for (int64_t i = 0; i < n; i++)                                            \
            CPY(p[0] + i * s[0], p[1] + i * s[1] + *(const int64_t *)(p[2] + i * s[2])); \
    }
OFFGET_LOOP(offget_c1, CPY1, 1)
OFFGET_LOOP(offget_c2, CPY2, 2)
OFFGET_LOOP(offget_c4, CPY4, 4)
OFFGET_LOOP(offget_c8, CPY8, 8)
static const jn_loop_fn offget_fns[4] = {offget_c1, offget_c2, offget_c4, offget_c8};

/* Operands: x, values, off (bytes); values never overlap x (copied first). */
#define OFFPUT_LOOP(NAME, OP)                                                      \
    static void NAME(char **p, const int64_t *s, int64_t n, void *ctx) {           \
        (void)ctx;                                                                 \
        if (s[2] == 0) {                                                           \
            char *x = p[0] + *(const int64_t *)p[2];                               \
            const char *v = p[1];                                                  \
            for (int64_t i = 0; i < n; i++) OP(x + i * s[0], v + i * s[1]);        \
            return;                                                                \
        }                                                                          \
        for (int64_t i = 0; i < n; i++)                                            \
            OP(p[0] + i * s[0] + *(const int64_t *)(p[2] + i * s[2]), p[1] + i * s[1]); \
    }
#define OFFPUT_DEF(N, OP) OFFPUT_LOOP(offput_##N, OP)
ELEM_OPS(OFFPUT_DEF)
#define OFFPUT_ENTRY(N, OP) offput_##N,
static const jn_loop_fn offput_fns[12] = {ELEM_OPS(OFFPUT_ENTRY)};

jn_status jn_infer_index(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    adv_plan p;
    jn_status s = adv_plan_build("index", in[0], nin - 1, in + 1, &a->a[0].l, &p);
    if (s) return s;
    out->dtype = in[0]->dtype;
    out->ndim = p.rnd;
    memcpy(out->shape, p.rshape, sizeof out->shape);
    return JN_OK;
}

jn_status jn_cpu_index(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_tensor *x = in[0], *y = out[0], *off;
    adv_plan p;
    jn_status s = adv_plan_build("index", x, nin - 1, in + 1, &a->a[0].l, &p);
    if (s || (s = adv_offsets("index", x, &p, &off))) return s;
    int64_t bs[3][JN_MAX_DIMS], ys[JN_MAX_DIMS];
    jn_contiguous_strides(p.rnd, p.rshape, ys);
    for (int r = 0; r < p.rnd; r++) bs[0][r] = ys[r] * (int64_t)jn_elsize(y);
    adv_strides(x, &p, bs[1], bs[2]);
    char *base[3] = {jn_data(y), jn_data(x), jn_data(off)};
    jn_nditer(3, base, p.rnd, p.rshape, bs, offget_fns[es_slot(jn_elsize(x))], NULL, 1);
    jn_tensor_decref(off);
    return JN_OK;
}

/* values: drop leading size-1 dims beyond the result's rank, then broadcast. */
static jn_status put_values_check(const jn_tensor *v, const adv_plan *p, jn_tensor *vv) {
    char sa[128], sb[128];
    *vv = *v;
    while (vv->ndim > p->rnd && vv->shape[0] == 1) {
        memmove(vv->shape, vv->shape + 1, sizeof(int64_t) * (size_t)(vv->ndim - 1));
        memmove(vv->strides, vv->strides + 1, sizeof(int64_t) * (size_t)(vv->ndim - 1));
        vv->ndim--;
    }
    int nd;
    int64_t sh[JN_MAX_DIMS];
    if (vv->ndim > p->rnd || jn_broadcast_shapes(p->rnd, p->rshape, vv->ndim, vv->shape, &nd, sh) ||
        !jn_same_shape(nd, sh, p->rnd, p->rshape))
        return jn_error(JN_ERR_SHAPE, "index_put_(): shape mismatch: value tensor of shape %s cannot be "
                                      "broadcast to indexing result of shape %s",
                        jn_shape_str(v->ndim, v->shape, sa, sizeof sa),
                        jn_shape_str(p->rnd, p->rshape, sb, sizeof sb));
    return JN_OK;
}

jn_status jn_infer_index_put_(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    jn_tensor *x = in[0], vv;
    for (int d = 0; d < x->ndim; d++)
        if (x->shape[d] > 1 && x->strides[d] == 0)
            return jn_error(JN_ERR_RUNTIME, "index_put_(): unsupported operation: more than one element of "
                                            "the written-to tensor refers to a single memory location; "
                                            "clone() it first");
    adv_plan p;
    jn_status s = adv_plan_build("index_put_", x, nin - 2, in + 2, &a->a[0].l, &p);
    if (s || (s = put_values_check(in[1], &p, &vv))) return s;
    out->dtype = x->dtype;
    out->ndim = x->ndim;
    memcpy(out->shape, x->shape, sizeof out->shape);
    return JN_OK;
}

/* Do the bytes spanned by a and b intersect?  Tensors built over the same
 * memory (numpy views) need not share a storage object, so compare addresses. */
static int mem_overlap(const jn_tensor *a, const jn_tensor *b) {
    if (jn_numel(a) == 0 || jn_numel(b) == 0) return 0;
    const jn_tensor *t[2] = {a, b};
    char *lo[2], *hi[2];
    for (int k = 0; k < 2; k++) {
        int64_t l = 0, h = 0;
        for (int d = 0; d < t[k]->ndim; d++) {
            int64_t span = (t[k]->shape[d] - 1) * t[k]->strides[d];
            if (span < 0) l += span;
            else h += span;
        }
        lo[k] = jn_data(t[k]) + l * (int64_t)jn_elsize(t[k]);
        hi[k] = jn_data(t[k]) + (h + 1) * (int64_t)jn_elsize(t[k]);
    }
    return lo[0] < hi[1] && lo[1] < hi[0];
}

jn_status jn_cpu_index_put_(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_tensor *x = in[0], *v = in[1], *off, *vc = NULL, vv;
    int accumulate = a->a[1].i != 0;
    adv_plan p;
    jn_status s = adv_plan_build("index_put_", x, nin - 2, in + 2, &a->a[0].l, &p);
    if (s || (s = adv_offsets("index_put_", x, &p, &off))) return s;
    /* values in x's dtype, and never aliasing what we write */
    if (v->dtype != x->dtype || mem_overlap(v, x)) {
        if (!(vc = jn_tensor_new(x->dtype, v->ndim, v->shape)) || (s = jn_copy_into(vc, v))) {
            s = s ? s : JN_ERR_NOMEM;
            goto done;
        }
        v = vc;
    }
    if ((s = put_values_check(v, &p, &vv))) goto done;
    int64_t bs[3][JN_MAX_DIMS];
    adv_strides(x, &p, bs[0], bs[2]);
    jn_broadcast_byte_strides(&vv, p.rnd, p.rshape, bs[1]);
    char *base[3] = {jn_data(x), jn_data(v), jn_data(off)};
    /* serial: duplicates resolve in C order (last write wins / ordered sums) */
    jn_nditer(3, base, p.rnd, p.rshape, bs, offput_fns[elem_op(x->dtype, accumulate)], NULL, 0);
done:
    jn_tensor_decref(vc);
    jn_tensor_decref(off);
    return s;
}
