/* hooks/basic_hooks.c - the small standard hooks (TensorFlow's
 * basic_session_run_hooks), each built on the public ckpt_hook struct with
 * a payload the hook owns and frees in destroy: StopAtStepHook,
 * StepCounterHook, LoggingTensorHook (values are formatted by
 * hooks/format_value.c) and NanTensorHook. The last three take an options
 * struct and log through its callback, else the session's, else stderr. */
#include "ckpt/hooks.h"
#include "common/internal.h"
#include "hooks/basic_hooks_internal.h"
#include "saver/saver_internal.h"
#include "session/session_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define STEP_WARNINGS_MAX 5

#define DEFAULT_STEP_COUNTER_EVERY_N_STEPS 100

static ckpt_hook make_hook(const char *name, int kind, void *payload)
{
    ckpt_hook h;
    memset(&h, 0, sizeof(h));
    h.version = CKPT_HOOK_VERSION;
    h.kind = kind;
    h.name = name;
    h.payload = payload;
    h.destroy = ckpt__free;
    return h;
}

/* Where a hook logs: its options' callback, else (from begin on) the
 * session's, else stderr. */
typedef struct hook_log {
    ckpt_log_fn fn;
    void *payload;
    int level;
    int own; /* given in the hook's options */
} hook_log;

static hook_log log_from_options(ckpt_log_fn fn, void *payload, int level)
{
    hook_log l;
    l.fn = fn ? fn : ckpt_log_stderr;
    l.payload = fn ? payload : NULL;
    l.level = ckpt__log_min_level(level);
    l.own = fn != NULL;
    return l;
}

/* A timer given no clock in the hook's options runs on the session's. */
static void clock_adopt_session(ckpt_timer *t, const ckpt_graph *g)
{
    if (!t->clock)
        t->clock = ckpt__graph_agreement_of(g)->clock;
}

static void log_adopt_session(hook_log *l, const ckpt_graph *g)
{
    const ckpt__graph_agreement *a = ckpt__graph_agreement_of(g);
    if (!l->own && a->log) {
        l->fn = a->log;
        l->payload = a->log_payload;
        l->level = a->log_level;
    }
}

static void hook_logf(const hook_log *l, int level, const char *fmt, ...)
    CKPT__PRINTF(3, 4);
static void hook_logf(const hook_log *l, int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ckpt__logv(l->fn, l->payload, l->level, level, fmt, ap);
    va_end(ap);
}

/* ---- StopAtStepHook ----------------------------------------------------- */

typedef struct stop_at_step {
    int64_t num_steps;
    int64_t last_step;
    int has_last;
} stop_at_step;

static int stop_begin(ckpt_graph *g, void *payload)
{
    (void)payload;
    return ckpt__graph_need_global_step(g, "StopAtStepHook");
}

static int stop_after_create(ckpt_session *s, ckpt_coordinator *coord,
                             void *payload)
{
    stop_at_step *st = payload;
    int64_t step;
    int err = ckpt_session_global_step(s, &step);
    if (err < 0)
        return err;
    if (!st->has_last) {
        /* TF fixes the last step at the first creation only. */
        st->last_step =
            step > INT64_MAX - st->num_steps ? INT64_MAX : step + st->num_steps;
        st->has_last = 1;
    }
    /* Restored at or past the last step: stop before running any step
     * (TF runs one more step first). */
    if (step >= st->last_step)
        ckpt_coordinator_request_stop(coord, 0, NULL);
    return 0;
}

static int stop_after_run(ckpt_run_context *ctx, const ckpt_run_values *v,
                          void *payload)
{
    const stop_at_step *st = payload;
    if (v->step_after >= st->last_step)
        ckpt_run_context_request_stop(ctx);
    return 0;
}

int ckpt_stop_at_step_hook_new(ckpt_hook *out, int64_t num_steps,
                               int64_t last_step)
{
    stop_at_step *st;
    CKPT__CHECK_ARG(out);
    memset(out, 0, sizeof(*out));
    if (num_steps < 0 || last_step < 0)
        return ckpt__error(CKPT_EINVAL,
                           "StopAtStepHook: num_steps (%lld) and last_step "
                           "(%lld) must not be negative",
                           (long long)num_steps, (long long)last_step);
    if ((num_steps > 0) == (last_step > 0))
        return ckpt__error(CKPT_EINVAL,
                           "StopAtStepHook: give exactly one of num_steps "
                           "and last_step");
    st = ckpt__calloc(1, sizeof(*st));
    if (!st)
        return ckpt__error_oom();
    st->num_steps = num_steps;
    st->last_step = last_step;
    st->has_last = last_step > 0;
    *out = make_hook("StopAtStepHook", CKPT_HOOK_KIND_STOP_AT_STEP, st);
    out->begin = stop_begin;
    out->after_create_session = stop_after_create;
    out->after_run = stop_after_run;
    return ckpt__hook_complete(out);
}

