"""`janus replay` (cli/replay.c) and how `janus inspect` shows replay runs,
without the replay core: the child is a fake script that prints the
JANUS_REPLAY* environment it was given and, where a test needs counters,
stores them the way the replaying process does at exit (rows of
replay_graphs / replay_misses for its run).  Covered: help and usage
errors; the run row (kind 'replay' or 'eager', the bundle id) and the
environment contract; exit status, stdin and signals passing through; every
store that cannot replay (missing, not SQLite, someone else's SQLite, no
bundle, a corrupt bundle) runs the command eagerly with one line saying why,
or under --strict refuses without starting it, leaving foreign files
untouched; inspect's text and --json for replay and eager runs (hit rate,
per-graph counters, miss reasons with site and value seen); a schema v2
store is inspected as it is and migrated by `janus replay`.  Stores with a
usable bundle come from the C test binary (`test_bundle --fixture PATH`)."""
import json
import os
import re
import sqlite3
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(ROOT, "build")))
JANUS = os.path.join(BUILD, "janus")
FIXTURE = os.path.join(BUILD, "test_bundle")
PUT = os.path.join(BUILD, "test_db_replay")

pytestmark = pytest.mark.skipif(not (os.path.exists(JANUS) and os.path.exists(FIXTURE) and os.path.exists(PUT)),
                                reason="needs the janus command and the C tests test_bundle, test_db_replay "
                                "in the build")

ENV_KEYS = ("JANUS_REPLAY_DB", "JANUS_REPLAY_RUN", "JANUS_REPLAY", "JANUS_REPLAY_STRICT", "JANUS_REPLAY_QUIET")

# The fake child: prints its JANUS_REPLAY* environment as JSON, echoes stdin
# when asked, stores counters when asked, exits with the status asked for.
CHILD = r'''
import json, os, sqlite3, sys
env = {k: os.environ.get(k) for k in %r}
print("ENV " + json.dumps(env), flush=True)
args = sys.argv[1:]
if "--stdin" in args:
    print("STDIN " + sys.stdin.read().strip(), flush=True)
if "--counters" in args and env["JANUS_REPLAY_DB"]:
    con = sqlite3.connect(env["JANUS_REPLAY_DB"], timeout=10)
    run = int(env["JANUS_REPLAY_RUN"])
    con.executemany("INSERT INTO replay_graphs(run_id, graph, hits, misses, seconds, extrapolated) "
                    "VALUES(?,?,?,?,?,?)", [(run, "g0", 95, 2, 0.5, 40), (run, "g1", 0, 3, 0.0, 0)])
    con.executemany("INSERT INTO replay_extrap(run_id, graph, guard, reason, site, lo, hi, seen_min, seen_max, count) "
                    "VALUES(?,?,?,?,?,?,?,?,?,?)",
                    [(run, "g0", 1, "symbol s0 (start of slice) took 0..35 in the recording (no limit)",
                      "train.py:9", 0, 35, 42, 98, 40),
                     (run, "g0", 3, "trip count of loop L0 took 3..8 in the recording (no limit)",
                      "train.py:11", 3, 8, 12, 16, 7)])
    con.executemany("INSERT INTO replay_misses(run_id, graph, guard, reason, site, seen, count) "
                    "VALUES(?,?,?,?,?,?,?)",
                    [(run, "g1", 2, "input x dim 0 is 32 where the graph has 64", "train.py:12", 32.0, 3),
                     (run, "g0", 0, "op tanh where the graph has relu", "model.py:7", None, 2),
                     (run, "", -1, "no graph of the bundle starts with add", "", None, 1)])
    con.commit()
    con.close()
if "--put" in args and env["JANUS_REPLAY_DB"]:  # through jn_db_replay_put, as the replay core does
    import subprocess
    sys.exit(subprocess.call([os.environ["PUT_FIXTURE"], "--put", env["JANUS_REPLAY_DB"], env["JANUS_REPLAY_RUN"]]))
if "--kill" in args:
    os.kill(os.getpid(), 15)
sys.exit(int(os.environ.get("CHILD_EXIT", "0")))
''' % (ENV_KEYS,)


def _env(**extra):
    e = dict(os.environ)
    for k in ENV_KEYS + ("JANUS_RECORD_DB", "JANUS_RECORD_RUN"):
        e.pop(k, None)
    e.update(extra)
    return e


