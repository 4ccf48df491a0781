"""The API the second corpus batch (tests/corpus: vit_fashion,
gan_hinge_spectral, lstm_forecast, mixup_ema_amp) needed, checked against
PyTorch when it is installed, else against math / numpy references:

- torch.distributions.Beta (mixup's lambda), Gamma and Dirichlet: sample
  moments, log_prob, entropy, mean / mode / variance, kl_divergence, and
  the rsample gradient janus has (Gamma's rate) and the one it refuses (a
  concentration's);
- sample() of a distribution with scalar parameters (shape ()), which
  Normal and Uniform failed on;
- a deep-copied module's buffers (AveragedModel, a hand-written EMA, a
  model torch.load'ed whole) count as module state in a recording, so the
  copy's BatchNorm regions are not refused as reading "a global or an
  attribute tensor";
- F.interpolate (nn.Upsample) builds its source indices and weights with
  ops (arange in float64), not from Python data, so a module that
  resamples stays a replaceable replay region; its values are PyTorch's;
- `janus check` flags grad / backward(create_graph=True) (WGAN-GP's
  gradient penalty), which janus cannot run (no double backward)."""
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import janus
import janus.nn as nn
from janus.distributions import Beta, Dirichlet, Gamma, Normal, Uniform, kl_divergence
from janus.distributions.gamma import _digamma, _lgamma

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(ROOT, "build")))

try:
    import torch  # the reference (PyTorch) when installed
    if "janus" in (getattr(torch, "__file__", "") or ""):
        torch = None
except ImportError:
    torch = None


def _np(t):
    return np.asarray(t.tolist(), dtype=np.float64)


def test_lgamma_and_digamma_match_references():
    xs = [1e-3, 0.1, 0.4, 0.5, 1.0, 1.5, 2.5, 7.0, 10.0, 123.4, 1e5]
    x = janus.tensor(xs, dtype=janus.float64)
    np.testing.assert_allclose(_np(_lgamma(x)), [math.lgamma(v) for v in xs], rtol=1e-9, atol=1e-9)
    if torch is not None:
        ref = torch.digamma(torch.tensor(xs, dtype=torch.float64)).tolist()
    else:  # d/dx lgamma by a central difference
        ref = [(math.lgamma(v * (1 + 1e-6)) - math.lgamma(v * (1 - 1e-6))) / (2e-6 * v) for v in xs]
    np.testing.assert_allclose(_np(_digamma(x)), ref, rtol=1e-6 if torch is None else 1e-9, atol=1e-9)
    assert _lgamma(janus.tensor([2.5])).dtype == janus.float32


@pytest.mark.parametrize("a,b", [(0.4, 0.4), (2.0, 5.0), (0.2, 3.0), (30.0, 30.0)])
def test_beta_samples_have_the_right_moments(a, b):
    janus.manual_seed(1)
    d = Beta(a, b)
    s = d.sample((40000,))
    assert s.shape == (40000,) and s.dtype == janus.float32 and d.batch_shape == ()
    v = _np(s)
    assert (v > 0).all() and (v < 1).all()
    mean, var = a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1))
    assert abs(v.mean() - mean) < 5 * math.sqrt(var / len(v))
    assert abs(v.var() - var) < 0.05 * var
    assert d.mean.item() == pytest.approx(mean) and d.variance.item() == pytest.approx(var)


def test_gamma_and_dirichlet_samples_have_the_right_moments():
    janus.manual_seed(2)
    conc, rate = janus.tensor([0.3, 1.0, 4.0]), janus.tensor([1.0, 2.0, 0.5])
    g = Gamma(conc, rate).sample((40000,))
    assert g.shape == (40000, 3) and (_np(g) > 0).all()
    np.testing.assert_allclose(_np(g).mean(0), [0.3, 0.5, 8.0], rtol=0.03)
    np.testing.assert_allclose(_np(g).var(0), [0.3, 0.25, 16.0], rtol=0.06)
    alpha = janus.tensor([0.5, 1.0, 3.0])
    d = Dirichlet(alpha)
    x = d.sample((20000,))
    assert d.event_shape == (3,) and d.batch_shape == () and x.shape == (20000, 3)
    np.testing.assert_allclose(_np(x).sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(_np(x).mean(0), [0.5 / 4.5, 1 / 4.5, 3 / 4.5], atol=0.005)
    np.testing.assert_allclose(_np(x).var(0), _np(d.variance), rtol=0.06)


def test_samples_are_reproducible_with_manual_seed():
    janus.manual_seed(7)
    a = Beta(janus.tensor(0.4), janus.tensor(0.4)).sample((5,))
    janus.manual_seed(7)
    b = Beta(janus.tensor(0.4), janus.tensor(0.4)).sample((5,))
    assert a.tolist() == b.tolist()


def _ref_beta_logpdf(x, a, b):
    return (a - 1) * math.log(x) + (b - 1) * math.log1p(-x) + math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)


