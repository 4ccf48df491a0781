"""The layers, functions and initializers janus.nn gained for PyTorch
scripts: activations, channel dropout, 1-d and transposed convolutions,
pixel shuffle, group/RMS norm, the smooth-L1/Huber/BCE/KL losses, nn.init's
orthogonal_/trunc_normal_/eye_, DataParallel and the torch.nn.modules
paths -- against numpy references, finite differences and PyTorch (copied
weights) where it imports."""
import math
import os

import numpy as np
import pytest

import janus
import janus.nn as nn
import janus.nn.functional as F
from gradnum import check_grad

R = np.random.default_rng(31)


def t(a, **kw):
    return janus.tensor(np.ascontiguousarray(a), **kw)


def softplus(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)


SELU_A, SELU_S = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
ACTIVATIONS = [
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
    ("elu", lambda x: F.elu(x, 1.5), lambda x: np.where(x > 0, x, 1.5 * np.expm1(x))),
    ("selu", F.selu, lambda x: SELU_S * np.where(x > 0, x, SELU_A * np.expm1(x))),
    ("celu", lambda x: F.celu(x, 0.7), lambda x: np.where(x > 0, x, 0.7 * np.expm1(x / 0.7))),
    ("relu6", F.relu6, lambda x: np.clip(x, 0, 6)),
    ("hardtanh", lambda x: F.hardtanh(x, -0.5, 2.0), lambda x: np.clip(x, -0.5, 2.0)),
    ("softplus", lambda x: F.softplus(x, 2.0, 10.0),
     lambda x: np.where(2 * x > 10, x, np.log1p(np.exp(np.minimum(2 * x, 10))) / 2)),
    ("mish", F.mish, lambda x: x * np.tanh(softplus(x))),
    ("hardsigmoid", F.hardsigmoid, lambda x: np.clip(x + 3, 0, 6) / 6),
    ("hardswish", F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    ("logsigmoid", F.logsigmoid, lambda x: -softplus(-x)),
    ("softsign", F.softsign, lambda x: x / (1 + np.abs(x))),
    ("tanhshrink", F.tanhshrink, lambda x: x - np.tanh(x)),
    ("softshrink", F.softshrink, lambda x: np.where(x > 0.5, x - 0.5, np.where(x < -0.5, x + 0.5, 0))),
    ("hardshrink", F.hardshrink, lambda x: np.where(np.abs(x) > 0.5, x, 0)),
    ("threshold", lambda x: F.threshold(x, 0.1, -2.0), lambda x: np.where(x > 0.1, x, -2.0)),
    ("glu", F.glu, lambda x: x[..., :3] / (1 + np.exp(-x[..., 3:]))),
    ("softmin", lambda x: F.softmin(x, 1), lambda x: np.exp(-x) / np.exp(-x).sum(1, keepdims=True)),
    ("prelu", lambda x: F.prelu(x, t(np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6]))),
     lambda x: np.where(x > 0, x, np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])[None, :] * x)),
]


@pytest.mark.parametrize("name,fn,ref", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activation_values_and_gradients(name, fn, ref):
    x = R.uniform(-4, 4, size=(4, 6))
    x[np.abs(x - np.round(x)) < 1e-3] += 0.01  # keep clear of the kinks for finite differences
    np.testing.assert_allclose(fn(t(x)).numpy(), ref(x), rtol=1e-12, atol=1e-12)
    x[np.abs(np.abs(x) - 0.5) < 1e-3] += 0.01
    check_grad(fn, [x])


def test_activations_stay_finite_for_large_inputs():
    x = t(np.array([-1000.0, -50.0, 0.0, 50.0, 1000.0]), requires_grad=True)
    for f in (F.elu, F.selu, F.softplus, F.mish, F.logsigmoid, F.celu):
        x.grad = None
        y = f(x)
        y.sum().backward()
        assert np.isfinite(y.detach().numpy()).all() and np.isfinite(x.grad.numpy()).all(), f.__name__


def test_activation_modules_and_inplace():
    x = janus.randn(3, 4)
    for mod, fn in ((nn.LeakyReLU(0.3), lambda v: F.leaky_relu(v, 0.3)), (nn.ELU(), F.elu), (nn.SELU(), F.selu),
                    (nn.ReLU6(), F.relu6), (nn.Hardswish(), F.hardswish), (nn.Mish(), F.mish),
                    (nn.Softplus(), F.softplus), (nn.GLU(), F.glu), (nn.PReLU(), lambda v: F.prelu(v, janus.tensor([0.25])))):
        np.testing.assert_array_equal(mod(x).numpy(), fn(x).numpy())
    y = x.clone()
    out = F.leaky_relu(y, 0.1, inplace=True)
    assert out is y and np.allclose(y.numpy(), np.where(x.numpy() > 0, x.numpy(), 0.1 * x.numpy()))
    # with autograd on the input, inplace gives the result as a new tensor and gradients flow
    z = x.clone().requires_grad_()
    nn.LeakyReLU(0.1, inplace=True)(z).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), np.where(x.numpy() > 0, 1.0, 0.1))


