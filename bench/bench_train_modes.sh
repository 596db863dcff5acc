#!/usr/bin/env bash
# bench/bench_train_modes.sh [CKPT_TRAIN] [DIR] [BENCH_ASYNC_SAVE] - the demo
# trainer with a few hundred MiB of state: --mode none, async and sync with
# a checkpoint every few seconds, interleaved (each repetition runs the
# three modes, in an order that rotates from one repetition to the next),
# REPS repetitions (default and minimum 5). Each run's time is its whole
# process (start-up, initial and final checkpoints included), taken by
# `bench_async_save --run-timed`: wall clock, and wall clock less the time
# its main thread waited for a CPU other threads held. Prints JSON: per
# mode, the median and range (min-max) over the repetitions of its time
# against --mode none's in the same repetition, both ways, and the last
# run's summary line.
set -euo pipefail
train=${1:-build/tools/ckpt-train/ckpt-train}
dir=${2:-bench-tmp/train-modes}
bench=${3:-$(dirname "$train")/../../bench/bench_async_save}
steps=${STEPS:-40}
reps=${REPS:-5}
if [ "$reps" -lt 5 ]; then
    echo "bench_train_modes.sh: REPS must be at least 5" >&2
    exit 2
fi
args=(--hidden "${HIDDEN:-3072}" --layers 3 --batch 16 --steps "$steps"
      --save-secs "${SAVE_SECS:-3}" --keep 2 --quiet)
modes=(none async sync)
declare -A wall net summary
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
for r in $(seq 1 "$reps"); do
    for k in 0 1 2; do
        mode=${modes[$(((r + k) % 3))]}
        rm -rf "${dir:?}/$mode"
        mkdir -p "$dir/$mode"
        out=$("$bench" --run-timed "$train" --dir "$dir/$mode" --mode "$mode" \
            "${args[@]}")
        read -r w q < <(echo "$out" |
            sed -n 's/^timed: wall_s=\([0-9.]*\) runqueue_s=\([0-9.]*\)$/\1 \2/p')
        wall[$mode]=$w
        net[$mode]=$(awk -v w="$w" -v q="$q" 'BEGIN { print w - q }')
        summary[$mode]=$(echo "$out" | grep '^summary:')
    done
    for mode in async sync; do
        awk -v m="$mode" -v a="${net[$mode]}" -v b="${net[none]}" \
            -v c="${wall[$mode]}" -v d="${wall[none]}" \
            'BEGIN { printf "%s %.6f %.6f\n", m, a / b, c / d }' >>"$raw"
    done
done
mib=$(ls -l "$dir"/sync/*.data-* | awk 'NR==1{printf "%.1f", $5/1048576}')
rm -rf "$dir"
stats() { # mode column -> "median min max"
    awk -v m="$1" -v c="$2" '$1 == m { v[++n] = $c } END {
        for (i = 2; i <= n; i++)
            for (j = i; j > 1 && v[j - 1] > v[j]; j--) {
                t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
        med = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
        printf "%.4f %.4f %.4f\n", med, v[1], v[n] }' "$raw"
}
printf '{"benchmark": "train_modes", "steps": %d, "reps": %d, ' "$steps" "$reps"
printf '"checkpoint_mib": %s,\n' "$mib"
for mode in async sync; do
    read -r nm nlo nhi < <(stats "$mode" 2)
    read -r wm wlo whi < <(stats "$mode" 3)
    printf ' "%s": {"vs_none": {"median": %s, "min": %s, "max": %s},\n' \
        "$mode" "$nm" "$nlo" "$nhi"
    printf '   "vs_none_wall_clock": {"median": %s, "min": %s, "max": %s},\n' \
        "$wm" "$wlo" "$whi"
    printf '   "summary": "%s"}%s\n' "${summary[$mode]}" \
        "$([ $mode = sync ] && echo "}" || echo ",")"
done
