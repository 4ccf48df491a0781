"""Writes the seed corpora of the fuzzing harnesses (tests/fuzz/<target>/
seeds/) from a real recording: a small training script with a data-
dependent branch and an item() sync is recorded with `janus record`, then
`janus optimize --no-compile --ir-out` mines it (the bundle without an
object: kernels are opaque bytes to these readers), and

  trace      three decompressed event chunks (steps 0, 1 and the last)
  bundle     the stored cpu bundle's payload
  ir_binary  the --ir-out graphs and the bundle's IR section
  ir_text    the same graphs as text (--dump-ir) and two golden modules
  match      the bundle's IR section and matcher section (fuzz_match.c's
             input layout)
  store      the store itself, with 512-byte pages, vacuumed

are written as seed-<name> files (files named regress-* -- fuzzer
findings -- are left alone).  Run after a format change:
    python3 tests/fuzz/make_seeds.py [BUILD_DIR]
It needs the build's `janus` and the zstd command."""
import os
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"))
JANUS = os.path.join(BUILD, "janus")

SCRIPT = """
import janus, janus.nn as nn
janus.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2))
opt = janus.optim.SGD(model.parameters(), lr=0.1)
x, y = janus.randn(5, 4), janus.randn(5, 2)
for i in range(6):
    loss = ((model(x[: 5 - i % 2]) - y[: 5 - i % 2]) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if loss.item() > 0.5:
        x = x * 0.9
"""


def run(*cmd, **kw):
    env = dict(os.environ, JANUS_BUILD_DIR=BUILD, PYTHONPATH=os.path.join(ROOT, "python"))
    r = subprocess.run(list(cmd), capture_output=True, env=env, **kw)
    if r.returncode != 0:
        sys.exit(f"{cmd[:3]} failed:\n{r.stderr.decode()[-3000:]}")
    return r.stdout


def unzstd(data):
    return run("zstd", "-d", "-c", input=data)


def put(target, name, data):
    d = os.path.join(HERE, target, "seeds")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


def bundle_sections(p):
    """{kind: bytes} of a bundle payload (codegen/jn_bundle.h's layout)."""
    at = 24

    def u32():
        nonlocal at
        v = struct.unpack_from("<I", p, at)[0]
        at += 4
        return v

    def u64():
        nonlocal at
        v = struct.unpack_from("<Q", p, at)[0]
        at += 8
        return v

    def string():
        nonlocal at
        n = u32()
        at += n

    string(), u64(), string(), string(), string(), u64(), u32()
    out = {}
    for _ in range(u32()):
        kind, _flags = u32(), u32()
        string()
        off, n = u64(), u64()
        out.setdefault(kind, p[off:off + n])
    return out


def main():
    for tool in (JANUS,):
        if not os.path.exists(tool):
            sys.exit(f"{tool} not built")
    if not shutil.which("zstd"):
        sys.exit("the zstd command is needed (apt-get install zstd)")
    tmp = tempfile.mkdtemp()
    try:
        script = os.path.join(tmp, "train.py")
        with open(script, "w") as f:
            f.write(SCRIPT)
        db = os.path.join(tmp, "run.db")
        irb = os.path.join(tmp, "graphs.jnir")
        run(JANUS, "record", "--db", db, "--", sys.executable, script)
        text = run(JANUS, "optimize", "--no-compile", "--dump-ir", "--ir-out", irb, db)
        put("ir_text", "recorded.ir", text)
        with open(irb, "rb") as f:
            put("ir_binary", "recorded.jnir", f.read())
        for name in ("lr_schedule.ir", "branch_every_n.ir"):
            with open(os.path.join(ROOT, "tests", "golden", name), "rb") as f:
                put("ir_text", name, f.read())
        con = sqlite3.connect(db)
        steps = [r[0] for r in con.execute("SELECT step FROM chunks WHERE run_id = 1 ORDER BY step")]
        for s in sorted({steps[0], steps[1], steps[-1]}):
            (blob,) = con.execute("SELECT data FROM chunks WHERE run_id = 1 AND step = ?", (s,)).fetchone()
            put("trace", f"step{s}", unzstd(blob))
        (blob,) = con.execute("SELECT data FROM bundles WHERE target = 'cpu' ORDER BY id DESC").fetchone()
        payload = unzstd(blob)
        put("bundle", "cpu", payload)
        sec = bundle_sections(payload)
        ir, matcher = sec[1], sec[4]
        put("ir_binary", "bundle.jnir", ir)
        put("match", "bundle", struct.pack("<I", len(ir)) + ir + matcher)
        con.close()
        small = os.path.join(tmp, "small.db")
        shutil.copy(db, small)
        con = sqlite3.connect(small)
        con.execute("PRAGMA journal_mode=DELETE")
        con.execute("PRAGMA page_size=512")
        con.execute("VACUUM")
        con.close()
        with open(small, "rb") as f:
            put("store", "recorded.store", f.read())  # (not .db: ignored by git)
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
