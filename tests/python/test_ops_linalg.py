"""Table-driven checks of the k_linalg.c / k_conv.c ops (mm, bmm, matmul,
addmm, linear, conv2d, max_pool2d, avg_pool2d, adaptive_avg_pool2d) against
numpy references: np.matmul in float64 for the products, a direct
kernel-offset-loop convolution, and per-window loops for the pools that
follow PyTorch's window and divisor rules."""
import math

import numpy as np
import pytest

import opcheck as oc
from janus import _C

F16_TOL = (2e-3, 2e-3)


def _f64(a):
    return np.asarray(a).astype(np.float64)


# --------------------------------------------------------------- references
def ref_matmul(a, b):
    dt = np.result_type(a, b)
    if np.issubdtype(dt, np.integer):
        return np.matmul(a.astype(np.int64), b.astype(np.int64)).astype(dt)
    return np.asarray(np.matmul(_f64(a), _f64(b)))


def ref_conv(x, w, b, stride, pad, dil, groups):
    pair = lambda v, d: (d, d) if len(v) == 0 else (v[0], v[0]) if len(v) == 1 else tuple(v)
    sh, sw = pair(stride, 1)
    ph, pw = pair(pad, 0)
    dh, dw = pair(dil, 1)
    unb = x.ndim == 3
    x = _f64(x[None] if unb else x)
    w = _f64(w)
    N, C, H, W = x.shape
    O, Cg, kh, kw = w.shape
    OH = (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    OW = (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    out = np.zeros((N, O, OH, OW))
    Og = O // groups
    for g in range(groups):
        xs = xp[:, g * Cg:(g + 1) * Cg]
        ws = w[g * Og:(g + 1) * Og]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dh:i * dh + sh * (OH - 1) + 1:sh, j * dw:j * dw + sw * (OW - 1) + 1:sw]
                out[:, g * Og:(g + 1) * Og] += np.einsum("nchw,oc->nohw", patch, ws[:, :, i, j])
    if b is not None:
        out += _f64(b)[None, :, None, None]
    return out[0] if unb else out


def _pool_out(n, k, p, s, d, ceil):
    num = n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)
    o = num // s + 1
    if ceil and (o - 1) * s >= n + p:
        o -= 1
    return o


def _pairs(k, s, p, d):
    k = (k[0], k[0]) if len(k) == 1 else tuple(k)
    s = k if len(s) == 0 else (s[0], s[0]) if len(s) == 1 else tuple(s)
    p = (0, 0) if len(p) == 0 else (p[0], p[0]) if len(p) == 1 else tuple(p)
    d = (1, 1) if len(d) == 0 else (d[0], d[0]) if len(d) == 1 else tuple(d)
    return k, s, p, d


