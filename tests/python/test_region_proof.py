"""The proof from the recording (issue 23 item 2): `janus record` marks every
region call in the trace and scans the code its calls run
(janus/_record.py), the analyzer decides per region (analyzer/regions.c),
`janus optimize` and `janus inspect` list the verdicts, and a replay reads
them (_C._rp_region_verdicts).  tests/regions/proof_cases.py has pure
modules and optimizers and one module per way to be refused; each verdict
is checked with its exact reason and file:line, and the region lines of
both commands against golden text."""
import json
import os
import re
import subprocess
import sys

import pytest

from dynamic_runs import GOLDEN, ROOT, env, have_optimize, janus

pytestmark = pytest.mark.skipif(not have_optimize(), reason="janus optimize is not built")

CASES = os.path.join(ROOT, "tests", "regions", "proof_cases.py")
HASH = re.compile(r"\b[0-9a-f]{16}\b")
OWN_LINE = re.compile(r"\b(_factories\.py):\d+")


def record(tmp, *extra_env, steps=6):
    db = os.path.join(str(tmp), "run.db")
    r = janus("record", "--db", db, "--", sys.executable, CASES, str(steps), timeout=600,
              extra_env=dict(extra_env))
    assert r.returncode == 0, r.stderr[-3000:]
    return db, r


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("proof")
    db, rec = record(tmp)
    opt = janus("optimize", "--no-compile", db, timeout=600)
    assert opt.returncode == 0, opt.stderr[-3000:]
    ins = janus("inspect", "--json", db)
    assert ins.returncode == 0, ins.stderr[-3000:]
    verdicts = {(v["kind"], v["qualname"]): v for v in json.loads(ins.stdout)["bundles"][-1]["regions"]}
    return {"db": db, "record": rec, "optimize": opt.stdout, "verdicts": verdicts}


def test_recording_changes_no_result(recorded):
    plain = subprocess.run([sys.executable, CASES, "6"], capture_output=True, text=True, env=env(), timeout=600)
    assert plain.returncode == 0, plain.stderr[-3000:]
    assert plain.stdout == recorded["record"].stdout  # the losses, bit for bit, and the prints


@pytest.mark.parametrize("kind,qualname", [
    ("module", "Block"),     # parameters, a buffer, its argument
    ("module", "Linear"),    # janus's own module, nested in Block
    ("module", "Rows"),      # its op count follows its input's shape (batch 2, then 3)
    ("module", "CrossEntropyLoss"),  # a loss module (janus's Size.__new__ makes a tuple: pure)
    ("step", "SGD"),         # momentum state made on the first call
    ("zero_grad", "SGD"),
    ("clip", "clip_grad_norm_"),
])
def test_replaceable(recorded, kind, qualname):
    v = recorded["verdicts"][(kind, qualname)]
    assert v["verdict"] == "replaceable" and v["reason"] == "" and v["reason_site"] == "", v
    assert v["calls"] == 6 and HASH.fullmatch(v["code_hash"]) and v["code_hash"] in v["codes"].split()


@pytest.mark.parametrize("qualname,site,reason", [
    ("Counter", "proof_cases.py:31", "stores attribute n: an effect outside the call (in Counter.forward)"),
    ("Appends", "proof_cases.py:37", "calls list.append on a list that outlives the call (in Appends.forward)"),
    ("Prints", "proof_cases.py:43", "calls print (not on the pure allow-list) (in Prints.forward)"),
    ("Syncs", "proof_cases.py:49", "reads tensor data inside the call (item()): a sync point"),
    ("Random", "proof_cases.py:56", "calls Random.random (not on the pure allow-list) (in Random.forward)"),
    ("Global", "proof_cases.py:61", "mul reads a tensor that is neither an argument, a parameter, a buffer nor "
                                    "optimizer state (a global or an attribute tensor): pass it as an argument or "
                                    "register it as a buffer"),
    ("Flip", "proof_cases.py:72", "call 2 ran add where call 1 ran mul at proof_cases.py:71 (op 0), with inputs of "
                                  "the same shapes: control flow on a value the region does not see"),
    # refused through the Counter it calls: the Counter's line
    ("Outer", "proof_cases.py:31", "stores attribute n: an effect outside the call (in Counter.forward)"),
])
def test_refused(recorded, qualname, site, reason):
    v = recorded["verdicts"][("module", qualname)]
    assert (v["verdict"], v["reason_site"], v["reason"]) == ("refused", site, reason)
    # and optimize names it with the reason and the line
    assert f"region module {qualname} ({v['site']}): refused at {site}: {reason}\n" in recorded["optimize"]


