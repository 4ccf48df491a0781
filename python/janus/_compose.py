"""Torch functions composed from table ops: sorting and selection (on the
table's one sort op), scans, einsum, diag, multinomial, and cat/stack of
any number of tensors.

Each is a short sequence of ordinary table ops, so autograd, the recorder
and replay see real ops and nothing here needs its own derivative:

- sort/argsort/msort/topk/kthvalue/median: the `sort` op (always stable, NaN
  above every number) plus narrow/select; the values' gradient flows back
  through sort's derivative (a scatter).
- cumsum/cumprod: a Hillis-Steele scan, log2(n) shifted adds (multiplies)
  along the dim -- O(n log n) work in log n ops rather than one op per
  element; the sums are associated differently from a sequential loop, so
  they may differ from PyTorch's in the last bits.
- einsum: repeated labels become diagonals (gather), labels used once are
  summed, operands are contracted left to right as batched GEMMs (bmm).
- multinomial: with replacement (or one sample), inverse-CDF sampling from
  the cumulative sums; without, the exponential race (the k smallest of
  Exp(1)/p, which draws without replacement in proportion to p).  The
  uniforms come from janus.rand, so a seed reproduces them and replay
  re-draws them exactly.  Unlike PyTorch, the probabilities are not checked
  (that would be a sync point); rows must be non-negative with a positive sum.
- cat/stack of more than _C.MAX_INS tensors (the most one op takes): the
  OpFn's overflow hook chunks them, cat of cats (stack of chunks, then cat),
  so the common case keeps its C fast path.
"""
import builtins as _b
import collections as _collections

from . import _C
from . import _dtype
from . import return_types
from ._functions import _wrap_dim, both, function, narrow
from ._ops import FUNCTIONS, ops

_MAX = _C.MAX_INS
_int64 = _dtype._BY_NAME["int64"]
_float64 = _dtype._BY_NAME["float64"]


def _f(name):
    return FUNCTIONS[name]


# ------------------------------------------------ cat / stack of many tensors
def _chunked(fn, stack):
    """The overflow hook of cat-like (stack=False) or stack-like OpFns: the
    same call over chunks of at most _MAX tensors, joined with cat."""
    def many(tensors, *args, **kw):
        ts = list(tensors)
        parts = [fn(ts[i:i + _MAX], *args, **kw) for i in range(0, len(ts), _MAX)]
        if not stack:
            return fn(parts, *args, **kw)  # more than _MAX parts overflow again
        dim = args[0] if args else kw.get("dim", 0)
        return _f("cat")(parts, dim)  # stacked chunks share the new dim
    many.__name__ = f"{fn.__name__}_many"
    return many


for _n in ("cat", "concat", "concatenate"):
    FUNCTIONS[_n].overflow = _chunked(FUNCTIONS[_n], False)
FUNCTIONS["stack"].overflow = _chunked(FUNCTIONS["stack"], True)


# -------------------------------------------------------- sorting, selection
def _sort_dim(input, dim, fn):
    return _wrap_dim(dim, input.dim(), fn) if input.dim() else 0


@both
def sort(input, dim=-1, descending=False, stable=False, *, out=None):
    """(values, indices) along dim; stable (equal values keep their order), NaN last
    (first when descending)."""
    if out is not None:
        raise TypeError("sort(): out= is not supported")
    v, i = ops.sort(input, dim=_sort_dim(input, dim, "sort"), descending=bool(descending))
    return return_types.sort(v, i)


@both
def argsort(input, dim=-1, descending=False, stable=False):
    return ops.sort(input, dim=_sort_dim(input, dim, "argsort"), descending=bool(descending))[1]


@both
def msort(input):
    return sort(input, 0).values


@both
def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    """The k largest (smallest) values along dim and their indices, in order."""
    if out is not None:
        raise TypeError("topk(): out= is not supported")
    d = _sort_dim(input, dim, "topk")
    n = input.shape[d] if input.dim() else 1
    if not 0 <= k <= n:
        raise RuntimeError(f"selected index k out of range (k={k}, size {n} along dim {d})")
    v, i = ops.sort(input, dim=d, descending=bool(largest))
    if input.dim() == 0:
        return return_types.topk(v, i)
    return return_types.topk(narrow(v, d, 0, k).contiguous(), narrow(i, d, 0, k).contiguous())


