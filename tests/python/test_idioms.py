"""Training-loop idioms (tests/idioms/train_idioms.py): recorded for 20
steps and replayed for 80, every segment runs as a graph and the printed
lines and final weights equal eager's bitwise.  A mode that misses names a
hole in capture or generalization (a view made without an op, a write that
computed its target first, a value guarded that should be bound)."""
import os
import sys

import pytest

from dynamic_runs import ROOT, have_optimize
from test_replay import record_and_optimize, run, same_weights, summary

pytestmark = pytest.mark.skipif(not have_optimize(), reason="janus optimize is not built")

SCRIPT = os.path.join(ROOT, "tests", "idioms", "train_idioms.py")
sys.path.insert(0, os.path.dirname(SCRIPT))
from train_idioms import MODES  # noqa: E402


@pytest.mark.parametrize("mode", MODES)
def test_idiom_replays_whole(mode, tmp_path):
    tmp = str(tmp_path)
    db = record_and_optimize(SCRIPT, [mode, "20"], tmp)
    re_, we = run(SCRIPT, [mode, "80"], tmp, "eager")
    rr, wr = run(SCRIPT, [mode, "80"], tmp, "replay", JANUS_REPLAY_DB=db, JANUS_REPLAY_ADAPT="0")
    assert re_.returncode == 0 and rr.returncode == 0, rr.stderr[-3000:]
    assert rr.stdout == re_.stdout and rr.stdout.count(" loss ") == 80
    if mode != "manual":  # no optimizer steps there for the probe to find: the weights are printed
        same_weights(we, wr)
    s = summary(rr.stderr)
    assert s["fell_back"] == 0 and s["segments"] >= 80, s
