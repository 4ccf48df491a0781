#!/usr/bin/env bash
# sanitize.sh -- build Janus with AddressSanitizer + UBSan into build-asan and
# run the C and Python suites under it (the Python interpreter itself is not
# instrumented, so the runtime is preloaded; leak checks are off because
# CPython keeps objects alive at exit by design).
#   sanitize.sh           every ctest and every Python test
#   sanitize.sh --quick   every ctest, the Python tests but the files listed in
#                         scripts/sanitize_quick_skip.txt (what CI runs, to stay
#                         within its time; run the whole pass before resolving
#                         an issue that touches C code)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
B=build-asan
if [ ! -f $B/CMakeCache.txt ]; then
  cmake -S . -B $B -DCMAKE_BUILD_TYPE=Debug -DJANUS_SANITIZE=ON -DPython3_EXECUTABLE="$(command -v "$PY")" >/dev/null
fi
cmake --build $B -j"$(nproc)" 2>&1 | grep -vE '^\[|^Consolidate|^-- ' || true
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS=detect_leaks=0
(cd $B && ctest --output-on-failure -j"$(nproc)")
ignore=()
if [ "${1:-}" = "--quick" ]; then
  while read -r f _; do
    case "$f" in ''|'#'*) continue ;; esac
    [ -f "$f" ] || { echo "sanitize.sh: $f (scripts/sanitize_quick_skip.txt) does not exist" >&2; exit 1; }
    ignore+=(--ignore "$f")
  done < scripts/sanitize_quick_skip.txt
  echo "sanitize.sh --quick: leaving out $((${#ignore[@]} / 2)) test files (scripts/sanitize_quick_skip.txt)" >&2
elif [ -n "${1:-}" ]; then
  echo "usage: scripts/sanitize.sh [--quick]" >&2
  exit 2
fi
LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)" \
  JANUS_BUILD_DIR=$PWD/$B JANUS_SANITIZED=1 "$PY" -m pytest -q -p no:cacheprovider "${ignore[@]}" tests/python
