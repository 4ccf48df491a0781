"""janus.nn.functional.ctc_loss / janus.nn.CTCLoss (janus/nn/_ctc.py) and
Tensor.scatter_reduce / scatter_reduce_ / janus.scatter_reduce
(janus/_scatter_reduce.py), both composed from table ops.

Checked against references written here -- a plain per-sequence CTC
dynamic program in numpy (values; torch's gradient as central differences of
that DP plus the exp(log_probs) term torch's backward adds), a loop-per-element
scatter_reduce and torch's derivative rules in numpy -- so the file also runs
without PyTorch; against PyTorch on many random cases where it is installed
(the tests that import it skip otherwise); by finite-difference gradchecks;
and one training step with ctc_loss that records, optimizes and replays
(`--strict`) with eager's losses bitwise."""
import itertools
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import janus
import janus.nn as nn
import janus.nn.functional as F

from dynamic_runs import have_optimize
from gradnum import check_grad

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(ROOT, "build")))
JANUS = os.path.join(BUILD, "janus")


def _np(t):
    return np.array(t.detach().tolist(), dtype=np.float64)


# ------------------------------------------------------------------ CTC reference
def _lse(*xs):
    m = max(xs)
    if m == -math.inf:
        return -math.inf
    return m + math.log(sum(math.exp(x - m) for x in xs))


def ref_ctc_nll(lp, target, T, blank=0):
    """-log p(target | lp[:T]) by the textbook forward recursion, one sequence (lp: (T_max, C))."""
    L = len(target)
    if T == 0:
        return 0.0 if L == 0 else math.inf
    ext = [blank]
    for c in target:
        ext += [int(c), blank]
    X = len(ext)
    a = [-math.inf] * X
    a[0] = lp[0, blank]
    if X > 1:
        a[1] = lp[0, ext[1]]
    for t in range(1, T):
        b = [-math.inf] * X
        for s in range(X):
            terms = [a[s]] + ([a[s - 1]] if s >= 1 else []) + \
                ([a[s - 2]] if s >= 2 and s % 2 == 1 and ext[s] != ext[s - 2] else [])
            b[s] = _lse(*terms) + lp[t, ext[s]]
        a = b
    return -_lse(a[X - 1], a[X - 2] if X > 1 else -math.inf)


def ref_ctc(lp, targets, il, tl, blank=0, reduction="mean", zero_infinity=False):
    """torch's ctc_loss semantics over a (T, N, C) batch with padded (N, S) targets."""
    nll = np.array([ref_ctc_nll(lp[:, n], targets[n][:tl[n]], il[n], blank) for n in range(lp.shape[1])])
    if zero_infinity:
        nll = np.where(np.isinf(nll), 0.0, nll)
    if reduction == "none":
        return nll
    if reduction == "sum":
        return nll.sum()
    return (nll / np.maximum(np.array(tl, dtype=np.float64), 1)).mean()


def ref_ctc_grad(lp, targets, il, tl, blank=0, zero_infinity=False, eps=1e-6):
    """torch's gradient of sum(nll) wrt log_probs: d nll / d lp (central differences of the
    DP) plus exp(lp) for t < input length; NaN at t < length where the loss is infinite,
    zero with zero_infinity."""
    T, N, C = lp.shape
    g = np.zeros_like(lp)
    for n in range(N):
        nll = ref_ctc_nll(lp[:, n], targets[n][:tl[n]], il[n], blank)
        if il[n] == 0:
            continue
        if math.isinf(nll):
            g[:il[n], n] = 0.0 if zero_infinity else np.nan
            continue
        for t in range(il[n]):
            for c in range(C):
                p, m = lp.copy(), lp.copy()
                p[t, n, c] += eps
                m[t, n, c] -= eps
                d = (ref_ctc_nll(p[:, n], targets[n][:tl[n]], il[n], blank)
                     - ref_ctc_nll(m[:, n], targets[n][:tl[n]], il[n], blank)) / (2 * eps)
                g[t, n, c] = d + math.exp(lp[t, n, c])
    return g


