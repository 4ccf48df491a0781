"""The API the second corpus probe (tests/corpus: reinforce_cartpole,
simclr_fashion, distill_onecycle, gcn_knn_graph) needed, checked against
numpy and, where installed, PyTorch: Tensor.fill_diagonal_ and index_reduce
(janus/_compose_corpus_a.py), torch._foreach_* (janus/_foreach.py) and the
foreach= argument of the gradient clipping functions."""
import numpy as np
import pytest

import janus

SHAPES = [(3, 3), (4, 2), (2, 5), (7, 3), (8, 3), (5, 4), (1, 1), (0, 0), (3, 0), (2, 2, 2), (3, 3, 3, 3)]


def _numpy_fill(shape, value, wrap, dtype=np.float32):
    a = np.zeros(shape, dtype)
    if a.size:
        np.fill_diagonal(a, value, wrap=wrap)  # numpy's wrap is torch's (every width + 1 elements)
    return a


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("wrap", [False, True])
def test_fill_diagonal_against_numpy(shape, wrap):
    x = janus.zeros(*shape)
    out = x.fill_diagonal_(2.5, wrap=wrap)
    assert out is x
    np.testing.assert_array_equal(x.numpy(), _numpy_fill(shape, 2.5, wrap))


def test_fill_diagonal_keeps_dtype_and_other_values():
    x = janus.arange(12).view(4, 3)
    x.fill_diagonal_(-1.7)  # an int tensor takes the value cast as torch does (-1)
    want = np.arange(12).reshape(4, 3)
    np.fill_diagonal(want, -1)
    assert x.dtype == janus.int64 and x.tolist() == want.tolist()
    d = janus.full((3, 3), 5.0)
    d.fill_diagonal_(float("inf"))  # the kNN idiom: no self-neighbour
    assert d.tolist() == [[np.inf, 5, 5], [5, np.inf, 5], [5, 5, np.inf]]


def test_fill_diagonal_errors_and_gradient():
    with pytest.raises(RuntimeError, match="dimensions must larger than 1"):
        janus.zeros(3).fill_diagonal_(1)
    with pytest.raises(RuntimeError, match="equal length"):
        janus.zeros(2, 3, 2).fill_diagonal_(1)
    with pytest.raises(RuntimeError):  # a leaf that requires grad, as torch
        janus.zeros(2, 2, requires_grad=True).fill_diagonal_(1)
    x = janus.ones(3, 4, requires_grad=True)
    y = x * 2
    y.fill_diagonal_(0)
    y.sum().backward()
    assert x.grad.tolist() == [[0, 2, 2, 2], [2, 0, 2, 2], [2, 2, 0, 2]]


def test_fill_diagonal_against_pytorch():
    torch = pytest.importorskip("torch")
    for shape in SHAPES:
        for wrap in (False, True):
            t = torch.arange(int(np.prod(shape)), dtype=torch.float32).reshape(shape)
            j = janus.arange(int(np.prod(shape)), dtype=janus.float32).reshape(shape)
            t.fill_diagonal_(-3.0, wrap=wrap)
            j.fill_diagonal_(-3.0, wrap=wrap)
            np.testing.assert_array_equal(j.numpy(), t.numpy(), err_msg=f"{shape} wrap={wrap}")


def _numpy_index_reduce(base, dim, index, source, reduce, include_self):
    """numpy reference of torch.index_reduce: each slice of source along dim reduced into
    base's slice index[i] (prod, mean, amax, amin), base's own slice taking part or not."""
    out = np.moveaxis(base.astype(np.float64).copy(), dim, 0)
    src = np.moveaxis(source.astype(np.float64), dim, 0)
    fn = {"prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}[reduce]
    for t in set(index.tolist()):
        parts = [src[i] for i in range(len(index)) if index[i] == t]
        if include_self:
            parts.append(out[t])
        out[t] = fn(np.stack(parts), axis=0)
    return np.moveaxis(out, 0, dim)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1])
