/* saver/overlap.c - overlapped snapshots and the mutation fence, and the
 * saver's side of choosing where a snapshot's checksum is computed (the
 * rule, shared with the MPI saver: ckpt__checksum_choice in snapshot.c).
 *
 * Once the caller has called ckpt_saver_mutation_fence, save_async runs
 * the read callbacks (on the caller's thread, as always), asks the idle
 * writer to copy the pieces of the variables in plain memory, and returns
 * with the job open (s->deferred, caller thread only): the caller goes on
 * reading the variables (a training step's forward and backward passes)
 * while the writer copies. The next fence - or any saver call that could
 * let the variables change - copies the pieces nobody has claimed, waits
 * for the one the writer is copying, and submits the job (writer.c's
 * handshake, its caller half deferred). The values saved are those at
 * save_async; the loop waits only for what was not yet copied. Small
 * variables (the global step, counters: snapshot.c's plan puts them first)
 * are copied at save_async itself, so a step may change them before its
 * fence. */
#include "saver_internal.h"
#include "saver_ops.h"

#include <inttypes.h>

void ckpt__saver_choose_checksum(ckpt_saver *s)
{
    ckpt__checksum_choice_init(&s->cs, s->image_bytes);
}

void ckpt__saver_snapshot_timed(ckpt_saver *s, int fused, double seconds)
{
    if (!ckpt__checksum_choice_timed(&s->cs, fused, seconds))
        return;
    CKPT__SAVER_LOG(
        s, CKPT_LOG_INFO,
        "snapshot copies: with the checksum %.2f GB/s, plain %.2f GB/s (best "
        "of the first %d snapshots): checksum %s from now on",
        s->cs.fused_s > 0 ? (double)s->image_bytes / s->cs.fused_s / 1e9 : 0.0,
        s->cs.plain_s > 0 ? (double)s->image_bytes / s->cs.plain_s / 1e9 : 0.0,
        CKPT__CHECKSUM_PROBES,
        s->cs.checksum ? "fused into the copy" : "computed by the writer");
}

int ckpt__saver_overlap_snapshot(ckpt_saver *s, ckpt__job *job)
{
    /* The writer's copy is off the loop's path: fusing the checksum into
     * it saves the writer a second pass over the image (memory traffic the
     * loop shares); a copy the caller does alone is as measured. */
    int asked = ckpt__writer_snapshot_begin(s, job->image, 1, s->cs.checksum, 1,
                                            s->neager);
    int err;
    job->checksum = s->help_work.checksum;
    /* Small variables now, here: a step may change its counters (the
     * global step first of all) before it calls the fence. */
    ckpt__snapshot_copy_first(&s->help_work, s->neager);
    err = ckpt__snapshot_callbacks(&s->help_work);
    if (err < 0 || !asked) {
        ckpt__writer_snapshot_end(s, asked);
        return err;
    }
    s->deferred = job;
    return 1;
}

void ckpt__saver_complete_snapshot(ckpt_saver *s)
{
    ckpt__job *job = s->deferred;
    ckpt__step_words words;
    double t0, blocking;
    int64_t step;
    if (!job)
        return;
    t0 = ckpt_clock_monotonic(s->opts.clock);
    ckpt__writer_snapshot_end(s, 1);
    s->deferred = NULL;
    job->blocking_s += ckpt_clock_monotonic(s->opts.clock) - t0;
    blocking = job->blocking_s;
    step = job->step;
    ckpt__writer_submit(s, job); /* the writer owns (and may free) it now */
    CKPT__SAVER_LOG(s, CKPT_LOG_DEBUG,
                    "overlapped snapshot %s complete (%.6f s blocking in "
                    "all); write dispatched",
                    ckpt__step_say(&words, step), blocking);
}

/* A wrapped saver's fence (ckpt_saver_ops version 4); 0 without one. */
static int wrapped_fence(ckpt_saver *s, int from_now_on)
{
    if (s->ops->version < 4 || !s->ops->mutation_fence)
        return 0;
    return s->ops->mutation_fence(s->ops_self, from_now_on);
}

void ckpt__saver_complete_open_snapshot(ckpt_saver *s)
{
    ckpt__saved_error saved;
    if (!s)
        return;
    if (!s->ops) {
        ckpt__saver_complete_snapshot(s);
        return;
    }
    ckpt__error_save(&saved); /* the caller's, if it has one */
    (void)wrapped_fence(s, 0);
    ckpt__error_restore(&saved);
}

int ckpt__saver_open_snapshot_step(const ckpt_saver *s, int64_t *step)
{
    if (!s)
        return 0;
    if (s->ops)
        return s->ops->version >= 4 && s->ops->open_snapshot &&
               s->ops->open_snapshot(s->ops_self, step) == 1;
    if (!s->deferred)
        return 0;
    *step = s->deferred->step;
    return 1;
}

int ckpt_saver_mutation_fence(ckpt_saver *s)
{
    CKPT__CHECK_ARG(s);
    if (ckpt__saver_refuse_writer_thread(s, "mutation fence") < 0)
        return CKPT_ESTATE;
    if (s->ops) /* without a fence member, complete at the trigger */
        return wrapped_fence(s, 1);
    if (ckpt__saver_call_begin(s, "mutation fence") < 0)
        return CKPT_ESTATE;
    s->overlap = 1;
    ckpt__saver_complete_snapshot(s);
    ckpt__saver_call_end(s);
    return 0;
}
