"""Table-driven checks of the k_lapack.c ops (linalg_inv, linalg_solve,
linalg_det, linalg_slogdet, linalg_cholesky_ex, linalg_solve_triangular,
linalg_eigh, linalg_svd, linalg_qr, linalg_pinv) against numpy.linalg in float64
(eigenvectors and singular vectors compared up to each one's sign), every
input also in opcheck's non-contiguous layouts.  The torch
API over them, gradients and errors: test_linalg_lapack.py."""
import numpy as np
import pytest

import opcheck as oc
from janus import _C

TOL = {"float32": (2e-4, 2e-4), "float64": (1e-9, 1e-10)}


def well(shape, dtype="float32", seed=0):
    """Well-conditioned square matrices: random plus n on the diagonal."""
    a = np.random.default_rng(seed).uniform(-1, 1, size=shape)
    return (a + shape[-1] * np.eye(shape[-1])).astype(dtype)


def spd(shape, dtype="float32", seed=0):
    a = np.random.default_rng(seed).uniform(-1, 1, size=shape)
    return (a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def rhs(shape, dtype="float32", seed=1):
    return np.random.default_rng(seed).uniform(-1, 1, size=shape).astype(dtype)


CASES = {
    "linalg_inv": [
        dict(inputs=[well((3, 3))]),
        dict(inputs=[well((2, 4, 5, 5), "float64")]),
        dict(inputs=[np.array([[0.0, 2.0], [3.0, 1.0]])]),          # needs a row swap
        dict(inputs=[well((0, 3, 3))]),
        dict(inputs=[np.zeros((2, 0, 0), np.float32)]),
    ],
    "linalg_solve": [
        dict(inputs=[well((4, 4)), rhs((4, 2))]),
        dict(inputs=[well((3, 5, 5), "float64"), rhs((3, 5, 1), "float64")]),
        dict(inputs=[well((2, 3, 3)), rhs((2, 3, 4))]),
        dict(inputs=[well((3, 3)), rhs((3, 0))]),
    ],
    "linalg_det": [
        dict(inputs=[well((3, 3))]),
        dict(inputs=[rhs((2, 3, 4, 4), "float64")]),                   # either sign
        dict(inputs=[np.array([[1.0, 2.0], [2.0, 4.0]])]),              # singular: 0
        dict(inputs=[np.array([[0.0, 1.0], [1.0, 0.0]], np.float32)]),  # a permutation: -1
        dict(inputs=[np.zeros((2, 0, 0))]),                             # empty product: 1
    ],
    "linalg_slogdet": [
        dict(inputs=[well((3, 3))]),
        dict(inputs=[rhs((2, 3, 4, 4), "float64")]),
        dict(inputs=[np.array([[1.0, 2.0], [2.0, 4.0]])]),              # (-inf, 0)
        dict(inputs=[np.zeros((0, 0), np.float32)]),
    ],
    "linalg_cholesky_ex": [
        dict(inputs=[spd((4, 4))], attrs=(0, 1)),
        dict(inputs=[spd((2, 3, 5, 5), "float64")], attrs=(0, 0)),
        dict(inputs=[spd((3, 3), "float64")], attrs=(1, 0)),            # upper
        dict(inputs=[np.array([[1.0, 2.0], [2.0, 1.0]])], attrs=(0, 0)),  # not PD: info 2
        dict(inputs=[np.zeros((0, 0), np.float32)], attrs=(0, 1)),
    ],
    "linalg_solve_triangular": [
        dict(inputs=[np.tril(well((4, 4))), rhs((4, 3))], attrs=(0, 0)),
        dict(inputs=[well((2, 3, 3), "float64"), rhs((2, 3, 2), "float64")], attrs=(1, 0)),  # reads triu only
        dict(inputs=[well((3, 3), "float64"), rhs((3, 1), "float64")], attrs=(0, 1)),       # unit diagonal
        dict(inputs=[well((3, 3)), rhs((3, 0))], attrs=(1, 0)),
    ],
    "linalg_eigh": [
        dict(inputs=[spd((4, 4))], attrs=(0,)),
        dict(inputs=[rhs((2, 3, 5, 5), "float64")], attrs=(0,)),    # reads the lower triangle only
        dict(inputs=[rhs((3, 3), "float64")], attrs=(1,)),          # the upper one
        dict(inputs=[np.zeros((0, 0), np.float32)], attrs=(0,)),
    ],
    "linalg_svd": [
        dict(inputs=[rhs((4, 3))], attrs=(0,)),
        dict(inputs=[rhs((2, 3, 5), "float64")], attrs=(0,)),
        dict(inputs=[rhs((4, 2), "float64")], attrs=(1,)),          # full_matrices
        dict(inputs=[rhs((2, 3), "float64")], attrs=(1,)),
        dict(inputs=[np.zeros((3, 0))], attrs=(1,)),                # U the identity
        dict(inputs=[np.zeros((0, 2), np.float32)], attrs=(0,)),
    ],
    "linalg_qr": [
        dict(inputs=[rhs((5, 3))], attrs=(0,)),
        dict(inputs=[rhs((2, 3, 4), "float64")], attrs=(0,)),
        dict(inputs=[rhs((4, 2), "float64")], attrs=(1,)),          # complete
        dict(inputs=[rhs((3, 3), "float64")], attrs=(2,)),          # R only
        dict(inputs=[np.zeros((2, 0))], attrs=(1,)),
    ],
    "linalg_pinv": [
        dict(inputs=[rhs((4, 3))], attrs=(0.0, 1e-6)),
        dict(inputs=[rhs((2, 3, 5), "float64")], attrs=(0.0, 1e-12)),
        dict(inputs=[np.array([[1.0, 2.0], [2.0, 4.0]])], attrs=(0.0, 1e-12)),  # rank 1: the cutoff
        dict(inputs=[rhs((3, 3), "float64")], attrs=(0.5, 0.0)),               # atol drops some
        dict(inputs=[np.zeros((3, 0))], attrs=(0.0, 0.0)),
    ],
}


def _signs(m):
    """+-1 per column making each column's largest entry positive."""
    if m.size == 0:
        return np.ones(m.shape[-1:])
    idx = np.abs(m).argmax(-2)
    return np.sign(np.take_along_axis(m, idx[..., None, :], -2))[..., 0, :]


def reference(name, inputs, attrs):
    a = inputs[0].astype(np.float64)
    if name == "linalg_inv":
        return [np.linalg.inv(a) if a.size else a]
    if name == "linalg_solve":
        b = inputs[1].astype(np.float64)
        return [np.linalg.solve(a, b) if b.size else b]
    if name == "linalg_det":
        return [np.linalg.det(a)]
    if name == "linalg_slogdet":
        sign, lad = np.linalg.slogdet(a)
        return [lad, sign]
    if name == "linalg_cholesky_ex":
        upper = attrs[0]
        low = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2)  # only the lower triangle is read
        if upper:
            low = np.swapaxes(np.triu(a), -1, -2) + np.triu(a, 1)
        try:
            L, info = np.linalg.cholesky(low), 0
        except np.linalg.LinAlgError:
            return None
        return [np.swapaxes(L, -1, -2) if upper else L, np.zeros(a.shape[:-2], np.int32) + info]
    if name == "linalg_solve_triangular":
        upper, unit = attrs
        t = np.triu(a) if upper else np.tril(a)
        if unit:
            t = t - t * np.eye(a.shape[-1]) + np.eye(a.shape[-1])
        b = inputs[1].astype(np.float64)
        return [np.linalg.solve(t, b) if b.size else b]
    if name == "linalg_eigh":
        if not a.size:
            return [np.zeros(a.shape[:-1]), a]
        return list(np.linalg.eigh(a, UPLO="U" if attrs[0] else "L"))
    if name == "linalg_svd":
        m, n = a.shape[-2:]
        if not a.size:
            k = min(m, n)
            return [np.zeros(a.shape[:-2] + (k,)), np.eye(m, m if attrs[0] else k), np.eye(n if attrs[0] else k, n)]
        u, sv, vh = np.linalg.svd(a, full_matrices=bool(attrs[0]))
        return [sv, u, vh]
    if name == "linalg_qr":
        mode = ["reduced", "complete", "r"][attrs[0]]
        if mode == "r":
            return [np.zeros(0), np.linalg.qr(a, mode="r")]
        if not a.size:
            m = a.shape[-2]
            return [np.eye(m), np.zeros((m, 0))]
        return list(np.linalg.qr(a, mode=mode))
    if name == "linalg_pinv":
        if not a.size:
            return [np.zeros(a.shape[:-2] + a.shape[:-3:-1])]
        atol, rtol = attrs
        return [np.linalg.pinv(a, rcond=rtol) if atol == 0 else _pinv_atol(a, atol)]
    raise KeyError(name)


