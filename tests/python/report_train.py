"""The training script of the report tests (tests/python/test_report.py).

A small MLP trained with Adam on fixed random data, printing loss.item()
every step.  --vary makes every third step's batch smaller (2 to 14 rows
where the recording saw 16): the same guard then misses with a different
value each time, which `janus report` and `janus inspect` must show as one
guard with a range of values.  --sleep S waits S seconds per step (the
progress tests)."""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import janus  # noqa: E402
import janus.nn as nn  # noqa: E402
import janus.nn.functional as F  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=20)
ap.add_argument("--vary", action="store_true")
ap.add_argument("--sleep", type=float, default=0.0)
args = ap.parse_args()

janus.manual_seed(0)
X = janus.randn(32, 8)
Y = X @ janus.randn(8, 1)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
opt = janus.optim.Adam(model.parameters(), lr=0.01)
for step in range(args.steps):
    n = 2 + (step // 3) % 13 if args.vary and step % 3 == 2 else 16
    x, y = X[:n], Y[:n]
    loss = F.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.6f}")
    if args.sleep:
        time.sleep(args.sleep)