def _case(rng, T, N, C, S, il=None, tl=None, blank=0, repeats=False):
    """Random logits (T, N, C), padded targets avoiding blank (labels repeat if asked), lengths."""
    x = rng.standard_normal((T, N, C))
    labels = [c for c in range(C) if c != blank]
    tg = rng.choice(labels[:2] if repeats else labels, size=(N, S))
    il = list(rng.integers(1, T + 1, N)) if il is None else il
    tl = list(rng.integers(0, S + 1, N)) if tl is None else tl
    return x, tg, [int(v) for v in il], [int(v) for v in tl]


def _log_softmax(x):
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


CTC_CASES = [  # (T, N, C, S, input lengths, target lengths, blank)
    (6, 3, 5, 3, [6, 4, 6], [3, 2, 0], 0),       # full, short, empty target
    (5, 2, 4, 3, [5, 2], [3, 3], 0),             # the second too short: infinite
    (7, 2, 4, 3, [7, 7], [3, 3], 2),             # blank not 0
    (4, 3, 3, 2, [0, 4, 1], [0, 2, 1], 0),       # input length 0 (empty target: loss 0)
    (1, 2, 3, 1, [1, 1], [1, 0], 0),             # one step
    (8, 2, 3, 4, [8, 5], [4, 2], 0),             # repeats need blanks between: tight
]


