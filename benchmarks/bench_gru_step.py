"""The compiled graph on small shapes: a GRU training step over [8 x 32]
tensors (24 time steps, two stacked GRU cells with a layer norm between
them, a linear head, mean-squared loss, Adam), the step issue 23 measures.

Records a short run, `janus optimize`s it (compiled kernels), then runs
`janus bench-exec` on the training-step graph: optimized (arena, compiled
kernels) and op by op (every node through its eager kernel), interleaved,
medians of CPU time.  Reports the graph's time per run and per node, which
is the executor's per-node cost plus the kernels at these sizes.

    JANUS_BUILD_DIR=build python3 benchmarks/bench_gru_step.py [--repeats 200]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# os.environ: JANUS_BUILD_DIR says which build to use, read before janus can be imported
BUILD = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(ROOT, "build")))
JANUS = os.path.join(BUILD, "janus")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay_env import child_env  # noqa: E402

SCRIPT = r'''
import sys
sys.path.insert(0, {python!r})
import janus, janus.nn as nn
janus.manual_seed(0)
B, H, T = 8, 32, 24
c1, c2 = nn.GRUCell(H, H), nn.GRUCell(H, H)
norm, head = nn.LayerNorm(H), nn.Linear(H, H)
params = list(c1.parameters()) + list(c2.parameters()) + list(norm.parameters()) + list(head.parameters())
opt = janus.optim.Adam(params, lr=1e-3)
data = janus.randn(T + 1, B, H)
for s in range(int(sys.argv[1])):
    h1, h2 = janus.zeros(B, H), janus.zeros(B, H)
    loss = 0
    for t in range(T):
        h1 = c1(data[t], h1)
        h2 = c2(norm(h1), h2)
        loss = loss + ((head(h2) - data[t + 1]) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if s % 5 == 0:
        print(f"step {{s}} loss {{loss.item():.6f}}")
'''


def run(cmd, e):
    p = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=1200)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=200)
    ap.add_argument("--record-steps", type=int, default=12)
    ap.add_argument("--db", help="record into / reuse this store (default: a temporary one)")
    args = ap.parse_args()
    if not os.path.exists(JANUS):
        sys.exit(f"no {JANUS}: build first (scripts/setup.sh)")
    e = child_env(BUILD, 1)
    with tempfile.TemporaryDirectory() as d:
        db = args.db or os.path.join(d, "run.db")
        if not os.path.exists(db):
            script = os.path.join(d, "gru.py")
            with open(script, "w") as f:
                f.write(SCRIPT.format(python=os.path.join(ROOT, "python")))
            run([JANUS, "record", "--db", db, "--", sys.executable, script, str(args.record_steps)], e)
        run([JANUS, "optimize", "--quiet", db], e)
        r = json.loads(run([JANUS, "bench-exec", "--threads", "1", "--clock", "cpu", "--repeats",
                            str(args.repeats), db], e))
    n = r["nodes"]
    print(f"GRU step (B 8, H 32, T 24, 2 cells, layer norm, Adam): graph {r['graph']}, {n} nodes, "
          f"{r['kernels']} kernels; CPU time, median of {args.repeats} interleaved runs")
    print(f"  optimized {r['optimized_s'] * 1e3:.3f} ms/run ({r['optimized_s'] * 1e6 / n:.3f} us/node), "
          f"op by op {r['eager_s'] * 1e3:.3f} ms/run ({r['eager_s'] * 1e6 / n:.3f} us/node), "
          f"speedup {r['speedup']:.2f}x")


if __name__ == "__main__":
    main()
