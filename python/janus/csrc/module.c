/* module.c -- the janus._C extension module: errors, wrapping, Python
 * value -> tensor conversion, generic op dispatch from Python (_op,
 * _op_into), op-table introspection and the registration of the Python-side
 * objects (janus.dtype instances, janus.Size, janus.Tensor).
 */
#include "jn_db.h" /* JN_SYNC_* */
#include "jn_py.h"

#include <string.h>

#include "k_gemm.h"

PyTypeObject *jn_py_tensor_class = NULL;

/* ------------------------------------------------------------- errors */
PyObject *jn_py_raise(jn_status s) {
    PyObject *exc;
    switch (s) {
    case JN_ERR_VALUE: exc = PyExc_ValueError; break;
    case JN_ERR_TYPE: exc = PyExc_TypeError; break;
    case JN_ERR_INDEX: exc = PyExc_IndexError; break;
    case JN_ERR_NOMEM: exc = PyExc_MemoryError; break;
    case JN_ERR_UNSUPPORTED: exc = PyExc_NotImplementedError; break;
    case JN_ERR_IO: exc = PyExc_OSError; break;
    default: exc = PyExc_RuntimeError; break;
    }
    PyErr_SetString(exc, jn_errmsg());
    return NULL;
}

/* ------------------------------------------------------------ wrapping */
PyObject *jn_py_wrap(jn_tensor *t) {
    if (!t) return jn_py_raise(JN_ERR_NOMEM);
    PyTypeObject *cls = jn_py_tensor_class ? jn_py_tensor_class : &JnTensorBase_Type;
    JnTensorObject *o = (JnTensorObject *)cls->tp_alloc(cls, 0);
    if (!o) {
        jn_tensor_decref(t);
        return NULL;
    }
    o->t = t;
    if (!t->pyobj) t->pyobj = o; /* in-place ops hand back this object */
    return (PyObject *)o;
}

/* numpy scalars are not int/float subclasses (except float64); recognise
 * them by their number slots, and numpy.bool_ by name. */
static int is_np_bool(PyObject *o) {
    const char *n = Py_TYPE(o)->tp_name;
    return !strcmp(n, "numpy.bool_") || !strcmp(n, "numpy.bool");
}

