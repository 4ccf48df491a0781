"""The LAPACK-backed linear algebra (janus/_lapack.py over runtime/k_lapack.c):
torch.linalg.inv/solve/det/slogdet/cholesky/cholesky_ex/solve_triangular/
eigh/eigvalsh/svd/svdvals/qr/pinv/lstsq/matrix_rank and the 'nuc'/2/-2
matrix norms, torch.inverse/det/logdet/slogdet/cholesky/cholesky_solve/svd/
qr/triangular_solve/pinverse and the Tensor methods.  Values
against numpy.linalg (and PyTorch when it is installed), reconstruction
identities, central-difference gradients in float64 through the public API,
batched shapes and broadcasting, torch's errors, the CUDA refusal, and a
training step using inv/solve/cholesky that records, optimizes and replays
bit for bit, its forward a replaced module region (with eigvalsh, svdvals,
qr, solve_triangular and pinv in it too)."""
import re
import sys

import numpy as np
import pytest

import janus
from janus import _C

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
R = np.random.default_rng(11)
F64 = janus.float64


def T(a, dtype=None):
    return janus.tensor(np.asarray(a), dtype=dtype)


def well(*shape):
    n = shape[-1]
    return R.uniform(-1, 1, size=shape) + n * np.eye(n)


def spd(*shape):
    a = R.uniform(-1, 1, size=shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])
NOT_PD = np.array([[1.0, 2.0], [2.0, 1.0]])


# ------------------------------------------------------------------- values
@pytest.mark.parametrize("dtype,tol", [(janus.float32, 2e-5), (janus.float64, 1e-12)])
def test_values_match_numpy(dtype, tol):
    a, s, b = well(2, 3, 4, 4), spd(2, 4, 4), R.uniform(-1, 1, size=(2, 3, 4, 2))
    A, S, B = T(a, dtype), T(s, dtype), T(b, dtype)
    a32 = np.asarray(A.tolist())  # the values as janus holds them
    s32, b32 = np.asarray(S.tolist()), np.asarray(B.tolist())
    close = lambda got, want: np.testing.assert_allclose(np.asarray(got.tolist()), want, rtol=tol * 10, atol=tol)
    close(janus.linalg.inv(A), np.linalg.inv(a32))
    close(A.inverse(), np.linalg.inv(a32))
    close(janus.inverse(A), np.linalg.inv(a32))
    close(janus.linalg.det(A), np.linalg.det(a32))
    close(A.det(), np.linalg.det(a32))
    sign, lad = np.linalg.slogdet(a32)
    for r in (janus.linalg.slogdet(A), janus.slogdet(A), A.slogdet()):
        close(r.sign, sign)
        close(r.logabsdet, lad)
    close(janus.logdet(S), np.linalg.slogdet(s32)[1])
    close(janus.linalg.solve(A, B), np.linalg.solve(a32, b32))
    close(janus.linalg.cholesky(S), np.linalg.cholesky(s32))
    close(janus.cholesky(S, upper=True), np.swapaxes(np.linalg.cholesky(s32), -1, -2))
    close(S.cholesky(), np.linalg.cholesky(s32))
    L = janus.linalg.cholesky(S)
    close(janus.cholesky_solve(B[:, 0], L), np.linalg.solve(s32, b32[:, 0]))
    close(B[:, 0].cholesky_solve(L.mT, upper=True), np.linalg.solve(s32, b32[:, 0]))
    assert janus.linalg.inv(A).dtype == dtype and janus.linalg.det(A).shape == (2, 3)
    r = janus.linalg.cholesky_ex(S)
    assert r.info.dtype == janus.int32 and r.info.tolist() == [0, 0]


def test_reconstruction_identities():
    a, s = well(3, 5, 5), spd(3, 5, 5)
    A, S = T(a), T(s)
    eye = np.broadcast_to(np.eye(5), (3, 5, 5))
    np.testing.assert_allclose((A @ janus.linalg.inv(A)).numpy(), eye, atol=1e-12)
    np.testing.assert_allclose((janus.linalg.inv(A) @ A).numpy(), eye, atol=1e-12)
    L = janus.linalg.cholesky(S)
    np.testing.assert_allclose((L @ L.mT).numpy(), s, rtol=1e-12, atol=1e-12)
    assert np.all(np.triu(L.numpy(), 1) == 0)
    U = janus.linalg.cholesky(S, upper=True)
    np.testing.assert_allclose((U.mT @ U).numpy(), s, rtol=1e-12, atol=1e-12)
    assert np.all(np.tril(U.numpy(), -1) == 0)
    b = R.uniform(-1, 1, size=(3, 5, 2))
    np.testing.assert_allclose((A @ janus.linalg.solve(A, T(b))).numpy(), b, atol=1e-12)
    # det is multiplicative, slogdet agrees with det
    d = janus.linalg.det(A @ A).numpy()
    np.testing.assert_allclose(d, janus.linalg.det(A).numpy() ** 2, rtol=1e-10)
    sl = janus.linalg.slogdet(A)
    np.testing.assert_allclose((sl.sign * sl.logabsdet.exp()).numpy(), janus.linalg.det(A).numpy(), rtol=1e-12)


