"""A short recording covers the whole run (guards classed NEED / SEEN,
replay/match.c): every example and dynamic-feature script is recorded for
20 steps and replayed for 200 -- with sequence lengths and batch sizes up
to twice the recorded maxima where the script has them -- in strict mode,
so any fallback is an error: every segment runs as a graph, past the
recorded ranges of its symbols (extrapolated: the SEEN guards), and the
printed lines and final weights equal an eager run of the same command
bitwise.  Then what must still miss: a slice start that would run past
its tensor's end (Python clamps the slice: its end and length no longer
fit the graph), another dtype, and another value of a constant a codegen
pass specialised on (the offline matcher on a recorded CNN stream; another
device is tests/c/test_match.c's)."""
import json
import os
import re
import subprocess
import sys

import pytest

from dynamic_runs import BUILD, ROOT, have_optimize, janus
from test_replay import EXAMPLES, PROBE, record_and_optimize, run, same_weights, strip_rates, summary

pytestmark = pytest.mark.skipif(not have_optimize(), reason="janus optimize is not built")

DYN = os.path.join(ROOT, "tests", "dynamic")
# no validation and no print but step 1's: the step after a print and the
# first validation batch are segments seen once in 20 steps, with their
# loop over time unrolled at the length they had (a limit of this design)
LSTM = ["--batch", "4", "--hidden", "16", "--min-len", "4", "--max-len", "8", "--print-every", "1000",
        "--val-batches", "0"]