/* 0: not a number; 1: bool; 2: int; 3: float.  Fills *iv / *dv. */
static int py_number(PyObject *o, int64_t *iv, double *dv, int *overflow) {
    *overflow = 0;
    if (PyBool_Check(o)) { *iv = o == Py_True; return 1; }
    if (PyLong_Check(o)) {
        int of = 0;
        long long v = PyLong_AsLongLongAndOverflow(o, &of);
        if (of) { *overflow = 1; return 2; }
        *iv = v;
        return 2;
    }
    if (PyFloat_Check(o)) { *dv = PyFloat_AS_DOUBLE(o); return 3; }
    if (PyComplex_Check(o) || PySequence_Check(o) || JnTensor_Check(o)) return 0;
    if (is_np_bool(o)) {
        int b = PyObject_IsTrue(o);
        if (b < 0) { PyErr_Clear(); return 0; }
        *iv = b;
        return 1;
    }
    if (PyIndex_Check(o)) {
        PyObject *i = PyNumber_Index(o);
        if (!i) { PyErr_Clear(); return 0; }
        int of = 0;
        long long v = PyLong_AsLongLongAndOverflow(i, &of);
        Py_DECREF(i);
        if (of) { *overflow = 1; return 2; }
        *iv = v;
        return 2;
    }
    if (Py_TYPE(o)->tp_as_number && Py_TYPE(o)->tp_as_number->nb_float) {
        double d = PyFloat_AsDouble(o);
        if (d == -1.0 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
        *dv = d;
        return 3;
    }
    return 0;
}


static jn_tensor *to_tensor(PyObject *o, int *ok) {
    *ok = 1;
    if (JnTensor_Check(o)) {
        jn_tensor *t = JN_T(o);
        jn_tensor_incref(t);
        return t;
    }
    int64_t iv = 0;
    double dv = 0;
    int of;
    int kind = py_number(o, &iv, &dv, &of);
    if (of) {
        PyErr_SetString(PyExc_OverflowError, "Python int too large to convert to an int64 tensor");
        return NULL;
    }
    jn_tensor *t = NULL;
    switch (kind) {
    case 1: t = jn_scalar_i64(iv, JN_BOOL, 1); break;
    case 2: t = jn_scalar_i64(iv, JN_I64, 1); break;
    case 3: t = jn_scalar_f64(dv, JN_F64, 1); break;
    default:
        /* numpy arrays (anything exporting a buffer, not str/bytes) */
        if (PyObject_CheckBuffer(o) && !PyBytes_Check(o) && !PyByteArray_Check(o)) {
            PyObject *w = jn_py_from_buffer(o, JN_BUF_COPY);
            if (!w) return NULL;
            t = JN_T(w);
            jn_tensor_incref(t);
            Py_DECREF(w);
            return t;
        }
        *ok = 0;
        return NULL;
    }
    if (!t) jn_py_raise(JN_ERR_NOMEM);
    return t;
}

jn_tensor *jn_py_to_tensor(PyObject *o, const char *what) {
    int ok;
    jn_tensor *t = to_tensor(o, &ok);
    if (!ok)
        PyErr_Format(PyExc_TypeError, "%s must be a Tensor or a number, not %.100s", what,
                     Py_TYPE(o)->tp_name);
    return t;
}

jn_tensor *jn_py_to_tensor_or_null(PyObject *o) {
    int ok;
    jn_tensor *t = to_tensor(o, &ok);
    if (!ok) PyErr_Clear();
    return t;
}

/* -------------------------------------------------- registered objects */
PyObject *jn_py_dtype_objs[JN_NDTYPES];
PyTypeObject *jn_py_size_class = NULL;
PyObject *jn_py_cpu_device = NULL;

int jn_py_parse_dtype(PyObject *o, int *code, const char *fn, const char *arg) {
    if (o == Py_None) { *code = -1; return 0; }
    for (int i = 0; i < JN_NDTYPES; i++)
        if (o == jn_py_dtype_objs[i]) { *code = i; return 0; }
    /* Python types as dtypes, like torch: float -> float64, int -> int64 */
    if (o == (PyObject *)&PyFloat_Type) { *code = JN_F64; return 0; }
    if (o == (PyObject *)&PyLong_Type) { *code = JN_I64; return 0; }
    if (o == (PyObject *)&PyBool_Type) { *code = JN_BOOL; return 0; }
    PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be a janus.dtype, not %.100s", fn, arg,
                 Py_TYPE(o)->tp_name);
    return -1;
}

PyObject *jn_py_make_size(int n, const int64_t *v) {
    PyObject *t;
    if (jn_py_size_class) t = jn_py_size_class->tp_alloc(jn_py_size_class, n);
    else t = PyTuple_New(n);
    if (!t) return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *x = PyLong_FromLongLong(v[i]);
        if (!x) { Py_DECREF(t); return NULL; }
        PyTuple_SET_ITEM(t, i, x);
    }
    return t;
}

int jn_py_as_int(PyObject *o, int64_t *v, const char *fn, const char *arg) {
    if (PyLong_Check(o) && !PyBool_Check(o)) {
        int of = 0;
        long long x = PyLong_AsLongLongAndOverflow(o, &of);
        if (of) {
            PyErr_Format(PyExc_OverflowError, "%s(): argument '%s' is too large for int64", fn, arg);
            return -1;
        }
        if (x == -1 && PyErr_Occurred()) return -1;
        *v = x;
        return 0;
    }
    if (JnTensor_Check(o)) {
        jn_tensor *t = JN_T(o);
        /* an int read on the host (a size, a count): a sync, as item() */
        if (jn_numel(t) == 1 && (jn_dtype_is_int(t->dtype) || t->dtype == JN_BOOL) &&
            !jn_py_host_read(JN_SYNC_ITEM, t, 1))
            return -1;
        if (jn_numel(t) == 1 && (jn_dtype_is_int(t->dtype) || t->dtype == JN_BOOL) && t->storage->data &&
            t->storage->device == JN_CPU) {
            *v = jn_load_i64(jn_data(t), t->dtype);
            return 0;
        }
    } else if (!PyFloat_Check(o) && PyIndex_Check(o)) {
        PyObject *i = PyNumber_Index(o);
        if (i) {
            int r = jn_py_as_int(i, v, fn, arg);
            Py_DECREF(i);
            return r;
        }
        PyErr_Clear();
    }
    PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be int, not %.100s", fn, arg,
                 Py_TYPE(o)->tp_name);
    return -1;
}

