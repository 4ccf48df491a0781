"""Spatial-transformer sampling: nn.functional.affine_grid and grid_sample.

What: affine_grid(theta, size, align_corners) turns a batch of affine
matrices (N x 2 x 3 for a 4-D size N,C,H,W; N x 3 x 4 for a 5-D size
N,C,D,H,W) into a sampling grid of normalized (x, y[, z]) coordinates in
[-1, 1] (N,H,W,2 / N,D,H,W,3), and grid_sample(input, grid, mode,
padding_mode, align_corners) reads input (N,C,H,W / N,C,D,H,W) at those
points.  Semantics, argument checks, warnings and messages follow PyTorch's
(the CPU kernels' formulas): modes 'bilinear' (trilinear for 5-D),
'nearest' (rounds half to even) and 'bicubic' (4-D only, cubic convolution
with A = -0.75); padding modes 'zeros', 'border' and 'reflection';
align_corners maps -1/+1 to the corner pixels' centres (True) or to their
outer edges (False, the default, with PyTorch's UserWarning when it is left
None).

How: composed from janus's differentiable tensor ops, no C of its own, so
autograd differentiates both functions with respect to input, grid and
theta.  affine_grid is a constant base grid (linspace per dim, then 1)
times theta^T (bmm).  grid_sample unnormalizes each grid coordinate to
pixel units, applies the padding to the coordinate (clip for 'border';
reflect, then clip for 'reflection'; for bicubic to each integer tap
instead), and lists per spatial dim the taps that take part: two
(floor, floor + 1) with weights 1 - f and f for the linear modes, one
(the rounded position) for nearest, four with the cubic weights of f for
bicubic.  The product of the per-dim taps gives 2**d / 1 / 16 corners; each
corner has one linear index into input.reshape(N, C, prod(spatial)) and a
weight (the product of the per-dim weights, which carries the gradient with
respect to the grid).  One gather reads every corner, and the weighted sum
over corners is the output; gather's backward (scatter-add) is the
gradient with respect to input.  Every index is clamped into range and its
weight zeroed (where()) when the corner lies outside the input, so the
gather never reads out of bounds and no gradient picks up a NaN.  The
clip for 'border'/'reflection' lets no gradient through at or beyond the
borders (PyTorch counts the borders as out of bounds for the gradient);
nearest gives the grid a zero gradient, as PyTorch does.

Limits: a grid point with a NaN or infinite coordinate reads NaN in every
mode, with a zero gradient (PyTorch's CPU kernel gives NaN for the default
'zeros' padding but 0 or a border value in some other modes); a finite
coordinate beyond the int32 range after padding lies outside the input
(PyTorch's safe_downgrade_to_int_range), and reflection of coordinates
beyond about 2**22 pixels is not bit-compatible.  The corners are
materialized at once: memory is about corners x N x C x output points (16x
for bicubic), fine for spatial-transformer sizes, not a fused kernel.
Results can differ from PyTorch's in the last bits (summation order;
PyTorch's CPU build fuses the unnormalizing multiply-add), so a point that
lands within rounding of a pixel boundary may take the other one-sided
gradient there.
"""
import itertools
import warnings

import janus

__all__ = ["affine_grid", "grid_sample"]

_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                  "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                  "grid_sample for details.")
_CUBIC_A = -0.75
_INT_MAX = 2 ** 31 - 1


def _sizes(t):
    return list(t.shape)


# ---- affine_grid ---------------------------------------------------------------
def _linspace_from_neg_one(n, align_corners, like):
    """PyTorch's base-grid coordinates along a dim of n points."""
    if n <= 1:
        return janus.zeros(max(n, 1), dtype=like.dtype, device=like.device)
    r = janus.linspace(-1.0, 1.0, n, dtype=like.dtype, device=like.device)
    if not align_corners:
        r = r * (n - 1) / n
    return r


