"""Mixed precision (runtime/autocast.c, janus/amp/): autocast and GradScaler.

On the cpu with bfloat16 and float16: the dtypes each op class produces
inside and outside a region (lower precision GEMMs/convolutions, float32
losses, promoting joins, untouched ops), nesting, enabled=False, the
decorator, per-thread state, gradient dtypes after backward, the cast
cache; the cuda column of the policy table through the planner on tensors
*labelled* as cuda (no data moves); against PyTorch's cpu autocast when
torch is installed (output dtypes per op, an MLP forward + backward within
bfloat16 tolerance, GradScaler's scale sequence with an injected inf);
and `janus record` / `optimize` / `replay` of an autocast training script
against its eager run.  GPU runs skip without a CUDA device."""
import os
import re
import subprocess
import sys
import threading
import warnings

import pytest

import janus
import janus.nn as nn
import janus.nn.functional as F
from janus import _C

try:
    import torch
except ImportError:  # torch is optional
    torch = None

HAVE_GPU = janus.cuda.is_available()
LOW = [janus.bfloat16, janus.float16]
needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


def low_id(d):
    return str(d).split(".")[-1]


# ------------------------------------------------------- op classes, cpu
@pytest.mark.parametrize("low", LOW, ids=low_id)
def test_lower_precision_ops_cast_to_the_region_dtype(low):
    x, w = janus.randn(4, 8), janus.randn(8, 8)
    img, k = janus.randn(1, 2, 6, 6), janus.randn(3, 2, 3, 3)
    cases = {
        "mm": lambda: x.mm(w), "matmul": lambda: x @ w, "bmm": lambda: janus.bmm(x[None], w[None]),
        "addmm": lambda: janus.addmm(x, x, w), "linear": lambda: F.linear(x, w, janus.zeros(8)),
        "conv2d": lambda: F.conv2d(img, k, janus.zeros(3)),
    }
    for name, f in cases.items():
        assert f().dtype == janus.float32, name  # outside: untouched
        with janus.autocast("cpu", dtype=low):
            assert f().dtype == low, name
        assert f().dtype == janus.float32, name
    with janus.autocast("cpu", dtype=low):  # float64 is left alone (PyTorch's rule), ints too
        assert (x.double() @ w.double()).dtype == janus.float64
        assert janus.ones(2, 2, dtype=janus.int64).sum().dtype == janus.int64


@pytest.mark.parametrize("low", LOW, ids=low_id)
def test_float32_ops_and_composites_cast_up(low):
    h = janus.randn(4, 8).to(low)
    t = janus.tensor([0, 1, 2, 3])
    with janus.autocast("cpu", dtype=low):
        assert h.prod().dtype == janus.float32
        assert F.cross_entropy(h, t).dtype == janus.float32
        assert F.nll_loss(h.log_softmax(1), t).dtype == janus.float32
        assert F.mse_loss(h, janus.randn(4, 8)).dtype == janus.float32
        assert F.l1_loss(h, h).dtype == janus.float32
        assert F.binary_cross_entropy_with_logits(h, janus.rand(4, 8)).dtype == janus.float32
        # PyTorch's cpu lists run these in the input's dtype (its cuda list does not)
        for f in (lambda: h.softmax(1), lambda: h.exp(), lambda: h.sum(), lambda: h.relu(), lambda: h.mean(),
                  lambda: F.layer_norm(h, (8,))):
            assert f().dtype == low
        assert nn.CrossEntropyLoss()(h, t).dtype == janus.float32  # modules go through nn.functional
    assert F.mse_loss(h, h).dtype == low


@pytest.mark.parametrize("low", LOW, ids=low_id)
def test_promote_ops_follow_the_widest_type(low):
    a, b = janus.randn(2, 3), janus.randn(2, 3).to(low)
    with janus.autocast("cpu", dtype=low):
        assert janus.cat([a, b]).dtype == janus.float32
        assert janus.stack([b, a]).dtype == janus.float32
        assert janus.cat([b, b]).dtype == low
        assert (a + b).dtype == janus.float32  # native promotion, no autocast needed
        assert (b * 2.0).dtype == low          # Python numbers are never cast


