/* mpi/mpi_hook.c - ckpt_mpi_checkpoint_hook_new: the checkpoint hook of a
 * monitored session on every rank, over a distributed saver, built on the
 * public ckpt_hook struct like the library's own hooks. Every callback is
 * collective in effect: all ranks' sessions run the same steps, so in steps
 * mode every rank's timer triggers at the same step; in seconds mode rank
 * 0's timer decides and broadcasts its decision each step. */
#include "mpi_internal.h"

#include <string.h>

typedef struct mpi_hook {
    ckpt_mpi_checkpoint_hook_options o;
    ckpt_timer timer;
    int64_t restored_step; /* of the checkpoint restored, or CKPT_NO_STEP */
} mpi_hook;

static int global_step(ckpt_session *s, int64_t *step)
{
    int err = ckpt_session_global_step(s, step);
    if (err < 0)
        return ckpt__error(err,
                           "MpiCheckpointSaverHook: the graph has no global "
                           "step");
    return 0;
}

static int hook_after_create(ckpt_session *s, ckpt_coordinator *coord,
                             void *payload)
{
    mpi_hook *h = payload;
    int64_t step;
    int err = 0;
    int restored = 0;
    (void)coord;
    if (h->o.restore) {
        err = ckpt_mpi_saver_restore_latest(h->o.saver, NULL);
        restored = err == 0;
        if (err == CKPT_ENOTFOUND &&
            strstr(ckpt_error_last()->message, "no checkpoint to restore")) {
            ckpt_error_clear();
            err = 0;
        }
    }
    if (err == 0)
        err = global_step(s, &step);
    if (err == 0 && restored)
        h->restored_step = step;
    if (err == 0) {
        ckpt_timer_reset(&h->timer);
        ckpt_timer_update(&h->timer, step, NULL, NULL);
    }
    return err;
}

/* Whether to save at `step`, the same answer on every rank. */
static int should_save(mpi_hook *h, int64_t step)
{
    ckpt_mpi_saver *s = h->o.saver;
    int yes = ckpt_timer_should_trigger(&h->timer, step);
    MPI_Request req;
    if (h->o.save_steps > 0)
        return yes;
    MPI_Ibcast(&yes, 1, MPI_INT, 0, s->comm_ctl, &req);
    ckpt__mpi_wait_all(s, &req, 1, "agreeing on a timed checkpoint");
    return yes;
}

static int hook_after_run(ckpt_run_context *ctx, const ckpt_run_values *values,
                          void *payload)
{
    mpi_hook *h = payload;
    int64_t step;
    int err;
    (void)values;
    err = ckpt_mpi_saver_poll(h->o.saver, NULL);
    if (err == 0)
        err = global_step(ckpt_run_context_session(ctx), &step);
    if (err < 0 || !should_save(h, step))
        return err;
    if (h->o.mode == CKPT_SAVE_SYNC) {
        err = ckpt_mpi_saver_save(h->o.saver, step, NULL);
    } else {
        err = ckpt_mpi_saver_save_async(h->o.saver, step, NULL);
        if (err == CKPT_EBUSY) { /* skipped: try again next step */
            ckpt_error_clear();
            return 0;
        }
    }
    if (err == 0)
        ckpt_timer_update(&h->timer, step, NULL, NULL);
    return err;
}

static int hook_end(ckpt_session *s, void *payload)
{
    mpi_hook *h = payload;
    ckpt_saver_metrics m;
    int64_t step;
    int err = ckpt_mpi_saver_wait(h->o.saver, -1);
    if (err == 0)
        err = global_step(s, &step);
    if (err < 0)
        return err;
    ckpt_mpi_saver_get_metrics(h->o.saver, &m);
    if (m.last_saved_step == step || h->restored_step == step)
        return 0; /* a durable checkpoint already has this step */
    return ckpt_mpi_saver_save(h->o.saver, step, NULL);
}

static void hook_destroy(void *payload)
{
    ckpt__free(payload);
}

int ckpt_mpi_checkpoint_hook_new(ckpt_hook *out,
                                 const ckpt_mpi_checkpoint_hook_options *o)
{
    mpi_hook *h;
    int err;
    if (!out || !o)
        return ckpt__error(CKPT_EINVAL, "MpiCheckpointSaverHook: NULL "
                                        "argument");
    err = ckpt__options_check_version(o->version,
                                      CKPT_MPI_CHECKPOINT_HOOK_OPTIONS_VERSION,
                                      "MpiCheckpointSaverHook options",
                                      "CKPT_MPI_CHECKPOINT_HOOK_OPTIONS_INIT");
    if (err < 0)
        return err;
    if (!o->saver)
        return ckpt__error(CKPT_EINVAL, "MpiCheckpointSaverHook: no saver");
    if (o->mode != CKPT_SAVE_SYNC && o->mode != CKPT_SAVE_ASYNC)
        return ckpt__error(CKPT_EINVAL,
                           "MpiCheckpointSaverHook: unknown mode %d", o->mode);
    h = ckpt__calloc(1, sizeof(*h));
    if (!h)
        return ckpt__error_oom();
    h->o = *o;
    h->restored_step = CKPT_NO_STEP;
    err = ckpt_timer_init(&h->timer, o->save_secs, o->save_steps, o->clock);
    if (err < 0) {
        ckpt__free(h);
        return ckpt__error(CKPT_EINVAL,
                           "MpiCheckpointSaverHook: give exactly one of "
                           "save_steps and save_secs, positive");
    }
    memset(out, 0, sizeof(*out));
    out->version = CKPT_HOOK_VERSION;
    out->name = "MpiCheckpointSaverHook";
    out->payload = h;
    out->after_create_session = hook_after_create;
    out->after_run = hook_after_run;
    out->end = hook_end;
    out->destroy = hook_destroy;
    return 0;
}
