"""`janus optimize` end to end: record a tiny training script with the real
recorder (`janus record`), mine it with `janus optimize --dump-ir` and check
the structure of the graphs (a batch-size symbol from a smaller last batch,
state inputs written back, guards with source lines), the summary line,
`janus inspect --graphs`, determinism, and the refusals (missing file, not
a trace store, usage mistakes).  Skips when the janus command was built
without the analyzer (ir/ and analyzer/ not yet in the build)."""
import os
import re
import sys
import textwrap

import pytest

from dynamic_runs import JANUS  # noqa: E402
from dynamic_runs import janus as _janus  # noqa: E402


def janus(*args, cwd=None, timeout=120, extra_env=None):
    return _janus(*args, timeout=timeout, cwd=cwd, extra_env=extra_env)


def _have_analyzer():
    if not os.path.exists(JANUS):
        return False
    r = janus("optimize", "/nonexistent/janus-probe.db")
    return "built without the analyzer" not in r.stderr


pytestmark = pytest.mark.skipif(not _have_analyzer(), reason=f"{JANUS} not built with the analyzer")

# 5 optimizer steps of a tiny MLP; the last batch is smaller (a batch symbol);
# loss.item() right after opt.step() ends an empty segment, so the next
# segment still starts at the step start.
TRAIN = """
import janus, janus.nn as nn
janus.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3))
opt = janus.optim.SGD(model.parameters(), lr=0.05)
X = janus.randn(35, 6)
Y = janus.randint(0, 3, (35,))
for i in range(0, 35, 8):
    x, y = X[i:i + 8], Y[i:i + 8]
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    print(round(loss.item(), 3))
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    d = tmp_path_factory.mktemp("opt")
    s = d / "train.py"
    s.write_text(textwrap.dedent(TRAIN))
    db = d / "run.db"
    r = janus("record", "--db", str(db), "--", sys.executable, str(s), cwd=str(d))
    assert r.returncode == 0, r.stderr
    return db, s


def graphs(text):
    """{name: (header line, [body lines])} of an IR dump."""
    out, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"graph (\S+) ", line)
        if m:
            cur = m.group(1)
            out[cur] = (line, [])
        elif line.startswith("}"):
            cur = None
        elif cur:
            out[cur][1].append(line.strip())
    return out


def test_summary_line(recorded):
    db, _ = recorded
    r = janus("optimize", str(db))
    assert r.returncode == 0, r.stderr
    m = re.search(r"janus optimize: (\d+) graphs? in (\d+) groups? \((\d+) variants?\), (\d+) loops?, (\d+) symbols?, "
                  r"(\d+) guards? from 1 run, ([\d,]+) steps, ([\d,]+) ops in [\d.]+ s", r.stdout)
    assert m, r.stdout
    ngraphs, ngroups, nsyms, nguards = int(m.group(1)), int(m.group(2)), int(m.group(5)), int(m.group(6))
    assert ngraphs >= 2 and ngroups >= 2 and nsyms >= 1 and nguards > ngraphs
    assert int(m.group(7)) == 6  # 5 optimizer steps + the tail
    r = janus("optimize", "--quiet", str(db))
    assert r.returncode == 0 and r.stdout == "" and r.stderr == ""


def test_dump_ir_structure(recorded):
    db, script = recorded
    r = janus("optimize", "--dump-ir", str(db))
    assert r.returncode == 0, r.stderr
    assert "janus optimize:" in r.stderr and "janus optimize:" not in r.stdout  # summary off stdout
    text = r.stdout
    assert text.startswith("module optable=")
    assert f'"{script}":' in text  # call sites name the script's lines
    g = graphs(text)
    assert g, text
    # the training steps after the first: 4 steps, batch 8 and 3, entered at
    # the step start (the loss printed before them is no entry of its own)
    assert not any('entry="after item()' in h for h, _ in g.values()), text
    train = [(h, b) for h, b in g.values() if 'entry="step start"' in h and "steps=1..4" in h]
    assert len(train) == 1, text
    head, body = train[0]
    assert "support=4" in head
    syms = [l for l in body if l.startswith("sym ")]
    batch = [l for l in syms if re.match(r"sym s\d+ dim 3\.\.8 ", l)]
    assert batch, syms
    b = batch[0].split()[1]
    # the batch symbol is unified: the slices of X and Y and the activations carry it
    assert sum(1 for l in body if re.search(rf"\[{b}(, \d+)?\]", l)) >= 5
    # the four parameters are state, bound, guarded, and written back
    state = [l for l in body if re.match(r"in %\d+ state f32\[", l)]
    assert len(state) == 4 and all("bind=" in l for l in state)
    assert sum(1 for l in body if re.match(r"out %\d+ state=%\d+", l)) == 4
    assert sum(1 for l in body if l.startswith("guard bind ")) == 4
    assert any(l.startswith(f"guard sym {b} in 3..8") for l in body)
    # every node and guard names its source line
    assert all(re.search(r"@\d+", l) for l in body if l.startswith(("guard ", "%")))


def test_inspect_graphs_and_determinism(recorded):
    db, _ = recorded
    a = janus("optimize", "--dump-ir", "--quiet", str(db))
    b = janus("optimize", "--dump-ir", "--quiet", str(db))
    c = janus("inspect", "--graphs", str(db))
    assert a.returncode == b.returncode == c.returncode == 0
    assert a.stdout == b.stdout
    assert c.stdout.startswith(a.stdout)
    r = janus("optimize", "--run", "1", "--dump-ir", "--quiet", str(db))
    assert r.stdout == a.stdout


def test_ir_out(recorded, tmp_path):
    db, _ = recorded
    out = tmp_path / "graphs.jnir"
    r = janus("optimize", "--quiet", "--ir-out", str(out), str(db))
    assert r.returncode == 0, r.stderr
    assert out.read_bytes().startswith(b"JNIR")
    r = janus("optimize", "--quiet", "--ir-out", str(tmp_path / "no" / "such" / "dir.jnir"), str(db))
    assert r.returncode == 1 and "cannot write" in r.stderr


def test_refusals(tmp_path, recorded):
    db, _ = recorded
    r = janus("optimize", str(tmp_path / "nope.db"))
    assert r.returncode == 1 and "does not exist" in r.stderr and "janus record" in r.stderr
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database" * 50)
    r = janus("optimize", str(junk))
    assert r.returncode == 1 and str(junk) in r.stderr
    r = janus("optimize", "--run", "7", str(db))
    assert r.returncode == 1 and "no run 7" in r.stderr
    for args in ([], ["--frob", str(db)], ["--run", "x", str(db)], [str(db), str(db)], ["--ir-out"]):
        r = janus("optimize", *args)
        assert r.returncode == 2 and "usage: janus optimize" in r.stderr, args
    r = janus("inspect", "--graphs", "--json", str(db))
    assert r.returncode == 2
    r = janus("optimize", "--help")
    assert r.returncode == 0 and r.stdout.startswith("usage: janus optimize")


# A Python loop over time steps whose count varies per step: an IR loop with
# a trip-count symbol, the hidden state as a carry, the per-step outputs
# collected and stacked.
RNN = """
import janus
janus.manual_seed(0)
W = janus.randn(4, 4)
for T in [3, 5, 4, 6, 3, 5]:
    x = janus.randn(2, T, 4)
    h = janus.zeros(2, 4)
    outs = []
    for t in range(T):
        h = janus.tanh(x[:, t] @ W + h)
        outs.append(h)
    y = janus.stack(outs, 1)
    print(round(float(y.sum()), 4))
    janus.step()
