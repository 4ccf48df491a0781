"""`janus check SCRIPT.py`: the torch names a script uses that janus lacks,
found statically before anything runs.

The scan parses (Python's ast; nothing is executed) each script and every
local module it imports -- a module whose file lies beside the script or
under its package folders -- and follows the names bound by torch imports
(`import torch`, `import torch.nn as nn`, `from torch import optim`, `from
torch.nn import functional as F`, ...) through attribute chains
(`nn.TransformerEncoderLayer`, `torch.cuda.amp.GradScaler`).  Each chain is
resolved against the janus package exactly as the torch alias resolves it
at run time (janus/_torch_alias.py): module paths to janus modules, names to
their attributes, class attributes (`torch.Tensor.resize_`) to the
class's.  The first component janus does not have is reported once per
line, as FILE:LINE with the message and the nearest alternative the run
would print (janus/_unsupported.py).  Packages built on PyTorch
(torchvision, ...) are reported where they are imported: they import
PyTorch's internals, which janus does not provide.

Names rebound inside a function (parameters, assignments) are not followed
there.  Methods called on values (`lstm.flatten_parameters()`) cannot be
resolved without running the script and are not checked.

Exit status: 0 when every name resolves, 1 when something is unsupported,
2 when a script cannot be read or parsed.
"""
import ast
import importlib
import importlib.util
import inspect
import os
import sys
import types

from . import _torch_alias, _unsupported

# Packages that import PyTorch's own internals: they cannot run on janus.
TORCH_PACKAGES = {
    "torchvision": "janus.datasets and your own transforms (torchvision imports PyTorch's internals)",
    "torchaudio": "loading audio with another library (torchaudio imports PyTorch's internals)",
    "torchtext": "your own tokenization (torchtext imports PyTorch's internals)",
    "torchdata": "torch.utils.data (torchdata imports PyTorch's internals)",
    "pytorch_lightning": "a plain training loop (Lightning imports PyTorch's internals)",
    "lightning": "a plain training loop (Lightning imports PyTorch's internals)",
    "functorch": "torch.autograd.grad (functorch imports PyTorch's internals)",
}

_MISSING = object()


class Finding:
    __slots__ = ("file", "line", "name", "message")

    def __init__(self, file, line, name, message):
        self.file, self.line, self.name, self.message = file, line, name, message

    def __str__(self):
        return f"{self.file}:{self.line}: {self.message}"


def _module_for(torch_path):
    """The janus module for a torch module path, or None."""
    try:
        return _torch_alias.resolve(torch_path)
    except ImportError:
        return None


def resolve(path):
    """Resolve a dotted torch name ("torch.nn.Linear") against janus.
    Returns None when every component exists, else the message the run
    would raise (without its location) for the first missing component."""
    parts = path.split(".")
    obj = _module_for("torch")
    for i in range(1, len(parts)):
        name = parts[i]
        prefix = ".".join(parts[:i + 1])
        if isinstance(obj, types.ModuleType):
            try:
                val = inspect.getattr_static(obj, name)
            except AttributeError:
                val = _MISSING
            if val is _MISSING and not name.startswith("_"):
                val = _module_for(prefix) or _MISSING
            if val is _MISSING:
                return _unsupported.message(obj.__name__, name, torch=True)
            obj = val
        elif isinstance(obj, type):
            if name.startswith("__") or any(name in vars(c) for c in obj.__mro__) or \
                    name in getattr(obj, "__annotations__", {}):
                return None
            owner = "janus" + ".".join(parts[:i])[len("torch"):]  # janus.Tensor, as the run names it
            return _unsupported.message(owner, name, torch=True)
        else:
            return None  # a function's or value's attributes: not checked statically
    return None