int jn_py_parse_ints(PyObject *o, jn_ints *out, const char *fn, const char *arg) {
    if (PyTuple_Check(o) || PyList_Check(o)) {
        Py_ssize_t m = PySequence_Fast_GET_SIZE(o);
        if (m > JN_MAX_DIMS) {
            PyErr_Format(PyExc_ValueError, "%s(): '%s' has %zd entries; at most %d are supported",
                         fn, arg, m, JN_MAX_DIMS);
            return -1;
        }
        for (Py_ssize_t k = 0; k < m; k++)
            if (jn_py_as_int(PySequence_Fast_GET_ITEM(o, k), &out->v[k], fn, arg)) return -1;
        out->n = (int)m;
        return 0;
    }
    if (JnTensor_Check(o) && JN_T(o)->ndim == 1) { /* a 1-d integer tensor of sizes, read on the host: a sync */
        jn_tensor *t = JN_T(o);
        if (!jn_py_host_read(JN_SYNC_TOLIST, t, 1)) return -1;
        if (t->shape[0] > JN_MAX_DIMS || !jn_dtype_is_int(t->dtype) || !t->storage->data ||
            t->storage->device != JN_CPU) {
            PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be a tuple of ints, not a %s tensor "
                         "of shape [%lld]", fn, arg, jn_dtype_names[t->dtype], (long long)t->shape[0]);
            return -1;
        }
        out->n = (int)t->shape[0];
        for (int k = 0; k < out->n; k++)
            out->v[k] = jn_load_i64(jn_data(t) + k * t->strides[0] * (int64_t)jn_elsize(t), t->dtype);
        return 0;
    }
    if (!PyLong_Check(o) && !PyIndex_Check(o) && !JnTensor_Check(o) && PySequence_Check(o)) {
        PyObject *seq = PySequence_Tuple(o);
        if (!seq) return -1;
        int r = jn_py_parse_ints(seq, out, fn, arg);
        Py_DECREF(seq);
        return r;
    }
    if (PyFloat_Check(o) || PyBool_Check(o) || o == Py_None || PyUnicode_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be a tuple of ints, not %.100s", fn,
                     arg, Py_TYPE(o)->tp_name);
        return -1;
    }
    out->n = 1; /* a single int is a 1-list */
    return jn_py_as_int(o, &out->v[0], fn, arg);
}

/* ------------------------------------------------------------- attrs */
static int parse_int(PyObject *v, int64_t *out, const char *op, const char *name) {
    if (PyBool_Check(v) || PyLong_Check(v) || PyIndex_Check(v)) {
        long long x = PyLong_AsLongLong(v);
        if (x == -1 && PyErr_Occurred()) return -1;
        *out = x;
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be int, not %.100s", op, name,
                 Py_TYPE(v)->tp_name);
    return -1;
}

