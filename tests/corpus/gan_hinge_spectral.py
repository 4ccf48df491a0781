"""A hinge-loss GAN with spectral normalization on 16x16 Fashion-MNIST
(average-pooled): a generator of Linear + nn.Upsample(nearest) + Conv2d +
BatchNorm2d, a discriminator whose every layer is wrapped in
nn.utils.spectral_norm (power iteration buffers weight_u / weight_v in
the state_dict), two discriminator steps per generator step, the hinge
losses (relu(1 - D(real)) + relu(1 + D(fake)), and -D(G(z)) for the
generator), Adam with betas=(0.0, 0.9) and a two-timescale learning rate,
requires_grad_(False) on the discriminator during the generator step, and
sampling under G.eval() and torch.no_grad()."""
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


class Generator(nn.Module):
    def __init__(self, z=Z, ch=32):
        super().__init__()
        self.fc = nn.Linear(z, ch * 4 * 4)
        self.ch = ch
        self.net = nn.Sequential(
            nn.BatchNorm2d(ch), nn.ReLU(),
            nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(ch, ch // 2, 3, padding=1),   # 8x8
            nn.BatchNorm2d(ch // 2), nn.ReLU(),
            nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(ch // 2, 1, 3, padding=1),    # 16x16
            nn.Tanh())

    def forward(self, z):
        return self.net(self.fc(z).view(-1, self.ch, 4, 4))


class Discriminator(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        sn = nn.utils.spectral_norm
        self.convs = nn.Sequential(
            sn(nn.Conv2d(1, ch, 3, 1, 1)), nn.LeakyReLU(0.1),
            sn(nn.Conv2d(ch, ch * 2, 4, 2, 1)), nn.LeakyReLU(0.1),          # 8x8
            sn(nn.Conv2d(ch * 2, ch * 2, 4, 2, 1)), nn.LeakyReLU(0.1))      # 4x4
        self.fc = sn(nn.Linear(ch * 2 * 4 * 4, 1))

    def forward(self, x):
        return self.fc(torch.flatten(self.convs(x), 1))


real_images = fashion(512)
torch.manual_seed(0)
G, D = Generator(), Discriminator()
STEPS, B, N_CRITIC = 8, 32, 2
init = shared(lambda: {"G": G.state_dict(), "D": D.state_dict(),
                       "z": torch.randn(STEPS, N_CRITIC + 1, B, Z)})
G.load_state_dict(init["G"])
D.load_state_dict(init["D"])
opt_g = torch.optim.Adam(G.parameters(), lr=1e-4, betas=(0.0, 0.9))
opt_d = torch.optim.Adam(D.parameters(), lr=4e-4, betas=(0.0, 0.9))
batch = 0


def next_real():
    global batch
    x = real_images[(batch * B) % 512:(batch * B) % 512 + B]
    batch += 1
    return x


for step in range(STEPS):
    for k in range(N_CRITIC):
        real = next_real()
        z = init["z"][step, k] if EXACT else torch.randn(B, Z)
        with torch.no_grad():
            fake = G(z)
        loss_d = F.relu(1.0 - D(real)).mean() + F.relu(1.0 + D(fake)).mean()
        opt_d.zero_grad(set_to_none=True)
        loss_d.backward()
        opt_d.step()
    D.requires_grad_(False)
    z = init["z"][step, N_CRITIC] if EXACT else torch.randn(B, Z)
    loss_g = -D(G(z)).mean()
    opt_g.zero_grad(set_to_none=True)
    loss_g.backward()
    opt_g.step()
    D.requires_grad_(True)
    # the generator's hinge loss starts as a mean of scores near 0 (a cancellation: a few 1e-8
    # of roundoff is 1e-4 of it), so it is printed apart from the losses compared with PyTorch
    print(f"step {step} loss {loss_d.item():.9g} g_loss {loss_g.item():.9g}")
G.eval()
with torch.no_grad():
    sample = G(init["z"][0, 0][:4])
    score = D(sample).mean().item() - D(real_images[:4]).mean().item()
    print(f"generated range {sample.min().item():.4f} {sample.max().item():.4f} score gap {score:.4f}")
