"""`janus optimize` stopped while it compiles leaves nothing behind
(codegen/cc.c, cli/optimize.c).  The compiler is a fake CC (a shell script:
it records its pid and a child's, drops a file into $TMPDIR as gcc's
temporaries do, then waits), so the stop always lands mid-compile.
SIGINT / SIGTERM: optimize dies of that signal, its compiler and the
compiler's child are gone (not left running as orphans), no directory or
file remains under $TMPDIR, nothing was stored.  SIGKILL: no handler
runs, so the compiler is orphaned and its directory stays -- until the next
`janus optimize`, which kills the orphans, removes the directory and
stores its bundle.  A signal ignored when optimize starts (nohup) stays
ignored."""
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from dynamic_runs import JANUS, env, have_optimize, janus

pytestmark = pytest.mark.skipif(not have_optimize(), reason="janus optimize is not built")

TRAIN = """
import janus, janus.nn as nn
janus.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 1))
opt = janus.optim.SGD(model.parameters(), lr=0.05)
X, Y = janus.randn(16, 6), janus.randn(16, 1)
for i in range(4):
    opt.zero_grad()
    loss = ((model(X) - Y) ** 2).mean()
    loss.backward()
    opt.step()
"""

FAKE_CC = """#!/bin/sh
# a compiler that never finishes: its pid and its child's, a temporary file
echo $$ >> "$FAKE_CC_PIDS"
sleep 120 &
echo $! >> "$FAKE_CC_PIDS"
echo partial > "$TMPDIR/ccFAKE.s"
wait
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    d = tmp_path_factory.mktemp("sig")
    (d / "train.py").write_text(TRAIN)
    db = d / "run.db"
    r = janus("record", "--db", str(db), "--", sys.executable, str(d / "train.py"), cwd=str(d))
    assert r.returncode == 0, r.stderr
    return db


def gone(pid):
    """Not running: no such process, or a zombie waiting for its reaper."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def wait_for(cond, timeout, what):
    t = time.time() + timeout
    while not cond():
        assert time.time() < t, what
        time.sleep(0.05)


def bundles(db):
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT count(*) FROM bundles").fetchone()[0]
    finally:
        con.close()


def leftovers(tmpdir):
    """Everything under tmpdir except the (empty) per-user folder."""
    out = []
    for root, dirs, files in os.walk(tmpdir):
        out += [os.path.join(root, n) for n in files]
        out += [os.path.join(root, n) for n in dirs if os.path.join(root, n) != os.path.join(tmpdir, f"janus-{os.getuid()}")]
    return sorted(out)


def start_compile(db, tmp_path):
    """`janus optimize db` with the fake compiler, once the compiler runs."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    fake = tmp_path / "fake_cc.sh"
    fake.write_text(FAKE_CC)
    fake.chmod(0o755)
    pids = tmp_path / "pids"
    e = env(CC=str(fake), TMPDIR=str(tmpdir), FAKE_CC_PIDS=str(pids))
    # SIGINT at its default: a shell starting the tests in the background
    # ignores it, and optimize leaves an ignored signal ignored (nohup)
    p = subprocess.Popen([JANUS, "optimize", str(db)], env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))

    def both():
        return pids.exists() and len(pids.read_text().split()) == 2
    try:
        wait_for(both, 60, "the fake compiler did not start")
        wait_for(lambda: leftovers(tmpdir), 10, "the compiler's files did not appear")
    except AssertionError:
        p.kill()
        p.communicate()
        raise
    return p, tmpdir, [int(x) for x in pids.read_text().split()]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_stop_kills_the_compiler_and_removes_its_files(recorded, tmp_path, sig):
    db = tmp_path / "run.db"
    db.write_bytes(recorded.read_bytes())
    p, tmpdir, pids = start_compile(db, tmp_path)
    assert any(f.endswith("ccFAKE.s") for f in leftovers(tmpdir))
    p.send_signal(sig)
    out, err = p.communicate(timeout=30)
    assert p.returncode == -sig, (p.returncode, err)
    assert "stopped by" in err and "nothing was stored" in err, err
    for pid in pids:  # killed and reaped right away, not left to finish as orphans
        wait_for(lambda: gone(pid), 5, f"compiler process {pid} still runs")
    assert leftovers(tmpdir) == []
    assert bundles(str(db)) == 0


def test_an_ignored_signal_stays_ignored(recorded, tmp_path):
    db = tmp_path / "run.db"
    db.write_bytes(recorded.read_bytes())
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    fake = tmp_path / "fake_cc.sh"
    fake.write_text(FAKE_CC)
    fake.chmod(0o755)
    pids = tmp_path / "pids"
    e = env(CC=str(fake), TMPDIR=str(tmpdir), FAKE_CC_PIDS=str(pids))
    p = subprocess.Popen([JANUS, "optimize", str(db)], env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    try:
        wait_for(lambda: pids.exists() and len(pids.read_text().split()) == 2, 60, "the fake compiler did not start")
        p.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        assert p.poll() is None  # still compiling
    finally:
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=30)
    assert p.returncode == -signal.SIGTERM and leftovers(tmpdir) == []


def test_sigkill_leftovers_go_at_the_next_optimize(recorded, tmp_path):
    db = tmp_path / "run.db"
    db.write_bytes(recorded.read_bytes())
    p, tmpdir, pids = start_compile(db, tmp_path)
    p.kill()
    p.communicate(timeout=30)
    time.sleep(0.3)
    left = leftovers(tmpdir)
    assert left and all(not gone(pid) for pid in pids), (left, pids)  # what no handler could clean
    r = subprocess.run([JANUS, "optimize", str(db)], env=env(TMPDIR=str(tmpdir)), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    for pid in pids:
        wait_for(lambda: gone(pid), 5, f"orphaned compiler process {pid} still runs")
    assert leftovers(tmpdir) == []
    assert bundles(str(db)) == 1


def test_a_running_compile_of_another_optimize_is_left_alone(recorded, tmp_path):
    db = tmp_path / "run.db"
    db.write_bytes(recorded.read_bytes())
    p, tmpdir, pids = start_compile(db, tmp_path)
    try:
        before = leftovers(tmpdir)
        db2 = tmp_path / "run2.db"
        db2.write_bytes(recorded.read_bytes())
        r = subprocess.run([JANUS, "optimize", str(db2)], env=env(TMPDIR=str(tmpdir)), capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        assert all(not gone(pid) for pid in pids) and leftovers(tmpdir) == before
    finally:
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=30)
    assert leftovers(tmpdir) == []
