/* cuda_py.c -- janus._C's device functions: what janus.cuda and
 * Tensor.to(device) call (runtime/jn_backend.h), and the host copies that
 * the data-reading methods (item, tolist, bool, float, int, index) make of
 * a CUDA tensor before reading it.
 *
 * Device numbers cross this boundary as ints (0 = cpu, 1 = cuda); the
 * Python side (janus/_dtype.py) maps janus.device objects to them.  No CUDA
 * call happens until Python asks a device question or makes a CUDA tensor.
 */
#include "jn_backend.h"
#include "jn_py.h"

static PyObject *cuda_device_obj; /* janus.device('cuda', 0), made on first use */

PyObject *jn_py_device_of(jn_tensor *t) {
    if (!t->storage || t->storage->device == JN_CPU) {
        if (!jn_py_cpu_device) return PyUnicode_FromString("cpu");
        Py_INCREF(jn_py_cpu_device);
        return jn_py_cpu_device;
    }
    if (!cuda_device_obj) {
        PyObject *mod = PyImport_ImportModule("janus._dtype");
        if (!mod) return NULL;
        /* the process's one device: its number is fixed once a CUDA tensor exists */
        cuda_device_obj = PyObject_CallMethod(mod, "device", "si", "cuda", jn_cuda_current_device());
        Py_DECREF(mod);
        if (!cuda_device_obj) return NULL;
    }
    Py_INCREF(cuda_device_obj);
    return cuda_device_obj;
}

PyObject *jn_py_host_copy(PyObject *self) {
    jn_tensor *h = jn_rt_to_device(JN_T(self), JN_CPU, 0);
    return h ? jn_py_wrap(h) : jn_py_raise(JN_ERR_RUNTIME);
}

static PyObject *py_cuda_built(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    return PyBool_FromLong(jn_cuda_built());
}

/* (count, reason when 0) */
static PyObject *py_cuda_device_count(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    const char *why = "";
    int n;
    Py_BEGIN_ALLOW_THREADS
    n = jn_cuda_device_count(&why);
    Py_END_ALLOW_THREADS
    return Py_BuildValue("(is)", n, why ? why : "");
}

/* _cuda_set_device(ordinal): the process's one device, before its first CUDA tensor */
static PyObject *py_cuda_set_device(PyObject *self, PyObject *arg) {
    (void)self;
    long v = PyLong_AsLong(arg);
    if (v == -1 && PyErr_Occurred()) return NULL;
    jn_status s;
    Py_BEGIN_ALLOW_THREADS
    s = jn_cuda_set_device(v < -1 ? -1 : v > 1 << 20 ? 1 << 20 : (int)v); /* any out-of-range number is refused */
    Py_END_ALLOW_THREADS
    if (s) return jn_py_raise(s);
    Py_RETURN_NONE;
}

static PyObject *py_cuda_current_device(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    return PyLong_FromLong(jn_cuda_current_device());
}

static PyObject *py_cuda_synchronize(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    jn_status s;
    Py_BEGIN_ALLOW_THREADS
    s = jn_cuda_synchronize();
    Py_END_ALLOW_THREADS
    if (s) return jn_py_raise(s);
    Py_RETURN_NONE;
}

static PyObject *py_cuda_init(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    jn_status s = jn_cuda_init();
    if (s) return jn_py_raise(s);
    Py_RETURN_NONE;
}

/* (allocated, max allocated, reserved) in bytes */
static PyObject *py_cuda_memory(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    return Py_BuildValue("(nnn)", (Py_ssize_t)jn_cuda_memory_allocated(), (Py_ssize_t)jn_cuda_max_memory_allocated(),
                         (Py_ssize_t)jn_cuda_memory_reserved());
}

static PyObject *py_cuda_reset_peak(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    jn_cuda_reset_peak_memory_stats();
    Py_RETURN_NONE;
}

static PyObject *py_cuda_empty_cache(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    jn_cuda_empty_cache();
    Py_RETURN_NONE;
}

/* names of the ops the CUDA backend implements (from its static table; no GPU needed) */
static PyObject *py_cuda_supported_ops(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    PyObject *l = PyList_New(0);
    for (int op = 0; l && op < JN_NOPS; op++) {
        if (!jn_cuda_op_supported((jn_op)op)) continue;
        PyObject *n = PyUnicode_FromString(jn_op_info((jn_op)op)->name);
        if (!n || PyList_Append(l, n) < 0) {
            Py_XDECREF(n);
            Py_CLEAR(l);
            break;
        }
        Py_DECREF(n);
    }
    return l;
}

/* _to_device(t, device, copy) -> tensor (not differentiable) */
static PyObject *py_to_device(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o;
    int dev, copy;
    if (!PyArg_ParseTuple(args, "Oip", &o, &dev, &copy)) return NULL;
    if (!JnTensor_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "_to_device: expected a Tensor");
        return NULL;
    }
    if (!jn_py_ready(JN_T(o))) return NULL;
    jn_tensor *r;
    Py_BEGIN_ALLOW_THREADS
    r = jn_rt_to_device(JN_T(o), dev, copy);
    Py_END_ALLOW_THREADS
    if (!r) return jn_py_raise(JN_ERR_RUNTIME);
    if (r == JN_T(o)) {
        jn_tensor_decref(r);
        Py_INCREF(o);
        return o;
    }
    return jn_py_wrap(r);
}

