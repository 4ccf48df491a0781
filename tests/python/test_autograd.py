"""Autograd semantics (PyTorch's): leaves and .grad accumulation, backward
with a gradient, retain_graph, grad modes, detach, autograd.grad, and the
error paths (second backward, modified saved tensor, leaf in-place, no
derivative)."""
import numpy as np
import pytest

import janus


def t(a, rg=False):
    x = janus.tensor(np.asarray(a, dtype=np.float64))
    return x.requires_grad_() if rg else x


def test_leaf_and_grad_accumulation():
    x = t([1.0, 2.0, 3.0], True)
    assert x.is_leaf and x.requires_grad and x.grad is None
    y = (x * x).sum()
    assert not y.is_leaf and y.requires_grad and y.grad_fn is not None
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2, 4, 6])
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [5, 7, 9])  # accumulates
    x.grad = None
    (x ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2, 4, 6])


def test_backward_with_gradient_and_nonscalar_error():
    x = t([[1.0, 2.0], [3.0, 4.0]], True)
    y = x * 2
    with pytest.raises(RuntimeError, match="scalar outputs"):
        y.backward()
    y.backward(janus.tensor([[1.0, 0.0], [0.5, 2.0]], dtype=janus.float64))
    np.testing.assert_allclose(x.grad.numpy(), [[2, 0], [1, 4]])


def test_retain_graph_and_second_backward_error():
    x = t([1.0, 2.0], True)
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    g1 = x.grad.numpy().copy()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * g1)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_modified_saved_tensor_is_an_error():
    x = t([1.0, 2.0, 3.0], True)
    h = x * 2
    y = h.exp()          # saves its output
    y.add_(1)            # ... which is then modified in place
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_inplace_on_nonleaf_is_tracked():
    x = t([1.0, -2.0, 3.0], True)
    h = x * 2
    h.mul_(3)
    h.relu_()
    h.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6, 0, 6])
    assert h.grad_fn is not None


def test_leaf_inplace_requires_no_grad():
    w = t([1.0, 2.0], True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w.add_(1)
    with janus.no_grad():
        w.add_(1)
    np.testing.assert_allclose(w.detach().numpy(), [2, 3])


def test_grad_modes_and_detach():
    x = t([1.0, 2.0], True)
    with janus.no_grad():
        y = x * 2
        assert not y.requires_grad
        with janus.enable_grad():
            z = x * 2
            assert z.requires_grad
    assert janus.is_grad_enabled()

    @janus.no_grad()
    def f(v):
        return v * 3
    assert not f(x).requires_grad
    d = x.detach()
    assert not d.requires_grad and d.is_leaf
    d[0] = 10.0  # shares storage
    assert x[0].item() == 10.0
    with pytest.raises(RuntimeError, match="leaf variables"):
        (x * 2).requires_grad_(False)


def test_autograd_grad_leaves_grad_untouched():
    x = t([1.0, 2.0, 3.0], True)
    w = t([0.5, 0.5, 0.5], True)
    y = (x * w).sum()
    gx, = janus.autograd.grad(y, x, retain_graph=True)
    np.testing.assert_allclose(gx.numpy(), [0.5, 0.5, 0.5])
    assert x.grad is None and w.grad is None
    h = x * 2
    out = (h * h).sum()
    gh, gx2 = janus.autograd.grad(out, [h, x])
    np.testing.assert_allclose(gh.numpy(), 2 * h.detach().numpy())
    np.testing.assert_allclose(gx2.numpy(), 8 * x.detach().numpy())
    z = t([1.0], True)
    with pytest.raises(RuntimeError, match="allow_unused"):
        janus.autograd.grad((x * 2).sum(), [x, z])
    r = janus.autograd.grad((x * 2).sum(), [x, z], allow_unused=True)
    assert r[1] is None


def test_int_tensors_cannot_require_grad():
    with pytest.raises(RuntimeError, match="floating point"):
        janus.tensor([1, 2]).requires_grad_()


def test_broadcast_gradient_sums_back():
    a = t(np.ones((3, 1)), True)
    b = t(np.arange(4.0), True)
    ((a + b) * 2).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.full((3, 1), 8.0))
    np.testing.assert_allclose(b.grad.numpy(), np.full(4, 6.0))


def test_deep_chain_does_not_overflow_the_stack():
    x = t([1.0], True)
    y = x
    for _ in range(20000):
        y = y * 1.0
    y.sum().backward()
    assert x.grad.item() == 1.0
    del y  # freeing a long chain is iterative too


def test_backward_through_indexing_and_views():
    x = t(np.arange(12.0).reshape(3, 4), True)
    y = x[1:, ::2].t().reshape(-1)
    (y * janus.arange(4, dtype=janus.float64)).sum().backward()
    want = np.zeros((3, 4))
    want[1:, ::2] = np.arange(4.0).reshape(2, 2).T
    np.testing.assert_allclose(x.grad.numpy(), want)
    x.grad = None
    idx = janus.tensor([0, 2, 2])
    x[idx].sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.array([[1] * 4, [0] * 4, [2] * 4], float))


