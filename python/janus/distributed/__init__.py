"""janus.distributed: torch.distributed's process group on Open MPI and NCCL.

The names and semantics are torch.distributed's, so `import torch.distributed
as dist` works under the torch alias.  One process group per process (the
default group; new_group is not supported).  Backends: "mpi" for CPU tensors
(Open MPI, loaded when the group starts: apt-get install openmpi-bin
libopenmpi-dev; JANUS_MPI_LIBRARY names another libmpi) and "nccl" for CUDA
tensors (JANUS_NCCL_LIBRARY); "gloo", PyTorch's CPU backend, runs on "mpi".

Launch with `mpirun -n N python train.py` (Open MPI numbers the ranks;
RANK / WORLD_SIZE, when set too, must agree) or, for nccl without MPI,
torchrun-style RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; the nccl backend
uses the GPU LOCAL_RANK names (Open MPI's OMPI_COMM_WORLD_LOCAL_RANK under
mpirun, or device_id=).  Collectives are blocking (async_op=True returns a
Work; only barrier's wait() has work left to do) and let the GIL go while
they wait (when the interpreter has another thread to run).  all_reduce,
broadcast, all_gather (and all_gather_into_tensor), reduce_scatter (and
reduce_scatter_tensor) and barrier are ops of the table
(all_reduce_, broadcast_, all_gather, reduce_scatter, barrier): `janus
record` records them and `janus replay` runs them inside the step's compiled
graph, or eagerly on a miss, in program order on every rank either way; a
barrier ends its segment after it (it returns once every rank reached it).
A collective waiting longer than JANUS_DIST_TIMEOUT (60 s) or the timeout=
argument, or an exception no code caught on any rank, ends every rank of
the job with a message naming the failed rank.
"""
import enum as _enum
import os as _os
import sys as _sys

from .. import _C
from .._ops import ops as _ops

__all__ = ["is_available", "is_initialized", "is_mpi_available", "is_nccl_available", "is_gloo_available",
           "is_torchelastic_launched", "Backend", "ReduceOp", "init_process_group", "destroy_process_group",
           "get_rank", "get_world_size", "get_backend", "barrier", "all_reduce", "broadcast", "all_gather",
           "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor", "new_group", "GroupMember"]


class ReduceOp(_enum.IntEnum):
    """torch.distributed.ReduceOp (the numbering of runtime/jn_dist.h)."""
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7


class Backend(str):
    """torch.distributed.Backend: the backend names."""
    MPI = "mpi"
    NCCL = "nccl"
    GLOO = "gloo"
    UNDEFINED = "undefined"

    def __new__(cls, name):
        return str.__new__(cls, str(name).lower())


class GroupMember:
    """torch.distributed.GroupMember: WORLD stands for the default group."""
    WORLD = object()
    NON_GROUP_MEMBER = object()


group = GroupMember


class _Work:
    """What async_op=True returns: janus's collectives are blocking, so the
    work is complete when it is returned -- except a barrier's, whose token
    (under replay, pending until its segment ends) wait() makes current."""

    def __init__(self, token=None):
        self._token = token

    def wait(self, timeout=None):
        if self._token is not None:
            token, self._token = self._token, None
            _C._dist_wait(token)
        return True

    def is_completed(self):
        return self._token is None

    def is_success(self):
        return True


def is_available():
    """True: the process group API is there (the backends load at init)."""
    return True


def is_initialized():
    return _C._dist_state() is not None


def is_mpi_available():
    return True


def is_nccl_available():
    return bool(_C._cuda_built()) if hasattr(_C, "_cuda_built") else False


def is_gloo_available():
    return False


def is_torchelastic_launched():
    return "TORCHELASTIC_RUN_ID" in _os.environ


def _env_int(name, v):
    """The launcher's variable `name` (its value v) as an int; -1 when unset."""
    if v in (None, ""):
        return -1
    try:
        return int(v)
    except ValueError:
        raise ValueError(f"init_process_group: {name}={v!r} is not an integer") from None


