#!/usr/bin/env bash
# setup.sh -- install what Janus needs on a fresh Debian machine (as root) and
# build it into ./build.  Idempotent: quick when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

need_pkgs=()
# openmpi-bin, libopenmpi-dev: the mpi backend of janus.distributed (loaded at run time; its tests launch mpirun)
for p in build-essential cmake libopenblas-dev libzstd-dev libsqlite3-dev dataset-fashion-mnist openmpi-bin libopenmpi-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need_pkgs+=("$p")
done
if [ ${#need_pkgs[@]} -gt 0 ]; then
  echo "janus setup: installing ${need_pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
# matplotlib draws the plots of `janus report` (without it the page has tables only)
if ! "$PY" -c "import numpy, pytest, wheel, matplotlib" 2>/dev/null; then
  echo "janus setup: pip installing numpy pytest wheel matplotlib"
  "$PY" -m pip install -q --root-user-action=ignore numpy pytest wheel matplotlib
fi

BUILD=${JANUS_BUILD_DIR:-build}
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$(command -v "$PY")" >/dev/null
fi
cmake --build "$BUILD" -j"$(nproc)" 2>&1 | grep -vE '^\[|^Consolidate|^-- ' || true
test -f "$BUILD/python/janus/_C.so" || { echo "janus setup: build failed" >&2; exit 1; }
