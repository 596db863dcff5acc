/* mpi/mpi_saver.c - ckpt_mpi_saver's public entry points: open (rank 0
 * recovers the directory), registration, the collective check, sync and
 * async saves (snapshot on the caller, then the pipeline of mpi_save_op.c),
 * poll / wait / close, metrics, and the busy policies (SKIP and COALESCE
 * agree across ranks at each save_async).
 *
 * Outcomes: every rank gets rank 0's verdict on each save. A synchronous
 * save returns it; an asynchronous one reports it to on_save_done and, when
 * it failed, returns it once from a call that is the same on every rank
 * (take_pending): ranks learn an outcome at different calls, so poll never
 * returns it.
 *
 * Every public call runs with cancellation disabled (the wrappers at the
 * end, as ckpt_saver's calls): a pthread_cancel acted on in a snapshot's
 * condition wait left the mutex held, and one acted on in a wait's pause
 * ended the thread inside the call. */
#include "mpi_internal.h"

#include "io/fs_internal.h"
#include "saver/saver_ops.h"

#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <string.h>

#define DEFAULT_TIMEOUT_S 600.0

/* Version 1 of these options embedded a version-1 ckpt_saver_options (no
 * fence_from_start), so its collective_timeout_s follows a shorter base:
 * a caller built against that header has this layout. */
static size_t v1_timeout_offset(void)
{
    size_t at =
        offsetof(ckpt_mpi_saver_options, base) + ckpt__saver_options_size(1);
    size_t align = _Alignof(double);
    return (at + align - 1) / align * align;
}

int ckpt_mpi_saver_options_init(ckpt_mpi_saver_options *opts,
                                unsigned int version)
{
    ckpt_mpi_saver_options d = CKPT_MPI_SAVER_OPTIONS_INIT;
    int err =
        ckpt__options_init(opts, &d, offsetof(ckpt_mpi_saver_options, base),
                           version, CKPT_MPI_SAVER_OPTIONS_VERSION,
                           "mpi saver options", "CKPT_MPI_SAVER_OPTIONS_INIT");
    if (err < 0)
        return err;
    if (version >= 2) {
        *opts = d;
        return 0;
    }
    /* only the bytes a version-1 struct has */
    err = ckpt_saver_options_init(&opts->base, 1);
    memcpy((char *)opts + v1_timeout_offset(), &d.collective_timeout_s,
           sizeof(d.collective_timeout_s));
    return err;
}

/* The caller's options in this version's layout, whatever its version
 * (checked by validate first). */
static void options_copy(ckpt_mpi_saver_options *dst,
                         const ckpt_mpi_saver_options *src)
{
    ckpt_mpi_saver_options d = CKPT_MPI_SAVER_OPTIONS_INIT;
    ckpt_saver_options base;
    *dst = d;
    if (src->version >= 2) {
        ckpt__saver_options_copy(&dst->base, &src->base);
        dst->collective_timeout_s = src->collective_timeout_s;
        return;
    }
    memset(&base, 0, sizeof(base));
    memcpy(&base, &src->base, ckpt__saver_options_size(1));
    base.version = 1;
    ckpt__saver_options_copy(&dst->base, &base);
    memcpy(&dst->collective_timeout_s, (const char *)src + v1_timeout_offset(),
           sizeof(dst->collective_timeout_s));
}

/* `o`: the caller's options; `*copy` receives them in this version's
 * layout. */
static int validate(const ckpt_mpi_saver_options *o,
                    ckpt_mpi_saver_options *copy)
{
    int err =
        ckpt__options_check_version(o->version, CKPT_MPI_SAVER_OPTIONS_VERSION,
                                    "options", "CKPT_MPI_SAVER_OPTIONS_INIT");
    if (err < 0)
        return err;
    options_copy(copy, o);
    err = ckpt__saver_options_check(&copy->base, "options: base");
    if (err < 0)
        return err;
    if (!(copy->collective_timeout_s >= 0))
        return ckpt__error(CKPT_EINVAL,
                           "options: collective_timeout_s is %s; give 0 (the "
                           "default, 600 s), a number of seconds or INFINITY",
                           copy->collective_timeout_s < 0 ? "negative" : "NaN");
    return 0;
}

