/* replay_py.c -- janus._C's side of `janus replay` (replay/, jn_replay.h):
 * start/stop from janus/_replay.py, step ends, sync points, and the one
 * helper the extension calls before it reads or writes tensor data outside
 * the dispatcher (jn_py_ready).  The replay object of this process is
 * jn_py_replay (NULL: none; every entry is then one pointer test).
 */
#include "jn_py.h"

#include "jn_db.h"
#include "jn_replay.h"

int jn_py_ready(jn_tensor *t) {
    jn_status s = jn_rt_materialize(t);
    if (s) {
        jn_py_raise(s);
        return 0;
    }
    return 1;
}

jn_replay *jn_py_replay;

int jn_py_replay_sync(int kind, jn_tensor *t) {
    jn_status s = jn_py_replay ? jn_rp_sync(jn_py_replay, kind, t) : JN_OK;
    if (s) {
        jn_py_raise(s);
        return 0;
    }
    return 1;
}

/* _rp_start(db, run_id, strict=None, speculate=None) -> None, or the reason
 * it runs eagerly.  The config comes from the settings (JANUS_REPLAY_*); a
 * strict or speculate given (not None) overrides its variable. */
static PyObject *py_rp_start(PyObject *self, PyObject *args) {
    (void)self;
    const char *db;
    long long run = 0;
    PyObject *strict = Py_None, *speculate = Py_None;
    if (!PyArg_ParseTuple(args, "sL|OO", &db, &run, &strict, &speculate)) return NULL;
    if (jn_py_replay) return PyUnicode_FromString("a replay is already running in this process");
    jn_rp_config cfg;
    jn_status s = jn_rp_config_from_env(&cfg);
    if (s) return PyUnicode_FromString(jn_errmsg());
    if (strict != Py_None && (cfg.strict = PyObject_IsTrue(strict)) < 0) return NULL;
    if (speculate != Py_None && (cfg.speculate = PyObject_IsTrue(speculate)) < 0) return NULL;
    if ((s = jn_rp_new(db, run, &cfg, &jn_py_replay))) return PyUnicode_FromString(jn_errmsg());
    Py_RETURN_NONE;
}

static PyObject *py_rp_step(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    jn_status s = jn_py_replay ? jn_rp_step(jn_py_replay) : JN_OK;
    if (s) return jn_py_raise(s);
    Py_RETURN_NONE;
}

/* _rp_sync(tensor_or_None, kind) */
static PyObject *py_rp_sync(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *t;
    int kind;
    if (!PyArg_ParseTuple(args, "Oi", &t, &kind)) return NULL;
    if (!jn_py_replay_sync(kind, JnTensor_Check(t) ? JN_T(t) : NULL)) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_rp_quiet(PyObject *self, PyObject *arg) {
    (void)self;
    int d = (int)PyLong_AsLong(arg);
    if (PyErr_Occurred()) return NULL;
    if (jn_py_replay) jn_rp_quiet(jn_py_replay, d);
    Py_RETURN_NONE;
}

/* _rp_stop(print_summary): flush, summary, counters; the object is freed */
static PyObject *py_rp_stop(PyObject *self, PyObject *arg) {
    (void)self;
    int print = PyObject_IsTrue(arg);
    if (print < 0) return NULL;
    jn_replay *r = jn_py_replay;
    if (!r) Py_RETURN_NONE;
    jn_status s = jn_rp_finish(r, print);
    jn_py_replay = NULL;
    jn_rp_free(r);
    if (s) return jn_py_raise(s);
    Py_RETURN_NONE;
}

static PyObject *py_rp_stats(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    const jn_replay *r = jn_py_replay;
    if (!r) Py_RETURN_NONE;
    jn_rp_stats st;
    jn_rp_get_stats(r, &st);
    char line[2048];
    jn_rp_summary(r, line, sizeof line);
    PyObject *misses = PyList_New(0);
    if (!misses) return NULL;
    int64_t n;
    const char *why;
    for (int i = 0; i < 8 && (why = jn_rp_miss(r, i, &n)); i++) {
        PyObject *tup = Py_BuildValue("(sL)", why, (long long)n);
        if (!tup || PyList_Append(misses, tup)) {
            Py_XDECREF(tup);
            Py_DECREF(misses);
            return NULL;
        }
        Py_DECREF(tup);
    }
    return Py_BuildValue("{sLsLsLsLsLsLsLsLsLsdsssN}", "segments", (long long)st.segments, "hits", (long long)st.hits,
                         "extrapolated", (long long)st.extrapolated,
                         "sliced", (long long)st.sliced, "chosen", (long long)st.chosen, "graphs_eager",
                         (long long)st.graphs_eager,
                         "misses", (long long)st.misses, "graphs_hit", (long long)st.graphs_hit, "graphs",
                         (long long)st.ngraphs, "seconds", st.seconds, "summary", line, "top_misses", misses);
}

static PyObject *py_rp_active(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    return PyBool_FromLong(jn_py_replay != NULL);
}

PyMethodDef jn_py_replay_methods[] = {
    {"_rp_start", py_rp_start, METH_VARARGS,
     "_rp_start(db, run_id, strict=None, speculate=None): None, or why replay is off"},
    {"_rp_step", py_rp_step, METH_NOARGS, "a training step ended"},
    {"_rp_sync", py_rp_sync, METH_VARARGS, "_rp_sync(tensor, kind): a sync point"},
    {"_rp_quiet", py_rp_quiet, METH_O, "nested reads are no sync points of their own"},
    {"_rp_stop", py_rp_stop, METH_O, "_rp_stop(print_summary)"},
    {"_rp_stats", py_rp_stats, METH_NOARGS, "hit/miss counters and the summary line (None: no replay)"},
    {"_rp_active", py_rp_active, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL}};
