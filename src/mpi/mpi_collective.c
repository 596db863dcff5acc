/* mpi/mpi_collective.c - every wait on other ranks, bounded: non-blocking
 * collectives polled with MPI_Testall until they complete or the saver's
 * collective timeout passes, which ends the job with MPI_Abort (a dead or
 * stalled peer can never be waited out, and an MPI collective cannot be
 * cancelled); the caller's own requests get the same bound through
 * ckpt_mpi_saver_wait_requests, whose abort says that it was the caller's
 * requests that were waited for, not the saver's collectives. Also the
 * agreement of all ranks on one outcome: the most severe error, with the
 * message of the rank that reported it. */
#include "mpi_internal.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double ckpt__mpi_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Why a wait on other ranks may never end, for the abort's message: one
 * for the saver's own collectives, one for the caller's requests waited
 * for with ckpt_mpi_saver_wait_requests (which the saver never posts, so
 * its collectives are no cause). */
static const char saver_hint[] =
    "a rank died or stalled, or made another collective call of the saver "
    "than this one: every rank makes them all, in the same order";
static const char caller_hint[] =
    "a rank died or stalled, or did not post its part of the caller's "
    "collectives waited for here (ckpt_mpi_saver_wait_requests): every "
    "rank posts them all, in the same order";

/* How much of the saver's directory an abort's line names (after
 * "; saver of "): every line names the saver it comes from, once its
 * directory is known (not yet while open duplicates the communicator). */
#define SAVER_OF_MAX 1024

/* Say `line` on stderr and end the job. One write(2) with SIGPIPE held
 * back (ckpt__write_no_signal, as ckpt_log_stderr writes): a stderr pipe
 * whose reader went away loses the line, and the job still ends here with
 * MPI_Abort, not by SIGPIPE killing this rank first. */
static void abort_with(ckpt_mpi_saver *s, const char *line)
{
    /* A failed write has nowhere left to be said. */
    (void)ckpt__write_no_signal(STDERR_FILENO, line, strlen(line), SIGPIPE,
                                EPIPE);
    MPI_Abort(s->comm_user, 70);
}

/* The abort of a wait past the timeout: `what` was waited for, `hint`
 * says what may have happened. */
static void timeout_abort(ckpt_mpi_saver *s, const char *what, const char *hint)
{
    char line[3 * CKPT__MPI_MSG + SAVER_OF_MAX];
    snprintf(line, sizeof(line),
             "ckpt_mpi: rank %d: %s: other ranks did not respond within "
             "%g s; aborting the job (%s)%s%.*s\n",
             s->rank, what, s->timeout_s, hint, s->ds.dir ? "; saver of " : "",
             SAVER_OF_MAX, s->ds.dir ? s->ds.dir : "");
    abort_with(s, line);
}

void ckpt__mpi_abort(ckpt_mpi_saver *s, const char *what)
{
    char line[2 * CKPT__MPI_MSG + SAVER_OF_MAX];
    snprintf(line, sizeof(line),
             "ckpt_mpi: rank %d: %s; aborting the job (the other ranks "
             "would wait for this rank's part)%s%.*s\n",
             s->rank, what, s->ds.dir ? "; saver of " : "", SAVER_OF_MAX,
             s->ds.dir ? s->ds.dir : "");
    abort_with(s, line);
}

/* ckpt__mpi_test_all with the hint of what is waited for. */
static int test_bounded(ckpt_mpi_saver *s, MPI_Request *reqs, int n,
                        double since, const char *what, const char *hint)
{
    int done = 0;
    MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
    if (!done && since >= 0 && ckpt__mpi_now() - since > s->timeout_s)
        timeout_abort(s, what, hint);
    return done;
}

int ckpt__mpi_test_all(ckpt_mpi_saver *s, MPI_Request *reqs, int n,
                       double since, const char *what)
{
    return test_bounded(s, reqs, n, since, what, saver_hint);
}

/* `what`, then the ranks whose receive is pending, into buf[0..n): "what
 * (no answer from rank 1, 3)", at most a few of them named. */
static void name_pending(char *buf, size_t n, const char *what,
                         MPI_Request *reqs, int count)
{
    int outcount = 0, shown = 0, more = 0;
    size_t used;
    int *done = ckpt__calloc((size_t)count, sizeof(int));
    /* Testall left them all pending: collect the ones complete by now. */
    if (done)
        MPI_Testsome(count, reqs, &outcount, done, MPI_STATUSES_IGNORE);
    used = (size_t)snprintf(buf, n, "%s (no answer from rank", what);
    for (int r = 0; r < count && used < n; r++) {
        if (reqs[r] == MPI_REQUEST_NULL)
            continue;
        if (shown == 8) {
            more++;
            continue;
        }
        used += (size_t)snprintf(buf + used, n - used, "%s %d",
                                 shown ? "," : "", r);
        shown++;
    }
    if (more && used < n)
        used += (size_t)snprintf(buf + used, n - used, " and %d more", more);
    if (used < n)
        snprintf(buf + used, n - used, ")");
    ckpt__free(done);
}

int ckpt__mpi_test_from_ranks(ckpt_mpi_saver *s, MPI_Request *reqs, int n,
                              double since, const char *what)
{
    char named[CKPT__MPI_MSG];
    int done = 0;
    MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
    if (done || since < 0 || ckpt__mpi_now() - since <= s->timeout_s)
        return done;
    name_pending(named, sizeof(named), what, reqs, n);
    timeout_abort(s, named, saver_hint);
    return 0;
}

