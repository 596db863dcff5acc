/* hooks/checkpoint_listeners.c - the checkpoint hook's side of the
 * listener contract (TF's CheckpointSaverListener, same in both modes):
 * calling begin/before_save/after_save/end in list order, receiving the
 * saver's outcomes (after_save runs only once a checkpoint is durable, on
 * the training thread, with the snapshot's step and prefix), stop requests
 * and errors kept until the next hook callback can return them, and the
 * hook's log lines. */
#include "checkpoint_hook_internal.h"
#include "session/session_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- errors and logging -------------------------------------------------- */

void ckpt__ckhook_keep_error(ckpt__ckhook *h, int err)
{
    if (err == 0 || h->kept_err != 0)
        return;
    h->kept_err = err;
    snprintf(h->kept_msg, sizeof(h->kept_msg), "%s",
             ckpt_error_last()->code == err ? ckpt_error_last()->message
                                            : ckpt_strerror(err));
}

int ckpt__ckhook_take_error(ckpt__ckhook *h, int err)
{
    if (err != 0 || h->kept_err == 0)
        return err;
    err = ckpt__error(h->kept_err, "%s", h->kept_msg);
    h->kept_err = 0;
    h->kept_msg[0] = '\0';
    return err;
}

void ckpt__ckhook_log(const ckpt__ckhook *h, int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ckpt__logv(h->log, h->log_payload, h->log_level, level, fmt, ap);
    va_end(ap);
}

ckpt__ckhook *ckpt__ckhook_of(const ckpt_hook *hook)
{
    ckpt__ckhook *h;
    if (!hook || hook->kind != CKPT_HOOK_KIND_CHECKPOINT || !hook->payload ||
        !ckpt__hook_is_live(hook))
        return NULL;
    h = hook->payload;
    return h->magic == CKPT__CKHOOK_MAGIC ? h : NULL;
}

void ckpt__ckhook_note_skip(ckpt__ckhook *h, int64_t step)
{
    /* Where the policy is set: the saver the hook writes through. */
    const char *where = h->collective       ? "the distributed saver's "
                                              "options (base.busy_policy)"
                        : h->explicit_saver ? "the hook's saver's options"
                        : h->use_scaffold   ? "the session's saver_options"
                                            : "saver_options";
    h->skipped++;
    if (h->skipped < h->next_skip_report)
        return;
    h->next_skip_report = h->next_skip_report ? h->next_skip_report * 10 : 10;
    ckpt__ckhook_log(h, CKPT_LOG_WARN,
                     "%s: checkpoint trigger at step %" PRId64
                     " skipped: the previous write is still running (%" PRIu64
                     " trigger(s) skipped so far; reported at the 1st, 10th, "
                     "100th, ... skip). To write every trigger set "
                     "busy_policy in %s to CKPT_BUSY_COALESCE (one more "
                     "snapshot buffer) or CKPT_BUSY_WAIT (blocks the loop), "
                     "or save less often",
                     h->name, step, h->skipped, where);
}

void ckpt__ckhook_log_totals(ckpt__ckhook *h, const char *when)
{
    ckpt_saver_metrics m;
    char latest[32] = "none";
    memset(&m, 0, sizeof(m));
    if (h->saver)
        ckpt_saver_get_metrics(h->saver, &m);
    if (h->last_durable != CKPT_NO_STEP)
        snprintf(latest, sizeof(latest), "%" PRId64, h->last_durable);
    ckpt__ckhook_log(h, CKPT_LOG_INFO,
                     "%s: %s: %" PRIu64 " checkpoint(s) written, %" PRIu64
                     " trigger(s) skipped, %" PRIu64 " coalesced, %" PRIu64
                     " failed; longest stall %.6f s; latest step %s",
                     h->name, when, m.saves_completed, h->skipped,
                     m.saves_coalesced, m.saves_failed, m.blocking_s_max,
                     latest);
}

