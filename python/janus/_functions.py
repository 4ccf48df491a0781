"""Torch API functions that need Python-level argument handling: overloads
(max(dim) vs max(other)), composite ops built from table ops (reshape,
split, repeat, ...), and the in-place variants of non-elementwise ops.

Each wrapper is registered as janus.<name> and/or Tensor.<name> with the
decorators below; janus/__init__.py and janus/_tensor.py install them next
to the C OpFn bindings of janus/_ops.py.
"""
import builtins as _b
import math as _math

from . import _C
from . import _dtype
from ._ops import FUNCTIONS, INTERNAL as _I, METHODS, MODE_INTO, ops, opfn
from . import return_types

TensorBase = _C.TensorBase
_float32 = _dtype._BY_NAME["float32"]
_int64 = _dtype._BY_NAME["int64"]
_bool = _dtype._BY_NAME["bool"]


def function(f=None, *, name=None):
    def reg(f):
        FUNCTIONS[name or f.__name__] = f
        return f
    return reg(f) if f else reg


def method(f=None, *, name=None):
    def reg(f):
        METHODS[name or f.__name__] = f
        return f
    return reg(f) if f else reg


def both(f=None, *, name=None):
    def reg(f):
        FUNCTIONS[name or f.__name__] = f
        METHODS[name or f.__name__] = f
        return f
    return reg(f) if f else reg


def _check_tensor(x, fn, arg="input"):
    if not isinstance(x, TensorBase):
        raise TypeError(f"{fn}(): argument '{arg}' must be Tensor, not {type(x).__name__}")


