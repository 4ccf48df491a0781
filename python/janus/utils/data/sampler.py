"""Samplers: iterables of dataset indices (torch.utils.data's API).

SequentialSampler yields 0..n-1; RandomSampler a fresh permutation each pass
(janus.randperm), or draws with replacement (janus.randint);
SubsetRandomSampler a permutation of given indices; WeightedRandomSampler
num_samples indices in proportion to given weights (janus.multinomial, with
or without replacement); BatchSampler groups another sampler's indices into
lists of batch_size.

Random draws with generator=None come from janus's global Philox generator.
With a generator they come from that generator's own stream: janus.randperm
(n, generator=g) when the front end accepts generator=; otherwise (older front
ends without per-generator streams) the global generator's (seed, offset) is
saved, set to the generator's (g.seed, g.offset), the draw is made, the
advanced offset is written back to g.offset and the global state restored.
_FallbackGenerator is such an object (.manual_seed(s), .seed, .offset) for
front ends without janus.Generator.
"""
import itertools
import math

import janus
from janus import _C

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler"]


class _FallbackGenerator:
    """A Philox stream of its own: (seed, offset) into janus's counter-based generator."""

    def __init__(self, device="cpu"):
        self.seed = 67280421310721  # torch's default seed
        self.offset = 0

    def manual_seed(self, seed):
        self.seed = int(seed) & 0xFFFFFFFFFFFFFFFF
        self.offset = 0
        return self

    def initial_seed(self):
        return self.seed

    def get_state(self):
        return (self.seed, self.offset)

    def set_state(self, state):
        self.seed, self.offset = int(state[0]), int(state[1])
        return self


def _draw(fn_name, generator, *args, **kw):
    """janus.<fn_name>(*args, **kw) drawn from `generator`'s stream (see the module doc)."""
    fn = getattr(janus, fn_name)
    if generator is None:
        return fn(*args, **kw)
    if not isinstance(generator, _FallbackGenerator):
        try:
            return fn(*args, generator=generator, **kw)
        except TypeError as e:
            if "generator" not in str(e):
                raise
    seed, offset = getattr(generator, "seed", None), getattr(generator, "offset", None)
    if not isinstance(seed, int) or not isinstance(offset, int):
        raise TypeError(f"generator must be a janus.Generator (or have integer .seed and .offset), "
                        f"not {type(generator).__name__}")
    saved = _C._rng_state()
    _C._set_rng_state(seed, offset)
    try:
        out = fn(*args, **kw)
        generator.offset = _C._rng_state()[1]
    finally:
        _C._set_rng_state(*saved)
    return out


class Sampler:
    """Base class: an iterable of indices (optionally with __len__)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """Indices 0, 1, ..., len(data_source) - 1, in order."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation per pass (or num_samples draws with replacement)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or isinstance(self.num_samples, bool) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self):
        if self._num_samples is None:
            return len(self.data_source)
        return self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        g = self.generator
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from _draw("randint", g, 0, n, (32,), dtype=janus.int64).tolist()
            rest = self.num_samples % 32
            if rest:
                yield from _draw("randint", g, 0, n, (rest,), dtype=janus.int64).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from self._permutation(n)
            rest = self.num_samples % n
            if rest:
                yield from self._permutation(n)[:rest]

    def _permutation(self, n):
        return _draw("randperm", self.generator, n).tolist()

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order, a fresh one per pass."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in _draw("randperm", self.generator, len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """num_samples indices of [0, len(weights)), each drawn with probability
    proportional to its weight (weights need not sum to one), per pass:
    with replacement (the default), or without (no index twice in a pass).

    One janus.multinomial call per pass, from `generator`'s stream (the
    global one when None, so janus.manual_seed reproduces it).  As torch's,
    the weights are checked when a pass starts (the first index pulled):
    inf, nan or a negative weight, or a sum <= 0, raise RuntimeError with
    torch.multinomial's words."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights = janus.as_tensor(weights, dtype=janus.float64)
        if weights.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(weights.shape)}")
        self.weights = weights
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def _check_weights(self):
        # janus.multinomial does not check (a sync point inside a step); a sampler's pass may.
        # torch's messages: its with-replacement kernel (more than one sample) names the first
        # bad entry, NaN as "< 0"; its other paths check all entries at once
        w = self.weights.detach()
        bad = (w < 0) | ~w.isfinite()
        if bool(bad.any()):
            if not (self.replacement and self.num_samples > 1):
                raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
            first = float(w[int(bad.to(janus.int64).argmax())])
            what = "= infinity or NaN" if first in (math.inf, -math.inf) else "< 0"
            raise RuntimeError(f"invalid multinomial distribution (encountering probability entry {what})")
        if not float(w.sum()) > 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")

    def __iter__(self):
        self._check_weights()
        drawn = _draw("multinomial", self.generator, self.weights, self.num_samples, self.replacement)
        yield from drawn.tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of batch_size indices from `sampler`; the last one is shorter
    unless drop_last."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        # islice pulls the same indices at the same moments as an element loop
        # (a random sampler draws lazily), without a Python step per index
        smp = self.sampler
        if type(smp) is RandomSampler and not smp.replacement and smp.num_samples == len(smp.data_source):
            it = iter(smp._permutation(len(smp.data_source)))  # its one draw, at the first pull as before
        else:
            it = iter(smp)
        while True:
            batch = list(itertools.islice(it, self.batch_size))
            if len(batch) == self.batch_size:
                yield batch
                continue
            if batch and not self.drop_last:
                yield batch
            return

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