def test_solve_shapes_as_torch():
    a = well(2, 1, 3, 3)
    A = T(a)
    # a batch of vectors: B is A's shape without the last dim
    bv = R.uniform(-1, 1, size=(2, 1, 3))
    x = janus.linalg.solve(A, T(bv))
    assert x.shape == (2, 1, 3)
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(a, bv[..., None])[..., 0], atol=1e-12)
    # a 1-D B broadcasts over A's batch
    b1 = R.uniform(-1, 1, size=3)
    x = janus.linalg.solve(A, T(b1))
    assert x.shape == (2, 1, 3)
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(a, np.broadcast_to(b1[:, None], (2, 1, 3, 1)))[..., 0],
                               atol=1e-12)
    # matrices broadcast batch dims both ways: (2, 1) with (4,) -> (2, 4)
    bm = R.uniform(-1, 1, size=(4, 3, 2))
    x = janus.linalg.solve(A, T(bm))
    assert x.shape == (2, 4, 3, 2)
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(np.broadcast_to(a, (2, 4, 3, 3)), bm), atol=1e-12)
    # left=False: X A = B
    bl = R.uniform(-1, 1, size=(5, 3))
    x = janus.linalg.solve(T(a[0, 0]), T(bl), left=False)
    np.testing.assert_allclose(x.numpy() @ a[0, 0], bl, atol=1e-12)
    # out=
    out = janus.empty(3, 2, dtype=F64)
    r = janus.linalg.solve(T(a[0, 0]), T(bm[0]), out=out)
    assert r is out
    np.testing.assert_allclose(out.numpy(), np.linalg.solve(a[0, 0], bm[0]), atol=1e-12)


def test_singular_and_special_values():
    assert janus.linalg.det(T(SINGULAR)).item() == 0
    s = janus.linalg.slogdet(T(SINGULAR))
    assert s.sign.item() == 0 and s.logabsdet.item() == -np.inf
    assert janus.logdet(T(SINGULAR)).item() == -np.inf
    assert np.isnan(janus.logdet(T([[0.0, 1.0], [1.0, 0.0]])).item())  # det -1
    assert janus.linalg.det(T([[0.0, 1.0], [1.0, 0.0]])).item() == -1
    assert janus.linalg.det(janus.zeros(0, 0)).item() == 1
    assert janus.linalg.inv(janus.zeros(2, 0, 0)).shape == (2, 0, 0)
    r = janus.linalg.cholesky_ex(T(np.stack([spd(2, 2), NOT_PD])))
    assert r.info.tolist() == [0, 2]


