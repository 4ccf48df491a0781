"""janus.nn.parallel: DataParallel over the one device janus runs on.

torch.nn.DataParallel splits each batch over the visible GPUs.  Janus runs a
process on one device, so DataParallel here is the wrapped module itself
behind PyTorch's interface: forward calls module(*inputs), the module is
reachable as .module, and state_dict keys carry the "module." prefix, so
checkpoints match PyTorch's.

DistributedDataParallel (one process per rank, janus.distributed) keeps the
replicas equal: at wrap, rank 0's parameters and buffers are broadcast;
the gradients are averaged over the ranks in buckets (parameters in
reverse order, as PyTorch's reducer, at most bucket_cap_mb each; one flat
all-reduce per bucket, grad * (1 / world) then SUM, as PyTorch's reducer
does).  Each parameter has a post-accumulate-grad hook: a bucket is reduced
inside backward as soon as the last of its gradients is accumulated, and
buckets go strictly in bucket order (a ready bucket waits for the ones
before it), so every rank issues the same all-reduces in the same order.
A bucket whose gradients backward did not all produce (a parameter the
loss did not use) is not reduced, nor any after it, and the next forward
with grad enabled raises PyTorch's RuntimeError ("Expected to have finished
reduction in the prior iteration ...", naming the parameters by index and
name) before it issues any collective.  When every rank left the same
parameter out, every rank raises there; when only some did, the others
wait in that bucket's all-reduce, which the uncaught error ends (its rank
aborts the job) or, if caught, the watchdog (JANUS_DIST_TIMEOUT).  With
find_unused_parameters the parameters the output's graph does not reach are
ready at forward, as PyTorch's reducer marks them (their buckets carry
zeros for them), and one more all-reduce at the end of backward counts the
ranks that used each parameter: one no rank used keeps the .grad it had
(None stays None), as in PyTorch.  Every forward with grad resets the
accounting, so several forwards before one backward reduce once.  The all-reduce is the table
op all_reduce_, so a recorded step's graph holds the buckets' nodes among
the backward's, and replay runs them there.  no_sync() skips the
reduction; the gradients accumulated meanwhile are averaged at the first
backward after it.  The all-reduce is synchronous by default: a bucket's
communication does not run while backward computes the next gradients.
With JANUS_DDP_ASYNC_REDUCE=1 (a row of runtime/settings.def, read when
the wrapper is made; eager only: not under `janus record` / `replay`,
whose graphs hold the all-reduces as nodes), a bucket's flat gradient goes
to the process's communication thread, which all-reduces it with the GIL
released while backward goes on; backward's end waits for every bucket, in
order, and copies them back, so .grad is final when backward() returns and
the collectives keep one order on every rank (the main thread issues none
while the thread has work).  The thread needs MPI at THREAD_SERIALIZED:
JANUS_DDP_ASYNC_REDUCE=1 set before init_process_group starts it so;
set only later, the wrap raises (MPI runs THREAD_SINGLE by default).
"""
import contextlib
import threading
import time
import weakref

from ..module import Module

__all__ = ["DataParallel", "DistributedDataParallel"]


class DataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = list(device_ids) if device_ids is not None else []
        self.output_device, self.dim = output_device, dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


class DistributedDataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, **kwargs):
        super().__init__()
        from ... import _C, distributed as dist
        if not dist.is_initialized():
            raise RuntimeError("DistributedDataParallel: the default process group is not initialized: call "
                               "janus.distributed.init_process_group(backend='mpi') before wrapping the model")
        dist._check_group(process_group, "DistributedDataParallel")
        self.module = module
        self.device_ids = list(device_ids) if device_ids is not None else None
        self.output_device, self.dim = output_device, dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters, self.static_graph = find_unused_parameters, static_graph
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.require_backward_grad_sync = True
        self.world_size = dist.get_world_size()
        cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        # PyTorch's first bucket is 1 MiB when the cap is the default: the first reduction starts early
        first_cap = min(cap, 1024 * 1024) if bucket_cap_mb is None else cap
        params = [p for p in module.parameters() if p.requires_grad]
        self._buckets, cur, size = [], [], 0
        for p in reversed(params):  # backward produces the last layers' gradients first
            nbytes = p.numel() * p.element_size()
            if cur and (size + nbytes > (cap if self._buckets else first_cap) or p.dtype != cur[0].dtype):
                self._buckets.append(cur)
                cur, size = [], 0
            cur.append(p)
            size += nbytes
        if cur:
            self._buckets.append(cur)
        self._bucket_of = {id(p): k for k, b in enumerate(self._buckets) for p in b}
        self._armed = False  # a forward with grad on: the next backward reduces
        self._reduce_in_backward = True  # False: every bucket after backward (bench_dist.py's baseline)
        # JANUS_DDP_ASYNC_REDUCE: eager buckets all-reduced on the communication thread
        self._async_reduce = bool(_C._setting_value("JANUS_DDP_ASYNC_REDUCE"))
        state = _C._dist_state()
        if self._async_reduce and state is not None and state[2] == "mpi" and not state[3]:
            raise RuntimeError("DistributedDataParallel: JANUS_DDP_ASYNC_REDUCE=1 all-reduces on a thread of its "
                               "own, but MPI was started at MPI_THREAD_SINGLE (only init_process_group's thread "
                               "may call it): set JANUS_DDP_ASYNC_REDUCE=1 (or JANUS_DIST_MPI_THREADS=serialized) "
                               "before init_process_group")
        self._inflight = []  # (bucket, flat, work) handed to the communication thread, in order
        # seconds in bucket all-reduces, and the main thread's share of them (bench_dist.py's overlap):
        # equal when synchronous; async, the communication thread's time and backward's wait at its end
        self._comm_seconds = self._wait_seconds = 0.0
        self._missing, self._next = [], 0
        self._params = params  # PyTorch's parameter indices (the error below names them)
        self._names = {id(p): n for n, p in module.named_parameters() if p.requires_grad}
        self._marked = set()  # ids of the parameters whose gradient this backward produced (or unused ones)
        self._unfinished = None  # the parameters the last backward left without a gradient
        self._unwalked = False  # find_unused_parameters could not walk this forward's graph
        # find_unused_parameters: this backward's locally unused parameters, and their .grad before the
        # reduction (None or a copy), restored where no rank used them (PyTorch leaves those untouched)
        self._local_unused, self._kept_grads = set(), {}
        me = weakref.ref(self)  # the hooks must not keep the wrapper alive
        hooks = [p.register_post_accumulate_grad_hook(lambda p, me=me: _grad_ready(me, p)) for p in params]
        weakref.finalize(self, _remove_hooks, hooks)  # a dropped wrapper leaves no hooks behind
        with _no_grad():
            for t in list(module.parameters()) + list(module.buffers()):
                dist.broadcast(t.detach(), 0)

    @contextlib.contextmanager
    def no_sync(self):
        """Gradients accumulate locally inside; the first backward after it averages them."""
        prev = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = prev

    def forward(self, *inputs, **kwargs):
        from ... import autograd, distributed as dist
        if self._unfinished is not None and _grad_enabled():  # before any collective: no rank waits on this one
            raise RuntimeError(self._unfinished_message())
        if self.broadcast_buffers:
            with _no_grad():
                for b in self.module.buffers():
                    dist.broadcast(b, 0)
        arm = _grad_enabled() and self.require_backward_grad_sync
        if arm:  # as PyTorch's reducer, every forward resets the accounting: the next backward reduces
            if not self._armed:  # one reduction per backward, however many forwards came before it
                self._armed = True
                autograd._queue_after_backward(self._finish_reduction)
            self._missing = [len(b) for b in self._buckets]  # gradients each bucket still waits for
            self._next = 0  # the first bucket not reduced yet
            self._marked, self._unwalked = set(), False
            self._local_unused, self._kept_grads = set(), {}
        out = self.module(*inputs, **kwargs)
        if arm and self.find_unused_parameters:
            self._mark_unused(out)
        return out

    def _mark_unused(self, out):
        """As PyTorch's reducer: parameters the output's graph does not reach
        are ready now, so their buckets do not wait for the end of backward."""
        from ... import _C
        roots, todo = [], [out]
        while todo:
            o = todo.pop()
            if isinstance(o, (list, tuple)):
                todo.extend(o)
            elif isinstance(o, dict):
                todo.extend(o.values())
            elif isinstance(o, _C.TensorBase) and o.requires_grad:
                roots.append(o)
        params = [p for b in self._buckets for p in b]
        try:
            used = _C._reaches(roots, params)
        except ValueError:  # more outputs than the engine takes roots: backward's end reduces what is left
            self._unwalked = True
            return
        for p, u in zip(params, used):
            if not u:
                self._missing[self._bucket_of[id(p)]] -= 1
                self._marked.add(id(p))
                self._local_unused.add(id(p))

    def _param_ready(self, p):
        """p's gradient of this backward is accumulated: reduce the buckets it completes."""
        k = self._bucket_of.get(id(p))
        if not self._armed or k is None:
            return
        self._marked.add(id(p))
        if not self._reduce_in_backward or k < self._next:
            return
        self._missing[k] -= 1
        while self._next < len(self._buckets) and self._missing[self._next] <= 0:
            self._reduce_bucket(self._buckets[self._next])
            self._next += 1

    def _finish_reduction(self):
        """After backward: the buckets left (all of them when reducing after
        backward), unless a gradient is missing: then none from the first
        incomplete bucket on, and the next forward raises, as PyTorch's
        reducer (when find_unused_parameters could not walk the forward's
        graph, what is missing is taken as unused and reduced as zeros);
        then, async, the wait for every bucket in flight."""
        try:
            unmarked = [i for i, p in enumerate(self._params)
                        if id(p) not in self._marked and id(p) in self._bucket_of]
            if unmarked and not self._unwalked:
                self._unfinished = unmarked
            else:
                if self.find_unused_parameters:
                    self._local_unused.update(id(self._params[i]) for i in unmarked)
                while self._next < len(self._buckets):
                    self._reduce_bucket(self._buckets[self._next])
                    self._next += 1
        finally:
            self._armed = False
            inflight, self._inflight = self._inflight, []
            if inflight:
                t = time.perf_counter()
                for _, _, work in inflight:
                    work.wait()
                self._wait_seconds += time.perf_counter() - t
            for bucket, flat, work in inflight:
                self._comm_seconds += work.seconds
                work.raise_error()
                self._copy_back(bucket, flat)
        if self.find_unused_parameters and self._unfinished is None:
            self._restore_globally_unused()

    def _restore_globally_unused(self):
        """As PyTorch's reducer with find_unused_parameters: one more
        all-reduce (on every rank, so the order stays the same) counts the
        ranks that used each parameter; a parameter no rank used keeps the
        .grad it had before this backward (None stays None), instead of
        the zeros its bucket carried for it."""
        import janus
        from ... import distributed as dist
        used = janus.tensor([0 if id(p) in self._local_unused else 1 for p in self._params], dtype=janus.int32)
        dist.all_reduce(used, dist.ReduceOp.SUM)
        if not self._local_unused:  # nothing to restore here: no read, so a replayed step stays one graph
            return
        with _no_grad():
            for p, n in zip(self._params, used.tolist()):
                if n == 0 and id(p) in self._kept_grads:
                    kept = self._kept_grads[id(p)]
                    if kept is None:
                        p.grad = None
                    else:
                        p.grad.copy_(kept)
        self._kept_grads = {}

    def _unfinished_message(self):
        """PyTorch's wording (reducer.cpp, ensure_prior_reduction_ended), the
        parameters named as with TORCH_DISTRIBUTED_DEBUG=INFO."""
        from ... import distributed as dist
        msg = ("Expected to have finished reduction in the prior iteration before starting a new one. This error "
               "indicates that your module has parameters that were not used in producing loss. ")
        tail = ("making sure all `forward` function outputs participate in calculating loss. \nIf you already have "
                "done the above, then the distributed data parallel module wasn't able to locate the output tensors "
                "in the return value of your module's `forward` function. Please include the loss function and the "
                "structure of the return value of `forward` of your module when reporting this issue (e.g. list, "
                "dict, iterable).")
        if self.find_unused_parameters:
            msg += ("Since `find_unused_parameters=True` is enabled, this likely  means that not all `forward` "
                    "outputs participate in computing loss. You can fix this by " + tail)
        else:
            msg += ("You can enable unused parameter detection by passing the keyword argument "
                    "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by \n" + tail)
        rank = dist.get_rank()
        names = ", ".join(self._names.get(id(self._params[i]), f"#{i}") for i in self._unfinished)
        return (msg + f"\nParameters which did not receive grad for rank {rank}: {names}"
                f"\nParameter indices which did not receive grad for rank {rank}: "
                + " ".join(str(i) for i in self._unfinished))

    def _reduce_bucket(self, bucket):
        import janus
        from ... import _C, distributed as dist
        scale = 1.0 / self.world_size
        with _no_grad():
            for p in bucket:
                if id(p) in self._local_unused:
                    self._kept_grads[id(p)] = None if p.grad is None else p.grad.clone()
            grads = [p.grad.reshape(-1) if p.grad is not None else janus.zeros(p.numel(), dtype=p.dtype,
                                                                               device=p.device)
                     for p in bucket]
            flat = janus.cat(grads) if len(grads) > 1 else grads[0].clone()
            flat.mul_(scale)
            if self._async_reduce and not _C._rec_active() and not _C._rp_active() and flat.device.type == "cpu":
                self._inflight.append((bucket, flat, _comm_thread().submit(flat)))
                return
            t = time.perf_counter()
            dist.all_reduce(flat, dist.ReduceOp.SUM)
            t = time.perf_counter() - t
            self._comm_seconds += t
            self._wait_seconds += t
            self._copy_back(bucket, flat)

    def _copy_back(self, bucket, flat):
        with _no_grad():
            at = 0
            for p in bucket:
                n = p.numel()
                g = flat[at:at + n].view(p.shape)
                if p.grad is None:
                    p.grad = g.clone()
                else:
                    p.grad.copy_(g)
                at += n


