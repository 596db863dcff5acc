/* hooks/training_session.c - the MonitoredTrainingSession-style builder
 * (docs/behaviour.md B40-B43): resolves the checkpoint frequencies (600 s
 * when neither is given, said in the log; both given is CKPT_EINVAL where
 * TF's documentation says "seconds win" but its code raises;
 * CKPT_FREQ_OFF turns a hook off), builds the default hooks in TF's chief
 * order - chief-only hooks, StepCounterHook, CheckpointSaverHook (with the
 * caller's listeners and basename), user hooks - and creates the monitored
 * session. A non-chief gets only the user hooks and never restores. No
 * summary hook exists in this library. */
#include "ckpt/hooks.h"
#include "common/internal.h"
#include "session/session_internal.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define DEFAULT_SAVE_SECS 600.0
#define DEFAULT_LOG_STEP_COUNT_STEPS 100

static void destroy_all(const ckpt_hook *hooks, size_t n)
{
    ckpt__hooks_destroy(hooks, n, NULL, 0);
}

/* Resolve the checkpoint frequency: `*enabled` is 0 when no checkpoint
 * hook is built (no directory, or both frequencies disabled). */
static int resolve_checkpoint(const ckpt_training_session_options *o,
                              double *secs, int64_t *steps, int *enabled)
{
    *secs = o->save_checkpoint_secs;
    *steps = o->save_checkpoint_steps;
    *enabled = 0;
    if (!o->checkpoint_dir)
        return 0;
    if (*secs > 0 && *steps > 0) /* B41 */
        return ckpt__error(CKPT_EINVAL,
                           "training session: both save_checkpoint_secs "
                           "(%g) and save_checkpoint_steps (%lld) are set; "
                           "give one",
                           *secs, (long long)*steps);
    if (*secs == CKPT_FREQ_DEFAULT && *steps == CKPT_FREQ_DEFAULT) /* B40 */
        *secs = DEFAULT_SAVE_SECS;
    /* B42: a frequency <= 0 disables; the other one decides. */
    if (*secs < 0)
        *secs = 0;
    if (*steps < 0)
        *steps = 0;
    *enabled = *secs > 0 || *steps > 0;
    return 0;
}

static int add_default_hooks(ckpt_hook *hooks, size_t *n,
                             const ckpt_training_session_options *o)
{
    const ckpt_session_options *so = &o->session;
    int64_t every = o->log_step_count_steps != CKPT_FREQ_DEFAULT
                        ? o->log_step_count_steps
                        : DEFAULT_LOG_STEP_COUNT_STEPS;
    double secs;
    int64_t steps;
    int enabled;
    int err = resolve_checkpoint(o, &secs, &steps, &enabled);
    if (err < 0)
        return err;
    /* TF counts steps only where it has a summary directory. */
    if (o->checkpoint_dir && every > 0) {
        ckpt_step_counter_hook_options sco =
            CKPT_STEP_COUNTER_HOOK_OPTIONS_INIT;
        sco.every_n_steps = every;
        sco.clock = so->clock;
        err = ckpt_step_counter_hook_new(&hooks[*n], &sco);
        if (err < 0)
            return err;
        (*n)++;
    }
    if (enabled) {
        ckpt_checkpoint_hook_options co = CKPT_CHECKPOINT_HOOK_OPTIONS_INIT;
        co.checkpoint_dir = o->checkpoint_dir;
        co.save_secs = secs;
        co.save_steps = steps;
        co.mode = o->checkpoint_mode;
        co.use_scaffold = 1; /* TF passes the scaffold's saver */
        co.clock = so->clock;
        co.listeners = o->listeners;
        co.num_listeners = o->num_listeners;
        co.checkpoint_basename = o->checkpoint_basename;
        err = ckpt_checkpoint_hook_new(&hooks[*n], &co);
        if (err < 0)
            return err;
        (*n)++;
    }
    return 0;
}

static const ckpt_training_session_options option_defaults =
    CKPT_TRAINING_SESSION_OPTIONS_INIT;

/* Bytes of the options struct a caller built against `version` has. */
static size_t options_size(unsigned int version)
{
    if (version == 1)
        return offsetof(ckpt_training_session_options, listeners);
    return sizeof(ckpt_training_session_options);
}

/* The caller's hooks, named by the caller's own indices (the session's
 * would count the default hooks too): a hook version this library does
 * not know, and one hook given twice (in one list or in both), which would
 * be called twice a step and destroyed twice. */
