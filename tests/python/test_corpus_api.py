"""The API the PyTorch corpus (tests/corpus) needed, checked against
independent references: packed sequences (pack_padded_sequence /
pad_packed_sequence / pack_sequence, and RNN/LSTM/GRU over a
PackedSequence: outputs, h_n and gradients equal to running every sequence
alone), adaptive max pooling (numpy reference, the gradient to each
window's maximum), x[:] / x[...] staying on the autograd graph, and `janus
check` of a script with lambdas."""
import os
import subprocess

import numpy as np
import pytest

import janus
import janus.nn as nn
import janus.nn.functional as F
from janus.nn.utils.rnn import (PackedSequence, pack_padded_sequence, pack_sequence, pad_packed_sequence,
                                pad_sequence, unpack_sequence)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(ROOT, "build")))


def test_full_slices_stay_on_the_autograd_graph():
    x = janus.arange(6.0).view(3, 2).requires_grad_()
    for ix in (slice(None), slice(0, 10), (slice(None), slice(None)), Ellipsis):
        y = x[ix]
        assert y.requires_grad and y._shares_storage(x) and y is not x
    (x[:] * janus.tensor([1.0, 2.0])).sum().backward()
    assert x.grad.tolist() == [[1.0, 2.0]] * 3
    t = janus.zeros(3)
    t[:][1] = 5.0  # still a view
    assert t.tolist() == [0.0, 5.0, 0.0]


def test_pack_and_unpack_layout():
    seqs = [janus.tensor([1.0, 2.0]), janus.tensor([3.0, 4.0, 5.0]), janus.tensor([6.0])]
    padded = pad_sequence(seqs, batch_first=True)
    p = pack_padded_sequence(padded, [2, 3, 1], batch_first=True, enforce_sorted=False)
    assert isinstance(p, PackedSequence)
    # PyTorch's layout: step 0 of every sequence (longest first), then step 1 of those still running, ...
    assert p.data.tolist() == [3.0, 1.0, 6.0, 4.0, 2.0, 5.0]
    assert p.batch_sizes.tolist() == [3, 2, 1]
    assert p.sorted_indices.tolist() == [1, 0, 2] and p.unsorted_indices.tolist() == [1, 0, 2]
    out, lengths = pad_packed_sequence(p, batch_first=True, padding_value=-1.0, total_length=4)
    assert out.tolist() == [[1.0, 2.0, -1.0, -1.0], [3.0, 4.0, 5.0, -1.0], [6.0, -1.0, -1.0, -1.0]]
    assert lengths.tolist() == [2, 3, 1]
    assert [s.tolist() for s in unpack_sequence(p)] == [s.tolist() for s in seqs]
    assert pack_sequence([seqs[1], seqs[0], seqs[2]]).data.tolist() == p.data.tolist()
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        pack_padded_sequence(padded, [2, 3, 1], batch_first=True)
    with pytest.raises(ValueError, match="total_length to be at least"):
        pad_packed_sequence(p, total_length=2)
    # gradients reach the padded input, nowhere in the padding
    x = padded.clone().requires_grad_()
    pack_padded_sequence(x, [2, 3, 1], batch_first=True, enforce_sorted=False).data.sum().backward()
    assert x.grad.tolist() == [[1.0, 1.0, 0.0], [1.0, 1.0, 1.0], [1.0, 0.0, 0.0]]


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_rnn_over_packed_sequences_equals_each_sequence_alone(kind):
    janus.manual_seed(0)
    m = getattr(nn, kind)(3, 5, num_layers=2, batch_first=True)
    lengths = [3, 6, 1, 6, 4]
    x = janus.randn(5, 6, 3)
    h0 = janus.randn(2, 5, 5)
    hx = (h0, janus.randn(2, 5, 5)) if kind == "LSTM" else h0
    weights = janus.arange(1.0, 31.0).view(1, 6, 5) / 10
    out, h = m(pack_padded_sequence(x, janus.tensor(lengths), batch_first=True, enforce_sorted=False), hx)
    pad, lens = pad_packed_sequence(out, batch_first=True)
    h_n = h[0] if kind == "LSTM" else h
    loss = (pad * weights).sum() + (h_n ** 2).sum()
    loss.backward()
    got = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    ref_loss = 0
    for i, n in enumerate(lengths):
        hi = (hx[0][:, i:i + 1], hx[1][:, i:i + 1]) if kind == "LSTM" else hx[:, i:i + 1]
        o, hh = m(x[i:i + 1, :n], hi)
        hh = hh[0] if kind == "LSTM" else hh
        assert np.allclose(o[0].tolist(), pad[i, :n].tolist(), atol=1e-6), (kind, i)
        assert np.allclose(hh[:, 0].tolist(), h_n[:, i].tolist(), atol=1e-6), (kind, i)
        assert pad[i, n:].abs().sum().item() == 0.0
        ref_loss = ref_loss + (o * weights[:, :n]).sum() + (hh ** 2).sum()
    assert lens.tolist() == lengths
    ref_loss.backward()
    for g, p in zip(got, m.parameters()):
        assert np.allclose(g.tolist(), p.grad.tolist(), rtol=1e-5, atol=1e-5), kind


