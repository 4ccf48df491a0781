"""Tensor creation: janus.tensor / as_tensor / from_numpy, the factories
(zeros, ones, full, empty, arange, linspace, eye, rand, randn, randint,
randperm and the *_like variants), and the default random generator.

Factories run the table's factory ops (full, empty, arange, ...) through
janus.ops; torch's overloads (arange(end) / arange(start, end, step),
randint(high, size) / randint(low, high, size)) and dtype inference (full's
dtype follows its fill value, arange's its arguments) are resolved here.
"""
import builtins as _b
import sys as _sys

from . import _C
from . import _dtype
from ._dtype import check_device, to_dtype
from ._functions import FUNCTIONS, METHODS, both, function, method, sizes_arg
from ._ops import ops, opfn

TensorBase = _C.TensorBase
_by = _dtype._BY_NAME
float32, int64, bool_ = _by["float32"], _by["int64"], _by["bool"]


def _common(fn, device=None, requires_grad=False, layout=None, pin_memory=False):
    check_device(device, fn)
    if layout is not None and str(layout) not in ("strided", "janus.strided", "torch.strided"):
        raise NotImplementedError(f"{fn}(): only the strided layout is supported")


def _out(r, out):
    if out is None:
        return r
    if tuple(out.shape) != tuple(r.shape):
        out._take_header(FUNCTIONS["empty"](r.shape, dtype=out.dtype))  # resized, as torch's out= (no history)
    return out.copy_(r)


# ------------------------------------------------------------ from data
def _is_numpy_array(x):
    t = type(x)
    return t.__module__ == "numpy" and t.__name__ == "ndarray"


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of data (nested lists/tuples of numbers,
    a number, a tensor, a numpy array or any buffer)."""
    _common("tensor", device, requires_grad)
    dtype = to_dtype(dtype)
    if isinstance(data, TensorBase):
        r = FUNCTIONS["clone"](data)
        return r if dtype is None or dtype is r.dtype else r.to(dtype)
    if isinstance(data, (list, tuple, bool, int, float)):
        return _C._tensor_from_data(data, dtype)
    if isinstance(data, (str, bytes, bytearray, complex, dict, set)) or data is None:
        raise TypeError(f"tensor(): could not infer dtype of {type(data).__name__}")
    if hasattr(data, "__array_interface__") or _is_numpy_array(data) or isinstance(data, memoryview):
        try:
            src = _C._from_buffer(data, 2)
        except TypeError:
            if not _is_numpy_array(data):
                raise
            src = _C._from_buffer(_numpy_fallback(data), 2)
        r = FUNCTIONS["clone"](src)
        return r if dtype is None or dtype is r.dtype else r.to(dtype)
    return _C._tensor_from_data(data, dtype)


def _numpy_fallback(a):
    """numpy dtypes without a janus twin (int16, uint32, float128, ...) are
    converted the way torch would reject/convert them: to the nearest kind."""
    import numpy as np
    if a.dtype.kind == "f":
        return np.ascontiguousarray(a, dtype=np.float64)
    if a.dtype.kind in "iu":
        return np.ascontiguousarray(a, dtype=np.int64)
    if a.dtype.kind == "b":
        return np.ascontiguousarray(a, dtype=np.bool_)
    raise TypeError(f"can't convert np.ndarray of type {a.dtype}. The only supported types are: "
                    "float64, float32, float16, int64, int32, uint8, and bool.")


def as_tensor(data, dtype=None, device=None):
    """Like tensor() but shares memory with tensors and numpy arrays when the dtype allows."""
    check_device(device, "as_tensor")
    dtype = to_dtype(dtype)
    if isinstance(data, TensorBase):
        return data if dtype is None or dtype is data.dtype else data.to(dtype)
    if _is_numpy_array(data):
        try:
            t = _C._from_buffer(data, 1)
        except (TypeError, ValueError):
            return tensor(data, dtype=dtype)
        return t if dtype is None or dtype is t.dtype else t.to(dtype)
    return tensor(data, dtype=dtype)


asarray = as_tensor


def from_numpy(ndarray):
    """A tensor sharing memory with a numpy array (writes are visible both ways)."""
    if not _is_numpy_array(ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    try:
        return _C._from_buffer(ndarray, 1)
    except TypeError:
        raise TypeError(f"can't convert np.ndarray of type numpy.{ndarray.dtype}. The only supported types "
                        "are: float64, float32, float16, int64, int32, uint8, and bool.") from None


def frombuffer(buffer, *, dtype, count=-1, offset=0):
    """A 1-d tensor over a bytes-like object's memory (shared)."""
    dtype = to_dtype(dtype)
    fmt = {"float32": "f", "float64": "d", "float16": "e", "int64": "q", "int32": "i", "uint8": "B",
           "bool": "?"}.get(dtype._name)
    if fmt is None:
        raise TypeError(f"frombuffer(): dtype {dtype} is not supported")
    mv = memoryview(buffer).cast("B")[offset:]
    n = len(mv) // dtype.itemsize if count < 0 else count
    if n * dtype.itemsize > len(mv):
        raise ValueError(f"frombuffer(): requested {n} elements from a buffer of {len(mv)} bytes")
    return _C._from_buffer(mv[:n * dtype.itemsize].cast(fmt), 1)


