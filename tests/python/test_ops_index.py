"""Table-driven checks of the k_index.c ops (gathers, scatters, advanced
indexing) against numpy: np.take, np.take_along_axis, fancy indexing,
np.add.at and np.eye, over several dtypes, non-contiguous and broadcast
inputs, 0-d and empty tensors, plus the error messages.

Each case is (id, make) where make() returns fresh (inputs, attrs, want);
index_put_ writes its input, so every run needs a fresh x.
"""
import numpy as np
import pytest

import opcheck as oc

DTYPES = ["float32", "float64", "float16", "int64", "bool"]


def arr(shape, dtype="float32", seed=0):
    return oc.rand(shape, dtype, seed=seed)


def ints(shape, lo, hi, dtype="int64", seed=1):
    return np.random.default_rng(seed).integers(lo, hi, size=shape).astype(dtype)


def case(cases, cid, make):
    cases.append((cid, make))


# ------------------------------------------------------------ references
def ref_index_select(x, idx, dim):
    if x.ndim == 0:
        return x.copy()
    return np.take(x, idx.reshape(-1), axis=dim)


def ref_gather(x, idx, dim):
    if idx.ndim == 0 or x.ndim == 0:
        return ref_gather(x.reshape(-1), idx.reshape(-1), 0).reshape(idx.shape)
    sl = tuple(slice(None) if d == dim else slice(0, idx.shape[d]) for d in range(x.ndim))
    return np.take_along_axis(x[sl], idx.astype(np.int64), axis=dim)


def full_index(idx, dim):
    grids = list(np.indices(idx.shape))
    grids[dim] = idx.astype(np.int64)
    return tuple(grids)


def ref_scatter(x, idx, src, dim):
    """Element by element in C order of the index: the last write wins."""
    out = x.copy().reshape(x.shape or (1,))
    idx1 = idx.reshape(idx.shape or (1,))
    if np.ndim(src) == 0:
        src = np.broadcast_to(np.asarray(src).astype(x.dtype), idx1.shape)
    src1 = src.reshape(src.shape or (1,))
    for p in np.ndindex(idx1.shape):
        q = list(p)
        q[dim] = idx1[p]
        out[tuple(q)] = src1[p]
    return out.reshape(x.shape)


def ref_scatter_add(x, idx, src, dim):
    out = x.copy().reshape(x.shape or (1,))
    idx1 = idx.reshape(idx.shape or (1,))
    src1 = src.reshape(src.shape or (1,))
    sl = tuple(slice(0, n) for n in idx1.shape)
    np.add.at(out, full_index(idx1, dim), src1[sl])
    return out.reshape(x.shape)


def np_keys(indices, mask):
    """numpy key for x[...] from the op's (index tensors, mask) form."""
    keys, it = [], iter(indices)
    for m in mask:
        k = next(it) if m else slice(None)
        if isinstance(k, np.ndarray) and k.dtype == np.uint8:
            k = k.astype(bool)  # a uint8 index is a mask in PyTorch, integers in numpy
        keys.append(k)
    return tuple(keys)


def expand_bools(keys, x):
    """np.add.at wants integer arrays: a bool mask becomes its nonzero()."""
    out = []
    for k in keys:
        if isinstance(k, np.ndarray) and k.dtype in (np.bool_, np.uint8):
            out.extend(np.nonzero(k))
        else:
            out.append(k)
    return tuple(out)


def ref_index_put(x, values, indices, mask, accumulate):
    out = x.copy()
    keys = np_keys(indices, mask)
    v = np.asarray(values).astype(x.dtype)
    if accumulate and any(isinstance(k, np.ndarray) and k.ndim == 0 and k.dtype == np.bool_ for k in keys):
        tmp = out[keys]  # x[True]: no duplicates possible, a plain += is exact
        tmp += v
        out[keys] = tmp
    elif accumulate:
        np.add.at(out, expand_bools(keys, x), v)
    else:
        out[keys] = v
    return out


