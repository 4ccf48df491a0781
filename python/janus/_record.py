"""The Python side of the recorder (active only under `janus record`).

`janus record` creates a run in the trace store and starts the script with
JANUS_RECORD_DB (the store's path) and JANUS_RECORD_RUN (the run id) set.
When janus is imported with those set, start() opens the store through the C
recorder (janus._C._rec_*), which from then on records every op the
dispatcher runs.  This module supplies what only Python knows:

- which files are the user's (not janus, the standard library or
  site-packages), for call sites and control-flow decisions;
- per code object, which lines branch and where loops are (from the
  bytecode), for the C trace function (every Python version: it gives one
  trip count per loop run, what the analyzer reads);
- step boundaries: Optimizer.step() (janus._step_hook) and janus.step();
- roles: parameters and buffers are marked when created, optimizer state
  after every optimizer step;
- printing as a sync point; the final flush at exit;
- regions (schema v9, docs/ARCHITECTURE.md 5.2): every call of a module
  (Module.__call__), an optimizer's step() and zero_grad(), and
  nn.utils.clip_grad_norm_ is marked in the trace by an entry event (with
  the ids of the tensors it was given: its arguments; an optimizer's or a
  clipping's gradients) and an exit event.  Each region object is stored
  once (kind, class, where its code is defined, the hash of that code).
  Its first _REGION_OBSERVED calls run under a profile function that
  collects the code objects they run and the builtins they call; each code
  object is scanned (janus._region._Scan, the same scan replay uses) and
  stored with the first effect outside the call its bytecode or its calls
  show.  The analyzer (analyzer/regions.c) turns that and the trace into
  a verdict per region.  JANUS_RECORD_REGIONS=0 turns this off.

Without JANUS_RECORD_DB nothing here runs except the `active` flag checks
(False) and janus.step(), which then does nothing.
"""
import atexit
import dis
import functools
import os
import re
import sys
import sysconfig
import types
import weakref

from . import _C

active = False
regions = False  # marking region calls (active and JANUS_RECORD_REGIONS)

ROLE_HOST, ROLE_PARAM, ROLE_STATE = _C.JN_TR_HOST, _C.JN_TR_PARAM, _C.JN_TR_STATE
SYNC_ITEM, SYNC_BOOL, SYNC_TOLIST, SYNC_NUMPY, SYNC_PRINT, SYNC_COMPARE = 1, 2, 3, 4, 5, 6
DEC_BRANCH, DEC_LOOP = 1, 2

_janus_dir = os.path.dirname(os.path.abspath(__file__))


def _library_dirs():
    dirs = {_janus_dir}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            dirs.add(os.path.abspath(p))
    return tuple(d.rstrip(os.sep) + os.sep for d in dirs)


_LIB_DIRS = None


def _is_user_file(filename):
    """Is this code from the user's own files?  Called once per code object."""
    global _LIB_DIRS
    if not filename or filename.startswith("<frozen"):
        return False
    if filename.startswith("<"):  # <stdin>, <string>: code the user typed or exec'd
        return True
    if _LIB_DIRS is None:
        _LIB_DIRS = _library_dirs()
    f = os.path.abspath(filename)
    if f.startswith(_LIB_DIRS):
        return False
    parts = f.split(os.sep)
    return "site-packages" not in parts and "dist-packages" not in parts


def _line_of(ins):
    ln = getattr(ins, "line_number", None)  # 3.13+
    if ln is None and ins.positions is not None:
        ln = ins.positions.lineno
    return ln


def _instructions(code):
    """Instructions with a line each (a missing line inherits the previous)."""
    out, line = [], code.co_firstlineno
    for ins in dis.get_instructions(code):
        ln = _line_of(ins)
        if ln is not None:
            line = ln
        out.append((ins, line))
    return out


def _is_cond_jump(name):
    return name.startswith("POP_JUMP") and "IF" in name


