"""The scripts in tests/dynamic/ do what they claim: each recording shows its
dynamic feature in the trace store (through `janus inspect --json`, the
summary tables and the decoded event chunks), independently of the
analyzer.  The analyzer's golden tests (test_analyzer_golden.py) rest on
these recordings, so a script that silently stopped exercising its feature
fails here, with a message naming the feature."""
import json
import math
import os
import sqlite3

import pytest

import dynamic_runs as dr
from dynamic_runs import SCRIPTS, record, script_line

pytestmark = pytest.mark.skipif(not os.path.exists(dr.JANUS),
                                reason=f"{dr.JANUS} not built (it needs db/ and cli/ in the build)")


def inspect(name):
    r = dr.janus("inspect", "--json", record(name))
    assert r.returncode == 0, r.stderr
    runs = json.loads(r.stdout)["runs"]
    assert len(runs) == 1
    return runs[0]


def q(name, sql, *args):
    con = sqlite3.connect(record(name))
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def at(name, needle):
    """'<abs path>:<line> <module>' as inspect names the call site of that script line."""
    return f"{dr.script_path(name)}:{script_line(name, needle)}"


def site_ids(name, needle):
    line = script_line(name, needle)
    return {i for (i,) in q(name, "SELECT id FROM callsites WHERE line = ? AND file LIKE ?", line,
                            f"%{name}.py")}


def events(name, step):
    from janus import _C
    return _C._rec_read_step(record(name), 1, step)


def train_steps(run):
    return run["step_kinds"].get("optimizer", 0)


@pytest.mark.parametrize("name", SCRIPTS)
def test_recording_finishes(name):
    run = inspect(name)
    assert run["status"] == "finished" and run["exit_status"] == 0
    assert 20 <= train_steps(run) <= 40, run["step_kinds"]


def test_last_batch_smaller():
    run = inspect("last_batch_smaller")
    fwd = at("last_batch_smaller", "loss_fn(model(x), y)")
    rows = [v for v in run["shape_variation"]
            if v["op"] == "linear" and v["callsite"].startswith(fwd + " ") and v["arg"] == 0 and v["dim"] == 0]
    assert rows and rows[0]["sizes"] == [4, 16], run["shape_variation"]
    inner = at("last_batch_smaller", "for x, y in loader")
    loops = [d for d in run["decisions"] if d["kind"] == "loop" and d["callsite"].startswith(inner + " ")]
    assert loops and loops[0]["outcomes"] == [{"outcome": 4, "count": 6}], run["decisions"]
    # the last batch of each epoch is a step of its own signature (shapes differ)
    sig = dict(q("last_batch_smaller", "SELECT step, signature FROM steps WHERE run_id = 1"))
    assert sig[3] != sig[2] and sig[3] == sig[7] and sig[1] == sig[2] == sig[4]


def test_seq_len_varies():
    run = inspect("seq_len_varies")
    tloop = at("seq_len_varies", "for t in range(T)")
    loops = [d for d in run["decisions"] if d["kind"] == "loop" and d["callsite"].startswith(tloop + " ")]
    assert loops, run["decisions"]
    assert sorted(o["outcome"] for o in loops[0]["outcomes"]) == [3, 4, 5, 6, 7, 8]
    emb = at("seq_len_varies", "x = embed(")
    rows = [v for v in run["shape_variation"] if v["op"] == "embedding" and v["callsite"].startswith(emb + " ")]
    assert rows and rows[0]["sizes"] == [3, 4, 5, 6, 7, 8], run["shape_variation"]
    # one step signature per sequence length
    sigs = {s for (s,) in q("seq_len_varies", "SELECT signature FROM steps WHERE kind = 'optimizer' AND step > 0")}
    assert len(sigs) == 6
    # the cell's ops repeat T times per step
    cell = site_ids("seq_len_varies", "h = cell(")
    for step, T in ((1, 3 + 5 % 6), (2, 3 + 10 % 6)):
        n = sum(1 for e in events("seq_len_varies", step)
                if e["kind"] == "op" and e["op"] == "tanh" and e["callsite"] in cell)
        assert n == T, (step, n, T)