# ----------------------------------------------------------------- cases
def layout_pairs(x, idx):
    """x layouts crossed with index layouts, without the full product."""
    xs, ids = oc.layouts(x), oc.layouts(idx)
    out = [(xs[0], ids[0])]
    out += [(xl, ids[0]) for xl in xs[1:]]
    out += [(xs[0], il) for il in ids[1:]]
    return out


def index_select_cases():
    cs = []
    for dt in DTYPES:
        x = arr((5, 6, 3), dt)
        for dim in (0, 1, -1):
            idx = ints((4,), 0, x.shape[dim], seed=dim + 3)
            for (ln, xl), (il, ix) in layout_pairs(x, idx):
                case(cs, f"{dt}-dim{dim}-{ln}-{il}",
                     lambda xl=xl, ix=ix, dim=dim: ([xl, ix], (dim,), ref_index_select(xl, ix, dim)))
    x = arr((4, 5))
    case(cs, "int32-index", lambda: ([x, np.array([3, 0, 3], np.int32)], (1,),
                                     ref_index_select(x, np.array([3, 0, 3]), 1)))
    case(cs, "0d-index", lambda: ([x, np.array(2)], (0,), x[2:3]))
    case(cs, "0d-x", lambda: ([np.array(4.5, np.float32), np.array([0])], (0,), np.array(4.5, np.float32)))
    case(cs, "empty-index", lambda: ([x, np.zeros(0, np.int64)], (1,), x[:, :0]))
    case(cs, "empty-x", lambda: ([np.zeros((0, 3), np.float32), np.array([2, 1])], (1,),
                                  np.zeros((0, 2), np.float32)))
    xt = np.ascontiguousarray(arr((64, 300)).T)  # transposed: the strided gather path
    ib = ints((200,), 0, 300, seed=9)
    case(cs, "noncontig-big", lambda: ([xt.T, ib], (1,), xt.T[:, ib]))
    bx = np.broadcast_to(arr((1, 7)), (6, 7))
    case(cs, "broadcast-x", lambda: ([bx, np.array([6, 0])], (1,), bx[:, [6, 0]]))
    return cs


def gather_cases():
    cs = []
    for dt in DTYPES:
        x = arr((4, 5, 3), dt)
        for dim in (0, 1, 2):
            shp = [3, 4, 2]
            shp[dim] = 6  # longer than x along dim is fine
            idx = ints(tuple(shp), 0, x.shape[dim], seed=dim)
            for (ln, xl), (il, ix) in layout_pairs(x, idx):
                case(cs, f"{dt}-dim{dim}-{ln}-{il}",
                     lambda xl=xl, ix=ix, dim=dim: ([xl, ix], (dim,), ref_gather(xl, ix, dim)))
    x = arr((6, 5))
    i32 = ints((6, 2), 0, 5, "int32")
    case(cs, "int32", lambda: ([x, i32], (1,), ref_gather(x, i32, 1)))
    case(cs, "neg-dim", lambda: ([x, i32], (-1,), ref_gather(x, i32, 1)))
    bi = np.broadcast_to(np.array([[4], [0], [2]]), (3, 5))
    case(cs, "broadcast-index", lambda: ([x, bi], (0,), ref_gather(x, bi, 0)))
    case(cs, "0d", lambda: ([np.array(3.0, np.float32), np.array(0)], (0,), np.array(3.0, np.float32)))
    case(cs, "0d-index-1d-x", lambda: ([np.arange(4.0), np.array(2)], (0,), np.array(2.0)))
    case(cs, "empty-index", lambda: ([x, np.zeros((0, 5), np.int64)], (1,), np.zeros((0, 5), np.float32)))
    big = arr((2048, 1024))
    bidx = ints((2048, 512), 0, 1024, seed=5)
    case(cs, "big", lambda: ([big, bidx], (1,), np.take_along_axis(big, bidx, 1)))
    return cs


