/* k_shape.c -- views, joins, copies and factories.
 *
 * View ops (JN_F_VIEW) never copy: the dispatcher hands the kernel a header
 * that already shares the input's storage and carries the shape from infer;
 * the kernel only sets strides and offset.  Each view op has one geometry
 * function that both infer and kernel call, so an impossible view fails in
 * infer (before anything is allocated) and the two can never disagree.
 * cat and stack copy every input into a strided window of the output with
 * jn_copy_into, which brings dtype conversion and threading along.
 * Factories fill contiguous outputs with plain loops split over the thread
 * pool.  Semantics and error wording follow PyTorch.
 */
#include "jn_runtime.h"

#include <float.h>
#include <math.h>
#include <string.h>

#define SHAPE_BUF 160

/* a*b into *r; 0 on int64 overflow. */
static int mul_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_mul_overflow(a, b, r); }
static int add_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_add_overflow(a, b, r); }

static void meta_set(jn_meta *m, jn_dtype dt, int ndim, const int64_t *shape) {
    memset(m, 0, sizeof *m);
    m->dtype = dt;
    m->ndim = ndim;
    if (ndim) memcpy(m->shape, shape, sizeof(int64_t) * (size_t)ndim);
}

/* ================================================================ views */

/* PyTorch's computeStride: strides that let (oshape, ostride) be seen as
 * nshape without copying, or 0 when some new dim would have to span two
 * memory chunks that are not contiguous with each other. */
static int view_strides(int ond, const int64_t *oshape, const int64_t *ostride, int nnd,
                        const int64_t *nshape, int64_t *nstride) {
    if (ond == 0) {
        for (int d = 0; d < nnd; d++) nstride[d] = 1;
        return 1;
    }
    int64_t numel = jn_shape_numel(ond, oshape);
    if (numel == 0 && jn_same_shape(ond, oshape, nnd, nshape)) {
        memcpy(nstride, ostride, sizeof(int64_t) * (size_t)ond);
        return 1;
    }
    if (numel == 0) { /* any strides work; use the contiguous ones like PyTorch */
        for (int d = nnd - 1; d >= 0; d--)
            nstride[d] = d == nnd - 1 ? 1 : (nshape[d + 1] > 1 ? nshape[d + 1] : 1) * nstride[d + 1];
        return 1;
    }
    int vd = nnd - 1;
    int64_t chunk = ostride[ond - 1], tnumel = 1, vnumel = 1, t;
    for (int td = ond - 1; td >= 0; td--) {
        tnumel *= oshape[td];
        /* a chunk ends where the next-outer dim is not laid out right after it */
        if (td == 0 ||
            (oshape[td - 1] != 1 && (!mul_ok(tnumel, chunk, &t) || ostride[td - 1] != t))) {
            while (vd >= 0 && (vnumel < tnumel || nshape[vd] == 1)) {
                if (!mul_ok(vnumel, chunk, &nstride[vd])) return 0;
                vnumel *= nshape[vd];
                vd--;
            }
            if (vnumel != tnumel) return 0;
            if (td > 0) {
                chunk = ostride[td - 1];
                tnumel = vnumel = 1;
            }
        }
    }
    return vd == -1;
}

static jn_status view_geom(const jn_tensor *x, const jn_attrs *a, jn_meta *m, int64_t *st,
                           int64_t *off) {
    const jn_ints *l = &a->a[0].l;
    char buf[SHAPE_BUF];
    int64_t numel = jn_numel(x), newsize = 1, shape[JN_MAX_DIMS];
    int infer = -1, overflow = 0;
    for (int k = 0; k < l->n; k++) {
        int64_t v = l->v[k];
        shape[k] = v;
        if (v == -1) {
            if (infer >= 0) return jn_error(JN_ERR_SHAPE, "view: only one dimension can be inferred");
            infer = k;
        } else if (v < 0) {
            return jn_error(JN_ERR_SHAPE, "view: invalid shape dimension %lld in %s", (long long)v,
                            jn_shape_str(l->n, l->v, buf, sizeof buf));
        } else if (!mul_ok(newsize, v, &newsize)) {
            overflow = 1;
        }
    }
    int ok = !overflow && (numel == newsize || (infer >= 0 && newsize > 0 && numel % newsize == 0));
    if (!ok)
        return jn_error(JN_ERR_SHAPE, "view: shape '%s' is invalid for input of size %lld",
                        jn_shape_str(l->n, l->v, buf, sizeof buf), (long long)numel);
    if (infer >= 0) {
        if (newsize == 0)
            return jn_error(JN_ERR_SHAPE,
                            "view: cannot reshape tensor of 0 elements into shape %s because the "
                            "unspecified dimension size -1 can be any value and is ambiguous",
                            jn_shape_str(l->n, l->v, buf, sizeof buf));
        shape[infer] = numel / newsize;
    }
    if (!view_strides(x->ndim, x->shape, x->strides, l->n, shape, st))
        return jn_error(JN_ERR_SHAPE,
                        "view size is not compatible with input tensor's size and stride (at least "
                        "one dimension spans across two contiguous subspaces). Use .reshape(...) "
                        "instead.");
    meta_set(m, x->dtype, l->n, shape);
    *off = x->offset;
    return JN_OK;
}

