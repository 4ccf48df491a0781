"""Golden IR of the analyzer: each script in tests/dynamic/ is recorded
(`janus record`), analyzed (`janus optimize run.db --dump-ir`) and its IR
compared with tests/golden/<name>.ir after normalizing what legitimately
varies between machines and runs (dynamic_runs.normalize: source paths,
op-table hash, tensor ids, long floats, comments).

    JANUS_UPDATE_GOLDEN=1 python3 -m pytest tests/python/test_analyzer_golden.py

rewrites the goldens instead of comparing (review the diff before
committing).  A missing golden is a failure, not a skip.

Besides the exact text, each script has semantic expectations that hold
whatever the analyzer's naming and ordering: the symbols, loops, variants
and guards its dynamic feature must produce (EXPECT below, also written as
the header comment of every golden).  They read the dump through the
grammar of ir/jn_ir.h (dynamic_runs.Module).  Print -> parse -> print and
the binary round trip of every golden are checked in C by the IR tests;
here, when the command offers --ir-out, the binary file must be written.

All of it skips, cleanly, only while `janus optimize` is not a command of
this build."""
import difflib
import os
import re

import pytest
from janus import _C

import dynamic_runs as dr
from dynamic_runs import GOLDEN, SCRIPTS, Module, normalize, record, script_line

pytestmark = [
    pytest.mark.skipif(not os.path.exists(dr.JANUS), reason=f"{dr.JANUS} not built"),
    pytest.mark.skipif(os.path.exists(dr.JANUS) and not dr.have_optimize(),
                       reason="`janus optimize` is not a command of this build yet (issue 5)"),
]

EXPECT = {
    "last_batch_smaller": "a dim symbol 4..16 (the batch; the last batch of an epoch has 4 samples) "
                          "that types a value, and a `guard sym` on it",
    "seq_len_varies": "loops (forward and backward over time) whose trip count is an expression of a "
                      "dim symbol that varies with the sequence length, with loop-carried values (the "
                      "hidden state, gradient sums), and the symbol's range guarded",
    "branch_every_n": "two variants of one group (variant>=1, parent>=0) decided at the "
                      "`if step % 3 == 0` line, only one holding the regularizer's ops",
    "lr_schedule": "a scalar input fed at opt.step() (the learning rate) with no scalar guard, and no variants",
    "train_eval": "a training graph with dropout_mask and var (batch statistics) that writes state, and "
                  "an evaluation graph (argmax) with neither",
    "loss_item_branch": "segments split at the item() sync (an exit and an entry naming it); after it, both "
                        "outcomes of `if loss.item() > THRESHOLD` (with and without `loss * 0.5`), as groups or "
                        "as variants decided at that line",
    "float_or_tensor": "variants of one group where scale()'s mul reads a Python number (scalar/const input) in "
                       "one and a tensor in the other, guarded `pytype ... == float` / `== tensor`",
    "python_state": "a scalar input for the EMA (at the `/ ema` line) with no scalar guard, and "
                    "`out %v state=%w` writing back the in-place updated `running` tensor",
    "advancing_offset": "a slice of the text whose start is an int symbol (the offset that advances every "
                        "step) with a SEEN range guard, and loops over time steps whose trip count is a symbol",
    "attn_seq2seq": "one graph for every source length and target lengths 4..6: the decoder's backward loop "
                    "reads h[t - 1] of its forward loop by index from a collect of that loop's carry param "
                    "(the seed at t = 0), the batch stays the constant 4",
    "rnn_loss_logged": "split at the item() sync: the forward's time loop keeps each step's saved values as "
                       "collects (kept outputs), the backward's loop reads them as stacked inputs (dim 0 its trip, "
                       "select by its induction variable) and carries one of those selects to the next iteration",
}

_dumps = {}
_stderr = {}


def dump(name):
    """Raw stdout of `janus optimize <store of name> --dump-ir` (cached)."""
    if name not in _dumps:
        r = dr.janus("optimize", record(name), "--dump-ir")
        assert r.returncode == 0, f"janus optimize failed on {name} ({r.returncode}):\n{r.stderr[-3000:]}"
        assert r.stdout.strip(), f"janus optimize --dump-ir printed nothing for {name}\n{r.stderr[-2000:]}"
        _dumps[name] = r.stdout
        _stderr[name] = r.stderr
    return _dumps[name]