@needs_torch
def test_values_equal_torch():
    a, s = well(2, 4, 4), spd(3, 4, 4)
    b, bv = R.uniform(-1, 1, size=(2, 4, 3)), R.uniform(-1, 1, size=4)
    ta, ts = torch.tensor(a), torch.tensor(s)
    pairs = [
        (janus.linalg.inv(T(a)), torch.linalg.inv(ta)),
        (janus.linalg.det(T(a)), torch.linalg.det(ta)),
        (janus.linalg.slogdet(T(a)).logabsdet, torch.linalg.slogdet(ta).logabsdet),
        (janus.logdet(T(s)), torch.logdet(ts)),
        (janus.linalg.solve(T(a), T(b)), torch.linalg.solve(ta, torch.tensor(b))),
        (janus.linalg.solve(T(a), T(bv)), torch.linalg.solve(ta, torch.tensor(bv))),
        (janus.linalg.solve(T(a), T(b).mT, left=False), torch.linalg.solve(ta, torch.tensor(b).mT, left=False)),
        (janus.linalg.cholesky(T(s)), torch.linalg.cholesky(ts)),
        (janus.linalg.cholesky(T(s), upper=True), torch.linalg.cholesky(ts, upper=True)),
        (janus.cholesky_solve(T(b[0]), janus.linalg.cholesky(T(s[0]))),
         torch.cholesky_solve(torch.tensor(b[0]), torch.linalg.cholesky(ts[0]))),
        (janus.linalg.det(T(SINGULAR)), torch.linalg.det(torch.tensor(SINGULAR))),
        (janus.linalg.cholesky_ex(T(NOT_PD)).info, torch.linalg.cholesky_ex(torch.tensor(NOT_PD)).info),
    ]
    for got, want in pairs:
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(np.asarray(got.tolist()), want.numpy(), rtol=1e-10, atol=1e-12)
    # gradients
    x = T(a).requires_grad_()
    tx = ta.clone().requires_grad_()
    (janus.linalg.inv(x).sum() + janus.linalg.det(x).sum()).backward()
    (torch.linalg.inv(tx).sum() + torch.linalg.det(tx).sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    y = T(s).requires_grad_()
    ty = ts.clone().requires_grad_()
    janus.linalg.cholesky(y).pow(2).sum().backward()
    torch.linalg.cholesky(ty).pow(2).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_decompositions_match_numpy_and_reconstruct():
    s, a = spd(2, 4, 4), R.uniform(-1, 1, size=(2, 5, 3))
    L, V = janus.linalg.eigh(T(s))
    np.testing.assert_allclose(L.numpy(), np.linalg.eigvalsh(s), rtol=1e-12)
    np.testing.assert_allclose((V @ janus.diag_embed(L) @ V.mT).numpy(), s, atol=1e-12)
    np.testing.assert_allclose((V.mT @ V).numpy(), np.broadcast_to(np.eye(4), (2, 4, 4)), atol=1e-12)
    np.testing.assert_allclose(janus.linalg.eigvalsh(T(s), UPLO="U").numpy(), np.linalg.eigvalsh(s), rtol=1e-12)
    for full in (False, True):
        U, S, Vh = janus.linalg.svd(T(a), full_matrices=full)
        assert U.shape == ((2, 5, 5) if full else (2, 5, 3)) and Vh.shape == (2, 3, 3)
        np.testing.assert_allclose(S.numpy(), np.linalg.svd(a, compute_uv=False), rtol=1e-12)
        np.testing.assert_allclose((U[..., :3] * S.unsqueeze(-2) @ Vh).numpy(), a, atol=1e-12)
        np.testing.assert_allclose((U.mT @ U).numpy(), np.broadcast_to(np.eye(U.shape[-1]), U.mT.shape[:-1] +
                                                                       (U.shape[-1],)), atol=1e-12)
    np.testing.assert_allclose(janus.linalg.svdvals(T(a).mT).numpy(), np.linalg.svd(a, compute_uv=False), rtol=1e-12)
    for mode, qs, rs in (("reduced", (2, 5, 3), (2, 3, 3)), ("complete", (2, 5, 5), (2, 5, 3)), ("r", (0,), (2, 3, 3))):
        Q, Rr = janus.linalg.qr(T(a), mode=mode)
        assert Q.shape == qs and Rr.shape == rs
        assert np.all(np.tril(Rr.numpy(), -1) == 0)
        np.testing.assert_allclose(np.abs(Rr.numpy()), np.abs(np.linalg.qr(a, mode="r" if mode == "r" else mode)[-1]
                                                              if mode != "r" else np.linalg.qr(a, mode="r")),
                                   atol=1e-12)
        if mode != "r":
            np.testing.assert_allclose((Q @ Rr).numpy(), a, atol=1e-12)
    U, S, V = janus.svd(T(a[0]))
    np.testing.assert_allclose((U * S @ V.mT).numpy(), a[0], atol=1e-12)
    Q, Rr = T(a[0]).qr()
    np.testing.assert_allclose((Q @ Rr).numpy(), a[0], atol=1e-12)
    # triangular solves
    t, b = np.tril(well(2, 4, 4)), R.uniform(-1, 1, size=(4, 2))
    X = janus.linalg.solve_triangular(T(t), T(b), upper=False)  # b broadcast over t's batch
    np.testing.assert_allclose((T(t) @ X).numpy(), np.broadcast_to(b, (2, 4, 2)), atol=1e-12)
    X = janus.linalg.solve_triangular(T(t.swapaxes(-1, -2)), T(b.T), upper=True, left=False)
    np.testing.assert_allclose((X @ T(t.swapaxes(-1, -2))).numpy(), np.broadcast_to(b.T, (2, 2, 4)), atol=1e-12)
    X = janus.linalg.solve_triangular(T(t[0]), T(b), upper=False, unitriangular=True)
    np.testing.assert_allclose(X.numpy(), np.linalg.solve(np.tril(t[0], -1) + np.eye(4), b), atol=1e-12)
    r = janus.triangular_solve(T(b), T(t[0].T), upper=True)
    np.testing.assert_allclose(r.solution.numpy(), np.linalg.solve(t[0].T, b), atol=1e-12)


def test_matrix_norms_from_singular_values():
    a = R.uniform(-1, 1, size=(2, 3, 4))
    for ord_, npord in (("nuc", "nuc"), (2, 2), (-2, -2)):
        np.testing.assert_allclose(janus.linalg.matrix_norm(T(a), ord_).numpy(), np.linalg.norm(a, npord, (1, 2)),
                                   rtol=1e-12)
        np.testing.assert_allclose(janus.linalg.norm(T(a), ord_, (0, 2)).numpy(), np.linalg.norm(a, npord, (0, 2)),
                                   rtol=1e-12)
    r = janus.linalg.matrix_norm(T(a), 2, (2, 0), keepdim=True)
    assert r.shape == (1, 3, 1)
    np.testing.assert_allclose(r.numpy()[0, :, 0], np.linalg.norm(a, 2, (2, 0)), rtol=1e-12)


def test_matrix_rank_as_numpy():
    a = R.uniform(-1, 1, size=(3, 5, 2)) @ R.uniform(-1, 1, size=(3, 2, 4))  # rank 2
    full = R.uniform(-1, 1, size=(4, 4))
    assert janus.linalg.matrix_rank(T(a)).tolist() == [2, 2, 2]
    assert janus.linalg.matrix_rank(T(full)).item() == np.linalg.matrix_rank(full) == 4
    assert janus.linalg.matrix_rank(T(full), atol=1e9).item() == 0
    assert janus.linalg.matrix_rank(T(spd(4, 4)), hermitian=True).item() == 4
    assert janus.linalg.matrix_rank(janus.zeros(3, 0)).item() == 0
    assert janus.linalg.matrix_rank(T(a), atol=T([0.0, 1e9, 0.0])).tolist() == [2, 0, 2]  # per matrix
    r = janus.linalg.matrix_rank(T(a), tol=1e-8)
    assert r.dtype == janus.int64 and r.tolist() == [2, 2, 2]
    if torch is not None:
        for kw in ({}, {"rtol": 0.5}, {"atol": 0.1}, {"hermitian": True}):
            x = full @ full.T if kw.get("hermitian") else full
            assert janus.linalg.matrix_rank(T(x), **kw).item() == torch.linalg.matrix_rank(torch.tensor(x), **kw).item()


def test_pinv_and_lstsq_as_numpy():
    a, b = R.uniform(-1, 1, size=(2, 5, 3)), R.uniform(-1, 1, size=(2, 5, 2))
    np.testing.assert_allclose(janus.linalg.pinv(T(a)).numpy(), np.linalg.pinv(a), atol=1e-12)
    np.testing.assert_allclose(janus.pinverse(T(a).mT).numpy(), np.linalg.pinv(a.swapaxes(-1, -2)), atol=1e-12)
    low = np.array([[1.0, 2.0], [2.0, 4.0], [0.0, 0.0]])  # rank 1: the zero singular value is cut
    np.testing.assert_allclose(janus.linalg.pinv(T(low)).numpy(), np.linalg.pinv(low), atol=1e-12)
    p = janus.linalg.pinv(T(a))
    np.testing.assert_allclose((T(a) @ p @ T(a)).numpy(), a, atol=1e-12)  # A A^+ A = A
    r = janus.linalg.lstsq(T(a), T(b))
    want = np.stack([np.linalg.lstsq(a[i], b[i], rcond=None)[0] for i in range(2)])
    np.testing.assert_allclose(r.solution.numpy(), want, atol=1e-12)
    assert r.rank.tolist() == [3, 3] and r.residuals.shape == (0,) and r.singular_values.shape == (0,)
    v = janus.linalg.lstsq(T(a[0]), T(b[0, :, 0])).solution  # a vector right-hand side
    np.testing.assert_allclose(v.numpy(), np.linalg.lstsq(a[0], b[0, :, 0], rcond=None)[0], atol=1e-12)
    with pytest.raises(RuntimeError, match=r"input.size\(-2\) should match other.size\(-2\)"):
        janus.linalg.lstsq(T(a[0]), T(b[0, :4]))
    if torch is not None:
        t = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b))
        np.testing.assert_allclose(r.solution.numpy(), t.solution.numpy(), atol=1e-12)
        assert r.rank.tolist() == t.rank.tolist()
        np.testing.assert_allclose(janus.linalg.pinv(T(low), atol=0.5).numpy(),
                                   torch.linalg.pinv(torch.tensor(low), atol=0.5).numpy(), atol=1e-12)


