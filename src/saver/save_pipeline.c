/* saver/save_pipeline.c - the steps every save runs once its data is ready,
 * whether the caller's thread writes it (ckpt_saver_save: from the staging
 * image when one is reserved, else straight from the variables) or the
 * writer thread does (writer.c, from a staging image):
 * sweep what an earlier failed save left, apply retention to the list
 * found at open (the first save only), write the bundle (forgetting an
 * existing checkpoint of the same name once the new data is durable, right
 * before its files are put in place), and name it in the state file; what
 * retention evicts is handed back, to be deleted after the save (writer.c:
 * deleting a big file can take a third of a write). Both
 * paths call ckpt__saver_write_checkpoint, so the order and the cleanup
 * rules exist once; image writes go direct or through the page cache as
 * the first ones measured. Only one save runs these steps at a time: a
 * synchronous save first waits for the writer to go idle. */
#include "io/fs_internal.h"
#include "saver_internal.h"

#include <stdio.h>

/* If a checkpoint of this name exists, hand it to ckpt__dir_state_forget
 * (kept under a second name while it is replaced, or unlisted; its own
 * files removed, index first, so mixed files never look complete).
 * Called by the bundle writer once the new data is durable under its
 * temporary name, right before the renames (ckpt__before_rename): the old
 * checkpoint stays whole and named while the new one is written, and a
 * write that fails (a full disk) leaves it the latest. The index's stat
 * here only decides the log line; forget checks it again itself. */
typedef struct forget_args {
    ckpt_saver *s;
    const char *stored, *prefix;
    int64_t step;
} forget_args;

static int forget_existing(void *payload)
{
    const forget_args *a = payload;
    ckpt_saver *s = a->s;
    const char *stored = a->stored, *prefix = a->prefix;
    ckpt_buf index = CKPT_BUF_INIT;
    int err = ckpt_bundle_index_path(&index, prefix);
    if (err == 0 && ckpt__fs_stat(s->fs, index.ptr, NULL, NULL) == 0) {
        /* replacing is what a fixed name is for; a step saved again is
         * worth a warning */
        if (a->step == CKPT_NO_STEP)
            CKPT__SAVER_LOG(s, CKPT_LOG_DEBUG, "replacing checkpoint %s",
                            prefix);
        else
            CKPT__SAVER_LOG(s, CKPT_LOG_WARN,
                            "overwriting existing checkpoint %s", prefix);
        pthread_mutex_lock(&s->ds_mu);
        err = ckpt__dir_state_forget(&s->ds, stored);
        pthread_mutex_unlock(&s->ds_mu);
    }
    if (err == 0)
        ckpt_error_clear();
    ckpt_buf_dispose(&index);
    return err;
}

/* After a failed save (whose own cleanup may have failed too), sweep the
 * directory's temporary files before writing again. */
static void sweep_after_failure(ckpt_saver *s)
{
    if (!s->need_cleanup)
        return;
    pthread_mutex_lock(&s->ds_mu);
    if (ckpt__dir_state_remove_temps(&s->ds) == 0)
        s->need_cleanup = 0;
    pthread_mutex_unlock(&s->ds_mu);
    ckpt_error_clear();
}

/* Name the written checkpoint in the state file; on failure remove its
 * files so nothing unnamed is left behind, unless the state file on disk
 * may name it after all (its rollback failed too). What retention evicts
 * goes to `evicted`, for deletion after the save. */
static int commit_checkpoint(ckpt_saver *s, const char *stored,
                             const char *prefix, ckpt__kept_list *evicted,
                             int *may_be_named_out)
{
    int err;
    int may_be_named = 0;
    pthread_mutex_lock(&s->ds_mu);
    err = ckpt__dir_state_commit_evicting(
        &s->ds, stored, ckpt_clock_wall(s->opts.clock), &may_be_named, evicted);
    pthread_mutex_unlock(&s->ds_mu);
    *may_be_named_out = may_be_named;
    /* Never delete a checkpoint the state file on disk may still name. */
    if (err < 0 && !may_be_named) {
        ckpt__saved_error saved;
        ckpt__error_save(&saved);
        ckpt__remove_checkpoint_files(s->fs, prefix);
        ckpt__error_restore(&saved);
    }
    return err;
}

/* ---- direct or buffered writes --------------------------------------------
 * With direct_io 0 (the default) the first PROBE_WRITES image writes
 * alternate between O_DIRECT and the page cache (each with its fsync),
 * timed from open to the data file's fsync (the first two decide when
 * one was CLEAR_FACTOR times faster); afterwards every image write takes
 * O_DIRECT unless the page cache was clearly faster (best rate of each). Direct
 * writes leave the loop's memory bandwidth alone (no copy into the page cache,
 * no page cache to evict later), hence the margin. CKPT_DIRECT_IO_ON and _OFF
 * are obeyed as they are. Timed with the machine's clock
 * (ckpt_clock_monotonic(NULL)), not the saver's, which a test may fake. */
#define PROBE_WRITES 4
#define BUFFERED_MARGIN 1.15
#define CLEAR_FACTOR 2.0

static int use_direct(const ckpt_saver *s)
{
    if (s->opts.direct_io != CKPT_DIRECT_IO_DEFAULT)
        return s->opts.direct_io == CKPT_DIRECT_IO_ON;
    if (s->write_probes < PROBE_WRITES)
        return s->write_probes % 2 == 0;
    return s->write_direct;
}

/* A write rate for the log: GB/s, or MB/s below 0.1 GB/s (small
 * checkpoints, timed with their fsync, read "0.00 GB/s" otherwise). */
typedef struct rate_text {
    char s[32];
} rate_text;

