"""janus.nn.utils.prune: torch.nn.utils.prune's masks on parameters.

Pruning module.<name> moves the parameter to module.<name>_orig, registers
the buffer module.<name>_mask (1 keeps an entry, 0 prunes it) and a forward
pre-hook (the pruning method object) that recomputes the plain attribute
module.<name> = <name>_orig * <name>_mask before every forward.  The
optimizer trains <name>_orig; the pruned entries of module.<name> stay zero
(their gradient through the mask is zero).  Pruning the same tensor again
composes the masks through a PruningContainer: each new method only
considers what is still unpruned.  remove() makes the pruning permanent:
<name> is a Parameter again holding orig * mask.

Methods: Identity, RandomUnstructured, L1Unstructured (the smallest |w|
entries, found with topk as in torch: which of several equal magnitudes
goes may differ), RandomStructured and LnStructured (whole channels along
dim, by random choice or by their L_n norm), CustomFromMask; the functions
identity, random_unstructured, l1_unstructured, random_structured,
ln_structured, global_unstructured, custom_from_mask, remove, is_pruned.
Names, state_dict keys, validation and messages are torch's.  The hook uses
janus ops only, so a pruned model records and replays like any other; the
random methods draw from janus's generator (other masks than torch's for a
seed)."""
import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

import janus

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured",
           "RandomStructured", "LnStructured", "CustomFromMask", "identity", "random_unstructured",
           "l1_unstructured", "random_structured", "ln_structured", "global_unstructured", "custom_from_mask",
           "remove", "is_pruned"]


def _pre_hooks(module):
    """The module's forward pre-hooks (janus creates the dict at the first registration)."""
    return module.__dict__.get("_forward_pre_hooks") or {}


def _unregister(module, key, hook):
    """Drop the forward pre-hook at key through its handle, so janus's count of
    live hooks (janus._module_hooks) goes down with it."""
    handle = hook.__dict__.pop("_handle", None)
    if handle is not None and handle.id == key and handle._dicts is not None:
        handle.remove()
    else:  # no live handle (an unpickled or copied module): its registration stays counted
        del module.__dict__["_forward_pre_hooks"][key]


class BasePruningMethod(ABC):
    """A pruning method: compute_mask(t, default_mask) says what to keep;
    apply() installs it on a module as its forward pre-hook."""

    _tensor_name: str

    def __call__(self, module, inputs):
        """The forward pre-hook: module.<name> = orig * mask for this forward."""
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The new mask (t's shape) given the importance scores t and the
        mask of earlier pruning, default_mask."""

    def apply_mask(self, module):
        """orig * mask for the tensor this method was applied to."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune module.<name> with cls(*args, **kwargs), on top of any pruning
        it already has.  importance_scores: the tensor the mask is computed
        from (module.<name> when None), of its shape.  Returns the method."""

        def _get_composite_method(cls, module, name, *args, **kwargs):
            old_method, old_key, found = None, None, 0
            for k, hook in _pre_hooks(module).items():
                if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
                    old_method, old_key = hook, k
                    found += 1
            if found > 1:
                raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module "
                                     f"{module}. Use a PruningContainer.")
            if old_method is not None:
                _unregister(module, old_key, old_method)
            method = cls(*args, **kwargs)
            method._tensor_name = name
            if old_method is not None:  # a second pruning: both go into one container
                if isinstance(old_method, PruningContainer):
                    old_method.add_pruning_method(method)
                    method = old_method
                elif isinstance(old_method, BasePruningMethod):
                    container = PruningContainer(old_method)
                    container.add_pruning_method(method)
                    method = container
            return method

        method = _get_composite_method(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is not None:
            if importance_scores.shape != orig.shape:
                raise AssertionError(f"importance_scores should have the same shape as parameter {name} of "
                                     f"{module}, got {importance_scores.shape} vs {orig.shape}")
        else:
            importance_scores = orig
        if not isinstance(method, PruningContainer):
            # the first pruning of name: the parameter becomes name_orig
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = janus.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone(memory_format=janus.contiguous_format)
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            method._handle = module.register_forward_pre_hook(method)
        except Exception:
            if not isinstance(method, PruningContainer):  # roll back to the plain parameter
                orig = getattr(module, name + "_orig")
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """t with this method's mask applied (t's own values when
        importance_scores is None); no module involved."""
        if importance_scores is not None:
            if importance_scores.shape != t.shape:
                raise AssertionError("importance_scores should have the same shape as tensor t, "
                                     f"got {importance_scores.shape} vs {t.shape}")
        else:
            importance_scores = t
        default_mask = default_mask if default_mask is not None else janus.ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module):
        """Make the pruning permanent: module.<name> becomes a Parameter
        holding orig * mask (the same Parameter object as <name>_orig);
        <name>_orig and <name>_mask go."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)

    def __getstate__(self):
        # the hook handle is this process's registration, not part of the method (pickles as torch's)
        state = dict(self.__dict__)
        state.pop("_handle", None)
        return state


