/* replay_py.c -- janus._C's side of `janus replay` (replay/replay.c):
 * start/stop from janus/_replay.py, step ends, sync points, and the one
 * helper the extension calls before it reads or writes tensor data outside
 * the dispatcher (jn_py_ready), and the step times of an eager run
 * (_rp_put_steps).  Without a replay every entry is one flag test.
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

int jn_py_replay_sync(int kind, jn_tensor *t) {
    jn_status s = jn_rp_sync(kind, t);
    if (s) {
        jn_py_raise(s);
        return 0;
    }
    return 1;
}

/* _rp_start(db, run_id, strict) -> None, or the reason it runs eagerly */
static PyObject *py_rp_start(PyObject *self, PyObject *args) {
    (void)self;
    const char *db;
    long long run = 0;
    int strict = 0, speculate = 0;
    if (!PyArg_ParseTuple(args, "sLp|p", &db, &run, &strict, &speculate)) return NULL;
    jn_status s = jn_rp_start(db, run, (strict ? JN_RP_STRICT : 0) | (speculate ? JN_RP_SPECULATE : 0));
    if (s) return PyUnicode_FromString(jn_errmsg());
    Py_RETURN_NONE;
}

static PyObject *py_rp_step(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    jn_status s = jn_rp_step();
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
    jn_rp_quiet((int)PyLong_AsLong(arg));
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_rp_stop(PyObject *self, PyObject *arg) {
    (void)self;
    jn_status s = jn_rp_stop(PyObject_IsTrue(arg));
    if (s) return jn_py_raise(s);
    Py_RETURN_NONE;
}

static PyObject *py_rp_stats(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    jn_rp_stats st;
    jn_rp_get_stats(&st);
    char line[2048];
    jn_rp_summary(line, sizeof line);
    PyObject *misses = PyList_New(0);
    if (!misses) return NULL;
    int64_t n;
    const char *why;
    for (int i = 0; i < 8 && (why = jn_rp_miss(i, &n)); i++) {
        PyObject *tup = Py_BuildValue("(sL)", why, (long long)n);
        if (!tup || PyList_Append(misses, tup)) {
            Py_XDECREF(tup);
            Py_DECREF(misses);
            return NULL;
        }
        Py_DECREF(tup);
    }
    return Py_BuildValue("{sLsLsLsLsLsLsLsLsdsssN}", "segments", (long long)st.segments, "hits", (long long)st.hits,
                         "sliced", (long long)st.sliced, "chosen", (long long)st.chosen, "graphs_eager",
                         (long long)st.graphs_eager,
                         "misses", (long long)st.misses, "graphs_hit", (long long)st.graphs_hit, "graphs",
                         (long long)st.ngraphs, "seconds", st.seconds, "summary", line, "top_misses", misses);
}

/* _rp_put_steps(db, run_id, [(started, duration), ...], tail) -> None, or
 * why they could not be stored: the step times of an eager run (`janus
 * replay --eager`: no replay, so janus/_replay.py times the steps); the
 * last row is the tail (after the last step) when tail is true. */
static PyObject *py_rp_put_steps(PyObject *self, PyObject *args) {
    (void)self;
    const char *path;
    long long run = 0;
    PyObject *list;
    int tail = 0;
    if (!PyArg_ParseTuple(args, "sLO!p", &path, &run, &PyList_Type, &list, &tail)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(list);
    if (n > JN_DB_STEPS_MAX) n = JN_DB_STEPS_MAX;
    jn_db_run_step *rows = calloc((size_t)n + 1, sizeof *rows);
    if (!rows) return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) {
        double a = 0, d = 0;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(list, i), "dd", &a, &d)) {
            free(rows);
            return NULL;
        }
        int is_tail = tail && i == PyList_GET_SIZE(list) - 1;
        rows[i] = (jn_db_run_step){.step = i + 1, .kind = is_tail ? "tail" : "step", .started = a, .duration = d,
                                   .graph_ops = -1, .eager_ops = -1};
    }
    jn_db *db = NULL;
    jn_status s = jn_db_open(path, JN_DB_WRITE, &db);
    if (!s) s = jn_db_run_steps_put(db, run, rows, (int)n);
    jn_db_close(db);
    free(rows);
    if (s) return PyUnicode_FromString(jn_errmsg());
    Py_RETURN_NONE;
}

static PyObject *py_rp_active(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    return PyBool_FromLong(jn_rp_on);
}

PyMethodDef jn_py_replay_methods[] = {
    {"_rp_start", py_rp_start, METH_VARARGS, "_rp_start(db, run_id, strict, speculate=False): None, or why replay is off"},
    {"_rp_step", py_rp_step, METH_NOARGS, "a training step ended"},
    {"_rp_sync", py_rp_sync, METH_VARARGS, "_rp_sync(tensor, kind): a sync point"},
    {"_rp_quiet", py_rp_quiet, METH_O, "nested reads are no sync points of their own"},
    {"_rp_stop", py_rp_stop, METH_O, "_rp_stop(print_summary)"},
    {"_rp_stats", py_rp_stats, METH_NOARGS, "hit/miss counters and the summary line"},
    {"_rp_active", py_rp_active, METH_NOARGS, NULL},
    {"_rp_put_steps", py_rp_put_steps, METH_VARARGS, "_rp_put_steps(db, run, [(started, duration)], tail): None or why not"},
    {NULL, NULL, 0, NULL}};
