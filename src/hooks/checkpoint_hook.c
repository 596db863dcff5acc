/* hooks/checkpoint_hook.c - CheckpointSaverHook and AsyncCheckpointSaverHook
 * as one hook with a mode (docs/behaviour.md, B44-B69).
 *
 * begin agrees on the directory and basename with the session (either may
 * give them; see session/graph.c), creates the directory and checks the
 * global step;
 * after_create_session resolves the saver (explicit, the scaffold's, or one
 * the hook opens over every graph variable) and saves at the current step
 * unless the newest checkpoint already has it; after_run saves when the
 * timer triggers at values->step_after; end waits for writes in flight and
 * saves the final step unless it is already durable.
 *
 * SYNC: before_save of every listener, ckpt_saver_save, after_save of every
 * listener (from the saver's outcome), all inside the triggering callback.
 * ASYNC: before_save on the training thread, then ckpt_saver_save_async,
 * which snapshots the variables and returns; the write runs on the saver's
 * thread. Every callback first polls the saver, so finished writes reach
 * the listeners' after_save on the training thread, their stop requests
 * reach the current run, and a background failure is returned once. A
 * trigger skipped because a write is still running (policy SKIP) leaves the
 * timer alone, so the next step tries again.
 *
 * A collective saver (ckpt_saver_wrap with ops.collective, e.g. ckpt_mpi's
 * distributed saver) needs the same saver calls on every process: its
 * failures and the listeners' are kept and returned after the call rather
 * than instead of it, and in seconds mode the saver's agree makes one
 * process's timer decide for all. */
#include "checkpoint_hook_internal.h"

#include "io/fs_dirs.h"
#include "io/fs_internal.h"
#include "saver/saver_internal.h"
#include "saver/saver_ops.h"
#include "session/session_internal.h"

#include <inttypes.h>
#include <stddef.h>
#include <string.h>

/* Bound of the wait for a write in flight when the session is aborted and
 * no end_timeout_s was configured. */
#define ABORT_WAIT_DEFAULT_S 60.0

static const char *const sync_name = "CheckpointSaverHook";
static const char *const async_name = "AsyncCheckpointSaverHook";

static const ckpt_checkpoint_hook_options option_defaults =
    CKPT_CHECKPOINT_HOOK_OPTIONS_INIT;

/* Bytes of the options struct a caller built against `version` has. */
static size_t options_size(unsigned int version)
{
    if (version == 1)
        return offsetof(ckpt_checkpoint_hook_options, checkpoint_basename);
    return sizeof(ckpt_checkpoint_hook_options);
}

int ckpt_checkpoint_hook_options_init(ckpt_checkpoint_hook_options *o,
                                      unsigned int version)
{
    CKPT__CHECK_ARG(o);
    return ckpt__options_init(o, &option_defaults, options_size(version),
                              version, CKPT_CHECKPOINT_HOOK_OPTIONS_VERSION,
                              "checkpoint hook options",
                              "CKPT_CHECKPOINT_HOOK_OPTIONS_INIT");
}

/* ---- begin --------------------------------------------------------------- */

/* The checkpoint directory and its missing parents, each made durable
 * (a sync_dir of its parent) before anything is saved in it. */
static int make_dirs(const ckpt_fs *fs, const char *dir)
{
    int err = ckpt__fs_make_dirs(fs, dir);
    if (err < 0)
        return ckpt__error_prefix(err, "creating checkpoint directory %s", dir);
    return 0;
}

/* Agree with the session on the directory and (when the hook writes
 * through the session's saver) the basename; take the session's file
 * system, clock and log where the hook was given none. */
static int agree_with_session(ckpt__ckhook *h, ckpt_graph *g)
{
    const ckpt__graph_agreement *a = ckpt__graph_agreement_of(g);
    int err = ckpt__graph_agree_dir(g, h->dir, "the checkpoint hook options");
    if (err < 0)
        return ckpt__error_prefix(err, "%s", h->name);
    /* The basename also names the checkpoints a restore-only scaffold
     * saver must not take for strays. */
    err = ckpt__graph_agree_basename(
        g, h->basename, "the checkpoint hook options (checkpoint_basename)");
    if (err < 0)
        return ckpt__error_prefix(err, "%s", h->name);
    if (h->use_scaffold)
        ckpt__graph_note_scaffold_writer(g);
    else if (!h->explicit_saver)
        ckpt__graph_note_own_writer(g);
    if (!h->dir && !a->dir)
        return ckpt__error(CKPT_EINVAL,
                           "%s: no checkpoint directory: set checkpoint_dir "
                           "in the hook's options or the session's",
                           h->name);
    if (!h->dir) {
        h->dir = ckpt__strdup(a->dir);
        if (!h->dir)
            return ckpt__error_oom();
    }
    h->fs = ckpt_fs_or_default(h->saver_opts.fs ? h->saver_opts.fs : a->fs);
    if (!h->timer.clock) /* no clock of its own: save_secs in session time */
        h->timer.clock = a->clock;
    if (!h->saver_opts.log && a->log) {
        h->log = a->log;
        h->log_payload = a->log_payload;
        h->log_level = a->log_level;
    }
    return 0;
}

