"""Checks of the Philox random ops (runtime/k_random.c).

Every case is compared exactly with an independent pure-Python
implementation of the stream definition written at the top of k_random.c
(Philox4x32-10 itself is pinned by the Random123 known-answer vectors), so
the CPU kernels, this file and the CUDA backend agree bit for bit.  Also:
generator state handling (seed, offset advance by numel, counter wrap),
thread-count independence, statistics with fixed seeds and generous bounds,
in-place fills of non-contiguous tensors, and errors.
"""
import math

import numpy as np
import pytest

import opcheck as oc
from janus import _C
from opcheck import dt, jn, npy, op

M32 = 0xFFFFFFFF


# ------------------------------------------------ reference stream (Python)
def philox4x32_10(ctr, key):
    """Philox4x32-10 (Salmon et al., SC'11) on 4 counter and 2 key words."""
    c, k = list(ctr), list(key)
    for r in range(10):
        if r:
            k = [(k[0] + 0x9E3779B9) & M32, (k[1] + 0xBB67AE85) & M32]
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [((p1 >> 32) ^ c[1] ^ k[0]) & M32, p1 & M32, ((p0 >> 32) ^ c[3] ^ k[1]) & M32, p0 & M32]
    return c


def block(seed, counter):
    counter %= 2**64
    return philox4x32_10([counter & M32, counter >> 32, 0, 0], [seed & M32, (seed >> 32) & M32])


def blocks(seed, off, n):
    return [block(seed, off + i) for i in range(n)]


def x64(r):
    return r[0] << 32 | r[1]


def unif(r, dtype):
    if dtype == "float64":
        return (x64(r) >> 11) * 2.0**-53
    if dtype == "float16":
        return (r[0] >> 21) * 2.0**-11
    if dtype == "bfloat16":
        return (r[0] >> 24) * 2.0**-8
    return (r[0] >> 8) * 2.0**-24


def normal01(r, dtype):
    if dtype == "float64":
        u1 = ((x64(r) >> 11) + 1) * 2.0**-53
        u2 = ((r[2] << 32 | r[3]) >> 11) * 2.0**-53
    else:
        u1 = ((r[0] >> 8) + 1) * 2.0**-24
        u2 = (r[1] >> 8) * 2.0**-24
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(6.283185307179586 * u2)


def rnd(v, dtype):
    """double -> dtype the way the kernels round (halves through float32)."""
    if dtype == "float16":
        return np.float16(np.float32(v))
    return oc.NP[dtype](v)


def dtype_name(code, default):
    return default if code is None or code < 0 else _C.dtype_names[code]


def ref_uniform(rs, dtype, lo, hi):
    out = []
    for r in rs:
        v = rnd(lo + (hi - lo) * unif(r, dtype), dtype)
        out.append(rnd(lo, dtype) if float(v) == hi else v)
    return np.array(out, dtype=oc.NP[dtype])


def ref_normal(rs, dtype, mean, std):
    return np.array([rnd(mean + std * normal01(r, dtype), dtype) for r in rs], dtype=oc.NP[dtype])


def _get(attrs, k, default=None):
    return attrs[k] if len(attrs) > k else default


def ref(name, seed, off, arrays, attrs):
    """Expected output of op `name` at stream position (seed, off)."""
    if name in ("rand", "randn"):
        shape, d = attrs[0], dtype_name(_get(attrs, 1), "float32")
        rs = blocks(seed, off, int(np.prod(shape)))
        f = ref_uniform(rs, d, 0.0, 1.0) if name == "rand" else ref_normal(rs, d, 0.0, 1.0)
        return f.reshape(shape)
    if name == "randint":
        lo, hi, shape = attrs[:3]
        d = dtype_name(_get(attrs, 3), "int64")
        R = (hi - lo) % 2**64
        vals = [lo + ((x64(r) * R) >> 64) for r in blocks(seed, off, int(np.prod(shape)))]
        return np.array(vals).astype(oc.NP[d]).reshape(shape)
    if name == "randperm":
        n, d = attrs[0], dtype_name(_get(attrs, 1), "int64")
        keys = [x64(r) for r in blocks(seed, off, n)]
        return np.array(sorted(range(n), key=lambda i: (keys[i], i)), dtype=np.int64).astype(oc.NP[d])
    if name in ("uniform_", "normal_"):
        x = arrays[0]
        d = x.dtype.name
        rs = blocks(seed, off, x.size)
        f = ref_uniform(rs, d, *attrs[:2]) if name == "uniform_" else ref_normal(rs, d, *attrs[:2])
        return f.reshape(x.shape)
    if name == "bernoulli":
        p = arrays[0]
        d = p.dtype.name
        rs = blocks(seed, off, p.size)
        flat = np.ascontiguousarray(p).reshape(-1)
        u = [(x64(r) >> 11) * 2.0**-53 if d == "float64" else (r[0] >> 8) * 2.0**-24 for r in rs]
        return np.array([1.0 if u[i] < float(flat[i]) else 0.0 for i in range(p.size)]).astype(p.dtype).reshape(p.shape)
    if name == "dropout_mask":
        shape, p = attrs[0], attrs[1]
        rs = blocks(seed, off, int(np.prod(shape)))
        return np.array([(r[0] >> 8) * 2.0**-24 >= p for r in rs], dtype=bool).reshape(shape)
    raise AssertionError(name)


