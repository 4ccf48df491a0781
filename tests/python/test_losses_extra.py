"""The margin, embedding and likelihood losses of janus.nn (margin ranking,
hinge embedding, soft margin, multilabel soft margin, cosine embedding,
triplet margin with and without a distance function, Poisson and Gaussian
NLL, multi margin, multilabel margin): every reduction against numpy
re-implementations in float64 and float32, gradients against central
differences, values and gradients against PyTorch where it imports, the
modules against the functions, the deprecated size_average/reduce pair,
autocast's float32 casts, and the shape/argument errors with PyTorch's
messages."""
import inspect
import math

import numpy as np
import pytest

import janus
import janus.nn as nn
import janus.nn.functional as F
from gradnum import check_grad


def _load_torch():
    if janus._C._setting_value("JANUS_SANITIZED"):
        return None  # PyTorch's own libraries are not built for AddressSanitizer
    try:
        import torch
    except ImportError:  # torch is optional
        return None
    return torch


torch = _load_torch()
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed (or this is a sanitizer build)")

REDUCTIONS = ("none", "mean", "sum")


def t(a, **kw):
    return janus.tensor(np.ascontiguousarray(a).reshape(np.shape(a)), **kw)  # 0-dim stays 0-dim


def red(loss, reduction):
    return {"none": loss, "mean": np.mean(loss), "sum": np.sum(loss)}[reduction]


def close(got, want, rtol, atol, msg=""):
    got = got.detach().numpy() if hasattr(got, "detach") else np.asarray(got)
    assert got.shape == np.shape(want), f"{msg}: shape {got.shape}, expected {np.shape(want)}"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=msg)


# ------------------------------------------------------- numpy references
def softplus(z):
    return np.log1p(np.exp(-np.abs(z))) + np.maximum(z, 0)


def margin_ranking_ref(x1, x2, y, margin):
    return np.maximum(0.0, -y * (x1 - x2) + margin)


def hinge_ref(x, y, margin):
    """x where y == 1, max(0, margin - x) where y == -1, both summed for any other y (ATen's rule)."""
    x, y = np.broadcast_arrays(x, y)
    hinge = np.maximum(0.0, margin - x)
    return np.where(y == 1, x, np.where(y == -1, hinge, x + hinge))


def soft_margin_ref(x, y):
    return np.log1p(np.exp(-y * x))


def multilabel_soft_margin_ref(x, y, w=None):
    sig = 1.0 / (1.0 + np.exp(-x))
    loss = -(y * np.log(sig) + (1 - y) * np.log(1 - sig))
    if w is not None:
        loss = loss * w
    return loss.mean(-1)


def cosine_embedding_ref(x1, x2, y, margin):
    cos = cos_np(x1, x2)
    return np.where(y == 1, 1 - cos, np.where(y == -1, np.maximum(0.0, cos - margin), 0.0))


def pdist_ref(u, v, p, eps=1e-6):
    return (np.abs(u - v + eps) ** p).sum(-1) ** (1.0 / p)


def triplet_ref(a, p, n, margin, pn=2.0, eps=1e-6, swap=False, dist=None):
    dist = dist or (lambda u, v: pdist_ref(u, v, pn, eps))
    d_neg = dist(a, n)
    if swap:
        d_neg = np.minimum(d_neg, dist(p, n))
    return np.maximum(0.0, margin + dist(a, p) - d_neg)


def poisson_ref(x, y, log_input=True, full=False, eps=1e-8):
    loss = np.exp(x) - y * x if log_input else x - y * np.log(x + eps)
    if full:
        with np.errstate(divide="ignore", invalid="ignore"):
            stirling = y * np.log(y) - y + 0.5 * np.log(2 * np.pi * y)
        loss = loss + np.where(y > 1, stirling, 0.0)
    return loss


def gaussian_ref(x, y, var, full=False, eps=1e-6):
    var = np.asarray(var, dtype=np.float64)
    if var.shape != x.shape and var.shape == x.shape[:-1]:
        var = var[..., None]
    v = np.maximum(var, eps)
    loss = 0.5 * (np.log(v) + (x - y) ** 2 / v)
    return loss + 0.5 * math.log(2 * math.pi) if full else loss


def multi_margin_ref(x, y, p=1, margin=1.0, w=None):
    """ATen's loop: sum over j != y of max(0, margin - x[y] + x[j])^p * w[y], over C."""
    xs, ys = np.reshape(x, (-1, np.shape(x)[-1] if np.ndim(x) else 1)), np.reshape(y, -1)
    out = []
    for row, k in zip(xs, ys):
        s = 0.0
        for j in range(len(row)):
            z = margin - row[k] + row[j]
            if j != k and z > 0:
                s += (z if p == 1 else z * z) * (1.0 if w is None else w[k])
        out.append(s / len(row))
    return np.array(out).reshape(np.shape(y))


def multilabel_margin_ref(x, y):
    """ATen's loop: targets are y's entries before the first -1 (repeats count again)."""
    c = np.shape(x)[-1] if np.ndim(x) else 1
    out = []
    for row, labels in zip(np.reshape(x, (-1, c)), np.reshape(y, (-1, c))):
        listed = []
        for k in labels:
            if k < 0:
                break
            listed.append(int(k))
        s = 0.0
        for j in listed:
            for i in range(c):
                if i not in listed:
                    s += max(0.0, 1.0 - row[j] + row[i])
        out.append(s / c)
    return np.array(out) if np.ndim(x) == 2 else np.array(out[0])


def cos_np(u, v):
    """ATen's cosine_embedding_loss cosine (1e-12 added to each squared magnitude)."""
    return (u * v).sum(-1) / np.sqrt(((u * u).sum(-1) + 1e-12) * ((v * v).sum(-1) + 1e-12))


def cos_dist(u, v):
    """1 - cosine_similarity(u, v) (eps 1e-8 on the product of the squared magnitudes)."""
    return 1.0 - (u * v).sum(-1) / np.sqrt(np.maximum((u * u).sum(-1) * (v * v).sum(-1), 1e-16))


# ------------------------------------------------------------------ cases
def away(make, kinks, seed):
    """make(rng) -> (floats, longs) drawn until every kink of the loss is at least 0.02 away
    (finite differences straddle no corner)."""
    rng = np.random.default_rng(seed)
    for _ in range(10000):
        floats, longs = make(rng)
        k = kinks(floats, longs)
        if k is None or np.min(np.abs(k)) > 0.02:
            return [np.asarray(a, dtype=np.float64) for a in floats], [np.asarray(a, dtype=np.int64) for a in longs]
    raise AssertionError("no sample clear of the kinks")


def pm1(rng, shape):
    return rng.choice([-1.0, 1.0], size=shape)


