"""Adagrad, Adadelta, LBFGS (with and without the strong-Wolfe line search)
and the learning-rate schedulers beyond StepLR/MultiStepLR/ExponentialLR/
CosineAnnealingLR/LambdaLR: update formulas against numpy, schedules
against their closed forms, and everything against PyTorch (same initial
values, same gradients) where it imports."""
import math
import os

import numpy as np
import pytest

import janus
from janus.optim import lr_scheduler as L

R = np.random.default_rng(41)


def param(a):
    return janus.nn.Parameter(janus.tensor(np.array(a, dtype=np.float64)))


def run(opt_cls, grads, p0, **kw):
    p = param(p0)
    opt = opt_cls([p], **kw)
    for g in grads:
        p.grad = janus.tensor(g)
        opt.step()
    return p.detach().numpy(), opt


def test_adagrad_formula():
    p0 = R.standard_normal(5)
    grads = [R.standard_normal(5) for _ in range(4)]
    got, opt = run(janus.optim.Adagrad, grads, p0, lr=0.1, lr_decay=0.01, weight_decay=0.05,
                   initial_accumulator_value=0.2, eps=1e-8)
    p, s = p0.copy(), np.full(5, 0.2)
    for k, g in enumerate(grads, 1):
        g = g + 0.05 * p
        s = s + g * g
        p = p - 0.1 / (1 + (k - 1) * 0.01) * g / (np.sqrt(s) + 1e-8)
    np.testing.assert_allclose(got, p, rtol=1e-12)
    assert opt.state_dict()["state"][0]["step"] == 4.0


def test_adadelta_formula():
    p0 = R.standard_normal(5)
    grads = [R.standard_normal(5) for _ in range(4)]
    got, _ = run(janus.optim.Adadelta, grads, p0, lr=0.5, rho=0.8, eps=1e-6, weight_decay=0.1, maximize=True)
    p, sq, acc = p0.copy(), np.zeros(5), np.zeros(5)
    for g in grads:
        g = -g + 0.1 * p
        sq = 0.8 * sq + 0.2 * g * g
        delta = np.sqrt(acc + 1e-6) / np.sqrt(sq + 1e-6) * g
        acc = 0.8 * acc + 0.2 * delta * delta
        p = p - 0.5 * delta
    np.testing.assert_allclose(got, p, rtol=1e-12)


def rosenbrock(xy):
    x, y = xy[0], xy[1]
    return (1 - x) ** 2 + 100 * (y - x * x) ** 2


@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_lbfgs_minimizes_rosenbrock(line_search):
    p = param([-1.5, 2.0])
    opt = janus.optim.LBFGS([p], lr=1 if line_search else 0.05, max_iter=50, line_search_fn=line_search,
                            history_size=10)
    calls = []

    def closure():
        opt.zero_grad()
        loss = rosenbrock(p)
        loss.backward()
        calls.append(float(loss))
        return loss

    first = float(opt.step(closure))
    for _ in range(30 if line_search else 60):
        opt.step(closure)
    final = float(rosenbrock(p.detach()))
    assert final < (1e-8 if line_search else 1e-2) < first
    if line_search:
        np.testing.assert_allclose(p.detach().numpy(), [1.0, 1.0], atol=1e-4)
    state = opt.state[p]
    assert state["func_evals"] == len(calls) and state["n_iter"] > 0


def test_lbfgs_needs_a_closure_and_one_group():
    p = param([1.0])
    with pytest.raises(RuntimeError, match="closure"):
        janus.optim.LBFGS([p]).step()
    with pytest.raises(ValueError, match="parameter groups"):
        janus.optim.LBFGS([{"params": [p]}, {"params": [param([2.0])]}])


# ------------------------------------------------------------- schedulers
def lrs(make, n=12, opt_cls=janus.optim.SGD, lr=0.1, step_metric=None, **okw):
    p = param([1.0])
    opt = opt_cls([p], lr=lr, **okw)
    s = make(opt)
    out = [opt.param_groups[0]["lr"]]
    for i in range(n):
        opt.step()
        s.step() if step_metric is None else s.step(step_metric(i))
        out.append(opt.param_groups[0]["lr"])
    return out, opt


