"""nn.Parameter: a leaf tensor that modules register as trainable state."""
import janus
from janus import _C, _record


class Parameter(janus.Tensor):
    """A Tensor that is a module parameter (requires grad by default).
    Shares storage with the tensor it was made from, like torch's."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = janus.empty(0)
        if not isinstance(data, _C.TensorBase):
            raise TypeError(f"Parameter data must be a Tensor, not {type(data).__name__}")
        p = _C._make_subclass(cls, data, bool(requires_grad))
        if _record.active:  # recorded runs: state that lives across steps
            _record.mark_param(p)
        return p

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        r = Parameter(self.detach().clone(), self.requires_grad)
        memo[id(self)] = r
        return r
