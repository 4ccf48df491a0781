"""Polynomial-feature regression with torch.optim.LBFGS and a closure
(strong Wolfe line search), an MSE loss plus an L2 penalty over
model.parameters(), features built with torch.stack of powers, a
validation split evaluated under torch.no_grad(), and a second model fit
with plain LBFGS steps (no line search)."""
import math
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


def features(x, degree=5):
    return torch.stack([x ** k for k in range(1, degree + 1)], dim=1)


xs = torch.linspace(-1.0, 1.0, 200)
ys = torch.sin(3.0 * xs) + 0.1 * torch.cos(17.0 * xs)   # deterministic "noise"
train, val = slice(0, 200, 2), slice(1, 200, 2)
X, Y = features(xs[train]), ys[train].unsqueeze(1)
torch.manual_seed(0)
models = {"wolfe": nn.Linear(5, 1), "plain": nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 1))}
init = shared(lambda: {k: m.state_dict() for k, m in models.items()})
for k, m in models.items():
    m.load_state_dict(init[k])

for name, model in models.items():
    if name == "wolfe":
        opt = torch.optim.LBFGS(model.parameters(), lr=1.0, max_iter=20, history_size=10,
                                line_search_fn="strong_wolfe")
    else:
        opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=5)

    def closure():
        opt.zero_grad()
        loss = F.mse_loss(model(X), Y) + 1e-4 * sum(p.pow(2).sum() for p in model.parameters())
        loss.backward()
        return loss

    for step in range(4):
        loss = opt.step(closure)
        print(f"{name} step {step} loss {loss.item():.9g}")
    with torch.no_grad():
        v = F.mse_loss(model(features(xs[val])), ys[val].unsqueeze(1))
    print(f"{name} validation rmse {math.sqrt(v.item()):.6f}")
