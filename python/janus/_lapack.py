"""Decompositions and solvers over the LAPACK table ops (runtime/k_lapack.c:
linalg_inv, linalg_solve, linalg_det, linalg_slogdet, linalg_cholesky_ex,
linalg_solve_triangular, linalg_eigh, linalg_svd, linalg_qr).

The torch.linalg functions janus.linalg re-exports (inv, solve, det,
slogdet, cholesky, cholesky_ex, solve_triangular, eigh, eigvalsh, svd,
svdvals, qr) and the torch functions and Tensor methods (inverse, det,
logdet, slogdet, cholesky, cholesky_solve, svd, qr, triangular_solve).  The
table ops take batches of matrices with equal batch dims; torch's argument
rules live here: the solves' vector right-hand sides, batch broadcasting
and left=False, the order of the results, logdet from slogdet,
cholesky_solve as two solves, qr's mode names.  Each table op is one node
of autograd (its derivative is the table's, runtime/derivatives.c), of a
recording and of a replayed graph.  CPU only: a CUDA tensor gets the
dispatcher's unsupported-op error.
"""
import collections as _collections
import types as _types

from ._dtype import scalar_type_name as _tname
from ._functions import TensorBase, _check_tensor, both, ops, return_types

__all__ = ["inv", "solve", "det", "slogdet", "logdet", "cholesky", "cholesky_ex", "solve_triangular", "eigh",
           "eigvalsh", "svd", "svdvals", "qr", "matrix_rank", "pinv", "lstsq", "LinAlgError"]


class LinAlgError(RuntimeError):
    """torch.linalg.LinAlgError: the input is singular, not positive-definite, or the
    algorithm did not converge (a RuntimeError, as torch's)."""


_FAILURES = ("singular", "not positive-definite", "failed to converge")


def _raising(fn):
    """fn (ops.linalg_<name>) raising LinAlgError for the kernel's factorization failures (the
    C status is a plain runtime error)."""
    def call(*args, **kw):
        try:
            return fn(*args, **kw)
        except RuntimeError as e:
            if type(e) is RuntimeError and any(w in str(e) for w in _FAILURES):
                raise LinAlgError(str(e)) from None
            raise
    call.__name__ = fn.__name__
    return call


# made once here: a call stores nothing (a replay region proves its Python pure)
_lapack = _types.SimpleNamespace(**{n: _raising(getattr(ops, n)) for n in ops if n.startswith("linalg_")})


def _rtype(name, fields):
    """return_types.<name> (torch.return_types' named tuples), made once."""
    if not hasattr(return_types, name):
        setattr(return_types, name, _collections.namedtuple(name, fields, module=return_types.__name__))
    return getattr(return_types, name)


