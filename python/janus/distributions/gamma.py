"""Gamma(concentration, rate), Beta(concentration1, concentration0) and
Dirichlet(concentration) (torch.distributions.Gamma / Beta / Dirichlet):
mixup's Beta(alpha, alpha) lambda, Dirichlet mixing weights, Gamma priors.

Sampling is Marsaglia and Tsang's method (concentration a >= 1; a < 1 draws
Gamma(a + 1) times U ** (1 / a)), in float64 as PyTorch's CPU kernel does,
vectorized without a sync point: every element draws _PROPOSALS candidates
at once and keeps the first accepted one (each is accepted with probability
> 0.95, so all 16 are rejected with probability < 1e-20; then the last
candidate is used).  Beta and Dirichlet normalize Gamma draws in log space.
The draws come from janus's Philox generator, so they differ from
PyTorch's (whose streams differ anyway) but replay exactly.

log_prob and entropy need lgamma and digamma, which janus computes here in
float64 from table ops (shift by 6 and the Stirling / asymptotic series:
error below 1e-10), so they are differentiable in every parameter.
rsample is differentiable in Gamma's rate; PyTorch's implicit gradient
with respect to a concentration is not implemented (rsample raises when a
concentration requires grad; sample() never needs it).
"""
import math
import numbers

import janus

from .distribution import Distribution
from .kl import register_kl
from .normal import _broadcast

__all__ = ["Beta", "Dirichlet", "Gamma"]

_PROPOSALS = 16
_SHIFT = 6
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _lgamma(x):
    """log Gamma(x) for x > 0, computed in float64 (returned in x's dtype)."""
    z = x.double()
    shift = sum((z + k).log() for k in range(_SHIFT))
    z = z + _SHIFT
    r = 1.0 / z
    r2 = r * r
    series = r * (1.0 / 12 + r2 * (-1.0 / 360 + r2 * (1.0 / 1260 + r2 * (-1.0 / 1680))))
    return ((z - 0.5) * z.log() - z + _HALF_LOG_2PI + series - shift).to(x.dtype)


def _digamma(x):
    """d/dx log Gamma(x) for x > 0, computed in float64 (returned in x's dtype)."""
    z = x.double()
    shift = sum(1.0 / (z + k) for k in range(_SHIFT))
    z = z + _SHIFT
    r2 = 1.0 / (z * z)
    series = r2 * (1.0 / 12 + r2 * (-1.0 / 120 + r2 * (1.0 / 252 + r2 * (-1.0 / 240))))
    return (z.log() - 0.5 / z - series - shift).to(x.dtype)


def _log_standard_gamma(alpha, shape):
    """log of Gamma(alpha, 1) draws of this shape (alpha broadcast to it), float64, no gradient."""
    with janus.no_grad():
        a = alpha.detach().double().expand(shape)
        small = a < 1
        a1 = janus.where(small, a + 1, a)
        d = a1 - 1.0 / 3
        c = 1.0 / (9 * d).sqrt()
        x = janus.randn((_PROPOSALS, *shape), dtype=janus.float64, device=alpha.device)
        u = janus.rand((_PROPOSALS, *shape), dtype=janus.float64, device=alpha.device)
        v = (1 + c * x) ** 3
        log_v = v.clamp_min(1e-300).log()
        ok = (v > 0).logical_and(u.log() < 0.5 * x * x + d - d * v + d * log_v)
        # the first accepted candidate (the last one if, with probability < 1e-20, none is)
        ok = ok.logical_or(janus.arange(_PROPOSALS, device=alpha.device).view(-1, *[1] * len(shape))
                           == _PROPOSALS - 1)
        first = ok.double().argmax(0, keepdim=True)
        log_g = d.log() + log_v.gather(0, first).squeeze(0)
        boost = janus.rand(shape, dtype=janus.float64, device=alpha.device).clamp_min(1e-300).log() / a
        return log_g + janus.where(small, boost, 0.0)


def _no_concentration_grad(name, *ts):
    if janus.is_grad_enabled() and any(t.requires_grad for t in ts):
        raise NotImplementedError(f"{name}.rsample: the gradient with respect to the concentration (PyTorch's "
                                  f"implicit reparameterization) is not supported by janus; use sample(), or "
                                  f"detach the concentration")