class PruningContainer(BasePruningMethod):
    """The pruning methods applied one after another to one tensor: each new
    one computes its mask on what the earlier ones left."""

    def __init__(self, *args):
        self._pruning_methods = ()
        if not isinstance(args, Iterable):  # only 1 item
            self._tensor_name = args._tensor_name
            self.add_pruning_method(args)
        elif len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:  # built by hand from several methods (or none)
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method):
        """Add a method acting on the same tensor name."""
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        elif method is not None and self._tensor_name != method._tensor_name:
            raise ValueError("Can only add pruning methods acting on "
                             f"the parameter named '{self._tensor_name}' to PruningContainer {self}."
                             + f" Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        """The last method's mask computed on the entries (unstructured) or
        channels (structured) default_mask still keeps, merged into it."""

        def _combine_masks(method, t, mask):
            new_mask = mask.to(dtype=t.dtype)
            if method.PRUNING_TYPE == "unstructured":
                slc = mask == 1
            elif method.PRUNING_TYPE == "structured":
                if not hasattr(method, "dim"):
                    raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have the '
                                         "attribute `dim` defined.")
                n_dims = t.dim()
                dim = method.dim
                if dim < 0:
                    dim = n_dims + dim
                if dim < 0:
                    raise IndexError(f"Index is out of bounds for tensor with dimensions {n_dims}")
                # channels along dim not already entirely pruned
                keep_channel = mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
                slc = [slice(None)] * n_dims
                slc[dim] = keep_channel
            elif method.PRUNING_TYPE == "global":
                slc = [slice(None)] * len(t.shape)
            else:
                raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
            if isinstance(slc, list):
                slc = tuple(slc)
            partial_mask = method.compute_mask(t[slc], default_mask=mask[slc])
            new_mask[slc] = partial_mask.to(dtype=new_mask.dtype)
            return new_mask

        return _combine_masks(self._pruning_methods[-1], t, default_mask)


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones (sets up the reparametrization)."""
    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


def _unstructured_mask(amount, t, default_mask, scores, largest):
    """default_mask with the `amount` entries of t whose scores() are the
    largest (or smallest) set to 0; scores is called only when some are."""
    tensor_size = t.nelement()
    nparams_toprune = _compute_nparams_toprune(amount, tensor_size)
    _validate_pruning_amount(nparams_toprune, tensor_size)
    mask = default_mask.clone(memory_format=janus.contiguous_format)
    if nparams_toprune != 0:  # topk with k=0 has nothing to do
        topk = janus.topk(scores().view(-1), k=nparams_toprune, largest=largest)
        mask.view(-1)[topk.indices] = 0
    return mask


class RandomUnstructured(BasePruningMethod):
    """Prunes `amount` entries (a count, or a fraction of all) chosen at random."""
    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        return _unstructured_mask(self.amount, t, default_mask, lambda: janus.rand_like(t), largest=True)

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prunes the `amount` entries (a count, or a fraction of all) of smallest
    absolute value."""
    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        return _unstructured_mask(self.amount, t, default_mask, lambda: janus.abs(t), largest=False)

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes `amount` whole channels along dim, chosen at random."""
    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        tensor_size = t.shape[self.dim]
        nparams_toprune = _compute_nparams_toprune(self.amount, tensor_size)
        _validate_pruning_amount(nparams_toprune, tensor_size)

        def make_mask(t, dim, nchannels, nchannels_toprune):
            # the channels given the nchannels_toprune lowest random numbers go
            prob = janus.rand(nchannels)
            threshold = janus.kthvalue(prob, k=nchannels_toprune).values
            channel_mask = prob > threshold
            mask = janus.zeros_like(t)
            slc = [slice(None)] * len(t.shape)
            slc[dim] = channel_mask
            mask[tuple(slc)] = 1
            return mask

        if nparams_toprune == 0:
            mask = default_mask
        else:
            mask = make_mask(t, self.dim, tensor_size, nparams_toprune)
            mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the `amount` channels along dim of smallest L_n norm (n: an int,
    float, inf, -inf, "fro" or "nuc", as torch.norm takes it)."""
    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        tensor_size = t.shape[self.dim]
        nparams_toprune = _compute_nparams_toprune(self.amount, tensor_size)
        nparams_tokeep = tensor_size - nparams_toprune
        _validate_pruning_amount(nparams_toprune, tensor_size)
        norm = _compute_norm(t, self.n, self.dim)
        topk = janus.topk(norm, k=nparams_tokeep, largest=True)  # the channels kept

        def make_mask(t, dim, indices):
            mask = janus.zeros_like(t)
            slc = [slice(None)] * len(t.shape)
            slc[dim] = indices
            mask[tuple(slc)] = 1
            return mask

        if nparams_toprune == 0:
            mask = default_mask
        else:
            mask = make_mask(t, self.dim, topk.indices)
            mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where a given mask (the tensor's shape) is 0."""
    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match "
                                 f"self.mask shape {self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


def identity(module, name):
    """Set up pruning of module.<name> with an all-ones mask.  Returns module."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    """Prune `amount` random entries of module.<name> (an int: that many; a
    float in [0, 1]: that fraction, rounded).  Returns module."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    """Prune the `amount` entries of module.<name> with the smallest absolute
    value (of importance_scores when given).  Returns module."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    """Prune `amount` random channels of module.<name> along dim.  Returns module."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    """Prune the `amount` channels of module.<name> along dim with the
    smallest L_n norm.  Returns module."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune the (module, name) pairs of parameters together, as if they were
    one flat tensor: pruning_method (an unstructured method class, such as
    L1Unstructured or RandomUnstructured, built with **kwargs, e.g. amount)
    picks over all of them, so some tensors lose more than others.
    importance_scores: {(module, name): tensor} for the pairs scored by
    something other than their own values."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)  # walked three times: a generator would be spent after the first
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    relevant_importance_scores = janus.nn.utils.parameters_to_vector(
        [importance_scores.get((module, name), getattr(module, name)) for (module, name) in parameters])
    default_mask = janus.nn.utils.parameters_to_vector(
        [getattr(module, name + "_mask", janus.ones_like(getattr(module, name))) for (module, name) in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. '
                        f"Found method {pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    final_mask = container.compute_mask(relevant_importance_scores, default_mask)
    pointer = 0
    for module, name in parameters:
        param = getattr(module, name)
        num_param = param.numel()
        param_mask = final_mask[pointer:pointer + num_param].view_as(param)
        custom_from_mask(module, name, mask=param_mask)
        pointer += num_param


def custom_from_mask(module, name, mask):
    """Prune module.<name> where mask is 0.  Returns module."""
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module, name):
    """Make the pruning of module.<name> permanent: it becomes a Parameter
    holding orig * mask, and <name>_orig, <name>_mask and the hook go.
    Returns module."""
    for k, hook in list(_pre_hooks(module).items()):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            _unregister(module, k, hook)
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module):
    """Whether module or any of its submodules has a pruning hook."""
    for _, submodule in module.named_modules():
        for hook in _pre_hooks(submodule).values():
            if isinstance(hook, BasePruningMethod):
                return True
    return False


def _validate_pruning_amount_init(amount):
    """amount: an int >= 0 or a float in [0, 1] (checked before any tensor is seen)."""
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral) and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _validate_pruning_amount(amount, tensor_size):
    """An int amount may not exceed the number of units there are."""
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={tensor_size}")


def _validate_structured_pruning(t):
    shape = t.shape
    if len(shape) <= 1:
        raise ValueError("Structured pruning can only be applied to multidimensional tensors. Found tensor of "
                         f"shape {shape} with {len(shape)} dims")


def _compute_nparams_toprune(amount, tensor_size):
    """The number of units to prune: amount itself, or round(fraction * size)."""
    if isinstance(amount, numbers.Integral):
        return amount
    return round(amount * tensor_size)


def _validate_pruning_dim(t, dim):
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _compute_norm(t, n, dim):
    """The L_n norm of each channel of t along dim (over all the other dims)."""
    dims = list(range(t.dim()))
    if dim < 0:
        dim = dims[dim]
    dims.remove(dim)
    # as torch.norm: "nuc", and "fro" over two dims, are matrix norms; the rest flat vector norms
    is_matrix_dim = len(dims) == 2
    if n == "nuc" or (n == "fro" and is_matrix_dim):
        return janus.linalg.matrix_norm(t, ord=n, dim=dims if is_matrix_dim else (-2, -1))
    return janus.linalg.vector_norm(t, ord=2 if n == "fro" else n, dim=dims)
