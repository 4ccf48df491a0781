"""Bidirectional RNN / LSTM / GRU and LSTM projections (proj_size).

- against PyTorch (skipped without it): outputs, h_n, c_n and the gradients
  of every parameter and of the input, with copied weights, for RNN
  (tanh, relu), LSTM, LSTM with proj_size and GRU; 1 and 2 layers;
  batch_first; with and without hx; unbatched input; PackedSequence input
  (enforce_sorted=False, varied lengths) through pad_packed_sequence; and
  janus-saved bidirectional modules loaded by torch.load and back.
- without PyTorch: the reverse direction is a unidirectional module with the
  reverse weights run on the time-flipped input; a packed batch gives each
  sequence what it gets alone; shapes; state_dict order; finite differences
  of a bidirectional GRU.
- record/replay: a BiLSTM sequence classifier trained with Adam, recorded for
  20 steps and replayed for 40, bitwise equal to eager, with fixed lengths
  and with packed lengths longer in the replay than recorded (the time loops
  of both directions stay loops).
"""
import io
import zlib

import numpy as np
import pytest

import janus
import janus.nn as nn
from dynamic_runs import have_optimize

MODES = {  # name -> (class name, constructor kwargs)
    "rnn_tanh": ("RNN", {"nonlinearity": "tanh"}),
    "rnn_relu": ("RNN", {"nonlinearity": "relu"}),
    "lstm": ("LSTM", {}),
    "lstm_proj": ("LSTM", {"proj_size": 3}),
    "gru": ("GRU", {}),
}
I, H = 4, 5
DTYPES = {"float64": (np.float64, 1e-10), "float32": (np.float32, 1e-5)}
# PyTorch's CPU LSTM says it runs projections without oneDNN
pytestmark = pytest.mark.filterwarnings("ignore:LSTM with projections:UserWarning")


def _torch():
    if janus._C._setting_value("JANUS_SANITIZED"):
        pytest.skip("PyTorch's own libraries are not built for AddressSanitizer")
    torch = pytest.importorskip("torch")
    torch.set_num_threads(2)
    return torch


def _pair(torch, mode, dtype, **kw):
    """A janus module and a torch one holding the same weights."""
    cls, extra = MODES[mode]
    jm = getattr(nn, cls)(I, H, bidirectional=True, dtype=getattr(janus, dtype), **extra, **kw)
    tm = getattr(torch.nn, cls)(I, H, bidirectional=True, dtype=getattr(torch, dtype), **extra, **kw)
    assert list(jm.state_dict()) == list(tm.state_dict())
    tm.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in jm.state_dict().items()})
    return jm, tm


def _flat(y):
    """(out, h) or (out, (h, c)) -> [out, h(, c)]."""
    out, h = y
    return [out] + (list(h) if isinstance(h, tuple) else [h])


def _compare(torch, jm, tm, jy, ty, jin, tin, tol, rng):
    """Values, then gradients of a random linear functional of all outputs."""
    for a, b in zip(jy, ty):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)
    gs = [rng.standard_normal(tuple(b.shape)).astype(b.detach().numpy().dtype) for b in ty]
    sum((a * janus.tensor(g)).sum() for a, g in zip(jy, gs)).backward()
    sum((b * torch.from_numpy(g)).sum() for b, g in zip(ty, gs)).backward()
    tp = dict(tm.named_parameters())
    for name, p in jm.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tp[name].grad.numpy(), rtol=tol, atol=tol, err_msg=name)
    for a, b in zip(jin, tin):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=tol, atol=tol)


def _inputs(torch, arrays):
    js = [janus.tensor(a).requires_grad_() for a in arrays]
    ts = [torch.from_numpy(a.copy()).requires_grad_() for a in arrays]
    return js, ts


def _hx(jm, mode, N, dt, rng, batched=True):
    L = jm.num_layers * 2
    shape = lambda size: (L, N, size) if batched else (L, size)  # noqa: E731
    h = rng.standard_normal(shape(jm.proj_size or H)).astype(dt)
    return [h, rng.standard_normal(shape(H)).astype(dt)] if MODES[mode][0] == "LSTM" else [h]


