"""janus.backends.cudnn: torch.backends.cudnn's flags (accepted, no effect)
and whether cuDNN can be used (a CUDA device is available)."""
from .. import cuda as _cuda

enabled = True
benchmark = False
deterministic = False
allow_tf32 = False


def is_available():
    return _cuda.is_available()


def version():
    return None