# ------------------------------------------------------------ factories
def _full(fn, size, value, dtype, out=None, **kw):
    _common(fn, **kw)
    size = sizes_arg(size, fn)
    dtype = to_dtype(dtype)
    if dtype is None:
        dtype = float32
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2 ** 53 and \
            not dtype.is_floating_point:
        r = ops.empty(shape=size, dtype=dtype)
        r.copy_(_C._tensor_from_data(value, dtype))  # exact for big int64 values
        return _out(r, out)
    return _out(ops.full(shape=size, value=value, dtype=dtype), out)


# fast paths: the size/dtype parsing of the common call forms runs in C (OpFn)
_zeros_fn = opfn("zeros", "full", "size@shape:V, *, dtype:d=None", fixed={"value": 0.0})
_ones_fn = opfn("ones", "full", "size@shape:V, *, dtype:d=None", fixed={"value": 1.0})
_empty_fn = opfn("empty", "empty", "size@shape:V, *, dtype:d=None")
_rand_fn = opfn("rand", "rand", "size@shape:V, *, dtype:d=None")
_randn_fn = opfn("randn", "randn", "size@shape:V, *, dtype:d=None")


def zeros(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False,
          memory_format=None):
    if out is None and device is None and layout is None:
        return _zeros_fn(*size, dtype=dtype)
    return _full("zeros", size, 0, dtype, out, device=device, requires_grad=requires_grad, layout=layout)


def ones(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False,
         memory_format=None):
    if out is None and device is None and layout is None:
        return _ones_fn(*size, dtype=dtype)
    return _full("ones", size, 1, dtype, out, device=device, requires_grad=requires_grad, layout=layout)


def _fill_dtype(value):
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int64
    if isinstance(value, TensorBase):
        return value.dtype if not value.dtype.is_floating_point else float32
    return float32


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
         pin_memory=False):
    """A tensor of shape size filled with fill_value; the dtype follows the value like torch."""
    if isinstance(fill_value, TensorBase):
        fill_value = fill_value.item()
    if dtype is None:
        dtype = _fill_dtype(fill_value)
    if isinstance(size, int):
        size = (size,)
    return _full("full", (size,), fill_value, dtype, out, device=device, requires_grad=requires_grad,
                 layout=layout)


def empty(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False,
          memory_format=None):
    if memory_format is not None:  # checked as torch does; the tensor is row-major (janus's layout)
        _dtype.check_memory_format(memory_format, "empty")
        if memory_format is _dtype.preserve_format:
            raise RuntimeError("unsupported memory format Preserve")
        _dtype.check_memory_format_rank(memory_format, len(sizes_arg(size, "empty")))
    if out is None and device is None and layout is None:
        return _empty_fn(*size, dtype=dtype)
    _common("empty", device, requires_grad, layout)
    dtype = to_dtype(dtype) or float32
    return _out(ops.empty(shape=sizes_arg(size, "empty"), dtype=dtype), out)


