"""janus.version: what torch.version says about a build (scripts and
libraries read torch.version.cuda to tell a CUDA build from a CPU one).

__version__ is janus's own version; cuda is the CUDA runtime janus's
extension was linked against ("13.0"), or None for a build without CUDA or
where the runtime cannot be asked; hip, rocm and xpu are None (janus has no
such backends); debug is False and git_version "unknown" (a build does not
record its commit)."""
import ctypes as _ctypes
import os as _os

from . import _C

__all__ = ["__version__", "cuda", "debug", "git_version", "hip", "rocm", "xpu"]

__version__ = _C.__version__
debug = False
git_version = "unknown"
hip = None
rocm = None
xpu = None


def _cuda_runtime_version():
    """"major.minor" of the libcudart _C loaded (cudaRuntimeGetVersion, which
    needs no GPU and starts no driver), or None.  Only a library already in
    the process is asked (RTLD_NOLOAD): importing this never loads CUDA."""
    if not _C.HAVE_CUDA:
        return None
    try:
        with open("/proc/self/maps") as f:
            paths = {ln.split()[-1] for ln in f
                     if len(ln.split()) == 6 and _os.path.basename(ln.split()[-1]).startswith("libcudart")}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            lib = _ctypes.CDLL(path, mode=_os.RTLD_NOLOAD | _os.RTLD_LAZY)
            v = _ctypes.c_int(0)
            if lib.cudaRuntimeGetVersion(_ctypes.byref(v)) == 0 and v.value > 0:
                return f"{v.value // 1000}.{v.value % 1000 // 10}"
        except (OSError, AttributeError):
            continue
    return None


cuda = _cuda_runtime_version()