def _pinv_atol(a, atol):
    u, sv, vh = np.linalg.svd(a, full_matrices=False)
    inv = np.where(sv > atol, 1 / np.where(sv > atol, sv, 1), 0)
    return np.swapaxes(vh, -1, -2) @ (inv[..., :, None] * np.swapaxes(u, -1, -2))


def _canonical(name, outs):
    """Eigenvectors and singular vector pairs with their sign fixed (LAPACK's is arbitrary)."""
    outs = [np.asarray(o, np.float64) for o in outs]
    if name == "linalg_eigh":
        outs[1] = outs[1] * _signs(outs[1])[..., None, :]
    if name == "linalg_svd":
        k = outs[0].shape[-1]
        sg = _signs(outs[1][..., :k])
        outs[1] = np.concatenate([outs[1][..., :k] * sg[..., None, :], np.abs(outs[1][..., k:])], -1)
        outs[2] = np.concatenate([outs[2][..., :k, :] * sg[..., :, None], np.abs(outs[2][..., k:, :])], -2)
    if name == "linalg_qr" and outs[0].size:  # R's diagonal's sign (numpy's LAPACK may differ)
        k = min(outs[1].shape[-2:])
        d = np.sign(np.diagonal(outs[1], axis1=-2, axis2=-1))[..., :k]
        d = np.where(d == 0, 1, d)
        outs[0] = np.concatenate([outs[0][..., :k] * d[..., None, :], np.abs(outs[0][..., k:])], -1)
        outs[1] = np.concatenate([outs[1][..., :k, :] * d[..., :, None], outs[1][..., k:, :]], -2)
    return outs


