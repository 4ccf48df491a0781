"""janus.optim.Adafactor: Adafactor (Shazeer & Stern, 2018) as torch (2.5+)
defines it -- torch's single-tensor update, step for step:

    step += 1
    g = -grad if maximize else grad
    eps1 = eps[0] or finfo(p.dtype).eps       (the first such param's dtype, as torch's loop leaves it)
    beta2_t = step ** beta2_decay              (the weight of the new second moment)
    rho = min(lr, 1 / sqrt(step))
    alpha = max(eps2, ||p||_2 / sqrt(numel)) * rho
    p *= 1 - lr * weight_decay                 (weight_decay != 0)
    >= 2-D (factored over the last two dims):
        row.lerp_(mean(g^2, -1), beta2_t),  col.lerp_(mean(g^2, -2), beta2_t)
        v = row @ col / clamp(mean(row, -2), min=eps1)
    1-D:
        v = variance.lerp_(g^2, beta2_t)
    u = g / sqrt(clamp(v, min=eps1^2))
    p -= alpha / max(1, ||u||_2 / (sqrt(numel) d)) * u

state: step (a float, like the other janus optimizers; torch keeps a float32
tensor), row_var and col_var (>= 2-D: g's shape with the last, resp.
second-to-last, dim 1) or variance (1-D).  torch reads the two norms on the
host (`.item()`); here alpha and the clipping divisor stay 0-d tensors, so a
step makes no sync (they round in the parameter's dtype where torch's Python
floats are doubles: last-bit differences).  `foreach` is accepted and
ignored (one implementation).  Like RAdam's, the update's Python numbers
(beta2_t, rho) change with `step`, so under replay the step runs its Python
and its ops are captured (no step region).
"""
import janus

from .optimizer import Optimizer, _lerp_

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False):
        if isinstance(lr, janus.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)

    def step(self, closure=None):
        """Perform one optimization step; closure re-evaluates the model and returns the loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr = group["lr"]
            lr = float(lr.item()) if isinstance(lr, janus.Tensor) else lr
            eps1, eps2 = group["eps"]
            d, beta2_decay = group["d"], group["beta2_decay"]
            weight_decay, maximize = group["weight_decay"], group["maximize"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0.0
                    if grad.dim() > 1:
                        state["row_var"] = grad.new_zeros(list(grad.shape[:-1]) + [1])
                        state["col_var"] = grad.new_zeros(list(grad.shape[:-2]) + [1, grad.shape[-1]])
                    else:
                        state["variance"] = janus.zeros_like(grad)
                if maximize:
                    grad = -grad
                if eps1 is None:
                    eps1 = janus.finfo(p.dtype).eps
                state["step"] += 1
                step = state["step"]
                beta2_t = step ** beta2_decay
                rho = min(lr, 1 / (step ** 0.5))
                root_n = p.numel() ** 0.5
                alpha = (p.norm(2) / root_n).clamp_(min=eps2).mul_(rho)  # 0-d: no host read
                if weight_decay != 0:
                    p.mul_(1 - lr * weight_decay)
                if grad.dim() > 1:
                    row_var, col_var = state["row_var"], state["col_var"]
                    # (g * g).mean over a dim, computed as torch does (a norm squared, / the size)
                    row_mean = janus.linalg.vector_norm(grad, dim=-1, keepdim=True).square_().div_(grad.size(-1))
                    _lerp_(row_var, row_mean, beta2_t)
                    col_mean = janus.linalg.vector_norm(grad, dim=-2, keepdim=True).square_().div_(grad.size(-2))
                    _lerp_(col_var, col_mean, beta2_t)
                    var_estimate = row_var @ col_var
                    var_estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
                else:
                    variance = state["variance"]
                    _lerp_(variance, grad * grad, beta2_t)
                    var_estimate = variance.clone()
                update = var_estimate.clamp_(min=eps1 * eps1).rsqrt_()
                update.mul_(grad)
                denom = (update.norm(2) / (root_n * d)).clamp_(min=1.0)
                p.sub_(update.mul_(alpha / denom))
        return loss
