"""The collectives of the op table (runtime/k_dist.c: all_reduce_,
broadcast_) against numpy: every case runs through the C dispatcher
(janus._C._op) on 2 ranks under `mpirun -n 2 --oversubscribe` (one launch,
with a timeout); each rank's input is rank-dependent and the reference is
numpy's reduction over both ranks' inputs.  Without a process group the ops
refuse with the call to make.  test_distributed.py covers them under
janus.distributed, DDP, record and replay.
"""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from janus import _C

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MPIRUN = shutil.which("mpirun")
RED = {"SUM": 0, "AVG": 1, "PRODUCT": 2, "MIN": 3, "MAX": 4, "BAND": 5, "BOR": 6, "BXOR": 7}


def _input(dtype, rank):
    """rank r's input of a case: a small array that differs per rank."""
    base = np.array([[1.5, -2.0, 3.25], [0.5, 4.0, -1.0]])
    if dtype.startswith("int"):
        return (np.array([[5, 12, 3], [7, 1, 0]]) + 3 * rank).astype(dtype)
    return (base * (rank + 1) + rank).astype(dtype)


def _reference(name, attrs, dtype):
    xs = [_input(dtype, r) for r in (0, 1)]
    if name == "broadcast_":
        return xs[attrs[0]]
    op = attrs[0]
    f = {0: np.add, 1: np.add, 2: np.multiply, 3: np.minimum, 4: np.maximum, 5: np.bitwise_and, 6: np.bitwise_or,
         7: np.bitwise_xor}[op]
    out = f(xs[0], xs[1])
    return out / 2 if op == 1 else out


CASES = {
    "all_reduce_": [(dt, (RED[op],)) for op in ("SUM", "AVG", "PRODUCT", "MIN", "MAX") for dt in ("float32", "float64")]
    + [(dt, (RED[op],)) for op in ("SUM", "BAND", "BOR", "BXOR") for dt in ("int64", "int32")],
    "broadcast_": [("float32", (0,)), ("float32", (1,)), ("int64", (1,))],
}


@pytest.mark.skipif(MPIRUN is None, reason="mpirun not found: apt-get install openmpi-bin libopenmpi-dev")
def test_collective_ops_match_numpy_on_two_ranks(tmp_path):
    script = textwrap.dedent("""
        import json, sys
        import numpy as np
        import janus, janus.distributed as dist
        from janus import _C
        sys.path.insert(0, HERE)
        import test_ops_dist as T
        dist.init_process_group("mpi")
        r = dist.get_rank()
        out = {}
        for name, cases in T.CASES.items():
            for k, (dtype, attrs) in enumerate(cases):
                t = _C._from_buffer(np.ascontiguousarray(T._input(dtype, r)))
                res = _C._op(name, [t], tuple(attrs))
                res = res[0] if isinstance(res, tuple) else res
                out[f"{name}/{k}"] = [np.array(memoryview(t)).tolist(), np.array(memoryview(res)).tolist()]
        with open(OUT + f".{r}", "w") as f:
            json.dump(out, f)
        dist.destroy_process_group()
    """).replace("HERE", repr(HERE)).replace("OUT", repr(str(tmp_path / "out")))
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    r = subprocess.run([MPIRUN, "-n", "2", "--oversubscribe", sys.executable, "-c", script], capture_output=True,
                       text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    for rank in (0, 1):
        got = json.loads((tmp_path / f"out.{rank}").read_text())
        for name, cases in CASES.items():
            for k, (dtype, attrs) in enumerate(cases):
                t, res = got[f"{name}/{k}"]
                want = _reference(name, attrs, dtype)
                np.testing.assert_array_equal(np.array(t, dtype=dtype), want.astype(dtype), err_msg=f"{name} {k}")
                assert res == t, (name, k)  # in place: the output is the input


def test_collective_ops_without_a_group_say_what_to_call():
    assert _C.op_info("all_reduce_")["flags"] & _C.JN_F_COLL
    assert _C.op_info("broadcast_")["flags"] & _C.JN_F_NOGRAD
    t = _C._from_buffer(np.ones(3, dtype=np.float32))
    for name in CASES:
        with pytest.raises(RuntimeError, match="init_process_group"):
            _C._op(name, [t], (0,))
