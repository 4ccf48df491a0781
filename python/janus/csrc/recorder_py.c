/* recorder_py.c -- the Python-facing half of the recorder (janus._C._rec_*).
 *
 * Three jobs.  (1) Call sites: the C recorder asks, for every op and sync,
 * where in the user's code it came from.  We walk the interpreter's frames
 * from the innermost one, skip frames whose code is not a user file
 * (janus itself, the standard library, site-packages: decided once per code
 * object by janus._record._is_user_file), intern (code, line) as a call site
 * and the chain of user (code, line) pairs (innermost first, at most 16) as a
 * stack.  Both are cached in C tables keyed by code-object pointers (the
 * table holds a reference, so a pointer is never reused), so the hit path is
 * a frame walk plus a few hash probes; on 3.11 the frame-evaluation hook
 * below makes it a comparison of two numbers in the common case.
 * (2) Control-flow decisions: a C trace function that follows line
 * events of user frames only (the frame-evaluation hook keeps the
 * interpreter's tracing off inside non-user frames; without it they get
 * f_trace_lines = False at their 'call' event), and turns them into branch
 * outcomes (the line after an `if` line: its fall-through body or not) and
 * loop trip counts (arrivals at a loop's head line while execution stays
 * inside the loop's line range).  The per-code tables (which lines branch,
 * where loops are) come from janus._record._analyze_code, once per code
 * object.  The same trace function serves 3.12+ (PyEval_SetTrace works
 * there, without the 3.11 frame-evaluation hook: non-user frames lose
 * their line events at their 'call' event).  (3) The _C functions the
 * Python layer and the tests use: start/stop, steps, marks, syncs,
 * _rec_read_step to decode a stored step, and _rec_runs to list the runs
 * (janus._replay reads the store through db/ like every other command).
 */
#include "jn_py.h"
#include "jn_autograd.h"
#include "jn_rec.h"
#include "jn_settings.h"

#include <frameobject.h>
#include <structmember.h>
#include <math.h>
#include <string.h>

/* --------------------------------------------------- per-code information */
typedef struct {
    int line, fall;     /* a line ending in a conditional jump; its fall-through line */
} branch_site;

typedef struct {
    int head, lo, hi;   /* head line (target of the backward jump), body line range */
    int for_loop;       /* head is a FOR_ITER: one extra arrival when the iterator ends */
} loop_site;

typedef struct {
    PyObject *code;     /* strong reference: keeps the pointer unique */
    int user;
    int nbranch, nloop;
    branch_site *branch;
    loop_site *loop;
} code_info;

/* open addressing: code pointer -> code_info; (code, line) -> callsite id;
 * stack hash -> stack id */
typedef struct {
    uintptr_t key;
    int64_t line;
    int64_t val;
    void *ptr;
} ent;

typedef struct {
    ent *e;
    size_t cap, n;
} table;

static table codes, sites, stacks;
static PyObject *is_user_fn, *analyze_fn;

/* Non-zero while code_lookup calls into Python on this thread (see code_peek). */
static _Thread_local int in_lookup;

static size_t mix(uintptr_t k, int64_t line) {
    uint64_t h = (uint64_t)k * 0x9E3779B97F4A7C15ull ^ (uint64_t)line * 0xC2B2AE3D27D4EB4Full;
    return (size_t)(h ^ (h >> 29));
}

/* Slot for (key, line): found (*found = 1) or the empty slot to fill. */
static ent *probe(table *t, uintptr_t key, int64_t line, int *found) {
    if (2 * (t->n + 1) > t->cap) {
        size_t nc = t->cap ? 2 * t->cap : 256;
        ent *ne = PyMem_RawCalloc(nc, sizeof *ne);
        if (!ne) return NULL;
        for (size_t i = 0; i < t->cap; i++) {
            if (!t->e[i].key) continue;
            size_t j = mix(t->e[i].key, t->e[i].line) & (nc - 1);
            while (ne[j].key) j = (j + 1) & (nc - 1);
            ne[j] = t->e[i];
        }
        PyMem_RawFree(t->e);
        t->e = ne;
        t->cap = nc;
    }
    size_t j = mix(key, line) & (t->cap - 1);
    while (t->e[j].key) {
        if (t->e[j].key == key && t->e[j].line == line) {
            *found = 1;
            return &t->e[j];
        }
        j = (j + 1) & (t->cap - 1);
    }
    *found = 0;
    return &t->e[j];
}

static int as_int(PyObject *o, int dflt) {
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return dflt;
    }
    return (int)v;
}

/* Fill branch/loop tables from _analyze_code(code) ->
 * ([(line, fall)], [(head, lo, hi, is_for)]).  Failures leave them empty. */
static void analyze(code_info *ci) {
    if (!analyze_fn) return;
    PyObject *r = PyObject_CallOneArg(analyze_fn, ci->code);
    if (!r || !PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 2) {
        PyErr_Clear();
        Py_XDECREF(r);
        return;
    }
    PyObject *b = PyTuple_GET_ITEM(r, 0), *l = PyTuple_GET_ITEM(r, 1);
    if (PyList_Check(b) && PyList_GET_SIZE(b)) {
        ci->branch = PyMem_RawCalloc((size_t)PyList_GET_SIZE(b), sizeof *ci->branch);
        for (Py_ssize_t i = 0; ci->branch && i < PyList_GET_SIZE(b); i++) {
            PyObject *x = PyList_GET_ITEM(b, i);
            if (!PyTuple_Check(x) || PyTuple_GET_SIZE(x) != 2) continue;
            ci->branch[ci->nbranch++] = (branch_site){as_int(PyTuple_GET_ITEM(x, 0), -1),
                                                      as_int(PyTuple_GET_ITEM(x, 1), -1)};
        }
    }
    if (PyList_Check(l) && PyList_GET_SIZE(l)) {
        Py_ssize_t n = PyList_GET_SIZE(l) < 16 ? PyList_GET_SIZE(l) : 16; /* loops tracked per code */
        ci->loop = PyMem_RawCalloc((size_t)n, sizeof *ci->loop);
        for (Py_ssize_t i = 0; ci->loop && i < n; i++) {
            PyObject *x = PyList_GET_ITEM(l, i);
            if (!PyTuple_Check(x) || PyTuple_GET_SIZE(x) != 4) continue;
            ci->loop[ci->nloop++] = (loop_site){as_int(PyTuple_GET_ITEM(x, 0), -1), as_int(PyTuple_GET_ITEM(x, 1), -1),
                                                as_int(PyTuple_GET_ITEM(x, 2), -1), as_int(PyTuple_GET_ITEM(x, 3), 0)};
        }
    }
    Py_DECREF(r);
}

