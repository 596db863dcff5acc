/* session/session_create.c - creating the session behind a monitored
 * session (restore the latest checkpoint or run the scaffold's init_fn,
 * reset the coordinator, every hook's after_create_session), dropping a
 * broken one, and the recoverable flavour's bounded re-creation with
 * back-off (TF retries forever; B31-B34). */
#include "ckpt/state.h"
#include "saver/saver_internal.h"
#include "saver/saver_ops.h"
#include "session_internal.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <time.h>

#define MAX_BACKOFF_S 60.0

void ckpt__sleep_s(double seconds)
{
    struct timespec ts;
    double whole;
    if (!(seconds > 0))
        return;
    if (seconds > MAX_BACKOFF_S)
        seconds = MAX_BACKOFF_S;
    ts.tv_nsec = (long)(modf(seconds, &whole) * 1e9);
    ts.tv_sec = (time_t)whole;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Restore `prefix`: restore_from, or (`latest`) the newest checkpoint of
 * checkpoint_dir, which lacking a variable is a mismatch (CKPT_EINVAL), as
 * ckpt_saver_restore_latest says (CKPT_ENOTFOUND would read as "nothing
 * to restore"). @return 1 when restored, or an error */
static int restore_prefix(ckpt_monitored_session *ms, const char *prefix,
                          int latest)
{
    int err;
    if (!ms->sess.saver)
        return ckpt__error(CKPT_ESTATE,
                           "session: no saver to restore '%s' with", prefix);
    err = ckpt_saver_restore(ms->sess.saver, prefix);
    if (latest)
        err = ckpt__restore_latest_outcome(err);
    /* the saver's message names the checkpoint as a rule: once is enough */
    if (err < 0 && ckpt__message_names(ckpt_error_last()->message, prefix))
        return ckpt__error_prefix(err, "session: restoring the checkpoint");
    if (err < 0)
        return ckpt__error_prefix(err, "session: restoring %s", prefix);
    ckpt__ms_log(ms, CKPT_LOG_INFO, "restored checkpoint %s (global step %lld)",
                 prefix, (long long)ckpt__ms_global_step(ms));
    if (ckpt__buf_set(&ms->restored, prefix) < 0)
        ckpt__buf_clear(&ms->restored); /* only a message's context lost */
    return 1;
}

/* Restore the newest checkpoint of checkpoint_dir. @return 1 when one was
 * restored, 0 when there is none, or an error */
static int restore_latest(ckpt_monitored_session *ms)
{
    ckpt_buf prefix = CKPT_BUF_INIT;
    int err;
    if (!ms->checkpoint_dir || !ms->sess.saver)
        return 0;
    /* A collective saver agrees on the latest checkpoint (one process
     * reads the state file); otherwise it is read here. */
    if (ckpt__saver_collective(ms->sess.saver))
        err = ckpt_saver_latest(ms->sess.saver, &prefix);
    else
        err = ckpt_latest_checkpoint(&prefix, ms->fs, ms->checkpoint_dir);
    if (err == CKPT_ENOTFOUND || err == CKPT_ECORRUPT) {
        ckpt_buf note = CKPT_BUF_INIT;
        int unreadable =
            err == CKPT_ECORRUPT ||
            strstr(ckpt_error_last()->message, CKPT__STATE_UNREADABLE);
        /* checkpoints it starts afresh beside, when the saver's directory
         * is this one */
        if (!ckpt__saver_collective(ms->sess.saver))
            ckpt__saver_unnamed_note(ms->sess.saver, ms->checkpoint_dir, &note);
        if (unreadable)
            ckpt__ms_log(ms, CKPT_LOG_WARN,
                         "%s: unreadable state file (%s%s): initialising",
                         ms->checkpoint_dir, ckpt_error_last()->message,
                         note.size ? note.ptr : "");
        else if (note.size > 0 || /* a collective saver's, in its message */
                 strstr(ckpt_error_last()->message, CKPT__UNNAMED_NOTE_MARK))
            ckpt__ms_log(ms, CKPT_LOG_WARN,
                         "%s: no latest checkpoint (%s%s): "
                         "initialising",
                         ms->checkpoint_dir, ckpt_error_last()->message,
                         note.ptr);
        ckpt_buf_dispose(&note);
        ckpt_error_clear();
        err = 0;
    } else if (err == 0) {
        err = restore_prefix(ms, prefix.ptr, 1);
        if (err == CKPT_ECORRUPT) { /* say the way on, as restore_latest */
            ckpt__saved_error saved;
            ckpt__error_save(&saved);
            err = ckpt__error(CKPT_ECORRUPT,
                              "%s (the session does not fall back by "
                              "itself: give an older checkpoint as the "
                              "session options' restore_from; 'ckpt ls "
                              "%s' lists them)",
                              saved.message, ms->checkpoint_dir);
        }
    }
    ckpt_buf_dispose(&prefix);
    return err;
}

/* TF's session manager "prepare": restore (explicit prefix, else newest
 * checkpoint), else initialise. A non-chief does neither. */
static int restore_or_init(ckpt_monitored_session *ms)
{
    int err;
    ckpt__buf_clear(&ms->restored);
    if (ms->not_chief)
        return 0;
    if (ms->restore_from)
        err = restore_prefix(ms, ms->restore_from, 0);
    else
        err = restore_latest(ms);
    if (err != 0)
        return err < 0 ? err : 0;
    if (ms->scaffold.init_fn) {
        ckpt_error_clear();
        err = ms->scaffold.init_fn(&ms->sess, ms->scaffold.init_payload);
        if (err != 0)
            return ckpt__error_prefix(err < 0 ? err : CKPT_EUSER,
                                      "scaffold init_fn");
    }
    return 0;
}

int ckpt__ms_create_session(ckpt_monitored_session *ms)
{
    int err = restore_or_init(ms);
    if (err < 0)
        return err;
    /* One coordinator serves every (re)creation, so a pointer a hook kept
     * stays valid; clearing it is TF's "new coordinator". */
    ckpt_coordinator_clear_stop(ms->sess.coord);
    for (size_t i = 0; i < ms->num_hooks; i++) {
        const ckpt_hook *h = &ms->hooks[i];
        if (!h->after_create_session)
            continue;
        ckpt_error_clear();
        err = h->after_create_session(&ms->sess, ms->sess.coord, h->payload);
        /* after a restore, the checkpoint is the likely cause (a value no
         * run of this program would save): name it */
        if (err != 0 && ms->restored.size > 0)
            return ckpt__error_prefix(
                err < 0 ? err : CKPT_EUSER,
                "hook '%s' after_create_session (the session was restored "
                "from %s)",
                h->name ? h->name : "unnamed", ms->restored.ptr);
        if (err != 0)
            return ckpt__error_prefix(err < 0 ? err : CKPT_EUSER,
                                      "hook '%s' after_create_session",
                                      h->name ? h->name : "unnamed");
    }
    ms->live = 1;
    return 0;
}

void ckpt__ms_drop_session(ckpt_monitored_session *ms)
{
    int err;
    ms->live = 0;
    ms->in_step = 0;
    ckpt_coordinator_request_stop(ms->sess.coord, 0, NULL);
    err = ckpt_coordinator_join(ms->sess.coord, ms->stop_grace_period_s, 1);
    if (err < 0)
        ckpt__ms_log(ms, CKPT_LOG_WARN, "closing the session: %s",
                     ckpt_error_last()->message);
    /* The writes in flight land before the next session restores from the
     * directory (and before it trains on): the scaffold's saver's and
     * every checkpoint hook's own. */
    if (ms->owned_saver) {
        err = ckpt_saver_wait(ms->owned_saver, 0, ms->stop_grace_period_s);
        if (err < 0)
            ckpt__ms_log(ms, CKPT_LOG_WARN,
                         "closing the session: scaffold saver: %s",
                         ckpt_error_last()->message);
    }
    ckpt__ms_wait_hook_savers(ms, "closing the session");
    ckpt_error_clear();
}

int ckpt__ms_should_recover(const ckpt_monitored_session *ms, int err)
{
    return ms->recoverable && ckpt_is_recoverable(err);
}

int ckpt__ms_recover(ckpt_monitored_session *ms, int err, int *attempts)
{
    double backoff = ms->recovery_backoff_s;
    for (int k = 1; k < *attempts + 1 && backoff < MAX_BACKOFF_S; k++)
        backoff *= 2;
    while (ckpt__ms_should_recover(ms, err)) {
        if (ms->max_recovery_attempts >= 0 &&
            *attempts >= ms->max_recovery_attempts)
            return ckpt__error_prefix(err,
                                      "session not re-created after %d "
                                      "attempt(s)",
                                      *attempts);
        (*attempts)++;
        ckpt__ms_log(ms, CKPT_LOG_INFO,
                     "%s: re-creating the session from the latest checkpoint "
                     "(attempt %d)",
                     ckpt_error_last()->message, *attempts);
        ckpt__ms_drop_session(ms);
        ckpt__sleep_s(backoff);
        if (backoff < MAX_BACKOFF_S)
            backoff *= 2;
        ms->recoveries++;
        err = ckpt__ms_create_session(ms);
    }
    return err;
}