@pytest.mark.parametrize("case", range(len(CTC_CASES)))
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_ctc_values_match_the_reference_dp(case, reduction):
    T, N, C, S, il, tl, blank = CTC_CASES[case]
    rng = np.random.default_rng(case)
    x, tg, il, tl = _case(rng, T, N, C, S, il, tl, blank, repeats=case == 5)
    lp = _log_softmax(x)
    for zi in (False, True):
        want = ref_ctc(lp, tg, il, tl, blank, reduction, zi)
        got = F.ctc_loss(janus.tensor(lp), janus.tensor(tg), il, tl, blank=blank, reduction=reduction,
                         zero_infinity=zi)
        assert got.dtype == janus.float64 and tuple(got.shape) == np.shape(want)
        np.testing.assert_allclose(_np(got), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", range(len(CTC_CASES)))
def test_ctc_gradient_is_torchs_formula(case):
    """torch's backward: exp(lp) - exp(lcab + nll - lp) within each input length (the
    true derivative plus exp(lp)); NaN for an impossible alignment, 0 with zero_infinity."""
    T, N, C, S, il, tl, blank = CTC_CASES[case]
    rng = np.random.default_rng(10 + case)
    x, tg, il, tl = _case(rng, T, N, C, S, il, tl, blank, repeats=case == 5)
    for zi in (False, True):
        want = ref_ctc_grad(x, tg, il, tl, blank, zi)  # unnormalized log_probs, as torch allows
        lp = janus.tensor(x, requires_grad=True)
        F.ctc_loss(lp, janus.tensor(tg), il, tl, blank=blank, reduction="sum", zero_infinity=zi).backward()
        got = _np(lp.grad)
        assert np.array_equal(np.isnan(got), np.isnan(want)), (np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_ctc_input_forms():
    """Concatenated 1-D targets, unbatched input, lengths as tensors / tuples / ints,
    float32, float targets: the same losses as the padded batched form."""
    rng = np.random.default_rng(3)
    x, tg, il, tl = _case(rng, 6, 3, 5, 4, [6, 5, 6], [4, 1, 2])
    lp = janus.tensor(_log_softmax(x))
    base = F.ctc_loss(lp, janus.tensor(tg), il, tl, reduction="none")
    flat = janus.tensor(np.concatenate([tg[n, :tl[n]] for n in range(3)]))
    for args in [(flat, il, tl), (janus.tensor(tg), janus.tensor(il), janus.tensor(tl)),
                 (flat, tuple(il), tuple(tl)), (janus.tensor(tg).double(), il, tl),
                 (janus.tensor(tg).int(), janus.tensor(il, dtype=janus.int32), janus.tensor(tl))]:
        got = F.ctc_loss(lp, *args, reduction="none")
        np.testing.assert_array_equal(_np(got), _np(base))
    for n in range(3):
        for i, t in [(il[n], tl[n]), ([il[n]], [tl[n]]), (janus.tensor(il[n]), janus.tensor(tl[n]))]:
            one = F.ctc_loss(lp[:, n], janus.tensor(tg[n]), i, t, reduction="none")
            assert one.dim() == 0
            np.testing.assert_array_equal(_np(one), _np(base[n]))
    f32 = F.ctc_loss(lp.float(), janus.tensor(tg), il, tl)
    assert f32.dtype == janus.float32
    np.testing.assert_allclose(_np(f32), ref_ctc(_log_softmax(x), tg, il, tl), rtol=1e-5)
    # padding past the lengths is never read (any value, even an out-of-range label)
    tg2 = tg.copy()
    tg2[1, 1:] = 99
    np.testing.assert_array_equal(_np(F.ctc_loss(lp, janus.tensor(tg2), il, tl, reduction="none")), _np(base))


def test_ctc_module():
    rng = np.random.default_rng(4)
    x, tg, il, tl = _case(rng, 5, 2, 4, 2, [5, 5], [2, 1])
    lp = janus.tensor(_log_softmax(x))
    m = nn.CTCLoss(blank=0, reduction="sum", zero_infinity=True)
    assert (m.blank, m.reduction, m.zero_infinity) == (0, "sum", True) and m.state_dict() == {}
    assert repr(nn.CTCLoss()) == "CTCLoss()"
    np.testing.assert_array_equal(_np(m(lp, janus.tensor(tg), il, tl)),
                                  _np(F.ctc_loss(lp, janus.tensor(tg), il, tl, reduction="sum", zero_infinity=True)))
    import janus.nn.modules as modules
    assert nn.CTCLoss is modules.CTCLoss is modules.loss.CTCLoss and "CTCLoss" in modules.__all__


CTC_ERRORS = [
    (lambda lp, tg: F.ctc_loss(lp, tg, [5, 5], [2, 2], reduction="bad"), ValueError,
     "bad is not a valid value for reduction"),
    (lambda lp, tg: F.ctc_loss(lp, tg, [5, 6], [2, 2]), RuntimeError,
     "Expected input_lengths to have value at most 5, but got value 6 (while checking arguments for "
     "ctc_loss_allocate_outputs)"),
    (lambda lp, tg: F.ctc_loss(lp, tg, [5, -1], [2, 2]), RuntimeError,
     "Expected input_lengths to have value at least 0, but got value -1"),
    (lambda lp, tg: F.ctc_loss(lp, tg, [5, 5], [2, 3]), RuntimeError,
     "Expected tensor to have size at least 3 at dimension 1, but got size 2 for argument #2 'targets'"),
    (lambda lp, tg: F.ctc_loss(lp, tg, [5, 5], [2, -1]), RuntimeError,
     "Expected target_lengths to have value at least 0, but got value -1"),
    (lambda lp, tg: F.ctc_loss(lp, tg, [5, 5, 5], [2, 2]), RuntimeError, "input_lengths must be of size batch_size"),
    (lambda lp, tg: F.ctc_loss(lp, tg, [5, 5], [2, 2, 2]), RuntimeError, "target_lengths must be of size batch_size"),
    (lambda lp, tg: F.ctc_loss(lp, tg, [5, 5], [2, 2], blank=4), RuntimeError, "blank must be in label range"),
    (lambda lp, tg: F.ctc_loss(lp, tg, [5, 5], [2, 2], blank=-1), RuntimeError, "blank must be in label range"),
    (lambda lp, tg: F.ctc_loss(lp, tg.flatten(), [5, 5], [2, 1]), RuntimeError,
     "Expected tensor to have size 3 at dimension 0, but got size 4 for argument #2 'targets'"),
    (lambda lp, tg: F.ctc_loss(lp[0], tg, [5, 5], [2, 2]), RuntimeError, "input_lengths must be of size batch_size"),
    (lambda lp, tg: F.ctc_loss(lp, tg, janus.tensor([5, 5.]), janus.tensor([2, 2])), RuntimeError,
     "input_lengths must be integral"),
    (lambda lp, tg: F.ctc_loss(lp[:0], tg, [0, 0], [0, 2]), RuntimeError, "log_probs tensor must not be empty"),
    (lambda lp, tg: F.ctc_loss(lp, tg.unsqueeze(0), [5, 5], [2, 2]), RuntimeError,
     "Expected 1 to 2 dimensions, but got 3-dimensional tensor for argument #2 'targets'"),
]


@pytest.mark.parametrize("k", range(len(CTC_ERRORS)))
def test_ctc_errors_read_as_torchs(k):
    f, kind, msg = CTC_ERRORS[k]
    lp = janus.randn(5, 2, 4).log_softmax(-1)
    with pytest.raises(kind) as e:
        f(lp, janus.tensor([[1, 2], [1, 1]]))
    assert msg in str(e.value)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_ctc_gradcheck_through_log_softmax(reduction):
    """Through log_softmax torch's gradient is the true one: central differences agree
    (gradnum's check and janus.autograd.gradcheck), repeated labels and a short input included."""
    rng = np.random.default_rng(5)
    x, _, _, _ = _case(rng, 5, 3, 4, 3)
    tg, il, tl = janus.tensor([[1, 1, 2], [3, 2, 1], [2, 2, 2]]), [5, 4, 5], [3, 3, 2]
    f = lambda z: F.ctc_loss(z.log_softmax(2), tg, il, tl, reduction=reduction)  # noqa: E731
    check_grad(f, [x])
    assert janus.autograd.gradcheck(f, (janus.tensor(x, requires_grad=True),))


def test_ctc_infinite_loss_and_zero_infinity():
    lp = janus.tensor(_log_softmax(np.random.default_rng(6).standard_normal((3, 2, 3))), requires_grad=True)
    tg = janus.tensor([[1, 1], [1, 2]])
    loss = F.ctc_loss(lp, tg, [3, 1], [2, 2], reduction="none")  # 1 1 needs 3 steps; 1 2 in 1 step cannot
    assert math.isfinite(loss[0].item()) and loss[1].item() == math.inf
    loss.sum().backward()
    g = _np(lp.grad)
    assert np.isnan(g[:1, 1]).all() and (g[1:, 1] == 0).all() and np.isfinite(g[:, 0]).all()
    lp.grad = None
    loss = F.ctc_loss(lp, tg, [3, 1], [2, 2], reduction="mean", zero_infinity=True)
    loss.backward()
    assert math.isfinite(loss.item()) and (_np(lp.grad)[:, 1] == 0).all()


# ------------------------------------------------------------------ CTC vs torch
def _ctc_random_cases(seed, n):
    rng = np.random.default_rng(seed)
    for k in range(n):
        T, N, C = int(rng.integers(1, 9)), int(rng.integers(1, 4)), int(rng.integers(2, 6))
        S = int(rng.integers(0, 5))
        blank = int(rng.integers(0, C))
        labels = [c for c in range(C) if c != blank]
        tg = rng.choice(labels[:1 + k % 2], size=(N, S)) if S else np.zeros((N, 0), dtype=np.int64)
        il = [int(v) for v in rng.integers(0 if k % 7 == 0 else 1, T + 1, N)]
        tl = [int(v) for v in rng.integers(0, S + 1, N)]
        x = rng.standard_normal((T, N, C)) * 2
        yield x, tg, il, tl, blank, ["none", "sum", "mean"][k % 3], bool(k % 4 == 1), k % 2 == 0, k % 5 == 0


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ctc_matches_torch_on_random_cases(dtype):
    torch = pytest.importorskip("torch")
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=1e-9, atol=1e-9)
    for x, tg, il, tl, blank, red, zi, normalize, concat in _ctc_random_cases(7 if dtype == "float32" else 8, 120):
        x = x.astype(dtype)
        tx, jx = torch.tensor(x, requires_grad=True), janus.tensor(x, requires_grad=True)
        if concat and tg.shape[1]:
            flat = np.concatenate([tg[n, :tl[n]] for n in range(len(tl))]).astype(np.int64)
            targs = (torch.tensor(flat), janus.tensor(flat))
        else:
            targs = (torch.tensor(tg), janus.tensor(tg))
        lt = torch.nn.functional.ctc_loss(tx.log_softmax(2) if normalize else tx, targs[0], torch.tensor(il),
                                          torch.tensor(tl), blank=blank, reduction=red, zero_infinity=zi)
        lj = F.ctc_loss(jx.log_softmax(2) if normalize else jx, targs[1], janus.tensor(il), janus.tensor(tl),
                        blank=blank, reduction=red, zero_infinity=zi)
        w = np.random.default_rng(0).uniform(0.5, 1.5, size=tuple(lt.shape)).astype(dtype)
        (lt * torch.tensor(w)).sum().backward()
        (lj * janus.tensor(w)).sum().backward()
        info = (x.shape, tg.tolist(), il, tl, blank, red, zi, normalize)
        np.testing.assert_allclose(_np(lj), lt.detach().double().numpy(), **tol, err_msg=str(info))
        gt, gj = tx.grad.double().numpy(), _np(jx.grad)
        assert np.array_equal(np.isnan(gt), np.isnan(gj)), info
        np.testing.assert_allclose(gj, gt, **tol, err_msg=str(info))


def test_ctc_module_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(9).standard_normal((6, 2, 5)).astype(np.float32)
    tg, il, tl = [[1, 2, 3], [4, 4, 0]], [6, 5], [3, 2]
    want = torch.nn.CTCLoss(blank=0)(torch.tensor(x).log_softmax(2), torch.tensor(tg), il, tl)
    got = nn.CTCLoss(blank=0)(janus.tensor(x).log_softmax(2), janus.tensor(tg), il, tl)
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-6)


