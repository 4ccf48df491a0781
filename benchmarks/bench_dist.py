"""janus.distributed on 2 ranks here: all-reduce bandwidth against Open
MPI's own MPI_Allreduce, DDP 2 ranks against 1 process, the share of the
gradient all-reduce in a step (and how much of it backward hides), replay
against eager under DDP.  Everything in one run, so the ratios compare
numbers taken on the same machine at the same time.

1. All-reduce: float32 tensors of each --sizes elements, in place, SUM, 2
   ranks.  Ours: janus.distributed.all_reduce in a Python loop.  Baseline: a
   C program (built here with mpicc) calling MPI_Allreduce(MPI_IN_PLACE) in
   the same loop, as plain as it gets (MPI_Init, MPI_COMM_WORLD), which is
   also janus's default setup (JANUS_DIST_MPI_THREADS=single); and both
   again with JANUS_DIST_MPI_THREADS=serialized's setup
   (MPI_THREAD_SERIALIZED, a duplicated communicator), which costs Open MPI
   itself a few percent at 4 KB.  Each
   times 41 bursts of a few calls after a barrier and
   keeps the median burst (rank 0's clock; on a busy machine a long loop
   gets preempted, which would time the scheduler); per size: the median
   (and the best) of --repeats (programs alternating) of that time per call,
   the bus bandwidth 2(n-1)/n * bytes / time, and ours / MPI's time.  With
   --base BUILD another build (its tree's python/ beside it) runs the same
   Python loop in the same alternation.
2. DDP: tests/python/dist_train.py, MLP, 2 ranks of batch B against one
   process (no DDP) of batch 2B: samples/s of each (median step time after
   the first 5 steps), and the gradient all-reduce's share of a DDP step.
2b. Overlap: a deeper MLP (784-512x4-10, 4 buckets of about 1 MB) under DDP in
   three modes, alternating in the same run: buckets reduced after backward
   (`--reduce after`), inside backward by the post-accumulate-grad hooks,
   synchronously (`hooks`), and handed to the communication thread
   (`async`).  Per mode: median step time (slower rank), the all-reduces'
   seconds per step and the main thread's wait in them; the fraction of
   all-reduce time hidden = 1 - wait / all-reduce time (0 by construction
   when synchronous: the main thread blocks for all of it).
3. Replay under DDP: `janus record --nproc 2`, `janus optimize`, then
   `janus replay --nproc 2` (adaptive timing on, the default, and
   JANUS_REPLAY_ADAPT=0: every segment a graph can run runs as one) and
   `janus replay --eager --nproc 2`, alternating: median step time (the
   slower rank), replay / eager; the replays' hit
   rate per rank (`janus inspect --json`) and the all_reduce_ nodes inside
   the bundle's graphs (`janus inspect --graphs`): the collectives are table
   ops, so a DDP step is one graph with its bucket all-reduces.

    JANUS_BUILD_DIR=build python3 benchmarks/bench_dist.py [--repeats 5] [--steps 60]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(ROOT, "build")))
TRAIN = os.path.join(ROOT, "tests", "python", "dist_train.py")

C_LOOP = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
int main(int argc, char **argv) {
    int rank;
#ifdef SAME_SETUP /* JANUS_DIST_MPI_THREADS=serialized: any thread may call, a communicator of its own */
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
#else
    MPI_Init(&argc, &argv);
    MPI_Comm comm = MPI_COMM_WORLD;
#endif
    MPI_Comm_rank(comm, &rank);
    for (int a = 1; a + 2 < argc; a += 3) {
        long n = atol(argv[a]);
        int bursts = atoi(argv[a + 1]), calls = atoi(argv[a + 2]);
        float *x = malloc(n * sizeof *x);
        double *t = malloc(bursts * sizeof *t);
        for (long i = 0; i < n; i++) x[i] = 0.0f;
        MPI_Allreduce(MPI_IN_PLACE, x, (int)n, MPI_FLOAT, MPI_SUM, comm); /* warm */
        for (int b = 0; b < bursts; b++) {
            MPI_Barrier(comm);
            double t0 = MPI_Wtime();
            for (int k = 0; k < calls; k++) MPI_Allreduce(MPI_IN_PLACE, x, (int)n, MPI_FLOAT, MPI_SUM, comm);
            t[b] = (MPI_Wtime() - t0) / calls;
        }
        qsort(t, bursts, sizeof *t, cmp);
        if (rank == 0) printf("%ld %.9f\n", n, t[bursts / 2]);
        free(x);
        free(t);
    }
    MPI_Finalize();
    return 0;
}
"""

