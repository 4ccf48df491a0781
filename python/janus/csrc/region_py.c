/* region_py.c -- janus._C's side of regions whose Python is skipped
 * (replay/jn_region.h, janus/_region.py).
 *
 * Module regions (a Module.__call__) and Optimizer.zero_grad are further
 * down.  janus/_region.py proves a region (an optimizer's step) replaceable from
 * observed calls and hands over a plan: what the call's Python reads (the
 * optimizer's class and its version tag, the step function's code, the
 * instance attributes and globals the bytecode reads, every param group's
 * entries, every parameter's gradient and state entries, the metadata of
 * every tensor bound) and the template (the observed ops, in the
 * observation log that is still current).  A plan is a capsule the Python
 * side keeps; nothing here is process-global but the replay pointer
 * replay_py.c owns.  At each call _rp_region_call checks the plan's guards
 * (no effect happens before all of them held), binds the slots, performs
 * the Python effects the template stands for (each optimizer-state counter
 * += 1), and runs the template; a guard that fails is counted with its
 * reason and the Python runs (under strict replay it raises).
 */
#include <string.h>

#include "jn_autocast.h"
#include "jn_autograd.h"
#include "jn_py.h"
#include "jn_region.h"
#include "jn_replay.h"
#include "jn_runtime.h"

enum { K_PARAMS = 0, K_VAL = 1, K_EQ = 2, K_TENSOR = 3, K_COUNTER = 4 };

typedef struct {
    PyObject *key;
    int kind, idx;      /* K_PARAMS: count; K_VAL / K_COUNTER: value index */
    PyObject *val;      /* K_EQ: the value; K_VAL: its type */
} rg_entry;

typedef struct {
    int n;
    rg_entry *e;
} rg_dict;

typedef struct {
    int dtype, device, ndim;
    int64_t shape[JN_MAX_DIMS], strides[JN_MAX_DIMS];
} rg_meta;

/* The entry check's flat form (3.11: PEP 509 dict versions), filled when
 * the full walk (check) held: every dict the walk read, held with the
 * version it had then (or had after the call's own counter writes), the
 * parameter list items by identity, and per bound slot the tensor object
 * (NULL: the gradient of parameter pidx).  While every version and item is
 * as held, the walk would read the same entries: only the bound tensors'
 * metadata and the gradients are checked (fast_ok). */
typedef struct {
    int valid;
    uint64_t inst_ver, state_ver;
    PyObject **gd;      /* per group: its dict (strong) */
    PyObject **plist;   /* per group: its params list (borrowed: gd holds it) */
    int *plen;
    uint64_t *gver;
    PyObject **sd;      /* per parameter: its state dict (strong) or NULL */
    uint64_t *sver;
    PyObject **obj;     /* per bound slot (borrowed: the dicts and lists held) */
    int *pidx;
    int *cidx;          /* per counter: its value index */
    double *cnt;        /* per counter: its value now */
} rg_fast;

typedef struct {
    int id;             /* the template's id in the replay */
    char *name;
    PyTypeObject *cls;
    unsigned int tag;
    PyObject *fn, *code;
    PyObject *groups_obj, *state_obj; /* opt.param_groups, opt.state (guarded attributes) */
    int nattr, nglob, ngroups, nparams, nbound, nvals, autocast;
    PyObject **attr_name, **attr_val;
    PyObject **gdict, **gkey, **gval;
    uint64_t *gver;     /* per global: its dict's version tag when last seen holding the value */
    rg_dict *groups;
    int *has_grad;
    rg_dict *pstate;
    rg_meta *meta;
    /* scratch for a call */
    jn_tensor **bound;
    double *vals;
    PyObject **params;
    PyObject **cnt_dict, **cnt_key;
    int ncnt;
    rg_fast fast;
} rg_plan;

static void dict_free(rg_dict *d) {
    for (int i = 0; d->e && i < d->n; i++) Py_XDECREF(d->e[i].key), Py_XDECREF(d->e[i].val);
    PyMem_Free(d->e);
}

static void plan_free(rg_plan *P) {
    if (!P) return;
    PyMem_Free(P->name);
    Py_XDECREF(P->cls), Py_XDECREF(P->fn), Py_XDECREF(P->code);
    Py_XDECREF(P->groups_obj), Py_XDECREF(P->state_obj);
    for (int i = 0; i < P->nattr; i++) Py_XDECREF(P->attr_name[i]), Py_XDECREF(P->attr_val[i]);
    for (int i = 0; i < P->nglob; i++) Py_XDECREF(P->gdict[i]), Py_XDECREF(P->gkey[i]), Py_XDECREF(P->gval[i]);
    for (int i = 0; P->groups && i < P->ngroups; i++) dict_free(&P->groups[i]);
    for (int i = 0; P->pstate && i < P->nparams; i++) dict_free(&P->pstate[i]);
    PyMem_Free(P->attr_name), PyMem_Free(P->attr_val), PyMem_Free(P->gdict), PyMem_Free(P->gkey);
    PyMem_Free(P->gval), PyMem_Free(P->gver), PyMem_Free(P->groups), PyMem_Free(P->has_grad), PyMem_Free(P->pstate);
    PyMem_Free(P->meta), PyMem_Free(P->bound), PyMem_Free(P->vals), PyMem_Free(P->params);
    PyMem_Free(P->cnt_dict), PyMem_Free(P->cnt_key);
    rg_fast *F = &P->fast;
    for (int g = 0; F->gd && g < P->ngroups; g++) Py_XDECREF(F->gd[g]);
    for (int k = 0; F->sd && k < P->nparams; k++) Py_XDECREF(F->sd[k]);
    PyMem_Free(F->gd), PyMem_Free(F->plist), PyMem_Free(F->plen), PyMem_Free(F->gver), PyMem_Free(F->sd);
    PyMem_Free(F->sver), PyMem_Free(F->obj), PyMem_Free(F->pidx), PyMem_Free(F->cidx), PyMem_Free(F->cnt);
    PyMem_Free(P);
}

static void capsule_free(PyObject *cap) { plan_free(PyCapsule_GetPointer(cap, "janus.region")); }

static void *zalloc(Py_ssize_t n, size_t el) {
    void *p = PyMem_Calloc((size_t)(n ? n : 1), el);
    if (!p) PyErr_NoMemory();
    return p;
}

/* (key, kind, arg) entries of a dict's layout; *ncnt counts K_COUNTER */
static int parse_dict(PyObject *t, rg_dict *d, int nvals, int *ncnt) {
    if (!PyTuple_Check(t)) return PyErr_SetString(PyExc_TypeError, "region plan: a dict layout is a tuple"), -1;
    d->n = (int)PyTuple_GET_SIZE(t);
    if (!(d->e = zalloc(d->n, sizeof *d->e))) return -1;
    for (int i = 0; i < d->n; i++) {
        PyObject *key, *arg;
        int kind;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(t, i), "OiO", &key, &kind, &arg)) return -1;
        rg_entry *e = &d->e[i];
        e->key = Py_NewRef(key);
        e->kind = kind;
        if (kind == K_PARAMS || kind == K_COUNTER) {
            e->idx = (int)PyLong_AsLong(arg);
            if (PyErr_Occurred()) return -1;
            if (kind == K_COUNTER) ++*ncnt;
        } else if (kind == K_VAL) {
            PyObject *type;
            if (!PyArg_ParseTuple(arg, "iO", &e->idx, &type)) return -1;
            e->val = Py_NewRef(type);
        } else if (kind == K_EQ) {
            e->val = Py_NewRef(arg);
        } else if (kind != K_TENSOR) {
            return PyErr_Format(PyExc_ValueError, "region plan: entry kind %d", kind), -1;
        }
        if ((kind == K_VAL || kind == K_COUNTER) && (e->idx < 0 || e->idx >= nvals))
            return PyErr_SetString(PyExc_ValueError, "region plan: a value index out of range"), -1;
    }
    return 0;
}

static int parse_ints(PyObject *t, int64_t *v, int n) {
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != n)
        return PyErr_SetString(PyExc_ValueError, "region plan: a shape of another length"), -1;
    for (int i = 0; i < n; i++)
        if ((v[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(t, i))) == -1 && PyErr_Occurred()) return -1;
    return 0;
}

/* Register the template (nslots, ops, consts) of region `name` with nb
 * bound slots; ops are (log index, mode, ins, outs, avals) over the
 * observation log that is still current.  Its id, or -1 with an exception. */
static int add_template(const char *name, PyObject *tmpl, int nb, int nvals) {
    int nslots;
    PyObject *ops, *consts;
    if (!PyTuple_Check(tmpl) || !PyArg_ParseTuple(tmpl, "iO!O!", &nslots, &PyTuple_Type, &ops, &PyTuple_Type, &consts)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "region template: a tuple");
        return -1;
    }
    int64_t nlog, nsync;
    const jn_rp_region_event *log = jn_rp_region_log(jn_py_replay, &nlog, &nsync);
    Py_ssize_t nops = PyTuple_GET_SIZE(ops), nc = PyTuple_GET_SIZE(consts);
    jn_rp_region_op *to = zalloc(nops, sizeof *to);
    jn_rp_region_const *tc = zalloc(nc, sizeof *tc);
    int ok = to && tc, id = -1;
    for (Py_ssize_t k = 0; ok && k < nops; k++) {
        long long li;
        PyObject *ins, *outs, *avals;
        jn_rp_region_op *o = &to[k];
        ok = PyArg_ParseTuple(PyTuple_GET_ITEM(ops, k), "LiO!O!O!", &li, &o->mode, &PyTuple_Type, &ins, &PyTuple_Type,
                              &outs, &PyTuple_Type, &avals);
        if (ok && (li < 0 || li >= nlog)) ok = (PyErr_SetString(PyExc_ValueError, "region template: log index"), 0);
        if (!ok) break;
        const jn_rp_region_event *e = &log[li];
        o->op = e->op, o->a = e->a, o->grad = (int8_t)e->grad;
        o->nin = (int)PyTuple_GET_SIZE(ins), o->nout = (int)PyTuple_GET_SIZE(outs);
        int na = jn_op_info(e->op)->nattrs;
        if (o->nin != e->nin || o->nout != e->nout || PyTuple_GET_SIZE(avals) != na) {
            ok = (PyErr_SetString(PyExc_ValueError, "region template: arity differs from the log"), 0);
            break;
        }
        for (int i = 0; i < o->nin; i++) o->in[i] = (int32_t)PyLong_AsLong(PyTuple_GET_ITEM(ins, i));
        for (int q = 0; q < o->nout; q++) o->out[q] = (int32_t)PyLong_AsLong(PyTuple_GET_ITEM(outs, q));
        for (int j = 0; j < na; j++) o->aval[j] = (int32_t)PyLong_AsLong(PyTuple_GET_ITEM(avals, j));
        if (PyErr_Occurred()) ok = 0;
    }
    for (Py_ssize_t k = 0; ok && k < nc; k++)
        ok = PyArg_ParseTuple(PyTuple_GET_ITEM(consts, k), "di", &tc[k].v, &tc[k].dtype);
    if (ok && (id = jn_rp_region_add(jn_py_replay, name, nb, nslots, nvals, to, (int)nops, tc, (int)nc)) < 0)
        PyErr_Format(PyExc_ValueError, "%s", jn_errmsg());
    PyMem_Free(to), PyMem_Free(tc);
    return ok ? id : -1;
}

