/* dist_py.c -- janus._C's side of janus.distributed (runtime/jn_dist.h).
 *
 * The collectives janus.distributed offers go through the op table
 * (runtime/k_dist.c: all_reduce_, broadcast_, all_gather, reduce_scatter,
 * barrier), so record and replay see them as ops (janus/distributed calls
 * _dist_flush first: the recorded steps reach the store while this rank may
 * wait).  The _dist_* collectives here read and write tensor data outside
 * the dispatcher (kept for C-level tests and tools), so to `janus record`
 * and `janus replay` each is a sync point on each tensor it touches (kind
 * NUMPY, as a buffer export is, with no observed value: the data differs
 * per rank): the segment ends before it and every rank runs it eagerly, in
 * program order.  _dist_wait makes a barrier's token current: the segment
 * ends after the barrier, which runs in its graph or eagerly.
 *
 * The GIL is let go while any collective waits for the other ranks, also
 * one a kernel or a compiled graph runs (the wait hooks installed at
 * _dist_init), so the process's other Python threads run on; a recording
 * commits its queued steps first (a rank that waits for a lost one is ended
 * by mpirun, losing nothing).
 */
#include <math.h>

#include "jn_dist.h"
#include "jn_py.h"
#include "jn_rec.h"

/* make t current and mark the sync; 0 with an exception set on failure */
static int ready(PyObject *o, const char *what) {
    if (!JnTensor_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a tensor, got %s", what, Py_TYPE(o)->tp_name);
        return 0;
    }
    jn_tensor *t = JN_T(o);
    if (!jn_py_sync_export(t, 0)) return 0;
    if (jn_rec_on) jn_rec_flush(); /* the steps so far reach the store while this rank waits for the others */
    return 1;
}

static PyObject *done(jn_status s) {
    if (s) return jn_py_raise(s);
    Py_RETURN_NONE;
}

/* The wait hooks: a collective that blocks while this thread holds the GIL
 * (a table op dispatched from Python, a graph replay runs) lets it go until
 * the wait ends; one called with the GIL already released keeps it so.
 * While this is the interpreter's only thread nothing can take the GIL
 * meanwhile (a new Python thread needs it to start), so it is kept: letting
 * it go and taking it back was a fifth of a 4 KB all-reduce.  A thread a C
 * library starts and attaches (PyGILState_Ensure) during that wait waits
 * for the collective's end, which the watchdog bounds. */
static void *gil_leave(void) {
    if (!Py_IsInitialized() || !PyGILState_Check()) return NULL;
    PyThreadState *ts = PyThreadState_Get();
    PyInterpreterState *in = PyThreadState_GetInterpreter(ts);
    if (PyInterpreterState_ThreadHead(in) == ts && !PyThreadState_Next(ts) && PyInterpreterState_Head() == in &&
        !PyInterpreterState_Next(in))
        return NULL;
    return PyEval_SaveThread();
}

static void gil_enter(void *ts) { PyEval_RestoreThread(ts); }

/* _dist_init(backend "mpi"|"nccl", rank, world_size, master_addr, master_port, timeout_s[, device]):
 * device: the nccl backend's GPU (LOCAL_RANK), -1 for the CUDA default */
static PyObject *py_init(PyObject *self, PyObject *args) {
    (void)self;
    const char *backend, *addr;
    int rank, world, port, device = -1;
    double timeout;
    if (!PyArg_ParseTuple(args, "siisid|i", &backend, &rank, &world, &addr, &port, &timeout, &device)) return NULL;
    jn_dist_backend b;
    if (!strcmp(backend, "mpi")) b = JN_DIST_MPI;
    else if (!strcmp(backend, "nccl")) b = JN_DIST_NCCL;
    else return PyErr_Format(PyExc_ValueError, "init_process_group: unknown backend %R (janus has \"mpi\" for CPU "
                             "tensors and \"nccl\" for CUDA tensors)", PyTuple_GET_ITEM(args, 0));
    jn_rt_dist_set_wait_hooks(gil_leave, gil_enter);
    jn_rt_dist_set_device(b == JN_DIST_NCCL ? device : -1);
    jn_status s;
    Py_BEGIN_ALLOW_THREADS
    s = jn_rt_dist_init(b, rank, world, addr, port, timeout);
    Py_END_ALLOW_THREADS
    return done(s);
}

