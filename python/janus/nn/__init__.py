"""janus.nn: modules, layers, losses, functional forms and initializers with
PyTorch's names and semantics (janus.nn.modules holds the layers, laid out
as torch.nn.modules is); janus.nn.attention holds torch's sdpa_kernel
selection (accepted, janus picks its own kernel)."""
from . import attention, functional, init, parallel, utils  # noqa: F401
from .module import Module  # noqa: F401
from .modules import *  # noqa: F401,F403
from .parallel import DataParallel  # noqa: F401
from .parameter import Parameter  # noqa: F401