static int check_hooks(const ckpt_training_session_options *o)
{
    const ckpt_hook *lists[2] = {o->chief_only_hooks, o->hooks};
    const size_t counts[2] = {o->num_chief_only_hooks, o->num_hooks};
    static const char *const names[2] = {"chief_only_hooks", "hooks"};
    char label[64];
    int err;
    for (int l = 0; l < 2; l++)
        for (size_t i = 0; i < counts[l]; i++) {
            const ckpt_hook *h = &lists[l][i];
            if (ckpt__hook_is_zero(h))
                return ckpt__error(CKPT_EINVAL,
                                   "training session: %s[%zu] is all zero: a "
                                   "hook given to a failed creation (it was "
                                   "destroyed then, and zeroed), or one whose "
                                   "constructor failed: make it again",
                                   names[l], i);
            snprintf(label, sizeof(label), "training session: %s[%zu]",
                     names[l], i);
            err = ckpt__hook_check_usable(h, label);
            if (err < 0)
                return err;
            if (h->version < 1 || h->version > CKPT_HOOK_VERSION)
                return ckpt__error(CKPT_EVERSION,
                                   "training session: %s[%zu] ('%s'): "
                                   "version %d is not supported (set it to "
                                   "CKPT_HOOK_VERSION)",
                                   names[l], i, h->name ? h->name : "unnamed",
                                   h->version);
            for (int k = 0; k <= l; k++) {
                size_t n = k == l ? i : counts[k];
                for (size_t j = 0; j < n; j++)
                    if (ckpt__hook_is_repeat(&lists[l][i], &lists[k][j]))
                        return ckpt__error(
                            CKPT_EINVAL,
                            "training session: %s[%zu] and %s[%zu] ('%s') "
                            "are the same hook (one payload): give each "
                            "hook once",
                            names[k], j, names[l], i,
                            lists[l][i].name ? lists[l][i].name : "unnamed");
            }
        }
    return 0;
}

/* An array given with a count of 0 (the count forgotten) would be
 * ignored, its hooks neither run nor freed: refused, naming both fields. */
static int check_counts(const ckpt_training_session_options *o)
{
    static const char *const names[3][2] = {
        {"hooks", "num_hooks"},
        {"chief_only_hooks", "num_chief_only_hooks"},
        {"listeners", "num_listeners"}};
    const int forgotten[3] = {o->hooks && o->num_hooks == 0,
                              o->chief_only_hooks &&
                                  o->num_chief_only_hooks == 0,
                              o->listeners && o->num_listeners == 0};
    for (int i = 0; i < 3; i++)
        if (forgotten[i])
            return ckpt__error(CKPT_EINVAL,
                               "training session: %s is set but %s is 0 (set "
                               "%s to the array's length; leave %s NULL for "
                               "none)",
                               names[i][0], names[i][1], names[i][1],
                               names[i][0]);
    return 0;
}

static int check_options(const ckpt_training_session_options *o)
{
    int err;
    if (ckpt__seconds_check(o->save_checkpoint_secs, "training session",
                            "save_checkpoint_secs") < 0)
        return CKPT_EINVAL;
    if ((o->num_hooks > 0 && !o->hooks) ||
        (o->num_chief_only_hooks > 0 && !o->chief_only_hooks))
        return ckpt__error(CKPT_EINVAL,
                           "training session: hook counts without arrays");
    if (o->num_listeners > 0 && !o->listeners)
        return ckpt__error(CKPT_EINVAL,
                           "training session: %zu listeners but listeners "
                           "is NULL",
                           o->num_listeners);
    err = check_counts(o);
    return err < 0 ? err : check_hooks(o);
}

/* Warn that a frequency without a directory saves nothing (TensorFlow
 * saves nothing then either, and says nothing). */
static void warn_frequency_without_dir(const ckpt_training_session_options *o)
{
    ckpt_log_fn log = o->session.log ? o->session.log : ckpt_log_stderr;
    if (o->checkpoint_dir || o->not_chief ||
        (o->save_checkpoint_secs <= 0 && o->save_checkpoint_steps <= 0))
        return;
    ckpt__log(log, o->session.log ? o->session.log_payload : NULL,
              ckpt__log_min_level(o->session.log_level), CKPT_LOG_WARN,
              "training session: %s is set but checkpoint_dir is NULL: no "
              "checkpoint is saved (set checkpoint_dir)",
              o->save_checkpoint_secs > 0 ? "save_checkpoint_secs"
                                          : "save_checkpoint_steps");
}

/* Tell the user the default frequency was applied (TensorFlow's 0 means
 * off; here it is CKPT_FREQ_OFF); once the session exists, so that a
 * directory that cannot be used is not announced first. */
static void log_default_frequency(const ckpt_training_session_options *o)
{
    ckpt_log_fn log = o->session.log ? o->session.log : ckpt_log_stderr;
    if (!o->checkpoint_dir || o->not_chief ||
        o->save_checkpoint_secs != CKPT_FREQ_DEFAULT ||
        o->save_checkpoint_steps != CKPT_FREQ_DEFAULT)
        return;
    ckpt__log(log, o->session.log ? o->session.log_payload : NULL,
              ckpt__log_min_level(o->session.log_level), CKPT_LOG_INFO,
              "training session: saving checkpoints to %s every %g s (the "
              "default; set save_checkpoint_secs or save_checkpoint_steps, "
              "or CKPT_FREQ_OFF to save none)",
              o->checkpoint_dir, DEFAULT_SAVE_SECS);
}

