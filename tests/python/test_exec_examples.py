"""The graph executor on the graphs mined from the example recordings: the
MLP, CNN and LSTM examples are recorded for a few steps, `janus optimize`
builds their bundles (compiled kernels included) and writes the graphs as
recorded (--ir-out), and `janus bench-exec --check` runs every graph
optimized (arena, compiled kernels, optimizer updates in place) and op by
op (every node its eager kernel, every value its own buffer) on the same
synthetic inputs, once against the optimized graph itself and once against
the graph as recorded (before the passes, so the rewrites that reorder
nodes for memory -- poolmask, hoist, remat -- are checked too): outputs
and state writes must agree (bitwise where the same kernels run, 1e-4
relative downstream of a compiled reduction; the CNN step bitwise).  Then the timing mode runs on the MLP step and reports sane
figures.  Skips when janus was built without the executor."""
import json
import os
import sys

import pytest

from dynamic_runs import JANUS, ROOT  # noqa: E402
from dynamic_runs import janus as _janus  # noqa: E402


def janus(*args, timeout=300):
    return _janus(*args, timeout=timeout, cwd=ROOT)


def _have_exec():
    if not os.path.exists(JANUS):
        return False
    r = janus("bench-exec", "/nonexistent/janus-probe.db")
    return "no graph executor" not in r.stderr and "unknown command" not in r.stderr


pytestmark = pytest.mark.skipif(not _have_exec(), reason="janus built without the graph executor")


def _bundle(tmp_path, script, steps, ir=None):
    db = str(tmp_path / "run.db")
    r = janus("record", "--db", db, "--", sys.executable, os.path.join(ROOT, "examples", script), "--steps", str(steps))
    assert r.returncode == 0, r.stderr
    extra = ["--ir-out", ir] if ir else []
    r = janus("optimize", "--quiet", *extra, db)
    if r.returncode != 0 and "C compiler" in r.stderr:
        r = janus("optimize", "--quiet", "--no-compile", *extra, db)
    assert r.returncode == 0, r.stderr
    return db


@pytest.mark.parametrize("script,steps", [("fashion_mlp.py", 6), ("fashion_cnn.py", 4), ("char_lstm.py", 6)])
def test_examples_optimized_equal_op_by_op(tmp_path, script, steps):
    ir = str(tmp_path / "recorded.ir")
    db = _bundle(tmp_path, script, steps, ir)
    for ref in ([], ["--reference", ir]):
        r = janus("bench-exec", "--check", *ref, db)
        assert r.returncode == 0, r.stdout + r.stderr
        res = json.loads(r.stdout)
        assert res["mismatches"] == 0 and res["reference"] == (1 if ref else 0)
        # every graph runs on synthetic inputs (arange(T + 1) of a Python
        # number gets the end its symbols imply, indices are zeros)
        assert res["graphs"] >= 3 and res["checked"] == res["graphs"] and res["skipped"] == 0, r.stderr
        assert res["outputs"] > 10 and res["bitwise"] > 0 and res["max_rel"] <= 1e-4
        if script == "fashion_cnn.py":  # poolmask's rewrite is exact: every output bitwise
            assert res["bitwise"] == res["outputs"], res


def test_bench_cnn_arena_vs_recorded_peak(tmp_path):
    """The CNN step's arena against the op-by-op peak of the graph as recorded
    (issue 6's target, <= 0.6x): poolmask, hoist and remat make it reachable."""
    ir = str(tmp_path / "recorded.ir")
    db = _bundle(tmp_path, "fashion_cnn.py", 4, ir)
    r = janus("bench-exec", "--repeats", "1", "--threads", "1", "--clock", "cpu", "--reference", ir, db)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["reference_peak_bytes"] > 0
    assert res["arena_ratio"] == pytest.approx(res["arena_bytes"] / res["reference_peak_bytes"])
    assert res["arena_ratio"] <= 0.6, res
    r = janus("bench-exec", "--reference", str(tmp_path / "missing.ir"), db)
    assert r.returncode == 1 and "cannot open reference" in r.stderr and "--ir-out" in r.stderr


def test_bench_mlp_step(tmp_path):
    db = _bundle(tmp_path, "fashion_mlp.py", 6)
    r = janus("bench-exec", "--repeats", "3", "--threads", "1", "--clock", "cpu", db)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    # the training step: the forward GEMMs' epilogues and the elementwise tails fused, parameters in place
    assert res["nodes"] > 30 and res["kernels_gemm"] >= 1 and res["kernels_ew"] >= 1
    assert res["optimized_s"] > 0 and res["eager_s"] > 0
    assert 0 < res["arena_bytes"] < res["eager_peak_bytes"]
    assert res["eager_calls_optimized"] < res["eager_calls_op_by_op"]
    r = janus("bench-exec", "--graph", "nope", db)
    assert r.returncode == 1 and "no graph nope" in r.stderr
    r = janus("bench-exec", db, "--bogus")
    assert r.returncode == 2 and "usage" in r.stderr
