"""A small DCGAN on 16x16 Fashion-MNIST (average-pooled): a generator of
ConvTranspose2d + BatchNorm2d + ReLU + Tanh, a discriminator of strided
Conv2d + LeakyReLU, BCEWithLogitsLoss with real/fake label tensors, two
Adam optimizers with betas, detach() for the discriminator step, and
custom weight init through model.apply()."""
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
    with gzip.open(os.path.join(DATA, "t10k-images-idx3-ubyte.gz")) as f:
        raw = f.read(16 + n * 784)[16:]
    x = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(n, 1, 28, 28).float() / 127.5 - 1.0
    return F.avg_pool2d(F.pad(x, (2, 2, 2, 2), value=-1.0), 2)  # 32x32 -> 16x16


Z = 16
G = nn.Sequential(
    nn.ConvTranspose2d(Z, 32, 4, 1, 0, bias=False), nn.BatchNorm2d(32), nn.ReLU(True),      # 4x4
    nn.ConvTranspose2d(32, 16, 4, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(True),     # 8x8
    nn.ConvTranspose2d(16, 1, 4, 2, 1, bias=False), nn.Tanh())                              # 16x16
D = nn.Sequential(
    nn.Conv2d(1, 16, 4, 2, 1), nn.LeakyReLU(0.2, inplace=True),                             # 8x8
    nn.Conv2d(16, 32, 4, 2, 1), nn.LeakyReLU(0.2, inplace=True),                            # 4x4
    nn.Conv2d(32, 1, 4, 1, 0), nn.Flatten())


def weights_init(m):
    if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d)):
        nn.init.normal_(m.weight, 0.0, 0.02)
    elif isinstance(m, nn.BatchNorm2d):
        nn.init.normal_(m.weight, 1.0, 0.02)
        nn.init.zeros_(m.bias)


real_images = fashion(256)
torch.manual_seed(0)
G.apply(weights_init)
D.apply(weights_init)
STEPS, B = 8, 32
init = shared(lambda: {"G": G.state_dict(), "D": D.state_dict(), "z": torch.randn(STEPS, B, Z, 1, 1)})
G.load_state_dict(init["G"])
D.load_state_dict(init["D"])
opt_g = torch.optim.Adam(G.parameters(), lr=2e-3, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=2e-3, betas=(0.5, 0.999))
criterion = nn.BCEWithLogitsLoss()
ones, zeros = torch.ones(B, 1), torch.zeros(B, 1)
for step in range(STEPS):
    real = real_images[step * B:(step + 1) * B]
    z = init["z"][step] if EXACT else torch.randn(B, Z, 1, 1)
    fake = G(z)
    loss_d = criterion(D(real), ones) + criterion(D(fake.detach()), zeros)
    opt_d.zero_grad()
    loss_d.backward()
    opt_d.step()
    loss_g = criterion(D(fake), ones)
    opt_g.zero_grad()
    loss_g.backward()
    opt_g.step()
    print(f"step {step} loss {loss_d.item():.9g} loss {loss_g.item():.9g}")
G.eval()
with torch.no_grad():
    print(f"generated range {G(init['z'][0][:4]).min().item():.4f} {G(init['z'][0][:4]).max().item():.4f}")
