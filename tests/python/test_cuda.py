"""The CUDA eager backend (runtime/cuda/, runtime/jn_backend.h).

Two halves.  Host-side checks run everywhere: device selection and its
messages (mixed devices, ops without a CUDA kernel), the behaviour without
a GPU (is_available() False, .cuda() and device='cuda' raise saying why),
cpu no-ops, and the unsupported-op list in docs/ARCHITECTURE.md against the
op table.  GPU checks compare every CUDA-implemented op (forward, and
backward where autograd applies) with the CPU result, plus transfers, the
allocator counters and an MLP training step; they skip with a message
naming how many were not run when no CUDA device is present.

A tensor can be *labelled* as living on CUDA without a GPU
(_C._debug_mark_device): the dispatcher's device checks run before any
data is touched, so their errors can be tested for real here.
"""
import math
import os
import re

import pytest

import janus
from janus import _C

HAVE_GPU = janus.cuda.is_available()
WHY = janus.cuda._unavailable_reason()
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# ------------------------------------------------------------ host side
class labelled_cuda:
    """A CPU tensor labelled as a cuda:0 tensor for the duration (no data moves)."""

    def __init__(self, t):
        self.t = t

    def __enter__(self):
        self.old = _C._debug_mark_device(self.t, 1)
        return self.t

    def __exit__(self, *exc):
        _C._debug_mark_device(self.t, self.old)


def test_cpu_selection_and_noops():
    a, b = janus.ones(3), janus.ones(3)
    assert _C._select_device("add", [a, b]) == 0
    assert _C._select_device("full", []) == 0
    assert a.device == janus.device("cpu") and not a.is_cuda
    assert a.cpu() is a and a.to("cpu") is a and a.to(janus.device("cpu")) is a
    m = janus.nn.Linear(2, 2)
    w = m.weight
    assert m.to("cpu") is m and m.weight is w and m.cpu().weight is w  # unchanged params keep identity
    assert janus.zeros(2, device="cpu").device.type == "cpu"


def test_mixed_devices_name_the_op_and_inputs():
    a, b = janus.ones(3), janus.ones(3)
    with labelled_cuda(b):
        with pytest.raises(RuntimeError) as e:
            a + b
        msg = str(e.value)
        assert "Expected all tensors to be on the same device, but found at least two devices, cpu and cuda:0!" in msg
        assert "op add" in msg and "input 0 is on cpu" in msg and "input 1 is on cuda:0" in msg
        with pytest.raises(RuntimeError, match=r"same device.*op mul"):
            janus.mul(a, b)
        with pytest.raises(RuntimeError, match=r"same device.*op add"):  # in place: a is written
            a.add_(b)
        with pytest.raises(RuntimeError, match="same device"):
            _C._select_device("where", [a > 0, b, a])


def test_cpu_scalars_join_device_ops():
    x, s = janus.ones(3), janus.tensor(2.0)
    with labelled_cuda(x):
        # a CPU 0-d tensor is no second device: the op goes to CUDA
        if HAVE_GPU:
            assert _C._select_device("mul", [s, x]) == 1
        else:
            with pytest.raises(RuntimeError, match="not available"):
                _C._select_device("mul", [s, x])
    # an op writing a CPU scalar from a CUDA input is mixed (the write would land on the cpu)
    with labelled_cuda(x):
        with pytest.raises(RuntimeError, match=r"same device.*op add: the output is on cpu"):
            s.add_(x)
        with pytest.raises(RuntimeError, match=r"same device.*op index_put_"):
            _C._select_device("index_put_", [s, x])


def test_unsupported_ops_say_so():
    if not _C._cuda_built():
        pytest.skip("built without CUDA: no CUDA op table to ask")
    unsupported = set(_C.op_names()) - set(janus.cuda.supported_ops())
    x = janus.ones(1, 1, 4, 4)
    with labelled_cuda(x):
        for op in sorted(unsupported):  # the LAPACK ops (runtime/k_lapack.c)
            with pytest.raises(NotImplementedError, match=rf"op {op} is not supported on CUDA yet"):
                _C._select_device(op, [x])
        # ops that gained kernels (cuDNN convolutions, own pooling kernels, ...) are no
        # longer refused from the table: without a GPU they stop at CUDA's start, saying why
        if not HAVE_GPU:
            for call in (lambda: janus.nn.functional.max_pool2d(x, 2), lambda: x.logsumexp(0),
                         lambda: janus.nn.functional.conv2d(x, x)):
                with pytest.raises(RuntimeError, match="CUDA is not available") as e:
                    call()
                assert "not supported on CUDA" not in str(e.value)


def test_cuda_index_tensors_are_accepted():
    """Indexing with a CUDA index tensor is no longer refused up front: index
    tensors move to the indexed tensor's device (a CUDA mask is read on the
    host first).  Without a GPU that move is what fails, saying why."""
    x = janus.arange(12.0).view(3, 4)
    i, m = janus.tensor([2, 0]), x > 5
    assert x[i].tolist() == [[8.0, 9.0, 10.0, 11.0], [0.0, 1.0, 2.0, 3.0]]
    assert x[m].tolist() == [6.0 + k for k in range(6)]
    if HAVE_GPU or not _C._cuda_built():
        return
    for idx in (i, m):
        with labelled_cuda(idx):
            with pytest.raises(RuntimeError) as e:
                x[idx]
            assert "not available" in str(e.value) and "not supported yet" not in str(e.value)


