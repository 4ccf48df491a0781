"""Compiled reductions replay bitwise (codegen/emit_c.c sums in
runtime/k_reduce.c's order): a float64 script -- `(x * w).sum()` and
`.mean()` over 33, 1 000, 1 001, 40 001 and 100 003 values (odd sizes,
one and many 32-lane blocks, ranges the eager reduction splits over its
thread pool) and a small float64 MLP trained with SGD + momentum -- is
recorded, optimized and run by `janus replay --eager` and `janus replay`
on a pool of 3 threads: every printed loss (as a hex float) and a hash of
every final weight are the same, and the training steps ran as compiled
graphs.  Before the reductions followed eager's order, the float64 losses
differed in the last bits from step 0 on."""
import os
import re
import sys

import pytest

from dynamic_runs import janus, have_optimize

pytestmark = pytest.mark.skipif(not have_optimize(), reason="janus optimize is not built")

SCRIPT = r'''
import hashlib
import struct

import janus
import janus.nn as nn

janus.manual_seed(0)
SIZES = [33, 1000, 1001, 40001, 100003]
xs = [janus.randn(n, dtype=janus.float64) for n in SIZES]
ws = [(janus.randn(n, dtype=janus.float64) * 0.01).requires_grad_() for n in SIZES]
model = nn.Sequential(nn.Linear(7, 33), nn.Tanh(), nn.Linear(33, 1)).double()
X = janus.randn(257, 7, dtype=janus.float64)
Y = X.sin().sum(1, keepdim=True)
params = list(model.parameters()) + ws
opt = janus.optim.SGD(params, lr=0.01, momentum=0.9)
for step in range(12):
    loss = ((model(X) - Y) ** 2).mean()
    for x, w in zip(xs, ws):
        loss = loss + ((x * w).sum() ** 2) * 1e-3 + (x * w).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, loss.item().hex())
h = hashlib.sha256()
for p in params:
    v = p.detach().reshape(-1).tolist()
    h.update(struct.pack("%dd" % len(v), *v))
print("weights", h.hexdigest())
'''

HITS = re.compile(r"\((\d+) of (\d+) segments ran as graphs")


def test_float64_reductions_replay_bitwise(tmp_path):
    script = tmp_path / "f64_reduce.py"
    script.write_text(SCRIPT)
    db = str(tmp_path / "run.db")
    threads = {"JANUS_NUM_THREADS": "3"}
    cmd = ["--", sys.executable, str(script)]
    r = janus("record", "--db", db, *cmd, timeout=600, extra_env=threads)
    assert r.returncode == 0, r.stderr[-3000:]
    r = janus("optimize", db, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert re.search(r"[1-9]\d* kernels? compiled", r.stdout), r.stdout
    eager = janus("replay", "--db", db, "--eager", *cmd, timeout=600, extra_env=threads)
    assert eager.returncode == 0, eager.stderr[-3000:]
    replay = janus("replay", "--db", db, *cmd, timeout=600, extra_env=threads)
    assert replay.returncode == 0, replay.stderr[-3000:]
    lines = eager.stdout.splitlines()
    assert len(lines) == 13 and lines[-1].startswith("weights "), eager.stdout
    assert replay.stdout == eager.stdout
    m = HITS.search(replay.stderr)
    assert m and int(m.group(1)) >= 12, replay.stderr[-3000:]
