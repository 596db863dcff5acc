#!/usr/bin/env bash
# scripts/bench.sh - run every benchmark and print one table of ratios.
#
#   scripts/bench.sh            full run (64 and 256 MiB states, ckpt-train
#                               with 145 MiB of state; ~11 min on 2 cores)
#   scripts/bench.sh --quick    smaller states and runs (~4 min there)
#   scripts/bench.sh --json     the same figures as JSON (with --quick too)
#   REPS=N scripts/bench.sh     repetitions per figure (default 5, at least 5)
#   ONLY=saver|train scripts/bench.sh   only bench_async_save's figures, or
#                               only ckpt-train's and ckpt verify's (no
#                               MPI figures either way)
#
# Every figure is a ratio measured against a reference taken in the same
# repetition, right before or after it (paired, interleaved); the table
# gives the median and the range (min-max) over the repetitions. A figure
# is "met" only when its whole range is on the right side of the target;
# when the median is but the range crosses the target it is "not met
# (spread crosses)". A "noise floor" row (op "noise", no target) times a
# reference against itself, paired the same way: the spread this machine
# gives two identical runs, next to the figures that use that reference.
# Time figures of the loop and of ckpt-train are net of
# run-queue waits (wall clock less the time the loop's thread was ready to
# run while other threads held the CPU, from the kernel's schedstat), so
# that other jobs on a shared machine do not swamp a 3% effect; the same
# figures from the plain wall clock are printed too ("wall clock").
# Builds build-bench/ (Release) first. Raw lines go to
# bench-tmp/ratios.tsv.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0 json=0
for a in "$@"; do
    case "$a" in
        --quick) quick=1 ;;
        --json) json=1 ;;
        *) echo "usage: scripts/bench.sh [--quick] [--json]" >&2; exit 2 ;;
    esac
done
reps=${REPS:-5}
only=${ONLY:-}
case "$only" in
    "" | saver | train) ;;
    *) echo "bench.sh: ONLY must be saver or train" >&2; exit 2 ;;
esac
if [ "$reps" -lt 5 ]; then
    echo "bench.sh: REPS must be at least 5" >&2
    exit 2
fi

build=build-bench
tmp=bench-tmp
log() { echo "bench.sh: $*" >&2; }

log "building $build (Release)"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" \
    --target bench_async_save ckpt_train ckpt_cli >/dev/null
bench=$build/bench/bench_async_save
train=$build/tools/ckpt-train/ckpt-train
ckpt=$build/tools/ckpt/ckpt
rm -rf "$tmp"
mkdir -p "$tmp"
ratios=$tmp/ratios.tsv
: >"$ratios"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

now() { date +%s.%N; }
ratio() { # figure op target value
    printf 'ratio\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$ratios"
}
info() { # figure value (a component, no target: no verdict)
    printf 'info\t%s\t%s\n' "$1" "$2" >>"$ratios"
}
div() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", a / b }'; }

# ---- the saver: blocking, write, loop, restore ------------------------------
if [ $quick = 1 ]; then
    sizes=64 qflag=--quick
else
    sizes=64,256 qflag=
fi
if [ "$only" != train ]; then
log "bench_async_save --sizes $sizes --reps $reps $qflag"
"$bench" --dir "$tmp/saver" --sizes "$sizes" --reps "$reps" $qflag \
    >>"$ratios"
rm -rf "$tmp/saver"
fi

bytes=0 read_sum=0
if [ "$only" != saver ]; then
# ---- ckpt-train: whole runs, none and async interleaved ---------------------
if [ $quick = 1 ]; then
    model=(--hidden 1024 --layers 4 --batch 16) run_s=8
else
    model=(--hidden 2048 --layers 4 --batch 16) run_s=15
fi
# Steps for a run of about run_s seconds, from short runs without saves
# (--mode none writes no checkpoint, so each starts at step 0): the rate
# of 60 steps less that of 20 leaves out the start-up.
t0=$(now)
"$train" --dir "$tmp/calib" --mode none --steps 20 --quiet "${model[@]}" \
    >/dev/null
t20=$(awk -v t="$(now)" -v t0="$t0" 'BEGIN { print t - t0 }')
t0=$(now)
"$train" --dir "$tmp/calib" --mode none --steps 60 --quiet "${model[@]}" \
    >/dev/null
rate=$(awk -v t="$(now)" -v t0="$t0" -v a="$t20" 'BEGIN {
    d = (t - t0) - a; print (d > 0 ? 40 / d : 60 / (t - t0)) }')
