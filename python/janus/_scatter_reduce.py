"""torch.scatter_reduce / Tensor.scatter_reduce / Tensor.scatter_reduce_,
composed from table ops (the op table has scatter and scatter_add only).

- sum, mean: scatter_add (include_self=False first scatters 0 over the
  targeted positions; mean divides by the count of what was reduced, self
  included, floor division for integers, as torch).  Autograd of the
  composition is torch's gradient.
- prod, amax, amin: the values headed for each position are brought
  together by one stable sort of their flat destinations (self's own value
  first when included, then the sources in index order) and reduced by a
  segmented scan (log2(n) shifted steps of mul / maximum / minimum); each
  group's last element is scattered to its position, every other element to
  one spare slot past the end that is dropped (so no two kept writes collide
  on any device).  The data decides no shape and nothing is read on the host.
  prod's gradient is autograd's through the products: the product of the
  others, also at zeros, as torch's formula.  amax/amin's value is computed
  without autograd and torch's gradient (evenly among the tied self and
  source values, self counted even when not included, as
  FunctionsManual's scatter_reduce_backward) is attached by a zero-valued
  term w * (x.detach() - x) subtracted from it.
Limits: a float prod reduces in the scan's tree order, so it may differ from
torch's sequential product in the last bits; amax/amin give no gradient to a
tied value that is infinite (a source's, or self's at a targeted position)
or to NaN results (torch's is NaN there).
"""
from ._functions import FUNCTIONS, TensorBase, _C, _I, _bool, _dtype, _int64, _wrap_dim, both, method

