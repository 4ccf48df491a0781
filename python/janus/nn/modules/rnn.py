"""Recurrent layers and cells (torch.nn.modules.rnn)."""
import math

import janus

from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
from ..utils import rnn as _rnn_utils
from ..utils.rnn import PackedSequence


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


# _REVERSE_ORDER: how the reverse direction is laid out so that a recording
# generalizes over sequence lengths.  janus's analyzer tells ops apart by op
# and the Python lines they run from, not by shape; a direction laid out like
# the forward one would make the pair one op sequence twice over, a repeat
# whose period (a whole direction) holds the length T and hides the time
# loops from the analyzer (analyzer/loops.c: the longest tandem repeat wins),
# leaving one graph per recorded length.  So the reverse direction selects
# its initial state before its projection (the forward one after it), and
# its outputs, made T-1 .. 0, are stacked in the order they ran (a loop's
# values are read back by one stack in iteration order) and flipped once.
def _collect(outs, reverse):
    """The steps' outputs, [T, N, H], in time order."""
    y = janus.stack(outs, 0)
    return y.flip(0) if reverse else y


class _RNNBase(Module):
    _gates = 1
    _has_c = False
    proj_size = 0  # modules pickled before projections existed

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, nonlinearity="tanh", proj_size=0, dtype=None):
        super().__init__()
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size and proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1]")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout, self.nonlinearity = bias, batch_first, float(dropout), nonlinearity
        self.bidirectional, self.proj_size = bool(bidirectional), int(proj_size)
        g = self._gates * hidden_size
        out = proj_size or hidden_size  # the size of h
        # PyTorch's order: l0, l0_reverse, l1, ... (state_dict keys, _flat_weights)
        for layer in range(num_layers):
            isz = input_size if layer == 0 else out * self._dirs
            for sfx in self._suffixes:
                setattr(self, f"weight_ih_l{layer}{sfx}", Parameter(janus.empty(g, isz, dtype=dtype)))
                setattr(self, f"weight_hh_l{layer}{sfx}", Parameter(janus.empty(g, out, dtype=dtype)))
                if bias:
                    setattr(self, f"bias_ih_l{layer}{sfx}", Parameter(janus.empty(g, dtype=dtype)))
                    setattr(self, f"bias_hh_l{layer}{sfx}", Parameter(janus.empty(g, dtype=dtype)))
                if proj_size:
                    w_hr = Parameter(janus.empty(proj_size, hidden_size, dtype=dtype))
                    setattr(self, f"weight_hr_l{layer}{sfx}", w_hr)
        k = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0
        for p in self.parameters():
            init.uniform_(p, -k, k)

    @property
    def _dirs(self):
        return 2 if self.bidirectional else 1

    @property
    def _suffixes(self):
        return ("", "_reverse") if self.bidirectional else ("",)

    def _weight_names(self, layer, sfx):
        return [n + f"_l{layer}{sfx}" for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")
                if (self.bias or n.startswith("weight")) and (self.proj_size or n != "weight_hr")]

    def __getstate__(self):
        """PyTorch's RNN attributes too (its forward reads them), so torch.load
        of a janus-saved module works: the mode, proj_size and the weight
        names and list it keeps (the same Parameter objects)."""
        state = super().__getstate__()
        groups = [self._weight_names(layer, sfx) for layer in range(self.num_layers) for sfx in self._suffixes]
        names = [n for g in groups for n in g]
        state.setdefault("mode", {4: "LSTM", 3: "GRU"}.get(self._gates, f"RNN_{self.nonlinearity.upper()}"))
        state.setdefault("proj_size", 0)
        state["_flat_weights_names"] = names
        state["_all_weights"] = groups
        state["_flat_weights"] = [self._parameters[n] for n in names]
        state["_flat_weight_refs"] = []  # weakrefs do not pickle; PyTorch then keeps the list above
        return state

    def flatten_parameters(self):
        """Nothing to do: PyTorch packs RNN weights into one buffer for cuDNN;
        janus keeps them as the separate parameters they are."""

    def _layer_params(self, layer, sfx=""):
        g = lambda n: getattr(self, f"{n}_l{layer}{sfx}") if self.bias or n.startswith("weight") else None  # noqa: E731
        return g("weight_ih"), g("weight_hh"), g("bias_ih"), g("bias_hh"), (g("weight_hr") if self.proj_size else None)

    def _step(self, proj_t, h, c, w_hh, b_hh, w_hr=None):
        if self._has_c:
            h, c = _lstm_cell(proj_t, h, c, w_hh, b_hh)
            return (h if w_hr is None else F.linear(h, w_hr)), c
        if self._gates == 3:
            return _gru_cell(proj_t, h, w_hh, b_hh), None
        return _rnn_cell(proj_t, h, w_hh, b_hh, self.nonlinearity), None

    def _initial(self, hx, N, like, batched=True):
        L = self.num_layers * self._dirs
        if hx is None:
            z = janus.zeros(L, N, self.proj_size or self.hidden_size, dtype=like.dtype, device=like.device)
            # c keeps the full hidden size under a projection
            c = janus.zeros(L, N, self.hidden_size, dtype=like.dtype, device=like.device) if self.proj_size else z
            return z, c
        if self._has_c:
            h0, c0 = hx
            self._check_hidden(h0, (L, N, self.proj_size or self.hidden_size), batched)
            self._check_hidden(c0, (L, N, self.hidden_size), batched)
            return (h0, c0) if batched else (h0.unsqueeze(1), c0.unsqueeze(1))
        self._check_hidden(hx, (L, N, self.hidden_size), batched)
        return (hx if batched else hx.unsqueeze(1)), None

    @staticmethod
    def _check_hidden(h, want, batched):
        want = want if batched else (want[0], want[2])
        if tuple(h.shape) != want:
            raise RuntimeError(f"Expected hidden size {want}, got {list(h.shape)}")

    def forward(self, input, hx=None):
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        if input.ndim not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.ndim}D instead")
        batched = input.ndim == 3
        x = input if batched else input.unsqueeze(1)
        if batched and self.batch_first:
            x = x.transpose(0, 1)
        self._check_input(x)
        T, N, D = x.shape[0], x.shape[1], self._dirs
        h0, c0 = self._initial(hx, N, x, batched)
        hs, cs = [], []
        for layer in range(self.num_layers):
            dir_outs = []
            for d, sfx in enumerate(self._suffixes):
                outs, h, c = self._direction(x, h0, c0, layer * D + d, self._layer_params(layer, sfx), T, d)
                dir_outs.append(_collect(outs, d) if outs else
                                janus.zeros(0, N, self.proj_size or self.hidden_size, dtype=x.dtype, device=x.device))
                hs.append(h)
                cs.append(c)
            x = dir_outs[0] if D == 1 else janus.cat(dir_outs, 2)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        out = x
        if batched and self.batch_first:
            out = out.transpose(0, 1)
        if not batched:
            out = out.squeeze(1)
        return out, self._final(hs, cs, batched)

    def _direction(self, x, h0, c0, k, params, T, reverse, active=None):
        """One direction of one layer over x's T steps (h0[k], c0[k] its initial
        state): the steps' outputs in the order they ran, the last h and c.
        active: a packed sequence's [T, N, 1] mask; the rows that ended (or,
        reversed, have not started) keep their state."""
        w_ih, w_hh, b_ih, b_hh, w_hr = params
        if reverse:  # initial state before the projection: see _REVERSE_ORDER
            h, c = h0[k], (c0[k] if self._has_c else None)
        proj = F.linear(x, w_ih, b_ih)  # the input projection of every time step in one GEMM
        if not reverse:
            h, c = h0[k], (c0[k] if self._has_c else None)
        outs = []
        # the reverse direction reads the same projection from the end
        for t in (range(T - 1, -1, -1) if reverse else range(T)):
            hn, cn = self._step(proj[t], h, c, w_hh, b_hh, w_hr)
            outs.append(hn)
            if active is None:
                h, c = hn, cn
            else:  # a where at every step, even where all are active: the
                # same ops at every step make one loop of them, whatever the lengths
                h = janus.where(active[t], hn, h)
                c = janus.where(active[t], cn, c) if self._has_c else None
        return outs, h, c

    def _check_input(self, x):
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"{type(self).__name__}: input.size(-1) must be equal to input_size. "
                               f"Expected {self.input_size}, got {x.shape[-1]}")

    def _final(self, hs, cs, batched=True, order=None):
        h_n = janus.stack(hs, 0)
        c_n = janus.stack(cs, 0) if self._has_c else None
        if order is not None:
            h_n = h_n.index_select(1, order)
            c_n = c_n.index_select(1, order) if self._has_c else None
        if not batched:
            h_n = h_n.squeeze(1)
            c_n = c_n.squeeze(1) if self._has_c else None
        return (h_n, c_n) if self._has_c else h_n

    def _forward_packed(self, packed, hx):
        """A PackedSequence: every time step runs on all N (sorted) rows and a
        row keeps its state once its sequence has ended (where(active, new,
        old) at every step), so h_n holds every sequence's last step, as in PyTorch; the
        packed output is one index_select of the padded steps.  Shapes stay
        the same from step to step (one graph shape for a recorded step).
        The reverse direction runs t = T-1 .. 0 under the same mask: a row
        keeps its initial state until its own last step, starts there, and
        ends at t = 0."""
        sizes = [int(b) for b in janus._C._host_tolist(packed.batch_sizes)]  # no segment split (pack's own)
        T, N, D = len(sizes), sizes[0], self._dirs
        x = _rnn_utils._unpack(packed.data, sizes)
        self._check_input(x)
        h0, c0 = self._initial(hx, N, x)
        if hx is not None and packed.sorted_indices is not None:  # hx comes in the caller's order
            h0 = h0.index_select(1, packed.sorted_indices)
            c0 = c0.index_select(1, packed.sorted_indices) if self._has_c else None
        active = janus.tensor([[i < b for i in range(N)] for b in sizes], device=x.device).unsqueeze(-1)
        hs, cs = [], []
        for layer in range(self.num_layers):
            dir_outs = []
            for d, sfx in enumerate(self._suffixes):
                outs, h, c = self._direction(x, h0, c0, layer * D + d, self._layer_params(layer, sfx), T, d, active)
                dir_outs.append(_collect(outs, d))
                hs.append(h)
                cs.append(c)
            x = dir_outs[0] if D == 1 else janus.cat(dir_outs, 2)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        rows = x.reshape(T * N, x.shape[-1])
        data = rows.index_select(0, janus._functions._data_index(_rnn_utils._packed_positions(sizes), x.device))
        out = PackedSequence(data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices)
        return out, self._final(hs, cs, order=packed.unsorted_indices)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class LSTM(_RNNBase):
    _gates = 4
    _has_c = True


class GRU(_RNNBase):
    _gates = 3

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__(*args, **kwargs)


class RNN(_RNNBase):
    def __init__(self, *args, nonlinearity="tanh", **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(*args, nonlinearity=nonlinearity, **kwargs)