int jn_py_parse_attrs(jn_op op, PyObject *attrs, jn_attrs *a) {
    const jn_opinfo *info = jn_op_info(op);
    memset(a, 0, sizeof *a);
    if (!PyTuple_Check(attrs) || PyTuple_GET_SIZE(attrs) > info->nattrs) {
        PyErr_Format(PyExc_TypeError, "%s(): expected a tuple of at most %d attributes", info->name,
                     info->nattrs);
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(attrs);
    for (int i = 0; i < info->nattrs; i++) {
        const char *name = info->attr_name[i];
        if (i >= n) { /* schema default; random ops' seed/offset are filled by the dispatcher */
            if (info->attr_kind[i] == JN_A_FLOAT) a->a[i].f = info->attr_default[i];
            else if (info->attr_kind[i] != JN_A_INTS) a->a[i].i = (int64_t)info->attr_default[i];
            continue;
        }
        PyObject *v = PyTuple_GET_ITEM(attrs, i);
        switch (info->attr_kind[i]) {
        case JN_A_INT:
        case JN_A_BOOL:
            if (parse_int(v, &a->a[i].i, info->name, name)) return -1;
            break;
        case JN_A_DTYPE:
            if (v == Py_None) a->a[i].i = -1;
            else if (!PyLong_Check(v)) {
                int code;
                if (jn_py_parse_dtype(v, &code, info->name, name)) return -1;
                a->a[i].i = code;
            } else if (parse_int(v, &a->a[i].i, info->name, name)) return -1;
            else if (a->a[i].i < -1 || a->a[i].i >= JN_NDTYPES) {
                PyErr_Format(PyExc_ValueError, "%s(): bad dtype code %lld", info->name, (long long)a->a[i].i);
                return -1;
            }
            break;
        case JN_A_FLOAT: {
            double d = PyFloat_AsDouble(v);
            if (d == -1.0 && PyErr_Occurred()) {
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be a number, not %.100s",
                             info->name, name, Py_TYPE(v)->tp_name);
                return -1;
            }
            a->a[i].f = d;
            break;
        }
        case JN_A_INTS: {
            PyObject *seq = PySequence_Fast(v, "");
            if (!seq) {
                PyErr_Clear();
                int64_t x;
                if (parse_int(v, &x, info->name, name)) return -1; /* a single int is a 1-list */
                a->a[i].l.n = 1;
                a->a[i].l.v[0] = x;
                break;
            }
            Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
            if (m > JN_MAX_DIMS) {
                Py_DECREF(seq);
                PyErr_Format(PyExc_ValueError, "%s(): '%s' has %zd entries; at most %d are supported",
                             info->name, name, m, JN_MAX_DIMS);
                return -1;
            }
            a->a[i].l.n = (int)m;
            for (Py_ssize_t k = 0; k < m; k++)
                if (parse_int(PySequence_Fast_GET_ITEM(seq, k), &a->a[i].l.v[k], info->name, name)) {
                    Py_DECREF(seq);
                    return -1;
                }
            Py_DECREF(seq);
            break;
        }
        }
    }
    return 0;
}

PyObject *jn_py_dispatch(jn_op op, int nin, jn_tensor *const *in, const jn_attrs *a) {
    jn_tensor *out[JN_MAX_OUTS];
    jn_status s = jn_dispatch(op, nin, in, a, out);
    if (s) return jn_py_raise(s);
    int nout = jn_op_info(op)->nout;
    if (nout == 1) {
        /* in-place ops hand back the caller's own object */
        if ((jn_op_info(op)->flags & JN_F_INPLACE) && in[0]->pyobj) {
            jn_tensor_decref(out[0]);
            PyObject *o = (PyObject *)in[0]->pyobj;
            Py_INCREF(o);
            return o;
        }
        return jn_py_wrap(out[0]);
    }
    PyObject *tup = PyTuple_New(nout);
    if (!tup) {
        for (int i = 0; i < nout; i++) jn_tensor_decref(out[i]);
        return NULL;
    }
    for (int i = 0; i < nout; i++) {
        PyObject *w = jn_py_wrap(out[i]);
        if (!w) {
            for (int k = i + 1; k < nout; k++) jn_tensor_decref(out[k]);
            Py_DECREF(tup);
            return NULL;
        }
        PyTuple_SET_ITEM(tup, i, w);
    }
    return tup;
}

static int op_from_obj(PyObject *o) {
    if (PyLong_Check(o)) {
        long v = PyLong_AsLong(o);
        if (v >= 0 && v < JN_NOPS) return (int)v;
    } else if (PyUnicode_Check(o)) {
        int v = jn_op_lookup(PyUnicode_AsUTF8(o));
        if (v >= 0) return v;
    }
    PyErr_Format(PyExc_ValueError, "unknown op %R", o);
    return -1;
}

