# tests/install/install_lib.sh - what run_install_test.sh and
# run_install_mpi_test.sh share, sourced once they have read their
# arguments: the skips (a sanitizer build, an absolute libdir), the
# temporary directory, die and need_file, installing the build tree into a
# prefix, and building a consumer project against that prefix with CMake.
# shellcheck shell=bash

# install_skip_unless_usable SANITIZER LIBDIR: exit 77 (CTest's skip) where
# an installed tree cannot be used as these tests use it.
install_skip_unless_usable() {
    if [ -n "$1" ]; then
        echo "SKIP: sanitizer build ($1): consumers would need its runtime"
        exit 77
    fi
    case $2 in
    /*)
        echo "SKIP: absolute CMAKE_INSTALL_LIBDIR ($2) ignores --prefix"
        exit 77
        ;;
    esac
}

# install_tmp TAG: a fresh directory in $tmp, removed at exit unless
# CKPT_KEEP_TMP is set; $prefix below it is where the tree is installed.
install_tmp() {
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-$1.XXXXXX")
    if [ -z "${CKPT_KEEP_TMP:-}" ]; then
        trap 'rm -rf "$tmp"' EXIT
    else
        echo "keeping $tmp"
    fi
    prefix=$tmp/prefix
}

die() {
    echo "FAIL: $*" >&2
    exit 1
}

need_file() {
    [ -f "$1" ] || die "not installed: ${1#"$prefix"/}"
}

# install_tree CMAKE BUILD_DIR: cmake --install into $prefix.
install_tree() {
    "$1" --install "$2" --prefix "$prefix" >"$tmp/install.log" ||
        { cat "$tmp/install.log" >&2; die "cmake --install failed"; }
}

# build_consumer NAME CMAKE CC SOURCE_DIR BUILD_DIR: configure the consumer
# project with only $prefix to find packages in, and build it.
build_consumer() {
    "$2" -S "$4" -B "$5" -DCMAKE_C_COMPILER="$3" -DCMAKE_PREFIX_PATH="$prefix" \
        -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON >"$tmp/cmake.log" 2>&1 ||
        { cat "$tmp/cmake.log" >&2; die "$1: CMake configure failed"; }
    "$2" --build "$5" >"$tmp/build.log" 2>&1 ||
        { cat "$tmp/build.log" >&2; die "$1: CMake build failed"; }
}