static void zero_hooks(ckpt_hook *hooks, size_t n)
{
    if (hooks && n > 0)
        memset(hooks, 0, n * sizeof(*hooks));
}

static int create(ckpt_monitored_session **out, ckpt_graph *graph,
                  const ckpt_training_session_options *opts)
{
    ckpt_training_session_options merged;
    const ckpt_training_session_options *o = opts ? opts : &option_defaults;
    ckpt_session_options so;
    ckpt_hook *hooks = NULL;
    size_t n = 0;
    size_t cap;
    int err;
    if (out)
        *out = NULL;
    err = out ? 0 : ckpt__error_null_arg("ckpt_training_session_new", "out");
    if (err == 0 && !graph)
        err = ckpt__error_null_arg("ckpt_training_session_new", "graph");
    if (err == 0)
        err = ckpt__options_check_version(
            o->version, CKPT_TRAINING_SESSION_OPTIONS_VERSION,
            "training session options", "CKPT_TRAINING_SESSION_OPTIONS_INIT");
    if (err == 0) {
        ckpt__options_merge(&merged, &option_defaults, sizeof(merged), o,
                            options_size(o->version));
        o = &merged;
        err = check_options(o);
    }
    if (err < 0)
        goto fail;
    warn_frequency_without_dir(o);
    cap = o->num_chief_only_hooks + 2 + o->num_hooks;
    hooks = ckpt__calloc(cap, sizeof(*hooks));
    if (!hooks) {
        err = ckpt__error_oom();
        goto fail;
    }
    if (!o->not_chief) {
        if (o->num_chief_only_hooks) /* NULL with 0 is fine here */
            memcpy(hooks, o->chief_only_hooks,
                   o->num_chief_only_hooks * sizeof(*hooks));
        n = o->num_chief_only_hooks;
        err = add_default_hooks(hooks, &n, o);
        if (err < 0) {
            destroy_all(hooks + o->num_chief_only_hooks,
                        n - o->num_chief_only_hooks);
            goto fail;
        }
    } else {
        /* B43; a hook also among the user hooks goes on to the session */
        ckpt__hooks_destroy(o->chief_only_hooks, o->num_chief_only_hooks,
                            o->hooks, o->num_hooks);
        for (size_t i = 0; i < o->num_chief_only_hooks; i++)
            if (!ckpt__hook_is_among(&o->chief_only_hooks[i], o->hooks,
                                     o->num_hooks))
                zero_hooks(&o->chief_only_hooks[i], 1);
    }
    if (o->num_hooks)
        memcpy(hooks + n, o->hooks, o->num_hooks * sizeof(*hooks));
    n += o->num_hooks;
    so = o->session;
    /* Every zero field of the session options is its default. */
    if (so.version == 0)
        so.version = CKPT_SESSION_OPTIONS_VERSION;
    /* A different session.checkpoint_dir fails in the checkpoint hook's
     * begin, naming both. */
    if (!so.checkpoint_dir)
        so.checkpoint_dir = o->checkpoint_dir;
    if (!so.saver_options)
        so.saver_options = o->saver_options;
    else if (o->saver_options && o->saver_options != so.saver_options) {
        destroy_all(hooks, n);
        ckpt__free(hooks);
        return ckpt__error(CKPT_EINVAL,
                           "training session: saver_options and "
                           "session.saver_options are both set: give them "
                           "once");
    }
    so.not_chief = o->not_chief;
    err = ckpt_monitored_session_new(out, graph, hooks, n, &so);
    ckpt__free(hooks);
    if (err == 0)
        log_default_frequency(o);
    return err;
fail:
    /* The caller's hooks are consumed on every path. */
    destroy_all(o->chief_only_hooks, o->num_chief_only_hooks);
    ckpt__hooks_destroy(o->hooks, o->num_hooks, o->chief_only_hooks,
                        o->num_chief_only_hooks);
    ckpt__free(hooks);
    return err;
}

int ckpt_training_session_new(ckpt_monitored_session **out, ckpt_graph *graph,
                              const ckpt_training_session_options *opts)
{
    int err = create(out, graph, opts);
    /* Destroyed on failure: the caller's copies would point at freed
     * payloads, which a retry or a ckpt_hook_free would use again. */
    if (err < 0 && opts) {
        zero_hooks(opts->hooks, opts->num_hooks);
        zero_hooks(opts->chief_only_hooks, opts->num_chief_only_hooks);
    }
    return err;
}

int ckpt_training_session_options_init(ckpt_training_session_options *o,
                                       unsigned int version)
{
    CKPT__CHECK_ARG(o);
    return ckpt__options_init(o, &option_defaults, options_size(version),
                              version, CKPT_TRAINING_SESSION_OPTIONS_VERSION,
                              "training session options",
                              "CKPT_TRAINING_SESSION_OPTIONS_INIT");
}
