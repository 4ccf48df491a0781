"""The recorder: scripts run in a subprocess with JANUS_RECORD_DB set (what
`janus record` does), then the store is read back with Python's sqlite3 and
the stored event chunks are decoded through janus._C._rec_read_step."""
import json
import os
import sqlite3
import subprocess
import sys
import textwrap

import pytest

import janus
from janus import _C, _record

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def record(tmp_path, body, decisions=True, name="train.py", expect_rc=0, env_extra=None, db_name="run.db"):
    """Run `body` as a user script under recording; returns (db, run, script path)."""
    db = str(tmp_path / db_name)
    run = _C._rec_create_run(db, json.dumps([name]))
    script = tmp_path / name
    script.write_text(textwrap.dedent(body))
    env = dict(os.environ, JANUS_RECORD_DB=db, JANUS_RECORD_RUN=str(run),
               PYTHONPATH=os.path.join(ROOT, "python"))
    if not decisions:
        env["JANUS_RECORD_DECISIONS"] = "0"
    env.update(env_extra or {})
    p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == expect_rc, p.stderr
    return db, run, str(script)


def q(db, sql, *args):
    con = sqlite3.connect(db)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def callsite_line(db, cs):
    return q(db, "SELECT line FROM callsites WHERE id = ?", cs)[0][0]


TRAIN = """\
import janus
import janus.nn as nn
janus.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
opt = janus.optim.Adam(model.parameters(), lr=0.01)
x = janus.tensor([[1.0, 2.0, 3.0, 4.0]] * 3)
y = janus.tensor([0, 1, 0])
for step in range(6):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    if step % 3 == 0:
        loss = loss * 2.0
    for k in range(step % 2 + 1):
        loss = loss + 1
    loss.backward()
    opt.step()
    v = loss.item()
"""
# script lines (1-based) referenced below
L_FWD, L_IF, L_INNER_FOR, L_ADD, L_BACKWARD, L_STEP, L_ITEM = 10, 11, 13, 14, 15, 16, 17


@pytest.fixture(scope="module")
def train(tmp_path_factory):
    return record(tmp_path_factory.mktemp("train"), TRAIN)


def test_steps_split_at_optimizer_step(train):
    db, run, _ = train
    steps = q(db, "SELECT step, kind, n_ops FROM steps WHERE run_id = ? ORDER BY step", run)
    kinds = [k for _, k, _ in steps]
    assert kinds[:6] == ["optimizer"] * 6
    assert all(n > 0 for _, k, n in steps if k == "optimizer")
    # the last loss.item() comes after the last Optimizer.step(): a tail step
    assert kinds[6:] == ["tail"]


def test_forward_backward_optimizer_ops(train):
    db, run, script = train
    ev = _C._rec_read_step(db, run, 2)
    ops = [e for e in ev if e["kind"] == "op"]
    names = {e["op"] for e in ops}
    assert {"linear", "relu", "log_softmax"} <= names             # forward
    assert {"mm", "matmul"} & names and "scatter_add" in names      # backward
    assert "adam_" in names                                         # Adam's fused update
    lines = {callsite_line(db, e["callsite"]) for e in ops}
    assert {L_FWD, L_BACKWARD, L_STEP} <= lines
    assert q(db, "SELECT file FROM callsites WHERE line = ?", L_FWD)[0][0] == script
    # op counts summary agrees with the events
    cnt = dict(q(db, "SELECT op, count FROM op_counts WHERE run_id = ? AND step = 2", run))
    assert cnt["linear"] == sum(e["op"] == "linear" for e in ops) == 2
    assert sum(cnt.values()) == len(ops) == q(db, "SELECT n_ops FROM steps WHERE run_id=? AND step=2", run)[0][0]


