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
    err = ckpt__image_alloc(img, s->image_bytes, s->nowned, s->npieces, 1);
    if (err == 0 && !s->checksum_started) {
        ckpt__checksum_choice_init(&s->cs, s->image_bytes);
        s->checksum_started = 1;
    }
    return err;
}

static void work_of(const ckpt_mpi_saver *s, ckpt__image *img, int checksum,
                    ckpt__snapshot_work *w)
{
    memset(w, 0, sizeof(*w));
    w->vars = s->owned;
    w->nvars = s->nowned;
    w->pieces = s->pieces;
    w->npieces = s->npieces;
    w->img = img;
    w->checksum = checksum;
    atomic_store(&w->next, 0);
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
