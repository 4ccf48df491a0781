/* tensor.c -- the TensorBase type: lifetime, metadata getters and the
 * cheap metadata methods (size, dim, numel, ...), buffer protocol export and
 * zero-copy import from any buffer (numpy arrays).  Operators live in
 * ops_py.c, indexing in index.c, conversions in convert.c.
 */
#include "jn_autograd.h"
#include "jn_py.h"
#include "jn_region.h"
#include "jn_rec.h"

#include <math.h>
#include <string.h>

static void tensor_dealloc(JnTensorObject *self) {
    PyObject_GC_UnTrack(self);
    if (self->weakreflist) PyObject_ClearWeakRefs((PyObject *)self);
    Py_CLEAR(self->dict);
    if (self->t) {
        if (self->t->pyobj == self) self->t->pyobj = NULL;
        jn_tensor_decref(self->t);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int tensor_traverse(JnTensorObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->dict);
    Py_VISIT(Py_TYPE(self));
    return 0;
}

static int tensor_clear(JnTensorObject *self) {
    Py_CLEAR(self->dict);
    return 0;
}

static PyObject *tensor_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    (void)args; (void)kw;
    PyErr_Format(PyExc_TypeError, "create tensors with janus.tensor(), janus.zeros(), ... not %s()",
                 type->tp_name);
    return NULL;
}

/* ------------------------------------------------------------ getters */
static PyObject *get_shape_tuple(JnTensorObject *self, void *c) {
    (void)c;
    PyObject *t = PyTuple_New(self->t->ndim);
    for (int i = 0; t && i < self->t->ndim; i++) PyTuple_SET_ITEM(t, i, PyLong_FromLongLong(self->t->shape[i]));
    return t;
}
static PyObject *get_strides(JnTensorObject *self, void *c) {
    (void)c;
    PyObject *t = PyTuple_New(self->t->ndim);
    for (int i = 0; t && i < self->t->ndim; i++) PyTuple_SET_ITEM(t, i, PyLong_FromLongLong(self->t->strides[i]));
    return t;
}
static PyObject *get_dtype_id(JnTensorObject *self, void *c) { (void)c; return PyLong_FromLong(self->t->dtype); }
static PyObject *get_ndim(JnTensorObject *self, void *c) { (void)c; return PyLong_FromLong(self->t->ndim); }
static PyObject *get_offset(JnTensorObject *self, void *c) { (void)c; return PyLong_FromLongLong(self->t->offset); }
static PyObject *get_version(JnTensorObject *self, void *c) {
    (void)c;
    return PyLong_FromUnsignedLongLong(self->t->storage->version);
}
static PyObject *get_id(JnTensorObject *self, void *c) { (void)c; return PyLong_FromLongLong(self->t->id); }
int jn_py_sync_read(int kind, jn_tensor *t, int observe) {
    if (!JN_PY_SYNC(kind, t) || !jn_py_ready(t)) return 0;
    if (jn_rec_on)
        jn_rec_sync(kind, observe && jn_numel(t) == 1 && t->storage->data ? jn_load_f64(jn_data(t), t->dtype) : NAN, t);
    return 1;
}

int jn_py_sync_export(jn_tensor *t, int observe) { return jn_py_sync_read(JN_SYNC_NUMPY, t, observe); }

int jn_py_host_read(int kind, jn_tensor *t, int observe) {
    int pending = jn_py_replay ? t->storage && (t->storage->lazy & JN_LAZY_PENDING) : jn_rec_written_in_segment(t);
    return pending ? jn_py_sync_read(kind, t, observe) : jn_py_ready(t);
}

jn_tensor *jn_py_cast(jn_tensor *t, jn_dtype dtype) {
    if (t->dtype == dtype) {
        jn_tensor_incref(t);
        return t;
    }
    jn_attrs a;
    memset(&a, 0, sizeof a);
    a.a[0].i = dtype;
    jn_tensor *out = NULL;
    jn_status s = jn_dispatch(JN_OP_cast, 1, &t, &a, &out);
    if (s) {
        jn_py_raise(s);
        return NULL;
    }
    return out;
}

/* An address leaves janus as a buffer export does: a recorded sync (a
 * pending value read here, uncounted, ended every replayed segment early). */
static PyObject *get_data_ptr(JnTensorObject *self, void *c) {
    (void)c;
    if (!jn_py_sync_export(self->t, 0)) return NULL;
    return PyLong_FromVoidPtr(jn_data(self->t));
}
static PyObject *get_storage_ptr(JnTensorObject *self, void *c) {
    (void)c;
    if (!jn_py_sync_export(self->t, 0)) return NULL;
    return PyLong_FromVoidPtr(self->t->storage->data);
}
static PyObject *get_is_contig(JnTensorObject *self, void *c) {
    (void)c;
    return PyBool_FromLong(jn_is_contiguous(self->t));
}
static PyObject *get_wrapped(JnTensorObject *self, void *c) {
    (void)c;
    return PyBool_FromLong(self->t->wrapped_number);
}

