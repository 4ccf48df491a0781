"""janus.optim.swa_utils (AveragedModel, the SWA / EMA rules, update_bn,
SWALR), memory formats (janus.channels_last, ...: accepted everywhere torch
takes memory_format=, values unchanged, row-major layout), type promotion
queries (result_type, promote_types, can_cast) and
is_inference_mode_enabled: numpy references always, PyTorch's results where
it imports (same initial weights, same data), and an EMA training loop
recorded and replayed with eager's numbers."""
import copy
import math
import os
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest

import janus
import janus.nn as nn
from janus.optim import swa_utils as su

R = np.random.default_rng(7)
DTYPES = [janus.float32, janus.float64, janus.float16, janus.bfloat16, janus.int64, janus.int32, janus.uint8,
          janus.bool]
NAMES = {d: repr(d).split(".")[1] for d in DTYPES}


def np_(t):
    return t.detach().float().numpy() if t.dtype in (janus.float16, janus.bfloat16) else t.detach().numpy()


# ------------------------------------------------------------ models for both libraries
def make_net(lib, state=None):
    net = lib.nn.Sequential(lib.nn.Linear(4, 6), lib.nn.BatchNorm1d(6), lib.nn.Tanh(), lib.nn.Linear(6, 3))
    if state is not None:
        with lib.no_grad():
            for k, v in net.state_dict().items():
                v.copy_(lib.tensor(state[k]))
    return net


def state_of(net):
    return {k: np_(v).copy() for k, v in net.state_dict().items()}


DATA = [(R.standard_normal((5, 4)).astype(np.float32), R.standard_normal((5, 3)).astype(np.float32))
        for _ in range(6)]
INIT = state_of(make_net(janus))

AVG_KINDS = {
    "swa": lambda m, s, buf: s.AveragedModel(m, use_buffers=buf),
    "ema_multi": lambda m, s, buf: s.AveragedModel(m, multi_avg_fn=s.get_ema_multi_avg_fn(0.9), use_buffers=buf),
    "ema_one": lambda m, s, buf: s.AveragedModel(m, avg_fn=s.get_ema_avg_fn(0.8), use_buffers=buf),
    "swa_one": lambda m, s, buf: s.AveragedModel(m, avg_fn=s.get_swa_avg_fn(), use_buffers=buf),
    "swa_multi": lambda m, s, buf: s.AveragedModel(m, multi_avg_fn=s.get_swa_multi_avg_fn(), use_buffers=False),
}


def train(lib, swa, kinds, use_buffers, steps=5):
    """SGD steps on DATA with each averaged model updated after every step; returns
    (model, {kind: averaged model})."""
    net = make_net(lib, INIT)
    avgs = {k: AVG_KINDS[k](net, swa, use_buffers) for k in kinds}
    opt = lib.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    for x, y in DATA[:steps]:
        opt.zero_grad()
        loss = ((net(lib.tensor(x)) - lib.tensor(y)) ** 2).mean()
        loss.backward()
        opt.step()
        for a in avgs.values():
            a.update_parameters(net)
    return net, avgs


def close_states(a, b, tol=1e-6):
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].shape == b[k].shape, k
        np.testing.assert_allclose(a[k], b[k], rtol=tol, atol=tol, err_msg=k)


@pytest.mark.parametrize("use_buffers", [False, True])
def test_averaged_models_match_torch(use_buffers):
    torch = pytest.importorskip("torch")
    import torch.optim.swa_utils as tsu
    kinds = [k for k in AVG_KINDS if not (use_buffers and k == "swa_multi")]
    jnet, javgs = train(janus, su, kinds, use_buffers)
    tnet, tavgs = train(torch, tsu, kinds, use_buffers)
    close_states(state_of(jnet), state_of(tnet))
    for k in kinds:
        js, ts = state_of(javgs[k]), state_of(tavgs[k])
        assert int(javgs[k].n_averaged) == int(tavgs[k].n_averaged) == 5
        assert javgs[k].n_averaged.dtype is janus.int64
        close_states(js, ts)
        # forward runs the averaged module
        x = DATA[0][0]
        javgs[k].eval(), tavgs[k].eval()
        np.testing.assert_allclose(np_(javgs[k](janus.tensor(x))), tavgs[k](torch.tensor(x)).detach().numpy(),
                                   rtol=1e-5, atol=1e-6)