/* The basename the checkpoints will have, for begin's log line: the
 * hook's, the explicit saver's, the one agreed with the session (which
 * opens the scaffold saver with it), else the saver's default. */
static const char *planned_basename(const ckpt__ckhook *h, const ckpt_graph *g)
{
    const ckpt__graph_agreement *a = ckpt__graph_agreement_of(g);
    if (h->basename)
        return h->basename;
    if (h->explicit_saver)
        return ckpt_saver_get_options(h->explicit_saver)->basename;
    if (h->use_scaffold && a->basename)
        return a->basename;
    return CKPT__DEFAULT_BASENAME;
}

static int hook_begin(ckpt_graph *g, void *payload)
{
    ckpt__ckhook *h = payload;
    int err = agree_with_session(h, g);
    if (err == 0)
        err = make_dirs(h->fs, h->dir);
    if (err < 0)
        return err;
    err = ckpt__graph_need_global_step(g, h->name);
    if (err < 0)
        return err;
    ckpt__ckhook_log(h, CKPT_LOG_INFO, "%s: saving checkpoints to %s/%s-<step>",
                     h->name, h->dir, planned_basename(h, g));
    return ckpt__ckhook_listeners_begin(h);
}

/* ---- the saver ----------------------------------------------------------- */

/* A saver that saves nothing but the global step: warn, as a program that
 * forgot ckpt_graph_add_var (or ckpt_saver_add_var on a saver of its own)
 * would otherwise learn it only when a restart restores nothing of its
 * state. Whichever saver the hook writes through: its own, the session's
 * scaffold saver or an explicit one (a wrapped saver cannot say). */
static void warn_if_only_global_step(const ckpt__ckhook *h, ckpt_saver *sv,
                                     const ckpt_graph *g)
{
    int64_t *gs = g ? ckpt_graph_global_step(g) : NULL;
    ckpt__saved_error saved;
    int only_step;
    if (!gs || ckpt__saver_num_vars(sv) != 1)
        return;
    ckpt__error_save(&saved);
    only_step = ckpt_saver_saves_var(sv, "global_step", gs) == 1;
    (void)ckpt__error_restore(&saved);
    if (!only_step)
        return;
    ckpt__ckhook_log(h, CKPT_LOG_WARN,
                     "%s: the %s saver saves no variable but the global "
                     "step: checkpoints will hold only the step (register "
                     "the state to save with ckpt_graph_add_var before "
                     "creating the session%s)",
                     h->name,
                     h->explicit_saver ? "hook's"
                     : h->use_scaffold ? "session's scaffold"
                                       : "hook's own",
                     h->explicit_saver || h->use_scaffold
                         ? ", or with ckpt_saver_add_var on the saver"
                         : "");
}

/* Open a saver on the directory over every variable of the graph (and the
 * global step, if the graph does not list it as a variable). */
static int open_own_saver(ckpt__ckhook *h, ckpt_session *s)
{
    ckpt_graph *g = ckpt_session_graph(s);
    ckpt_saver_options o = h->saver_opts;
    ckpt_saver *sv = NULL;
    int64_t *gs = g ? ckpt_graph_global_step(g) : NULL;
    int err;
    if (!g)
        return ckpt__error(CKPT_ESTATE, "%s: the session has no graph",
                           h->name);
    o.on_save_done = ckpt__ckhook_on_save_done;
    o.on_save_done_payload = h;
    o.fs = h->fs;
    if (!o.clock) /* the hook's clock, else the session's */
        o.clock = h->timer.clock;
    if (!o.log) {
        o.log = h->log;
        o.log_payload = h->log_payload;
        o.log_level = h->log_level;
    }
    err = ckpt_saver_open(&sv, h->dir, &o);
    if (err < 0)
        return ckpt__error_prefix(err, "%s", h->name);
    for (size_t i = 0; err == 0 && i < ckpt_graph_num_vars(g); i++)
        err = ckpt_saver_add_var(sv, ckpt_graph_var(g, i));
    if (err == 0 && gs && !ckpt_graph_find(g, "global_step")) {
        ckpt_var v;
        memset(&v, 0, sizeof(v));
        v.name = "global_step";
        v.dtype = CKPT_DT_INT64;
        v.data = gs;
        err = ckpt_saver_add_var(sv, &v);
    }
    /* Staging memory up front: the first async save then only copies. */
    if (err == 0 && h->mode == CKPT_SAVE_ASYNC)
        err = ckpt_saver_reserve(sv);
    if (err < 0) {
        ckpt_saver_free(sv);
        return ckpt__error_prefix(err, "%s", h->name);
    }
    h->prev_done = h->saver_opts.on_save_done;
    h->prev_done_payload = h->saver_opts.on_save_done_payload;
    h->saver = sv;
    h->own_saver = 1;
    warn_if_only_global_step(h, sv, g);
    return 0;
}

