"""janus.Tensor: the Python class over _C.TensorBase.

TensorBase (C) carries the data pointer, the metadata getters, operators,
indexing, item/tolist; this class adds the Python-level protocol methods
(repr, iteration, numpy interop, pickling), dtype/device conversions, and
receives every op binding of janus/_ops.py and janus/_functions.py as a
method.  _C._set_tensor_class registers it so every tensor the runtime
returns is a janus.Tensor.
"""
from . import _C
from . import _dtype
from . import _format
from . import _record
from . import _replay
from ._dtype import to_dtype
from ._ops import INTERNAL, METHODS

_by = _dtype._BY_NAME
_cast = INTERNAL["_cast"]
_DEFAULT_DTYPES = (_by["float32"], _by["int64"], _by["bool"])
_TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
               "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor",
               "uint8": "ByteTensor", "bool": "BoolTensor"}


def _rebuild(data, dtype_name, shape):
    from ._factories import tensor
    dt = _dtype._BY_NAME[dtype_name]
    if isinstance(data, (bytes, bytearray)):
        fmt = {"float32": "f", "float64": "d", "float16": "e", "int64": "q", "int32": "i", "uint8": "B",
               "bool": "?"}[dtype_name]
        flat = _C._from_buffer(memoryview(bytearray(data)).cast(fmt), 1)
        return flat.reshape(shape)
    return tensor(data, dtype=dt).reshape(shape)



def _print_begin(t):
    """Printing is a sync point for the recorder and for replay."""
    if _replay.active:
        _replay.print_begin(t)
    if _record.active:
        _record.print_begin(t)


def _print_end():
    if _record.active:
        _record.print_end()
    if _replay.active:
        _replay.print_end()

def _to_device(t, dev, fn):
    """t copied to device number dev.  Device copies are not recorded by
    autograd yet, so copying a tensor that needs a gradient is refused
    rather than silently cutting the graph."""
    if t.requires_grad and _C.is_grad_enabled():
        raise RuntimeError(f"{fn}(): copying a tensor that requires grad to another device is not "
                           f"differentiable in janus yet; move leaves before building the graph "
                           f"(Module.to(device), x.detach().to(device)) or copy under janus.no_grad()")
    return _C._to_device(t, dev, False)


_TO_OVERLOADS = (" * (torch.device device = None, torch.dtype dtype = None, bool non_blocking = False, "
                 "bool copy = False, *, torch.memory_format memory_format = None)\n"
                 " * (torch.dtype dtype, bool non_blocking = False, bool copy = False, *, "
                 "torch.memory_format memory_format = None)\n"
                 " * (Tensor tensor, bool non_blocking = False, bool copy = False, *, "
                 "torch.memory_format memory_format = None)\n")


def _to_memory_format(t, r, mf):
    """to(..., memory_format=mf) with r = t converted as asked otherwise: t itself
    when r is t and its strides already look like mf (torch's
    suggest_memory_format), else a copy -- row-major (janus's only layout) --
    after torch's rank check."""
    if not isinstance(mf, _dtype.memory_format):
        raise TypeError(f"to() received an invalid combination of arguments - got "
                        f"(memory_format={type(mf).__name__}, ), but expected one of:\n" + _TO_OVERLOADS)
    if r is t and _dtype.suggest_memory_format(t.shape, t.stride()) is mf:
        return t
    _dtype.check_memory_format_rank(mf, t.dim())
    return r.clone() if r is t else r