# ------------------------------------------------------------------ dropout
def test_channel_dropout_zeroes_whole_channels():
    janus.manual_seed(0)
    x = janus.ones(64, 32, 3, 3)
    y = nn.Dropout2d(0.25)(x).numpy()
    per_channel = y.reshape(64, 32, 9)
    assert np.all((per_channel == 0).all(-1) | (per_channel == per_channel[..., :1]).all(-1))
    np.testing.assert_allclose(np.unique(y), [0.0, 1 / 0.75], rtol=1e-6)
    assert abs((per_channel[..., 0] == 0).mean() - 0.25) < 0.03
    y1 = F.dropout1d(janus.ones(8, 16, 5), 0.5).numpy()
    assert np.all((y1 == 0).all(-1) | (y1 == 2.0).all(-1))
    y3 = nn.Dropout3d(0.5)(janus.ones(4, 6, 2, 2, 2)).numpy().reshape(4, 6, 8)
    assert np.all((y3 == 0).all(-1) | (y3 == 2.0).all(-1))
    m = nn.Dropout2d(0.5).eval()
    assert m(x) is x
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout2d(1.5)


# --------------------------------------------------------------- convolutions
def conv_transpose_ref(x, w, b, stride, padding, output_padding, dilation, groups):
    """Scatter each input pixel times the kernel into the output (the definition)."""
    n, cin, h, wd = x.shape
    _, coutg, kh, kw = w.shape
    cout = coutg * groups
    ho = (h - 1) * stride[0] - 2 * padding[0] + dilation[0] * (kh - 1) + output_padding[0] + 1
    wo = (wd - 1) * stride[1] - 2 * padding[1] + dilation[1] * (kw - 1) + output_padding[1] + 1
    full = np.zeros((n, cout, ho + 2 * padding[0] + kh * dilation[0], wo + 2 * padding[1] + kw * dilation[1]))
    cing = cin // groups
    for g in range(groups):
        for ci in range(g * cing, (g + 1) * cing):
            for i in range(h):
                for j in range(wd):
                    for a in range(kh):
                        for c in range(kw):
                            full[:, g * coutg:(g + 1) * coutg, i * stride[0] + a * dilation[0],
                                 j * stride[1] + c * dilation[1]] += x[:, ci, i, j, None] * w[ci, :, a, c]
    out = full[:, :, padding[0]:padding[0] + ho, padding[1]:padding[1] + wo]
    return out + (b[None, :, None, None] if b is not None else 0)


@pytest.mark.parametrize("stride,padding,output_padding,dilation,groups", [
    ((1, 1), (0, 0), (0, 0), (1, 1), 1), ((2, 2), (1, 1), (1, 1), (1, 1), 1), ((2, 1), (0, 1), (1, 0), (1, 2), 2),
    ((3, 3), (1, 0), (2, 0), (1, 1), 1)])
def test_conv_transpose2d_against_the_definition(stride, padding, output_padding, dilation, groups):
    x = R.standard_normal((2, 4, 3, 4))
    w = R.standard_normal((4, 3, 3, 2))
    b = R.standard_normal(3 * groups)
    got = F.conv_transpose2d(t(x), t(w), t(b), stride, padding, output_padding, groups, dilation)
    want = conv_transpose_ref(x, w, b, stride, padding, output_padding, dilation, groups)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-10)
    check_grad(lambda a, c: F.conv_transpose2d(a, c, None, stride, padding, output_padding, groups, dilation),
               [x[:1, :, :2, :3], w])


