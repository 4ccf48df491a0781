"""janus.nn.utils.stateless: functional_call, a module run with given tensors
in place of its parameters and buffers (torch.nn.utils.stateless; the
non-deprecated spelling is janus.func.functional_call).

The given tensors, named by their dotted paths ("layer1.0.weight"), are
swapped into the owning module's `_parameters` / `_buffers` dicts (or set as
plain attributes for other names), the module is called, and the originals
are put back in a `finally`, so a forward that raises leaves the module as
it was.  The tensors are used as given: a computed tensor (p - lr * g, the
MAML pattern) keeps its graph, so gradients flow back through it.  A module
that assigns or updates a swapped tensor in place (BatchNorm's running
statistics) updates the given tensor, and a tensor it assigned anew is
written back into the caller's dict, as torch does.
"""
import warnings

import janus

from ..module import Module

__all__ = ["functional_call"]

_MISSING = object()  # a name the module did not have before the swap


def _check_name(name):
    if "." in name:
        raise KeyError('tensor name can\'t contain "."')
    if name == "":
        raise KeyError('tensor name can\'t be empty string ""')


def _swap_tensor(module, name, tensor):
    """Put tensor at module.<name> (name without dots) and return what was
    there (_MISSING when nothing was); tensor _MISSING removes the name.
    Registered parameters and buffers are swapped in their dicts directly
    (a computed tensor is no Parameter: Module.__setattr__ would refuse it
    for a parameter name); other names through setattr / delattr."""
    if not isinstance(module, Module):
        raise TypeError(f"{module} is not an instance of torch.nn.Module")
    if tensor is not _MISSING and tensor is not None and not isinstance(tensor, janus.Tensor):
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    _check_name(name)
    d = module.__dict__
    for kind in ("_parameters", "_buffers"):
        store = d.get(kind)
        if store is not None and name in store:
            orig = store[name]
            if tensor is _MISSING:
                del store[name]
            else:
                store[name] = tensor
            return orig
    if hasattr(module, name):
        orig = getattr(module, name)
    else:
        orig = _MISSING
    if orig is not _MISSING and orig is not None and not isinstance(orig, janus.Tensor):
        raise TypeError(f"attribute `{name}`: {orig} is not an instance of torch.Tensor")
    if tensor is not _MISSING:
        setattr(module, name, tensor)
    elif hasattr(module, name):
        delattr(module, name)
    return orig


class _Accessor:
    """Submodules by dotted path (cached), and tensors swapped by dotted path
    (torch.nn.utils._named_member_accessor.NamedMemberAccessor's part that
    functional_call uses)."""

    def __init__(self, module):
        self.module = module
        self.memo = {}

    def get_submodule(self, name):
        if not name:
            return self.module
        sub = self.memo.get(name)
        if sub is not None:
            return sub
        prefix, dot, attr = name.rpartition(".")
        parent = self.get_submodule(prefix) if dot else self.module
        try:
            sub = getattr(parent, attr)
        except AttributeError as ex:
            raise AttributeError(f"{type(parent).__name__} has no attribute `{attr}`") from ex
        if not isinstance(sub, Module):
            raise TypeError(f"submodule `{name}`: {sub} is not an instance of torch.nn.Module")
        self.memo[name] = sub
        return sub

    def swap_tensor(self, name, value):
        prefix, _, attr = name.rpartition(".")
        return _swap_tensor(self.get_submodule(prefix), attr, value)

    def swap_tensors_dict(self, named_tensors):
        """Swap every entry in; returns {name: what was there}.  If one swap
        fails, those already made are undone before the error propagates."""
        orig = {}
        try:
            for name, tensor in named_tensors.items():
                orig[name] = self.swap_tensor(name, tensor)
        except Exception:
            for name, t in orig.items():
                self.swap_tensor(name, t)
            raise
        return orig


def _named_tensors(module):
    """(dotted name, tensor) of every parameter then every buffer, tied ones
    and those of shared submodules under each of their names
    (named_parameters / named_buffers with remove_duplicate=False)."""
    mods = list(module.named_modules(remove_duplicate=False))
    out = []
    for kind in ("_parameters", "_buffers"):
        for prefix, m in mods:
            for k, v in m.__dict__.get(kind, {}).items():
                if v is not None:
                    out.append((prefix + ("." if prefix else "") + k, v))
    return out


def _untie_named_tensors_map(module, parameters_and_buffers):
    """parameters_and_buffers plus, for each given name of a tied tensor (one
    tensor reachable under several names), the same value under every other
    name of that tensor.  ValueError when different values are given for
    names of the same tensor."""
    by_tensor = {}  # id(tensor) -> its names
    for name, tensor in _named_tensors(module):
        by_tensor.setdefault(id(tensor), set()).add(name)
    tied = {}
    for names in by_tensor.values():
        if len(names) > 1:
            for n in names:
                tied[n] = names
    given = [n for n in parameters_and_buffers if n in tied]
    given_set = set(given)
    for name in given:
        names = tied[name]
        values = {id(parameters_and_buffers[n]) for n in names if n in given_set}
        if len(values) > 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, "
                             "which are tied. Consider using tie_weights=False")
    untied = dict(parameters_and_buffers)
    for name in given:
        for n in tied[name]:
            untied[n] = parameters_and_buffers[name]
    return untied


class _reparametrize_module:
    """Context manager: the module with the given tensors swapped in, the
    originals swapped back on exit (also when the body raised)."""

    def __init__(self, module, parameters_and_buffers, tie_weights=False, strict=False):
        self.module = module
        self.given = parameters_and_buffers
        self.tie_weights = tie_weights
        self.strict = strict

    def __enter__(self):
        module = self.module
        untied = _untie_named_tensors_map(module, self.given) if self.tie_weights else self.given
        self.accessor = _Accessor(module)
        if self.strict:
            valid = {n for n, _ in _named_tensors(module)}
            keys = set(untied)
            missing, unexpected = sorted(valid - keys), sorted(keys - valid)
            msgs = []
            if unexpected:
                msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
            if missing:
                msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
            if msgs:
                raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(
                    type(module).__name__, "\n\t".join(msgs)))
        self.orig = self.accessor.swap_tensors_dict(untied)
        return self

    def __exit__(self, *exc):
        current = self.accessor.swap_tensors_dict(self.orig)
        # a module that assigned a swapped name anew (not in place) hands the
        # new tensor back in the caller's dict, as torch does
        self.given.update({k: current[k] for k in self.given if k in current and current[k] is not _MISSING})
        return False


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """module(*args, **kwargs) with the tensors of parameters_and_buffers
    ({dotted name: tensor}) in place of the module's parameters and buffers,
    the originals restored afterwards (also when forward raises).

    tie_weights: a tensor the module holds under several names (tied
    weights) takes the given value under all of them; different values for
    names of one tensor are a ValueError.  strict: the given names must be
    exactly the module's parameter and buffer names (RuntimeError naming the
    missing and unexpected keys).  Without strict, a name the module lacks
    is set as a plain attribute for the call and removed afterwards.
    args: a tuple, or one value (not a tuple) passed as the only positional
    argument.

    Deprecated in torch (a FutureWarning, as there): use
    janus.func.functional_call."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed "
                  "in a future version of PyTorch. Please use `torch.func.functional_call` instead which is a "
                  "drop-in replacement.", FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)


def _functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    from ..parallel import DataParallel
    if isinstance(module, DataParallel):
        raise RuntimeError("The stateless API can't be used with nn.DataParallel module")
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights, strict=strict):
        return module(*args, **kwargs)
