/* index.c -- x[index] and x[index] = value with PyTorch's semantics.
 *
 * An index (one item or a tuple of items) is applied left to right on a
 * cursor dim: ints select (removing the dim), slices slice, None and Python
 * bools insert a dim, an Ellipsis skips the dims no other item consumes.
 * These are all view ops (select, slice, unsqueeze), so basic indexing
 * returns a view sharing storage.  Integer tensors, lists and bool masks
 * are "advanced" indices: they are collected with the dim of the
 * (basic-indexed) view they apply to, bool masks turned into one int64
 * tensor per masked dim, and handed to the `index` op (reads) or
 * `index_put_` (writes) with a mask attribute marking the indexed dims.
 * As in PyTorch (unlike numpy), an int next to advanced indices is applied
 * as a select first, so x[0, :, [0, 1]] has shape [size1, 2].
 */
#include "jn_autograd.h"
#include "jn_backend.h" /* jn_rt_to_device */
#include "jn_py.h"
#include "jn_region.h"
#include "jn_rec.h" /* jn_rec_mark: mask coordinates */

#include <string.h>

#define MAX_ITEMS 64

enum { IT_NONE, IT_ELLIPSIS, IT_INT, IT_SLICE, IT_BOOL, IT_TENSOR };

typedef struct {
    int kind;
    int64_t i;      /* IT_INT value, IT_BOOL value */
    PyObject *obj;  /* IT_SLICE: the slice (borrowed) */
    jn_tensor *t;   /* IT_TENSOR: owned reference */
} item;

typedef struct {
    jn_tensor *r; /* basic-indexed view */
    int nadv;
    jn_tensor *adv[JN_MAX_DIMS];
    int adv_dim[JN_MAX_DIMS];
} plan;

static void plan_free(plan *p) {
    jn_tensor_decref(p->r);
    for (int i = 0; i < p->nadv; i++) jn_tensor_decref(p->adv[i]);
    p->r = NULL;
    p->nadv = 0;
}

static void items_free(item *it, int n) {
    for (int i = 0; i < n; i++)
        if (it[i].t) jn_tensor_decref(it[i].t);
}

Py_ssize_t jn_py_length(PyObject *self) {
    jn_tensor *t = JN_T(self);
    if (t->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a 0-d tensor");
        return -1;
    }
    return (Py_ssize_t)t->shape[0];
}

static int is_np_bool(PyObject *o) {
    const char *n = Py_TYPE(o)->tp_name;
    return !strcmp(n, "numpy.bool_") || !strcmp(n, "numpy.bool");
}

/* A list / numpy array index -> tensor (new ref). */
static jn_tensor *seq_to_index_tensor(PyObject *o) {
    PyObject *w;
    if (PyObject_CheckBuffer(o) && !PyBytes_Check(o) && !PyByteArray_Check(o)) w = jn_py_from_buffer(o, JN_BUF_COPY);
    else w = jn_py_tensor_from_data(NULL, &o, 1);
    if (!w) return NULL;
    jn_tensor *t = JN_T(w);
    jn_tensor_incref(t);
    Py_DECREF(w);
    if (jn_numel(t) == 0 && t->dtype != JN_I64 && t->dtype != JN_BOOL) { /* x[[]] */
        jn_tensor *e = jn_tensor_new(JN_I64, t->ndim, t->shape);
        jn_tensor_decref(t);
        if (!e) jn_py_raise(JN_ERR_NOMEM);
        return e;
    }
    return t;
}

