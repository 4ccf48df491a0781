"""`janus inspect` on a trace store holding bundles (schema v2): each bundle
listed with id, target, sizes, graph count and source runs, and whether
this machine can use it -- a bundle for missing CPU features, a truncated
or tampered one each named with the reason; a v1 store (no bundles table)
still inspects; and end to end, a recorded run mined by `janus optimize
--ir-out` and stored as a bundle the way `janus optimize` will store it.
Stores with bundles are made by the C test binary (`test_bundle --fixture
PATH`, `test_bundle --store-ir DB IRFILE`): Python has no bundle builder."""
import json
import os
import sqlite3
import subprocess
import sys
import textwrap

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
    assert out["schema_version"] == 12
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


TRAIN = """
import janus, janus.nn as nn
janus.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3))
opt = janus.optim.SGD(model.parameters(), lr=0.05)
X = janus.randn(35, 6)
Y = janus.randint(0, 3, (35,))
for i in range(0, 35, 8):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(X[i:i + 8]), Y[i:i + 8])
    loss.backward()
    opt.step()
    print(round(loss.item(), 3))
"""


def test_optimized_run_stored_as_bundle(tmp_path):
    env = dict(os.environ, JANUS_BUILD_DIR=BUILD,
               PYTHONPATH=os.path.join(ROOT, "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("JANUS_RECORD_DB", None)
    env.pop("JANUS_RECORD_RUN", None)
    s = tmp_path / "train.py"
    s.write_text(textwrap.dedent(TRAIN))
    db, ir = str(tmp_path / "run.db"), str(tmp_path / "run.jnir")
    r = subprocess.run([JANUS, "record", "--db", db, "--", sys.executable, str(s)], capture_output=True, text=True,
                       cwd=str(tmp_path), env=env, timeout=120)
    if r.returncode != 0 and "janus._record" in r.stderr:
        pytest.skip("the recorder is not built")
    assert r.returncode == 0, r.stderr
    r = run(JANUS, "optimize", "--quiet", "--ir-out", ir, db)
    if "built without the analyzer" in r.stderr:
        pytest.skip("janus was built without the analyzer")
    assert r.returncode == 0, r.stderr
    dump = run(JANUS, "optimize", "--dump-ir", "--quiet", db)
    assert dump.returncode == 0, dump.stderr
    ngraphs = sum(1 for line in dump.stdout.splitlines() if line.startswith("graph "))
    assert ngraphs >= 1

    r = run(FIXTURE, "--store-ir", db, ir)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith(f": {ngraphs} graphs")
    first = inspect_json(db)
    assert first["schema_version"] == 12 and len(first["runs"]) == 1
    [b] = first["bundles"]
    assert b["target"] == "cpu" and b["graphs"] == ngraphs and b["usable"] == "yes"
    assert b["source_runs"] == [first["runs"][0]["id"]] and b["source_steps"] == first["runs"][0]["steps"]

    # optimizing again replaces it: one bundle, a new id
    r = run(FIXTURE, "--store-ir", db, ir)
    assert r.returncode == 0, r.stderr
    [b2] = inspect_json(db)["bundles"]
    assert b2["id"] > b["id"] and b2["checksum"] == b["checksum"]
