"""The collectives of the op table (runtime/k_dist.c: all_reduce_,
broadcast_, all_gather, reduce_scatter, barrier) against numpy: every case
runs through the C dispatcher (janus._C._op) on 2 ranks under `mpirun -n 2
--oversubscribe` (one launch, with a timeout), for every dtype Open MPI
takes and every ReduceOp valid for it; each rank's input is rank-dependent
and the reference is numpy's over both ranks' inputs.  The infer functions'
refusals (a share that does not split, AVG of integers) are checked there
too.  Without a process group the ops refuse with the call to make.
test_distributed.py covers them under janus.distributed, DDP, record and
replay.
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
FLOATS, INTS = ("float32", "float64"), ("int64", "int32", "uint8", "bool")
DTYPES = FLOATS + INTS
IN_PLACE = ("all_reduce_", "broadcast_")


def _input(dtype, rank):
    """rank r's input of a case: a small array that differs per rank."""
    base = np.array([[1.5, -2.0, 3.25], [0.5, 4.0, -1.0]])
    ints = np.array([[5, 12, 3], [7, 1, 0]]) + 3 * rank
    if dtype == "bool":
        return (ints % 2).astype(bool)
    if dtype in INTS:
        return ints.astype(dtype)
    return (base * (rank + 1) + rank).astype(dtype)


def _reduce(op, dtype, xs):
    if dtype == "bool" and op in (0, 2):  # SUM is any, PRODUCT all (as PyTorch's NCCL backend)
        op = {0: 6, 2: 5}[op]
    f = {0: np.add, 1: np.add, 2: np.multiply, 3: np.minimum, 4: np.maximum, 5: np.bitwise_and, 6: np.bitwise_or,
         7: np.bitwise_xor}[op]
    out = f(xs[0], xs[1])
    return out / 2 if op == 1 else out


def _reference(name, attrs, dtype, rank):
    xs = [_input(dtype, r) for r in (0, 1)]
    if name == "broadcast_":
        return xs[attrs[0]]
    if name == "all_gather":
        return np.concatenate(xs, axis=0)
    if name == "barrier":
        return np.array(0, dtype=np.int32)
    out = _reduce(attrs[0], dtype, xs)
    if name == "reduce_scatter":  # this rank's share of dim 0
        n = out.shape[0] // 2
        return out[rank * n:(rank + 1) * n]
    return out


def _ops_for(dtype):
    if dtype in FLOATS:
        return ("SUM", "AVG", "PRODUCT", "MIN", "MAX")
    return ("SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR")


CASES = {
    "all_reduce_": [(dt, (RED[op],)) for dt in DTYPES for op in _ops_for(dt)],
    "broadcast_": [("float32", (0,)), ("float32", (1,)), ("int64", (1,)), ("bool", (1,))],
    "all_gather": [(dt, ()) for dt in DTYPES],
    "reduce_scatter": [(dt, (RED[op],)) for dt in DTYPES for op in _ops_for(dt)],
    "barrier": [("int32", ()), ("float64", ())],  # the input only places the op
}
# what the infer functions refuse, on every rank alike: (name, dtype, shape, attrs, message)
REFUSED = [
    ("reduce_scatter", "float32", (3, 2), (0,), "must split into 2 equal shares"),
    ("reduce_scatter", "float32", (), (0,), "a 0-d tensor has none"),
    ("reduce_scatter", "int64", (2,), (1,), "ReduceOp.AVG needs a floating tensor"),
    ("reduce_scatter", "float32", (2,), (5,), "ReduceOp.BAND needs an integer tensor"),
    ("all_reduce_", "float64", (2,), (9,), "unknown ReduceOp 9"),
]


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
                ins = [_C._from_buffer(np.ascontiguousarray(T._input(dtype, r)))]
                res = _C._op(name, ins, tuple(attrs))
                res = res[0] if isinstance(res, tuple) else res
                out[f"{name}/{k}"] = [np.array(memoryview(t)).tolist() for t in ins + [res]]
        for k, (name, dtype, shape, attrs, _) in enumerate(T.REFUSED):
            try:
                _C._op(name, [_C._from_buffer(np.zeros(shape, dtype=dtype))], tuple(attrs))
                out[f"refused/{k}"] = "ran"
            except Exception as e:
                out[f"refused/{k}"] = f"{type(e).__name__}: {e}"
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
                vals = got[f"{name}/{k}"]
                want = _reference(name, attrs, dtype, rank)
                res = np.array(vals[-1], dtype=dtype)
                assert res.shape == want.shape, (name, k, res.shape, want.shape)
                np.testing.assert_array_equal(res, want.astype(dtype), err_msg=f"{name} {dtype} {attrs} rank {rank}")
                if name in IN_PLACE:
                    assert vals[0] == vals[1], (name, k)  # in place: the output is the input
                else:  # out of place: the input is untouched
                    np.testing.assert_array_equal(np.array(vals[0], dtype=dtype), _input(dtype, rank))
        for k, (name, dtype, shape, attrs, msg) in enumerate(REFUSED):
            assert msg in got[f"refused/{k}"], (name, got[f"refused/{k}"])


def test_collective_ops_without_a_group_say_what_to_call():
    for name in CASES:
        assert _C.op_info(name)["flags"] & _C.JN_F_COLL, name
    assert _C.op_info("broadcast_")["flags"] & _C.JN_F_NOGRAD
    assert _C.op_info("barrier")["flags"] & _C.JN_F_NOGRAD
    for name in ("all_reduce_", "all_gather", "reduce_scatter"):
        assert _C._has_derivative(name), name
    t = _C._from_buffer(np.ones(4, dtype=np.float32))
    for name, cases in CASES.items():
        with pytest.raises(RuntimeError, match="init_process_group"):
            _C._op(name, [t], cases[0][1])
