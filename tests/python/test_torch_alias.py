"""PyTorch scripts on janus: `janus run/record/replay` make `import torch`
(and every torch.* module janus provides) load janus for the child only,
`--no-torch` turns that off, a plain `python train.py` is untouched, and an
installed PyTorch is never loaded under the alias.  A name janus lacks
fails where it is used with one message naming it, the file:line and the
nearest alternative (AttributeError / ImportError subclasses), and `janus
check` lists the same names statically before anything runs."""
import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest

import janus

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(ROOT, "build")))
JANUS = os.path.join(BUILD, "janus")

pytestmark = pytest.mark.skipif(not os.path.exists(JANUS), reason=f"{JANUS} not built")


def _real_torch_dir():
    """Where an installed PyTorch lives (found without importing it), or None."""
    spec = importlib.util.find_spec("torch") if "torch" not in sys.modules else sys.modules["torch"].__spec__
    if spec is None or not spec.origin or "janus" in spec.origin:
        return None
    return os.path.dirname(spec.origin)


TORCH_DIR = _real_torch_dir()


def _env(tmp_path, **extra):
    e = dict(os.environ)
    e["JANUS_BUILD_DIR"] = BUILD
    e["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + e.get("PYTHONPATH", "")
    e["TMPDIR"] = str(tmp_path / "tmp")
    os.makedirs(e["TMPDIR"], exist_ok=True)
    for k in ("JANUS_RECORD_DB", "JANUS_RECORD_RUN", "JANUS_REPLAY_DB", "JANUS_REPLAY_RUN", "JANUS_PYTHON"):
        e.pop(k, None)
    e.update(extra)
    return e


def run(tmp_path, *args, env=None, timeout=120):
    return subprocess.run(list(args), capture_output=True, text=True, cwd=tmp_path, timeout=timeout,
                          env=env or _env(tmp_path))


def script(tmp_path, body, name="train.py"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(body))
    return str(p)


TRAIN = """
    import os, sys
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import torch.optim as optim
    from torch.utils.data import DataLoader, TensorDataset
    from torch.nn.modules.dropout import Dropout2d
    from torch.cuda.amp import GradScaler
    import torch.backends.cudnn as cudnn
    import torch.onnx, torch.distributions, torch.multiprocessing, torch.accelerator
    from torch.serialization import safe_globals
    import torch.nn.modules.transformer

    cudnn.benchmark = True
    assert torch.__name__ == "janus" and nn.Linear.__module__.startswith("janus.")
    assert torch.nn.modules.dropout.Dropout2d is Dropout2d is torch.nn.Dropout2d
    assert torch.cuda.is_available() == torch.accelerator.is_available()
    model = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.1), nn.Linear(8, 2))
    opt = optim.Adagrad(model.parameters(), lr=0.1)
    data = TensorDataset(torch.randn(32, 4), torch.randint(0, 2, (32,)))
    for x, y in DataLoader(data, batch_size=8):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
        loss.backward()
        opt.step()
    torch_dir = os.environ.get("REAL_TORCH_DIR")
    if torch_dir:
        loaded = [n for n, m in list(sys.modules.items())
                  if (getattr(m, "__file__", None) or "").startswith(torch_dir + os.sep)]
        assert not loaded, loaded
    print("trained on", torch.__name__, "loss", round(float(loss), 3))
"""


def test_janus_run_makes_torch_janus_and_loads_no_pytorch(tmp_path):
    s = script(tmp_path, TRAIN)
    p = run(tmp_path, JANUS, "run", sys.executable, s, env=_env(tmp_path, REAL_TORCH_DIR=TORCH_DIR or ""))
    assert p.returncode == 0, p.stderr
    assert "trained on janus" in p.stdout
    assert os.listdir(tmp_path / "tmp") == []  # the alias folder is gone
    assert not (tmp_path / "run.db").exists()   # janus run stores nothing


def test_record_and_replay_alias_torch_and_no_torch_turns_it_off(tmp_path):
    s = script(tmp_path, TRAIN)
    db = str(tmp_path / "r.db")
    p = run(tmp_path, JANUS, "record", "--db", db, sys.executable, s)
    assert p.returncode == 0 and "trained on janus" in p.stdout, p.stderr
    assert "steps" in p.stderr
    p = run(tmp_path, JANUS, "replay", "--db", db, sys.executable, s)
    assert p.returncode == 0 and "trained on janus" in p.stdout, p.stderr
    probe = script(tmp_path, """
        try:
            import torch
            print("torch is", torch.__name__)
        except ImportError:
            print("no torch")
    """, "probe.py")
    for args in (["run", "--no-torch"], ["record", "--no-torch", "--db", db], ["replay", "--db", db, "--no-torch"]):
        p = run(tmp_path, JANUS, *args, "--", sys.executable, probe)
        assert p.returncode == 0, (args, p.stderr)
        assert "torch is janus" not in p.stdout and ("torch is torch" in p.stdout or "no torch" in p.stdout), args
    p = run(tmp_path, sys.executable, probe)  # a plain run is untouched
    assert "torch is janus" not in p.stdout
    assert os.listdir(tmp_path / "tmp") == []


def test_run_passes_the_exit_status_and_ignores_stores_in_its_environment(tmp_path):
    s = script(tmp_path, "import torch, sys; sys.exit(3)")
    db = tmp_path / "ignored.db"
    p = run(tmp_path, JANUS, "run", sys.executable, s, env=_env(tmp_path, JANUS_RECORD_DB=str(db),
                                                                  JANUS_RECORD_RUN="1"))
    assert p.returncode == 3 and not db.exists(), p.stderr
    assert run(tmp_path, JANUS, "run").returncode == 2
    assert run(tmp_path, JANUS, "run", "--bogus", "x").returncode == 2
    h = run(tmp_path, JANUS, "help", "run")
    assert h.returncode == 0 and "--no-torch" in h.stdout
    assert "check" in run(tmp_path, JANUS, "--help").stdout
    assert "--no-torch" in run(tmp_path, JANUS, "record", "--help").stdout


def test_a_child_without_janus_is_told_why(tmp_path):
    s = script(tmp_path, "import torch")
    env = _env(tmp_path)
    env["PYTHONPATH"] = ""
    env.pop("JANUS_BUILD_DIR")
    p = run(tmp_path, JANUS, "run", sys.executable, "-S", s, env=env)
    assert p.returncode == 1
    assert "cannot import janus" in p.stderr and "--no-torch" in p.stderr


UNSUPPORTED = [
    ("import torch\nm = torch.nn.SyncBatchNorm(3)\n",
     "torch.nn.SyncBatchNorm is not supported by janus (bad.py:2); use torch.nn.BatchNorm2d", "AttributeError"),
    ("import torch\nfrom torch.optim import SparseAdam\n",
     "torch.optim.SparseAdam is not supported by janus (bad.py:2); use torch.optim.Adam", "ImportError"),
    ("import torch\n\nimport torch.quantization\n",
     "torch.quantization is not supported by janus (bad.py:3); instead: float32 or torch.autocast", "ImportError"),
    ("import torch\nx = torch.nn.Transformr\n",
     "torch.nn.Transformr is not supported by janus (bad.py:2); use torch.nn.Transformer", "AttributeError"),
    ("import torch.nn.functional as F\nF.conv_tbc(None, None)\n",
     "torch.nn.functional.conv_tbc is not supported by janus (bad.py:2)", "AttributeError"),
    ("import torch.distributed.rpc\n", "torch.distributed.rpc is not supported by janus (bad.py:1)", "ImportError"),
]


@pytest.mark.parametrize("body,message,kind", UNSUPPORTED)
def test_unsupported_names_fail_where_used(tmp_path, body, message, kind):
    s = script(tmp_path, body, "bad.py")
    p = run(tmp_path, JANUS, "run", sys.executable, s)
    assert p.returncode == 1
    last = p.stderr.strip().splitlines()[-1]
    assert message in last, p.stderr
    assert last.startswith("janus._unsupported.Unsupported" + ("Attribute" if kind == "AttributeError" else ""))


def test_unsupported_errors_behave_like_torchs_missing_names(tmp_path):
    s = script(tmp_path, """
        import torch
        assert not hasattr(torch, "compile_everything") and getattr(torch.nn, "Foo", None) is None
        try:
            torch.jit.save
        except AttributeError as e:
            print("caught:", e)
        try:
            from torch.quantization import quantize_dynamic
        except ImportError as e:
            print("caught:", e)
        try:
            import torchvision_does_not_exist
        except ImportError as e:
            print("other:", type(e).__name__)
    """)
    p = run(tmp_path, JANUS, "run", sys.executable, s)
    assert p.returncode == 0, p.stderr
    assert "caught: torch.jit.save is not supported by janus (train.py:5)" in p.stdout
    assert "caught: torch.quantization is not supported by janus (train.py:9)" in p.stdout
    assert "other: ModuleNotFoundError" in p.stdout


def test_every_listed_alternative_names_a_missing_name():
    """A name janus gained must leave ALTERNATIVES, or its hint would never show."""
    for rel in janus._unsupported.ALTERNATIVES:
        owner, parts = janus, rel.split(".")
        for k, part in enumerate(parts):
            if not hasattr(owner, part):
                break
            owner = getattr(owner, part)
        else:
            raise AssertionError(f"torch.{rel} exists in janus but is still listed as unsupported")


def test_plain_janus_names_its_own_modules():
    with pytest.raises(AttributeError) as e:
        janus.nn.SyncBatchNorm
    assert str(e.value).startswith("janus.nn.SyncBatchNorm is not supported by janus (test_torch_alias.py:")
    assert str(e.value).endswith("; use janus.nn.BatchNorm2d")
    assert isinstance(e.value, janus._unsupported.Unsupported)
    with pytest.raises(AttributeError, match="has no attribute '__wrapped__'"):
        janus.__wrapped__
    import janus.cuda.amp as amp  # a module object, importable by its name
    assert amp.GradScaler is janus.cuda.amp.GradScaler
    m = janus.nn.Linear(2, 2)
    with pytest.raises(AttributeError, match=r"^janus.nn.Module.register_backward_hook is not supported by "
                                             r"janus \(test_torch_alias.py:\d+\); use janus.nn.Module.register_full"):
        m.register_backward_hook(print)
    with pytest.raises(AttributeError, match="^'Linear' object has no attribute 'my_own'$"):
        m.my_own  # the user's own attributes keep Python's message


# ------------------------------------------------------------- janus check
CHECKED = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch import optim
    from torch.quantization import quantize_dynamic
    import torchvision
    from helper import Net
    import numpy as np


    def f(F, nn):
        return F.whatever, nn.Anything    # parameters: not the torch modules


    x = torch.zeros(3)
    y = F.conv_tbc(x, 2)
    opt = optim.SparseAdam([])
    z = torch.jit.script(Net())         # supported: returns its argument
    torch.Tensor.resize_
    np.anything_goes
    scaler = torch.cuda.amp.GradScaler()
    layer = nn.TransformerEncoderLayer(8, 2)
"""


def test_janus_check_lists_unsupported_names_with_file_and_line(tmp_path):
    script(tmp_path, """
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.bn = nn.SyncBatchNorm(3)
    """, "helper.py")
    s = script(tmp_path, CHECKED)
    p = run(tmp_path, JANUS, "check", s)
    assert p.returncode == 1, p.stderr
    lines = p.stdout.splitlines()
    assert lines == [
        "helper.py:6: torch.nn.SyncBatchNorm is not supported by janus; use torch.nn.BatchNorm2d",
        "train.py:6: torch.quantization is not supported by janus; instead: float32 or torch.autocast "
        "(janus has no quantized tensors)",
        "train.py:7: torchvision is not supported by janus; instead: janus.datasets and your own transforms "
        "(torchvision imports PyTorch's internals)",
        "train.py:17: torch.nn.functional.conv_tbc is not supported by janus",
        "train.py:18: torch.optim.SparseAdam is not supported by janus; use torch.optim.Adam",
        "train.py:20: torch.Tensor.resize_ is not supported by janus",
    ], p.stdout
    assert "6 unsupported torch names in 2 files" in p.stderr


def test_janus_check_exit_codes(tmp_path):
    ok = script(tmp_path, TRAIN, "ok.py")
    p = run(tmp_path, JANUS, "check", ok)
    assert p.returncode == 0 and p.stdout == "" and "every torch name in 1 file is supported" in p.stderr
    p = run(tmp_path, JANUS, "check", str(tmp_path / "missing.py"))
    assert p.returncode == 2 and "missing.py" in p.stderr
    bad = script(tmp_path, "def f(:\n", "syntax.py")
    assert run(tmp_path, JANUS, "check", bad).returncode == 2
    assert run(tmp_path, JANUS, "check").returncode == 2
    env = _env(tmp_path, JANUS_PYTHON=str(tmp_path / "no-python"))
    p = run(tmp_path, JANUS, "check", ok, env=env)
    assert p.returncode == 127 and "cannot run" in p.stderr


def test_check_module_resolves_like_the_alias():
    from janus import check
    assert check.resolve("torch.nn.Linear") is None
    assert check.resolve("torch.nn.modules.dropout.Dropout2d") is None
    assert check.resolve("torch.cuda.amp.GradScaler") is None
    assert check.resolve("torch.optim.lr_scheduler.OneCycleLR") is None
    assert check.resolve("torch.jit.script") is None and check.resolve("torch.jit.trace") is None
    assert check.resolve("torch.jit.save").startswith("torch.jit.save is not supported")
    assert check.resolve("torch.nn.SyncBatchNorm").startswith("torch.nn.SyncBatchNorm is not supported")
    assert check.resolve("torch._dynamo").startswith("torch._dynamo is not supported")


def test_a_pytorch_script_records_optimizes_and_replays_to_the_same_numbers(tmp_path):
    """The new table op (sort, under topk), cat/stack past the op's input
    limit and the Transformer layers replay through compiled graphs with
    eager's results."""
    s = script(tmp_path, """
        import torch
        import torch.nn as nn
        torch.manual_seed(0)
        enc = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
        head = nn.Sequential(nn.Linear(8, 8), nn.LeakyReLU(0.1))
        opt = torch.optim.Adam(list(enc.parameters()) + list(head.parameters()), lr=1e-2)
        x = torch.randn(4, 5, 8)
        for step in range(12):
            opt.zero_grad()
            h = head(enc(x))
            loss = torch.topk(h, 3, dim=-1).values.mean() + torch.stack([h[:, 0, 0]] * 70).pow(2).mean()
            loss.backward()
            opt.step()
        print("final %.9g" % float(loss))
    """)
    db = str(tmp_path / "run.db")
    rec = run(tmp_path, JANUS, "record", "--db", db, sys.executable, s)
    assert rec.returncode == 0, rec.stderr
    opt = run(tmp_path, JANUS, "optimize", "--no-compile", db, timeout=300)
    assert opt.returncode == 0, opt.stderr
    rep = run(tmp_path, JANUS, "replay", "--db", db, sys.executable, s, timeout=300)
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout and rep.stdout.startswith("final")
    hits = int(rep.stderr.split("(")[1].split(" of ")[0].replace(",", ""))
    assert hits > 0, rep.stderr
