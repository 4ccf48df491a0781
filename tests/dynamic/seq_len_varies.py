"""Dynamic feature: the sequence length varies per batch.

An embedding feeds an RNNCell unrolled by a Python `for` loop over time
steps; T cycles through 3..8, so the unrolled forward (and its backward) is
a loop whose trip count is a symbol, and T is a `dim` symbol of the batch.
24 optimizer steps (--steps N); --max-len L makes T cycle through 3..L
(up to 31: the data holds 33 columns, and a slice of all of them would
be no op at all)."""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import janus  # noqa: E402
import janus.nn as nn  # noqa: E402
import janus.nn.functional as F  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=24)
ap.add_argument("--max-len", type=int, default=8)
args = ap.parse_args()

VOCAB, EMB, HID, BATCH = 20, 8, 16, 4
janus.manual_seed(0)
embed = nn.Embedding(VOCAB, EMB)
cell = nn.RNNCell(EMB, HID)
head = nn.Linear(HID, VOCAB)
params = list(embed.parameters()) + list(cell.parameters()) + list(head.parameters())
opt = janus.optim.Adam(params, lr=0.01)
data = janus.randint(0, VOCAB, (BATCH, 33))
for step in range(args.steps):
    T = 3 + (step * 5) % (args.max_len - 2)
    seq = data[:, :T + 1]
    x = embed(seq[:, :T])
    h = janus.zeros(BATCH, HID)
    outs = []
    for t in range(T):
        h = cell(x[:, t], h)
        outs.append(head(h))
    logits = janus.stack(outs, 1)
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), seq[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
print("done")
