"""Dynamic feature: an attention seq2seq whose source and target lengths
both vary per batch.

A GRU encodes S source tokens; a GRUCell decoder, started from the
encoder's final state, attends over the encoder's outputs (bmm, softmax)
for T - 1 teacher-forced steps.  S cycles through 3..7 and T through 3..6
independently, so two loops (the decoder's forward and backward) have a
symbolic trip count, and the backward loop reads the forward loop's
carried state h[t - 1]: the body's value for t >= 1, the encoder's state
(the carry's seed) for t = 0.  24 optimizer steps (--steps N)."""
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
enc = nn.GRU(HID, HID, batch_first=True)
dec = nn.GRUCell(2 * HID, HID)
attn = nn.Linear(HID, HID, bias=False)
head = nn.Linear(2 * HID, VOCAB)
params = [p for m in (embed, enc, dec, attn, head) for p in m.parameters()]
opt = janus.optim.Adam(params, lr=0.01)
data = janus.randint(1, VOCAB, (BATCH, 16))
for step in range(args.steps):
    S, T = 3 + (step * 3) % 5, 3 + (step * 7) % 4
    mem, h = enc(embed(data[:, :S]))
    h, ctx, loss = h[0], janus.zeros(BATCH, HID), 0
    for t in range(T - 1):
        h = dec(janus.cat([embed(data[:, 8 + t]), ctx], 1), h)
        a = F.softmax(janus.bmm(mem, attn(h).unsqueeze(2)).squeeze(2), dim=1)
        ctx = janus.bmm(a.unsqueeze(1), mem).squeeze(1)
        loss = loss + F.cross_entropy(head(janus.cat([h, ctx], 1)), data[:, 9 + t])
    opt.zero_grad()
    (loss / (T - 1)).backward()
    opt.step()
print("done")
