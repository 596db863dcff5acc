/* mpi/mpi_snapshot.c - one rank's snapshot: the records it writes copied
 * into a staging image, the part of save_async the training loop waits
 * for. It takes the single-process saver's path (saver/snapshot.c):
 * variables in plain memory are copied in pieces of CKPT__PIECE_BYTES,
 * each piece's CRC-32C either fused into its copy or left to the
 * background thread, which seals the image before writing it, whichever
 * this machine makes faster for the caller (the first snapshots timed,
 * alternately fused and plain, by the rule ckpt_saver uses:
 * ckpt__checksum_choice; CKPT_SNAPSHOT_CHECKSUM=copy or =writer forces it).
 *
 * Overlapped snapshots (the mutation fence, as ckpt_saver's: saver/
 * overlap.c): once the caller has fenced, or from the first save with
 * fence_from_start, an async save copies only the read callbacks and the
 * small variables at the trigger and leaves the pieces of the large ones
 * open: the background thread copies them as its write job begins, while
 * the caller reads the variables (the next step's forward and backward
 * passes, its gradient allreduce), and the caller's next fence (or any
 * saver call) copies what nobody has claimed yet and waits for the piece
 * in progress. Their checksums are fused into those copies (the thread
 * would otherwise make a second pass over the image).
 *
 * The copy makes no MPI call. (Testing the busy agreement between pieces
 * would move it along during the copy, but where ranks share cores Open
 * MPI yields the core inside every test, which stretched the 4-rank
 * snapshot on 2 cores from 12 to 19 ms, median of 10, for no shorter
 * wait overall.) */
#include "mpi_internal.h"

#include "util/crc32c.h"

#include <stdlib.h>
#include <string.h>

/* Once, at the first snapshot: the pieces, and the first image. */
static int prepare(ckpt_mpi_saver *s, ckpt__image *img)
{
    int err = 0;
    if (!s->pieces_planned) {
        err = ckpt__snapshot_plan(s->owned, s->nowned, CKPT__PIECE_BYTES,
                                  &s->pieces, &s->npieces);
        if (err < 0)
            return err;
        s->pieces_planned = 1;
    }
    if (img->ptr)
        return 0;
    s->neager = ckpt__snapshot_eager_pieces(s->pieces, s->npieces);
    /* With fence_from_start the background thread's overlapped copies
     * fault the image in, off the caller's path. */
    err = ckpt__image_alloc(img, s->image_bytes, s->nowned, s->npieces,
                            !s->opts.base.fence_from_start);
    if (err == 0 && !s->checksum_started) {
        ckpt__checksum_choice_init(&s->cs, s->image_bytes);
        s->checksum_started = 1;
    }
    return err;
}

static void work_of(const ckpt_mpi_saver *s, ckpt__image *img, int checksum,
                    ckpt__snapshot_work *w)
{
    ckpt__snapshot_work_init(w, s->owned, s->nowned, s->pieces, s->npieces, img,
                             checksum, 0);
}

int ckpt__mpi_snapshot_take(ckpt_mpi_saver *s, ckpt__image *img)
{
    ckpt__snapshot_work w;
    double t0;
    int err = prepare(s, img);
    if (err < 0)
        return err;
    t0 = ckpt__mpi_now(); /* the first image's allocation is not timed */
    work_of(s, img, s->cs.checksum, &w);
    err = ckpt__snapshot_callbacks(&w);
    for (size_t k = 0; err == 0 && k < w.npieces; k++) {
        const ckpt__piece *p = &w.pieces[k];
        const ckpt__var *v = &w.vars[p->var];
        uint8_t *dst = img->ptr + v->offset + p->offset;
        const uint8_t *src = (const uint8_t *)v->v.data + p->offset;
        if (w.checksum)
            img->piece_crcs[k] = ckpt__crc32c_copy(0, dst, src, (size_t)p->len);
        else
            memcpy(dst, src, (size_t)p->len);
    }
    /* The image keeps how it was checksummed: while the placement is
     * being chosen the next snapshot's differs, and the seal (on the
     * background thread, after this snapshot's placement moved on) must
     * follow this one's. */
    img->fused = w.checksum;
    if (err == 0)
        (void)ckpt__checksum_choice_timed(&s->cs, w.checksum,
                                          ckpt__mpi_now() - t0);
    return err;
}

void ckpt__mpi_snapshot_seal(const ckpt_mpi_saver *s, ckpt__image *img)
{
    ckpt__snapshot_work w;
    work_of(s, img, img->fused, &w);
    ckpt__image_seal(&w);
}

int ckpt__mpi_snapshot_open(ckpt_mpi_saver *s, int64_t step)
{
    ckpt__snapshot_work *w = &s->snap_work;
    int err = prepare(s, &s->image);
    if (err < 0)
        return err;
    work_of(s, &s->image, 1, w);
    atomic_store(&w->next, s->neager);
    ckpt__snapshot_copy_first(w, s->neager);
    err = ckpt__snapshot_callbacks(w); /* on failure: nothing to claim */
    s->image.fused = 1;
    if (err < 0)
        return err;
    pthread_mutex_lock(&s->mu);
    s->snap_copied = 0;
    s->snap_target = s->npieces - s->neager;
    pthread_mutex_unlock(&s->mu);
    s->snap_open = 1;
    s->snap_step = step;
    s->snap_ticket = 0;
    return 0;
}

/* Both threads: count `copied` pieces, then wait until all are. */
static void copied_wait(ckpt_mpi_saver *s, size_t copied)
{
    pthread_mutex_lock(&s->mu);
    s->snap_copied += copied;
    pthread_cond_broadcast(&s->cv);
    while (s->snap_copied < s->snap_target)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

void ckpt__mpi_snapshot_drop(ckpt_mpi_saver *s)
{
    if (!s->snap_open)
        return;
    atomic_store(&s->snap_work.next, s->snap_work.npieces);
    pthread_mutex_lock(&s->mu);
    s->snap_copied = s->snap_target = 0;
    pthread_mutex_unlock(&s->mu);
    s->snap_open = 0;
}

void ckpt__mpi_snapshot_copy_rest(ckpt_mpi_saver *s)
{
    copied_wait(s, ckpt__snapshot_claim(&s->snap_work));
}

void ckpt__mpi_snapshot_complete(ckpt_mpi_saver *s)
{
    const ckpt_saver_options *o = &s->opts.base;
    double t0, waited;
    if (!s->snap_open)
        return;
    t0 = ckpt__mpi_now();
    copied_wait(s, ckpt__snapshot_claim(&s->snap_work));
    s->snap_open = 0;
    waited = ckpt__mpi_now() - t0;
    /* The save's blocking time is the trigger's and this wait. */
    s->metrics.blocking_s_total += waited;
    s->metrics.blocking_s_last += waited;
    if (s->metrics.blocking_s_last > s->metrics.blocking_s_max)
        s->metrics.blocking_s_max = s->metrics.blocking_s_last;
    if (s->op.state != OP_IDLE && s->op.ticket == s->snap_ticket)
        s->op.blocking_s += waited;
    ckpt__log(o->log, o->log_payload, o->log_level, CKPT_LOG_DEBUG,
              "overlapped snapshot of step %lld complete (%.6f s blocking "
              "at the fence)",
              (long long)s->snap_step, waited);
}
