"""DistributedSampler: each rank's share of a dataset (torch.utils.data.
distributed's API and index formula).

Per epoch: a permutation of range(len(dataset)) drawn from a generator seeded
with seed + epoch (the same on every rank), or range(n) without shuffle;
padded by repeating its head to a multiple of the world size (or cut to one,
drop_last); rank r takes indices r, r + world, r + 2*world, ...  PyTorch's
formula exactly, so with shuffle=False the shares equal PyTorch's.  The
shuffled order differs from PyTorch's: janus's generator is counter-based
Philox, PyTorch's CPU generator is a Mersenne Twister, so the same seed gives
another permutation (still the same on every rank, every run).
"""
import math

import janus

from .sampler import Sampler, _FallbackGenerator, _draw

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        from ... import distributed as dist
        if num_replicas is None or rank is None:
            if not dist.is_initialized():
                raise RuntimeError("DistributedSampler: pass num_replicas= and rank=, or call "
                                   "janus.distributed.init_process_group first")
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.epoch, self.drop_last, self.shuffle, self.seed = 0, drop_last, shuffle, seed
        n = len(dataset)
        if self.drop_last and n % self.num_replicas != 0:
            self.num_samples = math.ceil((n - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(n / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            g = janus.Generator() if hasattr(janus, "Generator") else _FallbackGenerator()
            g.manual_seed(self.seed + self.epoch)
            indices = _draw("randperm", g, n).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding_size = self.total_size - len(indices)
            if padding_size <= len(indices):
                indices += indices[:padding_size]
            else:
                indices += (indices * math.ceil(padding_size / len(indices)))[:padding_size]
        else:
            indices = indices[:self.total_size]
        assert len(indices) == self.total_size
        indices = indices[self.rank:self.total_size:self.num_replicas]
        assert len(indices) == self.num_samples
        return iter(indices)

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Shuffle differently next epoch (the same on every rank)."""
        self.epoch = epoch