static jn_status permute_geom(const jn_tensor *x, const jn_attrs *a, jn_meta *m, int64_t *st,
                              int64_t *off) {
    const jn_ints *l = &a->a[0].l;
    char buf[SHAPE_BUF];
    if (l->n != x->ndim)
        return jn_error(JN_ERR_SHAPE,
                        "permute: number of dimensions in the tensor input does not match the "
                        "length of the desired ordering of dimensions i.e. input.dim() = %d is not "
                        "equal to len(dims) = %d",
                        x->ndim, l->n);
    int64_t shape[JN_MAX_DIMS];
    int seen[JN_MAX_DIMS] = {0};
    for (int k = 0; k < l->n; k++) {
        int64_t d = l->v[k];
        jn_status s = jn_wrap_dim(&d, x->ndim, "permute");
        if (s) return s;
        if (seen[d]++)
            return jn_error(JN_ERR_SHAPE, "permute: duplicate dims are not allowed (dims %s)",
                            jn_shape_str(l->n, l->v, buf, sizeof buf));
        shape[k] = x->shape[d];
        st[k] = x->strides[d];
    }
    meta_set(m, x->dtype, x->ndim, shape);
    *off = x->offset;
    return JN_OK;
}

static jn_status transpose_geom(const jn_tensor *x, const jn_attrs *a, jn_meta *m, int64_t *st,
                                int64_t *off) {
    int64_t d0 = a->a[0].i, d1 = a->a[1].i;
    jn_status s;
    if ((s = jn_wrap_dim(&d0, x->ndim, "transpose")) || (s = jn_wrap_dim(&d1, x->ndim, "transpose")))
        return s;
    meta_set(m, x->dtype, x->ndim, x->shape);
    memcpy(st, x->strides, sizeof(int64_t) * JN_MAX_DIMS);
    if (x->ndim) {
        m->shape[d0] = x->shape[d1];
        m->shape[d1] = x->shape[d0];
        st[d0] = x->strides[d1];
        st[d1] = x->strides[d0];
    }
    *off = x->offset;
    return JN_OK;
}

static jn_status squeeze_geom(const jn_tensor *x, const jn_attrs *a, jn_meta *m, int64_t *st,
                              int64_t *off) {
    const jn_ints *l = &a->a[0].l;
    int listed[JN_MAX_DIMS] = {0};
    for (int k = 0; k < l->n; k++) {
        int64_t d = l->v[k];
        jn_status s = jn_wrap_dim(&d, x->ndim, "squeeze");
        if (s) return s;
        if (listed[d]++)
            return jn_error(JN_ERR_SHAPE, "squeeze: dim %lld appears multiple times in the list of dims",
                            (long long)d);
    }
    int64_t shape[JN_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (x->shape[d] == 1 && (l->n == 0 || listed[d])) continue;
        shape[nd] = x->shape[d];
        st[nd++] = x->strides[d];
    }
    meta_set(m, x->dtype, nd, shape);
    *off = x->offset;
    return JN_OK;
}

static jn_status unsqueeze_geom(const jn_tensor *x, const jn_attrs *a, jn_meta *m, int64_t *st,
                                int64_t *off) {
    int64_t dim = a->a[0].i;
    if (x->ndim >= JN_MAX_DIMS)
        return jn_error(JN_ERR_SHAPE, "unsqueeze: tensors have at most %d dims; the input already has %d",
                        JN_MAX_DIMS, x->ndim);
    jn_status s = jn_wrap_dim(&dim, x->ndim + 1, "unsqueeze");
    if (s) return s;
    int64_t shape[JN_MAX_DIMS];
    for (int d = 0, k = 0; d <= x->ndim; d++) {
        if (d == dim) {
            shape[d] = 1;
            st[d] = dim >= x->ndim ? 1 : x->shape[dim] * x->strides[dim];
        } else {
            shape[d] = x->shape[k];
            st[d] = x->strides[k++];
        }
    }
    meta_set(m, x->dtype, x->ndim + 1, shape);
    *off = x->offset;
    return JN_OK;
}

/* PyTorch's inferExpandGeometry. */
static jn_status expand_geom(const jn_tensor *x, const jn_attrs *a, jn_meta *m, int64_t *st,
                             int64_t *off) {
    const jn_ints *l = &a->a[0].l;
    char b1[SHAPE_BUF], b2[SHAPE_BUF];
    int nd = l->n, td = x->ndim;
    if (nd < td)
        return jn_error(JN_ERR_SHAPE,
                        "expand: the number of sizes provided (%d) must be greater or equal to the "
                        "number of dimensions in the tensor (%d); target sizes %s, tensor sizes %s",
                        nd, td, jn_shape_str(nd, l->v, b1, sizeof b1),
                        jn_shape_str(td, x->shape, b2, sizeof b2));
    int64_t shape[JN_MAX_DIMS];
    for (int i = nd - 1; i >= 0; i--) {
        int dim = td - nd + i;
        int64_t size = dim >= 0 ? x->shape[dim] : 1;
        int64_t stride = dim >= 0 ? x->strides[dim] : (i == nd - 1 ? 1 : shape[i + 1] * st[i + 1]);
        int64_t target = l->v[i];
        if (target == -1) {
            if (dim < 0)
                return jn_error(JN_ERR_SHAPE,
                                "expand: the expanded size of the tensor (-1) isn't allowed in a "
                                "leading, non-existing dimension %d",
                                i);
            target = size;
        }
        if (target < 0)
            return jn_error(JN_ERR_SHAPE, "expand: invalid size %lld at dim %d of target sizes %s",
                            (long long)target, i, jn_shape_str(nd, l->v, b1, sizeof b1));
        if (size != target) {
            if (size != 1)
                return jn_error(JN_ERR_SHAPE,
                                "expand: the expanded size of the tensor (%lld) must match the "
                                "existing size (%lld) at non-singleton dimension %d.  Target sizes: "
                                "%s.  Tensor sizes: %s",
                                (long long)target, (long long)size, i,
                                jn_shape_str(nd, l->v, b1, sizeof b1),
                                jn_shape_str(td, x->shape, b2, sizeof b2));
            size = target;
            stride = 0;
        }
        shape[i] = size;
        st[i] = stride;
    }
    meta_set(m, x->dtype, nd, shape);
    *off = x->offset;
    return JN_OK;
}

