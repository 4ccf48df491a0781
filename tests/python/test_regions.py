"""Regions whose Python is skipped (janus/_region.py, replay/region.c,
csrc/region_py.c): an optimizer step proved pure runs, under `janus
replay`, as its ops dispatched from C.  Every script runs eagerly and
replayed; printed lines and final weights must be identical (bitwise), and
the region counters (the REGIONS line tests/regions/region_attacks.py
writes, and the summary line) must say the step was replaced -- or refused
with the named reason, its effect preserved -- so no test passes by
falling back."""
import json
import os
import re
import shutil
import sys

import pytest

from dynamic_runs import ROOT, have_optimize, janus
from test_replay import EXAMPLES, PROBE, record_and_optimize, run, same_weights, strip_rates

pytestmark = pytest.mark.skipif(not have_optimize(), reason="janus optimize is not built")

ATTACKS = os.path.join(ROOT, "tests", "regions", "region_attacks.py")


def regions_of(stderr):
    m = re.search(r"^REGIONS (.*)$", stderr, re.M)
    assert m, stderr[-3000:]
    return json.loads(m.group(1))


def reasons(st):
    return " | ".join(w for w, _ in st["reasons"])


def step_region(st):
    """(calls, replaced, refused) of the optimizer's step (the model and loss are regions too)."""
    rows = [r for r in st["per_region"] if ".step (" in r[0]]
    assert len(rows) == 1, st
    return tuple(rows[0][1:])


@pytest.fixture(scope="module")
def attacks_db(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("attacks"))
    return record_and_optimize(ATTACKS, ["plain"], tmp)


def eager_and_replay(script, mode, db, tmp, **extra):
    re_, we = run(script, [mode], tmp, f"eager-{mode}")
    assert re_.returncode == 0, re_.stderr[-3000:]
    rr, wr = run(script, [mode], tmp, f"replay-{mode}", JANUS_REPLAY_DB=db, JANUS_REPLAY_ADAPT="0", **extra)
    assert rr.returncode == 0, rr.stderr[-3000:]
    assert rr.stdout == re_.stdout  # losses, and the Python-visible effects (counter, list, lr)
    same_weights(we, wr)
    return regions_of(rr.stderr), rr


# replaceable steps: 40 calls, at most 3 learning ones (state made, two observed) per (re)learning
@pytest.mark.parametrize("mode,min_replaced,why", [
    ("plain", 37, None),
    ("sgd", 37, None),         # SGD with momentum (the fused sgd_)
    ("sgd0", 38, None),        # SGD without momentum: no optimizer state
    ("sched", 37, None),       # StepLR changes lr every 4 steps: bound per call, no miss
    ("sgd0sched", 38, None),   # the same without momentum: add's alpha is -lr, bound negated
    ("sgd0wd", 38, None),      # ... after grad.add(p, alpha=weight_decay), which stays a constant
    ("flag", 30, r"global FLAG changed"),  # the flag flips twice: a guard miss each, learned again
    ("patchstep", 33, r"class Adam or one of its bases was modified"),  # Adam.step replaced mid-run
    # the entry's flat check (dict versions) falls back to the walk: a state dict written,
    # a parameter list changed with no dict written
    ("stateswap", 34, None),
    ("paramdrop", 34, r"param group 0's parameter list changed"),
    # the other optimizers that declare lr (negated into the parameter's add) and the step counter
    ("rmsprop", 37, None),     # momentum, centered, weight decay, StepLR
    ("rmsprop0", 37, None),
    ("adadelta", 37, None),    # StepLR
    ("adagrad", 37, None),     # its sums made at construction: state from the first call
    ("rprop", 37, None),       # masked fills
])
def test_replaced_step_equals_eager(mode, min_replaced, why, attacks_db, tmp_path):
    st, _ = eager_and_replay(ATTACKS, mode, attacks_db, str(tmp_path))
    calls, replaced, refused = step_region(st)
    assert replaced >= min_replaced, st
    assert calls == 40 and not refused, st
    if why:
        assert re.search(why, reasons(st)), st