/* _rp_region_new(plan, template) -> capsule.  See janus/_region.py for the layout. */
static PyObject *py_rg_new(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *plan, *tmpl;
    if (!PyArg_ParseTuple(args, "O!O!", &PyTuple_Type, &plan, &PyTuple_Type, &tmpl)) return NULL;
    if (!jn_py_replay) return PyErr_Format(PyExc_RuntimeError, "no replay runs in this process");
    const char *name;
    PyObject *cls, *fn, *groups_obj, *state_obj, *attrs, *globs, *groups, *params, *metas;
    int nvals;
    if (!PyArg_ParseTuple(plan, "sO!OOOO!O!O!O!O!i", &name, &PyType_Type, &cls, &fn, &groups_obj, &state_obj,
                          &PyTuple_Type, &attrs, &PyTuple_Type, &globs, &PyTuple_Type, &groups, &PyTuple_Type,
                          &params, &PyTuple_Type, &metas, &nvals))
        return NULL;
    if (!PyFunction_Check(fn)) return PyErr_Format(PyExc_TypeError, "region plan: the step is no function");
    rg_plan *P = PyMem_Calloc(1, sizeof *P);
    if (!P) return PyErr_NoMemory();
    P->id = -1;
    size_t ln = strlen(name) + 1;
    if (!(P->name = PyMem_Malloc(ln))) goto nomem;
    memcpy(P->name, name, ln);
    /* an attribute lookup gives the class a valid version tag (CPython assigns it lazily) */
    PyObject *probe = PyObject_GetAttrString(cls, "step");
    if (!probe) goto fail;
    Py_DECREF(probe);
    P->cls = (PyTypeObject *)Py_NewRef(cls);
    P->tag = P->cls->tp_version_tag;
    P->fn = Py_NewRef(fn);
    P->code = Py_NewRef(PyFunction_GET_CODE(fn));
    P->groups_obj = Py_NewRef(groups_obj);
    P->state_obj = Py_NewRef(state_obj);
    if (!PyList_Check(groups_obj) || !PyDict_Check(state_obj)) {
        PyErr_SetString(PyExc_TypeError, "region plan: param_groups is a list, state a dict");
        goto fail;
    }
    P->nvals = nvals, P->autocast = jn_autocast_active();
    P->nattr = (int)PyTuple_GET_SIZE(attrs);
    if (!(P->attr_name = zalloc(P->nattr, sizeof(PyObject *))) || !(P->attr_val = zalloc(P->nattr, sizeof(PyObject *))))
        goto fail;
    for (int i = 0; i < P->nattr; i++) {
        PyObject *k, *v;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(attrs, i), "UO", &k, &v)) goto fail;
        P->attr_name[i] = Py_NewRef(k), P->attr_val[i] = Py_NewRef(v);
    }
    P->nglob = (int)PyTuple_GET_SIZE(globs);
    if (!(P->gdict = zalloc(P->nglob, sizeof(PyObject *))) || !(P->gkey = zalloc(P->nglob, sizeof(PyObject *))) ||
        !(P->gval = zalloc(P->nglob, sizeof(PyObject *))) || !(P->gver = zalloc(P->nglob, sizeof(uint64_t))))
        goto fail;
    for (int i = 0; i < P->nglob; i++) {
        PyObject *d, *k, *v;
        int present;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(globs, i), "O!UOp", &PyDict_Type, &d, &k, &v, &present)) goto fail;
        P->gdict[i] = Py_NewRef(d), P->gkey[i] = Py_NewRef(k), P->gval[i] = present ? Py_NewRef(v) : NULL;
    }
    P->ngroups = (int)PyTuple_GET_SIZE(groups);
    if (!(P->groups = zalloc(P->ngroups, sizeof *P->groups))) goto fail;
    int ncnt = 0, nparams_seen = 0;
    for (int g = 0; g < P->ngroups; g++) {
        if (parse_dict(PyTuple_GET_ITEM(groups, g), &P->groups[g], nvals, &ncnt)) goto fail;
        for (int i = 0; i < P->groups[g].n; i++)
            if (P->groups[g].e[i].kind == K_PARAMS) nparams_seen += P->groups[g].e[i].idx;
    }
    if (ncnt) {
        PyErr_SetString(PyExc_ValueError, "region plan: a counter in a param group");
        goto fail;
    }
    P->nparams = (int)PyTuple_GET_SIZE(params);
    if (P->nparams != nparams_seen) {
        PyErr_SetString(PyExc_ValueError, "region plan: the groups' parameter counts and the parameters differ");
        goto fail;
    }
    if (!(P->has_grad = zalloc(P->nparams, sizeof(int))) || !(P->pstate = zalloc(P->nparams, sizeof *P->pstate)))
        goto fail;
    int nb = 0;
    for (int k = 0; k < P->nparams; k++) {
        PyObject *st;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(params, k), "pO", &P->has_grad[k], &st)) goto fail;
        nb += 1 + P->has_grad[k];
        if (st == Py_None) {
            P->pstate[k].n = -1; /* no state: must stay so */
            continue;
        }
        if (parse_dict(st, &P->pstate[k], nvals, &ncnt)) goto fail;
        for (int i = 0; i < P->pstate[k].n; i++) nb += P->pstate[k].e[i].kind == K_TENSOR;
    }
    P->nbound = (int)PyTuple_GET_SIZE(metas);
    if (P->nbound != nb) {
        PyErr_SetString(PyExc_ValueError, "region plan: the metadata do not cover the bound tensors");
        goto fail;
    }
    if (!(P->meta = zalloc(nb, sizeof *P->meta))) goto fail;
    for (int i = 0; i < nb; i++) {
        rg_meta *m = &P->meta[i];
        PyObject *shape, *strides;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(metas, i), "iiO!O!", &m->dtype, &m->device, &PyTuple_Type, &shape,
                              &PyTuple_Type, &strides))
            goto fail;
        m->ndim = (int)PyTuple_GET_SIZE(shape);
        if (m->ndim > JN_MAX_DIMS || parse_ints(shape, m->shape, m->ndim) || parse_ints(strides, m->strides, m->ndim)) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "region plan: too many dims");
            goto fail;
        }
    }
    P->ncnt = ncnt;
    if (!(P->bound = zalloc(nb, sizeof(jn_tensor *))) || !(P->vals = zalloc(nvals, sizeof(double))) ||
        !(P->params = zalloc(P->nparams, sizeof(PyObject *))) || !(P->cnt_dict = zalloc(ncnt, sizeof(PyObject *))) ||
        !(P->cnt_key = zalloc(ncnt, sizeof(PyObject *))))
        goto fail;
    rg_fast *F = &P->fast;
    if (!(F->gd = zalloc(P->ngroups, sizeof(PyObject *))) || !(F->plist = zalloc(P->ngroups, sizeof(PyObject *))) ||
        !(F->plen = zalloc(P->ngroups, sizeof(int))) || !(F->gver = zalloc(P->ngroups, sizeof(uint64_t))) ||
        !(F->sd = zalloc(P->nparams, sizeof(PyObject *))) || !(F->sver = zalloc(P->nparams, sizeof(uint64_t))) ||
        !(F->obj = zalloc(nb, sizeof(PyObject *))) || !(F->pidx = zalloc(nb, sizeof(int))) ||
        !(F->cidx = zalloc(ncnt, sizeof(int))) || !(F->cnt = zalloc(ncnt, sizeof(double))))
        goto fail;

    if ((P->id = add_template(name, tmpl, nb, nvals)) < 0) goto fail;
    PyObject *cap = PyCapsule_New(P, "janus.region", capsule_free);
    if (!cap) plan_free(P);
    return cap;
nomem:
    PyErr_NoMemory();
fail:
    plan_free(P);
    return NULL;
}

static int meta_ok(const rg_meta *m, const jn_tensor *t) {
    if ((int)t->dtype != m->dtype || t->ndim != m->ndim || t->wrapped_number || !t->storage ||
        (int)t->storage->device != m->device)
        return 0;
    for (int d = 0; d < m->ndim; d++)
        if (t->shape[d] != m->shape[d] || t->strides[d] != m->strides[d]) return 0;
    return 1;
}

static int same_value(PyObject *v, PyObject *want) {
    if (v == want) return 1;
    if (!v || !want || Py_TYPE(v) != Py_TYPE(want)) return 0;
    int r = PyObject_RichCompareBool(v, want, Py_EQ);
    if (r < 0) PyErr_Clear();
    return r == 1;
}

typedef struct {
    char buf[512];
} rg_why;

#define MISS(...) (snprintf(W->buf, sizeof W->buf, __VA_ARGS__), W->buf)

/* Bind p's tensor to the next slot if its metadata hold. */
static int bind(rg_plan *P, int *nb, jn_tensor *t) {
    if (*nb >= P->nbound || !meta_ok(&P->meta[*nb], t)) return 0;
    P->bound[(*nb)++] = t;
    return 1;
}

/* Every guard of the plan on opt; NULL when all held (slots bound, values
 * and counters read), else why not.  Nothing is written. */
