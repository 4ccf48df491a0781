"""janus.optim.RAdam: Rectified Adam (Liu et al.) with optional L2 or
decoupled weight decay and maximization -- torch's single-tensor update,
step for step:

    step += 1
    g = -grad if maximize else grad
    p *= 1 - lr * weight_decay            (decoupled)   or   g = g + weight_decay * p
    m.lerp_(g, 1 - beta1)                 (m = m + (1 - beta1) * (g - m))
    v = beta2 * v + (1 - beta2) * g * g
    bias_correction1 = 1 - beta1 ** step,  bias_correction2 = 1 - beta2 ** step
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * step * beta2 ** step / bias_correction2
    rho_t > 5:
        rect = sqrt((rho_t - 4) (rho_t - 2) rho_inf / ((rho_inf - 4) (rho_inf - 2) rho_t))
        adaptive_lr = sqrt(bias_correction2) / (sqrt(v) + eps)
        p = p - (m / bias_correction1) * lr * adaptive_lr * rect
    else (the variance is not yet tractable: momentum SGD):
        p = p - (m / bias_correction1) * lr

state: step (a float, like torch's float32 step tensor), exp_avg,
exp_avg_sq; created on a parameter's first step.
"""
import janus

from .optimizer import Optimizer, _addcmul_, _check_adam_family, _lerp_

__all__ = ["RAdam"]


class RAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        _check_adam_family(lr, eps, betas, weight_decay, differentiable)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            group.setdefault("capturable", False)

    def step(self, closure=None):
        """Perform one optimization step; closure re-evaluates the model and returns the loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr = group["lr"]
            beta1, beta2 = group["betas"]
            eps = group["eps"]
            weight_decay = group["weight_decay"]
            decoupled = group.get("decoupled_weight_decay", False)
            maximize = group["maximize"]
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0.0
                    state["exp_avg"] = janus.zeros_like(p)
                    state["exp_avg_sq"] = janus.zeros_like(p)
                if maximize:
                    grad = -grad
                exp_avg = state["exp_avg"]
                exp_avg_sq = state["exp_avg_sq"]
                state["step"] += 1
                step = state["step"]

                if weight_decay != 0:
                    if decoupled:
                        p.mul_(1 - lr * weight_decay)
                    else:
                        grad = grad.add(p, alpha=weight_decay)

                _lerp_(exp_avg, grad, 1 - beta1)
                _addcmul_(exp_avg_sq.mul_(beta2), grad, grad, 1 - beta2)

                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                bias_corrected_exp_avg = exp_avg / bias_correction1

                # the maximum length of the approximated SMA, and its length now
                rho_inf = 2 / (1 - beta2) - 1
                rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2

                if rho_t > 5.0:
                    # torch's `number / tensor` is tensor.reciprocal() * number
                    adaptive_lr = exp_avg_sq.sqrt().add_(eps).reciprocal() * (bias_correction2 ** 0.5)
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    p.add_(bias_corrected_exp_avg * lr * adaptive_lr * rect, alpha=-1.0)
                else:
                    p.add_(bias_corrected_exp_avg * lr, alpha=-1.0)
        return loss
