"""PyTorch APIs real training scripts use, added together: the legacy typed
constructors (janus.FloatTensor & co., janus/_tensortype.py), janus.version,
janus.nn.attention (SDPBackend, sdpa_kernel), janus.testing (assert_close,
make_tensor) and janus.nn.utils.prune.

Each API is checked twice: against PyTorch where it is installed (the tests
that import it skip otherwise), and without it -- values against numpy,
shapes, dtypes and torch's error messages written out -- so the file also
passes in a venv holding only numpy and pytest.  A short training script
with an l1-pruned layer records and replays bitwise (the pruning hook is
janus ops only)."""
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import janus
import janus.nn.utils.prune as prune
from janus.nn.attention import SDPBackend, sdpa_kernel
from janus.testing import assert_close, make_tensor

from dynamic_runs import have_optimize

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(ROOT, "build")))
JANUS = os.path.join(BUILD, "janus")

LEGACY = {"FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
          "BFloat16Tensor": "bfloat16", "LongTensor": "int64", "IntTensor": "int32", "ByteTensor": "uint8",
          "BoolTensor": "bool"}
# the ones this build has a dtype for (all of them today; float16 may be absent from a build)
HAVE = {n: d for n, d in LEGACY.items() if hasattr(janus, d)}


def _np(t):
    return np.array(t.detach().tolist())


def _torch_msg(s):
    """A torch message in janus's spelling (janus.Size, janus.float32, the tensor class)."""
    return s.replace("<class 'torch.Tensor'>", "<class 'janus._tensor.Tensor'>").replace("torch.", "janus.")


def _raised(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001 -- the type and message are what is compared
        return type(e), str(e)
    return None


# ================================================= legacy typed constructors
def test_legacy_constructors_make_tensors_of_their_dtype():
    for name, dn in HAVE.items():
        cls, dt = getattr(janus, name), getattr(janus, dn)
        t = cls(2, 3)  # uninitialized, of that size
        assert type(t) is janus.Tensor and t.dtype is dt and tuple(t.shape) == (2, 3) and t.device.type == "cpu"
        assert tuple(cls(janus.Size([4, 1])).shape) == (4, 1)
        assert tuple(cls(np.int64(3)).shape) == (3,)  # a numpy integer is a size too
        e = cls()
        assert e.dtype is dt and tuple(e.shape) == (0,)
        d = cls([1, 0, 2])
        assert d.dtype is dt and _np(d).tolist() == np.array([1, 0, 2]).astype(_NP[dn]).tolist()
        assert _np(cls((2, 3))).tolist() == np.array([2, 3]).astype(_NP[dn]).tolist()  # a tuple is data
        assert _np(cls(range(3))).tolist() == np.arange(3).astype(_NP[dn]).tolist()
        a = cls(np.array([[1.0, 0.0], [3.0, 4.0]]))
        assert a.dtype is dt and tuple(a.shape) == (2, 2)
        assert cls(2, 3, device="cpu").dtype is dt
    assert janus.LongTensor([1.7, -2.5]).tolist() == [1, -2]  # truncated, as a cast
    assert janus.FloatTensor(np.array(3.5)).dim() == 0


_NP = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "bfloat16": np.float32,
       "int64": np.int64, "int32": np.int32, "uint8": np.uint8, "bool": np.bool_}


def test_legacy_constructor_shares_a_numpy_array_of_its_dtype():
    a = np.zeros(3, dtype=np.float32)
    t = janus.FloatTensor(a)
    a[1] = 5
    assert t.tolist() == [0.0, 5.0, 0.0]
    b = np.zeros(3, dtype=np.float64)
    t = janus.FloatTensor(b)  # converted: a copy
    b[1] = 5
    assert t.tolist() == [0.0, 0.0, 0.0] and t.dtype is janus.float32
    x = janus.tensor([1.0, 2.0])
    y = janus.FloatTensor(x)  # the same memory, as torch's alias
    y[0] = 7
    assert x.tolist() == [7.0, 2.0]


def test_legacy_isinstance_is_dtype_and_cpu():
    for name in HAVE:
        cls = getattr(janus, name)
        for dn in HAVE.values():
            t = janus.zeros(2, dtype=getattr(janus, dn))
            assert isinstance(t, cls) == (HAVE[name] == dn), (name, dn)
        assert not isinstance(3, cls) and not isinstance(np.zeros(2), cls)
        assert not issubclass(janus.Tensor, cls)
        assert cls.dtype is getattr(janus, HAVE[name]) and cls.is_cuda is False
        assert repr(cls) == f"<class 'janus.{name}'>" and cls.__name__ == name
    assert isinstance(janus.nn.Parameter(janus.zeros(2)), janus.FloatTensor)
    assert type(janus.FloatTensor).__name__ == "tensortype"


def test_tensor_type_takes_a_legacy_type():
    x = janus.tensor([1.5, -2.0])
    assert x.type(janus.DoubleTensor).dtype is janus.float64
    assert x.type(janus.LongTensor).tolist() == [1, -2]
    assert x.type() == "janus.FloatTensor"
    m = janus.nn.Linear(2, 2).type(janus.DoubleTensor)
    assert m.weight.dtype is janus.float64 and isinstance(m.weight, janus.DoubleTensor)


LEGACY_ERRORS = [  # (args, kwargs, exception type, torch's message)
    ((2.5,), {}, TypeError, "new(): data must be a sequence (got float)"),
    ((True,), {}, TypeError, "new(): data must be a sequence (got bool)"),
    ((None,), {}, TypeError, "new(): data must be a sequence (got NoneType)"),
    (("a",), {}, TypeError, "new(): invalid data type 'str'"),
    ((-1,), {}, RuntimeError, "Trying to create tensor with negative dimension -1: [-1]"),
    ((3, [1]), {}, TypeError, "new(): argument 'size' failed to unpack the object at pos 2 with error "
                              "\"type must be tuple of ints,but got list\""),
    ((2, 3.0), {}, TypeError, "new(): argument 'size' failed to unpack the object at pos 2 with error "
                              "\"type must be tuple of ints,but got float\""),
    ((2,), {"device": "cuda"}, RuntimeError, "legacy constructor expects device type: cpu but device type: cuda "
                                             "was passed"),
]


