"""What the replay benchmarks share: the environment a timed child process
runs in (this build, a fixed thread count, none of the replay or record
switches the caller's shell may have set), and running one such child."""
import os
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
