#!/usr/bin/env bash
# tests/install/run_pc_rpath_test.sh - ckpt.pc's rpath: configured for a
# prefix outside the loader's path (/opt/...) its Libs carry
# -Wl,-rpath,${libdir}; configured as a distribution does (/usr, libdir
# lib/<multiarch>, a directory the compiler searches anyway) they do not,
# since the RUNPATH it puts into every program built with it is refused
# there (Debian's lintian: custom-library-search-path). A sanitizer
# build's Libs start with the sanitizer's flag.
# Usage: run_pc_rpath_test.sh SOURCE_DIR CMAKE CC
set -euo pipefail
if [ $# -ne 3 ]; then
    echo "usage: $0 SOURCE_DIR CMAKE CC" >&2
    exit 2
fi
src=$1 cmake=$2 cc=$3
# shellcheck source-path=SCRIPTDIR source=install_lib.sh
. "$(dirname "$0")/install_lib.sh"
multiarch=$("$cc" -print-multiarch 2>/dev/null || true)
if [ -z "$multiarch" ] || [ ! -d "/usr/lib/$multiarch" ]; then
    echo "SKIP: $cc names no multiarch lib directory under /usr/lib"
    exit 77
fi
install_tmp pc-rpath

# libs NAME OPTION...: configure the library alone into $tmp/NAME and
# print the Libs line of the ckpt.pc it generates.
libs() {
    local name=$1
    shift
    "$cmake" -S "$src" -B "$tmp/$name" -DCMAKE_C_COMPILER="$cc" \
        -DCKPT_BUILD_TOOLS=OFF -DCKPT_BUILD_TESTS=OFF \
        -DCKPT_BUILD_EXAMPLES=OFF -DCKPT_BUILD_BENCH=OFF \
        -DCKPT_WITH_MPI=OFF "$@" >"$tmp/$name.log" 2>&1 ||
        { cat "$tmp/$name.log" >&2; die "$name: configure failed"; }
    sed -n 's/^Libs: //p' "$tmp/$name/ckpt.pc"
}

# The Libs lines hold pkg-config's own ${libdir}, not the shell's.
# shellcheck disable=SC2016
rpath='-L${libdir} -Wl,-rpath,${libdir} -lckpt' plain='-L${libdir} -lckpt'
got=$(libs opt -DCMAKE_INSTALL_PREFIX=/opt/ckpt)
[ "$got" = "$rpath" ] ||
    die "prefix /opt/ckpt: Libs: $got"
echo "ok: a prefix outside the loader's path gets the rpath"

got=$(libs usr -DCMAKE_INSTALL_PREFIX=/usr \
    -DCMAKE_INSTALL_LIBDIR="lib/$multiarch")
[ "$got" = "$plain" ] || die "prefix /usr: Libs: $got"
echo "ok: /usr/lib/$multiarch gets none"

# A sanitizer build's libraries need its runtime first in a program's
# link (without it the program dies at start: "ASan runtime does not come
# first"): Libs carry the flag, in ckpt.pc and ckpt-static.pc alike.
# shellcheck disable=SC2016
got=$(libs asan -DCMAKE_INSTALL_PREFIX=/opt/ckpt -DCKPT_SANITIZER=address)
[ "$got" = "-fsanitize=address,undefined $rpath" ] ||
    die "CKPT_SANITIZER=address: Libs: $got"
got=$(sed -n 's/^Libs: //p' "$tmp/asan/ckpt-static.pc")
# shellcheck disable=SC2016
[ "$got" = '-fsanitize=address,undefined ${libdir}/libckpt.a -lpthread' ] ||
    die "CKPT_SANITIZER=address: ckpt-static.pc Libs: $got"
got=$(libs tsan -DCMAKE_INSTALL_PREFIX=/opt/ckpt -DCKPT_SANITIZER=thread)
[ "$got" = "-fsanitize=thread $rpath" ] ||
    die "CKPT_SANITIZER=thread: Libs: $got"
echo "ok: a sanitizer build's Libs link its runtime"
