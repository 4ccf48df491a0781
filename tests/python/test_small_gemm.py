"""Small products (runtime/k_gemm.c) as a recurrent step at a small batch
uses them: x @ W^T with 1..12 rows runs on the kernel that transposes W's
16 x 16 (AVX-512) or 8 x 8 (its AVX2 port, k_gemm_avx2.c) blocks in
registers.  Checked here for each kernel level this CPU has (2 AVX-512, 1
AVX2, 0 OpenBLAS: `_C._sgemm_level` in this process, JANUS_GEMM_KERNEL in
the child processes): linear at every such row count against a float64
numpy reference; in the kernel's range (4K multiply-adds and up) its bits
equal those of the NN product over W^T transposed beforehand (addmm over a
contiguous W^T, the product a graph holding W^T as a value would run), and
the two kernel families' bits are equal; and a GRU step at batch 8 (the
step issue 23 measures), an LSTM step at batch 4 and one with ragged
sizes (batch 5, input 13, hidden 19) replayed as compiled
graphs give eager's losses and final weights bit for bit (the graph's
accumulated weight gradients are updated in place there, eager's too)."""
import os

import numpy as np
import pytest

import janus
from test_replay import check_replay, have_optimize


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            return next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), [])
    except OSError:
        return []


_FLAGS = _cpu_flags()
AVX512 = "avx512f" in _FLAGS
AVX2 = "avx2" in _FLAGS and "fma" in _FLAGS
# the kernel levels this CPU runs (elsewhere every product is OpenBLAS's)
LEVELS = [0] + ([1] if AVX2 or AVX512 else []) + ([2] if AVX512 else [])
NAMES = {0: "openblas", 1: "avx2", 2: "avx512"}


@pytest.fixture
def level(request):
    from janus import _C
    assert _C._sgemm_level(request.param) == request.param
    yield request.param
    _C._sgemm_level(2)


@pytest.mark.parametrize("level", LEVELS, indirect=True)
@pytest.mark.parametrize("rows", list(range(1, 13)) + [16])
@pytest.mark.parametrize("n,k", [(96, 32), (33, 100), (128, 17), (20, 9)])
def test_linear_few_rows_matches_float64_and_nn_bits(level, rows, n, k):
    r = np.random.default_rng(rows * 1000 + n + k)
    x = r.standard_normal((rows, k)).astype(np.float32)
    w = r.standard_normal((n, k)).astype(np.float32)
    b = r.standard_normal(n).astype(np.float32)
    got = janus.nn.functional.linear(janus.tensor(x), janus.tensor(w), janus.tensor(b)).numpy()
    ref = x.astype(np.float64) @ w.astype(np.float64).T + b
    mag = np.abs(x).astype(np.float64) @ np.abs(w).astype(np.float64).T + np.abs(b)
    assert np.all(np.abs(got - ref) <= (k + 2) * 2.0 ** -24 * mag)
    if rows > 12 or rows * n * k < 4096 or level == 0:
        return  # OpenBLAS's products, or the kernel's other NT plans: right, in another order
    # the same sum in the same order over W^T made contiguous first
    wt = janus.tensor(np.ascontiguousarray(w.T))
    base = janus.tensor(np.ascontiguousarray(np.broadcast_to(b, (rows, n))))
    nn_ = janus.addmm(base, janus.tensor(x), wt).numpy()
    assert got.tobytes() == nn_.tobytes()


