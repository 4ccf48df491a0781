"""janus.random: torch.random's functions over janus's one generator.

janus draws every random number, on the CPU and on CUDA, from the default
generator's counter-based Philox stream (docs/ARCHITECTURE.md 3.3), so the
CPU state is the whole state: fork_rng saves and restores it for any
devices named.
"""
import contextlib

from ._factories import default_generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state

__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "fork_rng",
           "default_generator"]


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type="cuda"):
    """Inside the block the script may reseed or draw; at its end the generator is as before."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
