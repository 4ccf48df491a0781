"""Helpers for the table-driven op tests: run one op through the C
dispatcher (janus._C._op) and compare with a numpy reference.

Each tests/python/test_ops_<area>.py defines CASES, a dict from op name to a
list of cases; test_op_table.py fails if any op in the op table has no case.
"""
import numpy as np

from janus import _C

DTYPES = {n: i for i, n in enumerate(_C.dtype_names)}  # name -> code
NP = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "int64": np.int64,
      "int32": np.int32, "uint8": np.uint8, "bool": np.bool_}
TOL = {"float32": (1e-5, 1e-6), "float64": (1e-10, 1e-12), "float16": (1e-3, 1e-3),
       "bfloat16": (1e-2, 1e-2)}


def dt(name):
    return DTYPES[name]


def jn(a):
    """numpy array (any layout, including stride-0 broadcast views) -> tensor sharing memory."""
    a = np.asarray(a)
    return _C._from_buffer(a)


def npy(t):
    """tensor -> numpy array (a copy; bfloat16 via float32)."""
    if _C.dtype_names[t._dtype_id] == "bfloat16":
        t = _C._op("cast", [t], (DTYPES["float32"],))
    return np.array(memoryview(t) if t.ndim else np.asarray(t), copy=True)


def op(name, inputs, attrs=()):
    return _C._op(name, list(inputs), tuple(attrs))


def assert_close(got, want, rtol=None, atol=None, dtype=None):
    got = npy(got) if not isinstance(got, np.ndarray) else got
    want = np.asarray(want)
    assert got.shape == want.shape, f"shape {got.shape} != {want.shape}"
    if dtype is None:
        dtype = str(want.dtype)
    r, a = TOL.get(dtype, (0, 0))
    rtol = r if rtol is None else rtol
    atol = a if atol is None else atol
    if got.dtype == np.bool_ or np.issubdtype(got.dtype, np.integer):
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol,
                                   atol=atol, equal_nan=True)


def layouts(a):
    """The same values in several memory layouts: contiguous, non-contiguous
    (a strided slice of a larger buffer, and a transposed copy), for checking
    that kernels respect strides."""
    a = np.asarray(a)
    out = [("contig", a)]
    if a.ndim >= 1 and a.size:
        big = np.zeros(a.shape[:-1] + (a.shape[-1] * 2,), dtype=a.dtype)
        big[..., ::2] = a
        out.append(("strided", big[..., ::2]))
    if a.ndim >= 2 and a.size:
        t = np.ascontiguousarray(np.swapaxes(a, -1, -2))
        out.append(("transposed", np.swapaxes(t, -1, -2)))
    return out


def rand(shape, dtype="float32", lo=-2.0, hi=2.0, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in ("int64", "int32", "uint8"):
        lo_i = 0 if dtype == "uint8" else int(lo * 5)
        return rng.integers(lo_i, int(hi * 5) + 1, size=shape).astype(NP[dtype])
    return rng.uniform(lo, hi, size=shape).astype(NP[dtype])
