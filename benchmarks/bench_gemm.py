"""float32 GEMM throughput: janus's mm (cblas_sgemm through the dispatcher)
next to numpy's a @ b, square sizes 256..2048, in the same process.
`--small`: instead, the products of a GRU/LSTM step at a small batch (its
x @ W^T + b, the backward's dY @ W and the accumulated dW += dY^T @ x), CPU
us per call through the Python API on one thread: janus with its small-GEMM
kernel, janus with the kernel's AVX2 port (on AVX-512 CPUs, where the port
would not otherwise run: `_C._sgemm_level(1)`), janus with OpenBLAS for them
(`_C._sgemm_level(0)`), and PyTorch
when it imports -- dispatch included, so the differences between janus's
two columns are the kernels' (the C-level figures are in
benchmarks/results/fastpath.md).

Run from the repository root:
    JANUS_BUILD_DIR=build python3 benchmarks/bench_gemm.py [--quick | --small]

Each size alternates janus and numpy calls (so load changes hit both), runs
until about BUDGET seconds per size are spent, and reports medians.  The two
may link different OpenBLAS builds (numpy wheels bundle their own), so the
ratio measures the library plus our dispatch overhead, not our code alone.
It prints the kernel family ("core") each OpenBLAS picked: Debian's 0.3.21
does not recognise recent Xeons and falls back to SSE3 "Prescott" kernels
(about 5x slower); OPENBLAS_CORETYPE=SkylakeX (what numpy's newer OpenBLAS
picks itself) fixes that.
"""
import ctypes
import glob
import os
import statistics
import sys
import time

import numpy as np

_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(_root, "python"))
os.environ.setdefault("JANUS_BUILD_DIR", os.path.join(_root, "build"))

from janus import _C  # noqa: E402

SIZES = (256, 512, 1024, 2048)
BUDGET = 8.0  # seconds per size, both libraries together
MIN_REPS, MAX_REPS = 1, 50  # calls per block
ROUNDS = 3  # janus block, numpy block, repeated
PAUSE = 0.2  # seconds for the other library's threads to go idle


def bench(n, budget):
    """Alternating blocks of calls, a pause between them: OpenBLAS threads spin
    for a while after each call, and two libraries' spinning pools on few
    cores would slow whichever runs next."""
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    ja, jb = _C._from_buffer(a), _C._from_buffer(b)

    def run_janus():
        return _C._op("mm", [ja, jb], ())

    def run_numpy():
        return a @ b

    # warm up (thread pools, page faults) and check we compute the same thing
    got = np.asarray(memoryview(run_janus()))
    want = run_numpy()
    err = float(np.max(np.abs(got - want)) / (np.max(np.abs(want)) + 1e-30))
    t0 = time.perf_counter()
    run_janus()
    one = max(time.perf_counter() - t0, 1e-6)
    reps = int(min(MAX_REPS, max(MIN_REPS, budget / 2 / ROUNDS / one)))
    times = {"janus": [], "numpy": []}
    for _ in range(ROUNDS):
        for name, fn in (("janus", run_janus), ("numpy", run_numpy)):
            time.sleep(PAUSE)
            fn()
            for _ in range(reps):
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
    flop = 2.0 * n * n * n
    gj = flop / statistics.median(times["janus"]) / 1e9
    gn = flop / statistics.median(times["numpy"]) / 1e9
    return gj, gn, len(times["janus"]), err


def blas_cores():
    """(janus's OpenBLAS core, numpy's OpenBLAS core), '?' where unknown."""
    def core(lib, names):
        for n in names:
            f = getattr(lib, n, None)
            if f is not None:
                f.restype = ctypes.c_char_p
                return f().decode()
        return "?"
    try:
        jc = core(ctypes.CDLL("libopenblas.so.0"), ["openblas_get_corename"])
    except OSError:
        jc = "?"
    nc = "?"
    libs = glob.glob(os.path.join(os.path.dirname(np.__file__), "..", "numpy.libs", "*openblas*"))
    if libs:
        try:
            nc = core(ctypes.CDLL(libs[0]), ["scipy_openblas_get_corename64_", "openblas_get_corename64_",
                                             "scipy_openblas_get_corename", "openblas_get_corename"])
        except OSError:
            pass
    return jc, nc


# (what, M, N, K): linear is x[M,K] @ W[N,K]^T + b; mm is dY[M,K] @ W[K,N];
# acc is C[M,N] + dY[K,M]^T @ x[K,N] (addmm, as into the accumulated gradient)
SMALL = (("linear", 8, 96, 32), ("linear", 8, 32, 32), ("linear", 4, 96, 20), ("linear", 4, 512, 128),
         ("mm", 8, 32, 96), ("mm", 4, 20, 96), ("acc", 96, 32, 8), ("acc", 512, 128, 4))


