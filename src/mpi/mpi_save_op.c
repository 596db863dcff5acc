/* mpi/mpi_save_op.c - the life of one distributed save after its snapshot,
 * as a state machine the caller's thread advances without blocking:
 *
 *   WRITING      this rank's data file is written (background thread, or
 *                in place for a synchronous save), after the thread has
 *                copied what an overlapped snapshot left open
 *   GATHER_HDR   rank 0 gathers every rank's status        (MPI_Isend to
 *                rank 0, one MPI_Irecv per rank there: a timeout names
 *                the ranks it has no status from)
 *   GATHER_BLOB  rank 0 gathers every rank's entries       (MPI_Igatherv)
 *   COMMITTING   rank 0 merges the index and names the checkpoint
 *                (background thread), or skips that when a rank failed
 *   OUTCOME      rank 0's verdict reaches every rank       (MPI_Ibcast)
 *
 * Other ranks post their status, entries and the broadcast together once
 * their file is written and wait only for the verdict. All of it goes over
 * comm_op, where only saves, one at a time, post anything, so it matches
 * in order on every rank. Every wait on peers is bounded by the collective
 * timeout (then MPI_Abort). The background thread never calls MPI. */
#include "mpi_internal.h"

#include "io/fs_internal.h"

#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

/* ---- the background thread ---------------------------------------------- */

static void run_job(ckpt_mpi_saver *s, int job)
{
    ckpt__save_op *op = &s->op;
    int err;
    if (job == JOB_WRITE) {
        ckpt__mpi_snapshot_copy_rest(s); /* an overlapped snapshot's */
        ckpt__mpi_snapshot_seal(s, &s->image);
        err = ckpt__mpi_shard_write(s, op);
        uint64_t bytes = op->mine.bytes;
        ckpt__mpi_status_set(&op->mine, s->rank, err);
        op->mine.bytes = bytes;
        op->mine.blob_len = err == 0 ? (int32_t)op->blob.size : 0;
    } else {
        uint64_t index_bytes = 0;
        err = ckpt__mpi_commit(s, op, &index_bytes);
        ckpt__mpi_status_set(&op->outcome, 0, err);
        if (err < 0)
            snprintf(op->outcome.msg, sizeof(op->outcome.msg), "rank 0: %.480s",
                     ckpt_error_last()->message);
        op->outcome.bytes = index_bytes;
    }
}

/* A job is queued and not yet done. */
static int job_queued(const ckpt_mpi_saver *s)
{
    return s->job != JOB_NONE && !s->job_done;
}

int ckpt__mpi_refuse_worker(const ckpt_mpi_saver *s, const char *what)
{
    if (!ckpt__bg_thread_runs_for(s))
        return 0;
    return ckpt__error(CKPT_ESTATE,
                       "mpi saver %s: %s: called on the saver's own "
                       "background thread (from a log callback), which makes "
                       "no MPI call of the caller's; call the saver from the "
                       "thread that saves",
                       s->ds.dir, what);
}