def near_positive(rng, shape):
    """Triplets whose first rows have the negative near the positive, so that swap changes their loss."""
    a, p = rng.normal(size=shape), rng.normal(size=shape)
    n = rng.normal(size=shape)
    n[:3] = p[:3] + 0.3 * rng.normal(size=(3,) + shape[1:])
    return [a, p, n], []


def _multi_margin_kinks(f, l, margin=1.0):
    x, y = f[0], l[0]
    z = margin - np.take_along_axis(x, y[:, None], 1) + x
    return z[np.arange(x.shape[1])[None, :] != y[:, None]]


ML_TARGET = np.array([[3, 0, -1, 1], [1, -1, -1, -1], [-1, 2, 0, 0], [0, 1, 2, 3], [2, 2, -1, 0]])


def _multilabel_kinks(f, l):
    x = f[0].reshape(-1, f[0].shape[-1])
    return (1.0 - x[:, :, None] + x[:, None, :]).reshape(-1)


class Case:
    def __init__(self, name, data, call, ref, module, wrt, torch_wrt=None):
        self.name, (self.floats, self.longs) = name, data
        self.call, self.ref, self.module = call, ref, module
        self.wrt = wrt
        self.torch_wrt = wrt if torch_wrt is None else torch_wrt


CASES = [
    Case("margin_ranking",
         away(lambda r: ([r.normal(size=(5, 4)), r.normal(size=(5, 4)), pm1(r, (5, 4))], []),
              lambda f, l: -f[2] * (f[0] - f[1]) + 0.3, 1),
         lambda F, f, l, r: F.margin_ranking_loss(f[0], f[1], f[2], margin=0.3, reduction=r),
         lambda f, l, r: red(margin_ranking_ref(*f, 0.3), r),
         lambda nn, f, l, r: nn.MarginRankingLoss(margin=0.3, reduction=r)(f[0], f[1], f[2]),
         wrt=(0, 1, 2)),
    Case("margin_ranking_broadcast",
         away(lambda r: ([r.normal(size=(5, 1)), r.normal(size=(1, 4)), r.normal(size=(5, 4))], []),
              lambda f, l: -f[2] * (f[0] - f[1]), 2),
         lambda F, f, l, r: F.margin_ranking_loss(f[0], f[1], f[2], reduction=r),
         lambda f, l, r: red(margin_ranking_ref(*f, 0.0), r),
         lambda nn, f, l, r: nn.MarginRankingLoss(reduction=r)(f[0], f[1], f[2]),
         wrt=(0, 1, 2)),
    Case("hinge_embedding",
         away(lambda r: ([r.uniform(-2, 3, (5, 4)), pm1(r, (5, 4))], []), lambda f, l: 1.0 - f[0], 3),
         lambda F, f, l, r: F.hinge_embedding_loss(f[0], f[1], reduction=r),
         lambda f, l, r: red(hinge_ref(f[0], f[1], 1.0), r),
         lambda nn, f, l, r: nn.HingeEmbeddingLoss(reduction=r)(f[0], f[1]),
         wrt=(0,)),
    Case("hinge_embedding_other_targets",  # targets 0 and 2 take both terms; target broadcasts
         away(lambda r: ([r.uniform(-2, 3, (5, 4)), np.array([1.0, -1.0, 0.0, 2.0])], []),
              lambda f, l: 0.5 - f[0], 4),
         lambda F, f, l, r: F.hinge_embedding_loss(f[0], f[1], margin=0.5, reduction=r),
         lambda f, l, r: red(hinge_ref(f[0], f[1], 0.5), r),
         lambda nn, f, l, r: nn.HingeEmbeddingLoss(0.5, reduction=r)(f[0], f[1]),
         wrt=(0,)),
    Case("soft_margin",
         away(lambda r: ([r.normal(size=(5, 4)) * 2, r.uniform(-1.5, 1.5, (5, 4))], []), lambda f, l: None, 5),
         lambda F, f, l, r: F.soft_margin_loss(f[0], f[1], reduction=r),
         lambda f, l, r: red(soft_margin_ref(*f), r),
         lambda nn, f, l, r: nn.SoftMarginLoss(reduction=r)(f[0], f[1]),
         wrt=(0, 1), torch_wrt=(0,)),  # PyTorch does not differentiate the target; janus does
    Case("multilabel_soft_margin",
         away(lambda r: ([r.normal(size=(5, 4)) * 2, r.uniform(0, 1, (5, 4))], []), lambda f, l: None, 6),
         lambda F, f, l, r: F.multilabel_soft_margin_loss(f[0], f[1], reduction=r),
         lambda f, l, r: red(multilabel_soft_margin_ref(*f), r),
         lambda nn, f, l, r: nn.MultiLabelSoftMarginLoss(reduction=r)(f[0], f[1]),
         wrt=(0, 1)),
    Case("multilabel_soft_margin_weight_3d",
         away(lambda r: ([r.normal(size=(2, 3, 4)) * 2, (r.uniform(0, 1, (2, 3, 4)) > 0.5) * 1.0,
                          r.uniform(0.2, 2, (4,))], []), lambda f, l: None, 7),
         lambda F, f, l, r: F.multilabel_soft_margin_loss(f[0], f[1], weight=f[2], reduction=r),
         lambda f, l, r: red(multilabel_soft_margin_ref(*f), r),
         lambda nn, f, l, r: nn.MultiLabelSoftMarginLoss(weight=f[2], reduction=r)(f[0], f[1]),
         wrt=(0, 1, 2)),
    Case("cosine_embedding",
         away(lambda r: ([r.normal(size=(6, 4)), r.normal(size=(6, 4)), np.array([1.0, -1, 1, -1, -1, 0])], []),
              lambda f, l: cos_np(f[0], f[1]) - 0.2, 8),
         lambda F, f, l, r: F.cosine_embedding_loss(f[0], f[1], f[2], margin=0.2, reduction=r),
         lambda f, l, r: red(cosine_embedding_ref(*f, 0.2), r),
         lambda nn, f, l, r: nn.CosineEmbeddingLoss(margin=0.2, reduction=r)(f[0], f[1], f[2]),
         wrt=(0, 1)),
    Case("cosine_embedding_unbatched",
         away(lambda r: ([r.normal(size=(5,)), r.normal(size=(5,)), np.array(-1.0)], []),
              lambda f, l: np.maximum(cos_np(f[0], f[1]) + 0.3, 0.0), 9),  # clear of the kink, on its loss side
         lambda F, f, l, r: F.cosine_embedding_loss(f[0], f[1], f[2], margin=-0.3, reduction=r),
         lambda f, l, r: red(cosine_embedding_ref(*f, -0.3), r),
         lambda nn, f, l, r: nn.CosineEmbeddingLoss(margin=-0.3, reduction=r)(f[0], f[1], f[2]),
         wrt=(0, 1)),
    Case("triplet_margin",
         away(lambda r: ([r.normal(size=(5, 4)), r.normal(size=(5, 4)), r.normal(size=(5, 4))], []),
              lambda f, l: 1.0 + pdist_ref(f[0], f[1], 2) - pdist_ref(f[0], f[2], 2), 10),
         lambda F, f, l, r: F.triplet_margin_loss(f[0], f[1], f[2], reduction=r),
         lambda f, l, r: red(triplet_ref(*f, 1.0), r),
         lambda nn, f, l, r: nn.TripletMarginLoss(reduction=r)(f[0], f[1], f[2]),
         wrt=(0, 1, 2)),
    Case("triplet_margin_p1_swap",
         away(lambda r: near_positive(r, (5, 4)),
              lambda f, l: np.concatenate([0.5 + pdist_ref(f[0], f[1], 1) - np.minimum(pdist_ref(f[0], f[2], 1),
                                                                                       pdist_ref(f[1], f[2], 1)),
                                           pdist_ref(f[0], f[2], 1) - pdist_ref(f[1], f[2], 1),
                                           (f[0] - f[1]).ravel(), (f[0] - f[2]).ravel(), (f[1] - f[2]).ravel()]),
              11),
         lambda F, f, l, r: F.triplet_margin_loss(f[0], f[1], f[2], margin=0.5, p=1, swap=True, reduction=r),
         lambda f, l, r: red(triplet_ref(*f, 0.5, pn=1, swap=True), r),
         lambda nn, f, l, r: nn.TripletMarginLoss(margin=0.5, p=1, swap=True, reduction=r)(f[0], f[1], f[2]),
         wrt=(0, 1, 2)),
    Case("triplet_margin_p3_broadcast",
         away(lambda r: ([r.normal(size=(5, 4)), r.normal(size=(1, 4)), r.normal(size=(5, 4))], []),
              lambda f, l: 2.0 + pdist_ref(f[0], f[1], 3, 1e-3) - pdist_ref(f[0], f[2], 3, 1e-3), 12),
         lambda F, f, l, r: F.triplet_margin_loss(f[0], f[1], f[2], margin=2.0, p=3, eps=1e-3, reduction=r),
         lambda f, l, r: red(triplet_ref(*f, 2.0, pn=3, eps=1e-3), r),
         lambda nn, f, l, r: nn.TripletMarginLoss(2.0, 3, 1e-3, reduction=r)(f[0], f[1], f[2]),
         wrt=(0, 1, 2)),
    Case("triplet_with_distance",
         away(lambda r: ([r.normal(size=(5, 4)), r.normal(size=(5, 4)), r.normal(size=(5, 4))], []),
              lambda f, l: 1.0 + pdist_ref(f[0], f[1], 2) - pdist_ref(f[0], f[2], 2), 13),
         lambda F, f, l, r: F.triplet_margin_with_distance_loss(f[0], f[1], f[2], reduction=r),
         lambda f, l, r: red(triplet_ref(*f, 1.0), r),
         lambda nn, f, l, r: nn.TripletMarginWithDistanceLoss(reduction=r)(f[0], f[1], f[2]),
         wrt=(0, 1, 2)),
    Case("triplet_with_cosine_distance_swap",
         away(lambda r: near_positive(r, (5, 4)),
              lambda f, l: np.concatenate([
                  0.4 + cos_dist(f[0], f[1]) - np.minimum(cos_dist(f[0], f[2]), cos_dist(f[1], f[2])),
                  cos_dist(f[0], f[2]) - cos_dist(f[1], f[2])]), 14),
         lambda F, f, l, r: F.triplet_margin_with_distance_loss(
             f[0], f[1], f[2], distance_function=lambda u, v: 1.0 - F.cosine_similarity(u, v), margin=0.4,
             swap=True, reduction=r),
         lambda f, l, r: red(triplet_ref(*f, 0.4, swap=True, dist=cos_dist), r),
         lambda nn, f, l, r: nn.TripletMarginWithDistanceLoss(
             distance_function=lambda u, v: 1.0 - nn.functional.cosine_similarity(u, v), margin=0.4, swap=True,
             reduction=r)(f[0], f[1], f[2]),
         wrt=(0, 1, 2)),
    Case("poisson_nll",
         away(lambda r: ([r.normal(size=(5, 4)), r.uniform(0, 4, (5, 4))], []), lambda f, l: None, 15),
         lambda F, f, l, r: F.poisson_nll_loss(f[0], f[1], reduction=r),
         lambda f, l, r: red(poisson_ref(*f), r),
         lambda nn, f, l, r: nn.PoissonNLLLoss(reduction=r)(f[0], f[1]),
         wrt=(0, 1)),
    Case("poisson_nll_full",
         away(lambda r: ([r.normal(size=(5, 4)), r.uniform(0, 4, (5, 4))], []), lambda f, l: f[1] - 1.0, 16),
         lambda F, f, l, r: F.poisson_nll_loss(f[0], f[1], full=True, reduction=r),
         lambda f, l, r: red(poisson_ref(*f, full=True), r),
         lambda nn, f, l, r: nn.PoissonNLLLoss(full=True, reduction=r)(f[0], f[1]),
         wrt=(0, 1)),
    Case("poisson_nll_rate_full",
         away(lambda r: ([r.uniform(0.1, 3, (5, 4)), r.uniform(0, 4, (5, 4))], []), lambda f, l: f[1] - 1.0, 17),
         lambda F, f, l, r: F.poisson_nll_loss(f[0], f[1], log_input=False, full=True, eps=1e-3, reduction=r),
         lambda f, l, r: red(poisson_ref(*f, log_input=False, full=True, eps=1e-3), r),
         lambda nn, f, l, r: nn.PoissonNLLLoss(False, True, eps=1e-3, reduction=r)(f[0], f[1]),
         wrt=(0, 1)),
    Case("gaussian_nll",
         away(lambda r: ([r.normal(size=(5, 4)), r.normal(size=(5, 4)), r.uniform(0.2, 2, (5, 4))], []),
              lambda f, l: None, 18),
         lambda F, f, l, r: F.gaussian_nll_loss(f[0], f[1], f[2], reduction=r),
         lambda f, l, r: red(gaussian_ref(*f), r),
         lambda nn, f, l, r: nn.GaussianNLLLoss(reduction=r)(f[0], f[1], f[2]),
         wrt=(0, 1, 2)),
    Case("gaussian_nll_full_var_per_sample",  # var one dim short: unsqueezed
         away(lambda r: ([r.normal(size=(5, 4)), r.normal(size=(5, 4)), r.uniform(0.2, 2, (5,))], []),
              lambda f, l: None, 19),
         lambda F, f, l, r: F.gaussian_nll_loss(f[0], f[1], f[2], full=True, eps=1e-3, reduction=r),
         lambda f, l, r: red(gaussian_ref(*f, full=True, eps=1e-3), r),
         lambda nn, f, l, r: nn.GaussianNLLLoss(full=True, eps=1e-3, reduction=r)(f[0], f[1], f[2]),
         wrt=(0, 1, 2)),
    Case("gaussian_nll_var_one_dim_broadcast",
         away(lambda r: ([r.normal(size=(2, 3, 4)), r.normal(size=(2, 3, 4)), r.uniform(0.2, 2, (2, 1, 4))], []),
              lambda f, l: None, 20),
         lambda F, f, l, r: F.gaussian_nll_loss(f[0], f[1], f[2], reduction=r),
         lambda f, l, r: red(gaussian_ref(*f), r),
         lambda nn, f, l, r: nn.GaussianNLLLoss(reduction=r)(f[0], f[1], f[2]),
         wrt=(0, 1, 2)),
    Case("gaussian_nll_float_var",
         away(lambda r: ([r.normal(size=(5, 4)), r.normal(size=(5, 4))], []), lambda f, l: None, 21),
         lambda F, f, l, r: F.gaussian_nll_loss(f[0], f[1], 0.7, reduction=r),
         lambda f, l, r: red(gaussian_ref(f[0], f[1], np.full((5, 4), 0.7)), r),
         lambda nn, f, l, r: nn.GaussianNLLLoss(reduction=r)(f[0], f[1], 0.7),
         wrt=(0, 1)),
    Case("multi_margin",
         away(lambda r: ([r.normal(size=(6, 4))], [r.integers(0, 4, 6)]), _multi_margin_kinks, 22),
         lambda F, f, l, r: F.multi_margin_loss(f[0], l[0], reduction=r),
         lambda f, l, r: red(multi_margin_ref(f[0], l[0]), r),
         lambda nn, f, l, r: nn.MultiMarginLoss(reduction=r)(f[0], l[0]),
         wrt=(0,)),
    Case("multi_margin_p2_weight",  # PyTorch does not differentiate weight; janus does
         away(lambda r: ([r.normal(size=(6, 4)), r.uniform(0.2, 2, (4,))], [r.integers(0, 4, 6)]),
              lambda f, l: _multi_margin_kinks(f, l, 0.7), 23),
         lambda F, f, l, r: F.multi_margin_loss(f[0], l[0], p=2, margin=0.7, weight=f[1], reduction=r),
         lambda f, l, r: red(multi_margin_ref(f[0], l[0], 2, 0.7, f[1]), r),
         lambda nn, f, l, r: nn.MultiMarginLoss(2, 0.7, f[1], reduction=r)(f[0], l[0]),
         wrt=(0, 1), torch_wrt=(0,)),
    Case("multi_margin_unbatched",  # input (C) with a target of one element: loss of shape (1)
         away(lambda r: ([r.normal(size=(5,))], [r.integers(0, 5, (1,))]),
              lambda f, l: _multi_margin_kinks([f[0][None]], l), 24),
         lambda F, f, l, r: F.multi_margin_loss(f[0], l[0], reduction=r),
         lambda f, l, r: red(multi_margin_ref(f[0], l[0]), r),
         lambda nn, f, l, r: nn.MultiMarginLoss(reduction=r)(f[0], l[0]),
         wrt=(0,)),
    Case("multi_margin_scalar_target",  # a 0-dim target: a 0-dim loss
         away(lambda r: ([r.normal(size=(1, 5))], [np.array(r.integers(0, 5))]),
              lambda f, l: _multi_margin_kinks(f, [l[0].reshape(1)]), 25),
         lambda F, f, l, r: F.multi_margin_loss(f[0], l[0], reduction=r),
         lambda f, l, r: red(multi_margin_ref(f[0], l[0]), r),
         lambda nn, f, l, r: nn.MultiMarginLoss(reduction=r)(f[0], l[0]),
         wrt=(0,)),
    Case("multilabel_margin",
         away(lambda r: ([r.normal(size=(5, 4))], [ML_TARGET]), _multilabel_kinks, 26),
         lambda F, f, l, r: F.multilabel_margin_loss(f[0], l[0], reduction=r),
         lambda f, l, r: red(multilabel_margin_ref(f[0], l[0]), r),
         lambda nn, f, l, r: nn.MultiLabelMarginLoss(reduction=r)(f[0], l[0]),
         wrt=(0,)),
    Case("multilabel_margin_unbatched",  # input (C): a 0-dim loss even for 'none'
         away(lambda r: ([r.normal(size=(5,))], [np.array([4, 1, -1, 0, 3])]), _multilabel_kinks, 27),
         lambda F, f, l, r: F.multilabel_margin_loss(f[0], l[0], reduction=r),
         lambda f, l, r: red(multilabel_margin_ref(f[0], l[0]), r),
         lambda nn, f, l, r: nn.MultiLabelMarginLoss(reduction=r)(f[0], l[0]),
         wrt=(0,)),
]


