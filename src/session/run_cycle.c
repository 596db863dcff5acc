/* session/run_cycle.c - one step through the hooks (TF's hooked session run,
 * B16-B25): every before_run in order (feeds merged, conflicts rejected,
 * options merged), the step, the fetches resolved, every after_run in order,
 * then the stop flag. Both ways to drive a step share it: a step callback
 * (ckpt_monitored_session_run) and a bracket around an inline step
 * (ckpt_monitored_session_before_run / _after_run). Also should_stop, and
 * holding the session through each (released by a thread cancelled inside
 * a hook or the step function too). */
#include "session_internal.h"

#include <pthread.h>
#include <string.h>

static const char *hook_name(const ckpt_hook *h)
{
    return h->name ? h->name : "unnamed";
}

static int check_can_run(const ckpt_monitored_session *ms)
{
    if (ms->closed)
        return ckpt__error(CKPT_ESTATE, "monitored session: run after close");
    if (ms->in_step)
        return ckpt__error(CKPT_ESTATE,
                           "monitored session: a step is in progress "
                           "(before_run without after_run)");
    if (ms->stop)
        return ckpt__error(CKPT_ESTATE,
                           "monitored session: run attempted after a stop "
                           "request");
    return 0;
}

static int check_args(const ckpt_run_args *a, const char *who)
{
    if ((a->num_fetches > 0 && !a->fetches) || (a->num_feeds > 0 && !a->feeds))
        return ckpt__error(CKPT_EINVAL, "%s: run args: counts without arrays",
                           who);
    for (size_t i = 0; i < a->num_fetches; i++)
        if (!a->fetches[i])
            return ckpt__error(CKPT_EINVAL, "%s: fetch %zu has no name", who,
                               i);
    for (size_t i = 0; i < a->num_feeds; i++)
        if (!a->feeds[i].name)
            return ckpt__error(CKPT_EINVAL, "%s: feed %zu has no name", who, i);
    return 0;
}

/* B19: each field takes the maximum. */
static void merge_options(ckpt_run_options *into, const ckpt_run_options *o)
{
    if (o->trace_level > into->trace_level)
        into->trace_level = o->trace_level;
    if (o->timeout_ms > into->timeout_ms)
        into->timeout_ms = o->timeout_ms;
}

/* Index of the hook before `upto` that feeds `name`, or upto. */
static size_t feeding_hook(const ckpt_monitored_session *ms, size_t upto,
                           const char *name)
{
    for (size_t i = 0; i < upto; i++)
        for (size_t j = 0; j < ms->hook_args[i].num_feeds; j++)
            if (strcmp(ms->hook_args[i].feeds[j].name, name) == 0)
                return i;
    return upto;
}

/* Add hook i's feeds; the same input fed twice by hooks is rejected as soon
 * as the second hook returns (B18). */
static int add_hook_feeds(ckpt_monitored_session *ms, size_t i)
{
    const ckpt_run_args *a = &ms->hook_args[i];
    for (size_t j = 0; j < a->num_feeds; j++) {
        const ckpt_feed *f = &a->feeds[j];
        int err;
        if (ckpt__step_context_find_feed(&ms->sc, f->name))
            return ckpt__error(
                CKPT_EINVAL, "feed '%s' is fed by hooks '%s' and '%s'", f->name,
                hook_name(&ms->hooks[feeding_hook(ms, i + 1, f->name)]),
                hook_name(&ms->hooks[i]));
        err = ckpt__step_context_add_feed(&ms->sc, f);
        if (err < 0)
            return err;
    }
    return 0;
}

