"""Dynamic feature: the last batch of an epoch is smaller.

52 samples in batches of 16 without drop_last: every epoch is three batches
of 16 and one of 4, so the batch dim varies (a `dim` symbol 4..16 at replay,
its recorded range a SEEN guard).  6 epochs = 24 optimizer steps.  Recorded
by the analyzer tests (tests/python/test_analyzer_golden.py,
test_dynamic_recordings.py).  --steps N stops after N optimizer steps (more
epochs as needed), --batch B changes the batch size."""
import argparse
import itertools
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import janus  # noqa: E402
import janus.nn as nn  # noqa: E402
from janus.utils.data import DataLoader, TensorDataset  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=24)
ap.add_argument("--batch", type=int, default=16)
args = ap.parse_args()

janus.manual_seed(0)
X = janus.randn(52, 8)
Y = (X.sum(1) > 0).long()
batches = DataLoader(TensorDataset(X, Y), batch_size=args.batch, shuffle=False)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
opt = janus.optim.SGD(model.parameters(), lr=0.1)
loss_fn = nn.CrossEntropyLoss()
for epoch in range(-(-args.steps // len(batches))):
    loader = itertools.islice(batches, args.steps - epoch * len(batches))  # the last epoch may stop early
    for x, y in loader:
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
print("done")
