"""janus.optim.SGD: stochastic gradient descent with optional momentum,
dampening, Nesterov momentum, weight decay and maximization -- torch's
single-tensor update, step for step:

    g = -grad if maximize else grad
    g = g + weight_decay * p                       (weight_decay != 0)
    buf = clone(g)  on the first step, else  buf = momentum * buf + (1 - dampening) * g
    g = g + momentum * buf  (nesterov)  or  g = buf
    p = p - lr * g

With momentum, a float32/float64 parameter whose tensors are contiguous is
updated by the fused table op sgd_ (runtime/k_fused.c): the same operations
in the same order and precision in one pass, writing param and buffer in
place.  _FUSED = False forces the unfused path.
"""
import janus

from .adam import _numbers
from .optimizer import Optimizer, _check

__all__ = ["SGD"]

_FUSED = True
_FUSED_DTYPES = (janus.float32, janus.float64)


def _fusable(p, grad, buf):
    d = p.dtype
    return (d in _FUSED_DTYPES and grad.dtype is d and (buf is None or (buf.dtype is d and buf.is_contiguous()))
            and p.is_contiguous() and grad.is_contiguous() and grad.shape == p.shape)


class SGD(Optimizer):
    # For a replaced step (janus/_region.py), when only this code runs and every op is sgd_ (momentum)
    # or add (plain p.add_(grad, alpha=-lr)): group["lr"] flows only into sgd_'s lr attribute or,
    # negated, add's alpha, so it is bound per call instead of guarded.
    _region_ops = ("sgd_", "add")
    _region_values = ("lr",)
    _region_negated = ((("add", "alpha"), "lr"),)

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        _check(0.0 <= lr, f"Invalid learning rate: {lr}")
        _check(0.0 <= momentum, f"Invalid momentum value: {momentum}")
        _check(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
        if differentiable:
            raise NotImplementedError("janus optimizers do not support differentiable=True")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach,
                        differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)

    def step(self, closure=None):
        """Perform one optimization step; closure re-evaluates the model and returns the loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr = group["lr"]
            momentum = group["momentum"]
            dampening = group["dampening"]
            weight_decay = group["weight_decay"]
            nesterov = group["nesterov"]
            maximize = group["maximize"]
            fused = _FUSED and momentum != 0 and _numbers(lr, momentum, dampening, weight_decay)
            sgd_ = janus.ops.sgd_
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if fused:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if _fusable(p, grad, buf):
                        first = buf is None
                        if first:
                            buf = state["momentum_buffer"] = janus.empty_like(p)
                        sgd_(p, buf, grad, lr=lr, momentum=momentum, dampening=dampening,
                             weight_decay=weight_decay, nesterov=nesterov, maximize=maximize, first=first)
                        continue
                if maximize:
                    grad = -grad
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                if momentum != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = grad.detach().clone()
                        state["momentum_buffer"] = buf
                    else:
                        buf.mul_(momentum).add_(grad, alpha=1 - dampening)
                    if nesterov:
                        grad = grad.add(buf, alpha=momentum)
                    else:
                        grad = buf
                p.add_(grad, alpha=-lr)
        return loss
