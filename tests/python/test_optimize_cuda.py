"""`janus optimize --target cuda:sm_90`: the fused kernels of a recorded run
generated as CUDA and compiled by NVRTC (no GPU needed) into PTX and an
sm_90 cubin, stored as the store's "cuda:sm_90" bundle beside (not
replacing) its "cpu" bundle; the summary says it is a compile check (the
recorded graphs are CPU graphs).  A missing NVRTC is a clear error that
stores nothing; bad targets are usage errors.  The NVRTC tests skip, saying
so, where NVRTC is missing; running the kernels needs a GPU and is not
done here."""
import ctypes
import json
import os
import re
import shutil
import subprocess

import pytest

from test_optimize_cli import JANUS, _bundle_ids, _have_analyzer, janus, recorded  # noqa: F401
from dynamic_runs import env as _env  # noqa: E402

pytestmark = pytest.mark.skipif(not _have_analyzer(), reason=f"{JANUS} not built with the analyzer")


def _have_nvrtc():
    dirs = [os.path.join(os.environ["CUDA_HOME"], "lib64")] if os.environ.get("CUDA_HOME") else []
    for d in dirs + ["/usr/local/cuda/lib64", ""]:
        for n in ("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"):
            try:
                ctypes.CDLL(os.path.join(d, n) if d else n)
                return True
            except OSError:
                pass
    return False


needs_nvrtc = pytest.mark.skipif(not _have_nvrtc(), reason="NVRTC not found (CUDA toolkit): not run: "
                                 "janus optimize --target cuda:sm_90 compiling PTX and cubin")


def _bundles(db):
    r = janus("inspect", "--json", str(db))
    assert r.returncode == 0, r.stderr
    return {b["target"]: b for b in json.loads(r.stdout)["bundles"]}


@needs_nvrtc
def test_cuda_bundle_beside_cpu(recorded, tmp_path):
    db = tmp_path / "copy.db"
    shutil.copy(recorded[0], db)
    r = janus("optimize", str(db))
    assert r.returncode == 0, r.stderr
    r = janus("optimize", "--target", "cuda:sm_90", str(db), timeout=600)
    assert r.returncode == 0, r.stderr
    m = re.search(r"(\d+) CUDA kernels? compiled for sm_90 by NVRTC in ([\d.]+) s \(PTX \+ cubin\)", r.stdout)
    assert m and int(m.group(1)) > 0, r.stdout
    assert "compile check only" in r.stdout and "CPU graphs" in r.stdout, r.stdout
    assert re.search(r"stored as bundle \d+ \([\d,]+ bytes\) in .* for target cuda:sm_90", r.stdout), r.stdout
    b = _bundles(db)
    assert set(b) == {"cpu", "cuda:sm_90"}
    cuda, cpu = b["cuda:sm_90"], b["cpu"]
    assert cuda["usable"] == "yes" and cuda["cpu_features"] == "" and cuda["graphs"] == cpu["graphs"]
    kinds = {s["kind"]: s for s in cuda["sections"]}
    assert kinds["ptx"]["name"] == "compute_90" and kinds["ptx"]["bytes"] > 1000
    assert kinds["cubin"]["name"] == "sm_90" and kinds["cubin"]["bytes"] > 1000
    assert "so" not in kinds and "ir" in kinds
    assert "so" in {s["kind"] for s in cpu["sections"]}
    # again: the cuda bundle is replaced, the cpu one kept
    r = janus("optimize", "--target=cuda:sm_90", "--no-compile", str(db))
    assert r.returncode == 0, r.stderr
    b2 = _bundles(db)
    assert b2["cpu"]["id"] == cpu["id"] and b2["cuda:sm_90"]["id"] > cuda["id"]
    assert {s["kind"] for s in b2["cuda:sm_90"]["sections"]} == {"ir", "matcher"}


def test_missing_nvrtc(recorded, tmp_path):
    db = tmp_path / "copy.db"
    shutil.copy(recorded[0], db)
    before = _bundle_ids(db)
    env = dict(_env(), JANUS_NVRTC="/nonexistent/libnvrtc.so")
    p = subprocess.run([JANUS, "optimize", "--target", "cuda:sm_90", str(db)], capture_output=True, text=True,
                       env=env, timeout=300)
    assert p.returncode == 1, p.stderr
    for needle in ("NVRTC not found", "/nonexistent/libnvrtc.so", "CUDA_HOME", "nothing was stored", "--no-compile"):
        assert needle in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and _bundle_ids(db) == before


@pytest.mark.parametrize("bad", ["cuda", "cuda:90", "gpu", "cuda:sm_90x", "cuda:compute_90"])
def test_bad_target(recorded, bad):
    r = janus("optimize", "--target", bad, str(recorded[0]))
    assert r.returncode == 2 and "--target must be cpu or cuda:sm_XX" in r.stderr and bad in r.stderr, r.stderr
    assert "--target" in janus("optimize", "--help").stdout
