"""A 1-D convolutional text classifier: which of four stdlib modules
(json, textwrap, string, random) does a 64-character window of source come
from?  Embedding + parallel Conv1d branches of kernel sizes 3/5/7 + ReLU +
max over time (AdaptiveMaxPool1d), Dropout, Adagrad with
initial_accumulator_value, a loss from F.one_hot targets (soft cross
entropy with log_softmax), class weights, and top-2 accuracy with
torch.topk; evaluation batches through torch.split."""
import json
import os
import random
import string
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


W = 64
sources = [open(m.__file__).read()[:20000] for m in (json, textwrap, string, random)]


def windows(rng, n):
    xs, ys = [], []
    for _ in range(n):
        label = rng.randrange(4)
        src = sources[label]
        i = rng.randrange(len(src) - W)
        xs.append([min(ord(c), 127) for c in src[i:i + W]])
        ys.append(label)
    return torch.tensor(xs), torch.tensor(ys)


class TextCNN(nn.Module):
    def __init__(self, classes=4, emb=16, ch=16, dropout=0.3):
        super().__init__()
        self.embed = nn.Embedding(128, emb)
        self.convs = nn.ModuleList([nn.Conv1d(emb, ch, k, padding=k // 2) for k in (3, 5, 7)])
        self.pool = nn.AdaptiveMaxPool1d(1)
        self.drop = nn.Dropout(dropout)
        self.fc = nn.Linear(3 * ch, classes)

    def forward(self, x):
        e = self.embed(x).transpose(1, 2)          # (B, emb, T)
        h = torch.cat([self.pool(F.relu(conv(e))).squeeze(-1) for conv in self.convs], dim=1)
        return self.fc(self.drop(h))


rng = random.Random(0)
train_x, train_y = windows(rng, 320)
test_x, test_y = windows(random.Random(1), 200)
torch.manual_seed(0)
model = TextCNN(dropout=0.0 if EXACT else 0.3)
init = shared(lambda: {"model": model.state_dict()})
model.load_state_dict(init["model"])
opt = torch.optim.Adagrad(model.parameters(), lr=0.05, initial_accumulator_value=0.1)
class_weight = torch.tensor([1.0, 1.2, 0.8, 1.0])
for step in range(10):
    xb, yb = train_x[step * 32:(step + 1) * 32], train_y[step * 32:(step + 1) * 32]
    target = F.one_hot(yb, 4).float() * 0.9 + 0.025
    logp = F.log_softmax(model(xb), dim=1)
    loss = (-(target * logp).sum(1) * class_weight[yb]).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.9g}")
model.eval()
top1 = top2 = 0
with torch.no_grad():
    for xb, yb in zip(torch.split(test_x, 64), torch.split(test_y, 64)):
        best = model(xb).topk(2, dim=1).indices
        top1 += (best[:, 0] == yb).sum().item()
        top2 += (best == yb.unsqueeze(1)).any(1).sum().item()
print(f"top-1 {top1 / len(test_y):.3f} top-2 {top2 / len(test_y):.3f}")
