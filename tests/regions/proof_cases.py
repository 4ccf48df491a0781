"""Regions for the proof from the recording (analyzer/regions.c,
tests/python/test_region_proof.py): pure modules and optimizers, and one
module per way to be refused.  Line numbers are part of the golden text
(tests/golden/regions_optimize.txt): edit with care."""
import random
import sys

import janus
import janus.nn as nn

SCALE = janus.ones(4)  # a tensor held in a global
seen = []


class Block(nn.Module):  # pure: parameters, a buffer, its argument
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("shift", janus.zeros(4))

    def forward(self, x):
        return self.lin(x).relu() + self.shift


class Counter(nn.Module):  # stores an attribute
    def __init__(self):
        super().__init__()
        self.n = 0

    def forward(self, x):
        self.n += 1
        return x * 2


class Appends(nn.Module):  # appends to a list that outlives the call
    def forward(self, x):
        seen.append(1)
        return x + 1


class Prints(nn.Module):  # I/O
    def forward(self, x):
        print("forward")
        return x - 1


class Syncs(nn.Module):  # reads tensor data inside the call
    def forward(self, x):
        if x.abs().sum().item() > 1e9:
            return x
        return x * 0.5


class Random(nn.Module):  # Python randomness
    def forward(self, x):
        return x * random.random()


class Global(nn.Module):  # reads a tensor that is not an input
    def forward(self, x):
        return x * SCALE


class Flip(nn.Module):  # control flow on an attribute the script changes
    def __init__(self):
        super().__init__()
        self.double = True

    def forward(self, x):
        if self.double:
            return x * 2
        return x + 2


class Rows(nn.Module):  # op count follows the input's shape: pure
    def forward(self, x):
        acc = x[0]
        for i in range(1, x.shape[0]):
            acc = acc + x[i]
        return acc


class Outer(nn.Module):  # refused through what it calls: its Counter
    def __init__(self):
        super().__init__()
        self.inner = Counter()

    def forward(self, x):
        return self.inner(x) + x


def main(steps):
    janus.manual_seed(0)
    random.seed(0)
    block, parts = Block(), [Counter(), Appends(), Prints(), Syncs(), Random(), Global()]
    flip, rows, outer, crit, makes = Flip(), Rows(), Outer(), nn.CrossEntropyLoss(), MakesData()
    opt = janus.optim.SGD(block.parameters(), lr=0.1, momentum=0.9)
    for step in range(steps):
        x = janus.randn(2 + step // 3 % 2, 4)
        y = block(x)
        for m in parts:
            y = m(y)
        flip.double = step % 2 == 0
        labels = janus.tensor([0, 1, 2][:y.shape[0]])
        loss = (flip(y) * y).mean() + rows(y).sum() + outer(y).mean() + crit(y, labels) + makes(y).mean()
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(block.parameters(), 1.0)
        opt.step()
        print(f"step {step} loss {loss.item():.6f}")


class MakesData(nn.Module):  # makes a tensor from Python data: janus's code, the line here named
    def forward(self, x):
        return x + janus.tensor([1.0, 2.0, 3.0, 4.0])


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 6)
