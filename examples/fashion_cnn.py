"""LeNet-style CNN on Fashion-MNIST, trained eagerly.

    python examples/fashion_cnn.py [--epochs 4] [--steps N] [--batch 64]
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


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(self.conv1(x).relu())
        x = self.pool(self.conv2(x).relu())
        x = x.flatten(1)
        x = self.fc2(self.fc1(x).relu()).relu()
        return self.fc3(x)


def load():
    xtr, ytr = fashion_mnist(train=True)
    xte, yte = fashion_mnist(train=False)
    return (xtr.float().unsqueeze(1) / 255.0, ytr), (xte.float().unsqueeze(1) / 255.0, yte)


def evaluate(model, x, y, batch=1000):
    model.eval()
    correct = 0
    with janus.no_grad():
        for i in range(0, x.shape[0], batch):
            correct += (model(x[i:i + batch]).argmax(1) == y[i:i + batch]).sum().item()
    model.train()
    return correct / x.shape[0]


def main(argv=None):
    ap = argparse.ArgumentParser(description="Fashion-MNIST LeNet")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--steps", type=int, default=0, help="stop after this many steps (0: run all epochs)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    janus.manual_seed(args.seed)
    (xtr, ytr), (xte, yte) = load()
    loader = DataLoader(TensorDataset(xtr, ytr), batch_size=args.batch, shuffle=True,
                        generator=janus.Generator().manual_seed(args.seed))
    model = LeNet()
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