/* A saver the hook did not open must save the graph's global step: the
 * checkpoints are named by it, so a saver without it restores step 0 and
 * then writes over the checkpoints of the steps counted through again.
 * A wrapped saver that cannot say (no saves_var) is taken on trust. */
static int check_saves_global_step(const ckpt__ckhook *h, ckpt_saver *sv,
                                   const ckpt_graph *g)
{
    int64_t *gs = g ? ckpt_graph_global_step(g) : NULL;
    ckpt__saved_error saved;
    int saves;
    if (!gs)
        return 0;
    ckpt__error_save(&saved);
    saves = ckpt_saver_saves_var(sv, "global_step", gs);
    if (saves != 0) {
        (void)ckpt__error_restore(&saved); /* CKPT_ENOTSUP: on trust */
        return 0;
    }
    return ckpt__error(
        CKPT_EINVAL,
        "%s: the %s saver does not save the graph's global step: register "
        "it as variable 'global_step' with the storage "
        "ckpt_graph_global_step returns (ckpt_saver_add_var, or "
        "ckpt_mpi_saver_add_replicated for a distributed saver), or its "
        "checkpoints would restore step 0 and be written over",
        h->name, h->explicit_saver ? "hook's" : "session's scaffold");
}

static int resolve_saver(ckpt__ckhook *h, ckpt_session *s)
{
    ckpt_saver *sv;
    int err;
    if (h->own_saver)
        return 0;
    if (!h->explicit_saver && !h->use_scaffold)
        return open_own_saver(h, s);
    sv = h->explicit_saver ? h->explicit_saver : ckpt_session_saver(s);
    if (!sv)
        return ckpt__error(CKPT_ESTATE,
                           "%s: use_scaffold is set but the session has no "
                           "scaffold saver",
                           h->name);
    if (h->basename &&
        strcmp(h->basename, ckpt_saver_get_options(sv)->basename) != 0)
        return ckpt__error(CKPT_EINVAL,
                           "%s: checkpoint_basename '%s' of the checkpoint "
                           "hook options disagrees with basename '%s' of the "
                           "%s saver: set it in one place",
                           h->name, h->basename,
                           ckpt_saver_get_options(sv)->basename,
                           h->explicit_saver ? "hook's" : "session's scaffold");
    err = check_saves_global_step(h, sv, ckpt_session_graph(s));
    if (err < 0)
        return err;
    warn_if_only_global_step(h, sv, ckpt_session_graph(s));
    h->saver = sv;
    h->collective = ckpt__saver_collective(sv);
    h->has_final_metrics = 0;
    if (!h->saver_opts.log && ckpt_saver_get_options(sv)->log) {
        /* No log of its own: the one of the saver it writes through. A
         * collective saver's log is each rank's own, so the session's
         * level (h->log_level since begin) still bounds the hook's lines:
         * CKPT_LOG_OFF on every rank but the chief keeps them to it. */
        const ckpt_saver_options *so = ckpt_saver_get_options(sv);
        int level = ckpt__log_min_level(so->log_level);
        if (h->collective && ckpt__log_min_level(h->log_level) > level)
            level = ckpt__log_min_level(h->log_level);
        h->log = so->log;
        h->log_payload = so->log_payload;
        h->log_level = level;
    }
    ckpt__ckhook_install(h, sv);
    return 0;
}

/* ---- saving -------------------------------------------------------------- */

/* Checkpoints are named by the global step: a negative one (a restored
 * value no loop counts to; the lowest is the saver's "no step") cannot
 * name one. */
static int check_step(const ckpt__ckhook *h, int64_t step)
{
    if (step >= 0)
        return 0;
    return ckpt__error(CKPT_ESTATE,
                       "%s: the global step %" PRId64 " is negative: "
                       "checkpoints are named by steps of 0 or more",
                       h->name, step);
}

/* before_save of every listener, the write, after_save of every listener
 * (delivered by the saver before ckpt_saver_save returns). */
