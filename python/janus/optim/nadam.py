"""janus.optim.NAdam: Adam with Nesterov momentum (Dozat), with the momentum
schedule of momentum_decay, optional L2 or decoupled weight decay and
maximization -- torch's single-tensor update, step for step:

    step += 1
    g = -grad if maximize else grad
    bias_correction2 = 1 - beta2 ** step
    p *= 1 - lr * weight_decay            (decoupled)   or   g = g + weight_decay * p
    mu = beta1 * (1 - 0.5 * 0.96 ** (step * momentum_decay))
    mu_next = beta1 * (1 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
    mu_product = mu_product * mu
    m.lerp_(g, 1 - beta1)                 (m = m + (1 - beta1) * (g - m))
    v = beta2 * v + (1 - beta2) * g * g
    denom = sqrt(v / bias_correction2) + eps
    p = p - lr * (1 - mu) / (1 - mu_product) * g / denom
    p = p - lr * mu_next / (1 - mu_product * mu_next) * m / denom

state: step (a float, like torch's float32 step tensor), mu_product (a
float holding what torch's float32 0-dim tensor holds: the product is
rounded to float32 at every step, as torch's `mu_product *= mu` does),
exp_avg, exp_avg_sq; created on a parameter's first step.
"""
import math
import struct

import janus

from .optimizer import Optimizer, _addcdiv_, _addcmul_, _check, _check_adam_family, _lerp_, _step_value

__all__ = ["NAdam"]

_F32 = struct.Struct("f")


def _scalar(x):
    """x as torch stores a 0-dim optimizer state scalar (NAdam's mu_product,
    ASGD's eta and mu): a tensor of the default dtype, float32 -- so x
    rounded to float32 (to nearest), kept as a Python float."""
    if janus.get_default_dtype() is janus.float64:
        return float(x)
    try:
        return _F32.unpack(_F32.pack(x))[0]
    except OverflowError:  # beyond float32's range: torch's cast gives inf
        return math.copysign(math.inf, x)


class NAdam(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_adam_family(lr, eps, betas, weight_decay, differentiable)
        _check(0.0 <= momentum_decay, f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay,
                        maximize=maximize, foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)

    def step(self, closure=None):
        """Perform one optimization step; closure re-evaluates the model and returns the loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr = group["lr"]
            beta1, beta2 = group["betas"]
            eps = group["eps"]
            weight_decay = group["weight_decay"]
            momentum_decay = group["momentum_decay"]
            decoupled = group.get("decoupled_weight_decay", False)
            maximize = group["maximize"]
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0.0
                    state["mu_product"] = 1.0
                    state["exp_avg"] = janus.zeros_like(p)
                    state["exp_avg_sq"] = janus.zeros_like(p)
                if maximize:
                    grad = -grad
                exp_avg = state["exp_avg"]
                exp_avg_sq = state["exp_avg_sq"]
                state["step"] += 1
                step = state["step"]

                bias_correction2 = 1 - beta2 ** step

                if weight_decay != 0:
                    if decoupled:
                        p.mul_(1 - lr * weight_decay)
                    else:
                        grad = grad.add(p, alpha=weight_decay)

                # the momentum cache mu_t and mu_{t+1}
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
                # a saved torch state holds a tensor here: its value is the same
                mu_product = _scalar(_step_value(state["mu_product"]) * _scalar(mu))
                state["mu_product"] = mu_product

                _lerp_(exp_avg, grad, 1 - beta1)
                _addcmul_(exp_avg_sq.mul_(beta2), grad, grad, 1 - beta2)
                denom = exp_avg_sq.div(bias_correction2).sqrt()

                mu_product_next = mu_product * mu_next
                denom.add_(eps)
                _addcdiv_(p, grad, denom, -lr * (1.0 - mu) / (1.0 - mu_product))
                _addcdiv_(p, exp_avg, denom, (-lr * mu_next) / (1.0 - mu_product_next))
        return loss
