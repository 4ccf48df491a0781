#!/usr/bin/env bash
# run.sh -- the whole GPU check in one command, for a GPU machine with no
# network and no development packages beyond CUDA, CMake and Python with
# PyTorch: builds janus against the offline dependency prefix that
# scripts/gpu_deps.sh prepared beforehand (SQLite, zstd, OpenBLAS unpacked
# from Debian packages), checks that the built programs find that prefix's
# libraries, runs the C tests and the GPU correctness tests, then the GPU
# benchmark (benchmarks/gpu/bench_gpu.py), every step under its own timeout
# and all of it within a time budget (default 480 s), and writes a summary.
#
# Linking: CMake gets every library and header path explicitly (no search),
# the programs get an RPATH (DT_RPATH, which also covers OpenBLAS's own
# libgfortran) to OpenBLAS's folder and to BUILD/deps-rt, a folder of links
# to the prefix's runtime libraries that this machine lacks -- where it has
# one (libsqlite3.so.0 next to Python's sqlite3 module, say) the machine's
# copy is used, so a process never holds two.  --prefix-only links every
# one of them from the prefix and then FAILS unless ldd resolves them all
# into the prefix and every sqlite3.h / zstd.h / cblas.h the compiler read
# came from it: the proof, on a machine that has the system packages too,
# that the prefix alone suffices.
#
# Without a GPU (no nvidia-smi device and no torch.cuda device, or --no-gpu)
# the GPU steps report "skipped" and the rest still runs.
#
# Outputs, in $OUT when set (the device tool's folder), else BUILD/gpu-run:
# summary.txt (versions, one line per step, the benchmark table), and the
# logs build.log verify.log ctest.log smoke.log pytest.log bench.log, bench.json.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DEPS=$ROOT/.gpu-deps
BUILD=$ROOT/build-gpu
BUDGET=480
JOBS=$(nproc 2>/dev/null || echo 4)
PY=${PYTHON:-python3}
GPU=auto
PREFIX_ONLY=0
DRY=0
SCALE=1
BENCH_ARGS=""

usage() {
    cat <<EOF
usage: benchmarks/gpu/run.sh [options]
  --deps DIR       the prefix made by scripts/gpu_deps.sh (default .gpu-deps)
  --build DIR      build folder (default build-gpu)
  --budget S       seconds for everything (default $BUDGET); each step gets
                   min(its own limit, what is left)
  --jobs N         parallel build/test jobs (default: nproc)
  --scale N        multiply every step's own time limit by N (a slow machine:
                   the limits are sized for the 16-core GPU machine)
  --no-gpu         skip the GPU steps even if a GPU is present
  --force-gpu      run the GPU steps without a GPU (a check of this script:
                   the tests then skip their GPU parts, the benchmark
                   reports every column "not available")
  --prefix-only    take EVERY library from the prefix and fail unless ldd and
                   the compiler's dependency files show only the prefix's
  --bench-args "A" extra arguments for bench_gpu.py (e.g. "--only mlp --repeats 3")
  --dry-run        print the steps and their commands, run nothing
  -h, --help       this text
Environment: PYTHON (default python3), OUT (where the summary and logs go).
Steps: deps configure build verify ctest smoke gpu-tests bench.
EOF
}

while [ $# -gt 0 ]; do
    case "$1" in
        --deps) DEPS=$2; shift ;;
        --build) BUILD=$2; shift ;;
        --budget) BUDGET=$2; shift ;;
        --jobs) JOBS=$2; shift ;;
        --scale) SCALE=$2; shift ;;
        --no-gpu) GPU=no ;;
        --force-gpu) GPU=forced ;;
        --prefix-only) PREFIX_ONLY=1 ;;
        --bench-args) BENCH_ARGS=$2; shift ;;
        --dry-run) DRY=1 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