def module(name):
    return Module(dump(name))


def golden_text(name, text):
    head = (f"# Golden IR of tests/dynamic/{name}.py (normalized, see tests/python/dynamic_runs.py).\n"
            f"# Regenerate: JANUS_UPDATE_GOLDEN=1 python3 -m pytest tests/python/test_analyzer_golden.py\n"
            f"# Must contain: {EXPECT[name]}\n")
    return head + text


# ------------------------------------------------------------------ golden

@pytest.mark.parametrize("name", SCRIPTS)
def test_golden(name):
    got = normalize(dump(name))
    path = os.path.join(GOLDEN, name + ".ir")
    if _C._setting_value("JANUS_UPDATE_GOLDEN"):
        os.makedirs(GOLDEN, exist_ok=True)
        with open(path, "w") as f:
            f.write(golden_text(name, got))
        return
    assert os.path.exists(path), (f"no golden {os.path.relpath(path, dr.ROOT)}: generate it with "
                                  f"JANUS_UPDATE_GOLDEN=1 python3 -m pytest tests/python/test_analyzer_golden.py "
                                  f"and review it")
    with open(path) as f:
        want = normalize(f.read())
    if got != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                            f"golden/{name}.ir", "janus optimize --dump-ir", n=2))
        pytest.fail(f"IR of {name} differs from its golden (JANUS_UPDATE_GOLDEN=1 regenerates):\n{diff[:6000]}")


@pytest.mark.parametrize("name", SCRIPTS)
def test_dump_is_well_formed(name):
    m = module(name)
    assert int(m.header["graphs"]) == len(m.graphs)
    assert re.fullmatch(r"[0-9a-f]{16}", m.header["optable"])
    names = [g.name for g in m.graphs]
    assert len(set(names)) == len(names), names
    for g in m.graphs:
        for key in ("group", "variant", "parent", "diverge", "support", "steps", "entry", "exit"):
            assert key in g.attrs, (g.header, key)
        assert g.int("support") >= 1
        lo, hi = map(int, g.attrs["steps"].split(".."))
        assert 0 <= lo <= hi
        # every referenced call site is declared
        refs = re.findall(r"@(\d+)", g.header + "\n" + "\n".join(g.lines))
        missing = {int(r) for r in refs} - set(m.sites)
        assert not missing, f"{g.name} names undeclared sites {missing}"
        # guards that come from the program name their source line
        for ln in g.guards:
            if ln.split()[1] in ("sym", "pytype", "trip"):
                assert re.search(r" @\d+", ln), f"{g.name}: guard without its source line: {ln}"
    for sid, (f, line, func) in m.sites.items():
        assert line > 0 and f and func, (sid, f, line, func)


@pytest.mark.parametrize("name", SCRIPTS)
def test_summary_explains_what_was_left_out(name):
    """The summary (stderr) counts the graphs printed and names, with a
    source line, the reason for every group left out."""
    m = module(name)
    err = _stderr[name]
    mm = re.search(r"(\d+) graphs? in (\d+) groups?", err)
    assert mm and int(mm.group(1)) == len(m.graphs), err
    for ln in err.splitlines():
        if "not captured" in ln:
            assert re.search(r"\.py:\d+", ln.split("not captured", 1)[1]), ln
    if not m.graphs:
        assert "not captured" in err, err


@pytest.mark.parametrize("name", ["last_batch_smaller", "python_state"])
def test_deterministic(name, tmp_path):
    """The same store gives the same text; a second recording of the same
    script gives the same text once normalized."""
    r = dr.janus("optimize", record(name), "--dump-ir")
    assert r.returncode == 0 and r.stdout == dump(name)
    db = str(tmp_path / "again.db")
    rr = dr.janus("record", "--db", db, "--", dr.sys.executable, dr.script_path(name), cwd=dr.ROOT)
    assert rr.returncode == 0, rr.stderr
    r2 = dr.janus("optimize", db, "--dump-ir")
    assert r2.returncode == 0, r2.stderr
    assert normalize(r2.stdout) == normalize(dump(name))


