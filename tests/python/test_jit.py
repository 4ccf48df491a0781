"""janus.jit (torch.jit's module path): script and trace return their
argument and the Python runs as written -- decorated functions and modules
give the undecorated results (and torch.jit.script's, where PyTorch
imports), trace runs nothing -- the decorators and helpers are the eager
ones, a name janus leaves out raises the unsupported-name error, the torch
alias imports torch.jit, and a scripted model records and replays with
eager's losses."""
import importlib.util
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import janus
from janus import _unsupported

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(ROOT, "build")))
JANUS = os.path.join(BUILD, "janus")
needs_janus_command = pytest.mark.skipif(not os.path.exists(JANUS), reason=f"{JANUS} not built")

# One source for both libraries: loaded once with `torch` bound to janus and,
# where PyTorch imports, once with the real torch (torch.jit.script reads the
# source from the file).
SOURCE = '''
from typing import List


def gate(x: torch.Tensor, n: int) -> torch.Tensor:
    for _ in range(n):
        x = torch.tanh(x) + 0.5 * x
    if bool(x.sum() > 0):
        return x * 2.0
    return -x


def forked(x: torch.Tensor) -> torch.Tensor:
    futs = torch.jit.annotate(List[torch.jit.Future[torch.Tensor]], [])
    for n in range(3):
        futs.append(torch.jit.fork(gate, x, n))
    out = torch.zeros_like(x)
    for f in futs:
        out = out + torch.jit.wait(f)
    return out


class Net(torch.nn.Module):
    scale: torch.jit.Final[float]

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.fc2 = torch.nn.Linear(8, 3)
        self.scale = 0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.features(x)
        if not torch.jit.is_scripting():
            h = h + 0.0  # the eager branch: the same numbers
        return self.fc2(h) * self.scale

    @torch.jit.export
    def features(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc1(x))

    @torch.jit.ignore
    def total(self, x: torch.Tensor) -> float:
        return float(x.sum())

    @torch.jit.unused
    def never(self, x: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("not called")
'''


def _load(tmp_path, lib, name):
    path = tmp_path / "jit_source.py"
    path.write_text(SOURCE)
    spec = importlib.util.spec_from_file_location(name, str(path))
    mod = importlib.util.module_from_spec(spec)
    mod.torch = lib
    sys.modules[name] = mod  # inspect.getsource finds a class through its module
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def src(tmp_path):
    yield _load(tmp_path, janus, "jit_source_janus")
    sys.modules.pop("jit_source_janus", None)


