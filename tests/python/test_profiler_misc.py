"""janus.profiler / janus.autograd.profiler, nn.MaxUnpool1d/2d and
F.max_unpool1d/2d, Tensor.apply_/map_, and optim.Adafactor.

Each is checked against PyTorch where it is installed (those tests skip
otherwise) and against numpy or hand-written expectations always, so the
file also passes in a venv holding only numpy and pytest.  The profiler's
per-range data is checked for what it is: ranges nest and count as
entered, the `janus::<op>` events count exactly the kernels the ops of a
range ran, per op by name (one per eager op), times add up (self = total - children), and the
schedule's actions, step ranges and on_trace_ready calls are torch's.  A
short training script profiled over some steps records and replays
bitwise (the profiler runs no op and reads no value)."""
import gzip
import json
import math
import os
import re
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import janus
import janus.nn.functional as F
from janus.profiler import ProfilerAction, ProfilerActivity, profile, record_function, schedule

from dynamic_runs import have_optimize
from gradnum import check_grad

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(ROOT, "build")))
JANUS = os.path.join(BUILD, "janus")
KERNELS = "janus::kernels"


def _np(t):
    return np.array(t.detach().tolist())


# ================================================================= schedule
SCHEDULES = [dict(wait=1, warmup=1, active=2), dict(wait=1, warmup=1, active=2, repeat=2),
             dict(wait=0, warmup=1, active=1, repeat=1, skip_first=3), dict(wait=2, warmup=0, active=3),
             dict(wait=5, warmup=1, active=2, skip_first=2, skip_first_wait=1)]


def test_schedule_actions_hand():
    N, W, R, S = (ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD,
                  ProfilerAction.RECORD_AND_SAVE)
    s = schedule(wait=1, warmup=1, active=2, repeat=1, skip_first=1)
    assert [s(i) for i in range(7)] == [N, N, W, R, S, N, N]
    s = schedule(wait=0, warmup=1, active=1)
    assert [s(i) for i in range(4)] == [W, S, W, S]


@pytest.mark.parametrize("kw", SCHEDULES)
def test_schedule_matches_torch(kw):
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = schedule(**kw), torch.profiler.schedule(**kw)
    assert [a(i).name for i in range(30)] == [b(i).name for i in range(30)]


def test_schedule_checks():
    with pytest.raises(AssertionError, match="Invalid profiler schedule arguments"):
        schedule(wait=0, warmup=0, active=0)
    with pytest.warns(UserWarning, match="Profiler won't be using warmup"):
        schedule(wait=0, warmup=0, active=1)
    with pytest.raises(AssertionError, match="Step must be non-negative"):
        schedule(wait=0, warmup=1, active=1)(-1)


