"""torch.nn.modules.module's path to nn.Module (defined in janus/nn/module.py),
and to the load_state_dict hook wrapper a pickled module may hold."""
from ..module import Module, _IncompatibleKeys, _WrappedHook  # noqa: F401
