"""MLP on Fashion-MNIST, trained eagerly with janus.nn / janus.optim.

    python examples/fashion_mlp.py [--epochs 5] [--steps N] [--batch 128]

A PyTorch script ported by changing its imports: DataLoader over a
TensorDataset, nn.Sequential, CrossEntropyLoss, Adam.  Prints the loss as it
falls, then test accuracy and training steps per second.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import janus  # noqa: E402
import janus.nn as nn  # noqa: E402
from janus.datasets import fashion_mnist  # noqa: E402
from janus.utils.data import DataLoader, TensorDataset  # noqa: E402


def build(hidden=256):
    return nn.Sequential(nn.Flatten(), nn.Linear(784, hidden), nn.ReLU(), nn.Linear(hidden, 10))


def load():
    xtr, ytr = fashion_mnist(train=True)
    xte, yte = fashion_mnist(train=False)
    return (xtr.float() / 255.0, ytr), (xte.float() / 255.0, yte)


def evaluate(model, x, y, batch=1000):
    model.eval()
    correct = 0
    with janus.no_grad():
        for i in range(0, x.shape[0], batch):
            correct += (model(x[i:i + batch]).argmax(1) == y[i:i + batch]).sum().item()
    model.train()
    return correct / x.shape[0]


def main(argv=None):
    ap = argparse.ArgumentParser(description="Fashion-MNIST MLP")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--steps", type=int, default=0, help="stop after this many steps (0: run all epochs)")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    janus.manual_seed(args.seed)
    (xtr, ytr), (xte, yte) = load()
    loader = DataLoader(TensorDataset(xtr, ytr), batch_size=args.batch, shuffle=True,
                        generator=janus.Generator().manual_seed(args.seed))
    model = build(args.hidden)
    opt = janus.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    step, t0 = 0, time.perf_counter()
    for epoch in range(args.epochs):
        for x, y in loader:
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            step += 1
            if step % 100 == 0 or step == 1:
                print(f"epoch {epoch} step {step:5d}  loss {loss.item():.4f}", flush=True)
            if args.steps and step >= args.steps:
                break
        if args.steps and step >= args.steps:
            break
    dt = time.perf_counter() - t0
    acc = evaluate(model, xte, yte)
    print(f"test accuracy {acc * 100:.2f}%  ({step / dt:.1f} steps/s over {step} steps)")
    return acc


if __name__ == "__main__":
    main()
