"""janus.cuda: the CUDA device, like torch.cuda.

Janus's CUDA eager backend (runtime/cuda/) is compiled in when the build
found the CUDA toolkit and used when a GPU is present; it is initialized
lazily, so importing janus makes no CUDA call.  is_available() asks the
driver once (cudaGetDeviceCount) and caches the answer; without a driver or
a GPU it is False and every CUDA request raises a RuntimeError saying why.
One device (cuda:0) and one compute stream; memory comes from a caching
allocator whose counters memory_allocated() / max_memory_allocated() read.
"""
from . import _C
from .amp._device import cuda as amp  # noqa: F401  (janus.cuda.amp.autocast / GradScaler)

_reason = []  # [None] or [why]: the driver's answer, asked once


def _unavailable_reason():
    """None when CUDA tensors can be made, else why not (a sentence)."""
    if not _reason:
        if not _C._cuda_built():
            _reason.append("janus was built without CUDA: no nvcc was found at build time; rebuild with the "
                           "CUDA toolkit installed (-DJANUS_CUDA=ON)")
        else:
            n, why = _C._cuda_device_count()
            _reason.append(None if n > 0 else why)
    return _reason[0]


def is_built():
    """True when the CUDA backend is compiled into this janus."""
    return bool(_C._cuda_built())


def is_available():
    """True when tensors can be placed on a CUDA device."""
    return _unavailable_reason() is None


def device_count():
    return 1 if is_available() else 0


def _require(fn):
    why = _unavailable_reason()
    if why is not None:
        raise RuntimeError(f"janus.cuda.{fn}(): CUDA is not available ({why})")


def manual_seed(seed):
    """No-op: CUDA random numbers are drawn from the CPU generator's Philox
    stream (random factories with device='cuda' generate on the cpu and copy)."""


def manual_seed_all(seed):
    """No-op, like manual_seed."""


def synchronize(device=None):
    """Wait for all work queued on the GPU (a no-op when CUDA was never used)."""
    _C._cuda_synchronize()


def is_initialized():
    return is_available() and _C._cuda_memory()[2] > 0


def current_device():
    _require("current_device")
    return _C._cuda_current_device()


def set_device(device):
    """Janus uses one CUDA device per process: device 0 unless set here (or by
    init_process_group("nccl") from LOCAL_RANK) before the first CUDA tensor;
    `cuda` and `cuda:<that number>` then name it."""
    if isinstance(device, str):
        idx = int(device.split(":")[1]) if ":" in device else None
    else:
        idx = getattr(device, "index", device)
    if idx is None or (idx == 0 and _unavailable_reason() is not None):
        return  # the default: nothing to choose (also without a GPU, as before)
    try:
        _C._cuda_set_device(int(idx))
    except Exception as e:
        raise RuntimeError(f"janus.cuda.set_device({device!r}): {e} (janus uses one device per process)") from None


def is_bf16_supported(including_emulation=True):
    """bfloat16 tensors work wherever CUDA does (janus emulates what the GPU lacks)."""
    return is_available()


def get_device_name(device=None):
    _require("get_device_name")
    return "cuda:0"


def memory_allocated(device=None):
    """Bytes of device memory held by live tensors (the allocator's rounded block sizes)."""
    return _C._cuda_memory()[0]


def max_memory_allocated(device=None):
    """Peak of memory_allocated() since start or reset_peak_memory_stats()."""
    return _C._cuda_memory()[1]


def memory_reserved(device=None):
    """Bytes obtained from the driver: live blocks plus the allocator's cache."""
    return _C._cuda_memory()[2]


def reset_peak_memory_stats(device=None):
    _C._cuda_reset_peak()


def empty_cache():
    """Give the allocator's cached free blocks back to the driver."""
    _C._cuda_empty_cache()


def supported_ops():
    """Names of the table ops the CUDA backend implements (no GPU needed to ask)."""
    return list(_C._cuda_supported_ops())
