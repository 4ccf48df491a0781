"""The `janus` command ($JANUS_BUILD_DIR/janus): help and usage errors,
`janus record` (exit status, signals, stdin pass through; runs appended,
never overwritten; clear refusals of files it must not touch, which stay
byte-for-byte unchanged; a full disk; concurrent recorders) and `janus
inspect` (text and --json, on finished, failed, killed and still-running
runs).  Tests that need the in-process recorder skip while janus._record
does not exist yet."""
import importlib.util
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(ROOT, "build")))
JANUS = os.path.join(BUILD, "janus")

pytestmark = pytest.mark.skipif(not os.path.exists(JANUS),
                                reason=f"{JANUS} not built (it needs db/ and cli/ in the build)")


def _have_recorder():
    try:
        return importlib.util.find_spec("janus._record") is not None
    except ImportError:
        return False


needs_recorder = pytest.mark.skipif(not _have_recorder(),
                                    reason="janus._record (the in-process recorder) is not built yet")


def _env(**extra):
    e = dict(os.environ)
    e["JANUS_BUILD_DIR"] = BUILD
    e["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + e.get("PYTHONPATH", "")
    for k in ("JANUS_RECORD_DB", "JANUS_RECORD_RUN"):
        e.pop(k, None)
    e.update(extra)
    return e


def janus(*args, input=None, cwd=None, timeout=60):
    return subprocess.run([JANUS, *args], capture_output=True, text=True, input=input,
                          cwd=cwd, env=_env(), timeout=timeout)


def script(tmp_path, body, name="train.py"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(body))
    return str(p)


def inspect_json(db, *extra):
    r = janus("inspect", "--json", *extra, str(db))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def snapshot(path):
    st = os.stat(path)
    with open(path, "rb") as f:
        return f.read(), st.st_mtime_ns, st.st_size


# A small training loop: 12 optimizer steps; step 6 takes an extra branch
# (a second step signature), the last batch is smaller (shape variation),
# item() is a sync point.
TRAIN = """
import os, sys
import janus, janus.nn as nn
janus.manual_seed(0)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 12
die_after = int(sys.argv[2]) if len(sys.argv) > 2 else -1
m = nn.Linear(4, 2)
opt = janus.optim.SGD(m.parameters(), lr=0.1)
for i in range(steps):
    x = janus.randn(8 if i < steps - 1 else 5, 4)
    y = janus.randn(x.shape[0], 2)
    loss = ((m(x) - y) ** 2).mean()
    if i == 6:
        loss = loss * 2
    opt.zero_grad()
    loss.backward()
    opt.step()
    if loss.item() > 1e9:
        print("diverged")
    if i + 1 == die_after:
        sys.stdout.flush()
        if os.environ.get("SETTLE"):
            import time; time.sleep(float(os.environ["SETTLE"]))  # let the writer thread commit
        os.kill(os.getpid(), 9)
print("done", flush=True)
"""


# ------------------------------------------------------------------ usage

def test_help_and_version():
    r = janus("--help")
    assert r.returncode == 0 and all(f"  {c} " in r.stdout for c in ("record", "inspect", "optimize"))
    r = janus("--version")
    assert r.returncode == 0 and re.fullmatch(r"janus \d+\.\d+\.\d+\n", r.stdout)
    for cmd in ("record", "inspect", "optimize"):
        r = janus(cmd, "--help")
        assert r.returncode == 0 and r.stdout.startswith(f"usage: janus {cmd}")


@pytest.mark.parametrize("args", [[], ["bogus"], ["--bogus"], ["record"], ["record", "--frob", "x"],
                                  ["record", "--db"], ["inspect"], ["inspect", "--frob", "x.db"],
                                  ["inspect", "--run", "zero", "x.db"], ["inspect", "a.db", "b.db"]])
def test_usage_errors(args):
    r = janus(*args)
    assert r.returncode == 2, (args, r.stderr)
    assert "usage: janus" in r.stderr and r.stdout == ""


def test_inspect_missing_file(tmp_path):
    r = janus("inspect", str(tmp_path / "nope.db"))
    assert r.returncode == 1 and "does not exist" in r.stderr


# ----------------------------------------------------------------- record

def test_command_that_imports_janus_but_records_nothing(tmp_path):
    s = script(tmp_path, "import janus\nprint('imported')\n")
    db = tmp_path / "run.db"
    r = janus("record", "--db", str(db), "--", sys.executable, s)
    assert r.returncode == 0, r.stderr
    assert "never imported" not in r.stderr and "0 steps" in r.stderr
    assert inspect_json(db)["runs"][0]["python_version"].startswith("3.")


def test_command_without_janus(tmp_path):
    s = script(tmp_path, "print('hello from the child')\n")
    db = tmp_path / "run.db"
    r = janus("record", "--db", str(db), "--", sys.executable, s)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "hello from the child\n"
    assert "never imported janus" in r.stderr
    assert db.exists()
    runs = inspect_json(db)["runs"]
    assert len(runs) == 1 and runs[0]["status"] == "finished" and runs[0]["exit_status"] == 0
    assert runs[0]["argv"] == [sys.executable, s]


def test_default_db_and_append(tmp_path):
    s = script(tmp_path, "pass\n")
    for _ in range(2):
        assert janus("record", sys.executable, s, cwd=tmp_path).returncode == 0
    runs = inspect_json(tmp_path / "run.db")["runs"]
    assert [r["id"] for r in runs] == [1, 2]  # appended, never overwritten
    assert runs[0]["cwd"] == str(tmp_path)


def test_concurrent_runs_land(tmp_path):
    # Started together on a store that does not exist yet: creation races too.
    db = str(tmp_path / "run.db")
    procs = [subprocess.Popen([JANUS, "record", "--db", db, sys.executable, "-c",
                               f"import time; time.sleep(0.3); print({i})"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
             for i in range(4)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, outs
    runs = inspect_json(db)["runs"]
    assert sorted(r["id"] for r in runs) == [1, 2, 3, 4]
    assert sorted(r["argv"][-1][-8:] for r in runs) == sorted(f"print({i})" for i in range(4))
    assert all(r["status"] == "finished" for r in runs)
    one = inspect_json(db, "--run", "3")["runs"]
    assert [r["id"] for r in one] == [3]
    r = janus("inspect", "--run", "9", db)
    assert r.returncode == 1 and "no run 9" in r.stderr


def test_exit_status_passthrough(tmp_path):
    db = str(tmp_path / "run.db")
    r = janus("record", "--db", db, sys.executable, script(tmp_path, "import sys\nsys.exit(3)\n"))
    assert r.returncode == 3
    r = janus("record", "--db", db, sys.executable,
              script(tmp_path, "def f():\n    raise ValueError('boom 42')\nf()\n", "raises.py"))
    assert r.returncode == 1
    assert "Traceback" in r.stderr and "ValueError: boom 42" in r.stderr
    r = janus("record", "--db", db, sys.executable,
              script(tmp_path, "import os\nos.kill(os.getpid(), 9)\n", "dies.py"))
    assert r.returncode == 137
    # No shell reaps the command, so janus says how it died.
    assert "was killed by signal 9 (Killed)" in r.stderr
    runs = inspect_json(db)["runs"]
    assert [(x["exit_status"], x["status"]) for x in runs] == [(3, "error"), (1, "error"), (137, "killed")]
    assert all(x["ended"] is not None for x in runs)


def test_command_not_found(tmp_path):
    r = janus("record", "--db", str(tmp_path / "run.db"), "no-such-command-janus-test")
    assert r.returncode == 127 and "no-such-command-janus-test" in r.stderr


def test_environment_and_stdin(tmp_path):
    s = script(tmp_path, """
        import os, sys
        data = sys.stdin.read()
        print(data.upper(), end="")
        print(os.environ["JANUS_RECORD_DB"], os.environ["JANUS_RECORD_RUN"], file=sys.stderr)
    """)
    r = janus("record", "--db", "sub.db", sys.executable, s, input="abc\ndef\n", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "ABC\nDEF\n"
    assert f"{tmp_path / 'sub.db'} 1\n" in r.stderr  # absolute path, run id


def test_signal_forwarded(tmp_path):
    s = script(tmp_path, """
        import signal, sys, time
        def on_term(sig, frame):
            print("child got SIGTERM", flush=True)
            sys.exit(5)
        signal.signal(signal.SIGTERM, on_term)
        print("ready", flush=True)
        time.sleep(30)
    """)
    p = subprocess.Popen([JANUS, "record", "--db", str(tmp_path / "run.db"), sys.executable, s],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    assert p.stdout.readline() == "ready\n"
    p.send_signal(signal.SIGTERM)  # to janus only: it must pass it on
    out, err = p.communicate(timeout=30)
    assert p.returncode == 5, err
    assert "child got SIGTERM" in out


def test_sigint_forwarded_like_a_shell(tmp_path):
    s = script(tmp_path, "import time\nprint('ready', flush=True)\ntime.sleep(30)\n")
    db = tmp_path / "run.db"
    p = subprocess.Popen([JANUS, "record", "--db", str(db), sys.executable, s],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    assert p.stdout.readline() == "ready\n"
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:  # keep what is needed to explain a lost signal
        ps = subprocess.run(["ps", "-o", "pid,ppid,stat,wchan:20,args", "--ppid", str(p.pid)],
                            capture_output=True, text=True).stdout
        for line in ps.splitlines()[1:]:
            os.kill(int(line.split()[0]), signal.SIGKILL)
        p.kill()
        out, err = p.communicate()
        raise AssertionError(f"SIGINT was not passed on within 30 s; children of janus:\n{ps}\nstderr:\n{err}")
    assert "KeyboardInterrupt" in err
    assert p.returncode == 128 + signal.SIGINT  # Python re-raises SIGINT on an uncaught ^C
    run = inspect_json(db)["runs"][0]
    assert run["status"] == "killed" and run["exit_status"] == 130


def test_signal_forwarded_when_inherited_blocked(tmp_path):
    # A parent may start janus with SIGINT blocked (a thread that blocked it,
    # some test runners): janus must still receive it and pass it on.
    s = script(tmp_path, "import time\nprint('ready', flush=True)\ntime.sleep(30)\n")
    p = subprocess.Popen([JANUS, "record", "--db", str(tmp_path / "run.db"), sys.executable, s],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
                         preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}))
    assert p.stdout.readline() == "ready\n"
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        raise AssertionError("janus started with SIGINT blocked did not pass it on")
    assert "KeyboardInterrupt" in err
    assert p.returncode == 128 + signal.SIGINT


def test_json_escaping(tmp_path):
    weird = 'quote" back\\slash\nnewline\ttab \u00e9\u4e2d \x01'
    r = janus("record", "--db", str(tmp_path / "run.db"), sys.executable, "-c", "pass", weird)
    assert r.returncode == 0, r.stderr
    assert inspect_json(tmp_path / "run.db")["runs"][0]["argv"][-1] == weird


# ------------------------------------------------------- refusing files

def _refused(tmp_path, db, words):
    before = snapshot(db)
    r = janus("record", "--db", str(db), sys.executable, "-c", "print('must not run')")
    assert r.returncode == 1
    assert "must not run" not in r.stdout
    assert str(db) in r.stderr or os.path.basename(db) in r.stderr, r.stderr
    assert any(w in r.stderr.lower() for w in words), r.stderr
    assert snapshot(db) == before
    r = janus("inspect", str(db))
    assert r.returncode == 1 and r.stderr
    assert snapshot(db) == before


def test_not_sqlite(tmp_path):
    db = tmp_path / "notes.db"
    db.write_bytes(b"these are my notes, not a database\n" * 50)
    _refused(tmp_path, db, ["not a", "sqlite"])


def test_foreign_sqlite(tmp_path):
    db = tmp_path / "other.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE users(name TEXT)")
    con.execute("INSERT INTO users VALUES ('ada')")
    con.commit()
    con.close()
    _refused(tmp_path, db, ["not a janus", "janus trace", "foreign"])


def test_newer_schema(tmp_path):
    db = tmp_path / "run.db"
    assert janus("record", "--db", str(db), sys.executable, "-c", "pass").returncode == 0
    con = sqlite3.connect(db)
    con.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    con.commit()
    con.close()
    _refused(tmp_path, db, ["newer", "99"])


def _mount_tmpfs(path, opts):
    os.makedirs(path, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)], capture_output=True)
    return r.returncode == 0


def _umount(path):
    subprocess.run(["umount", str(path)], capture_output=True)


def test_unwritable_location(tmp_path):
    if not os.path.exists("/nonexistent-janus-dir"):
        r = janus("record", "--db", "/nonexistent-janus-dir/run.db", sys.executable, "-c", "print(1)")
        assert r.returncode == 1 and "does not exist" in r.stderr and r.stdout == ""
    mnt = tmp_path / "mnt"
    if os.geteuid() == 0:
        if not _mount_tmpfs(mnt, "size=4m"):
            pytest.skip("cannot mount a tmpfs here (needs root in a privileged container)")
        try:
            db = mnt / "run.db"
            assert janus("record", "--db", str(db), sys.executable, "-c", "pass").returncode == 0
            before = snapshot(db)
            assert subprocess.run(["mount", "-o", "remount,ro", str(mnt)]).returncode == 0
            r = janus("record", "--db", str(db), sys.executable, "-c", "print('must not run')")
            assert r.returncode == 1 and "must not run" not in r.stdout
            assert "writ" in r.stderr.lower() and "run.db" in r.stderr, r.stderr
            r = janus("record", "--db", str(mnt / "new.db"), sys.executable, "-c", "pass")
            assert r.returncode == 1 and "not writable" in r.stderr, r.stderr
            assert subprocess.run(["mount", "-o", "remount,rw", str(mnt)]).returncode == 0
            assert snapshot(db) == before
            assert len(inspect_json(db)["runs"]) == 1
        finally:
            _umount(mnt)
    else:
        mnt.mkdir()
        mnt.chmod(0o555)
        try:
            r = janus("record", "--db", str(mnt / "run.db"), sys.executable, "-c", "pass")
            assert r.returncode == 1 and "not writable" in r.stderr
        finally:
            mnt.chmod(0o755)


def test_disk_full(tmp_path):
    mnt = tmp_path / "small"
    # room for a new store's schema, its WAL and shm (~0.5 MB at schema v11), then filled up
    if os.geteuid() != 0 or not _mount_tmpfs(mnt, "size=1m"):
        pytest.skip("needs root and `mount -t tmpfs` to simulate a full disk")
    try:
        db = mnt / "run.db"
        assert janus("record", "--db", str(db), sys.executable, "-c", "pass").returncode == 0
        # Fill the rest of the file system.
        fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"\0" * 4096) > 0:
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        r = janus("record", "--db", str(db), sys.executable, "-c", "print('ran')")
        if r.returncode == 0:
            # The run row fitted in free pages; then the end of it must still be stored or reported.
            assert "ran" in r.stdout
        else:
            assert r.returncode == 1 and "is full" in r.stderr, r.stderr
        os.remove(mnt / "filler")
        runs = inspect_json(db)["runs"]
        assert runs[0]["status"] == "finished" and runs[0]["exit_status"] == 0
    finally:
        _umount(mnt)


# -------------------------------------------------- recording (recorder)

@needs_recorder
def test_record_and_inspect_training(tmp_path):
    db = tmp_path / "run.db"
    s = script(tmp_path, TRAIN)
    r = janus("record", "--db", str(db), sys.executable, s, "12")
    assert r.returncode == 0, r.stderr
    assert "done" in r.stdout
    m = re.search(r"janus record: run 1: (\d+) steps?, ([\d,]+) ops, (\d+) distinct step signatures?, .*run\.db [\d.]+ (bytes|kB|MB)",
                  r.stderr)
    assert m, r.stderr
    assert int(m.group(1)) >= 12 and int(m.group(2).replace(",", "")) > 12 * 5 and int(m.group(3)) >= 2
    out = inspect_json(db)
    assert set(out) >= {"path", "schema_version", "runs"}
    run = out["runs"][0]
    for key in ("id", "argv", "cwd", "started", "ended", "exit_status", "status", "python_version",
                "steps", "ops", "op_histogram", "signatures", "signature_diffs", "sync_points",
                "decisions", "shape_variation"):
        assert key in run, key
    # Filled by the recorder at start once it does (see the report); empty until then.
    assert run["python_version"].startswith("3.")
    assert run["steps"] >= 12 and run["op_histogram"]
    assert len(run["signatures"]) >= 2
    d = run["signature_diffs"][0]
    assert d["error"] is None and d["index"] is not None and d["differences"], d
    assert "train.py" in (d["callsite_a"] + d["callsite_b"])
    assert any(x["kind"] == "item" for x in run["sync_points"])
    assert any(x["kind"] == "branch" and "train.py" in x["callsite"] for x in run["decisions"])
    assert any(5 in v["sizes"] and 8 in v["sizes"] for v in run["shape_variation"])
    text = janus("inspect", str(db))
    assert text.returncode == 0
    for word in ("run 1", "op histogram", "step signatures", "sync points", "control-flow decisions",
                 "shape variation", "train.py"):
        assert word in text.stdout, word


STORED = re.compile(r"janus record: .*full.*; recording stopped: (?:steps 0-(\d+) are stored|step (0) is stored|"
                    r"(no step) is stored)")


def _check_incomplete(r, db, script_rc=0):
    """A recording cut short by a full disk: the command ran to its end,
    janus names the last step actually stored (what inspect counts) and
    exits non-zero, reporting the command's own status."""
    assert "done" in r.stdout, r.stderr
    assert r.returncode == (script_rc or 1), r.stderr
    m = STORED.search(r.stderr)
    assert m, r.stderr
    last = -1 if m.group(3) else int(m.group(1) or m.group(2))
    run = inspect_json(db)["runs"][-1]
    assert run["steps"] == last + 1, (run["steps"], r.stderr)
    stored = ("no step is stored" if last < 0 else "step 0 is stored, later steps are not" if last == 0
              else f"steps 0-{last} are stored, later steps are not")
    assert f"run {run['id']} is incomplete: {stored}; " in r.stderr, r.stderr
    assert f"the command exited with status {script_rc}, janus with {script_rc or 1}" in r.stderr, r.stderr
    if f"run {run['id']} ran, but its end could not be stored" in r.stderr:
        # the disk was still full when the command ended: janus says so; the end row or only the CPU
        # time and memory after it (two writes) did not make it
        assert run["exit_status"] in (None, script_rc), run
    else:
        assert run["exit_status"] == script_rc, (run, r.stderr)
        assert run["status"] == ("incomplete" if script_rc == 0 else "error"), (run, r.stderr)
    return last


@needs_recorder
def test_disk_full_while_recording(tmp_path):
    mnt = tmp_path / "small"
    # 2 MB: the empty store takes ~240 kB and the first steps ~30 kB each; with less, a loaded
    # machine's writer, committing its first 8 or so queued steps in one transaction, failed
    # before any step was stored (`janus record` then rightly says "no step is stored")
    if os.geteuid() != 0 or not _mount_tmpfs(mnt, "size=2m"):
        pytest.skip("needs root and `mount -t tmpfs` to simulate a full disk")
    try:
        db = mnt / "run.db"
        r = janus("record", "--db", str(db), sys.executable, script(tmp_path, TRAIN), "400")
        # the training run goes on without the recorder; the steps before the disk filled stay, and
        # janus says which (before the fix: the step being committed, "steps before this one are
        # saved", exit 0)
        assert "full" in r.stderr, r.stderr
        assert 0 <= _check_incomplete(r, db) < 399
    finally:
        _umount(mnt)


@needs_recorder
@pytest.mark.parametrize("after", [5, 60, 400, 1500])
def test_disk_full_names_the_last_stored_step(tmp_path, after):
    """The same through db/'s fault injection (no root needed): every write
    of the store from the `after`-th on fails as on a full disk, wherever
    that falls (the run row, call sites, a step's rows, a batch's commit)."""
    db = tmp_path / "run.db"
    s = script(tmp_path, TRAIN)
    assert janus("record", "--db", str(db), sys.executable, s, "2").returncode == 0  # the store exists
    r = subprocess.run([JANUS, "record", "--db", str(db), sys.executable, s, "300"], capture_output=True,
                       text=True, env=_env(JANUS_DB_FAULT_AFTER=str(after)), timeout=300)
    if after == 5 and "cannot add a run" in r.stderr:  # janus's own writes come first
        assert r.returncode == 1 and "disk is full" in r.stderr and "done" not in r.stdout, r.stderr
        return
    assert _check_incomplete(r, db) < 299


@needs_recorder
def test_disk_full_keeps_the_scripts_status(tmp_path):
    db = tmp_path / "run.db"
    body = TRAIN.replace('print("done", flush=True)', 'print("done", flush=True)\nsys.exit(3)')
    s = script(tmp_path, body)
    assert janus("record", "--db", str(db), sys.executable, s, "2").returncode == 3
    r = subprocess.run([JANUS, "record", "--db", str(db), sys.executable, s, "300"], capture_output=True,
                       text=True, env=_env(JANUS_DB_FAULT_AFTER="400"), timeout=300)
    _check_incomplete(r, db, script_rc=3)


@needs_recorder
@pytest.mark.parametrize("settle", ["", "0.5"])
def test_killed_mid_run_keeps_steps(tmp_path, settle):
    db = tmp_path / "run.db"
    s = script(tmp_path, TRAIN)
    r = subprocess.run([JANUS, "record", "--db", str(db), sys.executable, s, "50", "5"],
                       capture_output=True, text=True, env=_env(SETTLE=settle), timeout=60)
    assert r.returncode == 137, r.stderr
    run = inspect_json(db)["runs"][0]
    assert run["status"] == "killed" and run["exit_status"] == 137
    # The recorder commits steps from a writer thread: a SIGKILL may lose the
    # steps still queued, never a committed one; given time, all 5 are committed.
    assert run["steps"] <= 5
    if settle:
        assert run["steps"] == 5
    text = janus("inspect", str(db))
    assert text.returncode == 0 and "killed (exit 137)" in text.stdout


@needs_recorder
def test_raise_keeps_steps(tmp_path):
    body = TRAIN.replace('print("done", flush=True)', 'raise RuntimeError("late failure")')
    r = janus("record", "--db", str(tmp_path / "run.db"), sys.executable, script(tmp_path, body), "6")
    assert r.returncode == 1 and "late failure" in r.stderr
    run = inspect_json(tmp_path / "run.db")["runs"][0]
    assert run["status"] == "error" and run["steps"] >= 6


@needs_recorder
def test_concurrent_recorders(tmp_path):
    db = str(tmp_path / "run.db")
    s = script(tmp_path, TRAIN)
    # Create the store first so both start from an existing file, then race.
    procs = [subprocess.Popen([JANUS, "record", "--db", db, sys.executable, s, "30"], env=_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    runs = inspect_json(db)["runs"]
    assert len(runs) == 2 and {r["id"] for r in runs} == {1, 2}
    assert all(r["steps"] >= 30 and r["status"] == "finished" for r in runs)


@needs_recorder
def test_inspect_while_recording(tmp_path):
    db = tmp_path / "run.db"
    body = TRAIN.replace("    if i + 1 == die_after:", "    if i == 3:\n        print('ready', flush=True)\n"
                                                           "        import time; time.sleep(3)\n"
                                                           "    if i + 1 == die_after:")
    p = subprocess.Popen([JANUS, "record", "--db", str(db), sys.executable, script(tmp_path, body), "6"],
                         env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == "ready\n"
        deadline = time.time() + 2.5  # the writer thread commits the queued steps soon
        while True:
            run = inspect_json(db)["runs"][0]
            if run["steps"] >= 3 or time.time() > deadline:
                break
            time.sleep(0.05)
        assert run["ended"] is None and run["status"] == "running" and run["steps"] >= 3
    finally:
        p.communicate(timeout=60)
    assert p.returncode == 0
    assert inspect_json(db)["runs"][0]["status"] == "finished"


def test_openblas_coretype_without_avx512():
    """An OPENBLAS_CORETYPE that names AVX-512 kernels on a CPU without them
    is refused at import with the fix, instead of a silent SIGILL later."""
    import janus
    no512 = ["fpu", "sse2", "avx", "avx2", "fma"]
    why = janus._check_openblas_core("SkylakeX", no512)
    assert why and "OPENBLAS_CORETYPE=SkylakeX" in why and "SIGILL" in why and "Unset OPENBLAS_CORETYPE" in why
    assert "Haswell" in why
    assert janus._check_openblas_core("skylakex", no512 + ["avx512f"]) is None
    assert janus._check_openblas_core("Haswell", no512) is None
    assert janus._check_openblas_core("SkylakeX", None) is None  # flags unknown: nothing checked
    flags = janus._cpu_flags()
    if flags is not None and "avx512f" not in flags:  # this CPU: the import itself refuses
        env = _env(OPENBLAS_CORETYPE="SkylakeX")
        r = subprocess.run([sys.executable, "-c", "import janus"], capture_output=True, text=True, env=env,
                           timeout=60)
        assert r.returncode == 1 and "ImportError" in r.stderr and "SIGILL" in r.stderr, r.stderr


@needs_recorder
def test_sigkilled_run_is_lost(tmp_path):
    """A run whose janus process died by SIGKILL (nothing could close it)
    reads as lost in inspect, text and JSON, and the next writer marks it
    so and says it; a live run reads as running (test_inspect_while_recording)."""
    db = tmp_path / "run.db"
    body = TRAIN.replace("    if i + 1 == die_after:", "    if i == 3:\n        print('ready', flush=True)\n"
                                                           "        import time; time.sleep(60)\n"
                                                           "    if i + 1 == die_after:")
    p = subprocess.Popen([JANUS, "record", "--db", str(db), sys.executable, script(tmp_path, body), "6"],
                         env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        assert p.stdout.readline() == "ready\n"
        assert inspect_json(db)["runs"][0]["status"] == "running"
    finally:
        os.killpg(p.pid, signal.SIGKILL)  # janus and the script: nobody is left to close the run
        p.communicate(timeout=60)
    assert p.returncode == -signal.SIGKILL
    run = inspect_json(db)["runs"][0]
    assert run["status"] == "lost" and run["ended"] is None and run["steps"] >= 1
    text = janus("inspect", str(db))
    assert f"lost (process {p.pid} died without closing it)" in text.stdout, text.stdout
    assert sqlite3.connect(str(db)).execute("SELECT status FROM runs").fetchone()[0] == "running"

    r = janus("record", "--db", str(db), sys.executable, script(tmp_path, TRAIN, "ok.py"), "2")
    assert r.returncode == 0, r.stderr
    assert (f"janus record: run 1 of {db} was left running by process {p.pid}, which is gone: marked lost"
            in r.stderr), r.stderr
    runs = inspect_json(db)["runs"]
    assert [x["status"] for x in runs] == ["lost", "finished"] and runs[0]["steps"] == run["steps"]
    assert sqlite3.connect(str(db)).execute("SELECT status FROM runs WHERE id = 1").fetchone()[0] == "lost"
    r = janus("record", "--db", str(db), sys.executable, script(tmp_path, TRAIN, "ok.py"), "2")
    assert r.returncode == 0 and "marked lost" not in r.stderr, r.stderr  # said once
