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


def _pick_openblas_core():
    """Debian's OpenBLAS 0.3.21 does not recognise recent Xeons and falls back
    to its SSE3 kernels (about 4x slower GEMM).  OpenBLAS picks its kernels when
    the library loads, so before _C (which links it) loads, name the kernel set
    this CPU supports; the variable is removed again so that libraries loaded
    later (numpy's own OpenBLAS) detect for themselves.  A user's own
    OPENBLAS_CORETYPE always wins."""
    if "OPENBLAS_CORETYPE" in _os.environ:
        return None
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), [])
    except OSError:
        return None
    if all(x in flags for x in ("avx512f", "avx512bw", "avx512vl", "avx512dq")):
        return "SkylakeX"
    if all(x in flags for x in ("avx2", "fma")):
        return "Haswell"
    return None


_core = _pick_openblas_core()
if _core:
    _os.environ["OPENBLAS_CORETYPE"] = _core
try:
    from . import _C  # noqa: E402
finally:
    if _core:
        del _os.environ["OPENBLAS_CORETYPE"]

__version__ = _C.__version__
