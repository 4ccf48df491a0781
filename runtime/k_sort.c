/* k_sort.c -- sort: the values of each slice along a dim in order, and
 * where each came from.
 *
 * sort(x; dim, descending) -> (values, indices int64), PyTorch's torch.sort
 * with stable=True semantics always: equal values keep their input order
 * (in both directions), NaN counts as larger than every number (last when
 * ascending, first when descending).  topk, argsort, msort, median and
 * multinomial without replacement (janus/_compose.py) are built on it; its
 * derivative (runtime/derivatives.c) scatters the values' gradient back
 * through the indices.  Composition from other table ops would need
 * O(n log^2 n) work in as many ops, hence one op.
 *
 * Each slice is copied into (key, index) pairs -- keys as double for the
 * float dtypes (exact for all of them), as int64 otherwise -- sorted with
 * the index as the tie-break (so qsort's instability cannot show), and
 * written out.  Slices are independent: they run on the thread pool.
 */
#include "jn_runtime.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

jn_status jn_infer_sort(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    const jn_tensor *x = in[0];
    int64_t dim = a->a[0].i;
    jn_status s = jn_wrap_dim(&dim, x->ndim ? x->ndim : 1, "sort");
    if (s) return s;
    for (int k = 0; k < 2; k++) {
        out[k].dtype = k ? JN_I64 : x->dtype;
        out[k].ndim = x->ndim;
        memcpy(out[k].shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    }
    return JN_OK;
}

typedef struct {
    double key;
    int64_t idx;
} fkey;

typedef struct {
    int64_t key;
    int64_t idx;
} ikey;

/* NaN above every number; ties by index, ascending in both directions. */
static int cmp_f_asc(const void *pa, const void *pb) {
    const fkey *a = pa, *b = pb;
    int an = isnan(a->key), bn = isnan(b->key);
    if (an != bn) return an - bn;
    if (!an && a->key != b->key) return a->key < b->key ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

static int cmp_f_desc(const void *pa, const void *pb) {
    const fkey *a = pa, *b = pb;
    int an = isnan(a->key), bn = isnan(b->key);
    if (an != bn) return bn - an;
    if (!an && a->key != b->key) return a->key > b->key ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

static int cmp_i_asc(const void *pa, const void *pb) {
    const ikey *a = pa, *b = pb;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

static int cmp_i_desc(const void *pa, const void *pb) {
    const ikey *a = pa, *b = pb;
    if (a->key != b->key) return a->key > b->key ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

typedef struct {
    const char *x;   /* contiguous input */
    char *vals;      /* contiguous outputs */
    int64_t *idx;
    jn_dtype dt;
    size_t es;
    int64_t n, inner; /* slice length, stride between its elements (elements) */
    int desc, isf;
    int failed;       /* out of memory in some chunk */
} sort_job;

static void sort_range(int64_t begin, int64_t end, void *ctx) {
    sort_job *j = ctx;
    size_t pair = j->isf ? sizeof(fkey) : sizeof(ikey);
    void *buf = malloc((size_t)j->n * pair);
    if (!buf) {
        __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    for (int64_t s = begin; s < end; s++) {
        int64_t o = s / j->inner, i = s % j->inner;
        int64_t base = o * j->n * j->inner + i; /* element (o, 0, i) */
        if (j->isf) {
            fkey *k = buf;
            for (int64_t e = 0; e < j->n; e++) {
                k[e].key = jn_load_f64(j->x + (size_t)(base + e * j->inner) * j->es, j->dt);
                k[e].idx = e;
            }
            qsort(k, (size_t)j->n, sizeof *k, j->desc ? cmp_f_desc : cmp_f_asc);
            for (int64_t e = 0; e < j->n; e++) j->idx[base + e * j->inner] = k[e].idx;
        } else {
            ikey *k = buf;
            for (int64_t e = 0; e < j->n; e++) {
                k[e].key = jn_load_i64(j->x + (size_t)(base + e * j->inner) * j->es, j->dt);
                k[e].idx = e;
            }
            qsort(k, (size_t)j->n, sizeof *k, j->desc ? cmp_i_desc : cmp_i_asc);
            for (int64_t e = 0; e < j->n; e++) j->idx[base + e * j->inner] = k[e].idx;
        }
        /* values: the input's own bytes at the sorted positions (no rounding through the key) */
        for (int64_t e = 0; e < j->n; e++) {
            int64_t at = base + e * j->inner;
            memcpy(j->vals + (size_t)at * j->es, j->x + (size_t)(base + j->idx[at] * j->inner) * j->es, j->es);
        }
    }
    free(buf);
}

jn_status jn_cpu_sort(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_tensor *x = in[0];
    int64_t dim = a->a[0].i;
    jn_status s = jn_wrap_dim(&dim, x->ndim ? x->ndim : 1, "sort");
    if (s) return s;
    int64_t total = jn_numel(x);
    if (total == 0) return JN_OK;
    jn_tensor *xc = jn_contiguous(x);
    if (!xc) return JN_ERR_NOMEM;
    sort_job j = {.x = jn_data(xc), .vals = jn_data(out[0]), .idx = (int64_t *)jn_data(out[1]), .dt = x->dtype,
                  .es = jn_dtype_size[x->dtype], .n = x->ndim ? x->shape[dim] : 1, .inner = 1,
                  .desc = a->a[1].i != 0, .isf = jn_dtype_is_float(x->dtype)};
    for (int d = (int)dim + 1; d < x->ndim; d++) j.inner *= x->shape[d];
    int64_t slices = total / j.n;
    /* grain: about 32k elements of work per chunk */
    int64_t grain = j.n >= 32768 ? 1 : 32768 / j.n;
    jn_parallel_for(slices, grain, sort_range, &j);
    jn_tensor_decref(xc);
    return j.failed ? jn_error(JN_ERR_NOMEM, "sort(): out of memory for a slice of %lld elements", (long long)j.n)
                    : JN_OK;
}
