/* ops_py.c -- the fast paths from Python into the dispatcher: OpFn and the
 * Tensor operators.
 *
 * OpFn is one callable per (torch-named) function.  It holds an op id and a
 * parameter list compiled by janus/_ops.py from a torch-style signature:
 * each parameter says which tensor input or attribute slot it fills and how
 * to convert the Python value (tensor, int, float, dtype, int list, dims,
 * optional number with a has_ flag, string enum, ...).  Calls go through
 * vectorcall; with Py_TPFLAGS_METHOD_DESCRIPTOR the same object placed in the
 * Tensor class is called as a method with self as the first argument, so
 * janus.add(a, b) and a.add(b) take the same C path with no bound method
 * created.  Modes: plain (new outputs), "into" (an elementwise op writing
 * into input 0: x.add_(y), bumping its version) and out= (writing into a
 * given tensor).
 *
 * The number protocol (a + b, a += b, -a, ...) and rich comparisons call
 * jn_dispatch directly with Python numbers as wrapped 0-d tensors, which is
 * what PyTorch's type promotion expects.
 */
#include "jn_db.h" /* JN_SYNC_* */
#include "jn_py.h"

#include <string.h>

#define OPFN_MAX_PARAMS 16

/* Parameter kinds (the compiled signature language of janus/_ops.py). */
enum {
    P_TENSOR = 'T',   /* tensor input; the first must be a Tensor, later ones may be numbers
                         (wrapped 0-d tensors), as in torch's (Tensor, Scalar) overloads */
    P_ANY = 'N',      /* tensor input that may be a number even in first position */
    P_OPTTENSOR = 't',/* optional trailing tensor input: None = absent */
    P_TENSORS = 'S',  /* a sequence of tensors filling the remaining inputs */
    P_INT = 'i',
    P_BOOL = 'b',
    P_FLOAT = 'f',
    P_DTYPE = 'd',    /* janus.dtype or None (-1) */
    P_INTS = 'L',     /* int or sequence of ints */
    P_VARINTS = 'V',  /* *sizes: f(2, 3) or f((2, 3)); takes the remaining positionals */
    P_DIMS = 'D',     /* None -> [] (all dims), int -> [int], sequence */
    P_OPTFLOAT = 'o', /* None -> has_=0, else value and has_=1 (slot2 = has_ attr) */
    P_OPTINT = 'O',   /* same for ints */
    P_ENUM = 'E',     /* one of a tuple of strings/None -> its index */
    P_CAST = 'c',     /* dtype or None: cast input 0 to it before the op */
    P_IGNORE = 'x'    /* accepted and ignored (generator=, ...) */
};

enum { MODE_PLAIN = 0, MODE_INTO = 1 };

typedef struct {
    PyObject *kwname; /* interned */
    char kind;
    char required;
    char kwonly;
    int slot, slot2;
    PyObject *choices; /* P_ENUM */
    PyObject *defobj;  /* default as given (for tensor params) */
} opparam;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    int op;
    int mode;
    int nattrs;     /* attributes of the op (only these are copied per call) */
    int nparams;
    int npos;       /* parameters that may be given positionally */
    int allow_out;  /* out= keyword */
    opparam p[OPFN_MAX_PARAMS];
    jn_attrs base;  /* fixed attributes and converted defaults */
    PyObject *name;
    const char *cname; /* UTF-8 of name, for messages */
    PyObject *doc;
    PyObject *result_type; /* optional: called with the outputs (namedtuples) */
    PyObject *overflow;    /* optional: called with the call's own arguments when a tensor
                              sequence exceeds JN_MAX_INS inputs (cat/stack of many tensors) */
} OpFnObject;

static PyObject *str_out;