/* Python slice semantics with clamping (step > 0). */
static jn_status slice_geom(const jn_tensor *x, const jn_attrs *a, jn_meta *m, int64_t *st,
                            int64_t *off) {
    int64_t dim = a->a[0].i, start = a->a[1].i, end = a->a[2].i, step = a->a[3].i;
    if (x->ndim == 0) return jn_error(JN_ERR_INDEX, "slice() cannot be applied to a 0-dim tensor.");
    jn_status s = jn_wrap_dim(&dim, x->ndim, "slice");
    if (s) return s;
    if (step <= 0)
        return jn_error(JN_ERR_VALUE, "slice: step must be greater than zero, got %lld", (long long)step);
    int64_t size = x->shape[dim];
    if (start < 0) start = start < -size ? 0 : start + size;
    if (end < 0) end = end < -size ? 0 : end + size;
    if (start > size) start = size;
    if (end < start) end = start;
    else if (end > size) end = size;
    int64_t len = end == start ? 0 : (end - start - 1) / step + 1;
    meta_set(m, x->dtype, x->ndim, x->shape);
    m->shape[dim] = len;
    memcpy(st, x->strides, sizeof(int64_t) * JN_MAX_DIMS);
    /* the stride only matters for two or more elements (then step < size and
     * the product cannot overflow); otherwise keep the old one so a huge step
     * never leaves a huge stride behind */
    if (len > 1) st[dim] = x->strides[dim] * step;
    *off = x->offset + start * x->strides[dim];
    return JN_OK;
}

static jn_status select_geom(const jn_tensor *x, const jn_attrs *a, jn_meta *m, int64_t *st,
                             int64_t *off) {
    int64_t dim = a->a[0].i, index = a->a[1].i;
    if (x->ndim == 0) return jn_error(JN_ERR_INDEX, "select() cannot be applied to a 0-dim tensor.");
    jn_status s = jn_wrap_dim(&dim, x->ndim, "select");
    if (s) return s;
    int64_t size = x->shape[dim];
    if (index < -size || index >= size)
        return jn_error(JN_ERR_INDEX, "select: index %lld is out of bounds for dimension %lld with size %lld",
                        (long long)index, (long long)dim, (long long)size);
    if (index < 0) index += size;
    int64_t shape[JN_MAX_DIMS];
    for (int d = 0, k = 0; d < x->ndim; d++) {
        if (d == dim) continue;
        shape[k] = x->shape[d];
        st[k++] = x->strides[d];
    }
    meta_set(m, x->dtype, x->ndim - 1, shape);
    *off = x->offset + index * x->strides[dim];
    return JN_OK;
}

/* Elements reachable from the storage start through x's view (0 if empty). */
static int64_t view_extent(const jn_tensor *x) {
    int64_t e = x->offset + 1;
    for (int d = 0; d < x->ndim; d++) {
        if (x->shape[d] == 0) return 0;
        if (x->strides[d] > 0) e += (x->shape[d] - 1) * x->strides[d];
    }
    return e;
}

static jn_status as_strided_geom(const jn_tensor *x, const jn_attrs *a, jn_meta *m, int64_t *st,
                                 int64_t *off) {
    const jn_ints *size = &a->a[0].l, *stride = &a->a[1].l;
    int64_t offset = a->a[2].i;
    char b1[SHAPE_BUF], b2[SHAPE_BUF];
    if (size->n != stride->n)
        return jn_error(JN_ERR_SHAPE, "as_strided: mismatch in length of strides and shape (size %s, stride %s)",
                        jn_shape_str(size->n, size->v, b1, sizeof b1),
                        jn_shape_str(stride->n, stride->v, b2, sizeof b2));
    if (offset < 0) return jn_error(JN_ERR_SHAPE, "as_strided: invalid storage offset %lld", (long long)offset);
    int64_t need = offset + 1, t;
    int empty = 0, ovf = 0;
    for (int d = 0; d < size->n; d++) {
        if (size->v[d] < 0)
            return jn_error(JN_ERR_SHAPE, "as_strided: negative size %lld at dim %d", (long long)size->v[d], d);
        if (stride->v[d] < 0)
            return jn_error(JN_ERR_SHAPE,
                            "as_strided: negative strides are not supported at the moment, got "
                            "strides %s",
                            jn_shape_str(stride->n, stride->v, b2, sizeof b2));
        if (size->v[d] == 0) empty = 1;
        else if (!mul_ok(size->v[d] - 1, stride->v[d], &t) || !add_ok(need, t, &need)) ovf = 1;
    }
    if (!empty) {
        /* storage bytes, or what x itself reaches (numpy buffers report only
         * the bytes of their elements, not the span of a strided view) */
        int64_t avail = (int64_t)(x->storage->nbytes / jn_elsize(x)), ext = view_extent(x);
        if (ext > avail) avail = ext;
        if (ovf || need > avail)
            return jn_error(JN_ERR_RUNTIME,
                            "as_strided: sizes %s, strides %s, storage offset %lld, and itemsize %zu "
                            "requiring a storage size of %.0f are out of bounds for storage of size %.0f",
                            jn_shape_str(size->n, size->v, b1, sizeof b1),
                            jn_shape_str(stride->n, stride->v, b2, sizeof b2), (long long)offset,
                            jn_elsize(x), ovf ? INFINITY : (double)need * (double)jn_elsize(x),
                            (double)avail * (double)jn_elsize(x));
    }
    meta_set(m, x->dtype, size->n, size->v);
    memcpy(st, stride->v, sizeof(int64_t) * (size_t)size->n);
    *off = offset;
    return JN_OK;
}

