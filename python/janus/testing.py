"""janus.testing: torch.testing's assert_close and make_tensor.

assert_close(actual, expected) compares tensors, Python numbers (and numpy
numbers / arrays), None and bools, and sequences and mappings of them
recursively, with torch's rules: shapes must match; devices, dtypes and
layouts must too unless check_device / check_dtype / check_layout is False
(then both sides are moved to the cpu / promoted to a common dtype);
strides only with check_stride.  Values are close when |a - e| <= atol +
rtol * |e| (torch.isclose); the default tolerances come from the dtypes
(the loosest of the two):

    float16  rtol 1e-3    atol 1e-5        float32  rtol 1.3e-6  atol 1e-5
    bfloat16 rtol 1.6e-2  atol 1e-5        float64  rtol 1e-7    atol 1e-7
    integers and bool: exact

A failure raises AssertionError with torch's message (mismatched count,
greatest absolute and relative differences and where, and the item path
inside containers); msg replaces it (a string) or rewrites it (a callable).
A tensor compared with a number or list is a TypeError, as in torch.
"""
import cmath
import collections.abc
import dataclasses
import math
import warnings

import janus

__all__ = ["assert_close", "make_tensor", "assert_allclose"]

_DTYPE_PRECISIONS = {janus.float16: (0.001, 1e-5), janus.bfloat16: (0.016, 1e-5),
                     janus.float32: (1.3e-6, 1e-5), janus.float64: (1e-7, 1e-7)}


def _isclose(a, e, *, rtol, atol, equal_nan):
    """torch.isclose as ATen computes it: in the tensors' own dtype (bool as
    float32), tolerances applied to integers too, zero tolerances an exact
    test, an infinite error never close."""
    close = a == e
    if equal_nan and a.dtype.is_floating_point:
        close = close | (janus.isnan(a) & janus.isnan(e))
    if rtol == 0 and atol == 0:
        return close
    if a.dtype is janus.bool:
        a, e = a.float(), e.float()
    allowed = atol + (rtol * e).abs()
    actual = (a - e).abs()
    return close | (janus.isfinite(actual) & (actual <= allowed))


class _ErrorMeta(Exception):
    """A comparison failure, raised inside the comparison and turned into the
    user's exception (with the item path, or the user's msg) at the top."""

    def __init__(self, type, msg, *, id=()):
        super().__init__(msg)
        self.type = type
        self.msg = msg
        self.id = id

    def to_error(self, msg=None):
        if not isinstance(msg, str):
            generated = self.msg
            if self.id:
                generated += f"\n\nThe failure occurred for item {''.join(str([item]) for item in self.id)}"
            msg = msg(generated) if callable(msg) else generated
        return self.type(msg)


class _Unsupported(Exception):
    """This comparison kind does not handle the inputs: try the next one."""


def _default_tolerances(*dtypes):
    rtols, atols = zip(*[_DTYPE_PRECISIONS.get(d, (0.0, 0.0)) for d in dtypes])
    return max(rtols), max(atols)


def _get_tolerances(*dtypes, rtol, atol, id=()):
    # both or neither: atol=0 alone would still let rtol pass values (torch's reasoning)
    if (rtol is None) ^ (atol is None):
        raise _ErrorMeta(ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, "
                                     f"but got no {'rtol' if rtol is None else 'atol'}.", id=id)
    if rtol is not None:
        return rtol, atol
    return _default_tolerances(*dtypes)


def _mismatch_msg(*, default_identifier, extra=None, abs_diff, abs_diff_idx=None, atol, rel_diff,
                  rel_diff_idx=None, rtol):
    equality = rtol == 0 and atol == 0

    def diff_msg(kind, diff, idx, tol):
        if idx is None:
            text = f"{kind.title()} difference: {diff}"
        else:
            text = f"Greatest {kind} difference: {diff} at index {idx}"
        if not equality:
            text += f" (up to {tol} allowed)"
        return text + "\n"

    msg = f"{default_identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += diff_msg("absolute", abs_diff, abs_diff_idx, atol)
    msg += diff_msg("relative", rel_diff, rel_diff_idx, rtol)
    return msg.strip()


def _scalar_mismatch_msg(actual, expected, *, rtol, atol):
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg(default_identifier="Scalars", extra=f"Expected {expected} but got {actual}.",
                         abs_diff=abs_diff, atol=atol, rel_diff=rel_diff, rtol=rtol)


