"""janus.utils.tensorboard: torch.utils.tensorboard's SummaryWriter,
writing TensorBoard event files by hand (TFRecord framing and protobuf
wire format in _wire.py) with no tensorboard or protobuf package.
Scalars, histograms, images, text, tensors and hparams are written as
torch writes them; graphs, embeddings, audio, video, figures, meshes,
PR curves and custom-scalar layouts are refused by name."""
from .writer import FileWriter, SummaryWriter  # noqa: F401

__all__ = ["FileWriter", "SummaryWriter"]