/* The cached info of a code object (NULL only when out of memory). */
static code_info *code_lookup(PyCodeObject *co) {
    int found;
    ent *e = probe(&codes, (uintptr_t)co, -1, &found);
    if (!e) return NULL;
    if (found) return e->ptr;
    code_info *ci = PyMem_RawCalloc(1, sizeof *ci);
    if (!ci) return NULL;
    ci->code = (PyObject *)co;
    Py_INCREF(co);
    PyObject *exc_t, *exc_v, *exc_tb;
    PyErr_Fetch(&exc_t, &exc_v, &exc_tb);
    in_lookup++;
    if (is_user_fn) {
        PyObject *r = PyObject_CallOneArg(is_user_fn, co->co_filename);
        ci->user = r && PyObject_IsTrue(r) == 1;
        Py_XDECREF(r);
        PyErr_Clear();
    }
    if (ci->user) analyze(ci);
    in_lookup--;
    PyErr_Restore(exc_t, exc_v, exc_tb);
    /* the calls above may have grown the table: probe again */
    e = probe(&codes, (uintptr_t)co, -1, &found);
    if (!e || found) { /* found: a nested lookup (trace event) got there first */
        Py_DECREF(ci->code);
        PyMem_RawFree(ci->branch);
        PyMem_RawFree(ci->loop);
        PyMem_RawFree(ci);
        return e ? e->ptr : NULL;
    }
    e->key = (uintptr_t)co;
    e->line = -1;
    e->ptr = ci;
    codes.n++;
    return ci;
}

/* Call-site id of (code, line), interned in the store on first sight. */
static int64_t site_lookup(PyCodeObject *co, int line) {
    int found;
    ent *e = probe(&sites, (uintptr_t)co, line, &found);
    if (!e) return 0;
    if (found) return e->val;
    const char *file = PyUnicode_AsUTF8(co->co_filename);
    const char *func = PyUnicode_AsUTF8(co->co_qualname ? co->co_qualname : co->co_name);
    if (!file || !func) {
        PyErr_Clear();
        file = file ? file : "?";
        func = func ? func : "?";
    }
    int64_t id = 0;
    if (jn_rec_callsite(file, line, func, &id)) id = 0; /* reported through the step write */
    e->key = (uintptr_t)co;
    e->line = line;
    e->val = id;
    sites.n++;
    return id;
}

/* Call-site id of instruction lasti (bytes) of a code object: keyed by
 * (code, lasti), because turning lasti into a line scans the line table on
 * 3.11.  line < 0: compute it from lasti. */
static int64_t site_at_lasti(PyCodeObject *co, int64_t lasti, int line) {
    uintptr_t key = (uintptr_t)co ^ 1; /* distinct from the (code, line) keys */
    int found;
    ent *e = probe(&sites, key, lasti, &found);
    if (!e) return 0;
    if (found) return e->val;
    if (line < 0) line = PyCode_Addr2Line(co, (int)lasti);
    int64_t id = site_lookup(co, line);
    e = probe(&sites, key, lasti, &found); /* site_lookup may have grown the table */
    if (!e || found) return id;
    e->key = key;
    e->line = lasti;
    e->val = id;
    sites.n++;
    return id;
}

/* Call-site id of a frame's current instruction. */
static int64_t site_at(PyCodeObject *co, PyFrameObject *f) {
    int64_t lasti = PyFrame_GetLasti(f);
    int found;
    ent *e = probe(&sites, (uintptr_t)co ^ 1, lasti, &found);
    if (e && found) return e->val;
    return site_at_lasti(co, lasti, PyFrame_GetLineNumber(f));
}

static int64_t stack_lookup(const int64_t *ids, int n) {
    uint64_t h = jn_rec_fnv(JN_REC_FNV_INIT, ids, sizeof(int64_t) * (size_t)n);
    uintptr_t key = (uintptr_t)(h | 1); /* 0 marks an empty slot */
    int found;
    ent *e = probe(&stacks, key, (int64_t)(h >> 1), &found);
    if (!e) return 0;
    if (found) return e->val;
    int64_t id = 0;
    if (jn_rec_stack(h, ids, n, &id)) id = 0;
    e->key = key;
    e->line = (int64_t)(h >> 1);
    e->val = id;
    stacks.n++;
    return id;
}

#define MAX_STACK 16

/* ------------------------------------------- 3.11: the frame-evaluation hook
 *
 * On 3.11 a trace function (the decision tracer) makes the interpreter run
 * every instruction of every frame through its tracing path, unspecialized,
 * even in frames whose line events are off: janus's own Python code (module
 * calls, the optimizer, the DataLoader) then runs several times slower.  A
 * frame-evaluation function (PEP 523) sees every frame before it runs: it
 * switches the tracing flag of the C evaluation loop off for non-user
 * frames and on for user frames, and restores it when the frame returns,
 * so only user frames pay for tracing (and produce the same events as
 * before; non-user frames never produced any).  Installing it stops the
 * interpreter from inlining Python-to-Python calls, a much smaller cost.
 * The same hook keeps, per thread, the innermost user frame and a counter
 * bumped whenever a user frame starts or ends: the call site of an op is
 * then found without creating frame objects, and reused while neither that
 * frame's instruction nor the counter changed.
 *
 * The hook reads the head of CPython 3.11's internal frame struct
 * (Include/internal/pycore_frame.h); it is checked against the public API
 * once before installing, and not installed if it disagrees or another
 * frame-evaluation function is present (a debugger): then the portable
 * path below is used. */
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
#define JN_EVAL_HOOK 1