def scatter_cases(add):
    cs = []
    ref = ref_scatter_add if add else ref_scatter
    for dt in DTYPES:
        x = arr((4, 5, 3), dt)
        for dim in (0, 1, 2):
            shp = [3, 4, 2]
            shp[dim] = 6  # duplicates along dim
            idx = ints(tuple(shp), 0, x.shape[dim], seed=dim + 7)
            src = arr((6, 6, 7), dt, seed=2)
            for (ln, xl), (il, ix) in layout_pairs(x, idx):
                case(cs, f"{dt}-dim{dim}-{ln}-{il}",
                     lambda xl=xl, ix=ix, dim=dim, src=src: ([xl, ix, src], (dim,), ref(xl, ix, src, dim)))
            for sl, sv in oc.layouts(src)[1:]:
                case(cs, f"{dt}-dim{dim}-src-{sl}",
                     lambda ix=idx, dim=dim, sv=sv, x=x: ([x, ix, sv], (dim,), ref(x, ix, sv, dim)))
    x = arr((6, 4))
    i32 = ints((5, 4), 0, 6, "int32", seed=11)
    s = arr((5, 4), seed=12)
    case(cs, "int32", lambda: ([x, i32, s], (0,), ref(x, i32, s, 0)))
    bsrc = np.broadcast_to(arr((1, 4), seed=13), (5, 4))
    case(cs, "broadcast-src", lambda: ([x, i32, bsrc], (0,), ref(x, i32, bsrc, 0)))
    case(cs, "0d", lambda: ([np.array(1.0), np.array(0), np.array(5.0)], (0,),
                            np.array(6.0 if add else 5.0)))
    case(cs, "empty-index", lambda: ([x, np.zeros((0, 4), np.int64), s], (0,), x.copy()))
    big = arr((512, 1024))
    bs = arr((512, 512), seed=7)
    if add:
        bidx = ints((512, 512), 0, 1024, seed=6)
        case(cs, "big", lambda: ([big, bidx, bs], (1,), ref_scatter_add(big, bidx, bs, 1)))
    else:  # unique targets per row, so numpy's fancy assignment is a valid reference
        bidx = np.argsort(np.random.default_rng(6).random((512, 1024)), axis=1)[:, :512]
        case(cs, "big", lambda: ([big, bidx, bs], (1,), _fancy_scatter(big, bidx, bs, 1)))
    if not add:
        case(cs, "value", lambda: ([x, i32, 2.5], (0,), ref(x, i32, 2.5, 0)))
        xi = arr((6, 4), "int64")
        case(cs, "value-int", lambda: ([xi, i32, 3], (0,), ref(xi, i32, 3, 0)))
    return cs


def _fancy_scatter(x, idx, src, dim):
    out = x.copy()
    out[full_index(idx, dim)] = src
    return out


def embedding_cases():
    cs = []
    for dt in DTYPES:
        w = arr((10, 6), dt)
        idx = ints((3, 4), 0, 10, seed=4)
        for (ln, wl), (il, ix) in layout_pairs(w, idx):
            case(cs, f"{dt}-{ln}-{il}", lambda wl=wl, ix=ix: ([wl, ix], (-1,), wl[ix]))
    w = arr((10, 6))
    case(cs, "int32", lambda: ([w, np.array([[9, 0], [3, 3]], np.int32)], (-1,), w[[[9, 0], [3, 3]]]))
    case(cs, "padding_idx", lambda: ([w, np.array([0, 2, 0])], (0,), w[[0, 2, 0]]))
    case(cs, "0d-index", lambda: ([w, np.array(7)], (-1,), w[7]))
    case(cs, "empty", lambda: ([w, np.zeros((2, 0), np.int64)], (-1,), np.zeros((2, 0, 6), np.float32)))
    case(cs, "dim1", lambda: ([w[:, :1], np.array([1, 5])], (-1,), w[[1, 5], :1]))
    case(cs, "broadcast-index", lambda: ([w, np.broadcast_to(np.array([4, 1]), (3, 2))], (-1,),
                                         w[np.broadcast_to(np.array([4, 1]), (3, 2))]))
    # larger than cache: 16384 x 256 floats out (4M), rows memcpy'd in parallel
    wb = arr((5000, 256), seed=3)
    ib = ints((128, 128), 0, 5000, seed=8)
    case(cs, "big", lambda: ([wb, ib], (-1,), wb[ib]))
    wt = np.ascontiguousarray(arr((64, 3000), seed=3)).T  # strided rows: generic gather path
    it = ints((4096,), 0, 3000, seed=9)
    case(cs, "big-strided-weight", lambda: ([wt, it], (-1,), wt[it]))
    return cs


