/* autocast_py.c -- the janus._C bindings of runtime/autocast.c.
 *
 * janus/amp/autocast_mode.py builds PyTorch's autocast context manager on
 * these: per-thread state get/set (device types as numbers, 0 cpu 1 cuda;
 * dtypes as janus dtype codes), region nesting and the cast cache, and the
 * composite-function hook that nn.functional's losses and norms go through
 * (_autocast_composite_args casts their tensor arguments by autocast.c's
 * composite table).  _autocast_plan / _autocast_policy expose the planner
 * for tests, which can then check the cuda column on a machine without a
 * GPU (with _debug_mark_device).
 */
#include "jn_py.h"

#include "jn_autocast.h"
#include "jn_backend.h"

static int parse_device(PyObject *o, int *dev) {
    long d = PyLong_AsLong(o);
    if (d == -1 && PyErr_Occurred()) return -1;
    if (d < 0 || d >= JN_NDEVICES) {
        PyErr_Format(PyExc_ValueError, "autocast: device number %ld (0 cpu, 1 cuda)", d);
        return -1;
    }
    *dev = (int)d;
    return 0;
}

static PyObject *state_tuple(jn_autocast_state st) {
    return Py_BuildValue("(OiO)", st.enabled ? Py_True : Py_False, (int)st.dtype, st.cache_enabled ? Py_True : Py_False);
}

/* _autocast_get(device) -> (enabled, dtype code, cache_enabled) */
static PyObject *py_get(PyObject *self, PyObject *arg) {
    (void)self;
    int dev;
    if (parse_device(arg, &dev) < 0) return NULL;
    return state_tuple(jn_autocast_get(dev));
}

/* _autocast_set(device, enabled, dtype code, cache_enabled) -> the previous state */
static PyObject *py_set(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *devo;
    int enabled, dtype, cache;
    if (!PyArg_ParseTuple(args, "Opip", &devo, &enabled, &dtype, &cache)) return NULL;
    int dev;
    if (parse_device(devo, &dev) < 0) return NULL;
    jn_autocast_state prev = jn_autocast_get(dev), st = {enabled, (jn_dtype)dtype, cache};
    if (dtype < 0 || dtype >= JN_NDTYPES) st.dtype = JN_F32; /* refused below with the message */
    jn_status s = jn_autocast_set(dev, st);
    if (s) return jn_py_raise(s);
    return state_tuple(prev);
}

static PyObject *py_inc(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    return PyLong_FromLong(jn_autocast_increment_nesting());
}

static PyObject *py_dec(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    return PyLong_FromLong(jn_autocast_decrement_nesting());
}

static PyObject *py_clear(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    jn_autocast_clear_cache();
    Py_RETURN_NONE;
}

static PyObject *py_cache_size(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    return PyLong_FromLong(jn_autocast_cache_size());
}

static PyObject *py_active(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    return PyBool_FromLong(jn_autocast_active());
}

static PyObject *py_suspend(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    return PyLong_FromLong(jn_autocast_suspend());
}

static PyObject *py_resume(PyObject *self, PyObject *arg) {
    (void)self;
    long t = PyLong_AsLong(arg);
    if (t == -1 && PyErr_Occurred()) return NULL;
    jn_autocast_resume((int)t);
    Py_RETURN_NONE;
}

static int lookup_op(const char *name) {
    int op = jn_op_lookup(name);
    if (op < 0) PyErr_Format(PyExc_ValueError, "unknown op '%s'", name);
    return op;
}

/* _autocast_policy(device, op name) -> JN_AC_* */
static PyObject *py_policy(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *devo;
    const char *name;
    int dev;
    if (!PyArg_ParseTuple(args, "Os", &devo, &name) || parse_device(devo, &dev) < 0) return NULL;
    int op = lookup_op(name);
    return op < 0 ? NULL : PyLong_FromLong(jn_autocast_policy(dev, (jn_op)op));
}

/* _autocast_composite_index(name) -> row of the composite table */
static PyObject *py_composite_index(PyObject *self, PyObject *arg) {
    (void)self;
    const char *name = PyUnicode_AsUTF8(arg);
    if (!name) return NULL;
    int k = jn_autocast_composite_lookup(name);
    if (k < 0) return PyErr_Format(PyExc_ValueError, "autocast: no composite policy named '%s'", name);
    return PyLong_FromLong(k);
}

/* Tensors among args (a tuple) and kwargs values (a dict or None), at most
 * JN_MAX_INS: objs[i] is where each came from. */
static int collect(PyObject *args, PyObject *kwargs, PyObject **objs, jn_tensor **in) {
    int n = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args) && n < JN_MAX_INS; i++) {
        PyObject *o = PyTuple_GET_ITEM(args, i);
        if (JnTensor_Check(o)) objs[n] = o, in[n++] = JN_T(o);
    }
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (kwargs && PyDict_Next(kwargs, &pos, &k, &v) && n < JN_MAX_INS)
        if (JnTensor_Check(v)) objs[n] = v, in[n++] = JN_T(v);
    return n;
}

