"""janus.optim: optimizers against numpy re-implementations of torch's
single-tensor update formulas (gradients set directly on .grad), the
Optimizer base class (param groups, zero_grad, state_dict round trips, hooks,
errors) and the learning-rate schedulers' sequences."""
import math
import warnings

import numpy as np
import pytest

import janus
import janus.optim as optim
from janus import _C
from janus.optim import lr_scheduler

RNG = np.random.default_rng(1234)
SHAPES = [(3, 4), (5,)]
NSTEPS = 5


def to_np(t):
    if str(t.dtype).endswith("bfloat16"):
        t = t.float()
    return np.array(t.tolist(), dtype=np.float64).reshape(tuple(t.shape))


def make_params(np_dtype, seed=0):
    rng = np.random.default_rng(seed)
    inits = [rng.standard_normal(s).astype(np_dtype) for s in SHAPES]
    params = [janus.tensor(a, requires_grad=True) for a in inits]
    return inits, params


def make_grads(np_dtype, seed=1):
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(s).astype(np_dtype) for s in SHAPES] for _ in range(NSTEPS)]


def run_janus(opt_cls, kw, np_dtype, nsteps=NSTEPS, grads=None):
    inits, params = make_params(np_dtype)
    opt = opt_cls(params, **kw)
    grads = grads or make_grads(np_dtype)
    for step in range(nsteps):
        for p, g in zip(params, grads[step]):
            p.grad = janus.tensor(g)
        opt.step()
    return inits, grads, params, opt


# ------------------------------------------------------- numpy references
def sgd_ref(p, grads, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, maximize=False):
    buf = None
    for g in grads:
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * p
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p - lr * g
    return p


def adam_ref(p, grads, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, maximize=False,
             decoupled=False):
    b1, b2 = betas
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    vmax = np.zeros_like(p)
    for step, g in enumerate(grads, 1):
        g = -g if maximize else g
        if weight_decay:
            if decoupled:
                p = p * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * p
        m = m + (1 - b1) * (g - m)
        v = b2 * v + (1 - b2) * g * g
        bc1 = 1 - b1 ** step
        bc2 = 1 - b2 ** step
        if amsgrad:
            vmax = np.maximum(vmax, v)
            denom = np.sqrt(vmax) / math.sqrt(bc2) + eps
        else:
            denom = np.sqrt(v) / math.sqrt(bc2) + eps
        p = p - (lr / bc1) * m / denom
    return p


def rmsprop_ref(p, grads, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                maximize=False):
    sq = np.zeros_like(p)
    ga = np.zeros_like(p)
    buf = np.zeros_like(p)
    for g in grads:
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * p
        sq = alpha * sq + (1 - alpha) * g * g
        if centered:
            ga = ga + (1 - alpha) * (g - ga)
            avg = np.sqrt(sq - ga * ga) + eps
        else:
            avg = np.sqrt(sq) + eps
        if momentum > 0:
            buf = momentum * buf + g / avg
            p = p - lr * buf
        else:
            p = p - lr * g / avg
    return p


CONFIGS = [
    (optim.SGD, dict(lr=0.1), sgd_ref),
    (optim.SGD, dict(lr=0.1, momentum=0.9), sgd_ref),
    (optim.SGD, dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01), sgd_ref),
    (optim.SGD, dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1), sgd_ref),
    (optim.SGD, dict(lr=0.1, maximize=True, momentum=0.5), sgd_ref),
    (optim.Adam, dict(), adam_ref),
    (optim.Adam, dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1), adam_ref),
    (optim.Adam, dict(lr=0.01, amsgrad=True), adam_ref),
    (optim.Adam, dict(lr=0.01, maximize=True, weight_decay=0.05), adam_ref),
    (optim.Adam, dict(lr=0.01, betas=(0.3, 0.9)), adam_ref),  # lerp weight > 0.5
    (optim.AdamW, dict(lr=0.01), lambda p, g, **kw: adam_ref(p, g, weight_decay=1e-2, decoupled=True, **kw)),
    (optim.AdamW, dict(lr=0.01, weight_decay=0.3, amsgrad=True),
     lambda p, g, **kw: adam_ref(p, g, decoupled=True, **kw)),
    (optim.RMSprop, dict(), rmsprop_ref),
    (optim.RMSprop, dict(lr=0.01, alpha=0.9, weight_decay=0.1), rmsprop_ref),
    (optim.RMSprop, dict(lr=0.01, centered=True), rmsprop_ref),
    (optim.RMSprop, dict(lr=0.01, momentum=0.9), rmsprop_ref),
    (optim.RMSprop, dict(lr=0.01, momentum=0.5, centered=True, maximize=True, eps=1e-4), rmsprop_ref),
]


