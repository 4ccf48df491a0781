"""A recording killed by SIGTERM, SIGHUP or SIGINT keeps its steps.

recorder/signals.c: a signal left at its default makes the recorder's
writer commit the steps still queued and the step in progress, mark the run
killed, and then the process dies of the signal (exit 128 + N), also when
its main thread is blocked in C (here: a mutex locked twice through ctypes,
with the GIL held, so no Python-level handler could ever run).  Each killed
run is compared step by step (kind, op count, signature) with the same
script ending normally.  Also: SIGTERM while training at full speed (every
printed step stored), SIGTERM sent to the whole process group
(the script sees it twice), a run whose `janus record` parent is gone (the
recorder marks it itself), SIGINT at its default and under Python's
handler (KeyboardInterrupt still raised: the handler chains), a store
locked by another process (the wait is bounded: the process dies while the
lock is still held), and a forked child that dies of SIGTERM without
touching the parent's run.
"""
import ctypes
import json
import os
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

SYS_TGKILL = {"x86_64": 234, "aarch64": 131}.get(os.uname().machine)

pytestmark = pytest.mark.skipif(not os.path.exists(JANUS),
                                reason=f"{JANUS} not built (it needs db/ and cli/ in the build)")

# Seven optimizer steps (each printed), a trailing step (ops after the last
# optimizer step), then "ready <pid>" and: exit normally, sleep in Python,
# or block in C forever.
SCRIPT = """
import os, sys, time, ctypes, signal
if os.environ.get("SIGINT_DEFAULT"):
    signal.signal(signal.SIGINT, signal.SIG_DFL)
import janus, janus.nn as nn
janus.manual_seed(0)
m = nn.Linear(4, 2)
opt = janus.optim.SGD(m.parameters(), lr=0.1)
for i in range(7):
    x = janus.randn(8, 4)
    loss = (m(x) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print("step", i, flush=True)
(m(janus.randn(3, 4)) ** 2).sum()
mode = sys.argv[1]
if mode == "sleep_thread":  # a Python thread that does not block signals, its id printed
    import threading
    tid = []
    threading.Thread(target=lambda: (tid.append(threading.get_native_id()), time.sleep(120)), daemon=True).start()
    while not tid:
        time.sleep(0.01)
    print("ready", os.getpid(), tid[0], flush=True)
    time.sleep(60)
    sys.exit(3)
print("ready", os.getpid(), flush=True)
if mode == "sleep":
    time.sleep(60)
elif mode == "cblock":  # blocked in C with the GIL held: a mutex locked twice
    mu = ctypes.create_string_buffer(64)
    lock = ctypes.PyDLL(None).pthread_mutex_lock
    lock(mu)
    lock(mu)
elif mode == "loop":  # training on at full speed
    for i in range(7, 10 ** 9):
        x = janus.randn(8, 4)
        loss = (m(x) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        print("step", i, flush=True)
"""


