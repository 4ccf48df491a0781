"""janus.utils.data additions: WeightedRandomSampler (draw frequencies against
the weights, without-replacement passes, seeding, DataLoader use),
ChainDataset and StackDataset; against closed forms always, against
torch.utils.data where torch imports."""
import numpy as np
import pytest

import janus
from janus.utils import data
from janus.utils.data import (ChainDataset, DataLoader, Dataset, IterableDataset, StackDataset, TensorDataset,
                              WeightedRandomSampler)
from janus.utils.data.sampler import _FallbackGenerator

try:
    import torch
    import torch.utils.data as tdata
except ImportError:  # the files pass without torch
    torch = tdata = None
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def chi2(counts, p):
    """Pearson's statistic of observed counts against probabilities p."""
    counts = np.asarray(counts, dtype=np.float64)
    expected = counts.sum() * np.asarray(p, dtype=np.float64)
    keep = expected > 0
    assert counts[~keep].sum() == 0, "a zero-probability index was drawn"
    return float((((counts - expected) ** 2)[keep] / expected[keep]).sum())


# chi-square quantiles at 1 - 1e-4 (df -> bound): a correct sampler fails with probability
# about 1e-4 per seed, and the seeds are fixed, so these are deterministic checks
CHI2_BOUND = {4: 23.6, 5: 25.8, 6: 27.9}

W = [0.1, 0.9, 0.4, 0.7, 3.0, 0.6]


# ------------------------------------------------------------ WeightedRandomSampler
def test_weighted_with_replacement_frequencies():
    janus.manual_seed(1234)
    n = 60000
    s = WeightedRandomSampler(W, n)
    drawn = list(s)
    assert len(drawn) == len(s) == n
    assert all(type(i) is int and 0 <= i < len(W) for i in drawn)
    counts = np.bincount(drawn, minlength=len(W))
    p = np.array(W) / sum(W)
    assert chi2(counts, p) < CHI2_BOUND[5]
    # and the bound has teeth: uniform or reversed weights would be far outside it
    assert chi2(counts, np.full(len(W), 1 / len(W))) > 100 * CHI2_BOUND[5]
    assert chi2(counts, p[::-1]) > 100 * CHI2_BOUND[5]


def test_weighted_zero_weight_never_drawn():
    janus.manual_seed(7)
    w = [0.0, 2.0, 0.0, 1.0, 0.0]
    drawn = list(WeightedRandomSampler(w, 20000))
    counts = np.bincount(drawn, minlength=5)
    assert counts[0] == counts[2] == counts[4] == 0
    assert chi2(counts, np.array(w) / 3.0) < 15.1  # df 1, 1 - 1e-4


def test_weighted_without_replacement_is_a_permutation_subset():
    janus.manual_seed(3)
    for k in (1, 3, len(W)):
        for _ in range(20):
            drawn = list(WeightedRandomSampler(W, k, replacement=False))
            assert len(drawn) == k and len(set(drawn)) == k
            assert set(drawn) <= set(range(len(W)))
    full = list(WeightedRandomSampler(W, len(W), replacement=False))
    assert sorted(full) == list(range(len(W)))


def test_weighted_without_replacement_first_two_picks():
    # successive draws without replacement: P(first = i) = p_i,
    # P(second = j) = sum_{i != j} p_i p_j / (1 - p_i)
    w = np.array([1.0, 2.0, 3.0, 4.0, 10.0])
    p = w / w.sum()
    second = np.array([sum(p[i] * p[j] / (1 - p[i]) for i in range(5) if i != j) for j in range(5)])
    assert abs(second.sum() - 1) < 1e-12
    janus.manual_seed(99)
    firsts, seconds = [], []
    s = WeightedRandomSampler(w, 2, replacement=False)
    for _ in range(3000):
        a, b = list(s)
        assert a != b
        firsts.append(a)
        seconds.append(b)
    assert chi2(np.bincount(firsts, minlength=5), p) < CHI2_BOUND[4]
    assert chi2(np.bincount(seconds, minlength=5), second) < CHI2_BOUND[4]
    # the second pick is not distributed as the first (the race is without replacement)
    assert chi2(np.bincount(seconds, minlength=5), p) > 2 * CHI2_BOUND[4]