/* ------------------------------------------------------------ converters */
static int conv_attr(const char *fn, const opparam *p, PyObject *v, jn_attrs *a, int *cast_to) {
    const char *an = PyUnicode_AsUTF8(p->kwname);
    jn_attr *x = &a->a[p->slot];
    switch (p->kind) {
    case P_INT:
        return jn_py_as_int(v, &x->i, fn, an);
    case P_BOOL: {
        if (PyBool_Check(v)) { x->i = v == Py_True; return 0; }
        int64_t i;
        if (PyLong_Check(v) && !jn_py_as_int(v, &i, fn, an)) { x->i = i != 0; return 0; }
        PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be bool, not %.100s", fn, an,
                     Py_TYPE(v)->tp_name);
        return -1;
    }
    case P_FLOAT: {
        if (PyFloat_CheckExact(v)) { x->f = PyFloat_AS_DOUBLE(v); return 0; }
        if (PyLong_Check(v)) {
            x->f = PyLong_AsDouble(v);
            return x->f == -1.0 && PyErr_Occurred() ? -1 : 0;
        }
        /* a one-element tensor's value read on the host: a sync, recorded as
         * item() is (replay's segment ends here as it does in the recording) */
        if (JnTensor_Check(v) && jn_numel(JN_T(v)) == 1 && !jn_py_host_read(JN_SYNC_ITEM, JN_T(v), 1)) return -1;
        if (JnTensor_Check(v) && jn_numel(JN_T(v)) == 1 && JN_T(v)->storage->data &&
            JN_T(v)->storage->device == JN_CPU) {
            x->f = jn_load_f64(jn_data(JN_T(v)), JN_T(v)->dtype);
            return 0;
        }
        if (!PyUnicode_Check(v) && !JnTensor_Check(v) && Py_TYPE(v)->tp_as_number &&
            (Py_TYPE(v)->tp_as_number->nb_float || Py_TYPE(v)->tp_as_number->nb_index)) {
            double d = PyFloat_AsDouble(v);
            if (!(d == -1.0 && PyErr_Occurred())) { x->f = d; return 0; }
            PyErr_Clear();
        }
        PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be a number, not %.100s", fn, an,
                     Py_TYPE(v)->tp_name);
        return -1;
    }
    case P_DTYPE: {
        int c;
        if (jn_py_parse_dtype(v, &c, fn, an)) return -1;
        x->i = c;
        return 0;
    }
    case P_CAST: {
        int c;
        if (jn_py_parse_dtype(v, &c, fn, an)) return -1;
        *cast_to = c;
        return 0;
    }
    case P_INTS:
    case P_VARINTS:
        return jn_py_parse_ints(v, &x->l, fn, an);
    case P_DIMS:
        if (v == Py_None) { x->l.n = 0; return 0; }
        return jn_py_parse_ints(v, &x->l, fn, an);
    case P_OPTFLOAT:
    case P_OPTINT:
        if (v == Py_None) { a->a[p->slot2].i = 0; return 0; }
        a->a[p->slot2].i = 1;
        if (p->kind == P_OPTINT) return jn_py_as_int(v, &x->i, fn, an);
        {
            opparam q = *p;
            q.kind = P_FLOAT;
            return conv_attr(fn, &q, v, a, cast_to);
        }
    case P_ENUM: {
        Py_ssize_t n = PyTuple_GET_SIZE(p->choices);
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *c = PyTuple_GET_ITEM(p->choices, i);
            if (c == v || (c != Py_None && PyUnicode_Check(v) && PyUnicode_Compare(c, v) == 0)) {
                x->i = i;
                return 0;
            }
        }
        PyObject *r = PyObject_Repr(p->choices);
        PyErr_Format(PyExc_ValueError, "%s(): argument '%s' must be one of %S, got %R", fn, an,
                     r ? r : Py_None, v);
        Py_XDECREF(r);
        return -1;
    }
    case P_IGNORE:
        return 0;
    }
    PyErr_Format(PyExc_SystemError, "%s(): bad parameter kind '%c'", fn, p->kind);
    return -1;
}

