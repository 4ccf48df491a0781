"""Self-attention written by hand: multi-head projections split with
view/transpose, scores with torch.einsum, a key-padding mask with
masked_fill, F.scaled_dot_product_attention checked against it; gradient
accumulation over micro-batches, an exponential moving average of the
weights (copy.deepcopy + in-place updates under torch.no_grad()),
ReduceLROnPlateau on a validation loss, and the EMA model saved whole with
torch.save and loaded back (weights_only=False).  The task: predict the sum
of the unmasked tokens' values."""
import copy
import io
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

INIT = os.environ.get("CORPUS_INIT")            # a torch.save file both libraries start from
EXACT = os.environ.get("CORPUS_EXACT") == "1"   # comparing with PyTorch: no dropout, no shuffling


def shared(make):
    """The initial state: made here, or loaded from INIT (and saved there the first time)."""
    if INIT and os.path.exists(INIT):
        return torch.load(INIT)
    state = make()
    if INIT:
        torch.save(state, INIT)
    return state


class SelfAttention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.heads = heads

    def forward(self, x, pad):
        B, T, D = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.view(B, T, self.heads, D // self.heads).transpose(1, 2) for t in (q, k, v))
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / (D // self.heads) ** 0.5
        scores = scores.masked_fill(pad[:, None, None, :], float("-inf"))
        out = torch.einsum("bhqk,bhkd->bhqd", scores.softmax(-1), v)
        return self.proj(out.transpose(1, 2).reshape(B, T, D)), (q, k, v)


class SumModel(nn.Module):
    def __init__(self, d=32, heads=4):
        super().__init__()
        self.embed = nn.Linear(1, d)
        self.attn = SelfAttention(d, heads)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, 1)

    def forward(self, x, pad):
        h = self.embed(x.unsqueeze(-1))
        a, qkv = self.attn(h, pad)
        h = self.norm(h + a)
        keep = (~pad).unsqueeze(-1).float()
        return self.head((h * keep).sum(1)).squeeze(-1), qkv


def make_batch(i, n=16, T=10):
    g = torch.arange(n * T).view(n, T).float()
    x = torch.sin(g * 0.37 + i) * 2
    lengths = 3 + (torch.arange(n) * 7 + i) % (T - 3)
    pad = torch.arange(T).unsqueeze(0) >= lengths.unsqueeze(1)
    return x, pad, (x * (~pad).float()).sum(1)


torch.manual_seed(0)
model = SumModel()
init = shared(lambda: {"model": model.state_dict()})
model.load_state_dict(init["model"])
ema = copy.deepcopy(model)
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=1)
ACCUM = 2
for step in range(10):
    opt.zero_grad()
    for micro in range(ACCUM):
        x, pad, target = make_batch(step * ACCUM + micro)
        pred, (q, k, v) = model(x, pad)
        loss = F.mse_loss(pred, target) / ACCUM
        loss.backward()
    opt.step()
    with torch.no_grad():
        for pe, p in zip(ema.parameters(), model.parameters()):
            pe.mul_(0.9).add_(p, alpha=0.1)
        xv, padv, tv = make_batch(100)
        val = F.mse_loss(ema(xv, padv)[0], tv)
    plateau.step(val.item())
    print(f"step {step} loss {loss.item() * ACCUM:.9g} ema-val {val.item():.9g}")
with torch.no_grad():
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=~pad[:, None, None, :])
    mine = torch.einsum("bhqk,bhkd->bhqd", (torch.einsum("bhqd,bhkd->bhqk", q, k) / q.size(-1) ** 0.5)
                        .masked_fill(pad[:, None, None, :], float("-inf")).softmax(-1), v)
    print(f"sdpa agrees: {torch.allclose(ref, mine, atol=1e-5)}")
buf = io.BytesIO()
torch.save(ema, buf)
buf.seek(0)
restored = torch.load(buf, weights_only=False)
x, pad, target = make_batch(7)
with torch.no_grad():
    print(f"restored EMA model matches: {torch.equal(restored(x, pad)[0], ema(x, pad)[0])}")