static PyObject *get_shape(JnTensorObject *self, void *c) {
    (void)c;
    return jn_py_make_size(self->t->ndim, self->t->shape);
}
static PyObject *get_dtype(JnTensorObject *self, void *c) {
    (void)c;
    PyObject *d = jn_py_dtype_objs[self->t->dtype];
    if (!d) return PyLong_FromLong(self->t->dtype);
    Py_INCREF(d);
    return d;
}
static PyObject *get_device(JnTensorObject *self, void *c) {
    (void)c;
    return jn_py_device_of(self->t);
}
static PyObject *get_is_cuda(JnTensorObject *self, void *c) {
    (void)c;
    return PyBool_FromLong(self->t->storage && self->t->storage->device == JN_CUDA);
}
static PyObject *get_false(JnTensorObject *self, void *c) { (void)self; (void)c; Py_RETURN_FALSE; }
static PyObject *get_itemsize(JnTensorObject *self, void *c) {
    (void)c;
    return PyLong_FromSize_t(jn_elsize(self->t));
}
static PyObject *get_nbytes(JnTensorObject *self, void *c) {
    (void)c;
    return PyLong_FromLongLong(jn_numel(self->t) * (int64_t)jn_elsize(self->t));
}

/* ------------------------------------------------------------ methods */
static int wrap_dim_arg(PyObject *arg, int ndim, int64_t *dim) {
    if (jn_py_as_int(arg, dim, "size", "dim")) return -1;
    int n = ndim > 0 ? ndim : 1;
    if (*dim < -n || *dim >= n) {
        PyErr_Format(PyExc_IndexError,
                     "Dimension out of range (expected to be in range of [%d, %d], but got %lld)", -n,
                     n - 1, (long long)*dim);
        return -1;
    }
    if (*dim < 0) *dim += n;
    return 0;
}

static PyObject *m_size(JnTensorObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    PyObject *dim = NULL;
    if (nargs > 1 || (kw && PyTuple_GET_SIZE(kw) > 1)) goto usage;
    if (nargs == 1) dim = args[0];
    if (kw && PyTuple_GET_SIZE(kw) == 1) {
        if (dim || !PyUnicode_Check(PyTuple_GET_ITEM(kw, 0)) ||
            PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kw, 0), "dim"))
            goto usage;
        dim = args[nargs];
    }
    if (!dim || dim == Py_None) return jn_py_make_size(self->t->ndim, self->t->shape);
    int64_t d;
    if (wrap_dim_arg(dim, self->t->ndim, &d)) return NULL;
    if (self->t->ndim == 0) {
        PyErr_SetString(PyExc_IndexError, "dimension specified as 0 but tensor has no dimensions");
        return NULL;
    }
    return PyLong_FromLongLong(self->t->shape[d]);
usage:
    PyErr_SetString(PyExc_TypeError, "size(dim=None): takes at most one argument 'dim'");
    return NULL;
}

static PyObject *m_stride(JnTensorObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    PyObject *dim = NULL;
    if (nargs > 1 || (kw && PyTuple_GET_SIZE(kw) > 1)) goto usage;
    if (nargs == 1) dim = args[0];
    if (kw && PyTuple_GET_SIZE(kw) == 1) {
        if (dim || !PyUnicode_Check(PyTuple_GET_ITEM(kw, 0)) ||
            PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kw, 0), "dim"))
            goto usage;
        dim = args[nargs];
    }
    if (!dim || dim == Py_None) return get_strides(self, NULL);
    int64_t d;
    if (wrap_dim_arg(dim, self->t->ndim, &d)) return NULL;
    if (self->t->ndim == 0) {
        PyErr_SetString(PyExc_IndexError, "dimension specified as 0 but tensor has no dimensions");
        return NULL;
    }
    return PyLong_FromLongLong(self->t->strides[d]);
usage:
    PyErr_SetString(PyExc_TypeError, "stride(dim=None): takes at most one argument 'dim'");
    return NULL;
}

