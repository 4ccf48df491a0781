"""janus.utils.checkpoint: activation checkpointing's API, run without
recomputation.

torch.utils.checkpoint trades compute for memory: forward keeps only the
segment's inputs and backward runs it again.  janus runs the function once
and keeps its activations, so values and gradients are what torch's give
(the random ops draw once, as torch's preserve_rng_state makes the rerun
draw the same), and no memory is saved: a limit (docs/ARCHITECTURE.md 7).
"""
__all__ = ["checkpoint", "checkpoint_sequential"]


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default", debug=False,
               preserve_rng_state=True, **kwargs):
    """function(*args, **kwargs), its activations kept (no recomputation in backward)."""
    if use_reentrant and kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    return function(*args, **kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """The modules (or functions) in order, each on the previous one's output."""
    if hasattr(functions, "children") and not isinstance(functions, (list, tuple)):
        functions = list(functions.children())
    for f in functions:
        input = f(input)
    return input
