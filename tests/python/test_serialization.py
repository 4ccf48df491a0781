"""janus.save / janus.load in PyTorch's checkpoint format.

Without PyTorch: round trips of every dtype and layout (views stay views of
one storage), Parameters, optimizer state and training resumed bitwise,
whole modules, the zip layout checked with zipfile/pickletools (record
names, 64-byte alignment, the pickled globals and persistent ids), the
legacy format, weights_only's allow-list and PyTorch's error text,
map_location, byte order, and clear errors for what janus cannot load.

With PyTorch installed (run in a subprocess: janus never imports it), files
go both ways: what janus saved loads in torch (values, dtypes, sharing,
requires_grad, Parameter type, an optimizer that keeps stepping, a whole
module), and what torch saved loads in janus."""
import collections
import importlib.util
import io
import json
import os
import pickle
import pickletools
import re
import subprocess
import sys
import zipfile

import pytest

import janus
import janus.nn as nn
import janus.optim as optim
from janus import serialization

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool"]


def values(name, n):
    """n deterministic values of a dtype, exact in it (a list)."""
    if name == "bool":
        return [i % 3 == 0 for i in range(n)]
    if name in ("int64", "int32", "uint8"):
        big = {"int64": 2 ** 40, "int32": 2 ** 30, "uint8": 1}[name]
        return [(i * 37 % 251) * big - (0 if name == "uint8" else 125 * big) for i in range(n)]
    return [(i - n / 2) * 0.25 for i in range(n)]


def sample(name, n=12):
    return janus.tensor(values(name, n), dtype=getattr(janus, name))


def as_list(t):
    return (t.float() if t.dtype == janus.bfloat16 else t).tolist()


def flat(x):
    return [v for row in x for v in flat(row)] if isinstance(x, list) else [x]


def roundtrip(obj, **kw):
    buf = io.BytesIO()
    janus.save(obj, buf)
    buf.seek(0)
    return janus.load(buf, **kw)


# ---------------------------------------------------------------- janus only
@pytest.mark.parametrize("name", DTYPES)
def test_every_dtype_and_layout_round_trips(name):
    base = sample(name, 24).view(4, 6)
    obj = {"base": base, "t": base.t(), "slice": base[1:3, 2:], "row": base[2], "scalar": base[3, 5],
           "empty": base[:0], "fresh": sample(name, 5)}
    out = roundtrip(obj)
    for k, v in obj.items():
        assert out[k].dtype == v.dtype and tuple(out[k].shape) == tuple(v.shape), k
        assert as_list(out[k]) == as_list(v), k
        assert out[k].stride() == v.stride() and out[k].storage_offset() == v.storage_offset(), k
    # views of one storage come back as views of one storage
    for k in ("t", "slice", "row", "scalar"):
        assert out[k]._shares_storage(out["base"]), k
    assert not out["fresh"]._shares_storage(out["base"])
    if name == "float32":
        out["base"][1, 2] = 99.0
        assert out["slice"][0, 0].item() == 99.0 and out["t"][2, 1].item() == 99.0


def test_parameters_requires_grad_and_plain_values():
    p = nn.Parameter(janus.arange(6.0).view(2, 3))
    frozen = nn.Parameter(janus.ones(2), requires_grad=False)
    leaf = janus.arange(3.0).requires_grad_()
    obj = {"p": p, "p_again": p, "frozen": frozen, "leaf": leaf, "view_of_p": p.detach()[1],
           "py": [1, 2.5, "s", None, True, (3, 4), {5, 6}, b"raw", 1 + 2j, float("inf")],
           "od": collections.OrderedDict(a=1), "counter": collections.Counter("aab"),
           "dtype": janus.bfloat16, "size": janus.Size([2, 3]), "device": janus.device("cpu")}
    out = roundtrip(obj)
    assert type(out["p"]) is nn.Parameter and out["p"].requires_grad and out["p_again"] is out["p"]
    assert type(out["frozen"]) is nn.Parameter and not out["frozen"].requires_grad
    assert type(out["leaf"]) is janus.Tensor and out["leaf"].requires_grad
    assert out["view_of_p"]._shares_storage(out["p"]) and as_list(out["view_of_p"]) == [3.0, 4.0, 5.0]
    assert out["py"] == obj["py"]
    assert type(out["od"]) is collections.OrderedDict and out["counter"] == collections.Counter("aab")
    assert out["dtype"] is janus.bfloat16 and out["size"] == janus.Size([2, 3])
    assert isinstance(out["size"], janus.Size) and out["device"] == janus.device("cpu")


