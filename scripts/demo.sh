#!/usr/bin/env bash
# demo.sh -- the README's main job: set up, build, and train the eager
# Fashion-MNIST demo.  Extra arguments go to the demo (e.g. --steps 200).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
JANUS_BUILD_DIR=$PWD/build exec "${PYTHON:-python3}" examples/fashion_demo.py "$@"