def _like(fn, input, dtype, memory_format=None):
    """The shape and dtype of a *_like result.  memory_format (None:
    preserve_format) is checked as torch does; the result is row-major
    whatever the format (janus's layout, _dtype.memory_format)."""
    if not isinstance(input, TensorBase):
        raise TypeError(f"{fn}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if memory_format is not None:
        _dtype.check_memory_format(memory_format, fn)
        _dtype.check_memory_format_rank(memory_format, input.dim())
    return tuple(input.shape), (to_dtype(dtype) or input.dtype)


def zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    shp, dt = _like("zeros_like", input, dtype, memory_format)
    return _full("zeros_like", (shp,), 0, dt, device=device, requires_grad=requires_grad)


def ones_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    shp, dt = _like("ones_like", input, dtype, memory_format)
    return _full("ones_like", (shp,), 1, dt, device=device, requires_grad=requires_grad)


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None):
    shp, dt = _like("full_like", input, dtype, memory_format)
    if isinstance(fill_value, TensorBase):
        fill_value = fill_value.item()
    return _full("full_like", (shp,), fill_value, dt, device=device, requires_grad=requires_grad)


def empty_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    shp, dt = _like("empty_like", input, dtype, memory_format)
    return empty(shp, dtype=dt, device=device, requires_grad=requires_grad)


def _num(x, fn, what):
    if isinstance(x, TensorBase):
        return x.item()
    if isinstance(x, (int, float)) or hasattr(x, "__float__"):
        return x
    raise TypeError(f"{fn}(): argument '{what}' must be a number, not {type(x).__name__}")


def arange(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
           requires_grad=False, pin_memory=False):
    """arange(end), arange(start, end, step=1): int64 when every argument is an int, else float32."""
    _common("arange", device, requires_grad, layout)
    if end is None:
        start, end = 0, start
    start, end, step = (_num(start, "arange", "start"), _num(end, "arange", "end"),
                        _num(step, "arange", "step"))
    dtype = to_dtype(dtype)
    if dtype is None:
        allint = all(hasattr(v, "__index__") and not isinstance(v, float) for v in (start, end, step))
        dtype = int64 if allint else float32
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    return _out(ops.arange(start=float(start), end=float(end), step=float(step), dtype=dtype), out)


def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    _common("linspace", device, requires_grad, layout)
    if not isinstance(steps, int) or isinstance(steps, bool):
        raise TypeError(f"linspace(): argument 'steps' must be int, not {type(steps).__name__}")
    if steps < 0:
        raise RuntimeError("linspace(): number of steps must be non-negative")
    dtype = to_dtype(dtype) or float32
    return _out(ops.linspace(start=float(_num(start, "linspace", "start")),
                             end=float(_num(end, "linspace", "end")), steps=steps, dtype=dtype), out)


def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
        pin_memory=False):
    _common("eye", device, requires_grad, layout)
    if m is None:
        m = n
    if n < 0 or m < 0:
        raise RuntimeError(f"eye(): n and m must be non-negative, got n={n}, m={m}")
    return _out(ops.eye(n=n, m=m, dtype=to_dtype(dtype) or float32), out)


# ------------------------------------------------------------- randomness
class Generator:
    """A Philox stream: (seed, offset) into janus's counter-based generator.

    default_generator is the process-wide stream (the C runtime's); every
    other Generator keeps its own (seed, offset), and random factories given
    generator=g draw from g's stream only (the draw runs with the runtime's
    state swapped to g's), so e.g. a DataLoader's shuffling never shifts the
    dropout masks or initializations that come from the default stream."""

    _DEFAULT_SEED = 67280421310721

    def __init__(self, device="cpu", _default=False):
        check_device(device, "Generator")
        self.device = _dtype.CPU
        self._default = _default
        self._seed, self._offset = self._DEFAULT_SEED, 0

    def _state(self):
        return _C._rng_state() if self._default else (self._seed, self._offset)

    def _set(self, seed, offset):
        if self._default:
            _C._set_rng_state(seed, offset)
        else:
            self._seed, self._offset = seed, offset

    def manual_seed(self, seed):
        seed = int(seed)
        if not -(1 << 63) <= seed < (1 << 64):
            raise RuntimeError("Overflow when unpacking long: seed must be within the range [-0x8000_0000_0000_0000, "
                               "0xffff_ffff_ffff_ffff]")
        self._set(seed & ((1 << 64) - 1), 0)
        return self

    def initial_seed(self):
        return self._state()[0]

    def seed(self):
        import random
        s = random.SystemRandom().getrandbits(63)
        self._set(s, 0)
        return s

    def get_state(self):
        seed, off = self._state()
        return tensor([seed & 0xFFFFFFFF, seed >> 32, off & 0xFFFFFFFF, off >> 32], dtype=int64)

    def set_state(self, state):
        v = [int(x) for x in state.tolist()]
        if len(v) != 4:
            raise RuntimeError("set_state(): expected a state tensor from get_state()")
        self._set(v[0] | (v[1] << 32), v[2] | (v[3] << 32))
        return self

    def __repr__(self):
        return "<janus.Generator (Philox)>"


