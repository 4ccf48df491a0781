"""A data-parallel Fashion-MNIST training script for test_distributed.py and
benchmarks/bench_dist.py, launched as `mpirun -n N python dist_train.py`
(or alone: a world of 1, no MPI needed).

Each rank takes its share of every global batch of N*B images through
DistributedSampler(shuffle=False): the union of the ranks' batches at step t
is exactly the single process's batch t of size N*B, so the losses must
match.  Writes, per rank, to OUT.rank<R>.json: the losses (this rank's and,
after an AVG all-reduce, the world's), the SHA-256 of the final parameters,
seconds per step and per gradient reduction.  Fault options make one rank die (SIGKILL), raise, hang, or
run one more op than the recording (a guard miss on that rank only).
"""
import argparse
import hashlib
import json
import os
import signal
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "python"))
import janus  # noqa: E402
import janus.distributed as dist  # noqa: E402
import janus.nn as nn  # noqa: E402
from janus.datasets import fashion_mnist  # noqa: E402
from janus.utils.data import DataLoader, DistributedSampler, TensorDataset  # noqa: E402


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(16 * 5 * 5, 84)
        self.fc2 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(self.conv1(x).relu())
        x = self.pool(self.conv2(x).relu())
        return self.fc2(self.fc1(x.flatten(1)).relu())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=("mlp", "cnn"), default="mlp")
    ap.add_argument("--batch", type=int, default=32, help="per rank")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--out", default="")
    ap.add_argument("--no-ddp", action="store_true", help="one process, no process group")
    ap.add_argument("--kill-rank", type=int, default=-1)
    ap.add_argument("--raise-rank", type=int, default=-1)
    ap.add_argument("--hang-rank", type=int, default=-1, help="sleeps instead of training (a rank that hangs)")
    ap.add_argument("--odd-rank", type=int, default=-1,
                    help="adds an op (x + 0.0, the same numbers) to its forward at the fault step: a guard miss "
                    "under replay on that rank only")
    ap.add_argument("--fault-step", type=int, default=3)
    ap.add_argument("--reduce", choices=("hooks", "after", "async"), default="hooks",
                    help="DDP: buckets reduced inside backward as they are ready (hooks), after it, or "
                    "inside it on the communication thread (async)")
    ap.add_argument("--depth", type=int, default=1, help="MLP: hidden layers of --hidden units")
    ap.add_argument("--bucket-cap-mb", type=float, default=None)
    ap.add_argument("--accumulate", type=int, default=1, help="backward passes per step (no_sync for all but the last)")
    args = ap.parse_args()

    if args.no_ddp:
        rank, world = 0, 1
    else:
        os.environ["JANUS_DDP_ASYNC_REDUCE"] = "1" if args.reduce == "async" else "0"  # MPI's thread level
        dist.init_process_group("mpi")
        rank, world = dist.get_rank(), dist.get_world_size()
    janus.manual_seed(1234 + rank)  # different per rank: DDP's broadcast makes rank 0's weights everyone's
    x, y = fashion_mnist(train=True)
    n = args.batch * world * args.steps * args.accumulate
    shape = (n, 784) if args.model == "mlp" else (n, 1, 28, 28)
    x = (x[:n].float() / 255.0).reshape(*shape)
    ds = TensorDataset(x, y[:n])
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=False)
    loader = DataLoader(ds, batch_size=args.batch, sampler=sampler)
    if args.model == "mlp":
        layers = [nn.Linear(784, args.hidden), nn.ReLU()]
        for _ in range(args.depth - 1):
            layers += [nn.Linear(args.hidden, args.hidden), nn.ReLU()]
        model = nn.Sequential(*layers, nn.Linear(args.hidden, 10))
    else:
        model = LeNet()
    reduce_s = []
    if args.no_ddp:
        janus.manual_seed(1234)
    else:
        model = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=args.bucket_cap_mb)
        model._reduce_in_backward = args.reduce != "after"
    opt = janus.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    losses, world_losses, times = [], [], []
    it = iter(loader)
    for step in range(args.steps):
        t0 = time.perf_counter()
        if step == args.fault_step and rank == args.kill_rank:
            os.kill(os.getpid(), signal.SIGKILL)
        if step == args.fault_step and rank == args.raise_rank:
            raise RuntimeError(f"rank {rank} fails on purpose at step {step}")
        if step == args.fault_step and rank == args.hang_rank:
            time.sleep(3600)
        opt.zero_grad()
        if not args.no_ddp:
            comm0 = (model._comm_seconds, model._wait_seconds)
        for k in range(args.accumulate):
            xb, yb = next(it)
            if step == args.fault_step and rank == args.odd_rank:
                xb = xb + 0.0
            if k < args.accumulate - 1 and not args.no_ddp:
                with model.no_sync():
                    loss_fn(model(xb), yb).backward()
            else:
                loss = loss_fn(model(xb), yb)
                loss.backward()
        if not args.no_ddp:  # this step's all-reduce seconds, and the main thread's wait in them
            reduce_s.append((model._comm_seconds - comm0[0], model._wait_seconds - comm0[1]))
        opt.step()
        lv = loss.detach().clone()
        if not args.no_ddp:
            dist.all_reduce(lv, dist.ReduceOp.AVG)
        losses.append(loss.item())
        world_losses.append(lv.item())
        times.append(time.perf_counter() - t0)
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().numpy().tobytes())
    if args.out:
        with open(f"{args.out}.rank{rank}.json", "w") as f:
            json.dump({"rank": rank, "world": world, "losses": losses, "world_losses": world_losses,
                       "params_sha256": h.hexdigest(), "step_seconds": times,
                       "reduce_seconds": reduce_s}, f)
    print(f"rank {rank}/{world}: final loss {world_losses[-1]:.6f}", flush=True)
    if not args.no_ddp:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
