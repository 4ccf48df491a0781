"""`janus optimize` on writes through views, recorded by the real recorder:
a write into a view of a view is spliced up the chain with slice_scatter
(a strided slice) and select_scatter, and a view taken before its base was
written in place and read after it is taken again from the new value; every
graph passes the self-check (JANUS_AN_SELFCHECK=all).  Skips when the janus
command was built without the analyzer."""
import os
import re
import sys

import pytest

from dynamic_runs import JANUS  # noqa: E402
from dynamic_runs import janus as _janus  # noqa: E402


def janus(*args, timeout=300):
    return _janus(*args, timeout=timeout, extra_env={"JANUS_AN_SELFCHECK": "all"})


def _have_analyzer():
    if not os.path.exists(JANUS):
        return False
    r = janus("optimize", "/nonexistent/janus-probe.db")
    return "built without the analyzer" not in r.stderr


pytestmark = pytest.mark.skipif(not _have_analyzer(), reason=f"{JANUS} not built with the analyzer")

SCRIPT = """
import janus
h = janus.randn(3, 4, 6)
for step in range(3):
    x = h.clone()
    v = x[1][:, ::2]
    v.fill_(0.5)
    w = x[2]
    x.mul_(2.0)
    print(round(w.sum().item(), 3), round(x.sum().item(), 3))
"""


def test_view_chain_and_stale_view(tmp_path):
    s = tmp_path / "views.py"
    s.write_text(SCRIPT)
    db = tmp_path / "run.db"
    r = janus("record", "--db", str(db), "--", sys.executable, str(s))
    assert r.returncode == 0, r.stderr
    r = janus("optimize", str(db), "--dump-ir")
    assert r.returncode == 0, r.stderr
    assert "not captured" not in r.stderr, r.stderr
    lines = [x.strip() for x in r.stdout.splitlines()]
    sl = [x for x in lines if "= slice_scatter(" in x]
    assert sl and all("step=2" in x and "dim=1" in x for x in sl), lines
    ss = [x for x in lines if "= select_scatter(" in x]
    # positions are symbols (ops_pos.def), recorded at one value: each
    # node line with its graph's symbol ranges
    syms, of = {}, {}
    for x in lines:
        if x.startswith("graph "):
            syms = {}
        m = re.match(r"sym (s\d+) int (\d+)\.\.(\d+)", x)
        if m:
            syms[m.group(1)] = m.group(2) if m.group(2) == m.group(3) else None
        of[x] = syms
    index = lambda x: of[x].get(re.search(r"index=(\w+)", x).group(1))  # noqa: E731
    assert ss and all("dim=0 index=" in x and index(x) == "1" for x in ss), lines
    # the slice_scatter's result goes into the row's select_scatter
    a = re.match(r"(%\d+) = slice_scatter", sl[0]).group(1)
    assert any(re.search(r"= select_scatter\(%\d+, " + a + r"\)", x) for x in ss), lines
    # w = x[2] is read after x.mul_(2.0): taken again from the mul's result
    m = [re.match(r"(%\d+) = mul\(", x) for x in lines]
    muls = [x.group(1) for x in m if x]
    assert any(re.search(r"= select\(" + re.escape(v) + r"\) dim=0 index=(\w+)", x) and index(x) == "2"
               for v in muls for x in lines), lines
