"""Capture's cheap paths (docs/ARCHITECTURE.md 5.4) keep replay's results
eager's: deferred slices that share the pending storages only the pending
list reached (no private copy) and copy the ones a graph keeps, read steps
later, print what eager prints, bitwise."""
import os
import subprocess
import sys

import pytest

from dynamic_runs import ROOT, env, have_optimize, janus

pytestmark = pytest.mark.skipif(not have_optimize(), reason="the analyzer is not built")

CHAIN = r'''
import sys
sys.path.insert(0, {python!r})
import janus
from janus import _C
janus.manual_seed(0)
a = janus.randn(8, 32) * 0.1
b = janus.randn(8, 32) * 0.1
read = sys.argv[1] == "read"
kept = []
for s in range(30):
    h = janus.ones(8, 32)
    for i in range(12):
        h = h * a
        h = h + b
        h = h.tanh()
        h = h - a
        if i == 5:
            mid = h
    # a sync: the graph keeps mid (read in the next segment), not h (the
    # recording dropped it before the sync; this run may keep it)
    v = h.sum()
    if read and s % 4 == 1:
        kept.append((h, mid))
    del h
    print(s, v.item())
    print(mid.sum().item())
    mid.mul_(0.5)  # after the slice was made: its recomputation must not write mid
for h, mid in kept:  # each computed by its deferred slice: mid's op into a private copy,
    print(h.tolist()[3][:5])  # the chain after it into its own pending storages (no copies)
    print(mid.sum().item())
if _C._rp_active():
    print("sliced", _C._rp_stats()["sliced"], file=sys.stderr)
'''


def test_deferred_slices_read_later_match_eager(tmp_path):
    script = os.path.join(str(tmp_path), "chain.py")
    with open(script, "w") as f:
        f.write(CHAIN.format(python=os.path.join(ROOT, "python")))
    db = os.path.join(str(tmp_path), "run.db")
    r = janus("record", "--db", db, "--", sys.executable, script, "hold", timeout=300)
    assert r.returncode == 0, r.stderr
    assert janus("optimize", db, timeout=300).returncode == 0
    e = subprocess.run([sys.executable, script, "read"], capture_output=True, text=True, env=env(), timeout=300)
    rr = subprocess.run([sys.executable, script, "read"], capture_output=True, text=True,
                        env=env(JANUS_REPLAY_DB=db), timeout=300)
    assert e.returncode == 0 and rr.returncode == 0, rr.stderr[-3000:]
    assert rr.stdout == e.stdout and rr.stdout.count("\n") == 76, rr.stdout[-2000:]
    sliced = [int(x.split()[1]) for x in rr.stderr.splitlines() if x.startswith("sliced ")]
    assert sliced and sliced[0] >= 5, rr.stderr[-2000:]  # the graphs of the steps that kept h deferred it
