"""Element types, devices and sizes: janus.dtype (janus.float32, ...),
janus.device, janus.Size, janus.finfo / janus.iinfo.

The dtype objects are singletons indexed by the runtime's dtype codes
(_C.dtype_names order); _C keeps a reference to them so Tensor.dtype and
every dtype= argument work on the very same objects, as in torch.
"""
import math as _math

from . import _C


class dtype:
    """A tensor element type (janus.float32, janus.int64, ...)."""

    __slots__ = ("_code", "_name", "itemsize", "is_floating_point", "is_signed")

    def __init__(self, code, name, itemsize, is_floating_point, is_signed):
        self._code = code
        self._name = name
        self.itemsize = itemsize
        self.is_floating_point = is_floating_point
        self.is_signed = is_signed

    @property
    def is_complex(self):
        return False

    def __repr__(self):
        return "janus." + self._name

    __str__ = __repr__

    def __reduce__(self):
        return (_dtype_by_name, (self._name,))

    def to_real(self):
        return self

    def to_complex(self):
        raise TypeError("janus has no complex dtypes")


_INFO = {  # name: (itemsize, floating, signed)
    "float32": (4, True, True), "float64": (8, True, True), "float16": (2, True, True),
    "bfloat16": (2, True, True), "int64": (8, False, True), "int32": (4, False, True),
    "uint8": (1, False, False), "bool": (1, False, False),
}

DTYPES = tuple(dtype(i, n, *_INFO[n]) for i, n in enumerate(_C.dtype_names))
_BY_NAME = {d._name: d for d in DTYPES}
# torch's ScalarType names, as its error messages spell a dtype ("expected scalar type Long")
_TORCH_SCALAR = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
                 "int64": "Long", "int32": "Int", "uint8": "Byte", "bool": "Bool"}


def scalar_type_name(d):
    """torch's ScalarType name of a janus dtype (Float, Long, ...); other values as str()."""
    return _TORCH_SCALAR.get(getattr(d, "_name", None), str(d))
_ALIASES = {"float": "float32", "double": "float64", "half": "float16", "long": "int64",
            "int": "int32", "byte": "uint8"}


def _dtype_by_name(name):
    return _BY_NAME[_ALIASES.get(name, name)]


def to_dtype(x, what="dtype"):
    """A dtype argument (janus.dtype, Python float/int/bool, or None) -> dtype or None."""
    if x is None or isinstance(x, dtype):
        return x
    if x is float:
        return _BY_NAME["float64"]
    if x is int:
        return _BY_NAME["int64"]
    if x is bool:
        return _BY_NAME["bool"]
    raise TypeError(f"{what} must be a janus.dtype (e.g. janus.float32), not {type(x).__name__}")


class device:
    """A device: janus.device('cpu'), janus.device('cuda', 0), janus.device('cuda:1')."""

    __slots__ = ("type", "index")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        if not isinstance(type, str):
            raise TypeError(f"device() expected a string or a device, got {type.__class__.__name__}")
        if ":" in type:
            if index is not None:
                raise ValueError(f"device(): type {type!r} already names an index")
            type, _, idx = type.partition(":")
            try:
                index = int(idx)
            except ValueError:
                raise ValueError(f"Invalid device string: '{type}:{idx}'") from None
        if type not in ("cpu", "cuda", "meta"):
            raise ValueError(f"Expected one of cpu, cuda, meta device type at start of device string: {type}")
        if index is not None and (not isinstance(index, int) or index < 0):
            raise ValueError(f"Device index must not be negative, got {index!r}")
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "index", index)

    def __setattr__(self, k, v):
        raise AttributeError("device objects are immutable")

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (self.type, self.index))


CPU = device("cpu")


CPU_NUM, CUDA_NUM = 0, 1  # the C runtime's device numbers (jn_device_type)


