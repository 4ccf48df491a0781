/* convert.c -- Python values <-> tensors.
 *
 * _tensor_from_data turns nested sequences of numbers into a contiguous
 * tensor the way torch.tensor does: the shape comes from the nesting (the
 * first element of each level fixes that level's length, every other
 * element must agree: a ragged list is a ValueError naming the position),
 * the dtype from the leaves (all bools -> bool, ints/bools -> int64, any
 * float -> float32) unless one is given.  Leaves are written straight into
 * the destination when the dtype is known; otherwise into a tagged scratch
 * buffer that is converted once the dtype is settled.
 *
 * Also here: item(), tolist(), and __bool__/__float__/__int__/__index__.
 */
#include "jn_py.h"
#include "jn_rec.h"

#include <math.h>
#include <string.h>

enum { LEAF_BOOL = 0, LEAF_INT = 1, LEAF_FLOAT = 2 };

typedef struct {
    int ndim;
    int64_t shape[JN_MAX_DIMS];
    int64_t pos[JN_MAX_DIMS]; /* index of the element being read, per level */
    int cat;                  /* highest leaf category seen */
    int dtype;                /* destination dtype, -1 while inferring */
    char *dst;                /* destination (dtype known) */
    int64_t *ival;            /* scratch (dtype inferred) */
    double *fval;
    unsigned char *tag;
    int64_t n;                /* leaves written */
} fill_state;

static int is_np_bool(PyObject *o) {
    const char *n = Py_TYPE(o)->tp_name;
    return !strcmp(n, "numpy.bool_") || !strcmp(n, "numpy.bool");
}

/* Is o a sequence level (not a leaf)? Tensors with dims count as sequences. */
static int is_seq(PyObject *o) {
    if (PyList_Check(o) || PyTuple_Check(o)) return 1;
    if (JnTensor_Check(o)) return JN_T(o)->ndim > 0;
    if (PyUnicode_Check(o) || PyBytes_Check(o) || PyByteArray_Check(o)) return 0;
    return PySequence_Check(o);
}

static const char *pos_str(const fill_state *s, int depth, char *buf, size_t n) {
    return jn_shape_str(depth, s->pos, buf, n);
}

/* A sequence level as a list or tuple (new reference). Tensors go through
 * tolist(); other sequences (numpy arrays, ranges) through PySequence_Fast. */
static PyObject *as_fast(PyObject *o) {
    if (PyList_Check(o) || PyTuple_Check(o)) {
        Py_INCREF(o);
        return o;
    }
    if (JnTensor_Check(o)) return jn_py_tolist(o, NULL);
    return PySequence_Fast(o, "expected a sequence");
}

static int put_leaf(fill_state *s, PyObject *o, int depth) {
    int cat;
    int64_t iv = 0;
    double dv = 0;
    if (PyBool_Check(o)) {
        cat = LEAF_BOOL;
        iv = o == Py_True;
    } else if (PyLong_Check(o)) {
        int of = 0;
        long long v = PyLong_AsLongLongAndOverflow(o, &of);
        if (of) {
            char b[160];
            PyErr_Format(PyExc_RuntimeError, "Overflow when unpacking long: the value at index %s does "
                         "not fit in int64", pos_str(s, depth, b, sizeof b));
            return -1;
        }
        cat = LEAF_INT;
        iv = v;
    } else if (PyFloat_Check(o)) {
        cat = LEAF_FLOAT;
        dv = PyFloat_AS_DOUBLE(o);
    } else if (JnTensor_Check(o)) { /* 0-d tensor: its value read on the host, a sync as item() */
        jn_tensor *t = JN_T(o);
        if (!jn_py_host_read(JN_SYNC_ITEM, t, 1)) return -1;
        if (!t->storage->data) {
            PyErr_SetString(PyExc_RuntimeError, "a meta tensor has no values to read");
            return -1;
        }
        if (jn_dtype_is_float(t->dtype)) {
            cat = LEAF_FLOAT;
            dv = jn_load_f64(jn_data(t), t->dtype);
        } else {
            cat = t->dtype == JN_BOOL ? LEAF_BOOL : LEAF_INT;
            iv = jn_load_i64(jn_data(t), t->dtype);
        }
    } else if (is_np_bool(o)) {
        int b = PyObject_IsTrue(o);
        if (b < 0) return -1;
        cat = LEAF_BOOL;
        iv = b;
    } else if (!PyComplex_Check(o) && !PyUnicode_Check(o) && PyIndex_Check(o)) {
        PyObject *i = PyNumber_Index(o);
        if (!i) return -1;
        int of = 0;
        long long v = PyLong_AsLongLongAndOverflow(i, &of);
        Py_DECREF(i);
        if (of) {
            char b[160];
            PyErr_Format(PyExc_RuntimeError, "Overflow when unpacking long: the value at index %s does "
                         "not fit in int64", pos_str(s, depth, b, sizeof b));
            return -1;
        }
        cat = LEAF_INT;
        iv = v;
    } else if (!PyComplex_Check(o) && !PyUnicode_Check(o) && Py_TYPE(o)->tp_as_number &&
               Py_TYPE(o)->tp_as_number->nb_float) {
        dv = PyFloat_AsDouble(o);
        if (dv == -1.0 && PyErr_Occurred()) return -1;
        cat = LEAF_FLOAT;
    } else {
        char b[160];
        if (PyComplex_Check(o))
            PyErr_Format(PyExc_TypeError, "tensor(): complex numbers are not supported (at index %s)",
                         pos_str(s, depth, b, sizeof b));
        else
            PyErr_Format(PyExc_TypeError, "tensor(): invalid data type '%.100s' at index %s",
                         Py_TYPE(o)->tp_name, pos_str(s, depth, b, sizeof b));
        return -1;
    }
    if (cat > s->cat) s->cat = cat;
    if (s->dtype >= 0) {
        char *p = s->dst + s->n * (int64_t)jn_dtype_size[s->dtype];
        if (cat == LEAF_FLOAT) jn_store_f64(p, (jn_dtype)s->dtype, dv);
        else jn_store_i64(p, (jn_dtype)s->dtype, iv);
    } else {
        s->tag[s->n] = (unsigned char)cat;
        if (cat == LEAF_FLOAT) s->fval[s->n] = dv;
        else s->ival[s->n] = iv;
    }
    s->n++;
    return 0;
}

