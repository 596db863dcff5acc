/* saver/overlap.c - overlapped snapshots and the mutation fence, and the
 * one-time choice of where a snapshot's checksum is computed.
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
 * save_async; the loop waits only for what was not yet copied. */
#include "saver_internal.h"
#include "util/crc32c.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The first SNAPSHOT_PROBES snapshots alternate between the fused copy and
 * plain copies (fused first) and are timed; below PROBE_MIN_BYTES of state
 * the difference is too small to time reliably and the fused copy is kept.
 * A snapshot copies the whole state just after the loop's step wrote it,
 * usually more than the caches hold, where the fused copy runs at memory
 * speed; a copy of one variable timed in isolation (in cache) favours
 * plain copies, which then also cost the writer a second pass over the
 * image. Hence timing the snapshots themselves. */
#define SNAPSHOT_PROBES 4
#define PROBE_MIN_BYTES ((uint64_t)4 << 20)
/* Plain copies leave a pass over the image to the writer, which costs
 * memory bandwidth the loop shares: chosen only when clearly faster. */
#define PLAIN_MARGIN 0.85

void ckpt__saver_choose_checksum(ckpt_saver *s)
{
    const char *force = getenv("CKPT_SNAPSHOT_CHECKSUM");
    /* The CRC kernel and whether long fused copies stream are chosen once
     * per process, at the first use: here, not in a save's snapshot. */
    (void)ckpt__crc32c_copy_streams();
    s->checksum = 1;
    s->checksum_probes = 0;
    s->probe_fused_s = -1.0;
    s->probe_plain_s = -1.0;
    if (force && (strcmp(force, "writer") == 0 || strcmp(force, "copy") == 0)) {
        s->checksum = strcmp(force, "copy") == 0;
        s->checksum_probes = SNAPSHOT_PROBES;
    } else if (s->image_bytes < PROBE_MIN_BYTES) {
        s->checksum_probes = SNAPSHOT_PROBES;
    }
}

void ckpt__saver_snapshot_timed(ckpt_saver *s, int fused, double seconds)
{
    double *best = fused ? &s->probe_fused_s : &s->probe_plain_s;
    if (s->checksum_probes >= SNAPSHOT_PROBES || seconds <= 0)
        return;
    if (*best < 0 || seconds < *best)
        *best = seconds;
    if (++s->checksum_probes < SNAPSHOT_PROBES) {
        s->checksum = !fused; /* alternate */
        return;
    }
    s->checksum = !(s->probe_plain_s > 0 && s->probe_fused_s > 0 &&
                    s->probe_plain_s < PLAIN_MARGIN * s->probe_fused_s);
    CKPT__SAVER_LOG(
        s, CKPT_LOG_INFO,
        "snapshot copies: with the checksum %.2f GB/s, plain %.2f GB/s (best "
        "of the first %d snapshots): checksum %s from now on",
        s->probe_fused_s > 0 ? (double)s->image_bytes / s->probe_fused_s / 1e9
                             : 0.0,
        s->probe_plain_s > 0 ? (double)s->image_bytes / s->probe_plain_s / 1e9
                             : 0.0,
        SNAPSHOT_PROBES,
        s->checksum ? "fused into the copy" : "computed by the writer");
}

int ckpt__saver_overlap_snapshot(ckpt_saver *s, ckpt__job *job)
{
    /* The writer's copy is off the loop's path: fusing the checksum into
     * it saves the writer a second pass over the image (memory traffic the
     * loop shares); a copy the caller does alone is as measured. */
    int asked = ckpt__writer_snapshot_begin(s, job->image, 1, s->checksum, 1);
    int err;
    job->checksum = s->help_work.checksum;
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
    s->skips_since_dispatch = 0;
    ckpt__writer_submit(s, job); /* the writer owns (and may free) it now */
    CKPT__SAVER_LOG(s, CKPT_LOG_DEBUG,
                    "overlapped snapshot of step %" PRId64
                    " complete (%.6f s blocking in all); write dispatched",
                    step, blocking);
}

int ckpt_saver_mutation_fence(ckpt_saver *s)
{
    CKPT__CHECK_ARG(s);
    if (s->ops)
        return 0; /* a wrapped saver's snapshot is complete at the trigger */
    s->overlap = 1;
    ckpt__saver_complete_snapshot(s);
    return 0;
}