static PyObject *py_state(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    if (!jn_rt_dist_initialized()) Py_RETURN_NONE;
    return Py_BuildValue("(iisO)", jn_rt_dist_rank(), jn_rt_dist_world_size(),
                         jn_rt_dist_backend() == JN_DIST_NCCL ? "nccl" : "mpi",
                         jn_rt_dist_any_thread() ? Py_True : Py_False);
}

static PyObject *py_barrier(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    jn_status s;
    Py_BEGIN_ALLOW_THREADS
    s = jn_rt_dist_barrier();
    Py_END_ALLOW_THREADS
    return done(s);
}

/* _dist_all_reduce(t, op) */
static PyObject *py_all_reduce(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *t;
    int op;
    if (!PyArg_ParseTuple(args, "Oi", &t, &op) || !ready(t, "all_reduce")) return NULL;
    jn_status s;
    Py_BEGIN_ALLOW_THREADS
    s = jn_rt_dist_all_reduce(JN_T(t), (jn_dist_op)op);
    Py_END_ALLOW_THREADS
    return done(s);
}

/* _dist_broadcast(t, src) */
static PyObject *py_broadcast(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *t;
    int src;
    if (!PyArg_ParseTuple(args, "Oi", &t, &src) || !ready(t, "broadcast")) return NULL;
    jn_status s;
    Py_BEGIN_ALLOW_THREADS
    s = jn_rt_dist_broadcast(JN_T(t), src);
    Py_END_ALLOW_THREADS
    return done(s);
}

/* _dist_all_gather(out, in) */
static PyObject *py_all_gather(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *out, *in;
    if (!PyArg_ParseTuple(args, "OO", &out, &in) || !ready(in, "all_gather") || !ready(out, "all_gather")) return NULL;
    jn_status s;
    Py_BEGIN_ALLOW_THREADS
    s = jn_rt_dist_all_gather(JN_T(out), JN_T(in));
    Py_END_ALLOW_THREADS
    return done(s);
}

/* _dist_reduce_scatter(out, in, op) */
static PyObject *py_reduce_scatter(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *out, *in;
    int op;
    if (!PyArg_ParseTuple(args, "OOi", &out, &in, &op) || !ready(in, "reduce_scatter") ||
        !ready(out, "reduce_scatter"))
        return NULL;
    jn_status s;
    Py_BEGIN_ALLOW_THREADS
    s = jn_rt_dist_reduce_scatter(JN_T(out), JN_T(in), (jn_dist_op)op);
    Py_END_ALLOW_THREADS
    return done(s);
}

/* _dist_wait(t): make t current now (a barrier's token: the barrier has
 * run when this returns); a sync point without an observed value */
static PyObject *py_wait(PyObject *self, PyObject *t) {
    (void)self;
    if (!ready(t, "barrier")) return NULL;
    Py_RETURN_NONE;
}

/* _dist_flush(): a recording hands its queued steps to the writer now */
static PyObject *py_flush(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    if (jn_rec_on) jn_rec_flush();
    Py_RETURN_NONE;
}

static PyObject *py_destroy(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    return done(jn_rt_dist_destroy());
}

/* _dist_abort(why): this rank failed; every rank of the job ends now */
static PyObject *py_abort(PyObject *self, PyObject *arg) {
    (void)self;
    const char *why = PyUnicode_AsUTF8(arg);
    if (!why) return NULL;
    fflush(stdout);
    jn_rt_dist_abort(why);
}

/* janus.distributed.all_reduce itself: all_reduce(tensor, op=ReduceOp.SUM,
 * group=None, async_op=False), a builtin over `slow` (the Python version).
 * The common call -- a tensor, an int op, the default group, no Work --
 * dispatches the table op all_reduce_ from here (record, replay, autograd
 * and the infer function's checks are the dispatcher's, as for every op);
 * any other call (a group object, async_op=True, a non-int op, another
 * keyword) goes to `slow` unchanged.  At 4 KB the Python layers around the
 * op were a third of janus's cost over Open MPI's own call. */
