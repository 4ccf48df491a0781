"""janus.profiler (torch.profiler): `profile` with torch's schedule
(`schedule`, ProfilerAction: NONE/WARMUP/RECORD/RECORD_AND_SAVE and the
same transitions, `ProfilerStep#N` ranges when a schedule is given,
on_trace_ready after each active cycle), `record_function`,
`ProfilerActivity`, `supported_activities` and `tensorboard_trace_handler`
(torch's `{worker}.{time_ns}.pt.trace.json[.gz]` files).

What a trace holds is janus.autograd.profiler's: the record_function and
step ranges of the profiling thread, timed on the host, and
`janus::<op>` events counting and timing the kernels of each op janus ran
in each range (the runtime's kernel clock per op; a replayed graph's
kernels as one `janus::kernels`); input shapes are not kept (that
module's docstring says what is missing).  A
trace collects only in RECORD / RECORD_AND_SAVE steps, as torch's; its
sys.setprofile hook is installed then, so janus's record and replay treat
those steps as run under a user's profiler.
"""
import os
import socket
import time
import warnings
from enum import Enum
from functools import partial

from ..autograd.profiler import _Trace, record_function  # noqa: F401
from ..autograd.profiler_util import EventList, _chrome_trace

__all__ = ["profile", "schedule", "ProfilerAction", "ProfilerActivity", "record_function",
           "supported_activities", "tensorboard_trace_handler"]


