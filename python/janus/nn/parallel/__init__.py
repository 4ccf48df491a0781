"""janus.nn.parallel: DataParallel over the one device janus runs on.

torch.nn.DataParallel splits each batch over the visible GPUs.  Janus runs a
process on one device, so DataParallel here is the wrapped module itself
behind PyTorch's interface: forward calls module(*inputs), the module is
reachable as .module, and state_dict keys carry the "module." prefix, so
checkpoints match PyTorch's.

DistributedDataParallel (one process per rank, janus.distributed) keeps the
replicas equal: at wrap, rank 0's parameters and buffers are broadcast;
after every backward the gradients are averaged over the ranks in buckets
(parameters in reverse order, as PyTorch's reducer, at most bucket_cap_mb
each; one flat all-reduce per bucket, grad * (1 / world) then SUM, as
PyTorch's reducer does; the all-reduce is the table op all_reduce_, so a
recorded step's graph holds it and replay runs it there, before the
optimizer's update in the same graph).  Janus's autograd engine has no
per-gradient hooks, so the buckets are reduced when backward has finished,
not while it runs: communication does not overlap the backward pass.  no_sync() skips
the reduction; the gradients accumulated meanwhile are averaged at the
first backward after it.  A parameter without a gradient contributes zeros
(every rank reduces the same buckets, so no rank waits for another).
"""
import contextlib

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
        from ... import distributed as dist
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
        params = [p for p in module.parameters() if p.requires_grad]
        self._buckets, cur, size = [], [], 0
        for p in reversed(params):  # backward produces the last layers' gradients first
            nbytes = p.numel() * p.element_size()
            if cur and (size + nbytes > cap or p.dtype != cur[0].dtype):
                self._buckets.append(cur)
                cur, size = [], 0
            cur.append(p)
            size += nbytes
        if cur:
            self._buckets.append(cur)
        self._queued = False
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
        if self.broadcast_buffers:
            with _no_grad():
                for b in self.module.buffers():
                    dist.broadcast(b, 0)
        if _grad_enabled() and self.require_backward_grad_sync and not self._queued:
            self._queued = True
            autograd._queue_after_backward(self._reduce_gradients)
        return self.module(*inputs, **kwargs)

    def _reduce_gradients(self):
        import janus
        from ... import distributed as dist
        self._queued = False
        scale = 1.0 / self.world_size
        with _no_grad():
            for bucket in self._buckets:
                grads = [p.grad.reshape(-1) if p.grad is not None else janus.zeros(p.numel(), dtype=p.dtype,
                                                                                   device=p.device)
                         for p in bucket]
                flat = janus.cat(grads) if len(grads) > 1 else grads[0].clone()
                flat.mul_(scale)
                dist.all_reduce(flat, dist.ReduceOp.SUM)
                at = 0
                for p in bucket:
                    n = p.numel()
                    g = flat[at:at + n].view(p.shape)
                    if p.grad is None:
                        p.grad = g.clone()
                    else:
                        p.grad.copy_(g)
                    at += n


def _no_grad():
    from ... import autograd
    return autograd.no_grad()


def _grad_enabled():
    from ... import _C
    return _C.is_grad_enabled()
