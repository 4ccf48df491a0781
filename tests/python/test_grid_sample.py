"""nn.functional.affine_grid and grid_sample (janus/nn/_grid.py): values
against a numpy reference written from PyTorch's scalar kernel (bilinear,
nearest with ties to even, bicubic; zeros / border / reflection padding;
both align_corners; 4-D and 5-D), affine_grid against its formula, an
identity theta reproducing the input, central finite-difference gradients
in float64 with respect to input, grid and theta at points away from pixel
boundaries, finite gradients on pixel centres and borders, the argument
checks, warnings and non-finite grids, and, when PyTorch is installed,
values and gradients against it plus a tiny spatial-transformer training
loop whose losses match PyTorch's."""
import itertools
import math
import warnings
import zlib

import numpy as np
import pytest

import janus
import janus.nn as nn
import janus.nn.functional as F
from gradnum import check_grad

MODES = ["bilinear", "nearest", "bicubic"]
PADS = ["zeros", "border", "reflection"]
CASES = [(m, p, a) for m in MODES for p in PADS for a in (False, True)]
RNG = np.random.default_rng(2024)


@pytest.fixture(autouse=True)
def _seed_per_test(request):
    """Each test draws the same data however the run is selected."""
    global RNG
    RNG = np.random.default_rng(zlib.crc32(request.node.name.encode()))


def J(a, grad=False):
    return janus.tensor(np.asarray(a), requires_grad=grad)


def sample(x, g, mode="bilinear", padding_mode="zeros", align_corners=False):
    return F.grid_sample(x, g, mode=mode, padding_mode=padding_mode, align_corners=align_corners)


# ------------------------------------------------------------ numpy reference
def _unnormalize(c, size, align):
    return (c + 1) / 2 * (size - 1) if align else ((c + 1) * size - 1) / 2


def _reflect(c, twice_low, twice_high):
    if twice_low == twice_high:
        return 0.0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    c = abs(c - low)
    extra, flips = math.fmod(c, span), math.floor(c / span)
    return extra + low if flips % 2 == 0 else span - extra + low


def _pad(c, size, padding, align):
    if padding == "reflection":
        c = _reflect(c, 0, 2 * (size - 1)) if align else _reflect(c, -1, 2 * size - 1)
    if padding in ("border", "reflection"):
        c = min(size - 1.0, max(c, 0.0))
    return c


def _cubic(t, A=-0.75):
    near = lambda x: ((A + 2) * x - (A + 3)) * x * x + 1  # noqa: E731
    far = lambda x: ((A * x - 5 * A) * x + 8 * A) * x - 4 * A  # noqa: E731
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def ref_grid_sample(x, g, mode, padding, align):
    """PyTorch's grid sampler, one output point at a time, in float64."""
    x, g = np.asarray(x, np.float64), np.asarray(g, np.float64)
    n, c, spatial = x.shape[0], x.shape[1], x.shape[2:]
    out = np.zeros((n, c) + g.shape[1:-1])
    for b in range(n):
        for p in np.ndindex(*g.shape[1:-1]):
            coords = g[(b,) + p][::-1]  # (z,) y, x -> the input's (D,) H, W order
            taps = []
            for size, v in zip(spatial, coords):
                u = _unnormalize(float(v), size, align)
                if mode == "bicubic":
                    lo = math.floor(u)
                    taps.append([(_pad(lo - 1 + k, size, padding, align), w) for k, w in enumerate(_cubic(u - lo))])
                    continue
                u = _pad(u, size, padding, align)
                if mode == "nearest":
                    taps.append([(round(u), 1.0)])  # Python rounds half to even, as PyTorch does
                else:
                    lo = math.floor(u)
                    taps.append([(lo, lo + 1 - u), (lo + 1, u - lo)])
            acc = np.zeros(c)
            for corner in itertools.product(*taps):
                idx = tuple(int(pos) for pos, _ in corner)
                if all(0 <= i < s for i, s in zip(idx, spatial)):
                    acc += np.prod([w for _, w in corner]) * x[(b, slice(None)) + idx]
            out[(b, slice(None)) + p] = acc
    return out


