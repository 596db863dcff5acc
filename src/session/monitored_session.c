/* session/monitored_session.c - building and freeing a monitored session:
 * options, hook copies, every hook's begin in order, freezing the graph,
 * the first session creation (in the recoverable flavour with bounded
 * retries), and the small accessors. The run cycle is in run_cycle.c,
 * creation/recovery in session_create.c and close in session_close.c. */
#include "session_internal.h"

#include "io/fs_internal.h"
#include "saver/saver_ops.h"

#include <stdio.h>
#include <string.h>

#define DEFAULT_MAX_RECOVERY_ATTEMPTS 10
#define DEFAULT_RECOVERY_BACKOFF_S 0.1
#define DEFAULT_STOP_GRACE_PERIOD_S 120.0

int ckpt_session_options_init(ckpt_session_options *opts, unsigned int version)
{
    static const ckpt_session_options defaults = CKPT_SESSION_OPTIONS_INIT;
    CKPT__CHECK_ARG(opts);
    return ckpt__options_init(opts, &defaults, sizeof(defaults), version,
                              CKPT_SESSION_OPTIONS_VERSION, "session options",
                              "CKPT_SESSION_OPTIONS_INIT");
}

int ckpt_is_clean_end(int code)
{
    return code == CKPT_EOUT_OF_RANGE || code == CKPT_ESTOPITER;
}

int ckpt_is_recoverable(int code)
{
    return code == CKPT_EABORTED || code == CKPT_EUNAVAILABLE;
}

void ckpt__ms_log(const ckpt_monitored_session *ms, int level, const char *fmt,
                  ...)
{
    va_list ap;
    va_start(ap, fmt);
    ckpt__logv(ms->log, ms->log_payload, ms->log_level, level, fmt, ap);
    va_end(ap);
}

int64_t ckpt__ms_global_step(const ckpt_monitored_session *ms)
{
    return ms->graph->global_step ? *ms->graph->global_step : -1;
}

int ckpt__hook_is_among(const ckpt_hook *h, const ckpt_hook *list, size_t n)
{
    for (size_t j = 0; h->payload && list && j < n; j++)
        if (list[j].payload == h->payload && list[j].destroy == h->destroy)
            return 1;
    return 0;
}

int ckpt__hook_is_repeat(const ckpt_hook *h, const ckpt_hook *other)
{
    return ckpt__hook_is_among(h, other, 1) && h->begin == other->begin &&
           h->after_create_session == other->after_create_session &&
           h->before_run == other->before_run &&
           h->after_run == other->after_run && h->end == other->end &&
           h->on_abort == other->on_abort;
}

int ckpt__hook_is_zero(const ckpt_hook *h)
{
    static const ckpt_hook zero;
    return memcmp(h, &zero, sizeof(zero)) == 0;
}

