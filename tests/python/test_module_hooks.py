"""Hooks on modules (register_forward_pre_hook / register_forward_hook,
register_full_backward_pre_hook / register_full_backward_hook;
janus/nn/module.py _hooked_call, csrc/module_call.c): torch's order, return
conventions, kwargs forms, prepend, always_call, removal; the gradients a
backward hook sees and replaces; the same calls and results as PyTorch's
where it imports; deepcopy keeps them; and under janus replay hooks
registered or removed mid-run run exactly when eager's do, every segment
still a graph."""
import copy
import os

import numpy as np
import pytest

import janus
import janus.nn as nn

try:
    import torch
except ImportError:
    torch = None


@pytest.fixture(autouse=True)
def no_hooks_left():
    before = janus._module_hooks
    yield
    assert janus._module_hooks == before  # every test removes what it registered


def _net(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2))


def _exercise(lib, net, x):
    """Hooks of every kind on the net; returns the log and the output."""
    log = []
    hs = [
        net[0].register_forward_pre_hook(lambda m, a: log.append(("pre0", tuple(a[0].shape)))),
        net[2].register_forward_pre_hook(lambda m, a: (a[0] * 2,)),
        net[2].register_forward_pre_hook(lambda m, a: log.append(("first", float(a[0].detach().sum()))), prepend=True),
        net[0].register_forward_hook(lambda m, a, o: log.append(("post0", tuple(o.shape)))),
        net[2].register_forward_hook(lambda m, a, o: o + 1),
        net.register_forward_hook(lambda m, a, kw, o: log.append(("kw", sorted(kw))) or o * 3, with_kwargs=True),
    ]
    y = net(x)
    for h in hs:
        h.remove()
    return log, y


def test_order_and_return_conventions():
    net = _net(janus)
    x = janus.randn(5, 3)
    plain = net[2](net[1](net[0](x)) * 2) + 1
    log, y = _exercise(janus, net, x)
    np.testing.assert_allclose(y.detach().numpy(), 3 * plain.detach().numpy(), rtol=1e-6)
    assert [e[0] for e in log] == ["pre0", "post0", "first", "kw"]
    assert log[2][1] == pytest.approx(float(net[1](net[0](x)).sum()), rel=1e-5)  # prepended: before the doubling
    # removed: a plain call again
    np.testing.assert_array_equal(net(x).detach().numpy(), net[2](net[1](net[0](x))).detach().numpy())


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_same_log_and_output_as_torch():
    jn, tn = _net(janus), _net(torch)
    tn.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in jn.state_dict().items()})
    a = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)
    lj, yj = _exercise(janus, jn, janus.tensor(a))
    lt, yt = _exercise(torch, tn, torch.tensor(a))
    assert [e[0] for e in lj] == [e[0] for e in lt] and lj[0] == lt[0] and lj[1] == lt[1]
    np.testing.assert_allclose(yj.detach().numpy(), yt.detach().numpy(), rtol=1e-5)


def test_kwargs_pre_hook_and_its_errors():
    class Scale(nn.Module):
        def forward(self, x, k=1.0):
            return x * k

    m = Scale()
    with m.register_forward_pre_hook(lambda mod, a, kw: (a, {"k": kw.get("k", 1.0) * 10}), with_kwargs=True):
        assert m(janus.ones(2), k=2.0).tolist() == [20.0, 20.0]
    assert m(janus.ones(2), k=2.0).tolist() == [2.0, 2.0]  # the with block removed it
    with m.register_forward_pre_hook(lambda mod, a, kw: a, with_kwargs=True):
        with pytest.raises(RuntimeError, match="must return None or a tuple of \\(new_args, new_kwargs\\)"):
            m(janus.ones(2))


def test_gradients_flow_through_a_hook_that_changes_the_output():
    lin = nn.Linear(2, 1)
    h = lin.register_forward_hook(lambda m, a, o: o * 5)
    x = janus.ones(3, 2, requires_grad=True)
    lin(x).sum().backward()
    h.remove()
    np.testing.assert_allclose(x.grad.numpy(), 5 * np.tile(lin.weight.detach().numpy(), (3, 1)), rtol=1e-6)


def test_always_call_runs_when_forward_raises():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    seen = []
    m = Boom()
    h1 = m.register_forward_hook(lambda mod, a, o: seen.append(("always", o)), always_call=True)
    h2 = m.register_forward_hook(lambda mod, a, o: seen.append(("plain", o)))
    with pytest.raises(ValueError, match="boom"):
        m(janus.ones(1))
    h1.remove()
    h2.remove()
    assert seen == [("always", None)]


def test_deepcopy_keeps_hooks_and_pickling_keeps_forward_hooks_only():
    seen = []
    lin = nn.Linear(2, 2)
    h = lin.register_forward_hook(lambda m, a, o: seen.append("hit"))
    before = janus._module_hooks
    dup = copy.deepcopy(lin)
    assert janus._module_hooks == before + 1  # the copy's hook, counted for good
    dup(janus.ones(1, 2))
    assert seen == ["hit"]
    h.remove()
    lin(janus.ones(1, 2))
    assert seen == ["hit"]
    janus._module_hooks -= 1  # the fixture's bookkeeping: the copy's registration is not removable


def test_a_hook_is_no_longer_an_unsupported_name():
    assert hasattr(nn.Linear(1, 1), "register_forward_hook")
    assert hasattr(nn.Linear(1, 1), "register_full_backward_hook")
    # the legacy hook (its grad_input is the last op's, not the module's) is named, with the full one to use
    with pytest.raises(AttributeError, match="register_backward_hook is not supported by janus.*register_full_back"):
        nn.Linear(1, 1).register_backward_hook


