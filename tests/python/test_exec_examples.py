"""The graph executor on the graphs mined from the example recordings: the
MLP and LSTM examples are recorded for a few steps, `janus optimize` builds
their bundles (compiled kernels included), and `janus bench-exec --check`
runs every graph optimized (arena, compiled kernels, optimizer updates in
place) and op by op (every node its eager kernel, every value its own
buffer) on the same synthetic inputs: outputs and state writes must agree
(bitwise where the same kernels run, 1e-4 relative downstream of a compiled
reduction).  Then the timing mode runs on the MLP step and reports sane
figures.  Skips when janus was built without the executor."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(ROOT, "build")))
JANUS = os.path.join(BUILD, "janus")


def _env():
    e = dict(os.environ)
    e["JANUS_BUILD_DIR"] = BUILD
    e["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + e.get("PYTHONPATH", "")
    for k in ("JANUS_RECORD_DB", "JANUS_RECORD_RUN"):
        e.pop(k, None)
    return e


def janus(*args, timeout=300):
    return subprocess.run([JANUS, *args], capture_output=True, text=True, env=_env(), timeout=timeout, cwd=ROOT)


def _have_exec():
    if not os.path.exists(JANUS):
        return False
    r = janus("bench-exec", "/nonexistent/janus-probe.db")
    return "no graph executor" not in r.stderr and "unknown command" not in r.stderr


pytestmark = pytest.mark.skipif(not _have_exec(), reason="janus built without the graph executor")


def _bundle(tmp_path, script, steps):
    db = str(tmp_path / "run.db")
    r = janus("record", "--db", db, "--", sys.executable, os.path.join(ROOT, "examples", script), "--steps", str(steps))
    assert r.returncode == 0, r.stderr
    r = janus("optimize", "--quiet", db)
    if r.returncode != 0 and "C compiler" in r.stderr:
        r = janus("optimize", "--quiet", "--no-compile", db)
    assert r.returncode == 0, r.stderr
    return db


@pytest.mark.parametrize("script,steps", [("fashion_mlp.py", 6), ("char_lstm.py", 6)])
def test_examples_optimized_equal_op_by_op(tmp_path, script, steps):
    db = _bundle(tmp_path, script, steps)
    r = janus("bench-exec", "--check", db)
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads(r.stdout)
    assert res["mismatches"] == 0
    assert res["graphs"] >= 3 and res["checked"] >= res["graphs"] - 1
    assert res["outputs"] > 10 and res["bitwise"] > 0 and res["max_rel"] <= 1e-4


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
