/* saver/metrics.c - how a save counts in ckpt_saver_metrics, the one set
 * of rules for the single-process saver (outcomes.c, writer.c) and the MPI
 * saver: a trigger that snapshots is started (with its blocking time), a
 * started one replaced by a newer snapshot is coalesced instead, and a
 * finished one completed (bytes, step) or failed, with its write time. */
#include "saver_internal.h"

void ckpt__metrics_started(ckpt_saver_metrics *m, double blocking_s)
{
    m->saves_started++;
    m->blocking_s_total += blocking_s;
    m->blocking_s_last = blocking_s;
    if (blocking_s > m->blocking_s_max)
        m->blocking_s_max = blocking_s;
}

void ckpt__metrics_coalesced(ckpt_saver_metrics *m)
{
    m->saves_started--;
    m->saves_coalesced++;
}

void ckpt__metrics_finished(ckpt_saver_metrics *m, int ok, int64_t step,
                            uint64_t bytes, double write_s)
{
    if (ok) {
        m->saves_completed++;
        m->bytes_written += bytes;
        m->last_saved_step = step;
    } else {
        m->saves_failed++;
    }
    m->write_s_total += write_s;
    m->write_s_last = write_s;
}