long ckpt__mpi_pause_ns(long round, double waited_s)
{
    /* Yield first (peers on the same cores get to run, a quick answer is
     * seen at once), then sleep an eighth of the time waited so far, from
     * 10 us up to 1 ms. A sleeping rank moves no collective along (Open
     * MPI progresses one only inside the rank's own MPI calls), so its
     * peers wait for it to wake as well: sleeps that doubled each round,
     * whatever the wait, overshot a 1-2 ms wait by up to 1.3 ms (a restore
     * on 2 ranks: the agreement after the reads took 1.9 ms on a rank
     * whose peer finished 0.6 ms after it). Now the overshoot is at most
     * an eighth of the wait, and a long wait still wakes at most about a
     * thousand times a second. */
    double s = waited_s / 8;
    if (round < CKPT__MPI_PAUSE_YIELDS)
        return 0;
    if (!(s >= CKPT__MPI_PAUSE_MIN_NS * 1e-9)) /* NaN too: the shortest */
        return CKPT__MPI_PAUSE_MIN_NS;
    if (s > CKPT__MPI_PAUSE_MAX_NS * 1e-9)
        return CKPT__MPI_PAUSE_MAX_NS;
    return (long)(s * 1e9);
}

void ckpt__mpi_pause(long *round, double since)
{
    long ns = ckpt__mpi_pause_ns(*round, ckpt__mpi_now() - since);
    if (ns == 0) {
        sched_yield();
    } else {
        struct timespec ts = {0, ns};
        nanosleep(&ts, NULL);
    }
    (*round)++;
}

/* ckpt__mpi_wait_all with the hint of what is waited for. */
static void wait_bounded(ckpt_mpi_saver *s, MPI_Request *reqs, int n,
                         const char *what, const char *hint)
{
    double start = ckpt__mpi_now();
    long round = 0;
    while (!test_bounded(s, reqs, n, start, what, hint))
        ckpt__mpi_pause(&round, start);
}

void ckpt__mpi_wait_all(ckpt_mpi_saver *s, MPI_Request *reqs, int n,
                        const char *what)
{
    wait_bounded(s, reqs, n, what, saver_hint);
}

static int wait_requests_call(ckpt_mpi_saver *s, int n, MPI_Request *reqs,
                              const char *what)
{
    if (!s) /* named as the public call */
        return ckpt__error_null_arg("ckpt_mpi_saver_wait_requests", "s");
    /* as MPI_Waitall(0, NULL, ...): no requests need no array */
    if (n > 0 && !reqs)
        return ckpt__error_null_arg("ckpt_mpi_saver_wait_requests", "reqs");
    if (n < 0)
        return ckpt__error(
            CKPT_EINVAL, "ckpt_mpi_saver_wait_requests: n is %d (negative)", n);
    if (ckpt__mpi_refuse_worker(s, "wait_requests") < 0)
        return CKPT_ESTATE;
    if (n > 0)
        wait_bounded(s, reqs, n,
                     what ? what : "waiting for the caller's requests",
                     caller_hint);
    return 0;
}

void ckpt__mpi_status_set(ckpt__mpi_status *st, int rank, int err)
{
    memset(st, 0, sizeof(*st));
    st->code = err < 0 ? err : 0;
    st->rank = rank;
    if (err < 0)
        snprintf(st->msg, sizeof(st->msg), "%s", ckpt_error_last()->message);
}

int ckpt__mpi_status_raise(const ckpt__mpi_status *st)
{
    if (st->code == 0)
        return 0;
    return ckpt__error(st->code, "%s", st->msg);
}

int ckpt__mpi_agree(ckpt_mpi_saver *s, MPI_Comm comm, int err, const char *what)
{
    int mine[2] = {err < 0 ? err : 0, s->rank};
    int worst[2];
    ckpt__mpi_status st;
    MPI_Request req;
    MPI_Iallreduce(mine, worst, 1, MPI_2INT, MPI_MINLOC, comm, &req);
    ckpt__mpi_wait_all(s, &req, 1, what);
    if (worst[0] == 0)
        return 0;
    if (worst[1] == s->rank) {
        char own[CKPT__MPI_MSG];
        snprintf(own, sizeof(own), "%s", ckpt_error_last()->message);
        memset(&st, 0, sizeof(st));
        st.code = worst[0];
        st.rank = s->rank;
        snprintf(st.msg, sizeof(st.msg), "rank %d: %.480s", s->rank, own);
    }
    MPI_Ibcast(&st, (int)sizeof(st), MPI_BYTE, worst[1], comm, &req);
    ckpt__mpi_wait_all(s, &req, 1, what);
    return ckpt__mpi_status_raise(&st);
}

int ckpt__mpi_bcast_outcome(ckpt_mpi_saver *s, MPI_Comm comm, int err,
                            const char *what)
{
    ckpt__mpi_status st;
    MPI_Request req;
    ckpt__mpi_status_set(&st, s->rank, err);
    MPI_Ibcast(&st, (int)sizeof(st), MPI_BYTE, 0, comm, &req);
    ckpt__mpi_wait_all(s, &req, 1, what);
    return ckpt__mpi_status_raise(&st);
}

/* ---- the public calls: each runs with cancellation disabled ------------ */

int ckpt_mpi_saver_wait_requests(ckpt_mpi_saver *s, int n, MPI_Request *reqs,
                                 const char *what)
{
    CKPT__RETURN_UNCANCELLED(wait_requests_call(s, n, reqs, what));
}