def janus(*args, input=None, cwd=None, env=None):
    return subprocess.run([JANUS, *args], capture_output=True, text=True, input=input, cwd=cwd,
                          env=env or _env(), timeout=60)


@pytest.fixture
def child(tmp_path):
    p = tmp_path / "child.py"
    p.write_text(CHILD)
    return [sys.executable, str(p)]


@pytest.fixture
def store(tmp_path):
    """A store with a usable bundle for target cpu (and one for cpu-old)."""
    db = str(tmp_path / "run.db")
    r = subprocess.run([FIXTURE, "--fixture", db], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return db


def child_env(r):
    lines = [l for l in r.stdout.splitlines() if l.startswith("ENV ")]
    assert len(lines) == 1, (r.stdout, r.stderr)
    return json.loads(lines[0][4:])


def runs(db):
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT id, kind, bundle_id, status, exit_status FROM runs ORDER BY id").fetchall()
    finally:
        con.close()


def cpu_bundle(db):
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT max(id) FROM bundles WHERE target = 'cpu'").fetchone()[0]
    finally:
        con.close()


def inspect_json(db, *extra):
    r = janus("inspect", "--json", *extra, db)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# ---------------------------------------------------------------- usage

def test_help_lists_replay():
    r = janus("--help")
    assert r.returncode == 0 and "\n  replay " in r.stdout
    for args in (("replay", "--help"), ("replay", "-h"), ("help", "replay")):
        r = janus(*args)
        assert r.returncode == 0 and r.stdout.startswith("usage: janus replay"), args
        assert "--strict" in r.stdout and "--eager" in r.stdout and "JANUS_REPLAY_DB" in r.stdout


@pytest.mark.parametrize("args,msg", [
    ((), "no COMMAND given"),
    (("--db",), "--db needs a PATH"),
    (("--db=", "true"), "non-empty PATH"),
    (("--bogus", "true"), "unknown option '--bogus'"),
    (("--strict", "--eager", "true"), "do not combine"),
])
def test_usage_errors(args, msg, tmp_path):
    r = janus("replay", *args, cwd=tmp_path)
    assert r.returncode == 2 and msg in r.stderr, r.stderr
    assert not (tmp_path / "run.db").exists()


def test_env_switches_count_as_options(store, child):
    r = janus("replay", "--db", store, "--strict", "--", *child, env=_env(JANUS_REPLAY="0"))
    assert r.returncode == 2 and "do not combine" in r.stderr
    r = janus("replay", "--db", store, "--", *child, env=_env(JANUS_REPLAY="0"))
    assert r.returncode == 0 and child_env(r)["JANUS_REPLAY"] == "0"
    assert runs(store)[-1][1] == "eager"
    r = janus("replay", "--db", store, "--", *child, env=_env(JANUS_REPLAY="off"))
    assert r.returncode == 0 and child_env(r)["JANUS_REPLAY"] == "0"
    for v in ("1", "yes"):
        r = janus("replay", "--db", store, "--", *child, env=_env(JANUS_REPLAY_STRICT=v))
        assert r.returncode == 0 and child_env(r)["JANUS_REPLAY_STRICT"] == "1"
    r = janus("replay", "--db", store, "--", *child, env=_env(JANUS_REPLAY_STRICT="0"))
    assert r.returncode == 0 and child_env(r)["JANUS_REPLAY_STRICT"] is None
    r = janus("replay", "--db", store, "--", *child, env=_env(JANUS_REPLAY="1"))
    assert r.returncode == 0 and child_env(r)["JANUS_REPLAY"] == "1"


# --------------------------------------------------- a store that replays

def test_replay_run_and_environment(store, child, tmp_path):
    bundle = cpu_bundle(store)
    before = runs(store)
    r = janus("replay", "--db", store, "--", *child, "--stdin", input="hello\n", cwd=tmp_path,
              env=_env(CHILD_EXIT="7"))
    assert r.returncode == 7, r.stderr
    assert "STDIN hello" in r.stdout
    env = child_env(r)
    after = runs(store)
    assert len(after) == len(before) + 1
    run_id, kind, bundle_id, status, exit_status = after[-1]
    assert env == {"JANUS_REPLAY_DB": os.path.abspath(store), "JANUS_REPLAY_RUN": str(run_id),
                   "JANUS_REPLAY": "1", "JANUS_REPLAY_STRICT": None,
                   "JANUS_REPLAY_QUIET": "1"}  # the CLI prints the one summary line
    assert (kind, bundle_id, status, exit_status) == ("replay", bundle, "error", 7)
    assert "running the command eagerly" not in r.stderr
    # the child stored nothing: the summary says so
    assert "no replay counters were stored" in r.stderr and "did not import janus" in r.stderr


def test_relative_db_path_is_made_absolute(store, child, tmp_path):
    r = janus("replay", "--", *child, cwd=os.path.dirname(store))  # default run.db
    assert r.returncode == 0, r.stderr
    assert child_env(r)["JANUS_REPLAY_DB"] == os.path.abspath(store)


def test_eager_and_strict(store, child):
    r = janus("replay", "--db", store, "--eager", "--", *child)
    assert r.returncode == 0
    env = child_env(r)
    assert env["JANUS_REPLAY"] == "0" and env["JANUS_REPLAY_DB"] == os.path.abspath(store)
    assert runs(store)[-1][1:4] == ("eager", cpu_bundle(store), "finished")
    assert "ran eagerly (--eager" in r.stderr
    r = janus("replay", "--db", store, "--strict", "--", *child)
    assert r.returncode == 0 and child_env(r)["JANUS_REPLAY_STRICT"] == "1"
    assert child_env(r)["JANUS_REPLAY"] == "1"


def test_killed_child(store, child):
    r = janus("replay", "--db", store, "--", *child, "--kill")
    assert r.returncode == 128 + 15
    assert runs(store)[-1][3:] == ("killed", 143)


def test_command_not_found(store):
    r = janus("replay", "--db", store, "--", "no-such-command-xyz")
    assert r.returncode == 127 and "cannot run 'no-such-command-xyz'" in r.stderr
    assert runs(store)[-1][3] == "error"


# ------------------------------------------ stores that cannot replay

def snapshot(path):
    with open(path, "rb") as f:
        return f.read()


def check_eager(r, why):
    assert r.returncode == 0, r.stderr
    assert why in r.stderr and "running the command eagerly" in r.stderr, r.stderr
    assert child_env(r)["JANUS_REPLAY"] == "0"


def test_missing_store_runs_eagerly(child, tmp_path):
    db = str(tmp_path / "none.db")
    r = janus("replay", "--db", db, "--", *child)
    check_eager(r, "does not exist")
    assert "janus record --db" in r.stderr and "janus optimize" in r.stderr
    assert child_env(r)["JANUS_REPLAY_DB"] is None and child_env(r)["JANUS_REPLAY_RUN"] is None
    assert not os.path.exists(db)
    r = janus("replay", "--db", db, "--strict", "--", *child)
    assert r.returncode == 1 and "--strict: cannot replay" in r.stderr and "ENV" not in r.stdout


def test_no_bundle_runs_eagerly(child, tmp_path):
    db = str(tmp_path / "empty.db")
    assert janus("record", "--db", db, "--", "true").returncode == 0
    r = janus("replay", "--db", db, "--", *child, env=_env(CHILD_EXIT="3"))
    assert r.returncode == 3
    assert "has no bundle; run `janus optimize" in r.stderr and "running the command eagerly" in r.stderr
    env = child_env(r)
    assert env["JANUS_REPLAY"] == "0" and env["JANUS_REPLAY_RUN"] == "2"
    assert runs(db)[-1][:3] == (2, "replay", None)
    assert "ran eagerly (no usable bundle" in r.stderr
    out = inspect_json(db, "--run", "2")
    assert out["runs"][0]["kind"] == "replay" and out["runs"][0]["replay"]["hits"] == 0
    # strict: refused, the command never starts, no run is added
    marker = tmp_path / "ran"
    r = janus("replay", "--db", db, "--strict", "--", "touch", str(marker))
    assert r.returncode == 1 and "--strict: cannot replay" in r.stderr and "no bundle" in r.stderr
    assert not marker.exists() and len(runs(db)) == 2


def test_foreign_files_run_eagerly_untouched(child, tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n")
    other = tmp_path / "other.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE t(x)")
    con.commit()
    con.close()
    for path, why in ((text, "not a SQLite file"), (other, "not a janus trace store")):
        before = snapshot(path)
        r = janus("replay", "--db", str(path), "--", *child)
        check_eager(r, why)
        assert snapshot(path) == before
        assert not os.path.exists(str(path) + "-wal")
        r = janus("replay", "--db", str(path), "--strict", "--", *child)
        assert r.returncode == 1 and why in r.stderr and "ENV" not in r.stdout
    r = janus("replay", "--db", str(tmp_path), "--", *child)
    check_eager(r, "is a directory")


def test_corrupt_bundle_runs_eagerly(store, child):
    con = sqlite3.connect(store)
    con.execute("UPDATE bundles SET checksum = '0000000000000000' WHERE target = 'cpu'")
    con.commit()
    con.close()
    r = janus("replay", "--db", store, "--", *child)
    check_eager(r, "corrupt")
    assert "janus optimize" in r.stderr


# ------------------------------------------------------------- inspect

def test_inspect_replay_counters(store, child):
    r = janus("replay", "--db", store, "--", *child, "--counters")
    assert r.returncode == 0, r.stderr
    # 95 hits of 101 segments: 5 misses in the graphs' rows, one segment that matched no graph
    assert ("94.1% hit rate (95 of 101 segments ran as graphs, 6 fell back to eager), 2 graphs, 0.500 s in graphs; "
            "40 of the hits past the recorded ranges") in r.stderr
    # the most frequent miss, worded as `janus inspect` words it
    assert ("; top miss (3x): g1 guard 2 at train.py:12: input x dim 0 is 32 where the graph has 64 (seen 32); "
            "`janus inspect --run") in r.stderr
    run_id = int(child_env(r)["JANUS_REPLAY_RUN"])
    janus("replay", "--db", store, "--eager", "--", *child)

    out = inspect_json(store)
    by_id = {x["id"]: x for x in out["runs"]}
    rep = by_id[run_id]
    assert rep["kind"] == "replay" and rep["bundle_id"] == cpu_bundle(store)
    c = rep["replay"]
    assert c["hits"] == 95 and c["misses"] == 6 and c["hit_rate"] == pytest.approx(95 / 101)
    assert c["seconds"] == pytest.approx(0.5)
    assert c["graphs"][0] == {"graph": "g0", "hits": 95, "in_range": 55, "extrapolated": 40, "misses": 2,
                              "seconds": 0.5}
    assert c["graphs"][1]["in_range"] == 0 and c["graphs"][1]["extrapolated"] == 0 and c["extrapolated"] == 40
    x0, x1 = c["extrapolations"]
    assert x0 == {"graph": "g0", "guard": 1, "reason": "symbol s0 (start of slice) took 0..35 in the recording "
                  "(no limit)", "site": "train.py:9", "recorded": [0, 35], "seen": [42, 98], "count": 40}
    assert x1["guard"] == 3 and x1["recorded"] == [3, 8] and x1["seen"] == [12, 16] and x1["count"] == 7
    assert c["graphs"][1]["graph"] == "g1" and c["graphs"][1]["misses"] == 3
    m0, m1, m2 = c["miss_reasons"]
    assert m2["guard"] == -1 and m2["site"] == "" and m2["graph"] == ""
    assert m0 == {"graph": "g1", "guard": 2, "reason": "input x dim 0 is 32 where the graph has 64",
                  "site": "train.py:12", "seen": 32, "count": 3}
    assert m1["seen"] is None and m1["site"] == "model.py:7" and m1["count"] == 2
    eager = by_id[run_id + 1]
    assert eager["kind"] == "eager" and eager["replay"]["graphs"] == []
    assert all(x["kind"] == "record" for x in out["runs"] if x["id"] < run_id)

    r = janus("inspect", store)
    assert r.returncode == 0, r.stderr
    t = r.stdout
    assert f"run {run_id}  [replay of bundle {cpu_bundle(store)}]  finished" in t
    assert "replay: 94.1% hit rate: 95 of 101 segments ran as graphs, 6 fell back to eager" in t
    # per graph: hits inside the recorded ranges and past them; per guard the range and the values past it
    assert re.search(r"graph +hits +in range +extrapolated +misses +seconds\n +g0 +95 +55 +40 +2 +0\.500\n", t), t
    assert ("extrapolated hits (2 guards past their recorded ranges):\n"
            "          40x  g0 guard 1 at train.py:9: recorded 0..35, seen 42..98: symbol s0") in t, t
    assert "7x  g0 guard 3 at train.py:11: recorded 3..8, seen 12..16: trip count of loop L0" in t
    assert "misses by guard (6 in 3 groups):" in t
    assert "1x  (no graph): no graph of the bundle starts with add\n" in t  # no graph, no guard, no site
    assert "3x  g1 guard 2 at train.py:12: input x dim 0 is 32 where the graph has 64 (seen 32)" in t
    assert "2x  g0 guard 0 at model.py:7: op tanh where the graph has relu\n" in t
    assert f"run {run_id + 1}  [eager of bundle" in t and "replay: none (ran eagerly" in t
    # a replay run shows its counters, not the (empty) step sections
    section = t.split(f"run {run_id}  ")[1].split(f"run {run_id + 1}  ")[0]
    assert "op histogram" not in section


def test_counters_through_the_c_api(store, child):
    """A child that stores its counters with jn_db_replay_put (test_db_replay --put)."""
    r = janus("replay", "--db", store, "--", *child, "--put", env=_env(PUT_FIXTURE=PUT))
    assert r.returncode == 0, r.stderr
    # test_db_replay.c's G1: g0 10 hits 1 miss 0.5 s, g1 0 hits 3 misses
    assert "71.4% hit rate (10 of 14 segments ran as graphs, 4 fell back to eager), 2 graphs, 0.500 s in graphs" in r.stderr
    run_id = int(child_env(r)["JANUS_REPLAY_RUN"])
    c = inspect_json(store, "--run", str(run_id))["runs"][0]["replay"]
    assert [g["graph"] for g in c["graphs"]] == ["g0", "g1"] and c["hits"] == 10 and c["misses"] == 4
    assert {m["site"] for m in c["miss_reasons"]} == {"train.py:12", "train.py:20", "model.py:7"}
    assert [m["seen"] for m in c["miss_reasons"] if m["site"] == "train.py:20"] == [None]  # NaN: no value
    r = janus("inspect", "--run", str(run_id), store)
    # the row kept a range of values (17..32): the reason with the value taken out, and the range
    assert ("2x  g1 guard 2 at train.py:12: shape of input x: dim 0 is <seen>, the graph wants 64 (seen 17 .. 32)"
            in r.stdout)


# what schemas v8, v7 and v6 added (db/db.c SCHEMA_V8..SCHEMA_V6), taken back first (tests/c/jn_test_db.h)
UNDO_V6 = ("DROP TABLE replay_extrap; ALTER TABLE replay_graphs DROP COLUMN extrapolated; "
           "ALTER TABLE runs DROP COLUMN pid_start; ALTER TABLE runs DROP COLUMN boot_id; "
           "DROP TABLE run_steps; DROP TABLE replay_segments; DROP TABLE replay_graph_times; DROP TABLE bundle_notes; "
           "ALTER TABLE runs DROP COLUMN cpu_seconds; ALTER TABLE runs DROP COLUMN peak_rss; "
           "ALTER TABLE replay_misses DROP COLUMN seen_min; ALTER TABLE replay_misses DROP COLUMN seen_max; ")


def make_v2(db):
    """Downgrade a current store to schema v2 as v2 made it."""
    con = sqlite3.connect(db)
    con.executescript(UNDO_V6 + "DROP TABLE replay_misses; DROP TABLE replay_graphs; "
                      "ALTER TABLE runs DROP COLUMN bundle_id; ALTER TABLE runs DROP COLUMN kind; "
                      "UPDATE meta SET value = '2' WHERE key = 'schema_version';")
    con.commit()
    con.close()


def test_v2_store_inspects_and_migrates(child, tmp_path):
    db = str(tmp_path / "v2.db")
    assert janus("record", "--db", db, "--", "true").returncode == 0
    r = subprocess.run([FIXTURE, "--fixture", str(tmp_path / "b.db")], capture_output=True, timeout=60)
    assert r.returncode == 0
    make_v2(db)
    out = inspect_json(db)
    assert out["schema_version"] == 2 and out["runs"][0]["kind"] == "record" and "replay" not in out["runs"][0]
    r = janus("inspect", db)
    assert r.returncode == 0 and "run 1  finished" in r.stdout
    r = janus("replay", "--db", db, "--", *child)
    assert r.returncode == 0 and "has no bundle" in r.stderr
    out = inspect_json(db)
    assert out["schema_version"] == 12  # migrated to the current schema
    assert [(x["id"], x["kind"]) for x in out["runs"]] == [(1, "record"), (2, "replay")]
