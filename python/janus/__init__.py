"""Janus: a deep-learning framework with a PyTorch-style API whose recorded
training runs are optimized offline into guarded, compiled graphs.

This file is the package entry point; the C runtime is janus._C.
"""
import os as _os

# Development builds: tests point JANUS_BUILD_DIR at a CMake build tree whose
# python/janus holds the compiled extension.
_bd = _os.environ.get("JANUS_BUILD_DIR")
if _bd:
    __path__.insert(0, _os.path.join(_os.path.abspath(_bd), "python", "janus"))

from . import _C  # noqa: E402

__version__ = _C.__version__
