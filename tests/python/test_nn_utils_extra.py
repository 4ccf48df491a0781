"""janus.nn.utils additions: get_total_norm / clip_grads_with_norm_, conv/linear
+ batch-norm fusion, skip_init, convert_conv2d_weight_memory_format, and the
parameter-vector round trip; against numpy and closed forms always, against
torch.nn.utils where torch imports."""
import copy
import math

import numpy as np
import pytest

import janus
import janus.nn as nn
from janus.nn import utils as U

try:
    import torch
except ImportError:  # the files pass without torch
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

INF = math.inf
NORMS = [2.0, 1.0, 3.0, 0.5, INF, -INF, 0.0, -1.0]


def np_norm(a, p):
    a = np.abs(np.asarray(a, dtype=np.float64).ravel())
    if p == INF:
        return a.max()
    if p == -INF:
        return a.min()
    if p == 0:
        return float(np.count_nonzero(a))
    with np.errstate(divide="ignore"):
        return (a ** p).sum() ** (1.0 / p)


def np_total(arrays, p):
    return np_norm([np_norm(a, p) for a in arrays], p)


def arrays(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((3, 4)), rng.standard_normal(5) * 3, rng.standard_normal((2, 1, 3)) * 0.1]


def jt(a, dtype=janus.float64, requires_grad=False):
    return janus.tensor(np.asarray(a), dtype=dtype, requires_grad=requires_grad)


def params_with_grads(grads, dtype=janus.float64):
    ps = []
    for g in grads:
        p = nn.Parameter(janus.zeros(list(np.shape(g)), dtype=dtype))
        if g is not None:
            p.grad = jt(g, dtype)
        ps.append(p)
    return ps


# ------------------------------------------------------------ get_total_norm
@pytest.mark.parametrize("p", NORMS)
def test_get_total_norm_closed_form(p):
    arrs = arrays()
    got = U.get_total_norm([jt(a) for a in arrs], p)
    assert got.dim() == 0 and got.dtype == janus.float64
    np.testing.assert_allclose(float(got), np_total(arrs, p), rtol=1e-12)
    # float32 too, and a single tensor (not a list)
    got32 = U.get_total_norm([jt(a, janus.float32) for a in arrs], p)
    assert got32.dtype == janus.float32
    np.testing.assert_allclose(float(got32), np_total(arrs, p), rtol=1e-5)
    one = U.get_total_norm(jt(arrs[0]), p)
    np.testing.assert_allclose(float(one), np_norm([np_norm(arrs[0], p)], p), rtol=1e-12)


def test_get_total_norm_is_the_norm_of_the_concatenation():
    arrs = arrays(1)
    flat = np.concatenate([a.ravel() for a in arrs])
    for p in (1.0, 2.0, 3.0, INF, -INF):  # (norm_type 0 is per tensor: the count of nonzero norms)
        np.testing.assert_allclose(float(U.get_total_norm([jt(a) for a in arrs], p)), np_norm(flat, p), rtol=1e-12)
    zero_tensor = [jt(np.zeros(3)), jt(np.array([0.0, 2.0]))]
    assert float(U.get_total_norm(zero_tensor, 0)) == 1.0  # one tensor has a nonzero element


def test_get_total_norm_edges():
    empty = U.get_total_norm([])
    assert empty.dim() == 0 and float(empty) == 0.0
    assert float(U.get_total_norm(iter([jt([3.0]), jt([4.0])]))) == 5.0  # any iterable
    x = jt([3.0, 4.0], requires_grad=True)
    n = U.get_total_norm([x * 1.0])
    assert float(n) == 5.0 and not n.requires_grad  # no graph, as torch (no_grad)
    for foreach in (None, True, False):
        assert float(U.get_total_norm([jt([3.0]), jt([4.0])], foreach=foreach)) == 5.0
    with pytest.raises(RuntimeError, match="floating point"):
        U.get_total_norm([janus.tensor([1, 2])])