def _call(m, x, hx, mode):
    if not hx:
        return m(x)
    return m(x, tuple(hx)) if MODES[mode][0] == "LSTM" else m(x, hx[0])


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("with_hx", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("mode", sorted(MODES))
def test_matches_torch(mode, layers, batch_first, with_hx, dtype):
    torch = _torch()
    dt, tol = DTYPES[dtype]
    rng = np.random.default_rng(zlib.crc32(repr((mode, layers, batch_first, with_hx)).encode()))
    jm, tm = _pair(torch, mode, dtype, num_layers=layers, batch_first=batch_first)
    T, N = 6, 3
    x = rng.standard_normal((N, T, I) if batch_first else (T, N, I)).astype(dt)
    arrays = [x] + (_hx(jm, mode, N, dt, rng) if with_hx else [])
    js, ts = _inputs(torch, arrays)
    jy, ty = _flat(_call(jm, js[0], js[1:], mode)), _flat(_call(tm, ts[0], ts[1:], mode))
    _compare(torch, jm, tm, jy, ty, js, ts, tol, rng)


@pytest.mark.parametrize("with_hx", [False, True])
@pytest.mark.parametrize("mode", sorted(MODES))
def test_unbatched_matches_torch(mode, with_hx):
    torch = _torch()
    rng = np.random.default_rng(7)
    jm, tm = _pair(torch, mode, "float64", num_layers=2)
    arrays = [rng.standard_normal((5, I))] + (_hx(jm, mode, None, np.float64, rng, batched=False) if with_hx else [])
    js, ts = _inputs(torch, arrays)
    jy, ty = _flat(_call(jm, js[0], js[1:], mode)), _flat(_call(tm, ts[0], ts[1:], mode))
    assert tuple(jy[0].shape) == (5, 2 * (jm.proj_size or H))
    _compare(torch, jm, tm, jy, ty, js, ts, 1e-10, rng)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("with_hx", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("mode", sorted(MODES))
def test_packed_matches_torch(mode, layers, batch_first, with_hx, dtype):
    torch = _torch()
    dt, tol = DTYPES[dtype]
    rng = np.random.default_rng(11)
    jm, tm = _pair(torch, mode, dtype, num_layers=layers, batch_first=batch_first)
    lengths = [3, 7, 1, 5, 7, 2]  # unsorted, with ties and a length-1 sequence
    T, N = max(lengths), len(lengths)
    x = rng.standard_normal((N, T, I) if batch_first else (T, N, I)).astype(dt)
    arrays = [x] + (_hx(jm, mode, N, dt, rng) if with_hx else [])
    js, ts = _inputs(torch, arrays)
    ys = []
    for lib, m, xs in ((janus, jm, js), (torch, tm, ts)):
        u = lib.nn.utils.rnn
        p = u.pack_padded_sequence(xs[0], lib.tensor(lengths), batch_first=batch_first, enforce_sorted=False)
        out, h = _call(m, p, xs[1:], mode)
        padded, lens = u.pad_packed_sequence(out, batch_first=batch_first)
        assert list(np.asarray(lens.tolist())) == lengths
        ys.append(_flat((padded, h)))
    _compare(torch, jm, tm, ys[0], ys[1], js, ts, tol, rng)


def test_saved_bidirectional_modules_cross_to_torch_and_back():
    torch = _torch()
    x = np.random.default_rng(0).standard_normal((4, 2, I))
    m = nn.LSTM(I, H, num_layers=2, bidirectional=True, proj_size=2, dtype=janus.float64)
    tm = torch.load(_saved(m), weights_only=False)
    assert type(tm) is torch.nn.LSTM and list(tm.state_dict()) == list(m.state_dict())
    assert tm._flat_weights_names == list(m.state_dict())
    tm2 = torch.nn.GRU(I, H, num_layers=2, bidirectional=True, dtype=torch.float64)
    buf = io.BytesIO()
    torch.save(tm2, buf)
    buf.seek(0)
    m2 = janus.load(buf, weights_only=False)
    assert type(m2) is nn.GRU and m2.bidirectional
    for jm, tm in ((m, tm), (m2, tm2)):
        jy, ty = _flat(jm(janus.tensor(x))), _flat(tm(torch.from_numpy(x)))
        for a, b in zip(jy, ty):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-10)


def test_errors_and_repr_follow_torch():
    with pytest.raises(ValueError, match="only supported for LSTM"):
        nn.GRU(I, H, proj_size=2)
    with pytest.raises(ValueError, match="only supported for LSTM"):
        nn.RNN(I, H, proj_size=2)
    with pytest.raises(ValueError, match="smaller than hidden_size"):
        nn.LSTM(I, H, proj_size=H)
    with pytest.raises(RuntimeError, match="Expected hidden size"):
        nn.GRU(I, H, bidirectional=True)(janus.zeros(3, 2, I), janus.zeros(1, 2, H))
    assert repr(nn.LSTM(I, H, num_layers=2, bidirectional=True, proj_size=2)) == \
        "LSTM(4, 5, proj_size=2, num_layers=2, bidirectional=True)"


# ------------------------------------------------------------ without PyTorch
def _module(mode, bidirectional=True, **kw):
    cls, extra = MODES[mode]
    return getattr(nn, cls)(I, H, bidirectional=bidirectional, dtype=janus.float64, **extra, **kw)


def _direction(mode, bi, layer, sfx, in_size):
    """A unidirectional one-layer module holding one direction's weights."""
    cls, extra = MODES[mode]
    uni = getattr(nn, cls)(in_size, H, dtype=janus.float64, **extra)
    sd = bi.state_dict()
    uni.load_state_dict({k: sd[k.replace("_l0", f"_l{layer}{sfx}")] for k in uni.state_dict()})
    return uni


@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("mode", sorted(MODES))
def test_reverse_is_the_flipped_unidirectional(mode, layers):
    bi = _module(mode, num_layers=layers)
    x = janus.tensor(np.random.default_rng(1).standard_normal((6, 3, I)))
    out, h = bi(x)
    h = h if isinstance(h, tuple) else (h,)
    flip = janus.arange(5, -1, -1)
    inp, finals = x, []
    for layer in range(layers):
        in_size = I if layer == 0 else 2 * (bi.proj_size or H)
        fo, fh = _direction(mode, bi, layer, "", in_size)(inp)
        ro, rh = _direction(mode, bi, layer, "_reverse", in_size)(inp.index_select(0, flip))
        inp = janus.cat([fo, ro.index_select(0, flip)], 2)
        finals += [fh, rh]
    np.testing.assert_allclose(out.numpy(), inp.numpy(), rtol=0, atol=1e-12)
    for k, got in enumerate(h):  # h_n, c_n: l0 forward, l0 reverse, l1 forward, ...
        want = janus.cat([f[k] if isinstance(f, tuple) else f for f in finals], 0)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=0, atol=1e-12)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_packed_rows_are_each_sequence_alone(mode):
    """Each reverse run starts at its own sequence's last step, from h0."""
    bi = _module(mode, num_layers=2)
    lengths = [3, 6, 1, 4]
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6, 4, I))
    u = nn.utils.rnn
    out, h = bi(u.pack_padded_sequence(janus.tensor(x), janus.tensor(lengths), enforce_sorted=False))
    padded, _ = u.pad_packed_sequence(out)
    h = h if isinstance(h, tuple) else (h,)
    for i, n in enumerate(lengths):
        o1, h1 = bi(janus.tensor(x[:n, i]))  # unbatched, one sequence
        h1 = h1 if isinstance(h1, tuple) else (h1,)
        np.testing.assert_allclose(padded.numpy()[:n, i], o1.numpy(), rtol=0, atol=1e-12)
        assert not padded.numpy()[n:, i].any()
        for a, b in zip(h, h1):
            np.testing.assert_allclose(a.numpy()[:, i], b.numpy(), rtol=0, atol=1e-12)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_shapes(mode):
    L, T, N = 2, 5, 3
    P = MODES[mode][1].get("proj_size", 0) or H
    lstm = MODES[mode][0] == "LSTM"
    for batch_first, shape, out_shape in ((False, (T, N, I), (T, N, 2 * P)), (True, (N, T, I), (N, T, 2 * P)),
                                          (False, (T, I), (T, 2 * P))):
        m = _module(mode, num_layers=L, batch_first=batch_first)
        out, h = m(janus.zeros(*shape, dtype=janus.float64))
        state = (L * 2, N) if len(shape) == 3 else (L * 2,)
        assert tuple(out.shape) == out_shape
        if lstm:
            assert tuple(h[0].shape) == state + (P,) and tuple(h[1].shape) == state + (H,)
        else:
            assert tuple(h.shape) == state + (H,)
    m = _module(mode, bidirectional=False)
    assert not m.bidirectional and "bidirectional" not in repr(m)
    m = _module(mode)
    assert m.bidirectional and repr(m).endswith("bidirectional=True)")


