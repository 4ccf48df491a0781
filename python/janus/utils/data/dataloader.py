"""DataLoader and default_collate (torch.utils.data's API, single process).

DataLoader(dataset, batch_size=1, shuffle=False, sampler=None,
batch_sampler=None, num_workers=0, collate_fn=None, drop_last=False,
generator=None, ...) iterates batches: indices from the (batch) sampler,
samples from dataset[i], merged by collate_fn.  Each iter() starts a new pass
(a new permutation when shuffling).  num_workers > 0 is accepted and runs in
the main process.

Fast path: a TensorDataset batched with the default collate gathers each
batch with one index op per tensor (t[idx]) instead of indexing every sample
and stacking; the result is the same list of tensors default_collate gives.

default_collate: tensors are stacked (janus.stack) along a new first
dimension; Python floats become a float64 tensor, ints an int64 tensor, bools
a bool tensor; numpy arrays and scalars become tensors; strings are kept as a
list; dicts, namedtuples, tuples and lists are collated element-wise (tuples
come back as lists, like torch).
"""
import collections.abc
import sys

import janus
from janus import _C

from .dataset import IterableDataset, TensorDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = ["DataLoader", "default_collate", "default_convert"]

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}")


def _is_tensor(x):
    return isinstance(x, _C.TensorBase)


def _numpy():
    return sys.modules.get("numpy")  # an ndarray in a batch means numpy is imported


def _from_numpy(a):
    for name in ("as_tensor", "from_numpy", "tensor"):
        fn = getattr(janus, name, None)
        if fn is not None:
            return fn(a)
    raise RuntimeError("janus has no numpy conversion (as_tensor / from_numpy / tensor)")


def _is_string_array(np, a):
    return a.dtype.char in "SaUO"


def default_convert(data):
    """Convert numpy arrays in a sample to tensors, leaving everything else
    (the conversion used when automatic batching is off)."""
    np = _numpy()
    if _is_tensor(data):
        return data
    if np is not None and isinstance(data, np.ndarray):
        if _is_string_array(np, data):
            return data
        return _from_numpy(data)
    if np is not None and isinstance(data, np.generic) and not isinstance(data, (np.str_, np.bytes_)):
        return _from_numpy(np.asarray(data))
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        try:
            return type(data)({key: default_convert(data[key]) for key in data})
        except TypeError:
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def default_collate(batch):
    """Merge a list of samples into a batch (see the module doc)."""
    elem = batch[0]
    elem_type = type(elem)
    np = _numpy()
    if _is_tensor(elem):
        return janus.stack(list(batch), 0)  # any batch size: stack chunks past the op's input limit
    if np is not None and isinstance(elem, np.ndarray):
        if _is_string_array(np, elem):
            raise TypeError(default_collate_err_msg_format.format(elem.dtype))
        return default_collate([_from_numpy(b) for b in batch])
    if np is not None and isinstance(elem, np.generic) and not isinstance(elem, (np.str_, np.bytes_)):
        return _from_numpy(np.array(batch))
    if isinstance(elem, float):
        return janus.tensor(batch, dtype=janus.float64)
    if isinstance(elem, int):  # bools too: janus.tensor infers int64 or bool, as torch.tensor does
        return janus.tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        try:
            return elem_type({key: default_collate([d[key] for d in batch]) for key in elem})
        except TypeError:
            return {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(samples) for samples in transposed]
        try:
            return elem_type([default_collate(samples) for samples in transposed])
        except TypeError:
            return [default_collate(samples) for samples in transposed]
    raise TypeError(default_collate_err_msg_format.format(elem_type))


class DataLoader:
    """Batches of a dataset (see the module doc)."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None,
                 persistent_workers=False, pin_memory_device="", in_order=True):
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        self.dataset = dataset
        self.num_workers = num_workers
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self.generator = generator

        if isinstance(dataset, IterableDataset):
            if shuffle not in (None, False):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, "
                                 f"but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, "
                                 f"but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler "
                                 f"option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")

        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, "
                                 "sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None:
            if drop_last:
                raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive "
                                 "with drop_last")

        if sampler is None and not isinstance(dataset, IterableDataset):
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not isinstance(dataset, IterableDataset):
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler

        self._default_collate = collate_fn is None or collate_fn is default_collate
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None or (isinstance(self.dataset, IterableDataset)
                                                   and self.batch_size is not None)

    def _fast_tensor_path(self):
        d = self.dataset
        return (self._default_collate and self.batch_sampler is not None and isinstance(d, TensorDataset)
                and type(d).__getitem__ is TensorDataset.__getitem__)

    def __iter__(self):
        if isinstance(self.dataset, IterableDataset):
            return self._iter_iterable()
        if self.batch_sampler is None:
            return (self.collate_fn(self.dataset[i]) for i in self.sampler)
        if self._fast_tensor_path():
            return self._iter_tensor_dataset()
        return self._iter_map()

    def _fetch(self, indices):
        getitems = getattr(self.dataset, "__getitems__", None)
        if callable(getitems):
            return getitems(indices)
        return [self.dataset[i] for i in indices]

    def _iter_map(self):
        for indices in self.batch_sampler:
            yield self.collate_fn(self._fetch(indices))

    def _iter_tensor_dataset(self):
        tensors = self.dataset.tensors
        for indices in self.batch_sampler:
            idx = janus.tensor(list(indices), dtype=janus.int64)
            yield [t[idx] for t in tensors]

    def _iter_iterable(self):
        if self.batch_size is None:
            for sample in self.dataset:
                yield self.collate_fn(sample)
            return
        batch = []
        for sample in self.dataset:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self):
        if isinstance(self.dataset, IterableDataset):
            n = len(self.dataset)  # TypeError when the iterable has no length, as in torch
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        return len(self.sampler)
