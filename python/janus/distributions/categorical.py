"""Categorical(probs=... | logits=...) (torch.distributions.Categorical):
one category per row of the last dim.  probs are normalized to sum 1,
logits to log-probabilities (logits - logsumexp); sampling is
janus.multinomial."""
import janus

from .distribution import Distribution

__all__ = ["Categorical"]


class Categorical(Distribution):
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.ndim < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
            self.logits = self.probs.clamp(min=janus.finfo(self.probs.dtype).tiny).log()
        else:
            if logits.ndim < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
            self.probs = self.logits.exp()
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        super().__init__(self._param.shape[:-1], (), validate_args)

    @property
    def param_shape(self):
        return self._param.shape

    @property
    def mean(self):
        return janus.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return janus.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype)

    def sample(self, sample_shape=()):
        shape = tuple(sample_shape)
        n = 1
        for s in shape:
            n *= s
        with janus.no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            samples = janus.multinomial(probs_2d, n, True).t()  # [n, rows]
        return samples.reshape(shape + tuple(self._batch_shape))

    def log_prob(self, value):
        value = value.long().unsqueeze(-1)
        value, log_pmf = janus.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value.narrow(-1, 0, 1)).squeeze(-1)

    def entropy(self):
        min_real = janus.finfo(self.logits.dtype).min
        logits = self.logits.clamp(min=min_real)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        n = self._num_events
        values = janus.arange(n, dtype=janus.int64, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values

    def __repr__(self):
        return f"Categorical(probs: {self.probs.shape})"