def one_hot_cases():
    cs = []
    idx = ints((3, 4), 0, 5)
    for il, ix in oc.layouts(idx):
        case(cs, f"C5-{il}", lambda ix=ix: ([ix], (5,), np.eye(5, dtype=np.int64)[ix]))
        case(cs, f"infer-{il}", lambda ix=ix: ([ix], (-1,), np.eye(ix.max() + 1, dtype=np.int64)[ix]))
    case(cs, "int32", lambda: ([np.array([2, 0], np.int32)], (3,), np.eye(3, dtype=np.int64)[[2, 0]]))
    case(cs, "0d", lambda: ([np.array(1)], (3,), np.array([0, 1, 0])))
    case(cs, "empty", lambda: ([np.zeros((0, 2), np.int64)], (4,), np.zeros((0, 2, 4), np.int64)))
    b = np.broadcast_to(np.array([1, 0, 2]), (2, 3))
    case(cs, "broadcast", lambda: ([b], (-1,), np.eye(3, dtype=np.int64)[b]))
    return cs


# (name, x shape, index makers, mask) for x[...] patterns
def adv_patterns():
    i = lambda *a, **k: ints(*a, **k)  # noqa: E731
    return [
        ("x[i]", (5, 4, 3), [i((6,), -5, 5)], [1]),
        ("x[:,i]", (5, 4, 3), [i((2, 3), -4, 4)], [0, 1]),
        ("x[:,:,i]", (5, 4, 3), [i((7,), 0, 3)], [0, 0, 1]),
        ("x[i,j]", (5, 4, 3), [i((3,), 0, 5), i((3,), 0, 4, seed=2)], [1, 1]),
        ("x[i,:,j]", (5, 4, 3), [i((2, 2), 0, 5), i((2, 2), 0, 3, seed=2)], [1, 0, 1]),
        ("x[:,i,j]-bcast", (5, 4, 3), [i((2, 1), 0, 4), i((3,), 0, 3, seed=2)], [0, 1, 1]),
        ("x[i,j,k]", (5, 4, 3), [i((4,), 0, 5), i((4,), 0, 4, seed=2), i((1,), 0, 3, seed=3)], [1, 1, 1]),
        ("x[0d]", (5, 4), [np.array(-2)], [1]),
        ("x[:,0d]", (5, 4), [np.array(3)], [0, 1]),
        ("x[i][:,None]-like", (5, 4), [i((3, 1), 0, 5)], [1]),
        ("x[int32]", (5, 4), [i((3,), -5, 5, "int32")], [1]),
        ("x[empty]", (5, 4), [np.zeros(0, np.int64)], [1]),
        ("x[:,empty2d]", (5, 4), [np.zeros((2, 0), np.int64)], [0, 1]),
        ("x[mask]", (5, 4), [arr((5, 4), "bool", seed=4)], [1]),
        ("x[mask1d]", (5, 4, 2), [arr((5,), "bool", seed=5)], [1]),
        ("x[mask2d]-3d", (5, 4, 2), [arr((5, 4), "bool", seed=6)], [1]),
        ("x[:,mask]", (3, 5, 2), [arr((5,), "bool", seed=7)], [0, 1]),
        ("x[mask,i]", (5, 4, 3), [np.array([1, 0, 1, 1, 0], bool), i((3,), 0, 4)], [1, 1]),
        ("x[mask,:,i]", (5, 4, 3), [np.array([1, 0, 1, 1, 0], bool), i((1,), 0, 3)], [1, 0, 1]),
        ("x[uint8]", (4, 3), [np.array([1, 0, 2, 0], np.uint8)], [1]),
        ("x[allfalse]", (4, 3), [np.zeros((4, 3), bool)], [1]),
        ("x[True]", (4, 3), [np.array(True)], [1]),
        ("x[]", (4, 3), [], []),
        ("x[:,:]", (4, 3), [], [0, 0]),
    ]


