"""nn.Module: the container of parameters, buffers and submodules, with
PyTorch's registration rules, traversal, state_dict and train/eval modes."""
import functools
import warnings
import weakref
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

import janus
from janus import _record, _unsupported

from ..autograd.function import Function
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
        if janus._module_hooks:  # some module has hooks: see _hooked_call
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

    # ---- backward hooks (torch's "full" ones: gradients of the module's own inputs and outputs)
    def register_full_backward_hook(self, hook, prepend=False):
        """hook(module, grad_input, grad_output) -> None or a new grad_input: called when the
        gradients of the module's positional tensor inputs are computed (one entry per
        positional argument, None where it is no tensor or needs no gradient)."""
        return self._add_hook("_backward_hooks", hook, prepend)

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """hook(module, grad_output) -> None or a new grad_output: called when the gradients
        of the module's outputs are computed, before they flow into the module."""
        return self._add_hook("_backward_pre_hooks", hook, prepend)

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
        PyTorch's names mapped to janus's, its forward, full backward and
        state-dict hooks kept and its other (empty) hook dicts dropped."""
        state = dict(state)
        if state.get("_is_full_backward_hook") is False and state.get("_backward_hooks"):
            raise RuntimeError(f"{type(self).__name__}: the pickled module has legacy backward hooks "
                               "(register_backward_hook), which janus does not run; register them with "
                               "register_full_backward_hook before saving")
        state["_non_persistent"] = set(state.pop("_non_persistent_buffers_set", ()) or ())
        kept = {}
        for k in _TORCH_HOOK_DICTS:
            hooks = state.pop(k, None)
            if k in _HOOK_FLAGS or k in _HOOK_FLAG_DICTS:
                kept[k] = hooks
            elif k in _STATE_DICT_HOOK_DICTS:
                if hooks:  # state_dict / load_state_dict hooks come along (run only there)
                    state[k] = hooks
            elif hooks:
                raise RuntimeError(f"{type(self).__name__}: the pickled module has {k} registered, which janus "
                                   "modules do not run (remove them before saving)")
        for kind, flags in _HOOK_FLAGS.items():  # module hooks come along (a deepcopy keeps them running)
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
        if _record.active:  # buffers that came without register_buffer (deepcopy, torch.load): state too
            for b in d["_buffers"].values():
                _record.mark_state(b)

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
        after moving the model (as PyTorch recommends).  memory_format= is checked
        as torch does and changes nothing: janus keeps 4-D weights row-major
        (channels_last is a layout janus does not have; values are the same)."""
        dtype, device = kwargs.get("dtype"), kwargs.get("device")
        mf = kwargs.get("memory_format")
        if mf is not None and not isinstance(mf, janus.memory_format):
            from janus._tensor import _TO_OVERLOADS
            raise TypeError(f"to() received an invalid combination of arguments - got "
                            f"(memory_format={type(mf).__name__}, ), but expected one of:\n" + _TO_OVERLOADS)
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
            if not hasattr(mod, item):
                raise AttributeError(f"{type(mod).__name__} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def _attr_at(self, target):
        """The module, name and attribute at a dotted path (torch's errors)."""
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{type(mod).__name__} has no attribute `{name}`")
        return mod, name, getattr(mod, name)

    def get_parameter(self, target):
        """The Parameter at a dotted path ("encoder.0.weight")."""
        _, name, param = self._attr_at(target)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        """The buffer at a dotted path ("bn.running_mean")."""
        mod, name, buffer = self._attr_at(target)
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return buffer

    def set_submodule(self, target, module, strict=False):
        """Set the submodule at a dotted path: replaces an existing one or (strict=False) adds a
        new one to an existing parent."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent = self if len(atoms) == 1 else self.get_submodule(".".join(atoms[:-1]))
        if strict and not hasattr(parent, atoms[-1]):
            raise AttributeError(f"{type(parent).__name__} has no attribute `{atoms[-1]}`")
        if hasattr(parent, atoms[-1]):
            mod = getattr(parent, atoms[-1])
            if not isinstance(mod, Module):
                raise AttributeError(f"`{atoms[-1]}` is not an nn.Module")
        setattr(parent, atoms[-1], module)

    def _replace_tensors(self, fn, recurse=True):
        """torch's Module._apply(fn): every parameter (and its .grad) and buffer becomes fn(tensor),
        a parameter a new Parameter with its requires_grad (janus tensors cannot change dtype or
        device in place: build optimizers afterwards); a tensor shared by several modules stays
        shared."""
        done = {}
        with janus.no_grad():
            for m in self.modules() if recurse else (self,):
                for k, p in m._parameters.items():
                    if p is None:
                        continue
                    q = done.get(id(p))
                    if q is None:
                        q = done[id(p)] = Parameter(fn(p.detach()), p.requires_grad)
                        if p.grad is not None:
                            q.grad = fn(p.grad)
                    m._parameters[k] = q
                for k, b in m._buffers.items():
                    if b is not None:
                        if id(b) not in done:
                            done[id(b)] = fn(b)
                        m._buffers[k] = done[id(b)]
        return self

    def share_memory(self):
        """Returns self.  torch moves the parameters and buffers to shared memory for its
        worker processes; a janus tensor lives in the memory of the one process that runs
        the model (janus has no tensor-sharing worker processes), so there is nothing to move."""
        return self

    def to_empty(self, *, device, recurse=True):
        """Parameters and buffers (of the submodules too unless recurse=False) replaced by
        uninitialized tensors of the same shape and dtype on device; parameters stay
        Parameters (new objects) with their requires_grad.  Returns self."""
        return self._replace_tensors(lambda t: janus.empty_like(t, device=device), recurse)

    def type(self, dst_type):
        """Cast every parameter and buffer to dst_type (a dtype or a type name such as
        "torch.DoubleTensor"), integer ones included, as torch's Module.type does (.to(dtype)
        casts floating ones only).  Parameters become new Parameter objects.  Returns self."""
        return self._replace_tensors(lambda t: t.type(dst_type))

    def compile(self, *args, **kwargs):
        """torch compiles this module's forward in place (torch.compile).  janus compiles a
        training step by recording it (`janus record` / `optimize` / `replay`), not at import:
        the arguments are checked as janus.compile (torch.compile) checks them, the module is
        left as it is, and None is returned, as torch's Module.compile returns."""
        janus.compile(self, *args, **kwargs)

    # ---- state dict: torch's per-module protocol -------------------------
    # state_dict() records {"version": cls._version} per module prefix in destination._metadata;
    # _load_from_state_dict sees it as local_metadata["version"] (a subclass that changes its
    # layout bumps _version and converts older entries there).
    _version = 1

    @property
    def _non_persistent_buffers_set(self):
        """torch's name of the set of non-persistent buffer names (janus's _non_persistent)."""
        return self.__dict__["_non_persistent"]

    @_non_persistent_buffers_set.setter
    def _non_persistent_buffers_set(self, value):
        self.__dict__["_non_persistent"] = value

    def get_extra_state(self):
        """Implement it (with set_extra_state) in a subclass to save a non-tensor state in
        state_dict under prefix + "_extra_state"; this base one is never called."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called.")

    def set_extra_state(self, state):
        """Implement it (with get_extra_state) to restore what get_extra_state saved; this base
        one is never called."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called.")

    def _state_hooks(self, kind):
        """This module's hook dict `kind` (torch's name), made in __dict__ on first use."""
        hooks = self.__dict__.get(kind)
        if hooks is None:
            hooks = self.__dict__[kind] = OrderedDict()
        return hooks

    def register_state_dict_pre_hook(self, hook):
        """hook(module, prefix, keep_vars) -> None: runs in state_dict() before this module's
        entries are saved.  Returns a removable handle."""
        return _StateHookHandle(self._state_hooks("_state_dict_pre_hooks"), hook)

    def register_state_dict_post_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata) -> None: runs in state_dict() after
        this module and its children are saved; it may edit state_dict in place (returning
        anything but None is an error).  Returns a removable handle."""
        hook._from_public_api = True
        return _StateHookHandle(self._state_hooks("_state_dict_hooks"), hook)

    def _register_state_dict_hook(self, hook):
        """torch's private form of the post hook: what it returns, if not None, replaces the
        state dict when this module is the one state_dict() was called on."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError("Cannot register the same function as the state dict post hook that was "
                               "previously registered via register_state_dict_post_hook")
        return _StateHookHandle(self._state_hooks("_state_dict_hooks"), hook)

    def register_load_state_dict_pre_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs) -> None: runs in load_state_dict() before this module loads its entries; it
        may edit state_dict (load_state_dict's copy) and the lists.  Returns a removable handle."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        """The same hook called without the module unless with_module."""
        return _StateHookHandle(self._state_hooks("_load_state_dict_pre_hooks"),
                                _WrappedHook(hook, self if with_module else None))

    def register_load_state_dict_post_hook(self, hook):
        """hook(module, incompatible_keys) -> None: runs in load_state_dict() after this module
        and its children loaded; it may edit incompatible_keys.missing_keys / .unexpected_keys
        in place, which is what strict then reports.  Returns a removable handle."""
        return _StateHookHandle(self._state_hooks("_load_state_dict_post_hooks"), hook)

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """The parameters and persistent buffers (and extra state) of the module and its
        submodules by dotted name, detached unless keep_vars, in an OrderedDict whose _metadata
        holds each module's version.  destination, prefix, keep_vars may still be given by
        position (deprecated, as in torch)."""
        if args:
            warnings.warn("Positional args are being deprecated, use kwargs instead. Refer to "
                          "https://pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module.state_dict"
                          " for details.", FutureWarning, stacklevel=2)
            if destination is None:
                destination = args[0]
            if len(args) > 1 and prefix == "":
                prefix = args[1]
            if len(args) > 2 and keep_vars is False:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        d = self.__dict__
        for hook in d.get("_state_dict_pre_hooks", {}).values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in d.get("_state_dict_hooks", {}).values():
            hook_result = hook(self, destination, prefix, local_metadata)
            if not getattr(hook, "_from_public_api", False):
                if hook_result is not None:
                    destination = hook_result
            elif hook_result is not None:
                raise RuntimeError("state_dict post-hook must return None")
        return destination

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        """This module's own entries (not its children's) into destination; subclasses may
        override it."""
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        non_persistent = self._non_persistent
        for name, buf in self._buffers.items():
            if buf is not None and name not in non_persistent:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if getattr(type(self), "get_extra_state", Module.get_extra_state) is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        """Load this module's own entries (not its children's) from state_dict (load_state_dict's
        copy, which may be edited), after this module's load pre-hooks; missing and unexpected
        keys and error messages go into the lists.  local_metadata: this module's entry of the
        checkpoint's _metadata ({} when it has none), with "assign_to_params_buffers" under
        assign=True.  Subclasses may override it (e.g. to convert an older version's entries)."""
        for hook in self.__dict__.get("_load_state_dict_pre_hooks", {}).values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        non_persistent = self._non_persistent
        local_state = {k: v for k, v in self._parameters.items() if v is not None}
        local_state.update((k, v) for k, v in self._buffers.items() if v is not None and k not in non_persistent)
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            input_param = state_dict[key]
            if not isinstance(input_param, janus.Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like '
                                  f"object from checkpoint but received {type(input_param)}")
                continue
            # a 1-element 1-d entry loads into a 0-d tensor (checkpoints of torch 0.3)
            if len(param.shape) == 0 and len(input_param.shape) == 1 and input_param.shape[0] == 1:
                input_param = input_param[0]
            if tuple(input_param.shape) != tuple(param.shape):
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {input_param.shape} from "
                                  f"checkpoint, the shape in current model is {param.shape}.")
                continue
            try:
                with janus.no_grad():
                    if assign:
                        if isinstance(param, Parameter):
                            if not isinstance(input_param, Parameter):
                                input_param = Parameter(input_param, requires_grad=param.requires_grad)
                            else:
                                input_param.requires_grad_(param.requires_grad)
                        setattr(self, name, input_param)
                    else:
                        param.copy_(input_param)
            except Exception as ex:
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                                  f"{param.size()} and whose dimensions in the checkpoint are {input_param.size()}, "
                                  f"an exception occurred : {ex.args}.")
        extra_state_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if getattr(type(self), "set_extra_state", Module.set_extra_state) is not Module.set_extra_state:
            if extra_state_key in state_dict:
                self.set_extra_state(state_dict[extra_state_key])
            elif strict:
                missing_keys.append(extra_state_key)
        elif strict and extra_state_key in state_dict:
            unexpected_keys.append(extra_state_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_state_key:
                    input_name = key[len(prefix):].split(".", 1)
                    if len(input_name) > 1:  # a submodule's entry
                        if input_name[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy the entries of state_dict into this module's parameters and persistent buffers
        (and submodules'), running each module's _load_from_state_dict and load hooks.
        strict: missing or unexpected keys are errors.  assign: the module takes the
        checkpoint's tensors themselves (parameters stay Parameters with the module's
        requires_grad).  Returns (missing_keys, unexpected_keys)."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys, unexpected_keys, error_msgs = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)  # a copy: _load_from_state_dict and its hooks may edit it
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module, local_state_dict, prefix=""):
            local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
            if assign:
                local_metadata = dict(local_metadata, assign_to_params_buffers=assign)
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True, missing_keys,
                                         unexpected_keys, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(child, {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)},
                         child_prefix)
            incompatible_keys = _IncompatibleKeys(missing_keys, unexpected_keys)  # hooks edit the lists
            for hook in module.__dict__.get("_load_state_dict_post_hooks", {}).values():
                if hook(module, incompatible_keys) is not None:
                    raise AssertionError("Hooks registered with ``register_load_state_dict_post_hook`` are not "
                                         "expected to return new values, if incompatible_keys need to be modified, "
                                         "it should be done inplace.")

        load(self, state_dict)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

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


