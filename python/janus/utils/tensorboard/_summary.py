"""The Summary messages SummaryWriter's add_* methods write, computed as
torch.utils.tensorboard.summary computes them (the same conversions,
histogram buckets, image layout and scaling, text and hparams plugin
data), but returned as serialized bytes (janus/utils/tensorboard/_wire.py)
instead of protobuf objects.  Images are PNG-encoded here with zlib and
struct (torch uses PIL); the pixels are the same, the compressed bytes
differ.
"""
import struct
import zlib

import numpy as np

from . import _wire


def make_np(x):
    """torch.utils.tensorboard._convert_np.make_np: an ndarray as is, a
    Python/numpy scalar as a 1-element array, a tensor through numpy."""
    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    import janus
    if isinstance(x, janus.Tensor):
        if x.dtype == janus.bfloat16:  # numpy has no bfloat16
            x = x.to(janus.float16)
        return x.detach().cpu().numpy()
    raise NotImplementedError(f"Got {type(x)}, but numpy array or torch tensor are expected.")


# ---------------------------------------------------------------- scalars
def scalar(name, tensor, new_style=False, double_precision=False):
    tensor = make_np(tensor).squeeze()
    if tensor.ndim != 0:
        raise AssertionError(f"Tensor should contain one element (0 dimensions). "
                             f"Was given size: {tensor.size} and {tensor.ndim} dimensions.")
    value = float(tensor)
    if new_style:
        if double_precision:
            t = _wire.tensor_proto(_wire.DT_DOUBLE, double_val=[value])
        else:
            t = _wire.tensor_proto(_wire.DT_FLOAT, float_val=[value])
        return _wire.summary(_wire.value(name, tensor=t, metadata=_wire.summary_metadata("scalars")))
    return _wire.summary(_wire.value(name, simple_value=value))


# ---------------------------------------------------------------- histograms
def histogram_raw(name, min, max, num, sum, sum_squares, bucket_limits, bucket_counts):
    hist = _wire.histogram_proto(min, max, num, sum, sum_squares, bucket_limits, bucket_counts)
    return _wire.summary(_wire.value(name, histo=hist))


def histogram(name, values, bins, max_bins=None):
    values = make_np(values)
    return _wire.summary(_wire.value(name, histo=make_histogram(values.astype(float), bins, max_bins)))


def make_histogram(values, bins, max_bins=None):
    """The HistogramProto torch writes: numpy.histogram's counts, merged
    max_bins-wise, trimmed to the support with one empty bucket on the left
    (TensorBoard stores only right edges)."""
    if values.size == 0:
        raise ValueError("The input has no element.")
    values = values.reshape(-1)
    counts, limits = np.histogram(values, bins=bins)
    num_bins = len(counts)
    if max_bins is not None and num_bins > max_bins:
        subsampling = num_bins // max_bins
        subsampling_remainder = num_bins % subsampling
        if subsampling_remainder != 0:
            counts = np.pad(counts, pad_width=[[0, subsampling - subsampling_remainder]],
                            mode="constant", constant_values=0)
        counts = counts.reshape(-1, subsampling).sum(axis=-1)
        new_limits = np.empty((counts.size + 1,), limits.dtype)
        new_limits[:-1] = limits[:-1:subsampling]
        new_limits[-1] = limits[-1]
        limits = new_limits

    # the first and last bins with counts bound the support
    cum_counts = np.cumsum(np.greater(counts, 0))
    start, end = np.searchsorted(cum_counts, [0, cum_counts[-1] - 1], side="right")
    start = int(start)
    end = int(end) + 1
    counts = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start:end + 1]
    if counts.size == 0 or limits.size == 0:
        raise ValueError("The histogram is empty, please file a bug report.")
    sum_sq = values.dot(values)
    return _wire.histogram_proto(values.min(), values.max(), len(values), values.sum(), sum_sq,
                                 limits.tolist(), counts.tolist())


# ---------------------------------------------------------------- images
def make_grid(imgs, ncols=8):
    """N1HW or N3HW images tiled into one 3HW canvas, 8 per row."""
    if imgs.shape[1] == 1:
        imgs = np.concatenate([imgs, imgs, imgs], 1)
    if imgs.ndim != 4 or imgs.shape[1] != 3:
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    nimg, H, W = imgs.shape[0], imgs.shape[2], imgs.shape[3]
    ncols = min(nimg, ncols)
    nrows = int(np.ceil(float(nimg) / ncols))
    canvas = np.zeros((3, H * nrows, W * ncols), dtype=imgs.dtype)
    i = 0
    for y in range(nrows):
        for x in range(ncols):
            if i >= nimg:
                break
            canvas[:, y * H:(y + 1) * H, x * W:(x + 1) * W] = imgs[i]
            i += 1
    return canvas


