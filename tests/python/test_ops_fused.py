"""Table-driven checks of the k_fused.c ops (lstm_cell, lstm_cell_backward,
gru_cell, gru_cell_backward, adam_, sgd_) against float64 numpy references,
in several layouts, plus:

- finite-difference gradients of the cells through *all* their outputs
  (test_gradcheck.py only differentiates the first output), i.e. the
  backward ops as the derivative table uses them;
- the fused cells inside nn.LSTMCell / nn.GRUCell / nn.LSTM against the
  unfused path (forward bit-identical, gradients to rounding);
- the fused optimizer updates against the unfused ones over several steps,
  and against torch when it is installed;
- the dispatcher's multi-output in-place rule: adam_ / sgd_ return their
  first inputs themselves and bump every written tensor's version."""
import numpy as np
import pytest

import janus
import janus.nn as jnn
import janus.nn.modules.rnn as jmod
import janus.optim.adam as jadam
import janus.optim.sgd as jsgd
import opcheck as oc
from janus import _C

R = np.random.default_rng(11)


def u(*shape, s=2.0):
    return R.uniform(-s, s, size=shape)


def sig(x):
    return 1 / (1 + np.exp(-x))


# ------------------------------------------------------------ references
def ref_lstm(gx, gh, c):
    H = c.shape[-1]
    z = gx + gh
    i, f, g, o = sig(z[..., :H]), sig(z[..., H:2 * H]), np.tanh(z[..., 2 * H:3 * H]), sig(z[..., 3 * H:])
    c2 = f * c + i * g
    return [o * np.tanh(c2), c2, np.concatenate([i, f, g, o, c, np.tanh(c2)], -1)]


def ref_lstm_backward(dh, dc, ws):
    H = dh.shape[-1]
    i, f, g, o, c, tc = (ws[..., k * H:(k + 1) * H] for k in range(6))
    dcs = dc + dh * o * (1 - tc ** 2)
    dg = np.concatenate([dcs * g * i * (1 - i), dcs * c * f * (1 - f), dcs * i * (1 - g ** 2),
                         dh * tc * o * (1 - o)], -1)
    return [dg, dcs * f]


def ref_gru(gx, gh, h):
    H = h.shape[-1]
    r = sig(gx[..., :H] + gh[..., :H])
    z = sig(gx[..., H:2 * H] + gh[..., H:2 * H])
    hn = gh[..., 2 * H:]
    n = np.tanh(gx[..., 2 * H:] + r * hn)
    return [(1 - z) * n + z * h, np.concatenate([r, z, n, hn, h], -1)]


def ref_gru_backward(dh, ws):
    H = dh.shape[-1]
    r, z, n, hn, h = (ws[..., k * H:(k + 1) * H] for k in range(5))
    dn = dh * (1 - z) * (1 - n ** 2)
    dz = dh * (h - n) * z * (1 - z)
    dr = dn * hn * r * (1 - r)
    return [np.concatenate([dr, dz, dn], -1), np.concatenate([dr, dz, dn * r], -1), dh * z]


def ref_adam(p, m, v, g, lr, beta1, beta2, eps, weight_decay, step, decoupled, maximize):
    g = -g if maximize else g
    if weight_decay:
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
    m = m + (1 - beta1) * (g - m)
    v = beta2 * v + (1 - beta2) * g * g
    denom = np.sqrt(v) / np.sqrt(1 - beta2 ** step) + eps
    return [p - lr / (1 - beta1 ** step) * m / denom, m, v]


def ref_sgd(p, buf, g, lr, momentum, dampening, weight_decay, nesterov, maximize, first):
    g = -g if maximize else g
    if weight_decay:
        g = g + weight_decay * p
    buf = g if first else momentum * buf + (1 - dampening) * g
    g = g + momentum * buf if nesterov else buf
    return [p - lr * g, buf]


def _lstm_bw_inputs(shape_lead, H):
    ws = ref_lstm(u(*shape_lead, 4 * H), u(*shape_lead, 4 * H), u(*shape_lead, H))[2]
    return [u(*shape_lead, H), u(*shape_lead, H), ws]


