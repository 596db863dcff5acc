#!/usr/bin/env bash
# bench/bench_mpi.sh - the distributed saver (bench_mpi_save) on 1, 2 and 4
# ranks. Every figure is a ratio against a reference measured in the same
# repetition, right before or after it, the order alternating (blocking vs
# a memcpy of each rank's bytes with all ranks copying at once, without and
# with the mutation fence (trigger, a read-only pass and a collective, the
# fence: both waits); sync save
# vs `dd bs=4M conv=fsync` of the same total bytes; restore vs read() of
# each rank's file), next to noise-floor rows (dd vs dd, read() vs read():
# the reference against itself, no target); the table gives the median
# and range (min-max) over the repetitions and says "met" only when the
# whole range clears the target, as scripts/bench.sh does. Then the commit
# cost of checkpoints of 10^2 to 10^5 tiny tensors on 2 ranks. Each rank
# gets two cores where there are enough, else the ranks share all cores
# unbound (see binding below).
#
# Usage: bench/bench_mpi.sh [--raw] [BUILD_DIR] [MIB]
#   BUILD_DIR  a build with ckpt_mpi and bench_mpi_save (default build)
#   MIB        state size in MiB, split over the ranks (default 128)
#   --raw      print the per-repetition lines instead of the table
#              ("ratio<TAB>figure<TAB>le|ge|noise<TAB>target<TAB>value" and
#              "info<TAB>name<TAB>value"; scripts/bench.sh collects these)
#   REPS=N     repetitions (default 5, at least 5)
#   RANKS="1 2 4", ENTRIES=100,1000,10000,100000 (empty: no commit figures)
# Timing: run it under the machine's benchmark lock when others share the
# machine (flock /tmp/ckpt-bench.lock bench/bench_mpi.sh); it takes none
# itself, so scripts/bench.sh can call it while holding the lock.
set -euo pipefail
raw=0
if [ "${1:-}" = "--raw" ]; then
    raw=1
    shift
fi
build=${1:-build}
mib=${2:-128}
reps=${REPS:-5}
ranks=${RANKS:-1 2 4}
entries=${ENTRIES-100,1000,10000,100000}
if [ "$reps" -lt 5 ]; then
    echo "bench_mpi.sh: REPS must be at least 5" >&2
    exit 2
fi
prog=$build/bench/bench_mpi_save
if [ ! -x "$prog" ]; then
    echo "bench_mpi.sh: $prog not found (configure with MPI and build" \
        "bench_mpi_save)" >&2
    exit 2
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-bench-mpi.XXXXXX")
out=$dir.tsv
trap 'rm -rf "$dir" "$out"' EXIT
flags=()
openmpi=0
if grep -q "Open MPI\|OpenRTE" <<<"$(mpiexec --version 2>/dev/null)"; then
    openmpi=1
    flags=(--oversubscribe)
    [ "$(id -u)" -eq 0 ] && flags+=(--allow-run-as-root)
fi
# Binding: a rank needs two cores, one for its training (here: benchmark)
# thread and one for the saver's background writer and the restore's
# checksum helper. Open MPI binds each rank to one core when there are at
# most 2 ranks and the cores are not oversubscribed, which leaves both
# threads one core; so give each rank two cores of its own where there
# are enough (--map-by slot:PE=2), else bind nothing and let the kernel
# share the cores (docs/mpi.md, "Binding"). Other MPIs keep their default.
cores=$(nproc)
binding() { # ranks: the mpiexec options
    if [ $openmpi = 0 ]; then
        return
    elif [ $((2 * $1)) -le "$cores" ]; then
        echo "--map-by slot:PE=2"
    else
        echo "--bind-to none"
    fi
}
: >"$out"
for n in $ranks; do
    echo "bench_mpi.sh: $n rank(s) on $cores cores:" \
        "${flags[*]} $(binding "$n")" >&2
    # shellcheck disable=SC2046 # the options split into words on purpose
    mpiexec "${flags[@]}" $(binding "$n") -n "$n" "$prog" "$dir" \
        --mib "$mib" --reps "$reps" >>"$out"
    rm -rf "${dir:?}"/*
done
if [ -n "$entries" ]; then
    # shellcheck disable=SC2046
    mpiexec "${flags[@]}" $(binding 2) -n 2 "$prog" "$dir" \
        --entries "$entries" >>"$out"
fi
if [ $raw = 1 ]; then
    cat "$out"
    exit 0
fi
awk -f "$(dirname "$0")/table.awk" -v json=0 -v quick=0 \
    -v machine="$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)" \
    "$out"
