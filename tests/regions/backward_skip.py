"""A small training loop whose loss.backward() the replay skips (replay/
backward.c): python backward_skip.py MODE [STEPS] [AT].  Two linear layers
with tanh, Adam, fixed random data; every step prints its loss as exact bits
(float.hex) after the optimizer step; tests/python/test_backward_skip.py
runs it eagerly and under `janus replay` with the skip on and off and
compares them.  Under replay the backward counters go to stderr ("BWD
{...}").

Modes (from step AT on, where it says so):
  plain      forward, zero_grad, backward, step
  gradprint  the gradients' bits are printed after backward (a sync between
             backward and the step)
  missafter  from AT on, the first gradient is halved after backward (an op
             the graph does not hold, after the skipped backward: a miss)
  rootmul    from AT on, the loss is doubled in place after backward (a miss:
             its history moves on; the engine at the fallback must start
             from the loss as backward saw it)
  zeroafter  from AT on, zero_grad() right after backward, then an op the
             graph does not hold (a miss after the .grads were dropped)
  hook       from AT on, a gradient hook on the hidden layer's output
  retain     backward(retain_graph=True)
  accum      two backwards per step into the same .grad (accumulation)
  grad       autograd.grad and a hand-written update instead of backward
  earlier    the loss is read (a sync) before backward: its graph was made
             in the segment before
  sgdmiss    SGD over two parameter groups; from AT on the second group's
             learning rate differs from the recorded one: the graph misses
             at its first update, after the first group's were captured
             (their in-place writes bumped versions of tensors the skipped
             backward saved, before the engine runs at the fallback)
  expo       the loss's exponent alternates between 2 and 3 (pow's
             derivative reads the saved exponent: a graph input the
             backward's ops bind)
  rnn        a recurrent net: the hidden layer runs over the first 3..6
             rows of x one at a time, 3 + step % 4 of them (a loop the
             graph holds with its trip count a symbol, and the backward
             through time inside the skipped stretch: a plan per length)
  rnnmiss    rnn, and from AT on the first gradient is halved after
             backward (a miss after a skipped backward with a loop)
  rnnsum     rnn with the loss summed inside the time loop: backward()'s
             root is the loop's carried sum, and the followed graph's
             cursor stands at the loop's body end when it is called"""
import hashlib
import json
import sys

import janus
import janus.nn as nn

MODE = sys.argv[1] if len(sys.argv) > 1 else "plain"
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 12
AT = int(sys.argv[3]) if len(sys.argv) > 3 else 99


def bits(t):
    return hashlib.sha1(",".join(float(v).hex() for v in t.detach().reshape(-1).tolist()).encode()).hexdigest()[:12]


def main():
    janus.manual_seed(0)
    l1, l2 = nn.Linear(8, 16), nn.Linear(16, 4)
    params = list(l1.parameters()) + list(l2.parameters())
    if MODE == "sgdmiss":
        opt = janus.optim.SGD([{"params": l1.parameters()}, {"params": l2.parameters()}], lr=0.05)
    else:
        opt = janus.optim.Adam(params, lr=0.01)
    xs, y = janus.randn(20, 6, 8), janus.randn(6, 4)
    x2 = janus.randn(6, 8)
    rec = nn.Linear(16, 16, bias=False)
    if MODE.startswith("rnn"):
        params += list(rec.parameters())
        opt = janus.optim.Adam(params, lr=0.01)
    for i in range(STEPS):
        x = xs[i % 20]  # a slice of the data set: its offset (and its saved alias's) moves every step
        if MODE == "sgdmiss" and i == AT:
            opt.param_groups[1]["lr"] = 0.02
        opt.zero_grad()
        if MODE.startswith("rnn"):
            h, loss = janus.zeros(1, 16), 0
            for t in range(3 + i % 4):
                h = (l1(x[t:t + 1]) + rec(h)).tanh()
                if MODE == "rnnsum":
                    loss = loss + ((l2(h) - y[t:t + 1]) ** 2).mean()
        else:
            h = l1(x).tanh()
        if MODE == "hook" and i >= AT:
            h.register_hook(lambda g: g * 2)
        if MODE != "rnnsum":
            loss = ((l2(h) - y) ** (3.0 if MODE == "expo" and i % 2 else 2.0)).mean()
        if MODE == "earlier":
            print(f"step {i} before {loss.item().hex()}")
        if MODE == "grad":
            gs = janus.autograd.grad(loss, params)
            with janus.no_grad():
                for p, g in zip(params, gs):
                    p.sub_(g * 0.01)
            print(f"step {i} loss {loss.item().hex()}")
            continue
        loss.backward(retain_graph=MODE == "retain")
        if MODE == "accum":
            ((l2(l1(x2).tanh()) + y) ** 2).mean().backward()
        if MODE == "rootmul" and i >= AT:
            loss.mul_(2.0)
        if MODE == "zeroafter" and i >= AT:
            opt.zero_grad()
            with janus.no_grad():
                params[0].mul_(1.0)
        if MODE in ("missafter", "rnnmiss") and i >= AT:
            with janus.no_grad():
                params[0].grad.mul_(0.5)
        if MODE == "gradprint":
            print(f"step {i} grads {' '.join(bits(p.grad) for p in params)}")
        opt.step()
        print(f"step {i} loss {loss.item().hex()}")
    print("final " + " ".join(bits(p) for p in params))
    if janus._replay.active:
        st = janus._C._rp_stats()
        sys.stderr.write("BWD " + json.dumps({k: v for k, v in st.items() if k.startswith("backward")}) + "\n")


main()