def test_legacy_constructor_errors_are_torchs():
    for args, kwargs, typ, msg in LEGACY_ERRORS:
        assert _raised(lambda: janus.FloatTensor(*args, **kwargs)) == (typ, msg), args
    typ, msg = _raised(lambda: janus.FloatTensor(janus.tensor([1, 2])))
    assert typ is TypeError and msg == (
        "expected TensorOptions(dtype=float, device=cpu, layout=Strided, requires_grad=false (default), "
        "pinned_memory=false (default), memory_format=(nullopt)) (got TensorOptions(dtype=long int, device=cpu, "
        "layout=Strided, requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt)))")
    typ, msg = _raised(lambda: janus.FloatTensor(2, dtype=janus.float64))
    assert typ is TypeError and msg.startswith(
        "new() received an invalid combination of arguments - got (int, dtype=janus.dtype), but expected one of:\n"
        " * (*, torch.device device = None)\n      didn't match because some of the keywords were incorrect: dtype\n")
    with pytest.raises(RuntimeError, match=r"^Legacy tensor constructor of the form torch.Tensor\(tensor, "):
        janus.FloatTensor(janus.zeros(1), device="cpu")


def test_legacy_names_are_supported_names():
    from janus import _unsupported, check
    for name in HAVE:
        assert name not in _unsupported.ALTERNATIVES
        assert check.resolve("torch." + name) is None
    assert check.resolve("torch.CharTensor").startswith("torch.CharTensor is not supported")  # no int8 dtype


def test_legacy_constructors_match_torch():
    torch = pytest.importorskip("torch")
    for name in HAVE:
        J, T = getattr(janus, name), getattr(torch, name)
        assert str(J.dtype).split(".")[1] == str(T.dtype).split(".")[1]
        # non-negative: torch refuses a negative float for uint8 (overflow) where janus.tensor wraps it
        for data in ([1, 0, 2], [[1.7, 2.5], [0.0, 3.0]], np.array([1.5, 0.0, 2.0]), np.array([3, 0], np.int64),
                     np.array([True, False]), [-1.7, 2.5] if name != "ByteTensor" else [1, 2]):
            j, t = J(data), T(data)
            assert tuple(j.shape) == tuple(t.shape)
            assert np.array_equal(_np(j), t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy())
        assert tuple(J(2, 3).shape) == tuple(T(2, 3).shape) and tuple(J().shape) == tuple(T().shape)
        for dn in HAVE.values():
            assert isinstance(janus.zeros(1, dtype=getattr(janus, dn)), J) == \
                isinstance(torch.zeros(1, dtype=getattr(torch, dn)), T)
    for args, kwargs, _, _ in LEGACY_ERRORS:
        tr = _raised(lambda: torch.FloatTensor(*args, **kwargs))
        assert _raised(lambda: janus.FloatTensor(*args, **kwargs)) == (tr[0], _torch_msg(tr[1])), args
    for bad in ((janus.tensor([1, 2]), torch.tensor([1, 2])), (janus.zeros(1, dtype=janus.float64),
                                                               torch.zeros(1, dtype=torch.float64))):
        assert _raised(lambda: janus.FloatTensor(bad[0])) == _raised(lambda: torch.FloatTensor(bad[1]))
    jt, jm = _raised(lambda: janus.FloatTensor([1, 2], 3))
    tt, tm = _raised(lambda: torch.FloatTensor([1, 2], 3))
    assert jt is tt and jm.split("\n")[0] == tm.split("\n")[0]
    jt, jm = _raised(lambda: janus.FloatTensor(2, dtype=janus.float64))
    tt, tm = _raised(lambda: torch.FloatTensor(2, dtype=torch.float64))
    assert jt is tt and jm == tm.replace("=torch.dtype", "=janus.dtype")


# ================================================================ version
def test_version_module():
    import janus.version as v
    assert janus.version is v
    assert v.__version__ == janus.__version__ == janus._C.__version__
    assert v.hip is None and v.debug is False and v.git_version == "unknown"
    if janus._C.HAVE_CUDA:
        assert v.cuda is None or re.fullmatch(r"\d+\.\d+", v.cuda), v.cuda
    else:
        assert v.cuda is None
    with pytest.raises(AttributeError, match="janus.version.nothing is not supported by janus"):
        v.nothing


def test_version_cuda_is_the_linked_runtime():
    """A CUDA build names the major.minor of the libcudart its extension loaded."""
    if not janus._C.HAVE_CUDA:
        pytest.skip("janus was built without CUDA")
    with open("/proc/self/maps") as f:
        libs = {os.path.basename(ln.split()[-1]) for ln in f if "libcudart" in ln}
    if not libs:
        pytest.skip("the CUDA runtime is linked statically")
    major = janus.version.cuda.split(".")[0]
    assert any(lib.startswith(f"libcudart.so.{major}") for lib in libs), (libs, janus.version.cuda)


# ======================================================== nn.attention
def test_sdp_backend_members_are_torchs():
    assert [(m.name, int(m)) for m in SDPBackend] == [
        ("ERROR", -1), ("MATH", 0), ("FLASH_ATTENTION", 1), ("EFFICIENT_ATTENTION", 2), ("CUDNN_ATTENTION", 3),
        ("OVERRIDEABLE", 4)]
    assert str(SDPBackend.MATH) == "SDPBackend.MATH" and repr(SDPBackend.MATH) == "<SDPBackend.MATH: 0>"
    assert janus.nn.attention.SDPBackend is SDPBackend