def _cfg_id(c):
    return c[0].__name__ + "-" + ",".join(f"{k}={v}" for k, v in c[1].items())


@pytest.mark.parametrize("cfg", CONFIGS, ids=[_cfg_id(c) for c in CONFIGS])
@pytest.mark.parametrize("np_dtype", [np.float64, np.float32])
def test_update_matches_reference(cfg, np_dtype):
    cls, kw, ref = cfg
    inits, grads, params, opt = run_janus(cls, kw, np_dtype)
    rtol, atol = (1e-10, 1e-12) if np_dtype == np.float64 else (2e-5, 2e-6)
    for i, p in enumerate(params):
        assert p.dtype == (janus.float64 if np_dtype == np.float64 else janus.float32)
        want = ref(inits[i].astype(np.float64), [g[i].astype(np.float64) for g in grads], **kw)
        np.testing.assert_allclose(to_np(p), want, rtol=rtol, atol=atol)
        assert not np.allclose(to_np(p), inits[i])  # it moved


def test_updates_are_in_place_and_bump_versions():
    _, params = make_params(np.float32)
    opt = optim.Adam(params, lr=0.1)
    ptrs = [p.data_ptr() for p in params]
    versions = [p._version for p in params]
    for p in params:
        p.grad = janus.ones_like(p)
    opt.step()
    assert [p.data_ptr() for p in params] == ptrs
    assert all(p._version > v for p, v in zip(params, versions))
    assert all(p.requires_grad and p.is_leaf for p in params)
    assert all(p.grad_fn is None for p in params)


def test_params_without_grad_are_skipped():
    inits, params = make_params(np.float64)
    opt = optim.Adam(params, lr=0.1)
    params[1].grad = janus.ones_like(params[1])
    opt.step()
    np.testing.assert_array_equal(to_np(params[0]), inits[0])
    assert all(k is not params[0] for k in opt.state)
    assert opt.state[params[1]]["step"] == 1.0
    assert not np.allclose(to_np(params[1]), inits[1])


def test_param_groups_defaults_and_per_group_options():
    inits, params = make_params(np.float64)
    opt = optim.SGD([{"params": [params[0]]}, {"params": params[1], "lr": 0.5, "momentum": 0.9}], lr=0.1)
    assert len(opt.param_groups) == 2
    g0, g1 = opt.param_groups
    assert g0["lr"] == 0.1 and g0["momentum"] == 0 and g0["nesterov"] is False
    assert g1["lr"] == 0.5 and g1["momentum"] == 0.9
    assert isinstance(g1["params"], list) and g1["params"][0] is params[1]
    grads = make_grads(np.float64)
    for step in range(3):
        for p, g in zip(params, grads[step]):
            p.grad = janus.tensor(g)
        opt.step()
    np.testing.assert_allclose(to_np(params[0]), sgd_ref(inits[0], [g[0] for g in grads[:3]], lr=0.1), rtol=1e-12)
    np.testing.assert_allclose(to_np(params[1]),
                               sgd_ref(inits[1], [g[1] for g in grads[:3]], lr=0.5, momentum=0.9), rtol=1e-12)


def test_add_param_group():
    inits, params = make_params(np.float64)
    opt = optim.Adam([params[0]], lr=0.1)
    opt.add_param_group({"params": [params[1]], "eps": 1e-3})
    assert opt.param_groups[1]["lr"] == 0.1 and opt.param_groups[1]["eps"] == 1e-3
    assert opt.param_groups[1]["betas"] == (0.9, 0.999)
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [params[0]]})
    with pytest.raises(TypeError, match="param_group must be a dict"):
        opt.add_param_group([params[0]])


