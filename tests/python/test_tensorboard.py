"""janus.utils.tensorboard (torch.utils.tensorboard's SummaryWriter) writes
real TensorBoard event files.

Every file is read back here by a reader of this test's own: TFRecord
framing with both CRC32Cs of every record checked (a bitwise CRC, not the
writer's table), and a generic protobuf wire decoder; the fields are
checked against TensorBoard's .proto field numbers and against
independent references (numpy.histogram for buckets, the pixels given for
PNGs, which are inflated with zlib and unfiltered here).  When the
tensorboard package is importable its EventAccumulator reads the same
files, and when PyTorch and tensorboard both are, torch's own writer is
compared record by record.  A PyTorch-style script run with `janus run`
logs its losses, and `janus check` finds nothing to report in it.
"""
import glob
import os
import re
import socket
import struct
import subprocess
import sys
import textwrap
import time
import zlib

import numpy as np
import pytest

import janus
from janus.utils.tensorboard import SummaryWriter

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(ROOT, "build")))
JANUS = os.path.join(BUILD, "janus")


# ---------------------------------------------------------------- reader
def crc32c_bitwise(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_records(path):
    """The record payloads of a TFRecord file, both CRCs of each checked."""
    data = open(path, "rb").read()
    out, i = [], 0
    while i < len(data):
        assert i + 12 <= len(data), "truncated header"
        header = data[i:i + 8]
        (n,) = struct.unpack("<Q", header)
        (hcrc,) = struct.unpack("<I", data[i + 8:i + 12])
        assert hcrc == masked(crc32c_bitwise(header)), "length CRC"
        payload = data[i + 12:i + 12 + n]
        assert len(payload) == n, "truncated record"
        (dcrc,) = struct.unpack("<I", data[i + 12 + n:i + 16 + n])
        assert dcrc == masked(crc32c_bitwise(payload)), "data CRC"
        out.append(payload)
        i += 16 + n
    return out


def _varint(buf, i):
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return result, i


def decode(buf):
    """Protobuf wire format -> {field: [(wire type, raw value)]}; a varint
    is an int, I64/I32 their 8/4 bytes, LEN its bytes."""
    fields, i = {}, 0
    while i < len(buf):
        key, i = _varint(buf, i)
        field, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(buf, i)
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 2:
            n, i = _varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise AssertionError(f"wire type {wt}")
        fields.setdefault(field, []).append((wt, v))
    assert i == len(buf)
    return fields


def one(fields, field, wt, default=None):
    vals = fields.get(field, [])
    assert len(vals) <= 1, (field, vals)
    if not vals:
        return default
    assert vals[0][0] == wt, (field, vals[0][0], wt)
    return vals[0][1]


def dbl(fields, field):
    raw = one(fields, field, 1)
    return 0.0 if raw is None else struct.unpack("<d", raw)[0]


def signed64(n):
    return n - (1 << 64) if n >= 1 << 63 else n


def packed_doubles(fields, field):
    raw = one(fields, field, 2, b"")
    return list(struct.unpack(f"<{len(raw) // 8}d", raw))


def packed_varints(fields, field):
    raw, out, i = one(fields, field, 2, b""), [], 0
    while i < len(raw):
        v, i = _varint(raw, i)
        out.append(signed64(v))
    return out


class Ev:
    """One decoded Event (event.proto: wall_time 1, step 2, file_version 3,
    summary 5, session_log 7)."""

    def __init__(self, payload):
        f = decode(payload)
        assert set(f) <= {1, 2, 3, 5, 7}, sorted(f)
        self.wall_time = dbl(f, 1)
        self.step = signed64(one(f, 2, 0, 0))
        fv = one(f, 3, 2)
        self.file_version = None if fv is None else fv.decode()
        sl = one(f, 7, 2)
        self.session_status = None if sl is None else one(decode(sl), 1, 0, 0)
        s = one(f, 5, 2)
        # Summary: repeated Value value = 1
        self.values = [] if s is None else [Val(v) for wt, v in decode(s).get(1, [])]
        assert s is None or set(decode(s)) <= {1}


class Val:
    """Summary.Value: tag 1, simple_value 2, image 4, histo 5, tensor 8, metadata 9."""

    def __init__(self, raw):
        f = decode(raw)
        assert set(f) <= {1, 2, 4, 5, 8, 9}, sorted(f)
        self.tag = one(f, 1, 2, b"").decode()
        sv = one(f, 2, 5)
        self.simple_value = None if sv is None else struct.unpack("<f", sv)[0]
        self.image = one(f, 4, 2)
        self.histo = one(f, 5, 2)
        self.tensor = one(f, 8, 2)
        md = one(f, 9, 2)
        self.plugin_name = self.plugin_content = None
        if md is not None:
            pd = decode(one(decode(md), 1, 2))   # SummaryMetadata.plugin_data = 1
            self.plugin_name = one(pd, 1, 2, b"").decode()
            self.plugin_content = one(pd, 2, 2, b"")


def histo(raw):
    """HistogramProto: min 1 max 2 num 3 sum 4 sum_squares 5, bucket_limit 6, bucket 7."""
    f = decode(raw)
    return dict(min=dbl(f, 1), max=dbl(f, 2), num=dbl(f, 3), sum=dbl(f, 4), sum_squares=dbl(f, 5),
                bucket_limit=packed_doubles(f, 6), bucket=packed_doubles(f, 7))


def tensor(raw):
    """TensorProto: dtype 1, tensor_shape 2 (dim 2 {size 1}), the value lists."""
    f = decode(raw)
    shape = [one(decode(d), 1, 0, 0) for _, d in decode(one(f, 2, 2, b"")).get(2, [])]
    out = dict(dtype=one(f, 1, 0, 0), shape=shape, fields=f)
    for name, field, fmt in (("float_val", 5, "f"), ("double_val", 6, "d")):
        raw_v = one(f, field, 2, b"")
        out[name] = list(struct.unpack(f"<{len(raw_v) // struct.calcsize(fmt)}{fmt}", raw_v))
    for name, field in (("int_val", 7), ("int64_val", 10), ("bool_val", 11), ("uint32_val", 16)):
        out[name] = packed_varints(f, field)
    out["string_val"] = [v for _, v in f.get(8, [])]
    return out


def events(path):
    return [Ev(r) for r in read_records(path)]


def event_files(logdir):
    return sorted(glob.glob(os.path.join(str(logdir), "events.out.tfevents.*")))


def only_file(logdir):
    files = event_files(logdir)
    assert len(files) == 1, files
    return files[0]


def summaries(logdir):
    """(step, Val) of every summary value in the single event file of logdir."""
    return [(e.step, v) for e in events(only_file(logdir)) for v in e.values]


# ---------------------------------------------------------------- PNG
def png_pixels(data):
    """An 8-bit non-interlaced RGB/RGBA PNG decoded: every chunk CRC checked,
    IDAT inflated with zlib, each of the five row filters undone."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    i, idat, ihdr = 8, b"", None
    while i < len(data):
        (n,) = struct.unpack(">I", data[i:i + 4])
        kind, body = data[i + 4:i + 8], data[i + 8:i + 8 + n]
        (crc,) = struct.unpack(">I", data[i + 8 + n:i + 12 + n])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        i += 12 + n
    w, h, depth, ctype, _, _, interlace = ihdr
    assert depth == 8 and interlace == 0
    ch = {2: 3, 6: 4, 0: 1, 4: 2}[ctype]
    raw = zlib.decompress(idat)
    stride = w * ch
    rows, prev = [], np.zeros(stride, np.int64)
    for r in range(h):
        ftype = raw[r * (stride + 1)]
        line = np.frombuffer(raw, np.uint8, stride, r * (stride + 1) + 1).astype(np.int64)
        cur = np.zeros(stride, np.int64)
        for x in range(stride):
            a = cur[x - ch] if x >= ch else 0
            b = prev[x]
            c = prev[x - ch] if x >= ch else 0
            if ftype == 0:
                pred = 0
            elif ftype == 1:
                pred = a
            elif ftype == 2:
                pred = b
            elif ftype == 3:
                pred = (a + b) // 2
            else:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            cur[x] = (line[x] + pred) & 0xFF
        rows.append(cur)
        prev = cur
    return np.array(rows, np.uint8).reshape(h, w, ch)


def image(raw):
    """Summary.Image: height 1, width 2, colorspace 3, encoded_image_string 4."""
    f = decode(raw)
    return one(f, 1, 0, 0), one(f, 2, 0, 0), one(f, 3, 0, 0), png_pixels(one(f, 4, 2))


# ---------------------------------------------------------------- tests
def test_crc32c_and_framing():
    from janus.utils.tensorboard import _wire
    assert _wire.crc32c(b"123456789") == 0xE3069283 == crc32c_bitwise(b"123456789")
    data = bytes(range(256)) * 3
    assert _wire.crc32c(data) == crc32c_bitwise(data)
    rec = _wire.tfrecord(b"hello")
    assert len(rec) == 8 + 4 + 5 + 4 and rec[:8] == struct.pack("<Q", 5)
    assert struct.unpack("<I", rec[-4:])[0] == masked(crc32c_bitwise(b"hello"))


def test_file_name_first_record_and_default_log_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    before = time.time()
    w = SummaryWriter(comment="_lr0.1", filename_suffix=".v2")
    host = socket.gethostname()
    assert re.fullmatch(r"runs/[A-Z][a-z]{2}\d\d_\d\d-\d\d-\d\d_" + re.escape(host) + r"_lr0\.1",
                        w.get_logdir().replace(os.sep, "/")), w.get_logdir()
    path = only_file(w.get_logdir())
    m = re.fullmatch(r"events\.out\.tfevents\.(\d{10})\.(.+)\.(\d+)\.(\d+)\.v2", os.path.basename(path))
    assert m and m.group(2) == host and int(m.group(3)) == os.getpid()
    assert abs(int(m.group(1)) - before) <= 2
    # the first record is on disk before anything is added
    first, = events(path)
    assert first.file_version == "brain.Event:2" and first.step == 0 and not first.values
    assert before - 1 <= first.wall_time <= time.time() + 1
    w2 = SummaryWriter(str(tmp_path / "other"))
    n1 = int(os.path.basename(path).split(".")[6])
    n2 = int(os.path.basename(only_file(tmp_path / "other")).split(".")[6])
    assert n2 > n1    # the per-process file counter
    w.close()
    w2.close()


def test_scalars(tmp_path):
    with SummaryWriter(tmp_path) as w:
        assert w.get_logdir() == tmp_path
        for i, v in enumerate([0.5, 1 / 3, -2.0, 0.0]):
            w.add_scalar("loss/train", v, i, walltime=1000.0 + i)
        w.add_scalar("tensor", janus.tensor(2.5), 7)
        w.add_scalar("tensor1", janus.tensor([[-1.25]]), 8)
        w.add_scalar("np", np.float32(0.125), 9)
        w.add_scalar("int", 3, 10)
        w.add_scalar("nostep", 1.0)
        w.add_scalar("new", 0.1, 11, new_style=True)
        w.add_scalar("newd", 0.1, 12, new_style=True, double_precision=True)
        with pytest.raises(AssertionError, match="one element"):
            w.add_scalar("bad", janus.tensor([1.0, 2.0]), 0)
    evs = events(only_file(tmp_path))
    assert evs[0].file_version == "brain.Event:2"
    evs = evs[1:]
    got = [(e.step, e.values[0].tag, e.values[0].simple_value) for e in evs[:9]]
    f32 = lambda x: float(np.float32(x))  # noqa: E731
    assert got == [(0, "loss/train", 0.5), (1, "loss/train", f32(1 / 3)), (2, "loss/train", -2.0),
                   (3, "loss/train", 0.0), (7, "tensor", 2.5), (8, "tensor1", -1.25), (9, "np", 0.125),
                   (10, "int", 3.0), (0, "nostep", 1.0)]
    assert [e.wall_time for e in evs[:4]] == [1000.0, 1001.0, 1002.0, 1003.0]
    assert all(len(e.values) == 1 and e.values[0].plugin_name is None for e in evs[:9])
    new, newd = evs[9].values[0], evs[10].values[0]
    assert (evs[9].step, new.tag, new.simple_value, new.plugin_name) == (11, "new", None, "scalars")
    t = tensor(new.tensor)
    assert t["dtype"] == 1 and t["shape"] == [] and t["float_val"] == [f32(0.1)] and t["double_val"] == []
    t = tensor(newd.tensor)
    assert t["dtype"] == 2 and t["double_val"] == [0.1] and t["float_val"] == []


def test_add_scalars_writes_sub_runs(tmp_path):
    w = SummaryWriter(str(tmp_path))
    for step in range(3):
        w.add_scalars("run/14h", {"xsinx": step * 1.5, "tanx": -step}, step)
    w.close()
    assert summaries(tmp_path) == []
    for tag, f in (("xsinx", lambda s: s * 1.5), ("tanx", lambda s: -s)):
        sub = tmp_path / f"run_14h_{tag}"
        got = [(s, v.tag, v.simple_value) for s, v in summaries(sub)]
        assert got == [(s, "run/14h", float(f(s))) for s in range(3)]
    # the values of one call share a walltime
    wt = [events(only_file(tmp_path / f"run_14h_{t}"))[1].wall_time for t in ("xsinx", "tanx")]
    assert wt[0] == wt[1]


def _tf_edges():
    edges, v = [], 1e-12
    while v < 1e20:
        edges.append(v)
        v *= 1.1
    return np.array([-e for e in edges[::-1]] + [0.0] + edges)


def _expected_hist(values, edges, counts):
    """What TensorBoard is given: the right edges of the bins from the first to
    the last non-empty one, with one empty bin before them for the left edge."""
    nz = np.nonzero(counts)[0]
    lo, hi = nz[0], nz[-1]
    return list(edges[lo:hi + 2]), [0.0] + [float(c) for c in counts[lo:hi + 1]]


def _check_hist(h, values, edges, counts):
    limits, buckets = _expected_hist(values, edges, counts)
    assert h["bucket_limit"] == pytest.approx(limits, rel=1e-12)
    assert h["bucket"] == buckets
    assert h["min"] == values.min() and h["max"] == values.max() and h["num"] == values.size
    assert h["sum"] == pytest.approx(values.sum(), rel=1e-12)
    assert h["sum_squares"] == pytest.approx((values ** 2).sum(), rel=1e-12)


def test_histograms(tmp_path):
    rng = np.random.RandomState(3)
    a = rng.randn(2000) * 5
    b = rng.rand(300).astype(np.float32)
    c = np.array([1.0, 1.0, 2.0, 7.5])
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("default", a, 1)
        w.add_histogram("tensor", janus.tensor(b), 2, bins=10)
        w.add_histogram("edges", c, 3, bins=[0.0, 0.5, 1.5, 3.0, 8.0, 9.0])
        w.add_histogram("fd", a, 4, bins="fd")
        w.add_histogram("merged", a, 5, bins=40, max_bins=7)
        w.add_histogram_raw("raw", min=-1.0, max=3.0, num=4, sum=2.0, sum_squares=11.0,
                            bucket_limits=[0.0, 1.0, 3.0], bucket_counts=[1, 0, 3], global_step=6)
        with pytest.raises(ValueError, match="no element"):
            w.add_histogram("empty", np.zeros(0), 0)
        with pytest.raises(ValueError, match="bucket_limits"):
            w.add_histogram_raw("raw", 0, 0, 0, 0, 0, [1.0], [], 0)
    vals = summaries(tmp_path)
    assert [(s, v.tag) for s, v in vals] == [(1, "default"), (2, "tensor"), (3, "edges"), (4, "fd"),
                                            (5, "merged"), (6, "raw")]
    assert all(v.histo is not None and v.simple_value is None for _, v in vals)
    edges = _tf_edges()
    counts, _ = np.histogram(a, bins=edges)
    _check_hist(histo(vals[0][1].histo), a, edges, counts)
    b64 = b.astype(np.float64)
    counts, e = np.histogram(b64, bins=10)
    _check_hist(histo(vals[1][1].histo), b64, e, counts)
    h = histo(vals[2][1].histo)   # counts [0, 2, 1, 1, 0]: bins 1..3
    assert h["bucket_limit"] == [0.5, 1.5, 3.0, 8.0] and h["bucket"] == [0.0, 2.0, 1.0, 1.0]
    counts, e = np.histogram(a, bins="fd")
    _check_hist(histo(vals[3][1].histo), a, e, counts)
    # 40 bins, max 7: merged 5 at a time (40 // 7), 8 bins
    counts, e = np.histogram(a, bins=40)
    merged = counts.reshape(8, 5).sum(1)
    _check_hist(histo(vals[4][1].histo), a, np.append(e[:-1:5], e[-1]), merged)
    assert histo(vals[5][1].histo) == dict(min=-1.0, max=3.0, num=4.0, sum=2.0, sum_squares=11.0,
                                           bucket_limit=[0.0, 1.0, 3.0], bucket=[1.0, 0.0, 3.0])


def test_images(tmp_path):
    rng = np.random.RandomState(5)
    chw = rng.rand(3, 5, 7).astype(np.float32) * 1.2 - 0.1      # out of [0, 1]: clipped
    hwc = rng.randint(0, 256, (4, 6, 3)).astype(np.uint8)
    rgba = rng.randint(0, 256, (2, 3, 4)).astype(np.uint8)
    gray = rng.rand(4, 5)
    batch = rng.randint(0, 256, (10, 1, 2, 3)).astype(np.uint8)
    with SummaryWriter(tmp_path) as w:
        w.add_image("chw", janus.tensor(chw), 1)
        w.add_image("hwc", hwc, 2, dataformats="HWC")
        w.add_image("rgba", rgba, 3, dataformats="HWC")
        w.add_image("hw", gray, 4, dataformats="HW")
        w.add_images("nchw", janus.tensor(batch), 5)
        w.add_images("nhwc", batch.transpose(0, 2, 3, 1), 6, dataformats="NHWC")
        with pytest.raises(AssertionError, match="size of input tensor and input format are different"):
            w.add_image("bad", gray, 0)   # 2 dims, CHW
    vals = summaries(tmp_path)
    assert [(s, v.tag) for s, v in vals] == [(1, "chw"), (2, "hwc"), (3, "rgba"), (4, "hw"), (5, "nchw"),
                                            (6, "nhwc")]
    to8 = lambda x: (x.astype(np.float32) * 255).clip(0, 255).astype(np.uint8)  # noqa: E731
    exp = {"chw": to8(chw.transpose(1, 2, 0)), "hwc": hwc, "rgba": rgba,
           "hw": to8(np.stack([gray] * 3, 2))}
    # 10 one-channel images of 2x3, 8 per row: a 4x24 canvas, grey to RGB, the rest black
    grid = np.zeros((4, 24, 3), np.uint8)
    for k in range(10):
        r, col = divmod(k, 8)
        grid[r * 2:(r + 1) * 2, col * 3:(col + 1) * 3, :] = batch[k, 0][:, :, None]
    exp["nchw"] = exp["nhwc"] = grid
    for _, v in vals:
        h, wd, cs, px = image(v.image)
        e = exp[v.tag]
        assert (h, wd, cs) == e.shape and px.shape == e.shape
        np.testing.assert_array_equal(px, e)


def test_text_and_tensor(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_text("notes", "héllo **world**", 3)
        w.add_tensor("t", janus.tensor([[1.5, -2.0, 0.0]]), 4)
        w.add_tensor("i", janus.tensor([-3, 0, 2 ** 40]), 5)
    (s, v), (s2, v2), (s3, v3) = summaries(tmp_path)
    assert (s, v.tag, v.plugin_name, v.plugin_content, v.simple_value) == (3, "notes/text_summary", "text", b"", None)
    t = tensor(v.tensor)
    assert t["dtype"] == 7 and t["shape"] == [1] and t["string_val"] == ["héllo **world**".encode()]
    assert (s2, v2.tag, v2.plugin_name) == (4, "t", "tensor")
    t = tensor(v2.tensor)
    assert t["dtype"] == 1 and t["shape"] == [1, 3] and t["float_val"] == [1.5, -2.0, 0.0]
    t = tensor(v3.tensor)
    assert t["dtype"] == 9 and t["shape"] == [3] and t["int64_val"] == [-3, 0, 2 ** 40]


def _struct_value(raw):
    f = decode(raw)   # google.protobuf.Value: number 2, string 3, bool 4
    if 2 in f:
        return struct.unpack("<d", one(f, 2, 1))[0]
    if 3 in f:
        return one(f, 3, 2).decode()
    return bool(one(f, 4, 0))


def test_hparams(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_hparams({"lr": 0.01, "bsize": 32, "opt": "adam", "flag": True, "skip": None},
                      {"hparam/accuracy": 0.75, "hparam/loss": 1.5},
                      hparam_domain_discrete={"opt": ["adam", "sgd"]}, run_name="trial", global_step=4)
        with pytest.raises(TypeError, match="should be dictionary"):
            w.add_hparams([], {})
        with pytest.raises(ValueError, match="value should be one of"):
            w.add_hparams({"x": [1]}, {})
    assert summaries(tmp_path) == []
    vals = summaries(tmp_path / "trial")
    assert [(s, v.tag) for s, v in vals] == [(4, "_hparams_/experiment"), (4, "_hparams_/session_start_info"),
                                            (4, "_hparams_/session_end_info"), (4, "hparam/accuracy"),
                                            (4, "hparam/loss")]
    assert [v.simple_value for _, v in vals[3:]] == [0.75, 1.5]
    contents = []
    for _, v in vals[:3]:
        assert v.plugin_name == "hparams" and v.simple_value is None and v.tensor is None
        f = decode(v.plugin_content)    # HParamsPluginData: version 1, experiment 2, start 3, end 4
        assert one(f, 1, 0, 0) == 0
        contents.append(f)
    exp = decode(one(contents[0], 2, 2))
    infos = [decode(h) for _, h in exp.get(4, [])]       # HParamInfo: name 1, type 4, domain_discrete 5
    assert [(one(h, 1, 2).decode(), one(h, 4, 0)) for h in infos] == [("lr", 3), ("bsize", 3), ("opt", 1),
                                                                        ("flag", 3)]
    dom = [_struct_value(x) for _, x in decode(one(infos[2], 5, 2)).get(1, [])]
    assert dom == ["adam", "sgd"] and all(5 not in h for h in infos[:2] + infos[3:])
    metrics = [decode(one(decode(m), 1, 2)) for _, m in exp.get(5, [])]   # MetricInfo.name: group 1, tag 2
    assert [(one(m, 1, 2, b""), one(m, 2, 2)) for m in metrics] == [(b"", b"hparam/accuracy"), (b"", b"hparam/loss")]
    ssi = decode(one(contents[1], 3, 2))
    hp = {}
    for _, entry in ssi.get(1, []):
        e = decode(entry)
        hp[one(e, 1, 2).decode()] = _struct_value(one(e, 2, 2))
    assert hp == {"lr": 0.01, "bsize": 32.0, "opt": "adam", "flag": 1.0}   # torch writes a bool as a number
    assert one(decode(one(contents[2], 4, 2)), 1, 0) == 1                    # STATUS_SUCCESS


def test_purge_step(tmp_path):
    with SummaryWriter(tmp_path, purge_step=42) as w:
        w.add_scalar("x", 1.0, 42)
    e = events(only_file(tmp_path))
    assert e[0].file_version == "brain.Event:2" and e[0].step == 0
    assert (e[1].step, e[1].file_version, e[1].session_status) == (42, "brain.Event:2", None)
    assert (e[2].step, e[2].file_version, e[2].session_status) == (42, None, 1)   # SessionLog.START
    assert (e[3].step, e[3].values[0].simple_value) == (42, 1.0)


def test_queue_flush_close_and_reopen(tmp_path):
    w = SummaryWriter(tmp_path, max_queue=3, flush_secs=10 ** 6)
    path = only_file(tmp_path)
    w.add_scalar("a", 1.0, 0)
    w.add_scalar("a", 2.0, 1)
    assert len(read_records(path)) == 1          # two queued
    w.add_scalar("a", 3.0, 2)                    # the third fills the queue
    assert len(read_records(path)) == 4
    w.add_scalar("a", 4.0, 3)
    assert len(read_records(path)) == 4
    w.flush()
    assert len(read_records(path)) == 5
    w.add_scalar("a", 5.0, 4)
    w.close()
    w.close()                                    # a second close does nothing
    assert [v.simple_value for _, v in summaries(tmp_path)] == [1.0, 2.0, 3.0, 4.0, 5.0]
    w.add_scalar("a", 6.0, 5)                    # after close: a new file
    w.close()
    files = event_files(tmp_path)
    assert len(files) == 2
    assert [v.simple_value for e in events(files[1]) for v in e.values] == [6.0]
    # flush_secs elapsed (0): every add is written at once
    w = SummaryWriter(tmp_path / "now", flush_secs=0)
    w.add_scalar("b", 1.0, 0)
    assert len(read_records(only_file(tmp_path / "now"))) == 2
    w.close()


def test_pending_events_written_at_exit(tmp_path):
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.join(ROOT, 'python')!r})
        from janus.utils.tensorboard import SummaryWriter
        w = SummaryWriter({str(tmp_path / 'exit')!r})
        for i in range(3):
            w.add_scalar("x", i * 0.5, i)
        g = SummaryWriter({str(tmp_path / 'gc')!r})
        g.add_scalar("y", 7.0, 1)
        del g                       # collected unclosed: its queue is written
        print("ok")
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, JANUS_BUILD_DIR=BUILD))
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr
    assert [(s, v.simple_value) for s, v in summaries(tmp_path / "exit")] == [(0, 0.0), (1, 0.5), (2, 1.0)]
    assert [(s, v.simple_value) for s, v in summaries(tmp_path / "gc")] == [(1, 7.0)]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_forked_child_leaves_the_queue_to_the_parent(tmp_path):
    code = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {os.path.join(ROOT, 'python')!r})
        from janus.utils.tensorboard import SummaryWriter
        w = SummaryWriter({str(tmp_path)!r}, max_queue=100)
        w.add_scalar("x", 1.0, 0)
        w.add_scalar("x", 2.0, 1)
        pid = os.fork()
        if pid == 0:
            sys.exit(0)             # a normal exit: the interpreter's finalizers run in the child
        os.waitpid(pid, 0)
        w.add_scalar("x", 3.0, 2)
        w.close()
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, JANUS_BUILD_DIR=BUILD))
    assert p.returncode == 0, p.stderr
    assert [(s, v.simple_value) for s, v in summaries(tmp_path)] == [(0, 1.0), (1, 2.0), (2, 3.0)]


def test_unsupported_methods_are_refused_by_name(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for name, alt in (("add_graph", "print(model)"), ("add_embedding", "numpy.savetxt"),
                          ("add_audio", "wave"), ("add_video", "add_images"), ("add_figure", "add_image"),
                          ("add_pr_curve", "add_scalar"), ("add_mesh", "numpy.save"),
                          ("add_custom_scalars", "add_scalars")):
            with pytest.raises(AttributeError) as e:
                getattr(w, name)(None)
            assert isinstance(e.value, janus._unsupported.Unsupported)
            msg = str(e.value)
            assert msg.startswith(f"janus.utils.tensorboard.SummaryWriter.{name} is not supported by janus "
                                  f"(test_tensorboard.py:"), msg
            assert alt in msg
        with pytest.raises(AttributeError, match="^'SummaryWriter' object has no attribute 'my_own'$"):
            w.my_own


def _tensorboard():
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    except Exception:
        pytest.skip("tensorboard not importable")
    return EventAccumulator


def test_tensorboard_event_accumulator_reads_the_files(tmp_path):
    EventAccumulator = _tensorboard()
    img = np.random.RandomState(0).rand(3, 4, 5)
    with SummaryWriter(tmp_path) as w:
        for i in range(4):
            w.add_scalar("loss", 1.0 / (i + 1), i)
        w.add_histogram("w", np.arange(10.0), 1)
        w.add_image("img", img, 2)
        w.add_text("note", "hi", 3)
    acc = EventAccumulator(str(tmp_path), size_guidance={"tensors": 0, "scalars": 0, "images": 0})
    acc.Reload()
    assert [(e.step, e.value) for e in acc.Scalars("loss")] == [(i, pytest.approx(1.0 / (i + 1))) for i in range(4)]
    h = acc.Histograms("w")[0].histogram_value
    assert (h.min, h.max, h.num, h.sum) == (0.0, 9.0, 10.0, 45.0)
    im = acc.Images("img")[0]
    assert (im.step, im.height, im.width) == (2, 4, 5)
    assert acc.Tensors("note/text_summary")[0].tensor_proto.string_val == [b"hi"]


def _hp_canon(content):
    """HParamsPluginData with SessionStartInfo's map entries sorted (protobuf
    writes a map in no set order)."""
    if content is None:
        return None
    f = decode(content)
    if 3 in f:
        f[3] = sorted(v for _, v in decode(one(f, 3, 2)).get(1, []))
    return f


def test_same_records_as_torchs_writer(tmp_path):
    """Records equal byte for byte to torch.utils.tensorboard's, images aside
    (PNG compression differs) and the file-version record's wall time."""
    try:
        import torch
        from torch.utils.tensorboard import SummaryWriter as TorchWriter
    except Exception:
        pytest.skip("torch with tensorboard not importable")
    if torch is janus:
        pytest.skip("torch is janus here")
    rng = np.random.RandomState(1)
    vals = rng.randn(500) * 4
    ints = np.arange(-3, 3).reshape(2, 3)

    def log(W, T, d):
        with W(d, purge_step=5) as w:
            for i in range(3):
                w.add_scalar("loss", T.tensor(1.0 / (i + 1)), i, walltime=10.0 + i)
            w.add_scalar("big", 1e40, 3, walltime=1.0)
            w.add_scalar("ns", 0.0, 0, walltime=1.0, new_style=True)
            w.add_scalar("nsd", -2.5, 5, walltime=1.0, new_style=True, double_precision=True)
            w.add_scalars("m/x", {"a": 1.0, "b": 2.5}, 4, walltime=2.0)
            w.add_histogram("h", vals, 1, walltime=3.0)
            w.add_histogram("h", T.tensor(vals), 2, walltime=3.0, bins=7)
            w.add_histogram("hm", vals, 2, walltime=3.0, bins="auto", max_bins=5)
            w.add_histogram("hz", np.zeros(10), 2, walltime=3.0)
            w.add_text("t", "héllo", -3, walltime=4.0)
            for dt in (np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_):
                w.add_tensor("t_" + np.dtype(dt).name, T.tensor(ints.astype(dt)), walltime=6.0)
            w.add_hparams({"lr": 0.1, "bs": 32, "opt": "adam", "flag": True}, {"hp/acc": 0.9},
                          hparam_domain_discrete={"opt": ["adam", "sgd"], "bs": [16, 32]}, run_name="hp")

    log(TorchWriter, torch, str(tmp_path / "torch"))
    log(SummaryWriter, janus, str(tmp_path / "janus"))
    for sub in ("", "m_x_a", "m_x_b", "hp"):
        ra = read_records(only_file(tmp_path / "torch" / sub))
        rb = read_records(only_file(tmp_path / "janus" / sub))
        assert len(ra) == len(rb)
        for x, y in zip(ra[1:], rb[1:]):
            ex, ey = Ev(x), Ev(y)
            if ex.file_version or ex.session_status:   # purge_step's records: the clock's wall time
                assert (ex.step, ex.file_version, ex.session_status) == (ey.step, ey.file_version, ey.session_status)
            elif sub == "hp":   # the hparams run's wall times are the clock's, map entries in any order
                canon = lambda e: [(v.tag, v.simple_value, _hp_canon(v.plugin_content)) for v in e.values]  # noqa
                assert ex.step == ey.step and canon(ex) == canon(ey)
            else:
                assert x == y, (sub, ex.values[0].tag if ex.values else ex.step)