static int classify(PyObject *o, item *it) {
    memset(it, 0, sizeof *it);
    if (o == Py_None) { it->kind = IT_NONE; return 0; }
    if (o == Py_Ellipsis) { it->kind = IT_ELLIPSIS; return 0; }
    if (PyBool_Check(o) || is_np_bool(o)) {
        int b = PyObject_IsTrue(o);
        if (b < 0) return -1;
        it->kind = IT_BOOL;
        it->i = b;
        return 0;
    }
    if (PyLong_Check(o)) {
        int of = 0;
        long long v = PyLong_AsLongLongAndOverflow(o, &of);
        if (of) {
            PyErr_Format(PyExc_IndexError, "index %R is out of the int64 range", o);
            return -1;
        }
        it->kind = IT_INT;
        it->i = v;
        return 0;
    }
    if (PySlice_Check(o)) {
        it->kind = IT_SLICE;
        it->obj = o;
        return 0;
    }
    if (JnTensor_Check(o)) {
        jn_tensor *t = JN_T(o);
        if (t->storage && t->storage->device != JN_CPU && (t->dtype == JN_BOOL || t->dtype == JN_U8)) {
            /* a device mask decides the result's shape: read on the host
             * (a sync, as in PyTorch); integer indices stay on the device */
            if (!jn_py_host_read(JN_SYNC_MASK, t, 1)) return -1;
            jn_tensor *h = jn_rt_to_device(t, JN_CPU, 0);
            if (!h) { /* a failed transfer (CUDA's message): RuntimeError, as torch */
                jn_py_raise(JN_ERR_RUNTIME);
                return -1;
            }
            if (h->ndim == 0) {
                it->kind = IT_BOOL;
                it->i = *(const uint8_t *)jn_data(h) != 0;
                jn_tensor_decref(h);
                return 0;
            }
            it->t = h;
        } else if (t->dtype == JN_BOOL && t->ndim == 0) {
            if (!jn_py_host_read(JN_SYNC_MASK, t, 1)) return -1;
            if (!t->storage->data) goto meta;
            it->kind = IT_BOOL;
            it->i = *(const uint8_t *)jn_data(t) != 0;
            return 0;
        } else {
            jn_tensor_incref(t);
            it->t = t;
        }
    } else if (PyList_Check(o) || PyTuple_Check(o) || (PyObject_CheckBuffer(o) && !PyBytes_Check(o) &&
                                                       !PyByteArray_Check(o) && !PyUnicode_Check(o))) {
        if (!(it->t = seq_to_index_tensor(o))) return -1;
        if (it->t->dtype == JN_BOOL && it->t->ndim == 0) {
            it->kind = IT_BOOL;
            it->i = *(const uint8_t *)jn_data(it->t) != 0;
            jn_tensor_decref(it->t);
            it->t = NULL;
            return 0;
        }
    } else if (!PyFloat_Check(o) && !PyUnicode_Check(o) && PyIndex_Check(o)) { /* numpy ints */
        PyObject *i = PyNumber_Index(o);
        if (!i) return -1;
        int r = classify(i, it);
        Py_DECREF(i);
        return r;
    } else {
        PyErr_Format(PyExc_IndexError, "only integers, slices (`:`), ellipsis (`...`), None and long or "
                     "byte Variables are valid indices (got %.100s)", Py_TYPE(o)->tp_name);
        return -1;
    }
    if (jn_dtype_is_float(it->t->dtype)) {
        PyErr_Format(PyExc_IndexError, "tensors used as indices must be long, int, byte or bool tensors "
                     "(got %s)", jn_dtype_names[it->t->dtype]);
        jn_tensor_decref(it->t);
        it->t = NULL;
        return -1;
    }
    /* a mask: its values decide the shape, read on the host -- a sync in the
     * recording too, else replay's segment ended here unforeseen (every step) */
    if ((it->t->dtype == JN_BOOL || it->t->dtype == JN_U8) && !jn_py_host_read(JN_SYNC_MASK, it->t, 0)) {
        jn_tensor_decref(it->t);
        it->t = NULL;
        return -1;
    }
    if (!it->t->storage->data && !it->t->storage->lazy) { /* a pending index stays pending: an op reads it */
        jn_tensor_decref(it->t);
        it->t = NULL;
        goto meta;
    }
    it->kind = IT_TENSOR;
    return 0;
meta:
    PyErr_SetString(PyExc_RuntimeError, "a meta tensor can't be used as an index");
    return -1;
}

/* Run a view op on *r and replace *r with the result. */
static int view_step(jn_tensor **r, jn_op op, int64_t a0, int64_t a1, int64_t a2, int64_t a3) {
    jn_attrs a;
    memset(&a, 0, sizeof a);
    a.a[0].i = a0;
    a.a[1].i = a1;
    a.a[2].i = a2;
    a.a[3].i = a3;
    jn_tensor *in[1] = {*r}, *out;
    jn_status s = jn_dispatch(op, 1, in, &a, &out);
    if (s) {
        jn_py_raise(s);
        return -1;
    }
    jn_tensor_decref(*r);
    *r = out;
    return 0;
}

