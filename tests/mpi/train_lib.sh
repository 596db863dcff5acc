# tests/mpi/train_lib.sh - what the run_train_*.sh tests of
# `ckpt-train --distributed` share, sourced once they have read their
# arguments: a temporary directory removed at exit, die, whether processes
# still run, the step a state file names, and a snapshot of a directory's
# files. A script may define its own die after sourcing this.
# shellcheck shell=bash

# train_tmp TAG: a fresh directory under $TMPDIR (else /tmp) in $tmp,
# removed when the script exits.
train_tmp() {
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-train-$1.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
}

die() {
    echo "FAIL: $*" >&2
    exit 1
}

running() { # PID...: whether any of the processes runs (a zombie does not)
    local p
    for p in "$@"; do
        case $(ps -o stat= -p "$p" 2>/dev/null) in
            "" | Z*) ;;
            *) return 0 ;;
        esac
    done
    return 1
}

state_step() { # STATE_FILE: the step its latest checkpoint is named for,
    # or nothing (no such file, or no model_checkpoint_path of that form)
    sed -n 's/^model_checkpoint_path: "model\.ckpt-\([0-9]*\)"$/\1/p' \
        "$1" 2>/dev/null || true
}

snapshot() { # DIR: its files and their checksums
    (cd "$1" && find . -type f | LC_ALL=C sort | xargs md5sum)
}

procs_report() { # MPIEXEC_PID RANK_PID...: for a failure's message, what
    # each of the processes still running is doing: its ps line, and for a
    # rank its threads' stacks (gdb, at most 30 s a process)
    local p
    ps -o pid=,stat=,etimes=,wchan:24=,args= -p "$(echo "$@" | tr ' ' ,)" 2>&1
    shift
    for p in "$@"; do
        running "$p" || continue
        echo "--- rank process $p:"
        timeout -k 5 30 gdb -p "$p" -batch -nx -ex "thread apply all bt 12" \
            2>&1 | grep -E '^(Thread|#)' | head -60 || true
    done
}
