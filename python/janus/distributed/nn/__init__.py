"""janus.distributed.nn: torch.distributed.nn's differentiable collectives
(the functional module)."""
from . import functional  # noqa: F401