/* Rank 0: the directory exists; recover what earlier runs left. */
static int open_on_root(ckpt_mpi_saver *s, const char *dir)
{
    int err = ckpt__saver_check_dir(s->fs, dir, s->basename);
    if (err == 0)
        err = ckpt__dir_state_recover(&s->ds);
    return err;
}

static void dup_comms(ckpt_mpi_saver *s, MPI_Comm comm)
{
    MPI_Request reqs[3];
    MPI_Comm_idup(comm, &s->comm_ctl, &reqs[0]);
    MPI_Comm_idup(comm, &s->comm_op, &reqs[1]);
    MPI_Comm_idup(comm, &s->comm_busy, &reqs[2]);
    /* Bounded like every other wait. */
    ckpt__mpi_wait_all(s, reqs, 3, "opening the saver");
}

/* ckpt_mpi_saver_open after its check of `out`. */
static int open_call(ckpt_mpi_saver **out, MPI_Comm comm, const char *dir,
                     const ckpt_mpi_saver_options *opts)
{
    ckpt_mpi_saver_options defaults = CKPT_MPI_SAVER_OPTIONS_INIT, given;
    ckpt_mpi_saver *s, *unused = NULL;
    int err = 0;
    /* A bad argument on one rank is every rank's error: that rank still
     * takes part in the agreement on the outcome (with the default
     * options), or the others would wait for it there until their
     * timeout, and its next open would pair with their next call. */
    if (!out) {
        err = ckpt__error_null_arg("ckpt_mpi_saver_open", "out");
        out = &unused;
    }
    *out = NULL;
    if (err == 0 && (!dir || !*dir))
        err = ckpt__error(CKPT_EINVAL,
                          "mpi saver: no checkpoint directory given; pass "
                          "the directory every rank shares");
    if (!opts)
        opts = &defaults;
    if (err == 0 && (err = validate(opts, &given)) < 0)
        /* which saver: a program may open several */
        err = ckpt__error_prefix(err, "mpi saver %s", dir);
    if (err < 0)
        given = defaults;
    opts = &given;
    s = ckpt__calloc(1, sizeof(*s));
    if (!s)
        return ckpt__error_oom();
    s->opts = given;
    if (s->opts.base.max_to_keep == 0)
        s->opts.base.max_to_keep = CKPT__DEFAULT_MAX_TO_KEEP;
    s->timeout_s = opts->collective_timeout_s > 0 ? opts->collective_timeout_s
                                                  : DEFAULT_TIMEOUT_S;
    s->fs = ckpt_fs_or_default(opts->base.fs);
    s->metrics.last_saved_step = CKPT_NO_STEP;
    s->repeats.step = CKPT_NO_STEP;
    MPI_Comm_rank(comm, &s->rank);
    MPI_Comm_size(comm, &s->size);
    MPI_Query_thread(&s->thread_level);
    s->comm_user = comm;
    s->comm_ctl = MPI_COMM_NULL;
    s->comm_op = MPI_COMM_NULL;
    s->comm_busy = MPI_COMM_NULL;
    dup_comms(s, comm);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->basename = ckpt__strdup(ckpt__saver_basename(opts->base.basename));
    if (!s->basename)
        err = ckpt__error_oom();
    s->opts.base.basename = s->basename;
    if (err == 0)
        err = ckpt__dir_state_init(&s->ds, dir, &s->opts.base);
    if (err == 0 && s->rank == 0)
        err = open_on_root(s, dir);
    err = ckpt__mpi_open_agree(s, err == 0 ? dir : "", err);
    if (err < 0) {
        /* Never used, so no rank has an agreement to complete: free makes
         * no collective call (ranks whose busy_policy differs, refused
         * just now, would make different ones). */
        s->closed = 1;
        ckpt_mpi_saver_free(s);
        return err;
    }
    *out = s;
    return 0;
}