int jn_py_nonzero(jn_tensor *t, jn_tensor **out) {
    int nd = t->ndim;
    int64_t numel = jn_numel(t), nnz = 0;
    int64_t es = (int64_t)jn_elsize(t);
    const char *base = jn_data(t);
    int64_t idx[JN_MAX_DIMS];
    for (int pass = 0; pass < 2; pass++) {
        int64_t *dst[JN_MAX_DIMS] = {0};
        if (pass == 1) {
            for (int d = 0; d < nd; d++) {
                int64_t shp[1] = {nnz};
                if (!(out[d] = jn_tensor_new(JN_I64, 1, shp))) {
                    for (int k = 0; k < d; k++) jn_tensor_decref(out[k]);
                    jn_py_raise(JN_ERR_NOMEM);
                    return -1;
                }
                dst[d] = (int64_t *)jn_data(out[d]);
            }
        }
        memset(idx, 0, sizeof idx);
        int64_t off = 0, k = 0;
        for (int64_t n = 0; n < numel; n++) {
            if (jn_load_f64(base + off * es, t->dtype) != 0) {
                if (pass == 1)
                    for (int d = 0; d < nd; d++) dst[d][k] = idx[d];
                k++;
            }
            for (int d = nd - 1; d >= 0; d--) {
                if (++idx[d] < t->shape[d]) {
                    off += t->strides[d];
                    break;
                }
                idx[d] = 0;
                off -= t->strides[d] * (t->shape[d] - 1);
            }
        }
        nnz = k;
    }
    /* the count is the mask's data: the analyzer makes it a symbol even
     * when it never changed while recording */
    for (int d = 0; d < nd; d++) jn_rec_mark(out[d], JN_TR_DATAIDX);
    return 0;
}

/* _nonzero(t) -> (nnz, ndim) int64 tensor, like torch.nonzero */
PyObject *jn_py_nonzero_fn(PyObject *self, PyObject *arg) {
    (void)self;
    if (!JnTensor_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "nonzero(): expected a Tensor");
        return NULL;
    }
    jn_tensor *t = JN_T(arg);
    if (!jn_py_host_read(JN_SYNC_MASK, t, 0)) return NULL;
    if (!t->storage->data) {
        PyErr_SetString(PyExc_RuntimeError, "nonzero(): a meta tensor has no data");
        return NULL;
    }
    jn_tensor *cols[JN_MAX_DIMS];
    if (jn_py_nonzero(t, cols)) return NULL;
    int64_t nnz = t->ndim ? cols[0]->shape[0] : (jn_load_f64(jn_data(t), t->dtype) != 0);
    int64_t shp[2] = {nnz, t->ndim};
    jn_tensor *r = jn_tensor_new(JN_I64, 2, shp);
    if (r) {
        int64_t *p = (int64_t *)jn_data(r);
        for (int64_t i = 0; i < nnz; i++)
            for (int d = 0; d < t->ndim; d++) p[i * t->ndim + d] = ((int64_t *)jn_data(cols[d]))[i];
    }
    for (int d = 0; d < t->ndim; d++) jn_tensor_decref(cols[d]);
    if (!r) return jn_py_raise(JN_ERR_NOMEM);
    jn_rec_mark(r, JN_TR_DATAIDX);
    return jn_py_wrap(r);
}

