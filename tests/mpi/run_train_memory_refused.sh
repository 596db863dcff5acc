#!/usr/bin/env bash
# tests/mpi/run_train_memory_refused.sh - `ckpt-train --distributed` where
# one rank may have less memory than the others (its `ulimit -d` lowered
# through a wrapper, on that rank alone):
#   - below what the options need: that rank refuses them (the memory
#     check, exit 2) and every other rank learns it in the start's
#     agreement: all exit 2 at once, the others naming the rank that
#     refused, and no directory is made;
#   - just above it (the check passes, an allocation fails: the MPI
#     runtime's own memory counts too): that rank names the array, every
#     rank exits 1, the others naming it.
# Before, the other ranks went on into the saver's open and waited there
# for the collective timeout (600 s here: `timeout` reports it).
# Usage: run_train_memory_refused.sh NP CKPT_TRAIN MPIEXEC [FLAGS...]
set -euo pipefail
np=$1 train=$2 mpiexec=$3
shift 3
flags=("$@")
# shellcheck source-path=SCRIPTDIR source=train_lib.sh
. "$(dirname "$0")/train_lib.sh"
train_tmp memory
bad=$((np - 1)) # the rank with less memory
# (ldd's output taken whole first: under pipefail, `ldd | grep -q` failed
# whenever grep's early exit cut ldd off with SIGPIPE, and the test ran)
libs=$(ldd "$train" 2>/dev/null || true)
if grep -Eq 'lib(asan|tsan)\.so' <<<"$libs"; then
    # a sanitizer's shadow memory does not fit under such a limit
    echo "PASS (skipped: sanitizer build)"
    exit 0
fi

# Open MPI's mpiexec ends the job at the first rank's non-zero exit:
# every rank's own status is wanted here, so it lets them all finish.
if grep -q OpenRTE <<<"$("$mpiexec" --version 2>&1 || true)"; then
    flags+=(--mca orte_abort_on_non_zero_status 0)
fi

# The wrapper each rank runs: the limit on rank $bad alone, the rank's
# own exit status into $tmp/rc.<rank>.
cat >"$tmp/wrap.sh" <<'WRAP'
#!/usr/bin/env bash
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-}}
if [ "$rank" = "$BAD_RANK" ]; then ulimit -d "$LIMIT_KIB" || exit 97; fi
rc=0
"$@" || rc=$?
echo "$rc" >"$RC_DIR/rc.$rank"
exit "$rc"
WRAP
chmod +x "$tmp/wrap.sh"

# launch LIMIT_KIB: the job, its output in $tmp/out, its status in $rc.
launch() {
    rm -rf "$tmp/run" "$tmp"/rc.*
    rc=0
    BAD_RANK=$bad LIMIT_KIB=$1 RC_DIR=$tmp timeout 120 "$mpiexec" \
        "${flags[@]}" -x BAD_RANK -x LIMIT_KIB -x RC_DIR -n "$np" \
        "$tmp/wrap.sh" "$train" --distributed --dir "$tmp/run" --steps 2 \
        --hidden 1024 --layers 4 --mode sync --quiet >"$tmp/out" 2>&1 || rc=$?
    [ "$rc" -ne 124 ] || die "limit $1 KiB on rank $bad: the job was still" \
        "running after 120 s: $(cat "$tmp/out")"
}

# every_rank_exited STATUS: each rank's own exit status.
every_rank_exited() {
    local r s
    for ((r = 0; r < np; r++)); do
        s=$(cat "$tmp/rc.$r" 2>/dev/null) ||
            die "rank $r left no exit status: $(cat "$tmp/out")"
        [ "$s" = "$1" ] ||
            die "rank $r exited $s, not $1: $(cat "$tmp/out")"
    done
}

# others_name_bad STEP WHY STATUS: every rank but $bad says why it stops.
others_name_bad() {
    local r
    for ((r = 0; r < bad; r++)); do
        grep -qF "ckpt-train: rank $r: $1: rank $bad $2; not starting, exit status $3" \
            "$tmp/out" || die "rank $r does not name rank $bad: $(cat "$tmp/out")"
    done
}

# Below the model's need on rank $bad: refused there, agreed everywhere.
launch 32768
every_rank_exited 2
grep -q "ckpt-train: rank $bad: --hidden 1024 --layers 4 --batch 64 --mode sync need [0-9]* bytes of memory .*, more than the data-segment limit (ulimit -d) of 33554432 bytes" \
    "$tmp/out" || die "rank $bad does not say why: $(cat "$tmp/out")"
others_name_bad "checking the options and memory" \
    "refused the options (its message says why)" 2
[ ! -e "$tmp/run" ] || die "refused, yet the directory was made"
need=$(sed -n "s/^ckpt-train: rank $bad: .* need \([0-9]*\) bytes of memory.*/\1/p" \
    "$tmp/out")
echo "ok: $np ranks, rank $bad's ulimit -d below the model's $need bytes: every rank exits 2"

# A page above the need: the check passes, an allocation fails there.
launch $(((need + 1023) / 1024 + 4))
every_rank_exited 1
grep -q "ckpt-train: rank $bad: out of memory allocating .* ([0-9]* bytes)" \
    "$tmp/out" || die "rank $bad does not name the array: $(cat "$tmp/out")"
others_name_bad "allocating the model" \
    "could not allocate its memory (its message names what)" 1
echo "ok: $np ranks, an allocation failing on rank $bad: every rank exits 1"
echo PASS