def _analyze_code(code):
    """([(if_line, fall_through_line)], [(head, lo, hi, is_for)]) for a code object.

    Branch sites: the last forward conditional jump of a line; the outcome
    recorded is whether the next line executed is the jump's fall-through
    (the body of an `if`).  Loops: targets of backward jumps; the head is
    the target's line, the body range spans target..jump."""
    ins = _instructions(code)
    at = {i.offset: k for k, (i, _) in enumerate(ins)}
    branches, loops = {}, {}
    for k, (i, line) in enumerate(ins):
        target = i.argval if isinstance(i.argval, int) and i.opcode in dis.hasjrel + dis.hasjabs else None
        if target is None or target not in at:
            continue
        if _is_cond_jump(i.opname) and target > i.offset and k + 1 < len(ins):
            if ins[k + 1][0].opname.startswith("JUMP_BACKWARD"):
                continue  # 3.12+: a while loop's repeated test at its bottom, not the line's branch
            fall, tline = ins[k + 1][1], ins[at[target]][1]
            if fall != line and fall != tline:
                branches[line] = fall
            else:
                branches.pop(line, None)
        elif target < i.offset and i.opname != "JUMP_BACKWARD_NO_INTERRUPT" and "SEND" not in i.opname:
            t = at[target]
            head = ins[t][1]
            span = [ln for _, ln in ins[t:k + 1]]
            lo, hi = min(span), max(span)
            is_for = ins[t][0].opname == "FOR_ITER"
            if head in loops:
                plo, phi, pfor = loops[head]
                lo, hi, is_for = min(lo, plo), max(hi, phi), pfor or is_for
            loops[head] = (lo, hi, is_for)
    return (sorted(branches.items()), [(h, lo, hi, int(f)) for h, (lo, hi, f) in sorted(loops.items())])


# -------------------------------------------------------------- steps
def _end_step(kind):
    if not active:
        # janus.step() also ends a replayed (or timed eager) step; without janus._replay
        # imported there is none to end (and no import per step)
        rp = sys.modules.get("janus._replay")
        if rp is not None:
            rp.end_step()
        return
    try:
        _C._rec_end_step(kind)
    except Exception as e:  # a full disk must not kill the training run
        _fail(e)
        return
    if not _C._rec_active():  # the op hook hit an error and stopped recording
        _fail(_C._rec_error() or "recording stopped")


def _step_hook():
    """Called by Optimizer.step() after every step (janus._step_hook)."""
    _end_step("optimizer")


class _StepContext:
    __slots__ = ()

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _end_step("marker")
        return False

    def __repr__(self):
        return "janus.step()"


_STEP = _StepContext()


def step():
    """Mark a training-step boundary for loops without an optimizer.

    `janus.step()` ends the current step; `with janus.step(): ...` also ends
    the step when the block exits.  Does nothing unless recording."""
    _end_step("marker")
    return _STEP


def _mark_optimizer(opt, args, kwargs):
    """Global optimizer post-step hook: parameters and state live across steps."""
    for g in opt.param_groups:
        _C._rec_mark_all(g["params"], ROLE_PARAM)
    for st in opt.state.values():
        if isinstance(st, dict):
            _C._rec_mark_all(st.values(), ROLE_STATE)


def mark_param(t):
    if active:
        _C._rec_mark(t, ROLE_PARAM)


def mark_state(t):
    if active and t is not None:
        _C._rec_mark(t, ROLE_STATE)


def print_begin(t):
    """Printing a tensor reads its data: one PRINT sync, no nested ones."""
    value = None
    if t.numel() == 1:
        _C._rec_quiet(1)
        try:
            value = float(t.item())
        except Exception:
            value = None
        finally:
            _C._rec_quiet(-1)
    _C._rec_sync(t, SYNC_PRINT, value)
    _C._rec_quiet(1)


def print_end():
    _C._rec_quiet(-1)


# ------------------------------------------------------------- regions
# calls of each region object observed under the profile function (bounded
# overhead: later calls only write their two markers)
_REGION_OBSERVED = 3  # the first is not observed (see _region_run)
_region_objs = {}     # (kind, id(obj)) -> [weakref to obj, region id, observed calls, stored code rows]
_observers = []       # one (codes, calls) per observed call in progress, outermost first
_call_verdicts = {}   # (owner type, owner module, name, module, user) -> effect text or None
_checker = None
_IMMUTABLE = (tuple, int, float, complex, str, bytes, frozenset)
_next_rid = [0]       # region ids of this run: 1, 2, ...
_own_file = __file__
_region_file = os.path.join(os.path.dirname(__file__), "_region.py")
_skip = []            # frames of janus's recording machinery running inside an observed call


def _top_code(fn):
    f = getattr(fn, "__func__", fn)
    return getattr(f, "__code__", None)


