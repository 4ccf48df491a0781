"""torch._foreach_*: PyTorch's multi-tensor functions (the EMA and optimizer
idioms: `torch._foreach_lerp_(ema, params, 1 - decay)`,
`torch._foreach_mul_(ema, decay); torch._foreach_add_(ema, params, alpha=1 - decay)`),
one ordinary op per tensor: janus has no multi-tensor kernels (a replayed
graph fuses them anyway), so the values are the per-tensor ops', which are
torch's.

Each binary function takes, as torch's, another tensor list, a list of
numbers (one per tensor), a number, or (add, sub, mul, div) one tensor;
the in-place forms (trailing _) return their first argument (the list
itself, as torch 2's), the others a new list.  Lists of
different lengths raise torch's RuntimeError.  Registered in FUNCTIONS
(`function`), so they are `janus._foreach_*` and, under `janus run`,
`torch._foreach_*`."""
from ._functions import FUNCTIONS, TensorBase, function


def _list(tensors, fn):
    if isinstance(tensors, TensorBase) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{fn}(): argument 'self' must be tuple of Tensors, not {type(tensors).__name__}")
    return list(tensors)


def _others(other, n, fn):
    """other, spread over n tensors: a list of n (tensors or numbers), or n copies."""
    if isinstance(other, (list, tuple)):
        if len(other) != n:
            raise RuntimeError(f"Tensor lists must have the same number of tensors, got {n} and {len(other)}")
        return list(other)
    return [other] * n


def _binary(op, has_alpha):
    def out_of_place(self, other, *, alpha=1):
        fn = f"_foreach_{op}"
        ts = _list(self, fn)
        os_ = _others(other, len(ts), fn)
        f = FUNCTIONS[op]
        if has_alpha and alpha != 1:
            return [f(t, o, alpha=alpha) if isinstance(o, TensorBase) else f(t, o * alpha) for t, o in zip(ts, os_)]
        return [f(t, o) for t, o in zip(ts, os_)]

    def in_place(self, other, *, alpha=1):
        fn = f"_foreach_{op}_"
        ts = _list(self, fn)
        os_ = _others(other, len(ts), fn)
        for t, o in zip(ts, os_):
            if has_alpha and alpha != 1:
                getattr(t, op + "_")(o, alpha=alpha) if isinstance(o, TensorBase) else getattr(t, op + "_")(o * alpha)
            elif hasattr(t, op + "_"):
                getattr(t, op + "_")(o)
            else:  # no in-place method (maximum, minimum): the op, copied back
                t.copy_(FUNCTIONS[op](t, o))
        return self

    if not has_alpha:  # torch's signature has no alpha there
        oop, ip = out_of_place, in_place

        def out_of_place(self, other):
            return oop(self, other)

        def in_place(self, other):
            return ip(self, other)
    out_of_place.__name__, in_place.__name__ = f"_foreach_{op}", f"_foreach_{op}_"
    function(out_of_place)
    function(in_place)


for _op, _alpha in (("add", True), ("sub", True), ("mul", False), ("div", False), ("maximum", False),
                    ("minimum", False), ("pow", False), ("clamp_min", False), ("clamp_max", False)):
    _binary(_op, _alpha)


def _unary(op):
    def out_of_place(self):
        return [getattr(t, op)() for t in _list(self, f"_foreach_{op}")]

    def in_place(self):
        for t in _list(self, f"_foreach_{op}_"):
            if hasattr(t, op + "_"):
                getattr(t, op + "_")()
            else:
                t.copy_(getattr(t, op)())
        return self

    out_of_place.__name__, in_place.__name__ = f"_foreach_{op}", f"_foreach_{op}_"
    function(out_of_place)
    function(in_place)


for _op in ("neg", "abs", "sqrt", "rsqrt", "exp", "log", "reciprocal", "sign", "sigmoid", "tanh", "floor", "ceil",
            "round", "trunc", "frac", "sin", "cos", "expm1", "log1p"):
    _unary(_op)


@function
def _foreach_zero_(self):
    for t in _list(self, "_foreach_zero_"):
        t.zero_()
    return self


@function
def _foreach_copy_(self, src, non_blocking=False):
    ts = _list(self, "_foreach_copy_")
    for t, s in zip(ts, _others(list(src), len(ts), "_foreach_copy_")):
        t.copy_(s)
    return self


def _values(value):
    """addcmul/addcdiv's value: a number, a list of numbers, or a 1-d tensor of them (read on the host)."""
    return value.tolist() if isinstance(value, TensorBase) else value


def _ternary(op):
    def out_of_place(self, tensor1, tensor2, value=1):
        ts = _list(self, f"_foreach_{op}")
        a, b, v = (_others(x, len(ts), f"_foreach_{op}") for x in (list(tensor1), list(tensor2), _values(value)))
        return [getattr(t, op)(x, y, value=w) for t, x, y, w in zip(ts, a, b, v)]

    def in_place(self, tensor1, tensor2, value=1):
        ts = _list(self, f"_foreach_{op}_")
        a, b, v = (_others(x, len(ts), f"_foreach_{op}_") for x in (list(tensor1), list(tensor2), _values(value)))
        for t, x, y, w in zip(ts, a, b, v):
            getattr(t, op + "_")(x, y, value=w)
        return self

    out_of_place.__name__, in_place.__name__ = f"_foreach_{op}", f"_foreach_{op}_"
    function(out_of_place)
    function(in_place)


for _op in ("addcmul", "addcdiv"):
    _ternary(_op)


@function
def _foreach_lerp(self, tensors1, weight):
    ts = _list(self, "_foreach_lerp")
    ends, ws = _others(list(tensors1), len(ts), "_foreach_lerp"), _others(weight, len(ts), "_foreach_lerp")
    return [FUNCTIONS["lerp"](t, e, w) for t, e, w in zip(ts, ends, ws)]


@function
def _foreach_lerp_(self, tensors1, weight):
    ts = _list(self, "_foreach_lerp_")
    ends, ws = _others(list(tensors1), len(ts), "_foreach_lerp_"), _others(weight, len(ts), "_foreach_lerp_")
    for t, e, w in zip(ts, ends, ws):
        t.lerp_(e, w)
    return self


@function
def _foreach_norm(self, ord=2, dtype=None):
    """The ord-norm of each tensor (a 0-d tensor each), as torch.linalg.vector_norm."""
    vn = FUNCTIONS.get("vector_norm")
    if vn is None:
        from . import linalg
        vn = linalg.vector_norm
    return [vn(t, ord, dtype=dtype) if dtype is not None else vn(t, ord) for t in _list(self, "_foreach_norm")]
