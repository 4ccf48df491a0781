"""`janus replay` of a recording made on CUDA tensors: which bundle it loads
(replay/replay.c, open_device_bundle) and what it says when it cannot
use it.  The recording's device is the device of its graphs' values (the
analyzer's): a CPU recording loads the cpu bundle exactly as before; a CUDA
one needs the `cuda:sm_XX` bundle of this machine's GPU, and where there is
none, no driver, the toolkit's stub, another arch, or no eager CUDA backend
(no GPU behind the driver), the script runs eagerly with one line saying
why.  A fitting bundle on a real GPU replays: its graphs run on the device
as CUDA Graphs (test_real_gpu_replay; the same path without a GPU is
tests/c/test_replay_cuda.c, through the fake driver).

This machine may have no GPU: the recordings use the recorder's test hook
JANUS_RECORD_AS_DEVICE=cuda (every tensor written as if on the GPU; the
script itself runs on the CPU), and the "GPU" is tests/c/fake_libcuda.c
(a host-side driver reporting one sm_90 device, "Fake GPU"), compiled here
and named by $JANUS_LIBCUDA.  What this checks is the bundle choice and its
messages, and that every such run prints eager's numbers -- not a GPU run
(test_real_gpu_replay does that where a GPU is present)."""
import ctypes
import os
import re
import shutil
import subprocess
import sys

import pytest

from test_optimize_cli import _have_analyzer, janus
from test_optimize_cuda import needs_nvrtc
from test_record_device import _record

pytestmark = pytest.mark.skipif(not _have_analyzer(), reason="janus not built with the analyzer")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EAGER = "janus replay: running eagerly: "


@pytest.fixture(scope="module")
def cuda_rec(tmp_path_factory):
    """A CUDA recording (test hook), its cpu bundle and its cuda:sm_90 bundle in two stores."""
    d = tmp_path_factory.mktemp("gpu_rec")
    db, script = _record(d, "cuda")
    cpu = d / "cpu.db"
    shutil.copy(db, cpu)
    r = janus("optimize", str(cpu))
    assert r.returncode == 0, r.stderr
    eager = janus("replay", "--eager", "--db", str(cpu), "--", sys.executable, str(script), cwd=str(d))
    assert eager.returncode == 0, eager.stderr
    return d, db, script, cpu, eager.stdout


