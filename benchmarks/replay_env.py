"""What the replay benchmarks share: the environment a timed child process
runs in (this build, a fixed thread count, none of the replay or record
switches the caller's shell may have set)."""
import os


def child_env(build, threads):
    e = dict(os.environ)
    e["JANUS_BUILD_DIR"] = build
    for k in ("JANUS_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        e[k] = str(threads)
    for k in ("JANUS_REPLAY", "JANUS_REPLAY_STRICT", "JANUS_RECORD_DB", "JANUS_RECORD_RUN"):
        e.pop(k, None)
    return e
