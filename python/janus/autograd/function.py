"""janus.autograd.function: custom autograd Functions, as torch.autograd.Function.

A subclass defines `forward` (with `ctx` first, or without it plus
`setup_context(ctx, inputs, output)`) and `backward(ctx, *grads)`; `apply`
runs forward under no_grad and, when grad mode is on and a tensor argument
requires grad, hangs one custom node on the float outputs
(`_C._ag_custom_record`, runtime/autograd.c `jn_ag_custom_record`).  In
backward the engine calls the ctx's `_janus_backward`, which runs the user's
backward with grad mode off and checks what it returned, with PyTorch's
messages (count, None for a non-tensor argument, shapes: a gradient that
broadcasts to the argument is summed down, as torch does).

Limits (docs/ARCHITECTURE.md 7): no double backward (a Function's backward
is not differentiated), `mark_dirty` (in-place Functions) raises, and a
tensor stored as a plain ctx attribute that is also an output keeps the
node alive until the ctx goes (use save_for_backward).  Replay: the ops of
forward and backward are dispatched and captured like any others; the
backward skip stops at such a node (its Python runs), and a module whose
forward applies one is refused as a region (it calls into _C's autograd).
"""
import functools

from .. import _C

_FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after "
          "they have already been freed). Saved intermediate values of the graph are freed when you call "
          ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
          "graph a second time or if you need to access saved tensors after calling backward.")


class FunctionCtx:
    """What forward and backward share: save_for_backward / saved_tensors,
    needs_input_grad, mark_non_differentiable, set_materialize_grads, and any
    attribute the Function sets."""

    def __init__(self):
        self._saved = ()
        self._saved_versions = ()
        self._released = False
        self._non_diff = ()
        self._materialize = True
        self.needs_input_grad = ()

    def save_for_backward(self, *tensors):
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, _C.TensorBase):
                raise TypeError(f"save_for_backward can only save tensors or None, but argument {i} is "
                                f"{type(t).__name__}")
        self._saved = tensors
        self._saved_versions = tuple(None if t is None else t._version for t in tensors)

    @property
    def saved_tensors(self):
        if self._released:
            raise RuntimeError(_FREED)
        for i, (t, v) in enumerate(zip(self._saved, self._saved_versions)):
            if t is not None and t._version != v:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an inplace "
                    f"operation: saved tensor {i} of shape {list(t.shape)} is at version {t._version}; "
                    f"expected version {v} instead.")
        return tuple(self._saved)

    saved_variables = saved_tensors

    def mark_non_differentiable(self, *args):
        self._non_diff = self._non_diff + tuple(args)

    def set_materialize_grads(self, value):
        self._materialize = bool(value)

    def mark_dirty(self, *args):
        raise NotImplementedError(
            "ctx.mark_dirty (a custom autograd Function that changes an input in place) is not supported "
            "by janus: return a new tensor from forward instead")

    def mark_shared_storage(self, *pairs):
        pass  # deprecated no-op in PyTorch too

    # ---- called from C (python/janus/csrc/autograd_py.c custom_call)
    def _janus_backward(self, grads, needs):
        cls = self._cls
        name = cls.__name__ + "Backward"
        with _C_no_grad():
            r = cls.backward(self, *grads)
        if not isinstance(r, tuple):
            r = (r,)
        n = len(self._args)
        if len(r) > n and all(g is None for g in r[n:]):
            r = r[:n]
        if len(r) != n:
            raise RuntimeError(f"function {name} returned an incorrect number of gradients (expected {n}, "
                               f"got {len(r)})")
        out = []
        for i, (shape, g) in enumerate(zip(self._args, r)):
            if shape is None:  # not a tensor argument
                if g is not None:
                    raise RuntimeError(f"function {name} returned a gradient different than None at position "
                                       f"{i + 1}, but the corresponding forward input was not a Variable")
                continue
            k = len(out)
            if g is not None and needs[k]:
                if not isinstance(g, _C.TensorBase):
                    raise TypeError(f"function {name} returned {type(g).__name__} as the gradient at position "
                                    f"{i + 1}; expected a Tensor or None")
                if tuple(g.shape) != shape:
                    g = _sum_to(g, shape, name, i)
            out.append(g)
        return tuple(out)

    def _janus_release(self):
        self._released = True
        self._saved = ()