@pytest.mark.parametrize("level", LEVELS, indirect=True)
@pytest.mark.parametrize("m,n,k", [(8, 256, 64), (1, 96, 64), (12, 100, 37), (13, 256, 64), (32, 512, 32),
                                   (32, 512, 128), (2, 3, 5), (40, 7, 300)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_bits_do_not_depend_on_the_weight_layout(level, m, n, k, bias):
    # codegen's wt pass hands linear a weight laid out transposed (W^T contiguous): the
    # kernel reads it as it is where that is the row-major weight's product (the rows plan,
    # packed W), else copies it back -- the same bits in every plan, at every level
    r = np.random.default_rng(m * 7 + n * 3 + k)
    x = janus.tensor(r.standard_normal((m, k)).astype(np.float32))
    w = janus.tensor(r.standard_normal((n, k)).astype(np.float32))
    b = janus.tensor(r.standard_normal(n).astype(np.float32)) if bias else None
    wc = w.t().contiguous().t()
    assert wc.stride() == (1, n) and bool((wc == w).all())
    a = janus.nn.functional.linear(x, w, b).numpy()
    c = janus.nn.functional.linear(x, wc, b).numpy()
    assert a.tobytes() == c.tobytes()


@pytest.mark.skipif(not AVX512, reason="needs both kernel families (an AVX-512 CPU)")
@pytest.mark.parametrize("m,n,k", [(8, 256, 16), (3, 17, 100), (12, 33, 40), (8, 96, 32), (64, 40, 30)])
def test_avx2_and_avx512_kernels_give_the_same_bits(m, n, k):
    from janus import _C
    r = np.random.default_rng(m * n * k)
    x, w = r.standard_normal((m, k)).astype(np.float32), r.standard_normal((n, k)).astype(np.float32)
    b, g = r.standard_normal(n).astype(np.float32), r.standard_normal((m, n)).astype(np.float32)
    out = {}
    try:
        for lv in (1, 2):
            _C._sgemm_level(lv)
            jx, jw, jg = janus.tensor(x), janus.tensor(w), janus.tensor(g)
            out[lv] = [janus.nn.functional.linear(jx, jw, janus.tensor(b)).numpy(),  # NT (+ bias)
                       janus.mm(jg, jw).numpy(),                                     # NN
                       janus.addmm(janus.tensor(w), jg.t(), jx).numpy()]             # TN, accumulated
    finally:
        _C._sgemm_level(2)
    for a, c in zip(out[1], out[2]):
        assert a.tobytes() == c.tobytes()


GRU = """
import sys
import janus, janus.nn as nn
janus.manual_seed(0)
B, H, T = 8, 32, 6
c1, c2 = nn.GRUCell(H, H), nn.GRUCell(H, H)
norm, head = nn.LayerNorm(H), nn.Linear(H, H)
params = list(c1.parameters()) + list(c2.parameters()) + list(norm.parameters()) + list(head.parameters())
opt = janus.optim.Adam(params, lr=1e-2)
data = janus.randn(T + 1, B, H)
for s in range(int(sys.argv[1])):
    h1, h2 = janus.zeros(B, H), janus.zeros(B, H)
    loss = 0
    for t in range(T):
        h1 = c1(data[t], h1)
        h2 = c2(norm(h1), h2)
        loss = loss + ((head(h2) - data[t + 1]) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {s} loss {loss.item():.9g}")
"""

LSTM = """
import sys
import janus, janus.nn as nn
janus.manual_seed(1)
B, I, H, T = 4, 20, 24, 5
cell, head = nn.LSTMCell(I, H), nn.Linear(H, 3)
opt = janus.optim.SGD(list(cell.parameters()) + list(head.parameters()), lr=0.05)
data = janus.randn(T, B, I)
for s in range(int(sys.argv[1])):
    h, c = janus.zeros(B, H), janus.zeros(B, H)
    loss = 0
    for t in range(T):
        h, c = cell(data[t], (h, c))
        loss = loss + (head(h) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {s} loss {loss.item():.9g}")
"""


# ragged: every product's N and K off the 8- and 16-float vectors (4 * 19 = 76
# gates, inputs of 13 and 19 at batch 5), still in the kernel's range
LSTM_RAGGED = LSTM.replace("B, I, H, T = 4, 20, 24, 5", "B, I, H, T = 5, 13, 19, 5")
assert LSTM_RAGGED != LSTM


@pytest.mark.skipif(not have_optimize(), reason="janus optimize is not built")
@pytest.mark.parametrize("kernel", [NAMES[lv] for lv in LEVELS])
@pytest.mark.parametrize("name,src", [("gru", GRU), ("lstm", LSTM), ("lstm_ragged", LSTM_RAGGED)])
def test_small_batch_recurrent_step_replays_bitwise(name, src, kernel, tmp_path, monkeypatch):
    monkeypatch.setenv("JANUS_GEMM_KERNEL", kernel)  # record, eager and replay alike
    script = os.path.join(str(tmp_path), name + ".py")
    with open(script, "w") as f:
        f.write(src)
    check_replay(script, ["8"], ["20"], str(tmp_path), min_hits=12)
