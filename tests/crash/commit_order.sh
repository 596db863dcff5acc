#!/bin/sh
# tests/crash/commit_order.sh - the order of a save's file-system calls,
# read from the recorder's log (power_cut_shim.c) of real ckpt-train runs,
# against docs/format.md §9 (B79): for every checkpoint X that becomes one
#   a. each data file of X is fsynced under its temporary name, renamed,
#      and the directory fsynced, before X.index is renamed into place;
#   b. X.index is fsynced under its temporary name before that rename;
#   c. the directory is fsynced after it, before the state file is
#      renamed over `checkpoint` (itself fsynced first);
#   d. the directory is fsynced after that rename before retention
#      removes any index, and after each index's removal before the data
#      files of that checkpoint go.
# Runs: sync and async with --keep 2 from an empty directory, then each
# relaunched on its directory (the saves after a recovery), and once with
# --keep-hours 1e-9 (retention keeps, removes nothing).
#
# Usage: commit_order.sh SHIM TRAIN, or commit_order.sh --check LOG (the
# rules over a log recorded before: how a broken order was shown to fail)
set -eu
shim=$1
train=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-commit-order.XXXXXX")
trap 'rm -rf "$work"' EXIT

# check LOG: the rules above over the records of LOG; prints one line
check() {
    grep -a -E '^(O [0-9]+ [0-9]+ [^ ]+|S [0-9]+|W [0-9]+ [0-9]+ [0-9]+|N .*	.*|U .*)$' "$1" |
        awk -F '\n' '
        function fail(msg) { print "commit order: record " NR ": " msg; bad = 1; exit 1 }
        function isdir(id) { return path[id] == "ck" }
        {
            split($0, f, " ")
            kind = f[1]
        }
        kind == "O" { path[f[2]] = f[4]; synced[f[2]] = 1; next }
        kind == "W" { synced[f[2]] = 0; next }
        kind == "S" {
            if (isdir(f[2])) {
                dirsync = NR
            } else {
                synced[f[2]] = 1
                fsynced_path[path[f[2]]] = 1
            }
            next
        }
        kind == "N" {
            split(substr($0, 3), p, "\t")
            from = p[1]; to = p[2]
            # the file renamed was written and synced under its name
            for (id in path)
                if (path[id] == from && !synced[id])
                    fail("renamed " from " not fsynced since its last write")
            if (to ~ /\.data-[0-9]+-of-[0-9]+$/) {
                x = to; sub(/\.data-.*$/, "", x)
                data_renamed[x] = NR
                renames++
            } else if (to ~ /\.index$/) {
                x = to; sub(/\.index$/, "", x)
                if (!(x in data_renamed))
                    fail(to " renamed before any data file of " x)
                if (dirsync < data_renamed[x])
                    fail(to " renamed with no directory fsync after its " \
                         "data files were renamed")
                index_renamed = NR; pending_index = to; indexes++
            } else if (to == "ck/checkpoint") {
                if (pending_index != "" && dirsync < index_renamed)
                    fail("state file renamed before the directory fsync " \
                         "that makes " pending_index " durable")
                pending_index = ""
                state_renamed = NR; states++
            }
            next
        }
        kind == "U" {
            u = substr($0, 3)
            if (u ~ /\.index$/ && u !~ /tempstate/) {
                if (dirsync < state_renamed)
                    fail("removed " u " before the directory fsync after " \
                         "the state file rename")
                x = u; sub(/\.index$/, "", x)
                index_removed[x] = NR; removals++
            } else if (u ~ /\.data-[0-9]+-of-[0-9]+$/) {
                x = u; sub(/\.data-.*$/, "", x)
                if ((x in index_removed) && dirsync < index_removed[x])
                    fail("removed " u " before the directory fsync that " \
                         "makes its index removal durable")
            }
            next
        }
        END {
            if (bad) exit 1
            if (indexes == 0 || states == 0) {
                print "commit order: no checkpoint committed"; exit 1
            }
            print "ok: " indexes " indexes, " states " state files, " \
                  removals + 0 " retention removals in order"
        }'
}

if [ "$shim" = --check ]; then
    check "$train"
    exit
fi

# run NAME ARGS...: ckpt-train on $work/root/ck under the recorder
run() {
    name=$1
    shift
    CKPT_PC_ROOT="$work/root" CKPT_PC_LOG="$work/$name.log" \
        LD_PRELOAD="$shim" "$train" --dir "$work/root/ck" --save-steps 1 \
        --keep 2 --hidden 2 --layers 1 --quiet "$@" >"$work/out" 2>&1 || {
        echo "ckpt-train $* failed:"
        cat "$work/out"
        exit 1
    }
    check "$work/$name.log"
}

for mode in sync async; do
    rm -rf "$work/root"
    mkdir "$work/root"
    run "$mode" --steps 5 --mode "$mode" --busy wait
    run "$mode-resumed" --steps 9 --mode "$mode" --busy wait
done
rm -rf "$work/root"
mkdir "$work/root"
run keep-hours --steps 5 --mode sync --keep-hours 1e-9