# ========================================================= profiled windows
def _steps_of(prof):
    """The step ranges of a trace: named "ProfilerStep*" in events(), numbered in the chrome trace."""
    import tempfile
    assert {e.name for e in prof.events() if e.name.startswith("ProfilerStep")} <= {"ProfilerStep*"}
    with tempfile.TemporaryDirectory() as d:
        prof.export_chrome_trace(os.path.join(d, "t.json"))
        with open(os.path.join(d, "t.json")) as f:
            names = [e["name"] for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    return sorted(n for n in names if n.startswith("ProfilerStep#"))


def _run_schedule(mod, kw, n, work):
    """Run n steps under mod.profiler.profile(schedule=kw): the ProfilerStep names of each trace handed
    to on_trace_ready, with the step number it was handed at."""
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sched = mod.profiler.schedule(**kw)
    with mod.profiler.profile(activities=[mod.profiler.ProfilerActivity.CPU], schedule=sched,
                              on_trace_ready=lambda p: seen.append((p.step_num, _steps_of(p)))) as p:
        for _ in range(n):
            work(mod)
            p.step()
    return seen


def _work(mod):
    x = mod.ones(4, 4)
    with mod.profiler.record_function("work"):
        (x + x).sum()


def test_schedule_traces_hand():
    seen = _run_schedule(janus, dict(wait=1, warmup=1, active=2, repeat=2), 10, _work)
    assert seen == [(4, ["ProfilerStep#2", "ProfilerStep#3"]), (8, ["ProfilerStep#6", "ProfilerStep#7"])]


@pytest.mark.parametrize("kw", SCHEDULES)
def test_schedule_traces_match_torch(kw):
    torch = pytest.importorskip("torch")
    assert _run_schedule(janus, kw, 17, _work) == _run_schedule(torch, kw, 17, _work)


def test_ranges_nest_count_and_time():
    x = janus.ones(8, 8)

    @record_function("decorated")
    def f(y):
        return y * 2

    with profile() as prof:
        with record_function("outer"):
            for _ in range(3):
                with record_function("inner"):
                    f(x)
            x + 1
    avg = {e.key: e for e in prof.key_averages()}
    assert avg["outer"].count == 1 and avg["inner"].count == 3 and avg["decorated"].count == 3
    ev = prof.events()
    outer = [e for e in ev if e.name == "outer"][0]
    inners = [e for e in ev if e.name == "inner"]
    assert all(e.cpu_parent is outer for e in inners)
    assert all(e.cpu_children[0].name == "decorated" for e in inners)
    # self time is the total less the children's, for every event and every average
    for e in ev:
        assert math.isclose(e.self_cpu_time_total, e.cpu_time_total - sum(c.cpu_time_total for c in e.cpu_children),
                            abs_tol=1e-6)
        assert e.time_range.start <= e.time_range.end
        for c in e.cpu_children:
            assert e.time_range.start <= c.time_range.start and c.time_range.end <= e.time_range.end
    assert math.isclose(avg["inner"].cpu_time_total, sum(e.cpu_time_total for e in inners))
    assert math.isclose(prof.key_averages().self_cpu_time_total, outer.cpu_time_total)


def test_kernels_are_counted_per_range():
    a, b = janus.ones(16), janus.ones(16)
    with profile() as prof:
        with record_function("five_adds"):
            for _ in range(5):
                a.add(b)
        with record_function("two"):
            a * b
            janus.relu(a)
        with record_function("none"):
            pass
    ev = {e.name: e for e in prof.events() if not e.name.startswith("janus::")}
    for name, n, ops in (("five_adds", 5, {"janus::add": 5}), ("two", 2, {"janus::mul": 1, "janus::relu": 1}),
                         ("none", 0, {})):
        kids = [c for c in ev[name].cpu_children if c.name.startswith("janus::")]
        assert sum(c.count for c in kids) == n == ev[name].kernel_calls
        assert {c.name: c.count for c in kids} == ops  # per op, by name
        assert all(c.cpu_time_total <= ev[name].cpu_time_total for c in kids)
    counts = {e.key: e.count for e in prof.key_averages()}
    assert (counts["janus::add"], counts["janus::mul"], counts["janus::relu"]) == (5, 1, 1)
    assert KERNELS not in counts  # every eager kernel is under its op


def test_results_unchanged_and_hook_restored():
    janus.manual_seed(3)
    x = janus.randn(5, 6)
    lin = janus.nn.Linear(6, 3)
    want = _np(lin(x).relu())
    assert sys.getprofile() is None
    with profile() as prof:
        assert sys.getprofile() is not None  # record/replay see a profiler
        got = _np(lin(x).relu())
    assert sys.getprofile() is None
    np.testing.assert_array_equal(got, want)
    assert prof.events()

    def mine(frame, event, arg):
        return None
    sys.setprofile(mine)
    try:
        with profile():
            assert sys.getprofile() is mine  # a user's profile function is left in place
        assert sys.getprofile() is mine
    finally:
        sys.setprofile(None)


def test_profiler_errors():
    with profile():
        with pytest.raises(RuntimeError, match="Profiler is already enabled on this thread"):
            with profile():
                pass
    p = janus.autograd.profiler.profile()
    with pytest.raises(RuntimeError, match="Profiler didn't finish running"):
        p.key_averages()
    with pytest.raises(AssertionError, match="No valid profiler activities found"):
        profile(activities=[])
    with profile() as prof:
        janus.ones(2) + 1
    with pytest.raises(AttributeError):
        prof.key_averages().table(sort_by="no_such_column")


def test_table_layout():
    x = janus.ones(4)
    with profile() as prof:
        for name, n in (("a", 1), ("bb", 2), ("ccc", 3)):
            for _ in range(n):
                with record_function(name):
                    x + x
    t = prof.key_averages().table(sort_by="count", row_limit=2)
    lines = t.splitlines()
    assert lines[0].startswith("-") and lines[2].startswith("-") and lines[-2].startswith("-")
    assert lines[1].split() == ["Name", "Self", "CPU", "%", "Self", "CPU", "CPU", "total", "%", "CPU", "total",
                                "CPU", "time", "avg", "#", "of", "Calls"]
    rows = lines[3:-2]
    assert len(rows) == 2
    assert rows[0].split()[0] == "janus::add" and rows[0].split()[-1] == "6"  # 6 adds, the most calls
    assert rows[1].split()[0] == "ccc" and rows[1].split()[-1] == "3"
    assert re.fullmatch(r"Self CPU time total: \d+\.\d{3}(us|ms|s)", lines[-1])
    assert len({len(s) for s in lines[:-1]}) == 1  # fixed-width columns
    full = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=-1)
    assert len(full.splitlines()) == 4 + 4 + 1
    def us(s):  # "12.345us" / "1.234ms" / "1.000s" -> microseconds
        m = re.fullmatch(r"([\d.]+)(us|ms|s)", s)
        return float(m.group(1)) * {"us": 1, "ms": 1e3, "s": 1e6}[m.group(2)]
    vals = [us(r.split()[2]) for r in full.splitlines()[3:-2]]  # the Self CPU column
    assert vals == sorted(vals, reverse=True)