@pytest.mark.parametrize("bad", [math.nan, INF, -INF])
@pytest.mark.parametrize("p", [2.0, 1.0, INF])
def test_get_total_norm_nonfinite(bad, p):
    ts = [jt([1.0, bad]), jt([2.0])]
    got = float(U.get_total_norm(ts, p))
    expect = np_total([[1.0, bad], [2.0]], p)
    assert (math.isnan(got) and math.isnan(expect)) or got == expect
    with pytest.raises(RuntimeError, match=rf"The total norm of order {p} for gradients from `parameters` is "
                                           r"non-finite, so it cannot be clipped"):
        U.get_total_norm(ts, p, error_if_nonfinite=True)
    assert float(U.get_total_norm([jt([3.0, 4.0])], 2, error_if_nonfinite=True)) == 5.0


# ------------------------------------------------------------ clip_grads_with_norm_
@pytest.mark.parametrize("p", [2.0, 1.0, INF])
def test_clip_grads_with_norm_closed_form(p):
    arrs = arrays(2)
    total = np_total(arrs, p)
    for max_norm in (total / 4, total * 4):
        ps = params_with_grads(arrs + [None])
        tn = U.get_total_norm([q.grad for q in ps if q.grad is not None], p)
        assert U.clip_grads_with_norm_(ps, max_norm, tn) is None
        coef = min(max_norm / (total + 1e-6), 1.0)
        for q, a in zip(ps, arrs):
            np.testing.assert_allclose(q.grad.numpy(), a * coef, rtol=1e-12)
        assert ps[-1].grad is None
        if max_norm > total:
            assert coef == 1.0  # never scaled up
    # a caller's own total norm is used as given (not recomputed)
    ps = params_with_grads(arrs)
    U.clip_grads_with_norm_(ps, 1.0, janus.tensor(10.0, dtype=janus.float64))
    np.testing.assert_allclose(ps[0].grad.numpy(), arrs[0] * (1.0 / (10.0 + 1e-6)), rtol=1e-12)
    # a single tensor, a Python-number total, foreach=, and no gradients at all
    q = params_with_grads([np.array([6.0, 8.0])])[0]
    U.clip_grads_with_norm_(q, 5.0, 10.0, foreach=True)
    np.testing.assert_allclose(q.grad.numpy(), [3.0, 4.0], rtol=1e-6)
    U.clip_grads_with_norm_([nn.Parameter(janus.zeros(2))], 1.0, janus.tensor(3.0))


def test_get_total_norm_then_clip_equals_clip_grad_norm_():
    arrs = arrays(3)
    for p in (2.0, 1.0, INF):
        a, b = params_with_grads(arrs), params_with_grads(arrs)
        ref = U.clip_grad_norm_(a, 0.5, p)
        tn = U.get_total_norm([q.grad for q in b], p)
        U.clip_grads_with_norm_(b, 0.5, tn)
        np.testing.assert_allclose(float(tn), float(ref), rtol=1e-12)
        for qa, qb in zip(a, b):
            np.testing.assert_allclose(qb.grad.numpy(), qa.grad.numpy(), rtol=1e-12)


def test_clip_grads_with_nonfinite_norm():
    ps = params_with_grads([np.array([1.0, 2.0])])
    U.clip_grads_with_norm_(ps, 1.0, janus.tensor(INF, dtype=janus.float64))
    assert ps[0].grad.tolist() == [0.0, 0.0]
    ps = params_with_grads([np.array([1.0, 2.0])])
    U.clip_grads_with_norm_(ps, 1.0, janus.tensor(math.nan, dtype=janus.float64))
    assert all(math.isnan(v) for v in ps[0].grad.tolist())


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("p", NORMS)
def test_total_norm_and_clip_match_torch(dtype, p):
    arrs = arrays(4)
    jd, td = getattr(janus, dtype), getattr(torch, dtype)
    jn = U.get_total_norm([jt(a, jd) for a in arrs], p)
    tn = torch.nn.utils.get_total_norm([torch.tensor(a, dtype=td) for a in arrs], p)
    assert str(jn.dtype).split(".")[-1] == str(tn.dtype).split(".")[-1]
    np.testing.assert_allclose(float(jn), float(tn), rtol=1e-12 if dtype == "float64" else 2e-6)
    for max_norm in (float(tn) / 3, float(tn) * 3):
        jps = params_with_grads(arrs, jd)
        tps = [torch.nn.Parameter(torch.zeros(a.shape, dtype=td)) for a in arrs]
        for q, a in zip(tps, arrs):
            q.grad = torch.tensor(a, dtype=td)
        U.clip_grads_with_norm_(jps, max_norm, U.get_total_norm([q.grad for q in jps], p))
        torch.nn.utils.clip_grads_with_norm_(tps, max_norm, torch.nn.utils.get_total_norm([q.grad for q in tps], p))
        for jq, tq in zip(jps, tps):
            np.testing.assert_allclose(jq.grad.numpy(), tq.grad.numpy(), rtol=1e-12 if dtype == "float64" else 2e-6)


