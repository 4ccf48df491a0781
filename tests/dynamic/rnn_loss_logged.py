"""Dynamic feature: the loss read on the host between the forward and the
backward of a recurrent model whose sequence length varies.

An LSTMCell runs over T tokens, T cycling through 3..7, with a loss on
every step's output, and the script adds `loss.item()` to a running total
before `loss.backward()`: that sync splits the step, so the values
autograd saved at every time step (each step's states and gates) outlive
the forward's segment and the backward's segment reads them, one tensor
per time step, from outside.  The forward's loop keeps them as collects
(every iteration's object a slice of one output); the backward's loop
reads them as stacked inputs ([trip, ...], iteration i's tensor bound
where it is read), the head's backward reads the state the cell's
backward read the iteration before (a carry of the stacked read, seeded
by the last state), and the peeled last iteration reads the stacked
input's last element: one graph per segment for every length.
24 optimizer steps (--steps N)."""
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

VOCAB, HID, BATCH = 20, 16, 4
janus.manual_seed(0)
embed = nn.Embedding(VOCAB, HID)
cell = nn.LSTMCell(HID, HID)
head = nn.Linear(HID, VOCAB)
params = [p for m in (embed, cell, head) for p in m.parameters()]
opt = janus.optim.Adam(params, lr=0.01)
data = janus.randint(1, VOCAB, (BATCH, 16))
total = 0.0
for step in range(args.steps):
    T = 3 + (step * 3) % 5
    h, c, loss = janus.zeros(BATCH, HID), janus.zeros(BATCH, HID), 0
    for t in range(T):
        h, c = cell(embed(data[:, t]), (h, c))
        loss = loss + F.cross_entropy(head(h), data[:, t + 1])
    total += loss.item()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"total {total:.6f}")
print("done")
