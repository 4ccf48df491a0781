"""Training steps/s of the three examples on the GPU, four ways in one run:
janus replay, janus eager, PyTorch eager and
torch.compile(mode="reduce-overhead"), same models, batch sizes and data
(benchmarks/bench_train.py's fixed-batch Adam step), medians of repeats
that rotate between the columns, and the ratios the GPU issue sets targets
for (replay >= 1.5x PyTorch eager and >= torch.compile on the MLP and
char_lstm; LeNet within 0.9x of torch.compile).

Columns:
  janus replay   `janus record` a short run of gpu_step.py on the device,
                 `janus optimize --target cuda:sm_XX`, then each repeat one
                 `janus replay -- python gpu_step.py` process (its own
                 steps/s after warm-up; hit rate from the store).  A replay
                 that hit no graph ran eagerly: reported "not available"
                 with its reason, not as a replay figure.
  janus eager    in process, model and batch on the device.
  torch eager    in process.
  torch.compile  in process, mode="reduce-overhead" (CUDA graphs).
Each column that cannot run -- no GPU, janus without a CUDA backend
(janus.cuda.is_available() False), no PyTorch, a compile that fails or
passes its time limit -- is reported "not available" with the reason and
the others still run; the run fits --budget seconds (what is left when a
workload starts is shared out; compiles get --compile-timeout each).

    JANUS_BUILD_DIR=build python3 benchmarks/gpu/bench_gpu.py [--only mlp,cnn,lstm]
        [--repeats 5] [--steps 100] [--budget 280] [--json FILE] [--skip COLUMNS] [--device cpu]

--device cpu runs the same pipeline on the CPU (replay with a cpu bundle):
a check of this script that runs anywhere, not a GPU figure.
"""
import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
import bench_train as bt  # noqa: E402  (janus, torch, the models and the step)
import bench_replay as br  # noqa: E402  (janus CLI runs, replay counters)
from replay_env import child_env  # noqa: E402

COLUMNS = ("janus replay", "janus eager", "torch eager", "torch.compile")
DEVICE = "cuda"
KEYS = {"mlp": 0, "cnn": 1, "lstm": 2}
EAGERLY = re.compile(r"janus replay: running eagerly: (.*)")


class Timeout(Exception):
    pass


def limited(seconds, fn):
    """fn() or Timeout after `seconds` (SIGALRM: the main thread only)."""
    def alarm(signum, frame):
        raise Timeout(f"passed its {seconds:.0f} s limit")
    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, max(1.0, seconds))
    try:
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def why(e):
    s = " ".join(str(e).split())
    return f"{type(e).__name__}: {s[:160]}"


def availability(device):
    """(device arch 'sm_XX' or None, {column: reason it cannot run})."""
    out = {}
    torch = bt.torch
    arch = None
    if torch is None:
        out["torch eager"] = out["torch.compile"] = "PyTorch not installed"
    if device == "cpu":  # a check of this script's pipeline, not a GPU figure
        if not os.path.exists(br.JANUS):
            out["janus replay"] = f"{br.JANUS} not built"
        return "cpu", out
    if torch is not None and not torch.cuda.is_available():
        out["torch eager"] = out["torch.compile"] = "torch.cuda.is_available() is False (no GPU)"
    elif torch is not None:
        major, minor = torch.cuda.get_device_capability()
        arch = f"sm_{major}{minor}"
    try:
        ok = bt.janus.cuda.is_available()
        reason = "janus.cuda.is_available() is False (no GPU, or this janus build has no CUDA backend)"
    except Exception as e:  # a half-built backend: report, go on
        ok, reason = False, f"janus.cuda.is_available() failed: {why(e)}"
    if not ok:
        out["janus eager"] = out["janus replay"] = reason
    elif not os.path.exists(br.JANUS):
        out["janus replay"] = f"{br.JANUS} not built"
    elif arch is None:
        out["janus replay"] = "no device architecture (needs torch.cuda to read it)"
    return arch, out


def prepare_replay(tmp, key, arch, env, limit):
    """Record and optimize gpu_step.py for the device: (store, None) or (None, reason)."""
    db = os.path.join(tmp, f"{key}.db")
    target = "cpu" if arch == "cpu" else f"cuda:{arch}"
    script = [sys.executable, os.path.join(HERE, "gpu_step.py"), "--only", key, "--steps", "20", "--warmup", "0",
              "--device", DEVICE]
    for what, cmd in (("janus record", [br.JANUS, "record", "--db", db, "--"] + script),
                      (f"janus optimize --target {target}", [br.JANUS, "optimize", "--target", target, db])):
        try:
            p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=limit)
        except subprocess.TimeoutExpired:
            return None, f"{what} passed its {limit:.0f} s limit"
        if p.returncode != 0:
            last = (p.stdout.strip().splitlines() or ["(no output)"])[-1]
            return None, f"{what} failed ({p.returncode}): {last[:160]}"
    return db, None