def test_conv_transpose_modules():
    janus.manual_seed(0)
    m = nn.ConvTranspose2d(3, 6, 4, stride=2, padding=1)
    assert tuple(m.weight.shape) == (3, 6, 4, 4) and tuple(m(janus.randn(2, 3, 5, 5)).shape) == (2, 6, 10, 10)
    assert tuple(m(janus.randn(2, 3, 5, 5), output_size=(11, 11)).shape) == (2, 6, 11, 11)
    assert tuple(m(janus.randn(3, 5, 5)).shape) == (6, 10, 10)
    with pytest.raises(ValueError, match="output size"):
        m(janus.randn(2, 3, 5, 5), output_size=(14, 14))
    m1 = nn.ConvTranspose1d(3, 2, 3, stride=2)
    assert tuple(m1.weight.shape) == (3, 2, 3) and tuple(m1(janus.randn(4, 3, 7)).shape) == (4, 2, 15)
    bound = 1 / math.sqrt(6 * 16)  # fan_in of a transposed weight is out/groups * k*k, as in PyTorch
    assert np.abs(m.bias.detach().numpy()).max() <= bound


def test_conv1d_is_conv2d_over_a_row():
    x, w, b = R.standard_normal((2, 4, 9)), R.standard_normal((6, 2, 3)), R.standard_normal(6)
    got = F.conv1d(t(x), t(w), t(b), stride=2, padding=1, dilation=2, groups=2).numpy()
    want = F.conv2d(t(x[:, :, None]), t(w[:, :, None]), t(b), (1, 2), (0, 1), (1, 2), 2).numpy()[:, :, 0]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    m = nn.Conv1d(4, 6, 3, padding="same")
    assert tuple(m.weight.shape) == (6, 4, 3) and tuple(m(janus.randn(2, 4, 9)).shape) == (2, 6, 9)
    assert tuple(m(janus.randn(4, 9)).shape) == (6, 9)
    check_grad(lambda a, c: F.conv1d(a, c, None, 2, 1), [x[:1], R.standard_normal((3, 4, 3))])


def test_pools_1d():
    x = R.standard_normal((2, 3, 10))
    np.testing.assert_allclose(F.max_pool1d(t(x), 2).numpy(), x.reshape(2, 3, 5, 2).max(-1))
    np.testing.assert_allclose(nn.AvgPool1d(2)(t(x)).numpy(), x.reshape(2, 3, 5, 2).mean(-1), rtol=1e-12)
    np.testing.assert_allclose(nn.AdaptiveAvgPool1d(1)(t(x)).numpy(), x.mean(-1, keepdims=True), rtol=1e-12)
    v, i = F.max_pool1d(t(x), 5, return_indices=True)
    np.testing.assert_array_equal(i.numpy(), x.reshape(2, 3, 2, 5).argmax(-1) + [0, 5])


# ----------------------------------------------------------- pixel shuffle
def test_pixel_shuffle_and_unshuffle():
    x = R.standard_normal((2, 12, 3, 4))
    y = nn.PixelShuffle(2)(t(x)).numpy()
    assert y.shape == (2, 3, 6, 8)
    for c in range(3):
        for i in range(2):
            for j in range(2):
                np.testing.assert_array_equal(y[:, c, i::2, j::2], x[:, c * 4 + i * 2 + j])
    np.testing.assert_array_equal(nn.PixelUnshuffle(2)(t(y)).numpy(), x)
    assert tuple(F.pixel_shuffle(t(x[0]), 2).shape) == (3, 6, 8)
    with pytest.raises(RuntimeError, match="divisible"):
        F.pixel_shuffle(janus.ones(1, 5, 2, 2), 2)


# ---------------------------------------------------------------- norms
def test_group_norm():
    x = R.standard_normal((2, 6, 3, 4))
    w, b = R.standard_normal(6), R.standard_normal(6)
    g = x.reshape(2, 3, -1)
    want = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
    want = want * w[None, :, None, None] + b[None, :, None, None]
    np.testing.assert_allclose(F.group_norm(t(x), 3, t(w), t(b)).numpy(), want, rtol=1e-10, atol=1e-12)
    m = nn.GroupNorm(3, 6)
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"]
    check_grad(lambda a, c: F.group_norm(a, 2, c), [x[:1, :4, :2, :2], w[:4]])


