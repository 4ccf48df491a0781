"""pow by a scalar exponent in the compiled graph computes what eager does
(k_ewmath.h's jn_ew_fpow, called by eager's loops and by the generated
kernels): a float32 and a float64 script raise tensors to the exponents
PyTorch special-cases (2, 3, 0.5, -0.5, -1, -2, 1, 0) and to two it does not
(1.5, -3), forward and backward (the derivative is a pow by e - 1), is
recorded, optimized and run by `janus replay --eager` and `janus replay`:
every printed loss (as a hex float) and a hash of every forward result and
gradient are the same, and the steps ran as compiled graphs.  That eager
pow matches PyTorch bit for bit is test_ops_elementwise.py's
test_pow_scalar_exponents_as_pytorch."""
import re
import sys

import pytest

from dynamic_runs import janus, have_optimize

pytestmark = pytest.mark.skipif(not have_optimize(), reason="janus optimize is not built")

SCRIPT = r'''
import hashlib
import struct

import janus

janus.manual_seed(0)
EXPS = [2, 3, 0.5, -0.5, -1, -2, 1, 0, 1.5, -3]
for dt, code in ((janus.float32, "f"), (janus.float64, "d")):
    w = (janus.randn(257, 33, dtype=dt) * 3).requires_grad_()
    x = janus.randn(257, 33, dtype=dt)
    for step in range(6):
        a = (w * x).abs() + 0.25
        ys = [a ** e for e in EXPS] + [(w - x) ** 2, (w * 0.5) ** 3]
        loss = sum(y.mean() for y in ys)
        w.grad = None
        loss.backward()
        h = hashlib.sha256()
        for t in ys + [w.grad]:
            v = t.detach().reshape(-1).tolist()
            h.update(struct.pack("%d%s" % (len(v), code), *v))
        print(step, loss.item().hex(), h.hexdigest()[:16])
        with janus.no_grad():
            w -= 0.01 * w.grad
'''

HITS = re.compile(r"\((\d+) of (\d+) segments ran as graphs")


def test_pow_scalar_exponents_replay_bitwise(tmp_path):
    script = tmp_path / "pow_exps.py"
    script.write_text(SCRIPT)
    db = str(tmp_path / "run.db")
    cmd = ["--", sys.executable, str(script)]
    r = janus("record", "--db", db, *cmd, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    r = janus("optimize", db, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert re.search(r"[1-9]\d* kernels? compiled", r.stdout), r.stdout
    eager = janus("replay", "--db", db, "--eager", *cmd, timeout=600)
    assert eager.returncode == 0, eager.stderr[-3000:]
    replay = janus("replay", "--db", db, *cmd, timeout=600)
    assert replay.returncode == 0, replay.stderr[-3000:]
    assert len(eager.stdout.splitlines()) == 12, eager.stdout
    assert replay.stdout == eager.stdout
    m = HITS.search(replay.stderr)
    assert m and int(m.group(1)) >= 8, replay.stderr[-3000:]
