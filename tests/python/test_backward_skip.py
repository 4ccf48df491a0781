"""The backward skip (replay/backward.c, JANUS_REPLAY_BACKWARD_SKIP): under
replay, a loss.backward() whose ops the followed graph already holds is not
run op by op; its leaves get pending .grad headers the graph fills, and a
miss after it runs the engine at its place in the pending list.
tests/regions/backward_skip.py runs eagerly and under `janus replay` with
the skip on (the default) and off: the printed losses and gradient bits and
the final weights must be eager's bit for bit in both, both replays must
make the same decisions (hits, fallbacks, top miss), and the counters must
say the skip ran where it may and declined, naming why, where it may not
(hooks, retain_graph, a .grad already defined, a graph made before the
segment; autograd.grad does not come through backward at all)."""
import json
import os
import re

import pytest

from dynamic_runs import ROOT, have_optimize
from test_replay import record_and_optimize, run, same_weights, summary

pytestmark = pytest.mark.skipif(not have_optimize(), reason="janus optimize is not built")

SCRIPT = os.path.join(ROOT, "tests", "regions", "backward_skip.py")


def counters(stderr):
    m = re.search(r"^BWD (.*)$", stderr, re.M)
    assert m, stderr[-3000:]
    return json.loads(m.group(1))


def compare(mode, tmp, steps="16", at="6", **extra):
    """Eager and both replays of MODE (extra: more settings for both): equal numbers and
    decisions; the skip's counters."""
    db = record_and_optimize(SCRIPT, [mode, "10"], tmp)
    re_, we = run(SCRIPT, [mode, steps, at], tmp, "eager")
    assert re_.returncode == 0, re_.stderr[-3000:]
    out = {}
    for on in ("1", "0"):
        rr, wr = run(SCRIPT, [mode, steps, at], tmp, "skip" + on, JANUS_REPLAY_DB=db, JANUS_REPLAY_ADAPT="0",
                     JANUS_REPLAY_BACKWARD_SKIP=on, **extra)
        assert rr.returncode == 0, rr.stderr[-3000:]
        assert rr.stdout == re_.stdout  # losses, gradients, final weights: bit for bit
        if mode != "grad":  # no optimizer steps there: "final" in stdout has the weights' bits
            same_weights(we, wr)
        out[on] = (summary(rr.stderr), counters(rr.stderr))
    (s_on, c_on), (s_off, c_off) = out["1"], out["0"]
    assert s_on == s_off  # the same hits, fallbacks and top miss
    assert c_off["backward_skipped"] == 0 and c_off["backward_learned"] == 0, c_off
    # every call is counted: skipped, learned, or declined with its reason at its place
    assert c_off["backward_calls"] == c_on["backward_calls"] == c_off["backward_declined"], c_off
    assert {p["name"] for p in c_off["backward_places"]} <= {"off"}, c_off
    assert c_on["backward_calls"] == c_on["backward_skipped"] + c_on["backward_learned"] + c_on["backward_declined"], c_on
    rows = c_on["backward_places"]
    assert sum(p["count"] for p in rows if not p["fallback"]) == c_on["backward_declined"], c_on
    assert sum(p["count"] for p in rows if p["fallback"]) == c_on["backward_fallbacks"], c_on
    return s_on, c_on


def declines(c):
    return dict(c["backward_declines"])


def test_skipped_backward_is_eager_bit_for_bit(tmp_path):
    s, c = compare("plain", str(tmp_path))
    assert s["fell_back"] == 0, s
    # learned once per place (the first step's graph and the steady one), skipped after
    assert c["backward_learned"] == 2 and c["backward_skipped"] == 14 and c["backward_declined"] == 0, c


def test_gradients_read_between_backward_and_step(tmp_path):
    # the segment ends at the read of a skipped backward's .grad: the graph fills it
    s, c = compare("gradprint", str(tmp_path))
    assert s["fell_back"] == 0, s
    assert c["backward_skipped"] == 14, c


def test_miss_after_a_skipped_backward_runs_the_engine(tmp_path):
    # steps 6..15 halve a gradient after backward: the graph misses there, and the
    # fallback runs the engine at the skipped backward's place, then the rest eagerly
    s, c = compare("missafter", str(tmp_path))
    assert s["fell_back"] == 10 and "expected adam_, the script ran mul" in s["top_miss"], s
    assert c["backward_skipped"] == 14, c
    # steps 6..15: skipped, then run by the engine at the miss, counted at the skip's place
    assert c["backward_fallbacks"] == 10, c
    assert [(p["name"], p["count"]) for p in c["backward_places"]] == [("fell_back_miss", 10)], c


def test_miss_after_captured_parameter_updates(tmp_path):
    # the first group's SGD updates are captured (versions of tensors the skipped backward
    # saved bumped) before the second group's differing learning rate misses: the engine
    # at the fallback runs before those updates, and sees the versions it would eagerly
    s, c = compare("sgdmiss", str(tmp_path))
    assert s["fell_back"] >= 10 and "alpha" in s["top_miss"], s
    assert c["backward_skipped"] == 14, c


