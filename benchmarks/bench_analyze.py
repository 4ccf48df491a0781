"""Analyzer cost against trace size: `janus optimize` on trace stores of about
10k, 100k and 1M recorded ops; wall time (median of repeats) and the child's
peak resident memory, per size, with the ratios to the smallest store.
Targets (issue 5): linear growth, 1M ops in <= 10 s on the 2-core machine.

    JANUS_BUILD_DIR=build python3 benchmarks/bench_analyze.py [--repeats 3] [--quick] [--keep]

The stores are real recordings (`janus record`) of one small training
script (SCRIPT below: a 3-layer MLP with Adam over a shuffled DataLoader
whose last batch is smaller, so the analyzer has symbols and variants to
find, ~120 ops per step), each run for as many steps as reach the target op
count; the ops per step are measured first from two short recordings
(`janus inspect --json`).  --keep records into a fixed folder
($TMPDIR/janus-bench-analyze) and reuses what is there on the next run;
otherwise a temporary folder is removed at the end.  Peak memory is the
child's own ru_maxrss (os.wait4), not the benchmark's.  --quick: 1k, 10k,
100k ops.
"""
import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# os.environ, not janus's settings table (janus._C._setting_value): JANUS_BUILD_DIR is a
# BUILD row, read before janus can be imported -- it says which build to use
BUILD = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(ROOT, "build")))
JANUS = os.path.join(BUILD, "janus")

# The child finds janus through JANUS_BENCH_PY (a BENCH row read with
# os.environ: it is where janus is, so janus's settings table cannot read it).
SCRIPT = """\
import os, sys
sys.path.insert(0, os.environ["JANUS_BENCH_PY"])
import janus, janus.nn as nn
from janus.utils.data import DataLoader, TensorDataset
steps = int(sys.argv[1])
janus.manual_seed(0)
X = janus.randn(1000, 32)
Y = (X[:, 0] * 3).long().clamp(0, 9)
loader = DataLoader(TensorDataset(X, Y), batch_size=64, shuffle=True,
                    generator=janus.Generator().manual_seed(0))
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
opt = janus.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = nn.CrossEntropyLoss()
step = 0
while step < steps:
    for x, y in loader:          # 15 batches of 64, then one of 40
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        step += 1
        if step >= steps:
            break
print("done")
"""


def env():
    e = dict(os.environ)
    e["JANUS_BUILD_DIR"] = BUILD
    e["JANUS_BENCH_PY"] = os.path.join(ROOT, "python")
    e["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + e.get("PYTHONPATH", "")
    e.pop("JANUS_RECORD_DB", None)
    e.pop("JANUS_RECORD_RUN", None)
    return e


def check(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env(), **kw)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-2000:]}")
    return r


def recorded_ops(db):
    run = json.loads(check([JANUS, "inspect", "--json", db]).stdout)["runs"][0]
    return run["ops"], run["steps"]


def record(folder, script, steps):
    """Store of `steps` training steps (reused when --keep left one)."""
    db = os.path.join(folder, f"steps{steps}.db")
    meta = db + ".json"
    if os.path.exists(db) and os.path.exists(meta):
        with open(meta) as f:
            m = json.load(f)
        return db, m["ops"], m["steps"], m["record_s"]
    for p in (db, db + "-wal", db + "-shm"):
        if os.path.exists(p):
            os.remove(p)
    t0 = time.perf_counter()
    check([JANUS, "record", "--db", db, "--", sys.executable, script, str(steps)])
    rec = time.perf_counter() - t0
    ops, nsteps = recorded_ops(db)
    with open(meta, "w") as f:
        json.dump({"ops": ops, "steps": nsteps, "record_s": rec}, f)
    return db, ops, nsteps, rec


