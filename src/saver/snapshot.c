/* saver/snapshot.c - staging images for async saves and the snapshot copy
 * into them: the part of an async save the training loop may wait for.
 *
 * An image is laid out exactly as the data file will be: each variable's
 * record at its offset, contiguous (TensorFlow's alignment 1). It is mapped
 * page-aligned (so it can be written with O_DIRECT), on huge pages where
 * the kernel has them unless the first copies fault it in (prefault says
 * why), and pre-faulted once, then reused for every save,
 * so a snapshot costs one copy into warm memory and no page faults.
 *
 * The variables in plain memory are copied in pieces of at most
 * CKPT__PIECE_BYTES, which any thread may claim (ckpt__snapshot_claim): the
 * caller and an idle writer share a snapshot that way, large variables
 * included, and a wait for the other thread is at most one piece. Each
 * piece's CRC-32C is either fused into its copy (one pass over the source)
 * or left to the writer, which checksums the image before writing
 * (ckpt__image_seal): whichever of the two copies is faster on this machine
 * keeps the loop's wait shortest: both savers time their first snapshots
 * (ckpt__checksum_choice, at the end of this file). Variables
 * behind read callbacks are copied by the calling thread only. */
#include "saver_internal.h"
#include "util/crc32c.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels say EINVAL */
#endif

/* Fault every page of a fresh image in now, when asked (`now`): on
 * transparent huge pages where the kernel offers them (MADV_HUGEPAGE; a
 * kernel or configuration without them just says no), with
 * MADV_POPULATE_WRITE, or by touching each page where that is unknown (an
 * older kernel). 0, or ENOMEM when the kernel could not back the pages (a
 * memory cgroup at its limit): touching them then would only call in the
 * OOM killer, so the save fails instead.
 *
 * Not now (a saver fenced from the start: the writer's first copies fault
 * the image in while the step's forward and backward run), no huge pages
 * are asked for: plain pages, unless transparent_hugepage/enabled is
 * "always" (then the kernel decides, as for any memory).
 * Each first fault of a huge page may wait for the kernel's direct
 * compaction (transparent_hugepage/defrag "madvise", Debian's default),
 * and that wait then holds the first fence: on the Xeon VM the first
 * snapshot of ckpt-train's 145 MiB kept its loop waiting 0.19-0.32 s
 * (0.1 ms for the others), 4 paired whole runs 1.040x (0.998-1.059)
 * those of --mode none at the mean against 1.010x (0.999-1.027) on plain
 * pages. Where the image is
 * faulted in now, the first save_async waits for the faults anyway, and
 * huge pages make every later copy cheaper where cores are shared: the
 * worst rank's blocking on 2 MPI ranks, 2 x 5 paired repetitions, 0.81
 * (0.68-0.86) and 0.80 (0.66-1.06) at the median on huge pages against
 * 0.95 (0.80-1.20) and 0.88 (0.79-1.15) on plain ones (a lone copy, 21
 * runs, 9.41 (8.24-10.25) against 9.66 (8.28-21.45) ms for 64 MiB; all on
 * the one Xeon VM). Asked
 * for after the first copies instead, khugepaged gathers them 16 MiB
 * every 10 s, stalling each copy that meets a gathering. */
static int prefault(void *p, size_t len, size_t page, int now)
{
    if (!now)
        return 0;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, len, MADV_HUGEPAGE);
#endif
    if (madvise(p, len, MADV_POPULATE_WRITE) == 0)
        return 0;
    if (errno == ENOMEM)
        return ENOMEM;
    for (size_t off = 0; off < len; off += page)
        ((volatile uint8_t *)p)[off] = 0;
    return 0;
}

int ckpt__image_alloc(ckpt__image *img, uint64_t bytes, size_t nvars,
                      size_t npieces, int prefault_now)
{
    size_t page = page_size();
    size_t len;
    void *p;
    if (bytes > SIZE_MAX - page)
        return ckpt__error(CKPT_ENOMEM,
                           "staging image of %llu bytes is too "
                           "large",
                           (unsigned long long)bytes);
    len = ((size_t)bytes + page - 1) / page * page;
    if (len == 0)
        len = page;
    /* mapped, not from ckpt__malloc: the image must be page-aligned (it is
     * written with O_DIRECT), pre-faulted once (prefault) and handed
     * back to the system whole when freed; a ckpt_allocator offers none of
     * that (malloc/realloc/free only). At a 2 MiB boundary
     * (ckpt__map_aligned), so that all of it can be huge pages where
     * prefault asks for them. Its crc array below, and everything
     * else of a saver, still goes through the allocator; a mapping refused
     * for lack of memory is CKPT_ENOMEM, as a failed allocation is. */
    p = ckpt__map_aligned(len);
    if (!p)
        return ckpt__error_errno(errno, "mapping a staging image of %zu bytes",
                                 len);
    if (prefault(p, len, page, prefault_now) != 0) {
        ckpt__unmap_huge(p, len);
        return ckpt__error_errno(
            ENOMEM, "faulting in a staging image of %zu bytes", len);
    }
    img->crcs = ckpt__calloc(nvars ? nvars : 1, sizeof(*img->crcs));
    img->piece_crcs =
        ckpt__calloc(npieces ? npieces : 1, sizeof(*img->piece_crcs));
    if (!img->crcs || !img->piece_crcs) {
        ckpt__free(img->crcs);
        ckpt__free(img->piece_crcs);
        img->crcs = NULL;
        img->piece_crcs = NULL;
        ckpt__unmap_huge(p, len);
        return ckpt__error_oom();
    }
    img->ptr = p;
    img->mapped = len;
    return 0;
}

