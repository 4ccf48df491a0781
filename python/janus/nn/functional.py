"""janus.nn.functional: layers and losses as functions (torch.nn.functional).

Each function is a composition of op-table ops issued through the one C
dispatcher, so autograd, recording and replay see ordinary ops; heavy ops
(linear, conv2d, pools, embedding) are single table ops.
"""
import math

import janus
from janus import _C
from janus.amp.autocast_mode import _composite  # autocast: PyTorch runs these as one op


def _pair(v, name):
    if isinstance(v, int):
        return [v, v]
    v = list(v)
    if len(v) == 1:
        return v * 2
    if len(v) != 2:
        raise ValueError(f"{name} must be an int or a pair of ints, got {v}")
    return [int(x) for x in v]


# ---- activations -----------------------------------------------------------
def relu(input, inplace=False):
    return input.relu_() if inplace else input.relu()


def gelu(input, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate argument must be either none or tanh (got '{approximate}')")
    return _C._op("gelu", [input], (0 if approximate == "none" else 1,))


def tanh(input):
    return input.tanh()


def sigmoid(input):
    return input.sigmoid()


def silu(input, inplace=False):
    return input.silu()


def softmax(input, dim=None, dtype=None):
    if dim is None:
        raise TypeError("softmax(): dim must be given (implicit dim selection is deprecated in PyTorch)")
    if dtype is not None:
        input = input.to(dtype)
    return _C._op("softmax", [input], (dim,))


def log_softmax(input, dim=None, dtype=None):
    if dim is None:
        raise TypeError("log_softmax(): dim must be given")
    if dtype is not None:
        input = input.to(dtype)
    return _C._op("log_softmax", [input], (dim,))


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _inplace(input, janus.where(input > 0, input, input * negative_slope), inplace)


def elu(input, alpha=1.0, inplace=False):
    # expm1 of the clamped input: the branch where() discards never overflows (no inf * 0 in backward)
    neg = (input.clamp(max=0.0)).expm1() * alpha
    return _inplace(input, janus.where(input > 0, input, neg), inplace)


_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def selu(input, inplace=False):
    return _inplace(input, elu(input, _SELU_ALPHA) * _SELU_SCALE, inplace)


def celu(input, alpha=1.0, inplace=False):
    neg = (input.clamp(max=0.0) / alpha).expm1() * alpha
    return _inplace(input, janus.where(input > 0, input, neg), inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _inplace(input, input.clamp(min_val, max_val), inplace)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, linear above threshold (as PyTorch)."""
    bx = input * beta if beta != 1 else input
    soft = bx.clamp(max=threshold).exp().log1p()
    if beta != 1:
        soft = soft / beta
    return janus.where(bx > threshold, input, soft)


def mish(input, inplace=False):
    return _inplace(input, input * softplus(input).tanh(), inplace)


def hardsigmoid(input, inplace=False):
    return _inplace(input, (input + 3.0).clamp(0.0, 6.0) / 6.0, inplace)


def hardswish(input, inplace=False):
    return _inplace(input, input * (input + 3.0).clamp(0.0, 6.0) / 6.0, inplace)


def logsigmoid(input):
    """-softplus(-x), stable for large |x|."""
    return -((-input.abs()).exp().log1p() + (-input).relu())


def softsign(input):
    return input / (input.abs() + 1.0)


def tanhshrink(input):
    return input - input.tanh()


def softshrink(input, lambd=0.5):
    return janus.where(input > lambd, input - lambd, janus.where(input < -lambd, input + lambd, 0.0))


def hardshrink(input, lambd=0.5):
    return janus.where(input.abs() > lambd, input, 0.0)


def threshold(input, threshold, value, inplace=False):
    return _inplace(input, janus.where(input > threshold, input, value), inplace)


def glu(input, dim=-1):
    if input.shape[dim] % 2:
        raise RuntimeError(f"glu: Halving dimension must be even, but dimension {dim} is size {input.shape[dim]}")
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()


def softmin(input, dim=None, dtype=None):
    return softmax(-input, dim, dtype)


def prelu(input, weight):
    """max(0, x) + weight * min(0, x); weight has one entry or one per channel (dim 1)."""
    w = weight
    if weight.numel() > 1:
        if input.ndim < 2 or input.shape[1] != weight.numel():
            raise RuntimeError(f"prelu: the number of weights ({weight.numel()}) does not match the number of "
                               f"channels ({input.shape[1] if input.ndim >= 2 else 1})")
        w = weight.view([1, -1] + [1] * (input.ndim - 2))
    return janus.where(input > 0, input, w * input)


def _keep_mask(shape, p, like):
    """A Philox-drawn bool keep mask of `shape` (keep probability 1 - p) on
    like's device: replay reproduces it exactly from (seed, offset)."""
    if like.is_cuda:  # drawn on the device: the same Philox stream as a cpu run
        old = _C._set_factory_device(1)
        try:
            return _C._op("dropout_mask", [], (list(shape), float(p)))
        finally:
            _C._set_factory_device(old)
    return _C._op("dropout_mask", [], (list(shape), float(p)))


def _masked(input, p, shape, inplace):
    if p == 1.0:
        out = input * 0.0
    else:
        out = input * (_keep_mask(shape, p, input).to(input.dtype) * (1.0 / (1.0 - p)))
    return _inplace(input, out, inplace)


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    if not training or p == 0.0:
        return input
    return _masked(input, p, input.shape, inplace)


def _feature_dropout(input, p, training, inplace, batched_ndim, fn):
    """Zero whole channels: one keep draw per (sample, channel)."""
    _check_p(p)
    if input.ndim not in (batched_ndim - 1, batched_ndim):
        raise RuntimeError(f"{fn}: Expected {batched_ndim - 1}D or {batched_ndim}D input, but received a "
                           f"{input.ndim}D input")
    if not training or p == 0.0:
        return input
    lead = 2 if input.ndim == batched_ndim else 1
    shape = list(input.shape[:lead]) + [1] * (input.ndim - lead)
    return _masked(input, p, shape, inplace)


def dropout1d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 3, "dropout1d")


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Channel dropout of (N, C, H, W) input.  Like PyTorch, a 3-D input is
    taken as (N, C, L): one draw per (N, C)."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    if input.ndim < 2:
        raise RuntimeError(f"dropout2d: Expected a 3D or 4D input, got {input.ndim}D")
    return _masked(input, p, list(input.shape[:2]) + [1] * (input.ndim - 2), inplace)


def dropout3d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 5, "dropout3d")


_SELU_SATURATION = 1.7580993408473766  # -(SELU's limit at -inf) = scale * alpha


