"""Knowledge distillation on Fashion-MNIST (the first 1024 test images): a
teacher MLP with dropout trained briefly, put in eval mode and frozen
(requires_grad_(False)); then a smaller student trained on a mix of the
KL divergence to the teacher's softened distribution (F.kl_div of
log_softmax against softmax at temperature T, reduction='batchmean',
scaled by T*T) and cross_entropy with label_smoothing, with gradient
accumulation over micro-batches, clip_grad_norm_ (its returned total norm
printed), and a OneCycleLR schedule stepped once per optimizer step."""
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
    for name, off, shape in (("images-idx3", 16, (n, 784)), ("labels-idx1", 8, (n,))):
        with gzip.open(os.path.join(DATA, f"t10k-{name}-ubyte.gz")) as f:
            raw = f.read(off + n * (784 if len(shape) == 2 else 1))[off:]
        out.append(torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(*shape))
    return out[0].float() / 255.0, out[1].long()


def mlp(widths, dropout):
    layers = []
    for a, b in zip(widths[:-2], widths[1:-1]):
        layers += [nn.Linear(a, b), nn.ReLU(), nn.Dropout(dropout)]
    return nn.Sequential(*layers, nn.Linear(widths[-2], widths[-1]))


def distill_loss(student_logits, teacher_logits, labels, T=4.0, alpha=0.7):
    soft = F.kl_div(F.log_softmax(student_logits / T, dim=1), F.softmax(teacher_logits / T, dim=1),
                    reduction="batchmean") * (T * T)
    hard = F.cross_entropy(student_logits, labels, label_smoothing=0.1)
    return alpha * soft + (1 - alpha) * hard


x, y = fashion(1024)
x = (x - x.mean()) / x.std()
torch.manual_seed(0)
drop = 0.0 if EXACT else 0.2
teacher, student = mlp([784, 256, 128, 10], drop), mlp([784, 32, 10], drop)
init = shared(lambda: {"teacher": teacher.state_dict(), "student": student.state_dict()})
teacher.load_state_dict(init["teacher"])
student.load_state_dict(init["student"])

opt = torch.optim.Adam(teacher.parameters(), lr=1e-3)
teacher.train()
for step in range(8):
    xb, yb = x[step * 128:(step + 1) * 128], y[step * 128:(step + 1) * 128]
    loss = F.cross_entropy(teacher(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"teacher step {step} loss {loss.item():.9g}")
teacher.eval()
teacher.requires_grad_(False)

EPOCHS, BATCH, ACCUM = 2, 128, 4
MICRO = BATCH // ACCUM
steps_per_epoch = x.size(0) // BATCH
opt = torch.optim.SGD(student.parameters(), lr=0.1, momentum=0.9)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.2, epochs=EPOCHS, steps_per_epoch=steps_per_epoch)
student.train()
for epoch in range(EPOCHS):
    perm = torch.arange(x.size(0)) if EXACT else torch.randperm(x.size(0))
    for i in range(steps_per_epoch):
        idx = perm[i * BATCH:(i + 1) * BATCH]
        opt.zero_grad(set_to_none=True)
        total = 0.0
        for xm, ym in zip(x[idx].split(MICRO), y[idx].split(MICRO)):
            with torch.no_grad():
                t_logits = teacher(xm)
            loss = distill_loss(student(xm), t_logits, ym) / ACCUM
            loss.backward()
            total += loss.item()
        norm = nn.utils.clip_grad_norm_(student.parameters(), max_norm=1.0)
        opt.step()
        sched.step()
        print(f"epoch {epoch} step {i} loss {total:.9g} grad norm {norm.item():.6g} lr {sched.get_last_lr()[0]:.6g}")

student.eval()
with torch.no_grad():
    agree = (student(x).argmax(1) == teacher(x).argmax(1)).float().mean()
print(f"student agrees with teacher on {agree.item():.4f}")
