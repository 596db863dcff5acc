#!/usr/bin/env bash
# tests/mpi/run_train_resume.sh - `ckpt-train --distributed` on 4 ranks:
#   - stopped at step 25 and relaunched to 40, the run ends bit-identical
#     (ckpt diff) to an uninterrupted run to 40;
#   - killed (SIGKILL to mpiexec) after its first checkpoint and relaunched,
#     it resumes from the newest complete checkpoint and ends identical too;
#   - relaunched on 2 and 3 ranks it resumes at the same step (the weights
#     restore; ranks without a stored data position start theirs afresh)
#     and leaves the checkpoint as it was; at or past --steps it says
#     "nothing to train", exits 0 and writes nothing;
#   - SIGTERM to one rank stops every rank at the same step, with a final
#     checkpoint of that step, and exit status 0;
#   - a state of about 7 MiB per rank saved at every step: each verifies;
#   - ranks bound to one core get a note from rank 0, ranks with two none.
# Usage: run_train_resume.sh CKPT_TRAIN CKPT MPIEXEC [MPIEXEC_FLAGS...]
set -euo pipefail
train=$1 ckpt=$2 mpiexec=$3
shift 3
flags=("$@")
# shellcheck source-path=SCRIPTDIR source=train_lib.sh
. "$(dirname "$0")/train_lib.sh"
train_tmp resume

run() { # run NP DIR STEPS: train on NP ranks until STEPS
    "$mpiexec" "${flags[@]}" -n "$1" "$train" --distributed --dir "$2" \
        --steps "$3" --save-steps 10 --quiet --hidden 16
}

run 4 "$tmp/a" 40 >/dev/null || die "uninterrupted run failed"
run 4 "$tmp/b" 25 >/dev/null || die "first part failed"
out=$(run 4 "$tmp/b" 40) || die "relaunch failed"
grep -q "resumed at step 25 on 4 ranks" <<<"$out" || die "relaunch printed: $out"
# rank 0's summary: the worst rank's blocking, median and longest
grep -Eq "^summary: steps=40 ranks=4 blocking_ms_p50=[0-9]+\.[0-9]{3} blocking_ms_max=[0-9]+\.[0-9]{3}$" <<<"$out" ||
    die "relaunch's summary: $out"
"$ckpt" diff "$tmp/a/model.ckpt-40" "$tmp/b/model.ckpt-40" ||
    die "the resumed run differs from the uninterrupted one"
echo "ok: stopped at 25 and resumed, bit-identical at 40"

# Killed (SIGKILL to mpiexec) while training, after its first checkpoint.
"$mpiexec" "${flags[@]}" -n 4 "$train" --distributed --dir "$tmp/c" \
    --steps 100000000 --save-steps 10 --quiet --hidden 16 >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 1200); do
    [ -f "$tmp/c/checkpoint" ] && break
    sleep 0.05
done
sleep 0.3
ranks=$(pgrep -P "$pid") || die "no rank process found under mpiexec $pid"
kill -9 "$pid" 2>/dev/null || die "the run ended before it was killed"
wait "$pid" 2>/dev/null || true
# The orphaned ranks are ended by the runtime, which can take seconds (in a
# build with a sanitizer they went on saving for 3 s): the state file is
# read once they are gone, not after a fixed wait.
for _ in $(seq 1 600); do
    # shellcheck disable=SC2086
    running $ranks || break
    sleep 0.05
done
# shellcheck disable=SC2086
! running $ranks || die "the ranks still ran 30 s after mpiexec was killed"
k=$(state_step "$tmp/c/checkpoint")
[ -n "$k" ] || die "no checkpoint named after the kill"
final=$((k + 30))
out=$(run 4 "$tmp/c" "$final") || die "relaunch after kill failed"
grep -q "resumed at step $k on 4 ranks" <<<"$out" ||
    die "relaunch after kill printed: $out"
run 4 "$tmp/d" "$final" >/dev/null || die "uninterrupted run to $final failed"
"$ckpt" diff "$tmp/c/model.ckpt-$final" "$tmp/d/model.ckpt-$final" ||
    die "the run killed and resumed differs from the uninterrupted one"
echo "ok: killed, resumed at step $k, bit-identical at $final"