SCRIPT = """
    import sys
    import torch
    import torch.nn as nn
    from torch.utils.tensorboard import SummaryWriter

    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(16, 4)
    y = x.sum(1, keepdim=True)
    writer = SummaryWriter(sys.argv[1])
    for step in range(5):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        writer.add_scalar("Loss/train", loss.item(), step)
        print(repr(loss.item()))
    writer.add_histogram("weight", model.weight, 4)
    writer.close()
"""


@pytest.mark.skipif(not os.path.exists(JANUS), reason=f"{JANUS} not built")
def test_pytorch_script_under_janus_run(tmp_path):
    s = tmp_path / "train.py"
    s.write_text(textwrap.dedent(SCRIPT))
    env = dict(os.environ, JANUS_BUILD_DIR=BUILD,
               PYTHONPATH=os.path.join(ROOT, "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for k in ("JANUS_RECORD_DB", "JANUS_RECORD_RUN", "JANUS_REPLAY_DB", "JANUS_REPLAY_RUN", "JANUS_PYTHON"):
        env.pop(k, None)
    logdir = tmp_path / "runs" / "exp"
    p = subprocess.run([JANUS, "run", "--", sys.executable, str(s), str(logdir)], capture_output=True, text=True,
                       cwd=tmp_path, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    losses = [float(line) for line in p.stdout.split()]
    assert len(losses) == 5 and losses[-1] < losses[0]
    vals = summaries(logdir)
    assert [(st, v.tag) for st, v in vals] == [(i, "Loss/train") for i in range(5)] + [(4, "weight")]
    assert [v.simple_value for _, v in vals[:5]] == [float(np.float32(l)) for l in losses]
    h = histo(vals[5][1].histo)
    assert h["num"] == 4 and sum(h["bucket"]) == 4
    c = subprocess.run([JANUS, "check", str(s)], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert c.returncode == 0 and c.stdout == "", c.stdout + c.stderr