def small_calls(what, M, N, K, lib, rng):
    """A no-argument function running the product once in library lib."""
    if what == "linear":
        arrs = [rng.standard_normal(s, dtype=np.float32) for s in ((M, K), (N, K), (N,))]
    elif what == "mm":
        arrs = [rng.standard_normal(s, dtype=np.float32) for s in ((M, K), (K, N))]
    else:
        arrs = [rng.standard_normal(s, dtype=np.float32) for s in ((M, N), (K, M), (K, N))]
    if lib == "torch":
        import torch
        t = [torch.from_numpy(a) for a in arrs]
        if what == "linear":
            return lambda: torch.nn.functional.linear(t[0], t[1], t[2])
        if what == "mm":
            return lambda: torch.mm(t[0], t[1])
        gt = t[1].t()
        return lambda: torch.addmm(t[0], gt, t[2])
    import janus
    t = [janus.tensor(a) for a in arrs]
    if what == "linear":
        return lambda: janus.nn.functional.linear(t[0], t[1], t[2])
    if what == "mm":
        return lambda: janus.mm(t[0], t[1])
    gt = t[1].t()
    return lambda: janus.addmm(t[0], gt, t[2])


LEVEL = {"janus": 2, "janus/AVX2": 1, "janus/OpenBLAS": 0}


def bench_small(budget):
    libs = ["janus"] + (["janus/AVX2"] if _C._sgemm_level(-1) == 2 else []) + ["janus/OpenBLAS"]
    try:
        import torch
        torch.set_num_threads(1)
        libs.append("torch")
    except ImportError:
        torch = None
    _C.set_num_threads(1)
    print(f"small float32 products, one thread, us per call (median of blocks); kernel level "
          f"{_C._sgemm_level(-1)} (2: janus's AVX-512 kernel on this CPU, 1: its AVX2 port)")
    print(f"{'product':>8} {'M':>4} {'N':>4} {'K':>4} " + " ".join(f"{n:>15}" for n in libs))
    rng = np.random.default_rng(0)
    for what, M, N, K in SMALL:
        fns = {lib: small_calls(what, M, N, K, "torch" if lib == "torch" else "janus", rng) for lib in libs}
        times = {lib: [] for lib in libs}
        reps, t_end = 200, time.perf_counter() + budget
        while time.perf_counter() < t_end:
            for lib in libs:  # alternating blocks, so load changes hit every column
                _C._sgemm_level(LEVEL.get(lib, 2))
                f = fns[lib]
                f()
                t0 = time.process_time()  # CPU time: a shared machine's waits left out
                for _ in range(reps):
                    f()
                times[lib].append((time.process_time() - t0) / reps * 1e6)
        _C._sgemm_level(2)
        print(f"{what:>8} {M:>4} {N:>4} {K:>4} " + " ".join(f"{statistics.median(times[n]):>15.2f}" for n in libs),
              flush=True)


def main():
    if "--small" in sys.argv:
        bench_small(1.0 if "--quick" in sys.argv else 4.0)
        return
    budget = 2.0 if "--quick" in sys.argv else BUDGET
    jc, nc = blas_cores()
    print(f"float32 GEMM, janus threads={_C.get_num_threads()}, numpy {np.__version__}, cores={os.cpu_count()}")
    print(f"OpenBLAS kernels: janus {jc}, numpy {nc}  (OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')})")
    if jc in ("Prescott", "Core2", "Penryn", "Nehalem", "Dunnington") and nc not in ("?", jc):
        print(f"warning: janus's OpenBLAS runs generic {jc} kernels on this CPU; "
              f"try OPENBLAS_CORETYPE={nc}")
    print(f"{'size':>6} {'janus GFLOP/s':>14} {'numpy GFLOP/s':>14} {'janus/numpy':>12} {'calls':>6} {'rel.err':>9}")
    ratios = []
    for n in SIZES:
        gj, gn, reps, err = bench(n, budget)
        ratios.append(gj / gn)
        print(f"{n:>6} {gj:>14.1f} {gn:>14.1f} {gj / gn:>11.2f}x {reps:>6} {err:>9.1e}", flush=True)
    print(f"geometric mean janus/numpy: {statistics.geometric_mean(ratios):.2f}x")


if __name__ == "__main__":
    main()