/* Gather tensor inputs from a sequence; numbers become wrapped scalars. */
static int gather_inputs(PyObject *seq_in, jn_tensor **in, int *nin, const char *opname) {
    PyObject *seq = PySequence_Fast(seq_in, "op inputs must be a sequence");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > JN_MAX_INS) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "%s: at most %d tensor inputs are supported, got %zd", opname,
                     JN_MAX_INS, n);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        in[i] = jn_py_to_tensor(PySequence_Fast_GET_ITEM(seq, i), opname);
        if (!in[i]) {
            for (Py_ssize_t k = 0; k < i; k++) jn_tensor_decref(in[k]);
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    *nin = (int)n;
    return 0;
}

/* _C._op(op, inputs, attrs) */
static PyObject *py_op(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "_op(op, inputs, attrs)");
        return NULL;
    }
    int op = op_from_obj(args[0]);
    if (op < 0) return NULL;
    jn_attrs a;
    if (jn_py_parse_attrs((jn_op)op, args[2], &a)) return NULL;
    jn_tensor *in[JN_MAX_INS];
    int nin;
    if (gather_inputs(args[1], in, &nin, jn_op_info((jn_op)op)->name)) return NULL;
    PyObject *r = jn_py_dispatch((jn_op)op, nin, in, &a);
    for (int i = 0; i < nin; i++) jn_tensor_decref(in[i]);
    return r;
}

/* _C._op_into(op, inputs, attrs, dst) -> dst */
static PyObject *py_op_into(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 4 || !JnTensor_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "_op_into(op, inputs, attrs, dst: Tensor)");
        return NULL;
    }
    int op = op_from_obj(args[0]);
    if (op < 0) return NULL;
    jn_attrs a;
    if (jn_py_parse_attrs((jn_op)op, args[2], &a)) return NULL;
    jn_tensor *in[JN_MAX_INS];
    int nin;
    if (gather_inputs(args[1], in, &nin, jn_op_info((jn_op)op)->name)) return NULL;
    jn_status s = jn_dispatch_into((jn_op)op, nin, in, &a, ((JnTensorObject *)args[3])->t);
    for (int i = 0; i < nin; i++) jn_tensor_decref(in[i]);
    if (s) return jn_py_raise(s);
    Py_INCREF(args[3]);
    return args[3];
}

static PyObject *py_op_names(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    PyObject *l = PyList_New(JN_NOPS);
    for (int i = 0; l && i < JN_NOPS; i++) PyList_SET_ITEM(l, i, PyUnicode_FromString(jn_op_info((jn_op)i)->name));
    return l;
}

static PyObject *py_op_info(PyObject *self, PyObject *arg) {
    (void)self;
    int op = op_from_obj(arg);
    if (op < 0) return NULL;
    const jn_opinfo *in = jn_op_info((jn_op)op);
    PyObject *attrs = PyList_New(in->nattrs);
    for (int i = 0; attrs && i < in->nattrs; i++)
        PyList_SET_ITEM(attrs, i, Py_BuildValue("(sC)", in->attr_name[i], in->attr_kind[i]));
    return Py_BuildValue("{s:i,s:s,s:i,s:i,s:i,s:N}", "id", op, "name", in->name, "nin", in->nin,
                         "nout", in->nout, "flags", in->flags, "attrs", attrs);
}

static PyObject *py_optable_hash(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    char buf[24];
    snprintf(buf, sizeof buf, "%016llx", (unsigned long long)jn_optable_hash());
    return PyUnicode_FromString(buf);
}

static PyObject *py_set_tensor_class(PyObject *self, PyObject *cls) {
    (void)self;
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &JnTensorBase_Type)) {
        PyErr_SetString(PyExc_TypeError, "tensor class must subclass _C.TensorBase");
        return NULL;
    }
    Py_XDECREF(jn_py_tensor_class);
    Py_INCREF(cls);
    jn_py_tensor_class = (PyTypeObject *)cls;
    Py_RETURN_NONE;
}

