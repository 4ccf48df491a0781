#!/usr/bin/env bash
# check_pip_install.sh -- `pip install .` into a scratch prefix and import
# janus from an unrelated directory, so packaging can't silently break.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$PY" -m pip install -q --root-user-action=ignore --no-build-isolation --target "$T/site" . >"$T/log" 2>&1 || { cat "$T/log"; exit 1; }
(cd "$T" && env -u JANUS_BUILD_DIR PYTHONPATH="$T/site" "$PY" -c \
  "import janus; from janus import _C; assert janus.__file__.startswith('$T'); print('pip install ok: janus', janus.__version__, 'ops:', len(_C.op_names()))")
