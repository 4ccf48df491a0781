"""janus.nn.utils.weight_norm: the hook-based weight normalization
(torch.nn.utils.weight_norm, deprecated there in favour of
janus.nn.utils.parametrizations.weight_norm): weight is replaced by the
parameters weight_g (magnitude) and weight_v (direction), and a forward
pre-hook recomputes module.weight = weight_g * weight_v / ||weight_v||
(a plain attribute) before every forward.  Names, errors and the
FutureWarning are torch's."""
import warnings

from janus import _unsupported

from ..parameter import Parameter
from .parametrizations import _norm_except_dim, _weight_norm

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


def _pre_hooks(module):
    return module.__dict__.get("_forward_pre_hooks") or {}


def _remove_hook(module, key, hook):
    """Unregister the forward pre-hook hook (at key) through its handle."""
    handle = getattr(hook, "_handle", None)
    if handle is not None and handle.id == key and handle._dicts is not None:
        handle.remove()
    else:  # no live handle (e.g. a module unpickled): the registration counted for good stays counted
        del module.__dict__["_forward_pre_hooks"][key]


class WeightNorm:
    """The forward pre-hook: recomputes module.<name> from <name>_g and <name>_v."""

    def __init__(self, name, dim):
        if dim is None:
            dim = -1
        self.name = name
        self.dim = dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module, name, dim):
        warnings.warn(f"`{_unsupported._spelled('janus.nn.utils.weight_norm')}` is deprecated in favor of "
                      f"`{_unsupported._spelled('janus.nn.utils.parametrizations.weight_norm')}`.",
                      FutureWarning, stacklevel=3)
        for hook in _pre_hooks(module).values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        if dim is None:
            dim = -1
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        # w leaves the parameters; g and v come in, w = g / ||v|| * v
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, dim).detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        fn._handle = module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Replace module.<name> by <name>_g (its norm over every dim but dim,
    kept as size-1 dims; over the whole tensor when dim is None) and
    <name>_v (the weight), recombined as g * v / ||v|| before every
    forward.  Returns module."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    """Undo weight_norm: module.<name> is a Parameter again, holding the
    current g * v / ||v||.  Returns module."""
    for k, hook in list(_pre_hooks(module).items()):
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            _remove_hook(module, k, hook)
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
