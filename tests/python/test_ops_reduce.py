"""Table-driven checks of the reduction and softmax ops (runtime/k_reduce.c)
against numpy references computed in float64.

CASES maps each op to (input, attrs) pairs.  An input is a numpy array (run
in every layout opcheck.layouts gives: contiguous, strided, transposed;
stride-0 broadcast arrays are passed as they are) or BF16(float32 array),
which becomes a bfloat16 tensor.  REF[op](values, in_dtype, attrs) returns
the expected outputs as (array, dtype name) pairs: the dtype is checked
exactly, the values with per-dtype tolerances.
"""
import ctypes
import warnings

import numpy as np
import pytest

import opcheck as oc
from janus import _C


class BF16:
    """A bfloat16 input given by float32 values (rounded to nearest even)."""

    def __init__(self, a):
        self.a = np.asarray(a, dtype=np.float32)


def _bf16_bits(a):
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def make_bf16(a):
    """Contiguous bfloat16 tensor holding `a` (written bit-exactly through
    the data pointer, so the test does not depend on the cast op) and the
    float32 values it holds."""
    bits = _bf16_bits(a)
    holder = np.zeros(a.shape + (1,), np.float32)
    t = oc.op("sum", [oc.jn(holder)], ([-1], False, oc.dt("bfloat16")))
    assert dtname(t) == "bfloat16" and t._is_contiguous
    if bits.size:
        ctypes.memmove(t._data_ptr, bits.ctypes.data, bits.nbytes)
    return t, (bits.astype(np.uint32) << 16).view(np.float32).reshape(a.shape)


def dtname(t):
    return _C.dtype_names[t._dtype_id]


def read(t):
    """Tensor -> numpy (bfloat16 read through the data pointer as float32)."""
    if dtname(t) != "bfloat16":
        return oc.npy(t)
    assert t._is_contiguous
    n = int(np.prod(t._shape))
    bits = np.frombuffer(ctypes.string_at(t._data_ptr, 2 * n), np.uint16) if n else np.zeros(0)
    return (bits.astype(np.uint32) << 16).view(np.float32).reshape(t._shape)


# ------------------------------------------------------------------ references
NPNAME = {np.dtype(v).name: k for k, v in oc.NP.items()}
FLOATS = ("float32", "float64", "float16", "bfloat16")


def _axis(x, dims):
    if x.ndim == 0 or len(dims) == 0:
        return None
    return tuple(int(d) for d in dims)


def _cast(v, name):
    v = np.asarray(v)
    if name == "bfloat16":
        return v.astype(np.float64)
    return v.astype(oc.NP[name])


def _sum_like(npfn, boolfn):
    def ref(x, in_dt, attrs):
        dims, keepdim = attrs[0], attrs[1]
        dtype = attrs[2] if len(attrs) > 2 else -1
        od = _C.dtype_names[dtype] if dtype >= 0 else (in_dt if in_dt in FLOATS else "int64")
        ax = _axis(x, dims)
        with np.errstate(all="ignore"):
            return [(_cast(_reduce(x, od, ax, keepdim), od), od)]

    def _reduce(x, od, ax, keepdim):
        if od == "bool":
            r = boolfn(x != 0, axis=ax, keepdims=bool(keepdim))
        elif od in FLOATS:
            r = npfn(x.astype(np.float64), axis=ax, keepdims=bool(keepdim))
        else:  # integer result: elements converted to the integer type, wrapping math
            r = npfn(x.astype(np.int64), axis=ax, keepdims=bool(keepdim))
        return r
    return ref


def ref_mean(x, in_dt, attrs):
    dims, keepdim, dtype = attrs
    od = _C.dtype_names[dtype] if dtype >= 0 else in_dt
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = np.mean(x.astype(np.float64), axis=_axis(x, dims), keepdims=bool(keepdim))
    return [(_cast(r, od), od)]


def _minmax(npfn):
    def ref(x, in_dt, attrs):
        dims, keepdim = attrs
        r = npfn(x, axis=_axis(x, dims), keepdims=bool(keepdim))
        return [(_cast(r, in_dt), in_dt)]
    return ref


