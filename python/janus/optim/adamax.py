"""janus.optim.Adamax: Adam with the infinity norm (Kingma & Ba, section 7)
in place of the second moment, with optional weight decay and maximization
-- torch's single-tensor update, step for step:

    step += 1
    g = -grad if maximize else grad
    g = g + weight_decay * p                       (weight_decay != 0)
    m.lerp_(g, 1 - beta1)                          (m = m + (1 - beta1) * (g - m))
    u = maximum(beta2 * u, |g| + eps)
    clr = lr / (1 - beta1 ** step)
    p = p - clr * m / u

state: step (a float, like torch's float32 step tensor), exp_avg (m),
exp_inf (u); created on a parameter's first step.
"""
import janus

from .optimizer import Optimizer, _addcdiv_, _check_adam_family, _lerp_

__all__ = ["Adamax"]


class Adamax(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_adam_family(lr, eps, betas, weight_decay, differentiable)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, foreach=foreach,
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
            beta1, beta2 = group["betas"]
            eps = group["eps"]
            weight_decay = group["weight_decay"]
            maximize = group["maximize"]
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0.0
                    state["exp_avg"] = janus.zeros_like(p)
                    state["exp_inf"] = janus.zeros_like(p)
                if maximize:
                    grad = -grad
                exp_avg = state["exp_avg"]
                exp_inf = state["exp_inf"]
                state["step"] += 1

                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)

                _lerp_(exp_avg, grad, 1 - beta1)
                exp_inf.copy_(janus.maximum(exp_inf.mul_(beta2), grad.abs().add_(eps)))

                bias_correction = 1 - beta1 ** state["step"]
                clr = lr / bias_correction
                _addcdiv_(p, exp_avg, exp_inf, -clr)
        return loss