def test_integer_buffers_averaged_as_torch():
    """use_buffers=True averages num_batches_tracked (int64) too: the formula in
    float, truncated on the copy back; the SWA multi rule refuses integers."""
    torch = pytest.importorskip("torch")
    import torch.optim.swa_utils as tsu
    for lib, s in ((janus, su), (torch, tsu)):
        net = make_net(lib, INIT)
        a = s.AveragedModel(net, multi_avg_fn=s.get_swa_multi_avg_fn(), use_buffers=True)
        net(lib.tensor(DATA[0][0]))
        a.update_parameters(net)
        net(lib.tensor(DATA[1][0]))
        with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer supported"):
            a.update_parameters(net)


def test_ema_formula_numpy():
    """get_ema_multi_avg_fn / get_ema_avg_fn: W_ema = d * W_ema + (1 - d) * W_model
    after a first copy; the default SWA average is the mean of the snapshots."""
    net = nn.Linear(3, 2)
    ema = su.AveragedModel(net, multi_avg_fn=su.get_ema_multi_avg_fn(0.75))
    ema1 = su.AveragedModel(net, avg_fn=su.get_ema_avg_fn(0.75))
    swa = su.AveragedModel(net)
    snaps, ref = [], None
    for k in range(6):
        with janus.no_grad():
            net.weight.copy_(janus.tensor(R.standard_normal((2, 3)).astype(np.float32)))
            net.bias.copy_(janus.tensor(R.standard_normal(2).astype(np.float32)))
        w = np.concatenate([np_(net.weight).ravel(), np_(net.bias)]).astype(np.float64)
        snaps.append(w)
        ref = w if ref is None else 0.75 * ref + 0.25 * w
        for a in (ema, ema1, swa):
            a.update_parameters(net)
        for a, want in ((ema, ref), (ema1, ref), (swa, np.mean(snaps, axis=0))):
            got = np.concatenate([np_(a.module.weight).ravel(), np_(a.module.bias)])
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
            assert int(a.n_averaged) == k + 1
    # the averaged copy is independent of the source model and keeps requires_grad
    assert ema.module.weight is not net.weight and ema.module.weight.requires_grad
    # a buffer not averaged follows the source model
    bn = nn.BatchNorm1d(3)
    a = su.AveragedModel(bn)
    bn(janus.tensor(R.standard_normal((4, 3)).astype(np.float32)))
    a.update_parameters(bn)
    np.testing.assert_array_equal(np_(a.module.running_mean), np_(bn.running_mean))
    assert int(a.module.num_batches_tracked) == 1
    # state_dict: the module's entries under module. and n_averaged
    assert set(a.state_dict()) == {"n_averaged"} | {"module." + k for k in bn.state_dict()}


def test_averaged_model_arguments():
    net = nn.Linear(2, 2)
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn should be provided"):
        su.AveragedModel(net, avg_fn=su.get_swa_avg_fn(), multi_avg_fn=su.get_swa_multi_avg_fn())
    for f in (su.get_ema_multi_avg_fn, su.get_ema_avg_fn):
        with pytest.raises(ValueError, match=r"Invalid decay value 1.5 provided. Please provide a value in "
                                             r"\[0,1\] range."):
            f(1.5)
        with pytest.raises(ValueError, match="Invalid decay value -0.1"):
            f(-0.1)
    a = su.AveragedModel(net, device="cpu")
    assert a.n_averaged.device == janus.device("cpu") and a.module.weight.device.type == "cpu"
    assert su.__all__ == ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
                          "get_ema_avg_fn", "get_swa_avg_fn"]


# ------------------------------------------------------------------ update_bn
def bn_net(lib, state=None):
    net = lib.nn.Sequential(lib.nn.Linear(4, 5), lib.nn.BatchNorm1d(5, momentum=0.3), lib.nn.ReLU(),
                            lib.nn.Linear(5, 5), lib.nn.BatchNorm1d(5))
    if state is not None:
        with lib.no_grad():
            for k, v in net.state_dict().items():
                v.copy_(lib.tensor(state[k]))
    return net


def test_update_bn_numpy():
    """One pass, cumulative average (momentum None) of each batch's mean and
    unbiased variance; momenta and the eval flag restored."""
    net = nn.Sequential(nn.BatchNorm1d(3, momentum=0.2))
    batches = [R.standard_normal((n, 3)).astype(np.float32) * 2 + 1 for n in (4, 6, 5)]
    net.eval()
    su.update_bn([(janus.tensor(b), 0) for b in batches], net)
    bn = net[0]
    assert not net.training and not bn.training and bn.momentum == 0.2
    assert int(bn.num_batches_tracked) == 3
    np.testing.assert_allclose(np_(bn.running_mean), np.mean([b.mean(0) for b in batches], axis=0),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np_(bn.running_var), np.mean([b.var(0, ddof=1) for b in batches], axis=0),
                               rtol=1e-5, atol=1e-6)
    # no BatchNorm: nothing runs (the loader is not even iterated)
    assert su.update_bn(iter(()), nn.Linear(2, 2)) is None
    # BatchNorm with momentum None in plain training: torch's cumulative average
    m = nn.BatchNorm1d(3, momentum=None)
    for b in batches:
        m(janus.tensor(b))
    np.testing.assert_allclose(np_(m.running_mean), np.mean([b.mean(0) for b in batches], axis=0),
                               rtol=1e-5, atol=1e-6)
    m.reset_running_stats()
    assert np_(m.running_mean).tolist() == [0, 0, 0] and np_(m.running_var).tolist() == [1, 1, 1]
    assert int(m.num_batches_tracked) == 0


