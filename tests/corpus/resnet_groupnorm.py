"""A small ResNet on 16x16 Fashion-MNIST crops: residual blocks of
Conv2d + GroupNorm + LeakyReLU with a 1x1 projection shortcut when the
shape changes, Dropout2d, AdaptiveAvgPool2d, an nn.ModuleList of stages,
SGD with momentum and OneCycleLR, random horizontal flips as augmentation
(torch.rand per sample, torch.where), and a top-1 accuracy under
torch.inference_mode()."""
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
    for name, off, per in (("images-idx3", 16, 784), ("labels-idx1", 8, 1)):
        with gzip.open(os.path.join(DATA, f"t10k-{name}-ubyte.gz")) as f:
            out.append(torch.frombuffer(bytearray(f.read(off + n * per)[off:]), dtype=torch.uint8))
    x = out[0].view(n, 1, 28, 28)[:, :, 6:22, 6:22].float() / 255.0
    return (x - 0.3) / 0.35, out[1].long()


class Block(nn.Module):
    def __init__(self, cin, cout, stride, p_drop):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.gn1 = nn.GroupNorm(4, cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.gn2 = nn.GroupNorm(4, cout)
        self.drop = nn.Dropout2d(p_drop)
        self.act = nn.LeakyReLU(0.1)
        self.shortcut = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.GroupNorm(4, cout))

    def forward(self, x):
        h = self.act(self.gn1(self.conv1(x)))
        h = self.gn2(self.conv2(self.drop(h)))
        return self.act(h + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, p_drop=0.1):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1, bias=False), nn.GroupNorm(4, 8), nn.LeakyReLU(0.1))
        self.stages = nn.ModuleList([Block(8, 8, 1, p_drop), Block(8, 16, 2, p_drop), Block(16, 16, 2, p_drop)])
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.stem(x)
        for stage in self.stages:
            x = stage(x)
        return self.fc(self.pool(x).flatten(1))


x, y = fashion(320)
torch.manual_seed(0)
model = ResNet(p_drop=0.0 if EXACT else 0.1)
init = shared(lambda: {"model": model.state_dict()})
model.load_state_dict(init["model"])
STEPS, B = 10, 32
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=STEPS)
for step in range(STEPS):
    xb, yb = x[step * B:(step + 1) * B], y[step * B:(step + 1) * B]
    if not EXACT:
        flip = torch.rand(B) < 0.5
        xb = torch.where(flip.view(-1, 1, 1, 1), xb.flip(3), xb)
    loss = F.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    print(f"step {step} loss {loss.item():.9g}")
model.eval()
with torch.inference_mode():
    acc = (model(x).argmax(1) == y).float().mean().item()
print(f"train accuracy {acc:.4f}")
