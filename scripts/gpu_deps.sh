#!/usr/bin/env bash
# gpu_deps.sh -- prepares, on a machine WITH network access, the offline
# dependency prefix that benchmarks/gpu/run.sh builds janus against on the
# GPU machine (no network there, no development packages beyond CUDA, CMake
# and Python with PyTorch).
#
# What: the Debian packages of SQLite, zstd and OpenBLAS (pthread flavour)
# -- headers, link-time .so symlinks and the runtime libraries -- plus the
# runtime libraries they need that a bare machine may lack (libgfortran5,
# libquadmath0), fetched with `apt-get download` (no install, no root
# needed beyond apt's lists) and unpacked with `dpkg -x` into DIR (default
# .gpu-deps/ in the repository root, git-ignored).  Static archives,
# documentation and the BLAS/LAPACK compatibility copies janus does not link
# are removed so the prefix stays small enough to travel with the working
# tree (checked: < 50 MiB).  DIR/MANIFEST lists the packages and versions;
# DIR/env.sh holds the paths run.sh passes to CMake.
#
# The libraries need glibc >= 2.34 (Debian 12, Ubuntu 22.04 and later).
#
# Closure: every Depends/Pre-Depends of a fetched package must be fetched
# too or be in BASE (what any machine with a C compiler has: libc6,
# libgcc-s1, gcc-12-base, libc-dev); otherwise the script stops naming the
# dependency, so a Debian update that adds one cannot go unnoticed.
#
#   scripts/gpu_deps.sh [DIR]       (re)creates DIR
#   scripts/gpu_deps.sh --check DIR checks an existing DIR, fetches nothing
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PKGS="libsqlite3-0 libsqlite3-dev libzstd1 libzstd-dev libopenblas0-pthread libopenblas-pthread-dev libgfortran5 libquadmath0"
BASE="libc6 libgcc-s1 gcc-12-base libc-dev libc6-dev"
MAX_MIB=50
TRIPLET=x86_64-linux-gnu

usage() { sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

check_only=0
case "${1:-}" in
    -h|--help) usage; exit 0 ;;
    --check) check_only=1; shift ;;
esac
DIR=${1:-$ROOT/.gpu-deps}
case "$DIR" in /*) ;; *) DIR=$PWD/$DIR ;; esac

# The files run.sh needs, relative to DIR (one place: --check uses it too).
L=usr/lib/$TRIPLET
NEEDED="usr/include/sqlite3.h usr/include/zstd.h usr/include/$TRIPLET/openblas-pthread/cblas.h
$L/libsqlite3.so $L/libsqlite3.so.0 $L/libzstd.so $L/libzstd.so.1 $L/libgfortran.so.5 $L/libquadmath.so.0
$L/openblas-pthread/libopenblas.so $L/openblas-pthread/libopenblas.so.0"

check_prefix() {
    local missing=0
    for f in $NEEDED; do
        if [ ! -e "$DIR/$f" ]; then echo "gpu_deps: $DIR/$f is missing" >&2; missing=1; fi
    done
    [ $missing = 0 ] || { echo "gpu_deps: $DIR is incomplete: rerun scripts/gpu_deps.sh" >&2; return 1; }
    local mib
    mib=$(du -sm "$DIR" | cut -f1)
    if [ "$mib" -ge $MAX_MIB ]; then
        echo "gpu_deps: $DIR is $mib MiB, over the $MAX_MIB MiB that can travel to the GPU machine" >&2
        return 1
    fi
    echo "gpu_deps: $DIR complete ($mib MiB)"
}

if [ $check_only = 1 ]; then check_prefix; exit; fi

command -v apt-get >/dev/null && command -v dpkg >/dev/null ||
    { echo "gpu_deps: needs apt-get and dpkg (a Debian/Ubuntu machine with network access)" >&2; exit 1; }

# Closure check before anything is downloaded.
deps_of() {  # first alternative of each Depends/Pre-Depends, version and arch stripped
    apt-cache depends "$1" | awk '/^ *\|?(Pre)?Depends:/ {print $2}' | sed 's/:any$//; s/[<>]//g' | sort -u
}
bad=""
for p in $PKGS; do
    apt-cache show "$p" >/dev/null 2>&1 ||
        { echo "gpu_deps: apt knows no package $p (run apt-get update first)" >&2; exit 1; }
    for d in $(deps_of "$p"); do
        case " $PKGS $BASE " in *" $d "*) ;; *) bad="$bad $d (of $p)" ;; esac
    done
done
if [ -n "$bad" ]; then
    echo "gpu_deps: unlisted dependencies:$bad -- add each to PKGS (to ship it) or BASE (if every machine has it)" >&2
    exit 1
fi

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# -o APT::Sandbox::User=root: the temporary folder is not the _apt user's
(cd "$TMP" && apt-get -q -o APT::Sandbox::User=root download $PKGS >/dev/null) ||
    { echo "gpu_deps: apt-get download failed (network? apt-get update?)" >&2; exit 1; }

rm -rf "$DIR"
mkdir -p "$DIR"
: >"$DIR/MANIFEST"
for deb in "$TMP"/*.deb; do
    dpkg -x "$deb" "$DIR"
    dpkg-deb --show --showformat='${Package} ${Version} ${Architecture}\n' "$deb" >>"$DIR/MANIFEST"
done
# what janus does not use: static archives, docs, the reference-BLAS/LAPACK
# compatibility copies (janus links libopenblas.so directly)
find "$DIR" -name '*.a' -delete
rm -rf "$DIR/usr/share" "$DIR/$L/openblas-pthread/cmake" "$DIR/$L/cmake"
rm -f "$DIR/$L/openblas-pthread/"{libblas,liblapack}.so*

cat >"$DIR/env.sh" <<EOF
# Written by scripts/gpu_deps.sh: paths inside this prefix, relative to it.
GPU_DEPS_INCLUDE=usr/include
GPU_DEPS_LIB=$L
GPU_DEPS_CBLAS_INCLUDE=usr/include/$TRIPLET/openblas-pthread
GPU_DEPS_OPENBLAS_DIR=$L/openblas-pthread
# runtime sonames run.sh takes from here when the machine lacks them
GPU_DEPS_SONAMES="libsqlite3.so.0 libzstd.so.1 libgfortran.so.5 libquadmath.so.0"
EOF
echo "gpu_deps: unpacked $(wc -l <"$DIR/MANIFEST") packages into $DIR"
check_prefix
