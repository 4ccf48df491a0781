"""InstanceNorm1d/2d (torch.nn.modules.instancenorm): each sample's channels
normalized over their own positions; no affine parameters and no running
statistics unless asked (PyTorch's defaults)."""
import janus

from .. import functional as F
from ..module import Module
from ..parameter import Parameter
from .batchnorm import _default_num_batches_tracked


class _InstanceNorm(Module):
    _nd = 2
    _version = 2  # torch's _NormBase

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(janus.ones(num_features, dtype=dtype))
            self.bias = Parameter(janus.zeros(num_features, dtype=dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", janus.zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", janus.ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", janus.tensor(0, dtype=janus.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        if device is not None:
            self.to(device)

    def forward(self, x):
        batched = self._nd + 2
        if x.ndim not in (batched - 1, batched):
            raise ValueError(f"expected {batched - 1}D or {batched}D input (got {x.ndim}D input)")
        unbatched = x.ndim == batched - 1
        if unbatched:
            x = x.unsqueeze(0)
        use_input_stats = self.training or not self.track_running_stats
        y = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias, use_input_stats,
                            self.momentum, self.eps)
        return y.squeeze(0) if unbatched else y

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        version = local_metadata.get("version", None)
        # torch's _InstanceNorm: checkpoints before version 1 held running stats it no longer has
        if version is None and not self.track_running_stats:
            running_stats_keys = [prefix + n for n in ("running_mean", "running_var") if prefix + n in state_dict]
            if running_stats_keys:
                klass = type(self).__name__
                error_msgs.append(
                    "Unexpected running stats buffer(s) {names} for {klass} "
                    "with track_running_stats=False. If state_dict is a "
                    "checkpoint saved before 0.4.0, this may be expected "
                    "because {klass} does not track running stats by default "
                    "since 0.4.0. Please remove these keys from state_dict. If "
                    "the running stats are actually needed, instead set "
                    "track_running_stats=True in {klass} to enable them. See "
                    "the documentation of {klass} for details.".format(
                        names=" and ".join(f'"{k}"' for k in running_stats_keys), klass=klass))
                for key in running_stats_keys:
                    state_dict.pop(key)
        _default_num_batches_tracked(self, state_dict, prefix, local_metadata)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    _nd = 1


class InstanceNorm2d(_InstanceNorm):
    _nd = 2