IDS = [c.name for c in CASES]


def run_janus(case, reduction, dtype=np.float64, requires_grad=False):
    fs = [t(a.astype(dtype), requires_grad=requires_grad) for a in case.floats]
    return case.call(F, fs, [t(a) for a in case.longs], reduction), fs


# ------------------------------------------------------------ numpy values
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_values_against_numpy_float64(case, reduction):
    got, _ = run_janus(case, reduction)
    assert got.dtype == janus.float64
    close(got, case.ref(case.floats, case.longs, reduction), 1e-12, 1e-12, case.name)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_values_against_numpy_float32(case, reduction):
    got, _ = run_janus(case, reduction, np.float32)
    assert got.dtype == janus.float32
    rounded = [a.astype(np.float32).astype(np.float64) for a in case.floats]
    close(got, case.ref(rounded, case.longs, reduction), 1e-5, 1e-6, case.name)


def test_the_references_are_not_trivial():
    """Every case has a nonzero loss and, with 'none', elements that differ (so a constant
    or a wrong reduction could not pass)."""
    for c in CASES:
        loss = np.asarray(c.ref(c.floats, c.longs, "none"))
        assert np.sum(np.abs(loss)) > 0.1, c.name
        if loss.size > 1:
            assert np.ptp(loss) > 1e-3, c.name
    for c in CASES:  # swap matters
        if "swap" in c.name:
            dist = cos_dist if "cosine" in c.name else (lambda u, v: pdist_ref(u, v, 1))
            no_swap = triplet_ref(*c.floats, 0.4 if "cosine" in c.name else 0.5, dist=dist)
            assert np.sum(np.abs(c.ref(c.floats, c.longs, "none") - no_swap)) > 0.1, c.name


