"""Custom autograd Functions (janus.autograd.Function, runtime/autograd.c
jn_ag_custom_record): gradients against analytic formulas and central
differences, PyTorch's behaviour and messages where it is installed, the
ctx's contract (saved tensors, needs_input_grad, non-differentiable outputs,
materialized gradients), errors named, and no node or ctx kept alive."""
import gc
import weakref

import numpy as np
import pytest

import janus
from janus.autograd import Function

try:
    import torch
except ImportError:
    torch = None


def _both(fn_builder):
    """The same Function class written once, built for janus and for torch."""
    out = [fn_builder(janus)]
    if torch is not None:
        out.append(fn_builder(torch))
    return out


def _exp_fn(lib):
    class Exp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            y = x.exp() * k
            ctx.save_for_backward(y)
            ctx.k = k
            return y

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return g * y, None
    return Exp


def test_gradient_flows_through_the_custom_backward():
    Exp = _exp_fn(janus)
    x = janus.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = Exp.apply(x * 2, 3.0)
    assert y.grad_fn.name() == "ExpBackward" and "grad_fn=<ExpBackward>" in repr(y)
    assert not y.is_leaf and y.requires_grad
    (y * janus.tensor([1.0, 2.0, 3.0])).sum().backward()
    xv = np.array([0.5, -1.0, 2.0], np.float32)
    want = 2 * 3 * np.exp(2 * xv) * np.array([1, 2, 3], np.float32)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_values_and_gradients_equal_torch():
    Ej, Et = _both(_exp_fn)
    a = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    xj = janus.tensor(a, requires_grad=True)
    xt = torch.tensor(a, requires_grad=True)
    yj, yt = Ej.apply(xj.sin(), 1.5), Et.apply(xt.sin(), 1.5)
    assert yj.grad_fn.name() == yt.grad_fn.name() == "ExpBackward"
    np.testing.assert_allclose(yj.detach().numpy(), yt.detach().numpy(), rtol=1e-6)
    yj.square().sum().backward()
    yt.square().sum().backward()
    np.testing.assert_allclose(xj.grad.numpy(), xt.grad.numpy(), rtol=1e-5)


def _softplus(lib):
    class Softplus(lib.autograd.Function):
        @staticmethod
        def forward(x, beta):
            return (x * beta).exp().log1p() / beta

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, beta = inputs
            ctx.save_for_backward(x)
            ctx.beta = beta

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * (x * ctx.beta).sigmoid(), None
    return Softplus


def test_setup_context_style_matches_central_differences():
    Softplus = _softplus(janus)
    a = np.linspace(-3, 3, 7)
    x = janus.tensor(a, dtype=janus.float64, requires_grad=True)
    Softplus.apply(x, 2.0).sum().backward()
    f = lambda v: np.log1p(np.exp(2.0 * v)) / 2.0  # noqa: E731
    h = 1e-6
    np.testing.assert_allclose(x.grad.numpy(), (f(a + h) - f(a - h)) / (2 * h), rtol=1e-6, atol=1e-9)


def test_needs_input_grad_and_non_tensor_arguments():
    seen = []

    class Mul(Function):
        @staticmethod
        def forward(ctx, a, b, scale):
            seen.append(ctx.needs_input_grad)
            ctx.save_for_backward(a, b)
            ctx.scale = scale
            return a * b * scale

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            seen.append(ctx.needs_input_grad)
            return (g * b * ctx.scale if ctx.needs_input_grad[0] else None,
                    g * a * ctx.scale if ctx.needs_input_grad[1] else None, None)

    a = janus.tensor([1.0, 2.0], requires_grad=True)
    b = janus.tensor([3.0, 4.0])
    Mul.apply(a, b, 2).sum().backward()
    assert seen == [(True, False, False)] * 2
    assert a.grad.tolist() == [6.0, 8.0] and b.grad is None


def test_several_outputs_non_differentiable_and_materialized_gradients():
    got = {}

    class MaxIdx(Function):
        @staticmethod
        def forward(ctx, x, materialize):
            v, i = x.max(dim=1)
            w = v * 2
            ctx.mark_non_differentiable(i)
            ctx.set_materialize_grads(materialize)
            ctx.save_for_backward(x, i)
            return v, i, w

        @staticmethod
        def backward(ctx, gv, gi, gw):
            got["grads"] = (gv, gi, gw)
            x, i = ctx.saved_tensors
            g = janus.zeros_like(x)
            total = (gv if gv is not None else 0) + (2 * gw if gw is not None else 0)
            g[janus.arange(x.shape[0]), i] = total
            return g, None

    x = janus.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]], requires_grad=True)
    v, i, w = MaxIdx.apply(x, True)
    assert not i.requires_grad and i.dtype == janus.int64 and v.requires_grad and w.requires_grad
    v.sum().backward()  # only v's gradient arrives: the others are zeros
    gv, gi, gw = got["grads"]
    assert gw.tolist() == [0.0, 0.0] and gv.tolist() == [1.0, 1.0]
    assert x.grad.tolist() == [[0, 1, 0], [1, 0, 0]]
    x.grad = None
    v, i, w = MaxIdx.apply(x, False)
    w.sum().backward()
    gv, gi, gw = got["grads"]
    assert gv is None and gi is None and gw.tolist() == [1.0, 1.0]
    assert x.grad.tolist() == [[0, 2, 0], [2, 0, 0]]


