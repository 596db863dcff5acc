#!/bin/sh
# tests/crash/cwd_dir_entry.sh - a checkpoint directory given as the
# current directory (a program run inside it, made just before by a
# shell's mkdir, which syncs nothing): `ckpt-train --dir .` and
# `ckpt repack SRC x` must sync that directory's entry in its parent
# ("..") before they write a file in it, else a power cut takes the
# directory away with what they reported durable.
#
# Usage: cwd_dir_entry.sh SHIM TRAIN CKPT. Runs each under the recorder
# SHIM (power_cut_shim.c) with the root at a new directory R and the
# current directory R/D, and checks the log: an fsync of a descriptor
# opened on R (recorded as "D/..") comes before the first file opened
# under R/D.
set -eu
shim=$1
train=$2
ckpt=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-cwd-entry.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/root" "$work/root/run" "$work/root/packed"

# check LOG D: the parent synced before the first file under D
check() {
    grep -a -E '^(O [0-9]+ [0-9]+ [^ ]+|S [0-9]+)$' "$1" |
        awk -v d="$2" '
        $1 == "O" && ($4 == "." || $4 == d "/..") && root == "" {
            root = $2; next
        }
        $1 == "S" && root != "" && $2 == root && synced == "" {
            synced = NR; next
        }
        $1 == "O" && index($4, d "/") == 1 && index($4, d "/..") != 1 &&
            first == "" {
            first = NR
        }
        END {
            if (first == "") { print d ": no file written"; exit 1 }
            if (synced == "" || synced > first) {
                print d " (the current directory) was not synced in its " \
                      "parent before the first file written in it"
                exit 1
            }
            print "ok: " d "'"'"'s parent synced at record " synced \
                  ", first file in it at record " first
        }'
}

(cd "$work/root/run" &&
    CKPT_PC_ROOT="$work/root" CKPT_PC_LOG="$work/train.log" \
        LD_PRELOAD="$shim" "$train" --dir . --steps 2 --save-steps 1 \
        --mode sync --hidden 2 --layers 1 --quiet >"$work/out" 2>&1) || {
    echo "ckpt-train failed:"
    cat "$work/out"
    exit 1
}
check "$work/train.log" run

(cd "$work/root/packed" &&
    CKPT_PC_ROOT="$work/root" CKPT_PC_LOG="$work/repack.log" \
        LD_PRELOAD="$shim" "$ckpt" repack ../run/model.ckpt-2 x \
        >"$work/out" 2>&1) || {
    echo "ckpt repack failed:"
    cat "$work/out"
    exit 1
}
check "$work/repack.log" packed
