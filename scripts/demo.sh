#!/usr/bin/env bash
# demo.sh -- the README's main job: set up, build, and train the
# Fashion-MNIST MLP eagerly (janus.nn + janus.optim).  Extra arguments go to
# the example (e.g. --epochs 1).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
JANUS_BUILD_DIR=$PWD/build exec "${PYTHON:-python3}" examples/fashion_mlp.py "$@"
