"""Torch functions composed from table ops, the longer tail: aminmax,
cummax/cummin, logcumsumexp, take, kron, inner, dist, cov/corrcoef,
diagflat, the splits, fmax/fmin, copysign/signbit, isposinf/isneginf/isreal,
nanmedian, quantile/nanquantile, histc, trapezoid and cumulative_trapezoid,
logspace, tril/triu_indices, cartesian_prod, block_diag, atleast_nd,
column_stack/dstack, searchsorted/bucketize, vander, frexp/ldexp.

Each is a short sequence of ordinary ops, so autograd differentiates it
where torch does; what differs from torch is said in its docstring
(tests/python/test_composite_more.py checks them against numpy, central
differences and PyTorch).  Registered like janus/_functions.py's (`both`,
`method`), after it: ops defined later (sort, cumsum, cumprod, diag,
meshgrid: janus/_compose.py; factories) are looked up in FUNCTIONS when
called.
"""
import collections as _collections
import warnings as _warnings

from ._functions import (  # noqa: F401
    FUNCTIONS, TensorBase, _C, _I, _LN2, _amax, _amin, _b, _bool, _check_tensor, _dtype, _float32, _int64,
    _math, _wrap_dim, both, clamp, diff, function, index_add_, isfinite, max, method, min, movedim, narrow,
    norm, ops, return_types, sizes_arg, t, tensor_split)

_float64 = _dtype._BY_NAME["float64"]
_int32 = _dtype._BY_NAME["int32"]
_uint8 = _dtype._BY_NAME["uint8"]
_tname = _dtype.scalar_type_name


def _rtype(name, fields):
    """return_types.<name>, made here when janus/return_types.py does not define it."""
    t = getattr(return_types, name, None)
    if t is None:
        t = _collections.namedtuple(name, fields, module=return_types.__name__)
        setattr(return_types, name, t)
    return t


_rt_aminmax = _rtype("aminmax", ["min", "max"])
_rt_cummax = _rtype("cummax", ["values", "indices"])
_rt_cummin = _rtype("cummin", ["values", "indices"])
_rt_nanmedian = _rtype("nanmedian", ["values", "indices"])
_rt_frexp = _rtype("frexp", ["mantissa", "exponent"])


def _int_arg(v, fn, arg):
    if isinstance(v, bool) or isinstance(v, float) or not hasattr(v, "__index__"):
        raise TypeError(f"{fn}(): argument '{arg}' must be int, not {type(v).__name__}")
    return v.__index__()


def _into(out, r, fn):
    """torch's out=: r written into out (resized when its shape differs); out returned.
    Several results (a tuple r) go into a tuple of as many tensors."""
    if out is None:
        return r
    if isinstance(r, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(r):
            raise TypeError(f"{fn}(): out must be a tuple of {len(r)} tensors")
        done = [_into(o, v, fn) for o, v in zip(out, r)]
        return type(r)(*done) if hasattr(r, "_fields") else tuple(done)
    _check_tensor(out, fn, "out")
    if tuple(out.shape) != tuple(r.shape):
        out._take_header(FUNCTIONS["empty"](r.shape, dtype=out.dtype, device=out.device))  # resized, as torch's out=
    return out.copy_(r)


def _empty_of(t):
    return t.reshape(-1)[:0] if t.dim() else t


def _result_type(*ts):
    """The dtype janus's type promotion gives these tensors (from empty stand-ins: no work)."""
    r = _empty_of(ts[0])
    for t in ts[1:]:
        r = _I["where"](FUNCTIONS["zeros"](0, dtype=_bool, device=r.device), r, _empty_of(t))
    return r.dtype


def _float_type(dt):
    return dt if dt.is_floating_point else _float32  # torch's default dtype for integer inputs


def _hillis_steele(parts, d, n, combine):
    """Inclusive scan along d of the tensors in parts (same shape): log2(n) rounds of
    combine(later, earlier) over windows doubling in length."""
    k = 1
    while k < n:
        later = [narrow(p, d, k, n - k) for p in parts]
        earlier = [narrow(p, d, 0, n - k) for p in parts]
        new = combine(later, earlier)
        parts = [FUNCTIONS["cat"]([narrow(p, d, 0, k), q], d) for p, q in zip(parts, new)]
        k *= 2
    return parts


# ------------------------------------------------------------ min/max family
@both
def aminmax(input, *, dim=None, keepdim=False, out=None):
    """(min, max) of all elements, or along dim: amin and amax (ties share the gradient evenly)."""
    _check_tensor(input, "aminmax")
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has "
                               "no identity.")
        mn, mx = _amin(input, (), False), _amax(input, (), False)
        if keepdim:
            mn, mx = mn.reshape([1] * input.dim()), mx.reshape([1] * input.dim())
    else:
        d = _wrap_dim(dim, input.dim(), "aminmax")
        if input.dim() and input.shape[d] == 0:
            raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
        mn, mx = _amin(input, d, keepdim), _amax(input, d, keepdim)
    return _into(out, _rt_aminmax(mn, mx), "aminmax")


def _cum_extreme(input, dim, larger, fn, rt):
    _check_tensor(input, fn)
    d = _wrap_dim(dim, input.dim(), fn)
    if input.dim() == 0:
        return rt(FUNCTIONS["clone"](input), FUNCTIONS["zeros"]((), dtype=_int64, device=input.device))
    n = input.shape[d]
    x = input.detach()
    shape = [1] * x.dim()
    shape[d] = n
    idx = FUNCTIONS["arange"](n, device=x.device).reshape(shape).expand(x.shape).contiguous()
    isf = x.dtype.is_floating_point

    def combine(later, earlier):
        (lv, li), (ev, ei) = later, earlier
        # the later element wins ties (torch's index is the last occurrence), and a NaN wins
        # over everything (as torch, where a NaN stays once seen, at the index of the latest NaN)
        take = lv >= ev if larger else lv <= ev
        if isf:
            take = take | FUNCTIONS["isnan"](lv)
        return [_I["where"](take, lv, ev), _I["where"](take, li, ei)]

    _, idx = _hillis_steele([x, idx], d, n, combine)
    return rt(FUNCTIONS["gather"](input, d, idx), idx)  # a gather: the gradient goes to the picked elements


