"""Replay's matcher (replay/jn_match.h) on real recordings, offline:
each tests/dynamic/ script and a short examples/char_lstm.py run is
recorded, and build/test_match (tests/c/test_match.c) analyzes it, builds
and loads the bundle as `janus optimize` does and feeds every recorded op
into the matcher.  Every segment of a captured group must complete a graph
(hits == the graphs' recorded support) with symbol values that reproduce
the recorded input shapes, and mutated streams (dim out of range, another
op, changed constant scalars, two state inputs given one tensor, a trip
count out of range, another script's stream) must miss with the right
guard, while another state tensor, or every tensor id moved, still hits (a
state input binds what the script passes, as long as state aliases as
recorded); the C
program checks each and exits 1 on any failure, and prints one summary
line this test reads."""
import os
import re
import subprocess
import sys

import pytest

from dynamic_runs import BUILD, ROOT, SCRIPTS, env, have_optimize, janus, record

TEST_MATCH = os.path.join(BUILD, "test_match")

pytestmark = pytest.mark.skipif(not os.path.exists(TEST_MATCH) or not have_optimize(),
                                reason="build/test_match or the analyzer is not built")

SUMMARY = re.compile(r"^match: (.*)$", re.M)
TWIN = re.compile(r"^twin: events=(\d+) fast_events=(\d+) differ=(\d+)$", re.M)


def run_match(db, other=None, **extra):
    args = [TEST_MATCH, db] + ([other] if other else [])
    r = subprocess.run(args, capture_output=True, text=True, env=env(**extra), timeout=300)
    m = SUMMARY.search(r.stdout)
    assert m, r.stdout + r.stderr
    fields = dict(kv.split("=") for kv in m.group(1).split())
    out = {k: (float(v) if "." in v else int(v)) for k, v in fields.items()}
    return r, out


@pytest.fixture(scope="module")
def lstm_db(tmp_path_factory):
    db = str(tmp_path_factory.mktemp("lstm") / "run.db")
    r = janus("record", "--db", db, "--", sys.executable, os.path.join(ROOT, "examples", "char_lstm.py"),
              "--steps", "12", "--hidden", "32", "--batch", "4", timeout=300)
    assert r.returncode == 0, r.stderr
    return db


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_recorded_segment_hits(name):
    other = record("seq_len_varies" if name != "seq_len_varies" else "last_batch_smaller")
    r, s = run_match(record(name), other)
    assert r.returncode == 0, r.stdout + r.stderr
    assert s["programs"] == s["graphs"], r.stderr          # every graph got a matcher program
    assert s["hits"] == s["support"] == s["segments"], s   # every recorded segment completes its graph
    assert s["shapes_ok"] > 0
    assert s["mut_op"] > 0, s                               # another op: a miss
    assert s["mut_bind"] > 0, s                             # another state tensor: a hit, bound to it
    assert s["mut_shift"] == 1, s                           # every tensor id moved: the same hits
    assert s["mut_tied"] > 0 or s["hits"] == 0, s           # two state inputs one tensor: a miss
    assert s["other_hits"] == 0 and s["other_misses"] > 0, s
    # the matcher's single-cursor fast path decided events of these streams
    # (mutated ones included) exactly as the full matcher fed alongside it
    t = TWIN.search(r.stdout)
    assert t and int(t.group(2)) > 0 and int(t.group(3)) == 0, r.stdout


def test_mutations_name_their_guards():
    _, s = run_match(record("last_batch_smaller"))
    # a batch dim changed alone misses on a shape relation; a batch symbol past
    # its (narrowed) recorded range is an extrapolated hit, a miss as NEED; a
    # Python number changed is still a hit, fed its new value
    assert s["mut_sym"] >= 1 and s["mut_seen"] >= 1 and s["mut_scalar"] >= 1, s
    _, s = run_match(record("seq_len_varies"))
    assert s["mut_trip"] >= 1 and s["mut_seen"] >= 1, s     # trip count past its range: the same