def _gru_bw_inputs(shape_lead, H):
    ws = ref_gru(u(*shape_lead, 3 * H), u(*shape_lead, 3 * H), u(*shape_lead, H))[1]
    return [u(*shape_lead, H), ws]


def _adam_attrs(**kw):
    a = dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, step=3.0, decoupled=False,
             maximize=False)
    a.update(kw)
    return a


def _sgd_attrs(**kw):
    a = dict(lr=0.1, momentum=0.9, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False, first=False)
    a.update(kw)
    return a


def _pos(*shape):
    return R.uniform(0.01, 1.0, size=shape)


# op -> list of (inputs, attrs dict, reference); attrs in schema order
CASES = {
    "lstm_cell": [([u(3, 20), u(3, 20), u(3, 5)], {}, ref_lstm),
                  ([u(2, 3, 8), u(2, 3, 8), u(2, 3, 2)], {}, ref_lstm),
                  ([u(12) * 5, u(12) * 5, u(3) * 5], {}, ref_lstm),  # saturated gates, 1-d
                  ([u(200, 1024), u(200, 1024), u(200, 256)], {}, ref_lstm)],  # threaded
    "lstm_cell_backward": [(_lstm_bw_inputs((4,), 6), {}, ref_lstm_backward),
                           (_lstm_bw_inputs((2, 3), 4), {}, ref_lstm_backward),
                           (_lstm_bw_inputs((200,), 256), {}, ref_lstm_backward)],
    "gru_cell": [([u(3, 15), u(3, 15), u(3, 5)], {}, ref_gru),
                 ([u(2, 2, 9), u(2, 2, 9), u(2, 2, 3)], {}, ref_gru),
                 ([u(200, 768), u(200, 768), u(200, 256)], {}, ref_gru)],
    "gru_cell_backward": [(_gru_bw_inputs((4,), 6), {}, ref_gru_backward),
                          (_gru_bw_inputs((200,), 256), {}, ref_gru_backward)],
    "adam_": [([u(4, 5), u(4, 5), _pos(4, 5), u(4, 5)], _adam_attrs(), ref_adam),
              ([u(7), u(7), _pos(7), u(7)], _adam_attrs(weight_decay=0.1, step=1.0), ref_adam),
              ([u(3, 4), u(3, 4), _pos(3, 4), u(3, 4)], _adam_attrs(weight_decay=0.1, decoupled=True), ref_adam),
              ([u(3, 4), u(3, 4), _pos(3, 4), u(3, 4)],
               _adam_attrs(maximize=True, beta1=0.3, eps=1e-3, step=10.0), ref_adam),
              ([u(300, 400), u(300, 400), _pos(300, 400), u(300, 400)], _adam_attrs(step=5.0), ref_adam)],
    "sgd_": [([u(4, 5), u(4, 5), u(4, 5)], _sgd_attrs(), ref_sgd),
             ([u(6), u(6), u(6)], _sgd_attrs(first=True, weight_decay=0.1), ref_sgd),
             ([u(3, 4), u(3, 4), u(3, 4)], _sgd_attrs(nesterov=True, weight_decay=0.01), ref_sgd),
             ([u(3, 4), u(3, 4), u(3, 4)], _sgd_attrs(dampening=0.3, maximize=True), ref_sgd),
             ([u(300, 400), u(300, 400), u(300, 400)], _sgd_attrs(), ref_sgd)],
}

INPLACE = {"adam_": 3, "sgd_": 2}


def _attrs(name, a):
    return tuple(a[k] for k, _ in _C.op_info(name)["attrs"])


def _run(name, arrays, attrs):
    ts = [oc.jn(a) for a in arrays]  # shares memory, keeps the layout
    out = oc.op(name, ts, _attrs(name, attrs))
    return ts, (list(out) if isinstance(out, tuple) else [out])


CASE_LIST = [(n, i) for n, cs in CASES.items() for i in range(len(cs))]


