/* module_call.c -- nn.Module.__call__ in C: the call of every module, in
 * every mode, without a Python frame of its own.
 *
 * A module call is the innermost loop of most scripts (a recurrent cell per
 * time step, every layer of every block), and a Python __call__ that only
 * chooses where to go cost ~200 ns a call before forward even started.  This
 * object is the class attribute Module.__call__ and makes the same choice
 * as the Python it replaces (python/janus/nn/module.py keeps it as the
 * reference), reading the same two module attributes at every call, so
 * nothing here can go stale:
 *
 *   janus._module_hooks nonzero    some module has forward hooks (live
 *                                   registrations): nn/module.py's
 *                                   janus._module_hooked_call(module, args,
 *                                   kwargs) runs the module's hooks around
 *                                   the rest of this choice, made without
 *                                   replay's regions (a replaced parent would
 *                                   skip its children's hooks)
 *   janus._record.regions truthy   janus record marks region calls:
 *                                   _record.module_call(module, args, kwargs)
 *   janus._region_module not None  a replay replaces module calls:
 *                                   _region_module(module, args, kwargs)
 *   otherwise                      module.forward(*args, **kwargs), looked up
 *                                   on the instance as Python would (a patched
 *                                   forward is called)
 *
 * It is a method descriptor (Py_TPFLAGS_METHOD_DESCRIPTOR): CPython calls it
 * with the module prepended instead of making a bound method, and
 * Module.__call__.__get__ still binds it (super().__call__(x) works).  The
 * args tuple and kwargs dict are built only for the two hooks, which take
 * them as Python's *args / **kwargs gave them.
 */
#include "jn_py.h"

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *record_dict;   /* janus._record.__dict__ */
    PyObject *janus_dict;    /* janus.__dict__ */
    PyObject *s_regions, *s_module_call, *s_region_module, *s_forward, *s_hooks, *s_hooked_call; /* interned */
} mcall;

/* name's value in a module's dict, or AttributeError as the attribute read
 * would raise it (borrowed). */
static PyObject *mod_attr(PyObject *dict, PyObject *name) {
    PyObject *v = PyDict_GetItemWithError(dict, name);
    if (!v && !PyErr_Occurred()) PyErr_Format(PyExc_AttributeError, "janus module has no attribute '%U'", name);
    return v;
}

/* The hooks' (module, args, kwargs) from a vectorcall's arguments. */
static PyObject *call_hook(PyObject *hook, PyObject *const *argv, Py_ssize_t n, PyObject *kwnames) {
    Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *args = PyTuple_New(n - 1), *kwargs = PyDict_New(), *out = NULL;
    if (!args || !kwargs) goto done;
    for (Py_ssize_t i = 1; i < n; i++) PyTuple_SET_ITEM(args, i - 1, Py_NewRef(argv[i]));
    for (Py_ssize_t i = 0; i < nk; i++)
        if (PyDict_SetItem(kwargs, PyTuple_GET_ITEM(kwnames, i), argv[n + i]) < 0) goto done;
    PyObject *cargv[3] = {argv[0], args, kwargs};
    out = PyObject_Vectorcall(hook, cargv, 3, NULL);
done:
    Py_XDECREF(args);
    Py_XDECREF(kwargs);
    return out;
}

static PyObject *mcall_vectorcall(PyObject *self, PyObject *const *argv, size_t nargsf, PyObject *kwnames) {
    mcall *M = (mcall *)self;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (n < 1) return PyErr_Format(PyExc_TypeError, "Module.__call__() needs the module as its first argument");
    PyObject *hooks = mod_attr(M->janus_dict, M->s_hooks);
    if (!hooks) return NULL;
    int hooked = PyObject_IsTrue(hooks);
    if (hooked < 0) return NULL;
    if (hooked) {
        PyObject *fn = mod_attr(M->janus_dict, M->s_hooked_call);
        return fn ? call_hook(fn, argv, n, kwnames) : NULL;
    }
    PyObject *rec = mod_attr(M->record_dict, M->s_regions);
    if (!rec) return NULL;
    int on = PyObject_IsTrue(rec);
    if (on < 0) return NULL;
    if (on) {
        PyObject *fn = mod_attr(M->record_dict, M->s_module_call);
        return fn ? call_hook(fn, argv, n, kwnames) : NULL;
    }
    PyObject *reg = mod_attr(M->janus_dict, M->s_region_module);
    if (!reg) return NULL;
    if (reg != Py_None) return call_hook(reg, argv, n, kwnames);
    return PyObject_VectorcallMethod(M->s_forward, argv, nargsf, kwnames);
}