static PyObject *fast_all_reduce(PyObject *slow, PyObject *const *args, Py_ssize_t nargsf, PyObject *kwnames) {
    Py_ssize_t n = PyVectorcall_NARGS(nargsf), nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (n < 1 || n > 2) goto slow;
    PyObject *t = args[0], *op = n == 2 ? args[1] : NULL;
    for (Py_ssize_t j = 0; j < nkw; j++) {
        PyObject *k = PyTuple_GET_ITEM(kwnames, j), *v = args[n + j];
        if (!op && !PyUnicode_CompareWithASCIIString(k, "op")) op = v;
        else if (!(v == Py_None && !PyUnicode_CompareWithASCIIString(k, "group")) &&
                 !(v == Py_False && !PyUnicode_CompareWithASCIIString(k, "async_op")))
            goto slow;
    }
    if (!JnTensor_Check(t) || (op && !PyLong_Check(op))) goto slow;
    int overflow = 0;
    long o = op ? PyLong_AsLongAndOverflow(op, &overflow) : 0;
    if (overflow || o < 0 || o > INT32_MAX) goto slow;
    if (jn_rec_on) jn_rec_flush(); /* the steps so far reach the store while this rank waits for the others */
    static const jn_attrs zero; /* every attribute set: recorded attrs stay deterministic */
    jn_attrs a = zero;
    a.a[0].i = o;
    jn_tensor *in = JN_T(t), *out;
    jn_status s = jn_dispatch(JN_OP_all_reduce_, 1, &in, &a, &out);
    if (s) return jn_py_raise(s);
    jn_tensor_decref(out);
    Py_RETURN_NONE;
slow:
    return PyObject_Vectorcall(slow, args, nargsf, kwnames);
}

static PyMethodDef fast_all_reduce_def = {
    "all_reduce", (PyCFunction)(void (*)(void))fast_all_reduce, METH_FASTCALL | METH_KEYWORDS,
    "all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False)\n\n"
    "tensor = op over every rank's tensor, in place (torch.distributed.all_reduce)."};

/* _dist_fast_all_reduce(slow): janus.distributed.all_reduce, the builtin above over slow */
static PyObject *py_fast_all_reduce(PyObject *self, PyObject *slow) {
    (void)self;
    if (!PyCallable_Check(slow)) return PyErr_Format(PyExc_TypeError, "_dist_fast_all_reduce: expected a callable");
    return PyCFunction_NewEx(&fast_all_reduce_def, slow, NULL);
}

PyMethodDef jn_py_dist_methods[] = {
    {"_dist_fast_all_reduce", py_fast_all_reduce, METH_O,
     "_dist_fast_all_reduce(slow): all_reduce(tensor, op, group, async_op) in C, slow for the uncommon calls"},
    {"_dist_init", py_init, METH_VARARGS,
     "_dist_init(backend, rank, world_size, master_addr, master_port, timeout_s[, device])"},
    {"_dist_state", py_state, METH_NOARGS, "(rank, world_size, backend, any_thread) of the process group, None"},
    {"_dist_barrier", py_barrier, METH_NOARGS, "every rank waits for the others"},
    {"_dist_all_reduce", py_all_reduce, METH_VARARGS, "_dist_all_reduce(t, op): in place"},
    {"_dist_broadcast", py_broadcast, METH_VARARGS, "_dist_broadcast(t, src): in place"},
    {"_dist_all_gather", py_all_gather, METH_VARARGS, "_dist_all_gather(out, in): out = every rank's in, by rank"},
    {"_dist_reduce_scatter", py_reduce_scatter, METH_VARARGS, "_dist_reduce_scatter(out, in, op)"},
    {"_dist_wait", py_wait, METH_O, "_dist_wait(t): t's data is current when it returns (a barrier's token)"},
    {"_dist_flush", py_flush, METH_NOARGS, "a recording's queued steps go to the writer now"},
    {"_dist_destroy", py_destroy, METH_NOARGS, "end the process group"},
    {"_dist_abort", py_abort, METH_O, "_dist_abort(why): end every rank of the job"},
    {NULL, NULL, 0, NULL},
};
