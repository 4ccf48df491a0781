#!/usr/bin/env bash
# test.sh -- the whole test suite: set-up, C unit tests (ctest), Python tests
# (pytest), `pip install .` into a scratch prefix, and the sanitizer build
# (ASan + UBSan) running both suites again.  This is what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export JANUS_BUILD_DIR=$PWD/build
PY=${PYTHON:-python3}

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
echo "== sanitizers (ASan + UBSan)"
bash scripts/sanitize.sh