/* --------------------------------------------------------------- OpFn */
static PyObject *opfn_call(OpFnObject *f, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    const char *fn = f->cname;
    PyObject *vals[OPFN_MAX_PARAMS] = {0};
    PyObject *varpack = NULL, *out = NULL;
    PyObject *res = NULL;

    /* positionals */
    for (Py_ssize_t i = 0; i < nargs; i++) {
        if (i >= f->npos) {
            PyErr_Format(PyExc_TypeError, "%s() takes %d positional argument%s but %zd were given", fn,
                         f->npos, f->npos == 1 ? "" : "s", nargs);
            return NULL;
        }
        if (f->p[i].kind == P_VARINTS) {
            /* view(2, 3) or view((2, 3)) */
            if (nargs - i == 1) vals[i] = args[i];
            else if (!(varpack = PyTuple_New(nargs - i))) return NULL;
            else {
                for (Py_ssize_t k = i; k < nargs; k++) {
                    Py_INCREF(args[k]);
                    PyTuple_SET_ITEM(varpack, k - i, args[k]);
                }
                vals[i] = varpack;
            }
            break;
        }
        vals[i] = args[i];
    }
    /* keywords */
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t j = 0; j < nkw; j++) {
        PyObject *k = PyTuple_GET_ITEM(kwnames, j), *v = args[nargs + j];
        int found = -1;
        for (int q = 0; q < f->nparams; q++)
            if (f->p[q].kwname == k) { found = q; break; }
        if (found < 0)
            for (int q = 0; q < f->nparams; q++)
                if (PyUnicode_Compare(f->p[q].kwname, k) == 0) { found = q; break; }
        if (found < 0) {
            if (f->allow_out && PyUnicode_Compare(k, str_out) == 0) {
                if (v != Py_None) out = v;
                continue;
            }
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", fn, k);
            goto done;
        }
        if (vals[found]) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%U'", fn, k);
            goto done;
        }
        vals[found] = v;
    }

    /* convert */
    jn_attrs a;
    memcpy(&a, &f->base, sizeof a); /* all of it: recorded attrs stay deterministic */
    jn_tensor *in[JN_MAX_INS];
    int nin = 0, cast_to = -1;
    for (int q = 0; q < f->nparams; q++) {
        const opparam *p = &f->p[q];
        PyObject *v = vals[q];
        if (!v) {
            if (p->required) {
                PyErr_Format(PyExc_TypeError, "%s() missing required argument '%U' (pos %d)", fn,
                             p->kwname, q + 1);
                goto fail;
            }
            if ((p->kind != P_TENSOR && p->kind != P_ANY) || !p->defobj) continue;
            v = p->defobj;
        }
        if (p->kind == P_TENSOR || p->kind == P_OPTTENSOR || p->kind == P_ANY) {
            if (v == Py_None && p->kind == P_OPTTENSOR) continue;
            if (p->slot == 0 && p->kind != P_ANY && !JnTensor_Check(v)) {
                PyErr_Format(PyExc_TypeError, "%s(): argument '%U' (position %d) must be Tensor, not %.100s",
                             fn, p->kwname, q + 1, Py_TYPE(v)->tp_name);
                goto fail;
            }
            if (p->slot != nin) {
                PyErr_Format(PyExc_TypeError, "%s(): argument '%U' can't be given when an earlier "
                             "optional tensor is None", fn, p->kwname);
                goto fail;
            }
            if (!(in[nin] = jn_py_to_tensor(v, fn))) {
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError, "%s(): argument '%U' (position %d) must be Tensor, not %.100s",
                             fn, p->kwname, q + 1, Py_TYPE(v)->tp_name);
                goto fail;
            }
            nin++;
        } else if (p->kind == P_TENSORS) {
            if (JnTensor_Check(v) || !PySequence_Check(v)) {
                PyErr_Format(PyExc_TypeError, "%s(): argument '%U' must be a tuple or list of Tensors, "
                             "not %.100s", fn, p->kwname, Py_TYPE(v)->tp_name);
                goto fail;
            }
            PyObject *seq = PySequence_Fast(v, "expected a sequence");
            if (!seq) goto fail;
            Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
            if (nin + n > JN_MAX_INS) {
                Py_DECREF(seq);
                if (f->overflow) { /* the common case above pays nothing for this */
                    res = PyObject_Vectorcall(f->overflow, args, nargsf, kwnames);
                    goto fail;
                }
                PyErr_Format(PyExc_ValueError, "%s(): at most %d tensors are supported, got %zd", fn,
                             JN_MAX_INS - nin, n);
                goto fail;
            }
            for (Py_ssize_t i = 0; i < n; i++) {
                PyObject *e = PySequence_Fast_GET_ITEM(seq, i);
                if (!JnTensor_Check(e)) {
                    PyErr_Format(PyExc_TypeError, "%s(): expected Tensor as element %zd in argument '%U', "
                                 "but got %.100s", fn, i, p->kwname, Py_TYPE(e)->tp_name);
                    Py_DECREF(seq);
                    goto fail;
                }
                in[nin] = JN_T(e);
                jn_tensor_incref(in[nin]);
                nin++;
            }
            Py_DECREF(seq);
        } else if (conv_attr(fn, p, v, &a, &cast_to)) {
            goto fail;
        }
    }
    if (cast_to >= 0 && nin > 0 && (int)in[0]->dtype != cast_to) {
        jn_tensor *c = jn_py_cast(in[0], (jn_dtype)cast_to); /* dtype=: differentiable, as torch */
        if (!c) goto fail;
        jn_tensor_decref(in[0]);
        in[0] = c;
    }

    /* run */
    if (out || f->mode == MODE_INTO) {
        PyObject *dst = out ? out : vals[0];
        if (!dst || !JnTensor_Check(dst)) {
            PyErr_Format(PyExc_TypeError, "%s(): %s must be a Tensor", fn, out ? "out" : "self");
            goto fail;
        }
        jn_status s = jn_dispatch_into((jn_op)f->op, nin, in, &a, JN_T(dst));
        if (s) jn_py_raise(s);
        else {
            Py_INCREF(dst);
            res = dst;
        }
    } else {
        res = jn_py_dispatch((jn_op)f->op, nin, in, &a);
        if (res && f->result_type && PyTuple_Check(res)) {
            PyObject *r = PyObject_Call(f->result_type, res, NULL);
            Py_DECREF(res);
            res = r;
        }
    }
fail:
    for (int i = 0; i < nin; i++) jn_tensor_decref(in[i]);
done:
    Py_XDECREF(varpack);
    return res;
}

static const char *opfn_kwlist[] = {"op", "name", "params", "fixed", "mode", "allow_out",
                                    "result_type", "doc", NULL};

