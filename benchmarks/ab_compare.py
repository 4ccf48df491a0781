"""Two builds side by side in one run: bench_dispatch.py or
bench_replay_small.py of tree A and of tree B, alternated round by round
(A B, B A, A B, ...: neither always runs first), each as its own process
with its own tree's script and build, and the per-round B/A ratios of
every figure the benchmark prints, with their median.

The machine is shared and its speed drifts within a run by more than most
differences measured, so only same-run, paired ratios mean anything.

    python3 benchmarks/ab_compare.py A_TREE B_TREE dispatch [--rounds 8] [--cpu-clock] [-- ARGS...]
    python3 benchmarks/ab_compare.py A_TREE B_TREE replay_small [--rounds 3] [-- ARGS...]

Each tree needs its build in TREE/build (JANUS_BUILD_DIR is set to it).
dispatch: the janus column per statement (microseconds per call);
replay_small: CPU ms per step of replay, every graph compiled and eager.
Below 1.0: B is faster."""
import argparse
import os
import re
import statistics
import subprocess
import sys

SCRIPTS = {"dispatch": "bench_dispatch.py", "replay_small": "bench_replay_small.py"}


def figures(kind, out):
    """name -> value parsed from one run's output."""
    got = {}
    if kind == "dispatch":
        for line in out.splitlines():  # "name   janus-us  numpy-us ...", columns 2+ spaces apart
            cols = re.split(r"\s{2,}", line.strip())
            if len(cols) > 2 and re.fullmatch(r"[\d.]+", cols[1]):
                got[cols[0]] = float(cols[1])
    else:
        m = re.search(r"replay ([\d.]+) .*every graph compiled ([\d.]+) .*eager ([\d.]+)", out)
        if m:
            got = {"replay": float(m.group(1)), "every graph": float(m.group(2)), "eager": float(m.group(3))}
        h = re.search(r"replay [\d.]+ \(hit rate ([\d.]+)%", out)
        if h:  # replay's choice (a graph kept or left to eager) shows here
            got["replay hit %"] = float(h.group(1))
        if "DIFFER" in out:
            sys.exit("the modes' losses differ:\n" + out)
    return got


# bench_dispatch.py times with timeit's wall clock; --cpu-clock runs it with
# timeit.timeit/repeat bound to the process's CPU time instead, so time the
# process spends descheduled on a loaded machine is not counted.
CPU_CLOCK = ("import functools, runpy, sys, time, timeit\n"
             "timeit.timeit = functools.partial(timeit.timeit, timer=time.process_time)\n"
             "timeit.repeat = functools.partial(timeit.repeat, timer=time.process_time)\n"
             "sys.argv = sys.argv[1:]\n"
             "runpy.run_path(sys.argv[0], run_name='__main__')\n")


def run(tree, kind, extra, cpu_clock):
    env = dict(os.environ, JANUS_BUILD_DIR=os.path.join(tree, "build"))
    script = os.path.join(tree, "benchmarks", SCRIPTS[kind])
    cmd = [sys.executable] + (["-c", CPU_CLOCK] if cpu_clock else []) + [script] + extra
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
    if p.returncode != 0:
        sys.exit(f"{tree}: {SCRIPTS[kind]} failed ({p.returncode}):\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return figures(kind, p.stdout)


def main():
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("kind", choices=sorted(SCRIPTS))
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--cpu-clock", action="store_true", help="dispatch: time with process CPU time, not wall clock")
    a = ap.parse_args(argv)
    rows = {}  # name -> [(a, b)]
    for r in range(a.rounds):
        order = [a.a, a.b] if r % 2 == 0 else [a.b, a.a]
        res = {t: run(t, a.kind, extra, a.cpu_clock) for t in order}
        for name in res[a.a]:
            if name in res[a.b]:
                rows.setdefault(name, []).append((res[a.a][name], res[a.b][name]))
        print(f"round {r + 1}/{a.rounds} done", file=sys.stderr, flush=True)
    clock = ", process CPU time" if a.cpu_clock else ""
    print(f"{SCRIPTS[a.kind]} {' '.join(extra)}: A = {a.a}, B = {a.b}, {a.rounds} rounds alternated{clock}")
    print(f"{'figure':<18}{'A median':>10}{'B median':>10}{'B/A':>8}   per-round B/A")
    meds = []
    for name, pairs in rows.items():
        ratios = [b / x for x, b in pairs]
        meds.append(statistics.median(ratios))
        print(f"{name:<18}{statistics.median(p[0] for p in pairs):10.3f}{statistics.median(p[1] for p in pairs):10.3f}"
              f"{meds[-1]:8.3f}   {min(ratios):.3f}-{max(ratios):.3f}")
    if meds:
        print(f"median B/A over the {len(meds)} figures: {statistics.median(meds):.3f}")


if __name__ == "__main__":
    main()
