#!/usr/bin/env python3
"""long_functions.py -- the C functions longer than a limit, longest first.

A figure the floors issue asks for ("no function over ~150 lines in the hot
paths"), measured the same way each time: a function is a definition that
starts at column 0 (`static jn_status foo(...)` possibly over several
lines, no `=` before its parenthesis, ending in `{`) and ends at the next
`}` at column 0, the project's layout; its length counts both lines.
Scans the code folders of scripts/check_layers.py's floors (tests/ too
with --tests).

    python3 scripts/long_functions.py [--min 150] [--top 10] [--tests]

Prints "lines  file:line  name" per function over --min (all of them, or
the --top longest), then the count.  Informational: exit status 0."""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from check_layers import FLOORS, sources  # noqa: E402

START = re.compile(r"^[A-Za-z_][^=;#]*?\b([A-Za-z_]\w*)\s*\(")


def functions(path):
    """(name, first line, length) of every function defined in path."""
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as fh:
        lines = fh.read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = START.match(lines[i])
        if not m or lines[i].rstrip().endswith(";") or lines[i].startswith(("typedef", "struct ", "enum ")):
            i += 1
            continue
        j = i  # the signature may go on for a few lines
        while j < len(lines) and j < i + 8 and not lines[j].rstrip().endswith(("{", ";", "}")):
            j += 1
        if j >= len(lines) or not lines[j].rstrip().endswith("{") or "=" in lines[j].split("(")[0]:
            i += 1
            continue
        k = j + 1
        while k < len(lines) and lines[k].rstrip() != "}":
            k += 1
        out.append((m.group(1), i + 1, k - i + 1))
        i = k + 1
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--min", type=int, default=150, help="report functions longer than this (lines)")
    ap.add_argument("--top", type=int, default=0, help="print only the N longest (0: all)")
    ap.add_argument("--tests", action="store_true", help="scan tests/ as well")
    a = ap.parse_args()
    roots = sorted({d.split("/")[0] if not d.startswith("python") else d for _, fs in FLOORS for d in fs})
    if a.tests:
        roots.append("tests")
    found = []
    for path in sources([r for r in roots if os.path.isdir(os.path.join(ROOT, r))], (".c", ".cu")):
        for name, line, n in functions(path):
            if n > a.min:
                found.append((n, f"{path}:{line}", name))
    found.sort(key=lambda f: (-f[0], f[1]))
    for n, where, name in found[: a.top or None]:
        print(f"{n:5d}  {where}  {name}")
    print(f"long_functions: {len(found)} function(s) over {a.min} lines in {', '.join(roots)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
