"""One clear error for a torch name janus does not have.

A PyTorch script run under `janus run/record/replay` sees janus as `torch`
(janus/_torch_alias.py).  A name janus lacks must fail where the script uses
it, saying what and where, and what to use instead:

    torch.nn.SyncBatchNorm is not supported by janus (train.py:12); use torch.nn.BatchNorm2d

Every public janus module gets a module-level __getattr__ (PEP 562) from
guard(): a missing public name raises UnsupportedAttributeError (an
AttributeError, so hasattr() and getattr(m, n, default) keep working), or
UnsupportedImportError when the access is `from torch.x import Name` (the
interpreter would otherwise replace the message by its own "cannot import
name").  The alias's import hook raises UnsupportedModuleError for
`import torch.x` of a module janus does not have.  The message is built
lazily (a miss inside hasattr() costs no string work) and names the torch
spelling while the alias is active, the janus one otherwise.  ALTERNATIVES
maps the names scripts commonly use to the nearest supported spelling; for
other names a close spelling of the same module (difflib) is offered.
`janus check` (janus/check.py) reports the same names statically.
"""
import difflib
import dis
import os
import sys

__all__ = ["Unsupported", "UnsupportedAttributeError", "UnsupportedImportError", "UnsupportedModuleError",
           "guard", "hint", "message", "ALTERNATIVES"]

# torch name (without "torch.") -> what to use instead (a torch name or a sentence).
ALTERNATIVES = {
    "jit.save": "torch.save(model.state_dict(), path) (janus.jit runs the Python as written: no TorchScript files)",
    "jit.load": "torch.load of a state_dict saved with torch.save, into the model built in Python",
    "nn.Module.register_backward_hook": "torch.nn.Module.register_full_backward_hook",  # legacy: its last op's grads
    "func.vmap": "a loop, or ops over a batch dim (janus has no function transforms)",
    "vmap": "a loop, or ops over a batch dim (janus has no function transforms)",
    "func.grad": "torch.autograd.grad",
    "func.grad_and_value": "torch.autograd.grad",
    "func.jacrev": "torch.autograd.functional.jacobian",
    "func.jacfwd": "torch.autograd.functional.jacobian",
    "func.vjp": "torch.autograd.functional.vjp",
    "func.jvp": "torch.autograd.functional.jvp",
    "func.hessian": "nothing yet: janus has no double backward",
    "onnx.export": "torch.save(model.state_dict(), path) (janus has no ONNX exporter)",
    "nn.SyncBatchNorm": "torch.nn.BatchNorm2d",
    "nn.Conv3d": "torch.nn.Conv2d",
    "optim.SparseAdam": "torch.optim.Adam",
    "utils.tensorboard.SummaryWriter.add_graph": "print(model) (janus writes no graph protos)",
    "utils.tensorboard.SummaryWriter.add_onnx_graph": "print(model) (janus writes no graph protos)",
    "utils.tensorboard.SummaryWriter.add_embedding":
        "saving the matrix with numpy.savetxt (janus has no projector files)",
    "utils.tensorboard.SummaryWriter.add_audio": "writing a .wav with the wave module",
    "utils.tensorboard.SummaryWriter.add_video": "torch.utils.tensorboard.SummaryWriter.add_images, one frame per step",
    "utils.tensorboard.SummaryWriter.add_figure":
        "torch.utils.tensorboard.SummaryWriter.add_image of the figure's pixels "
        "(numpy.asarray(fig.canvas.buffer_rgba()), dataformats='HWC')",
    "utils.tensorboard.SummaryWriter.add_image_with_boxes":
        "torch.utils.tensorboard.SummaryWriter.add_image with the boxes drawn into the pixels",
    "utils.tensorboard.SummaryWriter.add_pr_curve": "torch.utils.tensorboard.SummaryWriter.add_scalar of precision "
                                                    "and recall",
    "utils.tensorboard.SummaryWriter.add_pr_curve_raw":
        "torch.utils.tensorboard.SummaryWriter.add_scalar of precision and recall",
    "utils.tensorboard.SummaryWriter.add_mesh": "saving the vertices with numpy.save",
    "utils.tensorboard.SummaryWriter.add_custom_scalars": "torch.utils.tensorboard.SummaryWriter.add_scalars",
    "utils.tensorboard.SummaryWriter.add_custom_scalars_multilinechart":
        "torch.utils.tensorboard.SummaryWriter.add_scalars",
    "utils.tensorboard.SummaryWriter.add_custom_scalars_marginchart":
        "torch.utils.tensorboard.SummaryWriter.add_scalars",
    "cuda.amp.custom_fwd": "a plain function (janus autocasts table ops itself)",
    "erfinv": "torch.nn.init.trunc_normal_ (for truncated normals)",
    "fft": "a numpy round trip outside the training step (janus has no FFT ops)",
    "sparse": "dense tensors",
    "quantization": "float32 or torch.autocast (janus has no quantized tensors)",
    # the LAPACK-backed linalg has inv, solve, det, cholesky, solve_triangular, eigh, svd, qr, pinv, lstsq
    "linalg.eig": "torch.linalg.eigh (symmetric matrices)",
    "linalg.eigvals": "torch.linalg.eigvalsh (symmetric matrices)",
    "linalg.lu_factor": "torch.linalg.solve or torch.linalg.det (janus factors inside them)",
    "cholesky_inverse": "torch.cholesky_solve(torch.eye(n), L)",
}


