"""Replay on a step of many small ops, where per-op costs decide: janus
replay vs janus eager on a truncated-BPTT LSTM (batch 8, input 16, hidden
64, 20 time steps per training step, the hidden state carried across
steps with detach(): ~660 ops per step on [8 x 64] tensors).

The examples' steps are kernel-bound (GEMMs near the FMA peak), so
replay's capture and graph bookkeeping is hidden behind the kernels it
shares with eager.  Here it is not: per op, capture (pending tensors,
matcher), the segment's end (the pending list's references) and the
executor's per-node work cost more than eager's dispatch and tiny kernel,
so this figure shows that cost directly (below 1.0x: replay is slower).

Replay times each graph against eager in the run (JANUS_REPLAY_ADAPT, on
by default) and leaves one that is slower compiled to eager; the third
mode, "every graph", is replay with that off (JANUS_REPLAY_ADAPT=0), which
shows what the choice saves.

Records a short run, `janus optimize`s it, then runs the script under
`janus replay`, `janus replay` with JANUS_REPLAY_ADAPT=0 and `janus replay
--eager` in rotation, each as its own process; reports CPU time per step
(process time, what the script prints), the median of the back-to-back
runs' eager/replay ratios and their range, and checks that every mode
printed the same losses.

With --kernel-clock the children time their kernels too (JANUS_KERNEL_CLOCK)
and the host time per step outside kernels is printed per mode, with the
most replay could gain were its host time zero (eager's CPU per step over
replay's time inside kernels).

    JANUS_BUILD_DIR=build python3 benchmarks/bench_replay_small.py [--repeats 6] [--steps 400] [--kernel-clock]
"""
import argparse
import os
import re
import statistics
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# os.environ, not janus's settings table (janus._C._setting_value): JANUS_BUILD_DIR is a
# BUILD row, read before janus can be imported -- it says which build to use
BUILD = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(ROOT, "build")))
JANUS = os.path.join(BUILD, "janus")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay_env import child_env, print_kernel_split, run  # noqa: E402

SCRIPT = r'''
import sys, time
sys.path.insert(0, {python!r})
import janus, janus.nn as nn
janus.manual_seed(0)
cell = nn.LSTMCell(16, 64)
head = nn.Linear(64, 16)
opt = janus.optim.Adam(list(cell.parameters()) + list(head.parameters()), lr=1e-3)
data = janus.randn(400, 8, 16)
h, c = janus.zeros(8, 64), janus.zeros(8, 64)
steps, T = int(sys.argv[1]), 20
t0 = None
for s in range(steps):
    if s == 20:
        t0, k0 = time.process_time(), janus._C._kernel_clock()[0]
    i0 = (s * T) % 360
    h, c = h.detach(), c.detach()
    loss = 0
    for t in range(T):
        h, c = cell(data[i0 + t], (h, c))
        loss = loss + ((head(h) - data[i0 + t + 1]) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if s % 100 == 0:
        print(f"step {{s}} loss {{loss.item():.6f}}")
print(f"{{1e3 * (time.process_time() - t0) / (steps - 20):.4f}} ms CPU/step")
print(f"{{1e3 * (janus._C._kernel_clock()[0] - k0) / (steps - 20):.4f}} ms in kernels/step")  # JANUS_KERNEL_CLOCK
'''



def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=6)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--record-steps", type=int, default=60)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--kernel-clock", action="store_true",
                    help="also time the kernels (JANUS_KERNEL_CLOCK: ~50 ns a kernel call in every mode, ~1,100 "
                         "calls a step here) and print the host time per step outside them")
    args = ap.parse_args()
    if not os.path.exists(JANUS):
        sys.exit(f"no {JANUS}: build first (scripts/setup.sh)")
    e = child_env(BUILD, args.threads)
    if args.kernel_clock:
        e["JANUS_KERNEL_CLOCK"] = "1"
    with tempfile.TemporaryDirectory() as d:
        script, db = os.path.join(d, "tbptt.py"), os.path.join(d, "run.db")
        with open(script, "w") as f:
            f.write(SCRIPT.format(python=os.path.join(ROOT, "python")))
        run([JANUS, "record", "--db", db, "--", sys.executable, script, str(args.record_steps)], e)
        run([JANUS, "optimize", "--quiet", db], e)
        modes = ["replay", "every graph", "eager"]
        cpu = {m: [] for m in modes}
        kern = {m: [] for m in modes}
        losses, hit = {}, {}
        for r in range(args.repeats):
            for m in modes[r % 3:] + modes[:r % 3]:  # rotated: no mode always runs first
                cmd = [JANUS, "replay"] + (["--eager"] if m == "eager" else []) + ["--db", db, "--", sys.executable,
                                                                                   script, str(args.steps)]
                out = run(cmd, dict(e, JANUS_REPLAY_ADAPT="0" if m == "every graph" else "1"))
                cpu[m].append(float(re.search(r"([\d.]+) ms CPU/step", out).group(1)))
                kern[m].append(float(re.search(r"([\d.]+) ms in kernels/step", out).group(1)))
                losses[m] = re.findall(r"step \d+ loss \S+", out)
                h = re.search(r"([\d.]+)% hit rate", out)
                hit[m] = h.group(1) + "%" if h else "-"
    same = all(losses[m] == losses["eager"] for m in modes)
    print(f"truncated-BPTT LSTM (batch 8, hidden 64, 20 steps of time per step), {args.threads} thread(s), "
          f"{args.steps} steps, median of {args.repeats}")
    print(f"  CPU ms/step: replay {statistics.median(cpu['replay']):.3f} (hit rate {hit['replay']}), "
          f"every graph compiled {statistics.median(cpu['every graph']):.3f} (hit rate {hit['every graph']}), "
          f"eager {statistics.median(cpu['eager']):.3f}")
    for m in ("replay", "every graph"):
        ratios = [b / a for a, b in zip(cpu[m], cpu["eager"])]
        print(f"  eager/{m} CPU per step, per run of the rotation: {statistics.median(ratios):.2f}x "
              f"(runs {min(ratios):.2f}-{max(ratios):.2f}x; below 1: slower than eager)")
    if args.kernel_clock:
        print_kernel_split(cpu, kern, modes, "eager")
    print(f"  losses printed by every mode: {'identical' if same else 'DIFFER'}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
