/* autograd_py.c -- Python bindings of the C autograd tape (jn_autograd.h):
 * requires_grad, .grad, grad_fn, backward(), autograd.grad(), grad mode.
 * janus/_autograd.py turns these into Tensor properties and methods.
 */
#include "jn_autograd.h"
#include "jn_py.h"
#include "jn_region.h"

static jn_tensor *T_of(PyObject *o, const char *what) {
    if (!JnTensor_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be a Tensor, not %.100s", what, Py_TYPE(o)->tp_name);
        return NULL;
    }
    return ((JnTensorObject *)o)->t;
}

static PyObject *wrap_borrowed(jn_tensor *t) {
    if (!t) Py_RETURN_NONE;
    if (t->pyobj) {
        Py_INCREF((PyObject *)t->pyobj);
        return (PyObject *)t->pyobj;
    }
    jn_tensor_incref(t);
    PyObject *o = jn_py_wrap(t);
    if (o) t->pyobj = o; /* the same Python object while it lives (x.grad is x.grad) */
    return o;
}

static PyObject *py_requires_grad(PyObject *self, PyObject *o) {
    (void)self;
    jn_tensor *t = T_of(o, "tensor");
    return t ? PyBool_FromLong(jn_requires_grad(t)) : NULL;
}

static PyObject *py_set_requires_grad(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o;
    int on;
    if (!PyArg_ParseTuple(args, "Op", &o, &on)) return NULL;
    jn_tensor *t = T_of(o, "tensor");
    if (!t) return NULL;
    jn_status s = jn_set_requires_grad(t, on);
    if (s) return jn_py_raise(s);
    Py_RETURN_NONE;
}

static PyObject *py_is_leaf(PyObject *self, PyObject *o) {
    (void)self;
    jn_tensor *t = T_of(o, "tensor");
    return t ? PyBool_FromLong(jn_is_leaf(t)) : NULL;
}

static PyObject *py_grad(PyObject *self, PyObject *o) {
    (void)self;
    jn_tensor *t = T_of(o, "tensor");
    return t ? wrap_borrowed(jn_grad(t)) : NULL;
}

static PyObject *py_set_grad(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o, *g;
    if (!PyArg_ParseTuple(args, "OO", &o, &g)) return NULL;
    jn_tensor *t = T_of(o, "tensor");
    if (!t) return NULL;
    jn_tensor *gt = NULL;
    if (g != Py_None) {
        if (!(gt = T_of(g, "grad"))) return NULL;
        jn_tensor_incref(gt);
    }
    jn_status s = jn_set_grad(t, gt);
    if (s) return jn_py_raise(s);
    Py_RETURN_NONE;
}

static PyObject *py_grad_fn_name(PyObject *self, PyObject *o) {
    (void)self;
    jn_tensor *t = T_of(o, "tensor");
    if (!t) return NULL;
    const char *n = jn_grad_fn_name(t);
    if (!n) Py_RETURN_NONE;
    return PyUnicode_FromString(n);
}

/* For tests: the members of t's grad_fn when it is a replaced region's group
 * node, else 0; and the autograd nodes made so far (a group counts one). */
static PyObject *py_ag_group_size(PyObject *self, PyObject *o) {
    (void)self;
    jn_tensor *t = T_of(o, "tensor");
    return t ? PyLong_FromLong(jn_ag_group_size(t)) : NULL;
}

static PyObject *py_ag_nodes_made(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    return PyLong_FromUnsignedLongLong(jn_ag_nodes_made());
}

static PyObject *py_detach(PyObject *self, PyObject *o) {
    (void)self;
    jn_tensor *t = T_of(o, "tensor");
    jn_tensor *d = t ? jn_detach(t) : NULL;
    if (d && jn_py_replay) jn_rp_region_alias(jn_py_replay, t, d); /* an observed region call reads it */
    return t ? jn_py_wrap(d) : NULL;
}

/* ---- gradient hooks (jn_ag_add_hook): a Python callable as the context.
 * The engine runs backward with the GIL released; a hook takes it.  An
 * exception a hook raises is kept (per thread: the engine runs on the
 * calling thread) and re-raised by the backward()/grad() call itself. */
static _Thread_local PyObject *hook_exc_t, *hook_exc_v, *hook_exc_tb;

