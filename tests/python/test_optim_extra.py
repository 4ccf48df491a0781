"""NAdam, RAdam, Adamax, ASGD, Rprop and the CyclicLR scheduler: update
formulas against numpy re-implementations of torch's single-tensor code
(float64, fixed random gradients, with and without weight decay, maximize
and each optimizer's own options), state_dict round trips, torch's
argument checks and messages, CyclicLR's schedules against their closed
forms -- and all of it against PyTorch (same initial values, same
gradients) where it imports."""
import importlib.util
import math

import numpy as np
import pytest

import janus
from janus.optim import lr_scheduler as L

R = np.random.default_rng(2024)
SHAPE = (3, 5)
NSTEPS = 10  # RAdam's rectification starts at step 6 with beta2=0.999: both branches run

HAVE_TORCH = importlib.util.find_spec("torch") is not None and not janus._C._setting_value("JANUS_SANITIZED")
needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="PyTorch is not installed (or janus runs sanitized)")


def f32(x):
    """What a float32 0-dim torch tensor holds for x."""
    return float(np.float32(x))


def lerp(a, b, w):
    """torch's CPU lerp (switches form at weight 0.5)."""
    return a + w * (b - a) if abs(w) < 0.5 else b - (b - a) * (1 - w)


def gradients(n=NSTEPS, seed=7):
    """Fixed random gradients, with a column that keeps its sign (Rprop's step
    sizes grow to the maximum), one that alternates (they shrink to the
    minimum) and a step with exact zeros."""
    rng = np.random.default_rng(seed)
    grads = [rng.standard_normal(SHAPE) for _ in range(n)]
    for k, g in enumerate(grads):
        g[:, 0] = np.abs(g[:, 0]) + 0.1
        g[:, 1] = (-1) ** k * (np.abs(g[:, 1]) + 0.1)
    grads[3][2, :] = 0.0
    return grads


P0 = R.standard_normal(SHAPE)
GRADS = gradients()


def param(a):
    return janus.nn.Parameter(janus.tensor(np.array(a, dtype=np.float64)))


def run(name, kw, grads=GRADS, p0=P0):
    p = param(p0)
    opt = getattr(janus.optim, name)([p], **kw)
    for g in grads:
        p.grad = janus.tensor(g)
        opt.step()
    return p, opt


def value(v):
    """A state entry (a janus or torch tensor, or a number) as numpy."""
    return np.asarray(v.detach().numpy() if hasattr(v, "numpy") else v, dtype=np.float64)


# ------------------------------------------------------- numpy references
def nadam_ref(p, grads, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
              decoupled_weight_decay=False, maximize=False):
    b1, b2 = betas
    m, v, mu_product = np.zeros_like(p), np.zeros_like(p), 1.0
    for k, g in enumerate(grads, 1):
        g = -g if maximize else g
        if weight_decay:
            if decoupled_weight_decay:
                p = p * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * p
        mu = b1 * (1 - 0.5 * 0.96 ** (k * momentum_decay))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((k + 1) * momentum_decay))
        mu_product = f32(mu_product * f32(mu))  # torch's float32 mu_product tensor
        m = lerp(m, g, 1 - b1)
        v = b2 * v + (1 - b2) * g * g
        denom = np.sqrt(v / (1 - b2 ** k)) + eps
        p = p - lr * (1 - mu) / (1 - mu_product) * g / denom
        p = p - lr * mu_next / (1 - mu_product * mu_next) * m / denom
    return p, dict(step=len(grads), mu_product=mu_product, exp_avg=m, exp_avg_sq=v)


def radam_ref(p, grads, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
              maximize=False):
    b1, b2 = betas
    m, v = np.zeros_like(p), np.zeros_like(p)
    rho_inf = 2 / (1 - b2) - 1
    for k, g in enumerate(grads, 1):
        g = -g if maximize else g
        if weight_decay:
            if decoupled_weight_decay:
                p = p * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * p
        m = lerp(m, g, 1 - b1)
        v = b2 * v + (1 - b2) * g * g
        bc1, bc2 = 1 - b1 ** k, 1 - b2 ** k
        rho_t = rho_inf - 2 * k * b2 ** k / bc2
        if rho_t > 5:
            rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            p = p - m / bc1 * lr * math.sqrt(bc2) / (np.sqrt(v) + eps) * rect
        else:
            p = p - m / bc1 * lr
    return p, dict(step=len(grads), exp_avg=m, exp_avg_sq=v)


