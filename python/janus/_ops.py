"""Bindings of the op table to torch-named Python functions and Tensor methods.

Every op of runtime/ops.def is reachable: `janus.ops.<table name>` is a raw
binding generated from the table alone (tensor inputs, then the table's
attributes as keywords), and the torch-facing API (janus.add, Tensor.add,
Tensor.add_, janus.sum(x, dim, keepdim, dtype=), ...) is compiled from
torch-style signatures into _C.OpFn objects, so argument parsing and
dispatch run in C.  What the table says (which ops are elementwise, which
have attributes, their arity) decides the bindings; this file only lists
what the table cannot know: torch's names, aliases and signatures where they
differ from the table's attribute schema.

Signature language (one string per function, parsed once at import):
    "input:T, other:T, *, alpha:f=1"
    param := name['@'attr]':'kind['='default]   ('*' starts keyword-only)
    kinds:  T tensor input (after the first, numbers become 0-d)
            N tensor or number (even first)        t optional tensor (None = absent)
            S sequence of tensors                  i int   b bool   f float
            d dtype or None                        L int or int list
            V *sizes (f(2, 3) or f((2, 3)))         D dims: None = all, int or list
            o / O optional float / int setting the attr and has_<attr>
            E(a|b|None) string enum -> index        c dtype: cast input 0 first
            x accepted and ignored
`@attr` names the table attribute when torch's keyword differs (dim@dims).
"""
import ast as _ast
import collections as _collections

from . import _C
from . import return_types

INFO = {n: _C.op_info(n) for n in _C.op_names()}

MODE_PLAIN, MODE_INTO = 0, 1


def _split_top(s):
    out, depth, cur = [], 0, []
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def compile_sig(op, sig, fname):
    """Signature string -> OpFn parameter tuples."""
    info = INFO[op]
    attr_idx = {a: i for i, (a, _) in enumerate(info["attrs"])}
    params, kwonly, ntensor = [], False, 0
    for p in _split_top(sig):
        if p == "*":
            kwonly = True
            continue
        name, _, rest = p.partition(":")
        kind, eq, default = rest.partition("=")
        name, _, target = name.partition("@")
        target = target or name
        choices = None
        if kind.startswith("E("):
            choices = tuple(None if c == "None" else c for c in kind[2:-1].split("|"))
            kind = "E"
        required = not eq
        dflt = _ast.literal_eval(default) if eq else None
        slot = slot2 = -1
        if kind in "TtSN":
            slot = ntensor
            ntensor += 1
        elif kind not in "cx":
            if target not in attr_idx:
                raise ValueError(f"{fname}: op {op} has no attribute {target!r}")
            slot = attr_idx[target]
            if kind in "oO":
                slot2 = attr_idx["has_" + target]
        params.append((name, kind, slot, slot2, required, kwonly, dflt, choices))
    return params


def _pretty(sig):
    """ "input:T, *, alpha:f=1" -> "input, *, alpha=1" for docstrings."""
    out = []
    for p in _split_top(sig):
        name, _, rest = p.partition(":")
        name = name.partition("@")[0]
        _, eq, default = rest.partition("=")
        out.append(name + ("=" + default if eq else ""))
    return ", ".join(out)


def opfn(name, op, sig, fixed=None, mode=MODE_PLAIN, result=None, out=None):
    info = INFO[op]
    idx = {a: i for i, (a, _) in enumerate(info["attrs"])}
    fixed_l = [(idx[k], v) for k, v in (fixed or {}).items()]
    if out is None:
        out = bool(info["flags"] & _C.JN_F_EW) and mode == MODE_PLAIN
    doc = f"{name}({_pretty(sig)})  [op table: {op}]"
    return _C.OpFn(op, name, compile_sig(op, sig, name), fixed_l, mode, out, result, doc)


# ---------------------------------------------------------------- raw ops
def _table_sig(op):
    """The table's own signature: tensor inputs, then attributes as keywords."""
    info = INFO[op]
    flags = info["flags"]
    parts = []
    if flags & _C.JN_F_VARIADIC and info["nin"] <= 1 and op in ("cat", "stack", "index"):
        parts.append("tensors:S")
    else:
        parts += [f"in{i}:T" for i in range(info["nin"])]
        if flags & _C.JN_F_VARIADIC:
            parts.append("rest:S=()")
    kinds = {"i": "i", "f": "f", "b": "b", "L": "L", "d": "d"}
    attrs = [(a, k) for a, k in info["attrs"] if not (flags & _C.JN_F_RAND and a in ("seed", "offset"))]
    if attrs:
        parts.append("*")
        for a, k in attrs:
            dflt = {"i": "0", "f": "0.0", "b": "False", "L": "()", "d": "None"}[k]
            parts.append(f"{a}:{kinds[k]}={dflt}")
    return ", ".join(parts)


