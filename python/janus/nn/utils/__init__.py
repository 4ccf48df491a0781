"""janus.nn.utils: gradient clipping, parameter vectors, and janus.nn.utils.rnn
(pad_sequence)."""
import janus
from janus import _record


@_record.region_function("clip")
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Scale gradients in place so their joint norm is at most max_norm;
    returns the total norm before clipping (as torch does)."""
    if isinstance(parameters, janus.Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return janus.tensor(0.0)
    regions = janus._region_function  # set while a replay replaces calls (janus/_region.py)
    if regions is not None:
        # the check reads the norm (a sync, maybe a raise): such a call runs this Python,
        # counted with that reason, so it raises exactly as eager does
        return regions(_clip_grad_norm, (grads, max_norm, norm_type, bool(error_if_nonfinite)),
                       _NONFINITE_CHECK if error_if_nonfinite else None)
    return _clip_grad_norm(grads, max_norm, norm_type, error_if_nonfinite)


_NONFINITE_CHECK = "error_if_nonfinite=True: the check reads the norm (a sync point), so the call runs its Python"


def _clip_grad_norm(grads, max_norm, norm_type, error_if_nonfinite):
    norm_type = float(norm_type)
    with janus.no_grad():
        if norm_type == float("inf"):
            norms = [g.abs().amax() for g in grads]
            total = norms[0] if len(norms) == 1 else janus.stack(norms).amax()
        else:
            norms = [(g.abs() ** norm_type).sum() ** (1.0 / norm_type) for g in grads]
            total = (janus.stack(norms) ** norm_type).sum() ** (1.0 / norm_type)
        if error_if_nonfinite and not bool(total.isfinite() if hasattr(total, "isfinite") else (total == total)):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                               "so it cannot be clipped. To disable this error and scale the gradients by the "
                               "non-finite norm anyway, set `error_if_nonfinite=False`")  # torch's words
        coef = (float(max_norm) / (total + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef)
    return total


# the recording marks clip_grad_norm_ (its verdict's key); a replay replaces this body
_clip_grad_norm._recorded_as = ("clip", clip_grad_norm_)


def clip_grad_value_(parameters, clip_value):
    if isinstance(parameters, janus.Tensor):
        parameters = [parameters]
    with janus.no_grad():
        for p in parameters:
            if p.grad is not None:
                p.grad.clamp_(min=-clip_value, max=clip_value)


def parameters_to_vector(parameters):
    """The parameters flattened and concatenated into one vector."""
    return janus.cat([p.reshape(-1) for p in parameters], 0)


def vector_to_parameters(vec, parameters):
    """Copy slices of vec into the parameters, in order (the inverse of parameters_to_vector)."""
    if not isinstance(vec, janus.Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    offset = 0
    with janus.no_grad():
        for p in parameters:
            n = p.numel()
            p.copy_(vec[offset:offset + n].view_as(p))
            offset += n


from . import rnn  # noqa: E402,F401
