"""janus.nn.utils: gradient clipping."""
import janus


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Scale gradients in place so their joint norm is at most max_norm;
    returns the total norm before clipping (as torch does)."""
    if isinstance(parameters, janus.Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return janus.tensor(0.0)
    norm_type = float(norm_type)
    with janus.no_grad():
        if norm_type == float("inf"):
            norms = [g.abs().amax() for g in grads]
            total = norms[0] if len(norms) == 1 else janus.stack(norms).amax()
        else:
            norms = [(g.abs() ** norm_type).sum() ** (1.0 / norm_type) for g in grads]
            total = (janus.stack(norms) ** norm_type).sum() ** (1.0 / norm_type)
        if error_if_nonfinite and not bool(total.isfinite() if hasattr(total, "isfinite") else (total == total)):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients is non-finite, so it cannot be clipped.")
        coef = (float(max_norm) / (total + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef)
    return total


def clip_grad_value_(parameters, clip_value):
    if isinstance(parameters, janus.Tensor):
        parameters = [parameters]
    with janus.no_grad():
        for p in parameters:
            if p.grad is not None:
                p.grad.clamp_(min=-clip_value, max=clip_value)
