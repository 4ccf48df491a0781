/* jn_py.h -- shared declarations of the janus._C extension.
 *
 * The Python Tensor class is a subclass (defined in janus/_tensor.py) of the
 * C type TensorBase below, the way torch.Tensor sits on torch._C.TensorBase:
 * hot paths (operators, indexing, op calls through OpFn) live in C, the long
 * tail of methods in Python.  Every tensor the extension returns is an
 * instance of the class registered with _C._set_tensor_class.
 *
 * Files: module.c (module, op-table introspection, registration of the
 * Python-side dtype/Size/device objects), tensor.c (the TensorBase type),
 * ops_py.c (OpFn, operators), index.c (x[...] and x[...] = v),
 * convert.c (nested lists <-> tensors, item/tolist, scalar conversions).
 */
#ifndef JN_PY_H
#define JN_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "jn_runtime.h"

typedef struct {
    PyObject_HEAD
    jn_tensor *t;
    PyObject *weakreflist;
    PyObject *dict;
} JnTensorObject;

extern PyTypeObject JnTensorBase_Type;
extern PyTypeObject JnOpFn_Type;
extern PyTypeObject *jn_py_tensor_class; /* the Python subclass (janus.Tensor) */

/* Registered by janus/__init__.py through _C._register: the janus.dtype
 * objects (indexed by jn_dtype), janus.Size, the cpu device object. */
extern PyObject *jn_py_dtype_objs[JN_NDTYPES];
extern PyTypeObject *jn_py_size_class;
extern PyObject *jn_py_cpu_device;

/* the exact-class test first: PyType_IsSubtype walks the MRO */
#define JnTensor_Check(o) \
    (Py_TYPE(o) == jn_py_tensor_class || PyObject_TypeCheck((o), &JnTensorBase_Type))
#define JN_T(o) (((JnTensorObject *)(o))->t)

/* div's rounding_mode attribute codes (ops.def: div rounding_mode:i). */
enum { JN_ROUND_NONE = 0, JN_ROUND_TRUNC = 1, JN_ROUND_FLOOR = 2 };

/* Wrap a new reference to a C tensor (steals `t`). NULL on error. */
PyObject *jn_py_wrap(jn_tensor *t);
/* replay_py.c: make t's data current before reading or writing it outside
 * the dispatcher (a pending tensor of `janus replay` runs what is pending);
 * 0 with a Python exception set on failure. */
int jn_py_ready(jn_tensor *t);
/* Values read on the host outside the dispatcher: a sync point of kind
 * (JN_SYNC_*) under replay and in the recording, then t is current.
 * observe: the recording stores a one-element value as observed (else
 * NaN).  0 with an exception set on failure.  jn_py_sync_export: the data
 * leaves janus (a buffer export, an address, bytes), JN_SYNC_NUMPY. */
int jn_py_sync_read(int kind, jn_tensor *t, int observe);
/* The same for a value the script may have made long before (a mask, a
 * size, a number given as a tensor): a sync only where an op of the
 * current segment wrote t -- replay holds it pending (the recording asks
 * jn_rec_written_in_segment) -- else a plain read of current data. */
int jn_py_host_read(int kind, jn_tensor *t, int observe);
/* t cast to dtype by the cast op (recorded, captured and differentiated like
 * any op; a copy made beside the dispatcher read pending values on the host
 * and cut the gradient): a new reference, t itself when it has that dtype;
 * NULL with an exception set. */
jn_tensor *jn_py_cast(jn_tensor *t, jn_dtype dtype);
int jn_py_sync_export(jn_tensor *t, int observe);
/* A sync point (JN_SYNC_* kind) during `janus replay`: ends the segment and
 * makes t current; 0 with an exception set on failure. */
extern struct jn_replay *jn_py_replay; /* this process's replay, NULL */
int jn_py_replay_sync(int kind, jn_tensor *t);
#define JN_PY_SYNC(kind, t) (!jn_py_replay || jn_py_replay_sync((kind), (t)))

/* cuda_py.c: t's janus.device; a CPU copy of a device tensor (new Tensor). */
PyObject *jn_py_device_of(jn_tensor *t);
PyObject *jn_py_host_copy(PyObject *self);
/* Data-reading methods of a device tensor run on a host copy of it:
 * `return` expr (written over h_, the copy) for a CUDA self. */
