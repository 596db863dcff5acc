/* session/session_close.c - closing a monitored session with the loop's
 * terminating status (B26-B30, F5): OK or a clean end runs every hook's
 * end in order while the session is still usable; any other status runs
 * on_abort instead; then the coordinator is stopped and joined within the
 * grace period, the writes in flight of checkpoint hooks whose end did not
 * run are waited for (each within the grace period), the scaffold saver is
 * closed and the graph unfrozen; also when the thread is cancelled inside
 * a hook's end or on_abort. */
#include "session_internal.h"

#include <pthread.h>
#include <stdio.h>

static const char *hook_name(const ckpt_hook *h)
{
    return h->name ? h->name : "unnamed";
}

/* B29 skips the end of every hook after the one whose end failed: a
 * checkpoint hook among them saves no final checkpoint, which the error
 * returned (the failing hook's) does not tell. */
static void warn_final_saves_skipped(const ckpt_monitored_session *ms,
                                     size_t failed)
{
    ckpt__saved_error saved; /* the failing end's, which close returns */
    ckpt__error_save(&saved);
    for (size_t j = failed + 1; j < ms->num_hooks; j++)
        if (ms->hooks[j].kind == CKPT_HOOK_KIND_CHECKPOINT && ms->hooks[j].end)
            ckpt__ms_log(ms, CKPT_LOG_WARN,
                         "hook '%s' end failed, so the end of the hooks "
                         "after it did not run: '%s' saved no final "
                         "checkpoint (global step %lld); give the session "
                         "a hook whose end may fail after the checkpoint "
                         "hook",
                         hook_name(&ms->hooks[failed]),
                         hook_name(&ms->hooks[j]),
                         (long long)ckpt__ms_global_step(ms));
    ckpt__error_restore(&saved);
}

static int call_ends(ckpt_monitored_session *ms)
{
    for (size_t i = 0; i < ms->num_hooks; i++) {
        const ckpt_hook *h = &ms->hooks[i];
        int err;
        if (!h->end)
            continue;
        ckpt_error_clear();
        err = h->end(&ms->sess, h->payload);
        if (err != 0) { /* B29: later hooks' end are skipped */
            err = ckpt__error_prefix(err < 0 ? err : CKPT_EUSER,
                                     "hook '%s' end", hook_name(h));
            warn_final_saves_skipped(ms, i);
            return err;
        }
    }
    return 0;
}

static void call_on_aborts(ckpt_monitored_session *ms, int status)
{
    for (size_t i = 0; i < ms->num_hooks; i++)
        if (ms->hooks[i].on_abort)
            ms->hooks[i].on_abort(status, ms->hooks[i].payload);
}

/* Stop and join the coordinator, close the scaffold saver. @return the
 * coordinator's recorded error, else the saver's, else 0 */
static int close_session(ckpt_monitored_session *ms)
{
    int err;
    int saver_err = 0;
    ms->live = 0;
    ckpt_coordinator_request_stop(ms->sess.coord, 0, NULL);
    err = ckpt_coordinator_join(ms->sess.coord, ms->stop_grace_period_s, 1);
    /* Hooks whose end did not run (B29: an earlier one failed) still hold
     * their savers: their writes in flight land before close returns. */
    ckpt__ms_wait_hook_savers(ms, "closing the session");
    if (err < 0)
        return err;
    if (ms->owned_saver)
        saver_err = ckpt_saver_close(ms->owned_saver, ms->stop_grace_period_s);
    return saver_err;
}

/* The hooks' end for OK or a clean end, else their on_abort. @return the
 * close's result so far */
static int call_hooks(ckpt_monitored_session *ms, int status)
{
    ckpt__saved_error saved;
    if (status == 0 || ckpt_is_clean_end(status))
        return call_ends(ms); /* B26, B27 */
    ckpt__error_save(&saved);
    call_on_aborts(ms, status); /* B28 */
    if (saved.code == status)
        ckpt__error_restore(&saved);
    else
        ckpt__error(status, "monitored session closed with %s",
                    ckpt_error_name(status));
    return status;
}

/* Everything after the hooks' end or on_abort, which gave `result`: the
 * session is no longer live, the graph unfrozen. */
static int finish_close(ckpt_monitored_session *ms, int result)
{
    ckpt__saved_error saved;
    ms->closing = 0;
    if (result < 0) {
        ckpt__error_save(&saved);
        close_session(ms);
        ckpt__error(result, "%s", saved.message);
    } else {
        result = close_session(ms);
    }
    if (ms->holds_freeze)
        ckpt__graph_set_frozen(ms->graph, 0);
    ms->holds_freeze = 0;
    ckpt__ms_log(ms, result < 0 ? CKPT_LOG_WARN : CKPT_LOG_INFO,
                 "monitored session closed at global step %lld (%s)",
                 (long long)ckpt__ms_global_step(ms),
                 result < 0 ? ckpt_error_last()->message : "ok");
    return result;
}

/* pthread_cleanup_push handler around the hooks' end and on_abort: a
 * thread cancelled (or calling pthread_exit) inside one left the session
 * held and half closed (its coordinator's threads and the scaffold saver
 * running), and every later call, free's close included, was refused.
 * The close is finished on the way out instead. */
static void finish_on_cancel(void *arg)
{
    ckpt_monitored_session *ms = arg;
    ckpt__error(CKPT_ECANCELED,
                "monitored session: close cancelled in a hook's end or "
                "on_abort (the later hooks' did not run)");
    finish_close(ms, CKPT_ECANCELED);
    ckpt__ms_leave(ms);
}

/* call_hooks, the close finished by finish_on_cancel should the thread be
 * cancelled inside it. */
static int call_hooks_or_finish(ckpt_monitored_session *ms, int status)
{
    int result;
    pthread_cleanup_push(finish_on_cancel, ms);
    result = call_hooks(ms, status);
    pthread_cleanup_pop(0);
    return result;
}

int ckpt_monitored_session_close(ckpt_monitored_session *ms, int status)
{
    int result;
    CKPT__CHECK_ARG(ms);
    /* held to the end: a run or close from another thread meanwhile is
     * refused, not run against a session being closed */
    if (ckpt__ms_enter(ms, "close") < 0)
        return CKPT_ESTATE;
    if (ms->closed) { /* B30 */
        ckpt__ms_leave(ms);
        return ckpt__error(CKPT_ESTATE, "monitored session: already closed");
    }
    ms->closed = 1;
    ms->in_step = 0;
    if (status > 0)
        status = CKPT_ERROR;
    ms->closing = 1;
    result = finish_close(ms, call_hooks_or_finish(ms, status));
    ckpt__ms_leave(ms);
    return result;
}
