"""janus.distributions: the probability distributions training scripts use
(policy gradients, VAEs, sampling), with torch.distributions' interface:
sample / rsample (reparameterized, differentiable), log_prob, entropy,
mean / variance / stddev, batch_shape and event_shape, and kl_divergence
between two of the same family.

Samples come from janus's Philox generator (janus.manual_seed reproduces
them; replay re-draws them exactly); every formula is table ops, so
log_prob and rsample are differentiable in their parameters.  Arguments are
not validated (PyTorch's validate_args checks would be sync points).
"""
from .bernoulli import Bernoulli
from .categorical import Categorical
from .distribution import Distribution
from .gamma import Beta, Dirichlet, Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .normal import Normal
from .uniform import Uniform

__all__ = ["Bernoulli", "Beta", "Categorical", "Dirichlet", "Distribution", "Gamma", "Independent", "Normal",
           "Uniform", "kl_divergence", "register_kl"]