def test_log_prob_entropy_and_kl():
    a, b = janus.tensor([0.4, 2.0, 5.0]), janus.tensor([0.4, 3.0, 1.5])
    x = janus.tensor([0.3, 0.5, 0.9])
    lp = Beta(a, b).log_prob(x)
    ref = [_ref_beta_logpdf(*v) for v in zip(x.tolist(), a.tolist(), b.tolist())]
    np.testing.assert_allclose(_np(lp), ref, rtol=1e-5, atol=1e-5)
    if torch is None:
        return
    ta, tb, tx = (torch.tensor(t.tolist()) for t in (a, b, x))
    TB, TG, TD = torch.distributions.Beta, torch.distributions.Gamma, torch.distributions.Dirichlet
    close = dict(rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(Beta(a, b).entropy()), TB(ta, tb).entropy().tolist(), **close)
    np.testing.assert_allclose(_np(Beta(a, b).mode), TB(ta, tb).mode.tolist(), **close)
    np.testing.assert_allclose(_np(Gamma(a, b).log_prob(x)), TG(ta, tb).log_prob(tx).tolist(), **close)
    np.testing.assert_allclose(_np(Gamma(a, b).entropy()), TG(ta, tb).entropy().tolist(), **close)
    np.testing.assert_allclose(_np(Gamma(a, b).mode), TG(ta, tb).mode.tolist(), **close)
    np.testing.assert_allclose(_np(kl_divergence(Beta(a, b), Beta(b, a))),
                               torch.distributions.kl_divergence(TB(ta, tb), TB(tb, ta)).tolist(), **close)
    np.testing.assert_allclose(_np(kl_divergence(Gamma(a, b), Gamma(b, a))),
                               torch.distributions.kl_divergence(TG(ta, tb), TG(tb, ta)).tolist(), **close)
    c = janus.tensor([[0.5, 2.0, 3.0], [1.0, 1.0, 4.0]])
    tc = torch.tensor(c.tolist())
    v = janus.tensor([[0.2, 0.3, 0.5], [0.1, 0.6, 0.3]])
    np.testing.assert_allclose(_np(Dirichlet(c).log_prob(v)), TD(tc).log_prob(torch.tensor(v.tolist())).tolist(),
                               **close)
    np.testing.assert_allclose(_np(Dirichlet(c).entropy()), TD(tc).entropy().tolist(), **close)
    np.testing.assert_allclose(_np(Dirichlet(c).mode), TD(tc).mode.tolist(), **close)
    np.testing.assert_allclose(_np(kl_divergence(Dirichlet(c), Dirichlet(c.flip(-1)))),
                               torch.distributions.kl_divergence(TD(tc), TD(tc.flip(-1))).tolist(), **close)


def test_log_prob_is_differentiable_in_the_concentrations():
    a = janus.tensor([2.0, 0.7], requires_grad=True)
    Beta(a, janus.tensor([3.0, 0.9])).log_prob(janus.tensor([0.25, 0.6])).sum().backward()
    # d/da log Beta(x; a, b) = log x + digamma(a + b) - digamma(a)
    eps = 1e-6
    num = [(_ref_beta_logpdf(x, av + eps, bv) - _ref_beta_logpdf(x, av - eps, bv)) / (2 * eps)
           for x, av, bv in ((0.25, 2.0, 3.0), (0.6, 0.7, 0.9))]
    np.testing.assert_allclose(_np(a.grad), num, rtol=1e-4)


def test_rsample_gradients():
    rate = janus.tensor([2.0, 4.0], requires_grad=True)
    janus.manual_seed(3)
    s = Gamma(janus.tensor([1.5, 3.0]), rate).rsample()
    s.sum().backward()
    np.testing.assert_allclose(_np(rate.grad), -_np(s.detach()) / _np(rate.detach()), rtol=1e-6)
    conc = janus.tensor([0.4], requires_grad=True)
    with pytest.raises(NotImplementedError, match="implicit reparameterization"):
        Beta(conc, conc).rsample()
    assert not Beta(conc, conc).sample().requires_grad  # sample() never needs that gradient


def test_scalar_distributions_sample_shape_0d():
    janus.manual_seed(0)
    for d in (Normal(0.0, 1.0), Uniform(0.0, 1.0), Beta(0.4, 0.4), Gamma(2.0, 1.0)):
        s = d.sample()
        assert s.shape == () and s.dtype == janus.float32, type(d).__name__
        assert d.sample((3,)).shape == (3,)
        assert d.rsample().shape == ()
    assert Normal(janus.zeros(2), 1.0).sample((4,)).shape == (4, 2)


def test_deepcopied_buffers_stay_buffers():
    import copy
    m = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    c = copy.deepcopy(m)
    assert [n for n, _ in c.named_buffers()] == [n for n, _ in m.named_buffers()]
    assert all(a is not b for a, b in zip(c.buffers(), m.buffers()))
    assert c[1].running_var.tolist() == [1.0, 1.0]