static void hook_free(void *ctx) {
    PyGILState_STATE g = PyGILState_Ensure();
    Py_DECREF((PyObject *)ctx);
    PyGILState_Release(g);
}

static jn_status hook_call(void *ctx, jn_tensor *t, jn_tensor *grad, jn_tensor **replace) {
    jn_status s = JN_OK;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *fn = ctx, *arg = grad ? wrap_borrowed(grad) : wrap_borrowed(t), *r = NULL;
    Py_INCREF(fn); /* a hook may remove itself */
    if (arg) r = PyObject_CallOneArg(fn, arg);
    Py_DECREF(fn);
    Py_XDECREF(arg);
    if (r && r != Py_None) {
        if (!replace) {
            PyErr_SetString(PyExc_RuntimeError, "a post accumulate grad hook must return None");
        } else if (!JnTensor_Check(r)) {
            PyErr_Format(PyExc_TypeError, "a gradient hook must return None or a Tensor, not %.100s",
                         Py_TYPE(r)->tp_name);
        } else {
            *replace = ((JnTensorObject *)r)->t;
            jn_tensor_incref(*replace);
        }
    }
    if (PyErr_Occurred()) {
        Py_XDECREF(hook_exc_t), Py_XDECREF(hook_exc_v), Py_XDECREF(hook_exc_tb);
        PyErr_Fetch(&hook_exc_t, &hook_exc_v, &hook_exc_tb);
        s = jn_error(JN_ERR_RUNTIME, "a gradient hook raised an exception");
    }
    Py_XDECREF(r);
    PyGILState_Release(g);
    return s;
}

/* After the engine failed: the hook's own exception when one raised. */
static PyObject *engine_raise(jn_status s) {
    if (hook_exc_t) {
        PyErr_Restore(hook_exc_t, hook_exc_v, hook_exc_tb);
        hook_exc_t = hook_exc_v = hook_exc_tb = NULL;
        return NULL;
    }
    return jn_py_raise(s);
}

static void hook_capsule_free(PyObject *cap) {
    jn_ag_hook_decref(PyCapsule_GetPointer(cap, "janus.ag_hook"));
}

/* _add_hook(tensor, post_accumulate, fn) -> an opaque handle for _remove_hook */
static PyObject *py_add_hook(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o, *fn;
    int post;
    if (!PyArg_ParseTuple(args, "OpO", &o, &post, &fn)) return NULL;
    jn_tensor *t = T_of(o, "tensor");
    if (!t) return NULL;
    if (!PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "hook must be callable, not %.100s", Py_TYPE(fn)->tp_name);
        return NULL;
    }
    jn_ag_hook *h;
    Py_INCREF(fn);
    jn_status s = jn_ag_add_hook(t, post ? JN_HOOK_POST_ACC : JN_HOOK_GRAD, hook_call, fn, hook_free, &h);
    if (s) {
        Py_DECREF(fn);
        return jn_py_raise(s);
    }
    PyObject *cap = PyCapsule_New(h, "janus.ag_hook", hook_capsule_free);
    if (!cap) {
        jn_ag_hook_remove(h);
        jn_ag_hook_decref(h);
    }
    return cap;
}

static PyObject *py_remove_hook(PyObject *self, PyObject *cap) {
    (void)self;
    jn_ag_hook *h = PyCapsule_GetPointer(cap, "janus.ag_hook");
    if (!h) return NULL;
    jn_ag_hook_remove(h);
    Py_RETURN_NONE;
}

/* Collect a sequence of tensors (None allowed when allow_none). Borrowed. */
static int tensors_of(PyObject *seq_in, jn_tensor **out, int max, int allow_none, const char *what) {
    PyObject *seq = PySequence_Fast(seq_in, "expected a sequence of tensors");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > max) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "%s: at most %d tensors", what, max);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(seq, i);
        if (o == Py_None && allow_none) out[i] = NULL;
        else if (!(out[i] = T_of(o, what))) {
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    return (int)n;
}

