"""janus.autograd.profiler (torch.autograd.profiler): record_function, the
legacy `profile` context manager and `emit_nvtx`, and the per-thread trace
that janus.profiler.profile also collects into.

What a trace holds, and where each number comes from:

- ranges: every `record_function(name)` block entered while a trace
  collects on its thread, and the `ProfilerStep#N` ranges that
  janus.profiler.profile opens per step when given a schedule, each timed
  with time.perf_counter_ns (torch's "CPU time" is the same host wall time);
- op events, `janus::<op>` (`janus::mm`, `janus::add`): the eager kernels
  janus ran, counted and timed per op by the runtime's kernel clock
  (`_C._kernel_clock_ops`, runtime/dispatch.c: the wall time inside the
  outermost kernel call of this thread, per op).  At each range boundary
  the clock is read; per op, what ran since the previous boundary becomes
  one event, a child of the innermost open range, whose count is the
  number of calls and whose time is the time inside them (laid end to end
  from the boundary: a stretch's ops are summed, not placed one by one).
  Kernels the clock counts under no op -- a replayed graph's nodes and
  generated kernels -- make one `janus::kernels` event.  So key_averages()
  shows per op how many kernels and how much kernel time each range's own
  code ran, and the ranges' self time is the host time outside kernels
  and child ranges.

What is missing: an op's time is its kernel's, not the dispatch around it
(torch's aten events include their dispatch), and ops are not placed one
by one in time; input shapes are not kept, so `record_shapes`,
`profile_memory`, `with_flops` and `with_modules` are accepted and change
nothing (the shapes of the events here are [], as torch's for
record_function ranges), and device time is not measured (a CUDA kernel's
launch is timed on the host).

While a trace collects, the profiler's sys.setprofile hook is installed on
its thread (when no other is), so janus's record and replay see a profiler
exactly as they see a user's (janus/_region.py and janus/_record.py leave
their own observation alone: no region is learned or scanned meanwhile);
the hook does nothing, no op is run and no value read, so results do not
change.  Only the thread that entered the profiler is traced (janus's
DataLoader workers are processes).  Under replay, kernels run where the
graph runs them (at a segment's end), and are counted in the range open
then.

emit_nvtx is accepted as a no-op context manager: janus emits no NVTX
ranges (use janus.profiler.profile).
"""
import functools
import sys
import threading
import time
import traceback

from .. import _C
from .profiler_util import EventList, FunctionEvent, FunctionEventAvg  # noqa: F401

__all__ = ["profile", "record_function", "emit_nvtx", "EventList", "FunctionEvent", "FunctionEventAvg"]

_tls = threading.local()  # .trace: the _Trace collecting on this thread (torch's profiler state is per thread too)
KERNELS = "janus::kernels"


def _profile_hook(frame, event, arg):
    """The profiler's sys.setprofile function: record/replay see a profiler; it records nothing itself."""
    return None


def _current():
    return getattr(_tls, "trace", None)


def _user_stack():
    """The caller's Python stack, innermost first, janus's own frames left out, torch's 'file(line): fn' form."""
    here = __file__.rsplit("/", 2)[0]  # the janus package directory
    out = []
    for fs in reversed(traceback.extract_stack()):
        if fs.filename.startswith(here):
            continue
        out.append(f"{fs.filename}({fs.lineno}): {fs.name}")
    return out