# --------------------------------------------------------------- gradients
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradients_against_finite_differences(case, reduction):
    longs = [t(a) for a in case.longs]
    check_grad(lambda *fs: case.call(F, list(fs), longs, reduction), case.floats, wrt=case.wrt, rtol=1e-6,
               atol=1e-8)


# ------------------------------------------------------------------ modules
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_module_equals_function(case, reduction):
    fs, ls = [t(a) for a in case.floats], [t(a) for a in case.longs]
    np.testing.assert_array_equal(case.module(nn, fs, ls, reduction).numpy(),
                                  case.call(F, fs, ls, reduction).numpy())


# ------------------------------------------------------------------ PyTorch
@needs_torch
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_values_and_gradients_against_pytorch(case, reduction, dtype):
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == np.float64 else dict(rtol=2e-5, atol=2e-6)
    got, jf = run_janus(case, reduction, dtype, requires_grad=True)
    tf = [torch.tensor(a.astype(dtype), requires_grad=i in case.torch_wrt) for i, a in enumerate(case.floats)]
    want = case.call(torch.nn.functional, tf, [torch.tensor(a) for a in case.longs], reduction)
    close(got, want.detach().numpy(), msg=case.name, **tol)
    close(case.module(nn, jf, [t(a) for a in case.longs], reduction),
          case.module(torch.nn, tf, [torch.tensor(a) for a in case.longs], reduction).detach().numpy(),
          msg=case.name + " (module)", **tol)
    v = np.random.default_rng(0).uniform(-1, 1, size=want.shape).astype(dtype)
    (got * t(v)).sum().backward()
    (want * torch.tensor(v)).sum().backward()
    for i in case.torch_wrt:
        close(jf[i].grad, tf[i].grad.numpy(), msg=f"{case.name}: d loss / d input {i}", **tol)