def convert_to_HWC(tensor, input_format):
    if len(set(input_format)) != len(input_format):
        raise AssertionError(f"You can not use the same dimension shorthand twice. input_format: {input_format}")
    if len(tensor.shape) != len(input_format):
        raise AssertionError(f"size of input tensor and input format are different. "
                             f"tensor shape: {tensor.shape}, input_format: {input_format}")
    input_format = input_format.upper()
    if len(input_format) == 4:
        index = [input_format.find(c) for c in "NCHW"]
        return make_grid(tensor.transpose(index)).transpose(1, 2, 0)
    if len(input_format) == 3:
        index = [input_format.find(c) for c in "HWC"]
        tensor_HWC = tensor.transpose(index)
        if tensor_HWC.shape[2] == 1:
            tensor_HWC = np.concatenate([tensor_HWC, tensor_HWC, tensor_HWC], 2)
        return tensor_HWC
    if len(input_format) == 2:
        index = [input_format.find(c) for c in "HW"]
        tensor = tensor.transpose(index)
        return np.stack([tensor, tensor, tensor], 2)
    raise AssertionError(f"dataformats should have 2, 3 or 4 dimensions, got {input_format!r}")


def _png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def encode_png(pixels):
    """An HxWx3 (RGB) or HxWx4 (RGBA) uint8 array as PNG bytes: 8-bit,
    no interlace, every row filter type 0."""
    height, width, channel = pixels.shape
    color_type = {3: 2, 4: 6}.get(channel)
    if color_type is None:
        raise TypeError(f"Cannot encode an image of {channel} channels as PNG: give 1, 3 or 4 channels")
    rows = np.ascontiguousarray(pixels, dtype=np.uint8).reshape(height, width * channel)
    raw = np.concatenate([np.zeros((height, 1), np.uint8), rows], axis=1).tobytes()
    ihdr = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IDAT", zlib.compress(raw, 6)) +
            _png_chunk(b"IEND", b""))


def image(tag, tensor, dataformats="NCHW"):
    """Float images are taken as [0, 1] and scaled by 255, uint8 as is
    (torch decides by the dtype alone), then clipped to [0, 255]."""
    tensor = make_np(tensor)
    tensor = convert_to_HWC(tensor, dataformats)
    scale_factor = 1 if tensor.dtype == np.uint8 else 255
    tensor = (tensor.astype(np.float32) * scale_factor).clip(0, 255).astype(np.uint8)
    height, width, channel = tensor.shape
    img = _wire.image_proto(height, width, channel, encode_png(tensor))
    return _wire.summary(_wire.value(tag, image=img))


# ---------------------------------------------------------------- text, tensors
def text(tag, text):
    # TextPluginData(version=0) serializes to nothing: the content stays empty
    t = _wire.tensor_proto(_wire.DT_STRING, shape=[1], string_val=[text.encode(encoding="utf_8")])
    return _wire.summary(_wire.value(tag + "/text_summary", tensor=t, metadata=_wire.summary_metadata("text")))


def _half_to_int(f):
    # what torch writes for half/bfloat16 values: the int32 bits of the float32
    return struct.unpack("i", struct.pack("f", f))[0]


# numpy dtype -> (DataType, TensorProto field), torch's _TENSOR_TYPE_MAP
_TENSOR_TYPES = {
    np.dtype(np.float16): (_wire.DT_HALF, "half_val"),
    np.dtype(np.float32): (_wire.DT_FLOAT, "float_val"),
    np.dtype(np.float64): (_wire.DT_DOUBLE, "double_val"),
    np.dtype(np.int8): (_wire.DT_INT8, "int_val"),
    np.dtype(np.uint8): (_wire.DT_UINT8, "uint32_val"),
    np.dtype(np.int16): (_wire.DT_INT16, "int_val"),
    np.dtype(np.int32): (_wire.DT_INT32, "int_val"),
    np.dtype(np.int64): (_wire.DT_INT64, "int64_val"),
    np.dtype(np.bool_): (_wire.DT_BOOL, "bool_val"),
    np.dtype(np.complex64): (_wire.DT_COMPLEX64, "scomplex_val"),
    np.dtype(np.complex128): (_wire.DT_COMPLEX128, "dcomplex_val"),
}


