"""janus.save / janus.load: PyTorch's checkpoint format, without PyTorch.

A file janus.save writes is the one torch.save writes, and janus.load reads
what torch.save wrote (state dicts, optimizer state, whole pickled modules
whose classes exist on both sides), so checkpoints move both ways.

The format (torch/serialization.py, `_use_new_zipfile_serialization=True`):
an uncompressed zip archive whose records sit under one folder (the file's
base name without extension, "archive" for a file object):

    <name>/data.pkl               the object, pickled (protocol 2); every
                                  storage is a persistent id
                                  ("storage", torch.<Type>Storage, key, location, numel)
    <name>/.format_version        "1"
    <name>/.storage_alignment     "64": each record's data starts on a
                                  64-byte boundary (an "FB" extra field pads
                                  the local header), so files can be mapped
    <name>/byteorder              "little"
    <name>/data/<key>             a storage's raw bytes, keys "0", "1", ...
    <name>/version                "3\\n"
    <name>/.data/serialization_id 40 digits

A tensor pickles as torch._utils._rebuild_tensor_v2(storage, storage_offset,
size, stride, requires_grad, backward_hooks): the whole storage is saved
once, so views that share one (a tensor and its slices, tied weights) come
back sharing it.  A Parameter is torch._utils._rebuild_parameter(data,
requires_grad, hooks); a tensor with attributes, or of a subclass, goes
through torch._tensor._rebuild_from_type_v2.  janus classes are written
under their PyTorch names (janus.nn.modules.linear.Linear is
torch.nn.modules.linear.Linear) and read back the other way; no PyTorch is
imported, ever: every torch.* name in a file resolves to janus.

load(weights_only=True), the default as in PyTorch >= 2.6 (unless a
pickle_module is given; TORCH_FORCE_WEIGHTS_ONLY_LOAD /
TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD override it as there), unpickles with a
restricted interpreter: only tensors, storages, dtypes, Size, device,
OrderedDict/Counter/set/bytes/complex and plain containers, plus what
add_safe_globals / safe_globals allow, with PyTorch's error text.
weights_only=False runs a full unpickler (arbitrary code: trusted files
only).

Also read: the legacy format (`_use_new_zipfile_serialization=False`: magic
number, protocol and system-info pickles, the object pickle, the storage
keys, then each storage as an 8-byte element count and its bytes; janus.save
writes it on request too) and safetensors files (what janus.save wrote
before; janus.serialization.save_safetensors still writes them).  The
legacy tar format and TorchScript archives are refused with a message.
Tensors load on the CPU unless their saved location or map_location says a
CUDA device.  dtypes janus lacks (int8, int16, complex, quantized) are
refused by name.
"""
import _compat_pickle
import codecs
import importlib
import io
import os
import pickle
import re
import secrets
import struct
import sys
import types
import warnings
import zipfile
from collections import Counter, OrderedDict

from . import _C
from . import _safetensors

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "get_unsafe_globals_in_checkpoint", "save_safetensors", "load_safetensors", "DEFAULT_PROTOCOL"]

DEFAULT_PROTOCOL = 2
MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001
_ALIGN = 64

save_safetensors = _safetensors.save_file
load_safetensors = _safetensors.load_file

# janus dtype <-> the legacy typed-storage class PyTorch pickles
_STORAGE_OF = {"float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
               "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage",
               "uint8": "ByteStorage", "bool": "BoolStorage"}
_DTYPE_OF = {v: k for k, v in _STORAGE_OF.items()}
# PyTorch storages and dtypes janus has no dtype for: refused by name
_FOREIGN_STORAGES = {"CharStorage": "int8", "ShortStorage": "int16", "ComplexFloatStorage": "complex64",
                     "ComplexDoubleStorage": "complex128", "QInt8Storage": "qint8", "QUInt8Storage": "quint8",
                     "QInt32Storage": "qint32", "QUInt4x2Storage": "quint4x2", "QUInt2x4Storage": "quint2x4"}
_FOREIGN_DTYPES = {"int8", "int16", "uint16", "uint32", "uint64", "complex32", "complex64", "complex128",
                   "qint8", "quint8", "qint32", "quint4x2", "quint2x4", "float8_e4m3fn", "float8_e5m2",
                   "float8_e4m3fnuz", "float8_e5m2fnuz", "bits8", "bits16"}
_ITEMSIZE = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "uint8": 1,
             "bool": 1}

UNSAFE_MESSAGE = (
    "In PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` "
    "from `False` to `True`. Re-running `torch.load` with `weights_only` set to `False` will likely succeed, "
    "but it can result in arbitrary code execution. Do it only if you got the file from a "
    "trusted source.")
_DOCS_MESSAGE = (
    "\n\nCheck the documentation of torch.load to learn more about types accepted by default with "
    "weights_only https://pytorch.org/docs/stable/generated/torch.load.html.")


class UnsupportedCheckpointError(pickle.UnpicklingError):
    """The checkpoint holds something janus has no equivalent of (a dtype,
    a quantized or sparse tensor, a torch name janus lacks)."""


def _janus():
    return sys.modules["janus"]


def _dtype_id(name):
    return _C.dtype_names.index(name)


def _check_host():
    if sys.byteorder != "little":
        raise NotImplementedError("janus.save/janus.load need a little-endian machine")


# ------------------------------------------------------ names both ways
# janus objects whose module path is not PyTorch's with janus -> torch
_TORCH_HOMES = {"janus.nn.module": "torch.nn.modules.module",
                "janus.nn.parallel": "torch.nn.parallel.data_parallel"}
# public namespaces where a janus object defined in a private module is found
_PUBLIC = ("janus", "janus.nn", "janus.nn.functional", "janus.nn.init", "janus.optim",
           "janus.optim.lr_scheduler", "janus.utils.data", "janus.autograd", "janus.cuda")


def _torch_name(obj):
    """(module, qualname) PyTorch knows a janus class or function by; None
    for objects that are not janus's."""
    mod = getattr(obj, "__module__", None)
    qual = getattr(obj, "__qualname__", None)
    if not isinstance(mod, str) or not isinstance(qual, str) or not (mod == "janus" or mod.startswith("janus.")):
        return None
    if mod in _TORCH_HOMES:
        return _TORCH_HOMES[mod], qual
    if not any(p.startswith("_") for p in mod.split(".")[1:]):
        return "torch" + mod[len("janus"):], qual
    for ns in _PUBLIC:
        m = sys.modules.get(ns)
        if m is not None and getattr(m, qual, None) is obj:
            return "torch" + ns[len("janus"):], qual
    raise pickle.PicklingError(f"janus.save: can't save {obj!r} ({mod}.{qual}): it has no PyTorch name")


