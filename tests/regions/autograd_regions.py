"""Autograd across replaced module calls (the group node: runtime/autograd.c
jn_ag_group_begin, replay/region.c): python autograd_regions.py MODE.  Each
mode trains for 16 steps on fixed random data and prints, every step, the
loss and a hash of every parameter's gradient as exact bits (float.hex), and
whatever error text a mode provokes; tests/python/test_region_autograd.py
runs it eagerly and under `janus replay` and compares stdout and the final
weights.  Under replay it also writes, per step, the autograd nodes made by
the module call and the members of its output's group node ("NODES step
made members") and the region counters ("REGIONS {...}") to stderr.

Modes: linear (nn.Linear), lstmcell (an LSTMCell with (h, c) carried over
4 time steps; the last c gets no gradient), twice (one Linear called twice
in a step), twocons (a call's output read by two consumers), gradin (the
call's input requires grad from an earlier op that also feeds the loss),
retain (backward(retain_graph=True) twice), twicebw (a second backward
without it: the error), inplace (a saved input changed in place after the
call: the error), agrad (autograd.grad w.r.t. a parameter and a non-leaf
input)."""
import hashlib
import json
import sys

import janus
import janus.nn as nn

MODE = sys.argv[1] if len(sys.argv) > 1 else "linear"
REPLAY = janus._replay.active
NAMES = []  # grad_fn names of the calls' outputs this step (printed: eager's names)


def bits(t):
    return hashlib.sha1(",".join(float(v).hex() for v in t.detach().reshape(-1).tolist()).encode()).hexdigest()[:12]


def grads(params):
    return " ".join("-" if p.grad is None else bits(p.grad) for p in params)


def counted(step, f, *args):
    """Call the module (one call site for all a module's calls: the recording's analyzer refuses
    a module whose calls with inputs of one shape come from two lines), writing the nodes it made and its output's group size (replay)."""
    n0 = janus._C._ag_nodes_made()
    out = f(*args)
    made = janus._C._ag_nodes_made() - n0
    first = out[0] if isinstance(out, tuple) else out
    NAMES.append(first.grad_fn.op)
    if REPLAY:
        sys.stderr.write(f"NODES {step} {made} {janus._C._ag_group_size(first)} {first.grad_fn.op}\n")
    return out


def first_line(e):
    return str(e).splitlines()[0]


def main():
    janus.manual_seed(0)
    x = janus.randn(8, 12)
    t = janus.randn(8, 8)
    lin = nn.Linear(12, 8)
    params = list(lin.parameters())
    if MODE == "lstmcell":
        cell, head = nn.LSTMCell(12, 16), nn.Linear(16, 8)
        params = list(cell.parameters()) + list(head.parameters())
        xs = janus.randn(5, 8, 12)
        h, c = janus.zeros(8, 16), janus.zeros(8, 16)
    xb = janus.randn(8, 12)
    if MODE in ("gradin", "agrad"):
        w0 = nn.Parameter(janus.randn(12))
        params = params + [w0]
    opt = janus.optim.Adam(params, lr=0.01)
    for i in range(16):
        opt.zero_grad()
        extra = ""
        if MODE == "lstmcell":
            h, c = h.detach(), c.detach()
            loss = 0
            for s in range(4):
                h, c = counted(i, cell, xs[s], (h, c))
                loss = loss + ((head(h) - xs[s + 1, :, :8]) ** 2).mean()
            extra = f" c {c.grad_fn.op}"
        elif MODE == "twice":
            u = counted(i, lin, x)
            loss = ((u - t) ** 2).mean() + ((counted(i, lin, xb) + t) ** 2).mean()
        elif MODE == "twocons":
            out = counted(i, lin, x)
            loss = ((out - t) ** 2).mean() + out.sum() * 0.01
        elif MODE in ("gradin", "agrad"):
            x2 = x * w0
            out = counted(i, lin, x2)
            loss = ((out - t) ** 2).mean() + (x2 * x2).mean()
            if MODE == "agrad":
                gw, gx = janus.autograd.grad(loss, [lin.weight, x2], retain_graph=True)
                extra = f" agrad {bits(gw)} {bits(gx)}"
        else:
            xx = x * 1.0
            out = counted(i, lin, xx)
            loss = ((out - t) ** 2).mean()
            if MODE == "inplace":
                xx.add_(1.0)
                try:
                    loss.backward()
                    extra = " no error"
                except RuntimeError as e:
                    extra = " error " + first_line(e)
                loss = ((counted(i, lin, xb * 1.0) - t) ** 2).mean()  # the step still trains
        if MODE == "retain":
            loss.backward(retain_graph=True)
            extra = " first " + grads(params)
        loss.backward()
        if MODE == "twicebw":
            try:
                loss.backward()
                extra = " no error"
            except RuntimeError as e:
                extra = " error " + first_line(e)
        print(f"step {i} loss {loss.item().hex()} grads {grads(params)}{extra} fn {','.join(NAMES)}")
        NAMES.clear()
        opt.step()
    if REPLAY:
        sys.stderr.write("REGIONS " + json.dumps(janus._C._rp_region_stats()) + "\n")


main()
