"""x[index] and x[index] = value against numpy, for hand-picked and
randomized index combinations (ints, slices with any bounds, None,
Ellipsis, Python bools, int lists, int and bool tensors).

PyTorch differs from numpy in one respect: an int next to advanced indices
is applied as a select first (x[0, :, [0, 1]] has shape [size1, 2] in
torch, [2, size1] in numpy).  The reference therefore applies the basic
items first, left to right on a cursor dim exactly like torch, then the
advanced indices with numpy on the result."""
import numpy as np
import pytest

import janus

R = np.random.default_rng(1234)


def _apply(a, items, consumed):
    ndim0 = a.ndim
    d, adv = 0, {}
    for it in items:
        if it is None:
            a = np.expand_dims(a, d)
            d += 1
        elif it is Ellipsis:
            d += ndim0 - consumed
        elif isinstance(it, (bool, np.bool_)):
            a = np.expand_dims(a, d)
            if not it:
                a = a[(slice(None),) * d + (slice(0, 0),)]
            d += 1
        elif isinstance(it, (int, np.integer)):
            if not -a.shape[d] <= it < a.shape[d]:
                raise IndexError(it)  # numpy's take skips the check on empty arrays
            a = np.take(a, it, axis=d)
        elif isinstance(it, slice):
            a = a[(slice(None),) * d + (it,)]
            d += 1
        else:
            it = np.asarray(it)
            if it.dtype == np.bool_:
                for k, col in enumerate(np.nonzero(it)):
                    adv[d + k] = col
                d += it.ndim
            else:
                adv[d] = it
                d += 1
    if adv:
        a = a[tuple(adv.get(i, slice(None)) for i in range(a.ndim))]
    return a


def to_janus(index):
    def conv(it):
        if isinstance(it, np.ndarray):
            return janus.tensor(it) if R.random() < 0.7 or it.size == 0 else it.tolist()
        return it
    return tuple(conv(i) for i in index) if isinstance(index, tuple) else conv(index)


def _item(size):
    k = R.random()
    if k < 0.3 and size > 0:
        return int(R.integers(-size, size)) if R.random() < 0.95 else size + 1  # rarely out of range
    if k < 0.6:
        start = None if R.random() < 0.3 else int(R.integers(-size - 2, size + 3))
        stop = None if R.random() < 0.3 else int(R.integers(-size - 2, size + 3))
        step = None if R.random() < 0.4 else int(R.integers(1, 4))
        return slice(start, stop, step)
    if k < 0.8 and size > 0:
        n = int(R.integers(0, 4))
        return R.integers(-size, size, size=(n,) if R.random() < 0.7 else (n, 2)).astype(np.int64)
    if k < 0.9:
        return R.random(size) < 0.5
    return slice(None)


def random_index(shape):
    """Consuming items for a prefix (and, with an Ellipsis, a suffix) of the
    dims, with Nones sprinkled in."""
    nd = len(shape)
    k = int(R.integers(0, nd + 1))
    use_ell = R.random() < 0.3
    j = int(R.integers(0, k + 1)) if use_ell else k
    dims = list(range(j)) + list(range(nd - (k - j), nd))
    items = [_item(shape[d]) for d in dims]
    if use_ell:
        items.insert(j, Ellipsis)
    for _ in range(int(R.integers(0, 3)) if R.random() < 0.4 else 0):
        items.insert(int(R.integers(0, len(items) + 1)), None)
    if len(items) == 1 and R.random() < 0.5:
        return items[0]
    return tuple(items)


SHAPES = [(5,), (4, 3), (3, 4, 5), (2, 3, 2, 4), (3, 0, 2), (1, 5)]


@pytest.mark.parametrize("seed", range(300))
def test_random_getitem_matches_numpy(seed):
    global R
    R = np.random.default_rng(seed)
    shape = SHAPES[seed % len(SHAPES)]
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    x = janus.tensor(a)
    index = random_index(shape)
    items = index if isinstance(index, tuple) else (index,)
    try:
        want = _apply(a, items, _consumed(items))
    except IndexError:
        want = IndexError
    ji = to_janus(index)
    if want is IndexError:
        with pytest.raises(IndexError):
            x[ji]
        return
    got = x[ji]
    assert tuple(got.shape) == want.shape, (index, got.shape, want.shape)
    np.testing.assert_array_equal(got.numpy() if got.dim() else np.array(got.item()), want)


def _consumed(items):
    n = 0
    for it in items:
        if it is None or it is Ellipsis or isinstance(it, (bool, np.bool_)):
            continue
        if isinstance(it, np.ndarray) and it.dtype == np.bool_:
            n += it.ndim
        else:
            n += 1
    return n