def _fix_import(module, name):
    """Python 2 names in protocol-2 pickles (__builtin__.set), as Python's unpickler maps them."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


def _getattr_path(obj, qual):
    for part in qual.split("."):
        obj = getattr(obj, part)
    return obj


class _StorageType:
    """What torch.FloatStorage & co. unpickle to: the storage's dtype."""

    def __init__(self, name):
        if name in _FOREIGN_STORAGES:
            raise UnsupportedCheckpointError(f"the checkpoint holds a torch.{name} (dtype "
                                             f"{_FOREIGN_STORAGES[name]}), which janus has no dtype for")
        self.name = name
        self.dtype = _DTYPE_OF[name] if name != "UntypedStorage" else "uint8"

    def __repr__(self):
        return f"StorageType(dtype=janus.{self.dtype})"


def _torch_dtype(name):
    if name in _FOREIGN_DTYPES:
        raise UnsupportedCheckpointError(f"the checkpoint holds the dtype torch.{name}, which janus does not have")
    return getattr(_janus(), name)


def _get_layout(name):
    """torch.serialization._get_layout: janus tensors are all strided."""
    if name != "torch.strided":
        raise UnsupportedCheckpointError(f"the checkpoint holds a {name} tensor; janus has strided tensors only")
    return _janus().strided


def _unsupported_rebuild(what):
    def rebuild(*args, **kwargs):
        raise UnsupportedCheckpointError(f"the checkpoint holds {what}, which janus does not support")
    return rebuild


def _special_globals():
    """torch's private names a checkpoint may use, resolved to janus."""
    j = _janus()
    from .nn.parameter import Parameter
    rc = {
        "torch._utils._rebuild_tensor": _rebuild_tensor,
        "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
        "torch._utils._rebuild_tensor_v3": _rebuild_tensor_v3,
        "torch._utils._rebuild_parameter": _rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": _rebuild_parameter_with_state,
        "torch._utils._rebuild_device_tensor_from_cpu_tensor": _rebuild_device_tensor_from_cpu_tensor,
        "torch._utils._rebuild_qtensor": _unsupported_rebuild("a quantized tensor"),
        "torch._utils._rebuild_sparse_tensor": _unsupported_rebuild("a sparse tensor"),
        "torch._utils._rebuild_meta_tensor_no_storage": _unsupported_rebuild("a meta tensor"),
        "torch._utils._rebuild_wrapper_subclass": _unsupported_rebuild("a wrapper tensor subclass"),
        "torch._utils._rebuild_device_tensor_from_numpy": _unsupported_rebuild("a device tensor saved via numpy"),
        "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
        "torch.serialization._get_layout": _get_layout,
        "torch.Tensor": j.Tensor,
        "torch._tensor.Tensor": j.Tensor,
        "torch.Size": j.Size,
        "torch.device": j.device,
        "torch.nn.parameter.Parameter": Parameter,
        "torch.UntypedStorage": _StorageType("UntypedStorage"),
        "torch.storage.UntypedStorage": _StorageType("UntypedStorage"),
    }
    for name in _STORAGE_OF.values():
        rc["torch." + name] = _StorageType(name)
    for name in _ITEMSIZE:
        rc["torch." + name] = getattr(j, name)
    return rc


def _find_torch_global(module, name):
    """A torch.* global of a checkpoint as janus's object (never PyTorch's)."""
    full = f"{module}.{name}"
    special = _special_globals()
    if full in special:
        return special[full]
    if module == "torch" and name in _FOREIGN_STORAGES:
        return _StorageType(name)
    if module == "torch" and name in _FOREIGN_DTYPES:
        return _torch_dtype(name)
    from . import _torch_alias
    jname = _torch_alias.janus_name(module)
    try:
        if jname is None:
            raise ImportError(module)
        return _getattr_path(importlib.import_module(jname), name)
    except (ImportError, AttributeError):
        raise UnsupportedCheckpointError(f"the checkpoint needs {full}, which janus does not provide "
                                         f"(it is not janus.{full[len('torch.'):]})") from None


def _find_global(module, name):
    module, name = _fix_import(module, name)
    if module == "torch" or module.startswith("torch."):
        return _find_torch_global(module, name)
    __import__(module)
    return _getattr_path(sys.modules[module], name)


# ------------------------------------------------------------- saving
class _Global:
    """A global written by name (module, name): PyTorch's private rebuild
    functions and storage classes, which janus cannot import."""

    __slots__ = ("module", "name")

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args, **kwargs):  # pickle's save_reduce wants a callable; only its name is written
        raise TypeError(f"{self.module}.{self.name} is PyTorch's; janus only writes its name")


_G = {}


def _g(module, name):
    g = _G.get((module, name))
    if g is None:
        g = _G[(module, name)] = _Global(module, name)
    return g


class _SavedStorage:
    """One storage of the file: its key, dtype, element count and a tensor on it."""

    __slots__ = ("key", "dtype", "numel", "location", "tensor")

    def __init__(self, key, dtype, numel, location, tensor):
        self.key, self.dtype, self.numel, self.location, self.tensor = key, dtype, numel, location, tensor

    def data(self):
        """The storage's bytes (a device storage is copied to the host)."""
        t = self.tensor
        if t.device.type != "cpu":
            t = _C._storage_view(t, [self.numel], [1], 0).cpu()
        return _C._storage_bytes(t)