@needs_torch
def test_decompositions_equal_torch():
    s, a = spd(2, 4, 4), R.uniform(-1, 1, size=(2, 5, 3))
    ts, ta = torch.tensor(s), torch.tensor(a)
    np.testing.assert_allclose(janus.linalg.eigvalsh(T(s)).numpy(), torch.linalg.eigvalsh(ts).numpy(), rtol=1e-12)
    np.testing.assert_allclose(janus.linalg.svdvals(T(a)).numpy(), torch.linalg.svdvals(ta).numpy(), rtol=1e-12)
    np.testing.assert_allclose(janus.linalg.matrix_norm(T(a), "nuc").numpy(),
                               torch.linalg.matrix_norm(ta, "nuc").numpy(), rtol=1e-12)
    np.testing.assert_allclose(janus.linalg.qr(T(a)).R.abs().numpy(), torch.linalg.qr(ta).R.abs().numpy(),
                               atol=1e-12)
    t = np.triu(well(3, 3))
    np.testing.assert_allclose(janus.linalg.solve_triangular(T(t), T(a[0].T), upper=True).numpy(),
                               torch.linalg.solve_triangular(torch.tensor(t), ta[0].T, upper=True).numpy(), atol=1e-12)
    # gradients of sign-invariant functions of the vectors
    x, tx = T(s).requires_grad_(), ts.clone().requires_grad_()
    c = R.uniform(-1, 1, size=4)
    for lib, arg in ((janus, x), (torch, tx)):
        L, V = lib.linalg.eigh(arg)
        ((V * lib.tensor(c)) @ V.mT).pow(2).sum().add(L.sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-8, atol=1e-10)
    y, ty = T(a).requires_grad_(), ta.clone().requires_grad_()
    for lib, arg in ((janus, y), (torch, ty)):
        U, S, Vh = lib.linalg.svd(arg, full_matrices=False)
        Q, Rr = lib.linalg.qr(arg)
        Q2, R2 = lib.linalg.qr(arg.mT)  # wide
        ((U * lib.tensor(c[:3])) @ Vh).sum().add(S.pow(3).sum()).add((Q @ Q.mT).pow(2).sum()).add(
            Rr.pow(2).sum()).add((Q2 * 2).sum()).add(R2.pow(2).sum()).add(lib.linalg.pinv(arg).pow(2).sum()).add(
            lib.linalg.lstsq(arg, lib.tensor(a[..., :1])).solution.sum()).backward()
    np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy(), rtol=1e-8, atol=1e-10)