class _Work:
    """One all-reduce handed to the communication thread."""
    __slots__ = ("tensor", "event", "error", "seconds")

    def __init__(self, tensor):
        self.tensor, self.event, self.error, self.seconds = tensor, threading.Event(), None, 0.0

    def wait(self):
        self.event.wait()

    def raise_error(self):
        if self.error is not None:
            raise self.error


class _CommThread:
    """The process's communication thread: SUM all-reduces of contiguous CPU
    tensors, in submission order (one thread per process, so collectives
    never run on two threads at once), each with the GIL released
    (_C._dist_all_reduce calls the process group directly)."""

    def __init__(self):
        self.cv, self.queue = threading.Condition(), []
        threading.Thread(target=self._run, name="janus-ddp-comm", daemon=True).start()

    def submit(self, t):
        w = _Work(t)
        with self.cv:
            self.queue.append(w)
            self.cv.notify()
        return w

    def _run(self):
        from ... import _C
        while True:
            with self.cv:
                while not self.queue:
                    self.cv.wait()
                w = self.queue.pop(0)
            t = time.perf_counter()
            try:
                _C._dist_all_reduce(w.tensor, 0)  # ReduceOp.SUM
            except BaseException as e:  # raised on the main thread by _finish_reduction
                w.error = e
            w.seconds = time.perf_counter() - t
            w.event.set()


_comm = []  # the process's communication thread, started at the first asynchronous bucket
_comm_lock = threading.Lock()


def _comm_thread():
    with _comm_lock:
        if not _comm:
            _comm.append(_CommThread())
        return _comm[0]


def _remove_hooks(hooks):
    for h in hooks:
        h.remove()


def _grad_ready(me, p):
    ddp = me()
    if ddp is not None:
        ddp._param_ready(p)


def _no_grad():
    from ... import autograd
    return autograd.no_grad()


def _grad_enabled():
    from ... import _C
    return _C.is_grad_enabled()