def test_zip_layout_is_pytorchs(tmp_path):
    path = tmp_path / "model.pt"
    x = janus.arange(10.0)
    janus.save({"a": x, "b": x[3:], "c": janus.ones(3, dtype=janus.bfloat16)}, path)
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        assert names == ["model/data.pkl", "model/.format_version", "model/.storage_alignment", "model/byteorder",
                         "model/data/0", "model/data/1", "model/version", "model/.data/serialization_id"]
        assert all(i.compress_type == zipfile.ZIP_STORED for i in zf.infolist())
        assert zf.read("model/byteorder") == b"little" and zf.read("model/version") == b"3\n"
        assert zf.read("model/.storage_alignment") == b"64" and zf.read("model/.format_version") == b"1"
        assert re.fullmatch(rb"\d{40}", zf.read("model/.data/serialization_id"))
        assert zf.read("model/data/0") == b"".join(_f32(i) for i in range(10))
        assert len(zf.read("model/data/1")) == 6  # 3 bfloat16
        raw = path.read_bytes()
        for info in zf.infolist():  # every record's data starts 64-byte aligned (mmap loading needs it)
            n, e = int.from_bytes(raw[info.header_offset + 26:info.header_offset + 28], "little"), \
                int.from_bytes(raw[info.header_offset + 28:info.header_offset + 30], "little")
            assert (info.header_offset + 30 + n + e) % 64 == 0, info.filename
        pkl = zf.read("model/data.pkl")
    ops = list(pickletools.genops(pkl))
    assert ops[0][0].name == "PROTO" and ops[0][1] == 2
    globals_ = {arg for op, arg, _ in ops if op.name == "GLOBAL"}
    assert globals_ == {"torch._utils _rebuild_tensor_v2", "torch FloatStorage", "torch BFloat16Storage",
                        "collections OrderedDict"}
    strings = [arg for op, arg, _ in ops if op.name == "BINUNICODE"]
    assert strings.count("storage") == 1 and "cpu" in strings  # the persistent id tuple, memoized
    buf = io.BytesIO()
    janus.save(x, buf)
    assert zipfile.ZipFile(buf).namelist()[0] == "archive/data.pkl"


def _f32(i):
    import struct
    return struct.pack("<f", float(i))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.bn = nn.BatchNorm1d(4)
        self.head = nn.Linear(4, 2)
        self.head.weight = nn.Parameter(janus.ones(2, 4))
        self.register_buffer("scale", janus.tensor([2.0]))
        self.register_buffer("scratch", janus.zeros(1), persistent=False)

    def forward(self, x):
        return self.head(janus.relu(self.bn(self.fc(x)))) * self.scale


def test_whole_module_and_weights_only():
    janus.manual_seed(0)
    m = Net()
    m.train()
    m(janus.randn(5, 3))  # running stats move
    m.eval()
    x = janus.randn(4, 3)
    buf = io.BytesIO()
    janus.save(m, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError) as ei:
        janus.load(buf)
    msg = str(ei.value)
    assert msg.startswith("Weights only load failed.") and "weights_only` set to `False`" in msg
    assert (f"GLOBAL {__name__}.Net was not an allowed global by default. Please use "
            f"`torch.serialization.add_safe_globals([{__name__}.Net])`") in msg
    buf.seek(0)
    m2 = janus.load(buf, weights_only=False)
    assert type(m2) is Net and not m2.training and m2.scratch is not None
    assert "scratch" not in m2.state_dict() and "_non_persistent_buffers_set" not in m2.__dict__
    assert as_list(m2(x)) == as_list(m(x))
    buf.seek(0)
    with serialization.safe_globals([Net, nn.Linear, nn.BatchNorm1d, set]):
        m3 = janus.load(buf)
    assert as_list(m3(x)) == as_list(m(x))
    assert serialization.get_safe_globals() == []
    buf.seek(0)
    assert serialization.get_unsafe_globals_in_checkpoint(buf) == [
        f"{__name__}.Net", "torch.nn.modules.batchnorm.BatchNorm1d", "torch.nn.modules.linear.Linear"]


