"""Steps/s of `janus replay` next to janus eager and PyTorch eager for the
three examples, in one run.

Per example (examples/fashion_mlp.py, fashion_cnn.py, char_lstm.py): record
a short run (`janus record`), `janus optimize` it, then run the example
longer, alternately under `janus replay` and `janus replay --eager` (the
same command with JANUS_REPLAY=0), each as its own process: steps/s is what
the example prints over its steps after --warmup (wall clock, its data
loader included), with the CPU time per step it prints for the same steps
(process time: what time-sharing on a busy machine does not inflate; the
two modes are also compared per back-to-back pair, median of the pairs'
ratios, which drifting machine speed affects less), the host time per
step outside kernels (CPU time per step minus the time inside kernels the
example prints with JANUS_KERNEL_CLOCK=1, set for every example process:
~50 ns a kernel call, alike in both modes), peak memory the example process's own ru_maxrss (written
at its exit by a sitecustomize the benchmark puts on its path), the hit
rate what the replay stored in the run.  PyTorch eager (and torch.compile
with --compile) is timed in this process on the same model, batch size and
thread count with benchmarks/bench_train.py's training step on one fixed
synthetic batch -- no data loader, so the replay/torch ratio is, if
anything, conservative -- next to janus eager timed the same way.  Medians
of --repeats; the order rotates between repeats so machine load hits all
alike.  Works before the replay core exists: the replay column then runs
eagerly and says so (hit rate "-").

    JANUS_BUILD_DIR=build python3 benchmarks/bench_replay.py [--threads 1] [--repeats 3]
        [--steps 300] [--record-steps 40] [--warmup 30] [--only mlp,cnn,lstm] [--compile] [--fixed]
"""
import argparse
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
# bench_train reads --threads from sys.argv before janus loads OpenBLAS.
import bench_train as bt  # noqa: E402
from replay_env import child_env  # noqa: E402

# os.environ, not janus's settings table (janus._C._setting_value): JANUS_BUILD_DIR is a
# BUILD row, read before janus can be imported -- it says which build to use
BUILD = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(ROOT, "build")))
JANUS = os.path.join(BUILD, "janus")

# (key, script, index of the same model in bench_train.workloads)
EXAMPLES = [("mlp", "fashion_mlp.py", 0), ("cnn", "fashion_cnn.py", 1), ("lstm", "char_lstm.py", 2)]
REPLAY_STEP = os.path.join(HERE, "replay_step.py")  # --fixed: bench_train's step as a script
RATE = re.compile(r"\(([\d.]+) steps/s over (\d+) steps(?:, ([\d.]+) ms CPU/step)?(?:, [\d.]+ ms in kernels/step)?\)")
KERNELS = re.compile(r"([\d.]+) ms in kernels/step")
QUALITY = re.compile(r"test accuracy ([\d.]+)%|validation ([\d.]+) bits/char")


# The example's own peak RSS, written at its exit by a sitecustomize module
# on its PYTHONPATH.  Not wait4's ru_maxrss: a process forked from this one
# inherits this process's high-water mark (Linux keeps it across exec), so
# every child would report at least this benchmark's own RSS -- torch and
# the datasets loaded here -- and replay and eager would look alike.  It
# reads JANUS_BENCH_PEAK_OUT (a BENCH row) with os.environ: it runs at
# interpreter start, before janus (and its settings table) is imported.
PEAK_SITE = """import atexit, os, resource
def _janus_bench_peak():
    path = os.environ.get("JANUS_BENCH_PEAK_OUT")
    if path:
        with open(path, "w") as f:
            f.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
atexit.register(_janus_bench_peak)
"""


def run(cmd, env):
    """(exit code, merged output, peak RSS in MB of the Python process the command runs, or NaN)."""
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "sitecustomize.py"), "w") as f:
            f.write(PEAK_SITE)
        env = dict(env)
        env["PYTHONPATH"] = d + os.pathsep + env.get("PYTHONPATH", "")
        env["JANUS_BENCH_PEAK_OUT"] = os.path.join(d, "peak")
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
        try:
            with open(env["JANUS_BENCH_PEAK_OUT"]) as f:
                mb = int(f.read()) / 1024.0
        except (OSError, ValueError):
            mb = float("nan")
    return p.returncode, p.stdout, mb


def counters(db, out):
    """(hits, misses, top miss) of the replay run named in janus's output; None without counters."""
    m = re.search(r"janus replay: run (\d+)", out)
    if not m:
        return None
    con = sqlite3.connect(db)
    try:
        h, mi = con.execute("SELECT coalesce(sum(hits),0), coalesce(sum(misses),0) FROM replay_graphs "
                            "WHERE run_id=?", (int(m.group(1)),)).fetchone()
        top = con.execute("SELECT reason || CASE WHEN site != '' THEN ' at ' || site ELSE '' END, sum(count) n "
                          "FROM replay_misses WHERE run_id=? "
                          "GROUP BY reason, site ORDER BY n DESC LIMIT 1", (int(m.group(1)),)).fetchone()
    finally:
        con.close()
    if h + mi == 0:
        return None
    return h, mi, (f"{top[1]}x {top[0]}" if top else "")