@needs_torch
def test_total_norm_mixed_dtypes_match_torch():
    a, b = np.array([1.0, -2.0]), np.array([[3.0], [0.5]])
    jn = U.get_total_norm([jt(a, janus.float32), jt(b, janus.float64)])
    tn = torch.nn.utils.get_total_norm([torch.tensor(a, dtype=torch.float32), torch.tensor(b)])
    assert jn.dtype == janus.float64 and tn.dtype == torch.float64
    np.testing.assert_allclose(float(jn), float(tn), rtol=1e-7)


@needs_torch
@pytest.mark.parametrize("bad", [math.nan, INF])
@pytest.mark.parametrize("p", [2.0, INF, 1.0])
def test_nonfinite_matches_torch(bad, p):
    vals = [[1.0, bad], [2.0, -3.0]]
    jn = float(U.get_total_norm([jt(v) for v in vals], p))
    tn = float(torch.nn.utils.get_total_norm([torch.tensor(v, dtype=torch.float64) for v in vals], p))
    assert (math.isnan(jn) and math.isnan(tn)) or jn == tn
    with pytest.raises(RuntimeError) as je:
        U.get_total_norm([jt(v) for v in vals], p, True)
    with pytest.raises(RuntimeError) as te:
        torch.nn.utils.get_total_norm([torch.tensor(v) for v in vals], p, True)
    assert str(je.value) == str(te.value)
    jps = params_with_grads(vals)
    tps = [torch.nn.Parameter(torch.zeros(2, dtype=torch.float64)) for _ in vals]
    for q, v in zip(tps, vals):
        q.grad = torch.tensor(v, dtype=torch.float64)
    U.clip_grads_with_norm_(jps, 1.0, U.get_total_norm([q.grad for q in jps], p))
    torch.nn.utils.clip_grads_with_norm_(tps, 1.0, torch.nn.utils.get_total_norm([q.grad for q in tps], p))
    for jq, tq in zip(jps, tps):
        np.testing.assert_array_equal(jq.grad.numpy(), tq.grad.numpy())  # NaN in the same places


# ------------------------------------------------------------ fusion
def _bn(c, dtype, rng, affine=True, cls=nn.BatchNorm2d, eps=1e-3):
    bn = cls(c, eps=eps, affine=affine, dtype=dtype)
    with janus.no_grad():
        bn.running_mean.copy_(jt(rng.standard_normal(c), dtype))
        bn.running_var.copy_(jt(rng.uniform(0.2, 3.0, c), dtype))
        if affine:
            bn.weight.copy_(jt(rng.standard_normal(c), dtype))
            bn.bias.copy_(jt(rng.standard_normal(c), dtype))
    return bn.eval()


def _rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return np.abs(a - b).max() / max(np.abs(b).max(), 1e-300)


CONV_CASES = [dict(bias=True), dict(bias=False), dict(bias=True, groups=2, stride=2, padding=1),
              dict(bias=True, affine=False), dict(bias=True, dilation=2, padding=2)]


