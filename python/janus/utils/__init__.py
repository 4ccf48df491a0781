"""janus.utils: data loading utilities (janus.utils.data)."""
from . import checkpoint, data  # noqa: F401
