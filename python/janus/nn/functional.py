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


def dropout(input, p=0.5, training=True, inplace=False):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    # Philox-generated keep mask: replay reproduces it exactly from (seed, offset)
    if input.is_cuda:  # the mask is drawn on the device: the same Philox stream as a cpu run
        old = _C._set_factory_device(1)
        try:
            mask = _C._op("dropout_mask", [], (list(input.shape), float(p)))
        finally:
            _C._set_factory_device(old)
    else:
        mask = _C._op("dropout_mask", [], (list(input.shape), float(p)))
    out = input * (mask.to(input.dtype) * (1.0 / (1.0 - p)))
    if inplace:
        with janus.no_grad():
            input.copy_(out)
        return input
    return out


# ---- linear / conv / pooling ---------------------------------------------
def linear(input, weight, bias=None):
    return _C._op("linear", [input, weight] + ([bias] if bias is not None else []), ())


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


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: max_norm, scale_grad_by_freq and sparse are not supported")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    return _C._op("embedding", [weight, input], (-1 if padding_idx is None else int(padding_idx),))


def one_hot(tensor, num_classes=-1):
    return _C._op("one_hot", [tensor], (int(num_classes),))


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


def pad(input, pad, mode="constant", value=0.0):
    if mode != "constant":
        raise NotImplementedError(f"pad mode '{mode}' is not supported (only 'constant')")
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise ValueError(f"Padding length must be divisible by 2 and at most 2*ndim, got {len(pad)}")
    if any(p < 0 for p in pad):
        raise NotImplementedError("negative padding is not supported")
    out = input
    for i in range(len(pad) // 2):  # built with cat, so autograd sees plain ops
        d = input.ndim - 1 - i
        parts = []
        for n in (pad[2 * i], None, pad[2 * i + 1]):
            if n is None:
                parts.append(out)
            elif n:
                shape = list(out.shape)
                shape[d] = n
                parts.append(janus.full(shape, value, dtype=input.dtype, device=input.device))
        out = janus.cat(parts, d) if len(parts) > 1 else out
    return out
