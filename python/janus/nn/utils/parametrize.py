"""janus.nn.utils.parametrize: a parameter or buffer computed from other
tensors on every access (torch.nn.utils.parametrize).

register_parametrization(module, "weight", P) moves module.weight into
module.parametrizations.weight (a ParametrizationList holding P and the
unconstrained tensor as `original`, or `original0`, `original1`, ... when
P.right_inverse returns several) and swaps the module's class for a
generated subclass `Parametrized<Class>` whose property `weight` returns
P(original) -- so autograd differentiates through P into the originals,
and an optimizer updates the originals.  Assigning to module.weight runs
the right_inverse of each parametrization (last to first) and stores the
result in the originals.  Several parametrizations on one tensor chain
(the first registered is applied first).  The state_dict keys, error
messages and checks are PyTorch's.

Differences from PyTorch: janus tensors have no set_(), so where torch
re-points an original at a new tensor (right_inverse at registration, an
assignment, remove_parametrizations(leave_parametrized=True)) janus copies
the values into the original in place (the Parameter object, and so the
optimizer's reference, stays the same; the original does not alias the
tensor right_inverse returned); a single-tensor right_inverse that changes
the shape (unsafe=True) registers a new Parameter instead.
"""
import collections.abc
import copy
from contextlib import contextmanager

import janus

from ..module import Module
from ..modules.container import ModuleDict, ModuleList
from ..parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations", "transfer_parametrizations_and_params"]

_cache_enabled = 0
_cache = {}  # (id(module), tensor_name) -> the parametrized value, inside cached()


@contextmanager
def cached():
    """Inside the block a parametrized tensor is computed the first time it
    is read and that value is reused (e.g. a recurrent kernel read at every
    step); the values are dropped when the outermost block exits."""
    global _cache, _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register_parameter_or_buffer(module, name, X):
    if isinstance(X, Parameter):
        module.register_parameter(name, X)
    else:
        module.register_buffer(name, X)