def affine_grid(theta, size, align_corners=None):
    """Sampling grid of an affine transform: theta (N, 2, 3) with size
    (N, C, H, W) gives (N, H, W, 2); theta (N, 3, 4) with size
    (N, C, D, H, W) gives (N, D, H, W, 3).  The last dim holds (x, y[, z])
    in [-1, 1] units (x indexes W).  Differentiable with respect to theta."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = [int(s) for s in size]
    if len(size) == 4:
        if theta.ndim != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {tuple(size)}. "
                             f"Got {theta.shape}.")
    elif len(size) == 5:
        if theta.ndim != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {tuple(size)}. "
                             f"Got {theta.shape}.")
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {tuple(size)}.")
    spatial = size[2:]
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an intended use case of affine_grid. See the documentation "
                      "of affine_grid for details.", stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {tuple(size)}")
    n = size[0]
    if theta.shape[0] != n:
        raise RuntimeError(f"affine_grid: theta holds {theta.shape[0]} matrices but size asks for a batch of {n} "
                           f"(size {tuple(size)})")
    d = len(spatial)
    # base grid (*spatial, d + 1): x varies along the last dim (W), then y (H), then z (D), then 1
    axes = []
    for k in range(d):  # k = 0 -> x (spatial[-1]), 1 -> y, 2 -> z
        dim = d - 1 - k
        shape = [1] * d
        shape[dim] = spatial[dim]
        axes.append(_linspace_from_neg_one(spatial[dim], align_corners, theta).reshape(shape).expand(spatial))
    axes.append(janus.ones(spatial, dtype=theta.dtype, device=theta.device))
    points = 1
    for s in spatial:
        points *= s
    base = janus.stack(axes, -1).reshape(1, points, d + 1).expand(n, points, d + 1)
    grid = janus.bmm(base, theta.transpose(1, 2))
    return grid.reshape([n] + spatial + [d])


# ---- grid_sample ---------------------------------------------------------------
def _zero_grad_copy(like, value):
    """A tensor of `value` shaped like `like` that is still connected to it
    (with a zero gradient, and no NaN even where `like` is not finite)."""
    return janus.where(janus.zeros_like(like, dtype=janus.bool), like, value)


def _unnormalize(coord, size, align_corners):
    """Grid units [-1, 1] -> pixel units (PyTorch's CPU formulas)."""
    if align_corners:
        return (coord + 1) * ((size - 1) / 2)  # -1, +1 -> 0, size - 1 (the corner pixels' centres)
    return (coord + 1) * (size / 2) - 0.5  # -1, +1 -> -0.5, size - 0.5 (the corner pixels' outer edges)


def _clip(c, size):
    """Clamp into [0, size - 1]; at and beyond the borders the gradient is 0
    (PyTorch counts the borders as out of bounds for the gradient)."""
    inside = (c > 0).logical_and(c < size - 1)
    return janus.where(inside, c, c.detach().clamp(0, size - 1))


def _reflect(c, twice_low, twice_high):
    """Reflect c about low and high until it lies in [low, high] (PyTorch's
    reflect_coordinates; the bounds are passed doubled)."""
    if twice_low == twice_high:
        return _zero_grad_copy(c, 0.0)
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    d = c - low
    sign = 1 - 2 * (d.detach() < 0).to(c.dtype)  # the gradient of |d|: +1 at 0, as in PyTorch
    a = d * sign
    extra = a.remainder(span)  # a >= 0: fmod
    flips = (a.detach() / span).floor()
    odd = flips.remainder(2) == 1
    return janus.where(odd, span - extra + low, extra + low)


def _pad(c, size, padding_mode, align_corners):
    if padding_mode == "border":
        return _clip(c, size)
    if padding_mode == "reflection":
        if align_corners:
            c = _reflect(c, 0, 2 * (size - 1))
        else:
            c = _reflect(c, -1, 2 * size - 1)
        return _clip(c, size)
    return c


def _safe(c):
    """PyTorch's safe_downgrade_to_int_range: a coordinate that is not finite
    or lies beyond the int32 range becomes -100 (outside the input)."""
    ok = c.isfinite().logical_and(c.detach().abs() < _INT_MAX - 1)
    return janus.where(ok, c, -100.0)


def _cubic_weights(t):
    """Cubic convolution weights (A = -0.75) of the taps at -1, 0, 1, 2 for
    a fractional offset t in [0, 1)."""
    A = _CUBIC_A

    def near(x):  # |x| <= 1
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A

    s = 1 - t
    return [far(t + 1), near(t), near(s), far(s + 1)]


def _taps(coord, size, mode, padding_mode, align_corners):
    """The taps along one spatial dim: [(position, weight)], position a
    detached float tensor of pixel indices (possibly outside [0, size - 1]),
    weight a tensor carrying the gradient with respect to coord (finite)."""
    c = _unnormalize(coord, size, align_corners)
    if mode == "bicubic":
        # the padding applies to each integer tap; far-out points keep their side (and a zero gradient)
        far = float(2 ** 22)
        c = janus.where(c.detach().abs() <= far, c, c.detach().clamp(-far, far))
        base = c.detach().floor()
        ws = _cubic_weights(c - base)
        return [(_safe(_pad(base + (k - 1), size, padding_mode, align_corners)), w) for k, w in enumerate(ws)]
    c = _safe(_pad(c, size, padding_mode, align_corners))
    if mode == "nearest":
        return [(c.detach().round(), _zero_grad_copy(c, 1.0))]
    lo = c.detach().floor()
    frac = c - lo
    return [(lo, 1 - frac), (lo + 1, frac)]


def _check_sample_args(input, grid, mode, padding_mode):
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if input.device != grid.device:
        raise RuntimeError(f"grid_sampler(): expected input and grid to be on same device, but input is on "
                           f"{input.device} and grid is on {grid.device}")
    if input.ndim != grid.ndim or input.ndim not in (4, 5):
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but "
                           f"got input with sizes {_sizes(input)} and grid with sizes {_sizes(grid)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {_sizes(input)} and grid with sizes {_sizes(grid)}")
    if grid.shape[-1] != input.ndim - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.ndim - 2} in last dimension, but got "
                           f"grid with sizes {_sizes(grid)}")
    for i in range(2, input.ndim):
        if input.shape[i] <= 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                               f"sizes {_sizes(input)} with dimension {i} being empty")
    if input.ndim == 5 and mode == "bicubic":
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if not input.is_floating_point() or not grid.is_floating_point():
        raise NotImplementedError(f"grid_sample: expected floating-point input and grid, but got input of "
                                  f"{input.dtype} and grid of {grid.dtype}")
    if input.dtype != grid.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have the same dtype, but input is "
                           f"{input.dtype} and grid is {grid.dtype}")


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample input (N, C, H_in, W_in) at grid (N, H_out, W_out, 2) -> (N, C,
    H_out, W_out); or input (N, C, D_in, H_in, W_in) at grid (N, D_out,
    H_out, W_out, 3) -> (N, C, D_out, H_out, W_out).  grid[..., 0] is x (W),
    grid[..., 1] is y (H), grid[..., 2] is z (D), in [-1, 1] units.
    Differentiable with respect to input and grid."""
    _check_sample_args(input, grid, mode, padding_mode)
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    n, c = input.shape[0], input.shape[1]
    spatial_in = list(input.shape[2:])
    spatial_out = list(grid.shape[1:-1])
    d = len(spatial_in)
    points_in = 1
    for s in spatial_in:
        points_in *= s
    points_out = 1
    for s in spatial_out:
        points_out *= s
    flat_grid = grid.reshape(n, points_out, d)
    # a point with a NaN or infinite coordinate is sampled at 0 (finite gradients) and reads NaN at the end
    finite = flat_grid.isfinite().all(-1)
    flat_grid = janus.where(finite.unsqueeze(-1), flat_grid, 0.0)
    # per input dim (D, H, W order), the taps: (index clamped into range, weight zeroed outside the input)
    per_dim, stride = [], 1
    for k in reversed(range(d)):  # k: input spatial dim; its coordinate is grid[..., d - 1 - k]
        size = spatial_in[k]
        taps = []
        for pos, w in _taps(flat_grid.select(-1, d - 1 - k), size, mode, padding_mode, align_corners):
            inside = (pos >= 0).logical_and(pos <= size - 1)
            index = janus.where(inside, pos, 0.0).long() * stride
            taps.append((index, janus.where(inside, w, 0.0)))
        per_dim.insert(0, taps)
        stride *= size
    indices, weights = [], []
    for corner in itertools.product(*per_dim):
        index, weight = corner[0]
        for i, w in corner[1:]:
            index = index + i
            weight = weight * w
        indices.append(index)
        weights.append(weight)
    corners = len(indices)
    index = janus.stack(indices, 1).reshape(n, 1, corners * points_out).expand(n, c, corners * points_out)
    weight = janus.stack(weights, 1).reshape(n, 1, corners, points_out)
    values = input.reshape(n, c, points_in).gather(2, index).reshape(n, c, corners, points_out)
    out = janus.where(finite.unsqueeze(1), (values * weight).sum(2), float("nan"))
    return out.reshape([n, c] + spatial_out)
