"""Dynamic feature: Python-side state mutated between steps.

An exponential moving average of the loss lives in a Python float
(`ema = 0.9*ema + 0.1*loss.item()`) and is fed back into the next step's
ops as a scalar that changes every step; a running-statistics tensor outside
the optimizer is updated in place every step (state written back by the
graph).
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
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
opt = janus.optim.SGD(model.parameters(), lr=0.05)
running = janus.zeros(16)   # mean hidden activation, kept by the script
ema = 1.0
for step in range(args.steps):
    hidden = model[1](model[0](X))
    with janus.no_grad():
        running.mul_(0.9).add_(hidden.mean(0), alpha=0.1)
    loss = F.mse_loss(model[2](hidden), Y) / ema
    opt.zero_grad()
    loss.backward()
    opt.step()
    ema = 0.9 * ema + 0.1 * loss.item()
print("done")
