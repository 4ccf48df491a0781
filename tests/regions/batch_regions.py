"""A replaced module call's ops matched with the checks its template proves
left out (replay/region.c rp_region_feed, JANUS_REPLAY_REGION_BATCH): python
batch_regions.py MODE [SWAP_AT].  A module of 12 ops (a GEMM, views with
shape attributes, reductions, a second argument read in the middle) is
called twice a step, once on an input whose making op depends on the
step's parity (two graphs, each with two call sites); 16 steps of Adam on
fixed random data print the loss and every gradient as exact bits
(float.hex); tests/python/test_region_batch.py runs it eagerly and under
`janus replay` with the batch path on and off and compares them.

Modes: chain (as above), swap (from step SWAP_AT on, the module's second
argument is a tensor made before the loop instead of the one the step
computes: same layout, so the call is still replaced, and its first ops
still match the graph, but the op that reads the argument does not: a miss
in the middle of the template's ops), swapshape (that argument has another
shape from SWAP_AT on: the call is learned again, then misses in the
middle as swap).  Under replay the region counters go to stderr
("REGIONS {...}")."""
import hashlib
import json
import sys

import janus
import janus.nn as nn

MODE = sys.argv[1] if len(sys.argv) > 1 else "chain"
SWAP_AT = int(sys.argv[2]) if len(sys.argv) > 2 else 99


def bits(t):
    return hashlib.sha1(",".join(float(v).hex() for v in t.detach().reshape(-1).tolist()).encode()).hexdigest()[:12]


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.w1 = nn.Parameter(janus.randn(12, 16))
        self.b1 = nn.Parameter(janus.randn(16))
        self.w2 = nn.Parameter(janus.randn(4, 8))
        self.g = nn.Parameter(janus.randn(8))

    def forward(self, x, y):
        h = (x @ self.w1 + self.b1).tanh()
        h = h * 0.5 + h.sigmoid()
        h = h + y
        h = h.reshape(8, 4, 4).sum(dim=1)
        return (h @ self.w2) * self.g - h.mean(dim=1, keepdim=True)


def call(m, a, b):
    """One call site for every call (the recording refuses a module called from two lines
    with inputs of one shape)."""
    return m(a, b)


def main():
    janus.manual_seed(0)
    x = janus.randn(8, 12)
    t = janus.randn(8, 8)
    t2 = janus.randn(8, 16)
    yfix = janus.randn(1, 16) if MODE == "swapshape" else janus.randn(8, 16)
    blk = Block()
    opt = janus.optim.Adam(blk.parameters(), lr=0.01)
    for i in range(16):
        opt.zero_grad()
        y = t2 * 0.5
        if MODE in ("swap", "swapshape") and i >= SWAP_AT:
            y = yfix
        out = call(blk, x, y)
        x2 = x * 0.5 if i % 2 else (x * 0.25).tanh()
        out2 = call(blk, x2, y)
        loss = ((out - t) ** 2).mean() + ((out2 + t) ** 2).mean()
        loss.backward()
        print(f"step {i} loss {loss.item().hex()} grads {' '.join(bits(p.grad) for p in blk.parameters())}")
        opt.step()
    if janus._replay.active:
        sys.stderr.write("REGIONS " + json.dumps(janus._C._rp_region_stats()) + "\n")


main()