def X(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_script_returns_its_argument_and_the_results_are_eager(src):
    s = janus.jit.script
    assert s(src.gate) is src.gate and s(src.forked, optimize=None, example_inputs=[(1,)]) is src.forked
    net = src.Net()
    assert s(net) is net
    assert s(list) is list  # a class
    x = janus.tensor(X(5, 4))
    for n in (0, 1, 3):
        assert np.array_equal(s(src.gate)(x, n).numpy(), src.gate(x, n).numpy())
    assert np.array_equal(s(net)(x).numpy(), net(x).numpy())
    assert s(net).total(x) == net.total(x) and s(net).scale == 0.5
    ref = sum(src.gate(x, n).numpy() for n in range(3))
    np.testing.assert_allclose(src.forked(x).numpy(), ref, rtol=1e-6)

    @janus.jit.script
    def double(x):
        return x * 2

    assert double.__name__ == "double" and np.array_equal(double(x).numpy(), (x * 2).numpy())
    with pytest.raises(RuntimeError, match="cannot be compiled since it inherits from nn.Module, pass an instance"):
        s(src.Net)


def test_script_agrees_with_torch_jit_script(src, tmp_path):
    torch = pytest.importorskip("torch")
    import warnings
    ref = _load(tmp_path, torch, "jit_source_torch")
    try:
        jnet, tnet = src.Net(), ref.Net()
        tnet.load_state_dict({k: torch.tensor(v.numpy()) for k, v in jnet.state_dict().items()})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch.jit is deprecated in PyTorch
            tnet_s, tgate, tforked = torch.jit.script(tnet), torch.jit.script(ref.gate), torch.jit.script(ref.forked)
        jnet_s, jgate, jforked = janus.jit.script(jnet), janus.jit.script(src.gate), janus.jit.script(src.forked)
        for seed in range(3):
            a = X(6, 4, seed=seed)
            jx, tx = janus.tensor(a), torch.tensor(a)
            np.testing.assert_allclose(jnet_s(jx).numpy(), tnet_s(tx).detach().numpy(), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(jnet_s.features(jx).numpy(), tnet_s.features(tx).detach().numpy(),
                                       rtol=1e-5, atol=1e-6)
            for n in (0, 2):
                np.testing.assert_allclose(jgate(jx, n).numpy(), tgate(tx, n).numpy(), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(jforked(jx).numpy(), tforked(tx).numpy(), rtol=1e-5, atol=1e-6)
    finally:
        sys.modules.pop("jit_source_torch", None)


def test_trace_returns_the_object_without_running_it():
    calls = []

    def f(x):
        calls.append(x)
        return x + 1

    x = janus.ones(3)
    assert janus.jit.trace(f, (x,)) is f and janus.jit.trace(f, example_inputs=x, check_inputs=[(x,)]) is f
    assert calls == []

    class Counted(janus.nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = janus.nn.BatchNorm1d(3)
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            return self.bn(x)

    m = Counted().train()
    before = m.bn.running_mean.numpy().copy()
    assert janus.jit.trace(m, janus.randn(8, 3)) is m
    assert janus.jit.trace_module(m, {"forward": janus.randn(8, 3)}) is m
    # torch runs the module here (twice, with check_trace), moving the running statistics
    assert m.calls == 0 and np.array_equal(m.bn.running_mean.numpy(), before)
    assert int(m.bn.num_batches_tracked) == 0
    assert not janus.jit.is_tracing()

    def branch(x):
        return x * 2 if float(x.sum()) > 0 else x - 1

    traced = janus.jit.trace(branch, janus.ones(2))
    # the control flow stays Python's (a torch trace keeps the branch of its example)
    assert np.array_equal(traced(-janus.ones(2)).numpy(), [-2.0, -2.0])


def test_decorators_return_their_argument():
    def f(x):
        return x

    J = janus.jit
    assert J.ignore(f) is f and J.unused(f) is f and J.export(f) is f and J.interface(f) is f
    assert J.ignore(drop=True)(f) is f and J.ignore(False)(f) is f
    assert J._overload(f) is f and J._overload_method(f) is f
    with pytest.raises(RuntimeError, match="Argument to @torch.jit.ignore must be a bool or a function but got x"):
        J.ignore("x")
    prop = property(f)
    assert J.unused(prop) is prop


def test_fork_wait_annotate_and_the_eager_answers():
    J = janus.jit
    order = []

    def work(a, b=0):
        order.append("ran")
        return a + b

    fut = J.fork(work, 2, b=3)
    order.append("forked")
    assert order == ["ran", "forked"]  # run at fork, as torch's eager fork
    assert isinstance(fut, J.Future) and fut.done() and fut.value() == 5
    assert J.wait(fut) == 5 and fut.wait() == 5
    assert J.Future[janus.Tensor] is not None  # annotations subscript it

    def boom():
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        J.fork(boom)
    assert J.is_scripting() is False and J.is_tracing() is False
    v = [1]
    assert J.annotate(list, v) is v and J.Attribute(v, list) is v
    import typing
    assert J.Final is typing.Final


def test_names_left_out_raise_the_unsupported_error():
    for name in ("save", "load", "ScriptModule", "ScriptFunction", "freeze", "optimize_for_inference"):
        assert not hasattr(janus.jit, name), name
    with pytest.raises(AttributeError) as e:
        janus.jit.save
    assert isinstance(e.value, _unsupported.Unsupported)
    assert str(e.value).startswith("janus.jit.save is not supported by janus (test_jit.py:")
    with pytest.raises(ImportError) as e:
        from janus.jit import load  # noqa: F401
    assert isinstance(e.value, _unsupported.Unsupported)
    assert str(e.value).startswith("janus.jit.load is not supported by janus (test_jit.py:")


def test_janus_check_resolves_jit():
    from janus import check
    for name in ("torch.jit.script", "torch.jit.trace", "torch.jit.trace_module", "torch.jit.ignore",
                 "torch.jit.is_scripting", "torch.jit.Final", "torch.jit.fork", "torch.jit.wait"):
        assert check.resolve(name) is None, name
    assert check.resolve("torch.jit.save").startswith("torch.jit.save is not supported by janus")


ALIASED = """
    import torch
    import torch.jit
    import torch.jit as jit
    from torch.jit import script, trace, Final

    assert torch.__name__ == "janus" and torch.jit is jit and jit.__name__ == "janus.jit"

    @script
    def f(x: torch.Tensor) -> torch.Tensor:
        return x * 2 if not torch.jit.is_scripting() else x

    class Net(torch.nn.Module):
        k: Final[int]

        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(2, 2)
            self.k = 3

        def forward(self, x):
            return self.scaled(self.fc(x))

        @torch.jit.ignore
        def scaled(self, x):
            return x * self.k

    net = Net()
    assert torch.jit.script(net) is net and trace(net, torch.ones(1, 2)) is net
    print("f", f(torch.ones(2)).tolist())
    try:
        torch.jit.save(net, "m.pt")
    except AttributeError as e:
        print("caught:", e)
"""


@needs_janus_command
def test_torch_jit_under_the_alias(tmp_path):
    s = tmp_path / "train.py"
    s.write_text(textwrap.dedent(ALIASED))
    env = dict(os.environ, JANUS_BUILD_DIR=BUILD,
               PYTHONPATH=os.path.join(ROOT, "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for k in ("JANUS_RECORD_DB", "JANUS_RECORD_RUN", "JANUS_REPLAY_DB", "JANUS_REPLAY_RUN"):
        env.pop(k, None)
    p = subprocess.run([JANUS, "run", sys.executable, str(s)], capture_output=True, text=True, cwd=tmp_path,
                       env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "f [2.0, 2.0]" in p.stdout
    assert "caught: torch.jit.save is not supported by janus (train.py:32)" in p.stdout
    # janus check reports the left-out name only, not script/trace/Final
    c = subprocess.run([JANUS, "check", str(s)], capture_output=True, text=True, cwd=tmp_path, env=env,
                       timeout=120)
    assert c.returncode == 1, c.stderr
    assert c.stdout.splitlines()[0].startswith("train.py:32: torch.jit.save is not supported by janus")
    assert len(c.stdout.splitlines()) == 1, c.stdout


SCRIPTED = r'''
import sys
import janus, janus.nn as nn
janus.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(8, 16), nn.Linear(16, 2)

    def forward(self, x):
        h = janus.tanh(self.fc1(x))
        if not janus.jit.is_scripting():
            h = h * 0.5
        return self.fc2(h)


@janus.jit.script
def mse(a, b):
    return ((a - b) ** 2).mean()


model = janus.jit.script(Net())
opt = janus.optim.Adam(model.parameters(), lr=1e-2)
X, Y = janus.randn(64, 8), janus.randn(64, 2)
for step in range(int(sys.argv[1])):
    if step == 25 and sys.argv[2:] == ["patch"]:  # the guarded module attribute changes: forward's Python runs
        janus.jit.is_scripting = lambda: True
    x, y = X[(step * 8) % 64:][:8], Y[(step * 8) % 64:][:8]
    opt.zero_grad()
    loss = mse(model(x), y)
    loss.backward()
    opt.step()
    print(step, "loss", f"{loss.item():.7f}")
import json
print("STATS " + json.dumps(janus._C._rp_region_stats()), file=sys.stderr)  # None when eager
'''


def test_a_scripted_model_records_and_replays_as_eager(tmp_path):
    from dynamic_runs import have_optimize
    if not have_optimize():
        pytest.skip("janus optimize is not built")
    from test_replay import replay_whole, run
    db, rr, s = replay_whole(SCRIPTED, ["20"], ["30"], tmp_path, "scripted.py")
    assert rr.stdout.count(" loss ") == 30 and s["segments"] >= 30, s
    tmp, script = str(tmp_path), os.path.join(str(tmp_path), "scripted.py")
    # `janus.jit.is_scripting()` in forward reads a module's module: guarded, not a refusal
    import json
    import re
    st = json.loads(re.search(r"^STATS (.*)$", rr.stderr, re.M).group(1))
    rows = {x[0].split(" (")[0]: x[1:] for x in st["per_region"]}
    assert rows["Net.forward"][1] >= 25 and not rows["Net.forward"][2], (rows, st["reasons"])
    # is_scripting replaced at step 25: the entry guard misses and the new branch runs, as eagerly
    re_, we = run(script, ["30", "patch"], tmp, "eager")
    rr, wr = run(script, ["30", "patch"], tmp, "replay", JANUS_REPLAY_DB=db, JANUS_REPLAY_ADAPT="0")
    assert re_.returncode == 0 and rr.returncode == 0, rr.stderr[-3000:]
    assert rr.stdout == re_.stdout and wr == we
    st = json.loads(re.search(r"^STATS (.*)$", rr.stderr, re.M).group(1))
    assert any("Net.forward" in w and "is_scripting" in w for w, _ in st["reasons"]), st["reasons"]