# ------------------------------------------------------------------ cases
# (input builders, attrs without seed/offset); builders return fresh arrays
def _zeros(shape, dtype="float32", transposed=False):
    if transposed:
        return lambda: np.zeros(shape[::-1], oc.NP[dtype]).T
    return lambda: np.zeros(shape, oc.NP[dtype])


CASES = {
    "rand": [([], ([7],)), ([], ([3, 5], dt("float64"))), ([], ([40], dt("float16"))), ([], ([],)),
             ([], ([0, 4],)), ([], ([2, 3, 4], dt("float32")))],
    "randn": [([], ([50],)), ([], ([4, 5], dt("float64"))), ([], ([30], dt("float16"))), ([], ([],))],
    "randint": [([], (0, 10, [200])), ([], (-5, 5, [3, 4], dt("int32"))), ([], (0, 256, [100], dt("uint8"))),
                ([], (0, 2, [20], dt("bool"))), ([], (-2**62, 2**62, [10])), ([], (3, 4, [5])),
                ([], (0, 100, [20], dt("float32"))), ([], (-2**63, 2**63 - 1, [10])), ([], (0, 5, [0]))],
    "randperm": [([], (0,)), ([], (1,)), ([], (10,)), ([], (300,)), ([], (50, dt("int32"))),
                 ([], (20, dt("float32"))), ([], (200, dt("uint8")))],
    "uniform_": [([_zeros((4, 5))], (-2.0, 3.0)), ([_zeros((3, 7), "float64")], (1.0, 1.0)),
                 ([_zeros((40,), "float16")], (0.0, 1.0)), ([_zeros((4, 5), transposed=True)], (5.0, 6.0)),
                 ([_zeros((6,), "float64")], (-1e300, 1e300)), ([_zeros(())], (0.0, 1.0)),
                 ([_zeros((30,), "float16")], (-2.0, 2.0))],
    "normal_": [([_zeros((3, 4))], (1.0, 2.0)), ([_zeros((5,), "float64")], (0.0, 0.5)),
                ([_zeros((20,), "float16")], (-1.0, 3.0)), ([_zeros((6,))], (4.0, 0.0)),
                ([_zeros((3, 5), "float64", transposed=True)], (0.0, 1.0))],
    "bernoulli": [([lambda: np.linspace(0, 1, 50, dtype=np.float32)], ()),
                  ([lambda: oc.rand((4, 5), "float64", 0, 1)], ()),
                  ([lambda: np.broadcast_to(np.float32(0.3), (100,))], ()),
                  ([lambda: np.linspace(0, 1, 30).astype(np.float16)], ()),
                  ([lambda: np.array(0.5, np.float32)], ()),
                  ([lambda: oc.rand((5, 6), "float32", 0, 1).T], ())],
    "dropout_mask": [([], ([100], 0.2)), ([], ([3, 4], 0.0)), ([], ([50], 1.0)), ([], ([10, 10], 0.5)),
                     ([], ([], 0.25)), ([], ([64], 0.1))],
}

INPLACE = ("uniform_", "normal_")


@pytest.mark.parametrize("name,k", [(n, k) for n in CASES for k in range(len(CASES[n]))],
                         ids=[f"{n}{k}" for n in CASES for k in range(len(CASES[n]))])
def test_matches_reference_stream(name, k):
    builders, attrs = CASES[name][k]
    arrays = [b() for b in builders]
    seed, off = 1000 + 17 * k, 12345 + 7 * k
    want = ref(name, seed, off, [a.copy() for a in arrays], attrs)
    _C._set_rng_state(seed, off)
    ts = [jn(a) for a in arrays]
    v0 = ts[0]._version if ts else None
    out = op(name, ts, attrs)
    assert _C._rng_state() == (seed, off + want.size)  # offset advances by numel
    assert _C.dtype_names[out._dtype_id] == want.dtype.name
    assert out._shape == want.shape
    np.testing.assert_array_equal(npy(out), want)
    if name in INPLACE:
        assert out._storage_ptr == ts[0]._storage_ptr and ts[0]._version == v0 + 1
        np.testing.assert_array_equal(arrays[0], want)  # written in place, in C order