case "$DEPS" in /*) ;; *) DEPS=$PWD/$DEPS ;; esac
case "$BUILD" in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
case "$BUDGET$JOBS$SCALE" in *[!0-9]*|"") echo "run.sh: --budget, --jobs and --scale take whole numbers" >&2; exit 2 ;; esac
LOGS=${OUT:-$BUILD/gpu-run}
RT=$BUILD/deps-rt
START=$(date +%s)

# ---- the prefix's layout (scripts/gpu_deps.sh writes it) ----
if [ -f "$DEPS/env.sh" ]; then
    # shellcheck source=/dev/null
    . "$DEPS/env.sh"
elif [ $DRY = 1 ]; then
    echo "(dry run: $DEPS/env.sh is missing; run scripts/gpu_deps.sh first -- paths shown symbolically)"
    GPU_DEPS_INCLUDE='$GPU_DEPS_INCLUDE' GPU_DEPS_LIB='$GPU_DEPS_LIB'
    GPU_DEPS_CBLAS_INCLUDE='$GPU_DEPS_CBLAS_INCLUDE' GPU_DEPS_OPENBLAS_DIR='$GPU_DEPS_OPENBLAS_DIR'
    GPU_DEPS_SONAMES='$GPU_DEPS_SONAMES'
else
    echo "run.sh: no dependency prefix at $DEPS (missing env.sh): run scripts/gpu_deps.sh on a machine" \
         "with network access and carry .gpu-deps along" >&2
    exit 2
fi
INC=$DEPS/$GPU_DEPS_INCLUDE
LIB=$DEPS/$GPU_DEPS_LIB
OBDIR=$DEPS/$GPU_DEPS_OPENBLAS_DIR
LF="-Wl,--disable-new-dtags -Wl,-rpath,$RT:$OBDIR -Wl,-rpath-link,$LIB:$OBDIR"

# ---- is there a GPU? ----
GPU_WHY=""
if [ $GPU = auto ]; then
    if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
        GPU=yes
    elif "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.device_count() > 0 else 1)' 2>/dev/null; then
        GPU=yes
    else
        GPU=no GPU_WHY="no CUDA device (nvidia-smi lists none, torch.cuda.device_count() is 0 or torch is missing)"
    fi
else
    [ $GPU = no ] && GPU_WHY="--no-gpu"
    [ $GPU = forced ] && GPU_WHY="--force-gpu: GPU steps run without one"
fi

# ---- the steps (each runs in its own bash under timeout; logs in $LOGS) ----
# The cmake command line, into the array CFG (paths may hold spaces).
configure_args() {
    local cuda=AUTO
    [ $GPU = yes ] && cuda=ON
    CFG=(cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DJANUS_WERROR=OFF -DJANUS_CUDA=$cuda
        "-DPython3_EXECUTABLE=$("$PY" -c 'import sys; print(sys.executable)' 2>/dev/null || echo "$PY")"
        "-DOPENBLAS_LIB=$OBDIR/libopenblas.so" "-DCBLAS_INCLUDE=$DEPS/$GPU_DEPS_CBLAS_INCLUDE"
        "-DSQLite3_INCLUDE_DIR=$INC" "-DSQLite3_LIBRARY=$LIB/libsqlite3.so"
        "-DZSTD_INCLUDE=$INC" "-DZSTD_LIB=$LIB/libzstd.so"
        -DCMAKE_SKIP_BUILD_RPATH=ON "-DCMAKE_EXE_LINKER_FLAGS=$LF" "-DCMAKE_SHARED_LINKER_FLAGS=$LF"
        "-DCMAKE_MODULE_LINKER_FLAGS=$LF")
}

# Runtime libraries: links in $RT to the prefix's copy of each soname this
# machine lacks (every one with --prefix-only).
system_has() {
    if command -v ldconfig >/dev/null 2>&1 && ldconfig -p 2>/dev/null | grep -q "^[[:space:]]*$1 "; then return 0; fi
    for d in /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /usr/lib64 /lib64 /usr/lib; do
        [ -e "$d/$1" ] && return 0
    done
    return 1
}
step_deps() {
    "$ROOT/scripts/gpu_deps.sh" --check "$DEPS" || return 1
    local glibc
    glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
    echo "glibc $glibc (the prefix's libraries need >= 2.34)"
    case "$glibc" in 2.[0-9]|2.[12][0-9]|2.3[0-3]) echo "glibc too old for the prefix" >&2; return 1 ;; esac
    rm -rf "$RT" && mkdir -p "$RT" || return 1
    for so in $GPU_DEPS_SONAMES; do
        if [ $PREFIX_ONLY = 1 ] || ! system_has "$so"; then
            ln -s "$LIB/$so" "$RT/$so" && echo "$so: from the prefix"
        else
            echo "$so: the machine's own"
        fi
    done
    if [ -z "$(command -v cmake)" ] || [ -z "$(command -v cc || command -v gcc)" ]; then
        echo "cmake or a C compiler is missing" >&2; return 1
    fi
    [ $GPU = no ] || cuda_libs
    local pyinc
    pyinc=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
    if [ -f "$pyinc/Python.h" ]; then echo "Python.h: $pyinc"
    else echo "Python.h is missing ($pyinc): the janus._C extension cannot be built, the Python steps will fail" >&2; fi
}
# The CUDA libraries janus loads (cudart linked; cuBLAS, NVRTC, cuDNN
# dlopen'ed by soname) where the loader would not find them: a link in $RT
# to the toolkit's copy, else to a Python package's (PyTorch's nvidia-*
# wheels carry cuDNN, which the toolkit does not).  cuDNN's own parts
# (libcudnn_*.so.9) go with it: libcudnn.so.9 opens them by soname.
cuda_libs() {
    local nvcc dirs=() site so f d
    nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
    for d in "$(dirname "$(readlink -f "$nvcc")")/../lib64" "$(dirname "$(readlink -f "$nvcc")")/../targets/x86_64-linux/lib" \
             /usr/local/cuda/lib64; do
        [ -d "$d" ] && dirs+=("$(readlink -f "$d")")
    done
    site=$("$PY" -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null)
    for d in $site; do
        for f in "$d"/nvidia/*/lib "$d"/nvidia/cu*/lib; do [ -d "$f" ] && dirs+=("$f"); done
    done
    for so in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnvrtc.so.13 libnvrtc-builtins.so.13.0 libcudnn.so.9; do
        if system_has "$so"; then echo "$so: the machine's own"; continue; fi
        f=""
        for d in "${dirs[@]}"; do [ -e "$d/$so" ] && { f=$d/$so; break; }; done
        if [ -z "$f" ]; then echo "$so: not found (looked in ${dirs[*]})"; continue; fi
        ln -sf "$f" "$RT/$so" && echo "$so: $f"
        if [ "$so" = libcudnn.so.9 ]; then
            for f in "$(dirname "$f")"/libcudnn_*.so.9; do [ -e "$f" ] && ln -sf "$f" "$RT/$(basename "$f")"; done
        fi
    done
}
step_configure() { configure_args && "${CFG[@]}"; }
step_build() { cmake --build "$BUILD" -j "$JOBS"; }