def _tensor_mismatch_msg(actual, expected, matches, *, rtol, atol):
    shape = tuple(matches.shape)

    def unravel(flat):
        index = []
        for size in shape[::-1]:
            flat, mod = divmod(flat, size)
            index.append(mod)
        return tuple(index[::-1])

    n = matches.numel()
    mismatches = n - int(matches.sum())
    extra = f"Mismatched elements: {mismatches} / {n} ({mismatches / n:.1%})"
    a, e, m = actual.flatten(), expected.flatten(), matches.flatten()
    if not actual.dtype.is_floating_point:
        a, e = a.to(janus.int64), e.to(janus.int64)  # no overflow in the difference
    abs_diff = janus.abs(a - e)
    abs_diff[m] = 0  # only mismatches count
    max_abs, max_abs_idx = janus.max(abs_diff, 0)
    rel_diff = abs_diff / janus.abs(e)
    rel_diff[m] = 0
    max_rel, max_rel_idx = janus.max(rel_diff, 0)
    return _mismatch_msg(default_identifier="Tensor-likes", extra=extra, abs_diff=max_abs.item(),
                         abs_diff_idx=unravel(int(max_abs_idx)), atol=atol, rel_diff=max_rel.item(),
                         rel_diff_idx=unravel(int(max_rel_idx)), rtol=rtol)


def _is_numpy(x, kind):
    t = type(x)
    if not t.__module__.startswith("numpy"):
        return False
    import numpy as np
    return isinstance(x, {"bool": np.bool_, "number": np.number, "array": np.ndarray}[kind])


class _Pair:
    def __init__(self, actual, expected, id):
        self.actual, self.expected, self.id = actual, expected, id

    def fail(self, type, msg):
        raise _ErrorMeta(type, msg, id=self.id)


class _NonePair(_Pair):
    def __init__(self, actual, expected, id, **options):
        if not (actual is None or expected is None):
            raise _Unsupported
        super().__init__(actual, expected, id)

    def compare(self):
        if not (self.actual is None and self.expected is None):
            self.fail(AssertionError, f"None mismatch: {self.actual} is not {self.expected}")


class _BooleanPair(_Pair):
    def __init__(self, actual, expected, id, **options):
        def to_bool(x):
            if isinstance(x, bool):
                return x
            if _is_numpy(x, "bool"):
                return x.item()
            raise _Unsupported
        super().__init__(to_bool(actual), to_bool(expected), id)

    def compare(self):
        if self.actual is not self.expected:
            self.fail(AssertionError, f"Booleans mismatch: {self.actual} is not {self.expected}")


class _NumberPair(_Pair):
    # a Python number compares with the tolerances of the dtype it becomes in a tensor (complex:
    # complex128's, which are float64's)
    _TYPE_TO_DTYPE = {int: janus.int64, float: janus.float64, complex: janus.float64}

    def __init__(self, actual, expected, id, rtol=None, atol=None, equal_nan=False, check_dtype=False, **options):
        def to_number(x):
            if _is_numpy(x, "number"):
                return x.item()
            if isinstance(x, (int, float, complex)) and not isinstance(x, bool):
                return x
            raise _Unsupported
        actual, expected = to_number(actual), to_number(expected)
        super().__init__(actual, expected, id)
        self.rtol, self.atol = _get_tolerances(*[self._TYPE_TO_DTYPE[type(x)] for x in (actual, expected)],
                                               rtol=rtol, atol=atol, id=id)
        self.equal_nan, self.check_dtype = equal_nan, check_dtype

    def compare(self):
        if self.check_dtype and type(self.actual) is not type(self.expected):
            self.fail(AssertionError, f"The (d)types do not match: {type(self.actual)} != {type(self.expected)}.")
        if self.actual == self.expected:
            return
        if self.equal_nan and cmath.isnan(self.actual) and cmath.isnan(self.expected):
            return
        abs_diff = abs(self.actual - self.expected)
        if cmath.isfinite(abs_diff) and abs_diff <= self.atol + self.rtol * abs(self.expected):
            return
        self.fail(AssertionError, _scalar_mismatch_msg(self.actual, self.expected, rtol=self.rtol, atol=self.atol))