typedef struct jn_iframe {
    PyFunctionObject *f_func;
    PyObject *f_globals, *f_builtins, *f_locals;
    PyCodeObject *f_code;
    PyFrameObject *frame_obj;
    struct jn_iframe *previous;
    _Py_CODEUNIT *prev_instr;
    int stacktop;
    _Bool is_entry;
    char owner; /* 1 = FRAME_OWNED_BY_GENERATOR */
} jn_iframe;

static int hook_on;       /* eval_hook is installed */
static uint64_t epoch;    /* bumped by every _rec_start: older per-thread state is stale */

typedef struct {
    jn_iframe *utop;      /* innermost user frame started through eval_hook */
    uint64_t utop_epoch;
    uint64_t gen;         /* bumped when a user frame starts or ends */
    /* the last call site found */
    uint64_t c_gen, c_epoch;
    jn_iframe *c_frame;
    int64_t c_lasti;
    jn_rec_site c_site;
} thread_sites;

static _Thread_local thread_sites T;

static int trace_fn(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg);

static int iframe_incomplete(const jn_iframe *f) {
    return f->owner != 1 && f->prev_instr < _PyCode_CODE(f->f_code) + f->f_code->_co_firsttraceable;
}

static int64_t iframe_lasti(const jn_iframe *f) { /* in bytes, as PyFrame_GetLasti */
    int64_t i = f->prev_instr - _PyCode_CODE(f->f_code);
    return i < 0 ? -1 : i * (int64_t)sizeof(_Py_CODEUNIT);
}

/* The cached info of a code object; unknown codes met while code_lookup is
 * calling into Python (is_user_fn, analyze_fn run through this hook too)
 * are treated as non-user and not looked up, which would recurse. */
static code_info *code_peek(PyCodeObject *co) {
    if (!in_lookup) return code_lookup(co);
    int found;
    ent *e = probe(&codes, (uintptr_t)co, -1, &found);
    return e && found ? e->ptr : NULL;
}

static PyObject *eval_hook(PyThreadState *ts, struct _PyInterpreterFrame *frame, int throwflag) {
    if (!jn_rec_on) return _PyEval_EvalFrameDefault(ts, frame, throwflag);
    jn_iframe *f = (jn_iframe *)frame;
    code_info *ci = code_peek(f->f_code);
    int user = ci && ci->user;
    /* only while our trace function is the only tracer, and not inside a
     * trace call (the interpreter has paused tracing there itself) */
    Py_tracefunc tf = ts->c_tracefunc, pf = ts->c_profilefunc;
    int touch = tf == trace_fn && !pf && !ts->tracing;
    _PyCFrame *cf = ts->cframe; /* the caller's loop: the new one copies its flag */
    uint8_t saved = cf->use_tracing;
    if (touch) cf->use_tracing = user ? 255 : 0;
    jn_iframe *utop = T.utop;
    uint64_t utop_epoch = T.utop_epoch;
    if (user) {
        T.utop = f;
        T.utop_epoch = epoch;
        T.gen++;
    }
    PyObject *r = _PyEval_EvalFrameDefault(ts, frame, throwflag);
    if (user) {
        T.utop = utop;
        T.utop_epoch = utop_epoch;
        T.gen++;
    }
    if (touch) /* the loop's exit copied the callee's flag into ours: put ours back */
        cf->use_tracing = ts->c_tracefunc == tf && ts->c_profilefunc == pf
                              ? saved
                              : (ts->c_tracefunc || ts->c_profilefunc) ? 255 : 0;
    return r;
}

/* The struct above matches this interpreter: the innermost frame's code and
 * instruction agree with the public API's. */
static int iframe_layout_ok(void) {
    PyThreadState *ts = PyThreadState_Get();
    PyFrameObject *pf = PyEval_GetFrame();
    if (!pf || !ts->cframe) return 0;
    jn_iframe *f = (jn_iframe *)ts->cframe->current_frame;
    while (f && iframe_incomplete(f)) f = f->previous;
    PyCodeObject *co = PyFrame_GetCode(pf);
    int ok = f && f->f_code == co && iframe_lasti(f) == PyFrame_GetLasti(pf);
    Py_DECREF(co);
    return ok;
}

/* on: JANUS_RECORD_EVAL_HOOK (0: the portable path, to compare, or if a
 * tool that swaps frame evaluation later misbehaves with it) */
static void hook_install(int on) {
    epoch++;
    if (!on) return;
    PyInterpreterState *in = PyInterpreterState_Get();
    if (hook_on || _PyInterpreterState_GetEvalFrameFunc(in) != _PyEval_EvalFrameDefault || !iframe_layout_ok())
        return;
    _PyInterpreterState_SetEvalFrameFunc(in, eval_hook);
    hook_on = 1;
}

static void hook_remove(void) {
    if (!hook_on) return;
    PyInterpreterState *in = PyInterpreterState_Get();
    if (_PyInterpreterState_GetEvalFrameFunc(in) == eval_hook)
        _PyInterpreterState_SetEvalFrameFunc(in, _PyEval_EvalFrameDefault);
    hook_on = 0;
}

/* The user frames from f outwards, innermost first. */
static void site_from(jn_iframe *f, jn_rec_site *out) {
    int64_t ids[MAX_STACK];
    int n = 0;
    for (; f && n < MAX_STACK; f = f->previous) {
        if (iframe_incomplete(f)) continue;
        code_info *ci = code_lookup(f->f_code);
        if (ci && ci->user) ids[n++] = site_at_lasti(f->f_code, iframe_lasti(f), -1);
    }
    out->callsite = n ? ids[0] : 0;
    out->stack = n ? stack_lookup(ids, n) : 0;
}