class _using:
    """Draw from `gen`'s stream inside the block (no-op for None/default)."""
    __slots__ = ("gen", "prev")

    def __init__(self, gen):
        self.gen = gen if gen is not None and not gen._default else None

    def __enter__(self):
        if self.gen is not None:
            self.prev = _C._rng_state()
            _C._set_rng_state(self.gen._seed, self.gen._offset)

    def __exit__(self, *exc):
        if self.gen is not None:
            self.gen._seed, self.gen._offset = _C._rng_state()
            _C._set_rng_state(*self.prev)
        return False


default_generator = Generator(_default=True)


def _check_gen(generator, fn):
    if generator is not None and not isinstance(generator, Generator):
        raise TypeError(f"{fn}(): generator must be a janus.Generator")


def manual_seed(seed):
    """Seed the default generator; returns it (like torch.manual_seed)."""
    return default_generator.manual_seed(seed)


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state):
    default_generator.set_state(new_state)


def _rand(fn, op, size, dtype, generator, out=None, **kw):
    _common(fn, **kw)
    _check_gen(generator, fn)
    dtype = to_dtype(dtype) or float32
    if not dtype.is_floating_point:
        raise RuntimeError(f"{fn}(): expected a floating point dtype, got {dtype}")
    with _using(generator):
        return _out(getattr(ops, op)(shape=sizes_arg(size, fn), dtype=dtype), out)


def rand(*size, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
         pin_memory=False):
    """Uniform samples in [0, 1)."""
    if out is None and device is None and layout is None and generator is None:
        return _rand_fn(*size, dtype=dtype)
    return _rand("rand", "rand", size, dtype, generator, out, device=device, requires_grad=requires_grad)


def randn(*size, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False):
    """Standard normal samples."""
    if out is None and device is None and layout is None and generator is None:
        return _randn_fn(*size, dtype=dtype)
    return _rand("randn", "randn", size, dtype, generator, out, device=device, requires_grad=requires_grad)


def rand_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    shp, dt = _like("rand_like", input, dtype, memory_format)
    return rand(shp, dtype=dt, device=device, requires_grad=requires_grad)


def randn_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    shp, dt = _like("randn_like", input, dtype, memory_format)
    return randn(shp, dtype=dt, device=device, requires_grad=requires_grad)


def randint(*args, size=None, generator=None, out=None, dtype=None, layout=None, device=None,
            requires_grad=False, pin_memory=False):
    """randint(high, size) or randint(low, high, size): integers in [low, high), int64 by default."""
    _common("randint", device, requires_grad, layout)
    _check_gen(generator, "randint")
    args = list(args)
    if size is None and args and isinstance(args[-1], (tuple, list)):
        size = args.pop()
    if size is None:
        raise TypeError("randint() missing required argument 'size'")
    if len(args) == 1:
        low, high = 0, args[0]
    elif len(args) == 2:
        low, high = args
    else:
        raise TypeError("randint() takes randint(high, size) or randint(low, high, size)")
    low, high = int(_num(low, "randint", "low")), int(_num(high, "randint", "high"))
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    dtype = to_dtype(dtype) or int64
    with _using(generator):
        return _out(ops.randint(low=low, high=high, shape=sizes_arg((size,), "randint"), dtype=dtype), out)


def randint_like(input, low=0, high=None, *, dtype=None, layout=None, device=None, requires_grad=False,
                 memory_format=None):
    if high is None:
        low, high = 0, low
    shp, dt = _like("randint_like", input, dtype, memory_format)
    return randint(low, high, shp, dtype=dt, device=device, requires_grad=requires_grad)