static PyObject *mcall_get(PyObject *self, PyObject *obj, PyObject *type) {
    (void)type;
    if (!obj || obj == Py_None) return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static int mcall_traverse(PyObject *self, visitproc visit, void *arg) {
    mcall *M = (mcall *)self;
    Py_VISIT(M->record_dict);
    Py_VISIT(M->janus_dict);
    return 0;
}

static int mcall_clear(PyObject *self) {
    mcall *M = (mcall *)self;
    Py_CLEAR(M->record_dict);
    Py_CLEAR(M->janus_dict);
    Py_CLEAR(M->s_regions);
    Py_CLEAR(M->s_module_call);
    Py_CLEAR(M->s_region_module);
    Py_CLEAR(M->s_forward);
    Py_CLEAR(M->s_hooks);
    Py_CLEAR(M->s_hooked_call);
    return 0;
}

static void mcall_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    (void)mcall_clear(self);
    PyObject_GC_Del(self);
}

static PyObject *mcall_name(PyObject *self, void *c) {
    (void)self, (void)c;
    return PyUnicode_FromString("__call__");
}

static PyGetSetDef mcall_getset[] = {
    {"__name__", mcall_name, NULL, NULL, NULL},
    {"__qualname__", mcall_name, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject mcall_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "janus._C.ModuleCall",
    .tp_basicsize = sizeof(mcall),
    .tp_dealloc = mcall_dealloc,
    .tp_vectorcall_offset = offsetof(mcall, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "Module.__call__(self, *args, **kwargs): self.forward(*args, **kwargs), or janus record's / "
              "replay's module call while one is on",
    .tp_traverse = mcall_traverse,
    .tp_clear = mcall_clear,
    .tp_getset = mcall_getset,
    .tp_descr_get = mcall_get,
};

/* _module_call(record_module, janus_module) -> the Module.__call__ object. */
static PyObject *py_module_call(PyObject *self, PyObject *const *argv, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2 || !PyModule_Check(argv[0]) || !PyModule_Check(argv[1]))
        return PyErr_Format(PyExc_TypeError, "_module_call(janus._record, janus): two modules");
    if (!(mcall_type.tp_flags & Py_TPFLAGS_READY) && PyType_Ready(&mcall_type) < 0) return NULL;
    mcall *M = PyObject_GC_New(mcall, &mcall_type);
    if (!M) return NULL;
    M->vectorcall = mcall_vectorcall;
    M->record_dict = Py_NewRef(PyModule_GetDict(argv[0]));
    M->janus_dict = Py_NewRef(PyModule_GetDict(argv[1]));
    M->s_regions = PyUnicode_InternFromString("regions");
    M->s_module_call = PyUnicode_InternFromString("module_call");
    M->s_region_module = PyUnicode_InternFromString("_region_module");
    M->s_forward = PyUnicode_InternFromString("forward");
    M->s_hooks = PyUnicode_InternFromString("_module_hooks");
    M->s_hooked_call = PyUnicode_InternFromString("_module_hooked_call");
    PyObject_GC_Track((PyObject *)M);
    if (!M->s_regions || !M->s_module_call || !M->s_region_module || !M->s_forward || !M->s_hooks ||
        !M->s_hooked_call) {
        Py_DECREF(M);
        return NULL;
    }
    return (PyObject *)M;
}

PyMethodDef jn_py_module_call_methods[] = {
    {"_module_call", (PyCFunction)(void (*)(void))py_module_call, METH_FASTCALL,
     "_module_call(janus._record, janus) -> nn.Module.__call__ as a C method descriptor"},
    {NULL, NULL, 0, NULL},
};