def optimize_once(db):
    """(seconds, peak RSS in MB, its summary line) of one `janus optimize` child."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen([JANUS, "optimize", db, "--dump-ir"], stdout=subprocess.DEVNULL, stderr=err,
                             env=env())
        _, status, ru = os.wait4(p.pid, 0)
        dt = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            err.seek(0)
            sys.exit(f"janus optimize {db} failed ({p.returncode}):\n{err.read().decode()[-2000:]}")
        err.seek(0)
        summary = [ln for ln in err.read().decode().splitlines() if ln.startswith("janus optimize:")]
    return dt, ru.ru_maxrss / 1024.0, summary[-1] if summary else ""   # ru_maxrss is in KB on Linux


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="1k, 10k, 100k ops (smoke test)")
    ap.add_argument("--keep", action="store_true", help="record into $TMPDIR/janus-bench-analyze and reuse it")
    args = ap.parse_args()
    if not os.path.exists(JANUS):
        sys.exit(f"{JANUS} not found: build first (cmake --build build) and set JANUS_BUILD_DIR")
    r = subprocess.run([JANUS, "optimize", "--help"], capture_output=True, text=True)
    have_opt = r.returncode == 0 and r.stdout.startswith("usage: janus optimize")

    if args.keep:
        # the folder is keyed by the script and the build, so a changed script re-records
        key = hashlib.sha1((SCRIPT + BUILD).encode()).hexdigest()[:10]
        folder = os.path.join(tempfile.gettempdir(), "janus-bench-analyze", key)
        os.makedirs(folder, exist_ok=True)
    else:
        folder = tempfile.mkdtemp(prefix="janus-bench-analyze-")
    script = os.path.join(folder, "train.py")
    with open(script, "w") as f:
        f.write(SCRIPT)
    try:
        # ops per step from two short recordings (the difference drops the set-up in step 0)
        _, o1, _, _ = record(folder, script, 20)
        _, o2, _, _ = record(folder, script, 60)
        per_step = (o2 - o1) / 40.0
        base = o1 - 20 * per_step
        targets = [1_000, 10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000]
        print(f"janus optimize vs trace size  (repeats {args.repeats}, median; {per_step:.1f} ops per "
              f"training step; stores in {folder}{'' if args.keep else ', removed at the end'})")
        stores = []
        for t in targets:
            steps = max(1, round((t - base) / per_step))
            db, ops, nsteps, rec = record(folder, script, steps)
            size = sum(os.path.getsize(p) for p in (db, db + "-wal") if os.path.exists(p))
            print(f"  recorded {ops:>9,} ops  {nsteps:>6,} steps  {size / 2**20:7.1f} MB  ({rec:.1f} s to record)",
                  flush=True)
            stores.append((db, ops, nsteps))
        # the fixed cost: a store holding one run with no steps
        empty = os.path.join(folder, "empty.db")
        if not os.path.exists(empty):
            check([JANUS, "record", "--db", empty, "--", sys.executable, "-c", "pass"])
        if not have_opt:
            sys.exit("janus optimize is not a command of this build yet (issue 5): nothing to time")

        optimize_once(stores[0][0])   # warm the page cache and the binary
        runs = [(empty, 0, 0)] + stores
        times = {db: [] for db, _, _ in runs}
        peaks = {db: [] for db, _, _ in runs}
        for _ in range(args.repeats):
            # interleave sizes so drift is shared
            for db, _, _ in runs:
                dt, mb, summary = optimize_once(db)
                times[db].append(dt)
                peaks[db].append(mb)
        print(f"\n{'ops':>10s} {'steps':>7s} {'seconds':>8s} {'s/1M ops':>9s} {'peak MB':>8s} "
              f"{'x ops':>7s} {'x time':>7s} {'x MB':>6s}")
        t_empty, p_empty = statistics.median(times[empty]), max(peaks[empty])
        print(f"{'(empty)':>10s} {0:>7,} {t_empty:8.3f} {'':>9s} {p_empty:8.1f}")
        t0 = p0 = n0 = None
        rows = []
        for db, ops, nsteps in stores:
            t, p = statistics.median(times[db]), max(peaks[db])
            if t0 is None:
                t0, p0, n0 = t, p, ops
            rows.append((ops, t))
            print(f"{ops:>10,} {nsteps:>7,} {t:8.3f} {t / ops * 1e6:9.2f} {p:8.1f} {ops / n0:7.1f} "
                  f"{t / t0:7.1f} {p / p0:6.1f}", flush=True)
        (n_small, t_small), (n_big, t_big) = rows[-2], rows[-1]
        growth = ((t_big - t_empty) / (t_small - t_empty)) / (n_big / n_small) if t_small > t_empty else float("nan")
        print(f"\nlargest store: {summary}")
        print(f"time per op beyond the empty store's {t_empty:.3f} s, largest vs second largest store: "
              f"{growth:.2f}x (1.00 = linear)")
        if not args.quick:
            print(f"{n_big:,} ops analyzed in {t_big:.2f} s (target <= 10 s): "
                  f"{'met' if t_big <= 10 else 'NOT met'}")
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
