"""Batch matching of replaced regions' ops (replay/region.c rp_region_feed,
JANUS_REPLAY_REGION_BATCH): what leaving out the checks a template proves
saves, against matching its ops with every check, and against janus eager.

Three workloads, each recorded, `janus optimize`d, then run as separate
processes in rotation: janus eager (`janus replay --eager`), replay with
the batch path on and replay with it off (JANUS_REPLAY_REGION_BATCH=0),
both replays with JANUS_REPLAY_ADAPT=0 (every graph that fits runs, so the
two differ only in the batch path):

- mod19x20: a module of 19 elementwise ops on [4 x 16] (bench_regions.py's
  MOD10 net) called 20 times in a chain per step, SGD: 380 replaced ops a
  step, most of the step's forward;
- tbptt: the truncated-BPTT LSTM of bench_replay_small.py (LSTMCell and
  Linear regions, a few ops each);
- word_lm: the word-level LSTM LM of bench_word_lm.py (nn.LSTM, Embedding,
  Linear; clip_grad_norm_).

Reports CPU ms per step (medians), the per-rotation ratios off/on and
eager/on, and that every mode printed the same losses.

    JANUS_BUILD_DIR=build python3 benchmarks/bench_region_batch.py [--repeats 5] [--only mod19x20]
"""
import argparse
import os
import re
import statistics
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# os.environ: JANUS_BUILD_DIR is read before janus can be imported (a BUILD row of the settings)
BUILD = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(ROOT, "build")))
JANUS = os.path.join(BUILD, "janus")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay_env import child_env, run  # noqa: E402
from bench_replay_small import SCRIPT as TBPTT  # noqa: E402
from bench_word_lm import SCRIPT as WORD_LM  # noqa: E402

MOD19X20 = r'''
import sys, time
sys.path.insert(0, {python!r})
import janus
import janus.nn as nn
janus.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        for i in range(10):
            setattr(self, f"w{{i}}", nn.Parameter(janus.randn(16)))
        self.a, self.b, self.c, self.d, self.e = 0.5, 1.5, 0.25, 2.0, 0.1

    def forward(self, x):
        h = x * self.a + self.b
        h = (h * self.w0 + self.w1).tanh() * self.c
        h = (h * self.w2 + self.w3).tanh() + self.d
        h = (h * self.w4 + self.w5).tanh() * self.e
        h = (h * self.w6 + self.w7).tanh()
        return h * self.w8 + self.w9


net = Net()
x = janus.randn(4, 16)
opt = janus.optim.SGD(net.parameters(), lr=1e-3)
steps = int(sys.argv[1])
t0 = None
for s in range(steps):
    if s == 20:
        t0 = time.process_time()
    opt.zero_grad()
    h = x
    for _ in range(20):
        h = net(h)
    loss = h.sum()
    loss.backward()
    opt.step()
    if s % 100 == 0:
        print(f"step {{s}} loss {{loss.item():.6f}}")
print(f"{{1e3 * (time.process_time() - t0) / (steps - 20):.4f}} ms CPU/step")
'''

WORKLOADS = {"mod19x20": (MOD19X20, 300), "tbptt": (TBPTT, 400), "word_lm": (WORD_LM, 300)}
MODES = ["eager", "batch on", "batch off"]


def bench(name, repeats, d, e):
    text, steps = WORKLOADS[name]
    script, db = os.path.join(d, f"{name}.py"), os.path.join(d, f"{name}.db")
    with open(script, "w") as f:
        f.write(text.format(python=os.path.join(ROOT, "python")) if "{python" in text else text.format())
    run([JANUS, "record", "--db", db, "--", sys.executable, script, "60"], e)
    run([JANUS, "optimize", "--quiet", db], e)
    cpu, losses = {m: [] for m in MODES}, {}
    for r in range(repeats):
        for m in MODES[r % 3:] + MODES[:r % 3]:  # rotated: no mode always runs first
            cmd = [JANUS, "replay"] + (["--eager"] if m == "eager" else []) + ["--db", db, "--", sys.executable,
                                                                               script, str(steps)]
            out = run(cmd, dict(e, JANUS_REPLAY_ADAPT="0", JANUS_REPLAY_REGION_BATCH="0" if m == "batch off" else "1"))
            cpu[m].append(float(re.search(r"([\d.]+) ms CPU/step", out).group(1)))
            losses[m] = re.findall(r"step \d+ loss \S+", out)
    same = all(losses[m] == losses["eager"] for m in MODES)
    med = {m: statistics.median(cpu[m]) for m in MODES}
    off = [b / a for a, b in zip(cpu["batch on"], cpu["batch off"])]
    eag = [b / a for a, b in zip(cpu["batch on"], cpu["eager"])]
    print(f"{name}: {steps} steps, median of {repeats}; CPU ms/step: eager {med['eager']:.3f}, batch on "
          f"{med['batch on']:.3f}, batch off {med['batch off']:.3f}")
    print(f"  off/on per rotation {statistics.median(off):.3f}x (runs {min(off):.3f}-{max(off):.3f}); eager/on "
          f"{statistics.median(eag):.3f}x (runs {min(eag):.3f}-{max(eag):.3f}); losses "
          f"{'identical' if same else 'DIFFER'}")
    return same


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--only", choices=sorted(WORKLOADS), action="append")
    args = ap.parse_args()
    if not os.path.exists(JANUS):
        sys.exit(f"no {JANUS}: build first (scripts/setup.sh)")
    e = child_env(BUILD, args.threads)
    # the word LM imports torch: the janus command serves it as janus
    e["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "python")] + [e.get("PYTHONPATH", "")])
    ok = True
    with tempfile.TemporaryDirectory() as d:
        for name in args.only or list(WORKLOADS):
            ok &= bench(name, args.repeats, d, e)
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