class _TensorLikePair(_Pair):
    def __init__(self, actual, expected, id, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, **options):
        # tensors with tensors (a subclass such as Parameter is fine), numpy arrays with numpy arrays
        if not (isinstance(actual, type(expected)) or isinstance(expected, type(actual))):
            raise _Unsupported
        if not allow_subclasses and type(actual) is not type(expected):
            raise _Unsupported
        actual, expected = self._to_tensor(actual), self._to_tensor(expected)
        super().__init__(actual, expected, id)
        self.rtol, self.atol = _get_tolerances(actual.dtype, expected.dtype, rtol=rtol, atol=atol, id=id)
        self.equal_nan = equal_nan
        self.check_device, self.check_dtype = check_device, check_dtype
        self.check_layout, self.check_stride = check_layout, check_stride

    @staticmethod
    def _to_tensor(x):
        if isinstance(x, janus.Tensor):
            return x
        if _is_numpy(x, "array"):
            try:
                return janus.as_tensor(x)
            except Exception:
                raise _Unsupported from None
        raise _Unsupported

    def compare(self):
        a, e = self.actual, self.expected

        def mismatch(attr, av, ev):
            self.fail(AssertionError, f"The values for attribute '{attr}' do not match: {av} != {ev}.")

        if a.shape != e.shape:
            mismatch("shape", a.shape, e.shape)
        if a.layout != e.layout:
            if self.check_layout:
                mismatch("layout", a.layout, e.layout)
        elif self.check_stride and a.stride() != e.stride():
            mismatch("stride()", a.stride(), e.stride())
        if self.check_device and a.device != e.device:
            mismatch("device", a.device, e.device)
        if self.check_dtype and a.dtype != e.dtype:
            mismatch("dtype", a.dtype, e.dtype)
        if a.device != e.device:
            a, e = a.cpu(), e.cpu()
        if a.dtype != e.dtype:
            dt = janus.promote_types(a.dtype, e.dtype)
            a, e = a.to(dt), e.to(dt)
        with janus.no_grad():
            matches = _isclose(a, e, rtol=self.rtol, atol=self.atol, equal_nan=self.equal_nan)
            if bool(matches.all()):
                return
            if a.dim() == 0:
                msg = _scalar_mismatch_msg(a.item(), e.item(), rtol=self.rtol, atol=self.atol)
            else:
                msg = _tensor_mismatch_msg(a, e, matches, rtol=self.rtol, atol=self.atol)
        self.fail(AssertionError, msg)


class _ObjectPair(_Pair):
    """A dataclass whose == answers a bool is compared with ==."""

    def __init__(self, actual, expected, id, **options):
        super().__init__(actual, expected, id)

    def compare(self):
        if not self.actual == self.expected:
            self.fail(AssertionError, f"{self.actual} != {self.expected}")


_PAIR_TYPES = (_NonePair, _BooleanPair, _NumberPair, _TensorLikePair)


def _is_sequence(x):
    return isinstance(x, collections.abc.Sequence) and not isinstance(x, str)


def _originate_pairs(actual, expected, id=(), **options):
    """The leaf comparisons of two (nested) inputs, or an _ErrorMeta."""
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise _ErrorMeta(AssertionError, f"The length of the sequences mismatch: {len(actual)} != {len(expected)}",
                             id=id)
        return [p for i in range(len(actual)) for p in _originate_pairs(actual[i], expected[i], (*id, i), **options)]
    if isinstance(actual, collections.abc.Mapping) and isinstance(expected, collections.abc.Mapping):
        ak, ek = set(actual.keys()), set(expected.keys())
        if ak != ek:
            raise _ErrorMeta(AssertionError, "The keys of the mappings do not match:\n"
                                             f"Missing keys in the actual mapping: {sorted(ek - ak)}\n"
                                             f"Additional keys in the actual mapping: {sorted(ak - ek)}", id=id)
        keys = ak
        try:
            keys = sorted(keys)
        except Exception:
            pass
        return [p for k in keys for p in _originate_pairs(actual[k], expected[k], (*id, k), **options)]
    if (not isinstance(actual, (janus.Tensor, type)) and dataclasses.is_dataclass(actual)
            and type(actual) is type(expected)):
        try:
            equal = actual == expected
        except RuntimeError:
            equal = None  # a field holds tensors: compare field by field
        if type(equal) is bool:
            return [_ObjectPair(actual, expected, id)]
        return [p for f in dataclasses.fields(actual) if f.compare
                for p in _originate_pairs(getattr(actual, f.name), getattr(expected, f.name), (*id, f.name),
                                          **options)]
    for pair_type in _PAIR_TYPES:
        try:
            return [pair_type(actual, expected, id=id, **options)]
        except _Unsupported:
            continue
    raise _ErrorMeta(TypeError, f"No comparison pair was able to handle inputs of type {type(actual)} and "
                                f"{type(expected)}.", id=id)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, msg=None):
    """Raise AssertionError unless actual and expected are close (see the
    module docstring for the rules and default tolerances).  rtol and atol
    are given together or not at all (ValueError).  equal_nan: NaN equals
    NaN.  msg: a string replacing the message, or a callable given the
    generated message and returning the one to raise."""
    __tracebackhide__ = True
    try:
        pairs = _originate_pairs(actual, expected, allow_subclasses=allow_subclasses, rtol=rtol, atol=atol,
                                 equal_nan=equal_nan, check_device=check_device, check_dtype=check_dtype,
                                 check_layout=check_layout, check_stride=check_stride)
    except _ErrorMeta as e:
        raise e.to_error() from None  # structural errors keep their own message, as in torch
    for pair in pairs:
        try:
            pair.compare()
        except _ErrorMeta as e:
            raise e.to_error(msg) from None


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """torch.testing.assert_allclose (deprecated there): assert_close with
    its older defaults (NaN equals NaN, dtypes promoted, numbers and lists
    turned into tensors of actual's dtype)."""
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a future "
                  "release. Please use `torch.testing.assert_close()` instead. You can find detailed upgrade "
                  "instructions in https://github.com/pytorch/pytorch/issues/61844.", FutureWarning, stacklevel=2)
    if not isinstance(actual, janus.Tensor):
        actual = janus.tensor(actual)
    if not isinstance(expected, janus.Tensor):
        expected = janus.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        precisions = {janus.float16: (1e-3, 1e-3), janus.float32: (1e-4, 1e-5), janus.float64: (1e-5, 1e-8)}
        rtol, atol = (max(x) for x in zip(*[precisions.get(d, (0.0, 0.0)) for d in (actual.dtype, expected.dtype)]))
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True,
                 check_dtype=False, check_stride=False, msg=msg or None)


