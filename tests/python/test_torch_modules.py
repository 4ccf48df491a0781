"""The torch.* modules janus provides for scripts beyond tensors and nn:
distributions (Normal, Categorical, Bernoulli, Uniform, kl_divergence),
accelerator, backends, multiprocessing, serialization.safe_globals, onnx
and distributed -- formulas against numpy, samples against their
distributions, and PyTorch where it imports."""
import math
import os

import numpy as np
import pytest

import janus
from janus import distributions as D

R = np.random.default_rng(51)


def t(a, **kw):
    return janus.tensor(np.ascontiguousarray(a), **kw)


def test_normal():
    loc, scale = R.standard_normal(4), R.uniform(0.5, 2, 4)
    loc_t = t(loc, requires_grad=True)
    d = D.Normal(loc_t, t(scale))
    x = R.standard_normal(4)
    want = -((x - loc) ** 2) / (2 * scale ** 2) - np.log(scale) - 0.5 * math.log(2 * math.pi)
    np.testing.assert_allclose(d.log_prob(t(x)).detach().numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(d.entropy().numpy(), 0.5 + 0.5 * math.log(2 * math.pi) + np.log(scale), rtol=1e-12)
    assert tuple(d.batch_shape) == (4,) and tuple(d.sample((3,)).shape) == (3, 4)
    janus.manual_seed(0)
    s = D.Normal(1.5, 2.0).sample((100000,)).numpy()
    assert abs(s.mean() - 1.5) < 0.03 and abs(s.std() - 2.0) < 0.03
    r = d.rsample()
    r.sum().backward()  # the reparameterized sample carries the gradient to loc
    np.testing.assert_allclose(loc_t.grad.numpy(), np.ones(4))
    assert not d.sample().requires_grad


def test_categorical():
    logits = R.standard_normal((2, 5))
    d = D.Categorical(logits=t(logits))
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    np.testing.assert_allclose(d.probs.numpy(), np.exp(logp), rtol=1e-12)
    a = np.array([3, 0])
    np.testing.assert_allclose(d.log_prob(t(a)).numpy(), logp[[0, 1], a], rtol=1e-12)
    np.testing.assert_allclose(d.entropy().numpy(), -(np.exp(logp) * logp).sum(1), rtol=1e-12)
    janus.manual_seed(1)
    p = np.array([0.5, 0.0, 0.2, 0.3])
    s = D.Categorical(probs=t(p * 3)).sample((40000,)).numpy()
    np.testing.assert_allclose(np.bincount(s, minlength=4) / s.size, p, atol=0.01)
    assert tuple(d.sample((7,)).shape) == (7, 2) and tuple(d.sample().shape) == (2,)
    assert d.mode.tolist() == np.argmax(logits, 1).tolist()
    q = D.Categorical(probs=t(np.array([[0.2, 0.3, 0.5]])))
    r = D.Categorical(probs=t(np.array([[0.4, 0.4, 0.2]])))
    pq = np.array([0.2, 0.3, 0.5])
    np.testing.assert_allclose(D.kl_divergence(q, r).numpy(), [(pq * np.log(pq / [0.4, 0.4, 0.2])).sum()], rtol=1e-12)
    with pytest.raises(ValueError, match="probs"):
        D.Categorical()


def test_bernoulli_uniform_and_kl():
    d = D.Bernoulli(probs=t(np.array([0.2, 0.7])))
    np.testing.assert_allclose(d.log_prob(t(np.array([1.0, 0.0]))).numpy(), np.log([0.2, 0.3]), rtol=1e-6)
    janus.manual_seed(2)
    assert abs(D.Bernoulli(probs=t(np.full(20000, 0.3))).sample().numpy().mean() - 0.3) < 0.02
    u = D.Uniform(t(np.array([0.0, 1.0])), t(np.array([2.0, 5.0])))
    np.testing.assert_allclose(u.log_prob(t(np.array([1.0, 4.0]))).numpy(), -np.log([2.0, 4.0]))
    assert np.isneginf(u.log_prob(t(np.array([3.0, 0.0]))).numpy()).all()
    s = u.sample((1000,)).numpy()
    assert (s[:, 0] >= 0).all() and (s[:, 0] < 2).all() and (s[:, 1] >= 1).all()
    p, q = D.Normal(0.0, 1.0), D.Normal(1.0, 2.0)
    np.testing.assert_allclose(float(D.kl_divergence(p, q)), math.log(2) + (1 + 1) / 8 - 0.5, rtol=1e-6)
    with pytest.raises(NotImplementedError, match="No KL"):
        D.kl_divergence(p, u)


def test_accelerator_backends_and_small_modules():
    assert janus.accelerator.is_available() == janus.cuda.is_available()
    acc = janus.accelerator.current_accelerator()
    assert (acc is None) == (not janus.cuda.is_available()) and janus.accelerator.device_count() == janus.cuda.device_count()
    import janus.backends.cudnn as cudnn
    cudnn.benchmark = True
    assert janus.backends.cudnn.benchmark is True and not janus.backends.mps.is_available()
    janus.backends.cuda.matmul.allow_tf32 = True
    assert janus.distributed.is_available() and not janus.distributed.is_initialized()  # no process group started
    import multiprocessing
    assert janus.multiprocessing.Queue is multiprocessing.Queue and janus.multiprocessing.cpu_count() >= 1
    janus.multiprocessing.set_sharing_strategy("file_system")
    assert janus.multiprocessing.get_sharing_strategy() == "file_system"
    with pytest.raises(ValueError):
        janus.multiprocessing.set_sharing_strategy("bogus")
    janus.multiprocessing.set_sharing_strategy("file_descriptor")
    with janus.serialization.safe_globals([np.dtype]):
        assert np.dtype in janus.serialization.get_safe_globals()
    assert np.dtype not in janus.serialization.get_safe_globals()
    with pytest.raises(AttributeError, match="torch.onnx.export|janus.onnx.export"):
        janus.onnx.export


def _square(i, out):
    out.put(i * i)


def test_multiprocessing_spawn_runs_each_rank(tmp_path):
    ctx = janus.multiprocessing.get_context("spawn")
    q = ctx.Queue()
    janus.multiprocessing.spawn(_square, args=(q,), nprocs=2)
    assert sorted(q.get(timeout=30) for _ in range(2)) == [0, 1]


def test_distributions_against_pytorch():
    if janus._C._setting_value("JANUS_SANITIZED"):
        pytest.skip("PyTorch is not run under the sanitizers")
    torch = pytest.importorskip("torch")
    logits = R.standard_normal((3, 4)).astype(np.float32)
    a = np.array([1, 3, 0])
    jd, td = D.Categorical(logits=t(logits)), torch.distributions.Categorical(logits=torch.tensor(logits))
    np.testing.assert_allclose(jd.log_prob(t(a)).numpy(), td.log_prob(torch.tensor(a)).numpy(), rtol=1e-5)
    np.testing.assert_allclose(jd.entropy().numpy(), td.entropy().numpy(), rtol=1e-5)
    loc, scale = R.standard_normal(3).astype(np.float32), R.uniform(0.5, 2, 3).astype(np.float32)
    x = R.standard_normal(3).astype(np.float32)
    jn, tn = D.Normal(t(loc), t(scale)), torch.distributions.Normal(torch.tensor(loc), torch.tensor(scale))
    np.testing.assert_allclose(jn.log_prob(t(x)).numpy(), tn.log_prob(torch.tensor(x)).numpy(), rtol=1e-5)
    np.testing.assert_allclose(jn.entropy().numpy(), tn.entropy().numpy(), rtol=1e-5)
    jq, tq = D.Normal(t(loc * 2), t(scale + 1)), torch.distributions.Normal(torch.tensor(loc * 2),
                                                                          torch.tensor(scale + 1))
    np.testing.assert_allclose(D.kl_divergence(jn, jq).numpy(),
                               torch.distributions.kl_divergence(tn, tq).numpy(), rtol=1e-5)
