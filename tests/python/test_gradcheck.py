"""Finite-difference gradient checks in float64 for every op of the table
that has a derivative (runtime/derivatives.c).  The test fails if an op
with a derivative has no case here, or if an op without one is missing
from the explicit list of underivable ops.

Each case: inputs (numpy), attrs, and which inputs to differentiate.  The
analytic gradient of sum(out * v) (random cotangent v) from the C autograd
engine is compared with central differences."""
import numpy as np
import pytest

from janus import _C
from opcheck import jn, npy

R = np.random.default_rng(7)


def f64(*shape, lo=-1.0, hi=1.0):
    return R.uniform(lo, hi, size=shape)


def pos(*shape):
    return R.uniform(0.5, 2.0, size=shape)


def idx(hi, *shape):
    return R.integers(0, hi, size=shape).astype(np.int64)


def spd(n):
    a = R.uniform(-1, 1, size=(n, n))
    return a @ a.T + n * np.eye(n)


def nonzero(*shape):
    a = R.uniform(0.3, 1.5, size=shape)
    return a * np.where(R.random(shape) < 0.5, -1, 1)


F = "float64"
DT = _C.dtype_names.index

# op -> list of (inputs, attrs, differentiable input positions)
CASES = {
    "add": [([f64(3, 4), f64(4)], (2.0,), [0, 1]), ([f64(2, 1, 3), f64(1, 4, 1)], (1.0,), [0, 1])],
    "sub": [([f64(3, 4), f64(3, 1)], (0.5,), [0, 1])],
    "mul": [([f64(3, 4), f64(4)], (), [0, 1])],
    "div": [([f64(3, 4), nonzero(3, 4)], (0,), [0, 1]), ([f64(3), nonzero(3)], (2,), [0, 1])],
    # a tensor exponent, and the exponents eager computes without libm's pow
    # (x*x, sqrt, ...: k_ewmath.h's jn_ew_fpow), whose derivative is a pow by e - 1
    "pow": [([pos(3, 4), f64(3, 4)], (), [0, 1])] + [([pos(3, 4), np.array(e)], (), [0, 1])
                                                     for e in (2.0, 3.0, 0.5, -0.5, -1.0, -2.0, 1.0, 0.0)],
    "remainder": [([f64(3, 4) * 3, nonzero(4)], (), [0, 1])],
    "maximum": [([f64(3, 4), f64(3, 4)], (), [0, 1])],
    "minimum": [([f64(3, 4), f64(4)], (), [0, 1])],
    "atan2": [([f64(3, 4), nonzero(3, 4)], (), [0, 1])],
    "neg": [([f64(3, 4)], (), [0])],
    "exp": [([f64(3, 4)], (), [0])],
    "log": [([pos(3, 4)], (), [0])],
    "log1p": [([pos(3, 4)], (), [0])],
    "expm1": [([f64(3, 4)], (), [0])],
    "sqrt": [([pos(3, 4)], (), [0])],
    "rsqrt": [([pos(3, 4)], (), [0])],
    "abs": [([nonzero(3, 4)], (), [0])],
    "sign": [([nonzero(3, 4)], (), [0])],
    "reciprocal": [([nonzero(3, 4)], (), [0])],
    "tanh": [([f64(3, 4)], (), [0])],
    "sigmoid": [([f64(3, 4)], (), [0])],
    "relu": [([nonzero(3, 4)], (), [0])],
    "gelu": [([f64(3, 4) * 2], (0,), [0]), ([f64(3, 4) * 2], (1,), [0])],
    "silu": [([f64(3, 4) * 2], (), [0])],
    "sin": [([f64(3, 4)], (), [0])],
    "cos": [([f64(3, 4)], (), [0])],
    "erf": [([f64(3, 4)], (), [0])],
    "floor": [([f64(3, 4) * 3 + 0.1], (), [0])],
    "ceil": [([f64(3, 4) * 3 + 0.1], (), [0])],
    "round": [([f64(3, 4) * 3 + 0.1], (), [0])],
    "clamp": [([f64(4, 5), ], (-0.5, 0.5, 1, 1), [0]), ([f64(4, 5)], (-0.3, 0, 1, 0), [0])],
    "where": [([R.random((3, 4)) < 0.5, f64(3, 4), f64(4)], (), [1, 2])],
    "masked_fill": [([f64(3, 4), R.random((4,)) < 0.5], (2.5,), [0])],
    "cast": [([f64(3, 4)], (DT("float64"),), [0])],
    "copy_": [([f64(3, 4), f64(4)], (), [1])],
    "fill_": [([f64(3, 4)], (1.5,), [0])],
    "sum": [([f64(3, 4, 5)], ([1, 2], False, -1), [0]), ([f64(3, 4)], ([], True, -1), [0])],
    "mean": [([f64(3, 4, 5)], ([0, 2], True, -1), [0]), ([f64(3, 4)], ([], False, -1), [0])],
    "prod": [([nonzero(3, 4)], ([1], False, -1), [0]),
             ([np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 2.0], [1.5, 2.0, -1.0]])], ([1], False, -1), [0])],
    "amax": [([f64(3, 4, 5)], ([1], False), [0]), ([f64(3, 4)], ([], True), [0])],
    "amin": [([f64(3, 4, 5)], ([0, 2], False), [0])],
    "max_dim": [([f64(3, 4, 5)], (1, False), [0]), ([f64(3, 4)], (0, True), [0])],
    "min_dim": [([f64(3, 4, 5)], (-1, False), [0])],
    "var": [([f64(3, 4, 5)], ([1], 1.0, False), [0]), ([f64(3, 4)], ([], 0.0, True), [0])],
    "sort": [([f64(3, 5)], (1, False), [0]), ([f64(4, 3, 2)], (0, True), [0]), ([f64(6)], (-1, False), [0])],
    "std": [([f64(3, 4, 5)], ([2], 1.0, True), [0])],
    "logsumexp": [([f64(3, 4, 5)], ([1, 2], False), [0])],
    "softmax": [([f64(3, 4, 5)], (1,), [0])],
    "log_softmax": [([f64(3, 5)], (-1,), [0])],
    "mm": [([f64(3, 4), f64(4, 5)], (), [0, 1])],
    "bmm": [([f64(2, 3, 4), f64(2, 4, 5)], (), [0, 1])],
    "matmul": [([f64(2, 3, 4), f64(4, 5)], (), [0, 1]), ([f64(4), f64(3, 4, 2)], (), [0, 1]),
               ([f64(4), f64(4)], (), [0, 1]), ([f64(2, 1, 3, 4), f64(4, 5)], (), [0, 1]),
               ([f64(3, 4), f64(4)], (), [0, 1])],
    "addmm": [([f64(5), f64(3, 4), f64(4, 5)], (0.5, 2.0), [0, 1, 2])],
    "linear": [([f64(2, 3, 4), f64(5, 4), f64(5)], (), [0, 1, 2]), ([f64(4), f64(5, 4)], (), [0, 1])],
    "conv2d": [([f64(2, 4, 6, 5), f64(6, 2, 3, 2), f64(6)], ([2, 1], [1, 0], [1, 2], 2), [0, 1, 2]),
               ([f64(3, 5, 5), f64(2, 3, 3, 3)], ([1], [1], [1], 1), [0, 1])],
    # conv2d's input gradient is conv_transpose2d (nn.ConvTranspose2d): differentiable in both inputs
    "conv2d_input_grad": [([f64(2, 6, 3, 3), f64(6, 2, 3, 2)], ([2, 4, 6, 5], [2, 1], [1, 0], [1, 2], 2), [0, 1]),
                          ([f64(1, 3, 4, 4), f64(3, 2, 2, 2)], ([1, 2, 9, 9], [2, 2], [0, 0], [1, 1], 1), [0, 1])],
    "max_pool2d": [([f64(2, 3, 6, 5)], ([2, 2], [2, 1], [1, 0], [1, 1], False), [0])],
    "max_pool2d_backward": [([f64(2, 3, 4, 3), idx(30, 2, 3, 4, 3)], ([2, 3, 6, 5],), [0])],
    "avg_pool2d": [([f64(2, 3, 6, 5)], ([3, 2], [2, 2], [1, 1], True, False), [0])],
    "adaptive_avg_pool2d": [([f64(2, 3, 7, 5)], ([3, 2],), [0])],
    "view": [([f64(3, 4)], ([2, 6],), [0])],
    "permute": [([f64(2, 3, 4)], ([2, 0, 1],), [0])],
    "transpose": [([f64(2, 3, 4)], (0, 2), [0])],
    "squeeze": [([f64(3, 1, 4)], ([1],), [0])],
    "unsqueeze": [([f64(3, 4)], (1,), [0])],
    "expand": [([f64(3, 1)], ([2, 3, 4],), [0])],
    "slice": [([f64(6, 4)], (0, 1, 5, 2), [0])],
    "select": [([f64(3, 4)], (1, 2), [0])],
    "slice_scatter": [([f64(6, 4), f64(2, 4)], (0, 1, 5, 2), [0, 1])],
    "select_scatter": [([f64(3, 4), f64(3)], (1, 2), [0, 1])],
    "clone": [([f64(3, 4)], (), [0])],
    "cat": [([f64(2, 3), f64(4, 3)], (0,), [0, 1])],
    "stack": [([f64(2, 3), f64(2, 3)], (1,), [0, 1])],
    "index_select": [([f64(5, 3), np.array([0, 2, 2, 4])], (0,), [0])],
    "gather": [([f64(3, 4), idx(4, 3, 2)], (1,), [0])],
    "scatter": [([f64(3, 5), np.array([[0, 1], [2, 3], [4, 0]]), f64(3, 2)], (1,), [0, 2])],
    "scatter_add": [([f64(3, 5), idx(5, 3, 4), f64(3, 4)], (1,), [0, 2])],
    "embedding": [([f64(6, 3), np.array([[1, 2], [2, 5]])], (-1,), [0]),
                  ([f64(6, 3), np.array([1, 0, 0, 3])], (0,), [0])],
    "index": [([f64(4, 5), np.array([0, 3, 3])], ([1],), [0]),
              ([f64(4, 5, 2), np.array([1, 2]), np.array([0, 4])], ([1, 1],), [0])],
    "index_put_": [([f64(4, 5), f64(3, 5), np.array([0, 2, 3])], ([1], False), [0, 1]),
                   ([f64(4, 5), f64(2, 5), np.array([1, 1])], ([1], True), [0, 1])],
    "uniform_": [([f64(3, 4)], (0.0, 1.0), [0])],
    "normal_": [([f64(3, 4)], (0.0, 1.0), [0])],
    # first output only (h'); test_ops_fused.py differentiates through every output
    "lstm_cell": [([f64(3, 8) * 2, f64(3, 8) * 2, f64(3, 2)], (), [0, 1, 2])],
    "gru_cell": [([f64(3, 6) * 2, f64(3, 6) * 2, f64(3, 2)], (), [0, 1, 2])],
    # the LAPACK ops at well-conditioned matrices (3 on the diagonal), batched and not
    "linalg_inv": [([f64(3, 3) + 3 * np.eye(3)], (), [0]), ([f64(2, 3, 3) + 3 * np.eye(3)], (), [0])],
    "linalg_solve": [([f64(3, 3) + 3 * np.eye(3), f64(3, 2)], (), [0, 1]),
                     ([f64(2, 3, 3) + 3 * np.eye(3), f64(2, 3, 1)], (), [0, 1])],
    "linalg_det": [([f64(3, 3) + 3 * np.eye(3)], (), [0]), ([f64(2, 3, 3) - 3 * np.eye(3)], (), [0])],
    "linalg_slogdet": [([f64(3, 3) + 3 * np.eye(3)], (), [0]), ([f64(2, 3, 3) - 3 * np.eye(3)], (), [0])],
    "linalg_cholesky_ex": [([spd(3)], (0, 0), [0]), ([np.stack([spd(3), spd(3)])], (1, 0), [0])],
    "linalg_solve_triangular": [([f64(3, 3) + 3 * np.eye(3), f64(3, 2)], (0, 0), [0, 1]),
                                ([f64(2, 3, 3) + 3 * np.eye(3), f64(2, 3, 1)], (1, 1), [0, 1])],
    "linalg_eigh": [([spd(4)], (0,), [0]), ([np.stack([spd(3), spd(3)])], (1,), [0])],
    "linalg_svd": [([f64(4, 3)], (0,), [0]), ([f64(2, 2, 3)], (1,), [0])],
    "linalg_qr": [([f64(4, 3)], (0,), [0]), ([f64(2, 3, 3) + np.eye(3)], (1,), [0]), ([f64(3, 5)], (0,), [0])],
    "linalg_pinv": [([f64(4, 3)], (0.0, 1e-12), [0]), ([f64(2, 2, 3)], (0.0, 1e-12), [0])],
}