#define VIEW_OP(name)                                                                             \
    jn_status jn_infer_##name(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) { \
        int64_t st[JN_MAX_DIMS], off;                                                             \
        (void)nin;                                                                                \
        return name##_geom(in[0], a, out, st, &off);                                              \
    }                                                                                             \
    jn_status jn_cpu_##name(int nin, jn_tensor *const *in, const jn_attrs *a,                     \
                            jn_tensor *const *out) {                                              \
        jn_meta m;                                                                                \
        int64_t st[JN_MAX_DIMS] = {0}, off = 0;                                                   \
        (void)nin;                                                                                \
        jn_status s = name##_geom(in[0], a, &m, st, &off);                                        \
        if (s) return s;                                                                          \
        memcpy(out[0]->strides, st, sizeof st);                                                   \
        out[0]->offset = off;                                                                     \
        return JN_OK;                                                                             \
    }

VIEW_OP(view)
VIEW_OP(permute)
VIEW_OP(transpose)
VIEW_OP(squeeze)
VIEW_OP(unsqueeze)
VIEW_OP(expand)
VIEW_OP(slice)
VIEW_OP(select)
VIEW_OP(as_strided)

/* ========================================================= copies, joins */

jn_status jn_infer_clone(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    (void)nin; (void)a;
    meta_set(out, in[0]->dtype, in[0]->ndim, in[0]->shape);
    return JN_OK;
}

jn_status jn_cpu_clone(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    (void)nin; (void)a;
    return jn_copy_into(out[0], in[0]);
}

/* slice_scatter / select_scatter (PyTorch's ops of the same names): base
 * with the window a slice/select view would show replaced by src.  The
 * functional form of writing through such a view: the backward of
 * slice/select uses it, and so can a pass that removes view writes. */
#define SCATTER_OP(name, geom)                                                                     \
    jn_status jn_infer_##name(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {  \
        jn_meta w;                                                                                 \
        int64_t st[JN_MAX_DIMS], off;                                                              \
        char b1[SHAPE_BUF], b2[SHAPE_BUF];                                                         \
        (void)nin;                                                                                 \
        jn_status s = geom(in[0], a, &w, st, &off);                                                \
        if (s) return s;                                                                           \
        if (in[1]->dtype != in[0]->dtype)                                                          \
            return jn_error(JN_ERR_TYPE, #name ": expected src to have the same dtype as self "     \
                            "(%s), got %s", jn_dtype_names[in[0]->dtype], jn_dtype_names[in[1]->dtype]); \
        if (!jn_same_shape(w.ndim, w.shape, in[1]->ndim, in[1]->shape))                           \
            return jn_error(JN_ERR_SHAPE, #name ": expected src to have a size equal to the slice "  \
                            "of self. src size = %s, slice size = %s",                            \
                            jn_shape_str(in[1]->ndim, in[1]->shape, b1, sizeof b1),                \
                            jn_shape_str(w.ndim, w.shape, b2, sizeof b2));                         \
        meta_set(out, in[0]->dtype, in[0]->ndim, in[0]->shape);                                    \
        return JN_OK;                                                                              \
    }                                                                                              \
    jn_status jn_cpu_##name(int nin, jn_tensor *const *in, const jn_attrs *a,                      \
                            jn_tensor *const *out) {                                               \
        jn_meta w;                                                                                 \
        int64_t st[JN_MAX_DIMS] = {0}, off = 0;                                                    \
        (void)nin;                                                                                 \
        /* base already in place (jn_copy_into does nothing then): the graph                    \
         * executor's accumulators, a plan's in-place scatter */                                   \
        jn_status s = jn_copy_into(out[0], in[0]);                                                 \
        if (s || (s = geom(out[0], a, &w, st, &off))) return s;                                    \
        jn_tensor *win = jn_tensor_alias(out[0]);                                                  \
        if (!win) return JN_ERR_NOMEM;                                                             \
        win->ndim = w.ndim;                                                                        \
        memcpy(win->shape, w.shape, sizeof w.shape);                                               \
        memcpy(win->strides, st, sizeof st);                                                       \
        win->offset = off;                                                                         \
        s = jn_copy_into(win, in[1]);                                                              \
        jn_tensor_decref(win);                                                                     \
        return s;                                                                                  \
    }