def replay_rate(db, key, args, env, limit):
    """One `janus replay` run: steps/s, or raises RuntimeError with the reason."""
    cmd = [br.JANUS, "replay", "--db", db, "--", sys.executable, os.path.join(HERE, "gpu_step.py"),
           "--only", key, "--steps", str(args.replay_steps), "--warmup", "20", "--device", DEVICE]
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"janus replay passed its {limit:.0f} s limit")
    m = br.RATE.search(p.stdout)
    if p.returncode != 0 or not m:
        last = (p.stdout.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"janus replay failed ({p.returncode}): {last[:160]}")
    c = br.counters(db, p.stdout)
    summary = "; ".join(ln.strip()[len("janus replay: "):] for ln in p.stdout.splitlines()
                        if ln.startswith("janus replay: ") and ("segments" in ln or "CUDA Graphs" in ln))
    if not c or c[0] == 0:
        e = EAGERLY.search(p.stdout)
        raise RuntimeError("the replay hit no graph and ran eagerly" + (f": {e.group(1)[:160]}" if e else
                           f" ({c[2][:120]})" if c and c[2] else ""))
    return float(m.group(1)), c, summary


def bench_workload(key, arch, unavailable, args, env, tmp, deadline):
    """{column: {"steps_per_s": median or None, "note": str}} for one example."""
    import numpy as np
    name, make, x, y = bt.workloads(np.random.default_rng(0))[KEYS[key]]
    res = {c: {"steps_per_s": None, "note": unavailable.get(c, "")} for c in COLUMNS}
    measures = {}  # column -> () -> steps/s

    def left():
        return deadline - time.monotonic()

    def setup(col, fn, limit):
        if res[col]["note"]:
            return
        if left() < 10:
            res[col]["note"] = "not run: time budget spent"
            return
        try:
            measures[col] = limited(min(limit, left()), fn)
        except Exception as e:
            res[col]["note"] = why(e)

    def in_process(step):
        return lambda: bt.rate(step, args.steps)

    setup("janus eager", lambda: in_process(bt.make_step(bt.janus, bt.jnn, make, x, y, device=DEVICE)), 60)
    setup("torch eager", lambda: in_process(bt.make_step(bt.torch, bt.tnn, make, x, y, device=DEVICE)), 60)

    # replay is set up before torch.compile: a long compile must not starve
    # the column this benchmark is for
    def replay():
        db, reason = prepare_replay(tmp, key, arch, env, min(120.0, left()))
        if reason:
            raise RuntimeError(reason)
        rate, c, summary = replay_rate(db, key, args, env, min(120.0, left()))  # checks that it replays at all
        res["janus replay"]["hits"] = [c[0], c[1]]  # of that first (untimed) run
        res["janus replay"]["summary"] = summary  # its hit rate and CUDA Graph counts
        return lambda: replay_rate(db, key, args, env, min(120.0, left()))[0]
    setup("janus replay", replay, 300)

    def compiled():
        torch = bt.torch
        step = bt.make_step(torch, bt.tnn, make, x, y, device=DEVICE,
                            wrap=lambda m: torch.compile(m, mode="reduce-overhead"))

        def marked():  # a new CUDA-graph step: the last step's outputs may be overwritten
            if DEVICE == "cuda":
                torch.compiler.cudagraph_mark_step_begin()
            return step()
        for _ in range(3):
            marked().item()
        return in_process(marked)
    setup("torch.compile", compiled, args.compile_timeout)

    # repeats rotate the order so that machine load hits every column alike
    cols = [c for c in COLUMNS if c in measures]
    rates = {c: [] for c in cols}
    for r in range(args.repeats):
        if not cols:
            break
        for c in cols[r % len(cols):] + cols[:r % len(cols)]:
            if left() < 5 or res[c]["note"]:
                continue
            try:
                rates[c].append(limited(min(120.0, left()), measures[c]))
            except Exception as e:
                res[c]["note"] = f"failed while timed: {why(e)}"
    for c in cols:
        if rates[c] and not res[c]["note"]:
            res[c]["steps_per_s"] = statistics.median(rates[c])
            res[c]["repeats"] = len(rates[c])
        elif not res[c]["note"]:
            res[c]["note"] = "not run: time budget spent"
    return name, res


def ratio(res, a, b):
    x, y = res[a]["steps_per_s"], res[b]["steps_per_s"]
    return x / y if x and y else None