def test_rms_norm():
    x, w = R.standard_normal((3, 5)), R.standard_normal(5)
    want = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(F.rms_norm(t(x), [5], t(w), 1e-6).numpy(), want, rtol=1e-10)
    assert tuple(nn.RMSNorm(5)(t(x.astype(np.float32))).shape) == (3, 5)


def test_normalize_and_cosine_similarity():
    x, y = R.standard_normal((4, 3)), R.standard_normal((4, 3))
    x[0] = 0.0
    np.testing.assert_allclose(F.normalize(t(x), dim=1).numpy(),
                               x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12))
    cs = (x * y).sum(1) / np.sqrt(np.maximum((x * x).sum(1) * (y * y).sum(1), 1e-16))
    np.testing.assert_allclose(F.cosine_similarity(t(x), t(y)).numpy(), cs, rtol=1e-12)
    z = t(x, requires_grad=True)
    F.normalize(z).sum().backward()  # the zero row's gradient is finite
    assert np.isfinite(z.grad.numpy()).all()


# ---------------------------------------------------------------- losses
def test_losses_against_numpy():
    x, y = R.standard_normal((5, 4)), R.standard_normal((5, 4))
    d = np.abs(x - y)
    np.testing.assert_allclose(F.smooth_l1_loss(t(x), t(y), beta=0.5).numpy(),
                               np.where(d < 0.5, 0.5 * d * d / 0.5, d - 0.25).mean(), rtol=1e-12)
    np.testing.assert_allclose(nn.SmoothL1Loss(reduction="sum")(t(x), t(y)).numpy(),
                               np.where(d < 1, 0.5 * d * d, d - 0.5).sum(), rtol=1e-12)
    np.testing.assert_allclose(nn.HuberLoss(delta=0.7, reduction="none")(t(x), t(y)).numpy(),
                               np.where(d < 0.7, 0.5 * d * d, 0.7 * (d - 0.35)), rtol=1e-12)
    p, q = R.uniform(0.01, 0.99, (5, 4)), R.uniform(0, 1, (5, 4))
    bce = -(q * np.log(p) + (1 - q) * np.log(1 - p))
    np.testing.assert_allclose(nn.BCELoss()(t(p), t(q)).numpy(), bce.mean(), rtol=1e-12)
    w = R.uniform(0, 2, (5, 4))
    np.testing.assert_allclose(F.binary_cross_entropy(t(p), t(q), t(w), reduction="sum").numpy(), (bce * w).sum(),
                               rtol=1e-12)
    # PyTorch clamps each log at -100: saturated probabilities give a finite loss
    assert float(F.binary_cross_entropy(t(np.array([0.0, 1.0])), t(np.array([1.0, 0.0])))) == 100.0
    logp = np.log(R.dirichlet(np.ones(4), 5))
    tgt = R.dirichlet(np.ones(4), 5)
    tgt[0, 1] = 0.0
    kl = np.where(tgt > 0, tgt * (np.log(np.where(tgt > 0, tgt, 1)) - logp), 0)
    np.testing.assert_allclose(F.kl_div(t(logp), t(tgt), reduction="batchmean").numpy(), kl.sum() / 5, rtol=1e-12)
    np.testing.assert_allclose(nn.KLDivLoss(reduction="sum", log_target=True)(t(logp), t(np.log(tgt + 1e-3))).numpy(),
                               ((tgt + 1e-3) * (np.log(tgt + 1e-3) - logp)).sum(), rtol=1e-12)
    for f in (lambda a, b: F.smooth_l1_loss(a, b), lambda a, b: F.huber_loss(a, b, delta=0.3),
              lambda a, b: F.kl_div(a, b.exp(), reduction="batchmean")):
        check_grad(f, [x, y])
    check_grad(lambda a: F.binary_cross_entropy(a, t(q)), [p])
    assert nn.BCELoss(size_average=False).reduction == "sum"


