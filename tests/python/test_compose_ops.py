"""The torch functions composed from table ops (janus/_compose.py): sorting
and selection, scans, diagonals, einsum, multinomial, cat/stack of any
length -- values against numpy, gradients against finite differences, and
against PyTorch where it imports."""
import numpy as np
import pytest

import janus
from gradnum import check_grad

R = np.random.default_rng(11)


def t(a, **kw):
    return janus.tensor(np.ascontiguousarray(a), **kw)


# ------------------------------------------------------------- cat / stack
@pytest.mark.parametrize("n", [1, 64, 65, 200, 5000])
def test_cat_and_stack_take_any_number_of_tensors(n):
    parts = [R.standard_normal((2, 3)).astype(np.float32) for _ in range(n)]
    ts = [t(p) for p in parts]
    np.testing.assert_array_equal(janus.cat(ts, 0).numpy(), np.concatenate(parts, 0))
    np.testing.assert_array_equal(janus.cat(ts, 1).numpy(), np.concatenate(parts, 1))
    np.testing.assert_array_equal(janus.stack(ts, 1).numpy(), np.stack(parts, 1))
    np.testing.assert_array_equal(janus.stack(ts, -1).numpy(), np.stack(parts, -1))
    np.testing.assert_array_equal(janus.concatenate(ts, axis=0).numpy(), np.concatenate(parts, 0))


def test_cat_of_many_is_differentiable():
    xs = [t(R.standard_normal(3), requires_grad=True) for _ in range(150)]
    w = R.standard_normal((150, 3))
    (janus.stack(xs, 0) * t(w)).sum().backward()
    for i, x in enumerate(xs):
        np.testing.assert_allclose(x.grad.numpy(), w[i], rtol=1e-6)
    ys = [t(R.standard_normal((2, 1)), requires_grad=True) for _ in range(100)]
    (janus.cat(ys, 1) * 2).sum().backward()
    assert all(np.all(y.grad.numpy() == 2) for y in ys)


def test_the_common_path_is_the_op_itself():
    """Up to the op's limit cat/stack are the C bindings (no Python wrapper)."""
    assert type(janus.cat).__name__ == "OpFn" and type(janus.stack).__name__ == "OpFn"
    assert janus.cat.overflow is not None and janus.stack.overflow is not None
    with pytest.raises(TypeError, match="callable"):
        janus.cat.overflow = 3


# --------------------------------------------------------------- sorting
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_argsort_msort(dim, descending):
    x = R.integers(0, 5, size=(6, 7)).astype(np.float32)  # ties: stability matters
    v, i = janus.sort(t(x), dim=dim, descending=descending)
    order = np.argsort(-x if descending else x, axis=dim, kind="stable")
    np.testing.assert_array_equal(i.numpy(), order)
    np.testing.assert_array_equal(v.numpy(), np.take_along_axis(x, order, dim))
    np.testing.assert_array_equal(janus.argsort(t(x), dim, descending).numpy(), order)
    np.testing.assert_array_equal(t(x).sort(dim, descending).indices.numpy(), order)
    np.testing.assert_array_equal(janus.msort(t(x)).numpy(), np.sort(x, 0))


