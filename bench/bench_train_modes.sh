#!/usr/bin/env bash
# bench/bench_train_modes.sh [CKPT_TRAIN] [DIR] - the demo trainer with a
# few hundred MiB of state, in one run: --mode none, async and sync with a
# checkpoint every few seconds. Prints JSON with each mode's training-loop
# steps/s (from the first step to the last, as the trainer reports it: the
# initial and the final checkpoint fall outside) and its ratio to
# --mode none, plus the trainer's own summary lines.
set -euo pipefail
train=${1:-build/tools/ckpt-train/ckpt-train}
dir=${2:-bench-tmp/train-modes}
steps=${STEPS:-40}
args=(--hidden "${HIDDEN:-3072}" --layers 3 --batch 16 --steps "$steps"
      --save-secs "${SAVE_SECS:-3}" --keep 2)
declare -A rate summary
for mode in none async sync; do
    rm -rf "$dir"
    mkdir -p "$dir"
    out=$("$train" --dir "$dir/$mode" --mode "$mode" "${args[@]}")
    rate[$mode]=$(echo "$out" | grep '^step ' | tail -n 1 | awk '{print $5}')
    summary[$mode]=$(echo "$out" | grep '^summary:')
done
printf '{"benchmark": "train_modes", "steps": %d, "checkpoint_mib": %s,\n' \
    "$steps" "$(ls -l "$dir"/sync/*.data-* | awk 'NR==1{printf "%.1f", $5/1048576}')"
for mode in none async sync; do
    printf ' "%s": {"steps_per_s": %.3f, "vs_none": %.3f,\n   "summary": "%s"}%s\n' \
        "$mode" "${rate[$mode]}" \
        "$(awk -v a="${rate[$mode]}" -v b="${rate[none]}" 'BEGIN{print a/b}')" \
        "${summary[$mode]}" "$([ $mode = sync ] && echo "}" || echo ",")"
done
rm -rf "$dir"