static const char *check(rg_plan *P, PyObject *opt, rg_why *W) {
    if (Py_TYPE(opt) != P->cls) return MISS("the optimizer is a %s, the region was learned on a %s", Py_TYPE(opt)->tp_name, P->cls->tp_name);
    if (!(P->cls->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) || P->cls->tp_version_tag != P->tag)
        return MISS("class %s or one of its bases was modified (a method or attribute replaced)", P->cls->tp_name);
    if (PyFunction_GET_CODE(P->fn) != P->code) return MISS("the step function's code was replaced");
    if (jn_grad_enabled()) return MISS("grad mode is on (the region runs without autograd recording)");
    if (jn_autocast_active() != P->autocast) return MISS("autocast %s", P->autocast ? "is off" : "is on");
    PyObject **dp = _PyObject_GetDictPtr(opt);
    PyObject *d = dp ? *dp : NULL;
    if (!d) return MISS("the optimizer has no instance dict");
    for (int i = 0; i < P->nattr; i++)
        if (PyDict_GetItemWithError(d, P->attr_name[i]) != P->attr_val[i]) {
            PyErr_Clear();
            return MISS("attribute %s of the optimizer changed", PyUnicode_AsUTF8(P->attr_name[i]));
        }
    for (int i = 0; i < P->nglob; i++) {
#if PY_VERSION_HEX < 0x030C0000
        /* a dict's version tag (PEP 509) changes with every write: a module nothing
         * assigned to since its names were checked needs no lookup */
        if (((PyDictObject *)P->gdict[i])->ma_version_tag == P->gver[i]) continue;
#endif
        if (PyDict_GetItemWithError(P->gdict[i], P->gkey[i]) != P->gval[i]) {
            PyErr_Clear();
            return MISS("global %s changed", PyUnicode_AsUTF8(P->gkey[i]));
        }
#if PY_VERSION_HEX < 0x030C0000
        P->gver[i] = ((PyDictObject *)P->gdict[i])->ma_version_tag;
#endif
    }
    PyObject *groups = P->groups_obj, *state = P->state_obj;
    if (PyList_GET_SIZE(groups) != P->ngroups) return MISS("param_groups has %zd groups, %d were learned", PyList_GET_SIZE(groups), P->ngroups);
    int np = 0, nb = 0, nc = 0;
    for (int g = 0; g < P->ngroups; g++) {
        PyObject *gd = PyList_GET_ITEM(groups, g);
        const rg_dict *L = &P->groups[g];
        if (!PyDict_CheckExact(gd) || PyDict_GET_SIZE(gd) != L->n) return MISS("param group %d's keys changed", g);
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        for (int i = 0; PyDict_Next(gd, &pos, &k, &v); i++) {
            const rg_entry *e = &L->e[i];
            if (k != e->key && !same_value(k, e->key)) return MISS("param group %d's keys changed", g);
            if (e->kind == K_PARAMS) {
                if (!PyList_CheckExact(v) || PyList_GET_SIZE(v) != e->idx) return MISS("param group %d's parameter list changed", g);
                for (int j = 0; j < e->idx; j++) P->params[np++] = PyList_GET_ITEM(v, j);
            } else if (e->kind == K_VAL) {
                if ((PyObject *)Py_TYPE(v) != e->val) return MISS("param group %d's %s is a %s now", g, PyUnicode_AsUTF8(k), Py_TYPE(v)->tp_name);
                P->vals[e->idx] = PyFloat_CheckExact(v) ? PyFloat_AS_DOUBLE(v) : PyLong_AsDouble(v);
                if (PyErr_Occurred()) return PyErr_Clear(), MISS("param group %d's %s is out of range", g, PyUnicode_AsUTF8(k));
            } else if (!same_value(v, e->val)) {
                return MISS("param group %d's %s changed", g, PyUnicode_AsUTF8(k));
            }
        }
    }
    for (int k = 0; k < P->nparams; k++) {
        PyObject *p = P->params[k];
        if (!JnTensor_Check(p) || !bind(P, &nb, JN_T(p))) return MISS("parameter %d's dtype, device, shape or layout changed", k);
        jn_tensor *gr = jn_grad(JN_T(p));
        if (!gr != !P->has_grad[k]) return MISS("parameter %d %s a gradient now", k, gr ? "has" : "has no");
        if (gr && !bind(P, &nb, gr)) return MISS("the gradient of parameter %d changed dtype, device, shape or layout", k);
        PyObject *st = PyDict_GetItemWithError(state, p);
        if (!st) PyErr_Clear();
        const rg_dict *L = &P->pstate[k];
        if (L->n < 0) {
            if (st) return MISS("parameter %d has optimizer state now", k);
            continue;
        }
        if (!st || !PyDict_CheckExact(st) || PyDict_GET_SIZE(st) != L->n) return MISS("the optimizer state of parameter %d changed", k);
        Py_ssize_t pos = 0;
        PyObject *key, *v;
        for (int i = 0; PyDict_Next(st, &pos, &key, &v); i++) {
            const rg_entry *e = &L->e[i];
            if (key != e->key && !same_value(key, e->key)) return MISS("the optimizer state of parameter %d changed", k);
            if (e->kind == K_TENSOR) {
                if (!JnTensor_Check(v) || !bind(P, &nb, JN_T(v)))
                    return MISS("state %s of parameter %d changed dtype, device, shape or layout", PyUnicode_AsUTF8(key), k);
            } else if (e->kind == K_COUNTER) {
                if (!PyFloat_CheckExact(v)) return MISS("state %s of parameter %d is no float now", PyUnicode_AsUTF8(key), k);
                P->vals[e->idx] = PyFloat_AS_DOUBLE(v) + 1.0;
                P->cnt_dict[nc] = st, P->cnt_key[nc++] = key;
            } else if (!same_value(v, e->val)) {
                return MISS("state %s of parameter %d changed", PyUnicode_AsUTF8(key), k);
            }
        }
    }
    return NULL;
}

#if PY_VERSION_HEX < 0x030C0000
#define DICT_VER(d) (((PyDictObject *)(d))->ma_version_tag)

static void fast_clear(rg_plan *P) {
    rg_fast *F = &P->fast;
    F->valid = 0;
    for (int g = 0; g < P->ngroups; g++) Py_CLEAR(F->gd[g]);
    for (int k = 0; k < P->nparams; k++) Py_CLEAR(F->sd[k]);
}

/* After check() held on opt: what it read, held for fast_ok. */
static void fast_fill(rg_plan *P, PyObject *opt) {
    rg_fast *F = &P->fast;
    fast_clear(P);
    PyObject **dp = _PyObject_GetDictPtr(opt);
    F->inst_ver = DICT_VER(*dp);
    F->state_ver = DICT_VER(P->state_obj);
    for (int g = 0, np = 0; g < P->ngroups; g++) {
        PyObject *gd = PyList_GET_ITEM(P->groups_obj, g);
        F->gd[g] = Py_NewRef(gd), F->gver[g] = DICT_VER(gd), F->plist[g] = NULL, F->plen[g] = 0;
        for (int i = 0; i < P->groups[g].n; i++)
            if (P->groups[g].e[i].kind == K_PARAMS) {
                F->plist[g] = PyDict_GetItem(gd, P->groups[g].e[i].key);
                F->plen[g] = P->groups[g].e[i].idx;
                np += F->plen[g];
            }
    }
    int nb = 0, nc = 0;
    for (int k = 0; k < P->nparams; k++) {
        F->obj[nb++] = P->params[k];
        if (P->has_grad[k]) F->obj[nb] = NULL, F->pidx[nb++] = k;
        const rg_dict *L = &P->pstate[k];
        if (L->n < 0) continue;
        PyObject *st = PyDict_GetItem(P->state_obj, P->params[k]);
        F->sd[k] = Py_NewRef(st), F->sver[k] = DICT_VER(st);
        Py_ssize_t pos = 0;
        PyObject *key, *v;
        for (int i = 0; PyDict_Next(st, &pos, &key, &v); i++) {
            if (L->e[i].kind == K_TENSOR) F->obj[nb++] = v;
            else if (L->e[i].kind == K_COUNTER) F->cidx[nc] = L->e[i].idx, F->cnt[nc++] = PyFloat_AS_DOUBLE(v);
        }
    }
    F->valid = nb == P->nbound && nc == P->ncnt;
}

/* Every guard of check(), from what fast_fill held: 1 when they hold (slots
 * bound, values read), 0 when the walk must run (it says why). */
static int fast_ok(rg_plan *P, PyObject *opt) {
    rg_fast *F = &P->fast;
    if (!F->valid || Py_TYPE(opt) != P->cls || !(P->cls->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) ||
        P->cls->tp_version_tag != P->tag || PyFunction_GET_CODE(P->fn) != P->code || jn_grad_enabled() ||
        jn_autocast_active() != P->autocast)
        return 0;
    PyObject **dp = _PyObject_GetDictPtr(opt);
    if (!dp || !*dp || DICT_VER(*dp) != F->inst_ver || DICT_VER(P->state_obj) != F->state_ver) return 0;
    for (int i = 0; i < P->nglob; i++)
        if (DICT_VER(P->gdict[i]) != P->gver[i]) return 0;
    PyObject *groups = P->groups_obj;
    if (PyList_GET_SIZE(groups) != P->ngroups) return 0;
    int np = 0;
    for (int g = 0; g < P->ngroups; g++) {
        PyObject *l = F->plist[g];
        if (PyList_GET_ITEM(groups, g) != F->gd[g] || DICT_VER(F->gd[g]) != F->gver[g]) return 0;
        if (l) {
            if (PyList_GET_SIZE(l) != F->plen[g]) return 0;
            for (int j = 0; j < F->plen[g]; j++)
                if (PyList_GET_ITEM(l, j) != P->params[np++]) return 0;
        }
    }
    for (int k = 0; k < P->nparams; k++) {
        if (F->sd[k] && DICT_VER(F->sd[k]) != F->sver[k]) return 0;
        if (!P->has_grad[k] && jn_grad(JN_T(P->params[k]))) return 0;
    }
    for (int i = 0; i < P->nbound; i++) {
        jn_tensor *t = F->obj[i] ? JN_T(F->obj[i]) : jn_grad(JN_T(P->params[F->pidx[i]]));
        if (!t || !meta_ok(&P->meta[i], t)) return 0;
        P->bound[i] = t;
    }
    for (int c = 0; c < P->ncnt; c++) P->vals[F->cidx[c]] = F->cnt[c] + 1.0;
    return 1;
}

/* After the call wrote the counters: the state dicts' new versions and values. */
static void fast_written(rg_plan *P) {
    rg_fast *F = &P->fast;
    if (!F->valid) return;
    for (int c = 0; c < P->ncnt; c++) F->cnt[c] += 1.0;
    for (int k = 0; k < P->nparams; k++)
        if (F->sd[k]) F->sver[k] = DICT_VER(F->sd[k]);
}
#else
static void fast_clear(rg_plan *P) { P->fast.valid = 0; }
static void fast_fill(rg_plan *P, PyObject *opt) { (void)P, (void)opt; }
static int fast_ok(rg_plan *P, PyObject *opt) { return (void)P, (void)opt, 0; }
static void fast_written(rg_plan *P) { (void)P; }
#endif