static int check_args(ckpt_graph *graph, const ckpt_hook *hooks, size_t n,
                      const ckpt_session_options *opts)
{
    if (!graph)
        return ckpt__error(CKPT_EINVAL,
                           "ckpt_monitored_session_new: graph is NULL");
    if (n > 0 && !hooks)
        return ckpt__error(CKPT_EINVAL,
                           "ckpt_monitored_session_new: hooks is NULL (with "
                           "num_hooks %zu)",
                           n);
    for (size_t i = 0; i < n; i++)
        if (ckpt__hook_is_zero(&hooks[i]))
            return ckpt__error(
                CKPT_EINVAL,
                "hooks[%zu] is all zero: a hook given to a failed "
                "ckpt_monitored_session_new (it was destroyed then, and "
                "zeroed), or one whose constructor failed: make it again",
                i);
    for (size_t i = 0; i < n; i++) {
        char label[32];
        int err;
        snprintf(label, sizeof(label), "hooks[%zu]", i);
        err = ckpt__hook_check_usable(&hooks[i], label);
        if (err < 0)
            return err;
    }
    for (size_t i = 0; i < n; i++)
        if (hooks[i].version < 1 || hooks[i].version > CKPT_HOOK_VERSION)
            return ckpt__error(
                CKPT_EVERSION,
                "hooks[%zu] ('%s'): version %d is not supported (set it "
                "to CKPT_HOOK_VERSION)",
                i, hooks[i].name ? hooks[i].name : "unnamed", hooks[i].version);
    for (size_t i = 1; i < n; i++)
        for (size_t j = 0; j < i; j++)
            if (ckpt__hook_is_repeat(&hooks[i], &hooks[j]))
                return ckpt__error(
                    CKPT_EINVAL,
                    "hooks[%zu] and hooks[%zu] ('%s') are the same hook "
                    "(one payload): give each hook once",
                    j, i, hooks[i].name ? hooks[i].name : "unnamed");
    if (!opts)
        return 0;
    if (ckpt__options_check_version(opts->version, CKPT_SESSION_OPTIONS_VERSION,
                                    "session options",
                                    "CKPT_SESSION_OPTIONS_INIT") < 0 ||
        ckpt__seconds_check(opts->recovery_backoff_s, "session options",
                            "recovery_backoff_s") < 0 ||
        ckpt__seconds_check(opts->stop_grace_period_s, "session options",
                            "stop_grace_period_s") < 0 ||
        ckpt__fs_check(opts->fs, "session options") < 0 ||
        ckpt__clock_check(opts->clock, "session options") < 0)
        return ckpt_error_last()->code;
    return 0;
}

/* Copy the options, resolving 0 to each field's default. */
static int copy_options(ckpt_monitored_session *ms,
                        const ckpt_session_options *o)
{
    ckpt_session_options defaults = CKPT_SESSION_OPTIONS_INIT;
    if (!o)
        o = &defaults;
    ms->clock = o->clock;
    ms->fs = ckpt_fs_or_default(o->fs);
    ms->scaffold = o->scaffold;
    ms->recoverable = o->recoverable ? 1 : 0;
    ms->max_recovery_attempts = o->max_recovery_attempts
                                    ? o->max_recovery_attempts
                                    : DEFAULT_MAX_RECOVERY_ATTEMPTS;
    ms->recovery_backoff_s = o->recovery_backoff_s != 0.0
                                 ? o->recovery_backoff_s
                                 : DEFAULT_RECOVERY_BACKOFF_S;
    ms->not_chief = o->not_chief ? 1 : 0;
    ms->stop_grace_period_s = o->stop_grace_period_s > 0
                                  ? o->stop_grace_period_s
                                  : DEFAULT_STOP_GRACE_PERIOD_S;
    /* Like TensorFlow's hooks, log to the console unless told otherwise. */
    ms->log = o->log ? o->log : ckpt_log_stderr;
    ms->log_payload = o->log ? o->log_payload : NULL;
    ms->log_level = ckpt__log_min_level(o->log_level);
    ckpt__saver_options_copy(&ms->saver_opts, o->saver_options);
    ms->saver_options_given = o->saver_options != NULL;
    if (!ms->saver_opts.fs)
        ms->saver_opts.fs = o->fs;
    if (!ms->saver_opts.clock)
        ms->saver_opts.clock = o->clock;
    if (!ms->saver_opts.log) {
        ms->saver_opts.log = ms->log;
        ms->saver_opts.log_payload = ms->log_payload;
        ms->saver_opts.log_level = ms->log_level;
    }
    if (o->checkpoint_dir) {
        ms->checkpoint_dir = ckpt__strdup(o->checkpoint_dir);
        if (!ms->checkpoint_dir)
            return ckpt__error_oom();
    }
    if (o->restore_from) {
        ms->restore_from = ckpt__strdup(o->restore_from);
        if (!ms->restore_from)
            return ckpt__error_oom();
    }
    return 0;
}