def sizes_arg(args, fn="size"):
    """f(2, 3) / f((2, 3)) / f([2, 3]) / f(janus.Size) -> tuple of ints."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    out = []
    for i, s in enumerate(args):
        if isinstance(s, bool) or not hasattr(s, "__index__") or isinstance(s, float):
            raise TypeError(f"{fn}(): argument 'size' must be a tuple of ints, but found element of type "
                            f"{type(s).__name__} at pos {i}")
        out.append(s.__index__())
    return tuple(out)


def _wrap_dim(dim, ndim, fn=""):
    n = ndim if ndim > 0 else 1
    if not isinstance(dim, int) or isinstance(dim, bool):
        if hasattr(dim, "__index__") and not isinstance(dim, float):
            dim = dim.__index__()
        else:
            raise TypeError(f"{fn}(): argument 'dim' must be int, not {type(dim).__name__}")
    if dim < -n or dim >= n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim


# ----------------------------------------------------------- reductions
_amax, _amin = FUNCTIONS["amax"], FUNCTIONS["amin"]
_maximum, _minimum = FUNCTIONS["maximum"], FUNCTIONS["minimum"]


def _minmax(input, dim, keepdim, out, fn, red, ew, dimop):
    if out is not None:
        raise TypeError(f"{fn}(): out= is not supported")
    if dim is None:
        if keepdim:
            raise TypeError(f"{fn}(): keepdim given without dim")
        return red(input)
    if isinstance(dim, TensorBase):
        return ew(input, dim)
    return dimop(input, dim, keepdim)


@both
def max(input, dim=None, keepdim=False, *, out=None):
    """max(input) -> 0-d max; max(input, dim, keepdim=False) -> (values, indices); max(input, other)."""
    _check_tensor(input, "max")
    return _minmax(input, dim, keepdim, out, "max", _amax, _maximum, _I["_max_dim"])


@both
def min(input, dim=None, keepdim=False, *, out=None):
    """min(input) -> 0-d min; min(input, dim, keepdim=False) -> (values, indices); min(input, other)."""
    _check_tensor(input, "min")
    return _minmax(input, dim, keepdim, out, "min", _amin, _minimum, _I["_min_dim"])


def _correction(fn, dim, unbiased, correction):
    if isinstance(dim, bool):  # var(input, unbiased)
        if unbiased is not None:
            raise TypeError(f"{fn}(): unbiased given twice")
        dim, unbiased = None, dim
    if correction is not None and unbiased is not None:
        raise TypeError(f"{fn}(): pass either unbiased= or correction=, not both")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    return dim, correction


@both
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """var(input, dim=None, *, correction=1, keepdim=False), or var(input, dim, unbiased, keepdim)."""
    dim, c = _correction("var", dim, unbiased, correction)
    return _I["_var"](input, dim, correction=c, keepdim=keepdim)


@both
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """std(input, dim=None, *, correction=1, keepdim=False), or std(input, dim, unbiased, keepdim)."""
    dim, c = _correction("std", dim, unbiased, correction)
    return _I["_std"](input, dim, correction=c, keepdim=keepdim)


@function
def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return (var(input, dim, unbiased, keepdim, correction=correction),
            FUNCTIONS["mean"](input, None if isinstance(dim, bool) else dim, keepdim))


@function
def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return (std(input, dim, unbiased, keepdim, correction=correction),
            FUNCTIONS["mean"](input, None if isinstance(dim, bool) else dim, keepdim))


@both
def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """Vector norm over dim (all dims by default): p = 2/'fro', 1, inf, -inf, 0 or any number."""
    x = input if dtype is None else input.to(dtype)
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"norm(): input dtype should be a floating point type, got {x.dtype}")
    if p == "fro" or p == 2:
        # sqrt's derivative at 0 is inf: a zero norm takes the value 0 and gradient 0, as torch's
        # backward masks it, instead of 0 * inf = NaN
        s = FUNCTIONS["sum"](x * x, dim, keepdim)
        zero = s == 0  # not `s > 0`: a NaN sum stays NaN
        return FUNCTIONS["where"](zero, 0.0, FUNCTIONS["sqrt"](FUNCTIONS["where"](zero, 1.0, s)))
    a = FUNCTIONS["abs"](x)
    if p == 1:
        return FUNCTIONS["sum"](a, dim, keepdim)
    if p == _math.inf:
        return _amax(a, () if dim is None else dim, keepdim)
    if p == -_math.inf:
        return _amin(a, () if dim is None else dim, keepdim)
    if p == 0:
        return FUNCTIONS["sum"]((a != 0).to(x.dtype), dim, keepdim)
    return FUNCTIONS["sum"](a ** p, dim, keepdim) ** (1.0 / p)


@both
def cross(input, other, dim=None):
    """Cross product of 3-vectors along dim (torch.cross; dim None: the first dim of size 3,
    torch's deprecated default; torch.linalg.cross's is -1).  The inputs broadcast."""
    _check_tensor(input, "cross")
    _check_tensor(other, "cross", "other")
    if dim is None:
        dims = [d for d in range(input.dim()) if input.shape[d] == 3]
        if not dims:
            raise RuntimeError(f"no dimension of size 3 in input (shape {list(input.shape)})")
        dim = dims[0]
    a, b = FUNCTIONS["broadcast_tensors"](input, other)
    nd = a.dim()
    if not -nd <= dim < nd or a.shape[dim] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {list(input.shape)} "
                           f"and {list(other.shape)}")
    ax = [a.select(dim, k) for k in range(3)]
    bx = [b.select(dim, k) for k in range(3)]
    return FUNCTIONS["stack"]([ax[1] * bx[2] - ax[2] * bx[1], ax[2] * bx[0] - ax[0] * bx[2],
                               ax[0] * bx[1] - ax[1] * bx[0]], dim)


# ------------------------------------------------------------ elementwise
_clamp_into = opfn("clamp_", "clamp", "input:T, min:o=None, max:o=None", mode=MODE_INTO)


def _is_bound_tensor(v, input):
    """A tensor bound (a 0-d one too, on input's device) clamps through maximum/minimum,
    ops reading it, as torch's clamp(Tensor): no read of its value on the host."""
    return isinstance(v, TensorBase) and (v.dim() > 0 or v.device == input.device)


@both
def clamp(input, min=None, max=None, *, out=None):
    """clamp(input, min=None, max=None): numbers or tensors as bounds."""
    if min is None and max is None:
        raise RuntimeError("clamp(): at least one of 'min' or 'max' must not be None")
    if _is_bound_tensor(min, input) or _is_bound_tensor(max, input):
        r = input
        if min is not None:
            r = _maximum(r, min)
        if max is not None:
            r = _minimum(r, max)
        if out is not None:
            return out.copy_(r)
        return r
    if out is not None:
        return _I["_clamp_scalar"](input, min, max, out=out)
    return _I["_clamp_scalar"](input, min, max)


@method
def clamp_(self, min=None, max=None):
    if min is None and max is None:
        raise RuntimeError("clamp_(): at least one of 'min' or 'max' must not be None")
    if _is_bound_tensor(min, self) or _is_bound_tensor(max, self):
        return self.copy_(clamp(self, min, max))
    return _clamp_into(self, min, max)


FUNCTIONS["clip"] = METHODS["clip"] = clamp
METHODS["clip_"] = clamp_


@both
def clamp_min(input, min):
    return clamp(input, min=min)


@both
def clamp_max(input, max):
    return clamp(input, max=max)


@method(name="clamp_min_")
def _clamp_min_(self, min):
    return clamp_(self, min=min)


@method(name="clamp_max_")
def _clamp_max_(self, max):
    return clamp_(self, max=max)


@function
def where(condition, input=None, other=None, *, out=None):
    """where(condition, input, other) elementwise; where(condition) = nonzero(condition, as_tuple=True)."""
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    if input is None or other is None:
        raise TypeError("where(): expected both input and other, or neither")
    if out is not None:
        return out.copy_(_I["where"](condition, input, other))
    return _I["where"](condition, input, other)


@method(name="where")
def _where_method(self, condition, other):
    return _I["where"](condition, self, other)


@both
def square(input):
    return input * input


@method
def square_(self):
    return self.mul_(self)


@both
def isinf(input):
    if not input.dtype.is_floating_point:
        return FUNCTIONS["zeros"](input.shape, dtype=_bool)
    return FUNCTIONS["abs"](input) == _math.inf


@both
def isfinite(input):
    if not input.dtype.is_floating_point:
        return FUNCTIONS["ones"](input.shape, dtype=_bool)
    return FUNCTIONS["abs"](input) < _math.inf  # false for nan and inf


@both
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    if not isinstance(other, TensorBase):
        other = FUNCTIONS["tensor"](other)
    if input.dtype is _bool or not (input.dtype.is_floating_point or other.dtype.is_floating_point):
        return input == other
    a, b = input.double(), other.double()
    err = FUNCTIONS["abs"](a - b)
    # an infinite error is never within tolerance (inf vs -inf, 1 vs inf), as torch's
    close = (a == b) | ((err < _math.inf) & (err <= atol + rtol * FUNCTIONS["abs"](b)))
    if equal_nan:
        close = close | (FUNCTIONS["isnan"](a) & FUNCTIONS["isnan"](b))
    return close


@both
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


@both
def equal(input, other):
    return input.shape == other.shape and bool((input == other).all())


def _draw(generator, fn, *args, **kw):
    """Run a random op on `generator`'s stream (the default stream when None)."""
    if generator is None:
        return fn(*args, **kw)
    from ._factories import _check_gen, _using
    _check_gen(generator, getattr(fn, "__name__", "random"))
    with _using(generator):
        return fn(*args, **kw)


@both
def bernoulli(input, p=None, *, generator=None, out=None):
    """bernoulli(input): draws 1 with probability input; bernoulli(input, p) with a fixed p."""
    if p is not None:
        input = FUNCTIONS["full_like"](input, p)
    r = _draw(generator, _I["_bernoulli"], input)
    return out.copy_(r) if out is not None else r


@method
def bernoulli_(self, p=0.5, *, generator=None):
    probs = p if isinstance(p, TensorBase) else FUNCTIONS["full_like"](self, p, dtype=_float32)
    probs = probs.expand(self.shape) if probs.shape != self.shape else probs
    return self.copy_(_draw(generator, _I["_bernoulli"], probs))


_uniform_fn, _normal_fn = METHODS["uniform_"], METHODS["normal_"]


@method
def uniform_(self, *args, generator=None, **kw):
    """uniform_(from=0, to=1, *, generator=None): fill with U[from, to) samples."""
    return _draw(generator, _uniform_fn, self, *args, **kw)


@method
def normal_(self, *args, generator=None, **kw):
    """normal_(mean=0, std=1, *, generator=None): fill with N(mean, std^2) samples."""
    return _draw(generator, _normal_fn, self, *args, **kw)


@method
def zero_(self):
    return self.fill_(0)


_LN2, _LN10 = _math.log(2.0), _math.log(10.0)


@both
def log2(input):
    return FUNCTIONS["log"](input) / _LN2


@both
def log10(input):
    return FUNCTIONS["log"](input) / _LN10


@both
def exp2(input):
    return FUNCTIONS["exp"](input * _LN2)


# Trigonometric and hyperbolic functions the op table has no kernel for,
# composed from ones it has (so autograd differentiates them): within a few
# float32 ulps of libm's away from their poles; integer inputs compute in
# the default float dtype, as torch's.
def _fp(input):
    return input if input.dtype.is_floating_point else input.to(_float32)  # janus's default dtype


def _one_minus_sq(x):  # 1 - x*x, without the cancellation near |x| = 1
    return (1 - x) * (1 + x)


@both
def asin(input):
    x = _fp(input)
    return FUNCTIONS["atan2"](x, FUNCTIONS["sqrt"](_one_minus_sq(x)))


@both
def acos(input):
    x = _fp(input)
    return FUNCTIONS["atan2"](FUNCTIONS["sqrt"](_one_minus_sq(x)), x)


@both
def atan(input):
    x = _fp(input)
    return FUNCTIONS["atan2"](x, FUNCTIONS["ones_like"](x))


@both
def tan(input):
    x = _fp(input)
    return FUNCTIONS["sin"](x) / FUNCTIONS["cos"](x)


@both
def sinh(input):
    x = _fp(input)  # expm1: exact near 0, where (exp(x) - exp(-x)) / 2 cancels
    return (FUNCTIONS["expm1"](x) - FUNCTIONS["expm1"](-x)) * 0.5


@both
def cosh(input):
    x = _fp(input)
    return (FUNCTIONS["exp"](x) + FUNCTIONS["exp"](-x)) * 0.5


@both
def atanh(input):
    x = _fp(input)  # 1/2 (log(1+x) - log(1-x)): both exact near +-1 and no cancellation near 0
    return (FUNCTIONS["log1p"](x) - FUNCTIONS["log1p"](-x)) * 0.5


def _split_big(a, big):
    """(a where it is at most big else 0, a where it is above big else 1, the mask): each
    branch of a where() fed values it computes finitely, so no inf or NaN reaches a gradient."""
    above = a > big
    return (FUNCTIONS["where"](above, FUNCTIONS["zeros_like"](a), a),
            FUNCTIONS["where"](above, a, FUNCTIONS["ones_like"](a)), above)


_BIG = 2.0 ** 28  # past it 1 + a*a is a*a in float64 and float32 alike: log(2a) is the value


def _asinh_pos(a):  # a >= 0: log1p(a + a^2 / (1 + sqrt(1 + a^2))), log(2a) when large
    small, large, above = _split_big(a, _BIG)
    near = FUNCTIONS["log1p"](small + small * small / (1 + FUNCTIONS["sqrt"](1 + small * small)))
    return FUNCTIONS["where"](above, FUNCTIONS["log"](large) + _LN2, near)


@both
def asinh(input):
    x = _fp(input)  # odd: the positive half for both signs (no cancellation for large negative x)
    neg = x < 0
    zero = FUNCTIONS["zeros_like"](x)
    return FUNCTIONS["where"](neg, -_asinh_pos(FUNCTIONS["where"](neg, -x, zero)),
                              _asinh_pos(FUNCTIONS["where"](neg, zero, x)))


@both
def acosh(input):
    x = _fp(input)  # log1p((x-1) + sqrt((x-1)(x+1))); NaN below 1, log(2x) when large
    small, large, above = _split_big(x, _BIG)
    t = small - 1
    near = FUNCTIONS["log1p"](t + FUNCTIONS["sqrt"](t * (small + 1)))
    return FUNCTIONS["where"](above, FUNCTIONS["log"](large) + _LN2, near)


def _inplace(f):  # x.f_(): x = f(x) written into x
    return lambda self: self.copy_(f(self))


for _n in ("asin", "acos", "atan", "tan", "sinh", "cosh", "atanh", "asinh", "acosh"):
    METHODS[_n + "_"] = _inplace(FUNCTIONS[_n])
for _n in ("asin", "acos", "atan", "atanh", "asinh", "acosh"):  # numpy's spellings
    FUNCTIONS["arc" + _n[1:]] = METHODS["arc" + _n[1:]] = FUNCTIONS[_n]
    METHODS["arc" + _n[1:] + "_"] = METHODS[_n + "_"]


@both
def trunc(input):
    if not input.dtype.is_floating_point:
        return input.clone()
    return FUNCTIONS["where"](input < 0, FUNCTIONS["ceil"](input), FUNCTIONS["floor"](input))


FUNCTIONS["fix"] = METHODS["fix"] = trunc


@both
def frac(input):
    return input - trunc(input)


for _n in ("trunc", "fix", "frac"):
    METHODS[_n + "_"] = _inplace(FUNCTIONS[_n])


@both
def deg2rad(input):
    return _fp(input) * (_math.pi / 180.0)


@both
def rad2deg(input):
    return _fp(input) * (180.0 / _math.pi)


@both
def logit(input, eps=None):
    x = _fp(input)
    if eps is not None:
        x = FUNCTIONS["clamp"](x, eps, 1.0 - eps)
    return FUNCTIONS["log"](x / (1 - x))


@both
def positive(input):
    if input.dtype is _bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


@both
def sgn(input):
    return FUNCTIONS["sign"](input)


@both
def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """sum with NaNs counted as zero (their gradient is zero too)."""
    if input.dtype.is_floating_point:
        input = FUNCTIONS["where"](FUNCTIONS["isnan"](input), FUNCTIONS["zeros_like"](input), input)
    return FUNCTIONS["sum"](input, dim, keepdim, dtype=dtype)


@both
def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """mean over the entries that are not NaN (NaN where all are)."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"nanmean(): expected input to have floating point dtype but got {input.dtype}")
    n = FUNCTIONS["sum"](~FUNCTIONS["isnan"](input), dim, keepdim)
    return nansum(input, dim, keepdim, dtype=dtype) / n


@both
def count_nonzero(input, dim=None):
    return FUNCTIONS["sum"](input != 0, dim)


@both
def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along dim (prepend/append joined first)."""
    if n < 0:
        raise RuntimeError(f"diff expects n to be non-negative, but got {n}")
    parts = [t for t in (prepend, input, append) if t is not None]
    x = FUNCTIONS["cat"](parts, dim) if len(parts) > 1 else input
    for _ in range(n):
        m = x.shape[dim]
        if m == 0:
            break
        x = x.narrow(dim, 1, m - 1) - x.narrow(dim, 0, m - 1) if x.dtype is not _bool else \
            x.narrow(dim, 1, m - 1) != x.narrow(dim, 0, m - 1)
    return x


for _n in ("log2", "log10", "exp2"):
    METHODS[_n + "_"] = _inplace(FUNCTIONS[_n])


@method
def cumsum_(self, dim, *, dtype=None):
    return self.copy_(FUNCTIONS["cumsum"](self, dim, dtype=dtype))


@method
def cumprod_(self, dim, *, dtype=None):
    return self.copy_(FUNCTIONS["cumprod"](self, dim, dtype=dtype))


@method
def nan_to_num_(self, nan=0.0, posinf=None, neginf=None):
    return self.copy_(FUNCTIONS["nan_to_num"](self, nan=nan, posinf=posinf, neginf=neginf))


@both
def sinc(input):
    """sin(pi x) / (pi x), 1 at 0 (where its gradient is 0)."""
    x = _fp(input)
    zero = x == 0
    safe = FUNCTIONS["where"](zero, FUNCTIONS["ones_like"](x), x) * _math.pi  # no 0/0 in either branch's gradient
    return FUNCTIONS["where"](zero, FUNCTIONS["ones_like"](x), FUNCTIONS["sin"](safe) / safe)


@both
def xlogy(input, other):
    """input * log(other), 0 where input is 0 (unless other is NaN)."""
    if not isinstance(input, TensorBase):
        input = FUNCTIONS["tensor"](input, dtype=other.dtype if other.dtype.is_floating_point else _float32)
    if not isinstance(other, TensorBase):
        other = FUNCTIONS["tensor"](other, dtype=input.dtype if input.dtype.is_floating_point else _float32)
    x, y = _fp(input), _fp(other)
    zero = (x == 0) & ~FUNCTIONS["isnan"](y)
    safe = FUNCTIONS["where"](zero, FUNCTIONS["ones_like"](y), y)
    return FUNCTIONS["where"](zero, FUNCTIONS["zeros_like"](x * safe), x * FUNCTIONS["log"](safe))


@both
def logaddexp2(input, other):
    return FUNCTIONS["logaddexp"](input * _LN2, other * _LN2) / _LN2


@both
def float_power(input, exponent):
    """input ** exponent in float64 (torch's float_power)."""
    f64 = _dtype._BY_NAME["float64"]
    base = input.to(f64) if isinstance(input, TensorBase) else FUNCTIONS["tensor"](input, dtype=f64)
    return base ** (exponent.to(f64) if isinstance(exponent, TensorBase) else float(exponent))


@both
def heaviside(input, values):
    """0 where input < 0, values where input == 0, 1 where input > 0."""
    return FUNCTIONS["where"](input == 0, values.to(input.dtype), (input > 0).to(input.dtype))


@both
def fliplr(input):
    if input.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return FUNCTIONS["flip"](input, [1])


@both
def flipud(input):
    if input.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return FUNCTIONS["flip"](input, [0])


@method
def unfold(self, dimension, size, step):
    """Tensor.unfold: the windows of `size` elements every `step` along `dimension`, as a new
    last dim.  A gather (index_select), so autograd differentiates it; torch's is a view, this
    is a copy: writing into the result does not write into self."""
    nd = self.dim()
    lim = nd if nd else 1  # a 0-d tensor unfolds as one of one element
    if not -lim <= dimension < lim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-lim}, {lim - 1}], "
                         f"but got {dimension})")
    d = dimension % lim
    n = self.shape[d] if nd else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    x = self if nd else self.reshape(1)
    w = (n - size) // step + 1
    ar = FUNCTIONS["arange"]
    idx = (ar(w, device=self.device).unsqueeze(1) * step + ar(size, device=self.device).unsqueeze(0)).reshape(-1)
    g = x.index_select(d, idx)
    shape = list(x.shape[:d]) + [w, size] + list(x.shape[d + 1:])
    return g.reshape(shape).movedim(d + 1, -1) if nd else g.reshape(w, size).squeeze(0)