/* The entry check: the flat form when it holds, else the walk (which fills it). */
static const char *entry_check(rg_plan *P, PyObject *opt, rg_why *W) {
    if (fast_ok(P, opt)) return NULL;
    const char *why = check(P, opt, W);
    if (why) fast_clear(P);
    else fast_fill(P, opt);
    return why;
}

/* _rp_region_call(plan, opt) -> True (ran from the template) or False (a
 * guard failed: counted, the caller runs the Python). */
static PyObject *py_rg_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2) return PyErr_Format(PyExc_TypeError, "_rp_region_call(plan, optimizer)");
    PyObject *cap = args[0], *opt = args[1];
    rg_plan *P = PyCapsule_GetPointer(cap, "janus.region");
    if (!P) return NULL;
    if (!jn_py_replay) Py_RETURN_FALSE;
    rg_why W;
    const char *why = entry_check(P, opt, &W);
    if (why) {
        jn_rp_region_note(jn_py_replay, P->name, why, 0);
        if (jn_rp_region_strict(jn_py_replay))
            return PyErr_Format(PyExc_RuntimeError, "janus replay (strict): region %s ran its Python: %s", P->name, why);
        Py_RETURN_FALSE;
    }
    /* the Python effects the template stands for: optimizer-state counters += 1 */
    for (int i = 0; i < P->ncnt; i++) {
        PyObject *v = PyDict_GetItem(P->cnt_dict[i], P->cnt_key[i]);
        PyObject *nv = PyFloat_FromDouble(PyFloat_AS_DOUBLE(v) + 1.0);
        if (!nv || PyDict_SetItem(P->cnt_dict[i], P->cnt_key[i], nv)) {
            Py_XDECREF(nv);
            return NULL;
        }
        Py_DECREF(nv);
    }
    fast_written(P);
    jn_status s = jn_rp_region_run(jn_py_replay, P->id, P->bound, P->vals, 0, NULL, NULL);
    if (s) return jn_py_raise(s);
    Py_RETURN_TRUE;
}

/* _rp_region_check(plan, opt[, walk]) -> None when every guard holds, else why not
 * (no effect: what the entry costs, for benchmarks/bench_regions.py); walk true: the
 * full walk every time, the flat form not used (what the entry cost before it). */
static PyObject *py_rg_check(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2 && nargs != 3) return PyErr_Format(PyExc_TypeError, "_rp_region_check(plan, optimizer[, walk])");
    rg_plan *P = PyCapsule_GetPointer(args[0], "janus.region");
    if (!P) return NULL;
    rg_why W;
    int walk = nargs == 3 && PyObject_IsTrue(args[2]) == 1;
    const char *why = walk ? check(P, args[1], &W) : entry_check(P, args[1], &W);
    if (why) return PyUnicode_FromString(why);
    Py_RETURN_NONE;
}

/* _rp_region_observe(on): start (clearing the log) or stop observing. */
static PyObject *py_rg_observe(PyObject *self, PyObject *on) {
    (void)self;
    if (jn_py_replay) jn_rp_region_observe(jn_py_replay, PyObject_IsTrue(on));
    Py_RETURN_NONE;
}

/* _rp_region_log() -> (nsync, [(op name, inplace, grad mode, in ids, in scalars, out ids, attrs)]):
 * in scalars: per input None or (value, dtype code) for a wrapped number;
 * attrs: (name, kind, value) in schema order (jn_attr_kind as a letter). */
static PyObject *py_rg_log(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    if (!jn_py_replay) Py_RETURN_NONE;
    int64_t n, nsync;
    const jn_rp_region_event *log = jn_rp_region_log(jn_py_replay, &n, &nsync);
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (!list) return NULL;
    for (int64_t k = 0; k < n; k++) {
        const jn_rp_region_event *e = &log[k];
        const jn_opinfo *oi = jn_op_info(e->op);
        PyObject *ins = PyTuple_New(e->nin), *sc = PyTuple_New(e->nin), *outs = PyTuple_New(e->nout);
        PyObject *at = PyTuple_New(oi->nattrs), *det = PyList_New(0);
        int ok = ins && sc && outs && at && det;
        for (int i = 0; ok && i < e->nin; i++)
            if (e->in_det[i]) {
                PyObject *v = PyLong_FromLong(i);
                ok = v && !PyList_Append(det, v);
                Py_XDECREF(v);
            }
        for (int i = 0; ok && i < e->nin; i++) {
            PyTuple_SET_ITEM(ins, i, PyLong_FromLongLong(e->in_id[i]));
            PyTuple_SET_ITEM(sc, i, e->in_wrapped[i] ? Py_BuildValue("(di)", e->in_val[i], (int)e->in_dtype[i]) : Py_NewRef(Py_None));
        }
        for (int q = 0; ok && q < e->nout; q++) PyTuple_SET_ITEM(outs, q, PyLong_FromLongLong(e->out_id[q]));
        for (int j = 0; ok && j < oi->nattrs; j++) {
            PyObject *v;
            char kind[2] = {oi->attr_kind[j], 0};
            switch (oi->attr_kind[j]) {
            case JN_A_FLOAT: v = Py_BuildValue("(ssd)", oi->attr_name[j], kind, e->a.a[j].f); break;
            case JN_A_INTS: {
                PyObject *l = PyTuple_New(e->a.a[j].l.n);
                for (int q = 0; l && q < e->a.a[j].l.n; q++) PyTuple_SET_ITEM(l, q, PyLong_FromLongLong(e->a.a[j].l.v[q]));
                v = l ? Py_BuildValue("(ssN)", oi->attr_name[j], kind, l) : NULL;
                break;
            }
            default: v = Py_BuildValue("(ssL)", oi->attr_name[j], kind, (long long)e->a.a[j].i);
            }
            if (!v) ok = 0;
            else PyTuple_SET_ITEM(at, j, v);
        }
        if (ok && PyErr_Occurred()) ok = 0;
        PyObject *row = ok ? Py_BuildValue("(siiOOOOO)", oi->name, (oi->flags & JN_F_INPLACE) != 0, (int)e->grad, ins, sc,
                                           outs, at, det)
                           : NULL;
        Py_XDECREF(ins), Py_XDECREF(sc), Py_XDECREF(outs), Py_XDECREF(at), Py_XDECREF(det);
        if (!row) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)k, row);
    }
    return Py_BuildValue("(LN)", (long long)nsync, list);
}

/* _rp_region_detached(t) -> is t a header detach made while the last call was observed. */
static PyObject *py_rg_detached(PyObject *self, PyObject *o) {
    (void)self;
    return PyBool_FromLong(jn_py_replay && JnTensor_Check(o) && jn_rp_region_detached(jn_py_replay, JN_T(o)));
}

/* _rp_region_meta(t) -> (id, dtype, device, shape, strides): what a bound tensor is guarded on. */
static PyObject *py_rg_meta(PyObject *self, PyObject *o) {
    (void)self;
    if (!JnTensor_Check(o)) return PyErr_Format(PyExc_TypeError, "_rp_region_meta: a tensor");
    const jn_tensor *t = JN_T(o);
    PyObject *sh = PyTuple_New(t->ndim), *st = PyTuple_New(t->ndim);
    if (!sh || !st) {
        Py_XDECREF(sh), Py_XDECREF(st);
        return NULL;
    }
    for (int d = 0; d < t->ndim; d++) {
        PyTuple_SET_ITEM(sh, d, PyLong_FromLongLong(t->shape[d]));
        PyTuple_SET_ITEM(st, d, PyLong_FromLongLong(t->strides[d]));
    }
    return Py_BuildValue("(LiiNN)", (long long)t->id, (int)t->dtype, t->storage ? (int)t->storage->device : 0, sh, st);
}

/* _rp_region_note(name, why, refused): a call that ran its Python. */
static PyObject *py_rg_note(PyObject *self, PyObject *args) {
    (void)self;
    const char *name, *why;
    int refused;
    if (!PyArg_ParseTuple(args, "ssp", &name, &why, &refused)) return NULL;
    if (jn_py_replay) jn_rp_region_note(jn_py_replay, name, why, refused);
    Py_RETURN_NONE;
}

/* _rp_region_stats() -> dict (None: no replay): calls, replaced, regions, replaceable,
 * refused, reasons [("<region>: <why>", count)] most frequent first, per_region
 * [(name, calls, replaced, refused)], batch_ops and batch_plans (jn_rp_region_stats). */
static PyObject *py_rg_stats(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    if (!jn_py_replay) Py_RETURN_NONE;
    jn_rp_region_stats st;
    jn_rp_region_get_stats(jn_py_replay, &st);
    PyObject *why = PyList_New(0);
    if (!why) return NULL;
    int64_t c;
    const char *w;
    for (int i = 0; (w = jn_rp_region_reason(jn_py_replay, i, &c)); i++) {
        PyObject *t = Py_BuildValue("(sL)", w, (long long)c);
        if (!t || PyList_Append(why, t)) {
            Py_XDECREF(t);
            Py_DECREF(why);
            return NULL;
        }
        Py_DECREF(t);
    }
    PyObject *per = PyList_New(0);
    if (!per) {
        Py_DECREF(why);
        return NULL;
    }
    int64_t calls, replaced;
    int refused;
    for (int i = 0; (w = jn_rp_region_info(jn_py_replay, i, &calls, &replaced, &refused)); i++) {
        PyObject *t = Py_BuildValue("(sLLO)", w, (long long)calls, (long long)replaced, refused ? Py_True : Py_False);
        if (!t || PyList_Append(per, t)) {
            Py_XDECREF(t);
            Py_DECREF(why), Py_DECREF(per);
            return NULL;
        }
        Py_DECREF(t);
    }
    return Py_BuildValue("{sLsLsisisisNsNsLsi}", "calls", (long long)st.calls, "replaced", (long long)st.replaced,
                         "regions", st.nregions, "replaceable", st.nreplaceable, "refused", st.nrefused, "reasons", why,
                         "per_region", per, "batch_ops", (long long)st.batch_ops, "batch_plans", st.batch_plans);
}


