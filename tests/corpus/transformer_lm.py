"""Character Transformer language model on the source of Python's textwrap
module: nn.Embedding, sinusoidal positional encoding (a registered buffer),
nn.TransformerEncoder with a causal mask, weight tying, Adam with warmup
(LambdaLR), gradient clipping, and a no_grad evaluation."""
import math
import os
import textwrap

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


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=256):
        super().__init__()
        pos = torch.arange(max_len).unsqueeze(1).float()
        div = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[: x.size(1)]


class CharTransformer(nn.Module):
    def __init__(self, vocab, d_model=32, heads=4, layers=2, dropout=0.1):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = PositionalEncoding(d_model)
        layer = nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, dropout=dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)
        self.head.weight = self.embed.weight  # tied
        self.d_model = d_model

    def forward(self, idx):
        T = idx.size(1)
        mask = nn.Transformer.generate_square_subsequent_mask(T)
        h = self.pos(self.embed(idx) * math.sqrt(self.d_model))
        return self.head(self.norm(self.encoder(h, mask=mask, is_causal=True)))


text = open(textwrap.__file__).read()[:6000]
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
torch.manual_seed(0)
model = CharTransformer(len(chars), dropout=0.0 if EXACT else 0.1)
init = shared(lambda: {"model": model.state_dict()})
model.load_state_dict(init["model"])
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 5))
T, B = 32, 8
starts = list(range(0, len(data) - T - 1, (len(data) - T - 1) // (B * 12)))
for step in range(12):
    ix = starts[step * B:(step + 1) * B]
    x = torch.stack([data[i:i + T] for i in ix])
    y = torch.stack([data[i + 1:i + T + 1] for i in ix])
    logits = model(x)
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    print(f"step {step} loss {loss.item():.9g}")
model.eval()
with torch.no_grad():
    x = data[:T].unsqueeze(0)
    val = F.cross_entropy(model(x)[0], data[1:T + 1])
print(f"eval loss {val.item():.9g}")
