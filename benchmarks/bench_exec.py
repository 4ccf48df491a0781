"""The graph executor on the examples' training steps: for each example
(fashion_mlp, fashion_cnn, char_lstm, recorded for a few steps), `janus
optimize` builds the bundle, then `janus bench-exec` runs the main
training-step graph (of the graphs that write state, the one with the
most recorded support) in one
process, interleaved run by run, two ways: optimized (one arena, the
compiled kernels of the bundle) and op by op (JN_EX_EAGER: every node
through its eager kernel, every value its own buffer, freed after its last
use).  Reports the median times and their ratio, and the arena bytes vs
the op-by-op peak bytes (buffers rounded up to 64 bytes, as the plan
counts them) of the graph as recorded (`janus optimize --ir-out`, run op
by op once: the passes that reorder nodes for memory lower the optimized
graph's own op-by-op peak too, shown as "opt. peak").  Targets (issue 6):
>= 1.5x faster on the MLP step, arena <= 0.6x the eager peak.

    JANUS_BUILD_DIR=build python3 benchmarks/bench_exec.py [--repeats 30] [--threads 1 --clock cpu] [--keep]

OpenBLAS gets the kernel set a Python run of janus names for it
(OPENBLAS_CORETYPE, see janus/__init__.py).  Inputs are synthetic (random floats, zero indices) at the top of each
symbol's recorded range (the bottom when a scalar input tied to a symbol
only matches there): timing does not depend on the values.  --keep
records into $TMPDIR/janus-bench-exec and reuses the stores next time.
`--threads 1 --clock cpu` is the stable mode on a busy machine.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# os.environ, not janus's settings table (janus._C._setting_value): JANUS_BUILD_DIR is a
# BUILD row, read before janus can be imported -- it says which build to use
BUILD = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(ROOT, "build")))
JANUS = os.path.join(BUILD, "janus")

os.environ["JANUS_BUILD_DIR"] = BUILD
sys.path.insert(0, os.path.join(ROOT, "python"))
import janus  # noqa: E402

CORE = janus._core  # what janus/__init__.py picked for this CPU (None: OpenBLAS detects)

EXAMPLES = [  # (name, script, arguments for a short recording)
    ("mlp", "examples/fashion_mlp.py", ["--steps", "30"]),
    ("cnn", "examples/fashion_cnn.py", ["--steps", "12"]),
    ("lstm", "examples/char_lstm.py", ["--steps", "12"]),
]


def env():
    e = dict(os.environ)
    if CORE:  # the GEMM kernels a Python run gets (janus/__init__.py names them for OpenBLAS)
        e["OPENBLAS_CORETYPE"] = CORE
    e["JANUS_BUILD_DIR"] = BUILD
    e["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + e.get("PYTHONPATH", "")
    e.pop("JANUS_RECORD_DB", None)
    e.pop("JANUS_RECORD_RUN", None)
    return e


def check(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env(), cwd=ROOT)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-2000:]}")
    return r


def store(folder, name, script, args, keep):
    """The recorded, optimized store and the graphs as recorded (IR file)."""
    db = os.path.join(folder, f"{name}.db")
    ir = os.path.join(folder, f"{name}.ir")
    if keep and os.path.exists(db):
        check([JANUS, "optimize", "--quiet", "--ir-out", ir, db])
        return db, ir
    for p in (db, db + "-wal", db + "-shm"):
        if os.path.exists(p):
            os.remove(p)
    check([JANUS, "record", "--db", db, "--", sys.executable, os.path.join(ROOT, script)] + args)
    check([JANUS, "optimize", "--quiet", "--ir-out", ir, db])
    return db, ir


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--threads", type=int, default=0, help="thread pool size (0: the default)")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    ap.add_argument("--keep", action="store_true", help="keep and reuse the recorded stores")
    ap.add_argument("--json", action="store_true", help="print the results as one JSON list")
    a = ap.parse_args()
    if not os.path.exists(JANUS):
        sys.exit(f"{JANUS} not found: build first (cmake -S . -B build && cmake --build build)")
    if a.keep:
        folder = os.path.join(tempfile.gettempdir(), "janus-bench-exec")
        os.makedirs(folder, exist_ok=True)
    else:
        folder = tempfile.mkdtemp(prefix="janus-bench-exec-")
    results = []
    try:
        for name, script, args in EXAMPLES:
            db, ir = store(folder, name, script, args, a.keep)
            cmd = [JANUS, "bench-exec", "--repeats", str(a.repeats), "--clock", a.clock, "--reference", ir, db]
            if a.threads:
                cmd[2:2] = ["--threads", str(a.threads)]
            r = json.loads(check(cmd).stdout)
            r["example"] = name
            results.append(r)
    finally:
        if not a.keep:
            shutil.rmtree(folder, ignore_errors=True)
    if a.json:
        print(json.dumps(results, indent=1))
        return
    print(f"graph executor, median of {a.repeats} interleaved runs ({a.clock} clock"
          f"{', %d threads' % a.threads if a.threads else ''}); arena vs op-by-op peak bytes")
    print(f"{'example':8} {'graph':6} {'nodes':>5} {'kernels':>7} {'optimized':>10} {'op by op':>10} {'speedup':>8}"
          f" {'arena':>10} {'eager peak':>11} {'ratio':>6} {'opt. peak':>10}")
    for r in results:
        print(f"{r['example']:8} {r['graph']:6} {r['nodes']:5d} {r['kernels']:7d} {r['optimized_s'] * 1e3:8.2f}ms"
              f" {r['eager_s'] * 1e3:8.2f}ms {r['speedup']:7.2f}x {r['arena_bytes'] / 1e6:8.2f}MB"
              f" {r['reference_peak_bytes'] / 1e6:9.2f}MB {r['arena_ratio']:5.2f}x"
              f" {r['eager_peak_bytes'] / 1e6:8.2f}MB")
    mlp = next(r for r in results if r["example"] == "mlp")
    print(f"targets: MLP step >= 1.5x faster: {mlp['speedup']:.2f}x ({'met' if mlp['speedup'] >= 1.5 else 'not met'});"
          f" arena <= 0.6x eager peak: " + ", ".join(f"{r['example']} {r['arena_ratio']:.2f}x" for r in results))


if __name__ == "__main__":
    main()