/* ------------------------------------------------------------------------
 * Module regions: a Module.__call__ (janus/_region.py, Regions.module).
 * The plan's entry guards are one flat array over dicts: an entry of a
 * module's instance dict, of its _parameters / _buffers / _modules, of a
 * module's globals or of an imported module the bytecode reads from, each
 * held by identity (G_IS), by value (G_EQ: numbers, strings), by identity
 * and content (G_CONTENT: a list or dict whose length or items decide a
 * loop), or absent (G_ABSENT: an instance attribute that would shadow the
 * class's, a patched forward).  On 3.11 a dict whose PEP 509 version is the
 * one seen when all its guards last held is skipped whole (contents are
 * always checked).  Then the classes' version tags, grad mode and
 * autocast, and per call the arguments against their spec: a tensor binds
 * a slot (dtype, device, shape, strides, requires_grad checked), a number
 * or None must be equal, a tuple or list recurses.  Nothing is written
 * before all hold; the template then runs with grad mode as observed per
 * op (autograd recorded by jn_dispatch as eagerly) and the output is
 * rebuilt from its spec. */
enum { G_IS = 0, G_EQ = 1, G_CONTENT = 2, G_ABSENT = 3 };

typedef struct {
    PyObject *dict, *key, *val; /* val: NULL for G_ABSENT */
    PyObject *items;            /* G_CONTENT: a list's items / a dict's (key, value) pairs, as a tuple */
    int kind, grp;              /* grp: the dict's row (version skip) */
} mg_guard;

typedef struct {
    int dtype, device, ndim, rg;
    int64_t shape[JN_MAX_DIMS], strides[JN_MAX_DIMS];
} mg_meta;

typedef struct {
    int id;
    char *name;
    int variant;                /* its region's variant number (the Nth learned), 0: not given */
    int grad, autocast;
    int ncls;
    PyTypeObject **cls;
    unsigned int *tag;
    int ng, nd;
    mg_guard *g;
    PyObject **dicts;
    uint64_t *dver;
    int *skip;
    PyObject *argspec, *outspec;
    int nargs, nargt, nfixed, nbound, nleaf;
    PyObject **fixed;
    mg_meta *meta;
    int32_t *leaf;
    jn_tensor **bound, **ret;
    PyObject **boundobj, **leafobj;
} mg_plan;

static void mplan_free(mg_plan *P) {
    if (!P) return;
    PyMem_Free(P->name);
    for (int i = 0; P->cls && i < P->ncls; i++) Py_XDECREF(P->cls[i]);
    for (int i = 0; P->g && i < P->ng; i++)
        Py_XDECREF(P->g[i].dict), Py_XDECREF(P->g[i].key), Py_XDECREF(P->g[i].val), Py_XDECREF(P->g[i].items);
    for (int i = 0; P->dicts && i < P->nd; i++) Py_XDECREF(P->dicts[i]);
    for (int i = 0; P->fixed && i < P->nfixed; i++) Py_XDECREF(P->fixed[i]);
    Py_XDECREF(P->argspec), Py_XDECREF(P->outspec);
    PyMem_Free(P->cls), PyMem_Free(P->tag), PyMem_Free(P->g), PyMem_Free(P->dicts), PyMem_Free(P->dver);
    PyMem_Free(P->skip), PyMem_Free(P->fixed), PyMem_Free(P->meta), PyMem_Free(P->leaf), PyMem_Free(P->bound);
    PyMem_Free(P->ret), PyMem_Free(P->boundobj), PyMem_Free(P->leafobj);
    PyMem_Free(P);
}

static void mcapsule_free(PyObject *cap) { mplan_free(PyCapsule_GetPointer(cap, "janus.mregion")); }

static int parse_meta(PyObject *t, mg_meta *m) {
    PyObject *shape, *strides;
    if (!PyArg_ParseTuple(t, "iiO!O!p", &m->dtype, &m->device, &PyTuple_Type, &shape, &PyTuple_Type, &strides, &m->rg))
        return -1;
    m->ndim = (int)PyTuple_GET_SIZE(shape);
    if (m->ndim > JN_MAX_DIMS || parse_ints(shape, m->shape, m->ndim) || parse_ints(strides, m->strides, m->ndim)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "region plan: too many dims");
        return -1;
    }
    return 0;
}

/* A spec of arguments (ints: slots < nslot) or of the output (ints: leaves < nslot):
 * int | (0, value) | (1, type, (specs)) | (2, type, keys, (specs)) (output only). */
static int spec_ok(PyObject *spec, int nslot, int out) {
    if (PyLong_CheckExact(spec)) {
        long k = PyLong_AsLong(spec);
        return k >= 0 && k < nslot;
    }
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) < 2) return 0;
    long kind = PyLong_AsLong(PyTuple_GET_ITEM(spec, 0));
    if (kind == 0) return PyTuple_GET_SIZE(spec) == 2;
    Py_ssize_t n = PyTuple_GET_SIZE(spec);
    if (!PyType_Check(PyTuple_GET_ITEM(spec, 1)) || !(kind == 1 ? n == 3 : kind == 2 && out && n == 4)) return 0;
    PyObject *sub = PyTuple_GET_ITEM(spec, n - 1);
    if (!PyTuple_Check(sub) || (kind == 2 && (!PyTuple_Check(PyTuple_GET_ITEM(spec, 2)) ||
                                              PyTuple_GET_SIZE(PyTuple_GET_ITEM(spec, 2)) != PyTuple_GET_SIZE(sub))))
        return 0;
    if (!out && PyTuple_GET_ITEM(spec, 1) != (PyObject *)&PyTuple_Type && PyTuple_GET_ITEM(spec, 1) != (PyObject *)&PyList_Type)
        return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(sub); i++)
        if (!spec_ok(PyTuple_GET_ITEM(sub, i), nslot, out)) return 0;
    return 1;
}

/* _rp_module_new(plan, template[, variant]) -> capsule.  plan: (name, grad, classes, guards,
 * dicts, argspec, nargt, fixed, metas, outspec, leaves); see janus/_region.py.
 * variant: which of its region's variants it is (the Nth learned), for the misses. */
static PyObject *py_mg_new(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *plan, *tmpl;
    int variant = 0;
    if (!PyArg_ParseTuple(args, "O!O!|i", &PyTuple_Type, &plan, &PyTuple_Type, &tmpl, &variant)) return NULL;
    if (!jn_py_replay) return PyErr_Format(PyExc_RuntimeError, "no replay runs in this process");
    const char *name;
    int grad, nargt;
    PyObject *classes, *guards, *dicts, *argspec, *fixed, *metas, *outspec, *leaves;
    if (!PyArg_ParseTuple(plan, "spO!O!O!O!iO!O!OO!", &name, &grad, &PyTuple_Type, &classes, &PyTuple_Type, &guards,
                          &PyTuple_Type, &dicts, &PyTuple_Type, &argspec, &nargt, &PyTuple_Type, &fixed, &PyTuple_Type,
                          &metas, &outspec, &PyTuple_Type, &leaves))
        return NULL;
    mg_plan *P = PyMem_Calloc(1, sizeof *P);
    if (!P) return PyErr_NoMemory();
    P->id = -1;
    P->variant = variant;
    size_t ln = strlen(name) + 1;
    if (!(P->name = PyMem_Malloc(ln))) {
        PyErr_NoMemory();
        goto fail;
    }
    memcpy(P->name, name, ln);
    P->grad = grad, P->autocast = jn_autocast_active();
    P->ncls = (int)PyTuple_GET_SIZE(classes);
    if (!(P->cls = zalloc(P->ncls, sizeof *P->cls)) || !(P->tag = zalloc(P->ncls, sizeof *P->tag))) goto fail;
    for (int i = 0; i < P->ncls; i++) {
        PyObject *c = PyTuple_GET_ITEM(classes, i);
        if (!PyType_Check(c)) {
            PyErr_SetString(PyExc_TypeError, "region plan: a class");
            goto fail;
        }
        PyObject *probe = PyObject_GetAttrString(c, "__call__"); /* gives the class a valid version tag */
        if (!probe) goto fail;
        Py_DECREF(probe);
        P->cls[i] = (PyTypeObject *)Py_NewRef(c);
        P->tag[i] = P->cls[i]->tp_version_tag;
    }
    P->nd = (int)PyTuple_GET_SIZE(dicts);
    if (!(P->dicts = zalloc(P->nd, sizeof *P->dicts)) || !(P->dver = zalloc(P->nd, sizeof *P->dver)) ||
        !(P->skip = zalloc(P->nd, sizeof *P->skip)))
        goto fail;
    for (int i = 0; i < P->nd; i++) {
        PyObject *d = PyTuple_GET_ITEM(dicts, i);
        if (!PyDict_Check(d)) {
            PyErr_SetString(PyExc_TypeError, "region plan: a guarded dict");
            goto fail;
        }
        P->dicts[i] = Py_NewRef(d);
    }
    P->ng = (int)PyTuple_GET_SIZE(guards);
    if (!(P->g = zalloc(P->ng, sizeof *P->g))) goto fail;
    for (int i = 0; i < P->ng; i++) {
        mg_guard *g = &P->g[i];
        PyObject *k, *v, *items;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(guards, i), "iiOOO", &g->kind, &g->grp, &k, &v, &items)) goto fail;
        if (g->kind < G_IS || g->kind > G_ABSENT || g->grp < 0 || g->grp >= P->nd ||
            (g->kind == G_CONTENT && !PyTuple_Check(items))) {
            PyErr_SetString(PyExc_ValueError, "region plan: a guard's kind, dict or content");
            goto fail;
        }
        g->dict = Py_NewRef(P->dicts[g->grp]), g->key = Py_NewRef(k);
        g->val = g->kind == G_ABSENT ? NULL : Py_NewRef(v);
        g->items = g->kind == G_CONTENT ? Py_NewRef(items) : NULL;
    }
    P->argspec = Py_NewRef(argspec), P->outspec = Py_NewRef(outspec);
    P->nargs = (int)PyTuple_GET_SIZE(argspec);
    P->nfixed = (int)PyTuple_GET_SIZE(fixed);
    P->nargt = nargt, P->nbound = nargt + P->nfixed;
    if (nargt < 0 || PyTuple_GET_SIZE(metas) != P->nbound) {
        PyErr_SetString(PyExc_ValueError, "region plan: the metadata do not cover the bound tensors");
        goto fail;
    }
    if (!(P->fixed = zalloc(P->nfixed, sizeof *P->fixed)) || !(P->meta = zalloc(P->nbound, sizeof *P->meta)) ||
        !(P->bound = zalloc(P->nbound, sizeof *P->bound)) || !(P->boundobj = zalloc(P->nbound, sizeof *P->boundobj)))
        goto fail;
    for (int i = 0; i < P->nfixed; i++) {
        PyObject *t = PyTuple_GET_ITEM(fixed, i);
        if (!JnTensor_Check(t)) {
            PyErr_SetString(PyExc_TypeError, "region plan: a bound tensor");
            goto fail;
        }
        P->fixed[i] = Py_NewRef(t);
    }
    for (int i = 0; i < P->nbound; i++)
        if (parse_meta(PyTuple_GET_ITEM(metas, i), &P->meta[i])) goto fail;
    P->nleaf = (int)PyTuple_GET_SIZE(leaves);
    if (!(P->leaf = zalloc(P->nleaf, sizeof *P->leaf)) || !(P->ret = zalloc(P->nleaf, sizeof *P->ret)) ||
        !(P->leafobj = zalloc(P->nleaf, sizeof *P->leafobj)))
        goto fail;
    for (int i = 0; i < P->nleaf; i++) {
        P->leaf[i] = (int32_t)PyLong_AsLong(PyTuple_GET_ITEM(leaves, i));
        if (PyErr_Occurred()) goto fail;
    }
    int specs_ok = spec_ok(outspec, P->nleaf, 1);
    for (int i = 0; i < P->nargs && specs_ok; i++) specs_ok = spec_ok(PyTuple_GET_ITEM(argspec, i), nargt, 0);
    if (PyErr_Occurred()) goto fail;
    if (!specs_ok) {
        PyErr_SetString(PyExc_ValueError, "region plan: an argument or output spec (a slot or leaf out of range)");
        goto fail;
    }
    if ((P->id = add_template(name, tmpl, P->nbound, 0)) < 0) goto fail;
    PyObject *cap = PyCapsule_New(P, "janus.mregion", mcapsule_free);
    if (!cap) mplan_free(P);
    return cap;
