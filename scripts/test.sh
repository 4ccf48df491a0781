#!/usr/bin/env bash
# test.sh -- the whole test suite: set-up, C unit tests (ctest), Python tests
# (pytest), `pip install .` into a scratch prefix, the sanitizer build
# (ASan + UBSan) running every ctest and the Python tests but the end-to-end
# files of scripts/sanitize_quick_skip.txt (`sanitize.sh --quick`; without
# --quick it runs them all), and, where clang with libFuzzer
# is installed, each fuzzing harness of tests/fuzz for 20 s, nproc of them at
# once (scripts/fuzz.sh; the ctests fuzz_* already replay their seeds).
# This is what CI runs.
#
# The sanitizer pass runs in the background beside the plain passes (its own
# build dir, build-asan; log in build/sanitize.log, shown whole when it
# fails): half of the plain pytest's wall time is spent waiting on the
# processes its end-to-end tests start (record, `janus optimize` compiling
# kernels, mpirun), so on two cores the two passes take about the time of
# the longer one instead of their sum.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export JANUS_BUILD_DIR=$PWD/build
PY=${PYTHON:-python3}

SAN_LOG=build/sanitize.log
echo "== sanitizers (ASan + UBSan): started in the background (log: $SAN_LOG)"
# its own process group: the EXIT trap stops all of it (pytest included) when a
# plain pass fails first
setsid bash scripts/sanitize.sh --quick >"$SAN_LOG" 2>&1 &
SAN_PID=$!
trap 'kill -- -"$SAN_PID" 2>/dev/null || true' EXIT

echo "== C unit tests"
(cd build && ctest --output-on-failure -j"$(nproc)")
# tests/python/test_report.py looks at the report's page in headless Chromium
if ! command -v chromium >/dev/null; then
  echo "janus test: installing chromium (the report's page test)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq chromium >/dev/null
fi
echo "== Python tests"
"$PY" -m pytest -q tests/python
echo "== pip install . (import from another directory)"
bash scripts/check_pip_install.sh
echo "== sanitizers (ASan + UBSan): waiting for the background pass"
if wait "$SAN_PID"; then
  { grep -E "tests passed|passed|failed" "$SAN_LOG" || true; } | sed 's/^/  /'
else
  rc=$?
  tail -n 300 "$SAN_LOG"
  echo "janus test: the sanitizer pass failed (exit $rc; whole log: $SAN_LOG)" >&2
  exit 1
fi
trap - EXIT
echo "== fuzzing (libFuzzer, 20 s per harness, nproc at a time)"
if command -v clang >/dev/null &&
   echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' |
     clang -fsanitize=fuzzer -x c - -o /dev/null 2>/dev/null; then
  targets=$(cd tests/fuzz && ls -d */ | tr -d /)
  mkdir -p build-fuzz
  # built one after another (one build dir), then fuzzed side by side
  for t in $targets; do
    bash scripts/fuzz.sh "$t" 0 || { echo "fuzz $t: the build failed" >&2; exit 1; }
  done
  fuzz_one() {
    local log=build-fuzz/$1.log
    if ! FUZZ_NO_BUILD=1 bash scripts/fuzz.sh "$1" 20 >"$log" 2>&1; then
      tail -40 "$log"
      echo "fuzz $1: failed (reproducer in build-fuzz/artifacts/$1/)" >&2
      return 1
    fi
    grep -E "^#[0-9]+[[:space:]]+DONE" "$log" | sed "s/^/  $1: /"
  }
  export -f fuzz_one
  printf '%s\n' $targets | xargs -P "$(nproc)" -I{} bash -c 'fuzz_one {}'
else
  echo "  skipped: no clang with libFuzzer (apt-get install -y clang)"
fi
