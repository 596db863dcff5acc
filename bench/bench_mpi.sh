#!/usr/bin/env bash
# bench/bench_mpi.sh - the distributed saver on 1, 2 and 4 ranks next to
# `dd conv=fsync` of the same total bytes, in one run (ratios only; see
# docs/mpi.md). Usage: bench/bench_mpi.sh [BUILD_DIR] [MIB]
set -euo pipefail
build=${1:-build}
mib=${2:-256}
dir=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-bench-mpi.XXXXXX")
trap 'rm -rf "$dir"' EXIT
flags=()
if mpiexec --version 2>/dev/null | grep -q "Open MPI\|OpenRTE"; then
    flags=(--oversubscribe)
    [ "$(id -u)" -eq 0 ] && flags+=(--allow-run-as-root)
fi
start=$(date +%s.%N)
dd if=/dev/zero of="$dir/dd.out" bs=4M count=$((mib / 4)) conv=fsync status=none
end=$(date +%s.%N)
rm -f "$dir/dd.out"
echo "dd_mib_s=$(echo "$mib / ($end - $start)" | bc -l | cut -c1-7)"
for n in 1 2 4; do
    mpiexec "${flags[@]}" -n "$n" "$build/bench/bench_mpi_save" "$dir" \
        --mib "$mib" --reps 3 | tr '\n' ' '
    echo
    rm -rf "${dir:?}"/*
done
mpiexec "${flags[@]}" -n 2 "$build/bench/bench_mpi_save" "$dir" \
    --entries 100,1000,10000,100000
