"""The backward skip's counters in the store and in `janus inspect`
(replay/backward.c, db/region.c schema v11, cli/inspect.c).

tests/regions/backward_skip.py is recorded, optimized and run under
`janus replay`; its replaying process prints `_C._rp_stats()`'s backward
counters ("BWD {...}" on stderr) just before exit, and writes them to the
store with the rest of the replay's counters.  `janus inspect --json` must
show the very numbers (calls, skipped, learned, declined, fallbacks) and
the very rows (per graph, token and reason), and the text its line and
rows; a declined mode (retain_graph=True, a .grad already defined) names
its reason at its place, a miss after a skipped backward counts as a
fallback there.  A store from before v11 (no such tables) and a replay
that saw no backward inspect without a "backward" line (JSON: null)."""
import json
import os
import re
import shutil
import sqlite3
import sys

import pytest

from dynamic_runs import ROOT, have_optimize, janus
from test_backward_skip import SCRIPT, counters
from test_replay import PROBE, record_and_optimize

pytestmark = pytest.mark.skipif(not have_optimize(), reason="janus optimize is not built")

STEPS, AT = "16", "6"


def replay(db, mode):
    r = janus("replay", "--db", db, "--", sys.executable, PROBE, SCRIPT, mode, STEPS, AT, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    return counters(r.stderr)


def replay_run(db):
    r = janus("inspect", "--json", db)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout)
    return out, [x for x in out["runs"] if x["kind"] == "replay"][-1]


def rows_of(places):
    return sorted((p["graph"], p["token"], p["name"], p["reason"], p["fallback"], p["count"]) for p in places)


@pytest.mark.parametrize("mode", ["plain", "missafter", "retain", "accum"])
def test_inspect_shows_the_replays_backward_counters(mode, tmp_path):
    db = record_and_optimize(SCRIPT, [mode, "10"], str(tmp_path))
    c = replay(db, mode)
    _, run = replay_run(db)
    b = run["replay"]["backward"]
    assert b is not None, run["replay"]
    # the stored numbers are the replaying process's
    assert (b["calls"], b["skipped"], b["learned"], b["declined"], b["fallbacks"]) == (
        c["backward_calls"], c["backward_skipped"], c["backward_learned"], c["backward_declined"],
        c["backward_fallbacks"]), (b, c)
    assert b["calls"] == b["skipped"] + b["learned"] + b["declined"], b
    assert b["skip_rate"] == pytest.approx(b["skipped"] / b["calls"]), b
    assert rows_of(b["reasons"]) == rows_of(c["backward_places"]), (b, c)
    by_name = {}
    for w in b["reasons"]:
        by_name[w["name"]] = by_name.get(w["name"], 0) + w["count"]
    # the known counts of each mode (16 steps, the change from step 6)
    if mode == "plain":
        assert (b["calls"], b["skipped"], b["learned"], b["declined"], b["fallbacks"]) == (16, 14, 2, 0, 0), b
        assert b["reasons"] == [], b
    elif mode == "missafter":
        assert (b["skipped"], b["fallbacks"]) == (14, 10) and by_name == {"fell_back_miss": 10}, b
        assert all(w["fallback"] and w["graph"] and w["token"] >= 0 for w in b["reasons"]), b
    elif mode == "retain":
        assert (b["calls"], b["skipped"], b["declined"]) == (16, 0, 16) and by_name == {"retain_graph": 16}, b
        assert {w["reason"] for w in b["reasons"]} == {"retain_graph=True"}, b
    else:  # the second backward of each step adds into the first's .grad
        assert (b["calls"], b["skipped"]) == (32, 14) and by_name == {"grad_defined": 16}, b
        assert {w["reason"] for w in b["reasons"]} == {"a leaf it reaches has a .grad already (accumulation)"}, b
    # every declined place is a place of one graph here (the matcher followed one)
    assert all(w["graph"] and w["token"] >= 0 for w in b["reasons"]), b

    # `janus report --json` carries the same object
    r = janus("report", "--json", db)
    assert r.returncode == 0, r.stderr[-3000:]
    rep = [x for x in json.loads(r.stdout)["runs"] if x["id"] == run["id"]]
    assert rep and rep[0]["backward"] == b, rep

    txt = janus("inspect", db).stdout
    pct = 100.0 * b["skipped"] / b["calls"]
    head = (f"  backward: {b['calls']} calls, {b['skipped']} skipped ({pct:.1f}%), {b['learned']} "
            f"plan{'' if b['learned'] == 1 else 's'} learned, {b['declined']} not skipped")
    assert head in txt, txt[-3000:]
    for w in b["reasons"]:
        line = f"{w['count']}x  {w['graph']} token {w['token']}: {w['reason']}"
        assert re.search(rf"^ +{re.escape(line)}$", txt, re.M), txt[-3000:]
    if b["fallbacks"]:
        assert f"; {b['fallbacks']} skipped then run by the engine" in txt, txt[-3000:]
        assert "    skipped, then run by the engine after all:\n" in txt, txt[-3000:]
    if b["declined"]:
        assert "    not skipped:\n" in txt, txt[-3000:]


def test_no_backward_and_stores_before_v11_inspect(tmp_path):
    # autograd.grad never comes through backward(): no row stored, nothing shown
    db = record_and_optimize(SCRIPT, ["grad", "10"], str(tmp_path))
    c = replay(db, "grad")
    assert c["backward_calls"] == 0, c
    _, run = replay_run(db)
    assert run["replay"]["backward"] is None and run["replay"]["hits"] > 0, run["replay"]
    assert "backward:" not in janus("inspect", db).stdout
    rep = [x for x in json.loads(janus("report", "--json", db).stdout)["runs"] if x["id"] == run["id"]]
    assert rep and rep[0]["backward"] is None, rep
    # a store written by a build before v11: its replay counters read, no backward ones
    replay(db, "retain")
    old = os.path.join(str(tmp_path), "v10.db")
    shutil.copy(db, old)
    con = sqlite3.connect(old)
    con.executescript("DROP TABLE replay_backward_reasons; DROP TABLE replay_backward; "
                      "UPDATE meta SET value = '10' WHERE key = 'schema_version';")
    con.close()
    out, run = replay_run(old)
    assert out["schema_version"] == 10 and run["replay"]["backward"] is None, run["replay"]
    assert run["replay"]["hits"] + run["replay"]["misses"] > 0, run["replay"]
    r = janus("inspect", old)
    assert r.returncode == 0 and "hit rate" in r.stdout and "backward:" not in r.stdout, r.stdout[-3000:] + r.stderr
    # the current store still shows the retain run's counters
    _, run = replay_run(db)
    assert run["replay"]["backward"]["declined"] == 16, run["replay"]
    # `janus replay` migrates the old store, and its next run stores them again
    replay(old, "retain")
    out, run = replay_run(old)
    assert out["schema_version"] >= 11 and run["replay"]["backward"]["calls"] == 16, run["replay"]