static void compute_site_hooked(jn_rec_site *out) {
    jn_iframe *u = T.utop_epoch == epoch ? T.utop : NULL;
    if (!u) { /* no user frame started since recording began: walk from the top */
        PyThreadState *ts = PyThreadState_Get();
        site_from(ts->cframe ? (jn_iframe *)ts->cframe->current_frame : NULL, out);
        return;
    }
    /* the frames outside u cannot change while u runs, and u itself only
     * moves its instruction */
    int64_t lasti = iframe_lasti(u);
    if (T.c_frame == u && T.c_lasti == lasti && T.c_gen == T.gen && T.c_epoch == epoch) {
        *out = T.c_site;
        return;
    }
    site_from(u, out);
    T.c_frame = u;
    T.c_lasti = lasti;
    T.c_gen = T.gen;
    T.c_epoch = epoch;
    T.c_site = *out;
}
#else
static void hook_install(int on) { (void)on; }
static void hook_remove(void) {}
#endif

static void compute_site(jn_rec_site *out) {
#ifdef JN_EVAL_HOOK
    if (hook_on) {
        compute_site_hooked(out);
        return;
    }
#endif
    int64_t ids[MAX_STACK];
    int n = 0;
    PyFrameObject *f = PyEval_GetFrame();
    Py_XINCREF(f);
    while (f && n < MAX_STACK) {
        PyCodeObject *co = PyFrame_GetCode(f);
        code_info *ci = code_lookup(co);
        if (ci && ci->user) ids[n++] = site_at(co, f);
        Py_DECREF(co);
        PyFrameObject *b = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = b;
    }
    Py_XDECREF(f);
    out->callsite = n ? ids[0] : 0;
    out->stack = n ? stack_lookup(ids, n) : 0;
}

/* The autograd engine runs backward with the GIL released: take it once to
 * see the Python frames (they cannot change until the GIL is back), and
 * reuse the answer for the rest of that backward pass. */
static int nogil_valid;
static jn_rec_site nogil_site;

static void site_fn(jn_rec_site *out) {
    if (PyGILState_Check()) {
        nogil_valid = 0;
        compute_site(out);
        return;
    }
    if (!nogil_valid) {
        PyGILState_STATE g = PyGILState_Ensure();
        compute_site(&nogil_site);
        PyGILState_Release(g);
        nogil_valid = 1;
    }
    *out = nogil_site;
}

/* ------------------------------------------------- decisions (3.11 trace) */
typedef struct {
    PyFrameObject *frame; /* borrowed: popped at its 'return' event */
    code_info *ci;
    int last_line;
    int64_t trips[16];    /* per loop of ci: arrivals at the head in the current run; 0 = no run */
} frame_state;

#define MAX_FRAMES 512
static frame_state fstack[MAX_FRAMES];
static int fdepth;         /* entries in fstack (may exceed MAX_FRAMES: then untracked) */
static int tracing;
static PyObject *str_trace_lines;

/* Byte offset of PyFrameObject.f_trace_lines, from the type's own member
 * descriptor (-1: unknown, use setattr).  Writing the byte directly skips
 * a generic setattr on every call of a non-user function. */
static Py_ssize_t trace_lines_off = -1;

static void find_trace_lines_offset(void) {
    PyObject *d = PyObject_GetAttrString((PyObject *)&PyFrame_Type, "f_trace_lines");
    if (!d) {
        PyErr_Clear();
        return;
    }
    if (Py_TYPE(d) == &PyMemberDescr_Type) {
        PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
        if (m && m->type == T_BOOL && !(m->flags & READONLY)) trace_lines_off = m->offset;
    }
    Py_DECREF(d);
}

static void no_line_events(PyFrameObject *frame) {
    if (trace_lines_off >= 0) *((char *)frame + trace_lines_off) = 0;
    else if (PyObject_SetAttr((PyObject *)frame, str_trace_lines, Py_False) < 0) PyErr_Clear();
}

static void end_loop(frame_state *fs, int k) {
    loop_site *L = &fs->ci->loop[k];
    int64_t trips = fs->trips[k] - (L->for_loop ? 1 : 0);
    fs->trips[k] = 0;
    PyCodeObject *co = (PyCodeObject *)fs->ci->code;
    jn_rec_decision(site_lookup(co, L->head), JN_DEC_LOOP, trips < 0 ? 0 : trips);
}

static void on_line(frame_state *fs, int line) {
    code_info *ci = fs->ci;
    int prev = fs->last_line;
    fs->last_line = line;
    if (prev >= 0)
        for (int k = 0; k < ci->nbranch; k++)
            if (ci->branch[k].line == prev) {
                jn_rec_decision(site_lookup((PyCodeObject *)ci->code, prev), JN_DEC_BRANCH,
                                line == ci->branch[k].fall);
                break;
            }
    for (int k = 0; k < ci->nloop; k++) {
        loop_site *L = &ci->loop[k];
        if (fs->trips[k] && (line < L->lo || line > L->hi)) end_loop(fs, k);
        if (line == L->head) fs->trips[k]++;
    }
}

static void on_return(frame_state *fs) {
    for (int k = 0; k < fs->ci->nloop; k++)
        if (fs->trips[k]) end_loop(fs, k);
}

static frame_state *push(PyFrameObject *frame, code_info *ci) {
    int d = fdepth++;
    if (d >= MAX_FRAMES) return NULL;
    frame_state *fs = &fstack[d];
    memset(fs, 0, sizeof *fs);
    fs->frame = frame;
    fs->ci = ci;
    fs->last_line = -1;
    return fs;
}