# ---------------------------------------------------------------- gradients
def _gradcheck(fn, arrays, eps=1e-6):
    """fn(*tensors) -> tensor; the gradient of sum(fn * v) against central differences."""
    leaves = [T(a).requires_grad_() for a in arrays]
    out = fn(*leaves)
    v = R.uniform(-1, 1, size=tuple(out.shape))
    grads = janus.autograd.grad([(out * T(v)).sum()], leaves)
    for i, (g, a) in enumerate(zip(grads, arrays)):
        num = np.zeros_like(a)
        for k in range(a.size):
            plus, minus = [x.copy() for x in arrays], [x.copy() for x in arrays]
            plus[i].reshape(-1)[k] += eps
            minus[i].reshape(-1)[k] -= eps
            f = lambda xs: (fn(*[T(x) for x in xs]).numpy() * v).sum()
            num.reshape(-1)[k] = (f(plus) - f(minus)) / (2 * eps)
        np.testing.assert_allclose(g.numpy(), num, rtol=1e-5, atol=1e-7, err_msg=f"input {i}")


sym = lambda x: (x + x.mT) * 0.5  # cholesky reads one triangle: differentiate over symmetric inputs


@pytest.mark.parametrize("name,fn,arrays", [
    ("inv", lambda a: janus.linalg.inv(a), [well(2, 3, 3)]),
    ("inverse", lambda a: a.inverse(), [well(3, 3)]),
    ("solve", lambda a, b: janus.linalg.solve(a, b), [well(2, 3, 3), R.uniform(-1, 1, size=(2, 3, 2))]),
    ("solve_vector_broadcast", lambda a, b: janus.linalg.solve(a, b), [well(2, 3, 3), R.uniform(-1, 1, size=3)]),
    ("solve_left_false", lambda a, b: janus.linalg.solve(a, b, left=False),
     [well(3, 3), R.uniform(-1, 1, size=(2, 3))]),
    ("det", lambda a: janus.linalg.det(a), [well(2, 3, 3)]),
    ("det_negative", lambda a: a.det(), [well(3, 3) - 6 * np.eye(3)]),
    ("slogdet", lambda a: janus.linalg.slogdet(a).logabsdet, [well(2, 3, 3) - 6 * np.eye(3)]),
    ("logdet", lambda a: janus.logdet(a), [spd(3, 3)]),
    ("cholesky", lambda a: janus.linalg.cholesky(sym(a)), [spd(2, 3, 3)]),
    ("cholesky_upper", lambda a: janus.linalg.cholesky(sym(a), upper=True), [spd(3, 3)]),
    ("cholesky_solve", lambda b, a: janus.cholesky_solve(b, janus.linalg.cholesky(sym(a))),
     [R.uniform(-1, 1, size=(3, 2)), spd(3, 3)]),
    ("solve_triangular", lambda a, b: janus.linalg.solve_triangular(a, b, upper=True),
     [well(2, 3, 3), R.uniform(-1, 1, size=(3, 2))]),
    ("solve_triangular_left_false_unit", lambda a, b: janus.linalg.solve_triangular(a, b, upper=False, left=False,
                                                                                     unitriangular=True),
     [well(3, 3), R.uniform(-1, 1, size=(2, 3))]),
    ("eigvalsh", lambda a: janus.linalg.eigvalsh(sym(a)), [spd(2, 4, 4)]),
    # eigenvectors and singular vectors through sign-invariant products (V C V^T, U C Vh)
    ("eigh_vectors", lambda a: (lambda r: (r.eigenvectors * T([1.0, -2.0, 0.5, 3.0])) @ r.eigenvectors.mT)(
        janus.linalg.eigh(sym(a), UPLO="U")), [spd(4, 4)]),
    ("svdvals", lambda a: janus.linalg.svdvals(a), [R.uniform(-1, 1, size=(2, 3, 4))]),
    ("svd_tall", lambda a: (lambda r: (r.U * T([1.0, -2.0, 0.5])) @ r.Vh + r.S.sum())(
        janus.linalg.svd(a, full_matrices=False)), [R.uniform(-1, 1, size=(5, 3))]),
    ("svd_wide_full", lambda a: (lambda r: (r.U * T([1.0, -2.0])) @ r.Vh[:2])(janus.linalg.svd(a)),
     [R.uniform(-1, 1, size=(2, 4))]),
    ("matrix_norms", lambda a: janus.linalg.matrix_norm(a, "nuc") + janus.linalg.matrix_norm(a, 2)
     - janus.linalg.matrix_norm(a, -2), [R.uniform(-1, 1, size=(2, 3, 3))]),
    ("qr", lambda a: (lambda r: r.Q * 2 + r.R.sum(-2, keepdim=True))(janus.linalg.qr(a)),
     [R.uniform(-1, 1, size=(2, 4, 3))]),
    ("qr_complete_square", lambda a: (lambda r: r.Q @ r.R.pow(2))(janus.linalg.qr(a, mode="complete")),
     [well(3, 3)]),
    ("pinv_tall", lambda a: janus.linalg.pinv(a), [R.uniform(-1, 1, size=(2, 4, 3))]),
    ("pinv_wide", lambda a: janus.pinverse(a), [R.uniform(-1, 1, size=(2, 4))]),
    ("pinv_orthogonal", lambda a: janus.linalg.pinv(a), [np.linalg.qr(R.uniform(-1, 1, size=(3, 3)))[0]]),
    ("lstsq", lambda a, b: janus.linalg.lstsq(a, b).solution, [R.uniform(-1, 1, size=(5, 3)),
                                                               R.uniform(-1, 1, size=(5, 2))]),
    ("qr_wide", lambda a: (lambda r: r.Q @ r.R * 2)(janus.linalg.qr(a)), [R.uniform(-1, 1, size=(2, 3, 5))]),
    ("qr_wide_q_only", lambda a: janus.linalg.qr(a).Q, [R.uniform(-1, 1, size=(3, 4))]),
])
def test_gradients_match_finite_differences(name, fn, arrays):
    _gradcheck(fn, arrays)


