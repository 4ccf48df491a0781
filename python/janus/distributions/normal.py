"""Normal(loc, scale) (torch.distributions.Normal)."""
import math
import numbers

import janus

from .distribution import Distribution

__all__ = ["Normal"]


def _broadcast(*values):
    """Tensors (numbers become float32 0-d tensors) broadcast to one shape."""
    ts = [v if isinstance(v, janus.Tensor) else None for v in values]
    like = next((t for t in ts if t is not None), None)
    dtype = like.dtype if like is not None else janus.float32
    device = like.device if like is not None else None
    ts = [t if t is not None else janus.tensor(float(v), dtype=dtype, device=device) for t, v in zip(ts, values)]
    return janus.broadcast_tensors(*ts)


class Normal(Distribution):
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = _broadcast(loc, scale)
        scalar = isinstance(loc, numbers.Number) and isinstance(scale, numbers.Number)
        super().__init__(() if scalar else self.loc.shape, (), validate_args)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.scale * self.scale

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = janus.randn(shape, dtype=self.loc.dtype, device=self.loc.device)  # shape () too
        return self.loc + eps * self.scale

    def sample(self, sample_shape=()):
        with janus.no_grad():
            return self.rsample(sample_shape)

    def log_prob(self, value):
        var = self.scale * self.scale
        log_scale = self.scale.log()
        return -((value - self.loc) ** 2) / (2 * var) - log_scale - math.log(math.sqrt(2 * math.pi))

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()

    def cdf(self, value):
        return 0.5 * (1 + ((value - self.loc) / (self.scale * math.sqrt(2))).erf())

    def __repr__(self):
        return f"Normal(loc: {self.loc}, scale: {self.scale})"
