"""DataLoader(num_workers > 0): real worker processes.

The same batches as in the main process (map-style and iterable datasets,
shuffling, drop_last, custom collate, numpy samples, dtypes), and the same
random stream after the pass; per-worker seeds as PyTorch derives them
(base_seed + worker id, numpy's state hashed from both, checked against
PyTorch's function when it is installed), worker_init_fn and
get_worker_info(); persistent workers and prefetching; errors re-raised
with the worker's traceback, timeouts, a worker that dies; no process left
behind by a loader abandoned mid-epoch; the base seed drawn on the host
(the generator's next value, no op or sync in a recording); and `janus
record` / `replay` of a script with workers giving the numbers and replay
results of the same script with 0 workers."""
import gc
import importlib.util
import json
import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import janus
from janus.utils.data import DataLoader, Dataset, IterableDataset, TensorDataset, get_worker_info
from janus.utils.data import _worker
from janus.utils.data.dataloader import _base_seed
from janus.utils.data.sampler import _FallbackGenerator, _draw

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(ROOT, "build")))
JANUS = os.path.join(BUILD, "janus")


class Samples(Dataset):
    """Sample i: a float tensor, a bfloat16 one, a numpy array, ints, a string."""

    def __init__(self, n=23):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"x": janus.arange(3.0) + i, "b": janus.full((2,), i / 4, dtype=janus.bfloat16),
                "np": np.full((2, 2), i, dtype=np.int32), "i": i, "name": f"s{i}",
                "mask": janus.tensor([i % 2 == 0])}


def as_py(b):
    if isinstance(b, janus.Tensor):
        return (str(b.dtype), (b.float() if b.dtype == janus.bfloat16 else b).tolist())
    if isinstance(b, dict):
        return {k: as_py(v) for k, v in b.items()}
    if isinstance(b, (list, tuple)):
        return [as_py(v) for v in b]
    return b


def alive(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            return "\nState:\tZ" not in f.read()  # a zombie is dead but not reaped
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("shuffle,drop_last", [(False, False), (True, True)])
def test_same_batches_and_random_stream_as_in_process(shuffle, drop_last):
    outs = []
    for nw in (0, 2, 3):
        janus.manual_seed(5)
        dl = DataLoader(Samples(), batch_size=4, shuffle=shuffle, drop_last=drop_last, num_workers=nw)
        outs.append(([as_py(b) for b in dl], janus.randn(3).tolist()))
    assert outs[1] == outs[0] and outs[2] == outs[0]
    assert len(outs[0][0]) == (5 if drop_last else 6)


def test_tensor_dataset_iterable_and_no_auto_batching():
    janus.manual_seed(0)
    ds = TensorDataset(janus.randn(10, 3), janus.arange(10))
    ref = [as_py(b) for b in DataLoader(ds, batch_size=3)]
    assert [as_py(b) for b in DataLoader(ds, batch_size=3, num_workers=2)] == ref
    assert [as_py(b) for b in DataLoader(ds, batch_size=None, num_workers=2)] == \
        [as_py(b) for b in DataLoader(ds, batch_size=None)]

    class Shards(IterableDataset):
        def __iter__(self):
            info = get_worker_info()
            wid, n = (info.id, info.num_workers) if info else (0, 1)
            return iter(range(wid, 11, n))

    got = [v for b in DataLoader(Shards(), batch_size=2, num_workers=2) for v in b.tolist()]
    assert sorted(got) == list(range(11))
    got = [b.tolist() for b in DataLoader(Shards(), batch_size=2, num_workers=2, drop_last=True)]
    assert got == [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10]]  # worker 1 drops its last, partial batch ([9])


