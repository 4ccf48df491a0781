"""janus.nn.parallel: DataParallel over the one device janus runs on.

torch.nn.DataParallel splits each batch over the visible GPUs.  Janus runs a
process on one device, so DataParallel here is the wrapped module itself
behind PyTorch's interface: forward calls module(*inputs), the module is
reachable as .module, and state_dict keys carry the "module." prefix, so
checkpoints match PyTorch's.  DistributedDataParallel (several processes)
is not supported.
"""
from ..module import Module

__all__ = ["DataParallel"]


class DataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = list(device_ids) if device_ids is not None else []
        self.output_device, self.dim = output_device, dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)
