"""Gradient hooks with PyTorch's semantics: Tensor.register_hook (leaves and
non-leaves; a returned tensor replaces the gradient) and
Tensor.register_post_accumulate_grad_hook (leaves, after .grad is
accumulated), called in the engine's order; removal through the handle;
hooks under retain_graph and autograd.grad; errors.  Each scenario runs on
janus against hand-computed values, and on PyTorch too when it is installed
(same call log, same gradients)."""
import numpy as np
import pytest

import janus

try:
    import torch
except ImportError:  # the janus checks still run
    torch = None

LIBS = [janus] + ([torch] if torch is not None else [])


def leaf(lib, v):
    return lib.tensor(np.asarray(v, dtype=np.float64), requires_grad=True)


def npy(x):
    return None if x is None else np.asarray(x.detach().numpy())


def order_scenario(lib):
    """Two branches: c's (created later) runs first; y has two hooks, the
    first doubles its gradient; z's hook sees the loss's gradient."""
    log = []
    a, b, c = leaf(lib, [1.0, 2.0]), leaf(lib, [3.0, -1.0]), leaf(lib, [5.0, 5.0])
    y = a * b
    z = y * y + a
    w = (c * 3).sum()
    z.register_hook(lambda g: log.append(("z", npy(g).tolist())))
    y.register_hook(lambda g: (log.append(("y1", npy(g).tolist())), g * 2)[1])
    y.register_hook(lambda g: log.append(("y2", npy(g).tolist())))
    a.register_hook(lambda g: log.append(("a", npy(g).tolist())))
    a.register_post_accumulate_grad_hook(lambda p: log.append(("a-post", npy(p.grad).tolist())))
    b.register_hook(lambda g: log.append(("b", npy(g).tolist())))
    b.register_post_accumulate_grad_hook(lambda p: log.append(("b-post", npy(p.grad).tolist())))
    c.register_hook(lambda g: log.append(("c", npy(g).tolist())))
    c.register_post_accumulate_grad_hook(lambda p: log.append(("c-post", npy(p.grad).tolist())))
    (z.sum() + w).backward()
    return log, npy(a.grad), npy(b.grad)


def test_hook_order_and_replacement():
    for lib in LIBS:
        log, ga, gb = order_scenario(lib)
        # y = a*b = [3, -2]; dz/dy = 2y = [6, -4], doubled by y1: [12, -8]
        assert log == [
            ("c", [3.0, 3.0]), ("c-post", [3.0, 3.0]),  # w's branch is the later one: it runs first
            ("z", [1.0, 1.0]),
            ("y1", [6.0, -4.0]), ("y2", [12.0, -8.0]),  # y2 sees y1's replacement
            ("a", [37.0, 9.0]), ("a-post", [37.0, 9.0]),  # a: 12*b + 1 (y's edge and z's), summed once
            ("b", [12.0, -16.0]), ("b-post", [12.0, -16.0]),  # b: 12*a, from the same node as a
        ], (lib.__name__, log)
        np.testing.assert_array_equal(ga, [37.0, 9.0])
        np.testing.assert_array_equal(gb, [12.0, -16.0])


def test_leaf_hook_sees_the_sum_of_its_gradients_once():
    for lib in LIBS:
        x = leaf(lib, [1.0, 2.0, 3.0])
        calls = []
        x.register_hook(lambda g: (calls.append(npy(g).tolist()), g * 2)[1])
        (x * x).sum().backward()
        assert calls == [[2.0, 4.0, 6.0]], lib.__name__
        np.testing.assert_array_equal(npy(x.grad), [4.0, 8.0, 12.0])
        (x * 3).sum().backward()  # the hook sees this pass's gradient, not .grad
        assert calls[-1] == [3.0, 3.0, 3.0]
        np.testing.assert_array_equal(npy(x.grad), [10.0, 14.0, 18.0])


def test_remove_and_context_manager():
    for lib in LIBS:
        x = leaf(lib, [1.0, -1.0])
        calls = []
        h1 = x.register_hook(lambda g: calls.append("h1"))
        h2 = x.register_post_accumulate_grad_hook(lambda p: calls.append("post"))
        h3 = x.register_hook(lambda g: g * 10)
        (x * 2).sum().backward()
        assert calls == ["h1", "post"]
        np.testing.assert_array_equal(npy(x.grad), [20.0, 20.0])
        h1.remove()
        h3.remove()
        h3.remove()  # idempotent
        x.grad = None
        (x * 2).sum().backward()
        assert calls == ["h1", "post", "post"]
        np.testing.assert_array_equal(npy(x.grad), [2.0, 2.0])
        h2.remove()
        with x.register_hook(lambda g: calls.append("ctx")):
            (x * 2).sum().backward()
        (x * 2).sum().backward()
        assert calls == ["h1", "post", "post", "ctx"], lib.__name__


