"""More torch functions composed from janus ops (janus/_functions.py, the
section after embedding): aminmax, cummax/cummin, logcumsumexp, take, kron,
inner, dist, cov, corrcoef, diagflat, hsplit/vsplit/dsplit, split_with_sizes,
fmax/fmin, copysign, signbit, isposinf/isneginf/isreal, nanmedian,
quantile/nanquantile, histc, trapezoid/trapz/cumulative_trapezoid, logspace,
tril_indices/triu_indices, cartesian_prod, block_diag, atleast_1d/2d/3d,
column_stack, dstack, searchsorted/bucketize, vander, frexp, ldexp and the
in-place copysign_/ldexp_: values against numpy in float32 and float64 (NaN,
inf, empty, ties, negative dims), gradients against central differences,
values and gradients against PyTorch when it is installed, and the errors."""
import itertools
import math
import warnings

import numpy as np
import pytest

import janus
from gradnum import check_grad

NAN, INF = math.nan, math.inf
FLOATS = [(np.float32, 2e-6), (np.float64, 1e-13)]
RNG = np.random.default_rng(1234)


def J(a, dtype=None):
    return janus.tensor(np.asarray(a) if dtype is None else np.asarray(a, dtype=dtype))


def close(got, want, rtol, atol=None, dtype=True):
    got = got.numpy() if hasattr(got, "numpy") else np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if dtype:
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol if atol is None else atol, equal_nan=True)


def same(got, want):
    """Exactly equal, with the same shape and dtype (NaN equal to NaN)."""
    got = got.numpy() if hasattr(got, "numpy") else np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------------ names
NEW = ["aminmax", "cummax", "cummin", "logcumsumexp", "take", "kron", "inner", "dist", "cov", "corrcoef",
       "diagflat", "hsplit", "vsplit", "dsplit", "split_with_sizes", "fmax", "fmin", "copysign", "signbit",
       "isposinf", "isneginf", "isreal", "nanmedian", "quantile", "nanquantile", "histc", "frexp", "ldexp"]
FUNCTION_ONLY = ["trapezoid", "trapz", "cumulative_trapezoid", "logspace", "tril_indices", "triu_indices",
                 "cartesian_prod", "block_diag", "atleast_1d", "atleast_2d", "atleast_3d", "column_stack",
                 "dstack", "searchsorted", "bucketize", "vander"]


def test_names_are_functions_and_methods_as_in_torch():
    for n in NEW + FUNCTION_ONLY:
        assert callable(getattr(janus, n)), n
    for n in NEW + ["copysign_", "ldexp_"]:
        assert callable(getattr(janus.Tensor, n)), n
    for n in FUNCTION_ONLY:
        assert not hasattr(janus.Tensor, n), n
    assert janus.return_types.aminmax._fields == ("min", "max")
    assert janus.return_types.frexp._fields == ("mantissa", "exponent")


# ---------------------------------------------------------- aminmax, cum*
@pytest.mark.parametrize("dtype,tol", FLOATS)
def test_aminmax_values(dtype, tol):
    a = RNG.normal(size=(3, 4)).astype(dtype)
    r = janus.aminmax(J(a))
    assert isinstance(r, janus.return_types.aminmax)
    same(r.min, a.min()), same(r.max, a.max())
    for d in (0, 1, -1, -2):
        mn, mx = J(a).aminmax(dim=d)
        same(mn, a.min(d)), same(mx, a.max(d))
        mn, mx = janus.aminmax(J(a), dim=d, keepdim=True)
        same(mn, a.min(d, keepdims=True)), same(mx, a.max(d, keepdims=True))
    mn, mx = janus.aminmax(J(a), keepdim=True)
    assert tuple(mn.shape) == (1, 1) and mn.item() == a.min() and mx.item() == a.max()
    n = np.array([1.0, NAN, -2.0], dtype=dtype)
    assert all(math.isnan(v.item()) for v in janus.aminmax(J(n)))
    mn, mx = janus.aminmax(J(np.array([[True, False]])), dim=1)
    assert mn.tolist() == [False] and mx.tolist() == [True]
    mn, mx = janus.aminmax(J(np.zeros((2, 0), dtype)), dim=0)  # an empty result, not an error
    assert tuple(mn.shape) == (0,) and tuple(mx.shape) == (0,)
    mn, mx = janus.aminmax(janus.tensor(2.5), dim=0)
    assert mn.item() == 2.5 and mx.item() == 2.5


def _cum_ref(a, axis, larger):
    """numpy reference of torch.cummax/cummin: the running extreme and the index of its last
    occurrence; a NaN stays once seen, at the index of the latest NaN."""
    a = np.moveaxis(np.asarray(a), axis, -1)
    vals, idx = np.empty_like(a), np.zeros(a.shape, dtype=np.int64)
    for pos in np.ndindex(*a.shape[:-1]):
        best, bi = None, 0
        for i, v in enumerate(a[pos]):
            isnan = isinstance(v, (float, np.floating)) and math.isnan(v)
            bnan = best is not None and isinstance(best, (float, np.floating)) and math.isnan(best)
            if best is None or isnan or (not bnan and (v >= best if larger else v <= best)):
                best, bi = v, i
            vals[pos + (i,)], idx[pos + (i,)] = best, bi
    return np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis)


@pytest.mark.parametrize("name,larger", [("cummax", True), ("cummin", False)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_])
def test_cummax_cummin_values_ties_nan(name, larger, dtype):
    if dtype == np.bool_:
        arrays = [np.array([True, False, True, False])]
    elif dtype == np.int64:
        arrays = [RNG.integers(0, 3, size=(3, 9))]  # many ties
    else:
        arrays = [np.array([1.0, 3.0, 3.0, 2.0, NAN, 5.0, NAN, 1.0], dtype),
                  RNG.normal(size=(4, 5)).round(0).astype(dtype), np.array([-INF, INF, INF, 0.0], dtype)]
    for a in arrays:
        for d in range(-a.ndim, a.ndim):
            r = getattr(janus, name)(J(a), d)
            assert isinstance(r, getattr(janus.return_types, name))
            v, i = _cum_ref(a, d, larger)
            same(r.values, v.astype(a.dtype)), same(r.indices, i)
            r2 = getattr(J(a), name)(d)
            same(r2.indices, i)
    r = janus.cummax(J(np.zeros((2, 0))), 1)
    assert tuple(r.values.shape) == (2, 0) and r.indices.dtype == janus.int64
    r = janus.cummin(janus.tensor(4.0), 0)
    assert r.values.item() == 4.0 and r.indices.item() == 0 and r.indices.dim() == 0
    assert janus.cummax(J(np.ones(40)), 0).indices.tolist() == list(range(40))  # ties: the last one


@pytest.mark.parametrize("dtype,tol", FLOATS)
def test_logcumsumexp_values(dtype, tol):
    a = (RNG.normal(size=(3, 11)) * 40).astype(dtype)
    for d in (0, 1, -1):
        close(janus.logcumsumexp(J(a), d), np.logaddexp.accumulate(a, axis=d), tol * 4)
    close(J(a).logcumsumexp(-1), np.logaddexp.accumulate(a, axis=-1), tol * 4)
    big = np.array([1000.0, 1000.0, -1000.0, 1001.0], dtype)  # exp would overflow
    close(janus.logcumsumexp(J(big), 0), np.logaddexp.accumulate(big), tol * 4)
    edge = np.array([-INF, -INF, 0.0, INF, 1.0, NAN, 2.0], dtype)
    with np.errstate(invalid="ignore"):
        want = np.logaddexp.accumulate(edge)
    close(janus.logcumsumexp(J(edge), 0), want, tol)
    assert tuple(janus.logcumsumexp(J(np.zeros((0, 3), dtype)), 0).shape) == (0, 3)
    assert janus.logcumsumexp(janus.tensor(2.0), 0).item() == 2.0


# ---------------------------------------------------------- take, products
@pytest.mark.parametrize("dtype,tol", FLOATS)
def test_take_kron_inner_values(dtype, tol):
    a = RNG.normal(size=(3, 4)).astype(dtype)
    idx = np.array([[0, -1, 5], [11, -12, 3]])
    same(janus.take(J(a), J(idx)), np.take(a.ravel(), idx))
    same(J(a).take(janus.tensor(7)), np.take(a.ravel(), 7))
    assert tuple(janus.take(J(a), J(np.zeros(0, np.int64))).shape) == (0,)
    for sa, sb in [((2, 3), (4,)), ((2,), (3, 2)), ((), (2, 2)), ((2, 1, 3), (3, 2, 2)),
                   ((2, 2, 1, 2, 1), (1, 2, 2, 1, 2)), ((0, 2), (3, 1))]:  # 5 dims: the index_select way
        x, y = RNG.normal(size=sa).astype(dtype), RNG.normal(size=sb).astype(dtype)
        close(janus.kron(J(x), J(y)), np.kron(x, y), tol)
        close(J(x).kron(J(y)), np.kron(x, y), tol)
    for sa, sb in [((2, 3), (4, 3)), ((3,), (3,)), ((), (2, 2)), ((2, 1, 3), (3,)), ((2, 0), (3, 0))]:
        x, y = RNG.normal(size=sa).astype(dtype), RNG.normal(size=sb).astype(dtype)
        close(janus.inner(J(x), J(y)), np.inner(x, y), tol * 4)
        close(J(x).inner(J(y)), np.inner(x, y), tol * 4)
    assert janus.kron(janus.tensor([1, 2]), janus.tensor([1.0, 0.5])).dtype == janus.float32