/* OpFn(op, name, params, fixed=(), mode=0, allow_out=False, result_type=None, doc=None)
 * params: sequence of (kwname, kind, slot, slot2, required, kwonly, default, choices)
 * fixed:  sequence of (attr_index, value) set on every call */
static PyObject *opfn_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *opobj, *name, *params, *fixed = NULL, *result_type = Py_None, *doc = Py_None;
    int mode = 0, allow_out = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OUO|OipOO", (char **)opfn_kwlist, &opobj, &name,
                                     &params, &fixed, &mode, &allow_out, &result_type, &doc))
        return NULL;
    int op = -1;
    if (PyLong_Check(opobj)) op = (int)PyLong_AsLong(opobj);
    else if (PyUnicode_Check(opobj)) op = jn_op_lookup(PyUnicode_AsUTF8(opobj));
    if (op < 0 || op >= JN_NOPS) {
        PyErr_Format(PyExc_ValueError, "OpFn: unknown op %R", opobj);
        return NULL;
    }
    const jn_opinfo *info = jn_op_info((jn_op)op);
    OpFnObject *f = (OpFnObject *)type->tp_alloc(type, 0);
    if (!f) return NULL;
    f->vectorcall = (vectorcallfunc)opfn_call;
    f->op = op;
    f->mode = mode;
    f->allow_out = allow_out;
    Py_INCREF(name);
    f->name = name;
    if (!(f->cname = PyUnicode_AsUTF8(name))) goto fail;
    f->nattrs = info->nattrs;
    Py_INCREF(doc);
    f->doc = doc;
    if (result_type != Py_None) {
        Py_INCREF(result_type);
        f->result_type = result_type;
    }
    for (int i = 0; i < info->nattrs; i++)
        if (info->attr_kind[i] == JN_A_DTYPE) f->base.a[i].i = -1;
    const char *fn = PyUnicode_AsUTF8(name);
    PyObject *seq = PySequence_Fast(params, "params must be a sequence");
    if (!seq) goto fail;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > OPFN_MAX_PARAMS) {
        PyErr_SetString(PyExc_ValueError, "OpFn: too many parameters");
        Py_DECREF(seq);
        goto fail;
    }
    f->npos = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *kwn, *kind, *def, *choices;
        int slot, slot2, req, kwonly;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "UUiippOO", &kwn, &kind, &slot, &slot2,
                              &req, &kwonly, &def, &choices)) {
            Py_DECREF(seq);
            goto fail;
        }
        opparam *p = &f->p[i];
        Py_INCREF(kwn);
        PyUnicode_InternInPlace(&kwn);
        p->kwname = kwn;
        p->kind = (char)PyUnicode_AsUTF8(kind)[0];
        p->slot = slot;
        p->slot2 = slot2;
        p->required = (char)req;
        p->kwonly = (char)kwonly;
        f->nparams = (int)i + 1;
        if (kwonly && f->npos < 0) f->npos = (int)i;
        int is_attr = !strchr("TtSNx", p->kind) && p->kind != P_CAST;
        if (is_attr && (slot < 0 || slot >= info->nattrs || (p->kind == P_OPTFLOAT || p->kind == P_OPTINT ?
                                                              slot2 < 0 || slot2 >= info->nattrs : 0))) {
            PyErr_Format(PyExc_ValueError, "OpFn %s: parameter %U targets a bad attribute slot", fn, kwn);
            Py_DECREF(seq);
            goto fail;
        }
        if (p->kind == P_ENUM) {
            if (!PyTuple_Check(choices)) {
                PyErr_SetString(PyExc_TypeError, "OpFn: enum choices must be a tuple");
                Py_DECREF(seq);
                goto fail;
            }
            Py_INCREF(choices);
            p->choices = choices;
        }
        if (!req) {
            if (p->kind == P_TENSOR || p->kind == P_OPTTENSOR || p->kind == P_TENSORS || p->kind == P_ANY) {
                if (def != Py_None || p->kind == P_TENSOR || p->kind == P_ANY) {
                    Py_INCREF(def);
                    p->defobj = def;
                }
            } else if (p->kind != P_IGNORE) {
                int cast_to = -1;
                if (conv_attr(fn, p, def, &f->base, &cast_to)) {
                    Py_DECREF(seq);
                    goto fail;
                }
            }
        }
    }
    Py_DECREF(seq);
    if (f->npos < 0) f->npos = f->nparams;
    if (fixed) {
        PyObject *fs = PySequence_Fast(fixed, "fixed must be a sequence");
        if (!fs) goto fail;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fs); i++) {
            int slot;
            PyObject *v;
            if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fs, i), "iO", &slot, &v)) {
                Py_DECREF(fs);
                goto fail;
            }
            if (slot < 0 || slot >= info->nattrs) {
                PyErr_Format(PyExc_ValueError, "OpFn %s: fixed attribute slot %d out of range", fn, slot);
                Py_DECREF(fs);
                goto fail;
            }
            opparam q = {0};
            q.kind = info->attr_kind[slot] == JN_A_DTYPE && PyLong_Check(v) ? JN_A_INT : info->attr_kind[slot];
            if (q.kind == JN_A_BOOL) q.kind = JN_A_INT;
            q.slot = slot;
            q.kwname = PyUnicode_FromString(info->attr_name[slot]);
            int cast_to = -1, r = q.kwname ? conv_attr(fn, &q, v, &f->base, &cast_to) : -1;
            Py_XDECREF(q.kwname);
            if (r) {
                Py_DECREF(fs);
                goto fail;
            }
        }
        Py_DECREF(fs);
    }
    return (PyObject *)f;