static int trace_fn(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg) {
    (void)obj; (void)arg;
    if (!jn_rec_on) return 0;
    switch (what) {
    case PyTrace_CALL: {
        PyCodeObject *co = PyFrame_GetCode(frame);
        code_info *ci = code_lookup(co);
        Py_DECREF(co);
        if (!ci) return 0;
        push(frame, ci);
        /* non-user frames: no line events at all (the expensive part) */
        if (!ci->user) no_line_events(frame);
        return 0;
    }
    case PyTrace_RETURN:
        if (fdepth > 0) {
            int d = fdepth - 1;
            if (d >= MAX_FRAMES) {
                fdepth--;
                return 0;
            }
            if (fstack[d].frame == frame) {
                if (fstack[d].ci->user) on_return(&fstack[d]);
                fdepth--;
            }
        }
        return 0;
    case PyTrace_LINE: {
        frame_state *fs = NULL;
        if (fdepth > 0 && fdepth <= MAX_FRAMES && fstack[fdepth - 1].frame == frame) fs = &fstack[fdepth - 1];
        if (!fs) {
            /* a frame that was running when tracing started (the script's
             * module frame): adopt it */
            for (int d = (fdepth < MAX_FRAMES ? fdepth : MAX_FRAMES) - 1; d >= 0 && !fs; d--)
                if (fstack[d].frame == frame) fs = &fstack[d];
            if (!fs) {
                PyCodeObject *co = PyFrame_GetCode(frame);
                code_info *ci = code_lookup(co);
                Py_DECREF(co);
                if (!ci || !(fs = push(frame, ci))) return 0;
            }
        }
        if (fs->ci->user) on_line(fs, PyFrame_GetLineNumber(frame));
        return 0;
    }
    default:
        return 0;
    }
}

/* ------------------------------------------------------- Python functions */
static PyObject *rec_error(jn_status s) {
    if (s == JN_ERR_IO) {
        PyErr_SetString(PyExc_OSError, jn_errmsg());
        return NULL;
    }
    return jn_py_raise(s);
}

static void free_tables(void) {
    for (size_t i = 0; i < codes.cap; i++) {
        code_info *ci = codes.e[i].ptr;
        if (!codes.e[i].key || !ci) continue;
        Py_DECREF(ci->code);
        PyMem_RawFree(ci->branch);
        PyMem_RawFree(ci->loop);
        PyMem_RawFree(ci);
    }
    PyMem_RawFree(codes.e);
    PyMem_RawFree(sites.e);
    PyMem_RawFree(stacks.e);
    memset(&codes, 0, sizeof codes);
    memset(&sites, 0, sizeof sites);
    memset(&stacks, 0, sizeof stacks);
}

/* _rec_start(db_path, run_id, is_user_file, analyze_code, trace_decisions) */
static PyObject *py_rec_start(PyObject *self, PyObject *args) {
    (void)self;
    const char *path;
    long long run;
    PyObject *uf, *an;
    int dec;
    if (!PyArg_ParseTuple(args, "sLOOp", &path, &run, &uf, &an, &dec)) return NULL;
    if (!str_trace_lines && !(str_trace_lines = PyUnicode_InternFromString("f_trace_lines"))) return NULL;
    if (trace_lines_off < 0) find_trace_lines_offset();
    Py_XDECREF(is_user_fn);
    Py_XDECREF(analyze_fn);
    Py_INCREF(uf);
    Py_INCREF(an);
    is_user_fn = uf;
    analyze_fn = an;
    jn_rec_set_site_fn(site_fn);
    char pyver[64];
    snprintf(pyver, sizeof pyver, "%d.%d.%d", PY_MAJOR_VERSION, PY_MINOR_VERSION, PY_MICRO_VERSION);
    int hook = 1;
    jn_status s = jn_setting_bool(JN_S_RECORD_EVAL_HOOK, &hook);
    if (!s) s = jn_rec_start(path, run, pyver);
    if (s) return rec_error(s);
    fdepth = 0;
    nogil_valid = 0;
    hook_install(hook);
    if (dec) {
        PyEval_SetTrace(trace_fn, NULL);
        tracing = 1;
    }
    Py_RETURN_NONE;
}

/* a pending hook error as an exception message (or None) */
static PyObject *py_rec_error(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    const char *msg;
    if (!jn_rec_pending_error(&msg)) Py_RETURN_NONE;
    return PyUnicode_FromString(msg);
}

static PyObject *py_rec_stop(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    if (tracing) {
        PyEval_SetTrace(NULL, NULL);
        tracing = 0;
    }
    hook_remove();
    jn_status s = jn_rec_stop();
    free_tables();
    jn_rec_set_site_fn(NULL);
    if (s) return rec_error(s);
    Py_RETURN_NONE;
}

static PyObject *py_rec_end_step(PyObject *self, PyObject *arg) {
    (void)self;
    const char *kind = PyUnicode_AsUTF8(arg);
    if (!kind) return NULL;
    jn_status s = jn_rec_end_step(kind);
    if (s) return rec_error(s);
    Py_RETURN_NONE;
}

/* A role _rec_mark / _rec_mark_all may set (a scalar's carries its value). */
static int role_arg(long r) {
    if (r >= JN_TR_TEMP && r <= JN_TR_DATAIDX && r != JN_TR_SCALAR) return 0;
    PyErr_Format(PyExc_ValueError, "_rec_mark: no tensor role %ld (the JN_TR_* constants of janus._C)", r);
    return -1;
}

/* _rec_mark(tensor, role) */
static PyObject *py_rec_mark(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2 || !JnTensor_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "_rec_mark(tensor, role)");
        return NULL;
    }
    long r = PyLong_AsLong(args[1]);
    if (r == -1 && PyErr_Occurred()) return NULL;
    if (role_arg(r)) return NULL;
    jn_rec_mark(JN_T(args[0]), (int)r);
    Py_RETURN_NONE;
}

