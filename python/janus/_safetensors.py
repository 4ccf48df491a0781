"""The safetensors format: janus.serialization.save_safetensors /
load_safetensors, and what janus.load reads when a file is one (files that
janus.save wrote before it wrote PyTorch's format are safetensors files).

A file is: an 8-byte little-endian header length N; N bytes of UTF-8 JSON
(padded with spaces so the data starts 8-byte aligned)

    {"__metadata__": {str: str},
     name: {"dtype": "F32"|"F64"|"F16"|"BF16"|"I64"|"I32"|"U8"|"BOOL",
            "shape": [...], "data_offsets": [begin, end]}, ...}

then the tensors' raw little-endian bytes, back to back in header order, with
offsets relative to the end of the header.

save_file() takes a tensor, or a (nested) dict/list/tuple of tensors and plain
Python values (an optimizer's state_dict, a checkpoint dict).  Tensor leaves
are stored under their dotted path ("state.0.exp_avg"); the non-tensor
structure goes, as JSON, into __metadata__["janus.structure"] so load_file()
rebuilds the same object.  A plain {str: tensor} dict (a model state dict) is
written as ordinary top-level entries with no structure entry, so other
safetensors readers see exactly its keys.  Writes to a path are atomic
(temporary file in the same folder, fsync, os.replace).

load_file() validates everything before trusting it and raises errors that name
the file and the problem: FileNotFoundError for a missing file, ValueError for
a truncated file, a header length beyond the file, a header that is not JSON,
offsets out of range or overlapping, an unknown dtype, a shape that does not
match its byte size, a bad structure entry.  No safetensors package is needed.
Tensors are loaded on the CPU into memory of their own; requires_grad and
storage sharing between tensors are not preserved (as with safetensors).
"""
import json
import math
import os
import secrets
import struct
import sys
from collections import Counter, OrderedDict

from . import _C

__all__ = ["save_file", "load_file", "is_safetensors"]

_ST_TO_NAME = {"F32": "float32", "F64": "float64", "F16": "float16", "BF16": "bfloat16",
               "I64": "int64", "I32": "int32", "U8": "uint8", "BOOL": "bool"}
_NAME_TO_ST = {v: k for k, v in _ST_TO_NAME.items()}
_ITEMSIZE = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "uint8": 1,
             "bool": 1}
_FORMAT = {"float32": "f", "float64": "d", "int64": "q", "int32": "i", "uint8": "B", "bool": "?"}
_MAX_HEADER = 100_000_000  # the safetensors limit
_STRUCTURE_KEY = "janus.structure"


def _code(name):
    return _C.dtype_names.index(name)


def _dtype_name(t):
    return _C.dtype_names[t._dtype_id]


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _check_host():
    if sys.byteorder != "little":
        raise NotImplementedError("safetensors files need a little-endian machine")


class _NoGrad:
    def __enter__(self):
        self.prev = _C._set_grad_enabled(False)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)


# ------------------------------------------------------------------ saving
class _Flattener:
    """Turns an object into (JSON-able structure, [(name, tensor), ...])."""

    def __init__(self):
        self.entries = []
        self.names = set()
        self.renamed = False

    def _name(self, path):
        name = "tensor" if path is None else path
        if name in self.names or name == "__metadata__":
            self.renamed = True
            k = 2
            while f"{name}#{k}" in self.names:
                k += 1
            name = f"{name}#{k}"
        self.names.add(name)
        return name

    @staticmethod
    def _join(path, key):
        key = key if isinstance(key, str) else json.dumps(_Flattener._key(key))
        return key if path is None else f"{path}.{key}"

    @staticmethod
    def _key(k):
        """A dict key (no tensors) as structure JSON."""
        if k is None or isinstance(k, (bool, int, str)):
            return k
        if isinstance(k, float):
            return k if math.isfinite(k) else {"F": repr(k)}
        if isinstance(k, tuple):
            return {"U": [_Flattener._key(v) for v in k]}
        if isinstance(k, frozenset):
            return {"FS": [_Flattener._key(v) for v in k]}
        raise TypeError(f"save_safetensors: can't save a dict key of type {type(k).__name__} ({k!r}); keys must be "
                        "str, int, float, bool, None or tuples of those")

    def enc(self, x, path):
        if isinstance(x, _C.TensorBase):
            name = self._name(path)
            self.entries.append((name, x))
            return {"T": name}
        if x is None or isinstance(x, (bool, int, str)):
            return x
        if isinstance(x, float):
            return x if math.isfinite(x) else {"F": repr(x)}
        if isinstance(x, list):
            return [self.enc(v, self._join(path, i)) for i, v in enumerate(x)]
        if isinstance(x, tuple):
            return {"U": [self.enc(v, self._join(path, i)) for i, v in enumerate(x)]}
        if isinstance(x, dict):
            kind = {Counter: "Counter", OrderedDict: "OrderedDict"}.get(type(x))
            out = {"D": [[self._key(k), self.enc(v, self._join(path, k))] for k, v in x.items()]}
            if kind:
                out["k"] = kind
            return out
        if isinstance(x, (set, frozenset)):
            return {"FS" if isinstance(x, frozenset) else "S": [self._key(v) for v in x]}
        if type(x).__module__ == "numpy" and hasattr(x, "item") and getattr(x, "ndim", None) == 0:
            return self.enc(x.item(), path)  # numpy scalars
        dt = _janus_dtype_class()
        if dt is not None and isinstance(x, dt):
            return {"dtype": str(x).split(".")[-1]}
        where = "the object" if path is None else f"'{path}'"
        raise TypeError(f"save_safetensors: can't save {where} of type {type(x).__name__}; supported: tensors, "
                        "dicts, lists, tuples, sets, str, int, float, bool, None and janus dtypes")