static int alloc_session(ckpt_monitored_session **out, ckpt_graph *graph,
                         const ckpt_hook *hooks, size_t n,
                         const ckpt_session_options *opts)
{
    ckpt_monitored_session *ms = ckpt__calloc(1, sizeof(*ms));
    int err;
    *out = NULL;
    if (!ms)
        return ckpt__error_oom();
    ms->graph = graph;
    ckpt__graph_hold(graph, 1);
    ms->sess.ms = ms;
    ms->sess.graph = graph;
    ckpt__step_context_init(&ms->sc, &ms->sess);
    ms->ctx.session = &ms->sess;
    *out = ms;
    if (n > 0) {
        ms->hooks = ckpt__calloc(n, sizeof(*ms->hooks));
        ms->hook_args = ckpt__calloc(n, sizeof(*ms->hook_args));
        if (!ms->hooks || !ms->hook_args)
            return ckpt__error_oom();
        memcpy(ms->hooks, hooks, n * sizeof(*hooks));
        ms->num_hooks = n;
        ckpt__hooks_hold(ms->hooks, n);
    }
    err = copy_options(ms, opts);
    if (err < 0)
        return err;
    return ckpt_coordinator_new(&ms->sess.coord, ms->clock);
}

/* Open the scaffold's saver over every graph variable when none was given:
 * on checkpoint_dir, else on the directory of restore_from. */
static int open_scaffold_saver(ckpt_monitored_session *ms)
{
    ckpt_buf dir = CKPT_BUF_INIT;
    ckpt_saver *s = NULL;
    int err = 0;
    if (ms->scaffold.saver) {
        ms->sess.saver = ms->scaffold.saver;
        return 0;
    }
    if (ms->not_chief || ms->graph->num_vars == 0 ||
        (!ms->checkpoint_dir && !ms->restore_from))
        return 0;
    if (ms->checkpoint_dir)
        err = ckpt__buf_set(&dir, ms->checkpoint_dir);
    else
        err = ckpt__path_dirname(&dir, ms->restore_from);
    if (err < 0)
        goto done;
    err = ckpt_saver_open(&s, dir.ptr, &ms->saver_opts);
    /* a missing directory has nothing to restore; a file in its place is
     * the caller's mistake, reported as the saver words it */
    if (err == CKPT_ENOTFOUND && !ms->restore_from &&
        !strstr(ckpt_error_last()->message, "is not a directory")) {
        ckpt__ms_log(ms, CKPT_LOG_INFO,
                     "checkpoint directory %s does not exist: nothing to "
                     "restore",
                     dir.ptr);
        ckpt_error_clear();
        err = 0;
        goto done;
    }
    if (err < 0)
        goto done;
    for (size_t i = 0; i < ms->graph->num_vars && err == 0; i++)
        err = ckpt_saver_add_var(s, &ms->graph->vars[i]);
    if (err < 0)
        goto done;
    ms->owned_saver = s;
    ms->sess.saver = s;
    s = NULL;
done:
    ckpt_saver_free(s);
    ckpt_buf_dispose(&dir);
    return err;
}

/* State the session's checkpoint settings (and log) before the hooks'
 * begin, where checkpoint hooks add theirs or check them. */
static int state_settings(ckpt_monitored_session *ms)
{
    ckpt_graph *g = ms->graph;
    int err;
    ckpt__graph_forget_agreement(g);
    ckpt__graph_set_session_defaults(g, ms->fs, ms->clock, ms->log,
                                     ms->log_payload, ms->log_level);
    err = ckpt__graph_agree_dir(g, ms->checkpoint_dir,
                                "the session options (checkpoint_dir)");
    if (err == 0 && ms->scaffold.saver)
        err = ckpt__graph_agree_basename(
            g, ckpt_saver_get_options(ms->scaffold.saver)->basename,
            "the session's scaffold saver");
    else if (err == 0)
        err = ckpt__graph_agree_basename(
            g, ms->saver_opts.basename,
            "the session options (saver_options->basename)");
    return err;
}

/* After the hooks' begin: a setting only a hook gave serves the session
 * too (one checkpoint_dir suffices for resume). A scaffold saver that no
 * hook writes through and that the caller did not configure only restores:
 * it keeps every checkpoint, so that opening it never applies a retention
 * other than the one of the saver that writes them. */