@pytest.mark.parametrize("case", CONV_CASES, ids=[str(c) for c in CONV_CASES])
def test_fuse_conv_bn_eval_output(case):
    rng = np.random.default_rng(5)
    case = dict(case)
    affine = case.pop("affine", True)
    f64 = janus.float64
    conv = nn.Conv2d(4, 6, 3, dtype=f64, **case).eval()
    bn = _bn(6, f64, rng, affine)
    x = jt(rng.standard_normal((2, 4, 7, 7)), f64)
    w_before = conv.weight.numpy().copy()
    fused = U.fuse_conv_bn_eval(conv, bn)
    assert type(fused) is nn.Conv2d and fused is not conv
    assert fused.weight.shape == conv.weight.shape and fused.bias.shape == (6,)
    assert (fused.stride, fused.padding, fused.dilation, fused.groups) == (conv.stride, conv.padding, conv.dilation,
                                                                            conv.groups)
    assert isinstance(fused.weight, nn.Parameter) and isinstance(fused.bias, nn.Parameter)
    assert fused.weight.is_leaf and fused.weight.requires_grad
    assert fused.bias.requires_grad == case["bias"]  # a zero bias made up for the fusion does not train (torch)
    np.testing.assert_array_equal(conv.weight.numpy(), w_before)  # the original is untouched
    assert (conv.bias is None) == (not case["bias"])
    with janus.no_grad():
        ref = bn(conv(x)).numpy()
        got = fused(x).numpy()
    assert _rel(got, ref) < 1e-10
    # closed form of the weights
    scale = (bn.weight.numpy() if affine else 1.0) / np.sqrt(bn.running_var.numpy() + bn.eps)
    np.testing.assert_allclose(fused.weight.numpy(), w_before * scale[:, None, None, None], rtol=1e-12)


def test_fuse_conv_bn_weights_transpose_output():
    rng = np.random.default_rng(6)
    f64 = janus.float64
    conv = nn.ConvTranspose2d(3, 5, 3, stride=2, dtype=f64).eval()
    bn = _bn(5, f64, rng)
    x = jt(rng.standard_normal((2, 3, 4, 4)), f64)
    fused = U.fuse_conv_bn_eval(conv, bn, transpose=True)
    assert type(fused) is nn.ConvTranspose2d and fused.weight.shape == (3, 5, 3, 3)
    with janus.no_grad():
        assert _rel(fused(x).numpy(), bn(conv(x)).numpy()) < 1e-10


def test_fuse_conv_bn_weights_dtypes_and_none():
    rng = np.random.default_rng(7)
    w = jt(rng.standard_normal((4, 2, 1, 1)), janus.float32)
    rm, rv = jt(rng.standard_normal(4)), jt(rng.uniform(0.5, 2, 4))
    fw, fb = U.fuse_conv_bn_weights(w, None, rm, rv, 1e-5, None, None)
    assert fw.dtype == fb.dtype == janus.float32 and not fb.requires_grad
    s = 1 / np.sqrt(rv.numpy() + 1e-5)
    np.testing.assert_allclose(fw.numpy(), w.numpy() * s[:, None, None, None], rtol=1e-6)
    np.testing.assert_allclose(fb.numpy(), -rm.numpy() * s, rtol=1e-6)
    w.requires_grad_(False)
    fw, _ = U.fuse_conv_bn_weights(w, None, rm, rv, 1e-5, None, None)
    assert not fw.requires_grad


@pytest.mark.parametrize("bias", [True, False])
def test_fuse_linear_bn_eval_output(bias):
    rng = np.random.default_rng(8)
    f64 = janus.float64
    lin = nn.Linear(5, 3, bias=bias, dtype=f64).eval()
    bn = _bn(3, f64, rng, cls=nn.BatchNorm1d)
    x = jt(rng.standard_normal((6, 5)), f64)
    fused = U.fuse_linear_bn_eval(lin, bn)
    assert type(fused) is nn.Linear and fused is not lin and fused.weight.shape == (3, 5)
    assert fused.bias.requires_grad == bias
    with janus.no_grad():
        assert _rel(fused(x).numpy(), bn(lin(x)).numpy()) < 1e-10
    scale = bn.weight.numpy() / np.sqrt(bn.running_var.numpy() + bn.eps)
    np.testing.assert_allclose(fused.weight.numpy(), lin.weight.numpy() * scale[:, None], rtol=1e-12)


def test_fusion_errors():
    conv, bn = nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3)
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        U.fuse_conv_bn_eval(conv, bn.eval())
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        U.fuse_conv_bn_eval(conv.eval(), bn.train())
    with pytest.raises(AssertionError, match="bn.running_mean and bn.running_var must not be None"):
        U.fuse_conv_bn_eval(conv.eval(), nn.BatchNorm2d(3, track_running_stats=False).eval())
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        U.fuse_linear_bn_eval(nn.Linear(2, 3), nn.BatchNorm1d(3).eval())
    with pytest.raises(AssertionError, match=r"linear.out_features=3 and bn.num_features=4"):
        U.fuse_linear_bn_eval(nn.Linear(2, 3).eval(), nn.BatchNorm1d(4).eval())
    fused = U.fuse_linear_bn_eval(nn.Linear(2, 3).eval(), nn.BatchNorm1d(1).eval())  # one channel broadcasts
    assert fused.weight.shape == (3, 2)