def test_roles(train):
    db, run, _ = train
    ops = [e for e in _C._rec_read_step(db, run, 3) if e["kind"] == "op"]
    lin = next(e for e in ops if e["op"] == "linear")
    roles = [i["role"] for i in lin["inputs"]]
    assert roles == [1, 2, 2]          # host input x, weight and bias parameters
    # Adam's state (exp_avg, exp_avg_sq) is STATE, updated in place
    upd = [e for e in ops if e["inplace"] and callsite_line(db, e["callsite"]) == L_STEP]
    assert any(o["role"] == 3 for e in upd for o in e["outputs"])
    assert any(o["role"] == 2 for e in upd for o in e["outputs"])  # the parameter update
    # in-place writes bump the version
    p = next(o for e in upd for o in e["outputs"] if o["role"] == 2)
    assert p["version"] > 0


def test_scalars_and_arg_types(train):
    db, run, _ = train
    ops = [e for e in _C._rec_read_step(db, run, 3) if e["kind"] == "op"]
    mul = next(e for e in ops if e["op"] == "mul" and callsite_line(db, e["callsite"]) == 12)
    s = mul["inputs"][1]
    assert s["role"] == 4 and s["scalar"] == 2.0 and s["pytype"] == 2   # float 2.0
    add = next(e for e in ops if e["op"] == "add" and callsite_line(db, e["callsite"]) == L_ADD)
    assert add["inputs"][1]["pytype"] == 1 and add["inputs"][0]["pytype"] == 0   # int 1, tensor
    rows = q(db, "SELECT a.pytype FROM arg_types a JOIN callsites c ON c.id = a.callsite_id "
             "WHERE a.run_id = ? AND a.op = 'mul' AND c.line = 12 AND a.arg = 1", run)
    assert rows == [("float",)]
    rows = q(db, "SELECT a.pytype FROM arg_types a JOIN callsites c ON c.id = a.callsite_id "
             "WHERE a.run_id = ? AND a.op = 'add' AND c.line = ? AND a.arg = 0", run, L_ADD)
    assert rows == [("tensor",)]


def test_sync_points(train):
    db, run, _ = train
    rows = q(db, "SELECT s.step, s.kind, s.value, c.line FROM syncs s JOIN callsites c ON c.id = s.callsite_id "
             "WHERE s.run_id = ? ORDER BY s.step", run)
    assert len(rows) == 6 and all(k == 1 and line == L_ITEM for _, k, _, line in rows)
    # the value is the observed loss; it lands in the step after that Optimizer.step()
    ev = _C._rec_read_step(db, run, 1)
    sync = [e for e in ev if e["kind"] == "sync"]
    assert len(sync) == 1 and sync[0]["value"] == rows[0][2] and rows[0][0] == 1
    assert rows[0][2] > 0


def test_branch_and_loop_decisions(train):
    db, run, _ = train
    rows = q(db, "SELECT d.step, d.kind, d.outcome, d.count, c.line FROM decisions d JOIN callsites c "
             "ON c.id = d.callsite_id WHERE d.run_id = ? ORDER BY d.step", run)
    branch = {s: o for s, k, o, n, line in rows if k == 1 and line == L_IF}
    assert branch == {0: 1, 1: 0, 2: 0, 3: 1, 4: 0, 5: 0}   # taken every 3rd step
    loops = {s: o for s, k, o, n, line in rows if k == 2 and line == L_INNER_FOR}
    assert loops == {0: 1, 1: 2, 2: 1, 3: 2, 4: 1, 5: 2}     # varying trip count
    outer = [o for s, k, o, n, line in rows if k == 2 and line == 8]
    assert outer == [6]
    # no decisions from janus's own files or the standard library
    files = {f for (f,) in q(db, "SELECT DISTINCT c.file FROM decisions d JOIN callsites c ON c.id = d.callsite_id")}
    assert len(files) == 1 and files.pop().endswith("train.py")


def test_signatures(train):
    db, run, _ = train
    sig = dict(q(db, "SELECT step, signature FROM steps WHERE run_id = ?", run))
    assert sig[2] == sig[4] and sig[1] == sig[5]     # same branch and trip count
    assert sig[1] != sig[2] and sig[3] != sig[1]