int ckpt_mpi_saver_add_replicated(ckpt_mpi_saver *s, const ckpt_var *var)
{
    CKPT__CHECK_ARG(s);
    CKPT__CHECK_ARG(var);
    return ckpt__mpi_add_var(s, CKPT__MPI_REPLICATED, var, NULL, 0);
}

int ckpt_mpi_saver_add_partitioned(ckpt_mpi_saver *s, const ckpt_var *var,
                                   const ckpt_slice_extent *extents)
{
    CKPT__CHECK_ARG(s);
    CKPT__CHECK_ARG(var);
    return ckpt__mpi_add_var(s, CKPT__MPI_PARTITIONED, var, extents, 0);
}

int ckpt_mpi_saver_add_per_rank(ckpt_mpi_saver *s, const ckpt_var *var,
                                int flags)
{
    CKPT__CHECK_ARG(s);
    CKPT__CHECK_ARG(var);
    if (flags & ~CKPT_MPI_OPTIONAL)
        return ckpt__error(CKPT_EINVAL,
                           "mpi saver %s: per-rank variable '%s': unknown "
                           "flags 0x%x; pass 0 or CKPT_MPI_OPTIONAL",
                           s->ds.dir, var->name ? var->name : "?", flags);
    return ckpt__mpi_add_var(s, CKPT__MPI_PER_RANK, var, NULL, flags);
}

/* After the caller's CKPT__CHECK_ARG(s). */
static int check_usable(const ckpt_mpi_saver *s, const char *what)
{
    if (ckpt__mpi_refuse_worker(s, what) < 0)
        return CKPT_ESTATE;
    if (s->closed)
        return ckpt__error(CKPT_ESTATE, "mpi saver %s: %s after close",
                           s->ds.dir, what);
    return 0;
}

static int mutation_fence_call(ckpt_mpi_saver *s)
{
    int err;
    if (!s) /* named as the public call */
        return ckpt__error_null_arg("ckpt_mpi_saver_mutation_fence", "s");
    err = check_usable(s, "mutation fence");
    if (err < 0)
        return err;
    s->overlap = 1;
    ckpt__mpi_snapshot_complete(s);
    return 0;
}

int ckpt__mpi_fence(ckpt_mpi_saver *s, int from_now_on)
{
    if (from_now_on)
        return ckpt_mpi_saver_mutation_fence(s);
    if (s && !ckpt__bg_thread_runs_for(s)) {
        int cancel = ckpt__cancel_off(); /* its wait holds mu */
        ckpt__mpi_snapshot_complete(s);
        ckpt__cancel_restore(cancel);
    }
    return 0;
}

static int check_call(ckpt_mpi_saver *s)
{
    int err;
    if (!s) /* named as the public call */
        return ckpt__error_null_arg("ckpt_mpi_saver_check", "s");
    /* Also after close, as the restores it precedes are. */
    err = ckpt__mpi_refuse_worker(s, "check");
    if (err < 0)
        return err;
    return ckpt__mpi_check(s, NULL);
}

/* ---- saves ------------------------------------------------------------- */

/* The failed asynchronous saves this rank has and has not returned, as
 * one error (0: none). Called only where every rank has delivered the
 * same ones (mpi_failures.c): wait and close (each finishes its own save
 * first), and a save_async trigger at which the ranks agreed that none has
 * a save in flight; never poll. */
static int take_pending(ckpt_mpi_saver *s)
{
    return ckpt__mpi_failures_take_all(&s->failures);
}

static int has_pending_failure(const ckpt_mpi_saver *s)
{
    return s->failures.delivered > s->failures.returned;
}

static int checkpoint_names(ckpt_mpi_saver *s, int64_t step, ckpt_buf *stored,
                            ckpt_buf *prefix)
{
    return ckpt__dir_state_checkpoint_name(&s->ds, s->basename,
                                           s->opts.base.pad_step_number, step,
                                           stored, prefix);
}

