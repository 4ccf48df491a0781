"""Dropout layers (torch.nn.modules.dropout): elementwise (Dropout) and
channel-wise (Dropout1d/2d/3d: one Philox draw per sample and channel), and
the SELU-preserving AlphaDropout / FeatureAlphaDropout."""
from .. import functional as F
from ..module import Module


class _DropoutNd(Module):
    _fn = "dropout"

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, x):
        return getattr(F, self._fn)(x, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    pass


class Dropout1d(_DropoutNd):
    _fn = "dropout1d"


class Dropout2d(_DropoutNd):
    _fn = "dropout2d"


class Dropout3d(_DropoutNd):
    _fn = "dropout3d"


class AlphaDropout(_DropoutNd):
    """Dropout that keeps zero mean and unit variance (for SELU networks):
    dropped entries take SELU's negative saturation value, then an affine
    map restores the moments.  As in PyTorch, the layer never runs in place
    (inplace is only shown in the repr)."""
    _fn = "alpha_dropout"

    def forward(self, x):
        return getattr(F, self._fn)(x, self.p, self.training)


class FeatureAlphaDropout(AlphaDropout):
    """AlphaDropout of whole channels of (N, C, *)."""
    _fn = "feature_alpha_dropout"