class SeedProbe(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = get_worker_info()
        return [info.id, info.num_workers, info.seed, janus.initial_seed(), random.random(),
                float(np.random.random()), float(janus.rand(1).item()), info.dataset is not None]


def test_worker_seeds_are_pytorchs_and_init_fn_runs():
    janus.manual_seed(11)
    base = _base_seed(None)
    janus.manual_seed(11)
    inits = []
    batches = list(DataLoader(SeedProbe(), batch_size=None, num_workers=2,
                              worker_init_fn=lambda wid: inits.append(wid)))
    assert inits == []  # worker_init_fn ran in the workers, not here
    by_worker = {}
    for b in batches:
        by_worker.setdefault(b[0], b)
    assert set(by_worker) == {0, 1}
    for wid, b in by_worker.items():
        seed = base + wid
        assert b[1:4] == [2, seed, seed]
        assert b[4] == random.Random(seed).random()
        assert b[5] == np.random.RandomState(_worker._generate_state(base, wid)).random()
        janus.manual_seed(seed)
        assert b[6] == janus.rand(1).item() and b[7]
    assert get_worker_info() is None
    g = janus.Generator().manual_seed(3)
    g2 = janus.Generator().manual_seed(3)
    dl = DataLoader(SeedProbe(), batch_size=None, num_workers=1, generator=g)
    first = {b[2] for b in dl}
    assert first == {_base_seed(g2)}  # the loader's generator gives the base seed
    again = {b[2] for b in dl}
    assert again == {_base_seed(g2)} and again != first  # drawn anew each pass: fresh worker seeds


@pytest.mark.parametrize("kind", ["global", "generator", "fallback"])
def test_base_seed_is_the_generators_next_draw(kind):
    """PyTorch's random_() draw, made on the host: the value janus.randint gives from the same
    state, and the stream advanced as far."""
    def gen():
        if kind == "global":
            janus.manual_seed(7)
            return None
        if kind == "generator":
            return janus.Generator().manual_seed(7)
        return _FallbackGenerator().manual_seed(7)

    g = gen()
    want = _draw("randint", g, 0, 1 << 62, (), dtype=janus.int64).item()
    want_next = _draw("rand", g, 4).tolist()
    g = gen()
    got = _base_seed(g)
    assert got == want and _draw("rand", g, 4).tolist() == want_next
    assert 0 <= got < 1 << 62


@pytest.mark.parametrize("nw,persistent,draws", [(0, False, 2), (2, False, 2), (2, True, 1)])
def test_each_new_iterator_draws_one_value(nw, persistent, draws):
    """Two passes draw two base seeds, with or without workers; persistent workers draw
    theirs once (their second pass reuses the iterator and the seeds, as in PyTorch)."""
    janus.manual_seed(5)
    for _ in range(draws):
        _base_seed(None)
    want = janus.randn(3).tolist()
    janus.manual_seed(5)
    dl = DataLoader(list(range(6)), batch_size=2, num_workers=nw, persistent_workers=persistent)
    assert [b.tolist() for b in dl] == [b.tolist() for b in dl] == [[0, 1], [2, 3], [4, 5]]
    assert janus.randn(3).tolist() == want


def test_generate_state_matches_pytorch():
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin or "janus" in spec.origin:
        pytest.skip("PyTorch is not installed")
    cases = [(0, 0), (1234567890123, 1), (2 ** 62 + 17, 3), (99, 7)]
    code = ("from torch.utils.data._utils.worker import _generate_state\n"
            f"print([_generate_state(b, w) for b, w in {cases!r}])")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip() == str([_worker._generate_state(b, w) for b, w in cases])


class Pids(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return os.getpid()


def test_persistent_workers_and_validation():
    calls = []
    dl = DataLoader(Pids(), batch_size=2, num_workers=2, persistent_workers=True, prefetch_factor=1,
                    pin_memory=True, worker_init_fn=lambda w: calls.append(w))
    e1 = [b.tolist() for b in dl]
    pids = {p for b in e1 for p in b}
    e2 = [b.tolist() for b in dl]
    assert len(e1) == len(e2) == 4 and {p for b in e2 for p in b} == pids and len(pids) == 2
    assert os.getpid() not in pids
    it = iter(dl)
    next(it)  # an epoch left half way
    assert [b.tolist() for b in dl] == e2  # the next one starts over with the same workers
    del dl, it
    gc.collect()
    time.sleep(0.2)
    assert not any(alive(p) for p in pids)
    with pytest.raises(ValueError, match="prefetch_factor option could only be specified in multiprocessing"):
        DataLoader(Pids(), prefetch_factor=2)
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        DataLoader(Pids(), persistent_workers=True)
    with pytest.raises(ValueError, match="multiprocessing_context option should specify a valid start method"):
        DataLoader(Pids(), num_workers=1, multiprocessing_context="nope")


class Failing(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            raise ValueError(f"bad sample {i}")
        if i == 6:
            raise KeyError("missing")
        return i


def test_worker_errors_are_reraised_with_the_workers_traceback():
    dl = DataLoader(Failing(), batch_size=None, num_workers=2)
    it = iter(dl)
    assert [next(it) for _ in range(5)] == [0, 1, 2, 3, 4]
    pids = [p.pid for p in it._workers]
    with pytest.raises(ValueError) as ei:
        next(it)
    msg = str(ei.value)
    assert msg.startswith("Caught ValueError in DataLoader worker process 1.\nOriginal Traceback")
    assert 'raise ValueError(f"bad sample {i}")' in msg and "bad sample 5" in msg
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process 0"):
        next(it)
    del it, ei  # the exception's traceback holds the iterator too
    gc.collect()
    time.sleep(0.2)
    assert not any(alive(p) for p in pids)
    with pytest.raises(ZeroDivisionError, match="in DataLoader worker process 0"):
        list(DataLoader(Pids(), num_workers=1, worker_init_fn=lambda w: 1 / 0))


class Slow(Dataset):
    def __init__(self, delay, die_at=None):
        self.delay, self.die_at = delay, die_at

    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == self.die_at:
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(self.delay)
        return i


def test_timeout_and_dead_worker():
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.3 seconds"):
        list(DataLoader(Slow(2.0), num_workers=1, timeout=0.3))
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+.*\) exited unexpectedly"):
        list(DataLoader(Slow(0.0, die_at=3), batch_size=None, num_workers=2))


def test_abandoned_loader_leaves_no_process():
    dl = DataLoader(Slow(0.05), batch_size=1, num_workers=2, prefetch_factor=3)
    it = iter(dl)
    next(it)
    pids = [p.pid for p in it._workers]
    assert all(alive(p) for p in pids)
    t0 = time.time()
    del it
    gc.collect()
    assert time.time() - t0 < 3  # the workers stop at once, not after a liveness timeout
    assert not any(alive(p) for p in pids)


def test_workers_prefetch_in_parallel():
    """The two workers fetch at the same time: their samples' sleeps overlap (asserted on the
    workers' own clocks, not the wall time of the pass, which starting them under load skews)."""
    class Sleepy(Dataset):  # I/O-like samples
        def __len__(self):
            return 20

        def __getitem__(self, i):
            t0 = time.time()
            time.sleep(0.05)
            return [os.getpid(), t0, time.time()]

    spans = {}
    for pid, t0, t1 in DataLoader(Sleepy(), batch_size=None, num_workers=2):
        spans.setdefault(pid, []).append((t0, t1))
    assert len(spans) == 2 and os.getpid() not in spans and sum(map(len, spans.values())) == 20
    a, b = spans.values()
    overlap = sum(max(0.0, min(x1, y1) - max(x0, y0)) for x0, x1 in a for y0, y1 in b)
    assert overlap > 0.1, spans  # serial fetching would give 0


# ---------------------------------------------------- recording and replay
SCRIPT = """
    import sys
    import torch, torch.nn as nn
    from torch.utils.data import DataLoader, Dataset

    class DS(Dataset):
        def __init__(self):
            g = torch.Generator().manual_seed(1)
            self.x = torch.randn(48, 6, generator=g)
            self.y = (self.x.sum(1) > 0).long()
        def __len__(self):
            return 48
        def __getitem__(self, i):
            return self.x[i] * 2, self.y[i]

    nw = int(sys.argv[1])
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        for x, y in DataLoader(DS(), batch_size=16, shuffle=True, num_workers=nw):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        print(epoch, "%.9g" % loss.item())
"""


def _run(tmp_path, *args):
    env = dict(os.environ)
    env["JANUS_BUILD_DIR"] = BUILD
    env["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + env.get("PYTHONPATH", "")
    for k in ("JANUS_RECORD_DB", "JANUS_RECORD_RUN", "JANUS_REPLAY_DB", "JANUS_REPLAY_RUN"):
        env.pop(k, None)
    env["JANUS_REPLAY_ADAPT"] = "0"  # no timing runs: the hit counts are deterministic
    p = subprocess.run([JANUS, *args], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return p


@pytest.mark.skipif(not os.path.exists(JANUS), reason=f"{JANUS} not built")
def test_base_seed_records_no_op_and_no_sync(tmp_path):
    """Drawing the base seed on the host leaves the recording as it was: no random op and no
    .item() sync per pass."""
    s = tmp_path / "passes.py"
    s.write_text(textwrap.dedent("""
        import json, sys
        import janus
        from janus.utils.data import DataLoader
        dl = DataLoader(list(range(8)), batch_size=None)  # ints stay ints: no tensors
        janus.step()
        before = janus._C._rec_stats()  # counts what ended steps hold
        for _ in range(3):
            assert list(dl) == list(range(8))
        janus.step()
        after = janus._C._rec_stats()
        with open(sys.argv[1], "w") as f:
            json.dump([before, after, janus._C._rng_state()[1]], f)
    """))
    out = tmp_path / "stats.json"
    _run(tmp_path, "record", "--db", str(tmp_path / "r.db"), sys.executable, str(s), str(out))
    before, after, offset = json.loads(out.read_text())
    assert (after["ops"], after["syncs"]) == (before["ops"], before["syncs"]), (before, after)
    assert offset == 3  # one value drawn per pass all the same


@pytest.mark.skipif(not os.path.exists(JANUS), reason=f"{JANUS} not built")
def test_record_and_replay_with_workers_match_zero_workers(tmp_path):
    s = tmp_path / "train.py"
    s.write_text(textwrap.dedent(SCRIPT))
    res = {}
    for nw in ("0", "2"):
        db = str(tmp_path / f"r{nw}.db")
        rec = _run(tmp_path, "record", "--db", db, sys.executable, str(s), nw)
        opt = _run(tmp_path, "optimize", "--no-compile", db)
        rep = _run(tmp_path, "replay", "--db", db, sys.executable, str(s), nw)
        assert rep.stdout == rec.stdout
        graphs = int(re.search(r"janus optimize: (\d+) graphs", opt.stdout + opt.stderr).group(1))
        hits = re.search(r"hit rate \((\d+ of \d+) segments", rep.stderr).group(1)
        res[nw] = (rec.stdout, graphs, hits)
    # the workers' batches are host inputs: the same training, every segment a hit (the 0-worker
    # graphs also hold the main process's collate ops, see docs); starting the workers (the fork)
    # is a sync point, so a pass that builds its loader has one segment more per epoch
    assert res["2"][0] == res["0"][0], res
    (h0, n0), (h2, n2) = (map(int, res[k][2].split(" of ")) for k in ("0", "2"))
    assert h0 == n0 and h2 == n2 and n2 == n0 + 3, res
