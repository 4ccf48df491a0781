"""`janus optimize` on damaged trace stores: a recorded store is copied and
damaged with Python's sqlite3 (garbage, truncated or foreign event chunks,
an unknown codec, a lying size, a missing chunk, an op-table naming an op
this build lacks, a run whose op table is missing) or replaced by a file
that is no store at all.  A damaged chunk costs only its step: the command
warns naming run, step and the damage, optimizes the other steps and
stores their bundle (exit 0); with every chunk damaged, or an empty store,
there is nothing to optimize (exit 1, nothing stored).  Other damage exits
1 with a message naming the run or the file.  Never a crash (a negative
return code is a signal) nor a traceback of its own.

The chunk damage is also checked against what exists before the analyzer
(the event decoder behind _C._rec_read_step and `janus inspect`), so the
damage itself is known to be real damage."""
import os
import re
import shutil
import sqlite3
import struct
import subprocess
import sys

import pytest

import dynamic_runs as dr

pytestmark = pytest.mark.skipif(not os.path.exists(dr.JANUS),
                                reason=f"{dr.JANUS} not built (it needs db/ and cli/ in the build)")
needs_optimize = pytest.mark.skipif(os.path.exists(dr.JANUS) and not dr.have_optimize(),
                                    reason="`janus optimize` is not a command of this build yet (issue 5)")

TRAIN = """\
import janus, janus.nn as nn
janus.manual_seed(0)
m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
opt = janus.optim.SGD(m.parameters(), lr=0.1)
x, y = janus.randn(6, 4), janus.randn(6, 2)
for i in range(5):
    loss = ((m(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("done")
"""
BAD_STEP = 2   # the step whose chunk is damaged (one in the middle of the run)


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    d = tmp_path_factory.mktemp("faults")
    s = d / "train.py"
    s.write_text(TRAIN)
    db = str(d / "template.db")
    r = dr.janus("record", "--db", db, "--", sys.executable, str(s))
    assert r.returncode == 0 and "done" in r.stdout, r.stderr
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return db


def copy(template, tmp_path, name="run.db"):
    dst = str(tmp_path / name)
    src = sqlite3.connect(template)
    out = sqlite3.connect(dst)
    src.backup(out)
    src.close()
    out.close()
    return dst


def sql(db, *stmts):
    con = sqlite3.connect(db)
    try:
        rows = None
        for s in stmts:
            if isinstance(s, tuple):
                rows = con.execute(*s).fetchall()
            else:
                rows = con.execute(s).fetchall()
        con.commit()
        return rows
    finally:
        con.close()


def chunk(db, step=BAD_STEP):
    return sql(db, ("SELECT codec, raw_bytes, data FROM chunks WHERE run_id = 1 AND step = ?", (step,)))[0]


def set_chunk(db, data=None, raw=None, codec=None, step=BAD_STEP):
    c, r, d = chunk(db, step)
    sql(db, ("UPDATE chunks SET codec = ?, raw_bytes = ?, data = ? WHERE run_id = 1 AND step = ?",
             (codec if codec is not None else c, raw if raw is not None else r,
              data if data is not None else d, step)))


def zstd_raw_frame(content):
    """A valid zstd frame (RFC 8878) holding `content` as raw blocks, with
    the content size in the header (the store's reader requires it)."""
    n = len(content)
    if n < 256:
        fhd, fcs = 0x20, struct.pack("<B", n)            # single segment, 1-byte size
    elif n < 65536 + 256:
        fhd, fcs = 0x60, struct.pack("<H", n - 256)      # single segment, 2-byte size
    else:
        fhd, fcs = 0xA0, struct.pack("<I", n)            # single segment, 4-byte size
    out = bytearray(b"\x28\xb5\x2f\xfd") + bytes([fhd]) + fcs
    blocks = [content[i:i + 65536] for i in range(0, n, 65536)] or [b""]
    for k, b in enumerate(blocks):
        last = 1 if k == len(blocks) - 1 else 0
        out += struct.pack("<I", last | (0 << 1) | (len(b) << 3))[:3] + b   # type 0: raw block
    return bytes(out)


def garbage(n, seed=7):
    """Deterministic bytes that are no zstd frame and no event stream."""
    out, x = bytearray(), seed
    while len(out) < n:
        x = (x * 6364136223846793005 + 1442695040888963407) & (2 ** 64 - 1)
        out += struct.pack("<Q", x)
    out[:4] = b"JUNK"
    return bytes(out[:n])


def decompressed(db, step=BAD_STEP):
    """The real event bytes of a step, through the zstd command (None if absent)."""
    zstd = shutil.which("zstd")
    if not zstd:
        return None
    _, raw, data = chunk(db, step)
    r = subprocess.run([zstd, "-d", "-c"], input=data, capture_output=True)
    assert r.returncode == 0 and len(r.stdout) == raw
    return r.stdout