fail:
    Py_DECREF(f);
    return NULL;
}

static void opfn_dealloc(OpFnObject *f) {
    for (int i = 0; i < f->nparams; i++) {
        Py_XDECREF(f->p[i].kwname);
        Py_XDECREF(f->p[i].choices);
        Py_XDECREF(f->p[i].defobj);
    }
    Py_XDECREF(f->name);
    Py_XDECREF(f->doc);
    Py_XDECREF(f->result_type);
    Py_XDECREF(f->overflow);
    Py_TYPE(f)->tp_free((PyObject *)f);
}

static PyObject *opfn_descr_get(PyObject *self, PyObject *obj, PyObject *type) {
    (void)type;
    if (!obj || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

static PyObject *opfn_repr(OpFnObject *f) { return PyUnicode_FromFormat("<janus op %U>", f->name); }

static PyObject *opfn_get_name(OpFnObject *f, void *c) {
    (void)c;
    Py_INCREF(f->name);
    return f->name;
}
static PyObject *opfn_get_doc(OpFnObject *f, void *c) {
    (void)c;
    Py_INCREF(f->doc);
    return f->doc;
}
static PyObject *opfn_get_op(OpFnObject *f, void *c) {
    (void)c;
    return PyUnicode_FromString(jn_op_info((jn_op)f->op)->name);
}
static PyObject *opfn_get_mode(OpFnObject *f, void *c) {
    (void)c;
    return PyLong_FromLong(f->mode);
}

static PyObject *opfn_get_overflow(OpFnObject *f, void *c) {
    (void)c;
    PyObject *o = f->overflow ? f->overflow : Py_None;
    Py_INCREF(o);
    return o;
}
static int opfn_set_overflow(OpFnObject *f, PyObject *v, void *c) {
    (void)c;
    if (v && v != Py_None && !PyCallable_Check(v)) {
        PyErr_SetString(PyExc_TypeError, "OpFn.overflow must be callable or None");
        return -1;
    }
    PyObject *old = f->overflow;
    if (v == Py_None) v = NULL;
    Py_XINCREF(v);
    f->overflow = v;
    Py_XDECREF(old);
    return 0;
}

static PyGetSetDef opfn_getset[] = {
    {"__name__", (getter)opfn_get_name, NULL, NULL, NULL},
    {"__qualname__", (getter)opfn_get_name, NULL, NULL, NULL},
    {"__doc__", (getter)opfn_get_doc, NULL, NULL, NULL},
    {"op", (getter)opfn_get_op, NULL, "the op-table op this calls", NULL},
    {"mode", (getter)opfn_get_mode, NULL, "0 = new outputs, 1 = in place into input 0", NULL},
    {"overflow", (getter)opfn_get_overflow, (setter)opfn_set_overflow,
     "called with the same arguments instead when a tensor sequence is longer than the op takes", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject JnOpFn_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "janus._C.OpFn",
    .tp_basicsize = sizeof(OpFnObject),
    .tp_dealloc = (destructor)opfn_dealloc,
    .tp_vectorcall_offset = offsetof(OpFnObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_repr = (reprfunc)opfn_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "a janus op callable: janus.<name>(...) and Tensor.<name>(...)",
    .tp_descr_get = opfn_descr_get,
    .tp_getset = opfn_getset,
    .tp_new = opfn_new,
};

/* -------------------------------------------------------------- reshape */
/* Can (shape, stride) be viewed as nshape? PyTorch's computeStride. */
static int viewable(int nd, const int64_t *shape, const int64_t *stride, int nnd, const int64_t *nshape) {
    int64_t numel = jn_shape_numel(nd, shape);
    if (nd == 0 || numel == 0) return 1;
    int view_d = nnd - 1;
    int64_t chunk = stride[nd - 1], tnumel = 1, vnumel = 1;
    for (int d = nd - 1; d >= 0; d--) {
        tnumel *= shape[d];
        if (d == 0 || (shape[d - 1] != 1 && stride[d - 1] != tnumel * chunk)) {
            while (view_d >= 0 && (vnumel < tnumel || nshape[view_d] == 1)) vnumel *= nshape[view_d--];
            if (vnumel != tnumel) return 0;
            if (d > 0) {
                chunk = stride[d - 1];
                tnumel = vnumel = 1;
            }
        }
    }
    return view_d == -1;
}

/* reshape(input, *shape): a view when the layout allows one, otherwise a
 * contiguous copy (the clone op, so autograd and recording see it). */
static PyObject *reshape_impl(PyObject *input, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    if (!JnTensor_Check(input)) {
        PyErr_Format(PyExc_TypeError, "reshape(): argument 'input' must be Tensor, not %.100s",
                     Py_TYPE(input)->tp_name);
        return NULL;
    }
    jn_attrs a;
    memset(&a, 0, sizeof a);
    jn_ints *l = &a.a[0].l;
    if (kw && PyTuple_GET_SIZE(kw)) {
        if (nargs || PyTuple_GET_SIZE(kw) != 1 || PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kw, 0), "shape")) {
            PyErr_SetString(PyExc_TypeError, "reshape() takes the shape as sizes or one tuple (shape=)");
            return NULL;
        }
        if (jn_py_parse_ints(args[0], l, "reshape", "shape")) return NULL;
    } else if (nargs == 1) {
        if (jn_py_parse_ints(args[0], l, "reshape", "shape")) return NULL;
    } else {
        if (nargs > JN_MAX_DIMS) {
            PyErr_Format(PyExc_ValueError, "reshape(): at most %d dims are supported", JN_MAX_DIMS);
            return NULL;
        }
        for (Py_ssize_t i = 0; i < nargs; i++)
            if (jn_py_as_int(args[i], &l->v[i], "reshape", "shape")) return NULL;
        l->n = (int)nargs;
    }
    jn_tensor *t = JN_T(input);
    /* resolve -1 only to decide view vs copy; the view op checks and reports */
    int64_t shape[JN_MAX_DIMS], known = 1;
    int infer = -1, ok = 1;
    for (int i = 0; i < l->n; i++) {
        shape[i] = l->v[i];
        if (l->v[i] == -1 && infer < 0) infer = i;
        else if (l->v[i] < 0) ok = 0;
        else known *= l->v[i];
    }
    int64_t numel = jn_numel(t);
    if (ok && infer >= 0 && known > 0) shape[infer] = numel / known;
    jn_tensor *in[1] = {t}, *out, *c = NULL;
    jn_status s;
    int copy = ok && !jn_is_contiguous(t) && !viewable(t->ndim, t->shape, t->strides, l->n, shape);
    /* Under replay a layout that allows a view still copies where the graph
     * being followed holds the copy (recorded on a layout that did not: a
     * slice of the padding that now covers it); the values are the same,
     * and torch documents that reshape's view-or-copy may not be relied on. */
    if (ok && !copy && jn_rt_capturing && jn_rt_capture_expects(JN_OP_clone, t) &&
        !jn_rt_capture_expects(JN_OP_view, t))
        copy = 1;
    if (copy) {
        jn_attrs none;
        memset(&none, 0, sizeof none);
        if ((s = jn_dispatch(JN_OP_clone, 1, in, &none, &c))) return jn_py_raise(s);
        in[0] = c;
    }
    s = jn_dispatch(JN_OP_view, 1, in, &a, &out);
    if (c) jn_tensor_decref(c);
    if (s) return jn_py_raise(s);
    return jn_py_wrap(out);
}

static PyObject *m_reshape(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    return reshape_impl(self, args, nargs, kw);
}

static PyObject *f_reshape(PyObject *mod, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)mod;
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "reshape(input, shape): missing 'input'");
        return NULL;
    }
    return reshape_impl(args[0], args + 1, nargs - 1, kw);
}

