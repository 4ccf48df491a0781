#!/usr/bin/env bash
# test.sh -- the whole test suite: set-up, C unit tests (ctest), Python tests
# (pytest), `pip install .` into a scratch prefix, the sanitizer build
# (ASan + UBSan) running both suites again, and, where clang with libFuzzer
# is installed, each fuzzing harness of tests/fuzz for 20 s (scripts/fuzz.sh;
# the ctests fuzz_* already replay their seeds).  This is what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export JANUS_BUILD_DIR=$PWD/build
PY=${PYTHON:-python3}

echo "== C unit tests"
(cd build && ctest --output-on-failure -j"$(nproc)")
echo "== Python tests"
"$PY" -m pytest -q tests/python
echo "== pip install . (import from another directory)"
bash scripts/check_pip_install.sh
echo "== sanitizers (ASan + UBSan)"
bash scripts/sanitize.sh
echo "== fuzzing (libFuzzer, 20 s per harness)"
if command -v clang >/dev/null &&
   echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' |
     clang -fsanitize=fuzzer -x c - -o /dev/null 2>/dev/null; then
  for t in $(cd tests/fuzz && ls -d */ | tr -d /); do
    log=build-fuzz/$t.log
    mkdir -p build-fuzz
    if ! bash scripts/fuzz.sh "$t" 20 >"$log" 2>&1; then
      tail -40 "$log"
      echo "fuzz $t: failed (reproducer in build-fuzz/artifacts/$t/)" >&2
      exit 1
    fi
    grep -E "^#[0-9]+ +DONE" "$log" | sed "s/^/  $t: /"
  done
else
  echo "  skipped: no clang with libFuzzer (apt-get install -y clang)"
fi
