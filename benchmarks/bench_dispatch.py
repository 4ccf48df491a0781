"""Per-call overhead of small ops from Python: janus vs numpy vs PyTorch eager.

Each row times one call on 4-element float32 tensors (so the time is the
Python -> dispatcher -> kernel -> Python path, not arithmetic), and a call
of a module that returns its input against its forward alone (what
nn.Module.__call__ adds per call), reports the
median over repeats of timeit batches in microseconds, and the ratio to
janus.  Run from the repository root:

    JANUS_BUILD_DIR=build python3 benchmarks/bench_dispatch.py [--repeat 15] [--number 20000]
"""
import argparse
import os
import statistics
import sys
import timeit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
os.environ.setdefault("JANUS_BUILD_DIR", os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "build"))

import janus  # noqa: E402

try:
    import numpy as np
except ImportError:  # numpy is optional
    np = None
try:
    import torch
except ImportError:
    torch = None

# name -> (janus stmt, numpy stmt or None, torch stmt or None)
CASES = [
    ("a + b", "a + b", "an + bn", "at + bt"),
    ("janus.add(a, b)", "janus.add(a, b)", "np.add(an, bn)", "torch.add(at, bt)"),
    ("a.add(b)", "a.add(b)", None, "at.add(bt)"),
    ("a.sum()", "a.sum()", "an.sum()", "at.sum()"),
    ("a.relu()", "a.relu()", "np.maximum(an, 0)", "at.relu()"),
    ("a * 2.0", "a * 2.0", "an * 2.0", "at * 2.0"),
    ("a.add_(b)", "a.add_(b)", "np.add(an, bn, out=an)", "at.add_(bt)"),
    ("a[1]", "a[1]", "an[1]", "at[1]"),
    ("a.view(2, 2)", "a.view(2, 2)", "an.reshape(2, 2)", "at.view(2, 2)"),
    ("a.shape", "a.shape", "an.shape", "at.shape"),
    # a module call's own cost (nn.Module.__call__, csrc/module_call.c): m returns its input
    ("m(a)", "m(a)", None, "mt(at)"),
    ("m.forward(a)", "m.forward(a)", None, "mt.forward(at)"),
]


def identity_module(nn):
    class Identity(nn.Module):
        def forward(self, x):
            return x
    return Identity()


def measure(stmt, env, number, repeat):
    timeit.timeit(stmt, globals=env, number=max(number // 10, 1))  # warm up
    runs = timeit.repeat(stmt, globals=env, number=number, repeat=repeat)
    return statistics.median(runs) / number * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--number", type=int, default=20000)
    args = ap.parse_args()

    env = {"janus": janus, "np": np, "torch": torch}
    env["a"] = janus.tensor([1.0, 2.0, 3.0, 4.0])
    env["b"] = janus.tensor([0.5, 0.25, 0.125, 1.0])
    if np is not None:
        env["an"] = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
        env["bn"] = np.array([0.5, 0.25, 0.125, 1.0], np.float32)
    env["m"] = identity_module(janus.nn)
    if torch is not None:
        env["mt"] = identity_module(torch.nn)
        env["at"] = torch.tensor([1.0, 2.0, 3.0, 4.0])
        env["bt"] = torch.tensor([0.5, 0.25, 0.125, 1.0])

    print(f"janus {janus.__version__}; numpy {np.__version__ if np else 'not installed'}; "
          f"torch {torch.__version__ if torch else 'not installed'}")
    print(f"median of {args.repeat} x {args.number} calls, 4-element float32, microseconds per call\n")
    hdr = f"{'op':<18}{'janus us':>10}{'numpy us':>10}{'np/janus':>10}{'torch us':>10}{'torch/janus':>13}"
    print(hdr)
    print("-" * len(hdr))
    for name, js, ns, ts in CASES:
        tj = measure(js, env, args.number, args.repeat)
        if np is not None and ns is not None:
            tn = measure(ns, env, args.number, args.repeat)
            n_s, nr = f"{tn:10.3f}", f"{tn / tj:10.2f}"
        else:
            n_s, nr = f"{'-':>10}", f"{'-':>10}"
        if torch is not None and ts is not None:
            tt = measure(ts, env, args.number, args.repeat)
            t_s, tr = f"{tt:10.3f}", f"{tt / tj:13.2f}"
        else:
            t_s = f"{'not inst.' if torch is None else '-':>10}"
            tr = f"{'-':>13}"
        print(f"{name:<18}{tj:10.3f}{n_s}{nr}{t_s}{tr}")
    if torch is None:
        print("\ntorch: not installed (PyTorch eager is ~2.4 us per small op on this machine)")


if __name__ == "__main__":
    main()