# steps with an effect outside the call: refused with the reason, the effect kept (stdout compared)
@pytest.mark.parametrize("mode,why", [
    ("counter", r"stores attribute count at region_attacks.py:\d+"),
    ("append", r"reads attribute append at region_attacks.py:\d+"),
    ("print", r"calls print at region_attacks.py:\d+"),
    ("random", r"reads attribute random at region_attacks.py:\d+"),
    ("sync", r"reads tensor data inside the call"),
    ("adagraddecay", r"attribute alpha of op \d+ \(add\) changes from call to call"),  # lr / (1 + k * decay)
])
def test_effectful_step_is_refused(mode, why, attacks_db, tmp_path):
    st, _ = eager_and_replay(ATTACKS, mode, attacks_db, str(tmp_path))
    calls, replaced, refused = step_region(st)
    assert replaced == 0 and refused, st
    assert re.search(why, reasons(st)), st


def test_function_the_step_calls_patched_mid_run(attacks_db, tmp_path):
    # adam._fusable replaced at step 20: the global's guard misses, the unfused update's
    # bias corrections change every call, so relearning refuses the region
    st, _ = eager_and_replay(ATTACKS, "patch", attacks_db, str(tmp_path))
    assert 15 <= step_region(st)[1] <= 18, st
    assert re.search(r"global _fusable changed", reasons(st)), st
    assert re.search(r"changes from call to call", reasons(st)), st


def test_source_edited_after_recording(attacks_db, tmp_path):
    # the store was recorded from the unedited script; the copy's FlagAdam.step now prints:
    # the bytecode scanned at replay is the edited one, so the step is refused
    tmp = str(tmp_path)
    script = os.path.join(tmp, "region_attacks.py")
    shutil.copy(ATTACKS, script)
    with open(script) as f:
        src = f.read()
    edited = src.replace("        if FLAG:\n            return super().step()",
                         "        if FLAG:\n            print('edited')\n            return super().step()")
    assert edited != src
    with open(script, "w") as f:
        f.write(edited)
    st, _ = eager_and_replay(script, "flag", attacks_db, tmp)
    assert step_region(st)[1] == 0 and re.search(r"calls print at region_attacks.py:\d+", reasons(st)), st


def test_damaged_templates_are_refused(attacks_db, tmp_path):
    # each learned template is first handed to _C._rp_region_new damaged (a slot read before
    # it is defined, a log index, a mode, a value index (and a negated one), a constant, a fresh output over a
    # bound slot): every damage is refused, then the real one replaces the step
    st, rr = eager_and_replay(ATTACKS, "validate", attacks_db, str(tmp_path))
    m = re.search(r"^VALIDATED (\d+): (.*)$", rr.stderr, re.M)
    assert m and int(m.group(1)) == 7, rr.stderr[-3000:]
    for why in ("an input slot used before it is defined", "log index", "kind, arity or mode",
                "an attribute's value index", "an output slot"):
        assert why in m.group(2), m.group(2)
    assert step_region(st)[1] >= 37, st


def test_strict_replay_raises_on_a_region_miss(attacks_db, tmp_path):
    tmp = str(tmp_path)
    rr, _ = run(ATTACKS, ["flag"], tmp, "strict", JANUS_REPLAY_DB=attacks_db, JANUS_REPLAY_ADAPT="0",
                JANUS_REPLAY_STRICT="1")
    assert rr.returncode != 0
    assert re.search(r"region FlagAdam.step \(region_attacks.py:\d+\) ran its Python: global FLAG changed",
                     rr.stderr), rr.stderr[-3000:]


def test_regions_off(attacks_db, tmp_path):
    st, _ = eager_and_replay(ATTACKS, "plain", attacks_db, str(tmp_path), JANUS_REPLAY_REGIONS="0")
    assert st["calls"] == 0 and st["replaced"] == 0, st