fail:
    mplan_free(P);
    return NULL;
}

static int mmeta_ok(const mg_meta *m, const jn_tensor *t) {
    if ((int)t->dtype != m->dtype || t->ndim != m->ndim || t->wrapped_number || !t->storage ||
        (int)t->storage->device != m->device || jn_requires_grad(t) != m->rg)
        return 0;
    for (int d = 0; d < m->ndim; d++)
        if (t->shape[d] != m->shape[d] || t->strides[d] != m->strides[d]) return 0;
    return 1;
}

/* An argument against its spec: a slot (int), (0, value), (1, type, (specs)). */
static const char *check_arg(mg_plan *P, PyObject *spec, PyObject *o, int pos, rg_why *W) {
    if (PyLong_CheckExact(spec)) {
        int k = (int)PyLong_AsLong(spec);
        if (!JnTensor_Check(o)) return MISS("argument %d is a %s, a tensor was learned", pos, Py_TYPE(o)->tp_name);
        if (k < 0 || k >= P->nargt) return MISS("argument %d: a bad slot", pos);
        if (!mmeta_ok(&P->meta[k], JN_T(o)))
            return MISS("argument %d's dtype, device, shape, strides or requires_grad changed", pos);
        P->bound[k] = JN_T(o), P->boundobj[k] = o;
        return NULL;
    }
    PyObject *v = PyTuple_GET_ITEM(spec, 1);
    if (PyLong_AsLong(PyTuple_GET_ITEM(spec, 0)) == 0)
        return same_value(o, v) ? NULL : MISS("argument %d changed value", pos);
    if ((PyObject *)Py_TYPE(o) != v) return MISS("argument %d is a %s now", pos, Py_TYPE(o)->tp_name);
    PyObject *sub = PyTuple_GET_ITEM(spec, 2);
    Py_ssize_t n = PyTuple_GET_SIZE(sub);
    int list = PyList_Check(o);
    if ((list ? PyList_GET_SIZE(o) : PyTuple_GET_SIZE(o)) != n) return MISS("argument %d's length changed", pos);
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *why = check_arg(P, PyTuple_GET_ITEM(sub, i), list ? PyList_GET_ITEM(o, i) : PyTuple_GET_ITEM(o, i), pos, W);
        if (why) return why;
    }
    return NULL;
}

static int content_same(PyObject *v, PyObject *items) {
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    if (PyList_Check(v)) {
        if (PyList_GET_SIZE(v) != n) return 0;
        for (Py_ssize_t i = 0; i < n; i++)
            if (PyList_GET_ITEM(v, i) != PyTuple_GET_ITEM(items, i)) return 0;
        return 1;
    }
    if (PyDict_Check(v)) {
        if (2 * PyDict_GET_SIZE(v) != n) return 0;
        Py_ssize_t pos = 0, i = 0;
        PyObject *k, *x;
        while (PyDict_Next(v, &pos, &k, &x)) {
            if (k != PyTuple_GET_ITEM(items, i) || x != PyTuple_GET_ITEM(items, i + 1)) return 0;
            i += 2;
        }
        return 1;
    }
    return 0;
}

static const char *key_str(PyObject *k) {
    const char *s = PyUnicode_Check(k) ? PyUnicode_AsUTF8(k) : NULL;
    if (!s) PyErr_Clear();
    return s ? s : "?";
}

/* Every guard of plan P for this call; NULL when all hold (slots bound). */
static const char *mcheck(mg_plan *P, PyObject *mod, PyObject *args, rg_why *W) {
    if (Py_TYPE(mod) != P->cls[0]) return MISS("the module is a %s now", Py_TYPE(mod)->tp_name);
    if (jn_grad_enabled() != P->grad) return MISS("grad mode is %s, %s when learned", P->grad ? "off" : "on", P->grad ? "on" : "off");
    if (jn_autocast_active() != P->autocast) return MISS("autocast %s", P->autocast ? "is off" : "is on");
    for (int i = 0; i < P->ncls; i++)
        if (!(P->cls[i]->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) || P->cls[i]->tp_version_tag != P->tag[i])
            return MISS("class %s or one of its bases was modified (a method or attribute replaced)", P->cls[i]->tp_name);
    for (int i = 0; i < P->nd; i++)
#if PY_VERSION_HEX < 0x030C0000
        P->skip[i] = ((PyDictObject *)P->dicts[i])->ma_version_tag == P->dver[i];
#else
        P->skip[i] = 0;
#endif
    for (int i = 0; i < P->ng; i++) {
        const mg_guard *g = &P->g[i];
        if (P->skip[g->grp] && g->kind != G_CONTENT) continue;
        PyObject *v = PyDict_GetItemWithError(g->dict, g->key);
        if (!v && PyErr_Occurred()) PyErr_Clear();
        switch (g->kind) {
        case G_ABSENT:
            if (v) return MISS("%s is set on the instance now (shadows the class's)", key_str(g->key));
            break;
        case G_IS:
            if (v != g->val) return MISS("%s changed (another object)", key_str(g->key));
            break;
        case G_EQ:
            if (!same_value(v, g->val)) return MISS("%s changed value", key_str(g->key));
            break;
        default:
            if (v != g->val || !content_same(v, g->items)) return MISS("%s changed (its length or items)", key_str(g->key));
        }
    }
    if (PyTuple_GET_SIZE(args) != P->nargs) return MISS("called with %zd arguments, %d learned", PyTuple_GET_SIZE(args), P->nargs);
    for (int i = 0; i < P->nargs; i++) {
        const char *why = check_arg(P, PyTuple_GET_ITEM(P->argspec, i), PyTuple_GET_ITEM(args, i), i, W);
        if (why) return why;
    }
    for (int i = 0; i < P->nfixed; i++) {
        jn_tensor *t = JN_T(P->fixed[i]);
        if (!mmeta_ok(&P->meta[P->nargt + i], t))
            return MISS("a parameter or buffer changed dtype, device, shape, strides or requires_grad");
        P->bound[P->nargt + i] = t, P->boundobj[P->nargt + i] = P->fixed[i];
    }
#if PY_VERSION_HEX < 0x030C0000
    for (int i = 0; i < P->nd; i++) P->dver[i] = ((PyDictObject *)P->dicts[i])->ma_version_tag;
#endif
    return NULL;
}

/* The output from its spec: a leaf index (int), (0, value), (1, type, (specs)): a tuple,
 * list or namedtuple, (2, type, keys, (specs)): a dict. */
static PyObject *build_out(mg_plan *P, PyObject *spec) {
    if (PyLong_CheckExact(spec)) return Py_NewRef(P->leafobj[PyLong_AsLong(spec)]);
    long kind = PyLong_AsLong(PyTuple_GET_ITEM(spec, 0));
    if (kind == 0) return Py_NewRef(PyTuple_GET_ITEM(spec, 1));
    PyObject *type = PyTuple_GET_ITEM(spec, 1), *sub = PyTuple_GET_ITEM(spec, kind == 1 ? 2 : 3);
    Py_ssize_t n = PyTuple_GET_SIZE(sub);
    PyObject *items = PyTuple_New(n);
    if (!items) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = build_out(P, PyTuple_GET_ITEM(sub, i));
        if (!x) {
            Py_DECREF(items);
            return NULL;
        }
        PyTuple_SET_ITEM(items, i, x);
    }
    if (kind == 2) {
        PyObject *d = PyObject_CallNoArgs(type), *keys = PyTuple_GET_ITEM(spec, 2);
        for (Py_ssize_t i = 0; d && i < n; i++)
            if (PyObject_SetItem(d, PyTuple_GET_ITEM(keys, i), PyTuple_GET_ITEM(items, i))) Py_CLEAR(d);
        Py_DECREF(items);
        return d;
    }
    if (type == (PyObject *)&PyTuple_Type) return items;
    if (type == (PyObject *)&PyList_Type) {
        PyObject *l = PySequence_List(items);
        Py_DECREF(items);
        return l;
    }
    PyObject *o = PyObject_Call(type, items, NULL); /* a namedtuple */
    Py_DECREF(items);
    return o;
}

/* A module region's variants (janus/_region.py _MAX_VARIANTS says why that many): each
 * plan under the hash of the argument signature it was learned at (sig_hash: what
 * check_arg compares, so a call its guards let through has its plan's hash).  A call
 * hashes its arguments once and runs mcheck only on the plans under that hash (train
 * and eval variants share one); the least recently used plan is evicted when full. */
enum { MG_MAX_VARIANTS = 64 };
typedef struct {
    int n, max;
    uint64_t clock;
    uint64_t sig[MG_MAX_VARIANTS], used[MG_MAX_VARIANTS];
    PyObject *cap[MG_MAX_VARIANTS];
} mg_set;