def test_index_reduce_against_numpy(reduce, include_self, dim):
    rng = np.random.default_rng(3)
    base = rng.integers(-3, 4, size=(4, 5)).astype(np.float32)
    n = 7
    index = rng.integers(0, base.shape[dim], size=n)
    source = rng.integers(-3, 4, size=(n, 5) if dim == 0 else (4, n)).astype(np.float32)
    got = janus.tensor(base).index_reduce(dim, janus.tensor(index), janus.tensor(source), reduce,
                                          include_self=include_self)
    want = _numpy_index_reduce(base, dim, index, source, reduce, include_self)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    x = janus.tensor(base)
    assert x.index_reduce_(dim, janus.tensor(index), janus.tensor(source), reduce,
                           include_self=include_self) is x
    np.testing.assert_allclose(x.numpy(), want, rtol=1e-6)


def test_index_reduce_mean_aggregation_gradient():
    """A GNN's mean over in-neighbours: each message gets 1/in-degree of its target's
    gradient, and a node without neighbours keeps its own value (include_self=False)."""
    dst = janus.tensor([0, 0, 2, 0])
    msg = janus.ones(4, 2, requires_grad=True)
    agg = janus.zeros(3, 2).index_reduce(0, dst, msg * janus.tensor([[1.0], [2.0], [3.0], [6.0]]), "mean",
                                         include_self=False)
    assert agg.tolist() == [[3.0, 3.0], [0.0, 0.0], [3.0, 3.0]]
    agg.sum().backward()
    np.testing.assert_allclose(msg.grad.numpy(), [[1 / 3] * 2, [2 / 3] * 2, [3.0] * 2, [2.0] * 2], rtol=1e-6)


def test_index_reduce_errors():
    x = janus.zeros(3, 2)
    with pytest.raises(RuntimeError, match="one of prod, mean, amax or amin"):
        x.index_reduce(0, janus.tensor([0]), janus.ones(1, 2), "sum")
    with pytest.raises(IndexError, match="vector"):
        x.index_reduce(0, janus.tensor([[0]]), janus.ones(1, 2), "mean")
    with pytest.raises(RuntimeError):
        x.index_reduce(0, janus.tensor([0, 1]), janus.ones(1, 2), "mean")


def test_index_reduce_against_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    base = rng.standard_normal((5, 3)).astype(np.float32)
    index = np.array([4, 0, 4, 2, 0, 4])
    source = rng.standard_normal((6, 3)).astype(np.float32)
    source[2] = source[0]  # a tie: the gradient is shared between the tied entries
    for reduce in ("prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            tb, ts = torch.tensor(base, requires_grad=True), torch.tensor(source, requires_grad=True)
            jb, js = janus.tensor(base, requires_grad=True), janus.tensor(source, requires_grad=True)
            to = tb.index_reduce(0, torch.tensor(index), ts, reduce, include_self=include_self)
            jo = jb.index_reduce(0, janus.tensor(index), js, reduce, include_self=include_self)
            g = rng.standard_normal((5, 3)).astype(np.float32)
            (to * torch.tensor(g)).sum().backward()
            (jo * janus.tensor(g)).sum().backward()
            for a, b in ((jo, to), (jb.grad, tb.grad), (js.grad, ts.grad)):
                np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6,
                                           err_msg=f"{reduce} include_self={include_self}")


def _lists(seed=5):
    rng = np.random.default_rng(seed)
    return [rng.uniform(0.5, 2.0, size=s).astype(np.float32) for s in ((2, 3), (4,), ())]


def test_foreach_ema_idioms_against_numpy():
    """The EMA updates written with torch._foreach_*: lerp_, and mul_ then add_ with alpha."""
    ema, params = _lists(5), _lists(6)
    je, jp = [janus.tensor(a) for a in ema], [janus.tensor(a) for a in params]
    assert janus._foreach_lerp_(je, jp, 0.1) is je  # the list itself, as torch's
    for j, e, p in zip(je, ema, params):
        np.testing.assert_allclose(j.numpy(), e + 0.1 * (p - e), rtol=1e-6)
    je = [janus.tensor(a) for a in ema]
    janus._foreach_mul_(je, 0.9)
    janus._foreach_add_(je, jp, alpha=0.1)
    for j, e, p in zip(je, ema, params):
        np.testing.assert_allclose(j.numpy(), e * 0.9 + 0.1 * p, rtol=1e-6)


