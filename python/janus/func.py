"""janus.func: torch.func's functional_call.

functional_call(module, params, args) runs the module with the given
tensors in place of its parameters and buffers and puts the originals back
afterwards (janus/nn/utils/stateless.py does the swapping).  Gradients flow
to the given tensors, so a MAML-style inner step works as in torch:

    params = {n: p - lr * g for (n, p), g in zip(model.named_parameters(), grads)}
    loss = loss_fn(functional_call(model, params, (x,)), y)
    loss.backward()          # reaches the original parameters through params

torch.func's transforms (vmap, grad, jacrev, jacfwd, hessian, ...) need
function transforms janus does not have; janus.autograd.grad and
janus.autograd.functional.jacobian / vjp compute the same first-order
quantities.
"""
from collections.abc import Sequence as _Sequence

__all__ = ["functional_call"]


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """module(*args, **kwargs) with the tensors of parameter_and_buffer_dicts
    in place of the module's parameters and buffers (torch.func.functional_call).

    parameter_and_buffer_dicts: {dotted name: tensor}, or a list/tuple of
    such dicts with distinct keys (used together).  args: a tuple, or one
    value (not a tuple) passed as the only positional argument; kwargs: the
    keyword arguments.  tie_weights: a tensor the module holds under several
    names takes the given value under all of them (different values for
    them: ValueError).  strict: the given names must be exactly the
    module's parameter and buffer names (RuntimeError naming the missing
    and unexpected keys).  The module's own tensors are back in place when
    this returns or raises."""
    from .nn.utils.stateless import _functional_call
    if isinstance(parameter_and_buffer_dicts, dict):
        parameters_and_buffers = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, _Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        counts = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is ambiguous")
        parameters_and_buffers = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, "
                         f"but got {type(parameter_and_buffer_dicts)}")
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