# Which file each runtime library resolves to (ldd, no LD_LIBRARY_PATH),
# and which headers the compiler read; with --prefix-only, anything outside
# the prefix fails the step.
step_verify() {
    local bad=0 f so path line
    local bins=("$BUILD/janus" "$BUILD"/python/janus/_C*.so "$BUILD/test_db")
    for f in "${bins[@]}"; do
        [ -e "$f" ] || { echo "missing: $f"; bad=1; continue; }
        echo "== ldd $f"
        for so in $GPU_DEPS_SONAMES libopenblas.so.0; do
            line=$(env -u LD_LIBRARY_PATH ldd "$f" | awk -v s="$so" '$1 == s')
            path=$(echo "$line" | awk '{print $3}')
            echo "  $so -> ${path:-(not linked)}"
            case "$line" in *"not found"*) bad=1; echo "    ^ NOT FOUND" ;; esac
            if [ $PREFIX_ONLY = 1 ] && [ -n "$path" ]; then
                case "$(readlink -f "$path")" in "$(readlink -f "$DEPS")"/*) ;; *) bad=1; echo "    ^ NOT from the prefix" ;; esac
            fi
        done
    done
    echo "== headers the compiler read (dependency files)"
    local hdrs
    hdrs=$(find "$BUILD/CMakeFiles" -name '*.o.d' -print0 | xargs -0 cat 2>/dev/null | tr ' \\' '\n\n' |
           grep -E '/(sqlite3|zstd|cblas|openblas_config)\.h$' | sort -u)
    echo "${hdrs:-  (none found: no dependency files?)}" | sed 's/^/  /'
    [ -n "$hdrs" ] || bad=1
    if [ $PREFIX_ONLY = 1 ] && echo "$hdrs" | grep -v "^$DEPS/" | grep -q .; then
        echo "  ^ some headers are NOT from the prefix"; bad=1
    fi
    return $bad
}
# The GPU tests (test_*cuda*) run in gpu-tests, where their report lines are
# kept; ctest runs them only when that step will not.
step_ctest() {
    local ex=()
    [ $GPU = no ] || ex=(-E cuda)
    cd "$BUILD" && ctest -j "$JOBS" --output-on-failure --timeout $((150 * SCALE)) "${ex[@]}"
}
# The extension loads against the prefix and does a BLAS product.
step_smoke() {
    JANUS_BUILD_DIR=$BUILD "$PY" -c '
import sys; sys.path.insert(0, sys.argv[1] + "/python")
import janus, janus._C
a = janus.ones(64, 64)
s = (a @ a).sum().item()
assert s == 64.0 ** 3, s
print("janus._C", janus._C.__file__, "matmul ok; janus.cuda.is_available():", janus.cuda.is_available())' "$ROOT"
}
# The C GPU tests again, their report lines shown (ctest only keeps those
# of failures), then pytest: "-k cuda or gpu" selects test_*cuda*/test_*gpu*
# files and tests so named.
step_gpu_tests() {
    local rc=0 t
    for t in "$BUILD"/test_*cuda*; do
        [ -x "$t" ] || continue
        echo "== $t"
        (cd "$BUILD" && "$t") || rc=1
    done
    cd "$ROOT" && JANUS_BUILD_DIR=$BUILD "$PY" -m pytest -q -p no:cacheprovider -k "cuda or gpu" tests/python || rc=1
    return $rc
}
# The benchmark's own budget is what this step was given, less a margin for
# its start and table: killed at the step's limit it would print nothing.
step_bench() {
    cd "$ROOT" && JANUS_BUILD_DIR=$BUILD "$PY" benchmarks/gpu/bench_gpu.py --json "$LOGS/bench.json" \
        --budget $((STEP_T > 60 ? STEP_T - 30 : STEP_T / 2)) $BENCH_ARGS
}