def test_char_lstm_replays_offline(lstm_db):
    r, s = run_match(lstm_db, record("last_batch_smaller"), JN_MATCH_BENCH="1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert s["hits"] == s["support"] == s["segments"] and s["programs"] == s["graphs"], s
    assert s["mut_trip"] >= 1 and s["mut_scalar"] >= 1 and s["mut_seen"] >= 1, s
    assert s["outputs_ok"] > 0, s                           # kept values map to KEEP outputs of their shape
    assert s["ns_per_event"] > 0


def test_explanations_read_well():
    r, _ = run_match(record("last_batch_smaller"), JN_MATCH_VERBOSE="1")
    # "symbol s0 (dim 0 of host input %1, first seen at ...last_batch_smaller.py:23 ...) was 17; recorded 4..16"
    assert re.search(r"symbol s\d+ \(dim 0 of host input %\d+, first seen at .*last_batch_smaller\.py:\d+.*\) "
                     r"was \d+; recorded \d+\.\.\d+", r.stderr), r.stderr
    assert "two state tensors of the recording are one tensor here" in r.stderr, r.stderr


def changed_script(tmp_path, name, old, new, *args):
    """tests/dynamic/<name>.py with `old` replaced by `new` (None: as it is),
    recorded with args; the store's path."""
    with open(os.path.join(ROOT, "tests", "dynamic", name + ".py")) as f:
        text = f.read()
    assert old is None or old in text
    path = tmp_path / (name + "_changed.py")
    path.write_text(text if old is None else text.replace(old, new))
    db = str(tmp_path / (name + "_changed.db"))
    r = janus("record", "--db", db, "--", sys.executable, str(path), *args, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    return db


def test_changed_batch_size_extrapolates_the_batch_symbol(tmp_path):
    # batches of 24, 24 and 4 where 16, 16, 16 and 4 were recorded: 24 is past
    # the batch symbol's recorded range 4..16, a SEEN guard: every segment hits
    # as extrapolated, naming it -- the first step too, a graph of its own
    # seen once, whose batch dim varied at the same place in the other steps
    other = changed_script(tmp_path, "last_batch_smaller", None, None, "--batch", "24")
    r, s = run_match(record("last_batch_smaller"), other, JN_MATCH_VERBOSE="1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert s["other_hits"] == 24 and s["other_misses"] == 0, s
    extra = re.findall(r"^other segment \d+: extrapolated: (.*)$", r.stderr, re.M)
    assert extra and all(re.search(r"symbol s\d+ \(dim 0 of host input %\d+, first seen at .*\) was 24; recorded "
                                   r"(4\.\.)?16", x) for x in extra), extra


def test_changed_sequence_lengths_below_the_range(tmp_path):
    # step 7 runs T = 2 where 3..8 was recorded: a loop that runs once (the
    # backward peels more iterations than it has) is another structure, a
    # miss; the other steps are as recorded and hit.  (Step 0 stays as it
    # was: Adam creates its state there, and a state tensor is bound by its
    # recorded id, which other temporaries in step 0 would shift.)
    old = "T = 3 + (step * 5) % (args.max_len - 2)"
    other = changed_script(tmp_path, "seq_len_varies", old, old + " if step != 7 else 2")
    r, s = run_match(record("seq_len_varies"), other, JN_MATCH_VERBOSE="1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert s["other_hits"] == 23 and s["other_misses"] == 1, s
    assert re.findall(r"^other segment 7: miss: ", r.stderr, re.M), r.stderr


def test_analyzer_fuzz_stores_replay(tmp_path):
    # the analyzer's fuzz (tests/c/test_analyzer.c) keeps its well-formed
    # random stores; each must replay offline: every captured segment hits
    test_analyzer = os.path.join(BUILD, "test_analyzer")
    if not os.path.exists(test_analyzer):
        pytest.skip("build/test_analyzer is not built")
    r = subprocess.run([test_analyzer], capture_output=True, text=True, timeout=600,
                       env=env(JN_AN_FUZZ_KEEP=str(tmp_path), JN_AN_FUZZ_ROUNDS="90"))
    assert r.returncode == 0, r.stdout + r.stderr
    stores = sorted(p for p in os.listdir(tmp_path) if p.endswith(".db"))
    assert len(stores) >= 30
    captured = 0
    for name in stores:
        r, s = run_match(str(tmp_path / name))
        assert r.returncode == 0, name + "\n" + r.stdout + r.stderr
        assert s["hits"] == s["support"] and s["programs"] == s["graphs"], (name, s)
        captured += s["hits"]
    assert captured > 0