_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def _check(input, dim, index, src, reduce):
    if not isinstance(input, TensorBase):
        raise TypeError(f"scatter_reduce(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if not isinstance(index, TensorBase):
        raise TypeError(f"scatter_reduce(): argument 'index' (position 2) must be Tensor, not {type(index).__name__}")
    if not isinstance(src, TensorBase):
        raise TypeError(f"scatter_reduce(): argument 'src' (position 3) must be Tensor, not {type(src).__name__}")
    if reduce not in _REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    dim = _wrap_dim(dim, input.dim(), "scatter_reduce")
    if index.dtype not in (_int64, _dtype._BY_NAME["int32"]):
        raise RuntimeError("scatter(): Expected dtype int32/int64 for index")
    if src.dtype != input.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    nd = lambda t: t.dim() or 1  # noqa: E731  (a 0-d tensor counts as 1-d, as in torch)
    sh = lambda t: tuple(t.shape) or (1,)  # noqa: E731
    if index.numel() and nd(index) != nd(input):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if index.numel() and nd(index) != nd(src):
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    if index.numel():
        i, s, x = sh(index), sh(src), sh(input)
        if any(i[d] > s[d] or (d != dim and i[d] > x[d]) for d in range(len(i))):
            raise RuntimeError(f"Expected index {list(i)} to be no larger than self {list(x)} apart from "
                               f"dimension {dim} and to be no larger size than src {list(s)}")
    if reduce == "mean" and input.dtype is _bool:
        raise NotImplementedError("\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for 'Bool'")
    return dim


def _dest(x, dim, index):
    """Each index element's flat position in x (row-major over x's shape)."""
    shape, nd = tuple(x.shape), x.dim()
    strides = [1] * nd
    for d in range(nd - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    dest = index.to(_int64) * strides[dim]
    for d in range(nd):
        if d != dim and index.shape[d] > 1:
            view = [1] * nd
            view[d] = index.shape[d]
            dest = dest + FUNCTIONS["arange"](index.shape[d], device=x.device).reshape(view) * strides[d]
    return dest


def _segment_reduce(x, dim, index, src, include_self, op):
    """prod / amax / amin by sort and segmented scan (see the module docstring)."""
    n = x.numel()
    srcu = src[tuple(slice(0, k) for k in index.shape)]  # the part of src the index covers
    dest = _dest(x, dim, index).reshape(-1)
    vals = srcu.reshape(-1)
    if include_self:
        vals = FUNCTIONS["cat"]([x.reshape(-1), vals])
        dest = FUNCTIONS["cat"]([FUNCTIONS["arange"](n, device=x.device), dest])
    dest, order = FUNCTIONS["sort"](dest, stable=True)
    vals = vals[order]
    m, k = dest.shape[0], 1
    while k < m:
        same = dest[k:] == dest[:-k]
        vals = FUNCTIONS["cat"]([vals[:k], FUNCTIONS["where"](same, op(vals[:-k], vals[k:]), vals[k:])])
        k *= 2
    last = FUNCTIONS["cat"]([dest[1:] != dest[:-1], FUNCTIONS["ones"](1, dtype=_bool, device=x.device)])
    target = FUNCTIONS["where"](last, dest, n)  # all but each group's last go to the spare slot n
    base = FUNCTIONS["cat"]([x.reshape(-1), FUNCTIONS["zeros"](1, dtype=x.dtype, device=x.device)])
    return _I["_scatter"](base, 0, target, vals)[:n].reshape(x.shape)


def _extremum(x, dim, index, src, include_self, reduce):
    """amax / amin: the value without autograd, torch's gradient attached."""
    op = FUNCTIONS["maximum"] if reduce == "amax" else FUNCTIONS["minimum"]
    with _no_grad():
        r = _segment_reduce(x.detach(), dim, index, src.detach(), include_self, op)
    if not (_C.is_grad_enabled() and (x.requires_grad or src.requires_grad)):
        return r
    srcu = src[tuple(slice(0, k) for k in index.shape)]
    dt = x.dtype
    with _no_grad():
        self_is = x.detach() == r
        src_is = srcu.detach() == r.gather(dim, index)
        cnt = _I["_scatter_add"](self_is.to(dt), dim, index, src_is.to(dt))
        ws = self_is.to(dt) / cnt
        if not include_self:
            ws = FUNCTIONS["scatter"](ws, dim, index, value=0)
        wsrc = src_is.to(dt) / cnt.gather(dim, index)
        ws = FUNCTIONS["where"](FUNCTIONS["isfinite"](ws), ws, 0)
        wsrc = FUNCTIONS["where"](FUNCTIONS["isfinite"](wsrc), wsrc, 0)
        # an infinite self that is its position's only extremum passes through `where` below
        through = self_is & FUNCTIONS["isinf"](x.detach()) & (ws == 1)

    def down(t):  # t.detach() - t: exactly +0 for finite t, gradient -1 (0 where t is not finite)
        tf = FUNCTIONS["where"](FUNCTIONS["isfinite"](t), t, 0)
        return tf.detach() - tf

    delta = ws * down(x) + _I["_scatter_add"](FUNCTIONS["zeros_like"](x), dim, index, wsrc * down(srcu))
    return FUNCTIONS["where"](through, x, r - delta)  # r - (+0) is r, -0.0 included


def _no_grad():
    from .autograd import no_grad
    return no_grad()


@both
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """scatter_reduce(input, dim, index, src, reduce, *, include_self=True): src's values
    reduced into input's positions along dim named by index, reduce one of sum, prod,
    mean, amax, amin (torch's semantics and gradients; see janus/_scatter_reduce.py)."""
    dim = _check(input, dim, index, src, reduce)
    if index.numel() == 0:
        return FUNCTIONS["clone"](input)
    zero_d = input.dim() == 0
    x = input.reshape(1) if zero_d else input
    if index.dim() == 0:
        index = index.reshape(1)
    if src.dim() == 0:
        src = src.reshape(1)
    if reduce in ("sum", "mean"):
        base = x if include_self else FUNCTIONS["scatter"](x, dim, index, value=0)
        out = _I["_scatter_add"](base, dim, index, src)
        if reduce == "mean":
            start = FUNCTIONS["ones_like"](x) if include_self else FUNCTIONS["zeros_like"](x)
            cnt = _I["_scatter_add"](start, dim, index, FUNCTIONS["ones_like"](src))
            cnt = FUNCTIONS["where"](cnt == 0, 1, cnt)
            if x.dtype.is_floating_point:
                out = out / cnt
            else:
                out = FUNCTIONS["div"](out, cnt, rounding_mode="floor")
    elif reduce == "prod":
        out = _segment_reduce(x, dim, index, src, include_self, FUNCTIONS["mul"])
    else:
        out = _extremum(x, dim, index, src, include_self, reduce)
    return out.reshape(()) if zero_d else out


@method
def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    return self.copy_(scatter_reduce(self, dim, index, src, reduce, include_self=include_self))