def test_topk_kthvalue_median():
    x = R.standard_normal((5, 9))
    v, i = janus.topk(t(x), 3)
    order = np.argsort(-x, axis=1, kind="stable")[:, :3]
    np.testing.assert_array_equal(i.numpy(), order)
    np.testing.assert_array_equal(v.numpy(), np.take_along_axis(x, order, 1))
    assert v.is_contiguous() and v.view(-1).shape == (15,)
    v, i = t(x).topk(2, dim=0, largest=False)
    np.testing.assert_array_equal(i.numpy(), np.argsort(x, axis=0, kind="stable")[:2])
    kv, ki = janus.kthvalue(t(x), 4, 1, keepdim=True)
    np.testing.assert_array_equal(kv.numpy(), np.sort(x, 1)[:, 3:4])
    np.testing.assert_array_equal(ki.numpy(), np.argsort(x, 1, kind="stable")[:, 3:4])
    assert float(janus.median(t(x))) == np.sort(x.reshape(-1))[(x.size - 1) // 2]
    mv, mi = janus.median(t(x), 1)
    np.testing.assert_array_equal(mv.numpy(), np.sort(x, 1)[:, 4])
    np.testing.assert_array_equal(np.take_along_axis(x, mi.numpy()[:, None], 1)[:, 0], mv.numpy())
    # NaN propagates, at the first NaN's index
    y = np.array([[1.0, np.nan, 3.0, np.nan], [4.0, 2.0, 0.0, 1.0]])
    mv, mi = janus.median(t(y), 1)
    assert np.isnan(mv.numpy()[0]) and mi.numpy()[0] == 1 and mv.numpy()[1] == 1.0
    assert np.isnan(float(janus.median(t(y))))
    with pytest.raises(RuntimeError, match="out of range"):
        janus.topk(t(x), 10)


def test_sort_and_topk_gradients():
    x = R.standard_normal((3, 5))
    check_grad(lambda a: janus.sort(a, 1, descending=True).values, [x])
    check_grad(lambda a: janus.topk(a, 2, dim=0).values, [x])
    check_grad(lambda a: janus.median(a, 1).values, [x])


# ------------------------------------------------------------------ scans
@pytest.mark.parametrize("n", [1, 2, 7, 64, 1000])
def test_cumsum_cumprod(n):
    x = R.uniform(0.5, 1.5, size=(3, n))
    np.testing.assert_allclose(janus.cumsum(t(x), 1).numpy(), np.cumsum(x, 1), rtol=1e-12)
    np.testing.assert_allclose(t(x).cumprod(-1).numpy(), np.cumprod(x, 1), rtol=1e-10)
    np.testing.assert_allclose(janus.cumsum(t(x), 0).numpy(), np.cumsum(x, 0), rtol=1e-12)
    ints = R.integers(-5, 5, size=(n,)).astype(np.int32)
    r = janus.cumsum(t(ints), 0)
    assert r.dtype == janus.int64 and r.numpy().tolist() == np.cumsum(ints).tolist()
    assert janus.cumsum(t(x), 1, dtype=janus.float32).dtype == janus.float32


def test_cumsum_cumprod_gradients():
    x = R.standard_normal((3, 6))
    check_grad(lambda a: janus.cumsum(a, 1), [x])
    x[1, 2] = 0.0  # a zero factor: cumprod's gradient through it stays exact
    check_grad(lambda a: janus.cumprod(a, 1), [x])


# -------------------------------------------------------------- diagonals
@pytest.mark.parametrize("k", [0, 1, 2, -1, -3])
def test_diag(k):
    v = R.standard_normal(4)
    np.testing.assert_array_equal(janus.diag(t(v), k).numpy(), np.diag(v, k))
    m = R.standard_normal((4, 6))
    np.testing.assert_array_equal(janus.diag(t(m), k).numpy(), np.diag(m, k))
    np.testing.assert_array_equal(t(m).diag(k).numpy(), np.diag(m, k))
    check_grad(lambda a: janus.diag(a, k), [v])
    check_grad(lambda a: janus.diag(a, k), [m])


def test_diag_embed():
    v = R.standard_normal((2, 3))
    want = np.stack([np.diag(r, 1) for r in v])
    np.testing.assert_array_equal(janus.diag_embed(t(v), 1).numpy(), want)
    got = janus.diag_embed(t(v), 0, 0, 2).numpy()
    np.testing.assert_array_equal(got, np.moveaxis(np.stack([np.diag(r) for r in v]), (1, 2), (0, 2)))


# ----------------------------------------------------------------- einsum
EINSUMS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]), ("ij->ji", [(3, 4)]), ("ij->", [(3, 4)]), ("i,j->ij", [(3,), (4,)]),
    ("i,i->", [(5,), (5,)]), ("...ij,...jk->...ik", [(2, 3, 4, 5), (5, 2)]), ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]), ("iij->j", [(3, 3, 2)]), ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]), ("ab,cd", [(2, 3), (4, 5)]), ("ba,ab", [(3, 2), (2, 3)]),
    ("i...->...", [(3, 4, 5)]), ("ij,j", [(3, 1), (4,)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUMS)
def test_einsum_matches_numpy(eq, shapes):
    xs = [R.standard_normal(s) for s in shapes]
    if eq == "ij,j":  # broadcasting a size-1 dim, which numpy's einsum refuses
        want = np.einsum("ij,j->i", np.broadcast_to(xs[0], (3, 4)), xs[1])
    else:
        want = np.einsum(eq, *xs)
    got = janus.einsum(eq, *[t(x) for x in xs])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12)
    assert tuple(got.shape) == want.shape
    np.testing.assert_allclose(janus.einsum(eq, [t(x) for x in xs]).numpy(), want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("eq,shapes", [("bij,bjk->bik", [(2, 3, 2), (2, 2, 3)]), ("ii->i", [(3, 3)]),
                                       ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 2)]), ("i...->...", [(2, 3)])])
def test_einsum_gradients(eq, shapes):
    check_grad(lambda *a: janus.einsum(eq, *a), [R.standard_normal(s) for s in shapes])


def test_einsum_errors():
    with pytest.raises(RuntimeError, match="number of subscripts"):
        janus.einsum("ij,jk->ik", janus.ones(2, 3), janus.ones(3))
    with pytest.raises(ValueError, match="operands"):
        janus.einsum("ij,jk->ik", janus.ones(2, 3))
    with pytest.raises(RuntimeError, match="broadcast"):
        janus.einsum("ij,ij->ij", janus.ones(2, 3), janus.ones(2, 4))