# (workload key, numerator, denominator, at least): the GPU issue's targets
TARGETS = [("mlp", "janus replay", "torch eager", 1.5), ("mlp", "janus replay", "torch.compile", 1.0),
           ("lstm", "janus replay", "torch eager", 1.5), ("lstm", "janus replay", "torch.compile", 1.0),
           ("cnn", "janus replay", "torch.compile", 0.9)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="comma-separated: mlp, cnn, lstm (default all)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=100, help="steps per timed repeat (in process)")
    ap.add_argument("--replay-steps", type=int, default=200, help="timed steps of each replay process")
    ap.add_argument("--budget", type=float, default=280.0, help="seconds for the whole run")
    ap.add_argument("--compile-timeout", type=float, default=120.0, help="seconds for one torch.compile warm-up")
    ap.add_argument("--json", default="", help="also write the results here")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                    help="cpu: the same pipeline on the CPU (a check of this script, not a GPU figure)")
    ap.add_argument("--skip", default="", help="comma-separated columns not to run, e.g. torch.compile")
    args = ap.parse_args(argv)
    global DEVICE
    DEVICE = args.device
    t_start = time.monotonic()
    keys = [k.strip() for k in args.only.split(",") if k.strip()] or list(KEYS)
    bad = [k for k in keys if k not in KEYS]
    if bad:
        ap.error(f"--only: unknown workload(s) {', '.join(bad)} (mlp, cnn, lstm)")
    bt.CLOCK = time.perf_counter
    arch, unavailable = availability(args.device)
    for c in (c.strip() for c in args.skip.split(",") if c.strip()):
        if c not in COLUMNS:
            ap.error(f"--skip: unknown column {c} ({', '.join(COLUMNS)})")
        unavailable[c] = "--skip"  # the user's choice is named over any other reason
    dev = ("the CPU (--device cpu)" if arch == "cpu" else bt.torch.cuda.get_device_name()) if arch else "no CUDA device"
    print(f"Training steps/s on {dev}{f' ({arch})' if arch and arch != 'cpu' else ''}: median of {args.repeats} repeats "
          f"({args.steps} steps in process, {args.replay_steps} per replay process), wall clock")
    for c in COLUMNS:
        if c in unavailable:
            print(f"  {c}: not available -- {unavailable[c]}")
    env = child_env(br.BUILD, os.cpu_count() or 1)
    results = []
    with tempfile.TemporaryDirectory(prefix="bench_gpu_") as tmp:
        for i, key in enumerate(keys):
            # what is left is shared by the workloads still to run
            share = (args.budget - (time.monotonic() - t_start)) / (len(keys) - i)
            if len(unavailable) == len(COLUMNS):
                name = bt.workloads(__import__("numpy").random.default_rng(0))[KEYS[key]][0]
                res = {c: {"steps_per_s": None, "note": unavailable[c]} for c in COLUMNS}
            else:
                name, res = bench_workload(key, arch, unavailable, args, env, tmp, time.monotonic() + share)
            results.append({"key": key, "name": name, "columns": res})
    print(f"\n{'workload':32s}" + "".join(f"{c:>15s}" for c in COLUMNS) +
          f"{'replay/torch':>14s}{'replay/compile':>16s}{'eager/torch':>13s}")
    for r in results:
        res = r["columns"]
        cells = "".join(f"{res[c]['steps_per_s']:15.1f}" if res[c]["steps_per_s"] else f"{'n/a':>15s}"
                        for c in COLUMNS)
        rs = [ratio(res, "janus replay", "torch eager"), ratio(res, "janus replay", "torch.compile"),
              ratio(res, "janus eager", "torch eager")]
        r["ratios"] = dict(zip(("replay/torch", "replay/compile", "eager/torch"), rs))
        print(f"{r['name']:32s}{cells}" + "".join(f"{x:{w}.2f}x" if x else f"{'-':>{w + 1}s}"
                                                   for x, w in zip(rs, (13, 15, 12))))
    sums = [(r["name"], r["columns"]["janus replay"].get("summary")) for r in results]
    if any(x for _, x in sums):
        print("\njanus replay, first (untimed) run of each:")
        for name, x in sums:
            if x:
                print(f"  {name}: {x}")
    notes = [(r["name"], c, r["columns"][c]["note"]) for r in results for c in COLUMNS
             if r["columns"][c]["note"] and c not in unavailable]
    if notes:
        print("\nnot available:")
        for name, c, note in notes:
            print(f"  {name}, {c}: {note}")
    print("\ntargets (GPU issue):")
    targets = []
    for key, a, b, at_least in TARGETS:
        r = next((r for r in results if r["key"] == key), None)
        x = ratio(r["columns"], a, b) if r else None
        verdict = "not measured" if x is None else ("met" if x >= at_least else "NOT met")
        targets.append({"workload": key, "ratio": f"{a}/{b}", "at_least": at_least, "value": x, "verdict": verdict})
        print(f"  {key:5s} {a}/{b} >= {at_least:.1f}x: " + (f"{x:.2f}x " if x else "") + verdict)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": dev, "arch": arch, "repeats": args.repeats, "steps": args.steps,
                       "unavailable": unavailable, "workloads": results, "targets": targets}, f, indent=1)
    print(f"\n({time.monotonic() - t_start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