@needs_torch
def test_signatures_match_pytorch():
    names = ["margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss", "multilabel_soft_margin_loss",
             "cosine_embedding_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss",
             "poisson_nll_loss", "gaussian_nll_loss", "multi_margin_loss", "multilabel_margin_loss"]
    modules = ["MarginRankingLoss", "HingeEmbeddingLoss", "SoftMarginLoss", "MultiLabelSoftMarginLoss",
               "CosineEmbeddingLoss", "TripletMarginLoss", "TripletMarginWithDistanceLoss", "PoissonNLLLoss",
               "GaussianNLLLoss", "MultiMarginLoss", "MultiLabelMarginLoss"]

    def shape(fn):
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]

    for n in names:
        assert shape(getattr(F, n)) == shape(getattr(torch.nn.functional, n)), n
    for n in modules:
        assert shape(getattr(nn, n).__init__) == shape(getattr(torch.nn, n).__init__), n
        assert shape(getattr(nn, n).forward) == shape(getattr(torch.nn, n).forward), n


@needs_torch
def test_buffers_and_submodules_match_pytorch():
    w = np.array([1.0, 2.0, 0.5])
    for make in (lambda m, T: m.MultiMarginLoss(weight=T(w)), lambda m, T: m.MultiLabelSoftMarginLoss(weight=T(w)),
                 lambda m, T: m.TripletMarginWithDistanceLoss()):
        j, p = make(nn, t), make(torch.nn, torch.tensor)
        assert list(j.state_dict()) == list(p.state_dict())
        assert [n for n, _ in j.named_children()] == [n for n, _ in p.named_children()]
    assert type(nn.TripletMarginWithDistanceLoss().distance_function).__name__ == "PairwiseDistance"


@needs_torch
def test_edge_values_against_pytorch():
    """Poisson's Stirling term at targets 0 and 1, Gaussian variances under eps (clamped in value,
    the gradient of the unclamped var), cosine with an integer target and a zero vector."""
    x, y = np.array([0.5, 0.2, 0.1, -0.3]), np.array([0.0, 3.0, 1.0, 1.0 + 1e-9])
    got = F.poisson_nll_loss(t(x), t(y), full=True, reduction="none")
    want = torch.nn.functional.poisson_nll_loss(torch.tensor(x), torch.tensor(y), full=True, reduction="none")
    close(got, want.numpy(), 1e-12, 1e-12)

    v = np.array([1e-9, 0.0, 0.5, 3e-7])
    jv, tv = t(v, requires_grad=True), torch.tensor(v, requires_grad=True)
    a, b = np.array([1.0, 2.0, -1.0, 0.1]), np.zeros(4)
    F.gaussian_nll_loss(t(a), t(b), jv, reduction="sum").backward()
    torch.nn.functional.gaussian_nll_loss(torch.tensor(a), torch.tensor(b), tv, reduction="sum").backward()
    close(jv.grad, tv.grad.numpy(), 1e-12, 0)
    c = np.maximum(v, 1e-6)
    close(jv.grad, 0.5 * (1 / c - a ** 2 / c ** 2), 1e-12, 0)  # the clamped value's gradient, passed straight

    x1, x2 = np.array([[0.0, 0.0], [1.0, 2.0], [3.0, -1.0]]), np.array([[1.0, 1.0], [2.0, 0.5], [1.0, 1.0]])
    lab = np.array([1, -1, 0])
    close(F.cosine_embedding_loss(t(x1), t(x2), t(lab), reduction="none"),
          torch.nn.functional.cosine_embedding_loss(torch.tensor(x1), torch.tensor(x2), torch.tensor(lab),
                                                    reduction="none").numpy(), 1e-12, 1e-12)


# ------------------------------------------------------------- behaviours
def test_poisson_full_gradient_is_finite_at_target_zero():
    """PyTorch's gradient with respect to a target of 0 is NaN (0 * log 0 in the masked Stirling
    term); janus gives the masked term no gradient: d/dt = -x there."""
    x, y = t(np.array([0.5, 0.2]), requires_grad=True), t(np.array([0.0, 3.0]), requires_grad=True)
    F.poisson_nll_loss(x, y, full=True, reduction="sum").backward()
    g = y.grad.numpy()
    assert np.isfinite(g).all() and g[0] == -0.5
    np.testing.assert_allclose(g[1], -0.2 + np.log(3.0) + 0.5 / 3.0, rtol=1e-12)


def test_soft_margin_is_stable_for_large_margins():
    x = t(np.array([-1000.0, 1000.0, -50.0]), requires_grad=True)
    loss = F.soft_margin_loss(x, t(np.array([1.0, 1.0, -1.0])), reduction="none")
    np.testing.assert_allclose(loss.detach().numpy(), [1000.0, 0.0, 0.0], atol=1e-20)
    loss.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [-1.0, 0.0, 0.0], atol=1e-20)