@pytest.mark.parametrize("seed", range(200))
def test_random_setitem_matches_numpy(seed):
    global R
    R = np.random.default_rng(10_000 + seed)
    shape = SHAPES[seed % len(SHAPES)]
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    x = janus.tensor(a)
    index = random_index(shape)
    items = index if isinstance(index, tuple) else (index,)
    if any(isinstance(i, (bool, np.bool_)) for i in items):
        return  # numpy treats Python bools as advanced indices when writing
    try:
        sel = _apply(a, items, _consumed(items))
    except IndexError:
        return
    # numpy target: positions (flat indices) the index selects
    pos = _apply(np.arange(a.size).reshape(shape), items, _consumed(items))
    flat = pos.reshape(-1)
    unique = len(set(flat.tolist())) == flat.size
    if unique and R.random() < 0.7:
        val_np = R.uniform(-9, 9, size=sel.shape).astype(np.float32).round()
        if sel.ndim and R.random() < 0.3:
            val_np = val_np[..., :1] if sel.shape[-1] else val_np  # broadcast a column
        value = janus.tensor(val_np)
    else:
        val_np = np.float32(R.integers(-9, 9))
        value = float(val_np) if R.random() < 0.5 else int(val_np)
    want = a.copy().reshape(-1)
    want[flat] = np.broadcast_to(val_np, sel.shape).reshape(-1) if flat.size else want[flat]
    v0 = x._version
    x[to_janus(index)] = value
    np.testing.assert_array_equal(x.numpy(), want.reshape(shape))
    assert x._version > v0


@pytest.mark.parametrize("index", [
    0, -1, 2, slice(None), slice(1, 3), slice(None, None, 2), (1, 2), (slice(None), 1), (..., 0), (None, 1),
    (0, None, slice(1, None)), [0, 2], ([0, 2], [1, 0]), (slice(None), [0, 0, 1]), ([[0], [2]], [1, 2]),
    (0, slice(None), [0, 1]), ([0, 1], slice(None), 0), (Ellipsis, [1, 0]), (None, [0, 1]),
    (slice(1, None), [True, False, True, True]), ([True, False, True],), True, False, (1, True),
])
def test_fixed_index_combinations(index):
    a = np.arange(3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5)[:, :4, :4]  # (3, 4, 4)
    x = janus.tensor(a)
    items = index if isinstance(index, tuple) else (index,)
    want = _apply(a, items, _consumed(items))
    got = x[index]
    assert tuple(got.shape) == want.shape
    np.testing.assert_array_equal(got.numpy() if got.dim() else np.array(got.item()), want)


def test_torch_int_with_advanced_ordering():
    x = janus.zeros(3, 4, 5)
    assert x[0, :, [0, 1]].shape == (4, 2)  # torch, not numpy's (2, 4)
    assert x[[0, 1], :, [0, 1]].shape == (2, 4)
    assert x[:, [0, 1], [0, 1]].shape == (3, 2)


def test_basic_indexing_returns_views():
    x = janus.zeros(4, 5)
    for idx in (0, slice(1, 3), (slice(None), 2), (None, 1), (Ellipsis, slice(None, None, 2)), slice(None), ...):
        v = x[idx]
        assert v._shares_storage(x) and v is not x
    r = x[[0, 1]]
    assert not r._shares_storage(x)
    v = x[1]
    v[2] = 7
    assert x[1, 2].item() == 7


def test_setitem_forms_and_versions():
    x = janus.zeros(3, 4)
    v0 = x._version
    x[:, 1:3] = 1
    assert x._version == v0 + 1
    x[0] = janus.tensor([1, 2, 3, 4])  # int values cast to float32, broadcast row
    x[1] = 2.5
    x[2, [0, 3]] = janus.tensor([7.0, 8.0])
    x[x > 7] = -1
    assert x.tolist() == [[1, 2, 3, 4], [2.5] * 4, [7, 1, 1, -1]]
    i = janus.tensor([0, 2])
    x[i] += 1  # torch: gather, add, write back (no accumulation)
    assert x[:, 0].tolist() == [2, 2.5, 8]
    x[1:, :2] = janus.tensor([[9.0, 9.0]])  # broadcast rows
    assert x[1:, :2].tolist() == [[9, 9], [9, 9]]
    y = janus.arange(6)
    y[1:] = y[:-1].clone()
    assert y.tolist() == [0, 0, 1, 2, 3, 4]
    z = janus.arange(6)
    z[1:] = z[:-1]  # overlapping source is read before writing
    assert z.tolist() == [0, 0, 1, 2, 3, 4]
    b = janus.zeros(2, dtype=janus.bool)
    b[0] = True
    assert b.tolist() == [True, False]
    w = janus.zeros(2, 2)
    w[...] = [[1, 2], [3, 4]]
    assert w.tolist() == [[1, 2], [3, 4]]
    w[:] = np.array([5.0, 6.0])
    assert w.tolist() == [[5, 6], [5, 6]]


