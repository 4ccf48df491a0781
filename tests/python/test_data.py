"""janus.utils.data: datasets, samplers, DataLoader batching, shuffling
determinism, drop_last, default_collate, and the TensorDataset fast path."""
import collections

import numpy as np
import pytest

import janus
from janus import _C
from janus.utils import data
from janus.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset, IterableDataset, RandomSampler,
                              SequentialSampler, Subset, TensorDataset, default_collate, random_split)
from janus.utils.data.sampler import _FallbackGenerator


def Gen(seed):
    cls = getattr(janus, "Generator", None) or _FallbackGenerator
    g = cls()
    g.manual_seed(seed)
    return g


def vals(t):
    return t.tolist()


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return {"x": float(i), "y": i * i, "name": f"s{i}", "pair": (i, [i, -i])}


def test_tensor_dataset():
    x = janus.arange(12).view(6, 2)
    y = janus.arange(6)
    ds = TensorDataset(x, y)
    assert len(ds) == 6
    a, b = ds[4]
    assert vals(a) == [8, 9] and vals(b) == 4
    with pytest.raises(ValueError, match="Size mismatch between tensors"):
        TensorDataset(x, janus.arange(5))
    with pytest.raises(TypeError, match="must be a Tensor"):
        TensorDataset(x, [1, 2, 3, 4, 5, 6])
    with pytest.raises(ValueError, match="0-d"):
        TensorDataset(janus.tensor(1.0))


@pytest.mark.parametrize("drop_last", [False, True])
def test_sequential_batches(drop_last):
    x = janus.arange(10).float()
    dl = DataLoader(TensorDataset(x, x * 2), batch_size=3, drop_last=drop_last)
    batches = list(dl)
    want = [[0, 1, 2], [3, 4, 5], [6, 7, 8]] + ([] if drop_last else [[9]])
    assert len(dl) == len(want) == len(batches)
    for (bx, by), w in zip(batches, want):
        assert bx.dtype == janus.float32
        assert vals(bx) == w and vals(by) == [2 * v for v in w]
    assert [vals(b[0]) for b in dl] == want  # restartable


def test_default_batch_size_is_one_and_batch_size_none():
    x = janus.arange(3)
    batches = list(DataLoader(TensorDataset(x)))
    assert [vals(b[0]) for b in batches] == [[0], [1], [2]]
    unbatched = list(DataLoader(TensorDataset(x), batch_size=None))
    assert [tuple(vals(t) for t in b) for b in unbatched] == [(0,), (1,), (2,)]
    assert all(isinstance(b, list) for b in unbatched)  # tuples are converted to lists, like torch
    assert len(DataLoader(TensorDataset(x), batch_size=None)) == 3


def _order(ds, gen, bs=7):
    return [v for (b,) in DataLoader(ds, batch_size=bs, shuffle=True, generator=gen) for v in vals(b)]


def test_shuffle_with_private_generator_stream():
    """The fallback generator protocol (.seed/.offset): its own Philox stream."""
    n = 50
    ds = TensorDataset(janus.arange(n))
    before = _C._rng_state()
    g1, g2 = _FallbackGenerator().manual_seed(3), _FallbackGenerator().manual_seed(3)
    dl1 = DataLoader(ds, batch_size=7, shuffle=True, generator=g1)
    dl2 = DataLoader(ds, batch_size=7, shuffle=True, generator=g2)
    e1 = [v for (b,) in dl1 for v in vals(b)]
    f1 = [v for (b,) in dl2 for v in vals(b)]  # interleaved use: streams are independent
    e2 = [v for (b,) in dl1 for v in vals(b)]
    f2 = [v for (b,) in dl2 for v in vals(b)]
    assert _C._rng_state() == before  # the global stream is untouched
    assert e1 == f1 and e2 == f2 and e1 != e2  # a new permutation each epoch
    assert sorted(e1) == list(range(n)) and e1 != list(range(n))
    assert g1.offset > 0 and g1.offset == g2.offset
    assert _order(ds, _FallbackGenerator().manual_seed(4)) != e1


def test_shuffle_with_janus_generator_is_deterministic():
    n = 50
    ds = TensorDataset(janus.arange(n))
    order1 = _order(ds, Gen(3))
    order2 = _order(ds, Gen(3))
    assert order1 == order2
    assert sorted(order1) == list(range(n)) and order1 != list(range(n))
    assert _order(ds, Gen(4)) != order1
    dl = DataLoader(ds, batch_size=7, shuffle=True, generator=Gen(3))
    assert [v for (b,) in dl for v in vals(b)] == order1
    assert [v for (b,) in dl for v in vals(b)] != order1  # the next epoch
    if not hasattr(janus, "Generator"):
        return
    before = _C._rng_state()
    g = janus.Generator()
    g.manual_seed(99)
    assert _C._rng_state() == before, "a Generator must have its own stream"
    _order(ds, g)
    assert _C._rng_state() == before


