"""Dynamic feature: an argument that is sometimes a float, sometimes a tensor.

`scale(x, s)` multiplies by `s`, a Python float on even steps and a 0-dim
janus tensor on odd steps: the same call site sees two Python types for one
op argument, so the graphs differ by a `pytype` guard.
24 optimizer steps (--steps N for another count)."""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import janus  # noqa: E402
import janus.nn as nn  # noqa: E402
import janus.nn.functional as F  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=24)
args = ap.parse_args()


def scale(x, s):
    return x * s


janus.manual_seed(0)
X = janus.randn(16, 8)
Y = X @ janus.randn(8, 1)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
opt = janus.optim.SGD(model.parameters(), lr=0.05)
s_tensor = janus.tensor(0.5)
for step in range(args.steps):
    s = 0.5 if step % 2 == 0 else s_tensor
    loss = F.mse_loss(scale(model(X), s), Y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("done")
