"""janus.optim.Rprop: resilient backpropagation (Riedmiller & Braun): each
element moves by its own step size in the direction of its gradient's sign;
the step size grows while the sign holds and shrinks when it flips --
torch's single-tensor update, step for step:

    step += 1
    g = -grad if maximize else grad
    s = sign(g * prev);  s = etaplus where s > 0, etaminus where s < 0, 1 where s == 0
    step_size = clamp(step_size * s, step_size_min, step_size_max)
    g = 0 where s == etaminus       (a sign flip: no move this step, and none counted next)
    p = p - sign(g) * step_size
    prev = g

state: step (a float, like torch's float32 step tensor), prev (starts at 0),
step_size (starts at lr); created on a parameter's first step.
"""
import janus

from .optimizer import Optimizer, _addcmul_, _check

__all__ = ["Rprop"]


class Rprop(Optimizer):
    # For a replaced step (janus/_region.py), when only this code runs and its ops are these:
    # state["step"] (+= 1 per step) flows into no op, so it is written, not guarded (lr is
    # only the step sizes' first value; etas and step-size bounds are guarded by value).
    _region_ops = ("mul", "sign", "gt", "lt", "eq", "masked_fill", "clamp", "clone", "add", "copy_", "neg")
    _region_counters = ("step",)

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        _check(0.0 <= lr, f"Invalid learning rate: {lr}")
        _check(0.0 < etas[0] < 1.0 < etas[1], f"Invalid eta values: {etas[0]}, {etas[1]}")
        if differentiable:
            raise NotImplementedError("janus optimizers do not support differentiable=True")
        defaults = dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes), foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
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
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            maximize = group["maximize"]
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0.0
                    state["prev"] = janus.zeros_like(p)
                    state["step_size"] = janus.full_like(grad, float(group["lr"]))
                if maximize:
                    grad = -grad
                prev = state["prev"]
                step_size = state["step_size"]
                state["step"] += 1

                sign = grad.mul(prev).sign()
                sign[sign.gt(0)] = etaplus
                sign[sign.lt(0)] = etaminus
                sign[sign.eq(0)] = 1

                # update the step sizes
                step_size.mul_(sign).clamp_(step_size_min, step_size_max)

                # where the sign flipped, dfdx = 0: no move now, and the next step sees no flip
                grad = grad.clone()
                grad[sign.eq(etaminus)] = 0

                _addcmul_(p, grad.sign(), step_size, -1)
                prev.copy_(grad)
        return loss
