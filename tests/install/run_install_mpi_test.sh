#!/usr/bin/env bash
# tests/install/run_install_mpi_test.sh - install a ckpt build tree that
# has the MPI library into a temporary prefix and use ckpt_mpi as a user
# would: the header, libckpt_mpi.a, ckpt-mpi.pc and the CMake component are
# installed; consumer_mpi/ builds out of tree with
# find_package(ckpt COMPONENTS mpi) and with pkg-config ckpt-mpi, and each
# program saves and restores on two ranks.
# Usage: run_install_mpi_test.sh BUILD_DIR SOURCE_DIR LIBDIR CC CMAKE
#        SANITIZER MPIEXEC [MPIEXEC_FLAGS...]
# Exits 77 (CTest's skip) in sanitizer builds.
set -euo pipefail

if [ $# -lt 7 ]; then
    echo "usage: $0 BUILD_DIR SOURCE_DIR LIBDIR CC CMAKE SANITIZER MPIEXEC [FLAGS...]" >&2
    exit 2
fi
build=$1 src=$2 libdir=$3 cc=$4 cmake=$5 sanitizer=$6 mpiexec=$7
shift 7
mpiflags=("$@")

if [ -n "$sanitizer" ]; then
    echo "SKIP: sanitizer build ($sanitizer): consumers would need its runtime"
    exit 77
fi
case $libdir in
/*)
    echo "SKIP: absolute CMAKE_INSTALL_LIBDIR ($libdir) ignores --prefix"
    exit 77
    ;;
esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-install-mpi.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
lib=$prefix/$libdir

die() {
    echo "FAIL: $*" >&2
    exit 1
}
need_file() {
    [ -f "$1" ] || die "not installed: ${1#"$prefix"/}"
}
# run_consumer NAME BINARY: two ranks save and restore in a fresh directory.
run_consumer() {
    local dir out
    dir=$(mktemp -d "$tmp/ckpt.XXXXXX")
    out=$("$mpiexec" "${mpiflags[@]}" -n 2 "$2" "$dir") || die "$1: run failed"
    grep -qx "restored=1.5,2.5,3.5,4.5" <<<"$out" || die "$1: printed: $out"
    [ -f "$dir/model.ckpt-7.data-00001-of-00002" ] || die "$1: no rank-1 data file"
    echo "ok: $1 saves and restores on 2 ranks"
}

"$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.log" ||
    { cat "$tmp/install.log" >&2; die "cmake --install failed"; }
need_file "$prefix/include/ckpt/mpi.h"
need_file "$lib/libckpt_mpi.a"
need_file "$lib/pkgconfig/ckpt-mpi.pc"
need_file "$lib/cmake/ckpt/ckptMpiTargets.cmake"
grep -q "ckpt/mpi.h" "$prefix/include/ckpt.h" &&
    die "ckpt.h includes ckpt/mpi.h: the core must not need MPI"
if readelf -d "$lib/libckpt.so" | grep -q "NEEDED.*mpi"; then
    die "libckpt.so depends on MPI"
fi
echo "ok: MPI library installed, core free of MPI"

cbuild=$tmp/consumer-cmake
"$cmake" -S "$src/tests/install/consumer_mpi" -B "$cbuild" \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON >"$tmp/cmake.log" 2>&1 ||
    { cat "$tmp/cmake.log" >&2; die "consumer_mpi: CMake configure failed"; }
"$cmake" --build "$cbuild" >"$tmp/build.log" 2>&1 ||
    { cat "$tmp/build.log" >&2; die "consumer_mpi: CMake build failed"; }
run_consumer "find_package(ckpt COMPONENTS mpi)" "$cbuild/consumer_mpi"

export PKG_CONFIG_PATH="$lib/pkgconfig"
read -r -a cflags <<<"$(pkg-config --cflags ckpt-mpi)" ||
    die "pkg-config cannot find ckpt-mpi"
read -r -a libs <<<"$(pkg-config --libs ckpt-mpi)"
"$cc" "${cflags[@]}" -o "$tmp/pc_consumer" \
    "$src/tests/install/consumer_mpi/main.c" "${libs[@]}" ||
    die "pkg-config ckpt-mpi: build failed"
run_consumer "pkg-config ckpt-mpi" "$tmp/pc_consumer"
echo "PASS"
