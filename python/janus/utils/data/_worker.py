"""DataLoader worker processes (torch.utils.data's, for num_workers > 0).

Each worker is a process of the loader's multiprocessing context (fork on
Linux, as in PyTorch) running worker_loop(): it reads tasks from its index
queue ((task number, batch indices), or "next batch" for an
IterableDataset), fetches and collates the batch, and sends (task number,
batch) back to the main process on a pipe of its own.  A sender thread does
the writing, so the worker fetches the next batch while the main process has
not read the last one yet (that is the prefetching).

Seeds, as PyTorch derives them from a pass's base_seed (drawn from the
loader's generator, or the global one: dataloader._base_seed): worker i
seeds Python's `random` and janus with base_seed + i and numpy (when the
script has imported it) with _generate_state(base_seed, i);
janus.initial_seed() and get_worker_info() tell a worker its seed.

Batches cross processes as pickles whose tensor data travel out of band
(pickle protocol 5): a tensor's bytes are written from its own memory to the
pipe, read into a scratch buffer the receiver reuses and copied into janus
memory (benchmarks/bench_loader.py: a fresh buffer per batch costs more in
page faults than that copy); numpy arrays in a batch travel out of band too,
into buffers of their own.
In the main process they are host inputs (made from memory, as a loaded
file's tensors are), so a recording sees the batch, not the worker's ops.

A forked worker stops recording (the recorder's fork handler) and replaying
(_rp_forked_child): it never touches the parent's run; the parent made every
tensor current before forking (a sync point, in the recording too).
"""
import os
import pickle
import queue
import random
import sys
import threading
import traceback

from janus import _C

MP_STATUS_CHECK_INTERVAL = 5.0  # seconds between liveness checks (PyTorch's value)

_worker_info = None


class WorkerInfo:
    """What get_worker_info() returns inside a worker: id, num_workers, seed
    and the worker's copy of the dataset (read-only)."""

    __slots__ = ("id", "num_workers", "seed", "dataset")

    def __init__(self, id, num_workers, seed, dataset):
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "num_workers", num_workers)
        object.__setattr__(self, "seed", seed)
        object.__setattr__(self, "dataset", dataset)

    def __setattr__(self, key, val):
        raise RuntimeError(f"Cannot assign attributes to {self.__class__.__name__} objects")

    def __repr__(self):
        return (f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed}, "
                f"dataset={self.dataset!r})")


def get_worker_info():
    """This worker's WorkerInfo inside a DataLoader worker; None in the main process."""
    return _worker_info