def ref_affine_grid(theta, size, align):
    theta = np.asarray(theta, np.float64)
    spatial = size[2:]

    def lin(m):
        if m <= 1:
            return np.zeros(max(m, 1))
        r = np.linspace(-1, 1, m)
        return r if align else r * (m - 1) / m

    axes = list(np.meshgrid(*[lin(m) for m in spatial], indexing="ij"))[::-1]  # x (last dim) first
    base = np.stack(axes + [np.ones(spatial)], -1)
    return np.einsum("...k,njk->n...j", base, theta)


def random_grid(shape, lo=-1.6, hi=1.6):
    return RNG.uniform(lo, hi, shape)


# ------------------------------------------------------------ values vs numpy
@pytest.mark.parametrize("mode,padding,align", CASES)
@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float32, 2e-5)])
def test_values_against_numpy_2d(mode, padding, align, dtype, tol):
    x = RNG.standard_normal((2, 3, 4, 5)).astype(dtype)
    g = random_grid((2, 3, 6, 2)).astype(dtype)
    got = sample(J(x), J(g), mode, padding, align)
    assert got.dtype == J(x).dtype and tuple(got.shape) == (2, 3, 3, 6)
    np.testing.assert_allclose(got.numpy(), ref_grid_sample(x, g, mode, padding, align), rtol=tol, atol=tol)


@pytest.mark.parametrize("mode,padding,align", [c for c in CASES if c[0] != "bicubic"])
def test_values_against_numpy_3d(mode, padding, align):
    x = RNG.standard_normal((2, 2, 3, 4, 5))
    g = random_grid((2, 2, 3, 4, 3))
    got = sample(J(x), J(g), mode, padding, align)
    assert tuple(got.shape) == (2, 2, 2, 3, 4)
    np.testing.assert_allclose(got.numpy(), ref_grid_sample(x, g, mode, padding, align), rtol=1e-12, atol=1e-12)


def test_nearest_rounds_half_to_even():
    x = np.arange(5.0).reshape(1, 1, 1, 5)
    # align_corners=True, W=5: pixel = (gx + 1) * 2 -> 0.5, 1.5, 2.5, 3.5 (exact ties)
    g = np.stack([[-0.75, -0.25, 0.25, 0.75], [0.0] * 4], -1).reshape(1, 1, 4, 2)
    got = sample(J(x), J(g), "nearest", "zeros", True).numpy().ravel()
    np.testing.assert_array_equal(got, [0.0, 2.0, 2.0, 4.0])
    # align_corners=False, W=4: pixel = (gx + 1) * 2 - 0.5 -> 0.5, 1.5, 2.5
    g = np.stack([[-0.5, 0.0, 0.5], [0.0] * 3], -1).reshape(1, 1, 3, 2)
    got = sample(J(x[..., :4]), J(g), "nearest", "zeros", False).numpy().ravel()
    np.testing.assert_array_equal(got, [0.0, 2.0, 2.0])


def test_padding_modes_far_outside():
    x = np.arange(1.0, 13.0).reshape(1, 1, 3, 4)
    g = np.array([[-5.0, 0.0], [5.0, 0.0], [0.0, -7.0], [1e20, 0.0], [-3e9, 0.5]]).reshape(1, 1, 5, 2)
    for padding, align in itertools.product(PADS, (False, True)):
        for mode in ("bilinear", "nearest"):
            got = sample(J(x), J(g), mode, padding, align).numpy()
            np.testing.assert_allclose(got[..., :3], ref_grid_sample(x, g[:, :, :3], mode, padding, align),
                                       rtol=1e-12)
            if padding != "reflection":  # far beyond: zeros reads 0, border the nearest edge
                np.testing.assert_allclose(got, ref_grid_sample(x, g, mode, padding, align), rtol=1e-12)


