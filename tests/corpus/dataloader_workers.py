"""A custom map-style Dataset whose samples are built in __getitem__ (a
feature transform with per-sample augmentation noise from torch's RNG),
read by a DataLoader with num_workers=2, worker_init_fn, persistent workers
and a seeded generator; get_worker_info() inside the dataset; an MLP with
BatchNorm1d and Dropout trained with SGD + Nesterov momentum and
MultiStepLR; evaluation with a second loader."""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, get_worker_info

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


class Rings(Dataset):
    """Points on three noisy rings; the label is the ring."""

    def __init__(self, n, augment):
        self.n, self.augment = n, augment

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        ring = i % 3
        angle = 2 * math.pi * ((i * 0.618034) % 1.0)
        r = 1.0 + ring + 0.15 * math.sin(7 * angle)
        x = torch.tensor([r * math.cos(angle), r * math.sin(angle)])
        if self.augment:
            x = x + 0.05 * torch.randn(2)
        feats = torch.cat([x, x.pow(2), (x[0] * x[1]).unsqueeze(0)])
        assert (get_worker_info() is not None) or not self.augment
        return feats, ring


def seed_worker(worker_id):
    info = get_worker_info()
    assert info.id == worker_id and info.num_workers == 2


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(5, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.0 if EXACT else 0.1),
                      nn.Linear(32, 3))
init = shared(lambda: {"model": model.state_dict()})
model.load_state_dict(init["model"])
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[1], gamma=0.3)
train = DataLoader(Rings(240, augment=not EXACT), batch_size=40, shuffle=not EXACT, num_workers=2,
                   worker_init_fn=seed_worker, persistent_workers=True, generator=torch.Generator().manual_seed(3))
for epoch in range(2):
    model.train()
    for x, y in train:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"epoch {epoch} loss {loss.item():.9g}")
    sched.step()
model.eval()
correct = total = 0
with torch.no_grad():
    for x, y in DataLoader(Rings(99, augment=False), batch_size=33):
        correct += (model(x).argmax(1) == y).sum().item()
        total += y.numel()
print(f"accuracy {correct / total:.4f}")
