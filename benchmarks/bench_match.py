"""Replay matcher cost per captured op: ns per event of jn_rp_match_feed
(plus one jn_rp_match_end per segment) over every op of a recorded run, all
hits, measured by build/test_match (JN_MATCH_BENCH=only: the events are built
once, the feed loop is timed, best of 7 passes); median over --repeats
processes.  "warm": each segment fed 7 times back to back, its best (the
events in cache, as a just-dispatched op is); "streamed": the whole run
fed in order, best of 7 passes (events come from memory: the harness's
event records are large, so this also measures memory traffic).  Target
(issue 7): <= 150 ns per event on the 2-core machine.

    JANUS_BUILD_DIR=build python3 benchmarks/bench_match.py [--repeats 5] [--db run.db ...]

Without --db it records short runs of examples/char_lstm.py (loops,
variants) and examples/fashion_mlp.py into a temporary folder.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# os.environ, not janus's settings table (janus._C._setting_value): JANUS_BUILD_DIR is a
# BUILD row, read before janus can be imported -- it says which build to use
BUILD = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(ROOT, "build")))
RUNS = {
    "char_lstm": ["examples/char_lstm.py", "--steps", "12", "--hidden", "32", "--batch", "4"],
    "fashion_mlp": ["examples/fashion_mlp.py", "--steps", "20", "--epochs", "1"],
}


def env():
    e = dict(os.environ)
    e["JANUS_BUILD_DIR"] = BUILD
    e["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + e.get("PYTHONPATH", "")
    return e


def record(tmp, name, argv):
    db = os.path.join(tmp, name + ".db")
    r = subprocess.run([os.path.join(BUILD, "janus"), "record", "--db", db, "--", sys.executable, *argv],
                       cwd=ROOT, env=env(), capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"recording {name} failed:\n{r.stderr[-2000:]}")
    return db


def measure(db):
    e = env()
    e["JN_MATCH_BENCH"] = "only"
    r = subprocess.run([os.path.join(BUILD, "test_match"), db], env=e, capture_output=True, text=True)
    m = re.search(r"hits=(\d+) .*events=(\d+) ns_per_event=([\d.]+) ns_per_event_stream=([\d.]+)", r.stdout)
    if r.returncode or not m:
        sys.exit(f"test_match failed on {db}:\n{r.stdout}\n{r.stderr[-2000:]}")
    return int(m.group(1)), int(m.group(2)), float(m.group(3)), float(m.group(4))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--db", action="append", default=[])
    a = ap.parse_args()
    tmp = None
    dbs = [(os.path.basename(d), d) for d in a.db]
    if not dbs:
        tmp = tempfile.mkdtemp(prefix="janus-bench-match-")
        dbs = [(n, record(tmp, n, argv)) for n, argv in RUNS.items()]
    try:
        print(f"{'run':<16}{'segments hit':>14}{'events':>10}{'ns/event warm':>16}{'min':>8}{'max':>8}"
              f"{'ns/event streamed':>20}")
        for name, db in dbs:
            xs = [measure(db) for _ in range(a.repeats)]
            ns = [x[2] for x in xs]
            st = [x[3] for x in xs]
            print(f"{name:<16}{xs[0][0]:>14}{xs[0][1]:>10}{statistics.median(ns):>16.1f}{min(ns):>8.1f}{max(ns):>8.1f}"
                  f"{statistics.median(st):>20.1f}")
    finally:
        if tmp:
            shutil.rmtree(tmp, True)


if __name__ == "__main__":
    main()
