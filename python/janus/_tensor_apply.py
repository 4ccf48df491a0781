"""Tensor.apply_(callable) and Tensor.map_(tensor, callable): torch's
elementwise Python-callable updates, in place, CPU only.

As in torch they run the callable once per element on the host (one read of
the tensor's values: a sync under record and replay, as torch reads its CPU
memory) and write the results back through `copy_`, so a strided view
writes into its base.  torch's rules are kept: a tensor that requires grad
is refused, a CUDA tensor raises TypeError, map_'s other must have self's
type and broadcast to self's shape, and each result is converted as
torch converts a Python number to the tensor's dtype (a float to an integer
dtype truncates; a non-number raises TypeError).
"""
import numbers

from ._tensor import Tensor


def _convert(dtype, v):
    import janus
    if dtype == janus.bool:
        return bool(v)
    if dtype.is_floating_point:
        if not isinstance(v, numbers.Real):
            raise TypeError(f"must be real number, not {type(v).__name__}")
        return float(v)
    if not isinstance(v, numbers.Real):  # torch: an integral dtype takes any real number, truncated
        raise TypeError(f"'{type(v).__name__}' object cannot be interpreted as an integer")
    return int(v)


def _write(self, values):
    import janus
    self.copy_(janus.tensor(values, dtype=self.dtype).reshape(self.shape))
    return self


def _flat(x):
    v = x.tolist()
    if not isinstance(v, list):
        return [v]
    while v and isinstance(v[0], list):
        v = [e for row in v for e in row]
    return v if x.numel() else []


def apply_(self, callable):
    """apply_(callable) -> Tensor: replace each element by callable(element) (CPU tensors only)."""
    if self.requires_grad:
        raise RuntimeError("Can't call apply_() on Variable that requires grad. Use var.detach().apply_() instead.")
    if self.device.type != "cpu":
        raise TypeError("apply_ is only implemented on CPU tensors")
    vals = _flat(self)
    if not vals:
        return self
    return _write(self, [_convert(self.dtype, callable(v)) for v in vals])


def map_(self, tensor, callable):
    """map_(tensor, callable) -> Tensor: self[i] = callable(self[i], tensor[i]), tensor broadcast to self's
    shape (CPU tensors only; tensor must have self's type)."""
    if self.requires_grad:
        raise RuntimeError("Can't call map_() on Variable that requires grad. Use var.detach().map_() instead.")
    if not isinstance(tensor, Tensor):
        raise TypeError(f"map_(): argument 'tensor' (position 1) must be Tensor, not {type(tensor).__name__}")
    if tensor.dtype != self.dtype or tensor.device != self.device:
        raise TypeError(f"map_: expected {self.type()} for 'other' (got {tensor.type()})")
    if self.device.type != "cpu":
        raise TypeError("map_ is only implemented on CPU tensors")
    other = tensor.expand(self.shape)  # torch's expand error for a shape that does not broadcast
    a, b = _flat(self), _flat(other)
    if not a:
        return self
    return _write(self, [_convert(self.dtype, callable(x, y)) for x, y in zip(a, b)])


Tensor.apply_ = apply_
Tensor.map_ = map_