def _to_torch(m, tm):
    with torch.no_grad():
        for name, t in list(tm.named_parameters()) + list(tm.named_buffers()):
            src = dict(list(m.named_parameters()) + list(m.named_buffers()))[name]
            t.copy_(torch.tensor(src.numpy()))
    return tm.eval()


@needs_torch
@pytest.mark.parametrize("case", CONV_CASES, ids=[str(c) for c in CONV_CASES])
def test_fuse_conv_bn_matches_torch(case):
    rng = np.random.default_rng(9)
    case = dict(case)
    affine = case.pop("affine", True)
    f64 = janus.float64
    conv = nn.Conv2d(4, 6, 3, dtype=f64, **case).eval()
    bn = _bn(6, f64, rng, affine)
    tconv = _to_torch(conv, torch.nn.Conv2d(4, 6, 3, dtype=torch.float64, **case))
    tbn = _to_torch(bn, torch.nn.BatchNorm2d(6, eps=bn.eps, affine=affine, dtype=torch.float64))
    jf, tf = U.fuse_conv_bn_eval(conv, bn), torch.nn.utils.fuse_conv_bn_eval(tconv, tbn)
    np.testing.assert_allclose(jf.weight.numpy(), tf.weight.detach().numpy(), rtol=1e-13, atol=0)
    np.testing.assert_allclose(jf.bias.numpy(), tf.bias.detach().numpy(), rtol=1e-13, atol=1e-15)
    assert (jf.weight.requires_grad, jf.bias.requires_grad) == (tf.weight.requires_grad, tf.bias.requires_grad)
    x = rng.standard_normal((2, 4, 6, 6))
    with janus.no_grad(), torch.no_grad():
        np.testing.assert_allclose(jf(jt(x)).numpy(), tf(torch.tensor(x)).numpy(), rtol=1e-10, atol=1e-12)
    # transpose=True, the raw weights function, and float32
    w, b = rng.standard_normal((3, 6, 2, 2)), rng.standard_normal(6)
    rm, rv, bw, bb = rng.standard_normal(6), rng.uniform(0.1, 2, 6), rng.standard_normal(6), rng.standard_normal(6)
    for transpose, dt in ((True, "float64"), (False, "float32")):
        ww = w if transpose else w.transpose(1, 0, 2, 3).copy()
        jd, td = getattr(janus, dt), getattr(torch, dt)
        jw, jb = U.fuse_conv_bn_weights(jt(ww, jd), jt(b, jd), jt(rm, jd), jt(rv, jd), 1e-5, jt(bw, jd), jt(bb, jd),
                                        transpose)
        tw, tb = torch.nn.utils.fuse_conv_bn_weights(*(torch.tensor(a, dtype=td) for a in (ww, b, rm, rv)), 1e-5,
                                                     torch.tensor(bw, dtype=td), torch.tensor(bb, dtype=td), transpose)
        tol = 1e-13 if dt == "float64" else 1e-6
        np.testing.assert_allclose(jw.numpy(), tw.detach().numpy(), rtol=tol)
        np.testing.assert_allclose(jb.numpy(), tb.detach().numpy(), rtol=tol, atol=tol)


@needs_torch
@pytest.mark.parametrize("bias", [True, False])
def test_fuse_linear_bn_matches_torch(bias):
    rng = np.random.default_rng(10)
    f64 = janus.float64
    lin = nn.Linear(5, 3, bias=bias, dtype=f64).eval()
    bn = _bn(3, f64, rng, cls=nn.BatchNorm1d)
    tlin = _to_torch(lin, torch.nn.Linear(5, 3, bias=bias, dtype=torch.float64))
    tbn = _to_torch(bn, torch.nn.BatchNorm1d(3, eps=bn.eps, dtype=torch.float64))
    jf, tf = U.fuse_linear_bn_eval(lin, bn), torch.nn.utils.fuse_linear_bn_eval(tlin, tbn)
    np.testing.assert_allclose(jf.weight.numpy(), tf.weight.detach().numpy(), rtol=1e-13)
    np.testing.assert_allclose(jf.bias.numpy(), tf.bias.detach().numpy(), rtol=1e-13, atol=1e-15)
    assert (jf.weight.requires_grad, jf.bias.requires_grad) == (tf.weight.requires_grad, tf.bias.requires_grad)
    # error messages are torch's
    for args in ((nn.Linear(2, 3).eval(), nn.BatchNorm1d(4).eval()),):
        with pytest.raises(AssertionError) as je:
            U.fuse_linear_bn_eval(*args)
        with pytest.raises(AssertionError) as te:
            torch.nn.utils.fuse_linear_bn_eval(torch.nn.Linear(2, 3).eval(), torch.nn.BatchNorm1d(4).eval())
        assert str(je.value) == str(te.value)