def _maxmin_dim(vfn, ifn):
    def ref(x, in_dt, attrs):
        dim, keepdim = attrs
        if x.ndim == 0:
            return [(_cast(x, in_dt), in_dt), (np.array(0, np.int64), "int64")]
        v = vfn(x, axis=dim, keepdims=bool(keepdim))
        i = ifn(x, axis=dim, keepdims=bool(keepdim))
        return [(_cast(v, in_dt), in_dt), (i.astype(np.int64), "int64")]
    return ref


def _arg(ifn):
    def ref(x, in_dt, attrs):
        dim, keepdim, has_dim = attrs
        if x.ndim == 0:
            return [(np.array(0, np.int64), "int64")]
        if not has_dim:
            i = np.asarray(ifn(x))
            if keepdim:
                i = i.reshape((1,) * x.ndim)
            return [(i.astype(np.int64), "int64")]
        return [(ifn(x, axis=dim, keepdims=bool(keepdim)).astype(np.int64), "int64")]
    return ref


def _var(take_sqrt):
    def ref(x, in_dt, attrs):
        dims, corr, keepdim = attrs
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            r = np.var(x.astype(np.float64), axis=_axis(x, dims), ddof=corr, keepdims=bool(keepdim))
        if take_sqrt:
            r = np.sqrt(r)
        return [(_cast(r, in_dt), in_dt)]
    return ref


def ref_logsumexp(x, in_dt, attrs):
    dims, keepdim = attrs
    od = in_dt if in_dt in FLOATS else "float32"
    ax = _axis(x, dims)
    x = x.astype(np.float64)
    with np.errstate(all="ignore"):
        if x.size == 0:
            r = np.log(np.sum(np.exp(x), axis=ax, keepdims=bool(keepdim)))
        else:
            m = np.max(x, axis=ax, keepdims=True)
            m = np.where(np.isinf(m), 0.0, m)
            r = np.log(np.sum(np.exp(x - m), axis=ax, keepdims=True)) + m
            if not keepdim:
                r = r.reshape(np.sum(x, axis=ax, keepdims=False).shape)
    return [(_cast(r, od), od)]


def _allany(npfn):
    def ref(x, in_dt, attrs):
        dims, keepdim = attrs
        od = "uint8" if in_dt == "uint8" else "bool"
        r = npfn(x != 0, axis=_axis(x, dims), keepdims=bool(keepdim))
        return [(_cast(r, od), od)]
    return ref


def _softmax(log):
    def ref(x, in_dt, attrs):
        (dim,) = attrs
        x = x.astype(np.float64)
        if x.ndim == 0:
            r = np.zeros_like(x) if log else np.ones_like(x)
            return [(_cast(r, in_dt), in_dt)]
        if x.size == 0:
            return [(_cast(x, in_dt), in_dt)]
        with np.errstate(all="ignore"):
            m = np.max(x, axis=dim, keepdims=True)
            e = np.exp(x - m)
            s = np.sum(e, axis=dim, keepdims=True)
            r = (x - m) - np.log(s) if log else e / s
        return [(_cast(r, in_dt), in_dt)]
    return ref


REF = {
    "sum": _sum_like(np.sum, np.any),
    "mean": ref_mean,
    "prod": _sum_like(np.prod, np.all),
    "amax": _minmax(np.max),
    "amin": _minmax(np.min),
    "max_dim": _maxmin_dim(np.max, np.argmax),
    "min_dim": _maxmin_dim(np.min, np.argmin),
    "argmax": _arg(np.argmax),
    "argmin": _arg(np.argmin),
    "var": _var(False),
    "std": _var(True),
    "logsumexp": ref_logsumexp,
    "all": _allany(np.all),
    "any": _allany(np.any),
    "softmax": _softmax(False),
    "log_softmax": _softmax(True),
}

# Relative/absolute tolerance per output dtype; float32 results of double
# accumulation are exact up to the final rounding.
TOLS = {"float32": (2e-6, 1e-6), "float64": (1e-12, 1e-12), "float16": (2e-3, 2e-3),
        "bfloat16": (1e-2, 1e-2)}