static int adopt_settings(ckpt_monitored_session *ms)
{
    const ckpt__graph_agreement *a = ckpt__graph_agreement_of(ms->graph);
    int savers = a->own_writers + (a->scaffold_writer ? 1 : 0);
    /* Every checkpoint hook of a session saves into its one directory: two
     * savers there would each write the state file over the other's list
     * (and one saver's retention delete the other's checkpoints). */
    if (savers > 1)
        return ckpt__error(CKPT_EINVAL,
                           "monitored session: %d checkpoint hooks save into "
                           "%s through %d different savers; a directory "
                           "keeps one state file, which each would write "
                           "over: let one checkpoint hook save (others can "
                           "share its saver with use_scaffold, or listen to "
                           "its saves)",
                           savers, a->dir ? a->dir : "the checkpoint directory",
                           savers);
    if (!a->scaffold_writer && !ms->saver_options_given)
        ms->saver_opts.max_to_keep = CKPT_KEEP_ALL;
    if (!ms->checkpoint_dir && a->dir) {
        ms->checkpoint_dir = ckpt__strdup(a->dir);
        if (!ms->checkpoint_dir)
            return ckpt__error_oom();
    }
    if (!ms->saver_opts.basename && a->basename) {
        ms->basename = ckpt__strdup(a->basename);
        if (!ms->basename)
            return ckpt__error_oom();
        ms->saver_opts.basename = ms->basename;
    }
    return 0;
}

static int call_begins(ckpt_monitored_session *ms)
{
    for (size_t i = 0; i < ms->num_hooks; i++) {
        const ckpt_hook *h = &ms->hooks[i];
        if (h->begin) {
            int err;
            ckpt_error_clear();
            err = h->begin(ms->graph, h->payload);
            if (err != 0)
                return ckpt__error_prefix(err < 0 ? err : CKPT_EUSER,
                                          "hook '%s' begin",
                                          h->name ? h->name : "unnamed");
        }
        ms->num_began = i + 1;
    }
    return 0;
}

/* The first creation; the recoverable flavour retries recoverable errors
 * (bounded, with back-off) where TF retries forever. */
static int first_creation(ckpt_monitored_session *ms)
{
    int attempts = 0;
    int err = ckpt__ms_create_session(ms);
    if (err < 0 && ckpt__ms_should_recover(ms, err))
        err = ckpt__ms_recover(ms, err, &attempts);
    return err;
}

/* Undo a failed creation: on_abort for hooks that began, then free. */
static void abandon(ckpt_monitored_session *ms, int err)
{
    ckpt__saved_error saved;
    ckpt__error_save(&saved);
    for (size_t i = 0; i < ms->num_began; i++)
        if (ms->hooks[i].on_abort)
            ms->hooks[i].on_abort(err, ms->hooks[i].payload);
    ckpt__ms_drop_session(ms);
    ms->closed = 1;
    ckpt_monitored_session_free(ms);
    ckpt__error(err, "%s", saved.message);
}

static int create(ckpt_monitored_session **out, ckpt_graph *graph,
                  const ckpt_hook *hooks, size_t num_hooks,
                  const ckpt_session_options *opts)
{
    ckpt_monitored_session *ms = NULL;
    int err;
    if (out)
        *out = NULL;
    err = out ? check_args(graph, hooks, num_hooks, opts)
              : ckpt__error(CKPT_EINVAL,
                            "ckpt_monitored_session_new: out is NULL");
    if (err < 0) {
        ckpt__hooks_destroy(hooks, num_hooks, NULL, 0);
        return err;
    }
    err = alloc_session(&ms, graph, hooks, num_hooks, opts);
    if (err < 0) {
        /* Hooks not copied yet are destroyed here, copies by free. */
        if (!ms || ms->num_hooks != num_hooks)
            ckpt__hooks_destroy(hooks, num_hooks, NULL, 0);
        if (ms)
            ms->closed = 1;
        ckpt_monitored_session_free(ms);
        return err;
    }
    err = state_settings(ms);
    if (err == 0)
        err = call_begins(ms);
    if (err == 0)
        err = adopt_settings(ms);
    if (err == 0) {
        ckpt__graph_set_frozen(graph, 1);
        ms->holds_freeze = 1;
        err = open_scaffold_saver(ms);
    }
    /* A collective saver's processes agree on their set-up before the
     * restore, whose collectives a process that failed here would never
     * join. */
    err = ckpt__saver_agree_outcome(
        ms->sess.saver ? ms->sess.saver : ms->scaffold.saver, err);
    if (err == 0)
        err = first_creation(ms);
    if (err < 0) {
        abandon(ms, err);
        return err;
    }
    *out = ms;
    return 0;
}