# ---------------------------------------------------------------- init
def test_orthogonal_trunc_normal_eye():
    janus.manual_seed(0)
    w = janus.empty(6, 3, 2)  # flattened to (6, 6)
    nn.init.orthogonal_(w, gain=2.0)
    a = w.numpy().reshape(6, 6)
    np.testing.assert_allclose(a @ a.T, 4 * np.eye(6), atol=1e-5)
    w = janus.empty(3, 10)
    nn.init.orthogonal_(w)
    np.testing.assert_allclose(w.numpy() @ w.numpy().T, np.eye(3), atol=1e-6)
    w = janus.empty(200000)
    nn.init.trunc_normal_(w, mean=1.0, std=0.5, a=0.5, b=2.0)
    a = w.numpy()
    assert a.min() >= 0.5 and a.max() <= 2.0
    # truncated normal moments: alpha = -1, beta = 2 in standard units
    phi = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    Phi = lambda z: (1 + math.erf(z / math.sqrt(2))) / 2  # noqa: E731
    zc = Phi(2) - Phi(-1)
    mean = 1.0 + 0.5 * (phi(-1) - phi(2)) / zc
    assert abs(a.mean() - mean) < 3e-3
    np.testing.assert_array_equal(nn.init.eye_(janus.empty(3, 4)).numpy(), np.eye(3, 4))
    assert nn.init.xavier_uniform is nn.init.xavier_uniform_


# ------------------------------------------------------- containers, paths
def test_data_parallel_is_the_module_with_torchs_state_dict():
    inner = nn.Linear(3, 2)
    dp = nn.DataParallel(inner, device_ids=[0])
    x = janus.randn(4, 3)
    np.testing.assert_array_equal(dp(x).detach().numpy(), inner(x).detach().numpy())
    assert list(dp.state_dict()) == ["module.weight", "module.bias"] and dp.module is inner


def test_torch_nn_modules_paths():
    import janus.nn.modules.dropout as d
    import janus.nn.modules.transformer as tr
    from janus.nn.modules.module import Module
    from janus.nn.modules.utils import _pair
    assert d.Dropout2d is nn.Dropout2d and tr.TransformerEncoderLayer is nn.TransformerEncoderLayer
    assert Module is nn.Module and _pair(3) == (3, 3)
    lstm = nn.LSTM(3, 4)
    lstm.flatten_parameters()
    m = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU(), nn.Linear(2, 1)))
    assert m.get_submodule("1.1") is m[1][1] and m.get_parameter("1.1.bias") is m[1][1].bias
    assert m.half()[0].weight.dtype == janus.float16


# --------------------------------------------------------------- PyTorch
def _torch():
    if janus._C._setting_value("JANUS_SANITIZED"):
        pytest.skip("PyTorch is not run under the sanitizers")
    return pytest.importorskip("torch")


