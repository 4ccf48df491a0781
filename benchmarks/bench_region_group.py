"""The autograd group node of a replaced module call (runtime/autograd.c,
replay/region.c): two builds side by side, in rotation, medians.

- the replaced call's cost: bench_regions.py's module (10 parameters, five
  elementwise layers, 22 ops that record autograd) called 20000 times under
  `janus replay`, best of 5 (grad mode on: each call records its nodes);
- backward: the truncated-BPTT LSTM of bench_replay_small.py (20 LSTMCell and
  Linear calls per step, every one replaced) under `janus replay`
  (JANUS_REPLAY_ADAPT=0), the median wall time of loss.backward() over the
  steady steps, and the CPU time per step.

Each build records and optimizes its own store.  Prints per build the
medians over the repeats and the ratios new/base per rotation (median).

    python3 benchmarks/bench_region_group.py BASE_BUILD NEW_BUILD [--repeats 5]
"""
import argparse
import os
import re
import statistics
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_regions import MOD10  # noqa: E402
from bench_replay_small import SCRIPT as TBPTT  # noqa: E402
from replay_env import child_env, run  # noqa: E402

# the TBPTT script with loss.backward() timed (wall, perf_counter) after step 20
TBPTT_BW = TBPTT.replace("    loss.backward()\n",
                         "    _a = time.perf_counter()\n    loss.backward()\n"
                         "    if s >= 20:\n        BW.append(time.perf_counter() - _a)\n").replace(
    "t0 = None\n", "t0 = None\nBW = []\n") + \
    "BW.sort()\nprint(f'backward {{1e3 * BW[len(BW) // 2]:.4f}} ms')\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base")
    ap.add_argument("new")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=200)
    args = ap.parse_args()
    builds = {"base": os.path.abspath(args.base), "new": os.path.abspath(args.new)}
    res = {k: {"call_us": [], "bw_ms": [], "step_ms": []} for k in builds}
    with tempfile.TemporaryDirectory() as d:
        py = os.path.join(ROOT, "python")
        mod, tb = os.path.join(d, "mod10.py"), os.path.join(d, "tbptt.py")
        with open(mod, "w") as f:
            f.write(MOD10.format(python=py))
        with open(tb, "w") as f:
            f.write(TBPTT_BW.format(python=py))
        envs, dbs = {}, {}
        for k, b in builds.items():
            e = envs[k] = child_env(b, 1)
            j = os.path.join(b, "janus")
            for name, script, steps in (("mod", mod, "30"), ("tb", tb, "60")):
                db = dbs[k, name] = os.path.join(d, f"{k}-{name}.db")
                run([j, "record", "--db", db, "--", sys.executable, script, steps], e)
                run([j, "optimize", "--quiet", db], e)
        for _ in range(args.repeats):
            for k, b in builds.items():
                j, e = os.path.join(b, "janus"), dict(envs[k], JANUS_REPLAY_ADAPT="0")
                out = run([j, "replay", "--db", dbs[k, "mod"], "--", sys.executable, mod, "100", "guard"], e)
                res[k]["call_us"].append(float(re.search(r"replaced call ([\d.]+) us", out).group(1)))
                out = run([j, "replay", "--db", dbs[k, "tb"], "--", sys.executable, tb, str(args.steps)], e)
                res[k]["bw_ms"].append(float(re.search(r"backward ([\d.]+) ms", out).group(1)))
                res[k]["step_ms"].append(float(re.search(r"([\d.]+) ms CPU/step", out).group(1)))
    for m, unit in (("call_us", "us per replaced call (mod10)"), ("bw_ms", "ms per backward (TBPTT, median)"),
                    ("step_ms", "ms CPU per step (TBPTT)")):
        b, n = res["base"][m], res["new"][m]
        ratios = [y / x for x, y in zip(b, n)]
        print(f"{unit}: base {statistics.median(b):.3f}, new {statistics.median(n):.3f}; new/base median "
              f"{statistics.median(ratios):.3f} (range {min(ratios):.3f}-{max(ratios):.3f}, {len(ratios)} rotations)")


if __name__ == "__main__":
    main()
