"""Activation layers and MultiheadAttention (torch.nn.modules.activation).

The activations are compositions of table ops (janus/nn/functional.py);
MultiheadAttention follows PyTorch's F.multi_head_attention_forward step by
step (projections, head split, scaled scores, additive masks, softmax,
dropout, output projection), so copied weights give PyTorch's outputs.
"""
import math

import janus

from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
from .linear import Linear


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


class Softmax2d(Module):
    """Softmax over the channels at each spatial position of (N, C, H, W) or (C, H, W)."""

    def forward(self, x):
        if x.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {x.ndim}D instead")
        return F.softmax(x, -3)


class _Inplace(Module):
    """An activation with only an inplace flag: forward is F.<_fn>(x, inplace)."""
    _fn = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return getattr(F, self._fn)(x, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, x):
        return F.leaky_relu(x, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, x):
        return F.elu(x, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class CELU(ELU):
    def forward(self, x):
        return F.celu(x, self.alpha, self.inplace)


class SELU(_Inplace):
    _fn = "selu"


class ReLU6(_Inplace):
    _fn = "relu6"


class Mish(_Inplace):
    _fn = "mish"


class Hardswish(_Inplace):
    _fn = "hardswish"


class Hardsigmoid(_Inplace):
    _fn = "hardsigmoid"


class Hardtanh(Module):
    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, x):
        return F.hardtanh(x, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}" + (", inplace=True" if self.inplace else "")


class Softplus(Module):
    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, x):
        return F.softplus(x, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class _Plain(Module):
    """An activation without arguments: forward is F.<_fn>(x)."""
    _fn = None

    def forward(self, x):
        return getattr(F, self._fn)(x)


class LogSigmoid(_Plain):
    _fn = "logsigmoid"


class Softsign(_Plain):
    _fn = "softsign"


class Tanhshrink(_Plain):
    _fn = "tanhshrink"


class Softshrink(Module):
    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, x):
        return F.softshrink(x, self.lambd)


class Hardshrink(Softshrink):
    def forward(self, x):
        return F.hardshrink(x, self.lambd)


class Threshold(Module):
    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, x):
        return F.threshold(x, self.threshold, self.value, self.inplace)