int ckpt__ckhook_busy_policy(const ckpt__ckhook *h)
{
    return h->saver ? ckpt_saver_get_options(h->saver)->busy_policy
                    : h->saver_opts.busy_policy;
}

/* ---- listeners ----------------------------------------------------------- */

/* Give a listener's failure a message naming it; a positive return is a
 * failure too (CKPT_EUSER), saying that only after_save stops. */
static int listener_error(const ckpt__ckhook *h, int rc, size_t i,
                          const char *what, int64_t step)
{
    int code = rc < 0 ? rc : CKPT_EUSER;
    if (rc > 0)
        return ckpt__error(code,
                           "%s: checkpoint listener %zu: %s returned %d at "
                           "step %" PRId64 ": return 0 or a negative error "
                           "(only after_save stops training by returning "
                           "CKPT_LISTENER_STOP)",
                           h->name, i, what, rc, step);
    if (ckpt_error_last()->code != code)
        return ckpt__error(code,
                           "%s: checkpoint listener %zu: %s failed at step "
                           "%" PRId64 " (%s)",
                           h->name, i, what, step, ckpt_strerror(code));
    return ckpt__error_prefix(code,
                              "%s: checkpoint listener %zu: %s at step "
                              "%" PRId64,
                              h->name, i, what, step);
}

int ckpt__ckhook_listeners_begin(ckpt__ckhook *h)
{
    for (size_t i = 0; i < h->nlisteners; i++) {
        const ckpt_saver_listener *l = &h->listeners[i];
        int rc = l->begin ? l->begin(l->payload) : 0;
        if (rc > 0)
            return listener_error(h, rc, i, "begin", 0);
        if (rc != 0) {
            int code = rc;
            if (ckpt_error_last()->code != code)
                return ckpt__error(code,
                                   "%s: checkpoint listener %zu: begin "
                                   "failed (%s)",
                                   h->name, i, ckpt_strerror(code));
            return ckpt__error_prefix(
                code, "%s: checkpoint listener %zu: begin", h->name, i);
        }
    }
    return 0;
}

int ckpt__ckhook_listeners_before_save(ckpt__ckhook *h, int64_t step)
{
    if (h->nlisteners > 0)
        ckpt__ckhook_log(h, CKPT_LOG_DEBUG,
                         "%s: calling %zu checkpoint listener(s) before the "
                         "save of step %" PRId64,
                         h->name, h->nlisteners, step);
    for (size_t i = 0; i < h->nlisteners; i++) {
        const ckpt_saver_listener *l = &h->listeners[i];
        int rc =
            l->before_save ? l->before_save(h->session, step, l->payload) : 0;
        if (rc != 0)
            return listener_error(h, rc, i, "before_save", step);
    }
    return 0;
}

/* Every listener is called even after one asked to stop (B53); the first
 * error ends the calls. */
static int listeners_after_save(ckpt__ckhook *h, int64_t step,
                                const char *prefix, int *stop)
{
    for (size_t i = 0; i < h->nlisteners; i++) {
        const ckpt_saver_listener *l = &h->listeners[i];
        int want_stop = 0;
        int rc = l->after_save ? l->after_save(h->session, step, prefix,
                                               &want_stop, l->payload)
                               : 0;
        /* TensorFlow's listeners return True to stop. */
        if (rc > 0) {
            want_stop = 1;
            rc = 0;
        }
        if (want_stop) {
            ckpt__ckhook_log(h, CKPT_LOG_INFO,
                             "%s: checkpoint listener %zu asked to stop "
                             "after the save of step %" PRId64,
                             h->name, i, step);
            *stop = 1;
        }
        if (rc != 0)
            return listener_error(h, rc, i, "after_save", step);
    }
    return 0;
}

int ckpt__ckhook_listeners_end(ckpt__ckhook *h, int64_t step)
{
    for (size_t i = 0; i < h->nlisteners; i++) {
        const ckpt_saver_listener *l = &h->listeners[i];
        int rc = l->end ? l->end(h->session, step, l->payload) : 0;
        if (rc != 0)
            return listener_error(h, rc, i, "end", step);
    }
    return 0;
}

