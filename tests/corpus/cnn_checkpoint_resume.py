"""A CNN with BatchNorm on Fashion-MNIST, an SGD optimizer with momentum and
StepLR, a DataLoader with a seeded torch.Generator for shuffling, and a
checkpoint in the middle: torch.save of model, optimizer, scheduler and
generator state, then a fresh model/optimizer/scheduler loaded from it with
torch.load resumes and must produce exactly the losses of the run that went
on; model.eval() accuracy at the end."""
import gzip
import os
import tempfile

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
    out = []
    for name, off, shape in (("images-idx3", 16, (n, 1, 28, 28)), ("labels-idx1", 8, (n,))):
        with gzip.open(os.path.join(DATA, f"t10k-{name}-ubyte.gz")) as f:
            raw = f.read(off + n * (784 if len(shape) == 4 else 1))[off:]
        out.append(torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(*shape))
    return out[0].float() / 255.0, out[1].long()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16 * 7 * 7, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(torch.flatten(x, 1))


def build(state=None):
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
    return model, opt, sched


def run_epochs(model, opt, sched, loader, epochs, tag):
    losses = []
    for epoch in epochs:
        model.train()
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            print(f"{tag} epoch {epoch} loss {loss.item():.9g}")
        sched.step()
    return losses


x, y = fashion(384)
torch.manual_seed(0)
model, opt, sched = build()
init = shared(lambda: {"model": model.state_dict()})
model.load_state_dict(init["model"])
gen = torch.Generator().manual_seed(1)
loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=not EXACT, generator=gen)
run_epochs(model, opt, sched, loader, range(2), "train")
ckpt = os.path.join(tempfile.mkdtemp(), "ckpt.pt")
torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
            "generator": gen.get_state(), "epoch": 2}, ckpt)
went_on = run_epochs(model, opt, sched, loader, range(2, 4), "train")

state = torch.load(ckpt)
model2, opt2, sched2 = build(state)
gen2 = torch.Generator()
gen2.set_state(state["generator"])
loader2 = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=not EXACT, generator=gen2)
resumed = run_epochs(model2, opt2, sched2, loader2, range(state["epoch"], 4), "resume")
print("resumed identically" if resumed == went_on else "RESUME DIFFERS")
model2.eval()
with torch.no_grad():
    acc = (model2(x).argmax(1) == y).float().mean().item()
print(f"train accuracy {acc:.4f}")
os.remove(ckpt)
