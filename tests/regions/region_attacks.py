"""Scripts that attack the proof of a replaced optimizer step (janus/_region.py):
python region_attacks.py MODE.  Each mode trains a small MLP on fixed random
data for 40 steps with an optimizer whose step either is replaceable (plain,
sgd, sgd0, sched, sgd0sched, sgd0wd, rmsprop, rmsprop0, adadelta, adagrad,
rprop, flag, patch, patchstep; adagraddecay is refused; validate also hands every learned
template over damaged first, each damage to be refused) or has an effect
outside the call (counter, append, print, random, sync), prints a loss every
5 steps and the Python-visible effects at the end; under `janus replay` it
also writes the region counters to stderr ("REGIONS {...}").
tests/python/test_regions.py runs every mode eagerly and replayed and
compares."""
import json
import random
import sys

import janus
import janus.nn as nn
from janus.optim import SGD, Adadelta, Adagrad, Adam, RMSprop, Rprop
from janus.optim.lr_scheduler import StepLR

MODE = sys.argv[1] if len(sys.argv) > 1 else "plain"
FLAG = True
PARAMS = []


class CountingAdam(Adam):
    def step(self):
        self.count += 1
        return super().step()


class LoggingAdam(Adam):
    def step(self):
        self.history.append(len(self.history))
        return super().step()


class PrintingAdam(Adam):
    def step(self):
        print("adam step")
        return super().step()


class FlagAdam(Adam):
    def step(self):
        if FLAG:
            return super().step()


class RandomAdam(Adam):
    def step(self):
        if random.random() < 0.8:
            return super().step()


class SyncAdam(Adam):
    def step(self):
        if float(PARAMS[0].grad.abs().sum()) > 0.0:
            return super().step()


def check_template_validation():
    """mode validate: every learned template is first handed over damaged, and each damage
    must be refused (ValueError) before the real one is registered."""
    real = janus._C._rp_region_new
    refused = []

    def damaged(plan, tmpl):
        nslots, ops, consts = tmpl
        li, mode, ins, outs, avals = ops[0]
        bad = [(nslots, ((li, mode, (nslots + 5,) + ins[1:], outs, avals),) + ops[1:], consts),
               (nslots, ((10 ** 6, mode, ins, outs, avals),) + ops[1:], consts),
               (nslots, ((li, 7, ins, outs, avals),) + ops[1:], consts),
               (nslots, ((li, mode, ins, outs, (10 ** 4,) * len(avals)),) + ops[1:], consts),
               (nslots, ((li, mode, ins, outs, (-2 - 10 ** 4,) * len(avals)),) + ops[1:], consts),  # negated
               (nslots, ((li, mode, (-100,) + ins[1:], outs, avals),) + ops[1:], consts),
               (nslots, ((li, 0, ins, (0,) * len(outs), avals),) + ops[1:], consts)]
        for t in bad:
            try:
                real(plan, t)
            except ValueError as e:
                refused.append(str(e))
            else:
                raise AssertionError(f"a damaged template was accepted: {t[1][0]}")
        sys.stderr.write(f"VALIDATED {len(refused)}: {' | '.join(refused)}\n")
        return real(plan, tmpl)

    janus._C._rp_region_new = damaged


def main():
    global FLAG
    if MODE == "validate" and janus._replay.active:
        check_template_validation()
    janus.manual_seed(0)
    random.seed(0)
    model = nn.Sequential(nn.Linear(12, 16), nn.Tanh(), nn.Linear(16, 3))
    PARAMS[:] = list(model.parameters())
    x = janus.randn(8, 12)
    y = janus.randint(0, 3, (8,))
    kinds = {"counter": CountingAdam, "append": LoggingAdam, "print": PrintingAdam, "flag": FlagAdam,
             "random": RandomAdam, "sync": SyncAdam}
    if MODE == "sgd":
        opt = SGD(model.parameters(), lr=0.05, momentum=0.9)
    elif MODE in ("sgd0", "sgd0sched"):  # no momentum: no state at all, p.add_(grad, alpha=-lr)
        opt = SGD(model.parameters(), lr=0.05)
    elif MODE == "sgd0wd":  # and grad.add(p, alpha=weight_decay) first
        opt = SGD(model.parameters(), lr=0.05, weight_decay=0.01)
    elif MODE == "rmsprop":  # lr negated into add's alpha, the step counter written; StepLR below
        opt = RMSprop(model.parameters(), lr=0.01, momentum=0.5, centered=True, weight_decay=0.01)
    elif MODE == "rmsprop0":
        opt = RMSprop(model.parameters(), lr=0.01)
    elif MODE == "adadelta":  # pytorch/examples' MNIST optimizer, with its StepLR
        opt = Adadelta(model.parameters(), lr=1.0)
    elif MODE in ("adagrad", "adagraddecay"):  # lr_decay: the lr it applies changes every step
        opt = Adagrad(model.parameters(), lr=0.05, lr_decay=0.01 if MODE == "adagraddecay" else 0)
    elif MODE == "rprop":  # its sign masks are masked fills (x[mask] = number)
        opt = Rprop(model.parameters(), lr=0.01)
    else:
        opt = kinds.get(MODE, Adam)(model.parameters(), lr=0.01)
    opt.count, opt.history = 0, []
    sched = StepLR(opt, step_size=4, gamma=0.7) if MODE in ("sched", "sgd0sched", "sgd0wd", "rmsprop",
                                                            "adadelta") else None
    loss_fn = nn.CrossEntropyLoss()
    for i in range(40):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if MODE == "flag" and i in (15, 25):
            FLAG = not FLAG
        if MODE == "patch" and i == 20:  # a function the step calls is replaced mid-run
            import janus.optim.adam as adam_mod
            adam_mod._fusable = lambda *a: False
        if MODE == "patchstep" and i == 20:  # the step itself is monkey-patched mid-run
            orig = Adam.step

            def patched(self, *a, **k):
                self.count += 1
                return orig(self, *a, **k)
            Adam.step = patched
        if MODE == "stateswap" and i == 20:  # a state tensor replaced by another object (its dict written)
            st = opt.state[PARAMS[0]]
            st["exp_avg"] = st["exp_avg"] * 1.0
        if MODE == "paramdrop" and i == 20:  # the last parameter taken out of its list (no dict written)
            opt.param_groups[0]["params"].pop()
        if i % 5 == 0:
            print(f"step {i} loss {loss.item():.6f}")
    print(f"count {opt.count} history {len(opt.history)} lr {opt.param_groups[0]['lr']:.6g}")
    if janus._replay.active:
        sys.stderr.write("REGIONS " + json.dumps(janus._C._rp_region_stats()) + "\n")


main()