# ---------------------------------------------------------------------- cases
R = oc.rand
F32 = R((3, 4, 5))
F64 = R((3, 4, 5), "float64", seed=1)
F16 = R((4, 6), "float16", seed=2)
I32 = R((3, 4, 5), "int32", seed=3)
I64 = R((5, 7), "int64", seed=4)
U8 = R((4, 6), "uint8", seed=5)
BOOL = R((3, 4, 5), "bool", seed=6)
ROW = R((7, 300), seed=7)              # long contiguous rows: lane loops + tails
COLS = R((50, 40), "float64", seed=8)  # column reductions over a contiguous kept dim
BCAST = np.broadcast_to(R((1, 20), seed=9), (30, 20))        # stride-0 rows
BCAST_COL = np.broadcast_to(R((12, 1), seed=10), (12, 33))   # stride-0 columns
SHORT = R((100, 3), seed=19)            # short reductions over a strided kept dim
SHORT_I = R((100, 3), "int64", seed=20)  # ... with many ties
SCALAR = np.array(2.5, np.float32)
EMPTY = np.zeros((0, 4), np.float32)
EMPTY3 = np.zeros((2, 0, 3), np.float64)
NANS = np.array([[1.0, np.nan, 3.0, np.nan], [np.inf, -np.inf, 0.0, 2.0], [5.0, 5.0, -1.0, 5.0]],
                np.float32)
TIES = np.array([[3, 1, 3, 0], [0, 0, 0, 0], [-2, 7, 7, -2]], np.int64)
BIGINT = np.array([2 ** 62, 2 ** 62, 2 ** 62, 7], np.int64)   # sum wraps like int64
NEGINF = np.array([[-np.inf, -np.inf, -np.inf], [0.0, -np.inf, 1.0]], np.float32)
FULL = [(), (0,), (1,), (2,), (-1,), (0, 2), (-1, 0), (1, 2), (0, 1, 2)]


def _dimcases(x, extra=(), kd=(False, True)):
    return [(x, (list(d), k) + extra) for d in FULL[: 1 + x.ndim * 2] for k in kd
            if all(-x.ndim <= i < x.ndim for i in d)]


def _sum_cases():
    c = []
    for x in (F32, F64, I32, BOOL):
        c += _dimcases(x, (-1,))
    c += [(F16, ([1], False, -1)), (F16, ([], True, -1)), (U8, ([0], False, -1)),
          (I64, ([1], True, -1)), (ROW, ([1], False, -1)), (ROW, ([0], False, -1)),
          (COLS, ([0], False, -1)), (COLS, ([1], True, -1)), (BCAST, ([0], False, -1)),
          (BCAST, ([], False, -1)), (BCAST_COL, ([1], False, -1)), (BCAST_COL, ([0], True, -1)),
          (SCALAR, ([], False, -1)), (SCALAR, ([0], True, -1)), (SCALAR, ([-1], False, -1)),
          (EMPTY, ([0], False, -1)), (EMPTY, ([1], True, -1)), (EMPTY, ([], False, -1)),
          (EMPTY3, ([1, 2], False, -1)), (BIGINT, ([0], False, -1)), (NANS, ([1], False, -1)),
          (I32, ([1], False, oc.dt("float64"))), (F32, ([2], False, oc.dt("float64"))),
          (F64, ([0], False, oc.dt("float32"))), (F32, ([1], False, oc.dt("int64"))),
          (I64, ([0], False, oc.dt("int32"))), (I32, ([2], False, oc.dt("bool"))),
          (BF16(F32), ([2], False, -1)), (BF16(F32), ([], False, -1)),
          (F32, ([0, 2], False, oc.dt("bfloat16"))), (SHORT, ([1], False, -1)),
          (SHORT_I, ([1], True, -1))]
    return c


MASKED = np.where(R((100, 4), seed=16) > 1, -np.inf, R((100, 4), seed=17)).astype(np.float32)
ALT = np.broadcast_to(np.array([True, False]), (50, 2))


def _grid(xs, dims_attrs):
    return [(x, a) for x in xs for a in dims_attrs]


def _red(x, extra=()):
    return [(x, a) for _, a in _dimcases(x, extra)]


