"""Recordings say where each tensor lived: the recorder writes every tensor
reference's real device (jn_storage.device), the analyzer turns it into
the IR values' device and a DEVICE guard per tensor input, the emitters
generate kernels for values on the GPU, and `janus optimize --target
cuda:sm_90` builds a CUDA bundle with fused kernels from such a recording.

This machine may have no GPU, so the recorder's test hook
JANUS_RECORD_AS_DEVICE=cuda writes every tensor (not Python numbers, which
stay host values) as if it had been on the GPU: what is checked is what the
trace, analyzer, codegen and matcher do with device "cuda" -- not that a
GPU run records it (that needs a GPU: tests/python/test_cuda.py's
recorder checks run there)."""
import re
import sys
import textwrap

import pytest

from test_optimize_cli import TRAIN, _have_analyzer, janus
from test_optimize_cuda import needs_nvrtc

pytestmark = pytest.mark.skipif(not _have_analyzer(), reason="janus not built with the analyzer")


def _record(d, as_device=None):
    s = d / "train.py"
    s.write_text(textwrap.dedent(TRAIN))
    db = d / "run.db"
    extra = {"JANUS_RECORD_AS_DEVICE": as_device} if as_device else {}
    r = janus("record", "--db", str(db), "--", sys.executable, str(s), cwd=str(d), extra_env=extra)
    assert r.returncode == 0, r.stderr
    return db, s


@pytest.fixture(scope="module")
def cuda_run(tmp_path_factory):
    return _record(tmp_path_factory.mktemp("dev_cuda"), "cuda")


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    return _record(tmp_path_factory.mktemp("dev_cpu"))


def _inputs_and_guards(db):
    r = janus("optimize", "--no-store", "--no-compile", "--dump-ir", str(db))
    assert r.returncode == 0, r.stderr
    ins = re.findall(r"^\s*in %(\d+) (\w+) (\w+)\[[^\]]*\]( cuda)?", r.stdout, re.M)
    guards = re.findall(r"^\s*guard device %(\d+) == (\w+)", r.stdout, re.M)
    return ins, guards


def test_values_and_guards_on_device(cuda_run, cpu_run):
    ins, guards = _inputs_and_guards(cuda_run[0])
    tensors = [i for i in ins if i[1] in ("state", "host", "carry")]
    numbers = [i for i in ins if i[1] in ("const", "scalar")]
    assert tensors and numbers
    assert all(i[3] == " cuda" for i in tensors), tensors      # parameters, batches: on the GPU
    assert all(i[3] == "" for i in numbers), numbers           # Python numbers stay host values
    assert guards and {g[1] for g in guards} == {"cuda"}
    assert {g[0] for g in guards} == {i[0] for i in tensors}   # one DEVICE guard per tensor input
    ins, guards = _inputs_and_guards(cpu_run[0])
    assert all(i[3] == "" for i in ins) and guards and {g[1] for g in guards} == {"cpu"}


def test_cpu_bundle_of_a_device_recording_runs_eagerly(cuda_run, tmp_path):
    """A CUDA recording with only its cpu bundle: replay loads the bundle of
    the recording's device (replay/replay.c), finds none, says so once
    with the fix, and the run's numbers are eager's.  (Before, the cpu bundle
    was loaded and every graph missed on its DEVICE guard; the matcher's
    DEVICE guard itself is no longer reached by this script: more in
    tests/python/test_replay_gpu.py.)"""
    import shutil
    db, script = cuda_run
    copy = tmp_path / "run.db"
    shutil.copy(db, copy)
    r = janus("optimize", str(copy))
    assert r.returncode == 0, r.stderr
    r = janus("replay", "--db", str(copy), "--", sys.executable, str(script), cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert re.search(r"running eagerly: the graphs in \S+ were recorded on cuda tensors, and \S+ has no CUDA "
                     r"bundle; run `janus optimize --target cuda:sm_\d+ ", r.stderr), r.stderr
    eager = janus("replay", "--db", str(copy), "--", sys.executable, str(script), cwd=str(tmp_path),
                  extra_env={"JANUS_REPLAY": "0"})
    assert r.stdout == eager.stdout


@needs_nvrtc
def test_cuda_bundle_from_a_device_recording(cuda_run, tmp_path):
    import shutil
    db = tmp_path / "run.db"
    shutil.copy(cuda_run[0], db)
    r = janus("optimize", "--target", "cuda:sm_90", str(db), timeout=600)
    assert r.returncode == 0, r.stderr
    m = re.search(r"(\d+) fused kernels.* (\d+) CUDA kernels? compiled for sm_90", r.stdout)
    assert m and int(m.group(2)) > 0, r.stdout   # fused kernels over GPU values are generated
    assert re.search(r"\d+ values are on a GPU: the graphs run there", r.stdout), r.stdout
    assert "compile check only" not in r.stdout
