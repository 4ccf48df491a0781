#!/usr/bin/env python3
"""check_settings.py -- every JANUS_* environment variable is a row of
runtime/settings.def and is read only through it.  Run by ctest (test
`settings`); exit 1 with every problem named (file:line), 0 when clean.

Checked, over every file git knows here (tracked or not ignored):
  1. every JANUS_* name in code, scripts, README and docs is a row, or one
     of NOT_ENV below (CMake options and compile-time macros, not
     environment variables); a name ending in '_' is a prefix, not a name;
  2. C reads no JANUS_* variable with getenv outside runtime/settings.c
     (jn_settings.h: jn_setting_bool/int/float/str/raw), and calls getenv
     only with a literal name (a computed one could be a JANUS_ one);
  3. Python reads a JANUS_* variable only through janus._C._setting_value,
     except rows of kind BUILD or BENCH (read before janus can be imported:
     they say where janus is) -- and, in tests/, rows of kind CHILD (the
     tests check what janus passes to the process it starts); outside
     tests/, os.environ / os.getenv are read with literal names only;
  4. each row's readers exist and name the setting (JANUS_<id> or JN_S_<id>),
     and every file outside tests/ that reads a setting is among its readers;
  5. README.md's "Settings" section lists exactly the USER rows;
  6. a setting read where no error can go back (jn_setting_int_lazy) is
     named in python/janus/__init__.py, which refuses it at import.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # --root DIR: another tree (the tests')
DEF = "runtime/settings.def"

# JANUS_* names that are not environment variables.
NOT_ENV = {
    # CMake options and cache variables (cmake -D...; CMakeLists.txt)
    "JANUS_CUDA": "CMake option: the CUDA backend (AUTO, ON, OFF)",
    "JANUS_WERROR": "CMake option: warnings are errors",
    "JANUS_SANITIZE": "CMake option: ASan + UBSan",
    "JANUS_FUZZ": "CMake option: the tests/fuzz harnesses with libFuzzer (scripts/fuzz.sh)",
    "JANUS_TESTS": "CMake option: the C unit tests",
    "JANUS_WARN": "CMake variable: the warning flags",
    "JANUS_NVCC": "CMake variable: the nvcc found",
    "JANUS_CUBLAS_LIB": "CMake variable: the cuBLAS found",
    "JANUS_NVRTC_LIB": "CMake variable: the NVRTC found",
    "JANUS_PY_OUT": "CMake variable: where janus._C is written",
    # compile-time macros (-D from CMakeLists.txt)
    "JANUS_VERSION": "macro: the project version",
    "JANUS_HAVE_CUDA": "macro: built with the CUDA backend",
    "JANUS_CUBLAS_PATH": "macro: the cuBLAS CMake found",
    "JANUS_NVRTC_PATH": "macro: the NVRTC CMake found",
    # a name that is no setting, on purpose
    "JANUS_NO_SUCH": "tests/c/test_settings.c: an unknown name is refused",
}

ROW = re.compile(r'^X\(\s*(\w+),\s*(\w+),\s*"([^"]*)",\s*"([^"]*)",\s*(\w+),\s*"([^"]*)",\s*"((?:[^"\\]|\\.)*)"\s*\)',
                 re.M)
NAME = re.compile(r"\bJANUS_[A-Z0-9_]+")
C_GETENV = re.compile(r"\b(?:secure_)?getenv\s*\(\s*(\"?)(JANUS_\w*)?")
PY_LITERAL_READS = [
    re.compile(r"""(?:\benviron\.get|\bgetenv)\(\s*(['"])(JANUS_\w+)\1"""),
    re.compile(r"""\benviron\[\s*(['"])(JANUS_\w+)\1\s*\](?!\s*=(?!=))"""),
    re.compile(r"""(['"])(JANUS_\w+)\1\s+(?:not\s+)?in\s+[\w.]*\benviron\b"""),
]
PY_COMPUTED_READ = re.compile(r"""(?:\benviron\.get\(|\bgetenv\(|\benviron\[)\s*(?!['"])""")
PY_TABLE_READ = re.compile(r"""_setting_value\(\s*['"](JANUS_\w+)['"]""")
C_TABLE_READ = re.compile(r"\bJN_S_([A-Z0-9][A-Z0-9_]*)\b")
C_LAZY_READ = re.compile(r"\bjn_setting_int_lazy\(\s*JN_S_([A-Z0-9][A-Z0-9_]*)")
INIT = "python/janus/__init__.py"


def files():
    try:
        out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split("\n")
        paths = sorted({p for p in out if p and os.path.isfile(os.path.join(ROOT, p))})
    except (OSError, subprocess.CalledProcessError):  # not a git checkout (an unpacked sdist)
        paths = []
        for d, subdirs, names in os.walk(ROOT):
            subdirs[:] = [s for s in subdirs if not s.startswith((".", "build"))]
            paths += [os.path.relpath(os.path.join(d, n), ROOT) for n in names]
    return paths  # read() leaves out what is not UTF-8 text


def read(path):
    try:
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            return f.read(4 << 20)
    except (OSError, UnicodeDecodeError):
        return ""


def rows():
    text = re.sub(r"/\*.*?\*/", "", read(DEF), flags=re.S)
    return {"JANUS_" + m.group(1): {"type": m.group(2), "kind": m.group(5),
                                    "readers": [r.strip() for r in m.group(6).split(",") if r.strip()]}
            for m in ROW.finditer(text)}


def resolve(reader):
    """A reader's path (a file or a folder) as it is in the tree, or None
    ("janus/..." is short for "python/janus/...")."""
    for p in (reader, os.path.join("python", reader)):
        if os.path.exists(os.path.join(ROOT, p)):
            return p.rstrip("/")
    return None


def covered(path, readers):
    for r in readers:
        p = resolve(r)
        if p and (path == p or path.startswith(p + "/")):
            return True
    return False


def main():
    table = rows()
    bad = []
    if not table:
        print(f"check_settings: no rows found in {DEF}")
        return 1
    paths = files()
    texts = {p: read(p) for p in paths}
    reads = {}  # setting -> files outside tests/ that read it
    lazy = {}  # setting -> where it is read with jn_setting_int_lazy

    for path, text in texts.items():
        in_tests = path.startswith("tests/")
        is_c = path.endswith((".c", ".h", ".cu"))
        is_py = path.endswith(".py")
        for n, line in enumerate(text.split("\n"), 1):
            where = f"{path}:{n}"
            # 1. names
            for name in NAME.findall(line):
                if not name.endswith("_") and name not in table and name not in NOT_ENV:
                    bad.append(f"{where}: {name} is not a row of {DEF} (add it, or to NOT_ENV if it is no "
                               "environment variable)")
            # 2. C reads
            if is_c and path != "runtime/settings.c":
                for m in C_GETENV.finditer(line):
                    if m.group(2):
                        bad.append(f"{where}: getenv of {m.group(2)}: read it through jn_settings.h "
                                   "(jn_setting_bool/int/float/str)")
                    elif not m.group(1):
                        bad.append(f"{where}: getenv of a computed name: a JANUS_* one must be read through "
                                   "jn_settings.h, and this check cannot see which it is")
                for m in C_LAZY_READ.finditer(line):
                    lazy.setdefault("JANUS_" + m.group(1), where)
                for m in C_TABLE_READ.finditer(line):
                    if not in_tests and "JANUS_" + m.group(1) in table:
                        reads.setdefault("JANUS_" + m.group(1), set()).add(path)
            # 3. Python reads
            if is_py:
                for rx in PY_LITERAL_READS:
                    for m in rx.finditer(line):
                        name = m.group(2)
                        kind = table.get(name, {}).get("kind")
                        if not in_tests and kind:
                            reads.setdefault(name, set()).add(path)
                        if kind in ("BUILD", "BENCH") or (in_tests and kind == "CHILD"):
                            continue
                        bad.append(f"{where}: {name} read from the environment: use "
                                   f"janus._C._setting_value(\"{name}\") (the table's parser)")
                if not in_tests and PY_COMPUTED_READ.search(line):
                    bad.append(f"{where}: the environment read with a computed name: a JANUS_* one must go "
                               "through janus._C._setting_value, and this check cannot see which it is")
                for m in PY_TABLE_READ.finditer(line):
                    if not in_tests and m.group(1) in table:
                        reads.setdefault(m.group(1), set()).add(path)

    # 4. readers, both ways
    for name, r in table.items():
        ident = name[len("JANUS_"):]
        for reader in r["readers"]:
            p = resolve(reader)
            if p is None:
                bad.append(f"{DEF}: {name}: reader {reader} does not exist")
                continue
            names_it = [q for q in paths if (q == p or q.startswith(p + "/")) and
                        re.search(rf"\b(?:JANUS|JN_S)_{ident}\b", texts[q])]
            if not names_it:
                bad.append(f"{DEF}: {name}: reader {reader} does not mention {name} (or JN_S_{ident})")
        for path in sorted(reads.get(name, ())):
            if not covered(path, r["readers"]) and path not in ("runtime/settings.c", "runtime/jn_settings.h"):
                bad.append(f"{path}: reads {name}, but {DEF} does not list it among the row's readers")

    # 5. the README's Settings section: exactly the USER rows
    readme = texts.get("README.md", "")
    m = re.search(r"^## Settings\n(.*?)(?=^## |\Z)", readme, re.M | re.S)
    if not m:
        bad.append("README.md: no '## Settings' section (it lists the USER rows of the settings table)")
    else:
        listed = {x for x in NAME.findall(m.group(1)) if not x.endswith("_")}
        user = {k for k, r in table.items() if r["kind"] == "USER"}
        for x in sorted(user - listed):
            bad.append(f"README.md: Settings: {x} (a USER row) is not listed")
        for x in sorted(listed - user):
            bad.append(f"README.md: Settings: {x} is listed but is not a USER row"
                       + (f" (kind {table[x]['kind']})" if x in table else ""))

    # 6. lazily read settings are refused at import
    for name, where in sorted(lazy.items()):
        if not re.search(rf"['\"]{name}['\"]", texts.get(INIT, "")):
            bad.append(f"{where}: {name} is read where no error can go back (jn_setting_int_lazy), but {INIT} "
                       "does not refuse a bad value at import")

    for b in bad:
        print(b)
    if bad:
        print(f"check_settings: {len(bad)} problem(s) with JANUS_* settings (runtime/settings.def, "
              "scripts/check_settings.py)")
        return 1
    print(f"check_settings: {len(table)} settings, {len(paths)} files: every JANUS_* variable is a row, "
          "read through the table")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--root"] and len(sys.argv) == 3:
        ROOT = os.path.abspath(sys.argv[2])
    elif sys.argv[1:]:
        sys.exit("usage: check_settings.py [--root DIR]")
    sys.exit(main())
