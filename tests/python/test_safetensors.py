"""janus.serialization.save_safetensors / load_safetensors (and janus.load
of a safetensors file, what janus.save wrote before it wrote PyTorch's
format): round trips of every dtype, shape
and layout, nested structures, optimizer state dicts; the on-disk layout
(checked with an independent parser); atomic writes; every corruption case
raising a clear error; cross-reading with the safetensors package when it is
installed."""
import collections
import io
import json
import math
import os
import struct

import numpy as np
import pytest

import janus
import janus.optim as optim
from janus.serialization import load_safetensors as load, save_safetensors as save

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool"]
ST = {"float32": "F32", "float64": "F64", "float16": "F16", "bfloat16": "BF16", "int64": "I64", "int32": "I32",
      "uint8": "U8", "bool": "BOOL"}
NP = {"float32": "<f4", "float64": "<f8", "float16": "<f2", "int64": "<i8", "int32": "<i4", "uint8": "u1",
      "bool": "?"}


def dt(name):
    return getattr(janus, name)


def as_list(t):
    if t.dtype == janus.bfloat16:
        t = t.float()
    return t.tolist()


def same(a, b):
    """Same dtype, shape and values (NaN == NaN)."""
    assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)
    x = np.array(as_list(a), dtype=object).ravel() if a.numel() else []
    y = np.array(as_list(b), dtype=object).ravel() if b.numel() else []
    for u, v in zip(x, y):
        assert u == v or (isinstance(u, float) and math.isnan(u) and math.isnan(v)), (u, v)


def sample(name, shape, seed=0):
    rng = np.random.default_rng(seed)
    if name == "bool":
        a = rng.integers(0, 2, shape).astype(bool)
    elif name in ("int64", "int32", "uint8"):
        info = np.iinfo(NP[name])
        a = rng.integers(info.min, info.max, shape, dtype=NP[name], endpoint=True)
    else:
        a = rng.standard_normal(shape) * 100
    t = janus.tensor(a.astype(np.float64) if name in ("float16", "bfloat16", "float32", "float64") else a)
    return t.to(dt(name))


def parse(path):
    """An independent safetensors reader: (header, metadata, {name: raw bytes})."""
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = raw[8 + n:]
    return n, header, meta, {k: data[v["data_offsets"][0]:v["data_offsets"][1]] for k, v in header.items()}


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("shape", [(), (5,), (2, 3, 4), (0, 3)], ids=["0d", "1d", "3d", "empty"])
def test_round_trip_every_dtype(tmp_path, name, shape):
    t = sample(name, shape)
    p = tmp_path / "t.safetensors"
    save(t, p)
    u = load(p)
    assert isinstance(u, janus.Tensor)
    same(t, u)


@pytest.mark.parametrize("name", DTYPES)
def test_bytes_on_disk(tmp_path, name):
    t = sample(name, (3, 2), seed=5)
    p = tmp_path / "sd.safetensors"
    save({"w": t}, p)
    n, header, meta, blobs = parse(p)
    assert (8 + n) % 8 == 0
    assert header["w"]["dtype"] == ST[name] and header["w"]["shape"] == [3, 2]
    assert "janus.structure" not in meta  # a plain state dict: ordinary entries only
    if name == "bfloat16":
        f = np.array(as_list(t), dtype=np.float32)
        np.testing.assert_array_equal(np.frombuffer(blobs["w"], "<u2"), (f.view(np.uint32) >> 16).ravel())
    else:
        np.testing.assert_array_equal(np.frombuffer(blobs["w"], NP[name]).reshape(3, 2),
                                      np.array(as_list(t), dtype=NP[name]))


def test_special_values_and_non_contiguous(tmp_path):
    t = janus.tensor([[0.0, -0.0, float("inf")], [float("-inf"), float("nan"), 1e-45]])
    p = tmp_path / "x.safetensors"
    save({"a": t, "b": t.t(), "c": janus.arange(10)[::3]}, p)
    out = load(p)
    same(out["a"], t)
    same(out["b"], t.t().contiguous())
    assert out["c"].tolist() == [0, 3, 6, 9]
    assert math.copysign(1.0, out["a"][0, 1].item()) == -1.0
    for v in (1.0, -2.5, 65504.0, 6.1e-5):  # float16 exact values
        for d in ("float16", "bfloat16"):
            x = janus.tensor([v]).to(dt(d))
            save(x, p)
            same(load(p), x)