# ------------------------------------------------------------------- errors
def test_errors_as_torch():
    RE, NI = RuntimeError, NotImplementedError
    cases = [
        (lambda: janus.linalg.inv(janus.ones(3, 4)), RE,
         "linalg.inv: A must be batches of square matrices, but they are 3 by 4 matrices"),
        (lambda: janus.linalg.slogdet(janus.ones(2, 3)), RE,
         "linalg.slogdet: A must be batches of square matrices, but they are 2 by 3 matrices"),
        (lambda: janus.logdet(janus.ones(2, 3)), RE, "logdet: A must be batches of square matrices, but they are "
         "2 by 3 matrices"),
        (lambda: janus.linalg.inv(T(SINGULAR)), RE, "linalg.inv: The diagonal element 2 is zero, the inversion "
         "could not be completed because the input matrix is singular."),
        (lambda: janus.linalg.inv(T(np.stack([np.eye(2), SINGULAR]))), RE, "linalg.inv: (Batch element 1): The "
         "diagonal element 2 is zero, the inversion could not be completed because the input matrix is singular."),
        (lambda: janus.linalg.cholesky(T(NOT_PD)), RE, "linalg.cholesky: The factorization could not be completed "
         "because the input is not positive-definite (the leading minor of order 2 is not positive-definite)."),
        (lambda: janus.linalg.cholesky(T(np.stack([np.eye(2), NOT_PD]))), RE, "linalg.cholesky: (Batch element 1): "
         "The factorization could not be completed because the input is not positive-definite (the leading minor "
         "of order 2 is not positive-definite)."),
        (lambda: janus.linalg.cholesky_ex(T(NOT_PD), check_errors=True), RE, "linalg.cholesky_ex: The "
         "factorization could not be completed because the input is not positive-definite (the leading minor of "
         "order 2 is not positive-definite)."),
        (lambda: janus.linalg.solve(T(SINGULAR), janus.ones(2, dtype=F64)), RE,
         "torch.linalg.solve: The solver failed because the input matrix is singular."),
        (lambda: janus.linalg.solve(T(np.stack([np.eye(2), SINGULAR])), janus.ones(2, 2, dtype=F64)), RE,
         "torch.linalg.solve: (Batch element 1): The solver failed because the input matrix is singular."),
        (lambda: janus.linalg.inv(janus.ones(3)), RE, "linalg.inv: The input tensor A must have at least 2 "
         "dimensions."),
        (lambda: janus.linalg.solve(janus.ones(3), janus.ones(3)), RE, "linalg.solve: The input tensor A must have "
         "at least 2 dimensions."),
        (lambda: janus.linalg.det(janus.ones(2, 2, dtype=janus.int64)), NI,
         "linalg.det: Expected a floating point or complex tensor as input. Got Long"),
        (lambda: janus.linalg.inv(janus.ones(2, 2, dtype=janus.float16)), NI,
         "linalg.inv: Low precision dtypes not supported. Got Half"),
        (lambda: janus.linalg.solve(janus.eye(3), janus.ones(4, 2)), RE,
         "linalg.solve: Incompatible shapes of A and B for the equation AX = B (3x3 and 4x2)"),
        (lambda: janus.linalg.solve(janus.eye(3), janus.ones(5)), RE,
         "linalg.solve: Incompatible shapes of A and B for the equation AX = B (3x3 and 5x1)"),
        (lambda: janus.linalg.solve(janus.ones(2, 3, 3), janus.ones(3, 3, 1)), RE,
         "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0"),
        (lambda: janus.linalg.solve(janus.eye(3, dtype=F64), janus.ones(3, 2)), RE,
         "linalg.solve: Expected A and B to have the same dtype, but found A of type Double and B of type Float "
         "instead"),
        (lambda: janus.cholesky_solve(janus.ones(3), janus.eye(3)), RE,
         "b should have at least 2 dimensions, but has 1 dimensions instead"),
        (lambda: janus.linalg.svd(janus.ones(3)), RE,
         "linalg.svd: The input tensor A must have at least 2 dimensions."),
        (lambda: janus.linalg.qr(janus.ones(3)), RE, "linalg.qr: The input tensor A must have at least 2 dimensions."),
        (lambda: janus.linalg.qr(janus.ones(3, 3), mode="bad"), RE, "qr received unrecognized mode 'bad' but "
         "expected one of 'reduced' (default), 'r', or 'complete'"),
        (lambda: janus.linalg.eigh(janus.ones(4, 3)), RE, "linalg.eigh: A must be batches of square matrices, but "
         "they are 4 by 3 matrices"),
        (lambda: janus.linalg.eigh(janus.ones(3, 3), UPLO="X"), RE, "Expected UPLO argument to be 'L' or 'U', but "
         "got X"),
        (lambda: janus.linalg.solve_triangular(janus.eye(3), janus.ones(4, 2), upper=True), RE,
         "linalg.solve_triangular: Incompatible shapes of A and B for the equation AX = B (3x3 and 4x2)"),
        (lambda: janus.linalg.solve_triangular(janus.eye(3), janus.ones(3), upper=True), RE,
         "linalg.solve_triangular: The input tensor B must have at least 2 dimensions."),
        (lambda: janus.linalg.svd(T([[np.nan, 1.0], [1.0, 1.0]])), RE, "linalg.svd: The algorithm failed to "
         "converge because the input matrix contained non-finite values."),
    ]
    for call, kind, msg in cases:
        with pytest.raises(kind) as e:
            call()
        assert str(e.value) == msg
        # the factorization failures are LinAlgError (a RuntimeError), as torch's
        linalg_error = any(w in msg for w in ("singular.", "not positive-definite).", "failed to converge"))
        assert isinstance(e.value, janus.linalg.LinAlgError) == linalg_error, msg
        if torch is not None:  # torch raises the same
            with pytest.raises(kind) as te:
                _as_torch(call)
            assert str(te.value) == msg
            assert isinstance(te.value, torch.linalg.LinAlgError) == linalg_error, msg


