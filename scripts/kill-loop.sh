#!/usr/bin/env bash
# scripts/kill-loop.sh CKPT_TRAIN CKPT COUNT [SEED] - kill ckpt-train with
# SIGKILL at random moments COUNT times, resuming each time on the same
# directory. After every kill: `ckpt verify` passes on the directory, the
# latest checkpoint is at least the newest save the trainer had reported
# durable (no reported save is lost), and the next run resumes from it.
# Finally a run to the end must finish cleanly and verify, and its final
# checkpoint must equal that of the same run never killed (`ckpt diff`:
# README promises bit-identical resumes).
set -u
train=$1
ckpt=$2
count=$3
RANDOM=${4:-12345}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
out="$dir/out.log"
ck="$dir/ckpts"
steps=100000000
args=(--dir "$ck" --steps "$steps" --save-steps 7 --keep 3 --hidden 16
      --layers 1 --batch 8 --seed 5)

latest_step() {
    local line
    line=$(grep '^model_checkpoint_path:' "$ck/checkpoint" 2>/dev/null) || {
        echo -1
        return
    }
    line=${line##*-}
    echo "${line%\"}"
}

fail() {
    echo "kill-loop: iteration $i: $*" >&2
    echo "--- directory:" >&2
    ls -la "$ck" >&2
    echo "--- state file:" >&2
    cat "$ck/checkpoint" >&2
    echo "--- directory before this run:" >&2
    cat "$dir/ls.before" >&2
    echo "--- state file before this run:" >&2
    cat "$dir/state.before" >&2
    echo "--- trainer output:" >&2
    cat "$out" >&2
    exit 1
}

durable_total=0
for ((i = 1; i <= count; i++)); do
    before=$(latest_step)
    cp "$ck/checkpoint" "$dir/state.before" 2>/dev/null || : >"$dir/state.before"
    ls -la "$ck" >"$dir/ls.before" 2>&1
    # Emptied first: a kill that lands before the child opens its output
    # must not leave the previous run's output to be judged.
    : >"$out"
    "$train" "${args[@]}" >"$out" 2>&1 &
    pid=$!
    # 1..80 ms: some kills land before the first save, most after several.
    sleep "0.0$((RANDOM % 8))$((RANDOM % 10))"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    if [ "$before" -ge 0 ] && ! grep -q "^restored .* at step $before\$" "$out"; then
        # Killed before it printed anything is fine; otherwise it must
        # have restored the latest checkpoint.
        if grep -q '^step \|is durable' "$out"; then
            fail "did not report restoring step $before"
        fi
    fi
    reported=$(grep -o '(step [0-9]*) is durable' "$out" | tail -n 1 |
               grep -o '[0-9]*')
    now=$(latest_step)
    if [ -n "$reported" ]; then
        durable_total=$((durable_total + 1))
        [ "$now" -ge "$reported" ] ||
            fail "step $reported was reported durable, latest is $now"
    fi
    if [ "$now" -ge 0 ]; then
        "$ckpt" verify "$ck" >"$dir/verify.log" 2>&1 ||
            { cat "$dir/verify.log" >&2; fail "ckpt verify failed"; }
    fi
done
final=$(( $(latest_step) + 20 ))
# --busy wait: every trigger of the 20 steps is written (at least two, and
# the final save), so at least 3 are kept even on a machine loaded enough
# that every kill above landed before the first save was durable and the
# default policy would skip the triggers while a write runs.
"$train" "${args[@]/$steps/$final}" --busy wait >"$out" 2>&1 ||
    fail "final run failed"
grep -q "^summary: steps=$final " "$out" || fail "final run did not reach $final"
# The same options, never killed, to the same step: the killed and resumed
# run must end with the same weights, optimizer slots and data position.
ref="$dir/uninterrupted"
ref_args=("${args[@]/#$ck/$ref}")
"$train" "${ref_args[@]/$steps/$final}" --busy wait >"$dir/ref.log" 2>&1 ||
    { cat "$dir/ref.log" >&2; fail "the uninterrupted run failed"; }
"$ckpt" diff "$ref/model.ckpt-$final" "$ck/model.ckpt-$final" \
    >"$dir/diff.log" 2>&1 ||
    { cat "$dir/diff.log" >&2; fail "final checkpoint differs from an uninterrupted run's"; }
"$ckpt" verify "$ck" >/dev/null || fail "final verify failed"
if ls "$ck" | grep -q tempstate; then
    fail "temporary files left after a clean run"
fi
# The state file lists exactly the 3 kept checkpoints. A kill between a
# save's index and its state file, or between the state file and a
# deletion, leaves a complete checkpoint unlisted: the saver keeps those
# (it cannot tell them from a user's files) and each must still verify.
# Data files without an index were removed when the last run opened.
[ "$(grep -c '^all_model_checkpoint_paths:' "$ck/checkpoint")" -eq 3 ] ||
    fail "expected the state file to list exactly the 3 kept checkpoints"
for index in "$ck"/*.index; do
    "$ckpt" verify "${index%.index}" >/dev/null ||
        fail "unlisted checkpoint ${index%.index} does not verify"
done
[ "$(ls "$ck" | grep -c '\.index$')" -eq "$(ls "$ck" | grep -c '\.data-')" ] ||
    fail "data files without an index were left"
echo "kill-loop: $count kills, $durable_total with a reported durable save, all recovered"