EMA_SCRIPT = """
import torch
import torch.nn as nn
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
torch.manual_seed(0)
net = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(256, 3))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
ema = AveragedModel(net, multi_avg_fn=get_ema_multi_avg_fn(0.9), use_buffers=True)
x, y = torch.randn(16, 1, 8, 8), torch.randint(0, 3, (16,))
for epoch in range(3):
    net.train()
    for step in range(4):
        loss = nn.functional.cross_entropy(net(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        ema.update_parameters(net)
        print(f"loss {loss.item():.6f}")
    ema.eval()
    with torch.no_grad():
        for i in range(3):
            print("ema", ema(x[i * 4:(i + 1) * 4]).sum().item())
"""


UPSAMPLE_SCRIPT = """
import torch
import torch.nn as nn
torch.manual_seed(0)
net = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.Upsample(scale_factor=2, mode="nearest"),
                    nn.Conv2d(4, 2, 3, padding=1), nn.Upsample(size=(13, 11), mode="bilinear"))
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
x = torch.randn(4, 2, 5, 6)
for step in range(8):
    loss = net(x).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    print(f"loss {loss.item():.6f}")
"""


def _record_and_optimize(tmp_path, script):
    s = tmp_path / "script.py"
    s.write_text(script)
    env = dict(os.environ, JANUS_BUILD_DIR=BUILD,
               PYTHONPATH=os.path.join(ROOT, "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for k in ("JANUS_RECORD_DB", "JANUS_RECORD_RUN", "JANUS_REPLAY_DB", "JANUS_REPLAY_RUN"):
        env.pop(k, None)
    db = str(tmp_path / "run.db")
    janus_bin = os.path.join(BUILD, "janus")
    p = subprocess.run([janus_bin, "record", "--db", db, sys.executable, str(s)], capture_output=True, text=True,
                       env=env, cwd=tmp_path, timeout=120)
    assert p.returncode == 0, p.stderr
    o = subprocess.run([janus_bin, "optimize", "--no-compile", db], capture_output=True, text=True, env=env,
                       cwd=tmp_path, timeout=120)
    assert o.returncode == 0, o.stderr
    return o.stdout + o.stderr


@pytest.mark.skipif(not os.path.exists(os.path.join(BUILD, "janus")), reason="janus not built")
@pytest.mark.parametrize("script", [EMA_SCRIPT, UPSAMPLE_SCRIPT], ids=["averaged_model", "upsample"])
def test_regions_are_not_refused(tmp_path, script):
    # AveragedModel: the deep copy's BatchNorm buffers are state; Upsample: interpolate's
    # indices are made by ops, not from Python data
    out = _record_and_optimize(tmp_path, script)
    assert "regions:" in out and " 0 refused" in out, out


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "bilinear"])
@pytest.mark.parametrize("kw", [dict(scale_factor=2), dict(scale_factor=1.7), dict(scale_factor=0.6),
                                dict(size=(11, 4)), dict(size=(1, 1))], ids=str)
def test_interpolate_matches_pytorch(mode, kw):
    if torch is None:
        pytest.skip("needs PyTorch")
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 7)).astype(np.float32)
    for ac in ((None, True) if mode == "bilinear" else (None,)):
        ours = janus.nn.functional.interpolate(janus.tensor(x.tolist()), mode=mode, align_corners=ac, **kw)
        ref = torch.nn.functional.interpolate(torch.tensor(x), mode=mode, align_corners=ac, **kw)
        assert ours.shape == tuple(ref.shape)
        np.testing.assert_allclose(_np(ours), ref.double().numpy(), rtol=1e-6, atol=1e-6)


def test_check_flags_create_graph(tmp_path):
    """WGAN-GP's gradient penalty (torch.autograd.grad(create_graph=True)) needs a double backward,
    which janus lacks: `janus check` names it before the run fails there."""
    from janus import check
    s = tmp_path / "gp.py"
    s.write_text("import torch\n"
                 "from torch.autograd import grad\n"
                 "x = torch.ones(3, requires_grad=True)\n"
                 "y = (x * x).sum()\n"
                 "g = torch.autograd.grad(y, x, create_graph=True,\n"
                 "                        retain_graph=True)[0]\n"
                 "h = grad(y, x, create_graph=True)\n"
                 "y.backward(create_graph=True)\n"
                 "ok = torch.autograd.grad(y, x, create_graph=False, retain_graph=True)\n"
                 "y.backward()\n")
    findings, _ = check.scan([str(s)])
    assert [(f.line, f.name) for f in findings] == [(5, "grad(create_graph=True)"), (7, "grad(create_graph=True)"),
                                                    (8, "backward(create_graph=True)")]
    assert "no double backward" in str(findings[0])
    x = janus.ones(3, requires_grad=True)
    with pytest.raises(NotImplementedError, match="create_graph=True"):
        janus.autograd.grad((x * x).sum(), x, create_graph=True)
