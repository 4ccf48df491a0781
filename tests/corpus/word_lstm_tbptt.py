"""A word-level LSTM language model on the source of Python's json package
(json/__init__.py, decoder.py, encoder.py tokenized into words): the
corpus batchified into columns, truncated backpropagation through time with
the hidden state carried across chunks and detached, a two-layer LSTM with
dropout between layers, tied embedding/decoder weights, gradient clipping
with clip_grad_norm_, plain SGD with a learning rate annealed by hand
(param_group['lr']), and perplexity (math.exp of the mean loss)."""
import json
import math
import os
import re

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


def corpus():
    folder = os.path.dirname(json.__file__)
    text = " ".join(open(os.path.join(folder, f)).read() for f in ("__init__.py", "decoder.py", "encoder.py"))
    words = re.findall(r"[A-Za-z_]+|[^\sA-Za-z_]", text)[:6000]
    counts = {}
    for w in words:
        counts[w] = counts.get(w, 0) + 1
    vocab = ["<unk>"] + sorted(w for w, c in counts.items() if c >= 3)
    index = {w: i for i, w in enumerate(vocab)}
    return torch.tensor([index.get(w, 0) for w in words]), len(vocab)


def batchify(data, bsz):
    n = data.size(0) // bsz
    return data[: n * bsz].view(bsz, n).t().contiguous()   # (time, batch)


class WordLM(nn.Module):
    def __init__(self, vocab, size=48, layers=2, dropout=0.2):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(vocab, size)
        self.rnn = nn.LSTM(size, size, layers, dropout=dropout)
        self.decoder = nn.Linear(size, vocab)
        self.decoder.weight = self.encoder.weight
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)
        self.layers, self.size = layers, size

    def forward(self, x, hidden):
        out, hidden = self.rnn(self.drop(self.encoder(x)), hidden)
        return self.decoder(self.drop(out)), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.layers, bsz, self.size), weight.new_zeros(self.layers, bsz, self.size))


def repackage(h):
    return tuple(v.detach() for v in h)


data, vocab = corpus()
train = batchify(data, 10)
torch.manual_seed(0)
model = WordLM(vocab, dropout=0.0 if EXACT else 0.2)
init = shared(lambda: {"model": model.state_dict()})
model.load_state_dict(init["model"])
opt = torch.optim.SGD(model.parameters(), lr=2.0)
BPTT = 12
for epoch in range(2):
    model.train()
    hidden = model.init_hidden(10)
    total, chunks = 0.0, 0
    for i in range(0, min(train.size(0) - 1, 8 * BPTT), BPTT):
        seq = min(BPTT, train.size(0) - 1 - i)
        x, y = train[i:i + seq], train[i + 1:i + 1 + seq]
        hidden = repackage(hidden)
        out, hidden = model(x, hidden)
        loss = F.cross_entropy(out.view(-1, vocab), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        opt.step()
        total += loss.item()
        chunks += 1
        print(f"epoch {epoch} loss {loss.item():.9g}")
    for g in opt.param_groups:
        g["lr"] /= 2.0
    print(f"epoch {epoch} perplexity {math.exp(total / chunks):.3f}")