def test_table_matches_torch_layout():
    torch = pytest.importorskip("torch")

    def shape(mod):
        x = mod.ones(4)
        with mod.profiler.profile() as p:
            with mod.profiler.record_function("my_range"):
                x + x
        t = p.key_averages().table(sort_by="cpu_time_total", row_limit=1)
        lines = t.splitlines()
        return lines[1].split(), lines[3].split()[0], lines[-1].split(":")[0], len(lines)
    assert shape(janus) == shape(torch)


def test_input_shape_grouping_and_stack():
    with profile(record_shapes=True, with_stack=True) as prof:
        with record_function("r"):
            pass
    a = prof.key_averages(group_by_input_shape=True)
    assert [e.key for e in a] == ["r"] and a[0].input_shapes == []
    r = prof.events()[0]
    assert r.stack and __file__ in r.stack[0] and "test_input_shape_grouping_and_stack" in r.stack[0]


def test_chrome_trace_and_tensorboard_handler(tmp_path):
    x = janus.ones(3)
    with profile() as prof:
        with record_function("outer"):
            x + x
    path = tmp_path / "t.json"
    prof.export_chrome_trace(str(path))
    tr = json.loads(path.read_text())
    ev = prof.events()
    assert [(e["name"], e["ph"]) for e in tr["traceEvents"]] == [(e.name, "X") for e in ev]
    for te, e in zip(tr["traceEvents"], ev):
        assert math.isclose(te["dur"], e.cpu_time_total, abs_tol=1e-3)
        assert math.isclose(te["ts"], e.time_range.start, abs_tol=1e-3)
    assert tr["traceEvents"][0]["cat"] == "user_annotation"
    prof.export_chrome_trace(str(tmp_path / "t.json.gz"))
    with gzip.open(tmp_path / "t.json.gz", "rt") as f:
        assert json.load(f)["traceEvents"] == tr["traceEvents"]

    d = tmp_path / "tb"
    with profile(schedule=schedule(wait=0, warmup=1, active=1, repeat=2),
                 on_trace_ready=janus.profiler.tensorboard_trace_handler(str(d), worker_name="w0")) as p:
        for _ in range(6):
            _work(janus)
            p.step()
    names = sorted(os.listdir(d))
    assert len(names) == 2 and all(re.fullmatch(r"w0\.\d+\.pt\.trace\.json", n) for n in names)
    steps = [sorted(e["name"] for e in json.loads((d / n).read_text())["traceEvents"]
                    if e["name"].startswith("ProfilerStep")) for n in names]
    assert steps == [["ProfilerStep#1"], ["ProfilerStep#3"]]
    h = janus.profiler.tensorboard_trace_handler(str(tmp_path / "tb2"))
    h(prof)
    (only,) = os.listdir(tmp_path / "tb2")
    assert only.startswith(f"{__import__('socket').gethostname()}_{os.getpid()}.")