static int save_sync(ckpt__ckhook *h, int64_t step)
{
    int err = check_step(h, step);
    if (err < 0)
        return err;
    err = ckpt__ckhook_listeners_before_save(h, step);
    if (err < 0 && !h->collective)
        return err;
    ckpt__ckhook_keep_error(h, err);
    ckpt__ckhook_log(h, CKPT_LOG_INFO,
                     "%s: saving checkpoint for step %" PRId64, h->name, step);
    h->in_sync_save = 1;
    err = ckpt_saver_save(h->saver, step, NULL);
    h->in_sync_save = 0;
    return err;
}

/* Poll the saver for finished writes. A collective saver's failure is kept
 * (returned by the hook callback after its saver calls), so that every
 * process still makes the same calls. */
static int poll_saver(ckpt__ckhook *h, int *busy_out)
{
    int err = ckpt_saver_poll(h->saver, busy_out);
    if (err < 0 && h->collective) {
        ckpt__ckhook_keep_error(h, err);
        return 0;
    }
    return err;
}

/* A trigger skipped by policy SKIP (save_async's result, not an error). */
#define TRIGGER_SKIPPED 1

/* Snapshot and dispatch. Returns TRIGGER_SKIPPED (last error cleared) when
 * the trigger was skipped by policy SKIP; the timer moves only on
 * dispatch. Any error, the saver's CKPT_EBUSY for a directory another
 * saver of this process holds among them, is returned with its message,
 * as in sync mode (it used to be taken for a skip: no checkpoint was
 * written and the log blamed a running write). */
static int save_async(ckpt__ckhook *h, int64_t step)
{
    ckpt_saver_metrics m;
    uint64_t ticket = 0, skipped;
    int busy = 0, listeners_called = 0;
    int err = check_step(h, step);
    if (err == 0)
        err = poll_saver(h, &busy);
    if (err == 0)
        err = ckpt__ckhook_reserve_ticket(h);
    if (err < 0)
        return err;
    /* With SKIP and a write running, the save is almost surely skipped:
     * do not announce it to the listeners. */
    if (!busy || ckpt__ckhook_busy_policy(h) != CKPT_BUSY_SKIP) {
        err = ckpt__ckhook_listeners_before_save(h, step);
        if (err < 0 && !h->collective)
            return err;
        ckpt__ckhook_keep_error(h, err);
        listeners_called = 1;
    }
    ckpt_saver_get_metrics(h->saver, &m);
    skipped = m.saves_skipped;
    err = ckpt_saver_save_async(h->saver, step, &ticket);
    if (err == CKPT_EBUSY)
        ckpt_saver_get_metrics(h->saver, &m);
    /* the saver's EBUSY that it did not count as skipped (another saver
     * of this process holds the directory) is an error, as in sync mode */
    if (err == CKPT_EBUSY && m.saves_skipped != skipped) {
        ckpt_error_clear(); /* counted by the saver, reported here */
        ckpt__ckhook_note_skip(h, step);
        return TRIGGER_SKIPPED;
    }
    if (err < 0)
        return err;
    ckpt__ckhook_add_ticket(h, ticket);
    ckpt_timer_update(&h->timer, step, NULL, NULL);
    ckpt_saver_get_metrics(h->saver, &m);
    ckpt__ckhook_log(h, CKPT_LOG_INFO,
                     "%s: snapshot of step %" PRId64
                     " taken in %.6f s; checkpoint write dispatched",
                     h->name, step, m.blocking_s_last);
    /* The writer finished between the poll and the dispatch: the snapshot
     * is taken already, but the listeners still hear of it before the
     * checkpoint is reported durable. */
    if (!listeners_called)
        ckpt__ckhook_keep_error(h, ckpt__ckhook_listeners_before_save(h, step));
    return 0;
}

/* Pass a listener's stop request on to the current run. */
static void pass_stop(ckpt__ckhook *h, ckpt_run_context *ctx)
{
    if (ctx && h->stop_pending) {
        ckpt_run_context_request_stop(ctx);
        h->stop_pending = 0;
    }
}

/* The newest checkpoint's step, or CKPT_NO_STEP when there is none. */
static int64_t newest_step(ckpt__ckhook *h)
{
    ckpt_buf latest = CKPT_BUF_INIT;
    int64_t step = CKPT_NO_STEP;
    if (ckpt_saver_latest(h->saver, &latest) == 0)
        step = ckpt_checkpoint_step(latest.ptr);
    else
        ckpt_error_clear();
    ckpt_buf_dispose(&latest);
    return step;
}

/* Save `step` in the hook's mode. An async save refused because a write
 * is still running (one from before a re-creation of the session, or the
 * last trigger's) is not an error: the timer stays, so a later step
 * retries (B60). */
