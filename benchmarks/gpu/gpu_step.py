"""One example's fixed-batch training step (benchmarks/bench_train.py:
model, batch size, Adam, cross entropy) run with janus on a device for a
number of steps: the script bench_gpu.py records, optimizes and replays
(`janus record/replay -- python gpu_step.py ...`), so the replay column
times exactly the step the in-process columns time.  Prints the last loss
and "(R steps/s over N steps)" (the form bench_replay.py parses), timed
after --warmup steps and ended by a .item() (a device sync).

    python benchmarks/gpu/gpu_step.py --only mlp|cnn|lstm [--device cuda] [--steps 200] [--warmup 20]
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import bench_train as bt  # noqa: E402  (puts the repo's python/ on sys.path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", required=True, choices=("mlp", "cnn", "lstm"))
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    args = ap.parse_args(argv)
    import numpy as np
    name, make, x, y = next(w for w in bt.workloads(np.random.default_rng(0)) if args.only in w[0])
    step = bt.make_step(bt.janus, bt.jnn, make, x, y, device=args.device)
    for _ in range(args.warmup):
        step()
    step().item()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    last = loss.item()
    dt = time.perf_counter() - t0
    print(f"{name} on {args.device}: loss {last:.4f}  ({args.steps / dt:.1f} steps/s over {args.steps} steps)")


if __name__ == "__main__":
    main()