/* _autocast_plan(op name, tensors) -> [dtype code or -1 per tensor]: what
 * the dispatcher would cast them to now, in this thread's state */
static PyObject *py_plan(PyObject *self, PyObject *args) {
    (void)self;
    const char *name;
    PyObject *seq;
    if (!PyArg_ParseTuple(args, "sO!", &name, &PyTuple_Type, &seq)) return NULL;
    int op = lookup_op(name);
    if (op < 0) return NULL;
    PyObject *objs[JN_MAX_INS];
    jn_tensor *in[JN_MAX_INS];
    int n = collect(seq, NULL, objs, in), target[JN_MAX_INS];
    int dev = jn_autocast_device_of(n, in);
    int pol = jn_autocast_active() && jn_autocast_get(dev).enabled ? jn_autocast_policy(dev, (jn_op)op) : 0;
    jn_autocast_plan(pol, dev, n, in, target);
    PyObject *r = PyList_New(n);
    for (int i = 0; r && i < n; i++) PyList_SET_ITEM(r, i, PyLong_FromLong(target[i]));
    return r;
}

/* _autocast_composite_args(index, args, kwargs) -> (args, kwargs) with the
 * tensors cast by the composite's policy, or None when nothing is cast */
static PyObject *py_composite_args(PyObject *self, PyObject *args) {
    (void)self;
    int idx;
    PyObject *a, *kw;
    if (!PyArg_ParseTuple(args, "iO!O!", &idx, &PyTuple_Type, &a, &PyDict_Type, &kw)) return NULL;
    PyObject *objs[JN_MAX_INS];
    jn_tensor *in[JN_MAX_INS], *use[JN_MAX_INS];
    int n = collect(a, kw, objs, in), target[JN_MAX_INS];
    int dev = jn_autocast_device_of(n, in);
    if (!jn_autocast_active() || !jn_autocast_get(dev).enabled ||
        !jn_autocast_plan(jn_autocast_composite_policy(idx, dev), dev, n, in, target))
        Py_RETURN_NONE;
    jn_status s = jn_autocast_cast_inputs(n, in, target, use);
    if (s) return jn_py_raise(s);
    PyObject *na = PyTuple_New(PyTuple_GET_SIZE(a)), *nk = PyDict_Copy(kw), *res = NULL;
    PyObject *wrapped[JN_MAX_INS] = {0};
    int ok = na && nk;
    for (int i = 0; i < n; i++) {
        if (target[i] < 0) continue;
        wrapped[i] = jn_py_wrap(use[i]); /* steals use[i] */
        use[i] = NULL;
        if (!wrapped[i]) ok = 0;
    }
    /* put each cast where its tensor was (a tensor passed twice: both) */
    for (Py_ssize_t i = 0; ok && i < PyTuple_GET_SIZE(a); i++) {
        PyObject *o = PyTuple_GET_ITEM(a, i), *r = o;
        for (int k = 0; k < n; k++)
            if (objs[k] == o && wrapped[k]) r = wrapped[k];
        Py_INCREF(r);
        PyTuple_SET_ITEM(na, i, r);
    }
    Py_ssize_t pos = 0;
    PyObject *key, *v;
    while (ok && PyDict_Next(kw, &pos, &key, &v))
        for (int k = 0; k < n; k++)
            if (objs[k] == v && wrapped[k] && PyDict_SetItem(nk, key, wrapped[k]) < 0) ok = 0;
    if (ok) res = PyTuple_Pack(2, na, nk);
    for (int i = 0; i < n; i++) {
        Py_XDECREF(wrapped[i]);
        if (use[i] && target[i] >= 0) jn_tensor_decref(use[i]);
    }
    Py_XDECREF(na);
    Py_XDECREF(nk);
    return res;
}

PyMethodDef jn_py_autocast_methods[] = {
    {"_autocast_get", py_get, METH_O, "(enabled, dtype code, cache_enabled) of this thread for a device number"},
    {"_autocast_set", py_set, METH_VARARGS, "_autocast_set(device, enabled, dtype, cache_enabled) -> previous state"},
    {"_autocast_increment_nesting", py_inc, METH_NOARGS, NULL},
    {"_autocast_decrement_nesting", py_dec, METH_NOARGS, NULL},
    {"_autocast_clear_cache", py_clear, METH_NOARGS, NULL},
    {"_autocast_cache_size", py_cache_size, METH_NOARGS, "cached casts of this thread"},
    {"_autocast_active", py_active, METH_NOARGS, "an autocast region is enabled on this thread"},
    {"_autocast_suspend", py_suspend, METH_NOARGS, "suspend autocast on this thread; returns a token"},
    {"_autocast_resume", py_resume, METH_O, NULL},
    {"_autocast_policy", py_policy, METH_VARARGS, "_autocast_policy(device, op) -> policy code"},
    {"_autocast_composite_index", py_composite_index, METH_O, NULL},
    {"_autocast_plan", py_plan, METH_VARARGS, "_autocast_plan(op, tensors) -> target dtype codes"},
    {"_autocast_composite_args", py_composite_args, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};