/* Apply the index to t: basic part into p->r, advanced indices collected. */
static int make_plan(jn_tensor *t, PyObject *index, plan *p) {
    item items[MAX_ITEMS];
    int n = 0;
    memset(p, 0, sizeof *p);
    if (PyTuple_Check(index)) {
        Py_ssize_t m = PyTuple_GET_SIZE(index);
        if (m > MAX_ITEMS) {
            PyErr_Format(PyExc_IndexError, "too many indices for tensor of dimension %d", t->ndim);
            return -1;
        }
        for (Py_ssize_t i = 0; i < m; i++, n++)
            if (classify(PyTuple_GET_ITEM(index, i), &items[n])) {
                items_free(items, n);
                return -1;
            }
    } else {
        if (classify(index, &items[0])) return -1;
        n = 1;
    }
    /* dims consumed by the items */
    int consumed = 0, ellipses = 0;
    for (int i = 0; i < n; i++) {
        switch (items[i].kind) {
        case IT_INT: case IT_SLICE: consumed++; break;
        case IT_ELLIPSIS: ellipses++; break;
        case IT_TENSOR:
            consumed += (items[i].t->dtype == JN_BOOL || items[i].t->dtype == JN_U8) ? items[i].t->ndim : 1;
            break;
        default: break;
        }
    }
    if (ellipses > 1) {
        PyErr_SetString(PyExc_IndexError, "an index can only have a single ellipsis ('...')");
        goto fail;
    }
    if (consumed > t->ndim) {
        PyErr_Format(PyExc_IndexError, "too many indices for tensor of dimension %d", t->ndim);
        goto fail;
    }
    jn_tensor_incref(t);
    p->r = t;
    int d = 0, real = 0; /* cursor in p->r; dim of t (for messages, like torch's real_dim) */
    for (int i = 0; i < n; i++) {
        item *it = &items[i];
        jn_tensor *r = p->r;
        switch (it->kind) {
        case IT_NONE:
            if (view_step(&p->r, JN_OP_unsqueeze, d, 0, 0, 0)) goto fail;
            d++;
            break;
        case IT_ELLIPSIS:
            d += t->ndim - consumed;
            real += t->ndim - consumed;
            break;
        case IT_BOOL:
            if (view_step(&p->r, JN_OP_unsqueeze, d, 0, 0, 0)) goto fail;
            if (!it->i && view_step(&p->r, JN_OP_slice, d, 0, 0, 1)) goto fail;
            d++;
            break;
        case IT_INT: {
            int64_t size = r->shape[d], v = it->i;
            if (v < -size || v >= size) {
                PyErr_Format(PyExc_IndexError, "index %lld is out of bounds for dimension %d with size %lld",
                             (long long)v, real, (long long)size);
                goto fail;
            }
            if (v < 0) v += size;
            if (view_step(&p->r, JN_OP_select, d, v, 0, 0)) goto fail;
            real++;
            break;
        }
        case IT_SLICE: {
            Py_ssize_t start, stop, step;
            if (PySlice_Unpack(it->obj, &start, &stop, &step) < 0) goto fail;
            if (step <= 0) {
                PyErr_SetString(PyExc_ValueError, "step must be greater than zero");
                goto fail;
            }
            Py_ssize_t size = (Py_ssize_t)r->shape[d];
            Py_ssize_t len = PySlice_AdjustIndices(size, &start, &stop, step);
            if (len == 0) stop = start;
            /* a bare `:` is no op; bounds given are one even where they
             * cover the dim (x[:, :int(lens.max())] reaching the padded
             * length): else the ops a step runs depend on the data */
            const PySliceObject *so = (const PySliceObject *)it->obj;
            int bare = so->start == Py_None && so->stop == Py_None;
            if (!(bare && start == 0 && stop == size && step == 1) &&
                view_step(&p->r, JN_OP_slice, d, start, stop, step))
                goto fail;
            d++;
            real++;
            break;
        }
        case IT_TENSOR: {
            jn_tensor *ix = it->t;
            if (ix->dtype == JN_BOOL || ix->dtype == JN_U8) {
                for (int k = 0; k < ix->ndim; k++)
                    if (ix->shape[k] != r->shape[d + k]) {
                        char a[128], b[128];
                        PyErr_Format(PyExc_IndexError,
                                     "The shape of the mask %s at index %d does not match the shape of the "
                                     "indexed tensor %s at index %d",
                                     jn_shape_str(ix->ndim, ix->shape, a, sizeof a), k,
                                     jn_shape_str(r->ndim, r->shape, b, sizeof b), d + k);
                        goto fail;
                    }
                jn_tensor *cols[JN_MAX_DIMS];
                if (jn_py_nonzero(ix, cols)) goto fail;
                for (int k = 0; k < ix->ndim; k++) {
                    p->adv[p->nadv] = cols[k];
                    p->adv_dim[p->nadv++] = d + k;
                }
                d += ix->ndim;
                real += ix->ndim;
            } else {
                jn_tensor *c = jn_py_cast(ix, JN_I64); /* int32 indices: an op, no host read */
                if (!c) goto fail;
                p->adv[p->nadv] = c;
                p->adv_dim[p->nadv++] = d;
                d++;
                real++;
            }
            break;
        }
        }
    }
    /* index tensors live where x does (lists and mask coordinates are made
     * on the cpu; CUDA integer indices index a CUDA x on the device) */
    for (int i = 0; i < p->nadv; i++) {
        int dev = p->r->storage ? p->r->storage->device : JN_CPU;
        if (p->adv[i]->storage && p->adv[i]->storage->device != dev) {
            jn_tensor *m = jn_rt_to_device(p->adv[i], dev, 0);
            if (!m) {
                jn_py_raise(JN_ERR_RUNTIME);
                goto fail;
            }
            if (jn_rec_on && jn_rec_role(p->adv[i]) == JN_TR_DATAIDX) jn_rec_mark(m, JN_TR_DATAIDX);
            jn_tensor_decref(p->adv[i]);
            p->adv[i] = m;
        }
    }
    items_free(items, n);
    return 0;
fail:
    items_free(items, n);
    plan_free(p);
    return -1;
}