@both
def rot90(input, k=1, dims=(0, 1)):
    """Rotation by 90 degrees k times in the plane of dims (from the first toward the second)."""
    if len(dims) != 2 or input.dim() < 2:
        raise RuntimeError(f"expected total rotation dims == 2 and total dims >= 2, but got rotation dims "
                           f"{len(dims)} and {input.dim()} dims")
    a, b = (d % input.dim() for d in dims)
    if a == b:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {a} and dim1 = {b}")
    k %= 4
    if k == 1:
        return FUNCTIONS["flip"](input, [b]).transpose(a, b)
    if k == 2:
        return FUNCTIONS["flip"](input, [a, b])
    if k == 3:
        return FUNCTIONS["flip"](input, [a]).transpose(a, b)
    return FUNCTIONS["clone"](input)


@method
def is_nonzero(self):
    if self.numel() != 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous" if self.numel()
                           else "Boolean value of Tensor with no values is ambiguous")
    return bool(self.item())


@method
def is_same_size(self, other):
    return tuple(self.shape) == tuple(other.shape)


@both
def addcmul(input, tensor1, tensor2, *, value=1):
    return input + (tensor1 * tensor2) * value


@method
def addcmul_(self, tensor1, tensor2, *, value=1):
    return self.add_(tensor1 * tensor2, alpha=value)