def test_nesting_enabled_false_and_queries():
    x, w = janus.randn(2, 4), janus.randn(4, 4)
    assert not janus.is_autocast_enabled("cpu") and janus.get_autocast_dtype("cpu") == janus.bfloat16
    assert janus.get_autocast_dtype("cuda") == janus.float16
    with janus.autocast("cpu"):
        assert janus.is_autocast_enabled("cpu") and not janus.is_autocast_enabled()  # no arg: cuda
        assert janus.is_autocast_cpu_enabled()
        assert (x @ w).dtype == janus.bfloat16
        with janus.autocast("cpu", enabled=False):
            assert (x @ w).dtype == janus.float32 and not janus.is_autocast_enabled("cpu")
            with janus.autocast("cpu", dtype=janus.float16):
                assert (x @ w).dtype == janus.float16 and janus.get_autocast_dtype("cpu") == janus.float16
            assert (x @ w).dtype == janus.float32
        assert (x @ w).dtype == janus.bfloat16 and janus.get_autocast_dtype("cpu") == janus.bfloat16
    assert (x @ w).dtype == janus.float32 and not janus.is_autocast_enabled("cpu")
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'tpu'"):
        janus.autocast("tpu")
    with pytest.warns(UserWarning, match="target dtype is not supported"):
        ac = janus.autocast("cpu", dtype=janus.float64)
    with ac:
        assert (x @ w).dtype == janus.float32


def test_an_exception_restores_the_state():
    with pytest.raises(ZeroDivisionError):
        with janus.autocast("cpu"):
            1 / 0
    assert not janus.is_autocast_enabled("cpu") and _C._autocast_cache_size() == 0


def test_decorator_and_aliases():
    x, w = janus.randn(2, 4), janus.randn(4, 4)

    @janus.autocast("cpu")
    def f(n):
        return (x @ w).dtype if n == 0 else f(n - 1)

    assert f(3) == janus.bfloat16 and not janus.is_autocast_enabled("cpu")

    @janus.cpu.amp.autocast(dtype=janus.float16)
    def g():
        return (x @ w).dtype

    assert g() == janus.float16
    with janus.amp.autocast("cpu"):
        assert (x @ w).dtype == janus.bfloat16
    with janus.cpu.amp.autocast():
        assert (x @ w).dtype == janus.bfloat16
    assert janus.cuda.amp.GradScaler is not None and janus.amp.GradScaler is not None


@pytest.mark.skipif(HAVE_GPU, reason="this machine has a GPU")
def test_cuda_autocast_without_a_gpu_warns_and_is_off():
    with pytest.warns(UserWarning, match="CUDA is not available"):
        ac = janus.cuda.amp.autocast()
    with ac:
        assert not janus.is_autocast_enabled("cuda")
    with pytest.warns(UserWarning, match="CUDA is not available"):
        assert not janus.cuda.amp.GradScaler().is_enabled()


def test_state_is_per_thread():
    x, w = janus.randn(2, 4), janus.randn(4, 4)
    seen = []
    inside, done = threading.Event(), threading.Event()

    def other():
        inside.wait()
        seen.append(((x @ w).dtype, janus.is_autocast_enabled("cpu")))
        done.set()

    t = threading.Thread(target=other)
    t.start()
    with janus.autocast("cpu"):
        inside.set()
        done.wait()
        assert (x @ w).dtype == janus.bfloat16
    t.join()
    assert seen == [(janus.float32, False)]


