/* jn_py.h -- shared declarations of the janus._C extension.
 *
 * The Python Tensor class is a subclass (defined in janus/_tensor.py) of the
 * C type TensorBase below, the way torch.Tensor sits on torch._C.TensorBase:
 * hot paths (operators, dispatch) live in C, the long tail of methods in
 * Python.  Every tensor the extension returns is an instance of the class
 * registered with _C._set_tensor_class.
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
extern PyTypeObject *jn_py_tensor_class; /* the Python subclass (janus.Tensor) */

#define JnTensor_Check(o) PyObject_TypeCheck((o), &JnTensorBase_Type)

/* Wrap a new reference to a C tensor (steals `t`). NULL on error. */
PyObject *jn_py_wrap(jn_tensor *t);
/* Raise the Python exception matching a jn_status with jn_errmsg(). Returns NULL. */
PyObject *jn_py_raise(jn_status s);
/* Convert a Python object (tensor, number, bool) to a tensor reference
 * (new reference).  Numbers become wrapped 0-d tensors. NULL + exception otherwise. */
jn_tensor *jn_py_to_tensor(PyObject *o, const char *what);
/* Parse attribute values (a tuple in schema order) for op into `a`. */
int jn_py_parse_attrs(jn_op op, PyObject *attrs, jn_attrs *a);
/* Run an op from Python: wraps outputs (a tuple when nout > 1). */
PyObject *jn_py_dispatch(jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a);

#endif