# ------------------------------------------------------------ affine_grid
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (3, 1, 1, 6), (2, 1, 7, 1), (2, 2, 3, 4, 5), (1, 1, 1, 1, 1)])
@pytest.mark.parametrize("align", [False, True])
def test_affine_grid_formula(size, align):
    d = len(size) - 2
    theta = RNG.standard_normal((size[0], d, d + 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unit sizes with align_corners=True warn, as in PyTorch
        got = F.affine_grid(J(theta), janus.Size(size), align)
        got32 = F.affine_grid(J(theta.astype(np.float32)), list(size), align)
    assert tuple(got.shape) == (size[0],) + tuple(size[2:]) + (d,)
    np.testing.assert_allclose(got.numpy(), ref_affine_grid(theta, size, align), rtol=1e-12, atol=1e-14)
    assert got32.dtype == janus.float32
    np.testing.assert_allclose(got32.numpy(), ref_affine_grid(theta, size, align), rtol=1e-5, atol=1e-5)


def test_affine_grid_gradient():
    theta = RNG.standard_normal((2, 2, 3))
    check_grad(lambda t: F.affine_grid(t, (2, 1, 3, 4), align_corners=False), [theta])
    check_grad(lambda t: F.affine_grid(t, (1, 1, 2, 3, 2), align_corners=True), [RNG.standard_normal((1, 3, 4))])


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("mode", MODES)
def test_identity_theta_reproduces_input(align, mode):
    x = RNG.standard_normal((2, 3, 5, 7))
    theta = np.tile(np.array([[1.0, 0, 0], [0, 1, 0]]), (2, 1, 1))
    grid = F.affine_grid(J(theta), (2, 3, 5, 7), align_corners=align)
    got = sample(J(x), grid, mode, "zeros", align)
    np.testing.assert_allclose(got.numpy(), x, rtol=1e-12, atol=1e-12)
    x3 = RNG.standard_normal((1, 2, 3, 4, 5))
    if mode != "bicubic":
        theta3 = np.eye(3, 4)[None]
        got = sample(J(x3), F.affine_grid(J(theta3), (1, 2, 3, 4, 5), align_corners=align), mode, "border", align)
        np.testing.assert_allclose(got.numpy(), x3, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------ gradients
def _grid_away_from_boundaries(shape, sizes, align):
    """Grid points whose pixel coordinates have fractional parts in
    [0.15, 0.35] or [0.65, 0.85]: away from the integers (bilinear corners,
    clip borders) and the half-integers (nearest's rounding, reflection at
    -0.5 / size - 0.5), some of them outside the input."""
    g = np.empty(shape)
    for j, size in enumerate(sizes):  # sizes in grid order: W, H(, D)
        u = RNG.integers(-2, size + 1, shape[:-1]) + RNG.choice([0.2, 0.3, 0.7, 0.8], shape[:-1])
        u = u + RNG.uniform(-0.05, 0.05, shape[:-1])
        g[..., j] = u / (size - 1) * 2 - 1 if align else (2 * u + 1) / size - 1
    return g


@pytest.mark.parametrize("mode,padding,align", CASES)
def test_finite_difference_gradients_2d(mode, padding, align):
    x = RNG.standard_normal((1, 2, 3, 4))
    g = _grid_away_from_boundaries((1, 2, 3, 2), (4, 3), align)
    check_grad(lambda a, b: sample(a, b, mode, padding, align), [x, g])


@pytest.mark.parametrize("mode,padding,align", [c for c in CASES if c[0] == "bilinear"])
def test_finite_difference_gradients_3d(mode, padding, align):
    x = RNG.standard_normal((1, 1, 2, 3, 3))
    g = _grid_away_from_boundaries((1, 1, 2, 2, 3), (3, 3, 2), align)
    check_grad(lambda a, b: sample(a, b, mode, padding, align), [x, g])


def test_finite_difference_gradient_through_theta():
    x = RNG.standard_normal((2, 1, 4, 5))
    theta = np.tile(np.array([[0.83, 0.21, 0.07], [-0.18, 0.91, -0.11]]), (2, 1, 1)) + RNG.uniform(-0.05, 0.05,
                                                                                                     (2, 2, 3))

    def f(a, t):
        return sample(a, F.affine_grid(t, (2, 1, 3, 4), align_corners=False), "bilinear", "zeros", False)

    check_grad(f, [x, theta])


def _lattice_grid(sizes, align):
    """Every pixel centre and pixel border (for align_corners=False) along each
    dim, plus points outside; sizes chosen so that they are exact binary
    fractions (a dyadic lattice both janus and PyTorch unnormalize exactly)."""
    axes = []
    for size in sizes:  # W, H
        centres = np.linspace(-1, 1, size) if align else (2 * np.arange(size) + 1) / size - 1
        edges = np.linspace(-1, 1, size + 1)
        axes.append(np.unique(np.concatenate([centres, edges, [-1.5, 1.5, -3.0, 3.0]])))
    return np.stack(np.meshgrid(*axes, indexing="xy"), -1)[None]


@pytest.mark.parametrize("mode,padding,align", CASES)
def test_gradients_finite_on_pixel_centres_and_borders(mode, padding, align):
    sizes = (3, 5) if align else (4, 2)  # (W, H): dyadic lattices
    x = RNG.standard_normal((1, 2, sizes[1], sizes[0]))
    g = _lattice_grid(sizes, align)
    jx, jg = J(x, True), J(g, True)
    out = sample(jx, jg, mode, padding, align)
    (out * J(RNG.standard_normal(tuple(out.shape)))).sum().backward()
    assert np.isfinite(out.numpy()).all()
    assert np.isfinite(jx.grad.numpy()).all() and np.isfinite(jg.grad.numpy()).all()
    np.testing.assert_allclose(out.detach().numpy(), ref_grid_sample(x, g, mode, padding, align), rtol=1e-12,
                               atol=1e-12)
    if mode == "nearest":
        np.testing.assert_array_equal(jg.grad.numpy(), 0.0)
    # a size-1 dim (align_corners=True maps it to 0; reflection's span is empty)
    x1 = RNG.standard_normal((1, 1, 1, 3))
    jx1, jg1 = J(x1, True), J(g[:, :4, :4], True)
    sample(jx1, jg1, mode, padding, align).sum().backward()
    assert np.isfinite(jx1.grad.numpy()).all() and np.isfinite(jg1.grad.numpy()).all()


def test_non_finite_grid_reads_nan_with_finite_gradients():
    x = J(np.arange(1.0, 13.0).reshape(1, 1, 3, 4), True)
    g = J(np.array([[math.nan, 0.0], [math.inf, 0.0], [0.0, -math.inf], [0.1, 0.2]]).reshape(1, 1, 4, 2), True)
    for mode, padding, align in CASES:
        x.grad = g.grad = None
        out = sample(x, g, mode, padding, align)
        assert np.isnan(out.detach().numpy()[..., :3]).all() and np.isfinite(out.detach().numpy()[..., 3]).all()
        out[..., 3].sum().backward()
        assert np.isfinite(x.grad.numpy()).all() and np.isfinite(g.grad.numpy()).all()


def test_empty_shapes():
    assert tuple(sample(janus.rand(2, 0, 4, 5), janus.rand(2, 6, 7, 2)).shape) == (2, 0, 6, 7)
    assert tuple(sample(janus.rand(2, 3, 4, 5), janus.rand(2, 0, 7, 2)).shape) == (2, 3, 0, 7)
    assert tuple(sample(janus.rand(0, 3, 4, 5), janus.rand(0, 6, 7, 2)).shape) == (0, 3, 6, 7)


# ------------------------------------------------------------ checks and warnings
_X, _G = janus.rand(2, 3, 4, 5), janus.rand(2, 6, 7, 2)
ERRORS = [
    (lambda: sample(_X, _G, mode="area"), ValueError, "expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                                                      "got: 'area'"),
    (lambda: sample(_X, _G, padding_mode="circular"), ValueError,
     "expected padding_mode to be 'zeros', 'border', or 'reflection', but got: 'circular'"),
    (lambda: sample(_X, _G[:1]), RuntimeError, "expected grid and input to have same batch size, but got input with "
                                                "sizes [2, 3, 4, 5] and grid with sizes [1, 6, 7, 2]"),
    (lambda: sample(_X, _G[..., :1]), RuntimeError, "expected grid to have size 2 in last dimension, but got grid "
                                                     "with sizes [2, 6, 7, 1]"),
    (lambda: sample(_X, _G[0]), RuntimeError, "expected 4D or 5D input and grid with same number of dimensions"),
    (lambda: sample(_X[0], _G[0]), RuntimeError, "expected 4D or 5D input"),
    (lambda: sample(janus.rand(2, 3, 0, 5), _G), RuntimeError,
     "expected input to have non-empty spatial dimensions, but input has sizes [2, 3, 0, 5] with dimension 2 being "
     "empty"),
    (lambda: sample(janus.rand(1, 1, 2, 2, 2), janus.rand(1, 1, 1, 1, 3), mode="bicubic"), RuntimeError,
     "bicubic interpolation only supports 4D input"),
    (lambda: sample(_X, _G.double()), RuntimeError, "expected input and grid to have the same dtype"),
    (lambda: sample(_X.long(), _G.long()), NotImplementedError, "expected floating-point input and grid"),
    (lambda: F.affine_grid(janus.rand(2, 2, 3), (2, 3, 4), False), NotImplementedError,
     "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, respectively. Got size (2, 3, 4)."),
    (lambda: F.affine_grid(janus.rand(2, 2, 3), (2, 3, 4, 5, 6), False), ValueError,
     "Expected a batch of 3D affine matrices of shape Nx3x4 for size (2, 3, 4, 5, 6)."),
    (lambda: F.affine_grid(janus.rand(2, 3), (2, 3, 4, 5), False), ValueError,
     "Expected a batch of 2D affine matrices of shape Nx2x3 for size (2, 3, 4, 5)."),
    (lambda: F.affine_grid(janus.zeros(2, 2, 3, dtype=janus.int64), (2, 3, 4, 5), False), ValueError,
     "Expected theta to have floating point type, but got"),
    (lambda: F.affine_grid(janus.rand(2, 2, 3), (2, 3, 0, 5), False), ValueError,
     "Expected non-zero, positive output size. Got (2, 3, 0, 5)"),
    (lambda: F.affine_grid(janus.rand(2, 2, 3), (3, 3, 4, 5), False), RuntimeError,
     "theta holds 2 matrices but size asks for a batch of 3"),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors_name_the_problem(k):
    f, exc, text = ERRORS[k]
    with pytest.raises(exc) as e:
        f()
    assert text in str(e.value)


def test_align_corners_none_warns_and_means_false():
    theta = J(RNG.standard_normal((1, 2, 3)))
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior has changed to "
                                         "align_corners=False since 1.3.0"):
        grid = F.affine_grid(theta, (1, 1, 3, 4))
    np.testing.assert_array_equal(grid.numpy(), F.affine_grid(theta, (1, 1, 3, 4), align_corners=False).numpy())
    x = J(RNG.standard_normal((1, 1, 3, 4)))
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        out = F.grid_sample(x, grid)
    np.testing.assert_array_equal(out.numpy(), sample(x, grid, align_corners=False).numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.grid_sample(x, grid, align_corners=True)
        F.affine_grid(theta, (1, 1, 3, 4), align_corners=True)
    with pytest.warns(UserWarning, match="unit-size grids when align_corners=True"):
        F.affine_grid(theta, (1, 1, 1, 4), align_corners=True)


def test_exported_from_functional():
    from janus.nn import _grid
    assert F.grid_sample is _grid.grid_sample and F.affine_grid is _grid.affine_grid


# ------------------------------------------------------------ PyTorch
def _torch():
    if janus._C._setting_value("JANUS_SANITIZED"):
        pytest.skip("PyTorch is not run under the sanitizers")
    return pytest.importorskip("torch")


@pytest.mark.parametrize("mode,padding,align", CASES)
@pytest.mark.parametrize("nd", [2, 3])
def test_values_and_gradients_against_pytorch(mode, padding, align, nd):
    torch = _torch()
    if nd == 3 and mode == "bicubic":
        pytest.skip("PyTorch has no 5-D bicubic either")
    shape, gshape = ((2, 3, 4, 5), (2, 6, 7, 2)) if nd == 2 else ((2, 2, 3, 4, 5), (2, 3, 4, 5, 3))
    for dtype, tol in ((np.float64, 1e-10), (np.float32, 5e-5)):
        x = RNG.standard_normal(shape).astype(dtype)
        g = random_grid(gshape, -1.8, 1.8).astype(dtype)
        v = RNG.standard_normal(gshape[:1] + shape[1:2] + gshape[1:-1]).astype(dtype)
        jx, jg = J(x, True), J(g, True)
        tx, tg = torch.tensor(x, requires_grad=True), torch.tensor(g, requires_grad=True)
        jo = sample(jx, jg, mode, padding, align)
        to = torch.nn.functional.grid_sample(tx, tg, mode, padding, align)
        (jo * J(v)).sum().backward()
        (to * torch.tensor(v)).sum().backward()
        np.testing.assert_allclose(jo.detach().numpy(), to.detach().numpy(), rtol=tol, atol=tol)
        np.testing.assert_allclose(jx.grad.numpy(), tx.grad.numpy(), rtol=tol, atol=tol)
        np.testing.assert_allclose(jg.grad.numpy(), tg.grad.numpy(), rtol=tol, atol=tol * 10)


@pytest.mark.parametrize("mode,padding,align", CASES)
def test_lattice_gradients_against_pytorch(mode, padding, align):
    """On pixel centres and borders the gradient is one-sided; on a dyadic
    lattice both sides compute the same coordinates, so they agree exactly."""
    torch = _torch()
    sizes = (3, 5) if align else (4, 2)
    x = RNG.standard_normal((1, 2, sizes[1], sizes[0]))
    g = _lattice_grid(sizes, align)
    v = RNG.standard_normal((1, 2) + g.shape[1:3])
    jx, jg = J(x, True), J(g, True)
    tx, tg = torch.tensor(x, requires_grad=True), torch.tensor(g, requires_grad=True)
    (sample(jx, jg, mode, padding, align) * J(v)).sum().backward()
    (torch.nn.functional.grid_sample(tx, tg, mode, padding, align) * torch.tensor(v)).sum().backward()
    np.testing.assert_allclose(jx.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(jg.grad.numpy(), tg.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 1, 1, 6), (2, 2, 3, 4, 5)])
@pytest.mark.parametrize("align", [False, True])
def test_affine_grid_against_pytorch(size, align):
    torch = _torch()
    d = len(size) - 2
    for dtype, tol in ((np.float64, 1e-12), (np.float32, 1e-6)):
        theta = RNG.standard_normal((size[0], d, d + 1)).astype(dtype)
        jt, tt = J(theta, True), torch.tensor(theta, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            jo, to = F.affine_grid(jt, size, align), torch.nn.functional.affine_grid(tt, size, align)
        v = RNG.standard_normal(tuple(to.shape)).astype(dtype)
        (jo * J(v)).sum().backward()
        (to * torch.tensor(v)).sum().backward()
        np.testing.assert_allclose(jo.detach().numpy(), to.detach().numpy(), rtol=tol, atol=tol)
        np.testing.assert_allclose(jt.grad.numpy(), tt.grad.numpy(), rtol=tol * 10, atol=tol * 10)


def test_error_types_match_pytorch():
    torch = _torch()
    tf = torch.nn.functional
    tx, tg = torch.rand(2, 3, 4, 5), torch.rand(2, 6, 7, 2)
    pairs = [
        (lambda: tf.grid_sample(tx, tg, mode="area", align_corners=False), ERRORS[0]),
        (lambda: tf.grid_sample(tx, tg, padding_mode="circular", align_corners=False), ERRORS[1]),
        (lambda: tf.grid_sample(tx, tg[:1], align_corners=False), ERRORS[2]),
        (lambda: tf.grid_sample(tx, tg[..., :1], align_corners=False), ERRORS[3]),
        (lambda: tf.grid_sample(torch.rand(2, 3, 0, 5), tg, align_corners=False), ERRORS[6]),
        (lambda: tf.affine_grid(torch.rand(2, 2, 3), (2, 3, 4), False), ERRORS[10]),
        (lambda: tf.affine_grid(torch.rand(2, 2, 3), (2, 3, 0, 5), False), ERRORS[14]),
    ]
    for f, (_, exc, text) in pairs:
        with pytest.raises(exc) as e:
            f()
        assert text in str(e.value)


# ------------------------------------------------------------ a tiny spatial transformer
def _stn_modules(lib):
    """Localization net -> theta, then a classifier on the resampled image."""
    loc = lib.nn.Sequential(lib.nn.Conv2d(1, 4, 3), lib.nn.MaxPool2d(2), lib.nn.ReLU(), lib.nn.Flatten(),
                            lib.nn.Linear(4 * 3 * 3, 8), lib.nn.ReLU(), lib.nn.Linear(8, 6))
    cls = lib.nn.Sequential(lib.nn.Conv2d(1, 3, 3), lib.nn.ReLU(), lib.nn.Flatten(), lib.nn.Linear(3 * 6 * 6, 4))
    return lib.nn.ModuleDict({"loc": loc, "cls": cls})


def _stn_forward(lib, model, x, mode, padding):
    theta = model["loc"](x).view(-1, 2, 3)
    grid = lib.nn.functional.affine_grid(theta, x.size(), align_corners=False)
    y = lib.nn.functional.grid_sample(x, grid, mode=mode, padding_mode=padding, align_corners=False)
    return model["cls"](y)


def _stn_init(model, rng):
    for name, p in model.named_parameters():
        value = rng.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)
        if name == "loc.6.weight":
            value *= 0.1
        if name == "loc.6.bias":  # start near the identity transform, as the tutorial does
            value = np.array([1, 0, 0, 0, 1, 0], np.float32) + 0.05 * value
        with janus.no_grad():
            p.copy_(janus.tensor(value))


def _train_janus(x, y, mode, padding, steps=5):
    model = _stn_modules(janus)
    _stn_init(model, np.random.default_rng(11))
    opt = janus.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(_stn_forward(janus, model, J(x), mode, padding), J(y))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model, losses


@pytest.mark.parametrize("mode,padding", [("bilinear", "zeros"), ("bilinear", "reflection"), ("bicubic", "border")])
def test_spatial_transformer_trains(mode, padding):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 1, 8, 8)).astype(np.float32)
    y = rng.integers(0, 4, 6)
    model, losses = _train_janus(x, y, mode, padding)
    assert all(math.isfinite(v) for v in losses) and losses[-1] < losses[0]
    for name, p in model.named_parameters():
        assert p.grad is not None and np.isfinite(p.grad.numpy()).all(), name
    assert np.abs(model["loc"][6].weight.grad.numpy()).max() > 0  # the gradient reached theta's layer


@pytest.mark.parametrize("mode,padding", [("bilinear", "zeros"), ("bilinear", "reflection"), ("bicubic", "border")])
def test_spatial_transformer_losses_match_pytorch(mode, padding):
    torch = _torch()
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 1, 8, 8)).astype(np.float32)
    y = rng.integers(0, 4, 6)
    jmodel = _stn_modules(janus)
    _stn_init(jmodel, np.random.default_rng(11))
    tmodel = _stn_modules(torch)
    tmodel.load_state_dict({k: torch.tensor(v.numpy().copy()) for k, v in jmodel.state_dict().items()})
    _, jlosses = _train_janus(x, y, mode, padding)
    opt = torch.optim.Adam(tmodel.parameters(), lr=1e-2)
    tlosses = []
    for _ in range(5):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(_stn_forward(torch, tmodel, torch.tensor(x), mode, padding),
                                                 torch.tensor(y))
        loss.backward()
        opt.step()
        tlosses.append(loss.item())
    np.testing.assert_allclose(jlosses, tlosses, rtol=1e-4, atol=1e-4)