def test_sdpa_kernel_checks_its_argument_and_changes_nothing():
    F = janus.nn.functional
    janus.manual_seed(0)
    q, k, v = (janus.randn(2, 3, 5, 8) for _ in range(3))
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    for backends in (SDPBackend.FLASH_ATTENTION, [SDPBackend.MATH], [SDPBackend.CUDNN_ATTENTION,
                                                                     SDPBackend.EFFICIENT_ATTENTION], []):
        with sdpa_kernel(backends, set_priority=True) as r:
            assert r == {}
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        assert np.array_equal(_np(out), _np(ref))

    @sdpa_kernel(SDPBackend.MATH)  # a decorator too, reusable
    def f(x):
        return x + 1
    assert f(1) == 2 and f(2) == 3
    with pytest.raises(TypeError, match="^Backend must be an instance of SDPBackend or a list of SDPBackend "
                                        "instances, got str$"):
        with sdpa_kernel("math"):
            pass
    with pytest.raises(TypeError, match="got a list holding int$"):
        with sdpa_kernel([SDPBackend.MATH, 1]):
            pass
    with pytest.raises(TypeError):
        with sdpa_kernel((SDPBackend.MATH,)):  # a tuple is refused, as torch refuses it
            pass


def test_sdp_backend_matches_torch():
    pytest.importorskip("torch")
    from torch.nn.attention import SDPBackend as TB
    assert list(SDPBackend.__members__) == list(TB.__members__)
    assert all(int(SDPBackend[n]) == int(TB.__members__[n]) for n in TB.__members__)
    assert str(SDPBackend.FLASH_ATTENTION) == str(TB.FLASH_ATTENTION)


# ============================================================ testing
ASSERT_CLOSE_CASES = [  # (name, build(m) -> (actual, expected, kwargs)); m is janus or torch
    ("one_off", lambda m: (m.tensor([1., 2, 3]), m.tensor([1., 2.5, 3]), {})),
    ("matrix", lambda m: (m.tensor([[1., 2], [3, 4]]), m.tensor([[1., 2.], [3, 4.5]]), {})),
    ("ints", lambda m: (m.tensor([1, 2, 3]), m.tensor([1, 2, 4]), {})),
    ("dtype", lambda m: (m.tensor([1., 2, 3]), m.tensor([1., 2, 3], dtype=m.float64), {})),
    ("shape", lambda m: (m.tensor([1., 2, 3]), m.tensor([1., 2]), {})),
    ("floats", lambda m: (1.0, 1.1, {})),
    ("python_ints", lambda m: (1, 2, {})),
    ("int_float", lambda m: (1, 1.0, {})),
    ("list", lambda m: ([m.tensor(1.)], [m.tensor(1.5)], {})),
    ("dict", lambda m: ({"a": m.tensor([1.])}, {"a": m.tensor([1.5])}, {})),
    ("keys", lambda m: ({"a": 1}, {"b": 1}, {})),
    ("length", lambda m: ([1, 2], [1], {})),
    ("nan", lambda m: (m.tensor([float("nan")]), m.tensor([float("nan")]), {})),
    ("nan_equal", lambda m: (m.tensor([float("nan"), 1.]), m.tensor([float("nan"), 1.]), {"equal_nan": True})),
    ("rtol_only", lambda m: (m.tensor([1.]), m.tensor([1.]), {"rtol": 1e-3})),
    ("atol_only", lambda m: (m.tensor([1.]), m.tensor([1.]), {"atol": 1e-3})),
    ("tensor_number", lambda m: (m.tensor([1.]), 1.0, {})),
    ("tensor_list", lambda m: (m.tensor([1., 2]), [1., 2], {})),
    ("msg", lambda m: (m.tensor([1.]), m.tensor([2.]), {"msg": "custom"})),
    ("msg_callable", lambda m: (m.tensor([1.]), m.tensor([2.]), {"msg": lambda s: "X" + s})),
    ("zero_dim", lambda m: (m.tensor(1.), m.tensor(2.), {})),
    ("bools", lambda m: (m.tensor([True]), m.tensor([False]), {})),
    ("inf", lambda m: (m.tensor([float("inf")]), m.tensor([float("inf")]), {})),
    ("inf_signs", lambda m: (m.tensor([float("inf")]), m.tensor([-float("inf")]), {})),
    ("stride", lambda m: (m.zeros(2, 3), m.zeros(3, 2).t(), {"check_stride": True})),
    ("stride_unchecked", lambda m: (m.zeros(2, 3), m.zeros(3, 2).t(), {})),
    ("float32_tol_in", lambda m: (m.zeros(2, 3), m.zeros(2, 3) + 9e-6, {})),
    ("float32_tol_out", lambda m: (m.zeros(2, 3), m.zeros(2, 3) + 2e-5, {})),
    ("float16_tol", lambda m: (m.zeros(2, 3, dtype=m.float16), m.zeros(2, 3, dtype=m.float16) + 1e-3, {})),
    ("float16_rel_in", lambda m: (m.tensor([1000.], dtype=m.float16), m.tensor([1000.5], dtype=m.float16), {})),
    ("bfloat16_in", lambda m: (m.tensor([1.0], dtype=m.bfloat16), m.tensor([1.0078125], dtype=m.bfloat16), {})),
    ("bfloat16_out", lambda m: (m.tensor([1.0], dtype=m.bfloat16), m.tensor([1.0625], dtype=m.bfloat16), {})),
    ("float64_tol", lambda m: (m.tensor([1.0], dtype=m.float64), m.tensor([1.0 + 3e-7], dtype=m.float64), {})),
    ("booleans", lambda m: (True, False, {})),
    ("no_check_dtype", lambda m: (m.tensor([1, 2]), m.tensor([1., 3.]), {"check_dtype": False})),
    ("expected_zero", lambda m: (m.tensor([0., 2]), m.tensor([1., 2.]), {})),
    ("tuple_list", lambda m: ((1, 2), [1, 2], {})),
    ("none", lambda m: (m.tensor([1.]), None, {})),
    ("nones", lambda m: (None, None, {})),
    ("numpy", lambda m: (np.array([1., 2]), np.array([1., 2.1]), {})),
    ("tensor_numpy", lambda m: (m.tensor([1., 2]), np.array([1., 2.]), {})),
    ("explicit_tol", lambda m: (m.tensor([1., 2]), m.tensor([1.05, 2.]), {"rtol": 0.0, "atol": 0.1})),
    ("int_tol", lambda m: (m.tensor([10, 20]), m.tensor([11, 25]), {"rtol": 0.1, "atol": 1})),
    ("int_tol_in", lambda m: (m.tensor([10, 20]), m.tensor([11, 21]), {"rtol": 0.1, "atol": 0})),
    ("inf_finite", lambda m: (m.tensor([1.0]), m.tensor([float("inf")]), {})),
    ("zero_tol", lambda m: (m.tensor([1., 2]), m.tensor([1.05, 2.]), {"rtol": 0, "atol": 0})),
    ("nested", lambda m: ([{"w": m.ones(2, 2)}, (3, m.tensor([1, 2]))],
                          [{"w": m.ones(2, 2)}, (3, m.tensor([1, 5]))], {})),
    ("parameter", lambda m: (m.nn.Parameter(m.tensor([1., 2])), m.tensor([1., 2.]), {})),
]