def test_linear_constant_polynomial_multiplicative_closed_forms():
    got, _ = lrs(lambda o: L.LinearLR(o, start_factor=0.25, end_factor=1.0, total_iters=4))
    want = [0.1 * (0.25 + 0.75 * min(4, e) / 4) for e in range(13)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    got, _ = lrs(lambda o: L.ConstantLR(o, factor=0.5, total_iters=3))
    np.testing.assert_allclose(got, [0.05] * 3 + [0.1] * 10, rtol=1e-12)
    got, _ = lrs(lambda o: L.PolynomialLR(o, total_iters=5, power=2.0))
    np.testing.assert_allclose(got, [0.1 * (1 - min(5, e) / 5) ** 2 for e in range(13)], rtol=1e-12, atol=1e-15)
    got, _ = lrs(lambda o: L.MultiplicativeLR(o, lambda e: 0.9))
    np.testing.assert_allclose(got, [0.1 * 0.9 ** e for e in range(13)], rtol=1e-12)


def test_sequential_and_chained():
    got, _ = lrs(lambda o: L.SequentialLR(o, [L.LinearLR(o, 0.1, 1.0, 3), L.ExponentialLR(o, 0.5)], milestones=[3]))
    want = [0.1 * (0.1 + 0.9 * e / 3) for e in range(3)] + [0.1 * 0.5 ** k for k in range(10)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    got, _ = lrs(lambda o: L.ChainedScheduler([L.ConstantLR(o, 0.5, 2), L.ExponentialLR(o, 0.9)]))
    want = [0.1 * 0.9 ** e * (0.5 if e < 2 else 1.0) for e in range(13)]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_one_cycle_and_warm_restarts():
    got, opt = lrs(lambda o: L.OneCycleLR(o, max_lr=1.0, total_steps=12, pct_start=0.25), n=11, momentum=0.9)
    assert got[0] == pytest.approx(1.0 / 25) and max(got) == pytest.approx(1.0)
    assert got[-1] == pytest.approx(1.0 / 25 / 1e4) and int(np.argmax(got)) == 2
    assert opt.param_groups[0]["momentum"] == pytest.approx(0.95)
    got, _ = lrs(lambda o: L.CosineAnnealingWarmRestarts(o, T_0=4, T_mult=2, eta_min=0.01), n=12)
    tcur = [0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 0]
    ti = [4] * 4 + [8] * 8 + [16]
    want = [0.01 + 0.09 * (1 + math.cos(math.pi * c / i)) / 2 for c, i in zip(tcur, ti)]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_reduce_on_plateau():
    metrics = [1.0, 0.9, 0.95, 0.95, 0.95, 0.95, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6]
    got, _ = lrs(lambda o: L.ReduceLROnPlateau(o, factor=0.5, patience=2, cooldown=1, min_lr=0.02),
                 step_metric=lambda i: metrics[i])
    # three bad epochs after 0.9 cut the lr at the 5th step; the 6th is cooldown; 0.5 improves;
    # three bad epochs from 0.6 on cut it again at the 10th, down to min_lr at most
    assert got == [0.1] * 5 + [0.05] * 5 + [0.025] * 3
    s = L.ReduceLROnPlateau(janus.optim.SGD([param([1.0])], lr=1.0), mode="max")
    sd = s.state_dict()
    s.load_state_dict(sd)
    assert s.mode_worse == -math.inf


# --------------------------------------------------------------- PyTorch
def _torch():
    if janus._C._setting_value("JANUS_SANITIZED"):
        pytest.skip("PyTorch is not run under the sanitizers")
    return pytest.importorskip("torch")


@pytest.mark.parametrize("name,kw", [("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1,
                                                       initial_accumulator_value=0.1)),
                                     ("Adadelta", dict(lr=1.0, rho=0.9, weight_decay=0.01)),
                                     ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True))])