/* _backward(roots, grads, retain_graph) */
static PyObject *py_backward(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *ro, *go;
    int retain;
    if (!PyArg_ParseTuple(args, "OOp", &ro, &go, &retain)) return NULL;
    jn_tensor *roots[JN_MAX_INS], *grads[JN_MAX_INS];
    int n = tensors_of(ro, roots, JN_MAX_INS, 0, "tensors");
    if (n < 0) return NULL;
    int ng = tensors_of(go, grads, JN_MAX_INS, 1, "grad_tensors");
    if (ng < 0) return NULL;
    if (ng != n) {
        PyErr_Format(PyExc_RuntimeError, "got %d tensors and %d gradients", n, ng);
        return NULL;
    }
    jn_status s;
    Py_BEGIN_ALLOW_THREADS
    s = jn_backward(n, roots, grads, retain);
    Py_END_ALLOW_THREADS
    if (s) return engine_raise(s);
    Py_RETURN_NONE;
}

/* _autograd_grad(outputs, grad_outputs, inputs, retain_graph, allow_unused) */
static PyObject *py_autograd_grad(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *ro, *go, *io;
    int retain, allow_unused;
    if (!PyArg_ParseTuple(args, "OOOpp", &ro, &go, &io, &retain, &allow_unused)) return NULL;
    jn_tensor *roots[JN_MAX_INS], *grads[JN_MAX_INS], *inputs[JN_MAX_INS], *out[JN_MAX_INS];
    int n = tensors_of(ro, roots, JN_MAX_INS, 0, "outputs");
    if (n < 0) return NULL;
    int ng = tensors_of(go, grads, JN_MAX_INS, 1, "grad_outputs");
    if (ng < 0) return NULL;
    int ni = tensors_of(io, inputs, JN_MAX_INS, 0, "inputs");
    if (ni < 0) return NULL;
    if (ng != n) {
        PyErr_Format(PyExc_RuntimeError, "grad requires one grad_output per output (got %d and %d)", ng, n);
        return NULL;
    }
    jn_status s;
    Py_BEGIN_ALLOW_THREADS
    s = jn_autograd_grad(n, roots, grads, ni, inputs, out, retain, allow_unused);
    Py_END_ALLOW_THREADS
    if (s) return engine_raise(s);
    PyObject *tup = PyTuple_New(ni);
    for (int i = 0; i < ni; i++) {
        PyObject *w;
        if (out[i]) w = jn_py_wrap(out[i]);
        else {
            w = Py_None;
            Py_INCREF(w);
        }
        if (!w || !tup) {
            for (int k = i + 1; k < ni; k++) jn_tensor_decref(out[k]);
            Py_XDECREF(tup);
            return NULL;
        }
        PyTuple_SET_ITEM(tup, i, w);
    }
    return tup;
}

/* ---- custom autograd Functions (jn_ag_custom_record): the context is the
 * Python ctx object; backward calls ctx._janus_backward(grads) (janus/
 * autograd/function.py), which runs the user's backward, checks what it
 * returned and hands back one gradient or None per tensor input.  A raise
 * is kept like a hook's and re-raised by backward()/grad(). */
static jn_status custom_call(void *ctx, int nout, jn_tensor *const *gout, int nin, const int *needs,
                             jn_tensor **gin) {
    jn_status s = JN_OK;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *grads = PyTuple_New(nout), *needs_t = PyTuple_New(nin), *r = NULL;
    for (int k = 0; grads && k < nout; k++) {
        PyObject *w = wrap_borrowed(gout[k]);
        if (!w) {
            Py_CLEAR(grads);
            break;
        }
        PyTuple_SET_ITEM(grads, k, w);
    }
    for (int i = 0; needs_t && i < nin; i++) PyTuple_SET_ITEM(needs_t, i, PyBool_FromLong(needs[i]));
    if (grads && needs_t) r = PyObject_CallMethod((PyObject *)ctx, "_janus_backward", "OO", grads, needs_t);
    Py_XDECREF(grads);
    Py_XDECREF(needs_t);
    if (r && (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != nin)) {
        PyErr_Format(PyExc_RuntimeError, "internal: a custom Function's backward handed back %R", r);
        Py_CLEAR(r);
    }
    for (int i = 0; r && i < nin; i++) {
        PyObject *o = PyTuple_GET_ITEM(r, i);
        if (o == Py_None || !needs[i]) continue;
        if (!JnTensor_Check(o)) {
            PyErr_Format(PyExc_TypeError, "a custom Function's backward returned %.100s for input %d, not a Tensor",
                         Py_TYPE(o)->tp_name, i);
            break;
        }
        gin[i] = ((JnTensorObject *)o)->t;
        jn_tensor_incref(gin[i]);
    }
    Py_XDECREF(r);
    if (PyErr_Occurred()) {
        for (int i = 0; i < nin; i++) {
            jn_tensor_decref(gin[i]);
            gin[i] = NULL;
        }
        Py_XDECREF(hook_exc_t), Py_XDECREF(hook_exc_v), Py_XDECREF(hook_exc_tb);
        PyErr_Fetch(&hook_exc_t, &hook_exc_v, &hook_exc_tb);
        s = jn_error(JN_ERR_RUNTIME, "a custom autograd Function's backward raised an exception");
    }
    PyGILState_Release(g);
    return s;
}