def _as_torch(call):
    """Run a janus call from test_errors_as_torch with torch in janus's place."""
    g = dict(call.__globals__, janus=torch, T=lambda a, dtype=None: torch.tensor(np.asarray(a), dtype=dtype),
             F64=torch.float64)
    return type(call)(call.__code__, g)()


def test_cpu_autocast_runs_lapack_in_float32_as_torch():
    x = (janus.randn(3, 3) + 3 * janus.eye(3)).bfloat16()
    s = x.float() @ x.float().mT
    with janus.autocast("cpu", dtype=janus.bfloat16):
        for r in (janus.linalg.inv(x), janus.linalg.solve(x, x), janus.linalg.cholesky(s.bfloat16()),
                  janus.linalg.eigh(s.bfloat16()).eigenvalues, janus.linalg.svd(x).S, janus.linalg.qr(x).R):
            assert r.dtype == janus.float32
        with pytest.raises(NotImplementedError, match="Low precision dtypes not supported. Got BFloat16"):
            janus.linalg.slogdet(x)  # not on torch's list either


def test_qr_derivative_limits_as_torch():
    a = T(R.uniform(-1, 1, size=(4, 3))).requires_grad_()
    with pytest.raises(RuntimeError, match="not computed when mode='r'"):
        janus.linalg.qr(a, mode="r").R.sum().backward()
    with pytest.raises(RuntimeError, match="not differentiable when mode='complete' and nrows > ncols"):
        janus.linalg.qr(a, mode="complete").Q.sum().backward()