@both
def cummax(input, dim, *, out=None):
    """Running maximum along dim and the index where it was found (the last one among equal
    values; NaN propagates).  A log2(n)-round scan; the values are gathered from input, so the
    gradient goes to the element each index names (torch's)."""
    return _into(out, _cum_extreme(input, dim, True, "cummax", _rt_cummax), "cummax")


@both
def cummin(input, dim, *, out=None):
    """Running minimum along dim and its index (the last among equal values; NaN propagates)."""
    return _into(out, _cum_extreme(input, dim, False, "cummin", _rt_cummin), "cummin")


def _log_add_exp(a, b):
    """log(exp(a) + exp(b)) = big + log1p(exp(small - big)), with equal operands (also equal
    infinities) giving big + log 2, so no inf - inf reaches a value or a gradient."""
    ge = a >= b
    big, small = _I["where"](ge, a, b), _I["where"](ge, b, a)
    diff = _I["where"](small == big, FUNCTIONS["zeros_like"](big), small - big)
    return big + FUNCTIONS["log1p"](FUNCTIONS["exp"](diff))


@both
def logcumsumexp(input, dim, *, out=None):
    """log(cumsum(exp(input))) along dim without overflow: a log2(n)-round scan of pairwise
    log-add-exp (sums associated differently from torch's loop: last-bit differences)."""
    _check_tensor(input, "logcumsumexp")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for '{_tname(input.dtype)}'")
    d = _wrap_dim(dim, input.dim(), "logcumsumexp")
    if input.dim() == 0:
        return _into(out, FUNCTIONS["clone"](input), "logcumsumexp")
    n = input.shape[d]
    r = _hillis_steele([input], d, n, lambda later, earlier: [_log_add_exp(later[0], earlier[0])])[0]
    return _into(out, r if r is not input else FUNCTIONS["clone"](input), "logcumsumexp")


# ------------------------------------------------------------- indexing
@both
def take(input, index):
    """input as a 1-d tensor indexed by index (negative indices count from the end); the result
    has index's shape.  The bounds check reads the index (a sync, as torch's)."""
    _check_tensor(input, "take")
    _check_tensor(index, "take", "index")
    if index.dtype is not _int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {_tname(index.dtype)}")
    n = input.numel()
    if index.numel():
        if n == 0:
            raise IndexError("take(): tried to take from an empty tensor")
        flat = index.reshape(-1)
        bad = (flat < -n) | (flat >= n)
        if bool(FUNCTIONS["any"](bad)):
            first = int(flat[bad][0])
            raise IndexError(f"out of range: tried to access index {first} on a tensor of {n} elements.")
    idx = _I["where"](index < 0, index + n, index).reshape(-1)
    return FUNCTIONS["index_select"](input.reshape(-1), 0, idx).reshape(index.shape)


# --------------------------------------------------------------- products
@both
def kron(input, other, *, out=None):
    """Kronecker product: block (i, j, ...) of the result is input[i, j, ...] * other (the
    shorter shape padded with leading 1s)."""
    _check_tensor(input, "kron")
    _check_tensor(other, "kron", "other")
    nd = _b.max(input.dim(), other.dim())
    sa = [1] * (nd - input.dim()) + list(input.shape)
    sb = [1] * (nd - other.dim()) + list(other.shape)
    full = [p * q for p, q in zip(sa, sb)]
    if 2 * nd <= _C.MAX_DIMS:
        a = input.reshape([v for s in sa for v in (s, 1)])
        b = other.reshape([v for s in sb for v in (1, s)])
        r = (a * b).reshape(full)
    else:  # too many dims to interleave: index_select along each dim instead
        a, b = input.reshape(sa), other.reshape(sb)
        ar = FUNCTIONS["arange"]
        for i in range(nd):
            if full[i]:
                a = FUNCTIONS["index_select"](a, i, ar(full[i], device=a.device) // sb[i])
                b = FUNCTIONS["index_select"](b, i, ar(full[i], device=b.device) % sb[i])
            else:
                a, b = narrow(a, i, 0, 0), narrow(b, i, 0, 0)
        r = a * b
    return _into(out, r, "kron")


@both
def inner(input, other, *, out=None):
    """Sum over the last dims of input and other (shape input.shape[:-1] + other.shape[:-1]);
    a product when either is 0-d.  A matrix product of the flattened leading dims."""
    _check_tensor(input, "inner")
    _check_tensor(other, "inner", "other")
    if input.dim() == 0 or other.dim() == 0:
        return _into(out, input * other, "inner")
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    if input.dtype is not other.dtype:
        raise RuntimeError("both inputs should have same dtype")
    k = input.shape[-1]
    if input.dim() == 1 and other.dim() == 1:
        return _into(out, FUNCTIONS["matmul"](input, other), "inner")
    lead_a, lead_b = list(input.shape[:-1]), list(other.shape[:-1])
    na, nb = _math.prod(lead_a), _math.prod(lead_b)
    r = FUNCTIONS["matmul"](input.reshape(na, k), other.reshape(nb, k).transpose(0, 1))
    return _into(out, r.reshape(lead_a + lead_b), "inner")


@both
def dist(input, other, p=2):
    """The p-norm of input - other (broadcast): p = 2, 1, inf, -inf, 0 or any number.  Elements
    that are zero get gradient 0 for every p, and so does a zero norm (torch's masks)."""
    _check_tensor(input, "dist")
    _check_tensor(other, "dist", "other")
    d = input - other
    if not d.dtype.is_floating_point:
        raise NotImplementedError(f"norm(): input dtype should be either floating point or complex. "
                                  f"Got {_tname(d.dtype)} instead.")
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise TypeError(f"dist(): argument 'p' must be Number, not {type(p).__name__}")
    p = float(p)
    if p == 2:
        return norm(d)
    a = FUNCTIONS["abs"](d)
    if p in (_math.inf, -_math.inf):
        if d.numel() == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {'inf' if p > 0 else '-inf'} norm on an "
                               f"empty tensor because the operation does not have an identity")
        return _amax(a, (), False) if p > 0 else _amin(a, (), False)
    if p == 0:
        r = FUNCTIONS["sum"]((a != 0).to(d.dtype))
        if d.requires_grad:  # in the graph with a zero gradient, as torch's (backward() works)
            r = r + FUNCTIONS["sum"](_I["where"](FUNCTIONS["zeros_like"](d, dtype=_bool), d, 0.0))
        return r
    if p == 1:
        return FUNCTIONS["sum"](a)
    nz = a != 0  # NaN too: it propagates
    safe = _I["where"](nz, a, FUNCTIONS["ones_like"](a))
    ap = _I["where"](nz, safe ** p, 0.0 if p > 0 else _math.inf)
    s = FUNCTIONS["sum"](ap)
    ok = (s > 0) & (s < _math.inf)
    ss = _I["where"](ok, s, FUNCTIONS["ones_like"](s))
    return _I["where"](ok, ss ** (1.0 / p), s.detach() ** (1.0 / p))