def test_legacy_autograd_profiler():
    ap = janus.autograd.profiler
    x = janus.ones(4)
    with ap.profile(use_cuda=False, record_shapes=True) as prof:
        with ap.record_function("legacy"):
            x.add(x)
    assert {e.key: e.count for e in prof.key_averages()} == {"legacy": 1, "janus::add": 1}
    assert "legacy" in prof.table() and "Self CPU time total" in str(prof)
    assert prof.self_cpu_time_total == pytest.approx(prof.function_events.self_cpu_time_total)
    assert prof.total_average().count == 2
    with ap.profile(enabled=False) as off:
        x + x
    assert off.enabled is False
    with ap.emit_nvtx():  # documented no-op
        y = x + 1
    assert _np(y).tolist() == [2.0] * 4
    assert ProfilerActivity.CPU in janus.profiler.supported_activities()


# ================================================================ max_unpool
def _pool_unpool_np(x, k, s, p):
    """numpy reference: max_pool2d's argmax (first max, flat in the plane) scattered into a zero plane of
    the input's size."""
    n, c, h, w = x.shape
    oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    vals = np.zeros((n, c, oh, ow))
    idx = np.zeros((n, c, oh, ow), dtype=np.int64)
    for i in range(oh):
        for j in range(ow):
            best = None
            for a in range(k):
                for b in range(k):
                    r, q = i * s - p + a, j * s - p + b
                    if 0 <= r < h and 0 <= q < w:
                        v = x[:, :, r, q]
                        if best is None:
                            best, bi = v.copy(), np.full(v.shape, r * w + q)
                        else:
                            m = v > best
                            best = np.where(m, v, best)
                            bi = np.where(m, r * w + q, bi)
            vals[:, :, i, j], idx[:, :, i, j] = best, bi
    out = np.zeros((n, c, h * w))
    for a in range(n):
        for b in range(c):
            out[a, b, idx[a, b].ravel()] = vals[a, b].ravel()
    return out.reshape(n, c, h, w), vals, idx


@pytest.mark.parametrize("k,s,p", [(2, 2, 0), (3, 2, 1), (2, 1, 0)])
def test_max_unpool2d_numpy(k, s, p):
    rng = np.random.default_rng(k + s + p)
    x = rng.standard_normal((2, 3, 6, 7))
    v, i = F.max_pool2d(janus.tensor(x), k, s, p, return_indices=True)
    want, _, widx = _pool_unpool_np(x, k, s, p)
    if s >= k:  # no overlapping windows: the indices are unique
        assert _np(i).tolist() == widx.tolist()
    got = F.max_unpool2d(v, i, k, s, p, output_size=x.shape)  # the pooled input's size, as torch's docs do
    assert tuple(got.shape) == x.shape
    np.testing.assert_array_equal(_np(got), want)
    m = janus.nn.MaxUnpool2d(k, s, p)
    np.testing.assert_array_equal(_np(m(v, i, output_size=[6, 7])), want)
    np.testing.assert_array_equal(_np(F.max_unpool2d(v[0], i[0], k, s, p, output_size=[6, 7])), want[0])


def test_max_unpool1d_and_output_size():
    x = janus.tensor([[[1.0, 5.0, 2.0, 2.5, 7.0, 0.0, 3.0, 4.0, 9.0]]])
    v, i = F.max_pool1d(x, 2, return_indices=True)
    assert _np(i).tolist() == [[[1, 3, 4, 7]]]
    assert _np(F.max_unpool1d(v, i, 2)).tolist() == [[[0, 5, 0, 2.5, 7, 0, 0, 4]]]
    assert _np(janus.nn.MaxUnpool1d(2)(v, i, output_size=[9])).tolist() == [[[0, 5, 0, 2.5, 7, 0, 0, 4, 0]]]
    assert _np(F.max_unpool1d(v, i, 2, output_size=[1, 1, 9])).shape == (1, 1, 9)  # the full size
    assert repr(janus.nn.MaxUnpool2d(2)) == "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))"


