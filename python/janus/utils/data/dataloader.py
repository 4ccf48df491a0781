"""DataLoader and default_collate (torch.utils.data's API).

DataLoader(dataset, batch_size=1, shuffle=False, sampler=None,
batch_sampler=None, num_workers=0, collate_fn=None, drop_last=False,
generator=None, timeout=0, worker_init_fn=None, prefetch_factor=None,
persistent_workers=False, ...) iterates batches: indices from the (batch)
sampler, samples from dataset[i], merged by collate_fn.  Each iter() starts a
new pass (a new permutation when shuffling) and, as PyTorch's does, draws
the workers' base seed from the generator, with workers or without (drawn
on the host: _base_seed).  num_workers > 0 fetches and collates in that
many worker processes, prefetch_factor batches ahead each (see _worker.py);
pin_memory is accepted (CPU tensors need no pinning).

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
import functools
import itertools
import multiprocessing
import multiprocessing.connection as mp_connection
import sys
import weakref

import janus
from janus import _C

from . import _worker
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
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.pin_memory = pin_memory  # CPU tensors: nothing to pin
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self.generator = generator
        self.multiprocessing_context = _mp_context(multiprocessing_context, num_workers)
        self._iterator = None

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
        if self.num_workers > 0 and self.persistent_workers and self._iterator is not None:
            self._iterator._reset()  # no new base seed: the workers keep theirs (PyTorch)
            return self._iterator
        # every new iterator draws the base seed, with workers or without (PyTorch), so the
        # random stream after it is the same with any number of workers
        base_seed = _base_seed(self.generator)
        if self.num_workers > 0:
            it = _MultiProcessingIter(self, base_seed)
            if self.persistent_workers:
                self._iterator = it
            return it
        if isinstance(self.dataset, IterableDataset):
            return self._iter_iterable()
        if self.batch_sampler is None:
            return (self.collate_fn(self.dataset[i]) for i in self.sampler)
        if self._fast_tensor_path():
            return self._iter_tensor_dataset()
        return self._iter_map()

    @property
    def _index_sampler(self):
        if self._auto_collation:
            return self.batch_sampler
        return self.sampler

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


# ------------------------------------------------------ worker processes
def _mp_context(ctx, num_workers):
    """The multiprocessing context workers start in (a name, a context, or
    None: the default start method, fork on Linux, as in PyTorch)."""
    if ctx is None or num_workers == 0:
        return ctx
    if isinstance(ctx, str):
        methods = multiprocessing.get_all_start_methods()
        if ctx not in methods:
            raise ValueError(f"multiprocessing_context option should specify a valid start method in {methods!r}, "
                             f"but got multiprocessing_context={ctx!r}")
        return multiprocessing.get_context(ctx)
    if not isinstance(ctx, multiprocessing.context.BaseContext):
        raise TypeError(f"multiprocessing_context option should be a valid context object or a string specifying "
                        f"the start method, but got multiprocessing_context={ctx}")
    return ctx


_SEED_RANGE = 1 << 62  # [0, 2**62): non-negative int64s (PyTorch's random_() gives [0, 2**63))


def _base_seed(generator):
    """A pass's base seed, as PyTorch draws it in every new iterator (with
    workers or without): one int64 from the loader's generator (the global
    one without), advancing that stream by one value.  It is drawn on the
    host from k_random.c's stream definition -- the value of
    janus.randint(0, 2**62, (), generator=g).item() -- so a recording gets
    no op and no sync point for it."""
    if generator is None:
        seed, offset = _C._rng_state()
    elif hasattr(generator, "_state"):  # janus.Generator
        seed, offset = generator._state()
    elif isinstance(getattr(generator, "seed", None), int) and isinstance(getattr(generator, "offset", None), int):
        seed, offset = generator.seed, generator.offset  # sampler._FallbackGenerator
    else:
        raise TypeError(f"DataLoader: generator must be a janus.Generator, not {type(generator).__name__}")
    r = _C._philox(offset, seed)
    nxt = (offset + 1) & 0xFFFFFFFFFFFFFFFF
    if generator is None:
        _C._set_rng_state(seed, nxt)
    elif hasattr(generator, "_set"):
        generator._set(seed, nxt)
    else:
        generator.offset = nxt
    return ((r[0] << 32 | r[1]) * _SEED_RANGE) >> 64  # randint's multiply-shift


def _sync_before_fork():
    """Everything pending becomes current before workers copy the process:
    a sync point under `janus record` and `janus replay` alike, so both see
    the same segments."""
    from janus import _record, _replay
    if _record.active:
        _C._rec_sync(None, _record.SYNC_NUMPY, None)
    if _replay.active:
        _C._rp_sync(None, _record.SYNC_NUMPY)


class _MapFetcher:
    """A batch of a map-style dataset from its indices."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn

    def __call__(self, index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        getitems = getattr(self.dataset, "__getitems__", None)
        data = getitems(index) if callable(getitems) else [self.dataset[i] for i in index]
        return self.collate_fn(data)


class _IterableFetcher:
    """The next batch of this worker's pass over an IterableDataset."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.it = iter(dataset)
        self.auto_collation, self.collate_fn, self.drop_last = auto_collation, collate_fn, drop_last
        self.ended = False

    def __call__(self, index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.it))
        data = []
        for _ in range(index):
            try:
                data.append(next(self.it))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < index):
            raise StopIteration
        return self.collate_fn(data)


def _make_fetcher(kind, auto_collation, collate_fn, drop_last, dataset):
    return kind(dataset, auto_collation, collate_fn, drop_last)


class _MultiProcessingIter:
    """Batches from num_workers worker processes, in sampler order (see
    _worker.py): each worker has up to prefetch_factor tasks outstanding;
    an exception in a worker is raised here with its traceback; a worker
    that dies, or a batch later than `timeout`, raises RuntimeError; the
    workers stop when the pass ends (unless persistent), when the iterator
    is dropped, or at exit."""

    def __init__(self, loader, base_seed):
        self._loader = loader
        self._iterable = isinstance(loader.dataset, IterableDataset)
        self._num_workers = loader.num_workers
        self._prefetch = loader.prefetch_factor * loader.num_workers
        self._timeout = loader.timeout
        self._persistent = loader.persistent_workers
        ctx = loader.multiprocessing_context or multiprocessing.get_context()
        kind = _IterableFetcher if self._iterable else _MapFetcher
        factory = functools.partial(_make_fetcher, kind, loader._auto_collation, loader.collate_fn, loader.drop_last)
        pool = self._pool = _WorkerPool()
        # the workers stop when this iterator is collected, even inside a reference cycle (an
        # exception's traceback): the finalizer holds the queues and pipes, so they are still
        # open when it runs; and at exit, before multiprocessing's own exit handler
        self._finalizer = weakref.finalize(self, pool.shutdown)
        _sync_before_fork()
        for i in range(self._num_workers):
            q = ctx.Queue()
            q.cancel_join_thread()  # exiting never waits on a queue the worker stopped reading
            r, w = ctx.Pipe(duplex=False)
            p = ctx.Process(target=_worker.worker_loop, daemon=True,
                            args=(factory, loader.dataset, q, w, base_seed, loader.worker_init_fn, i,
                                  self._num_workers, self._iterable))
            p.start()
            w.close()
            pool.queues.append(q)
            pool.conns.append(r)
            pool.receivers[r] = _worker.Receiver(r)
            pool.workers.append(p)
        self._index_queues, self._conns, self._workers = pool.queues, pool.conns, pool.workers
        self._start_pass()

    # ---- one pass
    def _start_pass(self):
        loader = self._loader
        if self._iterable:
            n = loader.batch_size if loader._auto_collation else None
            self._sampler_iter = itertools.repeat(n)
        else:
            self._sampler_iter = iter(loader._index_sampler)
        self._send_idx = self._rcvd_idx = 0
        self._task_info = {}          # task -> (worker,) or (worker, data) when it came early
        self._outstanding = 0
        self._active = [True] * self._num_workers
        self._cycle = itertools.cycle(range(self._num_workers))
        for _ in range(self._prefetch):
            self._try_put_index()

    def _reset(self):
        """Persistent workers: a new pass (the workers keep their seeds, as in PyTorch)."""
        for q in self._index_queues:
            q.put(_worker._ResumeIteration())
        pending = self._num_workers
        while pending:
            idx, _ = self._get_data()
            if isinstance(idx, _worker._ResumeIteration):
                pending -= 1
        self._start_pass()

    def _try_put_index(self):
        if self._outstanding >= self._prefetch:
            return
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):
            w = next(self._cycle)
            if self._active[w]:
                break
        else:
            return
        self._index_queues[w].put((self._send_idx, index))
        self._task_info[self._send_idx] = (w,)
        self._outstanding += 1
        self._send_idx += 1

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader)

    def __next__(self):
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 2 or self._active[info[0]]):
                    break
                self._task_info.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            info = self._task_info[self._rcvd_idx]
            if len(info) == 2:
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
                return self._process(info[1])
            idx, data = self._get_data()
            self._outstanding -= 1
            if isinstance(data, _worker._IterableDatasetStopIteration):
                self._active[data.worker_id] = False
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                self._task_info[idx] += (data,)
                continue
            del self._task_info[idx]
            self._rcvd_idx += 1
            return self._process(data)

    def _process(self, data):
        self._try_put_index()
        if isinstance(data, _worker.ExceptionWrapper):
            data.reraise()
        return data

    # ---- the pipes
    def _get_data(self):
        if self._timeout > 0:
            got = self._try_get_data(self._timeout)
            if got is None:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
            return got
        while True:
            got = self._try_get_data(_worker.MP_STATUS_CHECK_INTERVAL)
            if got is not None:
                return got

    def _try_get_data(self, timeout):
        """The next (task, data) from any worker, or None after `timeout`
        seconds; a worker that exited mid-pass is an error."""
        if self._shutdown:
            raise RuntimeError("DataLoader's workers were shut down")
        ready = mp_connection.wait(self._conns + [p.sentinel for p in self._workers], timeout)
        for r in ready:
            if r in self._conns:
                try:
                    return self._pool.receivers[r].recv()
                except (EOFError, OSError):
                    pass  # its worker is gone: said below once it is reaped
        dead = [p for p in self._workers if not p.is_alive()]
        if dead:
            pids = ", ".join(str(p.pid) for p in dead)
            self._shutdown_workers()
            raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly")
        return None

    def _shutdown_workers(self):
        self._finalizer()
        if self._loader._iterator is self:
            self._loader._iterator = None

    @property
    def _shutdown(self):
        return not self._finalizer.alive


class _WorkerPool:
    """A multiprocessing iterator's workers, index queues and result pipes;
    shutdown() stops them (once): a None task each, the result pipes closed
    (a worker blocked writing a batch nobody reads gets a broken pipe), a
    join, and SIGTERM for a worker that does not stop."""

    def __init__(self):
        self.queues, self.conns, self.workers = [], [], []
        self.receivers = {}

    def shutdown(self):
        for q in self.queues:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        for c in self.conns:
            c.close()
        for p in self.workers:
            p.join(timeout=_worker.MP_STATUS_CHECK_INTERVAL)
            if p.is_alive():
                p.terminate()
                p.join()
        for q in self.queues:
            q.close()