SCATTER_OP(slice_scatter, slice_geom)
SCATTER_OP(select_scatter, select_geom)

/* Legacy rule: 1-d tensors of shape [0] are ignored by cat. */
static int cat_skip(const jn_tensor *t) { return t->ndim == 1 && t->shape[0] == 0; }

/* Output meta of cat; *dimp gets the wrapped dim, -1 if every input is skipped. */
static jn_status cat_meta(int nin, jn_tensor *const *in, int64_t dim, jn_meta *out, int64_t *dimp) {
    char b1[SHAPE_BUF];
    for (int i = 0; i < nin; i++)
        if (in[i]->ndim == 0)
            return jn_error(JN_ERR_SHAPE, "cat: zero-dimensional tensor (at position %d) cannot be concatenated", i);
    jn_dtype dt = jn_result_type(nin, in);
    int ref = -1;
    for (int i = 0; i < nin && ref < 0; i++)
        if (!cat_skip(in[i])) ref = i;
    if (ref < 0) { /* only empty 1-d inputs: the result is empty too */
        int64_t zero = 0;
        meta_set(out, dt, 1, &zero);
        *dimp = -1;
        return JN_OK;
    }
    const jn_tensor *r = in[ref];
    jn_status s = jn_wrap_dim(&dim, r->ndim, "cat");
    if (s) return s;
    int64_t total = 0;
    for (int i = 0; i < nin; i++) {
        const jn_tensor *t = in[i];
        if (cat_skip(t)) continue;
        if (t->ndim != r->ndim)
            return jn_error(JN_ERR_SHAPE,
                            "cat: Tensors must have same number of dimensions: got %d and %d "
                            "(tensor number %d in the list has shape %s)",
                            r->ndim, t->ndim, i, jn_shape_str(t->ndim, t->shape, b1, sizeof b1));
        for (int d = 0; d < r->ndim; d++)
            if (d != dim && t->shape[d] != r->shape[d])
                return jn_error(JN_ERR_SHAPE,
                                "cat: Sizes of tensors must match except in dimension %lld. Expected "
                                "size %lld but got size %lld for tensor number %d in the list.",
                                (long long)dim, (long long)r->shape[d], (long long)t->shape[d], i);
        if (!add_ok(total, t->shape[dim], &total))
            return jn_error(JN_ERR_SHAPE, "cat: the result size along dim %lld overflows", (long long)dim);
    }
    meta_set(out, dt, r->ndim, r->shape);
    out->shape[dim] = total;
    *dimp = dim;
    return JN_OK;
}

jn_status jn_infer_cat(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    int64_t dim;
    return cat_meta(nin, in, a->a[0].i, out, &dim);
}

jn_status jn_cpu_cat(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    jn_meta m;
    int64_t dim;
    jn_status s = cat_meta(nin, in, a->a[0].i, &m, &dim);
    if (s || dim < 0) return s;
    /* each input goes into the window [pos, pos + size) of out along dim */
    jn_tensor w = *out[0];
    int64_t pos = 0;
    for (int i = 0; i < nin; i++) {
        if (cat_skip(in[i]) || in[i]->shape[dim] == 0) continue;
        w.shape[dim] = in[i]->shape[dim];
        w.offset = out[0]->offset + pos * out[0]->strides[dim];
        if ((s = jn_copy_into(&w, in[i]))) return s;
        pos += in[i]->shape[dim];
    }
    return JN_OK;
}

static jn_status stack_meta(int nin, jn_tensor *const *in, int64_t *dim, jn_meta *out) {
    char b1[SHAPE_BUF], b2[SHAPE_BUF];
    const jn_tensor *r = in[0];
    if (r->ndim >= JN_MAX_DIMS)
        return jn_error(JN_ERR_SHAPE, "stack: tensors have at most %d dims; the inputs already have %d",
                        JN_MAX_DIMS, r->ndim);
    jn_status s = jn_wrap_dim(dim, r->ndim + 1, "stack");
    if (s) return s;
    for (int i = 1; i < nin; i++)
        if (!jn_same_shape(r->ndim, r->shape, in[i]->ndim, in[i]->shape))
            return jn_error(JN_ERR_SHAPE, "stack expects each tensor to be equal size, but got %s at entry 0 and %s at entry %d",
                            jn_shape_str(r->ndim, r->shape, b1, sizeof b1),
                            jn_shape_str(in[i]->ndim, in[i]->shape, b2, sizeof b2), i);
    int64_t shape[JN_MAX_DIMS];
    for (int d = 0, k = 0; d <= r->ndim; d++) shape[d] = d == *dim ? nin : r->shape[k++];
    meta_set(out, jn_result_type(nin, in), r->ndim + 1, shape);
    return JN_OK;
}

jn_status jn_infer_stack(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    int64_t dim = a->a[0].i;
    return stack_meta(nin, in, &dim, out);
}

jn_status jn_cpu_stack(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    int64_t dim = a->a[0].i;
    jn_meta m;
    jn_status s = stack_meta(nin, in, &dim, &m);
    if (s) return s;
    /* input i goes into out.select(dim, i) */
    const jn_tensor *o = out[0];
    jn_tensor w = *o;
    w.ndim = o->ndim - 1;
    for (int d = 0, k = 0; d < o->ndim; d++) {
        if (d == dim) continue;
        w.shape[k] = o->shape[d];
        w.strides[k++] = o->strides[d];
    }
    for (int i = 0; i < nin; i++) {
        w.offset = o->offset + i * o->strides[dim];
        if ((s = jn_copy_into(&w, in[i]))) return s;
    }
    return JN_OK;
}

