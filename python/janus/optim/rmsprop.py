"""janus.optim.RMSprop: RMSprop (Hinton) with optional momentum, centering,
weight decay and maximization -- torch's single-tensor update, step for step:

    step += 1
    g = -grad if maximize else grad
    g = g + weight_decay * p                       (weight_decay != 0)
    sq = alpha * sq + (1 - alpha) * g * g
    centered:  ga.lerp_(g, 1 - alpha);  avg = sqrt(sq - ga * ga)   else  avg = sqrt(sq)
    avg = avg + eps
    momentum > 0:  buf = momentum * buf + g / avg;  p = p - lr * buf
    else:          p = p - lr * g / avg

state: step, square_avg, momentum_buffer (momentum > 0), grad_avg (centered).
"""
import janus

from .optimizer import Optimizer, _addcdiv_, _addcmul_, _check, _lerp_

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    # For a replaced step (janus/_region.py), when only this code runs and its ops are these:
    # group["lr"] flows only, negated, into the alpha of the p.add_ (addcdiv_) that moves
    # the parameter (every other alpha here is positive), and state["step"] (+= 1 per
    # step) into no op, so lr is bound per call and the counter written, not guarded.
    _region_ops = ("mul", "add", "sqrt", "div", "sub", "neg")
    _region_values = ("lr",)
    _region_counters = ("step",)
    _region_negated = ((("add", "alpha"), "lr"),)

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check(0.0 <= lr, f"Invalid learning rate: {lr}")
        _check(0.0 <= eps, f"Invalid epsilon value: {eps}")
        _check(0.0 <= momentum, f"Invalid momentum value: {momentum}")
        _check(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
        _check(0.0 <= alpha, f"Invalid alpha value: {alpha}")
        if differentiable:
            raise NotImplementedError("janus optimizers do not support differentiable=True")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("momentum", 0)
            group.setdefault("centered", False)
            group.setdefault("maximize", False)

    def step(self, closure=None):
        """Perform one optimization step; closure re-evaluates the model and returns the loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr = group["lr"]
            alpha = group["alpha"]
            eps = group["eps"]
            weight_decay = group["weight_decay"]
            momentum = group["momentum"]
            centered = group["centered"]
            maximize = group["maximize"]
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0.0
                    state["square_avg"] = janus.zeros_like(p)
                    if momentum > 0:
                        state["momentum_buffer"] = janus.zeros_like(p)
                    if centered:
                        state["grad_avg"] = janus.zeros_like(p)
                if maximize:
                    grad = -grad
                square_avg = state["square_avg"]
                state["step"] += 1

                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)

                _addcmul_(square_avg.mul_(alpha), grad, grad, 1 - alpha)

                if centered:
                    grad_avg = state["grad_avg"]
                    _lerp_(grad_avg, grad, 1 - alpha)
                    avg = (square_avg - grad_avg * grad_avg).sqrt()
                else:
                    avg = square_avg.sqrt()
                avg = avg.add_(eps)

                if momentum > 0:
                    buf = state["momentum_buffer"]
                    _addcdiv_(buf.mul_(momentum), grad, avg, 1.0)
                    p.add_(buf, alpha=-lr)
                else:
                    _addcdiv_(p, grad, avg, -lr)
        return loss