class ExceptionWrapper:
    """An exception raised in a worker, re-raised in the main process with
    the worker's traceback (PyTorch's wording)."""

    def __init__(self, exc_info=None, where="in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


class _KeyErrorMessage(str):
    def __repr__(self):  # KeyError shows repr(arg): keep the traceback readable
        return self


class _IterableDatasetStopIteration:
    """A worker's IterableDataset is exhausted."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


class _ResumeIteration:
    """Persistent workers: a new epoch starts (the worker acknowledges it)."""


def _generate_state(base_seed, worker_id):
    """numpy's seed for a worker: PyTorch's SeedSequence-style hash of
    (worker_id, base_seed), four 32-bit words."""
    INIT_A, MULT_A, INIT_B, MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
    MIX_MULT_L, MIX_MULT_R, XSHIFT, MASK32 = 0xCA01F9DD, 0x4973F715, 16, 0xFFFFFFFF
    entropy = [worker_id, base_seed & MASK32, base_seed >> 32, 0]
    pool = [0] * 4
    hash_const_a = INIT_A

    def hash_(value):
        nonlocal hash_const_a
        value = (value ^ hash_const_a) & MASK32
        hash_const_a = (hash_const_a * MULT_A) & MASK32
        value = (value * hash_const_a) & MASK32
        return (value ^ (value >> XSHIFT)) & MASK32

    def mix(x, y):
        r = ((MIX_MULT_L * x) & MASK32) - ((MIX_MULT_R * y) & MASK32)
        r &= MASK32
        return (r ^ (r >> XSHIFT)) & MASK32

    for i in range(4):
        pool[i] = hash_(entropy[i])
    for i_src in range(4):
        for i_dst in range(4):
            if i_src != i_dst:
                pool[i_dst] = mix(pool[i_dst], hash_(pool[i_src]))
    hash_const_b = INIT_B
    state = []
    for i_dst in range(4):
        v = (pool[i_dst] ^ hash_const_b) & MASK32
        hash_const_b = (hash_const_b * MULT_B) & MASK32
        v = (v * hash_const_b) & MASK32
        state.append((v ^ (v >> XSHIFT)) & MASK32)
    return state


# ------------------------------------------------------- batches on a pipe
def _contiguous_strides(shape):
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


def _rebuild_tensor(buf, dtype_id, shape, requires_grad):
    """A batch tensor in the main process: its bytes copied from the pipe's
    scratch buffer into janus memory (the allocator's cached blocks: no
    fresh pages to fault in, batch after batch)."""
    flat = _C._from_storage_bytes(buf, dtype_id)
    t = flat if len(shape) == 1 else _C._storage_view(flat, shape, _contiguous_strides(shape), 0)
    if requires_grad:
        t.requires_grad_(True)
    return t


class _BatchPickler(pickle.Pickler):
    """Protocol 5 with janus tensors' bytes out of band."""

    def __init__(self, f, bufs):
        super().__init__(f, protocol=5, buffer_callback=self._buffer)
        self.bufs = bufs
        self.ours = set()

    def _buffer(self, b):
        self.bufs.append((b, id(b) in self.ours))

    def reducer_override(self, obj):
        if not isinstance(obj, _C.TensorBase):
            return NotImplemented
        t = obj.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        if t.dtype._name == "bfloat16":  # no buffer format: the storage's bytes of an exact copy
            data = _C._storage_bytes(t.clone())
        else:
            data = memoryview(t.contiguous()).cast("B")
        pb = pickle.PickleBuffer(data)
        self.ours.add(id(pb))
        return (_rebuild_tensor, (pb, _C.dtype_names.index(t.dtype._name), tuple(t.shape), obj.requires_grad))


def _dumps(obj):
    """(meta bytes, [buffers]): what send_message writes.  The meta lists
    each out-of-band buffer's size and whether a janus tensor is made of it
    (copied on arrival) or something else is (numpy: it keeps the buffer)."""
    import io
    bufs = []
    f = io.BytesIO()
    p = _BatchPickler(f, bufs)
    p.dump(obj)
    raws = [b.raw() for b, _ in bufs]
    return pickle.dumps(([(r.nbytes, mine) for r, (_, mine) in zip(raws, bufs)], f.getvalue()), protocol=5), raws


def send_message(conn, meta, raws):
    conn.send_bytes(meta)
    for r in raws:
        conn.send_bytes(r)


class Receiver:
    """Reads one worker's messages; tensor bytes land in a scratch buffer
    reused from message to message."""

    def __init__(self, conn):
        self.conn = conn
        self.scratch = bytearray()

    def recv(self):
        """One message (EOFError/OSError when the worker died)."""
        conn = self.conn
        sizes, payload = pickle.loads(conn.recv_bytes())
        need = sum(n for n, tensor in sizes if tensor)
        if len(self.scratch) < need:
            self.scratch = bytearray(need)
        view = memoryview(self.scratch)
        bufs, at = [], 0
        for n, tensor in sizes:
            if tensor:
                b = view[at:at + n]
                at += n
            else:
                b = bytearray(n)
            if n:
                conn.recv_bytes_into(b)
            else:
                conn.recv_bytes()
            bufs.append(b)
        try:
            return pickle.loads(payload, buffers=bufs)
        finally:
            del bufs, view


class _Sender(threading.Thread):
    """Writes a worker's results to its pipe, so the worker can go on fetching."""

    def __init__(self, conn):
        super().__init__(daemon=True)
        self.conn = conn
        self.q = queue.Queue()
        self.broken = False

    def run(self):
        while True:
            item = self.q.get()
            if item is None:
                return
            if self.broken:
                continue
            try:
                send_message(self.conn, *item)
            except (OSError, ValueError):  # the main process closed its end: it is shutting down
                self.broken = True


# ------------------------------------------------------------- the worker
def _detach_from_parent_run():
    """A forked worker neither records nor replays: the parent's run is the parent's."""
    import janus
    from janus import _record, _replay
    _record.active = False  # the C recorder stopped itself in the fork (rec.c's fork handler)
    if _replay.active:
        _C._rp_forked_child()
        _replay.active = False
    janus._step_hook = None


def _seed_worker(base_seed, worker_id):
    import janus
    seed = base_seed + worker_id
    random.seed(seed)
    janus.manual_seed(seed)
    np = sys.modules.get("numpy")  # seeded when the script uses it (importing it here costs every worker)
    if np is not None:
        np.random.seed(_generate_state(base_seed, worker_id))
    return seed


def worker_loop(fetcher_factory, dataset, index_queue, conn, base_seed, init_fn, worker_id, num_workers,
                iterable):
    """The body of worker process `worker_id` (see the module doc)."""
    global _worker_info
    _detach_from_parent_run()
    import janus
    janus.set_num_threads(1)
    seed = _seed_worker(base_seed, worker_id)
    _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
    where = f"in DataLoader worker process {worker_id}"
    sender = _Sender(conn)
    sender.start()
    init_exception = None
    fetcher = None
    try:
        if init_fn is not None:
            init_fn(worker_id)
        fetcher = fetcher_factory(dataset)
    except Exception:
        init_exception = ExceptionWrapper(where=where)
    parent = os.getppid()
    iteration_end = False
    try:
        while True:
            try:
                r = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                if os.getppid() != parent:  # the main process is gone
                    break
                continue
            if r is None:
                break
            if isinstance(r, _ResumeIteration):
                iteration_end = False
                if init_exception is None:
                    fetcher = fetcher_factory(dataset)
                sender.q.put(_dumps((r, None)))
                continue
            if iteration_end:
                continue
            idx, index = r
            if init_exception is not None:
                data, init_exception = init_exception, None
            else:
                try:
                    data = fetcher(index)
                except StopIteration:
                    if not iterable:
                        data = ExceptionWrapper(where=where)
                    else:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                except Exception:
                    data = ExceptionWrapper(where=where)
            try:
                msg = _dumps((idx, data))
            except Exception:
                msg = _dumps((idx, ExceptionWrapper(where=f"{where} (sending the batch)")))
            sender.q.put(msg)
            del data, r
    except KeyboardInterrupt:
        pass
    finally:
        _worker_info = None
        sender.q.put(None)
        sender.join()
        conn.close()
