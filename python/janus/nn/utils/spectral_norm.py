"""janus.nn.utils.spectral_norm: the hook-based spectral normalization
(torch.nn.utils.spectral_norm): the Parameter weight becomes weight_orig,
with the buffers weight_u and weight_v, and a forward pre-hook sets
module.weight = weight_orig / sigma (a plain attribute) before every
forward, sigma = u . (W v) with W weight_orig as a matrix (dim first) and,
in training mode, u and v first refined in place by n_power_iterations of
the power method (v first, then u) without gradient.  u and v start as
normalized normal draws (janus's generator), without the 15 warm-up
iterations of the parametrization version -- as torch.

Not reproduced: torch's state_dict hook that records the version in the
state dict's _metadata (metadata["spectral_norm"]) and the load_state_dict
pre-hook that converts a pre-1.0 checkpoint (with a `weight` key and no
weight_v)."""
import janus

from .. import functional as F
from ..parameter import Parameter
from .weight_norm import _pre_hooks, _remove_hook

__all__ = ["SpectralNorm", "spectral_norm", "remove_spectral_norm"]


class SpectralNorm:
    """The forward pre-hook: recomputes module.<name> from <name>_orig, <name>_u, <name>_v."""
    _version = 1

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but "
                             f"got n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        weight_mat = weight
        if self.dim != 0:
            weight_mat = weight_mat.permute(self.dim, *[d for d in range(weight_mat.dim()) if d != self.dim])
        height = weight_mat.size(0)
        return weight_mat.reshape(height, -1)

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with janus.no_grad():
                w = weight_mat.detach()
                for _ in range(self.n_power_iterations):
                    # in place: the buffers stay the module's tensors
                    v.copy_(F.normalize(janus.mv(w.t(), u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(janus.mv(w, v), dim=0, eps=self.eps))
                # copies: a later in-place update must not change what this graph saved
                u = u.clone()
                v = v.clone()
        sigma = janus.dot(u, janus.mv(weight_mat, v))
        return weight / sigma

    def remove(self, module):
        with janus.no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        for hook in _pre_hooks(module).values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        with janus.no_grad():
            weight_mat = fn.reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        # module.<name> still exists (code may read it, e.g. to initialize it): the
        # weight's data as a plain attribute, not a Parameter
        setattr(module, fn.name, weight.detach())
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        fn._handle = module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Rescale module.<name> by its spectral norm, estimated by power
    iteration, before every forward (dim: the output dimension, default 0,
    1 for ConvTranspose).  Returns module."""
    if dim is None:
        from .parametrizations import _conv_transpose_types
        dim = 1 if isinstance(module, _conv_transpose_types()) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    """Undo spectral_norm: module.<name> is a Parameter holding the current
    normalized weight (no power iteration).  Returns module."""
    for k, hook in list(_pre_hooks(module).items()):
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            _remove_hook(module, k, hook)
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
