"""Identity, Linear, Bilinear and LazyLinear (torch.nn.modules.linear)."""
import math

import janus

from .. import functional as F
from .. import init
from .lazy import LazyModuleMixin
from ..module import Module
from ..parameter import Parameter


class Identity(Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


class Linear(Module):
    def __init__(self, in_features, out_features, bias=True, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(janus.empty(out_features, in_features, dtype=dtype))
        self.bias = Parameter(janus.empty(out_features, dtype=dtype)) if bias else None
        if not bias:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        if x.shape[-1] != self.in_features:
            raise RuntimeError(f"Linear: input has {x.shape[-1]} features in its last dim "
                               f"(shape {list(x.shape)}) but the layer expects in_features={self.in_features}")
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class NonDynamicallyQuantizableLinear(Linear):
    """PyTorch's name for MultiheadAttention's output projection (a Linear
    its quantization tooling skips); here so its pickled modules load."""


class Bilinear(Module):
    """y = x1^T A x2 + b: weight (out_features, in1_features, in2_features) and
    bias (out_features), both U(-1/sqrt(in1_features), 1/sqrt(in1_features))."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        self.weight = Parameter(janus.empty(out_features, in1_features, in2_features, dtype=dtype))
        if bias:
            self.bias = Parameter(janus.empty(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()
        if device is not None:
            self.to(device)

    def reset_parameters(self):
        if self.in1_features <= 0:
            raise ValueError(f"in1_features must be > 0, but got (in1_features={self.in1_features})")
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class LazyLinear(LazyModuleMixin, Linear):
    """A Linear whose in_features is input.shape[-1] of its first call: then
    weight (out_features, in_features) and bias get Linear's initialization
    and the module becomes a Linear (janus/nn/modules/lazy.py)."""

    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        Module.__init__(self)
        self.in_features, self.out_features = 0, out_features
        self.weight = Parameter(janus.empty(0, dtype=dtype))
        if bias:
            self.bias = Parameter(janus.empty(0, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self._uninitialized = {"weight", "bias"} if bias else {"weight"}
        if device is not None:
            self.to(device)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        """in_features from input.shape[-1]; materialize and initialize."""
        if self.has_uninitialized_params():
            with janus.no_grad():
                self.in_features = input.shape[-1]
                self._materialize("weight", (self.out_features, self.in_features))
                if self.bias is not None:
                    self._materialize("bias", (self.out_features,))
                self.reset_parameters()

    def _loaded_shapes(self):
        if "weight" not in self._uninitialized:
            self.in_features = self.weight.shape[-1]

    def forward(self, input):
        self._infer_parameters(input)
        return Linear.forward(self, input)
