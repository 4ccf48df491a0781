"""Uniform(low, high) (torch.distributions.Uniform): [low, high)."""
import numbers

import janus

from .distribution import Distribution
from .normal import _broadcast

__all__ = ["Uniform"]


class Uniform(Distribution):
    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = _broadcast(low, high)
        scalar = isinstance(low, numbers.Number) and isinstance(high, numbers.Number)
        super().__init__(() if scalar else self.low.shape, (), validate_args)

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def variance(self):
        return (self.high - self.low) ** 2 / 12

    def rsample(self, sample_shape=()):
        u = janus.rand(self._extended_shape(sample_shape), dtype=self.low.dtype, device=self.low.device)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        inside = (value >= self.low).logical_and(value < self.high)
        return janus.where(inside, -(self.high - self.low).log(), float("-inf"))

    def entropy(self):
        return (self.high - self.low).log()
