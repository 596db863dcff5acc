#!/usr/bin/env bash
# scripts/cross-crc.sh - the CRC-32C tests (tests/util/test_crc32c.c) built
# for AArch64 and run under qemu-user: the armv8 implementation of
# src/util/crc32c.c (the CRC extension's crc32c instructions) against the
# bit-serial reference and the portable one, which an x86-64 build never
# compiles. Installs, as root, Debian's cross compiler, qemu-user and
# cmocka for arm64 (multiarch) when they are missing; where the arm64
# packages cannot be had it says so and exits 0 (nothing was checked).
#   scripts/cross-crc.sh [BUILD_DIR]   (default build-aarch64)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build-aarch64}
cc=aarch64-linux-gnu-gcc
sysroot=/usr/aarch64-linux-gnu

have_tools() {
    command -v "$cc" >/dev/null 2>&1 && command -v qemu-aarch64 >/dev/null 2>&1 &&
        [ -e /usr/lib/aarch64-linux-gnu/libcmocka.so ]
}

if ! have_tools; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "cross-crc: skipped: needs $cc, qemu-aarch64 and libcmocka-dev:arm64; as root:" >&2
        echo "  dpkg --add-architecture arm64 && apt-get update &&" \
            "apt-get install -y gcc-aarch64-linux-gnu libc6-dev-arm64-cross" \
            "qemu-user libcmocka-dev:arm64" >&2
        exit 0
    fi
    added=0
    if ! dpkg --print-foreign-architectures | grep -x arm64 >/dev/null; then
        dpkg --add-architecture arm64
        added=1
    fi
    if ! apt-get update -qq ||
        ! DEBIAN_FRONTEND=noninteractive apt-get install -y gcc-aarch64-linux-gnu \
            libc6-dev-arm64-cross qemu-user libcmocka-dev:arm64 >/dev/null; then
        echo "cross-crc: skipped: the arm64 packages could not be installed" >&2
        if [ "$added" = 1 ]; then
            dpkg --remove-architecture arm64 || true
            apt-get update -qq || true
        fi
        exit 0
    fi
fi

mkdir -p "$out"
# test_crc32c.c needs the CRC code and what it calls in src/common (the
# clock, huge mappings, errors and their allocator).
"$cc" -std=c11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -Isrc -Iinclude -Itests \
    tests/util/test_crc32c.c src/util/crc32c.c src/util/crc32c_combine.c \
    src/util/crc32c_fold.c src/common/huge_map.c src/common/clock.c \
    src/common/errors.c src/common/alloc.c src/common/printable.c \
    src/common/options.c -o "$out/test_crc32c" -lcmocka -lpthread

status=0
for impl in "" portable; do
    log="$out/test_crc32c${impl:+_$impl}.log"
    forced=(env -u CKPT_CRC32C_IMPL)
    [ -n "$impl" ] && forced=(env CKPT_CRC32C_IMPL="$impl")
    if ! "${forced[@]}" QEMU_LD_PREFIX=$sysroot qemu-aarch64 \
        "$out/test_crc32c" >"$log" 2>&1; then
        echo "cross-crc: FAILED (CKPT_CRC32C_IMPL='$impl'):" >&2
        tail -n 40 "$log" >&2
        status=1
        continue
    fi
    # qemu's default CPU has the CRC extension: the default run must have
    # chosen armv8, or the checks above tested only the portable code.
    want=${impl:-armv8}
    if ! grep -q "crc32c in use: $want " "$log"; then
        echo "cross-crc: FAILED: expected '$want' in use:" >&2
        grep "in use" "$log" >&2 || true
        status=1
        continue
    fi
    echo "cross-crc: aarch64 test_crc32c passed with $want in use"
done
exit $status
