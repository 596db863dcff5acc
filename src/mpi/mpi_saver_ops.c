/* mpi/mpi_saver_ops.c - ckpt_mpi_saver_as_saver: the distributed saver as
 * a ckpt_saver handle (ckpt_saver_wrap, a collective saver), so the
 * library's checkpoint hook and monitored session drive it unchanged. Its
 * agree is pipelined: each call posts rank 0's decision in one MPI_Ibcast
 * and returns the decision the previous call posted, so no step waits on
 * the others beyond completing a broadcast that every rank posted one step
 * earlier. */
#include "mpi_internal.h"
#include "saver/saver_ops.h"

#include <string.h>

static int op_save(void *self, int64_t step, ckpt_buf *prefix_out)
{
    return ckpt_mpi_saver_save(self, step, prefix_out);
}

static int op_save_async(void *self, int64_t step, uint64_t *ticket_out)
{
    return ckpt_mpi_saver_save_async(self, step, ticket_out);
}

static int op_poll(void *self, int *busy_out)
{
    return ckpt_mpi_saver_poll(self, busy_out);
}

/* Every save of the distributed saver is one at a time: waiting for any
 * ticket is waiting for the save in flight. */
static int op_wait(void *self, uint64_t ticket, double timeout_s)
{
    (void)ticket;
    return ckpt_mpi_saver_wait(self, timeout_s);
}

static int op_close(void *self, double timeout_s)
{
    (void)timeout_s; /* bounded by collective_timeout_s */
    return ckpt_mpi_saver_close(self);
}

static int op_restore(void *self, const char *prefix)
{
    return ckpt_mpi_saver_restore(self, prefix);
}

static int op_restore_latest(void *self, ckpt_buf *prefix_out)
{
    return ckpt_mpi_saver_restore_latest(self, prefix_out);
}

static int op_latest(void *self, ckpt_buf *out)
{
    return ckpt__mpi_latest(self, out);
}

static void op_get_metrics(void *self, ckpt_saver_metrics *out)
{
    ckpt_mpi_saver_get_metrics(self, out);
}

static const ckpt_saver_options *op_get_options(const void *self)
{
    return &((const ckpt_mpi_saver *)self)->opts.base;
}

static void op_set_on_save_done(void *self, ckpt_save_done_fn fn, void *payload)
{
    ckpt_mpi_saver *s = self;
    s->opts.base.on_save_done = fn;
    s->opts.base.on_save_done_payload = payload;
}

/* A replicated or partitioned variable of that name (a per-rank one is
 * saved under another key) and that storage. */
static int op_saves_var(const void *self, const char *name, const void *data)
{
    const ckpt_mpi_saver *s = self;
    for (size_t i = 0; i < s->nvars; i++) {
        const ckpt__mvar *v = &s->vars[i];
        if (v->kind != CKPT__MPI_PER_RANK && strcmp(v->name, name) == 0)
            return !data || !v->user.data || v->user.data == data;
    }
    return 0;
}

void ckpt__mpi_agree_finish(ckpt_mpi_saver *s)
{
    if (!s->agree_posted)
        return;
    ckpt__mpi_wait_all(s, &s->agree_req, 1, "agreeing on a timed checkpoint");
    s->agree_posted = 0;
}

/* Rank 0's `*flag` of the previous call (0 at the first) on every rank;
 * rank 0's `*flag` of this call is posted for the next one, unless the
 * previous decision was 1 (that step saves; this one must not again). */
static int op_agree(void *self, int *flag)
{
    ckpt_mpi_saver *s = self;
    int decided = 0;
    if (s->agree_posted) {
        ckpt__mpi_agree_finish(s);
        decided = s->agree_buf;
    }
    s->agree_buf = s->rank == 0 && *flag && !decided;
    MPI_Ibcast(&s->agree_buf, 1, MPI_INT, 0, s->comm_ctl, &s->agree_req);
    s->agree_posted = 1;
    *flag = decided;
    return 0;
}

/* Every rank's outcome of a step they all took (the monitored session's
 * set-up before its restore), agreed: the first failed rank's error, with
 * its message, on every rank. */
static int op_agree_outcome(void *self, int err)
{
    ckpt_mpi_saver *s = self;
    return ckpt__mpi_agree(s, s->comm_ctl, err,
                           "agreeing on the session's set-up");
}

static int op_mutation_fence(void *self, int from_now_on)
{
    return ckpt__mpi_fence(self, from_now_on);
}

static int op_open_snapshot(const void *self, int64_t *step)
{
    const ckpt_mpi_saver *s = self;
    if (!s->snap_open)
        return 0;
    *step = s->snap_step;
    return 1;
}

static const ckpt_saver_ops mpi_saver_ops = {
    CKPT_SAVER_OPS_VERSION,
    1, /* collective */
    op_save,
    op_save_async,
    op_poll,
    op_wait,
    op_close,
    op_restore,
    op_restore_latest,
    op_latest,
    op_get_metrics,
    op_get_options,
    op_set_on_save_done,
    op_agree,
    NULL, /* the handle belongs to the distributed saver */
    op_saves_var,
    op_agree_outcome,
    op_mutation_fence,
    op_open_snapshot,
};

int ckpt_mpi_saver_as_saver(ckpt_mpi_saver *s, ckpt_saver **out)
{
    int err;
    CKPT__CHECK_ARG(out);
    *out = NULL;
    CKPT__CHECK_ARG(s);
    if (!s->handle) {
        err = ckpt_saver_wrap(&s->handle, &mpi_saver_ops, s);
        if (err < 0)
            return err;
        ckpt__saver_ops_set_owner(s->handle, "ckpt_mpi_saver_free");
    }
    *out = s->handle;
    return 0;
}