static PyObject *m_dim(JnTensorObject *self, PyObject *unused) {
    (void)unused;
    return PyLong_FromLong(self->t->ndim);
}
static PyObject *m_numel(JnTensorObject *self, PyObject *unused) {
    (void)unused;
    return PyLong_FromLongLong(jn_numel(self->t));
}
static PyObject *m_is_contiguous(JnTensorObject *self, PyObject *const *args, Py_ssize_t nargs,
                                 PyObject *kw) {
    (void)args; (void)nargs; (void)kw; /* memory_format= is accepted and ignored */
    return PyBool_FromLong(jn_is_contiguous(self->t));
}
static PyObject *m_element_size(JnTensorObject *self, PyObject *unused) {
    (void)unused;
    return PyLong_FromSize_t(jn_elsize(self->t));
}
static PyObject *m_storage_offset(JnTensorObject *self, PyObject *unused) {
    (void)unused;
    return PyLong_FromLongLong(self->t->offset);
}
static PyObject *m_data_ptr(JnTensorObject *self, PyObject *unused) {
    (void)unused;
    if (!jn_py_sync_export(self->t, 0)) return NULL;
    return PyLong_FromVoidPtr(self->t->storage->data ? jn_data(self->t) : NULL);
}
/* A new tensor header over the same value, not requiring grad (copy.copy,
 * serialization): detach's, keeping the tensor id so that a trace sees the value. */
static PyObject *m_alias(JnTensorObject *self, PyObject *unused) {
    (void)unused;
    jn_tensor *t = jn_detach(self->t);
    if (!t) return jn_py_raise(JN_ERR_NOMEM);
    if (jn_py_replay && jn_requires_grad(self->t)) jn_rp_region_alias(jn_py_replay, self->t, t); /* as _detach's */
    return jn_py_wrap(t);
}
/* Does `other` share storage with self? */
static PyObject *m_shares_storage(JnTensorObject *self, PyObject *other) {
    if (!JnTensor_Check(other)) {
        PyErr_SetString(PyExc_TypeError, "expected a Tensor");
        return NULL;
    }
    return PyBool_FromLong(JN_T(other)->storage == self->t->storage);
}
/* Swap the headers of self and other (a tensor just made from self): self
 * becomes it -- its layout, tensor id and autograd history -- and other
 * holds self's old header.  The in-place view ops (unsqueeze_, t_, ...) are
 * the view op, traced and differentiated as any, then this; detach_ and an
 * out= tensor resized take a header the same way. */
static PyObject *m_take_header(JnTensorObject *self, PyObject *other) {
    if (!JnTensor_Check(other)) {
        PyErr_SetString(PyExc_TypeError, "expected a Tensor");
        return NULL;
    }
    JnTensorObject *o = (JnTensorObject *)other;
    jn_tensor *mine = self->t, *theirs = o->t;
    self->t = theirs;
    o->t = mine;
    if (!theirs->pyobj || theirs->pyobj == o) theirs->pyobj = self; /* in-place ops hand back self */
    if (mine->pyobj == self) mine->pyobj = o;
    Py_RETURN_NONE;
}

static PyMethodDef tensor_methods[] = {
    {"size", (PyCFunction)(void (*)(void))m_size, METH_FASTCALL | METH_KEYWORDS,
     "size(dim=None) -> janus.Size or int"},
    {"stride", (PyCFunction)(void (*)(void))m_stride, METH_FASTCALL | METH_KEYWORDS,
     "stride(dim=None) -> tuple or int (in elements)"},
    {"dim", (PyCFunction)m_dim, METH_NOARGS, "number of dimensions"},
    {"ndimension", (PyCFunction)m_dim, METH_NOARGS, "number of dimensions"},
    {"numel", (PyCFunction)m_numel, METH_NOARGS, "number of elements"},
    {"nelement", (PyCFunction)m_numel, METH_NOARGS, "number of elements"},
    {"is_contiguous", (PyCFunction)(void (*)(void))m_is_contiguous, METH_FASTCALL | METH_KEYWORDS,
     "True if the tensor is C-contiguous"},
    {"element_size", (PyCFunction)m_element_size, METH_NOARGS, "bytes per element"},
    {"storage_offset", (PyCFunction)m_storage_offset, METH_NOARGS, "offset into storage, in elements"},
    {"data_ptr", (PyCFunction)m_data_ptr, METH_NOARGS, "address of the first element"},
    {"item", jn_py_item, METH_NOARGS, "the value of a one-element tensor as a Python number"},
    {"tolist", jn_py_tolist, METH_NOARGS, "the tensor as nested Python lists"},
    {"_alias", (PyCFunction)m_alias, METH_NOARGS, "a new tensor sharing storage and layout"},
    {"_shares_storage", (PyCFunction)m_shares_storage, METH_O, NULL},
    {"_take_header", (PyCFunction)m_take_header, METH_O, NULL},
    {NULL, NULL, 0, NULL}};

/* tp_methods takes one array: tensor_methods above plus ops_py.c's */
static PyMethodDef all_methods[sizeof tensor_methods / sizeof tensor_methods[0] + 4];

