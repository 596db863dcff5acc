#!/usr/bin/env bash
# tests/install/run_install_mpi_test.sh - install a ckpt build tree that
# has the MPI library into a temporary prefix and use ckpt_mpi as a user
# would: the header, libckpt_mpi.a, ckpt-mpi.pc and the CMake component are
# installed; consumer_mpi/ builds out of tree with
# find_package(ckpt COMPONENTS mpi) and with pkg-config ckpt-mpi, and each
# program saves and restores on two ranks.
# Usage: run_install_mpi_test.sh BUILD_DIR SOURCE_DIR LIBDIR CC CMAKE
#        SANITIZER MPIEXEC [MPIEXEC_FLAGS...]
# Exits 77 (CTest's skip) in sanitizer builds. Set CKPT_KEEP_TMP=1 to keep
# the temporary prefix.
set -euo pipefail

if [ $# -lt 7 ]; then
    echo "usage: $0 BUILD_DIR SOURCE_DIR LIBDIR CC CMAKE SANITIZER MPIEXEC [FLAGS...]" >&2
    exit 2
fi
build=$1 src=$2 libdir=$3 cc=$4 cmake=$5 sanitizer=$6 mpiexec=$7
shift 7
mpiflags=("$@")
# shellcheck source-path=SCRIPTDIR source=install_lib.sh
. "$(dirname "$0")/install_lib.sh"

install_skip_unless_usable "$sanitizer" "$libdir"
install_tmp install-mpi
lib=$prefix/$libdir

# run_consumer NAME BINARY: two ranks save and restore in a fresh directory.
run_consumer() {
    local dir out
    dir=$(mktemp -d "$tmp/ckpt.XXXXXX")
    out=$("$mpiexec" "${mpiflags[@]}" -n 2 "$2" "$dir") || die "$1: run failed"
    grep -qx "restored=1.5,2.5,3.5,4.5" <<<"$out" || die "$1: printed: $out"
    [ -f "$dir/model.ckpt-7.data-00001-of-00002" ] || die "$1: no rank-1 data file"
    echo "ok: $1 saves and restores on 2 ranks"
}

install_tree "$cmake" "$build"
need_file "$prefix/include/ckpt/mpi.h"
need_file "$lib/libckpt_mpi.a"
need_file "$lib/pkgconfig/ckpt-mpi.pc"
need_file "$lib/cmake/ckpt/ckptMpiTargets.cmake"
grep -q "ckpt/mpi.h" "$prefix/include/ckpt.h" &&
    die "ckpt.h includes ckpt/mpi.h: the core must not need MPI"
if grep -q "NEEDED.*mpi" <<<"$(readelf -d "$lib/libckpt.so")"; then
    die "libckpt.so depends on MPI"
fi
echo "ok: MPI library installed, core free of MPI"

cbuild=$tmp/consumer-cmake
build_consumer consumer_mpi "$cmake" "$cc" "$src/tests/install/consumer_mpi" \
    "$cbuild"
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
