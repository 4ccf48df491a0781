"""The Transformer family: F.scaled_dot_product_attention, nn.MultiheadAttention,
TransformerEncoder/DecoderLayer, their stacks and nn.Transformer -- against
numpy references written from the papers' formulas, finite-difference
gradients, and PyTorch (copied weights) where it imports."""
import math
import os

import numpy as np
import pytest

import janus
import janus.nn as nn
import janus.nn.functional as F
from gradnum import check_grad

R = np.random.default_rng(21)


def t(a, **kw):
    return janus.tensor(np.ascontiguousarray(a), **kw)


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def sdpa_ref(q, k, v, mask=None, causal=False, scale=None):
    s = q @ np.swapaxes(k, -1, -2) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    return softmax(s) @ v


def mha_ref(m, q, k, v, key_padding_mask=None, attn_mask=None):
    """Multi-head attention (L, N, E) from the module's weights, in numpy."""
    E, H = m.embed_dim, m.num_heads
    w = m.in_proj_weight.detach().numpy().astype(np.float64)
    b = m.in_proj_bias.detach().numpy().astype(np.float64)
    qp, kp, vp = q @ w[:E].T + b[:E], k @ w[E:2 * E].T + b[E:2 * E], v @ w[2 * E:].T + b[2 * E:]
    L, N, S, hd = q.shape[0], q.shape[1], k.shape[0], E // H
    split = lambda x, n: x.reshape(n, N, H, hd).transpose(1, 2, 0, 3)  # noqa: E731  (N, H, n, hd)
    scores = split(qp, L) @ np.swapaxes(split(kp, S), -1, -2) / math.sqrt(hd)
    if attn_mask is not None:
        scores = np.where(attn_mask, -np.inf, scores) if attn_mask.dtype == bool else scores + attn_mask
    if key_padding_mask is not None:
        scores = np.where(key_padding_mask[:, None, None, :], -np.inf, scores)
    att = softmax(scores)
    out = (att @ split(vp, S)).transpose(2, 0, 1, 3).reshape(L, N, E)
    ow, ob = (p.detach().numpy().astype(np.float64) for p in (m.out_proj.weight, m.out_proj.bias))
    return out @ ow.T + ob, att.mean(1)


# ------------------------------------------------------------------- SDPA
@pytest.mark.parametrize("kind", ["plain", "causal", "bool", "float", "scale"])
def test_sdpa_matches_the_formula(kind):
    q, k, v = (R.standard_normal((2, 3, 5, 4)) for _ in range(3))
    kw, ref = {}, {}
    if kind == "causal":
        kw, ref = dict(is_causal=True), dict(causal=True)
    elif kind == "bool":
        m = R.random((5, 5)) < 0.7
        m[:, 0] = True  # every row attends somewhere
        kw, ref = dict(attn_mask=t(m)), dict(mask=m)
    elif kind == "float":
        m = R.standard_normal((2, 1, 5, 5))
        kw, ref = dict(attn_mask=t(m)), dict(mask=m)
    elif kind == "scale":
        kw, ref = dict(scale=0.3), dict(scale=0.3)
    got = F.scaled_dot_product_attention(t(q), t(k), t(v), **kw)
    np.testing.assert_allclose(got.numpy(), sdpa_ref(q, k, v, **ref), rtol=1e-10, atol=1e-12)


def test_sdpa_gradients_and_gqa():
    q, k, v = (R.standard_normal((1, 2, 3, 2)) for _ in range(3))
    check_grad(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True), [q, k, v])
    q4 = R.standard_normal((1, 4, 3, 2))
    got = F.scaled_dot_product_attention(t(q4), t(k), t(v), enable_gqa=True)
    want = sdpa_ref(q4, np.repeat(k, 2, 1), np.repeat(v, 2, 1))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10)


# -------------------------------------------------------------------- MHA
def _mha(E=8, H=2, **kw):
    janus.manual_seed(0)
    m = nn.MultiheadAttention(E, H, dtype=janus.float64, **kw)
    janus.nn.init.normal_(m.in_proj_bias, 0, 0.1)
    janus.nn.init.normal_(m.out_proj.bias, 0, 0.1)
    return m


def test_mha_against_numpy_with_masks():
    m = _mha()
    q, kv = R.standard_normal((4, 3, 8)), R.standard_normal((6, 3, 8))
    kpm = np.zeros((3, 6), bool)
    kpm[0, 4:] = True
    kpm[2, 0] = True
    am = R.random((4, 6)) < 0.3
    am[:, 1] = False
    out, w = m(t(q), t(kv), t(kv), key_padding_mask=t(kpm), attn_mask=t(am))
    want, want_w = mha_ref(m, q, kv, kv, kpm, am)
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w.detach().numpy(), want_w, rtol=1e-10, atol=1e-12)
    fm = R.standard_normal((4, 6))
    out, _ = m(t(q), t(kv), t(kv), attn_mask=t(fm))
    np.testing.assert_allclose(out.detach().numpy(), mha_ref(m, q, kv, kv, attn_mask=fm)[0], rtol=1e-10)