static void mset_free(PyObject *cap) {
    mg_set *S = PyCapsule_GetPointer(cap, "janus.mvariants");
    if (!S) return;
    for (int i = 0; i < S->n; i++) Py_DECREF(S->cap[i]);
    PyMem_Free(S);
}

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}

/* Equal for two arguments check_arg lets through against one spec (a tensor's layout,
 * a number's value: -0.0 as 0.0, which same_value calls equal; a tuple's or list's
 * items); anything else hashes its type only (the guards decide). */
static uint64_t sig_hash(PyObject *o, uint64_t h, int depth) {
    if (JnTensor_Check(o)) {
        const jn_tensor *t = JN_T(o);
        h = mix(h, 1u | (uint64_t)t->dtype << 8 | (uint64_t)t->ndim << 16 | (uint64_t)(jn_requires_grad(t) != 0) << 24 |
                       (uint64_t)(t->wrapped_number != 0) << 25 | (uint64_t)(t->storage ? (int)t->storage->device + 1 : 0) << 32);
        for (int d = 0; d < t->ndim; d++) h = mix(mix(h, (uint64_t)t->shape[d]), (uint64_t)t->strides[d]);
        return h;
    }
    PyTypeObject *tp = Py_TYPE(o);
    h = mix(h, (uint64_t)(uintptr_t)tp);
    if ((tp == &PyTuple_Type || tp == &PyList_Type) && depth < 8) {
        int list = tp == &PyList_Type;
        Py_ssize_t n = list ? PyList_GET_SIZE(o) : PyTuple_GET_SIZE(o);
        h = mix(h, (uint64_t)n);
        for (Py_ssize_t i = 0; i < n; i++) h = sig_hash(list ? PyList_GET_ITEM(o, i) : PyTuple_GET_ITEM(o, i), h, depth + 1);
    } else if (tp == &PyFloat_Type) {
        double v = PyFloat_AS_DOUBLE(o);
        uint64_t b;
        if (v == 0.0) v = 0.0;
        memcpy(&b, &v, sizeof b);
        h = mix(h, b);
    } else if (tp == &PyLong_Type || tp == &PyBool_Type || tp == &PyUnicode_Type || o == Py_None ||
               PyTuple_Check(o)) { /* a _KwNames: a tuple of strings */
        Py_hash_t v = PyObject_Hash(o);
        if (v == -1) PyErr_Clear();
        h = mix(h, (uint64_t)v);
    }
    return h;
}

static uint64_t args_sig(PyObject *args) { return sig_hash(args, 0x6a09e667f3bcc909ULL, 0); }

static mg_plan *set_plan(mg_set *S, int i) { return PyCapsule_GetPointer(S->cap[i], "janus.mregion"); }

/* _rp_module_set(max) -> an empty variant set keeping at most max (<= MG_MAX_VARIANTS) plans. */
static PyObject *py_mset_new(PyObject *self, PyObject *arg) {
    (void)self;
    long max = PyLong_AsLong(arg);
    if (max == -1 && PyErr_Occurred()) return NULL;
    if (max < 1 || max > MG_MAX_VARIANTS) return PyErr_Format(PyExc_ValueError, "a region keeps 1 to %d variants", MG_MAX_VARIANTS);
    mg_set *S = PyMem_Calloc(1, sizeof *S);
    if (!S) return PyErr_NoMemory();
    S->max = (int)max;
    PyObject *cap = PyCapsule_New(S, "janus.mvariants", mset_free);
    if (!cap) PyMem_Free(S);
    return cap;
}

/* _rp_module_add(set, plan, args) -> the variant number of the plan evicted to make room
 * (the least recently used), or None.  args: the call the plan was learned from (its hash). */
static PyObject *py_mset_add(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *scap, *cap, *a;
    if (!PyArg_ParseTuple(args, "OOO!", &scap, &cap, &PyTuple_Type, &a)) return NULL;
    mg_set *S = PyCapsule_GetPointer(scap, "janus.mvariants");
    if (!S || !PyCapsule_GetPointer(cap, "janus.mregion")) return NULL;
    int i = S->n, evicted = -1;
    if (S->n == S->max) {
        i = 0;
        for (int k = 1; k < S->n; k++)
            if (S->used[k] < S->used[i]) i = k;
        mg_plan *old = set_plan(S, i);
        evicted = old->variant;
        /* made under this replay: the set belongs to its janus/_region.py Regions */
        if (jn_py_replay && old->id >= 0) jn_rp_region_drop(jn_py_replay, old->id);
        old->id = -1;
        Py_DECREF(S->cap[i]);
    } else {
        S->n++;
    }
    S->cap[i] = Py_NewRef(cap), S->sig[i] = args_sig(a), S->used[i] = ++S->clock;
    if (evicted < 0) Py_RETURN_NONE;
    return PyLong_FromLong(evicted);
}

/* _rp_module_variants(set) -> its plans, most recently used first (tests, benchmarks). */
static PyObject *py_mset_list(PyObject *self, PyObject *scap) {
    (void)self;
    mg_set *S = PyCapsule_GetPointer(scap, "janus.mvariants");
    if (!S) return NULL;
    int ord[MG_MAX_VARIANTS];
    for (int i = 0; i < S->n; i++) {
        int k = i;
        for (; k > 0 && S->used[ord[k - 1]] < S->used[i]; k--) ord[k] = ord[k - 1];
        ord[k] = i;
    }
    PyObject *t = PyTuple_New(S->n);
    for (int i = 0; t && i < S->n; i++) PyTuple_SET_ITEM(t, i, Py_NewRef(S->cap[ord[i]]));
    return t;
}

enum { MG_ROWS = 4 }; /* "variant N" reasons counted per miss: the first few with the call's signature */
static const char NEW_SIG[] = "a new argument signature (no variant kept has these arguments' dtypes, devices, shapes, "
                              "strides, requires_grad and values)";

/* The set's plan whose guards hold for this call (slots bound), else NULL with up to
 * MG_ROWS candidates' reasons (those learned at this signature) in why/Qs (*nq of them). */
static mg_plan *mset_find(mg_set *S, PyObject *mod, PyObject *args, rg_why *W, const char **why, mg_plan **Qs, int *nq) {
    uint64_t sig = args_sig(args);
    rg_why scratch;
    *nq = 0;
    for (int i = 0; i < S->n; i++) {
        if (S->sig[i] != sig) continue;
        mg_plan *Q = set_plan(S, i);
        int k = *nq < MG_ROWS ? *nq : -1;
        const char *w = mcheck(Q, mod, args, k >= 0 ? &W[k] : &scratch);
        if (!w) {
            S->used[i] = ++S->clock;
            return Q;
        }
        if (k >= 0) why[k] = w, Qs[k] = Q, (*nq)++;
    }
    return NULL;
}

/* _rp_module_call(set, module, args) -> the output, or NotImplemented when no
 * variant's guards held.  The call is counted once: with one variant kept, by its
 * reason (as before variants were keyed); with several, by the reason of each kept
 * at this signature, each in its own row ("variant N: ..."), or as a new signature.
 * Strict replay does not raise here: a module's miss (an evaluation under no_grad,
 * another sequence length) runs its Python, which dispatches the very ops, and
 * learns a variant; the graphs' misses stay errors. */
static PyObject *py_mg_call(PyObject *self, PyObject *const *argv, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3 || !PyTuple_Check(argv[2])) return PyErr_Format(PyExc_TypeError, "_rp_module_call(set, module, args)");
    mg_set *S = PyCapsule_GetPointer(argv[0], "janus.mvariants");
    if (!S) return NULL;
    PyObject *mod = argv[1], *args = argv[2];
    if (!jn_py_replay || !S->n) Py_RETURN_NOTIMPLEMENTED;
    rg_why W[MG_ROWS];
    const char *why[MG_ROWS];
    mg_plan *Qs[MG_ROWS];
    int nq;
    mg_plan *P = mset_find(S, mod, args, W, why, Qs, &nq);
    if (!P) {
        if (S->n == 1) { /* one variant: its own reason, whatever the signature */
            mg_plan *Q = set_plan(S, 0);
            jn_rp_region_note(jn_py_replay, Q->name, nq ? why[0] : mcheck(Q, mod, args, &W[0]), 0);
        } else if (!nq) {
            jn_rp_region_note(jn_py_replay, set_plan(S, 0)->name, NEW_SIG, 0);
        } else {
            for (int k = 0; k < nq; k++) {
                char buf[600];
                snprintf(buf, sizeof buf, "variant %d: %s", Qs[k]->variant ? Qs[k]->variant : k + 1, why[k]);
                if (!k) jn_rp_region_note(jn_py_replay, Qs[k]->name, buf, 0);
                else jn_rp_region_note_also(jn_py_replay, Qs[k]->name, buf);
            }
        }
        Py_RETURN_NOTIMPLEMENTED;
    }
    jn_status s = jn_rp_region_run(jn_py_replay, P->id, P->bound, NULL, P->nleaf, P->leaf, P->ret);
    if (s) return jn_py_raise(s);
    int ok = 1;
    for (int i = 0; i < P->nleaf; i++) {
        int32_t k = P->leaf[i];
        if (!ok) {
            jn_tensor_decref(P->ret[i]);
            P->leafobj[i] = NULL;
        } else if (k < P->nbound) { /* a bound tensor: the caller's own object */
            jn_tensor_decref(P->ret[i]);
            P->leafobj[i] = Py_NewRef(P->boundobj[k]);
        } else if (P->ret[i]->pyobj) {
            P->leafobj[i] = Py_NewRef((PyObject *)P->ret[i]->pyobj);
            jn_tensor_decref(P->ret[i]);
        } else if (!(P->leafobj[i] = jn_py_wrap(P->ret[i]))) {
            ok = 0;
        }
    }
    PyObject *out = ok ? build_out(P, P->outspec) : NULL;
    for (int i = 0; i < P->nleaf; i++) Py_CLEAR(P->leafobj[i]);
    return out;
}

/* Module.__call__'s entry during a replay (janus._region_module, made by
 * _rp_module_entry(regions)): called as entry(module, args, kwargs).  The common
 * call -- no keyword arguments, outside an observed call, a module whose region
 * has learned variants -- goes from here to its variants without the Python of
 * Regions.module (about 0.9 us a call: three frames and their lookups); a miss
 * there (counted by py_mg_call) goes on in Regions.module_missed, anything else
 * to Regions.module.  The function's __self__ is the Regions object, whose
 * attributes are read per call (nothing is cached here to go stale). */