/* ============================================================ factories */

static jn_status check_shape(const char *op, const jn_ints *l) {
    char buf[SHAPE_BUF];
    int64_t n = 1;
    for (int k = 0; k < l->n; k++) {
        if (l->v[k] < 0)
            return jn_error(JN_ERR_VALUE, "%s: Trying to create tensor with negative dimension %lld: %s", op,
                            (long long)l->v[k], jn_shape_str(l->n, l->v, buf, sizeof buf));
        if (!mul_ok(n, l->v[k], &n))
            return jn_error(JN_ERR_VALUE, "%s: shape %s has too many elements", op,
                            jn_shape_str(l->n, l->v, buf, sizeof buf));
    }
    return JN_OK;
}

static jn_dtype dtype_or(int64_t d, jn_dtype dflt) { return d < 0 ? dflt : (jn_dtype)d; }

typedef struct {
    char *p;
    size_t es;
    unsigned char val[8];
} fill_ctx;

/* Fixed-size memcpy per element lets gcc turn each case into plain stores. */
static void fill_range(int64_t b, int64_t e, void *c) {
    const fill_ctx *f = c;
    char *p = f->p;
    switch (f->es) {
    case 1: memset(p + b, f->val[0], (size_t)(e - b)); break;
    case 2: { uint16_t v; memcpy(&v, f->val, 2); for (int64_t i = b; i < e; i++) memcpy(p + 2 * i, &v, 2); break; }
    case 4: { uint32_t v; memcpy(&v, f->val, 4); for (int64_t i = b; i < e; i++) memcpy(p + 4 * i, &v, 4); break; }
    default: { uint64_t v; memcpy(&v, f->val, 8); for (int64_t i = b; i < e; i++) memcpy(p + 8 * i, &v, 8); break; }
    }
}

/* Fill a contiguous tensor with one element value (given as its bytes). */
static void fill_contig(jn_tensor *t, const void *val) {
    fill_ctx f;
    f.p = jn_data(t);
    f.es = jn_elsize(t);
    memcpy(f.val, val, f.es);
    jn_parallel_for(jn_numel(t), 1 << 16, fill_range, &f);
}

/* PyTorch refuses fill values that overflow the dtype (integers: after
 * truncation toward zero). */
static jn_status check_value(const char *op, jn_dtype dt, double v) {
    int bad = 0;
    switch (dt) {
    case JN_BOOL: case JN_F64: break;
    case JN_F32: bad = isfinite(v) && fabs(v) > FLT_MAX; break;
    case JN_F16: bad = isfinite(v) && fabs(v) > 65504.0; break;
    case JN_BF16: bad = isfinite(v) && fabs(v) > 3.3895313892515355e38; break;
    case JN_I64: bad = !(v >= -9223372036854775808.0 && v < 9223372036854775808.0); break;
    case JN_I32: bad = !(v > -2147483649.0 && v < 2147483648.0); break;
    case JN_U8: bad = !(v > -256.0 && v < 256.0); break; /* c10's check lets -255..-1 wrap */
    default: break;
    }
    if (bad)
        return jn_error(JN_ERR_VALUE, "%s: value %g cannot be converted to type %s without overflow", op, v,
                        jn_dtype_names[dt]);
    return JN_OK;
}

jn_status jn_infer_full(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    (void)nin; (void)in;
    jn_dtype dt = dtype_or(a->a[2].i, JN_DEFAULT_DTYPE);
    jn_status s;
    if ((s = check_shape("full", &a->a[0].l)) || (s = check_value("full", dt, a->a[1].f))) return s;
    meta_set(out, dt, a->a[0].l.n, a->a[0].l.v);
    return JN_OK;
}

jn_status jn_cpu_full(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    (void)nin; (void)in;
    unsigned char v[8];
    jn_store_f64(v, out[0]->dtype, a->a[1].f);
    fill_contig(out[0], v);
    return JN_OK;
}

jn_status jn_infer_empty(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    (void)nin; (void)in;
    jn_status s = check_shape("empty", &a->a[0].l);
    if (s) return s;
    meta_set(out, dtype_or(a->a[1].i, JN_DEFAULT_DTYPE), a->a[0].l.n, a->a[0].l.v);
    return JN_OK;
}

jn_status jn_cpu_empty(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    (void)nin; (void)in; (void)a; (void)out;
    return JN_OK; /* uninitialized, like torch.empty */
}

static int integral(double v) { return isfinite(v) && floor(v) == v; }

typedef struct {
    jn_dtype dt;
    int64_t size;
    double start, step;    /* float dtypes */
    int64_t istart, istep; /* integer dtypes: PyTorch converts the bounds to int64 first */
} arange_plan;

/* PyTorch's arange: bounds are converted to the accumulate type (int64 for
 * integer dtypes, double otherwise); int64 sizes use integer arithmetic,
 * everything else ceil((end - start) / step) in double. */
