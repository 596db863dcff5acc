#!/usr/bin/env bash
# scripts/kill-loop.sh CKPT_TRAIN CKPT COUNT [SEED [TRAIN_OPTION...]] - kill
# ckpt-train with SIGKILL at random moments COUNT times, resuming each time
# on the same directory. TRAIN_OPTIONs (--mode sync, --busy coalesce,
# --keep-hours H...) are added to every run. After every kill: `ckpt
# verify` passes on the directory, the latest checkpoint is at least the
# newest save the trainer had reported durable (no reported save is lost),
# and the next run resumes from it. With --keep-hours, every checkpoint
# the state file has listed once is never deleted: listed still, or kept
# for good by keep_checkpoint_every_n_hours once retention evicts it (give
# an H shorter than any two saves, 1e-9, so that every eviction keeps),
# complete and verifying, through every kill, every relaunch, and a last
# run without the option, whose retention must leave them too.
# With VIA_LINK=1 in the environment the directory is reached through a
# symbolic link (--dir LINK, LINK -> real).
# Finally a run to the end must finish cleanly and verify, and its final
# checkpoint must equal that of the same run never killed (`ckpt diff`:
# README promises bit-identical resumes).
set -u
train=$1
ckpt=$2
count=$3
RANDOM=${4:-12345}
shift $(($# < 4 ? $# : 4))
extra=("$@")
keep_hours=0
for a in "${extra[@]}"; do
    [ "$a" = --keep-hours ] && keep_hours=1
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
out="$dir/out.log"
ck="$dir/ckpts"
if [ -n "${VIA_LINK:-}" ]; then
    # the trainer's --dir is a symbolic link to the real directory
    mkdir "$dir/real"
    ln -s real "$ck"
fi
steps=100000000
args=(--dir "$ck" --steps "$steps" --save-steps 7 --keep 3 --hidden 16
      --layers 1 --batch 8 --seed 5 "${extra[@]}")

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

# --keep-hours: the steps the state file has listed (each once), and those
# of them already verified after they left the list
declare -A listed=() verified=()
listed_steps() {
    grep '^all_model_checkpoint_paths:' "$ck/checkpoint" 2>/dev/null |
        sed 's/.*-\([0-9]*\)"$/\1/'
}
check_kept() {
    local s now_listed
    now_listed=" $(listed_steps | tr '\n' ' ') "
    for s in "${!listed[@]}"; do
        [ -f "$ck/model.ckpt-$s.index" ] ||
            fail "model.ckpt-$s, listed before, was deleted (--keep-hours keeps it)"
        case $now_listed in *" $s "*) continue ;; esac
        [ -n "${verified[$s]:-}" ] && continue
        "$ckpt" verify "$ck/model.ckpt-$s" >"$dir/verify.log" 2>&1 ||
            { cat "$dir/verify.log" >&2; fail "kept model.ckpt-$s does not verify"; }
        verified[$s]=1
    done
    for s in $now_listed; do
        listed[$s]=1
    done
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
    # Every other run first waits (up to 10 s) for this run's first save
    # reported durable: on a loaded machine 80 ms from the launch may not
    # reach one, and the kills would all land in the start and the open.
    if ((i % 2 == 0)); then
        for _ in $(seq 1 1000); do
            grep -q 'is durable\|^checkpoint: saved ' "$out" && break
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.01
        done
    fi
    # 1..80 ms: some kills land before the first save, most after several.
    sleep "0.0$((RANDOM % 8))$((RANDOM % 10))"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    if [ "$before" -ge 0 ] && ! grep -q "^restored .* at step $before\$" "$out"; then
        # Killed before it printed anything is fine; otherwise it must
        # have restored the latest checkpoint.
        if grep -q '^step \|is durable\|^checkpoint: saved ' "$out"; then
            fail "did not report restoring step $before"
        fi
    fi
    # the async hook's "(step N) is durable", the sync hook's "saved
    # DIR/model.ckpt-N (" (printed once the state file names it)
    reported=$( { grep -o '(step [0-9]*) is durable' "$out" |
                      grep -o '[0-9]*'
                  grep -o '^checkpoint: saved .*-[0-9]* (' "$out" |
                      sed 's/.*-\([0-9]*\) ($/\1/'; } | sort -n | tail -n 1)
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
    [ "$keep_hours" = 0 ] || check_kept
done
final=$(( $(latest_step) + 20 ))
# --busy wait: every trigger of the 20 steps is written (at least two, and
# the final save), so at least 3 are kept even on a machine loaded enough
# that every kill above landed before the first save was durable and the
# default policy would skip the triggers while a write runs.
"$train" "${args[@]/$steps/$final}" --busy wait >"$out" 2>&1 ||
    fail "final run failed"
grep -q "^summary: steps=$final " "$out" || fail "final run did not reach $final"
if [ "$keep_hours" = 1 ]; then
    check_kept
    # a relaunch without --keep-hours: its retention evicts what it lists
    # and leaves every checkpoint kept before
    plain=()
    skip=0
    for a in "${args[@]/$steps/$((final + 14))}"; do
        if [ "$skip" = 1 ]; then skip=0; continue; fi
        [ "$a" = --keep-hours ] && { skip=1; continue; }
        plain+=("$a")
    done
    declare -A before_plain=()
    for s in "${!listed[@]}"; do before_plain[$s]=1; done
    for s in $(listed_steps); do unset "before_plain[$s]"; done
    "$train" "${plain[@]}" --busy wait >"$out" 2>&1 || fail "run without --keep-hours failed"
    for s in "${!before_plain[@]}"; do
        [ -f "$ck/model.ckpt-$s.index" ] ||
            fail "kept model.ckpt-$s deleted by a run without --keep-hours"
    done
    echo "kill-loop: ${#before_plain[@]} checkpoints kept for good survived"
    final=$((final + 14))
fi
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
