"""Where and how the trace store is opened (db/db.c jn_db_open), through the
janus command and the Python package.

Read-only stores: a store in a directory an unprivileged user cannot write
(run as `nobody` through setpriv/runuser when the tests run as root), and a
store on a read-only mount (a tmpfs remounted read-only; needs root and
mount), must read exactly as a writable one -- `janus inspect` (text and
--json) prints the same, with nothing added, and `janus optimize --no-store`
analyzes -- while writing is refused up front naming why; `janus replay`
on a read-only mount still replays through the bundle (its summary line
shows graphs ran, the output is eager's) and says in one line that its run
and counters are not stored.

Paths: ":memory:", "file:v.db" and names with URI characters are files of
those names for every command (record, inspect, optimize, replay) and for
the Python side (janus._C), never an in-memory database or a URI."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import pytest

from dynamic_runs import ROOT, env, have_optimize, janus
from janus import _C  # noqa: E402

SCRIPT = os.path.join(ROOT, "tests", "dynamic", "lr_schedule.py")
GRAPHS_RAN = re.compile(r"janus replay: (\d+)% of ([\d,]+) segments ran as compiled graphs")
NOBODY = 65534

pytestmark = pytest.mark.skipif(not have_optimize(), reason="janus optimize is not built")


@pytest.fixture(scope="module")
def store():
    """lr_schedule.py recorded and optimized into a closed store (no -wal,
    no -shm left), in a folder every user can read."""
    d = tempfile.mkdtemp(prefix="jn_store_access_", dir="/tmp")
    os.chmod(d, 0o755)
    db = os.path.join(d, "run.db")
    r = janus("record", "--db", db, "--", sys.executable, SCRIPT, timeout=300)
    assert r.returncode == 0, r.stderr
    r = janus("optimize", db, timeout=300)
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(d)) == ["run.db"]
    yield db
    shutil.rmtree(d, ignore_errors=True)


def inspect_outputs(db):
    """inspect's text and --json, the store's path taken out (the copies live elsewhere)."""
    text = janus("inspect", db)
    js = janus("inspect", "--json", db)
    assert text.returncode == 0 and js.returncode == 0, text.stderr + js.stderr
    assert text.stderr == "" and js.stderr == ""
    j = json.loads(js.stdout)
    j.pop("path")
    return text.stdout.replace(db, "STORE"), j


def as_user(cmd):
    """cmd as an unprivileged user: nobody when we are root (setpriv, else runuser), else ourselves."""
    if os.geteuid() != 0:
        return cmd
    if shutil.which("setpriv"):
        return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *cmd]
    if shutil.which("runuser"):
        return ["runuser", "-u", "nobody", "--", *cmd]
    pytest.skip("running as root without setpriv or runuser: no unprivileged user to test a read-only "
                "directory with (root ignores permissions)")


def janus_as_user(*args):
    from dynamic_runs import JANUS
    return subprocess.run(as_user([JANUS, *args]), capture_output=True, text=True, env=env(), timeout=300,
                          cwd="/")


def test_readonly_directory_as_unprivileged_user(store):
    want_text, want_json = inspect_outputs(store)
    d = tempfile.mkdtemp(prefix="jn_ro_dir_", dir="/tmp")
    try:
        os.chmod(d, 0o755)
        sub = os.path.join(d, "ro")
        os.mkdir(sub)
        db = os.path.join(sub, "run.db")
        shutil.copy(store, db)
        os.chmod(db, 0o644)
        os.chmod(sub, 0o555)
        # before the fix: "attempt to write a readonly database" (SQLite wants to create run.db-shm)
        r = janus_as_user("inspect", db)
        assert r.returncode == 0 and r.stderr == "", r.stderr
        assert r.stdout.replace(db, "STORE") == want_text
        r = janus_as_user("inspect", "--json", db)
        assert r.returncode == 0 and r.stderr == "", r.stderr
        j = json.loads(r.stdout)
        j.pop("path")
        assert j == want_json
        r = janus_as_user("optimize", "--no-store", db)
        assert r.returncode == 0, r.stderr
        assert re.search(r"janus optimize: \d+ graphs? in", r.stdout + r.stderr), r.stdout + r.stderr
        r = janus_as_user("optimize", db)  # storing: refused, saying why and what still works
        assert r.returncode == 1
        assert "cannot be written here" in r.stderr and "not writable" in r.stderr and "--no-store" in r.stderr
        assert sorted(os.listdir(sub)) == ["run.db"]  # nothing was created next to it
    finally:
        os.chmod(os.path.join(d, "ro"), 0o755)
        shutil.rmtree(d, ignore_errors=True)


def _mount_tmpfs(path):
    os.makedirs(path, exist_ok=True)
    return subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", path], capture_output=True).returncode == 0


def test_readonly_mount(store, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("a read-only mount needs root (the unprivileged case is test_readonly_directory_...)")
    mnt = str(tmp_path / "mnt")
    if not _mount_tmpfs(mnt):
        pytest.skip("cannot mount a tmpfs here (needs root in a privileged container)")
    try:
        db = os.path.join(mnt, "run.db")
        shutil.copy(store, db)
        want_text, want_json = inspect_outputs(store)
        eager = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True, env=env(), timeout=300)
        assert eager.returncode == 0, eager.stderr
        assert subprocess.run(["mount", "-o", "remount,ro", mnt]).returncode == 0
        # before the fix: "unable to open database file"
        assert inspect_outputs(db) == (want_text.replace(store, "STORE"), want_json)
        r = janus("optimize", "--no-store", db, timeout=300)
        assert r.returncode == 0, r.stderr
        r = janus("optimize", db, timeout=300)
        assert r.returncode == 1 and "cannot be written here" in r.stderr and "Read-only file system" in r.stderr
        # replay: the bundle runs (before the fix: eagerly); one line says nothing is stored
        r = janus("replay", "--db", db, "--", sys.executable, SCRIPT, timeout=300)
        assert r.returncode == 0, r.stderr
        lines = [ln for ln in r.stderr.splitlines() if "cannot be written" in ln]
        assert len(lines) == 1 and "Read-only file system" in lines[0] and "not stored" in lines[0], r.stderr
        assert "running the command eagerly" not in r.stderr and "running eagerly" not in r.stderr
        m = GRAPHS_RAN.search(r.stderr)
        assert m and int(m.group(1)) >= 90, r.stderr
        assert r.stdout == eager.stdout
        r = janus("replay", "--eager", "--db", db, "--", sys.executable, SCRIPT, timeout=300)
        assert r.returncode == 0 and r.stdout == eager.stdout
        assert "this eager run is not stored" in r.stderr and not GRAPHS_RAN.search(r.stderr), r.stderr
        assert sorted(os.listdir(mnt)) == ["run.db"]
    finally:
        subprocess.run(["umount", mnt], capture_output=True)


@pytest.mark.parametrize("name", [":memory:", "file:v.db", "a?mode=ro#x%41.db"])
def test_special_names_are_files(name, tmp_path):
    cwd = str(tmp_path)
    r = janus("record", "--db", name, "--", sys.executable, SCRIPT, timeout=300, cwd=cwd)
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(cwd)) == [name]  # that file, nothing else (no v.db)
    # before the fix: ":memory:" read as an empty in-memory database ("an empty file"), "file:v.db" as v.db
    r = janus("inspect", "--json", name, cwd=cwd)
    assert r.returncode == 0, r.stderr
    runs = json.loads(r.stdout)["runs"]
    assert len(runs) == 1 and runs[0]["steps"] == 25
    r = janus("optimize", name, timeout=300, cwd=cwd)
    assert r.returncode == 0, r.stderr
    # the Python side opens the same file for the same name (janus._C through db/)
    old = os.getcwd()
    os.chdir(cwd)
    try:
        assert [(i, k) for (i, k, _) in _C._rec_runs(name)] == [(1, "record")]
        assert len(_C._rec_read_step(name, 1, 0)) > 0
    finally:
        os.chdir(old)
    r = janus("replay", "--db", name, "--", sys.executable, SCRIPT, timeout=300, cwd=cwd)
    assert r.returncode == 0, r.stderr
    assert "running" not in r.stderr and re.search(r"run 2: 100\.0% hit rate", r.stderr), r.stderr
    assert sorted(os.listdir(cwd)) == [name]


def test_replay_on_a_full_disk(store, tmp_path):
    """A store that cannot take a new run (every write fails as on a full
    disk: JANUS_DB_FAULT_AFTER=1) still replays through its bundle, and one
    line says the run and its counters are not stored.  Before the fix:
    "cannot add a run", exit 1, the command never ran."""
    db = str(tmp_path / "run.db")
    shutil.copy(store, db)
    eager = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True, env=env(), timeout=300)
    assert eager.returncode == 0, eager.stderr
    full = {"JANUS_DB_FAULT_AFTER": "1"}
    r = janus("replay", "--db", db, "--", sys.executable, SCRIPT, timeout=300, extra_env=full)
    assert r.returncode == 0, r.stderr
    assert "cannot add a run" in r.stderr and "disk is full" in r.stderr, r.stderr
    assert "replaying with its bundle all the same; this run and its counters are not stored" in r.stderr
    assert "running the command eagerly" not in r.stderr, r.stderr
    m = GRAPHS_RAN.search(r.stderr)
    assert m and int(m.group(1)) >= 90, r.stderr
    assert r.stdout == eager.stdout
    # the script's own failure still comes through
    bad = str(tmp_path / "bad.py")
    with open(bad, "w") as f:
        f.write(f"import runpy, sys\nsys.argv = [{SCRIPT!r}]\nrunpy.run_path({SCRIPT!r}, run_name='__main__')\n"
                "sys.exit(3)\n")
    r = janus("replay", "--db", db, "--", sys.executable, bad, timeout=300, extra_env=full)
    assert r.returncode == 3 and "not stored" in r.stderr and GRAPHS_RAN.search(r.stderr), r.stderr
    runs = json.loads(janus("inspect", "--json", db).stdout)["runs"]
    assert [x["kind"] for x in runs] == ["record"]  # nothing was added
