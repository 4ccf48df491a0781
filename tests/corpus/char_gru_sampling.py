"""A character-level GRU on the source of Python's textwrap module: one-hot
free embedding, a GRU with batch_first, the hidden state carried across
batches (detached), RMSprop, gradient value clipping (clip_grad_value_),
and text sampled after training with temperature through torch.multinomial
on softmax probabilities, one character at a time, under torch.no_grad()."""
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


class CharGRU(nn.Module):
    def __init__(self, vocab, hidden=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, 24)
        self.gru = nn.GRU(24, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, x, h=None):
        y, h = self.gru(self.embed(x), h)
        return self.out(y), h


text = open(textwrap.__file__).read()[2000:8000]
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text])
torch.manual_seed(0)
model = CharGRU(len(chars))
init = shared(lambda: {"model": model.state_dict()})
model.load_state_dict(init["model"])
opt = torch.optim.RMSprop(model.parameters(), lr=3e-3, alpha=0.95)
B, T = 8, 24
cols = data[: (len(data) // B) * B].view(B, -1)
h = None
for step in range(12):
    x = cols[:, step * T:(step + 1) * T]
    y = cols[:, step * T + 1:(step + 1) * T + 1]
    logits, h = model(x, h)
    h = h.detach()
    loss = F.cross_entropy(logits.reshape(-1, len(chars)), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_value_(model.parameters(), 1.0)
    opt.step()
    print(f"step {step} loss {loss.item():.9g}")

with torch.no_grad():
    torch.manual_seed(1)
    idx = torch.tensor([[stoi["d"]]])
    h, out = None, []
    for _ in range(40):
        logits, h = model(idx, h)
        probs = F.softmax(logits[0, -1] / 0.8, dim=-1)
        idx = torch.multinomial(probs, 1).view(1, 1)
        out.append(chars[idx.item()])
print("sample:", repr("".join(out)))