def _local_device(device_id, env=None):
    """The GPU the nccl backend uses: device_id's index when given, else
    LOCAL_RANK (torchrun's), else OMPI_COMM_WORLD_LOCAL_RANK (mpirun's): a
    rank's number among its host's ranks; -1 when none says (the CUDA
    default)."""
    env = _os.environ if env is None else env
    if device_id is not None:
        if isinstance(device_id, str):
            idx = int(device_id.split(":")[1]) if ":" in device_id else None
        else:
            idx = getattr(device_id, "index", device_id)
        if idx is not None:
            return int(idx)
    for name in ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"):
        v = _env_int(name, env.get(name))
        if v >= 0:
            return v
    return -1


def _seconds(timeout):
    if timeout is None:
        return 0.0
    return float(timeout.total_seconds() if hasattr(timeout, "total_seconds") else timeout)


def _excepthook(prev):
    def hook(tp, value, tb):
        prev(tp, value, tb)
        state = _C._dist_state()
        if state is not None and state[1] > 1:  # the other ranks must not wait for this one
            _C._dist_abort(f"{tp.__name__}: {value}")
    return hook


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """Start the default process group.  The rank and world size come from
    the launcher (Open MPI under mpirun); world_size / rank arguments or the
    RANK / WORLD_SIZE variables, when given, must agree with it."""
    if store is not None:
        raise NotImplementedError("init_process_group(store=...): janus's ranks meet through MPI or "
                                  "MASTER_ADDR/MASTER_PORT; leave store out")
    if init_method not in (None, "env://"):
        raise NotImplementedError(f"init_process_group(init_method={init_method!r}): only env:// (the default) "
                                  "is supported: set MASTER_ADDR and MASTER_PORT instead")
    name = str(backend or ("nccl" if device_id is not None else "mpi")).lower()
    if name == "gloo" or name == "cpu:gloo":
        name = "mpi"
    if name not in ("mpi", "nccl"):
        raise ValueError(f"init_process_group: unknown backend {backend!r}: janus has 'mpi' (CPU tensors) and "
                         "'nccl' (CUDA tensors)")
    if world_size is None or world_size < 0:
        world_size = _env_int("WORLD_SIZE", _os.environ.get("WORLD_SIZE"))
    if rank is None or rank < 0:
        rank = _env_int("RANK", _os.environ.get("RANK"))
    addr = _os.environ.get("MASTER_ADDR", "")
    port = _env_int("MASTER_PORT", _os.environ.get("MASTER_PORT"))
    device = _local_device(device_id) if name == "nccl" else -1
    _C._dist_init(name, int(rank), int(world_size), addr, int(port), _seconds(timeout), device)
    if not getattr(_sys.excepthook, "_janus_dist", False):
        hook = _excepthook(_sys.excepthook)
        hook._janus_dist = True
        _sys.excepthook = hook


def destroy_process_group(group=None):
    _check_group(group, "destroy_process_group")
    _C._dist_destroy()


def _state(what):
    s = _C._dist_state()
    if s is None:
        raise RuntimeError(f"{what}: the default process group is not initialized: call "
                           "janus.distributed.init_process_group(backend='mpi') first")
    return s


def _check_group(group, what):
    if group is not None and group is not GroupMember.WORLD:
        raise NotImplementedError(f"{what}(group=...): janus has the default group only; leave group out")


def get_rank(group=None):
    """This process's rank; -1 when no process group is initialized (as torch)."""
    _check_group(group, "get_rank")
    s = _C._dist_state()
    return -1 if s is None else s[0]


def get_world_size(group=None):
    _check_group(group, "get_world_size")
    s = _C._dist_state()
    return -1 if s is None else s[1]