/* _register(dtypes: tuple of 8 janus.dtype, size_class, cpu_device) */
static PyObject *py_register(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *dts, *size, *dev;
    if (!PyArg_ParseTuple(args, "O!OO", &PyTuple_Type, &dts, &size, &dev)) return NULL;
    if (PyTuple_GET_SIZE(dts) != JN_NDTYPES || !PyType_Check(size) ||
        !PyType_IsSubtype((PyTypeObject *)size, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "_register(dtypes, size_class, cpu_device)");
        return NULL;
    }
    for (int i = 0; i < JN_NDTYPES; i++) {
        Py_XDECREF(jn_py_dtype_objs[i]);
        jn_py_dtype_objs[i] = PyTuple_GET_ITEM(dts, i);
        Py_INCREF(jn_py_dtype_objs[i]);
    }
    Py_XDECREF(jn_py_size_class);
    Py_INCREF(size);
    jn_py_size_class = (PyTypeObject *)size;
    Py_XDECREF(jn_py_cpu_device);
    Py_INCREF(dev);
    jn_py_cpu_device = dev;
    Py_RETURN_NONE;
}

static PyObject *py_manual_seed(PyObject *self, PyObject *arg) {
    (void)self;
    unsigned long long s = PyLong_AsUnsignedLongLongMask(arg);
    if (PyErr_Occurred()) return NULL;
    jn_manual_seed(s);
    Py_RETURN_NONE;
}

static PyObject *py_rng_state(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    return Py_BuildValue("(KK)", (unsigned long long)jn_rng_seed(), (unsigned long long)jn_rng_offset());
}

static PyObject *py_set_rng_state(PyObject *self, PyObject *args) {
    (void)self;
    unsigned long long s, o;
    if (!PyArg_ParseTuple(args, "KK", &s, &o)) return NULL;
    jn_rng_set_state(s, o);
    Py_RETURN_NONE;
}

/* _philox(counter, key): the Philox4x32-10 block (four uint32) of the
 * normative stream (k_random.c), so Python can draw a value on the host
 * exactly as a random op would, without running one (DataLoader's base
 * seed: no op, no sync point in a recording). */
static PyObject *py_philox(PyObject *self, PyObject *args) {
    (void)self;
    unsigned long long counter, key;
    if (!PyArg_ParseTuple(args, "KK", &counter, &key)) return NULL;
    uint32_t r[4];
    jn_philox(counter, key, r);
    return Py_BuildValue("(kkkk)", (unsigned long)r[0], (unsigned long)r[1], (unsigned long)r[2],
                         (unsigned long)r[3]);
}

static PyObject *py_set_num_threads(PyObject *self, PyObject *arg) {
    (void)self;
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    jn_set_num_threads((int)n);
    Py_RETURN_NONE;
}

static PyObject *py_get_num_threads(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    return PyLong_FromLong(jn_num_threads());
}

/* _sgemm_level(cap): which kernel small float32 GEMMs use: janus's
 * AVX-512 one (2), its AVX2 port (1) or OpenBLAS (0), the best this CPU
 * has at most cap; cap -1 only asks.  For benchmarks and tests that
 * compare them in one process. */
static PyObject *py_sgemm_level(PyObject *self, PyObject *arg) {
    (void)self;
    long cap = PyLong_AsLong(arg);
    if (cap == -1 && PyErr_Occurred()) return NULL;
    if (cap < -1 || cap > JN_SGEMM_KERNEL) {
        PyErr_Format(PyExc_ValueError, "_sgemm_level: cap must be -1 (ask), 0, 1 or 2, not %ld", cap);
        return NULL;
    }
    return PyLong_FromLong(jn_rt_sgemm_level((int)cap));
}

/* _kernel_clock([on]) -> (seconds, calls): this thread's kernel clock
 * (jn_rt_kclock: time inside kernels while on), switched on or off first
 * when told. */