def tensor(tag, t):
    """add_tensor's Summary: the values in the TensorProto field of their
    dtype, plugin "tensor"."""
    import janus
    if not isinstance(t, janus.Tensor):
        raise TypeError(f"add_tensor expects a tensor, got {type(t).__name__}")
    if t.numel() * t.element_size() >= (1 << 31):
        raise ValueError("tensor is bigger than protocol buffer's hard limit of 2GB in size")
    bf16 = t.dtype == janus.bfloat16
    arr = make_np(t)
    entry = _TENSOR_TYPES.get(arr.dtype)
    if entry is None:
        raise ValueError(f"{tag} has unsupported tensor dtype {t.dtype}")
    dtype, field = entry
    if bf16:
        dtype = _wire.DT_BFLOAT16
    flat = arr.reshape(-1)
    if field == "half_val":
        vals = [_half_to_int(x) for x in flat.tolist()]
    elif field in ("scomplex_val", "dcomplex_val"):
        vals = np.stack([flat.real, flat.imag], axis=-1).reshape(-1).tolist()
    else:
        vals = flat.tolist()
    tp = _wire.tensor_proto(dtype, shape=list(arr.shape), **{field: vals})
    return _wire.summary(_wire.value(tag, tensor=tp, metadata=_wire.summary_metadata("tensor")))


# ---------------------------------------------------------------- hparams
# tensorboard/plugins/hparams/metadata.py and api.proto
HPARAMS_PLUGIN = "hparams"
EXPERIMENT_TAG = "_hparams_/experiment"
SESSION_START_INFO_TAG = "_hparams_/session_start_info"
SESSION_END_INFO_TAG = "_hparams_/session_end_info"
DATA_TYPE_STRING, DATA_TYPE_BOOL, DATA_TYPE_FLOAT64 = 1, 2, 3
STATUS_SUCCESS = 1


def _hparams_summary(tag, **data):
    content = _wire.hparams_plugin_data(**data)
    return _wire.summary(_wire.value(tag, metadata=_wire.summary_metadata(HPARAMS_PLUGIN, content)))


def hparams(hparam_dict=None, metric_dict=None, hparam_domain_discrete=None):
    """The experiment, session-start and session-end summaries of the
    hparams plugin, as torch's summary.hparams builds them."""
    import janus
    if not isinstance(hparam_dict, dict):
        raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
    if not isinstance(metric_dict, dict):
        raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
    hparam_domain_discrete = hparam_domain_discrete or {}
    if not isinstance(hparam_domain_discrete, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    for k, v in hparam_domain_discrete.items():
        if k not in hparam_dict or not isinstance(v, list) or \
                not all(isinstance(d, type(hparam_dict[k])) for d in v):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same type as "
                            f"hparam_dict[{k}].")
    hps, ssi = [], []
    for k, v in hparam_dict.items():
        if v is None:
            continue
        # torch tests int/float first, so a bool is a number (1.0 / 0.0)
        if isinstance(v, (int, float)):
            ssi.append((k, _wire.struct_value(float(v))))
            dom = None
            if k in hparam_domain_discrete:
                dom = _wire.list_value([_wire.struct_value(float(d)) for d in hparam_domain_discrete[k]])
            hps.append(_wire.hparam_info(k, DATA_TYPE_FLOAT64, dom))
            continue
        if isinstance(v, str):
            ssi.append((k, _wire.struct_value(v)))
            dom = None
            if k in hparam_domain_discrete:
                dom = _wire.list_value([_wire.struct_value(d) for d in hparam_domain_discrete[k]])
            hps.append(_wire.hparam_info(k, DATA_TYPE_STRING, dom))
            continue
        if isinstance(v, janus.Tensor):
            v = make_np(v)[0]
            ssi.append((k, _wire.struct_value(float(v))))
            hps.append(_wire.hparam_info(k, DATA_TYPE_FLOAT64))
            continue
        raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")

    ssi = _hparams_summary(SESSION_START_INFO_TAG, session_start_info=_wire.session_start_info(ssi))
    exp = _wire.experiment(hps, [_wire.metric_info(k) for k in metric_dict])
    exp = _hparams_summary(EXPERIMENT_TAG, experiment=exp)
    sei = _hparams_summary(SESSION_END_INFO_TAG, session_end_info=_wire.session_end_info(STATUS_SUCCESS))
    return exp, ssi, sei