def ref_max_pool(x, k, s, p, d, ceil):
    """PyTorch's CPU rule: windows start at the first in-range tap, a later nan
    replaces the max, ties keep the first index; indices flat in H*W."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = _pairs(k, s, p, d)
    H, W = x.shape[-2:]
    OH, OW = _pool_out(H, kh, ph, sh, dh, ceil), _pool_out(W, kw, pw, sw, dw, ceil)
    lead = x.shape[:-2]
    xf = x.reshape(-1, H, W)
    isf = np.issubdtype(x.dtype, np.floating)
    lowest = -np.inf if isf else np.iinfo(x.dtype).min
    vals = np.empty((xf.shape[0], OH, OW), dtype=x.dtype)
    idx = np.empty((xf.shape[0], OH, OW), dtype=np.int64)
    for oh in range(OH):
        h0 = oh * sh - ph
        h1 = min(h0 + (kh - 1) * dh + 1, H)
        while h0 < 0:
            h0 += dh
        for ow in range(OW):
            w0 = ow * sw - pw
            w1 = min(w0 + (kw - 1) * dw + 1, W)
            while w0 < 0:
                w0 += dw
            best = np.full(xf.shape[0], lowest, dtype=np.float64 if isf else np.int64)
            bi = np.full(xf.shape[0], h0 * W + w0, dtype=np.int64)
            for ih in range(h0, h1, dh):
                for iw in range(w0, w1, dw):
                    v = xf[:, ih, iw]
                    take = (v > best) | (np.isnan(v) if isf else False)
                    best = np.where(take, v, best)
                    bi = np.where(take, ih * W + iw, bi)
            vals[:, oh, ow] = best
            idx[:, oh, ow] = bi
    return vals.reshape(lead + (OH, OW)), idx.reshape(lead + (OH, OW))


def ref_avg_pool(x, k, s, p, ceil, cip):
    (kh, kw), (sh, sw), (ph, pw), _ = _pairs(k, s, p, [1])
    H, W = x.shape[-2:]
    OH, OW = _pool_out(H, kh, ph, sh, 1, ceil), _pool_out(W, kw, pw, sw, 1, ceil)
    isint = np.issubdtype(x.dtype, np.integer)
    out = np.zeros(x.shape[:-2] + (OH, OW), dtype=np.int64 if isint else np.float64)
    for oh in range(OH):
        h0 = oh * sh - ph
        h1 = min(h0 + kh, H + ph)
        hn = h1 - h0
        h0, h1 = max(h0, 0), min(h1, H)
        for ow in range(OW):
            w0 = ow * sw - pw
            w1 = min(w0 + kw, W + pw)
            wn = w1 - w0
            w0, w1 = max(w0, 0), min(w1, W)
            div = hn * wn if cip else (h1 - h0) * (w1 - w0)
            if isint:
                ssum = x[..., h0:h1, w0:w1].astype(np.int64).sum(axis=(-1, -2))
                q = np.abs(ssum) // div  # truncation toward zero, like C
                out[..., oh, ow] = np.where(ssum < 0, -q, q)
            else:
                out[..., oh, ow] = _f64(x[..., h0:h1, w0:w1]).sum(axis=(-1, -2)) / div
    return out.astype(x.dtype) if isint else out


def ref_adaptive(x, osz):
    OH, OW = (osz[0], osz[0]) if len(osz) == 1 else osz
    H, W = x.shape[-2:]
    out = np.zeros(x.shape[:-2] + (OH, OW))
    for oh in range(OH):
        h0, h1 = (oh * H) // OH, -((-(oh + 1) * H) // OH)
        for ow in range(OW):
            w0, w1 = (ow * W) // OW, -((-(ow + 1) * W) // OW)
            out[..., oh, ow] = _f64(x[..., h0:h1, w0:w1]).mean(axis=(-1, -2))
    return out


# ------------------------------------------------------------------ cases
R = oc.rand

CASES = {
    "mm": [
        dict(inputs=[R((3, 4)), R((4, 5), seed=1)]),
        dict(inputs=[R((1, 7), "float64"), R((7, 1), "float64", seed=1)]),
        dict(inputs=[R((5, 3), "float16"), R((3, 6), "float16", seed=1)], tol=F16_TOL),
        dict(inputs=[R((4, 6), "int64"), R((6, 3), "int64", seed=1)]),
        dict(inputs=[R((4, 6), "int32"), R((6, 3), "int32", seed=1)]),
        dict(inputs=[R((4, 6), "uint8"), R((6, 3), "uint8", seed=1)]),
        dict(inputs=[R((3, 0)), R((0, 4))]),          # k = 0 -> zeros
        dict(inputs=[R((0, 3)), R((3, 4))]),          # n = 0 -> empty
        dict(inputs=[R((3, 4)), R((4, 0))]),
        dict(inputs=[R((2, 5)), np.broadcast_to(R((1, 3)), (5, 3))]),   # stride-0 rows
        dict(inputs=[np.broadcast_to(R((3, 1)), (3, 5)), R((5, 2))]),   # stride-0 cols
        dict(inputs=[R((6, 6))[::2, ::3], R((2, 5))]),                  # arbitrary strides
    ],
    "bmm": [
        dict(inputs=[R((2, 3, 4)), R((2, 4, 5), seed=1)]),
        dict(inputs=[R((64, 6, 5), "float64"), R((64, 5, 7), "float64", seed=1)]),  # many small: pool path
        dict(inputs=[R((3, 2, 4), "int64"), R((3, 4, 2), "int64", seed=1)]),
        dict(inputs=[R((2, 3, 4), "float16"), R((2, 4, 5), "float16", seed=1)], tol=F16_TOL),
        dict(inputs=[R((0, 3, 4)), R((0, 4, 5))]),
        dict(inputs=[R((2, 3, 0)), R((2, 0, 5))]),
        dict(inputs=[np.broadcast_to(R((1, 3, 4)), (4, 3, 4)), R((4, 4, 2))]),
        dict(inputs=[R((3, 8, 9)).transpose(0, 2, 1), R((8, 3, 5)).transpose(1, 0, 2)]),
    ],
    "matmul": [
        dict(inputs=[R((4,)), R((4,), seed=1)]),                       # dot -> 0-d
        dict(inputs=[R((3, 4)), R((4,), seed=1)]),                     # mv
        dict(inputs=[R((4,)), R((4, 5), seed=1)]),                     # vm
        dict(inputs=[R((2, 3, 4)), R((4,), seed=1)]),
        dict(inputs=[R((4,)), R((2, 4, 5), seed=1)]),
        dict(inputs=[R((2, 3, 4)), R((4, 5), seed=1)]),                # folds into one GEMM
        dict(inputs=[R((3, 4)), R((2, 4, 5), seed=1)]),                # broadcast left
        dict(inputs=[R((2, 1, 3, 4)), R((5, 4, 2), seed=1)]),          # batch broadcast
        dict(inputs=[R((3, 1, 2, 4), "float64"), R((1, 4, 4, 3), "float64", seed=1)]),
        dict(inputs=[R((2, 3, 4), "int64"), R((4,), "int64", seed=1)]),
        dict(inputs=[R((2, 3, 4), "float16"), R((4, 2), "float16", seed=1)], tol=F16_TOL),
        dict(inputs=[R((0,)), R((0,))]),                                # empty dot -> 0
        dict(inputs=[R((2, 0, 4)), R((4, 3))]),
        dict(inputs=[R((2, 5, 3)).transpose(1, 0, 2), R((3, 2))]),      # batch not foldable
        dict(inputs=[R((4, 3, 2)).transpose(2, 1, 0), R((2, 4, 5))]),   # transposed matrices
    ],
    "addmm": [
        dict(inputs=[R((5,)), R((3, 4), seed=1), R((4, 5), seed=2)], attrs=(1.0, 1.0)),
        dict(inputs=[R((3, 5)), R((3, 4), seed=1), R((4, 5), seed=2)], attrs=(0.5, -2.0)),
        dict(inputs=[R((3, 1), "float64"), R((3, 4), "float64", seed=1), R((4, 5), "float64", seed=2)],
             attrs=(2.0, 1.0)),
        dict(inputs=[R(()), R((3, 4), seed=1), R((4, 5), seed=2)], attrs=(1.0, 1.0)),
        dict(inputs=[np.full((5,), np.nan, np.float32), R((3, 4), seed=1), R((4, 5), seed=2)],
             attrs=(0.0, 1.0)),                                         # beta = 0 ignores nan bias
        dict(inputs=[R((1, 5), "int64"), R((3, 4), "int64", seed=1), R((4, 5), "int64", seed=2)],
             attrs=(2.0, 3.0)),
        dict(inputs=[R((5,), "float16"), R((3, 4), "float16", seed=1), R((4, 5), "float16", seed=2)],
             attrs=(1.0, 1.0), tol=F16_TOL),
        dict(inputs=[R((2, 3)), R((2, 0), seed=1), R((0, 3), seed=2)], attrs=(3.0, 1.0)),  # k = 0
    ],
    "linear": [
        dict(inputs=[R((3, 4)), R((5, 4), seed=1), R((5,), seed=2)]),
        dict(inputs=[R((2, 3, 4)), R((5, 4), seed=1)]),
        dict(inputs=[R((4,)), R((5, 4), seed=1), R((5,), seed=2)]),
        dict(inputs=[R((2, 3, 4)), R((4,), seed=1)]),                   # 1-D weight
        dict(inputs=[R((3, 2, 4), "float64").transpose(1, 0, 2), R((6, 4), "float64", seed=1),
                     R((6,), "float64", seed=2)]),
        dict(inputs=[R((2, 3, 4), "int64"), R((5, 4), "int64", seed=1), R((5,), "int64", seed=2)]),
        dict(inputs=[R((2, 3, 4), "float16"), R((5, 4), "float16", seed=1), R((5,), "float16", seed=2)],
             tol=F16_TOL),
        dict(inputs=[R((0, 4)), R((5, 4), seed=1), R((5,), seed=2)]),
        dict(inputs=[R((3, 0)), R((5, 0), seed=1), R((5,), seed=2)]),  # in_features = 0 -> bias
    ],
    "conv2d": [
        dict(inputs=[R((2, 3, 7, 8)), R((4, 3, 3, 3), seed=1), R((4,), seed=2)], attrs=([1], [0], [1], 1)),
        dict(inputs=[R((2, 3, 7, 8)), R((4, 3, 3, 2), seed=1)], attrs=([2, 1], [1, 2], [1], 1)),
        dict(inputs=[R((1, 4, 9, 9), "float64"), R((6, 2, 3, 3), "float64", seed=1),
                     R((6,), "float64", seed=2)], attrs=([2], [2], [2], 2)),
        dict(inputs=[R((3, 6, 5, 5)), R((6, 1, 3, 3), seed=1)], attrs=([1], [1], [1], 6)),  # depthwise
        dict(inputs=[R((3, 7, 6)), R((2, 3, 2, 2), seed=1), R((2,), seed=2)], attrs=([1], [0], [1], 1)),
        dict(inputs=[R((2, 4, 5, 6)), R((3, 4, 1, 1), seed=1), R((3,), seed=2)], attrs=([], [], [], 1)),  # 1x1
        dict(inputs=[R((2, 5, 6, 4)).transpose(0, 3, 1, 2), R((3, 4, 1, 1), seed=1)],
             attrs=([1], [0], [1], 1)),                                 # 1x1, channels-last
        dict(inputs=[R((2, 4, 5, 6)), R((6, 2, 1, 1), seed=1)], attrs=([1], [0], [1], 2)),  # 1x1 groups
        dict(inputs=[R((2, 3, 6, 6), "float16"), R((4, 3, 3, 3), "float16", seed=1),
                     R((4,), "float16", seed=2)], attrs=([1], [1], [1], 1), tol=(5e-3, 5e-3)),
        dict(inputs=[R((0, 3, 5, 5)), R((4, 3, 3, 3), seed=1)], attrs=([1], [0], [1], 1)),
        dict(inputs=[R((2, 3, 5, 5)), R((4, 3, 5, 5), seed=1)], attrs=([1], [0], [1], 1)),  # 1x1 output
        dict(inputs=[R((2, 3, 12, 10))[:, :, ::2, ::2], R((4, 3, 3, 3), seed=1)], attrs=([1], [1], [1], 1)),
        dict(inputs=[R((8, 3, 6, 6)), R((5, 3, 3, 3), seed=1), R((5,), seed=2)],
             attrs=([1], [1], [1], 1)),                                 # per-batch parallel path
    ],
    "max_pool2d": [
        dict(inputs=[R((2, 3, 6, 6))], attrs=([2], [], [0], [1], 0)),
        dict(inputs=[R((2, 3, 7, 7))], attrs=([3], [2], [1], [1], 0)),
        dict(inputs=[R((2, 3, 7, 7))], attrs=([3], [2], [1], [1], 1)),  # ceil_mode
        dict(inputs=[R((1, 2, 8, 9), "float64")], attrs=([3, 2], [2, 3], [1, 1], [2, 1], 1)),
        dict(inputs=[R((3, 5, 5))], attrs=([2], [1], [1], [1], 0)),       # 3-D input
        dict(inputs=[R((2, 3, 6, 6), "int64")], attrs=([2], [2], [1], [1], 0)),
        dict(inputs=[R((2, 3, 6, 6), "int32")], attrs=([3], [2], [1], [1], 1)),
        dict(inputs=[R((2, 3, 6, 6), "uint8")], attrs=([2], [], [0], [1], 0)),
        dict(inputs=[R((2, 3, 6, 6), "float16")], attrs=([3], [2], [1], [1], 0), tol=(0, 0)),
        dict(inputs=[R((0, 3, 6, 6))], attrs=([2], [], [0], [1], 0)),
        dict(inputs=[np.where(R((1, 2, 4, 4)) > 1.0, np.nan, R((1, 2, 4, 4), seed=3)).astype(np.float32)],
             attrs=([2], [], [0], [1], 0)),                             # nan propagates
        dict(inputs=[np.zeros((1, 1, 4, 4), np.float32)], attrs=([3], [1], [1], [1], 0)),  # ties: first
        dict(inputs=[R((2, 7, 6, 3)).transpose(0, 3, 1, 2)], attrs=([2], [], [0], [1], 1)),  # channels-last
        # the 2x2 stride-2 fast path: odd sizes (last row/col unused), strided rows, float64,
        # ceil_mode (falls back), and ties / -inf / several nans per window in every position
        dict(inputs=[R((2, 3, 7, 9))], attrs=([2], [2], [0], [1], 0)),
        dict(inputs=[R((2, 3, 12, 8))[:, :, ::2, :]], attrs=([2], [], [0], [1], 0)),
        dict(inputs=[R((2, 3, 6, 10), "float64")], attrs=([2], [2], [0], [1], 0)),
        dict(inputs=[R((2, 3, 7, 9), "float64")], attrs=([2], [], [0], [1], 1)),
        dict(inputs=[np.random.default_rng(5).choice(np.array([-np.inf, 0.0, 1.0, np.nan], np.float32),
                                                     (2, 3, 8, 10))], attrs=([2], [], [0], [1], 0)),
        dict(inputs=[np.random.default_rng(6).choice(np.array([-np.inf, 0.0, 1.0, np.nan]), (1, 4, 6, 6))],
             attrs=([2], [2], [0], [1], 0)),
        dict(inputs=[np.random.default_rng(7).choice(np.array([-np.inf, 0.0, 1.0, np.nan], np.float32),
                                                     (2, 3, 9, 34))], attrs=([2], [], [0], [1], 0)),  # 8 + overlap
        dict(inputs=[np.random.default_rng(8).choice(np.array([-np.inf, 0.0, 1.0, np.nan], np.float32),
                                                     (1, 2, 6, 7))], attrs=([2], [], [0], [1], 0)),   # 3 wide
    ],
    "avg_pool2d": [
        dict(inputs=[R((2, 3, 6, 6))], attrs=([2], [], [0], 0, 1)),
        dict(inputs=[R((2, 3, 7, 7))], attrs=([3], [2], [1], 0, 1)),
        dict(inputs=[R((2, 3, 7, 7))], attrs=([3], [2], [1], 0, 0)),
        dict(inputs=[R((2, 3, 6, 6))], attrs=([3], [2], [1], 1, 1)),    # ceil windows off the end
        dict(inputs=[R((2, 3, 6, 6))], attrs=([3], [2], [1], 1, 0)),
        dict(inputs=[R((1, 2, 5, 8), "float64")], attrs=([2, 3], [2, 2], [1, 1], 1, 1)),
        dict(inputs=[R((3, 5, 5))], attrs=([2], [1], [1], 0, 1)),
        dict(inputs=[R((2, 3, 6, 6), "int64", lo=-4, hi=4)], attrs=([3], [2], [1], 1, 1)),
        dict(inputs=[R((2, 3, 6, 6), "float16")], attrs=([2], [2], [1], 0, 0), tol=F16_TOL),
        dict(inputs=[R((0, 3, 6, 6))], attrs=([2], [], [0], 0, 1)),
        dict(inputs=[R((2, 6, 6, 3)).transpose(0, 3, 1, 2)], attrs=([3], [3], [1], 1, 0)),
    ],
    "adaptive_avg_pool2d": [
        dict(inputs=[R((2, 3, 6, 6))], attrs=([3],)),
        dict(inputs=[R((2, 3, 7, 5))], attrs=([3, 4],)),
        dict(inputs=[R((2, 3, 3, 4), "float64")], attrs=([5, 7],)),   # output larger than input
        dict(inputs=[R((3, 9, 9))], attrs=([1],)),
        dict(inputs=[R((2, 3, 5, 5), "float16")], attrs=([2],), tol=F16_TOL),
        dict(inputs=[R((2, 3, 5, 5))], attrs=([0, 2],)),
        dict(inputs=[R((0, 3, 5, 5))], attrs=([2],)),
        dict(inputs=[R((2, 5, 5, 3)).transpose(0, 3, 1, 2)], attrs=([4],)),
    ],
}


def reference(name, inputs, attrs):
    if name in ("mm", "bmm", "matmul"):
        return [ref_matmul(*inputs)]
    if name == "addmm":
        beta, alpha = attrs
        bias, a, b = inputs
        prod = ref_matmul(a, b)
        if np.issubdtype(a.dtype, np.integer):
            r = int(alpha) * prod.astype(np.int64) + (int(beta) * bias.astype(np.int64) if beta else 0)
            return [np.broadcast_to(r, prod.shape).astype(a.dtype)]
        r = alpha * _f64(prod) + (beta * _f64(bias) if beta else 0.0)
        return [np.broadcast_to(r, prod.shape)]
    if name == "linear":
        x, w = inputs[:2]
        r = ref_matmul(x, w.T if w.ndim == 2 else w)
        if len(inputs) == 3:
            r = r + inputs[2]
        return [r.astype(x.dtype) if np.issubdtype(x.dtype, np.integer) else r]
    if name == "conv2d":
        x, w = inputs[:2]
        return [ref_conv(x, w, inputs[2] if len(inputs) == 3 else None, *attrs)]
    if name == "max_pool2d":
        k, s, p, d, ceil = attrs
        return list(ref_max_pool(inputs[0], k, s, p, d, ceil))
    if name == "avg_pool2d":
        k, s, p, ceil, cip = attrs
        return [ref_avg_pool(inputs[0], k, s, p, ceil, cip)]
    if name == "adaptive_avg_pool2d":
        return [ref_adaptive(inputs[0], attrs[0])]
    raise KeyError(name)


def _check(name, case, inputs):
    attrs = case.get("attrs", ())
    got = oc.op(name, [oc.jn(a) for a in inputs], attrs)
    got = list(got) if isinstance(got, tuple) else [got]
    want = reference(name, inputs, attrs)
    dtype = str(inputs[0].dtype) if name != "addmm" else str(inputs[1].dtype)
    assert _C.dtype_names[got[0]._dtype_id] == dtype
    rtol, atol = case.get("tol", oc.TOL.get(dtype, (0, 0)))
    if dtype == "float32":
        rtol, atol = case.get("tol", (2e-5, 2e-5))
    for g, w in zip(got, want):
        oc.assert_close(g, np.asarray(w), rtol=rtol, atol=atol, dtype=dtype)


def _ids():
    return [f"{n}-{i}" for n, cs in CASES.items() for i in range(len(cs))]


@pytest.mark.parametrize("name,case", [(n, c) for n, cs in CASES.items() for c in cs], ids=_ids())
def test_case(name, case):
    _check(name, case, case["inputs"])


# every input of every case also in the non-contiguous layouts of opcheck
@pytest.mark.parametrize("name,case", [(n, c) for n, cs in CASES.items() for c in cs], ids=_ids())
def test_case_layouts(name, case):
    inputs = case["inputs"]
    for k, a in enumerate(inputs):
        for label, v in oc.layouts(a)[1:]:
            _check(name, case, inputs[:k] + [v] + inputs[k + 1:])


# ------------------------------------------------------ specific behaviour
def test_large_gemm_vs_numpy():
    a, b = R((1024, 1024), seed=5), R((1024, 1024), seed=6)
    got = oc.npy(oc.op("mm", [oc.jn(a), oc.jn(b)]))
    want = _f64(a) @ _f64(b)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    # the transposed operand reaches BLAS without a copy; same numbers
    got_t = oc.npy(oc.op("mm", [oc.jn(np.ascontiguousarray(a.T).T), oc.jn(b)]))
    np.testing.assert_allclose(got_t, want, rtol=1e-4, atol=1e-3)


def test_int64_matmul_exact():
    a = np.random.default_rng(0).integers(-10**6, 10**6, size=(17, 33)).astype(np.int64)
    b = np.random.default_rng(1).integers(-10**6, 10**6, size=(33, 9)).astype(np.int64)
    got = oc.npy(oc.op("matmul", [oc.jn(a), oc.jn(b)]))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, a @ b)
    # wrap-around like PyTorch/numpy int64, not UB
    big = np.full((2, 2), 2**62, np.int64)
    np.testing.assert_array_equal(oc.npy(oc.op("mm", [oc.jn(big), oc.jn(big)])), big @ big)


def test_matmul_dot_is_0d():
    r = oc.op("matmul", [oc.jn(R((5,))), oc.jn(R((5,), seed=1))])
    assert r.ndim == 0 and r._shape == ()


def test_matmul_k0_zeros():
    r = oc.npy(oc.op("matmul", [oc.jn(R((2, 3, 0))), oc.jn(R((0, 4)))]))
    assert r.shape == (2, 3, 4) and not r.any()


def test_large_conv_and_pool():
    x = R((1, 16, 256, 256), seed=7)  # ~1M floats in, 4M-float plane work
    w = R((8, 16, 3, 3), seed=8)
    got = oc.npy(oc.op("conv2d", [oc.jn(x), oc.jn(w)], ([1], [1], [1], 1)))
    np.testing.assert_allclose(got, ref_conv(x, w, None, [1], [1], [1], 1), rtol=1e-4, atol=1e-4)
    x = R((4, 16, 256, 256), seed=9)  # 4M floats
    v, i = oc.op("max_pool2d", [oc.jn(x)], ([2], [], [0], [1], 0))
    want = x.reshape(4, 16, 128, 2, 128, 2).max(axis=(3, 5))
    np.testing.assert_array_equal(oc.npy(v), want)
    a = oc.npy(oc.op("avg_pool2d", [oc.jn(x)], ([2], [], [0], 0, 1)))
    np.testing.assert_allclose(a, _f64(x).reshape(4, 16, 128, 2, 128, 2).mean(axis=(3, 5)), rtol=1e-5, atol=1e-6)


def _bf16(a):
    try:
        return oc.op("cast", [oc.jn(np.asarray(a, np.float32))], (oc.dt("bfloat16"),))
    except NotImplementedError:
        pytest.skip("cast to bfloat16 is not implemented in this build")


def test_bfloat16_products():
    a, b = R((3, 4)), R((4, 5), seed=1)
    got = oc.npy(oc.op("mm", [_bf16(a), _bf16(b)]))
    np.testing.assert_allclose(got, _f64(a) @ _f64(b), rtol=3e-2, atol=3e-2)
    x, w = R((1, 2, 5, 5)), R((3, 2, 3, 3), seed=1)
    got = oc.npy(oc.op("conv2d", [_bf16(x), _bf16(w)], ([1], [1], [1], 1)))
    np.testing.assert_allclose(got, ref_conv(x, w, None, [1], [1], [1], 1), rtol=5e-2, atol=5e-2)


# ------------------------------------------------------------------ errors
def _raises(exc, match, name, inputs, attrs=()):
    with pytest.raises(exc, match=match):
        oc.op(name, [oc.jn(a) if isinstance(a, np.ndarray) else a for a in inputs], attrs)


def test_product_errors():
    _raises(RuntimeError, r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)", "mm",
            [R((2, 3)), R((4, 5))])
    _raises(RuntimeError, r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)", "matmul",
            [R((2, 3)), R((4, 5))])
    _raises(RuntimeError, r"mat1 and mat2 shapes cannot be multiplied \(6x4 and 6x5\)", "linear",
            [R((2, 3, 4)), R((5, 6))])
    _raises(RuntimeError, r"\[2, 3, 4\] and \[2, 5, 6\] cannot be multiplied", "matmul",
            [R((2, 3, 4)), R((2, 5, 6))])
    _raises(RuntimeError, r"batch dims of \[2, 3, 4\] and \[3, 4, 5\]", "matmul", [R((2, 3, 4)), R((3, 4, 5))])
    _raises(RuntimeError, r"inconsistent tensor size.*\[3\].*\[4\]", "matmul", [R((3,)), R((4,))])
    _raises(RuntimeError, "at least 1D, but they are 0D and 2D", "matmul", [R(()), R((2, 2))])
    _raises(RuntimeError, "mat1 must be a matrix", "mm", [R((2, 2, 2)), R((2, 2))])
    _raises(RuntimeError, "batch1 must be a 3D tensor", "bmm", [R((2, 2)), R((2, 2, 2))])
    _raises(RuntimeError, r"batch2 tensor to be: \[2, 4\] but got: \[2, 5\]", "bmm", [R((2, 3, 4)), R((2, 5, 6))])
    _raises(RuntimeError, r"bias \(self\) of shape \[3\] can't be broadcast to the result shape \[2, 4\]",
            "addmm", [R((3,)), R((2, 5)), R((5, 4))], (1.0, 1.0))
    _raises(RuntimeError, r"bias of shape \[4\] can't be broadcast to the output shape \[2, 5\]",
            "linear", [R((2, 3)), R((5, 3)), R((4,))])
    _raises(RuntimeError, "weight must be", "linear", [R((2, 3)), R((5, 3, 1))])


def test_product_dtype_errors():
    _raises(TypeError, "expected m1 and m2 to have the same dtype, but got: float32 != float64", "mm",
            [R((2, 3)), R((3, 4), "float64")])
    _raises(TypeError, "same dtype, but got: float32 != int64", "matmul", [R((2, 3)), R((3,), "int64")])
    _raises(TypeError, "same dtype", "bmm", [R((1, 2, 3), "float16"), R((1, 3, 4))])
    _raises(TypeError, "bias and mat1 to have the same dtype, but got: float64 != float32", "addmm",
            [R((4,), "float64"), R((2, 3)), R((3, 4))], (1.0, 1.0))
    _raises(TypeError, "bias and mat1", "linear", [R((2, 3)), R((4, 3)), R((4,), "float64")])
    _raises(TypeError, "'bool'", "mm", [R((2, 2), "bool"), R((2, 2), "bool")])
    _raises(ValueError, "alpha must not be a floating point", "addmm",
            [R((2,), "int64"), R((2, 2), "int64"), R((2, 2), "int64")], (1.0, 0.5))


def test_conv_errors():
    c = ([1], [0], [1], 1)
    _raises(RuntimeError, r"expected input\[1, 4, 5, 5\] to have 3 channels, but got 4", "conv2d",
            [R((1, 4, 5, 5)), R((8, 3, 3, 3))], c)
    _raises(RuntimeError, "divisible by 3 at dimension 0", "conv2d", [R((1, 6, 5, 5)), R((8, 2, 3, 3))],
            ([1], [0], [1], 3))
    _raises(RuntimeError, r"Kernel size: \(3 x 3\).*can't be greater than actual input size", "conv2d",
            [R((1, 3, 2, 2)), R((4, 3, 3, 3))], c)
    _raises(RuntimeError, "3D \\(unbatched\\) or 4D", "conv2d", [R((3, 5)), R((4, 3, 3, 3))], c)
    _raises(RuntimeError, "4-D weight", "conv2d", [R((1, 3, 5, 5)), R((4, 3, 3))], c)
    _raises(RuntimeError, "expected bias to be 1-dimensional with 4 elements", "conv2d",
            [R((1, 3, 5, 5)), R((4, 3, 3, 3)), R((5,))], c)
    _raises(TypeError, r"input type \(float32\) and weight type \(float64\)", "conv2d",
            [R((1, 3, 5, 5)), R((4, 3, 3, 3), "float64")], c)
    _raises(TypeError, "bias type", "conv2d", [R((1, 3, 5, 5)), R((4, 3, 3, 3)), R((4,), "float64")], c)
    _raises(TypeError, "'int64'", "conv2d", [R((1, 3, 5, 5), "int64"), R((4, 3, 3, 3), "int64")], c)
    _raises(ValueError, "non-positive stride", "conv2d", [R((1, 3, 5, 5)), R((4, 3, 3, 3))], ([0], [0], [1], 1))
    _raises(ValueError, "negative padding", "conv2d", [R((1, 3, 5, 5)), R((4, 3, 3, 3))], ([1], [-1], [1], 1))
    _raises(ValueError, "non-positive groups", "conv2d", [R((1, 3, 5, 5)), R((4, 3, 3, 3))], ([1], [0], [1], 0))
    _raises(ValueError, "1 or 2", "conv2d", [R((1, 3, 5, 5)), R((4, 3, 3, 3))], ([1, 1, 1], [0], [1], 1))


def test_pool_errors():
    _raises(ValueError, "pad should be smaller than or equal to half of kernel size", "max_pool2d",
            [R((1, 1, 5, 5))], ([2], [], [2], [1], 0))
    _raises(ValueError, "pad should be smaller than or equal to half", "avg_pool2d",
            [R((1, 1, 5, 5))], ([3], [], [2], 0, 1))
    _raises(RuntimeError, r"Calculated output size: \(1x0x0\). Output size is too small", "max_pool2d",
            [R((1, 1, 2, 2))], ([3], [], [0], [1], 0))
    _raises(RuntimeError, "3D or 4D", "max_pool2d", [R((4, 4))], ([2], [], [0], [1], 0))
    _raises(RuntimeError, "non-zero size for non-batch dimensions", "avg_pool2d", [R((1, 0, 4, 4))],
            ([2], [], [0], 0, 1))
    _raises(ValueError, "kernel size should be greater than zero", "max_pool2d", [R((1, 1, 4, 4))],
            ([0], [], [0], [1], 0))
    _raises(ValueError, "kernel_size must be", "max_pool2d", [R((1, 1, 4, 4))], ([], [], [0], [1], 0))
    _raises(ValueError, "dilation should be greater than zero", "max_pool2d", [R((1, 1, 4, 4))],
            ([2], [], [0], [0], 0))
    _raises(TypeError, "'bool'", "max_pool2d", [R((1, 1, 4, 4), "bool")], ([2], [], [0], [1], 0))
    _raises(TypeError, "'int32'", "avg_pool2d", [R((1, 1, 4, 4), "int32")], ([2], [], [0], 0, 1))
    _raises(TypeError, "'int64'", "adaptive_avg_pool2d", [R((1, 1, 4, 4), "int64")], ([2],))
    _raises(ValueError, "greater than or equal to 0", "adaptive_avg_pool2d", [R((1, 1, 4, 4))], ([-1, 2],))
    _raises(RuntimeError, "non-zero size", "adaptive_avg_pool2d", [R((1, 3, 0, 4))], ([2],))