static PyObject *entry_slow(PyObject *regions, const char *meth, PyObject *const *argv, Py_ssize_t n) {
    PyObject *f = PyObject_GetAttrString(regions, meth);
    if (!f) return NULL;
    PyObject *out = PyObject_Vectorcall(f, argv, (size_t)n, NULL);
    Py_DECREF(f);
    return out;
}

static PyObject *py_mg_entry_call(PyObject *regions, PyObject *const *argv, Py_ssize_t nargs) {
    if (nargs != 3 || !PyTuple_Check(argv[1]) || !PyDict_Check(argv[2]))
        return PyErr_Format(PyExc_TypeError, "module entry(module, args, kwargs)");
    static PyObject *s_obs, *s_mods, *s_plans, *s_nplans;
    if (!s_obs && (!(s_obs = PyUnicode_InternFromString("_observing")) ||
                   !(s_mods = PyUnicode_InternFromString("_mods")) ||
                   !(s_plans = PyUnicode_InternFromString("plans")) ||
                   !(s_nplans = PyUnicode_InternFromString("nplans"))))
        return NULL;
    PyObject *mod = argv[0], *plans = NULL, *out = NULL;
    if (PyDict_GET_SIZE(argv[2]) || !jn_py_replay) goto slow;
    PyObject *obs = PyObject_GetAttr(regions, s_obs), *mods = NULL;
    if (!obs) return NULL;
    int observing = obs != Py_None;
    Py_DECREF(obs);
    if (observing) goto slow;
    if (!(mods = PyObject_GetAttr(regions, s_mods))) return NULL;
    PyObject *key = PyLong_FromVoidPtr(mod);
    PyObject *ent = key ? PyDict_GetItemWithError(mods, key) : NULL; /* borrowed: mods holds it */
    Py_XDECREF(key);
    if (!ent || !PyTuple_Check(ent) || PyTuple_GET_SIZE(ent) != 2 || !PyWeakref_Check(PyTuple_GET_ITEM(ent, 0)) ||
        PyWeakref_GET_OBJECT(PyTuple_GET_ITEM(ent, 0)) != mod) {
        Py_DECREF(mods);
        if (PyErr_Occurred()) return NULL;
        goto slow;
    }
    PyObject *r = PyTuple_GET_ITEM(ent, 1), *np = PyObject_GetAttr(r, s_nplans);
    long n = np && PyLong_Check(np) ? PyLong_AsLong(np) : 0;
    Py_XDECREF(np);
    if (n > 0) plans = PyObject_GetAttr(r, s_plans);
    Py_DECREF(mods);
    if (PyErr_Occurred()) {
        Py_XDECREF(plans);
        return NULL;
    }
    if (!plans) goto slow;
    PyObject *cargv[3] = {plans, mod, argv[1]};
    out = py_mg_call(NULL, cargv, 3);
    Py_DECREF(plans);
    if (out != Py_NotImplemented) return out;
    Py_DECREF(out);
    return entry_slow(regions, "module_missed", argv, 2); /* the miss is counted: learn */
slow:
    return entry_slow(regions, "module", argv, 3);
}

static PyMethodDef mg_entry_def = {"module_entry", (PyCFunction)(void (*)(void))py_mg_entry_call, METH_FASTCALL,
                                   "entry(module, args, kwargs) -> the call's output (Module.__call__ in a replay)"};

/* _rp_module_entry(regions) -> Module.__call__'s entry for this Regions object. */
static PyObject *py_mg_entry(PyObject *self, PyObject *regions) {
    (void)self;
    return PyCFunction_New(&mg_entry_def, regions);
}

/* _rp_module_check(plan or set, module, args) -> None when every guard holds (a set:
 * of the variant its lookup finds), else why not (no effect but a set's use order: the
 * entry's cost, for benchmarks/bench_regions.py). */
static PyObject *py_mg_check(PyObject *self, PyObject *const *argv, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3 || !PyTuple_Check(argv[2])) return PyErr_Format(PyExc_TypeError, "_rp_module_check(plan, module, args)");
    rg_why W[MG_ROWS];
    if (PyCapsule_IsValid(argv[0], "janus.mvariants")) {
        mg_set *S = PyCapsule_GetPointer(argv[0], "janus.mvariants");
        const char *why[MG_ROWS];
        mg_plan *Qs[MG_ROWS];
        int nq;
        if (mset_find(S, argv[1], argv[2], W, why, Qs, &nq)) Py_RETURN_NONE;
        return PyUnicode_FromString(nq ? why[0] : NEW_SIG);
    }
    mg_plan *P = PyCapsule_GetPointer(argv[0], "janus.mregion");
    if (!P) return NULL;
    const char *why = mcheck(P, argv[1], argv[2], &W[0]);
    if (why) return PyUnicode_FromString(why);
    Py_RETURN_NONE;
}

/* _rp_zero_grad(name, param_groups, set_to_none) -> True: done from C (each gradient
 * released, or filled with zeros by the fill_ op under no_grad, as Optimizer.zero_grad's
 * Python does), False: the Python must run (a group or gradient it does not handle;
 * counted with the reason).  Everything is checked before anything is written. */
static PyObject *py_zero_grad(PyObject *self, PyObject *const *argv, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3 || !PyUnicode_Check(argv[0])) return PyErr_Format(PyExc_TypeError, "_rp_zero_grad(name, param_groups, set_to_none)");
    if (!jn_py_replay) Py_RETURN_FALSE;
    const char *name = PyUnicode_AsUTF8(argv[0]);
    PyObject *groups = argv[1];
    int none = PyObject_IsTrue(argv[2]);
    if (!name || none < 0) return NULL;
    const char *why = NULL;
    PyObject *key = PyUnicode_FromString("params");
    if (!key) return NULL;
    for (int pass = 0; pass < 2 && !why; pass++) {
        if (!PyList_CheckExact(groups)) {
            why = "param_groups is no list";
            break;
        }
        for (Py_ssize_t g = 0; g < PyList_GET_SIZE(groups) && !why; g++) {
            PyObject *gd = PyList_GET_ITEM(groups, g);
            PyObject *ps = PyDict_CheckExact(gd) ? PyDict_GetItemWithError(gd, key) : NULL;
            if (!ps || !PyList_CheckExact(ps)) {
                PyErr_Clear();
                why = "a param group's params is no list";
                break;
            }
            for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ps); i++) {
                PyObject *p = PyList_GET_ITEM(ps, i);
                if (!JnTensor_Check(p)) {
                    why = "a parameter is no tensor";
                    break;
                }
                jn_tensor *gr = jn_grad(JN_T(p));
                if (!gr) continue;
                if (!pass) { /* the Python detaches or unflags such gradients first */
                    if (!none && (!jn_is_leaf(gr) || jn_requires_grad(gr))) why = "a gradient has history or requires grad";
                    else if (!none && gr->dtype != JN_F32 && gr->dtype != JN_F64 && gr->dtype != JN_F16 && gr->dtype != JN_BF16)
                        why = "a gradient is not floating point";
                    continue;
                }
                jn_status s;
                if (none) {
                    s = jn_set_grad(JN_T(p), NULL);
                } else {
                    jn_attrs a;
                    memset(&a, 0, sizeof a);
                    a.a[0].f = 0.0;
                    jn_tensor *out[JN_MAX_OUTS];
                    int prev = jn_grad_enabled();
                    jn_set_grad_enabled(0);
                    s = jn_dispatch(JN_OP_fill_, 1, &gr, &a, out);
                    jn_set_grad_enabled(prev);
                    if (!s) jn_tensor_decref(out[0]);
                }
                if (s) {
                    Py_DECREF(key);
                    return jn_py_raise(s);
                }
            }
        }
    }
    Py_DECREF(key);
    if (why) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s (its Python runs)", why);
        jn_rp_region_note(jn_py_replay, name, buf, 0);
        Py_RETURN_FALSE;
    }
    jn_rp_region_replaced(jn_py_replay, name);
    Py_RETURN_TRUE;
}

PyMethodDef jn_py_region_methods[] = {
    {"_rp_region_new", py_rg_new, METH_VARARGS, "_rp_region_new(plan, template) -> a region plan (janus/_region.py)"},
    {"_rp_region_call", (PyCFunction)(void (*)(void))py_rg_call, METH_FASTCALL, "_rp_region_call(plan, optimizer) -> True: ran without its Python"},
    {"_rp_region_check", (PyCFunction)(void (*)(void))py_rg_check, METH_FASTCALL,
     "_rp_region_check(plan, optimizer) -> None, or why a guard fails (no effect)"},
    {"_rp_region_observe", py_rg_observe, METH_O, "_rp_region_observe(on): log the ops and syncs of a region call"},
    {"_rp_region_log", py_rg_log, METH_NOARGS, "(syncs, ops) logged while observing"},
    {"_rp_region_detached", py_rg_detached, METH_O, "_rp_region_detached(t): made by detach while observing"},
    {"_rp_region_meta", py_rg_meta, METH_O, "(id, dtype, device, shape, strides) of a tensor"},
    {"_rp_region_note", py_rg_note, METH_VARARGS, "_rp_region_note(name, why, refused): a call ran its Python"},
    {"_rp_region_stats", py_rg_stats, METH_NOARGS, "region counters (None: no replay)"},
    {"_rp_zero_grad", (PyCFunction)(void (*)(void))py_zero_grad, METH_FASTCALL,
     "_rp_zero_grad(name, param_groups, set_to_none) -> True: done from C"},
    {"_rp_module_new", py_mg_new, METH_VARARGS, "_rp_module_new(plan, template) -> a module region plan (janus/_region.py)"},
    {"_rp_module_set", py_mset_new, METH_O, "_rp_module_set(max) -> an empty set of a module region's variants"},
    {"_rp_module_add", py_mset_add, METH_VARARGS,
     "_rp_module_add(set, plan, args) -> the variant number evicted (least recently used), or None"},
    {"_rp_module_variants", py_mset_list, METH_O, "_rp_module_variants(set) -> its plans, most recently used first"},
    {"_rp_module_call", (PyCFunction)(void (*)(void))py_mg_call, METH_FASTCALL,
     "_rp_module_call(set, module, args) -> the output, or NotImplemented: no variant's guards held (counted)"},
    {"_rp_module_entry", py_mg_entry, METH_O,
     "_rp_module_entry(regions) -> entry(module, args, kwargs): Module.__call__ during a replay"},
    {"_rp_module_check", (PyCFunction)(void (*)(void))py_mg_check, METH_FASTCALL,
     "_rp_module_check(plan, module, args) -> None, or why a guard fails (no effect)"},
    {NULL, NULL, 0, NULL}};