static PyObject *py_kernel_clock(PyObject *self, PyObject *const *argv, Py_ssize_t nargs) {
    (void)self;
    if (nargs > 1) return PyErr_Format(PyExc_TypeError, "_kernel_clock([on])");
    if (nargs == 1) {
        int on = PyObject_IsTrue(argv[0]);
        if (on < 0) return NULL;
        jn_rt_kclock_set(on);
    }
    double sec;
    uint64_t calls;
    jn_rt_kclock_read(&sec, &calls);
    return Py_BuildValue("(dK)", sec, (unsigned long long)calls);
}

/* _kernel_clock_ops([on]) -> {op name: (seconds, calls)}: this thread's
 * kernel clock per eager op so far (ops that ran), its per-op table
 * switched on or off first when told (the clock itself must be on). */
static PyObject *py_kernel_clock_ops(PyObject *self, PyObject *const *argv, Py_ssize_t nargs) {
    (void)self;
    if (nargs > 1) return PyErr_Format(PyExc_TypeError, "_kernel_clock_ops([on])");
    if (nargs == 1) {
        int on = PyObject_IsTrue(argv[0]);
        if (on < 0) return NULL;
        jn_status s = jn_rt_kclock_set_ops(on);
        if (s) return jn_py_raise(s);
    }
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    double *sec = malloc(sizeof *sec * JN_NOPS);
    uint64_t *calls = malloc(sizeof *calls * JN_NOPS);
    if (!sec || !calls) {
        free(sec), free(calls);
        Py_DECREF(d);
        return PyErr_NoMemory();
    }
    if (jn_rt_kclock_read_ops(sec, calls))
        for (int op = 0; op < JN_NOPS; op++) {
            if (!calls[op]) continue;
            PyObject *v = Py_BuildValue("(dK)", sec[op], (unsigned long long)calls[op]);
            if (!v || PyDict_SetItemString(d, jn_op_info((jn_op)op)->name, v)) {
                Py_XDECREF(v);
                Py_DECREF(d);
                d = NULL;
                break;
            }
            Py_DECREF(v);
        }
    free(sec), free(calls);
    return d;
}

extern PyMethodDef jn_py_tensor_module_methods[]; /* tensor.c: constructors */
extern PyMethodDef jn_py_autograd_methods[];      /* autograd_py.c */
extern PyMethodDef jn_py_recorder_methods[];      /* recorder_py.c */
extern PyMethodDef jn_py_replay_methods[];        /* replay_py.c */
extern PyMethodDef jn_py_region_methods[];        /* region_py.c */
extern PyMethodDef jn_py_module_call_methods[];   /* module_call.c */
extern PyMethodDef jn_py_cuda_methods[];          /* cuda_py.c */
extern PyMethodDef jn_py_autocast_methods[];      /* autocast_py.c */
extern PyMethodDef jn_py_settings_table_methods[]; /* settings_table_py.c */
extern PyMethodDef jn_py_dist_methods[];          /* dist_py.c */