# Module hooks: a hook kind's dict (id -> hook) and its flag dicts (id -> True).
_HOOK_FLAGS = {"_forward_pre_hooks": ("_forward_pre_hooks_with_kwargs",),
               "_forward_hooks": ("_forward_hooks_with_kwargs", "_forward_hooks_always_called"),
               "_backward_hooks": (), "_backward_pre_hooks": ()}
_HOOK_FLAG_DICTS = {f: kind for kind, fl in _HOOK_FLAGS.items() for f in fl}


class _HookHandle:
    """What the register_*_hook methods return (torch.utils.hooks.RemovableHandle):
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
    module's forward pre-hooks, its backward hooks' set-up on the inputs, the call, its
    forward hooks, the backward hooks' set-up on the output, in torch's order and with
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
    bw = None
    if d.get("_backward_hooks") or d.get("_backward_pre_hooks"):
        bw = _BackwardHook(module, tuple(d.get("_backward_hooks", {}).values()),
                           tuple(d.get("_backward_pre_hooks", {}).values()))
        args = bw.setup_inputs(args)
    post = d.get("_forward_hooks")
    if not post:
        out = _route(module, args, kwargs)
        return out if bw is None else bw.setup_outputs(out)
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
    return out if bw is None else bw.setup_outputs(out)


class BackwardHookFunction(Function):
    """Identity on a module's tensor inputs or outputs whose backward hands the
    gradients to a _BackwardHook (torch's node of the same name)."""

    @staticmethod
    def forward(ctx, on_grads, materialize, *args):
        ctx.on_grads = on_grads
        ctx.set_materialize_grads(materialize)
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        return args

    @staticmethod
    def backward(ctx, *grads):
        return (None, None) + tuple(ctx.on_grads(grads))


class _BackwardHook:
    """One hooked call's full backward hooks (torch.utils.hooks.BackwardHook): the
    call's positional tensor inputs and its tensor outputs (a tensor or a tuple's
    tensors) pass through a BackwardHookFunction each side.  Backward reaches the
    outputs' node first: the pre-hooks see (and may replace) grad_output, which is
    kept; the inputs' node then calls the hooks with grad_input and grad_output.
    Outside grad mode, or when no tensor requires grad, nothing is wrapped."""

    def __init__(self, module, hooks, pre_hooks):
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.grad_outputs = None
        self.n_inputs = self.n_outputs = 0
        self.in_index = self.out_index = None

    def _wrap(self, args, on_grads, materialize):
        idx = [i for i, a in enumerate(args) if isinstance(a, janus.Tensor)]
        if not (janus.is_grad_enabled() and any(args[i].requires_grad for i in idx)):
            return args, None
        new = BackwardHookFunction.apply(on_grads, materialize, *[args[i] for i in idx])
        out = list(args)
        for i, t in zip(idx, new):
            out[i] = t
        return (tuple(out) if type(args) is tuple else type(args)(*out)), idx

    @staticmethod
    def _pack(index, values, n):
        res = [None] * n
        for i, v in zip(index, values):
            res[i] = v
        return tuple(res)

    def setup_inputs(self, args):
        self.n_inputs = len(args)
        args, self.in_index = self._wrap(args, self._on_input_grads, True)
        return args

    def setup_outputs(self, out):
        if not isinstance(out, (janus.Tensor, tuple)):
            import warnings
            warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of Tensors "
                          f"but received {type(out)}")
        one = not isinstance(out, tuple)
        items = (out,) if one else out
        self.n_outputs = len(items)
        items, self.out_index = self._wrap(items, self._on_output_grads, False)
        return items[0] if one else items

    def _on_output_grads(self, grads):
        self.grad_outputs = self._pack(self.out_index, grads, self.n_outputs)
        for hook in self.pre_hooks:
            r = hook(self.module, self.grad_outputs)
            if r is None:
                continue
            if len(r) != len(self.grad_outputs):
                raise RuntimeError(f"Backward pre hook returned an invalid number of grad_output, got {len(r)}, "
                                   f"but expected {len(self.grad_outputs)}")
            self.grad_outputs = r
        result = tuple(self.grad_outputs[i] for i in self.out_index)
        if self.in_index is None and self.hooks:  # no input needs a gradient: the hooks run here
            import warnings
            warnings.warn("Full backward hook is firing when gradients are computed with respect to module outputs "
                          "since no inputs require gradients. See https://docs.pytorch.org/docs/main/generated/"
                          "torch.nn.Module.html#torch.nn.Module.register_full_backward_hook for more details.")
            none = (None,) * self.n_inputs
            for hook in self.hooks:
                r = hook(self.module, none, self.grad_outputs)
                if r is not None and not (isinstance(r, tuple) and all(x is None for x in r)):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient should always "
                                       "return None or None for all gradients.")
            self.grad_outputs = None
        return result

    def _on_input_grads(self, grads):
        if self.grad_outputs is None:  # the gradient reached the inputs without passing the outputs
            return grads
        res = self._pack(self.in_index, grads, self.n_inputs)
        for hook in self.hooks:
            r = hook(self.module, res, self.grad_outputs)
            if r is None:
                continue
            if len(r) != len(res):
                raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got {len(r)}, but "
                                   f"expected {len(res)}")
            res = r
        self.grad_outputs = None
        return tuple(res[i] for i in self.in_index)