def test_tensordot_meshgrid_stacks_logaddexp_baddbmm():
    a, b = R.standard_normal((2, 3, 4)), R.standard_normal((3, 4, 5))
    np.testing.assert_allclose(janus.tensordot(t(a), t(b), 2).numpy(), np.tensordot(a, b, 2), rtol=1e-10)
    np.testing.assert_allclose(janus.tensordot(t(a), t(b), ([1], [0])).numpy(), np.tensordot(a, b, ([1], [0])),
                               rtol=1e-10)
    x, y = np.arange(3.0), np.arange(4.0)
    for ix in ("ij", "xy"):
        got = janus.meshgrid(t(x), t(y), indexing=ix)
        for g, w in zip(got, np.meshgrid(x, y, indexing=ix)):
            np.testing.assert_array_equal(g.numpy(), w)
    np.testing.assert_array_equal(janus.hstack([t(x), t(y)]).numpy(), np.hstack([x, y]))
    np.testing.assert_array_equal(janus.vstack([t(x), t(x)]).numpy(), np.vstack([x, x]))
    p, q = R.standard_normal(5) * 30, R.standard_normal(5) * 30
    np.testing.assert_allclose(janus.logaddexp(t(p), t(q)).numpy(), np.logaddexp(p, q), rtol=1e-12)
    i, b1, b2 = R.standard_normal((2, 3, 5)), R.standard_normal((2, 3, 4)), R.standard_normal((2, 4, 5))
    np.testing.assert_allclose(janus.baddbmm(t(i), t(b1), t(b2), beta=0.5, alpha=2).numpy(),
                               0.5 * i + 2 * b1 @ b2, rtol=1e-10)


# ------------------------------------------------------------ multinomial
def test_multinomial_with_replacement_follows_the_probabilities():
    janus.manual_seed(0)
    p = np.array([0.1, 0.0, 0.6, 0.3])
    s = janus.multinomial(t(p * 7), 40000, replacement=True).numpy()  # unnormalized weights
    assert s.dtype == np.int64 and s.shape == (40000,)
    freq = np.bincount(s, minlength=4) / s.size
    assert freq[1] == 0  # a zero weight is never drawn
    np.testing.assert_allclose(freq, p, atol=0.01)


def test_multinomial_without_replacement():
    janus.manual_seed(1)
    w = t(np.array([[1.0, 2.0, 0.0, 4.0, 8.0]] * 3000))
    s = janus.multinomial(w, 3).numpy()
    assert s.shape == (3000, 3)
    assert all(len(set(r)) == 3 for r in s) and not (s == 2).any()
    # the first draw follows the weights; 8 / 15 of the rows start with category 4
    np.testing.assert_allclose(np.mean(s[:, 0] == 4), 8 / 15, atol=0.03)
    assert sorted(janus.multinomial(t([1.0, 1.0, 1.0]), 3).tolist()) == [0, 1, 2]


def test_multinomial_is_reproducible_and_checks_arguments():
    p = t(np.array([[0.2, 0.5, 0.3], [0.9, 0.05, 0.05]]))
    janus.manual_seed(5)
    a = janus.multinomial(p, 4, True)
    janus.manual_seed(5)
    b = p.multinomial(4, True)
    assert a.tolist() == b.tolist() and tuple(a.shape) == (2, 4)
    with pytest.raises(RuntimeError, match="without replacement"):
        janus.multinomial(p, 4)
    with pytest.raises(RuntimeError, match="1 or 2 dim"):
        janus.multinomial(janus.ones(2, 2, 2), 1)


def test_compile_returns_the_model():
    m = janus.nn.Linear(2, 2)
    assert janus.compile(m) is m and janus.compile(mode="max-autotune")(m) is m


# ------------------------------------------------------------ vs PyTorch
def test_against_pytorch():
    torch = pytest.importorskip("torch")
    x = R.standard_normal((4, 6)).astype(np.float32)
    tx = torch.tensor(x)
    v, i = janus.sort(t(x), 1, descending=True)
    tv, ti = torch.sort(tx, dim=1, descending=True, stable=True)
    np.testing.assert_array_equal(v.numpy(), tv.numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    np.testing.assert_array_equal(janus.topk(t(x), 3).indices.numpy(), torch.topk(tx, 3).indices.numpy())
    np.testing.assert_allclose(janus.cumsum(t(x), 1).numpy(), torch.cumsum(tx, 1).numpy(), rtol=1e-6)
    for k in (0, 1, -2):
        np.testing.assert_array_equal(janus.diag(t(x), k).numpy(), torch.diag(tx, k).numpy())
    y = R.standard_normal((6, 3)).astype(np.float32)
    np.testing.assert_allclose(janus.einsum("ij,jk->ik", t(x), t(y)).numpy(),
                               torch.einsum("ij,jk->ik", tx, torch.tensor(y)).numpy(), rtol=1e-5)
    mv, mi = janus.median(t(x), 1)
    tm = torch.median(tx, 1)
    np.testing.assert_array_equal(mv.numpy(), tm.values.numpy())
    np.testing.assert_array_equal(mi.numpy(), tm.indices.numpy())
