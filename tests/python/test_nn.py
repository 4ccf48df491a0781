"""janus.nn without PyTorch: the Module API, state dicts (names as torch's),
default initialization ranges, layer numerics against numpy references, and
error paths (shape mismatches, bad state dicts)."""
import math

import numpy as np
import pytest

import janus
import janus.nn as nn
import janus.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.bn = nn.BatchNorm1d(3)
        self.blocks = nn.ModuleList([nn.Linear(3, 3), nn.ReLU()])
        self.heads = nn.ModuleDict({"a": nn.Linear(3, 2)})
        self.register_buffer("scale", janus.ones(1))

    def forward(self, x):
        x = self.bn(self.fc(x))
        for b in self.blocks:
            x = b(x)
        return self.heads["a"](x) * self.scale


def test_module_registration_and_traversal():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["fc.weight", "fc.bias", "bn.weight", "bn.bias", "blocks.0.weight", "blocks.0.bias",
                     "heads.a.weight", "heads.a.bias"]
    assert [n for n, _ in net.named_buffers()] == ["scale", "bn.running_mean", "bn.running_var",
                                                    "bn.num_batches_tracked"]
    assert len(list(net.children())) == 4 and len(list(net.modules())) == 8
    assert set(net.state_dict()) == set(names) | {"scale", "bn.running_mean", "bn.running_var",
                                                   "bn.num_batches_tracked"}
    assert all(p.requires_grad and isinstance(p, nn.Parameter) for p in net.parameters())
    net.eval()
    assert not net.training and not net.bn.training
    net.train()
    assert net.blocks[1].training
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "Net"
    assert "Linear(in_features=4, out_features=3, bias=True)" in repr(net)


def test_state_dict_round_trip_and_errors():
    a, b = Net(), Net()
    b.load_state_dict(a.state_dict())
    for (n, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy(), err_msg=n)
    sd = a.state_dict()
    sd["extra"] = janus.zeros(1)
    del sd["fc.bias"]
    with pytest.raises(RuntimeError) as e:
        b.load_state_dict(sd)
    assert "Missing key(s) in state_dict: \"fc.bias\"" in str(e.value)
    assert "Unexpected key(s) in state_dict: \"extra\"" in str(e.value)
    missing, unexpected = b.load_state_dict(sd, strict=False)
    assert missing == ["fc.bias"] and unexpected == ["extra"]
    sd = a.state_dict()
    sd["fc.weight"] = janus.zeros(5, 5)
    with pytest.raises(RuntimeError, match="size mismatch for fc.weight"):
        b.load_state_dict(sd)


def test_zero_grad_and_forward_backward():
    net = Net()
    net(janus.randn(5, 4)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_default_init_ranges():
    janus.manual_seed(0)
    lin = nn.Linear(100, 50)
    bound = 1 / math.sqrt(100)
    w = lin.weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(lin.bias.detach().numpy()).max() <= bound
    conv = nn.Conv2d(3, 8, 3)
    assert np.abs(conv.weight.detach().numpy()).max() <= 1 / math.sqrt(27)
    emb = nn.Embedding(1000, 16, padding_idx=0)
    e = emb.weight.detach().numpy()
    assert abs(e[1:].std() - 1) < 0.05 and not e[0].any()
    lstm = nn.LSTM(8, 16)
    assert np.abs(lstm.weight_hh_l0.detach().numpy()).max() <= 0.25


def test_linear_and_conv_against_numpy():
    lin = nn.Linear(4, 3)
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    want = x @ lin.weight.detach().numpy().T + lin.bias.detach().numpy()
    np.testing.assert_allclose(lin(janus.tensor(x)).detach().numpy(), want, rtol=1e-5, atol=1e-6)
    conv = nn.Conv2d(2, 1, 2, bias=False)
    xi = np.arange(18, dtype=np.float32).reshape(1, 2, 3, 3)
    w = conv.weight.detach().numpy()
    ref = np.zeros((1, 1, 2, 2), np.float32)
    for i in range(2):
        for k in range(2):
            ref[0, 0, i, k] = (xi[0, :, i:i + 2, k:k + 2] * w[0]).sum()
    np.testing.assert_allclose(conv(janus.tensor(xi)).detach().numpy(), ref, rtol=1e-5)


def test_losses_against_numpy():
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((5, 4)).astype(np.float32)
    y = np.array([0, 3, 1, 1, 2])
    lp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    want = -lp[np.arange(5), y].mean()
    got = F.cross_entropy(janus.tensor(logits), janus.tensor(y)).item()
    assert abs(got - want) < 1e-5
    ignore = F.cross_entropy(janus.tensor(logits), janus.tensor(y), ignore_index=1).item()
    keep = y != 1
    assert abs(ignore - (-lp[np.arange(5), y][keep].mean())) < 1e-5
    a, b = rng.standard_normal(6).astype(np.float32), rng.standard_normal(6).astype(np.float32)
    assert abs(F.mse_loss(janus.tensor(a), janus.tensor(b)).item() - ((a - b) ** 2).mean()) < 1e-6
    assert abs(F.l1_loss(janus.tensor(a), janus.tensor(b)).item() - np.abs(a - b).mean()) < 1e-6
    t = (rng.random(6) < 0.5).astype(np.float32)
    bce = np.mean(np.maximum(a, 0) - a * t + np.log1p(np.exp(-np.abs(a))))
    assert abs(F.binary_cross_entropy_with_logits(janus.tensor(a), janus.tensor(t)).item() - bce) < 1e-6


def test_batchnorm_running_stats():
    bn = nn.BatchNorm1d(2, momentum=0.5)
    x = np.array([[1.0, 2.0], [3.0, 6.0]], np.float32)
    bn(janus.tensor(x))
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.5 * x.mean(0), rtol=1e-6)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.5 + 0.5 * x.var(0, ddof=1), rtol=1e-6)
    assert bn.num_batches_tracked.item() == 1
    bn.eval()
    y = bn(janus.tensor(x)).detach().numpy()
    want = (x - bn.running_mean.numpy()) / np.sqrt(bn.running_var.numpy() + 1e-5)
    np.testing.assert_allclose(y, want, rtol=1e-5)