@pytest.mark.parametrize("dtype,tol", FLOATS)
@pytest.mark.parametrize("p", [2, 1, 0, INF, -INF, 0.5, 3, -1, 1.5, "fro"])
def test_dist_values(dtype, tol, p):
    a = np.array([[1.0, 2.0, 0.0], [0.0, -1.0, 3.0]], dtype)
    b = np.array([1.0, 0.0, 0.5], dtype)  # broadcast; one difference is zero
    d = (a - b).ravel()
    with np.errstate(divide="ignore"):
        want = np.linalg.norm(d, ord=2 if p == "fro" else p)
    if p == "fro":
        p = 2
    close(janus.dist(J(a), J(b), p), np.asarray(want, dtype), tol * 4)
    close(J(a).dist(J(b), p=p), np.asarray(want, dtype), tol * 4)
    assert janus.dist(J(a), J(a), p).item() == 0.0  # also for p < 0: sum(|0| ** p) = inf, inf ** (1 / p) = 0
    assert janus.dist(J([1.0, 2.0]), J([1.0, 3.0]), p).item() == (0.0 if p in (-1, -INF) else 1.0)


# ------------------------------------------------------------ statistics
@pytest.mark.parametrize("dtype,tol", FLOATS)
def test_cov_corrcoef_values(dtype, tol):
    m = RNG.normal(size=(3, 7)).astype(dtype)
    fw = RNG.integers(0, 4, 7)
    fw[0] = 2
    aw = RNG.uniform(0.1, 2.0, 7).astype(dtype)
    for c in (1, 0, 2):
        close(janus.cov(J(m), correction=c), np.cov(m, ddof=c).astype(dtype), tol * 10)
        close(J(m).cov(correction=c, fweights=J(fw)), np.cov(m, ddof=c, fweights=fw).astype(dtype), tol * 10)
        close(janus.cov(J(m), correction=c, aweights=J(aw)), np.cov(m, ddof=c, aweights=aw).astype(dtype), tol * 10)
        close(janus.cov(J(m), correction=c, fweights=J(fw), aweights=J(aw)),
              np.cov(m, ddof=c, fweights=fw, aweights=aw).astype(dtype), tol * 10)
    close(janus.cov(J(m[0])), np.cov(m[0]).astype(dtype), tol * 10)  # one variable: 0-d
    assert janus.cov(J(m[0])).dim() == 0
    close(janus.cov(J(m[:1])), np.cov(m[:1]).astype(dtype), tol * 10)
    i = np.array([[1, 2, 4], [3, 1, 0]])
    close(janus.cov(J(i)), np.cov(i).astype(np.float32), 1e-6)  # integers: float32
    close(janus.corrcoef(J(m)), np.corrcoef(m).astype(dtype), tol * 10)
    close(J(m).corrcoef(), np.corrcoef(m).astype(dtype), tol * 10)
    assert janus.corrcoef(J(m[0])).item() == 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        want = np.corrcoef(np.array([[1.0, 1, 1], [1, 5, 2]], dtype))
    # a constant row: NaN
    close(janus.corrcoef(J(np.array([[1.0, 1, 1], [1, 5, 2]], dtype))), want.astype(dtype), tol * 10)
    r = janus.corrcoef(J(np.array([[1.0, 2, 4], [2.0, 4, 8.0001]], dtype)))
    assert float(janus.amax(r)) <= 1.0  # clipped
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = janus.cov(J(np.array([3.0, 4.0], dtype)), correction=2)
        assert any("degrees of freedom is <= 0" in str(x.message) for x in w)
    assert r.item() == INF
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = janus.cov(J(np.zeros((2, 0), dtype)))
    assert tuple(r.shape) == (2, 2) and all(math.isnan(v) for v in r.reshape(-1).tolist())
    assert tuple(janus.cov(J(np.zeros((0, 3), dtype))).shape) == (0, 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nanmedian_values(dtype):
    def lower_nanmedian(a, axis=None, keepdims=False):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.nanquantile(a, 0.5, axis=axis, method="lower", keepdims=keepdims).astype(a.dtype)
    for a in [np.array([1.0, NAN, 3.0, 2.0, NAN]), np.array([NAN, NAN]), RNG.normal(size=8),
              np.array([1.0, 2, 2, INF, INF, INF]), np.array([4.0, 1.0, 3.0, 2.0])]:
        a = a.astype(dtype)
        same(janus.nanmedian(J(a)), lower_nanmedian(a))
        same(J(a).nanmedian(), lower_nanmedian(a))
    assert math.isnan(janus.nanmedian(J(np.zeros(0, dtype))).item())
    m = np.array([[NAN, NAN, 1.0], [NAN, 3.0, 2.0], [5.0, 4, 6], [NAN, NAN, NAN]], dtype)
    for d in (0, 1, -1):
        for kd in (False, True):
            r = janus.nanmedian(J(m), d, kd)
            assert isinstance(r, janus.return_types.nanmedian)
            same(r.values, lower_nanmedian(m, d, kd))
            picked = np.take_along_axis(m, r.indices.numpy() if kd else np.expand_dims(r.indices.numpy(), d), d)
            np.testing.assert_array_equal(picked, lower_nanmedian(m, d, True))  # the index names the value
    assert janus.nanmedian(J(m), 1).indices.tolist() == [2, 2, 0, 0]  # all NaN: the first
    same(janus.nanmedian(J(np.array([3, 1, 2]))), np.array(2))
    r = janus.nanmedian(janus.tensor(3.0), 0)
    assert r.values.item() == 3.0 and r.indices.item() == 0


MODES = ["linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("dtype,tol", FLOATS)
@pytest.mark.parametrize("mode", MODES)
def test_quantile_values_against_numpy(dtype, tol, mode):
    # dyadic q: the same in float32 and float64, so numpy's float64 ranks are torch's
    qs = np.array([0.0, 0.125, 0.25, 0.375, 0.5, 0.8125, 1.0], dtype)
    a = RNG.normal(size=(3, 9)).astype(dtype)
    for d in (None, 0, 1, -1):
        for kd in (False, True):
            got = janus.quantile(J(a), J(qs), d, kd, interpolation=mode)
            close(got, np.quantile(a, qs, axis=d, keepdims=kd, method=mode).astype(dtype), tol)
            got = J(a).quantile(0.375, d, kd, interpolation=mode)
            close(got, np.asarray(np.quantile(a, 0.375, axis=d, keepdims=kd, method=mode), dtype), tol)
    a[0, 3] = NAN
    a[2, :] = NAN
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = np.nanquantile(a, qs, axis=1, method=mode).astype(dtype)
    close(janus.nanquantile(J(a), J(qs), 1, interpolation=mode), want, tol)
    close(J(a).nanquantile(J(qs), -1, interpolation=mode), want, tol)
    got = janus.quantile(J(a), J(qs), 1, interpolation=mode).numpy()  # a NaN in a row: NaN
    assert np.isnan(got[:, 0]).all() and np.isnan(got[:, 2]).all() and not np.isnan(got[:, 1]).any()
    close(janus.quantile(J(a[1]), J(qs), interpolation=mode), np.quantile(a[1], qs, method=mode).astype(dtype), tol)


def test_quantile_shapes_and_special_values():
    x = janus.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert tuple(janus.quantile(x, 0.5, keepdim=True).shape) == (1, 1)
    assert tuple(janus.quantile(x, janus.tensor([0.5, 0.2]), keepdim=True).shape) == (2, 1, 1)
    assert tuple(janus.quantile(x, janus.tensor(0.5), dim=0).shape) == (2,)
    assert tuple(janus.quantile(janus.tensor(3.0), janus.tensor([0.5, 0.2]), dim=0).shape) == (2,)
    assert janus.quantile(janus.tensor(3.0), 0.5, dim=0, keepdim=True).dim() == 0
    # float32 q rounds first and ranks are float64: 0.7f * 10 is just under 7 (torch's lower gives 6)
    assert janus.quantile(janus.arange(11.0), 0.7, interpolation="lower").item() == 6.0
    assert janus.quantile(janus.arange(11.0), 0.05, interpolation="nearest").item() == 1.0
    assert janus.quantile(janus.arange(11.0, dtype=janus.float64), 0.05, interpolation="nearest").item() == 0.0
    # torch's lerp from the nearer end: the same NaNs with infinities
    r = janus.quantile(janus.tensor([0.0, INF]), janus.tensor([0.0, 0.3, 0.7, 1.0])).tolist()
    assert r[0] == 0.0 and r[1] == INF and math.isnan(r[2]) and math.isnan(r[3])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_histc_values(dtype):
    a = RNG.normal(size=1000).astype(dtype)
    h = janus.histc(J(a), bins=17)
    assert h.dtype == janus.tensor(a).dtype and not h.requires_grad
    # data range; values exactly on an inner edge may round to either side: compare totals and most bins
    want = np.histogram(a, bins=17, range=(a.min(), a.max()))[0]
    assert h.sum().item() == 1000 and np.abs(h.numpy() - want).sum() <= 2
    b = np.array([1.0, 2.0, 1.0, 4.0, 0.5, NAN, 3.0, 3.5], dtype)  # out of range and NaN ignored
    same(janus.histc(J(b), bins=4, min=1, max=3), np.histogram(b[~np.isnan(b)], bins=4, range=(1, 3))[0].astype(dtype))
    same(J(b).histc(4, 1, 3), np.array([2, 0, 1, 1], dtype))  # 3.0 (max) counts in the last bin
    same(janus.histc(J(np.array([1.0, 1.0], dtype)), bins=4), np.array([0, 0, 2, 0], dtype))  # [0, 2]
    same(janus.histc(J(np.zeros(0, dtype)), bins=3), np.zeros(3, dtype))
    x = janus.tensor([1.0, 2.0], requires_grad=True)
    assert not janus.histc(x, bins=4).requires_grad


# ------------------------------------------------------------- integration
def _cumtrapz(y, x=None, dx=1.0, axis=-1):
    y = np.moveaxis(y, axis, -1)
    if x is None:
        parts = dx * (y[..., 1:] + y[..., :-1]) / 2
    else:
        x = np.moveaxis(np.broadcast_to(x, y.shape) if np.ndim(x) > 1 else x, axis, -1) if np.ndim(x) > 1 else x
        parts = np.diff(x, axis=-1) * (y[..., 1:] + y[..., :-1]) / 2
    return np.moveaxis(np.cumsum(parts, -1), -1, axis)


@pytest.mark.parametrize("dtype,tol", FLOATS)
def test_trapezoid_values(dtype, tol):
    y = RNG.normal(size=(3, 5)).astype(dtype)
    xs = np.sort(RNG.normal(size=5)).astype(dtype)
    x2 = np.sort(RNG.normal(size=(3, 5)), 1).astype(dtype)
    for f in ("trapezoid", "trapz"):
        fn = getattr(janus, f)
        close(fn(J(y)), np.trapezoid(y), tol * 4)
        close(fn(J(y), dx=0.3, dim=0), np.trapezoid(y, dx=0.3, axis=0), tol * 4)
        close(fn(J(y), J(xs)), np.trapezoid(y, xs), tol * 4)
        close(fn(J(y), J(x2)), np.trapezoid(y, x2), tol * 4)
        close(fn(J(y), J(xs[:3]), dim=-2), np.trapezoid(y, xs[:3], axis=0), tol * 4)
    close(janus.cumulative_trapezoid(J(y)), _cumtrapz(y), tol * 4)
    close(janus.cumulative_trapezoid(J(y), dx=2.5, dim=0), _cumtrapz(y, dx=2.5, axis=0), tol * 4)
    close(janus.cumulative_trapezoid(J(y), J(xs)), _cumtrapz(y, xs), tol * 4)
    close(janus.cumulative_trapezoid(J(y), J(x2)), _cumtrapz(y, x2), tol * 4)
    same(janus.trapezoid(J(np.zeros((2, 0), dtype))), np.zeros(2, dtype))  # no samples: 0
    same(janus.trapezoid(J(np.ones((2, 1), dtype))), np.zeros(2, dtype))
    assert tuple(janus.cumulative_trapezoid(J(np.zeros((2, 0), dtype))).shape) == (2, 0)
    assert tuple(janus.cumulative_trapezoid(J(np.zeros((2, 1), dtype))).shape) == (2, 0)
    i = janus.tensor([1, 2, 4])
    assert janus.trapezoid(i).item() == 4.5 and janus.trapezoid(i).dtype == janus.float32
    assert janus.cumulative_trapezoid(i).tolist() == [1.5, 4.5]


# -------------------------------------------------------------- factories
def test_logspace_and_triangle_indices():
    close(janus.logspace(0, 2, 3), np.logspace(0, 2, 3).astype(np.float32), 1e-7)
    close(janus.logspace(-3, 5.5, 11, dtype=janus.float64), np.logspace(-3, 5.5, 11), 1e-14)
    close(janus.logspace(0, 3, 4, base=-2, dtype=janus.float64), np.array([1.0, -2, 4, -8]), 0)
    close(janus.logspace(1, 10, 10, base=2.0), 2.0 ** np.arange(1, 11, dtype=np.float32), 0)
    same(janus.logspace(0, 2, 3, dtype=janus.int64), np.array([1, 10, 100]))
    same(janus.logspace(0.5, 2.5, 3, dtype=janus.int64), np.array([1, 10, 100]))  # integer start/end, as torch
    assert tuple(janus.logspace(0, 2, 0).shape) == (0,) and janus.logspace(0, 2, 1).tolist() == [1.0]
    assert janus.logspace(0, 1, 2, requires_grad=True).requires_grad
    o = janus.zeros(1)
    assert janus.logspace(0, 1, 2, out=o) is o and o.tolist() == pytest.approx([1.0, 10.0])
    for row, col, off in [(3, 4, 0), (3, 4, 1), (3, 4, -5), (3, 4, 10), (0, 0, 0), (4, 3, -1), (1, 5, 2)]:
        lo, up = np.tril_indices(row, off, col), np.triu_indices(row, off, col)
        same(janus.tril_indices(row, col, off), np.stack(lo).astype(np.int64).reshape(2, -1))
        same(janus.triu_indices(row, col, off), np.stack(up).astype(np.int64).reshape(2, -1))
    assert janus.tril_indices(2, 2, dtype=janus.int32).dtype == janus.int32


# --------------------------------------------------------------- joining
@pytest.mark.parametrize("dtype,tol", FLOATS)
def test_joining_and_splitting(dtype, tol):
    a, b, c = (np.arange(n, dtype=dtype) + n for n in (2, 3, 2))
    same(janus.cartesian_prod(J(a), J(b), J(c)), np.array(list(itertools.product(a, b, c)), dtype))
    t = J(a)
    assert janus.cartesian_prod(t) is t
    assert tuple(janus.cartesian_prod(J(a), J(np.zeros(0, dtype))).shape) == (0, 2)
    blocks = [np.array(2.0, dtype), np.array([1.0, 2.0], dtype), RNG.normal(size=(2, 3)).astype(dtype),
              np.zeros((0, 2), dtype)]
    want = np.zeros((4, 8), dtype)
    want[0, 0], want[1, 1:3], want[2:4, 3:6] = blocks[0], blocks[1], blocks[2]
    same(janus.block_diag(*[J(x) for x in blocks]), want)
    assert tuple(janus.block_diag().shape) == (1, 0) and janus.block_diag().dtype == janus.float32
    assert janus.block_diag(J([1]), J([True])).dtype == janus.int64
    for f, nf in [(janus.atleast_1d, np.atleast_1d), (janus.atleast_2d, np.atleast_2d),
                  (janus.atleast_3d, np.atleast_3d)]:
        for shp in [(), (3,), (2, 3), (1, 2, 3), (1, 2, 3, 4)]:
            x = RNG.normal(size=shp).astype(dtype)
            same(f(J(x)), nf(x))
        x, y = np.array(1.0, dtype), np.ones(2, dtype)
        r = f(J(x), J(y))
        assert isinstance(r, tuple) and len(r) == 2
        same(r[0], nf(x)), same(r[1], nf(y))
        same(f([J(x), J(y)])[1], nf(y))
        assert f() == ()
    m = J(np.ones((2, 3), dtype))
    assert janus.atleast_2d(m) is m and janus.atleast_1d(m) is m
    cols = [np.array([1.0, 2.0], dtype), np.array([[3.0, 4], [5, 6]], dtype), np.array([7.0, 8.0], dtype)]
    same(janus.column_stack([J(x) for x in cols]), np.column_stack(cols))
    same(janus.column_stack([janus.tensor(1), janus.tensor(2)]), np.array([[1, 2]]))
    p, q = np.ones((2, 2), dtype), np.ones((2, 2, 3), dtype)
    same(janus.dstack([J(p), J(q)]), np.dstack([p, q]))
    same(janus.dstack([J(a), J(c)]), np.dstack([a, c]))
    x = RNG.normal(size=(4, 6, 6)).astype(dtype)
    for f, nf, arg in [("hsplit", np.hsplit, 3), ("hsplit", np.hsplit, [1, 4]), ("vsplit", np.vsplit, 2),
                       ("vsplit", np.vsplit, [3, 9]), ("dsplit", np.dsplit, 6), ("dsplit", np.dsplit, [2, 2, 5])]:
        got, want = getattr(janus, f)(J(x), arg), nf(x, arg)
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w)
        assert len(getattr(J(x), f)(arg)) == len(want)
    same(janus.hsplit(J(a), 2)[1], np.hsplit(a, 2)[1])  # 1-d: dim 0
    same(janus.hsplit(J(x), sections=2)[0], np.hsplit(x, 2)[0])
    same(janus.hsplit(J(x), indices=[2])[1], np.hsplit(x, [2])[1])
    parts = janus.split_with_sizes(J(x), [2, 0, 4], dim=-1)
    for g, w in zip(parts, np.split(x, [2, 2], axis=-1)):
        same(g, w)
    assert [tuple(p.shape) for p in J(x).split_with_sizes([1, 3])] == [(1, 6, 6), (3, 6, 6)]


# ------------------------------------------------------------ elementwise
@pytest.mark.parametrize("dtype,tol", FLOATS)
def test_elementwise_values(dtype, tol):
    u = np.array([1.0, NAN, NAN, 2.0, -0.0, 0.0, -INF, 3.0], dtype)
    v = np.array([NAN, 2.0, NAN, 3.0, 0.0, -0.0, 1.0, -INF], dtype)
    same(janus.fmax(J(u), J(v)), np.fmax(u, v))
    same(janus.fmin(J(u), J(v)), np.fmin(u, v))
    same(J(u).fmax(J(v)), np.fmax(u, v))
    same(janus.fmax(J(u).reshape(8, 1), J(v)), np.fmax(u.reshape(8, 1), v))  # broadcasts
    same(janus.fmin(J([1, 5]), J(np.array([2.0, 3.0], dtype))), np.array([1.0, 3.0], dtype))  # torch's promotion
    w = np.array([-0.0, 0.0, -1.0, 2.0, -INF, INF, NAN, 1e-30, -1e-30], dtype)
    same(janus.signbit(J(w)), np.signbit(w))
    same(J(w).signbit(), np.signbit(w))
    same(janus.signbit(J([-1, 0, 2])), np.array([True, False, False]))
    same(janus.signbit(J([True])), np.array([False]))
    same(janus.isposinf(J(w)), np.isposinf(w)), same(janus.isneginf(J(w)), np.isneginf(w))
    same(J(w).isposinf(), np.isposinf(w)), same(J(w).isneginf(), np.isneginf(w))
    same(janus.isposinf(J([1, 2])), np.array([False, False]))
    same(janus.isreal(J(w)), np.isreal(w)), same(J([1, 2]).isreal(), np.array([True, True]))
    x = np.array([1.0, -2.0, 0.0, -0.0, INF, NAN, 3.5], dtype)
    for other in (-1, -0.0, 0.0, 2.5, -INF):
        same(janus.copysign(J(x), other), np.copysign(x, np.asarray(other, dtype)))
    s = np.array([-0.0, 0.0, -1.0, 3.0, INF, -INF, 1.0], dtype)
    same(janus.copysign(J(x), J(s)), np.copysign(x, s))
    same(J(x).copysign(J(s)), np.copysign(x, s))
    same(janus.copysign(J([1, -2, 0]), -1), np.array([-1.0, -2.0, -0.0], np.float32))  # integers: float32
    t = J(x)
    assert t.copysign_(J(s)) is t
    same(t, np.copysign(x, s))
    m = np.array([0.0, -0.0, 1.0, 3.0, -5.5, INF, -INF, NAN, 0.75, 123456.789, 1e-30], dtype)
    got = janus.frexp(J(m))
    assert isinstance(got, janus.return_types.frexp) and got.exponent.dtype == janus.int32
    wm, we = np.frexp(m)
    same(got.mantissa, wm), same(got.exponent, np.where(np.isfinite(m), we, 0).astype(np.int32))
    same(J(m).frexp().mantissa, wm)
    e = np.array([3, -1, 0, 10, -20, 1, 2, 0, 5, -3, 100])
    same(janus.ldexp(J(m), J(e)), np.ldexp(m, e).astype(dtype))
    same(J(m).ldexp(J(e)), np.ldexp(m, e).astype(dtype))
    t = J(m)
    assert t.ldexp_(J(e)) is t
    same(t, np.ldexp(m, e).astype(dtype))
    same(janus.ldexp(J([1, 2]), J([3, -1])), np.array([8.0, 1.0], np.float32))


def test_frexp_is_exact_at_the_extremes():
    f64 = np.array([5e-324, 2.0 ** -1074 * 3, 2.0 ** -1022, np.nextafter(2.0 ** -1022, 0), 1.7e308, -2.0 ** 1023,
                    np.finfo(np.float64).max, 1 - 2.0 ** -53, 0.1, 2.0 ** 52 + 1])
    m, e = janus.frexp(J(f64))
    wm, we = np.frexp(f64)
    same(m, wm), same(e, we.astype(np.int32))
    f32 = np.array([1e-40, 1.4e-45, -2.0 ** -126, 3e38, np.finfo(np.float32).max, 1 - 2.0 ** -24, 2.0 ** 23 + 1],
                   np.float32)
    m, e = janus.frexp(J(f32))
    wm, we = np.frexp(f32)
    same(m, wm), same(e, we.astype(np.int32))
    p = 2.0 ** np.arange(-1074, 1024, 7.0)  # powers of two, where log2 lands on an integer
    m, e = janus.frexp(J(p))
    wm, we = np.frexp(p)
    same(m, wm), same(e, we.astype(np.int32))


# ------------------------------------------------------------ search, vander
@pytest.mark.parametrize("dtype,tol", FLOATS)
def test_searchsorted_bucketize_vander(dtype, tol):
    s = np.array([1.0, 3, 3, 5, 7], dtype)
    v = np.array([[0.0, 3, 8], [5, 7.5, 7]], dtype)
    for side in ("left", "right"):
        same(janus.searchsorted(J(s), J(v), side=side), np.searchsorted(s, v, side=side))
        same(janus.searchsorted(J(s), J(v), right=side == "right"), np.searchsorted(s, v, side=side))
        same(janus.searchsorted(J(s), 3.0, side=side), np.asarray(np.searchsorted(s, 3.0, side=side)))
        same(janus.bucketize(J(v), J(s), right=side == "right"), np.searchsorted(s, v, side=side))
    assert janus.searchsorted(J(s), J(v), out_int32=True).dtype == janus.int32
    assert janus.bucketize(J(v), J(s), out_int32=True).dtype == janus.int32
    assert janus.searchsorted(J(s), J(np.array([NAN], dtype))).tolist() == [5]  # NaN goes last
    nd = np.sort(RNG.normal(size=(2, 3, 6)).astype(dtype), -1)
    vals = RNG.normal(size=(2, 3, 4)).astype(dtype)
    want = np.stack([np.stack([np.searchsorted(nd[i, j], vals[i, j]) for j in range(3)]) for i in range(2)])
    same(janus.searchsorted(J(nd), J(vals)), want)
    perm = np.argsort(s[::-1].copy(), kind="stable")
    same(janus.searchsorted(J(s[::-1].copy()), J(v), sorter=J(perm)), np.searchsorted(s[::-1], v, sorter=perm))
    same(janus.searchsorted(J(np.zeros(0, dtype)), J(v)), np.zeros((2, 3), np.int64))
    same(janus.searchsorted(J([1, 3, 5]), J(np.array([2.5, 3.0], dtype))), np.array([1, 1]))
    x = np.array([1.5, -2.0, 3.0, 0.0], dtype)
    for n in (None, 0, 1, 2, 6):
        for inc in (False, True):
            close(janus.vander(J(x), n, inc), np.vander(x, n, inc).astype(dtype), tol)
    same(janus.vander(J([1, 2]), 3), np.vander(np.array([1, 2]), 3))
    same(janus.vander(J([True, False])), np.array([[1, 1], [0, 1]]))
    assert tuple(janus.vander(J(np.zeros(0, dtype))).shape) == (0, 0)


@pytest.mark.parametrize("dtype,tol", FLOATS)
def test_diagflat_and_out(dtype, tol):
    x = RNG.normal(size=(2, 2)).astype(dtype)
    for off in (0, 1, -2):
        same(janus.diagflat(J(x), off), np.diagflat(x, off))
        same(J(x).diagflat(offset=off), np.diagflat(x, off))
    same(janus.diagflat(janus.tensor(3.0), -1), np.diagflat([3.0], -1).astype(np.float32))
    same(janus.diagflat(J(np.zeros(0, dtype)), 1), np.zeros((1, 1), dtype))
    o = janus.empty(0, dtype=janus.tensor(x).dtype)
    r = janus.fmax(J(x), J(x.T), out=o)
    assert r is o
    same(o, np.fmax(x, x.T))
    mn, mx = janus.empty(0), janus.empty(0)
    r = janus.aminmax(J(np.array([3.0, 1.0, 2.0], np.float32)), out=(mn, mx))
    assert r.min is mn and r.max is mx and mn.item() == 1.0 and mx.item() == 3.0
    vals, idx = janus.empty(0), janus.empty(0, dtype=janus.int64)
    janus.cummax(J(np.array([1.0, 3.0, 2.0], np.float32)), 0, out=(vals, idx))
    assert vals.tolist() == [1.0, 3.0, 3.0] and idx.tolist() == [0, 1, 1]


# --------------------------------------------------------------- gradients
def _x(*shape, seed=0, lo=-2.0, hi=2.0):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape)


