"""janus.utils.data: datasets, samplers and the DataLoader (with worker
processes), with PyTorch's API and batching semantics."""
from ._worker import WorkerInfo, get_worker_info
from .dataloader import DataLoader, default_collate, default_convert
from .distributed import DistributedSampler
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset,
                      random_split)
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
                      WeightedRandomSampler)

__all__ = ["DataLoader", "get_worker_info", "WorkerInfo", "default_collate", "default_convert", "Dataset",
           "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset", "ChainDataset", "Subset",
           "random_split", "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler", "DistributedSampler"]
