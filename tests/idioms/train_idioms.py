"""Training-loop idioms real PyTorch scripts use, one per mode:
python train_idioms.py MODE STEPS.  Each trains a small MLP on fixed random
data and prints its losses; tests/python/test_idioms.py records 20 steps,
replays 80 and asks for every segment as a graph and eager's numbers
(printed lines and final weights) bitwise.  Modes: accum (gradient
accumulation over two micro-batches), wclip (weight clipping through
.data), manual (a hand-written update under no_grad), log (the loss through
.detach().cpu().numpy() into a list), mask (masked_fill / where on the
logits, alternating), teacher (a random.random() decision per step),
evalevery (an evaluation every 5 steps), reseed (manual_seed every step),
noise (randn_like augmentation), perm (a randperm subset each step),
cosine (lr set by hand each step), smooth (label smoothing), clipvalue
(clip_grad_value_), plateau (ReduceLROnPlateau on loss.item()), printt
(printing a tensor), inplace (in-place view ops on the batch, a running
mean carried across steps and cut with detach_()), customfn (custom
autograd Functions: a leaky clamp inside the model, a scaled square on the
loss path, their backward Python), param (nn.utils.parametrizations:
weight_norm on the first layer, spectral_norm with its power iteration on
the last), maskloss (the loss over the rows a bool mask made in the step
keeps, as an ignored label: out[keep], a mask read), ema (a deepcopy of the model tracking its
weights, p_ema.mul_(d).add_(p, alpha=1 - d) under no_grad), bwhook (a
full backward hook on the last layer logging and scaling its grad_input),
maml (first-order MAML: an inner step on half the batch through
torch.func.functional_call and autograd.grad, the outer loss on the other
half through the updated weights)."""
import copy
import math
import random
import sys

import janus
import janus.nn as nn
import janus.nn.functional as F

MODES = ("accum", "wclip", "manual", "log", "mask", "teacher", "evalevery", "reseed", "noise", "perm", "cosine",
         "smooth", "clipvalue", "plateau", "printt", "inplace", "customfn", "param", "maskloss", "ema", "bwhook", "maml")


class _LeakyClamp(janus.autograd.Function):
    """Clamp to [-1, 1] whose gradient leaks `slope` outside (a straight-through variant)."""

    @staticmethod
    def forward(ctx, x, slope):
        ctx.save_for_backward(x)
        ctx.slope = slope
        return x.clamp(-1.0, 1.0)

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        inside = (x.abs() <= 1.0).to(g.dtype)
        return g * (inside + ctx.slope * (1 - inside)), None


class _ScaledSquare(janus.autograd.Function):
    @staticmethod
    def forward(x, k):
        return x * x * k

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.k = inputs[1]

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return 2 * ctx.k * x * g, None


class _FnAct(nn.Module):
    def forward(self, x):
        return _LeakyClamp.apply(x, 0.1)


def main(mode, steps):
    janus.manual_seed(0)
    random.seed(0)
    act = _FnAct() if mode == "customfn" else nn.ReLU()
    model = nn.Sequential(nn.Linear(16, 32), act, nn.Dropout(0.1), nn.Linear(32, 4))
    if mode == "param":
        nn.utils.parametrizations.weight_norm(model[0])
        nn.utils.parametrizations.spectral_norm(model[3])
    if mode in ("accum", "wclip", "mask", "teacher", "evalevery"):
        opt = janus.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    else:
        opt = janus.optim.Adam(model.parameters(), lr=1e-2)
    X = janus.randn(256, 16)
    Y = janus.randint(0, 4, (256,))
    sched = janus.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=2) if mode == "plateau" else None
    hist, carry = [], None
    ema = copy.deepcopy(model) if mode == "ema" else None
    if mode == "bwhook":
        def scale(m, gi, go):
            hist.append(float(go[0].norm()))
            return (gi[0] * 0.5,)
        model[3].register_full_backward_hook(scale)
    for step in range(steps):
        i = (step * 16) % 256
        x, y = X[i:i + 16], Y[i:i + 16]
        if mode == "reseed":
            janus.manual_seed(step)
        elif mode == "noise":
            x = x + 0.1 * janus.randn_like(x)
        elif mode == "perm":
            idx = janus.randperm(256)[:16]
            x, y = X[idx], Y[idx]
        elif mode == "inplace":
            x = x.clone()
            x.unsqueeze_(0)
            x.t_() if x.dim() == 2 else x.squeeze_(0)
        elif mode == "cosine":
            for g in opt.param_groups:
                g["lr"] = 1e-2 * 0.5 * (1 + math.cos(math.pi * step / steps))
        if mode == "accum":
            if step % 2 == 0:
                opt.zero_grad()
            loss = F.cross_entropy(model(x), y) / 2
            loss.backward()
            if step % 2 == 1:
                opt.step()
        elif mode == "maml":
            params = dict(model.named_parameters())
            inner = F.cross_entropy(janus.func.functional_call(model, params, (x[:8],)), y[:8])
            grads = janus.autograd.grad(inner, list(params.values()))
            fast = {n: p - 0.1 * g for (n, p), g in zip(params.items(), grads)}
            loss = F.cross_entropy(janus.func.functional_call(model, fast, (x[8:],)), y[8:])
            opt.zero_grad()
            loss.backward()
            opt.step()
        elif mode == "manual":
            loss = F.cross_entropy(model(x), y)
            model.zero_grad()
            loss.backward()
            with janus.no_grad():
                for p in model.parameters():
                    p -= 0.05 * p.grad
        else:
            opt.zero_grad()
            out = model(x.float())
            if mode == "mask":
                out = out.masked_fill(y.unsqueeze(1) == 3, -1e4) if step % 3 == 0 else janus.where(out > 5, out, out * 1.0)
            elif mode == "teacher" and random.random() < 0.5:
                out = out + model(x * 0.5)
            elif mode == "inplace":
                carry = out.mean(0) if carry is None else 0.9 * carry + 0.1 * out.mean(0)
                out = out + carry
                carry.detach_()
            if mode == "maskloss":  # rows of classes 0-2 only, as an ignored label (a mask read)
                keep = y != 3
                out, y = out[keep], y[keep]
            loss = F.cross_entropy(out, y, label_smoothing=0.1 if mode == "smooth" else 0.0)
            if mode == "customfn":
                loss = loss + _ScaledSquare.apply(out, 1e-3).mean()
            loss.backward()
            if mode == "clipvalue":
                nn.utils.clip_grad_value_(model.parameters(), 0.01)
            opt.step()
        if mode == "wclip":
            for p in model.parameters():
                p.data.clamp_(-0.5, 0.5)
        elif mode == "log":
            hist.append(float(loss.detach().cpu().numpy()))
        elif mode == "ema":
            with janus.no_grad():
                for pe, p in zip(ema.parameters(), model.parameters()):
                    pe.mul_(0.9).add_(p, alpha=0.1)
        elif mode == "plateau":
            sched.step(loss.item())
        elif mode == "printt":
            print(loss.detach())
        elif mode == "evalevery" and step % 5 == 4:
            model.eval()
            with janus.no_grad():
                acc = (model(X).argmax(1) == Y).float().mean().item()
            model.train()
            print("acc", f"{acc:.4f}")
        print(step, "loss", f"{loss.item():.7f}")
    print("hist", len(hist), sum(hist))
    if ema is not None:
        print("ema", [p.reshape(-1).tolist() for p in ema.parameters()])
    print("weights", [p.reshape(-1).tolist() for p in model.parameters()])  # manual mode steps no optimizer


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
