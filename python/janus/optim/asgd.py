"""janus.optim.ASGD: averaged stochastic gradient descent (Polyak &
Juditsky) with a decaying step size, optional weight decay and maximization
-- torch's single-tensor update, step for step:

    step += 1
    g = -grad if maximize else grad
    g = g + weight_decay * p                       (weight_decay != 0)
    p = p * (1 - lambd * eta)
    p = p - eta * g
    ax = ax + mu * (p - ax)      (mu != 1)    or    ax = p      (mu == 1)
    eta = lr / (1 + lambd * lr * step) ** alpha
    mu = 1 / max(1, step - t0)

The averaged parameters are state['ax']; averaging starts after t0 steps.
state: step (a float, like torch's float32 step tensor), eta (starts at lr),
mu (starts at 1), ax.  eta and mu are floats holding what torch's float32
0-dim state tensors hold: each new value is rounded to float32.
"""
import janus

from .nadam import _scalar
from .optimizer import Optimizer, _check, _step_value

__all__ = ["ASGD"]


class ASGD(Optimizer):
    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        _check(0.0 <= lr, f"Invalid learning rate: {lr}")
        _check(0.0 <= lambd, f"Invalid lambd value: {lambd}")
        _check(0.0 <= alpha, f"Invalid alpha value: {alpha}")
        _check(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
        if differentiable:
            raise NotImplementedError("janus optimizers do not support differentiable=True")
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)

    def step(self, closure=None):
        """Perform one optimization step; closure re-evaluates the model and returns the loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr = group["lr"]
            lambd = group["lambd"]
            alpha = group["alpha"]
            t0 = group["t0"]
            weight_decay = group["weight_decay"]
            maximize = group["maximize"]
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0.0
                    state["eta"] = _scalar(lr)
                    state["mu"] = 1.0
                    state["ax"] = janus.zeros_like(p)
                if maximize:
                    grad = -grad
                ax = state["ax"]
                state["step"] += 1

                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)

                # a saved torch state holds tensors for eta and mu: their values are the same
                eta = _step_value(state["eta"])
                p.mul_(1 - lambd * eta)  # decay term
                p.add_(grad, alpha=-eta)  # the update

                mu = _step_value(state["mu"])
                if mu != 1:  # averaging
                    ax.add_(p.sub(ax).mul_(mu))
                else:
                    ax.copy_(p)

                step = state["step"]
                state["eta"] = _scalar(lr / ((1 + lambd * lr * step) ** alpha))
                state["mu"] = _scalar(1 / max(1, step - t0))
        return loss