"""


def test_loop_end_to_end(tmp_path):
    s = tmp_path / "rnn.py"
    s.write_text(RNN)
    db = tmp_path / "rnn.db"
    r = janus("record", "--db", str(db), "--", sys.executable, str(s), cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    r = janus("optimize", "--dump-ir", str(db))
    assert r.returncode == 0, r.stderr
    assert re.search(r"janus optimize: \d+ graphs? .* 1 loop,", r.stderr), r.stderr
    g = [b for h, b in graphs(r.stdout).values() if "support=5" in h]
    assert len(g) == 1, r.stdout
    body = g[0]
    loop = [l for l in body if l.startswith("loop ")]
    assert len(loop) == 1, body
    m = re.match(r"loop L0 trip=(s\d+) ivar=(i\d+) \{", loop[0])
    assert m, loop
    trip, ivar = m.groups()
    assert any(l.startswith(f"sym {trip} dim 3..6") for l in body)
    assert any(l.startswith("carry ") for l in body)
    assert any(l.startswith("collect ") for l in body)
    assert any(f"select(" in l and f"index={ivar}" in l for l in body)
    assert any(l.startswith(f"guard trip L0 in 3..6") for l in body)
    assert any(f"[2, {trip}, 4]" in l for l in body)  # the stacked outputs


def test_bundle_stored_and_replaced(recorded, tmp_path):
    """`janus optimize` stores its graphs as the store's cpu bundle; a second
    run replaces it (one bundle left), --no-store leaves it alone, and the
    stored graphs are the ones --dump-ir prints."""
    import shutil
    import sqlite3
    db = tmp_path / "copy.db"
    shutil.copy(recorded[0], db)

    def bundles():
        con = sqlite3.connect(str(db))
        try:
            return con.execute("SELECT id, target FROM bundles ORDER BY id").fetchall()
        except sqlite3.OperationalError:  # a store from before bundles (schema v1)
            return []
        finally:
            con.close()

    before = bundles()  # earlier tests may have optimized the recorded store already
    r = janus("optimize", "--no-store", str(db))
    assert r.returncode == 0, r.stderr
    assert bundles() == before and "stored as bundle" not in r.stdout
    r = janus("optimize", str(db))
    assert r.returncode == 0, r.stderr
    m = re.search(r"stored as bundle (\d+) \(([\d,]+) bytes\)", r.stdout)
    assert m, r.stdout
    first = int(m.group(1))
    assert bundles() == [(first, "cpu")]
    r = janus("optimize", str(db))
    assert r.returncode == 0, r.stderr
    (second, target), = bundles()
    assert second > first and target == "cpu"
    r = janus("inspect", str(db))
    assert r.returncode == 0 and f"bundle {second}" in r.stdout and "usable here" in r.stdout
    # a run and a bundle name CPU features the same way (runtime/cpu.c), so they compare
    con = sqlite3.connect(str(db))
    try:
        run_cpu, = con.execute("SELECT cpu_features FROM runs ORDER BY id LIMIT 1").fetchone()
        bundle_cpu, = con.execute("SELECT cpu_features FROM bundles").fetchone()
    finally:
        con.close()
    assert run_cpu == bundle_cpu
    # a read-only store: the analysis works, the bundle write says why it failed
    os.chmod(db, 0o444)
    try:
        if os.access(db, os.W_OK):  # root ignores file permissions
            return
        r = janus("optimize", str(db))
        assert r.returncode == 1 and "cannot store the bundle" in r.stderr and "--no-store" in r.stderr
    finally:
        os.chmod(db, 0o644)


def test_codegen_passes_run_before_storing(recorded, tmp_path):
    """The stored bundle holds the graphs after the codegen passes: the
    summary reports them, JANUS_DUMP_IR dumps the IR after a named pass (with
    the fused kernels and the memory plan), and an unknown pass name is an
    error that stores nothing."""
    import shutil
    db = tmp_path / "copy.db"
    shutil.copy(recorded[0], db)
    r = janus("optimize", str(db))
    assert r.returncode == 0, r.stderr
    m = re.search(r"codegen: ([\d,]+) nodes -> ([\d,]+), (\d+) fused kernels, arena ([\d,]+) of ([\d,]+) bytes",
                  r.stdout)
    assert m, r.stdout
    before, after, arena, naive = (int(m.group(i).replace(",", "")) for i in (1, 2, 4, 5))
    assert 0 < after <= before and 0 < arena <= naive
    p = janus("optimize", "--quiet", str(db), extra_env={"JANUS_DUMP_IR": "plan"})
    assert p.returncode == 0, p.stderr
    assert "# after plan (graph g" in p.stderr and re.search(r"^\s*arena \S+", p.stderr, re.M), p.stderr[:2000]
    assert re.search(r" mem=\S+", p.stderr)
    p = janus("optimize", str(db), extra_env={"JANUS_DUMP_IR": "fusion"})  # not a pass name
    assert p.returncode == 1 and "fusion" in p.stderr and "nothing was stored" in p.stderr, p.stderr
    # JANUS_SKIP_PASSES: the same graphs without a pass (the dump says so), stored;
    # an unknown name is refused with the known ones and stores nothing
    p = janus("optimize", "--quiet", str(db), extra_env={"JANUS_SKIP_PASSES": "remat", "JANUS_DUMP_IR": "remat"})
    assert p.returncode == 0, p.stderr
    assert "# after remat (skipped) (graph g" in p.stderr, p.stderr[:2000]
    assert len(_bundle_ids(db)) >= 1
    ids = _bundle_ids(db)
    p = janus("optimize", str(db), extra_env={"JANUS_SKIP_PASSES": "remat,rematt"})
    assert p.returncode == 1 and "'rematt'" in p.stderr and "JANUS_SKIP_PASSES" in p.stderr, p.stderr
    assert "known: verify" in p.stderr and "nothing was stored" in p.stderr, p.stderr
    assert _bundle_ids(db) == ids


def _bundle_ids(db):
    import sqlite3
    con = sqlite3.connect(str(db))
    try:
        return con.execute("SELECT id FROM bundles ORDER BY id").fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        con.close()


def test_kernels_compiled_into_the_bundle(recorded, tmp_path):
    """`janus optimize` compiles the fused kernels with the system C compiler
    and stores the object in the bundle (the summary counts them, the bundle
    grows by the object); --no-compile stores the graphs alone."""
    import shutil
    db = tmp_path / "copy.db"
    shutil.copy(recorded[0], db)
    r = janus("optimize", str(db))
    assert r.returncode == 0, r.stderr
    m = re.search(r"fused kernels, .*, (\d+) kernels? compiled in ([\d.]+) s", r.stdout)
    assert m and int(m.group(1)) > 0, r.stdout
    with_so = int(re.search(r"stored as bundle \d+ \(([\d,]+) bytes\)", r.stdout).group(1).replace(",", ""))
    r = janus("optimize", "--no-compile", str(db))
    assert r.returncode == 0, r.stderr
    assert "kernels not compiled (--no-compile)" in r.stdout, r.stdout
    without = int(re.search(r"stored as bundle \d+ \(([\d,]+) bytes\)", r.stdout).group(1).replace(",", ""))
    assert with_so > without + 1000, (with_so, without)
    assert "--no-compile" in janus("optimize", "--help").stdout


def test_missing_compiler(recorded, tmp_path):
    """Without a C compiler `janus optimize` says what it looked for and how
    to get one, stores nothing and exits 1; --no-compile still works."""
    import shutil
    db = tmp_path / "copy.db"
    shutil.copy(recorded[0], db)
    before = _bundle_ids(db)
    p = janus("optimize", str(db), extra_env={"CC": "/nonexistent/cc"})
    assert p.returncode == 1, p.stderr
    for needle in ("no C compiler found", "/nonexistent/cc", "apt-get install gcc", "--no-compile",
                   "nothing was stored"):
        assert needle in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and _bundle_ids(db) == before
    p = janus("optimize", "--no-compile", str(db), extra_env={"CC": "/nonexistent/cc"})
    assert p.returncode == 0 and "stored as bundle" in p.stdout, p.stderr
    assert len(_bundle_ids(db)) == 1
