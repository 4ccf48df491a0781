"""bench_train.py's fixed-batch training step of one example's model, as a
script that `janus record` / `janus replay` can run: the step PyTorch is
timed on, so replay's figure is compared with PyTorch's on the same batch
(bench_replay.py's "fixed-batch step" row).  Prints the rate in the form
the examples use, over the steps after --warmup.

    JANUS_BUILD_DIR=build janus replay --db run.db -- python3 benchmarks/replay_step.py \
        --workload 2 --steps 300 --warmup 30
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ.setdefault("JANUS_BENCH_NO_TORCH", "1")  # torch is timed by bench_replay itself
import bench_train as bt  # noqa: E402  (reads --threads before janus loads OpenBLAS)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workload", type=int, required=True, help="0 MLP, 1 CNN, 2 char_lstm (bench_train.workloads)")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=30, help="steps left out of the figure")
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args(argv)
    if args.threads:
        bt.janus.set_num_threads(args.threads)
    import numpy as np
    name, make, x, y = bt.workloads(np.random.default_rng(0))[args.workload]
    step = bt.make_step(bt.janus, bt.jnn, make, x, y)
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(1, args.steps + 1):
        loss = step()
        if i == args.warmup:
            loss.item()
            t0, c0 = time.perf_counter(), time.process_time()
    last = loss.item()
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    timed = args.steps - min(args.warmup, args.steps)
    print(f"{name}: loss {last:.4f}  ({timed / dt:.1f} steps/s over {timed} steps, "
          f"{1e3 * cpu / max(timed, 1):.3f} ms CPU/step)")


if __name__ == "__main__":
    main()