class _RawOps:
    """janus.ops.<name>: every op of the table with the table's signature."""

    def __init__(self):
        for op in INFO:
            setattr(self, op, opfn(op, op, _table_sig(op), out=False))

    def __iter__(self):
        return iter(INFO)


ops = _RawOps()

# ------------------------------------------------------- torch signatures
# table op -> (torch function/method name, signature, options)
# options: fixed={attr: value}, method=bool, function=bool, inplace=bool
_ROUND = "E(None|trunc|floor)"
SPECS = {
    "add": [("add", "input:T, other:T, *, alpha:f=1")],
    "sub": [("sub", "input:T, other:T, *, alpha:f=1"), ("subtract", "input:T, other:T, *, alpha:f=1")],
    "mul": [("mul", "input:T, other:T"), ("multiply", "input:T, other:T")],
    "div": [("div", f"input:T, other:T, *, rounding_mode:{_ROUND}=None"),
            ("divide", f"input:T, other:T, *, rounding_mode:{_ROUND}=None"),
            ("true_divide", "input:T, other:T"),
            ("floor_divide", "input:T, other:T", dict(fixed={"rounding_mode": _C.ROUND_FLOOR}))],
    "pow": [("pow", "input:N, exponent:T")],
    "atan2": [("atan2", "input:T, other:T"), ("arctan2", "input:T, other:T")],
    "eq": [("eq", "input:T, other:T")],
    "ne": [("ne", "input:T, other:T"), ("not_equal", "input:T, other:T")],
    "lt": [("lt", "input:T, other:T"), ("less", "input:T, other:T")],
    "le": [("le", "input:T, other:T"), ("less_equal", "input:T, other:T")],
    "gt": [("gt", "input:T, other:T"), ("greater", "input:T, other:T")],
    "ge": [("ge", "input:T, other:T"), ("greater_equal", "input:T, other:T")],
    "neg": [("neg", "input:T"), ("negative", "input:T")],
    "abs": [("abs", "input:T"), ("absolute", "input:T")],
    "gelu": [("gelu", "input:T, *, approximate:E(none|tanh)='none'")],
    "clamp": [("_clamp_scalar", "input:T, min:o=None, max:o=None", dict(method=False, function=False))],
    "where": [("where", "condition:T, input:N, other:N", dict(method=False, inplace=False))],
    "masked_fill": [("masked_fill", "input:T, mask:T, value:f")],
    "cast": [("_cast", "input:T, dtype:d", dict(method=False, inplace=False))],
    "copy_": [("copy_", "input:T, src:T, non_blocking:x=False", dict(function=False))],
    "fill_": [("fill_", "input:T, value:f")],
    "remainder": [("remainder", "input:N, other:T")],
    "logical_not": [("logical_not", "input:T")],
    # reductions
    "sum": [("sum", "input:T, dim@dims:D=None, keepdim:b=False, *, dtype:d=None")],
    "mean": [("mean", "input:T, dim@dims:D=None, keepdim:b=False, *, dtype:d=None")],
    "prod": [("prod", "input:T, dim@dims:D=None, keepdim:b=False, *, dtype:d=None")],
    "amax": [("amax", "input:T, dim@dims:D=(), keepdim:b=False")],
    "amin": [("amin", "input:T, dim@dims:D=(), keepdim:b=False")],
    "max_dim": [("_max_dim", "input:T, dim:i, keepdim:b=False",
                 dict(method=False, function=False, result=return_types.max))],
    "min_dim": [("_min_dim", "input:T, dim:i, keepdim:b=False",
                 dict(method=False, function=False, result=return_types.min))],
    "argmax": [("argmax", "input:T, dim:O=None, keepdim:b=False")],
    "argmin": [("argmin", "input:T, dim:O=None, keepdim:b=False")],
    "var": [("_var", "input:T, dim@dims:D=None, *, correction:f=1, keepdim:b=False",
             dict(method=False, function=False))],
    "std": [("_std", "input:T, dim@dims:D=None, *, correction:f=1, keepdim:b=False",
             dict(method=False, function=False))],
    "logsumexp": [("logsumexp", "input:T, dim@dims:D, keepdim:b=False")],
    "all": [("all", "input:T, dim@dims:D=None, keepdim:b=False")],
    "any": [("any", "input:T, dim@dims:D=None, keepdim:b=False")],
    "softmax": [("softmax", "input:T, dim:i, dtype:c=None")],
    "log_softmax": [("log_softmax", "input:T, dim:i, dtype:c=None")],
    # linalg
    "mm": [("mm", "input:T, mat2:T")],
    "bmm": [("bmm", "input:T, mat2:T")],
    "matmul": [("matmul", "input:T, other:T")],
    "addmm": [("addmm", "input:T, mat1:T, mat2:T, *, beta:f=1, alpha:f=1")],
    "linear": [("_linear", "input:T, weight:T, bias:t=None", dict(method=False, function=False))],
    "conv2d": [("_conv2d", "input:T, weight:T, bias:t=None, stride:L=1, padding:L=0, dilation:L=1, "
                           "groups:i=1", dict(method=False, function=False))],
    "max_pool2d": [], "avg_pool2d": [], "adaptive_avg_pool2d": [],
    # shape
    "view": [("view", "input:T, shape:V", dict(function=False))],
    "permute": [("permute", "input:T, dims:V")],
    "transpose": [("transpose", "input:T, dim0:i, dim1:i"), ("swapaxes", "input:T, axis0@dim0:i, axis1@dim1:i"),
                  ("swapdims", "input:T, dim0:i, dim1:i")],
    "squeeze": [("squeeze", "input:T, dim@dims:D=None")],
    "unsqueeze": [("unsqueeze", "input:T, dim:i")],
    "expand": [("expand", "input:T, size@shape:V, *, implicit:x=False", dict(function=False))],
    "slice": [],
    "select": [("select", "input:T, dim:i, index:i")],
    "as_strided": [],
    "clone": [("clone", "input:T, *, memory_format:x=None")],
    "slice_scatter": [("_slice_scatter", "input:T, src:T, dim:i, start:i, end:i, step:i",
                       dict(method=False, function=False))],
    "select_scatter": [("select_scatter", "input:T, src:T, dim:i, index:i")],
    "cat": [("cat", "tensors:S, dim:i=0"), ("concat", "tensors:S, dim:i=0"),
            ("concatenate", "tensors:S, axis@dim:i=0")],
    "stack": [("stack", "tensors:S, dim:i=0")],
    "full": [], "empty": [], "arange": [], "linspace": [], "eye": [],
    # index
    "index_select": [("index_select", "input:T, dim:i, index:T")],
    "gather": [("gather", "input:T, dim:i, index:T, *, sparse_grad:x=False")],
    "scatter": [("_scatter", "input:T, dim:i, index:T, src:T", dict(method=False, function=False))],
    "scatter_add": [("_scatter_add", "input:T, dim:i, index:T, src:T", dict(method=False, function=False))],
    "embedding": [],
    "one_hot": [("one_hot", "input:T, num_classes:i=-1")],
    "index": [], "index_put_": [],
    # random
    "rand": [], "randn": [], "randint": [], "randperm": [],
    "uniform_": [("uniform_", "input:T, from@low:f=0, to@high:f=1, *, generator:x=None", dict(function=False))],
    "normal_": [("normal_", "input:T, mean:f=0, std:f=1, *, generator:x=None", dict(function=False))],
    "bernoulli": [("_bernoulli", "input:T, *, generator:x=None", dict(method=False, function=False))],
    "dropout_mask": [],
}

