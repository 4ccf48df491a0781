"""TensorBoard's on-disk format written by hand: TFRecord framing with masked
CRC32C checksums and the protobuf wire encoding of the messages a
SummaryWriter writes (Event, Summary, HistogramProto, TensorProto, ...).

No protobuf or tensorboard package is needed.  Messages are built as bytes
by the functions below, each field written in field-number order and
proto3's rules kept: a scalar field at its default (0, "", b"") is left
out, unless it is a member of a oneof (those have presence: simple_value
0.0 is written), an embedded message is written whenever it is set (even
empty), and repeated numbers are packed.  Field numbers follow the
TensorBoard .proto files (tensorboard/compat/proto/event.proto,
summary.proto, histogram.proto, tensor.proto, tensor_shape.proto,
plugins/hparams/api.proto and plugin_data.proto, google/protobuf/struct.proto).
"""
import math
import struct

# ---------------------------------------------------------------- CRC32C
# Castagnoli polynomial, reflected (what TFRecord checksums use; zlib's
# crc32 is the other polynomial).


def _make_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return tuple(table)


_CRC32C_TABLE = _make_table()


def crc32c(data):
    """CRC-32C of data (bytes); crc32c(b"123456789") == 0xE3069283."""
    crc = 0xFFFFFFFF
    table = _CRC32C_TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data):
    """TFRecord's masked CRC: rotate right by 15, add a constant."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord(data):
    """One TFRecord: uint64 length, masked CRC of the length bytes, data,
    masked CRC of data (all little-endian)."""
    header = struct.pack("<Q", len(data))
    return header + struct.pack("<I", masked_crc32c(header)) + data + struct.pack("<I", masked_crc32c(data))


# ---------------------------------------------------------------- wire format
_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


def varint(n):
    """Base-128 varint; negative numbers as their 64-bit two's complement
    (how protobuf writes a negative int32/int64: ten bytes)."""
    n = int(n)
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field, wire):
    return varint((field << 3) | wire)


def f_varint(field, n, always=False):
    """An int32/int64/uint/bool/enum field."""
    n = int(n)
    return _key(field, _VARINT) + varint(n) if (n or always) else b""


def f_double(field, x, always=False):
    x = float(x)
    # 0.0 is the default; -0.0 differs from it bitwise and is written (as protobuf does)
    return _key(field, _I64) + struct.pack("<d", x) if (always or _nonzero(x)) else b""


def _nonzero(x):
    return x != 0.0 or math.copysign(1.0, x) < 0


def _float32_bytes(x):
    # protobuf narrows a double to float like a C cast: past the float range -> inf
    try:
        return struct.pack("<f", x)
    except OverflowError:
        return struct.pack("<f", math.copysign(math.inf, x))


def f_float(field, x, always=False):
    x = float(x)
    return _key(field, _I32) + _float32_bytes(x) if (always or _nonzero(x)) else b""


def f_bytes(field, data, always=False):
    """A string/bytes field, or an embedded message (pass always=True for a
    message that is set, so an empty one is still written)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return _key(field, _LEN) + varint(len(data)) + data if (data or always) else b""


def f_message(field, data):
    """A set embedded message (written even when empty)."""
    return f_bytes(field, data, always=True)


def f_packed_double(field, values):
    values = [float(v) for v in values]
    return f_bytes(field, struct.pack(f"<{len(values)}d", *values)) if values else b""


def f_packed_float(field, values):
    return f_bytes(field, b"".join(_float32_bytes(float(v)) for v in values))


def f_packed_varint(field, values):
    values = list(values)
    return f_bytes(field, b"".join(varint(v) for v in values)) if values else b""


# ---------------------------------------------------------------- messages
FILE_VERSION = "brain.Event:2"

# tensorboard/compat/proto/types.proto
DT_FLOAT, DT_DOUBLE, DT_INT32, DT_UINT8, DT_INT16, DT_INT8, DT_STRING = 1, 2, 3, 4, 5, 6, 7
DT_COMPLEX64, DT_INT64, DT_BOOL, DT_BFLOAT16, DT_COMPLEX128, DT_HALF = 8, 9, 10, 14, 18, 19

SESSION_LOG_START = 1  # SessionLog.SessionStatus.START


def event_header(wall_time, step=None):
    """Event.wall_time (1) and Event.step (2): the fields FileWriter.add_event
    sets; the caller appends one of the `what` fields."""
    return f_double(1, wall_time) + (f_varint(2, step) if step is not None else b"")


def what_file_version(version=FILE_VERSION):
    return f_bytes(3, version, always=True)  # oneof member: has presence


def what_summary(summary):
    return f_message(5, summary)


def what_session_log(status):
    return f_message(7, f_varint(1, status))  # SessionLog.status = 1


def summary(*values):
    """Summary: repeated Value value = 1."""
    return b"".join(f_message(1, v) for v in values)


