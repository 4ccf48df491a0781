"""The PyTorch-compatible Tensor API of janus (python/janus): construction,
dtype inference and promotion, repr, views and version counters, scalar
conversions, numpy interop, factories, the op-table bindings and error
behaviour.  numpy is the reference for values."""
import copy
import math
import pickle

import numpy as np
import pytest

import janus
from janus import _C

NP = {janus.float32: np.float32, janus.float64: np.float64, janus.float16: np.float16,
      janus.int64: np.int64, janus.int32: np.int32, janus.uint8: np.uint8, janus.bool: np.bool_}


def npa(t):
    return np.array(t.float().numpy() if t.dtype is janus.bfloat16 else t.numpy(), copy=True)


# ------------------------------------------------------------ construction
@pytest.mark.parametrize("data", [
    [[1, 2, 3], [4, 5, 6]], [1.5, -2.0, 3.25], [[True, False], [False, True]], (1, 2.5, 3),
    [[[1, 2]], [[3, 4]]], 7, 2.5, True, [], [[]], [[1, 2], (3, 4)], [1, True], [range(3), range(3)],
])
def test_tensor_from_nested_data_matches_numpy(data):
    t = janus.tensor(data)
    ref = np.array(data)
    assert tuple(t.shape) == ref.shape
    assert isinstance(t.shape, janus.Size) and isinstance(t, janus.Tensor)
    np.testing.assert_array_equal(npa(t), ref.astype(NP[t.dtype]))


@pytest.mark.parametrize("data,dtype", [
    ([True, False], janus.bool), ([1, 2], janus.int64), ([1, 2.0], janus.float32), ([True, 2], janus.int64),
    ([[1], [2.5]], janus.float32), (3, janus.int64), (3.0, janus.float32), (False, janus.bool),
    ([], janus.float32), ([np.int64(1), np.int32(2)], janus.int64), ([np.float32(1.5)], janus.float32),
    ([np.bool_(True)], janus.bool), ([janus.tensor(1.5), janus.tensor(2.0)], janus.float32),
])
def test_dtype_inference_like_torch(data, dtype):
    assert janus.tensor(data).dtype is dtype


def test_tensor_with_dtype_converts():
    t = janus.tensor([1.7, -2.7, 0.0], dtype=janus.int64)
    assert t.dtype is janus.int64 and t.tolist() == [1, -2, 0]
    assert janus.tensor([0, 2, 0], dtype=janus.bool).tolist() == [False, True, False]
    assert janus.tensor([1, 2], dtype=janus.float64).dtype is janus.float64
    assert janus.tensor([1, 2], dtype=float).dtype is janus.float64  # Python types as dtypes
    assert janus.tensor([0.5], dtype=janus.bfloat16).float().tolist() == [0.5]
    assert janus.tensor([2 ** 62 + 1]).item() == 2 ** 62 + 1  # no float round trip


def test_ragged_and_bad_data_errors_name_the_position():
    with pytest.raises(ValueError, match=r"expected sequence of length 3 at dim 1 \(got 2\) at index \[1\]"):
        janus.tensor([[1, 2, 3], [4, 5]])
    with pytest.raises(ValueError, match=r"index \[0, 1\]"):
        janus.tensor([[[1, 2], [3]], [[4, 5], [6, 7]]])
    with pytest.raises(ValueError, match="at index"):
        janus.tensor([[1, 2], 3])
    with pytest.raises(ValueError, match="sequence"):
        janus.tensor([1, [2, 3]])
    with pytest.raises(TypeError, match="'str' at index \\[1\\]"):
        janus.tensor([1, "a"])
    with pytest.raises(TypeError):
        janus.tensor("abc")
    with pytest.raises(TypeError, match="complex"):
        janus.tensor([1j])
    with pytest.raises(RuntimeError, match="Overflow"):
        janus.tensor([2 ** 70])
    with pytest.raises(ValueError, match="at most 8"):
        janus.tensor([[[[[[[[[1]]]]]]]]])
    with pytest.raises(TypeError):
        janus.tensor(None)


@pytest.mark.parametrize("np_dtype", [np.float32, np.float64, np.float16, np.int64, np.int32, np.uint8, np.bool_])
def test_tensor_from_numpy_copies_every_dtype(np_dtype):
    a = (np.arange(12).reshape(3, 4) % 3).astype(np_dtype)
    t = janus.tensor(a)
    assert t.dtype is {v: k for k, v in NP.items()}[np_dtype]
    np.testing.assert_array_equal(t.numpy(), a)
    a[0, 0] = 2
    assert t[0, 0].item() == 0  # a copy


def test_tensor_from_numpy_layouts():
    a = np.arange(24.0).reshape(2, 3, 4)
    for v in (a[:, ::-1], a[..., ::2], a.transpose(2, 0, 1), a[:, 1], np.broadcast_to(a[0, 0], (3, 4))):
        np.testing.assert_array_equal(janus.tensor(v).numpy(), v)
        np.testing.assert_array_equal(janus.as_tensor(v).numpy(), v)
    assert janus.tensor(np.int16([1, 2])).dtype is janus.int64  # no int16: nearest supported kind


def test_from_numpy_shares_memory_both_ways():
    a = np.zeros((2, 3), np.float32)
    t = janus.from_numpy(a)
    a[1, 2] = 5
    assert t[1, 2].item() == 5
    t[0, 0] = 7
    assert a[0, 0] == 7
    n = t.numpy()
    n[0, 1] = 3
    assert a[0, 1] == 3 and np.shares_memory(n, a)
    assert np.shares_memory(np.asarray(t), a)
    assert janus.as_tensor(a).data_ptr() == a.ctypes.data
    del a, n
    assert t.sum().item() == 15  # the tensor keeps the array alive


def test_from_numpy_errors():
    with pytest.raises(ValueError, match="negative"):
        janus.from_numpy(np.arange(4)[::-1])
    with pytest.raises(TypeError, match="int16"):
        janus.from_numpy(np.zeros(3, np.int16))
    with pytest.raises(TypeError, match="np.ndarray"):
        janus.from_numpy([1, 2])
    with pytest.raises(TypeError, match=r"float\(\)"):
        janus.ones(2, dtype=janus.bfloat16).numpy()
    with pytest.raises(TypeError, match="bfloat16"):
        np.asarray(janus.ones(2, dtype=janus.bfloat16))


def test_tensor_copies_tensors_and_constructor_forms():
    x = janus.tensor([1, 2])
    y = janus.tensor(x)
    y[0] = 5
    assert x[0].item() == 1
    assert janus.tensor(x, dtype=janus.float32).dtype is janus.float32
    assert janus.as_tensor(x) is x
    assert janus.Tensor([1, 2]).dtype is janus.float32
    assert tuple(janus.Tensor(2, 3).shape) == (2, 3)