def _janus_dtype_class():
    janus = sys.modules.get("janus")
    return getattr(janus, "dtype", None) if janus is not None else None


def _tensor_data(t, name):
    """The tensor's bytes (a bytes-like object) in C order, little-endian."""
    if _numel(t._shape) == 0:
        return b""
    if name == "bfloat16":  # no buffer format: go through float32 (exact) and keep the top halves
        with _NoGrad():
            f = _C._op("cast", [_C._detach(t)], (_code("float32"),))
        fb = memoryview(f).tobytes()
        out = bytearray(len(fb) // 2)
        out[0::2] = fb[2::4]
        out[1::2] = fb[3::4]
        return out
    mv = memoryview(t)
    return mv if mv.c_contiguous else mv.tobytes()


def save_file(obj, f, metadata=None):
    """Save a tensor or a nested dict/list/tuple of tensors and plain values to
    `f` (a path or a writable binary file) in the safetensors format.
    metadata: optional {str: str} stored in the header's __metadata__."""
    _check_host()
    fl = _Flattener()
    structure = fl.enc(obj, None)
    meta = {"format": "pt"}
    if metadata is not None:
        if not isinstance(metadata, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                     for k, v in metadata.items()):
            raise TypeError("save_safetensors: metadata must be a dict of str to str")
        if _STRUCTURE_KEY in metadata:
            raise ValueError(f"save_safetensors: metadata key '{_STRUCTURE_KEY}' is reserved")
        meta.update(metadata)
    plain_state_dict = (type(obj) is dict and not fl.renamed
                        and all(isinstance(k, str) and isinstance(v, _C.TensorBase) for k, v in obj.items()))
    if not plain_state_dict:
        meta[_STRUCTURE_KEY] = json.dumps(structure, separators=(",", ":"), allow_nan=False)

    header = {"__metadata__": meta}
    offset = 0
    items = []
    for name, t in fl.entries:
        dname = _dtype_name(t)
        shape = list(t._shape)
        nbytes = _numel(shape) * _ITEMSIZE[dname]
        header[name] = {"dtype": _NAME_TO_ST[dname], "shape": shape, "data_offsets": [offset, offset + nbytes]}
        items.append((t, dname, nbytes))
        offset += nbytes
    hb = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    hb += b" " * (-len(hb) % 8)

    def write_all(fh):
        fh.write(struct.pack("<Q", len(hb)))
        fh.write(hb)
        for t, dname, nbytes in items:
            data = _tensor_data(t, dname)
            if len(memoryview(data).cast("B")) != nbytes:
                raise RuntimeError(f"save_safetensors: tensor data size changed while saving ({dname} "
                                   f"{list(t._shape)})")
            fh.write(data)

    if hasattr(f, "write"):
        write_all(f)
        return
    path = os.fspath(f)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"save_safetensors({path!r}): folder {folder!r} does not exist")
    if os.path.isdir(path):
        raise IsADirectoryError(f"save_safetensors({path!r}): is a directory")
    tmp = f"{path}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            write_all(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# ----------------------------------------------------------------- loading