def test_janus_objects_are_written_under_pytorch_names():
    layer = nn.TransformerEncoderLayer(8, 2, 16)  # holds a function (F.relu) as an attribute
    obj = {"layer": layer, "rnn": nn.LSTM(2, 3), "fn": nn.functional.gelu, "opt": optim.SGD, "dt": janus.int64}
    buf = io.BytesIO()
    janus.save(obj, buf)
    pkl = zipfile.ZipFile(buf).read("archive/data.pkl")
    globals_ = {arg for op, arg, _ in pickletools.genops(pkl) if op.name == "GLOBAL"}
    assert not [g for g in globals_ if "janus" in g], globals_
    assert {"torch.nn.functional relu", "torch.nn.functional gelu", "torch.optim.sgd SGD", "torch int64",
            "torch.nn.modules.transformer TransformerEncoderLayer", "torch.nn.modules.rnn LSTM"} <= globals_
    buf.seek(0)
    back = janus.load(buf, weights_only=False)
    assert back["fn"] is nn.functional.gelu and back["opt"] is optim.SGD and back["layer"].activation is \
        nn.functional.relu


def _zip_with_pickle(pkl):
    buf = io.BytesIO()
    serialization._write_zip(buf, "archive", [("data.pkl", pkl), ("version", b"3\n")])
    buf.seek(0)
    return buf


class Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


class Eval:
    def __reduce__(self):
        return (eval, ("1+1",))


def test_weights_only_refuses_code():
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL posix.system whose module posix is blocked|"
                                                     r"module (posix|os) is blocked"):
        janus.load(_zip_with_pickle(pickle.dumps(Evil(), protocol=2)))
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL eval was not an allowed global by default"):
        janus.load(_zip_with_pickle(pickle.dumps(Eval(), protocol=2)))
    assert janus.load(_zip_with_pickle(pickle.dumps(Eval(), protocol=2)), weights_only=False) == 2
    # protocol 4/5 pickles go through the same rules
    data = pickle.dumps({"k": [1, 2.0, "x", b"y", (None,)], "s": {1}, "f": frozenset({2})}, protocol=5)
    assert janus.load(_zip_with_pickle(data)) == {"k": [1, 2.0, "x", b"y", (None,)], "s": {1}, "f": frozenset({2})}
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL eval was not"):
        janus.load(_zip_with_pickle(pickle.dumps(Eval(), protocol=4)))


def test_numpy_needs_weights_only_false_or_allowlist():
    np = pytest.importorskip("numpy")
    a = np.arange(6).reshape(2, 3)
    buf = io.BytesIO()
    janus.save({"a": a}, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="was not an allowed global by default"):
        janus.load(buf)
    buf.seek(0)
    np.testing.assert_array_equal(janus.load(buf, weights_only=False)["a"], a)


def test_optimizer_and_training_resume_bitwise(tmp_path):
    from janus.optim import lr_scheduler
    F = nn.functional

    def build():
        janus.manual_seed(1)
        m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
        opt = optim.AdamW(m.parameters(), lr=0.01, weight_decay=0.1)
        return m, opt, lr_scheduler.CosineAnnealingLR(opt, T_max=6)

    def train(m, opt, sched, data):
        losses = []
        for x, y in data:
            opt.zero_grad()
            loss = F.cross_entropy(m(x), y, label_smoothing=0.1)
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
        return losses

    janus.manual_seed(0)
    data = [(janus.randn(16, 4), janus.randint(0, 3, (16,))) for _ in range(6)]
    m, opt, sched = build()
    train(m, opt, sched, data[:3])
    p = tmp_path / "ckpt.pt"
    janus.save({"model": m.state_dict(), "optim": opt.state_dict(), "sched": sched.state_dict(), "epoch": 3}, p)
    tail = train(m, opt, sched, data[3:])
    m2, opt2, sched2 = build()
    ck = janus.load(p)
    assert ck["epoch"] == 3
    m2.load_state_dict(ck["model"])
    opt2.load_state_dict(ck["optim"])
    sched2.load_state_dict(ck["sched"])
    assert train(m2, opt2, sched2, data[3:]) == tail
    for a, b in zip(m.parameters(), m2.parameters()):
        assert as_list(a) == as_list(b)