def check_device(d, fn="tensor"):
    """The C device number of a device argument: None -> None, 'cpu' -> 0,
    'cuda' / 'cuda:0' / 0 -> 1 when CUDA is usable; otherwise a RuntimeError
    saying why (no GPU, no driver, built without CUDA)."""
    if d is None:
        return None
    if isinstance(d, int) and not isinstance(d, bool):
        d = device("cuda", d)
    dv = d if isinstance(d, device) else device(d)
    if dv.type == "cpu":
        return CPU_NUM
    if dv.type == "cuda" and dv.index in (None, 0, _C._cuda_current_device()):
        from . import cuda
        why = cuda._unavailable_reason()
        if why is None:
            return CUDA_NUM
        raise RuntimeError(f"{fn}(): device '{dv}' is not available ({why}); janus runs on the cpu only here "
                           f"(use device='cpu')")
    if dv.type == "cuda":
        raise RuntimeError(f"{fn}(): device '{dv}' is not available: janus uses one GPU per process, "
                           f"cuda:{_C._cuda_current_device()} (janus.cuda.set_device or LOCAL_RANK choose it)")
    raise RuntimeError(f"{fn}(): device '{dv}' is not supported (use 'cpu' or 'cuda')")


class Size(tuple):
    """The shape of a tensor: a tuple of ints (like torch.Size)."""

    __slots__ = ()

    def __new__(cls, sizes=()):
        sizes = tuple(sizes)
        for s in sizes:
            if not isinstance(s, int) and not hasattr(s, "__index__"):
                raise TypeError(f"janus.Size() takes an iterable of 'int' (item {len(sizes)} is "
                                f"'{type(s).__name__}')")
        return super().__new__(cls, (s.__index__() for s in sizes))

    def __repr__(self):
        return f"janus.Size([{', '.join(str(s) for s in self)}])"

    __str__ = __repr__

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, i):
        r = tuple.__getitem__(self, i)
        return Size(r) if isinstance(i, slice) else r

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))

    def __mul__(self, n):
        return Size(tuple.__mul__(self, n))

    __rmul__ = __mul__

    def __reduce__(self):
        return (Size, (tuple(self),))


class memory_format:
    """A memory layout request, as torch.memory_format: janus.contiguous_format,
    janus.channels_last (NHWC, 4-D), janus.channels_last_3d (NDHWC, 5-D) and
    janus.preserve_format; repr and messages spell them as torch does
    (torch.channels_last).

    Limit: janus stores every tensor it creates row-major (contiguous).  Where
    torch would lay a result out channels-last (x.contiguous(memory_format=
    janus.channels_last), x.to(memory_format=...), clone / empty_like / ...
    (memory_format=...), Module.to(memory_format=...)), janus checks the
    argument as torch does (the type; rank 4 for channels_last, 5 for
    channels_last_3d) and returns a tensor with the same values in row-major
    layout.  Tensor.is_contiguous(memory_format=...) answers from the actual
    strides, as torch does: true for channels_last only where the strides
    really are channels-last (a permuted view of an NHWC tensor, or size-1
    dimensions that make both layouts one)."""

    __slots__ = ("_name",)

    def __new__(cls, *args, **kwargs):
        raise TypeError("cannot create 'torch.memory_format' instances")

    def __repr__(self):
        return "torch." + self._name

    __str__ = __repr__

    def __reduce__(self):
        return (_memory_format_by_name, (self._name,))

    def __setattr__(self, k, v):
        raise AttributeError(f"'torch.memory_format' object has no attribute '{k}'")


def _make_memory_format(name):
    mf = object.__new__(memory_format)
    object.__setattr__(mf, "_name", name)
    return mf


contiguous_format = _make_memory_format("contiguous_format")
channels_last = _make_memory_format("channels_last")
channels_last_3d = _make_memory_format("channels_last_3d")
preserve_format = _make_memory_format("preserve_format")
_MEMORY_FORMATS = {m._name: m for m in (contiguous_format, channels_last, channels_last_3d, preserve_format)}


def _memory_format_by_name(name):
    return _MEMORY_FORMATS[name]