/* _rec_mark_all(iterable of tensors, role): one call per optimizer step */
static PyObject *py_rec_mark_all(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *it, *x;
    int role;
    if (!PyArg_ParseTuple(args, "Oi", &it, &role) || role_arg(role)) return NULL;
    PyObject *iter = PyObject_GetIter(it);
    if (!iter) return NULL;
    while ((x = PyIter_Next(iter))) {
        if (JnTensor_Check(x) && jn_rec_role(JN_T(x)) != JN_TR_PARAM) jn_rec_mark(JN_T(x), role);
        Py_DECREF(x);
    }
    Py_DECREF(iter);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_rec_role(PyObject *self, PyObject *arg) {
    (void)self;
    if (!JnTensor_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "_rec_role(tensor)");
        return NULL;
    }
    return PyLong_FromLong(jn_rec_role(JN_T(arg)));
}

/* _rec_sync(tensor_or_None, kind, value_or_None) */
static PyObject *py_rec_sync(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "_rec_sync(tensor, kind, value)");
        return NULL;
    }
    long kind = PyLong_AsLong(args[1]);
    if (kind == -1 && PyErr_Occurred()) return NULL;
    double v = NAN;
    if (args[2] != Py_None) {
        v = PyFloat_AsDouble(args[2]);
        if (v == -1.0 && PyErr_Occurred()) return NULL;
    }
    jn_rec_sync((int)kind, v, JnTensor_Check(args[0]) ? JN_T(args[0]) : NULL);
    Py_RETURN_NONE;
}

/* ---- regions (schema v9; janus/_record.py's region hooks) ---- */
#define REGION_ARGS_MAX 256

/* The tensors in obj: a tensor, or tuples, lists and dict values of them
 * (depth at most 3, the first REGION_ARGS_MAX). */
static void region_args(PyObject *obj, int depth, int64_t *ids, int *n) {
    if (*n >= REGION_ARGS_MAX) return;
    if (JnTensor_Check(obj)) {
        ids[(*n)++] = JN_T(obj)->id;
        return;
    }
    if (depth >= 3) return;
    if (PyTuple_Check(obj) || PyList_Check(obj)) {
        Py_ssize_t k = PySequence_Fast_GET_SIZE(obj);
        PyObject **items = PySequence_Fast_ITEMS(obj);
        for (Py_ssize_t i = 0; i < k; i++) region_args(items[i], depth + 1, ids, n);
    } else if (PyDict_Check(obj)) {
        Py_ssize_t pos = 0;
        PyObject *key, *v;
        while (PyDict_Next(obj, &pos, &key, &v)) region_args(v, depth + 1, ids, n);
    }
}

/* _rec_region_enter(region, given[, training]): the entry marker with the
 * ids of the tensors given (walked through tuples, lists and dicts); with
 * training (a module call: the module's flag), the call's mode too */
static PyObject *py_rec_region_enter(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs < 2 || nargs > 3) {
        PyErr_SetString(PyExc_TypeError, "_rec_region_enter(region, given[, training])");
        return NULL;
    }
    long long r = PyLong_AsLongLong(args[0]);
    if (r == -1 && PyErr_Occurred()) return NULL;
    int64_t ids[REGION_ARGS_MAX + 1];
    int n = 0;
    region_args(args[1], 0, ids, &n);
    if (nargs == 3) {
        int training = PyObject_IsTrue(args[2]);
        if (training < 0) return NULL;
        ids[n++] = -JN_DB_REGION_MODE(jn_grad_enabled(), training);
    }
    jn_rec_region(r, 1, ids, n);
    Py_RETURN_NONE;
}

static PyObject *py_rec_region_exit(PyObject *self, PyObject *arg) {
    (void)self;
    long long r = PyLong_AsLongLong(arg);
    if (r == -1 && PyErr_Occurred()) return NULL;
    jn_rec_region(r, 0, NULL, 0);
    Py_RETURN_NONE;
}

/* _rec_region_put(region, kind, qualname, file, line, code_hash) */
static PyObject *py_rec_region_put(PyObject *self, PyObject *args) {
    (void)self;
    jn_db_region r;
    memset(&r, 0, sizeof r);
    long long id;
    if (!PyArg_ParseTuple(args, "Lsssis", &id, &r.kind, &r.qualname, &r.file, &r.line, &r.code_hash)) return NULL;
    r.region = id;
    jn_status s = jn_rec_region_put(&r);
    if (s) return jn_py_raise(s);
    Py_RETURN_NONE;
}

/* _rec_region_codes(region, [(hash, file, line, name, user, effect or None, effect_site or None)]) */
static PyObject *py_rec_region_codes(PyObject *self, PyObject *args) {
    (void)self;
    long long id;
    PyObject *list;
    if (!PyArg_ParseTuple(args, "LO!", &id, &PyList_Type, &list)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(list);
    jn_db_region_code *rows = calloc((size_t)n + 1, sizeof *rows);
    if (!rows) return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) {
        jn_db_region_code *c = &rows[i];
        c->region = id;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(list, i), "ssisizz", &c->hash, &c->file, &c->line, &c->name, &c->user,
                              &c->effect, &c->effect_site)) {
            free(rows);
            return NULL;
        }
    }
    jn_status s = jn_rec_region_codes_put(rows, (int)n);
    free(rows);
    if (s) return jn_py_raise(s);
    Py_RETURN_NONE;
}

/* _rec_quiet(delta): nested syncs inside printing are not separate syncs */
static PyObject *py_rec_quiet(PyObject *self, PyObject *arg) {
    (void)self;
    long d = PyLong_AsLong(arg);
    if (d == -1 && PyErr_Occurred()) return NULL;
    jn_rec_quiet += (int)d;
    if (jn_rec_quiet < 0) jn_rec_quiet = 0;
    Py_RETURN_NONE;
}