static int save_now(ckpt__ckhook *h, int64_t step)
{
    int err;
    if (h->mode == CKPT_SAVE_SYNC) {
        ckpt_timer_update(&h->timer, step, NULL, NULL);
        return save_sync(h, step);
    }
    err = save_async(h, step);
    return err == TRIGGER_SKIPPED ? 0 : err;
}

/* Whether the timer triggers at `step`; over a collective saver in seconds
 * mode, as the saver's agree decides for every process (an error of the
 * agreement in `*err`). */
static int should_save(ckpt__ckhook *h, int64_t step, int *err)
{
    int yes = ckpt_timer_should_trigger(&h->timer, step);
    if (h->collective && h->timer.every_secs > 0)
        *err = ckpt__saver_agree(h->saver, &yes);
    return *err == 0 && yes;
}

/* ---- the hook callbacks -------------------------------------------------- */

static int hook_after_create_session(ckpt_session *s, ckpt_coordinator *coord,
                                     void *payload)
{
    ckpt__ckhook *h = payload;
    int64_t step = 0;
    int err;
    (void)coord;
    h->session = s;
    err = resolve_saver(h, s);
    /* Steps that call the mutation fence complete our overlapped
     * snapshots. */
    if (err == 0 && h->mode == CKPT_SAVE_ASYNC)
        err = ckpt__session_add_fence_saver(s, h->saver);
    if (err == 0 && h->mode == CKPT_SAVE_ASYNC)
        err = poll_saver(h, NULL);
    if (err == 0)
        err = ckpt_session_global_step(s, &step);
    if (err == 0)
        err = check_step(h, step);
    if (err < 0)
        return ckpt__ckhook_take_error(h, err);
    h->start_step = step;
    h->runs_at_start = 0;
    if (!h->save_initial_if_present && newest_step(h) == step) {
        ckpt__ckhook_log(h, CKPT_LOG_INFO,
                         "%s: the newest checkpoint already has step %" PRId64
                         "; initial save skipped",
                         h->name, step);
        ckpt_timer_update(&h->timer, step, NULL, NULL);
        h->last_durable = step;
        return ckpt__ckhook_take_error(h, 0);
    }
    return ckpt__ckhook_take_error(h, save_now(h, step));
}

static int hook_before_run(ckpt_run_context *ctx, ckpt_run_args *args,
                           void *payload)
{
    ckpt__ckhook *h = payload;
    (void)args;
    /* Deliver finished writes; a failure among them is kept for after_run
     * (or end), so the step itself still runs. */
    if (h->mode == CKPT_SAVE_ASYNC && h->saver)
        ckpt__ckhook_keep_error(h, ckpt_saver_poll(h->saver, NULL));
    pass_stop(h, ctx);
    return 0;
}

/* Runs after which a global step that never left its value at session
 * start is warned about. */
#define RUNS_BEFORE_STILL_STEP_WARNING 10

/* Warn once when the global step has not moved for that many runs since
 * the session began: triggers follow the global step, so a step function
 * that never increments it gets no checkpoint after the initial one, and
 * the final save is skipped as that step's checkpoint exists. */
static void note_step(ckpt__ckhook *h, int64_t step)
{
    if (h->step_moved)
        return;
    if (step != h->start_step) {
        h->step_moved = 1;
        return;
    }
    if (++h->runs_at_start == RUNS_BEFORE_STILL_STEP_WARNING)
        ckpt__ckhook_log(h, CKPT_LOG_WARN,
                         "%s: %u steps ran and the global step is still "
                         "%" PRId64
                         ": checkpoints follow the global step, so none is "
                         "saved until it advances (the step function or "
                         "the optimizer must increment it)",
                         h->name, RUNS_BEFORE_STILL_STEP_WARNING, step);
}

static int hook_after_run(ckpt_run_context *ctx, const ckpt_run_values *values,
                          void *payload)
{
    ckpt__ckhook *h = payload;
    int64_t step = values->step_after; /* never re-read (F11) */
    int err = 0;
    if (!h->saver)
        return ckpt__error(CKPT_ESTATE,
                           "%s: after_run before the session was created",
                           h->name);
    note_step(h, step);
    if (h->mode == CKPT_SAVE_ASYNC)
        err = poll_saver(h, NULL);
    /* A failure to report first: no trigger now, the timer stays (a
     * collective saver saves regardless, as every process does). */
    if (err == 0 && should_save(h, step, &err) &&
        (h->kept_err == 0 || h->collective))
        err = save_now(h, step);
    pass_stop(h, ctx);
    return ckpt__ckhook_take_error(h, err);
}