def test_shuffle_with_global_rng_follows_manual_seed():
    ds = TensorDataset(janus.arange(20))
    janus.manual_seed(11)
    a = [vals(b) for (b,) in DataLoader(ds, batch_size=5, shuffle=True)]
    janus.manual_seed(11)
    b = [vals(b) for (b,) in DataLoader(ds, batch_size=5, shuffle=True)]
    assert a == b and sorted(sum(a, [])) == list(range(20))


def test_fast_path_matches_per_sample_collate():
    rng = np.random.default_rng(0)
    x = janus.tensor(rng.standard_normal((23, 3, 2)).astype(np.float32))
    y = janus.tensor(rng.integers(0, 10, 23))
    m = janus.tensor(rng.integers(0, 2, 23).astype(bool))
    ds = TensorDataset(x, y, m)
    fast = DataLoader(ds, batch_size=5, shuffle=True, generator=Gen(1))
    fast_batches = list(fast)
    slow = DataLoader(ds, batch_size=5, shuffle=True, generator=Gen(1), collate_fn=lambda b: default_collate(b))
    slow_batches = list(slow)
    assert fast._fast_tensor_path() and not slow._fast_tensor_path()
    nb = 0
    for fb, sb in zip(fast_batches, slow_batches):
        assert isinstance(fb, list) and isinstance(sb, list) and len(fb) == len(sb) == 3
        for f, s in zip(fb, sb):
            assert f.dtype == s.dtype and tuple(f.shape) == tuple(s.shape)
            assert vals(f) == vals(s)
        nb += 1
    assert nb == 5


def test_large_batches_collate_beyond_the_op_input_limit():
    x = janus.arange(300 * 2).view(300, 2)
    (fast,) = next(iter(DataLoader(TensorDataset(x), batch_size=300)))
    (slow,) = next(iter(DataLoader(TensorDataset(x), batch_size=300, collate_fn=lambda b: default_collate(b))))
    assert vals(fast) == vals(slow) == vals(x)
    big = default_collate([janus.tensor([i]) for i in range(64 * 64 + 5)])
    assert tuple(big.shape) == (64 * 64 + 5, 1) and vals(big[-1]) == [64 * 64 + 4]


def test_fast_path_batch_is_a_copy():
    x = janus.zeros(4, 2)
    (b,) = next(iter(DataLoader(TensorDataset(x), batch_size=4)))
    b.add_(1)
    assert vals(x) == [[0.0, 0.0]] * 4


def test_default_collate_structures():
    batch = [Squares(4)[i] for i in range(3)]
    out = default_collate(batch)
    assert set(out) == {"x", "y", "name", "pair"}
    assert out["x"].dtype == janus.float64 and vals(out["x"]) == [0.0, 1.0, 2.0]
    assert out["y"].dtype == janus.int64 and vals(out["y"]) == [0, 1, 4]
    assert out["name"] == ["s0", "s1", "s2"]
    assert isinstance(out["pair"], list) and vals(out["pair"][0]) == [0, 1, 2]
    assert [vals(t) for t in out["pair"][1]] == [[0, 1, 2], [0, -1, -2]]
    flags = default_collate([True, False])
    assert flags.dtype == janus.bool and vals(flags) == [True, False]
    t = default_collate([janus.ones(2, 3), janus.zeros(2, 3)])
    assert tuple(t.shape) == (2, 2, 3)
    arr = default_collate([np.arange(3, dtype=np.int32), np.arange(3, dtype=np.int32)])
    assert arr.dtype == janus.int32 and tuple(arr.shape) == (2, 3)
    sc = default_collate([np.float32(1.5), np.float32(2.5)])
    assert sc.dtype == janus.float32 and vals(sc) == [1.5, 2.5]
    P = collections.namedtuple("P", "a b")
    nt = default_collate([P(1, 2.0), P(3, 4.0)])
    assert isinstance(nt, P) and vals(nt.a) == [1, 3] and vals(nt.b) == [2.0, 4.0]
    od = default_collate([collections.OrderedDict(a=1), collections.OrderedDict(a=2)])
    assert isinstance(od, collections.OrderedDict)
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="default_collate"):
        default_collate([np.array(["a"]), np.array(["b"])])


def test_map_dataset_loader_and_custom_collate():
    dl = DataLoader(Squares(5), batch_size=2)
    batches = list(dl)
    assert len(batches) == len(dl) == 3
    assert vals(batches[2]["y"]) == [16]
    dl = DataLoader(Squares(5), batch_size=2, collate_fn=lambda b: [s["y"] for s in b])
    assert list(dl) == [[0, 1], [4, 9], [16]]