/* The node let go of ctx: its saved tensors are gone for good (a ctx the
 * script still holds says so, as torch's does after backward). */
static void custom_free(void *ctx) {
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *r = PyObject_CallMethod((PyObject *)ctx, "_janus_release", NULL);
    if (!r) PyErr_Clear();
    Py_XDECREF(r);
    Py_DECREF((PyObject *)ctx);
    PyGILState_Release(g);
}

/* _ag_custom_record(name, inputs, outputs, differentiable, materialize, ctx):
 * outputs (no history yet) get a node whose backward is ctx's; inputs are
 * the call's tensor arguments in order (those not requiring grad get no edge). */
static PyObject *py_ag_custom_record(PyObject *self, PyObject *args) {
    (void)self;
    const char *name;
    PyObject *io, *oo, *diffo, *ctx;
    int materialize;
    if (!PyArg_ParseTuple(args, "sOOOpO", &name, &io, &oo, &diffo, &materialize, &ctx)) return NULL;
    jn_tensor *in[JN_MAX_INS], *out[JN_MAX_OUTS];
    int diff[JN_MAX_OUTS];
    int nin = tensors_of(io, in, JN_MAX_INS, 0, "inputs");
    if (nin < 0) return NULL;
    int nout = tensors_of(oo, out, JN_MAX_OUTS, 0, "outputs");
    if (nout < 0) return NULL;
    PyObject *seq = PySequence_Fast(diffo, "differentiable must be a sequence");
    if (!seq) return NULL;
    if (PySequence_Fast_GET_SIZE(seq) != nout) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "_ag_custom_record: one differentiable flag per output");
        return NULL;
    }
    for (int k = 0; k < nout; k++) diff[k] = PyObject_IsTrue(PySequence_Fast_GET_ITEM(seq, k)) > 0;
    Py_DECREF(seq);
    Py_INCREF(ctx); /* the node's reference, dropped by custom_free */
    jn_status s = jn_ag_custom_record(name, nin, in, nout, out, diff, materialize, custom_call, ctx, custom_free);
    if (s) return jn_py_raise(s);
    Py_RETURN_NONE;
}

/* _reaches(roots, leaves) -> [bool]: which leaves a backward from roots reaches */
static PyObject *py_reaches(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *ro, *lo;
    if (!PyArg_ParseTuple(args, "OO", &ro, &lo)) return NULL;
    jn_tensor *roots[JN_MAX_INS];
    int n = tensors_of(ro, roots, JN_MAX_INS, 0, "roots");
    if (n < 0) return NULL;
    PyObject *seq = PySequence_Fast(lo, "leaves must be a sequence of tensors");
    if (!seq) return NULL;
    Py_ssize_t nl = PySequence_Fast_GET_SIZE(seq);
    jn_tensor **leaves = PyMem_Malloc(sizeof *leaves * (size_t)(nl + 1));
    int *out = PyMem_Malloc(sizeof *out * (size_t)(nl + 1));
    PyObject *res = NULL;
    if (!leaves || !out) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t j = 0; j < nl; j++)
        if (!(leaves[j] = T_of(PySequence_Fast_GET_ITEM(seq, j), "leaves"))) goto done;
    jn_status s = jn_ag_reaches(n, roots, (int)nl, leaves, out);
    if (s) {
        jn_py_raise(s);
        goto done;
    }
    if (!(res = PyList_New(nl))) goto done;
    for (Py_ssize_t j = 0; j < nl; j++) PyList_SET_ITEM(res, j, PyBool_FromLong(out[j]));