def test_fashion_mlp_with_adam_step_replaced(tmp_path):
    tmp = str(tmp_path)
    script = os.path.join(EXAMPLES, "fashion_mlp.py")
    db = record_and_optimize(script, ["--steps", "20", "--epochs", "1", "--hidden", "64"], tmp)
    args = ["--steps", "60", "--epochs", "1", "--hidden", "64"]
    re_, we = run(script, args, tmp, "eager")
    rr, wr = run(script, args, tmp, "replay", JANUS_REPLAY_DB=db, JANUS_REPLAY_ADAPT="0")
    assert re_.returncode == 0 and rr.returncode == 0, re_.stderr[-2000:] + rr.stderr[-2000:]
    assert strip_rates(rr.stdout) == strip_rates(re_.stdout)
    same_weights(we, wr)
    # the model (a Sequential: a train variant and an evaluation one under no_grad), the loss and
    # the step; the exit line names them with replaced/calls
    m = re.search(r"regions: (\d+) of (\d+) calls ran without their Python", rr.stderr)
    assert m and int(m.group(1)) >= 0.9 * int(m.group(2)) and int(m.group(2)) >= 180, rr.stderr[-2000:]
    for name in ("Sequential.forward", "CrossEntropyLoss.forward", "Adam.step"):
        m = re.search(re.escape(name) + r" \([a-z_]+\.py:\d+\) (\d+)/(\d+)", rr.stderr)
        assert m and int(m.group(1)) >= 57, (name, rr.stderr[-2000:])


# ----------------------------------------------------------------- module regions
MODULES = os.path.join(ROOT, "tests", "regions", "module_attacks.py")


@pytest.fixture(scope="module")
def modules_db(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("modules"))
    return record_and_optimize(MODULES, ["plain"], tmp)


def region(st, prefix):
    """(calls, replaced, refused) of the region whose name starts with prefix."""
    rows = [r for r in st["per_region"] if r[0].startswith(prefix)]
    assert len(rows) == 1, st
    return tuple(rows[0][1:])


# the model replaced as a whole, with autograd through the template (backward, Adam unchanged):
# 40 calls, two observed ones per (re)learning, a guard miss at each change
@pytest.mark.parametrize("mode,cls,min_replaced,why", [
    ("plain", "MLP.", 38, None),
    ("dropout", "Dropout.", 38, None),      # the mask drawn from the generator by the template's op
    ("dropp", "Dropout.", 36, r"p changed value"),       # dropout p changed at step 20
    ("trainval", "TrainEval.", 36, r"training changed value"),  # train()/eval() every 10 steps
    ("dict", "Dict.", 38, None),
    ("tuple", "Tuple.", 38, None),
    ("namedtuple", "Named.", 38, None),
    ("loop", "Loop.", 38, None),            # a loop over a list attribute
    ("looplen", "Loop.", 36, r"steps changed \(its length or items\)"),  # ... appended to at step 20
    ("flag", "Flag.", 36, r"FLAG changed value"),        # a global flipped at steps 15 and 25
    ("scale", "Scale.", 36, r"SCALE changed value"),     # a global number changed at step 20
    ("patchcls", "MLP.", 36, r"class MLP or one of its bases was modified"),  # MLP.forward replaced
    ("lstm", "Seq.", 38, None),             # LSTM over 5 steps, (h, c) in and out, Linear head
    ("zero", "MLP.", 38, None),             # zero_grad(set_to_none=False): fill_ dispatched from C
    ("clip", "MLP.", 38, None),             # clip_grad_norm_ (its norm printed: a sync outside)
    # BatchNorm in training: the running statistics' in-place updates (under no_grad, through
    # detach: an alias read by no_grad ops only) and num_batches_tracked are template ops
    ("batchnorm", "BN.", 38, None),
    ("batchnorm2d", "BN2.", 34, r"training changed value"),  # train()/eval() every 10 steps
])
def test_replaced_module_equals_eager(mode, cls, min_replaced, why, modules_db, tmp_path):
    st, _ = eager_and_replay(MODULES, mode, modules_db, str(tmp_path))
    calls, replaced, refused = region(st, cls)
    assert calls == 40 and replaced >= min_replaced and not refused, st
    assert region(st, "CrossEntropyLoss.")[1] >= 38, st  # the loss module too
    assert region(st, "Adam.step")[1] >= 37, st
    assert region(st, "Adam.zero_grad") == (40, 40, False), st  # done from C, either way
    if mode in ("clip", "lstm"):
        assert region(st, "_clip_grad_norm ")[1] >= 38, st
    assert not [r for r in st["per_region"] if r[0].startswith("Linear.")], st  # inside the model: no calls
    if why:
        assert re.search(why, reasons(st)), st


