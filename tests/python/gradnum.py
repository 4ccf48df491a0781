"""Finite-difference gradient checks for composed functions (nn layers,
janus/_compose.py): the analytic gradient of sum(f(inputs) * v) through
janus autograd against central differences in float64."""
import numpy as np

import janus


def check_grad(f, arrays, wrt=None, eps=1e-6, rtol=1e-5, atol=1e-6, seed=0):
    """f takes janus tensors and returns a tensor (or a tuple; the first is
    checked).  arrays: float64 numpy inputs; wrt: indices to check (all)."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    wrt = range(len(arrays)) if wrt is None else wrt

    def first(out):
        return out[0] if isinstance(out, tuple) else out

    def value(arrs):
        with janus.no_grad():
            return first(f(*[janus.tensor(a) for a in arrs])).numpy().astype(np.float64)

    base = value(arrays)
    v = np.random.default_rng(seed).uniform(-1, 1, size=base.shape)
    leaves = [janus.tensor(a, requires_grad=i in wrt) for i, a in enumerate(arrays)]
    out = first(f(*leaves))
    (out * janus.tensor(v)).sum().backward()
    for i in wrt:
        num = np.zeros_like(arrays[i])
        for k in range(arrays[i].size):
            plus = [a.copy() for a in arrays]
            minus = [a.copy() for a in arrays]
            plus[i].reshape(-1)[k] += eps
            minus[i].reshape(-1)[k] -= eps
            num.reshape(-1)[k] = ((value(plus) - value(minus)) * v).sum() / (2 * eps)
        got = leaves[i].grad
        got = np.zeros_like(num) if got is None else got.numpy()
        np.testing.assert_allclose(got, num, rtol=rtol, atol=atol, err_msg=f"d out / d input {i}")