def test_state_dict_order_and_pickled_names():
    m = nn.LSTM(I, H, num_layers=2, bidirectional=True, proj_size=2)
    want = [f"{w}_l{k}{s}" for k in range(2) for s in ("", "_reverse")
            for w in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")]
    sd = m.state_dict()
    assert list(sd) == want
    shapes = {"weight_ih_l0": (20, I), "weight_ih_l1": (20, 4), "weight_hh_l0": (20, 2), "weight_hr_l0": (2, H)}
    for k, s in shapes.items():
        assert tuple(sd[k].shape) == s and tuple(sd[k + "_reverse"].shape) == s
    state = m.__getstate__()
    assert state["_flat_weights_names"] == want and state["_all_weights"] == [want[i:i + 5] for i in range(0, 20, 5)]
    g = nn.GRU(I, H, num_layers=2, bias=False, bidirectional=True)
    assert list(g.state_dict()) == [f"{w}_l{k}{s}" for k in range(2) for s in ("", "_reverse")
                                    for w in ("weight_ih", "weight_hh")]
    assert g.__getstate__()["_all_weights"][1] == ["weight_ih_l0_reverse", "weight_hh_l0_reverse"]
    back = janus.load(_saved(m), weights_only=False)
    assert list(back.state_dict()) == want and back.bidirectional and back.proj_size == 2


def _saved(m):
    buf = io.BytesIO()
    janus.save(m, buf)
    buf.seek(0)
    return buf


def test_finite_differences_bidirectional_gru():
    janus.manual_seed(5)  # its weights must not depend on the tests run before it
    m = nn.GRU(3, 4, num_layers=2, bidirectional=True, dtype=janus.float64)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((5, 2, 3))
    h0 = rng.standard_normal((4, 2, 4))
    g_out, g_h = rng.standard_normal((5, 2, 8)), rng.standard_normal((4, 2, 4))
    base = {k: v.numpy().copy() for k, v in m.state_dict().items()}

    def value(sd, x):
        m.load_state_dict({k: janus.tensor(v) for k, v in sd.items()})
        with janus.no_grad():
            out, h = m(janus.tensor(x), janus.tensor(h0))
        return (out.numpy() * g_out).sum() + (h.numpy() * g_h).sum()

    m.load_state_dict({k: janus.tensor(v) for k, v in base.items()})
    xt = janus.tensor(x).requires_grad_()
    out, h = m(xt, janus.tensor(h0))
    ((out * janus.tensor(g_out)).sum() + (h * janus.tensor(g_h)).sum()).backward()
    grads = {k: p.grad.numpy().copy() for k, p in m.named_parameters()}
    eps = 1e-6
    for name in ("weight_ih_l0", "weight_hh_l0_reverse", "bias_hh_l0_reverse", "weight_ih_l1_reverse", "bias_ih_l1"):
        for idx in [tuple(rng.integers(0, s) for s in base[name].shape) for _ in range(3)]:
            plus, minus = dict(base), dict(base)
            plus[name], minus[name] = base[name].copy(), base[name].copy()
            plus[name][idx] += eps
            minus[name][idx] -= eps
            num = (value(plus, x) - value(minus, x)) / (2 * eps)
            np.testing.assert_allclose(grads[name][idx], num, rtol=1e-6, atol=1e-9, err_msg=f"{name}{idx}")
    for idx in ((0, 0, 0), (4, 1, 2), (2, 0, 1)):  # the input: the first and last steps reach both directions
        xp, xm = x.copy(), x.copy()
        xp[idx] += eps
        xm[idx] -= eps
        num = (value(base, xp) - value(base, xm)) / (2 * eps)
        np.testing.assert_allclose(xt.grad.numpy()[idx], num, rtol=1e-6, atol=1e-9, err_msg=f"x{idx}")


# ------------------------------------------------------------ record / replay
SCRIPT = r"""
import sys
import janus, janus.nn as nn, janus.nn.functional as F
janus.manual_seed(0)
V, D, H, C, B, T = 20, 8, 8, 3, 8, 10
emb = nn.Embedding(V, D, padding_idx=0)
rnn = nn.LSTM(D, H, batch_first=True, bidirectional=True)
head = nn.Linear(2 * H, C)
params = list(emb.parameters()) + list(rnn.parameters()) + list(head.parameters())
opt = janus.optim.Adam(params, lr=0.01)
X = janus.randint(1, V, (60 * B, T))
Y = (X[:, 0] + X[:, -1]) % C   # needs both ends: the forward and the reverse state
lens = janus.randint(3, T + 1, (60 * B,))
lens[:20 * B] = janus.randint(3, 8, (20 * B,))   # the recorded steps see shorter sequences
for step in range(int(sys.argv[1])):
    x, y, l = X[step * B:(step + 1) * B], Y[step * B:(step + 1) * B], lens[step * B:(step + 1) * B]
    {case}
    loss = F.cross_entropy(head(janus.cat([h[-2], h[-1]], 1)), y) + out.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, f"{{loss.item():.7f}}")
"""

CASES = {
    # every step the same length
    "fixed": "out, (h, c) = rnn(emb(x))",
    # lengths the data decides, longer in the replay than recorded: the time
    # loops of both directions must stay loops (see _REVERSE_ORDER in rnn.py)
    "packed": "p = nn.utils.rnn.pack_padded_sequence(emb(x), l, batch_first=True, enforce_sorted=False); "
              "o, (h, c) = rnn(p); out, _ = nn.utils.rnn.pad_packed_sequence(o, batch_first=True, total_length=T)",
}


@pytest.mark.skipif(not have_optimize(), reason="janus optimize is not built")
@pytest.mark.parametrize("case", sorted(CASES))
def test_bilstm_classifier_replays_bitwise(case, tmp_path):
    from test_replay import replay_whole
    _, rr, s = replay_whole(SCRIPT.format(case=CASES[case]), ["20"], ["40"], tmp_path, f"bilstm_{case}.py")
    assert s["segments"] >= 40, s