@both
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distance between each row of x1 [.., P, M] and each of x2 [.., R, M]: [.., P, R],
    the batch dims broadcast.  Computed from the differences for every p and size (torch
    switches to a matrix product for p = 2 past 25 rows, whose rounding differs slightly; the
    compute_mode is checked, not followed); a zero distance has gradient 0, as torch's.
    Memory: the [.., P, R, M] differences."""
    _check_tensor(x1, "cdist", "x1")
    _check_tensor(x2, "cdist", "x2")
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} "
                           f"X2: {x2.shape[-1]}")
    if not (x1.dtype.is_floating_point and x2.dtype.is_floating_point):
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: {_tname(x1.dtype)}")
    if isinstance(p, bool) or not isinstance(p, (int, float)) or p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    if compute_mode not in ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                            "donot_use_mm_for_euclid_dist", None):
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    from .linalg import vector_norm
    return vector_norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), ord=float(p), dim=-1)


# ------------------------------------------------------------ statistics
@both
def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance of the rows of input (variables) over its columns (observations), weighted by
    integer frequencies fweights and float weights aweights, as numpy.cov.  The weight checks
    and the degrees-of-freedom test read the weights (syncs, as torch's)."""
    _check_tensor(input, "cov")
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    if input.dtype is _bool:
        raise NotImplementedError("cov(): bool dtype is not supported for input")
    if isinstance(correction, float) or not hasattr(correction, "__index__"):
        raise TypeError(f"cov(): argument 'correction' must be int, not {type(correction).__name__}")
    correction = correction.__index__()
    x = input.reshape(1, -1) if input.dim() < 2 else input
    nobs = x.shape[1]
    w = None
    for name, wt in (("fweights", fweights), ("aweights", aweights)):
        if wt is None:
            continue
        _check_tensor(wt, "cov", name)
        if wt.dim() > 1:
            raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
                               f"{wt.dim()} dimensions")
        integral = not wt.dtype.is_floating_point and wt.dtype is not _bool
        if name == "fweights" and not integral:
            raise RuntimeError(f"cov(): expected fweights to have integral dtype but got fweights with "
                               f"{_tname(wt.dtype)} dtype")
        if name == "aweights" and not wt.dtype.is_floating_point:
            raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got aweights with "
                               f"{_tname(wt.dtype)} dtype")
        if wt.numel() != nobs:
            raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the "
                               f"input but got {wt.numel()} != {nobs}")
        if nobs and float(_amin(wt.detach(), (), False)) < 0:
            raise RuntimeError(f"cov(): {name} cannot be negative")
        w = wt if w is None else w * wt
    if w is not None:
        w_sum = FUNCTIONS["sum"](w)
        if not bool(w_sum != 0):
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
        avg = FUNCTIONS["sum"](x * w, 1) / w_sum
        if aweights is not None and correction != 0:
            norm_factor = w_sum - correction * FUNCTIONS["sum"](w * aweights) / w_sum
        else:
            norm_factor = w_sum - correction
        if bool(norm_factor <= 0):
            norm_factor = None
    else:
        avg = FUNCTIONS["sum"](x, 1) / (nobs if nobs else FUNCTIONS["zeros"]((), device=x.device))  # 0/0: NaN
        norm_factor = nobs - correction if nobs - correction > 0 else None
    if norm_factor is None:
        _warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                       "observations.", UserWarning, stacklevel=2)
        norm_factor = 0.0
    xc = x - avg.unsqueeze(1)
    c = FUNCTIONS["matmul"](xc, (xc * w if w is not None else xc).transpose(0, 1))
    return FUNCTIONS["squeeze"](c / norm_factor)


@both
def corrcoef(input):
    """Pearson correlation coefficients of the rows of input: cov(input) scaled by the standard
    deviations, clipped to [-1, 1] (a 0-d covariance gives c / c)."""
    _check_tensor(input, "corrcoef")
    if input.dim() > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    c = cov(input)
    if c.dim() == 0:
        return c / c
    sd = FUNCTIONS["sqrt"](FUNCTIONS["diag"](c))
    c = c / sd.reshape(-1, 1)
    c = c / sd.reshape(1, -1)
    return clamp(c, -1, 1)


