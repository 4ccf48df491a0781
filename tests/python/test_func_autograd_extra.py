"""janus.func.functional_call (and nn.utils.stateless.functional_call),
janus.autograd.functional (jacobian, vjp, jvp), janus.autograd.gradcheck and
janus.distributions.Independent: against numpy formulas and central
differences always, and against PyTorch where it imports (those tests skip
without it)."""
import math

import numpy as np
import pytest

import janus
import janus.nn as nn
from janus import distributions as D
from janus.autograd import GradcheckError, gradcheck, gradgradcheck
from janus.autograd.functional import hessian, hvp, jacobian, jvp, vhp, vjp
from janus.func import functional_call

R = np.random.default_rng(2024)


def t(a, **kw):
    return janus.tensor(np.ascontiguousarray(a), **kw)


def npy(x):
    return x.detach().numpy()


def _torch():
    return pytest.importorskip("torch")


def _copy_weights(jm, tm):
    """The torch module's parameters and buffers copied into the janus one."""
    with janus.no_grad():
        for (n, p) in tm.named_parameters():
            jm.get_parameter(n).copy_(t(p.detach().numpy()))
        for (n, b) in tm.named_buffers():
            jm.get_buffer(n).copy_(t(b.detach().numpy()))


class _MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.fc2 = nn.Linear(4, 2)

    def forward(self, x, scale=1.0):
        return self.fc2(self.fc1(x).relu()) * scale


def _torch_mlp():
    torch = _torch()

    class MLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(3, 4)
            self.fc2 = torch.nn.Linear(4, 2)

        def forward(self, x, scale=1.0):
            return self.fc2(self.fc1(x).relu()) * scale
    return MLP()


# ---------------------------------------------------------------- functional_call