def test_markers_syncs_and_print(tmp_path):
    db, run, _ = record(tmp_path, """\
        import janus
        x = janus.tensor([1.0, 2.0, 3.0])
        for i in range(3):
            y = (x * i).sum()
            janus.step()
        with janus.step():
            z = x + 1
            if z[0] > 1.5:
                pass
            print(z)
            print(f"{z.sum():.2f}")
            z.tolist()
            z.numpy()
        w = x * 3
    """)
    steps = q(db, "SELECT step, kind, n_ops, n_syncs FROM steps WHERE run_id = ? ORDER BY step", run)
    # step 3 holds only the loop's trip count (decided when the loop exits)
    assert [k for _, k, _, _ in steps] == ["marker"] * 5 + ["tail"]
    assert [n for _, _, n, _ in steps[:4]] == [2, 2, 2, 0]
    assert q(db, "SELECT kind, outcome FROM decisions WHERE run_id = ? AND step = 3", run) == [(2, 3)]
    kinds = [k for (k,) in q(db, "SELECT kind FROM syncs WHERE run_id = ? AND step = 4 ORDER BY seq, rowid", run)]
    # comparison used as a Python bool, print, formatted print, tolist, numpy
    assert kinds == [6, 5, 5, 3, 4]
    val = q(db, "SELECT value FROM syncs WHERE run_id = ? AND step = 4 AND kind = 5 AND value IS NOT NULL", run)
    assert val == [(9.0,)]


def test_shape_variation(tmp_path):
    db, run, _ = record(tmp_path, """\
        import janus
        for n in [2, 3, 2, 3]:
            x = janus.ones(n, 4)
            y = (x * 2).sum()
            janus.step()
    """)
    rows = q(db, "SELECT step, size FROM shapes WHERE run_id = ? AND op = 'mul' AND arg = 0 AND dim = 0 "
             "ORDER BY step", run)
    assert rows == [(0, 2), (1, 3)]    # each size where it first appeared
    assert q(db, "SELECT DISTINCT size FROM shapes WHERE run_id = ? AND op = 'mul' AND dim = 1", run) == [(4,)]


def test_exception_and_exit_code_keep_steps(tmp_path):
    db, run, _ = record(tmp_path, """\
        import sys, janus
        x = janus.ones(3)
        for i in range(3):
            x = x + 1
            janus.step()
        x = x * 2
        sys.exit(3)
    """, expect_rc=3)
    assert [k for (k,) in q(db, "SELECT kind FROM steps WHERE run_id = ? ORDER BY step", run)] == \
        ["marker"] * 3 + ["tail"]
    db, run, _ = record(tmp_path / "..", """\
        import janus
        x = janus.ones(3)
        y = x + 1
        janus.step()
        raise ValueError("boom")
    """, name="raises.py", expect_rc=1)
    assert q(db, "SELECT count(*) FROM steps WHERE run_id = ?", run) == [(1,)]


def test_decisions_switch_off(tmp_path):
    db, run, _ = record(tmp_path, """\
        import janus
        x = janus.ones(3)
        for i in range(3):
            if i:
                x = x + 1
            janus.step()
    """, decisions=False)
    assert q(db, "SELECT count(*) FROM decisions") == [(0,)]
    assert q(db, "SELECT count(*) FROM steps WHERE run_id = ?", run) == [(3,)]


@pytest.mark.skipif("JANUS_RECORD_DB" in os.environ, reason="the suite itself runs under janus record")
def test_not_recording_costs_nothing():
    # this process was started without JANUS_RECORD_DB: no hook, no trace
    assert "JANUS_RECORD_DB" not in os.environ
    assert not _C._rec_active() and not _record.active
    assert not hasattr(janus, "_step_hook")
    assert sys.gettrace() is None
    x = janus.ones(2)
    assert (x + 1).sum().item() == 4.0
    assert janus.step() is not None          # harmless without recording
    with janus.step():
        pass