static jn_status arange_geom(const jn_attrs *a, arange_plan *p) {
    double start = a->a[0].f, end = a->a[1].f, step = a->a[2].f;
    memset(p, 0, sizeof *p);
    jn_dtype dt = a->a[3].i >= 0 ? (jn_dtype)a->a[3].i
                  : integral(start) && integral(end) && integral(step) ? JN_I64 : JN_DEFAULT_DTYPE;
    p->dt = dt;
    if (dt == JN_BOOL) return jn_error(JN_ERR_TYPE, "arange: not implemented for dtype bool");
    if (!isfinite(start) || !isfinite(end))
        return jn_error(JN_ERR_VALUE, "arange: unsupported range: %g -> %g", start, end);
    double sstart = start, send = end, sstep = step;
    if (!jn_dtype_is_float(dt)) {
        const double lim = 9223372036854775808.0;
        if (!(fabs(step) < lim) || fabs(start) >= lim || fabs(end) >= lim)
            return jn_error(JN_ERR_VALUE, "arange: start, end and step must fit in int64 for dtype %s",
                            jn_dtype_names[dt]);
        p->istart = (int64_t)start;
        p->istep = (int64_t)step;
        sstart = (double)p->istart;
        send = (double)(int64_t)end;
        sstep = (double)p->istep;
    }
    if (!(sstep > 0 || sstep < 0)) return jn_error(JN_ERR_VALUE, "arange: step must be nonzero");
    if (!((sstep > 0 && send >= sstart) || (sstep < 0 && send <= sstart)))
        return jn_error(JN_ERR_VALUE,
                        "arange: upper bound and larger bound inconsistent with step sign (start %g, "
                        "end %g, step %g)",
                        start, end, step);
    if (dt == JN_I64) {
        int64_t ie = (int64_t)end;
        /* |end - start| < 2^64 so unsigned arithmetic is exact */
        uint64_t span = p->istep > 0 ? (uint64_t)ie - (uint64_t)p->istart : (uint64_t)p->istart - (uint64_t)ie;
        uint64_t ustep = p->istep > 0 ? (uint64_t)p->istep : 0 - (uint64_t)p->istep;
        uint64_t n = span == 0 ? 0 : (span - 1) / ustep + 1;
        if (n > (uint64_t)INT64_MAX) return jn_error(JN_ERR_VALUE, "arange: invalid size, possible overflow?");
        p->size = (int64_t)n;
    } else {
        double sz = ceil((end - start) / step);
        if (!(sz >= 0 && sz < 9223372036854775808.0))
            return jn_error(JN_ERR_VALUE, "arange: invalid size, possible overflow?");
        p->size = (int64_t)sz;
    }
    p->start = start;
    p->step = step;
    return JN_OK;
}

jn_status jn_infer_arange(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    (void)nin; (void)in;
    arange_plan p;
    jn_status s = arange_geom(a, &p);
    if (s) return s;
    meta_set(out, p.dt, 1, &p.size);
    return JN_OK;
}

typedef struct {
    const arange_plan *p;
    char *out;
} arange_ctx;

static void arange_range(int64_t b, int64_t e, void *c) {
    const arange_ctx *x = c;
    const arange_plan *p = x->p;
    switch (p->dt) {
    case JN_F32: { float *o = (float *)x->out; for (int64_t i = b; i < e; i++) o[i] = (float)(p->start + p->step * (double)i); break; }
    case JN_F64: { double *o = (double *)x->out; for (int64_t i = b; i < e; i++) o[i] = p->start + p->step * (double)i; break; }
    case JN_F16: case JN_BF16: {
        uint16_t *o = (uint16_t *)x->out;
        float s0 = (float)p->start, st = (float)p->step; /* PyTorch accumulates halves in float */
        for (int64_t i = b; i < e; i++) {
            float v = s0 + st * (float)i;
            o[i] = p->dt == JN_F16 ? jn_f32_to_f16(v) : jn_f32_to_bf16(v);
        }
        break;
    }
    case JN_I64: { int64_t *o = (int64_t *)x->out; for (int64_t i = b; i < e; i++) o[i] = (int64_t)((uint64_t)p->istart + (uint64_t)p->istep * (uint64_t)i); break; }
    default: {
        size_t es = jn_dtype_size[p->dt];
        for (int64_t i = b; i < e; i++)
            jn_store_i64(x->out + (size_t)i * es, p->dt, (int64_t)((uint64_t)p->istart + (uint64_t)p->istep * (uint64_t)i));
        break;
    }
    }
}

jn_status jn_cpu_arange(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    (void)nin; (void)in;
    arange_plan p;
    jn_status s = arange_geom(a, &p);
    if (s) return s;
    arange_ctx c = {&p, jn_data(out[0])};
    jn_parallel_for(p.size, 1 << 15, arange_range, &c);
    return JN_OK;
}

static jn_status linspace_check(const jn_attrs *a, jn_dtype *dt) {
    *dt = dtype_or(a->a[3].i, JN_DEFAULT_DTYPE);
    if (a->a[2].i < 0)
        return jn_error(JN_ERR_VALUE, "linspace: number of steps must be non-negative, got %lld", (long long)a->a[2].i);
    if (*dt == JN_BOOL) return jn_error(JN_ERR_TYPE, "linspace: not implemented for dtype bool");
    jn_status s;
    if ((s = check_value("linspace", *dt, a->a[0].f)) || (s = check_value("linspace", *dt, a->a[1].f))) return s;
    return JN_OK;
}

