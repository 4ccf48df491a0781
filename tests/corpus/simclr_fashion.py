"""SimCLR-style contrastive learning on Fashion-MNIST (the first 512 test
images): two augmented views of every image (a random crop taken by
zero-padding with F.pad and slicing each image at its own offset, and a
random horizontal flip with torch.flip chosen per image through
torch.where), a small CNN encoder and an MLP projection head, embeddings
normalized with F.normalize, the NT-Xent loss as a matmul of the two views'
embeddings at a temperature, the self-similarities masked with
masked_fill(-inf) and cross_entropy against arange targets; SGD with
Nesterov momentum and weight decay; at the end, the accuracy of a
nearest-class-mean classifier on the frozen, normalized features.  Comparing with PyTorch, the
crop offsets and flips are PyTorch's (drawn once, in the file)."""
import gzip
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

INIT = os.environ.get("CORPUS_INIT")            # a torch.save file both libraries start from
EXACT = os.environ.get("CORPUS_EXACT") == "1"   # comparing with PyTorch: no dropout, no shuffling
DATA = os.environ.get("FASHION_MNIST", "/usr/share/datasets/fashion-mnist")


def shared(make):
    """The initial state: made here, or loaded from INIT (and saved there the first time)."""
    if INIT and os.path.exists(INIT):
        return torch.load(INIT)
    state = make()
    if INIT:
        torch.save(state, INIT)
    return state


def fashion(n):
    out = []
    for name, off, shape in (("images-idx3", 16, (n, 1, 28, 28)), ("labels-idx1", 8, (n,))):
        with gzip.open(os.path.join(DATA, f"t10k-{name}-ubyte.gz")) as f:
            raw = f.read(off + n * (784 if len(shape) == 4 else 1))[off:]
        out.append(torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(*shape))
    return out[0].float() / 255.0, out[1].long()


PAD = 3


def augment(x, offsets, flips):
    """A random crop (pad, then slice each image at its offset) and a random horizontal flip."""
    padded = F.pad(x, (PAD, PAD, PAD, PAD))
    h, w = x.shape[-2:]
    crops = torch.stack([padded[i, :, dy:dy + h, dx:dx + w] for i, (dy, dx) in enumerate(offsets.tolist())])
    return torch.where(flips.view(-1, 1, 1, 1), torch.flip(crops, dims=[-1]), crops)


class Encoder(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                  nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                                  nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.fc = nn.Linear(32, dim)

    def forward(self, x):
        return self.fc(self.conv(x))


class SimCLR(nn.Module):
    def __init__(self, dim=64, proj=32):
        super().__init__()
        self.encoder = Encoder(dim)
        self.head = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(inplace=True), nn.Linear(dim, proj))

    def forward(self, x):
        return self.head(self.encoder(x))


def nt_xent(z1, z2, temperature):
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    n = z1.size(0)
    sim = z @ z.t() / temperature
    sim = sim.masked_fill(torch.eye(2 * n, dtype=torch.bool), float("-inf"))
    targets = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)])
    return F.cross_entropy(sim, targets)


x, y = fashion(512)
torch.manual_seed(0)
model = SimCLR()
B, STEPS = 64, 16
init = shared(lambda: {"model": model.state_dict(),
                       "offsets": torch.randint(0, 2 * PAD + 1, (STEPS, 2, B, 2)),
                       "flips": torch.rand(STEPS, 2, B) < 0.5})
model.load_state_dict(init["model"])
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-4)
perm = torch.arange(x.size(0)) if EXACT else torch.randperm(x.size(0))
for step in range(STEPS):
    idx = perm[(step * B) % x.size(0):][:B]
    xb = x[idx]
    views = []
    for v in range(2):
        if EXACT:
            offsets, flips = init["offsets"][step, v], init["flips"][step, v]
        else:
            offsets, flips = torch.randint(0, 2 * PAD + 1, (B, 2)), torch.rand(B) < 0.5
        views.append(augment(xb, offsets, flips))
    loss = nt_xent(model(views[0]), model(views[1]), temperature=0.5)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.9g}")

model.eval()
with torch.no_grad():
    feats = F.normalize(model.encoder(x), dim=1)
    means = F.normalize(torch.stack([feats[y == c].mean(0) for c in range(10)]), dim=1)
    acc = ((feats @ means.t()).argmax(1) == y).float().mean()
    print(f"nearest class mean accuracy {acc.item():.4f}")