def _new_region(kind, obj, fn, key):
    from . import _region
    _next_rid[0] += 1
    rid = _next_rid[0]
    code = _top_code(fn)
    if code is not None:
        file, line, h = code.co_filename, code.co_firstlineno, _region._Scan(code).hash
    else:
        file, line, h = "?", 0, ""
    qual = getattr(fn, "__qualname__", "?") if kind == "clip" else type(obj).__qualname__
    try:
        _C._rec_region_put(rid, kind, qual, file, line, h)
    except Exception as e:  # a full disk must not kill the training run: recording stops, the call runs
        _fail(e)

    try:  # a dropped object takes its entry with it (its id may come back as another object)
        ref = weakref.ref(obj, lambda _, k=key: _region_objs.pop(k, None))
    except TypeError:  # not weakly referenceable: held (one region per such object)
        ref = (lambda o: (lambda: o))(obj)
    ent = _region_objs[key] = [ref, rid, 0, set()]
    return ent


def _prof(frame, event, arg):
    # janus's own recording machinery (call sites, the bytecode analysis of a
    # new code object, a new region's scan) runs inside the call but is not
    # the call's: everything below one of _machinery's frames or a frame of
    # _region.py is skipped; the region hooks' own frames (_region_run) are not
    # the call's either, but what they call is
    if _skip:
        if event == "return" and frame is _skip[-1]:
            _skip.pop()
        return
    code = frame.f_code
    if event == "call":
        if code in _machinery or code.co_filename == _region_file:
            _skip.append(frame)
        elif code.co_filename != _own_file:  # the region hooks themselves are not the call's
            for codes, _ in _observers:
                codes[code] = frame.f_globals  # the globals its names read (containers outliving the call)
    elif event == "c_call" and code.co_filename != _own_file and _observers:
        # the script's line a call in janus's code came from (janus._region is
        # loaded by then: _new_region made the region observed)
        where = sys.modules["janus._region"]._user_site(frame)
        for _, calls in _observers:
            calls.append((arg, code, frame.f_lineno, where))


def _call_effect(f, code, line, module):
    """'calls X (...)' for a builtin a region may not call, else None: the rules a
    replay's proof applies (janus._region: user code against the pure allow-list,
    stricter in a module call; janus's own code against the deny-list), cached per
    kind of callee.  Container methods are the caller's (_store_codes)."""
    global _checker
    from . import _region
    owner = getattr(f, "__self__", None)
    if owner in _IMMUTABLE and getattr(f, "__name__", None) == "__new__":
        return None  # making an immutable value (janus's Size is a tuple) changes nothing outside
    user = _region._is_user(code)
    key = (type(owner), owner if isinstance(owner, types.ModuleType) else None, getattr(f, "__name__", None),
           getattr(f, "__module__", None), user, module)
    try:
        return _call_verdicts[key]
    except KeyError:
        pass
    except TypeError:  # an unhashable owner module: no caching
        key = None
    if _checker is None:
        _checker = _region.Regions()
    try:
        if user or not module:
            _checker._check_call(f, code, line, module=module)
        else:
            _region._check_janus_call(f, code, line)
        v = None
    except _region._Refused as e:  # the reason without its site (stored apart)
        v = re.sub(r" at [^ ]+:\d+", "", str(e), count=1)
    if key is not None:
        _call_verdicts[key] = v
    return v


def _store_codes(ent, codes, calls, kind, obj, args):
    """The code rows of one observed call: each code object it ran, scanned, with its
    first effect outside the call (a store, import, yield in user code; a builtin the
    replay's proof refuses; a container method that changes a list, dict or set that
    outlives a module call)."""
    from . import _region
    module = kind == "module"
    pre = None
    if module:  # the containers the call can reach that outlive it, as the replay's proof sees them
        called = {id(m): (m, None) for m in obj.modules()}
        pre = _region._outliving(called, types.SimpleNamespace(codes=codes), args)
    first_call = {}
    for f, code, line, where in calls:
        if code in first_call:
            continue
        owner = getattr(f, "__self__", None)
        if module and isinstance(owner, (list, dict, set)):
            base = next(b for b in (dict, list, set) if isinstance(owner, b))
            name = getattr(f, "__name__", "?")
            e = None
            if id(owner) in pre and name not in _region._PURE_METHODS.get(base, ()):
                e = f"calls {type(owner).__name__}.{name} on a {type(owner).__name__} that outlives the call"
        else:
            e = _call_effect(f, code, line, module)
        if e is not None:
            first_call[code] = (e, _region._site(code, line) + (f" (from {where})" if where else ""))
    rows = []
    for code in codes:
        scan = _region._Scan(code) if code not in _scans else _scans[code]
        _scans[code] = scan
        user = _region._is_user(code)
        eff = scan.effects[0] if user and scan.effects else first_call.get(code)
        if eff is not None:
            eff = (f"{eff[0]}: an effect outside the call" if not eff[0].startswith("calls ") else eff[0], eff[1])
        row = (scan.hash, code.co_filename, code.co_firstlineno, code.co_qualname if hasattr(code, "co_qualname")
               else code.co_name, int(user), eff[0] if eff else None, eff[1] if eff else None)
        if row not in ent[3]:
            ent[3].add(row)
            rows.append(row)
    if rows:
        _C._rec_region_codes(ent[1], rows)