@pytest.mark.parametrize("mode", ["rootmul", "zeroafter"])
def test_changes_after_a_skipped_backward_then_a_miss(mode, tmp_path):
    # the loss's history moved on (rootmul) or the .grads were dropped (zeroafter) after
    # the skipped backward; the fallback's engine starts from the loss as backward saw it
    # and leaves each .grad as Python left it
    s, c = compare(mode, str(tmp_path))
    assert s["fell_back"] >= 10, s
    assert c["backward_skipped"] == 14, c


def test_hook_declines(tmp_path):
    s, c = compare("hook", str(tmp_path))
    assert c["backward_skipped"] == 4, c  # steps 2..5
    assert declines(c) == {"a gradient hook is registered on a tensor it reaches": 10}, c


def test_retain_graph_declines(tmp_path):
    s, c = compare("retain", str(tmp_path))
    assert s["fell_back"] == 0, s
    assert c["backward_skipped"] == 0 and declines(c) == {"retain_graph=True": 16}, c


def test_accumulation_skips_the_first_and_declines_the_second(tmp_path):
    # two backwards into the same .grad per step: the second adds into the first's
    # pending .grad (captured as always), which the graph then fills
    s, c = compare("accum", str(tmp_path))
    assert s["fell_back"] == 0, s
    assert c["backward_skipped"] == 14, c
    assert declines(c) == {"a leaf it reaches has a .grad already (accumulation)": 16}, c


def test_autograd_grad_is_not_skipped(tmp_path):
    s, c = compare("grad", str(tmp_path))
    assert s["fell_back"] == 0, s
    assert c == {"backward_calls": 0, "backward_skipped": 0, "backward_learned": 0, "backward_declined": 0,
                 "backward_fallbacks": 0, "backward_declines": [], "backward_places": []}, c


def test_graph_made_before_the_segment_declines(tmp_path):
    s, c = compare("earlier", str(tmp_path))
    assert c["backward_skipped"] == 0, c
    assert declines(c) == {"no op of its segment came before it (its graph was made before a sync)": 16}, c


def test_a_saved_number_bound_inside_the_skipped_stretch_is_todays(tmp_path):
    # x ** p with p alternating between 2 and 3: pow's derivative reads the saved
    # exponent (a Python number, as PyTorch's saved Scalar) and computes p - 1 on the
    # host, so the autograd graph's fingerprint holds p: a plan per exponent at the
    # steady place (and one at the first step's); the graph binds the numbers the
    # skipped stretch feeds, today's each time
    s, c = compare("expo", str(tmp_path))
    assert s["fell_back"] == 0, s
    assert c["backward_learned"] == 3 and c["backward_skipped"] == 13 and c["backward_declined"] == 0, c




def test_backward_through_a_loop_is_skipped(tmp_path):
    # the forward's time loop is a loop of the graph (its trip count varies), and so is
    # the backward through time: the matcher follows the loops inside the skipped
    # stretch as it does for the engine's ops; a plan per length (its place)
    s, c = compare("rnn", str(tmp_path))
    assert s["fell_back"] == 0, s
    assert c["backward_skipped"] >= 6 and c["backward_learned"] >= 3, c
    assert "stretch" not in {p["name"] for p in c["backward_places"]}, c


def test_backward_of_a_sum_made_in_a_loop_is_skipped(tmp_path):
    # the loss summed inside the time loop: at backward() the one cursor stands at the
    # loop's body end (the backward's first op exits the loop); declined as "inside a
    # loop of its graph" before, every call ran the engine op by op
    s, c = compare("rnnsum", str(tmp_path))
    assert s["fell_back"] == 0, s
    assert c["backward_skipped"] >= 6 and c["backward_learned"] >= 3, c
    assert "loop" not in {p["name"] for p in c["backward_places"]}, c


def test_plans_cap_declines_new_places(tmp_path):
    # the cap on plans in all (256; one here, JANUS_REPLAY_BACKWARD_PLANS): one place is
    # learned (three or more without the cap: test_backward_through_a_loop_is_skipped),
    # every call at another length declines with the "plans" reason and runs the engine,
    # bit for bit as eagerly
    s, c = compare("rnn", str(tmp_path), JANUS_REPLAY_BACKWARD_PLANS="1")
    assert s["fell_back"] == 0, s
    assert c["backward_learned"] == 1, c
    capped = [p for p in c["backward_places"] if p["name"] == "plans"]
    assert capped and sum(p["count"] for p in capped) >= 3, c
    assert {p["name"] for p in c["backward_places"]} <= {"plans", "not_one_graph"}, c


def test_miss_after_a_skipped_backward_with_a_loop(tmp_path):
    # the engine at the fallback runs the backward through time the skip left out
    s, c = compare("rnnmiss", str(tmp_path))
    assert s["fell_back"] >= 10 and "expected adam_, the script ran mul" in s["top_miss"], s
    assert c["backward_skipped"] >= 6 and c["backward_fallbacks"] >= 6, c
    assert {p["name"] for p in c["backward_places"] if p["fallback"]} == {"fell_back_miss"}, c
