"""janus.optim.Adadelta: Adadelta (Zeiler) -- torch's single-tensor update,
step for step:

    step += 1
    g = -grad if maximize else grad
    g = g + weight_decay * p                        (weight_decay != 0)
    square_avg = rho * square_avg + (1 - rho) * g * g
    delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g
    acc_delta = rho * acc_delta + (1 - rho) * delta * delta
    p = p - lr * delta

state: step, square_avg, acc_delta.
"""
import janus

from .optimizer import Optimizer, _addcmul_, _check

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    # For a replaced step (janus/_region.py), when only this code runs and its ops are these:
    # group["lr"] flows only, negated, into the alpha of p.add_ (every other alpha here is
    # positive), state["step"] (+= 1 per step) into no op: lr bound per call (a StepLR
    # schedule never misses), the counter written.
    _region_ops = ("mul", "add", "sqrt", "div", "neg")
    _region_values = ("lr",)
    _region_counters = ("step",)
    _region_negated = ((("add", "alpha"), "lr"),)

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        _check(0.0 <= lr, f"Invalid learning rate: {lr}")
        _check(0.0 <= rho <= 1.0, f"Invalid rho value: {rho}")
        _check(0.0 <= eps, f"Invalid epsilon value: {eps}")
        _check(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
        if differentiable:
            raise NotImplementedError("janus optimizers do not support differentiable=True")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("maximize", False)

    def step(self, closure=None):
        """Perform one optimization step; closure re-evaluates the model and returns the loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr, rho, eps = group["lr"], group["rho"], group["eps"]
            weight_decay, maximize = group["weight_decay"], group["maximize"]
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0.0
                    state["square_avg"] = janus.zeros_like(p)
                    state["acc_delta"] = janus.zeros_like(p)
                if maximize:
                    grad = -grad
                state["step"] += 1
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                _addcmul_(square_avg.mul_(rho), grad, grad, 1 - rho)
                std = square_avg.add(eps).sqrt_()
                delta = acc_delta.add(eps).sqrt_()
                delta.div_(std).mul_(grad)
                _addcmul_(acc_delta.mul_(rho), delta, delta, 1 - rho)
                p.add_(delta, alpha=-lr)
        return loss