_rt_slogdet = _rtype("slogdet", ["sign", "logabsdet"])
_rt_linalg_slogdet = _rtype("linalg_slogdet", ["sign", "logabsdet"])
_rt_cholesky_ex = _rtype("linalg_cholesky_ex", ["L", "info"])
_rt_eigh = _rtype("linalg_eigh", ["eigenvalues", "eigenvectors"])
_rt_svd = _rtype("linalg_svd", ["U", "S", "Vh"])
_rt_torch_svd = _rtype("svd", ["U", "S", "V"])
_rt_qr = _rtype("linalg_qr", ["Q", "R"])
_rt_torch_qr = _rtype("qr", ["Q", "R"])
_rt_lstsq = _rtype("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])


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
    return _out(_lapack.linalg_inv(_tensor(A, "linalg.inv", "A")), out)


def det(A, *, out=None):
    """det(A) from the LU factorization: 0 for an exactly singular matrix.  Its
    gradient, det(A) A^-T, raises at an exactly singular A (torch's goes through an SVD)."""
    return _out(_lapack.linalg_det(_tensor(A, "linalg.det", "A")), out)


def slogdet(A, *, out=None):
    """(sign, log|det|): sign 0 and log|det| -inf for an exactly singular matrix."""
    lad, sign = _lapack.linalg_slogdet(_tensor(A, "linalg.slogdet", "A"))
    return _out(_rt_linalg_slogdet(sign, lad), out)


def _renamed(e, old, new):
    """e with its message's leading `old:` said as torch's `new:` (same type, no chaining)."""
    msg = str(e)
    return type(e)(new + msg[len(old):]) if msg.startswith(old + ":") else e


def logdet(A):
    """log(det(A)): nan where det < 0, -inf where det == 0 (log of the sign added to log|det|)."""
    try:
        lad, sign = _lapack.linalg_slogdet(_tensor(A, "logdet", "input"))
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
    A, B = _batched_pair(A, B)
    X = _lapack.linalg_solve(A, B)
    if vector:
        X = X.squeeze(-1)
    elif not left:
        X = X.mT
    return _out(X, out)


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """(L, info): info[...] is 0, or the order of the leading minor that is not
    positive-definite (then L is not a factor)."""
    try:
        L, info = _lapack.linalg_cholesky_ex(_tensor(A, "linalg.cholesky_ex", "A"), upper=bool(upper),
                                         check_errors=bool(check_errors))
    except (RuntimeError, NotImplementedError) as e:
        raise _renamed(e, "linalg.cholesky", "linalg.cholesky_ex") from None
    return _out(_rt_cholesky_ex(L, info), out)


def cholesky(A, *, upper=False, out=None):
    """L lower triangular with A = L L^T (upper: U with A = U^T U); only that triangle of A
    is read.  Raises when A is not positive-definite."""
    L, _ = _lapack.linalg_cholesky_ex(_tensor(A, "linalg.cholesky", "A"), upper=bool(upper), check_errors=True)
    return _out(L, out)


def _batched_pair(A, B):
    """A [..., n, n] and B [..., n, k] expanded to one broadcast batch shape."""
    batch = _batch_broadcast(tuple(B.shape[:-2]), tuple(A.shape[:-2]))  # torch names B first
    if tuple(A.shape[:-2]) != batch:
        A = A.expand(*batch, *A.shape[-2:])
    if tuple(B.shape[:-2]) != batch:
        B = B.expand(*batch, *B.shape[-2:])
    return A, B


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """X with A X = B (left=False: X A = B) for triangular A (its other triangle is not read;
    unitriangular: nor its diagonal, taken as ones).  No singularity check: a zero on the
    diagonal gives inf/nan, as torch's.  The dtypes promote, the batch dims broadcast."""
    _check_tensor(A, "linalg.solve_triangular", "A")
    _check_tensor(B, "linalg.solve_triangular", "B")
    for t, n in ((A, "A"), (B, "B")):
        if t.dim() < 2:
            raise RuntimeError(f"linalg.solve_triangular: The input tensor {n} must have at least 2 dimensions.")
    if A.dtype != B.dtype:  # (promote_types dispatches ops the first time it meets a pair)
        import janus  # promote_types is the package's own (janus/__init__.py), defined after this module
        dt = janus.promote_types(A.dtype, B.dtype)
        A, B = A.to(dt), B.to(dt)
    if not left:  # X A = B  <=>  A^T X^T = B^T, A^T triangular the other way
        A, B, upper = A.mT, B.mT, not upper
    A, B = _batched_pair(A, B)
    X = _lapack.linalg_solve_triangular(A, B, upper=bool(upper), unitriangular=bool(unitriangular))
    return _out(X if left else X.mT, out)


def _uplo(UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO == "U"


def eigh(A, UPLO="L", *, out=None):
    """(eigenvalues ascending, eigenvectors as columns) of symmetric A, reading its lower
    (UPLO='L') or upper triangle.  Eigenvectors are defined up to sign (LAPACK's choice);
    their gradient assumes distinct eigenvalues, as torch's."""
    L, V = _lapack.linalg_eigh(_tensor(A, "linalg.eigh", "A"), upper=_uplo(UPLO))
    return _out(_rt_eigh(L, V), out)


def eigvalsh(A, UPLO="L", *, out=None):
    return _out(_lapack.linalg_eigh(_tensor(A, "linalg.eigvalsh", "A"), upper=_uplo(UPLO))[0], out)


def svd(A, full_matrices=True, *, driver=None, out=None):
    """(U, S, Vh) with A = U diag(S) Vh, S descending (LAPACK's gesdd).  The gradient of U and
    Vh assumes distinct nonzero singular values, as torch's; with full_matrices it flows through
    their first min(m, n) columns (rows of Vh), as torch's."""
    S, U, Vh = _lapack.linalg_svd(_tensor(A, "linalg.svd", "A"), full_matrices=bool(full_matrices))
    return _out(_rt_svd(U, S, Vh), out)


def svdvals(A, *, driver=None, out=None):
    return _out(_lapack.linalg_svd(_tensor(A, "linalg.svdvals", "A"), full_matrices=False)[0], out)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, tol=None, out=None):
    """The count of singular values (|eigenvalues| when hermitian) above max(atol, rtol * the
    largest); rtol defaults to eps * max(m, n) unless atol > 0 is given (tol: the old spelling
    of atol with rtol 0), as torch's."""
    _check_tensor(A, "linalg.matrix_rank", "A")
    if tol is not None:
        atol, rtol = tol, 0.0
    if A.dim() >= 2 and A.shape[-1] != A.shape[-2] and hermitian:
        raise RuntimeError(f"linalg.matrix_rank: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    import janus  # finfo, maximum, as_tensor: the package's
    S = eigvalsh(A).abs() if hermitian else svdvals(A)
    if rtol is None:
        given = atol is not None and (bool((atol > 0).all()) if isinstance(atol, TensorBase) else atol > 0)
        rtol = 0.0 if given else janus.finfo(A.dtype).eps * max(A.shape[-2:])
    if S.shape[-1] == 0:
        return _out((S > 0).sum(-1), out)
    cut = S.amax(-1) * rtol  # batch-shaped, as atol and rtol tensors are
    if atol is not None:
        cut = janus.maximum(cut, janus.as_tensor(atol, dtype=S.dtype))
    return _out((S > cut.unsqueeze(-1)).sum(-1), out)


def _number(x, fn, name):
    """A tolerance as a Python number (a one-element tensor is read on the host)."""
    if isinstance(x, TensorBase):
        if x.numel() != 1:
            raise NotImplementedError(f"{fn}: a tensor {name} of several values is not supported by janus; "
                                      f"pass a number")
        return float(x.item())
    return float(x)


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """A^+ from the SVD, the singular values at most max(atol, rtol * the largest) taken as
    zero; rtol defaults to eps * max(m, n) unless atol > 0 is given, as torch's.  hermitian
    is accepted (the SVD gives the same A^+).  The gradient is torch's pinv_backward."""
    _check_tensor(A, "linalg.pinv", "A")
    if A.dim() >= 2 and hermitian and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.pinv: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")
    a = 0.0 if atol is None else _number(atol, "linalg.pinv", "atol")
    if rtol is None:
        import janus  # finfo is the package's
        rtol = 0.0 if a > 0 else janus.finfo(A.dtype).eps * max(A.shape[-2:]) if A.dim() >= 2 and \
            A.dtype.is_floating_point else 0.0
    return _out(_lapack.linalg_pinv(A, atol=a, rtol=_number(rtol, "linalg.pinv", "rtol")), out)


def lstsq(A, B, rcond=None, *, driver=None):
    """(solution, residuals, rank, singular_values) as torch's default CPU driver ('gelsy')
    returns them: the minimum-norm least-squares solution A^+ B (its gradient torch's, through
    pinv), the rank, residuals and singular_values empty.  rcond: the relative cutoff (default
    eps * max(m, n))."""
    _check_tensor(A, "linalg.lstsq", "A")
    _check_tensor(B, "linalg.lstsq", "B")
    if driver not in (None, "gelsy", "gelsd", "gelss", "gels"):
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    if A.dim() < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if B.dtype != A.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got input's "
                           f"dtype {_tname(A.dtype)} and other's dtype {_tname(B.dtype)}")
    vector = B.dim() == A.dim() - 1
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.dim() < 2 or Bm.shape[-2] != A.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    X = pinv(A, rtol=rcond) @ Bm  # matmul broadcasts the batch dims
    rank = matrix_rank(A.detach(), rtol=rcond)
    empty = A.new_empty((0,))
    return _rt_lstsq(X.squeeze(-1) if vector else X, empty, rank, empty)


_QR_MODES = {"reduced": 0, "complete": 1, "r": 2}


def qr(A, mode="reduced", *, out=None):
    """(Q, R) by Householder reflections (geqrf, orgqr); mode 'r' leaves Q empty.  No
    gradient for mode 'r' nor for 'complete' with more rows than columns, as torch's."""
    if mode not in _QR_MODES:
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           f"or 'complete'")
    Q, R = _lapack.linalg_qr(_tensor(A, "linalg.qr", "A"), mode=_QR_MODES[mode])
    return _out(_rt_qr(Q, R), out)


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


@both(name="pinverse")
def _pinverse(input, rcond=1e-15):
    return pinv(input, rtol=rcond)


@both(name="svd")
def _torch_svd(input, some=True, compute_uv=True, *, out=None):
    """torch.svd: (U, S, V) with V = Vh^T; compute_uv=False: U and V zero-filled, as torch's."""
    S, U, Vh = _lapack.linalg_svd(_tensor(input, "svd", "input"), full_matrices=not some)
    V = Vh.mT
    if not compute_uv:
        U, V = U.detach() * 0, V.detach() * 0
    return _out(_rt_torch_svd(U, S, V), out)


@both(name="qr")
def _torch_qr(input, some=True, *, out=None):
    return _out(_rt_torch_qr(*qr(input, "reduced" if some else "complete")), out)


@both(name="triangular_solve")
def _triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """torch.triangular_solve (deprecated in torch): (solution, cloned_coefficient)."""
    a = A.mT if transpose else A
    X = solve_triangular(a, b, upper=bool(upper) != bool(transpose), unitriangular=unitriangular)
    return _out(_rt_triangular_solve(X, A.clone()), out)


_rt_triangular_solve = _rtype("triangular_solve", ["solution", "cloned_coefficient"])