def index_cases():
    cs = []
    for name, shape, idxs, mask in adv_patterns():
        x = arr(shape, seed=len(name))
        want = x[np_keys(idxs, mask)]
        case(cs, name, lambda x=x, idxs=idxs, mask=mask, want=want: ([x, *idxs], (mask,), want))
        for ln, xl in oc.layouts(x)[1:]:
            case(cs, f"{name}-x{ln}", lambda xl=xl, idxs=idxs, mask=mask: ([xl, *idxs], (mask,),
                                                                         xl[np_keys(idxs, mask)]))
        if idxs and idxs[0].ndim:
            for il, ixl in oc.layouts(idxs[0])[1:]:
                ii = [ixl, *idxs[1:]]
                case(cs, f"{name}-i{il}", lambda x=x, ii=ii, mask=mask: ([x, *ii], (mask,), x[np_keys(ii, mask)]))
    for dt in DTYPES:
        x = arr((4, 6, 3), dt, seed=1)
        ii = [ints((2, 2), -4, 4), ints((2, 1), 0, 3, seed=3)]
        case(cs, f"{dt}", lambda x=x, ii=ii: ([x, *ii], ([1, 0, 1],), x[ii[0], :, ii[1]]))
        m = arr((4, 6), "bool", seed=9)
        case(cs, f"{dt}-mask", lambda x=x, m=m: ([x, m], ([1],), x[m]))
    xb = np.broadcast_to(arr((1, 5)), (4, 5))
    ib = np.broadcast_to(np.array([[2], [0]]), (2, 3))
    case(cs, "broadcast-x-and-index", lambda: ([xb, ib], ([0, 1],), xb[:, ib]))
    x0 = np.array(2.5, np.float32)
    case(cs, "0d-x[True]", lambda: ([x0, np.array(True)], ([1],), x0[np.array(True)]))
    case(cs, "0d-x[False]", lambda: ([x0, np.array(False)], ([1],), x0[np.array(False)]))
    big = arr((4096, 512), seed=2)
    bi = ints((4096,), -4096, 4096, seed=3)
    case(cs, "big-rows", lambda: ([big, bi], ([1],), big[bi]))
    bm = arr((4096, 512), "bool", seed=4)
    case(cs, "big-mask", lambda: ([big, bm], ([1],), big[bm]))
    return cs


