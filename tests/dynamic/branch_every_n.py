"""Dynamic feature: a Python branch taken every Nth step.

Every third step adds an L2 penalty on the weights: two step structures at
the same place, i.e. two variants of one group, decided by the `if` line.
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

janus.manual_seed(0)
X = janus.randn(16, 8)
Y = X @ janus.randn(8, 1)
model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
opt = janus.optim.SGD(model.parameters(), lr=0.05)
for step in range(args.steps):
    loss = F.mse_loss(model(X), Y)
    if step % 3 == 0:
        loss = loss + 1e-3 * (model[0].weight.pow(2).sum() + model[2].weight.pow(2).sum())
    opt.zero_grad()
    loss.backward()
    opt.step()
print("done")