def test_legacy_format_round_trip(tmp_path):
    x = janus.arange(8.0)
    obj = {"x": x, "v": x[2:5], "p": nn.Parameter(janus.ones(2)), "h": sample("bfloat16", 4), "n": 1}
    p = tmp_path / "old.pt"
    janus.save(obj, p, _use_new_zipfile_serialization=False)
    assert not zipfile.is_zipfile(p)
    out = janus.load(p)
    assert as_list(out["v"]) == [2.0, 3.0, 4.0] and out["v"]._shares_storage(out["x"])
    assert type(out["p"]) is nn.Parameter and as_list(out["h"]) == as_list(obj["h"]) and out["n"] == 1
    with pytest.raises(RuntimeError, match="mmap can only be used"):
        janus.load(p, mmap=True)


def _rewrite(path, edit):
    """A copy of a checkpoint with its records edited: edit({name: bytes}) -> {name: bytes}."""
    with zipfile.ZipFile(path) as zf:
        recs = {n: zf.read(n) for n in zf.namelist()}
    recs = edit(recs)
    buf = io.BytesIO()
    serialization._write_zip(buf, "archive", [(n.split("/", 1)[1], d) for n, d in recs.items()])
    buf.seek(0)
    return buf


def test_map_location_and_devices(tmp_path):
    p = tmp_path / "t.pt"
    janus.save({"x": janus.arange(3.0)}, p)
    assert as_list(janus.load(p, map_location="cpu")["x"]) == [0.0, 1.0, 2.0]
    assert as_list(janus.load(p, map_location=janus.device("cpu"))["x"]) == [0.0, 1.0, 2.0]
    seen = []
    out = janus.load(p, map_location=lambda s, loc: seen.append(loc) or s)
    assert seen == ["cpu"] and as_list(out["x"]) == [0.0, 1.0, 2.0]

    def to_cuda(recs):
        k = next(n for n in recs if n.endswith("data.pkl"))
        recs[k] = recs[k].replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")
        return recs
    cuda_file = _rewrite(p, to_cuda)
    if not janus.cuda.is_available():
        with pytest.raises(RuntimeError, match=r"Attempting to deserialize object on a CUDA device but "
                                               r"torch.cuda.is_available\(\) is False.*map_location"):
            janus.load(cuda_file)
        cuda_file.seek(0)
    for ml in ("cpu", {"cuda:0": "cpu"}, lambda s, loc: s.cpu()):
        cuda_file.seek(0)
        x = janus.load(cuda_file, map_location=ml)["x"]
        assert x.device.type == "cpu" and as_list(x) == [0.0, 1.0, 2.0]


def test_big_endian_files_are_byteswapped(tmp_path):
    p = tmp_path / "t.pt"
    janus.save({"x": janus.tensor([1.5, -2.0, 3.25]), "i": janus.tensor([1, 256], dtype=janus.int32)}, p)

    def to_big(recs):
        out = {}
        for n, d in recs.items():
            if n.endswith("/byteorder"):
                d = b"big"
            elif "/data/" in n:
                d = serialization._byteswap(d, 4)
            out[n] = d
        return out
    out = janus.load(_rewrite(p, to_big))
    assert as_list(out["x"]) == [1.5, -2.0, 3.25] and out["i"].tolist() == [1, 256]


