#!/usr/bin/env bash
# tests/install/run_install_test.sh - install a built ckpt tree into a
# temporary prefix and use it as a user would:
#   - the headers, libraries (+ soname links), CLI, ckpt.pc and CMake package
#     are where they belong; the shared library exports only ckpt_* symbols;
#     neither library nor the headers carry the tests' fault file system;
#   - `ckpt --version` runs from the prefix;
#   - consumer/ builds out of tree with find_package(ckpt) against ckpt::ckpt
#     (as README.md's "Use ckpt in your project" writes it), ckpt::ckpt_static
#     and ckpt::ckpt_shared, and with pkg-config (shared, with the README's
#     command line, run without LD_LIBRARY_PATH; and static with --static),
#     and each program runs and prints the expected values.
# Usage: run_install_test.sh BUILD_DIR SOURCE_DIR LIBDIR VERSION CC CMAKE
#        SANITIZER HAVE_CLI
# Exits 77 (CTest's skip) in sanitizer builds: the consumer would need the
# sanitizer runtime too. Set CKPT_KEEP_TMP=1 to keep the temporary prefix.
set -euo pipefail

if [ $# -ne 8 ]; then
    echo "usage: $0 BUILD_DIR SOURCE_DIR LIBDIR VERSION CC CMAKE SANITIZER HAVE_CLI" >&2
    exit 2
fi
build=$1 src=$2 libdir=$3 version=$4 cc=$5 cmake=$6 sanitizer=$7 have_cli=$8
# shellcheck source-path=SCRIPTDIR source=install_lib.sh
. "$(dirname "$0")/install_lib.sh"

install_skip_unless_usable "$sanitizer" "$libdir"
install_tmp install
lib=$prefix/$libdir
# The soname's version: MAJOR from 1.0 on, MAJOR.MINOR for 0.x, whose minor
# releases may break the ABI (the CMake package's SameMinorVersion).
major=${version%%.*}
minor=${version#*.}
minor=${minor%%.*}
if [ "$major" = 0 ]; then soversion=$major.$minor; else soversion=$major; fi

# expect_output NAME OUTPUT: the consumer's output has the expected values.
expect_output() {
    grep -qx "version=$version" <<<"$2" || die "$1: wrong version: $2"
    grep -qx "dtype1=float32" <<<"$2" || die "$1: wrong dtype name: $2"
    grep -q "^strerror=..*" <<<"$2" || die "$1: empty strerror: $2"
    echo "ok: $1 runs"
}
# needs_libckpt BINARY: whether BINARY loads libckpt.so at run time.
needs_libckpt() {
    local dyn
    dyn=$(readelf -d "$1") || return 1
    grep -q "NEEDED.*\[libckpt\.so" <<<"$dyn"
}

# ---- install ----------------------------------------------------------------
install_tree "$cmake" "$build"

need_file "$prefix/include/ckpt.h"
for h in "$src"/include/ckpt/*.h "$src"/include/ckpt/sys/*.h; do
    rel=${h#"$src"/}
    need_file "$prefix/$rel"
    cmp -s "$h" "$prefix/$rel" || die "$rel differs from the source"
done
need_file "$lib/libckpt.a"
need_file "$lib/libckpt.so.$version"
[ "$(readlink "$lib/libckpt.so.$soversion")" = "libckpt.so.$version" ] ||
    die "libckpt.so.$soversion does not link to libckpt.so.$version"
[ "$(readlink "$lib/libckpt.so")" = "libckpt.so.$soversion" ] ||
    die "libckpt.so does not link to libckpt.so.$soversion"
dynamic=$(readelf -d "$lib/libckpt.so.$version")
grep -qF "(SONAME)             Library soname: [libckpt.so.$soversion]" <<<"$dynamic" ||
    die "libckpt.so.$version has no soname libckpt.so.$soversion: $(
        grep SONAME <<<"$dynamic")"
need_file "$lib/pkgconfig/ckpt.pc"
for f in ckptConfig ckptConfigVersion ckptTargets; do
    need_file "$lib/cmake/ckpt/$f.cmake"
done
echo "ok: files installed"

# Only the public API leaves the shared library: no ckpt__ internals, no
# helpers without the prefix (symbols are hidden unless CKPT_EXTERN).
bad=$(nm -D --defined-only "$lib/libckpt.so.$version" | awk '{print $3}' |
    grep -Ev '^(ckpt_[a-z0-9]|_init$|_fini$)' || true)
[ -z "$bad" ] || die "libckpt.so exports non-API symbols:"$'\n'"$bad"
echo "ok: only ckpt_* symbols exported"

# A program that links libckpt.a (or libckpt_mpi.a) may define crc32c,
# snappy_uncompress or any other name of its own: every global symbol the
# archives define carries the ckpt_ prefix (ckpt__ for internals).
for a in "$lib/libckpt.a" "$lib/libckpt_mpi.a"; do
    [ -e "$a" ] || continue
    bad=$(nm -g --defined-only "$a" | awk 'NF == 3 {print $3}' |
        grep -Ev '^ckpt_[a-z0-9_]' | sort -u || true)
    [ -z "$bad" ] || die "$(basename "$a") defines unprefixed globals:"$'\n'"$bad"
done
echo "ok: the static archives define only ckpt_* globals"

# The fault-injecting file system belongs to the tests' own library
# (tests/support), not to what users link or include.
# (Outputs read whole before grep: under pipefail, `nm | grep -q` fails when
# grep's early exit stops nm with SIGPIPE.)
shared_syms=$(nm -D --defined-only "$lib/libckpt.so.$version") ||
    die "nm could not read libckpt.so.$version"
static_syms=$(nm --defined-only "$lib/libckpt.a" 2>/dev/null || true)
if grep -q ' ckpt_fs_fault_' <<<"$shared_syms" ||
    grep -q ' ckpt_fs_fault_' <<<"$static_syms"; then
    die "libckpt carries the test-only fault file system (ckpt_fs_fault_*)"
fi
[ ! -e "$prefix/include/ckpt/sys/fs_fault.h" ] ||
    die "the test-only header ckpt/sys/fs_fault.h is installed"
echo "ok: no test-only code installed"

# ---- the CLI ----------------------------------------------------------------
if [ "$have_cli" = 1 ]; then
    need_file "$prefix/bin/ckpt"
    out=$("$prefix/bin/ckpt" --version) || die "ckpt --version failed"
    [ "$out" = "ckpt $version" ] || die "ckpt --version printed: $out"
    echo "ok: installed ckpt --version"
fi

# ---- find_package(ckpt) ------------------------------------------------------
cbuild=$tmp/consumer-cmake
build_consumer consumer "$cmake" "$cc" "$src/tests/install/consumer" "$cbuild"
found=$(sed -n 's/^ckpt_DIR:PATH=//p' "$cbuild/CMakeCache.txt")
[ "$found" = "$lib/cmake/ckpt" ] || die "find_package(ckpt) found $found"
needs_libckpt "$cbuild/consumer_static" &&
    die "consumer_static loads libckpt.so"
needs_libckpt "$cbuild/consumer_shared" ||
    die "consumer_shared does not load libckpt.so"
needs_libckpt "$cbuild/app" || die "app (ckpt::ckpt) does not load libckpt.so"
expect_output "find_package ckpt::ckpt" "$(env -u LD_LIBRARY_PATH "$cbuild/app")"
expect_output "find_package ckpt::ckpt_static" "$("$cbuild/consumer_static")"
expect_output "find_package ckpt::ckpt_shared" "$("$cbuild/consumer_shared")"

# ---- a required component that is not there -----------------------------------
# find_package says why: CMake's own message was only "it set ckpt_FOUND to
# FALSE". expect_component_error PREFIX COMPONENT MESSAGE [LANGUAGES]
# (the consumer project's, default C).
expect_component_error() {
    local proj=$tmp/component-$2-${4:-C}
    mkdir -p "$proj"
    printf '%s\n' 'cmake_minimum_required(VERSION 3.16)' "project(c ${4:-C})" \
        "find_package(ckpt REQUIRED COMPONENTS $2)" >"$proj/CMakeLists.txt"
    "$cmake" -S "$proj" -B "$proj/build" -DCMAKE_PREFIX_PATH="$1" \
        -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON >"$proj/log" 2>&1 &&
        die "find_package(ckpt REQUIRED COMPONENTS $2) succeeded"
    grep -qF "$3" <<<"$(tr -s ' \n' ' ' <"$proj/log")" ||
        { cat "$proj/log" >&2; die "COMPONENTS $2: no message '$3'"; }
}
expect_component_error "$prefix" bogus \
    "unknown component 'bogus' (ckpt's one component is mpi)"
# A ckpt installed without MPI: the same tree less the mpi component.
cp -a "$prefix" "$tmp/nompi"
rm -f "$tmp/nompi/$libdir"/cmake/ckpt/ckptMpiTargets*.cmake
expect_component_error "$tmp/nompi" mpi \
    "component mpi: this ckpt was built without MPI (CKPT_WITH_MPI OFF, or MPI"
# A C++-only project: FindMPI would fail with "language C is not enabled".
if [ -f "$lib/cmake/ckpt/ckptMpiTargets.cmake" ]; then
    expect_component_error "$prefix" mpi \
        "component mpi: ckpt::ckpt_mpi links MPI's C library, which find_package(MPI) looks for only in a project with the C language enabled: enable it (project(app C CXX), or enable_language(C) before find_package(ckpt))" \
        CXX
fi
echo "ok: a missing component is named"

# ---- the README's own lines ----------------------------------------------------
readme=$src/README.md
for line in 'find_package(ckpt REQUIRED)' \
    'target_link_libraries(app PRIVATE ckpt::ckpt)' \
    'cc main.c -o app $(pkg-config --cflags --libs ckpt)'; do
    grep -qF -- "$line" "$readme" || die "README.md no longer shows: $line"
    [ "$line" = "${line#cc }" ] &&
        { grep -qF -- "$line" "$src/tests/install/consumer/CMakeLists.txt" ||
            die "consumer/CMakeLists.txt lacks the README's: $line"; }
done
echo "ok: README's lines are the ones tested"

# ---- pkg-config --------------------------------------------------------------
export PKG_CONFIG_PATH="$lib/pkgconfig"
mv=$(pkg-config --modversion ckpt) || die "pkg-config cannot find ckpt"
[ "$mv" = "$version" ] || die "pkg-config --modversion ckpt gave $mv"
read -r -a cflags <<<"$(pkg-config --cflags ckpt)"
read -r -a slibs <<<"$(pkg-config --static --libs ckpt)"
pbuild=$tmp/consumer-pc
mkdir -p "$pbuild"
# As README.md writes it (with the compiler under test for "cc").
cp "$src/tests/install/consumer/main.c" "$pbuild/main.c"
(cd "$pbuild" && eval "\"$cc\" main.c -o app \$(pkg-config --cflags --libs ckpt)") ||
    die "pkg-config: the README's build line failed"
needs_libckpt "$pbuild/app" || die "pkg-config shared: no libckpt.so"
grep -qF "[libckpt.so.$soversion]" <<<"$(readelf -d "$pbuild/app")" ||
    die "pkg-config shared: app does not need libckpt.so.$soversion"
# No LD_LIBRARY_PATH: the rpath in ckpt.pc's Libs finds the library.
expect_output "pkg-config shared, no LD_LIBRARY_PATH" \
    "$(env -u LD_LIBRARY_PATH "$pbuild/app")"
# --static: take libckpt.a whole, so every one of its objects' dependencies
# must be in Libs.private.
static_libs=()
for f in "${slibs[@]}"; do
    if [ "$f" = -lckpt ]; then
        static_libs+=("-Wl,--whole-archive" -l:libckpt.a "-Wl,--no-whole-archive")
    else
        static_libs+=("$f")
    fi
done
"$cc" "${cflags[@]}" -o "$pbuild/static" "$src/tests/install/consumer/main.c" \
    "${static_libs[@]}" || die "pkg-config: static build failed"
needs_libckpt "$pbuild/static" && die "pkg-config static loads libckpt.so"
expect_output "pkg-config --static" "$("$pbuild/static")"
# As README.md writes the static link: the ckpt-static package.
(cd "$pbuild" && eval "\"$cc\" main.c -o app-static \$(pkg-config --cflags --libs ckpt-static)") ||
    die "pkg-config: the README's static build line failed"
needs_libckpt "$pbuild/app-static" && die "ckpt-static loads libckpt.so"
expect_output "pkg-config ckpt-static" "$("$pbuild/app-static")"

echo "PASS"