void ckpt__image_free(ckpt__image *img)
{
    if (img->ptr)
        ckpt__unmap_huge(img->ptr, img->mapped);
    ckpt__free(img->crcs);
    ckpt__free(img->piece_crcs);
    img->crcs = NULL;
    img->piece_crcs = NULL;
    img->ptr = NULL;
    img->mapped = 0;
}

/* Whether variable `v` belongs to the plan's first group (see plan). */
static int small_var(const ckpt__var *v)
{
    return v->bytes <= CKPT__EAGER_VAR_BYTES;
}

int ckpt__snapshot_plan(const ckpt__var *vars, size_t n, uint64_t piece_bytes,
                        ckpt__piece **out, size_t *nout)
{
    size_t count = 0, k = 0;
    ckpt__piece *p;
    *out = NULL;
    *nout = 0;
    for (size_t i = 0; i < n; i++)
        if (!vars[i].v.read)
            count += (size_t)((vars[i].bytes + piece_bytes - 1) / piece_bytes);
    if (count == 0)
        return 0;
    p = ckpt__calloc(count, sizeof(*p));
    if (!p)
        return ckpt__error_oom();
    for (int small = 1; small >= 0; small--) {
        for (size_t i = 0; i < n; i++) {
            if (vars[i].v.read || small_var(&vars[i]) != small)
                continue;
            for (uint64_t off = 0; off < vars[i].bytes; off += piece_bytes) {
                uint64_t left = vars[i].bytes - off;
                p[k].var = i;
                p[k].offset = off;
                p[k].len = left < piece_bytes ? left : piece_bytes;
                k++;
            }
        }
    }
    *out = p;
    *nout = count;
    return 0;
}

size_t ckpt__snapshot_eager_pieces(const ckpt__piece *p, size_t n)
{
    uint64_t total = 0;
    size_t k = 0;
    while (k < n && p[k].offset == 0 && p[k].len <= CKPT__EAGER_VAR_BYTES &&
           total + p[k].len <= CKPT__EAGER_TOTAL_BYTES) {
        total += p[k].len;
        k++;
    }
    return k;
}

static void copy_piece(const ckpt__snapshot_work *w, size_t k)
{
    const ckpt__piece *p = &w->pieces[k];
    const ckpt__var *v = &w->vars[p->var];
    uint8_t *dst = w->img->ptr + v->offset + p->offset;
    const uint8_t *src = (const uint8_t *)v->v.data + p->offset;
    if (w->checksum)
        w->img->piece_crcs[k] = ckpt__crc32c_copy(0, dst, src, (size_t)p->len);
    else
        memcpy(dst, src, (size_t)p->len);
}

void ckpt__snapshot_copy_first(const ckpt__snapshot_work *w, size_t n)
{
    for (size_t k = 0; k < n && k < w->npieces; k++)
        copy_piece(w, k);
}

void ckpt__snapshot_work_init(ckpt__snapshot_work *w, const ckpt__var *vars,
                              size_t nvars, const ckpt__piece *pieces,
                              size_t npieces, ckpt__image *img, int checksum,
                              size_t first)
{
    w->vars = vars;
    w->nvars = nvars;
    w->pieces = pieces;
    w->npieces = npieces;
    w->img = img;
    w->checksum = checksum;
    atomic_store(&w->next, first);
}

size_t ckpt__snapshot_claim(ckpt__snapshot_work *w)
{
    size_t copied = 0;
    for (;; copied++) {
        size_t k = atomic_fetch_add(&w->next, 1);
        if (k >= w->npieces)
            return copied;
        copy_piece(w, k);
    }
}

