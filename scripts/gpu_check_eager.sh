#!/usr/bin/env bash
# gpu_check_eager.sh -- the CUDA eager backend's device checks, sized for a
# short GPU session (a few minutes on 16 cores): builds only janus._C with
# CUDA on, then runs tests/python/test_cuda.py, which compares every
# CUDA-implemented op (forward and backward) with the CPU, the transfers,
# the allocator counters and an MLP training step.  Extra arguments go to
# pytest (e.g. -k matmul).  Without a GPU the GPU checks skip and say so.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${JANUS_GPU_BUILD:-build-gpu}
case $B in /*) ;; *) B=$PWD/$B ;; esac
command -v nvidia-smi >/dev/null && nvidia-smi -L || echo "nvidia-smi not found"
cmake -S . -B "$B" -DJANUS_CUDA=ON -DJANUS_TESTS=OFF >/dev/null
if ! cmake --build "$B" -j"$(nproc)" --target janus_C > "$B/gpu_check_build.log" 2>&1; then
  tail -40 "$B/gpu_check_build.log"
  echo "gpu_check_eager.sh: the build failed (log: $B/gpu_check_build.log)" >&2
  exit 1
fi
JANUS_BUILD_DIR=$B python3 -m pytest -q -rs --maxfail=30 tests/python/test_cuda.py "$@"
