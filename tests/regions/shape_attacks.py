"""Module regions called with many argument signatures (janus/_region.py: variants keyed
by the bound arguments' signature and the guards' values, csrc/region_py.c: looked up by
a hash of the signature, least recently used evicted): python shape_attacks.py MODE.
Each mode trains a small model (Adam, CrossEntropyLoss) on fixed random data, prints a
loss every 5 steps, and under `janus replay` writes the region counters to stderr
("REGIONS {...}"); tests/python/test_region_shapes.py runs every mode eagerly and
replayed and compares the printed lines, the weights (bitwise) and the counters.

lengths: a forward looping over x.shape[1] (an LSTMCell per time step, as
examples/char_lstm.py), the length cycling over 3, 5, 7, 4 for 20 steps, then 6 and 8
(new lengths once the region is proven: learned from one call each).
strides: an MLP called with x = base[:, 0] of a base [8, W, 12], W cycling over 1..6:
one shape, six strides.
guarded: a forward looping self.depth times, depth cycling over 1, 2, 3 every two steps:
the op sequence depends on a guarded attribute (a variant per value, no refusal).
leaf: a forward branching on x.is_leaf, which no guard covers, x alternately a leaf and
not: two calls with equal signatures dispatch different ops, refused.
chunked: the lengths model proven at length 3, then at 70, past janus's MAX_INS
tensors a stack takes (its chunked path: code the proof never ran, so the new length
waits for a second call), then at 5 (learned from one call).
many: the lengths model called with 70 (batch, length) shapes after its proof, then the
60 latest again (kept: replaced), then the first two again (evicted: learned again)."""
import json
import sys

import janus
import janus.nn as nn

MODE = sys.argv[1] if len(sys.argv) > 1 else "lengths"
H = 8


class Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.LSTMCell(4, H)
        self.head = nn.Linear(H, 3)

    def forward(self, x):  # x: [B, T, 4] -> logits [B*T, 3]
        b, t = x.shape[0], x.shape[1]
        h = janus.zeros(b, H)
        c = janus.zeros(b, H)
        outs = []
        for i in range(t):
            h, c = self.cell(x[:, i], (h, c))
            outs.append(h)
        return self.head(janus.stack(outs, 1).reshape(b * t, H))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(12, 16)
        self.fc2 = nn.Linear(16, 3)
        self.depth = 1

    def forward(self, x):
        return self.fc2(janus.tanh(self.fc1(x)))


class Deep(MLP):
    def __init__(self):
        super().__init__()
        self.mid = nn.Linear(16, 16)

    def forward(self, x):
        h = janus.tanh(self.fc1(x))
        for _ in range(self.depth):
            h = janus.tanh(self.mid(h))
        return self.fc2(h)


class Leaf(MLP):
    def forward(self, x):
        if x.is_leaf:  # the argument's history: in no signature, no guard
            return self.fc2(janus.tanh(self.fc1(x)))
        return self.fc2(janus.relu(self.fc1(x)))


def shapes():
    """(batch, length) per step."""
    if MODE == "chunked":  # a length past MAX_INS (64): stack runs its chunked path, new code
        return [(2, 3), (2, 3), (2, 70), (2, 70), (2, 70), (2, 5), (2, 5)]
    if MODE == "lengths":
        return [(2, (3, 5, 7, 4)[i % 4]) for i in range(20)] + [(2, (6, 8)[i % 2]) for i in range(10)]
    # many: 70 new shapes after (2, 3) twice (lengths up to 38: a stack of more than
    # janus's MAX_INS tensors runs other code, learned from two calls)
    new = [(b, t) for t in range(4, 39) for b in (2, 3)]
    return [(2, 3), (2, 3)] + new + new[-60:] + [(2, 3), new[0]]


def main():
    janus.manual_seed(0)
    loss_fn = nn.CrossEntropyLoss()
    if MODE in ("lengths", "many", "chunked"):
        model = Seq()
        X, Y = janus.randn(3, 72, 4), janus.randint(0, 3, (3, 72))
        steps = shapes()
    else:
        model = {"strides": MLP, "guarded": Deep, "leaf": Leaf}[MODE]()
        base = janus.randn(8, 6, 12)
        y = janus.randint(0, 3, (8,))
        x0 = janus.randn(8, 12, requires_grad=True)
        steps = list(range(30))
    opt = janus.optim.Adam(model.parameters(), lr=0.01)
    for i, s in enumerate(steps):
        opt.zero_grad()
        if MODE in ("lengths", "many", "chunked"):
            x, y = X[:s[0], :s[1]], Y[:s[0], :s[1]].reshape(-1)
        elif MODE == "strides":
            w = 1 + i % 6
            x = base[:, :w].contiguous()[:, 0]  # [8, 12] with strides (12 * w, 1)
        elif MODE == "guarded":
            model.depth = 1 + (i // 2) % 3
            x = base[:, 0]
        else:  # leaf
            x = x0 if i % 2 == 0 else x0 * 1.0
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if i % 5 == 0:
            print(f"step {i} loss {loss.item():.9f}")
    if janus._replay.active:
        sys.stderr.write("REGIONS " + json.dumps(janus._C._rp_region_stats()) + "\n")
        regions = janus._region_module.__self__
        for m, r in regions.module_plans():  # the model's variants (a refused one has none)
            if m is model:
                sys.stderr.write(f"VARIANTS kept {len(janus._C._rp_module_variants(r.plans))} learned {r.learned}\n")


main()