_INTEGRAL = (janus.uint8, janus.int32, janus.int64)
_FLOATING = (janus.float16, janus.bfloat16, janus.float32, janus.float64)


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False, noncontiguous=False,
                exclude_zero=False, memory_format=None):
    """A tensor of shape (ints, or one sequence of them) with values drawn
    uniformly from [low, high): by default [-9, 9) for floating dtypes,
    [-9, 10) for signed integers ([0, 10) for uint8) and {False, True} for
    bool; bounds outside the dtype's range are clamped to it (integer
    bounds rounded up).  noncontiguous: every other element of a tensor
    twice as wide; exclude_zero: zeros become 1 (integers, bool) or the
    dtype's tiny; requires_grad only for floating dtypes (ValueError else)."""
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError("The parameters `noncontiguous` and `memory_format` are mutually exclusive, "
                         f"but got noncontiguous={noncontiguous!r} and memory_format={memory_format!r}")
    if requires_grad and dtype not in _FLOATING:
        raise ValueError("`requires_grad=True` is not supported for boolean and integral dtypes, "
                         f"but got dtype={dtype!r}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])  # every other element is taken below

    def modify_low_high(low, high, lowest, highest, default_low, default_high):
        low = default_low if low is None else low
        high = default_high if high is None else high
        if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
            raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
        elif low == high and dtype in _FLOATING:
            warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or complex types is "
                          "deprecated since 2.1 and will be removed in 2.3. Use `torch.full(...)` instead.",
                          FutureWarning, stacklevel=3)
        elif low >= high:
            raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
        elif high < lowest or low >= highest:
            raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                             f"but {dtype} only supports [{lowest}, {highest})")
        low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
        if dtype not in _FLOATING:
            return math.ceil(low), math.ceil(high)  # randint's high is exclusive: ceil both
        return low, high

    if dtype is janus.bool:
        low, high = modify_low_high(low, high, 0, 2, 0, 2)
        result = janus.randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in _INTEGRAL:
        info = janus.iinfo(dtype)
        low, high = modify_low_high(low, high, info.min, info.max + (1 if dtype is not janus.int64 else 0), -9, 10)
        result = janus.randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in _FLOATING:
        info = janus.finfo(dtype)
        low, high = modify_low_high(low, high, info.min, info.max, -9, 9)
        result = janus.empty(shape, device=device, dtype=dtype)
        if high - low >= info.max:  # uniform_ needs high - low to fit the dtype
            result.uniform_(low / 2, high / 2).mul_(2)
        else:
            result.uniform_(low, high)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by torch.testing.make_tensor().")
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if dtype not in _FLOATING else janus.finfo(dtype).tiny
    if dtype in _FLOATING:
        result.requires_grad = requires_grad
    return result
