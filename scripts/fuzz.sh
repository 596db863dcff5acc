#!/usr/bin/env bash
# scripts/fuzz.sh - build the libFuzzer targets with clang in build-fuzz/ and
# run each of them (CTest label "fuzz"), seeded from the committed corpora,
# the committed regressions and, when ../shared/testdata/tf is present, the
# TensorFlow-written vectors.
#   scripts/fuzz.sh                 short form: 60 s per target (2 at a time)
#   scripts/fuzz.sh --long          long form: 30 min per target
#   scripts/fuzz.sh --seconds N     N seconds per target
#   scripts/fuzz.sh --replay        only replay the committed inputs
# A crash fails the run and leaves its input in
# build-fuzz/fuzz/artifacts/<target>/: copy it to fuzz/regressions/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=short seconds=60
case "${1:-}" in
    "") ;;
    --long) mode=long seconds=1800 ;;
    --seconds)
        [ $# -eq 2 ] && [ "$2" -gt 0 ] 2>/dev/null || {
            echo "usage: scripts/fuzz.sh --seconds N" >&2; exit 2; }
        seconds=$2 ;;
    --replay) mode=replay ;;
    *) echo "usage: scripts/fuzz.sh [--long|--seconds N|--replay]" >&2; exit 2 ;;
esac

scripts/deps.sh
# clang and its libFuzzer runtime (Debian 12: libclang-rt-14-dev)
missing=()
for p in clang libclang-rt-14-dev; do
    if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
        missing+=("$p")
    fi
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ]; then
        echo "fuzz: installing ${missing[*]}" >&2
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >/dev/null
    else
        echo "fuzz: missing Debian packages; run as root:" >&2
        echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
        exit 1
    fi
fi

build=build-fuzz
long=OFF label='^fuzz$'
if [ "$mode" = long ]; then
    long=ON label='^fuzz-long$'
fi
CC=clang cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCKPT_WERROR=ON -DCKPT_BUILD_FUZZERS=ON -DCKPT_BUILD_TESTS=ON \
      -DCKPT_BUILD_TOOLS=OFF -DCKPT_BUILD_EXAMPLES=OFF -DCKPT_BUILD_BENCH=OFF \
      -DCKPT_FUZZ_SECONDS="$seconds" -DCKPT_FUZZ_LONG_SECONDS="$seconds" \
      -DCKPT_FUZZ_LONG="$long" >/dev/null
cmake --build "$build" -j"$(nproc)" --target ckpt_fuzz_all

if [ "$mode" = replay ]; then
    exec "$build"/fuzz/ckpt_fuzz_replay --tree fuzz
fi
# Two fuzzers at a time: each is one process on one core.
status=0
ctest --test-dir "$build" --output-on-failure -j2 -L "$label" || status=$?
echo "fuzz: executions per target (no crash unless reported above):"
grep -h "executions in" "$build"/Testing/Temporary/LastTest.log | sed 's/^-- /  /' || true
exit $status