def test_plain_run_writes_nothing(tmp_path):
    script = tmp_path / "plain.py"
    script.write_text("import janus\nx = janus.ones(3)\nprint((x + 1).sum().item())\n"
                      "import janus._record as r\nassert not r.active\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("JANUS_RECORD_")}
    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, cwd=tmp_path,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert sorted(os.listdir(tmp_path)) == ["plain.py"]


def test_bad_run_id_is_reported(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("import janus\nprint(janus.ones(2).sum().item())\n")
    env = dict(os.environ, JANUS_RECORD_DB=str(tmp_path / "x.db"), JANUS_RECORD_RUN="abc",
               PYTHONPATH=os.path.join(ROOT, "python"))
    p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "2.0" in p.stdout
    assert "JANUS_RECORD_RUN" in p.stderr and "not a run id" in p.stderr


def test_analyze_code():
    src = "def f(x, n):\n    for i in range(n):\n        if i % 3 == 0:\n            x = x + 1\n" \
          "        else:\n            x = x - 1\n    while x > 0:\n        x -= 1\n    return x\n"
    ns = {}
    exec(compile(src, "u.py", "exec"), ns)
    branches, loops = _record._analyze_code(ns["f"].__code__)
    assert (3, 4) in branches and (7, 8) in branches
    assert (2, 2, 6, 1) in loops and any(h == 8 and not f for h, lo, hi, f in loops)


def test_is_user_file():
    assert not _record._is_user_file(janus.__file__)
    assert not _record._is_user_file(os.__file__)
    assert not _record._is_user_file("<frozen importlib._bootstrap>")
    assert _record._is_user_file("/home/someone/train.py")
    assert _record._is_user_file("<stdin>")


def test_call_sites_and_stacks_in_functions(tmp_path):
    db, run, script = record(tmp_path, """\
        import janus

        def helper(x, n):
            for i in range(n):
                x = x * 2
            if n > 2:
                x = x - 1
            return x

        def main():
            x = janus.ones(2)
            for n in [1, 3, 2]:
                y = helper(x, n)
                janus.step()

        main()
    """)
    ops = [e for e in _C._rec_read_step(db, run, 1) if e["kind"] == "op"]
    mul = [e for e in ops if e["op"] == "mul"]
    assert len(mul) == 3 and {callsite_line(db, e["callsite"]) for e in mul} == {5}
    # the stack: helper line 5, main line 13, the module line 16
    frames = q(db, "SELECT frames FROM stacks WHERE id = ?", mul[0]["stack"])[0][0]
    ids = json.loads(frames)
    assert [callsite_line(db, i) for i in ids] == [5, 13, 16]
    assert q(db, "SELECT func FROM callsites WHERE line = 5")[0][0] == "helper"
    rows = q(db, "SELECT d.step, d.kind, d.outcome, c.line FROM decisions d JOIN callsites c "
             "ON c.id = d.callsite_id WHERE d.run_id = ? AND c.func = 'helper' ORDER BY d.step, d.kind", run)
    assert rows == [(0, 1, 0, 6), (0, 2, 1, 4), (1, 1, 1, 6), (1, 2, 3, 4), (2, 1, 0, 6), (2, 2, 2, 4)]


def test_write_failure_stops_recording_not_the_script(tmp_path):
    db = str(tmp_path / "run.db")
    _C._rec_create_run(db, "[]")
    script = tmp_path / "s.py"
    script.write_text("import janus\nx = janus.ones(2)\nfor i in range(3):\n    y = x + i\n    janus.step()\n"
                      "print('done', y.sum().item())\n")
    env = dict(os.environ, JANUS_RECORD_DB=db, JANUS_RECORD_RUN="999", PYTHONPATH=os.path.join(ROOT, "python"))
    p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "done 6.0" in p.stdout
    # an unknown run is caught when recording starts; the script runs on unrecorded
    assert "janus record:" in p.stderr and "no run 999" in p.stderr and "without recording" in p.stderr
    assert q(db, "SELECT count(*) FROM steps") == [(0,)]


def test_missing_store_runs_without_recording(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("import janus\nprint(janus.ones(2).sum().item())\n")
    env = dict(os.environ, JANUS_RECORD_DB=str(tmp_path / "nope" / "x.db"), JANUS_RECORD_RUN="1",
               PYTHONPATH=os.path.join(ROOT, "python"))
    p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "2.0" in p.stdout
    assert "cannot record into" in p.stderr and "x.db" in p.stderr


def test_subprocesses_do_not_join_the_run(tmp_path):
    db, run, _ = record(tmp_path, """\
        import subprocess, sys, janus
        x = janus.ones(2) + 1
        janus.step()
        r = subprocess.run([sys.executable, "-c", "import janus; janus.ones(2) + 1; janus.step()"],
                           capture_output=True, text=True)
        assert r.returncode == 0 and not r.stderr, r.stderr
        y = x * 2
    """)
    assert q(db, "SELECT step, kind FROM steps WHERE run_id = ? ORDER BY step", run) == [(0, "marker"), (1, "tail")]


# User code reached in every way the 3.11 frame-evaluation hook must see:
# called from janus (Module.__call__, DataLoader over a user Dataset), from C
# (sorted key, map), generators, exceptions unwinding, a second thread.
REACH = """\
import threading
import janus
import janus.nn as nn
from janus.utils.data import DataLoader, Dataset

class DS(Dataset):
    def __len__(self):
        return 24
    def __getitem__(self, i):
        x = janus.ones(4) * i
        if i % 3 == 0:
            x = x + 1
        return x, janus.tensor(i % 2)

def gen(n):
    for k in range(n):
        if k % 2:
            yield k
        else:
            yield -k

class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(4, 2)
    def forward(self, x):
        y = self.l(x)
        for _ in range(2):
            if y.shape[0] > 4:
                y = y.relu()
        return y

def boom(y):
    if y.sum().item() > -1e9:
        raise ValueError("x")

m = M()
opt = janus.optim.SGD(m.parameters(), lr=0.1)
for x, t in DataLoader(DS(), batch_size=8):
    vals = sorted(gen(4), key=lambda v: -v)
    y = m(x * float(sum(v for v in vals if v > 0) + 1))
    try:
        boom(y)
    except ValueError:
        y = y * 2
    y = list(map(lambda z: z * 2, [y]))[0]
    out = []
    th = threading.Thread(target=lambda: out.append(janus.ones(3).sum()))
    th.start()
    th.join()
    opt.zero_grad()
    y.mean().backward()
    opt.step()
"""


def _recorded_content(db, run):
    """Every step's events and decision rows with call sites and stacks resolved to
    (line, function): what must not depend on how the call sites were found."""
    cs = {i: (line, fn) for i, line, fn in q(db, "SELECT id, line, func FROM callsites")}
    st = {i: tuple(cs[c] for c in json.loads(fr)) for i, fr in q(db, "SELECT id, frames FROM stacks")}
    out = []
    for (step,) in q(db, "SELECT step FROM steps WHERE run_id = ? ORDER BY step", run):
        for ev in _C._rec_read_step(db, run, step):
            ev = dict(ev, callsite=cs.get(ev["callsite"]), stack=st.get(ev.get("stack")))
            out.append(json.dumps(ev, sort_keys=True, default=str))
        rows = q(db, "SELECT callsite_id, kind, outcome, count FROM decisions WHERE run_id = ? AND step = ?",
                 run, step)
        out.append(sorted((cs.get(c), k, o, n) for c, k, o, n in rows))
    return out


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="the frame-evaluation hook is 3.11's")
def test_eval_hook_records_what_the_portable_path_records(tmp_path):
    a = record(tmp_path, REACH, db_name="hook.db")
    b = record(tmp_path, REACH, db_name="plain.db", env_extra={"JANUS_RECORD_EVAL_HOOK": "0"})
    ca, cb = _recorded_content(a[0], a[1]), _recorded_content(b[0], b[1])
    assert len(ca) > 20 and any('"kind": "decision"' in e for e in ca if isinstance(e, str))
    assert ca == cb