def test_layers_against_pytorch():
    torch = _torch()
    tnn = torch.nn
    cases = [
        (nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1), tnn.ConvTranspose2d(3, 4, 3, 2, 1, 1),
         (2, 3, 5, 5)),
        (nn.ConvTranspose2d(4, 6, (2, 3), groups=2, dilation=2), tnn.ConvTranspose2d(4, 6, (2, 3), groups=2, dilation=2),
         (1, 4, 4, 4)),
        (nn.Conv1d(3, 4, 3, stride=2, padding=1), tnn.Conv1d(3, 4, 3, stride=2, padding=1), (2, 3, 9)),
        (nn.ConvTranspose1d(3, 2, 4, stride=3), tnn.ConvTranspose1d(3, 2, 4, stride=3), (2, 3, 5)),
        (nn.GroupNorm(2, 4), tnn.GroupNorm(2, 4), (3, 4, 5)),
        (nn.PixelShuffle(2), tnn.PixelShuffle(2), (2, 8, 3, 3)),
        (nn.LeakyReLU(0.2), tnn.LeakyReLU(0.2), (4, 5)),
        (nn.ELU(0.5), tnn.ELU(0.5), (4, 5)),
        (nn.SELU(), tnn.SELU(), (4, 5)),
        (nn.Mish(), tnn.Mish(), (4, 5)),
        (nn.Softplus(2.0, 5.0), tnn.Softplus(2.0, 5.0), (4, 5)),
        (nn.Hardswish(), tnn.Hardswish(), (4, 5)),
        (nn.PReLU(3), tnn.PReLU(3), (2, 3, 4)),
        (nn.BatchNorm3d(2), tnn.BatchNorm3d(2), (3, 2, 2, 2, 2)),
    ]
    for jm, tm, shape in cases:
        sd = {k: torch.tensor(v.numpy().copy()) for k, v in jm.state_dict().items()}
        tm.load_state_dict(sd)
        x = R.standard_normal(shape).astype(np.float32)
        jx, tx = t(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        jy, ty = jm(jx), tm(tx)
        np.testing.assert_allclose(jy.detach().numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=type(jm).__name__)
        g = R.standard_normal(ty.shape).astype(np.float32)
        (jy * t(g)).sum().backward()
        (ty * torch.tensor(g)).sum().backward()
        np.testing.assert_allclose(jx.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=type(jm).__name__)


def test_losses_against_pytorch():
    torch = _torch()
    tf = torch.nn.functional
    x, y = R.standard_normal((6, 5)).astype(np.float32), R.standard_normal((6, 5)).astype(np.float32)
    p, q = R.uniform(0.02, 0.98, (6, 5)).astype(np.float32), R.uniform(0, 1, (6, 5)).astype(np.float32)
    logp = torch.log_softmax(torch.tensor(x), 1).numpy()
    tgt = torch.softmax(torch.tensor(y), 1).numpy()
    pairs = [
        (F.smooth_l1_loss(t(x), t(y), beta=0.7), tf.smooth_l1_loss(torch.tensor(x), torch.tensor(y), beta=0.7)),
        (F.huber_loss(t(x), t(y), delta=0.4), tf.huber_loss(torch.tensor(x), torch.tensor(y), delta=0.4)),
        (F.binary_cross_entropy(t(p), t(q)), tf.binary_cross_entropy(torch.tensor(p), torch.tensor(q))),
        (F.kl_div(t(logp), t(tgt), reduction="batchmean"),
         tf.kl_div(torch.tensor(logp), torch.tensor(tgt), reduction="batchmean")),
        (F.cross_entropy(t(x), t(np.array([0, 1, -100, 3, 4, 2])), ignore_index=-100, label_smoothing=0.1),
         tf.cross_entropy(torch.tensor(x), torch.tensor([0, 1, -100, 3, 4, 2]), ignore_index=-100,
                          label_smoothing=0.1)),
        (F.nll_loss(t(logp), t(np.array([1, 0, 4, 3, 2, 2]))), tf.nll_loss(torch.tensor(logp),
                                                                           torch.tensor([1, 0, 4, 3, 2, 2]))),
        (F.binary_cross_entropy_with_logits(t(x), t(q)), tf.binary_cross_entropy_with_logits(torch.tensor(x),
                                                                                             torch.tensor(q))),
        (F.mse_loss(t(x), t(y)), tf.mse_loss(torch.tensor(x), torch.tensor(y))),
        (F.l1_loss(t(x), t(y)), tf.l1_loss(torch.tensor(x), torch.tensor(y))),
    ]
    for i, (a, b) in enumerate(pairs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6, err_msg=f"loss {i}")


# ------------------------------------------------------ resampling, padding
def interp_ref(x, out, align, scale=None):
    """Linear interpolation of the last dim, PyTorch's source-index formula."""
    n = x.shape[-1]
    if align:
        s = (n - 1) / (out - 1) if out > 1 else 0.0
        src = np.arange(out) * s
    else:
        s = 1.0 / scale if scale else n / out
        src = np.maximum((np.arange(out) + 0.5) * s - 0.5, 0)
    lo = src.astype(int)
    hi = np.minimum(lo + 1, n - 1)
    w = np.clip(src - lo, 0, 1)
    return x[..., lo] + (x[..., hi] - x[..., lo]) * w


@pytest.mark.parametrize("align", [False, True])
def test_interpolate_linear_modes(align):
    x = R.standard_normal((2, 3, 4, 5))
    got = F.interpolate(t(x), size=(7, 3), mode="bilinear", align_corners=align).numpy()
    want = np.swapaxes(interp_ref(np.swapaxes(interp_ref(x, 3, align), -1, -2), 7, align), -1, -2)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    got = F.interpolate(t(x[:, :, 0]), scale_factor=2.5, mode="linear", align_corners=align).numpy()
    np.testing.assert_allclose(got, interp_ref(x[:, :, 0], 12, align, None if align else 2.5), rtol=1e-12)
    check_grad(lambda a: F.interpolate(a, scale_factor=2, mode="bilinear", align_corners=align), [x[:1, :1, :3, :3]])


def test_interpolate_nearest_and_upsample_modules():
    x = R.standard_normal((1, 2, 3, 4))
    np.testing.assert_array_equal(nn.Upsample(scale_factor=2)(t(x)).numpy(), x.repeat(2, 2).repeat(2, 3))
    got = F.interpolate(t(x), size=(5, 6)).numpy()
    np.testing.assert_array_equal(got, x[:, :, [0, 0, 1, 1, 2]][:, :, :, [0, 0, 1, 2, 2, 3]])
    got = F.interpolate(t(x), size=(5, 6), mode="nearest-exact").numpy()
    np.testing.assert_array_equal(got, x[:, :, [0, 0, 1, 2, 2]][:, :, :, [0, 1, 1, 2, 3, 3]])
    assert tuple(nn.UpsamplingBilinear2d(scale_factor=2)(t(x)).shape) == (1, 2, 6, 8)
    with pytest.raises(ValueError, match="only one of size or scale_factor"):
        F.interpolate(t(x), size=2, scale_factor=2)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_modes(mode):
    x = R.standard_normal((2, 3, 4, 5))
    np_mode = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]
    got = F.pad(t(x), (1, 2, 3, 0), mode=mode).numpy()
    np.testing.assert_array_equal(got, np.pad(x, ((0, 0), (0, 0), (3, 0), (1, 2)), mode=np_mode))
    check_grad(lambda a: F.pad(a, (1, 2), mode=mode), [x[:1, :1, :1]])
    cls = {"reflect": nn.ReflectionPad2d, "replicate": nn.ReplicationPad2d, "circular": nn.CircularPad2d}[mode]
    np.testing.assert_array_equal(cls(1)(t(x)).numpy(), np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode=np_mode))
    np.testing.assert_array_equal(nn.ZeroPad2d((1, 0, 0, 2))(t(x)).numpy(),
                                  np.pad(x, ((0, 0), (0, 0), (0, 2), (1, 0))))
    np.testing.assert_array_equal(nn.ConstantPad1d(2, 3.5)(t(x)).numpy(),
                                  np.pad(x, ((0, 0), (0, 0), (0, 0), (2, 2)), constant_values=3.5))