class Tensor(_C.TensorBase):
    """A multi-dimensional array on the Janus runtime (the torch.Tensor API)."""

    __array_priority__ = 1000  # numpy defers binary ops to Tensor

    def __new__(cls, *args, dtype=None, device=None):
        from ._factories import empty, tensor
        if len(args) == 1 and not isinstance(args[0], int) and not isinstance(args[0], _dtype.Size):
            return tensor(args[0], dtype=dtype or _by["float32"], device=device)
        return empty(*args, dtype=dtype, device=device)

    # ----------------------------------------------------------- printing
    def __repr__(self, *, tensor_contents=None):
        if _record.active or _replay.active:  # printing is a sync point
            _print_begin(self)
            try:
                return self._repr_impl()
            finally:
                _print_end()
        return self._repr_impl()

    def _repr_impl(self):
        extra = []
        gf = getattr(self, "grad_fn", None)
        if gf is not None:
            extra.append(f"grad_fn={gf!r}")
        elif getattr(self, "requires_grad", False):
            extra.append("requires_grad=True")
        return _format.tensor_repr(self, _DEFAULT_DTYPES, extra)

    def __str__(self):
        return self.__repr__()

    def __format__(self, spec):
        if self.dim() == 0:
            if _record.active or _replay.active:
                _print_begin(self)
                try:
                    return self.item().__format__(spec)
                finally:
                    _print_end()
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    # ---------------------------------------------------------- protocols
    def __iter__(self):
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        sel = INTERNAL["select"]
        return (sel(self, 0, i) for i in range(self.shape[0]))

    def __reversed__(self):
        if self.dim() == 0:
            return self
        return self.flip(0)

    def __contains__(self, element):
        if isinstance(element, (Tensor, int, float, bool)):
            return bool((self == element).any())
        raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                           f"{type(element).__name__}.")

    def __array__(self, dtype=None, copy=None):
        import numpy as np
        if self.dtype is _by["bfloat16"]:
            raise TypeError("can't convert a bfloat16 tensor to a numpy array (numpy has no bfloat16); "
                            "convert it first, e.g. t.float().numpy()")
        a = np.asarray(memoryview(self)) if self.dim() else np.array(self.item(), dtype=_np_dtype(self))
        if dtype is not None:
            a = a.astype(dtype, copy=False)
        return a.copy() if copy else a

    def numpy(self, *, force=False):
        """A numpy array sharing memory with the tensor (requires numpy)."""
        try:
            import numpy as np
        except ImportError:
            raise RuntimeError("Tensor.numpy() needs numpy, which is not installed "
                               "(pip install numpy); .tolist() works without it") from None
        if self.dtype is _by["bfloat16"]:
            raise TypeError("Got unsupported ScalarType BFloat16: numpy has no bfloat16; "
                            "use t.float().numpy()")
        return np.asarray(memoryview(self))

    def __reduce_ex__(self, proto):
        t = self.contiguous()
        if t.dtype is _by["bfloat16"]:
            return (_rebuild, (t.tolist(), "bfloat16", tuple(self.shape)))
        return (_rebuild, (bytes(memoryview(t).cast("B")) if t.dim() else t.item(), t.dtype._name,
                           tuple(self.shape)))

    def __deepcopy__(self, memo):
        r = self.clone()
        memo[id(self)] = r
        return r

    def __copy__(self):
        return self._alias()

    # --------------------------------------------------------- properties
    @property
    def T(self):
        n = self.dim()
        return self.permute(tuple(range(n - 1, -1, -1))) if n > 1 else self.view(self.shape)  # a view: keeps grad

    @property
    def mT(self):
        if self.dim() < 2:
            raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. Got "
                               f"{self.dim()}-D tensor.")
        return self.transpose(-2, -1)

    H = T
    mH = mT

    @property
    def layout(self):
        return "janus.strided"

    @property
    def is_cpu(self):
        return not self.is_cuda

    @property
    def real(self):
        return self

    # -------------------------------------------------------- conversions
    def to(self, *args, dtype=None, device=None, non_blocking=False, copy=False, memory_format=None):
        """to(dtype), to(device), to(device, dtype), to(other), with copy=False.
        memory_format (None: preserve_format) is torch's: self when nothing
        changes and the strides already look like it, else a copy -- row-major
        whatever the format (janus's layout; _dtype.memory_format)."""
        for a in args:
            if isinstance(a, _dtype.dtype) or a in (float, int, bool):
                if dtype is not None:
                    raise TypeError("to(): dtype given twice")
                dtype = a
            elif isinstance(a, (str, _dtype.device)):
                device = a
            elif isinstance(a, _C.TensorBase):
                dtype, device = a.dtype, a.device
            elif isinstance(a, bool):  # positional non_blocking / copy
                non_blocking = a
            else:
                raise TypeError(f"to() received an invalid combination of arguments: {type(a).__name__}")
        if memory_format is not None and memory_format is not _dtype.preserve_format:
            return _to_memory_format(self, self.to(dtype=dtype, device=device, copy=copy), memory_format)
        dev = _dtype.check_device(device, "to")
        dtype = to_dtype(dtype)
        r = self
        if dev is not None and dev != _C._device_num(self):
            r, copy = _to_device(self, dev, "to"), False
        if dtype is None or dtype is r.dtype:
            return r.clone() if copy else r
        return _cast(r, dtype)

    def _to(self, name, memory_format=None):
        dt = _by[name]
        if memory_format is not None:
            return self.to(dt, memory_format=memory_format)
        return self if self.dtype is dt else _cast(self, dt)

    def float(self, memory_format=None):
        return self._to("float32", memory_format)

    def double(self, memory_format=None):
        return self._to("float64", memory_format)

    def half(self, memory_format=None):
        return self._to("float16", memory_format)

    def bfloat16(self, memory_format=None):
        return self._to("bfloat16", memory_format)

    def long(self, memory_format=None):
        return self._to("int64", memory_format)

    def int(self, memory_format=None):
        return self._to("int32", memory_format)

    def bool(self, memory_format=None):
        return self._to("bool", memory_format)

    def byte(self, memory_format=None):
        return self._to("uint8", memory_format)

    def type_as(self, other):
        return self.to(other.dtype)

    def type(self, dtype=None, non_blocking=False):
        if dtype is None:
            return "janus." + _TYPE_NAMES[self.dtype._name]
        if isinstance(dtype, str):
            for k, v in _TYPE_NAMES.items():
                if dtype.endswith("." + v) or dtype == v:
                    return self.to(_by[k])
            raise ValueError(f"invalid type: {dtype!r}")
        if isinstance(dtype, type) and isinstance(getattr(dtype, "dtype", None), _dtype.dtype):
            dtype = dtype.dtype  # a legacy type: janus.FloatTensor, ... (janus/_tensortype.py)
        return self.to(dtype)

    def cpu(self, memory_format=None):
        if memory_format is not None:
            return self.to("cpu", memory_format=memory_format)
        return self if not self.is_cuda else _to_device(self, _dtype.CPU_NUM, "cpu")

    def cuda(self, device=None, non_blocking=False, memory_format=None):
        if memory_format is not None:
            return self.to(device="cuda" if device is None else device, memory_format=memory_format)
        dev = _dtype.check_device("cuda" if device is None else device, "cuda")
        return self if _C._device_num(self) == dev else _to_device(self, dev, "cuda")

    def is_floating_point(self):
        return self.dtype.is_floating_point

    def is_complex(self):
        return False

    def is_signed(self):
        return self.dtype.is_signed

    def get_device(self):
        return -1

    def share_memory_(self):
        return self

    def pin_memory(self):
        return self

    def is_pinned(self):
        return False

    def is_shared(self):
        return False

    def untyped_storage(self):
        raise NotImplementedError("storages are not exposed; use data_ptr() or numpy()")


def _np_dtype(t):
    import numpy as np
    return {"float32": np.float32, "float64": np.float64, "float16": np.float16, "int64": np.int64,
            "int32": np.int32, "uint8": np.uint8, "bool": np.bool_}[t.dtype._name]


def install_methods():
    """Put every op binding on Tensor (called once the function modules are loaded)."""
    for name, f in METHODS.items():
        if name not in Tensor.__dict__:
            setattr(Tensor, name, f)


_C._set_tensor_class(Tensor)