def test_gaussian_nll_var_broadcast_rules():
    x, y = janus.randn(4, 3, dtype=janus.float64), janus.randn(4, 3, dtype=janus.float64)
    full = F.gaussian_nll_loss(x, y, janus.full((4, 3), 0.5, dtype=janus.float64), reduction="none")
    for var in (janus.full((4,), 0.5, dtype=janus.float64), janus.full((4, 1), 0.5, dtype=janus.float64),
                janus.full((1, 3), 0.5, dtype=janus.float64), 0.5, 1 / 2):
        np.testing.assert_array_equal(F.gaussian_nll_loss(x, y, var, reduction="none").numpy(), full.numpy())
    np.testing.assert_array_equal(F.gaussian_nll_loss(x, y, 0.0, eps=0.5).numpy(),
                                  F.gaussian_nll_loss(x, y, 0.5).numpy())


def test_multilabel_margin_reads_targets_up_to_the_first_minus_one():
    x = t(np.array([[0.1, 0.2, 0.4, 0.8]]))
    a = F.multilabel_margin_loss(x, t(np.array([[3, 0, -1, 1]]))).item()
    b = F.multilabel_margin_loss(x, t(np.array([[3, 0, -1, 2]]))).item()
    c = F.multilabel_margin_loss(x, t(np.array([[3, 0, 1, -1]]))).item()
    assert a == b != c
    # targets 3 and 0 against non-targets 1 and 2: (0.4 + 0.6) + (1.1 + 1.3), over 4 classes
    np.testing.assert_allclose(a, 3.4 / 4, rtol=1e-6)
    assert F.multilabel_margin_loss(x, t(np.array([[-1, 0, 1, 2]]))).item() == 0.0


def test_legacy_size_average_and_reduce():
    rng = np.random.default_rng(40)
    a, b, s = t(rng.normal(size=(4, 3))), t(rng.normal(size=(4, 3))), t(pm1(rng, (4, 3)))
    lab, ml = t(np.array([0, 2, 1, 2])), t(np.array([[1, -1, 0], [2, 0, -1], [0, 1, 2], [-1, 0, 0]]))
    calls = {
        "margin_ranking_loss": lambda **k: F.margin_ranking_loss(a, b, s, **k),
        "hinge_embedding_loss": lambda **k: F.hinge_embedding_loss(a, s, **k),
        "soft_margin_loss": lambda **k: F.soft_margin_loss(a, s, **k),
        "multilabel_soft_margin_loss": lambda **k: F.multilabel_soft_margin_loss(a, b.sigmoid(), **k),
        "cosine_embedding_loss": lambda **k: F.cosine_embedding_loss(a, b, s[:, 0], **k),
        "triplet_margin_loss": lambda **k: F.triplet_margin_loss(a, b, a.flip(0), **k),
        "poisson_nll_loss": lambda **k: F.poisson_nll_loss(a, b.abs(), **k),
        "multi_margin_loss": lambda **k: F.multi_margin_loss(a, lab, **k),
        "multilabel_margin_loss": lambda **k: F.multilabel_margin_loss(a, ml, **k),
    }
    for name, call in calls.items():
        for legacy, reduction in (({"size_average": False}, "sum"), ({"reduce": False}, "none"),
                                  ({"size_average": True, "reduce": True}, "mean"),
                                  ({"size_average": False, "reduce": False}, "none")):
            np.testing.assert_array_equal(call(reduction="sum" if reduction != "sum" else "mean", **legacy).numpy(),
                                          call(reduction=reduction).numpy(), err_msg=f"{name} {legacy}")
    for cls in (nn.MarginRankingLoss, nn.HingeEmbeddingLoss, nn.SoftMarginLoss, nn.MultiLabelSoftMarginLoss,
                nn.CosineEmbeddingLoss, nn.TripletMarginLoss, nn.PoissonNLLLoss, nn.MultiMarginLoss,
                nn.MultiLabelMarginLoss):
        assert cls(size_average=False).reduction == "sum", cls.__name__
        assert cls(reduce=False, reduction="sum").reduction == "none", cls.__name__
        assert cls(reduction="sum").reduction == "sum", cls.__name__
        assert cls().reduction == "mean", cls.__name__


def test_autocast_runs_pytorchs_single_op_losses_in_float32():
    """PyTorch's cpu autocast casts the losses it runs as one op to float32; the three it composes
    in Python (multilabel soft margin, triplet with distance, Gaussian NLL) stay in bfloat16."""
    low = janus.bfloat16
    a, b = janus.randn(4, 5).to(low), janus.randn(4, 5).to(low)
    s, lab = janus.ones(4, 5).to(low), janus.tensor([0, 1, 2, 3])
    with janus.autocast("cpu", dtype=low):
        for f in (lambda: F.margin_ranking_loss(a, b, s), lambda: F.hinge_embedding_loss(a, s),
                  lambda: F.soft_margin_loss(a, s), lambda: F.cosine_embedding_loss(a, b, s[:, 0]),
                  lambda: F.triplet_margin_loss(a, b, a), lambda: F.poisson_nll_loss(a, b),
                  lambda: F.multi_margin_loss(a, lab), lambda: F.multilabel_margin_loss(a, lab.new_zeros(4, 5)),
                  lambda: nn.MultiMarginLoss()(a, lab)):
            assert f().dtype == janus.float32
        for f in (lambda: F.multilabel_soft_margin_loss(a, s), lambda: F.triplet_margin_with_distance_loss(a, b, a),
                  lambda: F.gaussian_nll_loss(a, b, s)):
            assert f().dtype == low
    assert F.margin_ranking_loss(a, b, s).dtype == low


def test_exported_like_the_other_losses():
    import janus.nn.modules as modules
    import janus.nn.modules.loss as loss
    for n in ("MarginRankingLoss", "HingeEmbeddingLoss", "SoftMarginLoss", "MultiLabelSoftMarginLoss",
              "CosineEmbeddingLoss", "TripletMarginLoss", "TripletMarginWithDistanceLoss", "PoissonNLLLoss",
              "GaussianNLLLoss", "MultiMarginLoss", "MultiLabelMarginLoss"):
        assert getattr(nn, n) is getattr(modules, n) is getattr(loss, n), n
        assert n in modules.__all__, n
        assert issubclass(getattr(nn, n), nn.Module)
    if torch is not None:
        ours = {n for n in dir(nn) if n.endswith("Loss")}
        theirs = {n for n in dir(torch.nn) if n.endswith("Loss") and not n.startswith("_")}
        assert theirs - ours <= {"AdaptiveLogSoftmaxWithLoss", "LinearCrossEntropyLoss"}, \
            sorted(theirs - ours)