static rate_text rate_of(double bytes_per_s)
{
    rate_text t;
    if (bytes_per_s >= 1e8)
        snprintf(t.s, sizeof(t.s), "%.2f GB/s", bytes_per_s / 1e9);
    else
        snprintf(t.s, sizeof(t.s), "%.2f MB/s", bytes_per_s / 1e6);
    return t;
}

static void record_write(ckpt_saver *s, int direct, uint64_t bytes,
                         double seconds)
{
    double bps;
    if (s->opts.direct_io != CKPT_DIRECT_IO_DEFAULT ||
        s->write_probes >= PROBE_WRITES || seconds <= 0 || bytes == 0)
        return;
    bps = (double)bytes / seconds;
    if (direct && bps > s->probe_direct_bps)
        s->probe_direct_bps = bps;
    if (!direct && bps > s->probe_buffered_bps)
        s->probe_buffered_bps = bps;
    /* A difference of CLEAR_FACTOR or more is clear after one of each. */
    if (++s->write_probes < PROBE_WRITES &&
        !(s->probe_direct_bps > 0 && s->probe_buffered_bps > 0 &&
          (s->probe_direct_bps > CLEAR_FACTOR * s->probe_buffered_bps ||
           s->probe_buffered_bps > CLEAR_FACTOR * s->probe_direct_bps)))
        return;
    s->write_probes = PROBE_WRITES;
    if (s->fs == ckpt_fs_posix() && ckpt__posix_direct_refused(s->ds.dir)) {
        /* the "direct" writes went through the page cache too */
        s->write_direct = 0;
        CKPT__SAVER_LOG(s, CKPT_LOG_INFO,
                        "checkpoint writes: the file system refuses "
                        "O_DIRECT: through the page cache (%s, timed with "
                        "fsync)",
                        rate_of(s->probe_direct_bps > s->probe_buffered_bps
                                    ? s->probe_direct_bps
                                    : s->probe_buffered_bps)
                            .s);
        return;
    }
    s->write_direct =
        !(s->probe_buffered_bps > BUFFERED_MARGIN * s->probe_direct_bps);
    CKPT__SAVER_LOG(s, CKPT_LOG_INFO,
                    "checkpoint writes: O_DIRECT %s, through the page "
                    "cache %s (timed with fsync): %s from now on",
                    rate_of(s->probe_direct_bps).s,
                    rate_of(s->probe_buffered_bps).s,
                    s->write_direct ? "O_DIRECT" : "the page cache");
}

int ckpt__saver_write_checkpoint(ckpt_saver *s, const ckpt__job *job,
                                 const ckpt__image *img, uint64_t *bytes_out,
                                 double *seconds_out, ckpt__kept_list *evicted)
{
    double t0 = ckpt_clock_monotonic(s->opts.clock);
    uint64_t bytes = 0;
    int may_be_named = 0;
    forget_args forget = {s, job->stored, job->prefix, job->step};
    ckpt__before_rename hook = {forget_existing, &forget};
    int err;
    err = ckpt__dir_lock_check(s->ds.lock, s->ds.dir);
    if (err < 0) { /* nothing of this save written: nothing to sweep */
        *bytes_out = 0;
        *seconds_out = ckpt_clock_monotonic(s->opts.clock) - t0;
        return err;
    }
    sweep_after_failure(s);
    pthread_mutex_lock(&s->ds_mu);
    err = ckpt__dir_state_reconcile(&s->ds);
    pthread_mutex_unlock(&s->ds_mu);
    if (err == 0) /* before anything of it can be complete and unnamed */
        ckpt__pending_note_write(&s->ds, job->stored, NULL);
    if (err == 0 && img) {
        int direct = use_direct(s);
        double w0 = ckpt_clock_monotonic(NULL);
        err = ckpt__write_from_image(s->fs, job->prefix, s->vars, s->nvars, img,
                                     s->image_bytes, direct, &hook, &bytes);
        if (err == 0)
            record_write(s, direct, bytes, ckpt_clock_monotonic(NULL) - w0);
    } else if (err == 0)
        err = ckpt__write_from_vars(s->fs, job->prefix, s->vars, s->nvars,
                                    &hook, &bytes);
    if (err == 0)
        err = commit_checkpoint(s, job->stored, job->prefix, evicted,
                                &may_be_named);
    if (err < 0)
        s->need_cleanup = 1;
    /* A failed save left nothing of its own complete (unless the state
     * file may name it): what its note names must not be deleted later (a
     * checkpoint of the same name it failed to replace, say). */
    if (err < 0 && !may_be_named)
        ckpt__pending_note_remove(&s->ds);
    *bytes_out = bytes;
    *seconds_out = ckpt_clock_monotonic(s->opts.clock) - t0;
    return err;
}

int ckpt__saver_write_sync(ckpt_saver *s, const ckpt__job *job,
                           uint64_t *bytes_out, double *seconds_out,
                           ckpt__kept_list *evicted)
{
    double t0 = ckpt_clock_monotonic(s->opts.clock), write_s = 0.0;
    int err;
    if (s->num_images == 0)
        return ckpt__saver_write_checkpoint(s, job, NULL, bytes_out,
                                            seconds_out, evicted);
    /* The writer is idle, so image 0 is free: copy the variables into it
     * (with the writer's help, the checksum fused into the copies, one pass
     * over the state) and write that one aligned image - with O_DIRECT
     * where the file system takes it, as the writer does - instead of one
     * buffered write per variable and a flush of the page cache. */
    err = ckpt__writer_snapshot(s, 0, 1);
    if (err == 0) {
        ckpt__image_seal(&s->help_work);
        err = ckpt__saver_write_checkpoint(s, job, &s->images[0], bytes_out,
                                           &write_s, evicted);
    } else {
        *bytes_out = 0;
    }
    *seconds_out = ckpt_clock_monotonic(s->opts.clock) - t0;
    return err;
}
