#!/usr/bin/env bash
# check_pip_install.sh -- `pip install .` into a scratch prefix, import janus
# from an unrelated directory and run the installed `janus` command (record a
# PyTorch-style script through the torch alias, check it), so packaging can't
# silently break.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$PY" -m pip install -q --root-user-action=ignore --no-build-isolation --target "$T/site" . >"$T/log" 2>&1 || { cat "$T/log"; exit 1; }
(cd "$T" && env -u JANUS_BUILD_DIR PYTHONPATH="$T/site" "$PY" -c \
  "import janus; from janus import _C; assert janus.__file__.startswith('$T'); print('pip install ok: janus', janus.__version__, 'ops:', len(_C.op_names()))")
J="$T/site/bin/janus"
[ -x "$J" ] || { echo "pip install did not install the janus command ($J)"; ls "$T/site/bin" 2>&1; exit 1; }
cat >"$T/train.py" <<'PY'
import torch
import torch.nn as nn
m = nn.Linear(3, 2)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for _ in range(2):
    opt.zero_grad()
    m(torch.ones(4, 3)).sum().backward()
    opt.step()
assert torch.__name__ == "janus", torch.__name__
print("trained on", torch.__name__)
PY
(cd "$T" && env -u JANUS_BUILD_DIR -u JANUS_PYTHON PYTHONPATH="$T/site" "$J" --version >/dev/null &&
  env -u JANUS_BUILD_DIR -u JANUS_PYTHON PYTHONPATH="$T/site" "$J" record --db "$T/run.db" "$PY" train.py >"$T/rec.log" 2>&1 &&
  env -u JANUS_BUILD_DIR -u JANUS_PYTHON PYTHONPATH="$T/site" "$J" check train.py >>"$T/rec.log" 2>&1) ||
  { cat "$T/rec.log"; echo "the installed janus command failed"; exit 1; }
grep -q "trained on janus" "$T/rec.log" && grep -Eq "run 1: [1-9][0-9]* steps" "$T/rec.log" ||
  { cat "$T/rec.log"; echo "janus record did not run the script on janus"; exit 1; }
echo "pip install ok: the janus command records and checks ($J)"

