"""janus.amp: automatic mixed precision, as torch.amp.

autocast (autocast_mode.py; the casting is runtime/autocast.c) and
GradScaler (grad_scaler.py).  janus.cuda.amp and janus.cpu.amp hold the
device-bound aliases (amp/_device.py).
"""
from .autocast_mode import autocast, is_autocast_available  # noqa: F401
from .grad_scaler import GradScaler  # noqa: F401

__all__ = ["autocast", "GradScaler", "is_autocast_available"]