def _alpha_dropout(input, p, training, inplace, feature):
    """Dropped entries (or whole channels) are set to SELU's negative
    saturation, then an affine map a * x + b restores zero mean and unit
    variance (PyTorch's formulas; p = 1 gives zeros, as there)."""
    _check_p(p)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if feature and input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if p == 1.0:
        return _inplace(input, input * 0.0, inplace)
    shape = list(input.shape[:2]) + [1] * (input.ndim - 2) if feature else input.shape
    keep = _keep_mask(shape, p, input).to(input.dtype)
    a = 1.0 / math.sqrt((_SELU_SATURATION * _SELU_SATURATION * p + 1) * (1 - p))
    b = (keep - 1.0) * (_SELU_SATURATION * a) + _SELU_SATURATION * a * p
    return _inplace(input, input * (keep * a) + b, inplace)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout for SELU networks: keeps the input's mean and variance (note
    training=False by default, as in PyTorch)."""
    return _alpha_dropout(input, p, training, inplace, False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """alpha_dropout of whole channels: one draw per (sample, channel) of (N, C, *)."""
    return _alpha_dropout(input, p, training, inplace, True)


def _inplace(input, out, inplace):
    """inplace=True writes the result into input, as PyTorch does -- unless
    autograd still needs input (it requires grad): then the result is
    returned as a new tensor, which is what every use through the return
    value sees anyway."""
    if not inplace or (input.requires_grad and janus.is_grad_enabled()):
        return out
    with janus.no_grad():
        input.copy_(out)
    return input


# ---- linear / conv / pooling ---------------------------------------------
def linear(input, weight, bias=None):
    return _C._op("linear", [input, weight] + ([bias] if bias is not None else []), ())


def bilinear(input1, input2, weight, bias=None):
    """y = x1^T A x2 + b for each out feature: input1 (*, in1), input2 (*, in2)
    with the same leading dims, weight (out, in1, in2), bias (out).  One
    matmul of x1 against A laid out as (in1, out * in2), then the product
    with x2 summed over in2."""
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and {input2.ndim}")
    for d in range(input1.ndim - 1):
        if input1.shape[d] != input2.shape[d]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {d}: got "
                               f"{input1.shape[d]} and {input2.shape[d]}")
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-D (out_features, in1_features, in2_features), got "
                           f"shape {list(weight.shape)}")
    o, i, j = weight.shape
    if input1.ndim == 0 or input1.shape[-1] != i:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1] if input1.ndim else None} but expected {i}")
    if input2.shape[-1] != j:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {input2.shape[-1]} but "
                           f"expected {j}")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != o):
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{bias.shape[0] if bias.ndim == 1 else list(bias.shape)} but expected {o}")
    lead = list(input1.shape[:-1])
    n = 1
    for v in lead:
        n *= v
    x1, x2 = input1.reshape(n, i), input2.reshape(n, j)
    t = janus.matmul(x1, weight.permute(1, 0, 2).reshape(i, o * j)).reshape(n, o, j)
    y = (t * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        y = y + bias
    return y.reshape(lead + [o])


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    if isinstance(padding, str):
        if padding == "valid":
            padding = 0
        elif padding == "same":
            k = weight.shape[-2:]
            d = _pair(dilation, "dilation")
            if _pair(stride, "stride") != [1, 1]:
                raise ValueError("padding='same' is not supported for strided convolutions")
            tot = [d[i] * (k[i] - 1) for i in range(2)]
            if any(t % 2 for t in tot):
                raise NotImplementedError("padding='same' with an even effective kernel size needs "
                                          "asymmetric padding, which janus does not support yet")
            padding = [t // 2 for t in tot]
        else:
            raise ValueError(f"invalid padding string '{padding}', should be one of ('valid', 'same')")
    ins = [input, weight] + ([bias] if bias is not None else [])
    return _C._op("conv2d", ins, (_pair(stride, "stride"), _pair(padding, "padding"),
                                  _pair(dilation, "dilation"), int(groups)))


def _single(v, name):
    if isinstance(v, int):
        return v
    v = list(v)
    if len(v) != 1:
        raise ValueError(f"{name} must be an int or a 1-tuple, got {v}")
    return int(v[0])


def _batch1d(input, fn):
    if input.ndim not in (2, 3):
        raise RuntimeError(f"{fn}: Expected 2D (unbatched) or 3D (batched) input, but got input of size: "
                           f"{list(input.shape)}")
    return input if input.ndim == 3 else input.unsqueeze(0)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """conv2d over (N, C, 1, L): the same kernel with a height of one."""
    x = _batch1d(input, "conv1d")
    if isinstance(padding, str):
        if padding == "same":
            if _single(stride, "stride") != 1:
                raise ValueError("padding='same' is not supported for strided convolutions")
            tot = _single(dilation, "dilation") * (weight.shape[-1] - 1)
            if tot % 2:
                raise NotImplementedError("padding='same' with an even effective kernel size needs asymmetric "
                                          "padding, which janus does not support yet")
            padding = tot // 2
        elif padding == "valid":
            padding = 0
        else:
            raise ValueError(f"invalid padding string '{padding}', should be one of ('valid', 'same')")
    y = conv2d(x.unsqueeze(2), weight.unsqueeze(2), bias, [1, _single(stride, "stride")],
               [0, _single(padding, "padding")], [1, _single(dilation, "dilation")], groups)
    y = y.squeeze(2)
    return y if input.ndim == 3 else y.squeeze(0)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The adjoint of conv2d: weight is (C_in, C_out / groups, kH, kW); the
    output is (H - 1) * stride - 2 * padding + dilation * (k - 1) +
    output_padding + 1 along each spatial dim.  One table op
    (conv2d_input_grad: conv2d's input gradient is exactly this)."""
    unbatched = input.ndim == 3
    x = input.unsqueeze(0) if unbatched else input
    if x.ndim != 4:
        raise RuntimeError(f"conv_transpose2d: Expected 3D (unbatched) or 4D (batched) input, but got input of "
                           f"size: {list(input.shape)}")
    s, p, d = _pair(stride, "stride"), _pair(padding, "padding"), _pair(dilation, "dilation")
    op = _pair(output_padding, "output_padding")
    for i in range(2):
        if op[i] >= s[i] and op[i] >= d[i]:
            raise RuntimeError(f"conv_transpose2d: output padding must be smaller than either stride or dilation, "
                               f"but got output_padding={op}, stride={s}, dilation={d}")
    if x.shape[1] != weight.shape[0]:
        raise RuntimeError(f"conv_transpose2d: weight of size {list(weight.shape)} expects {weight.shape[0]} "
                           f"input channels, but got {x.shape[1]} channels instead")
    k = weight.shape[-2:]
    size = [x.shape[0], weight.shape[1] * groups] + [
        (x.shape[2 + i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] + 1 for i in range(2)]
    if size[2] <= 0 or size[3] <= 0:
        raise RuntimeError(f"conv_transpose2d: the output size {size[2:]} is too small")
    y = _C._op("conv2d_input_grad", [x, weight], (size, s, p, d, int(groups)))
    if bias is not None:
        y = y + bias.view(1, -1, 1, 1)
    return y.squeeze(0) if unbatched else y


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    x = _batch1d(input, "conv_transpose1d")
    y = conv_transpose2d(x.unsqueeze(2), weight.unsqueeze(2), bias, [1, _single(stride, "stride")],
                         [0, _single(padding, "padding")], [0, _single(output_padding, "output_padding")],
                         groups, [1, _single(dilation, "dilation")]).squeeze(2)
    return y if input.ndim == 3 else y.squeeze(0)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    k = _pair(kernel_size, "kernel_size")
    s = k if stride is None or stride == [] else _pair(stride, "stride")
    vals, idx = _C._op("max_pool2d", [input], (k, s, _pair(padding, "padding"),
                                                 _pair(dilation, "dilation"), bool(ceil_mode)))
    return (vals, idx) if return_indices else vals


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    if divisor_override is not None:
        raise NotImplementedError("avg_pool2d(divisor_override=...) is not supported")
    k = _pair(kernel_size, "kernel_size")
    s = k if stride is None or stride == [] else _pair(stride, "stride")
    return _C._op("avg_pool2d", [input], (k, s, _pair(padding, "padding"), bool(ceil_mode),
                                          bool(count_include_pad)))


def adaptive_avg_pool2d(input, output_size):
    o = [output_size, output_size] if isinstance(output_size, int) else list(output_size)
    o = [input.shape[-2 + i] if v is None else int(v) for i, v in enumerate(o)]
    return _C._op("adaptive_avg_pool2d", [input], (o,))


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    x = _batch1d(input, "max_pool1d").unsqueeze(2)
    r = max_pool2d(x, [1, _single(kernel_size, "kernel_size")],
                   None if stride is None or stride == [] else [1, _single(stride, "stride")],
                   [0, _single(padding, "padding")], [1, _single(dilation, "dilation")], ceil_mode, return_indices)
    fix = (lambda t: t.squeeze(2)) if input.ndim == 3 else (lambda t: t.squeeze(2).squeeze(0))  # noqa: E731
    return (fix(r[0]), fix(r[1])) if return_indices else fix(r)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    x = _batch1d(input, "avg_pool1d").unsqueeze(2)
    y = avg_pool2d(x, [1, _single(kernel_size, "kernel_size")],
                   None if stride is None or stride == [] else [1, _single(stride, "stride")],
                   [0, _single(padding, "padding")], ceil_mode, count_include_pad).squeeze(2)
    return y if input.ndim == 3 else y.squeeze(0)


def adaptive_avg_pool1d(input, output_size):
    x = _batch1d(input, "adaptive_avg_pool1d").unsqueeze(2)
    y = adaptive_avg_pool2d(x, [1, _single(output_size, "output_size")]).squeeze(2)
    return y if input.ndim == 3 else y.squeeze(0)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max over PyTorch's adaptive windows (rows floor(i*H/oh) .. ceil((i+1)*H/oh),
    columns likewise): one max_pool2d when the windows tile the input evenly,
    else a max per window (the gradient goes to the window's maximum, as there)."""
    if input.ndim not in (3, 4):
        raise ValueError(f"adaptive_max_pool2d: expected a 3D or 4D input, got {input.ndim}D")
    o = [output_size, output_size] if isinstance(output_size, int) else list(output_size)
    H, W = input.shape[-2], input.shape[-1]
    oh, ow = [(H, W)[i] if v is None else int(v) for i, v in enumerate(o)]
    if oh <= 0 or ow <= 0:
        raise ValueError(f"adaptive_max_pool2d: output_size must be positive, got {output_size}")
    if H % oh == 0 and W % ow == 0:
        k = [H // oh, W // ow]
        x = input if input.ndim == 4 else input.unsqueeze(0)
        r = max_pool2d(x, k, k, 0, 1, False, return_indices)
        if input.ndim == 3:
            r = (r[0].squeeze(0), r[1].squeeze(0)) if return_indices else r.squeeze(0)
        return r
    if return_indices:
        raise NotImplementedError(f"adaptive_max_pool2d(return_indices=True) for an output {oh}x{ow} that does not "
                                  f"divide the input {H}x{W}")
    rows = []
    for i in range(oh):
        r0, r1 = i * H // oh, -(-(i + 1) * H // oh)
        cols = [input[..., r0:r1, j * W // ow:-(-(j + 1) * W // ow)].flatten(-2).max(-1).values for j in range(ow)]
        rows.append(janus.stack(cols, -1))
    return janus.stack(rows, -2)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    x = _batch1d(input, "adaptive_max_pool1d").unsqueeze(2)
    r = adaptive_max_pool2d(x, [1, _single(output_size, "output_size")], return_indices)
    fix = (lambda t: t.squeeze(2)) if input.ndim == 3 else (lambda t: t.squeeze(2).squeeze(0))  # noqa: E731
    return (fix(r[0]), fix(r[1])) if return_indices else fix(r)


def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, avg, mx, count):
    if isinstance(norm_type, (int, float)):
        if norm_type == 0:
            raise ValueError(f"norm_type must be a non-zero value, but got {norm_type}")
        if norm_type == float("inf"):
            return mx(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -mx(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = avg(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(count).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x^p)^(1/p): avg_pool1d of x^p times the
    window size (PyTorch's formula; a window whose sum is negative, odd p,
    gives 0).  norm_type inf / -inf: the max / min of |x|."""
    k = _single(kernel_size, "kernel_size")
    return _lp_pool(input, norm_type, k, stride, ceil_mode, avg_pool1d, max_pool1d, k)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """lp_pool1d over (kH, kW) windows of (N, C, H, W) or (C, H, W)."""
    kh, kw = _pair(kernel_size, "kernel_size")
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, avg_pool2d, max_pool2d, kh * kw)


def pixel_shuffle(input, upscale_factor):
    """(*, C * r^2, H, W) -> (*, C, H * r, W * r)."""
    r = int(upscale_factor)
    if input.ndim < 3 or input.shape[-3] % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
                           f"of upscale_factor, but input.size(-3)={input.shape[-3] if input.ndim >= 3 else None} "
                           f"is not divisible by {r * r}")
    lead, (c, h, w) = list(input.shape[:-3]), input.shape[-3:]
    n = len(lead)
    x = input.reshape(lead + [c // (r * r), r, r, h, w])
    x = x.permute(list(range(n)) + [n, n + 3, n + 1, n + 4, n + 2])
    return x.reshape(lead + [c // (r * r), h * r, w * r])


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H * r, W * r) -> (*, C * r^2, H, W)."""
    r = int(downscale_factor)
    if input.ndim < 3 or input.shape[-2] % r or input.shape[-1] % r:
        raise RuntimeError(f"pixel_unshuffle expects height and width to be divisible by downscale_factor, got "
                           f"input of size {list(input.shape)} and downscale_factor={r}")
    lead, (c, h, w) = list(input.shape[:-3]), input.shape[-3:]
    n = len(lead)
    x = input.reshape(lead + [c, h // r, r, w // r, r])
    x = x.permute(list(range(n)) + [n, n + 2, n + 4, n + 1, n + 3])
    return x.reshape(lead + [c * r * r, h // r, w // r])


def channel_shuffle(input, groups):
    """(N, C, *) -> (N, C, *) with the channels in g groups interleaved:
    view as (N, g, C / g, *), swap those two dims, flatten back."""
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                           f"{list(input.shape)}")
    g = int(groups)
    if g <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{g}")
    n, c, rest = input.shape[0], input.shape[1], list(input.shape[2:])
    if c % g:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {g} groups.")
    return input.reshape([n, g, c // g] + rest).transpose(1, 2).reshape(list(input.shape))


native_channel_shuffle = channel_shuffle


def _fold_pair(v, name):
    """An int or a pair as (h, w), with PyTorch's im2col / col2im message for other lengths."""
    if isinstance(v, int):
        return int(v), int(v)
    v = [int(x) for x in v]
    if len(v) != 2:
        raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(v)}")
    return v[0], v[1]


def _fold_args(kernel_size, dilation, padding, stride):
    (kh, kw), (dh, dw) = _fold_pair(kernel_size, "kernel_size"), _fold_pair(dilation, "dilation")
    (ph, pw), (sh, sw) = _fold_pair(padding, "padding"), _fold_pair(stride, "stride")
    if kh <= 0 or kw <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: {kh} kernel_width: {kw}")
    if sh <= 0 or sw <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got stride_height: {sh} stride_width: {sw}")
    if dh <= 0 or dw <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilation_height: {dh} dilation_width: {dw}")
    if ph < 0 or pw < 0:
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {ph} pad_width: {pw}")
    return (kh, kw), (dh, dw), (ph, pw), (sh, sw)


def _block_index(k, d, s, blocks, device):
    """Positions (in the padded input) of kernel offset a of block i, ordered (a, i)."""
    return janus.tensor([a * d + i * s for a in range(k) for i in range(blocks)], dtype=janus.int64, device=device)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """im2col: (N, C, H, W) -> (N, C * kH * kW, L), column l holding the
    (dilated) kernel_size block at sliding position l of the zero-padded
    input, channel-major then kernel row, kernel column (PyTorch's layout).
    Two index_selects (kernel rows, kernel columns) and a permute."""
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = _fold_args(kernel_size, dilation, padding, stride)
    nd = input.ndim
    if nd not in (3, 4) or any(v == 0 for v in input.shape[nd - 3:]):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")
    x = input if nd == 4 else input.unsqueeze(0)
    n, c, h, w = x.shape
    oh = (h + 2 * ph - (dh * (kh - 1) + 1)) // sh + 1
    ow = (w + 2 * pw - (dw * (kw - 1) + 1)) // sw + 1
    if oh < 1 or ow < 1:
        raise RuntimeError(f"Given input with spatial size ({h}, {w}), kernel_size=({kh}, {kw}), dilation=({dh}, "
                           f"{dw}), padding=({ph}, {pw}), calculated shape of the array of sliding blocks as ({oh}, "
                           f"{ow}), but its components must be at least one.")
    if ph or pw:
        x = pad(x, [pw, pw, ph, ph])
    x = x.index_select(2, _block_index(kh, dh, sh, oh, x.device))    # (N, C, kH * oH, W + 2pw)
    x = x.index_select(3, _block_index(kw, dw, sw, ow, x.device))    # (N, C, kH * oH, kW * oW)
    x = x.reshape(n, c, kh, oh, kw, ow).permute(0, 1, 2, 4, 3, 5).reshape(n, c * kh * kw, oh * ow)
    return x if nd == 4 else x.squeeze(0)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """col2im, the adjoint of unfold: (N, C * kH * kW, L) -> (N, C, H, W)
    (output_size (H, W)), each column's block added at its sliding position,
    so overlapping blocks sum.  Two index_adds (kernel columns, kernel rows)
    into the padded output, then the padding is cut off."""
    H, W = _fold_pair(output_size, "output_size")
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = _fold_args(kernel_size, dilation, padding, stride)
    nd = input.ndim
    if not ((nd == 2 and input.shape[0] and input.shape[1]) or (nd == 3 and input.shape[1] and input.shape[2])):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")
    x = input if nd == 3 else input.unsqueeze(0)
    n, ck, length = x.shape
    if ck % (kh * kw):
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={ck} and kernel_size=({kh}, {kw}).")
    oh = (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    where = (f"Given output_size=({H}, {W}), kernel_size=({kh}, {kw}), dilation=({dh}, {dw}), padding=({ph}, {pw}), "
             f"stride=({sh}, {sw}), ")
    if length != oh * ow:
        raise RuntimeError(where + f"expected size of input's dimension 2 to match the calculated number of sliding "
                           f"blocks {oh} * {ow} = {oh * ow}, but got input.size(2)={length}.")
    if oh < 1 or ow < 1:
        raise RuntimeError(where + f"calculated shape of the array of sliding blocks as ({oh}, {ow}), which is too "
                           f"small (non-positive)")
    c = ck // (kh * kw)
    x = x.reshape(n, c, kh, kw, oh, ow).permute(0, 1, 2, 4, 3, 5).reshape(n, c, kh * oh, kw * ow)
    hp, wp = H + 2 * ph, W + 2 * pw
    y = janus.zeros(n, c, kh * oh, wp, dtype=x.dtype, device=x.device)
    y = y.index_add(3, _block_index(kw, dw, sw, ow, x.device), x)
    z = janus.zeros(n, c, hp, wp, dtype=x.dtype, device=x.device)
    z = z.index_add(2, _block_index(kh, dh, sh, oh, x.device), y)
    if ph or pw:
        z = z[:, :, ph:ph + H, pw:pw + W]
    return z if nd == 3 else z.squeeze(0)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: max_norm, scale_grad_by_freq and sparse are not supported")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    return _C._op("embedding", [weight, input], (-1 if padding_idx is None else int(padding_idx),))


_INDEX_DTYPES = (janus.int64, janus.int32)


def _embedding_renorm_(weight, indices, max_norm, norm_type):
    """Rescale (in place, outside autograd) each row of weight that indices
    name whose norm_type-norm exceeds max_norm to norm max_norm (PyTorch's
    embedding_renorm_: scale max_norm / (norm + 1e-7))."""
    with janus.no_grad():
        rows = indices.reshape(-1).unique()
        if rows.numel() == 0:
            return
        sel = weight.index_select(0, rows)
        norms = janus.norm(sel, norm_type, 1, keepdim=True)
        scale = janus.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight.index_copy_(0, rows, sel * scale)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sums, means or maxes of bags of embedding rows.  input (B, N): B bags
    of N indices; or input (N) with offsets (B) (offsets (B + 1) with
    include_last_offset), bag b being input[offsets[b]:offsets[b + 1]].  An
    empty bag, or one of only padding_idx entries (which take no part),
    gives zeros.  per_sample_weights (input's shape, mode 'sum') scale the
    rows.  Composed from index_select, index_add (sum, mean) and a max over
    bags laid out as rows of a (B, longest bag) index table (max)."""
    if weight.dtype in _INDEX_DTYPES and input.is_floating_point():
        import warnings
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage `embedding_bag(weight, "
                      "input, ...)` is deprecated, and should now be `embedding_bag(input, weight, ...)`.",
                      stacklevel=2)
        weight, input = input, weight
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                         f"must have the same shape as the input ({input.shape})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        bags, length = input.shape
        offsets = janus.arange(bags, dtype=janus.int64, device=input.device) * length
        include_last_offset = False
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if mode == "max":
        if scale_grad_by_freq:
            raise ValueError("max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise ValueError("max mode does not support sparse weights")
    elif mode not in ("sum", "mean"):
        raise ValueError("mode has to be one of sum, mean or max")
    for t, name in ((input, "indices"), (offsets, "offsets")):
        if t.dtype not in _INDEX_DTYPES:
            raise RuntimeError(f"Expected tensor for argument #1 '{name}' to have one of the following scalar types: "
                               f"Long, Int; but got {t.dtype} instead (while checking arguments for embedding_bag)")
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding_bag: scale_grad_by_freq and sparse are not supported by janus (janus "
                                  "has no sparse gradients); use the defaults")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                      f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                                      f"on GitHub.")
        if per_sample_weights.dtype is not weight.dtype:
            raise RuntimeError(f"Expected tensor for argument #1 'weight' to have the same type as tensor for "
                               f"argument #1 'per_sample_weights'; but type {weight.dtype} does not equal "
                               f"{per_sample_weights.dtype} (while checking arguments for embedding_bag)")
    num, dim = weight.shape
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise RuntimeError(f"padding_idx must be within the number of embeddings, -{num} through {num - 1}, but "
                               f"got {padding_idx}")
        padding_idx = padding_idx + num if padding_idx < 0 else int(padding_idx)
    n = input.numel()
    idx, offsets = input.long(), offsets.long()
    off = offsets.tolist()  # the bag layout is data: a sync under record and replay, as unique()
    if off and off[0] != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                           f"position 0. However, got {off[0]}")
    if off and off[-1] > n:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got offsets[-1] of {off[-1]}")
    if any(b < a for a, b in zip(off, off[1:])):
        raise RuntimeError(f"embedding_bag: offsets have to be non-decreasing, got {off}")
    if n:
        bad = (idx < 0).logical_or(idx >= num)
        if bool(bad.any()):
            at = int(bad.nonzero()[0, 0])
            raise RuntimeError(f"Index {at} of input takes value {int(idx[at])} which is not in the valid range "
                               f"[0, {num})")
    bags = max(len(off) - 1, 0) if include_last_offset else len(off)
    kw = dict(dtype=weight.dtype, device=weight.device)
    if bags == 0 or n == 0:
        return janus.zeros(bags, dim, **kw) + weight[:0].sum()  # in weight's graph, with a zero gradient
    # bag of each entry: a 1 at each bag start, summed up to the entry; with include_last_offset the
    # entries from offsets[-1] on land in bag `bags`, which is dropped
    starts = janus.zeros(n + 1, dtype=janus.int64, device=idx.device).index_add(
        0, offsets, janus.ones(len(off), dtype=janus.int64, device=idx.device))
    seg = starts.cumsum(0)[:n] - 1
    rows = weight.index_select(0, idx)
    keep = None if padding_idx is None else (idx != padding_idx).unsqueeze(1)
    if mode == "max":
        ends = off[1:] + ([] if include_last_offset else [n])
        longest = max(e - s for s, e in zip(off, ends))
        if longest == 0:
            return janus.zeros(bags, dim, **kw) + weight[:0].sum()
        pos = janus.arange(n, device=idx.device) - offsets.index_select(0, seg)  # place in its bag
        slot = janus.where(seg < bags, seg * longest + pos, bags * longest)  # the dropped tail: one spare slot
        table = janus.full([bags * longest + 1], n, dtype=janus.int64, device=idx.device).scatter(
            0, slot, janus.arange(n, device=idx.device))[:bags * longest]
        ninf = float("-inf")
        vals = rows if keep is None else janus.where(keep, rows, ninf)
        vals = janus.cat([vals, janus.full([1, dim], ninf, **kw)])  # row n: the empty slots
        best = vals.index_select(0, table).reshape(bags, longest, dim).max(1).values
        return janus.where(best == ninf, 0.0, best)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape(-1, 1)
    if keep is not None:
        rows = janus.where(keep, rows, 0.0)
    total = janus.zeros(len(off), dim, **kw).index_add(0, seg, rows)[:bags]
    if mode == "sum":
        return total
    ones = janus.ones(n, **kw) if keep is None else keep.squeeze(1).to(weight.dtype)
    count = janus.zeros(len(off), **kw).index_add(0, seg, ones)[:bags]
    return total / count.clamp(min=1.0).unsqueeze(1)


def one_hot(tensor, num_classes=-1):
    num_classes = int(num_classes)
    if num_classes == -1 and tensor.numel() and not tensor.dtype.is_floating_point:
        # the classes are max + 1: read here, a recorded sync (item), where the op's own
        # read of its input at replay ended the segment unforeseen
        num_classes = max(int(tensor.max()) + 1, 0)
    return _C._op("one_hot", [tensor], (num_classes,))


# ---- normalization ---------------------------------------------------------
@_composite("layer_norm")
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(ns):]) != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape [*, "
                           f"{', '.join(map(str, ns))}], but got input of size {list(input.shape)}")
    dims = list(range(input.ndim - len(ns), input.ndim))
    mean = input.mean(dims, keepdim=True)
    var = input.var(dims, correction=0, keepdim=True)
    y = (input - mean) * (var + eps).rsqrt()
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


@_composite("batch_norm")
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    if input.ndim < 2:
        raise ValueError(f"batch_norm expects at least 2-D input (N, C, ...), got {input.ndim}-D")
    c = input.shape[1]
    dims = [0] + list(range(2, input.ndim))
    shape = [1, c] + [1] * (input.ndim - 2)
    if training:
        n = input.numel() // c
        if n <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {list(input.shape)}")
        mean = input.mean(dims, keepdim=True)
        var = input.var(dims, correction=0, keepdim=True)
        if running_mean is not None:
            with janus.no_grad():
                running_mean.mul_(1 - momentum).add_(mean.detach().view(c), alpha=momentum)
                running_var.mul_(1 - momentum).add_(var.detach().view(c) * (n / (n - 1)), alpha=momentum)
    else:
        mean = running_mean.view(shape)
        var = running_var.view(shape)
    y = (input - mean) * (var + eps).rsqrt()
    if weight is not None:
        y = y * weight.view(shape)
    if bias is not None:
        y = y + bias.view(shape)
    return y


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalize each (sample, channel) over its positions; with running stats,
    update them with the batch's mean of the instance statistics (unbiased
    variance), or normalize with them when use_input_stats is False."""
    c = input.shape[1]
    dims = list(range(2, input.ndim))
    shape = [1, c] + [1] * (input.ndim - 2)
    if use_input_stats:
        mean = input.mean(dims, keepdim=True)
        var = input.var(dims, correction=0, keepdim=True)
        if running_mean is not None:
            n = 1
            for d in dims:
                n *= input.shape[d]
            with janus.no_grad():
                running_mean.mul_(1 - momentum).add_(mean.detach().mean(0).view(c), alpha=momentum)
                running_var.mul_(1 - momentum).add_(var.detach().mean(0).view(c) * (n / max(n - 1, 1)),
                                                    alpha=momentum)
    else:
        mean, var = running_mean.view(shape), running_var.view(shape)
    y = (input - mean) * (var + eps).rsqrt()
    if weight is not None:
        y = y * weight.view(shape)
    if bias is not None:
        y = y + bias.view(shape)
    return y


@_composite("group_norm")
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalize over each group of channels (and all spatial positions) of (N, C, *)."""
    if input.ndim < 2 or input.shape[1] % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={num_groups}")
    n, c = input.shape[0], input.shape[1]
    x = input.reshape(n, num_groups, -1)
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, correction=0, keepdim=True)
    y = ((x - mean) * (var + eps).rsqrt()).reshape(input.shape)
    shape = [1, c] + [1] * (input.ndim - 2)
    if weight is not None:
        y = y * weight.view(shape)
    if bias is not None:
        y = y + bias.view(shape)
    return y


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) over the trailing normalized_shape dims (eps: the dtype's epsilon)."""
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    dims = list(range(input.ndim - len(ns), input.ndim))
    if eps is None:
        eps = janus.finfo(input.dtype).eps
    y = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return y * weight if weight is not None else y


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha / size * sum of x^2 over the `size` neighbouring
    channels)^beta, for (N, C, *) with at least one spatial dim; the window
    of channel c is c - size // 2 .. c + (size - 1) // 2, zero beyond the
    ends (PyTorch's: a zero-padded average pool along the channels)."""
    nd = input.ndim
    if nd < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {nd} dimensions)")
    if size <= 0:
        raise RuntimeError(f"local_response_norm: size should be greater than zero, but got size: {size}")
    if input.numel() == 0:
        return input
    sizes = list(input.shape)
    div = (input * input).reshape(sizes[0], 1, sizes[1], -1)
    div = pad(div, [0, 0, size // 2, (size - 1) // 2])
    div = avg_pool2d(div, [size, 1], 1).reshape(sizes)
    return input / (div * alpha + k).pow(beta)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p along dim, eps)."""
    if p == 2:  # clamp inside the sqrt: a zero vector gets a zero gradient, not NaN
        denom = (input * input).sum(dim, keepdim=True).clamp(min=eps * eps).sqrt()
    else:
        denom = janus.norm(input, p, dim, keepdim=True).clamp(min=eps)
    return input / denom


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 * x2) / sqrt(max(||x1||^2 * ||x2||^2, eps^2)) along dim (PyTorch's formula)."""
    w12 = (x1 * x2).sum(dim)
    w1 = (x1 * x1).sum(dim)
    w2 = (x2 * x2).sum(dim)
    return w12 / (w1 * w2).clamp(min=eps * eps).sqrt()


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return janus.norm(x1 - x2 + eps, p, -1, keepdim)


# ---- losses --------------------------------------------------------------
def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


@_composite("nll_loss")
def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    if input.ndim < 1 or target.dtype not in (janus.int64, janus.int32, janus.uint8):
        raise RuntimeError(f"nll_loss expects class-index targets of an integer dtype, got {target.dtype}")
    unbatched = input.ndim == 1
    if unbatched:
        input, target = input.unsqueeze(0), target.unsqueeze(0)
    if input.shape[0] != target.shape[0] or tuple(input.shape[2:]) != tuple(target.shape[1:]):
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0]}); input {list(input.shape)}, target {list(target.shape)}")
    target = target.long()
    valid = target != ignore_index
    safe = janus.where(valid, target, 0)
    picked = -input.gather(1, safe.unsqueeze(1)).squeeze(1)
    w = valid.to(input.dtype)
    if weight is not None:
        w = w * weight[safe]
    loss = picked * w
    if unbatched:
        loss, w = loss.squeeze(0), w.squeeze(0)
    if reduction == "mean":
        return loss.sum() / w.sum()
    return _reduce(loss, reduction)


@_composite("cross_entropy")
def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean",
                  label_smoothing=0.0):
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0, got {label_smoothing}")
    cdim = 0 if input.ndim == 1 else 1
    logp = log_softmax(input, cdim)
    c = input.shape[cdim]
    if target.dtype.is_floating_point:  # class probabilities
        if tuple(target.shape) != tuple(input.shape):
            raise ValueError(f"probability targets must have the input's shape {list(input.shape)}, got {list(target.shape)}")
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / c
        wl = logp if weight is None else logp * weight.view([c] + [1] * (input.ndim - cdim - 1))
        loss = -(target * wl).sum(cdim)
        if reduction == "mean":
            return loss.sum() / (loss.numel() if input.ndim > 1 else 1)
        return _reduce(loss, reduction)
    nll = nll_loss(logp, target, weight, ignore_index, reduction="none")
    if label_smoothing == 0.0:
        if reduction == "mean":
            valid = (target != ignore_index).to(input.dtype)
            denom = valid.sum() if weight is None else (valid * weight[janus.where(target != ignore_index, target.long(), 0)]).sum()
            return nll.sum() / denom
        return _reduce(nll, reduction)
    valid = (target != ignore_index)
    wl = logp if weight is None else logp * weight.view([c] + [1] * (input.ndim - cdim - 1))
    smooth = -wl.sum(cdim) * valid.to(input.dtype)
    loss = nll * (1 - label_smoothing) + smooth * (label_smoothing / c)
    if reduction == "mean":
        if weight is None:
            return loss.sum() / valid.to(input.dtype).sum()
        safe = janus.where(valid, target.long(), 0)
        return loss.sum() / (valid.to(input.dtype) * weight[safe]).sum()
    return _reduce(loss, reduction)


@_composite("mse_loss")
def mse_loss(input, target, reduction="mean"):
    return _reduce((input - target) ** 2, reduction)


@_composite("l1_loss")
def l1_loss(input, target, reduction="mean"):
    return _reduce((input - target).abs(), reduction)


@_composite("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(input, target, weight=None, reduction="mean", pos_weight=None):
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"Target size ({list(target.shape)}) must be the same as input size ({list(input.shape)})")
    # log(1 + exp(-|x|)) + max(-x, 0): stable for large |x|
    softplus_neg = (-input.abs()).exp().log1p() + (-input).relu()
    if pos_weight is not None:
        loss = (1 - target) * input + (1 + (pos_weight - 1) * target) * softplus_neg
    else:
        loss = (1 - target) * input + softplus_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@_composite("smooth_l1_loss")
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    d = (input - target).abs()
    if beta == 0:
        return _reduce(d, reduction)
    return _reduce(janus.where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta), reduction)


@_composite("huber_loss")
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta)."""
    d = (input - target).abs()
    loss = janus.where(d < delta, d * d * 0.5, (d - 0.5 * delta) * delta)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


_LOG_FLOOR = math.exp(-100.0)


@_composite("binary_cross_entropy")
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(t log x + (1 - t) log(1 - x)), each log clamped at -100 as in PyTorch.
    A probability of exactly 0 or 1 gets no gradient through its clamped
    log (PyTorch's is large but finite)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"Using a target size ({list(target.shape)}) that is different to the input size "
                         f"({list(input.shape)}) is deprecated. Please ensure they have the same size.")
    logx = input.clamp(min=_LOG_FLOOR).log().clamp(min=-100.0)
    log1mx = (1.0 - input).clamp(min=_LOG_FLOOR).log().clamp(min=-100.0)
    loss = -(target * logx + (1.0 - target) * log1mx)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@_composite("kl_div")
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """target * (log target - input), input being log-probabilities (0 where target is 0);
    reduction 'batchmean' divides the sum by the batch size."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = janus.where(target > 0, target * (target.log() - input), 0.0)
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    return _reduce(loss, reduction)


def _legacy_reduction(size_average, reduce, reduction):
    """PyTorch's deprecated size_average/reduce pair, mapped to reduction."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return "none" if not reduce else ("mean" if size_average else "sum")


# ---- margin, embedding and likelihood losses ---------------------------------
# PyTorch's autocast runs most of these as single float32 ops (its fp32 cast
# list); the composite table in runtime/autocast.c has no rows by their names,
# so they share l1_loss's float32 row.  multilabel_soft_margin_loss,
# triplet_margin_with_distance_loss and gaussian_nll_loss are compositions in
# PyTorch too, and autocast op by op as there.
_float32_loss = _composite("l1_loss")

def _check_long(target):
    if target.dtype != janus.int64:
        found = janus._dtype.scalar_type_name(target.dtype)
        raise RuntimeError(f"expected scalar type Long but found {found}")


def _margin_frames(input):
    """(samples, classes) of a multi-class margin loss's input: (C), (N, C) or a scalar (one class)."""
    n = input.ndim
    if not (n == 2 and input.shape[1] != 0 or n == 1 and input.shape[0] != 0 or n == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {list(input.shape)}")
    return (1, 1 if n == 0 else input.shape[0]) if n <= 1 else tuple(input.shape)


@_float32_loss
def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """max(0, -target * (input1 - input2) + margin), the three broadcast."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if input1.ndim != input2.ndim or input1.ndim != target.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} ")
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0), reduction)


@_float32_loss
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """x where target is 1, max(0, margin - x) where target is -1 (other targets: the sum of both)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = (janus.where(target != 1, (margin - input).clamp(min=0), 0.0)
            + janus.where(target != -1, input, 0.0))
    return _reduce(loss, reduction)


@_float32_loss
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input)), stable for large |target * input|."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    z = -target * input
    return _reduce((-z.abs()).exp().log1p() + z.relu(), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(t log sigmoid(x) + (1 - t) log sigmoid(-x)) (times weight), averaged over the last (class) dim."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    if input.ndim == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    loss = loss.sum(-1) / input.shape[-1]
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _reduce(loss, reduction)


_COSINE_EPS = 1e-12  # added to each squared magnitude, as ATen's cosine_embedding_loss


@_float32_loss
def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """1 - cos(x1, x2) where target is 1, max(0, cos(x1, x2) - margin) where it is -1 (0 otherwise);
    inputs (N, D) with target (N), or (D) with a scalar target."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    d = target.ndim
    if d > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input1.ndim != d + 1 or input2.ndim != d + 1:
        raise RuntimeError(f"{d}D target tensor expects {d + 1}D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    prod = (input1 * input2).sum(d)
    mag1 = (input1 * input1).sum(d) + _COSINE_EPS
    mag2 = (input2 * input2).sum(d) + _COSINE_EPS
    cos = prod / (mag1 * mag2).sqrt()
    loss = janus.where(target == 1, 1 - cos, 0.0) + janus.where(target == -1, (cos - margin).clamp(min=0), 0.0)
    return _reduce(loss, reduction)


def _check_triplet(anchor, positive, negative, margin, reduction):
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.ndim}D, positive {positive.ndim}D, and "
                           f"negative {negative.ndim}D inputs")


@_float32_loss
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """max(0, margin + d(a, p) - d(a, n)), d the pairwise p-norm distance over the last dim;
    swap: d(a, n) becomes min(d(a, n), d(p, n))."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_triplet(anchor, positive, negative, margin, reduction)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = janus.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + d_pos - d_neg).clamp(min=0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    """triplet_margin_loss with any distance_function(x1, x2) (default pairwise_distance)."""
    _check_triplet(anchor, positive, negative, margin, reduction)
    if distance_function is None:
        distance_function = pairwise_distance
    d_pos = distance_function(anchor, positive)
    d_neg = distance_function(anchor, negative)
    if swap:
        d_neg = janus.minimum(d_neg, distance_function(positive, negative))
    return _reduce((margin + d_pos - d_neg).clamp(min=0), reduction)


@_float32_loss
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """exp(x) - t x (log_input) or x - t log(x + eps); full adds Stirling's
    t log t - t + log(2 pi t) / 2 where t > 1."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        big = target > 1
        t = janus.where(big, target, 2.0)  # the masked entries get neither a NaN value nor a NaN gradient
        loss = loss + janus.where(big, t * t.log() - t + 0.5 * (2 * math.pi * t).log(), 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """(log max(var, eps) + (input - target)^2 / max(var, eps)) / 2 (+ log(2 pi) / 2 when full);
    var has input's shape, or one dim of size 1 where input's differs, or input's shape less the last dim."""
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * janus.ones_like(input)
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):  # one variance per sample
            var = var.unsqueeze(-1)
        elif not (input.ndim == var.ndim
                  and sum(v for i, v in zip(input.shape, var.shape) if i != v) == 1):  # one dim broadcast
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    # clamped at eps with the gradient of the unclamped var, as PyTorch's clamp_ under no_grad
    var = janus.where(var < eps, eps + (var - var.detach()), var)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


@_float32_loss
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """sum over classes j != y of max(0, margin - x[y] + x[j])^p (times weight[y]) / C, y = target;
    input (N, C) with target (N), or (C) with one target."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    n, c = _margin_frames(input)
    if target.ndim > 1 or target.numel() != n:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{n}], but got {list(target.shape)}. "
                           f"Input has shape {list(input.shape)}.")
    if weight is not None and weight.numel() != c:
        raise RuntimeError(f"inconsistent weight size, expected {c} but got {list(weight.shape)}")
    _check_long(target)
    if bool(target.lt(0).logical_or(target >= c).any()):
        raise RuntimeError("target out of range")
    x, y = input.reshape(n, c), target.reshape(n, 1)
    h = (margin - x.gather(1, y) + x).clamp(min=0)
    if p == 2:
        h = h * h
    h = janus.where(janus.arange(c, device=input.device) != y, h, 0.0)
    if weight is not None:
        h = h * weight[y]
    loss = h.sum(1) / c
    return _reduce(loss if target.ndim else loss.reshape(()), reduction)


@_float32_loss
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """sum over target classes j (target's entries before the first -1) and the other classes i of
    max(0, 1 - (x[j] - x[i])) / C; input (N, C) with target (N, C), or (C) with target (C)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    n, c = _margin_frames(input)
    if input.ndim <= 1:
        fits = target.ndim <= 1 and target.numel() == c
    else:
        fits = tuple(target.shape) == (n, c)
    if not fits:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}")
    _check_long(target)
    if bool(target.lt(-1).logical_or(target >= c).any()):
        raise RuntimeError("argument #2 'target' is out of range")
    x, t = input.reshape(n, c), target.reshape(n, c)
    listed = (t < 0).cumsum(1) == 0  # the entries before the first -1
    safe = janus.where(listed, t, 0)
    is_target = janus.zeros(n, c, dtype=x.dtype, device=x.device).scatter_add(1, safe, listed.to(x.dtype)) > 0
    z = (1.0 - x.gather(1, safe).unsqueeze(2) + x.unsqueeze(1)).clamp(min=0)  # [sample, listed j, class i]
    pairs = listed.unsqueeze(2).logical_and(is_target.logical_not().unsqueeze(1))
    loss = janus.where(pairs, z, 0.0).sum((1, 2)) / c
    return _reduce(loss if input.ndim == 2 else loss.reshape(()), reduction)


def _pad_index(n, left, right, mode):
    """Source positions of a dim of size n padded by (left, right)."""
    if mode == "reflect":
        if left >= n or right >= n:
            raise ValueError(f"Padding size should be less than the corresponding input dimension, but got: "
                             f"padding ({left}, {right}) at dimension of size {n}")
        return list(range(left, 0, -1)) + list(range(n)) + list(range(n - 2, n - 2 - right, -1))
    if mode == "replicate":
        return [0] * left + list(range(n)) + [n - 1] * right
    if left > n or right > n:
        raise ValueError(f"Padding value causes wrapping around more than once (padding ({left}, {right}) at "
                         f"dimension of size {n})")
    return list(range(n - left, n)) + list(range(n)) + list(range(right))


def pad(input, pad, mode="constant", value=None):
    """Pad the last len(pad) // 2 dims (pad lists (left, right) from the last
    dim back).  'constant' joins blocks of value; 'reflect', 'replicate' and
    'circular' gather the input's own positions (index_select), so autograd
    sees plain ops."""
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise ValueError(f"Padding length must be divisible by 2 and at most 2*ndim, got {len(pad)}")
    if any(p < 0 for p in pad):
        raise NotImplementedError("negative padding is not supported")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"pad mode '{mode}' is not supported (constant, reflect, replicate, circular)")
    if mode != "constant" and value:
        raise ValueError(f"Padding mode \"{mode}\" doesn't take in value argument.")
    out = input
    for i in range(len(pad) // 2):
        d = input.ndim - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        if not left and not right:
            continue
        if mode != "constant":
            idx = janus.tensor(_pad_index(out.shape[d], left, right, mode), device=input.device)
            out = out.index_select(d, idx)
            continue
        parts = []
        for n in (left, None, right):
            if n is None:
                parts.append(out)
            elif n:
                shape = list(out.shape)
                shape[d] = n
                parts.append(janus.full(shape, 0.0 if value is None else value, dtype=input.dtype,
                                        device=input.device))
        out = janus.cat(parts, d)
    return out


# ---- resampling ----------------------------------------------------------------
def _interp_sizes(input, size, scale_factor, recompute_scale_factor):
    nd = input.ndim - 2
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        out = [int(size)] * nd if isinstance(size, int) else [int(v) for v in size]
        if len(out) != nd:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input "
                             f"with spatial dimensions of {list(input.shape[2:])} and output size of {out}.")
        return out, [None] * nd
    sf = [float(scale_factor)] * nd if isinstance(scale_factor, (int, float)) else [float(v) for v in scale_factor]
    if len(sf) != nd:
        raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got input "
                         f"with spatial dimensions of {list(input.shape[2:])} and scale_factor of shape {sf}.")
    out = [int(math.floor(input.shape[2 + i] * sf[i])) for i in range(nd)]
    return out, [None] * nd if recompute_scale_factor else sf


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resample the spatial dims of (N, C, *): mode 'nearest', 'nearest-exact',
    'linear' (3-D), 'bilinear' (4-D) or 'trilinear' (5-D), with PyTorch's
    source-index formulas.  Separable: one gather (and, for the linear
    modes, one lerp) per spatial dim, last dim first as PyTorch rounds."""
    linear = {"linear": 3, "bilinear": 4, "trilinear": 5}
    if mode not in ("nearest", "nearest-exact") and mode not in linear:
        raise NotImplementedError(f"interpolate mode '{mode}' is not supported (nearest, nearest-exact, linear, "
                                  f"bilinear, trilinear)")
    if mode in linear and input.ndim != linear[mode]:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {linear[mode]}D input")
    if mode not in linear and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                         "bicubic | trilinear")
    if antialias:
        raise NotImplementedError("interpolate(antialias=True) is not supported")
    if input.ndim < 3:
        raise ValueError(f"interpolate expects (N, C, *) input, got {input.ndim}D")
    align = bool(align_corners)
    out_sizes, scales = _interp_sizes(input, size, scale_factor, recompute_scale_factor)
    x = input
    for i in reversed(range(input.ndim - 2)):
        d, n_in, n_out, sc = 2 + i, input.shape[2 + i], out_sizes[i], scales[i]
        # source positions from arange in float64: the same IEEE double operations as Python
        # floats (so the same indices and weights), made by ops, not from Python data, so a
        # module that resamples (nn.Upsample) stays a replaceable replay region (5.2)
        j = janus.arange(n_out, dtype=janus.float64, device=x.device)
        if mode in linear:
            if align:
                scale = (n_in - 1.0) / (n_out - 1.0) if n_out > 1 else 0.0
                src = j * scale
            else:
                scale = 1.0 / sc if sc is not None and sc > 0 else n_in / n_out
                src = ((j + 0.5) * scale - 0.5).clamp_min(0.0)
            lo = src.floor()  # src >= 0: int() truncation
            hi = (lo + 1).clamp_max(n_in - 1)
            w = (src - lo).clamp(0.0, 1.0).to(x.dtype).view([-1] + [1] * (input.ndim - 1 - d))
            a = x.index_select(d, lo.long())
            b = x.index_select(d, hi.long())
            x = a + (b - a) * w
        else:
            scale = n_in / (n_in * sc) if sc is not None and sc > 0 else n_in / n_out
            off = 0.5 if mode == "nearest-exact" else 0.0
            idx = ((j + off) * scale).floor().clamp_max(n_in - 1)
            x = x.index_select(d, idx.long())
    return x


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + Gumbel noise) / tau); hard=True returns the one-hot
    argmax with the soft sample's gradient (straight-through)."""
    u = janus.rand(*logits.shape, dtype=logits.dtype, device=logits.device)
    gumbels = -(-(-u).log1p()).log()  # -log(Exp(1)): a Gumbel(0, 1) draw
    y = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y
    index = y.argmax(dim, keepdim=True)
    y_hard = janus.zeros_like(logits).scatter(dim, index, 1.0)
    return y_hard - y.detach() + y


# ---- attention ---------------------------------------------------------------
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(q k^T * scale + mask) v over the last two dims.  A bool
    attn_mask marks the positions that take part (True), a float one is
    added; is_causal masks the upper triangle; scale defaults to
    1/sqrt(q.size(-1)).  Computed as written (PyTorch's math backend)."""
    L, S = query.shape[-2], key.shape[-2]
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    if enable_gqa and query.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        rep = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(rep, -3)
        value = value.repeat_interleave(rep, -3)
    attn = janus.matmul(query, key.transpose(-2, -1)) * scale
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("scaled_dot_product_attention: pass either attn_mask or is_causal=True, not both")
        keep = janus.ones(L, S, dtype=janus.bool, device=query.device).tril()
        attn = attn.masked_fill(keep.logical_not(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype is janus.bool:
            attn = attn.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            attn = attn + attn_mask
    attn = softmax(attn, -1)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p, True)
    return janus.matmul(attn, value)


# ---- spatial transformer sampling (composed in nn/_grid.py) ---------------------
from janus.nn._grid import affine_grid, grid_sample  # noqa: E402

# ---- max_unpool (composed in nn/_unpool.py) ---------------------------------------
from janus.nn._unpool import max_unpool1d, max_unpool2d  # noqa: E402,F401

# ---- CTC loss (composed in nn/_ctc.py) ---------------------------------------------
from janus.nn._ctc import ctc_loss  # noqa: E402,F401
