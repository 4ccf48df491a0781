"""janus.optim.Adagrad: Adagrad (Duchi et al.) -- torch's single-tensor
update, step for step:

    step += 1
    g = -grad if maximize else grad
    g = g + weight_decay * p                       (weight_decay != 0)
    clr = lr / (1 + (step - 1) * lr_decay)
    sum += g * g
    p = p - clr * g / (sqrt(sum) + eps)

state: step, sum (starts at initial_accumulator_value).
"""
import janus

from .optimizer import Optimizer, _addcdiv_, _addcmul_, _check

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    # For a replaced step (janus/_region.py), when only this code runs and its ops are these:
    # the decayed lr flows only, negated, into the alpha of the p.add_ (addcdiv_) that moves
    # the parameter; without lr_decay it is group["lr"] itself, bound per call (with a decay
    # it changes every step and the region is refused); state["step"] (+= 1) is written.
    _region_ops = ("mul", "add", "sqrt", "div", "neg")
    _region_values = ("lr",)
    _region_counters = ("step",)
    _region_negated = ((("add", "alpha"), "lr"),)

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check(0.0 <= lr, f"Invalid learning rate: {lr}")
        _check(0.0 <= lr_decay, f"Invalid lr_decay value: {lr_decay}")
        _check(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
        _check(0.0 <= initial_accumulator_value, f"Invalid initial_accumulator_value value: "
                                                 f"{initial_accumulator_value}")
        _check(0.0 <= eps, f"Invalid epsilon value: {eps}")
        if differentiable:
            raise NotImplementedError("janus optimizers do not support differentiable=True")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:  # torch makes the state at construction
            for p in group["params"]:
                self.state[p]["step"] = 0.0
                self.state[p]["sum"] = janus.full_like(p, float(group["initial_accumulator_value"]))

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("maximize", False)

    def share_memory(self):
        """Nothing to do: janus state is shared with child processes by copy."""

    def step(self, closure=None):
        """Perform one optimization step; closure re-evaluates the model and returns the loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr, lr_decay, eps = group["lr"], group["lr_decay"], group["eps"]
            weight_decay, maximize = group["weight_decay"], group["maximize"]
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                state = self.state[p]
                if "sum" not in state:
                    state["step"] = 0.0
                    state["sum"] = janus.full_like(p, float(group["initial_accumulator_value"]))
                if maximize:
                    grad = -grad
                state["step"] += 1
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                clr = lr / (1 + (state["step"] - 1) * lr_decay)
                state_sum = state["sum"]
                _addcmul_(state_sum, grad, grad, 1.0)
                std = state_sum.sqrt().add_(eps)
                _addcdiv_(p, grad, std, -clr)
        return loss