static void merge_methods(void) {
    size_t n = 0;
    for (PyMethodDef *m = tensor_methods; m->ml_name; m++) all_methods[n++] = *m;
    for (PyMethodDef *m = jn_py_ops_tensor_methods; m->ml_name && n + 1 < sizeof all_methods / sizeof all_methods[0]; m++)
        all_methods[n++] = *m;
    all_methods[n] = (PyMethodDef){NULL, NULL, 0, NULL};
}

static PyGetSetDef getset[] = {
    {"_shape", (getter)get_shape_tuple, NULL, "shape as a tuple", NULL},
    {"_strides", (getter)get_strides, NULL, "strides in elements", NULL},
    {"_dtype_id", (getter)get_dtype_id, NULL, "dtype code", NULL},
    {"ndim", (getter)get_ndim, NULL, "number of dimensions", NULL},
    {"_storage_offset", (getter)get_offset, NULL, NULL, NULL},
    {"_version", (getter)get_version, NULL, "version counter (bumped by in-place ops)", NULL},
    {"_id", (getter)get_id, NULL, "unique tensor id", NULL},
    {"_data_ptr", (getter)get_data_ptr, NULL, NULL, NULL},
    {"_storage_ptr", (getter)get_storage_ptr, NULL, NULL, NULL},
    {"_is_contiguous", (getter)get_is_contig, NULL, NULL, NULL},
    {"_wrapped_number", (getter)get_wrapped, NULL, NULL, NULL},
    {"shape", (getter)get_shape, NULL, "the shape as a janus.Size", NULL},
    {"dtype", (getter)get_dtype, NULL, "the element type (a janus.dtype)", NULL},
    {"device", (getter)get_device, NULL, "the device the data lives on", NULL},
    {"is_cuda", (getter)get_is_cuda, NULL, "the data lives on a CUDA device", NULL},
    {"is_sparse", (getter)get_false, NULL, NULL, NULL},
    {"is_quantized", (getter)get_false, NULL, NULL, NULL},
    {"is_meta", (getter)get_false, NULL, NULL, NULL},
    {"itemsize", (getter)get_itemsize, NULL, "bytes per element", NULL},
    {"nbytes", (getter)get_nbytes, NULL, "bytes of the elements", NULL},
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL}};

/* ------------------------------------------------------- buffer export */
static const char *buffer_format(jn_dtype d) {
    switch (d) {
    case JN_F32: return "f";
    case JN_F64: return "d";
    case JN_F16: return "e";
    case JN_I64: return "q";
    case JN_I32: return "i";
    case JN_U8: return "B";
    case JN_BOOL: return "?";
    default: return NULL;
    }
}

static int tensor_getbuffer(JnTensorObject *self, Py_buffer *view, int flags) {
    if (self->t->storage && self->t->storage->device != JN_CPU) { /* PyTorch's words */
        PyErr_SetString(PyExc_TypeError, "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to "
                                         "copy the tensor to host memory first.");
        view->obj = NULL;
        return -1;
    }
    jn_tensor *t = self->t;
    const char *fmt = buffer_format(t->dtype);
    if (!fmt) {
        PyErr_Format(PyExc_TypeError,
                     "a %s tensor can't be exported as a buffer (no buffer format exists); "
                     "convert it first, e.g. x.float()",
                     jn_dtype_names[t->dtype]);
        view->obj = NULL;
        return -1;
    }
    /* shape and strides live after the Py_ssize_t arrays we allocate */
    Py_ssize_t *arr = PyMem_Malloc(sizeof(Py_ssize_t) * 2 * (size_t)(t->ndim ? t->ndim : 1));
    if (!arr) {
        PyErr_NoMemory();
        view->obj = NULL;
        return -1;
    }
    int64_t es = (int64_t)jn_elsize(t);
    for (int i = 0; i < t->ndim; i++) {
        arr[i] = (Py_ssize_t)t->shape[i];
        arr[t->ndim + i] = (Py_ssize_t)(t->strides[i] * es);
    }
    int contig = jn_is_contiguous(t);
    if ((flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS && !contig) {
        PyMem_Free(arr);
        PyErr_SetString(PyExc_BufferError, "tensor is not contiguous; call .contiguous() first");
        view->obj = NULL;
        return -1;
    }
    if (!(flags & PyBUF_STRIDES) && !contig) {
        PyMem_Free(arr);
        PyErr_SetString(PyExc_BufferError, "tensor is not contiguous; call .contiguous() first");
        view->obj = NULL;
        return -1;
    }
    if (!JN_PY_SYNC(JN_SYNC_NUMPY, t) || !t->storage->data) { /* a sync point, as the recorder sees it */
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "tensor has no data (meta tensor)");
        PyMem_Free(arr);
        view->obj = NULL;
        return -1;
    }
    if (jn_rec_on) /* buffer export: numpy(), __array__, memoryview */
        jn_rec_sync(JN_SYNC_NUMPY, jn_numel(t) == 1 ? jn_load_f64(jn_data(t), t->dtype) : NAN, t);
    view->buf = jn_data(t);
    view->obj = (PyObject *)self;
    Py_INCREF(self);
    view->len = (Py_ssize_t)(jn_numel(t) * es);
    view->readonly = 0;
    view->itemsize = (Py_ssize_t)es;
    view->format = (flags & PyBUF_FORMAT) ? (char *)fmt : NULL;
    view->ndim = t->ndim;
    view->shape = (flags & PyBUF_ND) ? arr : NULL;
    view->strides = (flags & PyBUF_STRIDES) ? arr + t->ndim : NULL;
    view->suboffsets = NULL;
    view->internal = arr;
    return 0;
}