def test_clear_errors(tmp_path):
    p = tmp_path / "t.pt"
    janus.save({"x": janus.arange(4.0)}, p)
    with pytest.raises(FileNotFoundError, match="no such file"):
        janus.load(tmp_path / "missing.pt")
    (tmp_path / "empty.pt").write_bytes(b"")
    with pytest.raises(EOFError, match="empty"):
        janus.load(tmp_path / "empty.pt")
    (tmp_path / "junk.pt").write_bytes(b"hello world, not a checkpoint")
    with pytest.raises(pickle.UnpicklingError, match="not a PyTorch checkpoint"):
        janus.load(tmp_path / "junk.pt")
    short = _rewrite(p, lambda r: {n: (d[:-4] if "/data/" in n else d) for n, d in r.items()})
    with pytest.raises(pickle.UnpicklingError, match=r"storage 0: the file holds 12 bytes, the pickle says 4"):
        janus.load(short)
    nodata = _rewrite(p, lambda r: {n: d for n, d in r.items() if "/data/" not in n})
    with pytest.raises(pickle.UnpicklingError, match="no record archive/data/0"):
        janus.load(nodata)
    ts = _rewrite(p, lambda r: dict(r, **{"t/constants.pkl": b""}))
    with pytest.raises(RuntimeError, match="TorchScript"):
        janus.load(ts)
    with pytest.raises(RuntimeError, match="explicit pickle_module"):
        janus.load(p, pickle_module=pickle, weights_only=True)
    with pytest.raises(ValueError, match="mmap argument"):
        janus.load(io.BytesIO(p.read_bytes()), mmap=True)
    assert as_list(janus.load(p, mmap=True)["x"]) == [0.0, 1.0, 2.0, 3.0]

    def int8(recs):
        k = next(n for n in recs if n.endswith("data.pkl"))
        recs[k] = recs[k].replace(b"ctorch\nFloatStorage\n", b"ctorch\nCharStorage\n")
        return recs
    with pytest.raises(serialization.UnsupportedCheckpointError,
                       match=r"janus.load\(.*\): the checkpoint holds a torch.CharStorage \(dtype int8\)"):
        janus.load(_rewrite(p, int8))


def test_safetensors_files_still_load(tmp_path):
    p = tmp_path / "old.pt"
    serialization.save_safetensors({"w": janus.arange(3.0), "n": 2, "x": [janus.ones(1)]}, p)
    out = janus.load(p)
    assert as_list(out["w"]) == [0.0, 1.0, 2.0] and out["n"] == 2 and as_list(out["x"][0]) == [1.0]


def test_failed_save_leaves_no_file(tmp_path):
    p = tmp_path / "a.pt"
    janus.save({"x": janus.ones(2)}, p)
    with pytest.raises((pickle.PicklingError, TypeError, AttributeError)):
        janus.save({"x": janus.ones(2), "bad": lambda: 1}, p)
    assert as_list(janus.load(p)["x"]) == [1.0, 1.0] and os.listdir(tmp_path) == ["a.pt"]


# ------------------------------------------------------------ with PyTorch
def _torch_available():
    spec = importlib.util.find_spec("torch")
    return spec is not None and spec.origin is not None and "janus" not in spec.origin


needs_torch = pytest.mark.skipif(not _torch_available(), reason="PyTorch is not installed")

NETDEF = """
import {mod} as torch
import {mod}.nn as nn


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, padding=1)
        self.bn = nn.BatchNorm2d(2)
        self.fc = nn.Linear(32, 3)
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))

    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.conv(x))).flatten(1))
"""

