"""Bernoulli(probs=... | logits=...) (torch.distributions.Bernoulli)."""
import janus
import janus.nn.functional as F

from .distribution import Distribution
from .normal import _broadcast

__all__ = ["Bernoulli"]


class Bernoulli(Distribution):
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = _broadcast(probs)
            eps = janus.finfo(self.probs.dtype).eps
            p = self.probs.clamp(eps, 1 - eps)
            self.logits = p.log() - (-p).log1p()
            shape = self.probs.shape
        else:
            (self.logits,) = _broadcast(logits)
            self.probs = self.logits.sigmoid()
            shape = self.logits.shape
        super().__init__(shape, (), validate_args)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        return (self.probs >= 0.5).to(self.probs.dtype)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with janus.no_grad():
            return janus.bernoulli(self.probs.expand(shape))

    def log_prob(self, value):
        logits, value = janus.broadcast_tensors(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value.to(logits.dtype), reduction="none")

    def entropy(self):
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")
