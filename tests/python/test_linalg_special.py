"""janus.linalg, janus.special, janus.random and janus.utils.checkpoint:
values against numpy (and PyTorch where it imports), gradients against
central differences, the errors named, and checkpoint's values and
gradients equal to the plain call's."""
import math

import numpy as np
import pytest

import janus

try:
    import torch
except ImportError:
    torch = None

R = np.random.default_rng(7)
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def T(a, rg=False):
    return janus.tensor(np.asarray(a, np.float64), requires_grad=rg)


def num_grad(f, a, h=1e-6):
    g = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        p, m = a.copy(), a.copy()
        p[i] += h
        m[i] -= h
        g[i] = (f(p) - f(m)) / (2 * h)
    return g


@pytest.mark.parametrize("ord", [2, 1, 3, 0.5, math.inf, -math.inf, 0])
@pytest.mark.parametrize("dim", [None, 0, (0, 2), -1])
def test_vector_norm_against_numpy(ord, dim):
    a = R.standard_normal((3, 4, 5))
    got = janus.linalg.vector_norm(T(a), ord, dim).numpy()
    ax = None if dim is None else dim
    x = np.abs(a)
    if ord == math.inf:
        want = x.max(axis=ax)
    elif ord == -math.inf:
        want = x.min(axis=ax)
    elif ord == 0:
        want = (x != 0).sum(axis=ax).astype(np.float64)
    else:
        want = (x ** ord).sum(axis=ax) ** (1 / ord)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    k = janus.linalg.vector_norm(T(a), ord, dim, keepdim=True)
    assert k.dim() == 3


def test_vector_norm_gradient_and_zero():
    a = R.standard_normal((4, 3))
    x = T(a, True)
    janus.linalg.vector_norm(x, 2, 1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), num_grad(lambda v: np.sqrt((v * v).sum(1)).sum(), a), rtol=1e-6)
    z = janus.zeros(3, requires_grad=True)
    n = janus.linalg.vector_norm(z)
    n.backward()
    assert n.item() == 0.0 and z.grad.tolist() == [0.0, 0.0, 0.0]  # torch's masked gradient, not NaN
    assert math.isnan(janus.linalg.vector_norm(janus.tensor([math.nan, 1.0])).item())  # NaN stays NaN
    assert math.isinf(janus.linalg.vector_norm(janus.tensor([math.inf, 1.0])).item())
    z2 = janus.zeros(2, 3, requires_grad=True)
    janus.nn.functional.normalize(z2, dim=1).sum().backward()
    assert np.isfinite(z2.grad.numpy()).all()


@pytest.mark.parametrize("ord", ["fro", 1, -1, math.inf, -math.inf])
@pytest.mark.parametrize("dim", [(-2, -1), (0, 2), (2, 0)])
def test_matrix_norm_against_numpy(ord, dim):
    a = R.standard_normal((3, 4, 5))
    got = janus.linalg.matrix_norm(T(a), ord, dim).numpy()
    want = np.linalg.norm(np.moveaxis(a, dim, (-2, -1)), ord, axis=(-2, -1))
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert janus.linalg.matrix_norm(T(a), ord, dim, keepdim=True).dim() == 3


def test_matrix_norm_gradient():
    a = R.standard_normal((3, 4))
    x = T(a, True)
    janus.linalg.matrix_norm(x, 1).backward()
    np.testing.assert_allclose(x.grad.numpy(), num_grad(lambda v: np.linalg.norm(v, 1), a), rtol=1e-6, atol=1e-9)


