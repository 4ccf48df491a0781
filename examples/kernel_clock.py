"""The examples' figure of time inside kernels: with JANUS_KERNEL_CLOCK=1
janus times every kernel call on the importing thread (janus._C._kernel_clock),
and the examples print the milliseconds per timed step spent inside kernels
next to their CPU time per step (benchmarks/bench_replay.py reads both: the
difference is the host time per step outside kernels)."""
import janus


def kernel_seconds():
    """Seconds inside kernels so far on this thread: 0 unless JANUS_KERNEL_CLOCK=1."""
    return janus._C._kernel_clock()[0]


def kernel_figure(seconds, steps):
    """', X ms in kernels/step' for the closing line, or '' with the clock off."""
    return f", {1e3 * seconds / max(steps, 1):.3f} ms in kernels/step" if seconds else ""
