#!/usr/bin/env bash
# fuzz.sh TARGET SECONDS [libFuzzer options...] -- coverage-guided fuzzing of
# one harness of tests/fuzz (trace, bundle, ir_text, ir_binary, match,
# store): builds it with clang, libFuzzer, ASan and UBSan in build-fuzz
# (its own build dir, all libraries instrumented) and runs it for SECONDS
# on a scratch corpus started from the committed seeds
# (tests/fuzz/TARGET/seeds; the corpus grows in build-fuzz/corpus/TARGET).
# A crash, leak, UB report or hang (-timeout) stops it with the reproducer
# written to build-fuzz/artifacts/TARGET/; fix the bug and commit the
# reproducer into the seeds, which the ctest fuzz_TARGET then replays.
# SECONDS 0 only builds; FUZZ_NO_BUILD=1 only runs (what scripts/test.sh
# does for harnesses it built first and fuzzes side by side, so that no two
# builds share build-fuzz).  Extra arguments go to libFuzzer (e.g. -jobs=2).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
  echo "usage: scripts/fuzz.sh TARGET SECONDS [libFuzzer options...]" >&2
  echo "targets: $(ls tests/fuzz | grep -v '\.c$' | tr '\n' ' ')" >&2
  exit 2
fi
T=$1
S=$2
shift 2
if [ ! -f "tests/fuzz/$T/fuzz_$T.c" ]; then
  echo "fuzz.sh: no harness tests/fuzz/$T/fuzz_$T.c (targets: $(ls tests/fuzz | grep -v '\.c$' | tr '\n' ' '))" >&2
  exit 2
fi
if ! command -v clang >/dev/null; then
  echo "fuzz.sh: clang is needed (apt-get install -y clang)" >&2
  exit 1
fi
B=build-fuzz
if [ ! -f $B/CMakeCache.txt ]; then
  # (JANUS_WERROR=OFF: the code is warning-checked with gcc; clang warns about other things)
  CC=clang cmake -S . -B $B -DCMAKE_BUILD_TYPE=RelWithDebInfo -DJANUS_FUZZ=ON -DJANUS_TESTS=OFF -DJANUS_CUDA=OFF \
    -DJANUS_WERROR=OFF \
    >/dev/null
fi
if [ -z "${FUZZ_NO_BUILD:-}" ]; then
  cmake --build $B --target "fuzz_$T" -j"$(nproc)" 2>&1 | grep -E 'error|Error' || true
fi
[ -x "$B/fuzz_$T" ] || { echo "fuzz.sh: building fuzz_$T failed" >&2; exit 1; }
[ "$S" = 0 ] && exit 0
mkdir -p "$B/corpus/$T" "$B/artifacts/$T"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
exec "$B/fuzz_$T" -max_total_time="$S" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$B/artifacts/$T/" "$@" "$B/corpus/$T" "tests/fuzz/$T/seeds"
