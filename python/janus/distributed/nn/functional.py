"""torch.distributed.nn.functional: collectives that return new tensors and
carry gradients, over the table ops of janus.distributed (their derivatives
are derivatives.c's: all_gather's input gradient is the reduce_scatter SUM
of the output gradients, reduce_scatter's the all_gather of the output's,
all_reduce's the same all_reduce of it).  Every rank must call backward, as
every rank ran the forward's collectives.
"""
from ..._ops import ops as _ops
from ... import distributed as _dist
from .. import ReduceOp, _C, _check_group, _world

__all__ = ["all_gather", "reduce_scatter", "all_reduce"]


def all_gather(tensor, group=None):
    """A tuple of every rank's tensor, by rank."""
    _check_group(group, "all_gather")
    world = _world("all_gather")
    _C._dist_flush()
    flat = _ops.all_gather(tensor).reshape((world,) + tuple(tensor.shape))
    return tuple(flat[r] for r in range(world))


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None):
    """output = op over every rank's input_list[this rank]; returns output."""
    _dist.reduce_scatter(output, input_list, op=op, group=group)
    return output


def all_reduce(tensor, op=ReduceOp.SUM, group=None):
    """op over every rank's tensor, as a new tensor (SUM and AVG differentiable)."""
    _check_group(group, "all_reduce")
    _C._dist_flush()
    out = tensor.clone()
    _ops.all_reduce_(out, op=int(op))
    return out
