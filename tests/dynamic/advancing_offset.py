"""Dynamic feature: batches read at an advancing offset.

A character LSTM over the source text of Python's own `json` package reads
each batch as the next slice of the text, `data[pos:pos + B*(T+1)]`: the
slice start moves every step, an int symbol whose recorded range a longer
run goes past (wrapping to 0 only at the end of the text), and the sequence
length T cycles through 3..6, the trip count of the loops over time.  The
loss is printed every 5 steps (an item() sync, a segment of its own).
24 optimizer steps (--steps N); --max-len L makes T cycle through 3..L and
--batch B sets the batch size."""
import argparse
import glob
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import janus  # noqa: E402
import janus.nn as nn  # noqa: E402
import janus.nn.functional as F  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=24)
ap.add_argument("--batch", type=int, default=4)
ap.add_argument("--max-len", type=int, default=6)
args = ap.parse_args()

text = "".join(open(f, encoding="utf-8").read() for f in sorted(glob.glob(os.path.join(os.path.dirname(json.__file__),
                                                                                       "*.py"))))
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = janus.tensor([stoi[c] for c in text], dtype=janus.int64)

EMB, HID = 8, 16
janus.manual_seed(0)
embed = nn.Embedding(len(chars), EMB)
cell = nn.LSTMCell(EMB, HID)
head = nn.Linear(HID, len(chars))
opt = janus.optim.Adam(list(embed.parameters()) + list(cell.parameters()) + list(head.parameters()), lr=0.01)
B, pos = args.batch, 0
for step in range(args.steps):
    T = 3 + step % (args.max_len - 2)
    n = B * (T + 1)
    if pos + n > data.shape[0]:
        pos = 0
    chunk = data[pos:pos + n].view(B, T + 1)
    pos += n
    e = embed(chunk[:, :T])
    h, c = janus.zeros(B, HID), janus.zeros(B, HID)
    outs = []
    for t in range(T):
        h, c = cell(e[:, t], (h, c))
        outs.append(h)
    logits = head(janus.stack(outs, 1).reshape(B * T, HID))
    loss = F.cross_entropy(logits, chunk[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 5 == 0:
        print(f"step {step} loss {loss.item():.6f}")
print("done")
