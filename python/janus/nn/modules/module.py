"""torch.nn.modules.module's path to nn.Module (defined in janus/nn/module.py)."""
from ..module import Module  # noqa: F401