class _Reader:
    """Random access to the file's bytes: a real file (read piecewise) or a
    bytes-like object read from a file object."""

    def __init__(self, f, fn):
        self.fn = fn
        self.fh = None
        if hasattr(f, "read"):
            self.where = repr(getattr(f, "name", "<file object>"))
            self.buf = memoryview(f.read()).cast("B")
            self.size = len(self.buf)
        else:
            path = os.fspath(f)
            self.where = repr(path)
            if not os.path.exists(path):
                raise FileNotFoundError(f"{fn}({path!r}): no such file")
            if os.path.isdir(path):
                raise IsADirectoryError(f"{fn}({path!r}): is a directory, not a file")
            self.fh = open(path, "rb")
            self.size = os.fstat(self.fh.fileno()).st_size

    def read(self, pos, n):
        if self.fh is None:
            return bytearray(self.buf[pos:pos + n])
        out = bytearray(n)
        self.fh.seek(pos)
        got = self.fh.readinto(out)
        if got != n:
            raise ValueError(f"{self.fn}({self.where}): file is truncated (read {got} of {n} bytes at "
                             f"offset {pos})")
        return out

    def close(self):
        if self.fh is not None:
            self.fh.close()


def _tensor_from_bytes(buf, dname, shape):
    """A janus tensor of dtype `dname` and `shape` from its raw bytes (buf is
    a fresh bytearray, so the tensor may keep it as its memory)."""
    n = _numel(shape)
    if n == 0:
        return _C._op("empty", [], (list(shape), _code(dname)))
    if dname == "bfloat16":
        f32 = bytearray(4 * n)
        f32[2::4] = buf[0::2]
        f32[3::4] = buf[1::2]
        t = _C._from_buffer(memoryview(f32).cast("f", shape))
        with _NoGrad():
            return _C._op("cast", [t], (_code("bfloat16"),))
    if dname == "float16":
        try:
            import numpy as np
        except ImportError:
            np = None
        if np is not None:
            return _C._from_buffer(np.frombuffer(buf, dtype="<f2").reshape(shape))
        from array import array
        f32 = array("f", struct.unpack(f"<{n}e", buf))
        t = _C._from_buffer(memoryview(f32).cast("B").cast("f", shape))
        with _NoGrad():
            return _C._op("cast", [t], (_code("float16"),))
    return _C._from_buffer(memoryview(buf).cast(_FORMAT[dname], shape))


def _decode(x, tensors, err):
    if isinstance(x, list):
        return [_decode(v, tensors, err) for v in x]
    if isinstance(x, dict):
        if len(x) == 1 and "T" in x:
            name = x["T"]
            if not isinstance(name, str) or name not in tensors:
                raise err(f"structure refers to tensor {name!r}, which the file does not contain")
            return tensors[name]
        if "D" in x and set(x) <= {"D", "k"}:
            pairs = x["D"]
            if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 for p in pairs):
                raise err("structure has a malformed dict entry")
            try:
                items = [(_decode(k, tensors, err), _decode(v, tensors, err)) for k, v in pairs]
                kind = {"Counter": Counter, "OrderedDict": OrderedDict, None: dict}.get(x.get("k"))
                if kind is None:
                    raise err(f"structure has an unknown dict kind {x.get('k')!r}")
                return kind(dict(items)) if kind is Counter else kind(items)
            except TypeError as e:
                raise err(f"structure has an unusable dict key ({e})") from None
        if len(x) == 1:
            (tag, v), = x.items()
            if tag in ("U", "S", "FS") and isinstance(v, list):
                vals = [_decode(e, tensors, err) for e in v]
                try:
                    return {"U": tuple, "S": set, "FS": frozenset}[tag](vals)
                except TypeError as e:
                    raise err(f"structure has an unusable set element ({e})") from None
            if tag == "F" and v in ("inf", "-inf", "nan"):
                return float(v)
            if tag == "dtype" and isinstance(v, str):
                janus = sys.modules.get("janus")
                dt = getattr(janus, v, None)
                if dt is None or v not in _ITEMSIZE:
                    raise err(f"structure names an unknown dtype {v!r}")
                return dt
        raise err(f"structure has an unrecognized entry {json.dumps(x)[:80]}")
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    raise err(f"structure has an unrecognized value {x!r}")


