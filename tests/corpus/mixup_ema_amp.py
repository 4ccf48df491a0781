"""A training recipe with mixup and a weight EMA on Fashion-MNIST (the
first 512 test images): a custom Dataset subclass whose __getitem__
applies a transform object (scaling, random flip and padded random crop
for training, normalization), torch.utils.data.random_split with a seeded
generator into training and validation sets, DataLoaders over both,
mixup with a Beta(0.4, 0.4) lambda from torch.distributions and a
permutation of the batch, a small CNN with BatchNorm2d, SGD with momentum
and OneCycleLR, an EMA of the weights and buffers with
torch.optim.swa_utils.AveragedModel (get_ema_multi_avg_fn,
use_buffers=True) evaluated under torch.no_grad(), and the usual mixed
precision scaffolding (torch.autocast + torch.amp.GradScaler, enabled only
on CUDA as most scripts write it)."""
import gzip
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Beta
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
from torch.utils.data import DataLoader, Dataset, random_split

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


def read_idx(name, n, header):
    with gzip.open(os.path.join(DATA, name)) as f:
        return bytearray(f.read(header + n)[header:])


class Transform:
    def __init__(self, train, mean=0.2860, std=0.3530):
        self.train, self.mean, self.std = train, mean, std

    def __call__(self, img):                       # uint8 (28, 28) -> float (1, 28, 28)
        x = img.float().div(255.0).unsqueeze(0)
        if self.train:
            if torch.rand(1).item() < 0.5:
                x = x.flip(-1)
            padded = F.pad(x, (2, 2, 2, 2))
            i, j = torch.randint(0, 5, (2,)).tolist()
            x = padded[:, i:i + 28, j:j + 28]
        return (x - self.mean) / self.std


class FashionMNIST(Dataset):
    def __init__(self, n, transform=None):
        self.images = torch.frombuffer(read_idx("t10k-images-idx3-ubyte.gz", n * 784, 16),
                                       dtype=torch.uint8).view(n, 28, 28)
        self.labels = torch.frombuffer(read_idx("t10k-labels-idx1-ubyte.gz", n, 8), dtype=torch.uint8).long()
        self.transform = transform

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        img = self.images[i]
        if self.transform is not None:
            img = self.transform(img)
        return img, self.labels[i].item()


class TransformedSubset(Dataset):
    def __init__(self, subset, transform):
        self.subset, self.transform = subset, transform

    def __len__(self):
        return len(self.subset)

    def __getitem__(self, i):
        img, label = self.subset[i]
        return self.transform(img), label


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(inplace=True), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(32 * 7 * 7, 64), nn.ReLU(inplace=True),
                                        nn.Linear(64, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
use_amp = device.type == "cuda"
EPOCHS, B, ALPHA = 2, 64, 0.4
full = FashionMNIST(512)
torch.manual_seed(0)
train_set, val_set = random_split(full, [448, 64], generator=torch.Generator().manual_seed(42))
model = Net().to(device)
steps = EPOCHS * (len(train_set) // B)
init = shared(lambda: {"model": model.state_dict(), "train": train_set.indices, "val": val_set.indices,
                       "lam": Beta(ALPHA, ALPHA).sample((steps,)), "perm": torch.stack([torch.randperm(B)
                                                                                        for _ in range(steps)])})
model.load_state_dict(init["model"])
if EXACT:  # PyTorch's split (the two libraries' random streams differ)
    train_set.indices, val_set.indices = init["train"], init["val"]
train_loader = DataLoader(TransformedSubset(train_set, Transform(train=not EXACT)), batch_size=B,
                          shuffle=not EXACT, drop_last=True)
val_loader = DataLoader(TransformedSubset(val_set, Transform(train=False)), batch_size=32)

ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9), use_buffers=True)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4, nesterov=True)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=steps)
scaler = torch.amp.GradScaler(device.type, enabled=use_amp)
criterion = nn.CrossEntropyLoss()
beta = Beta(torch.tensor(ALPHA), torch.tensor(ALPHA))


def evaluate(net):
    net.eval()
    correct = total = 0
    loss = 0.0
    with torch.no_grad():
        for x, y in val_loader:
            x, y = x.to(device), y.to(device)
            out = net(x)
            loss += F.cross_entropy(out, y, reduction="sum").item()
            correct += (out.argmax(1) == y).sum().item()
            total += y.size(0)
    return loss / total, correct / total


step = 0
for epoch in range(EPOCHS):
    model.train()
    for x, y in train_loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        lam = init["lam"][step] if EXACT else beta.sample()
        index = init["perm"][step] if EXACT else torch.randperm(x.size(0), device=device)
        mixed = lam * x + (1 - lam) * x[index]
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            out = model(mixed)
            loss = lam * criterion(out, y) + (1 - lam) * criterion(out, y[index])
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        nn.utils.clip_grad_norm_(model.parameters(), 2.0)
        scaler.step(opt)
        scaler.update()
        sched.step()
        ema.update_parameters(model)
        print(f"step {step} loss {loss.item():.9g} lam {float(lam):.4f}")
        step += 1
    val_loss, acc = evaluate(model)
    ema_loss, ema_acc = evaluate(ema)
    print(f"epoch {epoch} val {val_loss:.5f} acc {acc:.4f} ema val {ema_loss:.5f} acc {ema_acc:.4f}")