def test_index_errors():
    x = janus.zeros(3, 4)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x[5]
    with pytest.raises(IndexError, match="index -5 is out of bounds for dimension 1 with size 4"):
        x[0, -5]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        x[0, 0, 0]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    with pytest.raises(ValueError):
        x[::0]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., ...]
    with pytest.raises(IndexError, match="valid indices"):
        x["a"]
    with pytest.raises(IndexError, match="valid indices"):
        x[1.5]
    with pytest.raises(IndexError, match="long, int, byte or bool"):
        x[janus.tensor([0.0])]
    with pytest.raises(IndexError, match="mask"):
        x[janus.tensor([True, False])]
    with pytest.raises(IndexError):
        x[janus.tensor([0, 7])]
    with pytest.raises(IndexError):
        x[[3]] = 1.0
    with pytest.raises(IndexError):
        x[2 ** 70]
    with pytest.raises(TypeError, match="item deletion"):
        del x[0]
    with pytest.raises(TypeError):
        x[0] = "abc"
    with pytest.raises(TypeError):
        x[0] = None
    with pytest.raises(RuntimeError):
        x[0] = janus.ones(5)
    assert x.sum().item() == 0  # nothing was written by the failed assignments


def test_multi_dim_bool_mask():
    a = np.arange(24.0).reshape(2, 3, 4)
    x = janus.tensor(a)
    m = (a % 3 == 0)
    np.testing.assert_array_equal(x[janus.tensor(m)].numpy(), a[m])
    m2 = m[0]
    np.testing.assert_array_equal(x[:, janus.tensor(m2)].numpy(), a[:, m2])
    x[janus.tensor(m)] = 0
    a[m] = 0
    np.testing.assert_array_equal(x.numpy(), a)


def test_index_with_numpy_arrays_and_scalars():
    x = janus.arange(10)
    assert x[np.array([1, 3])].tolist() == [1, 3]
    assert x[np.int64(4)].item() == 4
    assert x[np.arange(10) % 2 == 0].tolist() == [0, 2, 4, 6, 8]
    assert x[janus.tensor(3)].item() == 3
    assert x[[]].shape == (0,)
    assert x[janus.tensor(True)].shape == (1, 10)


def test_mask_setitem_with_a_number_is_a_masked_fill():
    """x[mask] = number (a bool mask over x's leading dims) runs as masked_fill_, an op
    reading the mask (csrc/index.c): the same values as numpy's, gradients of a non-leaf
    as index_put_'s, and other forms take the index_put_ path as before."""
    a = R.standard_normal((4, 3, 2)).astype(np.float32)
    for m in (a > 0, (a > 0)[:, :, 0], (a.sum(axis=(1, 2)) > 0)):  # every dim, two leading dims, one
        x, b = janus.tensor(a), a.copy()
        x[janus.tensor(m)] = -2.5
        b[m] = -2.5
        np.testing.assert_array_equal(x.numpy(), b)
    i = np.arange(12).reshape(3, 4)
    for v in (7, True, 2 ** 53, 2 ** 60, -1):  # 2**60: beyond a double, the index_put_ path
        x, b = janus.tensor(i), i.copy()
        x[janus.tensor(i % 3 == 0)] = v
        b[i % 3 == 0] = v
        np.testing.assert_array_equal(x.numpy(), b)
    x = janus.tensor(i)
    x[janus.tensor(i > 5)] = 2.75  # a float into ints: the index_put_ path (a cast, as torch)
    assert x.tolist() == [[0, 1, 2, 3], [4, 5, 2, 2], [2, 2, 2, 2]]
    x = janus.tensor(i.astype(bool))
    x[janus.tensor(i > 5)] = False
    assert x.sum().item() == 5
    # autograd: the masked elements get no gradient, as with index_put_
    w = janus.tensor(a, requires_grad=True)
    y = w * 3
    y[y > 0] = 0.0
    (y * janus.tensor(a)).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.where(a * 3 > 0, 0, 3 * a), rtol=1e-6)
    with pytest.raises(RuntimeError, match="leaf"):
        w[w > 0] = 0.0
    with pytest.raises(IndexError, match="mask"):  # a mask of another shape: index_put_'s error
        janus.zeros(4, 3)[janus.tensor([True, False])] = 1.0



def test_setitem_value_cast_keeps_its_gradient():
    """An advanced-index write whose value needs a cast casts it with an op (before, a
    copy outside the dispatcher: the value's gradient was cut)."""
    w = janus.tensor(np.arange(6.0).reshape(3, 2), dtype=janus.float32, requires_grad=True)
    v = janus.tensor([[10.0, 20.0]], dtype=janus.float64, requires_grad=True)
    y = w * 1
    y[janus.tensor([0])] = v * 2
    (y * janus.tensor(np.arange(6.0).reshape(3, 2), dtype=janus.float32)).sum().backward()
    assert w.grad.tolist() == [[0.0, 0.0], [2.0, 3.0], [4.0, 5.0]]
    assert v.grad.tolist() == [[0.0, 2.0]]
    x = janus.arange(6.0)
    x[janus.tensor([0, 1, 2])] = x[1:4]  # overlapping source: read before the write
    assert x.tolist() == [1.0, 2.0, 3.0, 3.0, 4.0, 5.0]
