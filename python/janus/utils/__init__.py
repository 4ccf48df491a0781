"""janus.utils: data loading utilities (janus.utils.data), checkpoint and
tensorboard (SummaryWriter)."""
# tensorboard is imported here so that torch.utils.tensorboard resolves even
# unimported (the guard would otherwise call it unsupported)
from . import checkpoint, data, tensorboard  # noqa: F401
