"""Table-driven checks of the sort op (runtime/k_sort.c) against numpy:
values and indices along every dim, both directions, every dtype, all the
layouts opcheck gives (contiguous, strided, transposed), NaN placement and
stability (equal values keep their input order, also when descending)."""
import numpy as np
import pytest

import opcheck as oc
from janus import _C


def ref_sort(x, dim, descending):
    """Stable sort with NaN above every number (numpy puts NaN last ascending
    already; descending reverses the key, keeping ties in input order)."""
    x = np.asarray(x)
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    xs = np.moveaxis(x, dim, -1)
    if descending:
        if x.dtype.kind == "f":
            key = np.where(np.isnan(xs), -np.inf, -xs.astype(np.float64))
            nan_first = np.isnan(xs)
            # NaN first, then descending, ties by index: sort by (not nan, -x) stably
            order = np.lexsort((key, ~nan_first), axis=-1)
        elif x.dtype == np.bool_:
            order = np.argsort(~xs, axis=-1, kind="stable")
        else:
            order = np.argsort(-xs.astype(np.float64) if x.dtype == np.uint8 else -xs, axis=-1, kind="stable")
    else:
        order = np.argsort(xs, axis=-1, kind="stable")
    vals = np.take_along_axis(xs, order, -1)
    return np.moveaxis(vals, -1, dim), np.moveaxis(order.astype(np.int64), -1, dim)


R = np.random.default_rng(5)
TIES = R.integers(0, 4, size=(4, 7)).astype(np.float32)  # many equal values: stability shows
WITH_NAN = np.array([[3.0, np.nan, -1.0, np.nan, 2.0, -np.inf, np.inf]], np.float32)


def _cases():
    out = []
    for dt in ("float32", "float64", "int64", "int32", "uint8", "bool", "float16"):
        x = oc.rand((3, 5, 4), dt, seed=len(out))
        for dim in (0, 1, 2, -1):
            for desc in (False, True):
                out.append((x, (dim, desc)))
    for x in (TIES, WITH_NAN, np.float32(2.5), np.zeros((0, 3), np.float32), np.arange(70000, dtype=np.float32)[::-1]):
        for desc in (False, True):
            out.append((x, (-1, desc)))
    return out


CASES = {"sort": _cases()}


@pytest.mark.parametrize("idx", range(len(CASES["sort"])))
def test_sort_matches_numpy(idx):
    x, (dim, desc) = CASES["sort"][idx]
    want_v, want_i = ref_sort(x, dim, desc)
    for name, arr in oc.layouts(x) if np.ndim(x) else [("0-d", x)]:
        v, i = oc.op("sort", [oc.jn(arr)], (dim, desc))
        assert oc.npy(i).dtype == np.int64, name
        np.testing.assert_array_equal(oc.npy(i), want_i, err_msg=f"{name} indices")
        np.testing.assert_array_equal(oc.npy(v), want_v, err_msg=f"{name} values")


def test_sort_defaults_to_the_last_dim_and_ascending():
    x = oc.rand((3, 4), "float32")
    v, i = _C._op("sort", [oc.jn(x)], ())
    np.testing.assert_array_equal(oc.npy(i), ref_sort(x, -1, False)[1])


def test_sort_refuses_a_bad_dim():
    with pytest.raises(IndexError, match="out of range"):
        oc.op("sort", [oc.jn(np.zeros((2, 3), np.float32))], (2, False))