CASES = {
    "sum": _sum_cases(),
    "mean": _red(F32, (-1,)) + _red(F64, (-1,)) + [
        (F16, ([0], False, -1)), (BF16(F32), ([1, 2], True, -1)), (ROW, ([1], False, -1)),
        (COLS, ([0], True, -1)), (BCAST, ([0, 1], False, -1)), (SCALAR, ([], False, -1)),
        (EMPTY, ([0], False, -1)), (EMPTY, ([1], False, -1)), (EMPTY3, ([1], True, -1)),
        (I32, ([1], False, oc.dt("float32"))), (BOOL, ([], False, oc.dt("float64"))),
        (F32, ([2], False, oc.dt("float64"))), (NANS, ([0], False, -1)),
        (SHORT, ([1], False, -1))],
    "prod": _red(R((3, 4, 5), lo=0.5, hi=1.5), (-1,)) + [
        (I32, ([1], False, -1)), (I64, ([0, 1], True, -1)), (BOOL, ([2], False, -1)),
        (U8, ([1], False, -1)), (BIGINT, ([0], False, -1)),
        (R((4, 9), "float64", 0.8, 1.2), ([1], False, -1)), (F16, ([0], False, -1)),
        (SCALAR, ([], False, -1)), (EMPTY, ([0], False, -1)), (EMPTY, ([], True, -1)),
        (BCAST_COL, ([1], False, -1)), (I32, ([1], False, oc.dt("float64"))),
        (BOOL, ([0], False, oc.dt("bool"))), (NANS, ([1], False, -1)),
        (SHORT_I, ([1], False, -1))],
    "amax": _red(F32) + _red(I32) + _red(BOOL) + [
        (F64, ([1], False)), (F16, ([0], True)), (U8, ([1], False)), (I64, ([], False)),
        (NANS, ([1], False)), (NANS, ([0], True)), (NANS, ([], False)), (NEGINF, ([1], False)),
        (ROW, ([1], False)), (COLS, ([0], False)), (BCAST, ([0], False)), (SCALAR, ([], False)),
        (SCALAR, ([0], True)), (EMPTY, ([1], False)), (BF16(F32), ([0, 1], False)),
        (SHORT, ([1], False)), (SHORT_I, ([1], True))],
    "amin": _red(F32) + _red(I64) + [
        (F64, ([2], True)), (F16, ([1], False)), (U8, ([0], False)), (BOOL, ([0, 2], False)),
        (NANS, ([1], False)), (NANS, ([0], False)), (ROW, ([1], True)), (COLS, ([0], False)),
        (BCAST_COL, ([1], False)), (SCALAR, ([-1], False)), (EMPTY, ([1], True)),
        (BF16(F32), ([2], False)), (SHORT_I, ([-1], False))],
    "max_dim": _grid((F32, I32), [(d, k) for d in (0, 1, 2, -1) for k in (False, True)]) + [
        (F64, (1, False)), (F16, (0, False)), (BOOL, (2, True)), (U8, (1, False)),
        (TIES, (1, False)), (TIES, (0, True)), (NANS, (1, False)), (NANS, (0, False)),
        (NEGINF, (1, False)), (ROW, (1, False)), (COLS, (0, False)), (BCAST, (0, False)),
        (BCAST, (1, True)), (SCALAR, (0, False)), (SCALAR, (-1, True)), (EMPTY, (1, False)),
        (BF16(F32), (1, False)), (SHORT, (1, False)), (SHORT_I, (1, True))],
    "min_dim": _grid((F32, I64), [(d, k) for d in (0, -1) for k in (False, True)]) + [
        (F64, (2, False)), (BOOL, (0, False)), (TIES, (1, False)), (TIES, (0, False)),
        (NANS, (1, True)), (ROW, (1, False)), (COLS, (0, True)), (BCAST_COL, (1, False)),
        (SCALAR, (0, False)), (EMPTY, (1, True)), (BF16(F32), (2, False)),
        (SHORT_I, (1, False))],
    "argmax": _grid((F32, I32), [(d, k, 1) for d in (0, 1, -1) for k in (False, True)]) + [
        (F32, (0, False, 0)), (F32, (0, True, 0)), (TIES, (0, False, 0)), (TIES, (1, False, 1)),
        (NANS, (0, False, 0)), (NANS, (1, False, 1)), (NEGINF, (1, False, 1)),
        (F64, (2, False, 1)), (F16, (1, False, 1)), (U8, (0, True, 1)), (ROW, (1, False, 1)),
        (ROW, (0, False, 0)), (COLS, (0, False, 1)), (np.swapaxes(COLS, 0, 1), (0, False, 0)),
        (BCAST, (0, False, 1)), (BCAST, (0, False, 0)), (SCALAR, (0, False, 0)),
        (SCALAR, (0, False, 1)), (EMPTY, (1, False, 1)), (BF16(F32), (2, True, 1)),
        (SHORT_I, (1, False, 1)), (SHORT, (-1, True, 1))],
    "argmin": _grid((F32, I64), [(d, k, 1) for d in (0, -1) for k in (False, True)]) + [
        (F32, (0, False, 0)), (I64, (0, True, 0)), (TIES, (1, False, 1)), (TIES, (0, False, 0)),
        (NANS, (1, False, 1)), (NANS, (0, False, 0)), (F64, (0, False, 1)),
        (BOOL, (1, False, 1)), (ROW, (1, False, 1)), (COLS, (0, True, 1)),
        (BCAST_COL, (1, False, 1)), (SCALAR, (-1, True, 1)), (EMPTY, (1, False, 1)),
        (BF16(F32), (0, False, 0)), (SHORT_I, (1, False, 1))],
    "var": [(x, (d, 1.0, k)) for x in (F32, F64) for _, (d, k) in _dimcases(x)] + [
        (F32, ([1], 0.0, False)), (F64, ([0, 2], 2.0, True)), (F64, ([2], 0.5, False)),
        (F16, ([1], 1.0, False)), (BF16(F32), ([2], 1.0, False)), (ROW, ([1], 1.0, False)),
        (COLS, ([0], 1.0, False)), (COLS, ([0], 0.0, True)), (BCAST, ([0], 1.0, False)),
        (R((6, 5), "float64", 1e6, 1e6 + 1, seed=11), ([0], 1.0, False)),  # needs 2 passes
        (SCALAR, ([], 0.0, False)), (SCALAR, ([], 1.0, False)), (EMPTY, ([0], 1.0, False)),
        (EMPTY, ([1], 0.0, False)), (NANS, ([1], 1.0, False)), (SHORT, ([1], 1.0, False))],
    "std": [(F32, (d, 1.0, k)) for _, (d, k) in _dimcases(F32)] + [
        (F64, ([1], 0.0, False)), (F64, ([0, 2], 1.0, True)), (F16, ([0], 1.0, False)),
        (BF16(F32), ([0, 1], 1.0, False)), (ROW, ([1], 1.0, True)), (COLS, ([0], 1.0, False)),
        (BCAST_COL, ([1], 1.0, False)), (SCALAR, ([0], 0.0, True)), (EMPTY, ([1], 1.0, False)),
        (NANS, ([0], 1.0, False)), (SHORT, ([1], 0.0, True))],
    "logsumexp": _red(F32) + _red(F64) + [
        (R((4, 5), lo=50, hi=90), ([1], False)), (R((4, 5), "float64", -800, -700), ([0], False)),
        (NEGINF, ([1], False)), (NEGINF, ([0], True)), (NANS, ([1], False)), (I32, ([1], False)),
        (BOOL, ([], False)), (I64, ([0], True)), (F16, ([1], False)), (BF16(F32), ([2], False)),
        (ROW, ([1], False)), (COLS, ([0], False)), (BCAST, ([0], False)), (SCALAR, ([], False)),
        (EMPTY, ([0], False)), (EMPTY, ([1], True)), (SHORT, ([1], False))],
    "all": _red(BOOL) + _red(I32) + [
        (np.ones((4, 6), bool), ([1], False)), (np.ones((30, 40), bool), ([0], False)),
        (F32 > -1.5, ([0, 1], True)), (NANS, ([1], False)), (U8, ([0], False)), (U8, ([], False)),
        (F16, ([1], False)), (I64, ([], True)), (ALT, ([0], False)), (SCALAR, ([], False)),
        (np.array(0, np.int32), ([0], False)), (EMPTY, ([0], False)), (EMPTY, ([], False)),
        (BF16(F32), ([1], False)), (SHORT_I, ([1], False))],
    "any": _red(BOOL) + _red(F32) + [
        (np.zeros((4, 6), bool), ([1], False)), (np.zeros((30, 40), np.int64), ([0], True)),
        (np.where(np.isnan(NANS), NANS, 0), ([1], False)), (U8, ([1], False)),
        (F16, ([0], False)), (I64, ([], False)), (ALT, ([0], False)), (SCALAR, ([], False)),
        (EMPTY, ([0], False)), (EMPTY, ([], True)), (BF16(F32), ([0], False)),
        (SHORT_I, ([1], False))],
    "softmax": _grid((F32, F64), [(d,) for d in (0, 1, 2, -1)]) + [
        (F16, (1,)), (F16, (0,)), (BF16(F32), (2,)), (BF16(F32), (0,)), (ROW, (1,)), (ROW, (0,)),
        (R((3, 300, 2), seed=12), (1,)), (R((2, 5, 300), seed=13), (1,)),
        (R((4, 6), lo=-1000, hi=1000), (1,)), (NEGINF, (1,)), (NANS, (1,)), (BCAST, (1,)),
        (BCAST_COL, (1,)), (SCALAR, (0,)), (SCALAR, (-1,)), (EMPTY, (1,)), (EMPTY3, (1,)),
        (EMPTY3, (2,)), (R((200, 5), seed=14), (1,)), (R((70, 3), "float64", seed=15), (-1,)),
        (MASKED, (1,))],
    "log_softmax": _grid((F32, F64), [(d,) for d in (0, 1, -1)]) + [
        (F16, (1,)), (BF16(F32), (1,)), (ROW, (1,)), (ROW, (0,)), (R((3, 300, 2), seed=12), (1,)),
        (R((4, 6), lo=-1000, hi=1000), (0,)), (NEGINF, (1,)), (BCAST, (0,)), (SCALAR, (0,)),
        (EMPTY, (0,)), (EMPTY3, (2,)), (R((200, 5), seed=14), (1,)),
        (R((3, 100, 7), seed=18), (2,))],
}


