/* replay_py.c -- janus._C's side of `janus replay` (replay/, jn_replay.h):
 * start/stop from janus/_replay.py, step ends, sync points, and the one
 * helper the extension calls before it reads or writes tensor data outside
 * the dispatcher (jn_py_ready), and the step times of an eager run
 * (_rp_put_steps), and the recording's region verdicts (_rp_region_verdicts).
 * The replay object of this process is jn_py_replay
 * (NULL: none; every entry is then one pointer test).
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
    PyObject *bw = PyList_New(0);
    if (!bw) {
        Py_DECREF(misses);
        return NULL;
    }
    for (int i = 0; (why = jn_rp_bw_reason(r, i, &n)); i++) {
        PyObject *tup = Py_BuildValue("(sL)", why, (long long)n);
        if (!tup || PyList_Append(bw, tup)) {
            Py_XDECREF(tup);
            Py_DECREF(misses);
            Py_DECREF(bw);
            return NULL;
        }
        Py_DECREF(tup);
    }
    /* per place and reason, as `janus inspect --json` shows them stored */
    PyObject *places = PyList_New(0);
    if (!places) {
        Py_DECREF(misses);
        Py_DECREF(bw);
        return NULL;
    }
    jn_rp_bw_row row;
    for (int i = 0; jn_rp_bw_row_at(r, i, &row); i++) {
        PyObject *d = Py_BuildValue("{sssisssssOsL}", "graph", row.graph, "token", (int)row.token, "name", row.name,
                                    "reason", row.words, "fallback", row.fallback ? Py_True : Py_False, "count",
                                    (long long)row.count);
        if (!d || PyList_Append(places, d)) {
            Py_XDECREF(d);
            Py_DECREF(misses);
            Py_DECREF(bw);
            Py_DECREF(places);
            return NULL;
        }
        Py_DECREF(d);
    }
    return Py_BuildValue("{sLsLsLsLsLsLsLsLsLsdsssNsLsLsLsLsLsNsN}", "segments", (long long)st.segments, "hits", (long long)st.hits,
                         "extrapolated", (long long)st.extrapolated,
                         "sliced", (long long)st.sliced, "chosen", (long long)st.chosen, "graphs_eager",
                         (long long)st.graphs_eager,
                         "misses", (long long)st.misses, "graphs_hit", (long long)st.graphs_hit, "graphs",
                         (long long)st.ngraphs, "seconds", st.seconds, "summary", line, "top_misses", misses,
                         "backward_calls", (long long)st.bw_calls, "backward_skipped", (long long)st.bw_skipped,
                         "backward_learned", (long long)st.bw_learned, "backward_declined", (long long)st.bw_declined,
                         "backward_fallbacks", (long long)st.bw_fallbacks, "backward_declines", bw,
                         "backward_places", places);
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

/* _rp_forked_child(): in a forked DataLoader worker, stop replaying for good:
 * ops run eagerly, nothing is matched and nothing is written to the store
 * (the parent owns the replay and its counters).  The parent made every
 * tensor current before forking (a sync point), so nothing the child can
 * read is pending.  The hooks come off and the child's copy of the object
 * is dropped, not finished or freed: that would write the parent's
 * counters and close the parent's store connection from the child. */
static PyObject *py_rp_forked_child(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    if (jn_py_replay) {
        jn_rt_set_capture_hook(NULL);
        jn_set_dispatch_hook(NULL);
        jn_py_replay = NULL;
    }
    Py_RETURN_NONE;
}

/* _rp_region_verdicts() -> [dict], what `janus optimize` decided about each
 * recorded region (jn_rp_region_verdicts); [] when not replaying or the
 * bundle has none.  Keys: kind, qualname, site, calls, verdict
 * ('replaceable' | 'refused'), reason, reason_site, code_hash, codes (a
 * tuple of the hashes of every code object it ran). */
static PyObject *py_rp_region_verdicts(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    PyObject *out = PyList_New(0);
    if (!out || !jn_py_replay) return out;
    jn_db_region_verdict *v = NULL;
    int n = 0;
    jn_status s = jn_rp_region_verdicts(jn_py_replay, &v, &n);
    if (s) {
        Py_DECREF(out);
        return jn_py_raise(s);
    }
    for (int i = 0; i < n; i++) {
        PyObject *codes = PyUnicode_FromString(v[i].codes), *parts = codes ? PyUnicode_Split(codes, NULL, -1) : NULL;
        PyObject *tup = parts ? PyList_AsTuple(parts) : NULL;
        Py_XDECREF(codes);
        Py_XDECREF(parts);
        PyObject *d = tup ? Py_BuildValue("{sssssssLsssssssssN}", "kind", v[i].kind, "qualname", v[i].qualname, "site",
                                          v[i].site, "calls", (long long)v[i].calls, "verdict",
                                          v[i].replaceable ? "replaceable" : "refused", "reason", v[i].reason,
                                          "reason_site", v[i].reason_site, "code_hash", v[i].code_hash, "codes", tup)
                          : NULL;
        if (!d || PyList_Append(out, d)) {
            Py_XDECREF(d);
            Py_DECREF(out);
            jn_db_region_verdicts_free(v, n);
            return NULL;
        }
        Py_DECREF(d);
    }
    jn_db_region_verdicts_free(v, n);
    return out;
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
    {"_rp_region_verdicts", py_rp_region_verdicts, METH_NOARGS,
     "the recording's verdict on each region, stored with the replayed bundle: [dict] ([] when none)"},
    {"_rp_put_steps", py_rp_put_steps, METH_VARARGS, "_rp_put_steps(db, run, [(started, duration)], tail): None or why not"},
    {"_rp_forked_child", py_rp_forked_child, METH_NOARGS, "a forked worker process stops replaying"},
    {NULL, NULL, 0, NULL}};