# name -> (script, recorded args, replayed args): 20 steps recorded, 200 replayed
CASES = {
    "branch_every_n": (DYN, ["--steps", "20"], ["--steps", "200"]),
    "float_or_tensor": (DYN, ["--steps", "20"], ["--steps", "200"]),
    "loss_item_branch": (DYN, ["--steps", "20"], ["--steps", "200"]),
    "lr_schedule": (DYN, ["--steps", "20"], ["--steps", "200"]),
    "python_state": (DYN, ["--steps", "20"], ["--steps", "200"]),
    "train_eval": (DYN, ["--phases", "5"], ["--phases", "50"]),
    # batches of 32 where 4..16 were recorded
    "last_batch_smaller": (DYN, ["--steps", "20"], ["--steps", "200", "--batch", "32"]),
    # sequence lengths up to 16 where 3..8 were recorded
    "seq_len_varies": (DYN, ["--steps", "20"], ["--steps", "200", "--max-len", "16"]),
    # the offset advances ten times as far, lengths up to 12 where 3..6 were recorded
    "advancing_offset": (DYN, ["--steps", "20"], ["--steps", "200", "--max-len", "12"]),
    # an epoch of 1000 images (the last batch smaller), batches of 128 where 40..64 were recorded;
    # epochs of 8 and 9 steps: no epoch starts right after a print (the recording never saw one)
    "fashion_mlp": (EXAMPLES, ["--steps", "20", "--train-size", "1000", "--batch", "64", "--hidden", "32"],
                    ["--steps", "200", "--train-size", "1000", "--batch", "128", "--hidden", "32", "--epochs", "30"]),
    "fashion_cnn": (EXAMPLES, ["--steps", "20", "--train-size", "560", "--batch", "32"],
                    ["--steps", "200", "--train-size", "560", "--batch", "64", "--epochs", "30"]),
    # from step 21 on sequences up to 16 where 4..8 were recorded (a length curriculum)
    "char_lstm": (EXAMPLES, ["--steps", "20"] + LSTM,
                  ["--steps", "200"] + LSTM + ["--long-from", "21", "--long-max-len", "16"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_short_recording_covers_the_run(name, tmp_path):
    where, rec, args = CASES[name]
    script = os.path.join(where, name + ".py")
    db = record_and_optimize(script, rec, str(tmp_path))
    re_, we = run(script, args, str(tmp_path), "eager")
    assert re_.returncode == 0, re_.stderr[-3000:]
    rr, wr = run(script, args, str(tmp_path), "replay", JANUS_REPLAY_DB=db, JANUS_REPLAY_STRICT="1")
    assert rr.returncode == 0, rr.stderr[-3000:]
    s = summary(rr.stderr)
    assert s["fell_back"] == 0 and s["segments"] >= 200, s
    assert strip_rates(rr.stdout) == strip_rates(re_.stdout)
    same_weights(we, wr)


# ------------------------------------------------------------- must miss
def inline(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(f"import sys\nsys.path.insert(0, {os.path.join(ROOT, 'python')!r})\n" + text)
    return str(path)


SLICE = """
import janus
data = janus.arange(100).float() / 10
w = janus.nn.Parameter(janus.ones(1))
opt = janus.optim.SGD([w], lr=0.01)
steps = int(sys.argv[1])
for step in range(steps):
    pos = step * 7
    chunk = data[pos:pos + 8]          # past 92 Python clamps the slice: fewer than 8 values
    loss = (chunk * w).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, loss.item())
"""


def test_slice_past_the_end_misses(tmp_path):
    # recorded at offsets 0..35; replayed to 98: the offsets past 35 are
    # extrapolated hits while the slice fits, and from offset 93 on the
    # slice is clamped -- another length, a miss, never a read past the end
    script = inline(tmp_path, "slice_past.py", SLICE)
    db = record_and_optimize(script, ["6"], str(tmp_path))
    re_, we = run(script, ["15"], str(tmp_path), "eager")
    rr, wr = run(script, ["15"], str(tmp_path), "replay", JANUS_REPLAY_DB=db)
    assert re_.returncode == 0 and rr.returncode == 0, rr.stderr[-3000:]
    assert rr.stdout == re_.stdout
    same_weights(we, wr)
    s = summary(rr.stderr)
    # steps 14 (offset 98) and 13 (offset 91: 91..99 fits) -- only 14 is clamped
    assert s["fell_back"] >= 1 and s["segments"] - s["fell_back"] >= 13, s
    assert re.search(r"slice_past\.py:\d+\).*(end|output 0)", s["top_miss"]), s
    # strict mode: the clamped step raises, the ones before it ran as graphs
    rs, _ = run(script, ["15"], str(tmp_path), "strict", JANUS_REPLAY_DB=db, JANUS_REPLAY_STRICT="1")
    assert rs.returncode != 0 and "fell back to eager" in rs.stderr
    assert rs.stdout.splitlines() == re_.stdout.splitlines()[:len(rs.stdout.splitlines())]
    assert len(rs.stdout.splitlines()) == 14, rs.stdout


def test_counters_show_extrapolated_hits(tmp_path):
    # recorded at offsets 0..35, replayed to 84 (84 + 8 <= 100: every slice
    # fits): the steps at offsets past 35 are hits past the recorded range
    # of the slice start, counted apart from the hits inside it -- in the
    # summary lines, per graph in `janus inspect` and per guard there with
    # its recorded range and the values seen past it
    script = inline(tmp_path, "slice_within.py", SLICE)
    db = record_and_optimize(script, ["6"], str(tmp_path))
    r = janus("replay", "--db", db, "--", sys.executable, PROBE, script, "13", timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    # offsets 42..84 past the range; the probe's own read at the end may fall back
    m = re.search(r"janus replay: run (\d+): [\d.]+% hit rate \((\d+) of (\d+) segments ran as graphs, ([01]) fell "
                  r"back to eager\).*; 7 of the hits past the recorded ranges", r.stderr)
    assert m and int(m.group(2)) >= 13, r.stderr[-3000:]
    out = janus("inspect", "--json", "--run", m.group(1), db)
    assert out.returncode == 0, out.stderr
    c = json.loads(out.stdout)["runs"][0]["replay"]
    assert c["extrapolated"] == 7 and sum(g["extrapolated"] for g in c["graphs"]) == 7
    assert all(g["in_range"] + g["extrapolated"] == g["hits"] for g in c["graphs"])
    assert sum(g["in_range"] for g in c["graphs"]) >= 5, c["graphs"]
    starts = [x for x in c["extrapolations"] if x["seen"] == [42, 84]]
    assert starts and starts[0]["recorded"][1] <= 35 and starts[0]["count"] == 7, c["extrapolations"]
    assert re.search(r"slice_within\.py:\d+", starts[0]["site"] + starts[0]["reason"]), starts[0]
    text = janus("inspect", "--run", m.group(1), db).stdout
    assert re.search(r"graph +hits +in range +extrapolated +misses +seconds", text), text
    assert re.search(r"7x  g\d+ guard \d+ at .*: recorded \d+\.\.\d+, seen 42\.\.84: symbol", text), text
    # `janus report` shows the same: per graph and per guard (one reader, jn_cli_json_extraps)
    rep = janus("report", "--json", "--run", m.group(1), db)
    assert rep.returncode == 0, rep.stderr
    run = next(x for x in json.loads(rep.stdout)["runs"] if x["id"] == int(m.group(1)))
    assert sorted((g["graph"], g["extrapolated"]) for g in run["graphs"]) == \
        sorted((g["graph"], g["extrapolated"]) for g in c["graphs"])
    assert run["extrapolations"] == c["extrapolations"]
    page = tmp_path / "report.html"
    assert janus("report", "--run", m.group(1), "-o", str(page), db).returncode == 0
    body = page.read_text()
    assert "of which extrapolated" in body and "Hits past the recorded ranges (" in body
    assert "42 .. 84" in body, body[-3000:]


DATASET = """
import janus
n, steps, grad = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "grad"
janus.manual_seed(0)
data = janus.randn(n, 4)                     # a dataset: only its rows are read, by index
labels = janus.randint(0, 3, (n,))
if grad:                                     # a table with a gradient: the gradient has n rows
    data.requires_grad_(True)
lin = janus.nn.Linear(4, 3)
opt = janus.optim.SGD(lin.parameters(), lr=0.1)
for step in range(steps):
    idx = janus.tensor([(step * 37 + k * 11) % n for k in range(8)])
    loss = janus.nn.functional.cross_entropy(lin(data[idx]), labels[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, f"{loss.item():.6f}")
if grad:
    print("rows with a gradient", int((data.grad != 0).any(1).sum()), f"{data.grad.abs().sum().item():.6f}")
"""


def dataset_replay(tmp_path, name, grad, steps):
    """DATASET recorded on 50 rows for 10 steps, then run on 80 rows for
    `steps` eagerly and replayed (every graph): the same printed lines and
    weights; the replay's counters and the store."""
    script = inline(tmp_path, name + ".py", DATASET)
    db = record_and_optimize(script, ["50", "10", grad], str(tmp_path))
    re_, we = run(script, ["80", str(steps), grad], str(tmp_path), "eager")
    rr, wr = run(script, ["80", str(steps), grad], str(tmp_path), "replay", JANUS_REPLAY_DB=db, JANUS_REPLAY_ADAPT="0")
    assert re_.returncode == 0 and rr.returncode == 0, rr.stderr[-3000:]
    assert rr.stdout == re_.stdout
    same_weights(we, wr)
    return summary(rr.stderr), script, db


def test_more_data_than_recorded_replays(tmp_path):
    # a dataset's row count is an EXTENT (analyzer/generalize.c gen_extent):
    # only read through an index, it sizes nothing, so it is a symbol from
    # one observation -- recorded on 50 rows, a run on 80 replays (rows
    # 50..79 read too), bitwise equal to eager; only the segment that makes
    # the data (randn of another size) misses
    s, _, _ = dataset_replay(tmp_path, "dataset", "-", 30)
    assert s["segments"] - s["fell_back"] >= 29 and s["extrapolated"] >= 29, s
    assert "randn" in s["top_miss"], s


def test_a_dataset_whose_size_reaches_a_shape_misses(tmp_path):
    # the same table with requires_grad: index's backward makes a gradient
    # of n rows, so n sized something and stays a constant -- the run on 80
    # rows misses where the recording had 50, and stays equal
    s, script, db = dataset_replay(tmp_path, "table", "grad", 12)
    assert s["fell_back"] >= 12 and "was 80; recorded 50" in s["top_miss"], s
    # at the recorded size it replays
    r50, _ = run(script, ["50", "12", "grad"], str(tmp_path), "again", JANUS_REPLAY_DB=db, JANUS_REPLAY_ADAPT="0")
    assert r50.returncode == 0 and summary(r50.stderr)["segments"] - summary(r50.stderr)["fell_back"] >= 11


DTYPE = """
import janus
dt = janus.float64 if sys.argv[1] == "f64" else janus.float32
x = janus.arange(12).to(dt).view(3, 4) / 7
w = janus.nn.Parameter(janus.ones(4, dtype=dt))
opt = janus.optim.SGD([w], lr=0.1)
for step in range(6):
    loss = (x * w).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, loss.item())
"""


def test_another_dtype_misses(tmp_path):
    script = inline(tmp_path, "dtype.py", DTYPE)
    db = record_and_optimize(script, ["f32"], str(tmp_path))
    re_, we = run(script, ["f64"], str(tmp_path), "eager")
    rr, wr = run(script, ["f64"], str(tmp_path), "replay", JANUS_REPLAY_DB=db)
    assert re_.returncode == 0 and rr.returncode == 0, rr.stderr[-3000:]
    assert rr.stdout == re_.stdout
    same_weights(we, wr)
    s = summary(rr.stderr)
    assert s["fell_back"] >= 6 and s["segments"] == s["fell_back"], s
    assert re.search(r"dtype of .* was f64; recorded f32", s["top_miss"]), s


def test_a_specialised_constant_misses(tmp_path):
    # fashion_cnn's relu -> max_pool2d backward: the poolmask pass relies on
    # where()'s 0 being +0.0 and makes it a constant with a NEED guard; the
    # offline matcher (tests/c/test_match.c) feeds the recorded stream with
    # each Python number changed: that one misses naming the pass, the
    # others are fed their new values
    db = str(tmp_path / "cnn.db")
    r = janus("record", "--db", db, "--", sys.executable, os.path.join(EXAMPLES, "fashion_cnn.py"), "--steps", "3",
              "--train-size", "64", "--batch", "16", timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    r = subprocess.run([os.path.join(BUILD, "test_match"), db], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, JANUS_BUILD_DIR=BUILD, JN_MATCH_VERBOSE="1"))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    special, fed = re.search(r"mut_special=(\d+)", r.stdout), re.search(r"mut_scalar=(\d+)", r.stdout)
    assert special and fed and int(special.group(1)) >= 1 and int(fed.group(1)) >= 1, r.stdout
    assert re.search(r"special miss: .*was .*; recorded 0 \(specialised by poolmask", r.stderr), r.stderr[-3000:]


def test_a_segment_no_graph_starts_with_counts_as_a_fallback(tmp_path):
    # every step of the "extra" run starts with an op no recorded segment
    # starts with: the matcher misses with no graph, so the miss is in no
    # graph's row; the totals of the exit line, `janus inspect` and `janus
    # report` still count it (jn_cli_replay_sum: misses from the miss rows)
    script = inline(tmp_path, "extra.py", DTYPE.replace("for step in range(6):\n",
                                                        "for step in range(6):\n    if extra:\n        x.neg()\n")
                    .replace("import janus\n", "import janus\nextra = len(sys.argv) > 2\n"))
    db = record_and_optimize(script, ["f32"], str(tmp_path))
    r = janus("replay", "--db", db, "--", sys.executable, PROBE, script, "f32", "extra", timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    m = re.search(r"janus replay: run (\d+): [\d.]+% hit rate \(([\d,]+) of ([\d,]+) segments ran as graphs, ([\d,]+) "
                  r"fell back", r.stderr)
    assert m and int(m.group(4)) == int(m.group(3)) == 6, r.stderr[-3000:]  # each step's segment
    c = json.loads(janus("inspect", "--json", "--run", m.group(1), db).stdout)["runs"][0]["replay"]
    assert c["misses"] == 6 == sum(x["count"] for x in c["miss_reasons"])
    assert any(x["graph"] == "" and "starts with neg" in x["reason"] for x in c["miss_reasons"]), c["miss_reasons"]
    assert sum(g["misses"] for g in c["graphs"]) < c["misses"]
    rep = json.loads(janus("report", "--json", "--run", m.group(1), db).stdout)
    assert next(x for x in rep["runs"] if x["id"] == int(m.group(1)))["replay"]["misses"] == 6
