"""janus.cuda: the part of torch.cuda that CPU-only scripts touch.

Janus has no GPU backend yet (the CUDA toolkit is only detected at build
time), so is_available() is False and device_count() is 0; the seeding and
synchronization calls are no-ops, which lets the usual
`device = "cuda" if torch.cuda.is_available() else "cpu"` scripts run.
"""


def is_available():
    """True when tensors can be placed on a CUDA device (not yet: False)."""
    return False


def device_count():
    return 0


def manual_seed(seed):
    """No-op: there are no CUDA generators (janus.manual_seed seeds the CPU one)."""


def manual_seed_all(seed):
    """No-op, like manual_seed."""


def synchronize(device=None):
    """No-op: nothing runs asynchronously."""


def is_initialized():
    return False


def current_device():
    raise RuntimeError("janus.cuda: no CUDA device is available (this build runs on the cpu only)")
