"""Float attributes that never varied share one scalar input per call site
(analyzer/generalize.c): the autograd engine's alpha = 1 of every gradient
accumulation at the backward call, and an optimizer's hyperparameters
over its parameters.  Checked here on an LSTM cell trained by SGD with two
param groups:
  - the graph has one scalar input per (site, op, attribute, value), so cse
    merges the two bias gradients' equal accumulations over the time steps
    (one chain of adds over [4H] instead of two) -- the duplicate work the
    truncated-BPTT benchmark's graph did per time step;
  - replayed with the values recorded, every step runs as a graph, bit for
    bit eager's; replayed where one group's lr drifts from the other's after
    a few steps (equal throughout the recording, so one shared input), those
    steps miss and run eagerly, still eager's bits: sharing never computes
    with a value the live program did not give."""
import os
import re

import pytest

from dynamic_runs import have_optimize, janus
from test_replay import check_replay

pytestmark = pytest.mark.skipif(not have_optimize(), reason="janus optimize is not built")

SCRIPT = """
import sys
import janus, janus.nn as nn
janus.manual_seed(0)
B, I, H, T = 3, 5, 6, 4
cell = nn.LSTMCell(I, H)
p = list(cell.parameters())  # W_ih, W_hh, b_ih, b_hh
opt = janus.optim.SGD([{"params": p[:2]}, {"params": p[2:]}], lr=0.05)
data = janus.randn(T, B, I)
drift = sys.argv[1] == "drift"
for s in range(int(sys.argv[2])):
    if drift and s == 4:
        opt.param_groups[1]["lr"] = 0.02
    h, c = janus.zeros(B, H), janus.zeros(B, H)
    loss = 0
    for t in range(T):
        h, c = cell(data[t], (h, c))
        loss = loss + (h ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {s} loss {loss.item():.9g}")
"""


@pytest.fixture
def script(tmp_path):
    path = os.path.join(str(tmp_path), "lstm_sgd.py")
    with open(path, "w") as f:
        f.write(SCRIPT)
    return path


def _nodes_after_dce2(db):
    r = janus("optimize", db, extra_env={"JANUS_DUMP_IR": "dce2"}, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    graphs = re.split(r"^# after dce2 \(graph \S+\)$", r.stderr, flags=re.M)[1:]
    assert graphs, r.stderr[-3000:]
    return graphs


def test_bias_gradient_accumulations_merge(script, tmp_path):
    db, s = check_replay(script, ["same", "8"], ["same", "8"], str(tmp_path), min_hits=6)
    assert s["fell_back"] <= 2, s  # the first steps (state being made) may differ
    H4 = 24
    for g in _nodes_after_dce2(db):
        if "lstm_cell_backward(" not in g:
            continue
        # the bias gradients: sum(dgates, dims=[0]) per time step, accumulated
        # over the T steps at the backward call -- once for b_ih and b_hh, but
        # for the last add (both .grad tensors are Python's: two outputs)
        site = re.search(r"= lstm_cell_backward\(.*(@\d+)", g).group(1)
        lines = [x for x in g.splitlines() if f": f32[{H4}] {site} " in x]
        sums = [x for x in lines if "= sum(" in x]
        adds = [x for x in lines if "= add(" in x]
        assert len(sums) == 4, sums
        assert len(adds) == 4, adds  # 6 when each add had its own alpha input
        # one scalar input for the engine's alpha = 1 of those adds
        alphas = {re.search(r"alpha=(%\d+)", x).group(1) for x in adds}
        assert len(alphas) == 1, adds
        break
    else:
        pytest.fail("no graph with the LSTM's backward")


def test_values_that_drift_apart_miss(script, tmp_path):
    # recorded with both groups' lr equal (one shared input); from step 4 the
    # replayed program gives them different values: those steps must not run
    # the graph (and the printed losses and weights stay eager's, bit for bit)
    _, s = check_replay(script, ["same", "8"], ["drift", "8"], str(tmp_path), min_hits=2)
    assert s["fell_back"] >= 4, s
