"""Dynamic feature: train vs eval mode (dropout, batch norm).

Phases of 4 training steps (dropout draws masks, batch norm uses batch
statistics and updates its running buffers) alternate with 2 evaluation
steps under janus.no_grad() (no dropout, batch norm reads the running
statistics), each evaluation step marked with janus.step().  5 phases =
20 optimizer steps + 10 marked steps (--phases N for another count)."""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import janus  # noqa: E402
import janus.nn as nn  # noqa: E402
import janus.nn.functional as F  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--phases", type=int, default=5)
args = ap.parse_args()

janus.manual_seed(0)
X = janus.randn(16, 8)
Y = (X[:, 0] > 0).long()
XV = janus.randn(16, 8)
model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.25), nn.Linear(16, 2))
opt = janus.optim.SGD(model.parameters(), lr=0.1)
for phase in range(args.phases):
    model.train()
    for i in range(4):
        loss = F.cross_entropy(model(X), Y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    with janus.no_grad():
        for i in range(2):
            pred = model(XV).argmax(1)
            janus.step()
print("done")