/* ---- StepCounterHook --------------------------------------------------- */

typedef struct step_counter {
    ckpt_timer timer;
    hook_log log;
    int warnings;
} step_counter;

static int counter_begin(ckpt_graph *g, void *payload)
{
    step_counter *sc = payload;
    log_adopt_session(&sc->log, g);
    clock_adopt_session(&sc->timer, g);
    return ckpt__graph_need_global_step(g, "StepCounterHook");
}

static int counter_after_create(ckpt_session *s, ckpt_coordinator *coord,
                                void *payload)
{
    step_counter *sc = payload;
    (void)s;
    (void)coord;
    /* A (re)created session may restart from an older step: rates are
     * measured from here. */
    ckpt_timer_reset(&sc->timer);
    return 0;
}

static int counter_after_run(ckpt_run_context *ctx, const ckpt_run_values *v,
                             void *payload)
{
    step_counter *sc = payload;
    double secs;
    int64_t steps;
    (void)ctx;
    if (v->step_after == v->step_before && sc->warnings < STEP_WARNINGS_MAX) {
        sc->warnings++;
        hook_logf(&sc->log, CKPT_LOG_WARN,
                  "StepCounterHook: the global step did not increase (still "
                  "%lld); is the step function incrementing it?",
                  (long long)v->step_after);
    }
    if (!ckpt_timer_should_trigger(&sc->timer, v->step_after))
        return 0;
    if (ckpt_timer_update(&sc->timer, v->step_after, &secs, &steps) && secs > 0)
        hook_logf(&sc->log, CKPT_LOG_INFO,
                  "global_step/sec: %g (global step %lld)",
                  (double)steps / secs, (long long)v->step_after);
    return 0;
}

int ckpt_step_counter_hook_new(ckpt_hook *out,
                               const ckpt_step_counter_hook_options *opts)
{
    static const ckpt_step_counter_hook_options defaults =
        CKPT_STEP_COUNTER_HOOK_OPTIONS_INIT;
    const ckpt_step_counter_hook_options *o = opts ? opts : &defaults;
    int64_t steps = o->every_n_steps;
    step_counter *sc;
    int err;
    CKPT__CHECK_ARG(out);
    memset(out, 0, sizeof(*out));
    err = ckpt__options_check_version(
        o->version, CKPT_STEP_COUNTER_HOOK_OPTIONS_VERSION,
        "StepCounterHook options", "CKPT_STEP_COUNTER_HOOK_OPTIONS_INIT");
    if (err == 0)
        err = ckpt__clock_check(o->clock, "StepCounterHook options");
    if (err < 0)
        return err;
    if (steps == 0 && o->every_n_secs == 0)
        steps = DEFAULT_STEP_COUNTER_EVERY_N_STEPS;
    sc = ckpt__calloc(1, sizeof(*sc));
    if (!sc)
        return ckpt__error_oom();
    err = ckpt__timer_init_named(&sc->timer, o->every_n_secs, steps, o->clock,
                                 "StepCounterHook", "every_n_secs",
                                 "every_n_steps");
    if (err < 0) {
        ckpt__free(sc);
        return err;
    }
    sc->log = log_from_options(o->log, o->log_payload, o->log_level);
    *out = make_hook("StepCounterHook", CKPT_HOOK_KIND_STEP_COUNTER, sc);
    out->begin = counter_begin;
    out->after_create_session = counter_after_create;
    out->after_run = counter_after_run;
    return ckpt__hook_complete(out);
}

/* ---- LoggingTensorHook ------------------------------------------------- */

typedef struct logging_tensor {
    char **names;
    size_t num_names;
    ckpt_timer timer;
    int at_end;
    int64_t iter; /* local iterations, not the global step */
    int logging;  /* this step's values are requested */
    hook_log log;
} logging_tensor;

static int logging_begin(ckpt_graph *g, void *payload)
{
    logging_tensor *lt = payload;
    log_adopt_session(&lt->log, g);
    clock_adopt_session(&lt->timer, g);
    return 0;
}

static void logging_destroy(void *payload)
{
    logging_tensor *lt = payload;
    if (!lt)
        return;
    for (size_t i = 0; i < lt->num_names; i++)
        ckpt__free(lt->names[i]);
    ckpt__free(lt->names);
    ckpt__free(lt);
}