@pytest.mark.parametrize("name", SCRIPTS)
def test_binary_ir_out(name, tmp_path):
    if "--ir-out" not in dr.optimize_help():
        pytest.skip("janus optimize has no --ir-out option")
    out = tmp_path / (name + ".jnir")
    r = dr.janus("optimize", record(name), "--ir-out", str(out))
    assert r.returncode == 0, r.stderr
    data = out.read_bytes()
    assert data[:4] == b"JNIR" and len(data) > 16


# ------------------------------------------------------- semantic checks

def _site_is(m, sid, name, needle):
    return sid is not None and sid in m.sites and m.site_line(sid) == (name + ".py", script_line(name, needle))


def _word(sym, text):
    return re.search(rf"(?<![\w%]){re.escape(sym)}(?!\w)", text) is not None


def _types(ln):
    """The type part of an `in` or node line."""
    if ln.startswith("in "):
        return ln
    return ln.split(" : ", 1)[1] if " : " in ln else ""


def _loop_bodies(g):
    """[(header line, body lines)] of every loop of g (nested ones included)."""
    out = []
    for i, ln in enumerate(g.lines):
        if ln.startswith("loop "):
            depth, body = 1, []
            for b in g.lines[i + 1:]:
                if b == "}":
                    depth -= 1
                    if depth == 0:
                        break
                elif b.endswith("{"):
                    depth += 1
                body.append(b)
            out.append((ln, body))
    return out


def _scalar_guarded(g, v):
    return any(re.match(rf"guard scalar {re.escape(v)} ", ln) for ln in g.guards)


def test_last_batch_smaller():
    m = module("last_batch_smaller")
    found = []
    for g in m.graphs:
        for s, (kind, lo, hi) in g.syms.items():
            if kind == "dim" and (lo, hi) == (4, 16):
                typed = any(_word(s, _types(ln)) for ln in g.lines if ln.startswith(("in ", "%")))
                guarded = any(re.match(rf"guard sym {re.escape(s)} in 4\.\.16\b", ln) for ln in g.guards)
                found.append((g.name, s, typed, guarded))
    assert found, "no dim symbol with range 4..16 (the batch size)"
    assert any(t and gd for _, _, t, gd in found), found


def test_training_step_is_self_contained():
    """A whole training step is one graph (DESIGN): besides parameters,
    optimizer state and host batches, it reads only what Python kept from
    before the loop, i.e. the dataset tensors the DataLoader indexes."""
    m = module("last_batch_smaller")
    loader = script_line("last_batch_smaller", "for x, y in loader")
    g = max(m.graphs, key=lambda g: g.int("support"))
    bad = [ln for v, kind, _, site, ln in g.inputs
           if kind == "carry" and m.site_line(site) != ("last_batch_smaller.py", loader)]
    assert not bad, f"{g.name} reads {len(bad)} carry inputs from outside the step:\n" + "\n".join(bad[:8])


def test_seq_len_varies():
    m = module("seq_len_varies")
    ok = []
    for g in m.graphs:
        syms = g.syms
        for head, body in _loop_bodies(g):
            mm = re.match(r"loop (L\d+) trip=(\S+) ivar=(\S+) \{", head)
            assert mm, head
            loop, trip = mm.group(1), mm.group(2)
            if re.fullmatch(r"-?\d+", trip):
                continue
            # the trip count is an expression of a dim symbol (the sequence
            # length, or a slice of it) that varied over several values
            ranged = [s for s, (k, lo, hi) in syms.items() if _word(s, trip) and k == "dim" and hi - lo >= 2]
            carries = [b for b in body if b.startswith("carry ")]
            guarded = any(re.match(rf"guard trip {loop} in \d+\.\.\d+\b", ln) for ln in g.guards) or any(
                re.match(rf"guard sym {re.escape(s)} in \d+\.\.\d+\b", ln) for s in ranged for ln in g.guards)
            ok.append((g.name, loop, trip, bool(ranged), len(carries), guarded))
    assert ok, "no loop with a symbolic trip count"
    assert any(r and c and gd for _, _, _, r, c, gd in ok), ok


