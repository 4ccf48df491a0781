"""janus.backends.cuda: torch.backends.cuda's switches (accepted, no effect)."""
from .. import cuda as _cuda


class _Matmul:
    allow_tf32 = False
    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True


matmul = _Matmul()


def is_built():
    return _cuda.is_built()