def test_functional_call_uses_given_tensors_and_restores():
    m = nn.Linear(3, 2)
    orig_w, orig_b = m.weight, m.bias
    w0, b0 = npy(m.weight).copy(), npy(m.bias).copy()
    wn, bn = R.standard_normal((2, 3)).astype(np.float32), R.standard_normal(2).astype(np.float32)
    W, B = t(wn, requires_grad=True), t(bn, requires_grad=True)
    xn = R.standard_normal((5, 3)).astype(np.float32)
    y = functional_call(m, {"weight": W, "bias": B}, (t(xn),))
    np.testing.assert_allclose(npy(y), xn @ wn.T + bn, rtol=1e-5, atol=1e-6)
    (y * y).sum().backward()
    g = 2 * (xn @ wn.T + bn)
    np.testing.assert_allclose(W.grad.numpy(), g.T @ xn, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(B.grad.numpy(), g.sum(0), rtol=1e-4, atol=1e-5)
    # the module's own parameters are back, untouched and without gradient
    assert m.weight is orig_w and m.bias is orig_b and m._parameters["weight"] is orig_w
    assert isinstance(m.weight, nn.Parameter)
    assert m.weight.grad is None and m.bias.grad is None
    np.testing.assert_array_equal(npy(m.weight), w0)
    np.testing.assert_array_equal(npy(m.bias), b0)
    # a name left out keeps the module's own tensor; args may be one value, kwargs given
    y2 = functional_call(m, {"weight": W}, t(xn))
    np.testing.assert_allclose(npy(y2), xn @ wn.T + b0, rtol=1e-5, atol=1e-6)
    mlp = _MLP()
    params = {k: v.detach().clone() for k, v in mlp.named_parameters()}
    np.testing.assert_allclose(npy(functional_call(mlp, params, (t(xn),), {"scale": 3.0})),
                               3 * npy(mlp(t(xn))), rtol=1e-5, atol=1e-6)


def test_functional_call_matches_torch_outputs_and_gradients():
    torch = _torch()
    tm, jm = _torch_mlp(), _MLP()
    _copy_weights(jm, tm)
    xn = R.standard_normal((6, 3)).astype(np.float32)
    shift = {n: R.standard_normal(tuple(p.shape)).astype(np.float32) * 0.1 for n, p in tm.named_parameters()}
    # the given tensors are computed from leaves: gradients reach the leaves through them
    tl = {n: torch.tensor(v, requires_grad=True) for n, v in shift.items()}
    jl = {n: t(v, requires_grad=True) for n, v in shift.items()}
    tp = {n: p + tl[n] for n, p in tm.named_parameters()}
    jp = {n: p + jl[n] for n, p in jm.named_parameters()}
    yt = torch.func.functional_call(tm, tp, (torch.tensor(xn),), {"scale": 2.0})
    yj = functional_call(jm, jp, (t(xn),), {"scale": 2.0})
    np.testing.assert_allclose(npy(yj), yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    yt.square().sum().backward()
    yj.square().sum().backward()
    for n in shift:
        np.testing.assert_allclose(jl[n].grad.numpy(), tl[n].grad.numpy(), rtol=1e-4, atol=1e-5)
        # the module's parameters were part of the given tensors' graph in both
        np.testing.assert_allclose(jm.get_parameter(n).grad.numpy(), tm.get_parameter(n).grad.numpy(),
                                   rtol=1e-4, atol=1e-5)


def test_functional_call_batchnorm_buffers_swapped_and_restored():
    bn = nn.BatchNorm1d(3, momentum=0.25)
    xn = R.standard_normal((8, 3)).astype(np.float32) * 2 + 1
    rm0, rv0 = R.standard_normal(3).astype(np.float32), R.uniform(0.5, 2, 3).astype(np.float32)
    rm, rv, nbt = t(rm0), t(rv0), janus.tensor(5, dtype=janus.int64)
    own = {k: npy(v).copy() for k, v in bn.named_buffers()}
    own_ids = {k: id(v) for k, v in bn.named_buffers()}
    bufs = {"running_mean": rm, "running_var": rv, "num_batches_tracked": nbt}
    y = functional_call(bn, bufs, (t(xn),))
    mean, var = xn.mean(0), xn.var(0)
    np.testing.assert_allclose(npy(y), (xn - mean) / np.sqrt(var + bn.eps), rtol=1e-4, atol=1e-5)
    # the given buffers were updated in place; the module's own are untouched
    np.testing.assert_allclose(rm.numpy(), 0.75 * rm0 + 0.25 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rv.numpy(), 0.75 * rv0 + 0.25 * xn.var(0, ddof=1), rtol=1e-5, atol=1e-6)
    assert int(nbt) == 6 and bufs["running_mean"] is rm
    for k, v in bn.named_buffers():
        assert id(v) == own_ids[k]
        np.testing.assert_array_equal(npy(v), own[k])
    # eval mode normalizes with the given statistics
    bn.eval()
    y = functional_call(bn, {"running_mean": t(rm0), "running_var": t(rv0)}, t(xn))
    np.testing.assert_allclose(npy(y), (xn - rm0) / np.sqrt(rv0 + bn.eps), rtol=1e-4, atol=1e-5)


def test_functional_call_batchnorm_matches_torch():
    torch = _torch()
    tb, jb = torch.nn.BatchNorm1d(3), nn.BatchNorm1d(3)
    xn = R.standard_normal((8, 3)).astype(np.float32)
    rm0, rv0 = R.standard_normal(3).astype(np.float32), R.uniform(0.5, 2, 3).astype(np.float32)
    tw = torch.tensor(R.standard_normal(3).astype(np.float32), requires_grad=True)
    jw = t(tw.detach().numpy(), requires_grad=True)
    tbufs = {"running_mean": torch.tensor(rm0), "running_var": torch.tensor(rv0), "weight": tw}
    jbufs = {"running_mean": t(rm0), "running_var": t(rv0), "weight": jw}
    yt = torch.func.functional_call(tb, tbufs, torch.tensor(xn))
    yj = functional_call(jb, jbufs, t(xn))
    np.testing.assert_allclose(npy(yj), yt.detach().numpy(), rtol=1e-4, atol=1e-5)
    for k in ("running_mean", "running_var"):
        np.testing.assert_allclose(npy(jbufs[k]), tbufs[k].numpy(), rtol=1e-5, atol=1e-6)
    yt.pow(3).sum().backward()
    yj.pow(3).sum().backward()
    np.testing.assert_allclose(jw.grad.numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(npy(jb.running_mean), np.zeros(3))
    # num_batches_tracked was not given: the module's own counts the call, in both
    assert int(jb.num_batches_tracked) == int(tb.num_batches_tracked) == 1


def test_functional_call_strict_keys():
    m = nn.Linear(2, 2)
    x = janus.ones(1, 2)
    with pytest.raises(RuntimeError) as e:
        functional_call(m, {"weight": janus.ones(2, 2), "foo": janus.ones(1)}, (x,), strict=True)
    want = "Error(s) in reparametrizing for Linear:\n\tUnexpected key(s): 'foo'.\n\tMissing key(s): 'bias'."
    assert str(e.value) == want
    assert not hasattr(m, "foo") and isinstance(m.weight, nn.Parameter)
    y = functional_call(m, {"weight": janus.ones(2, 2), "bias": janus.zeros(2)}, (x,), strict=True)
    np.testing.assert_allclose(npy(y), [[2.0, 2.0]])
    # without strict, an unknown name is a plain attribute for the call only
    seen = []
    with m.register_forward_hook(lambda mod, args, out: seen.append(npy(mod.foo).tolist())):
        functional_call(m, {"foo": janus.full((1,), 7.0)}, (x,))
    assert seen == [[7.0]] and not hasattr(m, "foo")
    torch = pytest.importorskip("torch")
    tm = torch.nn.Linear(2, 2)
    with pytest.raises(RuntimeError) as et:
        torch.func.functional_call(tm, {"weight": torch.ones(2, 2), "foo": torch.ones(1)}, (torch.ones(1, 2),),
                                   strict=True)
    assert str(et.value) == want


class _Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(2, 2, bias=False)
        self.b = nn.Linear(2, 2, bias=False)
        self.b.weight = self.a.weight

    def forward(self, x):
        return self.a(x) + self.b(x)


def test_functional_call_tie_weights():
    m = _Tied()
    x = t(np.array([[1.0, 2.0]], np.float32))
    w = npy(m.a.weight).copy()
    z = janus.zeros(2, 2)
    np.testing.assert_allclose(npy(functional_call(m, {"a.weight": z}, (x,))), [[0.0, 0.0]])
    np.testing.assert_allclose(npy(functional_call(m, {"a.weight": z}, (x,), tie_weights=False)),
                               npy(x) @ w.T, rtol=1e-6)
    # the same tensor under both names is fine; two different ones are not
    np.testing.assert_allclose(npy(functional_call(m, {"a.weight": z, "b.weight": z}, (x,))), [[0.0, 0.0]])
    with pytest.raises(ValueError) as e:
        functional_call(m, {"a.weight": z, "b.weight": janus.ones(2, 2)}, (x,))
    assert str(e.value) == ("functional_call got multiple values for keys ['a.weight', 'b.weight'], which are tied. "
                            "Consider using tie_weights=False")
    o = janus.ones(2, 2)
    np.testing.assert_allclose(npy(functional_call(m, {"a.weight": z, "b.weight": o}, (x,), tie_weights=False)),
                               [[3.0, 3.0]])
    # strict counts every name of a tied tensor; tie_weights supplies the other one
    functional_call(m, {"a.weight": z}, (x,), strict=True)
    with pytest.raises(RuntimeError, match="Missing key\\(s\\): 'b.weight'"):
        functional_call(m, {"a.weight": z}, (x,), strict=True, tie_weights=False)
    assert m.a.weight is m.b.weight and m.b._parameters["weight"] is m.a.weight


def test_functional_call_tie_weights_matches_torch():
    torch = _torch()

    class TiedT(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(2, 2, bias=False)
            self.b = torch.nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.a(x) + self.b(x)
    tm, jm = TiedT(), _Tied()
    with janus.no_grad():
        jm.a.weight.copy_(t(tm.a.weight.detach().numpy()))
    xn = np.array([[1.0, -2.0]], np.float32)
    zn = R.standard_normal((2, 2)).astype(np.float32)
    for tie in (True, False):
        yt = torch.func.functional_call(tm, {"a.weight": torch.tensor(zn)}, (torch.tensor(xn),), tie_weights=tie)
        yj = functional_call(jm, {"a.weight": t(zn)}, (t(xn),), tie_weights=tie)
        np.testing.assert_allclose(npy(yj), yt.detach().numpy(), rtol=1e-6)
    with pytest.raises(ValueError) as et:
        torch.func.functional_call(tm, {"a.weight": torch.zeros(2, 2), "b.weight": torch.ones(2, 2)},
                                   (torch.tensor(xn),))
    with pytest.raises(ValueError) as ej:
        functional_call(jm, {"a.weight": janus.zeros(2, 2), "b.weight": janus.ones(2, 2)}, (t(xn),))
    assert str(ej.value) == str(et.value)


def test_functional_call_restores_after_exception():
    class Boom(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)
            self.register_buffer("count", janus.zeros(1))

        def forward(self, x):
            self.count.add_(1)
            if float(x.sum()) > 0:
                raise ValueError("boom")
            return self.lin(x)
    m = Boom()
    w, b, c = m.lin.weight, m.lin.bias, m.count
    given = {"lin.weight": janus.zeros(2, 2), "count": janus.zeros(1), "extra": janus.ones(1)}
    with pytest.raises(ValueError, match="boom"):
        functional_call(m, given, (janus.ones(1, 2),))
    assert m.lin.weight is w and m.lin.bias is b and m.count is c and not hasattr(m, "extra")
    assert float(c) == 0.0 and float(given["count"]) == 1.0
    # a failing swap (a name under a missing submodule) leaves nothing swapped
    with pytest.raises(AttributeError, match="has no attribute `nope`"):
        functional_call(m, {"lin.weight": janus.zeros(2, 2), "nope.weight": janus.ones(1)}, (janus.ones(1, 2),))
    assert m.lin.weight is w
    with pytest.raises(TypeError, match="is not an instance of torch.Tensor"):
        functional_call(m, {"lin.weight": 3.0}, (janus.ones(1, 2),))
    assert m.lin.weight is w


def test_functional_call_writes_back_reassigned_tensors():
    class Counter(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("foo", janus.zeros(()))

        def forward(self, x):
            self.foo = self.foo + 1
            return x + self.foo
    m = Counter()
    a = {"foo": janus.zeros(())}
    out = functional_call(m, a, janus.ones(()))
    assert float(out) == 2.0 and float(m.foo) == 0.0 and float(a["foo"]) == 1.0


def test_functional_call_dict_sequences_and_checks():
    m = nn.Linear(2, 1)
    x = janus.ones(1, 2)
    y = functional_call(m, ({"weight": janus.ones(1, 2)}, {"bias": janus.full((1,), 0.5)}), (x,))
    assert float(y) == 2.5
    with pytest.raises(ValueError) as e:
        functional_call(m, ({"weight": janus.ones(1, 2)}, {"weight": janus.ones(1, 2)}), (x,))
    assert str(e.value) == "['weight'] appeared in multiple dictionaries; behavior of functional call is ambiguous"
    with pytest.raises(ValueError, match="Expected all elements of parameter_and_buffer_dicts to be dictionaries"):
        functional_call(m, [{"weight": janus.ones(1, 2)}, 3], (x,))
    with pytest.raises(ValueError) as e:
        functional_call(m, 3, (x,))
    assert str(e.value) == ("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                            "<class 'int'>")
    with pytest.raises(RuntimeError, match="The stateless API can't be used with nn.DataParallel module"):
        functional_call(nn.DataParallel(m), {}, (x,))


def test_stateless_functional_call_is_deprecated_but_works():
    from janus.nn.utils import stateless
    m = nn.Linear(2, 1)
    with pytest.warns(FutureWarning, match="torch.func.functional_call"):
        y = stateless.functional_call(m, {"weight": janus.ones(1, 2), "bias": janus.zeros(1)}, (janus.ones(1, 2),))
    assert float(y) == 2.0
    assert janus.nn.utils.stateless is stateless


def test_names_resolve_through_the_torch_alias():
    from janus import _torch_alias, check
    assert _torch_alias.resolve("torch.func") is janus.func
    assert _torch_alias.resolve("torch.nn.utils.stateless") is janus.nn.utils.stateless
    assert _torch_alias.resolve("torch.autograd.functional") is janus.autograd.functional
    for name in ("torch.func.functional_call", "torch.autograd.functional.jacobian", "torch.autograd.gradcheck",
                 "torch.autograd.gradgradcheck", "torch.distributions.Independent",
                 "torch.nn.utils.stateless.functional_call"):
        assert check.resolve(name) is None, name
    assert "torch.func.vmap is not supported by janus" in check.resolve("torch.func.vmap")


# ---------------------------------------------------------------- MAML

def _maml_numpy(w, xs, ts, xq, tq, lr):
    """First-order MAML for y = x @ w with a mean-squared loss: the outer
    gradient is the query loss's gradient at the adapted weights."""
    g = 2.0 / xs.shape[0] * xs.T @ (xs @ w - ts) / ts.shape[1]
    fast = w - lr * g
    return 2.0 / xq.shape[0] * xq.T @ (xq @ fast - tq) / tq.shape[1]


def test_maml_inner_step_gradients_numpy():
    m = nn.Linear(3, 2, bias=False)
    w = npy(m.weight).T.astype(np.float64)
    xs, ts = R.standard_normal((5, 3)).astype(np.float32), R.standard_normal((5, 2)).astype(np.float32)
    xq, tq = R.standard_normal((4, 3)).astype(np.float32), R.standard_normal((4, 2)).astype(np.float32)
    lr = 0.1
    params = dict(m.named_parameters())
    inner = ((m(t(xs)) - t(ts)) ** 2).mean()
    grads = janus.autograd.grad(inner, list(params.values()))
    fast = {n: p - lr * g for (n, p), g in zip(params.items(), grads)}
    outer = ((functional_call(m, fast, (t(xq),)) - t(tq)) ** 2).mean()
    outer.backward()
    want = _maml_numpy(w, xs.astype(np.float64), ts, xq.astype(np.float64), tq, lr)
    np.testing.assert_allclose(m.weight.grad.numpy(), want.T, rtol=1e-4, atol=1e-6)


def test_maml_inner_step_matches_torch():
    torch = _torch()
    tm, jm = _torch_mlp(), _MLP()
    _copy_weights(jm, tm)
    xs, ts = R.standard_normal((6, 3)).astype(np.float32), R.standard_normal((6, 2)).astype(np.float32)
    xq, tq = R.standard_normal((5, 3)).astype(np.float32), R.standard_normal((5, 2)).astype(np.float32)
    lr = 0.05

    def run(lib, model, wrap, fc):
        params = dict(model.named_parameters())
        for _ in range(2):  # two inner steps, each differentiable in the previous weights
            inner = ((fc(model, params, (wrap(xs),)) - wrap(ts)) ** 2).mean()
            # retain_graph: janus's grad with respect to non-leaf tensors (the second step's
            # weights) frees the graph behind them too, which torch keeps
            grads = lib.autograd.grad(inner, list(params.values()), retain_graph=True)
            params = {n: p - lr * g for (n, p), g in zip(params.items(), grads)}
        outer = ((fc(model, params, (wrap(xq),)) - wrap(tq)) ** 2).mean()
        outer.backward()
        return float(outer.detach()), {n: p.grad.numpy() for n, p in model.named_parameters()}
    lt, gt = run(torch, tm, torch.tensor, torch.func.functional_call)
    lj, gj = run(janus, jm, t, functional_call)
    assert abs(lt - lj) < 1e-5 * max(1.0, abs(lt))
    for n in gt:
        np.testing.assert_allclose(gj[n], gt[n], rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------- jacobian / vjp / jvp

def _f1(x):
    return (x.exp() * x.sin()).sum(-1) * 2 + x[..., 0]


def _f2(a, b):
    return a * b.sum(), (a @ b.reshape(3, 2)).tanh()


def _central(f, arrays, out_index=None, eps=1e-6):
    """Central-difference Jacobian of f (janus in, janus out) at the numpy
    arrays: [output][input], shapes out.shape + in.shape."""
    def ev(arrs):
        outs = f(*[t(a) for a in arrs])
        outs = outs if isinstance(outs, tuple) else (outs,)
        return [npy(o) for o in outs]
    base = ev(arrays)
    jac = [[np.zeros(o.shape + a.shape) for a in arrays] for o in base]
    for j, a in enumerate(arrays):
        for k in range(a.size):
            lo = [x.copy() for x in arrays]
            hi = [x.copy() for x in arrays]
            lo[j].reshape(-1)[k] -= eps
            hi[j].reshape(-1)[k] += eps
            for i, (ol, oh) in enumerate(zip(ev(lo), ev(hi))):
                idx = np.unravel_index(k, a.shape)
                jac[i][j][(Ellipsis,) + idx] = (oh - ol) / (2 * eps)
    return jac


def test_jacobian_against_central_differences():
    x = R.standard_normal((2, 3))
    J = jacobian(_f1, t(x))
    assert tuple(J.shape) == (2, 2, 3) and J.dtype == janus.float64 and not J.requires_grad
    np.testing.assert_allclose(npy(J), _central(_f1, [x])[0][0], rtol=1e-6, atol=1e-8)
    a, b = R.standard_normal(3), R.standard_normal(6)
    Jt = jacobian(_f2, (t(a), t(b)))
    num = _central(_f2, [a, b])
    assert isinstance(Jt, tuple) and len(Jt) == 2 and all(len(r) == 2 for r in Jt)
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(npy(Jt[i][j]), num[i][j], rtol=1e-6, atol=1e-8)
    # a tuple of one input gives a tuple back; vectorize gives the same values
    J1 = jacobian(_f1, (t(x),), vectorize=True)
    assert isinstance(J1, tuple) and len(J1) == 1
    np.testing.assert_allclose(npy(J1[0]), npy(J), rtol=1e-12)
    Jf = jacobian(_f1, t(x), vectorize=True, strategy="forward-mode")
    np.testing.assert_allclose(npy(Jf), npy(J), rtol=1e-12)


def test_jacobian_independent_inputs_and_strict():
    a, b = t(R.standard_normal(2)), t(R.standard_normal(3))
    J = jacobian(lambda u, v: u * 2, (a, b))
    np.testing.assert_allclose(npy(J[0]), 2 * np.eye(2))
    np.testing.assert_array_equal(npy(J[1]), np.zeros((2, 3)))
    with pytest.raises(RuntimeError) as e:
        jacobian(lambda u, v: u * 2, (a, b), strict=True)
    assert str(e.value) == "Output 0 of the user-provided function is independent of input 1. This is not allowed " \
                           "in strict mode."
    with pytest.raises(RuntimeError) as e:
        jacobian(lambda u: u.detach() * 2, a, strict=True)
    assert str(e.value).startswith("Output 0 of the user-provided function does not require gradients.")
    np.testing.assert_array_equal(npy(jacobian(lambda u: u.detach() * 2, a)), np.zeros((2, 2)))
    with pytest.raises(RuntimeError, match="`strict=True` and `vectorized=True` are not supported together"):
        jacobian(lambda u: u * 2, a, strict=True, vectorize=True)


def test_jacobian_argument_errors():
    x = t(R.standard_normal(3))
    with pytest.raises(NotImplementedError, match="create_graph=True needs higher-order gradients"):
        jacobian(_f1, x, create_graph=True)
    with pytest.raises(AssertionError, match='Expected strategy to be either "forward-mode" or "reverse-mode"'):
        jacobian(_f1, x, strategy="sideways")
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        jacobian(_f1, x, strategy="forward-mode")
    with pytest.raises(TypeError) as e:
        jacobian(_f1, (x, 3))
    assert str(e.value) == ("The inputs given to jacobian must be either a Tensor or a tuple of Tensors but the value "
                            "at index 1 has type <class 'int'>.")
    with pytest.raises(TypeError) as e:
        jacobian(lambda u: 3, x)
    assert str(e.value) == ("The outputs of the user-provided function given to jacobian must be either a Tensor or "
                            "a tuple of Tensors but the given outputs of the user-provided function has type "
                            "<class 'int'>.")
    for fn in (hessian, hvp, vhp):
        with pytest.raises(NotImplementedError, match="double backward"):
            fn(lambda u: u.sum(), x)


def test_jacobian_matches_torch():
    torch = _torch()
    a, b = R.standard_normal(3), R.standard_normal(6)
    Jj = jacobian(_f2, (t(a), t(b)))

    def f2t(a, b):
        return a * b.sum(), (a @ b.reshape(3, 2)).tanh()
    Jt = torch.autograd.functional.jacobian(f2t, (torch.tensor(a), torch.tensor(b)))
    for i in range(2):
        for j in range(2):
            assert tuple(Jj[i][j].shape) == tuple(Jt[i][j].shape)
            np.testing.assert_allclose(npy(Jj[i][j]), Jt[i][j].numpy(), rtol=1e-10, atol=1e-12)
    x = R.standard_normal((2, 3))
    Jt1 = torch.autograd.functional.jacobian(lambda u: (u.exp() * u.sin()).sum(-1) * 2 + u[..., 0], torch.tensor(x))
    np.testing.assert_allclose(npy(jacobian(_f1, t(x))), Jt1.numpy(), rtol=1e-10)
    # the strict-mode errors read the same
    with pytest.raises(RuntimeError) as et:
        torch.autograd.functional.jacobian(lambda u, v: u * 2, (torch.ones(2), torch.ones(3)), strict=True)
    with pytest.raises(RuntimeError) as ej:
        jacobian(lambda u, v: u * 2, (janus.ones(2), janus.ones(3)), strict=True)
    assert str(ej.value) == str(et.value)


def test_vjp_and_jvp():
    x = R.standard_normal((2, 3))
    v = R.standard_normal(2)
    out, g = vjp(_f1, t(x), t(v))
    J = _central(_f1, [x])[0][0]
    np.testing.assert_allclose(npy(out), npy(_f1(t(x))), rtol=1e-12)
    np.testing.assert_allclose(npy(g), np.tensordot(v, J, 1), rtol=1e-6, atol=1e-8)
    assert not out.requires_grad and not g.requires_grad
    # v may be left out for a one-element output
    s, gs = vjp(lambda u: (u * u).sum(), t(x))
    np.testing.assert_allclose(npy(gs), 2 * x, rtol=1e-12)
    with pytest.raises(RuntimeError) as e:
        vjp(_f1, t(x))
    assert str(e.value) == ("The vector v can only be None if the user-provided function returns a single Tensor "
                            "with a single element.")
    with pytest.raises(RuntimeError) as e:
        vjp(_f1, t(x), janus.ones(3, dtype=janus.float64))
    assert str(e.value).startswith("v has invalid size: should be ")
    with pytest.raises(RuntimeError, match="v is a tuple of invalid length: should be 2 but got 1"):
        vjp(_f2, (t(R.standard_normal(3)), t(R.standard_normal(6))), (janus.ones(3),))
    with pytest.raises(RuntimeError) as e:
        vjp(lambda u, w: u.sum(), (t(x), t(v)), strict=True)
    assert str(e.value) == "The output of the user-provided function is independent of input 1. This is not " \
                           "allowed in strict mode."
    _, (g0, g1) = vjp(lambda u, w: u.sum(), (t(x), t(v)))
    np.testing.assert_array_equal(npy(g1), np.zeros(2))
    with pytest.raises(NotImplementedError, match="create_graph=True"):
        vjp(_f1, t(x), t(v), create_graph=True)
    u = R.standard_normal((2, 3))
    out, jv = jvp(_f1, t(x), t(u))
    np.testing.assert_allclose(npy(jv), np.tensordot(J, u, 2), rtol=1e-6, atol=1e-8)
    a, b = R.standard_normal(3), R.standard_normal(6)
    va, vb = R.standard_normal(3), R.standard_normal(6)
    (o1, o2), (j1, j2) = jvp(_f2, (t(a), t(b)), (t(va), t(vb)))
    num = _central(_f2, [a, b])
    np.testing.assert_allclose(npy(j1), num[0][0] @ va + num[0][1] @ vb, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(npy(j2), np.tensordot(num[1][0], va, 1) + np.tensordot(num[1][1], vb, 1),
                               rtol=1e-6, atol=1e-8)
    _, d = jvp(lambda z: z.exp() * 3, t(np.array([0.5])))
    np.testing.assert_allclose(npy(d), 3 * np.exp([0.5]), rtol=1e-12)


def test_vjp_jvp_match_torch():
    torch = _torch()
    a, b = R.standard_normal(3), R.standard_normal(6)
    v1, v2 = R.standard_normal(3), R.standard_normal(2)

    def f2t(a, b):
        return a * b.sum(), (a @ b.reshape(3, 2)).tanh()
    (tj1, tj2), (tg1, tg2) = torch.autograd.functional.vjp(f2t, (torch.tensor(a), torch.tensor(b)),
                                                           (torch.tensor(v1), torch.tensor(v2)))
    (jo1, jo2), (jg1, jg2) = vjp(_f2, (t(a), t(b)), (t(v1), t(v2)))
    for x, y in ((jo1, tj1), (jo2, tj2), (jg1, tg1), (jg2, tg2)):
        np.testing.assert_allclose(npy(x), y.numpy(), rtol=1e-10, atol=1e-12)
    ua, ub = R.standard_normal(3), R.standard_normal(6)
    _, (tv1, tv2) = torch.autograd.functional.jvp(f2t, (torch.tensor(a), torch.tensor(b)),
                                                  (torch.tensor(ua), torch.tensor(ub)))
    _, (jv1, jv2) = jvp(_f2, (t(a), t(b)), (t(ua), t(ub)))
    np.testing.assert_allclose(npy(jv1), tv1.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(npy(jv2), tv2.numpy(), rtol=1e-10, atol=1e-12)
    with pytest.raises(RuntimeError) as et:
        torch.autograd.functional.vjp(lambda u: u * 2, torch.ones(3), torch.ones(2))
    with pytest.raises(RuntimeError) as ej:
        vjp(lambda u: u * 2, janus.ones(3), janus.ones(2))
    assert str(ej.value).replace("janus.", "torch.") == str(et.value)


# ---------------------------------------------------------------- gradcheck

def _exp_fn(lib, wrong=False):
    class Exp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            y = x.exp() * k
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return (g * y * 0.5 if wrong else g * y), None
    return Exp


def _mul_fn(lib):
    class Mul(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b, a + b

        @staticmethod
        def backward(ctx, ga, gs):
            a, b = ctx.saved_tensors
            return ga * b + gs, ga * a + gs
    return Mul


def test_gradcheck_passes_on_correct_gradients():
    x = t(R.standard_normal((2, 3)), requires_grad=True)
    y = t(R.standard_normal(3), requires_grad=True)
    assert gradcheck(lambda a, b: ((a * b).sin(), (a @ b).exp()), (x, y)) is True
    assert gradcheck(lambda a: a.tanh().sum(0), x)
    # inputs that do not require grad, and non-tensor arguments, are left alone
    c = t(R.standard_normal(3))
    assert gradcheck(lambda a, s, b: a * s + b, (x, 2.0, c))
    # custom Functions, one and two outputs
    assert gradcheck(_exp_fn(janus).apply, (x, 1.5))
    assert gradcheck(_mul_fn(janus).apply, (t(R.standard_normal(4), requires_grad=True),
                                             t(R.standard_normal(4), requires_grad=True)))
    # nn.functional ops through a module
    lin = nn.Linear(3, 2).double()
    assert gradcheck(lambda a, w, b: janus.nn.functional.linear(a, w, b).relu(), (x, lin.weight, lin.bias))


def test_gradcheck_fails_with_torch_message_on_a_wrong_backward():
    x = t(np.array([0.1, -0.4, 0.7]), requires_grad=True)
    bad = _exp_fn(janus, wrong=True)
    with pytest.raises(GradcheckError) as e:
        gradcheck(bad.apply, (x, 1.0))
    assert isinstance(e.value, RuntimeError)
    msg = str(e.value)
    assert msg.startswith("Jacobian mismatch for output 0 with respect to input 0,\nnumerical:tensor([[")
    assert "\nanalytical:tensor([[" in msg and msg.endswith("\n")
    num_part = msg.split("numerical:")[1].split("\nanalytical:")[0]
    ana_part = msg.split("\nanalytical:")[1]
    d = np.exp([0.1, -0.4, 0.7])
    assert f"{d[1]:.4f}" in num_part and f"{d[1] / 2:.4f}" in ana_part
    assert gradcheck(bad.apply, (x, 1.0), raise_exception=False) is False
    # a wrong derivative of the second input of two, second output of two
    class Half(janus.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a + b, a * b

        @staticmethod
        def backward(ctx, g1, g2):
            a, b = ctx.saved_tensors
            return g1 + g2 * b, g1 + g2 * a * 2
    with pytest.raises(GradcheckError, match="^Jacobian mismatch for output 1 with respect to input 1,\n"):
        gradcheck(Half.apply, (t(R.standard_normal(2), requires_grad=True),
                               t(R.standard_normal(2), requires_grad=True)))


def test_gradcheck_message_matches_torch():
    torch = _torch()
    xn = np.array([0.1, -0.4, 0.7])
    from torch.autograd.gradcheck import GradcheckError as TorchGradcheckError
    with pytest.raises(TorchGradcheckError) as et:
        torch.autograd.gradcheck(_exp_fn(torch, wrong=True).apply, (torch.tensor(xn, requires_grad=True), 1.0))
    with pytest.raises(GradcheckError) as ej:
        gradcheck(_exp_fn(janus, wrong=True).apply, (t(xn, requires_grad=True), 1.0))
    assert str(ej.value).replace("janus.", "torch.") == str(et.value)
    # and both pass on the correct Function
    assert torch.autograd.gradcheck(_exp_fn(torch).apply, (torch.tensor(xn, requires_grad=True), 1.0))
    assert gradcheck(_exp_fn(janus).apply, (t(xn, requires_grad=True), 1.0))


def test_gradcheck_other_checks():
    x = t(R.standard_normal(3), requires_grad=True)

    # right for every one-hot grad_output, but nonzero for a zero one
    class NotMul(janus.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            a, = ctx.saved_tensors
            return g * 2 * a + (g.abs().sum() == 0).to(g.dtype)
    with pytest.raises(GradcheckError) as e:
        gradcheck(NotMul.apply, (x,))
    assert str(e.value) == "backward not multiplied by grad_output"

    # a backward that differs between runs
    class Noisy(janus.autograd.Function):
        calls = 0

        @staticmethod
        def forward(ctx, a):
            return a * 3

        @staticmethod
        def backward(ctx, g):
            Noisy.calls += 1
            return g * (3 + 1e-9 * Noisy.calls)
    with pytest.raises(GradcheckError, match="^Backward is not reentrant") as e:
        gradcheck(Noisy.apply, (x,))
    assert "The tolerance for nondeterminism was 0.0." in str(e.value)
    assert gradcheck(Noisy.apply, (x,), nondet_tol=1e-6)

    with pytest.raises(ValueError) as e:
        gradcheck(lambda a: a * 2, (x.detach(),))
    assert str(e.value) == ("gradcheck expects at least one input tensor to require gradient, but none of them have "
                            "requires_grad=True.")
    with pytest.warns(UserWarning, match="Input #0 requires gradient and is not a double precision"):
        gradcheck(lambda a: a * 2, (janus.ones(3, requires_grad=True),), atol=1e-2, rtol=1e-2, eps=1e-3)
    e0 = janus.ones(1, dtype=janus.float64).expand(3).requires_grad_()
    with pytest.raises(RuntimeError, match="The 0th input has a dimension with stride 0"):
        gradcheck(lambda a: a * 2, (e0,))
    # no differentiable output: the numerical gradient must be zero
    assert gradcheck(lambda a: a.detach() * 0 + 1, (x,))
    with pytest.raises(GradcheckError, match="^Numerical gradient for function expected to be zero$"):
        gradcheck(lambda a: a.detach() * 2, (x,))
    with pytest.raises(NotImplementedError, match="double backward"):
        gradgradcheck(lambda a: a * a, (x,))
    with pytest.raises(NotImplementedError, match="forward-mode AD"):
        gradcheck(lambda a: a * 2, (x,), check_forward_ad=True)
    with pytest.raises(AssertionError, match="Expected at least one of check_forward_ad or check_backward_ad"):
        gradcheck(lambda a: a * 2, (x,), check_backward_ad=False)
    assert janus.autograd.gradcheck is gradcheck and issubclass(GradcheckError, RuntimeError)


# ---------------------------------------------------------------- Independent

def _normal_logpdf(x, loc, scale):
    return -((x - loc) ** 2) / (2 * scale ** 2) - np.log(scale) - 0.5 * math.log(2 * math.pi)


def test_independent_shapes_log_prob_entropy():
    loc, scale = R.standard_normal((2, 3, 4)), R.uniform(0.5, 2, (2, 3, 4))
    base = D.Normal(t(loc), t(scale))
    for n in (0, 1, 2, 3):
        d = D.Independent(base, n)
        assert tuple(d.batch_shape) == (2, 3, 4)[:3 - n] and tuple(d.event_shape) == (2, 3, 4)[3 - n:]
        assert isinstance(d.batch_shape, janus.Size) and isinstance(d.event_shape, janus.Size)
        x = R.standard_normal((5, 2, 3, 4))
        lp = _normal_logpdf(x, loc, scale)
        want = lp.reshape(lp.shape[:4 - n] + (-1,)).sum(-1) if n else lp
        np.testing.assert_allclose(npy(d.log_prob(t(x))), want, rtol=1e-12)
        ent = 0.5 + 0.5 * math.log(2 * math.pi) + np.log(scale)
        want = ent.reshape(ent.shape[:3 - n] + (-1,)).sum(-1) if n else ent
        np.testing.assert_allclose(npy(d.entropy()), want, rtol=1e-12)
        assert tuple(d.sample((7,)).shape) == (7, 2, 3, 4) and tuple(d.rsample().shape) == (2, 3, 4)
        np.testing.assert_array_equal(npy(d.mean), loc)
        np.testing.assert_allclose(npy(d.variance), scale ** 2, rtol=1e-12)
        np.testing.assert_allclose(npy(d.stddev), scale, rtol=1e-12)
        np.testing.assert_array_equal(npy(d.mode), loc)
    assert repr(D.Independent(base, 2)) == f"Independent({base!r}, 2)"
    with pytest.raises(ValueError) as e:
        D.Independent(base, 4)
    assert str(e.value) == "Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), actual 4 vs 3"
    # an Independent of an Independent
    dd = D.Independent(D.Independent(base, 1), 1)
    assert tuple(dd.batch_shape) == (2,) and tuple(dd.event_shape) == (3, 4)
    x = R.standard_normal((2, 3, 4))
    np.testing.assert_allclose(npy(dd.log_prob(t(x))), _normal_logpdf(x, loc, scale).sum((1, 2)), rtol=1e-12)


def test_independent_rsample_gradients_and_flags():
    loc = t(R.standard_normal((3, 2)), requires_grad=True)
    scale = t(R.uniform(0.5, 2, (3, 2)), requires_grad=True)
    d = D.Independent(D.Normal(loc, scale), 1)
    assert d.has_rsample and not d.has_enumerate_support
    janus.manual_seed(3)
    s = d.rsample((4,))
    assert tuple(s.shape) == (4, 3, 2) and s.requires_grad
    s.sum().backward()
    eps = (npy(s) - npy(loc)) / npy(scale)
    np.testing.assert_allclose(loc.grad.numpy(), np.full((3, 2), 4.0), rtol=1e-12)
    np.testing.assert_allclose(scale.grad.numpy(), eps.sum(0), rtol=1e-10)
    assert not d.sample((2,)).requires_grad
    # log_prob of an rsample differentiates in the parameters
    loc.grad = None
    d = D.Independent(D.Normal(loc, scale), 1)
    lp = d.log_prob(d.rsample()).sum()
    lp.backward()
    assert loc.grad is not None and tuple(loc.grad.shape) == (3, 2)
    b = D.Categorical(probs=t(np.array([[0.2, 0.8], [0.5, 0.5]])))
    db = D.Independent(b, 0)
    assert db.has_enumerate_support and not db.has_rsample
    assert tuple(db.enumerate_support().shape) == tuple(b.enumerate_support().shape)
    with pytest.raises(NotImplementedError, match="Enumeration over cartesian product is not implemented"):
        D.Independent(b, 1).enumerate_support()


class _ExpandableNormal(D.Normal):
    def expand(self, batch_shape, _instance=None):
        shape = tuple(batch_shape)
        return _ExpandableNormal(self.loc.expand(shape), self.scale.expand(shape))


def test_independent_expand():
    loc, scale = R.standard_normal((1, 3)), R.uniform(0.5, 2, (1, 3))
    d = D.Independent(_ExpandableNormal(t(loc), t(scale)), 1)
    e = d.expand((4,))
    assert type(e) is D.Independent and e.reinterpreted_batch_ndims == 1
    assert tuple(e.batch_shape) == (4,) and tuple(e.event_shape) == (3,)
    assert tuple(e.base_dist.batch_shape) == (4, 3)
    x = R.standard_normal((4, 3))
    np.testing.assert_allclose(npy(e.log_prob(t(x))), _normal_logpdf(x, loc, scale).sum(-1), rtol=1e-12)
    with pytest.raises(NotImplementedError, match="Normal.expand is not implemented"):
        D.Independent(D.Normal(t(loc), t(scale)), 1).expand((4,))


def test_independent_kl_divergence():
    l1, s1 = R.standard_normal((2, 3)), R.uniform(0.5, 2, (2, 3))
    l2, s2 = R.standard_normal((2, 3)), R.uniform(0.5, 2, (2, 3))
    p = D.Independent(D.Normal(t(l1), t(s1)), 1)
    q = D.Independent(D.Normal(t(l2), t(s2)), 1)
    kl = np.log(s2 / s1) + (s1 ** 2 + (l1 - l2) ** 2) / (2 * s2 ** 2) - 0.5
    np.testing.assert_allclose(npy(D.kl_divergence(p, q)), kl.sum(-1), rtol=1e-10)
    with pytest.raises(NotImplementedError):
        D.kl_divergence(p, D.Independent(D.Normal(t(l2), t(s2)), 2))


def test_independent_matches_torch():
    torch = _torch()
    TD = torch.distributions
    loc, scale = R.standard_normal((2, 3, 4)), R.uniform(0.5, 2, (2, 3, 4))
    l2, s2 = R.standard_normal((2, 3, 4)), R.uniform(0.5, 2, (2, 3, 4))
    x = R.standard_normal((5, 2, 3, 4))
    for n in (0, 1, 2):
        tlo = torch.tensor(loc, requires_grad=True)
        jlo = t(loc, requires_grad=True)
        td = TD.Independent(TD.Normal(tlo, torch.tensor(scale)), n)
        jd = D.Independent(D.Normal(jlo, t(scale)), n)
        assert tuple(jd.batch_shape) == tuple(td.batch_shape) and tuple(jd.event_shape) == tuple(td.event_shape)
        assert jd.has_rsample == td.has_rsample and jd.has_enumerate_support == td.has_enumerate_support
        tl, jl = td.log_prob(torch.tensor(x)), jd.log_prob(t(x))
        np.testing.assert_allclose(npy(jl), tl.detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(npy(jd.entropy()), td.entropy().numpy(), rtol=1e-12)
        np.testing.assert_allclose(npy(jd.stddev), td.stddev.numpy(), rtol=1e-12)
        np.testing.assert_allclose(npy(jd.variance), td.variance.numpy(), rtol=1e-12)
        (tl.square().sum()).backward()
        (jl.square().sum()).backward()
        np.testing.assert_allclose(jlo.grad.numpy(), tlo.grad.numpy(), rtol=1e-10)
        assert tuple(jd.sample((6,)).shape) == tuple(td.sample((6,)).shape)
        tq = TD.Independent(TD.Normal(torch.tensor(l2), torch.tensor(s2)), n)
        jq = D.Independent(D.Normal(t(l2), t(s2)), n)
        np.testing.assert_allclose(npy(D.kl_divergence(jd, jq)), TD.kl_divergence(td, tq).detach().numpy(),
                                   rtol=1e-10)
    with pytest.raises(ValueError) as et:
        TD.Independent(TD.Normal(torch.zeros(2), torch.ones(2)), 2)
    with pytest.raises(ValueError) as ej:
        D.Independent(D.Normal(janus.zeros(2), janus.ones(2)), 2)
    assert str(ej.value) == str(et.value)
    # expand through a base that supports it: the same shapes as torch's
    te = TD.Independent(TD.Normal(torch.zeros(1, 3), torch.ones(1, 3)), 1).expand((4,))
    je = D.Independent(_ExpandableNormal(janus.zeros(1, 3), janus.ones(1, 3)), 1).expand((4,))
    assert tuple(je.batch_shape) == tuple(te.batch_shape) and tuple(je.event_shape) == tuple(te.event_shape)
    assert tuple(je.base_dist.batch_shape) == tuple(te.base_dist.batch_shape)


def test_functional_call_parametrized_module_matches_torch():
    torch = _torch()

    def run(lib, fc):
        class Double(lib.nn.Module):
            def forward(self, w):
                return w * 2

            def right_inverse(self, w):
                return w / 2
        m = lib.nn.Linear(2, 2, bias=False)
        with lib.no_grad():
            m.weight.copy_(lib.tensor([[1.0, 2.0], [3.0, 4.0]]))
        lib.nn.utils.parametrize.register_parametrization(m, "weight", Double())
        x = lib.ones(1, 2)
        # the original under the parametrization, then the parametrized name itself (set through
        # right_inverse and set back afterwards, as torch does)
        a = fc(m, {"parametrizations.weight.original": lib.eye(2)}, (x,)).tolist()
        after_a = m.weight.tolist()
        b = fc(m, {"weight": lib.eye(2)}, (x,)).tolist()
        return a, after_a, b, m.weight.tolist(), m.parametrizations.weight.original.tolist()
    assert run(janus, functional_call) == run(torch, torch.func.functional_call)