static void *worker_main(void *arg)
{
    ckpt_mpi_saver *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        int job;
        while (!s->stopping && !s->eviction.pending && !job_queued(s))
            pthread_cond_wait(&s->cv, &s->mu);
        /* A queued write goes first (it has a save waiting for it); a
         * commit only after the deletion, since it may reuse a name. */
        if (s->eviction.pending && !(job_queued(s) && s->job == JOB_WRITE)) {
            ckpt__eviction_run(&s->eviction, &s->ds, &s->mu, &s->cv);
            continue;
        }
        if (!job_queued(s))
            break; /* stopping and idle */
        job = s->job;
        pthread_mutex_unlock(&s->mu);
        /* Woken by the caller's save_async (or poll): where no core is
         * free the wake-up can preempt the caller before it returns to its
         * loop (0-13 ms on 4 ranks sharing 2 cores). Yielding once hands
         * the core back first; with a core to spare it returns at once. */
        sched_yield();
        run_job(s, job);
        pthread_mutex_lock(&s->mu);
        s->job_done = 1;
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

int ckpt__mpi_thread_start(ckpt_mpi_saver *s)
{
    return ckpt__bg_thread_start(&s->thread, worker_main, s,
                                 "mpi saver: starting the writer thread");
}

void ckpt__mpi_thread_stop(ckpt_mpi_saver *s)
{
    ckpt__bg_thread_stop(&s->thread, &s->mu, &s->cv, &s->stopping);
}

/* Asynchronous saves hand the job to the thread; synchronous ones run it
 * here. Either way job/job_done change under mu, so the thread (which may
 * exist from earlier async saves) never sees a half-posted job. */
void ckpt__mpi_job_post(ckpt_mpi_saver *s, int job)
{
    if (!s->op.is_async) {
        if (job == JOB_COMMIT)
            ckpt__mpi_evicting(s, 1); /* it may reuse an evicted name */
        run_job(s, job);
    }
    pthread_mutex_lock(&s->mu);
    s->job = job;
    s->job_done = !s->op.is_async;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

int ckpt__mpi_job_done(ckpt_mpi_saver *s)
{
    int done;
    pthread_mutex_lock(&s->mu);
    done = s->job_done;
    if (done) {
        s->job = JOB_NONE;
        s->job_done = 0;
    }
    pthread_mutex_unlock(&s->mu);
    return done;
}

void ckpt__mpi_evict_later(ckpt_mpi_saver *s, ckpt__kept_list *evicted)
{
    ckpt__saved_error saved;
    int err = 0;
    if (evicted->n == 0) {
        ckpt__dir_state_delete_evicted(&s->ds, evicted); /* frees it */
        return;
    }
    /* Where MPI may see only one thread, no thread is started for this. */
    if (s->thread_level < MPI_THREAD_FUNNELED) {
        ckpt__dir_state_delete_evicted(&s->ds, evicted);
        return;
    }
    ckpt__error_save(&saved); /* the commit succeeded: keep its state */
    err = ckpt__mpi_thread_start(s);
    ckpt__error_restore(&saved);
    if (err < 0) {
        ckpt__dir_state_delete_evicted(&s->ds, evicted);
        return;
    }
    pthread_mutex_lock(&s->mu);
    ckpt__eviction_queue(&s->eviction, &s->ds, evicted, &s->cv);
    pthread_mutex_unlock(&s->mu);
}

int ckpt__mpi_evicting(ckpt_mpi_saver *s, int wait)
{
    int evicting;
    pthread_mutex_lock(&s->mu);
    while (wait && s->eviction.pending)
        pthread_cond_wait(&s->cv, &s->mu);
    evicting = s->eviction.pending;
    pthread_mutex_unlock(&s->mu);
    return evicting;
}

/* ---- the agreement --------------------------------------------------------
 */

static void oom_abort(ckpt_mpi_saver *s, void *p)
{
    if (!p)
        ckpt__mpi_abort(s, "out of memory in a save's agreement");
}

/* Phase one's statuses travel point to point (an MPI_Isend from each rank,
 * one MPI_Irecv per rank on rank 0) rather than in one MPI_Igather, so
 * that rank 0, timing out, can name the ranks it has no status from. One
 * save's agreement at a time on comm_op, and MPI keeps messages of one
 * sender and tag in order: a rank already sending its next save's status
 * is received by the next save's receive. */
#define STATUS_TAG 7

static void post_gathers(ckpt_mpi_saver *s, ckpt__save_op *op)
{
    op->posted_at = ckpt__mpi_now();
    op->mine.step = op->step; /* rank 0 checks every rank saves the same */
    if (s->rank != 0) {
        MPI_Isend(&op->mine, (int)sizeof(op->mine), MPI_BYTE, 0, STATUS_TAG,
                  s->comm_op, &op->req[0]);
        MPI_Igatherv(op->blob.ptr, op->mine.blob_len, MPI_BYTE, NULL, NULL,
                     NULL, MPI_BYTE, 0, s->comm_op, &op->req[1]);
        MPI_Ibcast(&op->outcome, (int)sizeof(op->outcome), MPI_BYTE, 0,
                   s->comm_op, &op->req[2]);
        op->nreq = 3;
        op->state = OP_OUTCOME;
        return;
    }
    op->all = ckpt__calloc((size_t)s->size, sizeof(*op->all));
    op->from = ckpt__malloc((size_t)s->size * sizeof(*op->from));
    oom_abort(s, op->all);
    oom_abort(s, op->from);
    op->all[0] = op->mine;
    op->from[0] = MPI_REQUEST_NULL;
    for (int r = 1; r < s->size; r++)
        MPI_Irecv(&op->all[r], (int)sizeof(op->all[r]), MPI_BYTE, r, STATUS_TAG,
                  s->comm_op, &op->from[r]);
    op->state = OP_GATHER_HDR;
}

static void post_blob_gather(ckpt_mpi_saver *s, ckpt__save_op *op)
{
    int64_t total = 0;
    op->counts = ckpt__calloc((size_t)s->size, sizeof(int));
    op->displs = ckpt__calloc((size_t)s->size, sizeof(int));
    oom_abort(s, op->counts);
    oom_abort(s, op->displs);
    for (int r = 0; r < s->size; r++) {
        op->counts[r] = op->all[r].blob_len;
        op->displs[r] = (int)total;
        total += op->all[r].blob_len;
        if (total > INT32_MAX)
            ckpt__mpi_abort(s, "index entries too large to gather");
    }
    op->blobs = ckpt__malloc(total ? (size_t)total : 1);
    oom_abort(s, op->blobs);
    op->posted_at = ckpt__mpi_now();
    MPI_Igatherv(op->blob.ptr, op->mine.blob_len, MPI_BYTE, op->blobs,
                 op->counts, op->displs, MPI_BYTE, 0, s->comm_op, &op->req[0]);
    op->nreq = 1;
    op->state = OP_GATHER_BLOB;
}

static void post_outcome(ckpt_mpi_saver *s, ckpt__save_op *op)
{
    op->posted_at = ckpt__mpi_now();
    MPI_Ibcast(&op->outcome, (int)sizeof(op->outcome), MPI_BYTE, 0, s->comm_op,
               &op->req[0]);
    op->nreq = 1;
    op->state = OP_OUTCOME;
}

/* Rank 0, every status in: commit, or report the first failed rank, or
 * the first rank that saves another step than rank 0 (each rank named its
 * file by its own step; the checkpoint would take rank 0's name while
 * holding another step's values on that rank). */
static void decide(ckpt_mpi_saver *s, ckpt__save_op *op)
{
    for (int r = 0; r < s->size; r++) {
        if (op->all[r].code == 0)
            continue;
        memset(&op->outcome, 0, sizeof(op->outcome));
        op->outcome.code = op->all[r].code;
        op->outcome.rank = r;
        snprintf(op->outcome.msg, sizeof(op->outcome.msg), "rank %d: %.480s", r,
                 op->all[r].msg);
        post_outcome(s, op);
        return;
    }
    for (int r = 1; r < s->size; r++) {
        if (op->all[r].step == op->all[0].step)
            continue;
        memset(&op->outcome, 0, sizeof(op->outcome));
        op->outcome.code = CKPT_EINVAL;
        op->outcome.rank = r;
        snprintf(op->outcome.msg, sizeof(op->outcome.msg),
                 "mpi saver %.200s: rank %d saves step %lld but rank 0 step "
                 "%lld: a collective save takes the same step on every rank "
                 "(nothing was committed)",
                 s->ds.dir, r, (long long)op->all[r].step,
                 (long long)op->all[0].step);
        post_outcome(s, op);
        return;
    }
    op->state = OP_COMMITTING;
    ckpt__mpi_job_post(s, JOB_COMMIT);
}

/* ---- delivery -------------------------------------------------------------
 */

static void op_reset(ckpt__save_op *op)
{
    ckpt__free(op->all);
    ckpt__free(op->from);
    op->from = NULL;
    ckpt__free(op->counts);
    ckpt__free(op->displs);
    ckpt__free(op->blobs);
    op->all = NULL;
    op->counts = op->displs = NULL;
    op->blobs = NULL;
    op->nreq = 0;
    op->temp_exists = 0;
    op->state = OP_IDLE;
}

/* Rank 0, a committed save: say it is durable and named, in the words of
 * the single-process saver's writer ("checkpoint P (step N) is durable:
 * ..."), with every rank's bytes and the index's. */
static void log_durable(ckpt_mpi_saver *s, const ckpt__save_op *op,
                        double write_s)
{
    const ckpt_saver_options *o = &s->opts.base;
    uint64_t bytes = op->outcome.bytes;
    for (int r = 0; op->all && r < s->size; r++)
        bytes += op->all[r].bytes;
    if (op->step == CKPT_NO_STEP)
        ckpt__log(o->log, o->log_payload, o->log_level, CKPT_LOG_INFO,
                  "checkpoint %s is durable on %d ranks: %" PRIu64
                  " bytes in %.3f s",
                  op->prefix.ptr, s->size, bytes, write_s);
    else
        ckpt__log(o->log, o->log_payload, o->log_level, CKPT_LOG_INFO,
                  "checkpoint %s (step %" PRId64 ") is durable on %d ranks: "
                  "%" PRIu64 " bytes in %.3f s",
                  op->prefix.ptr, op->step, s->size, bytes, write_s);
}

static void deliver(ckpt_mpi_saver *s, ckpt__save_op *op)
{
    const ckpt_saver_options *o = &s->opts.base;
    ckpt_save_result res;
    int ok = op->outcome.code == 0;
    memset(&res, 0, sizeof(res));
    res.ticket =
        op->is_async ? op->ticket : 0; /* 0: a sync save, as documented */
    res.step = op->step;
    res.prefix = op->prefix.ptr;
    res.status = op->outcome.code;
    res.error = ok ? NULL : op->outcome.msg;
    res.blocking_s = op->blocking_s;
    res.write_s = ckpt__mpi_now() - op->started_at;
    res.bytes = op->mine.bytes + (s->rank == 0 ? op->outcome.bytes : 0);
    if (!ok && op->temp_exists)
        ckpt__fs_remove_quiet(s->fs, op->temp_path.ptr);
    if (ok && s->rank == 0)
        log_durable(s, op, res.write_s);
    ckpt__metrics_finished(&s->metrics, ok, op->step, res.bytes, res.write_s);
    if (ok) {
        ckpt__mpi_failures_note_ok(&s->failures, op->step);
    } else {
        if (op->prefix.ptr)
            ckpt__log(o->log, o->log_payload, o->log_level, CKPT_LOG_WARN,
                      "%s: distributed save failed: %s", op->prefix.ptr,
                      op->outcome.msg);
        else /* refused before it was named (a negative step, say) */
            ckpt__log(o->log, o->log_payload, o->log_level, CKPT_LOG_WARN,
                      "distributed save of step %" PRId64 " failed: %s",
                      op->step, op->outcome.msg);
        if (op->is_async)
            ckpt__mpi_failure_add(&s->failures, &op->outcome, op->step,
                                  op->prefix.ptr);
    }
    s->last_outcome = op->outcome;
    op_reset(op);
    if (o->on_save_done) {
        s->delivering++; /* ckpt_mpi_saver_free refuses to run meanwhile */
        o->on_save_done(&res, o->on_save_done_payload);
        s->delivering--;
    }
}

void ckpt__mpi_op_start(ckpt_mpi_saver *s, int local_err)
{
    ckpt__save_op *op = &s->op;
    op->state = OP_WRITING;
    if (local_err == 0) {
        ckpt__mpi_job_post(s, JOB_WRITE);
        return;
    }
    /* Nothing to write: the failure goes straight to the agreement. */
    ckpt__mpi_status_set(&op->mine, s->rank, local_err);
    pthread_mutex_lock(&s->mu);
    s->job = JOB_WRITE;
    s->job_done = 1;
    pthread_mutex_unlock(&s->mu);
}

/* Test the op's requests; a blocking caller has waited on them since the
 * later of its wait's start and their posting. */
static double since_of(const ckpt__save_op *op, double wait_start)
{
    if (wait_start >= 0 && op->posted_at > wait_start)
        return op->posted_at;
    return wait_start;
}

static int test_op(ckpt_mpi_saver *s, ckpt__save_op *op, double wait_start,
                   const char *what)
{
    return ckpt__mpi_test_all(s, op->req, op->nreq, since_of(op, wait_start),
                              what);
}

int ckpt__mpi_op_progress(ckpt_mpi_saver *s, double wait_start)
{
    ckpt__save_op *op = &s->op;
    for (;;) {
        switch (op->state) {
        case OP_IDLE:
            if (s->has_pending) { /* COALESCE: the next snapshot */
                ckpt__mpi_promote_pending(s);
                break;
            }
            return 1;
        case OP_WRITING:
            if (!ckpt__mpi_job_done(s))
                return 0;
            post_gathers(s, op);
            break;
        case OP_GATHER_HDR:
            if (!ckpt__mpi_test_from_ranks(s, op->from, s->size,
                                           since_of(op, wait_start),
                                           "gathering the ranks' save status"))
                return 0;
            post_blob_gather(s, op);
            break;
        case OP_GATHER_BLOB:
            if (!test_op(s, op, wait_start,
                         "gathering the ranks' index entries"))
                return 0;
            decide(s, op);
            break;
        case OP_COMMITTING:
            if (!ckpt__mpi_job_done(s))
                return 0;
            post_outcome(s, op);
            break;
        case OP_OUTCOME:
            if (!test_op(s, op, wait_start, "waiting for rank 0's commit"))
                return 0;
            deliver(s, op);
            if (s->has_pending)
                break;
            return 1;
        default:
            return 1;
        }
    }
}

void ckpt__mpi_op_finish(ckpt_mpi_saver *s)
{
    double start = ckpt__mpi_now();
    long round = 0;
    while (!ckpt__mpi_op_progress(s, start))
        ckpt__mpi_pause(&round, start);
}
