"""Per-op cost of lazy capture: an op that the followed graph expects next,
in `janus replay`, against the same op eager and against an empty C call.

The script runs a chain of OPS small elementwise ops per step on [8 x 32]
float32 tensors (mul, add, tanh, sub in turn: the number protocol and a
method, the two entry points of the glue Python between regions), then the
same chain over a tensor that requires grad (each op also records its
autograd node, as a loss's arithmetic does), then the backward of the
second and a sync (`.item()`).  Each step times the chains alone with
time.process_time (the graph run at the sync is outside it), and the same
loop shape calling a C function that does nothing with two arguments
(`operator.is_`): CPython's own cost of the call and the loop.  Per op:

  capture overhead = (replay chain - empty C loop) / OPS
  eager cost       = (eager chain  - empty C loop) / OPS

Records a short run, `janus optimize`s it, then runs `janus replay`
(JANUS_REPLAY_ADAPT=0: every graph that fits runs, so the chain is always
captured) and `janus replay --eager` in rotation, each its own process;
reports medians over steps and runs, and checks that both modes printed the
same numbers.  The whole step (the chains, the backward and the sync: the
graph run, the segment's end and its deferred slices included, the empty
loop not) is reported too, replay against eager.

    JANUS_BUILD_DIR=build python3 benchmarks/bench_capture.py [--repeats 5] [--steps 300]
"""
import argparse
import os
import re
import statistics
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# os.environ: JANUS_BUILD_DIR says which build to use, read before janus can be imported
BUILD = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(ROOT, "build")))
JANUS = os.path.join(BUILD, "janus")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay_env import child_env, run  # noqa: E402

OPS = 200
SCRIPT = r'''
import sys, time, operator, statistics
sys.path.insert(0, {python!r})
import janus
janus.manual_seed(0)
a = janus.randn(8, 32) * 0.1
b = janus.randn(8, 32) * 0.1
w = (janus.randn(8, 32) * 0.1).requires_grad_()
steps, n = int(sys.argv[1]), {ops} // 4
nop = operator.is_
chain, grad, empty, whole, sums = [], [], [], [], []
for s in range(steps):
    h = janus.ones(8, 32)
    t0 = time.process_time()
    for i in range(n):
        h = h * a
        h = h + b
        h = h.tanh()
        h = h - a
    t1 = time.process_time()
    g = janus.ones(8, 32)
    t2 = time.process_time()
    for i in range(n):
        g = g * w
        g = g + b
        g = g.tanh()
        g = g - a
    t3 = time.process_time()
    x = h
    for i in range(n):
        x = nop(x, a)
        x = nop(x, b)
        x = nop(x, a)
        x = nop(x, b)
    t4 = time.process_time()
    w.grad = None
    g.sum().backward()
    sums.append(h.sum().item() + w.grad.sum().item())
    t5 = time.process_time()
    if s >= 20:
        chain.append(t1 - t0)
        grad.append(t3 - t2)
        empty.append(t4 - t3)
        whole.append(t5 - t0 - (t4 - t3))
print("checksum %.9e" % sum(sums))
print("chain %.6f us/op, grad %.6f us/op, empty %.6f us/op, step %.3f us" % (
    1e6 * statistics.median(chain) / {ops}, 1e6 * statistics.median(grad) / {ops},
    1e6 * statistics.median(empty) / {ops}, 1e6 * statistics.median(whole)))
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--record-steps", type=int, default=30)
    args = ap.parse_args()
    if not os.path.exists(JANUS):
        sys.exit(f"no {JANUS}: build first (scripts/setup.sh)")
    e = child_env(BUILD, 1)
    with tempfile.TemporaryDirectory() as d:
        script, db = os.path.join(d, "chain.py"), os.path.join(d, "run.db")
        with open(script, "w") as f:
            f.write(SCRIPT.format(python=os.path.join(ROOT, "python"), ops=OPS))
        run([JANUS, "record", "--db", db, "--", sys.executable, script, str(args.record_steps)], e)
        run([JANUS, "optimize", "--quiet", db], e)
        modes = ["replay", "eager"]
        chain = {m: [] for m in modes}
        grad = {m: [] for m in modes}
        empty = {m: [] for m in modes}
        whole = {m: [] for m in modes}
        sums, hit = {}, {}
        for r in range(args.repeats):
            for m in modes[r % 2:] + modes[:r % 2]:
                cmd = [JANUS, "replay"] + (["--eager"] if m == "eager" else []) + ["--db", db, "--",
                                                                                   sys.executable, script,
                                                                                   str(args.steps)]
                out = run(cmd, dict(e, JANUS_REPLAY_ADAPT="0"))
                g = re.search(r"chain ([\d.]+) us/op, grad ([\d.]+) us/op, empty ([\d.]+) us/op, step ([\d.]+) us",
                              out)
                chain[m].append(float(g.group(1)))
                grad[m].append(float(g.group(2)))
                empty[m].append(float(g.group(3)))
                whole[m].append(float(g.group(4)))
                sums[m] = re.search(r"checksum (\S+)", out).group(1)
                h = re.search(r"([\d.]+)% hit rate", out)
                hit[m] = h.group(1) + "%" if h else "-"
    base = statistics.median(empty["replay"] + empty["eager"])
    print(f"{OPS} elementwise ops per chain on [8 x 32] float32, {args.steps} steps, median of {args.repeats} runs; "
          f"empty C call {base:.3f} us, replay hit rate {hit['replay']}")
    for name, d in (("no grad", chain), ("grad", grad)):
        med = {m: statistics.median(d[m]) for m in modes}
        print(f"  {name:8s} us per op: replay {med['replay']:.3f}, eager {med['eager']:.3f}; beyond the empty C call: "
              f"captured op {med['replay'] - base:.3f} us, eager op {med['eager'] - base:.3f} us")
    med = {m: statistics.median(whole[m]) for m in modes}
    print(f"  whole step (both chains, backward, sync; the graph run and the segment's end included): "
          f"replay {med['replay']:.1f} us, eager {med['eager']:.1f} us")
    same = sums["replay"] == sums["eager"]
    print(f"  checksums: {'identical' if same else 'DIFFER'} ({sums['replay']} / {sums['eager']})")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