static void tensor_releasebuffer(JnTensorObject *self, Py_buffer *view) {
    (void)self;
    PyMem_Free(view->internal);
}

static PyBufferProcs buffer_procs = {(getbufferproc)tensor_getbuffer, (releasebufferproc)tensor_releasebuffer};

/* ------------------------------------------------------- buffer import */
static int dtype_from_format(const char *f, Py_ssize_t itemsize) {
    if (!f) return JN_U8;
    while (*f == '@' || *f == '=' || *f == '<' || *f == '!' || *f == '>') {
        if ((*f == '>' || *f == '!') && itemsize > 1) return -2; /* big endian */
        f++;
    }
    if (f[0] && f[1]) return -1;
    switch (f[0]) {
    case 'f': return JN_F32;
    case 'd': return JN_F64;
    case 'e': return JN_F16;
    case 'q': case 'l': return itemsize == 8 ? JN_I64 : itemsize == 4 ? JN_I32 : -1;
    case 'i': return itemsize == 4 ? JN_I32 : -1;
    case 'B': return JN_U8;
    case '?': return JN_BOOL;
    default: return -1;
    }
}

typedef struct {
    Py_buffer view;
} buf_holder;

static void release_buffer(void *ctx) {
    buf_holder *h = ctx;
    PyGILState_STATE g = PyGILState_Ensure();
    PyBuffer_Release(&h->view);
    PyGILState_Release(g);
    PyMem_RawFree(h);
}

/* Copy a strided buffer (any strides, negative too) into contiguous memory. */
static void copy_strided(char *dst, const char *src, int ndim, const Py_ssize_t *shape,
                         const Py_ssize_t *strides, Py_ssize_t es) {
    if (ndim == 0) {
        memcpy(dst, src, (size_t)es);
        return;
    }
    Py_ssize_t inner = 1;
    for (int i = 1; i < ndim; i++) inner *= shape[i];
    for (Py_ssize_t i = 0; i < shape[0]; i++)
        copy_strided(dst + i * inner * es, src + i * strides[0], ndim - 1, shape + 1, strides + 1, es);
}

static PyObject *from_buffer(PyObject *obj, int mode);

/* Under recording, a tensor made from a buffer (numpy) is a host input. */
PyObject *jn_py_from_buffer(PyObject *obj, int mode) {
    PyObject *r = from_buffer(obj, mode);
    if (r && jn_rec_on) jn_rec_mark(JN_T(r), JN_TR_HOST);
    return r;
}