@pytest.mark.parametrize("name,k", CASE_LIST, ids=[f"{n}-{k}" for n, k in CASE_LIST])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_case(name, k, dtype):
    arrays, attrs, ref = CASES[name][k]
    arrays = [np.array(a, dtype=dtype) for a in arrays]  # copies: in-place ops write them
    want = ref(*[a.astype(np.float64) for a in arrays], **attrs)
    ts, got = _run(name, arrays, attrs)
    assert len(got) == len(want)
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == "float64" else dict(rtol=2e-5, atol=2e-5)
    for g, w in zip(got, want):
        assert oc.npy(g).dtype == np.dtype(dtype)
        oc.assert_close(g, w, **tol)
    for i in range(INPLACE.get(name, 0)):  # in place: the outputs are the written inputs
        assert got[i]._id == ts[i]._id
        oc.assert_close(ts[i], want[i], **tol)


@pytest.mark.parametrize("name", ["lstm_cell", "lstm_cell_backward", "gru_cell", "gru_cell_backward"])
def test_cells_any_layout(name):
    arrays, attrs, ref = CASES[name][0]
    want = ref(*arrays)
    for lay in ("strided", "transposed"):
        ins = [dict(oc.layouts(np.asarray(a)))[lay] for a in arrays]
        assert not all(x.flags.c_contiguous for x in ins)
        _, got = _run(name, ins, attrs)
        for g, w in zip(got, want):
            oc.assert_close(g, w, rtol=1e-12, atol=1e-12)


def test_cells_empty_and_thread_counts():
    _, got = _run("lstm_cell", [np.zeros((0, 8)), np.zeros((0, 8)), np.zeros((0, 2))], {})
    assert [tuple(g.shape) for g in got] == [(0, 2), (0, 2), (0, 12)]
    arrays, attrs, ref = CASES["lstm_cell"][3]
    want = ref(*arrays)
    old = janus.get_num_threads()
    try:
        for n in (1, 2, 3):
            janus.set_num_threads(n)
            _, got = _run("lstm_cell", arrays, attrs)
            for g, w in zip(got, want):
                oc.assert_close(g, w, rtol=1e-12, atol=1e-12)
    finally:
        janus.set_num_threads(old)


def test_errors():
    f32, f64 = np.zeros((2, 8), np.float32), np.zeros((2, 8))
    with pytest.raises(TypeError, match="lstm_cell: input 1 has dtype float32"):
        _run("lstm_cell", [f64, f32, np.zeros((2, 2))], {})
    with pytest.raises(TypeError, match="only float32 and float64"):
        _run("lstm_cell", [f64.astype(np.float16)] * 2 + [np.zeros((2, 2), np.float16)], {})
    with pytest.raises(TypeError, match="only float32 and float64"):
        _run("gru_cell", [np.zeros((2, 6), np.int64)] * 2 + [np.zeros((2, 2), np.int64)], {})
    with pytest.raises(RuntimeError, match=r"lstm_cell: the last dim of the gates must be 4\*hidden"):
        _run("lstm_cell", [np.zeros((2, 7))] * 2 + [np.zeros((2, 2))], {})
    with pytest.raises(RuntimeError, match=r"lstm_cell: input 2 has shape \[2, 3\], expected \[2, 2\]"):
        _run("lstm_cell", [f64, f64, np.zeros((2, 3))], {})
    with pytest.raises(RuntimeError, match=r"gru_cell: input 1 has shape \[3, 6\], expected \[2, 6\]"):
        _run("gru_cell", [np.zeros((2, 6)), np.zeros((3, 6)), np.zeros((2, 2))], {})
    with pytest.raises(RuntimeError, match=r"lstm_cell_backward: input 1 has shape \[2, 3\], expected \[2, 2\]"):
        _run("lstm_cell_backward", [np.zeros((2, 2)), np.zeros((2, 3)), np.zeros((2, 12))], {})
    with pytest.raises(RuntimeError, match=r"gru_cell_backward: the last dim of the workspace must be 5\*hidden"):
        _run("gru_cell_backward", [np.zeros((2, 2)), np.zeros((2, 8))], {})
    with pytest.raises(RuntimeError, match="the gates must have at least 1 dim"):
        _run("gru_cell", [np.zeros(())] * 3, {})
    a = _adam_attrs()
    with pytest.raises(RuntimeError, match=r"adam_: grad has shape \[3\] but param has shape \[2\]"):
        _run("adam_", [np.zeros(2), np.zeros(2), np.zeros(2), np.zeros(3)], a)
    with pytest.raises(ValueError, match="adam_: exp_avg must be contiguous"):
        _run("adam_", [np.zeros(2), np.zeros(4)[::2], np.zeros(2), np.zeros(2)], a)
    with pytest.raises(ValueError, match="adam_: step must be >= 1"):
        _run("adam_", [np.zeros(2) for _ in range(4)], _adam_attrs(step=0.0))
    shared = np.zeros(2)
    with pytest.raises(ValueError, match="adam_: exp_avg and exp_avg_sq share memory"):
        _run("adam_", [np.zeros(2), shared, shared, np.zeros(2)], a)
    with pytest.raises(ValueError, match="sgd_: param and grad share memory; the update writes param"):
        _run("sgd_", [shared, np.zeros(2), shared], _sgd_attrs())
    with pytest.raises(TypeError, match="sgd_: input 2 has dtype float32"):
        _run("sgd_", [np.zeros(2), np.zeros(2), np.zeros(2, np.float32)], _sgd_attrs())


