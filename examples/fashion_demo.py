"""Short eager training demo on Fashion-MNIST (the README's main job).

A two-layer MLP trained with mini-batch SGD, gradients written out by hand
with janus ops (autograd arrives with the training issue).  Prints the loss
as it falls, then test accuracy and steps per second.

    python examples/fashion_demo.py [--steps 600] [--batch 128] [--lr 0.1]
"""
import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import janus  # noqa: E402
from janus.datasets import fashion_mnist  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    janus.manual_seed(args.seed)

    xtr, ytr = fashion_mnist(train=True)
    xte, yte = fashion_mnist(train=False)
    xtr = xtr.view(xtr.shape[0], -1).float() / 255.0
    xte = xte.view(xte.shape[0], -1).float() / 255.0
    n, d = xtr.shape
    print(f"Fashion-MNIST: {n} train / {xte.shape[0]} test images of {d} pixels")

    h = args.hidden
    w1 = janus.randn(d, h) * math.sqrt(2.0 / d)
    b1 = janus.zeros(h)
    w2 = janus.randn(h, 10) * math.sqrt(1.0 / h)
    b2 = janus.zeros(10)

    perm = janus.randperm(n)
    pos = 0
    t0 = time.perf_counter()
    for step in range(1, args.steps + 1):
        if pos + args.batch > n:
            perm, pos = janus.randperm(n), 0
        idx = perm[pos:pos + args.batch]
        pos += args.batch
        x, y = xtr[idx], ytr[idx]
        bs = x.shape[0]
        # forward
        z1 = x @ w1 + b1
        a1 = z1.relu()
        logits = a1 @ w2 + b2
        logp = logits.log_softmax(dim=1)
        loss = -logp.gather(1, y.unsqueeze(1)).mean()
        # backward (cross-entropy through softmax, then the two layers)
        g = (logp.exp() - janus.one_hot(y, 10).float()) / bs
        gw2 = a1.t() @ g
        gb2 = g.sum(0)
        ga1 = g @ w2.t()
        gz1 = ga1 * (z1 > 0).float()
        gw1 = x.t() @ gz1
        gb1 = gz1.sum(0)
        # SGD update, in place
        for p, gp in ((w1, gw1), (b1, gb1), (w2, gw2), (b2, gb2)):
            p.sub_(gp, alpha=args.lr)
        if step % 100 == 0 or step == 1:
            print(f"step {step:5d}  loss {loss.item():.4f}")
    dt = time.perf_counter() - t0

    pred = ((xte @ w1 + b1).relu() @ w2 + b2).argmax(dim=1)
    acc = (pred == yte).float().mean().item()
    print(f"test accuracy {acc * 100:.2f}%  ({args.steps / dt:.1f} steps/s, batch {args.batch})")


if __name__ == "__main__":
    main()