GRADS = {
    "aminmax": (lambda x: (lambda r: r.min * 2 + r.max)(janus.aminmax(x, dim=1)), [_x(3, 4)]),
    "aminmax_all": (lambda x: (lambda r: r.min * 3 - r.max)(janus.aminmax(x)), [_x(3, 4)]),
    "cummax": (lambda x: janus.cummax(x, 1).values, [_x(3, 6)]),
    "cummin": (lambda x: janus.cummin(x, -2).values, [_x(5, 3)]),
    "logcumsumexp": (lambda x: janus.logcumsumexp(x, 1), [_x(3, 7) * 5]),
    "take": (lambda x: janus.take(x, janus.tensor([[0, -1, 3], [3, 5, 0]])), [_x(2, 3)]),
    "kron": (janus.kron, [_x(2, 3), _x(3, 1, 2, seed=1)]),
    "inner": (janus.inner, [_x(2, 3), _x(4, 3, seed=1)]),
    "dist2": (lambda a, b: janus.dist(a, b), [_x(2, 3), _x(3, seed=1)]),
    "dist1": (lambda a, b: janus.dist(a, b, 1), [_x(2, 3), _x(3, seed=1)]),
    "dist3": (lambda a, b: janus.dist(a, b, 3), [_x(2, 3), _x(3, seed=1)]),
    "dist0.5": (lambda a, b: janus.dist(a, b, 0.5), [_x(2, 3), _x(3, seed=1)]),
    "dist-1.5": (lambda a, b: janus.dist(a, b, -1.5), [_x(2, 3), _x(3, seed=1)]),
    "distinf": (lambda a, b: janus.dist(a, b, INF), [_x(2, 3), _x(3, seed=1)]),
    "dist-inf": (lambda a, b: janus.dist(a, b, -INF), [_x(2, 3), _x(3, seed=1)]),
    "cov": (lambda x: janus.cov(x), [_x(3, 5)]),
    "cov_aweights": (lambda x, w: janus.cov(x, aweights=w, fweights=janus.tensor([1, 2, 0, 1, 3])),
                     [_x(2, 5), _x(5, seed=2, lo=0.2)]),
    "corrcoef": (janus.corrcoef, [_x(3, 6)]),
    "diagflat": (lambda x: janus.diagflat(x, -1), [_x(2, 2)]),
    "hsplit": (lambda x: janus.hsplit(x, [1, 3])[1] * 2, [_x(2, 4)]),
    "vsplit": (lambda x: janus.vsplit(x, 2)[1], [_x(4, 2)]),
    "dsplit": (lambda x: janus.dsplit(x, [1])[1], [_x(2, 1, 3)]),
    "split_with_sizes": (lambda x: janus.split_with_sizes(x, [1, 2], 1)[1], [_x(2, 3)]),
    "fmax": (janus.fmax, [_x(2, 3), _x(3, seed=1)]),
    "fmin": (janus.fmin, [_x(2, 3), _x(3, seed=1)]),
    "copysign": (lambda a, b: janus.copysign(a, b), [_x(2, 3), _x(2, 3, seed=1)]),
    "copysign_number": (lambda a: janus.copysign(a, -0.0), [_x(2, 3)]),
    "nanmedian": (janus.nanmedian, [np.array([3.0, NAN, 1.0, 2.5, NAN, -1.0])]),
    "nanmedian_dim": (lambda x: janus.nanmedian(x, 1).values,
                      [np.array([[3.0, NAN, 1.0, 2.5], [NAN, NAN, 0.5, -1.0]])]),
    "quantile_scalar_q": (lambda x: janus.quantile(x, 0.3), [_x(7)]),
    "nanquantile_dim": (lambda x: janus.nanquantile(x, janus.tensor([0.1, 0.5, 0.9], dtype=janus.float64), 1, True),
                        [np.array([[3.0, NAN, 1.0, 2.5, 0.2], [0.1, -2.0, 0.5, -1.0, 4.0]])]),
    "quantile_wrt_q": (lambda x, q: janus.quantile(x, q, 0), [_x(6, 2), np.array([0.15, 0.55, 0.95])]),
    "trapezoid_x": (lambda y, x: janus.trapezoid(y, x), [_x(2, 4), np.array([0.0, 0.3, 1.1, 2.0])]),
    "trapezoid_dx": (lambda y: janus.trapezoid(y, dx=0.7, dim=0), [_x(3, 2)]),
    "trapz": (lambda y, x: janus.trapz(y, x, dim=0), [_x(3, 2), _x(3, 2, seed=1)]),
    "cumulative_trapezoid": (lambda y, x: janus.cumulative_trapezoid(y, x), [_x(2, 4), np.array([0.0, 0.3, 1.1, 2.0])]),
    "cumulative_trapezoid_dx": (lambda y: janus.cumulative_trapezoid(y, dx=2.0), [_x(2, 4)]),
    "cartesian_prod": (janus.cartesian_prod, [_x(2), _x(3, seed=1)]),
    "block_diag": (janus.block_diag, [_x(2, 2), _x(3, seed=1), _x(1, 2, seed=2)]),
    "atleast_3d": (lambda x: janus.atleast_3d(x) * 2, [_x(3)]),
    "column_stack": (lambda a, b: janus.column_stack([a, b]), [_x(3), _x(3, 2, seed=1)]),
    "dstack": (lambda a, b: janus.dstack([a, b]), [_x(2, 2), _x(2, 2, seed=1)]),
    "vander": (lambda x: janus.vander(x, 4), [_x(3)]),
    "frexp": (lambda x: janus.frexp(x).mantissa, [_x(5) * 20]),
    "ldexp": (janus.ldexp, [_x(4), np.array([1.0, -2.0, 0.5, 3.0])]),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_match_finite_differences(name):
    f, arrays = GRADS[name]
    check_grad(f, arrays, rtol=1e-5, atol=1e-7)


def test_gradients_at_special_points():
    x = janus.tensor([1.0, 3.0, 3.0, 2.0], requires_grad=True)
    janus.cummax(x, 0).values.sum().backward()  # every position after index 1 names index 2 (the last 3)
    assert x.grad.tolist() == [1.0, 1.0, 2.0, 0.0]
    x = janus.tensor([1.0, 3.0, 3.0], requires_grad=True)
    mn, mx = janus.aminmax(x)
    (mx + 2 * mn).backward()
    assert x.grad.tolist() == [2.0, 0.5, 0.5]  # ties share
    a, b = janus.tensor([1.0, 2.0], requires_grad=True), janus.tensor([1.0, 3.0], requires_grad=True)
    janus.fmin(a, b).sum().backward()
    assert a.grad.tolist() == [0.5, 1.0] and b.grad.tolist() == [0.5, 0.0]  # a tie shares, as torch's
    a, b = janus.tensor([NAN, NAN, 1.0], requires_grad=True), janus.tensor([NAN, 2.0, NAN], requires_grad=True)
    janus.fmax(a, b).sum().backward()
    assert a.grad.tolist() == [1.0, 0.0, 1.0] and b.grad.tolist() == [0.0, 1.0, 0.0]
    a, b = janus.tensor([INF, -0.0, 2.0 ** -149]), janus.tensor([INF, -0.0, 2.0 ** -149])
    assert janus.fmax(a, b).tolist() == [INF, 0.0, 2.0 ** -149] and janus.fmax(a, b)[1].item() == 0.0
    assert math.copysign(1, janus.fmin(a, b)[1].item()) == -1.0  # (-0, -0): -0
    x = janus.tensor([0.0, -2.0, 3.0], requires_grad=True)
    janus.copysign(x, janus.tensor([-1.0, -1.0, -1.0])).sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, -1.0]
    x = janus.tensor([1.0, 2.0, 2.0, 3.0], requires_grad=True)
    janus.nanmedian(x).backward()
    assert x.grad.tolist() == [0.0, 0.5, 0.5, 0.0]  # evenly over the equal elements
    x = janus.tensor([NAN, NAN], requires_grad=True)
    janus.nanmedian(x).backward()
    assert x.grad.tolist() == [0.5, 0.5]
    x = janus.tensor([1.0, INF, INF], requires_grad=True)
    r = janus.nanmedian(x)
    r.backward()
    assert r.item() == INF and x.grad.tolist() == [0.0, 0.5, 0.5]
    x = janus.tensor([1.0, 2.0], requires_grad=True)
    janus.dist(x, janus.tensor([1.0, 3.0]), 0).backward()  # p = 0: in the graph, gradient 0
    assert x.grad is None or x.grad.tolist() == [0.0, 0.0]
    for p in (2, 1, 0.5, 3, -1):  # zero differences: gradient 0, never NaN
        x = janus.tensor([1.0, 2.0, 5.0], dtype=janus.float64, requires_grad=True)
        janus.dist(x, janus.tensor([1.0, 2.0, 4.0], dtype=janus.float64), p).backward()
        assert x.grad.tolist()[:2] == [0.0, 0.0] and not math.isnan(x.grad.tolist()[2]), p
        x = janus.tensor([1.0, 2.0], requires_grad=True)
        janus.dist(x, janus.tensor([1.0, 2.0]), p).backward()
        assert x.grad.tolist() == [0.0, 0.0], p
    x = janus.tensor([-INF, -INF, 0.0, 1.0], requires_grad=True)  # no inf - inf in the gradient
    janus.logcumsumexp(x, 0).sum().backward()
    assert all(math.isfinite(v) for v in x.grad.tolist())
    x = janus.tensor([3.0, 1.0, 2.0, 2.0], requires_grad=True)
    janus.quantile(x, 0.5).backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.5, 0.5]