def is_safetensors(head):
    """Do a file's first bytes (at least 10) look like a safetensors file: a
    header length, then a JSON object?"""
    return len(head) >= 10 and struct.unpack("<Q", head[:8])[0] >= 2 and head[8:10] in (b'{"', b"{}")


def load_file(f, fn="load_safetensors"):
    """Load what save_file() wrote (or any safetensors file: then a {name:
    tensor} dict in file order).  f: a path or a readable binary file."""
    _check_host()
    r = _Reader(f, fn)
    where = r.where

    def err(msg):
        return ValueError(f"{fn}({where}): {msg}")

    try:
        size = r.size
        if size < 8:
            raise err(f"file is truncated or not a safetensors file: {size} bytes, but the format starts "
                      "with an 8-byte header length")
        (hlen,) = struct.unpack("<Q", r.read(0, 8))
        if hlen > size - 8:
            raise err(f"header length {hlen} is larger than the file ({size} bytes): the file is truncated "
                      "or not a safetensors file")
        if hlen > _MAX_HEADER:
            raise err(f"header length {hlen} exceeds the safetensors limit of {_MAX_HEADER} bytes")
        raw = r.read(8, hlen)
        try:
            header = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise err(f"header is not valid JSON ({e})") from None
        if not isinstance(header, dict):
            raise err(f"header must be a JSON object, got {type(header).__name__}")
        data_start = 8 + hlen
        data_len = size - data_start

        meta = header.pop("__metadata__", None) or {}
        if not isinstance(meta, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                 for k, v in meta.items()):
            raise err("__metadata__ must be a JSON object of strings to strings")

        specs = []
        for name, info in header.items():
            if not isinstance(info, dict) or not {"dtype", "shape", "data_offsets"} <= set(info):
                raise err(f"tensor '{name}': entry must be an object with dtype, shape and data_offsets")
            st = info["dtype"]
            if st not in _ST_TO_NAME:
                raise err(f"tensor '{name}': unknown or unsupported dtype {st!r} (supported: "
                          f"{', '.join(_ST_TO_NAME)})")
            dname = _ST_TO_NAME[st]
            shape = info["shape"]
            if (not isinstance(shape, list) or len(shape) > _C.MAX_DIMS
                    or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape)):
                raise err(f"tensor '{name}': shape {shape!r} must be a list of at most {_C.MAX_DIMS} "
                          "non-negative integers")
            offs = info["data_offsets"]
            if (not isinstance(offs, list) or len(offs) != 2
                    or not all(isinstance(o, int) and not isinstance(o, bool) for o in offs)):
                raise err(f"tensor '{name}': data_offsets {offs!r} must be [begin, end]")
            b, e = offs
            if not 0 <= b <= e <= data_len:
                raise err(f"tensor '{name}': data_offsets [{b}, {e}] are out of range (the data section "
                          f"has {data_len} bytes{'; the file may be truncated' if e > data_len else ''})")
            need = _numel(shape) * _ITEMSIZE[dname]
            if e - b != need:
                raise err(f"tensor '{name}': shape {shape} of dtype {st} needs {need} bytes, but data_offsets "
                          f"[{b}, {e}] span {e - b}")
            specs.append((name, dname, shape, b, e))

        prev = None
        for spec in sorted(specs, key=lambda s: (s[3], s[4])):
            if prev is not None and spec[3] < prev[4]:
                raise err(f"tensors '{prev[0]}' [{prev[3]}, {prev[4]}] and '{spec[0]}' [{spec[3]}, {spec[4]}] "
                          "have overlapping data_offsets")
            prev = spec

        tensors = {}
        for name, dname, shape, b, e in specs:
            buf = r.read(data_start + b, e - b)
            if dname == "bool" and buf.translate(None, b"\x00\x01"):
                raise err(f"tensor '{name}': BOOL data holds bytes other than 0 and 1")
            tensors[name] = _tensor_from_bytes(buf, dname, shape)
    finally:
        r.close()

    if _STRUCTURE_KEY not in meta:
        return tensors
    try:
        structure = json.loads(meta[_STRUCTURE_KEY])
    except ValueError as e:
        raise err(f"__metadata__['{_STRUCTURE_KEY}'] is not valid JSON ({e})") from None
    return _decode(structure, tensors, err)