# ------------------------------------------------------------------ scatter_reduce reference
def ref_scatter_reduce(x, dim, index, src, reduce, include_self=True):
    """torch's definition, one index element at a time; also torch's gradients
    (FunctionsManual scatter_reduce_backward) for an upstream gradient of ones * gw."""
    out = x.copy()
    groups = {}
    for pos in itertools.product(*[range(n) for n in index.shape]):
        tgt = list(pos)
        tgt[dim] = index[pos]
        groups.setdefault(tuple(tgt), []).append(pos)
    for tgt, members in groups.items():
        vals = ([x[tgt]] if include_self else []) + [src[p] for p in members]
        if reduce == "sum":
            r = sum(vals[1:], vals[0])
        elif reduce == "prod":
            r = vals[0]
            for v in vals[1:]:
                r = r * v
        elif reduce == "mean":
            r = sum(vals[1:], vals[0])
            r = r / len(vals) if np.issubdtype(x.dtype, np.floating) else r // len(vals)
        elif reduce == "amax":
            r = max(vals)
        else:
            r = min(vals)
        out[tgt] = r
    return out, groups


def ref_scatter_reduce_grad(x, dim, index, src, reduce, include_self, gw):
    """Gradients of sum(out * gw) wrt x and src by torch's derivative rules."""
    out, groups = ref_scatter_reduce(x, dim, index, src, reduce, include_self)
    gx, gs = gw.astype(np.float64).copy(), np.zeros(src.shape)
    for tgt, members in groups.items():
        g = gw[tgt]
        vals = ([x[tgt]] if include_self else []) + [src[p] for p in members]
        if reduce == "sum":
            gx[tgt], each = (g if include_self else 0.0), [g] * len(members)
        elif reduce == "mean":
            gx[tgt], each = (g / len(vals) if include_self else 0.0), [g / len(vals)] * len(members)
        elif reduce == "prod":
            def others(k):
                return np.prod([v for j, v in enumerate(vals) if j != k])
            off = 1 if include_self else 0
            gx[tgt] = g * others(0) if include_self else 0.0
            each = [g * others(off + k) for k in range(len(members))]
        else:  # amax / amin: evenly among the tied; self counted even when not included
            r = out[tgt]
            n = (x[tgt] == r) + sum(src[p] == r for p in members)
            gx[tgt] = g / n * (x[tgt] == r) if include_self else 0.0
            each = [g / n * (src[p] == r) for p in members]
        for p, e in zip(members, each):
            gs[p] += e
    return out, gx, gs