# an effect outside the call: the model refused with the reason (its effect kept: stdout compared),
# its children replaced
@pytest.mark.parametrize("mode,cls,why", [
    ("counter", "Counter.", r"stores attribute count at module_attacks.py:\d+"),
    ("append", "Append.", r"calls list.append at module_attacks.py:\d+ on a list that outlives the call"),
    ("print", "Print.", r"calls print at module_attacks.py:\d+"),
    ("random", "Random.", r"calls Random.random at module_attacks.py:\d+"),
    ("sync", "Sync.", r"reads tensor data inside the call"),
    ("detachgrad", "DetachGrad.", r"op \d+ \(mul\) reads a detached tensor with grad mode on"),
    ("detachout", "DetachOut.", r"returns a tensor made by detach inside the call"),
])
def test_effectful_module_is_refused(mode, cls, why, modules_db, tmp_path):
    st, _ = eager_and_replay(MODULES, mode, modules_db, str(tmp_path))
    calls, replaced, refused = region(st, cls)
    assert calls == 40 and replaced == 0 and refused, st
    assert re.search(why, reasons(st)), st
    assert region(st, "Linear.")[1] >= 70, st  # fc1 and fc2 replaced inside the refused model


def test_module_entry_runs_no_python_of_regions(modules_db, tmp_path):
    """Module.__call__'s entry (_C._rp_module_entry): a call whose variant holds reaches no
    Python of Regions, every other call (learning, the miss when the batch shrinks at step
    20) does; the miss is counted once."""
    st, rr = eager_and_replay(MODULES, "entry", modules_db, str(tmp_path))
    m = re.search(r"^ENTRY (.*)$", rr.stderr, re.M)
    assert m, rr.stderr[-3000:]
    calls, replaced, refused = region(st, "MLP.")
    assert calls == 40 and replaced >= 36 and not refused, st
    assert json.loads(m.group(1))["python_calls"] == calls - replaced, st
    missed = [n for w, n in st["reasons"] if w.startswith("MLP.forward") and "argument 0" in w]
    assert missed == [1], st


def test_batchnorm_recorded_and_replaced(tmp_path):
    """A model with BatchNorm1d recorded in training: the recording proves it, the replay
    replaces it (running statistics and num_batches_tracked exactly eager's: printed as
    the floats' repr), the weights equal."""
    db = record_and_optimize(MODULES, ["batchnorm"], str(tmp_path))
    st, _ = eager_and_replay(MODULES, "batchnorm", db, str(tmp_path))
    calls, replaced, refused = region(st, "BN.")
    assert calls == 40 and replaced >= 38 and not refused, st


def test_keyword_arguments_are_bound(modules_db, tmp_path):
    """model(x, mask=m) in training and model(x, mask=m, scale=0.5) under no_grad: both
    variants replaced (keywords bound like positional arguments, their names guarded), the
    outputs (printed exactly) and the weights equal to eager's."""
    st, _ = eager_and_replay(MODULES, "kwargs", modules_db, str(tmp_path))
    calls, replaced, refused = region(st, "KW.")
    assert calls == 50 and replaced >= 45 and not refused, st
    assert "keyword" not in reasons(st), st
    ran = sum(n for w, n in st["reasons"] if w.startswith("KW.forward"))
    # two observed calls for training; the evaluation (another signature of the proven
    # region: no_grad, other keywords) learned from one
    assert ran == calls - replaced == 3, st