PY_LOOP = r"""
import statistics, sys, time, janus, janus.distributed as dist
dist.init_process_group("mpi")
args = sys.argv[1:]
for a in range(0, len(args), 3):
    n, bursts, calls = int(args[a]), int(args[a + 1]), int(args[a + 2])
    x = janus.zeros(n, dtype=janus.float32)
    dist.all_reduce(x)
    ts = []
    for _ in range(bursts):
        dist.barrier()
        t = time.perf_counter()
        for _ in range(calls):
            dist.all_reduce(x)
        ts.append((time.perf_counter() - t) / calls)
    if dist.get_rank() == 0:
        print(n, f"{sorted(ts)[bursts // 2]:.9f}", flush=True)
dist.destroy_process_group()
"""


def env(build=None):
    """The ranks' environment: this tree's build, or another build (--base)
    with the python/ package of the tree it was built from."""
    build = os.path.abspath(build or BUILD)
    e = dict(os.environ)
    e["PYTHONPATH"] = os.path.join(ROOT if build == BUILD else os.path.dirname(build), "python")
    e["JANUS_BUILD_DIR"] = build
    e["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    e["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return e


def mpirun(args, n=2, timeout=900, build=None, **extra):
    r = subprocess.run(["mpirun", "-n", str(n), "--oversubscribe"] + args, capture_output=True, text=True,
                       timeout=timeout, env={**env(build), **extra})
    if r.returncode:
        sys.exit(f"bench_dist: {' '.join(args[:3])}... failed:\n{r.stdout}{r.stderr}")
    return r.stdout


def per_call(out):
    return {int(n): float(t) for n, t in (line.split() for line in out.splitlines() if line.strip())}


def allreduce(tmp, sizes, repeats, base=None):
    src, exe = os.path.join(tmp, "allreduce.c"), os.path.join(tmp, "allreduce")
    with open(src, "w") as f:
        f.write(C_LOOP)
    subprocess.run(["mpicc", "-O2", src, "-o", exe], check=True)
    subprocess.run(["mpicc", "-O2", "-DSAME_SETUP", src, "-o", exe + "_setup"], check=True)
    spec = []
    for n in sizes:  # bursts of a few calls (the median burst: time-sharing on a busy machine preempts long loops)
        spec += [str(n), "41", str(max(2, min(20, int(4e6 / max(n * 4, 1)))))]
    progs = ["mpi", "setup", "janus", "janus_ser"] + (["base"] if base else [])
    times = {p: {n: [] for n in sizes} for p in progs}
    for _ in range(repeats):  # alternate, so load drifts hit every program alike
        for p in progs:
            prog = {"mpi": [exe], "setup": [exe + "_setup"]}.get(p, [sys.executable, "-c", PY_LOOP])
            cmd = prog + spec
            extra = {"JANUS_DIST_MPI_THREADS": "serialized"} if p == "janus_ser" else {}
            for n, t in per_call(mpirun(cmd, build=base if p == "base" else None, **extra)).items():
                times[p][n].append(t)
    med = {p: {n: statistics.median(v) for n, v in times[p].items()} for p in progs}
    best = {p: {n: min(v) for n, v in times[p].items()} for p in progs}
    print(f"\n## All-reduce, float32 SUM in place, 2 ranks (per call: median burst; median and best of "
          f"{repeats} alternating repeats)\n")
    head = "| elements | bytes | Open MPI MPI_Allreduce (C loop) | janus all_reduce | bus GB/s (MPI / janus) "
    head += "| janus / MPI (median) | janus / MPI (best) | C loop, serialized setup | janus serialized | "
    head += "janus serialized / C loop serialized (median) |"
    rule = "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    if base:
        head += " base build | base / MPI (median) | janus / base (median) |"
        rule += "---:|---:|---:|"
    print(head)
    print(rule)
    rows = []
    for n in sizes:
        a, b = med["mpi"][n], med["janus"][n]
        bw = lambda t: 2 * (2 - 1) / 2 * n * 4 / t / 1e9  # noqa: E731
        line = (f"| {n:,} | {4 * n:,} | {a * 1e6:.2f} us | {b * 1e6:.2f} us | {bw(a):.2f} / {bw(b):.2f} | "
                f"{b / a:.3f} | {best['janus'][n] / best['mpi'][n]:.3f} | {med['setup'][n] * 1e6:.2f} us | "
                f"{med['janus_ser'][n] * 1e6:.2f} us | {med['janus_ser'][n] / med['setup'][n]:.3f} |")
        row = {"elements": n, "mpi_s": a, "janus_s": b, "ratio": b / a,
               "ratio_best": best["janus"][n] / best["mpi"][n], "setup_s": med["setup"][n],
               "janus_serialized_s": med["janus_ser"][n], "ratio_serialized": med["janus_ser"][n] / med["setup"][n]}
        if base:
            c = med["base"][n]
            line += f" {c * 1e6:.2f} us | {c / a:.3f} | {b / c:.3f} |"
            row.update(base_s=c, base_ratio=c / a)
        print(line)
        rows.append(row)
    return rows


def train_stats(prefix, world, wait=False):
    """Median step seconds (slower rank) and median all-reduce seconds per
    step (and, with wait, the main thread's wait in them) over the ranks."""
    steps, reduce, waits = [], [], []
    for r in range(world):
        d = json.load(open(f"{prefix}.rank{r}.json"))
        steps.append(statistics.median(d["step_seconds"][5:]))
        if d["reduce_seconds"]:
            reduce.append(statistics.median(c for c, _ in d["reduce_seconds"][5:]))
            waits.append(statistics.median(w for _, w in d["reduce_seconds"][5:]))
    r = statistics.median(reduce) if reduce else 0.0
    return (max(steps), r, statistics.median(waits) if waits else 0.0) if wait else (max(steps), r)


def overlap(tmp, steps, batch, repeats):
    modes = ("after", "hooks", "async")
    res = {m: [] for m in modes}
    common = ["--steps", str(steps), "--batch", str(batch), "--hidden", "512", "--depth", "4",
              "--bucket-cap-mb", "1.1"]
    for k in range(repeats):  # alternating, so load drifts hit the three alike
        for m in modes:
            out = os.path.join(tmp, f"ov_{m}{k}")
            mpirun([sys.executable, TRAIN, "--reduce", m, "--out", out] + common)
            res[m].append(train_stats(out, 2, wait=True))
    med = {m: [statistics.median(v[i] for v in res[m]) for i in range(3)] for m in modes}
    base = med["after"][0]
    print(f"\n## Overlap of the gradient all-reduce with backward (2 ranks, MLP 784-512x4-10, batch {batch} "
          "each, bucket_cap_mb 1.1: 4 buckets)\n")
    print("| DDP mode | step | / after-backward | all-reduce per step | main thread waits | hidden |")
    print("|---|---:|---:|---:|---:|---:|")
    out = {}
    for m, label in zip(modes, ("after backward", "hooks, synchronous", "hooks, async (comm thread)")):
        st, c, w = med[m]
        hidden = max(0.0, 1 - w / c) if c > 0 else 0.0
        print(f"| {label} | {st * 1e3:.2f} ms | {st / base:.3f} | {c * 1e3:.2f} ms | {w * 1e3:.2f} ms | "
              f"{hidden:.1%} |")
        out[m] = {"step_s": st, "allreduce_s": c, "wait_s": w, "hidden": hidden}
    return out


def ddp(tmp, steps, batch, repeats):
    two, one = [], []
    common = ["--steps", str(steps), "--hidden", "256"]
    for k in range(repeats):
        p2, p1 = os.path.join(tmp, f"two{k}"), os.path.join(tmp, f"one{k}")
        mpirun([sys.executable, TRAIN, "--batch", str(batch), "--out", p2] + common)
        subprocess.run([sys.executable, TRAIN, "--no-ddp", "--batch", str(2 * batch), "--out", p1] + common,
                       check=True, capture_output=True, env=env())
        two.append(train_stats(p2, 2))
        one.append(train_stats(p1, 1))
    s2 = statistics.median(t for t, _ in two)  # DDP's default: synchronous buckets inside backward
    r2 = statistics.median(r for _, r in two)
    s1 = statistics.median(t for t, _ in one)
    print(f"\n## DDP, MLP 784-256-10, global batch {2 * batch}, median step time\n")
    print("| run | step | samples/s | gradient all-reduce per step | share of step | hidden by backward |")
    print("|---|---:|---:|---:|---:|---:|")
    print(f"| 1 process, batch {2 * batch} | {s1 * 1e3:.2f} ms | {2 * batch / s1:,.0f} | - | - | - |")
    print(f"| 2 ranks, batch {batch} each | {s2 * 1e3:.2f} ms | {2 * batch / s2:,.0f} | {r2 * 1e3:.2f} ms | "
          f"{r2 / s2:.1%} | 0% (synchronous: see the overlap table) |")
    print(f"\nscaling: 2 ranks / 1 process samples/s = {s1 / s2:.2f}x (2 cores here, shared)")
    return {"one_step_s": s1, "two_step_s": s2, "reduce_s": r2, "scaling": s1 / s2}


def replay(tmp, steps, batch, repeats):
    janus = os.path.join(BUILD, "janus")
    db = os.path.join(tmp, "ddp.db")
    train = [sys.executable, TRAIN, "--batch", str(batch), "--hidden", "256"]
    # recorded with the replays' --steps: dist_train.py's dataset size follows it, so another count would
    # change the data tensor's shape (a DIM guard miss in every step)
    subprocess.run([janus, "record", "--nproc", "2", "--db", db, "--"] + train + ["--steps", str(steps)],
                   check=True, capture_output=True, env=env())
    subprocess.run([janus, "optimize", db], check=True, capture_output=True, env=env())
    times = {"rep": [], "fixed": [], "eag": []}
    for k in range(repeats):  # alternating, so load drifts hit all three alike
        for mode in times:
            out = os.path.join(tmp, f"{mode}{k}")
            extra = ["--eager"] if mode == "eag" else []
            e = env()
            if mode == "fixed":  # every segment a graph can run runs as one (no timing runs, no eager choice)
                e["JANUS_REPLAY_ADAPT"] = "0"
            subprocess.run([janus, "replay"] + extra + ["--nproc", "2", "--db", db, "--"] + train +
                           ["--steps", str(steps), "--out", out], check=True, capture_output=True, env=e)
            times[mode].append(train_stats(out, 2)[0])
    a, f, b = (statistics.median(times[m]) for m in ("rep", "fixed", "eag"))
    info = json.loads(subprocess.run([janus, "inspect", "--json", db], capture_output=True, text=True,
                                     env=env()).stdout)
    rates = {"rep": [], "fixed": []}
    for r in info["runs"]:
        rp, argv = r.get("replay"), " ".join(r.get("argv") or [])
        if rp and rp.get("hit_rate") is not None:
            rates["fixed" if "/fixed" in argv else "rep"].append(rp["hit_rate"])
    graphs = subprocess.run([janus, "inspect", "--graphs", db], capture_output=True, text=True, env=env()).stdout
    nar = graphs.count("all_reduce_(")
    hit = {m: statistics.median(v) if v else float("nan") for m, v in rates.items()}
    print(f"\n## Replay under DDP (2 ranks, MLP, batch {batch} each), median step time (slower rank)\n")
    print("| run | step | / eager | hit rate (median over ranks and repeats) |")
    print("|---|---:|---:|---:|")
    print(f"| janus replay --eager | {b * 1e3:.2f} ms | 1.000 | - |")
    print(f"| janus replay (JANUS_REPLAY_ADAPT default) | {a * 1e3:.2f} ms | {a / b:.3f} | {hit['rep']:.1%} |")
    print(f"| janus replay, JANUS_REPLAY_ADAPT=0 | {f * 1e3:.2f} ms | {f / b:.3f} | {hit['fixed']:.1%} |")
    print(f"\nall_reduce_ nodes in the bundle's graphs: {nar} (inside the step's graph: no segment is cut at a "
          "collective)")
    return {"replay_s": a, "replay_fixed_s": f, "eager_s": b, "ratio": a / b, "ratio_fixed": f / b,
            "hit_rate": hit, "all_reduce_nodes": nar}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--sizes", default="1024,65536,1048576,8388608")
    ap.add_argument("--only", default="allreduce,ddp,overlap,replay")
    ap.add_argument("--json", default="")
    ap.add_argument("--base", default="", help="another build (e.g. /work/main/build) whose all-reduce runs in the "
                    "same alternation, with the python/ package beside it")
    args = ap.parse_args()
    for tool in ("mpirun", "mpicc"):
        if not shutil.which(tool):
            sys.exit(f"bench_dist: {tool} not found: apt-get install openmpi-bin libopenmpi-dev")
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        only = args.only.split(",")
        if "allreduce" in only:
            out["allreduce"] = allreduce(tmp, [int(s) for s in args.sizes.split(",")], args.repeats,
                                       args.base or None)
        if "ddp" in only:
            out["ddp"] = ddp(tmp, args.steps, args.batch, args.repeats)
        if "overlap" in only:
            out["overlap"] = overlap(tmp, args.steps, args.batch, args.repeats)
        if "replay" in only:
            out["replay"] = replay(tmp, args.steps, args.batch, args.repeats)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    print(textwrap.dedent(f"""
        command: JANUS_BUILD_DIR={os.path.relpath(BUILD, ROOT)} python3 benchmarks/bench_dist.py \\
            --repeats {args.repeats} --steps {args.steps} --batch {args.batch} --sizes {args.sizes} \\
            --only {args.only}{" --base " + args.base if args.base else ""}"""))


if __name__ == "__main__":
    main()
