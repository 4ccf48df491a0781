"""`janus replay` in the process (replay/replay.c, janus/_replay.py):
each script is recorded with `janus record`, optimized with `janus
optimize`, then run again unchanged with JANUS_REPLAY_DB set, and compared
with a plain eager run of the same command: the printed lines (losses,
accuracies) and the final weights of the optimizer (tests/python/
replay_probe.py dumps them) must be identical -- bitwise, since every
generated kernel in these graphs is exact or its reductions land in the
same order here; a 1e-5 relative tolerance is allowed where a compiled
reduction sums in another order -- and most segments must have run as
compiled graphs (the summary line says how many), so a test cannot pass by
falling back.  Changed scripts (other batch size, learning rate, width)
give eager's numbers with explained misses; an empty store, a store of
another script and JANUS_REPLAY=0 run eagerly and say why; strict mode
raises on a miss."""
import json
import os
import re
import subprocess
import sys

import pytest

from dynamic_runs import BUILD, ROOT, SCRIPTS, env, have_optimize, janus
from janus import _C  # noqa: E402

PROBE = os.path.join(ROOT, "tests", "python", "replay_probe.py")
EXAMPLES = os.path.join(ROOT, "examples")
SUMMARY = re.compile(r"janus replay: (\d+)% of ([\d,]+) segments ran as compiled graphs \((\d+) graphs?"
                     r"(?:; ([\d,]+) past the recorded ranges)?\), "
                     r"([\d,]+) fell back(?: \(([\d,]+) by choice[^)]*\))?(?:; top miss: (.*))?")

pytestmark = pytest.mark.skipif(not have_optimize(), reason="janus optimize is not built")


def run(script, args, tmp, tag, **extra):
    out = os.path.join(tmp, f"{tag}.json")
    e = env(JANUS_PROBE_OUT=out, **extra)
    r = subprocess.run([sys.executable, PROBE, script, *args], capture_output=True, text=True, env=e,
                       timeout=600, cwd=ROOT)
    weights = None
    if r.returncode == 0 and os.path.exists(out):
        with open(out) as f:
            weights = json.load(f)
    return r, weights