class Unsupported(Exception):
    """Base of the errors for names janus does not have.  Subclasses are also
    AttributeError / ImportError, so code that probes with hasattr() or
    try/except ImportError behaves as with a missing torch name."""

    def _init(self, module, name, where):
        self.janus_module = module  # the janus module the name was looked up in
        self.missing = name
        self.where = where          # "train.py:12" or ""

    def __str__(self):
        return message(self.janus_module, self.missing, self.where)


class UnsupportedAttributeError(Unsupported, AttributeError):
    def __init__(self, module, name, where=""):
        AttributeError.__init__(self)
        self._init(module, name, where)
        self.name = name


class UnsupportedImportError(Unsupported, ImportError):
    def __init__(self, module, name, where=""):
        ImportError.__init__(self, name=module + "." + name)
        self._init(module, name, where)


class UnsupportedModuleError(Unsupported, ModuleNotFoundError):
    def __init__(self, module, name, where=""):
        ModuleNotFoundError.__init__(self, name=module + "." + name)
        self._init(module, name, where)


def _alias_active():
    return sys.modules.get("torch") is sys.modules.get("janus")


def _spelled(janus_name, torch=None):
    """janus.nn.X as the script spells it: torch.nn.X under the alias (torch
    None: whether the alias is active now)."""
    if torch is None:
        torch = _alias_active()
    if torch and (janus_name == "janus" or janus_name.startswith("janus.")):
        return "torch" + janus_name[len("janus"):]
    return janus_name


def alternative(rel, torch=None):
    """ALTERNATIVES' entry for a name relative to torch ("nn.SyncBatchNorm"),
    or for its closest listed parent ("jit" for "jit.script"); "" if none."""
    parts = rel.split(".")
    for i in range(len(parts), 0, -1):
        alt = ALTERNATIVES.get(".".join(parts[:i]))
        if alt:
            return alt if " " in alt or not alt.startswith("torch.") else _spelled("janus" + alt[len("torch"):], torch)
    return ""


def hint(janus_module, name, torch=None):
    """The nearest supported alternative to janus_module.name ("" if none):
    ALTERNATIVES, else a close spelling in the same module."""
    alt = alternative((janus_module + "." + name).split(".", 1)[1], torch)
    if alt:
        return alt
    owner = sys.modules.get(janus_module)
    if owner is None:  # a class: janus.Tensor, janus.nn.Module
        head, *rest = janus_module.split(".")
        owner = sys.modules.get(head)
        for part in rest:
            owner = getattr(owner, part, None)
    if owner is None or name.startswith("_"):
        return ""
    names = [n for n in (dir(owner) if isinstance(owner, type) else vars(owner)) if not n.startswith("_")]
    # a name inside the other is another function, not a misspelling (asinh / sinh, acos / cos)
    close = [c for c in difflib.get_close_matches(name, names, n=3, cutoff=0.8) if c not in name and name not in c]
    return _spelled(janus_module + "." + close[0], torch) if close else ""


def compose(what, where, alt):
    """The message: what, where, and the alternative."""
    text = f"{what} is not supported by janus"
    if where:
        text += f" ({where})"
    if alt:
        text += ("; use " if alt.startswith(("torch.", "janus.")) else "; instead: ") + alt
    return text


def message(janus_module, name, where="", torch=None):
    """The error for janus_module.name; torch=True spells it as torch.*."""
    return compose(_spelled(janus_module + "." + name, torch), where, hint(janus_module, name, torch))


_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def where(depth=2):
    """file:line of the first frame outside janus and the import machinery."""
    try:
        f = sys._getframe(depth)
    except ValueError:
        return ""
    while f is not None:
        fn = f.f_code.co_filename
        if not (fn.startswith(_HERE) or fn.startswith("<frozen importlib")):
            return f"{os.path.basename(fn)}:{f.f_lineno}"
        f = f.f_back
    return ""


_IMPORT_FROM = dis.opmap["IMPORT_FROM"]


def _in_import_from(frame):
    """Whether frame is executing `from m import name` (its current opcode)."""
    code = frame.f_code.co_code
    i = frame.f_lasti
    return 0 <= i < len(code) and code[i] == _IMPORT_FROM


def guard(module):
    """Give module a __getattr__ that raises the unsupported-name errors (kept
    when the module defines its own).  Dunder names keep Python's plain
    AttributeError: the import system and tools probe those all the time."""
    if "__getattr__" in module.__dict__:
        return module
    modname = module.__name__

    def __getattr__(name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(f"module {modname!r} has no attribute {name!r}")
        caller = sys._getframe(1)
        if _in_import_from(caller):
            raise UnsupportedImportError(modname, name, where(1))
        raise UnsupportedAttributeError(modname, name, where(1))

    module.__getattr__ = __getattr__
    return module


# torch.nn.Module's methods janus's Module lacks: a miss on one of these says
# so (any other missing attribute is the user's own and keeps Python's message)
MODULE_METHODS = frozenset(("register_backward_hook", "xpu", "ipu", "mtia"))


def module_missing_attribute(module, name):
    """For nn.Module.__getattr__: the error for a missing attribute name."""
    if name in MODULE_METHODS:
        return UnsupportedAttributeError("janus.nn.Module", name, where(2))
    return AttributeError(f"'{type(module).__name__}' object has no attribute '{name}'")


def guard_all():
    """guard() every public janus module loaded so far."""
    for name, mod in list(sys.modules.items()):
        if mod is not None and (name == "janus" or name.startswith("janus.")) and \
                not any(part.startswith("_") for part in name.split(".")[1:]):
            guard(mod)
