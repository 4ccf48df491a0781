"""Module regions across argument signatures (janus/_region.py, csrc/region_py.c; design
in docs/ARCHITECTURE.md 5.2): calls are compared for learning only at one key (the bound
arguments' dtypes, devices, shapes, strides, requires_grad and values, and the guards'
values), a new key of a proven region is learned from one call, up to _MAX_VARIANTS
variants are kept and looked up by a hash of the signature, the least recently used
evicted.  Each mode of tests/regions/shape_attacks.py runs eagerly and replayed: printed
lines and final weights bitwise equal, and the counters (_C._rp_region_stats(), written
by the script) say exactly how many calls ran their Python."""
import os
import re

import pytest

from dynamic_runs import ROOT, have_optimize
from test_regions import eager_and_replay, reasons, region
from test_replay import record_and_optimize

pytestmark = pytest.mark.skipif(not have_optimize(), reason="janus optimize is not built")

SHAPES = os.path.join(ROOT, "tests", "regions", "shape_attacks.py")
NEW_SIG = ("a new argument signature (no variant kept has these arguments' dtypes, devices, shapes, strides, "
           "requires_grad and values)")


@pytest.fixture(scope="module")
def shapes_db(tmp_path_factory):
    return record_and_optimize(SHAPES, ["lengths"], str(tmp_path_factory.mktemp("shapes")))


def rows(st, prefix):
    return {w.split(": ", 1)[1]: n for w, n in st["reasons"] if w.startswith(prefix)}


def test_loop_over_lengths(shapes_db, tmp_path):
    """A forward looping over x.shape[1]: lengths 3, 5, 7, 4 cycled (the first call at each
    waits for a second: not proven yet; the second at 3 proves it, those at 5, 7, 4 compare
    with their own first), then 6 and 8 learned from one call each.  Every later call is
    replaced, the LSTMCell inside with it (the outermost region wins: no LSTMCell row)."""
    st, _ = eager_and_replay(SHAPES, "lengths", shapes_db, str(tmp_path))
    assert region(st, "Seq.") == (30, 20, False), st
    assert region(st, "CrossEntropyLoss.") == (30, 20, False), st  # its input [B*T, 3] as well
    assert not any(r[0].startswith("LSTMCell.") for r in st["per_region"]), st
    assert "different ops" not in reasons(st), st
    r = rows(st, "Seq.")
    assert r.get("learning (first observed call)") == 4 and r.get("learning (second observed call)") == 1, st
    assert r.get(NEW_SIG) == 4, st  # 5, 7, 4 (their second calls) and 6, 8 less the one plain miss
    assert sum(r.values()) == 10, st


def test_new_code_at_a_new_length_waits_for_a_second_call(shapes_db, tmp_path):
    """Length 70 runs stack's chunked path (more than MAX_INS tensors), code the proof at
    length 3 never ran: not learned from one call (the reason names the code), from two;
    length 5 afterwards from one."""
    st, _ = eager_and_replay(SHAPES, "chunked", shapes_db, str(tmp_path))
    assert region(st, "Seq.") == (7, 2, False), st  # 3, 3 | 70, 70 learned, 70 replaced | 5 learned, 5 replaced
    assert "different ops" not in reasons(st), st


def test_strided_arguments(shapes_db, tmp_path):
    """One shape, six strides (views of six bases): a variant per stride, all kept."""
    st, _ = eager_and_replay(SHAPES, "strides", shapes_db, str(tmp_path))
    assert region(st, "MLP.") == (30, 18, False), st  # six first calls, six second ones
    assert "different ops" not in reasons(st), st


def test_op_sequence_on_a_guarded_attribute(shapes_db, tmp_path):
    """self.depth (1, 2, 3, changed every two steps) sets the loop's trip count: a variant per
    value, keyed by the guard; depth 2 and 3 learned from one call each."""
    st, _ = eager_and_replay(SHAPES, "guarded", shapes_db, str(tmp_path))
    assert region(st, "Deep.") == (30, 26, False), st
    r = rows(st, "Deep.")
    assert r.get("depth changed value") == 1 and r.get("variant 1: depth changed value") == 1, st
    assert "different ops" not in reasons(st), st


def test_unguarded_control_flow_refused(shapes_db, tmp_path):
    """A branch on x.is_leaf (no guard, not in the signature): two calls with equal keys ran
    different ops, refused with the reason; its Python runs, its children are replaced."""
    st, _ = eager_and_replay(SHAPES, "leaf", shapes_db, str(tmp_path))
    calls, replaced, refused = region(st, "Leaf.")
    assert calls == 30 and replaced == 0 and refused, st
    assert re.search(r"Leaf\.forward \(shape_attacks.py:\d+\): two calls dispatched different ops", reasons(st)), st
    assert region(st, "Linear.")[1] >= 50, st


def test_more_signatures_than_variants_kept(shapes_db, tmp_path):
    """70 new shapes after the proof (71 variants learned, the 7 least recently used
    evicted), the 60 latest again (all kept: replaced), then the first shape and the first
    new one (evicted: learned again from one call each).  Still eager's results."""
    st, rr = eager_and_replay(SHAPES, "many", shapes_db, str(tmp_path))
    assert region(st, "Seq.") == (134, 60, False), st
    assert "VARIANTS kept 64 learned 73\n" in rr.stderr, rr.stderr[-2000:]
    r = rows(st, "Seq.")
    assert r.get(NEW_SIG) == 71, st  # 69 new shapes after the first (a plain miss) and 2 evicted
    assert "guards failed" not in reasons(st) and "learned 256 variants" not in reasons(st), st
