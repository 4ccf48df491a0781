"""Autograd-facing Tensor API (requires_grad, grad, grad_fn, is_leaf,
backward, detach, detach_, the in-place view ops, requires_grad_,
register_hook, register_post_accumulate_grad_hook, retain_grad) attached to
janus.Tensor."""
import weakref

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
    """A light stand-in for torch's grad_fn objects: it names the node, with
    torch's names (name(): "MulBackward0"; a custom Function's "ExpBackward");
    op is janus's op name ("mul")."""
    __slots__ = ("op",)

    def __init__(self, op):
        self.op = op

    def name(self):
        if self.op.endswith("Backward"):  # a custom Function's node: already its class name
            return self.op
        return "".join(p.capitalize() for p in self.op.split("_")) + "Backward0"

    def __repr__(self):
        return f"<{self.name()}>"


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

    def retain_grad(self):
        """A non-leaf keeps its gradient in .grad (accumulated over backward
        calls, as a leaf's); on a leaf it does nothing."""
        if not _C._requires_grad(self):
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if _C._is_leaf(self) or self.__dict__.get("_retains_grad"):
            return
        ref = weakref.ref(self)  # the hook lives on the autograd node: no cycle through the object

        def keep(grad):
            t = ref()
            if t is not None:
                old = _C._grad(t)
                _C._set_grad(t, grad.detach().clone() if old is None else old + grad)

        _C._add_hook(self, False, keep)
        self.__dict__["_retains_grad"] = True

    def detach_(self):
        # the Python object takes detach's header (same value and tensor id, no history)
        self._take_header(_C._detach(self))
        return self

    def inplace_view(name):
        """x.<name>_(...): x becomes x.<name>(...) -- the view op, traced and
        differentiated as any, whose header the object then takes (its
        layout, tensor id and history), as PyTorch changes x's layout."""
        def method(self, *args, **kwargs):
            rg = _C._requires_grad(self)
            if rg and _C._is_leaf(self) and _C.is_grad_enabled():
                raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
            if rg and not _C.is_grad_enabled() and _C._grad(self) is not None:
                raise NotImplementedError(f"{name}_() under no_grad on a tensor that has a .grad is not supported "
                                          f"by janus (the gradient would keep the old shape); use "
                                          f"x = x.{name}(...).requires_grad_()")
            self._take_header(getattr(self, name)(*args, **kwargs))
            if rg and not _C._requires_grad(self):  # under no_grad: still a leaf that requires grad
                _C._set_requires_grad(self, True)
            return self
        method.__name__ = method.__qualname__ = name + "_"
        return method

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
    Tensor.retain_grad = retain_grad
    Tensor.retains_grad = property(lambda self: bool(self.__dict__.get("_retains_grad")) and not _C._is_leaf(self))
    for name in ("t", "transpose", "swapdims", "swapaxes", "unsqueeze", "squeeze", "as_strided"):
        setattr(Tensor, name + "_", inplace_view(name))
    def _set_data(self, v):
        prev = _C._set_grad_enabled(False)
        try:
            self.copy_(v)  # same shape only: storage swapping is not supported
        finally:
            _C._set_grad_enabled(prev)

    Tensor.data = property(lambda self: _C._detach(self), _set_data)