# Ops that read one triangle of a symmetric input: the formula's gradient is the
# symmetric one (torch's), the central differences see the read triangle only, so
# they are compared symmetrized: (N + N^T) / 2.
SYMMETRIC = {"linalg_cholesky_ex", "linalg_eigh"}

# Ops that have inputs, are differentiable in principle, but have no formula.
UNDERIVABLE = {"as_strided", "conv2d_weight_grad", "avg_pool2d_backward",
               "adaptive_avg_pool2d_backward", "lstm_cell_backward", "gru_cell_backward"}


OVERWRITES = {"fill_", "uniform_", "normal_"}


def _table():
    rows = []
    for n in _C.op_names():
        info = _C.op_info(n)
        if info["nin"] == 0 and not info["flags"] & _C.JN_F_VARIADIC:
            continue  # factories
        if info["flags"] & (_C.JN_F_NOGRAD | _C.JN_F_COLL):
            continue  # collectives need a process group: test_distributed.py checks all_reduce_'s on 2 ranks
        rows.append(n)
    return rows


def test_every_differentiable_op_is_checked():
    table = _table()
    with_formula = {n for n in table if _C._has_derivative(n)}
    missing = sorted(with_formula - set(CASES))
    assert not missing, f"ops with a derivative but no gradient check: {missing}"
    without = {n for n in table if not _C._has_derivative(n)}
    assert without == UNDERIVABLE, f"ops without a derivative changed: {sorted(without ^ UNDERIVABLE)}"


