"""An MLP classifier of two interleaved spirals with AdamW (decoupled weight
decay, parameter groups that exempt biases and norms from it), a linear
warmup then cosine annealing (SequentialLR of LinearLR and
CosineAnnealingLR), CrossEntropyLoss with label_smoothing, LayerNorm, GELU,
Dropout, kaiming init, and the learning rate read back from the scheduler."""
import math
import os

import torch
import torch.nn as nn

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


def spirals(n):
    t = torch.linspace(0.25, 3 * math.pi, n)
    a = torch.stack([t * torch.cos(t), t * torch.sin(t)], 1) / 10
    x = torch.cat([a, -a])
    y = torch.cat([torch.zeros(n, dtype=torch.long), torch.ones(n, dtype=torch.long)])
    return x, y


class MLP(nn.Module):
    def __init__(self, width=64, dropout=0.1):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, width), nn.LayerNorm(width), nn.GELU(), nn.Dropout(dropout),
                                 nn.Linear(width, width), nn.LayerNorm(width), nn.GELU(), nn.Linear(width, 2))
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
                nn.init.zeros_(m.bias)

    def forward(self, x):
        return self.net(x)


x, y = spirals(128)
torch.manual_seed(0)
model = MLP(dropout=0.0 if EXACT else 0.1)
init = shared(lambda: {"model": model.state_dict()})
model.load_state_dict(init["model"])
decay = [p for n, p in model.named_parameters() if p.dim() > 1]
no_decay = [p for n, p in model.named_parameters() if p.dim() <= 1]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}],
                        lr=1e-2, betas=(0.9, 0.95))
STEPS = 24
sched = torch.optim.lr_scheduler.SequentialLR(
    opt, [torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.2, total_iters=4),
          torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=STEPS - 4, eta_min=1e-4)], milestones=[4])
criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
perm = torch.arange(x.size(0)).flip(0) if EXACT else torch.randperm(x.size(0))
for step in range(STEPS):
    start = (step * 64) % x.size(0)
    idx = perm[start:start + 64]
    loss = criterion(model(x[idx]), y[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    print(f"step {step} loss {loss.item():.9g} lr {sched.get_last_lr()[0]:.6g}")
model.eval()
with torch.no_grad():
    print(f"accuracy {(model(x).argmax(1) == y).float().mean().item():.4f}")
