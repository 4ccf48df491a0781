"""nn.utils.parametrize and the weight / spectral normalizations
(janus/nn/utils/parametrize.py, parametrizations.py, weight_norm.py,
spectral_norm.py): the parametrized weight, the output and the gradients
(input and every original) equal the explicit formula in float64 (and
numpy for the weight); the same state_dict keys, shapes, outputs,
gradients and power-iteration buffers as PyTorch's after loading its
state dict, where PyTorch imports; training moves g and v; and the
errors name what is wrong."""
import copy
import pickle
import warnings

import numpy as np
import pytest

import janus
import janus.nn as nn
from janus.nn.utils import parametrizations as PZ
from janus.nn.utils import parametrize as P

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


@pytest.fixture(autouse=True)
def no_hooks_left():
    before = janus._module_hooks
    yield
    assert janus._module_hooks == before  # the old APIs' forward pre-hooks are all removed


def _np(t):
    return t.detach().numpy()


def _leaf(a):
    return janus.tensor(np.asarray(a, dtype=np.float64)).requires_grad_(True)


def _grads(m):
    return {n: _np(p.grad) for n, p in m.named_parameters()}


# ---- (1) the explicit formula, float64 ------------------------------------
def _np_weight_norm(g, v, dim):
    if dim is None:
        return g * v / np.sqrt((v * v).sum())
    axes = tuple(i for i in range(v.ndim) if i != dim % v.ndim)
    return g * v / np.sqrt((v * v).sum(axis=axes, keepdims=True))


def _janus_weight_norm(g, v, dim):
    if dim is None:
        return g * v / (v * v).sum().sqrt()
    axes = [i for i in range(v.dim()) if i != dim % v.dim()]
    return g * v / (v * v).sum(axes, keepdim=True).sqrt()


LAYERS = [("linear", lambda: nn.Linear(5, 3), (4, 5), lambda x, w, b: janus.nn.functional.linear(x, w, b)),
          ("conv2d", lambda: nn.Conv2d(2, 3, 3, padding=1), (2, 2, 5, 5),
           lambda x, w, b: janus.nn.functional.conv2d(x, w, b, padding=1))]


@pytest.mark.parametrize("dim", [0, 1, None])
@pytest.mark.parametrize("name,make,xshape,fn", LAYERS, ids=[l[0] for l in LAYERS])
def test_weight_norm_matches_formula(name, make, xshape, fn, dim):
    janus.manual_seed(0)
    m = make().double()
    w0 = _np(m.weight).copy()
    PZ.weight_norm(m, dim=dim)
    plist = m.parametrizations.weight
    g, v = plist.original0, plist.original1
    assert isinstance(g, nn.Parameter) and isinstance(v, nn.Parameter)
    np.testing.assert_allclose(_np(m.weight), w0, rtol=1e-12)  # registration keeps the weight
    expect_g = np.sqrt((w0 * w0).sum()) if dim is None else \
        np.sqrt((w0 * w0).sum(axis=tuple(i for i in range(w0.ndim) if i != dim), keepdims=True))
    np.testing.assert_allclose(_np(g), expect_g, rtol=1e-12)
    assert tuple(g.shape) == np.shape(expect_g)
    rng = np.random.default_rng(1)
    with janus.no_grad():  # g and v independent of each other
        g.copy_(janus.tensor(rng.uniform(0.5, 2.0, tuple(g.shape))))
        v.copy_(janus.tensor(rng.standard_normal(tuple(v.shape))))
    np.testing.assert_allclose(_np(m.weight), _np_weight_norm(_np(g), _np(v), dim), rtol=1e-12)

    x = _leaf(rng.standard_normal(xshape))
    r = janus.tensor(rng.standard_normal(tuple(m(x).shape)))
    (m(x) * r).sum().backward()
    x2, g2, v2, b2 = _leaf(_np(x)), _leaf(_np(g)), _leaf(_np(v)), _leaf(_np(m.bias))
    y2 = fn(x2, _janus_weight_norm(g2, v2, dim), b2)
    (y2 * r).sum().backward()
    np.testing.assert_allclose(_np(m(x)), _np(y2), rtol=1e-12)
    for a, b in [(x, x2), (g, g2), (v, v2), (m.bias, b2)]:
        np.testing.assert_allclose(_np(a.grad), _np(b.grad), rtol=1e-10, atol=1e-12)
    assert np.abs(_np(g.grad)).sum() > 0 and np.abs(_np(v.grad)).sum() > 0