def test_in_place_versions_and_autograd():
    x = janus.tensor([1.0, -2.0], requires_grad=True)
    y = x * 1
    y.copysign_(janus.tensor([-1.0, 1.0]))
    y.ldexp_(janus.tensor([1, 2]))
    assert y.tolist() == [-2.0, 8.0]
    y.sum().backward()
    assert x.grad.tolist() == [-2.0, -4.0]


# ------------------------------------------------------------------ errors
ERRORS = [
    (lambda: janus.aminmax(janus.zeros(0)), RuntimeError, "cannot compute aminmax over an empty dimension"),
    (lambda: janus.aminmax(janus.zeros(2, 0), dim=1), IndexError, "Expected reduction dim 1 to have non-zero size"),
    (lambda: janus.cummax(janus.ones(2), 1), IndexError, "Dimension out of range"),
    (lambda: janus.logcumsumexp(janus.tensor([1, 2]), 0), NotImplementedError, "not implemented for 'Long'"),
    (lambda: janus.take(janus.arange(6.0), janus.tensor([1, 10])), IndexError,
     "out of range: tried to access index 10 on a tensor of 6 elements"),
    (lambda: janus.take(janus.arange(6.0), janus.tensor([-7])), IndexError, "tried to access index -7"),
    (lambda: janus.take(janus.arange(6.0), janus.tensor([1], dtype=janus.int32)), RuntimeError,
     "Expected a long tensor for index, but got Int"),
    (lambda: janus.take(janus.zeros(0), janus.tensor([0])), IndexError, "take from an empty tensor"),
    (lambda: janus.inner(janus.ones(2, 3), janus.ones(2, 4)), RuntimeError, "the last dimension must match"),
    (lambda: janus.inner(janus.ones(2), janus.ones(2, dtype=janus.float64)), RuntimeError, "same dtype"),
    (lambda: janus.dist(janus.ones(2, dtype=janus.int64), janus.ones(2, dtype=janus.int64)), NotImplementedError,
     "floating point"),
    (lambda: janus.dist(janus.zeros(0), janus.zeros(0), INF), RuntimeError, "cannot compute the inf norm on an empty"),
    (lambda: janus.cov(janus.ones(2, 2, 2)), RuntimeError, "two or fewer dimensions but got an input with 3"),
    (lambda: janus.cov(janus.ones(2, 3), fweights=janus.tensor([1.0, 2, 1])), RuntimeError,
     "fweights to have integral dtype but got fweights with Float"),
    (lambda: janus.cov(janus.ones(2, 3), fweights=janus.tensor([1, 2])), RuntimeError,
     "same numel as there are observations"),
    (lambda: janus.cov(janus.ones(2, 3), fweights=janus.tensor([1, -2, 1])), RuntimeError,
     "fweights cannot be negative"),
    (lambda: janus.cov(janus.ones(2, 3), aweights=janus.tensor([1, 2, 1])), RuntimeError,
     "aweights to have floating point dtype but got aweights with Long"),
    (lambda: janus.cov(janus.ones(2, 3), aweights=janus.tensor([1.0, -2, 1])), RuntimeError,
     "aweights cannot be negative"),
    (lambda: janus.cov(janus.ones(2, 3), aweights=janus.ones(1, 3)), RuntimeError,
     "aweights to have one or fewer dimensions"),
    (lambda: janus.cov(janus.ones(2, 3), fweights=janus.tensor([0, 0, 0])), RuntimeError, "weights sum to zero"),
    (lambda: janus.cov(janus.ones(2, 3), correction=1.5), TypeError, "'correction' must be int"),
    (lambda: janus.cov(janus.tensor([[True, False]])), NotImplementedError, "bool dtype is not supported"),
    (lambda: janus.corrcoef(janus.ones(2, 2, 2)), RuntimeError, "corrcoef(): expected input to have two or fewer"),
    (lambda: janus.hsplit(janus.tensor(3.0), 1), RuntimeError, "hsplit requires a tensor with at least 1 dimension"),
    (lambda: janus.hsplit(janus.ones(2, 4), 3), RuntimeError,
     "split along dimension 1, but the size of the dimension 4 is not divisible by the split_size 3"),
    (lambda: janus.vsplit(janus.ones(4), 2), RuntimeError, "vsplit requires a tensor with at least 2 dimension"),
    (lambda: janus.dsplit(janus.ones(4, 2), 2), RuntimeError, "dsplit requires a tensor with at least 3 dimension"),
    (lambda: janus.dsplit(janus.ones(4, 2, 3), 2), RuntimeError, "dimension 2, but the size of the dimension 3"),
    (lambda: janus.split_with_sizes(janus.ones(5), [2, 2]), RuntimeError, "split_sizes to sum exactly to 5"),
    (lambda: janus.split_with_sizes(janus.ones(5), [-1, 6]), RuntimeError, "only non-negative entries"),
    (lambda: janus.fmax(janus.ones(2), 2), TypeError, "argument 'other' (position 2) must be Tensor, not int"),
    (lambda: janus.copysign(janus.ones(2), "x"), TypeError, "must be Tensor or Number"),
    (lambda: janus.tensor([1, 2]).copysign_(janus.tensor([-1.0])), RuntimeError,
     "result type Float can't be cast to the desired output type Long"),
    (lambda: janus.tensor([1, 2]).ldexp_(janus.tensor([1])), RuntimeError,
     "can't be cast to the desired output type Long"),
    (lambda: janus.ldexp(janus.ones(2), 3), TypeError, "argument 'other' (position 2) must be Tensor"),
    (lambda: janus.frexp(janus.tensor([1, 2])), RuntimeError, "frexp() only supports floating-point dtypes"),
    (lambda: janus.nanmedian(janus.zeros(2, 0), 1), IndexError, "Expected reduction dim 1 to have non-zero size"),
    (lambda: janus.nanmedian(janus.ones(2, 3), keepdim=True), TypeError,
     'missing 1 required positional arguments: "dim"'),
    (lambda: janus.quantile(janus.tensor([1, 2]), 0.5), RuntimeError, "input tensor must be either float or double"),
    (lambda: janus.quantile(janus.ones(2), janus.tensor([0.5], dtype=janus.float64)), RuntimeError,
     "q tensor must be same dtype as the input"),
    (lambda: janus.quantile(janus.ones(2), 1.5), RuntimeError, "q must be in the range [0, 1] but got 1.5"),
    (lambda: janus.nanquantile(janus.ones(2), janus.tensor([1.5, 0.3])), RuntimeError,
     "q values must be in the range [0, 1]"),
    (lambda: janus.quantile(janus.ones(2), janus.tensor([[0.5]])), RuntimeError, "q must be a scalar or 1D tensor"),
    (lambda: janus.quantile(janus.ones(2), 0.5, interpolation="foo"), RuntimeError,
     "interpolation must be one of linear, lower, higher, midpoint or nearest, but got foo"),
    (lambda: janus.quantile(janus.zeros(0), 0.5), RuntimeError, "input tensor must be non-empty"),
    (lambda: janus.quantile(janus.ones(2), 0.5, dim=2), IndexError, "Dimension out of range"),
    (lambda: janus.histc(janus.tensor([1, 2]), bins=4), NotImplementedError, "not implemented for 'Long'"),
    (lambda: janus.histc(janus.tensor([1.0, NAN]), bins=4), RuntimeError, "is not finite"),
    (lambda: janus.histc(janus.tensor([1.0, INF]), bins=4, min=0, max=INF), RuntimeError,
     "range of [0, inf] is not finite"),
    (lambda: janus.histc(janus.tensor([1.0]), bins=0), RuntimeError, "bins must be > 0, but got 0"),
    (lambda: janus.histc(janus.tensor([1.0]), bins=4, min=3, max=1), RuntimeError, "max must be larger than min"),
    (lambda: janus.trapezoid(janus.ones(2, 3), janus.tensor([0.0, 1.0])), RuntimeError,
     "There must be one `x` value for each sample point"),
    (lambda: janus.cumulative_trapezoid(janus.ones(2, 3), janus.tensor([0.0, 1.0])), RuntimeError,
     "There must be one `x` value for each sample point"),
    (lambda: janus.trapezoid(janus.ones(3), janus.ones(3), dx=2), TypeError, "pass x (a Tensor) or dx"),
    (lambda: janus.trapezoid(janus.tensor([True])), NotImplementedError, "bool input"),
    (lambda: janus.trapezoid(janus.tensor(2.0)), IndexError, "tensor has no dimensions"),
    (lambda: janus.logspace(0, 2, -1), RuntimeError, "number of steps must be non-negative"),
    (lambda: janus.tril_indices(-1, 4), RuntimeError, "row must be non-negative, got-1"),
    (lambda: janus.triu_indices(1, -4), RuntimeError, "col must be non-negative, got-4"),
    (lambda: janus.tril_indices(2, 2, dtype=janus.float32), NotImplementedError,
     "\"tril_indices\" not implemented for 'Float'"),
    (lambda: janus.tril_indices(2.5, 2), TypeError, "'row' must be int"),
    (lambda: janus.cartesian_prod(janus.ones(2, 2)), RuntimeError, "Expect a 1D vector, but got shape [2, 2]"),
    (lambda: janus.cartesian_prod(), RuntimeError, "non-empty TensorList"),
    (lambda: janus.cartesian_prod(janus.ones(2), janus.ones(2, dtype=janus.int64)), RuntimeError, "same dtype"),
    (lambda: janus.block_diag(janus.ones(2, 2, 2)), RuntimeError, "Input 0 has 3 dimensions"),
    (lambda: janus.block_diag([janus.ones(1)]), TypeError, "expected Tensor as element 0"),
    (lambda: janus.atleast_1d(2.0), TypeError, "expected Tensor as element 0"),
    (lambda: janus.column_stack([]), RuntimeError, "column_stack expects a non-empty TensorList"),
    (lambda: janus.column_stack(janus.ones(2)), TypeError, "must be tuple of Tensors, not Tensor"),
    (lambda: janus.dstack([]), RuntimeError, "dstack expects a non-empty TensorList"),
    (lambda: janus.searchsorted(janus.ones(3), janus.ones(2), side="left", right=True), RuntimeError,
     "side and right can't be set to opposites"),
    (lambda: janus.searchsorted(janus.ones(3), janus.ones(2), side="foo"), RuntimeError,
     "side can only be 'left' or 'right' but got foo"),
    (lambda: janus.searchsorted(janus.ones(2, 3), janus.ones(1, 2)), RuntimeError,
     "first N-1 dimensions of boundaries tensor and input value tensor must match"),
    (lambda: janus.searchsorted(janus.ones(2, 3), 3), RuntimeError, "input value can be a scalar only when boundaries"),
    (lambda: janus.searchsorted(janus.tensor(5), janus.ones(2)), RuntimeError, "should have positive dimension"),
    (lambda: janus.searchsorted(janus.tensor([5, 1, 3]), janus.ones(2), sorter=janus.tensor([1, 2])), RuntimeError,
     "boundary and sorter must have the same size"),
    (lambda: janus.searchsorted(janus.tensor([5, 1, 3]), janus.ones(2), sorter=janus.tensor([1, 2, 3])), RuntimeError,
     "sorter index out of range"),
    (lambda: janus.searchsorted(janus.tensor([5, 1, 3]), janus.ones(2), sorter=janus.tensor([1.0, 2, 0])), RuntimeError,
     "sorter must be a tensor of long dtype but got dtype Float"),
    (lambda: janus.searchsorted(janus.tensor([True, False]), janus.tensor([True])), NotImplementedError, "'Bool'"),
    (lambda: janus.bucketize(janus.ones(2), janus.ones(2, 2)), RuntimeError,
     "boundaries tensor must be 1 dimension, but got dim(2)"),
    (lambda: janus.vander(janus.ones(2), -1), RuntimeError, "N must be non-negative."),
    (lambda: janus.vander(janus.ones(2, 2)), RuntimeError, "x must be a one-dimensional tensor."),
    (lambda: janus.kron(janus.ones(2), [1.0]), TypeError, "argument 'other' must be Tensor"),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors_name_the_problem(k):
    f, exc, text = ERRORS[k]
    with pytest.raises(exc) as e:
        f()
    assert text in str(e.value)


# ----------------------------------------------------------------- PyTorch
def _torch():
    return pytest.importorskip("torch")


def _tt(torch, a, grad=False):
    return torch.tensor(np.asarray(a), requires_grad=grad)


def _same_as_torch(got, want, exact=True, rtol=0.0):
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same_as_torch(g, w, exact, rtol)
        return
    g, w = got.numpy(), want.detach().numpy()
    assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
    if exact:
        np.testing.assert_array_equal(g, w)
    else:
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol, equal_nan=True)