/* After end or on_abort: a borrowed saver gets its callback back and its
 * metrics are kept, as it may be freed before the hook. */
static void finish(ckpt__ckhook *h)
{
    h->ended = 1;
    h->stop_pending = 0;
    if (h->saver && h->session)
        ckpt__session_remove_fence_saver(h->session, h->saver);
    if (h->saver && !h->own_saver) {
        ckpt_saver_get_metrics(h->saver, &h->final_metrics);
        h->has_final_metrics = 1;
        ckpt__ckhook_uninstall(h);
        h->saver = NULL;
    }
}

static int hook_end(ckpt_session *s, void *payload)
{
    ckpt__ckhook *h = payload;
    int64_t step = 0;
    int err = 0;
    if (!h->saver)
        return ckpt__error(CKPT_ESTATE,
                           "%s: end before the session was created", h->name);
    h->session = s;
    if (h->mode == CKPT_SAVE_ASYNC) {
        if (h->end_timeout_s > 0)
            ckpt__ckhook_log(h, CKPT_LOG_DEBUG,
                             "%s: waiting up to %.3f s for checkpoint "
                             "writes in flight",
                             h->name, h->end_timeout_s);
        err = ckpt_saver_wait(h->saver, 0,
                              h->end_timeout_s > 0 ? h->end_timeout_s : -1.0);
        if (err == CKPT_ETIMEDOUT) {
            ckpt__ckhook_log(h, CKPT_LOG_WARN,
                             "%s: a checkpoint write is still running after "
                             "%.3f s; no final checkpoint",
                             h->name, h->end_timeout_s);
            err = ckpt__ckhook_take_error(h, err);
            ckpt__ckhook_log_totals(h, "session ended");
            finish(h);
            return err;
        }
        ckpt__ckhook_keep_error(h, err); /* a failed write: still save */
    }
    err = ckpt_session_global_step(s, &step);
    if (err == 0 && step != h->last_durable) {
        h->stop_pending = 0;
        err = save_sync(h, step);
    }
    if (err == 0)
        err = ckpt__ckhook_listeners_end(h, step);
    ckpt__ckhook_keep_error(h, err);
    ckpt__ckhook_log_totals(h, "session ended");
    finish(h);
    return ckpt__ckhook_take_error(h, 0);
}

static void hook_on_abort(int status, void *payload)
{
    ckpt__ckhook *h = payload;
    ckpt__saved_error saved;
    double limit = h->end_timeout_s > 0    ? h->end_timeout_s
                   : h->end_timeout_s == 0 ? ABORT_WAIT_DEFAULT_S
                                           : -1.0;
    int err;
    if (!h->saver)
        return;
    ckpt__error_save(&saved);
    if (h->mode == CKPT_SAVE_ASYNC) {
        err = ckpt_saver_wait(h->saver, 0, limit);
        if (err < 0)
            ckpt__ckhook_log(h, CKPT_LOG_WARN,
                             "%s: session aborted (%s); waiting for the "
                             "checkpoint write in flight: %s",
                             h->name, ckpt_error_name(status),
                             ckpt_error_last()->message);
    }
    h->kept_err = 0;
    ckpt__ckhook_log_totals(h, "session aborted");
    finish(h);
    ckpt__error_restore(&saved);
}

static void hook_destroy(void *payload)
{
    ckpt__ckhook *h = payload;
    if (!h)
        return;
    h->ended = 1;
    if (h->own_saver && h->session)
        ckpt__session_remove_fence_saver(h->session, h->saver);
    /* Only the caller's own saver is known to be alive here; a scaffold
     * saver got its callback back in end or on_abort. */
    if (h->hooked && h->hooked == h->explicit_saver)
        ckpt__ckhook_uninstall(h);
    if (h->own_saver)
        ckpt_saver_free(h->saver); /* may deliver outcomes: h still alive */
    ckpt__free(h->tickets);
    ckpt__free(h->listeners);
    ckpt__free(h->basename);
    ckpt__free(h->dir);
    ckpt__free(h);
}

/* ---- construction -------------------------------------------------------- */