# ------------------------------------------------------------------ errors
ERRORS = [
    ("margin_ranking_dims", lambda F, T: F.margin_ranking_loss(T.randn(4), T.randn(4), T.ones(4, 1)), RuntimeError,
     r"^margin_ranking_loss : All input tensors should have same dimension but got sizes: "
     r"input1: \w+\.Size\(\[4\]\), input2: \w+\.Size\(\[4\]\), target: \w+\.Size\(\[4, 1\]\) $"),
    ("margin_ranking_shapes", lambda F, T: F.margin_ranking_loss(T.randn(4), T.randn(3), T.ones(4)), RuntimeError,
     r"\(4\).*\(3\)"),
    ("hinge_shapes", lambda F, T: F.hinge_embedding_loss(T.randn(4, 3), T.ones(4)), RuntimeError,
     r"\(4\).*\(3\)|\(3\).*\(4\)"),
    ("soft_margin_shapes", lambda F, T: F.soft_margin_loss(T.randn(4, 3), T.ones(4)), RuntimeError,
     r"\(4\).*\(3\)|\(3\).*\(4\)"),
    ("multilabel_soft_margin_reduction",
     lambda F, T: F.multilabel_soft_margin_loss(T.randn(3, 5), T.ones(3, 5), reduction="avg"), ValueError,
     r"^avg is not valid$"),
    ("multilabel_soft_margin_scalar", lambda F, T: F.multilabel_soft_margin_loss(T.randn(()), T.ones(())),
     IndexError, r"^Dimension specified as -1 but tensor has no dimensions$"),
    ("cosine_target_2d", lambda F, T: F.cosine_embedding_loss(T.randn(4, 5), T.randn(4, 5), T.ones(4, 1)),
     RuntimeError, r"^0D or 1D target tensor expected, multi-target not supported$"),
    ("cosine_1d_target_1d_inputs", lambda F, T: F.cosine_embedding_loss(T.randn(5), T.randn(5), T.ones(4)),
     RuntimeError, r"^1D target tensor expects 2D input tensors, but found inputs with sizes \[5\] and \[5\]\.$"),
    ("cosine_0d_target_2d_inputs",
     lambda F, T: F.cosine_embedding_loss(T.randn(4, 5), T.randn(4, 5), T.tensor(1.0)), RuntimeError,
     r"^0D target tensor expects 1D input tensors, but found inputs with sizes \[4, 5\] and \[4, 5\]\.$"),
    ("cosine_3d", lambda F, T: F.cosine_embedding_loss(T.randn(2, 4, 5), T.randn(2, 4, 5), T.ones(2)),
     RuntimeError, r"^1D target tensor expects 2D input tensors, but found inputs with sizes \[2, 4, 5\]"),
    ("triplet_dims", lambda F, T: F.triplet_margin_loss(T.randn(4, 5), T.randn(4, 5), T.randn(5)), RuntimeError,
     r"^The anchor, positive, and negative tensors are expected to have the same number of dimensions, but got: "
     r"anchor 2D, positive 2D, and negative 1D inputs$"),
    ("triplet_margin", lambda F, T: F.triplet_margin_loss(T.randn(4, 5), T.randn(4, 5), T.randn(4, 5), margin=0),
     ValueError, r"^margin must be greater than 0, got 0$"),
    ("triplet_reduction",
     lambda F, T: F.triplet_margin_loss(T.randn(4, 5), T.randn(4, 5), T.randn(4, 5), reduction="avg"),
     ValueError, r"^avg is not a valid value for reduction$"),
    ("triplet_distance_dims",
     lambda F, T: F.triplet_margin_with_distance_loss(T.randn(4, 5), T.randn(5), T.randn(4, 5)), RuntimeError,
     r"^The anchor, positive, and negative tensors are expected to have the same number of dimensions, but got: "
     r"anchor 2D, positive 1D, and negative 2D inputs$"),
    ("triplet_distance_margin",
     lambda F, T: F.triplet_margin_with_distance_loss(T.randn(4, 5), T.randn(4, 5), T.randn(4, 5), margin=-1.0),
     ValueError, r"^margin must be greater than 0, got -1.0$"),
    ("triplet_distance_reduction",
     lambda F, T: F.triplet_margin_with_distance_loss(T.randn(4, 5), T.randn(4, 5), T.randn(4, 5), reduction="x"),
     ValueError, r"^x is not a valid value for reduction$"),
    ("poisson_reduction", lambda F, T: F.poisson_nll_loss(T.randn(4), T.rand(4), reduction="avg"), ValueError,
     r"^avg is not a valid value for reduction$"),
    ("gaussian_negative_float", lambda F, T: F.gaussian_nll_loss(T.randn(4), T.randn(4), -1.0), ValueError,
     r"^var has negative entry/entries$"),
    ("gaussian_negative_entry", lambda F, T: F.gaussian_nll_loss(T.randn(4), T.randn(4), T.tensor([1., 2, -0.5, 1])),
     ValueError, r"^var has negative entry/entries$"),
    ("gaussian_var_size", lambda F, T: F.gaussian_nll_loss(T.randn(4, 5), T.randn(4, 5), T.ones(3, 5)), ValueError,
     r"^var is of incorrect size$"),
    ("gaussian_var_two_dims", lambda F, T: F.gaussian_nll_loss(T.randn(4, 5), T.randn(4, 5), T.ones(1, 1)),
     ValueError, r"^var is of incorrect size$"),
    ("gaussian_var_ndim", lambda F, T: F.gaussian_nll_loss(T.randn(4, 5), T.randn(4, 5), T.ones(5)), ValueError,
     r"^var is of incorrect size$"),
    ("gaussian_reduction", lambda F, T: F.gaussian_nll_loss(T.randn(4), T.randn(4), T.ones(4), reduction="avg"),
     ValueError, r"^avg is not valid$"),
    ("multi_margin_p", lambda F, T: F.multi_margin_loss(T.randn(4, 5), T.tensor([0, 1, 2, 3]), p=3), ValueError,
     r"^only p == 1 and p == 2 supported$"),
    ("multi_margin_weight_2d",
     lambda F, T: F.multi_margin_loss(T.randn(4, 5), T.tensor([0, 1, 2, 3]), weight=T.ones(1, 5)), ValueError,
     r"^weight must be one-dimensional$"),
    ("multi_margin_weight_size",
     lambda F, T: F.multi_margin_loss(T.randn(4, 5), T.tensor([0, 1, 2, 3]), weight=T.ones(4)), RuntimeError,
     r"^inconsistent weight size, expected 5 but got \[4\]$"),
    ("multi_margin_target_size", lambda F, T: F.multi_margin_loss(T.randn(4, 5), T.tensor([0, 1, 2])), RuntimeError,
     r"^multi_margin_loss: target tensor should be 1-D with size equal to the number of input samples \(batch "
     r"size\)\. Expected target size \[4\], but got \[3\]\. Input has shape \[4, 5\]\.$"),
    ("multi_margin_target_2d", lambda F, T: F.multi_margin_loss(T.randn(4, 5), T.tensor([[0, 1, 2, 3]])),
     RuntimeError, r"Expected target size \[4\], but got \[1, 4\]\. Input has shape \[4, 5\]\.$"),
    ("multi_margin_input_3d", lambda F, T: F.multi_margin_loss(T.randn(2, 3, 4), T.tensor([0, 1])), RuntimeError,
     r"^Expected non-empty vector or matrix with optional 0-dim batch size, but got: \[2, 3, 4\]$"),
    ("multi_margin_no_classes", lambda F, T: F.multi_margin_loss(T.randn(4, 0), T.tensor([0, 1, 2, 3])),
     RuntimeError, r"^Expected non-empty vector or matrix with optional 0-dim batch size, but got: \[4, 0\]$"),
    ("multi_margin_target_range", lambda F, T: F.multi_margin_loss(T.randn(4, 5), T.tensor([0, 1, 2, 5])),
     RuntimeError, r"^target out of range$"),
    ("multi_margin_target_negative", lambda F, T: F.multi_margin_loss(T.randn(4, 5), T.tensor([0, -1, 2, 3])),
     RuntimeError, r"^target out of range$"),
    ("multi_margin_float_target", lambda F, T: F.multi_margin_loss(T.randn(4, 5), T.tensor([0.0, 1, 2, 3])),
     RuntimeError, r"^expected scalar type Long but found Float$"),
    ("multi_margin_int32_target",
     lambda F, T: F.multi_margin_loss(T.randn(4, 5), T.tensor([0, 1, 2, 3], dtype=T.int32)), RuntimeError,
     r"^expected scalar type Long but found Int$"),
    ("multilabel_margin_target_size",
     lambda F, T: F.multilabel_margin_loss(T.randn(4, 5), T.zeros(4, 4, dtype=T.int64)), RuntimeError,
     r"^inconsistent target size: \[4, 4\] for input of size: \[4, 5\]$"),
    ("multilabel_margin_target_1d_for_2d",
     lambda F, T: F.multilabel_margin_loss(T.randn(1, 5), T.zeros(5, dtype=T.int64)), RuntimeError,
     r"^inconsistent target size: \[5\] for input of size: \[1, 5\]$"),
    ("multilabel_margin_target_unbatched",
     lambda F, T: F.multilabel_margin_loss(T.randn(5), T.zeros(2, dtype=T.int64)), RuntimeError,
     r"^inconsistent target size: \[2\] for input of size: \[5\]$"),
    ("multilabel_margin_input_3d",
     lambda F, T: F.multilabel_margin_loss(T.randn(2, 3, 5), T.zeros(2, 3, 5, dtype=T.int64)), RuntimeError,
     r"^Expected non-empty vector or matrix with optional 0-dim batch size, but got: \[2, 3, 5\]$"),
    ("multilabel_margin_target_range",
     lambda F, T: F.multilabel_margin_loss(T.randn(1, 5), T.tensor([[0, 1, -1, 9, 2]])), RuntimeError,
     r"^argument #2 'target' is out of range$"),
    ("multilabel_margin_target_below_minus_one",
     lambda F, T: F.multilabel_margin_loss(T.randn(1, 5), T.tensor([[0, -2, -1, 2, 2]])), RuntimeError,
     r"^argument #2 'target' is out of range$"),
    ("multilabel_margin_float_target",
     lambda F, T: F.multilabel_margin_loss(T.randn(1, 5), T.zeros(1, 5)), RuntimeError,
     r"^expected scalar type Long but found Float$"),
    ("hinge_reduction", lambda F, T: F.hinge_embedding_loss(T.randn(4), T.ones(4), reduction="avg"), ValueError,
     r"^avg is not a valid value for reduction$"),
    ("multi_margin_reduction", lambda F, T: F.multi_margin_loss(T.randn(4, 5), T.tensor([0, 1, 2, 3]),
                                                                reduction="avg"), ValueError,
     r"^avg is not a valid value for reduction$"),
]
MODULE_ERRORS = [
    ("TripletMarginLoss_margin", lambda nn, T: nn.TripletMarginLoss(margin=0.0), ValueError,
     r"^TripletMarginLoss: expected margin to be greater than 0, got 0.0 instead$"),
    ("TripletMarginWithDistanceLoss_margin", lambda nn, T: nn.TripletMarginWithDistanceLoss(margin=-2), ValueError,
     r"^TripletMarginWithDistanceLoss: expected margin to be greater than 0, got -2 instead$"),
    ("MultiMarginLoss_p", lambda nn, T: nn.MultiMarginLoss(p=3), ValueError, r"^only p == 1 and p == 2 supported$"),
    ("MultiMarginLoss_weight", lambda nn, T: nn.MultiMarginLoss(weight=T.ones(2, 2)), ValueError,
     r"^MultiMarginLoss: expected weight to be None or 1D tensor, got 2D instead$"),
    ("GaussianNLLLoss_var", lambda nn, T: nn.GaussianNLLLoss()(T.randn(4, 5), T.randn(4, 5), T.ones(4, 2)),
     ValueError, r"^var is of incorrect size$"),
    ("CosineEmbeddingLoss_target", lambda nn, T: nn.CosineEmbeddingLoss()(T.randn(4, 5), T.randn(4, 5), T.ones(4, 5)),
     RuntimeError, r"^0D or 1D target tensor expected, multi-target not supported$"),
]


@pytest.mark.parametrize("name,call,exc,pattern", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(name, call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call(F, janus)


@pytest.mark.parametrize("name,call,exc,pattern", MODULE_ERRORS, ids=[e[0] for e in MODULE_ERRORS])
def test_module_errors(name, call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call(nn, janus)


@needs_torch
@pytest.mark.parametrize("name,call,exc,pattern", ERRORS + MODULE_ERRORS,
                         ids=[e[0] for e in ERRORS + MODULE_ERRORS])
def test_errors_are_pytorchs(name, call, exc, pattern):
    """The same calls fail the same way in PyTorch (the patterns are its messages)."""
    with pytest.raises(exc, match=pattern):
        call(torch.nn.functional if not name[0].isupper() else torch.nn, torch)


def test_module_rejects_an_unknown_reduction():
    for cls in (nn.MarginRankingLoss, nn.SoftMarginLoss, nn.GaussianNLLLoss, nn.MultiLabelMarginLoss):
        with pytest.raises(ValueError, match=r"^avg is not a valid value for reduction$"):
            cls(reduction="avg")