def _documented_unsupported():
    text = open(os.path.join(ROOT, "docs", "ARCHITECTURE.md")).read()
    m = re.search(r"<!-- cuda-unsupported -->(.*?)<!-- /cuda-unsupported -->", text, re.S)
    assert m, "docs/ARCHITECTURE.md lacks the CUDA unsupported-op list"
    return set(re.findall(r"`(\w+)`", m.group(1)))


def test_unsupported_list_matches_the_op_table():
    ops = set(_C.op_names())
    supported = set(janus.cuda.supported_ops())
    documented = _documented_unsupported()
    assert documented <= ops, f"documented ops not in the table: {sorted(documented - ops)}"
    if _C._cuda_built():
        assert supported <= ops
        assert documented == ops - supported, (f"undocumented: {sorted(ops - supported - documented)}, "
                                               f"documented but implemented: {sorted(documented & supported)}")
    else:
        assert supported == set()


@pytest.mark.skipif(HAVE_GPU, reason="this machine has a GPU")
def test_without_a_gpu():
    assert janus.cuda.is_available() is False and janus.cuda.device_count() == 0
    assert WHY and ("no CUDA device" in WHY or "without CUDA" in WHY)
    for call in (lambda: janus.ones(2).cuda(), lambda: janus.ones(2).to("cuda"),
                 lambda: janus.zeros(2, device="cuda"), lambda: janus.randn(2, device="cuda"),
                 lambda: janus.tensor([1.0], device="cuda"), lambda: janus.nn.Linear(2, 2).to("cuda"),
                 lambda: janus.ones(2).to(janus.device("cuda", 0))):
        with pytest.raises(RuntimeError, match="is not available") as e:
            call()
        assert WHY in str(e.value)
    with pytest.raises(RuntimeError, match="one GPU"):
        janus.ones(2).to("cuda:1")
    assert janus.cuda.memory_allocated() == 0 and janus.cuda.max_memory_allocated() == 0
    janus.cuda.synchronize()  # nothing was queued: a no-op
    with pytest.raises(RuntimeError, match="not available"):
        janus.cuda.current_device()


# ------------------------------------------------------------ GPU checks
def _r(*shape, lo=-2.0, hi=2.0, dtype=None):
    return janus.rand(*shape, dtype=dtype) * (hi - lo) + lo


POS = dict(lo=0.2, hi=3.0)
UNARY = ["neg", "exp", "log1p", "expm1", "abs", "sign", "tanh", "sigmoid", "relu", "silu", "sin", "cos", "erf",
         "floor", "ceil", "round"]
POSITIVE = ["log", "sqrt", "rsqrt", "reciprocal"]
BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "atan2", "eq", "ne", "lt", "le", "gt", "ge",
          "logical_and", "logical_or", "logical_xor", "remainder"]

# (id, fn over inputs, input makers, differentiable)
CASES = []
CASES += [(f"unary_{n}", (lambda n: lambda x: getattr(janus, n)(x))(n), [lambda: _r(4, 5)], n not in (
    "sign", "floor", "ceil", "round")) for n in UNARY]
CASES += [(f"pos_{n}", (lambda n: lambda x: getattr(janus, n)(x))(n), [lambda: _r(4, 5, **POS)], True)
          for n in POSITIVE]
CASES += [(f"binary_{n}", (lambda n: lambda x, y: getattr(janus, n)(x, y))(n),
           [lambda: _r(3, 1, 4), lambda: _r(5, 4, **POS)],
           n in ("add", "sub", "mul", "div", "maximum", "minimum", "atan2")) for n in BINARY]
