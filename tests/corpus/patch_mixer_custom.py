"""A patch-mixing classifier on 16x16 Fashion-MNIST crops written with the
less common parts of PyTorch: patches cut with Tensor.unfold, a custom
torch.autograd.Function (a clamp whose gradient leaks outside the range,
with ctx.save_for_backward and a non-tensor argument), a mixing block run
through torch.utils.checkpoint.checkpoint, a forward hook that collects
activation norms (torch.linalg.vector_norm) into a list, a MarginRankingLoss
term next to the cross entropy, NAdam and a triangular CyclicLR."""
import gzip
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

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


class LeakyClamp(torch.autograd.Function):
    """clamp(x, -bound, bound) whose gradient outside the range is `leak` times the incoming one."""

    @staticmethod
    def forward(ctx, x, bound, leak):
        ctx.save_for_backward(x)
        ctx.bound, ctx.leak = bound, leak
        return x.clamp(-bound, bound)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        inside = (x.abs() <= ctx.bound).to(grad.dtype)
        return grad * (inside + ctx.leak * (1 - inside)), None, None


class Mixer(nn.Module):
    def __init__(self, tokens, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.token_mix = nn.Linear(tokens, tokens)
        self.channel_mix = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, h):
        h = h + self.token_mix(self.norm(h).transpose(1, 2)).transpose(1, 2)
        return h + self.channel_mix(self.norm(h))


class PatchMixer(nn.Module):
    def __init__(self, patch=4, dim=32, p_drop=0.1):
        super().__init__()
        self.patch = patch
        self.embed = nn.Linear(patch * patch, dim)
        self.mix1, self.mix2 = Mixer(16, dim), Mixer(16, dim)
        self.drop = nn.Dropout(p_drop)
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        p = self.patch
        patches = x.unfold(2, p, p).unfold(3, p, p)                   # [B, 1, 4, 4, p, p]
        h = self.embed(patches.reshape(x.shape[0], 16, p * p))        # [B, 16 tokens, dim]
        h = LeakyClamp.apply(h, 3.0, 0.1)
        h = checkpoint(self.mix1, h, use_reentrant=False)
        h = self.mix2(self.drop(h))
        return self.head(h.mean(1))


x, y = fashion(512)
torch.manual_seed(0)
model = PatchMixer(p_drop=0.0 if EXACT else 0.1)
init = shared(lambda: {"model": model.state_dict()})
model.load_state_dict(init["model"])
norms = []
hook = model.mix2.register_forward_hook(lambda m, args, out: norms.append(torch.linalg.vector_norm(out.detach())))
opt = torch.optim.NAdam(model.parameters(), lr=2e-3, weight_decay=1e-4)
sched = torch.optim.lr_scheduler.CyclicLR(opt, base_lr=5e-4, max_lr=4e-3, step_size_up=4, cycle_momentum=False)
rank = nn.MarginRankingLoss(margin=0.5)
perm = torch.arange(x.size(0)) if EXACT else torch.randperm(x.size(0))
for step in range(20):
    idx = perm[(step * 32) % x.size(0):][:32]
    xb, yb = x[idx], y[idx]
    logits = model(xb)
    true = logits.gather(1, yb[:, None]).squeeze(1)
    other = logits.masked_fill(F.one_hot(yb, 10).bool(), -1e4).amax(1)
    loss = F.cross_entropy(logits, yb) + 0.1 * rank(true, other, torch.ones_like(true))
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    print(f"step {step} loss {loss.item():.9g} lr {sched.get_last_lr()[0]:.6g}")
hook.remove()
print(f"hooked calls {len(norms)} last norm {norms[-1].item():.6g}")
model.eval()
with torch.no_grad():
    print(f"accuracy {(model(x).argmax(1) == y).float().mean().item():.4f}")
