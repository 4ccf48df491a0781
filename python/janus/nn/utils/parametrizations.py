"""janus.nn.utils.parametrizations: weight normalization and spectral
normalization as parametrizations (torch.nn.utils.parametrizations), built
on janus.nn.utils.parametrize and composed from janus tensor ops so that
autograd differentiates through them.

- weight_norm(module, name, dim): weight = g * v / ||v||, the norm over
  every dim but `dim` (over all of v when dim is None or -1, as torch's
  norm_except_dim); g is parametrizations.<name>.original0, v original1.
- spectral_norm(module, name, n_power_iterations, eps, dim): weight =
  W / sigma, sigma = u . (W_mat v) with u, v (buffers _u, _v of the
  parametrization) refined by power iteration without gradient at every
  read of the weight in training mode (15 iterations at registration).

weight_norm also registers torch's load_state_dict pre-hook, so a
checkpoint of the older hook-based weight_norm (janus.nn.utils.weight_norm:
keys <name>_g and <name>_v) loads too: the two keys are renamed to
parametrizations.<name>.original0 / original1 before the module loads.

torch's orthogonal() is not provided: its maps need matrix_exp or
householder_product, which janus lacks (only its Cayley map could be built
on linalg.solve).
"""
import janus

from .. import functional as F
from ..module import Module
from . import parametrize

__all__ = ["weight_norm", "spectral_norm"]


def _norm_except_dim(v, dim):
    """torch.norm_except_dim(v, 2, dim): the 2-norm over every dim but dim,
    kept as size-1 dims; dim == -1 means over all of v (a 0-dim result)."""
    if dim == -1:
        return (v * v).sum().sqrt()
    nd = v.dim()
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim})")
    d = dim % nd
    others = [i for i in range(nd) if i != d]
    if not others:
        return v.abs()
    return (v * v).sum(others, keepdim=True).sqrt()


def _weight_norm(v, g, dim):
    """torch._weight_norm(v, g, dim): v * (g / norm_except_dim(v, 2, dim))."""
    return v * (g / _norm_except_dim(v, dim))


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        if dim is None:
            dim = -1
        self.dim = dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        weight_g = _norm_except_dim(weight, self.dim)
        weight_v = weight
        return weight_g, weight_v


def weight_norm(module, name="weight", dim=0):
    """Weight normalization (https://arxiv.org/abs/1602.07868): module.<name>
    becomes g * v / ||v|| with the magnitude g
    (parametrizations.<name>.original0, the norm of the weight over every
    dim but dim, kept as size-1 dims) and the direction v (original1, the
    weight).  dim=None: one norm over the whole tensor.  A state dict of the
    old weight_norm (<name>_g, <name>_v) loads into the module.  Returns module."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                 error_msgs):
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            g, v = state_dict.pop(g_key), state_dict.pop(v_key)
            state_dict[f"{prefix}parametrizations.{name}.original0"] = g
            state_dict[f"{prefix}parametrizations.{name}.original1"] = v

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but "
                             f"got n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            # a vector needs no approximation (see forward)
            self.n_power_iterations = n_power_iterations
            with janus.no_grad():
                weight_mat = self._reshape_weight_to_matrix(weight.detach())
                h, w = weight_mat.shape
                u = weight_mat.new_empty(h).normal_(0, 1)
                v = weight_mat.new_empty(w).normal_(0, 1)
                self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
                self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            # reasonable u, v from the start: 15 power iterations
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if weight.ndim <= 1:
            raise AssertionError(f"Expected weight to have more than 1 dimension, got {weight.ndim}")
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat, n_power_iterations):
        """u <- normalize(W v), v <- normalize(W^T u), n times, in place
        (the buffers stay the same tensors), without gradient."""
        if weight_mat.ndim <= 1:
            raise AssertionError(f"Expected weight_mat to have more than 1 dimension, got {weight_mat.ndim}")
        with janus.no_grad():
            weight_mat = weight_mat.detach()
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(janus.mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(janus.mv(weight_mat.t(), self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        # copies: a later in-place update must not change what this graph saved
        u = self._u.clone()
        v = self._v.clone()
        sigma = janus.dot(u, janus.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Spectral normalization (https://arxiv.org/abs/1802.05957): module.<name>
    becomes W / sigma(W), sigma estimated as u . (W v) with W reshaped to a
    matrix (dim first: default 0, 1 for ConvTranspose), u and v the
    buffers parametrizations.<name>.0._u / _v refined by n_power_iterations
    of the power method at each read in training mode.  A 1-d weight is
    divided by its 2-norm.  Returns module."""
    weight = getattr(module, name, None)
    if not isinstance(weight, janus.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, _conv_transpose_types()) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


def _conv_transpose_types():
    nn = janus.nn
    return tuple(getattr(nn, n) for n in ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d") if hasattr(nn, n))
