#!/usr/bin/env bash
# tests/install/run_subproject_test.sh - ckpt built as a part of another
# project (add_subdirectory, as FetchContent does) with CKPT_WITH_MPI=OFF:
# the parent configures where the tests' and the tool's pkg-config modules
# are missing (ckpt builds only its libraries by default there), keeps its
# own build type (none: ckpt's RelWithDebInfo default was FORCE'd into the
# parent's cache), and its ctest lists only its own test, not ckpt's. With
# MODE "build" it also builds the parent's program against ckpt::ckpt_static,
# runs it, and installs the parent: its program alone (CKPT_INSTALL is OFF
# in a subproject).
# Usage: run_subproject_test.sh SOURCE_DIR CMAKE CC [build]
set -euo pipefail
if [ $# -lt 3 ] || [ $# -gt 4 ]; then
    echo "usage: $0 SOURCE_DIR CMAKE CC [build]" >&2
    exit 2
fi
src=$1 cmake=$2 cc=$3 mode=${4:-configure}
# shellcheck source-path=SCRIPTDIR source=install_lib.sh
. "$(dirname "$0")/install_lib.sh"
install_tmp subproject

mkdir -p "$tmp/app"
cat >"$tmp/app/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.16)
project(app C)
set(CKPT_WITH_MPI OFF CACHE STRING "")
add_subdirectory("$src" ckpt)
add_executable(app main.c)
target_link_libraries(app PRIVATE ckpt::ckpt_static)
install(TARGETS app RUNTIME DESTINATION bin)
enable_testing()
add_test(NAME app COMMAND app)
message(STATUS "app: build type '\${CMAKE_BUILD_TYPE}'")
CMAKE
cat >"$tmp/app/main.c" <<'C'
#include <ckpt.h>
#include <stdio.h>

int main(void)
{
    int64_t n = 0;
    ckpt_shape s = {2, {3, 4}};
    if (ckpt_shape_num_elements(&n, &s) != 0 || n != 12 ||
        ckpt_version_number() != CKPT_VERSION_NUMBER)
        return 1;
    printf("ckpt %s as a subproject\n", CKPT_VERSION_STRING);
    return 0;
}
C

PKG_CONFIG_LIBDIR=$tmp/no-modules PKG_CONFIG_PATH='' \
    "$cmake" -S "$tmp/app" -B "$tmp/b" -DCMAKE_C_COMPILER="$cc" \
    >"$tmp/configure.log" 2>&1 ||
    { cat "$tmp/configure.log" >&2; die "the parent did not configure"; }
echo "ok: the parent configures with no pkg-config module"

grep -qF "app: build type ''" "$tmp/configure.log" ||
    { cat "$tmp/configure.log" >&2; die "ckpt set the parent's build type"; }
grep -qx 'CMAKE_BUILD_TYPE:STRING=' "$tmp/b/CMakeCache.txt" ||
    die "the parent's cache: $(grep '^CMAKE_BUILD_TYPE' "$tmp/b/CMakeCache.txt")"
echo "ok: the parent's build type is its own"

for o in BUILD_TESTS BUILD_TOOLS BUILD_EXAMPLES BUILD_BENCH INSTALL; do
    grep -qx "CKPT_$o:BOOL=OFF" "$tmp/b/CMakeCache.txt" ||
        die "CKPT_$o: $(grep "^CKPT_$o" "$tmp/b/CMakeCache.txt")"
done
listed=$(cd "$tmp/b" && "$(dirname "$cmake")/ctest" -N | sed -n 's/^Total Tests: //p')
[ "$listed" = 1 ] || die "the parent's ctest lists $listed tests, not 1"
echo "ok: only the libraries are built, nothing installed; ctest lists the parent's one test"

if [ "$mode" = build ]; then
    "$cmake" --build "$tmp/b" --target app >"$tmp/build.log" 2>&1 ||
        { cat "$tmp/build.log" >&2; die "the parent's program did not build"; }
    out=$("$tmp/b/app") || die "the parent's program failed"
    case $out in
    "ckpt "*" as a subproject") ;;
    *) die "the parent's program printed '$out'" ;;
    esac
    echo "ok: the parent's program links ckpt::ckpt_static and runs"
    "$cmake" --install "$tmp/b" --prefix "$tmp/inst" >"$tmp/install.log" 2>&1 ||
        { cat "$tmp/install.log" >&2; die "the parent did not install"; }
    installed=$(cd "$tmp/inst" && find . -type f | sort | tr '\n' ' ')
    [ "$installed" = "./bin/app " ] ||
        die "the parent's install holds more than its program: $installed"
    echo "ok: the parent's install holds its program, nothing of ckpt's"
fi