/* Snapshot this rank's part into `img` (allocated at first use,
 * mpi_snapshot.c); its duration into `*blocking_s`. An async save's
 * snapshot into s->image (`may_overlap`, the background thread idle)
 * is left open for the thread once the caller keeps the mutation-fence
 * rule. */
static int snapshot(ckpt_mpi_saver *s, ckpt__image *img, int64_t step,
                    int may_overlap, double *blocking_s)
{
    double t0 = ckpt__mpi_now();
    int err;
    if (may_overlap && (s->overlap || s->opts.base.fence_from_start))
        err = ckpt__mpi_snapshot_open(s, step);
    else
        err = ckpt__mpi_snapshot_take(s, img);
    *blocking_s = ckpt__mpi_now() - t0;
    return err;
}

/* Start the op of a snapshot already in s->image (or of a failure): any
 * failure becomes this rank's status in the agreement, so every rank
 * still takes part. */
static void start_op(ckpt_mpi_saver *s, int64_t step, int is_async,
                     uint64_t ticket, double blocking_s, int err)
{
    ckpt__save_op *op = &s->op;
    op->is_async = is_async;
    op->ticket = ticket;
    op->step = step;
    op->started_at = ckpt__mpi_now() - blocking_s;
    op->blocking_s = blocking_s;
    memset(&op->mine, 0, sizeof(op->mine));
    memset(&op->outcome, 0, sizeof(op->outcome));
    if (err == 0) {
        err = checkpoint_names(s, step, &op->stored, &op->prefix);
    } else {
        /* a rank whose snapshot failed names the save as the others do
         * (its report and its message): not the last one, nor none */
        ckpt__saved_error failure;
        ckpt__error_save(&failure);
        if (checkpoint_names(s, step, &op->stored, &op->prefix) < 0)
            ckpt_buf_dispose(&op->prefix); /* out of memory: no name */
        ckpt__error_restore(&failure);
    }
    if (err == 0 && s->rank == 0) /* said once, by rank 0 */
        ckpt__step_repeats_note(&s->repeats, step, op->prefix.ptr,
                                &s->opts.base);
    ckpt__mpi_op_start(s, err);
}

/* A snapshot taken into s->image (or a failure) becomes the save in
 * flight: counted, numbered and started. */
static void launch(ckpt_mpi_saver *s, int64_t step, int is_async,
                   double blocking_s, int err)
{
    ckpt__metrics_started(&s->metrics, blocking_s);
    start_op(s, step, is_async, ++s->next_ticket, blocking_s, err);
    if (s->snap_open) /* the fence adds its wait to this save's */
        s->snap_ticket = s->op.ticket;
}

/* Snapshot this rank's part, then start its op. */
static void begin_op(ckpt_mpi_saver *s, int64_t step, int is_async,
                     int local_err)
{
    double blocking_s = 0.0;
    int err = local_err;
    if (err == 0)
        err = snapshot(s, &s->image, step, is_async, &blocking_s);
    launch(s, step, is_async, blocking_s, err);
}

void ckpt__mpi_promote_pending(ckpt_mpi_saver *s)
{
    ckpt__image t = s->image;
    s->image = s->pending_image;
    s->pending_image = t;
    s->has_pending = 0;
    start_op(s, s->pending_step, 1, s->pending_ticket, s->pending_blocking_s,
             s->pending_err);
}

/* COALESCE: the pending snapshot is replaced by a newer one; it is
 * reported canceled and counted as coalesced instead of started. */
static void cancel_pending(ckpt_mpi_saver *s)
{
    const ckpt_saver_options *o = &s->opts.base;
    ckpt_buf stored = CKPT_BUF_INIT, prefix = CKPT_BUF_INIT;
    ckpt_save_result res;
    memset(&res, 0, sizeof(res));
    if (checkpoint_names(s, s->pending_step, &stored, &prefix) < 0)
        ckpt_error_clear();
    res.ticket = s->pending_ticket;
    res.step = s->pending_step;
    res.prefix = prefix.ptr ? prefix.ptr : "";
    res.status = CKPT_ECANCELED;
    res.error = "replaced by a newer snapshot before it was written";
    res.blocking_s = s->pending_blocking_s;
    s->has_pending = 0;
    ckpt__metrics_coalesced(&s->metrics);
    if (o->on_save_done) {
        s->delivering++;
        o->on_save_done(&res, o->on_save_done_payload);
        s->delivering--;
    }
    ckpt_buf_dispose(&stored);
    ckpt_buf_dispose(&prefix);
}

