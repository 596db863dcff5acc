/* session/mutation_fence.c - the step's mutation fence: the savers whose
 * overlapped snapshots a step must complete before it writes the
 * variables, and the calls that complete them.
 *
 * A checkpoint hook registers its saver when the session is created
 * (ckpt__session_add_fence_saver). ckpt_step_context_mutation_fence
 * completes every registered saver's open snapshot (ckpt_saver_mutation_
 * fence); the first call also switches those savers to overlapped
 * snapshots, so a loop that never calls it keeps complete copies at the
 * trigger (a saver opened with fence_from_start overlaps from its first
 * save on). The session completes open snapshots when a step ends, so a
 * step that wrote nothing need not call the fence and a snapshot never
 * stays open beyond the step after its trigger (with fence_from_start, a
 * loop that never called the fence is warned once there). The same
 * list tells whose writes in flight a session being dropped or closed
 * waits for. */
#include "session_internal.h"

#include "saver/saver_ops.h"

int ckpt__session_add_fence_saver(ckpt_session *s, ckpt_saver *saver)
{
    ckpt_monitored_session *ms = s ? s->ms : NULL;
    if (!ms || !saver)
        return ckpt__error(CKPT_EINVAL, "mutation fence: no session or saver");
    for (size_t i = 0; i < ms->num_fence_savers; i++)
        if (ms->fence_savers[i] == saver)
            return 0;
    if (ckpt__reserve_one(&ms->fence_savers, &ms->cap_fence_savers,
                          ms->num_fence_savers, sizeof(*ms->fence_savers),
                          4) < 0)
        return CKPT_ENOMEM;
    ms->fence_savers[ms->num_fence_savers++] = saver;
    if (ms->fence_used)
        ckpt_saver_mutation_fence(saver); /* overlapped from now on */
    return 0;
}

void ckpt__session_remove_fence_saver(ckpt_session *s, ckpt_saver *saver)
{
    ckpt_monitored_session *ms = s ? s->ms : NULL;
    if (!ms)
        return;
    for (size_t i = 0; i < ms->num_fence_savers; i++) {
        if (ms->fence_savers[i] != saver)
            continue;
        /* nothing left open, and the saver not switched to overlapped
         * snapshots for whoever saves through it next */
        ckpt__saver_complete_open_snapshot(saver);
        ms->fence_savers[i] = ms->fence_savers[--ms->num_fence_savers];
        return;
    }
}

void ckpt__ms_wait_hook_savers(ckpt_monitored_session *ms, const char *when)
{
    ckpt__saved_error saved;
    ckpt__error_save(&saved); /* the caller's error, if it has one */
    for (size_t i = 0; i < ms->num_fence_savers; i++) {
        int err;
        if (ms->fence_savers[i] == ms->owned_saver)
            continue; /* the scaffold's: its owner waits for it */
        err = ckpt_saver_wait(ms->fence_savers[i], 0, ms->stop_grace_period_s);
        if (err < 0)
            ckpt__ms_log(ms, CKPT_LOG_WARN, "%s: checkpoint hook's saver: %s",
                         when, ckpt_error_last()->message);
    }
    ckpt__error_restore(&saved);
}

void ckpt__ms_complete_snapshots(ckpt_monitored_session *ms)
{
    int64_t step;
    /* A saver opened with fence_from_start overlaps before any fence: a
     * loop that has never called one most likely does not know the rule
     * it promised, and may just have torn that checkpoint. Said once. */
    for (size_t i = 0;
         i < ms->num_fence_savers && !ms->fence_used && !ms->warned_unfenced;
         i++)
        if (ckpt__saver_open_snapshot_step(ms->fence_savers[i], &step)) {
            ms->warned_unfenced = 1;
            ckpt__ms_log(ms, CKPT_LOG_WARN,
                         "monitored session: a step ended while the "
                         "checkpoint of step %lld was still being copied "
                         "(saver option fence_from_start), and the loop has "
                         "never called ckpt_step_context_mutation_fence: "
                         "a variable of more than 64 KiB that the step "
                         "wrote, if any, is saved torn in it. Call the "
                         "fence before the step's first write, or leave "
                         "fence_from_start unset",
                         (long long)step);
        }
    /* Without switching a saver the loop has not fenced yet: one whose
     * options say the loop fences from the start has an open snapshot
     * from its first save (the initial one) even so. */
    for (size_t i = 0; i < ms->num_fence_savers; i++)
        ckpt__saver_complete_open_snapshot(ms->fence_savers[i]);
}

int ckpt_step_context_mutation_fence(ckpt_step_context *sc)
{
    ckpt_monitored_session *ms;
    CKPT__CHECK_ARG(sc);
    ms = sc->session ? sc->session->ms : NULL;
    if (!ms)
        return ckpt__error(CKPT_EINVAL,
                           "mutation fence: the step context has no session");
    if (!ms->in_step)
        return ckpt__error(CKPT_ESTATE,
                           "mutation fence: called outside a step");
    ms->fence_used = 1;
    for (size_t i = 0; i < ms->num_fence_savers; i++)
        ckpt_saver_mutation_fence(ms->fence_savers[i]);
    return 0;
}