# each: (name, damage(db), the step named in the message or None)
def _garbage(db):
    set_chunk(db, data=garbage(300))


def _truncated(db):
    _, _, d = chunk(db)
    set_chunk(db, data=d[:len(d) // 2])


def _frame_of_garbage(db):
    g = garbage(400, seed=11)
    set_chunk(db, data=zstd_raw_frame(g), raw=len(g))


def _frame_of_cut_events(db):
    ev = decompressed(db)
    if ev is None:
        pytest.skip("no zstd command to decompress a chunk with")
    cut = ev[:len(ev) * 2 // 3 + 1]
    set_chunk(db, data=zstd_raw_frame(cut), raw=len(cut))


def _uv(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _first_op(ev):
    """Where the first op event starts: past the region markers (schema v9, db/trace.c:
    kind 5, enter u8, region sv, n uv, n ids sv, call site sv, stack sv) before it."""
    at = 0

    def skip_varint(k):
        while ev[k] & 0x80:
            k += 1
        return k + 1

    while ev[at] == 5:
        k = skip_varint(at + 2)          # kind, enter, region
        n, shift, j = 0, 0, k             # the id count
        while True:
            n |= (ev[j] & 0x7F) << shift
            shift += 7
            j += 1
            if not ev[j - 1] & 0x80:
                break
        for _ in range(n + 2):            # the ids, call site, stack
            j = skip_varint(j)
        at = j
    return at


def _foreign_op_index(db):
    """A chunk from some other op table: its first op event names op #5000,
    past the end of the run's table (a well-formed event otherwise)."""
    ev = decompressed(db)
    if ev is None:
        pytest.skip("no zstd command to decompress a chunk with")
    at = _first_op(ev)
    assert ev[at] == 1, "step 2 has no op event"
    j = at + 1
    while ev[j] & 0x80:
        j += 1
    new = ev[:at + 1] + _uv(5000) + ev[j + 1:]
    set_chunk(db, data=zstd_raw_frame(new), raw=len(new))


def _empty_frame(db):
    set_chunk(db, data=b"", raw=0)


def _codec(db):
    set_chunk(db, codec="lz4")


def _raw_size(db):
    _, r, _ = chunk(db)
    set_chunk(db, raw=r + 7)


def _missing(db):
    sql(db, ("DELETE FROM chunks WHERE run_id = 1 AND step = ?", (BAD_STEP,)))


CHUNK_FAULTS = [("garbage", _garbage), ("truncated", _truncated), ("frame_of_garbage", _frame_of_garbage),
                ("frame_of_cut_events", _frame_of_cut_events), ("foreign_op_index", _foreign_op_index),
                ("empty_blob", _empty_frame),
                ("unknown_codec", _codec), ("raw_size_lies", _raw_size), ("missing_chunk", _missing)]


def check_clean_failure(r, *needles):
    assert r.returncode >= 0, f"killed by signal {-r.returncode}:\n{r.stderr[-3000:]}"
    assert r.returncode == 1, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    err = r.stderr
    assert err.strip(), "no message"
    for bad in ("Traceback", "Assertion", "AddressSanitizer", "runtime error:", "Segmentation"):
        assert bad not in err, err
    for n in needles:
        assert re.search(n, err), f"message does not match {n!r}:\n{err}"


def optimize(db, *extra):
    return dr.janus("optimize", str(db), *extra, timeout=60)


# --------------------------------------------- the damage is real damage

# an op index past the run's table is well-formed for the event decoder; only
# a reader that maps indices to the run's op names can refuse it
DECODER_FAULTS = [(n, d) for n, d in CHUNK_FAULTS if n != "foreign_op_index"]


@pytest.mark.parametrize("name,damage", DECODER_FAULTS, ids=[n for n, _ in DECODER_FAULTS])
def test_damage_is_refused_by_the_decoder(template, tmp_path, name, damage):
    db = copy(template, tmp_path)
    damage(db)
    code = ("import sys\nfrom janus import _C\n"
            f"_C._rec_read_step({db!r}, 1, {BAD_STEP - 1})\n"
            "try:\n"
            f"    _C._rec_read_step({db!r}, 1, {BAD_STEP})\n"
            "except Exception as e:\n"
            "    print(type(e).__name__, e); sys.exit(3)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dr.env(), timeout=60)
    assert r.returncode == 3, (r.returncode, r.stdout, r.stderr[-2000:])
    # inspect decodes steps too: it may report the damage, but never crashes
    r = dr.janus("inspect", db)
    assert r.returncode in (0, 1), (r.returncode, r.stderr[-2000:])


# ------------------------------------------------------- janus optimize

@needs_optimize
def test_undamaged_copy_analyzes(template, tmp_path):
    db = copy(template, tmp_path)
    r = optimize(db, "--dump-ir")
    assert r.returncode == 0, r.stderr
    assert re.search(r"^module optable=[0-9a-f]{16} graphs=[1-9]", r.stdout, re.M), r.stdout[:2000]


def bundles(db):
    return sql(db, "SELECT count(*) FROM bundles")[0][0]


def steps_in_summary(out):
    m = re.search(r"from 1 run, (\d+) steps", out)
    assert m, out
    return int(m.group(1))


@needs_optimize
@pytest.mark.parametrize("name,damage", CHUNK_FAULTS, ids=[n for n, _ in CHUNK_FAULTS])
def test_chunk_fault_skips_the_step(template, tmp_path, name, damage):
    whole = steps_in_summary(optimize(copy(template, tmp_path, "whole.db"), "--no-store").stdout)
    db = copy(template, tmp_path)
    damage(db)
    r = optimize(db, "--no-compile")
    assert r.returncode == 0, r.stderr[-3000:]
    warn = [ln for ln in r.stderr.splitlines() if "warning" in ln]
    assert len(warn) == 1, r.stderr
    assert re.search(rf"\brun 1, step {BAD_STEP}: trace chunk is corrupt \(.+\).*skipped", warn[0]), warn[0]
    for bad in ("Traceback", "AddressSanitizer", "runtime error:"):
        assert bad not in r.stderr
    assert steps_in_summary(r.stdout) == whole - 1
    assert bundles(db) == 1


@needs_optimize
def test_every_chunk_damaged_is_nothing_to_optimize(template, tmp_path):
    db = copy(template, tmp_path)
    sql(db, "UPDATE chunks SET data = x'4a554e4b'")
    r = optimize(db)
    check_clean_failure(r, r"nothing to optimize", r"warnings above")
    assert r.stderr.count("warning: ") == len(sql(db, "SELECT step FROM steps")) > 1
    assert bundles(db) == 0


@needs_optimize
def test_foreign_op_in_optable(template, tmp_path):
    db = copy(template, tmp_path)
    (h, ops), = sql(db, "SELECT hash, ops FROM optables")
    lines = ops.split("\n")
    k = [i for i, ln in enumerate(lines) if ln.split(" ", 1)[0] == "linear"]
    assert k, "linear not in the recorded op table"
    lines[k[0]] = "frobnicate_op" + lines[k[0]][len("linear"):]
    sql(db, ("UPDATE optables SET ops = ? WHERE hash = ?", ("\n".join(lines), h)))
    r = optimize(db, "--dump-ir")
    check_clean_failure(r, r"frobnicate_op", r"\brun 1\b")


@needs_optimize
def test_run_without_its_optable(template, tmp_path):
    db = copy(template, tmp_path)
    sql(db, "UPDATE runs SET optable_hash = '00000000deadbeef' WHERE id = 1")
    r = optimize(db, "--dump-ir")
    check_clean_failure(r, r"\brun 1\b", r"00000000deadbeef|op.?table")


@needs_optimize
@pytest.mark.parametrize("extra", [(), ("--dump-ir",), ("--run", "1")])
def test_empty_store_is_nothing_to_optimize(tmp_path, extra):
    db = str(tmp_path / "empty.db")
    r = dr.janus("record", "--db", db, "--", sys.executable, "-c", "pass")
    assert r.returncode == 0, r.stderr
    r = optimize(db, *extra)
    check_clean_failure(r, r"nothing to optimize", re.escape(db), r"janus record")
    assert "module optable" not in r.stdout
    assert bundles(db) == 0


@needs_optimize
def test_not_sqlite(tmp_path):
    p = tmp_path / "notes.db"
    p.write_text("these are my notes, not a trace store\n" * 20)
    before = p.read_bytes()
    check_clean_failure(optimize(p), re.escape(str(p)))
    assert p.read_bytes() == before


@needs_optimize
def test_sqlite_but_not_a_trace_store(tmp_path):
    p = tmp_path / "other.db"
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE recipes(name TEXT, minutes INTEGER)")
    con.execute("INSERT INTO recipes VALUES('soup', 30)")
    con.commit()
    con.close()
    before = p.read_bytes()
    check_clean_failure(optimize(p), re.escape(str(p)))
    assert p.read_bytes() == before


@needs_optimize
def test_missing_file(tmp_path):
    p = tmp_path / "nope.db"
    check_clean_failure(optimize(p), re.escape(str(p)))
    assert not p.exists()


@needs_optimize
def test_newer_schema(template, tmp_path):
    db = copy(template, tmp_path)
    sql(db, "UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    check_clean_failure(optimize(db), re.escape(db))