def _select_sorted(input, dim, pos, keepdim, fn, nan_propagates):
    d = _sort_dim(input, dim, fn)
    v, i = ops.sort(input, dim=d)
    if input.dim() == 0:
        return v, i
    v, i = v.select(d, pos), i.select(d, pos)
    if nan_propagates and input.dtype.is_floating_point:
        # PyTorch: a slice holding NaN has median NaN, at its first NaN's index
        nan = input.isnan()
        has = nan.any(d)
        v = _f("where")(has, float("nan"), v)
        i = _f("where")(has, nan.long().argmax(d), i)
    if keepdim:
        v, i = v.unsqueeze(d), i.unsqueeze(d)
    return v, i


@both
def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    """The k-th smallest value along dim (k from 1) and its index."""
    d = _sort_dim(input, dim, "kthvalue")
    n = input.shape[d] if input.dim() else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d} (k={k}, size {n})")
    return return_types.kthvalue(*_select_sorted(input, d, k - 1, keepdim, "kthvalue", False))


@both
def median(input, dim=None, keepdim=False, *, out=None):
    """median(input): the lower of the two middle values of all elements (NaN if any);
    median(input, dim, keepdim=False): (values, indices) along dim."""
    if dim is None:
        flat = input.reshape(-1)
        n = flat.shape[0]
        if n == 0:
            return _f("full")([], float("nan"), dtype=input.dtype)
        return _select_sorted(flat, 0, (n - 1) // 2, False, "median", True)[0]
    d = _sort_dim(input, dim, "median")
    n = input.shape[d] if input.dim() else 1
    if n == 0:
        raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
    return return_types.median(*_select_sorted(input, d, (n - 1) // 2, keepdim, "median", True))


# ---------------------------------------------------------------------- scans
def _scan(input, dim, dtype, combine, fill, fn):
    x = input
    if dtype is not None:
        x = x.to(dtype)
    elif not x.dtype.is_floating_point:
        x = x.to(_int64)  # PyTorch accumulates integers and bools in int64
    if x.dim() == 0:
        return _f("clone")(x)
    d = _wrap_dim(dim, x.dim(), fn)
    n = x.shape[d]
    k = 1
    while k < n:
        shape = list(x.shape)
        shape[d] = k
        pad = _f("full")(shape, fill, dtype=x.dtype, device=x.device)
        x = combine(x, _f("cat")([pad, narrow(x, d, 0, n - k)], d))
        k *= 2
    return x if x is not input else _f("clone")(x)


@both
def cumsum(input, dim, *, dtype=None, out=None):
    if out is not None:
        raise TypeError("cumsum(): out= is not supported")
    return _scan(input, dim, dtype, lambda a, b: a + b, 0, "cumsum")


@both
def cumprod(input, dim, *, dtype=None, out=None):
    if out is not None:
        raise TypeError("cumprod(): out= is not supported")
    return _scan(input, dim, dtype, lambda a, b: a * b, 1, "cumprod")


# ----------------------------------------------------------- diagonals, diag
def _diagonal_of(x, offset, d1, d2):
    """x's diagonal over dims d1, d2 (moved to the end), differentiable: a
    gather, where Tensor.diagonal is an as_strided view."""
    x = _f("movedim")(x, (d1, d2), (-2, -1))
    n, m = x.shape[-2], x.shape[-1]
    if offset >= 0:
        length = _b.max(_b.min(n, m - offset), 0)
        rows = narrow(x, -2, 0, length)
        cols = _f("arange")(length, device=x.device) + offset
    else:
        length = _b.max(_b.min(n + offset, m), 0)
        rows = narrow(x, -2, -offset, length)
        cols = _f("arange")(length, device=x.device)
    idx = cols.view([1] * (x.dim() - 2) + [length, 1]).expand(list(rows.shape[:-1]) + [1]).contiguous()
    return rows.gather(-1, idx).squeeze(-1)


def _embed(v, offset):
    """[..., m] -> [..., m + |offset|, m + |offset|] with v on the offset-th diagonal."""
    m, k = v.shape[-1], abs(offset)
    sq = v.unsqueeze(-1) * _f("eye")(m, dtype=v.dtype, device=v.device)
    if k == 0:
        return sq
    lead = list(v.shape[:-1])
    zr = _f("zeros")(lead + [k, m], dtype=v.dtype, device=v.device)
    zc = _f("zeros")(lead + [m + k, k], dtype=v.dtype, device=v.device)
    if offset > 0:  # entry (i, i + k): zero rows below, zero columns on the left
        return _f("cat")([zc, _f("cat")([sq, zr], -2)], -1)
    return _f("cat")([_f("cat")([zr, sq], -2), zc], -1)


@both
def diag(input, diagonal=0, *, out=None):
    """A 1-D input becomes the k-th diagonal of a square matrix; a 2-D input's
    k-th diagonal becomes a 1-D tensor (a copy)."""
    if input.dim() == 2:
        return _diagonal_of(input, diagonal, 0, 1)
    if input.dim() != 1:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.dim()}D")
    return _embed(input, diagonal)


@both
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Each last-dim vector as the offset-th diagonal of a matrix in dims dim1, dim2."""
    res = _embed(input, offset)
    nd = res.dim()
    d1, d2 = _wrap_dim(dim1, nd, "diag_embed"), _wrap_dim(dim2, nd, "diag_embed")
    if (d1, d2) != (nd - 2, nd - 1):
        res = _f("movedim")(res, (nd - 2, nd - 1), (d1, d2))
    return res


# --------------------------------------------------------------------- einsum
def _einsum_parse(equation, operands):
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum(): {len(terms)} operands in the equation, {len(operands)} given")
    ell = 0
    labels = []
    for t, x in zip(terms, operands):
        if t.count("...") > 1 or "." in t.replace("...", ""):
            raise ValueError(f"einsum(): invalid subscript '{t}'")
        pre, has, post = t.partition("...")
        for ch in pre + post:
            if not ch.isalpha():
                raise ValueError(f"einsum(): invalid subscript '{ch}' in '{equation}' (letters only)")
        k = x.dim() - len(pre) - len(post)
        if (not has and k != 0) or k < 0:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(pre) + len(post)}) "
                               f"does not match the number of dimensions ({x.dim()}) for operand "
                               f"{len(labels)}{'' if has else ' and no ellipsis was given'}")
        ell = _b.max(ell, k)
        labels.append((pre, k, post))
    full = [list(pre) + [f"...{ell - k + i}" for i in range(k)] + list(post) for pre, k, post in labels]
    ell_labels = [f"...{i}" for i in range(ell)]
    if arrow:
        pre, has, post = rhs.partition("...")
        out = list(pre) + (ell_labels if has else []) + list(post)
        if len(set(out)) != len(out):
            raise ValueError(f"einsum(): output subscript repeated in '{equation}'")
        seen = {lab for ls in full for lab in ls}
        for lab in out:
            if lab not in seen:
                raise ValueError(f"einsum(): output subscript {lab} does not appear in the inputs")
    else:
        counts = _collections.Counter(lab for ls in full for lab in ls if not lab.startswith("..."))
        out = ell_labels + sorted(lab for lab, c in counts.items() if c == 1)
    return full, out


def _einsum_prepare(x, labs, keep):
    """Diagonals for repeated labels, sums for labels nobody else needs."""
    labs = list(labs)
    while len(set(labs)) != len(labs):
        lab = next(lab for lab in labs if labs.count(lab) > 1)
        i = labs.index(lab)
        j = labs.index(lab, i + 1)
        if x.shape[i] != x.shape[j]:
            raise RuntimeError(f"einsum(): subscript {lab} is repeated for operand but the sizes don't match, "
                               f"{x.shape[i]} != {x.shape[j]}")
        x = _diagonal_of(x, 0, i, j)
        labs = [lb for k, lb in enumerate(labs) if k not in (i, j)] + [lab]
    drop = [k for k, lab in enumerate(labs) if lab not in keep]
    if drop:
        x = x.sum(drop)
        labs = [lab for k, lab in enumerate(labs) if k not in drop]
    return x, labs


def _einsum_pair(a, al, b, bl, keep):
    batch = [lab for lab in al if lab in bl and lab in keep]
    contr = [lab for lab in al if lab in bl and lab not in keep]
    aonly = [lab for lab in al if lab not in bl]
    bonly = [lab for lab in bl if lab not in al]
    size = {}
    for lab in batch + contr:
        sa, sb = a.shape[al.index(lab)], b.shape[bl.index(lab)]
        if sa != sb and 1 not in (sa, sb):
            raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes: subscript {lab} "
                               f"has sizes {sa} and {sb}")
        size[lab] = _b.max(sa, sb)
    a = a.permute([al.index(lab) for lab in batch + aonly + contr])
    b = b.permute([bl.index(lab) for lab in batch + contr + bonly])
    a = a.expand([size[lab] for lab in batch] + list(a.shape[len(batch):len(batch) + len(aonly)]) +
                 [size[lab] for lab in contr])
    b = b.expand([size[lab] for lab in batch + contr] + list(b.shape[len(batch) + len(contr):]))

    def prod(v):
        r = 1
        for s in v:
            r *= s
        return r
    bs = [size[lab] for lab in batch]
    ms = list(a.shape[len(batch):len(batch) + len(aonly)])
    ns = list(b.shape[len(batch) + len(contr):])
    ks = [size[lab] for lab in contr]
    z = _f("bmm")(a.reshape(prod(bs), prod(ms), prod(ks)), b.reshape(prod(bs), prod(ks), prod(ns)))
    return z.reshape(bs + ms + ns), batch + aonly + bonly


@function
def einsum(equation, *operands):
    """Einstein summation: einsum('bij,bjk->bik', a, b); '...' broadcasts; an
    implicit output keeps the labels used once, in alphabetical order."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError("einsum(): must provide at least one operand")
    full, out = _einsum_parse(equation, operands)
    xs = []
    for i, (x, labs) in enumerate(zip(operands, full)):
        others = {lab for j, ls in enumerate(full) if j != i for lab in ls}
        xs.append(_einsum_prepare(x, labs, others | set(out)))
    x, labs = xs[0]
    for i in range(1, len(xs)):
        y, yl = xs[i]
        keep = set(out) | {lab for _, ls in xs[i + 1:] for lab in ls}
        x, labs = _einsum_prepare(x, labs, keep | set(yl))
        y, yl = _einsum_prepare(y, yl, keep | set(labs))
        x, labs = _einsum_pair(x, labs, y, yl, keep)
    x, labs = _einsum_prepare(x, labs, set(out))
    if labs != out:
        x = x.permute([labs.index(lab) for lab in out])
    return x if len(xs) > 1 or x is not operands[0] else _f("clone")(x)


@function
def tensordot(a, b, dims=2, out=None):
    """Sum over the last `dims` dims of a and the first of b (or the listed dim pairs)."""
    if isinstance(dims, int):
        da, db = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        da, db = ([dims[0]] if isinstance(dims[0], int) else list(dims[0]),
                  [dims[1]] if isinstance(dims[1], int) else list(dims[1]))
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    la = [next(letters) for _ in range(a.dim())]
    lb = [next(letters) for _ in range(b.dim())]
    for i, j in zip(da, db):
        lb[_wrap_dim(j, b.dim(), "tensordot")] = la[_wrap_dim(i, a.dim(), "tensordot")]
    contracted = {la[_wrap_dim(i, a.dim(), "tensordot")] for i in da}
    outl = [lab for lab in la if lab not in contracted] + [lab for lab in lb if lab not in contracted]
    return einsum("".join(la) + "," + "".join(lb) + "->" + "".join(outl), a, b)


# ---------------------------------------------------------------- multinomial
@both
def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """num_samples category indices per row, drawn in proportion to input's
    (non-negative, unnormalized) entries."""
    if out is not None:
        raise TypeError("multinomial(): out= is not supported")
    if input.dim() not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {input.dtype}")
    n = input.shape[-1]
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > n:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    p = (input if input.dim() == 2 else input.unsqueeze(0)).detach().to(_float64)
    rows = p.shape[0]
    if replacement or num_samples == 1:
        cdf = cumsum(p, -1)
        u = _f("rand")(rows, num_samples, dtype=_float64, generator=generator, device=input.device)
        u = u * narrow(cdf, 1, n - 1, 1)  # below each row's total, so the pick has p > 0
        # count the cumulative sums <= u, in chunks of samples that keep [rows, chunk, n] small
        step = _b.max(1, (1 << 22) // _b.max(1, rows * n))
        parts = [(cdf.unsqueeze(1) <= narrow(u, 1, s, _b.min(step, num_samples - s)).unsqueeze(2)).sum(2)
                 for s in range(0, num_samples, step)]
        idx = parts[0] if len(parts) == 1 else _f("cat")(parts, 1)
        idx = idx.clamp(max=n - 1)
    else:
        u = _f("rand")(rows, n, dtype=_float64, generator=generator, device=input.device)
        keys = -(-u).log1p() / p  # Exp(1) / p; p = 0 gives inf: drawn last
        idx = narrow(ops.sort(keys, dim=1, descending=False)[1], 1, 0, num_samples).contiguous()
    return idx if input.dim() == 2 else idx.squeeze(0)


# ---------------------------------------------------------------- small ones
@function
def hstack(tensors):
    ts = [t if t.dim() else t.reshape(1) for t in tensors]
    return _f("cat")(ts, 0 if ts[0].dim() == 1 else 1)


@function
def vstack(tensors):
    return _f("cat")([t.reshape(1, -1) if t.dim() < 2 else t for t in tensors], 0)


row_stack = FUNCTIONS["row_stack"] = vstack


@function
def meshgrid(*tensors, indexing="ij"):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid(): indexing must be 'ij' or 'xy', got '{indexing}'")
    ts = list(tensors)
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = [t.numel() for t in ts]
    out = []
    for i, t in enumerate(ts):
        v = [1] * len(ts)
        v[i] = -1
        out.append(t.reshape(v).expand(shape))
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


@both
def logaddexp(input, other):
    m = _f("maximum")(input, other)
    return m + (-(input - other).abs()).exp().log1p()


@both
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    prod = _f("bmm")(batch1, batch2)
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        return prod
    return prod + (input if beta == 1 else input * beta)


@function
def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
            disable=False):
    """The model (or function) itself: janus compiles a training step by
    recording it (`janus record` / `optimize` / `replay`), not at import.
    Usable as torch.compile(model) and as a decorator, with or without arguments."""
    if model is None:
        return lambda m: m
    return model


@both
def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """NaN -> nan, +inf -> posinf, -inf -> neginf (default: the dtype's largest / lowest finite value)."""
    if not input.dtype.is_floating_point:
        return _f("clone")(input)
    fi = _dtype.finfo(input.dtype)
    out = _f("where")(input.isnan(), float(nan), input)
    out = _f("where")(out == float("inf"), fi.max if posinf is None else float(posinf), out)
    return _f("where")(out == float("-inf"), fi.min if neginf is None else float(neginf), out)


# ---- process-wide switches scripts set: accepted, reported back, no effect
_settings = {"matmul_precision": "highest", "deterministic": False}


@function
def set_float32_matmul_precision(precision):
    """Accepted ("highest", "high", "medium"): janus computes float32 matmuls in float32 (no TF32)."""
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(f"Invalid precision {precision!r}: expected 'highest', 'high' or 'medium'")
    _settings["matmul_precision"] = precision


@function
def get_float32_matmul_precision():
    return _settings["matmul_precision"]


@function
def use_deterministic_algorithms(mode, *, warn_only=False):
    """Accepted: janus's kernels are deterministic already (replay is bitwise equal to eager)."""
    _settings["deterministic"] = bool(mode)


@function
def are_deterministic_algorithms_enabled():
    return _settings["deterministic"]