def test_instance_norm():
    x = R.standard_normal((2, 3, 4, 5))
    mu, var = x.mean((2, 3), keepdims=True), x.var((2, 3), keepdims=True)
    np.testing.assert_allclose(nn.InstanceNorm2d(3)(t(x)).numpy(), (x - mu) / np.sqrt(var + 1e-5), rtol=1e-10)
    m = nn.InstanceNorm1d(3, affine=True, track_running_stats=True)
    y = R.standard_normal((4, 3, 6))
    m(t(y.astype(np.float32)))
    np.testing.assert_allclose(m.running_mean.numpy(), 0.1 * y.mean(2).mean(0), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(m.running_var.numpy(), 0.9 + 0.1 * y.var(2, ddof=1).mean(0), rtol=1e-5)
    assert tuple(nn.InstanceNorm2d(3)(t(x[0])).shape) == (3, 4, 5)


def test_parameter_containers_embedding_and_sequences():
    pl = nn.ParameterList([janus.ones(2), nn.Parameter(janus.zeros(3))])
    pl.append(janus.ones(1))
    assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2"] and len(pl) == 3
    assert all(isinstance(p, nn.Parameter) for p in pl) and tuple(pl[-1].shape) == (1,)
    pd = nn.ParameterDict({"w": janus.ones(2)})
    pd["b"] = janus.zeros(1)
    assert list(pd.keys()) == ["w", "b"] and list(pd.state_dict()) == ["w", "b"] and "w" in pd
    w = janus.randn(5, 3)
    e = nn.Embedding.from_pretrained(w, padding_idx=0)
    assert not e.weight.requires_grad and np.array_equal(e(janus.tensor([2])).numpy(), w.numpy()[[2]])
    assert nn.Embedding.from_pretrained(w, freeze=False).weight.requires_grad
    from janus.nn.utils.rnn import pad_sequence
    seqs = [janus.ones(2, 4), janus.ones(3, 4) * 2]
    p = pad_sequence(seqs, batch_first=True, padding_value=-1.0)
    assert tuple(p.shape) == (2, 3, 4) and p.numpy()[0, 2].tolist() == [-1.0] * 4
    assert tuple(pad_sequence(seqs).shape) == (3, 2, 4)
    lin = nn.Linear(3, 2)
    v = nn.utils.parameters_to_vector(lin.parameters())
    nn.utils.vector_to_parameters(v * 2, lin.parameters())
    np.testing.assert_allclose(nn.utils.parameters_to_vector(lin.parameters()).detach().numpy(),
                               v.detach().numpy() * 2)


def test_small_torch_functions():
    x = t(np.array([np.nan, np.inf, -np.inf, 1.5]))
    np.testing.assert_array_equal(janus.nan_to_num(x).numpy(), np.nan_to_num(x.numpy()))
    np.testing.assert_array_equal(x.nan_to_num(nan=2.0, posinf=9.0, neginf=-9.0).numpy(), [2.0, 9.0, -9.0, 1.5])
    janus.manual_seed(0)
    g = F.gumbel_softmax(janus.zeros(1000, 4), tau=0.5, hard=True)
    assert np.all(g.numpy().sum(1) == 1) and set(np.unique(g.numpy())) == {0.0, 1.0}
    logits = janus.zeros(2, 3, requires_grad=True)
    F.gumbel_softmax(logits, hard=True)[:, 0].sum().backward()
    assert logits.grad is not None and np.isfinite(logits.grad.numpy()).all()
    v = janus.autograd.Variable(janus.ones(2), requires_grad=True)
    assert v.requires_grad and isinstance(v, janus.Tensor)
    janus.set_float32_matmul_precision("high")
    assert janus.get_float32_matmul_precision() == "high"
    janus.set_float32_matmul_precision("highest")
    janus.use_deterministic_algorithms(True)
    assert janus.are_deterministic_algorithms_enabled()
    janus.use_deterministic_algorithms(False)
    janus.cuda.set_device(0)
    with pytest.raises(RuntimeError, match="one device"):
        janus.cuda.set_device(1)
    with janus.autograd.detect_anomaly():
        pass


def test_resampling_and_padding_against_pytorch():
    torch = _torch()
    tf = torch.nn.functional
    x = R.standard_normal((2, 3, 5, 7)).astype(np.float32)
    cases = [dict(size=(8, 9), mode="bilinear", align_corners=False), dict(size=(8, 9), mode="bilinear",
                                                                           align_corners=True),
             dict(scale_factor=1.7, mode="bilinear"), dict(scale_factor=3, mode="nearest"),
             dict(size=(4, 11), mode="nearest"), dict(size=(9, 4), mode="nearest-exact")]
    for kw in cases:
        jx, tx = t(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        jy, ty = F.interpolate(jx, **kw), tf.interpolate(tx, **kw)
        np.testing.assert_allclose(jy.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=str(kw))
        g = R.standard_normal(ty.shape).astype(np.float32)
        (jy * t(g)).sum().backward()
        (ty * torch.tensor(g)).sum().backward()
        np.testing.assert_allclose(jx.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=str(kw))
    for mode in ("reflect", "replicate", "circular"):
        np.testing.assert_array_equal(F.pad(t(x), (2, 1, 1, 3), mode=mode).numpy(),
                                      tf.pad(torch.tensor(x), (2, 1, 1, 3), mode=mode).numpy())
    jm, tm = nn.InstanceNorm2d(3, affine=True), torch.nn.InstanceNorm2d(3, affine=True)
    np.testing.assert_allclose(jm(t(x)).detach().numpy(), tm(torch.tensor(x)).detach().numpy(), rtol=1e-4,
                               atol=1e-5)