/* After every before_run: the caller's feeds must not collide (B18). */
static int add_caller_feeds(ckpt_monitored_session *ms)
{
    const ckpt_run_args *a = &ms->caller_args;
    for (size_t j = 0; j < a->num_feeds; j++) {
        const ckpt_feed *f = &a->feeds[j];
        size_t h = feeding_hook(ms, ms->num_hooks, f->name);
        int err;
        if (h < ms->num_hooks)
            return ckpt__error(CKPT_EINVAL,
                               "feed '%s' is fed by the caller and by hook "
                               "'%s'",
                               f->name, hook_name(&ms->hooks[h]));
        if (ckpt__step_context_find_feed(&ms->sc, f->name))
            return ckpt__error(CKPT_EINVAL,
                               "feed '%s' is fed twice by the caller", f->name);
        err = ckpt__step_context_add_feed(&ms->sc, f);
        if (err < 0)
            return err;
    }
    return 0;
}

static int call_before_runs(ckpt_monitored_session *ms)
{
    for (size_t i = 0; i < ms->num_hooks; i++) {
        const ckpt_hook *h = &ms->hooks[i];
        int err;
        if (!h->before_run)
            continue;
        ckpt_error_clear();
        err = h->before_run(&ms->ctx, &ms->hook_args[i], h->payload);
        if (err != 0)
            return ckpt__error_prefix(err < 0 ? err : CKPT_EUSER,
                                      "hook '%s' before_run", hook_name(h));
        err = check_args(&ms->hook_args[i], hook_name(h));
        if (err == 0)
            err = add_hook_feeds(ms, i);
        if (err < 0)
            return err;
        merge_options(&ms->sc.options, &ms->hook_args[i].options);
    }
    return 0;
}

/* Everything before the step; on success the step is in progress. */
static int begin_step(ckpt_monitored_session *ms, const ckpt_run_args *args)
{
    int err = check_can_run(ms);
    if (err < 0)
        return err;
    if (!ms->live) {
        err = ckpt__ms_create_session(ms);
        if (err < 0)
            return err;
    }
    err = ckpt_coordinator_recorded_error(ms->sess.coord);
    if (err < 0)
        return err; /* B35: a background error, message already set */
    memset(&ms->caller_args, 0, sizeof(ms->caller_args));
    if (args) {
        err = check_args(args, "run");
        if (err < 0)
            return err;
        ms->caller_args = *args;
    }
    ckpt__step_context_reset(&ms->sc);
    ms->ctx.session = &ms->sess;
    ms->ctx.original = &ms->caller_args;
    ms->ctx.stop_requested = 0;
    ms->sc.options = ms->caller_args.options;
    if (ms->num_hooks)
        memset(ms->hook_args, 0, ms->num_hooks * sizeof(*ms->hook_args));
    err = call_before_runs(ms);
    if (err == 0)
        err = add_caller_feeds(ms);
    if (err < 0)
        return err;
    ms->step_before = ckpt__ms_global_step(ms);
    ms->in_step = 1;
    return 0;
}

static int resolve_fetches(ckpt_monitored_session *ms, const ckpt_run_args *a,
                           ckpt_value *out, const char *who)
{
    for (size_t i = 0; i < a->num_fetches; i++) {
        int err = ckpt__step_context_resolve(&ms->sc, ms->graph, a->fetches[i],
                                             &out[i]);
        if (err < 0)
            return ckpt__error_prefix(err, "%s", who);
    }
    return 0;
}

/* Resolve the caller's fetches, then each hook's, into ms->values. */
static int resolve_all(ckpt_monitored_session *ms)
{
    size_t total = ms->caller_args.num_fetches;
    size_t at;
    int err;
    for (size_t i = 0; i < ms->num_hooks; i++)
        total += ms->hook_args[i].num_fetches;
    if (total > ms->cap_values) {
        ckpt_value *v = ckpt__realloc(ms->values, total * sizeof(*v));
        if (!v)
            return ckpt__error_oom();
        ms->values = v;
        ms->cap_values = total;
    }
    err = resolve_fetches(ms, &ms->caller_args, ms->values, "run");
    at = ms->caller_args.num_fetches;
    for (size_t i = 0; i < ms->num_hooks && err == 0; i++) {
        err = resolve_fetches(ms, &ms->hook_args[i], ms->values + at,
                              hook_name(&ms->hooks[i]));
        at += ms->hook_args[i].num_fetches;
    }
    return err;
}

