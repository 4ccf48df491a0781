"""Where a replayed step's time goes, per phase, with and without the
backward skip (replay/backward.c): bench_replay_small.py's truncated-BPTT
LSTM (20 time steps a step, ~660 ops), timed inside the script -- forward
(captured), zero_grad + loss.backward(), and Optimizer.step() (the step's
graph runs at its end) -- in microseconds per step (wall clock, medians of
the steps after the first 20), and CPU ms per step.

Modes, each its own process, rotated round by round (no mode always runs
first): `base` (the build in --base, e.g. /work/main/build: replay with
JANUS_REPLAY_ADAPT=0), `skip` (this build, the same), `noskip` (this build,
JANUS_REPLAY_BACKWARD_SKIP=0) and `eager` (this build, `janus replay
--eager`).  Each build records and optimizes its own store.  Prints per
mode the median over rounds of each figure, and per round the paired
ratios base/skip and noskip/skip of CPU per step; checks that every mode
printed the same losses.

    JANUS_BUILD_DIR=build python3 benchmarks/bench_backward_skip.py --base /work/main/build [--rounds 5] [--steps 400]
"""
import argparse
import os
import re
import statistics
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# os.environ, not janus's settings table: JANUS_BUILD_DIR is a BUILD row, read before janus can be imported
BUILD = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(ROOT, "build")))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay_env import child_env, run  # noqa: E402

SCRIPT = r'''
import statistics, sys, time
sys.path.insert(0, sys.argv[2])  # the tree of the build that runs it
import janus, janus.nn as nn
janus.manual_seed(0)
cell = nn.LSTMCell(16, 64)
head = nn.Linear(64, 16)
opt = janus.optim.Adam(list(cell.parameters()) + list(head.parameters()), lr=1e-3)
data = janus.randn(400, 8, 16)
h, c = janus.zeros(8, 64), janus.zeros(8, 64)
steps, T = int(sys.argv[1]), 20
ph = {"fwd": [], "bwd": [], "opt": []}
c0 = None
for s in range(steps):
    if s == 20:
        c0 = time.process_time()
    t0 = time.perf_counter()
    i0 = (s * T) % 360
    h, c = h.detach(), c.detach()
    loss = 0
    for t in range(T):
        h, c = cell(data[i0 + t], (h, c))
        loss = loss + ((head(h) - data[i0 + t + 1]) ** 2).mean()
    t1 = time.perf_counter()
    opt.zero_grad()
    loss.backward()
    t2 = time.perf_counter()
    opt.step()
    t3 = time.perf_counter()
    if s >= 20:
        ph["fwd"].append(t1 - t0), ph["bwd"].append(t2 - t1), ph["opt"].append(t3 - t2)
    if s % 100 == 0:
        print(f"step {s} loss {loss.item():.6f}")
print("phases " + " ".join(f"{k} {1e6 * statistics.median(v):.1f}" for k, v in ph.items()))
print(f"{1e3 * (time.process_time() - c0) / (steps - 20):.4f} ms CPU/step")
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="the base build folder (its janus and python/)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--record-steps", type=int, default=60)
    args = ap.parse_args()
    builds = {"base": os.path.abspath(args.base), "new": BUILD}
    modes = ["base", "skip", "noskip", "eager"]
    fig = {m: {k: [] for k in ("fwd", "bwd", "opt", "cpu")} for m in modes}
    losses, ratios = {}, {"base/skip": [], "noskip/skip": []}
    with tempfile.TemporaryDirectory() as d:
        script = os.path.join(d, "tbptt.py")
        with open(script, "w") as f:
            f.write(SCRIPT)
        db = {}
        py = {b: os.path.join(os.path.dirname(path), "python") for b, path in builds.items()}
        for b, path in builds.items():
            e = child_env(path, 1)
            db[b] = os.path.join(d, b + ".db")
            run([os.path.join(path, "janus"), "record", "--db", db[b], "--", sys.executable, script,
                 str(args.record_steps), py[b]], e)
            run([os.path.join(path, "janus"), "optimize", "--quiet", db[b]], e)
        for r in range(args.rounds):
            cpu = {}
            for m in modes[r % 4:] + modes[:r % 4]:
                b = "base" if m == "base" else "new"
                e = child_env(builds[b], 1)
                e["JANUS_REPLAY_ADAPT"] = "0"
                e["JANUS_REPLAY_BACKWARD_SKIP"] = "0" if m == "noskip" else "1"
                cmd = [os.path.join(builds[b], "janus"), "replay"] + (["--eager"] if m == "eager" else []) + \
                    ["--db", db[b], "--", sys.executable, script, str(args.steps), py[b]]
                out = run(cmd, e)
                p = re.search(r"phases fwd ([\d.]+) bwd ([\d.]+) opt ([\d.]+)", out)
                cpu[m] = float(re.search(r"([\d.]+) ms CPU/step", out).group(1))
                for k, v in zip(("fwd", "bwd", "opt"), p.groups()):
                    fig[m][k].append(float(v))
                fig[m]["cpu"].append(cpu[m])
                losses[m] = re.findall(r"step \d+ loss \S+", out)
            ratios["base/skip"].append(cpu["base"] / cpu["skip"])
            ratios["noskip/skip"].append(cpu["noskip"] / cpu["skip"])
    print(f"truncated-BPTT LSTM (bench_replay_small.py's), 1 thread, {args.steps} steps, {args.rounds} rounds, "
          f"base {builds['base']}, new {BUILD}")
    print(f"  {'mode':8} {'fwd us':>8} {'backward us':>12} {'opt+graph us':>13} {'CPU ms/step':>12}")
    for m in modes:
        md = {k: statistics.median(v) for k, v in fig[m].items()}
        print(f"  {m:8} {md['fwd']:8.1f} {md['bwd']:12.1f} {md['opt']:13.1f} {md['cpu']:12.4f}")
    for k, v in ratios.items():
        print(f"  CPU per step {k}: {statistics.median(v):.3f}x (rounds {min(v):.3f}-{max(v):.3f})")
    for m in ("skip", "noskip", "base"):
        print(f"  eager/{m} CPU per step: {statistics.median(fig['eager']['cpu']) / statistics.median(fig[m]['cpu']):.2f}x")
    same = all(losses[m] == losses["eager"] for m in modes)
    print(f"  losses printed by every mode: {'identical' if same else 'DIFFER'}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