def test_values_against_pytorch():
    torch = _torch()
    rng = np.random.default_rng(7)
    x = np.array([[1.0, 3.0, 3.0, NAN, 2.0], [0.5, -INF, 4.0, 4.0, 1.0]])
    for dt in (np.float32, np.float64):
        a = x.astype(dt)
        for name in ("cummax", "cummin"):
            for d in (0, 1, -1):
                _same_as_torch(getattr(janus, name)(J(a), d), getattr(torch, name)(_tt(torch, a), d))
        b = (rng.normal(size=(3, 8)) * 10).astype(dt)
        _same_as_torch(janus.logcumsumexp(J(b), 1), torch.logcumsumexp(_tt(torch, b), 1), False, 1e-5)
        _same_as_torch(janus.aminmax(J(b), dim=0), torch.aminmax(_tt(torch, b), dim=0))
        for mode in MODES:
            for fn in ("quantile", "nanquantile"):
                for q in (0.05, 0.7, 1 / 6, 0.5):
                    c = b.copy()
                    c[0, 1] = NAN
                    got = getattr(janus, fn)(J(c), q, 1, interpolation=mode)
                    want = getattr(torch, fn)(_tt(torch, c), q, 1, interpolation=mode)
                    _same_as_torch(got, want, dt == np.float32, 1e-12)  # float32: bit for bit
                qs = rng.uniform(0, 1, 6).astype(dt)
                _same_as_torch(getattr(janus, fn)(J(b), J(qs), interpolation=mode),
                               getattr(torch, fn)(_tt(torch, b), _tt(torch, qs), interpolation=mode),
                               dt == np.float32, 1e-12)
        h = rng.normal(size=500).astype(dt)
        for kw in (dict(bins=13), dict(bins=10, min=-1, max=1.5), dict(bins=7, min=0.1, max=1)):
            _same_as_torch(janus.histc(J(h), **kw), torch.histc(_tt(torch, h), **kw))
        m = rng.normal(size=(3, 6)).astype(dt)
        fw, aw = rng.integers(1, 4, 6), rng.uniform(0.1, 2, 6).astype(dt)
        _same_as_torch(janus.cov(J(m), fweights=J(fw), aweights=J(aw)),
                       torch.cov(_tt(torch, m), fweights=_tt(torch, fw), aweights=_tt(torch, aw)), False, 1e-5)
        _same_as_torch(janus.corrcoef(J(m)), torch.corrcoef(_tt(torch, m)), False, 1e-5)
        w = np.array([-0.0, 0.0, -1.0, INF, NAN, 2.0], dt)
        v = np.array([NAN, -0.0, 3.0, -INF, 1.0, NAN], dt)
        for name in ("fmax", "fmin", "copysign"):
            _same_as_torch(getattr(janus, name)(J(w), J(v)), getattr(torch, name)(_tt(torch, w), _tt(torch, v)))
        _same_as_torch(janus.signbit(J(w)), torch.signbit(_tt(torch, w)))
        _same_as_torch(janus.frexp(J(w)), torch.frexp(_tt(torch, w)))
        e = [1, 2, -3, 4, 0, 1]
        _same_as_torch(janus.ldexp(J(w), J(e)), torch.ldexp(_tt(torch, w), _tt(torch, e)))
        _same_as_torch(janus.nanmedian(J(x.astype(dt))), torch.nanmedian(_tt(torch, x.astype(dt))))
        _same_as_torch(janus.nanmedian(J(x.astype(dt)), 1), torch.nanmedian(_tt(torch, x.astype(dt)), 1))
        s = np.array([1.0, 3, 3, 5, 7], dt)
        vv = np.array([[0.0, 3, 8], [5, NAN, 7]], dt)
        for kw in ({}, dict(right=True), dict(side="right", out_int32=True)):
            _same_as_torch(janus.searchsorted(J(s), J(vv), **kw),
                           torch.searchsorted(_tt(torch, s), _tt(torch, vv), **kw))
        _same_as_torch(janus.bucketize(J(vv), J(s)), torch.bucketize(_tt(torch, vv), _tt(torch, s)))
        y = rng.normal(size=(3, 5)).astype(dt)
        xs = np.sort(rng.normal(size=5)).astype(dt)
        for name in ("trapezoid", "cumulative_trapezoid"):
            jf, tf = getattr(janus, name), getattr(torch, name)
            _same_as_torch(jf(J(y), J(xs)), tf(_tt(torch, y), _tt(torch, xs)), False, 1e-6)
            _same_as_torch(jf(J(y), dx=0.3, dim=0), tf(_tt(torch, y), dx=0.3, dim=0), False, 1e-6)
        _same_as_torch(janus.vander(J(xs), 4), torch.vander(_tt(torch, xs), 4), False, 1e-6)
        _same_as_torch(janus.kron(J(y), J(m)), torch.kron(_tt(torch, y), _tt(torch, m)))
        _same_as_torch(janus.inner(J(y), J(m[:, :5])), torch.inner(_tt(torch, y), _tt(torch, m[:, :5])), False, 1e-6)
        for p in (2, 1, 0, INF, -INF, 0.5, 3, -1):
            _same_as_torch(janus.dist(J(y), J(xs), p), torch.dist(_tt(torch, y), _tt(torch, xs), p), False, 1e-6)
            z = np.array([1.0, 2.0, 3.0], dt)
            _same_as_torch(janus.dist(J(z), J(z), p), torch.dist(_tt(torch, z), _tt(torch, z), p))
    _same_as_torch(janus.logspace(-2, 3, 9), torch.logspace(-2, 3, 9), False, 1e-6)
    _same_as_torch(janus.logspace(0, 2, 3, dtype=janus.int64), torch.logspace(0, 2, 3, dtype=torch.int64))
    for off in (0, 2, -1):
        _same_as_torch(janus.tril_indices(4, 3, off), torch.tril_indices(4, 3, off))
        _same_as_torch(janus.triu_indices(4, 3, off), torch.triu_indices(4, 3, off))
    _same_as_torch(janus.block_diag(janus.tensor(2), J([1.0, 2.0]), janus.ones(2, 2, dtype=janus.float64)),
                   torch.block_diag(torch.tensor(2), torch.tensor([1.0, 2.0]), torch.ones(2, 2, dtype=torch.float64)))
    _same_as_torch(janus.cartesian_prod(J([1, 2]), J([3, 4, 5])),
                   torch.cartesian_prod(torch.tensor([1, 2]), torch.tensor([3, 4, 5])))
    _same_as_torch(janus.column_stack([janus.tensor([1, 2]), janus.tensor([[3.0, 4], [5, 6]])]),
                   torch.column_stack([torch.tensor([1, 2]), torch.tensor([[3.0, 4], [5, 6]])]))
    _same_as_torch(janus.hsplit(J(y), [1, 3]), torch.hsplit(_tt(torch, y), [1, 3]))
    _same_as_torch(janus.take(J(y), J([[0, -1], [7, 3]])), torch.take(_tt(torch, y), torch.tensor([[0, -1], [7, 3]])))