#define JN_PY_VIA_HOST(self, T, expr, fail)                                   \
    do {                                                                      \
        if (JN_T(self)->storage && JN_T(self)->storage->device != 0) {        \
            PyObject *h_ = jn_py_host_copy(self);                             \
            if (!h_) return fail;                                             \
            T r_ = (expr);                                                    \
            Py_DECREF(h_);                                                    \
            return r_;                                                        \
        }                                                                     \
    } while (0)

/* Raise the Python exception matching a jn_status with jn_errmsg(). Returns NULL. */
PyObject *jn_py_raise(jn_status s);
/* Convert a Python object (tensor, number, bool, numpy scalar, buffer) to a
 * tensor reference (new reference).  Numbers become wrapped 0-d tensors.
 * NULL + TypeError otherwise. */
jn_tensor *jn_py_to_tensor(PyObject *o, const char *what);
/* Like jn_py_to_tensor but returns NULL with NO exception set when `o` is
 * not convertible (operators then return NotImplemented). */
jn_tensor *jn_py_to_tensor_or_null(PyObject *o);
/* Parse attribute values (a tuple in schema order) for op into `a`. */
int jn_py_parse_attrs(jn_op op, PyObject *attrs, jn_attrs *a);
/* Run an op from Python: wraps outputs (a tuple when nout > 1). */
PyObject *jn_py_dispatch(jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a);
/* A janus.dtype object (or float/int/bool, or None -> -1) to a dtype code.
 * Returns 0 on success, -1 with TypeError. */
int jn_py_parse_dtype(PyObject *o, int *code, const char *fn, const char *arg);
/* A janus.Size (tuple subclass) of n ints. */
PyObject *jn_py_make_size(int n, const int64_t *v);
/* Parse an int or a sequence of ints into v (at most JN_MAX_DIMS). */
int jn_py_parse_ints(PyObject *o, jn_ints *out, const char *fn, const char *arg);
/* An int-like Python object (int, bool excluded unless allow_bool, numpy
 * integer, 1-element integer tensor) to int64. */
int jn_py_as_int(PyObject *o, int64_t *v, const char *fn, const char *arg);

/* tensor.c: a tensor over a buffer's memory (numpy arrays).  Modes:
 * RAW shares any layout (negative strides kept: the kernel tests use it),
 * STRICT shares or raises ValueError like torch.from_numpy, COPY shares
 * when the strides are non-negative and copies otherwise. */
enum { JN_BUF_RAW = 0, JN_BUF_STRICT = 1, JN_BUF_COPY = 2 };
PyObject *jn_py_from_buffer(PyObject *obj, int mode);
/* PyType_Ready of TensorBase (after assembling its method table). */
int jn_py_tensor_type_ready(void);

/* convert.c */
PyObject *jn_py_scalar(const char *p, jn_dtype d); /* one element -> Python number */
PyObject *jn_py_tensor_from_data(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *jn_py_item(PyObject *self, PyObject *unused);
PyObject *jn_py_tolist(PyObject *self, PyObject *unused);
int jn_py_nb_bool(PyObject *self);
PyObject *jn_py_nb_float(PyObject *self);
PyObject *jn_py_nb_int(PyObject *self);
PyObject *jn_py_nb_index(PyObject *self);

/* index.c */
PyObject *jn_py_getitem(PyObject *self, PyObject *index);
int jn_py_setitem(PyObject *self, PyObject *index, PyObject *value);
Py_ssize_t jn_py_length(PyObject *self);
/* Indices of the nonzero elements of t: k int64 tensors (one per dim) in
 * out[0..t->ndim).  Returns 0 or -1 with an exception. */
int jn_py_nonzero(jn_tensor *t, jn_tensor **out);
PyObject *jn_py_nonzero_fn(PyObject *self, PyObject *arg);
PyObject *jn_py_host_tolist(PyObject *self, PyObject *arg);

/* ops_py.c */
extern PyNumberMethods jn_py_number_methods;
extern PyMethodDef jn_py_ops_tensor_methods[]; /* reshape */
PyObject *jn_py_richcompare(PyObject *a, PyObject *b, int op);
int jn_py_ops_init(PyObject *module);

#endif
