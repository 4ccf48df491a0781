"""Graph time per run and per node on small shapes, for several builds (or
settings) in one run: the truncated-BPTT LSTM step of bench_replay_small.py
and the GRU step of bench_gru_step.py, each recorded and optimized once per
configuration (a build's analyzer and passes make its own graphs), then
`janus bench-exec --clock cpu --optimized-only` on the step graph, the
configurations alternating in rounds (rotated, so load changes hit each);
medians of the rounds.

A configuration is LABEL=BUILD[:PYTHON_TREE][,VAR=VALUE...]: the build
folder, the source tree whose python/ the recorded script imports (default:
this checkout; a base build needs its own tree's Python), and settings for
its processes, e.g.

    python3 benchmarks/bench_graph_small.py base=/work/main/build:/tmp/base new=build \\
        "new-avx2=build,JANUS_GEMM_KERNEL=avx2,OPENBLAS_CORETYPE=Haswell" \\
        "new-blas=build,JANUS_GEMM_KERNEL=openblas,OPENBLAS_CORETYPE=Haswell" [--rounds 5] [--repeats 100]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bench_gru_step  # noqa: E402
import bench_replay_small  # noqa: E402
from replay_env import child_env  # noqa: E402

STEPS = {"tbptt": (bench_replay_small.SCRIPT, 30), "gru": (bench_gru_step.SCRIPT, 12)}


def parse(spec):
    label, rest = spec.split("=", 1)
    parts = rest.split(",")
    build, _, tree = parts[0].partition(":")
    extra = dict(p.split("=", 1) for p in parts[1:])
    return {"label": label, "build": os.path.abspath(build), "tree": os.path.abspath(tree or ROOT), "env": extra}


def run(cmd, e):
    p = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=1200)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("configs", nargs="+")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=100)
    args = ap.parse_args()
    cfgs = [parse(s) for s in args.configs]
    with tempfile.TemporaryDirectory() as d:
        dbs = {}
        for c in cfgs:
            e = dict(child_env(c["build"], 1), **c["env"])
            janus = os.path.join(c["build"], "janus")
            for name, (src, steps) in STEPS.items():
                script = os.path.join(d, f"{c['label']}-{name}.py")
                with open(script, "w") as f:
                    f.write(src.format(python=os.path.join(c["tree"], "python")))
                db = os.path.join(d, f"{c['label']}-{name}.db")
                run([janus, "record", "--db", db, "--", sys.executable, script, str(steps)], e)
                run([janus, "optimize", "--quiet", db], e)
                dbs[c["label"], name] = db
        res = {(c["label"], n): [] for c in cfgs for n in STEPS}
        info = {}
        for r in range(args.rounds):
            for c in cfgs[r % len(cfgs):] + cfgs[:r % len(cfgs)]:
                e = dict(child_env(c["build"], 1), **c["env"])
                for name in STEPS:
                    out = json.loads(run([os.path.join(c["build"], "janus"), "bench-exec", "--threads", "1", "--clock",
                                          "cpu", "--optimized-only", "--repeats", str(args.repeats),
                                          dbs[c["label"], name]], e))
                    res[c["label"], name].append(out["optimized_s"])
                    info[c["label"], name] = (out["nodes"], out["kernels"], out["graph"])
    print(f"graph time on small shapes, one thread, CPU time, median of {args.rounds} rounds x {args.repeats} runs")
    for name in STEPS:
        base = None
        for c in cfgs:
            n, k, g = info[c["label"], name]
            t = statistics.median(res[c["label"], name])
            base = base or t
            print(f"  {name:6} {c['label']:>12}: graph {g}, {n} nodes, {k} kernels: {t * 1e3:.3f} ms/run, "
                  f"{t * 1e6 / n:.3f} us/node, {t / base:.2f}x the first")


if __name__ == "__main__":
    main()