def _C_no_grad():
    from . import no_grad
    return no_grad()


def _sum_to(g, shape, name, i):
    """g summed down to shape where shape broadcasts to g's (torch's validate_outputs)."""
    gs = tuple(g.shape)
    lead = len(gs) - len(shape)
    ok = lead >= 0 and all(s == 1 or s == d for s, d in zip(shape, gs[lead:]))
    if not ok:
        raise RuntimeError(f"Function {name} returned an invalid gradient at index {i} - got {list(gs)} but "
                           f"expected shape compatible with {list(shape)}")
    if lead:
        g = g.sum(dim=tuple(range(lead)))
    dims = tuple(d for d, (s, n) in enumerate(zip(shape, gs[lead:])) if s == 1 and n != 1)
    if dims:
        g = g.sum(dim=dims, keepdim=True)
    return g.reshape(shape)


class _Unset:
    """The base class's setup_context: forward takes ctx first."""

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not overridden")


class Function:
    """Base class of custom autograd operations (torch.autograd.Function).

        class Exp(Function):
            @staticmethod
            def forward(ctx, x):
                y = x.exp()
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, grad):
                y, = ctx.saved_tensors
                return grad * y

        y = Exp.apply(x)
    """

    setup_context = _Unset.setup_context

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    @classmethod
    def vjp(cls, ctx, *grad_outputs):
        return cls.backward(ctx, *grad_outputs)

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("forward-mode AD (jvp) is not supported by janus")

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use "
                           "new-style autograd function with static forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @classmethod
    def apply(cls, *args, **kwargs):
        T = _C.TensorBase
        ctx = FunctionCtx()
        ctx._cls = cls
        ctx.needs_input_grad = tuple(isinstance(a, T) and a.requires_grad for a in args)
        with _C_no_grad():
            if cls.setup_context is _Unset.setup_context:
                out = cls.forward(ctx, *args, **kwargs)
            else:
                out = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, out)
        if not (_C.is_grad_enabled() and any(ctx.needs_input_grad)):
            return out
        many = isinstance(out, tuple)
        items = list(out) if many else [out]
        inputs = [a for a in args if isinstance(a, T)]
        pos, outs = [], []
        for j, o in enumerate(items):
            if not isinstance(o, T):
                continue
            if any(o is a for a in inputs) or o.requires_grad:
                # an argument (or a tensor with history) returned as is: the output is an alias
                # carrying the new history, the argument keeps its own (torch returns a view)
                a = _C._detach(o)
                ctx._saved = tuple(a if s is o else s for s in ctx._saved)
                if any(d is o for d in ctx._non_diff):
                    ctx._non_diff = ctx._non_diff + (a,)
                o = items[j] = a
            pos.append(j)
            outs.append(o)
        diff = [not any(o is d for d in ctx._non_diff) for o in outs]
        # saved outputs are held as aliases without history: the node holds ctx, which must not
        # hold the node back through an output's grad_fn
        ctx._saved = tuple(_C._detach(s) if s is not None and any(s is o for o in outs) else s
                           for s in ctx._saved)
        ctx._args = tuple(tuple(a.shape) if isinstance(a, T) else None for a in args)
        ctx._non_diff = ()
        _C._ag_custom_record(cls.__name__ + "Backward", inputs, outs, diff, ctx._materialize, ctx)
        return tuple(items) if many else items[0]


class InplaceFunction(Function):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace


class NestedIOFunction(Function):
    pass


def once_differentiable(fn):
    """Marks a backward as not differentiable twice (janus never differentiates a
    backward: create_graph is not supported), so it runs as written."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with _C_no_grad():
            return fn(ctx, *args)
    return wrapper
