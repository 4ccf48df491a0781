"""The layers of janus.nn, with PyTorch's constructor arguments, parameter
names and default initializations (so state dicts and seeds carry over)."""
import math
from collections import OrderedDict

import janus

from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter


def _empty(*shape):
    return janus.empty(*shape)


# ---- containers --------------------------------------------------------
class Sequential(Module):
    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for k, m in args[0].items():
                self.add_module(k, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def forward(self, input):
        for m in self._modules.values():
            input = m(input)
        return input

    def __getitem__(self, idx):
        mods = list(self._modules.values())
        if isinstance(idx, slice):
            return Sequential(*mods[idx])
        return mods[idx]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, m):
        self.add_module(str(len(self)), m)
        return self


class ModuleList(Module):
    def __init__(self, modules=None):
        super().__init__()
        for m in modules or []:
            self.append(m)

    def append(self, m):
        self.add_module(str(len(self._modules)), m)
        return self

    def extend(self, ms):
        for m in ms:
            self.append(m)
        return self

    def __getitem__(self, idx):
        mods = list(self._modules.values())
        return ModuleList(mods[idx]) if isinstance(idx, slice) else mods[idx]

    def __setitem__(self, idx, m):
        key = list(self._modules.keys())[idx]
        self.add_module(key, m)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())


class ModuleDict(Module):
    def __init__(self, modules=None):
        super().__init__()
        for k, m in (modules or {}).items():
            self.add_module(k, m)

    def __getitem__(self, k):
        return self._modules[k]

    def __setitem__(self, k, m):
        self.add_module(k, m)

    def __delitem__(self, k):
        del self._modules[k]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, k):
        return k in self._modules

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()


