"""Training steps per second of the three examples, janus eager next to
PyTorch eager (when installed), same models, batch sizes, data and thread
count, in one run.  Medians of repeats that alternate between janus and
torch (so a noisy shared machine slows both alike); reported as ratios.

    JANUS_BUILD_DIR=build python3 benchmarks/bench_train.py [--repeats 5] [--steps 20]
"""
import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "examples"))


def _early_threads(argv):
    """--threads N, read before janus loads OpenBLAS: janus.set_num_threads
    sizes janus's own pool only, and OpenBLAS fixes its thread count when it
    loads, so OPENBLAS_NUM_THREADS must be set first for a fair comparison
    with torch.set_num_threads (which covers torch's BLAS too)."""
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return None


if _early_threads(sys.argv[1:]) and "OPENBLAS_NUM_THREADS" not in os.environ:
    os.environ["OPENBLAS_NUM_THREADS"] = _early_threads(sys.argv[1:])

import numpy as np  # noqa: E402

import janus  # noqa: E402
import janus.nn as jnn  # noqa: E402

try:
    if janus._C._setting_value("JANUS_BENCH_NO_TORCH"):  # replay_step.py: janus only
        raise ImportError
    import torch
    import torch.nn as tnn
except ImportError:
    torch = None


def mlp(nn):
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))


def cnn(nn):
    class LeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.pool = nn.MaxPool2d(2)
            self.fc1 = nn.Linear(400, 120)
            self.fc2 = nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, 10)

        def forward(self, x):
            x = self.pool(self.conv1(x).relu())
            x = self.pool(self.conv2(x).relu())
            x = x.flatten(1)
            return self.fc3(self.fc2(self.fc1(x).relu()).relu())
    return LeNet()


def lstm(nn, lib, vocab=96, hidden=128):
    class CharLSTM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, 32)
            self.cell = nn.LSTMCell(32, hidden)
            self.head = nn.Linear(hidden, vocab)

        def forward(self, x):
            b, t = x.shape
            e = self.embed(x)
            dev = {} if e.device.type == "cpu" else {"device": e.device}  # GPU runs (benchmarks/gpu)
            h = lib.zeros(b, hidden, **dev)
            c = lib.zeros(b, hidden, **dev)
            outs = []
            for i in range(t):
                h, c = self.cell(e[:, i], (h, c))
                outs.append(h)
            return self.head(lib.stack(outs, 1).reshape(b * t, hidden))
    return CharLSTM()


def workloads(rng):
    x_img = rng.random((128, 1, 28, 28), dtype=np.float32)
    y10 = rng.integers(0, 10, 128)
    x_c = rng.random((64, 1, 28, 28), dtype=np.float32)
    y_c = rng.integers(0, 10, 64)
    seq = rng.integers(0, 96, (32, 33))
    return [
        ("fashion_mlp (batch 128)", lambda nn, lib: mlp(nn), x_img, y10),
        ("fashion_cnn (batch 64)", lambda nn, lib: cnn(nn), x_c, y_c),
        ("char_lstm (batch 32, 32 steps)", lambda nn, lib: lstm(nn, lib), seq[:, :-1], seq[:, 1:].reshape(-1)),
    ]


def make_step(lib, nn, make, x, y, wrap=None, device=None):
    """A training step (Adam, cross entropy) of model make(nn, lib) on one
    fixed batch, warmed up; wrap(model) -> the module to call (e.g.
    torch.compile), the optimizer keeps the original's parameters; device
    (e.g. "cuda"): model and batch are moved there first."""
    model = make(nn, lib)
    if device is not None:
        model = model.to(device)
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    if wrap is not None:
        model = wrap(model)
    xs, ys = lib.tensor(x), lib.tensor(y)
    if device is not None:
        xs, ys = xs.to(device), ys.to(device)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(xs), ys)
        loss.backward()
        opt.step()
        return loss

    for _ in range(3):
        step().item()
    return step