def value(tag, simple_value=None, image=None, histo=None, tensor=None, metadata=None):
    """Summary.Value: tag 1, simple_value 2, image 4, histo 5, tensor 8,
    metadata 9 (the value fields form a oneof: set ones are always written)."""
    out = f_bytes(1, tag)
    if simple_value is not None:
        out += f_float(2, simple_value, always=True)
    if image is not None:
        out += f_message(4, image)
    if histo is not None:
        out += f_message(5, histo)
    if tensor is not None:
        out += f_message(8, tensor)
    if metadata is not None:
        out += f_message(9, metadata)
    return out


def summary_metadata(plugin_name, content=b""):
    """SummaryMetadata{plugin_data (1): PluginData{plugin_name 1, content 2}}."""
    return f_message(1, f_bytes(1, plugin_name) + f_bytes(2, content))


def histogram_proto(min, max, num, sum, sum_squares, bucket_limit, bucket):
    """HistogramProto: min 1, max 2, num 3, sum 4, sum_squares 5 (doubles),
    bucket_limit 6 and bucket 7 (packed doubles)."""
    return (f_double(1, min) + f_double(2, max) + f_double(3, num) + f_double(4, sum) +
            f_double(5, sum_squares) + f_packed_double(6, bucket_limit) + f_packed_double(7, bucket))


def image_proto(height, width, colorspace, encoded):
    """Summary.Image: height 1, width 2, colorspace 3, encoded_image_string 4."""
    return f_varint(1, height) + f_varint(2, width) + f_varint(3, colorspace) + f_bytes(4, encoded)


def tensor_shape(dims):
    """TensorShapeProto: repeated Dim dim = 2, Dim.size = 1."""
    return b"".join(f_message(2, f_varint(1, d)) for d in dims)


def tensor_proto(dtype, shape=None, **vals):
    """TensorProto: dtype 1, tensor_shape 2, then the typed value lists
    (float_val 5, double_val 6, int_val 7, string_val 8, scomplex_val 9,
    int64_val 10, bool_val 11, dcomplex_val 12, half_val 13, uint32_val 16)."""
    out = f_varint(1, dtype)
    if shape is not None:
        out += f_message(2, tensor_shape(shape))
    for name, field in (("float_val", 5), ("double_val", 6), ("int_val", 7), ("string_val", 8),
                        ("scomplex_val", 9), ("int64_val", 10), ("bool_val", 11), ("dcomplex_val", 12),
                        ("half_val", 13), ("uint32_val", 16)):
        v = vals.pop(name, None)
        if v is None:
            continue
        if name in ("float_val", "scomplex_val"):
            out += f_packed_float(field, v)
        elif name in ("double_val", "dcomplex_val"):
            out += f_packed_double(field, v)
        elif name == "string_val":
            out += b"".join(f_bytes(field, s, always=True) for s in v)  # repeated: each element written
        else:
            out += f_packed_varint(field, v)
    if vals:
        raise TypeError(f"tensor_proto: unknown fields {sorted(vals)}")
    return out


# ---- google.protobuf.Value / ListValue (struct.proto) and the hparams plugin
def struct_value(v):
    """google.protobuf.Value: number_value 2 (double), string_value 3,
    bool_value 4 (the kind oneof: always written)."""
    if isinstance(v, str):
        return f_bytes(3, v, always=True)
    if isinstance(v, bool):
        return f_varint(4, v, always=True)
    return f_double(2, v, always=True)


def list_value(values):
    """google.protobuf.ListValue: repeated Value values = 1."""
    return b"".join(f_message(1, v) for v in values)


def hparams_plugin_data(experiment=None, session_start_info=None, session_end_info=None, version=0):
    """HParamsPluginData: version 1, then the data oneof: experiment 2,
    session_start_info 3, session_end_info 4."""
    out = f_varint(1, version)
    if experiment is not None:
        out += f_message(2, experiment)
    if session_start_info is not None:
        out += f_message(3, session_start_info)
    if session_end_info is not None:
        out += f_message(4, session_end_info)
    return out


def session_start_info(hparams):
    """SessionStartInfo.hparams (1): map<string, Value>, each entry a
    message {key 1, value 2}; hparams is [(name, encoded Value)]."""
    return b"".join(f_message(1, f_bytes(1, k, always=True) + f_message(2, v)) for k, v in hparams)


def session_end_info(status):
    """SessionEndInfo.status (1): api.proto Status (STATUS_SUCCESS = 1)."""
    return f_varint(1, status)


def hparam_info(name, type, domain_discrete=None):
    """HParamInfo: name 1, type 4 (DataType), domain_discrete 5 (ListValue)."""
    out = f_bytes(1, name) + f_varint(4, type)
    if domain_discrete is not None:
        out += f_message(5, domain_discrete)
    return out


def metric_info(tag, group=""):
    """MetricInfo.name (1): MetricName{group 1, tag 2}."""
    return f_message(1, f_bytes(1, group) + f_bytes(2, tag))


def experiment(hparam_infos, metric_infos):
    """Experiment: hparam_infos 4, metric_infos 5 (repeated messages)."""
    return b"".join(f_message(4, h) for h in hparam_infos) + b"".join(f_message(5, m) for m in metric_infos)