/* ---- save outcomes ------------------------------------------------------- */

int ckpt__ckhook_reserve_ticket(ckpt__ckhook *h)
{
    size_t cap;
    uint64_t *p;
    if (h->ntickets < h->cap_tickets)
        return 0;
    cap = h->cap_tickets ? h->cap_tickets * 2 : 4;
    p = ckpt__realloc(h->tickets, cap * sizeof(*p));
    if (!p)
        return ckpt__error_oom();
    h->tickets = p;
    h->cap_tickets = cap;
    return 0;
}

void ckpt__ckhook_add_ticket(ckpt__ckhook *h, uint64_t ticket)
{
    if (h->ntickets < h->cap_tickets)
        h->tickets[h->ntickets++] = ticket;
}

/* Whether the outcome is of a save this hook made (a borrowed saver may
 * also be used by others); forgets the ticket. A synchronous save a
 * listener's after_save makes through the session's saver, during the
 * hook's own synchronous save, is the listener's: claimed, it called the
 * listeners again, which saved again, without end (a stack overflow). */
static int claim(ckpt__ckhook *h, const ckpt_save_result *r)
{
    if (r->ticket == 0)
        return h->in_sync_save && !h->in_after_save;
    for (size_t i = 0; i < h->ntickets; i++) {
        if (h->tickets[i] == r->ticket) {
            h->tickets[i] = h->tickets[--h->ntickets];
            return 1;
        }
    }
    return 0;
}

void ckpt__ckhook_on_save_done(const ckpt_save_result *r, void *payload)
{
    ckpt__ckhook *h = payload;
    int stop = 0;
    int err;
    if (h->prev_done)
        h->prev_done(r, h->prev_done_payload);
    if (!claim(h, r))
        return;
    if (r->status == CKPT_ECANCELED) {
        ckpt__ckhook_log(h, CKPT_LOG_INFO,
                         "%s: snapshot of step %" PRId64
                         " replaced by a newer one before it was written",
                         h->name, r->step);
        return;
    }
    if (r->status != 0)
        return; /* the saver returns the error (once) and logs it */
    h->last_durable = r->step;
    if (h->ended)
        return;
    h->in_after_save++;
    err = listeners_after_save(h, r->step, r->prefix, &stop);
    h->in_after_save--;
    ckpt__ckhook_keep_error(h, err);
    if (stop)
        h->stop_pending = 1;
}

/* ---- a borrowed saver's callback ----------------------------------------- */

/* A saver the hook did not open reports outcomes to whoever opened it; the
 * hook puts its own callback in front (on the training thread, the only
 * thread that reads it) and forwards every outcome to the previous one. */
void ckpt__ckhook_install(ckpt__ckhook *h, ckpt_saver *saver)
{
    const ckpt_saver_options *o = ckpt_saver_get_options(saver);
    if (o->on_save_done == ckpt__ckhook_on_save_done &&
        o->on_save_done_payload == h)
        return;
    /* A different saver (e.g. the scaffold's, re-opened when the session
     * was re-created): the previous one may be gone, so it is not touched,
     * and its tickets mean nothing here. */
    h->ntickets = 0;
    h->prev_done = o->on_save_done;
    h->prev_done_payload = o->on_save_done_payload;
    ckpt_saver_set_on_save_done(saver, ckpt__ckhook_on_save_done, h);
    h->hooked = saver;
}

void ckpt__ckhook_uninstall(ckpt__ckhook *h)
{
    ckpt_saver *s = h->hooked;
    const ckpt_saver_options *o;
    if (!s)
        return;
    o = ckpt_saver_get_options(s);
    if (o->on_save_done == ckpt__ckhook_on_save_done &&
        o->on_save_done_payload == h)
        ckpt_saver_set_on_save_done(s, h->prev_done, h->prev_done_payload);
    h->hooked = NULL;
    h->prev_done = NULL;
    h->prev_done_payload = NULL;
}
