"""Functions composed from table ops (janus/_functions.py: asin, acos,
atan, tan, sinh, cosh, atanh, asinh, acosh, trunc/fix, frac, deg2rad, rad2deg, logit,
nansum, nanmean, count_nonzero, diff, positive, sgn, sinc, xlogy,
logaddexp2, float_power, heaviside, rot90, fliplr, flipud, index_add,
index_copy, bincount, unique, unique_consecutive, isin and in-place forms):
values against numpy (float32 and float64, domain edges, integer inputs), gradients against
central differences, in-place and arc* spellings, and PyTorch's values when
it is installed."""
import math

import numpy as np
import pytest

import janus
from gradnum import check_grad

X = np.array([-0.999, -0.7, -0.3, -1e-6, 0.0, 1e-6, 0.25, 0.6, 0.95], dtype=np.float64)
UNARY = {
    "asin": (np.arcsin, X), "acos": (np.arccos, X), "atan": (np.arctan, X * 40),
    "tan": (np.tan, X * 1.5), "sinh": (np.sinh, X * 20), "cosh": (np.cosh, X * 20), "atanh": (np.arctanh, X),
    "trunc": (np.trunc, X * 7), "fix": (np.fix, X * 7), "frac": (lambda a: a - np.trunc(a), X * 7),
    "deg2rad": (np.deg2rad, X * 360), "rad2deg": (np.rad2deg, X * 3), "sgn": (np.sign, X),
    "logit": (lambda a: np.log(a / (1 - a)), np.abs(X) * 0.98 + 0.01),
    "asinh": (np.arcsinh, X * 30), "acosh": (np.arccosh, np.abs(X) * 30 + 1),
}


@pytest.mark.parametrize("dtype,rtol", [(np.float32, 3e-6), (np.float64, 1e-13)])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_matches_numpy(name, dtype, rtol):
    ref, a = UNARY[name]
    a = a.astype(dtype)
    want = ref(a)
    got = getattr(janus, name)(janus.tensor(a))
    assert got.dtype == janus.tensor(a).dtype
    np.testing.assert_allclose(got.numpy(), want, rtol=rtol, atol=rtol * 1e-3)
    np.testing.assert_allclose(getattr(janus.tensor(a), name)().numpy(), want, rtol=rtol, atol=rtol * 1e-3)
    if name + "_" in dir(janus.Tensor):
        t = janus.tensor(a)
        assert getattr(t, name + "_")() is t
        np.testing.assert_allclose(t.numpy(), want, rtol=rtol, atol=rtol * 1e-3)


def test_domain_edges_and_integers():
    e = janus.tensor([-1.0, 1.0, 2.0, -2.0])
    assert janus.asin(e).tolist()[:2] == pytest.approx([-math.pi / 2, math.pi / 2])
    assert all(math.isnan(v) for v in janus.asin(e).tolist()[2:]) and all(math.isnan(v) for v in janus.acos(e).tolist()[2:])
    assert janus.acos(janus.tensor([1.0, -1.0])).tolist() == pytest.approx([0.0, math.pi])
    at = janus.atanh(e).tolist()
    assert at[0] == -math.inf and at[1] == math.inf and math.isnan(at[2]) and math.isnan(at[3])
    assert janus.sinh(janus.tensor([100.0])).item() == math.inf and janus.cosh(janus.tensor([-100.0])).item() == math.inf
    assert janus.sinh(janus.tensor([1e-30])).item() == pytest.approx(1e-30, rel=1e-6)  # no cancellation
    i = janus.tensor([0, 1, -1])
    assert janus.asin(i).dtype == janus.float32 and janus.asin(i).tolist() == pytest.approx([0, math.pi / 2, -math.pi / 2])
    assert janus.trunc(i).tolist() == [0, 1, -1] and janus.trunc(i).dtype == janus.int64
    assert math.copysign(1.0, janus.trunc(janus.tensor([-0.5])).item()) == -1.0  # -0.0, as C's trunc
    assert janus.logit(janus.tensor([0.0, 1.0], dtype=janus.float64), eps=1e-6).tolist() == pytest.approx([math.log(1e-6 / (1 - 1e-6)),
                                                                                        math.log((1 - 1e-6) / 1e-6)])
    x = janus.tensor([1.0, 2.0])
    assert janus.positive(x) is x and x.positive() is x
    with pytest.raises(RuntimeError, match="bool tensor"):
        janus.positive(janus.tensor([True]))
    assert janus.arcsin is janus.asin and hasattr(x, "arctanh_") and hasattr(x, "fix_")


