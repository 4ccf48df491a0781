"""ChannelShuffle (torch.nn.modules.channelshuffle): a reshape, a transpose
and a reshape back (F.channel_shuffle)."""
from .. import functional as F
from ..module import Module


class ChannelShuffle(Module):
    """Interleave the channels of (N, C, *) split in `groups` groups."""

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, x):
        return F.channel_shuffle(x, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"
