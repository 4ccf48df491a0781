"""Autograd across replaced module calls: a replaced call's ops record into
one group node (runtime/autograd.c jn_ag_group_begin, replay/region.c)
whose backward runs the derivative table's formulas for its members in
eager's order.  tests/regions/autograd_regions.py runs eagerly and under
`janus replay` (its own recording, so the backward graphs are matched too);
losses, every step's gradients (exact bits), error texts and the final
weights must be identical, and the replayed run must show that the calls
were replaced and made ONE autograd node each, the group, whose outputs
keep eager's grad_fn names."""
import os
import re

import pytest

from dynamic_runs import ROOT, have_optimize
from test_regions import region, regions_of
from test_replay import record_and_optimize, run, same_weights, summary

pytestmark = pytest.mark.skipif(not have_optimize(), reason="janus optimize is not built")

SCRIPT = os.path.join(ROOT, "tests", "regions", "autograd_regions.py")


def nodes(stderr):
    """[(step, nodes made by the call, members of its output's group, grad_fn name)]."""
    return [(int(a), int(b), int(c), d) for a, b, c, d in re.findall(r"^NODES (\d+) (\d+) (\d+) (\S+)$", stderr, re.M)]


def eager_and_replay(mode, tmp, **extra):
    db = record_and_optimize(SCRIPT, [mode], tmp)
    re_, we = run(SCRIPT, [mode], tmp, "eager")
    assert re_.returncode == 0, re_.stderr[-3000:]
    rr, wr = run(SCRIPT, [mode], tmp, "replay", JANUS_REPLAY_DB=db, JANUS_REPLAY_ADAPT="0", **extra)
    assert rr.returncode == 0, rr.stderr[-3000:]
    assert rr.stdout == re_.stdout  # losses, gradients' bits, error texts, grad_fn names
    same_weights(we, wr)
    return rr, re_


@pytest.mark.parametrize("mode,cls,errors", [
    ("linear", "Linear.", None),
    ("lstmcell", "LSTMCell.", None),   # (h, c) carried; the last c's buffer stays empty
    ("twice", "Linear.", None),        # two groups add into one weight's gradient
    ("twocons", "Linear.", None),      # two consumers add into one group output
    ("gradin", "Linear.", None),       # a gradient leaves the group to x * w0, which x2 * x2 also feeds
    ("retain", "Linear.", None),       # retain_graph=True, then a second backward through the group
    ("twicebw", "Linear.", r"error Trying to backward through the graph a second time"),
    ("inplace", "Linear.", r"error one of the variables needed for gradient computation has been modified"),
    ("agrad", "Linear.", None),        # autograd.grad w.r.t. a parameter and a non-leaf input
])
def test_group_node_backward_equals_eager(mode, cls, errors, tmp_path):
    rr, re_ = eager_and_replay(mode, str(tmp_path))
    if errors:
        assert len(re.findall(errors, rr.stdout)) == 16, rr.stdout
    st = regions_of(rr.stderr)
    calls, replaced, refused = region(st, cls)
    assert replaced >= calls - 6 and not refused, st  # learning: a few calls run their Python
    ns = nodes(rr.stderr)
    assert ns, rr.stderr[-3000:]
    late = [n for n in ns if n[0] >= 4]  # learned by then: every call replaced
    assert late and all(made == 1 and members > 0 for _, made, members, _ in late), ns
    # the outputs' grad_fn names are eager's (stdout, compared above): the members' ops
    assert " fn " in rr.stdout


def test_group_node_matches_the_recorded_backward(tmp_path):
    # the backward ops a group dispatches are eager's, in eager's order: the recorded graphs
    # (forward and backward of each step) match, as they do with the group off (regions off)
    tmp = str(tmp_path)
    db = record_and_optimize(SCRIPT, ["lstmcell"], tmp)
    on, _ = run(SCRIPT, ["lstmcell"], tmp, "on", JANUS_REPLAY_DB=db, JANUS_REPLAY_ADAPT="0")
    off, _ = run(SCRIPT, ["lstmcell"], tmp, "off", JANUS_REPLAY_DB=db, JANUS_REPLAY_ADAPT="0",
                 JANUS_REPLAY_REGIONS="0")
    assert on.returncode == 0 and off.returncode == 0, (on.stderr[-3000:], off.stderr[-3000:])
    assert on.stdout == off.stdout
    a, b = summary(on.stderr), summary(off.stderr)
    assert a["fell_back"] <= b["fell_back"], (a, b)