def test_weighted_without_replacement_zero_weights_come_last():
    janus.manual_seed(5)
    for _ in range(20):
        drawn = list(WeightedRandomSampler([0.0, 1.0, 0.0, 2.0], 2, replacement=False))
        assert sorted(drawn) == [1, 3]


def test_weighted_reproducible_under_manual_seed():
    s = WeightedRandomSampler(W, 50)
    janus.manual_seed(11)
    a = list(s)
    b = list(s)  # the next pass draws afresh
    janus.manual_seed(11)
    assert list(s) == a
    assert list(s) == b
    assert a != b
    janus.manual_seed(12)
    assert list(s) != a
    s2 = WeightedRandomSampler(W, 6, replacement=False)
    janus.manual_seed(11)
    c = list(s2)
    janus.manual_seed(11)
    assert list(s2) == c


@pytest.mark.parametrize("fallback", [False, True])
def test_weighted_explicit_generator(fallback):
    def gen(seed):
        g = _FallbackGenerator() if fallback else janus.Generator()
        g.manual_seed(seed)
        return g

    for replacement in (True, False):
        a = list(WeightedRandomSampler(W, 6, replacement, generator=gen(21)))
        b = list(WeightedRandomSampler(W, 6, replacement, generator=gen(21)))
        assert a == b
        assert list(WeightedRandomSampler(W, 6, replacement, generator=gen(22))) != a
    # the generator's stream is its own: the global stream does not move
    janus.manual_seed(0)
    ref = janus.rand(4).tolist()
    janus.manual_seed(0)
    g = gen(21)
    s = WeightedRandomSampler(W, 100, generator=g)
    first = list(s)
    assert janus.rand(4).tolist() == ref
    assert list(s) != first  # the generator advanced
    # and the global seed does not move it
    g2 = gen(21)
    janus.manual_seed(123)
    assert list(WeightedRandomSampler(W, 100, generator=g2)) == first


