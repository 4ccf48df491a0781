"""janus.cpu: the cpu device module, as torch.cpu (janus.cpu.amp.autocast,
janus.cpu.amp.GradScaler)."""
from .amp._device import cpu as amp  # noqa: F401


def is_available():
    return True


def synchronize(device=None):
    """No-op: cpu ops finish before they return."""
