"""janus.utils.data: datasets, samplers and the DataLoader (with worker
processes), with PyTorch's API and batching semantics."""
from ._worker import WorkerInfo, get_worker_info
from .dataloader import DataLoader, default_collate, default_convert
from .distributed import DistributedSampler
from .dataset import ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler

__all__ = ["DataLoader", "get_worker_info", "WorkerInfo", "default_collate", "default_convert", "Dataset",
           "IterableDataset", "TensorDataset", "ConcatDataset", "Subset", "random_split", "Sampler",
           "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "BatchSampler", "DistributedSampler"]