static void set_mask(const plan *p, jn_attrs *a) {
    memset(a, 0, sizeof *a);
    a->a[0].l.n = p->r->ndim;
    for (int i = 0; i < p->nadv; i++) a->a[0].l.v[p->adv_dim[i]] = 1;
}

PyObject *jn_py_getitem(PyObject *self, PyObject *index) {
    jn_tensor *t = JN_T(self);
    plan p;
    if (make_plan(t, index, &p)) return NULL;
    if (p.nadv == 0) {
        jn_tensor *r = p.r;
        p.r = NULL;
        if (r == t && !(jn_grad_enabled() && jn_requires_grad(t))) {
            /* x[:] or x[...]: a new view object over the same value (its tensor id too,
             * as detach's: a trace sees x, not a tensor from nowhere) */
            jn_tensor_decref(r);
            if (!(r = jn_detach(t))) return jn_py_raise(JN_ERR_NOMEM);
            /* one that differs from t in requires_grad is a detach to an observed region */
            if (jn_py_replay && jn_requires_grad(t)) jn_rp_region_alias(jn_py_replay, t, r);
        } else if (r == t) { /* one autograd must see: a view op */
            jn_attrs a;
            memset(&a, 0, sizeof a);
            a.a[0].l.n = t->ndim;
            for (int i = 0; i < t->ndim; i++) a.a[0].l.v[i] = t->shape[i];
            jn_tensor *in[1] = {t};
            jn_tensor_decref(r);
            return jn_py_dispatch(JN_OP_view, 1, in, &a);
        }
        return jn_py_wrap(r);
    }
    jn_attrs a;
    set_mask(&p, &a);
    jn_tensor *in[1 + JN_MAX_DIMS];
    in[0] = p.r;
    for (int i = 0; i < p.nadv; i++) in[1 + i] = p.adv[i];
    PyObject *res = jn_py_dispatch(JN_OP_index, 1 + p.nadv, in, &a);
    plan_free(&p);
    return res;
}

/* The value of x[...] = value as a tensor (new ref), numbers in dst's dtype. */
static jn_tensor *value_tensor(PyObject *v, jn_dtype dt) {
    if (JnTensor_Check(v)) {
        jn_tensor_incref(JN_T(v));
        return JN_T(v);
    }
    if (PyBool_Check(v)) return jn_scalar_i64(v == Py_True, dt, 0);
    if (PyLong_Check(v)) {
        int of = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &of);
        if (!of) return jn_scalar_i64(x, dt, 0);
        PyErr_Format(PyExc_OverflowError, "value %R does not fit in int64", v);
        return NULL;
    }
    if (PyFloat_Check(v)) return jn_scalar_f64(PyFloat_AS_DOUBLE(v), dt, 0);
    PyObject *w;
    if (PyObject_CheckBuffer(v) && !PyBytes_Check(v) && !PyByteArray_Check(v)) w = jn_py_from_buffer(v, JN_BUF_COPY);
    else {
        PyObject *args[2] = {v, jn_py_dtype_objs[dt] ? jn_py_dtype_objs[dt] : Py_None};
        w = jn_py_tensor_from_data(NULL, args, 2);
    }
    if (!w) {
        if (PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_ValueError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "can't assign a %.100s to a tensor; expected a Tensor, a number or "
                         "a nested sequence of numbers", Py_TYPE(v)->tp_name);
        }
        return NULL;
    }
    jn_tensor *t = JN_T(w);
    jn_tensor_incref(t);
    Py_DECREF(w);
    return t;
}

static int same_layout(const jn_tensor *a, const jn_tensor *b) {
    return a->storage == b->storage && a->offset == b->offset && a->dtype == b->dtype &&
           jn_same_shape(a->ndim, a->shape, b->ndim, b->shape) &&
           !memcmp(a->strides, b->strides, sizeof(int64_t) * (size_t)a->ndim);
}

/* *v replaced by a fresh tensor of dtype dt (a cast, or a clone when it
 * has that dtype) made through the dispatcher: recorded, captured and
 * differentiated like any op, where a copy made here read pending values
 * on the host (a sync the recording did not see) and cut v's gradient. */