def test_mha_batch_first_unbatched_and_per_head_weights():
    m = _mha(batch_first=True)
    x = R.standard_normal((3, 5, 8))  # (N, L, E)
    out, w = m(t(x), t(x), t(x), average_attn_weights=False)
    ref_out, _ = mha_ref(m, x.transpose(1, 0, 2), x.transpose(1, 0, 2), x.transpose(1, 0, 2))
    np.testing.assert_allclose(out.detach().numpy(), ref_out.transpose(1, 0, 2), rtol=1e-10)
    assert tuple(w.shape) == (3, 2, 5, 5)
    out1, w1 = m(t(x[0]), t(x[0]), t(x[0]))  # unbatched (L, E)
    np.testing.assert_allclose(out1.detach().numpy(), out.detach().numpy()[0], rtol=1e-10)
    assert tuple(w1.shape) == (5, 5)
    assert m(t(x), t(x), t(x), need_weights=False)[1] is None


def test_mha_parameters_and_variants():
    m = nn.MultiheadAttention(8, 2)
    assert [n for n, _ in m.named_parameters()] == ["in_proj_weight", "in_proj_bias", "out_proj.weight",
                                                   "out_proj.bias"]
    assert not m.in_proj_bias.detach().numpy().any() and not m.out_proj.bias.detach().numpy().any()
    m = nn.MultiheadAttention(8, 2, kdim=3, vdim=5, add_bias_kv=True, add_zero_attn=True)
    names = [n for n, _ in m.named_parameters()]
    assert names[:3] == ["q_proj_weight", "k_proj_weight", "v_proj_weight"] and "bias_k" in names
    out, w = m(janus.randn(4, 2, 8), janus.randn(6, 2, 3), janus.randn(6, 2, 5))
    assert tuple(out.shape) == (4, 2, 8) and tuple(w.shape) == (2, 4, 8)  # 6 keys + bias_k + zero_attn
    with pytest.raises(AssertionError, match="divisible"):
        nn.MultiheadAttention(10, 3)
    with pytest.raises(RuntimeError, match="is_causal"):
        m(janus.randn(4, 2, 8), janus.randn(6, 2, 3), janus.randn(6, 2, 5), is_causal=True)


def test_mha_gradients():
    m = _mha(E=4, H=2)
    kpm = np.array([[False, False, True]])

    def f(q, kv):
        return m(q, kv, kv, key_padding_mask=t(kpm))[0]
    check_grad(f, [R.standard_normal((2, 1, 4)), R.standard_normal((3, 1, 4))])


# ------------------------------------------------------------- the stacks
def test_square_subsequent_mask():
    m = nn.Transformer.generate_square_subsequent_mask(4).numpy()
    assert np.all(np.isneginf(m[np.triu_indices(4, 1)])) and not m[np.tril_indices(4)].any()


def test_encoder_layer_against_its_definition():
    """Post-norm: x = norm1(x + sa(x)); x = norm2(x + ff(x)); pre-norm with norm_first."""
    for norm_first in (False, True):
        janus.manual_seed(3)
        layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, norm_first=norm_first, dtype=janus.float64)
        x = t(R.standard_normal((5, 2, 8)))
        mask = nn.Transformer.generate_square_subsequent_mask(5, dtype=janus.float64)

        def sa(y):
            return layer.self_attn(y, y, y, attn_mask=mask)[0]

        def ff(y):
            return layer.linear2(F.relu(layer.linear1(y)))
        if norm_first:
            y = x + sa(layer.norm1(x))
            want = y + ff(layer.norm2(y))
        else:
            y = layer.norm1(x + sa(x))
            want = layer.norm2(y + ff(y))
        got = layer(x, src_mask=mask, is_causal=True)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-12)


