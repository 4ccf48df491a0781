"""janus.nn.init: in-place initializers with PyTorch's formulas, drawing from
the default Philox generator (so janus.manual_seed makes them reproducible)."""
import math

import janus


def calculate_gain(nonlinearity, param=None):
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    fan_in, fan_out = tensor.shape[1], tensor.shape[0]
    rf = 1
    for s in tensor.shape[2:]:
        rf *= s
    return fan_in * rf, fan_out * rf


def uniform_(tensor, a=0.0, b=1.0):
    with janus.no_grad():
        return tensor.uniform_(a, b)


def normal_(tensor, mean=0.0, std=1.0):
    with janus.no_grad():
        return tensor.normal_(mean, std)


def constant_(tensor, val):
    with janus.no_grad():
        return tensor.fill_(val)


def zeros_(tensor):
    return constant_(tensor, 0.0)


def ones_(tensor):
    return constant_(tensor, 1.0)


def xavier_uniform_(tensor, gain=1.0):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    a = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a)


def xavier_normal_(tensor, gain=1.0):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)))


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    if 0 in tuple(tensor.shape):
        return tensor
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan = fan_in if mode == "fan_in" else fan_out
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    fan = fan_in if mode == "fan_in" else fan_out
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan))


def eye_(tensor):
    """The identity matrix (2-D tensors only)."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with janus.no_grad():
        return tensor.copy_(janus.eye(tensor.shape[0], tensor.shape[1], dtype=tensor.dtype))


def _gram_schmidt(a):
    """Q of a = QR (n >= m columns) with R's diagonal positive: classical
    Gram-Schmidt, each column orthogonalized twice (stable to rounding), in
    float64.  Equals PyTorch's sign-corrected linalg.qr Q."""
    n, m = a.shape
    cols = []
    for j in range(m):
        v = a[:, j]
        if cols:
            q = janus.stack(cols, 1)
            v = v - q.matmul(q.t().matmul(v))
            v = v - q.matmul(q.t().matmul(v))
        cols.append(v / v.norm())
    return janus.stack(cols, 1)


def orthogonal_(tensor, gain=1.0, generator=None):
    """A (semi-)orthogonal matrix (Saxe et al.): the Q of the QR of a standard
    normal matrix of the tensor's shape flattened to (rows, rest), times gain."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with janus.no_grad():
        flat = janus.randn(rows, cols, dtype=janus.float64, generator=generator)
        if rows < cols:
            flat = flat.t()
        q = _gram_schmidt(flat)
        if rows < cols:
            q = q.t()
        tensor.copy_(q.reshape(tensor.shape) * gain)
    return tensor


def _erfinv(y):
    """erfinv in float64: Giles' approximation, then two Newton steps on erf."""
    w = -((1.0 - y) * (1.0 + y)).log()
    wc = w - 2.5
    p1 = 2.81022636e-08
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
              0.246640727, 1.50140941):
        p1 = c + p1 * wc
    wt = w.sqrt() - 3.0
    p2 = -0.000200214257
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
              1.00167406, 2.83297682):
        p2 = c + p2 * wt
    x = janus.where(w < 5.0, p1, p2) * y
    for _ in range(2):
        x = x - (x.erf() - y) / ((-x * x).exp() * (2.0 / math.sqrt(math.pi)))
    return x


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """N(mean, std^2) truncated to [a, b], by inverting the normal CDF of a
    uniform draw between the bounds' CDF values (PyTorch's method)."""
    def norm_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    lo, hi = norm_cdf((a - mean) / std), norm_cdf((b - mean) / std)
    with janus.no_grad():
        u = janus.empty(tuple(tensor.shape), dtype=janus.float64).uniform_(2 * lo - 1, 2 * hi - 1,
                                                                           generator=generator)
        x = _erfinv(u) * (std * math.sqrt(2.0)) + mean
        return tensor.copy_(x.clamp(min=a, max=b))


# torch's deprecated spellings
xavier_uniform = xavier_uniform_
xavier_normal = xavier_normal_
kaiming_uniform = kaiming_uniform_
kaiming_normal = kaiming_normal_
uniform = uniform_
normal = normal_
constant = constant_
orthogonal = orthogonal_