def test_philox_known_answers():
    # Random123's kat_vectors for philox4x32 with 10 rounds
    assert philox4x32_10([0, 0, 0, 0], [0, 0]) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    assert philox4x32_10([M32] * 4, [M32, M32]) == [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]
    assert philox4x32_10([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0]) == \
        [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]


def test_golden_rand_seed0():
    _C.manual_seed(0)
    got = npy(op("rand", [], ([4],)))
    # element 0 is (0x6627E8D5 >> 8) / 2^24 from the all-zero known answer
    assert got[0] == np.float32(0x6627E8 / 2**24)
    np.testing.assert_array_equal(got, [np.float32((block(0, i)[0] >> 8) / 2**24) for i in range(4)])
    np.testing.assert_array_equal(got * 2**24, [0x6627E8, 0xF8E4CC, 0x04FAA3, 0xC990EF])


def test_generator_state():
    _C.manual_seed(42)
    assert _C._rng_state() == (42, 0)
    a = npy(op("rand", [], ([3, 4],)))
    assert _C._rng_state() == (42, 12)
    b = npy(op("rand", [], ([3, 4],)))
    assert not np.array_equal(a, b)  # successive calls differ
    _C.manual_seed(42)
    np.testing.assert_array_equal(npy(op("rand", [], ([3, 4],))), a)
    _C._set_rng_state(42, 12)
    np.testing.assert_array_equal(npy(op("rand", [], ([3, 4],))), b)
    # counter based: element i depends only on offset + i
    _C._set_rng_state(7, 0)
    whole = npy(op("randn", [], ([100],)))
    _C._set_rng_state(7, 30)
    np.testing.assert_array_equal(npy(op("randn", [], ([20],))), whole[30:50])
    # different seeds differ
    _C._set_rng_state(8, 0)
    assert not np.array_equal(npy(op("randn", [], ([100],))), whole)
    # empty outputs consume nothing
    _C._set_rng_state(9, 5)
    op("rand", [], ([0, 3],))
    assert _C._rng_state() == (9, 5)
    # the counter wraps modulo 2^64; seeds use all 64 bits
    seed, off = 2**63 + 5, 2**64 - 3
    _C._set_rng_state(seed, off)
    got = npy(op("rand", [], ([7],)))
    assert _C._rng_state() == (seed, 4)
    np.testing.assert_array_equal(got, ref("rand", seed, off, [], ([7],)))


def test_thread_count_does_not_change_values():
    n0 = _C.get_num_threads()
    outs = []
    try:
        for nt in (1, 2, 3):
            _C.set_num_threads(nt)
            _C.manual_seed(3)
            outs.append([npy(op("rand", [], ([1 << 22],))), npy(op("randn", [], ([1 << 18],))),
                         npy(op("randperm", [], (1 << 17,))), npy(op("dropout_mask", [], ([1 << 20], 0.5)))])
    finally:
        _C.set_num_threads(n0)
    for o in outs[1:]:
        for x, y in zip(outs[0], o):
            np.testing.assert_array_equal(x, y)
    u = outs[0][0]  # the 4M-element case
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 2e-3