def test_norm_dispatch_and_errors():
    a = R.standard_normal((3, 4))
    np.testing.assert_allclose(janus.linalg.norm(T(a)).item(), np.linalg.norm(a), rtol=1e-12)
    np.testing.assert_allclose(janus.linalg.norm(T(a), math.inf).item(), np.linalg.norm(a, np.inf), rtol=1e-12)
    np.testing.assert_allclose(janus.linalg.norm(T(a), 3, dim=1).numpy(), np.linalg.norm(a, 3, axis=1), rtol=1e-12)
    np.testing.assert_allclose(janus.linalg.norm(T(a[0]), 1).item(), np.abs(a[0]).sum(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="must be 1D or 2D"):
        janus.linalg.norm(T(R.standard_normal((2, 2, 2))), 2)
    with pytest.raises(RuntimeError, match="Order 3 not supported"):
        janus.linalg.matrix_norm(T(a), 3)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        janus.linalg.matrix_norm(T(a[0]))
    with pytest.raises(RuntimeError, match="floating point"):
        janus.linalg.vector_norm(janus.tensor([1, 2]))
    with pytest.raises(AttributeError, match="janus.linalg.eig is not supported by janus"):
        janus.linalg.eig(T(a))


@needs_torch
def test_linalg_norms_equal_torch():
    a = R.standard_normal((2, 3, 4))
    for ord_, dim in [(None, None), (-1, (1, 2)), ("fro", (0, 1)), (1, (-2, -1)), (math.inf, (1, 2)), (3, 2)]:
        want = torch.linalg.norm(torch.tensor(a), ord_, dim).numpy()
        np.testing.assert_allclose(janus.linalg.norm(T(a), ord_, dim).numpy(), want, rtol=1e-12,
                                   err_msg=f"{ord_} {dim}")
    x, xt = T(a, True), torch.tensor(a, requires_grad=True)
    janus.linalg.vector_norm(x, 2, (0, 2)).sum().backward()
    torch.linalg.vector_norm(xt, 2, (0, 2)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)


def test_cross_vecdot_multi_dot():
    a, b = R.standard_normal((4, 3)), R.standard_normal((4, 3))
    np.testing.assert_allclose(janus.linalg.cross(T(a), T(b)).numpy(), np.cross(a, b), rtol=1e-12)
    np.testing.assert_allclose(janus.cross(T(a.T), T(b.T)).numpy(), np.cross(a, b).T, rtol=1e-12)  # first dim of 3
    np.testing.assert_allclose(T(a).cross(T(b), dim=1).numpy(), np.cross(a, b), rtol=1e-12)
    np.testing.assert_allclose(janus.linalg.cross(T(a), T(b[:1])).numpy(), np.cross(a, b[:1]), rtol=1e-12)
    x = T(a, True)
    janus.linalg.cross(x, T(b)).pow(2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), num_grad(lambda v: (np.cross(v, b) ** 2).sum(), a), rtol=1e-6)
    with pytest.raises(RuntimeError, match="must have length 3"):
        janus.linalg.cross(T(R.standard_normal((2, 4))), T(R.standard_normal((2, 4))))
    np.testing.assert_allclose(janus.linalg.vecdot(T(a), T(b)).numpy(), (a * b).sum(-1), rtol=1e-12)
    m = [R.standard_normal(s) for s in [(3,), (3, 4), (4, 2), (2,)]]
    np.testing.assert_allclose(janus.linalg.multi_dot([T(v) for v in m]).numpy(),
                               np.linalg.multi_dot(m), rtol=1e-12)
    with pytest.raises(RuntimeError, match="tensor 1 must be 2D"):
        janus.linalg.multi_dot([T(m[0]), T(m[0]), T(m[1])])


def test_special_names():
    a = R.standard_normal(6)
    S = janus.special
    np.testing.assert_allclose(S.expit(T(a)).numpy(), 1 / (1 + np.exp(-a)), rtol=1e-12)
    p = 1 / (1 + np.exp(-a))
    np.testing.assert_allclose(S.logit(T(p)).numpy(), a, rtol=1e-9)
    np.testing.assert_allclose(S.log1p(T(np.abs(a))).numpy(), np.log1p(np.abs(a)), rtol=1e-12)
    np.testing.assert_allclose(S.logsumexp(T(a), 0).item(), np.log(np.exp(a).sum()), rtol=1e-12)
    np.testing.assert_allclose(S.softmax(T(a), 0).numpy(), np.exp(a) / np.exp(a).sum(), rtol=1e-12)
    with pytest.raises(AttributeError, match="janus.special.gammaln is not supported"):
        S.gammaln(T(a))
    if torch is not None:
        for n in ["expit", "erf", "expm1", "exp2", "sinc"]:
            np.testing.assert_allclose(getattr(S, n)(T(a)).numpy(), getattr(torch.special, n)(torch.tensor(a)).numpy(),
                                       rtol=1e-12, atol=1e-15, err_msg=n)


def test_fork_rng_restores_the_stream():
    janus.manual_seed(3)
    with janus.random.fork_rng():
        janus.manual_seed(99)
        janus.rand(5)
    a = janus.rand(4)
    janus.manual_seed(3)
    assert janus.rand(4).tolist() == a.tolist()
    assert janus.random.initial_seed() == 3


def test_checkpoint_equals_the_plain_call():
    from janus.utils.checkpoint import checkpoint, checkpoint_sequential
    janus.manual_seed(0)
    net = janus.nn.Sequential(janus.nn.Linear(4, 8), janus.nn.Tanh(), janus.nn.Dropout(0.2), janus.nn.Linear(8, 2))
    x = janus.randn(5, 4)
    grads = []
    for how in ("plain", "ckpt", "seq"):
        janus.manual_seed(1)
        net.zero_grad()
        if how == "plain":
            y = net(x)
        elif how == "ckpt":
            y = checkpoint(net, x, use_reentrant=False)
        else:
            y = checkpoint_sequential(net, 2, x, use_reentrant=False)
        y.square().sum().backward()
        grads.append((y.detach().numpy(), [p.grad.numpy().copy() for p in net.parameters()]))
    for y, g in grads[1:]:
        np.testing.assert_array_equal(y, grads[0][0])
        for a, b in zip(g, grads[0][1]):
            np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint(lambda v, scale: v * scale, x, use_reentrant=True, scale=2)
