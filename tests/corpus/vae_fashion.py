"""Variational autoencoder on Fashion-MNIST (the first 512 test images, read
from the gzip'd IDX files with gzip + torch.frombuffer): an MLP encoder to
(mu, logvar), the reparameterization trick with torch.randn_like, a
Bernoulli decoder (binary_cross_entropy_with_logits, summed), the analytic
KL term, Adam, a DataLoader over a TensorDataset, and sampling from the
prior under torch.no_grad()."""
import gzip
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

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
    with gzip.open(os.path.join(DATA, "t10k-images-idx3-ubyte.gz")) as f:
        raw = f.read(16 + n * 784)[16:]
    return torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(n, 784).float() / 255.0


class VAE(nn.Module):
    def __init__(self, z=8):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(784, 128), nn.ReLU())
        self.mu, self.logvar = nn.Linear(128, z), nn.Linear(128, z)
        self.dec = nn.Sequential(nn.Linear(z, 128), nn.ReLU(), nn.Linear(128, 784))

    def forward(self, x, eps):
        h = self.enc(x)
        mu, logvar = self.mu(h), self.logvar(h)
        std = torch.exp(0.5 * logvar)
        z = mu + eps * std
        return self.dec(z), mu, logvar


x = fashion(512)
torch.manual_seed(0)
model = VAE()
STEPS, B = 16, 64
# comparing with PyTorch, the noise is PyTorch's too (drawn once, in the file)
init = shared(lambda: {"model": model.state_dict(), "eps": torch.randn(STEPS, B, 8)})
model.load_state_dict(init["model"])
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
loader = DataLoader(TensorDataset(x), batch_size=B, shuffle=not EXACT, drop_last=True)
step = 0
for epoch in range(2):
    for (xb,) in loader:
        eps = init["eps"][step] if EXACT else torch.randn_like(init["eps"][0])
        logits, mu, logvar = model(xb, eps)
        rec = F.binary_cross_entropy_with_logits(logits, xb, reduction="sum")
        kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        loss = (rec + kl) / xb.size(0)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.9g} kl {kl.item() / xb.size(0):.9g}")
        step += 1
with torch.no_grad():
    samples = torch.sigmoid(model.dec(torch.zeros(4, 8)))
    print(f"prior mean pixel {samples.mean().item():.6f}")