def test_statistics():
    n = 1 << 20
    _C.manual_seed(0)
    for d in ("float32", "float64"):
        u = npy(op("rand", [], ([n], dt(d))))
        assert u.dtype == oc.NP[d] and 0 <= u.min() and u.max() < 1
        assert abs(u.mean() - 0.5) < 3e-3 and abs(u.var() - 1 / 12) < 2e-3
        z = npy(op("randn", [], ([n], dt(d)))).astype(np.float64)
        assert abs(z.mean()) < 5e-3 and abs(z.var() - 1) < 1e-2
        assert abs(np.mean(z**4) - 3) < 0.05
        assert abs(np.mean(np.abs(z) > 2) - 0.0455) < 2e-3
    h = npy(op("rand", [], ([n], dt("float16"))))
    assert h.max() < 1 and abs(h.astype(np.float64).mean() - 0.5) < 3e-3
    x = np.zeros(n, np.float32)
    op("normal_", [jn(x)], (3.0, 2.0))
    assert abs(x.mean() - 3) < 1e-2 and abs(x.std() - 2) < 1e-2
    op("uniform_", [jn(x)], (-2.0, 3.0))
    assert x.min() >= -2 and x.max() < 3 and abs(x.mean() - 0.5) < 1e-2
    r = npy(op("randint", [], (-3, 7, [n])))
    assert r.min() == -3 and r.max() == 6
    counts = np.bincount(r + 3, minlength=10)
    chi2 = ((counts - n / 10) ** 2 / (n / 10)).sum()
    assert chi2 < 60, chi2  # 9 degrees of freedom
    p = npy(op("randperm", [], (100000,)))
    assert np.array_equal(np.sort(p), np.arange(100000)) and not np.array_equal(p, np.arange(100000))
    # each value lands in the first half about half of the time
    assert abs(np.mean(p[:50000] < 50000) - 0.5) < 0.01
    b = npy(op("bernoulli", [jn(np.broadcast_to(np.float32(0.3), (n,)))]))
    assert set(np.unique(b)) <= {0.0, 1.0} and abs(b.mean() - 0.3) < 3e-3
    m = npy(op("dropout_mask", [], ([n], 0.1)))
    assert m.dtype == np.bool_ and abs(m.mean() - 0.9) < 3e-3


def test_bfloat16():
    _C._set_rng_state(11, 0)
    t = op("rand", [], ([64], dt("bfloat16")))
    assert _C.dtype_names[t._dtype_id] == "bfloat16" and t._shape == (64,)
    try:
        got = npy(t)
    except NotImplementedError:
        pytest.skip("cast is not implemented yet; bfloat16 values cannot be read")
    np.testing.assert_array_equal(got, [(r[0] >> 24) / 256 for r in blocks(11, 0, 64)])


ERRORS = [
    ("rand", [], ([2], dt("int64")), TypeError, "floating point dtype.*got int64"),
    ("randn", [], ([2], dt("bool")), TypeError, "got bool"),
    ("rand", [], ([-1, 2],), ValueError, "negative dimension -1"),
    ("randint", [], (5, 5, [3]), ValueError, "low=5 >= high=5"),
    ("randint", [], (0, 300, [3], dt("uint8")), ValueError, r"range \[0, 300\) does not fit in dtype uint8"),
    ("randint", [], (-1, 1, [3], dt("bool")), ValueError, "does not fit in dtype bool"),
    ("randint", [], (0, 2**25, [3], dt("float32")), ValueError, "does not fit in dtype float32"),
    ("randperm", [], (-1,), ValueError, "n must be non-negative, got -1"),
    ("randperm", [], (300, dt("uint8")), ValueError, "too large for dtype uint8"),
    ("randperm", [], (3, dt("bool")), TypeError, "bool"),
    ("uniform_", [np.zeros(3, np.int64)], (0.0, 1.0), TypeError, "uniform_: the tensor must be a floating point dtype.*int64"),
    ("uniform_", [np.zeros(3, np.float32)], (2.0, 1.0), ValueError, "from=2 > to=1"),
    ("uniform_", [np.zeros(3, np.float16)], (-1e5, 1e5), ValueError, "to-from"),
    ("uniform_", [np.zeros(3, np.float32)], (0.0, float("nan")), ValueError, "range"),
    ("uniform_", [np.broadcast_to(np.zeros(1, np.float32), (3,))], (0.0, 1.0), RuntimeError, "single memory location"),
    ("normal_", [np.zeros(3, np.int32)], (0.0, 1.0), TypeError, "int32"),
    ("normal_", [np.zeros(3, np.float32)], (0.0, -1.0), ValueError, "std >= 0.0, but found std -1"),
    ("normal_", [np.zeros(3, np.float32)], (0.0, float("nan")), ValueError, "std >= 0.0"),
    ("bernoulli", [np.zeros(3, np.int64)], (), TypeError, "probability tensor p must be a floating point dtype"),
    ("bernoulli", [np.array([0.5, 1.5], np.float32)], (), ValueError, r"\[0, 1\], but got p = 1.5"),
    ("bernoulli", [np.array([np.nan], np.float64)], (), ValueError, "but got p = nan"),
    ("dropout_mask", [], ([3], 1.5), ValueError, "between 0 and 1, but got 1.5"),
    ("dropout_mask", [], ([3], -0.1), ValueError, "between 0 and 1"),
]


@pytest.mark.parametrize("name,arrays,attrs,exc,msg", ERRORS, ids=[f"{e[0]}{i}" for i, e in enumerate(ERRORS)])
def test_errors(name, arrays, attrs, exc, msg):
    with pytest.raises(exc, match=msg):
        op(name, [jn(a) for a in arrays], attrs)
