"""Runs a training script unchanged (runpy, as `python SCRIPT ARGS...`) and
at the end writes the parameters of the last optimizer that stepped, as
float lists, to the JSON file named by JANUS_PROBE_OUT: what
test_replay.py compares between an eager run and a replayed one (any wrong
number in any step would show in the final weights).  The optimizer is
found through a global post-step hook, which reads no data (no sync points
of its own), and replay, when on, is stopped before the weights are read."""
import json
import os
import runpy
import sys

here = os.path.dirname(os.path.abspath(__file__))
# this tree's package, unless PYTHONPATH names a folder holding one (another
# tree's, measured against this one by benchmarks/hit_rates.py --python)
if not any(os.path.isdir(os.path.join(p, "janus")) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p):
    sys.path.insert(0, os.path.join(here, "..", "..", "python"))
import janus  # noqa: E402
from janus.optim import optimizer as _opt  # noqa: E402

_last = []


def _hook(opt, args, kwargs):
    if not _last or _last[0] is not opt:
        _last[:] = [opt]


_opt.register_optimizer_step_post_hook(_hook)
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
runpy.run_path(script, run_name="__main__")
out = janus._C._setting_value("JANUS_PROBE_OUT")
if out and _last:
    # the script is done: replay ends here (its summary line as at exit), so
    # the probe's own reads are no segments of the replay (strict mode)
    from janus import _replay
    _replay.stop()
    params = [p.detach().reshape(-1).tolist() for g in _last[0].param_groups for p in g["params"]]
    with open(out, "w") as f:
        json.dump(params, f)
