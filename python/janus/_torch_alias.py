"""`import torch` as janus: what `janus run/record/replay` give a child.

The janus command puts a folder holding a one-file `torch` package first on
the child's PYTHONPATH (cli/launch.c writes it; `--no-torch` leaves it out).
That file calls install() below, which makes sys.modules["torch"] the janus
module and puts a finder first on sys.meta_path that answers every
`torch.<path>` import:

- `torch.a.b` is the janus module `janus.a.b` when janus has it (the same
  module object, so `torch.nn.Linear is janus.nn.Linear`; the module keeps
  its own __spec__);
- anything else raises UnsupportedModuleError ("torch.a.b is not supported
  by janus (train.py:3); ..."): the import never falls through to another
  finder, so an installed PyTorch is never loaded, not even in part.

Private paths (`torch._dynamo`, `torch._C`) are never mapped: janus's
private modules are not PyTorch's.  Each served module gets the
unsupported-name __getattr__ of janus/_unsupported.py.  A plain `python
train.py` runs none of this.
"""
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types

from . import _unsupported

__all__ = ["install", "active", "janus_name"]


def janus_name(torch_name):
    """The janus module a torch module path maps to ("torch.nn" -> "janus.nn"),
    or None for a private path."""
    if torch_name == "torch":
        return "janus"
    rel = torch_name[len("torch."):]
    if any(part.startswith("_") for part in rel.split(".")):
        return None
    return "janus." + rel


def resolve(torch_name):
    """The janus module for a torch module path, imported; raises
    UnsupportedModuleError when janus has no such module."""
    jname = janus_name(torch_name)
    spec = None
    if jname is not None:
        try:
            spec = importlib.util.find_spec(jname)
        except ModuleNotFoundError:
            spec = None
    if spec is None:
        parent, _, last = torch_name.rpartition(".")
        raise _unsupported.UnsupportedModuleError("janus" + parent[len("torch"):], last,
                                                  _unsupported.where(1))
    return _unsupported.guard(importlib.import_module(jname))


class _AliasLoader(importlib.abc.Loader):
    """Hands out an existing janus module under a torch name."""

    def __init__(self, module, torch_name):
        self.module = module
        self.spec = module.__spec__
        self.torch_name = torch_name

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        # module_from_spec() set the torch-named spec; the janus module keeps its own
        module.__spec__ = self.spec
        register_children(module, self.torch_name)


class TorchFinder(importlib.abc.MetaPathFinder):
    """Answers every import of torch.*: a janus module or the unsupported error."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("torch.") and fullname != "torch":
            return None
        mod = resolve(fullname)
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(mod, fullname),
                                              is_package=hasattr(mod, "__path__"))


def register_children(module, name):
    """Module-valued attributes of module named as its submodules (janus.cuda.amp,
    made with types.ModuleType rather than a file) become importable as
    name.<child>: Python would otherwise refuse `import torch.cuda.amp`
    because janus.cuda is a module, not a package."""
    for key, val in list(vars(module).items()):
        if isinstance(val, types.ModuleType) and val.__name__ == module.__name__ + "." + key:
            if sys.modules.setdefault(name + "." + key, val) is val:
                register_children(val, name + "." + key)


def active():
    """Whether `torch` is janus in this process."""
    return sys.modules.get("torch") is sys.modules.get("janus")


def install():
    """Make `torch` janus in this process (idempotent)."""
    import janus
    if not any(isinstance(f, TorchFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, TorchFinder())
    sys.modules["torch"] = janus
    register_children(janus, "torch")
    _unsupported.guard_all()
    return janus
