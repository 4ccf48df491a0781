"""Janus: a deep-learning framework with a PyTorch-style API whose recorded
training runs are optimized offline into guarded, compiled graphs.

This file is the package entry point; the C runtime is janus._C.  The
public API mirrors torch: janus.Tensor, janus.tensor(...), janus.zeros(...),
janus.add(...), dtypes janus.float32 ..., so a PyTorch script ports by
changing its imports.
"""
import os as _os

# Development builds: tests point JANUS_BUILD_DIR at a CMake build tree whose
# python/janus holds the compiled extension.  Read from os.environ, not
# through the settings table: it says where the table (in _C) is found.
_bd = _os.environ.get("JANUS_BUILD_DIR")
if _bd:
    __path__.insert(0, _os.path.join(_os.path.abspath(_bd), "python", "janus"))


# OpenBLAS kernel sets that need AVX-512 (what OPENBLAS_CORETYPE may name).
_AVX512_CORES = ("skylakex", "cooperlake", "sapphirerapids")


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            return next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), None)
    except OSError:
        return None


def _check_openblas_core(core, flags):
    """A user's OPENBLAS_CORETYPE naming AVX-512 kernels on a CPU without
    AVX-512 makes OpenBLAS stop the process with SIGILL at its first matrix
    product, with no message: say so at import instead.  flags None: unknown
    (no /proc/cpuinfo), nothing is checked."""
    if core and flags is not None and core.strip().lower() in _AVX512_CORES and "avx512f" not in flags:
        return (f"OPENBLAS_CORETYPE={core} names OpenBLAS's AVX-512 kernels, but this CPU has no AVX-512 "
                f"(avx512f is not in /proc/cpuinfo's flags): its first matrix product would die with SIGILL "
                f"(illegal instruction). Unset OPENBLAS_CORETYPE (janus then picks "
                f"{'Haswell' if 'avx2' in flags else 'a kernel set this CPU has'}) or set it to one this CPU runs")
    return None


def _pick_openblas_core():
    """Debian's OpenBLAS 0.3.21 does not recognise recent Xeons and falls back
    to its SSE3 kernels (about 4x slower GEMM).  OpenBLAS picks its kernels when
    the library loads, so before _C (which links it) loads, name the kernel set
    this CPU supports; the variable is removed again so that libraries loaded
    later (numpy's own OpenBLAS) detect for themselves.  A user's own
    OPENBLAS_CORETYPE always wins."""
    flags = _cpu_flags()
    if "OPENBLAS_CORETYPE" in _os.environ:
        why = _check_openblas_core(_os.environ["OPENBLAS_CORETYPE"], flags)
        if why:
            raise ImportError(why)
        return None
    if flags is None:
        return None
    if all(x in flags for x in ("avx512f", "avx512bw", "avx512vl", "avx512dq")):
        return "SkylakeX"
    if all(x in flags for x in ("avx2", "fma")):
        return "Haswell"
    return None


_core = _pick_openblas_core()
if _core:
    _os.environ["OPENBLAS_CORETYPE"] = _core
# OpenBLAS starts its threads when _C (which links it) loads: with the
# signals a user sends blocked here, they inherit the mask and a ^C or
# SIGTERM always lands on a thread that handles it, never on one of theirs
# (as janus's own threads, runtime/jn_thread.h).  Only the main thread can
# change the mask here; an import from another thread loads _C as it is.
import signal as _signal  # noqa: E402
import threading as _threading  # noqa: E402
_async = {_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP, _signal.SIGQUIT, _signal.SIGUSR1, _signal.SIGUSR2,
          _signal.SIGALRM, _signal.SIGCHLD, _signal.SIGPIPE}
_mask = (_signal.pthread_sigmask(_signal.SIG_BLOCK, _async)
         if _threading.current_thread() is _threading.main_thread() else None)
try:
    from . import _C  # noqa: E402
finally:
    if _mask is not None:
        _signal.pthread_sigmask(_signal.SIG_SETMASK, _mask)
    if _core:
        del _os.environ["OPENBLAS_CORETYPE"]
del _async, _mask

__version__ = _C.__version__

# The settings the eager runtime reads where no error can go back (the
# thread pool's size at the first parallel kernel, the block cache's at the
# first free: jn_setting_int_lazy; the small-GEMM kernel at the first
# product) are parsed here, so a bad value raises
# ValueError naming the variable before anything runs.  Every other
# setting's reader refuses a bad value itself (the recorder and replay then
# run the script eagerly and say why); `janus env` lists them all.
for _s in ("JANUS_NUM_THREADS", "JANUS_CACHE_MB", "JANUS_GEMM_KERNEL"):
    _C._setting_value(_s)

from . import _dtype  # noqa: E402
from ._dtype import Size, device, dtype, finfo, iinfo, inf, nan, e, pi  # noqa: E402,F401
from ._dtype import (memory_format, contiguous_format, channels_last, channels_last_3d,  # noqa: E402,F401
                     preserve_format)