def record_and_optimize(script, args, tmp):
    db = os.path.join(tmp, "run.db")
    r = janus("record", "--db", db, "--", sys.executable, PROBE, script, *args, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    r = janus("optimize", db, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return db


def summary(stderr):
    m = SUMMARY.search(stderr)
    assert m, stderr[-3000:]
    n = lambda s: int(s.replace(",", ""))  # noqa: E731
    return {"pct": int(m.group(1)), "segments": n(m.group(2)), "graphs": int(m.group(3)),
            "extrapolated": n(m.group(4) or "0"), "fell_back": n(m.group(5)), "chosen": n(m.group(6) or "0"),
            "top_miss": m.group(7)}


def same_weights(a, b, rtol=0.0):
    assert a is not None and b is not None
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert len(x) == len(y)
        if rtol == 0.0:
            assert x == y
        else:
            for u, v in zip(x, y):
                assert abs(u - v) <= rtol * max(abs(u), abs(v), 1e-30), (u, v)


def check_replay(script, rec_args, args, tmp, min_hits, rtol=0.0):
    db = record_and_optimize(script, rec_args, tmp)
    re_, we = run(script, args, tmp, "eager")
    assert re_.returncode == 0, re_.stderr[-3000:]
    rr, wr = run(script, args, tmp, "replay", JANUS_REPLAY_DB=db)
    assert rr.returncode == 0, rr.stderr[-3000:]
    s = summary(rr.stderr)
    hits = s["segments"] - s["fell_back"]
    assert hits >= min_hits, s
    assert rr.stdout == re_.stdout  # printed losses, accuracies (steps/s lines removed by the caller)
    same_weights(we, wr, rtol)
    return db, s


def replay_whole(source, rec_args, args, tmp_path, name="script.py"):
    """Write source as a script, record and optimize it with rec_args, then run it with
    args eagerly and replayed with every graph (JANUS_REPLAY_ADAPT=0): printed lines and
    final weights must be eager's bitwise and no segment may fall back.  Returns the
    store, the replay's CompletedProcess and its summary."""
    tmp = str(tmp_path)
    script = os.path.join(tmp, name)
    with open(script, "w") as f:
        f.write(source)
    db = record_and_optimize(script, rec_args, tmp)
    re_, we = run(script, args, tmp, "eager")
    rr, wr = run(script, args, tmp, "replay", JANUS_REPLAY_DB=db, JANUS_REPLAY_ADAPT="0")
    assert re_.returncode == 0 and rr.returncode == 0, (re_.stderr[-2000:], rr.stderr[-3000:])
    assert rr.stdout == re_.stdout and wr == we
    s = summary(rr.stderr)
    assert s["fell_back"] == 0, s
    return db, rr, s


def strip_rates(text):
    return re.sub(r"\([\d.]+ steps/s over (\d+) steps(, [\d.]+ ms CPU/step)?(, [\d.]+ ms in kernels/step)?", r"(steps/s over \1 steps", text)


# ------------------------------------------------------------ dynamic scripts
@pytest.mark.parametrize("name", SCRIPTS)
def test_dynamic_script_replays_exactly(name, tmp_path):
    script = os.path.join(ROOT, "tests", "dynamic", name + ".py")
    # every training step of these scripts runs as a graph; what falls back
    # is the probe's own reads at the end (and nothing else)
    _, s = check_replay(script, [], [], str(tmp_path), min_hits=20)
    assert s["pct"] >= 75, s


# ------------------------------------------------------------------ examples
def example_check(name, rec_args, args, tmp, min_pct):
    script = os.path.join(EXAMPLES, name)
    db = record_and_optimize(script, rec_args, tmp)
    re_, we = run(script, args, tmp, "eager")
    rr, wr = run(script, args, tmp, "replay", JANUS_REPLAY_DB=db)
    assert re_.returncode == 0 and rr.returncode == 0, re_.stderr[-2000:] + rr.stderr[-2000:]
    assert strip_rates(rr.stdout) == strip_rates(re_.stdout)
    same_weights(we, wr)
    s = summary(rr.stderr)
    assert s["pct"] >= min_pct, s
    return db, s


def test_fashion_mlp_replays_exactly(tmp_path):
    # recorded 30 steps, replayed 120: the steady-state step graph hits.  The
    # loss printed at step 100 is a value the recording never read after a
    # steady-state step, but still held when the step ended, so the graph
    # keeps it (JN_EV_LIVE) and even speculation has it
    db, _ = example_check("fashion_mlp.py", ["--steps", "30", "--epochs", "1", "--hidden", "64"],
                          ["--steps", "120", "--epochs", "1", "--hidden", "64"], str(tmp_path), 90)
    script = os.path.join(EXAMPLES, "fashion_mlp.py")
    args = ["--steps", "120", "--epochs", "1", "--hidden", "64"]
    re_, we = run(script, args, str(tmp_path), "eager2")
    # the same values computed eagerly before each graph instead of deferred
    rr, wr = run(script, args, str(tmp_path), "nodefer", JANUS_REPLAY_DB=db, JANUS_REPLAY_DEFER="0")
    assert rr.returncode == 0, rr.stderr[-3000:]
    assert strip_rates(rr.stdout) == strip_rates(re_.stdout)
    same_weights(we, wr)
    assert summary(rr.stderr)["pct"] >= 90
    # speculation computes nothing the graph does not keep: the step-100 loss is kept
    rr, ws = run(script, args, str(tmp_path), "speculate", JANUS_REPLAY_DB=db, JANUS_REPLAY_SPECULATE="1")
    assert rr.returncode == 0, rr.stderr[-3000:]
    assert strip_rates(rr.stdout) == strip_rates(re_.stdout)
    same_weights(we, ws)


def test_fashion_cnn_replays_exactly(tmp_path):
    example_check("fashion_cnn.py", ["--steps", "12", "--epochs", "1", "--batch", "32"],
                  ["--steps", "40", "--epochs", "1", "--batch", "32"], str(tmp_path), 80)


def test_char_lstm_replays_exactly(tmp_path):
    example_check("char_lstm.py", ["--steps", "12", "--hidden", "32", "--batch", "4"],
                  ["--steps", "30", "--hidden", "32", "--batch", "4"], str(tmp_path), 70)


# ----------------------------------------------------------- changed scripts
@pytest.fixture(scope="module")
def mlp_db(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("mlp"))
    return record_and_optimize(os.path.join(EXAMPLES, "fashion_mlp.py"),
                               ["--steps", "20", "--epochs", "1", "--hidden", "64"], tmp)


@pytest.mark.parametrize("change,why", [
    (["--batch", "100"], r"symbol|dim|shape|recorded"),       # another batch size (a constant dim here)
    (["--hidden", "32"], r"recorded|dim|shape|bound"),        # another model width
])
def test_changed_scripts_stay_exact(mlp_db, tmp_path, change, why):
    script = os.path.join(EXAMPLES, "fashion_mlp.py")
    args = ["--steps", "25", "--epochs", "1", "--hidden", "64"] + change
    re_, we = run(script, args, str(tmp_path), "eager")
    rr, wr = run(script, args, str(tmp_path), "replay", JANUS_REPLAY_DB=mlp_db)
    assert re_.returncode == 0 and rr.returncode == 0, rr.stderr[-3000:]
    assert strip_rates(rr.stdout) == strip_rates(re_.stdout)
    same_weights(we, wr)
    s = summary(rr.stderr)
    assert s["fell_back"] >= 20, s                   # the changed steps missed ...
    assert s["top_miss"] and re.search(why, s["top_miss"]), s  # ... with a reason


def test_another_learning_rate_is_fed(mlp_db, tmp_path):
    # Adam's lr is a float attribute: fed at run time, never a constant of
    # the graph, so another learning rate runs the same graphs
    script = os.path.join(EXAMPLES, "fashion_mlp.py")
    args = ["--steps", "25", "--epochs", "1", "--hidden", "64", "--lr", "0.01"]
    re_, we = run(script, args, str(tmp_path), "eager")
    rr, wr = run(script, args, str(tmp_path), "replay", JANUS_REPLAY_DB=mlp_db, JANUS_REPLAY_STRICT="1")
    assert re_.returncode == 0 and rr.returncode == 0, rr.stderr[-3000:]
    assert strip_rates(rr.stdout) == strip_rates(re_.stdout)
    same_weights(we, wr)
    assert summary(rr.stderr)["fell_back"] == 0


def test_strict_mode_raises_on_a_miss(mlp_db, tmp_path):
    script = os.path.join(EXAMPLES, "fashion_mlp.py")
    rr, _ = run(script, ["--steps", "5", "--epochs", "1", "--hidden", "32"], str(tmp_path),
                "strict", JANUS_REPLAY_DB=mlp_db, JANUS_REPLAY_STRICT="1")
    assert rr.returncode != 0
    assert "RuntimeError: janus replay (strict): fell back to eager:" in rr.stderr, rr.stderr[-3000:]


COMPARE_SCRIPT = """
import sys
import janus, janus.nn as nn
janus.manual_seed(0)
B = int(sys.argv[1])
model = nn.Linear(4, 1)
opt = janus.optim.SGD(model.parameters(), lr=0.01)
x, y = janus.randn(B, 4), janus.randn(B, 1)
count = janus.zeros(2)
for step in range(30):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    if loss < 100.0:         # bool() of a comparison: the next segment starts after COMPARE
        count = count + 1
    opt.step()
print(count.tolist())
"""


def test_compare_sync_after_an_eager_segment(tmp_path):
    # recorded at batch 8, replayed at batch 5: the loss segment misses and
    # runs eagerly, its comparison included; the bool() after it must still
    # be told a COMPARE (eager ops keep the latest comparison), so the
    # segment after it -- which does not depend on the batch -- hits
    script = os.path.join(str(tmp_path), "compare.py")
    with open(script, "w") as f:
        f.write(COMPARE_SCRIPT)
    db = record_and_optimize(script, ["8"], str(tmp_path))
    re_, we = run(script, ["5"], str(tmp_path), "eager")
    rr, wr = run(script, ["5"], str(tmp_path), "replay", JANUS_REPLAY_DB=db)
    assert re_.returncode == 0 and rr.returncode == 0, rr.stderr[-3000:]
    assert rr.stdout == re_.stdout
    same_weights(we, wr)
    s = summary(rr.stderr)
    assert s["segments"] - s["fell_back"] >= 25, s   # the post-COMPARE segments, as graphs


PRINT_AFTER_STEP_SCRIPT = """
import sys
import janus, janus.nn as nn
janus.manual_seed(0)
steps, every = int(sys.argv[1]), int(sys.argv[2])
model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1))
opt = janus.optim.Adam(model.parameters(), lr=0.01)
data, target = janus.randn(64, 6), janus.randn(64, 1)
for step in range(steps):
    b = 4 + step % 5                    # the batch varies: one recorded step fits no other
    x, y = data[step % 8:step % 8 + b], target[step % 8:step % 8 + b]
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    if step % every == 0:               # right after opt.step(): an empty segment's sync
        print(f"step {step} loss {loss.item():.8f}")
"""


def test_print_after_step_is_no_segment_entry(tmp_path):
    # The recording prints at step 0 only; the replay every 3 steps.  A
    # sync that ends an empty segment (nothing ran since opt.step()) leaves
    # the next segment starting at the step start, in the analyzer and in
    # replay alike: the steps after a print are the steady-state group's,
    # not a group of their own mined from the one step the recording saw
    # after its print (which missed on every other batch size)
    script = os.path.join(str(tmp_path), "print_after_step.py")
    with open(script, "w") as f:
        f.write(PRINT_AFTER_STEP_SCRIPT)
    db = record_and_optimize(script, ["15", "1000"], str(tmp_path))
    r = janus("inspect", "--graphs", db)
    assert r.returncode == 0, r.stderr[-3000:]
    entries = re.findall(r'^graph g\d+ .* entry="([^"]*)"', r.stdout, re.M)
    assert entries and set(entries) == {"step start"}, entries
    re_, we = run(script, ["40", "3"], str(tmp_path), "eager")
    rr, wr = run(script, ["40", "3"], str(tmp_path), "replay", JANUS_REPLAY_DB=db, JANUS_REPLAY_ADAPT="0")
    assert re_.returncode == 0 and rr.returncode == 0, rr.stderr[-3000:]
    assert rr.stdout == re_.stdout and rr.stdout.count("loss") == 14
    same_weights(we, wr)
    s = summary(rr.stderr)
    assert s["fell_back"] == 0 and s["segments"] >= 40, s


def test_debug_switch(mlp_db, tmp_path):
    script = os.path.join(EXAMPLES, "fashion_mlp.py")
    args = ["--steps", "3", "--epochs", "1", "--hidden", "64"]
    for v, on in (("1", True), ("0", False), ("off", False)):
        rr, _ = run(script, args, str(tmp_path), "debug" + v, JANUS_REPLAY_DB=mlp_db, JANUS_REPLAY_DEBUG=v)
        assert rr.returncode == 0, rr.stderr[-3000:]
        assert ("[rp] " in rr.stderr) == on, (v, rr.stderr[-2000:])


def test_switch_spellings_mean_what_they_say(mlp_db, tmp_path):
    # every switch goes through the settings table: off and false are off
    # (JANUS_REPLAY_STRICT=off turned strict on, JANUS_REPLAY_QUIET=false
    # turned quiet on), and a value it refuses runs the script eagerly
    script = os.path.join(EXAMPLES, "fashion_mlp.py")
    # another width misses (a learning rate no longer does: it is fed at run time)
    args = ["--steps", "5", "--epochs", "1", "--hidden", "32"]
    re_, we = run(script, args, str(tmp_path), "eager")
    rr, wr = run(script, args, str(tmp_path), "off", JANUS_REPLAY_DB=mlp_db, JANUS_REPLAY_STRICT="off",
                 JANUS_REPLAY_QUIET="false")
    assert rr.returncode == 0, rr.stderr[-3000:]          # not strict: the misses fell back
    assert summary(rr.stderr)["fell_back"] > 0            # not quiet: the summary line
    assert strip_rates(rr.stdout) == strip_rates(re_.stdout)
    same_weights(we, wr)
    rr, wr = run(script, args, str(tmp_path), "bad", JANUS_REPLAY_DB=mlp_db, JANUS_REPLAY_QUIET="maybe")
    assert rr.returncode == 0, rr.stderr[-3000:]
    assert "janus replay: running eagerly: JANUS_REPLAY_QUIET=maybe is not a switch" in rr.stderr, rr.stderr[-2000:]
    assert not SUMMARY.search(rr.stderr)
    same_weights(we, wr)


def test_replay_off_switch(mlp_db, tmp_path):
    script = os.path.join(EXAMPLES, "fashion_mlp.py")
    rr, _ = run(script, ["--steps", "3", "--epochs", "1", "--hidden", "64"], str(tmp_path), "off",
                JANUS_REPLAY_DB=mlp_db, JANUS_REPLAY="0")
    assert rr.returncode == 0 and "janus replay" not in rr.stderr, rr.stderr


# ----------------------------------- timing graphs against eager (ADAPT)
# JANUS_REPLAY_ADAPT (on by default): after its first hit a graph's
# segments cycle through an untimed and a timed compiled run, then an
# untimed and a timed eager run, until AD_PAIRS (compiled, eager) pairs are
# timed (or 5, all on one side of the margin: the extremes below decide
# there), and a graph whose median pair ratio of time per op, compiled over
# eager, is above 1 + margin is left to eager.  The margin's extremes make
# the choice certain whatever this machine's timings: -0.999 asks a graph to
# be 1000x faster than eager (so every timed graph is left to eager), 1000
# keeps every graph.  Either way the numbers are eager's.
ADAPT_ARGS = ["--steps", "60", "--epochs", "1", "--hidden", "64"]
AD_PAIRS = 9  # replay.c


def adapt_run(mlp_db, tmp, tag, **extra):
    script = os.path.join(EXAMPLES, "fashion_mlp.py")
    extra.setdefault("JANUS_REPLAY_ADAPT", "1")
    rr, wr = run(script, ADAPT_ARGS, tmp, tag, JANUS_REPLAY_DB=mlp_db, **extra)
    assert rr.returncode == 0, rr.stderr[-3000:]
    return rr, wr, summary(rr.stderr)


@pytest.fixture(scope="module")
def mlp_eager(mlp_db, tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("mlp_eager"))
    re_, we = run(os.path.join(EXAMPLES, "fashion_mlp.py"), ADAPT_ARGS, tmp, "eager")
    assert re_.returncode == 0, re_.stderr[-3000:]
    return re_, we


def test_adapt_leaves_slower_graphs_to_eager(mlp_db, mlp_eager, tmp_path):
    re_, we = mlp_eager
    rr, wr, s = adapt_run(mlp_db, str(tmp_path), "slower", JANUS_REPLAY_ADAPT_MARGIN="-0.999")
    assert strip_rates(rr.stdout) == strip_rates(re_.stdout)
    same_weights(we, wr)
    # each graph ran compiled only while timed (its first hit, then per pair
    # an untimed and a timed run) ...
    assert 0 < s["segments"] - s["fell_back"] <= (1 + 2 * AD_PAIRS) * s["graphs"], s
    # ... every other segment of it ran eagerly by choice, and says why
    assert s["chosen"] >= s["segments"] - (1 + 2 * AD_PAIRS) * s["graphs"] - 5, s
    assert s["top_miss"] and re.search(r"graph g\d+ left to eager: compiled, its segment took [\d.]+x the eager "
                                       r"time \(per op, median of 5 back-to-back pairs", s["top_miss"]), s


def test_adapt_keeps_faster_graphs(mlp_db, mlp_eager, tmp_path):
    re_, we = mlp_eager
    rr, wr, s = adapt_run(mlp_db, str(tmp_path), "faster", JANUS_REPLAY_ADAPT_MARGIN="1000")
    assert strip_rates(rr.stdout) == strip_rates(re_.stdout)
    same_weights(we, wr)
    # the only choices were the timing runs: at most 8 per pair and graph
    # (after that a graph whose eager runs never came out as it is kept)
    assert 0 < s["chosen"] <= 8 * AD_PAIRS * s["graphs"], s
    assert "left to eager" not in rr.stderr
    # and off, nothing is chosen: every segment that fits runs compiled
    rr, wr, s0 = adapt_run(mlp_db, str(tmp_path), "off", JANUS_REPLAY_ADAPT="0")
    same_weights(we, wr)
    assert s0["chosen"] == 0 and s0["segments"] - s0["fell_back"] > s["segments"] - s["fell_back"], (s0, s)


def test_adapt_default_gives_eager_numbers(mlp_db, mlp_eager, tmp_path):
    # whatever this machine's timings choose
    re_, we = mlp_eager
    rr, wr, s = adapt_run(mlp_db, str(tmp_path), "default")
    assert strip_rates(rr.stdout) == strip_rates(re_.stdout)
    same_weights(we, wr)
    assert s["chosen"] > 0, s   # the timing runs at least
    # strict mode runs every graph that fits (no choice is made): every
    # segment, eager's numbers
    rr, ws = run(os.path.join(EXAMPLES, "fashion_mlp.py"), ADAPT_ARGS, str(tmp_path), "strict", JANUS_REPLAY_DB=mlp_db,
                 JANUS_REPLAY_ADAPT="1", JANUS_REPLAY_STRICT="1")
    assert rr.returncode == 0, rr.stderr[-3000:]
    same_weights(we, ws)
    s = summary(rr.stderr)
    assert s["chosen"] == 0 and s["fell_back"] == 0 and s["segments"] >= 60, s


def test_adapt_through_the_cli(mlp_db, tmp_path):
    script = os.path.join(EXAMPLES, "fashion_mlp.py")
    r = janus("replay", "--db", mlp_db, "--", sys.executable, PROBE, script, *ADAPT_ARGS, timeout=600, cwd=ROOT,
              extra_env={"JANUS_REPLAY_ADAPT": "1", "JANUS_REPLAY_ADAPT_MARGIN": "-0.999",
                         "JANUS_PROBE_OUT": os.path.join(str(tmp_path), "w.json")})
    assert r.returncode == 0, r.stderr[-3000:]
    m = re.search(r"janus replay: run (\d+): .* fell back to eager, ([\d,]+) of them by choice \(graphs slower "
                  r"than eager here, and timing runs\)", r.stderr)
    assert m, r.stderr[-3000:]
    i = janus("inspect", "--run", m.group(1), mlp_db)
    assert i.returncode == 0, i.stderr
    assert re.search(r"left to eager: compiled, its segment took", i.stdout), i.stdout
    assert "ran eagerly to time it against its compiled run" in i.stdout, i.stdout
    j = json.loads(janus("inspect", "--run", m.group(1), "--json", mlp_db).stdout)
    assert any(x["guard"] == -2 and "left to eager" in x["reason"] for x in find_misses(j)), j


def find_misses(j):
    """Every miss row of an inspect --json document, wherever it sits."""
    if isinstance(j, dict):
        if "guard" in j and "reason" in j:
            return [j]
        return [x for v in j.values() for x in find_misses(v)]
    if isinstance(j, list):
        return [x for v in j for x in find_misses(v)]
    return []


def test_adapt_switch_must_be_known(mlp_db, mlp_eager, tmp_path):
    re_, we = mlp_eager
    script = os.path.join(EXAMPLES, "fashion_mlp.py")
    rr, wr = run(script, ADAPT_ARGS, str(tmp_path), "bad", JANUS_REPLAY_DB=mlp_db, JANUS_REPLAY_ADAPT="maybe")
    assert rr.returncode == 0, rr.stderr[-3000:]
    assert ("janus replay: running eagerly: JANUS_REPLAY_ADAPT=maybe is not a switch: use 1/yes/true/on or "
            "0/no/false/off" in rr.stderr), rr.stderr[-2000:]
    assert strip_rates(rr.stdout) == strip_rates(re_.stdout)
    same_weights(we, wr)


@pytest.mark.parametrize("name", SCRIPTS)
@pytest.mark.parametrize("margin", ["-0.999", "1000"])
def test_adapt_on_dynamic_scripts(name, margin, tmp_path):
    # timing runs, graphs left to eager (SEG_PLAIN) or kept, around branches,
    # item() decisions, other shapes and evaluation: eager's numbers always
    script = os.path.join(ROOT, "tests", "dynamic", name + ".py")
    db = record_and_optimize(script, [], str(tmp_path))
    re_, we = run(script, [], str(tmp_path), "eager")
    rr, wr = run(script, [], str(tmp_path), "replay", JANUS_REPLAY_DB=db, JANUS_REPLAY_ADAPT="1",
                 JANUS_REPLAY_ADAPT_MARGIN=margin)
    assert rr.returncode == 0, rr.stderr[-3000:]
    assert rr.stdout == re_.stdout
    same_weights(we, wr)
    s = summary(rr.stderr)
    assert s["chosen"] > 0, s


@pytest.mark.parametrize("margin,why", [("abc", "is not a number"), ("-1", "is out of range: accepted -0.999999.."),
                                        ("nan", "is not a number"), ("0.1x", "is not a number")])
def test_adapt_margin_must_be_a_number(mlp_db, mlp_eager, tmp_path, margin, why):
    re_, we = mlp_eager
    script = os.path.join(EXAMPLES, "fashion_mlp.py")
    rr, wr = run(script, ADAPT_ARGS, str(tmp_path), "bad", JANUS_REPLAY_DB=mlp_db, JANUS_REPLAY_ADAPT_MARGIN=margin)
    assert rr.returncode == 0, rr.stderr[-3000:]
    assert f"janus replay: running eagerly: JANUS_REPLAY_ADAPT_MARGIN={margin} {why}" in rr.stderr, rr.stderr[-2000:]
    assert strip_rates(rr.stdout) == strip_rates(re_.stdout)
    same_weights(we, wr)


def test_recording_and_replay_do_not_combine(mlp_db, tmp_path):
    # a recording runs eagerly (and owns the dispatch hook): replay says so
    script = os.path.join(EXAMPLES, "fashion_mlp.py")
    db = os.path.join(str(tmp_path), "rec.db")
    r = janus("record", "--db", db, "--", sys.executable, PROBE, script, "--steps", "3", "--epochs", "1", "--hidden",
              "64", timeout=600, cwd=ROOT, extra_env={"JANUS_REPLAY_DB": mlp_db})
    assert r.returncode == 0, r.stderr[-3000:]
    assert "janus replay: running eagerly: recording is on in this process (janus record)" in r.stderr, r.stderr
    assert re.search(r"janus record: run 1: \d+ steps, \d+ ops", r.stderr), r.stderr


# ------------------------------------------- state tensors are the run's own
STATE_SHIFT = """
import sys
import janus, janus.nn as nn
janus.manual_seed(0)
before, at_first_step, swap_at = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
junk = [janus.zeros(3) for _ in range(before)]       # tensors made before the model
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
opt = janus.optim.Adam(model.parameters(), lr=1e-2)
x, y = janus.randn(64, 16), janus.randint(0, 4, (64,))
loss_fn = nn.CrossEntropyLoss()
for step in range(60):
    if step == swap_at:                              # a new model and optimizer: new state tensors
        model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
        opt = janus.optim.Adam(model.parameters(), lr=1e-2)
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    if step == 0:
        more = [janus.ones(2) for _ in range(at_first_step)]   # ... before Adam makes its state
    opt.step()
    if step % 20 == 19:
        print(f"step {step} loss {loss.item():.6f}")
"""


def written_script_replays(tmp, name, text, rec_args, args, lines):
    """Write a test script, record and optimize it with rec_args, then run it with
    args eagerly and replayed (every graph that fits, JANUS_REPLAY_ADAPT=0): the
    same printed lines (`lines` loss lines) and final weights; the replay's counters."""
    script = os.path.join(tmp, name + ".py")
    with open(script, "w") as f:
        f.write(text)
    db = record_and_optimize(script, rec_args, tmp)
    re_, we = run(script, args, tmp, "eager")
    rr, wr = run(script, args, tmp, "replay", JANUS_REPLAY_DB=db, JANUS_REPLAY_ADAPT="0")
    assert re_.returncode == 0 and rr.returncode == 0, rr.stderr[-3000:]
    assert rr.stdout == re_.stdout and rr.stdout.count("loss") == lines
    same_weights(we, wr)
    return script, db, summary(rr.stderr)


@pytest.mark.parametrize("before,at_first_step,swap_at", [(3, 0, -1), (0, 5, -1), (2, 4, -1), (0, 0, 30)])
def test_state_binds_what_the_script_passes(tmp_path, before, at_first_step, swap_at):
    # tensor ids count every tensor a process made, so a run that makes a
    # few more before its model (or before the optimizer's lazily made
    # state) than the recording did gives its parameters and state other
    # ids, and a model and optimizer made anew midway are other tensors: a
    # state input binds the tensor the script passes, so the steps still
    # hit (they missed in all of them when state had to keep its recorded
    # id), with eager's numbers
    _, _, s = written_script_replays(str(tmp_path), "state_shift", STATE_SHIFT, ["0", "0", "-1"],
                                     [str(before), str(at_first_step), str(swap_at)], 3)
    assert s["segments"] - s["fell_back"] >= (55 if swap_at < 0 else 54), s   # the step after a swap makes state


RESUME = """
import os, sys
import janus, janus.nn as nn
janus.manual_seed(0)
steps, ck = int(sys.argv[1]), sys.argv[2]
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
opt = janus.optim.Adam(model.parameters(), lr=1e-2)
x, y = janus.randn(64, 16), janus.randint(0, 4, (64,))
loss_fn = nn.CrossEntropyLoss()
if os.path.exists(ck):                       # resume: Adam's state made here, not at the first step
    state = janus.load(ck)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
for step in range(steps):
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    if step % 20 == 19:
        print(f"step {step} loss {loss.item():.6f}")
if not os.path.exists(ck):
    janus.save({"model": model.state_dict(), "opt": opt.state_dict()}, ck)
"""


def test_a_run_resumed_from_a_checkpoint_replays(tmp_path):
    # recorded from scratch, replayed resuming from a checkpoint: every
    # parameter and optimizer state tensor has another id than recorded
    # (the checkpoint's load makes them), yet the steps hit, exactly
    ck = os.path.join(str(tmp_path), "ck.pt")
    r = subprocess.run([sys.executable, "-c", RESUME, "25", ck], capture_output=True, text=True, env=env(),
                       timeout=300)   # an earlier run saves the checkpoint
    assert r.returncode == 0 and os.path.exists(ck), r.stderr[-2000:]
    _, _, s = written_script_replays(str(tmp_path), "resume", RESUME,
                                     ["30", os.path.join(str(tmp_path), "none.pt")], ["60", ck], 3)
    assert s["segments"] - s["fell_back"] >= 55, s


OVERLAP = """
import sys
import janus, janus.nn as nn
janus.manual_seed(0)
buf = janus.randn(64)
if sys.argv[1] == "views":                   # two parameters over one buffer, overlapping
    a, b = buf[0:40], buf[24:64]
else:
    a, b = buf[0:40].clone(), buf[24:64].clone()
a, b = nn.Parameter(a), nn.Parameter(b)
opt = janus.optim.SGD([a, b], lr=0.1, momentum=0.9)
x = janus.randn(40)
for step in range(40):
    opt.zero_grad()
    loss = ((a * x).tanh().sum() - (b * x).sin().sum()) ** 2
    loss.backward()
    opt.step()
    if step % 10 == 9:
        print(f"step {step} loss {loss.item():.6f}")
"""


def test_state_that_overlaps_runs_eagerly(tmp_path):
    # recorded with two separate parameters, replayed with the two as
    # overlapping views of one buffer: SGD's update of one changes the
    # other, which the graph (it writes state back at its end) would not
    # see -- wrong numbers when this ran as a graph; it runs eagerly, saying why
    script, db, s = written_script_replays(str(tmp_path), "overlap", OVERLAP, ["apart"], ["views"], 4)
    assert s["fell_back"] >= 35 and "overlaps state input" in (s["top_miss"] or ""), s
    rr, _ = run(script, ["apart"], str(tmp_path), "apart", JANUS_REPLAY_DB=db, JANUS_REPLAY_ADAPT="0")
    assert summary(rr.stderr)["fell_back"] <= 2, rr.stderr[-2000:]     # apart: graphs


# -------------------------------------------------------- unusable stores
def test_empty_store_runs_eagerly(tmp_path):
    script = os.path.join(ROOT, "tests", "dynamic", "last_batch_smaller.py")
    db = os.path.join(str(tmp_path), "empty.db")
    r = janus("record", "--db", db, "--", sys.executable, PROBE, script, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    re_, we = run(script, [], str(tmp_path), "eager")
    rr, wr = run(script, [], str(tmp_path), "replay", JANUS_REPLAY_DB=db)   # recorded, never optimized
    assert rr.returncode == 0, rr.stderr
    assert re.search(r"janus replay: running eagerly: .*no bundle.*janus optimize", rr.stderr), rr.stderr
    assert rr.stdout == re_.stdout
    same_weights(we, wr)
    missing = os.path.join(str(tmp_path), "nope.db")
    rr, _ = run(script, [], str(tmp_path), "missing", JANUS_REPLAY_DB=missing)
    assert rr.returncode == 0 and "janus replay: running eagerly: " in rr.stderr and "nope.db" in rr.stderr


def test_store_of_another_script_runs_eagerly(mlp_db, tmp_path):
    script = os.path.join(ROOT, "tests", "dynamic", "lr_schedule.py")
    re_, we = run(script, [], str(tmp_path), "eager")
    rr, wr = run(script, [], str(tmp_path), "replay", JANUS_REPLAY_DB=mlp_db)
    assert rr.returncode == 0, rr.stderr
    assert "janus replay: running eagerly:" in rr.stderr and "fashion_mlp.py" in rr.stderr, rr.stderr
    assert rr.stdout == re_.stdout
    same_weights(we, wr)


def test_corrupt_store_runs_eagerly(tmp_path):
    db = os.path.join(str(tmp_path), "junk.db")
    with open(db, "wb") as f:
        f.write(b"this is not a database" * 100)
    script = os.path.join(ROOT, "tests", "dynamic", "lr_schedule.py")
    rr, wr = run(script, [], str(tmp_path), "replay", JANUS_REPLAY_DB=db)
    assert rr.returncode == 0, rr.stderr
    assert "janus replay: running eagerly:" in rr.stderr and "junk.db" in rr.stderr, rr.stderr
    assert wr is not None


# ------------------------------------- values the graphs do not keep, read
READER = '''
import os, sys
sys.path.insert(0, os.path.join({root!r}, "python"))
import janus
import janus.nn as nn
janus.manual_seed(0)
X = janus.randn(64, 8)
Y = (X.sum(1) > 0).long()
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
opt = janus.optim.Adam(model.parameters(), lr=0.01)
mode = sys.argv[1] if len(sys.argv) > 1 else "hold"
for step in range(30):
    x, y = X[step % 4 * 16:(step % 4 + 1) * 16], Y[step % 4 * 16:(step % 4 + 1) * 16]
    opt.zero_grad()
    out = model(x)
    loss = nn.functional.cross_entropy(out, y)
    loss.backward()
    if mode == "drop":  # the recording holds neither when the step ends: the graph does not keep them
        del out, loss
    opt.step()
    if mode == "read" and step % 7 == 3:  # what the recording never read: loss, a gradient, the logits
        print(step, loss.item(), float(model[0].weight.grad.sum()), out[0].tolist())
if mode != "drop":
    from janus import _C
    print("deferred slices", _C._rp_stats()["sliced"] if _C._rp_active() else 0, file=sys.stderr)
print("final", [p.sum().item() for p in model.parameters()])
'''


def reader_store(tmp_path, record_mode):
    script = os.path.join(str(tmp_path), "reader.py")
    with open(script, "w") as f:
        f.write(READER.format(root=ROOT))
    db = os.path.join(str(tmp_path), "run.db")
    r = janus("record", "--db", db, "--", sys.executable, script, record_mode, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert janus("optimize", db, timeout=300).returncode == 0
    return script, db


def test_values_alive_at_step_end_are_kept(tmp_path):
    """Tensors the recording still held when a step ended (the loss, the
    logits, .grad) are kept by the graph although the run never read them
    (the recorder's JN_EV_LIVE events), so a replay that reads them needs
    no deferred recomputation; without the events every step would need one."""
    script, db = reader_store(tmp_path, "hold")
    e = subprocess.run([sys.executable, script, "read"], capture_output=True, text=True, env=env(), timeout=300)
    rr = subprocess.run([sys.executable, script, "read"], capture_output=True, text=True,
                        env=env(JANUS_REPLAY_DB=db), timeout=300)
    assert e.returncode == 0 and rr.returncode == 0, rr.stderr[-3000:]
    assert rr.stdout == e.stdout and rr.stdout.count("\n") == 5
    assert "deferred slices 0" in rr.stderr, rr.stderr[-2000:]
    s = summary(rr.stderr)
    assert s["segments"] - s["fell_back"] >= 25, s
    ev = _C._rec_read_step(db, 1, 5)
    live = [x for x in ev if x["kind"] == "live"]
    assert len(live) == 1 and ev[-1]["kind"] == "live" and len(live[0]["ids"]) >= 3, live  # at the step's end
    made = {o["id"] for x in ev if x["kind"] == "op" for o in x["outputs"]}
    assert set(live[0]["ids"]) <= made and live[0]["ids"] == sorted(live[0]["ids"])


@pytest.mark.parametrize("mode", [{}, {"JANUS_REPLAY_DEFER": "0"}])
def test_values_graphs_do_not_keep_read_later(tmp_path, mode):
    """The recording dropped the loss and the logits before its steps ended,
    this run reads them: the graph does not have them, replay recomputes them
    (a deferred slice, or eagerly before the graph with DEFER=0)."""
    script, db = reader_store(tmp_path, "drop")
    e = subprocess.run([sys.executable, script, "read"], capture_output=True, text=True, env=env(), timeout=300)
    rr = subprocess.run([sys.executable, script, "read"], capture_output=True, text=True,
                        env=env(JANUS_REPLAY_DB=db, **mode), timeout=300)
    assert e.returncode == 0 and rr.returncode == 0, rr.stderr[-3000:]
    assert rr.stdout == e.stdout and rr.stdout.count("\n") == 5
    s = summary(rr.stderr)
    assert s["segments"] - s["fell_back"] >= 25, s   # the training steps ran as graphs
    if not mode:
        assert re.search(r"deferred slices [1-9]", rr.stderr), rr.stderr[-2000:]
    # speculation computes nothing the graph does not keep: reading the loss raises, saying why
    rs = subprocess.run([sys.executable, script, "read"], capture_output=True, text=True,
                        env=env(JANUS_REPLAY_DB=db, JANUS_REPLAY_SPECULATE="1"), timeout=300)
    assert rs.returncode != 0 and "does not keep it" in rs.stderr and "JANUS_REPLAY=0" in rs.stderr, rs.stderr


UNREAD = '''
import os, sys
sys.path.insert(0, os.path.join({root!r}, "python"))
import janus
import janus.nn as nn
janus.manual_seed(0)
used, unused = nn.Linear(8, 4), nn.GRU(4, 4)   # unused: its initial values are never read again
opt = janus.optim.Adam(list(used.parameters()) + list(unused.parameters()), lr=0.01)
X = janus.randn(64, 8)
for step in range(30):
    loss = (used(X[step % 4 * 16:(step % 4 + 1) * 16]) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, f"{{loss.item():.7f}}")
if sys.argv[1] == "read":
    from janus import _replay
    _replay.stop()   # as a script's end does: what it reads now no replay can compute
    print("unused", [p.sum().item() for p in unused.parameters()])
'''


def record_then_run(tmp_path, name, source, rec_args, args):
    """source written as a script, recorded with rec_args and optimized,
    then run with args eagerly and replayed with every graph (no probe):
    (optimize's CompletedProcess, eager's, replay's)."""
    script = os.path.join(str(tmp_path), name)
    with open(script, "w") as f:
        f.write(source)
    db = os.path.join(str(tmp_path), "run.db")
    r = janus("record", "--db", db, "--", sys.executable, script, *rec_args, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    opt = janus("optimize", db, timeout=300)
    assert opt.returncode == 0, opt.stderr[-2000:]
    e = subprocess.run([sys.executable, script, *args], capture_output=True, text=True, env=env(), timeout=300)
    rr = subprocess.run([sys.executable, script, *args], capture_output=True, text=True,
                        env=env(JANUS_REPLAY_DB=db, JANUS_REPLAY_ADAPT="0"), timeout=300)
    assert e.returncode == 0 and rr.returncode == 0, rr.stderr[-3000:]
    return opt, e, rr


def test_values_graphs_do_not_keep_read_after_replay(tmp_path):
    """Parameters of a module the training never uses: the recording never
    read their initial values again, so the first graph does not keep them
    (a deferred slice computes them if read).  Read after replay ended (a
    state_dict saved at exit, replay_probe's final weights), they are
    computed when replay ends, not lost (rp_slice_settle)."""
    _, e, rr = record_then_run(tmp_path, "unread.py", UNREAD.format(root=ROOT), ["noread"], ["read"])
    assert rr.stdout == e.stdout and "unused" in rr.stdout
    assert summary(rr.stderr)["fell_back"] == 0, rr.stderr[-2000:]


HELD_ITERATIONS = r'''
import sys
sys.path.insert(0, {python!r})
import janus, janus.nn as nn
steps, read_from = int(sys.argv[1]), int(sys.argv[2])
janus.manual_seed(0)
cell, head = nn.RNNCell(4, 8), nn.Linear(8, 2)
opt = janus.optim.SGD(list(cell.parameters()) + list(head.parameters()), lr=0.1)
xs = janus.randn(16, 3, 4)
for s in range(steps):
    T = 3 + s % 3
    h, hs = janus.zeros(3, 8), []
    for t in range(T):
        h = cell(xs[t], h)
        hs.append(h)
    loss = head(h).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if s >= read_from:
        print(s, [float(v).hex() for v in hs[0].sum(1).tolist()])
print("loss", float(loss).hex())
'''


def test_an_earlier_iterations_value_read_after_its_graph_ran(tmp_path):
    """A time loop (an IR loop: its count varies) whose every iteration's
    state Python keeps in a list the recording never read.  A graph's keep
    output is the final value of its token's object, so in a loop only the
    last iteration's; every iteration's header was filled with it, and a
    later read of hs[0] printed the last state.  Now the earlier ones are
    left to the deferred slice, computed when read."""
    opt, e, rr = record_then_run(tmp_path, "held.py", HELD_ITERATIONS.format(python=os.path.join(ROOT, "python")),
                                 ["12", "1000"], ["12", "5"])
    assert " 0 loops" not in opt.stderr, opt.stderr[-2000:]
    assert rr.stdout == e.stdout
    assert summary(rr.stderr)["pct"] > 0, rr.stderr[-2000:]


FIRST_STEP_RANDOM = r'''
import sys
sys.path.insert(0, {python!r})
import janus, janus.nn as nn, janus.nn.functional as F
first_b, steps = int(sys.argv[1]), int(sys.argv[2])
janus.manual_seed(0)
lin, head = nn.Linear(8, 16), nn.Linear(16, 2)
opt = janus.optim.Adam(list(lin.parameters()) + list(head.parameters()), lr=0.01)
for s in range(steps):
    B = first_b if s == 0 else 4 + s % 3
    x = janus.randn(B, 8)
    h = F.dropout(F.relu(lin(x)), 0.3)
    loss = head(F.dropout(h, 0.2)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(s, float(loss).hex())
'''


def test_random_offsets_follow_the_shapes_of_a_step_seen_once(tmp_path):
    """The first step (its own graph: Adam makes its state) is seen once,
    with a batch of 5; the batch is a symbol there, since it varies in the
    steps after.  A random op's Philox offset is the first's plus the numel
    of the random ops before it, and that distance was a constant (5 * 8
    after randn): a first batch of 6 missed at the dropout.  Outside loops
    the distance is now that sum as an expression of the graph's dims."""
    _, e, rr = record_then_run(tmp_path, "first.py", FIRST_STEP_RANDOM.format(python=os.path.join(ROOT, "python")),
                               ["5", "12"], ["6", "12"])
    assert rr.stdout == e.stdout
    assert summary(rr.stderr)["fell_back"] == 0, rr.stderr[-2000:]


# ------------------------------------------------ memory: moved, not copied
LOADER = '''
import os, resource, sys
sys.path.insert(0, os.path.join({root!r}, "python"))
import janus
import janus.nn as nn
janus.manual_seed(0)
raw = janus.randint(0, 256, (2000, 8192), dtype=janus.uint8)   # 16 MB of bytes, 64 MB as floats
X = (raw.float() / 255.0).view(2000, 1, 8192)                 # the loader's idiom: a view of the result
Y = (raw[:, 0] > 127).long()
model = nn.Linear(8192, 2)
opt = janus.optim.SGD(model.parameters(), lr=0.1)
for step in range(12):
    x, y = X[step * 100:(step + 1) * 100].view(100, 8192), Y[step * 100:(step + 1) * 100]
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
print("x", X.sum().item(), "final", [p.sum().item() for p in model.parameters()])
'''


def test_graph_outputs_move_into_pending_views(tmp_path):
    """The graph that converts the data keeps the 64 MB result, and Python
    holds a view of it (`(x.float() / 255).view(...)`, as the Fashion-MNIST
    loader does): the executor's buffer becomes the view's storage, it is
    not copied into a second one (which doubled the peak while it lasted).
    Same numbers as eager."""
    script = os.path.join(str(tmp_path), "loader.py")
    with open(script, "w") as f:
        f.write(LOADER.format(root=ROOT))
    db = os.path.join(str(tmp_path), "run.db")
    r = janus("record", "--db", db, "--", sys.executable, script, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert janus("optimize", db, timeout=300).returncode == 0
    e = subprocess.run([sys.executable, script], capture_output=True, text=True, env=env(), timeout=300)
    rr = subprocess.run([sys.executable, script], capture_output=True, text=True,
                        env=env(JANUS_REPLAY_DB=db, JANUS_REPLAY_DEBUG="1"), timeout=300)
    assert e.returncode == 0 and rr.returncode == 0, rr.stderr[-3000:]
    assert rr.stdout == e.stdout
    assert re.search(r"\[rp\] graph g\d+ ran in", rr.stderr), rr.stderr[-3000:]  # the conversion ran as a graph
    copied = [int(n) for n in re.findall(r"copied into a pending \w+ \((\d+) bytes\)", rr.stderr)]
    assert copied and max(copied) < 1 << 20, copied   # small outputs are copied; the 64 MB one is moved


FULL_SLICE = """
import sys
sys.path.insert(0, {root!r})
import janus
n = int(sys.argv[1])
janus.manual_seed(0)
x = janus.randn(4, 3, 2)
w = janus.nn.Parameter(janus.randn(2))
opt = janus.optim.SGD([w], lr=0.1)
idx = janus.tensor([2, 0, 1])
for step in range(n):
    y = x.index_select(1, idx)        # made in the graph
    z = y[:4]                         # a full slice: a new view object, no op
    d = y.data                        # .data: another header over the same value
    loss = (z.reshape(12, 2) * w).sum() + (d * w).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, "loss", loss.item())
"""


def test_views_made_without_an_op_replay(tmp_path):
    # x[:] (and x[:n] that covers x), .data and copy.copy make a new tensor
    # object over the same value without an op: it keeps the value's tensor
    # id (as detach's does), so the trace sees y, not a tensor from nowhere
    # -- with a fresh id the graph took it for an outside input, which at
    # replay is the graph's own pending output: every step missed ("input 2
    # is not bound to a tensor with data", as the corpus's
    # pack_padded_sequence's input[:T] did)
    _, _, s = written_script_replays(str(tmp_path), "full_slice", FULL_SLICE.format(root=os.path.join(ROOT, "python")),
                                     ["8"], ["20"], 20)
    assert s["fell_back"] == 0 and s["segments"] >= 20, s


STRIDED_WRITE = """
import sys
sys.path.insert(0, {root!r})
import janus
n = int(sys.argv[1])
janus.manual_seed(0)
w = janus.nn.Parameter(janus.randn(8, 4))
opt = janus.optim.SGD([w], lr=0.1)
x = janus.randn(8, 2)
for step in range(n):
    pe = janus.zeros(8, 4)            # made in the step
    pe[:, 0::2] = janus.sin(x * (step % 3))   # strided writes into it, as a positional encoding's
    pe[:, 1::2] = janus.cos(x)
    pe[0] = 1.0
    loss = (pe * w).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, "loss", loss.item())
"""


def test_writes_into_a_tensor_the_step_made_stay_in_the_segment(tmp_path):
    # x[...] = v is a dispatched copy_ that capture takes like any other op:
    # it must not compute the target first (setitem did, which ended the
    # segment at the write, so every step missed "the segment ended after 3
    # ops", as the corpus's transformer_lm's positional encoding did once)
    _, _, s = written_script_replays(str(tmp_path), "strided_write",
                                     STRIDED_WRITE.format(root=os.path.join(ROOT, "python")), ["8"], ["20"], 20)
    assert s["fell_back"] == 0 and s["segments"] >= 20, s


BAD_INDEX = """
import sys
sys.path.insert(0, {root!r})
import janus
n, steps, bad = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
janus.manual_seed(0)
data = janus.randn(n, 4)
lin = janus.nn.Linear(4, 3)
opt = janus.optim.SGD(lin.parameters(), lr=0.1)
for step in range(steps):
    idx = janus.tensor([(step * 7 + k) % n for k in range(8)] if step != bad else [n + 2] * 8)
    loss = lin(data[idx]).square().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, "loss", loss.item())
"""


def test_an_error_inside_a_replayed_segment_says_where_it_came_from(tmp_path):
    # an index past the end inside a segment: replay runs the segment's ops
    # at its end, so the IndexError comes from there (the graph fails, the
    # fallback re-runs the ops and raises eager's error); the message says
    # so and how to get it at its line, and the steps before it are eager's
    tmp = str(tmp_path)
    script = os.path.join(tmp, "bad_index.py")
    with open(script, "w") as f:
        f.write(BAD_INDEX.format(root=os.path.join(ROOT, "python")))
    db = record_and_optimize(script, ["50", "10", "-1"], tmp)
    e, _ = run(script, ["50", "12", "6"], tmp, "eager")
    r, _ = run(script, ["50", "12", "6"], tmp, "replay", JANUS_REPLAY_DB=db, JANUS_REPLAY_ADAPT="0")
    assert e.returncode == 1 and r.returncode == 1
    assert "IndexError: index(): index 52 is out of bounds for dimension 0 with size 50" in e.stderr
    assert re.search(r"IndexError: index\(\): index 52 is out of bounds for dimension 0 with size 50 \(raised "
                     r"where janus replay ran the ops of this segment, after the line that called index: "
                     r"`janus replay --eager` or JANUS_REPLAY=0 raises it at that line\)", r.stderr), r.stderr[-3000:]
    assert r.stdout == e.stdout and r.stdout.count("loss") == 6


HELD_SAVED = """
import sys
sys.path.insert(0, {root!r})
import janus, janus.nn as nn
import janus.nn.functional as F
janus.manual_seed(0)
lin = nn.Linear(4, 4)
u = janus.ones(4)                      # a buffer the step updates in place
opt = janus.optim.SGD(lin.parameters(), lr=0.01)
X = janus.randn(64, 4)
held = None
for step in range(int(sys.argv[1])):
    x = X[(step * 8) % 64:][:8]
    with janus.no_grad():
        u.copy_(F.normalize(lin.weight.detach() @ u, dim=0))
    held = lin.weight / (u @ (lin.weight @ u))   # Python holds it past the step; linear saves it
    loss = (F.linear(x, held) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, "loss", f"{{loss.item():.7f}}")
print("held", held.sum().item())
"""


def test_a_held_value_autograd_also_saved_is_kept(tmp_path):
    """A value Python holds past the segment that an op also saved for
    backward: the saved alias (same tensor id) dies after backward, the value
    does not.  The recording counts it alive (only the op's own header ends
    it), so the graph keeps it; before, replay had to recompute it from the
    buffer the segment had already updated in place, and every step ran
    eagerly (the old spectral_norm's pattern)."""
    script = os.path.join(str(tmp_path), "held.py")
    with open(script, "w") as f:
        f.write(HELD_SAVED.format(root=os.path.join(ROOT, "python")))
    db = os.path.join(str(tmp_path), "run.db")
    assert janus("record", "--db", db, "--", sys.executable, script, "20", timeout=300, cwd=ROOT).returncode == 0
    assert janus("optimize", db, timeout=300).returncode == 0
    e = subprocess.run([sys.executable, script, "40"], capture_output=True, text=True, env=env(), timeout=300)
    rr = subprocess.run([sys.executable, script, "40"], capture_output=True, text=True,
                        env=env(JANUS_REPLAY_DB=db, JANUS_REPLAY_ADAPT="0"), timeout=300)
    assert e.returncode == 0 and rr.returncode == 0, rr.stderr[-3000:]
    assert rr.stdout == e.stdout
    s = summary(rr.stderr)
    assert s["fell_back"] == 0 and s["segments"] >= 40, s


DATA_PTR = """
import sys
sys.path.insert(0, {root!r})
import janus, janus.nn as nn
janus.manual_seed(0)
lin = nn.Linear(8, 8)
opt = janus.optim.SGD(lin.parameters(), lr=0.01)
X = janus.randn(64, 8)
for step in range(int(sys.argv[1])):
    x = X[(step * 8) % 64:][:8]
    h = lin(x)
    shared = h.data_ptr() == h.view(-1).data_ptr()   # an address read mid-step
    loss = (h ** 2).mean() * (1.0 if shared else 2.0)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, "loss", f"{{loss.item():.7f}}")
"""


def test_data_ptr_is_a_recorded_sync(tmp_path):
    """data_ptr() of a value the step computes makes it current: a sync
    point, recorded as a buffer export is, so the replay's segments end
    where the recording's did (uncounted, every segment ended early and ran
    eagerly: 0 of 40)."""
    script = os.path.join(str(tmp_path), "ptr.py")
    with open(script, "w") as f:
        f.write(DATA_PTR.format(root=os.path.join(ROOT, "python")))
    db = os.path.join(str(tmp_path), "run.db")
    assert janus("record", "--db", db, "--", sys.executable, script, "20", timeout=300, cwd=ROOT).returncode == 0
    assert janus("optimize", db, timeout=300).returncode == 0
    e = subprocess.run([sys.executable, script, "40"], capture_output=True, text=True, env=env(), timeout=300)
    rr = subprocess.run([sys.executable, script, "40"], capture_output=True, text=True,
                        env=env(JANUS_REPLAY_DB=db, JANUS_REPLAY_ADAPT="0"), timeout=300)
    assert e.returncode == 0 and rr.returncode == 0, rr.stderr[-3000:]
    assert rr.stdout == e.stdout
    s = summary(rr.stderr)
    assert s["fell_back"] == 0 and s["segments"] >= 80, s