def get_backend(group=None):
    _check_group(group, "get_backend")
    return Backend(_state("get_backend")[2])


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False):
    """The whole world only: another subset of ranks is not supported."""
    world = get_world_size()
    if ranks is not None and sorted(ranks) != list(range(world)):
        raise NotImplementedError(f"new_group(ranks={list(ranks)}): janus has the default group only "
                                  f"(all {world} ranks)")
    return GroupMember.WORLD


def _done(async_op):
    return _Work() if async_op else None


def barrier(group=None, async_op=False, device_ids=None):
    """Every rank waits for the others: the table op barrier, run in its
    graph under replay; the segment ends after it, so it has run when this
    returns (with async_op=True: when the Work's wait() returns)."""
    _check_group(group, "barrier")
    import janus
    _C._dist_flush()
    # the placing tensor: on the group's device, so the op runs where its collectives do
    place = janus.zeros((), dtype=janus.int32, device="cuda" if get_backend() == "nccl" else "cpu")
    work = _Work(_ops.barrier(place))
    if async_op:
        return work
    work.wait()
    return None


def _all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """tensor = op over every rank's tensor, in place."""
    _check_group(group, "all_reduce")
    _C._dist_flush()
    _ops.all_reduce_(tensor, op=int(op))
    return _done(async_op)


# the common call (a tensor, an int op, the default group, no Work) dispatches the op from C; any other
# goes to _all_reduce: a small all-reduce costs little more than Open MPI's own call
all_reduce = _C._dist_fast_all_reduce(_all_reduce)


def broadcast(tensor, src=0, group=None, async_op=False, group_src=None):
    """tensor = rank src's tensor, in place."""
    _check_group(group, "broadcast")
    _C._dist_flush()
    _ops.broadcast_(tensor, src=int(src if group_src is None else group_src))
    return _done(async_op)


def _world(what):
    return _state(what)[1]


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """output = every rank's input concatenated along dim 0, by rank (output
    of world * input.numel() elements: [world * n, ...] or [world, n, ...])."""
    _check_group(group, "all_gather_into_tensor")
    world = _world("all_gather_into_tensor")
    if output_tensor.numel() != world * input_tensor.numel():
        raise ValueError(f"all_gather_into_tensor: the output has {output_tensor.numel()} elements; it needs world "
                         f"size {world} x the input's {input_tensor.numel()}")
    _C._dist_flush()
    output_tensor.copy_(_ops.all_gather(input_tensor).reshape(output_tensor.shape))
    return _done(async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """tensor_list[r] = rank r's tensor."""
    _check_group(group, "all_gather")
    world = _world("all_gather")
    if len(tensor_list) != world:
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors; the world has {world} ranks")
    _C._dist_flush()
    flat = _ops.all_gather(tensor).reshape((world,) + tuple(tensor.shape))
    for r, t in enumerate(tensor_list):
        t.copy_(flat[r])
    return _done(async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """output = this rank's share (dim 0 split by rank) of op over every rank's input."""
    _check_group(group, "reduce_scatter_tensor")
    world = _world("reduce_scatter_tensor")
    if input.numel() != world * output.numel():
        raise ValueError(f"reduce_scatter_tensor: the input has {input.numel()} elements; it needs world size "
                         f"{world} x the output's {output.numel()}")
    _C._dist_flush()
    output.copy_(_ops.reduce_scatter(input.reshape(world, -1), op=int(op)).reshape(output.shape))
    return _done(async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """output = op over every rank's input_list[this rank]."""
    import janus
    _check_group(group, "reduce_scatter")
    world = _world("reduce_scatter")
    if len(input_list) != world:
        raise ValueError(f"reduce_scatter: input_list has {len(input_list)} tensors; the world has {world} ranks")
    _C._dist_flush()
    share = _ops.reduce_scatter(janus.stack(list(input_list)), op=int(op))
    output.copy_(share.reshape(output.shape))
    return _done(async_op)


from . import nn  # noqa: E402  (torch.distributed.nn.functional)