def test_max_unpool_errors():
    v, i = F.max_pool2d(janus.randn(1, 2, 4, 4), 2, return_indices=True)
    with pytest.raises(ValueError, match=re.escape('invalid output_size "[9, 9]" (dim 0 must be between 2 and 6)')):
        F.max_unpool2d(v, i, 2, output_size=[9, 9])
    with pytest.raises(ValueError, match="output_size should be a sequence containing 2 or 4 elements, but it "
                                         "has a length of '1'"):
        F.max_unpool2d(v, i, 2, output_size=[9])
    with pytest.raises(RuntimeError, match="Expected shape of indices to be same as that of the input tensor"):
        F.max_unpool2d(v, i[:, :1], 2)
    with pytest.raises(RuntimeError, match="elements in indices should be type int64 but got: Float"):
        F.max_unpool2d(v, i.float(), 2)
    with pytest.raises(RuntimeError, match="Input to max_unpooling2d should be a 3d or 4d Tensor"):
        F.max_unpool2d(v[0, 0], i[0, 0], 2)
    with pytest.raises(RuntimeError, match="Found an invalid max index"):
        F.max_unpool2d(v, i + 100, 2)


def test_max_unpool_gradient():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 2, 4, 6))
    _, i = F.max_pool2d(janus.tensor(x), 2, return_indices=True)
    vals = rng.standard_normal(tuple(i.shape))
    check_grad(lambda v: F.max_unpool2d(v, i, 2, output_size=[5, 7]), [vals])
    # windows that do not overlap: overlapping ones may repeat an index, and then (as torch's) every
    # repeat gets the position's gradient, where only the last write reaches the output
    i1 = F.max_pool1d(janus.tensor(x[0]), 2, 2, 1, return_indices=True)[1]
    check_grad(lambda v: F.max_unpool1d(v, i1, 2, 2, 1, output_size=[6]), [rng.standard_normal(tuple(i1.shape))])
    # through the pool as well: pool -> unpool passes each window's maximum back to its place
    check_grad(lambda t: F.max_unpool2d(*F.max_pool2d(t, 2, return_indices=True), 2), [x])


@pytest.mark.parametrize("dim,k,s,p,osz", [(2, 2, 2, 0, None), (2, 3, 2, 1, [6, 8]), (2, 2, 1, 0, None),
                                           (1, 3, 2, 1, [12]), (1, 2, 2, 0, [13]), (1, 2, 2, 0, None)])
def test_max_unpool_matches_torch(dim, k, s, p, osz):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    shape = (2, 3, 6, 8) if dim == 2 else (2, 3, 12)
    x = rng.standard_normal(shape).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    res = []
    for mod in (janus, torch):
        pool = getattr(mod.nn.functional, f"max_pool{dim}d")
        unpool = getattr(mod.nn, f"MaxUnpool{dim}d")(k, s, p)
        t = mod.tensor(x, requires_grad=True)
        v, i = pool(t, k, s, p, return_indices=True)
        out = unpool(v, i, output_size=osz)
        grad_of = out.sum() if out.numel() == 0 else (out * mod.tensor(np.resize(g, tuple(out.shape)))).sum()
        grad_of.backward()
        res.append((out.detach().numpy(), t.grad.numpy()))
    np.testing.assert_array_equal(res[0][0], res[1][0])
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-6)


# ============================================================= apply_ / map_
def test_apply_and_map_hand():
    t = janus.arange(6.0).reshape(2, 3)
    assert t.apply_(lambda v: v * v + 1) is t
    assert _np(t).tolist() == [[1, 2, 5], [10, 17, 26]]
    assert _np(t.map_(janus.tensor([1.0, 2.0, 3.0]), lambda a, b: a - b)).tolist() == [[0, 0, 2], [9, 15, 23]]
    base = janus.zeros(6)
    base[1::2].apply_(lambda v: 7)  # a strided view writes into its base
    assert _np(base).tolist() == [0, 7, 0, 7, 0, 7]
    i = janus.tensor([1, 2, 3])
    assert _np(i.apply_(lambda v: v / 2)).tolist() == [0, 1, 1] and i.dtype == janus.int64  # truncated
    assert _np(janus.tensor(2.5).apply_(math.floor)).tolist() == 2.0
    assert _np(janus.tensor([True, False]).apply_(lambda v: not v)).tolist() == [False, True]