_scans = {}


def _region_run(kind, obj, fn, given, call, args, kwargs):
    """Run call(*args, **kwargs) as a call of region (kind, obj), fn its code."""
    key = (kind, id(obj))
    ent = _region_objs.get(key)
    if ent is None or ent[0]() is not obj:
        ent = _new_region(kind, obj, fn, key)
    rid = ent[1]
    if kind == "module":  # its mode: calls in train and eval mode, with and without grad, compare apart
        _C._rec_region_enter(rid, given, obj.training)
    else:
        _C._rec_region_enter(rid, given)
    if ent[2] >= _REGION_OBSERVED:
        try:
            return call(*args, **kwargs)
        finally:
            _C._rec_region_exit(rid)
    ent[2] += 1
    if ent[2] == 1:  # the first call makes state (optimizer state, lazy buffers): its ops are
        try:         # in the trace, its code is observed from the second call on
            return call(*args, **kwargs)
        finally:
            _C._rec_region_exit(rid)
    prev = sys.getprofile()
    if prev is not None and prev is not _prof:  # a profiler of the user's: leave it alone, scan nothing
        try:
            return call(*args, **kwargs)
        finally:
            _C._rec_region_exit(rid)
    codes, calls = {}, []
    _observers.append((codes, calls))
    if prev is None:
        _skip.clear()
        sys.setprofile(_prof)
    try:
        return call(*args, **kwargs)
    finally:
        _observers.pop()
        if prev is None:
            sys.setprofile(None)
        _C._rec_region_exit(rid)
        try:
            _store_codes(ent, codes, calls, kind, obj, args)
        except Exception as e:  # a full disk must not kill the training run
            _fail(e)


def module_call(mod, args, kwargs):
    """Module.__call__ while recording regions."""
    fwd = mod.forward
    # its tensor attributes are inputs too (replay binds the ones a template reads): a weight a
    # forward pre-hook sets as a plain attribute (spectral_norm, weight_norm) is no outside tensor
    attrs = [v for v in mod.__dict__.values() if isinstance(v, _C.TensorBase)]
    return _region_run("module", mod, fwd, (args, kwargs, attrs) if attrs else (args, kwargs), fwd, args, kwargs)


def _grads(opt):
    """What an optimizer call is given: its parameters (nn.Parameter or any tensor the
    script handed it) and their gradients."""
    ps = [p for g in opt.param_groups for p in g["params"]]
    return ps + [p.grad for p in ps if p.grad is not None]


def optimizer_step(opt, fn, args, kwargs):
    """Optimizer.step's body (fn, the subclass's step) while recording regions."""
    if not opt.__dict__.get("_step_count"):
        # state made at construction (Adagrad's sums) is state from the first call on;
        # the post-step hook marks the rest once the step made it
        _mark_optimizer(opt, args, kwargs)
    return _region_run("step", opt, fn, _grads(opt), fn, (opt,) + tuple(args), kwargs)


def region_method(kind):
    """Decorator of an optimizer method (zero_grad) that is a region while recording."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(self, *args, **kwargs):
            if not regions:
                return fn(self, *args, **kwargs)
            return _region_run(kind, self, fn, _grads(self), fn, (self,) + args, kwargs)
        return wrapper
    return deco


def region_function(kind):
    """Decorator of a function over parameters (clip_grad_norm_) that is a region while recording."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(parameters, *args, **kwargs):
            if not regions:
                return fn(parameters, *args, **kwargs)
            from . import _C as C
            ps = [parameters] if isinstance(parameters, C.TensorBase) else list(parameters)
            given = [p.grad for p in ps if p.grad is not None]
            return _region_run(kind, fn, fn, given, fn, (ps,) + args, kwargs)
        return wrapper
    return deco


