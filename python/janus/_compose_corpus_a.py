"""Torch names the second corpus probe (REINFORCE, SimCLR, distillation,
GCN scripts) needed, composed from table ops: Tensor.fill_diagonal_ and
index_reduce (a GNN's mean / max aggregation by node index; scatter_reduce
itself is janus/_scatter_reduce.py's).

Registered like janus/_functions.py's (`method`, `both`), after it and
janus/_compose_more.py (tests/python/test_corpus_api_a.py checks them
against PyTorch, or numpy without it).
"""
from ._functions import FUNCTIONS, _dtype, _int64, both, method

_int32 = _dtype._BY_NAME["int32"]


@method
def fill_diagonal_(self, fill_value, wrap=False):
    """Tensor.fill_diagonal_: the main diagonal (all indices equal) set to
    fill_value in place; with wrap, a 2-D matrix taller than wide by more
    than one row continues the diagonal every width + 1 elements of the
    row-major layout, as torch's does (torch follows the storage: for a
    non-contiguous tensor its wrapped positions differ, janus writes the
    row-major ones).  An index_put_ of arange indices, so it records,
    replays, and autograd gives the filled entries a zero gradient."""
    nd = self.dim()
    if nd < 2:
        raise RuntimeError("dimensions must larger than 1")
    shape = tuple(self.shape)
    h, w = shape[0], shape[1]
    if nd > 2 and any(s != h for s in shape[1:]):
        raise RuntimeError("all dimensions of input must be of equal length")
    ar = FUNCTIONS["arange"]
    n = min(h, w)
    if wrap and nd == 2 and h > w + 1:
        step = w + 1
        pos = ar(0, (h * w + step - 1) // step, dtype=_int64, device=self.device) * step
        idx = (pos // w, pos % w)
    else:
        diag = ar(n, dtype=_int64, device=self.device)
        idx = (diag,) * nd
    return self.index_put_(idx, FUNCTIONS["tensor"](fill_value, dtype=self.dtype, device=self.device))


# ------------------------------------------------------------ index_reduce
def _index_reduce(input, dim, index, source, reduce, include_self, fn):
    """index_reduce as a scatter_reduce (janus/_scatter_reduce.py, looked up when
    called): the 1-d index broadcast over source's other dims."""
    from ._functions import _check_tensor, _wrap_dim
    _check_tensor(input, fn, "self")
    _check_tensor(index, fn, "index")
    _check_tensor(source, fn, "source")
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"{fn}(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    if index.dim() > 1:
        raise IndexError(f"{fn}(): Index is supposed to be a vector")
    if index.dtype is not _int64 and index.dtype is not _int32:
        raise RuntimeError(f"{fn}(): Expected dtype int32/int64 for index but got: {index.dtype}")
    d = _wrap_dim(dim, max(input.dim(), 1), fn)
    if source.dim() != input.dim() or (source.dim() and source.shape[d] != index.numel()):
        raise RuntimeError(f"{fn}(): source must have the same number of dims as self and as many entries "
                           f"along dim {d} as index has")
    if source.dim() == 0:
        idx = index.reshape(())
    else:
        shape = [1] * source.dim()
        shape[d] = index.numel()
        idx = index.long().reshape(shape).expand(tuple(source.shape))
    return FUNCTIONS["scatter_reduce"](input, d, idx, source, reduce, include_self=include_self)


@both
def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """torch.index_reduce (prod, mean, amax, amin): a scatter_reduce of the index
    broadcast along dim; values and gradients are scatter_reduce's, torch's."""
    return _index_reduce(input, dim, index, source, reduce, include_self, "index_reduce")


@method
def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    return self.copy_(_index_reduce(self, dim, index, source, reduce, include_self, "index_reduce_"))