int ckpt__snapshot_callbacks(ckpt__snapshot_work *w)
{
    for (size_t i = 0; i < w->nvars; i++) {
        const ckpt__var *v = &w->vars[i];
        uint8_t *dst = w->img->ptr + v->offset;
        int err;
        if (!v->v.read)
            continue;
        err = ckpt__var_read(&v->v, v->name, dst, (size_t)v->bytes);
        if (err < 0) {
            atomic_store(&w->next, w->npieces); /* nothing more to claim */
            return err;
        }
        if (w->checksum)
            w->img->crcs[i] = ckpt__crc32c(dst, (size_t)v->bytes);
    }
    return 0;
}

int ckpt__snapshot_vars(const ckpt__var *vars, size_t n, ckpt__image *img)
{
    for (size_t i = 0; i < n; i++) {
        const ckpt__var *v = &vars[i];
        uint8_t *dst = img->ptr + v->offset;
        if (v->v.read) {
            int err = ckpt__var_read(&v->v, v->name, dst, (size_t)v->bytes);
            if (err < 0)
                return err;
            img->crcs[i] = ckpt__crc32c(dst, (size_t)v->bytes);
        } else {
            img->crcs[i] =
                ckpt__crc32c_copy(0, dst, v->v.data, (size_t)v->bytes);
        }
    }
    return 0;
}

int ckpt__snapshot_run_caller(ckpt__snapshot_work *w)
{
    int err = ckpt__snapshot_callbacks(w);
    if (err < 0)
        return err;
    ckpt__snapshot_claim(w);
    return 0;
}

void ckpt__image_seal(const ckpt__snapshot_work *w)
{
    ckpt__image *img = w->img;
    if (!w->checksum) {
        for (size_t i = 0; i < w->nvars; i++)
            img->crcs[i] = ckpt__crc32c(img->ptr + w->vars[i].offset,
                                        (size_t)w->vars[i].bytes);
        return;
    }
    for (size_t i = 0; i < w->nvars; i++)
        if (!w->vars[i].v.read)
            img->crcs[i] = 0; /* the CRC of no bytes; pieces extend it */
    for (size_t k = 0; k < w->npieces; k++) {
        const ckpt__piece *p = &w->pieces[k];
        img->crcs[p->var] =
            ckpt__crc32c_combine(img->crcs[p->var], img->piece_crcs[k], p->len);
    }
}

/* ---- choosing where the checksum is computed ------------------------------
 * The first CKPT__CHECKSUM_PROBES snapshots alternate between the fused
 * copy and plain copies (fused first) and are timed; below
 * PROBE_MIN_BYTES of state the difference is too small to time reliably
 * and the fused copy is kept. A snapshot copies the whole state just after
 * the loop's step wrote it, usually more than the caches hold, where the
 * fused copy runs at memory speed; a copy of one variable timed in
 * isolation (in cache) favours plain copies, which then also cost the
 * writer a second pass over the image. Hence timing the snapshots
 * themselves. */
#define PROBE_MIN_BYTES ((uint64_t)4 << 20)
/* Plain copies leave a pass over the image to the writer, which costs
 * memory bandwidth the loop shares: chosen only when clearly faster. */
#define PLAIN_MARGIN 0.85

void ckpt__checksum_choice_init(ckpt__checksum_choice *c, uint64_t state_bytes)
{
    const char *force = getenv("CKPT_SNAPSHOT_CHECKSUM");
    /* The CRC kernel and whether long fused copies stream are chosen once
     * per process, at the first use: here, not in a save's snapshot. */
    (void)ckpt__crc32c_copy_streams();
    c->checksum = 1;
    c->probes = 0;
    c->fused_s = -1.0;
    c->plain_s = -1.0;
    if (force && (strcmp(force, "writer") == 0 || strcmp(force, "copy") == 0)) {
        c->checksum = strcmp(force, "copy") == 0;
        c->probes = CKPT__CHECKSUM_PROBES;
    } else if (state_bytes < PROBE_MIN_BYTES) {
        c->probes = CKPT__CHECKSUM_PROBES;
    }
}

int ckpt__checksum_choice_timed(ckpt__checksum_choice *c, int fused,
                                double seconds)
{
    double *best = fused ? &c->fused_s : &c->plain_s;
    if (c->probes >= CKPT__CHECKSUM_PROBES || seconds <= 0)
        return 0;
    if (*best < 0 || seconds < *best)
        *best = seconds;
    if (++c->probes < CKPT__CHECKSUM_PROBES) {
        c->checksum = !fused; /* alternate */
        return 0;
    }
    c->checksum = !(c->plain_s > 0 && c->fused_s > 0 &&
                    c->plain_s < PLAIN_MARGIN * c->fused_s);
    return 1;
}