@pytest.mark.parametrize("name,a", [("asin", X * 0.9), ("acos", X * 0.9), ("atan", X * 5), ("tan", X),
                                    ("sinh", X * 3), ("cosh", X * 3), ("atanh", X * 0.9), ("frac", X * 7 + 0.05),
                                    ("deg2rad", X), ("rad2deg", X), ("logit", np.abs(X) * 0.9 + 0.05),
                                    ("asinh", X * 30), ("acosh", np.abs(X) * 30 + 1.01)])
def test_gradients_match_finite_differences(name, a):
    check_grad(getattr(janus, name), [a])


def test_nan_reductions_and_counts():
    a = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, 2.0], [4.0, 0.0, -1.0]])
    t = janus.tensor(a)
    assert janus.nansum(t).item() == pytest.approx(np.nansum(a))
    np.testing.assert_allclose(t.nansum(1).numpy(), np.nansum(a, 1))
    np.testing.assert_allclose(janus.nansum(t, 0, keepdim=True).numpy(), np.nansum(a, 0, keepdims=True))
    np.testing.assert_allclose(janus.nanmean(t, 1).numpy(), np.nanmean(a, 1))
    assert janus.nanmean(t).item() == pytest.approx(np.nanmean(a))
    assert math.isnan(janus.nanmean(janus.tensor([math.nan, math.nan])).item())
    assert janus.count_nonzero(t).item() == np.count_nonzero(a) and janus.count_nonzero(t).dtype == janus.int64
    np.testing.assert_array_equal(janus.count_nonzero(t, dim=0).numpy(), np.count_nonzero(a, axis=0))
    with pytest.raises(RuntimeError, match="floating point"):
        janus.nanmean(janus.tensor([1, 2]))
    # NaN entries get a zero gradient, the others one
    leaf = janus.tensor(a, requires_grad=True)
    janus.nansum(leaf).backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), np.where(np.isnan(a), 0.0, 1.0))


def test_diff_matches_numpy():
    a = np.array([[1.0, 4.0, 9.0, 16.0, 25.0], [2.0, -1.0, 0.5, 0.0, 3.0]])
    for n in (0, 1, 2, 3):
        for dim in (0, 1, -1):
            np.testing.assert_allclose(janus.diff(janus.tensor(a), n=n, dim=dim).numpy(), np.diff(a, n=n, axis=dim))
    pre, app = np.array([[0.0], [1.0]]), np.array([[7.0, 8.0], [9.0, 1.0]])
    np.testing.assert_allclose(janus.tensor(a).diff(prepend=janus.tensor(pre), append=janus.tensor(app)).numpy(),
                               np.diff(a, prepend=pre, append=app))
    b = np.array([True, True, False, False, True])
    np.testing.assert_array_equal(janus.diff(janus.tensor(b)).numpy(), np.diff(b))
    check_grad(lambda x: janus.diff(x, n=2), [a[0]])


def test_against_pytorch():
    torch = pytest.importorskip("torch")
    for name, (_, a) in sorted(UNARY.items()):
        a32 = a.astype(np.float32)
        want = getattr(torch, name)(torch.tensor(a32)).numpy()
        np.testing.assert_allclose(getattr(janus, name)(janus.tensor(a32)).numpy(), want, rtol=3e-6, atol=1e-7,
                                   err_msg=name)
    a = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, 2.0]], dtype=np.float32)
    np.testing.assert_allclose(janus.nanmean(janus.tensor(a), 1).numpy(), torch.nanmean(torch.tensor(a), 1).numpy())
    assert janus.count_nonzero(janus.tensor(a)).item() == torch.count_nonzero(torch.tensor(a)).item()


def test_inverse_hyperbolics_at_the_extremes():
    # no overflow of a*a for huge arguments (log(2a) there), no cancellation
    # for large negative ones (asinh is odd), gradients finite on both sides
    for dt, big in ((janus.float32, 1e30), (janus.float64, 1e300)):
        a = janus.tensor([-big, -3e8, -1e-7, 0.0, 3e8, big], dtype=dt)
        want = np.arcsinh(np.array([-big, -3e8, -1e-7, 0.0, 3e8, big]))
        np.testing.assert_allclose(janus.asinh(a).numpy(), want, rtol=1e-6 if dt is janus.float32 else 1e-15)
        b = janus.tensor([1.0, 1.5, 3e8, big], dtype=dt)
        np.testing.assert_allclose(janus.acosh(b).numpy(), np.arccosh(np.array([1.0, 1.5, 3e8, big])),
                                   rtol=1e-6 if dt is janus.float32 else 1e-15)
    assert math.isnan(janus.acosh(janus.tensor([0.5])).item())
    x = janus.tensor([0.0, -2.0, 3e9], dtype=janus.float64, requires_grad=True)
    janus.asinh(x).sum().backward()
    assert x.grad.tolist() == pytest.approx([1 / math.sqrt(1 + v * v) for v in (0.0, -2.0, 3e9)], rel=1e-12)