def _maybe_set(module, name, dest, src):
    """torch's dest.set_(src) for module's original `name`: the values of src
    copied into dest (same shape), else src registered in its place (a
    Parameter if dest was one).  Returns the tensor now registered."""
    if src is dest:
        return dest
    if tuple(src.shape) == tuple(dest.shape) and src.device == dest.device:
        with janus.no_grad():
            dest.copy_(src.detach().clone())  # clone: src may overlap dest
        return dest
    with janus.no_grad():
        new = src.detach()
    if isinstance(dest, Parameter):
        new = Parameter(new, dest.requires_grad)
    if module is not None:
        _register_parameter_or_buffer(module, name, new)
    return new


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor and its original(s): the type of
    module.parametrizations[tensor_name].  Holds `original` when the first
    parametrization has no right_inverse or its right_inverse returns one
    tensor, else `original0`, `original1`, ...  Created by
    register_parametrization, not by users."""

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe

        original_shape = original.shape
        original_dtype = original.dtype
        with janus.no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
                # no right_inverse (or it raised NotImplementedError): the identity

        if not isinstance(new, janus.Tensor) and not isinstance(new, collections.abc.Sequence):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                             f"Got {type(new).__name__}")

        self.is_tensor = isinstance(new, janus.Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)

        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                                 f"original.dtype: {original.dtype}\n"
                                 f"right_inverse(original).dtype: {new.dtype}")
            if original.device != new.device:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the device.\n"
                                 f"original.device: {original.device}\n"
                                 f"right_inverse(original).device: {new.device}")
            original = _maybe_set(None, "original", original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, originali in enumerate(new):
                if not isinstance(originali, janus.Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                                     f"Got element {i} of the sequence with type {type(originali).__name__}.")
                # a Parameter original gives Parameters (the user adds them to the optimizer)
                if isinstance(original, Parameter):
                    originali = Parameter(originali, original.requires_grad)
                originali.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", originali)

        if not self.unsafe:
            # forward(right_inverse(original)) must live where original does
            Z = self()
            if not isinstance(Z, janus.Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(Z).__name__}.")
            if Z.dtype != original_dtype:
                raise ValueError("Registering a parametrization may not change the dtype of the tensor, unless "
                                 "`unsafe` flag is enabled.\n"
                                 f"unparametrized dtype: {original_dtype}\n"
                                 f"parametrized dtype: {Z.dtype}")
            if tuple(Z.shape) != tuple(original_shape):
                raise ValueError("Registering a parametrization may not change the shape of the tensor, unless "
                                 "`unsafe` flag is enabled.\n"
                                 f"unparametrized shape: {original_shape}\n"
                                 f"parametrized shape: {Z.shape}")

    def right_inverse(self, value):
        """Run the parametrizations' right_inverse in reverse registration
        order on value and store the result in the original(s) (what
        `module.weight = value` does)."""
        with janus.no_grad():
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
                else:
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
            if self.is_tensor:
                if not isinstance(value, janus.Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype {value.dtype} "
                                     f"while `original` has dtype {self.original.dtype}")
                _maybe_set(self, "original", self.original, value)
            else:
                if not isinstance(value, collections.abc.Sequence):
                    raise ValueError(f"'right_inverse' must return a sequence of tensors. Got {type(value).__name__}.")
                if len(value) != self.ntensors:
                    raise ValueError("'right_inverse' must return a sequence of tensors of length "
                                     f"{self.ntensors}. Got a sequence of length {len(value)}.")
                for i, tensor in enumerate(value):
                    original_i = getattr(self, f"original{i}")
                    if not isinstance(tensor, janus.Tensor):
                        raise ValueError("'right_inverse' must return a sequence of tensors "
                                         f"or reference-type opaques. Got element {i} of type {type(tensor).__name__}.")
                    if original_i.dtype != tensor.dtype:
                        raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype {tensor.dtype} "
                                         f"while `original{i}` has dtype {original_i.dtype}")
                    _maybe_set(self, f"original{i}", original_i, tensor)

    def forward(self):
        mods = list(self._modules.values())
        if self.is_tensor:
            x = mods[0](self.original)
        else:
            x = mods[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for m in mods[1:]:
            x = m(x)
        return x


# ---- the generated class and its properties ---------------------------------
_SERIALIZE_MSG = ("Serialization of parametrized modules is only supported through state_dict(). See:\n"
                  "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
                  "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")


def _inject_new_class(module):
    """Swap module's class for Parametrized<Class> (a subclass that will hold
    the properties).  Such a module pickles only through state_dict() (as in
    torch); copy.deepcopy still works."""
    cls = module.__class__

    def getstate(self):
        raise RuntimeError(_SERIALIZE_MSG)

    def default_deepcopy(self, memo):
        obj = memo.get(id(self))
        if obj is not None:
            return obj
        replica = self.__new__(self.__class__)
        memo[id(self)] = replica
        # the plain class's state (janus's Module keeps its forward hooks counted this way)
        replica.__setstate__(copy.deepcopy(cls.__getstate__(self), memo))
        return replica

    def setattr_(self, name, value):
        # torch: assigning a Parameter to a parametrized name is a registration clash
        if isinstance(value, Parameter) and isinstance(getattr(type(self), name, None), property) and \
                is_parametrized(self, name):
            raise KeyError(f"attribute '{name}' already exists")
        cls.__setattr__(self, name, value)

    dct = {"__getstate__": getstate, "__setattr__": setattr_}
    if not hasattr(cls, "__deepcopy__"):
        dct["__deepcopy__"] = default_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), dct)


def _inject_property(module, tensor_name):
    """The property module.<tensor_name>: the parametrization's value (cached
    inside cached()); assigning runs right_inverse."""
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")

    def get_parametrized(self):
        parametrization = self._modules["parametrizations"][tensor_name]
        if _cache_enabled:
            key = (id(self), tensor_name)
            tensor = _cache.get(key)
            if tensor is None:
                tensor = parametrization()
                _cache[key] = tensor
            return tensor
        return parametrization()

    def set_original(self, value):
        self._modules["parametrizations"][tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Make module.<tensor_name> the value of parametrization applied to the
    original tensor (moved to module.parametrizations[tensor_name].original,
    or original0, original1, ... when parametrization.right_inverse returns
    a sequence).  A second registration on the same name chains after the
    first.  Unless unsafe, the parametrization (and its right_inverse) must
    keep the tensor's dtype and shape.  Returns module."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            Y = getattr(module, tensor_name)
            X = parametrization(Y)
            if not isinstance(X, janus.Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(X).__name__}.")
            if X.dtype != Y.dtype:
                raise ValueError("Registering a parametrization may not change the dtype of the tensor, unless the "
                                 "`unsafe` flag is enabled.\n"
                                 f"module.{tensor_name}.dtype: {Y.dtype}\n"
                                 f"parametrization(module.{tensor_name}).dtype: {X.dtype}")
            if tuple(X.shape) != tuple(Y.shape):
                raise ValueError("Registering a parametrization may not change the shape of the tensor, unless the "
                                 "`unsafe` flag is enabled.\n"
                                 f"module.{tensor_name}.shape: {Y.shape}\n"
                                 f"parametrization(module.{tensor_name}).shape: {X.shape}")
            if hasattr(parametrization, "right_inverse"):
                try:
                    Z = parametrization.right_inverse(X)
                except NotImplementedError:
                    pass
                else:
                    if not isinstance(Z, janus.Tensor):
                        raise ValueError(f"parametrization.right_inverse must return a tensor. Got: {type(Z).__name__}")
                    if Z.dtype != Y.dtype:
                        raise ValueError("The tensor returned by parametrization.right_inverse must have the same "
                                         f"dtype as module.{tensor_name}, unless the `unsafe` flag is enabled.\n"
                                         f"module.{tensor_name}.dtype: {Y.dtype}\n"
                                         f"returned dtype: {Z.dtype}")
                    if tuple(Z.shape) != tuple(Y.shape):
                        raise ValueError("The tensor returned by parametrization.right_inverse must have the same "
                                         f"shape as module.{tensor_name}, unless the `unsafe` flag is enabled.\n"
                                         f"module.{tensor_name}.shape: {Y.shape}\n"
                                         f"returned shape: {Z.shape}")
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        plist.unsafe |= unsafe  # once unsafe, always unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)  # checks first
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    return module


def is_parametrized(module, tensor_name=None):
    """Whether module has a parametrization on tensor_name (on any tensor
    when tensor_name is None)."""
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Undo register_parametrization on tensor_name (all its chained
    parametrizations).  leave_parametrized: module.<tensor_name> keeps its
    current parametrized value (written into the original Parameter when it
    is one tensor of the same shape, so optimizers keep their reference);
    else it becomes the original again (only when there is one original).
    The class is restored when no tensor is parametrized any more."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with janus.no_grad():
                t = getattr(module, tensor_name)
            original = _maybe_set(None, "original", original, t)
    else:
        if leave_parametrized:
            # not under no_grad: whether any original requires grad decides Parameter or buffer
            t = getattr(module, tensor_name)
            original = Parameter(t.detach()) if t.requires_grad else t
        else:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                             "that is parametrized in terms of a sequence of tensors.")
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module):
    """The module's class before any parametrization was registered."""
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Register from_module's parametrizations (the same parametrization
    objects) of tensor_name (of every parametrized tensor when None) on
    to_module, creating the tensor there when missing, and make to_module's
    originals the from_module's original Parameters.  Returns to_module."""
    if is_parametrized(from_module):
        names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
        for name in names:
            if not hasattr(to_module, name):
                setattr(to_module, name, Parameter(getattr(from_module, name)))
            for param_func in from_module.parametrizations[name]:
                register_parametrization(to_module, name, param_func)
            src, dst = from_module.parametrizations[name], to_module.parametrizations[name]
            if "original" in src._parameters or "original" in src._buffers:
                dst.original = src.original
            else:
                num = 0
                while f"original{num}" in src._parameters or f"original{num}" in src._buffers:
                    setattr(dst, f"original{num}", getattr(src, f"original{num}"))
                    num += 1
    return to_module