def _nan_rank_pick(x, d):
    """Sort along d; the lower median's position among the non-NaN values (0 when all are NaN)."""
    s, i = ops.sort(x.detach(), dim=d)
    if x.dtype.is_floating_point:
        cnt = FUNCTIONS["sum"](~FUNCTIONS["isnan"](x.detach()), d, True)
        pos = _I["where"](cnt > 0, (cnt - 1) // 2, FUNCTIONS["zeros_like"](cnt))
    else:
        pos = FUNCTIONS["full"]([1 if k == d else v for k, v in enumerate(x.shape)], (x.shape[d] - 1) // 2,
                                dtype=_int64, device=x.device)
    return s, i, pos


@both
def nanmedian(input, dim=None, keepdim=False, *, out=None):
    """median ignoring NaN: the lower of the two middle non-NaN values (NaN where all are NaN).
    nanmedian(input) -> 0-d; its gradient is shared evenly by the elements equal to the median
    (torch's).  nanmedian(input, dim, keepdim=False) -> (values, indices), the gradient going to
    the index; among equal values the index is the stable sort's (torch's may be another)."""
    _check_tensor(input, "nanmedian")
    if dim is None:
        if keepdim:
            raise TypeError('nanmedian() missing 1 required positional arguments: "dim"')
        flat = input.reshape(-1)
        if flat.numel() == 0:
            return _into(out, FUNCTIONS["full"]((), _math.nan, dtype=input.dtype, device=input.device), "nanmedian")
        s, _, pos = _nan_rank_pick(flat, 0)
        v = FUNCTIONS["gather"](s, 0, pos).reshape(())  # no gradient: the mask below carries it
        if not input.dtype.is_floating_point:
            return _into(out, v, "nanmedian")
        isn = FUNCTIONS["isnan"](flat)
        mask = (flat == v) | (isn & FUNCTIONS["isnan"](v))
        cnt = FUNCTIONS["sum"](mask).to(flat.dtype)
        zero = FUNCTIONS["zeros_like"](flat)
        # v + mean(x - v) over the masked elements: exactly v, gradient 1/cnt each; an infinite
        # (or NaN) v takes the plain mean instead, where x - v would be NaN
        exact = v + FUNCTIONS["sum"](_I["where"](mask, flat - v, zero)) / cnt
        plain = FUNCTIONS["sum"](_I["where"](mask, flat, zero)) / cnt
        return _into(out, _I["where"](isfinite(v), exact, plain), "nanmedian")
    d = _wrap_dim(dim, input.dim(), "nanmedian")
    if input.dim() == 0:
        return _into(out, _rt_nanmedian(FUNCTIONS["clone"](input),
                                        FUNCTIONS["zeros"]((), dtype=_int64, device=input.device)),
                     "nanmedian")
    if input.shape[d] == 0:
        raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
    _, i, pos = _nan_rank_pick(input, d)
    idx = FUNCTIONS["gather"](i, d, pos)
    vals = FUNCTIONS["gather"](input, d, idx)
    if not keepdim:
        vals, idx = vals.squeeze(d), idx.squeeze(d)
    return _into(out, _rt_nanmedian(vals, idx), "nanmedian")


_QUANTILE_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input, q, dim, keepdim, interpolation, out, fn, ignore_nan):
    _check_tensor(input, fn)
    if isinstance(q, TensorBase):
        qt, scalar = q, q.dim() == 0
    else:
        if isinstance(q, bool) or not isinstance(q, (int, float)):
            raise TypeError(f"{fn}(): argument 'q' must be float or Tensor, not {type(q).__name__}")
        if not 0 <= q <= 1:
            raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {float(q)}")
        qt, scalar = None, True
    if interpolation not in _QUANTILE_MODES:
        raise RuntimeError(f"quantile() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    if input.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if qt is not None and qt.dim() > 1:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if input.dtype not in (_float32, _float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if qt is None:
        qt = FUNCTIONS["full"]((), float(q), dtype=input.dtype, device=input.device)  # rounded to input's dtype
    elif qt.dtype is not input.dtype:
        raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
    elif qt.numel() and not bool(FUNCTIONS["all"]((qt >= 0) & (qt <= 1))):
        raise RuntimeError("quantile() q values must be in the range [0, 1]")
    if dim is None:
        x = input.reshape(-1)
        out_shape = [1] * input.dim() if keepdim else []
    else:
        d = _wrap_dim(dim, input.dim(), fn)
        if input.dim() == 0:
            x, out_shape = input.reshape(1), []
        else:
            x = movedim(input, d, -1)
            out_shape = list(input.shape)
            if keepdim:
                out_shape[d] = 1
            else:
                del out_shape[d]
    s = FUNCTIONS["sort"](x, -1)[0]  # differentiable: the gradient flows back through the sort
    n = s.shape[-1]
    q64 = qt.to(_float64).reshape(-1)  # ranks in float64 (q keeps its gradient, as torch's)
    nan = FUNCTIONS["isnan"](s.detach())
    if ignore_nan:  # ranks among the non-NaN values; all NaN: rank 0, a NaN
        cnt = FUNCTIONS["sum"](~nan, -1, True)
        ranks = q64 * (cnt - 1).to(_float64)
        ranks = _I["where"](ranks < 0, 0.0, ranks)
    else:  # a NaN in the slice: the last rank, a NaN
        ranks = _I["where"](FUNCTIONS["any"](nan, -1, True), float(n - 1), q64 * (n - 1))
    if interpolation == "lower":
        ranks = FUNCTIONS["floor"](ranks)
    elif interpolation == "higher":
        ranks = FUNCTIONS["ceil"](ranks)
    elif interpolation == "nearest":
        ranks = FUNCTIONS["round"](ranks)  # half to even
    below = FUNCTIONS["floor"](ranks.detach())
    r = FUNCTIONS["gather"](s, -1, below.long())
    if interpolation in ("linear", "midpoint"):
        above = FUNCTIONS["ceil"](ranks.detach())
        va = FUNCTIONS["gather"](s, -1, above.long())
        if interpolation == "linear":
            w = (ranks - below).to(input.dtype)
        else:
            w = _I["where"](above > below, 0.5, FUNCTIONS["zeros_like"](ranks)).to(input.dtype)
        diff = va - r
        # torch's lerp: from the nearer end (the same infinities give the same NaNs), one rounding
        # (a fused multiply-add): for float32 the product is exact in float64, which emulates it
        if input.dtype is _float32:
            f = lambda t: t.to(_float64)  # noqa: E731
            r = _I["where"](w < 0.5, f(r) + f(w) * f(diff), f(va) - f(diff) * f(1 - w)).to(_float32)
        else:
            r = _I["where"](w < 0.5, r + w * diff, va - diff * (1 - w))
    if scalar:
        r = r.squeeze(-1).reshape(out_shape)
    else:
        r = movedim(r, -1, 0).reshape([q64.shape[0]] + out_shape)
    return _into(out, r, fn)


@both
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The q-th quantiles (q a number or a 1-d tensor in [0, 1], its values first in the result)
    of all elements or along dim; a slice holding NaN gives NaN.  interpolation: linear, lower,
    higher, midpoint or nearest (q rounded to input's dtype, ranks in float64, nearest rounding
    half to even, as torch's).  Sorts along dim; the gradient flows back through the sort (and
    to a tensor q).  float32 results are torch's bit for bit; float64 ones may differ in the
    last bit (torch's lerp is a fused multiply-add).  Checking a tensor q's range reads it (a
    sync, as torch's)."""
    return _quantile(input, q, dim, keepdim, interpolation, out, "quantile", False)


@both
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """quantile ignoring NaN (a slice of only NaN gives NaN)."""
    return _quantile(input, q, dim, keepdim, interpolation, out, "nanquantile", True)


@both
def histc(input, bins=100, min=0, max=0, *, out=None):
    """Counts of the elements in `bins` equal-width bins over [min, max] (min == max: the data's
    range), in input's float dtype; elements outside (and NaN) are ignored.  Bin i holds
    floor((x - min) * bins / (max - min)) (max itself in the last), computed in input's dtype as
    torch's.  No gradient (torch has none); reading the data's range is a sync."""
    _check_tensor(input, "histc")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{_tname(input.dtype)}'")
    bins = _int_arg(bins, "histc", "bins")
    lo, hi = float(min), float(max)
    x = input.detach().reshape(-1)
    if lo == hi and x.numel():
        lo, hi = float(_amin(x, (), False)), float(_amax(x, (), False))
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (_math.isfinite(lo) and _math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo:g}, {hi:g}] is not finite")
    if not lo < hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    full = FUNCTIONS["full"]
    lo_t, hi_t = full((), lo, dtype=x.dtype, device=x.device), full((), hi, dtype=x.dtype, device=x.device)
    inside = (x >= lo_t) & (x <= hi_t)
    pos = FUNCTIONS["floor"](((x - lo_t) * bins) / (hi_t - lo_t))
    pos = _I["where"](inside, pos, FUNCTIONS["zeros_like"](pos)).long()
    pos = clamp(pos, 0, bins - 1)
    h = index_add_(FUNCTIONS["zeros"](bins, dtype=x.dtype, device=x.device), 0, pos, inside.to(x.dtype))
    return _into(out, h, "histc")


# ------------------------------------------------------------- integration
def _trapz_args(y, x, dx, dim, fn):
    _check_tensor(y, fn, "y")
    if x is not None and dx is not None:
        raise TypeError(f"{fn}() received an invalid combination of arguments: pass x (a Tensor) or dx "
                        f"(a number), not both")
    if x is not None and not isinstance(x, TensorBase):
        raise TypeError(f"{fn}() received an invalid combination of arguments: x must be a Tensor, not "
                        f"{type(x).__name__} (pass a constant spacing as dx=)")
    if y.dim() == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = _wrap_dim(dim, y.dim(), fn)
    if y.dtype is _bool or (x is not None and x.dtype is _bool):
        raise NotImplementedError(f"{fn}: received a bool input for `x` or `y`, but bool is not supported")
    if x is None:
        if dx is None:
            dx = 1
        if isinstance(dx, TensorBase):
            dx = dx.item()
        if isinstance(dx, bool) or not isinstance(dx, (int, float)):
            raise TypeError(f"{fn}: Currently, we only support dx as a real number.")
        return d, float(dx)
    if x.dim() == 1:
        if x.shape[0] != y.shape[d]:
            raise RuntimeError(f"{fn}: There must be one `x` value for each sample point")
        shape = [1] * y.dim()
        shape[d] = x.shape[0]
        xv = x.reshape(shape)
    elif x.dim() < y.dim():
        xv = x.reshape([1] * (y.dim() - x.dim()) + list(x.shape))
    else:
        xv = x
    m = xv.shape[d]
    if m == 0:
        return d, xv
    return d, narrow(xv, d, 1, m - 1) - narrow(xv, d, 0, m - 1)


@function
def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along dim: with sample points x (1-d along dim, or broadcasting), or
    with a constant spacing dx (default 1): dx * (sum(y) - (y[0] + y[-1]) / 2), torch's formula."""
    d, step = _trapz_args(y, x, dx, dim, "trapezoid")
    n = y.shape[d]
    if n == 0:
        shape = [v for k, v in enumerate(y.shape) if k != d]
        return FUNCTIONS["zeros"](shape, dtype=y.dtype, device=y.device)
    if isinstance(step, float):
        return (FUNCTIONS["sum"](y, d) - (y.select(d, 0) + y.select(d, n - 1)) * 0.5) * step
    return FUNCTIONS["sum"](step * (narrow(y, d, 0, n - 1) + narrow(y, d, 1, n - 1)), d) / 2.0


@function
def trapz(y, x=None, *, dx=None, dim=-1):
    """trapezoid's older name."""
    return trapezoid(y, x, dx=dx, dim=dim)


@function
def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal rule along dim (one element fewer than y along dim)."""
    d, step = _trapz_args(y, x, dx, dim, "cumulative_trapezoid")
    n = y.shape[d]
    m = _b.max(n - 1, 0)
    left, right = narrow(y, d, 0, m), narrow(y, d, _b.min(1, n), m)
    parts = (step / 2.0 * (left + right)) if isinstance(step, float) else ((step * (left + right)) / 2.0)
    return FUNCTIONS["cumsum"](parts, d)


# ------------------------------------------------------------- factories
@function
def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False):
    """base ** linspace(start, end, steps), computed in float64 and cast to dtype (default
    float32; an integer dtype truncates, and takes start and end as integers, as torch's).
    Rounded once from float64: torch's float32 kernel differs in the last bit now and then."""
    from ._dtype import to_dtype
    dtype = to_dtype(dtype) or _float32
    if isinstance(steps, bool) or not isinstance(steps, int):
        raise TypeError(f"logspace(): argument 'steps' must be int, not {type(steps).__name__}")
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    if isinstance(start, TensorBase):
        start = start.item()
    if isinstance(end, TensorBase):
        end = end.item()
    if not dtype.is_floating_point:
        start, end = int(start), int(end)
    e = FUNCTIONS["linspace"](start, end, steps, dtype=_float64, layout=layout, device=device)
    r = FUNCTIONS["pow"](float(base), e).to(dtype)
    if requires_grad:
        r.requires_grad_(True)
    return _into(out, r, "logspace")


def _tri_indices(row, col, offset, dtype, device, fn, upper):
    from ._dtype import to_dtype
    row, col = _int_arg(row, fn, "row"), _int_arg(col, fn, "col")
    offset = _int_arg(offset, fn, "offset")
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    dtype = to_dtype(dtype) or _int64
    if dtype not in (_int64, _int32):
        raise NotImplementedError(f"\"{fn}\" not implemented for '{_tname(dtype)}'")
    ar = FUNCTIONS["arange"]
    off = ar(col, device=device).reshape(1, col) - ar(row, device=device).reshape(row, 1)  # col - row
    mask = off >= offset if upper else off <= offset
    return _C._nonzero(mask).transpose(0, 1).contiguous().to(dtype)


@function
def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The 2 x N (row, column) coordinates of the lower triangle of a row x col matrix (on and
    below the offset-th diagonal), in row-major order: nonzero() of a row x col mask."""
    return _tri_indices(row, col, offset, dtype, device, "tril_indices", False)


@function
def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The 2 x N coordinates of the upper triangle (on and above the offset-th diagonal)."""
    return _tri_indices(row, col, offset, dtype, device, "triu_indices", True)


# --------------------------------------------------------- joining, splitting
def _tensor_list(tensors, fn):
    for i, t in enumerate(tensors):
        if not isinstance(t, TensorBase):
            raise TypeError(f"{fn}(): expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
    return list(tensors)


@function
def cartesian_prod(*tensors):
    """Every combination of one element of each 1-d tensor, as the rows of an (N, k) tensor
    (one tensor: that tensor)."""
    ts = _tensor_list(tensors, "cartesian_prod")
    if not ts:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in ts:
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(ts) == 1:
        return ts[0]
    if any(t.dtype is not ts[0].dtype for t in ts):
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    grids = FUNCTIONS["meshgrid"](*ts, indexing="ij")
    return FUNCTIONS["stack"]([g.reshape(-1) for g in grids], 1)


@function
def block_diag(*tensors):
    """The tensors (0-d: 1x1, 1-d: one row, 2-d) on the diagonal of a zero matrix, in the
    promoted dtype."""
    ts = _tensor_list(tensors, "block_diag")
    mats = []
    for i, t in enumerate(ts):
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.dim()} dimensions")
        mats.append(t.reshape(1, 1) if t.dim() == 0 else t.reshape(1, -1) if t.dim() == 1 else t)
    if not mats:
        return FUNCTIONS["zeros"](1, 0)
    dt = _result_type(*mats)
    ncol = _b.sum(m.shape[1] for m in mats)
    rows, col = [], 0
    for m in mats:
        r, c = m.shape
        z = FUNCTIONS["zeros"]
        parts = [z(r, col, dtype=dt, device=m.device), m.to(dt), z(r, ncol - col - c, dtype=dt, device=m.device)]
        rows.append(FUNCTIONS["cat"](parts, 1))
        col += c
    return FUNCTIONS["cat"](rows, 0)


def _atleast(tensors, fn, f):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(f(t) for t in _tensor_list(tensors[0], fn))
    ts = _tensor_list(tensors, fn)
    return f(ts[0]) if len(ts) == 1 else tuple(f(t) for t in ts)


def _at1(t):
    return t if t.dim() >= 1 else t.reshape(1)


def _at2(t):
    return t if t.dim() >= 2 else t.reshape(1, 1) if t.dim() == 0 else t.unsqueeze(0)


def _at3(t):
    if t.dim() >= 3:
        return t
    if t.dim() == 0:
        return t.reshape(1, 1, 1)
    return t.reshape(1, -1, 1) if t.dim() == 1 else t.unsqueeze(-1)


@function
def atleast_1d(*tensors):
    """Each tensor with at least 1 dim (0-d ones reshaped to (1,)); one tensor: it, else a tuple."""
    return _atleast(tensors, "atleast_1d", _at1)


@function
def atleast_2d(*tensors):
    """Each tensor with at least 2 dims: 0-d -> (1, 1), (n,) -> (1, n)."""
    return _atleast(tensors, "atleast_2d", _at2)


@function
def atleast_3d(*tensors):
    """Each tensor with at least 3 dims: 0-d -> (1, 1, 1), (n,) -> (1, n, 1), (m, n) -> (m, n, 1)."""
    return _atleast(tensors, "atleast_3d", _at3)


def _stack_list(tensors, fn):
    if isinstance(tensors, TensorBase) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{fn}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    ts = _tensor_list(tensors, fn)
    if not ts:
        raise RuntimeError(f"{fn} expects a non-empty TensorList")
    return ts


@function
def column_stack(tensors, *, out=None):
    """The tensors side by side as columns: 0-d and 1-d ones become (n, 1) columns, then cat on dim 1."""
    ts = _stack_list(tensors, "column_stack")
    ts = [t.reshape(t.numel(), 1) if t.dim() <= 1 else t for t in ts]
    return _into(out, FUNCTIONS["cat"](ts, 1), "column_stack")


@function
def dstack(tensors, *, out=None):
    """The tensors stacked depthwise: atleast_3d of each, then cat on dim 2."""
    ts = _stack_list(tensors, "dstack")
    return _into(out, FUNCTIONS["cat"]([_at3(t) for t in ts], 2), "dstack")


def _dir_split(input, ios, sections, indices, dim, need, fn):
    _check_tensor(input, fn)
    given = [v for v in (ios, sections, indices) if v is not None]
    if len(given) != 1:
        raise TypeError(f"{fn}(): expected indices_or_sections (an int or a list of indices)")
    ios = given[0]
    if input.dim() < need:
        raise RuntimeError(f"torch.{fn} requires a tensor with at least {need} dimension, but got a tensor with "
                           f"{input.dim()} dimensions!")
    d = 0 if dim is None and input.dim() == 1 else (1 if dim is None else dim)
    if isinstance(ios, int) and not isinstance(ios, bool):
        size = input.shape[d]
        if ios == 0 or size % ios:
            raise RuntimeError(f"torch.{fn} attempted to split along dimension {d}, but the size of the dimension "
                               f"{size} is not divisible by the split_size {ios}!")
        return tensor_split(input, ios, d)
    return tensor_split(input, [_int_arg(i, fn, "indices") for i in ios], d)


@both
def hsplit(input, indices_or_sections=None, *, sections=None, indices=None):
    """tensor_split along dim 1 (dim 0 of a 1-d tensor); an int must divide that dim evenly."""
    return _dir_split(input, indices_or_sections, sections, indices, None, 1, "hsplit")


@both
def vsplit(input, indices_or_sections=None, *, sections=None, indices=None):
    """tensor_split along dim 0 of a tensor of at least 2 dims."""
    return _dir_split(input, indices_or_sections, sections, indices, 0, 2, "vsplit")


@both
def dsplit(input, indices_or_sections=None, *, sections=None, indices=None):
    """tensor_split along dim 2 of a tensor of at least 3 dims."""
    return _dir_split(input, indices_or_sections, sections, indices, 2, 3, "dsplit")


@both
def split_with_sizes(input, split_sizes, dim=0):
    """Views of consecutive pieces of the given sizes along dim (they must add up to its size)."""
    _check_tensor(input, "split_with_sizes")
    d = _wrap_dim(dim, input.dim(), "split_with_sizes")
    sizes = list(sizes_arg((split_sizes,), "split_with_sizes"))
    size = input.shape[d] if input.dim() else 1
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                           f"split_sizes={sizes}")
    if _b.sum(sizes) != size:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's size at "
                           f"dimension {d}), but got split_sizes={sizes}")
    out, pos = [], 0
    for s in sizes:
        out.append(narrow(input, d, pos, s))
        pos += s
    return tuple(out)


# ------------------------------------------------------------- elementwise
def _nan_ignoring(input, other, fn, larger):
    _check_tensor(input, fn)
    if not isinstance(other, TensorBase):
        raise TypeError(f"{fn}(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
    # input where it wins or other is NaN (the value at a tie is input's, as torch's)
    take = input > other if larger else input < other
    if other.dtype.is_floating_point:
        take = take | FUNCTIONS["isnan"](other)
    r = _I["where"](take, input, other)
    if not (input.dtype.is_floating_point or other.dtype.is_floating_point):
        return r
    # a tie shares the gradient evenly (torch's): input + (other - input) / 2, which is input
    # exactly; (input + other) / 2 for infinities and zeros (so -0.0 tied with +0.0 gives +0.0)
    tie = input == other
    exact = FUNCTIONS["isfinite"](input) & (input != 0)
    mid = _I["where"](exact, input + (other - input) * 0.5, input * 0.5 + other * 0.5)
    return _I["where"](tie, mid, r)


@both
def fmax(input, other, *, out=None):
    """Elementwise maximum where NaN loses: the other value when one is NaN, NaN when both are
    (then input gets the gradient).  A tie shares the gradient evenly (torch's); its value is
    input, except that fmax(-0.0, +0.0) is +0.0 (torch: -0.0)."""
    return _into(out, _nan_ignoring(input, other, "fmax", True), "fmax")


@both
def fmin(input, other, *, out=None):
    """Elementwise minimum where NaN loses (fmax's rules)."""
    return _into(out, _nan_ignoring(input, other, "fmin", False), "fmin")


@both
def signbit(input, *, out=None):
    """Whether the sign bit is set: x < 0, and -0.0.  A NaN's sign bit cannot be read by janus's
    ops: signbit(NaN) is False even for a negative NaN (torch reads the bit)."""
    _check_tensor(input, "signbit")
    if input.dtype.is_floating_point:
        r = (input < 0) | ((input == 0) & ((1.0 / input) < 0))
    elif input.dtype in (_bool, _uint8):
        r = FUNCTIONS["zeros"](input.shape, dtype=_bool, device=input.device)
    else:
        r = input < 0
    return _into(out, r, "signbit")


@both
def copysign(input, other, *, out=None):
    """|input| with the sign of other (a tensor or a number; -0.0 counts as negative), in a
    floating dtype (integers: float32).  The gradient is sign(input) * sign(result) (0 where
    input is 0, as torch's); other gets none.  A NaN other counts as positive when it is a
    tensor (see signbit); a number's sign is read exactly."""
    _check_tensor(input, "copysign")
    if isinstance(other, TensorBase):
        dt = _float_type(_result_type(input, other))
        neg = signbit(other)
    elif isinstance(other, (int, float)):
        dt = _float_type(input.dtype)
        neg = _math.copysign(1.0, float(other)) < 0
    else:
        raise TypeError(f"copysign(): argument 'other' (position 2) must be Tensor or Number, not "
                        f"{type(other).__name__}")
    a = FUNCTIONS["abs"](input.to(dt) if input.dtype is not dt else input)
    if isinstance(neg, bool):
        r = -a if neg else a
    else:
        r = _I["where"](neg, -a, a)
    return _into(out, r, "copysign")


def _check_inplace_float(self, dt):
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"result type {_tname(dt)} can't be cast to the desired output type {_tname(self.dtype)}")


@method
def copysign_(self, other):
    r = copysign(FUNCTIONS["clone"](self), other)  # abs saves its input: not self, overwritten below
    _check_inplace_float(self, r.dtype)
    return self.copy_(r)


@both
def isposinf(input, *, out=None):
    """input == +inf (False for integers)."""
    _check_tensor(input, "isposinf")
    r = input == _math.inf if input.dtype.is_floating_point else \
        FUNCTIONS["zeros"](input.shape, dtype=_bool, device=input.device)
    return _into(out, r, "isposinf")


@both
def isneginf(input, *, out=None):
    """input == -inf (False for integers)."""
    _check_tensor(input, "isneginf")
    r = input == -_math.inf if input.dtype.is_floating_point else \
        FUNCTIONS["zeros"](input.shape, dtype=_bool, device=input.device)
    return _into(out, r, "isneginf")


@both
def isreal(input):
    """True everywhere: janus has no complex dtypes."""
    _check_tensor(input, "isreal")
    return FUNCTIONS["ones"](input.shape, dtype=_bool, device=input.device)


@both
def ldexp(input, other, *, out=None):
    """input * 2 ** other, in the promoted floating dtype (torch computes 2 ** other in it too)."""
    _check_tensor(input, "ldexp")
    if not isinstance(other, TensorBase):
        raise TypeError(f"ldexp(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
    dt = _float_type(_result_type(input, other))
    scale = FUNCTIONS["pow"](2.0, other.to(dt) if other.dtype is not dt else other)
    return _into(out, (input.to(dt) if input.dtype is not dt else input) * scale, "ldexp")


@method
def ldexp_(self, other):
    r = ldexp(FUNCTIONS["clone"](self), other)  # the product saves its input: not self
    _check_inplace_float(self, r.dtype)
    return self.copy_(r)


@both
def frexp(input, *, out=None):
    """(mantissa, exponent) with input = mantissa * 2 ** exponent, 0.5 <= |mantissa| < 1 and an
    int32 exponent; 0, inf and NaN give (input, 0).  Exact for every finite float64 and float32
    (subnormals too): the exponent from log2, corrected by one step, and the mantissa scaled by two
    exact powers of two in float64.  The mantissa's gradient is 2 ** -exponent (torch's)."""
    _check_tensor(input, "frexp")
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    xw = input.to(_float64) if input.dtype is not _float64 else input
    a = FUNCTIONS["abs"](xw.detach())
    ok = (a > 0) & (a < _math.inf)
    sa = _I["where"](ok, a, FUNCTIONS["ones_like"](a))
    e = FUNCTIONS["floor"](FUNCTIONS["log"](sa) / _LN2) + 1
    for _ in range(2):  # log's rounding can leave |x| / 2**e at 1 or just under 0.5
        e1 = FUNCTIONS["floor"](e * 0.5)
        m = sa * FUNCTIONS["pow"](2.0, -e1) * FUNCTIONS["pow"](2.0, e1 - e)
        e = e + (m >= 1).to(_float64) - (m < 0.5).to(_float64)
    e = _I["where"](ok, e, FUNCTIONS["zeros_like"](e))
    e1 = FUNCTIONS["floor"](e * 0.5)
    mant = xw * FUNCTIONS["pow"](2.0, -e1) * FUNCTIONS["pow"](2.0, e1 - e)
    mant = _I["where"](ok, mant, xw)
    return _into(out, _rt_frexp(mant.to(input.dtype) if input.dtype is not _float64 else mant,
                                e.to(_int32)), "frexp")


# ----------------------------------------------------------- search, vander
def _ss_dtype_check(seq):
    if seq.dtype is _bool:
        raise NotImplementedError("\"searchsorted_out_cpu\" not implemented for 'Bool'")


@function
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, out=None, sorter=None):
    """For each value of input, the index in sorted_sequence's last dim where it would be
    inserted to keep it sorted (right / side='right': after equal values).  Composed as a count
    over a broadcast comparison, O(n*m) time and memory for n values and m boundaries (torch
    searches, O(n log m)): the count of boundaries not >= (right: not >) the value, which is the
    binary search's answer for a sorted sequence without NaN; NaN values go last."""
    _check_tensor(sorted_sequence, "searchsorted", "sorted_sequence")
    seq = sorted_sequence
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    if seq.dim() == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 "
                           "dimension")
    scalar = not isinstance(input, TensorBase)
    if scalar:
        if isinstance(input, bool) or not isinstance(input, (int, float)):
            raise TypeError(f"searchsorted(): argument 'input' must be Tensor or Number, not "
                            f"{type(input).__name__}")
        if seq.dim() != 1:
            raise RuntimeError(f"torch.searchsorted(): input value can be a scalar only when boundaries tensor "
                               f"dimension is 1, but we got boundaries tensor dim({seq.dim()}) and input value's "
                               f"dim(0) numel(1)")
    elif seq.dim() != 1 and (input.dim() != seq.dim() or list(seq.shape[:-1]) != list(input.shape[:-1])):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           f"dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {list(seq.shape)} and input value tensor {list(input.shape)}")
    if sorter is not None:
        _check_tensor(sorter, "searchsorted", "sorter")
        if sorter.dtype is not _int64:
            raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but got dtype "
                               f"{_tname(sorter.dtype)}")
        if list(sorter.shape) != list(seq.shape):
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same size, but got "
                               f"boundary tensor {list(seq.shape)}and got sorter tensor {list(sorter.shape)}")
        if sorter.numel() and (int(_amin(sorter, (), False)) < 0 or
                               int(_amax(sorter, (), False)) >= seq.shape[-1]):
            raise RuntimeError("torch.searchsorted(): sorter index out of range")
        seq = FUNCTIONS["gather"](seq, -1, sorter)
    _ss_dtype_check(seq)
    seq = seq.detach()
    if scalar:
        after = seq > input if right else seq >= input
        r = FUNCTIONS["sum"](~after)
    else:
        v = input.detach()
        b = seq if seq.dim() == 1 else seq.unsqueeze(-2)  # (m,) or (..., 1, m) against (..., k, 1)
        after = b > v.unsqueeze(-1) if right else b >= v.unsqueeze(-1)
        r = FUNCTIONS["sum"](~after, -1)
    r = r.to(_int32) if out_int32 else r
    return _into(out, r, "searchsorted")


