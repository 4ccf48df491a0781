"""The kernel clock (janus._C._kernel_clock, JANUS_KERNEL_CLOCK): off by
default (nothing counted), on it counts each outermost kernel call once on
the calling thread and sums its time, which never exceeds the wall time
around the ops; JANUS_KERNEL_CLOCK=1 turns it on at `import janus` and the
examples then print their ms per step inside kernels (benchmarks/bench_replay.py's
host time outside kernels).  The graph executor's side: tests/c/test_exec.c
(test_compiled)."""
import os
import re
import subprocess
import sys
import time

import numpy as np

import janus
from janus import _C

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def clocked(on):
    _C._kernel_clock(on)


def test_off_counts_nothing():
    clocked(False)
    s0, c0 = _C._kernel_clock()
    a = janus.randn(16, 16)
    (a @ a + 1).relu().sum()
    assert _C._kernel_clock() == (s0, c0)


def test_on_counts_each_kernel_once_and_times_it():
    a, b = janus.randn(256, 256), janus.randn(256, 256)
    clocked(True)
    try:
        s0, c0 = _C._kernel_clock()
        t0 = time.perf_counter()
        y = a @ b
        t1 = time.perf_counter()
        s1, c1 = _C._kernel_clock()
        z = y + 1.0  # one more kernel (the number is wrapped, not a kernel)
        s2, c2 = _C._kernel_clock()
    finally:
        clocked(False)
    assert c1 - c0 == 1 and c2 - c1 == 1
    assert 0 < s1 - s0 <= t1 - t0 and s2 > s1
    np.testing.assert_allclose(z.numpy(), a.numpy() @ b.numpy() + 1.0, rtol=1e-4, atol=1e-4)


def test_the_setting_turns_it_on_and_the_examples_print_it():
    env = {k: v for k, v in os.environ.items() if not k.startswith("JANUS_")}
    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    if "JANUS_BUILD_DIR" in os.environ:
        env["JANUS_BUILD_DIR"] = os.environ["JANUS_BUILD_DIR"]
    code = "import janus; (janus.randn(8, 8) @ janus.randn(8, 8)).sum(); print(janus._C._kernel_clock()[1])"
    for on, counted in (("1", True), ("0", False)):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=dict(env, JANUS_KERNEL_CLOCK=on), timeout=120)
        assert r.returncode == 0, r.stderr
        assert (int(r.stdout) > 0) == counted, r.stdout
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "fashion_mlp.py"), "--steps", "20",
                        "--warmup", "5", "--epochs", "1", "--train-size", "2000"], capture_output=True, text=True,
                       env=dict(env, JANUS_KERNEL_CLOCK="1"), timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    m = re.search(r"([\d.]+) ms CPU/step, ([\d.]+) ms in kernels/step\)", r.stdout)
    assert m and 0 < float(m.group(2)), r.stdout[-500:]
