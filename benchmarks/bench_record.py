"""Recording overhead: training steps per second of the three examples run
plainly (eager) and under `janus record`, alternating in the same run,
medians of repeats, reported as the slowdown ratio (target <= 1.2x); and
the trace store's bytes per 1,000 recorded steps of the MLP example.

    JANUS_BUILD_DIR=build python3 benchmarks/bench_record.py [--repeats 5] [--quick]
        [--examples mlp,lstm] [--compare OTHER_CHECKOUT | --compare-setting NAME=VALUE]

--compare also records with another checkout (its build/ and python/, e.g.
a `git worktree` of the previous commit), interleaved with the same runs:
before/after figures under the same load, which on a shared machine moves
more than the change being measured.  --compare-setting records with this
checkout and one setting changed instead (JANUS_RECORD_REGIONS=0: the
recorder without its region markers and code scans).

Each measurement is a fresh process (an example with --steps N); the steps/s
figure is the example's own (training loop only, data loading and the test
evaluation excluded), so both sides time exactly the same work.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# os.environ, not janus's settings table (janus._C._setting_value): JANUS_BUILD_DIR is a
# BUILD row, read before janus can be imported -- it says which build to use
BUILD = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(ROOT, "build")))
JANUS = os.path.join(BUILD, "janus")

# (example, steps): short runs that still take long enough to time.
EXAMPLES = [("fashion_mlp.py", 600), ("fashion_cnn.py", 150), ("char_lstm.py", 150)]
RATE = re.compile(r"\(([\d.]+) steps/s over (\d+) steps[,)]")  # the examples may add ", X ms CPU/step)"


def env(root=ROOT, build=BUILD, extra=None):
    e = dict(os.environ)
    e.update(extra or {})
    e["JANUS_BUILD_DIR"] = build
    e["PYTHONPATH"] = os.path.join(root, "python") + os.pathsep + e.get("PYTHONPATH", "")
    e.pop("JANUS_RECORD_DB", None)
    e.pop("JANUS_RECORD_RUN", None)
    return e


def run(cmd, root=ROOT, build=BUILD, extra=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env(root, build, extra), cwd=ROOT)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-2000:]}")
    m = RATE.search(r.stdout)
    if not m:
        sys.exit(f"no 'steps/s' line in the output of {' '.join(cmd)}:\n{r.stdout[-1000:]}")
    return float(m.group(1)), r.stderr


def store_bytes(db):
    return sum(os.path.getsize(p) for p in (db, db + "-wal") if os.path.exists(p))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="a third of the steps (smoke test)")
    ap.add_argument("--examples", default="",
                    help="comma-separated subset: mlp, cnn, lstm (default: all three)")
    ap.add_argument("--compare", metavar="CHECKOUT", default="",
                    help="also record with this checkout's build/ (before/after in the same runs)")
    ap.add_argument("--compare-setting", metavar="NAME=VALUE", default="",
                    help="also record with this checkout and this setting (e.g. JANUS_RECORD_REGIONS=0)")
    args = ap.parse_args()
    if not os.path.exists(JANUS):
        sys.exit(f"{JANUS} not found: build first (cmake --build build) and set JANUS_BUILD_DIR")
    other = None
    if args.compare:
        croot = os.path.abspath(args.compare)
        other = (croot, os.path.join(croot, "build"))
        if not os.path.exists(os.path.join(other[1], "janus")):
            sys.exit(f"{other[1]}/janus not found: build the --compare checkout first")
    if args.compare_setting:
        name, eq, value = args.compare_setting.partition("=")
        if not eq or not name.startswith("JANUS_"):
            sys.exit("--compare-setting needs NAME=VALUE with a JANUS_ setting (janus env --all lists them)")
        other = (ROOT, BUILD, {name: value})
    pick = {"mlp": "fashion_mlp.py", "cnn": "fashion_cnn.py", "lstm": "char_lstm.py"}
    wanted = [pick.get(x.strip(), x.strip()) for x in args.examples.split(",") if x.strip()]
    unknown = [x for x in wanted if x not in dict(EXAMPLES)]
    if unknown:
        sys.exit(f"--examples: unknown {', '.join(unknown)} (use mlp, cnn, lstm)")
    have_recorder = subprocess.run([sys.executable, "-c", "import importlib.util as u; "
                                    "raise SystemExit(u.find_spec('janus._record') is None)"],
                                   env=env()).returncode == 0
    print(f"janus record overhead  (repeats {args.repeats}, median steps/s; "
          f"recorder {'present' if have_recorder else 'MISSING: only the CLI is measured'})")
    print(f"{'example':16s} {'steps':>6s} {'eager':>10s} {'recorded':>10s} {'slowdown':>9s}"
          + (f" {'compared':>10s} {'slowdown':>9s}" if other else ""))
    tmp = tempfile.mkdtemp(prefix="janus-bench-")
    results = {}
    for ex, steps in EXAMPLES:
        if wanted and ex not in wanted:
            continue
        if args.quick:
            steps = max(5, steps // 3)
        script = os.path.join(ROOT, "examples", ex)
        sides = [[], [], []]  # eager, recorded, recorded with --compare
        for i in range(args.repeats):
            # Rotate which goes first so drift (thermal, page cache) is shared.
            order = [0, 1, 2] if other else [0, 1]
            order = order[i % len(order):] + order[:i % len(order)]
            for which in order:
                db = os.path.join(tmp, f"{ex}.{i}.{which}.db")
                cmd = [sys.executable, script, "--steps", str(steps)]
                if which == 0:
                    sides[0].append(run(cmd)[0])
                elif which == 1:
                    sides[1].append(run([JANUS, "record", "--db", db, "--"] + cmd)[0])
                else:
                    sides[2].append(run([os.path.join(other[1], "janus"), "record", "--db", db, "--"] + cmd,
                                        *other)[0])  # other: (root, build[, extra settings])
        p, r = statistics.median(sides[0]), statistics.median(sides[1])
        results[ex] = (p, r)
        line = f"{ex:16s} {steps:6d} {p:10.1f} {r:10.1f} {p / r:8.2f}x"
        if other:
            c = statistics.median(sides[2])
            line += f" {c:10.1f} {p / c:8.2f}x"
        print(line, flush=True)
    if not results:
        return

    # Store size: one fresh store, one MLP run; subtract the store with only
    # an empty run (schema, op table, run row) to get the per-step cost.
    steps = 100 if args.quick else 1000
    base = os.path.join(tmp, "empty.db")
    subprocess.run([JANUS, "record", "--db", base, "--", sys.executable, "-c", "pass"],
                   env=env(), capture_output=True, check=True)
    db = os.path.join(tmp, "mlp.db")
    _, err = run([JANUS, "record", "--db", db, "--", sys.executable,
                  os.path.join(ROOT, "examples", "fashion_mlp.py"), "--steps", str(steps)])
    info = subprocess.run([JANUS, "inspect", "--json", db], capture_output=True, text=True, env=env())
    recorded = json.loads(info.stdout)["runs"][0]["steps"] if info.returncode == 0 else 0
    size, empty = store_bytes(db), store_bytes(base)
    print(f"\nMLP store: {size:,} bytes for {recorded} recorded steps ({steps} training steps + "
          f"evaluation/tail); store with an empty run: {empty:,} bytes")
    if recorded:
        print(f"bytes per 1,000 recorded MLP steps: {(size - empty) * 1000 / recorded:,.0f}")
    print(err.strip().splitlines()[-1] if err.strip() else "")
    worst = max(p / r for p, r in results.values())
    print(f"\nworst slowdown {worst:.2f}x (target <= 1.20x)")


if __name__ == "__main__":
    main()
