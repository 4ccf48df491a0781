"""repr()/str() of tensors, reproducing PyTorch's _tensor_str formatting
(same widths, int mode "1.", scientific notation rules, summarization with
"..." past `threshold` elements, line wrapping at `linewidth`, dtype=
suffix for non-default dtypes), without numpy.

The element values are fetched once as nested Python lists (only the edge
items when summarizing), so formatting needs no tensor ops besides views.
"""
import math

from . import _C


class _PrintOptions:
    precision = 4
    threshold = 1000
    edgeitems = 3
    linewidth = 80
    sci_mode = None


PRINT_OPTS = _PrintOptions()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None):
    """Like torch.set_printoptions."""
    if profile is not None:
        if profile == "default":
            PRINT_OPTS.precision, PRINT_OPTS.threshold = 4, 1000
            PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 3, 80
        elif profile == "short":
            PRINT_OPTS.precision, PRINT_OPTS.threshold = 2, 1000
            PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 2, 80
        elif profile == "full":
            PRINT_OPTS.precision, PRINT_OPTS.threshold = 4, math.inf
            PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 3, 80
        else:
            raise ValueError(f"set_printoptions(): unknown profile {profile!r}")
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions():
    return {k: getattr(PRINT_OPTS, k) for k in ("precision", "threshold", "edgeitems", "linewidth",
                                                "sci_mode")}


class _Formatter:
    def __init__(self, values, floating):
        self.floating_dtype = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        prec = PRINT_OPTS.precision
        if not floating:
            for v in values:
                self.max_width = max(self.max_width, len(str(v)))
        else:
            nz = [v for v in values if v != 0 and math.isfinite(v)]
            if not nz:
                return  # like torch: no valid number, keep defaults (sci_mode option not applied)
            absv = [abs(v) for v in nz]
            mn, mx = min(absv), max(absv)
            for v in nz:
                if v != math.ceil(v):
                    self.int_mode = False
                    break
            if self.int_mode:
                if mx / mn > 1000.0 or mx > 1.0e8:
                    self.sci_mode = True
                    for v in nz:
                        self.max_width = max(self.max_width, len(f"{v:.{prec}e}"))
                else:
                    for v in nz:
                        self.max_width = max(self.max_width, len(f"{v:.0f}") + 1)
            else:
                if mx / mn > 1000.0 or mx > 1.0e8 or mn < 1.0e-4:
                    self.sci_mode = True
                    for v in nz:
                        self.max_width = max(self.max_width, len(f"{v:.{prec}e}"))
                else:
                    for v in nz:
                        self.max_width = max(self.max_width, len(f"{v:.{prec}f}"))
        if PRINT_OPTS.sci_mode is not None:
            self.sci_mode = PRINT_OPTS.sci_mode

    def width(self):
        return self.max_width

    def format(self, value):
        prec = PRINT_OPTS.precision
        if self.floating_dtype:
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{prec}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{value:.{prec}f}"
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


def _summarized(t, summarize):
    """Nested lists of the values that get printed; Ellipsis marks elisions."""
    if t.dim() == 0:
        return t.item()
    if not summarize:
        return t.tolist()
    n, e = t.shape[0], PRINT_OPTS.edgeitems
    if t.dim() == 1:
        if n > 2 * e:
            return t[:e].tolist() + [Ellipsis] + t[n - e:].tolist()
        return t.tolist()
    if n > 2 * e:
        idx = list(range(e)) + [None] + list(range(n - e, n))
    else:
        idx = range(n)
    return [Ellipsis if i is None else _summarized(t[i], True) for i in idx]


def _flatten(data, dim, out):
    if dim == 0:
        out.append(data)
        return out
    for x in data:
        if x is Ellipsis:
            continue
        if dim == 1:
            out.append(x)
        else:
            _flatten(x, dim - 1, out)
    return out


def _vector_str(data, indent, fmt):
    element_length = fmt.width() + 2
    per_line = max(1, int(math.floor((PRINT_OPTS.linewidth - indent) / element_length)))
    strs = [" ..." if v is Ellipsis else fmt.format(v) for v in data]
    lines = [", ".join(strs[i:i + per_line]) for i in range(0, len(strs), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(data, dim, indent, fmt):
    if dim == 0:
        return fmt.format(data)
    if dim == 1:
        return _vector_str(data, indent, fmt)
    slices = ["..." if s is Ellipsis else _nested_str(s, dim - 1, indent + 1, fmt) for s in data]
    return "[" + ("," + "\n" * (dim - 1) + " " * (indent + 1)).join(slices) + "]"


def tensor_str(t, indent):
    """The bracketed body, e.g. "[[1., 2.],\\n        [3., 4.]]"."""
    if t.numel() == 0:
        return "[]"
    summarize = t.numel() > PRINT_OPTS.threshold
    if summarize and not PRINT_OPTS.edgeitems:
        return "[...]" if t.dim() else _nested_str(t.item(), 0, indent, _Formatter([t.item()], t.dtype.is_floating_point))
    data = _summarized(t, summarize)
    fmt = _Formatter(_flatten(data, t.dim(), []), t.dtype.is_floating_point)
    return _nested_str(data, t.dim(), indent, fmt)


def _add_suffixes(tensor_str, suffixes, indent):
    strs = [tensor_str]
    last_line_len = len(tensor_str) - tensor_str.rfind("\n") + 1
    for suffix in suffixes:
        n = len(suffix)
        if last_line_len + n + 2 > PRINT_OPTS.linewidth:
            strs.append(",\n" + " " * indent + suffix)
            last_line_len = indent + n
        else:
            strs.append(", " + suffix)
            last_line_len += n + 2
    strs.append(")")
    return "".join(strs)


def tensor_repr(t, default_dtypes, extra=()):
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    if t.is_cuda:  # formatted from a host copy, labelled like torch
        suffixes.append("device='" + str(t.device) + "'")
        t = _C._to_device(t, 0, False)
    if t.numel() == 0:
        if t.dim() != 1:
            suffixes.append("size=" + str(tuple(t.shape)))
        if t.dtype is not default_dtypes[0]:
            suffixes.append("dtype=" + str(t.dtype))
        body = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append("size=" + str(tuple(t.shape)))
        if t.dtype not in default_dtypes:
            suffixes.append("dtype=" + str(t.dtype))
        body = tensor_str(t, indent)
    suffixes.extend(extra)
    return _add_suffixes(prefix + body, suffixes, indent)
