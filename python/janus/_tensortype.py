"""The legacy typed constructors: janus.FloatTensor, DoubleTensor, HalfTensor,
BFloat16Tensor, LongTensor, IntTensor, ByteTensor, BoolTensor (torch's
FloatTensor & co., one per janus dtype; torch's CharTensor and ShortTensor
name int8 / int16, which janus does not have).

As in torch they are not Tensor subclasses but classes of the metaclass
`tensortype`: calling one makes a plain janus.Tensor of its dtype on the cpu,

    FloatTensor(2, 3)            # uninitialized, shape (2, 3) (also a janus.Size)
    FloatTensor([1, 2])          # data, converted to float32 (a numpy array too)
    LongTensor()                 # empty, shape (0,)

and `isinstance(t, FloatTensor)` is True exactly for a float32 cpu tensor
(tensortype.__instancecheck__).  x.type(FloatTensor) casts to the dtype.
Argument checks and messages follow torch's legacy constructor
(torch/csrc/utils/tensor_new.cpp)."""
import numbers

from . import _C
from . import _dtype

__all__ = ["tensortype", "LEGACY_TYPES"]

# torch's ScalarType in C++ spelling, as the tensor-argument error prints it (c10's TypeMeta names)
_CPP_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
              "int64": "long int", "int32": "int", "uint8": "unsigned char", "bool": "bool"}

_OVERLOADS = (" * (*, torch.device device = None)\n"
              " * (torch.Storage storage)\n"
              " * (Tensor other)\n"
              " * (tuple of ints size, *, torch.device device = None)\n"
              " * (object data, *, torch.device device = None)\n")


def _type_name(x):
    t = type(x)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"


def _arg_type(x):
    """An argument's type as torch's overload error names it (torch.dtype, Tensor, int)."""
    from ._unsupported import _spelled
    if isinstance(x, _C.TensorBase):
        return "Tensor"
    if isinstance(x, (_dtype.dtype, _dtype.device)):
        return _spelled("janus." + type(x).__name__)
    return type(x).__name__


def _invalid_combination(args, kwargs, why=""):
    got = ", ".join([_arg_type(a) for a in args] + [f"{k}={_arg_type(v)}" for k, v in kwargs.items()])
    lines = _OVERLOADS
    if why:  # torch puts its reason under the first overload
        first, rest = _OVERLOADS.split("\n", 1)
        lines = first + "\n      " + why + "\n" + rest
    return TypeError(f"new() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                     + lines)


def _is_int(x):
    # numpy integer scalars count as sizes, as in torch (numbers.Integral covers them); bool does not
    return isinstance(x, numbers.Integral) and not isinstance(x, bool) and type(x).__name__ != "bool_"


def _options(dtype, device):
    return (f"TensorOptions(dtype={_CPP_NAMES[dtype._name]}, device={device}, layout=Strided, "
            "requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt))")


class tensortype(type):
    """The metaclass of the legacy tensor types (torch.tensortype): each class
    stands for one dtype on the cpu."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, _C.TensorBase) and obj.dtype is cls.dtype and obj.device.type == "cpu"

    def __call__(cls, *args, **kwargs):
        from ._factories import as_tensor, empty, tensor
        device = kwargs.pop("device", None)
        if kwargs:
            raise _invalid_combination(args, dict(kwargs, **({} if device is None else {"device": device})),
                                       "didn't match because some of the keywords were incorrect: "
                                       + ", ".join(kwargs))
        if device is not None:
            dv = device if isinstance(device, _dtype.device) else _dtype.device(device)
            if dv.type != "cpu":
                raise RuntimeError(f"legacy constructor expects device type: cpu but device type: {dv.type} "
                                   "was passed")
        dt = cls.dtype
        if not args:
            return empty(0, dtype=dt)
        if len(args) == 1:
            data = args[0]
            if isinstance(data, _dtype.Size):
                return cls._sized(tuple(data))
            if _is_int(data):
                return cls._sized((int(data),))
            if isinstance(data, _C.TensorBase):
                if device is not None:
                    raise RuntimeError("Legacy tensor constructor of the form torch.Tensor(tensor, device=device) "
                                       "is not supported.  Use torch.tensor(...) or torch.as_tensor(...) instead.")
                if data.dtype is not dt or data.device.type != "cpu":
                    raise TypeError(f"expected {_options(dt, 'cpu')} (got {_options(data.dtype, data.device)})")
                return data.view(data.shape)  # torch returns an alias: same memory, a new tensor
            if isinstance(data, str):
                raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
            if type(data).__module__ == "numpy" and type(data).__name__ == "ndarray":
                return as_tensor(data, dtype=dt)  # shares the array's memory when its dtype is cls.dtype
            if isinstance(data, (list, tuple)):
                return tensor(data, dtype=dt)
            if isinstance(data, range):
                return tensor(list(data), dtype=dt)
            raise TypeError(f"new(): data must be a sequence (got {_type_name(data)})")
        if not _is_int(args[0]):
            raise _invalid_combination(args, {} if device is None else {"device": device},
                                       "didn't match because some of the arguments have invalid types: ("
                                       + ", ".join(f"!{_arg_type(a)}!" for a in args) + ")")
        for i, a in enumerate(args):
            if not _is_int(a):
                raise TypeError(f"new(): argument 'size' failed to unpack the object at pos {i + 1} with error "
                                f"\"type must be tuple of ints,but got {type(a).__name__}\"")
        return cls._sized(tuple(int(a) for a in args))

    def _sized(cls, size):
        from ._factories import empty
        for s in size:
            if s < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
        return empty(size, dtype=cls.dtype)

    def __repr__(cls):
        from ._unsupported import _spelled  # <class 'torch.FloatTensor'> under the torch alias
        return f"<class '{_spelled(cls.__module__ + '.' + cls.__name__)}'>"


def _make(name, dtype_name):
    return tensortype(name, (), {"dtype": _dtype._BY_NAME[dtype_name], "is_cuda": False, "is_sparse": False,
                                 "layout": "janus.strided", "__module__": "janus", "__qualname__": name,
                                 "__doc__": f"The legacy constructor of cpu {dtype_name} tensors (torch.{name})."})


# name -> class, for the dtypes this janus build has
LEGACY_TYPES = {name: _make(name, dn) for dn, name in (
    ("float32", "FloatTensor"), ("float64", "DoubleTensor"), ("float16", "HalfTensor"),
    ("bfloat16", "BFloat16Tensor"), ("int64", "LongTensor"), ("int32", "IntTensor"),
    ("uint8", "ByteTensor"), ("bool", "BoolTensor")) if dn in _dtype._BY_NAME}