@function
def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """The bucket of each value among 1-d sorted boundaries: searchsorted(boundaries, input)
    (right=False: boundaries[i-1] < x <= boundaries[i]).  O(n*m), see searchsorted."""
    _check_tensor(boundaries, "bucketize", "boundaries")
    if boundaries.dim() != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right, out=out)


@function
def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of 1-d x: columns x**(N-1), ..., x**0 (increasing: x**0 first);
    N defaults to len(x).  Integer and bool x give int64.  Powers as a cumulative product (log2(N)
    rounds), differentiable (torch's backward fails on an in-place error)."""
    _check_tensor(x, "vander", "x")
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else _int_arg(N, "vander", "N")
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dt = x.dtype if x.dtype.is_floating_point else _int64
    xx = x.to(dt) if x.dtype is not dt else x
    rows = x.shape[0]
    if n == 0:
        return FUNCTIONS["zeros"](rows, 0, dtype=dt, device=x.device)
    cols = [FUNCTIONS["ones"](rows, 1, dtype=dt, device=x.device)]
    if n > 1:
        cols.append(FUNCTIONS["cumprod"](xx.unsqueeze(1).expand(rows, n - 1), 1))
    r = FUNCTIONS["cat"](cols, 1) if len(cols) > 1 else cols[0]
    return r if increasing else FUNCTIONS["flip"](r, [1])


@both
def diagflat(input, offset=0):
    """input flattened, as the offset-th diagonal of a square matrix."""
    _check_tensor(input, "diagflat")
    return FUNCTIONS["diag"](input.reshape(-1), _int_arg(offset, "diagflat", "offset"))