# ------------------------------------------------------------ skip_init, memory format
def test_skip_init():
    m = U.skip_init(nn.Linear, 5, 3)
    assert type(m) is nn.Linear and m.weight.shape == (3, 5) and m.bias.shape == (3,)
    m = U.skip_init(nn.Linear, in_features=6, out_features=1, bias=False)
    assert m.weight.shape == (1, 6) and m.bias is None
    c = U.skip_init(nn.Conv2d, 3, 8, 3, device="cpu")
    assert type(c) is nn.Conv2d and c.weight.shape == (8, 3, 3, 3)
    b = U.skip_init(nn.BatchNorm2d, 4, device="cpu")
    assert b.running_var.shape == (4,)
    out = m(janus.ones(2, 6))
    assert out.shape == (2, 1)
    with pytest.raises(RuntimeError, match="Expected a Module; got"):
        U.skip_init(dict)


def test_skip_init_draws_nothing():
    # as torch's (meta tensors draw nothing), the global random stream is where it was
    janus.manual_seed(31)
    ref = janus.rand(5).tolist()
    janus.manual_seed(31)
    U.skip_init(nn.Linear, 50, 40)
    U.skip_init(nn.Conv2d, 3, 8, 3)
    assert janus.rand(5).tolist() == ref
    janus.manual_seed(31)
    nn.Linear(50, 40)  # whereas constructing normally does draw
    assert janus.rand(5).tolist() != ref


def test_convert_conv2d_weight_memory_format_is_identity():
    model = nn.Sequential(nn.Conv2d(2, 3, 3), nn.ReLU(), nn.Conv2d(3, 1, 1))
    before = [p.numpy().copy() for p in model.parameters()]
    weights = [p for p in model.parameters()]
    assert U.convert_conv2d_weight_memory_format(model, "channels_last") is model
    assert all(a is b for a, b in zip(model.parameters(), weights))
    for p, b in zip(model.parameters(), before):
        np.testing.assert_array_equal(p.numpy(), b)


def test_parameters_vector_round_trip():
    m = nn.Linear(3, 2)
    v = U.parameters_to_vector(m.parameters())
    assert v.shape == (8,)
    np.testing.assert_array_equal(v.numpy(), np.concatenate([m.weight.numpy().ravel(), m.bias.numpy()]))
    U.vector_to_parameters(janus.arange(8, dtype=janus.float32), m.parameters())
    assert m.weight.tolist() == [[0, 1, 2], [3, 4, 5]] and m.bias.tolist() == [6, 7]
    with pytest.raises(TypeError, match="expected torch.Tensor, but got"):
        U.vector_to_parameters([1.0] * 8, m.parameters())


@needs_torch
def test_exports_match_torch():
    names = ["get_total_norm", "clip_grads_with_norm_", "fuse_conv_bn_eval", "fuse_conv_bn_weights",
             "fuse_linear_bn_eval", "fuse_linear_bn_weights", "skip_init", "convert_conv2d_weight_memory_format",
             "parameters_to_vector", "vector_to_parameters"]
    for name in names:
        assert name in torch.nn.utils.__all__
        assert callable(getattr(U, name))
    from janus.nn.utils.fusion import fuse_conv_bn_eval  # torch's module layout
    from janus.nn.utils.init import skip_init
    from janus.nn.utils.memory_format import convert_conv2d_weight_memory_format
    assert (fuse_conv_bn_eval, skip_init, convert_conv2d_weight_memory_format) == (
        U.fuse_conv_bn_eval, U.skip_init, U.convert_conv2d_weight_memory_format)