def test_apply_and_map_errors():
    with pytest.raises(RuntimeError, match=re.escape("Can't call apply_() on Variable that requires grad. "
                                                     "Use var.detach().apply_() instead.")):
        janus.ones(2, requires_grad=True).apply_(lambda v: v)
    with pytest.raises(RuntimeError, match=re.escape("Can't call map_() on Variable that requires grad")):
        janus.ones(2, requires_grad=True).map_(janus.ones(2), lambda a, b: a)
    with pytest.raises(TypeError, match="must be real number, not str"):
        janus.ones(2).apply_(lambda v: "a")
    with pytest.raises(TypeError, match="map_: expected .*FloatTensor for 'other' \\(got .*LongTensor\\)"):
        janus.ones(2).map_(janus.ones(2, dtype=janus.int64), lambda a, b: a)
    with pytest.raises(RuntimeError, match="must match the existing size"):
        janus.ones(2).map_(janus.ones(3), lambda a, b: a)
    with pytest.raises(TypeError, match="not callable"):
        janus.ones(2).apply_(3)


@pytest.mark.skipif(not janus.cuda.is_available(), reason="no CUDA device")
def test_apply_and_map_refuse_cuda():
    c = janus.ones(2, device="cuda")
    with pytest.raises(TypeError, match="apply_ is only implemented on CPU tensors"):
        c.apply_(lambda v: v)
    with pytest.raises(TypeError, match="map_ is only implemented on CPU tensors"):
        c.map_(janus.ones(2, device="cuda"), lambda a, b: a)


def test_apply_and_map_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    y = rng.standard_normal((4,)).astype(np.float32)
    fa, fm = (lambda v: math.sin(v) * 3), (lambda a, b: a * b + 1)
    got = janus.tensor(x).apply_(fa).map_(janus.tensor(y), fm)
    want = torch.tensor(x).apply_(fa).map_(torch.tensor(y), fm)
    np.testing.assert_array_equal(_np(got).astype(np.float32), want.numpy())
    gi = janus.tensor([3, -3, 7]).apply_(lambda v: v / 2)
    assert _np(gi).tolist() == torch.tensor([3, -3, 7]).apply_(lambda v: v / 2).tolist()


# ================================================================= Adafactor
def _adafactor_np(params, grads_seq, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0,
                  maximize=False):
    """The Adafactor update written out in float64 numpy (torch's algorithm)."""
    ps = [p.astype(np.float64).copy() for p in params]
    st = [dict(step=0) for _ in ps]
    eps1 = np.finfo(np.float32).eps if eps[0] is None else eps[0]
    for grads in grads_seq:
        for p, g, s in zip(ps, grads, st):
            g = -g if maximize else g
            s["step"] += 1
            b = s["step"] ** beta2_decay
            rho = min(lr, 1 / math.sqrt(s["step"]))
            alpha = max(eps[1], np.linalg.norm(p) / math.sqrt(p.size)) * rho
            if weight_decay:
                p *= 1 - lr * weight_decay
            if g.ndim > 1:
                r = s.setdefault("r", np.zeros(g.shape[:-1] + (1,)))
                c = s.setdefault("c", np.zeros(g.shape[:-2] + (1, g.shape[-1])))
                r += b * ((g * g).mean(-1, keepdims=True) - r)
                c += b * ((g * g).mean(-2, keepdims=True) - c)
                v = (r @ c) / np.maximum(r.mean(-2, keepdims=True), eps1)
            else:
                v = s.setdefault("v", np.zeros(g.shape))
                v += b * (g * g - v)
                v = v.copy()
            u = g / np.sqrt(np.maximum(v, eps1 * eps1))
            p -= alpha / max(1.0, np.linalg.norm(u) / (math.sqrt(u.size) * d)) * u
    return ps


ADA_CASES = [dict(), dict(lr=0.05, weight_decay=0.1, maximize=True, d=1.5),
             dict(eps=(1e-30, 1e-2), beta2_decay=-0.5)]