PyMethodDef jn_py_ops_tensor_methods[] = {
    {"reshape", (PyCFunction)(void (*)(void))m_reshape, METH_FASTCALL | METH_KEYWORDS,
     "reshape(*shape): a view when possible, else a contiguous copy"},
    {NULL, NULL, 0, NULL}};

/* _copy_expected(t): whether replay follows a graph that copies t next
 * (contiguous() of a row-major tensor then copies, as reshape does). */
static PyObject *f_copy_expected(PyObject *mod, PyObject *arg) {
    (void)mod;
    if (!JnTensor_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "_copy_expected(tensor)");
        return NULL;
    }
    return PyBool_FromLong(jn_rt_capture_expects(JN_OP_clone, JN_T(arg)));
}

static PyMethodDef module_fns[] = {
    {"_copy_expected", (PyCFunction)f_copy_expected, METH_O,
     "_copy_expected(t): under replay, whether the followed graph copies t next"},
    {"reshape", (PyCFunction)(void (*)(void))f_reshape, METH_FASTCALL | METH_KEYWORDS,
     "reshape(input, shape): a view when possible, else a contiguous copy"},
    {NULL, NULL, 0, NULL}};

/* ------------------------------------------------------------ operators */
static jn_attrs attrs_none, attrs_alpha1, attrs_floor;