def test_samplers():
    ds = list(range(10))
    assert list(SequentialSampler(ds)) == ds
    rs = RandomSampler(ds, generator=Gen(0))
    p1, p2 = list(rs), list(rs)
    assert sorted(p1) == ds and sorted(p2) == ds and len(rs) == 10
    r = RandomSampler(ds, replacement=True, num_samples=45, generator=Gen(0))
    draws = list(r)
    assert len(draws) == 45 and all(0 <= d < 10 for d in draws)
    assert list(RandomSampler(ds, replacement=True, num_samples=45, generator=Gen(0))) == draws
    assert len(list(RandomSampler(ds, num_samples=25, generator=Gen(0)))) == 25
    bs = BatchSampler(SequentialSampler(ds), 4, False)
    assert list(bs) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]] and len(bs) == 3
    assert len(BatchSampler(SequentialSampler(ds), 4, True)) == 2
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        BatchSampler(ds, 0, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean"):
        BatchSampler(ds, 2, 1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        RandomSampler(ds, num_samples=0)
    with pytest.raises(TypeError, match="replacement should be a boolean"):
        RandomSampler(ds, replacement=1)
    sub = data.SubsetRandomSampler([3, 5, 7], generator=Gen(2))
    assert sorted(sub) == [3, 5, 7]


def _batches_one_by_one(sampler, size, drop_last):
    """BatchSampler's batches as an element loop makes them (the reference)."""
    batch = []
    for idx in sampler:
        batch.append(idx)
        if len(batch) == size:
            yield batch
            batch = []
    if batch and not drop_last:
        yield batch


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("kind", ["perm", "perm-global", "two-perms-global", "short", "replacement-global",
                                  "sequential", "list"])
def test_batch_sampler_pulls_like_an_element_loop(kind, drop_last):
    """BatchSampler takes its batches in chunks (and a default random sampler's
    permutation whole): the same batches, and the same random draws at the same
    moments, as pulling indices one by one -- a global-stream sampler's draws
    interleave with the step's own (here a janus.rand after every batch)."""
    ds = list(range(10))

    def sampler():
        return {"perm": lambda: RandomSampler(ds, generator=Gen(4)),
                "perm-global": lambda: RandomSampler(ds),
                "two-perms-global": lambda: RandomSampler(ds, num_samples=20),
                "short": lambda: RandomSampler(ds, num_samples=7, generator=Gen(4)),
                "replacement-global": lambda: RandomSampler(ds, replacement=True, num_samples=70),
                "sequential": lambda: SequentialSampler(ds),
                "list": lambda: [7, 3, 3, 9, 1]}[kind]()

    def run(batches):
        janus.manual_seed(11)
        out = []
        for b in batches:
            out.append((list(b), janus.rand(2).tolist()))
        return out

    got = run(BatchSampler(sampler(), 3, drop_last))
    want = run(_batches_one_by_one(sampler(), 3, drop_last))
    assert got == want and len(got) == len(BatchSampler(sampler(), 3, drop_last))


def test_batch_sampler_and_sampler_options():
    ds = TensorDataset(janus.arange(6))
    dl = DataLoader(ds, batch_sampler=[[5, 0], [1, 2, 3]])
    assert [vals(b[0]) for b in dl] == [[5, 0], [1, 2, 3]]
    dl = DataLoader(ds, sampler=[4, 2, 0], batch_size=2)
    assert [vals(b[0]) for b in dl] == [[4, 2], [0]]
    with pytest.raises(ValueError, match="mutually exclusive with shuffle"):
        DataLoader(ds, sampler=[0], shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        DataLoader(ds, batch_sampler=[[0]], batch_size=2)
    with pytest.raises(ValueError, match="drop_last"):
        DataLoader(ds, batch_size=None, drop_last=True)


def test_iterable_dataset():
    class Count(IterableDataset):
        def __iter__(self):
            return iter(range(7))

    assert [vals(b) for b in DataLoader(Count(), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert [vals(b) for b in DataLoader(Count(), batch_size=3, drop_last=True)] == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError, match="expected unspecified shuffle"):
        DataLoader(Count(), shuffle=True)


def test_subset_concat_random_split():
    ds = TensorDataset(janus.arange(10))
    sub = Subset(ds, [9, 1])
    assert len(sub) == 2 and vals(sub[0][0]) == 9
    cat = ConcatDataset([Subset(ds, [0, 1]), Subset(ds, [7])])
    assert len(cat) == 3 and vals(cat[2][0]) == 7 and vals(cat[-1][0]) == 7
    a, b = random_split(ds, [7, 3], generator=Gen(0))
    assert len(a) == 7 and len(b) == 3
    assert sorted(a.indices + b.indices) == list(range(10))
    a2, _ = random_split(ds, [7, 3], generator=Gen(0))
    assert a2.indices == a.indices
    parts = random_split(ds, [0.5, 0.3, 0.2], generator=Gen(0))
    assert [len(p) for p in parts] == [5, 3, 2]
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(ds, [3, 3])


def test_generators_are_independent_streams():
    janus.manual_seed(5)
    a = janus.rand(4).tolist()
    janus.manual_seed(5)
    g = janus.Generator().manual_seed(123)
    janus.randperm(10, generator=g)  # must not advance the default stream
    assert janus.rand(4).tolist() == a
    g1, g2 = janus.Generator().manual_seed(7), janus.Generator().manual_seed(7)
    assert janus.randn(3, generator=g1).tolist() == janus.randn(3, generator=g2).tolist()
    assert janus.randn(3, generator=g1).tolist() != janus.randn(3, generator=janus.Generator().manual_seed(7)).tolist()