# ------------------------------------------------------- cell gradients
def _numgrad(fn, arrays, i, eps=1e-6):
    num = np.zeros_like(arrays[i])
    flat = arrays[i].reshape(-1)
    for k in range(flat.size):
        old = flat[k]
        flat[k] = old + eps
        hi = fn(arrays)
        flat[k] = old - eps
        lo = fn(arrays)
        flat[k] = old
        num.reshape(-1)[k] = (hi - lo) / (2 * eps)
    return num


@pytest.mark.parametrize("name,nout", [("lstm_cell", 2), ("gru_cell", 1)])
def test_cell_gradients_through_all_outputs(name, nout):
    """sum_k <out_k, v_k> over the differentiable outputs (h', c' for LSTM),
    so the backward op sees nonzero gradients for every output."""
    arrays = [np.array(a) for a in CASES[name][0][0]]
    outs0 = _run(name, arrays, {})[1]
    vs = [R.uniform(-1, 1, size=tuple(o.shape)) for o in outs0[:nout]]

    def value(arrs):
        outs = _run(name, [a.copy() for a in arrs], {})[1]
        return sum((oc.npy(o) * v).sum() for o, v in zip(outs, vs))

    leaves = [oc.jn(a.copy()) for a in arrays]
    for t in leaves:
        _C._set_requires_grad(t, True)
    outs = list(_C._op(name, leaves, ()))[:nout]
    grads = _C._autograd_grad(outs, [oc.jn(v) for v in vs], leaves, False, True)
    for i in range(3):
        np.testing.assert_allclose(oc.npy(grads[i]), _numgrad(value, arrays, i), rtol=1e-5, atol=1e-7,
                                   err_msg=f"d {name} / d input {i}")


# ------------------------------------------------- modules: fused vs not
def _module_run(make, x, state, fused):
    prev = jmod._FUSED_CELLS
    jmod._FUSED_CELLS = fused
    try:
        janus.manual_seed(3)
        m = make()
        xs = janus.tensor(x, requires_grad=True)
        st = None if state is None else tuple(janus.tensor(s, requires_grad=True) for s in state)
        if st is not None and len(st) == 1:
            st = st[0]
        out = m(xs, st)
        outs = list(out) if isinstance(out, tuple) else [out]
        if isinstance(outs[-1], tuple):  # nn.LSTM: (out, (h, c))
            outs = outs[:-1] + list(outs[-1])
        loss = sum((o * (k + 1.5)).sum() for k, o in enumerate(outs))
        loss.backward()
        grads = [xs.grad] + [p.grad for p in m.parameters()]
        if st is not None:
            grads += [s.grad for s in (st if isinstance(st, tuple) else (st,))]
        return [oc.npy(o) for o in outs], [oc.npy(g) for g in grads]
    finally:
        jmod._FUSED_CELLS = prev