def test_an_effect_in_janus_code_names_the_scripts_line(recorded):
    # janus.tensor(list) makes a tensor from Python data inside janus's own
    # code: the site is that code's line, and the script's line that led there
    v = recorded["verdicts"][("module", "MakesData")]
    assert v["verdict"] == "refused", v
    assert re.fullmatch(r"_factories\.py:\d+ \(from proof_cases\.py:115\)", v["reason_site"]), v
    assert v["reason"].startswith("calls _tensor_from_data (an effect or state a template does not reproduce)"), v


def test_counts_over_objects(recorded):
    # two Counter objects (one alone, one inside Outer): one verdict, their calls summed
    assert recorded["verdicts"][("module", "Counter")]["calls"] == 12


def region_lines(text, start):
    """The lines from `start` on that name a region of proof_cases.py, hashes and the
    lines of janus's own files (a site inside janus, before the script's) replaced."""
    out, on = [], False
    for line in text.splitlines():
        on = on or line.strip().startswith(start)
        if on and ("proof_cases.py" in line or line.strip().startswith(start)):
            out.append(OWN_LINE.sub(r"\1:<line>", HASH.sub("<hash>", line.rstrip())))
    return out


def golden(name, lines):
    path = os.path.join(GOLDEN, name)
    from janus import _C
    if _C._setting_value("JANUS_UPDATE_GOLDEN"):
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
    with open(path) as f:
        assert lines == f.read().splitlines(), f"{name} differs (JANUS_UPDATE_GOLDEN=1 regenerates)"


def test_golden_optimize(recorded):
    golden("regions_optimize.txt", region_lines(recorded["optimize"], "janus optimize: regions:"))


def test_golden_inspect(recorded):
    r = janus("inspect", recorded["db"])
    assert r.returncode == 0, r.stderr[-3000:]
    lines = region_lines(r.stdout, "regions:")
    assert lines[0].startswith("    regions: 7 replaceable, 9 refused")
    golden("regions_inspect.txt", lines)


READ = """
import json
from janus import _C, _region
print("VERDICTS " + json.dumps(_C._rp_region_verdicts()))
print("HASH " + _region._Scan(Counter.forward.__code__).hash)
"""


