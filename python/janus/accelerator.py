"""janus.accelerator: torch.accelerator's device-agnostic questions,
answered for this machine.  The accelerator is CUDA when janus.cuda can
place tensors on a GPU (janus.cuda.is_available()); otherwise there is none
(the CPU is not an accelerator, as in PyTorch)."""
from . import cuda as _cuda
from ._dtype import device as _device

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index", "current_device_idx",
           "set_device_index", "set_device_idx", "synchronize", "device_index"]


def is_available():
    return _cuda.is_available()


def current_accelerator(check_available=False):
    """device('cuda') when a GPU is usable, else None."""
    return _device("cuda") if _cuda.is_available() else None


def device_count():
    return _cuda.device_count()


def current_device_index():
    return 0 if _cuda.is_available() else -1


current_device_idx = current_device_index


def set_device_index(device):
    """Janus uses one device (index 0)."""
    idx = device.index if hasattr(device, "index") else device
    if idx not in (None, 0, -1):
        raise RuntimeError(f"janus uses one accelerator (index 0), got index {idx}")


set_device_idx = set_device_index


def synchronize(device=None):
    _cuda.synchronize()


class device_index:
    """Context manager selecting an accelerator index (only 0 exists)."""

    def __init__(self, device):
        set_device_index(device)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
