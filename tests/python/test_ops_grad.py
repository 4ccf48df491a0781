"""Table-driven checks of the k_grad.c ops (conv2d_input_grad,
conv2d_weight_grad, avg_pool2d_backward, adaptive_avg_pool2d_backward,
max_pool2d_backward).

Two independent references: direct numpy implementations (the transpose of
a kernel-offset-loop convolution, per-window scatter loops for the pools
with PyTorch's window and divisor rules), and the adjoint identity
<f(x), g> == <x, f^T(g)> in float64 with the forward ops (conv2d,
avg_pool2d, adaptive_avg_pool2d) run through the dispatcher, which checks
that each backward is exactly the transpose of the forward Janus runs."""
import numpy as np
import pytest

import opcheck as oc
from janus import _C


def _f64(a):
    return np.asarray(a).astype(np.float64)


def _pair(v, d):
    v = list(v)
    return (d, d) if not v else (v[0], v[0]) if len(v) == 1 else tuple(v)


# ------------------------------------------------------------ conv geometry
def conv_out_shape(xshape, wshape, stride, pad, dil):
    (sh, sw), (ph, pw), (dh, dw) = _pair(stride, 1), _pair(pad, 0), _pair(dil, 1)
    H, W = xshape[-2:]
    kh, kw = wshape[2:]
    OH = (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    OW = (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    return tuple(xshape[:-3]) + (wshape[0], OH, OW)


def _taps(xshape, wshape, stride, pad, dil):
    """(i, j, row slice, col slice) into the padded input for every kernel tap."""
    (sh, sw), (dh, dw) = _pair(stride, 1), _pair(dil, 1)
    OH, OW = conv_out_shape(xshape, wshape, stride, pad, dil)[-2:]
    for i in range(wshape[2]):
        for j in range(wshape[3]):
            yield i, j, slice(i * dh, i * dh + sh * (OH - 1) + 1, sh), slice(j * dw, j * dw + sw * (OW - 1) + 1, sw)


# --------------------------------------------------------------- references
def ref_conv_input_grad(g, w, input_size, stride, pad, dil, groups):
    """The transpose of conv2d: every tap scatters W^T @ grad back."""
    (ph, pw) = _pair(pad, 0)
    unb = len(input_size) == 3
    g = _f64(g[None] if unb else g)
    w = _f64(w)
    N, C, H, W = (1,) + tuple(input_size) if unb else tuple(input_size)
    O, Cg = w.shape[:2]
    Og = O // groups
    dxp = np.zeros((N, C, H + 2 * ph, W + 2 * pw))
    for gr in range(groups):
        gg, wg = g[:, gr * Og:(gr + 1) * Og], w[gr * Og:(gr + 1) * Og]
        for i, j, rs, cs in _taps((N, C, H, W), w.shape, stride, pad, dil):
            dxp[:, gr * Cg:(gr + 1) * Cg, rs, cs] += np.einsum("nohw,oc->nchw", gg, wg[:, :, i, j])
    dx = dxp[:, :, ph:ph + H, pw:pw + W]
    return dx[0] if unb else dx


def ref_conv_weight_grad(g, x, weight_size, stride, pad, dil, groups):
    (ph, pw) = _pair(pad, 0)
    unb = x.ndim == 3
    g = _f64(g[None] if unb else g)
    x = _f64(x[None] if unb else x)
    O, Cg = weight_size[:2]
    Og = O // groups
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    dw = np.zeros(tuple(weight_size))
    for gr in range(groups):
        gg, xg = g[:, gr * Og:(gr + 1) * Og], xp[:, gr * Cg:(gr + 1) * Cg]
        for i, j, rs, cs in _taps(x.shape, weight_size, stride, pad, dil):
            dw[gr * Og:(gr + 1) * Og, :, i, j] = np.einsum("nohw,nchw->oc", gg, xg[:, :, rs, cs])
    return dw


def pool_out(n, k, p, s, ceil):
    o = (n + 2 * p - (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    if ceil and (o - 1) * s >= n + p:
        o -= 1
    return o


def avg_geom(input_size, k, s, p, ceil):
    (kh, kw), (ph, pw) = _pair(k, 0), _pair(p, 0)
    sh, sw = _pair(s, 0) if list(s) else (kh, kw)
    H, W = input_size[-2:]
    return (kh, kw), (sh, sw), (ph, pw), pool_out(H, kh, ph, sh, ceil), pool_out(W, kw, pw, sw, ceil)


def ref_avg_backward(g, input_size, k, s, p, ceil, cip):
    (kh, kw), (sh, sw), (ph, pw), OH, OW = avg_geom(input_size, k, s, p, ceil)
    H, W = input_size[-2:]
    g = _f64(g)
    dx = np.zeros(tuple(input_size))
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
            if h0 >= h1 or w0 >= w1:
                continue
            div = hn * wn if cip else (h1 - h0) * (w1 - w0)
            dx[..., h0:h1, w0:w1] += g[..., oh, ow, None, None] / div
    return dx


def ref_adaptive_backward(g, input_size):
    H, W = input_size[-2:]
    OH, OW = g.shape[-2:]
    g = _f64(g)
    dx = np.zeros(tuple(input_size))
    for oh in range(OH):
        h0, h1 = (oh * H) // OH, -((-(oh + 1) * H) // OH)
        for ow in range(OW):
            w0, w1 = (ow * W) // OW, -((-(ow + 1) * W) // OW)
            dx[..., h0:h1, w0:w1] += g[..., oh, ow, None, None] / ((h1 - h0) * (w1 - w0))
    return dx


# -------------------------------------------------------------------- cases
# conv ops: x shape, w shape, (stride, padding, dilation, groups)
_CONV = [
    dict(x=(2, 3, 7, 6), w=(4, 3, 3, 3), attrs=([1], [0], [1], 1)),
    dict(x=(2, 4, 8, 9), w=(6, 2, 3, 2), attrs=([2, 1], [1, 0], [1, 2], 2)),
    dict(x=(3, 4, 8, 8), w=(4, 1, 3, 3), attrs=([2], [1], [1], 4)),                  # depthwise, stride floors
    dict(x=(1, 2, 9, 7), w=(3, 2, 2, 3), attrs=([3, 2], [2, 1], [2, 1], 1)),         # N=1, big padding
    dict(x=(2, 6, 5, 5), w=(6, 3, 1, 1), attrs=([], [], [], 2)),                     # 1x1, default attrs
    dict(x=(3, 5, 6), w=(4, 3, 3, 2), attrs=([1, 2], [1], [1], 1)),                  # unbatched
    dict(x=(2, 3, 4, 4), w=(5, 3, 4, 4), attrs=([1], [0], [1], 1)),                  # kernel = input: 1x1 out
    dict(x=(4, 8, 14, 14), w=(16, 8, 3, 3), attrs=([1], [1], [1], 1)),               # BLAS-sized per image
    dict(x=(5, 2, 3, 11), w=(2, 1, 3, 3), attrs=([1, 3], [0, 1], [1], 2)),           # small batch products
    dict(x=(3, 3, 40, 40), w=(16, 3, 3, 3), attrs=([1], [1], [1], 1)),               # thin GEMMs in slices
    dict(x=(0, 3, 5, 5), w=(4, 3, 3, 3), attrs=([1], [1], [1], 1)),                  # empty batch
    dict(x=(2, 0, 5, 5), w=(4, 0, 3, 3), attrs=([1], [1], [1], 1)),                  # no input channels
    dict(x=(2, 3, 5, 5), w=(0, 3, 3, 3), attrs=([1], [1], [1], 1)),                  # no output channels
    # stride 1, undilated: the wide-row layout (LeNet's two layers, asymmetric padding with groups)
    dict(x=(3, 1, 28, 28), w=(6, 1, 5, 5), attrs=([1], [2], [1], 1)),
    dict(x=(3, 6, 14, 14), w=(16, 6, 5, 5), attrs=([1], [0], [1], 1)),
    dict(x=(2, 4, 7, 9), w=(6, 2, 3, 3), attrs=([1], [1, 2], [1], 2)),
    dict(x=(3, 8, 9, 9), w=(32, 4, 5, 5), attrs=([1], [0], [1], 2)),                # weight grad in row blocks 75 + 25
]
_AVG = [  # input size, (kernel, stride, padding, ceil_mode, count_include_pad)
    dict(x=(2, 3, 6, 5), attrs=([2], [], [0], False, True)),
    dict(x=(2, 3, 7, 5), attrs=([3, 2], [2, 2], [1, 1], True, False)),
    dict(x=(2, 3, 7, 5), attrs=([3, 2], [2, 2], [1, 1], True, True)),
    dict(x=(1, 2, 8, 8), attrs=([3], [2], [1], False, False)),
    dict(x=(1, 2, 8, 8), attrs=([3], [2], [1], False, True)),
    dict(x=(2, 5, 6), attrs=([2, 3], [3, 1], [0, 1], True, True)),                   # unbatched
    dict(x=(1, 1, 5, 5), attrs=([4], [3], [2], True, True)),                         # ceil window clipped at pad
    dict(x=(1, 1, 5, 5), attrs=([4], [3], [2], True, False)),
    dict(x=(3, 2, 10, 9), attrs=([5, 3], [1, 2], [2, 0], False, False)),
    dict(x=(0, 2, 4, 4), attrs=([2], [], [0], False, True)),                          # empty batch
]
_ADAPTIVE = [  # input size, grad_out's plane (= output_size)
    dict(x=(2, 3, 7, 5), out=(3, 2)),
    dict(x=(2, 3, 8, 8), out=(4, 4)),
    dict(x=(1, 2, 5, 7), out=(1, 1)),
    dict(x=(1, 2, 3, 4), out=(5, 7)),                                                # output larger than input
    dict(x=(3, 10, 9), out=(4, 3)),                                                  # unbatched
    dict(x=(2, 2, 6, 6), out=(0, 3)),                                                # empty output
    dict(x=(0, 2, 6, 6), out=(2, 3)),                                                # empty batch
]

_MAX = [  # input size, max_pool2d's (kernel, stride, padding, dilation, ceil_mode) giving the indices
    dict(x=(2, 3, 6, 6), attrs=([2], [], [0], [1], False)),
    dict(x=(2, 3, 7, 6), attrs=([3], [2], [1], [1], False)),                        # overlaps: shared argmaxes add
    dict(x=(2, 3, 7, 7), attrs=([3], [2], [1], [1], True)),                         # ceil_mode
    dict(x=(3, 5, 5), attrs=([2], [1], [1], [1], False)),                           # unbatched
    dict(x=(1, 2, 8, 9), attrs=([3, 2], [2, 3], [1, 1], [2, 1], True)),             # dilation
    dict(x=(0, 3, 6, 6), attrs=([2], [], [0], [1], False)),                         # empty batch
]

CASES = {
    "conv2d_input_grad": _CONV,
    "conv2d_weight_grad": _CONV,
    "avg_pool2d_backward": _AVG,
    "adaptive_avg_pool2d_backward": _ADAPTIVE,
    "max_pool2d_backward": _MAX,
}


def ref_max_backward(g, idx, input_size):
    """zeros, then each grad added at its window's flat H*W argmax."""
    lead, (H, W) = tuple(input_size[:-2]), tuple(input_size[-2:])
    planes = int(np.prod(lead))
    dx = np.zeros((planes, H * W))
    per = idx.shape[-2] * idx.shape[-1]
    np.add.at(dx, (np.arange(planes)[:, None], idx.reshape(planes, per)), _f64(g).reshape(planes, per))
    return dx.reshape(tuple(input_size))


def _grad_shape(name, case):
    assert name != "max_pool2d_backward"  # its grad_out's shape comes from the forward in _inputs
    if name.startswith("conv2d"):
        return conv_out_shape(case["x"], case["w"], *case["attrs"][:3])
    if name == "avg_pool2d_backward":
        _, _, _, OH, OW = avg_geom(case["x"], *case["attrs"][:4])
        return tuple(case["x"][:-2]) + (OH, OW)
    return tuple(case["x"][:-2]) + tuple(case["out"])


def _inputs(name, case, dtype, seed=0):
    """(numpy inputs, attrs, reference) of one case."""
    g = None if name == "max_pool2d_backward" else oc.rand(_grad_shape(name, case), dtype, seed=seed)
    if name == "conv2d_input_grad":
        w = oc.rand(case["w"], dtype, seed=seed + 1)
        attrs = (list(case["x"]),) + tuple(case["attrs"])
        return [g, w], attrs, lambda g, w: ref_conv_input_grad(g, w, case["x"], *case["attrs"])
    if name == "conv2d_weight_grad":
        x = oc.rand(case["x"], dtype, seed=seed + 1)
        attrs = (list(case["w"]),) + tuple(case["attrs"])
        return [g, x], attrs, lambda g, x: ref_conv_weight_grad(g, x, case["w"], *case["attrs"])
    if name == "avg_pool2d_backward":
        attrs = (list(case["x"]),) + tuple(case["attrs"])
        return [g], attrs, lambda g: ref_avg_backward(g, case["x"], *case["attrs"])
    if name == "max_pool2d_backward":  # indices from the forward over a random input (ties too)
        x = np.round(oc.rand(case["x"], "float64", seed=seed + 1) * 4)
        idx = oc.npy(oc.op("max_pool2d", [oc.jn(x)], case["attrs"])[1])
        g = oc.rand(idx.shape, dtype, seed=seed)
        return [g, idx], (list(case["x"]),), lambda g, idx: ref_max_backward(g, idx, case["x"])
    return [g], (list(case["x"]),), lambda g: ref_adaptive_backward(g, case["x"])


def _ids():
    return [f"{n}-{i}" for n, cs in CASES.items() for i in range(len(cs))]


_ALL = [(n, c) for n, cs in CASES.items() for c in cs]
_TOL = {"float64": (1e-10, 1e-12), "float32": (2e-5, 2e-5)}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,case", _ALL, ids=_ids())
def test_case(name, case, dtype):
    inputs, attrs, ref = _inputs(name, case, dtype)
    want = ref(*inputs)
    rtol, atol = _TOL[dtype]
    # every layout of grad_out (the conv ops' second input keeps its own)
    for lname, g in oc.layouts(inputs[0]):
        got = oc.op(name, [oc.jn(g)] + [oc.jn(a) for a in inputs[1:]], attrs)
        assert _C.dtype_names[got._dtype_id] == dtype
        oc.assert_close(got, want, rtol=rtol, atol=atol, dtype=dtype)
    if name == "conv2d_weight_grad":  # a non-contiguous input too
        for lname, x in oc.layouts(inputs[1]):
            got = oc.op(name, [oc.jn(inputs[0]), oc.jn(x)], attrs)
            oc.assert_close(got, want, rtol=rtol, atol=atol, dtype=dtype)


# ---------------------------------------------------------- adjoint checks
def _dot(a, b):
    return float(np.sum(_f64(a) * _f64(b)))


def _adjoint(lhs, rhs):
    assert abs(lhs - rhs) <= 1e-10 * max(1.0, abs(lhs)), (lhs, rhs)


@pytest.mark.parametrize("case", _CONV, ids=[f"conv-{i}" for i in range(len(_CONV))])
def test_conv_adjoint(case):
    """<conv2d(x, w), g> == <x, input_grad(g, w)> == <w, weight_grad(g, x)>."""
    x = oc.rand(case["x"], "float64", seed=3)
    w = oc.rand(case["w"], "float64", seed=4)
    g = oc.rand(_grad_shape("conv2d_input_grad", case), "float64", seed=5)
    y = oc.npy(oc.op("conv2d", [oc.jn(x), oc.jn(w)], case["attrs"]))
    assert y.shape == g.shape
    dx = oc.npy(oc.op("conv2d_input_grad", [oc.jn(g), oc.jn(w)], (list(case["x"]),) + tuple(case["attrs"])))
    dw = oc.npy(oc.op("conv2d_weight_grad", [oc.jn(g), oc.jn(x)], (list(case["w"]),) + tuple(case["attrs"])))
    _adjoint(_dot(y, g), _dot(x, dx))
    _adjoint(_dot(y, g), _dot(w, dw))


@pytest.mark.parametrize("case", _AVG, ids=[f"avg-{i}" for i in range(len(_AVG))])
def test_avg_pool_adjoint(case):
    x = oc.rand(case["x"], "float64", seed=6)
    g = oc.rand(_grad_shape("avg_pool2d_backward", case), "float64", seed=7)
    y = oc.npy(oc.op("avg_pool2d", [oc.jn(x)], case["attrs"]))
    dx = oc.npy(oc.op("avg_pool2d_backward", [oc.jn(g)], (list(case["x"]),) + tuple(case["attrs"])))
    assert y.shape == g.shape and dx.shape == x.shape
    _adjoint(_dot(y, g), _dot(x, dx))


@pytest.mark.parametrize("case", _ADAPTIVE, ids=[f"adaptive-{i}" for i in range(len(_ADAPTIVE))])
def test_adaptive_adjoint(case):
    x = oc.rand(case["x"], "float64", seed=8)
    g = oc.rand(_grad_shape("adaptive_avg_pool2d_backward", case), "float64", seed=9)
    y = oc.npy(oc.op("adaptive_avg_pool2d", [oc.jn(x)], (list(case["out"]),)))
    dx = oc.npy(oc.op("adaptive_avg_pool2d_backward", [oc.jn(g)], (list(case["x"]),)))
    assert y.shape == g.shape and dx.shape == x.shape
    _adjoint(_dot(y, g), _dot(x, dx))


# ------------------------------------------------------- layouts, threads
def test_conv_grad_strided_channels_and_broadcast():
    """grad_out with a channel stride > plane (used in place) and with
    stride-0 dims (the gradient of a sum)."""
    case = dict(x=(3, 4, 6, 6), w=(6, 2, 3, 3), attrs=([1], [1], [1], 2))
    x, w = oc.rand(case["x"], "float64", seed=1), oc.rand(case["w"], "float64", seed=2)
    gshape = _grad_shape("conv2d_input_grad", case)
    big = oc.rand((3, 12, 6, 6), "float64", seed=3)
    bcast = np.broadcast_to(np.float64(0.75), gshape)
    rows = np.broadcast_to(oc.rand((1, 6, 1, 6), "float64", seed=4), gshape)
    for g in (big[:, ::2], np.broadcast_to(big[:1, ::2], gshape), bcast, rows, big[:1, ::2], big[0, ::2]):
        xs = tuple(g.shape[:-3]) + case["x"][1:]
        xg = x[:1] if g.shape[0] == 1 else x[0] if g.ndim == 3 else x
        dx = oc.op("conv2d_input_grad", [oc.jn(g), oc.jn(w)], (list(xs),) + tuple(case["attrs"]))
        oc.assert_close(dx, ref_conv_input_grad(g, w, xs, *case["attrs"]))
        dw = oc.op("conv2d_weight_grad", [oc.jn(g), oc.jn(xg)], (list(case["w"]),) + tuple(case["attrs"]))
        oc.assert_close(dw, ref_conv_weight_grad(g, xg, case["w"], *case["attrs"]))
    for g in (np.broadcast_to(np.float64(2.0), (2, 3, 3, 3)), oc.rand((2, 3, 6, 6), "float64")[..., ::2, ::2]):
        got = oc.op("avg_pool2d_backward", [oc.jn(g)], ([2, 3, 6, 6], [2], [], [0], False, True))
        oc.assert_close(got, ref_avg_backward(g, (2, 3, 6, 6), [2], [], [0], False, True))
        got = oc.op("adaptive_avg_pool2d_backward", [oc.jn(g)], ([2, 3, 7, 8],))
        oc.assert_close(got, ref_adaptive_backward(g, (2, 3, 7, 8)))


@pytest.mark.parametrize("threads", [1, 3])
def test_conv_grads_thread_counts(threads):
    """The batch-parallel and the BLAS-threaded plans give the same result."""
    old = _C.get_num_threads()
    try:
        _C.set_num_threads(threads)
        for case in (_CONV[1], _CONV[7], _CONV[8], _CONV[9], _CONV[14], _CONV[16]):
            for name in ("conv2d_input_grad", "conv2d_weight_grad"):
                inputs, attrs, ref = _inputs(name, case, "float64", seed=11)
                got = oc.op(name, [oc.jn(a) for a in inputs], attrs)
                oc.assert_close(got, ref(*inputs))
    finally:
        _C.set_num_threads(old)


@pytest.mark.parametrize("pad", [0, 1])
def test_conv_grads_non_finite(pad):
    """inf/nan in the weight (input grad) or the input (weight grad) reach
    exactly the entries they reach in the definition: the wide layout's
    garbage columns must not smear them (it falls back when they occur)."""
    case = dict(x=(2, 3, 8, 9), w=(4, 3, 3, 3), attrs=([1], [pad], [1], 1))
    for name in ("conv2d_input_grad", "conv2d_weight_grad"):
        for dtype in ("float64", "float32"):
            inputs, attrs, ref = _inputs(name, case, dtype, seed=31)
            other = inputs[1].copy()
            other.flat[5] = np.inf
            other.flat[-7] = np.nan
            want = ref(inputs[0], other)
            assert np.isfinite(want).any() and not np.isfinite(want).all()
            got = oc.op(name, [oc.jn(inputs[0]), oc.jn(other)], attrs)
            oc.assert_close(got, want, rtol=1e-5, atol=1e-5, dtype=dtype)


def test_conv_grads_large_float32():
    """A LeNet-sized layer (one GEMM over the whole batch) and one whose
    columns need several chunks, against float64 references."""
    for case in (dict(x=(64, 16, 14, 14), w=(32, 16, 5, 5), attrs=([1], [0], [1], 1)),
                 dict(x=(48, 16, 32, 32), w=(8, 16, 3, 3), attrs=([1], [1], [1], 1))):
        for name in ("conv2d_input_grad", "conv2d_weight_grad"):
            inputs, attrs, ref = _inputs(name, case, "float32", seed=21)
            got = oc.op(name, [oc.jn(a) for a in inputs], attrs)
            want = ref(*inputs)
            oc.assert_close(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()), dtype="float32")


def test_pool_backward_large():
    g = oc.rand((8, 64, 64, 64), "float32", seed=5)  # 2M grads -> 8M-element input
    got = oc.op("avg_pool2d_backward", [oc.jn(g)], ([8, 64, 128, 128], [2], [], [0], False, True))
    want = np.repeat(np.repeat(g / 4, 2, axis=2), 2, axis=3)
    oc.assert_close(got, want, dtype="float32")
    got = oc.op("adaptive_avg_pool2d_backward", [oc.jn(g)], ([8, 64, 128, 128],))
    oc.assert_close(got, want, dtype="float32")


# ----------------------------------------------------------- half dtypes
def _half(a, dtype):
    if dtype == "float16":
        return oc.jn(np.asarray(a, np.float16))
    t = oc.jn(np.asarray(a, np.float32))
    try:
        return oc.op("cast", [t], (oc.dt(dtype),))
    except NotImplementedError:
        pytest.skip("cast is not implemented in this build")


def _round(a, dtype):
    if dtype == "float16":
        return np.asarray(a, np.float16).astype(np.float64)
    return oc.npy(_half(a, dtype)).astype(np.float64)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name,case", [(n, cs[1]) for n, cs in CASES.items()], ids=list(CASES))
def test_half_dtypes(name, case, dtype):
    inputs, attrs, ref = _inputs(name, case, "float32", seed=2)
    isf = [np.issubdtype(a.dtype, np.floating) for a in inputs]
    got = oc.op(name, [_half(a, dtype) if f else oc.jn(a) for a, f in zip(inputs, isf)], attrs)
    assert _C.dtype_names[got._dtype_id] == dtype
    want = ref(*[_round(a, dtype) if f else a for a, f in zip(inputs, isf)])
    tol = 2e-2 if dtype == "bfloat16" else 2e-3
    np.testing.assert_allclose(oc.npy(got).astype(np.float64), want, rtol=tol, atol=tol * np.abs(want).max())


# ----------------------------------------------------------------- errors
def _raises(exc, match, name, inputs, attrs):
    with pytest.raises(exc, match=match):
        oc.op(name, [oc.jn(a) for a in inputs], attrs)


def R(shape, dtype="float32"):
    return oc.rand(shape, dtype)


def test_conv_input_grad_errors():
    n, w = "conv2d_input_grad", R((4, 3, 3, 3))
    c = ([1], [0], [1], 1)
    _raises(RuntimeError, r"expected grad_output of size \[2, 4, 3, 3\].*but got grad_output of size \[2, 4, 4, 3\]",
            n, [R((2, 4, 4, 3)), w], ([2, 3, 5, 5],) + c)
    _raises(RuntimeError, r"expected grad_output of size \[2, 4, 2, 2\].*stride \[2, 2\]", n,
            [R((2, 4, 3, 3)), w], ([2, 3, 5, 5], [2], [0], [1], 1))
    _raises(RuntimeError, "must have as many dims", n, [R((4, 3, 3)), w], ([2, 3, 5, 5],) + c)
    _raises(RuntimeError, "expected input\\[2, 4, 5, 5\\] to have 3 channels, but got 4", n,
            [R((2, 4, 3, 3)), w], ([2, 4, 5, 5],) + c)
    _raises(RuntimeError, "divisible by 3", n, [R((2, 4, 3, 3)), w], ([2, 9, 5, 5], [1], [0], [1], 3))
    _raises(RuntimeError, "4-D weight", n, [R((2, 4, 3, 3)), R((4, 3, 3))], ([2, 3, 5, 5],) + c)
    _raises(RuntimeError, "Kernel size can't be greater", n, [R((2, 4, 1, 1)), w], ([2, 3, 2, 2],) + c)
    _raises(TypeError, r"grad_output type \(float32\) and weight type \(float64\)", n,
            [R((2, 4, 3, 3)), R((4, 3, 3, 3), "float64")], ([2, 3, 5, 5],) + c)
    _raises(TypeError, "'int64'", n, [R((2, 4, 3, 3), "int64"), R((4, 3, 3, 3), "int64")], ([2, 3, 5, 5],) + c)
    _raises(ValueError, "input_size must have 3 or 4 entries", n, [R((2, 4, 3, 3)), w], ([3, 5, 5, 1, 1],) + c)
    _raises(ValueError, "negative", n, [R((2, 4, 3, 3)), w], ([2, 3, -5, 5],) + c)
    _raises(ValueError, "non-positive stride", n, [R((2, 4, 3, 3)), w], ([2, 3, 5, 5], [0], [0], [1], 1))
    _raises(ValueError, "negative padding", n, [R((2, 4, 3, 3)), w], ([2, 3, 5, 5], [1], [-1], [1], 1))
    _raises(ValueError, "dilation should be greater than zero", n, [R((2, 4, 3, 3)), w],
            ([2, 3, 5, 5], [1], [0], [0], 1))
    _raises(ValueError, "non-positive groups", n, [R((2, 4, 3, 3)), w], ([2, 3, 5, 5], [1], [0], [1], 0))
    _raises(ValueError, "1 or 2 ints", n, [R((2, 4, 3, 3)), w], ([2, 3, 5, 5], [1, 1, 1], [0], [1], 1))
    _raises(ValueError, "too large", n, [R((2, 4, 3, 3)), w], ([2, 3, 5, 5], [1], [2 ** 62], [1], 1))


def test_conv_weight_grad_errors():
    n, x = "conv2d_weight_grad", R((2, 3, 5, 5))
    c = ([1], [0], [1], 1)
    _raises(RuntimeError, r"expected grad_output of size \[2, 4, 3, 3\].*but got grad_output of size \[2, 5, 3, 3\]",
            n, [R((2, 5, 3, 3)), x], ([4, 3, 3, 3],) + c)
    _raises(RuntimeError, r"expected grad_output of size \[2, 4, 3, 3\].*got grad_output of size \[1, 4, 3, 3\]",
            n, [R((1, 4, 3, 3)), x], ([4, 3, 3, 3],) + c)
    _raises(RuntimeError, "to have 6 channels, but got 3", n, [R((2, 4, 3, 3)), x], ([4, 3, 3, 3], [1], [0], [1], 2))
    _raises(RuntimeError, "3D \\(unbatched\\) or 4D", n, [R((2, 4, 3, 3)), R((5, 5))], ([4, 3, 3, 3],) + c)
    _raises(RuntimeError, "empty kernel", n, [R((2, 4, 3, 3)), x], ([4, 3, 0, 3],) + c)
    _raises(ValueError, "weight_size must have 4 entries", n, [R((2, 4, 3, 3)), x], ([4, 3, 3],) + c)
    _raises(TypeError, r"grad_output type \(float64\) and input type \(float32\)", n,
            [R((2, 4, 3, 3), "float64"), x], ([4, 3, 3, 3],) + c)
    _raises(TypeError, "'bool'", n, [R((2, 4, 3, 3), "bool"), R((2, 3, 5, 5), "bool")], ([4, 3, 3, 3],) + c)


def test_pool_backward_errors():
    n = "avg_pool2d_backward"
    _raises(RuntimeError, r"expected grad_output of size \[2, 3, 3, 2\].*but got grad_output of size \[2, 3, 3, 3\]",
            n, [R((2, 3, 3, 3))], ([2, 3, 6, 5], [2], [], [0], False, True))
    _raises(RuntimeError, r"expected grad_output of size \[2, 3, 4, 3\].*ceil_mode 1", n, [R((2, 3, 3, 2))],
            ([2, 3, 7, 5], [3, 2], [2, 2], [1, 1], True, False))
    _raises(RuntimeError, "non-zero size for non-batch dimensions", n, [R((1, 0, 2, 2))],
            ([1, 0, 4, 4], [2], [], [0], False, True))
    _raises(RuntimeError, "Output size is too small", n, [R((1, 1, 1, 1))], ([1, 1, 2, 2], [3], [], [0], False, True))
    _raises(ValueError, "pad should be smaller than or equal to half", n, [R((1, 1, 3, 3))],
            ([1, 1, 4, 4], [2], [], [2], False, True))
    _raises(ValueError, "kernel size should be greater than zero", n, [R((1, 1, 2, 2))],
            ([1, 1, 4, 4], [0], [], [0], False, True))
    _raises(ValueError, "stride should be greater than zero", n, [R((1, 1, 2, 2))],
            ([1, 1, 4, 4], [2], [0], [0], False, True))
    _raises(TypeError, "'int64'", n, [R((1, 1, 2, 2), "int64")], ([1, 1, 4, 4], [2], [], [0], False, True))
    _raises(ValueError, "input_size must have 3 or 4 entries", n, [R((2, 2))], ([4, 4], [2], [], [0], False, True))
    n = "adaptive_avg_pool2d_backward"
    _raises(RuntimeError, r"grad_output of size \[2, 4, 3, 3\] does not match input_size \[2, 3, 6, 6\] in dimension 1",
            n, [R((2, 4, 3, 3))], ([2, 3, 6, 6],))
    _raises(RuntimeError, "must have as many dims", n, [R((3, 3))], ([2, 3, 6, 6],))
    _raises(RuntimeError, "non-zero size for non-batch dimensions", n, [R((1, 1, 2, 2))], ([1, 1, 0, 6],))
    _raises(TypeError, "'int32'", n, [R((1, 1, 2, 2), "int32")], ([1, 1, 4, 4],))
    _raises(ValueError, "negative", n, [R((1, 1, 2, 2))], ([1, 1, -4, 4],))


def test_max_pool_backward_errors_and_layouts():
    n, g = "max_pool2d_backward", R((2, 3, 3, 3))
    ok = np.zeros((2, 3, 3, 3), np.int64)
    bad = ok.copy()
    bad[1, 2, 0, 1] = 36
    _raises(IndexError, r"outside the 6 x 6 input plane", n, [g, bad], ([2, 3, 6, 6],))
    bad[1, 2, 0, 1] = -1
    _raises(IndexError, "outside the", n, [g, bad], ([2, 3, 6, 6],))
    _raises(TypeError, "indices must be int64", n, [g, ok.astype(np.int32)], ([2, 3, 6, 6],))
    _raises(RuntimeError, r"indices of size \[2, 3, 3, 2\] must have grad_output's size", n,
            [g, ok[..., :2]], ([2, 3, 6, 6],))
    _raises(RuntimeError, "does not match input_size", n, [g, ok], ([2, 4, 6, 6],))
    _raises(RuntimeError, "must have as many dims", n, [g, ok], ([3, 6, 6],))
    _raises(TypeError, "'int64'", n, [ok, ok], ([2, 3, 6, 6],))
    # strided indices and grads
    x = oc.rand((2, 3, 8, 8), "float64", seed=4)
    idx = oc.npy(oc.op("max_pool2d", [oc.jn(x)], ([2], [], [0], [1], False))[1])
    gg = oc.rand((2, 3, 4, 4), "float64", seed=5)
    for lname, i in oc.layouts(idx):
        got = oc.op(n, [oc.jn(gg[:, :, ::-1][:, :, ::-1]), oc.jn(i)], ([2, 3, 8, 8],))
        oc.assert_close(got, ref_max_backward(gg, i, (2, 3, 8, 8)))


# ------------------------------------------------- through the autograd
@pytest.mark.parametrize("case", [_CONV[1], _CONV[3], _CONV[5]], ids=["groups", "n1", "unbatched"])
def test_conv2d_autograd_matches_finite_differences(case):
    """conv2d's derivative (runtime/derivatives.c) runs these kernels: the
    gradient of sum(conv2d(x, w) * v) against central differences."""
    rng = np.random.default_rng(1)
    x, w = rng.uniform(-1, 1, case["x"]), rng.uniform(-1, 1, case["w"])
    v = rng.uniform(-1, 1, _grad_shape("conv2d_input_grad", case))
    f = lambda x, w: _dot(oc.npy(oc.op("conv2d", [oc.jn(x), oc.jn(w)], case["attrs"])), v)
    tx, tw = oc.jn(x), oc.jn(w)
    _C._set_requires_grad(tx, True)
    _C._set_requires_grad(tw, True)
    out = oc.op("conv2d", [tx, tw], case["attrs"])
    gx, gw = (oc.npy(t) for t in _C._autograd_grad([out], [oc.jn(v)], [tx, tw], False, True))
    eps = 1e-6
    for arr, got, which in ((x, gx, 0), (w, gw, 1)):
        num = np.zeros_like(arr)
        for k in range(arr.size):
            p, m = arr.copy(), arr.copy()
            p.reshape(-1)[k] += eps
            m.reshape(-1)[k] -= eps
            num.reshape(-1)[k] = (f(p, w) - f(m, w) if which == 0 else f(x, p) - f(x, m)) / (2 * eps)
        np.testing.assert_allclose(got, num, rtol=1e-6, atol=1e-7)