def _inputs(x):
    """(label, tensor, values seen by the reference, dtype name) per layout."""
    if isinstance(x, BF16):
        t, vals = make_bf16(x.a)
        return [("bf16", t, vals, "bfloat16")]
    x = np.asarray(x)
    name = NPNAME[x.dtype.name]
    if x.strides and 0 in x.strides and x.size > 1:  # broadcast view: keep its stride-0 layout
        return [("broadcast", oc.jn(x), np.array(x), name)]
    return [(lbl, oc.jn(a), np.array(a), name) for lbl, a in oc.layouts(x)]


def check(name, x, attrs):
    for label, t, vals, in_dt in _inputs(x):
        got = oc.op(name, [t], attrs)
        got = list(got) if isinstance(got, tuple) else [got]
        want = REF[name](vals, in_dt, attrs)
        assert len(got) == len(want)
        for k, (g, (w, wdt)) in enumerate(zip(got, want)):
            where = f"{name}{attrs} {label} {in_dt}{list(vals.shape)} output {k}"
            assert dtname(g) == wdt, f"{where}: dtype {dtname(g)} != {wdt}"
            rtol, atol = TOLS.get(wdt, (0, 0))
            try:
                oc.assert_close(read(g), w, rtol=rtol, atol=atol, dtype=wdt)
            except AssertionError as e:
                raise AssertionError(f"{where}: {e}") from None


