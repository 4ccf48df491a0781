"""DataLoader worker processes: throughput of num_workers=2 against 0, and
what moving a batch between processes costs.

1. A map-style dataset whose __getitem__ costs 1 ms (`--work cpu`: Python
   busy work, like decoding or augmenting; `--work io`: a 1 ms sleep, like
   reading a file) returns a 3x32x32 float32 image and a label; batches of
   32; the time per pass with 0 and 2 workers (and --workers more), median
   of --repeat passes, and the ratio to 0 workers (below 1: faster).  A pass
   includes starting the workers, as a loop over a fresh DataLoader does.

2. Transfer: one batch of --mb MB of float32 sent from a worker process to
   this one, as the loader sends it (pickle protocol 5, tensor bytes out of
   band on a pipe, read into the new tensor's memory) against pickling the
   tensor in band (PyTorch-less default: janus.Tensor.__reduce_ex__ on a
   multiprocessing.Queue); median ms per batch.

    JANUS_BUILD_DIR=build python3 benchmarks/bench_loader.py [--batches 40] [--repeat 3] [--work cpu|io]
"""
import argparse
import multiprocessing as mp
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
os.environ.setdefault("JANUS_BUILD_DIR", os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "build"))

import janus  # noqa: E402
from janus.utils.data import DataLoader, Dataset  # noqa: E402
from janus.utils.data import _worker  # noqa: E402


class OneMs(Dataset):
    def __init__(self, n, work):
        self.n, self.work = n, work
        self.image = janus.randn(3, 32, 32)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.work == "io":
            time.sleep(0.001)
        else:
            end = time.perf_counter() + 0.001
            x = 0
            while time.perf_counter() < end:
                x += 1
        return self.image + i, i % 10


def time_pass(ds, workers, batch_size):
    t0 = time.perf_counter()
    n = 0
    for x, y in DataLoader(ds, batch_size=batch_size, num_workers=workers):
        n += x.shape[0]
    assert n == len(ds)
    return time.perf_counter() - t0


def _send_out_of_band(conn, mb, count):
    t = janus.ones(mb * 1024 * 1024 // 4)
    for _ in range(count):
        _worker.send_message(conn, *_worker._dumps((0, t)))
    conn.close()


def _send_in_band(q, mb, count):
    t = janus.ones(mb * 1024 * 1024 // 4)
    for _ in range(count):
        q.put((0, t))


def transfer(mb, count):
    ctx = mp.get_context("fork")
    r, w = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_send_out_of_band, args=(w, mb, count))
    t0 = time.perf_counter()
    p.start()
    w.close()
    times = []
    rcv = _worker.Receiver(r)
    for _ in range(count):
        t1 = time.perf_counter()
        _, t = rcv.recv()
        times.append(time.perf_counter() - t1)
    p.join()
    oob = statistics.median(times[1:]) * 1e3
    q = ctx.Queue()
    p = ctx.Process(target=_send_in_band, args=(q, mb, count))
    p.start()
    times = []
    for _ in range(count):
        t1 = time.perf_counter()
        _, t = q.get()
        times.append(time.perf_counter() - t1)
    p.join()
    inb = statistics.median(times[1:]) * 1e3
    del t0
    return oob, inb


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=40)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--workers", type=int, nargs="*", default=[2])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", choices=["cpu", "io"], default="cpu")
    ap.add_argument("--mb", type=int, default=8)
    args = ap.parse_args()
    ds = OneMs(args.batches * args.batch_size, args.work)
    print(f"DataLoader, __getitem__ = 1 ms ({args.work}), batch {args.batch_size}, {args.batches} batches, "
          f"{os.cpu_count()} cores")
    base = None
    for w in [0] + args.workers:
        t = statistics.median(time_pass(ds, w, args.batch_size) for _ in range(args.repeat))
        base = base or t
        print(f"  {w} workers: {t * 1e3:8.1f} ms per pass  ({t / base:.2f}x of 0 workers)")
    oob, inb = transfer(args.mb, 12)
    print(f"moving a {args.mb} MB batch from a worker: {oob:.2f} ms out of band (the loader's way), "
          f"{inb:.2f} ms pickled in band ({inb / oob:.1f}x)")


if __name__ == "__main__":
    main()