static void fill_values(const ckpt_monitored_session *ms, ckpt_run_values *v,
                        const ckpt_value *results, size_t n)
{
    v->results = n ? results : NULL;
    v->num_results = n;
    v->options = ms->sc.options;
    v->step_before = ms->step_before;
    v->step_after = ms->step_after;
}

static int call_after_runs(ckpt_monitored_session *ms)
{
    size_t at = ms->caller_args.num_fetches;
    for (size_t i = 0; i < ms->num_hooks; i++) {
        const ckpt_hook *h = &ms->hooks[i];
        size_t n = ms->hook_args[i].num_fetches;
        ckpt_run_values v;
        int err;
        fill_values(ms, &v, ms->values + at, n);
        at += n;
        if (!h->after_run)
            continue;
        ckpt_error_clear();
        err = h->after_run(&ms->ctx, &v, h->payload);
        if (err != 0)
            return ckpt__error_prefix(err < 0 ? err : CKPT_EUSER,
                                      "hook '%s' after_run", hook_name(h));
    }
    return 0;
}

/* A step (or the status given to after_run) that is positive is not a
 * ckpt_error_code: it becomes CKPT_EUSER, saying so, and keeps a message
 * the step recorded before it returned. */
#define POSITIVE_STATUS                                                        \
    "%s returned %d, which is not 0 or a negative ckpt_error_code (a "         \
    "failure returns a negative code; recorded as CKPT_EUSER)"
static int positive_status(const char *who, int rc)
{
    if (ckpt_error_last()->code != 0)
        return ckpt__error_prefix(CKPT_EUSER, POSITIVE_STATUS, who, rc);
    return ckpt__error(CKPT_EUSER, POSITIVE_STATUS, who, rc);
}

/* Everything after the step, which returned `status`. */
static int end_step(ckpt_monitored_session *ms, int status,
                    ckpt_run_values *values_out)
{
    int err;
    ms->in_step = 0;
    /* A step that failed without saying why (no ckpt_error_set, no failing
     * library call) would leave "no error" as the message of its code. */
    if (status < 0 && ckpt_error_last()->code == 0)
        ckpt__error(status,
                    "the step failed with %s (%s) and recorded no message "
                    "(ckpt_error_set records what failed)",
                    ckpt_error_name(status), ckpt_strerror(status));
    /* Whether or not the step called the fence, it is over: an overlapped
     * snapshot is complete before anything else may write the variables. */
    ckpt__ms_complete_snapshots(ms);
    if (status != 0) {
        /* B23: no after_run. A background recoverable error recorded in
         * the coordinator is the root cause of a non-recoverable failure. */
        int rec = ckpt_is_recoverable(status)
                      ? 0
                      : ckpt_coordinator_recorded_error(ms->sess.coord);
        return ckpt_is_recoverable(rec) ? rec : status;
    }
    ms->step_after = ckpt__ms_global_step(ms);
    err = resolve_all(ms);
    if (err == 0)
        err = call_after_runs(ms);
    if (err < 0)
        return err; /* B25: the stop flag is not updated */
    if (ms->ctx.stop_requested || ms->sc.stop_requested)
        ms->stop = 1;
    ckpt__ms_poll_stop_source(ms);
    if (values_out)
        fill_values(ms, values_out, ms->values, ms->caller_args.num_fetches);
    if (ms->sc.stop_requested)
        return ckpt__error(CKPT_ESTOPITER,
                           "the step requested a stop at global step %lld",
                           (long long)ms->step_after);
    return 0;
}