# ---------------------------------------------------------- autograd, cache
@pytest.mark.parametrize("low", LOW, ids=low_id)
def test_gradients_have_the_parameters_dtypes(low):
    janus.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    x, t = janus.randn(5, 8), janus.tensor([0, 1, 2, 0, 1])
    with janus.autocast("cpu", dtype=low):
        out = m(x)
        loss = F.cross_entropy(out, t)
    assert out.dtype == low and loss.dtype == janus.float32
    assert out.grad_fn is not None
    loss.backward()
    for p in m.parameters():
        assert p.grad is not None and p.grad.dtype == p.dtype == janus.float32
    # the casts are ordinary differentiable ops: the cast's gradient is cast back
    x2 = janus.randn(3, 8, requires_grad=True)
    with janus.autocast("cpu", dtype=low):
        y = m[0](x2)
    y.float().sum().backward()
    assert x2.grad.dtype == janus.float32


def test_backward_inside_the_region_runs_in_the_forward_dtypes():
    w = janus.randn(4, 4, requires_grad=True)
    x = janus.randn(3, 4)
    with janus.autocast("cpu"):
        (x @ w).float().softmax(1).sum().backward()
        assert w.grad.dtype == janus.float32
        assert janus.is_autocast_enabled("cpu")  # the engine suspended it only while it ran


def test_cast_cache():
    lin = nn.Linear(4, 4)
    x = janus.randn(2, 4)
    with janus.autocast("cpu"):
        a = lin(x)
        assert _C._autocast_cache_size() == 2  # weight and bias, cast once
        b = lin(x)
        assert _C._autocast_cache_size() == 2
        assert janus.equal(a, b)
        x @ x.t()  # neither a leaf that requires grad: not cached
        assert _C._autocast_cache_size() == 2
        with janus.autocast("cpu"):  # nested: the outer region's cache
            lin(x)
            assert _C._autocast_cache_size() == 2
        assert _C._autocast_cache_size() == 2
        with janus.no_grad():
            lin.weight.mul_(2.0)  # written in place: the cached cast is stale
        c = lin(x)
        assert not janus.equal(a, c)
    assert _C._autocast_cache_size() == 0
    with janus.autocast("cpu", cache_enabled=False):
        lin(x)
        assert _C._autocast_cache_size() == 0


def test_cached_casts_survive_two_backward_passes_in_one_region():
    lin = nn.Linear(4, 2)
    x = janus.randn(3, 4)
    with janus.autocast("cpu"):
        lin(x).float().sum().backward()
        g1 = lin.weight.grad.clone()
        lin(x).float().sum().backward()  # the first backward released the cached cast's node
    assert janus.allclose(lin.weight.grad, 2 * g1)


# ------------------------------------------------- the policy table, cuda
def test_policy_table_lists():
    names = _C.op_names()
    by = {}
    for dev in (0, 1):
        for n in names:
            by.setdefault((dev, _C._autocast_policy(dev, n)), set()).add(n)
    lower = {"mm", "bmm", "matmul", "addmm", "linear", "conv2d"}
    assert by[(0, 1)] == lower and by[(1, 1)] == lower
    assert by[(0, 2)] == {"prod", "linalg_inv", "linalg_solve", "linalg_cholesky_ex", "linalg_eigh", "linalg_svd",
                          "linalg_qr"}
    assert {"softmax", "log_softmax", "exp", "log", "pow", "sum", "prod", "rsqrt"} <= by[(1, 2)]
    assert {"cat", "stack"} <= by[(0, 3)] and {"cat", "stack", "scatter_add"} <= by[(1, 3)]
    # nothing in-place, no view, no factory: autocast never rewrites a written tensor
    for (dev, pol), ops in by.items():
        for n in ops:
            if pol:
                info = _C.op_info(n)
                assert not info["flags"] & (_C.JN_F_INPLACE | _C.JN_F_VIEW | _C.JN_F_FACTORY), n


