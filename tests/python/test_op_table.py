"""The op table itself: every op has a table-driven numpy check (the
test_ops_*.py files), metadata is consistent, the table hash is stable."""
import glob
import importlib
import os

from janus import _C


def _covered():
    here = os.path.dirname(os.path.abspath(__file__))
    ops = {}
    for path in sorted(glob.glob(os.path.join(here, "test_ops_*.py"))):
        mod = importlib.import_module(os.path.basename(path)[:-3])
        for name in getattr(mod, "CASES", {}):
            ops[name] = mod.__name__
    return ops


def test_every_op_has_a_numpy_check():
    covered = _covered()
    missing = [n for n in _C.op_names() if n not in covered]
    assert not missing, f"ops in the op table without a table-driven test: {missing}"


def test_no_case_for_unknown_op():
    unknown = [n for n in _covered() if n not in _C.op_names()]
    assert not unknown, f"test cases for ops that are not in the table: {unknown}"


def test_metadata_is_consistent():
    names = _C.op_names()
    assert len(names) == len(set(names))
    for n in names:
        info = _C.op_info(n)
        assert info["name"] == n
        assert info["nout"] >= 1
        kinds = [k for _, k in info["attrs"]]
        assert all(k in "ifbLd" for k in kinds), (n, kinds)
        if info["flags"] & _C.JN_F_RAND:
            assert [a for a, _ in info["attrs"]][-2:] == ["seed", "offset"], n


def test_table_hash_is_stable_and_hex():
    h = _C.optable_hash()
    assert len(h) == 16 and int(h, 16) and h == _C.optable_hash()