static int run_cycle(ckpt_monitored_session *ms, const ckpt_run_args *args,
                     ckpt_step_fn step, void *payload,
                     ckpt_run_values *values_out)
{
    int attempts = 0;
    for (;;) {
        int err = begin_step(ms, args);
        if (err == 0) {
            ckpt_error_clear();
            err = step(&ms->sc, payload);
            if (err > 0)
                err = positive_status("the step function", err);
            err = end_step(ms, err, values_out);
        }
        if (!ckpt__ms_should_recover(ms, err))
            return err;
        /* B31: re-create from the latest checkpoint and run the step
         * again, with every hook's before_run. */
        err = ckpt__ms_recover(ms, err, &attempts);
        if (err < 0)
            return err;
    }
}

static int before_run(ckpt_monitored_session *ms, const ckpt_run_args *args,
                      ckpt_step_context **sc_out)
{
    int attempts = 0;
    for (;;) {
        int err = begin_step(ms, args);
        if (err == 0) {
            *sc_out = &ms->sc;
            ckpt_error_clear(); /* as run does before the step: what the
                                   inline step records is its own */
            return 0;
        }
        if (!ckpt__ms_should_recover(ms, err))
            return err;
        err = ckpt__ms_recover(ms, err, &attempts);
        if (err < 0)
            return err;
    }
}

static int after_run(ckpt_monitored_session *ms, int step_status,
                     ckpt_run_values *values_out)
{
    int attempts = 0;
    int err;
    if (!ms->in_step)
        return ckpt__error(CKPT_ESTATE,
                           "monitored session: after_run without before_run");
    if (step_status > 0)
        step_status = positive_status(
            "ckpt_monitored_session_after_run: step_status (the step)",
            step_status);
    err = end_step(ms, step_status, values_out);
    if (!ckpt__ms_should_recover(ms, err))
        return err;
    /* The inline step cannot be re-run from here: the session is restored
     * and the caller's next iteration repeats the step. */
    err = ckpt__ms_recover(ms, err, &attempts);
    if (err == 0 && values_out) {
        memset(values_out, 0, sizeof(*values_out));
        values_out->step_before = ckpt__ms_global_step(ms);
        values_out->step_after = values_out->step_before;
    }
    return err;
}

/* ---- the entry points: a run's hooks and step function may not re-enter
 * them (nor close): each would run a cycle inside the cycle in progress. */

static int another_thread(const char *what)
{
    return ckpt__error(CKPT_ESTATE,
                       "monitored session: %s called while another thread "
                       "runs a step on it or closes it: a monitored session "
                       "is used from one thread (the training loop)",
                       what);
}

int ckpt__ms_refuse_in_run(const ckpt_monitored_session *ms, const char *what)
{
    /* Another thread's call first: `closing` is this session's owner's
     * to read, and a close on another thread is not this thread's hook. */
    uintptr_t runner = atomic_load(&ms->in_run);
    if (runner != 0 && runner != ckpt__thread_token())
        return another_thread(what);
    /* B30; "already closed" said nothing of the caller. Closed and held:
     * this thread's close is past its hooks, still closing. */
    if (ms->closing || (runner != 0 && ms->closed))
        return ckpt__error(CKPT_ESTATE,
                           "monitored session: %s called from a hook or "
                           "listener while the session closes (its hooks' "
                           "end or on_abort are running)",
                           what);
    if (runner == 0)
        return 0;
    return ckpt__error(CKPT_ESTATE,
                       "monitored session: %s called from a hook or the "
                       "step function while the session runs a step; call "
                       "it after the step returns",
                       what);
}

int ckpt__ms_enter(ckpt_monitored_session *ms, const char *what)
{
    uintptr_t none = 0;
    int err = ckpt__ms_refuse_in_run(ms, what);
    if (err < 0)
        return err;
    if (!atomic_compare_exchange_strong(&ms->in_run, &none,
                                        ckpt__thread_token()))
        return another_thread(what);
    return 0;
}

