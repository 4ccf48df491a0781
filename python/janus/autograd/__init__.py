"""janus.autograd: gradients from the C tape.

backward() and grad() run the engine in runtime/autograd.c; derivative
formulas live in runtime/derivatives.c, one per op of the op table.  Grad
mode is thread-local, as in PyTorch.  Higher-order gradients
(create_graph=True) are not supported yet.
"""
import threading as _threading

from .. import _C
from .function import Function, FunctionCtx, once_differentiable  # noqa: F401
from . import functional  # noqa: F401
from .gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: F401
from . import profiler, profiler_util  # noqa: F401


class set_grad_enabled:
    """Context manager / function that sets grad mode."""

    def __init__(self, mode):
        self.prev = _C._set_grad_enabled(bool(mode))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)
        return False


class _GradMode:
    enabled = None

    def __enter__(self):
        self.prev = _C._set_grad_enabled(self.enabled)
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)
        return False

    def clone(self):
        return self.__class__()

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with self.clone():
                return fn(*a, **k)
        return wrapper


class no_grad(_GradMode):
    """Disable gradient recording inside the block (or the decorated function)."""
    enabled = False


class enable_grad(_GradMode):
    """Enable gradient recording inside the block (or the decorated function)."""
    enabled = True


def is_grad_enabled():
    return _C.is_grad_enabled()


_inference = _threading.local()  # .on: inference mode of this thread (torch's is thread-local too)


def _inference_mode_enabled():
    return getattr(_inference, "on", False)


class inference_mode(_GradMode):
    """torch.inference_mode(mode=True): a context manager / decorator.  mode
    True disables gradient recording (as no_grad) and makes
    janus.is_inference_mode_enabled() true; mode False enables gradient
    recording, as torch's does.  janus has no inference tensors: tensors made
    inside are ordinary ones (torch refuses to record autograd on them later,
    janus does not)."""

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)  # @inference_mode without parentheses

    def __init__(self, mode=True):
        self.mode = mode

    def __enter__(self):
        self._prev = (_C._set_grad_enabled(not self.mode), _inference_mode_enabled())
        _inference.on = self.mode
        return None

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev[0])
        _inference.on = self._prev[1]
        return False

    def clone(self):
        return self.__class__(self.mode)


def _seq(x):
    if x is None:
        return []
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x]


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate gradients of `tensors` into the .grad of the leaves."""
    if create_graph:
        raise NotImplementedError("create_graph=True (higher-order gradients) is not supported yet")
    if inputs is not None:
        raise NotImplementedError("backward(inputs=...) is not supported; use janus.autograd.grad")
    ts = _seq(tensors)
    gs = _seq(grad_tensors) or [None] * len(ts)
    if len(gs) != len(ts):
        raise RuntimeError(f"got {len(ts)} tensors and {len(gs)} gradients")
    gs = [g if g is None or isinstance(g, _C.TensorBase) else _tensor_like(t, g) for t, g in zip(ts, gs)]
    _C._backward(ts, gs, bool(retain_graph))
    while _after_backward:  # e.g. DistributedDataParallel's gradient all-reduce
        _after_backward.pop(0)()


# Callables run once after the next backward() has produced every gradient,
# in the order queued (the role of torch's engine queue_callback).
_after_backward = []


def _queue_after_backward(fn):
    _after_backward.append(fn)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=False):
    """Gradients of outputs with respect to inputs, returned as a tuple;
    .grad fields are not touched."""
    if create_graph:
        raise NotImplementedError("create_graph=True (higher-order gradients) is not supported yet")
    outs = _seq(outputs)
    ins = _seq(inputs)
    gos = _seq(grad_outputs) or [None] * len(outs)
    if len(gos) != len(outs):
        raise RuntimeError(f"grad requires one grad_output per output (got {len(gos)} and {len(outs)})")
    gos = [g if g is None or isinstance(g, _C.TensorBase) else _tensor_like(o, g) for o, g in zip(outs, gos)]
    return _C._autograd_grad(outs, gos, ins, bool(retain_graph), bool(allow_unused))


def _tensor_like(t, v):
    import janus
    return janus.full_like(t, float(v))


def Variable(data, requires_grad=False, volatile=False):
    """PyTorch's pre-0.4 wrapper: the tensor itself (now requiring grad if asked)."""
    if requires_grad:
        data.requires_grad_(True)
    return data


class detect_anomaly:
    """Accepted for compatibility (context manager): janus's backward reports
    the failing op itself; no extra checks run."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def set_detect_anomaly(mode, check_nan=True):
    """Accepted for compatibility; see detect_anomaly."""