TORCH_SIDE = r"""
import json, sys, torch
sys.path.insert(0, "torchdef")
from netdef import TinyNet
out = {}

def lst(t):
    return (t.float() if t.dtype == torch.bfloat16 else t).tolist()

# what janus saved
sd = torch.load("janus/dtypes.pt")
out["dtypes"] = {k: [str(v.dtype), list(v.shape), list(v.stride()), v.storage_offset(), lst(v)] for k, v in sd.items()}
out["shared"] = sd["float32_view"].untyped_storage().data_ptr() == sd["float32"].untyped_storage().data_ptr()
p = torch.load("janus/param.pt")
out["param"] = [type(p["p"]).__name__, p["p"].requires_grad, p["leaf"].requires_grad, lst(p["p"])]
leg = torch.load("janus/legacy.pt")
out["legacy"] = [lst(leg["v"]), leg["v"].untyped_storage().data_ptr() == leg["x"].untyped_storage().data_ptr()]
m = torch.load("janus/module.pt", weights_only=False)
x = torch.arange(32.).view(2, 1, 4, 4) / 10
m.eval()
out["module_out"] = lst(m(x))
ck = torch.load("janus/optim.pt")
lin = torch.nn.Linear(3, 2)
lin.load_state_dict(ck["model"])
opt = torch.optim.Adam(lin.parameters(), lr=0.1)
opt.load_state_dict(ck["optim"])
opt.zero_grad()
lin(torch.arange(6.).view(2, 3)).pow(2).sum().backward()
opt.step()
out["optim_next"] = lst(lin.weight)

layers = torch.load("janus/layers.pt", weights_only=False)
xs = torch.arange(16.).view(1, 2, 8) / 10
out["layers_out"] = [lst(layers["rnn"][1](layers["rnn"][0](xs[..., :3])[0])[0]), lst(layers["tel"](xs))]

# what torch saves for janus
torch.manual_seed(0)
tl = {"rnn": torch.nn.Sequential(torch.nn.LSTM(3, 4, batch_first=True), torch.nn.GRU(4, 2, num_layers=2)),
      "tel": torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True).eval()}
torch.save(tl, "torch/layers.pt")
out["torch_layers_out"] = [lst(tl["rnn"][1](tl["rnn"][0](xs[..., :3])[0])[0]), lst(tl["tel"](xs))]
x = torch.arange(24.).view(4, 6)
d = {}
for name in ["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool"]:
    t = (x * 0.25 - 3).to(getattr(torch, name)) if name != "bool" else (x.long() % 3 == 0)
    d[name] = t
    d[name + "_view"] = t.t()[1:, 2:]
torch.save(d, "torch/dtypes.pt")
torch.manual_seed(0)
net = TinyNet()
net(torch.randn(3, 1, 4, 4))
net.steps += 5
net.eval()
torch.save(net, "torch/module.pt")
torch.save(net.state_dict(), "torch/state.pt")
out["torch_module_out"] = lst(net(torch.arange(32.).view(2, 1, 4, 4) / 10))
lin = torch.nn.Linear(3, 2)
opt = torch.optim.Adam(lin.parameters(), lr=0.1)
for _ in range(2):
    opt.zero_grad()
    lin(torch.arange(6.).view(2, 3)).pow(2).sum().backward()
    opt.step()
torch.save({"model": lin.state_dict(), "optim": opt.state_dict()}, "torch/optim.pt")
opt.zero_grad()
lin(torch.arange(6.).view(2, 3)).pow(2).sum().backward()
opt.step()
out["torch_optim_next"] = lst(lin.weight)
y = torch.arange(5.)
torch.save({"y": y, "v": y[1:3]}, "torch/legacy.pt", _use_new_zipfile_serialization=False)
torch.save({"y": y}, "torch/proto4.pt", pickle_protocol=4)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def exchange(tmp_path_factory):
    """janus saves its files, a PyTorch subprocess loads them and saves its own."""
    root = tmp_path_factory.mktemp("exchange")
    for side, mod in (("janusdef", "janus"), ("torchdef", "torch")):
        (root / side).mkdir()
        (root / side / "netdef.py").write_text(NETDEF.format(mod=mod))
    (root / "janus").mkdir()
    (root / "torch").mkdir()
    x = janus.arange(24.0).view(4, 6)
    d = {}
    for name in DTYPES:
        t = (x * 0.25 - 3).to(getattr(janus, name)) if name != "bool" else (x.long() % 3 == 0)
        d[name] = t
        d[name + "_view"] = t.t()[1:, 2:]
    janus.save(d, root / "janus" / "dtypes.pt")
    janus.save({"p": nn.Parameter(janus.tensor([1.0, 2.0])), "leaf": janus.ones(2).requires_grad_()},
               root / "janus" / "param.pt")
    y = janus.arange(5.0)
    janus.save({"x": y, "v": y[1:4]}, root / "janus" / "legacy.pt", _use_new_zipfile_serialization=False)
    sys.path.insert(0, str(root / "janusdef"))
    try:
        from netdef import TinyNet
    finally:
        sys.path.pop(0)
    janus.manual_seed(0)
    net = TinyNet()
    net(janus.randn(3, 1, 4, 4))
    net.eval()
    janus.save(net, root / "janus" / "module.pt")
    lin = nn.Linear(3, 2)
    opt = optim.Adam(lin.parameters(), lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        lin(janus.arange(6.0).view(2, 3)).pow(2).sum().backward()
        opt.step()
    janus.save({"model": lin.state_dict(), "optim": opt.state_dict()}, root / "janus" / "optim.pt")
    opt.zero_grad()
    lin(janus.arange(6.0).view(2, 3)).pow(2).sum().backward()
    opt.step()
    layers = {"rnn": nn.Sequential(nn.LSTM(3, 4, batch_first=True), nn.GRU(4, 2, num_layers=2)),
              "tel": nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True).eval()}
    janus.save(layers, root / "janus" / "layers.pt")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    p = subprocess.run([sys.executable, "-c", TORCH_SIDE], cwd=root, capture_output=True, text=True, timeout=300,
                       env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    return root, json.loads(p.stdout.strip().splitlines()[-1]), {"net": net, "lin": lin, "d": d, "layers": layers}


def _layers_out(layers):
    xs = janus.arange(16.0).view(1, 2, 8) / 10
    return [flat(as_list(layers["rnn"][1](layers["rnn"][0](xs[..., :3])[0])[0])), flat(as_list(layers["tel"](xs)))]


@needs_torch
def test_torch_loads_what_janus_saved(exchange):
    root, out, ours = exchange
    for k, t in ours["d"].items():
        dtype, shape, stride, offset, vals = out["dtypes"][k]
        assert dtype == f"torch.{t.dtype._name}" and shape == list(t.shape), k
        assert stride == list(t.stride()) and offset == t.storage_offset(), k
        assert vals == as_list(t), k
    assert out["shared"]
    assert out["param"] == ["Parameter", True, True, [1.0, 2.0]]
    assert out["legacy"] == [[1.0, 2.0, 3.0], True]
    x = janus.arange(32.0).view(2, 1, 4, 4) / 10
    assert flat(out["module_out"]) == pytest.approx(flat(as_list(ours["net"](x))), abs=1e-6)
    # Adam went on from janus's state in torch as it did in janus (float32 arithmetic of two libraries)
    assert flat(out["optim_next"]) == pytest.approx(flat(as_list(ours["lin"].weight)), abs=1e-6)
    # whole PyTorch layers pickled by janus (RNNs, a Transformer layer) run in torch as in janus
    for theirs, mine in zip(out["layers_out"], _layers_out(ours["layers"])):
        assert flat(theirs) == pytest.approx(mine, abs=1e-5)


@needs_torch
def test_janus_loads_what_torch_saved(exchange):
    root, out, _ = exchange
    d = janus.load(root / "torch" / "dtypes.pt")
    for name in DTYPES:
        t, v = d[name], d[name + "_view"]
        assert t.dtype == getattr(janus, name) and v._shares_storage(t)
        ref = janus.arange(24.0).view(4, 6)
        ref = (ref * 0.25 - 3).to(t.dtype) if name != "bool" else (ref.long() % 3 == 0)
        assert as_list(t) == as_list(ref) and as_list(v) == as_list(ref.t()[1:, 2:])
    sys.path.insert(0, str(root / "janusdef"))
    try:
        net = janus.load(root / "torch" / "module.pt", weights_only=False)
        from netdef import TinyNet
    finally:
        sys.path.pop(0)
    x = janus.arange(32.0).view(2, 1, 4, 4) / 10
    assert type(net).__name__ == "TinyNet" and net.steps.item() == 5 and not net.training
    assert flat(as_list(net(x))) == pytest.approx(flat(out["torch_module_out"]), abs=1e-6)
    fresh = TinyNet()
    fresh.load_state_dict(janus.load(root / "torch" / "state.pt"))
    fresh.eval()
    assert flat(as_list(fresh(x))) == pytest.approx(flat(out["torch_module_out"]), abs=1e-6)
    ck = janus.load(root / "torch" / "optim.pt")
    lin = nn.Linear(3, 2)
    lin.load_state_dict(ck["model"])
    opt = optim.Adam(lin.parameters(), lr=0.1)
    opt.load_state_dict(ck["optim"])
    opt.zero_grad()
    lin(janus.arange(6.0).view(2, 3)).pow(2).sum().backward()
    opt.step()
    assert flat(as_list(lin.weight)) == pytest.approx(flat(out["torch_optim_next"]), abs=1e-6)
    for theirs, mine in zip(out["torch_layers_out"], _layers_out(janus.load(root / "torch" / "layers.pt",
                                                                             weights_only=False))):
        assert mine == pytest.approx(flat(theirs), abs=1e-5)
    leg = janus.load(root / "torch" / "legacy.pt")
    assert as_list(leg["v"]) == [1.0, 2.0] and leg["v"]._shares_storage(leg["y"])
    assert as_list(janus.load(root / "torch" / "proto4.pt")["y"]) == [0.0, 1.0, 2.0, 3.0, 4.0]
