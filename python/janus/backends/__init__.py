"""janus.backends: the switches scripts set on torch.backends.

`torch.backends.cudnn.benchmark = True`, `deterministic = True`,
`torch.backends.cuda.matmul.allow_tf32 = True` are accepted and kept (their
values read back) but change nothing: janus picks its convolution
algorithms itself, is deterministic by construction (replay is bitwise equal
to eager) and does not use TF32.  mps is never available."""
from . import cuda, cudnn, mps  # noqa: F401
