"""A small Vision Transformer on Fashion-MNIST (the first 512 test images
and their labels, read from the gzip'd IDX files): a Conv2d patch embedding
with stride = patch size, a learned class token (an nn.Parameter
concatenated after expand) and learned positional embedding, a pre-norm
nn.TransformerEncoder with GELU (batch_first=True, norm_first=True),
AdamW with two parameter groups (no weight decay for norms, biases and
embeddings, chosen by name from named_parameters()), linear warmup then
cosine decay with LambdaLR, and a no_grad accuracy under model.eval()."""
import gzip
import math
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
    with gzip.open(os.path.join(DATA, "t10k-labels-idx1-ubyte.gz")) as f:
        labels = f.read(8 + n)[8:]
    x = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(n, 1, 28, 28).float() / 255.0
    y = torch.frombuffer(bytearray(labels), dtype=torch.uint8).long()
    return (x - 0.2860) / 0.3530, y


class ViT(nn.Module):
    def __init__(self, patch=7, dim=32, depth=2, heads=4, classes=10, dropout=0.1):
        super().__init__()
        self.patch_embed = nn.Conv2d(1, dim, kernel_size=patch, stride=patch)
        n = (28 // patch) ** 2
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.randn(1, n + 1, dim) * 0.02)
        self.drop = nn.Dropout(dropout)
        layer = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=2 * dim, dropout=dropout,
                                           activation="gelu", batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=depth)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)       # (B, 16, dim)
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat([cls, x], dim=1) + self.pos_embed
        x = self.encoder(self.drop(x))
        return self.head(self.norm(x[:, 0]))


images, labels = fashion(512)
torch.manual_seed(0)
model = ViT(dropout=0.0 if EXACT else 0.1)
init = shared(lambda: {"model": model.state_dict()})
model.load_state_dict(init["model"])

decay, no_decay = [], []
for name, p in model.named_parameters():
    if not p.requires_grad:
        continue
    if p.ndim == 1 or name.endswith(".bias") or "norm" in name or name in ("cls_token", "pos_embed"):
        no_decay.append(p)
    else:
        decay.append(p)
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05},
                         {"params": no_decay, "weight_decay": 0.0}], lr=2e-3, betas=(0.9, 0.999))
EPOCHS, B = 2, 64
steps_per_epoch = 448 // B
total, warmup = EPOCHS * steps_per_epoch, 3


def lr_lambda(step):
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * progress))


sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda)
train_x, train_y = images[:448], labels[:448]
val_x, val_y = images[448:], labels[448:]
step = 0
for epoch in range(EPOCHS):
    model.train()
    perm = torch.arange(448) if EXACT else torch.randperm(448)
    for i in range(0, 448, B):
        idx = perm[i:i + B]
        logits = model(train_x[idx])
        loss = F.cross_entropy(logits, train_y[idx], label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        opt.step()
        sched.step()
        print(f"step {step} loss {loss.item():.9g} lr {sched.get_last_lr()[0]:.6g}")
        step += 1
    model.eval()
    with torch.no_grad():
        logits = model(val_x)
        acc = (logits.argmax(dim=1) == val_y).float().mean().item()
        print(f"epoch {epoch} val loss {F.cross_entropy(logits, val_y).item():.6f} acc {acc:.4f}")
