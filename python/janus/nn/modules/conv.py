"""Convolutions (torch.nn.modules.conv): Conv1d/Conv2d and their
transposes, with PyTorch's parameter shapes and initialization.  The 1-d
forms run the 2-d table ops over a height of one; a transposed convolution
is conv2d's input gradient (one table op, conv2d_input_grad)."""
import math

import janus

from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter


def _tuple(v, nd, name):
    return tuple(F._pair(v, name)) if nd == 2 else (F._single(v, name),)


class _ConvNd(Module):
    _nd = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        if padding_mode != "zeros":
            raise NotImplementedError(f"padding_mode='{padding_mode}' is not supported (only 'zeros')")
        if in_channels % groups or out_channels % groups:
            raise ValueError("in_channels and out_channels must be divisible by groups")
        nd = self._nd
        k = _tuple(kernel_size, nd, "kernel_size")
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, k
        self.stride = _tuple(stride, nd, "stride")
        self.padding = padding if isinstance(padding, str) else _tuple(padding, nd, "padding")
        self.dilation = _tuple(dilation, nd, "dilation")
        self.groups = groups
        self.weight = Parameter(janus.empty(out_channels, in_channels // groups, *k, dtype=dtype))
        if bias:
            self.bias = Parameter(janus.empty(out_channels, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()
        if device is not None:
            self.to(device)

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding not in ((0,) * self._nd, "valid"):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._nd:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class Conv2d(_ConvNd):
    def forward(self, x):
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv1d(_ConvNd):
    """weight (out, in / groups, k)."""
    _nd = 1

    def forward(self, x):
        return F.conv1d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class ConvTranspose2d(Module):
    """weight (in, out / groups, kH, kW); output size (H - 1) * stride - 2 *
    padding + dilation * (k - 1) + output_padding + 1 per spatial dim, or
    forward(x, output_size=...) picks output_padding to reach output_size."""
    _nd = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        if in_channels % groups or out_channels % groups:
            raise ValueError("in_channels and out_channels must be divisible by groups")
        t = lambda v, name: _tuple(v, self._nd, name)  # noqa: E731
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding = t(kernel_size, "kernel_size"), t(stride, "stride"), t(padding, "padding")
        self.output_padding, self.dilation = t(output_padding, "output_padding"), t(dilation, "dilation")
        self.groups = groups
        self.weight = Parameter(janus.empty(in_channels, out_channels // groups, *self.kernel_size, dtype=dtype))
        if bias:
            self.bias = Parameter(janus.empty(out_channels, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()
        if device is not None:
            self.to(device)

    reset_parameters = _ConvNd.reset_parameters

    def _output_padding(self, x, output_size):
        if output_size is None:
            return self.output_padding
        want = list(output_size)[-self._nd:]
        out = []
        for i in range(self._nd):
            base = ((x.shape[x.ndim - self._nd + i] - 1) * self.stride[i] - 2 * self.padding[i] +
                    self.dilation[i] * (self.kernel_size[i] - 1) + 1)
            extra = want[i] - base
            if not 0 <= extra < max(self.stride[i], self.dilation[i]):
                raise ValueError(f"requested an output size of {want}, but valid sizes range from {base} to "
                                 f"{base + max(self.stride[i], self.dilation[i]) - 1} (for an input of "
                                 f"{list(x.shape[-self._nd:])})")
            out.append(extra)
        return tuple(out)

    def forward(self, x, output_size=None):
        return F.conv_transpose2d(x, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(x, output_size), self.groups, self.dilation)

    def extra_repr(self):
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if any(self.padding):
            s += f", padding={self.padding}"
        if any(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if any(d != 1 for d in self.dilation):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class ConvTranspose1d(ConvTranspose2d):
    _nd = 1

    def forward(self, x, output_size=None):
        return F.conv_transpose1d(x, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(x, output_size), self.groups, self.dilation)