def test_attn_seq2seq():
    """The decoder's forward loop collects its carried state's param (the
    state each iteration starts from: the encoder's at iteration 0) and the
    backward loop selects from that collect with a reversed index; one
    graph covers every source length and the target lengths whose backward
    loop runs (4..6: at 3 it runs zero times, a variant of its own), its
    batch the constant 4."""
    m = module("attn_seq2seq")
    g = max(m.graphs, key=lambda g: g.int("support"))
    assert g.int("support") >= 18, [x.header for x in m.graphs]
    found = []
    for head, body in _loop_bodies(g):
        params = {b.split()[1] for b in body if b.startswith("carry ")}
        for b in body:
            mm = re.match(r"collect (%\d+) => (%\d+)", b)
            if mm and mm.group(1) in params:
                out = mm.group(2)
                found.append((head, [ln for ln in g.lines if re.search(rf"= select\({re.escape(out)}\)", ln)]))
    assert any(reads for _, reads in found), found
    cells = [ln for ln in g.lines if "gru_cell(" in ln]
    assert cells and all(": f32[4, 16]" in ln for ln in cells), cells[:3]


def test_rnn_loss_logged():
    """Across the item() sync, one graph per segment for every length: the
    forward graph's loop collects values it keeps (each step's saved
    states), and the backward graph's loop reads stacked inputs
    [trip, ...] with select(in, 0, i), one of them also carried (the head's
    backward reads the state the cell's backward read the iteration
    before)."""
    m = module("rnn_loss_logged")
    fwd = [g for g in m.graphs if "item()" in g.attrs["exit"] and g.int("support") >= 20]
    bwd = [g for g in m.graphs if "item()" in g.attrs["entry"] and g.int("support") >= 20]
    assert fwd and bwd, [g.header for g in m.graphs]
    kept = {ln.split()[1] for ln in fwd[0].kind("out") if ln.endswith("keep")}
    colls = [b.split()[3] for _, body in _loop_bodies(fwd[0]) for b in body if b.startswith("collect ")]
    assert kept & set(colls), (kept, colls)
    (head, body), = _loop_bodies(bwd[0])
    trip, ivar = re.search(r"trip=(\S+) ivar=(\S+)", head).groups()
    stacked = {v for v, kind, ty, _, _ in bwd[0].inputs if kind == "carry" and ty.split("[")[1].startswith(trip + ",")}
    sels = {}
    for b in body:
        mm = re.match(rf"(%\d+) = select\((%\d+)\) dim=0 index={re.escape(ivar)} ", b)
        if mm and mm.group(2) in stacked:
            sels[mm.group(1)] = mm.group(2)
    assert len(set(sels.values())) >= 4, (stacked, sels)
    nexts = {b.split()[5] for b in body if b.startswith("carry ")}
    assert nexts & set(sels), (nexts, sels)


def _variants_decided_at(m, name, needle):
    out = []
    for g in m.graphs:
        if g.int("variant") >= 1 and g.int("parent") >= 0 and _site_is(m, g.decided(), name, needle):
            out.append(g)
    return out


def test_branch_every_n():
    m = module("branch_every_n")
    vs = _variants_decided_at(m, "branch_every_n", "if step % 3 == 0")
    assert vs, [g.header for g in m.graphs]
    reg = script_line("branch_every_n", "1e-3 *")
    for v in vs:
        group = [g for g in m.graphs if g.int("group") == v.int("group")]
        with_reg = [g.name for g in group
                    if any(m.site_line(int(s)) == ("branch_every_n.py", reg)
                           for ln in g.nodes for s in re.findall(r" @(\d+)$", ln))]
        assert len(group) >= 2 and 0 < len(with_reg) < len(group), (with_reg, [g.name for g in group])


def test_lr_schedule():
    m = module("lr_schedule")
    found = []
    for g in m.graphs:
        for v, kind, _, site, ln in g.inputs:
            if kind == "scalar" and _site_is(m, site, "lr_schedule", "opt.step()"):
                found.append((g.name, v, _scalar_guarded(g, v)))
    assert found, "no scalar input at opt.step() (the learning rate)"
    assert not any(gd for _, _, gd in found), found
    assert not [g.name for g in m.graphs if g.int("variant") >= 1], "the schedule must not create variants"


def test_train_eval():
    m = module("train_eval")
    train = [g for g in m.graphs if "dropout_mask" in g.ops()]
    evals = [g for g in m.graphs if "argmax" in g.ops()]
    assert train and evals
    for g in train:
        assert "var" in g.ops() and g.kind("out") and any("state=" in o for o in g.kind("out")), g.name
    for g in evals:
        assert "dropout_mask" not in g.ops() and "var" not in g.ops(), g.name


