"""janus.cuda.amp / janus.cpu.amp: torch.cuda.amp and torch.cpu.amp's
device-bound spellings of autocast and GradScaler."""
import types

from .autocast_mode import autocast as _autocast
from .grad_scaler import GradScaler as _GradScaler


def _module(device, default_dtype):
    def dtype_default():
        import janus
        return getattr(janus, default_dtype)

    class autocast(_autocast):
        __doc__ = f"janus.{device}.amp.autocast: janus.autocast('{device}', ...) with {device}'s defaults."

        def __init__(self, enabled=True, dtype=None, cache_enabled=True):
            super().__init__(device, dtype=dtype_default() if dtype is None else dtype, enabled=enabled,
                             cache_enabled=cache_enabled)


    class GradScaler(_GradScaler):
        __doc__ = f"janus.{device}.amp.GradScaler: janus.amp.GradScaler('{device}', ...)."

        def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                     enabled=True):
            super().__init__(device, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)

    autocast.__qualname__ = autocast.__name__ = "autocast"
    GradScaler.__qualname__ = GradScaler.__name__ = "GradScaler"
    m = types.ModuleType(f"janus.{device}.amp", f"janus.{device}.amp: autocast and GradScaler bound to {device}.")
    m.autocast = autocast
    m.GradScaler = GradScaler
    return m


cuda = _module("cuda", "float16")
cpu = _module("cpu", "bfloat16")