def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False):
    """A random permutation of 0..n-1 (int64 by default)."""
    _common("randperm", device, requires_grad, layout)
    _check_gen(generator, "randperm")
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"randperm(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError(f"n must be non-negative, got{n}")
    with _using(generator):
        return _out(ops.randperm(n=n, dtype=to_dtype(dtype) or int64), out)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None,
           requires_grad=False):
    """normal(mean, std, size) with float mean/std; normal(mean_tensor, std) elementwise."""
    _common("normal", device, requires_grad, layout)
    if isinstance(mean, TensorBase) or isinstance(std, TensorBase):
        m = mean if isinstance(mean, TensorBase) else None
        s = std if isinstance(std, TensorBase) else None
        shp = FUNCTIONS["broadcast_shapes"](*(x.shape for x in (m, s) if x is not None))
        ref = m if m is not None else s
        z = randn(shp, dtype=ref.dtype if ref.dtype.is_floating_point else float32, generator=generator)
        return _out(z * std + mean, out)
    if size is None:
        raise TypeError("normal(): with float mean and std, size is required")
    r = randn(sizes_arg((size,), "normal"), dtype=dtype, generator=generator)
    return _out(r * std + mean if (std != 1.0 or mean != 0.0) else r, out)


# ------------------------------------------------------- tensor methods
@method
def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    return tensor(data, dtype=dtype or self.dtype, device=self.device if device is None and self.is_cuda else device)


@method
def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
    return zeros(sizes_arg(size, "new_zeros"), dtype=dtype or self.dtype, device=self.device if device is None and self.is_cuda else device)


@method
def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
    return ones(sizes_arg(size, "new_ones"), dtype=dtype or self.dtype, device=self.device if device is None and self.is_cuda else device)


@method
def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
    return empty(sizes_arg(size, "new_empty"), dtype=dtype or self.dtype, device=self.device if device is None and self.is_cuda else device)


@method
def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    return full(size, fill_value, dtype=dtype or self.dtype, device=self.device if device is None and self.is_cuda else device)


@method
def random_(self, from_=0, to=None, *, generator=None):
    if to is None:
        from_, to = 0, from_ if from_ else (1 << 24 if self.dtype.is_floating_point else 1 << 62)
    return self.copy_(randint(from_, to, tuple(self.shape), dtype=int64, generator=generator))


def set_num_threads(n):
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"set_num_threads(): expected a positive int, got {n!r}")
    _C.set_num_threads(n)


get_num_threads = _C.get_num_threads


# factories whose table op (full, empty, arange, linspace, eye, rand) runs on the
# device itself; the others (data, the other random streams) build on the
# cpu and copy.  Either way device='cuda' random tensors equal
# the cpu's Philox draws.
_ON_DEVICE = frozenset(("zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like",
                        "arange", "linspace", "eye", "rand", "rand_like"))


def _on_device(f, dev, args, kw):
    if f.__name__ in _ON_DEVICE:
        old = _C._set_factory_device(dev)
        try:
            r = f(*args, **kw)
        finally:
            _C._set_factory_device(old)
    else:
        r = f(*args, **kw)
    return r if _C._device_num(r) == dev else _C._to_device(r, dev, False)


def _with_grad(f):
    """Factories take requires_grad= (set on the result: autograd leaves) and
    device= ('cuda' places the result there; the *_like ones default to
    their input's device, as torch)."""
    like = f.__name__.endswith("_like")

    def w(*args, requires_grad=False, device=None, **kw):
        if device is None and like and args and isinstance(args[0], TensorBase) and args[0].is_cuda:
            device = args[0].device
        dev = None if device is None else check_device(device, f.__name__)
        r = f(*args, **kw) if not dev else _on_device(f, dev, args, kw)
        if requires_grad:
            r.requires_grad_(True)
        return r
    w.__name__ = w.__qualname__ = f.__name__
    w.__doc__ = f.__doc__
    w.__wrapped__ = f
    return w


_mod = _sys.modules[__name__]
for _n in ("tensor", "as_tensor", "asarray", "from_numpy", "frombuffer", "zeros", "ones", "full", "empty",
           "zeros_like", "ones_like", "full_like", "empty_like", "arange", "linspace", "eye", "rand", "randn",
           "rand_like", "randn_like", "randint", "randint_like", "randperm", "normal", "manual_seed", "seed",
           "initial_seed", "get_rng_state", "set_rng_state", "set_num_threads", "get_num_threads"):
    _f = getattr(_mod, _n)
    _c = getattr(_f, "__code__", None)
    if _c and ("requires_grad" in _c.co_varnames[:_c.co_argcount + _c.co_kwonlyargcount] or
               "device" in _c.co_varnames[:_c.co_argcount + _c.co_kwonlyargcount]):
        _f = _with_grad(_f)
        setattr(_mod, _n, _f)
    FUNCTIONS[_n] = _f
del _b, _n, _f, _c, _mod