def test_train_eval_rng_offset_is_an_input():
    """The Philox offset at graph entry only ever grows: it is fed to the
    graph (a `rng` symbol), never range-guarded, or every later step misses."""
    m = module("train_eval")
    for g in m.graphs:
        if g.steps_hi() > g.steps_lo():
            rng = [s for s, (kind, lo, hi) in g.syms.items() if kind == "rng"]
            for s in rng:
                assert not [ln for ln in g.guards if ln.startswith(f"guard sym {s} in ")], (g.name, s)


def test_loss_item_branch():
    m = module("loss_item_branch")
    ends = [g.name for g in m.graphs if "item" in g.attrs.get("exit", "")]
    after = [g for g in m.graphs if "item" in g.attrs.get("entry", "")]
    assert ends and after, [(g.name, g.attrs.get("entry"), g.attrs.get("exit")) for g in m.graphs]
    # both outcomes of the branch after the sync are captured: with and
    # without the `loss * 0.5` op, together covering every training step
    half = script_line("loss_item_branch", "loss = loss * 0.5")
    scaled = [g for g in after if any(m.site_line(int(s)) == ("loss_item_branch.py", half)
                                      for ln in g.nodes for s in re.findall(r" @(\d+)", ln))]
    assert scaled and len(scaled) < len(after), [g.name for g in after]
    assert sum(g.int("support") for g in after) == 24
    # where they are variants of one group, the `if` line decided
    for g in after:
        if g.int("variant") >= 1:
            assert _site_is(m, g.decided(), "loss_item_branch", "if loss.item() > THRESHOLD"), g.header


def _scale_variants(m):
    """{(group, variant): kind of the input that `scale(x, s)`'s mul reads as s}"""
    line = script_line("float_or_tensor", "return x * s")
    out = {}
    for g in m.graphs:
        kinds = {v: k for v, k, _, _, _ in g.inputs}
        for ln in g.nodes:
            mm = re.match(r"%\d+ = mul\((%\d+), (%\d+)\).* @(\d+)", ln)
            if mm and m.site_line(int(mm.group(3))) == ("float_or_tensor.py", line):
                out[(g.int("group"), g.int("variant"))] = (g, mm.group(2), kinds.get(mm.group(2), "node"))
    return out


def test_float_or_tensor():
    m = module("float_or_tensor")
    sv = _scale_variants(m)
    number = {k for k, (_, _, kind) in sv.items() if kind in ("scalar", "const")}
    tensor = {k for k, (_, _, kind) in sv.items() if kind in ("host", "carry", "state", "node")}
    assert any(a[0] == b[0] and a[1] != b[1] for a in number for b in tensor), sv


def test_float_or_tensor_pytype_guards():
    """The number variant of scale() guards the Python type of its argument
    (a float where the recording saw one); the tensor variant is told apart
    by its op structure (argument types are part of every op's token)."""
    m = module("float_or_tensor")
    sv = _scale_variants(m)
    seen = set()
    for (g, v, kind) in sv.values():
        for ln in g.guards:
            mm = re.match(rf"guard pytype {re.escape(v)} == (\w+)", ln)
            if mm:
                seen.add(mm.group(1))
    assert "float" in seen, seen
    kinds = {kind for (_, _, kind) in sv.values()}
    assert kinds & {"scalar", "const"} and kinds & {"host", "carry", "state", "node"}, sv


def test_python_state():
    m = module("python_state")
    ema = [(g.name, v, _scalar_guarded(g, v)) for g in m.graphs for v, kind, _, site, _ in g.inputs
           if kind == "scalar" and _site_is(m, site, "python_state", "/ ema")]
    assert ema and not any(gd for _, _, gd in ema), ema
    written = []
    for g in m.graphs:
        states = {v: site for v, kind, _, site, _ in g.inputs if kind == "state"}
        for o in g.kind("out"):
            mm = re.match(r"out %\d+ state=(%\d+)", o)
            if mm and _site_is(m, states.get(mm.group(1)), "python_state", "running.mul_("):
                written.append(g.name)
    assert written, "the in-place updated `running` tensor is not written back as state"