def test_plain_state_dict_layout(tmp_path):
    sd = {"layer.weight": janus.ones(2, 3), "layer.bias": janus.zeros(2), "step": janus.tensor(7)}
    p = tmp_path / "model.safetensors"
    save(sd, p)
    n, header, meta, blobs = parse(p)
    assert list(header) == list(sd)
    offs = [header[k]["data_offsets"] for k in sd]
    assert offs == [[0, 24], [24, 32], [32, 40]]  # back to back, in order
    out = load(p)
    assert type(out) is dict and list(out) == list(sd)
    for k in sd:
        same(out[k], sd[k])


def test_nested_structure_round_trip(tmp_path):
    t1, t2, t3 = janus.arange(4).float(), janus.ones(2, 2, dtype=janus.float64), janus.tensor([True, False])
    obj = {
        "model": collections.OrderedDict([("w", t1), ("b", t2)]),
        "epoch": 3, "lr": 0.1, "betas": (0.9, 0.999), "names": ["a", "b"], "none": None, "flag": True,
        "inf": float("inf"), "nan": float("nan"), 0: t3, 2.5: "float key", (1, "x"): [t1, {"deep": t2}],
        "counter": collections.Counter([1, 1, 2]), "empty": {}, "elist": [], "s": {1, 2},
        "dtype": janus.bfloat16, "__metadata__": janus.zeros(1),
    }
    p = tmp_path / "ckpt.safetensors"
    save(obj, p)
    out = load(p)
    assert type(out) is dict and list(out) == list(obj)
    assert isinstance(out["model"], collections.OrderedDict) and list(out["model"]) == ["w", "b"]
    same(out["model"]["w"], t1)
    same(out["model"]["b"], t2)
    assert out["epoch"] == 3 and isinstance(out["epoch"], int)
    assert out["lr"] == 0.1 and out["betas"] == (0.9, 0.999) and out["names"] == ["a", "b"]
    assert out["none"] is None and out["flag"] is True and out["inf"] == float("inf") and math.isnan(out["nan"])
    same(out[0], t3)
    assert out[2.5] == "float key"
    same(out[(1, "x")][0], t1)
    same(out[(1, "x")][1]["deep"], t2)
    assert out["counter"] == collections.Counter([1, 1, 2]) and isinstance(out["counter"], collections.Counter)
    assert out["empty"] == {} and out["elist"] == [] and out["s"] == {1, 2}
    assert out["dtype"] == janus.bfloat16
    same(out["__metadata__"], janus.zeros(1))
    _, header, meta, _ = parse(p)
    assert "model.w" in header and "0" in header and "janus.structure" in meta


def test_optimizer_state_dict_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    pa = [janus.tensor(rng.standard_normal((3, 2)), requires_grad=True), janus.zeros(4, dtype=janus.float64, requires_grad=True)]
    a = optim.Adam(pa, lr=0.01, amsgrad=True)
    grads = [[rng.standard_normal(p.shape) for p in pa] for _ in range(4)]
    for gs in grads[:2]:
        for p, g in zip(pa, gs):
            p.grad = janus.tensor(g)
        a.step()
    f = tmp_path / "opt.safetensors"
    save(a.state_dict(), f)
    sd = load(f)
    assert set(sd["state"]) == {0, 1} and sd["param_groups"][0]["betas"] == (0.9, 0.999)
    assert sd["state"][0]["step"] == 2.0
    pb = [janus.tensor(p.tolist(), dtype=janus.float64, requires_grad=True) for p in pa]
    b = optim.Adam(pb, lr=0.01, amsgrad=True)
    b.load_state_dict(sd)
    for opt, ps in ((a, pa), (b, pb)):
        for gs in grads[2:]:
            for p, g in zip(ps, gs):
                p.grad = janus.tensor(g)
            opt.step()
    for p, q in zip(pa, pb):
        same(p.detach(), q.detach())


def test_file_objects_and_metadata():
    buf = io.BytesIO()
    save({"x": janus.arange(3)}, buf, metadata={"author": "me"})
    buf.seek(0)
    out = load(buf)
    assert out["x"].tolist() == [0, 1, 2]
    raw = buf.getvalue()
    (n,) = struct.unpack("<Q", raw[:8])
    assert json.loads(raw[8:8 + n])["__metadata__"]["author"] == "me"
    with pytest.raises(TypeError, match="metadata must be a dict of str to str"):
        save({"x": janus.arange(3)}, io.BytesIO(), metadata={"a": 1})
    with pytest.raises(ValueError, match="reserved"):
        save({"x": janus.arange(3)}, io.BytesIO(), metadata={"janus.structure": "x"})