def test_keyword_names_changed_miss(modules_db, tmp_path):
    """From step 20 the training call passes scale=1.0 too: the names differ, a miss (its
    reason counted: a new argument signature, no kept variant's row), a variant learned from
    that call, the results still eager's."""
    st, _ = eager_and_replay(MODULES, "kwname", modules_db, str(tmp_path))
    calls, replaced, refused = region(st, "KW.")
    assert calls == 50 and not refused, st
    rows = [(w[len("KW.forward"):].split(": ", 1)[1], n) for w, n in st["reasons"] if w.startswith("KW.forward")]
    # three variants learned: training from two calls, then (the region proven) evaluation
    # and training with the new names from one each; the call with the new names found no
    # variant at its signature (the names are bound by value): one row, no per-variant rows
    assert not any(w.startswith("variant ") for w, _ in rows), st
    assert dict(rows).get("a new argument signature (no variant kept has these arguments' dtypes, devices, "
                          "shapes, strides, requires_grad and values)") == 1, st
    assert sum(n for _, n in rows) == calls - replaced == 4, st


def test_instance_forward_patched_mid_run(modules_db, tmp_path):
    # model.forward = lambda ... at step 20: the guard on the instance dict misses, and the
    # patched forward (a closure) is refused by name; its Linear children are then replaced
    st, _ = eager_and_replay(MODULES, "patch", modules_db, str(tmp_path))
    calls, replaced, refused = region(st, "MLP.")
    assert calls == 40 and 17 <= replaced <= 19 and refused, st
    assert re.search(r"forward is set on the instance now", reasons(st)), st
    assert re.search(r"reads closure variable orig at module_attacks.py:\d+", reasons(st)), st


def test_module_source_edited_after_recording(modules_db, tmp_path):
    # the store was recorded from the unedited script; the copy's MLP.forward now counts:
    # its code hash is not the one the recording proved (janus optimize's verdicts), so the
    # model is refused naming that, and its effect is kept
    tmp = str(tmp_path)
    script = os.path.join(tmp, "module_attacks.py")
    shutil.copy(MODULES, script)
    with open(script) as f:
        src = f.read()
    edited = src.replace("        return self.fc2(janus.tanh(self.fc1(x)))\n\n\nclass Dropout",
                         "        self.count += 1\n        return self.fc2(janus.tanh(self.fc1(x)))\n\n\nclass Dropout")
    assert edited != src
    with open(script, "w") as f:
        f.write(edited)
    st, rr = eager_and_replay(script, "plain", modules_db, tmp)
    assert "count 40" in rr.stdout
    assert region(st, "MLP.")[1:] == (0, True), st
    assert "MLP.forward (module_attacks.py:" in reasons(st) and "its source changed since recording" in reasons(st), st


def test_damaged_module_plans_are_refused(modules_db, tmp_path):
    st, rr = eager_and_replay(MODULES, "validate", modules_db, str(tmp_path))
    m = re.search(r"^MVALIDATED (\d+): (.*)$", rr.stderr, re.M)
    assert m and int(m.group(1)) == 3 and "spec" in m.group(2) and "guard's kind, dict" in m.group(2), rr.stderr[-3000:]
    assert region(st, "MLP.")[1] >= 38, st


