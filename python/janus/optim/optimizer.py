"""janus.optim.Optimizer: the base class of every optimizer.

It mirrors torch.optim.Optimizer: param_groups (a list of dicts with the
constructor's defaults filled in), state (a dict keyed by parameter),
zero_grad(), add_param_group(), state_dict()/load_state_dict() in PyTorch's
format, and step pre/post hooks.  Subclasses implement step() only; the base
class wraps every subclass's step() (__init_subclass__) so that it runs under
no_grad like torch's, runs the hooks, and finally calls janus._step_hook() when
the janus module defines one -- the recorder uses that call to close a
training step.  Nested calls (a subclass's step calling super().step()) run
the wrapper's work once, on the outermost call.

Updates are written with in-place tensor methods (p.add_(...), p.mul_(...))
so they go through the C dispatcher and bump version counters, in the same
operation order as torch's single-tensor (non-foreach, non-fused) code.
"""
import functools
from collections import OrderedDict, defaultdict
from itertools import chain

import janus
from janus import _C, _record

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    """Singleton marking a hyper-parameter that has no default (torch's `required`)."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


# ------------------------------------------------------------------ helpers
class _GradMode:
    """Set autograd's grad mode for a block (falls back to _C when the front
    end has no no_grad/enable_grad yet)."""

    def __init__(self, on):
        self.on = on

    def __enter__(self):
        self.prev = _C._set_grad_enabled(self.on)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)
        return False


def _no_grad():
    ng = getattr(janus, "no_grad", None)
    return ng() if ng is not None else _GradMode(False)


def _enable_grad():
    eg = getattr(janus, "enable_grad", None)
    return eg() if eg is not None else _GradMode(True)


def _is_tensor(x):
    return isinstance(x, _C.TensorBase)


def _typename(x):
    return type(x).__module__ + "." + type(x).__qualname__


def _is_leaf(p):
    leaf = getattr(p, "is_leaf", None)
    return _C._is_leaf(p) if leaf is None else leaf


def _addcmul_(t, a, b, value):
    """t += value * a * b, in place (torch's addcmul_)."""
    f = getattr(t, "addcmul_", None)
    if f is not None:
        return f(a, b, value=value)
    return t.add_(a * b, alpha=value)


def _addcdiv_(t, a, b, value):
    """t += value * a / b, in place (torch's addcdiv_)."""
    f = getattr(t, "addcdiv_", None)
    if f is not None:
        return f(a, b, value=value)
    return t.add_(a / b, alpha=value)


def _lerp_(t, end, weight):
    """t = t + weight * (end - t), in place, with torch's CPU lerp formula
    (which switches form at weight 0.5 for accuracy)."""
    f = getattr(t, "lerp_", None)
    if f is not None:
        return f(end, weight)
    if abs(weight) < 0.5:
        return t.add_(end - t, alpha=weight)
    return t.copy_(end.sub(end - t, alpha=1.0 - weight))


def _step_value(step):
    """A saved 'step' entry (a number or a one-element tensor) -> float."""
    if _is_tensor(step):
        return float(step.item())
    return float(step)


def _copy_value(param, value, key=None):
    """Deep-copy a saved state value for `param`: tensors are cloned (and cast
    to the parameter's dtype when both are floating point, like torch), the
    'step' counter becomes a float, containers are copied recursively."""
    if key == "step" and (_is_tensor(value) or isinstance(value, (int, float))):
        return _step_value(value)
    if _is_tensor(value):
        with _no_grad():
            v = value.detach()
            if v.dtype.is_floating_point and param.dtype.is_floating_point and v.dtype != param.dtype:
                return v.to(param.dtype)
            return v.clone()
    if isinstance(value, dict):
        return {k: _copy_value(param, v, key=k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_copy_value(param, v) for v in value)
    return value


class _RemovableHandle:
    """What register_*_hook returns: .remove() unregisters the hook."""

    _next_id = 0

    def __init__(self, table):
        self._table = table
        self.id = _RemovableHandle._next_id
        _RemovableHandle._next_id += 1

    def remove(self):
        self._table.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


_global_pre_hooks = OrderedDict()
_global_post_hooks = OrderedDict()


def register_optimizer_step_pre_hook(hook):
    """hook(optimizer, args, kwargs) before every optimizer's step."""
    h = _RemovableHandle(_global_pre_hooks)
    _global_pre_hooks[h.id] = hook
    return h


def register_optimizer_step_post_hook(hook):
    """hook(optimizer, args, kwargs) after every optimizer's step."""
    h = _RemovableHandle(_global_post_hooks)
    _global_post_hooks[h.id] = hook
    return h


def _wrap_step(fn):
    """Wrap a subclass's step(): no_grad, hooks, janus._step_hook()."""

    @functools.wraps(fn)
    def step(self, *args, **kwargs):
        depth = self.__dict__.get("_step_depth", 0)
        if depth:  # a nested super().step(): the outer call does the rest
            return fn(self, *args, **kwargs)
        for hook in chain(_global_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            result = hook(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError(f"{hook} must return None or a tuple of (new_args, new_kwargs), "
                                       f"but got {result}.")
        self._step_depth = 1
        try:
            with _no_grad():
                regions = janus._region_step  # set while a replay replaces steps (janus/_region.py)
                if regions is not None and not args and not kwargs:
                    out = regions(self, fn)
                elif _record.regions:  # janus record: the step is a region (entry/exit in the trace)
                    out = _record.optimizer_step(self, fn, args, kwargs)
                else:
                    out = fn(self, *args, **kwargs)
        finally:
            self._step_depth = 0
        self._opt_called = True
        self._step_count = self.__dict__.get("_step_count", 0) + 1
        for hook in chain(self._optimizer_step_post_hooks.values(), _global_post_hooks.values()):
            hook(self, args, kwargs)
        step_hook = getattr(janus, "_step_hook", None)
        if step_hook is not None:
            step_hook()
        return out

    step._janus_step_wrapped = True
    return step


# ------------------------------------------------------------ the base class
class Optimizer:
    """Base class of all optimizers.

    params: an iterable of tensors, or of dicts (parameter groups) each with a
    'params' entry and optional per-group hyper-parameters.
    defaults: the hyper-parameters' default values (a dict).
    """

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        fn = cls.__dict__.get("step")
        if fn is not None and not getattr(fn, "_janus_step_wrapped", False):
            cls.step = _wrap_step(fn)

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._step_depth = 0
        self._opt_called = False
        self._step_count = 0
        if _is_tensor(params):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors "
                            f"or dicts, but got {_typename(params)}")
        if isinstance(params, (set, frozenset)):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the "
                            "ordering of tensors in sets will change between runs. Please use a list instead.")
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    # --------------------------------------------------------------- misc
    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.__dict__.setdefault("_optimizer_step_pre_hooks", OrderedDict())
        self.__dict__.setdefault("_optimizer_step_post_hooks", OrderedDict())
        self.__dict__.setdefault("_step_depth", 0)
        self.__dict__.setdefault("_opt_called", False)
        self.__dict__.setdefault("_step_count", 0)

    def __repr__(self):
        s = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += "\n"
            s += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        s += ")"
        return s

    def register_step_pre_hook(self, hook):
        """hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs), before step()."""
        h = _RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[h.id] = hook
        return h

    def register_step_post_hook(self, hook):
        """hook(optimizer, args, kwargs) after step()."""
        h = _RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[h.id] = hook
        return h

    def step(self, closure=None):
        """Perform one optimization step (subclasses implement it)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement step()")

    @staticmethod
    def _eval_closure(closure):
        """Re-evaluate the model with autograd on (torch runs closures under enable_grad)."""
        if closure is None:
            return None
        with _enable_grad():
            return closure()

    # -------------------------------------------------------- param groups
    def add_param_group(self, param_group):
        """Add a parameter group (a dict with 'params' and optional options)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        if "params" not in param_group:
            raise ValueError("param_group must have a 'params' entry")
        params = param_group["params"]
        if _is_tensor(params):
            param_group["params"] = [params]
        elif isinstance(params, (set, frozenset)):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the "
                            "ordering of tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)

        for param in param_group["params"]:
            if not _is_tensor(param):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(param))
            if not self.defaults.get("differentiable", False) and not _is_leaf(param):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required optimization "
                                 "parameter " + name)
            param_group.setdefault(name, default)

        ids = [id(p) for p in param_group["params"]]
        if len(ids) != len(set(ids)):
            import warnings
            warnings.warn("optimizer contains a parameter group with duplicate parameters; "
                          "in future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information", stacklevel=3)

        existing = set()
        for group in self.param_groups:
            existing.update(id(p) for p in group["params"])
        if not existing.isdisjoint(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # ----------------------------------------------------------- zero_grad
    @_record.region_method("zero_grad")
    def zero_grad(self, set_to_none=True):
        """Reset the gradients of all optimized tensors: to None (default) or,
        with set_to_none=False, to zeros in place."""
        fast = janus._region_zero_grad  # set while a replay does this from C (janus/_region.py)
        if fast is not None and fast(self, set_to_none):
            return
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if getattr(g, "grad_fn", None) is not None:
                        g = g.detach()
                        p.grad = g
                    elif g.requires_grad:
                        g.requires_grad_(False)
                    with _no_grad():
                        zero = getattr(g, "zero_", None)
                        if zero is not None:
                            zero()
                        else:
                            g.fill_(0)

    # ---------------------------------------------------------- state dict
    def state_dict(self):
        """{'state': {index: {...}}, 'param_groups': [{..., 'params': [index, ...]}]}.

        Parameters are numbered in the order they appear across the groups;
        the state values are the optimizer's own objects (not copies), as in torch.
        """
        param_mappings = {}
        start_index = 0

        def pack_group(group):
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start_index):
                if id(p) not in param_mappings:
                    param_mappings[id(p)] = i
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(param_mappings[id(k)] if _is_tensor(k) else k): v for k, v in self.state.items()}
        return {"state": packed_state, "param_groups": param_groups}

    def load_state_dict(self, state_dict):
        """Load a state_dict() result (this optimizer's, another instance's, or
        one read back with janus.load).  Tensors are copied; floating state is
        cast to its parameter's dtype."""
        if not isinstance(state_dict, dict) or "state" not in state_dict or "param_groups" not in state_dict:
            raise ValueError("optimizer state_dict must be a dict with 'state' and 'param_groups' entries, got "
                             + (f"keys {sorted(map(str, state_dict))}" if isinstance(state_dict, dict)
                                else type(state_dict).__name__))
        groups = self.param_groups
        saved_groups = state_dict["param_groups"]
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups "
                             f"({len(saved_groups)}) than the optimizer ({len(groups)})")
        for i, (g, sg) in enumerate(zip(groups, saved_groups)):
            if not isinstance(sg, dict) or "params" not in sg:
                raise ValueError(f"loaded state dict's param_groups[{i}] is not a dict with a 'params' entry")
            if len(g["params"]) != len(sg["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't match the size "
                                 f"of optimizer's group (group {i}: {len(sg['params'])} saved parameters, "
                                 f"{len(g['params'])} in the optimizer)")

        id_map = {}
        for sg, g in zip(saved_groups, groups):
            for old_id, p in zip(sg["params"], g["params"]):
                id_map[old_id] = p

        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            key = k
            if key not in id_map and isinstance(key, str) and key.lstrip("-").isdigit():
                key = int(key)  # keys that went through a string-keyed format
            if key in id_map:
                param = id_map[key]
                if not isinstance(v, dict):
                    raise ValueError(f"loaded state dict's state[{k!r}] must be a dict, got {type(v).__name__}")
                state[param] = {sk: _copy_value(param, sv, key=sk) for sk, sv in v.items()}
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group = {k: (list(v) if isinstance(v, list) else v) for k, v in new_group.items()
                         if k != "params"}
            if "betas" in new_group and isinstance(new_group["betas"], list):
                new_group["betas"] = tuple(new_group["betas"])
            for k, v in self.defaults.items():
                new_group.setdefault(k, v)
            new_group["params"] = group["params"]
            return new_group

        self.state = state
        self.param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]


def _check(ok_value, message):
    """torch-style hyper-parameter validation: ValueError('Invalid learning rate: -1').
    NaN fails every check (0.0 <= nan is False), as in torch."""
    if not ok_value:
        raise ValueError(message)


def _check_adam_family(lr, eps, betas, weight_decay, differentiable):
    """The hyper-parameter checks Adam, AdamW, NAdam, RAdam and Adamax share, torch's messages."""
    _check(0.0 <= lr, f"Invalid learning rate: {lr}")
    _check(0.0 <= eps, f"Invalid epsilon value: {eps}")
    _check(0.0 <= betas[0] < 1.0, f"Invalid beta parameter at index 0: {betas[0]}")
    _check(0.0 <= betas[1] < 1.0, f"Invalid beta parameter at index 1: {betas[1]}")
    _check(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
    if differentiable:
        raise NotImplementedError("janus optimizers do not support differentiable=True")