static PyObject *from_buffer(PyObject *obj, int mode) {
    int must_share = mode == JN_BUF_STRICT;
    buf_holder *h = PyMem_RawMalloc(sizeof *h);
    if (!h) return PyErr_NoMemory();
    if (PyObject_GetBuffer(obj, &h->view, PyBUF_RECORDS_RO) < 0) {
        PyMem_RawFree(h);
        return NULL;
    }
    Py_buffer *v = &h->view;
    int dt = dtype_from_format(v->format, v->itemsize);
    if (dt < 0 || v->ndim > JN_MAX_DIMS || (v->suboffsets && v->ndim)) {
        if (dt == -2) PyErr_SetString(PyExc_TypeError, "big-endian buffers are not supported; convert with .astype('<f4') or similar first");
        else if (dt < 0) PyErr_Format(PyExc_TypeError, "can't convert a buffer with format '%s' (itemsize %zd) to a tensor; supported: float32, float64, float16, int64, int32, uint8, bool", v->format ? v->format : "B", v->itemsize);
        else if (v->ndim > JN_MAX_DIMS) PyErr_Format(PyExc_ValueError, "buffer has %d dims; tensors have at most %d", v->ndim, JN_MAX_DIMS);
        else PyErr_SetString(PyExc_TypeError, "indirect (suboffset) buffers are not supported");
        PyBuffer_Release(v);
        PyMem_RawFree(h);
        return NULL;
    }
    int64_t shape[JN_MAX_DIMS], strides[JN_MAX_DIMS];
    int64_t es = (int64_t)jn_dtype_size[dt];
    int ok = 1, negative = 0;
    int64_t numel = 1;
    for (int i = 0; i < v->ndim; i++) {
        shape[i] = v->shape[i];
        numel *= shape[i];
        int64_t bs = v->strides ? v->strides[i] : 0;
        if (bs % es) ok = 0;
        if (bs < 0 && shape[i] > 1) negative = 1;
        strides[i] = bs / es;
    }
    if (!v->strides) jn_contiguous_strides(v->ndim, shape, strides);
    /* strides of size-0/1 dims do not matter; keep them non-negative */
    for (int i = 0; i < v->ndim; i++)
        if (shape[i] <= 1 && strides[i] < 0) strides[i] = 0;
    if (negative && must_share) {
        PyErr_SetString(PyExc_ValueError,
                        "At least one stride in the given numpy array is negative, and tensors with "
                        "negative strides are not currently supported. (You can probably work around "
                        "this by making a copy of your array with array.copy().)");
        PyBuffer_Release(v);
        PyMem_RawFree(h);
        return NULL;
    }
    if (mode == JN_BUF_RAW && ok && negative) {
        /* kernel tests feed negative-stride views: point the tensor's base
         * at the lowest address and keep the strides as they are */
        int64_t off = 0;
        for (int i = 0; i < v->ndim; i++)
            if (strides[i] < 0 && shape[i] > 0) off += strides[i] * (shape[i] - 1);
        jn_tensor *t = jn_tensor_from_memory((char *)v->buf + off * es, (size_t)v->len, (jn_dtype)dt, v->ndim,
                                             shape, strides, -off, release_buffer, h);
        if (!t) {
            PyBuffer_Release(v);
            PyMem_RawFree(h);
            return jn_py_raise(JN_ERR_NOMEM);
        }
        return jn_py_wrap(t);
    }
    if (!ok || negative || (numel == 0 && mode != JN_BUF_RAW)) {
        /* unsharable layout: copy into a fresh contiguous tensor */
        if (!ok && must_share) {
            PyErr_SetString(PyExc_ValueError, "buffer strides are not a multiple of the element size; copy it first");
            PyBuffer_Release(v);
            PyMem_RawFree(h);
            return NULL;
        }
        jn_tensor *t = jn_tensor_new((jn_dtype)dt, v->ndim, shape);
        if (!t) {
            PyBuffer_Release(v);
            PyMem_RawFree(h);
            return jn_py_raise(JN_ERR_NOMEM);
        }
        if (numel) copy_strided(jn_data(t), v->buf, v->ndim, v->shape, v->strides, v->itemsize);
        PyBuffer_Release(v);
        PyMem_RawFree(h);
        return jn_py_wrap(t);
    }
    jn_tensor *t = jn_tensor_from_memory(v->buf, (size_t)v->len, (jn_dtype)dt, v->ndim, shape, strides,
                                         0, release_buffer, h);
    if (!t) {
        PyBuffer_Release(v);
        PyMem_RawFree(h);
        return jn_py_raise(JN_ERR_NOMEM);
    }
    return jn_py_wrap(t);
}

/* _from_buffer(obj, mode=0) -> Tensor over obj's memory (kept alive); mode
 * 0 shares any layout (negative strides too), 1 shares or raises like
 * torch.from_numpy, 2 shares when possible and copies otherwise. */
static PyObject *py_from_buffer(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    long mode = JN_BUF_RAW;
    if (nargs < 1 || nargs > 2 || (nargs == 2 && !PyLong_Check(args[1]))) {
        PyErr_SetString(PyExc_TypeError, "_from_buffer(obj, mode=0)");
        return NULL;
    }
    if (nargs == 2) mode = PyLong_AsLong(args[1]);
    if (mode < JN_BUF_RAW || mode > JN_BUF_COPY) {
        PyErr_SetString(PyExc_ValueError, "_from_buffer(): mode must be 0, 1 or 2");
        return NULL;
    }
    return jn_py_from_buffer(args[0], (int)mode);
}

/* ------------------------------------------- checkpoint storages
 * janus.save/janus.load (serialization.py) write and read whole storages,
 * as PyTorch's format does, so views that share one stay shared.  Tensors
 * made here are host inputs under recording, like those from a buffer: a
 * loaded checkpoint is data from outside, not the output of an op. */

/* _storage_info(t) -> (key, nbytes): an int naming t's storage while it
 * lives (tensors sharing it give the same), and its size in bytes */