def index_put_cases():
    cs = []
    for name, shape, idxs, mask in adv_patterns():
        x = arr(shape, seed=len(name))
        rshape = x[np_keys(idxs, mask)].shape
        vals = arr(rshape, seed=3)
        for acc in (False, True):
            for ln, _ in oc.layouts(x):
                case(cs, f"{name}-acc{int(acc)}-{ln}",
                     lambda x=x, ln=ln, idxs=idxs, mask=mask, vals=vals, acc=acc: (
                         [dict(oc.layouts(x.copy()))[ln], vals, *idxs], (mask, acc),
                         ref_index_put(x, vals, idxs, mask, acc)))
    for dt in DTYPES:
        x = arr((4, 6, 3), dt, seed=1)
        ii = [ints((5, 2), -4, 4), ints((5, 1), 0, 3, seed=3)]  # duplicates in the first index
        vals = arr((5, 2, 6), dt, seed=2)
        for acc in (False, True):
            case(cs, f"{dt}-acc{int(acc)}", lambda x=x, ii=ii, vals=vals, acc=acc: (
                [x.copy(), vals, *ii], ([1, 0, 1], acc), ref_index_put(x, vals, ii, [1, 0, 1], acc)))
    x = arr((5, 4))
    m = arr((5, 4), "bool", seed=5)
    case(cs, "mask-scalar-value", lambda: ([x.copy(), 0.0, m], ([1], False), np.where(m, 0, x)))
    case(cs, "mask-scalar-acc", lambda: ([x.copy(), 1.0, m], ([1], True), np.where(m, x + 1, x)))
    row = arr((4,), "float64", seed=6)  # cast float64 -> float32, broadcast over rows
    case(cs, "cast-broadcast", lambda: ([x.copy(), row, np.array([0, 3])], ([1], False),
                                        ref_index_put(x, row, [np.array([0, 3])], [1], False)))
    xi = arr((5, 4), "int64")
    case(cs, "float-into-int", lambda: ([xi.copy(), np.array([1.75, -2.5], np.float64), np.array([1, 2])],
                                        ([0, 1], False), ref_index_put(xi, np.array([1.75, -2.5]),
                                                                        [np.array([1, 2])], [0, 1], False)))
    dup = np.array([1, 1, 1, 3])
    case(cs, "dup-last-wins", lambda: ([np.zeros(5, np.float32), np.array([1, 2, 3, 4], np.float32), dup],
                                       ([1], False), np.array([0, 3, 0, 4, 0], np.float32)))
    case(cs, "dup-accumulate", lambda: ([np.zeros(5, np.float32), np.array([1, 2, 3, 4], np.float32), dup],
                                        ([1], True), np.array([0, 6, 0, 4, 0], np.float32)))
    lead1 = arr((1, 2, 4), seed=7)  # leading size-1 dims of values are dropped
    case(cs, "values-leading-1", lambda: ([x.copy(), lead1, np.array([4, 0])], ([1], False),
                                          ref_index_put(x, lead1[0], [np.array([4, 0])], [1], False)))
    big = arr((4096, 256), seed=2)
    bi = ints((8192,), -4096, 4096, seed=3)
    bv = arr((8192, 256), seed=4)
    case(cs, "big-accumulate", lambda: ([big.copy(), bv, bi], ([1], True),
                                        ref_index_put(big, bv, [bi], [1], True)))
    return cs


CASES = {
    "index_select": index_select_cases(),
    "gather": gather_cases(),
    "scatter": scatter_cases(False),
    "scatter_add": scatter_cases(True),
    "embedding": embedding_cases(),
    "one_hot": one_hot_cases(),
    "index": index_cases(),
    "index_put_": index_put_cases(),
}

TOLS = {"float16": (2e-3, 2e-3)}

ALL = [(op, cid, make) for op, cs in CASES.items() for cid, make in cs]


def to_input(a):
    return a if isinstance(a, (int, float, bool)) else oc.jn(a)


@pytest.mark.parametrize("op,cid,make", ALL, ids=[f"{o}-{c}" for o, c, _ in ALL])
def test_case(op, cid, make):
    inputs, attrs, want = make()
    ts = [to_input(a) for a in inputs]
    got = oc.op(op, ts, attrs)
    want = np.asarray(want)
    rtol, atol = TOLS.get(str(want.dtype), (None, None))
    if op in ("scatter_add", "index_put_") and want.dtype == np.float32:
        rtol, atol = 1e-5, 1e-5  # summation order of duplicates may differ from np.add.at
    oc.assert_close(got, want, rtol=rtol, atol=atol)
    assert oc.npy(got).dtype == want.dtype
    if op == "index_put_":
        oc.assert_close(np.asarray(inputs[0]), want, rtol=rtol, atol=atol)  # and its memory changed