def _check(name, case, inputs):
    attrs = case.get("attrs", ())
    got = oc.op(name, [oc.jn(a) for a in inputs], attrs)
    got = list(got) if isinstance(got, tuple) else [got]
    dtype = str(inputs[0].dtype)
    assert _C.dtype_names[got[0]._dtype_id] == dtype
    want = reference(name, inputs, attrs)
    if want is None:  # a failed Cholesky: info names the first minor that is not positive-definite
        assert oc.npy(got[1]).tolist() == 2
        return
    rtol, atol = TOL[dtype]
    got = _canonical(name, [oc.npy(g) for g in got])
    for g, w in zip(got, _canonical(name, want)):
        oc.assert_close(g, np.asarray(w), rtol=rtol, atol=atol, dtype=dtype)


def _ids():
    return [f"{n}-{i}" for n, cs in CASES.items() for i in range(len(cs))]


@pytest.mark.parametrize("name,case", [(n, c) for n, cs in CASES.items() for c in cs], ids=_ids())
def test_case(name, case):
    _check(name, case, case["inputs"])


@pytest.mark.parametrize("name,case", [(n, c) for n, cs in CASES.items() for c in cs], ids=_ids())
def test_case_layouts(name, case):
    inputs = case["inputs"]
    for k, a in enumerate(inputs):
        for label, v in oc.layouts(a)[1:]:
            _check(name, case, inputs[:k] + [v] + inputs[k + 1:])