class _Scanner(ast.NodeVisitor):
    """One file: torch bindings per scope, then every use of them."""

    def __init__(self, shown):
        self.shown = shown
        self.findings = []
        self.local_imports = []  # (module name, level, line) of imports that may be local files
        self.scopes = [{}]       # name -> torch path, or None (rebound: not torch)
        self.seen = set()

    # ---- bindings
    def _bind(self, name, path):
        self.scopes[-1][name] = path

    def _lookup(self, name):
        for s in reversed(self.scopes):
            if name in s:
                return s[name]
        return None

    def _check(self, line, path):
        msg = resolve(path)
        if msg is not None and (line, msg) not in self.seen:
            self.seen.add((line, msg))
            self.findings.append(Finding(self.shown, line, path, msg))
        return msg is None

    def visit_Import(self, node):
        for a in node.names:
            top = a.name.split(".")[0]
            if top == "torch":
                if self._check(node.lineno, a.name) or a.asname is None:
                    self._bind(a.asname or "torch", a.name if a.asname else "torch")
            elif top in TORCH_PACKAGES:
                self._report_package(node.lineno, top)
            else:
                self.local_imports.append((a.name, 0, node.lineno))
                self._bind((a.asname or a.name).split(".")[0], None)

    def visit_ImportFrom(self, node):
        mod = node.module or ""
        top = mod.split(".")[0]
        if node.level == 0 and top == "torch":
            if not self._check(node.lineno, mod):
                return
            for a in node.names:
                if a.name == "*":
                    continue
                full = mod + "." + a.name
                if self._check(node.lineno, full):
                    self._bind(a.asname or a.name, full)
        elif node.level == 0 and top in TORCH_PACKAGES:
            self._report_package(node.lineno, top)
        else:
            self.local_imports.append((mod, node.level, node.lineno))
            for a in node.names:
                self.local_imports.append(((mod + "." if mod else "") + a.name, node.level, node.lineno))
                if a.name != "*":
                    self._bind(a.asname or a.name, None)

    def _report_package(self, line, top):
        key = (line, top)
        if key not in self.seen:
            self.seen.add(key)
            self.findings.append(Finding(self.shown, line, top, f"{top} is not supported by janus; instead: "
                                                                f"{TORCH_PACKAGES[top]}"))

    # ---- scopes: a function's parameters and assignments shadow module-level torch names
    def _function(self, node):
        for d in getattr(node, "decorator_list", ()):  # a lambda has none
            self.visit(d)
        args = node.args
        for d in args.defaults + [d for d in args.kw_defaults if d is not None]:
            self.visit(d)
        for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
            if a is not None and a.annotation is not None:
                self.visit(a.annotation)
        if getattr(node, "returns", None) is not None:
            self.visit(node.returns)
        scope = {}
        for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
            if a is not None:
                scope[a.arg] = None
        body = node.body if isinstance(node.body, list) else [node.body]
        for stmt in body:
            for n in ast.walk(stmt):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    scope[n.id] = None
        self.scopes.append(scope)
        for stmt in body:
            self.visit(stmt)
        self.scopes.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_Attribute(self, node):
        chain = []
        cur = node
        while isinstance(cur, ast.Attribute):
            chain.append(cur.attr)
            cur = cur.value
        if isinstance(cur, ast.Name):
            base = self._lookup(cur.id)
            if base is not None:
                self._check(node.lineno, ".".join([base] + chain[::-1]))
                return
        self.generic_visit(node)

    def visit_Name(self, node):
        # a from-import's name used bare (`DataLoader(...)`) was checked at the import
        pass

    def visit_Call(self, node):
        # create_graph=True (a double backward: WGAN-GP's gradient penalty, MAML, Hessian-vector
        # products) raises at run time: flagged on any grad / backward call that passes it
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
        if name in ("grad", "backward") and any(
                k.arg == "create_graph" and isinstance(k.value, ast.Constant) and k.value.value is True
                for k in node.keywords):
            key = (node.lineno, "create_graph")
            if key not in self.seen:
                self.seen.add(key)
                self.findings.append(Finding(self.shown, node.lineno, f"{name}(create_graph=True)",
                                             f"{name}(create_graph=True) is not supported by janus: it has no "
                                             f"double backward (higher-order gradients)"))
        self.generic_visit(node)


def _local_file(name, level, from_file, roots):
    """The .py file a local import names, or None (a library)."""
    parts = name.split(".") if name else []
    bases = []
    if level:
        base = os.path.dirname(from_file)
        for _ in range(level - 1):
            base = os.path.dirname(base)
        bases.append(base)
    else:
        bases.extend(roots)
    for base in bases:
        p = os.path.join(base, *parts) if parts else base
        for cand in (p + ".py", os.path.join(p, "__init__.py")):
            if os.path.isfile(cand):
                return os.path.abspath(cand)
    return None


def scan(scripts):
    """Findings for the scripts and the local modules they import, and the
    files scanned.  Raises OSError / SyntaxError for a script that cannot be
    read or parsed."""
    roots = []
    for s in scripts:
        d = os.path.dirname(os.path.abspath(s))
        if d not in roots:
            roots.append(d)
    queue = [os.path.abspath(s) for s in scripts]
    done, findings = [], []
    cwd = os.getcwd()
    while queue:
        path = queue.pop(0)
        if path in done:
            continue
        done.append(path)
        with open(path, "rb") as f:
            src = f.read()
        tree = ast.parse(src, filename=path)
        shown = os.path.relpath(path, cwd) if not os.path.relpath(path, cwd).startswith("..") else path
        sc = _Scanner(shown)
        sc.visit(tree)
        findings.extend(sc.findings)
        for name, level, _line in sc.local_imports:
            f = _local_file(name, level, path, roots)
            if f and f not in done:
                queue.append(f)
    findings.sort(key=lambda x: (x.file, x.line))
    return findings, done


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: janus check SCRIPT.py [SCRIPT.py...]", file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    try:
        findings, files = scan(argv)
    except (OSError, SyntaxError, ValueError) as e:
        print(f"janus check: {e}", file=sys.stderr)
        return 2
    for f in findings:
        print(f)
    n = len(findings)
    where = f"{len(files)} file{'s' if len(files) != 1 else ''}"
    if n:
        print(f"janus check: {n} unsupported torch name{'s' if n != 1 else ''} in {where}", file=sys.stderr)
        return 1
    print(f"janus check: every torch name in {where} is supported", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