def test_constructor_errors():
    _, params = make_params(np.float32)
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="iterable of Tensors"):
        optim.SGD(params[0], lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        optim.SGD(set(params), lr=0.1)
    with pytest.raises(TypeError, match="can only optimize Tensors"):
        optim.SGD([params[0], 3.0], lr=0.1)
    with pytest.raises(ValueError, match="Invalid learning rate: -0.1"):
        optim.SGD(params, lr=-0.1)
    with pytest.raises(ValueError, match="Invalid momentum value"):
        optim.SGD(params, momentum=-1)
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero dampening"):
        optim.SGD(params, lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1"):
        optim.Adam(params, betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="Invalid epsilon value"):
        optim.AdamW(params, eps=-1e-8)
    with pytest.raises(ValueError, match="Invalid weight_decay value"):
        optim.Adam(params, weight_decay=-1)
    with pytest.raises(ValueError, match="Invalid learning rate: nan"):
        optim.Adam(params, lr=float("nan"))
    with pytest.raises(ValueError, match="Invalid alpha value"):
        optim.RMSprop(params, alpha=-0.5)
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([params[0] * 2], lr=0.1)


def test_zero_grad():
    _, params = make_params(np.float32)
    opt = optim.SGD(params, lr=0.1)
    for p in params:
        p.grad = janus.ones_like(p)
    grad0 = params[0].grad
    opt.zero_grad(set_to_none=False)
    assert params[0].grad is grad0  # zeroed in place
    assert all(np.all(to_np(p.grad) == 0) for p in params)
    opt.zero_grad()
    assert all(p.grad is None for p in params)
    opt.zero_grad()  # no grads: nothing to do
    opt.step()  # no grads: nothing moves


def test_step_hook_called_once_per_step(monkeypatch):
    calls = []
    monkeypatch.setattr(janus, "_step_hook", lambda: calls.append(1), raising=False)
    _, params = make_params(np.float32)
    opt = optim.SGD(params, lr=0.1)
    for p in params:
        p.grad = janus.ones_like(p)
    opt.step()
    opt.step()
    assert len(calls) == 2

    class MySGD(optim.SGD):
        def step(self, closure=None):
            self.seen_grad_mode = _C.is_grad_enabled()
            return super().step(closure)

    opt = MySGD(params, lr=0.1)
    opt.step()
    assert len(calls) == 3  # the nested super().step() does not call the hook again
    assert opt.seen_grad_mode is False


def test_step_runs_under_no_grad_and_closure_under_grad():
    _, params = make_params(np.float32)
    opt = optim.SGD(params, lr=0.1)
    modes = []

    def closure():
        modes.append(_C.is_grad_enabled())
        for p in params:
            p.grad = janus.ones_like(p)
        return 42.0

    assert opt.step(closure) == 42.0
    assert modes == [True]
    assert _C.is_grad_enabled()


def test_step_pre_and_post_hooks():
    _, params = make_params(np.float32)
    opt = optim.SGD(params, lr=0.1)
    log = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: log.append("pre"))
    opt.register_step_post_hook(lambda o, a, k: log.append("post"))
    opt.step()
    assert log == ["pre", "post"]
    h1.remove()
    opt.step()
    assert log == ["pre", "post", "post"]


def _train(opt, params, grads):
    for gs in grads:
        for p, g in zip(params, gs):
            p.grad = janus.tensor(g)
        opt.step()


@pytest.mark.parametrize("cls,kw", [(optim.SGD, dict(lr=0.1, momentum=0.9)),
                                    (optim.Adam, dict(lr=0.01, amsgrad=True)),
                                    (optim.AdamW, dict(lr=0.01)),
                                    (optim.RMSprop, dict(momentum=0.5, centered=True))])
def test_state_dict_round_trip(cls, kw):
    grads = make_grads(np.float64)
    _, pa = make_params(np.float64)
    a = cls(pa, **kw)
    _train(a, pa, grads[:3])
    sd = a.state_dict()
    assert set(sd) == {"state", "param_groups"}
    assert sd["param_groups"][0]["params"] == [0, 1]
    assert set(sd["state"]) == {0, 1}
    if cls is not optim.SGD:
        assert sd["state"][0]["step"] == 3
    for k, v in kw.items():
        assert sd["param_groups"][0][k] == v

    # a fresh optimizer on copies of the parameters, continued from the saved state
    pb = [janus.tensor(to_np(p), requires_grad=True) for p in pa]
    b = cls(pb, **kw)
    b.load_state_dict(sd)
    assert b.param_groups[0]["params"][0] is pb[0]
    for key, v in a.state[pa[0]].items():
        w = b.state[pb[0]][key]
        if isinstance(v, janus.Tensor):
            assert w is not v  # copied, not shared
            np.testing.assert_array_equal(to_np(w), to_np(v))
        else:
            assert w == v
    _train(a, pa, grads[3:])
    _train(b, pb, grads[3:])
    for p, q in zip(pa, pb):
        np.testing.assert_array_equal(to_np(p), to_np(q))


def test_load_state_dict_errors():
    _, params = make_params(np.float32)
    a = optim.Adam([{"params": [params[0]]}, {"params": [params[1]]}])
    b = optim.Adam(params)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        b.load_state_dict(a.state_dict())
    c = optim.Adam([params[0]])
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        c.load_state_dict(b.state_dict())
    with pytest.raises(ValueError, match="'state' and 'param_groups'"):
        c.load_state_dict({"state": {}})


def test_load_state_dict_casts_and_accepts_string_keys():
    _, params = make_params(np.float64)
    a = optim.Adam(params, lr=0.1)
    for p in params:
        p.grad = janus.ones_like(p)
    a.step()
    sd = a.state_dict()
    sd2 = {"state": {str(k): dict(v, step=janus.tensor(float(v["step"])),
                                   exp_avg=v["exp_avg"].float()) for k, v in sd["state"].items()},
           "param_groups": [dict(g, betas=list(g["betas"])) for g in sd["param_groups"]]}
    b = optim.Adam(params, lr=0.1)
    b.load_state_dict(sd2)
    st = b.state[params[0]]
    assert st["step"] == 1.0 and isinstance(st["step"], float)
    assert st["exp_avg"].dtype == janus.float64  # cast back to the parameter's dtype
    assert b.param_groups[0]["betas"] == (0.9, 0.999)


def test_repr():
    _, params = make_params(np.float32)
    r = repr(optim.SGD(params, lr=0.1))
    assert r.startswith("SGD (") and "Parameter Group 0" in r and "lr: 0.1" in r


def test_training_with_autograd_decreases_loss():
    """End to end: least squares with backward() and each optimizer."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((32, 4)).astype(np.float32)
    wtrue = rng.standard_normal((4, 1)).astype(np.float32)
    Y = X @ wtrue
    x, y = janus.tensor(X), janus.tensor(Y)
    for cls, kw in [(optim.SGD, dict(lr=0.05, momentum=0.9)), (optim.Adam, dict(lr=0.05)),
                    (optim.AdamW, dict(lr=0.05)), (optim.RMSprop, dict(lr=0.01))]:
        w = janus.zeros(4, 1, requires_grad=True)
        opt = cls([w], **kw)
        losses = []
        for _ in range(30):
            opt.zero_grad()
            loss = ((x @ w - y) ** 2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert losses[-1] < 0.5 * losses[0], (cls.__name__, losses)


# ------------------------------------------------------------- schedulers
def _opt(lrs=(1.0,)):
    params = [janus.zeros(2, requires_grad=True) for _ in lrs]
    return optim.SGD([{"params": [p], "lr": lr} for p, lr in zip(params, lrs)], lr=lrs[0])


def _lrs(sched, n):
    out = [sched.get_last_lr()[0]]
    for _ in range(n - 1):
        sched.optimizer.step()
        sched.step()
        out.append(sched.get_last_lr()[0])
    return out


def test_step_lr():
    s = lr_scheduler.StepLR(_opt(), step_size=2, gamma=0.1)
    np.testing.assert_allclose(_lrs(s, 7), [1, 1, 0.1, 0.1, 0.01, 0.01, 0.001], rtol=1e-12)


def test_multistep_lr():
    s = lr_scheduler.MultiStepLR(_opt([0.5]), milestones=[2, 5, 5], gamma=0.1)
    np.testing.assert_allclose(_lrs(s, 7), [0.5, 0.5, 0.05, 0.05, 0.05, 0.0005, 0.0005], rtol=1e-12)


def test_exponential_lr():
    s = lr_scheduler.ExponentialLR(_opt([2.0]), gamma=0.5)
    np.testing.assert_allclose(_lrs(s, 5), [2, 1, 0.5, 0.25, 0.125], rtol=1e-12)


@pytest.mark.parametrize("T_max,eta_min", [(4, 0.0), (5, 0.1), (1, 0.01)])
def test_cosine_annealing_lr(T_max, eta_min):
    base = 0.8
    s = lr_scheduler.CosineAnnealingLR(_opt([base]), T_max=T_max, eta_min=eta_min)
    got = _lrs(s, 3 * T_max + 2)
    want = [eta_min + (base - eta_min) * (1 + math.cos(math.pi * e / T_max)) / 2 for e in range(3 * T_max + 2)]
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    # T_max=4, eta_min=0: torch gives 0.8, 0.6828..., 0.4, 0.1171..., 0.0, 0.1171..., ...
    if T_max == 4 and eta_min == 0.0:
        np.testing.assert_allclose(got[:6], [0.8, 0.6828427124746191, 0.4, 0.11715728752538102, 0.0,
                                             0.11715728752538102], rtol=1e-12, atol=1e-15)


def test_lambda_lr_and_groups():
    opt = _opt([1.0, 0.1])
    s = lr_scheduler.LambdaLR(opt, [lambda e: 0.5 ** e, lambda e: e + 1])
    assert [g["initial_lr"] for g in opt.param_groups] == [1.0, 0.1]
    assert s.base_lrs == [1.0, 0.1]
    for _ in range(3):
        opt.step()
        s.step()
    np.testing.assert_allclose(s.get_last_lr(), [0.125, 0.4], rtol=1e-12)
    assert [g["lr"] for g in opt.param_groups] == s.get_last_lr()
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        lr_scheduler.LambdaLR(opt, [lambda e: 1.0])


def test_scheduler_closed_form_with_epoch_argument():
    s = lr_scheduler.StepLR(_opt(), step_size=3, gamma=0.5)
    s.optimizer.step()
    with pytest.warns(UserWarning, match="epoch parameter"):
        s.step(7)
    assert s.last_epoch == 7 and s.get_last_lr() == [0.25]


def test_scheduler_state_dict_round_trip():
    opt = _opt([1.0])
    s = lr_scheduler.CosineAnnealingLR(opt, T_max=10, eta_min=0.05)
    for _ in range(4):
        opt.step()
        s.step()
    sd = s.state_dict()
    assert "optimizer" not in sd and sd["last_epoch"] == 4
    opt2 = _opt([1.0])
    s2 = lr_scheduler.CosineAnnealingLR(opt2, T_max=10, eta_min=0.05)
    s2.load_state_dict(sd)
    opt2.param_groups[0]["lr"] = opt.param_groups[0]["lr"]
    for _ in range(3):
        opt.step()
        s.step()
        opt2.step()
        s2.step()
    assert s.get_last_lr() == pytest.approx(s2.get_last_lr(), rel=1e-12)
    lam = lr_scheduler.LambdaLR(_opt(), lambda e: 1.0)
    assert lam.state_dict()["lr_lambdas"] == [None]


def test_scheduler_warnings_and_errors():
    opt = _opt()
    s = lr_scheduler.ExponentialLR(opt, gamma=0.9)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        s.step()
    with pytest.warns(UserWarning, match="get_last_lr"):
        s.get_lr()
    with pytest.raises(KeyError, match="initial_lr"):
        lr_scheduler.StepLR(_opt(), step_size=1, last_epoch=3)
    with pytest.raises(TypeError, match="is not an Optimizer"):
        lr_scheduler.StepLR(object(), step_size=1)
    opt = _opt()
    s = lr_scheduler.StepLR(opt, step_size=1)
    opt.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s.step()  # the right order: no warning