done:
    PyMem_Free(leaves);
    PyMem_Free(out);
    Py_DECREF(seq);
    return res;
}

static PyObject *py_set_grad_enabled(PyObject *self, PyObject *arg) {
    (void)self;
    int on = PyObject_IsTrue(arg);
    if (on < 0) return NULL;
    int prev = jn_grad_enabled();
    jn_set_grad_enabled(on);
    return PyBool_FromLong(prev);
}

static PyObject *py_is_grad_enabled(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    return PyBool_FromLong(jn_grad_enabled());
}

static PyObject *py_has_derivative(PyObject *self, PyObject *arg) {
    (void)self;
    const char *name = PyUnicode_AsUTF8(arg);
    if (!name) return NULL;
    int op = jn_op_lookup(name);
    if (op < 0) {
        PyErr_Format(PyExc_ValueError, "unknown op %s", name);
        return NULL;
    }
    return PyBool_FromLong(jn_grad_def_of((jn_op)op)->fn != NULL);
}

/* _make_subclass(cls, t, requires_grad): a cls instance sharing t's storage
 * with no history (nn.Parameter(t)). */
static PyObject *py_make_subclass(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *cls, *o;
    int rg;
    if (!PyArg_ParseTuple(args, "OOp", &cls, &o, &rg)) return NULL;
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &JnTensorBase_Type)) {
        PyErr_SetString(PyExc_TypeError, "_make_subclass: cls must subclass Tensor");
        return NULL;
    }
    jn_tensor *t = T_of(o, "data");
    if (!t) return NULL;
    jn_tensor *al = jn_detach(t);
    if (!al) return jn_py_raise(JN_ERR_NOMEM);
    if (rg) {
        jn_status s = jn_set_requires_grad(al, 1);
        if (s) {
            jn_tensor_decref(al);
            return jn_py_raise(s);
        }
    }
    PyTypeObject *tp = (PyTypeObject *)cls;
    JnTensorObject *r = (JnTensorObject *)tp->tp_alloc(tp, 0);
    if (!r) {
        jn_tensor_decref(al);
        return NULL;
    }
    r->t = al;
    al->pyobj = r;
    return (PyObject *)r;
}

PyMethodDef jn_py_autograd_methods[] = {
    {"_make_subclass", py_make_subclass, METH_VARARGS, NULL},
    {"_requires_grad", py_requires_grad, METH_O, NULL},
    {"_set_requires_grad", py_set_requires_grad, METH_VARARGS, NULL},
    {"_is_leaf", py_is_leaf, METH_O, NULL},
    {"_grad", py_grad, METH_O, NULL},
    {"_set_grad", py_set_grad, METH_VARARGS, NULL},
    {"_grad_fn_name", py_grad_fn_name, METH_O, NULL},
    {"_detach", py_detach, METH_O, NULL},
    {"_ag_group_size", py_ag_group_size, METH_O, "tests: members of the tensor's group node, 0 if none"},
    {"_ag_nodes_made", py_ag_nodes_made, METH_NOARGS, "tests: autograd nodes made so far"},
    {"_backward", py_backward, METH_VARARGS, NULL},
    {"_add_hook", py_add_hook, METH_VARARGS, "register a gradient hook: (tensor, post_accumulate, fn) -> handle"},
    {"_remove_hook", py_remove_hook, METH_O, "the hook behind a handle no longer runs"},
    {"_ag_custom_record", py_ag_custom_record, METH_VARARGS, "a custom autograd Function's node on its outputs"},
    {"_reaches", py_reaches, METH_VARARGS, "which leaves a backward from the roots reaches"},
    {"_autograd_grad", py_autograd_grad, METH_VARARGS, NULL},
    {"_set_grad_enabled", py_set_grad_enabled, METH_O, "set grad mode; returns the previous one"},
    {"is_grad_enabled", py_is_grad_enabled, METH_NOARGS, NULL},
    {"_has_derivative", py_has_derivative, METH_O, "does the op have a derivative formula"},
    {NULL, NULL, 0, NULL}};