static int logging_before(ckpt_run_context *ctx, ckpt_run_args *args,
                          void *payload)
{
    logging_tensor *lt = payload;
    (void)ctx;
    lt->logging = ckpt_timer_should_trigger(&lt->timer, lt->iter);
    if (lt->logging) {
        args->fetches = (const char *const *)lt->names;
        args->num_fetches = lt->num_names;
    }
    return 0;
}

static void log_values(const logging_tensor *lt, const ckpt_value *values,
                       size_t n, int has_elapsed, double elapsed)
{
    ckpt_buf line = CKPT_BUF_INIT;
    int err = 0;
    for (size_t i = 0; i < n && err == 0; i++) {
        err = ckpt__buf_printf(&line, "%s%s = ", i ? ", " : "", values[i].name);
        if (err == 0)
            err = ckpt__format_value(&line, &values[i]);
    }
    if (err == 0 && has_elapsed)
        err = ckpt__buf_printf(&line, " (%.3f sec)", elapsed);
    if (err == 0)
        hook_logf(&lt->log, CKPT_LOG_INFO, "%s", line.ptr ? line.ptr : "");
    ckpt_buf_dispose(&line);
}

static int logging_after(ckpt_run_context *ctx, const ckpt_run_values *v,
                         void *payload)
{
    logging_tensor *lt = payload;
    double elapsed = 0;
    int has;
    (void)ctx;
    if (lt->logging) {
        has = ckpt_timer_update(&lt->timer, lt->iter, &elapsed, NULL);
        log_values(lt, v->results, v->num_results, has, elapsed);
    }
    lt->iter++;
    return 0;
}

static int logging_end(ckpt_session *s, void *payload)
{
    logging_tensor *lt = payload;
    ckpt_value *values;
    int err = 0;
    if (!lt->at_end)
        return 0;
    values = ckpt__calloc(lt->num_names, sizeof(*values));
    if (!values)
        return ckpt__error_oom();
    for (size_t i = 0; i < lt->num_names && err == 0; i++) {
        err = ckpt_session_fetch(s, lt->names[i], &values[i]);
        if (err < 0)
            err = ckpt__error_prefix(err, "LoggingTensorHook end");
    }
    if (err == 0)
        log_values(lt, values, lt->num_names, 0, 0.0);
    ckpt__free(values);
    return err;
}

static int check_logging_args(const char *const *names, size_t n,
                              int64_t every_n_iter, double every_n_secs,
                              int at_end)
{
    if (!names || n == 0)
        return ckpt__error(CKPT_EINVAL, "LoggingTensorHook: no tensor names");
    for (size_t i = 0; i < n; i++)
        if (!names[i] || !names[i][0])
            return ckpt__error(CKPT_EINVAL,
                               "LoggingTensorHook: names[%zu] is %s", i,
                               names[i] ? "empty" : "NULL");
    if (every_n_iter < 0 || every_n_secs < 0 || every_n_secs != every_n_secs)
        return ckpt__error(CKPT_EINVAL,
                           "LoggingTensorHook: every_n_iter (%lld) and "
                           "every_n_secs (%g) must be positive (0 leaves one "
                           "unset)",
                           (long long)every_n_iter, every_n_secs);
    if (every_n_iter == 0 && every_n_secs == 0 && !at_end)
        return ckpt__error(CKPT_EINVAL, "LoggingTensorHook: give every_n_iter, "
                                        "every_n_secs or at_end");
    return 0;
}

int ckpt_logging_tensor_hook_new(ckpt_hook *out,
                                 const ckpt_logging_tensor_hook_options *o)
{
    const char *const *names;
    size_t num_names;
    int64_t every_n_iter;
    double every_n_secs;
    int at_end;
    logging_tensor *lt;
    int err;
    CKPT__CHECK_ARG(out);
    memset(out, 0, sizeof(*out));
    CKPT__CHECK_ARG(o);
    err = ckpt__options_check_version(
        o->version, CKPT_LOGGING_TENSOR_HOOK_OPTIONS_VERSION,
        "LoggingTensorHook options", "CKPT_LOGGING_TENSOR_HOOK_OPTIONS_INIT");
    if (err == 0)
        err = ckpt__clock_check(o->clock, "LoggingTensorHook options");
    if (err < 0)
        return err;
    names = o->names;
    num_names = o->num_names;
    every_n_iter = o->every_n_iter;
    every_n_secs = o->every_n_secs;
    at_end = o->at_end;
    err = check_logging_args(names, num_names, every_n_iter, every_n_secs,
                             at_end);
    if (err < 0)
        return err;
    lt = ckpt__calloc(1, sizeof(*lt));
    if (!lt)
        return ckpt__error_oom();
    if (every_n_iter == 0 && every_n_secs == 0)
        ckpt_timer_init_never(&lt->timer); /* only at end */
    else
        err = ckpt__timer_init_named(&lt->timer, every_n_secs, every_n_iter,
                                     o->clock, "LoggingTensorHook",
                                     "every_n_secs", "every_n_iter");
    if (err < 0) {
        ckpt__free(lt);
        return err;
    }
    lt->names = ckpt__calloc(num_names, sizeof(*lt->names));
    err = lt->names ? 0 : ckpt__error_oom();
    for (size_t i = 0; i < num_names && err == 0; i++) {
        lt->names[i] = ckpt__strdup(names[i]);
        if (!lt->names[i])
            err = ckpt__error_oom();
        lt->num_names = i + 1;
    }
    if (err < 0) {
        logging_destroy(lt);
        return err;
    }
    lt->at_end = at_end ? 1 : 0;
    lt->log = log_from_options(o->log, o->log_payload, o->log_level);
    *out = make_hook("LoggingTensorHook", CKPT_HOOK_KIND_LOGGING_TENSOR, lt);
    out->destroy = logging_destroy;
    out->begin = logging_begin;
    out->before_run = logging_before;
    out->after_run = logging_after;
    out->end = logging_end;
    return ckpt__hook_complete(out);
}

