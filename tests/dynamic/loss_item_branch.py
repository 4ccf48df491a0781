"""Dynamic feature: a data-dependent branch on `loss.item()`.

`loss.item()` is a sync point: it splits each step into a segment before it
(forward) and one after it (backward, update).  When the loss is above the
threshold the script scales it down first, so the segment after the sync has
two variants decided by the `if` on the item() value.
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
opt = janus.optim.SGD(model.parameters(), lr=0.02)
THRESHOLD = 4.0
for step in range(args.steps):
    loss = F.mse_loss(model(X), Y)
    if loss.item() > THRESHOLD:
        loss = loss * 0.5
    opt.zero_grad()
    loss.backward()
    opt.step()
print("done")