def test_branch_every_n():
    run = inspect("branch_every_n")
    line = at("branch_every_n", "if step % 3 == 0")
    br = [d for d in run["decisions"] if d["kind"] == "branch" and d["callsite"].startswith(line + " ")]
    assert br, run["decisions"]
    assert {o["outcome"]: o["count"] for o in br[0]["outcomes"]} == {0: 16, 1: 8}
    sig = dict(q("branch_every_n", "SELECT step, signature FROM steps WHERE run_id = 1"))
    assert sig[3] == sig[6] and sig[1] == sig[2] == sig[4] and sig[3] != sig[4]
    # the first difference between the two signatures is the decision on that line
    diffs = [d for d in run["signature_diffs"] if d["callsite_a"].startswith(line + " ")]
    assert diffs, run["signature_diffs"]


def _float_values(name, step, sites):
    vals = []
    for e in events(name, step):
        if e["kind"] != "op" or e["callsite"] not in sites:
            continue
        vals += [a for a in e["attrs"] if isinstance(a, float)]
        vals += [t["scalar"] for t in e["inputs"] if t["role"] == 4 and t["pytype"] == 2]
    return vals


def test_lr_schedule():
    run = inspect("lr_schedule")
    sig = {s for (s,) in q("lr_schedule", "SELECT signature FROM steps WHERE kind = 'optimizer' AND step > 0")}
    assert len(sig) == 1, "the learning rate must not change the step structure"
    upd = site_ids("lr_schedule", "opt.step()")
    early, late = _float_values("lr_schedule", 1, upd), _float_values("lr_schedule", 22, upd)

    def has(vals, x):
        return any(math.isclose(abs(v), x, rel_tol=1e-6) for v in vals)
    assert has(early, 0.1) and not has(early, 0.1 * 0.5 ** 4), early
    assert has(late, 0.1 * 0.5 ** 4) and not has(late, 0.1), late


def test_train_eval():
    run = inspect("train_eval")
    assert run["step_kinds"].get("optimizer") == 20 and run["step_kinds"].get("marker") == 10
    rows = q("train_eval", "SELECT s.kind, s.step, group_concat(o.op) FROM steps s JOIN op_counts o "
             "ON o.run_id = s.run_id AND o.step = s.step WHERE s.kind != 'tail' GROUP BY s.step")
    for kind, step, ops in rows:
        ops = set(ops.split(","))
        if kind == "optimizer":
            assert "dropout_mask" in ops and "var" in ops, (step, ops)
        else:
            assert "dropout_mask" not in ops and "var" not in ops and "argmax" in ops, (step, ops)
    sigs = dict(q("train_eval", "SELECT kind, count(DISTINCT signature) FROM steps WHERE step > 0 "
                  "AND kind != 'tail' GROUP BY kind"))
    assert sigs == {"optimizer": 1, "marker": 1}


def test_loss_item_branch():
    run = inspect("loss_item_branch")
    line = at("loss_item_branch", "if loss.item() > THRESHOLD")
    syncs = [s for s in run["sync_points"] if s["kind"] == "item" and s["callsite"].startswith(line + " ")]
    assert syncs and syncs[0]["count"] == 24, run["sync_points"]
    br = [d for d in run["decisions"] if d["kind"] == "branch" and d["callsite"].startswith(line + " ")]
    assert br and {o["outcome"] for o in br[0]["outcomes"]} == {0, 1}, run["decisions"]
    # the sync sits in the middle of the step: ops before it and after it
    ev = events("loss_item_branch", 5)
    k = [i for i, e in enumerate(ev) if e["kind"] == "sync"]
    assert len(k) == 1 and any(e["kind"] == "op" for e in ev[:k[0]]) and any(e["kind"] == "op" for e in ev[k[0]:])
    # recorded loss values stay clear of the threshold (a golden must not hinge on rounding)
    vals = [v for (v,) in q("loss_item_branch", "SELECT value FROM syncs")]
    assert min(abs(v - 4.0) for v in vals) > 0.01