static int fill(fill_state *s, PyObject *o, int depth) {
    if (depth == s->ndim) {
        if (is_seq(o)) {
            char b[160];
            PyErr_Format(PyExc_ValueError,
                         "expected a number at index %s but got a sequence (ragged nested sequence: "
                         "the first element at that depth is a number)", pos_str(s, depth, b, sizeof b));
            return -1;
        }
        return put_leaf(s, o, depth);
    }
    if (!is_seq(o)) {
        char b[160];
        PyErr_Format(PyExc_ValueError, "expected sequence of length %lld at dim %d (got %.100s) at index %s",
                     (long long)s->shape[depth], depth, Py_TYPE(o)->tp_name, pos_str(s, depth, b, sizeof b));
        return -1;
    }
    PyObject *seq = as_fast(o);
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n != s->shape[depth]) {
        char b[160];
        PyErr_Format(PyExc_ValueError, "expected sequence of length %lld at dim %d (got %zd) at index %s",
                     (long long)s->shape[depth], depth, n, pos_str(s, depth, b, sizeof b));
        Py_DECREF(seq);
        return -1;
    }
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        s->pos[depth] = i;
        if (fill(s, items[i], depth + 1)) {
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
}

static PyObject *tensor_from_data(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* _tensor_from_data(data, dtype_code=-1); under recording the result is a host input */
PyObject *jn_py_tensor_from_data(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *r = tensor_from_data(self, args, nargs);
    if (r && jn_rec_on) jn_rec_mark(JN_T(r), JN_TR_HOST);
    return r;
}

static PyObject *tensor_from_data(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "_tensor_from_data(data, dtype=None)");
        return NULL;
    }
    fill_state s;
    memset(&s, 0, sizeof s);
    s.dtype = -1;
    if (nargs == 2 && jn_py_parse_dtype(args[1], &s.dtype, "tensor", "dtype")) return NULL;
    PyObject *data = args[0];
    /* shape: follow the first element down */
    PyObject *cur = data;
    Py_INCREF(cur);
    while (is_seq(cur)) {
        if (s.ndim == JN_MAX_DIMS) {
            Py_DECREF(cur);
            PyErr_Format(PyExc_ValueError, "tensor(): data is nested more than %d levels deep; tensors "
                         "have at most %d dims", JN_MAX_DIMS, JN_MAX_DIMS);
            return NULL;
        }
        if (JnTensor_Check(cur)) { /* a tensor fixes every remaining level at once */
            jn_tensor *t = JN_T(cur);
            if (s.ndim + t->ndim > JN_MAX_DIMS) {
                Py_DECREF(cur);
                PyErr_Format(PyExc_ValueError, "tensor(): data has more than %d dims", JN_MAX_DIMS);
                return NULL;
            }
            for (int i = 0; i < t->ndim; i++) s.shape[s.ndim++] = t->shape[i];
            break;
        }
        Py_ssize_t n = PySequence_Size(cur);
        if (n < 0) {
            Py_DECREF(cur);
            return NULL;
        }
        s.shape[s.ndim++] = n;
        if (n == 0) break;
        PyObject *first = PySequence_GetItem(cur, 0);
        Py_DECREF(cur);
        if (!first) return NULL;
        cur = first;
    }
    Py_DECREF(cur);
    int64_t numel = jn_shape_numel(s.ndim, s.shape);
    jn_tensor *t = NULL;
    if (s.dtype >= 0) {
        t = jn_tensor_new((jn_dtype)s.dtype, s.ndim, s.shape);
        if (!t) return jn_py_raise(JN_ERR_NOMEM);
        s.dst = jn_data(t);
        if (fill(&s, data, 0)) {
            jn_tensor_decref(t);
            return NULL;
        }
        return jn_py_wrap(t);
    }
    size_t cnt = (size_t)(numel ? numel : 1);
    s.ival = PyMem_Malloc(cnt * sizeof(int64_t));
    s.fval = PyMem_Malloc(cnt * sizeof(double));
    s.tag = PyMem_Malloc(cnt);
    if (!s.ival || !s.fval || !s.tag) {
        PyErr_NoMemory();
        goto done;
    }
    if (fill(&s, data, 0)) goto done;
    jn_dtype d = numel == 0 ? JN_DEFAULT_DTYPE
                 : s.cat == LEAF_FLOAT ? JN_DEFAULT_DTYPE
                 : s.cat == LEAF_INT  ? JN_I64
                                      : JN_BOOL;
    t = jn_tensor_new(d, s.ndim, s.shape);
    if (!t) {
        jn_py_raise(JN_ERR_NOMEM);
        goto done;
    }
    char *p = jn_data(t);
    size_t es = jn_dtype_size[d];
    if (d == JN_F32) {
        float *f = (float *)p;
        for (int64_t i = 0; i < numel; i++)
            f[i] = s.tag[i] == LEAF_FLOAT ? (float)s.fval[i] : (float)s.ival[i];
    } else if (d == JN_I64) {
        memcpy(p, s.ival, (size_t)numel * sizeof(int64_t));
    } else {
        for (int64_t i = 0; i < numel; i++) jn_store_i64(p + (size_t)i * es, d, s.ival[i]);
    }