def adamax_ref(p, grads, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, maximize=False):
    b1, b2 = betas
    m, u = np.zeros_like(p), np.zeros_like(p)
    for k, g in enumerate(grads, 1):
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * p
        m = lerp(m, g, 1 - b1)
        u = np.maximum(b2 * u, np.abs(g) + eps)
        p = p - lr / (1 - b1 ** k) * m / u
    return p, dict(step=len(grads), exp_avg=m, exp_inf=u)


def asgd_ref(p, grads, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, maximize=False):
    eta, mu, ax = f32(lr), 1.0, np.zeros_like(p)  # eta and mu: torch's float32 tensors
    for k, g in enumerate(grads, 1):
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * p
        p = p * (1 - lambd * eta)
        p = p - eta * g
        ax = ax + (p - ax) * mu if mu != 1 else p.copy()
        eta = f32(lr / (1 + lambd * lr * k) ** alpha)
        mu = f32(1 / max(1, k - t0))
    return p, dict(step=len(grads), eta=eta, mu=mu, ax=ax)


def rprop_ref(p, grads, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False):
    etaminus, etaplus = etas
    prev, size = np.zeros_like(p), np.full_like(p, lr)
    for g in grads:
        g = -g if maximize else g
        s = np.sign(g * prev)
        factor = np.where(s > 0, etaplus, np.where(s < 0, etaminus, 1.0))
        size = np.clip(size * factor, *step_sizes)
        g = np.where(s < 0, 0.0, g)
        p = p - np.sign(g) * size
        prev = g
    return p, dict(step=len(grads), prev=prev, step_size=size)


REFS = {"NAdam": nadam_ref, "RAdam": radam_ref, "Adamax": adamax_ref, "ASGD": asgd_ref, "Rprop": rprop_ref}

CASES = [
    ("NAdam", dict()),
    ("NAdam", dict(lr=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("NAdam", dict(lr=0.01, momentum_decay=0.05, eps=1e-6)),
    ("RAdam", dict()),
    ("RAdam", dict(lr=0.01, weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("Adamax", dict()),
    ("Adamax", dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1, eps=1e-3)),
    ("Adamax", dict(lr=0.01, maximize=True)),
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=3, weight_decay=0.1)),
    ("ASGD", dict(lr=0.05, t0=0, maximize=True)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(0.01, 0.08))),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(0.01, 0.08), maximize=True)),
]
IDS = [f"{n}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'defaults'}" for n, kw in CASES]

STATE_KEYS = {"NAdam": ["step", "mu_product", "exp_avg", "exp_avg_sq"], "RAdam": ["step", "exp_avg", "exp_avg_sq"],
              "Adamax": ["step", "exp_avg", "exp_inf"], "ASGD": ["step", "eta", "mu", "ax"],
              "Rprop": ["step", "prev", "step_size"]}


@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_update_formula_against_numpy(name, kw):
    p, opt = run(name, kw)
    want_p, want_state = REFS[name](P0.copy(), GRADS, **kw)
    np.testing.assert_allclose(p.detach().numpy(), want_p, rtol=1e-12, atol=1e-15)
    state = opt.state[p]
    assert list(state) == STATE_KEYS[name]
    assert state["step"] == NSTEPS
    for key, want in want_state.items():
        if key in ("mu_product", "eta", "mu"):
            assert state[key] == want, key  # the float32 rounding, exactly
        else:
            np.testing.assert_allclose(value(state[key]), want, rtol=1e-12, atol=1e-15, err_msg=key)
    assert not np.allclose(p.detach().numpy(), P0)  # the parameter moved


