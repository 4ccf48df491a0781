"""The GPU check's scripts, without a GPU: benchmarks/gpu/run.sh (bash
syntax, --help, --dry-run's plan and the paths it hands CMake, refusals of
bad options and of a missing dependency prefix), scripts/gpu_deps.sh
--check on an incomplete prefix, and benchmarks/gpu/bench_gpu.py degrading
to "not available" per column when there is no CUDA device.  The full
run.sh (build against the prefix with --prefix-only, ldd and header
checks) takes minutes: benchmarks/results/history.md records its runs."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = os.path.join(ROOT, "benchmarks", "gpu", "run.sh")
DEPS_SH = os.path.join(ROOT, "scripts", "gpu_deps.sh")
BENCH = os.path.join(ROOT, "benchmarks", "gpu", "bench_gpu.py")
BUILD = os.path.abspath(os.environ.get("JANUS_BUILD_DIR", os.path.join(ROOT, "build")))


def sh(*args, env=None):
    e = dict(os.environ)
    e.pop("OUT", None)
    e.update(env or {})
    return subprocess.run(list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=e,
                          timeout=120)


def fake_prefix(tmp_path):
    """A prefix with gpu_deps.sh's env.sh (the layout) and nothing else."""
    d = tmp_path / "deps"
    d.mkdir()
    (d / "env.sh").write_text('GPU_DEPS_INCLUDE=usr/include\nGPU_DEPS_LIB=usr/lib/x86_64-linux-gnu\n'
                              'GPU_DEPS_CBLAS_INCLUDE=usr/include/x86_64-linux-gnu/openblas-pthread\n'
                              'GPU_DEPS_OPENBLAS_DIR=usr/lib/x86_64-linux-gnu/openblas-pthread\n'
                              'GPU_DEPS_SONAMES="libsqlite3.so.0 libzstd.so.1"\n')
    return d


@pytest.mark.parametrize("script", [RUN, DEPS_SH])
def test_bash_syntax(script):
    assert os.access(script, os.X_OK), f"{script} is not executable"
    p = sh("bash", "-n", script)
    assert p.returncode == 0, p.stdout


def test_help_lists_the_options():
    p = sh(RUN, "--help")
    assert p.returncode == 0, p.stdout
    for opt in ("--deps", "--build", "--budget", "--no-gpu", "--prefix-only", "--dry-run", "--scale"):
        assert opt in p.stdout
    p = sh(DEPS_SH, "--help")
    assert p.returncode == 0 and "apt-get download" in p.stdout and "dpkg -x" in p.stdout, p.stdout


def test_dry_run_plans_every_step_and_runs_nothing(tmp_path):
    deps = fake_prefix(tmp_path)
    build = tmp_path / "b"
    p = sh(RUN, "--dry-run", "--no-gpu", "--deps", str(deps), "--build", str(build), "--jobs", "3",
           "--scale", "2", "--bench-args", "--only mlp")
    assert p.returncode == 0, p.stdout
    steps = [ln.split()[0] for ln in p.stdout.splitlines() if ln[:1].isalpha() and "<=" in ln]
    assert steps == ["deps", "configure", "build", "verify", "ctest", "smoke", "gpu-tests", "bench"], p.stdout
    lines = {ln.split()[0]: ln for ln in p.stdout.splitlines() if "<=" in ln}
    assert "<= 600s" in lines["build"]  # 300 s scaled by 2
    cfg = lines["configure"]
    # every dependency comes from the prefix, by explicit path, with an RPATH to it
    for want in (f"-DSQLite3_INCLUDE_DIR={deps}/usr/include", f"-DZSTD_LIB={deps}/usr/lib/x86_64-linux-gnu/libzstd.so",
                 f"-DOPENBLAS_LIB={deps}/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so",
                 "-DJANUS_WERROR=OFF", "--disable-new-dtags", f"{build}/deps-rt"):
        assert want.replace(" ", "\\ ") in cfg or want in cfg, (want, cfg)
    assert "[skipped: --no-gpu]" in lines["gpu-tests"] and "[skipped: --no-gpu]" in lines["bench"]
    assert "--only mlp" in lines["bench"] and "-j 3" in lines["build"]
    assert not build.exists(), "a dry run created the build folder"


def test_dry_run_without_a_prefix_says_how_to_make_one(tmp_path):
    p = sh(RUN, "--dry-run", "--no-gpu", "--deps", str(tmp_path / "none"), "--build", str(tmp_path / "b"))
    assert p.returncode == 0 and "run scripts/gpu_deps.sh first" in p.stdout, p.stdout