def test_a_missing_name_is_not_offered_a_function_its_name_contains():
    # torch.addr (an outer product added) is not in janus; add, inside its name, is another function
    with pytest.raises(AttributeError) as e:
        janus.addr
    assert "janus.addr is not supported by janus" in str(e.value) and "; use" not in str(e.value)


def test_more_elementwise_against_numpy():
    a = np.array([-1.5, -0.25, 0.0, 0.5, 2.0, 3.0])
    t = janus.tensor(a)
    np.testing.assert_allclose(janus.sinc(t).numpy(), np.sinc(a), rtol=1e-12)
    x, y = np.array([0.0, 1.0, 2.0, 0.0, 3.0]), np.array([0.0, 2.0, 0.5, np.nan, 1e-3])
    want = np.where((x == 0) & ~np.isnan(y), 0.0, x * np.log(np.where(x == 0, 1.0, y)))
    want[3] = np.nan
    np.testing.assert_allclose(janus.xlogy(janus.tensor(x), janus.tensor(y)).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(janus.logaddexp2(t, t * 2).numpy(), np.logaddexp2(a, a * 2), rtol=1e-12)
    f = janus.float_power(janus.tensor([2, 3]), 0.5)
    assert f.dtype == janus.float64 and f.tolist() == pytest.approx([math.sqrt(2), math.sqrt(3)], rel=1e-15)
    np.testing.assert_array_equal(janus.heaviside(t, janus.tensor([0.5], dtype=janus.float64)).numpy(),
                                  np.heaviside(a, 0.5))
    m = np.arange(24).reshape(2, 3, 4)
    for k in range(-5, 6):
        for dims in ((0, 1), (1, 2), (2, 0), (-1, -2)):
            np.testing.assert_array_equal(janus.rot90(janus.tensor(m), k, dims).numpy(), np.rot90(m, k, dims))
    np.testing.assert_array_equal(janus.fliplr(janus.tensor(m)).numpy(), np.fliplr(m))
    np.testing.assert_array_equal(janus.tensor(m).flipud().numpy(), np.flipud(m))
    c = janus.tensor(a)
    assert c.cumsum_(0) is c and c.tolist() == pytest.approx(np.cumsum(a).tolist())
    n = janus.tensor([1.0, math.nan, math.inf])
    assert n.nan_to_num_(posinf=7.0).tolist() == [1.0, 0.0, 7.0]
    assert janus.tensor([2.0]).is_nonzero() and not janus.tensor([0]).is_nonzero()
    with pytest.raises(RuntimeError, match="ambiguous"):
        janus.tensor([1.0, 2.0]).is_nonzero()
    assert t.is_same_size(t * 2) and not t.is_same_size(t[:2]) and t.is_cpu


def test_sinc_and_xlogy_gradients_at_their_special_points():
    check_grad(janus.sinc, [np.array([-1.3, -0.2, 0.4, 1.7])])
    check_grad(janus.xlogy, [np.array([0.5, 1.5, 2.0]), np.array([0.3, 2.0, 4.0])])
    s = janus.tensor([0.0], requires_grad=True)
    janus.sinc(s).sum().backward()
    assert s.grad.tolist() == [0.0]  # not NaN: no 0/0 in the branch where() leaves out
    x, y = janus.tensor([0.0, 2.0], requires_grad=True), janus.tensor([0.0, 3.0], requires_grad=True)
    janus.xlogy(x, y).sum().backward()
    assert x.grad.tolist() == pytest.approx([0.0, math.log(3.0)]) and y.grad.tolist() == pytest.approx([0.0, 2 / 3])


def test_index_add_copy_and_bincount():
    base = np.arange(12, dtype=np.float64).reshape(3, 4)
    idx = np.array([0, 2, 0])
    src = np.arange(9, dtype=np.float64).reshape(3, 3)
    want = base.copy()
    np.add.at(want, (slice(None), idx), 2 * src)
    got = janus.tensor(base).index_add(1, janus.tensor(idx), janus.tensor(src), alpha=2)
    np.testing.assert_array_equal(got.numpy(), want)
    t = janus.tensor(base)
    assert t.index_add_(1, janus.tensor(idx), janus.tensor(src), alpha=2) is t
    np.testing.assert_array_equal(t.numpy(), want)
    c = janus.tensor(base).index_copy_(0, janus.tensor([2, 0]), janus.tensor(np.ones((2, 4))))
    np.testing.assert_array_equal(c.numpy(), np.array([[1.0] * 4, base[1], [1.0] * 4]))
    with pytest.raises(RuntimeError, match="source has shape"):
        janus.tensor(base).index_add_(1, janus.tensor(idx), janus.tensor(np.ones((3, 2))))
    with pytest.raises(IndexError, match="out of range"):
        janus.tensor(base).index_add_(2, janus.tensor(idx), janus.tensor(src))
    # the gradient reaches self (all ones) and source (alpha)
    check_grad(lambda b, s: janus.index_add(b, 1, janus.tensor(idx), s, alpha=2), [base, src])
    v = np.array([0, 1, 1, 3, 7, 1])
    np.testing.assert_array_equal(janus.bincount(janus.tensor(v)).numpy(), np.bincount(v))
    w = np.array([0.5, 1.0, 0.25, 2.0, 1.0, 1.0])
    np.testing.assert_allclose(janus.bincount(janus.tensor(v), janus.tensor(w), minlength=10).numpy(),
                               np.bincount(v, w, minlength=10))
    assert janus.bincount(janus.tensor([], dtype=janus.int64), minlength=3).tolist() == [0, 0, 0]
    with pytest.raises(RuntimeError, match="non-negative integral"):
        janus.bincount(janus.tensor([1, -1]))


def test_unique_unique_consecutive_and_isin():
    a = np.array([[3, 1, 2, 7], [1, 3, 3, 0]])
    vals, inv, cnt = janus.unique(janus.tensor(a), return_inverse=True, return_counts=True)
    wv, wi, wc = np.unique(a, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(vals.numpy(), wv)
    np.testing.assert_array_equal(inv.numpy(), wi.reshape(a.shape))
    np.testing.assert_array_equal(cnt.numpy(), wc)
    np.testing.assert_array_equal(janus.tensor(a).unique().numpy(), wv)
    f = janus.unique(janus.tensor([math.nan, 1.0, math.nan, 1.0])).tolist()  # NaNs stay apart, as torch's
    assert f[0] == 1.0 and len(f) == 3 and all(math.isnan(v) for v in f[1:])
    c = np.array([1, 1, 2, 2, 3, 1, 1])
    v, i, n = janus.unique_consecutive(janus.tensor(c), return_inverse=True, return_counts=True)
    assert v.tolist() == [1, 2, 3, 1] and i.tolist() == [0, 0, 1, 1, 2, 3, 3] and n.tolist() == [2, 2, 1, 2]
    e = janus.unique(janus.tensor([], dtype=janus.int64), return_counts=True)
    assert e[0].numel() == 0 and e[1].numel() == 0
    with pytest.raises(NotImplementedError, match="unique\\(dim=...\\) is not supported by janus"):
        janus.unique(janus.tensor(a), dim=0)
    np.testing.assert_array_equal(janus.isin(janus.tensor(a), janus.tensor([1, 3])).numpy(), np.isin(a, [1, 3]))
    np.testing.assert_array_equal(janus.isin(janus.tensor(a), [2], invert=True).numpy(), np.isin(a, [2], invert=True))
    assert not janus.isin(janus.tensor(a), janus.tensor([], dtype=janus.int64)).any().item()


def _unfold_np(a, d, size, step):
    d %= a.ndim
    a = np.moveaxis(a, d, -1)
    w = (a.shape[-1] - size) // step + 1
    win = np.stack([a[..., k * step:k * step + size] for k in range(w)], -2)  # [..., w, size]
    return np.moveaxis(win, -2, d)


@pytest.mark.parametrize("d,size,step", [(1, 3, 2), (1, 10, 1), (0, 2, 1), (-1, 4, 3), (2, 1, 1), (1, 0, 1)])
def test_unfold_windows_and_gradient(d, size, step):
    a = np.random.default_rng(3).standard_normal((3, 10, 4))
    got = janus.tensor(a).unfold(d, size, step).numpy()
    np.testing.assert_array_equal(got, _unfold_np(a, d, size, step))
    if size:
        check_grad(lambda x: x.unfold(d, size, step).square(), [a])


def test_unfold_errors_and_against_pytorch():
    x = janus.arange(6.0)
    with pytest.raises(RuntimeError, match="maximum size for tensor at dimension 0 is 6 but size is 7"):
        x.unfold(0, 7, 1)
    with pytest.raises(RuntimeError, match="step is 0 but must be > 0"):
        x.unfold(0, 2, 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.unfold(1, 2, 1)
    assert janus.tensor(5.0).unfold(0, 1, 1).tolist() == [5.0]
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(4).standard_normal((2, 9, 3)).astype(np.float32)
    np.testing.assert_array_equal(janus.tensor(a).unfold(1, 4, 2).numpy(), torch.tensor(a).unfold(1, 4, 2).numpy())
