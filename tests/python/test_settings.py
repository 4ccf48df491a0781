"""janus's settings -- the JANUS_* environment variables of
runtime/settings.def -- as Python and the janus command see them: the table
through janus._C (_settings, _setting_value: the C parser, its refusals
naming the variable); a bad value refused at `import janus` (the settings
the eager runtime reads inside a kernel), by the recorder (the script runs
unrecorded and says why) and by every janus command (exit 2);
JANUS_NUM_THREADS's range and its cap at 4x the cores; `janus env` (the
table, the values set now, REFUSED marks, exit 1); and
scripts/check_settings.py (ctest `settings`) on small trees that break each
of its rules."""
import os
import subprocess
import sys

import pytest

from janus import _C

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(ROOT, "build")))
JANUS = os.path.join(BUILD, "janus")
CHECK = os.path.join(ROOT, "scripts", "check_settings.py")

ROWS = _C._settings()
BY_NAME = {r["name"]: r for r in ROWS}
needs_cli = pytest.mark.skipif(not os.path.exists(JANUS), reason=f"{JANUS} not built")


def clean_env(**extra):
    """This environment without any JANUS_* variable (the caller's shell may
    set some), this build's janus, and extra."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("JANUS_")}
    e["JANUS_BUILD_DIR"] = BUILD
    e["PYTHONPATH"] = os.path.join(ROOT, "python")
    e.update(extra)
    return e


def py(code, **extra):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=clean_env(**extra),
                          timeout=120)


def cli(*args, **extra):
    return subprocess.run([JANUS, *args], capture_output=True, text=True, env=clean_env(**extra), timeout=120)


@pytest.fixture
def no_janus_env(monkeypatch):
    for k in list(os.environ):
        if k.startswith("JANUS_"):  # JANUS_BUILD_DIR too: janus is imported already
            monkeypatch.delenv(k)
    return monkeypatch


# ---------------------------------------------------------------- the table


def test_table_rows():
    assert len(BY_NAME) == len(ROWS) > 30
    kinds = {"user", "child", "test", "bench", "build"}
    for r in ROWS:
        assert set(r) == {"name", "type", "default", "range", "kind", "readers", "doc"}
        assert r["name"].startswith("JANUS_") and r["kind"] in kinds and r["doc"] and r["readers"]
        assert r["type"] in ("bool", "int", "float", "path", "list", "choice")
        if r["type"] in ("int", "float"):
            assert ".." in r["range"]
    assert BY_NAME["JANUS_NUM_THREADS"]["range"] == "1..1024" and BY_NAME["JANUS_NUM_THREADS"]["default"] is None
    assert BY_NAME["JANUS_CACHE_MB"]["default"] == "512" and BY_NAME["JANUS_CACHE_MB"]["kind"] == "user"
    assert BY_NAME["JANUS_LIBCUDA"]["kind"] == "test" and BY_NAME["JANUS_RECORD_DB"]["kind"] == "child"


def test_defaults_parse(no_janus_env):
    for r in ROWS:
        v = _C._setting_value(r["name"])
        if r["default"] is None:
            assert v is None, r["name"]
        else:
            assert v is not None, r["name"]
    assert _C._setting_value("JANUS_CACHE_MB") == 512 and _C._setting_value("JANUS_REPLAY_DEFER") is True
    assert _C._setting_value("JANUS_REPLAY_ADAPT_MARGIN") == pytest.approx(0.10)


def test_setting_value_types_and_refusals(no_janus_env):
    m = no_janus_env
    m.setenv("JANUS_CACHE_MB", "64")
    assert _C._setting_value("JANUS_CACHE_MB") == 64 and _C._setting_value("CACHE_MB") == 64
    for bad in ("abc", "-1", "12x", "1.5", "99999999999999999999"):
        m.setenv("JANUS_CACHE_MB", bad)
        with pytest.raises(ValueError, match=f"JANUS_CACHE_MB={bad}"):
            _C._setting_value("JANUS_CACHE_MB")
    m.setenv("JANUS_CACHE_MB", "")  # empty: the default
    assert _C._setting_value("JANUS_CACHE_MB") == 512
    # the ends of a range (was: "1..1024" accepted 1..24, "1..9.0e18" nothing, the run ids of janus record)
    for name, ok, bad in (("JANUS_NUM_THREADS", "1024", "1025"), ("JANUS_CACHE_MB", "1048576", "1048577"),
                          ("JANUS_RECORD_RUN", "1", "0"), ("JANUS_RECORD_RUN", "9000000000000000000",
                                                           "9000000000000000001")):
        m.setenv(name, ok)
        assert _C._setting_value(name) == int(ok)
        m.setenv(name, bad)
        with pytest.raises(ValueError, match=f"{name}={bad} is out of range"):
            _C._setting_value(name)
    for on, off in (("1", "0"), ("yes", "no"), ("TRUE", "False"), ("On", "OFF")):
        m.setenv("JANUS_REPLAY_STRICT", on)
        assert _C._setting_value("JANUS_REPLAY_STRICT") is True
        m.setenv("JANUS_REPLAY_STRICT", off)
        assert _C._setting_value("JANUS_REPLAY_STRICT") is False
    m.setenv("JANUS_REPLAY_STRICT", "maybe")
    with pytest.raises(ValueError, match=r"JANUS_REPLAY_STRICT=maybe is not a switch: use 1/yes/true/on"):
        _C._setting_value("JANUS_REPLAY_STRICT")
    m.setenv("JANUS_REPLAY_ADAPT_MARGIN", "0.25")
    assert _C._setting_value("JANUS_REPLAY_ADAPT_MARGIN") == 0.25
    m.setenv("JANUS_AN_SELFCHECK", "all")
    assert _C._setting_value("JANUS_AN_SELFCHECK") == "all"
    m.setenv("JANUS_AN_SELFCHECK", "al")
    with pytest.raises(ValueError, match="JANUS_AN_SELFCHECK=al is not one of all"):
        _C._setting_value("JANUS_AN_SELFCHECK")
    m.setenv("JANUS_SKIP_PASSES", "fuse,plan")
    assert _C._setting_value("JANUS_SKIP_PASSES") == "fuse,plan"
    with pytest.raises(KeyError, match="JANUS_NO_SUCH is not a janus setting"):
        _C._setting_value("JANUS_NO_SUCH")


# ------------------------------------------------------- refused at import


@pytest.mark.parametrize("name,value", [
    ("JANUS_NUM_THREADS", "0"), ("JANUS_NUM_THREADS", "-1"), ("JANUS_NUM_THREADS", "abc"),
    ("JANUS_NUM_THREADS", "100000"), ("JANUS_NUM_THREADS", "1025"), ("JANUS_CACHE_MB", "-5"),
    ("JANUS_CACHE_MB", "1e3"),
])
def test_import_refuses_what_a_kernel_reads(name, value):
    # was: 0/-1/abc made 1 thread, 100000 made 64, CACHE_MB=-5 a cache without limit -- all silently
    p = py("import janus", **{name: value})
    assert p.returncode != 0 and "ValueError" in p.stderr and f"{name}={value}" in p.stderr, p.stderr


def test_import_leaves_the_rest_to_their_readers():
    # read where an error can go back: refused there (below), not by a plain import
    p = py("import janus; print(janus.ones(2).sum().item())", JANUS_RECORD_RUN="abc", JANUS_REPLAY_ADAPT="maybe")
    assert p.returncode == 0 and "2.0" in p.stdout, p.stderr


@pytest.mark.parametrize("name,value", [
    ("JANUS_RECORD_DECISIONS", "maybe"), ("JANUS_RECORD_EVAL_HOOK", "sometimes"), ("JANUS_RECORD_AS_DEVICE", "cpu"),
])
def test_recorder_refuses_a_bad_switch(tmp_path, name, value):
    # was: DECISIONS and EVAL_HOOK took any value but 0 (or "", false, no) as on, AS_DEVICE ignored it
    db = str(tmp_path / "run.db")
    run = _C._rec_create_run(db, "[]")
    p = py("import janus; print(janus.ones(2).sum().item()); import janus._record as r; print(r.active)",
           JANUS_RECORD_DB=db, JANUS_RECORD_RUN=str(run), **{name: value})
    assert p.returncode == 0 and p.stdout.split() == ["2.0", "False"], p.stderr
    assert f"{name}={value}" in p.stderr and "running without recording" in p.stderr, p.stderr


# ------------------------------------------------------- JANUS_NUM_THREADS

THREADS = "import os, janus; print(janus.get_num_threads(), os.sysconf('SC_NPROCESSORS_ONLN'))"


def threads(value=None):
    p = py(THREADS, **({"JANUS_NUM_THREADS": value} if value is not None else {}))
    assert p.returncode == 0, p.stderr
    n, cores = map(int, p.stdout.split())
    return n, cores, p.stderr


def test_num_threads_default_and_value():
    n, cores, err = threads()
    assert n == min(cores, 64) and "JANUS_NUM_THREADS" not in err
    n, _, err = threads("3")
    assert n == 3 and err == ""


def test_num_threads_far_above_the_cores_runs_the_cores():
    _, cores, _ = threads()
    if 4 * cores + 1 > 1024:
        pytest.skip("more than 255 cores: 4x the cores is above the accepted range")
    n, _, err = threads(str(4 * cores))  # up to 4x: as asked (another machine's chunking)
    assert n == min(4 * cores, 64)
    assert ("JANUS_NUM_THREADS" in err) == (4 * cores > 64)
    n, _, err = threads(str(4 * cores + 1))  # was: 4x+1 threads (up to 64), silently
    assert n == min(cores, 64)
    assert f"JANUS_NUM_THREADS={4 * cores + 1} is more than 4x this machine's {cores} cores" in err
    assert len(err.strip().splitlines()) == 1
    n, _, err = threads("1024")  # the top of the range
    assert n == min(cores if 1024 > 4 * cores else 1024, 64) and "JANUS_NUM_THREADS=1024" in err


# ---------------------------------------------------------------- janus env


@needs_cli
def test_env_prints_the_user_settings():
    p = cli("env")
    assert p.returncode == 0 and p.stderr == "", p.stderr
    for r in ROWS:
        assert (r["name"] + "  (" in p.stdout) == (r["kind"] == "user"), r["name"]
    assert "JANUS_CACHE_MB  (int 0..1048576; default 512)" in p.stdout and "now:" not in p.stdout
    assert cli("--help-env").stdout == p.stdout
    a = cli("env", "--all")
    assert a.returncode == 0 and all(r["name"] + "  (" in a.stdout for r in ROWS)
    assert "-- test: tests and fault injection" in a.stdout
    assert "usage: janus env" in cli("help", "env").stdout and "usage: janus env" in cli("env", "--help").stdout
    b = cli("env", "--bogus")
    assert b.returncode == 2 and "unknown argument '--bogus'" in b.stderr
    assert "env " in cli("--help").stdout


@needs_cli
def test_env_marks_values_set_now():
    p = cli("env", JANUS_NUM_THREADS="3")
    assert p.returncode == 0 and "now: 3\n" in p.stdout
    p = cli("env", JANUS_NUM_THREADS="0")
    assert p.returncode == 1 and "now: 0 -- REFUSED: JANUS_NUM_THREADS=0 is out of range: accepted 1..1024" in p.stdout
    assert "1 setting set now would be refused" in p.stderr
    # a refused hook not shown without --all still counts, and says where to look
    p = cli("env", JANUS_PLAN_LIVE="2")
    assert p.returncode == 1 and "JANUS_PLAN_LIVE=2" in p.stderr and "janus env --all" in p.stderr
    p = cli("env", "--all", JANUS_PLAN_LIVE="2", JANUS_CACHE_MB="x")
    assert p.returncode == 1 and p.stdout.count("REFUSED") == 2 and "2 settings" in p.stderr


@needs_cli
@pytest.mark.parametrize("cmd,name,value", [
    (["inspect", "nope.db"], "JANUS_NUM_THREADS", "abc"),
    (["optimize", "nope.db"], "JANUS_AN_SELFCHECK", "al"),
    (["record", "--", "true"], "JANUS_CACHE_MB", "lots"),
    (["replay", "--", "true"], "JANUS_REPLAY_STRICT", "maybe"),
])
def test_commands_refuse_a_bad_value(tmp_path, cmd, name, value):
    # was: inspect/optimize failed on the missing store (exit 1), record and replay ran
    p = subprocess.run([JANUS, *cmd], capture_output=True, text=True, cwd=tmp_path,
                       env=clean_env(**{name: value}), timeout=120)
    assert p.returncode == 2 and f"{name}={value}" in p.stderr and "janus env" in p.stderr, p.stderr
    assert os.listdir(tmp_path) == []  # nothing started, nothing written


@needs_cli
def test_replay_reads_switches_as_the_table_does(tmp_path):
    # JANUS_REPLAY_STRICT=off is off (was: any value but 0/false/no turned --strict on)
    p = subprocess.run([JANUS, "replay", "--db", "missing.db", "--", sys.executable, "-c", "pass"],
                       capture_output=True, text=True, cwd=tmp_path, env=clean_env(JANUS_REPLAY_STRICT="off"),
                       timeout=120)
    assert p.returncode == 0 and "running the command eagerly" in p.stderr, p.stderr
    p = subprocess.run([JANUS, "replay", "--db", "missing.db", "--", sys.executable, "-c", "pass"],
                       capture_output=True, text=True, cwd=tmp_path, env=clean_env(JANUS_REPLAY_STRICT="On"),
                       timeout=120)
    assert p.returncode == 1 and "--strict: cannot replay" in p.stderr, p.stderr


# ------------------------------------------------- scripts/check_settings.py

DEF = '''\
/* a small table */
X(ALPHA, BOOL, "0", "", USER, "lib/a.c", "a switch")
X(BETA, PATH, "", "", BUILD, "tools/b.py", "where the build is")
X(GAMMA, INT, "1", "0..9", TEST, "tests", "a test hook")
'''
CLEAN = {
    "runtime/settings.def": DEF,
    "README.md": "# x\n\n## Settings\n\n- `JX_ALPHA`: a switch\n\n## Next\n\nJX_BETA=build, -DJX_CUDA=ON\n",
    "lib/a.c": "int f(void) { int on; return jn_setting_bool(JN_S_ALPHA, &on) ? 0 : on; }\n"
               "const char *cc(void) { return getenv(\"CC\"); }\n",
    "tools/b.py": 'import os\nBUILD = os.environ.get("JX_BETA", "build")\nos.environ["JX_ALPHA"] = "1"\n'
                  'PREFIX = "JX_RECORD_"\n',
    "tests/t.py": 'import os\nfrom janus import _C\nn = _C._setting_value("JX_GAMMA")\n'
                  'print(os.environ.get(k) for k in ("JX_ALPHA",))\n',
}
BROKEN = [
    ("lib/c.c", 'char *v(void) { return getenv("JX_ALPHA"); }\n', "lib/c.c:1: getenv of JX_ALPHA"),
    ("lib/d.c", "char *v(const char *n) { return getenv(n); }\n", "lib/d.c:1: getenv of a computed name"),
    ("lib/e.c", "int g(void) { int b; return jn_setting_bool(JN_S_ALPHA, &b); }\n",
     "lib/e.c: reads JX_ALPHA, but runtime/settings.def does not list it"),
    ("tools/f.py", 'import os\non = os.environ.get("JX_ALPHA") == "1"\n', "tools/f.py:2: JX_ALPHA read from"),
    ("tools/g.py", 'import os\non = "JX_ALPHA" in os.environ\n', "tools/g.py:2: JX_ALPHA read from"),
    ("tools/h.py", 'import os\nv = os.environ[name]\n', "tools/h.py:2: the environment read with a computed name"),
    ("tests/u.py", 'import os\non = os.getenv("JX_GAMMA")\n', "tests/u.py:2: JX_GAMMA read from"),
    ("lib/z.c", "long g(void) { return jn_setting_int_lazy(JN_S_ALPHA); }\n",
     "lib/z.c:1: JX_ALPHA is read where no error can go back (jn_setting_int_lazy), but python/janus/__init__.py"),
    ("docs/x.md", "Set JX_DELTA=1 to ...\n", "docs/x.md:1: JX_DELTA is not a row"),
    ("README.md", "## Settings\n\n- `JX_ALPHA`, `JX_BETA`\n",
     "README.md: Settings: JX_BETA is listed but is not a USER row (kind BUILD)"),
    ("README.md", "## Settings\n\nnone\n", "README.md: Settings: JX_ALPHA (a USER row) is not listed"),
    ("runtime/settings.def", DEF + 'X(DELTA, BOOL, "0", "", TEST, "lib/gone.c", "d")\n',
     "JX_DELTA: reader lib/gone.c does not exist"),
    ("runtime/settings.def", DEF + 'X(DELTA, BOOL, "0", "", TEST, "lib/a.c", "d")\n',
     "JX_DELTA: reader lib/a.c does not mention JX_DELTA"),
]


def real(text):
    """JX_ is JANUS_ in the trees (written so here, this file's own names are all rows)."""
    return text.replace("JX_", "JANUS_")


def write_tree(root, files):
    for path, text in files.items():
        os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
        with open(os.path.join(root, path), "w") as f:
            f.write(real(text))


def check(root):
    return subprocess.run([sys.executable, CHECK, "--root", str(root)], capture_output=True, text=True, timeout=60)


def test_check_passes_a_clean_tree(tmp_path):
    write_tree(tmp_path, CLEAN)
    p = check(tmp_path)
    assert p.returncode == 0 and "3 settings" in p.stdout, p.stdout


@pytest.mark.parametrize("path,text,want", BROKEN, ids=[f"{b[0]}:{b[2][:30]}" for b in BROKEN])
def test_check_flags(tmp_path, path, text, want):
    write_tree(tmp_path, dict(CLEAN, **{path: text}))
    p = check(tmp_path)
    assert p.returncode == 1 and real(want) in p.stdout, p.stdout


def test_check_reads_this_tree():
    # the real table parses, and each of its rows is in janus._C's (one source, two readers)
    with open(os.path.join(ROOT, "runtime", "settings.def")) as f:
        ids = [ln.split("(", 1)[1].split(",", 1)[0] for ln in f if ln.startswith("X(")]
    assert ["JANUS_" + i for i in ids] == [r["name"] for r in ROWS]
    readme = open(os.path.join(ROOT, "README.md")).read().split("## Settings\n", 1)[1].split("\n## ", 1)[0]
    for r in ROWS:
        assert (f"`{r['name']}`" in readme) == (r["kind"] == "user"), r["name"]
