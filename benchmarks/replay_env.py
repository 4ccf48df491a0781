"""What the replay benchmarks share: the environment a timed child process
runs in (this build, a fixed thread count, none of the replay or record
switches the caller's shell may have set), running one such child, and
the lines a kernel-clocked run prints."""
import os
import statistics
import subprocess
import sys


def child_env(build, threads):
    e = dict(os.environ)
    e["JANUS_BUILD_DIR"] = build
    for k in ("JANUS_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        e[k] = str(threads)
    for k in ("JANUS_REPLAY", "JANUS_REPLAY_STRICT", "JANUS_RECORD_DB", "JANUS_RECORD_RUN"):
        e.pop(k, None)
    return e


def run(cmd, e, timeout=1800):
    """Run a child to the end; its stdout and stderr together, or exit naming the failed command."""
    p = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return p.stdout + p.stderr


def print_kernel_split(cpu, kern, modes, eager="eager"):
    """Host time per step outside kernels per mode (CPU minus inside kernels,
    JANUS_KERNEL_CLOCK), and the most replay could gain with no host time:
    the eager mode's CPU per step over replay's time inside kernels."""
    host = {m: statistics.median(c - k for c, k in zip(cpu[m], kern[m])) for m in modes}
    print("  host ms/step outside kernels (CPU minus inside kernels): " +
          ", ".join(f"{m} {host[m]:.3f} (inside {statistics.median(kern[m]):.3f})" for m in modes))
    print(f"  with no host time at all, replay's own kernels allow {eager}/replay "
          f"{statistics.median(cpu['eager']) / statistics.median(kern['replay']):.2f}x at most")