def _run(name, arrays, attrs):
    ts = [jn(np.ascontiguousarray(a)) for a in arrays]
    return ts, _C._op(name, ts, attrs)


def _first(out):
    return out[0] if isinstance(out, tuple) else out


@pytest.mark.parametrize("name,case", [(n, c) for n, cs in CASES.items() for c in cs],
                         ids=lambda x: x if isinstance(x, str) else "")
def test_gradient_matches_finite_differences(name, case):
    arrays, attrs, diff = case
    arrays = [np.array(a) for a in arrays]
    inplace = bool(_C.op_info(name)["flags"] & _C.JN_F_INPLACE)
    eps = 1e-6

    def value(arrs):
        _, out = _run(name, [a.copy() for a in arrs], attrs)
        return npy(_first(out))

    base = value(arrays)
    v = R.uniform(-1, 1, size=base.shape)
    if name in OVERWRITES:
        v = np.ones(base.shape)

    # analytic: in-place ops differentiate a clone-like non-leaf (x*1) of the
    # inputs, since leaves that require grad may not be modified in place
    leaves = [jn(np.ascontiguousarray(a)) for a in arrays]
    for i in diff:
        _C._set_requires_grad(leaves[i], True)
    ins = list(leaves)
    if inplace:
        ins = [_C._op("mul", [t, 1.0], ()) if i in diff or i == 0 else t for i, t in enumerate(leaves)]
    out = _first(_C._op(name, ins, attrs))
    grads = _C._autograd_grad([out], [jn(v)], [leaves[i] for i in diff], False, True)
    for gi, i in zip(grads, diff):
        if name in OVERWRITES:  # the output doesn't depend on the input's values
            assert gi is not None and not npy(gi).any(), f"{name}: gradient of an overwritten input must be 0"
            continue
        num = np.zeros_like(arrays[i])
        flat = arrays[i].reshape(-1)
        for k in range(flat.size):
            a_plus = [a.copy() for a in arrays]
            a_minus = [a.copy() for a in arrays]
            a_plus[i].reshape(-1)[k] += eps
            a_minus[i].reshape(-1)[k] -= eps
            num.reshape(-1)[k] = ((value(a_plus) * v).sum() - (value(a_minus) * v).sum()) / (2 * eps)
        if name in SYMMETRIC:
            num = (num + np.swapaxes(num, -1, -2)) / 2
        if name == "embedding" and attrs[0] >= 0:
            num[attrs[0]] = 0  # by definition the padding row receives no gradient
        got = np.zeros_like(num) if gi is None else npy(gi)
        np.testing.assert_allclose(got, num, rtol=1e-5, atol=1e-6,
                                   err_msg=f"d {name} / d input {i}")