def test_hook_removing_itself_and_registering_another():
    for lib in LIBS:
        x = leaf(lib, [1.0])
        calls, handles = [], {}

        def once(g):
            calls.append("once")
            handles["once"].remove()
        handles["once"] = x.register_hook(once)
        x.register_hook(lambda g: calls.append("always"))
        (x * 1).sum().backward()
        (x * 1).sum().backward()
        assert calls == ["once", "always", "always"], lib.__name__


def test_nonleaf_hook_replacement_flows_to_the_leaves():
    for lib in LIBS:
        x = leaf(lib, [1.0, 2.0])
        y = x * 3
        y.register_hook(lambda g: g * 0.5 + 1)  # the hook's ops run under no_grad
        z = (y * y).sum()  # dz/dy = 2y = [6, 12] -> [4, 7]
        z.backward()
        np.testing.assert_array_equal(npy(x.grad), [12.0, 21.0])
        assert x.grad.requires_grad is False, lib.__name__


def test_hooks_under_retain_graph():
    for lib in LIBS:
        x = leaf(lib, [2.0])
        y = x * x
        seen = []
        y.register_hook(lambda g: seen.append(("y", npy(g).tolist())))
        x.register_post_accumulate_grad_hook(lambda p: seen.append(("post", npy(p.grad).tolist())))
        y.sum().backward(retain_graph=True)
        y.sum().backward()
        assert seen == [("y", [1.0]), ("post", [4.0]), ("y", [1.0]), ("post", [8.0])], lib.__name__


def test_hooks_under_autograd_grad():
    for lib in LIBS:
        x, w = leaf(lib, [1.0, 2.0]), leaf(lib, [3.0, 4.0])
        y = x * w
        calls = []
        x.register_hook(lambda g: (calls.append("x"), g + 1)[1])
        w.register_hook(lambda g: calls.append("w"))  # not asked for: does not run
        x.register_post_accumulate_grad_hook(lambda p: calls.append("x-post"))  # nothing accumulates
        y.register_hook(lambda g: (calls.append("y"), g * 2)[1])
        gx, = lib.autograd.grad(y.sum(), [x], retain_graph=True)
        assert calls == ["y", "x"], (lib.__name__, calls)
        np.testing.assert_array_equal(npy(gx), [7.0, 9.0])  # 2 * w + 1
        gy, = lib.autograd.grad(y.sum(), [y])
        assert calls == ["y", "x", "y"], (lib.__name__, calls)
        np.testing.assert_array_equal(npy(gy), [2.0, 2.0])  # captured after y's hook
        assert x.grad is None and w.grad is None


def test_hook_on_a_leaf_root():
    for lib in LIBS:
        x = leaf(lib, [1.0, 2.0])
        x.register_hook(lambda g: g * 3)
        x.backward(lib.tensor(np.array([1.0, -1.0])))
        np.testing.assert_array_equal(npy(x.grad), [3.0, -3.0])