def test_float_or_tensor():
    run = inspect("float_or_tensor")
    sites = site_ids("float_or_tensor", "return x * s")
    types = {t for (t,) in q("float_or_tensor", "SELECT DISTINCT pytype FROM arg_types WHERE op = 'mul' AND arg = 1 "
                             f"AND callsite_id IN ({','.join(map(str, sites))})")}
    assert types == {"float", "tensor"}, types
    for step, want in ((2, 2), (3, 0)):
        muls = [e for e in events("float_or_tensor", step) if e["kind"] == "op" and e["op"] == "mul"
                and e["callsite"] in sites]
        assert muls and muls[0]["inputs"][1]["pytype"] == want, muls


def test_python_state():
    run = inspect("python_state")
    line = at("python_state", "ema = 0.9 * ema")
    syncs = [s for s in run["sync_points"] if s["kind"] == "item" and s["callsite"].startswith(line + " ")]
    assert syncs and syncs[0]["count"] == 24
    # the EMA reaches the ops as a Python float that changes every step
    div = site_ids("python_state", "/ ema")
    emas = []
    for step in (1, 2, 3):
        ds = [e for e in events("python_state", step) if e["kind"] == "op" and e["op"] == "div"
              and e["callsite"] in div]
        assert ds and ds[0]["inputs"][1]["role"] == 4 and ds[0]["inputs"][1]["pytype"] == 2
        emas.append(ds[0]["inputs"][1]["scalar"])
    assert len(set(emas)) == 3, emas
    # `running` is one tensor updated in place every step, outside the optimizer
    upd = site_ids("python_state", "running.mul_(")
    ids = set()
    for step in (1, 2):
        ops = [e for e in events("python_state", step) if e["kind"] == "op" and e["callsite"] in upd]
        assert [e["inplace"] for e in ops if e["op"] in ("mul", "add")] == [1, 1], ops
        ids |= {e["inputs"][0]["id"] for e in ops if e["op"] in ("mul", "add")}
    assert len(ids) == 1


# ---------------------------------- the IR reader the golden tests rely on

SAMPLE_IR = '''\
# a hand-written module in the text form of ir/jn_ir.h
module optable=52af0797b7e7e40f graphs=1
site 3 "/home/u/proj/tests/dynamic/seq_len_varies.py":29 "<module>"
graph g0 group=0 variant=1 parent=0 diverge=3 support=12 steps=1..23 entry="after item() at /home/u/proj/x.py:23 # text" exit="step end" decided=@3 {
  sym T dim 3..8 @3   # sequence length
  sym i0 ivar 0..7
  in %0 state f32[16, 8] bind=1234 @3
  in %1 scalar f64[] = 0.10000000000000001 @3
  %2 = mul(%0, %1) : f32[16, 8] @3
  loop L0 trip=T ivar=i0 {
    carry %3 = %0 -> %4 => %5
    %4 = tanh(%3) : f32[16, 8] @3
  }
  out %5 state=%0
  guard sym T in 3..8 seen @3 "sequence length"
  guard bind %0 == 1234 need
}
'''


def test_ir_reader_and_normalize():
    m = dr.Module(SAMPLE_IR)
    g, = m.graphs
    assert m.header == {"optable": "52af0797b7e7e40f", "graphs": "1"}
    assert m.site_line(3) == ("seq_len_varies.py", 29) and g.decided() == 3
    assert g.attrs["entry"] == "after item() at /home/u/proj/x.py:23 # text" and g.int("variant") == 1
    assert g.syms == {"T": ("dim", 3, 8), "i0": ("ivar", 0, 7)}
    assert [i[:4] for i in g.inputs] == [("%0", "state", "f32[16, 8]", 3), ("%1", "scalar", "f64[]", 3)]
    assert g.ops() == ["mul", "tanh"] and len(g.guards) == 2 and g.kind("out") == ["out %5 state=%0"]
    n = dr.normalize(SAMPLE_IR)
    assert "optable=0000000000000000" in n and '"seq_len_varies.py":29' in n and "at x.py:23 # text" in n
    assert "bind=1 " in n and "guard bind %0 == 1 need\n" in n and "= 0.1 @3" in n
    assert "#" not in n.replace("# text", "") and dr.normalize(n) == n
    assert len(dr.Module(n).graphs) == 1
    with pytest.raises(AssertionError):
        dr.Module(SAMPLE_IR.rsplit("}", 1)[0])   # unterminated graph
