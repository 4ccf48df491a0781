"""janus.nn.utils.memory_format: convert_conv2d_weight_memory_format
(torch.nn.utils.memory_format), accepted for ported scripts."""

__all__ = ["convert_conv2d_weight_memory_format"]


def convert_conv2d_weight_memory_format(module, memory_format):
    """Returns `module` unchanged.  torch restrides Conv2d/ConvTranspose2d
    weights to `memory_format` (channels_last for NHWC kernels); janus
    tensors are always contiguous NCHW (janus.channels_last is accepted where
    torch takes memory_format=, but the layout stays row-major), and its
    convolutions choose their own layout, so there is nothing to convert and
    memory_format is ignored."""
    return module