def test_refusals(tmp_path):
    p = sh(RUN, "--deps", str(tmp_path / "none"), "--build", str(tmp_path / "b"))
    assert p.returncode == 2 and "no dependency prefix" in p.stdout and "scripts/gpu_deps.sh" in p.stdout, p.stdout
    assert not (tmp_path / "b").exists()
    p = sh(RUN, "--frobnicate")
    assert p.returncode == 2 and "unknown option --frobnicate" in p.stdout, p.stdout
    p = sh(RUN, "--budget", "soon", "--dry-run")
    assert p.returncode == 2 and "whole numbers" in p.stdout, p.stdout


def test_deps_check_names_what_is_missing(tmp_path):
    deps = fake_prefix(tmp_path)
    p = sh(DEPS_SH, "--check", str(deps))
    assert p.returncode == 1, p.stdout
    assert f"{deps}/usr/include/sqlite3.h is missing" in p.stdout and "rerun scripts/gpu_deps.sh" in p.stdout


def test_run_stops_at_an_incomplete_prefix(tmp_path):
    """The deps step fails (naming the missing file), nothing is built, the
    summary says why every later step did not run."""
    deps = fake_prefix(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    p = sh(RUN, "--no-gpu", "--deps", str(deps), "--build", str(tmp_path / "b"), env={"OUT": str(out)})
    assert p.returncode == 1, p.stdout
    summary = (out / "summary.txt").read_text()
    assert "deps       FAILED" in summary, summary
    assert "configure  skipped" in summary and "an earlier step failed" in summary
    assert "sqlite3.h is missing" in (out / "verify.log").read_text()
    assert not (tmp_path / "b" / "CMakeCache.txt").exists()


def _janus_cuda():
    try:
        import janus
        return janus.cuda.is_available()
    except Exception:
        return False


def _torch_cuda():
    try:
        import torch
        return torch.cuda.is_available()
    except Exception:
        return False


@pytest.mark.skipif(_janus_cuda() or _torch_cuda(), reason="a CUDA device is present: run.sh's bench step times it")
def test_bench_reports_every_column_not_available_without_a_gpu(tmp_path):
    out = tmp_path / "bench.json"
    p = subprocess.run([sys.executable, BENCH, "--only", "mlp,lstm", "--json", str(out)], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=120)
    assert p.returncode == 0, p.stdout
    for col in ("janus replay", "janus eager", "torch eager", "torch.compile"):
        assert f"{col}: not available -- " in p.stdout, p.stdout
    res = json.loads(out.read_text())
    assert [w["key"] for w in res["workloads"]] == ["mlp", "lstm"]
    assert all(c["steps_per_s"] is None and c["note"] for w in res["workloads"] for c in w["columns"].values())
    assert {t["verdict"] for t in res["targets"]} == {"not measured"}
    p = subprocess.run([sys.executable, BENCH, "--only", "gpt"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=60)
    assert p.returncode == 2 and "unknown workload(s) gpt" in p.stdout, p.stdout


def test_gpu_step_script_parses():
    p = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "gpu", "gpu_step.py"), "--help"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    assert p.returncode == 0 and "--only" in p.stdout, p.stdout


@pytest.mark.skipif(not os.path.exists(os.path.join(BUILD, "janus")), reason=f"{BUILD}/janus not built")
def test_bench_pipeline_runs_on_the_cpu(tmp_path):
    """--device cpu: the replay column's record -> optimize -> replay
    processes, the in-process columns, medians, ratios and the JSON, all as
    on the GPU (what only a GPU adds is the device)."""
    out = tmp_path / "bench.json"
    p = subprocess.run([sys.executable, BENCH, "--device", "cpu", "--only", "mlp", "--repeats", "1", "--steps", "3",
                        "--replay-steps", "20", "--skip", "torch.compile", "--json", str(out)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert p.returncode == 0, p.stdout
    cols = json.loads(out.read_text())["workloads"][0]["columns"]
    assert cols["janus replay"]["steps_per_s"] > 0, cols
    hits, misses = cols["janus replay"]["hits"]
    assert hits > 0, cols  # it replayed graphs, not eagerly
    assert cols["janus eager"]["steps_per_s"] > 0
    assert cols["torch.compile"] == {"steps_per_s": None, "note": "--skip"}
    torch_ok = cols["torch eager"]["steps_per_s"] is not None
    assert torch_ok or "PyTorch not installed" in cols["torch eager"]["note"]
    assert ("replay/torch" in p.stdout) and ("x" in p.stdout.split("fashion_mlp")[1].splitlines()[0]) == torch_ok
    p = subprocess.run([sys.executable, BENCH, "--skip", "torch.jit"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=60)
    assert p.returncode == 2 and "unknown column torch.jit" in p.stdout, p.stdout
