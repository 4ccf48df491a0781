"""LeNet-style CNN on Fashion-MNIST, trained eagerly.

    python examples/fashion_cnn.py [--epochs 4] [--steps N] [--batch 64]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fashion_common import arguments, train  # noqa: E402  (puts the repo's python/ on sys.path)
import janus  # noqa: E402
import janus.nn as nn  # noqa: E402


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


def main(argv=None):
    args = arguments("Fashion-MNIST LeNet", epochs=4, batch=64, lr=2e-3, argv=argv).parse_args(argv)
    return train(LeNet, lambda p: janus.optim.Adam(p, lr=args.lr), args, (1, 28, 28))


if __name__ == "__main__":
    main()