def test_update_bn_matches_torch():
    torch = pytest.importorskip("torch")
    import torch.optim.swa_utils as tsu
    state = state_of(bn_net(janus))
    batches = [R.standard_normal((6, 4)).astype(np.float32) for _ in range(4)]
    got = {}
    for lib, s in ((janus, su), (torch, tsu)):
        net = bn_net(lib, state)
        net.train()
        net(lib.tensor(batches[0]))  # some stats to reset
        swa = s.AveragedModel(net)
        s.update_bn([lib.tensor(b) for b in batches], swa)
        got[lib.__name__] = state_of(swa)
        assert swa.training
        assert [m.momentum for m in swa.modules() if "BatchNorm" in type(m).__name__] == [0.3, 0.1]
    close_states(got["janus"], got["torch"], tol=1e-5)


# ------------------------------------------------------------------------ SWALR
SWALR_CASES = [dict(swa_lr=0.05), dict(swa_lr=0.05, anneal_epochs=3, anneal_strategy="linear"),
               dict(swa_lr=[0.02, 0.5], anneal_epochs=4), dict(swa_lr=0.3, anneal_epochs=0),
               dict(swa_lr=0.3, anneal_epochs=1, anneal_strategy="linear")]


def swalr_lrs(lib, swa, kw, steps=14):
    p, q = lib.nn.Parameter(lib.ones(2)), lib.nn.Parameter(lib.ones(3))
    opt = lib.optim.SGD([{"params": [p]}, {"params": [q], "lr": 0.2}], lr=0.1)
    s = swa.SWALR(opt, **kw)
    seq = [s.get_last_lr()]
    for _ in range(steps):
        opt.step()
        s.step()
        seq.append(s.get_last_lr())
    return seq, s, opt


def swalr_reference(lr0, swa_lr, anneal_epochs, strategy, steps):
    """SWALR's recursive rule written out: step k interpolates from the previous
    rate's un-annealed start towards swa_lr."""
    f = (lambda t: t) if strategy == "linear" else (lambda t: (1 - math.cos(math.pi * t)) / 2)
    out, lr = [], lr0
    for k in range(steps + 1):
        step = max(1, k) if anneal_epochs == 0 else k
        pa = f(max(0, min(1, (step - 1) / max(1, anneal_epochs))))
        start = swa_lr if pa == 1 else (lr - pa * swa_lr) / (1 - pa)
        a = f(max(0, min(1, step / max(1, anneal_epochs))))
        lr = swa_lr * a + start * (1 - a)
        out.append(lr)
    return out


@pytest.mark.parametrize("kw", SWALR_CASES)
def test_swalr_schedule(kw):
    seq, s, opt = swalr_lrs(janus, su, kw)
    lrs = kw["swa_lr"] if isinstance(kw["swa_lr"], list) else [kw["swa_lr"]] * 2
    for g, (lr0, swa_lr) in enumerate(zip((0.1, 0.2), lrs)):
        want = swalr_reference(lr0, swa_lr, kw.get("anneal_epochs", 10), kw.get("anneal_strategy", "cos"), 14)
        np.testing.assert_allclose([x[g] for x in seq], want, rtol=1e-12, atol=1e-15)
        assert opt.param_groups[g]["swa_lr"] == swa_lr and abs(seq[-1][g] - swa_lr) < 1e-12
    # state_dict without the optimizer and the anneal function; loading restores the function
    sd = s.state_dict()
    assert "optimizer" not in sd and "anneal_func" not in sd and sd["_anneal_strategy"] == kw.get(
        "anneal_strategy", "cos")
    s2 = su.SWALR(opt, swa_lr=0.01, anneal_strategy="linear" if sd["_anneal_strategy"] == "cos" else "cos")
    s2.load_state_dict(sd)
    assert s2.anneal_func is (s2._cosine_anneal if sd["_anneal_strategy"] == "cos" else s2._linear_anneal)