def _sr_case(rng, dtype=np.float64, ties=True):
    nd = int(rng.integers(1, 4))
    shape = tuple(int(v) for v in rng.integers(1, 4, nd))
    dim = int(rng.integers(0, nd))
    ish = tuple(int(rng.integers(1, s + 1)) if d != dim else int(rng.integers(1, 6)) for d, s in enumerate(shape))
    if ties:  # small integers: ties and zeros everywhere
        x, s = rng.integers(-2, 3, shape).astype(dtype), rng.integers(-2, 3, ish).astype(dtype)
    else:
        x, s = rng.standard_normal(shape).astype(dtype), rng.standard_normal(ish).astype(dtype)
    return x, dim, rng.integers(0, shape[dim], ish), s


REDUCES = ["sum", "prod", "mean", "amax", "amin"]


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_values_and_gradients_match_the_reference(reduce, include_self):
    rng = np.random.default_rng(REDUCES.index(reduce) + 10 * include_self)
    for k in range(40):
        x, dim, idx, s = _sr_case(rng)
        gw = rng.standard_normal(x.shape)
        jx, js = janus.tensor(x, requires_grad=True), janus.tensor(s, requires_grad=True)
        out = jx.scatter_reduce(dim, janus.tensor(idx), js, reduce, include_self=include_self)
        (out * janus.tensor(gw)).sum().backward()
        want, gx, gs = ref_scatter_reduce_grad(x, dim, idx, s, reduce, include_self, gw)
        np.testing.assert_allclose(_np(out), want, rtol=1e-12, err_msg=str((x, dim, idx, s)))
        np.testing.assert_allclose(_np(jx.grad), gx, rtol=1e-12, atol=1e-12, err_msg=str((x, dim, idx, s)))
        np.testing.assert_allclose(_np(js.grad), gs, rtol=1e-12, atol=1e-12, err_msg=str((x, dim, idx, s)))


