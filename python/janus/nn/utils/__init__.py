"""janus.nn.utils: gradient clipping (clip_grad_norm_, or get_total_norm then
clip_grads_with_norm_, and clip_grad_value_), parameter vectors, inference-time
conv/linear + batch-norm fusion (fusion.py), skip_init (init.py),
convert_conv2d_weight_memory_format (memory_format.py), janus.nn.utils.rnn
(pad_sequence, packed sequences) and janus.nn.utils.prune (pruning masks)."""
import janus
from janus import _record


@_record.region_function("clip")
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale gradients in place so their joint norm is at most max_norm;
    returns the total norm before clipping (as torch does).  foreach is
    accepted and ignored (janus has no foreach kernels; the result is the same)."""
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


def _vector_norm(x, p):
    """torch.linalg.vector_norm(x, p) over all elements; half and bfloat16
    tensors are reduced in float32, as torch accumulates them."""
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got {x.dtype}")
    dtype = x.dtype
    if x.element_size() < 4:
        x = x.float()
    return janus.linalg.vector_norm(x, p).to(dtype)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm_type-norm of all the tensors together, as if they were one
    concatenated vector: the norm of each tensor, then the norm of those
    norms (torch's definition, also for norm_type 0: it then counts the
    tensors that have a nonzero element).  tensors: an iterable of tensors or
    one tensor; none at all gives tensor(0.).  error_if_nonfinite: RuntimeError when the total is nan or
    +-inf.  Computed without gradient tracking, as torch's.  foreach is
    accepted and ignored (janus has no foreach kernels; the result is the
    same)."""
    if isinstance(tensors, janus.Tensor):
        tensors = [tensors]
    else:
        tensors = list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return janus.tensor(0.0)
    first_device = tensors[0].device
    with janus.no_grad():
        norms = [_vector_norm(t, norm_type) for t in tensors]
        norms = [n if n.device == first_device else n.to(first_device) for n in norms]
        total = _vector_norm(janus.stack(norms), norm_type)
        if error_if_nonfinite and not bool(total.isfinite()):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                               "so it cannot be clipped. To disable this error and scale the gradients by the "
                               "non-finite norm anyway, set `error_if_nonfinite=False`")  # torch's words
    return total


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the parameters' gradients in place by min(max_norm / (total_norm
    + 1e-6), 1), total_norm given (e.g. from get_total_norm): clip_grad_norm_
    with the norm computed beforehand.  No comparison on the host: the
    coefficient is a clamped tensor.  Returns None.  total_norm may also be a
    Python number (torch needs a tensor); foreach is accepted and ignored."""
    if isinstance(parameters, janus.Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    max_norm = float(max_norm)
    if not grads:
        return
    with janus.no_grad():
        if not isinstance(total_norm, janus.Tensor):
            total_norm = janus.tensor(float(total_norm), dtype=janus.float32)
        coef = (max_norm / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef if coef.device == g.device else coef.to(g.device))


def clip_grad_value_(parameters, clip_value, foreach=None):  # foreach: accepted and ignored, as above
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
from .fusion import (fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval,  # noqa: E402,F401
                     fuse_linear_bn_weights)
from .init import skip_init  # noqa: E402,F401
from .memory_format import convert_conv2d_weight_memory_format  # noqa: E402,F401
from . import parametrizations, parametrize, prune, stateless  # noqa: E402,F401
from .spectral_norm import remove_spectral_norm, spectral_norm  # noqa: E402,F401
from .weight_norm import remove_weight_norm, weight_norm  # noqa: E402,F401