def test_lstm_shapes_and_dropout_between_layers():
    m = nn.LSTM(3, 4, num_layers=2, batch_first=True, dropout=0.5)
    out, (h, c) = m(janus.randn(2, 5, 3))
    assert tuple(out.shape) == (2, 5, 4) and tuple(h.shape) == (2, 2, 4) and tuple(c.shape) == (2, 2, 4)
    m.eval()
    o1, _ = m(janus.ones(2, 5, 3))
    o2, _ = m(janus.ones(2, 5, 3))
    np.testing.assert_array_equal(o1.detach().numpy(), o2.detach().numpy())
    out, (h, c) = nn.LSTM(3, 4, num_layers=2, bidirectional=True)(janus.randn(5, 2, 3))  # test_rnn_bidir.py
    assert tuple(out.shape) == (5, 2, 8) and tuple(h.shape) == (4, 2, 4) and tuple(c.shape) == (4, 2, 4)


def test_layer_shape_errors_are_clear():
    with pytest.raises(RuntimeError, match="in_features=4"):
        nn.Linear(4, 2)(janus.zeros(3, 5))
    with pytest.raises(RuntimeError, match="channels"):
        nn.BatchNorm2d(3)(janus.zeros(2, 4, 5, 5))
    with pytest.raises(ValueError, match="4D"):
        nn.BatchNorm2d(3)(janus.zeros(2, 3))
    with pytest.raises(RuntimeError):
        nn.Conv2d(3, 4, 3)(janus.zeros(1, 2, 8, 8))
    with pytest.raises(RuntimeError, match="input_size"):
        nn.LSTM(3, 4)(janus.zeros(5, 2, 7))
    with pytest.raises(TypeError, match="parameter"):
        lin = nn.Linear(2, 2)
        lin.weight = janus.zeros(2, 2)


def test_clip_grad_norm():
    p = nn.Parameter(janus.zeros(4))
    p.grad = janus.tensor([3.0, 4.0, 0.0, 0.0])
    total = nn.utils.clip_grad_norm_([p], 1.0)
    assert abs(total.item() - 5.0) < 1e-6
    np.testing.assert_allclose(p.grad.numpy(), [0.6, 0.8, 0, 0], rtol=1e-5)


@pytest.mark.parametrize("bad,norm_type", [(float("inf"), 2.0), (float("nan"), 2.0), (float("inf"), float("inf")),
                                          (float("nan"), 1)])
def test_clip_grad_norm_error_if_nonfinite(bad, norm_type):
    """error_if_nonfinite=True: a non-finite total norm raises torch's RuntimeError (naming the
    norm's order) and leaves the gradients alone; without the flag they are scaled anyway."""
    p, q = nn.Parameter(janus.zeros(3)), nn.Parameter(janus.zeros(2))
    p.grad, q.grad = janus.tensor([1.0, bad, 2.0]), janus.tensor([0.5, -1.0])
    with pytest.raises(RuntimeError) as e:
        nn.utils.clip_grad_norm_([p, q], 1.0, norm_type=norm_type, error_if_nonfinite=True)
    msg = str(e.value)
    assert f"The total norm of order {float(norm_type)} for gradients from `parameters` is non-finite" in msg
    assert "set `error_if_nonfinite=False`" in msg
    got = p.grad.numpy()
    assert got[0] == 1.0 and got[2] == 2.0 and (np.isnan(got[1]) or got[1] == bad)
    np.testing.assert_array_equal(q.grad.numpy(), [0.5, -1.0])
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:  # torch's own message, word for word
        tp, tq = torch.zeros(3, requires_grad=True), torch.zeros(2, requires_grad=True)
        tp.grad, tq.grad = torch.tensor([1.0, bad, 2.0]), torch.tensor([0.5, -1.0])
        with pytest.raises(RuntimeError) as te:
            torch.nn.utils.clip_grad_norm_([tp, tq], 1.0, norm_type=norm_type, error_if_nonfinite=True)
        assert msg == str(te.value)
    total = nn.utils.clip_grad_norm_([p, q], 1.0, norm_type=norm_type)  # no check: scaled by it
    assert not math.isfinite(total.item())
    fine = nn.Parameter(janus.zeros(2))
    fine.grad = janus.tensor([3.0, 4.0])
    assert nn.utils.clip_grad_norm_([fine], 1.0, error_if_nonfinite=True).item() == pytest.approx(5.0)


def test_init_functions():
    janus.manual_seed(1)
    w = janus.empty(200, 300)
    nn.init.xavier_uniform_(w)
    a = math.sqrt(6 / 500)
    assert np.abs(w.numpy()).max() <= a and w.numpy().std() > 0.5 * a / math.sqrt(3)
    nn.init.constant_(w, 0.25)
    assert (w.numpy() == 0.25).all()
    nn.init.zeros_(w)
    nn.init.ones_(w)
    assert (w.numpy() == 1).all()
    nn.init.normal_(w, 2.0, 0.5)
    assert abs(w.numpy().mean() - 2.0) < 0.01
    nn.init.kaiming_uniform_(w, nonlinearity="relu")
    assert np.abs(w.numpy()).max() <= math.sqrt(6 / 300)