@both
def addcdiv(input, tensor1, tensor2, *, value=1):
    return input + (tensor1 / tensor2) * value


@method
def addcdiv_(self, tensor1, tensor2, *, value=1):
    return self.add_(tensor1 / tensor2, alpha=value)


@both
def lerp(input, end, weight):
    return input + (end - input) * weight


@method
def lerp_(self, end, weight):
    if isinstance(weight, TensorBase):
        return self.add_((end - self) * weight)
    return self.add_(end - self, alpha=weight)


@both
def rsub(input, other, *, alpha=1):
    return FUNCTIONS["sub"](other, input, alpha=alpha) if isinstance(other, TensorBase) else \
        other - input * alpha


def _tri_mask(input, diagonal, upper):
    if input.dim() < 2:
        raise RuntimeError(f"{'triu' if upper else 'tril'}: input tensor must have at least 2 dimensions")
    n, m = input.shape[-2], input.shape[-1]
    d = FUNCTIONS["arange"](m).view(1, m) - FUNCTIONS["arange"](n).view(n, 1)  # col - row
    return d >= diagonal if upper else d <= diagonal


@both
def tril(input, diagonal=0):
    """Lower triangle (elements on and below the diagonal-th diagonal), the rest zero."""
    return FUNCTIONS["where"](_tri_mask(input, diagonal, False), input, FUNCTIONS["zeros"]((), dtype=input.dtype))


