"""nn.Module: the container of parameters, buffers and submodules, with
PyTorch's registration rules, traversal, state_dict and train/eval modes."""
from collections import OrderedDict

import janus
from janus import _record, _unsupported

from .parameter import Parameter

# the hook dicts of a PyTorch module's __dict__
_TORCH_HOOK_DICTS = ("_backward_pre_hooks", "_backward_hooks", "_forward_hooks", "_forward_hooks_with_kwargs",
                     "_forward_hooks_always_called", "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs",
                     "_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
                     "_load_state_dict_post_hooks")

class Module:
    """Base class of every layer; subclasses define forward()."""

    training: bool

    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __call__(self, *args, **kwargs):
        # The reference; Module.__call__ is the same choice made in C (below).
        if janus._module_hooks:  # some module has forward hooks: see _hooked_call
            return janus._module_hooked_call(self, args, kwargs)
        if _record.regions:  # janus record: the call is a region (entry/exit in the trace)
            return _record.module_call(self, args, kwargs)
        regions = janus._region_module  # set while a replay replaces module calls (janus/_region.py)
        if regions is not None:
            return regions(self, args, kwargs)
        return self.forward(*args, **kwargs)

    # ---- forward hooks (torch's names and dicts) -----------------------
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args) -> None or new args (a tuple, or one value); with_kwargs:
        hook(module, args, kwargs) -> None or (new_args, new_kwargs).  Runs before forward."""
        return self._add_hook("_forward_pre_hooks", hook, prepend, with_kwargs and "_forward_pre_hooks_with_kwargs")

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """hook(module, args, output) -> None or a new output; with_kwargs: hook(module, args,
        kwargs, output).  always_call: it runs (output None) when forward raises, too."""
        return self._add_hook("_forward_hooks", hook, prepend, with_kwargs and "_forward_hooks_with_kwargs",
                              always_call and "_forward_hooks_always_called")

    def _add_hook(self, kind, hook, prepend, *flags):
        d = self.__dict__
        for k in ((kind,) + _HOOK_FLAGS[kind]):
            d.setdefault(k, OrderedDict())
        h = _HookHandle([d[k] for k in (kind,) + _HOOK_FLAGS[kind]])
        d[kind][h.id] = hook
        if prepend:
            d[kind].move_to_end(h.id, last=False)
        for f in flags:
            if f:
                d[f][h.id] = True
        return h

    # ---- registration ------------------------------------------------
    def _check_init(self):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign to {type(self).__name__} before Module.__init__() is called")

    def __setattr__(self, name, value):
        d = self.__dict__
        if isinstance(value, Parameter):
            self._check_init()
            for k in ("_buffers", "_modules"):
                d[k].pop(name, None)
            d.pop(name, None)
            d["_parameters"][name] = value
        elif isinstance(value, Module):
            self._check_init()
            for k in ("_parameters", "_buffers"):
                d[k].pop(name, None)
            d.pop(name, None)
            d["_modules"][name] = value
        elif "_parameters" in d and name in d["_parameters"]:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(nn.Parameter or None expected)")
            d["_parameters"][name] = None
        elif "_buffers" in d and name in d["_buffers"]:
            if value is not None and not isinstance(value, janus.Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' (Tensor or None expected)")
            d["_buffers"][name] = value
        elif "_modules" in d and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}'")
            d["_modules"][name] = None
        else:
            object.__setattr__(self, name, value)

    # ---- pickling (torch.save(model)): PyTorch's attribute layout -------
    def __getstate__(self):
        """The instance dict as a PyTorch module has it, so torch.load can
        rebuild a janus-saved module: `_non_persistent_buffers_set`, and the
        hook dicts PyTorch's Module.__setstate__ does not fill in (empty but
        for forward hooks the module has)."""
        state = dict(self.__dict__)
        state["_non_persistent_buffers_set"] = state.pop("_non_persistent", set())
        for k in _TORCH_HOOK_DICTS:
            state.setdefault(k, OrderedDict())
        state.setdefault("_is_full_backward_hook", None)
        return state

    def __setstate__(self, state):
        """A module PyTorch pickled (or __getstate__ above): its dict, with
        PyTorch's names mapped to janus's, its forward hooks kept and its
        other (empty) hook dicts dropped."""
        state = dict(state)
        state["_non_persistent"] = set(state.pop("_non_persistent_buffers_set", ()) or ())
        kept = {}
        for k in _TORCH_HOOK_DICTS:
            hooks = state.pop(k, None)
            if k in _HOOK_FLAGS or k in _HOOK_FLAG_DICTS:
                kept[k] = hooks
            elif hooks:
                raise RuntimeError(f"{type(self).__name__}: the pickled module has {k} registered; janus modules "
                                   "have forward hooks only (remove the others before saving)")
        for kind, flags in _HOOK_FLAGS.items():  # forward hooks come along (a deepcopy keeps them running)
            if kept.get(kind):
                state[kind] = kept[kind]
                for f in flags:
                    state[f] = kept.get(f) or OrderedDict()
                janus._module_hooks += len(kept[kind])  # no handle removes these: counted for good
        state.pop("_is_full_backward_hook", None)
        d = self.__dict__
        d.update(state)
        d.setdefault("training", True)
        for k in ("_parameters", "_buffers", "_modules"):
            d.setdefault(k, OrderedDict())

    def __getattr__(self, name):
        d = self.__dict__
        for k in ("_parameters", "_buffers", "_modules"):
            if k in d and name in d[k]:
                return d[k][name]
        raise _unsupported.module_missing_attribute(self, name)

    def __delattr__(self, name):
        for k in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(k, {}):
                del self.__dict__[k][name]
                self.__dict__["_non_persistent"].discard(name)
                return
        object.__delattr__(self, name)

    def register_parameter(self, name, param):
        self._check_init()
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' as parameter '{name}'")
        if "." in name or not name:
            raise KeyError(f"parameter name can't contain '.' or be empty (got '{name}')")
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        self._check_init()
        if tensor is not None and not isinstance(tensor, janus.Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' as buffer '{name}'")
        if "." in name or not name:
            raise KeyError(f"buffer name can't contain '.' or be empty (got '{name}')")
        self._buffers[name] = tensor
        if _record.active:
            _record.mark_state(tensor)
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._modules[name] = module

    register_module = add_module

    # ---- traversal -----------------------------------------------------
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if self in memo and remove_duplicate:
            return
        memo.add(self)
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            yield from m.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, m in self._modules.items():
            if m is not None and m not in seen:
                seen.add(m)
                yield name, m

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_members(self, kind, prefix, recurse):
        seen = set()
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mp, m in mods:
            for k, v in getattr(m, kind).items():
                if v is None or id(v) in seen:
                    continue
                seen.add(id(v))
                yield mp + ("." if mp else "") + k, v

    def named_parameters(self, prefix="", recurse=True):
        yield from self._named_members("_parameters", prefix, recurse)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True):
        yield from self._named_members("_buffers", prefix, recurse)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ---- modes and utilities -------------------------------------------
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def apply(self, fn):
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad.zero_()

    def to(self, *args, **kwargs):
        """to(device), to(dtype), to(device, dtype): moves parameters (with their
        .grad) and buffers to the device and converts floating ones to dtype.
        Parameters are replaced by new Parameter objects, so build optimizers
        after moving the model (as PyTorch recommends)."""
        dtype, device = kwargs.get("dtype"), kwargs.get("device")
        for a in args:
            if isinstance(a, janus.dtype):
                dtype = a
            elif isinstance(a, janus.Tensor):
                dtype, device = a.dtype, a.device
            else:
                device = a
        dev = janus._dtype.check_device(device, "Module.to")

        def conv(t):
            if dev is not None:
                t = t.to(device)
            if dtype is not None and t.dtype.is_floating_point:
                t = t.to(dtype)
            return t

        if dtype is not None or dev is not None:
            with janus.no_grad():
                for m in self.modules():
                    for k, p in m._parameters.items():
                        if p is None:
                            continue
                        q = conv(p.detach())
                        if q.dtype is p.dtype and q.device == p.device:
                            continue  # unchanged: keep the object (optimizers hold it)
                        np_ = Parameter(q, p.requires_grad)
                        if p.grad is not None:
                            np_.grad = conv(p.grad)
                        m._parameters[k] = np_
                    for k, b in m._buffers.items():
                        if b is not None:
                            m._buffers[k] = conv(b)
        return self

    def cuda(self, device=None):
        return self.to("cuda" if device is None else device)

    def float(self):
        return self.to(janus.float32)

    def double(self):
        return self.to(janus.float64)

    def half(self):
        return self.to(janus.float16)

    def bfloat16(self):
        return self.to(janus.bfloat16)

    def cpu(self):
        return self.to("cpu")

    def get_submodule(self, target):
        """The submodule at a dotted path ("encoder.layers.0"); "" is self."""
        mod = self
        for item in target.split(".") if target else []:
            if item not in mod._modules:
                raise AttributeError(f"{type(mod).__name__} has no attribute `{item}`")
            mod = mod._modules[item]
        return mod

    def get_parameter(self, target):
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._parameters:
            raise AttributeError(f"{type(mod).__name__} has no parameter `{name}`")
        return mod._parameters[name]

    # ---- state dict ----------------------------------------------------
    def state_dict(self, destination=None, prefix="", keep_vars=False):
        if destination is None:
            destination = OrderedDict()
        for k, p in self._parameters.items():
            if p is not None:
                destination[prefix + k] = p if keep_vars else p.detach()
        for k, b in self._buffers.items():
            if b is not None and k not in self._non_persistent:
                destination[prefix + k] = b if keep_vars else b.detach()
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination, prefix + name + ".", keep_vars)
        return destination

    def load_state_dict(self, state_dict, strict=True):
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors = []
        with janus.no_grad():
            for k, v in state_dict.items():
                if k not in own:
                    continue
                dst = own[k]
                if not isinstance(v, janus.Tensor):
                    errors.append(f'While copying the parameter named "{k}", expected a Tensor, got {type(v).__name__}.')
                    continue
                if tuple(dst.shape) != tuple(v.shape):
                    errors.append(f"size mismatch for {k}: copying a param with shape {tuple(v.shape)} from checkpoint, "
                                  f"the shape in current model is {tuple(dst.shape)}.")
                    continue
                dst.copy_(v)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))
        return _IncompatibleKeys(missing, unexpected)

    # ---- printing --------------------------------------------------------
    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for name, m in self._modules.items():
            r = repr(m).replace("\n", "\n  ")
            lines.append(f"({name}): {r}")
        main = type(self).__name__ + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"

    def __dir__(self):
        return sorted(set(list(object.__dir__(self)) + list(self._parameters) + list(self._buffers) + list(self._modules)))


# Forward hooks: a hook kind's dict (id -> hook) and its flag dicts (id -> True).
_HOOK_FLAGS = {"_forward_pre_hooks": ("_forward_pre_hooks_with_kwargs",),
               "_forward_hooks": ("_forward_hooks_with_kwargs", "_forward_hooks_always_called")}
_HOOK_FLAG_DICTS = {f: kind for kind, fl in _HOOK_FLAGS.items() for f in fl}


class _HookHandle:
    """What register_forward_(pre_)hook returns (torch.utils.hooks.RemovableHandle):
    remove() (idempotent) or a with block.  While any registration is live,
    janus._module_hooks counts it and every module call runs _hooked_call."""
    _next = 0

    def __init__(self, dicts):
        self.id = _HookHandle._next
        _HookHandle._next += 1
        self._dicts = dicts
        janus._module_hooks += 1

    def remove(self):
        if self._dicts is None:
            return
        for d in self._dicts:
            d.pop(self.id, None)
        self._dicts = None
        janus._module_hooks -= 1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _route(module, args, kwargs):
    """The call without hooks, with hooks live somewhere: recorded as a region under janus
    record; under replay its Python runs (a replaced call would skip its children's hooks:
    module regions are off while hooks are live, the ops are captured as always)."""
    if _record.regions:
        return _record.module_call(module, args, kwargs)
    return module.forward(*args, **kwargs)


def _hooked_call(module, args, kwargs):
    """Module.__call__ while janus._module_hooks is nonzero (csrc/module_call.c): the
    module's forward pre-hooks, the call, its forward hooks, in torch's order and with
    torch's return conventions."""
    d = module.__dict__
    pre = d.get("_forward_pre_hooks")
    if pre:
        kw = d["_forward_pre_hooks_with_kwargs"]
        for hid, hook in tuple(pre.items()):
            if hid in kw:
                r = hook(module, args, kwargs)
                if r is not None:
                    if not (isinstance(r, tuple) and len(r) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                           f"but got {r}.")
                    args, kwargs = r
            else:
                r = hook(module, args)
                if r is not None:
                    args = r if isinstance(r, tuple) else (r,)
    post = d.get("_forward_hooks")
    if not post:
        return _route(module, args, kwargs)
    kw, always = d["_forward_hooks_with_kwargs"], d["_forward_hooks_always_called"]
    try:
        out = _route(module, args, kwargs)
    except BaseException:
        for hid, hook in tuple(post.items()):
            if hid in always:
                try:
                    hook(module, args, kwargs, None) if hid in kw else hook(module, args, None)
                except Exception as e:  # torch warns and re-raises forward's exception
                    import warnings
                    warnings.warn(f"forward hook with always_call=True raised an exception that was "
                                  f"silenced as another error was raised in forward: {e}")
        raise
    for hid, hook in tuple(post.items()):
        r = hook(module, args, kwargs, out) if hid in kw else hook(module, args, out)
        if r is not None:
            out = r
    return out


janus._module_hooked_call = _hooked_call

# The call of every module without a Python frame of its own (~200 ns a call):
# csrc/module_call.c reads janus._module_hooks, _record.regions and
# janus._region_module per call, as the Python above does.
_py_call = Module.__call__
Module.__call__ = janus._C._module_call(_record, janus)


class _IncompatibleKeys:
    def __init__(self, missing, unexpected):
        self.missing_keys = missing
        self.unexpected_keys = unexpected

    def __iter__(self):
        return iter((self.missing_keys, self.unexpected_keys))

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return f"_IncompatibleKeys(missing_keys={self.missing_keys}, unexpected_keys={self.unexpected_keys})"