CASES += [
    ("add_alpha", lambda x, y: janus.add(x, y, alpha=-0.5), [lambda: _r(4, 4), lambda: _r(4)], True),
    ("div_floor", lambda x, y: janus.div(x, y, rounding_mode="floor"), [lambda: _r(6), lambda: _r(6, **POS)], False),
    ("div_trunc", lambda x, y: janus.div(x, y, rounding_mode="trunc"), [lambda: _r(6), lambda: _r(6, **POS)], False),
    ("pow", lambda x, y: janus.pow(x, y), [lambda: _r(3, 4, **POS), lambda: _r(3, 4)], True),
    ("scalar_ops", lambda x: (2.0 - x) * 3 / (x * x + 1) + x ** 2, [lambda: _r(3, 3)], True),
    ("gelu", lambda x: janus.nn.functional.gelu(x), [lambda: _r(8)], True),
    ("gelu_tanh", lambda x: janus.nn.functional.gelu(x, approximate="tanh"), [lambda: _r(8)], True),
    ("clamp", lambda x: janus.clamp(x, -0.5, 0.7), [lambda: _r(10)], True),
    ("clamp_min", lambda x: x.clamp(min=0.1), [lambda: _r(10)], True),
    ("where", lambda c, x, y: janus.where(c > 0, x, y), [lambda: _r(4, 1), lambda: _r(4, 3), lambda: _r(3)], True),
    ("masked_fill", lambda x, m: x.masked_fill(m > 0, -7.0), [lambda: _r(3, 4), lambda: _r(4)], True),
    ("isnan", lambda x: janus.isnan(janus.log(x)), [lambda: _r(12)], False),
    ("logical_not", lambda x: janus.logical_not(x > 0), [lambda: _r(7)], False),
    ("strided", lambda x, y: x.t() * y[:, ::2], [lambda: _r(6, 3), lambda: _r(3, 12)], True),
    ("int_math", lambda x, y: ((x * 7).long() // 3 + (y * 5).long() % 4) * 2 - 1, [lambda: _r(9), lambda: _r(9)],
     False),
    ("int_div_floor", lambda x: janus.div((x * 9).long(), -4, rounding_mode="floor"), [lambda: _r(9)], False),
    ("float64", lambda x, y: x.double() * y.double() + 1, [lambda: _r(5), lambda: _r(5)], True),
    ("half_cast", lambda x: (x.half() * 2).float(), [lambda: _r(16)], False),
    ("bf16_cast", lambda x: (x.bfloat16() + 1).float(), [lambda: _r(16)], False),
    ("bool_cast", lambda x: (x > 0).to(janus.float32) + (x > 0).long(), [lambda: _r(8)], False),
    ("sum_all", lambda x: x.sum(), [lambda: _r(7, 9)], True),
    ("sum_dims", lambda x: x.sum((0, 2), keepdim=True), [lambda: _r(3, 4, 5)], True),
    ("sum_mid_noncontig", lambda x: x.transpose(0, 2).sum(1), [lambda: _r(3, 4, 5)], True),
    ("sum_int_dtype", lambda x: (x > 0).sum(0), [lambda: _r(6, 5)], False),
    ("sum_big", lambda x: x.sum(1), [lambda: _r(3, 5000)], True),
    ("mean", lambda x: x.mean(-1), [lambda: _r(4, 33)], True),
    ("prod", lambda x: x.prod(0), [lambda: _r(4, 3, **POS)], True),
    ("amax", lambda x: x.amax(1), [lambda: _r(5, 6)], True),
    ("amin", lambda x: x.amin(0), [lambda: _r(5, 6)], True),
    ("max_dim", lambda x: x.max(1).values, [lambda: _r(5, 6)], True),
    ("min_dim_idx", lambda x: x.min(0, keepdim=True).indices, [lambda: _r(5, 6)], False),
    ("argmax", lambda x: x.argmax() + x.argmax(1).sum() + x.t().argmin(0, keepdim=True).sum(), [lambda: _r(4, 7)],
     False),
    ("argmax_ties_nan", lambda x: (x * 0).argmax(1) + janus.log(x - 1).argmax(1), [lambda: _r(3, 5)], False),
    ("var_std", lambda x: x.var(1) + x.std() + x.var(0, unbiased=False).sum(), [lambda: _r(4, 6)], True),
    ("all_any", lambda x: (x > -1.5).all(1).long() + (x > 1.5).any(0).long().sum(), [lambda: _r(4, 4)], False),
    ("softmax_last", lambda x: janus.softmax(x, -1), [lambda: _r(4, 10)], True),
    ("softmax_dim0", lambda x: janus.softmax(x, 0), [lambda: _r(4, 3, 5)], True),
    ("log_softmax", lambda x: janus.log_softmax(x, 1), [lambda: _r(4, 7, 2)], True),
    ("mm", lambda a, b: a.mm(b), [lambda: _r(5, 7), lambda: _r(7, 3)], True),
    ("mm_transposed", lambda a, b: a.t().mm(b.t()), [lambda: _r(7, 5), lambda: _r(3, 7)], True),
    ("bmm", lambda a, b: janus.bmm(a, b), [lambda: _r(4, 5, 6), lambda: _r(4, 6, 3)], True),
    ("matmul_vv", lambda a, b: a @ b, [lambda: _r(6), lambda: _r(6)], True),
    ("matmul_mv", lambda a, b: a @ b, [lambda: _r(4, 6), lambda: _r(6)], True),
    ("matmul_vm", lambda a, b: a @ b, [lambda: _r(6), lambda: _r(6, 3)], True),
    ("matmul_nd_2d", lambda a, b: a @ b, [lambda: _r(2, 3, 4, 6), lambda: _r(6, 5)], True),
    ("matmul_broadcast", lambda a, b: a @ b, [lambda: _r(2, 1, 4, 6), lambda: _r(3, 6, 5)], True),
    ("matmul_f64", lambda a, b: a.double() @ b.double(), [lambda: _r(4, 6), lambda: _r(6, 2)], True),
    ("addmm", lambda c, a, b: janus.addmm(c, a, b, beta=0.5, alpha=2.0), [lambda: _r(3), lambda: _r(4, 5),
                                                                           lambda: _r(5, 3)], True),
    ("linear", lambda x, w, b: janus.nn.functional.linear(x, w, b), [lambda: _r(2, 3, 6), lambda: _r(4, 6),
                                                                      lambda: _r(4)], True),
    ("linear_nobias", lambda x, w: janus.nn.functional.linear(x, w), [lambda: _r(5, 6), lambda: _r(4, 6)], True),
    ("gather", lambda x: x.gather(1, janus.tensor([[0, 2], [1, 1], [3, 0]], device=x.device)),
     [lambda: _r(3, 4)], True),
    ("index_select", lambda x: x.index_select(0, janus.tensor([2, 0, 2], device=x.device)), [lambda: _r(3, 4)],
     False),
    ("embedding", lambda w: janus.nn.functional.embedding(janus.tensor([[1, 0], [3, 1]], device=w.device), w),
     [lambda: _r(4, 3)], False),
    ("cat_stack", lambda x, y: janus.cat([x, y], 1) + janus.stack([x, y], 0).sum(0).repeat(1, 2),
     [lambda: _r(2, 3), lambda: _r(2, 3)], True),
    ("slice_backward", lambda x: x[1:, ::2].sum() + x[0].sum(), [lambda: _r(3, 4)], True),
    ("cross_entropy", lambda x: janus.nn.functional.cross_entropy(x, janus.tensor([1, 0, 3], device=x.device)),
     [lambda: _r(3, 5)], True),
    ("nll_loss", lambda x: janus.nn.functional.nll_loss(janus.log_softmax(x, 1),
                                                        janus.tensor([2, 2, 0], device=x.device)),
     [lambda: _r(3, 4)], True),
    ("mse", lambda x, y: janus.nn.functional.mse_loss(x, y), [lambda: _r(6, 2), lambda: _r(6, 2)], True),
]
F = janus.nn.functional


def _ix(v, like):
    """An index tensor on like's device."""
    return janus.tensor(v, device=like.device)


def _classes(x):
    return (x.abs() * 2).long().clamp(max=4)


# cuDNN convolutions, the own pooling kernels, fused cells, indexing (issue 8)
CASES += [
    ("conv2d", lambda x, w, b: F.conv2d(x, w, b, padding=2), [lambda: _r(2, 3, 8, 8), lambda: _r(4, 3, 5, 5),
                                                              lambda: _r(4)], True),
    ("conv2d_stride_dil_groups", lambda x, w: F.conv2d(x, w, stride=2, padding=1, dilation=2, groups=2),
     [lambda: _r(2, 4, 9, 11), lambda: _r(6, 2, 3, 3)], True),
    ("conv2d_unbatched_f64", lambda x, w: F.conv2d(x.double(), w.double(), stride=(1, 2)),
     [lambda: _r(3, 7, 7), lambda: _r(2, 3, 3, 2)], True),
    ("conv2d_noncontig", lambda x, w, b: F.conv2d(x.transpose(2, 3), w, b, padding=1),
     [lambda: _r(2, 3, 6, 5), lambda: _r(5, 3, 3, 3), lambda: _r(5)], True),
    # halves of small multiples of 0.5: every sum is exact, so rounding order cannot show
    ("conv2d_half", lambda x, w: F.conv2d((x * 2).round().half() / 2, (w * 2).round().half() / 2,
                                          padding=1).float(),
     [lambda: _r(1, 2, 5, 5), lambda: _r(3, 2, 3, 3)], False),
    ("max_pool2d", lambda x: F.max_pool2d(x, 2), [lambda: _r(2, 3, 8, 8)], True),
    ("max_pool2d_overlap_ceil", lambda x: F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
     [lambda: _r(2, 3, 9, 10)], True),
    ("max_pool2d_indices_dil", lambda x: F.max_pool2d(x, 2, dilation=2, return_indices=True)[1],
     [lambda: _r(1, 2, 7, 6)], False),
    ("max_pool2d_int_ties", lambda x: F.max_pool2d((x * 2).long(), 2, stride=1), [lambda: _r(2, 5, 5)], False),
    ("avg_pool2d_ceil_nopad", lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True,
                                                     count_include_pad=False), [lambda: _r(2, 3, 9, 10)], True),
    ("avg_pool2d_include_pad", lambda x: F.avg_pool2d(x.transpose(2, 3), 2, padding=1), [lambda: _r(2, 2, 5, 7)],
     True),
    ("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, (3, 4)), [lambda: _r(2, 3, 7, 9)], True),
    ("adaptive_avg_pool2d_up", lambda x: F.adaptive_avg_pool2d(x, (5, 7)), [lambda: _r(1, 2, 3, 4)], True),
    ("pool_half", lambda x: F.max_pool2d(x.half(), 2).float() + F.avg_pool2d(x.bfloat16(), 2).float(),
     [lambda: _r(1, 2, 6, 6)], False),
    ("logsumexp", lambda x: x.logsumexp(1) + x.logsumexp((0, 2)).sum(), [lambda: _r(3, 4, 5)], True),
    ("logsumexp_neg_inf", lambda x: janus.where(x > 0, x, janus.log(x * 0)).logsumexp(1), [lambda: _r(3, 40)],
     False),
    ("scatter", lambda x, s: janus.scatter(x, 1, _ix([[0, 2, 2], [1, 0, 3]], x), s), [lambda: _r(2, 4),
                                                                                        lambda: _r(2, 3)], True),
    ("scatter_value_dim0", lambda x: janus.scatter(x, 0, _ix([[2], [0]], x), value=-1.5), [lambda: _r(3, 2)], False),
    ("one_hot", lambda x: F.one_hot(_classes(x), 6), [lambda: _r(3, 4)], False),
    ("one_hot_infer", lambda x: F.one_hot(_classes(x)), [lambda: _r(7)], False),
    ("index_tensor", lambda x: x[_ix([2, 0, -1], x)], [lambda: _r(4, 3)], True),
    ("index_two_split", lambda x: x[_ix([0, 1], x), :, _ix([4, -2], x)], [lambda: _r(3, 4, 5)], True),
    ("index_list", lambda x: x[:, [0, 2, 2]], [lambda: _r(3, 4)], True),
    ("index_mask", lambda x: x[x > 0.5], [lambda: _r(4, 5)], True),
    ("index_mask_2d_of_3d", lambda x: x[x.sum(2) > 0], [lambda: _r(3, 4, 2)], True),
    ("index_put", lambda x, v: x.clone().index_put_((_ix([0, 2], x),), v), [lambda: _r(4, 3), lambda: _r(2, 3)],
     True),
    ("index_put_accumulate", lambda x, v: x.clone().index_put_((_ix([1, 1, 3], x),), v, accumulate=True),
     [lambda: _r(4, 3), lambda: _r(3, 3)], True),
    ("index_put_broadcast_cast", lambda x: x.clone().index_put_((_ix([3, 0], x), _ix([1, 1], x)),
                                                                 janus.tensor(2, device=x.device)),
     [lambda: _r(4, 3)], False),
    ("embedding_backward", lambda w: F.embedding(_ix([[1, 0, 3], [3, 1, 1]], w), w), [lambda: _r(4, 3)], True),
    ("lstm_cell", lambda gx, gh, c: (lambda r: r[0] * 2 + r[1])(janus.ops.lstm_cell(gx, gh, c)),
     [lambda: _r(3, 16), lambda: _r(3, 16), lambda: _r(3, 4)], True),
    ("gru_cell", lambda gx, gh, h: janus.ops.gru_cell(gx, gh, h)[0], [lambda: _r(3, 12), lambda: _r(3, 12),
                                                                      lambda: _r(3, 4)], True),
    ("lstm_module", lambda x: _lstm_run(x),
     [lambda: _r(5, 2, 3)], True),
]


def _lstm_run(x):
    janus.manual_seed(7)  # the same weights on both devices
    m = janus.nn.LSTM(3, 4).to(x.device)
    return m(x)[0]


OTHER_GPU_CHECKS = 12  # the test_gpu_* functions below
GPU_CHECKS = len(CASES) + OTHER_GPU_CHECKS


@pytest.fixture
def gpu():
    if not HAVE_GPU:
        pytest.skip(f"no CUDA device: {GPU_CHECKS} GPU checks not run ({WHY})")


def _close(got, want, what, atol=1e-5, rtol=1e-4):
    assert got.device.type == "cpu" and want.device.type == "cpu"
    assert tuple(got.shape) == tuple(want.shape), f"{what}: shape {tuple(got.shape)} vs {tuple(want.shape)}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} vs {want.dtype}"
    if not want.dtype.is_floating_point:
        assert got.tolist() == want.tolist(), f"{what}: {got.tolist()} vs {want.tolist()}"
        return
    g, w = got.double(), want.double()
    nan_g, nan_w = janus.isnan(g), janus.isnan(w)
    assert nan_g.tolist() == nan_w.tolist(), f"{what}: NaNs differ"
    g, w = janus.where(nan_w, 0.0, g), janus.where(nan_w, 0.0, w)
    err = ((g - w).abs() - rtol * w.abs()).max().item() if g.numel() else 0.0
    assert err <= atol, f"{what}: max error {err} (got {got.tolist()}, want {want.tolist()})"


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gpu_op_matches_cpu(gpu, case):
    name, fn, makers, diff = case
    janus.manual_seed(hash(name) % 1000)
    xs = [m() for m in makers]
    cx = [x.clone().requires_grad_(diff) for x in xs]
    gx = [x.cuda().requires_grad_(diff) for x in xs]
    want, got = fn(*cx), fn(*gx)
    assert got.is_cuda and got.device == janus.device("cuda:0"), f"{name}: result not on cuda"
    _close(got.cpu() if not diff else got.detach().cpu(), want.detach(), name)
    if diff:
        seed = _r(*want.shape) if want.ndim else janus.tensor(1.3)
        (want * seed).sum().backward()
        (got * seed.cuda()).sum().backward()
        for i, (c, g) in enumerate(zip(cx, gx)):
            assert (c.grad is None) == (g.grad is None), f"{name}: grad {i} presence"
            if c.grad is not None:
                assert g.grad.is_cuda
                _close(g.grad.cpu(), c.grad, f"{name} grad {i}", atol=1e-4, rtol=1e-3)


def test_gpu_factories(gpu):
    assert janus.zeros(2, 3, device="cuda").cpu().tolist() == [[0.0] * 3] * 2
    assert janus.ones(4, dtype=janus.int64, device="cuda").cpu().tolist() == [1] * 4
    assert janus.full((2,), 7.5, device="cuda").cpu().tolist() == [7.5, 7.5]
    assert janus.arange(5, device="cuda").cpu().tolist() == list(range(5))
    assert janus.arange(0.0, 1.0, 0.25, device="cuda").cpu().tolist() == [0.0, 0.25, 0.5, 0.75]
    assert janus.eye(2, 3, device="cuda").cpu().tolist() == [[1, 0, 0], [0, 1, 0]]
    e = janus.empty(3, 4, device="cuda")
    assert e.is_cuda and tuple(e.shape) == (3, 4)
    x = janus.ones(2, device="cuda")
    assert janus.zeros_like(x).is_cuda and janus.ones_like(x, device="cpu").device.type == "cpu"
    assert janus.tensor([[1, 2], [3, 4]], device="cuda").cpu().tolist() == [[1, 2], [3, 4]]
    for kw in (dict(), dict(dtype=janus.float64), dict(dtype=janus.int64), dict(dtype=janus.float16)):
        for a, b, n in ((0, 1, 7), (-3, 5, 4), (2, 2, 1), (0, 1, 0)):
            assert janus.linspace(a, b, n, device="cuda", **kw).cpu().tolist() == \
                janus.linspace(a, b, n, **kw).tolist(), (a, b, n, kw)
    w = janus.zeros(3, device="cuda", requires_grad=True)
    assert w.is_cuda and w.requires_grad and w.is_leaf


def test_gpu_random_matches_cpu_stream(gpu):
    for f in (lambda d: janus.rand(5, 3, device=d), lambda d: janus.randn(7, device=d),
              lambda d: janus.rand(9, dtype=janus.float64, device=d),
              lambda d: janus.rand(9, dtype=janus.float16, device=d),
              lambda d: janus.rand(9, dtype=janus.bfloat16, device=d),
              lambda d: janus.randint(0, 10, (6,), device=d),
              lambda d: janus.ones(4, 5, device=d).uniform_(-1, 2),
              lambda d: janus.bernoulli(janus.full((8,), 0.3, device=d))):
        janus.manual_seed(123)
        c = f("cpu")
        janus.manual_seed(123)
        g = f("cuda")
        assert g.is_cuda and g.cpu().tolist() == c.tolist()
    janus.manual_seed(5)
    c = janus.nn.functional.dropout(janus.ones(50), 0.3)
    janus.manual_seed(5)
    g = janus.nn.functional.dropout(janus.ones(50, device="cuda"), 0.3)
    assert g.cpu().tolist() == c.tolist()


def test_gpu_copies_round_trip(gpu):
    for dt in (janus.float32, janus.float64, janus.float16, janus.bfloat16, janus.int64, janus.int32,
               janus.uint8, janus.bool):
        x = (janus.arange(24) % 7).to(dt).reshape(2, 3, 4)
        assert x.cuda().cpu().tolist() == x.tolist(), dt
        assert x.cuda().to("cpu", janus.float64).tolist() == x.double().tolist(), dt
    x = janus.arange(24.0).reshape(4, 6)
    nc = x.t()[1:, ::2]  # non-contiguous source, both directions
    assert nc.cuda().cpu().tolist() == nc.tolist()
    g = x.cuda()
    assert g.t()[1:, ::2].cpu().tolist() == nc.tolist()
    assert g.t().contiguous().cpu().tolist() == x.t().tolist()
    g[1:3, 2:4] = janus.tensor([[-1.0, -2.0], [-3.0, -4.0]])  # CPU -> strided CUDA window
    x[1:3, 2:4] = janus.tensor([[-1.0, -2.0], [-3.0, -4.0]])
    assert g.cpu().tolist() == x.tolist()
    h = janus.zeros(4, 6)
    h.copy_(g)  # CUDA -> CPU through copy_
    assert h.tolist() == x.tolist()
    assert g.to("cuda") is g and g.clone().cpu().tolist() == x.tolist()
    d = g.to("cuda", copy=True)
    assert d is not g and d.cpu().tolist() == x.tolist()


def test_gpu_sync_points_read_the_device(gpu):
    g = janus.tensor([1.5, -2.0], device="cuda")
    assert g.sum().item() == -0.5 and g.tolist() == [1.5, -2.0]
    assert bool(g[0] > 0) and float(g[1]) == -2.0 and int(g[0]) == 1
    assert repr(g) == "tensor([ 1.5000, -2.0000], device='cuda:0')"
    with pytest.raises(TypeError, match="Use Tensor.cpu"):
        memoryview(g)  # what numpy() and pickling export


def test_gpu_allocator_counters(gpu):
    janus.cuda.synchronize()
    base = janus.cuda.memory_allocated()
    janus.cuda.reset_peak_memory_stats()
    x = janus.empty(1 << 20, device="cuda")  # 4 MiB
    assert janus.cuda.memory_allocated() >= base + (4 << 20)
    assert janus.cuda.max_memory_allocated() >= janus.cuda.memory_allocated()
    reserved = janus.cuda.memory_reserved()
    del x
    assert janus.cuda.memory_allocated() == base
    y = janus.empty(1 << 20, device="cuda")  # the cached block comes back
    assert janus.cuda.memory_reserved() == reserved
    del y
    janus.cuda.empty_cache()
    assert janus.cuda.memory_reserved() < reserved


def test_gpu_mixed_device_errors(gpu):
    a, b = janus.ones(3, device="cuda"), janus.ones(3)
    with pytest.raises(RuntimeError, match=r"cuda:0 and cpu!.*op add"):
        a + b
    assert (a + janus.tensor(2.0)).cpu().tolist() == [3.0] * 3  # CPU scalars are fine
    assert (a * 2).is_cuda and (2 - a).cpu().tolist() == [1.0] * 3


def test_gpu_grad_flows_to_device_leaves(gpu):
    w = janus.randn(3, 2, device="cuda", requires_grad=True)
    with pytest.raises(RuntimeError, match="not differentiable"):
        w.cpu()
    (w * w).sum().backward()
    assert w.grad.is_cuda
    _close(w.grad.cpu(), 2 * w.detach().cpu(), "d(w*w)")


@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_gpu_mlp_training_step(gpu, opt):
    def run(device):
        janus.manual_seed(0)
        model = janus.nn.Sequential(janus.nn.Linear(8, 16), janus.nn.ReLU(), janus.nn.Linear(16, 4)).to(device)
        o = (janus.optim.SGD(model.parameters(), lr=0.1, momentum=0.9) if opt == "sgd"
             else janus.optim.Adam(model.parameters(), lr=1e-2))
        x, y = janus.randn(32, 8).to(device), janus.randint(0, 4, (32,)).to(device)
        losses = []
        for _ in range(3):
            o.zero_grad()
            loss = janus.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            o.step()
            losses.append(loss.item())
        return losses, [p.detach().cpu() for p in model.parameters()]

    lc, pc = run("cpu")
    lg, pg = run("cuda")
    assert all(p.device.type == "cpu" for p in pg)
    for a, b in zip(lg, lc):
        assert abs(a - b) < 1e-4
    for i, (g, c) in enumerate(zip(pg, pc)):
        _close(g, c, f"param {i}", atol=1e-4, rtol=1e-3)


def _same_values(got, want, what):
    """Equal element for element, -0.0 apart from 0.0; any NaN equals any NaN
    (a GPU returns its canonical NaN where x86 passes an operand's on)."""
    g, w = got.tolist(), want.tolist()
    assert len(g) == len(w)
    for i, (a, b) in enumerate(zip(g, w)):
        if isinstance(b, float) and math.isnan(b):
            assert isinstance(a, float) and math.isnan(a), f"{what}: element {i}: {a} vs {b}"
        else:
            assert a == b and (not isinstance(b, float) or math.copysign(1, a) == math.copysign(1, b)), \
                f"{what}: element {i}: {a} vs {b}"


def test_gpu_elementwise_spec_bitwise(gpu):
    """The CUDA elementwise kernel calls runtime/k_ewmath.h's functions, as the
    CPU does: what they build from + - * /, sqrt, selects and the float32
    fast math (k_fastmath.h) equals the CPU bit for bit on edge values --
    NaN, +-inf, +-0, denormals, integer extremes (libm-based ops excluded)."""
    e = [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1e-40, -1e-40, 1.2e-38, 1.0, -1.0, 0.5, -0.5, 2.0,
         -2.0, 2.5, -2.5, 3.0, -3.0, 0.1, 20.0, -20.0, 88.8, -104.5, 1e30]
    a = janus.tensor(e).reshape(-1, 1)
    b = janus.tensor(e)
    ints = [0, 1, -1, 2, -2, 3, -3, 7, -7, 127, 255, 256, 2 ** 31 - 1, -2 ** 31]
    i, j = janus.tensor(ints, dtype=janus.int32).reshape(-1, 1), janus.tensor([k for k in ints if k], dtype=janus.int32)
    u = janus.tensor([0, 1, 7, 200, 255], dtype=janus.uint8)
    cases = [
        ("add", lambda x, y: janus.add(x, y, alpha=0.5)), ("sub", lambda x, y: janus.sub(x, y, alpha=-2.0)),
        ("mul", lambda x, y: x * y), ("div", lambda x, y: x / y),
        ("div_trunc", lambda x, y: janus.div(x, y, rounding_mode="trunc")),
        ("div_floor", lambda x, y: janus.div(x, y, rounding_mode="floor")),
        ("maximum", janus.maximum), ("minimum", janus.minimum), ("lt", lambda x, y: (x < y).long()),
        ("where", lambda x, y: janus.where(x < y, x, y)), ("square", lambda x, y: janus.pow(x, 2.0) + y * 0),
    ]
    for name, fn in cases:
        _same_values(fn(a.cuda(), b.cuda()).cpu().reshape(-1), fn(a, b).reshape(-1), name)
    unary = [("neg", janus.neg), ("abs", janus.abs), ("sign", janus.sign), ("relu", F.relu), ("exp", janus.exp),
             ("log", janus.log), ("sqrt", janus.sqrt), ("rsqrt", janus.rsqrt), ("reciprocal", janus.reciprocal),
             ("tanh", janus.tanh), ("sigmoid", janus.sigmoid), ("silu", F.silu), ("gelu", F.gelu),
             ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh")), ("erf", janus.erf), ("floor", janus.floor),
             ("ceil", janus.ceil), ("round", janus.round), ("isnan", lambda x: janus.isnan(x).long()),
             ("clamp", lambda x: janus.clamp(x, -1.0, 1.0)), ("clamp_crossed", lambda x: janus.clamp(x, 0.5, 0.25)),
             ("clamp_nan", lambda x: janus.clamp(x, min=float("nan"))),
             ("masked_fill", lambda x: x.masked_fill(x > 1, -1.5)), ("half", lambda x: janus.sigmoid(x.half()).float())]
    for name, fn in unary:
        _same_values(fn(b.cuda()).cpu(), fn(b), name)
    icases = [("iadd", lambda x, y: janus.add(x, y, alpha=3)), ("imul", lambda x, y: x * y),
              ("idiv_trunc", lambda x, y: janus.div(x, y, rounding_mode="trunc")),
              ("idiv_floor", lambda x, y: janus.div(x, y, rounding_mode="floor")),
              ("iremainder", janus.remainder), ("ipow", lambda x, y: janus.pow(x, y.abs())),
              ("imaximum", janus.maximum)]
    for name, fn in icases:
        _same_values(fn(i.cuda(), j.cuda()).cpu().reshape(-1), fn(i, j).reshape(-1), name)
    for name, fn in [("iclamp", lambda x: janus.clamp(x, -3, 5)), ("iabs", janus.abs), ("ineg", janus.neg),
                     ("iclamp_wide", lambda x: janus.clamp(x, -3000000000, 3000000000))]:
        _same_values(fn(j.cuda()).cpu(), fn(j), name)
    # an integer clamp saturates its bounds to the dtype's range (uint8: 300 -> 255)
    _same_values(janus.clamp(u.cuda(), 300, 400).cpu(), janus.clamp(u, 300, 400), "u8 clamp")


def test_gpu_rnn_cells_match_cpu_closely(gpu):
    """lstm_cell/gru_cell and their backwards use the CPU's per-element
    formulas, operation order and float32 exp/tanh (k_fastmath.h): float32
    results agree within 1e-6 relative (they are meant to be bit-equal)."""
    janus.manual_seed(3)
    for op, widths in (("lstm_cell", (16, 16, 4)), ("gru_cell", (12, 12, 4))):
        xs = [_r(6, w) * 3 for w in widths]
        cx = [x.clone().requires_grad_(True) for x in xs]
        gx = [x.cuda().requires_grad_(True) for x in xs]
        want, got = getattr(janus.ops, op)(*cx), getattr(janus.ops, op)(*gx)
        outs = range(len(want) - 1)  # the workspace output gets no gradient
        for k in range(len(want)):
            _close(got[k].detach().cpu(), want[k].detach(), f"{op} output {k}", atol=1e-7, rtol=1e-6)
        seeds = [_r(*want[k].shape) for k in outs]
        sum((want[k] * seeds[k]).sum() for k in outs).backward()
        sum((got[k] * seeds[k].cuda()).sum() for k in outs).backward()
        for i, (c, g) in enumerate(zip(cx, gx)):
            _close(g.grad.cpu(), c.grad, f"{op} grad {i}", atol=1e-7, rtol=1e-6)


def test_gpu_index_errors(gpu):
    x = janus.ones(4, 3, device="cuda")
    with pytest.raises(IndexError, match="index 9 is out of bounds for dimension 0 with size 4"):
        x[janus.tensor([0, 9], device="cuda")]
    with pytest.raises(IndexError, match="out of bounds"):
        x.clone().index_put_((janus.tensor([-5], device="cuda"),), janus.zeros(3, device="cuda"))
    with pytest.raises(IndexError, match="scatter.*out of bounds for dimension 1 with size 3"):
        janus.scatter(x, 1, janus.tensor([[0, 3]], device="cuda"), x[:1, :2])
    with pytest.raises(IndexError, match="gather"):
        x.gather(0, janus.tensor([[4, 0, 0]], device="cuda"))
    with pytest.raises(RuntimeError, match="one_hot.*smaller than num_classes"):
        F.one_hot(janus.tensor([0, 5], device="cuda"), 3)
    # the device still works after reported errors (no sticky CUDA error)
    assert (x * 2).sum().item() == 24.0
