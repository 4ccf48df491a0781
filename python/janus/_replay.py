"""The Python side of `janus replay` (the C side is replay/, jn_replay.h).

When janus is imported with JANUS_REPLAY_DB set (by `janus replay`, or by
hand), start_from_env() loads the store's bundle through the C extension:
from then on the dispatcher captures ops lazily and runs the recorded
training steps as compiled graphs, falling back to eager execution for
anything that does not match.  This module supplies what only Python knows:
step boundaries (Optimizer.step() through janus._step_hook, janus.step()),
printing as a sync point, and the summary at exit.

Environment (rows of runtime/settings.def, read through janus._C._setting_value:
the one parser of C and Python; a value it refuses is said in one line and
the script runs eagerly):
  JANUS_REPLAY_DB      the store (run.db) whose bundle to use
  JANUS_REPLAY_RUN     run id that `janus replay` created: counters go there
  JANUS_REPLAY=0       run eagerly (no capture at all), for comparisons
  JANUS_REPLAY_STRICT=1  any fallback raises RuntimeError with the reason
  JANUS_REPLAY_QUIET=1   no summary line at exit
  JANUS_REPLAY_SPECULATE=1  values Python still holds that a graph does not keep
                       (the recording never read them again: a loss, .grad) are
                       not computed; reading one raises RuntimeError.  Default:
                       they are computed when first read (a deferred slice).
  JANUS_REPLAY_DEFER=0   compute them eagerly before each graph instead
  JANUS_REPLAY_DEBUG=1   one stderr line per captured op, segment and graph run
  JANUS_REPLAY_ADAPT=0   run every graph that fits (default 1: each graph is
                         timed against eager in the run, 5-9 back-to-back pairs,
                         and one slower compiled is left to eager)
  JANUS_REPLAY_ADAPT_MARGIN=F  how much slower (a fraction, default 0.10)
                         compiled may be before its graph is left to eager
  JANUS_REPLAY_REGIONS=0  run every optimizer step's Python (default 1: a step
                         proved replaceable runs as its ops dispatched from C,
                         janus/_region.py)
  JANUS_REPLAY_REGION_BATCH=0  match a replaced region's ops with every check
                         (default 1: the checks its template proves are left out)
Switches take 1/yes/true/on and 0/no/false/off.  The C side (jn_rp_config_from_env)
reads the ones it uses itself when the replay starts.
A store that cannot be used (no bundle, a refused or corrupt one, a bundle
made from another script) gives one line "janus replay: running eagerly:
<why>" and the script runs eagerly, unchanged.

An eager run of `janus replay --eager` (JANUS_REPLAY=0 with a run id) times
its steps (_StepClock) and stores them at exit, so `janus report` can put
them beside the replay's (the replay's own come from replay/timeline.c).
"""
import atexit
import json
import os
import sys
import time

from . import _C

active = False
_quiet = False  # JANUS_REPLAY_QUIET as read at the start
SYNC_PRINT = 5
_clock = None  # the _StepClock of an eager run


class _StepClock:
    """Step times of an eager run: from janus's start to the first step end,
    then step end to step end; the tail after the last one.  Stored at exit
    (janus._C._rp_put_steps; the first jn_db.h JN_DB_STEPS_MAX steps)."""

    def __init__(self, db, run):
        self.db, self.run = db, run
        self.t0 = self.last = time.perf_counter()
        self.rows = []

    def step(self):
        now = time.perf_counter()
        self.rows.append((self.last - self.t0, now - self.last))
        self.last = now

    def store(self):
        now = time.perf_counter()
        rows = self.rows + [(self.last - self.t0, now - self.last)]
        why = _C._rp_put_steps(self.db, self.run, rows, True)
        if why:
            sys.stderr.write(f"janus replay: the eager run's step times were not stored: {why}\n")


def _step_hook():
    """Optimizer.step() ended a training step (janus._step_hook)."""
    if active:
        _C._rp_step()
    elif _clock is not None:
        _clock.step()


end_step = _step_hook


def print_begin(t):
    """Printing reads the tensor: one PRINT sync, nested reads are none."""
    _C._rp_sync(t, SYNC_PRINT)
    _C._rp_quiet(1)


def print_end():
    _C._rp_quiet(-1)


