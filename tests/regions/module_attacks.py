"""Scripts that attack the proof of a replaced module call (janus/_region.py,
Regions.module): python module_attacks.py MODE.  Each mode trains a small
model on fixed random data for 40 steps (Adam, CrossEntropyLoss or MSELoss),
prints a loss every 5 steps and the Python-visible effects at the end; under
`janus replay` it also writes the region counters to stderr ("REGIONS
{...}").  tests/python/test_regions.py runs every mode eagerly and replayed
and compares: the outer model is replaced (plain, dropout, dropp, trainval,
batchnorm, dict, tuple, namedtuple, loop, looplen, lstm, flag, scale, scales,
patch, patchcls, zero,
clip, clipcheck, validate, entry) or refused with a named reason while its effect is kept (counter,
append, print, random, sync); its children may still be replaced.  trainvalx: as trainval,
then from step 35 a dropout p neither learned variant takes (at the same argument
signature: a miss of both, counted per variant).  clipcheck: clip_grad_norm_(error_if_nonfinite=True), an infinite gradient at step
30 (the RuntimeError printed, the step skipped).  entry: MLP, the batch 8 -> 6 at step 20,
the model's calls that reached Regions' Python on stderr ("ENTRY {...}")."""
import collections
import json
import random
import sys

import janus
import janus.nn as nn
import janus.nn.functional as F

MODE = sys.argv[1] if len(sys.argv) > 1 else "plain"
FLAG = True
SCALE = 2.0
LOG = []
Pair = collections.namedtuple("Pair", "logits hidden")


class MLP(nn.Module):
    """plain: replaceable as a whole (Linear, tanh, Linear)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(12, 16)
        self.fc2 = nn.Linear(16, 3)
        self.drop = nn.Dropout(0.25)
        self.count = 0
        self.steps = [0, 1]

    def forward(self, x):
        return self.fc2(janus.tanh(self.fc1(x)))


class Dropout(MLP):  # dropout, dropp: the mask drawn from the generator; p changed mid-run
    def forward(self, x):
        return self.fc2(self.drop(janus.tanh(self.fc1(x))))


class TrainEval(MLP):  # dropout and a branch on self.training, train()/eval() switching
    def forward(self, x):
        h = self.drop(janus.tanh(self.fc1(x)))
        if self.training:
            h = h * 1.5
        return self.fc2(h)


class Counter(MLP):
    def forward(self, x):
        self.count += 1
        return self.fc2(janus.tanh(self.fc1(x)))


class Append(MLP):
    def forward(self, x):
        LOG.append(1)
        return self.fc2(janus.tanh(self.fc1(x)))


class Print(MLP):
    def forward(self, x):
        print("forward")
        return self.fc2(janus.tanh(self.fc1(x)))


class Random(MLP):
    def forward(self, x):
        h = janus.tanh(self.fc1(x))
        if random.random() < 2.0:
            h = h * 0.5
        return self.fc2(h)


class Sync(MLP):
    def forward(self, x):
        h = janus.tanh(self.fc1(x))
        if float(h.sum()) > 1e9:
            h = h * 0.0
        return self.fc2(h)


class Flag(MLP):  # a global the script flips mid-run
    def forward(self, x):
        h = janus.tanh(self.fc1(x))
        if FLAG:
            h = h * 2.0
        return self.fc2(h)


class Scale(MLP):  # a global number the script changes mid-run: the same ops, another constant
    def forward(self, x):
        return self.fc2(janus.tanh(self.fc1(x)) * SCALE)


class Loop(MLP):  # loop, looplen: the trip count is a list attribute's length (appended to mid-run)
    def forward(self, x):
        h = janus.tanh(self.fc1(x))
        for _ in self.steps:
            h = janus.tanh(h + 0.1)
        return self.fc2(h)


class Dict(MLP):
    def forward(self, x):
        h = janus.tanh(self.fc1(x))
        return {"logits": self.fc2(h), "hidden": h}


class Tuple(MLP):
    def forward(self, x):
        h = janus.tanh(self.fc1(x))
        return self.fc2(h), h


class Named(MLP):
    def forward(self, x):
        h = janus.tanh(self.fc1(x))
        return Pair(self.fc2(h), h)


class KW(MLP):  # kwargs, kwname: keyword arguments, bound like positional ones
    def forward(self, x, mask=None, scale=1.0):
        h = janus.tanh(self.fc1(x))
        if mask is not None:
            h = h * mask
        return self.fc2(h) * scale


class DetachGrad(MLP):  # a detach read with grad mode on: the template cannot tell it from its source
    def forward(self, x):
        h = janus.tanh(self.fc1(x))
        return self.fc2(h + h.detach() * 0.5)


class DetachOut(MLP):  # a detach returned: the template would return its source
    def forward(self, x):
        h = janus.tanh(self.fc1(x))
        return Pair(self.fc2(h), h.detach())


class BN(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(12, 16)
        self.bn = nn.BatchNorm1d(16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(janus.relu(self.bn(self.fc1(x))))


class BN2(nn.Module):  # batchnorm2d: BatchNorm2d over a [8, 4, 2, 2] map, train()/eval() switching
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(12, 16)
        self.bn = nn.BatchNorm2d(4)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        h = self.bn(self.fc1(x).reshape(8, 4, 2, 2))
        return self.fc2(janus.relu(h).reshape(8, 16))


class Seq(nn.Module):
    """An LSTM over a time loop of the input's length, hidden state as a tuple."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(12, 16, batch_first=True)
        self.head = nn.Linear(16, 3)

    def forward(self, x, state):
        out, (h, c) = self.lstm(x, state)
        return self.head(out[:, -1]), (h, c)