MODULES = [
    ("lstmcell", lambda: jnn.LSTMCell(6, 5), (4, 6), [(4, 5), (4, 5)]),
    ("lstmcell-unbatched", lambda: jnn.LSTMCell(6, 5), (6,), [(5,), (5,)]),
    ("lstmcell-nostate", lambda: jnn.LSTMCell(6, 5, bias=False), (4, 6), None),
    ("grucell", lambda: jnn.GRUCell(6, 5), (4, 6), [(4, 5)]),
    ("grucell-nostate", lambda: jnn.GRUCell(6, 5), (3, 6), None),
    ("lstm", lambda: jnn.LSTM(6, 5, num_layers=2, batch_first=True), (3, 4, 6), None),
    ("gru", lambda: jnn.GRU(6, 5), (4, 3, 6), None),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", MODULES, ids=[m[0] for m in MODULES])
def test_modules_fused_matches_unfused(case, dtype):
    _, make, xshape, sshapes = case

    def mk():
        m = make()
        return m.double() if dtype == np.float64 else m
    x = R.standard_normal(xshape).astype(dtype)
    st = None if sshapes is None else [R.standard_normal(s).astype(dtype) for s in sshapes]
    o1, g1 = _module_run(mk, x, st, True)
    o0, g0 = _module_run(mk, x, st, False)
    for a, b in zip(o1, o0):  # same expressions, no FMA: bit-identical forward
        np.testing.assert_array_equal(a, b)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
    assert len(g1) == len(g0)
    for a, b in zip(g1, g0):
        np.testing.assert_allclose(a, b, **tol)


def test_half_dtype_cell_falls_back():
    m = jnn.LSTMCell(3, 2).to(janus.bfloat16)
    h, c = m(janus.randn(4, 3).to(janus.bfloat16))
    assert h.dtype == janus.bfloat16 and tuple(c.shape) == (4, 2)


# ------------------------------------------------ optimizers: fused vs not
OPT_CONFIGS = [
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, maximize=True, weight_decay=0.05)),
    ("Adam", dict(lr=0.01, betas=(0.3, 0.9))),
    ("AdamW", dict(lr=0.01, weight_decay=0.3)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1, maximize=True)),
]


def _opt_run(lib, cls, kw, inits, grads):
    params = [lib.tensor(a.copy(), requires_grad=True) for a in inits]
    opt = getattr(lib.optim, cls)(params, **kw)
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = lib.tensor(g.copy())
        opt.step()
    state = [{k: v for k, v in opt.state[p].items()} for p in params]
    return [p.detach().numpy().copy() for p in params], state


def _with_fused(on, fn):
    prev = jadam._FUSED, jsgd._FUSED
    jadam._FUSED = jsgd._FUSED = on
    try:
        return fn()
    finally:
        jadam._FUSED, jsgd._FUSED = prev


def _opt_data(dtype):
    shapes = [(5, 4), (4,), (3, 2, 2)]
    inits = [R.standard_normal(s).astype(dtype) for s in shapes]
    grads = [[R.standard_normal(s).astype(dtype) for s in shapes] for _ in range(6)]
    return inits, grads


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cfg", OPT_CONFIGS, ids=[f"{c}-{k}" for c, k in OPT_CONFIGS])
def test_fused_optimizer_matches_unfused(cfg, dtype):
    """The fused op does the unfused update's operations in the same order
    and precision: the results are identical, step after step."""
    cls, kw = cfg
    inits, grads = _opt_data(dtype)
    fused, sf = _with_fused(True, lambda: _opt_run(janus, cls, kw, inits, grads))
    plain, sp = _with_fused(False, lambda: _opt_run(janus, cls, kw, inits, grads))
    for a, b in zip(fused, plain):
        assert a.dtype == dtype
        np.testing.assert_array_equal(a, b)
    for a, b in zip(sf, sp):
        assert a.keys() == b.keys()
        for k in a:
            va = a[k].numpy() if hasattr(a[k], "numpy") else a[k]
            vb = b[k].numpy() if hasattr(b[k], "numpy") else b[k]
            np.testing.assert_array_equal(va, vb)


