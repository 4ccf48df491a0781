"""janus.multiprocessing: Python's multiprocessing under torch.multiprocessing's
name, as PyTorch provides it.

Every name of the standard module is here (Process, Queue, Pool,
get_context, set_start_method, ...), plus PyTorch's sharing-strategy calls
and spawn().  Janus tensors cross processes by pickling (a copy), so the
sharing strategy is accepted and reported but changes nothing.
"""
import multiprocessing as _mp
from multiprocessing import *  # noqa: F401,F403

__all__ = list(_mp.__all__) + ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies",
                               "spawn", "start_processes", "ProcessRaisedException", "ProcessExitedException"]

_STRATEGIES = ("file_descriptor", "file_system")
_strategy = ["file_descriptor"]


def get_all_sharing_strategies():
    return set(_STRATEGIES)


def get_sharing_strategy():
    return _strategy[0]


def set_sharing_strategy(new_strategy):
    if new_strategy not in _STRATEGIES:
        raise ValueError(f"unknown sharing strategy {new_strategy!r} (one of {sorted(_STRATEGIES)})")
    _strategy[0] = new_strategy


class ProcessException(Exception):
    def __init__(self, msg, error_index, pid):
        super().__init__(msg)
        self.error_index, self.pid = error_index, pid


class ProcessRaisedException(ProcessException):
    pass


class ProcessExitedException(ProcessException):
    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name


class ProcessContext:
    """The processes spawn() started; join() waits for all of them and
    raises if one failed."""

    def __init__(self, processes):
        self.processes = processes

    def pids(self):
        return [p.pid for p in self.processes]

    def join(self, timeout=None):
        for p in self.processes:
            p.join(timeout)
        for i, p in enumerate(self.processes):
            if p.exitcode is None:
                return False
            if p.exitcode != 0:
                for q in self.processes:
                    if q.is_alive():
                        q.terminate()
                raise ProcessExitedException(f"process {i} terminated with exit code {p.exitcode}", i, p.pid,
                                             p.exitcode)
        return True


def _wrap(fn, i, args):
    fn(i, *args)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Run fn(i, *args) for i in range(nprocs), each in its own process."""
    ctx = _mp.get_context(start_method)
    procs = []
    for i in range(nprocs):
        p = ctx.Process(target=_wrap, args=(fn, i, args), daemon=daemon)
        p.start()
        procs.append(p)
    context = ProcessContext(procs)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    return start_processes(fn, args, nprocs, join, daemon, start_method)
