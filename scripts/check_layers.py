#!/usr/bin/env python3
"""check_layers.py -- the build's floors, checked: a library may include the
headers of its own folder and of the floors below it, never of one above or
of a peer on its own floor.  The table is the one docs/ARCHITECTURE.md
draws ("Floors"); CMakeLists.txt links the libraries the same way.

The trace store's SQL stays in db/: outside db/ (and the C tests, which
build damaged stores on purpose) no C file names `sqlite3_` or includes
<sqlite3.h>, db/'s private headers are included by db/ alone
(db_internal.h) or by the tests alone (jn_db_testing.h), and the janus
Python package never imports sqlite3 (it reads the store through janus._C,
so Python and the janus command open the same file for the same path).

Exit 1 with every offence named (file:line), 0 when the tree is clean.
Run by ctest (test `layers`)."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (floor, folders) from the bottom up; folders on one floor are peers.
FLOORS = [
    (0, ["runtime", "runtime/cuda"]),   # eager core: op table, tensors, kernels, autograd, dispatcher
    (1, ["ir"]),                        # graph IR over the op table
    (1, ["db"]),                        # the trace store
    (2, ["analyzer"]),                  # traces -> guarded graphs
    (2, ["codegen"]),                   # graphs -> kernels, plans, bundles
    (2, ["recorder"]),                  # dispatcher hook -> trace store
    (3, ["exec"]),                      # runs a bundle's graphs (CPU, CUDA)
    (4, ["replay"]),                    # capture, matcher, graph runs, fallback
    (5, ["python/janus/csrc"]),         # the janus._C extension
    (5, ["cli"]),                       # the janus command
]
# Peers that may use each other: none today.  What a peer would need from
# another goes one floor down instead.
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SQLITE_C = re.compile(r'\bsqlite3_|#\s*include\s*<sqlite3\.h>')
SQLITE_PY = re.compile(r'^\s*(import\s+sqlite3|from\s+sqlite3\s+import)\b')
# db/'s private headers: who may include each
PRIVATE = {"db_internal.h": ("db",), "jn_db_testing.h": ("db", "tests")}


def sources(roots, exts):
    """Every file under the folders roots ending in exts (relative paths),
    build folders (they hold a CMakeCache.txt) and hidden ones left out."""
    for root in roots:
        for d, dirs, files in os.walk(os.path.join(ROOT, root)):
            dirs[:] = sorted(x for x in dirs if not x.startswith(".")
                             and not os.path.exists(os.path.join(d, x, "CMakeCache.txt")))
            for f in sorted(files):
                if f.endswith(exts):
                    yield os.path.relpath(os.path.join(d, f), ROOT)


def store_offences():
    """sqlite3 outside db/, db/'s private headers outside their folders."""
    bad = []
    code = sorted({d.split("/")[0] for _, folders in FLOORS for d in folders} | {"benchmarks", "examples", "tests"})
    for path in sources([d for d in code if os.path.isdir(os.path.join(ROOT, d))], (".c", ".h", ".cu")):
        top = path.split(os.sep)[0]
        with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as fh:
            for n, line in enumerate(fh, 1):
                if top not in ("db", "tests") and SQLITE_C.search(line):
                    bad.append(f"{path}:{n}: SQLite outside db/ (add a jn_db_ function to db/jn_db.h instead)")
                m = INCLUDE.match(line)
                hdr = m and os.path.basename(m.group(1))
                if hdr in PRIVATE and top not in PRIVATE[hdr]:
                    bad.append(f"{path}:{n}: includes db/{hdr}, private to {' and '.join(PRIVATE[hdr])}/")
    for path in sources([os.path.join("python", "janus")], (".py",)):
        with open(os.path.join(ROOT, path), encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if SQLITE_PY.match(line):
                    bad.append(f"{path}:{n}: the janus package imports sqlite3 (read the store through janus._C)")
    return bad


def main():
    owner = {}  # header basename -> (floor index in FLOORS, folder)
    for i, (_, folders) in enumerate(FLOORS):
        for d in folders:
            for f in os.listdir(os.path.join(ROOT, d)):
                if f.endswith((".h", ".def")):
                    owner[f] = (i, d)
    bad = []
    for i, (floor, folders) in enumerate(FLOORS):
        for d in folders:
            for f in sorted(os.listdir(os.path.join(ROOT, d))):
                if not f.endswith((".c", ".h", ".cu")):
                    continue
                path = os.path.join(d, f)
                with open(os.path.join(ROOT, path), encoding="utf-8") as fh:
                    for n, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        hdr = os.path.basename(m.group(1))
                        if hdr not in owner:
                            continue  # generated or system-like (jn_fastmath_text.h)
                        j, hd = owner[hdr]
                        hfloor = FLOORS[j][0]
                        if hd in folders or (hd.startswith(d + "/") or d.startswith(hd + "/")) and hfloor == floor:
                            continue
                        if hfloor > floor:
                            bad.append(f"{path}:{n}: includes {hd}/{hdr}, a floor above ({hd} {hfloor} > {d} {floor})")
                        elif hfloor == floor:
                            bad.append(f"{path}:{n}: includes {hd}/{hdr}, a peer on its own floor {floor}")
    nfloors = len(bad)
    bad += store_offences()
    for b in bad:
        print(b)
    if nfloors:
        print(f"check_layers: {nfloors} include(s) against the floors (scripts/check_layers.py FLOORS)")
    if len(bad) > nfloors:
        print(f"check_layers: {len(bad) - nfloors} use(s) of SQLite or db/'s private headers outside db/")
    if bad:
        return 1
    print(f"check_layers: {sum(len(f) for _, f in FLOORS)} folders, every include points down; SQLite only in db/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