class _labelled_cuda:
    """CPU tensors labelled cuda:0 for the duration (no data moves, no kernel runs)."""

    def __init__(self, *ts):
        self.ts = ts

    def __enter__(self):
        self.old = [_C._debug_mark_device(t, 1) for t in self.ts]

    def __exit__(self, *exc):
        for t, o in zip(self.ts, self.old):
            _C._debug_mark_device(t, o)


class _cuda_region:
    """The cuda column enabled on this thread without a GPU (planner only)."""

    def __enter__(self):
        self.prev = _C._autocast_set(1, True, janus.float16._code, True)

    def __exit__(self, *exc):
        _C._autocast_set(1, *self.prev)


def test_cuda_column_through_the_planner():
    f32, f16, bf16 = janus.float32._code, janus.float16._code, janus.bfloat16._code
    a, h, b = janus.randn(2, 2), janus.randn(2, 2).half(), janus.randn(2, 2).bfloat16()
    with _cuda_region():
        assert _C._autocast_plan("softmax", (h,)) == [-1]  # cpu tensors: the cpu column (off)
        with _labelled_cuda(a, h, b):
            assert _C._autocast_plan("mm", (a, h)) == [f16, -1]
            assert _C._autocast_plan("softmax", (h,)) == [f32]
            assert _C._autocast_plan("exp", (b,)) == [f32]
            assert _C._autocast_plan("relu", (h,)) == [-1]
            assert _C._autocast_plan("cat", (h, b)) == [f32, f32]
            assert _C._autocast_plan("lstm_cell", (h, h, a)) == [f32, f32, -1]
            assert _C._autocast_plan("div", (h, h)) == [-1, -1]  # float32 only for `2 / x`
    with _labelled_cuda(h):
        assert _C._autocast_plan("softmax", (h,)) == [-1]  # region off
    with janus.autocast("cpu"), _labelled_cuda(a):
        assert _C._autocast_plan("mm", (a, a)) == [-1, -1]  # cpu region: cuda tensors untouched
        assert _C._autocast_plan("mm", (janus.randn(2, 2), janus.randn(2, 2))) == [bf16, bf16]


@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA device: 1 autocast GPU check not run "
                    f"({janus.cuda._unavailable_reason()})")
def test_cuda_autocast_on_a_gpu():
    x, w = janus.randn(4, 8, device="cuda"), janus.randn(8, 8, device="cuda", requires_grad=True)
    with janus.autocast("cuda"):
        y = x @ w
        assert y.dtype == janus.float16 and y.softmax(1).dtype == janus.float32
        assert y.exp().dtype == janus.float32 and y.relu().dtype == janus.float16
        loss = F.mse_loss(y, janus.zeros(4, 8, device="cuda"))
    assert loss.dtype == janus.float32
    loss.backward()
    assert w.grad.dtype == janus.float32 and w.grad.is_cuda
    # GradScaler on the device: a clean step updates, an inf step is skipped and backs off
    m = nn.Linear(8, 4).to("cuda")
    opt = janus.optim.SGD(m.parameters(), lr=0.1)
    scaler = janus.cuda.amp.GradScaler(init_scale=1024.0)
    for inject in (False, True):
        before = m.weight.detach().cpu().clone()
        opt.zero_grad()
        with janus.autocast("cuda"):
            out = m(x)
        scaler.scale(out.float().pow(2).mean()).backward()
        if inject:
            with janus.no_grad():
                m.weight.grad.fill_(float("inf"))
        scaler.step(opt)
        scaler.update()
        moved = not janus.equal(before, m.weight.detach().cpu())
        assert moved != inject
    assert scaler.get_scale() == 512.0