@both
def triu(input, diagonal=0):
    """Upper triangle (elements on and above the diagonal-th diagonal), the rest zero."""
    return FUNCTIONS["where"](_tri_mask(input, diagonal, True), input, FUNCTIONS["zeros"]((), dtype=input.dtype))


@method
def tril_(self, diagonal=0):
    return self.masked_fill_(~_tri_mask(self, diagonal, False), 0)


@method
def triu_(self, diagonal=0):
    return self.masked_fill_(~_tri_mask(self, diagonal, True), 0)


@both
def trace(input):
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    return FUNCTIONS["sum"](diagonal(input))


def _data_index(values, device=None):
    """An int64 index tensor whose length the data decides, not the program
    (repeat_interleave's, a packed sequence's positions): marked for the
    recorder, so the analyzer makes that length a symbol even where it never
    changed while recording (analyzer/counts.c; a no-op unless recording)."""
    idx = FUNCTIONS["tensor"](values, dtype=_int64, device=device)
    _C._rec_mark(idx, _C.JN_TR_DATAIDX)
    return idx


def _counts_index(counts, n):
    counts = [int(c) for c in counts]
    if len(counts) != n:
        raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                           f"{len(counts)} and input.size(dim) = {n}")
    if any(c < 0 for c in counts):
        raise RuntimeError("repeats can not be negative")
    total = sum(counts)
    if total > 1 << 34:
        raise RuntimeError(f"repeat_interleave: output of {total} elements is too large")
    if not total:
        return FUNCTIONS["zeros"](0, dtype=_int64)
    return _data_index([i for i, c in enumerate(counts) for _ in range(c)])