steps=$(awk -v r="$rate" -v s="$run_s" 'BEGIN { n = int(r * s); print (n < 30 ? 30 : n) }')
rm -rf "$tmp/calib"
log "ckpt-train ${model[*]}: $steps steps per run, a save every 1.5 s"
train_run() { # mode dir -> prints "wall net", then the summary line
    rm -rf "$2"
    mkdir -p "$2"
    local out
    out=$("$bench" --run-timed "$train" --dir "$2" --mode "$1" \
        --steps "$steps" --save-secs 1.5 --keep 2 --quiet "${model[@]}")
    echo "$out" | sed -n 's/^timed: wall_s=\([0-9.]*\) runqueue_s=\([0-9.]*\)$/\1 \2/p' |
        awk '{ printf "%.6f %.6f\n", $1, $1 - $2 }'
    echo "$out" | grep '^summary:'
}
state_mib=
# Each repetition runs none, async, none: the async run is compared with
# the mean of the two none runs around it (a drift of the machine's speed
# over the three weighs on both sides alike), and the second none run with
# the first gives the noise floor: how far apart two identical runs land
# here (one run against one, so its spread is somewhat wider than that of
# a run against the mean of two).
for r in $(seq 1 "$reps"); do
    i=0
    for mode in none async none; do
        i=$((i + 1))
        res=$(train_run "$mode" "$tmp/train-$mode")
        declare "t_$i=$(echo "$res" | sed -n 1p)"
        declare "s_$i=$(echo "$res" | tail -n 1)"
    done
    s_async=$s_2
    if [ -z "$state_mib" ]; then
        state_mib=$(ls -l "$tmp"/train-async/*.data-* | awk 'NR == 1 {
            printf "%d", $5 / 1048576 + 0.5 }')
    fi
    p50=$(echo "$s_async" | sed -n 's/.*blocking_ms_p50=\([0-9.]*\).*/\1/p')
    memcpy_s=$("$bench" --memcpy "$state_mib")
    # fields of t_i: wall, net
    net_none=$(awk -v a="${t_1#* }" -v b="${t_3#* }" 'BEGIN { print (a + b) / 2 }')
    wall_none=$(awk -v a="${t_1% *}" -v b="${t_3% *}" 'BEGIN { print (a + b) / 2 }')
    ratio "ckpt-train async vs none, whole run, $state_mib MiB" le 1.03 \
        "$(div "${t_2#* }" "$net_none")"
    ratio "ckpt-train none vs none, whole run (noise floor), $state_mib MiB" \
        noise 0 "$(div "${t_3#* }" "${t_1#* }")"
    ratio "ckpt-train async vs none, whole run, wall clock, $state_mib MiB" \
        le 1.03 "$(div "${t_2% *}" "$wall_none")"
    ratio "ckpt-train blocking p50 vs memcpy of the state, $state_mib MiB" \
        le 0.1 "$(div "$(awk -v p="$p50" 'BEGIN { print p / 1000 }')" \
        "$memcpy_s")"
    # The async run's fixed costs beyond the none runs': creating the
    # session (the initial checkpoint's snapshot) and closing it (a write in
    # flight, then the final checkpoint, durable), from the summary lines;
    # their sum against the none runs' time is the part of the whole-run
    # figure that does not depend on the run's length.
    fixed=$(for l in "$s_1" "$s_2" "$s_3"; do
        echo "$l" | sed -n 's/.* start_ms=\([0-9.]*\) close_ms=\([0-9.]*\).*/\1 \2/p'
    done | awk 'NR == 2 { sa = $1; ca = $2; next } { sn += $1 / 2; cn += $2 / 2 }
        END { printf "%.6f %.6f", (sa - sn) / 1000, (ca - cn) / 1000 }')
    info "ckpt-train async: session start beyond none's, s" "${fixed% *}"
    info "ckpt-train async: session close beyond none's, s" "${fixed#* }"
    info "ckpt-train async: those fixed costs vs none's whole run" \
        "$(div "$(awk -v f="$fixed" 'BEGIN { split(f, x, " "); print x[1] + x[2] }')" \
        "$net_none")"
done
log "last async run: $s_async"

# ---- ckpt verify, cold, vs read() of the checkpoint's files -----------------
prefix=$(sed -n 's/^model_checkpoint_path: "\(.*\)"$/\1/p' \
    "$tmp/train-async/checkpoint")
files=("$tmp/train-async/$prefix".*)
bytes=$(cat "${files[@]}" | wc -c)
# Seconds COMMAND... takes, the checkpoint's files dropped from the page
# cache first.
cold_s() {
    local t0
    "$bench" --drop-cache "${files[@]}"
    t0=$(now)
    "$@" >/dev/null || return 1
    awk -v t="$(now)" -v t0="$t0" 'BEGIN { print t - t0 }'
}
# One cold read first, untimed: on a VM the first read of a file just
# written can run several times slower than the next (seen on the EPYC VM:
# cat 191 ms, then 43-47 ms; ckpt verify 85 ms, then 44-46 ms), which would
# land on whichever side of the first pair ran first.
cold_s cat "${files[@]}" >/dev/null
read_sum=0
for r in $(seq 1 "$reps"); do
    t_read=$(cold_s cat "${files[@]}")
    t_verify=$(cold_s "$ckpt" verify "$tmp/train-async/$prefix")
    ratio "ckpt verify, cold, vs read() of its files, $state_mib MiB" ge 0.9 \
        "$(div "$t_read" "$t_verify")"
    read_sum=$(awk -v a="$read_sum" -v b="$t_read" 'BEGIN { print a + b }')
    # the noise floor: cat against cat, paired the same way
    t_read=$(cold_s cat "${files[@]}")
    t_cat=$(cold_s cat "${files[@]}")
    ratio "cat vs cat, cold (noise floor), $state_mib MiB" noise - \
        "$(div "$t_read" "$t_cat")"
done
fi

# ---- BEGIN mpi: the distributed saver (optional) ----------------------------
# Kept in this one block (its owner: src/mpi, bench/bench_mpi*). Runs only
# when the MPI library builds; bench/bench_mpi.sh prints the same paired
# ratio lines and noise floors (1, 2 and 4 ranks; two cores per rank where
# there are enough, else unbound and oversubscribed where cores are fewer).
if [ -z "$only" ] && cmake --build "$build" -j"$(nproc)" \
    --target bench_mpi_save >/dev/null 2>&1; then
    if [ $quick = 1 ]; then mpi_mib=64; else mpi_mib=128; fi
    log "bench_mpi.sh: $mpi_mib MiB on 1, 2 and 4 ranks"
    REPS=$reps ENTRIES='' bench/bench_mpi.sh --raw "$build" "$mpi_mib" |
        grep '^ratio' >>"$ratios"
elif [ -z "$only" ]; then
    log "no MPI build: the distributed saver's figures are left out"
fi
# ---- END mpi -------------------------------------------------------------------

# ---- the machine --------------------------------------------------------------
# memcpy, the cold read() above, and the disk's write speed: dd of as many
# bytes as the biggest state, flushed (conv=fsync), into the bench directory.
memcpy64=$("$bench" --memcpy 64)
dd_mib=$([ $quick = 1 ] && echo 64 || echo 256)
dd_line=$(LC_ALL=C dd if=/dev/zero of="$tmp/dd.bin" bs=1M count="$dd_mib" conv=fsync \
    2>&1 | tail -n 1)
rm -f "$tmp/dd.bin"
dd_gbs=$(echo "$dd_line" | awk -v b=$((dd_mib * 1048576)) '{
    for (i = 1; i <= NF; i++) if ($i == "s," && i > 1) s = $(i - 1)
    if (s > 0) printf "%.1f", b / s / 1e9; else printf "?" }')
# The read-ahead of the bench directory's device (cold reads depend on it):
# the disk's queue, or its parent's for a partition; "?" where not found.
dev=$(stat -c '%Hd:%Ld' "$tmp" 2>/dev/null || echo none)
ra_kb=$({ cat "/sys/dev/block/$dev/queue/read_ahead_kb" \
    "/sys/dev/block/$dev/../queue/read_ahead_kb" 2>/dev/null || true; } |
    head -n 1)
machine=$(awk -v m="$memcpy64" -v b="$bytes" -v s="$read_sum" -v n="$reps" \
    -v c="$(nproc)" -v d="$dd_gbs" -v l0="$load_start" -v ra="${ra_kb:-?}" \
    -v l="$(cut -d' ' -f1-3 /proc/loadavg)" 'BEGIN {
    cold = s > 0 ? sprintf("%.1f GB/s", b * n / s / 1e9) : "not measured"
    printf "%d cores, memcpy %.1f GB/s (64 MiB), cold read() %s, " \
           "read_ahead_kb %s, disk write (dd conv=fsync) %s GB/s, load " \
           "average %s at the start, %s at the end", c, 67108864 / m / 1e9, \
           cold, ra, d, l0, l }')
rm -rf "$tmp"/train-*

# ---- the table -----------------------------------------------------------------
mkdir -p "$tmp"
awk -f bench/table.awk -v json=$json -v machine="$machine" -v quick=$quick \
    "$ratios"