def test_atomic_write(tmp_path):
    p = tmp_path / "a.safetensors"
    save({"x": janus.ones(2)}, p)
    save({"x": janus.zeros(3)}, p)  # replaced
    assert load(p)["x"].tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(TypeError, match=r"can't save 'bad.1' of type object"):
        save({"x": janus.ones(2), "bad": [1, object()]}, p)
    assert load(p)["x"].tolist() == [0.0, 0.0, 0.0]  # the old file survives a failed save
    assert os.listdir(tmp_path) == ["a.safetensors"]  # no temporary files left behind
    import janus._safetensors as ser

    def boom(t, name):
        raise RuntimeError("disk on fire")

    mp = pytest.MonkeyPatch()
    mp.setattr(ser, "_tensor_data", boom)
    try:
        with pytest.raises(RuntimeError, match="disk on fire"):
            save({"x": janus.ones(5)}, p)  # fails half-way through writing the temporary file
    finally:
        mp.undo()
    assert load(p)["x"].tolist() == [0.0, 0.0, 0.0]
    assert os.listdir(tmp_path) == ["a.safetensors"]
    with pytest.raises(FileNotFoundError, match="does not exist"):
        save({"x": janus.ones(1)}, tmp_path / "nope" / "c.safetensors")
    with pytest.raises(TypeError, match="dict key"):
        save({object(): janus.ones(1)}, tmp_path / "b.safetensors")
    assert os.listdir(tmp_path) == ["a.safetensors"]


# -------------------------------------------------------------- corruption
def write_raw(path, header, data=b"", hlen=None, raw_header=None):
    hb = raw_header if raw_header is not None else json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb) if hlen is None else hlen))
        f.write(hb)
        f.write(data)
    return path


GOOD = {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}


