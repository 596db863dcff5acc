#!/usr/bin/env bash
# scripts/valgrind-cli.sh CKPT_BINARY TESTDATA_DIR - run the `ckpt` tool
# under valgrind memcheck over every TensorFlow test vector (inspect with
# all values, verify, ls, repack, diff): any memory error or leak fails.
# Exits 77 (skipped) when valgrind or the test vectors are absent.
set -u
bin=$1
data=$2
if ! command -v valgrind >/dev/null 2>&1; then
    echo "SKIPPED: valgrind is not installed"
    exit 77
fi
if [ ! -d "$data" ]; then
    echo "SKIPPED: $data is absent (TensorFlow test vectors are for developers and CI)"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
run() {
    local log="$tmp/vg.log"
    valgrind --quiet --error-exitcode=99 --leak-check=full \
        --errors-for-leak-kinds=definite,indirect,possible \
        --log-file="$log" "$bin" "$@" >/dev/null 2>&1
    local rc=$?
    if [ $rc -eq 99 ] || [ -s "$log" ]; then
        echo "valgrind: ckpt $*"
        cat "$log"
        failed=1
    fi
}
n=0
for dir in "$data"/*/; do
    dir=${dir%/}
    run inspect "$dir" --values=all
    run inspect "$dir" --json --values=3
    run verify "$dir" --json
    run ls "$dir"
    run repack "$dir" "$tmp/repacked-$n"
    run diff "$dir" "$tmp/repacked-$n"
    n=$((n + 1))
done
if [ $failed -ne 0 ]; then
    echo "valgrind found errors"
    exit 1
fi
echo "valgrind clean: $n test vectors"
