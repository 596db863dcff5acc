#!/bin/sh
# tests/crash/symlink_dir_entry.sh - a checkpoint directory reached through
# a symbolic link: `ckpt-train --dir LINK` (LINK -> a/ck) and
# `ckpt repack SRC DLINK/x` (DLINK -> a/packed) must sync the real
# directory's entry in its real parent ("a"), not only the link's entry in
# the link's parent, before they write a file in it: a power cut keeps
# what was synced, and a directory whose entry was never made durable goes
# with every checkpoint reported written in it. A directory below a
# linked parent (PLINK/ck2, PLINK -> a) has its entry synced through the
# link, which opens the real parent.
#
# Usage: symlink_dir_entry.sh SHIM TRAIN CKPT. Runs each under the recorder
# SHIM (power_cut_shim.c), root R, and checks the log: an fsync of a
# descriptor opened on the real parent comes before the first file opened
# for writing in the directory (by the path the program was given).
set -eu
shim=$1
train=$2
ckpt=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-symlink-entry.XXXXXX")
trap 'rm -rf "$work"' EXIT
r=$work/root
mkdir "$r" "$r/a" "$r/a/ck" "$r/a/packed" "$r/a/ck2"
ln -s a/ck "$r/link"
ln -s a/packed "$r/dlink"
ln -s a "$r/plink"

# check LOG PARENT D: a descriptor opened on PARENT (relative to the root)
# is fsynced before the first file opened for writing under D
check() {
    grep -a -E '^(O [0-9]+ [0-9]+ [^ ]+|S [0-9]+)$' "$1" |
        awk -v p="$2" -v d="$3" '
        $1 == "O" && $4 == p { opened[$2] = 1; next }
        $1 == "S" && ($2 in opened) && synced == "" { synced = NR; next }
        # a file opened for writing (O_WRONLY or O_RDWR), not one read
        $1 == "O" && index($4, d "/") == 1 && $3 % 4 != 0 && first == "" {
            first = NR
        }
        END {
            if (first == "") { print d ": no file written"; exit 1 }
            if (synced == "" || synced > first) {
                print d " (reached through a symbolic link): " p \
                      " was not synced before the first file written in it"
                exit 1
            }
            print "ok: " d ": " p " synced at record " synced \
                  ", first file in it at record " first
        }'
}

# run LOG PROGRAM ARGS...: PROGRAM under the recorder, its output kept
run() {
    log=$1
    shift
    CKPT_PC_ROOT="$r" CKPT_PC_LOG="$work/$log" LD_PRELOAD="$shim" "$@" \
        >"$work/out" 2>&1 || {
        echo "$* failed:"
        cat "$work/out"
        exit 1
    }
}

train_args="--steps 2 --save-steps 1 --mode sync --hidden 2 --layers 1 --quiet"
# shellcheck disable=SC2086
run train.log "$train" --dir "$r/link" $train_args
check "$work/train.log" a link
# relaunched on the same link: restores, saves again, the entry synced again
# shellcheck disable=SC2086
run train2.log "$train" --dir "$r/link" --steps 4 --save-steps 1 --mode sync \
    --hidden 2 --layers 1 --quiet
check "$work/train2.log" a link
"$ckpt" verify "$r/a/ck" >"$work/out" 2>&1 || { cat "$work/out"; exit 1; }
# shellcheck disable=SC2086
run plink.log "$train" --dir "$r/plink/ck2" $train_args
check "$work/plink.log" plink plink/ck2
run repack.log "$ckpt" repack "$r/link/model.ckpt-2" "$r/dlink/x"
check "$work/repack.log" a dlink
"$ckpt" verify "$r/a/packed/x" >"$work/out" 2>&1 || { cat "$work/out"; exit 1; }