static PyObject *binop(PyObject *a, PyObject *b, jn_op op, const jn_attrs *at) {
    jn_tensor *in[2];
    if (!(in[0] = jn_py_to_tensor_or_null(a))) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (!(in[1] = jn_py_to_tensor_or_null(b))) {
        jn_tensor_decref(in[0]);
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NOTIMPLEMENTED;
    }
    jn_tensor *out;
    jn_status s = jn_dispatch(op, 2, in, at, &out);
    jn_tensor_decref(in[0]);
    jn_tensor_decref(in[1]);
    if (s) return jn_py_raise(s);
    return jn_py_wrap(out);
}

/* a op= b: the result is written into a (which must be a tensor). */
static PyObject *ibinop(PyObject *a, PyObject *b, jn_op op, const jn_attrs *at) {
    if (!JnTensor_Check(a)) Py_RETURN_NOTIMPLEMENTED;
    jn_tensor *in[2] = {JN_T(a), NULL};
    if (!(in[1] = jn_py_to_tensor_or_null(b))) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NOTIMPLEMENTED;
    }
    jn_status s = jn_dispatch_into(op, 2, in, at, JN_T(a));
    jn_tensor_decref(in[1]);
    if (s) return jn_py_raise(s);
    Py_INCREF(a);
    return a;
}

static PyObject *unop(PyObject *a, jn_op op) {
    jn_tensor *in[1] = {JN_T(a)}, *out;
    jn_status s = jn_dispatch(op, 1, in, &attrs_none, &out);
    if (s) return jn_py_raise(s);
    return jn_py_wrap(out);
}

static PyObject *nb_add(PyObject *a, PyObject *b) { return binop(a, b, JN_OP_add, &attrs_alpha1); }
static PyObject *nb_sub(PyObject *a, PyObject *b) { return binop(a, b, JN_OP_sub, &attrs_alpha1); }
static PyObject *nb_mul(PyObject *a, PyObject *b) { return binop(a, b, JN_OP_mul, &attrs_none); }
static PyObject *nb_div(PyObject *a, PyObject *b) { return binop(a, b, JN_OP_div, &attrs_none); }
static PyObject *nb_floordiv(PyObject *a, PyObject *b) { return binop(a, b, JN_OP_div, &attrs_floor); }
static PyObject *nb_rem(PyObject *a, PyObject *b) { return binop(a, b, JN_OP_remainder, &attrs_none); }
static PyObject *nb_matmul(PyObject *a, PyObject *b) { return binop(a, b, JN_OP_matmul, &attrs_none); }
static PyObject *nb_pow(PyObject *a, PyObject *b, PyObject *m) {
    if (m != Py_None) {
        PyErr_SetString(PyExc_TypeError, "pow() with a modulus is not supported for tensors");
        return NULL;
    }
    return binop(a, b, JN_OP_pow, &attrs_none);
}
static PyObject *nb_iadd(PyObject *a, PyObject *b) { return ibinop(a, b, JN_OP_add, &attrs_alpha1); }
static PyObject *nb_isub(PyObject *a, PyObject *b) { return ibinop(a, b, JN_OP_sub, &attrs_alpha1); }
static PyObject *nb_imul(PyObject *a, PyObject *b) { return ibinop(a, b, JN_OP_mul, &attrs_none); }
static PyObject *nb_idiv(PyObject *a, PyObject *b) { return ibinop(a, b, JN_OP_div, &attrs_none); }
static PyObject *nb_ifloordiv(PyObject *a, PyObject *b) { return ibinop(a, b, JN_OP_div, &attrs_floor); }
static PyObject *nb_irem(PyObject *a, PyObject *b) { return ibinop(a, b, JN_OP_remainder, &attrs_none); }
static PyObject *nb_ipow(PyObject *a, PyObject *b, PyObject *m) {
    if (m != Py_None) {
        PyErr_SetString(PyExc_TypeError, "pow() with a modulus is not supported for tensors");
        return NULL;
    }
    return ibinop(a, b, JN_OP_pow, &attrs_none);
}
static PyObject *nb_neg(PyObject *a) { return unop(a, JN_OP_neg); }
static PyObject *nb_abs(PyObject *a) { return unop(a, JN_OP_abs); }
/* +x is x (torch.positive returns its input): its gradient and its trace stay. */
static PyObject *nb_pos(PyObject *a) {
    if (JN_T(a)->dtype == JN_BOOL) {
        PyErr_SetString(PyExc_RuntimeError, "The `+` operator, on a bool tensor is not supported.");
        return NULL;
    }
    return Py_NewRef(a);
}

/* &, |, ^, ~ : logical ops on bool tensors (the op table has no bitwise
 * integer ops yet). */