_C._register(_dtype.DTYPES, Size, _dtype.CPU)

float32 = float = _dtype._BY_NAME["float32"]
float64 = double = _dtype._BY_NAME["float64"]
float16 = half = _dtype._BY_NAME["float16"]
bfloat16 = _dtype._BY_NAME["bfloat16"]
int64 = long = _dtype._BY_NAME["int64"]
int32 = int = _dtype._BY_NAME["int32"]
uint8 = _dtype._BY_NAME["uint8"]
bool = _dtype._BY_NAME["bool"]
strided = "janus.strided"

from . import return_types  # noqa: E402,F401
from . import _ops  # noqa: E402
from ._ops import ops  # noqa: E402,F401
from . import _functions  # noqa: E402,F401
from . import _compose  # noqa: E402,F401
from . import _compose_more  # noqa: E402,F401
from . import _compose_corpus_a  # noqa: E402,F401
from . import _foreach  # noqa: E402,F401  (torch._foreach_*)
from . import _scatter_reduce  # noqa: E402,F401
from . import _lapack  # noqa: E402,F401
from . import _factories  # noqa: E402
from ._factories import Generator, default_generator  # noqa: E402,F401
from ._tensor import Tensor  # noqa: E402
from . import _tensor_apply  # noqa: E402,F401  (Tensor.apply_ / map_)
from ._format import set_printoptions, get_printoptions  # noqa: E402,F401
# the legacy typed constructors (FloatTensor, LongTensor, ...), one per dtype this build has
from ._tensortype import LEGACY_TYPES as _legacy_types  # noqa: E402
globals().update(_legacy_types)

_tensor_mod = __import__(__name__ + "._tensor", fromlist=["install_methods"])
_tensor_mod.install_methods()
globals().update(_ops.FUNCTIONS)

from . import _autograd  # noqa: E402
_autograd.install(Tensor)
from . import autograd  # noqa: E402
from .autograd import no_grad, enable_grad, set_grad_enabled, is_grad_enabled  # noqa: E402,F401
from . import cuda  # noqa: E402,F401
from . import cpu  # noqa: E402,F401
from . import amp  # noqa: E402,F401
from .amp.autocast_mode import (autocast, is_autocast_enabled, get_autocast_dtype,  # noqa: E402,F401
                                set_autocast_dtype, set_autocast_enabled, is_autocast_cpu_enabled,
                                get_autocast_cpu_dtype, get_autocast_gpu_dtype, is_autocast_cache_enabled,
                                set_autocast_cache_enabled, clear_autocast_cache)

# torch.inference_mode disables recording like no_grad (no separate inference tensors here)
inference_mode = getattr(autograd, "inference_mode", no_grad)


def is_inference_mode_enabled():
    """Whether this thread is inside janus.inference_mode() (mode True)."""
    return autograd._inference_mode_enabled()


def is_tensor(obj):
    return isinstance(obj, _C.TensorBase)


def is_floating_point(input):
    return input.dtype.is_floating_point


def numel(input):
    return input.numel()


def get_default_dtype():
    return float32


def set_default_dtype(d):
    if d is not float32:
        raise NotImplementedError("janus's default floating dtype is float32; other defaults are not "
                                  "supported yet")


# ------------------------------------------------ type promotion (torch's)
# result_type / promote_types answer with janus's own promotion (runtime/dtype.c:
# jn_result_type, jn_promote): the dtype of a where() over empty stand-ins of the
# arguments -- 1-d tensors, 0-d tensors or the Python numbers themselves, the three
# priority levels -- computed once per combination and kept here.
_promoted = {}
_RT_OVERLOADS = (("Tensor tensor", "Tensor other"), ("Number scalar", "Tensor tensor"),
                 ("Tensor tensor", "Number other"), ("Number scalar1", "Number scalar2"))


def _promotion_key(x):
    """(level, dtype or Python type) of a result_type argument; None if it is neither
    a tensor nor a real number."""
    import builtins
    import numbers
    if isinstance(x, _C.TensorBase):
        return ("tensor" if x.dim() else "0-d", x.dtype)
    if isinstance(x, builtins.bool) or type(x).__name__ == "bool_":  # numpy.bool_ as torch
        return ("number", builtins.bool)
    if isinstance(x, numbers.Integral):
        return ("number", builtins.int)
    if isinstance(x, numbers.Real):
        return ("number", builtins.float)
    if isinstance(x, numbers.Complex):
        raise TypeError("result_type(): janus has no complex dtypes")
    return None


def _promote(ka, kb):
    r = _promoted.get((ka, kb))
    if r is None:
        def stand_in(k):
            level, t = k
            return (t(1) if level == "number" else
                    _factories.empty((0,) if level == "tensor" else (), dtype=t))
        with no_grad():
            r = _ops.INTERNAL["where"](_factories.zeros(0, dtype=bool), stand_in(ka), stand_in(kb)).dtype
        _promoted[(ka, kb)] = r
    return r


