"""Batch matching of a replaced region's ops (replay/region.c rp_region_feed,
jn_rp_match_feed_at): once a template's ops were matched at consecutive
tokens of a graph, its later runs from that token are matched with the
checks the template proves (its own dataflow, its fixed attributes) left
out.  tests/regions/batch_regions.py runs eagerly and under `janus replay`
with the batch path on (the default) and off (JANUS_REPLAY_REGION_BATCH=0):
losses, every step's gradients (exact bits) and the final weights must be
eager's in both, both replays must make the same decisions (hits, misses
and their reasons), and the counters must show that the batch path ran
(on) or did not (off).  swap / swapshape make the template's ops miss in
their middle (an argument read after several matched ops is another
tensor than the graph's): the miss and its fallback are today's."""
import os

import pytest

from dynamic_runs import ROOT, have_optimize
from test_regions import region, regions_of
from test_replay import record_and_optimize, run, same_weights, summary

pytestmark = pytest.mark.skipif(not have_optimize(), reason="janus optimize is not built")

SCRIPT = os.path.join(ROOT, "tests", "regions", "batch_regions.py")


def three_runs(mode, args, tmp):
    db = record_and_optimize(SCRIPT, [mode], tmp)  # recorded without the swap
    re_, we = run(SCRIPT, [mode, *args], tmp, "eager")
    assert re_.returncode == 0, re_.stderr[-3000:]
    out = {}
    for b in ("1", "0"):
        rr, wr = run(SCRIPT, [mode, *args], tmp, "batch" + b, JANUS_REPLAY_DB=db, JANUS_REPLAY_ADAPT="0",
                     JANUS_REPLAY_REGION_BATCH=b)
        assert rr.returncode == 0, rr.stderr[-3000:]
        assert rr.stdout == re_.stdout  # losses and gradients, bit for bit
        same_weights(we, wr)
        out[b] = (summary(rr.stderr), regions_of(rr.stderr))
    (s_on, r_on), (s_off, r_off) = out["1"], out["0"]
    assert s_on == s_off  # the same hits, fallbacks and top miss
    assert r_off["batch_ops"] == 0 and r_off["batch_plans"] == 0, r_off
    assert r_on["batch_plans"] > 0, r_on
    assert {k: v for k, v in r_on.items() if not k.startswith("batch")} == \
        {k: v for k, v in r_off.items() if not k.startswith("batch")}
    return s_on, r_on


def test_batch_path_equals_op_by_op_and_eager(tmp_path):
    s, st = three_runs("chain", [], str(tmp_path))
    calls, replaced, refused = region(st, "Block.")
    assert calls == 32 and replaced >= 28 and not refused, st
    assert s["fell_back"] == 0, s
    # ops 1..11 of the second call of each step past learning are batch-matched (the first call is
    # followed by both parities' graphs, which diverge only after it: no single cursor, op by op)
    assert st["batch_ops"] >= 11 * 12, st


@pytest.mark.parametrize("mode", ["swap", "swapshape"])
def test_miss_in_the_middle_of_a_region_falls_back(mode, tmp_path):
    s, st = three_runs(mode, ["10"], str(tmp_path))
    calls, replaced, refused = region(st, "Block.")
    assert replaced >= 24 and not refused, st
    # steps 10..15 miss at the add that reads the swapped argument, inside the module's ops
    assert s["fell_back"] == 6, s
    assert "batch_regions.py:45" in s["top_miss"] and "another tensor than the graph's" in s["top_miss"], s
    assert st["batch_ops"] > 0, st
