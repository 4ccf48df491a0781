"""Independent(base_distribution, reinterpreted_batch_ndims)
(torch.distributions.Independent): the rightmost reinterpreted_batch_ndims
batch dims of the base distribution read as event dims, so log_prob and
entropy sum over them (a diagonal Normal over vectors:
Independent(Normal(loc, scale), 1)).  Samples, mean and variance are the
base distribution's.  kl_divergence of two Independents with the same
reinterpreted_batch_ndims is the base KL summed over those dims."""
from .distribution import Distribution, _size
from .kl import kl_divergence, register_kl

__all__ = ["Independent"]


def _sum_rightmost(value, dim):
    """value with its dim rightmost dims summed out."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


class Independent(Distribution):
    arg_constraints = {}

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        if reinterpreted_batch_ndims > len(base_distribution.batch_shape):
            raise ValueError("Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                             f"actual {reinterpreted_batch_ndims} vs {len(base_distribution.batch_shape)}")
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        event_dim = reinterpreted_batch_ndims + len(base_distribution.event_shape)
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__(shape[:len(shape) - event_dim], shape[len(shape) - event_dim:], validate_args)

    def expand(self, batch_shape, _instance=None):
        """A new Independent whose base distribution is the base expanded to
        batch_shape + the reinterpreted dims (the base must have expand())."""
        if _instance is None and type(self).__init__ != Independent.__init__:
            raise NotImplementedError(f"Subclass {type(self).__name__} of Independent that defines a custom "
                                      "__init__ method must also define a custom .expand() method.")
        base_expand = getattr(self.base_dist, "expand", None)
        if base_expand is None:
            raise NotImplementedError(f"{type(self.base_dist).__name__}.expand is not implemented in janus, so an "
                                      "Independent of it cannot be expanded either")
        new = type(self).__new__(type(self)) if _instance is None else _instance
        batch_shape = tuple(batch_shape)
        new.base_dist = base_expand(_size(batch_shape + tuple(self.event_shape)[:self.reinterpreted_batch_ndims]))
        new.reinterpreted_batch_ndims = self.reinterpreted_batch_ndims
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self):
        if self.reinterpreted_batch_ndims > 0:
            return False
        return self.base_dist.has_enumerate_support

    @property
    def mean(self):
        return self.base_dist.mean

    @property
    def mode(self):
        return self.base_dist.mode

    @property
    def variance(self):
        return self.base_dist.variance

    def sample(self, sample_shape=()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        return _sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self):
        return _sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand=True):
        if self.reinterpreted_batch_ndims > 0:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    def __repr__(self):
        return f"{type(self).__name__}({self.base_dist}, {self.reinterpreted_batch_ndims})"


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)