class Identity(Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


class Flatten(Module):
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return x.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


# ---- linear / conv / pool ------------------------------------------------
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


class Conv2d(Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", dtype=None):
        super().__init__()
        if padding_mode != "zeros":
            raise NotImplementedError(f"padding_mode='{padding_mode}' is not supported (only 'zeros')")
        if in_channels % groups or out_channels % groups:
            raise ValueError("in_channels and out_channels must be divisible by groups")
        k = F._pair(kernel_size, "kernel_size")
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, tuple(k)
        self.stride = tuple(F._pair(stride, "stride"))
        self.padding = padding if isinstance(padding, str) else tuple(F._pair(padding, "padding"))
        self.dilation = tuple(F._pair(dilation, "dilation"))
        self.groups = groups
        self.weight = Parameter(janus.empty(out_channels, in_channels // groups, *k, dtype=dtype))
        if bias:
            self.bias = Parameter(janus.empty(out_channels, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self):
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding not in ((0, 0), "valid"):
            s += f", padding={self.padding}"
        if self.dilation != (1, 1):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class MaxPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride if stride is not None else kernel_size, padding
        self.dilation, self.return_indices, self.ceil_mode = dilation, return_indices, ceil_mode

    def forward(self, x):
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride if stride is not None else kernel_size, padding
        self.ceil_mode, self.count_include_pad, self.divisor_override = ceil_mode, count_include_pad, divisor_override

    def forward(self, x):
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool2d(Module):
    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x):
        return F.adaptive_avg_pool2d(x, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


# ---- activations ---------------------------------------------------------
class ReLU(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return F.relu(x, self.inplace)


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, self.approximate)

    def extra_repr(self):
        return f"approximate='{self.approximate}'"


class Tanh(Module):
    def forward(self, x):
        return x.tanh()


class Sigmoid(Module):
    def forward(self, x):
        return x.sigmoid()


class SiLU(Module):
    def __init__(self, inplace=False):
        super().__init__()

    def forward(self, x):
        return x.silu()


class Softmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.softmax(x, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    def forward(self, x):
        return F.log_softmax(x, self.dim)


class Dropout(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, x):
        return F.dropout(x, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


# ---- embedding and normalization ---------------------------------------
class Embedding(Module):
    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, dtype=None, _weight=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError("padding_idx must be within num_embeddings")
            if padding_idx < 0:
                padding_idx += num_embeddings
        self.padding_idx = padding_idx
        if _weight is not None:
            self.weight = Parameter(_weight)
        else:
            self.weight = Parameter(janus.empty(num_embeddings, embedding_dim, dtype=dtype))
            self.reset_parameters()

    def reset_parameters(self):
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with janus.no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, idx):
        return F.embedding(idx, self.weight, self.padding_idx)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        return s + (f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, dtype=None):
        super().__init__()
        ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps, self.elementwise_affine = ns, eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(janus.ones(*ns, dtype=dtype))
            if bias:
                self.bias = Parameter(janus.zeros(*ns, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class _BatchNorm(Module):
    _dims = ()

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, dtype=None):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(janus.ones(num_features, dtype=dtype))
            self.bias = Parameter(janus.zeros(num_features, dtype=dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", janus.zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", janus.ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", janus.tensor(0, dtype=janus.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def forward(self, x):
        if x.ndim not in self._dims:
            raise ValueError(f"expected {' or '.join(f'{d}D' for d in self._dims)} input (got {x.ndim}D input)")
        if x.shape[1] != self.num_features:
            raise RuntimeError(f"{type(self).__name__}: input has {x.shape[1]} channels, expected {self.num_features}")
        use_batch = self.training or not self.track_running_stats
        if self.training and self.track_running_stats:
            with janus.no_grad():
                self.num_batches_tracked.add_(1)
        return F.batch_norm(x, self.running_mean if not use_batch or self.training else None,
                            self.running_var if not use_batch or self.training else None,
                            self.weight, self.bias, use_batch, self.momentum, self.eps)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    _dims = (4,)


# ---- recurrent -------------------------------------------------------------
# The pointwise part of a cell step runs as one fused table op (lstm_cell /
# gru_cell in runtime/k_fused.c, with a fused backward) when the operands
# allow it: one float32/float64 dtype and the shapes the cells produce.
# Otherwise (half dtypes, broadcasting states) the same math runs as separate
# ops.  _FUSED_CELLS = False forces the unfused path (benchmarks, tests).
_FUSED_CELLS = True
_FUSED_DTYPES = (janus.float32, janus.float64)
_C_OPS = janus.ops


def _fusable(gx, gh, s, gates):
    """gx, gh: [B, gates*H], s: [B, H], one fused dtype (kept cheap: it runs
    every time step)."""
    d = gx.dtype
    if not _FUSED_CELLS or d not in _FUSED_DTYPES or gh.dtype is not d or s.dtype is not d:
        return False
    xs, ss = gx.shape, s.shape
    if len(xs) != 2 or len(ss) != 2 or xs != gh.shape:
        return False
    b, w = xs
    sb, sw = ss
    return sb == b and sw * gates == w


def _lstm_cell(x_proj, h, c, w_hh, b_hh):
    gh = F.linear(h, w_hh, b_hh)
    if _fusable(x_proj, gh, c, 4):
        h, c, _ = _C_OPS.lstm_cell(x_proj, gh, c)
        return h, c
    gates = x_proj + gh
    i, f, g, o = gates.chunk(4, 1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c.tanh(), c


def _gru_cell(x_proj, h, w_hh, b_hh):
    gh = F.linear(h, w_hh, b_hh)
    if _fusable(x_proj, gh, h, 3):
        return _C_OPS.gru_cell(x_proj, gh, h)[0]
    xr, xz, xn = x_proj.chunk(3, 1)
    hr, hz, hn = gh.chunk(3, 1)
    r = (xr + hr).sigmoid()
    z = (xz + hz).sigmoid()
    n = (xn + r * hn).tanh()
    return (1 - z) * n + z * h


def _rnn_cell(x_proj, h, w_hh, b_hh, nonlinearity):
    pre = x_proj + F.linear(h, w_hh, b_hh)
    return pre.tanh() if nonlinearity == "tanh" else pre.relu()


class _CellBase(Module):
    _gates = 1

    def __init__(self, input_size, hidden_size, bias=True, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        g = self._gates * hidden_size
        self.weight_ih = Parameter(janus.empty(g, input_size, dtype=dtype))
        self.weight_hh = Parameter(janus.empty(g, hidden_size, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(janus.empty(g, dtype=dtype))
            self.bias_hh = Parameter(janus.empty(g, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        k = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0
        for p in self.parameters():
            init.uniform_(p, -k, k)

    def _prep(self, x, hx):
        if x.ndim not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got {x.ndim}D instead")
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"{type(self).__name__}: input has {x.shape[-1]} features, expected input_size={self.input_size}")
        batched = x.ndim == 2
        if not batched:
            x = x.unsqueeze(0)
        return x, batched

    def extra_repr(self):
        return f"{self.input_size}, {self.hidden_size}"


class LSTMCell(_CellBase):
    _gates = 4

    def forward(self, x, hx=None):
        x, batched = self._prep(x, hx)
        if hx is None:
            z = janus.zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
            hx = (z, z)
        h, c = hx
        if not batched:
            h, c = h.unsqueeze(0), c.unsqueeze(0)
        h, c = _lstm_cell(F.linear(x, self.weight_ih, self.bias_ih), h, c, self.weight_hh, self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(_CellBase):
    _gates = 3

    def forward(self, x, hx=None):
        x, batched = self._prep(x, hx)
        h = janus.zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device) if hx is None else (hx if batched else hx.unsqueeze(0))
        h = _gru_cell(F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh, self.bias_hh)
        return h if batched else h.squeeze(0)


class RNNCell(_CellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", dtype=None):
        super().__init__(input_size, hidden_size, bias, dtype)
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'")
        self.nonlinearity = nonlinearity

    def forward(self, x, hx=None):
        x, batched = self._prep(x, hx)
        h = janus.zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device) if hx is None else (hx if batched else hx.unsqueeze(0))
        h = _rnn_cell(F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh, self.bias_hh, self.nonlinearity)
        return h if batched else h.squeeze(0)


class _RNNBase(Module):
    _gates = 1
    _has_c = False

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, nonlinearity="tanh", proj_size=0, dtype=None):
        super().__init__()
        if bidirectional:
            raise NotImplementedError(f"{type(self).__name__}(bidirectional=True) is not supported yet")
        if proj_size:
            raise NotImplementedError("proj_size is not supported")
        if not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1]")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout, self.nonlinearity = bias, batch_first, float(dropout), nonlinearity
        self.bidirectional = False
        g = self._gates * hidden_size
        for layer in range(num_layers):
            isz = input_size if layer == 0 else hidden_size
            setattr(self, f"weight_ih_l{layer}", Parameter(janus.empty(g, isz, dtype=dtype)))
            setattr(self, f"weight_hh_l{layer}", Parameter(janus.empty(g, hidden_size, dtype=dtype)))
            if bias:
                setattr(self, f"bias_ih_l{layer}", Parameter(janus.empty(g, dtype=dtype)))
                setattr(self, f"bias_hh_l{layer}", Parameter(janus.empty(g, dtype=dtype)))
        k = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0
        for p in self.parameters():
            init.uniform_(p, -k, k)

    def _layer_params(self, layer):
        g = lambda n: getattr(self, f"{n}_l{layer}") if self.bias or n.startswith("weight") else None  # noqa: E731
        return g("weight_ih"), g("weight_hh"), g("bias_ih"), g("bias_hh")

    def forward(self, input, hx=None):
        if input.ndim not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.ndim}D instead")
        batched = input.ndim == 3
        x = input if batched else input.unsqueeze(1)
        if batched and self.batch_first:
            x = x.transpose(0, 1)
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"{type(self).__name__}: input.size(-1) must be equal to input_size. "
                               f"Expected {self.input_size}, got {x.shape[-1]}")
        T, N = x.shape[0], x.shape[1]
        if hx is None:
            z = janus.zeros(self.num_layers, N, self.hidden_size, dtype=x.dtype, device=x.device)
            h0, c0 = z, z
        elif self._has_c:
            h0, c0 = hx
            if not batched:
                h0, c0 = h0.unsqueeze(1), c0.unsqueeze(1)
        else:
            h0, c0 = (hx if batched else hx.unsqueeze(1)), None
        hs, cs = [], []
        for layer in range(self.num_layers):
            w_ih, w_hh, b_ih, b_hh = self._layer_params(layer)
            # the input projection of every time step in one GEMM
            proj = F.linear(x, w_ih, b_ih)
            h = h0[layer]
            c = c0[layer] if self._has_c else None
            outs = []
            for t in range(T):
                if self._has_c:
                    h, c = _lstm_cell(proj[t], h, c, w_hh, b_hh)
                elif self._gates == 3:
                    h = _gru_cell(proj[t], h, w_hh, b_hh)
                else:
                    h = _rnn_cell(proj[t], h, w_hh, b_hh, self.nonlinearity)
                outs.append(h)
            x = janus.stack(outs, 0) if outs else janus.zeros(0, N, self.hidden_size, dtype=x.dtype, device=x.device)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
            hs.append(h)
            cs.append(c)
        out = x
        if batched and self.batch_first:
            out = out.transpose(0, 1)
        if not batched:
            out = out.squeeze(1)
        h_n = janus.stack(hs, 0)
        if not batched:
            h_n = h_n.squeeze(1)
        if self._has_c:
            c_n = janus.stack(cs, 0)
            if not batched:
                c_n = c_n.squeeze(1)
            return out, (h_n, c_n)
        return out, h_n

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        return s


class LSTM(_RNNBase):
    _gates = 4
    _has_c = True


class GRU(_RNNBase):
    _gates = 3


class RNN(_RNNBase):
    def __init__(self, *args, nonlinearity="tanh", **kwargs):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(*args, nonlinearity=nonlinearity, **kwargs)


# ---- losses --------------------------------------------------------------
class _Loss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"{reduction} is not a valid value for reduction")
        self.reduction = reduction


class CrossEntropyLoss(_Loss):
    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.weight, self.ignore_index, self.reduction, self.label_smoothing)


class NLLLoss(_Loss):
    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class MSELoss(_Loss):
    def forward(self, input, target):
        return F.mse_loss(input, target, self.reduction)


class L1Loss(_Loss):
    def forward(self, input, target):
        return F.l1_loss(input, target, self.reduction)


class BCEWithLogitsLoss(_Loss):
    def __init__(self, weight=None, reduction="mean", pos_weight=None):
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, self.reduction, self.pos_weight)
