#!/usr/bin/env bash
# tests/install/run_configure_deps_test.sh - configuring ckpt where the
# optional parts' pkg-config modules are missing (PKG_CONFIG_LIBDIR points
# at nothing): the default configure names json-c, its Debian package and
# -DCKPT_BUILD_TOOLS=OFF; without the tool it names cmocka and
# -DCKPT_BUILD_TESTS=OFF; without both the library configures, as README
# says it needs only libc and pthreads. (FindPkgConfig's own message was
# only "A required package was not found".)
# Usage: run_configure_deps_test.sh SOURCE_DIR CMAKE
set -euo pipefail
if [ $# -ne 2 ]; then
    echo "usage: $0 SOURCE_DIR CMAKE" >&2
    exit 2
fi
src=$1 cmake=$2
# shellcheck source-path=SCRIPTDIR source=install_lib.sh
. "$(dirname "$0")/install_lib.sh"
install_tmp configure-deps

# configure NAME OPTION...: configure into $tmp/NAME with no pkg-config
# module to be found; the output in $tmp/NAME.log, the status returned.
configure() {
    local name=$1
    shift
    PKG_CONFIG_LIBDIR=$tmp/no-modules PKG_CONFIG_PATH='' \
        "$cmake" -S "$src" -B "$tmp/$name" -DCKPT_WITH_MPI=OFF "$@" \
        >"$tmp/$name.log" 2>&1
}
# expect_message NAME TEXT: the log says TEXT (lines joined).
expect_message() {
    grep -qF "$2" <<<"$(tr -s ' \n' ' ' <"$tmp/$1.log")" ||
        { cat "$tmp/$1.log" >&2; die "$1: no message '$2'"; }
}

configure default && die "configured without json-c"
expect_message default "ckpt: the ckpt tool needs json-c: pkg-config finds no module 'json-c'. Install it (Debian: libjson-c-dev;"
expect_message default "or configure with -DCKPT_BUILD_TOOLS=OFF: the library itself needs only libc and pthreads."
echo "ok: the tool's missing json-c is named"

configure no-tools -DCKPT_BUILD_TOOLS=OFF && die "configured without cmocka"
expect_message no-tools "ckpt: the test suite needs cmocka: pkg-config finds no module 'cmocka'. Install it (Debian: libcmocka-dev;"
expect_message no-tools "or configure with -DCKPT_BUILD_TESTS=OFF"
echo "ok: the tests' missing cmocka is named"

configure library -DCKPT_BUILD_TOOLS=OFF -DCKPT_BUILD_TESTS=OFF ||
    { cat "$tmp/library.log" >&2; die "the library alone did not configure"; }
echo "ok: the library configures with no pkg-config module"