def _ada_data(seed, steps=5):
    rng = np.random.default_rng(seed)
    shapes = [(4, 5), (3, 2, 4), (6,)]
    init = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(steps)]
    return init, grads


def _run_opt(mod, cls, init, grads, kw):
    ps = [mod.tensor(a, requires_grad=True) for a in init]
    opt = cls(ps, **kw)
    out = []
    for gs in grads:
        for p, g in zip(ps, gs):
            p.grad = mod.tensor(g)
        opt.step()
        out.append([p.detach().numpy().copy() for p in ps])
    return out, opt


@pytest.mark.parametrize("kw", ADA_CASES)
def test_adafactor_numpy(kw):
    init, grads = _ada_data(0)
    got, opt = _run_opt(janus, janus.optim.Adafactor, init, grads, kw)
    for n in range(len(grads)):
        want = _adafactor_np(init, grads[:n + 1], **kw)
        for g, w in zip(got[n], want):
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6)
    st = opt.state[opt.param_groups[0]["params"][0]]
    assert sorted(st) == ["col_var", "row_var", "step"] and tuple(st["row_var"].shape) == (4, 1)
    assert tuple(st["col_var"].shape) == (1, 5) and st["step"] == len(grads)
    assert sorted(opt.state[opt.param_groups[0]["params"][2]]) == ["step", "variance"]


@pytest.mark.parametrize("kw", ADA_CASES)
def test_adafactor_matches_torch(kw):
    torch = pytest.importorskip("torch")
    if not hasattr(torch.optim, "Adafactor"):
        pytest.skip("this torch has no optim.Adafactor (2.5+)")
    init, grads = _ada_data(1)
    got, _ = _run_opt(janus, janus.optim.Adafactor, init, grads, kw)
    want, _ = _run_opt(torch, torch.optim.Adafactor, init, grads, kw)
    for gs, ws in zip(got, want):  # step by step
        for g, w in zip(gs, ws):
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)


def test_adafactor_defaults_and_checks():
    p = janus.nn.Parameter(janus.ones(2))
    opt = janus.optim.Adafactor([p])
    g = opt.param_groups[0]
    assert (g["lr"], g["beta2_decay"], g["eps"], g["d"], g["weight_decay"], g["foreach"], g["maximize"]) == \
        (1e-2, -0.8, (None, 1e-3), 1.0, 0.0, None, False)
    for kw, msg in ((dict(lr=-1), "Learning rate should be >= 0 but is: -1"),
                    (dict(beta2_decay=0.5), "beta2_decay should be <= 0 but is: 0.5"),
                    (dict(eps=(-1, 1e-3)), "epsilon1 should be >= 0 but is: -1"),
                    (dict(eps=(None, -1)), "epsilon2 should be >= 0 but is: -1"),
                    (dict(d=0.5), "Clipping threshold d should be >= 1 but is: 0.5"),
                    (dict(weight_decay=-1), "weight_decay should be >= 0 but is: -1")):
        with pytest.raises(ValueError, match=re.escape(msg)):
            janus.optim.Adafactor([p], **kw)
    # a state dict round trip continues identically
    init, grads = _ada_data(4, steps=4)
    ref, _ = _run_opt(janus, janus.optim.Adafactor, init, grads, {})
    ps = [janus.tensor(a, requires_grad=True) for a in init]
    o1 = janus.optim.Adafactor(ps)
    for gs in grads[:2]:
        for q, gg in zip(ps, gs):
            q.grad = janus.tensor(gg)
        o1.step()
    o2 = janus.optim.Adafactor(ps)
    o2.load_state_dict(o1.state_dict())
    for gs in grads[2:]:
        for q, gg in zip(ps, gs):
            q.grad = janus.tensor(gg)
        o2.step()
    for q, w in zip(ps, ref[-1]):
        np.testing.assert_array_equal(_np(q).astype(np.float32), w)