TORCH_GRADS = [
    ("cummax", lambda m, x: m.cummax(x, 1).values, [np.array([[1.0, 3.0, 3.0, 2.0, 5.0], [4.0, 1.0, 4.0, 0.0, 4.0]])]),
    ("cummin", lambda m, x: m.cummin(x, 0).values, [np.array([[1.0, 3.0], [1.0, 2.0], [0.0, 2.0]])]),
    ("aminmax", lambda m, x: (lambda r: r[0] * 2 + r[1])(m.aminmax(x, dim=1)),
     [np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 1.0]])]),
    ("logcumsumexp", lambda m, x: m.logcumsumexp(x, 1), [_x(2, 5)]),
    ("fmax", lambda m, a, b: m.fmax(a, b), [np.array([1.0, 2.0, NAN, 4.0]), np.array([1.0, NAN, 3.0, 5.0])]),
    ("fmin", lambda m, a, b: m.fmin(a, b), [np.array([1.0, 2.0, NAN, 4.0]), np.array([1.0, NAN, 3.0, 5.0])]),
    ("copysign", lambda m, a, b: m.copysign(a, b), [np.array([0.0, -2.0, 3.0, 1.5]), np.array([-1.0, 2.0, -0.0, 0.0])]),
    ("nanmedian", lambda m, x: m.nanmedian(x), [np.array([1.0, 2.0, NAN, 2.0, 3.0])]),
    ("nanmedian_dim", lambda m, x: m.nanmedian(x, 1).values, [np.array([[1.0, NAN, 3.0], [2.0, 0.5, 7.0]])]),
    ("quantile", lambda m, x, q: m.quantile(x, q, 1),
     [np.array([[3.0, 1.0, 2.0, 2.0], [0.5, -1.0, 4.0, 2.0]]), np.array([0.2, 0.5, 0.9])]),
    ("nanquantile", lambda m, x: m.nanquantile(x, 0.4, 1, interpolation="midpoint"),
     [np.array([[3.0, NAN, 2.0, 2.0], [0.5, -1.0, 4.0, 2.0]])]),
    ("dist", lambda m, a, b: m.dist(a, b, 0.5), [np.array([1.0, 2.0, 5.0]), np.array([1.0, 0.0, 4.0])]),
    ("dist_inf", lambda m, a, b: m.dist(a, b, INF), [np.array([1.0, 2.0, 5.0]), np.array([0.0, 0.0, 3.0])]),
    ("cov", lambda m, x, w: m.cov(x, aweights=w), [_x(2, 4), np.array([0.5, 1.0, 2.0, 0.25])]),
    ("corrcoef", lambda m, x: m.corrcoef(x), [_x(3, 4)]),
    ("frexp", lambda m, x: m.frexp(x).mantissa, [np.array([3.0, -5.5, 0.0, 1e-3])]),
    ("ldexp", lambda m, a, b: m.ldexp(a, b), [np.array([3.0, -5.5]), np.array([1.0, 2.0])]),
    ("take", lambda m, x: m.take(x, (janus if m is janus else __import__("torch")).tensor([0, 3, 3, -1])), [_x(2, 3)]),
    ("trapezoid", lambda m, y, x: m.trapezoid(y, x), [_x(2, 4), np.array([0.0, 0.5, 0.7, 2.0])]),
    ("cumulative_trapezoid", lambda m, y: m.cumulative_trapezoid(y, dx=0.5), [_x(2, 4)]),
    ("kron", lambda m, a, b: m.kron(a, b), [_x(2, 2), _x(3, seed=3)]),
    ("inner", lambda m, a, b: m.inner(a, b), [_x(2, 3), _x(2, 3, seed=3)]),
    ("block_diag", lambda m, a, b: m.block_diag(a, b), [_x(2, 2), _x(3, seed=3)]),
    ("cartesian_prod", lambda m, a, b: m.cartesian_prod(a, b), [_x(2), _x(3, seed=3)]),
]