/* Keep a snapshot as this rank's one pending snapshot (COALESCE). */
static void keep_pending(ckpt_mpi_saver *s, int64_t step, int err,
                         double blocking_s, uint64_t *ticket_out)
{
    ckpt__metrics_started(&s->metrics, blocking_s);
    s->pending_err = err;
    s->pending_blocking_s = blocking_s;
    s->pending_step = step;
    s->pending_ticket = ++s->next_ticket;
    s->has_pending = 1;
    if (ticket_out)
        *ticket_out = s->pending_ticket;
    /* starts it at once when this rank is idle */
    ckpt__mpi_op_progress(s, CKPT__MPI_NOT_WAITING);
}

/* COALESCE: a trigger while a save is in flight on some rank makes every
 * rank keep this snapshot as its one pending snapshot (replacing an older
 * pending one on every rank alike), written once its save in flight is
 * done. Whether a pending snapshot exists must be the same on every rank
 * when one is replaced, so the ranks agree (one MPI_Iallreduce): any rank
 * busy, any and every rank still holding the pending snapshot. A rank
 * holding none does the same whatever the others answer (idle: it starts
 * a save; busy: the snapshot becomes its pending one), so it snapshots
 * while the agreement completes. A rank holding one waits for the answer:
 * when other ranks already started theirs (their save in flight ended),
 * it catches up first (its verdict is on its way), then replaces it.
 * The same allreduce finds how many failed saves every rank has delivered
 * (the smallest count): if some are not yet returned, every rank returns
 * them now and dispatches nothing (a stream of triggers may never find
 * every rank idle). */
static int save_coalesce(ckpt_mpi_saver *s, int64_t step, int local_err,
                         uint64_t *ticket_out)
{
    int mine[4], all[4];
    int busy = s->op.state != OP_IDLE;
    double blocking_s = 0.0;
    int err = local_err;
    long round = 0;
    MPI_Request req;
    mine[0] = busy || s->has_pending;
    mine[1] = s->has_pending;
    mine[2] = -s->has_pending;
    mine[3] = -(int)(s->failures.delivered < INT_MAX ? s->failures.delivered
                                                     : INT_MAX);
    MPI_Iallreduce(mine, all, 4, MPI_INT, MPI_MAX, s->comm_ctl, &req);
    if (!s->has_pending) {
        if (err == 0)
            err = snapshot(s, busy ? &s->pending_image : &s->image, step, !busy,
                           &blocking_s);
        ckpt__mpi_wait_all(s, &req, 1, "agreeing whether a save is in flight");
        if ((uint64_t)-all[3] > s->failures.returned) {
            ckpt__mpi_snapshot_drop(s); /* not written */
            return ckpt__mpi_failures_take(&s->failures, (uint64_t)-all[3]);
        }
        if (busy) {
            keep_pending(s, step, err, blocking_s, ticket_out);
            return 0;
        }
        launch(s, step, 1, blocking_s, err);
        if (ticket_out)
            *ticket_out = s->op.ticket;
        return 0;
    }
    ckpt__mpi_wait_all(s, &req, 1, "agreeing whether a save is in flight");
    if ((uint64_t)-all[3] > s->failures.returned)
        return ckpt__mpi_failures_take(&s->failures, (uint64_t)-all[3]);
    if (all[2] == 0) { /* some ranks started it, others not yet */
        double start = ckpt__mpi_now();
        while (s->has_pending && !ckpt__mpi_op_progress(s, start))
            ckpt__mpi_pause(&round, start);
    }
    if (s->has_pending)
        cancel_pending(s);
    if (err == 0)
        err = snapshot(s, &s->pending_image, step, 0, &blocking_s);
    keep_pending(s, step, err, blocking_s, ticket_out);
    return 0;
}