# ----------------------------------------------------------------- repr
@pytest.mark.parametrize("make,want", [
    (lambda: janus.tensor([[1., 2.], [3., 4.]]), "tensor([[1., 2.],\n        [3., 4.]])"),
    (lambda: janus.tensor([1, 2, 3]), "tensor([1, 2, 3])"),
    (lambda: janus.tensor([1.0, 2.5]), "tensor([1.0000, 2.5000])"),
    (lambda: janus.tensor([-1.5, 2.]), "tensor([-1.5000,  2.0000])"),
    (lambda: janus.tensor(3), "tensor(3)"),
    (lambda: janus.tensor(2.5), "tensor(2.5000)"),
    (lambda: janus.tensor(3.), "tensor(3.)"),
    (lambda: janus.tensor([0.1, 1e5]), "tensor([1.0000e-01, 1.0000e+05])"),
    (lambda: janus.tensor([100., 200000.]), "tensor([1.0000e+02, 2.0000e+05])"),
    (lambda: janus.tensor([1e-5, 1.]), "tensor([1.0000e-05, 1.0000e+00])"),
    (lambda: janus.tensor([float("nan"), float("inf"), 1.]), "tensor([nan, inf, 1.])"),
    (lambda: janus.tensor([True, False]), "tensor([ True, False])"),
    (lambda: janus.ones(3, dtype=janus.int32), "tensor([1, 1, 1], dtype=janus.int32)"),
    (lambda: janus.tensor([1., 2.], dtype=janus.float64), "tensor([1., 2.], dtype=janus.float64)"),
    (lambda: janus.tensor([1., 2.], dtype=janus.float16), "tensor([1., 2.], dtype=janus.float16)"),
    (lambda: janus.tensor([0.5, 2.], dtype=janus.bfloat16), "tensor([0.5000, 2.0000], dtype=janus.bfloat16)"),
    (lambda: janus.zeros(2, 3), "tensor([[0., 0., 0.],\n        [0., 0., 0.]])"),
    (lambda: janus.zeros(2, 1, 2), "tensor([[[0., 0.]],\n\n        [[0., 0.]]])"),
    (lambda: janus.tensor([]), "tensor([])"),
    (lambda: janus.zeros(0, 3), "tensor([], size=(0, 3))"),
    (lambda: janus.zeros(0, dtype=janus.int64), "tensor([], dtype=janus.int64)"),
    (lambda: janus.arange(2000), "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"),
    (lambda: janus.arange(30.), "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
                                "        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.,\n"
                                "        28., 29.])"),
    (lambda: janus.arange(10000.).view(100, 100)[:2, :2], "tensor([[  0.,   1.],\n        [100., 101.]])"),
    (lambda: janus.ones(2, requires_grad=True), "tensor([1., 1.], requires_grad=True)"),
    (lambda: janus.ones(2, requires_grad=True) * 2, "tensor([2., 2.], grad_fn=<MulBackward0>)"),
])
def test_repr_matches_pytorch(make, want):
    t = make()
    assert repr(t) == want
    assert str(t) == want


def test_repr_summarizes_big_2d():
    s = repr(janus.arange(10000.).view(100, 100))
    lines = s.split("\n")
    assert lines[0] == "tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 9.7000e+01, 9.8000e+01,"
    assert lines[1] == "         9.9000e+01],"
    assert "        ...," in lines
    assert lines[-1] == "         9.9990e+03]])"


def test_printoptions_and_format():
    try:
        janus.set_printoptions(precision=2)
        assert repr(janus.tensor([1.2345])) == "tensor([1.23])"
    finally:
        janus.set_printoptions(profile="default")
    assert f"{janus.tensor(2.5):.1f}" == "2.5"
    assert str(janus.float32) == "janus.float32" and repr(janus.int64) == "janus.int64"
    assert repr(janus.Size([2, 3])) == "janus.Size([2, 3])"
    assert repr(janus.device("cpu")) == "device(type='cpu')" and str(janus.ones(1).device) == "cpu"


# ------------------------------------------------------------------- dtypes
def test_dtype_objects():
    assert janus.float is janus.float32 and janus.double is janus.float64 and janus.half is janus.float16
    assert janus.long is janus.int64 and janus.int is janus.int32 and janus.uint8.itemsize == 1
    assert janus.float32.is_floating_point and not janus.int64.is_floating_point
    assert janus.bfloat16.itemsize == 2 and janus.bool.itemsize == 1
    assert pickle.loads(pickle.dumps(janus.float16)) is janus.float16
    assert janus.finfo(janus.float32).eps == 2.0 ** -23 and janus.iinfo(janus.int32).max == 2 ** 31 - 1
    assert janus.ones(2, dtype=janus.float64).element_size() == 8


@pytest.mark.parametrize("a,b,want", [
    (lambda: janus.tensor([1, 2]), 2.5, janus.float32),
    (lambda: janus.tensor([1, 2]), 2, janus.int64),
    (lambda: janus.ones(2, dtype=janus.int32), 2, janus.int32),
    (lambda: janus.ones(2, dtype=janus.uint8), 2, janus.uint8),
    (lambda: janus.ones(2, dtype=janus.float16), 1.5, janus.float16),
    (lambda: janus.ones(2, dtype=janus.bfloat16), 2, janus.bfloat16),
    (lambda: janus.tensor([True]), True, janus.bool),
    (lambda: janus.tensor([True]), 1, janus.int64),
    (lambda: janus.tensor([True]), 1.0, janus.float32),
    (lambda: janus.ones(2), lambda: janus.tensor(1.0, dtype=janus.float64), janus.float32),
    (lambda: janus.tensor([1, 2]), lambda: janus.tensor(1.0, dtype=janus.float64), janus.float64),
    (lambda: janus.ones(2, dtype=janus.int32), lambda: janus.ones(2, dtype=janus.int64), janus.int64),
    (lambda: janus.ones(2, dtype=janus.float16), lambda: janus.ones(2, dtype=janus.bfloat16), janus.float32),
])
def test_promotion_through_operators(a, b, want):
    x = a()
    y = b() if callable(b) else b
    assert (x + y).dtype is want
    assert (y + x).dtype is want
    assert (x * y).dtype is want


