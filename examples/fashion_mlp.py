"""MLP on Fashion-MNIST, trained eagerly with janus.nn / janus.optim.

    python examples/fashion_mlp.py [--epochs 5] [--steps N] [--batch 128]

A PyTorch script ported by changing its imports: DataLoader over a
TensorDataset, nn.Sequential, CrossEntropyLoss, Adam.  Prints the loss as it
falls, then test accuracy and training steps per second.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fashion_common import arguments, train  # noqa: E402  (puts the repo's python/ on sys.path)
import janus  # noqa: E402
import janus.nn as nn  # noqa: E402


def build(hidden=256):
    return nn.Sequential(nn.Flatten(), nn.Linear(784, hidden), nn.ReLU(), nn.Linear(hidden, 10))


def main(argv=None):
    ap = arguments("Fashion-MNIST MLP", epochs=5, batch=128, lr=1e-3, argv=argv)
    ap.add_argument("--hidden", type=int, default=256)
    args = ap.parse_args(argv)
    return train(lambda: build(args.hidden), lambda p: janus.optim.Adam(p, lr=args.lr), args, (28, 28))


if __name__ == "__main__":
    main()