static int validate(const ckpt_checkpoint_hook_options *o)
{
    if (ckpt__seconds_check(o->save_secs, "checkpoint hook", "save_secs") < 0 ||
        ckpt__seconds_check(o->end_timeout_s, "checkpoint hook",
                            "end_timeout_s") < 0)
        return CKPT_EINVAL;
    if (ckpt__clock_check(o->clock, "checkpoint hook options") < 0)
        return CKPT_EVERSION;
    if (o->saver && o->use_scaffold)
        return ckpt__error(CKPT_EINVAL,
                           "checkpoint hook: an explicit saver and "
                           "use_scaffold exclude each other");
    if (o->use_scaffold && o->saver_options)
        return ckpt__error(CKPT_EINVAL,
                           "checkpoint hook: saver_options configure a saver "
                           "the hook opens, but use_scaffold writes through "
                           "the session's saver: give them as the session's "
                           "saver_options (and the name as "
                           "checkpoint_basename)");
    if ((o->save_secs > 0) == (o->save_steps > 0))
        return ckpt__error(CKPT_EINVAL,
                           "checkpoint hook: exactly one of save_secs and "
                           "save_steps must be set (> 0), got %g and %" PRId64,
                           o->save_secs, o->save_steps);
    if (o->mode != CKPT_SAVE_SYNC && o->mode != CKPT_SAVE_ASYNC)
        return ckpt__error(CKPT_EINVAL, "checkpoint hook: unknown mode %d",
                           o->mode);
    if (o->num_listeners > 0 && !o->listeners)
        return ckpt__error(CKPT_EINVAL,
                           "checkpoint hook: %zu listeners but listeners is "
                           "NULL",
                           o->num_listeners);
    if (o->listeners && o->num_listeners == 0)
        return ckpt__error(CKPT_EINVAL,
                           "checkpoint hook: listeners is set but "
                           "num_listeners is 0 (set num_listeners to the "
                           "number of listeners; leave listeners NULL for "
                           "none)");
    for (size_t i = 0; i < o->num_listeners; i++)
        if (o->listeners[i].version < 1 ||
            o->listeners[i].version > CKPT_LISTENER_VERSION)
            return ckpt__error(CKPT_EVERSION,
                               "checkpoint hook: listener %zu has unknown "
                               "version %d (set it to CKPT_LISTENER_VERSION)",
                               i, o->listeners[i].version);
    if (o->saver_options) {
        int err = ckpt__options_check_version(
            o->saver_options->version, CKPT_SAVER_OPTIONS_VERSION,
            "checkpoint hook: saver options", "CKPT_SAVER_OPTIONS_INIT");
        if (err < 0)
            return err;
    }
    return 0;
}

/* The one basename the hook's options give, or CKPT_EINVAL when
 * checkpoint_basename and the saver options' or saver's basename differ. */
static int resolve_basename(const ckpt_checkpoint_hook_options *o,
                            const char **out)
{
    const char *named = o->checkpoint_basename;
    const char *other = NULL;
    const char *other_from = NULL;
    if (o->saver_options && o->saver_options->basename) {
        other = o->saver_options->basename;
        other_from = "saver_options->basename";
    } else if (o->saver) {
        other = ckpt_saver_get_options(o->saver)->basename;
        other_from = "the basename of the hook's saver";
    }
    if (named && !*named)
        return ckpt__error(CKPT_EINVAL,
                           "checkpoint hook: checkpoint_basename is empty");
    if (named && (!ckpt__basename_is_file_name(named) ||
                  strlen(named) > CKPT_BASENAME_MAX))
        return ckpt__error(CKPT_EINVAL,
                           "checkpoint hook: checkpoint_basename '%.40s%s' "
                           "must be a file name without '/', not '.' or "
                           "'..', of at most %d bytes",
                           named, strlen(named) > 40 ? "..." : "",
                           CKPT_BASENAME_MAX);
    if (named && other && strcmp(named, other) != 0)
        return ckpt__error(CKPT_EINVAL,
                           "checkpoint hook: checkpoint_basename '%s' "
                           "disagrees with %s '%s': set it in one place",
                           named, other_from, other);
    *out = named ? named : (o->saver_options ? other : NULL);
    return 0;
}