def test_float32_hooks_on_a_module_match_pytorch():
    rng = np.random.default_rng(0)
    W, X = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((5, 3)).astype(np.float32)

    def run(lib):
        lin = lib.nn.Linear(3, 4)
        with lib.no_grad():
            lin.weight.copy_(lib.tensor(W))
            lin.bias.zero_()
        order = []
        for name, p in lin.named_parameters():
            p.register_post_accumulate_grad_hook(lambda p, name=name: order.append(name))
        lin.weight.register_hook(lambda g: g.clamp(-0.5, 0.5))
        lib.tanh(lin(lib.tensor(X))).pow(2).mean().backward()
        return order, npy(lin.weight.grad), npy(lin.bias.grad)

    order, gw, gb = run(janus)
    assert sorted(order) == ["bias", "weight"] and np.abs(gw).max() <= 0.5
    if torch is not None:
        t_order, t_gw, t_gb = run(torch)
        # not the same order: torch's linear is addmm over W.t() (the bias's gradient is
        # ready a node earlier), janus's one op hands out both from the same node
        assert sorted(order) == sorted(t_order)
        np.testing.assert_allclose(gw, t_gw, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(gb, t_gb, rtol=1e-5, atol=1e-6)


def test_errors():
    x = janus.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        x.register_hook(lambda g: None)
    x.requires_grad_()
    y = x * 2
    with pytest.raises(RuntimeError, match="non-leaf"):
        y.register_post_accumulate_grad_hook(lambda p: None)
    with pytest.raises(TypeError, match="callable"):
        x.register_hook(3)
    h = x.register_hook(lambda g: janus.zeros(3))
    with pytest.raises(RuntimeError, match="shape"):
        (x * 2).sum().backward()
    h.remove()
    h = x.register_hook(lambda g: g.double())
    with pytest.raises(RuntimeError, match="dtype"):
        (x * 2).sum().backward()
    h.remove()
    h = x.register_hook(lambda g: "no")
    with pytest.raises(TypeError, match="None or a Tensor"):
        (x * 2).sum().backward()
    h.remove()

    def boom(g):
        raise KeyError("from the hook")
    h = x.register_hook(boom)
    with pytest.raises(KeyError, match="from the hook"):  # the hook's own exception
        (x * 2).sum().backward()
    h.remove()
    x.grad = None
    (x * 2).sum().backward()  # the engine is usable afterwards
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])
    x.register_post_accumulate_grad_hook(lambda p: p.grad)
    with pytest.raises(RuntimeError, match="must return None"):
        (x * 2).sum().backward()


def test_hooks_die_with_their_tensor():
    import gc
    import weakref

    class Fn:
        def __call__(self, g):
            return None
    fn = Fn()
    ref = weakref.ref(fn)
    x = janus.tensor([1.0], requires_grad=True)
    y = x * 2
    y.register_hook(fn)
    x.register_hook(fn)
    del fn
    y.sum().backward()
    assert ref() is not None
    del x, y
    gc.collect()
    assert ref() is None


OPS = {
    "exp": lambda lib, x: x.exp(),
    "matmul": lambda lib, x: x.matmul(lib.tensor(np.arange(12.0).reshape(3, 4) / 7)),
    "slice": lambda lib, x: x[1:],
    "sum_dim": lambda lib, x: x.sum(0),
    "cat": lambda lib, x: lib.cat([x, x * 2]),
    "relu": lambda lib, x: lib.relu(x),
    "view": lambda lib, x: x.view(-1),
    "t": lambda lib, x: x.t(),
    "max_values": lambda lib, x: x.max(dim=1)[0],  # a two-output node: the hook is on output 0
    "softmax": lambda lib, x: lib.softmax(x, dim=1),
    "where": lambda lib, x: lib.where(x > 0, x, x * x),
}


@pytest.mark.parametrize("op", sorted(OPS))
def test_hooks_per_op(op):
    """A hook on the op's output triples its gradient; the leaf's hook sees
    the result: hand-checked against the unhooked gradient times 3, and
    against PyTorch when installed."""
    base = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])

    def run(lib, hook):
        x = lib.tensor(base.copy(), requires_grad=True)
        y = OPS[op](lib, x)
        seen = {}
        if hook:
            y.register_hook(lambda g: (seen.setdefault("y", npy(g)), g * 3)[1])
            x.register_hook(lambda g: seen.__setitem__("x", npy(g)))
        w = lib.tensor(np.linspace(-1, 1, int(np.prod(tuple(y.shape)))).reshape(tuple(y.shape)))
        (y * w).sum().backward()
        return npy(x.grad), seen

    plain, _ = run(janus, False)
    hooked, seen = run(janus, True)
    np.testing.assert_allclose(hooked, 3 * plain, rtol=1e-12)
    np.testing.assert_array_equal(seen["x"], hooked)
    if torch is not None:
        t_hooked, t_seen = run(torch, True)
        np.testing.assert_allclose(hooked, t_hooked, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(seen["y"], t_seen["y"], rtol=1e-12)


def test_hook_stays_with_the_value_it_was_registered_on():
    """In-place after register_hook: the earlier hook sees the gradient with
    respect to the value before the write, a later one the new value's."""
    for lib in LIBS:
        log = []
        x = leaf(lib, [1.0, 2.0])
        y = x * 2
        y.register_hook(lambda g: log.append(("old", npy(g).tolist())))
        y.mul_(3)
        y.register_hook(lambda g: log.append(("new", npy(g).tolist())))
        y.sum().backward()
        assert log == [("new", [1.0, 1.0]), ("old", [3.0, 3.0])], lib.__name__
        np.testing.assert_array_equal(npy(x.grad), [6.0, 6.0])