static int save_call(ckpt_mpi_saver *s, int64_t step, ckpt_buf *prefix_out)
{
    int err;
    if (!s) /* named as the public call */
        return ckpt__error_null_arg("ckpt_mpi_saver_save", "s");
    err = check_usable(s, "save");
    if (err < 0)
        return err;
    ckpt__mpi_snapshot_complete(s);
    if (s->op.state != OP_IDLE)
        ckpt__mpi_op_finish(s);
    err = ckpt__mpi_check(s, "save");
    if (err < 0)
        return err;
    begin_op(s, step, 0, 0);
    ckpt__mpi_op_finish(s);
    err = ckpt__mpi_status_raise(&s->last_outcome);
    if (err == 0 && prefix_out)
        err = ckpt__buf_set(prefix_out, s->op.prefix.ptr);
    return err;
}

/* SKIP: whether any rank still has a save in flight, agreed in one
 * MPI_Iallreduce (mpi_busy.c); if so the trigger is skipped on every rank.
 * When every rank gave its answer ahead (its last save had its outcome)
 * and the caller's poll calls completed the agreement, the trigger decides
 * at once. Otherwise a rank with nothing in flight takes its snapshot while
 * the agreement completes (its image is free) and drops it when another
 * rank turns out busy: the agreement costs it only what is left of the wait
 * for the other ranks once its copy is done. A busy rank only waits for the
 * agreement. */
static int save_skip(ckpt_mpi_saver *s, int64_t step, int local_err,
                     uint64_t *ticket_out)
{
    const ckpt_saver_options *o = &s->opts.base;
    int busy = s->op.state != OP_IDLE, any;
    double blocking_s = 0.0;
    int err = local_err;
    int known = ckpt__mpi_busy_post_now(s);
    if (known && s->busy_any)
        busy = 1; /* skipped: no snapshot to take */
    if (!busy && err == 0)
        err = snapshot(s, &s->image, step, 1, &blocking_s);
    any = ckpt__mpi_busy_decide(s);
    if (any || has_pending_failure(s))
        ckpt__mpi_snapshot_drop(s); /* not written: nothing copies it */
    if (!any && has_pending_failure(s))
        return take_pending(s); /* no rank busy: all have it */
    if (!any) {
        launch(s, step, 1, blocking_s, err);
        if (ticket_out)
            *ticket_out = s->op.ticket;
        return 0;
    }
    s->metrics.saves_skipped++;
    ckpt__log(o->log, o->log_payload, o->log_level, CKPT_LOG_INFO,
              "step %" PRId64 ": checkpoint skipped: the previous "
              "save is still in flight",
              step);
    return ckpt__error(CKPT_EBUSY,
                       "mpi saver %s: save_async at step %" PRId64
                       ": skipped, the previous save is still in flight on a "
                       "rank",
                       s->ds.dir, step);
}

static int save_async_call(ckpt_mpi_saver *s, int64_t step,
                           uint64_t *ticket_out)
{
    int err;
    if (!s) /* named as the public call */
        return ckpt__error_null_arg("ckpt_mpi_saver_save_async", "s");
    err = check_usable(s, "save_async");
    if (err < 0)
        return err;
    if (s->thread_level < MPI_THREAD_FUNNELED)
        return ckpt__error(CKPT_ENOTSUP,
                           "mpi saver %s: save_async at step %" PRId64
                           ": asynchronous saves need MPI initialised with "
                           "at least MPI_THREAD_FUNNELED (this process has "
                           "MPI_THREAD_SINGLE, given to or provided by "
                           "MPI_Init_thread); initialise MPI with "
                           "MPI_Init_thread(&argc, &argv, "
                           "MPI_THREAD_FUNNELED, &provided), or save with "
                           "ckpt_mpi_saver_save, which works at any level",
                           s->ds.dir, step);
    ckpt__mpi_snapshot_complete(s); /* the previous trigger's, if open */
    ckpt__mpi_op_progress(s, CKPT__MPI_NOT_WAITING);
    err = ckpt__mpi_check(s, "save_async");
    if (err < 0)
        return err;
    /* A failure to start the thread is this rank's status in the save's
     * agreement: every rank still takes part in the same collectives. */
    err = ckpt__mpi_thread_start(s);
    if (s->opts.base.busy_policy == CKPT_BUSY_SKIP)
        return save_skip(s, step, err, ticket_out);
    if (s->opts.base.busy_policy == CKPT_BUSY_COALESCE)
        return save_coalesce(s, step, err, ticket_out);
    if (s->op.state != OP_IDLE)
        ckpt__mpi_op_finish(s);
    if (has_pending_failure(s))
        return take_pending(s); /* every rank finished its save: all have it */
    begin_op(s, step, 1, err);
    if (ticket_out)
        *ticket_out = s->op.ticket;
    return 0;
}