#                 name      max s  needs-GPU  log
STEPS=(
    "deps       20  0 verify.log"
    "configure  90  0 build.log"
    "build     300  0 build.log"
    "verify     30  0 verify.log"
    "ctest     150  0 ctest.log"
    "smoke      60  0 smoke.log"
    "gpu-tests 200  1 pytest.log"
    "bench     300  1 bench.log"
)

if [ $DRY = 1 ]; then
    echo "run.sh plan (budget ${BUDGET}s, jobs $JOBS, GPU: $GPU${GPU_WHY:+ -- $GPU_WHY}, prefix-only: $PREFIX_ONLY)"
    echo "logs and summary: $LOGS"
    for s in "${STEPS[@]}"; do
        set -- $s
        note=""
        [ "$3" = 1 ] && [ $GPU = no ] && note="  [skipped: $GPU_WHY]"
        case $1 in
            deps) cmd="scripts/gpu_deps.sh --check $DEPS; links in $RT for: $GPU_DEPS_SONAMES" ;;
            configure) configure_args; cmd=$(printf '%q ' "${CFG[@]}") ;;
            build) cmd="cmake --build $BUILD -j $JOBS" ;;
            verify) cmd="ldd $BUILD/janus $BUILD/python/janus/_C*.so $BUILD/test_db; headers in $BUILD/CMakeFiles/**/*.o.d" ;;
            ctest) cmd="(cd $BUILD && ctest -j $JOBS --output-on-failure --timeout $((150 * SCALE)))" ;;
            smoke) cmd="$PY -c 'import janus; ones(64,64) @ ones(64,64)'" ;;
            gpu-tests) cmd="$BUILD/test_*cuda*; $PY -m pytest -q -k 'cuda or gpu' tests/python" ;;
            bench) cmd="$PY benchmarks/gpu/bench_gpu.py --json $LOGS/bench.json $BENCH_ARGS" ;;
        esac
        printf '%-10s <=%4ss  %s%s\n' "$1" "$(($2 * SCALE))" "$cmd" "$note"
    done
    exit 0