def _env(**extra):
    e = dict(os.environ)
    e["JANUS_BUILD_DIR"] = BUILD
    e["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + e.get("PYTHONPATH", "")
    for k in ("JANUS_RECORD_DB", "JANUS_RECORD_RUN"):
        e.pop(k, None)
    e.update(extra)
    return e


def _start(tmp_path, db, mode, **kw):
    s = tmp_path / "train.py"
    s.write_text(textwrap.dedent(SCRIPT))
    env = _env(**kw.pop("env", {}))
    p = subprocess.Popen([JANUS, "record", "--db", str(db), sys.executable, str(s), mode], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env, **kw)
    lines = []
    while True:
        line = p.stdout.readline()
        lines.append(line)
        if line.startswith("ready") or not line:
            break
    assert lines[-1].startswith("ready"), "".join(lines) + p.stderr.read()
    assert [x for x in lines if x.startswith("step")] == [f"step {i}\n" for i in range(7)]
    p.ready = lines[-1].split()  # "ready PID [more]"
    return p, int(p.ready[1])


def _steps(db, run):
    return sqlite3.connect(str(db)).execute(
        "SELECT step, kind, n_ops, signature FROM steps WHERE run_id = ? ORDER BY step", (run,)).fetchall()


def _runs(db):
    r = subprocess.run([JANUS, "inspect", "--json", str(db)], capture_output=True, text=True, env=_env(), timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["runs"]


@pytest.fixture
def reference(tmp_path):
    """The same script ending normally: the steps a killed run must keep."""
    db = tmp_path / "ref.db"
    p, _ = _start(tmp_path, db, "exit")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    steps = _steps(db, 1)
    assert [k for _, k, _, _ in steps] == ["optimizer"] * 7 + ["tail"]
    return steps


def _gone(pid, limit=60):
    """Has pid ended (a zombie nobody reaps counts: its orphan may wait for a busy init)?"""
    t0 = time.monotonic()
    while True:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except (FileNotFoundError, ProcessLookupError):
            return True
        if time.monotonic() - t0 >= limit:
            return False
        time.sleep(0.02)


def _check_killed(db, reference, sig):
    run = _runs(db)[0]
    assert run["status"] == "killed" and run["exit_status"] == 128 + sig and run["ended"] is not None, run
    assert _steps(db, 1) == reference  # every step completed, and the one in progress
    text = subprocess.run([JANUS, "inspect", str(db)], capture_output=True, text=True, env=_env(), timeout=60).stdout
    assert f"killed (exit {128 + sig})" in text, text


@pytest.mark.parametrize("sig,mode", [(signal.SIGTERM, "sleep"), (signal.SIGTERM, "cblock"),
                                      (signal.SIGHUP, "cblock")])
def test_signal_keeps_every_step(tmp_path, reference, sig, mode):
    db = tmp_path / "run.db"
    p, _ = _start(tmp_path, db, mode)
    time.sleep(0.2)  # inside the sleep or the blocking call
    p.send_signal(sig)  # to janus, which passes it on
    out, err = p.communicate(timeout=60)
    assert p.returncode == 128 + sig, err
    assert f"was killed by signal {sig}" in err, err
    _check_killed(db, reference, sig)


def test_sigterm_while_training(tmp_path):
    """SIGTERM while the script records ops as fast as it can: every step it printed (each
    printed after its optimizer step ended it) is stored, at most one more ended before
    it died, and the one in progress is the tail."""
    db = tmp_path / "run.db"
    p, _ = _start(tmp_path, db, "loop")
    while p.stdout.readline() != "step 30\n":
        pass
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=60)  # (what it prints after the signal fits in the pipe)
    out, err = p.stdout.read(), p.stderr.read()  # through the buffered reader: no line lost
    p.stdout.close()
    p.stderr.close()
    assert p.returncode == 128 + signal.SIGTERM, err
    printed = 31 + sum(1 for x in out.splitlines() if x.startswith("step "))
    kinds = [k for _, k, _, _ in _steps(db, 1)]
    assert kinds[:printed] == ["optimizer"] * printed, (printed, kinds)
    assert kinds[printed:] in ([], ["tail"], ["optimizer"], ["optimizer", "tail"]), (printed, kinds[printed:], out[-300:], err)
    run = _runs(db)[0]
    assert run["status"] == "killed" and run["exit_status"] == 143


def test_sigterm_to_the_process_group(tmp_path, reference):
    """^C-style delivery: janus and the script both get SIGTERM, and janus
    forwards its own, so the script sees it twice: still one flush."""
    db = tmp_path / "run.db"
    p, _ = _start(tmp_path, db, "cblock", start_new_session=True)
    os.killpg(p.pid, signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGTERM, err
    _check_killed(db, reference, signal.SIGTERM)


def test_recorder_marks_the_run_killed(tmp_path, reference):
    """With `janus record` gone (SIGKILL), nobody reaps the script to close
    its run: the recorder marks it killed itself, so it does not read as lost."""
    db = tmp_path / "run.db"
    p, pid = _start(tmp_path, db, "cblock", start_new_session=True)
    p.kill()
    p.wait(timeout=60)  # (the script keeps the pipes open)
    try:
        assert _runs(db)[0]["status"] == "lost"  # the run's owner (janus) is gone
        os.kill(pid, signal.SIGTERM)
        assert _gone(pid), "the script did not die of SIGTERM"
    finally:
        if not _gone(pid, 0):
            os.kill(pid, signal.SIGKILL)
        p.stdout.close()
        p.stderr.close()
    _check_killed(db, reference, signal.SIGTERM)


def test_sigint_at_its_default(tmp_path, reference):
    db = tmp_path / "run.db"
    p, _ = _start(tmp_path, db, "cblock", env={"SIGINT_DEFAULT": "1"})
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGINT, err
    assert "KeyboardInterrupt" not in err
    _check_killed(db, reference, signal.SIGINT)


def test_sigint_still_raises_keyboardinterrupt(tmp_path, reference):
    """Python's SIGINT handler is chained, not replaced."""
    db = tmp_path / "run.db"
    p, _ = _start(tmp_path, db, "sleep")
    # inside the sleep: a signal that lands between CPython's last check and
    # the sleep's syscall waits the whole sleep out (CPython's own race)
    time.sleep(0.2)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert "KeyboardInterrupt" in err, err
    assert p.returncode == 128 + signal.SIGINT, err  # Python re-raises SIGINT on an uncaught ^C
    _check_killed(db, reference, signal.SIGINT)


@pytest.mark.skipif(SYS_TGKILL is None, reason="tgkill's number on this machine is not known here")
def test_sigint_taken_by_another_thread_still_interrupts(tmp_path, reference):
    """The kernel may give a signal sent to the process to any thread that
    does not block it; Python's handler run there only sets a flag, and the
    main thread would sleep on (60 s here).  The recorder sends it on to the
    main thread: ^C raises KeyboardInterrupt at once."""
    db = tmp_path / "run.db"
    p, pid = _start(tmp_path, db, "sleep_thread")
    tid = int(p.ready[2])
    assert tid != pid
    libc = ctypes.CDLL(None, use_errno=True)
    t0 = time.monotonic()
    assert libc.syscall(SYS_TGKILL, pid, tid, signal.SIGINT) == 0, ctypes.get_errno()  # to that thread alone
    out, err = p.communicate(timeout=60)
    p.wait(timeout=60)
    assert time.monotonic() - t0 < 30, "the main thread slept on"
    assert "KeyboardInterrupt" in err, err
    assert p.returncode == 128 + signal.SIGINT, err
    _check_killed(db, reference, signal.SIGINT)


def test_sigterm_with_the_store_locked_still_ends(tmp_path, reference):
    """The writer cannot commit (another process holds the store's write
    lock, whose busy wait is 10 s): the process dies of SIGTERM anyway,
    while the lock is still held, keeping the steps committed before."""
    db = tmp_path / "run.db"
    p, pid = _start(tmp_path, db, "cblock")
    deadline = time.monotonic() + 30
    while len(_steps(db, 1)) < 7 and time.monotonic() < deadline:  # the writer's tick commits them
        time.sleep(0.05)
    con = sqlite3.connect(str(db), isolation_level=None, timeout=30)
    con.execute("BEGIN IMMEDIATE")
    try:
        p.send_signal(signal.SIGTERM)
        assert _gone(pid, 30), "the script outlived a locked store by 30 s"
    finally:
        con.execute("ROLLBACK")
        con.close()
    out, err = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGTERM, err
    run = _runs(db)[0]
    assert run["status"] == "killed" and run["exit_status"] == 143
    assert _steps(db, 1) == reference[:7]  # the trailing step could not be committed


def test_forked_child_dies_of_sigterm_alone(tmp_path):
    """A forked child (a DataLoader worker) inherits no recorder handler:
    SIGTERM ends it at once, and the parent's recording goes on."""
    body = SCRIPT.replace('print("ready", os.getpid(), flush=True)', textwrap.dedent("""\
        child = os.fork()
        if child == 0:
            time.sleep(60)
            os._exit(0)
        os.kill(child, signal.SIGTERM)
        _, st = os.waitpid(child, 0)
        assert os.WIFSIGNALED(st) and os.WTERMSIG(st) == signal.SIGTERM, st
        (m(janus.randn(3, 4)) ** 2).sum()
        print("ready", os.getpid(), flush=True)"""))
    s = tmp_path / "fork.py"
    s.write_text(textwrap.dedent(body))
    db = tmp_path / "run.db"
    r = subprocess.run([JANUS, "record", "--db", str(db), sys.executable, str(s), "exit"], capture_output=True,
                       text=True, env=_env(), timeout=120)
    assert r.returncode == 0, r.stderr
    run = _runs(db)[0]
    assert run["status"] == "finished" and run["steps"] == 8


def test_only_the_main_thread_takes_a_signal_sent_to_the_process():
    """Every thread janus's import and kernels start (OpenBLAS's at load, the
    kernel pool's) blocks the signals a user sends, so ^C reaches Python's
    main thread even while it sleeps (a signal taken by another thread only
    sets Python's flag, which time.sleep() does not see)."""
    code = textwrap.dedent("""
        import os, signal, janus
        x = janus.randn(600, 600)
        (x @ x).sum().item()
        janus.relu(janus.randn(4_000_000)).sum().item()  # large enough for the kernel pool
        me = str(__import__("threading").get_native_id())
        for t in sorted(os.listdir("/proc/self/task")):
            blk = int(open(f"/proc/self/task/{t}/status").read().split("SigBlk:")[1].split()[0], 16)
            bits = [(blk >> (s - 1)) & 1 for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)]
            print("main" if t == me else "other", bits)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=_env(JANUS_NUM_THREADS="2"))
    assert r.returncode == 0, r.stderr
    rows = r.stdout.split("\n")
    assert "main [0, 0, 0]" in rows, r.stdout  # the script's own mask is left as it was
    others = [x for x in rows if x.startswith("other")]
    assert others and all(x == "other [1, 1, 1]" for x in others), r.stdout