@pytest.mark.parametrize("k", range(len(TORCH_GRADS)))
def test_gradients_against_pytorch(k):
    torch = _torch()
    name, f, arrays = TORCH_GRADS[k]
    jx = [janus.tensor(a, requires_grad=True) for a in arrays]
    tx = [torch.tensor(a, requires_grad=True) for a in arrays]
    jo, to = f(janus, *jx), f(torch, *tx)
    v = np.random.default_rng(k).uniform(-1, 1, size=tuple(to.shape))
    (jo * janus.tensor(v)).sum().backward()
    (to * torch.tensor(v)).sum().backward()
    np.testing.assert_allclose(jo.detach().numpy(), to.detach().numpy(), rtol=1e-12, atol=1e-12, equal_nan=True)
    for j, t in zip(jx, tx):
        tg = np.zeros(t.shape) if t.grad is None else t.grad.numpy()
        jg = np.zeros(tuple(j.shape)) if j.grad is None else j.grad.numpy()
        # ldexp: torch's gradient for the exponent uses ln 2 rounded to float32 (2.7e-9 off)
        np.testing.assert_allclose(jg, tg, rtol=1e-8 if name == "ldexp" else 1e-10, atol=1e-12, err_msg=name)


def test_round_with_decimals():
    """round(x, decimals=d) as torch's: x * 10^d rounded half to even, / 10^d (d < 0:
    x / 10^-d rounded, * 10^-d), in x's dtype; the gradient is zero."""
    a = np.random.default_rng(5).standard_normal(500).astype(np.float32) * 100
    for d in (0, 1, 2, -1, -2):
        ten = np.float32(10.0 ** abs(d))
        want = np.round(a * ten) / ten if d > 0 else np.round(a / ten) * ten if d < 0 else np.round(a)
        np.testing.assert_array_equal(janus.round(janus.tensor(a), decimals=d).numpy(), want)
    x = janus.tensor(a[:8])
    x.round_(decimals=1)
    np.testing.assert_array_equal(x.numpy(), np.round(a[:8] * np.float32(10)) / np.float32(10))
    w = janus.tensor([1.26, 2.0], requires_grad=True)
    janus.round(w, decimals=1).sum().backward()
    assert w.grad.tolist() == [0.0, 0.0]
    try:
        import torch
    except ImportError:
        return
    for d in (1, 3, -1):
        np.testing.assert_array_equal(janus.round(janus.tensor(a), decimals=d).numpy(),
                                      torch.round(torch.tensor(a), decimals=d).numpy())