static jn_status dispatched_copy(jn_tensor **v, jn_dtype dt) {
    jn_attrs a;
    memset(&a, 0, sizeof a);
    a.a[0].i = dt;
    jn_tensor *in[1] = {*v}, *out = NULL;
    jn_status s = jn_dispatch((*v)->dtype != dt ? JN_OP_cast : JN_OP_clone, 1, in, &a, &out);
    if (s) return s;
    jn_tensor_decref(*v);
    *v = out;
    return JN_OK;
}

/* Whether x[m] = value is a masked fill: m a bool tensor over x's leading
 * dims on x's device, value a number the fill's float attribute holds
 * exactly (an int up to 2^53; a float only into a floating x). */
static int is_mask_fill(const jn_tensor *x, const jn_tensor *m, PyObject *value) {
    if (m->dtype != JN_BOOL || m->ndim < 1 || m->ndim > x->ndim || !m->storage || !x->storage ||
        m->storage->device != x->storage->device)
        return 0;
    for (int k = 0; k < m->ndim; k++)
        if (m->shape[k] != x->shape[k]) return 0;
    if (PyBool_Check(value)) return 1;
    if (PyLong_Check(value)) {
        int of = 0;
        long long v = PyLong_AsLongLongAndOverflow(value, &of);
        if (v == -1 && PyErr_Occurred()) PyErr_Clear();
        return !of && v >= -(1LL << 53) && v <= (1LL << 53);
    }
    return PyFloat_Check(value) && jn_dtype_is_float(x->dtype);
}

int jn_py_setitem(PyObject *self, PyObject *index, PyObject *value) {
    if (!value) {
        PyErr_SetString(PyExc_TypeError, "'Tensor' object does not support item deletion");
        return -1;
    }
    jn_tensor *t = JN_T(self);
    /* no materialize: the write is a dispatched op (copy_ / index_put_), which
     * replay's capture takes like any other, so x[:, 0::2] = v into a tensor
     * the step made stays in the segment (it ended the segment before) */
    if (!t->storage->data && !t->storage->lazy) {
        PyErr_SetString(PyExc_RuntimeError, "can't write into a meta tensor");
        return -1;
    }
    /* x[mask] = number: masked_fill_ (Tensor._masked_setitem), an op reading
     * the mask, where index_put_ at the mask's nonzero coordinates reads its
     * values on the host -- a sync the recording did not see, so at replay
     * the segment ended there and the step's graph missed every time */
    if (value && JnTensor_Check(index) && is_mask_fill(t, JN_T(index), value)) {
        PyObject *r = PyObject_CallMethod(self, "_masked_setitem", "OO", index, value);
        Py_XDECREF(r);
        return r ? 0 : -1;
    }
    plan p;
    if (make_plan(t, index, &p)) return -1;
    jn_tensor *v = value_tensor(value, p.r->dtype);
    if (!v) {
        if (!PyErr_Occurred()) jn_py_raise(JN_ERR_NOMEM);
        plan_free(&p);
        return -1;
    }
    jn_status s = JN_OK;
    jn_tensor *out = NULL;
    if (p.nadv == 0) {
        if (!same_layout(p.r, v)) {
            if (v->storage == p.r->storage) s = dispatched_copy(&v, v->dtype); /* overlapping source: copied first */
            if (!s) {
                jn_tensor *in[2] = {p.r, v};
                jn_attrs a;
                memset(&a, 0, sizeof a);
                s = jn_dispatch(JN_OP_copy_, 2, in, &a, &out);
            }
        }
    } else {
        if (v->dtype != p.r->dtype || v->storage == p.r->storage) s = dispatched_copy(&v, p.r->dtype);
        if (!s) {
            jn_attrs a;
            set_mask(&p, &a);
            a.a[1].i = 0; /* accumulate */
            jn_tensor *in[2 + JN_MAX_DIMS];
            in[0] = p.r;
            in[1] = v;
            for (int i = 0; i < p.nadv; i++) in[2 + i] = p.adv[i];
            s = jn_dispatch(JN_OP_index_put_, 2 + p.nadv, in, &a, &out);
        }
    }
    if (out) jn_tensor_decref(out);
    if (v) jn_tensor_decref(v);
    plan_free(&p);
    if (s) {
        jn_py_raise(s);
        return -1;
    }
    return 0;
}