static int poll_call(ckpt_mpi_saver *s, int *busy_out)
{
    if (!s) /* named as the public call */
        return ckpt__error_null_arg("ckpt_mpi_saver_poll", "s");
    if (ckpt__mpi_refuse_worker(s, "poll") < 0)
        return CKPT_ESTATE;
    ckpt__mpi_op_progress(s, CKPT__MPI_NOT_WAITING);
    ckpt__mpi_busy_ahead(s);
    if (busy_out)
        *busy_out = s->op.state != OP_IDLE || s->has_pending;
    return 0;
}

static int wait_call(ckpt_mpi_saver *s, double timeout_s)
{
    double start = ckpt__mpi_now();
    long round = 0;
    if (!s) /* named as the public call */
        return ckpt__error_null_arg("ckpt_mpi_saver_wait", "s");
    if (ckpt__mpi_refuse_worker(s, "wait") < 0)
        return CKPT_ESTATE;
    if (ckpt__seconds_check(timeout_s, "mpi saver: wait", "timeout_s") < 0)
        return CKPT_EINVAL;
    ckpt__mpi_snapshot_complete(s);
    /* Rank 0 also waits for the deletion of what retention evicted. */
    while (!ckpt__mpi_op_progress(s, start) || ckpt__mpi_evicting(s, 0)) {
        if (timeout_s >= 0 && ckpt__mpi_now() - start > timeout_s)
            return ckpt__error(CKPT_ETIMEDOUT,
                               "mpi saver %s: the save in flight did not "
                               "finish within %.3f s",
                               s->ds.dir, timeout_s);
        ckpt__mpi_pause(&round, start);
    }
    ckpt__mpi_busy_ahead(s);
    return take_pending(s);
}

static int close_call(ckpt_mpi_saver *s)
{
    if (!s) /* named as the public call */
        return ckpt__error_null_arg("ckpt_mpi_saver_close", "s");
    if (ckpt__mpi_refuse_worker(s, "close") < 0)
        return CKPT_ESTATE;
    if (s->closed) /* as the single-process saver's second close */
        return ckpt__error(CKPT_ESTATE, "mpi saver %s: close: already closed",
                           s->ds.dir);
    ckpt__mpi_snapshot_complete(s);
    if (s->op.state != OP_IDLE)
        ckpt__mpi_op_finish(s);
    ckpt__mpi_agree_finish(s);
    ckpt__mpi_busy_settle(s);
    ckpt__mpi_thread_stop(s);
    s->closed = 1;
    return take_pending(s);
}