def test_writing_grad_value_into_a_view_is_refused():
    x = t([1.0, 2.0], True)
    buf = janus.zeros(4, dtype=janus.float64)
    with pytest.raises((RuntimeError, NotImplementedError), match="view"):
        buf[1:3] = x * 2


# ---- gradients summed in place (jn_node_acc): per-time-step patterns ----
def _numgrad_check(f, inputs, expected):
    """f(*inputs) -> scalar; expected: numpy gradients (float64)."""
    for x in inputs:
        x.grad = None
    f(*inputs).backward()
    for x, e in zip(inputs, expected):
        np.testing.assert_allclose(x.grad.numpy(), e, rtol=1e-12, atol=1e-12)


def test_select_and_slice_gradients_sum_into_one_buffer():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 5, 4))
    w = rng.standard_normal((5, 3, 4))  # one weight per selected row
    x = t(a, True)
    # every time step's row, one row twice, and an overlapping slice
    def f(x):
        s = sum((x[:, i] * t(w[i])).sum() for i in range(5))
        return s + (x[:, 2] * 3).sum() + (x[:, 1:4] ** 2).sum()
    e = np.zeros_like(a)
    for i in range(5):
        e[:, i] += w[i]
    e[:, 2] += 3
    e[:, 1:4] += 2 * a[:, 1:4]
    _numgrad_check(f, [x], [e])
    # the sum does not reach through to a tensor the caller holds
    g = x.grad
    _numgrad_check(f, [x], [e])
    np.testing.assert_allclose(g.numpy(), e)


def test_linear_and_mm_gradients_sum_into_grad_in_place():
    rng = np.random.default_rng(1)
    W, b = rng.standard_normal((6, 4)), rng.standard_normal(6)
    xs = [rng.standard_normal((3, 4)) for _ in range(4)]
    w, bias = t(W, True), t(b, True)
    def f(w, bias):
        h = sum(janus.nn.functional.linear(t(x), w, bias).tanh().sum() for x in xs)
        return h + (t(xs[0]) @ w.t()).sum() + (w.t() @ t(np.ones((6, 2)))).sum()
    gw = np.zeros_like(W)
    gb = np.zeros_like(b)
    for x in xs:
        d = 1 - np.tanh(x @ W.T + b) ** 2
        gw += d.T @ x
        gb += d.sum(0)
    gw += np.ones((3, 6)).T @ xs[0] + np.ones((6, 2)) @ np.ones((4, 2)).T
    _numgrad_check(f, [w, bias], [gw, gb])
    # a second backward adds to the .grad already there, in that same tensor
    held = w.grad
    f(w, bias).backward()
    assert w.grad is held or np.shares_memory(w.grad.numpy(), held.numpy())
    np.testing.assert_allclose(held.numpy(), 2 * gw, rtol=1e-12)


def test_input_gradient_of_two_products_sums_in_place():
    rng = np.random.default_rng(2)
    A, W1, W2 = rng.standard_normal((3, 4)), rng.standard_normal((4, 5)), rng.standard_normal((5, 4))
    a = t(A, True)
    def f(a):
        h = a * 2  # a non-leaf used by two products: its gradient buffer is private
        return (h @ t(W1)).sum() + janus.nn.functional.linear(h, t(W2)).sum() + (h.exp()).sum()
    h = 2 * A
    gh = np.ones((3, 5)) @ W1.T + np.ones((3, 5)) @ W2 + np.exp(h)
    _numgrad_check(f, [a], [2 * gh])


def test_autograd_grad_leaves_grad_alone_with_in_place_sums():
    x = t(np.arange(12.0).reshape(3, 4), True)
    w = t(np.ones((2, 4)), True)
    y = sum(janus.nn.functional.linear(x[i:i + 1], w).sum() for i in range(3))
    gw, = janus.autograd.grad(y, [w])
    np.testing.assert_allclose(gw.numpy(), np.tile(np.arange(12.0).reshape(3, 4).sum(0), (2, 1)))
    assert w.grad is None and x.grad is None


def test_a_node_that_saved_nothing_runs_again_and_grad_runs_only_what_it_needs():
    """As torch's engine: a second backward goes through nodes that need nothing freed
    (an expand, a product with a Python number: the number is kept), and still fails at
    one whose saved tensors went; autograd.grad runs only the nodes that lead to its
    inputs, so a later backward through the rest works (MAML's inner grad, then the
    outer backward)."""
    x = t(np.ones(3), True)
    y = x.expand(2, 3)
    (y * 2).sum().backward()
    (y * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 10.0))
    z = (x * x).sum()
    z.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        z.backward()
    x = t(np.array([1.0, 2.0, 3.0]), True)
    h = x * 2
    loss = (h * h).sum()
    g, = janus.autograd.grad(loss, [h])
    np.testing.assert_array_equal(g.numpy(), 2 * 2 * np.array([1.0, 2.0, 3.0]))
    assert x.grad is None  # the node behind h did not run
    (h * 5).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 10.0))
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()  # h * h saved h: freed by the grad above