@pytest.mark.parametrize("cfg", OPT_CONFIGS, ids=[f"{c}-{k}" for c, k in OPT_CONFIGS])
def test_fused_optimizer_matches_torch(cfg):
    torch = pytest.importorskip("torch")
    cls, kw = cfg
    inits, grads = _opt_data(np.float32)
    got, _ = _with_fused(True, lambda: _opt_run(janus, cls, kw, inits, grads))
    want, _ = _opt_run(torch, cls, kw, inits, grads)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_fused_update_bumps_every_written_version():
    p, m, v, g = (janus.tensor(R.standard_normal(4)) for _ in range(4))
    v = v.abs()
    before = [t._version for t in (p, m, v, g)]
    out = janus.ops.adam_(p, m, v, g, lr=0.1, beta1=0.9, beta2=0.99, eps=1e-8, step=1.0)
    assert [o._id for o in out] == [p._id, m._id, v._id]
    assert [t._version for t in (p, m, v, g)] == [before[0] + 1, before[1] + 1, before[2] + 1, before[3]]
    buf = janus.zeros(4, dtype=janus.float64)
    b0 = (p._version, buf._version, g._version)
    janus.ops.sgd_(p, buf, g, lr=0.1, momentum=0.9, first=True)
    assert (p._version, buf._version, g._version) == (b0[0] + 1, b0[1] + 1, b0[2])
    np.testing.assert_array_equal(buf.numpy(), g.numpy())


def test_fused_update_refuses_leaf_requiring_grad():
    p = janus.zeros(3, requires_grad=True)
    m, v, g = janus.zeros(3), janus.zeros(3), janus.ones(3)
    with pytest.raises(RuntimeError, match=r"leaf Variable that requires grad .*\(adam_\)"):
        janus.ops.adam_(p, m, v, g, lr=0.1, beta1=0.9, beta2=0.99, eps=1e-8, step=1.0)
    with janus.no_grad():
        janus.ops.adam_(p, m, v, g, lr=0.1, beta1=0.9, beta2=0.99, eps=1e-8, step=1.0)
    assert (p.detach().numpy() < 0).all()


def test_fused_update_saved_tensor_check():
    """A tensor saved for backward and then written by a fused update (its
    second output) makes backward fail loudly, as for any in-place op."""
    w = janus.ones(3, requires_grad=True)
    m = janus.ones(3)
    y = (w * m).sum()  # saves m
    with janus.no_grad():
        janus.ops.adam_(janus.zeros(3), m, janus.ones(3), janus.ones(3), lr=0.1, beta1=0.9, beta2=0.99,
                        eps=1e-8, step=1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_multi_output_inplace_ops_are_nograd():
    """dispatch.c records autograd history for input 0 of an in-place op
    only; ops writing several inputs must therefore be no-grad."""
    for n in _C.op_names():
        info = _C.op_info(n)
        if info["flags"] & _C.JN_F_INPLACE and info["nout"] > 1:
            assert info["flags"] & _C.JN_F_NOGRAD, n
            assert info["nin"] >= info["nout"], n


@pytest.mark.parametrize("cls,kw", [("Adam", dict(betas=(0.9, 0.99))), ("SGD", dict(momentum=0.9))])
def test_tensor_hyperparameters_take_the_unfused_path(cls, kw):
    """A tensor lr can't be a float attribute: the update falls back to the
    unfused ops and gives the same result as the number."""
    inits, grads = _opt_data(np.float64)
    want, _ = _opt_run(janus, cls, dict(kw, lr=0.01), inits, grads)
    got, _ = _opt_run(janus, cls, dict(kw, lr=janus.tensor(0.01, dtype=janus.float64)), inits, grads)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
