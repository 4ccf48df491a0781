"""janus.utils: data loading utilities (janus.utils.data)."""
from . import data  # noqa: F401