janus._module_hooked_call = _hooked_call

# The call of every module without a Python frame of its own (~200 ns a call):
# csrc/module_call.c reads janus._module_hooks, _record.regions and
# janus._region_module per call, as the Python above does.
_py_call = Module.__call__
Module.__call__ = janus._C._module_call(_record, janus)


_EXTRA_STATE_KEY_SUFFIX = "_extra_state"
# the hook dicts of state_dict() / load_state_dict() (torch's names; in a module's __dict__ once used)
_STATE_DICT_HOOK_DICTS = ("_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
                          "_load_state_dict_post_hooks")


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What load_state_dict returns (and its post hooks get): (missing_keys, unexpected_keys)."""
    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class _StateHookHandle:
    """What the state_dict / load_state_dict hook registrations return
    (torch.utils.hooks.RemovableHandle): remove() (idempotent) or a with block.  These
    hooks run inside state_dict() / load_state_dict() only, so unlike _HookHandle it leaves
    janus._module_hooks (the module-call slow path) alone."""
    _next = 0

    def __init__(self, hooks, hook):
        self.id = _StateHookHandle._next
        _StateHookHandle._next += 1
        self._hooks = weakref.ref(hooks)
        hooks[self.id] = hook

    def remove(self):
        hooks = self._hooks()
        if hooks is not None:
            hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class _WrappedHook:
    """A load_state_dict pre hook as torch stores it (torch.nn.modules.module._WrappedHook):
    called as hook(state_dict, prefix, ...), with the module (held weakly) put first when
    registered with_module.  Pickles (and deep-copies) as torch's does."""

    def __init__(self, hook, module=None):
        self.hook = hook
        functools.update_wrapper(self, hook)
        self.with_module = False
        if module is not None:
            self.module = weakref.ref(module)
            self.with_module = True

    def __call__(self, *args, **kwargs):
        if self.with_module:
            module = self.module()
            if module is None:
                raise RuntimeError("You are trying to call the hook of a dead Module!")
            return self.hook(module, *args, **kwargs)
        return self.hook(*args, **kwargs)

    def __getstate__(self):
        result = {"hook": self.hook, "with_module": self.with_module}
        if self.with_module:
            result["module"] = self.module()
        return result

    def __setstate__(self, state):
        self.hook = state["hook"]
        self.with_module = state["with_module"]
        if self.with_module:
            if state["module"] is None:
                raise RuntimeError("You are trying to revive the hook of a dead Module!")
            self.module = weakref.ref(state["module"])