class _Two(object):
    """A module of two outputs over a tensor, a number and a second tensor (built per library)."""

    @staticmethod
    def make(lib):
        class Two(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = lib.nn.Linear(4, 3)

            def forward(self, x, k, y):
                return self.lin(x) * k + y.sum(), self.lin(x).relu()
        m = Two()
        with lib.no_grad():
            m.lin.weight.copy_(lib.tensor(np.arange(12, dtype=np.float32).reshape(3, 4) / 10))
            m.lin.bias.fill_(0.1)
        return m


def _backward_log(lib):
    """Pre-hook doubling grad_output[0], full hook adding 1 to grad_input[0]; returns what
    they saw and the gradients that reached the leaves."""
    def arr(gs):
        return [None if g is None else g.numpy().tolist() for g in gs]
    m, log = _Two.make(lib), []

    def pre(mod, go):
        log.append(("pre", arr(go)))
        return (go[0] * 2, go[1])

    def full(mod, gi, go):
        log.append(("full", arr(gi), arr(go)))
        return (gi[0] + 1,) + tuple(gi[1:])
    hs = [m.register_full_backward_pre_hook(pre), m.register_full_backward_hook(full)]
    x = lib.ones(2, 4, requires_grad=True)
    y = lib.ones(3, requires_grad=True)
    a, b = m(x, 2.0, y)
    name = a.grad_fn.name()
    (a.sum() * 3).backward()
    for h in hs:
        h.remove()
    return name, log, x.grad.numpy(), y.grad.numpy(), m.lin.weight.grad.numpy()


def test_backward_hooks_see_and_replace_the_module_gradients():
    name, log, gx, gy, gw = _backward_log(janus)
    assert name == "BackwardHookFunctionBackward"
    assert [e[0] for e in log] == ["pre", "full"]
    np.testing.assert_array_equal(log[0][1][0], np.full((2, 3), 3.0))  # d(3 sum a)/da
    assert log[0][1][1] is None                                        # b took no gradient
    np.testing.assert_array_equal(log[1][2][0], np.full((2, 3), 6.0))  # the pre-hook's doubled grad_output
    assert log[1][1][1] is None                                        # k: a number
    W = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    g_in = np.full((2, 3), 6.0, np.float32) * 2.0 @ W                  # through lin, times k
    np.testing.assert_allclose(log[1][1][0], g_in, rtol=1e-6)
    np.testing.assert_allclose(gx, g_in + 1, rtol=1e-6)                # the hook's +1 reached x
    np.testing.assert_array_equal(gy, np.full(3, 36.0))                # 6 * 2 rows * 3 columns
    np.testing.assert_allclose(gw, np.full((3, 4), 24.0), rtol=1e-6)   # 6 * k * 2 rows of ones


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_backward_hooks_same_as_torch():
    rj, rt = _backward_log(janus), _backward_log(torch)
    assert rj[0] == rt[0] and rj[1] == rt[1]
    for a, b in zip(rj[2:], rt[2:]):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_backward_hook_without_input_gradients_and_wrong_counts():
    m = _Two.make(janus)
    seen = []
    h = m.register_full_backward_hook(lambda mod, gi, go: seen.append((gi, [g is None for g in go])))
    a, b = m(janus.ones(2, 4), 1.0, janus.ones(3))
    with pytest.warns(UserWarning, match="no inputs require gradients"):
        b.sum().backward()
    assert seen == [((None, None, None), [True, False])]
    h.remove()
    h = m.register_full_backward_hook(lambda mod, gi, go: (None,))
    a, b = m(janus.ones(2, 4, requires_grad=True), 1.0, janus.ones(3))
    with pytest.raises(RuntimeError, match="Backward hook returned an invalid number of grad_input, got 1, but "
                                           "expected 3"):
        a.sum().backward()
    h.remove()
    h = m.register_full_backward_pre_hook(lambda mod, go: (go[0],))
    a, b = m(janus.ones(2, 4, requires_grad=True), 1.0, janus.ones(3))
    with pytest.raises(RuntimeError, match="Backward pre hook returned an invalid number of grad_output, got 1, "
                                           "but expected 2"):
        a.sum().backward()
    h.remove()
    with janus.no_grad():  # nothing is wrapped outside grad mode
        h = m.register_full_backward_hook(lambda *a: None)
        assert m(janus.ones(2, 4), 1.0, janus.ones(3))[0].grad_fn is None
        h.remove()


HOOKED = r'''
import sys
import janus, janus.nn as nn
janus.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 2))
opt = janus.optim.Adam(model.parameters(), lr=1e-2)
X, Y = janus.randn(64, 8), janus.randn(64, 2)
acts, h = [], None
for step in range(int(sys.argv[1])):
    if step == 5:
        h = model[1].register_forward_hook(lambda m, a, o: acts.append(o.detach()) or o * 0.5)
    if step == 15:
        h.remove()
    if step == 8:  # gradients seen and scaled on the way into the first layer
        hb = model[2].register_full_backward_hook(lambda m, gi, go: acts.append(go[0].detach()) or (gi[0] * 0.5,))
    if step == 12:
        hb.remove()
    x, y = X[(step * 8) % 64:][:8], Y[(step * 8) % 64:][:8]
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    print(step, "loss", f"{loss.item():.7f}")
print("acts", len(acts), float(sum(a.sum() for a in acts)))
'''


def test_hooks_registered_and_removed_mid_run_replay_as_eager(tmp_path):
    from dynamic_runs import have_optimize
    if not have_optimize():
        pytest.skip("janus optimize is not built")
    from test_replay import replay_whole
    _, rr, s = replay_whole(HOOKED, ["20"], ["40"], tmp_path, "hooked.py")
    assert "acts 14 " in rr.stdout and s["segments"] >= 40, s
