"""janus.optim.SGD: stochastic gradient descent with optional momentum,
dampening, Nesterov momentum, weight decay and maximization -- torch's
single-tensor update, step for step:

    g = -grad if maximize else grad
    g = g + weight_decay * p                       (weight_decay != 0)
    buf = clone(g)  on the first step, else  buf = momentum * buf + (1 - dampening) * g
    g = g + momentum * buf  (nesterov)  or  g = buf
    p = p - lr * g
"""
from .optimizer import Optimizer, _check

__all__ = ["SGD"]


class SGD(Optimizer):
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
            for p in group["params"]:
                grad = p.grad
                if grad is None:
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
