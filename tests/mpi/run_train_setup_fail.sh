#!/usr/bin/env bash
# tests/mpi/run_train_setup_fail.sh - `ckpt-train --distributed` relaunched
# on a directory with a checkpoint, one rank's open() failing with EIO
# (fail_open_shim.c, preloaded on every rank, armed on one):
#   - in the checkpoint hook's begin, which creates (and syncs) the
#     directory on every rank inside the session's creation, before its
#     collective restore;
#   - in the collective restore itself (that rank's data file).
# Every rank must end with exit status 1 and say why ("rank R: creating
# the session: ..."), well within a few seconds (the collective timeout is
# 600 s: a rank left waiting in the restore would hold the job), and the
# directory stays as it was: the same files, bytes and state file, and its
# latest checkpoint verifies.
# Usage: run_train_setup_fail.sh CKPT_TRAIN CKPT SHIM MPIEXEC [FLAGS...]
set -euo pipefail
train=$1 ckpt=$2 shim=$3 mpiexec=$4
shift 4
flags=("$@")
# shellcheck source-path=SCRIPTDIR source=train_lib.sh
. "$(dirname "$0")/train_lib.sh"
train_tmp setup
parent=$tmp/p
dir=$parent/run
limit=30 # seconds a failed launch may take, far below the 600 s timeout
train_args=(--distributed --dir "$dir" --steps 40 --save-steps 10 --quiet
    --hidden 16)
# A sanitizer runtime that the program links dynamically (GCC's libasan,
# libtsan) has to be the first library loaded: ASan refuses to start with
# the shim ahead of it. It is preloaded ahead of the shim.
preload=$shim
runtime=$(ldd "$train" 2>/dev/null |
    awk '$1 ~ /^lib(asan|tsan)\.so/ { print $3; exit }') || true
[ -z "$runtime" ] || preload=$runtime:$shim

mkdir -p "$parent"
"$mpiexec" "${flags[@]}" -n 2 "$train" "${train_args[@]}" --steps 20 \
    >/dev/null 2>&1 || die "the first run (to step 20) failed"
grep -qx 'model_checkpoint_path: "model.ckpt-20"' "$dir/checkpoint" ||
    die "the first run left the state file: $(cat "$dir/checkpoint")"
before=$(snapshot "$dir")

# failing NP RANK PATTERN WHERE: NP ranks, open() of paths matching
# PATTERN failing on RANK; WHERE is what RANK's message must say.
failing() {
    local np=$1 bad=$2 pattern=$3 where=$4 rc=0 start elapsed out
    start=$(date +%s)
    # `timeout` bounds a hang (the failure this test is for) so that the
    # test reports it instead of CTest's TIMEOUT.
    timeout $((limit * 2)) "$mpiexec" "${flags[@]}" \
        -x LD_PRELOAD="$preload" -x CKPT_FAIL_OPEN_MATCH="$pattern" \
        -x CKPT_FAIL_OPEN_RANK="$bad" -n "$np" \
        "$train" "${train_args[@]}" >"$tmp/out" 2>&1 || rc=$?
    elapsed=$(($(date +%s) - start))
    out=$(cat "$tmp/out")
    [ "$rc" -ne 124 ] || die "$np ranks, rank $bad failing ($pattern): still" \
        "running after $((limit * 2)) s: $out"
    [ "$rc" -eq 1 ] || die "$np ranks, rank $bad failing: exit $rc: $out"
    [ "$elapsed" -le "$limit" ] ||
        die "$np ranks, rank $bad failing: took $elapsed s: $out"
    grep -q "^fail_open_shim: rank $bad: open(" <<<"$out" ||
        die "$np ranks: the fault ($pattern) was not reached: $out"
    grep -q "^ckpt-train: rank $bad: creating the session: .*$where.*Input/output error" \
        <<<"$out" || die "$np ranks: rank $bad did not say why: $out"
    for ((r = 0; r < np; r++)); do
        grep -q "^ckpt-train: rank $r: creating the session: " <<<"$out" ||
            die "$np ranks, rank $bad failing: no message from rank $r: $out"
    done
    grep -q "^resumed at\|^done:" <<<"$out" &&
        die "$np ranks, rank $bad failing: a rank went on: $out"
    [ "$(snapshot "$dir")" = "$before" ] ||
        die "$np ranks, rank $bad failing: the directory changed: $(snapshot "$dir")"
    "$ckpt" verify "$dir/model.ckpt-20" >/dev/null ||
        die "$np ranks, rank $bad failing: model.ckpt-20 does not verify"
    echo "ok: $np ranks, rank $bad failing ($where): all ended in $elapsed s"
}

# Before the restore: syncing the directory's entry in its parent.
failing 2 1 "$parent" "begin: creating checkpoint directory"
failing 3 0 "$parent" "begin: creating checkpoint directory"
failing 3 2 "$parent" "begin: creating checkpoint directory"
# In the restore: the rank's own data file.
failing 2 1 "*/model.ckpt-20.data-00001-of-*" "restoring"
failing 3 1 "*/model.ckpt-20.data-00001-of-*" "restoring"
echo PASS
