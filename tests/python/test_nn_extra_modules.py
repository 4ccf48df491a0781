"""The nn layers added for PyTorch scripts: Bilinear, EmbeddingBag,
LocalResponseNorm, Softmax2d, AlphaDropout / FeatureAlphaDropout,
LPPool1d/2d, Fold / Unfold, ChannelShuffle, the 3d padding layers and
LazyLinear, with their functional forms.  Each is checked in float64
against a numpy re-implementation, its gradients against central finite
differences, its values, gradients, parameter names and messages against
PyTorch where it imports (copied parameters), its initialization
statistics, and its argument errors."""
import math
import re

import numpy as np
import pytest

import janus
import janus.nn as nn
import janus.nn.functional as F
from gradnum import check_grad

try:
    if janus._C._setting_value("JANUS_SANITIZED"):
        raise ImportError("PyTorch's libraries are not built for the sanitizers")
    import torch
    import torch.nn.functional as TF
    torch.set_num_threads(2)
except ImportError:
    torch = TF = None
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

R = np.random.default_rng(2024)
ALPHA = 1.7580993408473766  # SELU's scale * alpha


def t(a, **kw):
    return janus.tensor(np.ascontiguousarray(a), **kw)


def tt(a, **kw):
    return torch.tensor(np.ascontiguousarray(a), **kw)


def close(a, b, tol=1e-12):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


# ============================================================ numpy references
def bilinear_ref(x1, x2, w, b=None):
    y = np.zeros(x1.shape[:-1] + (w.shape[0],))
    for o in range(w.shape[0]):
        y[..., o] = ((x1 @ w[o]) * x2).sum(-1)
    return y if b is None else y + b


def embedding_bag_ref(idx, w, offsets=None, mode="mean", psw=None, include_last_offset=False, padding_idx=None):
    """Bag by bag, as the documentation describes it."""
    idx = np.asarray(idx)
    if idx.ndim == 2:
        bags = [(i * idx.shape[1], (i + 1) * idx.shape[1]) for i in range(idx.shape[0])]
        idx = idx.reshape(-1)
        psw = None if psw is None else np.asarray(psw).reshape(-1)
    else:
        off = list(offsets)
        ends = off[1:] if include_last_offset else off[1:] + [len(idx)]
        bags = list(zip(off, ends))
    if padding_idx is not None and padding_idx < 0:
        padding_idx += w.shape[0]
    out = np.zeros((len(bags), w.shape[1]))
    for b, (s, e) in enumerate(bags):
        rows = [w[idx[i]] * (1.0 if psw is None else psw[i]) for i in range(s, e) if idx[i] != padding_idx]
        if not rows:
            continue
        rows = np.array(rows)
        out[b] = rows.sum(0) if mode == "sum" else rows.mean(0) if mode == "mean" else rows.max(0)
    return out


