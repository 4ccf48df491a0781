"""Table-driven checks of the k_lapack.c ops (linalg_inv, linalg_solve,
linalg_det, linalg_slogdet, linalg_cholesky_ex) against numpy.linalg in
float64, every input also in opcheck's non-contiguous layouts.  The torch
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
}


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
    raise KeyError(name)


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
    for g, w in zip(got, want):
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