jn_status jn_infer_linspace(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    (void)nin; (void)in;
    jn_dtype dt;
    jn_status s = linspace_check(a, &dt);
    if (s) return s;
    meta_set(out, dt, 1, &a->a[2].i);
    return JN_OK;
}

typedef struct {
    jn_dtype dt;
    int64_t steps, half;
    double start, end, step;   /* double / integer dtypes */
    float fstart, fend, fstep; /* float32 and halves */
    char *out;
} lin_ctx;

/* PyTorch: the first half counts up from start, the second half down from
 * end, so both ends are exact; arithmetic in the dtype (float for halves,
 * double for integers, which are then truncated). */
static void lin_range(int64_t b, int64_t e, void *c) {
    const lin_ctx *x = c;
    switch (x->dt) {
    case JN_F32: {
        float *o = (float *)x->out;
        for (int64_t i = b; i < e; i++)
            o[i] = i < x->half ? x->fstart + x->fstep * (float)i : x->fend - x->fstep * (float)(x->steps - i - 1);
        break;
    }
    case JN_F64: {
        double *o = (double *)x->out;
        for (int64_t i = b; i < e; i++)
            o[i] = i < x->half ? x->start + x->step * (double)i : x->end - x->step * (double)(x->steps - i - 1);
        break;
    }
    case JN_F16: case JN_BF16: {
        uint16_t *o = (uint16_t *)x->out;
        for (int64_t i = b; i < e; i++) {
            float v = i < x->half ? x->fstart + x->fstep * (float)i : x->fend - x->fstep * (float)(x->steps - i - 1);
            o[i] = x->dt == JN_F16 ? jn_f32_to_f16(v) : jn_f32_to_bf16(v);
        }
        break;
    }
    default: {
        size_t es = jn_dtype_size[x->dt];
        for (int64_t i = b; i < e; i++) {
            double v = i < x->half ? x->start + x->step * (double)i : x->end - x->step * (double)(x->steps - i - 1);
            jn_store_f64(x->out + (size_t)i * es, x->dt, v);
        }
        break;
    }
    }
}

jn_status jn_cpu_linspace(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    (void)nin; (void)in;
    lin_ctx x;
    jn_status s = linspace_check(a, &x.dt);
    if (s) return s;
    x.steps = a->a[2].i;
    x.half = x.steps / 2;
    x.out = jn_data(out[0]);
    if (x.dt == JN_F64 || !jn_dtype_is_float(x.dt)) {
        /* integer dtypes: PyTorch converts start/end to the dtype first */
        unsigned char v[8];
        jn_store_f64(v, x.dt, a->a[0].f);
        x.start = jn_load_f64(v, x.dt);
        jn_store_f64(v, x.dt, a->a[1].f);
        x.end = jn_load_f64(v, x.dt);
        x.step = x.steps > 1 ? (x.end - x.start) / (double)(x.steps - 1) : 0;
    } else {
        x.fstart = (float)a->a[0].f;
        x.fend = (float)a->a[1].f;
        if (x.dt != JN_F32) { /* round the bounds to the half type first */
            unsigned char v[2];
            jn_store_f64(v, x.dt, x.fstart);
            x.fstart = (float)jn_load_f64(v, x.dt);
            jn_store_f64(v, x.dt, x.fend);
            x.fend = (float)jn_load_f64(v, x.dt);
        }
        x.fstep = x.steps > 1 ? (x.fend - x.fstart) / (float)(x.steps - 1) : 0;
    }
    if (x.steps == 1) x.half = 1; /* a single step is start */
    jn_parallel_for(x.steps, 1 << 15, lin_range, &x);
    return JN_OK;
}

static jn_status eye_check(const jn_attrs *a, int64_t *shape) {
    int64_t n = a->a[0].i, m = a->a[1].i;
    if (n < 0) return jn_error(JN_ERR_VALUE, "eye: n must be greater or equal to 0, got %lld", (long long)n);
    if (m == -1) m = n;
    if (m < 0) return jn_error(JN_ERR_VALUE, "eye: m must be greater or equal to 0, got %lld", (long long)m);
    shape[0] = n;
    shape[1] = m;
    int64_t t;
    if (!mul_ok(n, m, &t)) return jn_error(JN_ERR_VALUE, "eye: %lld x %lld has too many elements", (long long)n, (long long)m);
    return JN_OK;
}

jn_status jn_infer_eye(int nin, jn_tensor *const *in, const jn_attrs *a, jn_meta *out) {
    (void)nin; (void)in;
    int64_t shape[2];
    jn_status s = eye_check(a, shape);
    if (s) return s;
    meta_set(out, dtype_or(a->a[2].i, JN_DEFAULT_DTYPE), 2, shape);
    return JN_OK;
}

jn_status jn_cpu_eye(int nin, jn_tensor *const *in, const jn_attrs *a, jn_tensor *const *out) {
    (void)nin; (void)in; (void)a;
    jn_tensor *t = out[0];
    unsigned char zero[8] = {0}, one[8];
    fill_contig(t, zero); /* every dtype's zero is all-bits-zero */
    jn_store_f64(one, t->dtype, 1.0);
    int64_t n = t->shape[0] < t->shape[1] ? t->shape[0] : t->shape[1];
    size_t es = jn_elsize(t);
    char *p = jn_data(t);
    for (int64_t i = 0; i < n; i++) memcpy(p + (size_t)(i * (t->shape[1] + 1)) * es, one, es);
    return JN_OK;
}