def test_scatter_duplicates_last_write_wins():
    x = np.zeros((2, 4), np.float32)
    idx = np.array([[1, 1, 1], [3, 0, 3]])
    src = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    got = oc.npy(oc.op("scatter", [oc.jn(x), oc.jn(idx), oc.jn(src)], (1,)))
    np.testing.assert_array_equal(got, [[0, 3, 0, 0], [5, 0, 0, 6]])


def test_out_of_place_scatter_leaves_input():
    x = arr((3, 4))
    x0 = x.copy()
    oc.op("scatter_add", [oc.jn(x), oc.jn(np.array([[0, 1]])), oc.jn(arr((1, 2)))], (1,))
    np.testing.assert_array_equal(x, x0)


# ---------------------------------------------------------------- errors
F = np.zeros((5, 4), np.float32)
ERRORS = [
    ("index_select", [F, np.array([1, 7])], (0,), IndexError, "index 7 is out of bounds for dimension 0 with size 5"),
    ("index_select", [F, np.array([-1])], (1,), IndexError, "index -1 is out of bounds for dimension 1 with size 4"),
    ("index_select", [F, np.array([1.0], np.float32)], (0,), TypeError, "float32"),
    ("index_select", [F, np.zeros((2, 2), np.int64)], (0,), IndexError, r"vector.*\[2, 2\]"),
    ("index_select", [F, np.array([1])], (2,), IndexError, "dimension out of range"),
    ("index_select", [np.array(1.0), np.array([0, 0])], (0,), RuntimeError, "only 1 value"),
    ("gather", [F, np.array([[0], [4]])], (1,), IndexError, "index 4 is out of bounds for dimension 1 with size 4"),
    ("gather", [F, np.array([[-1]])], (0,), IndexError, "index -1 is out of bounds for dimension 0 with size 5"),
    ("gather", [F, np.array([[0.5]], np.float32)], (0,), TypeError, "float32"),
    ("gather", [F, np.array([0])], (0,), RuntimeError, "same number of dimensions"),
    ("gather", [F, np.zeros((2, 5), np.int64)], (0,), RuntimeError, r"index \[2, 5\].*self \[5, 4\]"),
    ("scatter", [F, np.array([[5]]), F], (0,), IndexError, "index 5 is out of bounds for dimension 0 with size 5"),
    ("scatter", [F, np.array([[0]]), F.astype(np.float64)], (0,), TypeError, "float32 and float64"),
    ("scatter", [F, np.zeros((6, 1), np.int64), F], (0,), RuntimeError, r"src \[5, 4\]"),
    ("scatter", [F, np.zeros((2, 5), np.int64), np.zeros((2, 5), np.float32)], (0,), RuntimeError, "smaller than self"),
    ("scatter", [F, np.array([[0]], np.float64), F], (0,), TypeError, "float64"),
    ("scatter_add", [F, np.array([[0, 9]]), F], (1,), IndexError, "index 9 is out of bounds for dimension 1 with size 4"),
    ("scatter_add", [F, np.array([[-2]]), F], (1,), IndexError, "index -2 is out of bounds"),
    ("scatter_add", [F, np.array([[0]]), F.astype(np.int64)], (0,), TypeError, "int64"),
    ("scatter_add", [F, np.array([[0]]), np.zeros(3, np.float32)], (0,), RuntimeError, "dimensions as src"),
    ("scatter_add", [F, np.array([[0]]), 1.0], (0,), TypeError, "float64"),
    ("embedding", [F, np.array([[2, 5]])], (-1,), IndexError, "index 5 is out of bounds for dimension 0 with size 5"),
    ("embedding", [F, np.array([-1])], (-1,), IndexError, "index -1 is out of bounds"),
    ("embedding", [F, np.array([1.0], np.float32)], (-1,), TypeError, "float32"),
    ("embedding", [np.zeros(5, np.float32), np.array([1])], (-1,), RuntimeError, "2-D"),
    ("embedding", [F, np.array([1])], (5,), ValueError, "padding_idx"),
    ("one_hot", [np.array([1, -1])], (3,), RuntimeError, "non-negative"),
    ("one_hot", [np.array([1, -1])], (-1,), RuntimeError, "non-negative"),
    ("one_hot", [np.array([1, 3])], (3,), RuntimeError, "smaller than num_classes"),
    ("one_hot", [np.array([1.0], np.float32)], (3,), TypeError, "float32"),
    ("one_hot", [np.zeros(0, np.int64)], (-1,), RuntimeError, "empty"),
    ("one_hot", [np.array([1])], (-2,), ValueError, "num_classes"),
    ("index", [F, np.array([0, 5])], ([1],), IndexError, "index 5 is out of bounds for dimension 0 with size 5"),
    ("index", [F, np.array([-6])], ([1],), IndexError, "index -6 is out of bounds for dimension 0 with size 5"),
    ("index", [F, np.array([4])], ([0, 1],), IndexError, "index 4 is out of bounds for dimension 1 with size 4"),
    ("index", [F, np.array([1.0], np.float32)], ([1],), IndexError, "float32"),
    ("index", [F, np.zeros((5, 3), bool)], ([1],), IndexError, r"mask \[5, 3\] at index 1"),
    ("index", [F, np.array([0, 1]), np.array([0, 1, 2])], ([1, 1],), IndexError, r"broadcast.*\[2\], \[3\]"),
    ("index", [F, np.array([0]), np.array([0]), np.array([0])], ([1, 1, 1],), IndexError, "too many indices"),
    ("index", [F, np.array([0])], ([1, 1],), ValueError, "2 indexed slots but 1 index"),
    ("index", [F, np.array([0])], ([2],), ValueError, "mask entries"),
    ("index_put_", [F.copy(), np.zeros(3, np.float32), np.array([0, 1])], ([1], False), RuntimeError,
     r"value tensor of shape \[3\] cannot be broadcast to indexing result of shape \[2, 4\]"),
    ("index_put_", [F.copy(), np.zeros(1, np.float32), np.array([0, 7])], ([1], True), IndexError,
     "index 7 is out of bounds for dimension 0 with size 5"),
    ("index_put_", [np.broadcast_to(np.zeros((1, 4), np.float32), (5, 4)), np.zeros(1, np.float32), np.array([0])],
     ([1], False), RuntimeError, "single memory location"),
    ("index_put_", [F.copy(), np.zeros(1, np.float32), np.array([0.0], np.float16)], ([1], False), IndexError, "float16"),
]


@pytest.mark.parametrize("op,inputs,attrs,exc,pat", ERRORS,
                         ids=[f"{e[0]}-{i}" for i, e in enumerate(ERRORS)])
def test_errors(op, inputs, attrs, exc, pat):
    with pytest.raises(exc, match=pat):
        oc.op(op, [to_input(a) for a in inputs], attrs)


def test_index_put_error_leaves_x_unchanged():
    x = arr((5, 4))
    x0 = x.copy()
    with pytest.raises(IndexError):
        oc.op("index_put_", [oc.jn(x), oc.jn(np.ones(1, np.float32)), oc.jn(np.array([0, 1, 9]))], ([1], False))
    np.testing.assert_array_equal(x, x0)


def test_index_put_values_alias_x():
    x = np.arange(6, dtype=np.float32)
    want = x.copy()
    want[[1, 2, 3]] = x[[0, 1, 2]].copy()
    t = oc.jn(x)
    src = oc.jn(x[0:3])  # a view of the written tensor
    oc.op("index_put_", [t, src, oc.jn(np.array([1, 2, 3]))], ([1], False))
    np.testing.assert_array_equal(x, want)