@pytest.mark.parametrize("name,idx", [(n, i) for n in CASES for i in range(len(CASES[n]))])
def test_case(name, idx):
    check(name, *CASES[name][idx])


# ------------------------------------------------------- dtype rules, errors
def test_result_dtypes():
    def d(name, x, attrs):
        return dtname(oc.op(name, [oc.jn(x)], attrs))
    assert d("sum", I32, ([], False, -1)) == "int64"
    assert d("sum", BOOL, ([0], False, -1)) == "int64"
    assert d("sum", U8, ([0], False, -1)) == "int64"
    assert d("sum", F16, ([0], False, -1)) == "float16"
    assert d("sum", I32, ([0], False, oc.dt("float64"))) == "float64"
    assert d("prod", BOOL, ([0], False, -1)) == "int64"
    assert d("mean", F16, ([0], False, -1)) == "float16"
    assert d("mean", I32, ([0], False, oc.dt("float32"))) == "float32"
    assert d("logsumexp", I64, ([0], False)) == "float32"
    assert d("all", F32, ([0], False)) == "bool"
    assert d("any", I64, ([0], False)) == "bool"
    assert d("any", U8, ([0], False)) == "uint8"  # PyTorch keeps uint8 for all/any
    assert d("argmax", F32, (0, False, 1)) == "int64"
    v, i = oc.op("max_dim", [oc.jn(I32)], (1, False))
    assert (dtname(v), dtname(i)) == ("int32", "int64")


