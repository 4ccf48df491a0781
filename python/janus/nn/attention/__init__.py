"""janus.nn.attention: torch.nn.attention's kernel selection for
scaled_dot_product_attention, accepted so that scripts written for torch run.

janus picks its own attention kernel (janus.nn.functional.
scaled_dot_product_attention): sdpa_kernel checks its argument as torch does
and changes nothing, and the results are the same whichever backends it
names.  SDPBackend has torch's members and values."""
import contextlib
import enum

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

# torch warns when it cannot use a fused kernel; janus has no such fallback to warn about
WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.IntEnum):
    """The backends of scaled dot product attention, as torch numbers them:
    ERROR (no backend could be determined), MATH, FLASH_ATTENTION,
    EFFICIENT_ATTENTION, CUDNN_ATTENTION, OVERRIDEABLE.  janus names them for
    sdpa_kernel only; they do not choose janus's kernel."""
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    # torch's enum prints as SDPBackend.MATH (an IntEnum would print its number)
    def __str__(self):
        return f"SDPBackend.{self.name}"

    def __format__(self, spec):
        return format(str(self), spec)


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """torch.nn.attention.sdpa_kernel: a context manager (or decorator) that
    in torch restricts scaled_dot_product_attention to the given backends
    (with set_priority, tried in the order given).

    janus picks its own attention kernel, so this changes nothing: the
    results are those of janus's kernel whichever backends are named.  The
    argument is still checked -- an SDPBackend or a list of them, else
    TypeError (torch raises AssertionError with the same words) -- so a
    misspelt backend fails here as it would under torch.  Yields {} as
    torch's does."""
    if not isinstance(backends, (list, SDPBackend)):
        raise TypeError("Backend must be an instance of SDPBackend or a list of SDPBackend instances, "
                        f"got {type(backends).__name__}")
    for b in ([backends] if isinstance(backends, SDPBackend) else backends):
        if not isinstance(b, SDPBackend):
            raise TypeError("Backend must be an instance of SDPBackend or a list of SDPBackend instances, "
                            f"got a list holding {type(b).__name__}")
    yield {}