FUNCTIONS = {}   # janus.<name>
METHODS = {}     # Tensor.<name>
INTERNAL = {}    # _ops.<name> helpers used by Python wrappers
BINDINGS = _collections.defaultdict(list)  # table op -> public names (for tests/docs)


def _bind(op, name, sig, fixed=None, method=True, function=True, inplace=None, result=None):
    info = INFO[op]
    f = opfn(name, op, sig, fixed=fixed, result=result)
    INTERNAL[name] = f
    if function:
        FUNCTIONS[name] = f
        BINDINGS[op].append("janus." + name)
    if method and sig.startswith(("input:T", "input:N")):
        METHODS[name] = f
        BINDINGS[op].append("Tensor." + name)
    ew_into = info["flags"] & _C.JN_F_EW and info["nout"] == 1
    if inplace is None:
        inplace = bool(ew_into) and method and op not in ("cast",)
    if inplace and sig.startswith(("input:T", "input:N")):
        if info["flags"] & _C.JN_F_INPLACE:
            return
        METHODS[name + "_"] = opfn(name + "_", op, sig, fixed=fixed, mode=MODE_INTO)
        BINDINGS[op].append("Tensor." + name + "_")


def _default_specs(op):
    """Ops without a SPECS entry: elementwise ops without attributes bind
    under their table name with torch's (input[, other]) signature."""
    info = INFO[op]
    if info["flags"] & _C.JN_F_EW and not info["attrs"] and info["nin"] in (1, 2):
        return [(op, "input:T" if info["nin"] == 1 else "input:T, other:T")]
    return []


for _op in INFO:
    for _spec in SPECS.get(_op) if _op in SPECS else _default_specs(_op):
        _name, _sig, _opts = _spec if len(_spec) == 3 else (_spec[0], _spec[1], {})
        _bind(_op, _name, _sig, **_opts)
    BINDINGS[_op].append("janus.ops." + _op)

for _stale in ("_op", "_spec", "_name", "_sig", "_opts"):
    globals().pop(_stale, None)