# ================================================== under record and replay
PROFILED_SCRIPT = r'''
import sys
import janus as torch, janus.nn as nn, janus.nn.functional as F
from janus.profiler import profile, record_function, schedule
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
X, Y = torch.randn(64, 8), torch.randint(0, 4, (64,))
traces = []
with profile(schedule=schedule(wait=0, warmup=1, active=3), on_trace_ready=lambda p: traces.append(1)) as prof:
    for step in range(int(sys.argv[1])):
        i = (step * 8) % 64
        with record_function("forward"):
            loss = F.cross_entropy(model(X[i:i + 8]), Y[i:i + 8])
        opt.zero_grad()
        loss.backward()
        opt.step()
        prof.step()
        print(f"{loss.item():.7f}")
print("traces", len(traces))
'''


@pytest.mark.skipif(not have_optimize(), reason="janus optimize is not built")
def test_profiled_training_records_and_replays_bitwise(tmp_path):
    """Steps run under the profiler's sys.setprofile hook record, optimize and replay with eager's printed
    losses and weights; the recording saw the profiler as a user's (it scanned no region code, so the
    replay runs the modules' and the step's Python, saying why)."""
    from test_replay import replay_whole
    _, rr, s = replay_whole(PROFILED_SCRIPT, ["20"], ["40"], tmp_path, "profiled_train.py")
    assert rr.stdout.splitlines()[-1] == "traces 10"  # cycles of 4 saved at steps 3, 7, ..., 39
    assert s["segments"] >= 40, s
    assert "or another profiler was active" in rr.stderr
    assert re.search(r"SGD\.step \(sgd\.py:\d+\) 0/40 refused", rr.stderr)


ADAFACTOR_SCRIPT = r'''
import sys
import janus as torch, janus.nn as nn, janus.nn.functional as F
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
opt = torch.optim.Adafactor(model.parameters(), lr=0.05, weight_decay=0.01)
X, Y = torch.randn(64, 8), torch.randint(0, 4, (64,))
for step in range(int(sys.argv[1])):
    i = (step * 8) % 64
    loss = F.cross_entropy(model(X[i:i + 8]), Y[i:i + 8])
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"{loss.item():.7f}")
'''


@pytest.mark.skipif(not have_optimize(), reason="janus optimize is not built")
def test_adafactor_training_records_and_replays_bitwise(tmp_path):
    """Adafactor's step reads nothing on the host (its norms stay tensors): every step of a longer run
    replays as a graph, with eager's losses and weights."""
    from test_replay import replay_whole
    _, rr, s = replay_whole(ADAFACTOR_SCRIPT, ["20"], ["40"], tmp_path, "adafactor_train.py")
    assert s["segments"] >= 40, s


@pytest.mark.skipif(not os.path.exists(JANUS), reason=f"{JANUS} not built")
def test_torch_spelled_profiler_under_janus_run(tmp_path):
    s = tmp_path / "train.py"
    s.write_text(textwrap.dedent('''
        import torch
        import torch.autograd.profiler as ap
        from torch.profiler import profile, record_function, ProfilerActivity
        from torch.optim import Adafactor
        import torch.nn.functional as F
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            with record_function("model_inference"):
                torch.ones(3) + 1
        print(sorted(e.key for e in prof.key_averages()))
        with ap.profile() as p2:
            with ap.record_function("x"):
                pass
        print([e.key for e in p2.key_averages()])
        v, i = F.max_pool2d(torch.arange(16.).reshape(1, 1, 4, 4), 2, return_indices=True)
        print(torch.nn.MaxUnpool2d(2)(v, i).flatten().tolist())
        print(torch.tensor([1., 2.]).apply_(lambda x: x * 10).tolist(), Adafactor.__name__)
    '''))
    e = dict(os.environ, JANUS_BUILD_DIR=BUILD,
             PYTHONPATH=os.path.join(ROOT, "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for k in ("JANUS_RECORD_DB", "JANUS_RECORD_RUN", "JANUS_REPLAY_DB", "JANUS_REPLAY_RUN", "JANUS_PYTHON"):
        e.pop(k, None)
    p = subprocess.run([JANUS, "run", sys.executable, str(s)], capture_output=True, text=True, cwd=tmp_path,
                       env=e, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [
        "['janus::add', 'janus::full', 'model_inference']", "['x']",
        "[0.0, 0.0, 0.0, 0.0, 0.0, 5.0, 0.0, 7.0, 0.0, 0.0, 0.0, 0.0, 0.0, 13.0, 0.0, 15.0]",
        "[10.0, 20.0] Adafactor"]