@pytest.mark.parametrize("dtype", ["int64", "int32", "float32"])
def test_scatter_reduce_integer_and_float32_values(dtype):
    """Integers exactly (mean floors, as torch); a src larger than the index; the function
    and in-place forms."""
    rng = np.random.default_rng(20)
    for k in range(30):
        reduce, inc = REDUCES[k % 5], bool(k // 5 % 2)
        x, dim, idx, _ = _sr_case(rng, dtype)
        s = rng.integers(-9, 9, tuple(n + 1 for n in idx.shape)).astype(dtype)
        x = rng.integers(-9, 9, x.shape).astype(dtype)
        want, _ = ref_scatter_reduce(x, dim, idx, s, reduce, inc)
        got = janus.scatter_reduce(janus.tensor(x), dim, janus.tensor(idx), janus.tensor(s), reduce,
                                   include_self=inc)
        assert str(got.dtype) == "janus." + dtype
        np.testing.assert_array_equal(np.array(got.tolist()), want)
        y = janus.tensor(x)
        assert y.scatter_reduce_(dim, janus.tensor(idx), janus.tensor(s), reduce, include_self=inc) is y
        np.testing.assert_array_equal(np.array(y.tolist()), want)


def test_scatter_reduce_edge_cases():
    nan, inf = math.nan, math.inf
    x = janus.tensor([1.0, -inf, 3.0])
    idx = janus.tensor([0, 0, 2])
    r = x.scatter_reduce(0, idx, janus.tensor([nan, 2.0, 1.0]), "amax")
    assert math.isnan(r[0].item()) and r[1].item() == -inf and r[2].item() == 3.0
    r = x.scatter_reduce(0, idx, janus.tensor([nan, 2.0, 1.0]), "amin", include_self=False)
    assert math.isnan(r[0].item()) and r[2].item() == 1.0
    # an empty index leaves a copy; 0-d tensors count as 1-d
    e = x.scatter_reduce(0, janus.zeros(0, dtype=janus.int64), janus.zeros(0), "prod", include_self=False)
    assert e.tolist() == x.tolist() and e is not x
    r = janus.tensor(2.0).scatter_reduce(0, janus.tensor(0), janus.tensor(5.0), "prod")
    assert r.dim() == 0 and r.item() == 10.0
    # -inf padding with amax: untouched positions keep self and pass it their gradient
    base = janus.full((4,), -inf, requires_grad=True)
    src = janus.tensor([3.0, 3.0, 2.0], requires_grad=True)
    out = base.scatter_reduce(0, janus.tensor([1, 1, 3]), src, "amax")
    assert out.tolist() == [-inf, 3.0, -inf, 2.0]
    out.sum().backward()
    assert base.grad.tolist() == [1.0, 0.0, 1.0, 0.0] and src.grad.tolist() == [0.5, 0.5, 1.0]
    # prod with zeros: the product of the others (0 where two zeros meet)
    a = janus.tensor([2.0, 0.0], requires_grad=True)
    b = janus.tensor([0.0, 3.0, 0.0, 5.0], requires_grad=True)
    out = a.scatter_reduce(0, janus.tensor([0, 0, 1, 1]), b, "prod")
    out.sum().backward()
    assert out.tolist() == [0.0, 0.0] and a.grad.tolist() == [0.0, 0.0] and b.grad.tolist() == [6.0, 0.0, 0.0, 0.0]


SR_ERRORS = [
    (lambda x, i, s: x.scatter_reduce(0, i, s, "foo"), RuntimeError,
     "reduce argument must be either sum, prod, mean, amax or amin, got foo"),
    (lambda x, i, s: x.scatter_reduce(0, i, s.double(), "sum"), RuntimeError,
     "scatter(): Expected self.dtype to be equal to src.dtype"),
    (lambda x, i, s: x.scatter_reduce(0, i.float(), s, "sum"), RuntimeError,
     "scatter(): Expected dtype int32/int64 for index"),
    (lambda x, i, s: x.scatter_reduce(0, i, 1.0, "sum"), TypeError,
     "scatter_reduce(): argument 'src' (position 3) must be Tensor, not float"),
    (lambda x, i, s: x.scatter_reduce(1, i, s, "sum"), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    (lambda x, i, s: x.scatter_reduce(0, janus.tensor([0, 1, 2]), s, "sum"), RuntimeError,
     "Expected index [3] to be no larger than self [5] apart from dimension 0 and to be no larger size than src [2]"),
    (lambda x, i, s: janus.zeros(2, 3).scatter_reduce(0, i, s, "sum"), RuntimeError,
     "Index tensor must have the same number of dimensions as self tensor"),
    (lambda x, i, s: janus.tensor([True]).scatter_reduce(0, janus.tensor([0]), janus.tensor([True]), "mean"),
     NotImplementedError, "not implemented for 'Bool'"),
]


@pytest.mark.parametrize("k", range(len(SR_ERRORS)))
def test_scatter_reduce_errors_read_as_torchs(k):
    f, kind, msg = SR_ERRORS[k]
    with pytest.raises(kind) as e:
        f(janus.zeros(5), janus.tensor([0, 1]), janus.ones(2))
    assert msg in str(e.value)


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_gradcheck(reduce, include_self):
    """Central differences at untied values (amax/amin are differentiable there)."""
    rng = np.random.default_rng(30 + REDUCES.index(reduce))
    x, idx, s = rng.standard_normal((3, 4)), np.array([[0, 2, 2, 1], [1, 1, 0, 2]]), rng.standard_normal((2, 4))
    f = lambda a, b: a.scatter_reduce(0, janus.tensor(idx), b, reduce, include_self=include_self)  # noqa: E731
    check_grad(f, [x, s])
    assert janus.autograd.gradcheck(f, (janus.tensor(x, requires_grad=True), janus.tensor(s, requires_grad=True)))


@pytest.mark.parametrize("reduce", REDUCES)
def test_scatter_reduce_matches_torch(reduce):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(40 + REDUCES.index(reduce))
    for k in range(60):
        inc = bool(k % 2)
        dtype = np.float64 if k % 3 else np.float32
        x, dim, idx, s = _sr_case(rng, dtype, ties=k % 4 != 0)
        gw = rng.standard_normal(x.shape).astype(dtype)
        tx, ts = torch.tensor(x, requires_grad=True), torch.tensor(s, requires_grad=True)
        jx, js = janus.tensor(x, requires_grad=True), janus.tensor(s, requires_grad=True)
        to = tx.scatter_reduce(dim, torch.tensor(idx), ts, reduce, include_self=inc)
        jo = jx.scatter_reduce(dim, janus.tensor(idx), js, reduce, include_self=inc)
        (to * torch.tensor(gw)).sum().backward()
        (jo * janus.tensor(gw)).sum().backward()
        tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
        info = str((x, dim, idx, s, inc))
        np.testing.assert_allclose(_np(jo), to.detach().double().numpy(), **tol, err_msg=info)
        np.testing.assert_allclose(_np(jx.grad), tx.grad.double().numpy(), **tol, err_msg=info)
        np.testing.assert_allclose(_np(js.grad), ts.grad.double().numpy(), **tol, err_msg=info)
    # integers and a src larger than the index: values
    for k in range(20):
        x = rng.integers(-9, 9, (3, 4))
        idx, s = rng.integers(0, 3, (2, 3)), rng.integers(-9, 9, (3, 4))
        inc = bool(k % 2)
        want = torch.tensor(x).scatter_reduce(0, torch.tensor(idx), torch.tensor(s), reduce, include_self=inc)
        got = janus.tensor(x).scatter_reduce(0, janus.tensor(idx), janus.tensor(s), reduce, include_self=inc)
        assert got.tolist() == want.tolist()


# ------------------------------------------------------------------ record / replay
TRAIN = """
    import sys
    import janus, janus.nn as nn, janus.nn.functional as F
    janus.manual_seed(0)
    T, N, C = 8, 3, 5
    lin = nn.Linear(4, C)
    opt = janus.optim.Adam(lin.parameters(), lr=0.05)
    X = janus.randn(40, T, N, 4)
    tg = janus.tensor([[1, 2, 2], [3, 1, 0], [4, 4, 4]])
    # lengths change every step: the ops do not (masks over the padded width)
    lens = [([8, 6, 7], [3, 2, 3]), ([7, 8, 5], [2, 3, 1]), ([8, 2, 8], [3, 3, 2])]
    ctc = nn.CTCLoss(zero_infinity=True)
    for step in range(int(sys.argv[1])):
        il, tl = lens[step % 3]
        lp = F.log_softmax(lin(X[step]), 2)
        loss = ctc(lp, tg, janus.tensor(il), janus.tensor(tl))
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(step, f"{loss.item():.9g}")
"""


@pytest.mark.skipif(not have_optimize(), reason="janus optimize is not built")
def test_ctc_training_step_records_and_replays_bitwise(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(TRAIN))
    env = dict(os.environ, JANUS_BUILD_DIR=BUILD, JANUS_REPLAY_ADAPT="0",
               PYTHONPATH=os.path.join(ROOT, "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for k in ("JANUS_RECORD_DB", "JANUS_RECORD_RUN", "JANUS_REPLAY_DB"):
        env.pop(k, None)
    db = str(tmp_path / "run.db")

    def run(*args):
        return subprocess.run(args, capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=600)

    eager = run(sys.executable, str(script), "12")
    assert eager.returncode == 0, eager.stderr[-3000:]
    assert len(eager.stdout.splitlines()) == 12
    rec = run(JANUS, "record", "--db", db, "--", sys.executable, str(script), "12")
    assert rec.returncode == 0, rec.stderr[-3000:]
    opt = run(JANUS, "optimize", db)
    assert opt.returncode == 0, opt.stderr[-3000:]
    rep = run(JANUS, "replay", "--db", db, "--strict", "--", sys.executable, str(script), "12")
    assert rep.returncode == 0, rep.stderr[-3000:]
    assert rec.stdout == eager.stdout and rep.stdout == eager.stdout
    assert "0 fell back to eager" in rep.stderr, rep.stderr[-2000:]