def test_weighted_in_dataloader():
    x = janus.arange(10, dtype=janus.float32) * 10
    ds = TensorDataset(x)
    w = [0.0] * 5 + [1.0] * 5
    s = WeightedRandomSampler(w, 23)
    janus.manual_seed(8)
    got = [v for (b,) in DataLoader(ds, batch_size=4, sampler=s) for v in b.tolist()]
    # (the loader draws its base seed from the global stream first, as torch's does)
    assert len(got) == 23 and all(v >= 50 for v in got)
    janus.manual_seed(8)
    assert [v for (b,) in DataLoader(ds, batch_size=4, sampler=s) for v in b.tolist()] == got
    assert len(DataLoader(ds, batch_size=4, sampler=s)) == 6
    # with a generator the loader's own draws do not enter the sampler's stream
    g = janus.Generator().manual_seed(4)
    expect = list(WeightedRandomSampler(w, 23, generator=g))
    g.manual_seed(4)
    loader = DataLoader(ds, batch_size=4, sampler=WeightedRandomSampler(w, 23, generator=g))
    got = [int(v) // 10 for (b,) in loader for v in b.tolist()]
    assert got == expect


def test_weighted_in_dataloader_with_workers():
    ds = TensorDataset(janus.arange(8, dtype=janus.float32))
    g = janus.Generator().manual_seed(17)
    expect = list(WeightedRandomSampler([1, 0, 1, 0, 1, 0, 1, 0], 12, generator=g))
    g.manual_seed(17)
    loader = DataLoader(ds, batch_size=5, num_workers=2,
                        sampler=WeightedRandomSampler([1, 0, 1, 0, 1, 0, 1, 0], 12, generator=g))
    got = [int(v) for (b,) in loader for v in b.tolist()]
    assert got == expect and all(i % 2 == 0 for i in got)


def test_weighted_attributes_and_input_forms():
    s = WeightedRandomSampler(np.array([1, 2, 3]), 4)
    assert s.weights.dtype == janus.float64 and s.weights.tolist() == [1.0, 2.0, 3.0]
    assert s.num_samples == 4 and s.replacement is True and s.generator is None
    s = WeightedRandomSampler(janus.tensor([0.5, 0.5]), 3)
    assert s.weights.dtype == janus.float64 and len(s) == 3
    assert isinstance(s, data.Sampler)


def _errors(make, iterate=False):
    try:
        obj = make()
        if iterate:
            list(obj)
    except Exception as e:  # noqa: BLE001
        return type(e), str(e)
    return None


BAD_CONSTRUCT = [
    lambda m: m.WeightedRandomSampler([1.0, 2.0], 0),
    lambda m: m.WeightedRandomSampler([1.0, 2.0], -3),
    lambda m: m.WeightedRandomSampler([1.0, 2.0], 2.0),
    lambda m: m.WeightedRandomSampler([1.0, 2.0], True),
    lambda m: m.WeightedRandomSampler([1.0, 2.0], 2, replacement=1),
    lambda m: m.WeightedRandomSampler([[1.0, 2.0]], 2),
]
BAD_ITERATE = [
    lambda m: m.WeightedRandomSampler([1.0, -1.0], 2),
    lambda m: m.WeightedRandomSampler([1.0, -1.0], 1),
    lambda m: m.WeightedRandomSampler([1.0, -1.0], 2, replacement=False),
    lambda m: m.WeightedRandomSampler([0.0, 0.0], 2),
    lambda m: m.WeightedRandomSampler([0.0, 0.0], 1, replacement=False),
    lambda m: m.WeightedRandomSampler([1.0, float("nan")], 2),
    lambda m: m.WeightedRandomSampler([float("nan"), 1.0], 1),
    lambda m: m.WeightedRandomSampler([1.0, float("inf")], 2),
    lambda m: m.WeightedRandomSampler([1.0, float("inf"), -1.0], 5),
    lambda m: m.WeightedRandomSampler([1.0, -1.0, float("inf")], 5),
    lambda m: m.WeightedRandomSampler([1.0, float("inf")], 2, replacement=False),
    lambda m: m.WeightedRandomSampler([1.0, 2.0], 3, replacement=False),
]


def test_weighted_errors():
    for make in BAD_CONSTRUCT:
        err = _errors(lambda: make(data))
        assert err is not None and err[0] is ValueError
    for make in BAD_ITERATE:
        s = make(data)  # constructing is fine; the first pull checks, as torch
        err = _errors(lambda: s, iterate=True)
        assert err is not None and err[0] is RuntimeError
    assert "num_samples should be a positive integer value, but got num_samples=0" in _errors(
        lambda: BAD_CONSTRUCT[0](data))[1]
    assert "weights have shape (1, 2)" in _errors(lambda: BAD_CONSTRUCT[5](data))[1]
    msgs = [_errors(lambda: make(data), True)[1] for make in BAD_ITERATE]
    assert msgs[0] == msgs[5] == "invalid multinomial distribution (encountering probability entry < 0)"
    assert msgs[7] == msgs[8] == "invalid multinomial distribution (encountering probability entry = infinity or NaN)"
    assert msgs[9] == msgs[0]
    assert msgs[1] == msgs[2] == msgs[6] == msgs[10] == "probability tensor contains either `inf`, `nan` or element < 0"
    assert msgs[3] == msgs[4] == "invalid multinomial distribution (sum of probabilities <= 0)"
    assert msgs[11] == "cannot sample n_sample > prob_dist.size(-1) samples without replacement"


@needs_torch
def test_weighted_errors_match_torch():
    for make in BAD_CONSTRUCT:
        assert _errors(lambda: make(data)) == _errors(lambda: make(tdata))
    for make in BAD_ITERATE:
        assert _errors(lambda: make(data), True) == _errors(lambda: make(tdata), True)


@needs_torch
def test_weighted_matches_torch_shape_and_support():
    torch.manual_seed(0)
    janus.manual_seed(0)
    for replacement, k in ((True, 500), (False, 4)):
        t = list(tdata.WeightedRandomSampler([0.0, 1.0, 2.0, 0.0, 5.0], k, replacement))
        j = list(WeightedRandomSampler([0.0, 1.0, 2.0, 0.0, 5.0], k, replacement))
        assert len(t) == len(j) == k
        assert set(t) == set(j) if replacement else sorted(t[:3]) == sorted(j[:3]) == [1, 2, 4]


# ------------------------------------------------------------ ChainDataset
class Count(IterableDataset):
    def __init__(self, start, stop, with_len=True):
        self.start, self.stop, self.with_len = start, stop, with_len

    def __iter__(self):
        return iter(range(self.start, self.stop))

    def __len__(self):
        if not self.with_len:
            raise TypeError("no len")
        return self.stop - self.start


class Rows(Dataset):
    def __init__(self, rows):
        self.rows = rows

    def __getitem__(self, i):
        return self.rows[i]

    def __len__(self):
        return len(self.rows)


def test_chain_dataset():
    c = ChainDataset([Count(0, 3), Count(10, 12), Count(5, 5), Count(20, 21)])
    assert isinstance(c, IterableDataset)
    assert list(c) == [0, 1, 2, 10, 11, 20]
    assert list(c) == [0, 1, 2, 10, 11, 20]  # iterable again
    assert len(c) == 6
    with pytest.raises(TypeError):
        len(ChainDataset([Count(0, 2), Count(0, 2, with_len=False)]))
    bad = ChainDataset([Count(0, 2), Rows([7, 8])])
    it = iter(bad)
    assert [next(it), next(it)] == [0, 1]  # the first dataset runs before the check fails
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        next(it)
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        len(bad)
    with pytest.raises(TypeError):
        c + c  # an IterableDataset


def test_chain_dataset_in_dataloader():
    c = ChainDataset([Count(0, 5), Count(100, 103)])
    batches = [b.tolist() for b in DataLoader(c, batch_size=3)]
    assert batches == [[0, 1, 2], [3, 4, 100], [101, 102]]
    assert len(DataLoader(c, batch_size=3)) == 3
    assert [b.tolist() for b in DataLoader(c, batch_size=3, drop_last=True)] == [[0, 1, 2], [3, 4, 100]]


@needs_torch
def test_chain_dataset_matches_torch():
    class TCount(tdata.IterableDataset):
        def __init__(self, a, b):
            self.a, self.b = a, b

        def __iter__(self):
            return iter(range(self.a, self.b))

        def __len__(self):
            return self.b - self.a

    spans = [(0, 3), (7, 7), (9, 13)]
    t = tdata.ChainDataset([TCount(*s) for s in spans])
    j = ChainDataset([Count(*s) for s in spans])
    assert list(t) == list(j) and len(t) == len(j)


# ------------------------------------------------------------ StackDataset
def test_stack_dataset_tuple_and_dict():
    a, b = Rows([1, 2, 3]), Rows(["x", "y", "z"])
    t = StackDataset(a, b)
    assert len(t) == 3 and t[1] == (2, "y") and t.datasets == (a, b)
    d = StackDataset(num=a, name=b)
    assert len(d) == 3 and d[2] == {"num": 3, "name": "z"}
    assert isinstance(d.datasets, dict)
    assert t.__getitems__([2, 0]) == [(3, "z"), (1, "x")]
    assert d.__getitems__([0, 1]) == [{"num": 1, "name": "x"}, {"num": 2, "name": "y"}]
    x = janus.arange(6, dtype=janus.float32).reshape(3, 2)
    s = StackDataset(TensorDataset(x), a)
    row, n = s[1]
    assert row[0].tolist() == [2.0, 3.0] and n == 2


def test_stack_dataset_uses_nested_getitems():
    class Batched(Rows):
        calls = 0

        def __getitems__(self, indices):
            Batched.calls += 1
            return [self.rows[i] * 10 for i in indices]

    class Short(Rows):
        def __getitems__(self, indices):
            return [self.rows[i] for i in indices[:-1]]

    s = StackDataset(Batched([1, 2, 3]), Rows([4, 5, 6]))
    assert s.__getitems__([0, 2]) == [(10, 4), (30, 6)] and Batched.calls == 1
    with pytest.raises(ValueError, match="Nested dataset's output size mismatch. Expected 2, got 1"):
        StackDataset(a=Short([1, 2, 3]), b=Rows([1, 2, 3])).__getitems__([0, 1])


def test_stack_dataset_errors():
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(Rows([1, 2]), Rows([1, 2, 3]))
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(a=Rows([1, 2]), b=Rows([1]))
    with pytest.raises(ValueError, match="At least one dataset should be passed"):
        StackDataset()
    with pytest.raises(ValueError, match="but both types are given"):
        StackDataset(Rows([1]), b=Rows([1]))


def test_stack_dataset_in_dataloader():
    x = janus.arange(8, dtype=janus.float32).reshape(4, 2)
    ds = StackDataset(x=Rows([x[i] for i in range(4)]), y=Rows([0, 1, 0, 1]))
    batches = list(DataLoader(ds, batch_size=3))
    assert [sorted(b) for b in batches] == [["x", "y"], ["x", "y"]]
    assert batches[0]["x"].tolist() == [[0, 1], [2, 3], [4, 5]]
    assert batches[0]["y"].tolist() == [0, 1, 0] and batches[1]["y"].tolist() == [1]
    tup = list(DataLoader(StackDataset(Rows([1.0, 2.0]), Rows([3, 4])), batch_size=2))
    assert [t.tolist() for t in tup[0]] == [[1.0, 2.0], [3, 4]]


@needs_torch
def test_stack_dataset_matches_torch():
    class TRows(tdata.Dataset):
        def __init__(self, rows):
            self.rows = rows

        def __getitem__(self, i):
            return self.rows[i]

        def __len__(self):
            return len(self.rows)

    for args, kwargs in (((Rows([1, 2]), Rows([3, 4])), {}), ((), {"p": Rows([1, 2]), "q": Rows([5, 6])})):
        targs = tuple(TRows(r.rows) for r in args)
        tkw = {k: TRows(v.rows) for k, v in kwargs.items()}
        j, t = StackDataset(*args, **kwargs), tdata.StackDataset(*targs, **tkw)
        assert len(j) == len(t) and j[1] == t[1] and j.__getitems__([1, 0]) == t.__getitems__([1, 0])
    cases = [((Rows([1]), Rows([1, 2])), {}), ((), {"a": Rows([1]), "b": Rows([])}), ((), {}),
             ((Rows([1]),), {"b": Rows([1])})]
    for args, kwargs in cases:
        targs = tuple(TRows(r.rows) for r in args)
        tkw = {k: TRows(v.rows) for k, v in kwargs.items()}
        assert _errors(lambda: StackDataset(*args, **kwargs)) == _errors(lambda: tdata.StackDataset(*targs, **tkw))


@needs_torch
def test_exports_match_torch():
    for name in ("WeightedRandomSampler", "ChainDataset", "StackDataset"):
        assert name in tdata.__all__ and name in data.__all__
        assert getattr(data, name) is getattr(janus.utils.data, name)
    from janus.utils.data.dataset import ChainDataset as C, StackDataset as S  # torch's module layout
    from janus.utils.data.sampler import WeightedRandomSampler as WRS
    assert (C, S, WRS) == (ChainDataset, StackDataset, WeightedRandomSampler)