static PyMethodDef methods[] = {
    {"_op", (PyCFunction)(void (*)(void))py_op, METH_FASTCALL, "_op(op, inputs, attrs): run one op"},
    {"_op_into", (PyCFunction)(void (*)(void))py_op_into, METH_FASTCALL, "_op_into(op, inputs, attrs, dst)"},
    {"op_names", py_op_names, METH_NOARGS, "names of every op in the op table"},
    {"op_info", py_op_info, METH_O, "metadata of one op"},
    {"optable_hash", py_optable_hash, METH_NOARGS, "hash of the op table"},
    {"_set_tensor_class", py_set_tensor_class, METH_O, NULL},
    {"_register", py_register, METH_VARARGS, "register janus.dtype objects, janus.Size, the cpu device"},
    {"_tensor_from_data", (PyCFunction)(void (*)(void))jn_py_tensor_from_data, METH_FASTCALL,
     "_tensor_from_data(data, dtype_code=-1): nested sequences/scalars -> tensor"},
    {"_nonzero", jn_py_nonzero_fn, METH_O, "indices of nonzero elements as an (n, ndim) int64 tensor"},
    {"_host_tolist", jn_py_host_tolist, METH_O, "values as lists; a sync only where the segment wrote them"},
    {"manual_seed", py_manual_seed, METH_O, "seed the default Philox generator"},
    {"_rng_state", py_rng_state, METH_NOARGS, "(seed, offset) of the default generator"},
    {"_set_rng_state", py_set_rng_state, METH_VARARGS, NULL},
    {"_philox", py_philox, METH_VARARGS, "_philox(counter, key): the stream's Philox block, four uint32"},
    {"set_num_threads", py_set_num_threads, METH_O, NULL},
    {"get_num_threads", py_get_num_threads, METH_NOARGS, NULL},
    {"_kernel_clock_ops", (PyCFunction)(void (*)(void))py_kernel_clock_ops, METH_FASTCALL,
     "_kernel_clock_ops([on]) -> {op: (seconds, calls)} inside eager kernels per op on this thread"},
    {"_kernel_clock", (PyCFunction)(void (*)(void))py_kernel_clock, METH_FASTCALL,
     "_kernel_clock([on]) -> (seconds, calls) inside kernels on this thread while the clock was on"},
    {"_sgemm_level", py_sgemm_level, METH_O, "_sgemm_level(cap): small GEMMs' kernel: 2 AVX-512, 1 AVX2, 0 OpenBLAS (at most cap)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "janus._C", "Janus C runtime", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__C(void) {
    if (jn_py_tensor_type_ready() < 0) return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (!m) return NULL;
    if (jn_py_ops_init(m) < 0) goto fail;
    if (PyModule_AddFunctions(m, jn_py_tensor_module_methods) < 0) goto fail;
    if (PyModule_AddFunctions(m, jn_py_autograd_methods) < 0) goto fail;
    if (PyModule_AddFunctions(m, jn_py_recorder_methods) < 0) goto fail;
    if (PyModule_AddFunctions(m, jn_py_replay_methods) < 0) goto fail;
    if (PyModule_AddFunctions(m, jn_py_region_methods) < 0) goto fail;
    if (PyModule_AddFunctions(m, jn_py_module_call_methods) < 0) goto fail;
    if (PyModule_AddFunctions(m, jn_py_cuda_methods) < 0) goto fail;
    if (PyModule_AddFunctions(m, jn_py_autocast_methods) < 0) goto fail;
    if (PyModule_AddFunctions(m, jn_py_settings_table_methods) < 0) goto fail;
    if (PyModule_AddFunctions(m, jn_py_dist_methods) < 0) goto fail;
    Py_INCREF(&JnTensorBase_Type);
    if (PyModule_AddObject(m, "TensorBase", (PyObject *)&JnTensorBase_Type) < 0) goto fail;
    PyObject *names = PyTuple_New(JN_NDTYPES);
    for (int i = 0; names && i < JN_NDTYPES; i++) PyTuple_SET_ITEM(names, i, PyUnicode_FromString(jn_dtype_names[i]));
    if (!names || PyModule_AddObject(m, "dtype_names", names) < 0) goto fail;
    PyModule_AddIntConstant(m, "MAX_DIMS", JN_MAX_DIMS);
    PyModule_AddIntConstant(m, "MAX_INS", JN_MAX_INS);
    PyModule_AddIntConstant(m, "ROUND_NONE", JN_ROUND_NONE);
    PyModule_AddIntConstant(m, "ROUND_TRUNC", JN_ROUND_TRUNC);
    PyModule_AddIntConstant(m, "ROUND_FLOOR", JN_ROUND_FLOOR);
    PyModule_AddIntConstant(m, "HAVE_CUDA", JANUS_HAVE_CUDA);
    PyModule_AddStringConstant(m, "__version__", JANUS_VERSION);
#define F(n) PyModule_AddIntConstant(m, #n, n);
    F(JN_F_EW) F(JN_F_RED) F(JN_F_VIEW) F(JN_F_INPLACE) F(JN_F_RAND) F(JN_F_FACTORY) F(JN_F_VARIADIC) F(JN_F_NOGRAD) F(JN_F_COLL)
    /* the roles _rec_mark takes */
    F(JN_TR_HOST) F(JN_TR_PARAM) F(JN_TR_STATE) F(JN_TR_DATAIDX)
#undef F
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