static PyObject *py_rec_active(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    return PyBool_FromLong(jn_rec_on);
}

static PyObject *py_rec_stats(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    jn_rec_stats st;
    jn_rec_get_stats(&st);
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:L}", "steps", (long long)st.steps, "ops", (long long)st.ops,
                         "syncs", (long long)st.syncs, "decisions", (long long)st.decisions, "bytes",
                         (long long)st.bytes, "stored", (long long)st.stored, "last_stored",
                         (long long)st.last_stored);
}

static PyObject *tref_list(const jn_db_tref *r, int n) {
    PyObject *l = PyList_New(n);
    for (int i = 0; l && i < n; i++) {
        PyObject *shape = PyTuple_New(r[i].ndim), *strides = PyTuple_New(r[i].ndim);
        for (int d = 0; shape && strides && d < r[i].ndim; d++) {
            PyTuple_SET_ITEM(shape, d, PyLong_FromLongLong(r[i].shape[d]));
            PyTuple_SET_ITEM(strides, d, PyLong_FromLongLong(r[i].strides[d]));
        }
        PyObject *x = Py_BuildValue("{s:L,s:K,s:s,s:N,s:N,s:L,s:i,s:i,s:d,s:i}", "id", (long long)r[i].id,
                                    "version", (unsigned long long)r[i].version, "dtype",
                                    r[i].dtype < JN_NDTYPES ? jn_dtype_names[r[i].dtype] : "?", "shape", shape,
                                    "strides", strides, "offset", (long long)r[i].offset, "role", r[i].role,
                                    "device", r[i].device, "scalar", r[i].scalar, "pytype", r[i].pytype);
        if (!x) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i, x);
    }
    return l;
}

static PyObject *attrs_list(const jn_db_event *ev) {
    const jn_opinfo *info = ev->op < JN_NOPS ? jn_op_info((jn_op)ev->op) : NULL;
    PyObject *l = PyList_New(ev->nattrs);
    for (int k = 0; l && k < ev->nattrs; k++) {
        char kind = ev->attr_kind[k] ? ev->attr_kind[k] : info ? info->attr_kind[k] : JN_A_INT;
        PyObject *v;
        if (kind == JN_A_FLOAT) v = PyFloat_FromDouble(ev->attrs.a[k].f);
        else if (kind == JN_A_INTS) {
            v = PyTuple_New(ev->attrs.a[k].l.n);
            for (int j = 0; v && j < ev->attrs.a[k].l.n; j++)
                PyTuple_SET_ITEM(v, j, PyLong_FromLongLong(ev->attrs.a[k].l.v[j]));
        } else v = PyLong_FromLongLong(ev->attrs.a[k].i);
        if (!v) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, k, v);
    }
    return l;
}

/* _rec_read_step(db_path, run_id, step) -> list of event dicts (tests, tools) */
static PyObject *py_rec_read_step(PyObject *self, PyObject *args) {
    (void)self;
    const char *path;
    long long run, step;
    if (!PyArg_ParseTuple(args, "sLL", &path, &run, &step)) return NULL;
    jn_db *db;
    jn_status s = jn_db_open(path, JN_DB_READONLY, &db);
    if (s) return rec_error(s);
    void *data = NULL;
    size_t len = 0;
    jn_db_decoder *dec = NULL;
    PyObject *out = NULL;
    if ((s = jn_db_read_chunk(db, run, step, &data, &len)) || (s = jn_db_decoder_new(data, len, &dec))) {
        rec_error(s);
        goto done;
    }
    out = PyList_New(0);
    for (;;) {
        jn_db_event ev;
        int got = 0;
        memset(&ev, 0, sizeof ev);
        if ((s = jn_db_decoder_next(dec, &ev, &got))) {
            Py_CLEAR(out);
            rec_error(s);
            goto done;
        }
        if (!got) break;
        PyObject *d = NULL;
        if (ev.kind == JN_EV_OP)
            d = Py_BuildValue("{s:s,s:s,s:i,s:N,s:N,s:N,s:L,s:L}", "kind", "op", "op",
                              ev.op < JN_NOPS ? jn_op_info((jn_op)ev.op)->name : "?", "inplace", ev.inplace,
                              "attrs", attrs_list(&ev), "inputs", tref_list(ev.in, ev.nin), "outputs",
                              tref_list(ev.out, ev.nout), "callsite", (long long)ev.callsite, "stack",
                              (long long)ev.stack);
        else if (ev.kind == JN_EV_SYNC)
            d = Py_BuildValue("{s:s,s:i,s:d,s:L,s:L,s:L}", "kind", "sync", "sync_kind", ev.sync_kind, "value",
                              ev.value, "tensor_id", (long long)ev.tensor_id, "callsite", (long long)ev.callsite,
                              "stack", (long long)ev.stack);
        else if (ev.kind == JN_EV_LIVE) {
            PyObject *ids = PyList_New(0);
            for (uint32_t i = 0; ids && i < ev.nlive; i++) {
                PyObject *v = PyLong_FromLongLong((long long)ev.live[i]);
                if (!v || PyList_Append(ids, v) < 0) Py_CLEAR(ids);
                Py_XDECREF(v);
            }
            d = ids ? Py_BuildValue("{s:s,s:N,s:L,s:L}", "kind", "live", "ids", ids, "callsite",
                                    (long long)ev.callsite, "stack", (long long)ev.stack)
                    : NULL;
        } else if (ev.kind == JN_EV_REGION) {
            PyObject *ids = PyList_New(0);
            for (uint32_t i = 0; ids && i < ev.nargs; i++) {
                PyObject *v = PyLong_FromLongLong((long long)ev.args[i]);
                if (!v || PyList_Append(ids, v) < 0) Py_CLEAR(ids);
                Py_XDECREF(v);
            }
            d = ids ? Py_BuildValue("{s:s,s:L,s:O,s:N,s:L,s:L}", "kind", "region", "region", (long long)ev.region,
                                    "enter", ev.region_enter ? Py_True : Py_False, "args", ids, "callsite",
                                    (long long)ev.callsite, "stack", (long long)ev.stack)
                    : NULL;
        } else
            d = Py_BuildValue("{s:s,s:i,s:L,s:L}", "kind", "decision", "dec_kind", ev.dec_kind, "outcome",
                              (long long)ev.outcome, "callsite", (long long)ev.callsite);
        if (!d || PyList_Append(out, d) < 0) {
            Py_XDECREF(d);
            Py_CLEAR(out);
            goto done;
        }
        Py_DECREF(d);
    }
done:
    jn_db_decoder_free(dec);
    free(data);
    jn_db_close(db);
    return out;
}

