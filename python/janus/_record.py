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
- printing as a sync point; the final flush at exit.

Without JANUS_RECORD_DB nothing here runs except the `active` flag checks
(False) and janus.step(), which then does nothing.
"""
import atexit
import dis
import os
import sys
import sysconfig

from . import _C

active = False

ROLE_HOST, ROLE_PARAM, ROLE_STATE = 1, 2, 3
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
        from . import _replay  # janus.step() also ends a replayed (or timed eager) step
        _replay.end_step()
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
    global _reported, active
    active = False
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


def start(db, run, decisions=True):
    """Start recording into run `run` of the store at `db`."""
    global active, _owner_pid
    _owner_pid = os.getpid()
    _C._rec_start(db, int(run), _is_user_file, _analyze_code, bool(decisions))
    active = True
    import janus
    from .optim import optimizer as _opt
    janus._step_hook = _step_hook
    _opt.register_optimizer_step_post_hook(_mark_optimizer)
    atexit.register(stop)


def stop():
    """Flush the trailing step and close the store (atexit)."""
    global active
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
        start(db, run, _C._setting_value("JANUS_RECORD_DECISIONS"))
    except Exception as e:
        sys.stderr.write(f"janus record: cannot record into {db}: {e}; running without recording\n")
        _report(-1, f"cannot record into {db}: {e}")
        return
    # The first process that imports janus owns the run: its subprocesses
    # (DataLoader workers, helper scripts) must not append to the same steps.
    for k in ("JANUS_RECORD_DB", "JANUS_RECORD_RUN", "JANUS_RECORD_DECISIONS", "JANUS_RECORD_REPORT_FD"):
        os.environ.pop(k, None)