def test_division_and_comparison_dtypes():
    i = janus.tensor([5, -7])
    assert (i / 2).dtype is janus.float32 and (i / 2).tolist() == [2.5, -3.5]
    assert (i // 2).dtype is janus.int64 and (i // 2).tolist() == [2, -4]
    assert (i % 3).tolist() == [2, 2]  # Python/torch sign rule
    assert (-7.5 // janus.tensor([2.0])).tolist() == [-4.0]
    for r in (i == 5, i != 5, i < 0, i <= 5, i > 0, i >= -7, 5 == i, 0 > i):
        assert r.dtype is janus.bool
    assert (i == 5).tolist() == [True, False] and (0 > i).tolist() == [False, True]
    assert (i ** 2).tolist() == [25, 49] and (2 ** janus.tensor([3])).tolist() == [8]


def test_operators_match_numpy():
    rng = np.random.default_rng(0)
    an, bn = rng.uniform(0.5, 2, (3, 4)).astype(np.float32), rng.uniform(0.5, 2, (4,)).astype(np.float32)
    a, b = janus.tensor(an), janus.tensor(bn)
    cases = [(a + b, an + bn), (a - b, an - bn), (a * b, an * bn), (a / b, an / bn), (a ** b, an ** bn),
             (a % b, np.mod(an, bn)), (a // b, np.floor_divide(an, bn)), (-a, -an), (abs(-a), an),
             (a @ a.T, an @ an.T), (3 - a, 3 - an), (2 / a, 2 / an), (a + 1, an + 1), (+a, an)]
    for got, want in cases:
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    m = janus.tensor([True, False, True])
    n = janus.tensor([True, True, False])
    assert (m & n).tolist() == [True, False, False] and (m | n).tolist() == [True, True, True]
    assert (m ^ n).tolist() == [False, True, True] and (~m).tolist() == [False, True, False]
    assert (m & True).tolist() == [True, False, True]


def test_bitwise_on_non_bool_raises():
    with pytest.raises(TypeError, match="float32"):
        janus.ones(2) & janus.ones(2)
    with pytest.raises(NotImplementedError, match="int64"):
        ~janus.tensor([1, 2])


def test_numpy_operand_and_priority():
    t = janus.ones(3)
    r = np.ones(3, np.float32) + t
    assert isinstance(r, janus.Tensor) and r.tolist() == [2.0, 2.0, 2.0]
    assert (t * np.float32(2)).dtype is janus.float32
    assert (t + np.int64(1)).tolist() == [2.0, 2.0, 2.0]
    assert (t == None) is False and (t != "x") is True  # noqa: E711  (Python's fallback)


# ------------------------------------------------- in-place ops, versions
def test_inplace_operators_modify_in_place_and_bump_version():
    x = janus.tensor([1.0, 2.0, 3.0])
    v = x.view(3)
    ident, ver = id(x), x._version
    x += 1
    assert id(x) == ident and x._version == ver + 1 and v._version == ver + 1
    assert v.tolist() == [2.0, 3.0, 4.0]
    x -= 1
    x *= 2
    x /= 4
    x **= 2
    x //= 1
    x %= 5
    assert x.tolist() == [0.0, 1.0, 2.0] and x._version == ver + 7
    b = janus.tensor([True, False])
    b &= janus.tensor([True, True])
    b |= janus.tensor([False, True])
    b ^= janus.tensor([True, True])
    assert b.tolist() == [False, False]


def test_inplace_methods_bump_version_and_return_self():
    x = janus.tensor([[1.0, -2.0], [3.0, -4.0]])
    row = x[1]
    for name, args in [("add_", (1,)), ("sub_", (1,)), ("mul_", (2,)), ("div_", (2,)), ("abs_", ()),
                       ("neg_", ()), ("clamp_", (-1, 1)), ("relu_", ()), ("exp_", ()), ("sqrt_", ()),
                       ("pow_", (2,)), ("fill_", (3,)), ("zero_", ()), ("copy_", (janus.ones(2),)),
                       ("masked_fill_", (janus.tensor([True, False]), 5.0)), ("uniform_", ()),
                       ("normal_", ()), ("clamp_min_", (0,))]:
        before = x._version
        assert getattr(x, name)(*args) is x, name
        assert x._version > before and row._version == x._version, name
    x.zero_()
    assert row.tolist() == [0.0, 0.0]
    x.add_(janus.ones(2), alpha=3)
    assert x.tolist() == [[3.0, 3.0], [3.0, 3.0]]


def test_inplace_rejects_bad_cast_and_shape():
    i = janus.tensor([1, 2])
    with pytest.raises(TypeError, match="can't be cast"):
        i += 2.5
    with pytest.raises(RuntimeError, match=r"\[2\].*\[3, 2\]|\[3, 2\].*\[2\]"):
        i.add_(janus.ones(3, 2, dtype=janus.int64))
    assert i.tolist() == [1, 2]


def test_views_share_memory():
    x = janus.zeros(3, 4)
    views = [x.view(12), x.view(-1, 2), x.reshape(2, 6), x.t(), x.T, x.transpose(0, 1), x.permute(1, 0),
             x[1], x[:, 1:3], x[None], x.unsqueeze(0), x.narrow(1, 1, 2), x.select(0, 2), x.expand(2, 3, 4),
             x.flatten(), x.detach(), x.squeeze(), x[..., ::2], x.unbind(0)[1], x.split(2, 1)[1],
             x.chunk(2, 0)[0], x.diagonal(), x.as_strided((2,), (5,))]
    for k, v in enumerate(views):
        assert v._shares_storage(x), k
        x.fill_(k)
        assert v.reshape(-1)[0].item() == k, k
    xt = x.t()
    c = xt.reshape(12)  # not viewable: a copy
    assert not c._shares_storage(x)
    assert x.contiguous() is x and not xt.contiguous()._shares_storage(x)
    assert xt.contiguous().is_contiguous() and not xt.is_contiguous()


def test_metadata_methods():
    x = janus.zeros(2, 3, 4)[:, 1:]
    assert x.size() == (2, 2, 4) and x.size(1) == 2 and x.size(-1) == 4 and x.shape[0] == 2
    assert x.stride() == (12, 4, 1) and x.stride(0) == 12 and x.storage_offset() == 4
    assert x.dim() == 3 == x.ndim and x.numel() == 16 and x.nelement() == 16
    assert x.element_size() == 4 and x.itemsize == 4 and x.nbytes == 64
    assert x.is_contiguous() is False and x.device == janus.device("cpu") and not x.is_cuda
    assert x.is_floating_point() and janus.is_tensor(x) and janus.numel(x) == 16
    assert janus.Size([2, 3]).numel() == 6 and janus.Size([2, 3])[1:] == janus.Size([3])
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)"):
        x.size(3)
    with pytest.raises(TypeError):
        x.size("a")


# --------------------------------------------------- scalar conversions
def test_item_tolist_len_iter_bool():
    x = janus.tensor([[1, 2, 3], [4, 5, 6]])
    assert x.tolist() == [[1, 2, 3], [4, 5, 6]] and janus.tensor(2.5).tolist() == 2.5
    assert x[1, 2].item() == 6 and isinstance(x[1, 2].item(), int)
    assert isinstance(janus.tensor(1.5).item(), float) and janus.tensor([True]).item() is True
    assert janus.tensor([[7]]).item() == 7
    with pytest.raises(RuntimeError, match="a Tensor with 6 elements cannot be converted to Scalar"):
        x.item()
    assert len(x) == 2 and [r.tolist() for r in x] == [[1, 2, 3], [4, 5, 6]]
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(janus.tensor(1))
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(janus.tensor(1))
    assert bool(janus.tensor([3])) and not bool(janus.tensor(0.0))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        bool(x)
    with pytest.raises(RuntimeError, match="no values"):
        bool(janus.zeros(0))
    assert float(janus.tensor([2])) == 2.0 and int(janus.tensor(2.9)) == 2 and int(janus.tensor(-2.9)) == -2
    assert [10, 20, 30][janus.tensor(1)] == 20 and range(10)[janus.tensor([3])] == 3
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        [1, 2][janus.tensor(1.0)]
    with pytest.raises(ValueError, match="only one element tensors"):
        float(janus.ones(2))
    with pytest.raises(ValueError, match="NaN"):
        int(janus.tensor(float("nan")))
    assert 5 in x and 9 not in x
    assert [r.tolist() for r in reversed(janus.tensor([1, 2]))] == [2, 1]


def test_pickle_and_copy():
    for t in (janus.tensor([[1.5, 2.0]]), janus.arange(6).view(2, 3)[:, 1:], janus.tensor(3),
              janus.tensor([1.0, 2.0], dtype=janus.bfloat16), janus.tensor([True])):
        r = pickle.loads(pickle.dumps(t))
        assert r.dtype is t.dtype and r.shape == t.shape and r.tolist() == t.tolist()
        d = copy.deepcopy(t)
        assert d.tolist() == t.tolist() and not d._shares_storage(t)


# ------------------------------------------------------------- factories
def test_size_arguments_forms():
    for args in ((2, 3), ((2, 3),), ([2, 3],), (janus.Size([2, 3]),), (np.int64(2), 3)):
        for f in (janus.zeros, janus.ones, janus.empty, janus.rand, janus.randn):
            assert f(*args).shape == (2, 3), (f, args)
    assert janus.zeros(()).shape == () and janus.zeros(0).shape == (0,)
    x = janus.ones(2, 3)
    assert x.view(3, 2).shape == (3, 2) and x.view((6,)).shape == (6,) and x.reshape([3, -1]).shape == (3, 2)
    assert x.expand(4, 2, 3).shape == (4, 2, 3) and x.permute([1, 0]).shape == (3, 2)
    with pytest.raises(TypeError):
        janus.zeros(2.5)
    with pytest.raises(TypeError):
        janus.zeros("a")
    with pytest.raises(ValueError, match="negative"):
        janus.zeros(-1)


def test_factories_values_and_dtypes():
    assert janus.zeros(2).tolist() == [0.0, 0.0] and janus.ones(2, dtype=janus.int32).dtype is janus.int32
    assert janus.full((2,), 7).dtype is janus.int64 and janus.full((2,), 7.0).dtype is janus.float32
    assert janus.full((2,), True).dtype is janus.bool and janus.full([2], 3, dtype=janus.float64).tolist() == [3.0, 3.0]
    assert janus.full((1,), 2 ** 60 + 1).item() == 2 ** 60 + 1
    assert janus.arange(5).dtype is janus.int64 and janus.arange(5).tolist() == [0, 1, 2, 3, 4]
    assert janus.arange(5.0).dtype is janus.float32 and janus.arange(1, 3, 0.5).tolist() == [1, 1.5, 2, 2.5]
    assert janus.arange(5, 0, -2).tolist() == [5, 3, 1]
    assert janus.arange(janus.tensor(3)).tolist() == [0, 1, 2]
    with pytest.raises(RuntimeError, match="nonzero"):
        janus.arange(0, 5, 0)
    with pytest.raises(RuntimeError, match="inconsistent"):
        janus.arange(0, 5, -1)
    np.testing.assert_allclose(janus.linspace(0, 1, 5).numpy(), np.linspace(0, 1, 5, dtype=np.float32))
    np.testing.assert_array_equal(janus.eye(2, 3).numpy(), np.eye(2, 3))
    x = janus.ones(2, 3, dtype=janus.int32)
    for f, v in ((janus.zeros_like, 0), (janus.ones_like, 1)):
        r = f(x)
        assert r.dtype is janus.int32 and r.shape == x.shape and r.tolist() == [[v] * 3] * 2
    assert janus.full_like(x, 4, dtype=janus.float64).tolist() == [[4.0] * 3] * 2
    assert janus.empty_like(x).shape == (2, 3) and janus.rand_like(x.float()).dtype is janus.float32
    assert janus.randn_like(janus.ones(3, dtype=janus.float64)).dtype is janus.float64
    assert x.new_zeros(2).dtype is janus.int32 and x.new_full((1,), 5).tolist() == [5]
    assert x.new_tensor([1.5]).dtype is janus.int32 and x.new_ones((2, 2)).shape == (2, 2)


def test_random_factories_and_seeding():
    g = janus.manual_seed(123)
    assert isinstance(g, janus.Generator) and janus.initial_seed() == 123
    a = janus.rand(100)
    b = janus.randn(100)
    janus.manual_seed(123)
    assert janus.rand(100).tolist() == a.tolist() and janus.randn(100).tolist() == b.tolist()
    assert 0 <= a.min().item() and a.max().item() < 1
    r = janus.randint(3, 7, (1000,))
    assert r.dtype is janus.int64 and r.min().item() == 3 and r.max().item() == 6
    assert janus.randint(5, (2, 2)).shape == (2, 2) and janus.randint(0, 2, size=(3,)).shape == (3,)
    assert sorted(janus.randperm(10).tolist()) == list(range(10))
    state = janus.get_rng_state()
    u = janus.rand(3)
    janus.set_rng_state(state)
    assert janus.rand(3).tolist() == u.tolist()
    with pytest.raises(RuntimeError):
        janus.randint(5, 5, (2,))
    with pytest.raises((TypeError, RuntimeError), match="floating"):
        janus.rand(2, dtype=janus.int64)
    with pytest.raises((TypeError, RuntimeError), match="floating"):
        janus.randn(2, dtype=janus.int64, out=None, device="cpu")


def test_threads():
    n = janus.get_num_threads()
    assert n >= 1
    janus.set_num_threads(1)
    assert janus.get_num_threads() == 1
    janus.set_num_threads(n)
    with pytest.raises(ValueError):
        janus.set_num_threads(0)


def test_device_arguments():
    assert janus.zeros(2, device="cpu").device.type == "cpu"
    assert janus.ones(2).to("cpu").shape == (2,) and janus.ones(2).cpu().shape == (2,)
    with pytest.raises(RuntimeError, match="cpu only"):
        janus.zeros(2, device="cuda")
    with pytest.raises(RuntimeError):
        janus.ones(2).cuda()
    assert janus.device("cuda:1").index == 1 and janus.device("cpu") == "cpu"
    assert janus.cuda.is_available() is False and janus.cuda.device_count() == 0
    with janus.inference_mode():
        assert not (janus.ones(2, requires_grad=True) * 2).requires_grad


# ------------------------------------------------------- conversions
def test_dtype_conversion_methods():
    x = janus.tensor([1.7, -2.2])
    assert x.float() is x and x.to(janus.float32) is x and x.to(x) is x
    assert x.long().tolist() == [1, -2] and x.int().dtype is janus.int32 and x.double().dtype is janus.float64
    assert x.half().dtype is janus.float16 and x.bfloat16().dtype is janus.bfloat16
    assert x.bool().tolist() == [True, True] and janus.tensor([300]).byte().tolist() == [44]
    assert x.to(janus.float64, copy=True).dtype is janus.float64 and x.to("cpu", janus.int64).dtype is janus.int64
    assert x.to(dtype=janus.int32).dtype is janus.int32 and x.type_as(janus.tensor([1])).dtype is janus.int64
    assert x.type() == "janus.FloatTensor" and x.type(janus.float64).dtype is janus.float64
    assert x.to(janus.float32, copy=True) is not x


# ------------------------------------------------------------ op table API
def _table_ops(flag_mask, without=()):
    return [n for n in _C.op_names() if _C.op_info(n)["flags"] & flag_mask and n not in without]


def test_every_elementwise_op_is_a_function_and_method():
    skip = {"cast", "copy_", "fill_"}  # reached as .to()/.float(), Tensor.copy_, Tensor.fill_
    for name in _table_ops(_C.JN_F_EW, skip):
        assert callable(getattr(janus, name, None)), name
        assert callable(getattr(janus.Tensor, name, None)), name
        if name != "where":  # torch has no Tensor.where_
            assert callable(getattr(janus.Tensor, name + "_", None)), name + "_"
    assert callable(janus.Tensor.copy_) and callable(janus.Tensor.fill_)


def test_every_table_op_has_a_binding():
    from janus import _ops
    for name in _C.op_names():
        assert callable(getattr(janus.ops, name)), name
        assert _ops.BINDINGS[name], name


def test_unary_elementwise_ops_match_numpy():
    an = np.linspace(0.1, 2.0, 7).astype(np.float32)
    a = janus.tensor(an)
    ref = {"exp": np.exp, "log": np.log, "log1p": np.log1p, "expm1": np.expm1, "sqrt": np.sqrt,
           "rsqrt": lambda v: 1 / np.sqrt(v), "abs": np.abs, "sign": np.sign, "reciprocal": np.reciprocal,
           "tanh": np.tanh, "sigmoid": lambda v: 1 / (1 + np.exp(-v)), "relu": lambda v: np.maximum(v, 0),
           "sin": np.sin, "cos": np.cos, "floor": np.floor, "ceil": np.ceil, "round": np.round,
           "neg": np.negative, "negative": np.negative, "absolute": np.abs,
           "silu": lambda v: v / (1 + np.exp(-v))}
    for name, f in ref.items():
        np.testing.assert_allclose(getattr(janus, name)(a).numpy(), f(an), rtol=1e-5, atol=1e-6, err_msg=name)
        np.testing.assert_allclose(getattr(a, name)().numpy(), f(an), rtol=1e-5, atol=1e-6, err_msg=name)
        b = a.clone()
        getattr(b, name + "_")()
        np.testing.assert_allclose(b.numpy(), f(an), rtol=1e-5, atol=1e-6, err_msg=name + "_")


def test_binary_functions_and_aliases():
    a, b = janus.tensor([1.0, 5.0, -3.0]), janus.tensor([2.0, 2.0, 2.0])
    assert janus.maximum(a, b).tolist() == [2, 5, 2] and janus.minimum(a, b).tolist() == [1, 2, -3]
    assert janus.sub(a, b, alpha=2).tolist() == [-3, 1, -7] and janus.subtract(a, 1).tolist() == [0, 4, -4]
    assert janus.mul(a, 2).tolist() == janus.multiply(a, 2).tolist() == [2, 10, -6]
    assert janus.div(a, b, rounding_mode="floor").tolist() == [0, 2, -2]
    assert janus.div(a, b, rounding_mode="trunc").tolist() == [0, 2, -1]
    assert janus.floor_divide(a, b).tolist() == [0, 2, -2] and janus.true_divide(a, b).tolist() == [0.5, 2.5, -1.5]
    with pytest.raises(ValueError, match="rounding_mode"):
        janus.div(a, b, rounding_mode="up")
    assert janus.eq(a, 1.0).tolist() == [True, False, False] and a.ge(b).tolist() == [False, True, False]
    assert janus.greater(a, b).tolist() == [False, True, False] and janus.less_equal(a, 1).tolist() == [True, False, True]
    assert janus.logical_and(a > 0, b > 0).tolist() == [True, True, False]
    assert janus.logical_not(a > 0).tolist() == [False, False, True]
    assert janus.clamp(a, min=0).tolist() == [1, 5, 0] and janus.clip(a, -1, 2).tolist() == [1, 2, -1]
    assert janus.clamp(a, max=b).tolist() == [1, 2, -3] and a.clamp(min=janus.zeros(3)).tolist() == [1, 5, 0]
    with pytest.raises(RuntimeError, match="at least one of 'min' or 'max'"):
        janus.clamp(a)
    assert janus.where(a > 0, a, 0.0).tolist() == [1, 5, 0] and a.where(a > 2, b).tolist() == [2, 5, 2]
    assert [t.tolist() for t in janus.where(a > 0)] == [[0, 1]]
    assert janus.isnan(janus.tensor([0.0, math.nan])).tolist() == [False, True]
    assert janus.isinf(janus.tensor([1, math.inf])).tolist() == [False, True]
    assert janus.isfinite(janus.tensor([1, math.inf, math.nan])).tolist() == [True, False, False]
    assert janus.allclose(a, a + 1e-7) and not janus.allclose(a, b) and janus.equal(a, a.clone())
    assert janus.gelu(janus.tensor([0.0]), approximate="tanh").tolist() == [0.0]
    assert janus.atan2(janus.tensor([1.0]), janus.tensor([1.0])).item() == pytest.approx(math.pi / 4)
    out = janus.empty(3)
    assert janus.add(a, b, out=out) is out and out.tolist() == [3, 7, -1]
    assert janus.masked_fill(a, a < 0, 9.0).tolist() == [1, 5, 9] and a.square().tolist() == [1, 25, 9]


def test_reductions_match_numpy():
    rng = np.random.default_rng(1)
    xn = rng.uniform(-1, 1, (3, 4, 5)).astype(np.float32)
    x = janus.tensor(xn)
    close = dict(rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(x.sum().item(), xn.sum(), **close)
    np.testing.assert_allclose(x.sum(1).numpy(), xn.sum(1), **close)
    np.testing.assert_allclose(janus.sum(x, (0, 2), keepdim=True).numpy(), xn.sum((0, 2), keepdims=True), **close)
    np.testing.assert_allclose(x.mean(-1).numpy(), xn.mean(-1), **close)
    np.testing.assert_allclose(x.prod(2).numpy(), xn.prod(2), **close)
    np.testing.assert_allclose(x.amax((1, 2)).numpy(), xn.max((1, 2)), **close)
    np.testing.assert_allclose(x.amin().numpy(), xn.min(), **close)
    np.testing.assert_allclose(x.var().item(), xn.var(ddof=1), **close)
    np.testing.assert_allclose(x.var(1, unbiased=False).numpy(), xn.var(1), **close)
    np.testing.assert_allclose(x.std(1, correction=0, keepdim=True).numpy(), xn.std(1, keepdims=True), **close)
    np.testing.assert_allclose(janus.std(x, False).item(), xn.std(), **close)
    np.testing.assert_allclose(x.logsumexp(1).numpy(), np.log(np.exp(xn).sum(1)), **close)
    v, m = janus.var_mean(x, 0)
    np.testing.assert_allclose(m.numpy(), xn.mean(0), **close)
    assert x.sum(dtype=janus.float64).dtype is janus.float64
    assert janus.tensor([1, 2]).sum().dtype is janus.int64 and janus.tensor([1, 2]).mean(dtype=janus.float32).item() == 1.5
    assert x.max().item() == pytest.approx(xn.max()) and janus.min(x).item() == pytest.approx(xn.min())
    r = x.max(1)
    assert isinstance(r, janus.return_types.max) and r.values.shape == (3, 5)
    np.testing.assert_array_equal(r.indices.numpy(), xn.argmax(1))
    vals, idx = janus.min(x, dim=2, keepdim=True)
    assert vals.shape == (3, 4, 1) and idx.dtype is janus.int64
    np.testing.assert_array_equal(idx.numpy()[..., 0], xn.argmin(2))
    assert janus.max(x, janus.zeros(5)).shape == (3, 4, 5)
    assert x.argmax().item() == xn.argmax() and x.argmin(0).tolist() == xn.argmin(0).tolist()
    b = x > 0
    assert b.all().item() == bool((xn > 0).all()) and b.any(1).tolist() == (xn > 0).any(1).tolist()
    np.testing.assert_allclose(x.softmax(-1).sum(-1).numpy(), np.ones((3, 4)), **close)
    assert x.softmax(1, dtype=janus.float64).dtype is janus.float64
    np.testing.assert_allclose(janus.log_softmax(x, 0).exp().sum(0).numpy(), np.ones((4, 5)), **close)
    np.testing.assert_allclose(x.norm().item(), np.sqrt((xn.astype(np.float64) ** 2).sum()), rtol=1e-5)


def test_shape_functions():
    x = janus.arange(24).view(2, 3, 4)
    xn = np.arange(24).reshape(2, 3, 4)
    assert janus.cat([x, x], 1).shape == (2, 6, 4) and janus.concat((x, x), dim=-1).shape == (2, 3, 8)
    assert janus.stack([x, x], 1).shape == (2, 2, 3, 4)
    assert [t.shape[2] for t in x.split(3, 2)] == [3, 1] and [t.shape[2] for t in x.split([1, 3], 2)] == [1, 3]
    assert [t.shape[1] for t in janus.chunk(x, 2, 1)] == [2, 1]
    assert [t.shape[2] for t in janus.tensor_split(x, 3, 2)] == [2, 1, 1]
    np.testing.assert_array_equal(x.flatten(1).numpy(), xn.reshape(2, 12))
    # nothing to merge: the input itself, as PyTorch returns it (a Flatten before a
    # Linear on flat input stays one replaceable region); a 0-d tensor becomes [1]
    m = x.view(6, 4)
    assert m.flatten(1) is m and m.flatten(0, 0) is m and janus.flatten(m, -1, -1) is m
    v = janus.arange(5)
    assert v.flatten() is v and janus.nn.Flatten(0)(v) is v
    z = janus.tensor(3.0)
    assert z.flatten() is not z and z.flatten().shape == (1,)
    np.testing.assert_array_equal(x.flatten().numpy(), xn.reshape(-1))
    with pytest.raises(RuntimeError, match="start_dim cannot come after end_dim"):
        x.flatten(2, 1)
    np.testing.assert_array_equal(x.unflatten(2, (2, 2)).numpy(), xn.reshape(2, 3, 2, 2))
    np.testing.assert_array_equal(x.movedim(0, 2).numpy(), np.moveaxis(xn, 0, 2))
    np.testing.assert_array_equal(x.flip(1).numpy(), xn[:, ::-1])
    np.testing.assert_array_equal(x.roll(1, 2).numpy(), np.roll(xn, 1, 2))
    np.testing.assert_array_equal(x.repeat(2, 1, 2).numpy(), np.tile(xn, (2, 1, 2)))
    np.testing.assert_array_equal(x.transpose(0, 2).reshape(-1).numpy(), xn.transpose(2, 1, 0).reshape(-1))
    np.testing.assert_array_equal(x.swapaxes(0, 1).numpy(), xn.swapaxes(0, 1))
    np.testing.assert_array_equal(x[0].diagonal().numpy(), np.diagonal(xn[0]))
    np.testing.assert_array_equal(x.squeeze().numpy(), xn) and x.unsqueeze(-1).shape == (2, 3, 4, 1)
    assert janus.zeros(1, 3, 1).squeeze((0, 2)).shape == (3,) and janus.zeros(1, 3, 1).squeeze(0).shape == (3, 1)
    assert x.expand_as(janus.zeros(5, 2, 3, 4)).shape == (5, 2, 3, 4) and x.view_as(janus.zeros(6, 4)).shape == (6, 4)
    assert janus.broadcast_shapes((2, 1), (3,)) == (2, 3) and janus.broadcast_tensors(x, janus.zeros(4))[1].shape == x.shape
    with pytest.raises(RuntimeError, match="invalid for input of size 24"):
        x.view(5, -1)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        x.reshape(-1, -1)
    with pytest.raises(RuntimeError, match="exceeds dimension size"):
        x.narrow(2, 3, 2)


def test_index_and_linalg_functions():
    x = janus.arange(12.0).view(3, 4)
    xn = np.arange(12.0).reshape(3, 4)
    i = janus.tensor([2, 0])
    np.testing.assert_array_equal(x.index_select(0, i).numpy(), xn[[2, 0]])
    np.testing.assert_array_equal(janus.gather(x, 1, janus.tensor([[0], [1], [3]])).numpy(), xn[[0, 1, 2], [0, 1, 3]][:, None])
    s = janus.zeros(3, 4).scatter(1, janus.tensor([[1], [2], [0]]), janus.ones(3, 1))
    assert s.sum(1).tolist() == [1, 1, 1] and s[0, 1].item() == 1
    assert janus.zeros(4).scatter(0, janus.tensor([1, 3]), 2.0).tolist() == [0, 2, 0, 2]
    z = janus.zeros(4)
    z.scatter_add_(0, janus.tensor([1, 1, 3]), janus.ones(3))
    assert z.tolist() == [0, 2, 0, 1]
    assert janus.one_hot(janus.tensor([2, 0]), 3).tolist() == [[0, 0, 1], [1, 0, 0]]
    assert janus.nonzero(janus.tensor([0, 3, 0, 4])).tolist() == [[1], [3]]
    assert janus.masked_select(x, x > 9).tolist() == [10.0, 11.0]
    y = janus.zeros(3)
    y.index_put_((janus.tensor([0, 2]),), janus.tensor([5.0, 6.0]))
    y.index_put_((janus.tensor([0, 0]),), janus.tensor(1.0), accumulate=True)
    assert y.tolist() == [7, 0, 6]
    np.testing.assert_allclose((x @ x.T).numpy(), xn @ xn.T)
    np.testing.assert_allclose(janus.matmul(x, janus.ones(4)).numpy(), xn.sum(1))
    np.testing.assert_allclose(janus.addmm(janus.ones(3, 3), x, x.t(), beta=2, alpha=0.5).numpy(), 2 + 0.5 * xn @ xn.T)
    assert janus.bmm(x[None], x.t()[None]).shape == (1, 3, 3) and janus.mm(x, x.t()).shape == (3, 3)
    assert janus.dot(janus.ones(3), janus.ones(3)).item() == 3 and janus.outer(janus.ones(2), janus.ones(3)).shape == (2, 3)


# ---------------------------------------------------------------- errors
def test_error_types_and_messages():
    a = janus.ones(2, 3)
    with pytest.raises(RuntimeError, match=r"\[2, 3\].*\[4\]"):
        a + janus.ones(4)
    with pytest.raises(TypeError, match="unexpected keyword argument 'beta'"):
        janus.add(a, a, beta=2)
    with pytest.raises(TypeError, match="missing required argument 'other'"):
        janus.add(a)
    with pytest.raises(TypeError, match="takes 2 positional"):
        janus.mul(a, a, a)
    with pytest.raises(TypeError, match="must be Tensor"):
        janus.add(a, "x")
    with pytest.raises(TypeError, match="multiple values"):
        janus.add(a, a, other=a)
    with pytest.raises(TypeError, match="janus.dtype"):
        a.sum(dtype="float32")
    with pytest.raises(TypeError):
        a + "x"
    with pytest.raises(TypeError):
        a + None
    with pytest.raises(TypeError):
        janus.cat(a)
    with pytest.raises(TypeError, match="element 1"):
        janus.cat([a, 1])
    with pytest.raises(IndexError, match="Dimension out of range|dimension out of range"):
        a.sum(5)
    with pytest.raises(OverflowError):
        a + 2 ** 100
    with pytest.raises(TypeError):
        janus.Tensor.add(1, 2)


def _weird_args():
    return [None, "s", 2 ** 80, -2 ** 80, 1.5, -1, [], [[1], 2], (None,), object(), janus.ones(2),
            janus.ones(0), janus.tensor(1), float("nan"), b"x", {1: 2}, slice(None), Ellipsis]


class _Liar:
    def __len__(self):
        return 3

    def __getitem__(self, i):
        if i >= 1:
            raise IndexError(i)
        return 1


class _BadIndex:
    def __index__(self):
        raise ValueError("no")


def test_no_crash_on_junk_values():
    """Constructors, indexing, operators and argument parsers fed with junk
    (self-referential lists, lying sequences, failing __index__, objects,
    huge ints) raise Python exceptions; nothing crashes or corrupts."""
    cyc = []
    cyc.append(cyc)
    junk = [None, "s", b"b", 2 ** 80, -2 ** 80, float("nan"), [], [[]], [[1], [2, 3]], cyc, _Liar(), _BadIndex(),
            object(), {1: 2}, np.zeros((2, 0)), np.array(3), np.zeros(3, dtype=object), range(5),
            slice(1, None, -1), True, np.bool_(True), np.float32(2), janus.ones(2), janus.ones(0),
            janus.ones(2, dtype=janus.bfloat16), 1j, [1j], memoryview(b"ab"), (None,) * 9, (0,) * 70,
            [[[[[[[[[1]]]]]]]]]]
    calls = [lambda j: janus.tensor(j), lambda j: janus.as_tensor(j), lambda j: janus.zeros(4, 3)[j],
             lambda j: janus.zeros(4, 3).__setitem__(j, 1.0), lambda j: janus.zeros(4, 3).__setitem__(0, j),
             lambda j: janus.zeros(3) + j, lambda j: j - janus.zeros(3), lambda j: janus.zeros(3).view(j),
             lambda j: janus.zeros(3).reshape(j), lambda j: janus.zeros(3).sum(j),
             lambda j: janus.zeros(3).sum(dtype=j), lambda j: janus.full((2,), j),
             lambda j: janus.cat([janus.ones(2), j]), lambda j: janus.ones(2).to(j),
             lambda j: janus.zeros(3).expand(j), lambda j: janus.arange(j), lambda j: janus.zeros(3).clamp(j),
             lambda j: janus.zeros(3).masked_fill(janus.ones(3) > 0, j), lambda j: janus.randint(0, 5, j),
             lambda j: janus.zeros(3).copy_(j), lambda j: janus.ops.add(j, j), lambda j: _C._op("add", [j], (j,)),
             lambda j: _C._from_buffer(j), lambda j: _C._tensor_from_data(j, j), lambda j: janus.zeros(3) == j,
             lambda j: janus.zeros(3).__iadd__(j), lambda j: janus.ones(2, 2).max(j),
             lambda j: janus.ones(2, 2).split(j), lambda j: janus.zeros(2)[janus.tensor([0]), j]]
    for j in junk:
        for f in calls:
            try:
                f(j)
            except (TypeError, ValueError, IndexError, RuntimeError, NotImplementedError, OverflowError,
                    KeyError, AttributeError, BufferError):
                pass


def test_no_crash_on_junk_arguments():
    """Every public function and method, called with junk, raises a Python
    exception (or returns) but never crashes the interpreter."""
    from janus import _ops
    names = sorted(set(_ops.FUNCTIONS) - {"manual_seed", "set_num_threads", "seed", "set_rng_state"})
    junk = _weird_args()
    for name in names:
        f = getattr(janus, name)
        for args in [(), *[(j,) for j in junk], *[(janus.ones(2, 2), j) for j in junk],
                     (janus.ones(2), janus.ones(2), janus.ones(2), janus.ones(2), janus.ones(2))]:
            try:
                f(*args)
            except (TypeError, ValueError, IndexError, RuntimeError, NotImplementedError, OverflowError,
                    MemoryError, AttributeError, KeyError):
                pass
    t = janus.ones(2, 2)
    for name in sorted(n for n in _ops.METHODS if not n.startswith("_")):
        m = getattr(t, name)
        for args in [(), *[(j,) for j in junk]]:
            try:
                m(*args)
            except (TypeError, ValueError, IndexError, RuntimeError, NotImplementedError, OverflowError,
                    MemoryError, AttributeError, KeyError):
                pass
    assert t.shape == (2, 2)


def test_composite_ops_match_numpy():
    an = np.arange(12.0, dtype=np.float32).reshape(3, 4) - 5
    bn = np.full((3, 4), 2.0, np.float32)
    a, b = janus.tensor(an), janus.tensor(bn)
    close = dict(rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(janus.tril(a).numpy(), np.tril(an), **close)
    np.testing.assert_allclose(a.triu(1).numpy(), np.triu(an, 1), **close)
    np.testing.assert_allclose(janus.addcmul(a, a, b, value=0.5).numpy(), an + 0.5 * an * bn, **close)
    np.testing.assert_allclose(janus.addcdiv(a, a, b).numpy(), an + an / bn, **close)
    np.testing.assert_allclose(janus.lerp(a, b, 0.3).numpy(), an + 0.3 * (bn - an), **close)
    np.testing.assert_allclose(janus.log2(b).numpy(), np.log2(bn), **close)
    np.testing.assert_allclose(janus.log10(b).numpy(), np.log10(bn), **close)
    np.testing.assert_allclose(janus.exp2(a).numpy(), np.exp2(an), **close)
    assert janus.trace(a).item() == np.trace(an)
    assert janus.tensor([1, 2]).repeat_interleave(2).tolist() == [1, 1, 2, 2]
    c = a.clone()
    v = c._version
    c.addcdiv_(a, b, value=2).addcmul_(a, b).lerp_(b, 0.5).tril_()
    assert c._version > v
    np.testing.assert_allclose(c.numpy(), np.tril((an + 2 * an / bn + an * bn) * 0.5 + bn * 0.5), **close)


def test_positive_transpose_of_a_vector_and_aliases_keep_what_torch_keeps():
    # +x is x (torch.positive returns its input; on bool it raises); x.t() and
    # x.T of a vector are views that keep requires_grad, and a gradient flows
    # through them; x[:], .data and copy.copy are new objects over the same
    # storage, .data and copy.copy without grad
    x = janus.tensor([1.0, 2.0, 3.0], requires_grad=True)
    assert (+x) is x
    with pytest.raises(RuntimeError, match="bool tensor is not supported"):
        +janus.tensor([True])
    for v in (x.t(), x.T):
        assert v.requires_grad and v.tolist() == [1.0, 2.0, 3.0]
    (x.t() * janus.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert x.grad.tolist() == [1.0, 2.0, 3.0]
    y = janus.arange(6.0)
    for v in (y[:], y[:6], y.data, copy.copy(y)):
        assert v is not y and v.data_ptr() == y.data_ptr() and v.tolist() == y.tolist()
    assert not x.data.requires_grad and x[:].requires_grad


@pytest.mark.parametrize("op,args,ref", [
    ("t_", (), lambda a: a.T),
    ("transpose_", (0, 1), lambda a: a.T),
    ("swapdims_", (1, 0), lambda a: a.T),
    ("swapaxes_", (0, 1), lambda a: a.T),
    ("unsqueeze_", (1,), lambda a: a[:, None, :]),
    ("unsqueeze_", (-1,), lambda a: a[:, :, None]),
    ("squeeze_", (), lambda a: a),
    ("as_strided_", ((3, 2), (1, 3)), lambda a: np.lib.stride_tricks.as_strided(a.reshape(-1), (3, 2), (4, 12))),
])
def test_inplace_view_ops_change_the_tensor_itself(op, args, ref):
    # x.<view>_(...) returns x itself, now with the view's layout (numpy's),
    # sharing storage with what it was; other Python names of x see it too
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = janus.tensor(a)
    alias, ptr = x, x.data_ptr()
    assert getattr(x, op)(*args) is x and alias is x
    np.testing.assert_array_equal(x.numpy(), ref(a))
    assert x.data_ptr() == ptr


def test_inplace_view_ops_and_detach__follow_autograd_as_torch():
    x = janus.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        x.unsqueeze_(0)
    y = x * 2
    y.unsqueeze_(0)
    assert tuple(y.shape) == (1, 3) and y.grad_fn is not None
    (y * janus.tensor([[1.0, 2.0, 3.0]])).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0]
    with janus.no_grad():  # a leaf under no_grad: its layout changes, still a leaf that requires grad
        w = janus.ones(3, requires_grad=True)
        w.unsqueeze_(0)
    assert tuple(w.shape) == (1, 3) and w.is_leaf and w.requires_grad
    z = janus.ones(2, requires_grad=True) * 3
    assert z.detach_() is z and not z.requires_grad and z.grad_fn is None and z.tolist() == [3.0, 3.0]


def test_retain_grad_keeps_a_non_leaf_gradient_as_torch():
    x = janus.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.retain_grad()  # once is enough: the gradient is not kept twice
    assert y.retains_grad and not x.retains_grad
    z = (y * y).sum()
    z.backward(retain_graph=True)
    assert y.grad.tolist() == [4.0, 8.0, 12.0] and x.grad.tolist() == [8.0, 16.0, 24.0]
    z.backward()  # accumulated, as a leaf's
    assert y.grad.tolist() == [8.0, 16.0, 24.0]
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
        janus.ones(2).retain_grad()
    x.retain_grad()  # a leaf: nothing to do
    assert not x.retains_grad
    ref = __import__("weakref").ref(y)
    del y, z  # the hook holds no reference to the tensor
    assert ref() is None


def test_an_out_tensor_of_another_shape_is_resized_in_place():
    # torch resizes out= to the result's shape: the same Python object, the
    # result's values, the out tensor's dtype
    o = janus.zeros(1, dtype=janus.float64)
    alias = o
    assert janus.arange(4, out=o) is o and alias is o
    assert tuple(o.shape) == (4,) and o.dtype == janus.float64 and o.tolist() == [0.0, 1.0, 2.0, 3.0]
    same = janus.zeros(4)
    ptr = same.data_ptr()
    janus.arange(4, out=same)
    assert same.data_ptr() == ptr  # the right shape: written in place