@pytest.mark.parametrize("case,match", [
    ("missing", "no such file"),
    ("empty", "truncated"),
    ("short", "truncated"),
    ("hlen_too_big", "larger than the file"),
    ("bad_json", "not valid JSON"),
    ("bad_utf8", "not valid JSON"),
    ("not_object", "must be a JSON object"),
    ("entry_not_object", "must be an object with dtype, shape and data_offsets"),
    ("unknown_dtype", "unknown or unsupported dtype 'F8_E4M3'"),
    ("bad_shape", "shape"),
    ("negative_shape", "non-negative"),
    ("bad_offsets", "must be \\[begin, end\\]"),
    ("out_of_range", "out of range"),
    ("reversed_offsets", "out of range"),
    ("truncated_data", "truncated"),
    ("size_mismatch", "needs 12 bytes"),
    ("overlap", "overlapping"),
    ("bad_metadata", "__metadata__"),
    ("bad_structure_json", "janus.structure"),
    ("missing_tensor", "does not contain"),
    ("bad_structure_entry", "unrecognized"),
    ("bad_bool", "BOOL data"),
])
def test_corrupt_files_raise_clear_errors(tmp_path, case, match):
    p = tmp_path / f"{case}.safetensors"
    d8 = b"\0" * 8
    if case == "missing":
        pass
    elif case == "empty":
        p.write_bytes(b"")
    elif case == "short":
        p.write_bytes(b"\x05\0\0")
    elif case == "hlen_too_big":
        write_raw(p, GOOD, d8, hlen=10 ** 6)
    elif case == "bad_json":
        write_raw(p, None, d8, raw_header=b'{"a": {"dtype": ')
    elif case == "bad_utf8":
        write_raw(p, None, d8, raw_header=b'{"\xff\xfe": 1}')
    elif case == "not_object":
        write_raw(p, [1, 2], d8)
    elif case == "entry_not_object":
        write_raw(p, {"a": [1]}, d8)
    elif case == "unknown_dtype":
        write_raw(p, {"a": {"dtype": "F8_E4M3", "shape": [8], "data_offsets": [0, 8]}}, d8)
    elif case == "bad_shape":
        write_raw(p, {"a": {"dtype": "F32", "shape": "2", "data_offsets": [0, 8]}}, d8)
    elif case == "negative_shape":
        write_raw(p, {"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}, d8)
    elif case == "bad_offsets":
        write_raw(p, {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0]}}, d8)
    elif case == "out_of_range":
        write_raw(p, {"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}}, d8)
    elif case == "reversed_offsets":
        write_raw(p, {"a": {"dtype": "F32", "shape": [0], "data_offsets": [8, 0]}}, d8)
    elif case == "truncated_data":
        save({"x": janus.ones(100)}, p)
        raw = p.read_bytes()
        p.write_bytes(raw[:-50])
    elif case == "size_mismatch":
        write_raw(p, {"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, d8)
    elif case == "overlap":
        write_raw(p, {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                      "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, d8)
    elif case == "bad_metadata":
        write_raw(p, dict(GOOD, __metadata__={"k": 1}), d8)
    elif case == "bad_structure_json":
        write_raw(p, dict(GOOD, __metadata__={"janus.structure": "{oops"}), d8)
    elif case == "missing_tensor":
        write_raw(p, dict(GOOD, __metadata__={"janus.structure": '{"T": "zzz"}'}), d8)
    elif case == "bad_structure_entry":
        write_raw(p, dict(GOOD, __metadata__={"janus.structure": '{"Q": 1}'}), d8)
    elif case == "bad_bool":
        write_raw(p, {"a": {"dtype": "BOOL", "shape": [2], "data_offsets": [0, 2]}}, b"\x01\x07")
    exc = FileNotFoundError if case == "missing" else ValueError
    with pytest.raises(exc, match=match) as ei:
        load(p)
    assert p.name in str(ei.value)  # the message names the file


def test_loads_valid_hand_written_file(tmp_path):
    p = write_raw(tmp_path / "ok.safetensors", dict(GOOD, __metadata__={"format": "pt"}),
                  struct.pack("<2f", 1.5, -2.0))
    out = load(p)
    assert list(out) == ["a"] and out["a"].tolist() == [1.5, -2.0]


# --------------------------------------------------- the safetensors package
def test_cross_read_with_safetensors_package(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    names = [n for n in DTYPES if n != "bfloat16"]  # numpy has no bfloat16
    sd = {n: sample(n, (2, 3), seed=i) for i, n in enumerate(names)}
    sd["empty"] = janus.zeros(0, 4)
    p = tmp_path / "ours.safetensors"
    save(sd, p)
    theirs = st.load_file(str(p))
    assert set(theirs) == set(sd)
    for n in names:
        np.testing.assert_array_equal(theirs[n], np.array(as_list(sd[n]), dtype=NP[n]))
    # and the other way round
    q = tmp_path / "theirs.safetensors"
    arrays = {n: np.array(as_list(sd[n]), dtype=NP[n]) for n in names}
    st.save_file(arrays, str(q), metadata={"who": "safetensors"})
    back = load(q)
    for n in names:
        same(back[n], sd[n])


def test_training_checkpoint_resume(tmp_path):
    """model + optimizer + scheduler checkpoint: resuming reproduces the run exactly."""
    import janus.nn as nn
    from janus.optim import lr_scheduler
    F = nn.functional

    def build():
        m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
        opt = optim.AdamW(m.parameters(), lr=0.01)
        sched = lr_scheduler.MultiStepLR(opt, milestones=[2, 4, 4], gamma=0.5)
        return m, opt, sched

    def train(m, opt, sched, steps):
        for x, y in steps:
            opt.zero_grad()
            loss = F.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            sched.step()

    janus.manual_seed(0)
    data = [(janus.randn(16, 4), janus.randint(0, 3, (16,))) for _ in range(6)]
    m, opt, sched = build()
    train(m, opt, sched, data[:3])
    p = tmp_path / "ckpt.safetensors"
    save({"model": m.state_dict(), "optim": opt.state_dict(), "sched": sched.state_dict(), "epoch": 3}, p)
    train(m, opt, sched, data[3:])

    m2, opt2, sched2 = build()
    ck = load(p)
    assert ck["epoch"] == 3 and isinstance(ck["sched"]["milestones"], collections.Counter)
    m2.load_state_dict(ck["model"])
    opt2.load_state_dict(ck["optim"])
    sched2.load_state_dict(ck["sched"])
    train(m2, opt2, sched2, data[3:])
    assert sched2.get_last_lr() == sched.get_last_lr()
    for (k, a), (k2, b) in zip(m.state_dict().items(), m2.state_dict().items()):
        assert k == k2
        same(a, b)