class ProfilerActivity(Enum):
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(Enum):
    """What the profiler does in a step; a schedule returns one per step number."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities():
    """CPU, and CUDA where janus has a GPU (janus times host work only: see janus.autograd.profiler)."""
    from .. import cuda
    acts = {ProfilerActivity.CPU}
    if cuda.is_available():
        acts.add(ProfilerActivity.CUDA)
    return acts


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """torch.profiler.schedule: skip `skip_first` steps, then cycles of `wait` idle, `warmup` warming and
    `active` recorded steps (the last RECORD_AND_SAVE), `repeat` times (0: until the profiler ends)."""

    def schedule_fn(step):
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:  # the first cycle's wait is skipped
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE

    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} (need >= 0), "
            f"active={active} (need > 0), repeat={repeat} (need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)
    return schedule_fn


def _default_schedule_fn(_):
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False, use_python_export=False):
    """An on_trace_ready handler writing each trace to dir_name as torch names it:
    `{worker_name}.{time.time_ns()}.pt.trace.json` (`.gz` when use_gzip), worker_name '{hostname}_{pid}'."""

    def handler_fn(prof):
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json"  # nanoseconds: no clash between traces
        if use_gzip:
            file_name += ".gz"
        prof.export_chrome_trace(os.path.join(dir_name, file_name))

    return handler_fn


def _parse_activities(activities):
    acts = set()
    for a in activities:
        if isinstance(a, dict):
            acts.update(a.keys())
        elif isinstance(a, ProfilerActivity):
            acts.add(a)
        else:
            raise TypeError(f"activities: expected torch.profiler.ProfilerActivity values, got {a!r}")
    return acts


class _KinetoProfile:
    """The start/stop core of profile: prepare_trace/start_trace/stop_trace, events(), key_averages(),
    export_chrome_trace(), add_metadata()."""

    def __init__(self, *, activities=None, record_shapes=False, profile_memory=False, with_stack=False,
                 with_flops=False, with_modules=False, experimental_config=None, execution_trace_observer=None,
                 acc_events=False, custom_trace_id_callback=None, post_processing_timeout_s=None):
        self.activities = _parse_activities(activities) if activities is not None else supported_activities()
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.execution_trace_observer = execution_trace_observer
        self.custom_trace_id_callback = custom_trace_id_callback
        self._trace = None
        self._events = None
        self._metadata = {}

    def start(self):
        self.prepare_trace()
        self.start_trace()

    def stop(self):
        self.stop_trace()

    def prepare_trace(self):
        self._events = None

    def start_trace(self):
        if self._trace is None:
            self._trace = _Trace(self.with_stack).begin()

    def stop_trace(self):
        if self._trace is not None:
            self._events = self._trace.end()
            self._trace = None

    def _finished(self):
        if self._events is None:
            raise RuntimeError("Profiler didn't finish running")
        return self._events

    def events(self):
        """The FunctionEvents of the last finished trace (ranges and janus::kernels events)."""
        return self._finished()

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        """The events averaged by name (and input shapes, and the first group_by_stack_n stack frames)."""
        return self._finished().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path):
        """Write the last finished trace as a Chrome trace JSON file (gzipped for a .gz path)."""
        events = self._finished()
        if self._metadata:
            import gzip
            import json
            data = json.dumps(_chrome_trace(events, self._metadata), indent=1)
            opener = partial(gzip.open, mode="wt", encoding="utf-8") if str(path).endswith(".gz") else \
                partial(open, mode="w", encoding="utf-8")
            with opener(path) as f:
                f.write(data)
            return
        events.export_chrome_trace(path)

    def add_metadata(self, key, value):
        """A key/value pair stored at the top level of the exported trace (value a string)."""
        self._metadata[key] = str(value)

    def add_metadata_json(self, key, value):
        import json
        self._metadata[key] = json.loads(value)


class profile(_KinetoProfile):
    """torch.profiler.profile: a context manager collecting this thread's record_function ranges and kernel
    counts in the steps the schedule records; `step()` marks a step's end."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False,
                 custom_trace_id_callback=None, post_processing_timeout_s=None, use_cuda=None):
        if activities is not None and len(_parse_activities(activities)) == 0:
            raise AssertionError("No valid profiler activities found")
        super().__init__(activities=activities, record_shapes=record_shapes, profile_memory=profile_memory,
                         with_stack=with_stack, with_flops=with_flops, with_modules=with_modules,
                         execution_trace_observer=execution_trace_observer,
                         custom_trace_id_callback=custom_trace_id_callback)
        if schedule:
            self.schedule = schedule
            self.record_steps = True  # ProfilerStep#N ranges in the trace and table
        else:
            self.schedule = _default_schedule_fn
            self.record_steps = False
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.step_rec_fn = None
        self.current_action = self.schedule(self.step_num)
        A = ProfilerAction
        warn = warnings.warn
        # (previous action, current action) -> what to do: torch's transitions
        self.action_map = {
            (A.NONE, A.NONE): [],
            (A.NONE, A.WARMUP): [self.prepare_trace],
            (A.NONE, A.RECORD): [self.prepare_trace, self.start_trace],
            (A.NONE, A.RECORD_AND_SAVE): [self.prepare_trace, self.start_trace],
            (A.WARMUP, A.NONE): [partial(warn, "Incorrect schedule: WARMUP followed by NONE"),
                                 self.start_trace, self.stop_trace],
            (A.WARMUP, A.WARMUP): [],
            (A.WARMUP, A.RECORD): [self.start_trace],
            (A.WARMUP, A.RECORD_AND_SAVE): [self.start_trace],
            (A.RECORD, A.NONE): [partial(warn, "Incorrect schedule: RECORD followed by NONE"), self.stop_trace],
            (A.RECORD, A.WARMUP): [partial(warn, "Incorrect schedule: RECORD followed by WARMUP"),
                                   self.stop_trace],
            (A.RECORD, A.RECORD): [],
            (A.RECORD, A.RECORD_AND_SAVE): [],
            (A.RECORD_AND_SAVE, A.NONE): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, A.WARMUP): [self.stop_trace, self._trace_ready, self.prepare_trace],
            (A.RECORD_AND_SAVE, A.RECORD): [self.stop_trace, self._trace_ready, self.prepare_trace,
                                            self.start_trace],
            (A.RECORD_AND_SAVE, A.RECORD_AND_SAVE): [self.stop_trace, self._trace_ready, self.prepare_trace,
                                                     self.start_trace],
            (A.WARMUP, None): [self.start_trace, self.stop_trace],
            (A.RECORD, None): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, None): [self.stop_trace, self._trace_ready],
        }

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.stop()
        return False

    def start(self):
        self._transit_action(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def stop(self):
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        self._transit_action(self.current_action, None)

    def step(self):
        """Signals the profiler that the next profiling step has started."""
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        prev_action = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit_action(prev_action, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def _trace_ready(self):
        if self.on_trace_ready:
            self.on_trace_ready(self)

    def _transit_action(self, prev_action, current_action):
        for action in self.action_map.get((prev_action, current_action), []):
            action()


# torch's spelling of the events' containers, for `from torch.profiler import ...` of them
__all__ += ["EventList"]