static void free_call(ckpt_mpi_saver *s)
{
    if (!s)
        return;
    /* From its own thread (a log callback) or from on_save_done (the
     * delivery still walks the saver): refused, the saver stays. */
    if (ckpt__mpi_refuse_worker(s, "free") < 0)
        return;
    if (s->delivering > 0) {
        ckpt__error(CKPT_ESTATE,
                    "mpi saver %s: free: called from on_save_done; free the "
                    "saver after the call that delivered it",
                    s->ds.dir);
        ckpt__log(s->opts.base.log, s->opts.base.log_payload,
                  s->opts.base.log_level, CKPT_LOG_ERROR, "%s",
                  ckpt_error_last()->message);
        return;
    }
    ckpt__mpi_snapshot_complete(s);
    if (s->comm_op != MPI_COMM_NULL && s->op.state != OP_IDLE)
        ckpt__mpi_op_finish(s);
    if (s->comm_ctl != MPI_COMM_NULL)
        ckpt__mpi_agree_finish(s);
    if (!s->closed)
        ckpt__mpi_busy_settle(s);
    ckpt__mpi_thread_stop(s);
    if (s->handle)
        ckpt__saver_ops_free(s->handle);
    if (s->comm_op != MPI_COMM_NULL)
        MPI_Comm_free(&s->comm_op);
    if (s->comm_ctl != MPI_COMM_NULL)
        MPI_Comm_free(&s->comm_ctl);
    if (s->comm_busy != MPI_COMM_NULL)
        MPI_Comm_free(&s->comm_busy);
    ckpt_buf_dispose(&s->op.prefix);
    ckpt_buf_dispose(&s->op.stored);
    ckpt_buf_dispose(&s->op.temp_path);
    ckpt_buf_dispose(&s->op.blob);
    ckpt__image_free(&s->image);
    ckpt__image_free(&s->pending_image);
    ckpt__free(s->pieces);
    ckpt__mpi_vars_dispose(s);
    ckpt__dir_state_dispose(&s->ds);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    ckpt__free(s->basename);
    ckpt__free(s);
}

void ckpt_mpi_saver_get_metrics(ckpt_mpi_saver *s, ckpt_saver_metrics *out)
{
    if (s && out)
        *out = s->metrics;
}

int ckpt_mpi_saver_rank(const ckpt_mpi_saver *s)
{
    return s ? s->rank : -1;
}

int ckpt_mpi_saver_size(const ckpt_mpi_saver *s)
{
    return s ? s->size : 0;
}

/* ---- the public calls: each runs with cancellation disabled ------------ */

/* Open too, as ckpt_saver_open: rank 0 holds the process-wide mutex of the
 * directory locks across open() and close() and recovers the directory
 * (reads, syncs, removals), both cut short by a cancel acted on there.
 * Holding the cancel off hangs no collective: its communicators' idup and
 * the agreement on the outcome are bounded by collective_timeout_s. */
int ckpt_mpi_saver_open(ckpt_mpi_saver **out, MPI_Comm comm, const char *dir,
                        const ckpt_mpi_saver_options *opts)
{
    CKPT__RETURN_UNCANCELLED(open_call(out, comm, dir, opts));
}

int ckpt_mpi_saver_mutation_fence(ckpt_mpi_saver *s)
{
    CKPT__RETURN_UNCANCELLED(mutation_fence_call(s));
}

int ckpt_mpi_saver_check(ckpt_mpi_saver *s)
{
    CKPT__RETURN_UNCANCELLED(check_call(s));
}

int ckpt_mpi_saver_save(ckpt_mpi_saver *s, int64_t step, ckpt_buf *prefix_out)
{
    CKPT__RETURN_UNCANCELLED(save_call(s, step, prefix_out));
}

int ckpt_mpi_saver_save_async(ckpt_mpi_saver *s, int64_t step,
                              uint64_t *ticket_out)
{
    CKPT__RETURN_UNCANCELLED(save_async_call(s, step, ticket_out));
}

int ckpt_mpi_saver_poll(ckpt_mpi_saver *s, int *busy_out)
{
    CKPT__RETURN_UNCANCELLED(poll_call(s, busy_out));
}

int ckpt_mpi_saver_wait(ckpt_mpi_saver *s, double timeout_s)
{
    CKPT__RETURN_UNCANCELLED(wait_call(s, timeout_s));
}

int ckpt_mpi_saver_close(ckpt_mpi_saver *s)
{
    CKPT__RETURN_UNCANCELLED(close_call(s));
}

void ckpt_mpi_saver_free(ckpt_mpi_saver *s)
{
    int cancel = ckpt__cancel_off();
    free_call(s);
    ckpt__cancel_restore(cancel);
}
