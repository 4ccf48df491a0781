"""Batch normalization (torch.nn.modules.batchnorm)."""

import janus

from .. import functional as F
from ..module import Module
from ..parameter import Parameter


class _BatchNorm(Module):
    _dims = ()
    _version = 2  # torch's _NormBase: version 2 added num_batches_tracked

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, dtype=None):
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

    def reset_running_stats(self):
        if self.track_running_stats:
            with janus.no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            with janus.no_grad():
                self.weight.fill_(1)
                self.bias.zero_()

    def forward(self, x):
        if x.ndim not in self._dims:
            raise ValueError(f"expected {' or '.join(f'{d}D' for d in self._dims)} input (got {x.ndim}D input)")
        if x.shape[1] != self.num_features:
            raise RuntimeError(f"{type(self).__name__}: input has {x.shape[1]} channels, expected {self.num_features}")
        use_batch = self.training or not self.track_running_stats
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with janus.no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # torch's cumulative moving average (a host read)
                momentum = 1.0 / float(self.num_batches_tracked)
        return F.batch_norm(x, self.running_mean if not use_batch or self.training else None,
                            self.running_var if not use_batch or self.training else None,
                            self.weight, self.bias, use_batch, momentum, self.eps)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        _default_num_batches_tracked(self, state_dict, prefix, local_metadata)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


def _default_num_batches_tracked(module, state_dict, prefix, local_metadata):
    """torch's _NormBase: a checkpoint older than version 2 (or without version metadata)
    may lack num_batches_tracked; the module's own (else 0) is loaded instead."""
    version = local_metadata.get("version", None)
    if (version is None or version < 2) and module.track_running_stats:
        key = prefix + "num_batches_tracked"
        if key not in state_dict:
            state_dict[key] = (module.num_batches_tracked if module.num_batches_tracked is not None
                               else janus.tensor(0, dtype=janus.int64))


class BatchNorm1d(_BatchNorm):
    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    _dims = (5,)