static PyObject *py_set_factory_device(PyObject *self, PyObject *arg) {
    (void)self;
    long d = PyLong_AsLong(arg);
    if (d == -1 && PyErr_Occurred()) return NULL;
    if (d < 0 || d >= JN_NDEVICES) {
        PyErr_Format(PyExc_ValueError, "unknown device number %ld", d);
        return NULL;
    }
    return PyLong_FromLong(jn_rt_set_factory_device((int)d));
}

/* _device_of(t) -> int device number */
static PyObject *py_device_num(PyObject *self, PyObject *o) {
    (void)self;
    if (!JnTensor_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "_device_num: expected a Tensor");
        return NULL;
    }
    return PyLong_FromLong(JN_T(o)->storage ? JN_T(o)->storage->device : JN_CPU);
}

/* _debug_mark_device(t, device) -> the old device number.  TESTS ONLY: labels
 * t's storage as living on `device` without moving a byte, so the host-side
 * device checks (mixed devices, unsupported ops) can be exercised on a
 * machine without a GPU; reading such a tensor's data is undefined. */
static PyObject *py_debug_mark_device(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o;
    int dev;
    if (!PyArg_ParseTuple(args, "Oi", &o, &dev)) return NULL;
    if (!JnTensor_Check(o) || !JN_T(o)->storage || dev < 0 || dev >= JN_NDEVICES) {
        PyErr_SetString(PyExc_ValueError, "_debug_mark_device(tensor, device number)");
        return NULL;
    }
    int old = JN_T(o)->storage->device;
    JN_T(o)->storage->device = dev;
    return PyLong_FromLong(old);
}

/* _select_device(op_name, tensors) -> the device the dispatcher would run
 * the op on, or the error it would raise (host-side tests) */
static PyObject *py_select_device(PyObject *self, PyObject *args) {
    (void)self;
    const char *name;
    PyObject *seq;
    if (!PyArg_ParseTuple(args, "sO", &name, &seq)) return NULL;
    int op = jn_op_lookup(name);
    if (op < 0) {
        PyErr_Format(PyExc_ValueError, "unknown op %s", name);
        return NULL;
    }
    PyObject *fast = PySequence_Fast(seq, "_select_device: expected a sequence of tensors");
    if (!fast) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    jn_tensor *in[JN_MAX_INS];
    if (n > JN_MAX_INS) n = JN_MAX_INS;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PySequence_Fast_GET_ITEM(fast, i);
        if (!JnTensor_Check(t)) {
            Py_DECREF(fast);
            PyErr_SetString(PyExc_TypeError, "_select_device: expected tensors");
            return NULL;
        }
        in[i] = JN_T(t);
    }
    int dev = JN_CPU;
    jn_status s = jn_rt_select_device((jn_op)op, (int)n, in, &dev);
    Py_DECREF(fast);
    if (s) return jn_py_raise(s);
    return PyLong_FromLong(dev);
}

PyMethodDef jn_py_cuda_methods[] = {
    {"_cuda_built", py_cuda_built, METH_NOARGS, "1 when the CUDA backend is compiled in"},
    {"_cuda_device_count", py_cuda_device_count, METH_NOARGS, "(usable CUDA devices, why 0)"},
    {"_cuda_init", py_cuda_init, METH_NOARGS, "initialize the CUDA backend or raise why not"},
    {"_cuda_set_device", py_cuda_set_device, METH_O, "_cuda_set_device(n): the process's one CUDA device"},
    {"_cuda_current_device", py_cuda_current_device, METH_NOARGS, "the process's CUDA device number"},
    {"_cuda_synchronize", py_cuda_synchronize, METH_NOARGS, "wait for queued CUDA work"},
    {"_cuda_memory", py_cuda_memory, METH_NOARGS, "(allocated, max_allocated, reserved) bytes"},
    {"_cuda_reset_peak", py_cuda_reset_peak, METH_NOARGS, NULL},
    {"_cuda_empty_cache", py_cuda_empty_cache, METH_NOARGS, NULL},
    {"_cuda_supported_ops", py_cuda_supported_ops, METH_NOARGS, "ops with a CUDA kernel"},
    {"_to_device", py_to_device, METH_VARARGS, "_to_device(t, device, copy) -> tensor on device"},
    {"_set_factory_device", py_set_factory_device, METH_O, "set the factory device; returns the old one"},
    {"_device_num", py_device_num, METH_O, "device number of a tensor (0 cpu, 1 cuda)"},
    {"_select_device", py_select_device, METH_VARARGS, "the dispatcher's device choice for an op"},
    {"_debug_mark_device", py_debug_mark_device, METH_VARARGS, "tests only: relabel a tensor's device"},
    {NULL, NULL, 0, NULL}};
