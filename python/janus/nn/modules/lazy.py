"""LazyModuleMixin (torch.nn.modules.lazy): a module whose parameter shapes
come from its first input.

Until the first call the parameters are empty placeholders (shape (0,),
listed in state_dict as PyTorch lists its UninitializedParameters); the
first call materializes them with the inferred shapes and the layer's
usual initialization, then the module becomes `cls_to_become` (LazyLinear
becomes a plain Linear).  janus modules have no forward pre-hooks, so a
lazy class calls _infer_parameters() at the top of its forward().

Materializing makes new Parameter objects: build optimizers after the first
call (PyTorch materializes in place, so there an optimizer built before it
sees the new values too)."""
import janus

from ..parameter import Parameter


class LazyModuleMixin:
    cls_to_become = None

    def has_uninitialized_params(self):
        """Whether some parameter is still a placeholder."""
        return bool(self.__dict__.get("_uninitialized"))

    def initialize_parameters(self, *args, **kwargs):
        raise NotImplementedError(f"initialize_parameters is not implemented for {type(self).__name__}")

    def _materialize(self, name, shape):
        """Replace placeholder `name` by an (uninitialized) parameter of shape,
        with the placeholder's dtype, device and requires_grad."""
        old = self._parameters[name]
        setattr(self, name, Parameter(janus.empty(*shape, dtype=old.dtype, device=old.device), old.requires_grad))
        self._uninitialized.discard(name)

    def _infer_parameters(self, *args, **kwargs):
        """Materialize from the call's arguments, then turn into cls_to_become."""
        if self.has_uninitialized_params():
            self.initialize_parameters(*args, **kwargs)
            if self.has_uninitialized_params():
                raise RuntimeError(f"module {type(self).__name__} has not been fully initialized")
        self.__dict__.pop("_uninitialized", None)
        if self.cls_to_become is not None:
            self.__class__ = self.cls_to_become

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        """Placeholders named in state_dict take the saved shapes first (as
        PyTorch's lazy load hook does), also when a container is the module loaded."""
        if self.has_uninitialized_params():
            for name in sorted(self._uninitialized):
                v = state_dict.get(prefix + name)
                if isinstance(v, janus.Tensor):
                    self._materialize(name, tuple(v.shape))
            self._loaded_shapes()
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def _loaded_shapes(self):
        """Hook for the layer's own attributes after a load materialized parameters."""