def openblas_only(step):
    """step with janus's small-GEMM kernel off: every float32 GEMM goes to
    OpenBLAS (the level is process-wide, so it is set per call)."""
    from janus import _C

    def run():
        _C._sgemm_level(0)
        try:
            return step()
        finally:
            _C._sgemm_level(2)  # the best kernel this CPU has
    return run


def unfused(step):
    """step with janus's fused ops switched off (module flags, read per call)."""
    import janus.nn.modules.rnn as modules
    import janus.optim.adam as adam
    import janus.optim.sgd as sgd

    def run():
        saved = modules._FUSED_CELLS, adam._FUSED, sgd._FUSED
        modules._FUSED_CELLS = adam._FUSED = sgd._FUSED = False
        try:
            return step()
        finally:
            modules._FUSED_CELLS, adam._FUSED, sgd._FUSED = saved
    return run


CLOCK = time.perf_counter


def rate(step, steps):
    t0 = CLOCK()
    for _ in range(steps):
        loss = step()
    loss.item()
    return steps / (CLOCK() - t0)


def time_interleaved(steppers, steps, repeats):
    """Median steps/s of each stepper; repeats alternate between them (in a
    rotating order) so that load on a shared machine hits all alike."""
    rates = [[] for _ in steppers]
    for r in range(repeats):
        order = list(range(len(steppers)))
        order = order[r % len(order):] + order[:r % len(order)]
        for k in order:
            rates[k].append(rate(steppers[k], steps))
    return [statistics.median(x) for x in rates]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="cpu: process CPU time instead of wall time; steadier on a loaded machine "
                    "(use with --threads 1, so that no idle worker thread spins)")
    ap.add_argument("--unfused", action="store_true",
                    help="also time janus with its fused ops (LSTM/GRU cells, Adam/SGD updates) switched "
                    "off, interleaved in the same run: the fused ops' speedup")
    ap.add_argument("--openblas", action="store_true",
                    help="also time janus with its small-GEMM kernel (CPUs with AVX-512) off, every GEMM in "
                    "OpenBLAS, interleaved in the same run: the kernel's speedup")
    ap.add_argument("--only", default="", help="comma-separated workload name prefixes (mlp,cnn,lstm -> "
                    "fashion_mlp, fashion_cnn, char_lstm); default all")
    args = ap.parse_args()
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    janus.set_num_threads(args.threads)
    if torch is not None:
        torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    print(f"training steps/s ({args.clock} clock), {args.threads} threads, "
          f"median of {args.repeats} x {args.steps} steps")
    print(f"{'workload':34s} {'janus eager':>12s} {'torch eager':>12s} {'janus/torch':>12s}")
    keys = [k.strip() for k in args.only.split(",") if k.strip()]
    for name, make, x, y in workloads(rng):
        if keys and not any(k in name for k in keys):
            continue
        steppers = [make_step(janus, jnn, make, x, y)]
        if torch is not None:
            steppers.append(make_step(torch, tnn, make, x, y))
        if args.unfused:
            steppers.append(unfused(make_step(janus, jnn, make, x, y)))
        if args.openblas:
            steppers.append(openblas_only(make_step(janus, jnn, make, x, y)))
        r = time_interleaved(steppers, args.steps, args.repeats)
        j, t = r[0], (r[1] if torch else float("nan"))
        ratio = j / t if torch else float("nan")
        extra = ""
        if args.unfused:
            u = r[2 if torch else 1]
            extra += f"   unfused {u:8.1f}  fused/unfused {j / u:5.2f}x"
        if args.openblas:
            extra += f"   openblas-only {r[-1]:8.1f}  kernel/openblas {j / r[-1]:5.2f}x"
        print(f"{name:34s} {j:12.1f} {t:12.1f} {ratio:11.2f}x{extra}", flush=True)
    if torch is None:
        print("(PyTorch not installed: pip install torch to compare)")


if __name__ == "__main__":
    main()