def test_an_argument_returned_as_is_keeps_its_own_history():
    class Ident(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 10

    a = janus.tensor([1.0, 2.0], requires_grad=True)
    x = a * 1
    y = Ident.apply(x)
    assert y is not x and x.grad_fn.name() == "MulBackward0" and y.grad_fn.name() == "IdentBackward"
    (y + x).sum().backward()
    assert a.grad.tolist() == [11.0, 11.0]


def test_no_history_without_grad_mode_or_an_input_requiring_grad():
    Exp = _exp_fn(janus)
    x = janus.tensor([1.0], requires_grad=True)
    with janus.no_grad():
        assert Exp.apply(x, 1.0).grad_fn is None
    y = Exp.apply(janus.tensor([1.0]), 1.0)
    assert y.grad_fn is None and not y.requires_grad


def test_hooks_and_autograd_grad_see_the_custom_node():
    Exp = _exp_fn(janus)
    x = janus.tensor([0.0, 1.0], requires_grad=True)
    y = Exp.apply(x, 1.0)
    y.register_hook(lambda g: g * 3)
    gx, = janus.autograd.grad(y.sum(), [x])
    np.testing.assert_allclose(gx.numpy(), 3 * np.exp([0.0, 1.0]), rtol=1e-6)
    assert x.grad is None


def test_wrong_gradients_are_named():
    def fn(ret):
        class Bad(Function):
            @staticmethod
            def forward(ctx, x, k):
                return x * k

            @staticmethod
            def backward(ctx, g):
                return ret(g)
        return Bad

    x = janus.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"function BadBackward returned an incorrect number of gradients \(expected 2, got 1\)"):
        fn(lambda g: g).apply(x, 2.0).sum().backward()
    with pytest.raises(RuntimeError, match="returned a gradient different than None at position 2"):
        fn(lambda g: (g, g)).apply(x, 2.0).sum().backward()
    with pytest.raises(RuntimeError, match=r"returned an invalid gradient at index 0 - got \[2\] but expected shape compatible with \[3\]"):
        fn(lambda g: (g[:2], None)).apply(x, 2.0).sum().backward()
    with pytest.raises(TypeError, match="returned float as the gradient at position 1"):
        fn(lambda g: (1.0, None)).apply(x, 2.0).sum().backward()
    # a gradient that broadcasts to the argument is summed down to it, as torch does
    m = janus.ones(2, 1, requires_grad=True)
    fn(lambda g: (janus.ones(4, 2, 3), None)).apply(m, 2.0).sum().backward()
    assert m.grad.tolist() == [[12.0], [12.0]]


def test_an_exception_in_backward_reaches_the_caller():
    class Boom(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom in backward")

    x = janus.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="boom in backward"):
        Boom.apply(x).sum().backward()
    # the engine is usable afterwards
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_saved_tensors_changed_in_place_freed_or_dirty_raise():
    Exp = _exp_fn(janus)
    x = janus.tensor([1.0, 2.0], requires_grad=True)
    y = Exp.apply(x, 1.0)
    with janus.no_grad():
        y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    y = Exp.apply(x, 1.0)
    y.sum().backward(retain_graph=True)
    y.sum().backward()  # retained once: a second pass runs
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.sum().backward()

    class Dirty(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            return x

    with pytest.raises(NotImplementedError, match="mark_dirty"):
        Dirty.apply(janus.ones(1, requires_grad=True))


def test_the_node_and_ctx_are_freed():
    ctxs = []

    class Keep(Function):
        @staticmethod
        def forward(ctx, x):
            ctxs.append(weakref.ref(ctx))
            y = x * 2
            ctx.save_for_backward(x, y)
            return y

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * 2

    x = janus.ones(2, requires_grad=True)
    y = Keep.apply(x)
    del y
    gc.collect()
    assert ctxs[0]() is None  # the output was the only owner of the node, the node of ctx
    y = Keep.apply(x)
    y.sum().backward()
    y = None
    gc.collect()
    assert ctxs[1]() is None


def test_once_differentiable_and_legacy_call():
    from janus.autograd.function import once_differentiable

    class Sq(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            x, = ctx.saved_tensors
            assert not janus.is_grad_enabled()
            return 2 * x * g

    x = janus.tensor([3.0], requires_grad=True)
    Sq.apply(x).backward()
    assert x.grad.tolist() == [6.0]
    with pytest.raises(RuntimeError, match="Legacy autograd function"):
        Sq()(x)