int ckpt_monitored_session_new(ckpt_monitored_session **out, ckpt_graph *graph,
                               ckpt_hook *hooks, size_t num_hooks,
                               const ckpt_session_options *opts)
{
    int err = create(out, graph, hooks, num_hooks, opts);
    /* Destroyed on failure: the caller's copies would point at freed
     * payloads, which a retry or a ckpt_hook_free would use again. */
    if (err < 0 && hooks)
        memset(hooks, 0, num_hooks * sizeof(*hooks));
    return err;
}

void ckpt_monitored_session_free(ckpt_monitored_session *ms)
{
    if (!ms)
        return;
    if (!ms->closed) {
        /* the close's log line says why, and what was not done */
        ckpt__error(CKPT_ECANCELED,
                    "freed without ckpt_monitored_session_close: the hooks "
                    "were aborted and no final checkpoint was written (close "
                    "with 0 before freeing for one)");
        ckpt_monitored_session_close(ms, CKPT_ECANCELED);
        ckpt_error_clear();
    }
    if (ms->stop_source_detach)
        ms->stop_source_detach();
    ckpt__hooks_destroy_held(ms->hooks, ms->num_hooks);
    ckpt__free(ms->fence_savers);
    if (ms->holds_freeze)
        ckpt__graph_set_frozen(ms->graph, 0);
    ms->holds_freeze = 0;
    ckpt__graph_forget_agreement(ms->graph);
    ckpt_saver_free(ms->owned_saver);
    ckpt_coordinator_free(ms->sess.coord);
    ckpt__step_context_dispose(&ms->sc);
    ckpt__free(ms->hooks);
    ckpt__free(ms->hook_args);
    ckpt__free(ms->values);
    ckpt__free(ms->checkpoint_dir);
    ckpt__free(ms->restore_from);
    ckpt__free(ms->basename);
    ckpt_buf_dispose(&ms->restored);
    ckpt__graph_hold(ms->graph, 0); /* last: may free a graph freed before */
    ckpt__free(ms);
}

ckpt_session *ckpt_monitored_session_session(ckpt_monitored_session *ms)
{
    return ms ? &ms->sess : NULL;
}

size_t ckpt_monitored_session_num_hooks(const ckpt_monitored_session *ms)
{
    return ms ? ms->num_hooks : 0;
}

const ckpt_hook *ckpt_monitored_session_hook(const ckpt_monitored_session *ms,
                                             size_t i)
{
    if (!ms || i >= ms->num_hooks)
        return NULL;
    return &ms->hooks[i];
}

uint64_t ckpt_monitored_session_recoveries(const ckpt_monitored_session *ms)
{
    return ms ? ms->recoveries : 0;
}

void ckpt__ms_set_stop_source(ckpt_monitored_session *ms,
                              const atomic_int *flag, void (*detach)(void))
{
    ms->stop_source = flag;
    ms->stop_source_detach = flag ? detach : NULL;
}

void ckpt__ms_poll_stop_source(ckpt_monitored_session *ms)
{
    int sig;
    if (!ms->stop_source)
        return;
    sig = atomic_load(ms->stop_source);
    if (sig != 0 && !ms->stop) {
        ckpt__ms_log(ms, CKPT_LOG_WARN,
                     "signal %d received: stopping at the step boundary "
                     "(global step %lld)",
                     sig, (long long)ckpt__ms_global_step(ms));
        ms->stop = 1;
    }
}