/* _rec_create_run(db_path, argv_json) -> run id: creates the store if needed
 * (what `janus record` does before starting the child; tests use it) */
static PyObject *py_rec_create_run(PyObject *self, PyObject *args) {
    (void)self;
    const char *path, *argv_json;
    if (!PyArg_ParseTuple(args, "ss", &path, &argv_json)) return NULL;
    jn_db *db;
    jn_status s = jn_db_open(path, JN_DB_CREATE, &db);
    if (s) return rec_error(s);
    char hash[24];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)jn_optable_hash());
    jn_db_run_info info;
    memset(&info, 0, sizeof info);
    info.argv_json = argv_json;
    info.cwd = ".";
    info.python_version = PY_VERSION;
    info.janus_version = JANUS_VERSION;
    info.optable_hash = hash;
    info.device = "cpu";
    /* the op table rows, so events can be named */
    size_t cap = 64 * JN_NOPS, len = 0;
    char *ops = PyMem_RawMalloc(cap);
    for (int i = 0; ops && i < JN_NOPS; i++) {
        const jn_opinfo *oi = jn_op_info((jn_op)i);
        int n = snprintf(ops + len, cap - len, "%s %s\n", oi->name, oi->schema);
        if (n < 0 || (size_t)n >= cap - len) break;
        len += (size_t)n;
    }
    info.optable_ops = ops ? ops : "";
    int64_t id = 0;
    s = jn_db_run_begin(db, &info, &id);
    PyMem_RawFree(ops);
    jn_db_close(db);
    if (s) return rec_error(s);
    return PyLong_FromLongLong(id);
}

/* _rec_runs(db_path) -> [(run id, kind, argv JSON or None)], by id: the
 * store opened read-only through db/, so Python names the same file as the
 * janus command for the same path */
static PyObject *py_rec_runs(PyObject *self, PyObject *args) {
    (void)self;
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path)) return NULL;
    jn_db *db;
    jn_status s = jn_db_open(path, JN_DB_READONLY, &db);
    if (s) return rec_error(s);
    jn_db_run_row *runs = NULL;
    int n = 0;
    s = jn_db_runs(db, 0, &runs, &n);
    jn_db_close(db);
    if (s) return rec_error(s);
    PyObject *out = PyList_New(n);
    for (int i = 0; out && i < n; i++) {
        PyObject *t = Py_BuildValue("(Lsz)", (long long)runs[i].id, runs[i].kind, runs[i].argv_json);
        if (!t) Py_CLEAR(out);
        else PyList_SET_ITEM(out, i, t);
    }
    jn_db_runs_free(runs, n);
    return out;
}

PyMethodDef jn_py_recorder_methods[] = {
    {"_rec_runs", py_rec_runs, METH_VARARGS, "_rec_runs(db) -> [(id, kind, argv_json)]"},
    {"_rec_create_run", py_rec_create_run, METH_VARARGS, "_rec_create_run(db, argv_json) -> run id"},
    {"_rec_start", py_rec_start, METH_VARARGS, "_rec_start(db, run, is_user_file, analyze_code, decisions)"},
    {"_rec_stop", py_rec_stop, METH_NOARGS, "flush the trailing step and close the store"},
    {"_rec_end_step", py_rec_end_step, METH_O, "_rec_end_step(kind): write the current step"},
    {"_rec_mark", (PyCFunction)(void (*)(void))py_rec_mark, METH_FASTCALL, "_rec_mark(tensor, role)"},
    {"_rec_mark_all", py_rec_mark_all, METH_VARARGS, "_rec_mark_all(tensors, role)"},
    {"_rec_role", py_rec_role, METH_O, "the recorder role of a tensor"},
    {"_rec_sync", (PyCFunction)(void (*)(void))py_rec_sync, METH_FASTCALL, "_rec_sync(tensor, kind, value)"},
    {"_rec_quiet", py_rec_quiet, METH_O, NULL},
    {"_rec_region_enter", (PyCFunction)(void (*)(void))py_rec_region_enter, METH_FASTCALL,
     "_rec_region_enter(region, given[, training]): a region's entry marker with the tensors it was given (and a module call's mode)"},
    {"_rec_region_exit", py_rec_region_exit, METH_O, "_rec_region_exit(region): a region's exit marker"},
    {"_rec_region_put", py_rec_region_put, METH_VARARGS,
     "_rec_region_put(region, kind, qualname, file, line, code_hash): store a region of this run"},
    {"_rec_region_codes", py_rec_region_codes, METH_VARARGS,
     "_rec_region_codes(region, [(hash, file, line, name, user, effect, effect_site)]): its code objects"},
    {"_rec_active", py_rec_active, METH_NOARGS, "is the recorder hook installed?"},
    {"_rec_error", py_rec_error, METH_NOARGS, "the error that stopped recording, or None"},
    {"_rec_stats", py_rec_stats, METH_NOARGS, "steps/ops/syncs/decisions/bytes recorded so far; stored, last_stored: steps committed"},
    {"_rec_read_step", py_rec_read_step, METH_VARARGS, "_rec_read_step(db, run, step) -> [event dicts]"},
    {NULL, NULL, 0, NULL}};
