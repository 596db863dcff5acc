#!/usr/bin/env bash
# tests/mpi/run_train_stall.sh - `ckpt-train --distributed` with one rank
# stopped (SIGSTOP) in the middle of training: the other ranks wait for it
# in their next collective (the gradients' average, or a save's agreement)
# at most --collective-timeout seconds, then the job ends with exit status
# 70 and a message saying a rank died or stalled, instead of hanging.
# Then the last rank stopped right before its MPI_Finalize, after training
# (FINALIZE_SHIM, LD_PRELOAD): the other ranks' exit is bounded the same
# way, by their alarm around MPI_Finalize, and what they printed before
# is not lost. Last, a rank alone whose MPI_Init_thread never returns
# (the same shim): its start is bounded by the same timeout and alarm.
# And a rank alone that started with SIGINT ignored and handlers for
# SIGTERM and SIGALRM has them again in its MPI_Finalize and at exit (the
# same shim reports them).
# Usage: run_train_stall.sh NP CKPT_TRAIN FINALIZE_SHIM MPIEXEC [FLAGS...]
set -euo pipefail
np=$1 train=$2 shim=$3 mpiexec=$4
shift 4
flags=("$@")
# How long each phase may take, by the clock, not by a count of polls (on
# a loaded machine a poll takes longer than its sleep): the point is that
# the job ends, not how fast.
wait_s=150
# --collective-timeout of a rank alone whose MPI_Init_thread must return
# before the call under test hangs: a singleton's MPI_Init_thread starts
# Open MPI's own daemon, which takes over 1 s at a load of 15 on 2 cores;
# with a bound of 1 s the watchdog then ended the start instead (exit 70,
# "MPI_Init_thread did not return") and the hang under test never came.
# A hang that is the start itself keeps 1 s.
init_ok_s=8
# running (a zombie does not run; a stopped process does)
# shellcheck source-path=SCRIPTDIR source=train_lib.sh
. "$(dirname "$0")/train_lib.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-train-stall.XXXXXX")
pid=
ranks=
cleanup() {
    # shellcheck disable=SC2086
    [ -z "$ranks" ] || kill -KILL $ranks 2>/dev/null || true
    [ -z "$pid" ] || kill -KILL "$pid" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT

# A sanitizer runtime that the program links dynamically (GCC's libasan,
# libtsan) has to be the first library loaded: ASan refuses to start with
# the shim ahead of it. It is preloaded ahead of the shim.
preload=$shim
runtime=$(ldd "$train" 2>/dev/null |
    awk '$1 ~ /^lib(asan|tsan)\.so/ { print $3; exit }') || true
[ -z "$runtime" ] || preload=$runtime:$shim

# 0 once the job $pid has ended, 1 when it or one of its ranks still runs
# after $1 seconds. The ranks are what ckpt-train bounds; mpiexec ending
# once they all have is Open MPI's part, and it may not: when one rank
# fails, mpiexec SIGCONTs the others, cancels their waitpid callbacks and
# sends SIGTERM and then SIGKILL a second apart. Under load a rank it
# continued may end first by itself (the stopped rank's watchdog or
# collective timeout ran out while it was stopped: exit 70 at once, the
# message printed, as all 3 did once at a load of 15), and mpiexec then
# kept running, with no rank left, until this script killed it 150 s
# later. So once no rank runs, mpiexec gets 30 s more, then is ended here
# with a note; the ranks' own exit stays bounded by $1 seconds.
find_ranks() { # $ranks: the $np ranks under mpiexec $pid, once all started
    local found
    found=$(pgrep -P "$pid" | tr '\n' ' ') || true
    # shellcheck disable=SC2086
    [ "$(echo $found | wc -w)" -ne "$np" ] || ranks=$found
}
job_ends_within() {
    local deadline=$((SECONDS + $1)) gone
    while [ "$SECONDS" -lt "$deadline" ]; do
        kill -0 "$pid" 2>/dev/null || return 0
        [ -n "$ranks" ] || find_ranks
        # shellcheck disable=SC2086
        if [ -n "$ranks" ] && ! running $ranks; then
            gone=$((SECONDS + 30))
            while [ "$SECONDS" -lt "$gone" ]; do
                kill -0 "$pid" 2>/dev/null || return 0
                sleep 0.05
            done
            echo "note: every rank ended, mpiexec still ran 30 s later; ended here"
            kill -KILL "$pid" 2>/dev/null || true
            return 0
        fi
        sleep 0.05
    done
    ! kill -0 "$pid" 2>/dev/null
}
# Whether the run that left $rc and its stderr in $2 (default $tmp/out)
# exited with $1; under ASan an exit (not an _exit) of a rank alone is 1
# with LeakSanitizer's report of Open MPI's leaks, whatever the program
# returned.
exited_with() {
    [ "$rc" -eq "$1" ] || { [ -n "$runtime" ] && [ "$rc" -eq 1 ] &&
        grep -q "LeakSanitizer: detected memory leaks" "${2:-$tmp/out}"; }
}
job_ps() { # mpiexec and its ranks, for a message
    # shellcheck disable=SC2086
    procs_report "$pid" $ranks
}
die() {
    echo "FAIL: $*" >&2
    [ -f "$tmp/out" ] && sed 's/^/  | /' "$tmp/out" >&2
    exit 1
}

# A bound that cannot be one is refused before anything runs.
rc=0
"$mpiexec" "${flags[@]}" -n "$np" "$train" --distributed --dir "$tmp/run" \
    --collective-timeout 0 >"$tmp/out" 2>&1 || rc=$?
[ "$rc" -ne 0 ] && grep -q "bad --collective-timeout '0' (seconds, 1 to 86400)" \
    "$tmp/out" || die "--collective-timeout 0: exit $rc"
[ ! -e "$tmp/run" ] || die "--collective-timeout 0 made the directory"

"$mpiexec" "${flags[@]}" -n "$np" "$train" --distributed --dir "$tmp/run" \
    --steps 100000000 --save-steps 10 --quiet --hidden 16 \
    --collective-timeout 3 >"$tmp/out" 2>&1 &
pid=$!
# Training, past its first checkpoint (the saver and session are set up).
deadline=$((SECONDS + wait_s))
while [ "$SECONDS" -lt "$deadline" ]; do
    [ -f "$tmp/run/checkpoint" ] && break
    sleep 0.05
done
[ -f "$tmp/run/checkpoint" ] || die "no checkpoint after $wait_s s"
sleep 0.3
ranks=$(pgrep -P "$pid" | tr '\n' ' ') || die "no rank process under mpiexec $pid"
# shellcheck disable=SC2086
[ "$(echo $ranks | wc -w)" -eq "$np" ] || die "found ranks '$ranks', wanted $np"
stopped=$(echo "$ranks" | awk '{print $NF}')
kill -STOP "$stopped" || die "the run ended before a rank was stopped"
# The job must end by itself: 3 s of timeout plus the abort, with a wide
# margin for a loaded machine (the point is that it ends, not how fast).
if ! job_ends_within "$wait_s"; then
    die "the job still ran $wait_s s after one of its $np ranks was stopped: $(job_ps)"
fi
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" -ne 0 ] || die "the job exited 0 with a rank stopped"
grep -Eq "ckpt_mpi: rank [0-9]+: [^:]+: other ranks did not respond within 3 s; aborting the job \(a rank died or stalled" \
    "$tmp/out" || die "no message on the stalled rank (exit $rc)"
grep -q "errorcode 70" "$tmp/out" || [ "$rc" -eq 70 ] ||
    die "the job ended with exit $rc, not the timeout's 70"
echo "ok: $np ranks, one stopped: ended with exit $rc: $(grep -m1 -o 'rank [0-9]*: [^:]*: other ranks did not respond within 3 s' "$tmp/out")"

# The last rank stops before MPI_Finalize: rank 0 trained to the end, then
# its MPI_Finalize is cut short by the alarm.
ranks=
rm -rf "$tmp/run"
"$mpiexec" "${flags[@]}" -x LD_PRELOAD="$preload" \
    -x CKPT_STALL_FINALIZE_RANK="$((np - 1))" -n "$np" "$train" \
    --distributed --dir "$tmp/run" --steps 30 --save-steps 10 --quiet \
    --hidden 16 --collective-timeout 3 >"$tmp/out" 2>&1 &
pid=$!
if ! job_ends_within "$wait_s"; then
    die "the job still ran $wait_s s after a rank stalled before MPI_Finalize: $(job_ps)"
fi
rc=0
wait "$pid" || rc=$?
pid=
grep -q "finalize_stall_shim: rank $((np - 1)) stops before MPI_Finalize" \
    "$tmp/out" || die "the shim did not stop rank $((np - 1)) (exit $rc)"
grep -qx "done: step 30 on $np ranks" "$tmp/out" ||
    die "the run did not train to the end before MPI_Finalize"
# Whichever waiting rank's alarm fires first exits 70, and mpiexec then
# ends the others: with 3 ranks that may be rank 1, not rank 0.
grep -Eq "ckpt-train: rank [0-9]+: MPI_Finalize did not return within 3 s \(a rank died or stalled\); exiting with status 70" \
    "$tmp/out" || die "no rank's MPI_Finalize was cut short (exit $rc)"
[ "$rc" -ne 0 ] || die "the job exited 0 with a rank stalled in its exit"
echo "ok: $np ranks, the last stopped before MPI_Finalize: $(grep -m1 -Eo 'rank [0-9]+: MPI_Finalize did not return' "$tmp/out"), exit 70"

# What a rank printed before its MPI_Finalize was cut short still reaches
# its stdout when that is a file or a pipe (fully buffered; mpiexec gives
# Open MPI's ranks a terminal, so this runs one rank alone, as a
# singleton): MPI_Finalize never returns (CKPT_HANG_FINALIZE), the alarm
# ends the process with _exit(70), which flushes nothing itself.
if [ "$np" -eq 2 ]; then
    rm -rf "$tmp/run"
    rc=0
    env LD_PRELOAD="$preload" CKPT_HANG_FINALIZE=1 timeout 60 "$train" \
        --distributed --dir "$tmp/run" --steps 20 --save-steps 10 --quiet \
        --hidden 16 --collective-timeout "$init_ok_s" >"$tmp/out" \
        2>"$tmp/err" || rc=$?
    cat "$tmp/err" >>"$tmp/out"
    [ "$rc" -eq 70 ] || die "a rank alone, MPI_Finalize hanging: exit $rc, not 70"
    grep -q "ckpt-train: rank 0: MPI_Finalize did not return within $init_ok_s s" \
        "$tmp/err" || die "no message on the hanging MPI_Finalize"
    grep -qx "done: step 20 on 1 ranks" "$tmp/out" ||
        die "stdout lost what was printed before MPI_Finalize"
    echo "ok: a rank alone whose MPI_Finalize hangs: exit 70, its stdout kept"
    # MPI_Init_thread never returns (CKPT_HANG_INIT: a rank that never
    # joins): the alarm ends it, naming the call; nothing was trained.
    rm -rf "$tmp/run"
    rc=0
    env LD_PRELOAD="$preload" CKPT_HANG_INIT=1 timeout 60 "$train" \
        --distributed --dir "$tmp/run" --steps 20 --quiet \
        --collective-timeout 1 >"$tmp/out" 2>"$tmp/err" || rc=$?
    cat "$tmp/err" >>"$tmp/out"
    grep -q "finalize_stall_shim: MPI_Init_thread hangs" "$tmp/err" ||
        die "the shim did not hold MPI_Init_thread (exit $rc)"
    [ "$rc" -eq 70 ] || die "MPI_Init_thread hanging: exit $rc, not 70"
    grep -q "ckpt-train: MPI_Init_thread did not return within 1 s (a rank never started or joined the job); exiting with status 70" \
        "$tmp/err" || die "no message on the hanging MPI_Init_thread"
    [ ! -e "$tmp/run" ] || die "MPI_Init_thread hanging: the directory was made"
    echo "ok: a rank alone whose MPI_Init_thread hangs: exit 70"
    # --help printed, then the start's agreement never completes
    # (CKPT_HANG_START: a peer that never posts it): the watchdog ends the
    # rank with _exit(70), which flushes no stdio buffer, so the help on
    # stdout (a file: fully buffered) must be written out before the
    # wait. Before, it was lost.
    rc=0
    env LD_PRELOAD="$preload" CKPT_HANG_START=1 timeout 60 "$train" \
        --distributed --help --collective-timeout "$init_ok_s" >"$tmp/out" \
        2>"$tmp/err" || rc=$?
    grep -q "finalize_stall_shim: MPI_Wait hangs" "$tmp/err" ||
        die "the shim did not hold the start's wait (exit $rc)"
    [ "$rc" -eq 70 ] || die "the start's wait hanging: exit $rc, not 70"
    grep -q "checking the options and memory: other ranks did not respond within $init_ok_s s" \
        "$tmp/err" || die "no message on the hanging start: $(cat "$tmp/err")"
    grep -q "^usage: ckpt-train " "$tmp/out" ||
        die "--help then a hanging start: the help printed was lost"
    echo "ok: a rank alone, --help then its start's wait hangs: exit 70, the help kept"
    # The same two hangs in a process started with SIGALRM blocked in its
    # signal mask (CKPT_BLOCK_SIGALRM: an inherited mask): the alarm
    # still ends each, instead of staying pending. Each message names the
    # call that hung (a FINALIZE run ended by its start does not pass).
    for hang in INIT:"MPI_Init_thread did not return within 1 s":1 \
        FINALIZE:"rank 0: MPI_Finalize did not return within $init_ok_s s":$init_ok_s; do
        bound=${hang##*:} hang=${hang%:*}
        want=${hang#*:} hang=${hang%%:*}
        rm -rf "$tmp/run"
        rc=0
        env LD_PRELOAD="$preload" CKPT_BLOCK_SIGALRM=1 "CKPT_HANG_$hang=1" \
            timeout 60 "$train" --distributed --dir "$tmp/run" --steps 20 \
            --save-steps 10 --quiet --hidden 16 --collective-timeout "$bound" \
            >"$tmp/out" 2>"$tmp/err" || rc=$?
        cat "$tmp/err" >>"$tmp/out"
        [ "$rc" -eq 70 ] ||
            die "SIGALRM blocked at start, $hang hanging: exit $rc, not 70"
        grep -q "ckpt-train: $want" "$tmp/err" ||
            die "SIGALRM blocked at start: no message on the hanging $hang"
        echo "ok: SIGALRM blocked at start, $hang hanging: exit 70"
    done
    # Dispositions the rank started with (CKPT_REPORT_SIGNALS: SIGINT
    # ignored, the shim's handlers for SIGTERM and SIGALRM; SIGALRM
    # blocked; an alarm an hour ahead) are what it has again once the
    # training is torn down, in MPI_Finalize and at exit: before, SIGINT
    # and SIGTERM were reset to SIG_DFL after the session closed (a Ctrl-C
    # the job ignored would kill the rank in its exit), the exit alarm's
    # handler stayed, SIGALRM unblocked; and later, the bound on
    # MPI_Init_thread and MPI_Finalize (then an alarm of its own) replaced
    # the process's pending alarm and cancelled it (now a watchdog thread,
    # which touches no signal: SIGALRM stays the shim's, blocked, in
    # MPI_Finalize too).
    rm -rf "$tmp/run"
    rc=0
    env LD_PRELOAD="$preload" CKPT_REPORT_SIGNALS=1 CKPT_BLOCK_SIGALRM=1 \
        timeout 60 "$train" --distributed --dir "$tmp/run" --steps 20 \
        --save-steps 10 --quiet --hidden 16 --collective-timeout 30 \
        >"$tmp/out" 2>"$tmp/err" || rc=$?
    cat "$tmp/err" >>"$tmp/out"
    exited_with 0 || die "dispositions reported: exit $rc, not 0"
    grep -qx "finalize_stall_shim: ckpt-train: in MPI_Finalize: SIGINT ignored, SIGTERM the shim's, SIGALRM the shim's, blocked, its alarm pending" \
        "$tmp/err" || die "SIGINT or SIGTERM not restored before MPI_Finalize"
    grep -qx "finalize_stall_shim: ckpt-train: at exit: SIGINT ignored, SIGTERM the shim's, SIGALRM the shim's, blocked, its alarm pending" \
        "$tmp/err" || die "the dispositions at exit are not the ones it started with"
    echo "ok: a rank alone: SIGINT, SIGTERM and SIGALRM as it started, in MPI_Finalize and at exit"
    # A model of more gradients than the one MPI_Iallreduce averaging them
    # counts (an int) is refused before anything is made or allocated.
    rm -rf "$tmp/run"
    rc=0
    timeout 60 "$train" --distributed --dir "$tmp/run" --hidden 65536 \
        --layers 64 >"$tmp/out" 2>&1 || rc=$?
    exited_with 2 || die "gradients past an MPI count: exit $rc, not 2"
    grep -q "ckpt-train: rank 0: --hidden 65536 --layers 64 --batch 64 --mode async --distributed: the gradients' average would reduce 270589886475 floats in one MPI_Iallreduce, more than an MPI count holds (2147483647)" \
        "$tmp/out" || die "gradients past an MPI count: no message naming them"
    [ ! -e "$tmp/run" ] || die "gradients past an MPI count: the directory was made"
    echo "ok: a rank alone, gradients past an MPI count: refused, exit 2"
    # Its stdout lost (/dev/full), the run otherwise done: exit 3, as
    # without --distributed.
    rm -rf "$tmp/run"
    rc=0
    timeout 60 "$train" --distributed --dir "$tmp/run" --steps 20 \
        --save-steps 10 --quiet --hidden 16 >/dev/full 2>"$tmp/err" || rc=$?
    exited_with 3 "$tmp/err" && grep -q "ckpt-train: could not write stdout: No space left on device" \
        "$tmp/err" || { cat "$tmp/err" >"$tmp/out"; die "stdout on /dev/full: exit $rc, not 3"; }
    echo "ok: a rank alone, stdout on /dev/full: exit 3"
    # Its stdout closed at start (>&-), and a file opened inside
    # MPI_Init_thread (CKPT_INIT_OPENS: as Open MPI's singleton start
    # opens its pipes and sockets) on the lowest free descriptor: that
    # file must not become the trainer's stdout. Before, it got
    # descriptor 1 and rank 0's "done: ..." and summary lines.
    rm -rf "$tmp/run"
    rc=0
    env LD_PRELOAD="$preload" CKPT_INIT_OPENS="$tmp/mpi_file" timeout 60 \
        "$train" --distributed --dir "$tmp/run" --steps 20 --save-steps 10 \
        --hidden 16 >&- 2>"$tmp/err" || rc=$?
    cat "$tmp/err" >"$tmp/out"
    [ -e "$tmp/mpi_file" ] || die "stdout closed: the shim opened no file"
    [ ! -s "$tmp/mpi_file" ] ||
        die "stdout closed: the trainer wrote into MPI's file: $(cat "$tmp/mpi_file")"
    exited_with 3 && grep -q "ckpt-train: could not write stdout: it was closed when ckpt-train started" \
        "$tmp/err" || die "stdout closed: exit $rc, not 3, or no message: $(cat "$tmp/err")"
    echo "ok: a rank alone, stdout closed at start: nothing into MPI's files, exit 3"
fi
echo PASS