done:
    PyMem_Free(s.ival);
    PyMem_Free(s.fval);
    PyMem_Free(s.tag);
    return t ? jn_py_wrap(t) : NULL;
}

/* ------------------------------------------------------------ scalars */
PyObject *jn_py_scalar(const char *p, jn_dtype d) {
    if (d == JN_BOOL) return PyBool_FromLong(*(const uint8_t *)p != 0);
    if (jn_dtype_is_float(d)) return PyFloat_FromDouble(jn_load_f64(p, d));
    return PyLong_FromLongLong(jn_load_i64(p, d));
}

static int has_data(jn_tensor *t) {
    if (!jn_py_ready(t)) return 0;
    if (t->storage->data) return 1;
    PyErr_SetString(PyExc_RuntimeError, "a meta tensor has no data to read");
    return 0;
}

PyObject *jn_py_item(PyObject *self, PyObject *unused) {
    (void)unused;
    JN_PY_VIA_HOST(self, PyObject *, jn_py_item(h_, unused), NULL);
    jn_tensor *t = JN_T(self);
    int64_t n = jn_numel(t);
    if (n != 1) {
        PyErr_Format(PyExc_RuntimeError, "a Tensor with %lld elements cannot be converted to Scalar",
                     (long long)n);
        return NULL;
    }
    if (!JN_PY_SYNC(JN_SYNC_ITEM, t) || !has_data(t)) return NULL;
    if (jn_rec_on) jn_rec_sync(JN_SYNC_ITEM, jn_load_f64(jn_data(t), t->dtype), t);
    return jn_py_scalar(jn_data(t), t->dtype);
}

static PyObject *tolist_rec(jn_tensor *t, const char *p, int d) {
    if (d == t->ndim) return jn_py_scalar(p, t->dtype);
    PyObject *l = PyList_New(t->shape[d]);
    if (!l) return NULL;
    int64_t step = t->strides[d] * (int64_t)jn_elsize(t);
    for (int64_t i = 0; i < t->shape[d]; i++) {
        PyObject *x = tolist_rec(t, p + i * step, d + 1);
        if (!x) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i, x);
    }
    return l;
}

