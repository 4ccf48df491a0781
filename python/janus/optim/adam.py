"""janus.optim.Adam: Adam (Kingma & Ba) with optional AMSGrad, L2 weight
decay (or decoupled weight decay, which is AdamW) and maximization -- torch's
single-tensor update, step for step:

    step += 1
    g = -grad if maximize else grad
    p *= 1 - lr * weight_decay            (decoupled)   or   g = g + weight_decay * p
    m.lerp_(g, 1 - beta1)                 (m = m + (1 - beta1) * (g - m))
    v = beta2 * v + (1 - beta2) * g * g
    bias_correction1 = 1 - beta1 ** step,  bias_correction2 = 1 - beta2 ** step
    step_size = lr / bias_correction1
    vmax = maximum(vmax, v); use vmax instead of v      (amsgrad)
    denom = (sqrt(v) / sqrt(bias_correction2)) + eps
    p = p - step_size * m / denom

state: step (a float, like torch's float32 step tensor), exp_avg, exp_avg_sq,
max_exp_avg_sq (amsgrad only); created on a parameter's first step.

Without amsgrad, a float32/float64 parameter whose tensors are contiguous
is updated by the fused table op adam_ (runtime/k_fused.c): the same
operations in the same order and precision in one pass, writing param,
exp_avg and exp_avg_sq in place.  _FUSED = False forces the unfused path.
"""
import math

import janus

from .optimizer import Optimizer, _addcdiv_, _addcmul_, _check_adam_family, _lerp_

__all__ = ["Adam"]

_FUSED = True
_FUSED_DTYPES = (janus.float32, janus.float64)


def _numbers(*vals):
    """Hyper-parameters the fused op takes as float attributes (not tensors)."""
    return all(type(v) in (float, int) for v in vals)


def _fusable(p, grad, exp_avg, exp_avg_sq):
    d = p.dtype
    return (d in _FUSED_DTYPES and grad.dtype is d and exp_avg.dtype is d and exp_avg_sq.dtype is d
            and p.is_contiguous() and grad.is_contiguous() and exp_avg.is_contiguous()
            and exp_avg_sq.is_contiguous() and grad.shape == p.shape)


class Adam(Optimizer):
    # For a replaced step (janus/_region.py), when only this code runs and every op is adam_:
    # group["lr"] flows only into adam_'s lr attribute, state["step"] (+= 1 per step) only
    # into its step attribute, so both are bound per call instead of guarded.
    _region_ops = ("adam_",)
    _region_values = ("lr",)
    _region_counters = ("step",)

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        _check_adam_family(lr, eps, betas, weight_decay, differentiable)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("decoupled_weight_decay", False)

    def step(self, closure=None):
        """Perform one optimization step; closure re-evaluates the model and returns the loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr = group["lr"]
            beta1, beta2 = group["betas"]
            eps = group["eps"]
            weight_decay = group["weight_decay"]
            amsgrad = group["amsgrad"]
            maximize = group["maximize"]
            decoupled = group.get("decoupled_weight_decay", False)
            fused = _FUSED and not amsgrad and _numbers(lr, beta1, beta2, eps, weight_decay)
            adam_ = janus.ops.adam_
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0.0
                    state["exp_avg"] = janus.zeros_like(p)
                    state["exp_avg_sq"] = janus.zeros_like(p)
                    if amsgrad:
                        state["max_exp_avg_sq"] = janus.zeros_like(p)
                exp_avg = state["exp_avg"]
                exp_avg_sq = state["exp_avg_sq"]
                if fused and _fusable(p, grad, exp_avg, exp_avg_sq):
                    state["step"] += 1
                    adam_(p, exp_avg, exp_avg_sq, grad, lr=lr, beta1=beta1, beta2=beta2, eps=eps,
                          weight_decay=weight_decay, step=float(state["step"]), decoupled=decoupled,
                          maximize=maximize)
                    continue
                if maximize:
                    grad = -grad
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
                step_size = lr / bias_correction1
                bias_correction2_sqrt = math.sqrt(bias_correction2)

                if amsgrad:
                    max_sq = state["max_exp_avg_sq"]
                    max_sq.copy_(janus.maximum(max_sq, exp_avg_sq))
                    denom = (max_sq.sqrt() / bias_correction2_sqrt).add_(eps)
                else:
                    denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
                _addcdiv_(p, exp_avg, denom, -step_size)
        return loss