def test_cholesky_ex_does_not_raise_unless_asked():
    r = janus.linalg.cholesky_ex(T(NOT_PD))
    assert r.info.item() == 2
    with pytest.raises(RuntimeError, match="leading minor of order 2"):
        janus.linalg.cholesky_ex(T(NOT_PD), check_errors=True)


def test_cuda_tensors_are_refused():
    if not _C._cuda_built():
        pytest.skip("built without CUDA")
    x = janus.eye(3)
    old = _C._debug_mark_device(x, 1)  # a CPU tensor labelled cuda:0: the refusal comes before any CUDA call
    try:
        for call, op in ((lambda: janus.linalg.inv(x), "linalg_inv"), (lambda: janus.linalg.det(x), "linalg_det"),
                         (lambda: janus.linalg.cholesky(x), "linalg_cholesky_ex"),
                         (lambda: janus.linalg.solve(x, x), "linalg_solve")):
            with pytest.raises(NotImplementedError, match=rf"op {op} is not supported on CUDA yet"):
                call()
    finally:
        _C._debug_mark_device(x, old)


# ---------------------------------------------------------- record / replay
SCRIPT = r'''
import janus
import janus.nn as nn


class Net(nn.Module):  # a module region: its forward is replayed without its Python
    def __init__(self, n):
        super().__init__()
        self.n = n
        self.w = nn.Parameter(janus.randn(n, n, dtype=janus.float64) * 0.3)

    def forward(self, b):
        n = self.n
        a = self.w @ self.w.mT + n * janus.eye(n, dtype=janus.float64)  # symmetric positive-definite
        x = janus.linalg.solve(a, b)                                     # A broadcast over B's batch
        L = janus.linalg.cholesky(a)
        y = janus.linalg.solve_triangular(L, b, upper=False)
        _, r = janus.linalg.qr(self.w)  # unpacked: a region guards no result's attributes
        return (x.pow(2).mean() + janus.linalg.inv(a).sum()
                + (L * janus.eye(n, dtype=janus.float64)).sum(-1).log().sum() + janus.logdet(a) * 0.1
                + janus.linalg.det(a) * 1e-6 + janus.linalg.eigvalsh(a).max() * 0.01
                + janus.linalg.matrix_norm(self.w, "nuc") * 0.01 + r.pow(2).sum() * 0.01
                + y.sum() * 0.1 + janus.linalg.pinv(a).sum() * 0.1)


janus.manual_seed(0)
net = Net(6)
b = janus.randn(4, 6, 2, dtype=janus.float64)
opt = janus.optim.SGD(net.parameters(), lr=0.05)
for step in range(8):
    loss = net(b)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, loss.item().hex(), net.w.grad.abs().sum().item().hex())
'''

HITS = re.compile(r"\((\d+) of (\d+) segments ran as graphs")


def test_training_step_records_optimizes_and_replays_bitwise(tmp_path):
    from dynamic_runs import have_optimize, janus as run_janus
    if not have_optimize():
        pytest.skip("janus optimize is not built")
    script = tmp_path / "lapack_step.py"
    script.write_text(SCRIPT)
    db = str(tmp_path / "run.db")
    cmd = ["--", sys.executable, str(script)]
    plain = run_janus("run", *cmd, timeout=600)
    assert plain.returncode == 0, plain.stderr[-3000:]
    assert len(plain.stdout.splitlines()) == 8, plain.stdout
    r = run_janus("record", "--db", db, *cmd, timeout=600)
    assert r.returncode == 0 and r.stdout == plain.stdout, r.stderr[-3000:]
    r = run_janus("optimize", db, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    replay = run_janus("replay", "--strict", "--db", db, *cmd, timeout=600, extra_env={"JANUS_REPLAY_ADAPT": "0"})
    assert replay.returncode == 0, replay.stderr[-3000:]
    assert replay.stdout == plain.stdout
    m = HITS.search(replay.stderr)
    assert m and int(m.group(1)) == int(m.group(2)) > 0, replay.stderr[-3000:]
    # the forward's region ran without its Python after learning (janus/_lapack.py stores nothing per call)
    r = run_janus("inspect", "--run", "2", db, timeout=600)
    m = re.search(r"Net\.forward \(\S+\): (\d+) of (\d+) calls replaced", r.stdout)
    assert m and int(m.group(1)) > 0, r.stdout[-3000:]