def lrn_ref(x, size, alpha=1e-4, beta=0.75, k=1.0):
    c = x.shape[1]
    out = np.empty_like(x)
    for i in range(c):
        lo, hi = max(0, i - size // 2), min(c, i + (size - 1) // 2 + 1)
        s = (x[:, lo:hi] ** 2).sum(1)
        out[:, i] = x[:, i] / (k + alpha / size * s) ** beta
    return out


def windows_2d(x, k, s, ceil_mode=False):
    """The (kH, kW) windows at stride s of the last two dims: (..., oh, ow, kH * kW)."""
    (kh, kw), (sh, sw) = k, s
    h, w = x.shape[-2:]

    def count(n, kk, ss):
        o = (n - kk + (ss - 1 if ceil_mode else 0)) // ss + 1
        if ceil_mode and (o - 1) * ss >= n:
            o -= 1
        return o
    oh, ow = count(h, kh, sh), count(w, kw, sw)
    out = np.full(x.shape[:-2] + (oh, ow, kh * kw), np.nan)
    for i in range(oh):
        for j in range(ow):
            win = x[..., i * sh:i * sh + kh, j * sw:j * sw + kw]
            flat = win.reshape(x.shape[:-2] + (-1,))
            out[..., i, j, :flat.shape[-1]] = flat
    return out


def lp_pool2d_ref(x, p, k, s=None, ceil_mode=False):
    k = (k, k) if isinstance(k, int) else tuple(k)
    s = k if s is None else ((s, s) if isinstance(s, int) else tuple(s))
    win = windows_2d(x, k, s, ceil_mode)
    if p == math.inf:
        return np.nanmax(np.abs(win), -1)
    # PyTorch's formula: (sum of x^p over the window)^(1/p), NaN for a negative sum (odd p); a window cut by
    # ceil_mode averages over its in-range part, times the full window size
    n = (~np.isnan(win)).sum(-1)
    tot = np.nansum(win ** p, -1) * (k[0] * k[1]) / n
    return np.where(tot >= 0, np.abs(tot), np.nan) ** (1.0 / p)


def unfold_ref(x, k, d=(1, 1), p=(0, 0), s=(1, 1)):
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((n, c * k[0] * k[1], oh * ow))
    for ci in range(c):
        for a in range(k[0]):
            for b in range(k[1]):
                row = (ci * k[0] + a) * k[1] + b
                for i in range(oh):
                    for j in range(ow):
                        out[:, row, i * ow + j] = xp[:, ci, i * s[0] + a * d[0], j * s[1] + b * d[1]]
    return out


def fold_ref(cols, size, k, d=(1, 1), p=(0, 0), s=(1, 1)):
    n, ck, _ = cols.shape
    c = ck // (k[0] * k[1])
    oh = (size[0] + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (size[1] + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((n, c, size[0] + 2 * p[0], size[1] + 2 * p[1]))
    for ci in range(c):
        for a in range(k[0]):
            for b in range(k[1]):
                row = (ci * k[0] + a) * k[1] + b
                for i in range(oh):
                    for j in range(ow):
                        out[:, ci, i * s[0] + a * d[0], j * s[1] + b * d[1]] += cols[:, row, i * ow + j]
    return out[:, :, p[0]:p[0] + size[0], p[1]:p[1] + size[1]]


def channel_shuffle_ref(x, g):
    c = x.shape[1]
    return x[:, [(i % g) * (c // g) + i // g for i in range(c)]]


def softmax_ref(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


NP_PAD = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def pad3d_ref(x, p, mode, value=0.0):
    width = [(0, 0)] * (x.ndim - 3) + [(p[4], p[5]), (p[2], p[3]), (p[0], p[1])]
    if mode == "constant":
        return np.pad(x, width, constant_values=value)
    return np.pad(x, width, mode=NP_PAD[mode])


# =================================================================== Bilinear
def test_bilinear_values_and_gradients():
    x1, x2 = R.normal(size=(2, 3, 4)), R.normal(size=(2, 3, 5))
    w, b = R.normal(size=(6, 4, 5)), R.normal(size=6)
    close(F.bilinear(t(x1), t(x2), t(w), t(b)), bilinear_ref(x1, x2, w, b))
    close(F.bilinear(t(x1), t(x2), t(w)), bilinear_ref(x1, x2, w))
    close(F.bilinear(t(x1[0, 0]), t(x2[0, 0]), t(w), t(b)), bilinear_ref(x1[0, 0], x2[0, 0], w, b))  # unbatched
    assert tuple(F.bilinear(t(np.zeros((0, 4))), t(np.zeros((0, 5))), t(w)).shape) == (0, 6)
    s1, s2, sw, sb = R.normal(size=(3, 2)), R.normal(size=(3, 3)), R.normal(size=(2, 2, 3)), R.normal(size=2)
    check_grad(F.bilinear, [s1, s2, sw, sb])
    m = nn.Bilinear(2, 3, 2, dtype=janus.float64)
    with janus.no_grad():
        m.weight.copy_(t(sw))
        m.bias.copy_(t(sb))
    close(m(t(s1), t(s2)), bilinear_ref(s1, s2, sw, sb))


def test_bilinear_module_parameters_and_init():
    m = nn.Bilinear(20, 30, 40)
    assert [(k, tuple(v.shape)) for k, v in m.named_parameters()] == [("weight", (40, 20, 30)), ("bias", (40,))]
    assert list(m.state_dict()) == ["weight", "bias"]
    bound = 1 / math.sqrt(20)
    w = m.weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound  # U(-1/sqrt(in1), 1/sqrt(in1))
    assert abs(w.mean()) < 0.01 * bound and abs(w.var() - bound ** 2 / 3) < 0.03 * bound ** 2 / 3
    assert np.abs(m.bias.detach().numpy()).max() <= bound
    nb = nn.Bilinear(2, 3, 4, bias=False)
    assert nb.bias is None and list(nb.state_dict()) == ["weight"]
    assert repr(m) == "Bilinear(in1_features=20, in2_features=30, out_features=40, bias=True)"
    assert nn.Bilinear(2, 3, 4, dtype=janus.float64).weight.dtype == janus.float64


# =============================================================== EmbeddingBag
IDX = np.array([1, 2, 2, 9, 4, 5, 2, 9, 0, 7])
OFF = np.array([0, 3, 3, 5, 10])  # bags of 3, 0, 2, 5 and 0 indices
BAG_CASES = [(mode, pad, ilo) for mode in ("sum", "mean", "max") for pad in (None, 2, -1) for ilo in (False, True)]


@pytest.mark.parametrize("mode,padding_idx,include_last_offset", BAG_CASES)
def test_embedding_bag_values_and_gradients(mode, padding_idx, include_last_offset):
    w = R.normal(size=(10, 3))
    off = OFF if not include_last_offset else np.array([0, 3, 3, 5, 8])  # the last two indices are left out
    kw = dict(mode=mode, padding_idx=padding_idx, include_last_offset=include_last_offset)
    got = F.embedding_bag(t(IDX), t(w), t(off), **kw)
    close(got, embedding_bag_ref(IDX, w, off, **kw))
    check_grad(lambda w_: F.embedding_bag(t(IDX), w_, t(off), **kw), [w])
    idx2 = R.integers(0, 10, size=(4, 3))
    idx2[1] = 2  # a bag of padding only (when padding_idx=2)
    kw2 = dict(mode=mode, padding_idx=padding_idx)
    close(F.embedding_bag(t(idx2), t(w), **kw2), embedding_bag_ref(idx2, w, **kw2))
    check_grad(lambda w_: F.embedding_bag(t(idx2), w_, **kw2), [w])
    if padding_idx is not None:  # the padding row takes no part: no gradient
        wj = t(w, requires_grad=True)
        F.embedding_bag(t(IDX), wj, t(off), **kw).sum().backward()
        assert not wj.grad.numpy()[padding_idx % 10].any()


def test_embedding_bag_per_sample_weights():
    w, psw = R.normal(size=(10, 3)), R.normal(size=IDX.shape)
    close(F.embedding_bag(t(IDX), t(w), t(OFF), mode="sum", per_sample_weights=t(psw)),
          embedding_bag_ref(IDX, w, OFF, "sum", psw))
    check_grad(lambda w_, p_: F.embedding_bag(t(IDX), w_, t(OFF), mode="sum", per_sample_weights=p_,
                                              padding_idx=9), [w, psw])
    idx2, psw2 = R.integers(0, 10, size=(3, 4)), R.normal(size=(3, 4))
    close(F.embedding_bag(t(idx2), t(w), mode="sum", per_sample_weights=t(psw2)),
          embedding_bag_ref(idx2, w, mode="sum", psw=psw2))


def test_embedding_bag_edge_cases():
    w = R.normal(size=(10, 3))
    # int32 indices and offsets, as PyTorch takes them
    close(F.embedding_bag(t(IDX.astype(np.int32)), t(w), t(OFF.astype(np.int32))), embedding_bag_ref(IDX, w, OFF))
    # no bags / no indices
    assert tuple(F.embedding_bag(t(IDX), t(w), t(np.array([0])), include_last_offset=True).shape) == (0, 3)
    empty = janus.tensor(np.zeros(0, dtype=np.int64))
    for mode in ("sum", "mean", "max"):
        close(F.embedding_bag(empty, t(w), t(np.array([0, 0])), mode=mode), np.zeros((2, 3)))
    for mode in ("sum", "mean", "max"):  # bags of no indices (PyTorch fails: "step must be nonzero")
        close(F.embedding_bag(janus.zeros(3, 0, dtype=janus.int64), t(w), mode=mode), np.zeros((3, 3)))
    wj = t(w, requires_grad=True)
    F.embedding_bag(empty, wj, t(np.array([0, 0]))).sum().backward()
    assert wj.grad is not None and not wj.grad.numpy().any()
    # the output keeps weight's dtype
    assert F.embedding_bag(t(IDX), t(w.astype(np.float32)), t(OFF)).dtype == janus.float32


def test_embedding_bag_max_norm_renormalizes_used_rows():
    w = R.normal(size=(10, 3)) * 3
    wj = t(w)
    idx = np.array([1, 4, 4, 7])
    out = F.embedding_bag(t(idx), wj, t(np.array([0, 2])), max_norm=1.5, mode="sum")
    ref = w.copy()
    for r in set(idx.tolist()):
        n = np.linalg.norm(w[r])
        if n > 1.5:
            ref[r] = w[r] * (1.5 / (n + 1e-7))
    close(wj, ref)  # in place, the rows not used untouched
    close(out, embedding_bag_ref(idx, ref, [0, 2], "sum"))
    wj1 = t(w)
    F.embedding_bag(t(idx), wj1, t(np.array([0, 2])), max_norm=1.0, norm_type=1.0)
    assert np.all(np.abs(wj1.numpy()[idx]).sum(1) <= 1.0 + 1e-6)


def test_embedding_bag_module():
    m = nn.EmbeddingBag(10, 3, mode="sum", padding_idx=-1)
    assert m.padding_idx == 9 and not m.weight.detach().numpy()[9].any()
    assert [(k, tuple(v.shape)) for k, v in m.named_parameters()] == [("weight", (10, 3))]
    assert list(m.state_dict()) == ["weight"]
    w = m.weight.detach().numpy()
    close(m(t(IDX), t(OFF)), embedding_bag_ref(IDX, w, OFF, "sum", padding_idx=9))
    psw = R.normal(size=IDX.shape)
    close(m(t(IDX), t(OFF), t(psw.astype(np.float32))), embedding_bag_ref(IDX, w, OFF, "sum", psw, padding_idx=9),
          tol=1e-5)
    big = nn.EmbeddingBag(1000, 100).weight.detach().numpy()  # N(0, 1)
    assert abs(big.mean()) < 0.01 and abs(big.std() - 1) < 0.01
    assert repr(nn.EmbeddingBag(10, 3)) == "EmbeddingBag(10, 3, mode='mean')"
    assert repr(nn.EmbeddingBag(10, 3, max_norm=1.0, norm_type=1.0, mode="max", padding_idx=2)) == \
        "EmbeddingBag(10, 3, max_norm=1.0, norm_type=1.0, mode='max', padding_idx=2)"
    emb = t(R.normal(size=(4, 2)))
    pre = nn.EmbeddingBag.from_pretrained(emb, mode="max")
    assert not pre.weight.requires_grad and pre.mode == "max" and (pre.num_embeddings, pre.embedding_dim) == (4, 2)
    close(pre(t(np.array([[0, 3], [2, 2]]))), embedding_bag_ref(np.array([[0, 3], [2, 2]]), emb.numpy(), mode="max"))
    assert nn.EmbeddingBag.from_pretrained(emb, freeze=False).weight.requires_grad
    given = t(R.normal(size=(5, 2)))
    assert np.array_equal(nn.EmbeddingBag(5, 2, _weight=given).weight.detach().numpy(), given.numpy())
    assert nn.EmbeddingBag(5, 2, dtype=janus.float64).weight.dtype == janus.float64


# ========================================================== LocalResponseNorm
@pytest.mark.parametrize("shape,size", [((2, 7, 5), 3), ((2, 6, 3, 4), 4), ((1, 5, 2, 3, 2), 2), ((2, 3, 4), 1),
                                        ((2, 3, 4), 8)])
def test_local_response_norm(shape, size):
    x = R.normal(size=shape)
    close(F.local_response_norm(t(x), size, 1e-2, 0.6, 1.5), lrn_ref(x, size, 1e-2, 0.6, 1.5))
    close(nn.LocalResponseNorm(size)(t(x)), lrn_ref(x, size))
    small = R.normal(size=shape[:2] + (2,) * (len(shape) - 2))
    check_grad(lambda v: F.local_response_norm(v, size, 0.5, 0.75, 1.0), [small])
    assert repr(nn.LocalResponseNorm(2, 1e-3, 0.5, 2.0)) == "LocalResponseNorm(2, alpha=0.001, beta=0.5, k=2.0)"
    assert list(nn.LocalResponseNorm(2).state_dict()) == []


# ================================================================== Softmax2d
def test_softmax2d():
    x = R.normal(size=(2, 4, 3, 5))
    close(nn.Softmax2d()(t(x)), softmax_ref(x, 1))
    close(nn.Softmax2d()(t(x[0])), softmax_ref(x[0], 0))
    check_grad(nn.Softmax2d(), [R.normal(size=(1, 3, 2, 2))])
    assert repr(nn.Softmax2d()) == "Softmax2d()"


# ============================================================= alpha dropouts
def _alpha_consts(p):
    a = 1.0 / math.sqrt((ALPHA ** 2 * p + 1) * (1 - p))
    return a, ALPHA * a * p, ALPHA * a * p - ALPHA * a  # scale, shift of the kept, value of the dropped


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_alpha_dropout_formula_with_dropouts_mask(p):
    """The same Philox draw as F.dropout: kept entries a x + alpha a p, dropped ones a (alpha p - alpha)."""
    x = R.normal(size=(6, 7))
    a, shift, dropped = _alpha_consts(p)
    janus.manual_seed(11)
    keep = F.dropout(janus.ones(6, 7, dtype=janus.float64), p).numpy() != 0
    janus.manual_seed(11)
    close(F.alpha_dropout(t(x), p, training=True), np.where(keep, a * x + shift, dropped))
    # channels: one draw per (sample, channel), as dropout2d
    xc = R.normal(size=(3, 4, 2, 5))
    janus.manual_seed(5)
    keepc = F.dropout2d(janus.ones(3, 4, 2, 5, dtype=janus.float64), p).numpy() != 0
    janus.manual_seed(5)
    close(F.feature_alpha_dropout(t(xc), p, training=True), np.where(keepc, a * xc + shift, dropped))
    assert np.all(keepc.all((2, 3)) | ~keepc.any((2, 3)))


def test_alpha_dropout_gradients():
    def seeded(fn):
        def f(v):
            janus.manual_seed(3)
            return fn(v)
        return f
    check_grad(seeded(lambda v: F.alpha_dropout(v, 0.3, True)), [R.normal(size=(4, 5))])
    check_grad(seeded(lambda v: F.feature_alpha_dropout(v, 0.3, True)), [R.normal(size=(3, 4, 2))])
    janus.manual_seed(3)
    x = t(R.normal(size=(50, 40)), requires_grad=True)
    y = F.alpha_dropout(x, 0.3, True)
    y.sum().backward()
    a = _alpha_consts(0.3)[0]
    assert set(np.unique(x.grad.numpy()).round(12)) <= {0.0, round(a, 12)}


def test_alpha_dropout_eval_and_edge_cases():
    x = t(R.normal(size=(3, 4)))
    for m in (nn.AlphaDropout(0.4), nn.FeatureAlphaDropout(0.4)):
        assert m.eval()(x) is x
    assert F.alpha_dropout(x, 0.5) is x  # training=False by default, as PyTorch
    assert F.feature_alpha_dropout(x, 0.5) is x
    assert F.alpha_dropout(x, 0.0, True) is x
    assert not F.alpha_dropout(x, 1.0, True).numpy().any()  # p = 1: zeros, as PyTorch
    assert not F.feature_alpha_dropout(x, 1.0, True).numpy().any()
    assert F.feature_alpha_dropout(t(np.ones(3)), 0.5, False).shape == (3,)
    y = x.clone()
    assert F.alpha_dropout(y, 0.5, True, inplace=True) is y
    assert repr(nn.AlphaDropout(0.2)) == "AlphaDropout(p=0.2, inplace=False)"
    assert repr(nn.FeatureAlphaDropout(0.3, inplace=True)) == "FeatureAlphaDropout(p=0.3, inplace=True)"
    assert list(nn.AlphaDropout().state_dict()) == []


def test_alpha_dropout_statistics_and_determinism():
    janus.manual_seed(0)
    x = janus.randn(1000, 1000, dtype=janus.float64)
    for p in (0.2, 0.5):
        m = nn.AlphaDropout(p)
        y = m(x).numpy()
        assert abs(y.mean()) < 0.01 and abs(y.var() - 1.0) < 0.01, (p, y.mean(), y.var())
        dropped = _alpha_consts(p)[2]
        assert abs(np.isclose(y, dropped, rtol=0, atol=1e-12).mean() - p) < 0.005
    xf = janus.randn(200, 500, 10, dtype=janus.float64)
    yf = nn.FeatureAlphaDropout(0.3)(xf).numpy()
    assert abs(yf.mean()) < 0.02 and abs(yf.var() - 1.0) < 0.02
    janus.manual_seed(42)
    y1 = nn.AlphaDropout(0.3)(x).numpy()
    y2 = nn.AlphaDropout(0.3)(x).numpy()
    janus.manual_seed(42)
    y3 = nn.AlphaDropout(0.3)(x).numpy()
    assert np.array_equal(y1, y3) and not np.array_equal(y1, y2)


# ==================================================================== LPPool
@pytest.mark.parametrize("p,k,s,ceil", [(2.0, 2, None, False), (3.0, (2, 3), 1, False), (1.5, 3, 2, True),
                                        (math.inf, 2, 1, False), (1.0, (1, 2), (2, 1), True)])
def test_lp_pool2d(p, k, s, ceil):
    x = R.uniform(0.2, 2.0, size=(2, 3, 5, 6))
    close(F.lp_pool2d(t(x), p, k, s, ceil), lp_pool2d_ref(x, p, k, s, ceil))
    close(nn.LPPool2d(p, k, s, ceil)(t(x)), lp_pool2d_ref(x, p, k, s, ceil))
    close(F.lp_pool2d(t(x[0]), p, k, s, ceil), lp_pool2d_ref(x[0], p, k, s, ceil))  # unbatched
    check_grad(lambda v: F.lp_pool2d(v, p, k, s, ceil), [x[:1, :2]])


@pytest.mark.parametrize("p,k,s,ceil", [(2, 2, None, False), (3.0, 3, 1, False), (1.5, 2, 3, True),
                                        (math.inf, 3, 2, False)])
def test_lp_pool1d(p, k, s, ceil):
    x = R.uniform(0.2, 2.0, size=(2, 3, 7))
    ref = lp_pool2d_ref(x[:, :, None, :], p, (1, k), (1, k if s is None else s), ceil)[:, :, 0]
    close(F.lp_pool1d(t(x), p, k, s, ceil), ref)
    close(nn.LPPool1d(p, k, s, ceil)(t(x)), ref)
    close(F.lp_pool1d(t(x[0]), p, k, s, ceil), ref[0])
    check_grad(lambda v: F.lp_pool1d(v, p, k, s, ceil), [x[:1]])


def test_lp_pool_signs_and_repr():
    x = R.normal(size=(2, 2, 4, 4))  # odd p: a negative window sum gives NaN (as PyTorch), p = 2 any sign
    close(F.lp_pool2d(t(x), 3, 2), lp_pool2d_ref(x, 3, 2))
    close(F.lp_pool2d(t(x), 2, 2), lp_pool2d_ref(x, 2, 2))
    close(F.lp_pool2d(t(x), -math.inf, 2), -np.nanmax(-np.abs(windows_2d(x, (2, 2), (2, 2))), -1))
    assert repr(nn.LPPool1d(2, 3)) == "LPPool1d(norm_type=2, kernel_size=3, stride=None, ceil_mode=False)"
    assert repr(nn.LPPool2d(1.5, (2, 3), stride=1, ceil_mode=True)) == \
        "LPPool2d(norm_type=1.5, kernel_size=(2, 3), stride=1, ceil_mode=True)"


# ============================================================= Fold / Unfold
FOLD_CASES = [((2, 2), (1, 1), (0, 0), (1, 1)), ((2, 3), (2, 1), (1, 2), (2, 1)), ((3, 3), (2, 2), (1, 1), (2, 2)),
              ((1, 1), (1, 1), (0, 0), (1, 1)), ((3, 2), (1, 1), (0, 1), (3, 2))]


@pytest.mark.parametrize("k,d,p,s", FOLD_CASES)
def test_unfold_and_fold(k, d, p, s):
    x = R.normal(size=(2, 3, 5, 6))
    cols = unfold_ref(x, k, d, p, s)
    close(F.unfold(t(x), k, d, p, s), cols)
    close(nn.Unfold(k, d, p, s)(t(x)), cols)
    close(F.unfold(t(x[0]), k, d, p, s), cols[0])  # unbatched
    c = R.normal(size=cols.shape)
    close(F.fold(t(c), (5, 6), k, d, p, s), fold_ref(c, (5, 6), k, d, p, s))
    close(nn.Fold((5, 6), k, d, p, s)(t(c)), fold_ref(c, (5, 6), k, d, p, s))
    close(F.fold(t(c[0]), (5, 6), k, d, p, s), fold_ref(c, (5, 6), k, d, p, s)[0])
    # fold is unfold's adjoint: <unfold(x), c> = <x, fold(c)>
    assert abs((cols * c).sum() - (x * fold_ref(c, (5, 6), k, d, p, s)).sum()) < 1e-10
    xs = R.normal(size=(1, 2, 4, 4))
    check_grad(lambda v: F.unfold(v, k, d, p, s), [xs])
    n_cols = unfold_ref(xs, k, d, p, s).shape
    check_grad(lambda v: F.fold(v, (4, 4), k, d, p, s), [R.normal(size=n_cols)])


def test_fold_sums_overlaps_and_repr():
    ones = janus.ones(1, 4, 9, dtype=janus.float64)  # 2x2 blocks over a 4x4 image, stride 1
    counts = np.array([[1, 2, 2, 1], [2, 4, 4, 2], [2, 4, 4, 2], [1, 2, 2, 1]], dtype=float)
    close(F.fold(ones, 4, 2), counts[None, None])
    assert tuple(F.unfold(janus.zeros(0, 3, 5, 6), 2).shape) == (0, 12, 20)
    assert repr(nn.Fold((5, 6), 2)) == "Fold(output_size=(5, 6), kernel_size=2, dilation=1, padding=0, stride=1)"
    assert repr(nn.Unfold((2, 3), dilation=2, padding=1, stride=(1, 2))) == \
        "Unfold(kernel_size=(2, 3), dilation=2, padding=1, stride=(1, 2))"


# ============================================================ ChannelShuffle
@pytest.mark.parametrize("shape,g", [((2, 6, 3, 2), 3), ((2, 6, 4), 2), ((1, 8, 2, 1, 2), 4), ((2, 5, 3), 1),
                                     ((2, 4, 3), 4)])
def test_channel_shuffle(shape, g):
    x = R.normal(size=shape)
    close(F.channel_shuffle(t(x), g), channel_shuffle_ref(x, g))
    close(F.native_channel_shuffle(t(x), g), channel_shuffle_ref(x, g))
    close(nn.ChannelShuffle(g)(t(x)), channel_shuffle_ref(x, g))
    check_grad(lambda v: F.channel_shuffle(v, g), [x])
    assert repr(nn.ChannelShuffle(g)) == f"ChannelShuffle(groups={g})"


# ============================================================== 3d padding
PAD3D = [(nn.ZeroPad3d, "constant"), (nn.ReflectionPad3d, "reflect"), (nn.ReplicationPad3d, "replicate"),
         (nn.CircularPad3d, "circular")]


@pytest.mark.parametrize("cls,mode", PAD3D, ids=[c.__name__ for c, _ in PAD3D])
def test_pad3d(cls, mode):
    x = R.normal(size=(2, 2, 3, 4, 3))
    p = (1, 2, 2, 0, 1, 2)
    close(cls(p)(t(x)), pad3d_ref(x, p, mode))
    close(cls(1)(t(x)), pad3d_ref(x, (1,) * 6, mode))
    close(cls(p)(t(x[0])), pad3d_ref(x[0], p, mode))  # (C, D, H, W)
    close(F.pad(t(x), p, mode), pad3d_ref(x, p, mode))
    check_grad(cls(p), [R.normal(size=(1, 1, 3, 3, 3))])
    assert repr(cls(p)) == f"{cls.__name__}((1, 2, 2, 0, 1, 2))"
    assert repr(cls(1)) == f"{cls.__name__}((1, 1, 1, 1, 1, 1))"


def test_constant_pad3d():
    x = R.normal(size=(1, 2, 2, 3, 2))
    close(nn.ConstantPad3d((1, 0, 2, 1, 0, 3), 2.5)(t(x)), pad3d_ref(x, (1, 0, 2, 1, 0, 3), "constant", 2.5))
    check_grad(nn.ConstantPad3d(1, -1.0), [R.normal(size=(1, 1, 2, 2, 2))])
    assert repr(nn.ConstantPad3d(1, 2.5)) == "ConstantPad3d(padding=(1, 1, 1, 1, 1, 1), value=2.5)"
    assert repr(nn.ConstantPad2d((1, 2, 3, 4), 0.0)) == "ConstantPad2d(padding=(1, 2, 3, 4), value=0.0)"
    assert repr(nn.ZeroPad2d(1)) == "ZeroPad2d((1, 1, 1, 1))"


# ================================================================ LazyLinear
def test_lazy_linear_infers_in_features_and_becomes_linear():
    m = nn.LazyLinear(4)
    assert m.in_features == 0 and m.has_uninitialized_params()
    assert repr(m) == "LazyLinear(in_features=0, out_features=4, bias=True)"
    assert list(m.state_dict()) == ["weight", "bias"]
    x = R.normal(size=(3, 2, 7)).astype(np.float32)
    y = m(t(x))
    assert type(m) is nn.Linear and m.in_features == 7
    assert repr(m) == "Linear(in_features=7, out_features=4, bias=True)"
    assert [(k, tuple(v.shape)) for k, v in m.named_parameters()] == [("weight", (4, 7)), ("bias", (4,))]
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    np.testing.assert_allclose(y.detach().numpy(), x @ w.T + b, rtol=1e-5, atol=1e-6)
    assert np.abs(w).max() <= 1 / math.sqrt(7) and np.abs(b).max() <= 1 / math.sqrt(7)
    with pytest.raises(RuntimeError, match="in_features=7"):
        m(janus.randn(2, 5))
    big = nn.LazyLinear(300)
    big(janus.randn(1, 400))
    bw, bound = big.weight.detach().numpy(), 1 / math.sqrt(400)  # kaiming_uniform(a=sqrt(5)): U(-1/sqrt(in), ..)
    assert bound * 0.99 < np.abs(bw).max() <= bound and abs(bw.var() - bound ** 2 / 3) < 0.02 * bound ** 2 / 3


def test_lazy_linear_dtype_bias_gradients_and_load():
    m = nn.LazyLinear(3, bias=False, dtype=janus.float64)
    assert list(m.state_dict()) == ["weight"] and m.bias is None
    x = R.normal(size=(4, 5))
    xj = t(x, requires_grad=True)
    y = m(xj)
    assert m.weight.dtype == janus.float64 and m.bias is None
    close(y, x @ m.weight.detach().numpy().T)
    lin = m
    check_grad(lambda v, w: F.linear(v, w), [x, lin.weight.detach().numpy()])
    (y * y).sum().backward()
    close(lin.weight.grad, 2 * (x @ lin.weight.detach().numpy().T).T @ x)
    src = nn.Linear(6, 2)
    lazy = nn.LazyLinear(2)
    lazy.load_state_dict(src.state_dict())
    assert lazy.in_features == 6 and not lazy.has_uninitialized_params()
    xs = janus.randn(3, 6)
    np.testing.assert_allclose(lazy(xs).detach().numpy(), src(xs).detach().numpy(), rtol=1e-6)
    assert type(lazy) is nn.Linear
    d = nn.LazyLinear(2).double()
    d(janus.randn(1, 3, dtype=janus.float64))
    assert d.weight.dtype == janus.float64


# ====================================================== names, unsupported list
def test_new_names_exported_and_not_listed_unsupported():
    from janus import _unsupported
    for name in ("Bilinear", "EmbeddingBag", "LocalResponseNorm", "Softmax2d", "AlphaDropout", "FeatureAlphaDropout",
                 "LPPool1d", "LPPool2d", "Fold", "Unfold", "ChannelShuffle", "ZeroPad3d", "ConstantPad3d",
                 "ReflectionPad3d", "ReplicationPad3d", "CircularPad3d", "LazyLinear"):
        assert getattr(nn, name).__name__ == name and name in nn.modules.__all__
        assert "nn." + name not in _unsupported.ALTERNATIVES
    for name in ("bilinear", "embedding_bag", "local_response_norm", "alpha_dropout", "feature_alpha_dropout",
                 "lp_pool1d", "lp_pool2d", "unfold", "fold", "channel_shuffle", "native_channel_shuffle"):
        assert callable(getattr(F, name))
    from janus.nn.modules.channelshuffle import ChannelShuffle  # noqa: F401  (torch.nn.modules' layout)
    from janus.nn.modules.fold import Fold, Unfold  # noqa: F401
    from janus.nn.modules.lazy import LazyModuleMixin  # noqa: F401


# ==================================================================== errors
W10 = R.normal(size=(10, 3))
W32 = W10.astype(np.float32)


def _i(a):
    return np.array(a, dtype=np.int64)


# (id, call(F, tensor) -- run with janus and with torch --, exception, message pattern or None where
# janus's message is its own: such cases are not run against PyTorch)
ERRORS = [
    ("bilinear-ndim", lambda F, T: F.bilinear(T(R.normal(size=(2, 3))), T(R.normal(size=(2, 1, 5))),
                                              T(R.normal(size=(4, 3, 5)))), RuntimeError,
     "input dimensions do not match: got 2 and 3"),
    ("bilinear-batch", lambda F, T: F.bilinear(T(R.normal(size=(2, 3))), T(R.normal(size=(3, 5))),
                                               T(R.normal(size=(4, 3, 5)))), RuntimeError,
     "input batch dimensions do not match at dim 0: got 2 and 3"),
    ("bilinear-in1", lambda F, T: F.bilinear(T(R.normal(size=(2, 4))), T(R.normal(size=(2, 5))),
                                             T(R.normal(size=(4, 3, 5)))), RuntimeError,
     "input1 size does not match weight size: got 4 but expected 3"),
    ("bilinear-in2", lambda F, T: F.bilinear(T(R.normal(size=(2, 3))), T(R.normal(size=(2, 6))),
                                             T(R.normal(size=(4, 3, 5)))), RuntimeError,
     "input2 size does not match weight size: got 6 but expected 5"),
    ("bilinear-bias", lambda F, T: F.bilinear(T(R.normal(size=(2, 3))), T(R.normal(size=(2, 5))),
                                              T(R.normal(size=(4, 3, 5))), T(R.normal(size=3))), RuntimeError,
     "bias size does not match weight size: got 3 but expected 4"),
    ("bag-offsets0", lambda F, T: F.embedding_bag(T(_i([1, 2, 3])), T(W10), T(_i([1, 2]))), RuntimeError,
     r"offsets\[0\] has to be 0.*However, got 1"),
    ("bag-offsets-last", lambda F, T: F.embedding_bag(T(_i([1, 2, 3])), T(W10), T(_i([0, 5]))), RuntimeError,
     r"offsets\[-1\] can not be greater than input's length 3 but got offsets\[-1\] of 5"),
    ("bag-2d-offsets", lambda F, T: F.embedding_bag(T(_i([[1, 2, 3]])), T(W10), T(_i([0]))), ValueError,
     "if input is 2D, then offsets has to be None"),
    ("bag-no-offsets", lambda F, T: F.embedding_bag(T(_i([1, 2, 3])), T(W10)), ValueError,
     "offsets has to be a 1D Tensor but got None"),
    ("bag-offsets-2d", lambda F, T: F.embedding_bag(T(_i([1, 2, 3])), T(W10), T(_i([[0, 1]]))), ValueError,
     "offsets has to be a 1D Tensor"),
    ("bag-input-3d", lambda F, T: F.embedding_bag(T(_i([[[1, 2, 3]]])), T(W10)), ValueError,
     "input has to be 1D or 2D Tensor, but got Tensor of dimension 3"),
    ("bag-weight-1d", lambda F, T: F.embedding_bag(T(_i([1, 2])), T(R.normal(size=10)), T(_i([0]))), ValueError,
     "weight has to be a 2D Tensor, but got Tensor of dimension 1"),
    ("bag-mode", lambda F, T: F.embedding_bag(T(_i([1, 2])), T(W10), T(_i([0])), mode="prod"), ValueError,
     "mode has to be one of sum, mean or max"),
    ("bag-psw-mode", lambda F, T: F.embedding_bag(T(_i([1, 2])), T(W10), T(_i([0])), mode="max",
                                                  per_sample_weights=T(np.ones(2))), NotImplementedError,
     "per_sample_weights is only supported for mode='sum' \\(got mode='max'\\)"),
    ("bag-psw-shape", lambda F, T: F.embedding_bag(T(_i([1, 2])), T(W10), T(_i([0])), mode="sum",
                                                   per_sample_weights=T(np.ones(3))), ValueError,
     "per_sample_weights .* must have the same shape as the input"),
    ("bag-padding-idx", lambda F, T: F.embedding_bag(T(_i([1, 2])), T(W10), T(_i([0])), padding_idx=10),
     RuntimeError, "padding_idx must be within the number of embeddings, -10 through 9, but got 10"),
    # (float32 weights: PyTorch's float64 kernel words this message differently)
    ("bag-index-range", lambda F, T: F.embedding_bag(T(_i([30, 2, 3])), T(W32), T(_i([0, 1]))), RuntimeError,
     r"Index 0 of input takes value 30 which is not in the valid range \[0, 10\)"),
    ("bag-index-position", lambda F, T: F.embedding_bag(T(_i([1, 2, 3, 4, 30])), T(W10), T(_i([0, 3]))),
     RuntimeError, None),  # janus: "Index 4 of input takes value 30 ..."; PyTorch: an internal assertion
    ("bag-index-negative", lambda F, T: F.embedding_bag(T(_i([-1, 2])), T(W32), T(_i([0]))), RuntimeError,
     r"Index 0 of input takes value -1 which is not in the valid range \[0, 10\)"),
    ("bag-index-dtype", lambda F, T: F.embedding_bag(T(np.array([1.0, 2.0])), T(W10), T(_i([0]))), RuntimeError,
     "'indices' to have one of the following scalar types: Long, Int"),
    ("bag-max-freq", lambda F, T: F.embedding_bag(T(_i([1, 2])), T(W10), T(_i([0])), mode="max",
                                                  scale_grad_by_freq=True), ValueError,
     "max mode does not support scaling the gradient by the frequency"),
    ("bag-max-sparse", lambda F, T: F.embedding_bag(T(_i([1, 2])), T(W10), T(_i([0])), mode="max", sparse=True),
     ValueError, "max mode does not support sparse weights"),
    ("bag-offsets-order", lambda F, T: F.embedding_bag(T(_i([1, 2, 3])), T(W10), T(_i([0, 2, 1]))), RuntimeError,
     None),
    ("lrn-ndim", lambda F, T: F.local_response_norm(T(R.normal(size=(2, 3))), 2), ValueError,
     "Expected 3D or higher dimensionality"),
    ("lrn-size", lambda F, T: F.local_response_norm(T(R.normal(size=(2, 3, 4))), 0), RuntimeError,
     "greater than zero"),
    ("lp-norm-type", lambda F, T: F.lp_pool2d(T(R.normal(size=(1, 2, 4, 4))), 0, 2), ValueError,
     "norm_type must be a non-zero value, but got 0"),
    ("lp1-norm-type", lambda F, T: F.lp_pool1d(T(R.normal(size=(1, 2, 4))), 0, 2), ValueError,
     "norm_type must be a non-zero value, but got 0"),
    ("unfold-ndim", lambda F, T: F.unfold(T(R.normal(size=(1, 2, 3, 5, 6))), 2), RuntimeError,
     r"Expected 3D or 4D \(batch mode\) tensor .* but got: \[1, 2, 3, 5, 6\]"),
    ("unfold-big-kernel", lambda F, T: F.unfold(T(R.normal(size=(1, 2, 5, 6))), 7), RuntimeError,
     r"calculated shape of the array of sliding blocks as \(-1, 0\), but its components must be at least one"),
    ("unfold-kernel0", lambda F, T: F.unfold(T(R.normal(size=(1, 2, 5, 6))), 0), RuntimeError,
     "kernel size should be greater than zero, but got kernel_height: 0 kernel_width: 0"),
    ("unfold-stride0", lambda F, T: F.unfold(T(R.normal(size=(1, 2, 5, 6))), 2, stride=0), RuntimeError,
     "stride should be greater than zero, but got stride_height: 0 stride_width: 0"),
    ("unfold-dilation0", lambda F, T: F.unfold(T(R.normal(size=(1, 2, 5, 6))), 2, dilation=0), RuntimeError,
     "dilation should be greater than zero, but got dilation_height: 0 dilation_width: 0"),
    ("unfold-padding", lambda F, T: F.unfold(T(R.normal(size=(1, 2, 5, 6))), 2, padding=-1), RuntimeError,
     "padding should be non-negative, but got pad_height: -1 pad_width: -1"),
    ("unfold-kernel-len", lambda F, T: F.unfold(T(R.normal(size=(1, 2, 5, 6))), (2, 3, 4)), RuntimeError,
     "It is expected kernel_size equals to 2, but got size 3"),
    ("fold-length", lambda F, T: F.fold(T(R.normal(size=(2, 12, 21))), (5, 6), 2), RuntimeError,
     r"expected size of input's dimension 2 to match the calculated number of sliding blocks 4 \* 5 = 20, but got "
     r"input.size\(2\)=21"),
    ("fold-divisible", lambda F, T: F.fold(T(R.normal(size=(2, 12, 20))), (5, 6), 3), RuntimeError,
     r"input.size\(1\)=12 and kernel_size=\(3, 3\)"),
    ("fold-ndim", lambda F, T: F.fold(T(R.normal(size=(1, 2, 12, 20))), (5, 6), 2), RuntimeError,
     r"Expected 2D or 3D \(batch mode\) tensor .* but got: \[1, 2, 12, 20\]"),
    ("shuffle-groups0", lambda F, T: F.channel_shuffle(T(R.normal(size=(2, 4, 3))), 0), RuntimeError,
     "Number of groups to divide channels in must be positive. Value of groups:0"),
    ("shuffle-divisible", lambda F, T: F.channel_shuffle(T(R.normal(size=(2, 3, 3))), 2), RuntimeError,
     "Number of channels must be divisible by groups. Got 3 channels and 2 groups."),
    ("shuffle-ndim", lambda F, T: F.channel_shuffle(T(R.normal(size=(5, 6))), 1), RuntimeError,
     r"channel_shuffle expects input with > 2 dims, but got input with sizes \[5, 6\]"),
    ("alpha-p", lambda F, T: F.alpha_dropout(T(R.normal(size=3)), 1.5, True), ValueError,
     "dropout probability has to be between 0 and 1, but got 1.5"),
    ("feature-alpha-p", lambda F, T: F.feature_alpha_dropout(T(R.normal(size=(2, 3))), -0.1, True), ValueError,
     "dropout probability has to be between 0 and 1, but got -0.1"),
    ("feature-alpha-1d", lambda F, T: F.feature_alpha_dropout(T(R.normal(size=6)), 0.5, True), RuntimeError,
     "Feature dropout requires at least 2 dimensions in the input"),
]


@pytest.mark.parametrize("case", ERRORS, ids=[e[0] for e in ERRORS])
def test_bad_arguments_raise(case):
    _, call, exc, pattern = case
    with pytest.raises(exc, match=pattern):
        call(F, t)


@needs_torch
@pytest.mark.parametrize("case", [e for e in ERRORS if e[3] is not None], ids=[e[0] for e in ERRORS if e[3]])
def test_bad_arguments_raise_as_in_pytorch(case):
    """The same call in PyTorch raises the same exception type with a message the pattern matches."""
    _, call, exc, pattern = case
    with pytest.raises(exc, match=pattern):
        call(TF, tt)


MODULE_ERRORS = [
    ("Bilinear-in1", lambda nn: nn.Bilinear(0, 3, 4), ValueError, re.escape("in1_features must be > 0, but got "
                                                                           "(in1_features=0)")),
    ("EmbeddingBag-padding", lambda nn: nn.EmbeddingBag(10, 3, padding_idx=10), ValueError,
     "padding_idx must be within num_embeddings"),
    ("EmbeddingBag-padding-neg", lambda nn: nn.EmbeddingBag(10, 3, padding_idx=-11), ValueError,
     "padding_idx must be within num_embeddings"),
    ("EmbeddingBag-weight", lambda nn: nn.EmbeddingBag(10, 3, _weight=janus.zeros(3, 3)), ValueError,
     "Shape of weight does not match num_embeddings and embedding_dim"),
    ("EmbeddingBag-pretrained", lambda nn: nn.EmbeddingBag.from_pretrained(janus.zeros(3)), ValueError,
     "Embeddings parameter is expected to be 2-dimensional"),
    ("EmbeddingBag-sparse", lambda nn: nn.EmbeddingBag(10, 3, sparse=True), NotImplementedError, "sparse"),
    ("AlphaDropout-p", lambda nn: nn.AlphaDropout(1.5), ValueError, "between 0 and 1, but got 1.5"),
    ("FeatureAlphaDropout-p", lambda nn: nn.FeatureAlphaDropout(-1), ValueError, "between 0 and 1"),
    ("Softmax2d-2d", lambda nn: nn.Softmax2d()(janus.zeros(2, 3)), ValueError,
     "Softmax2d: expected input to be 3D or 4D, got 2D instead"),
    ("Softmax2d-5d", lambda nn: nn.Softmax2d()(janus.zeros(1, 2, 3, 4, 5)), ValueError,
     "Softmax2d: expected input to be 3D or 4D, got 5D instead"),
    ("ReflectionPad3d-3d", lambda nn: nn.ReflectionPad3d(1)(janus.zeros(3, 3, 3)), NotImplementedError,
     "Padding size 6 is not supported for 3D input tensor."),
    ("ReplicationPad3d-6d", lambda nn: nn.ReplicationPad3d(1)(janus.zeros(1, 1, 2, 3, 3, 3)), NotImplementedError,
     "Padding size 6 is not supported for 6D input tensor."),
    ("CircularPad3d-3d", lambda nn: nn.CircularPad3d(1)(janus.zeros(3, 3, 3)), ValueError,
     re.escape("expected 4D or 5D input (got 3D input)")),
    ("ReflectionPad3d-big", lambda nn: nn.ReflectionPad3d(3)(janus.zeros(1, 2, 3, 3, 3)), (ValueError, RuntimeError),
     "Padding size should be less than the corresponding input dimension"),
    ("CircularPad3d-big", lambda nn: nn.CircularPad3d(4)(janus.zeros(1, 2, 3, 3, 3)), (ValueError, RuntimeError),
     "Padding value causes wrapping around more than once"),
    ("ZeroPad3d-length", lambda nn: nn.ZeroPad3d((1, 2)), ValueError, "expects 6 padding values"),
    ("LazyLinear-mismatch", lambda nn: _called(nn.LazyLinear(2), janus.zeros(2, 3))(janus.zeros(2, 4)), RuntimeError,
     "in_features=3"),
]


def _called(m, x):
    m(x)
    return m


@pytest.mark.parametrize("case", MODULE_ERRORS, ids=[e[0] for e in MODULE_ERRORS])
def test_module_bad_arguments_raise(case):
    _, make, exc, pattern = case
    with pytest.raises(exc, match=pattern):
        make(nn)


# ==================================================================== PyTorch
def _grads_match(jy, ty, jleaves, tleaves, tol=1e-12):
    """Values, then the gradients of sum(y * g) (random g) w.r.t. the leaves (their .grad cleared first)."""
    for leaf in list(jleaves) + list(tleaves):
        leaf.grad = None
    close(jy, ty, tol)
    g = R.normal(size=tuple(ty.shape))
    (jy * t(g)).sum().backward()
    (ty * tt(g)).sum().backward()
    for a, b in zip(jleaves, tleaves):
        close(a.grad, b.grad, tol)


def _copy_module(jm, tm):
    sd = {k: torch.tensor(v.numpy().copy()) for k, v in jm.state_dict().items()}
    missing, unexpected = tm.load_state_dict(sd, strict=True)
    assert not missing and not unexpected
    assert [(k, tuple(v.shape)) for k, v in jm.named_parameters()] == \
        [(k, tuple(v.shape)) for k, v in tm.named_parameters()]
    assert list(jm.state_dict()) == list(tm.state_dict())


def _module_case(jm, tm, inputs, tol=1e-12):
    """Copy jm's parameters into tm; outputs and the gradients of inputs and parameters agree."""
    jm, tm = jm.double(), tm.double()
    _copy_module(jm, tm)
    ji = [t(a, requires_grad=True) for a in inputs]
    ti = [tt(a, requires_grad=True) for a in inputs]
    _grads_match(jm(*ji), tm(*ti), ji + [p for _, p in jm.named_parameters()],
                 ti + [p for _, p in tm.named_parameters()], tol)


@needs_torch
def test_modules_against_pytorch():
    tnn = torch.nn
    cases = [
        (nn.Bilinear(3, 4, 5), tnn.Bilinear(3, 4, 5), [R.normal(size=(6, 3)), R.normal(size=(6, 4))]),
        (nn.Bilinear(3, 4, 2, bias=False), tnn.Bilinear(3, 4, 2, bias=False),
         [R.normal(size=(2, 3, 3)), R.normal(size=(2, 3, 4))]),
        (nn.LocalResponseNorm(3), tnn.LocalResponseNorm(3), [R.normal(size=(2, 6, 3, 4))]),
        (nn.LocalResponseNorm(4, 1e-2, 0.6, 2.0), tnn.LocalResponseNorm(4, 1e-2, 0.6, 2.0), [R.normal(size=(2, 5, 7))]),
        (nn.LocalResponseNorm(2), tnn.LocalResponseNorm(2), [R.normal(size=(1, 4, 2, 3, 2))]),
        (nn.Softmax2d(), tnn.Softmax2d(), [R.normal(size=(2, 3, 4, 5))]),
        (nn.LPPool2d(2, 2), tnn.LPPool2d(2, 2), [R.normal(size=(2, 3, 4, 6))]),
        (nn.LPPool2d(1.5, (2, 3), 1, True), tnn.LPPool2d(1.5, (2, 3), 1, True), [R.uniform(0.1, 2, size=(1, 2, 5, 5))]),
        (nn.LPPool2d(3, 3, 2, True), tnn.LPPool2d(3, 3, 2, True), [R.uniform(0.1, 2, size=(2, 5, 6))]),
        (nn.LPPool1d(2, 3), tnn.LPPool1d(2, 3), [R.normal(size=(2, 3, 9))]),
        (nn.LPPool1d(1.3, 2, 1, True), tnn.LPPool1d(1.3, 2, 1, True), [R.uniform(0.1, 2, size=(3, 7))]),
        (nn.LPPool1d(float("inf"), 2), tnn.LPPool1d(float("inf"), 2), [R.normal(size=(2, 3, 8))]),
        (nn.Unfold((2, 3), (2, 1), (1, 2), (2, 1)), tnn.Unfold((2, 3), (2, 1), (1, 2), (2, 1)),
         [R.normal(size=(2, 3, 5, 6))]),
        (nn.Unfold(3, padding=1), tnn.Unfold(3, padding=1), [R.normal(size=(2, 4, 4))]),
        (nn.Fold((5, 6), (2, 3), (2, 1), (1, 2), (2, 1)), tnn.Fold((5, 6), (2, 3), (2, 1), (1, 2), (2, 1)),
         [R.normal(size=(2, 18, 24))]),
        (nn.Fold(4, 2), tnn.Fold(4, 2), [R.normal(size=(8, 9))]),
        (nn.ChannelShuffle(3), tnn.ChannelShuffle(3), [R.normal(size=(2, 6, 2, 3))]),
        (nn.ZeroPad3d((1, 2, 0, 1, 2, 0)), tnn.ZeroPad3d((1, 2, 0, 1, 2, 0)), [R.normal(size=(2, 2, 3, 3, 3))]),
        (nn.ConstantPad3d(1, 3.5), tnn.ConstantPad3d(1, 3.5), [R.normal(size=(2, 2, 2, 3))]),
        (nn.ReflectionPad3d((1, 2, 0, 1, 2, 0)), tnn.ReflectionPad3d((1, 2, 0, 1, 2, 0)),
         [R.normal(size=(2, 2, 3, 3, 3))]),
        (nn.ReplicationPad3d(2), tnn.ReplicationPad3d(2), [R.normal(size=(2, 3, 2, 3))]),
        (nn.CircularPad3d((1, 2, 0, 1, 2, 0)), tnn.CircularPad3d((1, 2, 0, 1, 2, 0)), [R.normal(size=(1, 2, 3, 3, 3))]),
    ]
    for jm, tm, inputs in cases:
        assert repr(jm) == repr(tm)
        _module_case(jm, tm, inputs)


@needs_torch
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_against_pytorch(mode):
    tnn = torch.nn
    for pad in (None, 3, -2):
        jm, tm = nn.EmbeddingBag(10, 4, mode=mode, padding_idx=pad), tnn.EmbeddingBag(10, 4, mode=mode, padding_idx=pad)
        assert repr(jm) == repr(tm)
        jm, tm = jm.double(), tm.double()
        _copy_module(jm, tm)
        idx2 = R.integers(0, 10, size=(5, 4))
        idx2[0] = 3  # a bag of padding only
        _grads_match(jm(t(idx2)), tm(tt(idx2)), [jm.weight], [tm.weight])
        _grads_match(jm(t(IDX), t(OFF)), tm(tt(IDX), tt(OFF)), [jm.weight], [tm.weight])
    # include_last_offset with offsets[-1] = len(input).  A smaller offsets[-1] ends the last bag there (the
    # documented meaning, janus's); PyTorch's CPU kernels disagree among themselves on it: its float32 'sum'
    # stops there, its float32 'mean' divides that sum by the count up to len(input), its float32 'max' and
    # all its float64 modes run to len(input) -- so only float32 'sum' is compared for it
    jm = nn.EmbeddingBag(10, 4, mode=mode, include_last_offset=True).double()
    tm = tnn.EmbeddingBag(10, 4, mode=mode, include_last_offset=True).double()
    _copy_module(jm, tm)
    off = np.array([0, 3, 3, 5, 10])
    _grads_match(jm(t(IDX), t(off)), tm(tt(IDX), tt(off)), [jm.weight], [tm.weight])
    if mode == "sum":
        jf, tf_ = nn.EmbeddingBag(10, 4, mode=mode, include_last_offset=True), \
            tnn.EmbeddingBag(10, 4, mode=mode, include_last_offset=True)
        _copy_module(jf, tf_)
        short = np.array([0, 3, 3, 5, 8])
        np.testing.assert_allclose(jf(t(IDX), t(short)).detach().numpy(), tf_(tt(IDX), tt(short)).detach().numpy(),
                                   rtol=1e-6, atol=1e-6)


@needs_torch
def test_embedding_bag_extras_against_pytorch():
    w, psw = R.normal(size=(10, 3)), R.normal(size=IDX.shape)
    jw, tw = t(w, requires_grad=True), tt(w, requires_grad=True)
    jp, tp = t(psw, requires_grad=True), tt(psw, requires_grad=True)
    _grads_match(F.embedding_bag(t(IDX), jw, t(OFF), mode="sum", per_sample_weights=jp, padding_idx=2),
                 TF.embedding_bag(tt(IDX), tw, tt(OFF), mode="sum", per_sample_weights=tp, padding_idx=2),
                 [jw, jp], [tw, tp])
    jw, tw = t(w * 3), tt(w * 3)
    for norm_type in (2.0, 1.0):
        close(F.embedding_bag(t(IDX), jw, t(OFF), max_norm=1.5, norm_type=norm_type),
              TF.embedding_bag(tt(IDX), tw, tt(OFF), max_norm=1.5, norm_type=norm_type))
        close(jw, tw)
    pre = R.normal(size=(4, 2))
    jm = nn.EmbeddingBag.from_pretrained(t(pre), mode="sum", padding_idx=1)
    tm = torch.nn.EmbeddingBag.from_pretrained(tt(pre), mode="sum", padding_idx=1)
    assert repr(jm) == repr(tm) and jm.weight.requires_grad == tm.weight.requires_grad
    close(jm(t(np.array([[0, 1], [3, 2]]))), tm(tt(np.array([[0, 1], [3, 2]]))))


@needs_torch
def test_functionals_against_pytorch():
    x = R.normal(size=(2, 3, 5, 6))
    jx, tx = t(x, requires_grad=True), tt(x, requires_grad=True)
    _grads_match(F.unfold(jx, 2, 1, 1, 2), TF.unfold(tx, 2, 1, 1, 2), [jx], [tx])
    c = R.normal(size=(2, 12, 12))
    jc, tc = t(c, requires_grad=True), tt(c, requires_grad=True)
    _grads_match(F.fold(jc, (5, 6), 2, 1, 0, (1, 2)), TF.fold(tc, (5, 6), 2, 1, 0, (1, 2)), [jc], [tc])
    x1, x2, w = R.normal(size=(4, 3)), R.normal(size=(4, 2)), R.normal(size=(5, 3, 2))
    leaves_j = [t(a, requires_grad=True) for a in (x1, x2, w)]
    leaves_t = [tt(a, requires_grad=True) for a in (x1, x2, w)]
    _grads_match(F.bilinear(*leaves_j), TF.bilinear(*leaves_t), leaves_j, leaves_t)
    y = R.normal(size=(2, 6, 3))
    close(F.native_channel_shuffle(t(y), 2), TF.native_channel_shuffle(tt(y), 2))
    close(F.local_response_norm(t(x), 5, 1e-3, 0.5, 0.5), TF.local_response_norm(tt(x), 5, 1e-3, 0.5, 0.5))
    close(F.lp_pool2d(t(x), -math.inf, 2), TF.lp_pool2d(tt(x), -math.inf, 2))
    close(F.lp_pool2d(t(x), 3, 2), TF.lp_pool2d(tt(x), 3, 2))  # negative sums: NaN alike


@needs_torch
def test_alpha_dropout_against_pytorch():
    """Masks come from different generators; the kept and dropped values follow the same formula."""
    x = R.normal(size=(40, 50))
    for p in (0.2, 0.7):
        torch.manual_seed(0)
        ty = TF.alpha_dropout(tt(x), p, True).numpy()
        janus.manual_seed(0)
        jy = F.alpha_dropout(t(x), p, True).numpy()
        a, shift, dropped = _alpha_consts(p)
        for y in (ty, jy):
            kept = ~np.isclose(y, dropped, rtol=0, atol=1e-12)
            np.testing.assert_allclose(y[kept], a * x[kept] + shift, rtol=1e-12, atol=1e-12)
            assert 0.5 * p < 1 - kept.mean() < 1.5 * p
        close(F.alpha_dropout(t(x), p, False), TF.alpha_dropout(tt(x), p, False))
        close(F.alpha_dropout(t(x), 1.0, True), TF.alpha_dropout(tt(x), 1.0, True))
        xf = R.normal(size=(8, 30, 2, 2))
        torch.manual_seed(1)
        ty = TF.feature_alpha_dropout(tt(xf), p, True).numpy()
        janus.manual_seed(1)
        jy = F.feature_alpha_dropout(t(xf), p, True).numpy()
        for y in (ty, jy):
            kept = ~np.isclose(y, dropped, rtol=0, atol=1e-12)
            assert np.all(kept.all((2, 3)) | ~kept.any((2, 3)))
            np.testing.assert_allclose(y[kept], a * xf[kept] + shift, rtol=1e-12, atol=1e-12)
    for jm, tm in ((nn.AlphaDropout(0.3), torch.nn.AlphaDropout(0.3)),
                   (nn.FeatureAlphaDropout(0.3, True), torch.nn.FeatureAlphaDropout(0.3, True))):
        assert repr(jm) == repr(tm) and list(jm.state_dict()) == list(tm.state_dict()) == []


@needs_torch
def test_lazy_linear_against_pytorch():
    jm, tm = nn.LazyLinear(4), torch.nn.LazyLinear(4)
    assert repr(jm) == repr(tm) and list(jm.state_dict()) == list(tm.state_dict()) == ["weight", "bias"]
    assert jm.in_features == tm.in_features == 0
    x = R.normal(size=(3, 5)).astype(np.float32)
    jm(t(x))
    tm(tt(x))
    assert type(jm).__name__ == type(tm).__name__ == "Linear" and repr(jm) == repr(tm)
    _module_case(jm, tm, [x.astype(np.float64)])
    # a torch LazyLinear loads a janus-initialized state dict and the other way round
    j2, t2 = nn.LazyLinear(3), torch.nn.LazyLinear(3)
    j2.load_state_dict({k: t(v.detach().numpy()) for k, v in torch.nn.Linear(6, 3).state_dict().items()})
    t2.load_state_dict({k: tt(v.numpy()) for k, v in j2.state_dict().items()})
    xs = R.normal(size=(2, 6)).astype(np.float32)
    np.testing.assert_allclose(j2(t(xs)).detach().numpy(), t2(tt(xs)).detach().numpy(), rtol=1e-6, atol=1e-6)


@needs_torch
def test_init_statistics_match_pytorch():
    torch.manual_seed(0)
    tb, jb = torch.nn.Bilinear(16, 8, 200), nn.Bilinear(16, 8, 200)
    for name in ("weight", "bias"):
        a, b = getattr(jb, name).detach().numpy(), getattr(tb, name).detach().numpy()
        assert abs(np.abs(a).max() - np.abs(b).max()) < 0.02 / 4  # the same bound 1/sqrt(in1) = 0.25
        assert np.abs(a).max() <= 0.25 and np.abs(b).max() <= 0.25
        if name == "weight":
            assert abs(a.std() - b.std()) < 0.01
    te, je = torch.nn.EmbeddingBag(500, 64, padding_idx=7), nn.EmbeddingBag(500, 64, padding_idx=7)
    a, b = je.weight.detach().numpy(), te.weight.detach().numpy()
    assert abs(a.std() - b.std()) < 0.02 and abs(a.mean() - b.mean()) < 0.02
    assert not a[7].any() and not b[7].any()
    tl, jl = torch.nn.LazyLinear(200), nn.LazyLinear(200)
    tl(torch.zeros(1, 50))
    jl(janus.zeros(1, 50))
    for name in ("weight", "bias"):
        a, b = getattr(jl, name).detach().numpy(), getattr(tl, name).detach().numpy()
        assert abs(np.abs(a).max() - np.abs(b).max()) < 0.02 and np.abs(a).max() <= 1 / math.sqrt(50)
