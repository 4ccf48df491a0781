"""janus.linalg: the parts of torch.linalg a training script uses.

Composed from table ops so autograd differentiates them: vector_norm,
matrix_norm (the norms without a decomposition: 'fro', 1, -1, inf, -inf),
norm, vecdot, cross, matmul, diagonal, multi_dot.  Over LAPACK (CPU only,
float32 and float64, batched; janus/_lapack.py, runtime/k_lapack.c): inv,
solve, det, slogdet, cholesky, cholesky_ex, solve_triangular, eigh,
eigvalsh, svd, svdvals, qr, pinv, and from them the 'nuc', 2 and -2 matrix
norms, matrix_rank and lstsq (A^+ B), with torch's derivatives.  The other
decompositions and solvers (lu, eig, ...) have no kernels: they raise
janus's unsupported-name error.
"""
import math

import janus
from janus._lapack import (LinAlgError, cholesky, cholesky_ex, det, eigh, eigvalsh, inv, lstsq, matrix_rank, pinv, qr,
                           slogdet, solve, solve_triangular, svd, svdvals)

__all__ = ["vector_norm", "matrix_norm", "norm", "vecdot", "cross", "matmul", "diagonal", "multi_dot",
           "inv", "solve", "det", "slogdet", "cholesky", "cholesky_ex", "solve_triangular", "eigh", "eigvalsh",
           "svd", "svdvals", "qr", "matrix_rank", "pinv", "lstsq", "LinAlgError"]


def _float(x, dtype, fn):
    if dtype is not None:
        x = x.to(dtype)
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"linalg.{fn}: Expected a floating point tensor as input. Got {x.dtype}")
    return x


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """sum(|x|^ord)^(1/ord) over dim (all elements when None); ord inf/-inf: max/min |x|, 0: the
    count of nonzeros.  A zero 2-norm has gradient 0, as torch's."""
    x = _float(x, dtype, "vector_norm")
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.vector_norm: ord must be a number, got '{ord}'")
    r = janus.norm(x, 2 if ord == 2 else ord, dim, keepdim)
    if out is not None:
        out.copy_(r)
        return out
    return r


def _two_dims(A, dim, fn):
    if A.dim() < 2:
        raise RuntimeError(f"linalg.{fn}: The input tensor A must have at least 2 dimensions.")
    if len(dim) != 2:
        raise RuntimeError(f"linalg.{fn}: dim must be a 2-tuple. Got {tuple(dim)}")
    d0, d1 = (d % A.dim() for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.{fn}: dims must be different. Got ({dim[0]}, {dim[1]})")
    return d0, d1


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """Frobenius ('fro'), max column sum (1), max row sum (inf) and their minima (-1, -inf) over
    the two dims; 'nuc', 2 and -2 from the singular values (svdvals)."""
    A = _float(A, dtype, "matrix_norm")
    d0, d1 = _two_dims(A, dim, "matrix_norm")
    if ord == "fro":
        r = janus.norm(A, 2, (d0, d1), keepdim)
    elif ord in (1, -1, math.inf, -math.inf):
        over, then = (d0, d1) if abs(ord) == 1 else (d1, d0)  # 1: sum down a column, max over columns
        s = A.abs().sum(over, keepdim=True)
        r = s.amax(then, keepdim=True) if ord > 0 else s.amin(then, keepdim=True)
        if not keepdim:
            r = r.squeeze(max(d0, d1)).squeeze(min(d0, d1))
    elif ord in ("nuc", 2, -2):  # the singular values' sum, largest, smallest
        sv = svdvals(A.movedim((d0, d1), (-2, -1)))
        r = sv.sum(-1) if ord == "nuc" else sv.amax(-1) if ord == 2 else sv.amin(-1)
        if keepdim:
            r = r.unsqueeze(min(d0, d1)).unsqueeze(max(d0, d1))
    else:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if out is not None:
        out.copy_(r)
        return out
    return r


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    """torch.linalg.norm: a matrix norm when dim is a 2-tuple (or dim is None, ord is given and A
    is 2-D), else a vector norm (ord None: 2, over all elements when dim is None)."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) == 2 or (dim is None and ord is not None and A.dim() == 2):
        return matrix_norm(A, "fro" if ord is None else ord, (-2, -1) if dim is None else dim, keepdim,
                           dtype=dtype, out=out)
    if dim is None and ord is not None and A.dim() != 1:
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                           f"Got {A.dim()}D.")
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.norm: Order {ord} not supported for a vector norm.")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype, out=out)


def vecdot(x, y, *, dim=-1):
    """sum(x * y) over dim, the inputs broadcast (real dtypes: no conjugation)."""
    return (x * y).sum(dim)


def cross(input, other, *, dim=-1):
    return janus.cross(input, other, dim)


def matmul(input, other):
    return janus.matmul(input, other)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    return janus.diagonal(A, offset, dim1, dim2)


def multi_dot(tensors):
    """A chain of matmuls, left to right; the first may be 1-D (a row), the last 1-D (a column)."""
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for i, t in enumerate(tensors):
        inner = 0 < i < len(tensors) - 1
        if t.dim() not in ((2,) if inner else (1, 2)):
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D" + ("" if inner else " or 1D")
                               + f" but got {t.dim()}D")
    r = tensors[0]
    for t in tensors[1:]:
        r = janus.matmul(r, t)
    return r