static PyObject *py_storage_info(PyObject *self, PyObject *arg) {
    (void)self;
    if (!JnTensor_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "_storage_info(tensor)");
        return NULL;
    }
    jn_storage *st = JN_T(arg)->storage;
    return Py_BuildValue("(NK)", PyLong_FromVoidPtr(st), (unsigned long long)st->nbytes);
}

/* _storage_bytes(t) -> bytes: all of t's (CPU) storage, made current (a
 * sync point, like a buffer export) */
static PyObject *py_storage_bytes(PyObject *self, PyObject *arg) {
    (void)self;
    if (!JnTensor_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "_storage_bytes(tensor)");
        return NULL;
    }
    jn_tensor *t = JN_T(arg);
    if (t->storage->device != JN_CPU) {
        PyErr_SetString(PyExc_ValueError, "_storage_bytes: the storage is not on the CPU (copy it with .cpu() first)");
        return NULL;
    }
    /* the data leaves janus: a sync point, as a buffer export is */
    if (!jn_py_sync_export(t, 1)) return NULL;
    if (!t->storage->nbytes) return PyBytes_FromStringAndSize(NULL, 0);
    return PyBytes_FromStringAndSize((const char *)t->storage->data, (Py_ssize_t)t->storage->nbytes);
}

static int dtype_arg(PyObject *o, int *dt) {
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v < 0 || v >= JN_NDTYPES) {
        PyErr_Format(PyExc_ValueError, "dtype id %ld out of range", v);
        return -1;
    }
    *dt = (int)v;
    return 0;
}

/* _from_storage_bytes(buf, dtype_id, share=False) -> a 1-D tensor of buf's
 * bytes: a copy, or (share, a writable buffer) over buf's memory, kept alive */
static PyObject *py_from_storage_bytes(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    int dt, share = 0;
    if (nargs < 2 || nargs > 3) {
        PyErr_SetString(PyExc_TypeError, "_from_storage_bytes(buffer, dtype_id, share=False)");
        return NULL;
    }
    if (dtype_arg(args[1], &dt)) return NULL;
    if (nargs == 3 && (share = PyObject_IsTrue(args[2])) < 0) return NULL;
    buf_holder *h = PyMem_RawMalloc(sizeof *h);
    if (!h) return PyErr_NoMemory();
    if (PyObject_GetBuffer(args[0], &h->view, share ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0) {
        PyMem_RawFree(h);
        return NULL;
    }
    Py_buffer *v = &h->view;
    int64_t es = (int64_t)jn_dtype_size[dt];
    jn_tensor *t = NULL;
    if (v->len % es) {
        PyErr_Format(PyExc_ValueError, "storage of %zd bytes is not a whole number of %s elements", v->len,
                     jn_dtype_names[dt]);
    } else {
        int64_t n = v->len / es;
        if (share) {
            t = jn_tensor_from_memory(v->buf, (size_t)v->len, (jn_dtype)dt, 1, &n, NULL, 0, release_buffer, h);
        } else if ((t = jn_tensor_new((jn_dtype)dt, 1, &n)) && v->len) {
            memcpy(t->storage->data, v->buf, (size_t)v->len);
        }
        if (!t) jn_py_raise(JN_ERR_NOMEM);
    }
    if (!t || !share) {
        PyBuffer_Release(v);
        PyMem_RawFree(h);
    }
    if (!t) return NULL;
    if (jn_rec_on) jn_rec_mark(t, JN_TR_HOST);
    return jn_py_wrap(t);
}

static int int_list(PyObject *o, int64_t *out, int *n, const char *what) {
    PyObject *f = PySequence_Fast(o, what);
    if (!f) return -1;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(f);
    if (k > JN_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "%s has %zd dims; tensors have at most %d", what, k, JN_MAX_DIMS);
        Py_DECREF(f);
        return -1;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        out[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(f, i));
        if (out[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(f);
            return -1;
        }
    }
    *n = (int)k;
    Py_DECREF(f);
    return 0;
}

/* _storage_view(base, size, stride, offset) -> a tensor on base's storage
 * with that layout (checked to lie inside it) */
static PyObject *py_storage_view(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 4 || !JnTensor_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "_storage_view(base, size, stride, offset)");
        return NULL;
    }
    jn_tensor *b = JN_T(args[0]);
    int64_t size[JN_MAX_DIMS], stride[JN_MAX_DIMS], off;
    int nd, ns;
    if (int_list(args[1], size, &nd, "size") || int_list(args[2], stride, &ns, "stride")) return NULL;
    off = PyLong_AsLongLong(args[3]);
    if (off == -1 && PyErr_Occurred()) return NULL;
    if (nd != ns) {
        PyErr_Format(PyExc_ValueError, "size has %d dims but stride has %d", nd, ns);
        return NULL;
    }
    int64_t numel = 1, last = off;
    for (int i = 0; i < nd; i++) {
        if (size[i] < 0 || stride[i] < 0) {
            PyErr_SetString(PyExc_ValueError, "negative size or stride");
            return NULL;
        }
        numel *= size[i];
        if (size[i]) last += (size[i] - 1) * stride[i];
    }
    int64_t have = (int64_t)(b->storage->nbytes / jn_dtype_size[b->dtype]);
    if (off < 0 || (numel && last >= have)) {
        PyErr_Format(PyExc_ValueError, "a %d-d view at offset %lld reaches element %lld of a storage of "
                     "%lld elements", nd, (long long)off, (long long)last, (long long)have);
        return NULL;
    }
    jn_tensor *t = jn_tensor_alias(b);
    if (!t) return jn_py_raise(JN_ERR_NOMEM);
    t->ndim = nd;
    memcpy(t->shape, size, sizeof(int64_t) * (size_t)nd);
    memcpy(t->strides, stride, sizeof(int64_t) * (size_t)nd);
    t->offset = off;
    if (jn_rec_on) jn_rec_mark(t, JN_TR_HOST);
    return jn_py_wrap(t);
}