class _TorchPickler(pickle._Pickler):
    """Python's pickler writing janus objects as PyTorch writes its own (the
    pure-Python pickler: the C one cannot write a global it cannot import)."""

    def __init__(self, file, protocol, legacy):
        super().__init__(file, protocol)
        self.legacy = legacy
        self.storages = {}      # storage key -> _SavedStorage, in first-seen order
        self.keep = []          # tensors whose storage addresses name them while saving

    def persistent_id(self, obj):
        if type(obj) is not _SavedStorage:
            return None
        pid = ("storage", _g("torch", _STORAGE_OF[obj.dtype]), obj.key, obj.location, obj.numel)
        return pid + (None,) if self.legacy else pid

    def _storage(self, t):
        address, nbytes = _C._storage_info(t)
        dtype = t.dtype._name
        st = self.storages.get(address)
        if st is None:
            self.keep.append(t)
            dev = t.device
            location = "cpu" if dev.type == "cpu" else f"{dev.type}:{dev.index or 0}"
            key = str(address) if self.legacy else str(len(self.storages))
            st = self.storages[address] = _SavedStorage(key, dtype, nbytes // _ITEMSIZE[dtype], location, t)
        elif st.dtype != dtype:
            raise RuntimeError("Cannot save multiple tensors or storages that view the same data as different types")
        return st

    def reducer_override(self, obj):
        j = _janus()
        if isinstance(obj, _C.TensorBase):
            return self._reduce_tensor(obj)
        if isinstance(obj, (_Global, j.dtype)):
            return "global"  # -> save_global below
        if isinstance(obj, j.Size):
            return (_g("torch", "Size"), (tuple(obj),))
        if isinstance(obj, j.device):
            return (_g("torch", "device"), (obj.type,) if obj.index is None else (obj.type, obj.index))
        return NotImplemented

    def _reduce_tensor(self, t):
        from .nn.parameter import Parameter
        j = _janus()
        state = dict(t.__dict__)
        if isinstance(t, Parameter):
            if type(t) is Parameter and not state:
                return (_g("torch._utils", "_rebuild_parameter"), (t._alias(), t.requires_grad, OrderedDict()))
            if type(t) is Parameter:
                return (_g("torch._utils", "_rebuild_parameter_with_state"),
                        (t._alias(), t.requires_grad, OrderedDict(), state))
        args = (self._storage(t), t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.requires_grad,
                OrderedDict())
        if type(t) is j.Tensor and not state:
            return (_g("torch._utils", "_rebuild_tensor_v2"), args)
        return (_g("torch._tensor", "_rebuild_from_type_v2"),
                (_g("torch._utils", "_rebuild_tensor_v2"), type(t), args, state))

    def save_global(self, obj, name=None):
        j = _janus()
        if isinstance(obj, _Global):
            module, name = obj.module, obj.name
        elif isinstance(obj, j.dtype):
            module, name = "torch", obj._name
        else:
            tn = _torch_name(obj)
            if tn is None:
                return super().save_global(obj, name)
            module, name = tn
        if self.proto >= 4:
            self.save(module)
            self.save(name)
            self.write(pickle.STACK_GLOBAL)
        else:
            self.write(pickle.GLOBAL + f"{module}\n{name}\n".encode("utf-8"))
        self.memoize(obj)

    # pickle's table calls the base class's save_global for functions: route them through ours
    dispatch = dict(pickle._Pickler.dispatch)
    dispatch[types.FunctionType] = lambda self, obj: self.save_global(obj)


def _pickle(obj, protocol, legacy=False):
    buf = io.BytesIO()
    p = _TorchPickler(buf, protocol, legacy)
    p.dump(obj)
    return buf.getvalue(), list(p.storages.values())


def _archive_name(f):
    if hasattr(f, "write"):
        return "archive"
    base = os.path.basename(os.fspath(f))
    stem = os.path.splitext(base)[0]
    return stem or "archive"


def _write_zip(fh, prefix, records):
    """Stored (uncompressed) records, each one's data 64-byte aligned."""
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, data in records:
            zi = zipfile.ZipInfo(f"{prefix}/{name}", date_time=(1980, 1, 1, 0, 0, 0))
            zi.compress_type = zipfile.ZIP_STORED
            size = len(data)
            zip64 = size * 1.05 > zipfile.ZIP64_LIMIT  # zipfile then adds a 20-byte zip64 field
            start = zf.fp.tell() + 30 + len(zi.filename.encode("utf-8")) + (20 if zip64 else 0) + 4
            pad = -start % _ALIGN
            zi.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
            with zf.open(zi, "w", force_zip64=zip64) as out:
                out.write(data)


def _zip_records(obj, protocol, disable_byteorder):
    data_pkl, storages = _pickle(obj, protocol)
    records = [("data.pkl", data_pkl), (".format_version", b"1"), (".storage_alignment", str(_ALIGN).encode())]
    if not disable_byteorder:
        records.append(("byteorder", sys.byteorder.encode()))
    for st in storages:
        records.append((f"data/{st.key}", st.data()))
    records.append(("version", b"3\n"))
    records.append((".data/serialization_id", str(secrets.randbits(128)).zfill(40).encode()))
    return records


def _legacy_bytes(obj, protocol):
    out = io.BytesIO()
    sys_info = {"protocol_version": PROTOCOL_VERSION, "little_endian": True,
                "type_sizes": {"short": 2, "int": 4, "long": struct.calcsize("=l")}}
    for head in (MAGIC_NUMBER, PROTOCOL_VERSION, sys_info):
        pickle.dump(head, out, protocol=protocol)
    data_pkl, storages = _pickle(obj, protocol, legacy=True)
    out.write(data_pkl)
    keys = sorted(st.key for st in storages)
    pickle.dump(keys, out, protocol=protocol)
    by_key = {st.key: st for st in storages}
    for k in keys:
        out.write(struct.pack("<q", by_key[k].numel))
        out.write(by_key[k].data())
    return out.getvalue()


def save(obj, f, pickle_module=pickle, pickle_protocol=DEFAULT_PROTOCOL, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Save any picklable object (tensors, state dicts, optimizer state,
    whole modules, numpy arrays, ...) to `f` (a path or a writable binary
    file) in PyTorch's format; torch.load reads it.  A path is written
    atomically (a temporary file in the same folder, fsync, rename)."""
    _check_host()
    if pickle_module is not pickle:
        raise ValueError("janus.save writes with Python's pickle; pickle_module must be left as `pickle`")
    if not isinstance(pickle_protocol, int) or not 2 <= pickle_protocol <= pickle.HIGHEST_PROTOCOL:
        raise ValueError(f"janus.save: pickle_protocol must be 2..{pickle.HIGHEST_PROTOCOL}, got {pickle_protocol!r}")
    if hasattr(f, "write"):
        if _use_new_zipfile_serialization:
            _write_zip(f, _archive_name(f), _zip_records(obj, pickle_protocol, _disable_byteorder_record))
        else:
            f.write(_legacy_bytes(obj, pickle_protocol))
        if hasattr(f, "flush"):
            f.flush()
        return
    path = os.fspath(f)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"janus.save({path!r}): folder {folder!r} does not exist")
    if os.path.isdir(path):
        raise IsADirectoryError(f"janus.save({path!r}): is a directory")
    # pickle first: an object that cannot be saved leaves no file behind
    payload = (_zip_records(obj, pickle_protocol, _disable_byteorder_record) if _use_new_zipfile_serialization
               else _legacy_bytes(obj, pickle_protocol))
    tmp = f"{path}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            if _use_new_zipfile_serialization:
                _write_zip(fh, _archive_name(path), payload)
            else:
                fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# ------------------------------------------------------------- loading
class _LoadedStorage:
    """A storage read from a checkpoint: its bytes, a flat tensor per dtype
    it is read as, and where its tensors go (location / map_location)."""

    def __init__(self, raw, dtype, location, device=None):
        self.raw = raw
        self.dtype = dtype
        self.location = location
        self.target = device      # None: by location
        self.flats = {}

    def flat(self, dtype=None):
        dtype = dtype or self.dtype
        t = self.flats.get(dtype)
        if t is None:
            raw = self.raw
            if len(raw) % _ITEMSIZE[dtype]:
                raise pickle.UnpicklingError(f"a storage of {len(raw)} bytes read as {dtype}")
            t = _C._from_storage_bytes(raw, _dtype_id(dtype))
            if self.target is not None and self.target != "cpu":
                t = t.to(self.target)
            self.flats[dtype] = t
        return t

    # map_location callables receive this and may move it
    @property
    def device(self):
        return _janus().device(self.target or "cpu")

    def _moved(self, device):
        s = _LoadedStorage(self.raw, self.dtype, self.location, str(_janus().device(device)))
        return s

    def cpu(self):
        return self._moved("cpu")

    def cuda(self, device=None, non_blocking=False):
        return self._moved("cuda" if device is None else (f"cuda:{device}" if isinstance(device, int) else device))

    def to(self, device=None, non_blocking=False, **kwargs):
        return self._moved(device)

    def nbytes(self):
        return len(self.raw)

    def size(self):
        return len(self.raw) // _ITEMSIZE[self.dtype]

    __len__ = size


def _tensor_of(storage, storage_offset, size, stride, dtype=None):
    if not isinstance(storage, _LoadedStorage):
        raise pickle.UnpicklingError(f"a tensor's storage is a {type(storage).__name__}, not a storage")
    return _C._storage_view(storage.flat(dtype), tuple(size), tuple(stride), storage_offset)


def _rebuild_tensor(storage, storage_offset, size, stride):
    return _tensor_of(storage, storage_offset, size, stride)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None):
    t = _tensor_of(storage, storage_offset, size, stride)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype,
                       metadata=None):
    t = _tensor_of(storage, storage_offset, size, stride, dtype._name)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _set_obj_state(obj, state):
    if isinstance(state, tuple):
        if len(state) != 2:
            raise pickle.UnpicklingError(f"invalid serialized state: {state!r}")
        dict_state, slots_state = state
    else:
        dict_state, slots_state = state, None
    for k, v in (dict_state or {}).items():
        setattr(obj, k, v)
    for k, v in (slots_state or {}).items():
        setattr(obj, k, v)
    return obj


def _rebuild_parameter(data, requires_grad, backward_hooks):
    from .nn.parameter import Parameter
    return Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    return _set_obj_state(_rebuild_parameter(data, requires_grad, backward_hooks), state)


def _rebuild_from_type_v2(func, new_type, args, state):
    ret = func(*args)
    if type(ret) is not new_type:
        if not (isinstance(new_type, type) and issubclass(new_type, _janus().Tensor)):
            raise pickle.UnpicklingError(f"a tensor of type {new_type!r}, which is not a Tensor subclass")
        ret = _C._make_subclass(new_type, ret, ret.requires_grad)
    setstate = getattr(type(ret), "__setstate__", None)
    if setstate is not None and setstate is not getattr(_janus().Tensor, "__setstate__", None):
        ret.__setstate__(state)
    else:
        _set_obj_state(ret, state)
    return ret


def _rebuild_device_tensor_from_cpu_tensor(data, dtype, device, requires_grad):
    t = data.to(dtype=dtype, device=device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _device_target(location):
    """A storage's device: "cpu", or a CUDA device janus has (PyTorch's messages otherwise)."""
    loc = str(location)
    if loc == "cpu":
        return "cpu"
    m = re.fullmatch(r"cuda(?::(\d+))?", loc)
    if m is None:
        raise RuntimeError(f"don't know how to restore data location of storage at location {loc!r} (janus has "
                           "cpu and cuda devices); pass map_location='cpu'")
    cuda = _janus().cuda
    if not cuda.is_available():
        raise RuntimeError("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is "
                           "False. If you are running on a CPU-only machine, please use torch.load with "
                           "map_location=torch.device('cpu') to map your storages to the CPU.")
    idx = int(m.group(1) or 0)
    if idx >= cuda.device_count():
        raise RuntimeError(f"Attempting to deserialize object on CUDA device {idx} but torch.cuda.device_count() "
                           f"is {cuda.device_count()}. Please use torch.load with map_location to map your "
                           "storages to an existing device.")
    return f"cuda:{idx}"


def _restorer(map_location):
    """restore(storage, location) -> the storage, placed as map_location says."""
    j = _janus()

    def place(storage, location):
        storage.target = _device_target(location)
        return storage

    if map_location is None:
        return place
    if isinstance(map_location, dict):
        return lambda s, loc: place(s, map_location.get(loc, loc))
    if isinstance(map_location, bytes):
        map_location = map_location.decode()
    if isinstance(map_location, (str, j.device)):
        return lambda s, loc: place(s, str(map_location))
    if callable(map_location):
        def call(s, loc):
            r = map_location(s, loc)
            if r is None:
                return place(s, loc)
            if not isinstance(r, _LoadedStorage):
                raise TypeError(f"map_location returned a {type(r).__name__}; it must return the storage it was "
                                "given (or storage.cpu() / storage.cuda()) or None")
            if r.target is None:
                r.target = "cpu"
            return r
        return call
    raise TypeError(f"map_location must be None, a str, a janus.device, a dict or a callable, not "
                    f"{type(map_location).__name__}")


def _byteswap(raw, itemsize):
    if itemsize == 1:
        return raw
    out = bytearray(len(raw))
    for i in range(itemsize):
        out[i::itemsize] = raw[itemsize - 1 - i::itemsize]
    return bytes(out)


# --- the weights-only unpickler: PyTorch's rules (torch/_weights_only_unpickler.py)
_BLOCKED_MODULES = ("sys", "os", "posix", "nt")


def _safe_global_key(g):
    """The names a safe global answers to: its own and, for janus objects, PyTorch's."""
    if isinstance(g, tuple):
        if len(g) != 2:
            raise ValueError(f"Expected tuple of length 2 (global, str of callable full path), but got tuple of "
                             f"length: {len(g)}")
        if type(g[1]) is not str:
            raise TypeError(f"Expected second item in tuple to be str of callable full path, but got: {type(g[1])}")
        return [g[1]], g[0]
    keys = [f"{g.__module__}.{g.__qualname__}"]
    try:
        tn = _torch_name(g)
    except pickle.PicklingError:
        tn = None
    if tn is not None:
        keys.append(f"{tn[0]}.{tn[1]}")
    return keys, g


def _user_allowed():
    rc = {}
    for g in _SAFE_GLOBALS:
        keys, obj = _safe_global_key(g)
        for k in keys:
            rc[k] = obj
    return rc


def _default_allowed():
    rc = {"collections.OrderedDict": OrderedDict, "collections.Counter": Counter,
          "_codecs.encode": codecs.encode, "builtins.bytearray": bytearray, "builtins.set": set,
          "builtins.complex": complex}
    for k, v in _special_globals().items():
        rc[k] = v
    return rc


class _WeightsOnlyUnpickler:
    """A pickle interpreter that builds only what the allow-lists name
    (PyTorch's weights-only unpickler, with the binary opcodes of protocols
    2 to 5)."""

    def __init__(self, file, persistent_load, encoding="utf-8"):
        self.read = file.read
        self.readline = file.readline
        self.persistent_load = persistent_load
        self.encoding = encoding
        self.memo = {}
        self.allowed = _default_allowed()
        self.user = _user_allowed()
        self.callables = {id(v) for v in self.allowed.values()} | {id(v) for v in self.user.values()}

    def _global(self, module, name):
        module, name = _fix_import(module, name)
        full = f"{module}.{name}"
        if module in _BLOCKED_MODULES:
            raise pickle.UnpicklingError(
                f"Trying to load unsupported GLOBAL {full} whose module {module} is blocked.")
        if full in self.allowed:
            return self.allowed[full]
        if full in self.user:
            return self.user[full]
        if module == "torch" and (name in _FOREIGN_DTYPES or name in _FOREIGN_STORAGES):
            return _find_torch_global(module, name)  # refused by dtype name
        shown = full[len("builtins."):] if full.startswith("builtins.") else full
        raise pickle.UnpicklingError(
            f"Unsupported global: GLOBAL {shown} was not an allowed global by default. "
            f"Please use `torch.serialization.add_safe_globals([{shown}])` or the "
            f"`torch.serialization.safe_globals([{shown}])` context manager to allowlist this global "
            "if you trust this class/function.")

    def _ok(self, obj):
        return id(obj) in self.callables

    def pop_mark(self):
        items = self.stack
        self.stack = self.metastack.pop()
        return items

    def _check_set_item_target(self, opcode):
        if type(self.stack[-1]) not in (dict, OrderedDict, Counter):
            raise pickle.UnpicklingError(f"Can only {opcode} for dict, collections.OrderedDict, "
                                         f"collections.Counter, but got {type(self.stack[-1])}")

    def _text(self, data):
        return str(data, "utf-8", "surrogatepass")

    def load(self):
        from .nn.parameter import Parameter
        j = _janus()
        read, readline = self.read, self.readline
        self.metastack, self.stack = [], []
        P = pickle
        while True:
            key = read(1)
            if not key:
                raise EOFError
            op = key[0]
            st = self.stack
            if op == P.GLOBAL[0]:
                module = readline()[:-1].decode("utf-8")
                name = readline()[:-1].decode("utf-8")
                st.append(self._global(module, name))
            elif op == P.STACK_GLOBAL[0]:
                name, module = st.pop(), st.pop()
                if type(name) is not str or type(module) is not str:
                    raise pickle.UnpicklingError("STACK_GLOBAL requires str")
                st.append(self._global(module, name))
            elif op == P.NEWOBJ[0] or op == P.NEWOBJ_EX[0]:
                kwargs = st.pop() if op == P.NEWOBJ_EX[0] else {}
                args = st.pop()
                cls = st.pop()
                if cls is Parameter:
                    st.append(Parameter(*args, **kwargs))
                elif self._ok(cls) and isinstance(cls, type):
                    st.append(cls.__new__(cls, *args, **kwargs))
                else:
                    raise pickle.UnpicklingError("Can only create new object for nn.Parameter or classes allowlisted "
                                                 f"via `add_safe_globals` but got {cls}")
            elif op == P.REDUCE[0]:
                args = st.pop()
                func = st[-1]
                if not self._ok(func):
                    msg = f"Trying to call reduce for unrecognized function {func}"
                    if hasattr(func, "__self__"):
                        msg += f" which belongs to {func.__self__}"
                    raise pickle.UnpicklingError(msg)
                st[-1] = func(*args)
            elif op == P.BUILD[0]:
                state = st.pop()
                inst = st[-1]
                if type(inst) is OrderedDict:
                    inst.__dict__.update(state)
                elif type(inst) in (j.Tensor, Parameter) or self._ok(type(inst)):
                    if hasattr(inst, "__setstate__") and not isinstance(inst, _C.TensorBase):
                        inst.__setstate__(state)
                    else:
                        _set_obj_state(inst, state)
                else:
                    raise pickle.UnpicklingError("Can only build Tensor, Parameter, OrderedDict or types allowlisted "
                                                 f"via `add_safe_globals`, but got {type(inst)}")
            elif op == P.APPEND[0]:
                item = st.pop()
                if type(st[-1]) is not list:
                    raise pickle.UnpicklingError(f"Can only append to lists, but got {type(st[-1])}")
                st[-1].append(item)
            elif op == P.APPENDS[0]:
                items = self.pop_mark()
                if type(self.stack[-1]) is not list:
                    raise pickle.UnpicklingError(f"Can only extend lists, but got {type(self.stack[-1])}")
                self.stack[-1].extend(items)
            elif op == P.SETITEM[0]:
                v, k = st.pop(), st.pop()
                self._check_set_item_target("SETITEM")
                st[-1][k] = v
            elif op == P.SETITEMS[0]:
                items = self.pop_mark()
                self._check_set_item_target("SETITEMS")
                for i in range(0, len(items), 2):
                    self.stack[-1][items[i]] = items[i + 1]
            elif op == P.ADDITEMS[0]:
                items = self.pop_mark()
                if type(self.stack[-1]) is not set:
                    raise pickle.UnpicklingError(f"Can only add to sets, but got {type(self.stack[-1])}")
                self.stack[-1].update(items)
            elif op == P.FROZENSET[0]:
                items = self.pop_mark()
                self.stack.append(frozenset(items))
            elif op == P.MARK[0]:
                self.metastack.append(self.stack)
                self.stack = []
            elif op == P.POP[0]:
                if st:
                    st.pop()
                else:
                    self.pop_mark()
            elif op == P.POP_MARK[0]:
                self.pop_mark()
            elif op == P.DUP[0]:
                st.append(st[-1])
            elif op == P.TUPLE[0]:
                items = self.pop_mark()
                self.stack.append(tuple(items))
            elif op == P.TUPLE1[0]:
                st[-1] = (st[-1],)
            elif op == P.TUPLE2[0]:
                st[-2:] = [(st[-2], st[-1])]
            elif op == P.TUPLE3[0]:
                st[-3:] = [(st[-3], st[-2], st[-1])]
            elif op == P.NONE[0]:
                st.append(None)
            elif op == P.NEWFALSE[0]:
                st.append(False)
            elif op == P.NEWTRUE[0]:
                st.append(True)
            elif op == P.EMPTY_TUPLE[0]:
                st.append(())
            elif op == P.EMPTY_LIST[0]:
                st.append([])
            elif op == P.EMPTY_DICT[0]:
                st.append({})
            elif op == P.EMPTY_SET[0]:
                st.append(set())
            elif op == P.BININT[0]:
                st.append(struct.unpack("<i", read(4))[0])
            elif op == P.BININT1[0]:
                st.append(read(1)[0])
            elif op == P.BININT2[0]:
                st.append(struct.unpack("<H", read(2))[0])
            elif op == P.LONG1[0]:
                n = read(1)[0]
                st.append(pickle.decode_long(read(n)))
            elif op == P.LONG4[0]:
                n = struct.unpack("<i", read(4))[0]
                if n < 0:
                    raise pickle.UnpicklingError("LONG pickle has negative byte count")
                st.append(pickle.decode_long(read(n)))
            elif op == P.BINFLOAT[0]:
                st.append(struct.unpack(">d", read(8))[0])
            elif op == P.BINUNICODE[0]:
                n = struct.unpack("<I", read(4))[0]
                st.append(self._text(read(n)))
            elif op == P.SHORT_BINUNICODE[0]:
                st.append(self._text(read(read(1)[0])))
            elif op == P.BINUNICODE8[0]:
                n = struct.unpack("<Q", read(8))[0]
                st.append(self._text(read(n)))
            elif op in (P.SHORT_BINSTRING[0], P.BINSTRING[0]):
                n = read(1)[0] if op == P.SHORT_BINSTRING[0] else struct.unpack("<i", read(4))[0]
                data = read(n)
                st.append(data.decode(self.encoding, "strict") if self.encoding != "bytes" else data)
            elif op == P.SHORT_BINBYTES[0]:
                st.append(read(read(1)[0]))
            elif op == P.BINBYTES[0]:
                st.append(read(struct.unpack("<I", read(4))[0]))
            elif op == P.BINBYTES8[0]:
                st.append(read(struct.unpack("<Q", read(8))[0]))
            elif op == P.BYTEARRAY8[0]:
                st.append(bytearray(read(struct.unpack("<Q", read(8))[0])))
            elif op == P.BINPERSID[0]:
                pid = st.pop()
                if type(pid) is not tuple and type(pid) is not int:
                    raise pickle.UnpicklingError(f"persistent_load id must be tuple or int, but got {type(pid)}")
                if type(pid) is tuple and pid and _ascii(pid[0]) != "storage":
                    raise pickle.UnpicklingError(f"Only persistent_load of storage is allowed, but got {type(pid[0])}")
                st.append(self.persistent_load(pid))
            elif op in (P.BINGET[0], P.LONG_BINGET[0]):
                idx = read(1)[0] if op == P.BINGET[0] else struct.unpack("<I", read(4))[0]
                if idx not in self.memo:
                    raise pickle.UnpicklingError(f"Memo value not found at index {idx}")
                st.append(self.memo[idx])
            elif op in (P.BINPUT[0], P.LONG_BINPUT[0]):
                idx = read(1)[0] if op == P.BINPUT[0] else struct.unpack("<I", read(4))[0]
                self.memo[idx] = st[-1]
            elif op == P.MEMOIZE[0]:
                self.memo[len(self.memo)] = st[-1]
            elif op == P.FRAME[0]:
                read(8)
            elif op == P.PROTO[0]:
                proto = read(1)[0]
                if proto not in (2, 3, 4, 5):
                    raise pickle.UnpicklingError(f"unsupported pickle protocol: {proto}")
            elif op == P.STOP[0]:
                return st.pop()
            else:
                raise pickle.UnpicklingError(f"Unsupported operand {op}")


def _ascii(b):
    return b.decode("ascii") if isinstance(b, bytes) else b


class _FullUnpickler(pickle.Unpickler):
    """weights_only=False: Python's unpickler, torch.* names resolved to janus."""

    def find_class(self, module, name):
        return _find_global(module, name)


def _wo_message(message):
    """PyTorch's wording around a weights-only refusal."""
    if re.search(r"GLOBAL (\S+) was not an allowed global by default.", message):
        out = ("Weights only load failed. This file can still be loaded, to do so you have two options, "
               "\033[1mdo those steps only if you trust the source of the checkpoint\033[0m. "
               f"\n\t(1) {UNSAFE_MESSAGE}\n\t(2) Alternatively, to load with `weights_only=True` please check "
               "the recommended steps in the following error message.\n\tWeightsUnpickler error: " + message)
    else:
        out = f"Weights only load failed. {UNSAFE_MESSAGE}\n"
        if not re.search(r"whose module (\S+) is blocked", message):
            out += ("Please file an issue with the following so that we can make `weights_only=True` compatible "
                    "with your use case: WeightsUnpickler error: ")
        out += "\n\n" + message
    return out + _DOCS_MESSAGE


def _unpickle(data, persistent_load, weights_only, pickle_module, load_args):
    f = io.BytesIO(data) if isinstance(data, (bytes, bytearray)) else data
    if weights_only:
        try:
            return _WeightsOnlyUnpickler(f, persistent_load, load_args.get("encoding", "utf-8")).load()
        except UnsupportedCheckpointError:
            raise
        except pickle.UnpicklingError as e:
            raise pickle.UnpicklingError(_wo_message(str(e))) from None
    unpickler_cls = _FullUnpickler
    if pickle_module is not pickle and hasattr(pickle_module, "Unpickler"):
        base = pickle_module.Unpickler
        unpickler_cls = type("_Unpickler", (base,), {"find_class": lambda self, m, n: _find_global(m, n)})
    u = unpickler_cls(f, **load_args)
    u.persistent_load = persistent_load
    return u.load()


def _storage_loader(read_record, restore, swap):
    """persistent_load for the zip format: storages read once per key."""
    loaded = {}

    def persistent_load(saved_id):
        if not isinstance(saved_id, tuple) or not saved_id or _ascii(saved_id[0]) != "storage" or len(saved_id) != 5:
            raise pickle.UnpicklingError(f"unknown persistent id {saved_id!r} in the checkpoint")
        _, storage_type, key, location, numel = saved_id
        if not isinstance(storage_type, _StorageType):
            raise pickle.UnpicklingError(f"a storage of type {storage_type!r}")
        dtype = storage_type.dtype
        nbytes = numel * _ITEMSIZE[dtype]
        st = loaded.get(key)
        if st is None:
            raw = read_record(f"data/{key}")
            if len(raw) != nbytes:
                raise pickle.UnpicklingError(f"storage {key}: the file holds {len(raw)} bytes, the pickle says "
                                             f"{numel} {dtype} elements ({nbytes} bytes)")
            if swap:
                raw = _byteswap(raw, _ITEMSIZE[dtype])
            st = loaded[key] = restore(_LoadedStorage(raw, dtype, _ascii(location)), _ascii(location))
        elif st.dtype != dtype:
            if nbytes != len(st.raw):
                raise pickle.UnpicklingError(f"storage {key} is read as {st.dtype} and as {dtype} with different "
                                             "sizes")
            st = _LoadedStorage(st.raw, dtype, st.location, st.target)
        return st
    return persistent_load


def _load_zip(zf, where, restore, weights_only, pickle_module, load_args):
    names = zf.namelist()
    if not names:
        raise ValueError(f"janus.load({where}): empty zip archive, not a checkpoint")
    prefix = names[0].split("/", 1)[0]
    present = set(names)
    if f"{prefix}/constants.pkl" in present:
        raise RuntimeError(f"janus.load({where}): this is a TorchScript archive (torch.jit.save); janus cannot run "
                           "TorchScript. Save the model's state_dict() with torch.save instead")
    if f"{prefix}/data.pkl" not in present:
        raise ValueError(f"janus.load({where}): zip archive without {prefix}/data.pkl: not a PyTorch checkpoint")

    def read_record(name):
        full = f"{prefix}/{name}"
        if full not in present:
            raise pickle.UnpicklingError(f"the checkpoint has no record {full}")
        return zf.read(full)

    swap = False
    if f"{prefix}/byteorder" in present:
        order = zf.read(f"{prefix}/byteorder")
        if order not in (b"little", b"big"):
            raise ValueError("Unknown endianness type: " + order.decode(errors="replace"))
        swap = order.decode() != sys.byteorder
    data = read_record("data.pkl")
    return _unpickle(data, _storage_loader(read_record, restore, swap), weights_only, pickle_module, load_args)


def _load_legacy(fh, where, restore, weights_only, pickle_module, load_args):
    """The pre-1.6 format: a pickle stream, then the storages' bytes."""
    def head():
        return _unpickle(fh, None, True, None, {})
    try:
        magic = head()
    except Exception:
        raise pickle.UnpicklingError(f"janus.load({where}): not a PyTorch checkpoint (neither a zip archive nor "
                                     "a legacy pickle stream)") from None
    if magic != MAGIC_NUMBER:
        raise RuntimeError("Invalid magic number; corrupt file?")
    version = head()
    if version != PROTOCOL_VERSION:
        raise RuntimeError(f"Invalid protocol version: {version}")
    sys_info = head()
    if isinstance(sys_info, dict) and sys_info.get("little_endian") is False:
        raise NotImplementedError(f"janus.load({where}): a legacy checkpoint written on a big-endian machine")
    loaded = {}

    def persistent_load(saved_id):
        if not isinstance(saved_id, tuple) or not saved_id:
            raise pickle.UnpicklingError(f"unknown persistent id {saved_id!r}")
        kind = _ascii(saved_id[0])
        if kind == "module" and not weights_only:
            return saved_id[1]
        if kind != "storage" or len(saved_id) != 6:
            raise RuntimeError(f"Unknown saved id type: {saved_id[0]}")
        _, storage_type, root_key, location, numel, view = saved_id
        dtype = storage_type.dtype
        location = _ascii(location)
        if root_key not in loaded:
            if restore(_LoadedStorage(b"", dtype, location), location).target not in (None, "cpu"):
                raise NotImplementedError(f"janus.load({where}): a legacy-format checkpoint with {location} tensors; "
                                          "pass map_location='cpu' (and move the model afterwards)")
            st = _LoadedStorage(bytes(numel * _ITEMSIZE[dtype]), dtype, location, "cpu")
            loaded[root_key] = st
        st = loaded[root_key]
        if view is not None:
            view_key, offset, size = view
            if view_key not in loaded:
                v = _LoadedStorage(b"", dtype, location, "cpu")
                v.flats[dtype] = _C._storage_view(st.flat(), [size], [1], offset)
                v.raw = bytes(size * _ITEMSIZE[dtype])
                loaded[view_key] = v
            return loaded[view_key]
        return st

    result = _unpickle(fh, persistent_load, weights_only, pickle_module, load_args)
    keys = head()
    for key in keys:
        if key not in loaded:
            raise AssertionError(f"storage key {key!r} not found in deserialized_objects")
        st = loaded[key]
        count = fh.read(8)
        if len(count) != 8:
            raise ValueError(f"janus.load({where}): file is truncated (storage {key})")
        (numel,) = struct.unpack("<q", count)
        nbytes = numel * _ITEMSIZE[st.dtype]
        if nbytes != len(st.raw):
            raise ValueError(f"janus.load({where}): storage {key} holds {numel} elements, the pickle says "
                             f"{len(st.raw) // _ITEMSIZE[st.dtype]}")
        raw = fh.read(nbytes)
        if len(raw) != nbytes:
            raise ValueError(f"janus.load({where}): file is truncated (storage {key})")
        _C._write_storage_bytes(st.flat(), raw)
    return result


def _weights_only_default(pickle_module, weights_only):
    not_set = weights_only is None
    if not_set:
        weights_only = pickle_module is None
    yes = ("1", "y", "yes", "true")
    force = os.environ.get("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in yes
    force_no = os.environ.get("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in yes
    if force and force_no:
        raise RuntimeError("Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` "
                           "should be set, but both were set.")
    if force:
        return True
    if force_no and not_set:
        warnings.warn("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since the`weights_only` "
                      "argument was not explicitly passed to `torch.load`, forcing weights_only=False.",
                      UserWarning, stacklevel=3)
        return False
    return bool(weights_only)


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Load what torch.save or janus.save wrote (or a safetensors file) from
    `f` (a path or a readable, seekable binary file).  See the module doc."""
    _check_host()
    weights_only = _weights_only_default(pickle_module, weights_only)
    if weights_only:
        if pickle_module is not None:
            raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
        if pickle_load_args.keys() - {"encoding"}:
            warnings.warn("pickle_load_args only works if `weights_only=False`.", stacklevel=2)
    elif pickle_module is None:
        pickle_module = pickle
    pickle_load_args.setdefault("encoding", "utf-8")
    is_path = not hasattr(f, "read")
    if mmap and not is_path:
        raise ValueError("f must be a file path in order to use the mmap argument")
    restore = _restorer(map_location)
    if is_path:
        path = os.fspath(f)
        where = repr(path)
        if not os.path.exists(path):
            raise FileNotFoundError(f"janus.load({path!r}): no such file")
        if os.path.isdir(path):
            raise IsADirectoryError(f"janus.load({path!r}): is a directory, not a file")
        fh = open(path, "rb")
    else:
        fh = f
        where = repr(getattr(f, "name", "<file object>"))
    try:
        return _load_file(fh, f, where, mmap, restore, weights_only, pickle_module, pickle_load_args)
    except UnsupportedCheckpointError as e:
        raise UnsupportedCheckpointError(f"janus.load({where}): {e}") from None
    finally:
        if is_path:
            fh.close()


def _load_file(fh, f, where, mmap, restore, weights_only, pickle_module, pickle_load_args):
    """Which format the file is in, by its first bytes, and its loader."""
    start = fh.tell()
    head = fh.read(16)
    fh.seek(start)
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        with zipfile.ZipFile(fh) as zf:
            return _load_zip(zf, where, restore, weights_only, pickle_module, pickle_load_args)
    if mmap:
        name = f"{f}, " if isinstance(f, str) else ""
        raise RuntimeError("mmap can only be used with files saved with "
                           f"`torch.save({name}_use_new_zipfile_serialization=True), "
                           "please torch.save your checkpoint with this option in order to use mmap.")
    if _safetensors.is_safetensors(head):
        return _safetensors.load_file(fh, "janus.load")
    if not head:
        raise EOFError(f"janus.load({where}): the file is empty")
    fh.seek(start + 257)
    if fh.read(5) == b"ustar":
        raise RuntimeError(f"janus.load({where}): a checkpoint in PyTorch's legacy tar format (before "
                           "PyTorch 0.4); load it with PyTorch and save it again")
    fh.seek(start)
    return _load_legacy(fh, where, restore, weights_only, pickle_module, pickle_load_args)


def get_unsafe_globals_in_checkpoint(f):
    """The globals of a checkpoint that weights_only=True would refuse."""
    import pickletools
    fh = open(os.fspath(f), "rb") if not hasattr(f, "read") else f
    try:
        with zipfile.ZipFile(fh) as zf:
            prefix = zf.namelist()[0].split("/", 1)[0]
            data = zf.read(f"{prefix}/data.pkl")
    finally:
        if fh is not f:
            fh.close()
    allowed = set(_default_allowed()) | set(_user_allowed())
    found, strings = set(), []
    for opcode, arg, _ in pickletools.genops(data):
        if opcode.name in ("SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE"):
            strings.append(arg)
        if opcode.name == "GLOBAL":
            module, name = arg.split(" ", 1)
        elif opcode.name == "STACK_GLOBAL" and len(strings) >= 2:
            module, name = strings[-2], strings[-1]
        else:
            continue
        module, name = _fix_import(module, name)
        full = f"{module}.{name}"
        if full not in allowed:
            found.add(full)
    return sorted(found)


# ---- the allow-list for weights_only loads (torch.serialization's API)
_SAFE_GLOBALS = []


def add_safe_globals(safe_globals):
    """Allow these classes/functions (or (object, "module.name") pairs) in
    weights_only loads."""
    for g in safe_globals:
        _safe_global_key(g)  # checks the tuple form
        if g not in _SAFE_GLOBALS:
            _SAFE_GLOBALS.append(g)


def get_safe_globals():
    return list(_SAFE_GLOBALS)


def clear_safe_globals():
    del _SAFE_GLOBALS[:]


class safe_globals:
    """Context manager: the globals are allowed inside the block."""

    def __init__(self, safe_globals):
        self.safe_globals = list(safe_globals)

    def __enter__(self):
        self._saved = list(_SAFE_GLOBALS)
        add_safe_globals(self.safe_globals)
        return self

    def __exit__(self, *exc):
        _SAFE_GLOBALS[:] = self._saved
        return False