def test_keepdim_and_zero_dim_shapes():
    x = oc.jn(F32)
    assert oc.op("sum", [x], ([0, 2], True, -1))._shape == (1, 4, 1)
    assert oc.op("sum", [x], ([], True, -1))._shape == (1, 1, 1)
    assert oc.op("sum", [x], ([], False, -1))._shape == ()
    assert oc.op("argmax", [x], (0, True, 0))._shape == (1, 1, 1)
    assert oc.op("argmax", [x], (0, False, 0))._shape == ()
    s = oc.jn(SCALAR)
    for name, attrs in [("sum", ([0], True, -1)), ("amax", ([-1], True)), ("var", ([0], 0.0, True)),
                        ("softmax", (0,)), ("argmax", (0, True, 1))]:
        assert oc.op(name, [s], attrs)._shape == (), name


def test_empty_reductions_give_identities():
    e = oc.jn(EMPTY)
    assert read(oc.op("sum", [e], ([0], False, -1))).tolist() == [0, 0, 0, 0]
    assert read(oc.op("prod", [e], ([0], False, -1))).tolist() == [1, 1, 1, 1]
    assert np.isnan(read(oc.op("mean", [e], ([0], False, -1)))).all()
    assert np.isneginf(read(oc.op("logsumexp", [e], ([0], False)))).all()
    assert read(oc.op("all", [e], ([0], False))).all()
    assert not read(oc.op("any", [e], ([0], False))).any()
    assert read(oc.op("amax", [e], ([1], False))).shape == (0,)


@pytest.mark.parametrize("name,attrs", [
    ("sum", ([2], False, -1)), ("sum", ([-3], False, -1)), ("mean", ([0, 5], False, -1)),
    ("amax", ([2], False)), ("var", ([7], 1.0, False)), ("logsumexp", ([-4], False)),
    ("all", ([2], False)), ("max_dim", (2, False)), ("min_dim", (-3, False)),
    ("argmax", (2, False, 1)), ("argmin", (-3, True, 1)), ("softmax", (2,)),
    ("log_softmax", (-3,))])
def test_bad_dim(name, attrs):
    with pytest.raises(IndexError, match=r"range of \[-2, 1\]"):
        oc.op(name, [oc.jn(ROW)], attrs)


def test_bad_dim_zero_d():
    with pytest.raises(IndexError, match=r"range of \[-1, 0\]"):
        oc.op("sum", [oc.jn(SCALAR)], ([1], False, -1))


@pytest.mark.parametrize("name,attrs", [
    ("sum", ([0, -2], False, -1)), ("prod", ([1, 1], False, -1)), ("mean", ([1, 0, 1], True, -1)),
    ("amin", ([0, 0], False)), ("std", ([-1, 1], 1.0, False)), ("any", ([1, -1], False))])
def test_duplicate_dims(name, attrs):
    with pytest.raises(RuntimeError, match="multiple times"):
        oc.op(name, [oc.jn(ROW)], attrs)


def test_mean_needs_float():
    with pytest.raises(TypeError, match=r"int32.*\.float\(\)"):
        oc.op("mean", [oc.jn(I32)], ([0], False, -1))
    with pytest.raises(TypeError, match="bool"):
        oc.op("mean", [oc.jn(BOOL)], ([], False, -1))
    with pytest.raises(TypeError, match="Optional dtype.*int64"):
        oc.op("mean", [oc.jn(F32)], ([0], False, oc.dt("int64")))


@pytest.mark.parametrize("name,attrs", [("var", ([0], 1.0, False)), ("std", ([], 1.0, False)),
                                        ("softmax", (0,)), ("log_softmax", (1,))])
def test_float_only_ops_reject_ints(name, attrs):
    with pytest.raises(TypeError, match="int64"):
        oc.op(name, [oc.jn(I64)], attrs)


@pytest.mark.parametrize("name,attrs", [("amax", ([0], False)), ("amin", ([0, 1], True)),
                                        ("max_dim", (0, False)), ("min_dim", (0, True)),
                                        ("argmax", (0, False, 1)), ("argmin", (0, False, 1))])
