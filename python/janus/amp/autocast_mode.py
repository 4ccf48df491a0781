"""janus.autocast: PyTorch's autocast context manager over the C dispatcher.

The casting itself happens in the runtime (runtime/autocast.c: one policy
table keyed by the op enum), so Tensor methods, operators and
nn.functional all get it; this module keeps PyTorch's Python surface:
the context manager / decorator with its per-thread, nestable state, the
module-level queries (is_autocast_enabled, get_autocast_dtype, ...) and
the wrapper (`_composite`) through which nn.functional's losses and norms,
which PyTorch runs as single ops, cast their arguments and run their body
with autocast suspended.
"""
import functools
import warnings

import janus
from janus import _C

__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype",
           "is_autocast_available", "is_autocast_cache_enabled", "set_autocast_cache_enabled",
           "clear_autocast_cache", "set_autocast_enabled"]

_DEVICES = {"cpu": 0, "cuda": 1}


def _dev(device_type, fn):
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    d = _DEVICES.get(device_type.split(":")[0])
    if d is None:
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'"
                           f" ({fn}: janus supports 'cpu' and 'cuda')")
    return d


def is_autocast_available(device_type):
    return device_type.split(":")[0] in _DEVICES


def is_autocast_enabled(device_type=None):
    """torch.is_autocast_enabled(): without a device type, the cuda state (PyTorch's legacy meaning)."""
    return bool(_C._autocast_get(_dev(device_type or "cuda", "is_autocast_enabled"))[0])


def set_autocast_enabled(device_type, enabled=None):
    if enabled is None:  # torch's legacy set_autocast_enabled(enabled) means cuda
        device_type, enabled = "cuda", device_type
    d = _dev(device_type, "set_autocast_enabled")
    en, code, cache = _C._autocast_get(d)
    _C._autocast_set(d, bool(enabled), code, cache)


def get_autocast_dtype(device_type):
    return janus._dtype.DTYPES[_C._autocast_get(_dev(device_type, "get_autocast_dtype"))[1]]


def set_autocast_dtype(device_type, dtype):
    d = _dev(device_type, "set_autocast_dtype")
    en, code, cache = _C._autocast_get(d)
    _C._autocast_set(d, en, dtype._code, cache)


def is_autocast_cpu_enabled():
    return is_autocast_enabled("cpu")


def get_autocast_cpu_dtype():
    return get_autocast_dtype("cpu")


def get_autocast_gpu_dtype():
    return get_autocast_dtype("cuda")


def is_autocast_cache_enabled():
    return bool(_C._autocast_get(0)[2])


def set_autocast_cache_enabled(enabled):
    for d in _DEVICES.values():
        en, code, _ = _C._autocast_get(d)
        _C._autocast_set(d, en, code, bool(enabled))


def clear_autocast_cache():
    _C._autocast_clear_cache()


class autocast:
    """Context manager and decorator: inside, ops on `device_type` tensors run
    in mixed precision by PyTorch's op lists (GEMMs and convolutions in `dtype`,
    losses and other precision-sensitive ops in float32, joins at the widest
    input type).  State is per thread; regions nest and restore on exit;
    enabled=False turns autocast off inside an enabled region."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        self._dev = _dev(device_type, "autocast")
        self.device = device_type.split(":")[0]
        self.fast_dtype = get_autocast_dtype(self.device) if dtype is None else dtype
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else bool(cache_enabled)
        self._args = (device_type, dtype, enabled, cache_enabled)
        if enabled:
            if self.device == "cuda" and not janus.cuda.is_available():
                warnings.warn("CUDA is not available. Disabling autocast.", stacklevel=2)
                enabled = False
            elif self.fast_dtype not in (janus.bfloat16, janus.float16):
                name = self.device.upper()
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                              f"{name} Autocast only supports dtypes of janus.bfloat16, janus.float16 "
                              "currently.", stacklevel=2)
                enabled = False
        self._enabled = bool(enabled)

    def __enter__(self):
        code = self.fast_dtype._code if self._enabled else _C._autocast_get(self._dev)[1]
        self._prev = _C._autocast_set(self._dev, self._enabled, code, self._cache_enabled)
        _C._autocast_increment_nesting()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if _C._autocast_decrement_nesting() == 0:
            _C._autocast_clear_cache()
        en, code, cache = self._prev
        _C._autocast_set(self._dev, en, code, cache)
        return False

    def __call__(self, func):
        args = self._args

        @functools.wraps(func)
        def decorate_autocast(*a, **kw):
            # a fresh region per call: recursion must not share one saved state
            with autocast(*args):
                return func(*a, **kw)
        return decorate_autocast


def _composite(name):
    """Decorator for nn.functional functions that PyTorch dispatches as one
    op: under autocast their tensor arguments are cast by the composite table
    in runtime/autocast.c and their body runs with autocast suspended.
    Outside autocast it costs one C call."""
    index = _C._autocast_composite_index(name)

    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if not _C._autocast_active():
                return fn(*args, **kwargs)
            r = _C._autocast_composite_args(index, args, kwargs)
            if r is not None:
                args, kwargs = r
            token = _C._autocast_suspend()
            try:
                return fn(*args, **kwargs)
            finally:
                _C._autocast_resume(token)
        return wrapper
    return deco