# Already at --steps (40 reached, asked 40 or 30): nothing to train,
# exit 0, nothing saved (the state file and the files as they were).
state_before=$(cat "$tmp/b/checkpoint")
files_before=$(ls "$tmp/b")
for run_to in "2 40" "3 40" "4 30"; do
    read -r np steps <<<"$run_to"
    out=$(run "$np" "$tmp/b" "$steps") || die "relaunch on $np ranks failed"
    grep -q "resumed at step 40 on $np ranks" <<<"$out" ||
        die "relaunch on $np ranks printed: $out"
    grep -qx "nothing to train: step 40 reached (--steps $steps); nothing saved" \
        <<<"$out" || die "relaunch on $np ranks to $steps printed: $out"
    [ "$(cat "$tmp/b/checkpoint")" = "$state_before" ] ||
        die "relaunch on $np ranks to $steps rewrote the state file"
    [ "$(ls "$tmp/b")" = "$files_before" ] ||
        die "relaunch on $np ranks to $steps changed the files: $(ls "$tmp/b")"
done
"$ckpt" diff "$tmp/a/model.ckpt-40" "$tmp/b/model.ckpt-40" ||
    die "relaunching on 2 and 3 ranks changed the checkpoint"
echo "ok: relaunched on 2, 3 and 4 ranks at step 40: nothing to train"

# SIGTERM to one rank only: all stop together, save the stop step, exit 0.
"$mpiexec" "${flags[@]}" -n 3 "$train" --distributed --dir "$tmp/f" \
    --steps 100000000 --save-steps 10 --quiet --hidden 16 >"$tmp/f.out" 2>&1 &
pid=$!
for _ in $(seq 1 1200); do
    [ -f "$tmp/f/checkpoint" ] && break
    sleep 0.05
done
rank=$(pgrep -P "$pid" | sed -n 2p)
[ -n "$rank" ] || die "no rank process found under mpiexec $pid"
kill -TERM "$rank"
rc=0
wait "$pid" || rc=$?
[ "$rc" -eq 0 ] || die "SIGTERM to one rank: exit $rc: $(cat "$tmp/f.out")"
n=$(sed -n 's/^done: step \([0-9]*\) on 3 ranks$/\1/p' "$tmp/f.out")
[ -n "$n" ] || die "SIGTERM to one rank printed: $(cat "$tmp/f.out")"
grep -qx "model_checkpoint_path: \"model.ckpt-$n\"" "$tmp/f/checkpoint" ||
    die "after SIGTERM at step $n the state file is: $(cat "$tmp/f/checkpoint")"
"$ckpt" verify "$tmp/f/model.ckpt-$n" >/dev/null ||
    die "the final checkpoint of step $n does not verify"
echo "ok: SIGTERM to one rank, all stopped at step $n with its checkpoint"

# A state past the size where the first snapshots are timed fused and plain
# by turns (about 7 MiB per rank on 2 ranks): every checkpoint of a run
# that saves at each step (triggers the write in flight skips aside)
# verifies; the 2nd and 4th once carried the previous save's checksums.
"$mpiexec" "${flags[@]}" -n 2 "$train" --distributed --dir "$tmp/g" \
    --steps 12 --save-steps 1 --keep 0 --quiet --hidden 1024 >/dev/null 2>&1 ||
    die "the run with a larger state failed"
n=0
for index in "$tmp"/g/model.ckpt-*.index; do
    "$ckpt" verify "${index%.index}" >/dev/null ||
        die "$(basename "$index"): a checkpoint of the larger state does not verify"
    n=$((n + 1))
done
[ "$n" -ge 4 ] || die "the larger state's run kept $n checkpoints, wanted 4 or more"
echo "ok: a larger state's $n checkpoints verify"

# A rank confined to one core is told so (once, by rank 0); one with two
# is not. Open MPI on 2 cores or more only: --bind-to none leaves each rank
# the affinity mpiexec started with.
if grep -q "Open MPI\|OpenRTE" <<<"$("$mpiexec" --version 2>/dev/null)" &&
    [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
    note="a rank is bound to one core"
    one() { # AFFINITY: the demo's stderr on 2 ranks confined to AFFINITY
        local rc=0
        taskset -c "$1" "$mpiexec" "${flags[@]}" --bind-to none -n 2 \
            "$train" --distributed --dir "$tmp/e$1" --steps 2 \
            --save-steps 10 --hidden 16 >/dev/null 2>"$tmp/err" || rc=$?
        cat "$tmp/err"
        return $rc
    }
    err=$(one 0) || die "the run on one core failed: $err"
    [ "$(grep -c "$note" <<<"$err")" -eq 1 ] ||
        die "on one core the note was not printed once: $err"
    err=$(one 0,1) || die "the run on two cores failed: $err"
    grep -q "$note" <<<"$err" && die "on two cores a note was printed: $err"
    echo "ok: a rank bound to one core is told so, once"
fi
echo PASS