# torch's messages for some of the cases above (written out: checked without PyTorch)
TORCH_MESSAGES = {
    "one_off": (AssertionError, "Tensor-likes are not close!\n\nMismatched elements: 1 / 3 (33.3%)\nGreatest "
                "absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)\nGreatest relative difference: "
                "0.20000000298023224 at index (1,) (up to 1.3e-06 allowed)"),
    "matrix": (AssertionError, "Tensor-likes are not close!\n\nMismatched elements: 1 / 4 (25.0%)\nGreatest absolute "
               "difference: 0.5 at index (1, 1) (up to 1e-05 allowed)\nGreatest relative difference: "
               "0.1111111119389534 at index (1, 1) (up to 1.3e-06 allowed)"),
    "ints": (AssertionError, "Tensor-likes are not equal!\n\nMismatched elements: 1 / 3 (33.3%)\nGreatest absolute "
             "difference: 1 at index (2,)\nGreatest relative difference: 0.25 at index (2,)"),
    "dtype": (AssertionError, "The values for attribute 'dtype' do not match: janus.float32 != janus.float64."),
    "shape": (AssertionError, "The values for attribute 'shape' do not match: janus.Size([3]) != janus.Size([2])."),
    "floats": (AssertionError, "Scalars are not close!\n\nExpected 1.1 but got 1.0.\nAbsolute difference: "
               "0.10000000000000009 (up to 1e-07 allowed)\nRelative difference: 0.09090909090909098 (up to 1e-07 "
               "allowed)"),
    "python_ints": (AssertionError, "Scalars are not equal!\n\nExpected 2 but got 1.\nAbsolute difference: 1\n"
                    "Relative difference: 0.5"),
    "int_float": (AssertionError, "The (d)types do not match: <class 'int'> != <class 'float'>."),
    "list": (AssertionError, "Scalars are not close!\n\nExpected 1.5 but got 1.0.\nAbsolute difference: 0.5 (up to "
             "1e-05 allowed)\nRelative difference: 0.3333333333333333 (up to 1.3e-06 allowed)\n\nThe failure "
             "occurred for item [0]"),
    "dict": (AssertionError, "Tensor-likes are not close!\n\nMismatched elements: 1 / 1 (100.0%)\nGreatest absolute "
             "difference: 0.5 at index (0,) (up to 1e-05 allowed)\nGreatest relative difference: 0.3333333432674408 "
             "at index (0,) (up to 1.3e-06 allowed)\n\nThe failure occurred for item ['a']"),
    "keys": (AssertionError, "The keys of the mappings do not match:\nMissing keys in the actual mapping: ['b']\n"
             "Additional keys in the actual mapping: ['a']"),
    "length": (AssertionError, "The length of the sequences mismatch: 2 != 1"),
    "rtol_only": (ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, but got no atol."),
    "tensor_number": (TypeError, "No comparison pair was able to handle inputs of type <class "
                      "'janus._tensor.Tensor'> and <class 'float'>."),
    "msg": (AssertionError, "custom"),
    "zero_dim": (AssertionError, "Scalars are not close!\n\nExpected 2.0 but got 1.0.\nAbsolute difference: 1.0 (up "
                 "to 1e-05 allowed)\nRelative difference: 0.5 (up to 1.3e-06 allowed)"),
    "bools": (AssertionError, "Tensor-likes are not equal!\n\nMismatched elements: 1 / 1 (100.0%)\nGreatest "
              "absolute difference: 1 at index (0,)\nGreatest relative difference: inf at index (0,)"),
    "stride": (AssertionError, "The values for attribute 'stride()' do not match: (3, 1) != (1, 2)."),
    "float16_tol": (AssertionError, "Tensor-likes are not close!\n\nMismatched elements: 6 / 6 (100.0%)\nGreatest "
                    "absolute difference: 0.0010004043579101562 at index (0, 0) (up to 1e-05 allowed)\nGreatest "
                    "relative difference: 1.0 at index (0, 0) (up to 0.001 allowed)"),
    "booleans": (AssertionError, "Booleans mismatch: True is not False"),
    "none": (AssertionError, "None mismatch: tensor([1.]) is not None"),
    "tensor_numpy": (TypeError, "No comparison pair was able to handle inputs of type <class "
                     "'janus._tensor.Tensor'> and <class 'numpy.ndarray'>."),
}
PASSING = {"nan_equal", "inf", "int_tol_in", "explicit_tol", "stride_unchecked", "float32_tol_in", "float16_rel_in",
           "bfloat16_in", "tuple_list",
           "nones", "parameter"}


def test_assert_close_messages_are_torchs():
    for name, build in ASSERT_CLOSE_CASES:
        a, e, kw = build(janus)
        got = _raised(lambda: assert_close(a, e, **kw))
        if name in PASSING:
            assert got is None, (name, got)
        elif name in TORCH_MESSAGES:
            assert got == TORCH_MESSAGES[name], (name, got)
        else:
            assert got is not None, name


def test_assert_close_default_tolerances_per_dtype():
    # just inside / just outside atol + rtol * |expected| for each floating dtype; exact for the rest
    for dt, (rtol, atol) in ((janus.float32, (1.3e-6, 1e-5)), (janus.float64, (1e-7, 1e-7))):
        e = janus.tensor([100.0], dtype=dt)
        assert_close(e + 0.9 * (atol + rtol * 100), e)
        with pytest.raises(AssertionError, match=f"(?s)up to {atol} allowed.*up to {rtol} allowed"):
            assert_close(e + 1.2 * (atol + rtol * 100), e)
    with pytest.raises(AssertionError, match=r"up to 0.016 allowed"):
        assert_close(janus.tensor([1.0625], dtype=janus.bfloat16), janus.tensor([1.0], dtype=janus.bfloat16))
    for dt in (janus.int64, janus.int32, janus.uint8, janus.bool):
        with pytest.raises(AssertionError, match="^Tensor-likes are not equal!"):
            assert_close(janus.tensor([1, 0], dtype=dt), janus.tensor([1, 1], dtype=dt))
    assert_close(janus.tensor([1, 2]), janus.tensor([1, 2]))
    # a mismatch reports the greatest differences among the mismatched elements only
    with pytest.raises(AssertionError) as ei:
        assert_close(janus.tensor([[0.0, 5.0, 0.0], [1.0, 1.0, 3.0]]), janus.tensor([[0.0, 1.0, 0.0], [1.0, 1.0, 1.0]]))
    assert str(ei.value).splitlines()[2:] == [
        "Mismatched elements: 2 / 6 (33.3%)",
        "Greatest absolute difference: 4.0 at index (0, 1) (up to 1e-05 allowed)",
        "Greatest relative difference: 4.0 at index (0, 1) (up to 1.3e-06 allowed)"]


def test_assert_close_values_against_numpy():
    rng = np.random.default_rng(3)
    for _ in range(20):
        a = rng.standard_normal(12).astype(np.float32)
        b = a + rng.choice([0.0, 1e-7, 1e-3], size=12).astype(np.float32)
        close = np.isclose(a, b, rtol=1.3e-6, atol=1e-5)
        got = _raised(lambda: assert_close(janus.tensor(a), janus.tensor(b)))
        if close.all():
            assert got is None
        else:
            assert got[0] is AssertionError
            assert f"Mismatched elements: {(~close).sum()} / 12 " in got[1]
            diff = np.abs(a - b) * ~close
            idx = int(re.search(r"at index \((\d+),\)", got[1].splitlines()[3]).group(1))
            assert diff[idx] == diff.max()  # one of the greatest (ties may pick another)


def test_make_tensor():
    t = make_tensor((2, 3), dtype=janus.float32, device="cpu", low=-1, high=1)
    assert t.dtype is janus.float32 and tuple(t.shape) == (2, 3) and t.device.type == "cpu"
    v = _np(t)
    assert (v >= -1).all() and (v < 1).all()
    t = make_tensor(4, 5, dtype=janus.int64, device="cpu")
    v = _np(t)
    assert t.dtype is janus.int64 and (v >= -9).all() and (v < 10).all()
    v = _np(make_tensor(50, dtype=janus.uint8, device="cpu", low=-5, high=3))  # low clamped to the dtype's 0
    assert (v >= 0).all() and (v < 3).all()
    assert make_tensor([3], dtype=janus.bool, device="cpu").dtype is janus.bool
    nc = make_tensor(3, 4, dtype=janus.float64, device="cpu", noncontiguous=True)
    assert tuple(nc.shape) == (3, 4) and not nc.is_contiguous()
    assert (_np(make_tensor(200, dtype=janus.int32, device="cpu", low=-1, high=2, exclude_zero=True)) != 0).all()
    assert make_tensor(2, dtype=janus.float32, device="cpu", requires_grad=True).requires_grad
    with pytest.raises(ValueError, match=r"^`requires_grad=True` is not supported for boolean and integral dtypes"):
        make_tensor(2, dtype=janus.int64, device="cpu", requires_grad=True)
    with pytest.raises(ValueError, match=r"^`low` must be less than `high`, but got 3 >= 1$"):
        make_tensor(2, dtype=janus.int64, device="cpu", low=3, high=1)
    with pytest.raises(ValueError, match="cannot be NaN"):
        make_tensor(2, dtype=janus.float32, device="cpu", low=float("nan"))


def test_assert_allclose_is_the_deprecated_form():
    from janus.testing import assert_allclose
    with pytest.warns(FutureWarning, match="assert_allclose\\(\\)` is deprecated"):
        assert_allclose(janus.tensor([1.0, float("nan")]), [1.00001, float("nan")])  # its looser float32 rtol 1e-4
    with pytest.warns(FutureWarning), pytest.raises(AssertionError, match="^Tensor-likes are not close!"):
        assert_allclose(janus.tensor([1.0]), [1.001])


def test_testing_is_a_guarded_public_module():
    assert janus.testing.assert_close is assert_close
    with pytest.raises(AttributeError, match="janus.testing.FileCheck is not supported by janus"):
        janus.testing.FileCheck


def test_assert_close_matches_torch():
    torch = pytest.importorskip("torch")
    for name, build in ASSERT_CLOSE_CASES:
        ja, je, kw = build(janus)
        ta, te, tkw = build(torch)
        jr = _raised(lambda: assert_close(ja, je, **kw))
        tr = _raised(lambda: torch.testing.assert_close(ta, te, **tkw))
        if tr is None:
            assert jr is None, (name, jr)
        else:
            assert jr == (tr[0], _torch_msg(tr[1])), (name, jr, tr)


# ============================================================== prune
def _tie_free(shape, seed=0):
    """float32 weights whose magnitudes are all different (so do the row and
    column norms): which entry goes is then decided, as in torch."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    mags = (rng.permutation(n) + 1).astype(np.float32) / n
    return (mags * rng.choice(np.array([-1, 1], np.float32), n)).reshape(shape).astype(np.float32)


def _linear(m, w, b=None):
    lin = m.nn.Linear(w.shape[1], w.shape[0])
    with m.no_grad():
        lin.weight.copy_(m.tensor(w))
        if b is not None:
            lin.bias.copy_(m.tensor(b))
    return lin


def test_l1_unstructured_prunes_the_smallest_magnitudes():
    w = _tie_free((4, 6))
    for amount, k in ((3, 3), (0.3, round(0.3 * 24)), (0, 0), (24, 24), (1.0, 24)):
        lin = _linear(janus, w)
        hooks = janus._module_hooks
        assert prune.l1_unstructured(lin, "weight", amount=amount) is lin
        mask = np.ones(24, np.float32)
        mask[np.argsort(np.abs(w).ravel())[:k]] = 0
        mask = mask.reshape(4, 6)
        assert np.array_equal(_np(lin.weight_mask), mask)
        assert np.array_equal(_np(lin.weight), w * mask) and np.array_equal(_np(lin.weight_orig), w)
        assert isinstance(lin.weight_orig, janus.nn.Parameter) and not isinstance(lin.weight, janus.nn.Parameter)
        assert [n for n, _ in lin.named_parameters()] == ["bias", "weight_orig"]
        assert [n for n, _ in lin.named_buffers()] == ["weight_mask"]
        assert list(lin.state_dict()) == ["bias", "weight_orig", "weight_mask"]
        assert janus._module_hooks == hooks + 1 and prune.is_pruned(lin)
        prune.remove(lin, "weight")
        assert janus._module_hooks == hooks


def test_ln_structured_prunes_the_weakest_channels():
    w = _tie_free((6, 5), seed=1)
    for n, ord_ in ((1, 1), (2, 2), (float("inf"), np.inf)):
        for dim in (0, 1, -1):
            lin = _linear(janus, w)
            prune.ln_structured(lin, "weight", amount=0.4, n=n, dim=dim)
            d = dim % 2
            norms = np.linalg.norm(np.moveaxis(w, d, 0).reshape(w.shape[d], -1), ord=ord_, axis=1)
            k = round(0.4 * w.shape[d])
            keep = np.zeros(w.shape[d], bool)
            keep[np.argsort(-norms)[:w.shape[d] - k]] = True
            mask = np.broadcast_to(keep[:, None] if d == 0 else keep[None, :], w.shape).astype(np.float32)
            assert np.array_equal(_np(lin.weight_mask), mask), (n, dim)
            assert np.array_equal(_np(lin.weight), w * mask)


def test_iterative_pruning_composes_masks():
    w = _tie_free((5, 4), seed=2)
    lin = _linear(janus, w)
    prune.l1_unstructured(lin, "weight", amount=4)
    first = _np(lin.weight_mask)
    prune.ln_structured(lin, "weight", amount=1, n=2, dim=0)
    prune.l1_unstructured(lin, "weight", amount=0.25)  # a quarter of what is left
    hooks = [h for h in lin._forward_pre_hooks.values() if isinstance(h, prune.BasePruningMethod)]
    assert len(hooks) == 1 and isinstance(hooks[0], prune.PruningContainer) and len(hooks[0]) == 3
    assert [type(m).__name__ for m in hooks[0]] == ["L1Unstructured", "LnStructured", "L1Unstructured"]
    mask = _np(lin.weight_mask)
    assert (mask <= first).all()  # nothing pruned comes back
    assert ((mask == 0).all(axis=1)).sum() >= 1  # a whole row went
    assert np.array_equal(_np(lin.weight), w * mask)


def test_random_custom_identity_and_global():
    janus.manual_seed(0)
    w = _tie_free((4, 6), seed=3)
    lin = _linear(janus, w)
    prune.random_unstructured(lin, "weight", amount=7)
    assert (_np(lin.weight_mask) == 0).sum() == 7
    lin = _linear(janus, w)
    prune.random_structured(lin, "weight", amount=2, dim=1)
    m = _np(lin.weight_mask)
    assert sorted(m.sum(axis=0).tolist()) == [0, 0, 4, 4, 4, 4]
    lin = _linear(janus, w)
    prune.custom_from_mask(lin, "weight", mask=janus.tensor(w > 0))
    assert np.array_equal(_np(lin.weight), w * (w > 0))
    lin = _linear(janus, w)
    prune.identity(lin, "weight")
    assert (_np(lin.weight_mask) == 1).all() and np.array_equal(_np(lin.weight), w)
    # global: the smallest over both tensors together
    w2 = _tie_free((3, 4), seed=4) * 0.5
    a, b = _linear(janus, w), _linear(janus, w2)
    prune.global_unstructured([(a, "weight"), (b, "weight")], pruning_method=prune.L1Unstructured, amount=10)
    flat = np.concatenate([np.abs(w).ravel(), np.abs(w2).ravel()])
    mask = np.ones(flat.size, np.float32)
    mask[np.argsort(flat)[:10]] = 0
    assert np.array_equal(_np(a.weight_mask).ravel(), mask[:24])
    assert np.array_equal(_np(b.weight_mask).ravel(), mask[24:])
    a, b = _linear(janus, w), _linear(janus, w2)
    prune.global_unstructured(((m, "weight") for m in (a, b)), pruning_method=prune.RandomUnstructured, amount=0.5)
    assert (_np(a.weight_mask) == 0).sum() + (_np(b.weight_mask) == 0).sum() == 18
    assert isinstance(a._forward_pre_hooks[next(iter(a._forward_pre_hooks))], prune.CustomFromMask)


def test_prune_errors_are_torchs():
    lin = _linear(janus, _tie_free((4, 6)))
    cases = [
        (lambda: prune.L1Unstructured(-1), ValueError,
         "amount=-1 should either be a float in the range [0, 1] or a non-negative integer"),
        (lambda: prune.RandomUnstructured(1.5), ValueError,
         "amount=1.5 should either be a float in the range [0, 1] or a non-negative integer"),
        (lambda: prune.L1Unstructured("a"), TypeError, "Invalid type for amount: a. Must be int or float."),
        (lambda: prune.l1_unstructured(lin, "weight", 100), ValueError,
         "amount=100 should be smaller than the number of parameters to prune=24"),
        (lambda: prune.ln_structured(lin, "bias", 1, 2, 0), ValueError,
         "Structured pruning can only be applied to multidimensional tensors. Found tensor of shape "
         "janus.Size([4]) with 1 dims"),
        (lambda: prune.ln_structured(lin, "weight", 1, 2, 2), IndexError,
         "Invalid index 2 for tensor of size janus.Size([4, 6])"),
        (lambda: prune.remove(lin, "weight"), ValueError,
         f"Parameter 'weight' of module {lin} has to be pruned before pruning can be removed"),
        (lambda: prune.global_unstructured(3, prune.L1Unstructured, amount=1), TypeError,
         "global_unstructured(): parameters is not an Iterable"),
        (lambda: prune.global_unstructured([(lin, "weight")], prune.L1Unstructured, importance_scores=[1], amount=1),
         TypeError, "global_unstructured(): importance_scores must be of type dict"),
        (lambda: prune.PruningContainer(prune.Identity(), 3), AttributeError, None),
    ]
    for f, typ, msg in cases:
        got = _raised(f)
        assert got is not None and got[0] is typ and (msg is None or got[1] == msg), (got, msg)
    # a failed pruning leaves the plain parameter in place
    assert isinstance(lin.weight, janus.nn.Parameter) and list(lin.state_dict()) == ["bias", "weight"]  # as torch
    assert not prune.is_pruned(lin)


def test_pruned_training_keeps_pruned_weights_at_zero():
    janus.manual_seed(0)
    w = _tie_free((8, 6), seed=5)
    lin = _linear(janus, w)
    prune.l1_unstructured(lin, "weight", amount=0.5)
    mask = _np(lin.weight_mask)
    opt = janus.optim.SGD(lin.parameters(), lr=0.1, momentum=0.9, weight_decay=0.01)
    x, y = janus.randn(16, 6), janus.randn(16, 8)
    losses = []
    for _ in range(5):
        loss = ((lin(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        assert (_np(lin.weight_orig.grad)[mask == 0] == 0).all()  # the mask stops the gradient
        opt.step()
        losses.append(loss.item())
    lin(x)  # the hook recomputes weight from the trained orig
    assert losses[-1] < losses[0]
    assert (_np(lin.weight)[mask == 0] == 0).all() and (_np(lin.weight)[mask == 1] != 0).all()
    assert not np.array_equal(_np(lin.weight_orig)[mask == 1], w[mask == 1])  # trained
    orig = lin.weight_orig
    prune.remove(lin, "weight")
    assert type(lin.weight) is janus.nn.Parameter and lin.weight is orig  # torch keeps the Parameter object
    assert lin.weight.requires_grad and [n for n, _ in lin.named_parameters()] == ["bias", "weight"]
    assert list(lin.state_dict()) == ["bias", "weight"] and not lin._buffers
    assert not prune.is_pruned(lin) and not any(lin.__dict__.get("_forward_pre_hooks", {}))
    assert (_np(lin.weight)[mask == 0] == 0).all()
    with pytest.raises(ValueError, match="has to be pruned before pruning can be removed"):
        prune.remove(lin, "weight")


def test_prune_module_is_guarded():
    with pytest.raises(AttributeError, match="janus.nn.utils.prune.l2_unstructured is not supported by janus"):
        prune.l2_unstructured


def test_prune_matches_torch():
    torch = pytest.importorskip("torch")
    import torch.nn.utils.prune as tprune
    w, b = _tie_free((6, 8), seed=6), np.linspace(-1, 1, 6).astype(np.float32)

    def check(jm, tm, name="weight"):
        for suffix in ("", "_orig", "_mask"):
            assert np.array_equal(_np(getattr(jm, name + suffix)), getattr(tm, name + suffix).detach().numpy()), suffix
        assert list(jm.state_dict()) == list(tm.state_dict())
        x = np.random.default_rng(0).standard_normal((3, jm.in_features)).astype(np.float32)
        assert np.allclose(_np(jm(janus.tensor(x))), tm(torch.tensor(x)).detach().numpy(), atol=1e-6)

    for amount in (0, 5, 0.35, 1.0):
        jm, tm = _linear(janus, w, b), _linear(torch, w, b)
        prune.l1_unstructured(jm, "weight", amount)
        tprune.l1_unstructured(tm, "weight", amount)
        check(jm, tm)
    for n in (1, 2):
        for dim in (0, 1, -1):
            for amount in (2, 0.5):
                jm, tm = _linear(janus, w, b), _linear(torch, w, b)
                prune.ln_structured(jm, "weight", amount, n, dim)
                tprune.ln_structured(tm, "weight", amount, n, dim)
                check(jm, tm)
    # iterative: the masks compose as torch's PruningContainer composes them
    jm, tm = _linear(janus, w, b), _linear(torch, w, b)
    for p in (prune, tprune):
        m = jm if p is prune else tm
        p.l1_unstructured(m, "weight", 7)
        p.ln_structured(m, "weight", 1, 2, 0)
        p.l1_unstructured(m, "weight", 0.2)
        p.l1_unstructured(m, "bias", 2)
    check(jm, tm)
    check(jm, tm, "bias")
    # global over three tensors
    w2, b2 = _tie_free((4, 6), seed=7) * 0.7, np.zeros(4, np.float32)
    js = [_linear(janus, w, b), _linear(janus, w2, b2)]
    ts = [_linear(torch, w, b), _linear(torch, w2, b2)]
    prune.global_unstructured([(js[0], "weight"), (js[1], "weight"), (js[0], "bias")],
                              pruning_method=prune.L1Unstructured, amount=20)
    tprune.global_unstructured([(ts[0], "weight"), (ts[1], "weight"), (ts[0], "bias")],
                               pruning_method=tprune.L1Unstructured, amount=20)
    check(js[0], ts[0])
    check(js[1], ts[1])
    check(js[0], ts[0], "bias")
    for jm, tm in zip(js, ts):
        prune.remove(jm, "weight")
        tprune.remove(tm, "weight")
        assert np.array_equal(_np(jm.weight), tm.weight.detach().numpy())
        assert list(jm.state_dict()) == list(tm.state_dict())
    # the same errors, in janus's spelling
    for f in (lambda p, m: p.ln_structured(m, "bias", 1, 2, 0), lambda p, m: p.ln_structured(m, "weight", 1, 2, 5),
              lambda p, m: p.l1_unstructured(m, "weight", 1000), lambda p, m: p.RandomStructured(-2),
              lambda p, m: p.remove(m, "weight"),
              lambda p, m: p.global_unstructured([(m, "weight")], p.RandomStructured, amount=1)):
        jr = _raised(lambda: f(prune, _linear(janus, w, b)))
        tr = _raised(lambda: f(tprune, _linear(torch, w, b)))
        assert jr[0] is tr[0] and jr[1] == _torch_msg(tr[1]), (jr, tr)


PRUNE_SCRIPT = r'''
import sys
import janus, janus.nn as nn, janus.nn.functional as F
import janus.nn.utils.prune as prune
janus.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
prune.l1_unstructured(model[0], "weight", amount=0.5)
opt = janus.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
X, Y = janus.randn(64, 8), janus.randint(0, 4, (64,))
for step in range(int(sys.argv[1])):
    i = (step * 8) % 64
    loss = F.cross_entropy(model(X[i:i + 8]), Y[i:i + 8])
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"{loss.item():.7f}")
'''


@pytest.mark.skipif(not have_optimize(), reason="janus optimize is not built")
def test_pruned_training_records_and_replays_bitwise(tmp_path):
    """The pre-hook's orig * mask is captured like any op: every step of a
    longer run replays as a graph, with eager's losses and weights."""
    from test_replay import replay_whole
    _, rr, s = replay_whole(PRUNE_SCRIPT, ["20"], ["40"], tmp_path, "prune_train.py")
    assert s["segments"] >= 40, s
    assert len(rr.stdout.splitlines()) == 40


# ====================================================== under `janus run`
ALIAS_SCRIPT = """
    import torch
    import torch.version
    import torch.nn.utils.prune as prune
    import torch.nn.functional as F
    from torch.testing import assert_close, make_tensor
    from torch.nn.attention import SDPBackend, sdpa_kernel
    x = torch.FloatTensor([1, 2])
    print(isinstance(x, torch.FloatTensor), isinstance(x, torch.LongTensor), torch.FloatTensor)
    print(torch.LongTensor(2, 3).shape, x.type(torch.DoubleTensor).dtype)
    print(torch.version.__version__ == torch.__version__, torch.version.cuda is None or torch.version.cuda[0].isdigit())
    m = torch.nn.Linear(4, 2)
    prune.l1_unstructured(m, "weight", amount=0.5)
    print(int((m.weight == 0).sum()), prune.is_pruned(m), sorted(m.state_dict()))
    q = make_tensor(1, 2, 3, 4, dtype=torch.float32, device="cpu")
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]):
        out = F.scaled_dot_product_attention(q, q, q)
    assert_close(out, F.scaled_dot_product_attention(q, q, q))
    try:
        assert_close(torch.tensor([1.0]), torch.tensor([2.0]))
    except AssertionError as e:
        print(str(e).splitlines()[0])
"""


@pytest.mark.skipif(not os.path.exists(JANUS), reason=f"{JANUS} not built")
def test_torch_spelled_script_under_janus_run(tmp_path):
    s = tmp_path / "train.py"
    s.write_text(textwrap.dedent(ALIAS_SCRIPT))
    e = dict(os.environ, JANUS_BUILD_DIR=BUILD,
             PYTHONPATH=os.path.join(ROOT, "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for k in ("JANUS_RECORD_DB", "JANUS_RECORD_RUN", "JANUS_REPLAY_DB", "JANUS_REPLAY_RUN", "JANUS_PYTHON"):
        e.pop(k, None)
    p = subprocess.run([JANUS, "run", sys.executable, str(s)], capture_output=True, text=True, cwd=tmp_path,
                       env=e, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [
        "True False <class 'torch.FloatTensor'>",
        "janus.Size([2, 3]) janus.float64",
        "True True",
        "4 True ['bias', 'weight_mask', 'weight_orig']",
        "Tensor-likes are not close!",
    ], p.stdout
