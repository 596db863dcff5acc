/* mpi/mpi_busy.c - the SKIP policy's agreement "does any rank still have a
 * save in flight", one MPI_Iallreduce per trigger on its own communicator
 * (comm_busy), posted ahead of the trigger where it can be.
 *
 * A rank's writer only becomes busy when a save starts, and under SKIP a
 * save starts only at a trigger. So a rank whose save has its outcome can
 * give its answer for the next trigger at once ("idle": it stays true until
 * that trigger) and let the caller's later poll/wait calls move the
 * allreduce along (MPI_Test, never waiting). At the trigger a rank whose
 * agreement already completed decides without any collective; otherwise
 * it posts its answer now (busy or idle) if it had not, and waits for the
 * agreement, bounded by the collective timeout.
 *
 * Why ranks cannot diverge: every rank posts exactly one allreduce on
 * comm_busy per SKIP trigger (ahead, or at the trigger) and consumes it at
 * that trigger, and nothing else uses comm_busy; so the k-th allreduce on
 * every rank is trigger k's, and every rank decides trigger k from its one
 * result. close and free complete an agreement posted for a trigger that
 * never comes (every rank posts one there). */
#include "mpi_internal.h"

static int skip_policy(const ckpt_mpi_saver *s)
{
    return s->opts.base.busy_policy == CKPT_BUSY_SKIP &&
           s->comm_busy != MPI_COMM_NULL;
}

static void post(ckpt_mpi_saver *s, int busy)
{
    s->busy_mine = busy;
    s->busy_any = 0;
    MPI_Iallreduce(&s->busy_mine, &s->busy_any, 1, MPI_INT, MPI_MAX,
                   s->comm_busy, &s->busy_req);
    s->busy_posted = 1;
    s->busy_done = 0;
}

void ckpt__mpi_busy_ahead(ckpt_mpi_saver *s)
{
    if (!skip_policy(s) || s->closed)
        return;
    if (!s->busy_posted) {
        if (s->op.state != OP_IDLE)
            return;
        post(s, 0);
    }
    if (!s->busy_done)
        MPI_Test(&s->busy_req, &s->busy_done, MPI_STATUS_IGNORE);
}

int ckpt__mpi_busy_post_now(ckpt_mpi_saver *s)
{
    if (!s->busy_posted)
        post(s, s->op.state != OP_IDLE);
    return s->busy_done;
}

int ckpt__mpi_busy_decide(ckpt_mpi_saver *s)
{
    if (!s->busy_done)
        ckpt__mpi_wait_all(s, &s->busy_req, 1,
                           "agreeing whether a save is in flight");
    s->busy_posted = 0;
    s->busy_done = 0;
    return s->busy_any;
}

void ckpt__mpi_busy_settle(ckpt_mpi_saver *s)
{
    if (!skip_policy(s))
        return;
    ckpt__mpi_busy_post_now(s);
    ckpt__mpi_busy_decide(s);
}