def check_memory_format(mf, fn, allow_none=False):
    """mf if it is a memory format (or None where allow_none), else torch's TypeError."""
    if isinstance(mf, memory_format) or (mf is None and allow_none):
        return mf
    raise TypeError(f"{fn}(): argument 'memory_format' must be torch.memory_format, not {type(mf).__name__}")


def check_memory_format_rank(mf, ndim):
    """torch's check where a result is laid out in mf: channels_last needs 4 dims,
    channels_last_3d 5."""
    if mf is channels_last and ndim != 4:
        raise RuntimeError("required rank 4 tensor to use channels_last format")
    if mf is channels_last_3d and ndim != 5:
        raise RuntimeError("required rank 5 tensor to use channels_last_3d format")


_CL_ORDER = {channels_last: (4, (1, 3, 2, 0)), channels_last_3d: (5, (1, 4, 3, 2, 0))}


def is_contiguous_as(sizes, strides, mf):
    """torch's is_channels_last(_3d)_contiguous for mf channels_last(_3d): the
    strides are exactly the channels-last ones, size-1 dimensions ignored;
    never for another rank."""
    ndim, order = _CL_ORDER[mf]
    if len(sizes) != ndim:
        return False
    expected = 1
    for d in order:
        if sizes[d] != 1:
            if strides[d] != expected:
                return False
            expected *= sizes[d]
    return True


def _strides_like(sizes, strides, order):
    """torch's is_channels_last_strides_2d_s4 / _3d_s5: strides increasing in
    the channels-last order (ambiguous cases count as contiguous)."""
    if strides[1] == 0:
        return False
    lo = 0
    for d in order:
        if sizes[d] == 0 or strides[d] < lo:
            return False
        if d == 0 and lo == strides[1]:
            return False
        lo = strides[d] * (sizes[d] if sizes[d] > 1 else 1)
    return True


def suggest_memory_format(sizes, strides):
    """torch's Tensor.suggest_memory_format(): the layout the strides look like."""
    for mf, (ndim, order) in _CL_ORDER.items():
        if len(sizes) == ndim and _strides_like(sizes, strides, order):
            return mf
    return contiguous_format


class finfo:
    """Machine limits of a floating dtype (like torch.finfo)."""

    _T = {  # bits, eps, max, tiny (smallest normal), resolution
        "float32": (32, 2.0 ** -23, 3.4028234663852886e38, 2.0 ** -126, 1e-6),
        "float64": (64, 2.0 ** -52, 1.7976931348623157e308, 2.0 ** -1022, 1e-15),
        "float16": (16, 2.0 ** -10, 65504.0, 2.0 ** -14, 0.001),
        "bfloat16": (16, 2.0 ** -7, 3.3895313892515355e38, 2.0 ** -126, 0.01),
    }

    def __init__(self, type=None):
        type = _BY_NAME["float32"] if type is None else to_dtype(type)
        if not type.is_floating_point:
            raise TypeError(f"finfo() requires a floating point dtype, got {type}")
        self.dtype = type._name
        self.bits, self.eps, self.max, self.tiny, self.resolution = self._T[type._name]
        self.min = -self.max
        self.smallest_normal = self.tiny

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min:.6e}, max={self.max:.6e}, "
                f"eps={self.eps:.6e}, smallest_normal={self.tiny:.6e}, tiny={self.tiny:.6e}, "
                f"dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype (like torch.iinfo)."""

    def __init__(self, type):
        type = to_dtype(type)
        if type.is_floating_point:
            raise TypeError(f"iinfo() requires an integer dtype, got {type}")
        self.dtype = type._name
        self.bits = type.itemsize * 8
        if type._name == "bool":
            self.min, self.max = 0, 1
        elif type.is_signed:
            self.min, self.max = -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1
        else:
            self.min, self.max = 0, (1 << self.bits) - 1

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


inf = _math.inf
nan = _math.nan
e = _math.e
pi = _math.pi
