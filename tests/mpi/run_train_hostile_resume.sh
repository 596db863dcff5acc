#!/usr/bin/env bash
# tests/mpi/run_train_hostile_resume.sh - `ckpt-train --distributed` on 2
# ranks relaunched on a directory whose latest checkpoint was tampered
# with, its checksums intact (patch_tensor): a stored global step (7) that
# is not the checkpoint's name's (20) and, on rank 1, a data/order no run
# can have written. Every rank must exit non-zero, rank 1 naming the
# checkpoint and the tensor (data/order/rank-1), rank 0 saying another
# rank's position is at fault; and the directory stays as it was: no
# checkpoint of step 7 saved from that position, none of the older good
# ones deleted to make room for it (--keep 3), the state file unchanged.
# Then a checkpoint that holds rank 0's data order, epoch and RNG state but
# not its data/cursor/rank-0: refused too (it resumed from a position half
# restored, half fresh), where a rank with none of its position stored
# starts afresh (a run on more ranks than wrote the checkpoint).
# Usage: run_train_hostile_resume.sh CKPT_TRAIN PATCH_TENSOR MPIEXEC [FLAGS...]
set -euo pipefail
train=$1 patch=$2 mpiexec=$3
shift 3
flags=("$@")
# shellcheck source-path=SCRIPTDIR source=train_lib.sh
. "$(dirname "$0")/train_lib.sh"
train_tmp hostile
dir=$tmp/run

run() { # run STEPS: train on 2 ranks until STEPS, keeping 3 checkpoints
    "$mpiexec" "${flags[@]}" -n 2 "$train" --distributed --dir "$dir" \
        --steps "$1" --save-steps 10 --keep 3 --quiet --hidden 16
}

run 20 >/dev/null || die "the first run failed"
"$patch" "$dir/model.ckpt-20" global_step 0 i64 7 ||
    die "patching global_step failed"
"$patch" "$dir/model.ckpt-20" data/order/rank-1 0 i32 0x7ffffff0 ||
    die "patching data/order/rank-1 failed"
before=$(snapshot "$dir")

set +e
run 40 >"$tmp/out" 2>"$tmp/err"
status=$?
set -e
[ "$status" -ne 0 ] || die "the relaunch on a tampered checkpoint exited 0"
grep -q "rank 1: creating the session: .*$dir/model.ckpt-20.*data/order/rank-1 is not a permutation of 0\.\." "$tmp/err" ||
    die "rank 1 did not name the checkpoint and tensor: $(cat "$tmp/err")"
grep -q "rank 0: creating the session: .*another rank's restored state" "$tmp/err" ||
    die "rank 0 did not say why it stopped: $(cat "$tmp/err")"
[ "$(snapshot "$dir")" = "$before" ] ||
    die "the directory changed: $(ls "$dir")"
echo "ok: refused before saving, the directory as it was"

rm -rf "$dir"
run 20 >/dev/null || die "the second first run failed"
"$patch" "$dir/model.ckpt-20" data/cursor/rank-0 drop ||
    die "dropping data/cursor/rank-0 failed"
before=$(snapshot "$dir")
set +e
run 40 >"$tmp/out" 2>"$tmp/err"
status=$?
set -e
[ "$status" -ne 0 ] || die "the relaunch without data/cursor/rank-0 exited 0"
grep -q "rank 0: creating the session: .*$dir/model.ckpt-20.*data/cursor/rank-0 is not in the checkpoint" "$tmp/err" ||
    die "rank 0 did not name the missing tensor: $(cat "$tmp/err")"
[ "$(snapshot "$dir")" = "$before" ] ||
    die "the directory changed: $(ls "$dir")"
echo "ok: a half-stored data position refused"
echo PASS