def test_optimizers_against_pytorch(name, kw):
    torch = _torch()
    p0 = R.standard_normal((3, 4)).astype(np.float32)
    grads = [R.standard_normal((3, 4)).astype(np.float32) for _ in range(5)]
    jp, tp = janus.nn.Parameter(janus.tensor(p0)), torch.nn.Parameter(torch.tensor(p0))
    jo, to = getattr(janus.optim, name)([jp], **kw), getattr(torch.optim, name)([tp], **kw)
    for g in grads:
        jp.grad, tp.grad = janus.tensor(g), torch.tensor(g)
        jo.step()
        to.step()
    np.testing.assert_allclose(jp.detach().numpy(), tp.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_lbfgs_against_pytorch(line_search):
    torch = _torch()
    A = R.standard_normal((6, 4))
    b = R.standard_normal(6)
    x0 = R.standard_normal(4)

    def trajectory(lib, tensor):
        x = lib.nn.Parameter(tensor(x0.copy()))
        opt = lib.optim.LBFGS([x], lr=0.5, max_iter=8, history_size=3, line_search_fn=line_search)
        At, bt = tensor(A), tensor(b)

        def closure():
            opt.zero_grad()
            r = At.matmul(x) - bt
            loss = (r * r).sum() + (x ** 4).sum() * 0.1
            loss.backward()
            return loss
        out = []
        for _ in range(3):
            opt.step(closure)
            out.append(x.detach().numpy().copy())
        return np.array(out), opt.state[x]["func_evals"]

    jt, jn = trajectory(janus, lambda a: janus.tensor(np.asarray(a, np.float64)))
    tt, tn = trajectory(torch, lambda a: torch.tensor(np.asarray(a, np.float64)))
    np.testing.assert_allclose(jt, tt, rtol=1e-7, atol=1e-9)
    assert jn == tn


SCHEDS = [
    ("LinearLR", dict(start_factor=0.2, total_iters=5)), ("ConstantLR", dict(factor=0.3, total_iters=4)),
    ("PolynomialLR", dict(total_iters=6, power=1.5)), ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=2)),
    ("OneCycleLR", dict(max_lr=0.5, total_steps=16)), ("OneCycleLR", dict(max_lr=0.5, total_steps=16,
                                                                          anneal_strategy="linear", three_phase=True)),
    ("StepLR", dict(step_size=3, gamma=0.5)), ("MultiStepLR", dict(milestones=[2, 5, 5], gamma=0.5)),
    ("ExponentialLR", dict(gamma=0.9)), ("CosineAnnealingLR", dict(T_max=5, eta_min=0.01)),
]


@pytest.mark.parametrize("name,kw", SCHEDS, ids=[s[0] for s in SCHEDS])
def test_schedulers_against_pytorch(name, kw):
    torch = _torch()

    def seq(lib):
        p = lib.nn.Parameter(lib.zeros(1))
        opt = lib.optim.SGD([p], lr=0.1, momentum=0.9)
        s = getattr(lib.optim.lr_scheduler, name)(opt, **kw)
        out = []
        for _ in range(15):
            opt.step()
            s.step()
            out.append((opt.param_groups[0]["lr"], opt.param_groups[0]["momentum"]))
        return out
    np.testing.assert_allclose(seq(janus), seq(torch), rtol=1e-12)


def test_sequential_and_plateau_against_pytorch():
    torch = _torch()

    def seq(lib):
        p = lib.nn.Parameter(lib.zeros(1))
        opt = lib.optim.Adam([p], lr=0.1)
        Ls = lib.optim.lr_scheduler
        s = Ls.SequentialLR(opt, [Ls.LinearLR(opt, 0.1, 1.0, 4), Ls.CosineAnnealingLR(opt, 6)], milestones=[4])
        plateau = Ls.ReduceLROnPlateau(opt, patience=1, factor=0.5)
        out = []
        for i in range(12):
            opt.step()
            s.step() if i < 8 else plateau.step(1.0)
            out.append(opt.param_groups[0]["lr"])
        return out
    np.testing.assert_allclose(seq(janus), seq(torch), rtol=1e-12)