# ----------------------------------------------------------- against torch
def _cases(lib, F_):
    """(name, fn(x, w)) over a [4, 8] input and an [8, 8] weight."""
    tgt = lib.tensor([0, 1, 2, 3])
    return [
        ("mm", lambda x, w: x.mm(w)), ("matmul", lambda x, w: x @ w),
        ("bmm", lambda x, w: lib.bmm(x[None], w[None])), ("addmm", lambda x, w: lib.addmm(x, x, w)),
        ("linear", lambda x, w: F_.linear(x, w, lib.zeros(8))),
        ("conv2d", lambda x, w: F_.conv2d(x[None, None], w[None, None, :3, :3])),
        ("softmax", lambda x, w: x.softmax(1)), ("log_softmax", lambda x, w: x.log_softmax(1)),
        ("exp", lambda x, w: x.exp()), ("log", lambda x, w: x.abs().log()), ("pow", lambda x, w: x.pow(2)),
        ("sum", lambda x, w: x.sum()), ("mean", lambda x, w: x.mean()), ("prod", lambda x, w: x.prod()),
        ("var", lambda x, w: x.var()), ("logsumexp", lambda x, w: x.logsumexp(1)),
        ("layer_norm", lambda x, w: F_.layer_norm(x, (8,))),
        ("cross_entropy", lambda x, w: F_.cross_entropy(x, tgt)),
        ("nll_loss", lambda x, w: F_.nll_loss(x, tgt)),
        ("mse_loss", lambda x, w: F_.mse_loss(x, w[:4])), ("l1_loss", lambda x, w: F_.l1_loss(x, w[:4])),
        ("bce_logits", lambda x, w: F_.binary_cross_entropy_with_logits(x, w[:4].float().sigmoid())),
        ("cat_mixed", lambda x, w: lib.cat([x, w.float()])),
        ("stack_mixed", lambda x, w: lib.stack([x[:4], w.float()[:4]])),
        ("relu", lambda x, w: x.relu()), ("tanh", lambda x, w: x.tanh()), ("sigmoid", lambda x, w: x.sigmoid()),
        ("max_pool2d", lambda x, w: F_.max_pool2d(x[None, None], 2)),
        ("avg_pool2d", lambda x, w: F_.avg_pool2d(x[None, None], 2)),
        ("embedding", lambda x, w: F_.embedding(lib.tensor([1, 2]), w)),
        ("rsqrt", lambda x, w: x.abs().rsqrt()), ("reciprocal", lambda x, w: x.reciprocal()),
        ("atan2", lambda x, w: lib.atan2(x, w[:4].float())),
        ("where", lambda x, w: lib.where(x > 0, x, w[:4].float())),
    ]


@needs_torch
@pytest.mark.parametrize("low", ["bfloat16", "float16"])
def test_output_dtypes_match_torch_cpu_autocast(low):
    import torch.nn.functional as TF
    jc, tc = _cases(janus, F), _cases(torch, TF)
    jl, tl = getattr(janus, low), getattr(torch, low)
    diffs = []
    for (name, jf), (_, tf) in zip(jc, tc):
        for first in ("float32", low):
            x, w = janus.randn(4, 8), janus.randn(8, 8)
            xt, wt = torch.tensor(x.tolist()), torch.tensor(w.tolist())
            x, w = x.to(getattr(janus, first)), w.to(getattr(janus, first))
            xt, wt = xt.to(getattr(torch, first)), wt.to(getattr(torch, first))
            with janus.autocast("cpu", dtype=jl):
                jd = str(jf(x, w).dtype).split(".")[-1]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with torch.autocast("cpu", dtype=tl):
                    td = str(tf(xt, wt).dtype).split(".")[-1]
            if jd != td:
                diffs.append((name, first, jd, td))
    assert not diffs


