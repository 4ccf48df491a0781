#!/usr/bin/env python3
"""check_layers.py -- the build's floors, checked: a library may include the
headers of its own folder and of the floors below it, never of one above or
of a peer on its own floor.  The table is the one docs/ARCHITECTURE.md
draws ("Layers"); CMakeLists.txt links the libraries the same way.  Exit 1
with every offending include named (file:line), 0 when the tree is clean.
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
    for b in bad:
        print(b)
    if bad:
        print(f"check_layers: {len(bad)} include(s) against the floors (scripts/check_layers.py FLOORS)")
        return 1
    print(f"check_layers: {sum(len(f) for _, f in FLOORS)} folders, every include points down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
