"""janus.nn.utils.fusion: fold an eval-mode BatchNorm into the convolution or
Linear before it (torch.nn.utils.fusion), for inference.

In eval mode batch norm is the affine map y = (x - mean) * w / sqrt(var +
eps) + b per channel, so conv-then-bn is one convolution whose weight is
the conv weight scaled per output channel by w / sqrt(var + eps), with bias
(conv_b - mean) * w / sqrt(var + eps) + b.  The formulas, dtypes and
requires_grad flags are torch's; the new weights are fresh leaf Parameters
(nothing is differentiated through the fusion), and the fused module is a
deep copy (the originals are untouched)."""
import copy

import janus

from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A new convolution computing conv followed by bn (both in eval mode;
    bn must track running statistics).  transpose: conv is a transposed
    convolution (its weight's output channels are dim 1)."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused_conv = copy.deepcopy(conv)
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused_conv.weight, fused_conv.bias = fuse_conv_bn_weights(
        fused_conv.weight, fused_conv.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias, transpose)
    return fused_conv


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """(weight, bias) Parameters of the fused convolution.  conv_b, bn_w and
    bn_b may be None (no bias; an affine=False batch norm).  The weight keeps
    conv_w's dtype and requires_grad, the bias conv_b's (conv_w's dtype and
    requires_grad=False when conv_b is None)."""
    conv_weight_dtype = conv_w.dtype
    conv_bias_dtype = conv_b.dtype if conv_b is not None else conv_weight_dtype
    if conv_b is None:
        conv_b = janus.zeros_like(bn_rm)
    if bn_w is None:
        bn_w = janus.ones_like(bn_rm)
    if bn_b is None:
        bn_b = janus.zeros_like(bn_rm)
    bn_var_rsqrt = janus.rsqrt(bn_rv + bn_eps)
    # the per-channel scale along the weight's output-channel dim (0; 1 for a transposed conv)
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.dim() - 2)
    fused_w = (conv_w * (bn_w * bn_var_rsqrt).reshape(shape)).to(dtype=conv_weight_dtype)
    fused_b = ((conv_b - bn_rm) * bn_var_rsqrt * bn_w + bn_b).to(dtype=conv_bias_dtype)
    return Parameter(fused_w, conv_w.requires_grad), Parameter(fused_b, conv_b.requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """A new Linear computing linear followed by bn (both in eval mode; bn's
    num_features must equal linear.out_features, or be 1)."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused_linear = copy.deepcopy(linear)
    # bn normalizes dim 1 of (N, C, ...) and linear writes the last dim: they are one
    # dim only when the sizes agree, or bn's one channel broadcasts
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(f"To fuse, linear.out_features == bn.num_features or bn.num_features == 1, "
                             f"got linear.out_features={linear.out_features} and bn.num_features={bn.num_features}")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused_linear.weight, fused_linear.bias = fuse_linear_bn_weights(
        fused_linear.weight, fused_linear.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused_linear


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """(weight, bias) Parameters of the fused Linear.  linear_b may be None;
    bn_w and bn_b are required (as in torch).  Dtypes and requires_grad as
    fuse_conv_bn_weights."""
    linear_weight_dtype = linear_w.dtype
    linear_bias_dtype = linear_b.dtype if linear_b is not None else linear_weight_dtype
    if linear_b is None:
        linear_b = janus.zeros_like(bn_rm)
    bn_scale = bn_w * janus.rsqrt(bn_rv + bn_eps)
    fused_w = linear_w * bn_scale.unsqueeze(-1).to(dtype=linear_weight_dtype)
    fused_b = ((linear_b - bn_rm) * bn_scale + bn_b).to(dtype=linear_bias_dtype)
    return Parameter(fused_w, linear_w.requires_grad), Parameter(fused_b, linear_b.requires_grad)
