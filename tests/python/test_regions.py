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

import pytest

from dynamic_runs import ROOT, have_optimize
from test_replay import EXAMPLES, record_and_optimize, run, same_weights, strip_rates

pytestmark = pytest.mark.skipif(not have_optimize(), reason="janus optimize is not built")

ATTACKS = os.path.join(ROOT, "tests", "regions", "region_attacks.py")


def regions_of(stderr):
    m = re.search(r"^REGIONS (.*)$", stderr, re.M)
    assert m, stderr[-3000:]
    return json.loads(m.group(1))


def reasons(st):
    return " | ".join(w for w, _ in st["reasons"])


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
    ("sgd0", 38, None),        # SGD without momentum: no optimizer state, lr guarded by value
    ("sched", 37, None),       # StepLR changes lr every 4 steps: bound per call, no miss
    ("flag", 30, r"global FLAG changed"),  # the flag flips twice: a guard miss each, learned again
    ("patchstep", 33, r"class Adam or one of its bases was modified"),  # Adam.step replaced mid-run
])
def test_replaced_step_equals_eager(mode, min_replaced, why, attacks_db, tmp_path):
    st, _ = eager_and_replay(ATTACKS, mode, attacks_db, str(tmp_path))
    assert st["replaced"] >= min_replaced, st
    assert st["calls"] == 40 and st["refused"] == 0, st
    if why:
        assert re.search(why, reasons(st)), st


# steps with an effect outside the call: refused with the reason, the effect kept (stdout compared)
@pytest.mark.parametrize("mode,why", [
    ("counter", r"stores attribute count at region_attacks.py:\d+"),
    ("append", r"reads attribute append at region_attacks.py:\d+"),
    ("print", r"calls print at region_attacks.py:\d+"),
    ("random", r"reads attribute random at region_attacks.py:\d+"),
    ("sync", r"reads tensor data inside the call"),
])
def test_effectful_step_is_refused(mode, why, attacks_db, tmp_path):
    st, _ = eager_and_replay(ATTACKS, mode, attacks_db, str(tmp_path))
    assert st["replaced"] == 0 and st["refused"] == 1, st
    assert re.search(why, reasons(st)), st


def test_function_the_step_calls_patched_mid_run(attacks_db, tmp_path):
    # adam._fusable replaced at step 20: the global's guard misses, the unfused update's
    # bias corrections change every call, so relearning refuses the region
    st, _ = eager_and_replay(ATTACKS, "patch", attacks_db, str(tmp_path))
    assert 15 <= st["replaced"] <= 18, st
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
    assert st["replaced"] == 0 and re.search(r"calls print at region_attacks.py:\d+", reasons(st)), st


def test_damaged_templates_are_refused(attacks_db, tmp_path):
    # each learned template is first handed to _C._rp_region_new damaged (a slot read before
    # it is defined, a log index, a mode, a value index, a constant, a fresh output over a
    # bound slot): every damage is refused, then the real one replaces the step
    st, rr = eager_and_replay(ATTACKS, "validate", attacks_db, str(tmp_path))
    m = re.search(r"^VALIDATED (\d+): (.*)$", rr.stderr, re.M)
    assert m and int(m.group(1)) == 6, rr.stderr[-3000:]
    for why in ("an input slot used before it is defined", "log index", "kind, arity or mode",
                "an attribute's value index", "an output slot"):
        assert why in m.group(2), m.group(2)
    assert st["replaced"] >= 37, st


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
    m = re.search(r"regions: (\d+) of (\d+) calls ran without their Python", rr.stderr)
    assert m and int(m.group(2)) == 60 and int(m.group(1)) >= 57, rr.stderr[-2000:]