def _cuda_store(cuda_rec, name, *targets, with_cpu=True):
    d, db, *_ = cuda_rec
    out = d / name
    if out.exists():
        return out
    shutil.copy(cuda_rec[3] if with_cpu else db, out)
    for t in targets:
        r = janus("optimize", "--target", t, str(out), timeout=600)
        assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def fake_driver(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler: not run: the bundle choice against a (fake) CUDA device")
    so = tmp_path_factory.mktemp("fake_cuda") / "libcuda_fake.so"
    inc = [f"-I{ROOT}/{p}" for p in ("exec", "ir", "runtime", "codegen")]
    r = subprocess.run([cc, "-D_GNU_SOURCE", "-shared", "-fPIC", "-O1", *inc,
                        f"{ROOT}/tests/c/fake_libcuda.c", "-o", str(so), "-ldl"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return str(so)


def _replay(cuda_rec, store, libcuda):
    d, _, script, _, eager = cuda_rec
    env = {"JANUS_LIBCUDA": libcuda}
    r = janus("replay", "--db", str(store), "--", sys.executable, str(script), cwd=str(d), extra_env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == eager, "a run that replays nothing must print eager's numbers"
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith(EAGER)]
    assert len(lines) == 1, r.stderr    # says why once
    return lines[0][len(EAGER):]


def test_cpu_bundle_of_a_cuda_recording(cuda_rec):
    """Only the cpu bundle: its graphs are GPU graphs, so replay does not
    start them (before: every graph missed on its DEVICE guard)."""
    why = _replay(cuda_rec, cuda_rec[3], "/nonexistent/libcuda.so.1")
    assert "were recorded on cuda tensors" in why and "has no CUDA bundle" in why, why
    assert "janus optimize --target cuda:sm_90" in why, why


@needs_nvrtc
def test_no_driver(cuda_rec):
    store = _cuda_store(cuda_rec, "sm90.db", "cuda:sm_90")
    why = _replay(cuda_rec, store, "/nonexistent/libcuda.so.1")
    assert re.search(r"recorded on cuda tensors, and this machine cannot run them: the CUDA driver was not found",
                     why), why


@needs_nvrtc
def test_stub_driver(cuda_rec):
    stub = "/usr/local/cuda/lib64/stubs/libcuda.so"
    if not os.path.exists(stub):
        pytest.skip(f"{stub} not found: not run: replay against the toolkit's stub driver")
    store = _cuda_store(cuda_rec, "sm90.db", "cuda:sm_90")
    why = _replay(cuda_rec, store, stub)
    assert "stub library" in why, why


def _fits_but_cannot_run(why):
    """What a fitting sm_90 bundle says on the fake driver: without a GPU the
    eager CUDA backend (cudart) cannot start; on a GPU machine it starts, and
    the fake driver cannot load NVRTC's real cubin.  Either way one reason."""
    assert "the cuda:sm_90 bundle of" in why, why
    if _gpu_count() <= 0:
        assert "fits Fake GPU (sm_90), but the eager CUDA backend cannot start" in why, why
    else:
        assert "cuModuleLoadDataEx of the cubin of the cuda:sm_90 bundle of" in why, why


@needs_nvrtc
def test_fitting_bundle_on_a_fake_gpu(cuda_rec, fake_driver):
    """The device's own arch is chosen over another one stored; what keeps it
    from running here is said, and the numbers are eager's."""
    store = _cuda_store(cuda_rec, "sm90.db", "cuda:sm_90")
    _fits_but_cannot_run(_replay(cuda_rec, store, fake_driver))


@needs_nvrtc
def test_cuda_bundle_alone(cuda_rec, fake_driver):
    """A store with a CUDA bundle and no cpu one: the CLI hands it to the
    child, which picks it for the device."""
    store = _cuda_store(cuda_rec, "only90.db", "cuda:sm_90", with_cpu=False)
    _fits_but_cannot_run(_replay(cuda_rec, store, fake_driver))


@needs_nvrtc
def test_other_arch_refused(cuda_rec, fake_driver):
    store = _cuda_store(cuda_rec, "sm100.db", "cuda:sm_100")
    why = _replay(cuda_rec, store, fake_driver)
    assert "the cuda:sm_100 bundle cannot run on Fake GPU (sm_90)" in why, why
    assert "janus optimize --target cuda:sm_90" in why, why


def _gpu_count():
    try:
        rt = ctypes.CDLL("libcudart.so")
    except OSError:
        for p in ("/usr/local/cuda/lib64/libcudart.so",):
            try:
                rt = ctypes.CDLL(p)
                break
            except OSError:
                return 0
        else:
            return 0
    n = ctypes.c_int(0)
    return n.value if rt.cudaGetDeviceCount(ctypes.byref(n)) == 0 else 0


GPU_SCRIPT = """
import janus, janus.nn as nn
janus.manual_seed(0)
m = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to("cuda")
opt = janus.optim.Adam(m.parameters(), lr=0.01)
x = janus.randn(32, 8).to("cuda")      # a fixed batch on the device (CPU ops in a
y = janus.randn(32, 4).to("cuda")      # step would end its segment: see ARCHITECTURE.md)
for step in range(STEPS):
    loss = ((m(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"{loss.item():.6f}")
w = m[0].weight.detach().cpu().tolist()  # a device copy is not differentiable in janus yet
print("w", " ".join(f"{v:.6f}" for v in w[0]))
"""


def _numbers(out):
    return [float(t) for ln in out.splitlines() for t in ln.split() if t != "w"]


@needs_nvrtc
def test_real_gpu_replay(tmp_path):
    """On a GPU: a script training on CUDA tensors (MLP + Adam), recorded
    and optimized for the device, replays with its steps as compiled graphs
    on the GPU (CUDA Graphs), printing eager's numbers (the fused kernels may
    round differently from the eager ones -- NVRTC contracts multiply-adds
    -- so within 1e-4 relative, not bitwise)."""
    if _gpu_count() <= 0:
        pytest.skip("no CUDA device (cudaGetDeviceCount): not run: record/optimize/replay of a training script "
                    "on a real GPU (graphs on the device, CUDA Graphs, results against eager)")
    s = tmp_path / "gpu_train.py"
    s.write_text(GPU_SCRIPT.replace("STEPS", "8"))
    db = tmp_path / "run.db"
    r = janus("record", "--db", str(db), "--", sys.executable, str(s), cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    import janus as jn
    maj, mnr = jn.cuda.get_device_capability() if hasattr(jn.cuda, "get_device_capability") else (9, 0)
    r = janus("optimize", "--target", f"cuda:sm_{maj}{mnr}", str(db), timeout=600)
    assert r.returncode == 0, r.stderr
    s.write_text(GPU_SCRIPT.replace("STEPS", "20"))   # more steps than recorded: the same graphs
    rp = janus("replay", "--db", str(db), "--", sys.executable, str(s), cwd=str(tmp_path))
    eager = janus("replay", "--eager", "--db", str(db), "--", sys.executable, str(s), cwd=str(tmp_path))
    assert rp.returncode == 0, rp.stderr
    assert eager.returncode == 0, eager.stderr
    assert EAGER not in rp.stderr, rp.stderr
    a, b = _numbers(rp.stdout), _numbers(eager.stdout)
    assert len(a) == len(b) == 20 + 8, (rp.stdout, eager.stdout)
    for u, v in zip(a, b):
        assert abs(u - v) <= 1e-4 * max(1.0, abs(v)), (rp.stdout, eager.stdout)
    m = re.search(r"\((\d[\d,]*) of (\d[\d,]*) segments ran as graphs", rp.stderr)
    hits, total = (int(g.replace(",", "")) for g in m.groups()) if m else (0, 0)
    assert total and hits >= total // 2, rp.stderr   # most segments ran on the GPU as graphs