static int copy_options(ckpt__ckhook *h, const ckpt_checkpoint_hook_options *o)
{
    const char *basename = NULL;
    int err = resolve_basename(o, &basename);
    if (err < 0)
        return err;
    h->magic = CKPT__CKHOOK_MAGIC;
    h->mode = o->mode;
    h->name = o->mode == CKPT_SAVE_ASYNC ? async_name : sync_name;
    h->explicit_saver = o->saver;
    h->use_scaffold = o->use_scaffold;
    h->save_initial_if_present = o->save_initial_if_present;
    h->end_timeout_s = o->end_timeout_s;
    h->last_durable = CKPT_NO_STEP;
    ckpt__saver_options_copy(&h->saver_opts, o->saver_options);
    h->saver_opts.basename = NULL;
    /* Until begin learns the session's: the saver options', else stderr. */
    h->log = h->saver_opts.log ? h->saver_opts.log : ckpt_log_stderr;
    h->log_payload = h->saver_opts.log ? h->saver_opts.log_payload : NULL;
    h->log_level = ckpt__log_min_level(h->saver_opts.log_level);
    h->fs = ckpt_fs_or_default(h->saver_opts.fs);
    if (o->checkpoint_dir && *o->checkpoint_dir) {
        h->dir = ckpt__strdup(o->checkpoint_dir);
        if (!h->dir)
            return ckpt__error_oom();
    }
    if (basename) {
        h->basename = ckpt__strdup(basename);
        if (!h->basename)
            return ckpt__error_oom();
        h->saver_opts.basename = h->basename;
    }
    if (o->num_listeners > 0) {
        h->listeners = ckpt__calloc(o->num_listeners, sizeof(*h->listeners));
        if (!h->listeners)
            return ckpt__error_oom();
        memcpy(h->listeners, o->listeners,
               o->num_listeners * sizeof(*h->listeners));
        h->nlisteners = o->num_listeners;
    }
    h->next_skip_report = 1;
    return ckpt_timer_init(&h->timer, o->save_secs > 0 ? o->save_secs : 0.0,
                           o->save_steps > 0 ? o->save_steps : 0, o->clock);
}

int ckpt_checkpoint_hook_new(ckpt_hook *out,
                             const ckpt_checkpoint_hook_options *opts)
{
    ckpt_checkpoint_hook_options o;
    ckpt__ckhook *h;
    int err;
    CKPT__CHECK_ARG(out);
    memset(out, 0, sizeof(*out));
    CKPT__CHECK_ARG(opts);
    err = ckpt__options_check_version(
        opts->version, CKPT_CHECKPOINT_HOOK_OPTIONS_VERSION,
        "checkpoint hook options", "CKPT_CHECKPOINT_HOOK_OPTIONS_INIT");
    if (err < 0)
        return err;
    ckpt__options_merge(&o, &option_defaults, sizeof(o), opts,
                        options_size(opts->version));
    err = validate(&o);
    if (err < 0)
        return err;
    h = ckpt__calloc(1, sizeof(*h));
    if (!h)
        return ckpt__error_oom();
    err = copy_options(h, &o);
    if (err < 0) {
        hook_destroy(h);
        return err;
    }
    out->version = CKPT_HOOK_VERSION;
    out->kind = CKPT_HOOK_KIND_CHECKPOINT;
    out->name = h->name;
    out->payload = h;
    out->begin = hook_begin;
    out->after_create_session = hook_after_create_session;
    out->before_run = hook_before_run;
    out->after_run = hook_after_run;
    out->end = hook_end;
    out->on_abort = hook_on_abort;
    out->destroy = hook_destroy;
    return ckpt__hook_complete(out);
}

/* The error for a hook ckpt__ckhook_of does not take: not a checkpoint
 * hook, a copy of one whose session has since destroyed it, or one of the
 * caller's with the checkpoint kind set. */
static int not_a_live_checkpoint_hook(const ckpt_hook *hook, const char *fn)
{
    const char *why = "";
    if (hook->kind == CKPT_HOOK_KIND_CHECKPOINT)
        why = hook->serial ? " (or no longer one: the monitored session it "
                             "was handed to destroyed it when it was freed)"
                           : " (its kind is set, but "
                             "ckpt_checkpoint_hook_new did not make it)";
    return ckpt__error(CKPT_EINVAL, "%s: hook is not a checkpoint hook%s", fn,
                       why);
}

int ckpt_checkpoint_hook_wait(const ckpt_hook *hook, double timeout_s)
{
    ckpt__ckhook *h = ckpt__ckhook_of(hook);
    CKPT__CHECK_ARG(hook);
    if (!h)
        return not_a_live_checkpoint_hook(hook, "ckpt_checkpoint_hook_wait");
    if (!h->saver || h->ended || h->mode != CKPT_SAVE_ASYNC)
        return ckpt__ckhook_take_error(h, 0);
    return ckpt__ckhook_take_error(h, ckpt_saver_wait(h->saver, 0, timeout_s));
}

int ckpt_checkpoint_hook_metrics(const ckpt_hook *hook, ckpt_saver_metrics *out)
{
    const ckpt__ckhook *h = ckpt__ckhook_of(hook);
    CKPT__CHECK_ARG(out);
    CKPT__CHECK_ARG(hook);
    if (!h)
        return not_a_live_checkpoint_hook(hook, "ckpt_checkpoint_hook_metrics");
    if (h->saver) {
        ckpt_saver_get_metrics(h->saver, out);
    } else if (h->has_final_metrics) {
        *out = h->final_metrics;
    } else {
        memset(out, 0, sizeof(*out));
        out->last_saved_step = CKPT_NO_STEP;
    }
    return 0;
}