/* _write_storage_bytes(t, buf): buf's bytes over all of t's storage (the
 * legacy format stores data after the pickle that made the tensors) */
static PyObject *py_write_storage_bytes(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2 || !JnTensor_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "_write_storage_bytes(tensor, buffer)");
        return NULL;
    }
    jn_tensor *t = JN_T(args[0]);
    if (t->storage->device != JN_CPU || !jn_py_ready(t)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "_write_storage_bytes: not a CPU storage");
        return NULL;
    }
    Py_buffer v;
    if (PyObject_GetBuffer(args[1], &v, PyBUF_SIMPLE) < 0) return NULL;
    if ((size_t)v.len != t->storage->nbytes) {
        PyErr_Format(PyExc_ValueError, "%zd bytes for a storage of %zu", v.len, t->storage->nbytes);
        PyBuffer_Release(&v);
        return NULL;
    }
    if (v.len) memcpy(t->storage->data, v.buf, (size_t)v.len);
    t->storage->version++;
    PyBuffer_Release(&v);
    Py_RETURN_NONE;
}

static Py_hash_t tensor_hash(PyObject *self) { return _Py_HashPointer(self); }

int jn_py_tensor_type_ready(void) {
    merge_methods();
    return PyType_Ready(&JnTensorBase_Type);
}

static PyMappingMethods mapping_methods = {
    (lenfunc)jn_py_length, (binaryfunc)jn_py_getitem, (objobjargproc)jn_py_setitem};

PyMethodDef jn_py_tensor_module_methods[] = {
    {"_from_buffer", (PyCFunction)(void (*)(void))py_from_buffer, METH_FASTCALL,
     "_from_buffer(obj, mode=0): tensor over a buffer's memory (0 share, 1 share or raise, 2 share or copy)"},
    {"_storage_info", py_storage_info, METH_O, "_storage_info(t): (storage key, storage bytes)"},
    {"_storage_bytes", py_storage_bytes, METH_O, "_storage_bytes(t): all of t's storage as bytes"},
    {"_from_storage_bytes", (PyCFunction)(void (*)(void))py_from_storage_bytes, METH_FASTCALL,
     "_from_storage_bytes(buffer, dtype_id, share=False): a 1-D tensor of the bytes (a copy, or sharing them)"},
    {"_storage_view", (PyCFunction)(void (*)(void))py_storage_view, METH_FASTCALL,
     "_storage_view(base, size, stride, offset): a tensor on base's storage"},
    {"_write_storage_bytes", (PyCFunction)(void (*)(void))py_write_storage_bytes, METH_FASTCALL,
     "_write_storage_bytes(t, buffer): copy bytes over t's whole storage"},
    {NULL, NULL, 0, NULL}};

PyTypeObject JnTensorBase_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "janus._C.TensorBase",
    .tp_basicsize = sizeof(JnTensorObject),
    .tp_dealloc = (destructor)tensor_dealloc,
    .tp_as_number = &jn_py_number_methods,
    .tp_as_mapping = &mapping_methods,
    .tp_hash = tensor_hash,
    .tp_as_buffer = &buffer_procs,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "C base of janus.Tensor",
    .tp_traverse = (traverseproc)tensor_traverse,
    .tp_clear = (inquiry)tensor_clear,
    .tp_richcompare = jn_py_richcompare,
    .tp_weaklistoffset = offsetof(JnTensorObject, weakreflist),
    .tp_dictoffset = offsetof(JnTensorObject, dict),
    .tp_methods = all_methods,
    .tp_getset = getset,
    .tp_new = tensor_new,
};