@needs_torch
def test_rnn_cells_match_torch_dtypes():
    """The GEMMs of a cell step run in bfloat16, its pointwise part promotes
    with the float32 state: h and c stay float32, as in PyTorch's cpu autocast."""
    x = janus.randn(3, 8)
    for jc, tc in ((nn.LSTMCell(8, 4), torch.nn.LSTMCell(8, 4)), (nn.GRUCell(8, 4), torch.nn.GRUCell(8, 4))):
        with janus.autocast("cpu"):
            jo = jc(x)
            jo = jo if isinstance(jo, tuple) else (jo,)
            jo2 = jc(x, jo if len(jo) > 1 else jo[0])
        with torch.autocast("cpu", dtype=torch.bfloat16):
            to = tc(torch.tensor(x.tolist()))
            to = to if isinstance(to, tuple) else (to,)
            to2 = tc(torch.tensor(x.tolist()), to if len(to) > 1 else to[0])
        jd = [str(t.dtype).split(".")[-1] for t in jo + (jo2 if isinstance(jo2, tuple) else (jo2,))]
        td = [str(t.dtype).split(".")[-1] for t in to + (to2 if isinstance(to2, tuple) else (to2,))]
        assert jd == td, (type(jc).__name__, jd, td)


def _mlp_pair():
    janus.manual_seed(1)
    jm = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 5))
    tm = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32), torch.nn.Tanh(),
                             torch.nn.Linear(32, 5))
    with torch.no_grad():
        for pj, pt in zip(jm.parameters(), tm.parameters()):
            pt.copy_(torch.tensor(pj.tolist()))
    return jm, tm


@needs_torch
def test_mlp_forward_backward_matches_torch_bf16():
    jm, tm = _mlp_pair()
    x = janus.randn(8, 16)
    tgt = [0, 1, 2, 3, 4, 0, 1, 2]
    with janus.autocast("cpu", dtype=janus.bfloat16):
        jo = jm(x)
        jl = F.cross_entropy(jo, janus.tensor(tgt))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        to = tm(torch.tensor(x.tolist()))
        tl = torch.nn.functional.cross_entropy(to, torch.tensor(tgt))
    assert str(jo.dtype) == "janus.bfloat16" and to.dtype == torch.bfloat16 and jl.dtype == janus.float32
    jl.backward()
    tl.backward()
    # bfloat16 has 8 significant bits: outputs within a few ulps (2^-8 relative)
    out_j, out_t = jo.float().tolist(), to.float().tolist()
    for rj, rt in zip(out_j, out_t):
        for a, b in zip(rj, rt):
            assert abs(a - b) <= 2 ** -6 * max(abs(b), 0.5), (a, b)
    assert abs(jl.item() - tl.item()) <= 2e-2 * abs(tl.item())
    for pj, pt in zip(jm.parameters(), tm.parameters()):
        assert pj.grad.dtype == janus.float32 and pt.grad.dtype == torch.float32
        gj, gt = torch.tensor(pj.grad.tolist()), pt.grad
        assert (gj - gt).abs().max().item() <= 3e-2 * gt.abs().max().item() + 1e-3


# ------------------------------------------------------------- GradScaler
def _scaler_run(lib, scaler, inf_steps, steps=12):
    p = lib.nn.Parameter(lib.tensor([1.0, -2.0, 3.0]))
    opt = lib.optim.SGD([p], lr=0.01)
    x = lib.tensor([0.5, 0.25, -1.0])
    scales, values = [], []
    for i in range(steps):
        opt.zero_grad()
        scaler.scale((p * x).sum() ** 2).backward()
        if i in inf_steps:
            with lib.no_grad():
                p.grad[1] = float("inf") if i % 2 else float("nan")
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
        values.append([round(v, 5) for v in p.tolist()])
    return scales, values, scaler.state_dict()


@needs_torch
def test_grad_scaler_matches_torch_with_an_injected_inf():
    kw = dict(init_scale=2.0 ** 4, growth_interval=3)
    js, jv, jsd = _scaler_run(janus, janus.amp.GradScaler("cpu", **kw), {4, 5, 9})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts, tv, tsd = _scaler_run(torch, torch.amp.GradScaler("cpu", **kw), {4, 5, 9})
    assert js == ts, (js, ts)
    assert js[3] == 32.0 and js[4] == 16.0 and js[5] == 8.0  # grown after 3 clean steps, backed off twice
    assert jv == tv
    assert jv[4] == jv[3] and jv[5] == jv[4]  # skipped steps leave the parameter alone
    assert jsd == tsd