def _np_power(w_mat, u, v, n, u_first=True):
    for _ in range(n):
        if u_first:
            u = w_mat @ v
            u = u / max(np.linalg.norm(u), 1e-12)
            v = w_mat.T @ u
            v = v / max(np.linalg.norm(v), 1e-12)
        else:
            v = w_mat.T @ u
            v = v / max(np.linalg.norm(v), 1e-12)
            u = w_mat @ v
            u = u / max(np.linalg.norm(u), 1e-12)
    return u, v


@pytest.mark.parametrize("name,make,xshape,fn", LAYERS, ids=[l[0] for l in LAYERS])
def test_spectral_norm_matches_formula(name, make, xshape, fn):
    janus.manual_seed(0)
    m = make().double()
    PZ.spectral_norm(m)
    sn = m.parametrizations.weight[0]
    W = m.parametrizations.weight.original
    w_mat = _np(W).reshape(W.shape[0], -1)
    # 15 iterations at registration: sigma already near the largest singular value
    u, v = _np(sn._u).copy(), _np(sn._v).copy()  # numpy() shares the buffer
    smax = np.linalg.svd(w_mat, compute_uv=False)[0]
    assert u @ w_mat @ v == pytest.approx(smax, rel=1e-2)
    np.testing.assert_allclose(np.linalg.norm(u), 1.0, rtol=1e-12)

    # training: one power iteration (u then v), then W / (u . W v)
    u1, v1 = _np_power(w_mat, u, v, 1)
    w_sn = _np(m.weight)
    np.testing.assert_allclose(_np(sn._u), u1, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(_np(sn._v), v1, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(w_sn, _np(W) / (u1 @ w_mat @ v1), rtol=1e-12)

    # eval: no iteration; the gradient goes through sigma
    m.eval()
    rng = np.random.default_rng(2)
    x = _leaf(rng.standard_normal(xshape))
    y = m(x)
    np.testing.assert_array_equal(_np(sn._u), u1)
    r = janus.tensor(rng.standard_normal(tuple(y.shape)))
    (y * r).sum().backward()
    x2, W2, b2 = _leaf(_np(x)), _leaf(_np(W)), _leaf(_np(m.bias))
    uu, vv = janus.tensor(u1), janus.tensor(v1)
    sigma = janus.dot(uu, janus.mv(W2.reshape(W2.shape[0], -1), vv))
    y2 = fn(x2, W2 / sigma, b2)
    (y2 * r).sum().backward()
    np.testing.assert_allclose(_np(y), _np(y2), rtol=1e-12)
    for a, b in [(x, x2), (W, W2), (m.bias, b2)]:
        np.testing.assert_allclose(_np(a.grad), _np(b.grad), rtol=1e-10, atol=1e-12)

    # many training reads: the normalized weight's spectral norm goes to 1
    m.train()
    for _ in range(60):
        w_sn = _np(m.weight)
    assert np.linalg.svd(w_sn.reshape(w_sn.shape[0], -1), compute_uv=False)[0] == pytest.approx(1.0, rel=1e-6)


def test_spectral_norm_vector_and_dims():
    janus.manual_seed(0)
    m = nn.Linear(3, 4).double()
    PZ.spectral_norm(m, "bias")  # a vector: divided by its norm, no buffers
    b = _np(m.parametrizations.bias.original)
    np.testing.assert_allclose(_np(m.bias), b / np.linalg.norm(b), rtol=1e-12)
    assert [k for k in m.state_dict() if "bias" in k] == ["parametrizations.bias.original"]
    ct = nn.ConvTranspose2d(2, 5, 3)
    PZ.spectral_norm(ct)  # ConvTranspose: dim 1 (the output channels) first
    assert tuple(ct.parametrizations.weight[0]._u.shape) == (5,)
    assert tuple(ct.parametrizations.weight[0]._v.shape) == (2 * 9,)
    c = nn.Conv2d(2, 5, 3)
    PZ.spectral_norm(c, dim=1)
    assert tuple(c.parametrizations.weight[0]._u.shape) == (2,)


# ---- the parametrize machinery --------------------------------------------
def _param_classes(lib):
    class Symmetric(lib.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(0, 1)

        def right_inverse(self, A):
            return A.triu()

    class Scale(lib.nn.Module):
        def __init__(self, s):
            super().__init__()
            self.s = s

        def forward(self, X):
            return X * self.s

        def right_inverse(self, X):
            return X / self.s

    class Outer(lib.nn.Module):  # two originals: a column and a row
        def forward(self, a, b):
            return a.unsqueeze(-1) * b.unsqueeze(-2)

        def right_inverse(self, Z):
            return Z[:, 0].clone(), Z[0, :] / Z[0, 0]

    class NoInverse(lib.nn.Module):
        def forward(self, X):
            return X * 2

    return Symmetric, Scale, Outer, NoInverse


def test_register_remove_and_class_swap():
    Symmetric, Scale, Outer, NoInverse = _param_classes(janus)
    janus.manual_seed(0)
    m = nn.Linear(4, 4)
    w = m.weight
    assert not P.is_parametrized(m)
    P.register_parametrization(m, "weight", Symmetric())
    assert type(m).__name__ == "ParametrizedLinear" and isinstance(m, nn.Linear)
    assert P.type_before_parametrizations(m) is nn.Linear
    assert P.is_parametrized(m) and P.is_parametrized(m, "weight") and not P.is_parametrized(m, "bias")
    assert m.parametrizations.weight.original is w  # the same Parameter (optimizers keep it)
    np.testing.assert_array_equal(_np(w), np.triu(_np(w)))
    W = _np(m.weight)
    np.testing.assert_array_equal(W, W.T)
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert [n for n, _ in m.named_parameters()] == ["bias", "parametrizations.weight.original"]
    # assignment runs right_inverse
    A = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    A = A + A.T
    m.weight = janus.tensor(A)
    np.testing.assert_allclose(_np(m.weight), A, rtol=1e-6)
    assert m.parametrizations.weight.original is w
    with pytest.raises(KeyError, match="attribute 'weight' already exists"):
        m.weight = nn.Parameter(janus.tensor(A))
    # chained: Symmetric, then Scale
    P.register_parametrization(m, "weight", Scale(2.0))
    np.testing.assert_allclose(_np(m.weight), 2 * A, rtol=1e-6)
    assert len(m.parametrizations.weight) == 2
    m.weight = janus.tensor(A)
    np.testing.assert_allclose(_np(m.weight), A, rtol=1e-6)
    # a second class: the class swap happens once, the property per name
    P.register_parametrization(m, "bias", Scale(3.0))
    b = _np(m.parametrizations.bias.original)
    np.testing.assert_allclose(_np(m.bias), 3 * b, rtol=1e-6)
    P.remove_parametrizations(m, "bias", leave_parametrized=False)
    assert type(m).__name__ == "ParametrizedLinear"
    np.testing.assert_array_equal(_np(m.bias), b)
    P.remove_parametrizations(m, "weight")
    assert type(m) is nn.Linear and "parametrizations" not in m._modules
    assert m.weight is w and isinstance(m.weight, nn.Parameter)
    np.testing.assert_allclose(_np(m.weight), A, rtol=1e-6)  # left parametrized
    assert list(m.state_dict()) == ["bias", "weight"]  # re-registered last, as in torch
    assert not hasattr(nn.Linear, "weight")  # the property lived on the generated class only


def test_multiple_originals_and_gradients():
    Symmetric, Scale, Outer, NoInverse = _param_classes(janus)
    m = nn.Linear(3, 4).double()
    with janus.no_grad():
        m.weight.copy_(janus.tensor(np.outer([1.0, 2.0, -1.0, 0.5], [2.0, 1.0, 3.0])))
    P.register_parametrization(m, "weight", Outer())
    pl = m.parametrizations.weight
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    np.testing.assert_allclose(_np(pl.original0), [2.0, 4.0, -2.0, 1.0])
    np.testing.assert_allclose(_np(m.weight), np.outer([1.0, 2.0, -1.0, 0.5], [2.0, 1.0, 3.0]), rtol=1e-12)
    x = _leaf(np.ones((2, 3)))
    m(x).sum().backward()
    a, b = _np(pl.original0), _np(pl.original1)
    # d/da sum_{n,i,j} a_i b_j x_nj = sum_n x_nj b_j
    np.testing.assert_allclose(_np(pl.original0.grad), np.full(4, 2 * b.sum()), rtol=1e-12)
    np.testing.assert_allclose(_np(pl.original1.grad), 2 * a.sum() * np.ones(3), rtol=1e-12)
    with pytest.raises(ValueError, match="Cannot leave unparametrized"):
        P.remove_parametrizations(m, "weight", leave_parametrized=False)
    P.remove_parametrizations(m, "weight")
    assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
    np.testing.assert_allclose(_np(m.weight), np.outer(a, b), rtol=1e-12)


def test_cached_buffers_copy_and_pickle():
    Symmetric, Scale, Outer, NoInverse = _param_classes(janus)
    calls = []

    class Counting(nn.Module):
        def forward(self, X):
            calls.append(1)
            return X + 1

    m = nn.BatchNorm1d(3)
    P.register_parametrization(m, "running_mean", Counting())  # a buffer stays a buffer
    assert "parametrizations.running_mean.original" in dict(m.named_buffers())
    assert m.running_mean is not m.running_mean
    n0 = len(calls)
    with P.cached():
        w1 = m.running_mean
        with P.cached():
            assert m.running_mean is w1
        assert m.running_mean is w1
    assert len(calls) == n0 + 1
    assert m.running_mean is not w1 and len(calls) == n0 + 2
    m2 = copy.deepcopy(m)
    assert type(m2) is type(m) and m2.parametrizations.running_mean.original is not m.parametrizations.running_mean.original
    np.testing.assert_array_equal(_np(m2.running_mean), _np(m.running_mean))
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        pickle.dumps(m)
    # transfer onto a plain module
    src = nn.Linear(3, 3)
    P.register_parametrization(src, "weight", Symmetric())
    dst = nn.Linear(3, 3)
    P.transfer_parametrizations_and_params(src, dst)
    assert dst.parametrizations.weight.original is src.parametrizations.weight.original
    np.testing.assert_array_equal(_np(dst.weight), _np(src.weight))


def test_errors_named():
    Symmetric, Scale, Outer, NoInverse = _param_classes(janus)

    class Flatten(nn.Module):
        def forward(self, X):
            return X.reshape(-1)

    class ToDouble(nn.Module):
        def forward(self, X):
            return X.double()

    m = nn.Linear(3, 4)
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized element with name "
                                         "'weights'"):
        P.register_parametrization(m, "weights", Symmetric())
    with pytest.raises(ValueError, match="may not change the shape of the tensor"):
        P.register_parametrization(m, "weight", Flatten())
    with pytest.raises(ValueError, match="may not change the dtype of the tensor"):
        P.register_parametrization(m, "weight", ToDouble())
    assert type(m) is nn.Linear and "weight" in m._parameters  # a failed registration leaves it
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        P.remove_parametrizations(m, "weight")
    P.register_parametrization(m, "weight", Flatten(), unsafe=True)
    assert tuple(m.weight.shape) == (12,)
    with pytest.raises(RuntimeError, match="parametrization Flatten does not implement right_inverse"):
        m.weight = janus.zeros(4, 3)
    m2 = nn.Linear(3, 4)
    P.register_parametrization(m2, "weight", Scale(2.0))
    with pytest.raises(ValueError, match="may not change the shape"):
        P.register_parametrization(m2, "weight", Flatten())
    with pytest.raises(ValueError, match="n_power_iterations"):
        PZ.spectral_norm(nn.Linear(3, 4), n_power_iterations=0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        PZ.spectral_norm(nn.Linear(3, 4), dim=2)
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'w'"):
        PZ.spectral_norm(nn.Linear(3, 4), "w")
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        nn.utils.remove_weight_norm(nn.Linear(3, 4))
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        nn.utils.remove_spectral_norm(nn.Linear(3, 4))
    m3 = nn.Linear(3, 4)
    with pytest.warns(FutureWarning, match="deprecated"):
        nn.utils.weight_norm(m3)
    try:
        with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nn.utils.weight_norm(m3)
    finally:
        nn.utils.remove_weight_norm(m3)
    m4 = nn.Linear(3, 4)
    nn.utils.spectral_norm(m4)
    try:
        with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
            nn.utils.spectral_norm(m4)
    finally:
        nn.utils.remove_spectral_norm(m4)


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_old_apis_formula_and_removal():
    janus.manual_seed(0)
    m = nn.Linear(5, 3).double()
    w0 = _np(m.weight).copy()
    nn.utils.weight_norm(m)
    try:
        assert list(m.state_dict()) == ["bias", "weight_g", "weight_v"]
        assert not isinstance(m.weight, nn.Parameter)
        with janus.no_grad():
            m.weight_g.mul_(2.0)
        x = _leaf(np.random.default_rng(0).standard_normal((2, 5)))
        m(x).sum().backward()  # the pre-hook recomputed the weight from the new g
        np.testing.assert_allclose(_np(m.weight), 2 * w0, rtol=1e-12)
        g2, v2 = _leaf(_np(m.weight_g)), _leaf(_np(m.weight_v))
        (x.detach() @ _janus_weight_norm(g2, v2, 0).t()).sum().backward()
        np.testing.assert_allclose(_np(m.weight_g.grad), _np(g2.grad), rtol=1e-10)
        np.testing.assert_allclose(_np(m.weight_v.grad), _np(v2.grad), rtol=1e-10)
    finally:
        nn.utils.remove_weight_norm(m)
    assert isinstance(m.weight, nn.Parameter) and sorted(m.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(_np(m.weight), 2 * w0, rtol=1e-12)

    c = nn.Conv2d(2, 3, 3).double()
    W = c.weight
    nn.utils.spectral_norm(c)
    try:
        assert list(c.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
        assert c.weight_orig is W
        u, v = _np(c.weight_u).copy(), _np(c.weight_v).copy()  # numpy() shares the buffer
        c(janus.randn(1, 2, 5, 5, dtype=janus.float64))
        w_mat = _np(W).reshape(3, -1)
        u1, v1 = _np_power(w_mat, u, v, 1, u_first=False)  # v first in the old version
        np.testing.assert_allclose(_np(c.weight_u), u1, rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(_np(c.weight), _np(W) / (u1 @ w_mat @ v1), rtol=1e-12)
    finally:
        nn.utils.remove_spectral_norm(c)
    assert isinstance(c.weight, nn.Parameter) and sorted(c.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(_np(c.weight), _np(W) / (u1 @ w_mat @ v1), rtol=1e-12)


# ---- (3) training ----------------------------------------------------------
def test_training_with_weight_norm_moves_g_and_v():
    janus.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    PZ.weight_norm(model[0])
    PZ.weight_norm(model[2], dim=None)
    rng = np.random.default_rng(0)
    x = janus.tensor(rng.standard_normal((32, 4)).astype(np.float32))
    y = janus.tensor(rng.standard_normal((32, 1)).astype(np.float32))
    opt = janus.optim.SGD(model.parameters(), lr=0.1)
    g0 = _np(model[0].parametrizations.weight.original0).copy()
    v0 = _np(model[0].parametrizations.weight.original1).copy()
    gg0 = _np(model[2].parametrizations.weight.original0).copy()
    losses = []
    for _ in range(10):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < losses[0] * 0.9
    assert np.abs(_np(model[0].parametrizations.weight.original0) - g0).max() > 1e-4
    assert np.abs(_np(model[0].parametrizations.weight.original1) - v0).max() > 1e-4
    assert abs(float(model[2].parametrizations.weight.original0) - float(gg0)) > 1e-5


# ---- (2) against PyTorch ---------------------------------------------------
def _copy_state(tm, jm):
    jm.load_state_dict({k: janus.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})


def _same_keys(tm, jm):
    tk = {k: tuple(v.shape) for k, v in tm.state_dict().items()}
    jk = {k: tuple(v.shape) for k, v in jm.state_dict().items()}
    assert list(tk) == list(jk) and tk == jk


def _compare_call(tm, jm, xshape, seed, tol=1e-6):
    """Outputs and gradients (input, every parameter) of one call each."""
    rng = np.random.default_rng(seed)
    xn = rng.standard_normal(xshape)
    tx = torch.tensor(xn, requires_grad=True)
    jx = _leaf(xn)
    ty, jy = tm(tx), jm(jx)
    np.testing.assert_allclose(_np(jy), ty.detach().numpy(), rtol=tol, atol=tol)
    r = rng.standard_normal(tuple(ty.shape))
    (ty * torch.tensor(r)).sum().backward()
    (jy * janus.tensor(r)).sum().backward()
    np.testing.assert_allclose(_np(jx.grad), tx.grad.numpy(), rtol=tol, atol=tol)
    tg = {n: p.grad.numpy() for n, p in tm.named_parameters()}
    jg = _grads(jm)
    assert list(tg) == list(jg)
    for n in tg:
        np.testing.assert_allclose(jg[n], tg[n], rtol=tol, atol=tol, err_msg=n)


def _pair(kind, seed=0):
    torch.manual_seed(seed)
    if kind == "linear":
        tm = torch.nn.Linear(5, 3).double()
        jm = nn.Linear(5, 3).double()
        return tm, jm, (4, 5)
    if kind == "conv2d":
        tm = torch.nn.Conv2d(2, 3, 3, padding=1).double()
        jm = nn.Conv2d(2, 3, 3, padding=1).double()
        return tm, jm, (2, 2, 5, 5)
    tm = torch.nn.ConvTranspose2d(2, 4, 3).double()
    jm = nn.ConvTranspose2d(2, 4, 3).double()
    return tm, jm, (2, 2, 4, 4)


@needs_torch
@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("old", [False, True], ids=["parametrizations", "old_api"])
@pytest.mark.parametrize("kind,dim", [("linear", 0), ("linear", 1), ("linear", None), ("conv2d", 0),
                                      ("conv2d", None), ("conv2d", 2), ("convt", 1)])
def test_weight_norm_vs_torch(kind, dim, old):
    tm, jm, xshape = _pair(kind)
    jm.load_state_dict({k: janus.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    if old:
        torch.nn.utils.weight_norm(tm, dim=dim)
        nn.utils.weight_norm(jm, dim=dim)
    else:
        torch.nn.utils.parametrizations.weight_norm(tm, dim=dim)
        PZ.weight_norm(jm, dim=dim)
    try:
        _same_keys(tm, jm)
        for k, v in tm.state_dict().items():  # registration computed the same g
            np.testing.assert_allclose(_np(jm.state_dict()[k]), v.numpy(), rtol=1e-12, err_msg=k)
        with torch.no_grad():  # g and v apart
            for p in tm.parameters():
                p.mul_(torch.rand_like(p) + 0.5)
        _copy_state(tm, jm)
        for seed in range(2):
            tm.zero_grad()
            jm.zero_grad()
            _compare_call(tm, jm, xshape, seed)
        np.testing.assert_allclose(_np(jm.weight), tm.weight.detach().numpy(), rtol=1e-6, atol=1e-6)
    finally:
        if old:
            torch.nn.utils.remove_weight_norm(tm)
            nn.utils.remove_weight_norm(jm)
    if old:
        _same_keys(tm, jm)
        np.testing.assert_allclose(_np(jm.weight), tm.weight.detach().numpy(), rtol=1e-6, atol=1e-6)


@needs_torch
@pytest.mark.parametrize("old", [False, True], ids=["parametrizations", "old_api"])
@pytest.mark.parametrize("kind", ["linear", "conv2d", "convt"])
def test_spectral_norm_vs_torch(kind, old):
    tm, jm, xshape = _pair(kind, seed=3)
    _copy_state(tm, jm)
    if old:
        torch.nn.utils.spectral_norm(tm, n_power_iterations=2)
        nn.utils.spectral_norm(jm, n_power_iterations=2)
        u, v = "weight_u", "weight_v"
    else:
        torch.nn.utils.parametrizations.spectral_norm(tm, n_power_iterations=2)
        PZ.spectral_norm(jm, n_power_iterations=2)
        u, v = "parametrizations.weight.0._u", "parametrizations.weight.0._v"
    try:
        _same_keys(tm, jm)
        _copy_state(tm, jm)  # torch's u and v (the random draws differ)
        for step in range(4):  # training: the buffers move by power iteration at each call
            tm.zero_grad()
            jm.zero_grad()
            _compare_call(tm, jm, xshape, step)
            tsd, jsd = tm.state_dict(), jm.state_dict()
            for k in (u, v):
                np.testing.assert_allclose(_np(jsd[k]), tsd[k].numpy(), rtol=1e-6, atol=1e-9, err_msg=k)
        np.testing.assert_allclose(_np(jm.weight), tm.weight.detach().numpy(), rtol=1e-6, atol=1e-9)
        tm.eval()
        jm.eval()
        before = _np(jm.state_dict()[u]).copy()
        for step in range(2):
            tm.zero_grad()
            jm.zero_grad()
            _compare_call(tm, jm, xshape, 10 + step)
        np.testing.assert_array_equal(_np(jm.state_dict()[u]), before)  # eval: no iteration
        np.testing.assert_allclose(_np(jm.weight), tm.weight.detach().numpy(), rtol=1e-6, atol=1e-9)
    finally:
        if old:
            torch.nn.utils.remove_spectral_norm(tm)
            nn.utils.remove_spectral_norm(jm)
    if old:
        _same_keys(tm, jm)
        np.testing.assert_allclose(_np(jm.weight), tm.weight.detach().numpy(), rtol=1e-6, atol=1e-9)
    else:
        torch.nn.utils.parametrize.remove_parametrizations(tm, "weight")
        P.remove_parametrizations(jm, "weight")
        _same_keys(tm, jm)
        np.testing.assert_allclose(_np(jm.weight), tm.weight.detach().numpy(), rtol=1e-6, atol=1e-9)


@needs_torch
@pytest.mark.parametrize("leave", [True, False])
def test_custom_chained_and_removal_vs_torch(leave):
    tS, tScale, tOuter, _ = _param_classes(torch)
    jS, jScale, jOuter, _ = _param_classes(janus)
    torch.manual_seed(5)
    tm = torch.nn.Linear(4, 4).double()
    jm = nn.Linear(4, 4).double()
    _copy_state(tm, jm)
    for reg, S, Sc, m in [(torch.nn.utils.parametrize.register_parametrization, tS, tScale, tm),
                          (P.register_parametrization, jS, jScale, jm)]:
        reg(m, "weight", S())
        reg(m, "weight", Sc(1.5))
        reg(m, "bias", Sc(-2.0))
    _same_keys(tm, jm)
    for k, v in tm.state_dict().items():  # right_inverse ran on the same values
        np.testing.assert_allclose(_np(jm.state_dict()[k]), v.numpy(), rtol=1e-12, err_msg=k)
    _compare_call(tm, jm, (3, 4), 0)
    A = np.random.default_rng(7).standard_normal((4, 4))
    tm.weight = torch.tensor(A + A.T)
    jm.weight = janus.tensor(A + A.T)
    np.testing.assert_allclose(_np(jm.state_dict()["parametrizations.weight.original"]),
                               tm.state_dict()["parametrizations.weight.original"].numpy(), rtol=1e-12)
    # state dicts load across: janus -> torch as well
    sd = {k: torch.tensor(_np(v)) for k, v in jm.state_dict().items()}
    tm.load_state_dict(sd)
    torch.nn.utils.parametrize.remove_parametrizations(tm, "weight", leave_parametrized=leave)
    P.remove_parametrizations(jm, "weight", leave_parametrized=leave)
    _same_keys(tm, jm)
    np.testing.assert_allclose(_np(jm.weight), tm.weight.detach().numpy(), rtol=1e-12)
    assert type(jm).__name__ == type(tm).__name__ == "ParametrizedLinear"  # bias still parametrized
    torch.nn.utils.parametrize.remove_parametrizations(tm, "bias", leave_parametrized=leave)
    P.remove_parametrizations(jm, "bias", leave_parametrized=leave)
    assert type(jm) is nn.Linear and type(tm) is torch.nn.Linear
    _same_keys(tm, jm)
    for k, v in tm.state_dict().items():
        np.testing.assert_allclose(_np(jm.state_dict()[k]), v.numpy(), rtol=1e-12, err_msg=k)


@needs_torch
def test_two_originals_vs_torch():
    _, _, tOuter, _ = _param_classes(torch)
    _, _, jOuter, _ = _param_classes(janus)
    tm = torch.nn.Linear(3, 4).double()
    jm = nn.Linear(3, 4).double()
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(np.outer([1.0, 2.0, -1.0, 0.5], [2.0, 1.0, 3.0])))
    _copy_state(tm, jm)
    torch.nn.utils.parametrize.register_parametrization(tm, "weight", tOuter())
    P.register_parametrization(jm, "weight", jOuter())
    _same_keys(tm, jm)
    for k, v in tm.state_dict().items():
        np.testing.assert_allclose(_np(jm.state_dict()[k]), v.numpy(), rtol=1e-12, err_msg=k)
    _compare_call(tm, jm, (2, 3), 1)
    torch.nn.utils.parametrize.remove_parametrizations(tm, "weight")
    P.remove_parametrizations(jm, "weight")
    _same_keys(tm, jm)
    assert isinstance(jm.weight, nn.Parameter) and isinstance(tm.weight, torch.nn.Parameter)
    np.testing.assert_allclose(_np(jm.weight), tm.weight.detach().numpy(), rtol=1e-12)
