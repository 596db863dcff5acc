#!/usr/bin/env bash
# scripts/test.sh - build ckpt with warnings as errors and run the tests.
#   scripts/test.sh            the fast suite (CTest label "unit") in build/
#   scripts/test.sh --asan     the same under ASan+UBSan in build-asan/
#   scripts/test.sh --tsan     the same under TSan in build-tsan/
#   scripts/test.sh --all      every test, all labels, in build/
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh

build=build sanitizer="" label="-L unit"
case "${1:-}" in
    "") ;;
    --asan) build=build-asan sanitizer=address ;;
    --tsan) build=build-tsan sanitizer=thread ;;
    --all) label="" ;;
    *) echo "usage: scripts/test.sh [--asan|--tsan|--all]" >&2; exit 2 ;;
esac

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCKPT_WERROR=ON \
      -DCKPT_SANITIZER="$sanitizer" >/dev/null
cmake --build "$build" -j"$(nproc)"
# shellcheck disable=SC2086
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" $label