def test_grad_scaler_errors_state_and_disabled():
    s = janus.amp.GradScaler("cpu")
    p = nn.Parameter(janus.ones(2))
    opt = janus.optim.SGD([p], lr=0.1)
    with pytest.raises(AssertionError, match="did not use scaler.scale"):
        s.step(opt)
    assert s.get_scale() == 2.0 ** 16
    s.scale(p.sum()).backward()
    s.unscale_(opt)
    assert janus.equal(p.grad, janus.ones(2))
    with pytest.raises(RuntimeError, match="already been called on this optimizer"):
        s.unscale_(opt)
    s.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        s.step(opt)
    s.update(4.0)
    assert s.get_scale() == 4.0
    t = janus.amp.GradScaler("cpu")
    t.load_state_dict(s.state_dict())
    assert t.state_dict() == s.state_dict() and t.get_scale() == 4.0
    off = janus.amp.GradScaler("cpu", enabled=False)
    loss = p.sum()
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}
    with pytest.raises(RuntimeError, match="state dict is empty"):
        t.load_state_dict({})
    with pytest.raises(ValueError, match="growth factor"):
        janus.amp.GradScaler("cpu", growth_factor=1.0)


# ------------------------------------------------ record / optimize / replay
AMP_SCRIPT = '''
import sys
import janus
import janus.nn as nn
import janus.nn.functional as F

janus.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
opt = janus.optim.SGD(model.parameters(), lr=0.1)
scaler = janus.amp.GradScaler("cpu", init_scale=256.0, growth_interval=4)
x = janus.randn(64, 16)
y = janus.randint(0, 4, (64,))
for step in range(24):
    xb, yb = x[(step % 4) * 16:(step % 4 + 1) * 16], y[(step % 4) * 16:(step % 4 + 1) * 16]
    with janus.autocast("cpu", dtype=janus.{dtype}):
        loss = F.cross_entropy(model(xb), yb)
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    print(step, repr(loss.item()), scaler.get_scale())
print("final", [repr(v) for p in model.parameters() for v in p.reshape(-1).tolist()[:8]])
'''


@pytest.mark.parametrize("low", ["bfloat16", "float16"])
def test_record_optimize_replay_gives_the_eager_losses(tmp_path, low):
    from dynamic_runs import ROOT, env, have_optimize, janus as janus_cmd
    if not have_optimize():
        pytest.skip("janus optimize is not built")
    script = os.path.join(str(tmp_path), "amp_train.py")
    with open(script, "w") as f:
        f.write(AMP_SCRIPT.replace("{dtype}", low))
    db = os.path.join(str(tmp_path), "run.db")
    eager = subprocess.run([sys.executable, script], capture_output=True, text=True, env=env(), timeout=300)
    assert eager.returncode == 0, eager.stderr[-3000:]
    r = janus_cmd("record", "--db", db, "--", sys.executable, script, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout == eager.stdout
    r = janus_cmd("optimize", db, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    rep = subprocess.run([sys.executable, script], capture_output=True, text=True,
                         env=env(JANUS_REPLAY_DB=db), timeout=300)
    assert rep.returncode == 0, rep.stderr[-3000:]
    assert rep.stdout == eager.stdout
    m = re.search(r"janus replay: (\d+)% of ([\d,]+) segments ran as compiled graphs", rep.stderr)
    assert m and int(m.group(1)) >= 75, rep.stderr[-2000:]  # the casts run inside the graphs
    # the recorded steps hold the casts as ordinary ops
    ev = _C._rec_read_step(db, 1, 3)
    casts = [x for x in ev if x["kind"] == "op" and x["op"] == "cast"]
    assert len(casts) >= 4, len(casts)
