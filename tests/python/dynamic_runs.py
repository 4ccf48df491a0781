"""Shared by the analyzer tests: the `janus` command, the scripts in
tests/dynamic/ (one per dynamic feature of a training loop) recorded once
per test session, and a reader for the IR text form that
`janus optimize --dump-ir` prints (grammar: ir/jn_ir.h).

Recordings are cached for the session in one temporary folder, so
test_dynamic_recordings.py and test_analyzer_golden.py record each script
only once."""
import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(ROOT, "build")))
JANUS = os.path.join(BUILD, "janus")
DYNAMIC = os.path.join(ROOT, "tests", "dynamic")
GOLDEN = os.path.join(ROOT, "tests", "golden")

SCRIPTS = ["last_batch_smaller", "seq_len_varies", "branch_every_n", "lr_schedule", "train_eval",
           "loss_item_branch", "float_or_tensor", "python_state", "advancing_offset", "attn_seq2seq",
           "rnn_loss_logged"]


def env(**extra):
    e = dict(os.environ)
    e["JANUS_BUILD_DIR"] = BUILD
    e["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + e.get("PYTHONPATH", "")
    for k in ("JANUS_RECORD_DB", "JANUS_RECORD_RUN"):
        e.pop(k, None)
    # replays run every graph that fits, so a test sees the compiled path;
    # tests of the timing choice (JANUS_REPLAY_ADAPT) set it themselves
    e["JANUS_REPLAY_ADAPT"] = "0"
    e.update(extra)
    return e


def janus(*args, timeout=120, cwd=None, extra_env=None):
    """The janus command, with this checkout's build and package (and extra_env set)."""
    return subprocess.run([JANUS, *args], capture_output=True, text=True, env=env(**(extra_env or {})),
                          timeout=timeout, cwd=cwd)


_have_opt = None


def have_optimize():
    """Is `optimize` a command of this build? (`janus optimize --help` answers
    with its usage; an unknown command is a usage error.)"""
    global _have_opt
    if _have_opt is None:
        r = janus("optimize", "--help") if os.path.exists(JANUS) else None
        _have_opt = r is not None and r.returncode == 0 and r.stdout.startswith("usage: janus optimize")
    return _have_opt


def optimize_help():
    r = janus("optimize", "--help")
    return r.stdout + r.stderr


def script_path(name):
    return os.path.join(DYNAMIC, name + ".py")


def script_line(name, needle):
    """1-based line of the first line of tests/dynamic/<name>.py containing needle."""
    with open(script_path(name)) as f:
        for i, line in enumerate(f, 1):
            if needle in line:
                return i
    raise AssertionError(f"{needle!r} not in {name}.py")


_tmp = None
_recorded = {}


def _tmpdir():
    global _tmp
    if _tmp is None:
        _tmp = tempfile.mkdtemp(prefix="janus-dyn-")
        atexit.register(shutil.rmtree, _tmp, True)
    return _tmp


def record(name):
    """Path of a store holding one recorded run of tests/dynamic/<name>.py (cached)."""
    if name not in _recorded:
        db = os.path.join(_tmpdir(), name + ".db")
        r = janus("record", "--db", db, "--", sys.executable, script_path(name), cwd=ROOT)
        assert r.returncode == 0, f"recording {name}.py failed ({r.returncode}):\n{r.stderr[-3000:]}"
        assert r.stdout.strip().endswith("done"), r.stdout
        _recorded[name] = db
    return _recorded[name]


# ------------------------------------------------------------------ IR text

class Graph:
    def __init__(self, header):
        self.header = header
        m = re.match(r"graph (\S+) (.*) \{$", header)
        assert m, f"bad graph header: {header!r}"
        self.name = m.group(1)
        self.attrs = dict(re.findall(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)', m.group(2)))
        for k in ("entry", "exit"):
            if k in self.attrs:
                self.attrs[k] = self.attrs[k][1:-1]
        self.lines = []   # body lines, stripped

    def int(self, key):
        return int(self.attrs[key])

    def steps_lo(self):
        return int(self.attrs["steps"].split("..")[0])

    def steps_hi(self):
        return int(self.attrs["steps"].split("..")[1])

    def decided(self):
        d = self.attrs.get("decided")
        return int(d[1:]) if d else None

    def kind(self, first_word):
        return [ln for ln in self.lines if ln.split(" ", 1)[0] == first_word]

    @property
    def syms(self):
        """{name: (kind, lo, hi)}"""
        out = {}
        for ln in self.kind("sym"):
            m = re.match(r"sym (\S+) (\w+) (-?\d+)\.\.(-?\d+)", ln)
            assert m, ln
            out[m.group(1)] = (m.group(2), int(m.group(3)), int(m.group(4)))
        return out

    @property
    def inputs(self):
        """[(value, kind, type text, site or None, line)]"""
        out = []
        for ln in self.kind("in"):
            m = re.match(r"in (%\d+) (\w+) (\S+\[[^\]]*\](?: cuda)?)", ln)
            assert m, ln
            s = re.search(r" @(\d+)", ln)
            out.append((m.group(1), m.group(2), m.group(3), int(s.group(1)) if s else None, ln))
        return out

    @property
    def nodes(self):
        return [ln for ln in self.lines if ln.startswith("%")]

    def ops(self):
        return [re.search(r"= (\w+)\(", ln).group(1) for ln in self.nodes]

    @property
    def guards(self):
        return self.kind("guard")


class Module:
    def __init__(self, text):
        self.text = text
        self.header = None
        self.sites = {}    # id -> (file, line, func)
        self.graphs = []
        depth, g = 0, None
        for raw in text.splitlines():
            ln = strip_comment(raw).strip()
            if not ln:
                continue
            if depth == 0:
                if ln.startswith("module "):
                    self.header = dict(re.findall(r"(\w+)=(\S+)", ln))
                elif ln.startswith("site "):
                    m = re.match(r'site (\d+) "(.*)":(\d+) "(.*)"$', ln)
                    assert m, f"bad site line: {ln!r}"
                    self.sites[int(m.group(1))] = (m.group(2), int(m.group(3)), m.group(4))
                elif ln.startswith("graph "):
                    g = Graph(ln)
                    self.graphs.append(g)
                    depth = 1
                else:
                    raise AssertionError(f"unexpected top-level line: {ln!r}")
            else:
                if ln == "}":
                    depth -= 1
                    if depth:
                        g.lines.append(ln)
                    continue
                if ln.endswith("{"):
                    depth += 1
                g.lines.append(ln)
        assert depth == 0, "unterminated graph"
        assert self.header is not None, "no module line"

    def site_line(self, sid):
        """(basename, line) of a call site id."""
        f, line, _ = self.sites[sid]
        return os.path.basename(f), line


def strip_comment(line):
    """The line without its '#' comment ('#' inside a quoted string is text)."""
    q = False
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\" and q:
            i += 2
            continue
        if c == '"':
            q = not q
        elif c == "#" and not q:
            return line[:i].rstrip()
        i += 1
    return line


_ABS_PY = re.compile(r'(?<![\w.])/(?:[^\s"/:]+/)+([^\s"/:]+\.py)\b')
_BIND = re.compile(r"\b(bind=|bind %\d+ == )(\d+)")
_OPTABLE = re.compile(r"^module optable=[0-9a-fA-F]+", re.M)
_LONGFLOAT = re.compile(r"(?<![\w.%@])-?\d+\.\d{7,}(?:e[-+]?\d+)?")


def normalize(text):
    """What may legitimately differ between machines and runs, made equal,
    keeping the text valid IR (goldens must parse back): absolute paths of
    source files -> their basename; the op-table hash (changes whenever an
    op is added) -> 0000000000000000; recorded tensor ids in bind= and
    `guard bind` -> 1, 2, ... in order of first appearance (they depend on
    how many tensors janus itself created before); floats with many digits
    (recorded data-dependent values, BLAS-kernel dependent in the last
    bits) -> 6 significant digits; comments and blank lines dropped."""
    text = _OPTABLE.sub("module optable=0000000000000000", text)
    text = _ABS_PY.sub(lambda m: m.group(1), text)
    ids = {}

    def bind(m):
        t = ids.setdefault(m.group(2), str(len(ids) + 1))
        return m.group(1) + t

    out = []
    for raw in text.splitlines():
        ln = strip_comment(raw).rstrip()
        if not ln.strip():
            continue
        ln = _BIND.sub(bind, ln)
        ln = _LONGFLOAT.sub(lambda m: "%.6g" % float(m.group(0)), ln)
        out.append(ln)
    return "\n".join(out) + "\n"