def _rt_type_name(x):
    return "Tensor" if isinstance(x, _C.TensorBase) else type(x).__name__


def result_type(*args, **kwargs):
    """torch.result_type(tensor1, tensor2): the dtype an arithmetic op on the
    two (tensors or Python numbers) gives, by torch's promotion rules (janus's
    own: dimensioned tensors over 0-d tensors over Python numbers)."""
    names = ("tensor", "other", "scalar", "scalar1", "scalar2")
    got = [*args, *(kwargs[k] for k in names if k in kwargs)]
    if len(got) == 2 and len(args) + len(kwargs) == 2 and set(kwargs) <= set(names):
        keys = [_promotion_key(x) for x in got]
        if None not in keys:
            return _promote(keys[0], keys[1])
    shown = ", ".join([_rt_type_name(a) for a in args] + [f"{k}={_rt_type_name(v)}" for k, v in kwargs.items()])
    text = f"result_type() received an invalid combination of arguments - got ({shown}), but expected one of:\n"
    for over in _RT_OVERLOADS:
        text += f" * ({', '.join(over)})\n"
        if len(args) == 2 and not kwargs:
            marks = []
            for a, p in zip(args, over):
                ok = isinstance(a, _C.TensorBase) and p.startswith("Tensor")  # torch marks every non-tensor
                marks.append(_rt_type_name(a) if ok else f"!{_rt_type_name(a)}!")
            text += f"      didn't match because some of the arguments have invalid types: ({', '.join(marks)})\n"
    raise TypeError(text)


def _dtype_arg(x, fn, name, pos):
    """A dtype argument of promote_types / can_cast (Python float, int and bool
    name float64, int64 and bool, as in torch)."""
    import builtins
    if isinstance(x, dtype):
        return x
    if x in (builtins.float, builtins.int, builtins.bool):
        return _dtype.to_dtype(x)
    where = f" (position {pos})" if pos else ""
    raise TypeError(f"{fn}(): argument '{name}'{where} must be a janus.dtype, not {type(x).__name__}")


def promote_types(type1, type2):
    """torch.promote_types: the smallest dtype both promote to (janus's promotion)."""
    return _promote(("tensor", _dtype_arg(type1, "promote_types", "type1", 1)),
                    ("tensor", _dtype_arg(type2, "promote_types", "type2", 2)))


def can_cast(from_, to):
    """torch.can_cast: whether a result of dtype from_ may be written into a
    tensor of dtype to (in-place ops, out=): no floating -> integral or bool,
    no non-bool -> bool -- the rule janus's dispatcher applies (runtime/dispatch.c)."""
    f = _dtype_arg(from_, "can_cast", "from_", 1)
    t = _dtype_arg(to, "can_cast", "to", 2)
    return not ((f.is_floating_point and not t.is_floating_point) or (f is not bool and t is bool))


del _bd, _tensor_mod, _s, _legacy_types

# live forward-hook registrations on modules (nn/module.py); nonzero: every module call runs
# _module_hooked_call (set by nn/module.py)
_module_hooks = 0
# subpackages, as `import torch` makes torch.nn, torch.optim, torch.utils.data available
# (last: they import janus)
from . import nn  # noqa: E402,F401
from . import optim  # noqa: E402,F401
from . import utils  # noqa: E402,F401
from .serialization import save, load  # noqa: E402,F401
from . import accelerator, backends, distributed, distributions, multiprocessing, onnx, serialization  # noqa: E402,F401
from . import func, jit, linalg, random, special  # noqa: E402,F401
from . import profiler  # noqa: E402,F401
from . import testing, version  # noqa: E402,F401

# JANUS_KERNEL_CLOCK: time spent inside kernels on this thread (benchmarks/bench_replay.py)
if _C._setting_value("JANUS_KERNEL_CLOCK"):
    _C._kernel_clock(True)
# Recording: janus.step() marks step boundaries (a no-op unless recording);
# under `janus record` (JANUS_RECORD_DB set) the recorder starts here, after
# the whole API exists.  Plain runs install no hook at all.
from . import _record  # noqa: E402
from ._record import step  # noqa: E402,F401
_record.start_from_env()
# Replay: under `janus replay` (JANUS_REPLAY_DB set) the bundle loads here.
# _region_step / _region_module: set while a replay replaces optimizer steps and
# module calls (janus/_region.py).
_region_step = None
_region_module = None
_region_zero_grad = None
_region_function = None
from . import _replay  # noqa: E402
_replay.start_from_env()
# A name janus lacks fails where it is used, saying so (janus/_unsupported.py).
from . import _unsupported  # noqa: E402
_unsupported.guard_all()
# janus.cuda.amp and janus.cpu.amp are module objects, not files: importable by name
from . import _torch_alias  # noqa: E402
for _m in (cuda, cpu):
    _torch_alias.register_children(_m, _m.__name__)
del _m