class _Trace:
    """One profiled window on one thread: the ranges and kernel events collected between begin() and end()."""

    def __init__(self, with_stack=False):
        self.with_stack = with_stack
        self.events = []
        self.open = []  # open ranges, innermost last: dicts of id, name, start, kernel clock then, children
        self.thread = threading.get_native_id()
        self.next_id = 0
        self.hooked = False
        self.clock_owned = False
        self.ops_owned = False
        self.prev_trace = None

    def begin(self):
        if _current() is not None:
            raise RuntimeError("Profiler is already enabled on this thread")
        # the kernel clock is this thread's; JANUS_KERNEL_CLOCK may have switched it on already (keep it on)
        if not _C._setting_value("JANUS_KERNEL_CLOCK"):
            _C._kernel_clock(True)
            self.clock_owned = True
        ops0 = _C._kernel_clock_ops()
        if not ops0:  # the per-op table is off (nothing counted yet): this trace owns it
            ops0 = _C._kernel_clock_ops(True)
            self.ops_owned = True
        if sys.getprofile() is None:
            sys.setprofile(_profile_hook)
            self.hooked = True
        self.wall0, self.perf0 = time.time_ns(), time.perf_counter_ns()
        sec, calls = _C._kernel_clock()
        self.last = (self.perf0, sec, calls)
        self.last_ops = ops0
        _tls.trace = self
        return self

    def end(self):
        t = self._boundary()
        while self.open:  # ranges still open at the end close there
            self._close(self.open[-1], t)
        _tls.trace = None
        if self.hooked and sys.getprofile() is _profile_hook:
            sys.setprofile(None)
        if self.ops_owned:
            _C._kernel_clock_ops(False)
        if self.clock_owned:
            _C._kernel_clock(False)
        self.events.sort(key=lambda e: (e.time_range.start, -e.time_range.end))
        return EventList(self.events)

    def _us(self, t_ns):
        return (self.wall0 + (t_ns - self.perf0)) / 1000.0

    def _id(self):
        self.next_id += 1
        return self.next_id

    def _boundary(self):
        """Read the kernel clock: per op, what ran since the last boundary is one janus::<op> event
        (the kernels no op accounts for, a replayed graph's, one janus::kernels event)."""
        sec, calls = _C._kernel_clock()
        ops = _C._kernel_clock_ops()
        t = time.perf_counter_ns()
        lt, lsec, lcalls = self.last
        if calls > lcalls:
            span, at = t - lt, lt
            rest_sec, rest_calls = sec - lsec, calls - lcalls
            stretch = []
            for name, (s, n) in ops.items():
                s0, n0 = self.last_ops.get(name, (0.0, 0))
                if n > n0:
                    stretch.append(("janus::" + name, s - s0, n - n0))
                    rest_sec, rest_calls = rest_sec - (s - s0), rest_calls - (n - n0)
            if rest_calls > 0:
                stretch.append((KERNELS, max(rest_sec, 0.0), rest_calls))
            for name, s, n in stretch:  # laid end to end from the boundary, within the stretch's wall time
                dur_ns = max(min(s * 1e9, lt + span - at), 0)
                ev = FunctionEvent(self._id(), name, self.thread, self._us(at), self._us(at + dur_ns),
                                   count=n, kernel_calls=n, kernel_time_us=dur_ns / 1000.0)
                at += dur_ns
                self.events.append(ev)
                if self.open:
                    self.open[-1]["children"].append(ev)
        self.last = (t, sec, calls)
        self.last_ops = ops
        return t

    def push(self, name, args=None, user=True):
        t = self._boundary()
        rng = {"id": self._id(), "name": name, "start": t, "k0": self.last[1:], "children": [], "args": args,
               "user": user, "stack": _user_stack() if self.with_stack else []}
        self.open.append(rng)
        return rng

    def pop(self, rng):
        if rng not in self.open:  # closed already (the trace ended inside it)
            return
        t = self._boundary()
        while self.open and self.open[-1] is not rng:  # ranges left open inside it end with it
            self._close(self.open[-1], t)
        self._close(rng, t)

    def _close(self, rng, t):
        self.open.remove(rng)
        sec, calls = self.last[1:]
        name = rng["name"]
        # torch's events name every step range "ProfilerStep*" (averaged together); its trace keeps the number
        step = name.startswith("ProfilerStep#")
        ev = FunctionEvent(rng["id"], "ProfilerStep*" if step else name, self.thread, self._us(rng["start"]),
                           self._us(t), stack=rng["stack"], is_user_annotation=rng["user"], args=rng["args"],
                           kernel_calls=calls - rng["k0"][1], kernel_time_us=(sec - rng["k0"][0]) * 1e6)
        ev.trace_name = name
        for c in rng["children"]:
            ev.append_cpu_child(c)
            c.set_cpu_parent(ev)
        self.events.append(ev)
        if self.open:
            self.open[-1]["children"].append(ev)


class record_function:
    """Context manager / decorator: a named range in the profile of this thread (nothing when none collects)."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self.run_callbacks_on_exit = True
        self._trace = None
        self._range = None

    def __enter__(self):
        tr = _current()
        if tr is not None:
            self._trace, self._range = tr, tr.push(self.name, self.args)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if not self.run_callbacks_on_exit:
            return False
        if self._trace is not None:
            self._trace.pop(self._range)
            self._trace = self._range = None
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            with record_function(self.name, self.args):  # a fresh range per call: recursion nests
                return func(*args, **kwargs)
        return wrapped


class profile:
    """The legacy autograd profiler: `with profile() as prof:` collects this thread's ranges and kernel
    counts (see this module's docstring); then prof.key_averages().table(), prof.export_chrome_trace()."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False, with_flops=False,
                 profile_memory=False, with_stack=False, with_modules=False, use_kineto=False, use_cpu=True,
                 experimental_config=None, acc_events=False, custom_trace_id_callback=None):
        self.enabled = enabled
        if not enabled:
            return
        self.use_cuda = use_cuda
        self.use_device = "cuda" if use_cuda and use_device is None else use_device
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.use_cpu = use_cpu
        self.function_events = None
        self.entered = False
        self._trace = None

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._trace = _Trace(self.with_stack).begin()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if not self.enabled:
            return False
        self.function_events = self._trace.end()
        self._trace = None
        return False

    def __repr__(self):
        if self.function_events is None:
            return "<unfinished torch.autograd.profile>"
        return repr(self.function_events)

    def __str__(self):
        if self.function_events is None:
            return "<unfinished torch.autograd.profile>"
        return str(self.function_events)

    def _check_finish(self):
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None):
        self._check_finish()
        return self.function_events.table(sort_by=sort_by, row_limit=row_limit,
                                          max_src_column_width=max_src_column_width,
                                          max_name_column_width=max_name_column_width,
                                          max_shapes_column_width=max_shapes_column_width, header=header,
                                          top_level_events_only=top_level_events_only, time_unit=time_unit)

    table.__doc__ = EventList.table.__doc__

    def export_chrome_trace(self, path):
        self._check_finish()
        return self.function_events.export_chrome_trace(path)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        self._check_finish()
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n)

    def total_average(self):
        self._check_finish()
        return self.function_events.total_average()

    @property
    def self_cpu_time_total(self):
        self._check_finish()
        return self.function_events.self_cpu_time_total

    def events(self):
        self._check_finish()
        return self.function_events


class emit_nvtx:
    """Accepted and does nothing: janus emits no NVTX ranges (janus.profiler.profile times record_function
    ranges and counts kernels instead)."""

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = enabled
        self.record_shapes = record_shapes
        self.entered = False

    def __enter__(self):
        if self.enabled and self.entered:
            raise RuntimeError("NVTX annotation context manager is not reentrant")
        self.entered = True
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.entered = False
        return False