# what the recorder runs inside a call for itself (set below): skipped with all it calls
_machinery = frozenset(f.__code__ for f in (_is_user_file, _analyze_code, _new_region, _store_codes, _call_effect))


# --------------------------------------------------------- start / stop
_reported = False
_owner_pid = None  # the process that records (a forked child does not)
_report_fd = None  # janus record's pipe (JANUS_RECORD_REPORT_FD): a failed recording is told there


def _report(last_stored, msg):
    """Tell `janus record` that recording failed and which steps are stored,
    so that it exits non-zero after the script ends."""
    global _report_fd
    if _report_fd is None:
        return
    try:
        os.write(_report_fd, f"{last_stored}\t{msg}\n".encode("utf-8", "replace")[:4000])
    except OSError:
        pass
    _report_fd = None


def _stored_text(last):
    if last < 0:
        return "no step is stored"
    return "step 0 is stored, later steps are not" if last == 0 else f"steps 0-{last} are stored, later steps are not"


def _fail(e):
    """Recording stopped (disk full, database trouble): say so once with the
    last step actually stored (the writer is drained first), go on."""
    global _reported, active, regions
    active = regions = False
    if _reported or os.getpid() != _owner_pid:  # a forked child stopped recording; the parent reports
        return
    _reported = True
    try:
        _C._rec_stop()  # commits what is queued (or finds it cannot); after this the count is final
    except Exception:
        pass
    last = _C._rec_stats()["last_stored"]
    sys.stderr.write(f"janus record: {e}; recording stopped: {_stored_text(last)}\n")
    sys.stderr.flush()
    _report(last, str(e))


def start(db, run, decisions=True, with_regions=True):
    """Start recording into run `run` of the store at `db`."""
    global active, _owner_pid, regions
    _owner_pid = os.getpid()
    _C._rec_start(db, int(run), _is_user_file, _analyze_code, bool(decisions))
    active = True
    regions = bool(with_regions)
    import janus
    from .optim import optimizer as _opt
    janus._step_hook = _step_hook
    _opt.register_optimizer_step_post_hook(_mark_optimizer)
    atexit.register(stop)


def stop():
    """Flush the trailing step and close the store (atexit)."""
    global active, regions
    regions = False
    if not active:
        try:
            _C._rec_stop()
        except Exception:
            pass
        return
    active = False
    try:
        _C._rec_stop()
    except Exception as e:
        _fail(e)
    err = _C._rec_error()
    if err and not _reported:
        _fail(err)


def start_from_env():
    global _report_fd
    db = _C._setting_value("JANUS_RECORD_DB")
    if not db:
        return
    try:
        _report_fd = _C._setting_value("JANUS_RECORD_REPORT_FD")
        if _report_fd is not None:
            os.set_inheritable(_report_fd, False)  # the script's own subprocesses do not get it
    except (ValueError, OSError):
        _report_fd = None
    try:
        run = _C._setting_value("JANUS_RECORD_RUN")
    except ValueError as e:
        run = e
    if not isinstance(run, int):
        why = "it is not set" if run is None else str(run)
        sys.stderr.write(f"janus record: JANUS_RECORD_DB is set but JANUS_RECORD_RUN is not a run id ({why}); "
                         "not recording (start the script with `janus record`)\n")
        return
    try:  # a bad recording switch (a ValueError naming it) runs the script unrecorded, as a bad store does
        start(db, run, _C._setting_value("JANUS_RECORD_DECISIONS"), _C._setting_value("JANUS_RECORD_REGIONS"))
    except Exception as e:
        sys.stderr.write(f"janus record: cannot record into {db}: {e}; running without recording\n")
        _report(-1, f"cannot record into {db}: {e}")
        return
    # The first process that imports janus owns the run: its subprocesses
    # (DataLoader workers, helper scripts) must not append to the same steps.
    for k in ("JANUS_RECORD_DB", "JANUS_RECORD_RUN", "JANUS_RECORD_DECISIONS", "JANUS_RECORD_REGIONS",
              "JANUS_RECORD_REPORT_FD"):
        os.environ.pop(k, None)