def script_cmd(script, extra):
    """The command line of an example (a file name under examples/) or of a path."""
    path = script if os.path.isabs(script) else os.path.join(ROOT, "examples", script)
    return [sys.executable, path] + list(extra)


def prepare(tmp, key, script, args, env, extra=()):
    """Record a short run and optimize it; the store's path, or None with the reason printed."""
    db = os.path.join(tmp, f"{key}.db")
    cmd = [JANUS, "record", "--db", db, "--"] + script_cmd(script, extra) + ["--steps", str(args.record_steps)]
    rc, out, _ = run(cmd, env)
    if rc != 0:
        print(f"  {key}: janus record failed ({rc}):\n{out[-2000:]}")
        return None
    rc, out, _ = run([JANUS, "optimize", db], env)
    if rc != 0:
        print(f"  {key}: janus optimize failed ({rc}); replay runs eagerly:\n{out[-1000:]}")
    return db


def script_rates(db, script, args, env, extra=()):
    """Median steps/s, peak MB and quality of replay and eager, plus the replay counters."""
    base = script_cmd(script, extra) + ["--steps", str(args.steps), "--warmup", str(args.warmup)]
    modes = {"replay": [JANUS, "replay", "--db", db, "--"] + base,
             "eager": [JANUS, "replay", "--db", db, "--eager", "--"] + base}
    res = {k: {"rate": [], "cpu": [], "host": [], "kern": [], "mb": [], "quality": None, "counters": None}
           for k in modes}
    order = list(modes)
    for r in range(args.repeats):
        for k in order[r % 2:] + order[:r % 2]:
            rc, out, mb = run(modes[k], env)
            m = RATE.search(out)
            if rc != 0 or not m:
                print(f"  {script} ({k}) failed ({rc}):\n{out[-2000:]}")
                return None
            res[k]["rate"].append(float(m.group(1)))
            res[k]["cpu"].append(float(m.group(3)) if m.group(3) else float("nan"))
            kc = KERNELS.search(out)  # JANUS_KERNEL_CLOCK (main): the host time is CPU minus kernels
            res[k]["kern"].append(float(kc.group(1)) if kc else float("nan"))
            res[k]["host"].append(res[k]["cpu"][-1] - res[k]["kern"][-1])
            res[k]["mb"].append(mb)
            q = QUALITY.search(out)
            if q:
                res[k]["quality"] = f"{q.group(1)}% acc" if q.group(1) else f"{q.group(2)} bits/char"
            if k == "replay":
                res[k]["counters"] = counters(db, out)
    # replay/eager per repeat (the two ran back to back), then the median:
    # steadier than a ratio of medians when the machine's speed drifts
    ratios = {f: [a / b for a, b in zip(res["replay"][f], res["eager"][f])] for f in ("rate", "cpu")}
    pair = {f: statistics.median(r) for f, r in ratios.items()}
    out = {k: dict(v, rate=statistics.median(v["rate"]), cpu=statistics.median(v["cpu"]), mb=statistics.median(v["mb"]),
                   host=statistics.median(v["host"]), kern=statistics.median(v["kern"]))
           for k, v in res.items()}
    out["pair"] = pair
    # the pairs' spread: how far one pair's ratio is from the median is
    # this machine's noise, which a ratio near 1 must be read against
    out["pair_range"] = {f: (min(r), max(r)) for f, r in ratios.items()}
    return out