def _adaptive_max_ref(a, oh, ow):
    H, W = a.shape[-2:]
    out = np.empty(a.shape[:-2] + (oh, ow), dtype=a.dtype)
    for i in range(oh):
        for j in range(ow):
            r0, r1 = i * H // oh, -(-(i + 1) * H // oh)
            c0, c1 = j * W // ow, -(-(j + 1) * W // ow)
            out[..., i, j] = a[..., r0:r1, c0:c1].max(axis=(-2, -1))
    return out


@pytest.mark.parametrize("size,out", [((6, 8), (3, 4)), ((7, 5), (3, 2)), ((5, 5), (1, 1)), ((4, 6), (4, 6))])
def test_adaptive_max_pool2d(size, out):
    rng = np.random.default_rng(0)
    a = rng.permutation(2 * 3 * size[0] * size[1]).reshape(2, 3, *size).astype(np.float32)  # no ties
    x = janus.tensor(a).requires_grad_()
    y = nn.AdaptiveMaxPool2d(out)(x)
    np.testing.assert_array_equal(np.array(y.tolist(), dtype=np.float32), _adaptive_max_ref(a, *out))
    y.sum().backward()
    # every window sends its gradient to its maximum (overlapping windows add up)
    g = np.zeros_like(a)
    H, W = size
    for i in range(out[0]):
        for j in range(out[1]):
            r0, r1 = i * H // out[0], -(-(i + 1) * H // out[0])
            c0, c1 = j * W // out[1], -(-(j + 1) * W // out[1])
            win = a[..., r0:r1, c0:c1].reshape(2, 3, -1)
            k = win.argmax(-1)
            for b in range(2):
                for c in range(3):
                    g[b, c, r0 + k[b, c] // (c1 - c0), c0 + k[b, c] % (c1 - c0)] += 1
    np.testing.assert_array_equal(np.array(x.grad.tolist(), dtype=np.float32), g)


def test_adaptive_max_pool1d_and_indices():
    x = janus.tensor([[[1.0, 5.0, 2.0, 8.0, 3.0, 4.0]]])
    assert F.adaptive_max_pool1d(x, 3).tolist() == [[[5.0, 8.0, 4.0]]]
    assert nn.AdaptiveMaxPool1d(1)(x[0]).tolist() == [[8.0]]
    vals, idx = F.adaptive_max_pool1d(x, 2, return_indices=True)
    assert vals.tolist() == [[[5.0, 8.0]]] and idx.tolist() == [[[1, 3]]]
    # overlapping windows [0, 2) [1, 3) [3, 5) [4, 6), as PyTorch's
    assert F.adaptive_max_pool1d(x, 4).tolist() == [[[5.0, 5.0, 8.0, 4.0]]]
    with pytest.raises(NotImplementedError, match="return_indices"):
        F.adaptive_max_pool1d(x, 4, return_indices=True)


@pytest.mark.skipif(not os.path.exists(os.path.join(BUILD, "janus")), reason="janus not built")
def test_check_handles_lambdas(tmp_path):
    s = tmp_path / "s.py"
    s.write_text("import torch\nf = lambda x, k=torch.ones(1): torch.relu(x) + k\nprint(f(torch.zeros(1)))\n")
    env = dict(os.environ, JANUS_BUILD_DIR=BUILD,
               PYTHONPATH=os.path.join(ROOT, "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([os.path.join(BUILD, "janus"), "check", str(s)], capture_output=True, text=True, env=env,
                       timeout=60)
    assert p.returncode == 0 and p.stdout == "", p.stderr
