"""`janus inspect` on a trace store holding bundles (schema v2): each bundle
listed with id, target, sizes, graph count and source runs, and whether
this machine can use it -- a bundle for missing CPU features, a truncated
or tampered one each named with the reason; a v1 store (no bundles table)
still inspects.  The store is made by the C test binary's fixture mode
(`test_bundle --fixture PATH`), since Python has no bundle builder."""
import json
import os
import sqlite3
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(ROOT, "build")))
JANUS = os.path.join(BUILD, "janus")
FIXTURE = os.path.join(BUILD, "test_bundle")

pytestmark = pytest.mark.skipif(not (os.path.exists(JANUS) and os.path.exists(FIXTURE)),
                                reason="needs the janus command and the C test test_bundle in the build")


def run(*args):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=60)


@pytest.fixture
def store(tmp_path):
    db = str(tmp_path / "run.db")
    r = run(FIXTURE, "--fixture", db)
    assert r.returncode == 0, r.stderr
    return db


def inspect_json(db):
    r = run(JANUS, "inspect", "--json", db)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_bundles_listed(store):
    out = inspect_json(store)
    assert out["schema_version"] == 2
    b = {x["target"]: x for x in out["bundles"]}
    assert set(b) == {"cpu", "cpu-old"}
    cpu = b["cpu"]
    assert cpu["graphs"] == 2 and cpu["source_runs"] == [1] and cpu["source_steps"] == 3
    assert cpu["usable"] == "yes" and cpu["refused"] is None
    assert cpu["bytes"] > 0 and 0 < cpu["stored_bytes"] and len(cpu["checksum"]) == 16
    old = b["cpu-old"]
    assert old["usable"] == "no"
    assert "built for CPU features avx1024 that this machine lacks" in old["refused"]
    assert store in old["refused"]

    r = run(JANUS, "inspect", store)
    assert r.returncode == 0, r.stderr
    assert "bundles:" in r.stdout and "2 graphs" in r.stdout and "from runs [1] (3 steps)" in r.stdout
    assert "usable here" in r.stdout and "not usable here: bundle 2 was built for CPU features avx1024" in r.stdout


def test_damaged_bundles_named(store):
    con = sqlite3.connect(store)
    con.execute("UPDATE bundles SET data = substr(data, 1, 40) WHERE target = 'cpu'")
    con.execute("UPDATE bundles SET janus_version = '0.0.1' WHERE target = 'cpu-old'")
    con.commit()
    con.close()
    b = {x["target"]: x for x in inspect_json(store)["bundles"]}
    assert b["cpu"]["usable"] == "no" and b["cpu"]["graphs"] is None
    assert "is corrupt or truncated" in b["cpu"]["refused"] and "janus optimize" in b["cpu"]["refused"]
    # the row lies about its payload: inspect shows the row, load refuses the payload's CPU features
    assert b["cpu-old"]["janus_version"] == "0.0.1" and b["cpu-old"]["usable"] == "no"


def test_v1_store_inspects(store):
    con = sqlite3.connect(store)
    con.execute("DROP TABLE bundles")
    con.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    out = inspect_json(store)
    assert out["schema_version"] == 1 and out["bundles"] == []
    r = run(JANUS, "inspect", store)
    assert r.returncode == 0 and "bundles: none (run `janus optimize` to make one)" in r.stdout