static int operand_dtype(PyObject *o) {
    if (JnTensor_Check(o)) return JN_T(o)->dtype;
    if (PyBool_Check(o)) return JN_BOOL;
    if (PyLong_Check(o)) return JN_I64;
    if (PyFloat_Check(o)) return JN_F64;
    return -1;
}

static int check_bitwise(PyObject *a, PyObject *b, const char *what) {
    int da = operand_dtype(a), db = b ? operand_dtype(b) : JN_BOOL;
    if (da < 0 || db < 0) return 1; /* NotImplemented */
    if (da == JN_BOOL && db == JN_BOOL) return 0;
    int d = da != JN_BOOL ? da : db;
    if (jn_dtype_is_float((jn_dtype)d)) {
        PyErr_Format(PyExc_TypeError, "%s is only supported for integer and boolean tensors, got %s", what,
                     jn_dtype_names[d]);
        return -1;
    }
    PyErr_Format(PyExc_NotImplementedError, "%s of %s tensors is not supported yet (only bool tensors: "
                 "the op table has no bitwise integer ops)", what, jn_dtype_names[d]);
    return -1;
}

#define BITOP(fname, opname, what, inplace)                                                  \
    static PyObject *fname(PyObject *a, PyObject *b) {                                        \
        int r = check_bitwise(a, b, what);                                                    \
        if (r > 0) Py_RETURN_NOTIMPLEMENTED;                                                  \
        if (r < 0) return NULL;                                                               \
        return inplace ? ibinop(a, b, opname, &attrs_none) : binop(a, b, opname, &attrs_none); \
    }
BITOP(nb_and, JN_OP_logical_and, "bitwise_and", 0)
BITOP(nb_or, JN_OP_logical_or, "bitwise_or", 0)
BITOP(nb_xor, JN_OP_logical_xor, "bitwise_xor", 0)
BITOP(nb_iand, JN_OP_logical_and, "bitwise_and", 1)
BITOP(nb_ior, JN_OP_logical_or, "bitwise_or", 1)
BITOP(nb_ixor, JN_OP_logical_xor, "bitwise_xor", 1)

static PyObject *nb_invert(PyObject *a) {
    int r = check_bitwise(a, NULL, "bitwise_not");
    if (r) return r > 0 ? (PyErr_SetString(PyExc_TypeError, "bad operand for ~"), NULL) : NULL;
    return unop(a, JN_OP_logical_not);
}

PyNumberMethods jn_py_number_methods = {
    .nb_add = nb_add,
    .nb_subtract = nb_sub,
    .nb_multiply = nb_mul,
    .nb_remainder = nb_rem,
    .nb_power = nb_pow,
    .nb_negative = nb_neg,
    .nb_positive = nb_pos,
    .nb_absolute = nb_abs,
    .nb_bool = jn_py_nb_bool,
    .nb_invert = nb_invert,
    .nb_and = nb_and,
    .nb_xor = nb_xor,
    .nb_or = nb_or,
    .nb_int = jn_py_nb_int,
    .nb_float = jn_py_nb_float,
    .nb_inplace_add = nb_iadd,
    .nb_inplace_subtract = nb_isub,
    .nb_inplace_multiply = nb_imul,
    .nb_inplace_remainder = nb_irem,
    .nb_inplace_power = nb_ipow,
    .nb_inplace_and = nb_iand,
    .nb_inplace_xor = nb_ixor,
    .nb_inplace_or = nb_ior,
    .nb_floor_divide = nb_floordiv,
    .nb_true_divide = nb_div,
    .nb_inplace_floor_divide = nb_ifloordiv,
    .nb_inplace_true_divide = nb_idiv,
    .nb_index = jn_py_nb_index,
    .nb_matrix_multiply = nb_matmul,
};

PyObject *jn_py_richcompare(PyObject *a, PyObject *b, int op) {
    static const jn_op map[] = {[Py_LT] = JN_OP_lt, [Py_LE] = JN_OP_le, [Py_EQ] = JN_OP_eq,
                                [Py_NE] = JN_OP_ne, [Py_GT] = JN_OP_gt, [Py_GE] = JN_OP_ge};
    if (op < 0 || op > Py_GE) Py_RETURN_NOTIMPLEMENTED;
    if (b == Py_None) Py_RETURN_NOTIMPLEMENTED;
    return binop(a, b, map[op], &attrs_none);
}

int jn_py_ops_init(PyObject *m) {
    attrs_alpha1.a[0].f = 1.0;
    attrs_floor.a[0].i = JN_ROUND_FLOOR;
    str_out = PyUnicode_InternFromString("out");
    if (!str_out) return -1;
    if (PyType_Ready(&JnOpFn_Type) < 0) return -1;
    Py_INCREF(&JnOpFn_Type);
    if (PyModule_AddObject(m, "OpFn", (PyObject *)&JnOpFn_Type) < 0) return -1;
    if (PyModule_AddFunctions(m, module_fns) < 0) return -1;
    return 0;
}