def torch_rates(index, args):
    """Median steps/s of janus eager, torch eager and torch.compile on bench_train's step."""
    import numpy as np
    name, make, x, y = bt.workloads(np.random.default_rng(0))[index]
    steppers = [bt.make_step(bt.janus, bt.jnn, make, x, y)]
    labels = ["janus"]
    if bt.torch is not None:
        steppers.append(bt.make_step(bt.torch, bt.tnn, make, x, y))
        labels.append("torch")
        if args.compile:
            try:
                steppers.append(bt.make_step(bt.torch, bt.tnn, make, x, y, wrap=bt.torch.compile))
                labels.append("compile")
            except Exception as e:  # no compiler, unsupported op, ...: report, go on
                print(f"  torch.compile does not work here ({type(e).__name__}: {str(e)[:120]})")
    rates = bt.time_interleaved(steppers, args.steps // 3 or 1, args.repeats)
    return dict(zip(labels, rates))


def fmt(v, spec="8.1f"):
    return format(v, spec) if isinstance(v, (int, float)) and v == v else f"{'-':>{len(format(1.0, spec))}}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=300, help="steps of each timed example run")
    ap.add_argument("--warmup", type=int, default=30, help="steps left out of the example's steps/s")
    ap.add_argument("--record-steps", type=int, default=40, help="steps of the recorded run")
    ap.add_argument("--only", default="", help="comma-separated: mlp, cnn, lstm (default all)")
    ap.add_argument("--compile", action="store_true", help="also time torch.compile (slow to compile)")
    ap.add_argument("--keep", default="", help="keep the stores in this directory")
    ap.add_argument("--fixed", action="store_true",
                    help="also record, optimize and replay bench_train's fixed-batch step (replay_step.py): "
                    "replay and PyTorch on the same batch")
    args = ap.parse_args()
    if not os.path.exists(JANUS):
        sys.exit(f"{JANUS} not built; build first (cmake --build build)")
    bt.CLOCK = time.perf_counter
    bt.janus.set_num_threads(args.threads)
    if bt.torch is not None:
        bt.torch.set_num_threads(args.threads)
    env = child_env(BUILD, args.threads)
    env["JANUS_KERNEL_CLOCK"] = "1"  # the examples print their ms per step inside kernels
    keys = {k.strip() for k in args.only.split(",") if k.strip()}
    tmp_ctx = None if args.keep else tempfile.TemporaryDirectory(prefix="bench_replay_")
    tmp = args.keep or tmp_ctx.name
    os.makedirs(tmp, exist_ok=True)
    print(f"janus replay vs eager: {args.threads} thread(s), median of {args.repeats}; examples run "
          f"{args.steps} steps (first {args.warmup} untimed), recorded {args.record_steps}; wall clock")
    rows = []
    for key, script, index in EXAMPLES:
        if keys and key not in keys:
            continue
        db = prepare(tmp, key, script, args, env)
        if not db:
            continue
        s = script_rates(db, script, args, env)
        if not s:
            continue
        t = torch_rates(index, args)
        rows.append((script, s, t))
        rep, eag = s["replay"], s["eager"]
        c = rep["counters"]
        hit = f"{100.0 * c[0] / (c[0] + c[1]):5.1f}%" if c else "    -"
        print(f"\n{script}")
        print(f"  janus replay  {fmt(rep['rate'])} steps/s  hit rate {hit}  peak {rep['mb']:7.1f} MB  "
              f"{rep['quality'] or ''}" + ("" if c else "   (no counters: the replay ran eagerly)"))
        print(f"  janus eager   {fmt(eag['rate'])} steps/s                   peak {eag['mb']:7.1f} MB  "
              f"{eag['quality'] or ''}")
        print(f"  replay/eager  {rep['rate'] / eag['rate']:8.2f}x   peak memory replay/eager "
              f"{rep['mb'] / eag['mb']:5.2f}x (whole process: loading the data included)")
        lo, hi = s["pair_range"]["rate"]
        print(f"  per back-to-back pair: replay/eager steps/s {s['pair']['rate']:5.2f}x (pairs {lo:.2f}-{hi:.2f}x), "
              f"eager/replay CPU per step {1.0 / s['pair']['cpu']:5.2f}x "
              f"(CPU ms/step replay {fmt(rep['cpu'], '.3f')}, eager {fmt(eag['cpu'], '.3f')})")
        print(f"  host time outside kernels: replay {fmt(rep['host'], '.3f')} ms/step, eager {fmt(eag['host'], '.3f')} "
              f"(eager/replay {eag['host'] / rep['host']:5.2f}x); inside kernels replay {fmt(rep['kern'], '.3f')}, "
              f"eager {fmt(eag['kern'], '.3f')} ms/step; with no host time at all replay's own kernels allow "
              f"eager/replay {eag['cpu'] / rep['kern']:5.2f}x at most")
        if c and c[2]:
            print(f"  top miss      {c[2][:150]}")
        line = f"  fixed-batch step (bench_train): janus eager {fmt(t['janus'])}"
        if "torch" in t:
            line += f"  torch eager {fmt(t['torch'])}"
        if "compile" in t:
            line += f"  torch.compile {fmt(t['compile'])}"
        print(line + " steps/s")
        if "torch" in t:
            extra = f"  replay/torch.compile {rep['rate'] / t['compile']:5.2f}x" if "compile" in t else ""
            print(f"  replay/torch eager {rep['rate'] / t['torch']:5.2f}x  "
                  f"(janus eager step/torch {t['janus'] / t['torch']:5.2f}x){extra}", flush=True)
        if args.fixed:
            fx = ["--workload", str(index)]
            fdb = prepare(tmp, key + "_step", REPLAY_STEP, args, env, fx)
            f = script_rates(fdb, REPLAY_STEP, args, env, fx) if fdb else None
            if f:
                fc = f["replay"]["counters"]
                fhit = f"{100.0 * fc[0] / (fc[0] + fc[1]):5.1f}%" if fc else "    -"
                line = (f"  fixed-batch step replayed (replay_step.py): replay {fmt(f['replay']['rate'])}  eager "
                        f"{fmt(f['eager']['rate'])} steps/s  hit rate {fhit}  pair {f['pair']['rate']:5.2f}x  "
                        f"CPU eager/replay {1.0 / f['pair']['cpu']:5.2f}x")
                if "torch" in t:
                    line += f"  replay/torch eager {f['replay']['rate'] / t['torch']:5.2f}x"
                print(line, flush=True)
    if bt.torch is None:
        print("\n(PyTorch not installed: pip install torch to compare)")
    if tmp_ctx:
        tmp_ctx.cleanup()
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