def test_cdist_against_numpy_and_torch():
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 4, 3))
    diff = a[:, :, None, :] - b[:, None, :, :]
    for p, want in ((2.0, np.sqrt((diff ** 2).sum(-1))), (1.0, np.abs(diff).sum(-1)),
                    (np.inf, np.abs(diff).max(-1)), (0.0, (diff != 0).sum(-1).astype(float)),
                    (3.0, (np.abs(diff) ** 3).sum(-1) ** (1 / 3))):
        np.testing.assert_allclose(janus.cdist(janus.tensor(a), janus.tensor(b), p=p).numpy(), want, rtol=1e-12)
    check_grad(lambda x, y: janus.cdist(x, y).sum(), [a, b])
    z = janus.tensor(a[0], requires_grad=True)
    janus.cdist(z, z).sum().backward()  # zero distances on the diagonal: gradient 0 there, not NaN
    assert np.isfinite(z.grad.numpy()).all()
    with pytest.raises(RuntimeError, match="same number of columns"):
        janus.cdist(janus.ones(3, 2), janus.ones(3, 4))
    with pytest.raises(RuntimeError, match="non-negative p"):
        janus.cdist(janus.ones(3, 2), janus.ones(3, 2), p=-1)
    try:
        import torch
    except ImportError:
        return
    x, y = janus.tensor(a, requires_grad=True), janus.tensor(b, requires_grad=True)
    janus.cdist(x, y).sum().backward()
    xt, yt = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    torch.cdist(xt, yt).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(y.grad.numpy(), yt.grad.numpy(), rtol=1e-12, atol=1e-14)