def test_the_cases_exercise_each_branch():
    # RAdam: steps 1-5 are momentum SGD, the rest rectified; a formula without the switch differs
    b2 = 0.999
    rho_inf = 2 / (1 - b2) - 1
    rho = [rho_inf - 2 * k * b2 ** k / (1 - b2 ** k) for k in range(1, NSTEPS + 1)]
    assert rho[4] <= 5 < rho[5]
    # Rprop: step sizes reach both bounds, and a flip zeroes the stored gradient
    p, opt = run("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(0.01, 0.08)))
    size = opt.state[p]["step_size"].numpy()
    assert size.max() == 0.08 and size.min() == 0.01
    assert (opt.state[p]["prev"].numpy() == 0).any()
    # ASGD: with t0=3 the average lags the parameter; with the default t0 it is the parameter
    p, opt = run("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=3))
    assert opt.state[p]["mu"] == f32(1 / (NSTEPS - 3))
    assert not np.allclose(opt.state[p]["ax"].numpy(), p.detach().numpy())
    p, opt = run("ASGD", dict())
    np.testing.assert_array_equal(opt.state[p]["ax"].numpy(), p.detach().numpy())
    assert opt.state[p]["eta"] == f32(0.01 / (1 + 1e-4 * 0.01 * NSTEPS) ** 0.75) != 0.01 / (1 + 1e-6 * NSTEPS) ** 0.75
    # NAdam: mu_product is float32-rounded, so differs from the float64 product
    p, opt = run("NAdam", dict())
    exact = math.prod(0.9 * (1 - 0.5 * 0.96 ** (k * 4e-3)) for k in range(1, NSTEPS + 1))
    assert opt.state[p]["mu_product"] != exact and opt.state[p]["mu_product"] == pytest.approx(exact, rel=1e-6)


@pytest.mark.parametrize("name", sorted(REFS))
def test_groups_skipped_params_and_closure(name):
    a, b, c = param(P0), param(P0[:2]), param(P0[0])
    opt = getattr(janus.optim, name)([{"params": [a, c]}, {"params": [b], "lr": 0.05}])
    a.grad, b.grad = janus.tensor(GRADS[0]), janus.tensor(GRADS[1][:2])
    assert opt.step(lambda: 3.5) == 3.5
    assert c not in opt.state or len(opt.state[c]) == 0  # no gradient: no state, no move
    np.testing.assert_array_equal(c.detach().numpy(), P0[0])
    want_b, _ = REFS[name](P0[:2].copy(), [GRADS[1][:2]], lr=0.05)
    np.testing.assert_allclose(b.detach().numpy(), want_b, rtol=1e-12, atol=1e-15)
    assert opt.param_groups[1]["lr"] == 0.05 and opt.param_groups[0]["lr"] == opt.defaults["lr"]


@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_state_dict_round_trip_continues_identically(name, kw):
    first, rest = GRADS[:4], gradients(6, seed=8)
    p, opt = run(name, kw, grads=first)
    sd = opt.state_dict()
    assert list(sd["state"][0]) == STATE_KEYS[name] and sd["state"][0]["step"] == 4
    group = sd["param_groups"][0]
    assert group["params"] == [0] and all(group[k] == v for k, v in kw.items() if k not in ("betas", "etas",
                                                                                             "step_sizes"))
    q = param(p.detach().numpy())
    other = getattr(janus.optim, name)([q], **kw)
    other.load_state_dict(sd)
    assert list(other.state[q]) == STATE_KEYS[name]
    for g in rest:
        p.grad, q.grad = janus.tensor(g), janus.tensor(g)
        opt.step()
        other.step()
    np.testing.assert_array_equal(q.detach().numpy(), p.detach().numpy())
    for key in STATE_KEYS[name]:
        np.testing.assert_array_equal(value(other.state[q][key]), value(opt.state[p][key]), err_msg=key)
    # the loaded state is a copy: the first optimizer's steps did not move the second's
    want, _ = REFS[name](P0.copy(), first + rest, **kw)
    np.testing.assert_allclose(q.detach().numpy(), want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", sorted(REFS))
def test_setstate_fills_missing_options(name):
    opt = getattr(janus.optim, name)([param(P0)])
    state = opt.__getstate__()
    for group in state["param_groups"]:
        for key in ("maximize", "foreach", "capturable", "differentiable", "decoupled_weight_decay"):
            group.pop(key, None)
    fresh = getattr(janus.optim, name).__new__(getattr(janus.optim, name))
    fresh.__setstate__(state)
    assert fresh.param_groups[0]["maximize"] is False
    if name in ("NAdam", "RAdam"):
        assert fresh.param_groups[0]["decoupled_weight_decay"] is False


BAD = [
    ("NAdam", dict(lr=-1.0), "Invalid learning rate: -1.0"),
    ("NAdam", dict(lr=float("nan")), "Invalid learning rate: nan"),
    ("NAdam", dict(eps=-1e-8), "Invalid epsilon value: -1e-08"),
    ("NAdam", dict(betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
    ("NAdam", dict(betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    ("NAdam", dict(weight_decay=-0.1), "Invalid weight_decay value: -0.1"),
    ("NAdam", dict(momentum_decay=-0.004), "Invalid momentum_decay value: -0.004"),
    ("RAdam", dict(lr=-0.5), "Invalid learning rate: -0.5"),
    ("RAdam", dict(eps=-1.0), "Invalid epsilon value: -1.0"),
    ("RAdam", dict(betas=(-0.1, 0.999)), "Invalid beta parameter at index 0: -0.1"),
    ("RAdam", dict(betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1.0"),
    ("RAdam", dict(weight_decay=-1), "Invalid weight_decay value: -1"),
    ("Adamax", dict(lr=-1), "Invalid learning rate: -1"),
    ("Adamax", dict(eps=-0.1), "Invalid epsilon value: -0.1"),
    ("Adamax", dict(betas=(1.5, 0.999)), "Invalid beta parameter at index 0: 1.5"),
    ("Adamax", dict(betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1.0"),
    ("Adamax", dict(weight_decay=-0.01), "Invalid weight_decay value: -0.01"),
    ("ASGD", dict(lr=-0.01), "Invalid learning rate: -0.01"),
    ("ASGD", dict(lambd=-1e-4), "Invalid lambd value: -0.0001"),
    ("ASGD", dict(alpha=-0.75), "Invalid alpha value: -0.75"),
    ("ASGD", dict(weight_decay=-2), "Invalid weight_decay value: -2"),
    ("Rprop", dict(lr=-0.01), "Invalid learning rate: -0.01"),
    ("Rprop", dict(etas=(1.0, 1.2)), "Invalid eta values: 1.0, 1.2"),
    ("Rprop", dict(etas=(0.5, 1.0)), "Invalid eta values: 0.5, 1.0"),
    ("Rprop", dict(etas=(0, 1.2)), "Invalid eta values: 0, 1.2"),
]


@pytest.mark.parametrize("name,kw,message", BAD, ids=[f"{b[0]}-{b[2]}" for b in BAD])
def test_invalid_arguments(name, kw, message):
    with pytest.raises(ValueError) as e:
        getattr(janus.optim, name)([param(P0)], **kw)
    assert str(e.value) == message


@pytest.mark.parametrize("name", sorted(REFS))
def test_foreach_capturable_accepted_differentiable_not(name):
    cls = getattr(janus.optim, name)
    opt = cls([param(P0)], foreach=True, capturable=True)
    assert opt.param_groups[0]["foreach"] is True and opt.param_groups[0]["capturable"] is True
    with pytest.raises(NotImplementedError, match="differentiable=True"):
        cls([param(P0)], differentiable=True)


def test_exported():
    for name in REFS:
        assert name in janus.optim.__all__ and issubclass(getattr(janus.optim, name), janus.optim.Optimizer)
    assert "CyclicLR" in L.__all__


# ---------------------------------------------------------------- CyclicLR
def schedule(make, n, opt_cls=janus.optim.SGD, **okw):
    """(lr, momentum or beta1) after construction and after each of n steps."""
    p = param([1.0])
    opt = opt_cls([p], **okw)
    s = make(opt)

    def now():
        g = opt.param_groups[0]
        return g["lr"], (g["betas"][0] if "betas" in g else g.get("momentum"))
    out = [now()]
    for _ in range(n):
        opt.step()
        s.step()
        out.append(now())
    return out, s, opt


def cyclic_closed_form(e, base, top, up, down, scale):
    """The triangle wave: 0 at the cycle start, 1 at up, 0 again at up + down;
    scale(cycle, e) gives the cycle's height."""
    total = up + down
    cycle, pos = e // total + 1, e % total
    f = pos / up if pos <= up else 1 - (pos - up) / down
    return base + (top - base) * f * scale(cycle, e)


MODES = [("triangular", {}, lambda c, e: 1.0),
         ("triangular2", {}, lambda c, e: 0.5 ** (c - 1)),
         ("exp_range", dict(gamma=0.95), lambda c, e: 0.95 ** e)]


@pytest.mark.parametrize("mode,extra,scale", MODES, ids=[m[0] for m in MODES])
@pytest.mark.parametrize("up,down", [(4, None), (4, 2)])
def test_cyclic_lr_closed_forms(mode, extra, scale, up, down):
    n = 3 * (up + (down or up))  # three cycles
    got, s, opt = schedule(lambda o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=up, step_size_down=down,
                                                mode=mode, base_momentum=0.8, max_momentum=0.95, **extra),
                           n, lr=0.5, momentum=0.3)
    down = down or up
    lrs = [cyclic_closed_form(e, 0.01, 0.1, up, down, scale) for e in range(n + 1)]
    # momentum cycles the other way: max_momentum at the lr's base, base_momentum at its peak
    moms = [0.95 - (cyclic_closed_form(e, 0.01, 0.1, up, down, scale) - 0.01) / 0.09 * 0.15 for e in range(n + 1)]
    np.testing.assert_allclose([g[0] for g in got], lrs, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose([g[1] for g in got], moms, rtol=1e-12, atol=1e-15)
    height = scale(1, up)  # the first peak's height (exp_range: gamma ** up)
    assert got[0] == (0.01, 0.95)  # lr=0.5 and momentum=0.3 are replaced
    assert max(g[0] for g in got) == got[up][0] == pytest.approx(0.01 + 0.09 * height)
    assert got[up][1] == pytest.approx(0.95 - 0.15 * height) and got[up + down][0] == pytest.approx(0.01)
    assert s.get_last_lr() == [got[-1][0]] and s.last_epoch == n
    assert opt.param_groups[0]["initial_lr"] == 0.01 and s.base_lrs == [0.01]
    assert opt.param_groups[0]["max_momentum"] == 0.95 and opt.param_groups[0]["base_momentum"] == 0.8


def test_cyclic_lr_scale_fn_groups_and_no_momentum():
    got, s, _ = schedule(lambda o: L.CyclicLR(o, 0.0, 1.0, step_size_up=2, scale_fn=lambda x: 1 / (x + 1),
                                              scale_mode="iterations", cycle_momentum=False),
                         8, momentum=0.5)
    want = [0.0, 0.5 / 2, 1.0 / 3, 0.5 / 4, 0.0, 0.5 / 6, 1.0 / 7, 0.5 / 8, 0.0]  # scaled by iteration, from 0
    np.testing.assert_allclose([g[0] for g in got], want, rtol=1e-12, atol=1e-15)
    assert all(g[1] == 0.5 for g in got)  # cycle_momentum=False leaves momentum alone
    # per-group base_lr/max_lr lists; Adam's beta1 cycles
    a, b = param([1.0]), param([2.0])
    opt = janus.optim.Adam([{"params": [a]}, {"params": [b]}], betas=(0.5, 0.99))
    s = L.CyclicLR(opt, base_lr=[0.1, 0.2], max_lr=[0.3, 1.0], step_size_up=1, base_momentum=[0.7, 0.6])
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.2]
    assert [g["betas"] for g in opt.param_groups] == [(0.9, 0.99), (0.9, 0.99)]
    opt.step()
    s.step()
    assert [g["lr"] for g in opt.param_groups] == pytest.approx([0.3, 1.0])
    assert [g["betas"] for g in opt.param_groups] == [pytest.approx((0.7, 0.99)), pytest.approx((0.6, 0.99))]


def test_cyclic_lr_errors():
    opt = janus.optim.SGD([param([1.0])], lr=0.1, momentum=0.9)
    with pytest.raises(ValueError) as e:
        L.CyclicLR(opt, 0.01, 0.1, mode="sawtooth")
    assert str(e.value) == "mode is invalid and scale_fn is None"
    with pytest.raises(ValueError) as e:
        L.CyclicLR(opt, [0.01, 0.02], 0.1)
    assert str(e.value) == "base_lr must have the same length as optimizer.param_groups. base_lr has 2 values, " \
                           "param_groups has 1."
    with pytest.raises(ValueError) as e:
        L.CyclicLR(janus.optim.Adagrad([param([1.0])]), 0.01, 0.1)
    assert str(e.value) == "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"
    L.CyclicLR(janus.optim.Adagrad([param([1.0])]), 0.01, 0.1, cycle_momentum=False)  # fine without momentum
    with pytest.raises(TypeError, match="is not an Optimizer"):
        L.CyclicLR(object(), 0.01, 0.1)


class Halving:
    """A callable scale_fn with state (saved in state_dict, unlike a function)."""

    def __init__(self, base):
        self.base = base

    def __call__(self, x):
        return self.base ** (x - 1)


def test_cyclic_lr_state_dict_round_trip():
    def make(scale_fn=None, **kw):
        p = param([1.0])
        opt = janus.optim.SGD([p], lr=0.1, momentum=0.9)
        return opt, L.CyclicLR(opt, 0.01, 0.1, step_size_up=3, step_size_down=2, scale_fn=scale_fn, **kw)

    for kw in (dict(mode="triangular2"), dict(mode="exp_range", gamma=0.9), dict(scale_fn=Halving(0.7))):
        opt, s = make(**kw)
        for _ in range(7):
            opt.step()
            s.step()
        sd = s.state_dict()
        assert "_scale_fn_ref" not in sd and "optimizer" not in sd and sd["last_epoch"] == 7
        assert sd["_scale_fn_custom"] == ({"base": 0.7} if "scale_fn" in kw else None)
        kw2 = dict(kw, scale_fn=Halving(0.2)) if "scale_fn" in kw else kw
        opt2, s2 = make(**kw2)
        s2.load_state_dict(sd)
        assert "_scale_fn_custom" in sd  # the caller's dict is left whole
        if "scale_fn" in kw:
            assert s2._scale_fn_custom.base == 0.7
        opt2.load_state_dict(opt.state_dict())
        for _ in range(9):
            opt.step()
            s.step()
            opt2.step()
            s2.step()
            assert opt2.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
            assert opt2.param_groups[0]["momentum"] == opt.param_groups[0]["momentum"]


# --------------------------------------------------------------- PyTorch
def _torch():
    import torch
    return torch


@needs_torch
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_against_pytorch(name, kw, dtype):
    torch = _torch()
    p0, grads = P0.astype(dtype), [g.astype(dtype) for g in GRADS]
    jp, tp = janus.nn.Parameter(janus.tensor(p0)), torch.nn.Parameter(torch.tensor(p0))
    jo = getattr(janus.optim, name)([jp], **kw)
    to = getattr(torch.optim, name)([tp], foreach=False, **kw)
    for g in grads:
        jp.grad, tp.grad = janus.tensor(g), torch.tensor(g)
        jo.step()
        to.step()
    # torch's CPU kernels fuse multiply-adds (add with alpha, lerp, addcmul, addcdiv) and janus's do not:
    # a last-bit difference per operation
    tol = dict(rtol=1e-12, atol=1e-15) if dtype == "float64" else dict(rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jp.detach().numpy(), tp.detach().numpy(), **tol)
    js, ts = jo.state[jp], to.state[tp]
    assert list(js) == list(ts)
    for key in ts:
        if key in ("step", "mu_product", "eta", "mu"):
            assert value(js[key]) == ts[key].item(), key  # torch's float32 scalars, exactly
        else:
            np.testing.assert_allclose(value(js[key]), ts[key].numpy(), err_msg=key, **tol)
    jg, tg = jo.state_dict()["param_groups"][0], to.state_dict()["param_groups"][0]
    assert set(jg) == set(tg) and all(jg[k] == tg[k] for k in tg if k not in ("foreach", "betas", "etas",
                                                                             "step_sizes"))


@needs_torch
@pytest.mark.parametrize("name,kw", CASES[::2], ids=IDS[::2])
def test_pytorch_state_dict_loads_and_continues(name, kw):
    torch = _torch()
    tp = torch.nn.Parameter(torch.tensor(P0))
    to = getattr(torch.optim, name)([tp], foreach=False, **kw)
    for g in GRADS[:5]:
        tp.grad = torch.tensor(g)
        to.step()
    sd = to.state_dict()
    # torch's state (0-dim float32 tensors for step, mu_product, eta, mu) in janus tensors
    state = {i: {k: janus.tensor(v.numpy()) for k, v in s.items()} for i, s in sd["state"].items()}
    jp = param(tp.detach().numpy())
    jo = getattr(janus.optim, name)([jp], **kw)
    jo.load_state_dict({"state": state, "param_groups": sd["param_groups"]})
    for g in GRADS[5:]:
        tp.grad, jp.grad = torch.tensor(g), janus.tensor(g)
        to.step()
        jo.step()
    np.testing.assert_allclose(jp.detach().numpy(), tp.detach().numpy(), rtol=1e-12, atol=1e-15)
    for key in STATE_KEYS[name]:
        np.testing.assert_allclose(value(jo.state[jp][key]), to.state[tp][key].numpy(), rtol=1e-12, atol=1e-15,
                                   err_msg=key)


@needs_torch
@pytest.mark.parametrize("name,kw", [(n, kw) for n, kw, _ in BAD], ids=[f"{b[0]}-{b[2]}" for b in BAD])
def test_invalid_argument_messages_are_pytorchs(name, kw):
    torch = _torch()
    with pytest.raises(ValueError) as want:
        getattr(torch.optim, name)([torch.nn.Parameter(torch.zeros(2))], **kw)
    with pytest.raises(ValueError) as got:
        getattr(janus.optim, name)([param([0.0, 0.0])], **kw)
    assert str(got.value) == str(want.value)


CYCLIC = [dict(mode="triangular"), dict(mode="triangular2", step_size_down=2), dict(mode="exp_range", gamma=0.93),
          dict(mode="exp_range", gamma=0.9, step_size_down=5, base_momentum=0.5, max_momentum=0.99),
          dict(scale_fn=Halving(0.6)), dict(scale_fn=Halving(0.98), scale_mode="iterations"),
          dict(mode="triangular", cycle_momentum=False)]


@needs_torch
@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
@pytest.mark.parametrize("kw", CYCLIC, ids=[str(i) for i in range(len(CYCLIC))])
def test_cyclic_lr_against_pytorch(kw, opt_name):
    torch = _torch()

    def seq(lib):
        p = lib.nn.Parameter(lib.zeros(1))
        opt = (lib.optim.SGD([p], lr=0.1, momentum=0.9) if opt_name == "SGD"
               else lib.optim.Adam([p], lr=0.1, betas=(0.9, 0.99)))
        s = lib.optim.lr_scheduler.CyclicLR(opt, base_lr=0.01, max_lr=0.2, step_size_up=3, **kw)
        out = []
        for _ in range(25):  # 2-4 cycles
            g = opt.param_groups[0]
            out.append((g["lr"], g["momentum"] if opt_name == "SGD" else g["betas"][0], s.last_epoch))
            opt.step()
            s.step()
        sd = s.state_dict()
        return out, {k: v for k, v in sd.items() if k not in ("_last_lr", "_get_lr_called_within_step",
                                                              "_step_count", "verbose", "_is_initial")}
    (jseq, jsd), (tseq, tsd) = seq(janus), seq(torch)
    np.testing.assert_allclose(jseq, tseq, rtol=1e-12)
    assert jsd == tsd