def test_stacks_copy_their_layer_and_train():
    janus.manual_seed(0)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, batch_first=True), 2,
                                norm=nn.LayerNorm(8))
    names = [n for n, _ in enc.named_parameters()]
    assert "layers.0.self_attn.in_proj_weight" in names and "layers.1.linear2.bias" in names
    assert enc.layers[0].linear1.weight is not enc.layers[1].linear1.weight
    model = nn.Transformer(8, 2, 1, 1, 16, dropout=0.0, batch_first=True)
    opt = janus.optim.Adam(model.parameters(), 1e-2)
    src, tgt = janus.randn(3, 5, 8), janus.randn(3, 4, 8)
    tmask = model.generate_square_subsequent_mask(4)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = ((model(src, tgt, tgt_mask=tmask, tgt_is_causal=True) - 1.0) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < losses[0]
    for p in model.parameters():
        assert p.grad is not None


# --------------------------------------------------------------- PyTorch
def _torch():
    if janus._C._setting_value("JANUS_SANITIZED"):
        pytest.skip("PyTorch is not run under the sanitizers")
    return pytest.importorskip("torch")


def _copy(jm, tm, torch):
    sd = {k: torch.tensor(v.numpy().copy()) for k, v in jm.state_dict().items()}
    tm.load_state_dict(sd, strict=True)


def test_mha_against_pytorch():
    torch = _torch()
    for kw in ({}, {"batch_first": True}, {"kdim": 3, "vdim": 5}, {"add_bias_kv": True, "add_zero_attn": True}):
        jm = nn.MultiheadAttention(8, 2, **kw)
        tm = torch.nn.MultiheadAttention(8, 2, **kw)
        _copy(jm, tm, torch)
        kd, vd = kw.get("kdim", 8), kw.get("vdim", 8)
        q, k, v = R.standard_normal((4, 3, 8)), R.standard_normal((6, 3, kd)), R.standard_normal((6, 3, vd))
        q, k, v = (a.astype(np.float32) for a in (q, k, v))
        kpm = np.zeros((3, 6), bool)
        kpm[1, 3:] = True
        am = np.triu(np.full((4, 6), float("-inf"), np.float32), 3)
        if kw.get("batch_first"):
            q, k, v = (a.transpose(1, 0, 2).copy() for a in (q, k, v))
        jo, jw = jm(t(q), t(k), t(v), key_padding_mask=t(kpm), attn_mask=t(am))
        to, tw = tm(*(torch.tensor(a) for a in (q, k, v)), key_padding_mask=torch.tensor(kpm),
                    attn_mask=torch.tensor(am))
        np.testing.assert_allclose(jo.detach().numpy(), to.detach().numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(jw.detach().numpy(), tw.detach().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_against_pytorch(norm_first, activation):
    torch = _torch()
    kw = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=16, dropout=0.0,
              activation=activation, norm_first=norm_first, batch_first=True)
    jm, tm = nn.Transformer(**kw), torch.nn.Transformer(**kw)
    _copy(jm, tm, torch)
    jm.train(), tm.train()
    src = R.standard_normal((2, 5, 8)).astype(np.float32)
    tgt = R.standard_normal((2, 4, 8)).astype(np.float32)
    kpm = np.array([[False] * 5, [False, False, False, True, True]])
    mask = nn.Transformer.generate_square_subsequent_mask(4)
    tmask = torch.nn.Transformer.generate_square_subsequent_mask(4)
    np.testing.assert_array_equal(mask.numpy(), tmask.numpy())
    jsrc, jtgt = t(src, requires_grad=True), t(tgt)
    tsrc, ttgt = torch.tensor(src, requires_grad=True), torch.tensor(tgt)
    jo = jm(jsrc, jtgt, tgt_mask=mask, src_key_padding_mask=t(kpm), memory_key_padding_mask=t(kpm))
    to = tm(tsrc, ttgt, tgt_mask=tmask, src_key_padding_mask=torch.tensor(kpm),
            memory_key_padding_mask=torch.tensor(kpm))
    np.testing.assert_allclose(jo.detach().numpy(), to.detach().numpy(), rtol=1e-4, atol=1e-5)
    g = R.standard_normal(jo.shape).astype(np.float32)
    (jo * t(g)).sum().backward()
    (to * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(jsrc.grad.numpy(), tsrc.grad.numpy(), rtol=1e-3, atol=1e-5)
    for (n, p), (_, q) in zip(jm.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-3, atol=1e-5, err_msg=n)


def test_encoder_in_eval_matches_pytorch_off_the_padding():
    torch = _torch()
    jl = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    tl = torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    je, te = nn.TransformerEncoder(jl, 2), torch.nn.TransformerEncoder(tl, 2)
    _copy(je, te, torch)
    je.eval(), te.eval()
    x = R.standard_normal((2, 5, 8)).astype(np.float32)
    kpm = np.array([[False] * 5, [False, False, False, True, True]])
    with torch.no_grad():
        to = te(torch.tensor(x), src_key_padding_mask=torch.tensor(kpm)).numpy()
    jo = je(t(x), src_key_padding_mask=t(kpm)).detach().numpy()
    np.testing.assert_allclose(jo[~kpm], to[~kpm], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(F.scaled_dot_product_attention(t(x), t(x), t(x), is_causal=True).numpy(),
                               torch.nn.functional.scaled_dot_product_attention(
                                   *(torch.tensor(x),) * 3, is_causal=True).numpy(), rtol=1e-5, atol=1e-6)
