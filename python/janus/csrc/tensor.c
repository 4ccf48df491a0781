/* tensor.c -- the TensorBase type: lifetime, metadata getters, buffer
 * protocol export and zero-copy import from any buffer (numpy arrays).
 */
#include "jn_py.h"

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
static PyObject *get_data_ptr(JnTensorObject *self, void *c) {
    (void)c;
    return PyLong_FromVoidPtr(jn_data(self->t));
}
static PyObject *get_storage_ptr(JnTensorObject *self, void *c) {
    (void)c;
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
    if (!t->storage->data) {
        PyErr_SetString(PyExc_RuntimeError, "tensor has no data (meta tensor)");
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

/* _from_buffer(obj) -> Tensor sharing obj's memory (kept alive). */
static PyObject *py_from_buffer(PyObject *self, PyObject *obj) {
    (void)self;
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
    int ok = 1;
    for (int i = 0; i < v->ndim; i++) {
        shape[i] = v->shape[i];
        int64_t bs = v->strides ? v->strides[i] : 0;
        if (bs % es) ok = 0;
        strides[i] = bs / es;
    }
    if (!v->strides) jn_contiguous_strides(v->ndim, shape, strides);
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "buffer strides are not a multiple of the element size; copy it first");
        PyBuffer_Release(v);
        PyMem_RawFree(h);
        return NULL;
    }
    /* negative strides: point the tensor's base at the lowest address */
    char *base = v->buf;
    int64_t off = 0;
    for (int i = 0; i < v->ndim; i++)
        if (strides[i] < 0 && shape[i] > 0) off += strides[i] * (shape[i] - 1);
    base += off * es;
    jn_tensor *t = jn_tensor_from_memory(base, (size_t)v->len, (jn_dtype)dt, v->ndim, shape, strides,
                                         -off, release_buffer, h);
    if (!t) {
        PyBuffer_Release(v);
        PyMem_RawFree(h);
        return jn_py_raise(JN_ERR_NOMEM);
    }
    return jn_py_wrap(t);
}

PyMethodDef jn_py_tensor_module_methods[] = {
    {"_from_buffer", py_from_buffer, METH_O, "tensor sharing the memory of a buffer (numpy array)"},
    {NULL, NULL, 0, NULL}};

PyTypeObject JnTensorBase_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "janus._C.TensorBase",
    .tp_basicsize = sizeof(JnTensorObject),
    .tp_dealloc = (destructor)tensor_dealloc,
    .tp_as_buffer = &buffer_procs,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "C base of janus.Tensor",
    .tp_traverse = (traverseproc)tensor_traverse,
    .tp_clear = (inquiry)tensor_clear,
    .tp_weaklistoffset = offsetof(JnTensorObject, weakreflist),
    .tp_dictoffset = offsetof(JnTensorObject, dict),
    .tp_getset = getset,
    .tp_new = tensor_new,
};
