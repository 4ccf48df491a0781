"""A small 2-rank training step over every collective of the op table, for
test_distributed.py: launched as `mpirun -n 2 python dist_ops_train.py`
(or under `janus record / replay --nproc 2`).

Each step: a forward through torch.distributed.nn.functional's all_gather
(every rank's activations) and reduce_scatter (this rank's share back), a
loss read with item(), backward (whose gradients cross ranks through the
derivatives' reduce_scatter and all_gather), the gradient averaged with
all_reduce AVG, torch.distributed's all_gather / reduce_scatter_tensor of a
no-grad statistic, an SGD update and a barrier.  Writes, per rank, to
OUT.rank<R>.json: the losses, the statistics, the final parameters' bytes
(hex) and, with an option, what a fault did.  Options:
  --hold-rank R     rank R keeps every step's all-reduced statistic (the
                    recording drops it at once): Python holds a value only a
                    collective computes, so replay refuses that graph there
  --bad-index-step K  at step K every rank reads row 99 of 8 (the index comes
                    from numpy, so the graph cannot see it): the replayed
                    graph fails after its collectives ran; the error is kept
  --saved-sum       the loss adds 0.01 * every.sum(): autograd saves that sum
                    (mul saves both factors) and never reads it, so the graph
                    does not keep it and only the all_gather computes it
  --hold-sum-rank R rank R (with --saved-sum) also keeps every step's sum and
                    reads them at the end (the recording drops them at once)
"""
import argparse
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "python"))
import numpy as np  # noqa: E402
import janus  # noqa: E402
import janus.distributed as dist  # noqa: E402
import janus.distributed.nn.functional as F  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--out", required=True)
    ap.add_argument("--hold-rank", type=int, default=-1)
    ap.add_argument("--bad-index-step", type=int, default=-1)
    ap.add_argument("--saved-sum", action="store_true")
    ap.add_argument("--hold-sum-rank", type=int, default=-1)
    args = ap.parse_args()
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    janus.manual_seed(0)  # the same parameters on every rank
    w = janus.randn(4, 3, requires_grad=True)
    opt = janus.optim.SGD([w], lr=0.1)
    data = np.random.default_rng(rank).standard_normal((args.steps, 4, 4)).astype(np.float32)
    losses, stats, held, sums, error = [], [], [], [], None
    for step in range(args.steps):
        opt.zero_grad()
        x = janus.from_numpy(data[step])
        row = 99 if step == args.bad_index_step else step % (4 * world)
        idx = janus.from_numpy(np.array([row], dtype=np.int64))
        h = x @ w                                    # [4, 3] on this rank
        every = janus.cat(F.all_gather(h))          # [4 * world, 3]
        y = janus.tanh(every) * (rank + 1.0)
        share = F.reduce_scatter(janus.zeros(4, 3), list(y.chunk(world)))  # [4, 3]
        picked = janus.index_select(every, 0, idx)  # after the collectives of its segment
        loss = (share * share).mean() + picked.sum()  # add saves no input: the graph keeps what backward reads
        if args.saved_sum:
            total = every.sum()
            loss = loss + 0.01 * total
            if rank == args.hold_sum_rank:
                sums.append(total)
        try:
            losses.append(loss.item())
        except Exception as e:  # a replayed graph failed after its collectives ran
            error = f"{type(e).__name__}: {e}"
            break
        loss.backward()
        with janus.no_grad():
            dist.all_reduce(w.grad, dist.ReduceOp.AVG)
            st = (h * h).sum(0)                       # [3]
            z = janus.zeros(world * 3)
            dist.all_gather_into_tensor(z, st)
            parts = [janus.zeros(3) for _ in range(world)]
            dist.all_gather(parts, st + 1.0)
            red = janus.zeros(3)
            dist.reduce_scatter_tensor(red, janus.cat([z, z]).reshape(world, -1)[:, :3].contiguous())
            kept = st * 1.0
            dist.all_reduce(kept)                     # read only under --hold-rank
            if rank == args.hold_rank:
                held.append(kept)
            del kept
        opt.step()
        stats.append(float((z.sum() + parts[1].sum() + red.sum()).item()))
        dist.barrier()
    out = {"rank": rank, "losses": losses, "stats": stats, "params": np.asarray(w.detach().numpy()).tobytes().hex(),
           "held": [t.tolist() for t in held], "sums": [t.item() for t in sums], "error": error}
    with open(f"{args.out}.rank{rank}.json", "w") as f:
        json.dump(out, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