class GLU(Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.glu(x, self.dim)


class Softmin(Softmax):
    def forward(self, x):
        return F.softmin(x, self.dim)


class PReLU(Module):
    def __init__(self, num_parameters=1, init=0.25, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(janus.full([num_parameters], init, dtype=dtype))

    def forward(self, x):
        return F.prelu(x, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


# ---- attention ---------------------------------------------------------------
def _float_mask(mask, like, name):
    """A bool mask (True = masked out) as an additive float mask; a float one as is."""
    if mask is None:
        return None
    if mask.dtype is janus.bool:
        return janus.zeros(mask.shape, dtype=like.dtype, device=like.device).masked_fill(mask, float("-inf"))
    if not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask.to(like.dtype)


class MultiheadAttention(Module):
    """Multi-head attention with PyTorch's parameters (in_proj_weight /
    in_proj_bias, or q/k/v_proj_weight when kdim or vdim differ from
    embed_dim; out_proj; bias_k/bias_v), masks and outputs.

    forward(query, key, value, key_padding_mask=None, need_weights=True,
    attn_mask=None, average_attn_weights=True, is_causal=False) ->
    (output, weights or None).  Inputs are (L, N, E), or (N, L, E) with
    batch_first, or unbatched (L, E).  Bool masks mark positions that may
    NOT be attended (True); float masks are added to the scores.  attn_mask
    is (L, S) or (N * num_heads, L, S), key_padding_mask (N, S).  weights are
    averaged over the heads unless average_attn_weights=False.  is_causal is
    only a hint that attn_mask is causal, as in PyTorch."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        self.embed_dim, self.num_heads, self.dropout, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        E = embed_dim
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(janus.empty(3 * E, E, dtype=dtype))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = Parameter(janus.empty(E, E, dtype=dtype))
            self.k_proj_weight = Parameter(janus.empty(E, self.kdim, dtype=dtype))
            self.v_proj_weight = Parameter(janus.empty(E, self.vdim, dtype=dtype))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(janus.empty(3 * E, dtype=dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(E, E, bias=bias, dtype=dtype)
        if add_bias_kv:
            self.bias_k = Parameter(janus.empty(1, 1, E, dtype=dtype))
            self.bias_v = Parameter(janus.empty(1, 1, E, dtype=dtype))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()
        if device is not None:
            self.to(device)

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        if is_causal and attn_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer "
                               "module method `generate_square_subsequent_mask` to create this mask.")
        batched = query.ndim == 3
        if not batched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        L, N, E = query.shape
        H, hd = self.num_heads, self.head_dim
        if E != self.embed_dim:
            raise AssertionError(f"was expecting embedding dimension of {self.embed_dim}, but got {E}")
        b = self.in_proj_bias
        bq, bk, bv = (None, None, None) if b is None else (b[0:E], b[E:2 * E], b[2 * E:])
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            wq, wk, wv = w[0:E], w[E:2 * E], w[2 * E:]
        else:
            wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        q, k, v = F.linear(query, wq, bq), F.linear(key, wk, bk), F.linear(value, wv, bv)
        attn_mask = _float_mask(attn_mask, q, "attn_mask")
        key_padding_mask = _float_mask(key_padding_mask, q, "key_padding_mask")
        if self.bias_k is not None:
            k = janus.cat([k, self.bias_k.expand(1, N, E)], 0)
            v = janus.cat([v, self.bias_v.expand(1, N, E)], 0)
            attn_mask = None if attn_mask is None else F.pad(attn_mask, (0, 1))
            key_padding_mask = None if key_padding_mask is None else F.pad(key_padding_mask, (0, 1))
        # (L, N, E) -> (N * H, L, hd)
        q = q.reshape(L, N * H, hd).transpose(0, 1)
        k = k.reshape(k.shape[0], N * H, hd).transpose(0, 1)
        v = v.reshape(v.shape[0], N * H, hd).transpose(0, 1)
        if self.add_zero_attn:
            k = janus.cat([k, janus.zeros(N * H, 1, hd, dtype=k.dtype, device=k.device)], 1)
            v = janus.cat([v, janus.zeros(N * H, 1, hd, dtype=v.dtype, device=v.device)], 1)
            attn_mask = None if attn_mask is None else F.pad(attn_mask, (0, 1))
            key_padding_mask = None if key_padding_mask is None else F.pad(key_padding_mask, (0, 1))
        S = k.shape[1]
        if attn_mask is not None:
            if attn_mask.ndim == 2:
                if tuple(attn_mask.shape) != (L, S):
                    raise RuntimeError(f"The shape of the 2D attn_mask is {list(attn_mask.shape)}, but should be "
                                       f"{[L, S]}.")
                attn_mask = attn_mask.unsqueeze(0)
            elif tuple(attn_mask.shape) != (N * H, L, S):
                raise RuntimeError(f"The shape of the 3D attn_mask is {list(attn_mask.shape)}, but should be "
                                   f"{[N * H, L, S]}.")
        if key_padding_mask is not None:
            if tuple(key_padding_mask.shape) != (N, S):
                raise AssertionError(f"expecting key_padding_mask shape of {(N, S)}, but got "
                                     f"{tuple(key_padding_mask.shape)}")
            kpm = key_padding_mask.view(N, 1, 1, S).expand(N, H, 1, S).reshape(N * H, 1, S)
            attn_mask = kpm if attn_mask is None else attn_mask + kpm
        scores = janus.bmm(q * (1.0 / math.sqrt(hd)), k.transpose(1, 2))
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = F.softmax(scores, -1)
        if self.dropout > 0.0 and self.training:
            weights = F.dropout(weights, self.dropout, True)
        out = janus.bmm(weights, v)                                   # (N * H, L, hd)
        out = out.transpose(0, 1).reshape(L * N, E)
        out = F.linear(out, self.out_proj.weight, self.out_proj.bias).view(L, N, E)
        if not batched:
            out = out.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)
        if not need_weights:
            return out, None
        weights = weights.view(N, H, L, S)
        if average_attn_weights:
            weights = weights.mean(1)
        if not batched:
            weights = weights.squeeze(0)
        return out, weights
