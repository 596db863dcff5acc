#!/usr/bin/env bash
# tests/crash/repack_kill.sh - `ckpt repack` killed (SIGKILL) at random
# moments of its copy, ROUNDS times, seeded. After every kill: SRC is
# untouched (every file byte for byte as before), and DST is either absent
# (no DST.index; its temporary files allowed, and its data file, renamed
# into place before the index, which makes it a checkpoint) or complete (`ckpt verify DST`
# passes and `ckpt diff SRC DST` finds no difference, every data file it
# names there). A DST left absent is repacked again, uninterrupted: that
# run must remove what the killed one left (nothing but DST.index and its
# data file after it) and write a complete DST; a complete one is removed
# for the next round.
#
# Usage: repack_kill.sh CKPT_TRAIN CKPT ROUNDS SEED
set -euo pipefail
train=$1 ckpt=$2 rounds=$3
RANDOM=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-repack-kill.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/out"
# a checkpoint of about 13 MB (weights and Adam slots), whose copy takes
# some tens of milliseconds: most kills land inside it
"$train" --dir "$work/src" --steps 1 --save-steps 1 --mode sync \
    --hidden 512 --layers 4 --quiet >"$work/train.log" 2>&1 ||
    { cat "$work/train.log"; exit 1; }
src=$work/src/model.ckpt-1
(cd "$work/src" && sha256sum -- *) >"$work/src.sums"
dst=$work/out/packed

fail() {
    echo "FAIL (round $round): $*" >&2
    ls -l "$work/out" >&2
    exit 1
}

complete() { # DST verifies and holds exactly SRC's tensors and bytes
    "$ckpt" verify "$dst" >"$work/verify.log" 2>&1 ||
        { cat "$work/verify.log" >&2; fail "DST.index exists but DST does not verify"; }
    "$ckpt" diff "$src" "$dst" >"$work/diff.log" 2>&1 ||
        { cat "$work/diff.log" >&2; fail "DST differs from SRC"; }
}

absent=0 done_=0 midway=0
for ((round = 1; round <= rounds; round++)); do
    "$ckpt" repack "$src" "$dst" >/dev/null 2>"$work/repack.err" &
    pid=$!
    # 0..59 ms: from before the first byte to after the rename of the index
    sleep "0.0$((RANDOM % 6))$((RANDOM % 10))"
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    (cd "$work/src" && sha256sum --quiet -c "$work/src.sums") >/dev/null 2>&1 ||
        fail "SRC changed"
    if [ -e "$dst.index" ]; then
        done_=$((done_ + 1))
        complete
    else
        absent=$((absent + 1))
        if [ -n "$(ls -A "$work/out")" ]; then
            midway=$((midway + 1))
        fi
        # nothing but temporary files of DST's name may be there
        for f in "$work"/out/*; do
            [ -e "$f" ] || continue
            case ${f##*/} in
            packed.index.tempstate* | packed.data-*.tempstate*) ;;
            packed.data-00000-of-00001) ;;
            *) fail "DST absent but ${f##*/} left" ;;
            esac
        done
        "$ckpt" repack "$src" "$dst" >/dev/null 2>"$work/repack.err" ||
            { cat "$work/repack.err" >&2; fail "repack after a kill failed"; }
        complete
        left=$(ls "$work/out")
        [ "$left" = "packed.data-00000-of-00001
packed.index" ] || fail "after a repack to the same DST: $left"
    fi
    rm -f "$dst".*
done
echo "PASS: $rounds kills of ckpt repack: $absent left DST absent ($midway" \
    "of them with files of the copy), $done_ complete"
