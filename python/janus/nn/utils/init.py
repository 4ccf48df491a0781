"""janus.nn.utils.init: skip_init, a module built without spending its
initialization (torch.nn.utils.init)."""
import inspect

from janus import _C

from ..module import Module

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """module_cls(*args, **kwargs) for a caller that will overwrite every
    parameter and buffer (e.g. load a state dict or initialize it itself).

    torch builds the module on the meta device and allocates uninitialized
    storage; janus has no meta device, so the module is constructed
    normally (its initializers run, on the CPU) and then moved to `device`
    when one is given.  The random stream is restored afterwards: as with
    torch, skip_init draws nothing from the global generator, so what is
    drawn next is the same as if it had not been called.  The values are
    therefore initialized rather than garbage, and unlike torch, module_cls
    need not take a `device` argument.  Returns a module_cls instance with
    the usual parameter and buffer shapes."""
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    device = kwargs.pop("device", None)
    if device is not None and "device" in inspect.signature(module_cls).parameters:
        kwargs["device"], device = device, None
    state = _C._rng_state()
    try:
        module = module_cls(*args, **kwargs)
    finally:
        _C._set_rng_state(*state)
    if device is not None:
        module.to(device)
    return module