fi

mkdir -p "$LOGS" || exit 2
SUMMARY=$LOGS/summary.txt
export ROOT DEPS BUILD JOBS SCALE PY PREFIX_ONLY BENCH_ARGS LOGS RT LIB OBDIR INC LF GPU
export GPU_DEPS_INCLUDE GPU_DEPS_LIB GPU_DEPS_CBLAS_INCLUDE GPU_DEPS_OPENBLAS_DIR GPU_DEPS_SONAMES
export -f configure_args system_has cuda_libs step_deps step_configure step_build step_verify step_ctest step_smoke \
    step_gpu_tests step_bench
{
    echo "janus GPU run, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
    echo "host: $(uname -m), $(nproc) cores; GPU: $GPU${GPU_WHY:+ ($GPU_WHY)}"
    [ $GPU = yes ] && nvidia-smi -L 2>/dev/null | sed 's/^/  /'
    echo "tools: $(cmake --version 2>/dev/null | head -1); $(cc --version 2>/dev/null | head -1);" \
         "$("$PY" --version 2>&1); torch $("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo 'not installed')"
    echo "prefix: $DEPS ($(wc -l <"$DEPS/MANIFEST" 2>/dev/null || echo 0) packages)$([ $PREFIX_ONLY = 1 ] && echo ', --prefix-only')"
    echo "budget ${BUDGET}s"
    printf '%-10s %-8s %6s  %s\n' step result secs note
} >"$SUMMARY"

# The test and benchmark steps also find the runtime links (Python's own
# sqlite3 module, subprocesses) through LD_LIBRARY_PATH; verify runs without.
failed=0 stop=0
for s in "${STEPS[@]}"; do
    set -- $s
    name=$1 max=$(($2 * SCALE)) needs_gpu=$3 log=$LOGS/$4
    left=$((BUDGET - ($(date +%s) - START) - 5))
    t=$((max < left ? max : left))
    note=""
    if [ $stop = 1 ]; then
        res=skipped note="an earlier step failed"
    elif [ "$needs_gpu" = 1 ] && [ $GPU = no ]; then
        res=skipped note=$GPU_WHY
    elif [ $t -lt 10 ]; then
        res=skipped note="time budget spent"
    else
        echo "== $name (up to ${t}s) -> $log"
        t0=$(date +%s)
        export STEP_T=$t
        { echo "== step $name"; } >>"$log"
        if [ "$name" = verify ]; then
            timeout -k 5 "$t" bash -c "step_${name//-/_}" >>"$log" 2>&1
        else
            LD_LIBRARY_PATH=$RT${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} timeout -k 5 "$t" bash -c "step_${name//-/_}" >>"$log" 2>&1
        fi
        rc=$?
        secs=$(($(date +%s) - t0))
        case $rc in
            0) res=ok ;;
            124|137) res=timeout note="killed after ${t}s; see $(basename "$log")" ;;
            *) res=FAILED note="exit $rc; see $(basename "$log")" ;;
        esac
        [ $rc != 0 ] && tail -n 15 "$log" | sed 's/^/   | /'
    fi
    printf '%-10s %-8s %6s  %s\n' "$name" "$res" "${secs:--}" "$note" | tee -a "$SUMMARY"
    unset secs
    if [ "$res" = FAILED ] || [ "$res" = timeout ]; then
        failed=1
        # nothing after a failed build can run; tests failing do not stop the benchmark
        case $name in deps|configure|build) stop=1 ;; esac
    fi
done
if [ -f "$LOGS/bench.log" ]; then
    { echo; echo "---- benchmark (bench.log) ----"; grep -v '^== step' "$LOGS/bench.log"; } >>"$SUMMARY"
fi
echo "total $(($(date +%s) - START))s; summary: $SUMMARY" | tee -a "$SUMMARY"
exit $failed