@pytest.mark.parametrize("kw", SWALR_CASES)
def test_swalr_matches_torch(kw):
    torch = pytest.importorskip("torch")
    import torch.optim.swa_utils as tsu
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want, _, _ = swalr_lrs(torch, tsu, kw)
    got, _, _ = swalr_lrs(janus, su, kw)
    assert got == want


def test_swalr_arguments():
    opt = janus.optim.SGD([nn.Parameter(janus.ones(2))], lr=0.1)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear', instead got exp"):
        su.SWALR(opt, 0.1, anneal_strategy="exp")
    for bad in (-1, 2.5):
        with pytest.raises(ValueError, match=f"anneal_epochs must be equal or greater than 0, got {bad}"):
            su.SWALR(opt, 0.1, anneal_epochs=bad)
    with pytest.raises(ValueError, match="swa_lr must have the same length as optimizer.param_groups. swa_lr has "
                                         "2 values, param_groups has 1."):
        su.SWALR(opt, [0.1, 0.2])
    assert isinstance(su.SWALR(opt, 0.1), janus.optim.lr_scheduler.LRScheduler)
    s = su.SWALR(opt, 0.1)
    with pytest.warns(UserWarning, match="get_last_lr"):
        s.get_lr()


def test_torch_alias_imports_swa_utils():
    code = ("import janus._torch_alias as a; a.install(); import torch.optim.swa_utils; import torch; "
            "from torch.optim.swa_utils import SWALR, update_bn; "
            "print(torch.optim.swa_utils.AveragedModel is __import__('janus').optim.swa_utils.AveragedModel, "
            "repr(torch.channels_last), torch.result_type(torch.zeros(2, dtype=torch.int32), 1.5))")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.path.join(root, "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["True", "torch.channels_last", "janus.float32"]


# ------------------------------------------------------------------- memory formats
FORMATS = ["contiguous_format", "channels_last", "channels_last_3d", "preserve_format"]


def test_memory_format_objects():
    for n in FORMATS:
        mf = getattr(janus, n)
        assert isinstance(mf, janus.memory_format) and repr(mf) == str(mf) == "torch." + n
        assert pickle.loads(pickle.dumps(mf)) is mf and copy.deepcopy(mf) is mf and copy.copy(mf) is mf
    assert len({getattr(janus, n) for n in FORMATS}) == 4 and janus.channels_last != janus.contiguous_format
    with pytest.raises(TypeError, match="cannot create 'torch.memory_format' instances"):
        janus.memory_format()


def views():
    """(name, janus tensor, numpy values) over layouts: row-major, channels-last
    permutes, transposes, slices, size-1 and empty dimensions, 3-D and 5-D."""
    out = []
    for shape in [(2, 3, 4, 5), (2, 1, 1, 5), (2, 3, 1, 1), (1, 3, 1, 1), (0, 3, 4, 5), (2, 0, 4, 5), (3, 4),
                  (2, 3, 4), (2, 3, 4, 5, 6), (2, 1, 1, 1, 5), ()]:
        a = R.standard_normal(shape).astype(np.float32)
        out.append((f"c{shape}", a))
    a = R.standard_normal((2, 4, 5, 3)).astype(np.float32)
    out.append(("nhwc-perm", a, (0, 3, 1, 2)))
    a = R.standard_normal((2, 4, 5, 6, 3)).astype(np.float32)
    out.append(("ndhwc-perm", a, (0, 4, 1, 2, 3)))
    a = R.standard_normal((2, 3, 5, 4)).astype(np.float32)
    out.append(("transpose", a, (0, 1, 3, 2)))
    a = R.standard_normal((2, 4, 1, 3)).astype(np.float32)
    out.append(("n1wc-perm", a, (0, 3, 1, 2)))
    return out


def make(lib, case):
    t = lib.tensor(case[1])
    return t.permute(*case[2]) if len(case) > 2 else t


def test_memory_format_round_trips():
    """Every call taking memory_format=: the values (or shape) unchanged, the
    result the tensor itself or a row-major one; channels_last(_3d) on another
    rank refused as torch does."""
    likes = (janus.empty_like, janus.zeros_like, janus.ones_like, janus.rand_like, janus.randn_like)
    for case in views():
        x = make(janus, case)
        ref = np_(x).copy()
        for n in FORMATS:
            mf = getattr(janus, n)
            bad_rank = (mf is janus.channels_last and x.dim() != 4) or (mf is janus.channels_last_3d and x.dim() != 5)
            same = [lambda: x.to(memory_format=mf), lambda: x.to(janus.float64, memory_format=mf),
                    lambda: x.float(memory_format=mf), lambda: x.double(memory_format=mf),
                    lambda: janus.clone(x, memory_format=mf), lambda: x.clone(memory_format=mf),
                    lambda: x.cpu(memory_format=mf)]
            if mf is not janus.preserve_format or x.is_contiguous():
                same.append(lambda: x.contiguous(memory_format=mf))
            shaped = [lambda f=f: f(x, memory_format=mf) for f in likes]
            shaped += [lambda: janus.full_like(x, 2.0, memory_format=mf),
                       lambda: janus.randint_like(x, 3, memory_format=mf)]
            for k, f in enumerate(same + shaped):
                if bad_rank:
                    with pytest.raises(RuntimeError, match="required rank"):
                        f()
                    continue
                r = f()
                assert r.shape == x.shape, (case[0], n, k)
                assert r is x or r.is_contiguous(), (case[0], n, k)  # janus's layout: row-major
                if k < len(same):
                    np.testing.assert_array_equal(np_(r), ref)
        assert x.is_contiguous(memory_format=janus.contiguous_format) == x.is_contiguous()
        assert x.is_contiguous(memory_format=janus.preserve_format) == x.is_contiguous()
        np.testing.assert_array_equal(np_(x), ref)  # nothing wrote into x


def test_memory_format_is_contiguous_numpy_strides():
    x = janus.tensor(R.standard_normal((2, 4, 5, 3)).astype(np.float32)).permute(0, 3, 1, 2)
    assert not x.is_contiguous() and x.is_contiguous(memory_format=janus.channels_last)
    assert not x.is_contiguous(memory_format=janus.channels_last_3d)
    assert x.contiguous(memory_format=janus.channels_last) is x  # already channels-last: no copy
    assert x.to(memory_format=janus.channels_last) is x
    c = x.contiguous()
    assert c is not x and c.is_contiguous() and not c.is_contiguous(memory_format=janus.channels_last)
    np.testing.assert_array_equal(np_(c), np_(x))
    y = janus.ones(2, 3, 4, 5)
    assert y.contiguous(memory_format=janus.contiguous_format) is y
    z = y.contiguous(memory_format=janus.channels_last)
    assert z is not y and z.stride() == y.stride()  # a copy, as torch makes; row-major (janus's limit)
    assert y.to(memory_format=janus.contiguous_format) is y and y.to(memory_format=janus.preserve_format) is y
    assert janus.ones(2, 1, 1, 5).is_contiguous(memory_format=janus.channels_last)  # size-1 dims: both layouts
    assert not janus.ones(3, 4).is_contiguous(memory_format=janus.channels_last)
    # Module.to(memory_format=): accepted, nothing changes
    m = nn.Conv2d(3, 4, 3)
    w = np_(m.weight).copy()
    assert m.to(memory_format=janus.channels_last) is m and m.weight.is_contiguous()
    np.testing.assert_array_equal(np_(m.weight), w)
    assert nn.Linear(3, 4).to(memory_format=janus.channels_last).weight.shape == (4, 3)


def memory_format_errors(lib):
    """Each bad call's (exception type, message)."""
    x4, x2 = lib.ones(2, 3, 4, 5), lib.ones(3, 4)
    xt = x4.transpose(2, 3)
    calls = [lambda: x4.contiguous(memory_format=5), lambda: x4.contiguous(memory_format=None),
             lambda: xt.contiguous(memory_format=lib.preserve_format),
             lambda: x2.contiguous(memory_format=lib.channels_last),
             lambda: x4.contiguous(memory_format=lib.channels_last_3d),
             lambda: x4.is_contiguous(memory_format=5), lambda: x4.is_contiguous(memory_format=None),
             lambda: x2.to(memory_format=lib.channels_last), lambda: x4.to(memory_format=5),
             lambda: x2.float(memory_format=lib.channels_last), lambda: x4.double(memory_format=lib.channels_last_3d),
             lambda: lib.empty_like(x2, memory_format=lib.channels_last),
             lambda: lib.zeros_like(x4, memory_format=5), lambda: lib.ones_like(x2, memory_format=lib.channels_last),
             lambda: lib.rand_like(x4, memory_format=lib.channels_last_3d),
             lambda: lib.clone(x2, memory_format=lib.channels_last), lambda: lib.clone(x2, memory_format=5),
             lambda: x4.clone(memory_format=lib.channels_last_3d),
             lambda: lib.empty(2, 3, memory_format=lib.channels_last),
             lambda: lib.empty(2, 3, memory_format=lib.preserve_format),
             lambda: lib.empty(2, 3, 4, 5, memory_format=lib.channels_last_3d),
             lambda: lib.nn.Linear(2, 2).to(memory_format=5)]
    out = []
    for f in calls:
        try:
            f()
            out.append(None)
        except (TypeError, RuntimeError) as e:
            out.append((type(e).__name__, str(e).split("\n")[0]))
    return out


EXPECTED_ERRORS = [
    ("TypeError", "contiguous(): argument 'memory_format' must be torch.memory_format, not int"),
    ("TypeError", "contiguous(): argument 'memory_format' must be torch.memory_format, not NoneType"),
    ("RuntimeError", "preserve memory format is unsupported by the contiguous operator"),
    ("RuntimeError", "required rank 4 tensor to use channels_last format"),
    ("RuntimeError", "required rank 5 tensor to use channels_last_3d format"),
    ("TypeError", "is_contiguous(): argument 'memory_format' must be torch.memory_format, not int"),
    ("TypeError", "is_contiguous(): argument 'memory_format' must be torch.memory_format, not NoneType"),
    ("RuntimeError", "required rank 4 tensor to use channels_last format"),
    ("TypeError", "to() received an invalid combination of arguments - got (memory_format=int, ), but expected "
                  "one of:"),
    ("RuntimeError", "required rank 4 tensor to use channels_last format"),
    ("RuntimeError", "required rank 5 tensor to use channels_last_3d format"),
    ("RuntimeError", "required rank 4 tensor to use channels_last format"),
    ("TypeError", "zeros_like(): argument 'memory_format' must be torch.memory_format, not int"),
    ("RuntimeError", "required rank 4 tensor to use channels_last format"),
    ("RuntimeError", "required rank 5 tensor to use channels_last_3d format"),
    ("RuntimeError", "required rank 4 tensor to use channels_last format"),
    ("TypeError", "clone(): argument 'memory_format' must be torch.memory_format, not int"),
    ("RuntimeError", "required rank 5 tensor to use channels_last_3d format"),
    ("RuntimeError", "required rank 4 tensor to use channels_last format"),
    ("RuntimeError", "unsupported memory format Preserve"),
    ("RuntimeError", "required rank 5 tensor to use channels_last_3d format"),
    ("TypeError", "to() received an invalid combination of arguments - got (memory_format=int, ), but expected "
                  "one of:"),
]


def test_memory_format_errors():
    assert memory_format_errors(janus) == EXPECTED_ERRORS


def test_memory_format_errors_match_torch():
    torch = pytest.importorskip("torch")
    assert memory_format_errors(torch) == EXPECTED_ERRORS


def test_memory_format_strides_match_torch():
    """is_contiguous(memory_format=...) and whether contiguous / to / clone give
    the tensor itself, as torch, on every layout of views()."""
    torch = pytest.importorskip("torch")
    for case in views():
        j, t = make(janus, case), make(torch, case)
        if j.numel():  # janus gives an empty tensor zero strides, torch row-major ones
            assert tuple(j.stride()) == tuple(t.stride()), case[0]
        for n in FORMATS:
            jm, tm = getattr(janus, n), getattr(torch, n)
            assert j.is_contiguous(memory_format=jm) == t.is_contiguous(memory_format=tm), (case[0], n)

            def outcome(f, x, m):
                try:
                    return "self" if f(x, m) is x else "copy"
                except RuntimeError as e:
                    return str(e)
            for f in (lambda x, m: x.contiguous(memory_format=m), lambda x, m: x.to(memory_format=m)):
                assert outcome(f, j, jm) == outcome(f, t, tm), (case[0], n)


# ------------------------------------------------------------------- type promotion
def ex(d):
    return janus.ones(2, dtype=d)


PROMOTE = {  # a few of torch's promote_types results, written out
    ("float16", "bfloat16"): "float32", ("bfloat16", "float16"): "float32", ("uint8", "int32"): "int32",
    ("bool", "uint8"): "uint8", ("int64", "float16"): "float16", ("int32", "float64"): "float64",
    ("float32", "float64"): "float64", ("bool", "bool"): "bool", ("uint8", "int64"): "int64",
    ("bfloat16", "int64"): "bfloat16", ("float16", "float32"): "float32", ("int32", "int64"): "int64",
}
RESULT = [  # (a, b, expected): 1-d tensors as dtypes, 0-d tensors as ("0d", dtype), Python numbers
    ("int32", 2.5, "float32"), (2.5, "int32", "float32"), ("int32", 2, "int32"), ("bool", 2, "int64"),
    ("bool", True, "bool"), ("uint8", 300, "uint8"), ("float16", 2.5, "float16"), ("float64", 1, "float64"),
    ("int32", ("0d", "float64"), "float64"), ("int32", ("0d", "int64"), "int32"),
    ("float16", ("0d", "float64"), "float16"), ("bool", ("0d", "int32"), "int32"),
    ("uint8", ("0d", "bool"), "uint8"), (("0d", "int32"), 2.5, "float32"), (("0d", "float64"), 2.5, "float64"),
    (("0d", "int64"), ("0d", "uint8"), "int64"), (2, 2.5, "float32"), (True, 2, "int64"), (True, False, "bool"),
    (2, 3, "int64"), ("bfloat16", "float16", "float32"), ("int64", "float16", "float16"),
    ("int64", np.float64(2.5), "float32"), ("int32", np.int64(2), "int32"),
]


def arg(lib, a):
    if isinstance(a, str):
        return lib.ones(2, dtype=getattr(lib, a))
    if isinstance(a, tuple):
        return lib.tensor(1, dtype=getattr(lib, a[1]))
    return a


def test_promotion_tables():
    for (a, b), want in PROMOTE.items():
        assert janus.promote_types(getattr(janus, a), getattr(janus, b)) is getattr(janus, want)
        # what an op of the two gives
        assert (ex(getattr(janus, a)) + ex(getattr(janus, b))).dtype is getattr(janus, want) or a == b == "bool"
    for a, b, want in RESULT:
        assert janus.result_type(arg(janus, a), arg(janus, b)) is getattr(janus, want), (a, b)
    assert janus.result_type(tensor=ex(janus.int32), other=2.5) is janus.float32
    assert janus.result_type(scalar1=2, scalar2=2.5) is janus.float32
    assert janus.promote_types(janus.float16, float) is janus.float64 and janus.promote_types(int, bool) is janus.int64
    cast = {("float32", "int32"): False, ("float16", "bool"): False, ("int32", "bool"): False,
            ("bool", "bool"): True, ("int64", "uint8"): True, ("uint8", "float16"): True,
            ("float64", "bfloat16"): True, ("bool", "int32"): True, ("bfloat16", "int64"): False}
    for (a, b), want in cast.items():
        assert janus.can_cast(getattr(janus, a), getattr(janus, b)) is want
    assert janus.can_cast(float, janus.bool) is False and janus.can_cast(from_=janus.int32, to=janus.float16)
    # every pair follows the dispatcher: an in-place op refuses exactly what can_cast refuses
    for f in DTYPES:
        for t in DTYPES:
            try:
                janus.zeros(2, dtype=t).add_(janus.zeros(2, dtype=f))
                ok = True
            except TypeError:
                ok = False
            if janus.promote_types(f, t) is f:  # the op's result type is f: a cast f -> t
                assert ok == janus.can_cast(f, t), (f, t)


def test_promotion_errors():
    x = janus.zeros(2)
    with pytest.raises(TypeError, match=r"result_type\(\) received an invalid combination of arguments - got "
                                        r"\(Tensor, str\), but expected one of:"):
        janus.result_type(x, "a")
    with pytest.raises(TypeError, match=r"got \(Tensor\), but expected one of"):
        janus.result_type(x)
    with pytest.raises(TypeError, match=r"got \(Tensor, Tensor, Tensor\)"):
        janus.result_type(x, x, x)
    with pytest.raises(TypeError, match="janus has no complex dtypes"):
        janus.result_type(x, 1j)
    with pytest.raises(TypeError, match=r"promote_types\(\): argument 'type2' \(position 2\) must be a "
                                        r"janus.dtype, not int"):
        janus.promote_types(janus.float16, 1)
    with pytest.raises(TypeError, match=r"can_cast\(\): argument 'to' \(position 2\) must be a janus.dtype, "
                                        r"not NoneType"):
        janus.can_cast(janus.float16, None)
    with pytest.raises(TypeError):
        janus.promote_types(janus.float16)


def promotion_args(lib):
    return ([lib.ones(2, dtype=getattr(lib, NAMES[d])) for d in DTYPES]
            + [lib.tensor(1, dtype=getattr(lib, NAMES[d])) for d in DTYPES] + [True, 3, 2.5])


def test_promotion_matches_torch():
    torch = pytest.importorskip("torch")
    for a in DTYPES:
        for b in DTYPES:
            ta, tb = getattr(torch, NAMES[a]), getattr(torch, NAMES[b])
            assert NAMES[janus.promote_types(a, b)] == repr(torch.promote_types(ta, tb)).split(".")[1], (a, b)
            assert janus.can_cast(a, b) == torch.can_cast(ta, tb), (a, b)
    for x, tx in zip(promotion_args(janus), promotion_args(torch)):
        for y, ty in zip(promotion_args(janus), promotion_args(torch)):
            got = janus.result_type(x, y)
            assert NAMES[got] == repr(torch.result_type(tx, ty)).split(".")[1], (x, y)
    for bad in [("a",), (None, 1), (1, 2, 3)]:
        args = [janus.zeros(2)] + list(bad) if len(bad) == 1 else list(bad)
        targs = [torch.zeros(2)] + list(bad) if len(bad) == 1 else list(bad)
        with pytest.raises(TypeError) as je:
            janus.result_type(*args)
        with pytest.raises(TypeError) as te:
            torch.result_type(*targs)
        assert str(je.value) == str(te.value)


# ---------------------------------------------------------------- inference mode
def test_inference_mode_flag():
    assert janus.is_inference_mode_enabled() is False
    with janus.inference_mode():
        assert janus.is_inference_mode_enabled() and not janus.is_grad_enabled()
        with janus.enable_grad():
            assert janus.is_inference_mode_enabled() and janus.is_grad_enabled()
        with janus.inference_mode(False):
            assert not janus.is_inference_mode_enabled() and janus.is_grad_enabled()
        assert janus.is_inference_mode_enabled() and not janus.is_grad_enabled()
    assert not janus.is_inference_mode_enabled() and janus.is_grad_enabled()
    with janus.no_grad():
        assert not janus.is_inference_mode_enabled()
        with janus.inference_mode(False):
            assert janus.is_grad_enabled()

    @janus.inference_mode
    def f():
        return janus.is_inference_mode_enabled(), janus.is_grad_enabled()

    @janus.inference_mode(False)
    def g():
        return janus.is_inference_mode_enabled(), janus.is_grad_enabled()

    assert f() == (True, False) and g() == (False, True)
    assert janus.autograd.inference_mode is janus.inference_mode
    with pytest.raises(TypeError):
        janus.is_inference_mode_enabled(1)
    # thread-local, as torch's
    import threading
    seen = []
    with janus.inference_mode():
        th = threading.Thread(target=lambda: seen.append(janus.is_inference_mode_enabled()))
        th.start()
        th.join()
    assert seen == [False]


def test_inference_mode_matches_torch():
    torch = pytest.importorskip("torch")
    for lib in (janus, torch):
        out = []
        with lib.inference_mode():
            out.append((lib.is_inference_mode_enabled(), lib.is_grad_enabled()))
            with lib.inference_mode(False):
                out.append((lib.is_inference_mode_enabled(), lib.is_grad_enabled()))
        with lib.no_grad(), lib.inference_mode(False):
            out.append((lib.is_inference_mode_enabled(), lib.is_grad_enabled()))
        if lib is janus:
            got = out
    assert got == out


# ------------------------------------------------------------- record and replay
EMA_SCRIPT = r'''
import sys
import janus, janus.nn as nn
from janus.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
janus.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 2))
ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
opt = janus.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
X, Y = janus.randn(64, 8), janus.randn(64, 2)
for step in range(int(sys.argv[1])):
    x, y = X[(step * 8) % 64:][:8], Y[(step * 8) % 64:][:8]
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    ema.update_parameters(model)
    print(step, "loss", f"{loss.item():.7f}")
print("n_averaged", int(ema.n_averaged))
print("ema", [repr(v) for p in ema.parameters() for v in p.detach().reshape(-1).tolist()])
'''


def test_an_ema_training_loop_records_and_replays_as_eager(tmp_path):
    from dynamic_runs import have_optimize
    if not have_optimize():
        pytest.skip("janus optimize is not built")
    from test_replay import record_and_optimize, run, summary
    script = os.path.join(str(tmp_path), "ema.py")
    with open(script, "w") as f:
        f.write(EMA_SCRIPT)
    tmp = str(tmp_path)
    db = record_and_optimize(script, ["20"], tmp)
    re_, we = run(script, ["40"], tmp, "eager")
    rr, wr = run(script, ["40"], tmp, "replay", JANUS_REPLAY_DB=db, JANUS_REPLAY_ADAPT="0")
    assert re_.returncode == 0 and rr.returncode == 0, rr.stderr[-3000:]
    assert rr.stdout == re_.stdout and rr.stdout.count(" loss ") == 40
    assert "n_averaged 40" in rr.stdout
    assert wr == we
    s = summary(rr.stderr)
    assert s["fell_back"] == 0 and s["segments"] >= 40, s
