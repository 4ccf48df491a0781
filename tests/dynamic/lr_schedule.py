"""Dynamic feature: a learning-rate schedule.

StepLR halves the learning rate every 5 steps: the optimizer's update ops
see a different Python float `lr` over the run, which must become a varying
scalar input of the graph (never a guarded constant).
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
opt = janus.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
sched = janus.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)
for step in range(args.steps):
    loss = F.mse_loss(model(X), Y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
print("done")