void ckpt__ms_leave(ckpt_monitored_session *ms)
{
    atomic_store(&ms->in_run, (uintptr_t)0);
}

/* pthread_cleanup_push handler around the hooks and the step function: a
 * thread cancelled (or calling pthread_exit) inside one left the session
 * held, and every later call was refused for ever. The step it was in is
 * over, as a failed one: its overlapped snapshots are completed before
 * anything may write the variables again. */
static void leave_on_cancel(void *arg)
{
    ckpt_monitored_session *ms = arg;
    if (ms->in_step) {
        ms->in_step = 0;
        ckpt__ms_complete_snapshots(ms);
    }
    ckpt__ms_leave(ms);
}

int ckpt_monitored_session_run(ckpt_monitored_session *ms,
                               const ckpt_run_args *args, ckpt_step_fn step,
                               void *payload, ckpt_run_values *values_out)
{
    int err;
    CKPT__CHECK_ARG(ms);
    CKPT__CHECK_ARG(step);
    err = ckpt__ms_enter(ms, "run");
    if (err < 0)
        return err;
    pthread_cleanup_push(leave_on_cancel, ms);
    err = run_cycle(ms, args, step, payload, values_out);
    pthread_cleanup_pop(0);
    ckpt__ms_leave(ms);
    return err;
}

int ckpt_monitored_session_before_run(ckpt_monitored_session *ms,
                                      const ckpt_run_args *args,
                                      ckpt_step_context **sc_out)
{
    int err;
    CKPT__CHECK_ARG(sc_out);
    *sc_out = NULL;
    CKPT__CHECK_ARG(ms);
    err = ckpt__ms_enter(ms, "before_run");
    if (err < 0)
        return err;
    pthread_cleanup_push(leave_on_cancel, ms);
    err = before_run(ms, args, sc_out);
    pthread_cleanup_pop(0);
    ckpt__ms_leave(ms);
    return err;
}

int ckpt_monitored_session_after_run(ckpt_monitored_session *ms,
                                     int step_status,
                                     ckpt_run_values *values_out)
{
    int err;
    CKPT__CHECK_ARG(ms);
    err = ckpt__ms_enter(ms, "after_run");
    if (err < 0)
        return err;
    pthread_cleanup_push(leave_on_cancel, ms);
    err = after_run(ms, step_status, values_out);
    pthread_cleanup_pop(0);
    ckpt__ms_leave(ms);
    return err;
}

/* should_stop itself, the session held: it may recover, which re-creates
 * the session under a step or close in progress unless it is held. */
static int should_stop(ckpt_monitored_session *ms, int *status_out)
{
    int err;
    if (ms->closed)
        return 1;
    ckpt__ms_poll_stop_source(ms);
    if (!ms->live)
        return 1;
    err = ckpt_coordinator_recorded_error(ms->sess.coord);
    if (err < 0 && ckpt__ms_should_recover(ms, err)) {
        int attempts = 0;
        err = ckpt__ms_recover(ms, err, &attempts);
    }
    if (err < 0) {
        /* F14: the error is reported, not swallowed into "stop". */
        if (status_out)
            *status_out = err;
        return 1;
    }
    return ms->stop || ckpt_coordinator_should_stop(ms->sess.coord);
}

int ckpt_monitored_session_should_stop(ckpt_monitored_session *ms,
                                       int *status_out)
{
    int err;
    int stop;
    if (status_out)
        *status_out = 0;
    if (!ms)
        return 1;
    /* Refused like run: answered "stop" with the refusal as the status. */
    err = ckpt__ms_enter(ms, "should_stop");
    if (err < 0) {
        if (status_out)
            *status_out = err;
        return 1;
    }
    pthread_cleanup_push(leave_on_cancel, ms);
    stop = should_stop(ms, status_out);
    pthread_cleanup_pop(0);
    ckpt__ms_leave(ms);
    return stop;
}