def check_plan_validation():
    """mode validate: every learned module plan is first handed over damaged (an output leaf,
    an argument slot, a guard's dict row out of range): each must be refused (ValueError)."""
    real = janus._C._rp_module_new
    refused = []

    def damaged(plan, tmpl, *variant):
        bad_guard = ((0, len(plan[4]) + 3, "x", None, None),)
        for k, v in ((9, 10 ** 3), (5, (10 ** 3,)), (3, bad_guard)):
            try:
                real(plan[:k] + (v,) + plan[k + 1:], tmpl)
            except ValueError as e:
                refused.append(str(e))
            else:
                raise AssertionError(f"a damaged module plan was accepted (entry {k})")
        sys.stderr.write(f"MVALIDATED {len(refused)}: {' | '.join(refused)}\n")
        return real(plan, tmpl, *variant)

    janus._C._rp_module_new = damaged


def main():
    global FLAG, SCALE
    if MODE == "validate" and janus._replay.active:
        check_plan_validation()
    janus.manual_seed(0)
    random.seed(0)
    kinds = {"dropout": Dropout, "dropp": Dropout, "trainval": TrainEval, "trainvalx": TrainEval, "counter": Counter, "append": Append,
             "print": Print, "random": Random, "sync": Sync, "flag": Flag, "scale": Scale, "scales": Scale, "loop": Loop, "looplen": Loop,
             "dict": Dict, "tuple": Tuple, "namedtuple": Named, "batchnorm": BN, "batchnorm2d": BN2, "lstm": Seq, "kwargs": KW,
             "kwname": KW, "detachgrad": DetachGrad, "detachout": DetachOut}
    model = kinds.get(MODE, MLP)()
    opt = janus.optim.Adam(model.parameters(), lr=0.01)
    x = janus.randn(8, 5, 12) if MODE == "lstm" else janus.randn(8, 12)
    y = janus.randint(0, 3, (8,))
    loss_fn = nn.CrossEntropyLoss()
    state = (janus.zeros(1, 8, 16), janus.zeros(1, 8, 16))
    mask = (janus.rand(8, 16) > 0.3).float()
    for i in range(40):
        if MODE == "entry" and i == 20:  # a smaller batch from here on: a miss, a variant learned
            x, y = x[:6], y[:6]
        opt.zero_grad(set_to_none=MODE != "zero")  # zero: gradients filled with zeros in place
        if MODE == "trainvalx" and i == 35:  # a dropout p neither learned variant (train, eval) takes
            model.drop.p = 0.5
        if MODE == "lstm":
            out, state = model(x, state)
            state = (state[0].detach(), state[1].detach())
        elif MODE == "kwargs" or (MODE == "kwname" and i < 20):
            out = model(x, mask=mask)
        elif MODE == "kwname":  # other names from step 20 on: a miss, a variant learned
            out = model(x, scale=1.0, mask=mask)
        else:
            out = model(x)
        if MODE in ("kwargs", "kwname") and i % 4 == 3:  # an evaluation under no_grad, keywords too
            with janus.no_grad():
                print(f"eval {i} {model(x, mask=mask, scale=0.5).tolist()!r}")
        if MODE == "dict":
            out = out["logits"] + 0.0 * out["hidden"].sum()
        elif MODE in ("tuple", "namedtuple", "detachout"):
            out = out[0] + 0.0 * out[1].sum()
        loss = loss_fn(out, y)
        loss.backward()
        if MODE in ("clip", "lstm"):  # the clipping runs from C too (no sync inside: the norm is returned)
            norm = nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        elif MODE == "clipcheck":  # the check reads the norm: the call runs its Python, raising as eager does
            if i == 30:
                model.fc1.weight.grad.mul_(float("inf"))
            try:
                norm = nn.utils.clip_grad_norm_(model.parameters(), 0.5, error_if_nonfinite=True)
            except RuntimeError as e:
                print(f"step {i} RuntimeError: {e}")
                continue
        opt.step()
        if MODE == "flag" and i in (15, 25):
            FLAG = not FLAG
        if MODE == "scale" and i == 20:
            SCALE = 3.0
        if MODE == "scales" and i % 5 == 4:  # a new value every 5 steps: more than the variants kept
            SCALE += 0.25
        if MODE == "dropp" and i == 20:
            model.drop.p = 0.5
        if MODE in ("trainval", "trainvalx", "batchnorm2d") and i % 10 == 9:
            model.train(not model.training)
        if MODE == "looplen" and i == 20:
            model.steps.append(2)
        if MODE == "patch" and i == 20:  # the instance's forward monkey-patched mid-run
            orig = model.forward
            model.forward = lambda x: orig(x) * 0.5
        if MODE == "patchcls" and i == 20:  # the class's forward replaced mid-run
            MLP.forward = lambda self, x: self.fc2(janus.relu(self.fc1(x)) * 0.5)
        if i % 5 == 0:
            print(f"step {i} loss {loss.item():.6f}" + (f" norm {norm.item():.6f}" if MODE in ("clip", "lstm", "clipcheck") else ""))
    extra = ""
    if MODE in ("batchnorm", "batchnorm2d"):  # the running statistics, exactly (repr of floats)
        extra = (f" mean {model.bn.running_mean.tolist()!r} var {model.bn.running_var.tolist()!r}"
                 f" n {int(model.bn.num_batches_tracked.item())}")
    print(f"count {getattr(model, 'count', 0)} log {len(LOG)}{extra}")
    if janus._replay.active:
        sys.stderr.write("REGIONS " + json.dumps(janus._C._rp_region_stats()) + "\n")
        if MODE == "entry":
            r = janus._region_module.__self__._mods[id(model)][1]
            sys.stderr.write("ENTRY " + json.dumps({"python_calls": r.python_calls}) + "\n")


main()