PyObject *jn_py_tolist(PyObject *self, PyObject *unused) {
    (void)unused;
    JN_PY_VIA_HOST(self, PyObject *, jn_py_tolist(h_, unused), NULL);
    jn_tensor *t = JN_T(self);
    if (!JN_PY_SYNC(JN_SYNC_TOLIST, t) || !has_data(t)) return NULL;
    if (jn_rec_on) jn_rec_sync(JN_SYNC_TOLIST, jn_numel(t) == 1 ? jn_load_f64(jn_data(t), t->dtype) : NAN, t);
    return tolist_rec(t, jn_data(t), 0);
}

/* _host_tolist(t): t's values as lists for janus's own code (a packed
 * sequence's batch sizes), a sync only where an op of the current segment
 * wrote t (jn_py_host_read), like a mask's values: a host tensor made from
 * Python data splits no segment.  Tensor.tolist() is always a sync. */
PyObject *jn_py_host_tolist(PyObject *self, PyObject *arg) {
    (void)self;
    if (!JnTensor_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "_host_tolist(tensor)");
        return NULL;
    }
    jn_tensor *t = JN_T(arg);
    if (t->storage && t->storage->device != JN_CPU) return jn_py_tolist(arg, NULL); /* a copy to the host */
    if (!jn_py_host_read(JN_SYNC_TOLIST, t, 0) || !has_data(t)) return NULL;
    return tolist_rec(t, jn_data(t), 0);
}

int jn_py_nb_bool(PyObject *self) {
    JN_PY_VIA_HOST(self, int, jn_py_nb_bool(h_), -1);
    jn_tensor *t = JN_T(self);
    int64_t n = jn_numel(t);
    if (n != 1) {
        PyErr_SetString(PyExc_RuntimeError, n == 0 ? "Boolean value of Tensor with no values is ambiguous"
                                                   : "Boolean value of Tensor with more than one value is ambiguous");
        return -1;
    }
    if (!JN_PY_SYNC(JN_SYNC_BOOL, t) || !has_data(t)) return -1;
    int b = jn_load_f64(jn_data(t), t->dtype) != 0;
    if (jn_rec_on) jn_rec_sync_bool(b, t); /* a comparison used as a Python bool shows as COMPARE */
    return b;
}

static int one_element(jn_tensor *t) {
    if (jn_numel(t) != 1) {
        PyErr_SetString(PyExc_ValueError, "only one element tensors can be converted to Python scalars");
        return 0;
    }
    if (!JN_PY_SYNC(JN_SYNC_ITEM, t) || !has_data(t)) return 0;
    if (jn_rec_on) jn_rec_sync(JN_SYNC_ITEM, jn_load_f64(jn_data(t), t->dtype), t); /* float(t), int(t) */
    return 1;
}

PyObject *jn_py_nb_float(PyObject *self) {
    JN_PY_VIA_HOST(self, PyObject *, jn_py_nb_float(h_), NULL);
    jn_tensor *t = JN_T(self);
    if (!one_element(t)) return NULL;
    return PyFloat_FromDouble(jn_load_f64(jn_data(t), t->dtype));
}

PyObject *jn_py_nb_int(PyObject *self) {
    JN_PY_VIA_HOST(self, PyObject *, jn_py_nb_int(h_), NULL);
    jn_tensor *t = JN_T(self);
    if (!one_element(t)) return NULL;
    if (jn_dtype_is_float(t->dtype)) {
        double v = jn_load_f64(jn_data(t), t->dtype);
        if (isnan(v)) {
            PyErr_SetString(PyExc_ValueError, "cannot convert float NaN to integer");
            return NULL;
        }
        if (isinf(v)) {
            PyErr_SetString(PyExc_OverflowError, "cannot convert float infinity to integer");
            return NULL;
        }
        return PyLong_FromDouble(v);
    }
    return PyLong_FromLongLong(jn_load_i64(jn_data(t), t->dtype));
}

PyObject *jn_py_nb_index(PyObject *self) {
    JN_PY_VIA_HOST(self, PyObject *, jn_py_nb_index(h_), NULL);
    jn_tensor *t = JN_T(self);
    if (jn_numel(t) != 1 || jn_dtype_is_float(t->dtype)) {
        PyErr_SetString(PyExc_TypeError, "only integer tensors of a single element can be converted to an index");
        return NULL;
    }
    if (!JN_PY_SYNC(JN_SYNC_ITEM, t) || !has_data(t)) return NULL;
    if (jn_rec_on) jn_rec_sync(JN_SYNC_ITEM, jn_load_f64(jn_data(t), t->dtype), t); /* t used as an index */
    return PyLong_FromLongLong(jn_load_i64(jn_data(t), t->dtype));
}
