"""Autograd-facing Tensor API (requires_grad, grad, grad_fn, is_leaf,
backward, detach, requires_grad_, register_hook,
register_post_accumulate_grad_hook) attached to janus.Tensor."""
import janus  # janus.autograd at call time: it imports this module (an import per backward() cost ~1-8 us)

from . import _C


class RemovableHandle:
    """What register_hook returns (torch.utils.hooks.RemovableHandle):
    remove() stops the hook; also a context manager removing it at exit."""
    __slots__ = ("_h",)

    def __init__(self, h):
        self._h = h

    def remove(self):
        _C._remove_hook(self._h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False


class _GradFn:
    """A light stand-in for torch's grad_fn objects: it names the op."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def name_(self):
        return self.name

    def __repr__(self):
        return f"<{self.name[:1].upper() + self.name[1:]}Backward>"


def install(Tensor):
    def _get_rg(self):
        return _C._requires_grad(self)

    def _set_rg(self, v):
        _C._set_requires_grad(self, bool(v))

    def requires_grad_(self, requires_grad=True):
        _C._set_requires_grad(self, bool(requires_grad))
        return self

    def _get_grad(self):
        return _C._grad(self)

    def _set_grad(self, g):
        _C._set_grad(self, g)

    def _grad_fn(self):
        n = _C._grad_fn_name(self)
        return None if n is None else _GradFn(n)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        janus.autograd.backward(self, gradient, retain_graph, create_graph, inputs)

    def detach(self):
        return _C._detach(self)

    def register_hook(self, hook):
        """hook(grad) runs when this tensor's gradient is computed in backward
        (a leaf's before it is accumulated into .grad); a Tensor it returns
        replaces the gradient.  Runs under no_grad, in registration order."""
        return RemovableHandle(_C._add_hook(self, False, hook))

    def register_post_accumulate_grad_hook(self, hook):
        """On a leaf: hook(tensor) runs after backward() accumulated .grad."""
        return RemovableHandle(_C._add_hook(self, True, hook))

    def detach_(self):
        raise NotImplementedError("detach_() is not supported; use x = x.detach()")

    Tensor.requires_grad = property(_get_rg, _set_rg)
    Tensor.requires_grad_ = requires_grad_
    Tensor.grad = property(_get_grad, _set_grad)
    Tensor.grad_fn = property(_grad_fn)
    Tensor.is_leaf = property(lambda self: _C._is_leaf(self))
    Tensor.backward = backward
    Tensor.detach = detach
    Tensor.register_hook = register_hook
    Tensor.register_post_accumulate_grad_hook = register_post_accumulate_grad_hook
    Tensor.detach_ = detach_
    def _set_data(self, v):
        prev = _C._set_grad_enabled(False)
        try:
            self.copy_(v)  # same shape only: storage swapping is not supported
        finally:
            _C._set_grad_enabled(prev)

    Tensor.data = property(lambda self: _C._detach(self), _set_data)