def test_strict_replay_and_module_misses(tmp_path):
    # SCALE changes every 5 steps (scales): the same ops with another number (graphs feed
    # numbers).  Each change is a module miss that runs the Python and learns a variant: counted,
    # but no error under strict replay (only the graphs' misses and an optimizer step's are)
    tmp = str(tmp_path)
    db = record_and_optimize(MODULES, ["scale"], tmp)  # the graphs of this mode's ops
    re_, we = run(MODULES, ["scales"], tmp, "eager")
    rr, wr = run(MODULES, ["scales"], tmp, "strict", JANUS_REPLAY_DB=db, JANUS_REPLAY_ADAPT="0",
                 JANUS_REPLAY_STRICT="1")
    assert re_.returncode == 0 and rr.returncode == 0, rr.stderr[-3000:]
    assert rr.stdout == re_.stdout
    same_weights(we, wr)
    st = regions_of(rr.stderr)
    assert region(st, "Scale.")[1] >= 10 and re.search(r"SCALE changed value", reasons(st)), st


def test_module_misses_counted_per_variant(modules_db, tmp_path):
    """trainvalx: train and eval variants learned, then from step 35 (eval) a dropout p
    neither takes, at the same argument signature: the miss counts both variants' reasons,
    named by variant (1: the train one, 2: the eval one), in the exit counters and, stored,
    in inspect."""
    st, _ = eager_and_replay(MODULES, "trainvalx", modules_db, str(tmp_path))
    calls, replaced, refused = region(st, "TrainEval.")
    assert calls == 40 and not refused, st
    rows = {w.split(": ", 1)[1]: n for w, n in st["reasons"] if w.startswith("TrainEval.forward")}
    v1 = {w: n for w, n in rows.items() if w.startswith("variant 1: ")}
    v2 = {w: n for w, n in rows.items() if w.startswith("variant 2: ")}
    # step 35; the third variant is learned from that one call (the region is proven), so
    # step 36 is replaced
    assert sum(v1.values()) == sum(v2.values()) == 1, st
    assert any("training changed value" in w for w in v1), st  # the train variant, in eval mode
    assert not any("training changed value" in w for w in v2), st  # the eval variant: p
    assert any("p changed value" in w for w in v2), st
    plain = sum(n for w, n in rows.items() if not w.startswith("variant "))
    assert plain + sum(v1.values()) == calls - replaced, st
    # stored by `janus replay` and shown by inspect, text and JSON
    db = os.path.join(str(tmp_path), "x.db")
    shutil.copy(modules_db, db)
    r = janus("replay", "--db", db, "--", sys.executable, PROBE, MODULES, "trainvalx", timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    ins = janus("inspect", "--json", db)
    run = [x for x in json.loads(ins.stdout)["runs"] if x["kind"] == "replay"][-1]
    te = [x for x in run["replay"]["regions"] if x["region"].startswith("TrainEval.forward")][0]
    stored = {w["reason"]: w["count"] for w in te["reasons"]}
    assert {w: n for w, n in stored.items() if w.startswith("variant ")} == {**v1, **v2}, te
    txt = janus("inspect", db).stdout
    assert "misses per variant kept (a call no variant at its signature took counts under each):" in txt, txt[-3000:]
    for w, n in {**v1, **v2}.items():
        assert re.search(rf"^ +{n}x  {re.escape(w)}$", txt, re.M), txt[-3000:]


def test_clip_with_nonfinite_check_raises_as_eager(modules_db, tmp_path):
    """clip_grad_norm_(error_if_nonfinite=True) at replay: the call runs its Python (its check
    reads the norm), counted with that reason; at step 30 an infinite gradient raises torch's
    RuntimeError there exactly as eagerly (stdout compared), the model still replaced."""
    st, rr = eager_and_replay(MODULES, "clipcheck", modules_db, str(tmp_path))
    assert ("step 30 RuntimeError: The total norm of order 2.0 for gradients from `parameters` is non-finite, "
            "so it cannot be clipped.") in rr.stdout, rr.stdout
    assert region(st, "_clip_grad_norm ") == (40, 0, False), st
    rows = {w.split(": ", 1)[1]: n for w, n in st["reasons"] if w.startswith("_clip_grad_norm ")}
    assert rows == {"error_if_nonfinite=True: the check reads the norm (a sync point), so the call runs its "
                    "Python": 40}, st
    assert region(st, "MLP.")[1] >= 37, st