class Gamma(Distribution):
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = _broadcast(concentration, rate)
        scalar = isinstance(concentration, numbers.Number) and isinstance(rate, numbers.Number)
        super().__init__(() if scalar else self.concentration.shape, (), validate_args)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        _no_concentration_grad("Gamma", self.concentration)
        shape = self._extended_shape(sample_shape)
        g = _log_standard_gamma(self.concentration, shape).exp().to(self.rate.dtype)
        return g.clamp_min(janus.finfo(g.dtype).tiny) / self.rate.expand(shape)

    def log_prob(self, value):
        value = value if isinstance(value, janus.Tensor) else janus.tensor(float(value), dtype=self.rate.dtype)
        return (janus.xlogy(self.concentration, self.rate) + janus.xlogy(self.concentration - 1, value)
                - self.rate * value - _lgamma(self.concentration))

    def entropy(self):
        c = self.concentration
        return c - self.rate.log() + _lgamma(c) + (1.0 - c) * _digamma(c)

    def __repr__(self):
        return f"Gamma(concentration: {self.concentration}, rate: {self.rate})"


class Dirichlet(Distribution):
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        cm1 = (self.concentration - 1).clamp(min=0.0)
        mode = cm1 / cm1.sum(-1, keepdim=True)
        below = (self.concentration < 1).all(dim=-1)
        return janus.where(below.unsqueeze(-1), janus.nn.functional.one_hot(
            mode.argmax(dim=-1), self.concentration.shape[-1]).to(mode.dtype), mode)

    @property
    def variance(self):
        c0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (c0 - self.concentration) / (c0.pow(2) * (c0 + 1))

    def rsample(self, sample_shape=()):
        _no_concentration_grad("Dirichlet", self.concentration)
        shape = self._extended_shape(sample_shape)
        x = _log_standard_gamma(self.concentration, shape).softmax(-1).to(self.concentration.dtype)
        return x.clamp_min(janus.finfo(x.dtype).tiny)

    def log_prob(self, value):
        c = self.concentration
        return (janus.xlogy(c - 1.0, value).sum(-1) + _lgamma(c.sum(-1)) - _lgamma(c).sum(-1))

    def entropy(self):
        c = self.concentration
        k = c.size(-1)
        c0 = c.sum(-1)
        return (_lgamma(c).sum(-1) - _lgamma(c0) - (k - c0) * _digamma(c0)
                - ((c - 1.0) * _digamma(c)).sum(-1))

    def __repr__(self):
        return f"Dirichlet(concentration: {self.concentration})"


class Beta(Distribution):
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = _broadcast(concentration1, concentration0)
        scalar = isinstance(concentration1, numbers.Number) and isinstance(concentration0, numbers.Number)
        super().__init__(() if scalar else self.concentration1.shape, (), validate_args)

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return Dirichlet(janus.stack([self.concentration1, self.concentration0], -1)).mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        _no_concentration_grad("Beta", self.concentration1, self.concentration0)
        shape = self._extended_shape(sample_shape)
        log_x = _log_standard_gamma(self.concentration1, shape)
        log_y = _log_standard_gamma(self.concentration0, shape)
        x = (log_x - log_y).sigmoid().to(self.concentration1.dtype)
        eps = janus.finfo(x.dtype).tiny
        return x.clamp(eps, 1.0 - janus.finfo(x.dtype).eps / 2)

    def log_prob(self, value):
        a, b = self.concentration1, self.concentration0
        value = value if isinstance(value, janus.Tensor) else janus.tensor(float(value), dtype=a.dtype)
        return (janus.xlogy(a - 1.0, value) + janus.xlogy(b - 1.0, 1.0 - value)
                + _lgamma(a + b) - _lgamma(a) - _lgamma(b))

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        total = a + b
        return (_lgamma(a) + _lgamma(b) - _lgamma(total) - (a - 1.0) * _digamma(a) - (b - 1.0) * _digamma(b)
                + (total - 2.0) * _digamma(total))

    def __repr__(self):
        return f"Beta(concentration1: {self.concentration1}, concentration0: {self.concentration0})"


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = _lgamma(q.concentration) - _lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * _digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    sum_p = p.concentration1 + p.concentration0
    sum_q = q.concentration1 + q.concentration0
    t1 = _lgamma(q.concentration1) + _lgamma(q.concentration0) + _lgamma(sum_p)
    t2 = _lgamma(p.concentration1) + _lgamma(p.concentration0) + _lgamma(sum_q)
    t3 = (p.concentration1 - q.concentration1) * _digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * _digamma(p.concentration0)
    t5 = (sum_q - sum_p) * _digamma(sum_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sum_p = p.concentration.sum(-1)
    sum_q = q.concentration.sum(-1)
    t1 = _lgamma(sum_p) - _lgamma(sum_q)
    t2 = (_lgamma(p.concentration) - _lgamma(q.concentration)).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = _digamma(p.concentration) - _digamma(sum_p).unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)
