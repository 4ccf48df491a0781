"""Decompositions and solvers over the LAPACK table ops (runtime/k_lapack.c:
linalg_inv, linalg_solve, linalg_det, linalg_slogdet, linalg_cholesky_ex).

The torch functions and Tensor methods (inverse, det, logdet, slogdet,
cholesky, cholesky_solve) and the torch.linalg ones janus.linalg re-exports
(inv, solve, det, slogdet, cholesky, cholesky_ex).  The table ops take
batches of square matrices with equal batch dims; torch's argument rules
live here: solve's vector right-hand sides, batch broadcasting and
left=False, slogdet's output order, logdet from slogdet, cholesky_solve as
two solves.  Each table op is one node of autograd (its derivative is the
table's, runtime/derivatives.c), of a recording and of a replayed graph.
CPU only: a CUDA tensor gets the dispatcher's unsupported-op error.
"""
import collections as _collections

from ._functions import _check_tensor, both, ops, return_types

__all__ = ["inv", "solve", "det", "slogdet", "logdet", "cholesky", "cholesky_ex"]



def _rtype(name, fields):
    """return_types.<name> (torch.return_types' named tuples), made once."""
    if not hasattr(return_types, name):
        setattr(return_types, name, _collections.namedtuple(name, fields, module=return_types.__name__))
    return getattr(return_types, name)


_rt_slogdet = _rtype("slogdet", ["sign", "logabsdet"])
_rt_linalg_slogdet = _rtype("linalg_slogdet", ["sign", "logabsdet"])
_rt_cholesky_ex = _rtype("linalg_cholesky_ex", ["L", "info"])


def _out(r, out):
    """out=: the result copied into out, of its shape (a tuple for several results)."""
    if out is None:
        return r
    if isinstance(r, tuple):
        for o, v in zip(out, r):
            o.copy_(v)
        return type(r)(*out) if hasattr(r, "_fields") else tuple(out)
    out.copy_(r)
    return out


def _tensor(x, fn, arg):
    _check_tensor(x, fn, arg)
    return x


def inv(A, *, out=None):
    """A^-1 for a batch of square matrices (LU with partial pivoting, then a solve
    against the identity, as torch's CPU path)."""
    return _out(ops.linalg_inv(_tensor(A, "linalg.inv", "A")), out)


def det(A, *, out=None):
    """det(A) from the LU factorization: 0 for an exactly singular matrix.  Its
    gradient, det(A) A^-T, raises at an exactly singular A (torch's goes through an SVD)."""
    return _out(ops.linalg_det(_tensor(A, "linalg.det", "A")), out)


def slogdet(A, *, out=None):
    """(sign, log|det|): sign 0 and log|det| -inf for an exactly singular matrix."""
    lad, sign = ops.linalg_slogdet(_tensor(A, "linalg.slogdet", "A"))
    return _out(_rt_linalg_slogdet(sign, lad), out)


def _renamed(e, old, new):
    """e with its message's leading `old:` said as torch's `new:` (same type, no chaining)."""
    msg = str(e)
    return type(e)(new + msg[len(old):]) if msg.startswith(old + ":") else e


def logdet(A):
    """log(det(A)): nan where det < 0, -inf where det == 0 (log of the sign added to log|det|)."""
    try:
        lad, sign = ops.linalg_slogdet(_tensor(A, "logdet", "input"))
    except (RuntimeError, NotImplementedError) as e:
        raise _renamed(e, "linalg.slogdet", "logdet") from None
    return lad + sign.log()


def _batch_broadcast(a, b):
    """The broadcast of two batch shapes, with torch's message when they do not."""
    nd = max(len(a), len(b))
    a, b = (1,) * (nd - len(a)) + a, (1,) * (nd - len(b)) + b
    for d, (x, y) in enumerate(zip(a, b)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) at "
                               f"non-singleton dimension {d}")
    return tuple(max(x, y) if x and y else 0 for x, y in zip(a, b))


def solve(A, B, *, left=True, out=None):
    """X with A X = B (left=False: X A = B).  B is a batch of vectors (*, n) when it is
    1-D or has A's shape without its last dim, else of matrices (*, n, k); the batch dims
    broadcast."""
    _check_tensor(A, "linalg.solve", "A")
    _check_tensor(B, "linalg.solve", "B")
    if A.dim() < 2:
        raise RuntimeError("linalg.solve: The input tensor A must have at least 2 dimensions.")
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if not vector and B.dim() < 2:
        raise RuntimeError("linalg.solve: The input tensor B must have at least 2 dimensions.")
    if not left:  # X A = B  <=>  A^T X^T = B^T
        A = A.mT
        if not vector:
            B = B.mT
    if vector:
        B = B.unsqueeze(-1)
    batch = _batch_broadcast(tuple(B.shape[:-2]), tuple(A.shape[:-2]))  # torch names B first
    if tuple(A.shape[:-2]) != batch:
        A = A.expand(*batch, *A.shape[-2:])
    if tuple(B.shape[:-2]) != batch:
        B = B.expand(*batch, *B.shape[-2:])
    X = ops.linalg_solve(A, B)
    if vector:
        X = X.squeeze(-1)
    elif not left:
        X = X.mT
    return _out(X, out)


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """(L, info): info[...] is 0, or the order of the leading minor that is not
    positive-definite (then L is not a factor)."""
    try:
        L, info = ops.linalg_cholesky_ex(_tensor(A, "linalg.cholesky_ex", "A"), upper=bool(upper),
                                         check_errors=bool(check_errors))
    except (RuntimeError, NotImplementedError) as e:
        raise _renamed(e, "linalg.cholesky", "linalg.cholesky_ex") from None
    return _out(_rt_cholesky_ex(L, info), out)


def cholesky(A, *, upper=False, out=None):
    """L lower triangular with A = L L^T (upper: U with A = U^T U); only that triangle of A
    is read.  Raises when A is not positive-definite."""
    L, _ = ops.linalg_cholesky_ex(_tensor(A, "linalg.cholesky", "A"), upper=bool(upper), check_errors=True)
    return _out(L, out)


# ------------------------------------------------ torch.* functions, methods
@both(name="inverse")
def _inverse(input, *, out=None):
    return inv(input, out=out)


@both(name="det")
def _det(input):
    return det(input)


@both(name="logdet")
def _logdet(input):
    return logdet(input)


@both(name="slogdet")
def _slogdet(input, *, out=None):
    sign, lad = slogdet(input)
    return _out(_rt_slogdet(sign, lad), out)


@both(name="cholesky")
def _cholesky(input, upper=False, *, out=None):
    return cholesky(input, upper=upper, out=out)


@both(name="cholesky_solve")
def _cholesky_solve(input, input2, upper=False, *, out=None):
    """X with A X = input where A = L L^T (upper: U^T U) and input2 is L (U): two solves
    with the triangular factor, differentiable in both."""
    _check_tensor(input, "cholesky_solve", "input")
    _check_tensor(input2, "cholesky_solve", "input2")
    if input.dim() < 2 or input2.dim() < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {input.dim()} dimensions instead"
                           if input.dim() < 2 else
                           f"u should have at least 2 dimensions, but has {input2.dim()} dimensions instead")
    first, second = (input2.mT, input2) if upper else (input2, input2.mT)
    return _out(solve(second, solve(first, input)), out)