def test_max_like_over_empty_dim(name, attrs):
    with pytest.raises(IndexError, match="dim 0 to have non-zero size"):
        oc.op(name, [oc.jn(EMPTY)], attrs)


@pytest.mark.parametrize("name,attrs", [("amax", ([], False)), ("argmax", (0, False, 0)),
                                        ("argmin", (0, True, 0))])
def test_max_like_full_reduction_of_empty(name, attrs):
    with pytest.raises(RuntimeError, match="numel\\(\\) == 0"):
        oc.op(name, [oc.jn(EMPTY)], attrs)


# ------------------------------------------------ large inputs, thread splits
BIG = oc.rand((4 << 20,), seed=21)


def test_large_sum():
    ref = BIG.astype(np.float64).sum()
    got = read(oc.op("sum", [oc.jn(BIG)], ([], False, -1)))
    assert abs(float(got) - ref) <= 1e-6 * np.abs(BIG).astype(np.float64).sum()
    m = BIG.reshape(2048, 2048)
    for dims in ([0], [1]):
        got = read(oc.op("sum", [oc.jn(m)], (dims, False, -1)))
        want = m.astype(np.float64).sum(axis=dims[0])
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    got = read(oc.op("mean", [oc.jn(m.T)], ([], False, -1)))
    assert abs(float(got) - ref / BIG.size) < 1e-7


def test_large_softmax():
    m = BIG.reshape(2048, 2048) * 4
    for dim in (1, 0):
        want = REF["softmax"](m, "float32", (dim,))[0][0]
        got = read(oc.op("softmax", [oc.jn(m)], (dim,)))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-9)
    want = REF["log_softmax"](m, "float32", (1,))[0][0]
    got = read(oc.op("log_softmax", [oc.jn(m)], (1,)))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("threads", [1, 3, 8])
def test_split_reductions_keep_first_index(threads):
    """Long reductions are split over threads; partials must combine in order."""
    old = _C.get_num_threads()
    _C.set_num_threads(threads)
    try:
        x = np.zeros(200000, np.float32)
        x[[70000, 150000, 190000]] = 1.0
        assert read(oc.op("argmax", [oc.jn(x)], (0, False, 0))) == 70000
        assert read(oc.op("argmin", [oc.jn(-x)], (0, False, 1))) == 70000
        assert read(oc.op("argmax", [oc.jn(np.zeros(200000, np.int32))], (0, False, 0))) == 0
        x[[120000, 180000]] = np.nan
        v, i = oc.op("max_dim", [oc.jn(x)], (0, False))
        assert np.isnan(read(v)) and read(i) == 120000
        y = oc.rand((65536, 16), "float64", seed=22)   # column mode, split over rows
        check("sum", y, ([0], False, -1))
        check("var", y, ([0], 1.0, True))
        check("argmax", y, (0, False, 1))
        z = oc.rand((3, 40000), seed=23)                # a few long rows
        for name, attrs in [("sum", ([1], False, -1)), ("std", ([1], 1.0, False)),
                            ("logsumexp", ([1], False)), ("amin", ([1], False)),
                            ("argmin", (1, False, 1)), ("all", ([1], False)),
                            ("prod", ([1], False, oc.dt("int64")))]:
            check(name, z, attrs)
    finally:
        _C.set_num_threads(old)


def test_every_half_and_bfloat16_value_loads_exactly():
    """Reductions read float16/bfloat16 with their own inline converters:
    check all 65536 bit patterns of each (sum over a size-1 dim is exact)."""
    bits = np.arange(1 << 16, dtype=np.uint16)
    h = bits.view(np.float16).reshape(-1, 1)
    got = read(oc.op("sum", [oc.jn(h)], ([1], False, oc.dt("float32"))))
    np.testing.assert_array_equal(got, h[:, 0].astype(np.float32))
    t = oc.op("sum", [oc.jn(np.zeros((1 << 16, 1), np.float32))], ([-1], True, oc.dt("bfloat16")))
    ctypes.memmove(t._data_ptr, bits.ctypes.data, bits.nbytes)
    got = read(oc.op("sum", [t], ([1], False, oc.dt("float32"))))
    want = (bits.astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_array_equal(got, want)  # NaN == NaN, -0 == 0 (sum adds to +0)