def stats():
    """Counters so far: segments, hits, misses, graphs_hit, graphs, seconds, summary, top_misses
    (None when no replay runs)."""
    return _C._rp_stats()


def _scripts_of(argv):
    """The Python files a command line names (`python x.py a.py` -> "x.py a.py"): what
    tells one script's recordings from another's (a wrapper script counts with its target)."""
    return " ".join(os.path.basename(a) for a in argv if isinstance(a, str) and a.endswith(".py"))


def _other_script(db):
    """Why the store's recordings are of another script than this one (None: same, or unknown)."""
    me = _scripts_of(sys.argv)
    if not me:
        return None
    try:
        rows = [argv for (_, kind, argv) in _C._rec_runs(db) if kind == "record"]
    except Exception:
        return None
    scripts = set()
    for a in rows:
        try:
            argv = json.loads(a)
        except Exception:
            continue
        if isinstance(argv, list):
            scripts.add(_scripts_of(argv))
    scripts.discard("")
    if scripts and me not in scripts:
        return (f"{db} was recorded from {', '.join(sorted(scripts))}, not {me}; "
                f"record this script (`janus record`, then `janus optimize {db}`)")
    return None


def _eager(why):
    sys.stderr.write(f"janus replay: running eagerly: {why}\n")
    sys.stderr.flush()


def start(db, run=0, strict=None, speculate=None):
    """Load the bundle of `db` and start replaying; False (and one line) when it runs eagerly.
    strict, speculate: None takes JANUS_REPLAY_STRICT / JANUS_REPLAY_SPECULATE."""
    global active
    from . import _record
    if _record.active:
        _eager("recording is on in this process (janus record); replay needs a plain run")
        return False
    if not os.path.exists(db):
        _eager(f"{db} does not exist; record and optimize first (`janus record`, `janus optimize {db}`)")
        return False
    other = _other_script(db)
    if other:
        _eager(other)
        return False
    why = _C._rp_start(db, int(run), strict, speculate)
    if why is not None:
        _eager(why)
        return False
    active = True
    import janus
    janus._step_hook = _step_hook
    if _C._setting_value("JANUS_REPLAY_REGIONS"):
        from ._region import Regions
        regions = Regions()
        janus._region_step = regions.step
        janus._region_module = _C._rp_module_entry(regions)  # regions.module, its common call in C
        janus._region_zero_grad = regions.zero_grad
        janus._region_function = regions.function
    atexit.register(stop)
    return True


def stop(quiet=None):
    """Flush what is pending, print the summary line, write the counters (atexit).
    quiet: None takes JANUS_REPLAY_QUIET as read at the start."""
    global active
    if not active:
        return
    active = False
    import janus
    if getattr(janus, "_step_hook", None) is _step_hook:
        janus._step_hook = None
    janus._region_step = None
    janus._region_module = None
    janus._region_zero_grad = None
    janus._region_function = None
    _C._rp_stop(not (_quiet if quiet is None else quiet))


# set by `janus replay` for this process only: popped once read
_CHILD_KEYS = ("JANUS_REPLAY_DB", "JANUS_REPLAY_RUN", "JANUS_REPLAY_STRICT")


def start_from_env():
    global _quiet
    db = _C._setting_value("JANUS_REPLAY_DB")
    if not db:
        return
    # the first process that imports janus owns the replay (not DataLoader
    # workers or helpers): the keys go once the replay has read them
    try:
        eager = not _C._setting_value("JANUS_REPLAY")
        run = _C._setting_value("JANUS_REPLAY_RUN")
        if eager:
            _time_eager(run, db)
            return
        _quiet = _C._setting_value("JANUS_REPLAY_QUIET")
        start(os.path.abspath(db), run)
    except ValueError as e:  # a value the settings table refuses, named in e
        _eager(str(e))
    finally:
        for k in _CHILD_KEYS:
            os.environ.pop(k, None)


def _time_eager(run, db):
    """`janus replay --eager`: time the steps of this eager run for its run row."""
    global _clock
    if run <= 0 or _clock is not None:
        return
    _clock = _StepClock(os.path.abspath(db), run)
    import janus
    janus._step_hook = _step_hook
    atexit.register(_clock.store)
