#!/bin/sh
# tests/crash/train_dir_entry.sh - ckpt-train relaunched after a run killed
# between its mkdir of the checkpoint directory's parent and the fsync that
# made that entry durable: the relaunch finds the level there, and must
# sync it in its own parent before it writes a checkpoint below it, else a
# power cut takes the level away with every checkpoint it reported durable.
#
# Usage: train_dir_entry.sh SHIM TRAIN. Runs TRAIN under the recorder SHIM
# (power_cut_shim.c) with the root at a new directory R, where R/ck exists
# (the killed run's mkdir) and ck/a does not, and checks the log: an fsync
# of a descriptor opened on R itself comes before the first file opened
# under R/ck/a.
set -eu
shim=$1
train=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-dir-entry.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/root" "$work/root/ck"
CKPT_PC_ROOT="$work/root" CKPT_PC_LOG="$work/log" LD_PRELOAD="$shim" \
    "$train" --dir "$work/root/ck/a" --steps 2 --save-steps 1 --mode sync \
    --hidden 2 --layers 1 --quiet >"$work/out" 2>&1 || {
    echo "ckpt-train failed:"
    cat "$work/out"
    exit 1
}
# Records "O id flags path" and "S id"; written bytes follow W records on
# lines of their own, which these patterns do not take for records.
grep -a -E '^(O [0-9]+ [0-9]+ [^ ]+|S [0-9]+)$' "$work/log" |
    awk '
    $1 == "O" && $4 == "." && root == "" { root = $2; next }
    $1 == "S" && root != "" && $2 == root && synced == "" { synced = NR; next }
    $1 == "O" && $4 ~ /^ck\/a\// && first == "" { first = NR }
    END {
        if (first == "") { print "no file written under ck/a"; exit 1 }
        if (synced == "" || synced > first) {
            print "ck (found, maybe unsynced) was not synced in the root " \
                  "before the first file under ck/a"
            exit 1
        }
        print "ok: root synced at record " synced ", first file under " \
              "ck/a at record " first
    }'