def test_foreach_forms_and_errors():
    a = [janus.tensor([1.0, 4.0]), janus.tensor([9.0])]
    assert [t.tolist() for t in janus._foreach_sqrt(a)] == [[1.0, 2.0], [3.0]]
    assert [t.tolist() for t in janus._foreach_add(a, [1.0, 2.0])] == [[2.0, 5.0], [11.0]]  # a number per tensor
    assert [t.tolist() for t in janus._foreach_mul(a, janus.tensor(2.0))] == [[2.0, 8.0], [18.0]]  # one tensor
    assert [t.tolist() for t in janus._foreach_maximum(a, 3.0)] == [[3.0, 4.0], [9.0]]
    assert [t.item() for t in janus._foreach_norm(a)] == [pytest.approx(17 ** 0.5), 9.0]
    b = [t.clone() for t in a]
    janus._foreach_addcmul_(b, a, a, value=0.5)
    assert [t.tolist() for t in b] == [[1.5, 12.0], [49.5]]
    janus._foreach_minimum_(b, 10.0)  # no Tensor.minimum_: the op, copied back
    assert [t.tolist() for t in b] == [[1.5, 10.0], [10.0]]
    janus._foreach_zero_(b)
    assert [t.tolist() for t in b] == [[0.0, 0.0], [0.0]]
    janus._foreach_copy_(b, a)
    assert [t.tolist() for t in b] == [[1.0, 4.0], [9.0]]
    with pytest.raises(RuntimeError, match="same number of tensors"):
        janus._foreach_add_(a, [janus.ones(2)])
    with pytest.raises(TypeError):
        janus._foreach_add_(janus.ones(2), 1.0)


def test_foreach_against_pytorch():
    torch = pytest.importorskip("torch")
    x, y, z = _lists(7), _lists(8), _lists(9)
    tx, ty, tz = ([torch.tensor(a) for a in l] for l in (x, y, z))
    jx, jy, jz = ([janus.tensor(a) for a in l] for l in (x, y, z))
    cases = [("_foreach_add", (2.0,), {}), ("_foreach_sub", ("Y",), {"alpha": 0.5}), ("_foreach_div", ("Y",), {}),
             ("_foreach_pow", (2.0,), {}), ("_foreach_clamp_min", (1.0,), {}), ("_foreach_reciprocal", (), {}),
             ("_foreach_exp", (), {}), ("_foreach_addcdiv", ("Y", "Z"), {"value": 0.3}),
             ("_foreach_lerp", ("Y", 0.25), {}), ("_foreach_norm", (), {"ord": 1})]
    for name, args, kw in cases:
        for inplace in (False, True) if name != "_foreach_norm" else (False,):
            fn = name + ("_" if inplace else "")
            a = [t.clone() for t in tx]
            b = [t.clone() for t in jx]
            ta = [{"Y": ty, "Z": tz}.get(v, v) if isinstance(v, str) else v for v in args]
            ja = [{"Y": jy, "Z": jz}.get(v, v) if isinstance(v, str) else v for v in args]
            r1, r2 = getattr(torch, fn)(a, *ta, **kw), getattr(janus, fn)(b, *ja, **kw)
            got, want = (b, a) if inplace else (r2, r1)
            assert (r1 is a) == (r2 is b)
            for g, w in zip(got, want):
                np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, err_msg=fn)


def test_clip_grad_accepts_foreach():
    p = janus.nn.Parameter(janus.zeros(2))
    p.grad = janus.tensor([3.0, 4.0])
    total = janus.nn.utils.clip_grad_norm_([p], 1.0, foreach=True)
    assert total.item() == 5.0
    np.testing.assert_allclose(p.grad.numpy(), [0.6, 0.8], rtol=1e-5)
    janus.nn.utils.clip_grad_value_([p], 0.7, foreach=False)
    np.testing.assert_allclose(p.grad.numpy(), [0.6, 0.7], rtol=1e-5)
