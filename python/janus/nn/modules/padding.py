"""Padding layers (torch.nn.modules.padding): F.pad with a fixed mode.
padding is an int (every side) or (left, right[, top, bottom[, front, back]]);
the 3d forms pad the last three dims of (N, C, D, H, W) or (C, D, H, W)."""
from .. import functional as F
from ..module import Module


class _PadNd(Module):
    _mode = "constant"
    _nd = 1

    def __init__(self, padding, value=0.0):
        super().__init__()
        self.padding = (padding,) * (2 * self._nd) if isinstance(padding, int) else tuple(padding)
        if len(self.padding) != 2 * self._nd:
            raise ValueError(f"{type(self).__name__} expects {2 * self._nd} padding values, got {self.padding}")
        self.value = value

    def forward(self, x):
        if self._mode == "constant":
            return F.pad(x, self.padding, "constant", self.value)
        if self._nd == 3 and x.ndim not in (4, 5):  # PyTorch's checks (F.pad itself takes any rank)
            if self._mode == "circular":
                raise ValueError(f"expected 4D or 5D input (got {x.ndim}D input)")
            raise NotImplementedError(f"Padding size {len(self.padding)} is not supported for {x.ndim}D input tensor.")
        return F.pad(x, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class ConstantPad1d(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding, value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad2d(ConstantPad1d):
    _nd = 2


class ZeroPad1d(_PadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)


class ZeroPad2d(ZeroPad1d):
    _nd = 2


class ReflectionPad1d(_PadNd):
    _mode = "reflect"

    def __init__(self, padding):
        super().__init__(padding)


class ReflectionPad2d(ReflectionPad1d):
    _nd = 2


class ReplicationPad1d(ReflectionPad1d):
    _mode = "replicate"


class ReplicationPad2d(ReplicationPad1d):
    _nd = 2


class CircularPad1d(ReflectionPad1d):
    _mode = "circular"


class CircularPad2d(CircularPad1d):
    _nd = 2


class ConstantPad3d(ConstantPad1d):
    _nd = 3


class ZeroPad3d(ZeroPad1d):
    _nd = 3


class ReflectionPad3d(ReflectionPad1d):
    _nd = 3


class ReplicationPad3d(ReplicationPad1d):
    _nd = 3


class CircularPad3d(CircularPad1d):
    _nd = 3