/* ---- NanTensorHook --------------------------------------------------------
 */

typedef struct nan_tensor {
    const char *fetch[1]; /* points at name */
    int fail_on_nan;
    hook_log log;
    char name[];
} nan_tensor;

static int nan_before(ckpt_run_context *ctx, ckpt_run_args *args, void *payload)
{
    nan_tensor *nt = payload;
    (void)ctx;
    args->fetches = nt->fetch;
    args->num_fetches = 1;
    return 0;
}

static int nan_after(ckpt_run_context *ctx, const ckpt_run_values *v,
                     void *payload)
{
    nan_tensor *nt = payload;
    int has_nan;
    if (v->num_results != 1)
        return ckpt__error(CKPT_ESTATE, "NanTensorHook: '%s' was not fetched",
                           nt->name);
    has_nan = ckpt__value_has_nan(&v->results[0]);
    if (has_nan < 0)
        return ckpt__error(CKPT_EINVAL,
                           "NanTensorHook: '%s' is %s, not a floating-point "
                           "tensor",
                           nt->name,
                           ckpt_dtype_name(v->results[0].dtype)
                               ? ckpt_dtype_name(v->results[0].dtype)
                               : "an unknown dtype");
    if (!has_nan)
        return 0;
    if (nt->fail_on_nan)
        return ckpt__error(CKPT_EUSER,
                           "NaN loss during training: '%s' at global step "
                           "%lld",
                           nt->name, (long long)v->step_after);
    hook_logf(&nt->log, CKPT_LOG_WARN,
              "NaN loss during training: '%s' at global step %lld; "
              "stopping",
              nt->name, (long long)v->step_after);
    ckpt_run_context_request_stop(ctx);
    return 0;
}

static int nan_begin(ckpt_graph *g, void *payload)
{
    nan_tensor *nt = payload;
    log_adopt_session(&nt->log, g);
    return 0;
}

int ckpt_nan_tensor_hook_new(ckpt_hook *out,
                             const ckpt_nan_tensor_hook_options *opts)
{
    static const ckpt_nan_tensor_hook_options defaults =
        CKPT_NAN_TENSOR_HOOK_OPTIONS_INIT;
    const ckpt_nan_tensor_hook_options *o = opts ? opts : &defaults;
    const char *loss_name;
    nan_tensor *nt;
    size_t len;
    int err;
    CKPT__CHECK_ARG(out);
    memset(out, 0, sizeof(*out));
    err = ckpt__options_check_version(
        o->version, CKPT_NAN_TENSOR_HOOK_OPTIONS_VERSION,
        "NanTensorHook options", "CKPT_NAN_TENSOR_HOOK_OPTIONS_INIT");
    if (err < 0)
        return err;
    loss_name = o->loss_name ? o->loss_name : "loss";
    if (!loss_name[0])
        return ckpt__error(CKPT_EINVAL, "NanTensorHook: loss_name is empty");
    len = strlen(loss_name);
    nt = ckpt__calloc(1, sizeof(*nt) + len + 1);
    if (!nt)
        return ckpt__error_oom();
    memcpy(nt->name, loss_name, len + 1);
    nt->fetch[0] = nt->name;
    nt->fail_on_nan = o->fail_on_nan ? 1 : 0;
    nt->log = log_from_options(o->log, o->log_payload, o->log_level);
    *out = make_hook("NanTensorHook", CKPT_HOOK_KIND_NAN_TENSOR, nt);
    out->begin = nan_begin;
    out->before_run = nan_before;
    out->after_run = nan_after;
    return ckpt__hook_complete(out);
}