@both
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Repeat each element `repeats` times along dim (flattened when dim is None)."""
    if repeats is None:  # repeat_interleave(counts): each index i repeated counts[i] times
        return _counts_index(input.tolist(), input.numel())
    x = reshape(input, -1) if dim is None else input
    d = 0 if dim is None else _wrap_dim(dim, input.dim(), "repeat_interleave")
    n = x.shape[d]
    if isinstance(repeats, TensorBase) and repeats.numel() != 1:
        idx = _counts_index(repeats.tolist(), n)
    else:
        r = int(repeats)
        if r < 0:
            raise RuntimeError("repeats can not be negative")
        idx = FUNCTIONS["arange"](n * r) // r if r else FUNCTIONS["zeros"](0, dtype=_int64)
    return FUNCTIONS["index_select"](x, d, idx)


# ------------------------------------------------------------------ views
def infer_size(shape, numel, fn="view"):
    """Resolve one -1 in shape; check the element count."""
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    for s in shape:
        if s < -1:
            raise RuntimeError(f"invalid shape dimension {s}")
    known = 1
    for i, s in enumerate(shape):
        if i not in neg:
            known *= s
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return tuple(shape)


_view = METHODS["view"]


reshape = _C.reshape  # C (ops_py.c): view when the layout allows, else a copy; Tensor.reshape too
FUNCTIONS["reshape"] = reshape


@method
def view_as(self, other):
    return _view(self, other.shape)


@method
def reshape_as(self, other):
    return reshape(self, other.shape)


@method
def expand_as(self, other):
    return self.expand(other.shape)


@both
def flatten(input, start_dim=0, end_dim=-1):
    if input.dim() == 0:
        return reshape(input, (1,))
    s = _wrap_dim(start_dim, input.dim(), "flatten")
    e = _wrap_dim(end_dim, input.dim(), "flatten")
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:  # nothing to merge: the input itself, as PyTorch (x.flatten(1) is x for a matrix)
        return input
    if s == 0 and e == input.dim() - 1:
        return reshape(input, -1)
    shp = tuple(input.shape)
    n = 1
    for x in shp[s:e + 1]:
        n *= x
    return reshape(input, shp[:s] + (n,) + shp[e + 1:])


@both
def unflatten(input, dim, sizes):
    d = _wrap_dim(dim, input.dim(), "unflatten")
    sizes = sizes_arg((sizes,), "unflatten")
    shp = tuple(input.shape)
    sizes = infer_size(sizes, shp[d], "unflatten")
    return reshape(input, shp[:d] + sizes + shp[d + 1:])


@both
def ravel(input):
    return reshape(input, (-1,))


@both
def narrow(input, dim, start, length):
    """The view input[..., start:start+length, ...] along dim."""
    d = _wrap_dim(dim, input.dim(), "narrow")
    size = input.shape[d]
    if isinstance(start, TensorBase):
        start = int(start)
    if start < 0:
        start += size
    if start < 0 or start > size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    if length < 0 or start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return ops.slice(input, dim=d, start=start, end=start + length, step=1)


@both
def split(tensor, split_size_or_sections, dim=0):
    d = _wrap_dim(dim, tensor.dim(), "split")
    size = tensor.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step <= 0 and not (step == 0 and size == 0):
            raise RuntimeError(f"split(): split_size can only be 0 if dimension size is 0, but got {step}")
        if size == 0:
            return (narrow(tensor, d, 0, 0),)
        return tuple(narrow(tensor, d, i, _b.min(step, size - i)) for i in range(0, size, step))
    sections = list(split_size_or_sections)
    if sum(sections) != size:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's "
                           f"size at dimension {d}), but got split_sizes={sections}")
    out, pos = [], 0
    for s in sections:
        out.append(narrow(tensor, d, pos, s))
        pos += s
    return tuple(out)


@both
def chunk(input, chunks, dim=0):
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = _wrap_dim(dim, input.dim(), "chunk")
    size = input.shape[d]
    step = (size + chunks - 1) // chunks if size else 0
    if step == 0:
        return tuple(narrow(input, d, 0, 0) for _ in range(chunks if size == 0 else 1))
    return split(input, step, d)


@both
def tensor_split(input, indices_or_sections, dim=0):
    d = _wrap_dim(dim, input.dim(), "tensor_split")
    size = input.shape[d]
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        q, r = divmod(size, n)
        sizes = [q + 1] * r + [q] * (n - r)
        return split(input, sizes, d)
    idx = [0] + [_b.min(_b.max(i, 0), size) for i in indices_or_sections] + [size]
    return tuple(narrow(input, d, a, _b.max(b - a, 0)) for a, b in zip(idx, idx[1:]))


@both
def unbind(input, dim=0):
    d = _wrap_dim(dim, input.dim(), "unbind")
    sel = _I["select"]
    return tuple(sel(input, d, i) for i in range(input.shape[d]))


@both
def movedim(input, source, destination):
    nd = input.dim()
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) should "
                           f"contain the same number of dims as destination ({dst} dims)")
    src = [_wrap_dim(s, nd, "movedim") for s in src]
    dst = [_wrap_dim(s, nd, "movedim") for s in dst]
    order = [None] * nd
    for s, t in zip(src, dst):
        order[t] = s
    rest = iter(i for i in range(nd) if i not in src)
    order = [o if o is not None else next(rest) for o in order]
    return input.permute(order)


FUNCTIONS["moveaxis"] = METHODS["moveaxis"] = movedim


@method
def t(self):
    if self.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.dim()}D")
    return self.transpose(0, 1) if self.dim() == 2 else self.view(self.shape)  # a view: keeps grad


FUNCTIONS["t"] = t


_row_major = TensorBase.is_contiguous  # the C method: row-major strides (numel 0: true)
_copy_expected = _C._copy_expected


@method
def is_contiguous(self, *, memory_format=_dtype.contiguous_format):
    """Whether the strides are those of memory_format: row-major for
    contiguous_format (and preserve_format, as torch), channels-last for
    channels_last / channels_last_3d -- the actual strides, as torch answers
    (janus creates row-major tensors only: channels-last strides come from
    views, e.g. an NHWC tensor permuted to NCHW, or size-1 dimensions)."""
    if memory_format is _dtype.contiguous_format or memory_format is _dtype.preserve_format:
        return _row_major(self)
    _dtype.check_memory_format(memory_format, "is_contiguous")
    return _dtype.is_contiguous_as(self.shape, self.stride(), memory_format)


@method
def contiguous(self, *, memory_format=_dtype.contiguous_format):
    """self when its strides already are memory_format's, else a copy.  Limit:
    the copy is row-major for every format (janus has no channels-last
    layout); channels_last / channels_last_3d are checked as torch does
    (rank 4 / 5) and give the same values."""
    if memory_format is _dtype.contiguous_format:
        # replay may copy a row-major tensor where the graph it follows holds the copy (as reshape)
        return self if _row_major(self) and not _copy_expected(self) else _I["clone"](self)
    _dtype.check_memory_format(memory_format, "contiguous")
    if is_contiguous(self, memory_format=memory_format):
        return self
    if memory_format is _dtype.preserve_format:
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    _dtype.check_memory_format_rank(memory_format, self.dim())
    return _I["clone"](self)


@both
def clone(input, *, memory_format=None):
    """A copy of input.  memory_format (None: preserve_format) is checked as
    torch does; the copy is row-major whatever the format (janus's layout)."""
    if memory_format is not None and memory_format is not _dtype.preserve_format:
        _check_tensor(input, "clone")
        _dtype.check_memory_format(memory_format, "clone")
        _dtype.check_memory_format_rank(memory_format, input.dim())
    return _I["clone"](input)


@both
def repeat(input, *sizes):
    """Tile the tensor: sizes[i] copies along dim i (leading new dims allowed)."""
    reps = sizes_arg(sizes, "repeat")
    if len(reps) < input.dim():
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of "
                           "dimensions of tensor")
    shp = (1,) * (len(reps) - input.dim()) + tuple(input.shape)
    x = reshape(input, shp)
    if 2 * len(shp) <= _C.MAX_DIMS:
        inter = tuple(v for s in shp for v in (1, s))
        big = tuple(v for r, s in zip(reps, shp) for v in (r, s))
        return reshape(x.reshape(inter).expand(big), tuple(r * s for r, s in zip(reps, shp)))
    for d, r in enumerate(reps):
        if r != 1:
            x = FUNCTIONS["cat"]([x] * r, d) if r <= _C.MAX_INS else FUNCTIONS["cat"](
                [FUNCTIONS["cat"]([x] * (r // 2), d)] * 2 + ([x] if r % 2 else []), d)
    return x


@both
def tile(input, dims):
    dims = sizes_arg((dims,), "tile")
    if len(dims) < input.dim():
        dims = (1,) * (input.dim() - len(dims)) + dims
    return repeat(input, dims)


@both
def flip(input, dims):
    dims = [dims] if isinstance(dims, int) else list(dims)
    r = input
    for d in dims:
        d = _wrap_dim(d, input.dim(), "flip")
        n = input.shape[d]
        idx = FUNCTIONS["arange"](n - 1, -1, -1) if n else FUNCTIONS["zeros"](0, dtype=_int64)
        r = FUNCTIONS["index_select"](r, d, idx)
    return r if r is not input else FUNCTIONS["clone"](input)


@both
def roll(input, shifts, dims=None):
    if dims is None:
        return roll(flatten(input), shifts, 0).view(input.shape)
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = [dims] if isinstance(dims, int) else list(dims)
    r = input
    for s, d in zip(shifts, dims):
        d = _wrap_dim(d, input.dim(), "roll")
        n = input.shape[d]
        if n == 0:
            continue
        s %= n
        if s:
            r = FUNCTIONS["cat"]([narrow(r, d, n - s, s), narrow(r, d, 0, n - s)], d)
    return r if r is not input else FUNCTIONS["clone"](input)


@both
def diagonal(input, offset=0, dim1=0, dim2=1):
    d1, d2 = _wrap_dim(dim1, input.dim()), _wrap_dim(dim2, input.dim())
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    shp, st = list(input.shape), list(input.stride())
    if offset >= 0:
        n = _b.max(_b.min(shp[d1], shp[d2] - offset), 0)
        off = input.storage_offset() + (offset * st[d2] if n else 0)
    else:
        n = _b.max(_b.min(shp[d1] + offset, shp[d2]), 0)
        off = input.storage_offset() - (offset * st[d1] if n else 0)
    keep = [i for i in range(input.dim()) if i not in (d1, d2)]
    return ops.as_strided(input, size=[shp[i] for i in keep] + [n],
                          stride=[st[i] for i in keep] + [st[d1] + st[d2]], offset=off)


@both
def as_strided(input, size, stride, storage_offset=None):
    off = input.storage_offset() if storage_offset is None else storage_offset
    return ops.as_strided(input, size=sizes_arg((size,), "as_strided"),
                          stride=sizes_arg((stride,), "as_strided"), offset=off)


# ---------------------------------------------------------------- indexing
@both
def nonzero(input, *, as_tuple=False):
    idx = _C._nonzero(input)
    if not as_tuple:
        return idx
    if input.dim() == 0:
        return (idx.view(-1),) if idx.numel() else (FUNCTIONS["zeros"](0, dtype=_int64),)
    return tuple(idx[:, i] for i in range(input.dim())) if idx.shape[0] else tuple(
        FUNCTIONS["zeros"](0, dtype=_int64) for _ in range(input.dim()))


@both
def argwhere(input):
    return _C._nonzero(input)


@both
def masked_select(input, mask):
    if mask.dtype is not _bool:
        raise RuntimeError(f"masked_select: expected BoolTensor for mask, got {mask.dtype}")
    shp = tuple(FUNCTIONS["broadcast_shapes"](input.shape, mask.shape))
    return input.expand(shp)[mask.expand(shp)]


_round_op, _round_into = FUNCTIONS["round"], METHODS["round_"]


def _round_decimals(x, decimals):
    """torch's round with decimals: x * 10^d rounded half to even, / 10^d (for d < 0:
    x / 10^-d rounded, * 10^-d), in x's dtype."""
    ten = 10.0 ** _b.abs(decimals)
    return _round_op(x * ten) / ten if decimals > 0 else _round_op(x / ten) * ten


@both
def round(input, *, decimals=0, out=None):
    """round(input, *, decimals=0): half to even, at `decimals` places as torch's."""
    r = _round_op(input) if decimals == 0 else _round_decimals(input, int(decimals))
    return r if out is None else out.copy_(r)


@method
def round_(self, *, decimals=0):
    return _round_into(self) if decimals == 0 else self.copy_(_round_decimals(self, int(decimals)))


@method
def masked_fill_(self, mask, value):
    return METHODS["_masked_fill_into"](self, mask, value)


METHODS["_masked_fill_into"] = opfn("masked_fill_", "masked_fill", "input:T, mask:T, value:f", mode=MODE_INTO)


@method
def _masked_setitem(self, mask, value):
    """x[mask] = number with a bool mask over x's leading dims (Tensor.__setitem__,
    csrc/index.c, sends it here): a masked fill, broadcast over the trailing dims."""
    if mask.ndim < self.ndim:
        mask = mask.reshape(tuple(mask.shape) + (1,) * (self.ndim - mask.ndim))
    return self.masked_fill_(mask, value)


def _index_put_impl(self, indices, values, accumulate):
    if not isinstance(indices, (tuple, list)):
        raise TypeError("index_put_(): indices must be a tuple of Tensors")
    idx = []
    for ix in indices:
        if ix is None:
            raise NotImplementedError("index_put_(): None in indices is not supported; use x[...] = v")
        if not isinstance(ix, TensorBase):
            ix = FUNCTIONS["tensor"](ix)
        if ix.dtype is _bool or ix.dtype is _dtype._BY_NAME["uint8"]:
            idx.extend(nonzero(ix, as_tuple=True))
        else:
            idx.append(ix if ix.dtype is _int64 else ix.long())
    if len(idx) > self.dim():
        raise IndexError(f"too many indices for tensor of dimension {self.dim()} (got {len(idx)})")
    if not isinstance(values, TensorBase):
        values = FUNCTIONS["tensor"](values, dtype=self.dtype)
    elif values.dtype is not self.dtype:
        values = values.to(self.dtype)
    mask = [1] * len(idx) + [0] * (self.dim() - len(idx))
    return ops.index_put_(self, values, idx, mask=mask, accumulate=bool(accumulate))


@method
def index_put_(self, indices, values, accumulate=False):
    return _index_put_impl(self, indices, values, accumulate)


@both
def index_put(input, indices, values, accumulate=False):
    return _index_put_impl(FUNCTIONS["clone"](input), indices, values, accumulate)


def _index_dim(self, dim, index, source, fn):
    """index_add_ / index_copy_'s checks; (the mask, source in self's dtype)."""
    nd = _b.max(self.dim(), 1)
    if not -nd <= dim < nd:
        raise IndexError(f"{fn}(): dimension {dim} is out of range for a tensor of {self.dim()} dims")
    dim %= nd
    if index.dim() > 1 or index.dtype not in (_int64, _dtype._BY_NAME["int32"]):
        raise IndexError(f"{fn}(): index must be a 1-d int64 or int32 tensor, got {index.dim()}-d {index.dtype}")
    want = list(self.shape)
    if self.dim():
        want[dim] = index.numel()
    if list(source.shape) != want:
        raise RuntimeError(f"{fn}(): source has shape {list(source.shape)}; for {index.numel()} indices along "
                           f"dim {dim} of a tensor of shape {list(self.shape)} it must be {want}")
    return [0] * dim + [1] + [0] * (self.dim() - dim - 1), source.to(self.dtype)


@method
def index_add_(self, dim, index, source, *, alpha=1):
    """self[..., index[i], ...] += alpha * source[..., i, ...] along dim (repeats add up)."""
    mask, src = _index_dim(self, dim, index, source, "index_add_")
    if alpha != 1:
        src = src * alpha
    return ops.index_put_(self, src, [index.long()], mask=mask, accumulate=True)


@both
def index_add(input, dim, index, source, *, alpha=1):
    return index_add_(FUNCTIONS["clone"](input), dim, index, source, alpha=alpha)


@method
def index_copy_(self, dim, index, source):
    """self[..., index[i], ...] = source[..., i, ...] along dim."""
    mask, src = _index_dim(self, dim, index, source, "index_copy_")
    return ops.index_put_(self, src, [index.long()], mask=mask, accumulate=False)


@both
def index_copy(input, dim, index, source):
    return index_copy_(FUNCTIONS["clone"](input), dim, index, source)


def _unique_out(values, group, perm, shape, return_inverse, return_counts):
    out = [values]
    if return_inverse:
        inverse = FUNCTIONS["empty"](group.numel(), dtype=_int64)
        if perm is None:
            inverse = group
        else:
            inverse[perm] = group
        out.append(inverse.reshape(shape))
    if return_counts:
        out.append(bincount(group, minlength=values.numel()) if group.numel() else FUNCTIONS["zeros"](0, dtype=_int64))
    return out[0] if len(out) == 1 else tuple(out)


def _runs(s):
    """Group numbers of a 1-d tensor's runs of equal values (NaNs never equal: each its own)."""
    first = FUNCTIONS["ones"](s.numel(), dtype=_bool)
    if s.numel() > 1:
        first[1:] = s[1:] != s[:-1]
    return first, FUNCTIONS["cumsum"](first.long(), 0) - 1


@both
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values, sorted (torch sorts on the CPU whatever sorted says); the
    result's length depends on the data: a sync under record and replay."""
    if dim is not None:
        raise NotImplementedError("unique(dim=...) is not supported by janus; use unique() of the flattened "
                                  "tensor, or of a hashable Python view of the rows")
    flat = input.reshape(-1)
    s, perm = FUNCTIONS["sort"](flat)
    first, group = _runs(s)
    return _unique_out(s[first], group, perm, input.shape, return_inverse, return_counts)


@both
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """One value of each run of equal consecutive values (a sync, as unique)."""
    if dim is not None:
        raise NotImplementedError("unique_consecutive(dim=...) is not supported by janus; use it on the "
                                  "flattened tensor")
    flat = input.reshape(-1)
    first, group = _runs(flat)
    return _unique_out(flat[first], group, None, input.shape, return_inverse, return_counts)


@both
def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element is among test_elements (compared all against all: O(n m) memory)."""
    if not isinstance(elements, TensorBase):
        elements = FUNCTIONS["tensor"](elements)
    if not isinstance(test_elements, TensorBase):
        test_elements = FUNCTIONS["tensor"](test_elements)
    hit = FUNCTIONS["any"](elements.unsqueeze(-1) == test_elements.reshape(-1), -1) if test_elements.numel() \
        else FUNCTIONS["zeros"](elements.shape, dtype=_bool)
    return ~hit if invert else hit


@both
def bincount(input, weights=None, minlength=0):
    """Counts of each value of a 1-d non-negative int tensor (its data decides the length: a sync)."""
    if input.dim() != 1 or input.dtype.is_floating_point or input.dtype is _bool:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if input.numel() and FUNCTIONS["min"](input).item() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    n = _b.max(int(FUNCTIONS["max"](input).item()) + 1 if input.numel() else 0, minlength)
    if weights is None:
        return index_add_(FUNCTIONS["zeros"](n, dtype=_int64), 0, input, FUNCTIONS["ones"](input.numel(), dtype=_int64))
    dt = weights.dtype if weights.dtype.is_floating_point else _dtype._BY_NAME["float64"]
    return index_add_(FUNCTIONS["zeros"](n, dtype=dt), 0, input, weights.to(dt))


def _scatter_src(input, index, src, value, fn):
    if src is None:
        src = value
    if src is None:
        raise TypeError(f"{fn}(): expected src (a Tensor) or value (a number)")
    if not isinstance(src, TensorBase):
        src = FUNCTIONS["full"](tuple(index.shape), src, dtype=input.dtype, device=input.device)
    return src


@both
def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    src = _scatter_src(input, index, src, value, "scatter")
    if reduce is None:
        return _I["_scatter"](input, dim, index, src)
    if reduce == "add":
        return _I["_scatter_add"](input, dim, index, src)
    raise NotImplementedError(f"scatter(): reduce={reduce!r} is not supported (only 'add')")


@method
def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
    return self.copy_(scatter(self, dim, index, src, value=value, reduce=reduce))


@both
def scatter_add(input, dim, index, src):
    return _I["_scatter_add"](input, dim, index, src)


@method
def scatter_add_(self, dim, index, src):
    return self.copy_(_I["_scatter_add"](self, dim, index, src))


@both
def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    return _I["_slice_scatter"](input, src, dim, 0 if start is None else start,
                                (1 << 62) if end is None else end, step)


@both
def take_along_dim(input, indices, dim):
    return FUNCTIONS["gather"](input, dim, indices)


@both
def index_fill(input, dim, index, value):
    r = FUNCTIONS["clone"](input)
    return index_fill_(r, dim, index, value)


@method
def index_fill_(self, dim, index, value):
    d = _wrap_dim(dim, self.dim(), "index_fill_")
    key = (slice(None),) * d + (index,)
    self[key] = value
    return self


# ---------------------------------------------------------------- linalg
@both
def dot(input, other):
    if input.dim() != 1 or other.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.dim()}D and {other.dim()}D tensors")
    return FUNCTIONS["matmul"](input, other)


FUNCTIONS["inner"] = dot


@both
def mv(input, vec):
    if input.dim() != 2 or vec.dim() != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.dim()}, {vec.dim()}")
    return FUNCTIONS["matmul"](input, vec)


@both
def outer(input, vec2):
    return input.reshape(-1, 1) * vec2.reshape(1, -1)


FUNCTIONS["ger"] = outer


@function
def broadcast_shapes(*shapes):
    nd = _b.max((len(s) if not isinstance(s, int) else 1 for s in shapes), default=0)
    out = [1] * nd
    for s in shapes:
        s = (s,) if isinstance(s, int) else tuple(s)
        for i, v in enumerate(s):
            j = nd - len(s) + i
            if out[j] == 1:
                out[j] = v
            elif v != 1 and v != out[j]:
                raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single shape. "
                                   f"Mismatch is at dim {j} ({out[j]} vs {v}) for shapes {list(shapes)}")
    return _dtype.Size(out)


@function
def broadcast_tensors(*tensors):
    shp = broadcast_shapes(*[t.shape for t in tensors])
    return tuple(t.expand(shp) for t in tensors)


@function
def broadcast_to(input, size):
    return input.expand(size)


METHODS["broadcast_to"] = broadcast_to


@function
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    def pair(v, what):
        if isinstance(v, str):
            raise NotImplementedError(f"conv2d(): padding={v!r} strings are not supported yet")
        v = (v, v) if isinstance(v, int) else tuple(v)
        if len(v) != 2:
            raise ValueError(f"conv2d(): {what} must be an int or a pair of ints, got {v}")
        return v
    return _I["_conv2d"](input, weight, bias, pair(stride, "stride"), pair(padding, "padding"),
                         pair(dilation, "dilation"), groups)


@function
def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    def pair(v):
        return (v, v) if isinstance(v, int) else tuple(v)
    k = pair(kernel_size)
    s = k if stride is None or stride == [] or stride == () else pair(stride)
    vals, idx = ops.max_pool2d(input, kernel=k, stride=s, padding=pair(padding), dilation=pair(dilation),
                               ceil_mode=bool(ceil_mode))
    return return_types.max_pool2d_with_indices(vals, idx) if return_indices else vals


@function
def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """torch.embedding(weight, indices): rows of weight picked by indices."""
    return ops.embedding(indices, weight, padding_idx=-1 if padding_idx is None else padding_idx)

