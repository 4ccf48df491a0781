"""max_unpool1d / max_unpool2d (torch.nn.functional): the partial inverse of
max_pool with return_indices, composed from table ops so autograd
differentiates it.

max_pool2d's indices are flat positions in each (H*W) plane of its input, as
torch's are; unpooling scatters each pooled value to its position in a
zero plane of the output size (`scatter` along the flattened plane, whose
gradient for the values is a `gather`).  max_unpool1d runs the 2-d form
over a trailing width of one, as torch does.  Indices outside the output
plane are refused by scatter's own range check, raised as torch's
RuntimeError "Found an invalid max index"; no host read of the indices is made here, so a
recorded or replayed step keeps no sync for it.
"""
import janus


def _tuple(v, n, name):
    if isinstance(v, int):
        return [v] * n
    v = [int(x) for x in v]
    if len(v) == 1:
        return v * n
    if len(v) != n:
        raise ValueError(f"{name} must be an int or a {n}-tuple of ints, got {v}")
    return v


def _unpool_output_size(input, kernel_size, stride, padding, output_size):
    """torch.nn.functional._unpool_output_size: the default spatial size, or the
    given one checked against it (the full size or its spatial part)."""
    k = len(kernel_size)
    default = [(input.shape[-k + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d] for d in range(k)]
    if output_size is None:
        ret = default
    else:
        output_size = list(output_size)
        if len(output_size) == k + 2:
            output_size = output_size[2:]
        if len(output_size) != k:
            raise ValueError("output_size should be a sequence containing "
                             f"{k} or {k + 2} elements, but it has a length of '{len(output_size)}'")
        for d in range(k):
            lo, hi = default[d] - stride[d], default[d] + stride[d]
            if not (lo < output_size[d] < hi):
                raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {lo} and {hi})')
        ret = [int(v) for v in output_size]
    for d in range(k):
        if ret[d] < 0:
            raise ValueError("max_unpooling: output_size must contain non-negative spatial "
                             f"dimensions, but got output_size[{d}]={ret[d]}")
    return ret


def _unpool2d(input, indices, size):
    """torch._C._nn.max_unpool2d(input, indices, output_size) for 3-d/4-d input."""
    if input.ndim not in (3, 4):
        raise RuntimeError("Input to max_unpooling2d should be a 3d or 4d Tensor, but got a tensor with "
                           f"{input.ndim} dimensions.")
    if indices.dtype != janus.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: {_scalar_name(indices.dtype)}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: {list(indices.shape)}")
    oh, ow = size
    lead = tuple(input.shape[:-2])
    plane = janus.zeros(lead + (oh * ow,), dtype=input.dtype, device=input.device)
    try:
        out = plane.scatter(-1, indices.flatten(-2), input.flatten(-2))
    except IndexError as e:  # torch's message and type for an index outside the output plane
        raise RuntimeError(f"Found an invalid max index ({e}; output volumes are of size {oh}x{ow})") from None
    return out.reshape(lead + (oh, ow))


def _scalar_name(dtype):
    # torch's ScalarType names in this message: Float, Double, Int, Long, ...
    names = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int32": "Int",
             "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}
    s = str(dtype).split(".")[-1]
    return names.get(s, s)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    kernel_size = _tuple(kernel_size, 2, "kernel_size")
    stride = kernel_size if stride is None else _tuple(stride, 2, "stride")
    padding = _tuple(padding, 2, "padding")
    size = _unpool_output_size(input, kernel_size, stride, padding, output_size)
    return _unpool2d(input, indices, size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    kernel_size = _tuple(kernel_size, 1, "kernel_size")
    stride = kernel_size if stride is None else _tuple(stride, 1, "stride")
    padding = _tuple(padding, 1, "padding")
    size = _unpool_output_size(input, kernel_size, stride, padding, output_size)
    return _unpool2d(input.unsqueeze(-1), indices.unsqueeze(-1), size + [1]).squeeze(-1)