def test_replay_reads_the_verdicts(recorded, tmp_path):
    """The replayed process gets the verdicts of the bundle it runs, and the code hash the
    recording stored is the one the replayed process computes for the same code (the
    script copied elsewhere, with lines that read them appended)."""
    script = os.path.join(str(tmp_path), "proof_cases.py")
    with open(CASES) as src, open(script, "w") as f:
        f.write(src.read() + READ)
    r = janus("replay", "--db", recorded["db"], "--", sys.executable, script, "6", timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    v = json.loads(re.search(r"^VERDICTS (.*)$", r.stdout, re.M).group(1))
    h = re.search(r"^HASH (\w+)$", r.stdout, re.M).group(1)
    by = {(x["kind"], x["qualname"]): x for x in v}
    c = by[("module", "Counter")]
    assert (c["verdict"], c["reason_site"], c["site"]) == ("refused", "proof_cases.py:31", "proof_cases.py:30")
    assert c["code_hash"] == h and h in c["codes"]
    assert by[("step", "SGD")]["verdict"] == "replaceable"
    assert len(v) == len(recorded["verdicts"])


def test_no_replay_no_verdicts():
    r = subprocess.run([sys.executable, "-c", "from janus import _C; print(_C._rp_region_verdicts())"],
                       capture_output=True, text=True, env=env(), timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stderr


def test_regions_off(tmp_path):
    db, _ = record(tmp_path, ("JANUS_RECORD_REGIONS", "0"))
    opt = janus("optimize", "--no-compile", db, timeout=600)
    assert opt.returncode == 0 and "regions:" not in opt.stdout, opt.stdout
    ins = janus("inspect", "--json", db)
    assert json.loads(ins.stdout)["bundles"][-1]["regions"] == []


def test_called_once_is_not_proved(tmp_path):
    """A region object's first call is not observed (it makes state): one call proves nothing."""
    db, _ = record(tmp_path, steps=1)
    opt = janus("optimize", "--no-compile", db, timeout=600)
    assert opt.returncode == 0, opt.stderr[-3000:]
    ins = janus("inspect", "--json", db)
    v = {(x["kind"], x["qualname"]): x for x in json.loads(ins.stdout)["bundles"][-1]["regions"]}
    b = v[("module", "Block")]
    assert b["verdict"] == "refused" and b["reason_site"] == "proof_cases.py:21"
    assert b["reason"].startswith("its code was not observed when recording") and "called 1 time " in b["reason"]


STATS = """
import json
from janus import _C
print("STATS " + json.dumps(_C._rp_region_stats()))
"""


def test_replay_follows_the_recorded_verdicts(recorded, tmp_path):
    """A region the recording refused is not learned at replay: each call runs its Python
    naming the recording's reason and line; one the recording proved is learned and
    replaced (the replay's own proof agrees); the results are eager's."""
    script = os.path.join(str(tmp_path), "proof_cases.py")
    with open(CASES) as src, open(script, "w") as f:
        f.write(src.read() + STATS)
    r = janus("replay", "--db", recorded["db"], "--", sys.executable, script, "6", timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    e = janus("replay", "--eager", "--db", recorded["db"], "--", sys.executable, script, "6", timeout=600)
    assert [x for x in r.stdout.splitlines() if not x.startswith("STATS")] == \
        [x for x in e.stdout.splitlines() if not x.startswith("STATS")]
    st = json.loads(re.search(r"^STATS (.*)$", r.stdout, re.M).group(1))
    why = " | ".join(w for w, _ in st["reasons"])
    assert ("Counter.forward (proof_cases.py:30): refused by the recording: stores attribute n: an effect outside "
            "the call (in Counter.forward) at proof_cases.py:31") in why, why
    rows = {x[0].split(" (")[0]: x[1:] for x in st["per_region"]}
    assert rows["Counter.forward"][1:] == [0, True], rows
    # proved by the recording: learned here (no recorded refusal), Rows replaced
    assert not re.search(r"(Rows|Linear)\.forward \([^)]*\): refused by the recording", why), why
    assert rows["Rows.forward"][1] > 0, rows
    # Block calls `.relu()`, a tensor method janus defines in Python: a method read, not an unguarded object
    assert "reads attribute relu" not in why, why
    assert rows["Block.forward"][1] > 0, rows
    # stored with the replay's counters (schema v10): inspect and report show what the exit line said
    ins = janus("inspect", "--json", recorded["db"])
    assert ins.returncode == 0, ins.stderr[-3000:]
    run = [x for x in json.loads(ins.stdout)["runs"] if x["kind"] == "replay"][-1]
    stored = {x["region"]: x for x in run["replay"]["regions"]}
    assert {k: [v["calls"], v["replaced"], v["refused"]] for k, v in stored.items()} == \
        {x[0]: list(x[1:]) for x in st["per_region"]}
    counter = stored[[k for k in stored if k.startswith("Counter.forward")][0]]
    assert counter["reasons"][0]["reason"].startswith("refused by the recording: stores attribute n"), counter
    assert sum(w["count"] for w in counter["reasons"]) == counter["calls"] - counter["replaced"], counter
    txt = janus("inspect", recorded["db"]).stdout
    assert re.search(r"region calls at replay: \d+ of \d+ ran without their Python", txt), txt[-3000:]
    assert re.search(r"Rows\.forward \([^)]*\): [1-9]\d* of \d+ calls replaced", txt), txt[-3000:]
    rep = janus("report", "--json", recorded["db"])
    assert rep.returncode == 0, rep.stderr[-3000:]
    rrun = [x for x in json.loads(rep.stdout)["runs"] if x["kind"] == "replay"][-1]
    assert {x["region"]: x["replaced"] for x in rrun["regions"]} == {k: v["replaced"] for k, v in stored.items()}
    page = os.path.join(str(tmp_path), "report.html")
    r = janus("report", "-o", page, recorded["db"], timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    with open(page) as f:
        html = f.read()
    assert "ran without their Python.</p>" in html and "Rows.forward (proof_cases.py:76)" in html


PLAIN = """
import sys
sys.path.insert(0, {python!r})
import janus
params = [janus.randn(4, 4, requires_grad=True) for _ in range(3)]
x = janus.randn(4, 4)
opt = janus.optim.Adam(params, lr=1e-3)
for s in range(6):
    opt.zero_grad()
    loss = sum((p * x).sum() for p in params)
    loss.backward()
    opt.step()
"""


def test_an_optimizer_over_plain_tensors_is_replaceable(tmp_path):
    """The tensors a script hands an optimizer are its inputs whether or not they are
    nn.Parameters (the recording gives the step its parameters and their gradients)."""
    script = tmp_path / "plain.py"
    script.write_text(PLAIN.format(python=os.path.join(ROOT, "python")))
    db = str(tmp_path / "run.db")
    r = janus("record", "--db", db, "--", sys.executable, str(script), timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    r = janus("optimize", db, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "regions: 2 replaceable, 0 refused" in r.stdout + r.stderr, r.stdout + r.stderr


def recorded_verdicts(tmp_path, source, name):
    """Write source as a script, record and optimize it: (script, store, {(kind, qualname): verdict})."""
    script = tmp_path / name
    script.write_text(source.format(python=os.path.join(ROOT, "python")))
    db = str(tmp_path / "run.db")
    r = janus("record", "--db", db, "--", sys.executable, str(script), timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    r = janus("optimize", "--no-compile", db, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    ins = janus("inspect", "--json", db)
    return script, db, {(x["kind"], x["qualname"]): x for x in json.loads(ins.stdout)["bundles"][-1]["regions"]}


TWO_CALLERS = """
import sys
sys.path.insert(0, {python!r})
import janus, janus.nn as nn
janus.manual_seed(0)
fc = nn.Linear(4, 4)
opt = janus.optim.SGD(fc.parameters(), lr=0.1)
for i in range(5):
    x = janus.randn(2, 4)
    if i % 2:
        y = fc(x)          # the same module, the same shapes,
    else:
        y = fc(x * 2)      # called from another line
    loss = (y ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_a_module_called_from_two_lines_is_replaceable(tmp_path):
    """janus's own module runs no user code: every op's site is its caller's
    line, which differs between callers without the program differing."""
    _, _, v = recorded_verdicts(tmp_path, TWO_CALLERS, "two.py")
    assert v[("module", "Linear")]["verdict"] == "replaceable", v[("module", "Linear")]


TRAIN_EVAL = """
import sys
sys.path.insert(0, {python!r})
import janus, janus.nn as nn
janus.manual_seed(0)


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 1)

    def forward(self, h):
        if self.training:          # user code branching on the mode
            h = h * 0.5
        return self.fc(h)


net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.1), Head())
opt = janus.optim.SGD(net.parameters(), lr=0.1)
x, y = janus.randn(32, 8), janus.randn(32, 1)
for epoch in range(4):
    net.train()
    for i in range(3):
        loss = nn.functional.mse_loss(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"loss {{loss.item():.7f}}")
    net.eval()
    with janus.no_grad():
        print("val", f"{{nn.functional.mse_loss(net(x), y).item():.7f}}")
    print("eval with grad", f"{{net(x).sum().item():.7f}}")
"""


def test_train_and_eval_calls_compare_apart(tmp_path):
    """A model called in train mode (dropout, a branch on self.training) and in
    eval mode, with and without grad, on inputs of the same shapes: the calls
    of one mode ran the same ops, so the region is replaceable (the entry
    marker carries the call's grad mode and training flag, jn_db.h); replay
    learns one variant per mode and prints eager's numbers."""
    script, db, v = recorded_verdicts(tmp_path, TRAIN_EVAL, "train_eval.py")
    for name in ("Sequential", "Head", "Dropout"):
        assert v[("module", name)]["verdict"] == "replaceable", v[("module", name)]
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env(), timeout=600)
    rr = janus("replay", "--db", db, "--", sys.executable, str(script), timeout=600,
               extra_env={"JANUS_REPLAY_ADAPT": "0"})
    assert plain.returncode == 0 and rr.returncode == 0, rr.stderr[-3000:]
    assert rr.stdout == plain.stdout
    regions = json.loads(janus("inspect", "--json", db).stdout)["runs"][-1]["replay"]["regions"]
    seq = next(x for x in regions if x["region"].startswith("Sequential"))
    # 20 calls in three modes: the first calls of each learn, the rest are replaced
    assert seq["calls"] == 20 and seq["replaced"] >= 14 and not seq["refused"], seq


ATTR = """
import sys
sys.path.insert(0, {python!r})
import janus, janus.nn as nn
janus.manual_seed(0)
G = janus.randn(4)


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.scale = janus.linspace(0.5, 1.5, 4)   # a plain tensor attribute, not a buffer

    def forward(self, x):
        return self.fc(x) * self.scale


class UsesGlobal(nn.Module):
    def forward(self, x):
        return x + G


m, g = Scaled(), UsesGlobal()
opt = janus.optim.SGD(m.parameters(), lr=0.1)
for i in range(5):
    loss = (g(m(janus.randn(2, 4))) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"loss {{loss.item():.7f}}")
"""


def test_a_tensor_attribute_is_an_input(tmp_path):
    """A module's own tensor attributes are on its entry marker (replay binds the
    ones a template reads): a plain attribute tensor (`self.scale = ...`, or the
    weight spectral_norm's pre-hook sets) no longer refuses it; a global tensor
    still does."""
    script, db, v = recorded_verdicts(tmp_path, ATTR, "attr.py")
    assert v[("module", "Scaled")]["verdict"] == "replaceable", v[("module", "Scaled")]
    assert v[("module", "UsesGlobal")]["verdict"] == "refused", v[("module", "UsesGlobal")]
    assert "a global or an attribute tensor" in v[("module", "UsesGlobal")]["reason"]
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env(), timeout=600)
    rr = janus("replay", "--db", db, "--", sys.executable, str(script), timeout=600,
               extra_env={"JANUS_REPLAY_ADAPT": "0"})
    assert plain.returncode == 0 and rr.returncode == 0 and rr.stdout == plain.stdout, rr.stderr[-3000:]
    regions = json.loads(janus("inspect", "--json", db).stdout)["runs"][-1]["replay"]["regions"]
    sc = next(x for x in regions if x["region"].startswith("Scaled"))
    assert sc["replaced"] >= 3, sc
