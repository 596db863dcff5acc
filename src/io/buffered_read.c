/* io/buffered_read.c - ckpt__read_extents_buffered and _cold: the extents
 * read through the page cache into their destinations and checksummed
 * right after (see buffered_read.h); ckpt__read_extents_streamed, the
 * same in long requests with the checksums on a helper behind the reader
 * (at the end of the file); ckpt__read_threads, how many threads may
 * read.
 *
 * Claiming, under `mu`: the next bytes are (extent `ext_i`, offset `off`
 * in it); a claim takes at most `request` bytes (CKPT__BUFFERED_PIECE, or
 * CKPT__COLD_REQUEST on the cold path) of that extent and, on the cold
 * path, goes on into the next extents while each starts where the one
 * before ends, one part per extent. The thread then reads the claim
 * without the lock (one pread, or one preadv for several parts),
 * checksums each part and, taking the lock again, xors each part's CRC,
 * shifted past the rest of its extent, into the extent's crc. The first
 * failure is saved with its message and sets `stop`; every claim checks
 * it.
 *
 * Scratch buffers are page-aligned (one request's size; on the 256 KiB
 * path the two the process keeps, io/scratch_pool.c) and a claim lands
 * at its file offset's place in a page, so that the kernel's copy out of the
 * page cache moves every byte to the same position in a page it came from (see
 * ckpt__scratch_for). They take the pieces of extents without a
 * destination and, on the 256 KiB path, those of extents whose destination
 * sits just past the file offset modulo 4 KiB (ckpt__read_aliases) where
 * the kernel's copy there was measured slow (ckpt__aliased_reads_bounce,
 * io/alias_probe.c), which are then copied on with the CRC fused into the
 * copy (ckpt__crc32c_copy_unprobed); every other piece is read straight into
 * its destination, except where the kernel's first write into a page of the
 * program's memory is slow (ckpt__first_touch_mode, io/touch_probe.c):
 * there pieces go straight, each long one timed, until one shows such a
 * first write; the rest of the read's pieces then bounce the same way.
 * The read's first timed piece is timed in the thread's CPU seconds (a
 * system call, once a read), which count the kernel's copy and its page
 * faults but not a wait on the disk: timed on the wall clock, the first
 * piece of a cold file, which waits for the disk to start, bounced every
 * later piece of the read even into variables the kernel had written
 * before. The later pieces are timed on the wall clock (cheap): timed in
 * CPU seconds, each would cost two calls (2.7-3.0 us) against a 256 KiB
 * copy's 50-60 on the EPYC VM (one machine's figures), and waiting for the
 * CPU-timed piece after a slow one before bouncing costs, into variables the
 * kernel has not written, that piece's first writes (0.4-0.6 ms there). The
 * cold path reads aliasing destinations straight too: its scratch would be a
 * whole request, out of the CPU's cache, and the bounce an extra pass over
 * memory (plus the scratch's page faults) that costs more than the slower
 * kernel copy, which overlaps the disk. Measured on a virtio disk with
 * read_ahead_kb 128, restores of a cold 64 MiB checkpoint into variables
 * from malloc (16 bytes past a page) against one read(), medians of 5
 * batches of 9 paired runs: 0.47-0.74 bounced, 0.79-0.89 straight (256
 * MiB, 3 batches of 7: 0.71-0.87 and 0.80-0.97); with both cores busy
 * with other work, 0.52-0.61 and 0.93-1.04. */
#include "buffered_read.h"

#include "common/internal.h"
#include "fs_internal.h"
#include "util/crc32c.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

typedef struct bstream {
    const ckpt_fs *fs;
    ckpt_file *file;
    const char *path;
    ckpt__extent *ext;
    size_t n;
    size_t request; /* bytes one claim reads at most */
    int cold;       /* the cold path's requests: a claim goes on into an
                       extent that starts where the previous one ends, and
                       aliasing destinations are read straight (no bounce
                       through scratch) */
    int bounce;     /* aliasing destinations bounce through scratch (not
                       cold, and slow here: ckpt__aliased_reads_bounce) */
    int touch;      /* CKPT__TOUCH_*: every destination bounces too
                       (BOUNCED), or pieces go straight, the long ones
                       timed, until one shows the kernel's first write
                       (TIMED, then BOUNCED; not cold, and such writes
                       slow here: ckpt__first_touch_mode) */
    int untimed;    /* TIMED: no piece timed yet; the first is timed in
                       the thread's CPU seconds */
    pthread_mutex_t mu;
    size_t ext_i; /* the next piece: extent and offset in it */
    uint64_t off;
    int stop;
    ckpt__saved_error failure; /* the first failure (code 0: none) */
} bstream;

/* Parts of a claim: consecutive file bytes, each part inside one extent. */
#define CLAIM_PARTS 64

typedef struct part {
    size_t i;     /* extent */
    uint64_t off; /* in the extent */
    size_t len;
} part;

typedef struct claim {
    part p[CLAIM_PARTS];
    int n;
    uint64_t at; /* file offset of the first byte */
    size_t len;  /* bytes in all parts */
} claim;

int ckpt__read_threads(const ckpt_fs *fs)
{
    cpu_set_t set;
    fs = ckpt_fs_or_default(fs);
    if (fs->version < 2 || !fs->open_read_direct)
        return 1;
    if (sched_getaffinity(0, sizeof(set), &set) != 0)
        return 1;
    return CPU_COUNT(&set) >= 2 ? 2 : 1;
}

/* The next claim (mu held): at most s->request bytes, from one extent or,
 * on the cold path, from extents that follow each other in the file without
 * a gap; 0 when none is left or the stream stopped. */
static int next_claim(bstream *s, claim *c)
{
    c->n = 0;
    c->len = 0;
    c->at = 0;
    while (!s->stop && s->ext_i < s->n && c->len < s->request &&
           c->n < CLAIM_PARTS) {
        const ckpt__extent *e = &s->ext[s->ext_i];
        uint64_t left = e->size - s->off;
        size_t room = s->request - c->len;
        part *p;
        if (left == 0) {
            s->ext_i++;
            s->off = 0;
            continue;
        }
        if (c->n > 0 && (!s->cold || e->offset + s->off != c->at + c->len))
            break;
        p = &c->p[c->n++];
        if (c->n == 1)
            c->at = e->offset + s->off;
        p->i = s->ext_i;
        p->off = s->off;
        p->len = left < room ? (size_t)left : room;
        s->off += p->len;
        c->len += p->len;
    }
    return c->n > 0;
}

/* Read the claim into the buffers of `iov` (one per part): one pread for
 * one part, else one preadv; a short read (which the file system may
 * return only at the end of the file) asks again for the rest. */
static int read_claim(const bstream *s, const claim *c, const ckpt_iovec *iov)
{
    size_t done = 0;
    while (done < c->len) {
        ckpt_iovec rest[CLAIM_PARTS];
        int k = 0, m = 0;
        size_t skip = done, got = 0;
        int err;
        for (; skip >= iov[k].len; k++)
            skip -= iov[k].len;
        for (; k < c->n; k++, skip = 0) {
            rest[m].base = (uint8_t *)iov[k].base + skip;
            rest[m++].len = iov[k].len - skip;
        }
        err = m == 1 ? ckpt__fs_pread(s->fs, s->file, s->path, rest[0].base,
                                      rest[0].len, c->at + done, &got)
                     : ckpt__fs_preadv(s->fs, s->file, s->path, rest, m,
                                       c->at + done, &got);
        if (err < 0)
            return err;
        if (got == 0) {
            const ckpt__extent *e;
            for (k = 0, skip = done; skip >= c->p[k].len; k++)
                skip -= c->p[k].len;
            e = &s->ext[c->p[k].i];
            return ckpt__error(
                CKPT_ECORRUPT,
                "%s: the file ends at or before byte %llu, inside the "
                "range of %llu bytes at offset %llu",
                s->path, (unsigned long long)(c->at + done),
                (unsigned long long)e->size, (unsigned long long)e->offset);
        }
        done += got;
    }
    return 0;
}

/* Claim, read and checksum until nothing is left or a read fails;
 * `scratch` (page-aligned, the largest claim's bytes + CKPT__SCRATCH_PAGE)
 * receives the parts of extents without a destination, of those whose
 * destination aliases and, once s->touch is CKPT__TOUCH_BOUNCED, every
 * part, at the claim's file offset's place in a page (ckpt__scratch_for)
 * and each part after the one before it. */
static void work(bstream *s, uint8_t *scratch)
{
    claim c;
    pthread_mutex_lock(&s->mu);
    while (next_claim(s, &c)) {
        ckpt_iovec iov[CLAIM_PARTS];
        uint8_t *dst[CLAIM_PARTS];
        uint32_t crc[CLAIM_PARTS];
        uint8_t *base = scratch ? ckpt__scratch_for(scratch, c.at) : NULL;
        int timed = 0;  /* a straight part decides s->touch */
        int by_cpu = 0; /* ... timed in this thread's CPU seconds */
        double t0 = 0.0;
        int err;
        for (int k = 0; k < c.n; k++) {
            const ckpt__extent *e = &s->ext[c.p[k].i];
            uint64_t at = e->offset + c.p[k].off;
            int bounce = 0;
            dst[k] = e->dst ? (uint8_t *)e->dst + c.p[k].off : NULL;
            if (dst[k] && scratch) {
                bounce = (s->bounce && ckpt__read_aliases(dst[k], at)) ||
                         s->touch == CKPT__TOUCH_BOUNCED;
                timed |= !bounce && s->touch == CKPT__TOUCH_TIMED &&
                         c.p[k].len >= CKPT__TOUCH_TIMED_MIN;
            }
            iov[k].base = dst[k] && !bounce ? dst[k] : base + (at - c.at);
            iov[k].len = c.p[k].len;
            if (!bounce)
                dst[k] = NULL; /* nothing to copy on */
        }
        by_cpu = timed && s->untimed;
        s->untimed &= !timed;
        pthread_mutex_unlock(&s->mu);
        if (timed)
            t0 = by_cpu ? ckpt__thread_seconds_now() : ckpt__seconds_now();
        err = read_claim(s, &c, iov);
        if (timed && err == 0) {
            double dt =
                (by_cpu ? ckpt__thread_seconds_now() : ckpt__seconds_now()) -
                t0;
            pthread_mutex_lock(&s->mu);
            if (dt > ckpt__first_touch_limit_s(c.len))
                s->touch = CKPT__TOUCH_BOUNCED;
            pthread_mutex_unlock(&s->mu);
        }
        for (int k = 0; err == 0 && k < c.n; k++) {
            const ckpt__extent *e = &s->ext[c.p[k].i];
            crc[k] = ckpt__crc32c_combine(
                dst[k] ? ckpt__crc32c_copy_unprobed(0, dst[k], iov[k].base,
                                                    iov[k].len)
                       : ckpt__crc32c(iov[k].base, iov[k].len),
                0, e->size - c.p[k].off - c.p[k].len);
        }
        pthread_mutex_lock(&s->mu);
        if (err < 0) {
            if (s->failure.code == 0)
                ckpt__error_save(&s->failure);
            s->stop = 1;
        } else {
            for (int k = 0; k < c.n; k++)
                s->ext[c.p[k].i].crc ^= crc[k];
        }
    }
    pthread_mutex_unlock(&s->mu);
}

typedef struct helper_arg {
    bstream *s;
    uint8_t *scratch;
} helper_arg;

static void *helper_main(void *arg)
{
    helper_arg *h = arg;
    work(h->s, h->scratch);
    return NULL;
}

uint8_t *ckpt__scratch_for(uint8_t *scratch, uint64_t file_offset)
{
    return scratch + file_offset % CKPT__SCRATCH_PAGE;
}

/* The bytes the extents hold, counted until they pass `request` (more
 * than one request's bytes are worth a second thread; fewer bound what a
 * claim, and so a scratch buffer, holds). */
static uint64_t bytes_past_request(const ckpt__extent *ext, size_t n,
                                   size_t request)
{
    uint64_t bytes = 0;
    for (size_t i = 0; i < n && bytes <= request; i++)
        bytes += ext[i].size;
    return bytes;
}

int ckpt__read_aliases(const void *dst, uint64_t file_offset)
{
    uint64_t ahead =
        ((uint64_t)(uintptr_t)dst - file_offset) % (uint64_t)CKPT__SCRATCH_PAGE;
    return ahead > 0 && ahead < CKPT__ALIAS_WINDOW;
}

/* Whether some extent's destination aliases its file offset (the probe of
 * ckpt__aliased_reads_bounce runs only for a read that has one). */
static int any_aliases(const ckpt__extent *ext, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ext[i].size > 0 && ext[i].dst &&
            ckpt__read_aliases(ext[i].dst, ext[i].offset))
            return 1;
    return 0;
}

/* Whether some piece may go through a scratch buffer: any, unless
 * `touch` is CKPT__TOUCH_STRAIGHT; else an extent without a destination,
 * or, with `bounce`, one whose destination aliases its file offset. */
static int needs_scratch(const ckpt__extent *ext, size_t n, int bounce,
                         int touch)
{
    for (size_t i = 0; i < n; i++)
        if (ext[i].size > 0 &&
            (touch != CKPT__TOUCH_STRAIGHT || !ext[i].dst ||
             (bounce && ckpt__read_aliases(ext[i].dst, ext[i].offset))))
            return 1;
    return 0;
}

static int read_extents(const ckpt_fs *fs, ckpt_file *file, const char *path,
                        ckpt__extent *ext, size_t n, int threads,
                        size_t request)
{
    bstream s;
    helper_arg h;
    pthread_t helper;
    uint8_t *raw[2] = {NULL, NULL}; /* allocations; scratch: page-aligned */
    uint8_t *scratch[2] = {NULL, NULL};
    uint8_t *pool = NULL; /* or the process's kept scratch buffers */
    int cold = request > CKPT__BUFFERED_PIECE;
    int touch = cold ? CKPT__TOUCH_STRAIGHT : ckpt__first_touch_mode();
    int bounce = !cold && any_aliases(ext, n) && ckpt__aliased_reads_bounce();
    int scratched = needs_scratch(ext, n, bounce, touch);
    uint64_t bytes = bytes_past_request(ext, n, request);
    int helped = threads > 1 && bytes > request;
    /* a claim holds at most this */
    size_t claim_max = bytes < request ? (size_t)bytes : request;
    int started = 0;
    int err = 0;

    fs = ckpt_fs_or_default(fs);
    for (size_t i = 0; i < n; i++)
        ext[i].crc = 0;
    memset(&s, 0, sizeof(s));
    s.fs = fs;
    s.file = file;
    s.path = path;
    s.ext = ext;
    s.n = n;
    s.request = request;
    s.cold = cold;
    s.bounce = bounce;
    s.touch = touch;
    s.untimed = 1;
    if (scratched && !cold)
        pool = ckpt__scratch_pool_take(claim_max + CKPT__SCRATCH_PAGE);
    for (int t = 0; pool && t < 1 + helped; t++)
        scratch[t] = pool + (size_t)t * CKPT__SCRATCH_BYTES;
    for (int t = 0; scratched && !pool && t < 1 + helped; t++) {
        raw[t] = ckpt__malloc(claim_max + 2 * CKPT__SCRATCH_PAGE);
        if (!raw[t] && t == 0)
            return ckpt__error_oom();
        if (raw[t])
            scratch[t] = raw[t] + (CKPT__SCRATCH_PAGE -
                                   (uintptr_t)raw[t] % CKPT__SCRATCH_PAGE) %
                                      CKPT__SCRATCH_PAGE;
    }
    pthread_mutex_init(&s.mu, NULL);
    if (helped && (!scratched || scratch[1])) {
        h.s = &s;
        h.scratch = scratch[1];
        started = ckpt__thread_create(&helper, helper_main, &h) == 0;
    }
    work(&s, scratch[0]);
    if (started)
        pthread_join(helper, NULL);
    pthread_mutex_destroy(&s.mu);
    if (s.failure.code < 0)
        err = ckpt__error_restore(&s.failure);
    ckpt__scratch_pool_give(pool);
    ckpt__free(raw[1]);
    ckpt__free(raw[0]);
    return err;
}

int ckpt__read_extents_buffered(const ckpt_fs *fs, ckpt_file *file,
                                const char *path, ckpt__extent *ext, size_t n,
                                int threads)
{
    return read_extents(fs, file, path, ext, n, threads, CKPT__BUFFERED_PIECE);
}

int ckpt__read_extents_cold(const ckpt_fs *fs, ckpt_file *file,
                            const char *path, ckpt__extent *ext, size_t n,
                            int threads)
{
    return read_extents(fs, file, path, ext, n, threads, CKPT__COLD_REQUEST);
}

/* ---- the streamed path --------------------------------------------------
 *
 * The calling thread claims requests (next_claim with s->request set to
 * half of what is left, between the two bounds) and reads each one; a
 * claim read is queued, and the helper takes it from the queue and
 * checksums its parts. At most STREAM_QUEUE claims wait: a reader that
 * gets that far ahead of its checksums waits for room (the CRC reads
 * memory faster than a device that needs this path fills it). */

#define STREAM_QUEUE 4

static atomic_int stream_alone; /* tests: 1 starts no helper */

void ckpt__streamed_alone_force(int alone)
{
    atomic_store(&stream_alone, alone);
}

typedef struct squeue {
    bstream *s;
    claim ring[STREAM_QUEUE];
    size_t head, tail; /* claims taken by the helper, claims queued */
    int reader_done;
    pthread_cond_t ready; /* a claim queued, or the reader is done */
    pthread_cond_t room;  /* a claim taken */
    uint64_t left;        /* bytes not claimed yet */
} squeue;

/* Each part's CRC, shifted past the rest of its extent and xored into the
 * extent's crc (`mu` not held: the caller takes it to xor). */
static void claim_crcs(const bstream *s, const claim *c, uint32_t *crc)
{
    for (int k = 0; k < c->n; k++) {
        const ckpt__extent *e = &s->ext[c->p[k].i];
        crc[k] = ckpt__crc32c_combine(
            ckpt__crc32c((const uint8_t *)e->dst + c->p[k].off, c->p[k].len), 0,
            e->size - c->p[k].off - c->p[k].len);
    }
}

static void claim_xor(bstream *s, const claim *c, const uint32_t *crc)
{
    for (int k = 0; k < c->n; k++)
        s->ext[c->p[k].i].crc ^= crc[k];
}

static void *stream_helper_main(void *arg)
{
    squeue *q = arg;
    bstream *s = q->s;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        claim c;
        uint32_t crc[CLAIM_PARTS];
        while (q->head == q->tail && !q->reader_done)
            pthread_cond_wait(&q->ready, &s->mu);
        if (q->head == q->tail)
            break; /* the reader is done and every claim checksummed */
        c = q->ring[q->head % STREAM_QUEUE];
        pthread_mutex_unlock(&s->mu);
        claim_crcs(s, &c, crc);
        pthread_mutex_lock(&s->mu);
        claim_xor(s, &c, crc);
        q->head++;
        pthread_cond_signal(&q->room);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* The next request's size (mu held): half of what is left, bounded. */
static size_t stream_request(const squeue *q)
{
    uint64_t half = q->left / 2;
    if (half < CKPT__STREAM_MIN_REQUEST)
        half = CKPT__STREAM_MIN_REQUEST;
    return half > CKPT__STREAM_MAX_REQUEST ? CKPT__STREAM_MAX_REQUEST
                                           : (size_t)half;
}

/* The reader: claim, read, queue (or, without a helper, checksum). */
static void stream_read(squeue *q, int helped)
{
    bstream *s = q->s;
    claim c;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        ckpt_iovec iov[CLAIM_PARTS];
        uint32_t crc[CLAIM_PARTS];
        int err;
        while (helped && q->tail - q->head == STREAM_QUEUE)
            pthread_cond_wait(&q->room, &s->mu);
        s->request = stream_request(q);
        if (!next_claim(s, &c))
            break;
        q->left -= c.len;
        pthread_mutex_unlock(&s->mu);
        for (int k = 0; k < c.n; k++) {
            iov[k].base = (uint8_t *)s->ext[c.p[k].i].dst + c.p[k].off;
            iov[k].len = c.p[k].len;
        }
        err = read_claim(s, &c, iov);
        if (err == 0 && !helped)
            claim_crcs(s, &c, crc);
        pthread_mutex_lock(&s->mu);
        if (err < 0) {
            ckpt__error_save(&s->failure);
            s->stop = 1;
        } else if (helped) {
            q->ring[q->tail % STREAM_QUEUE] = c;
            q->tail++;
            pthread_cond_signal(&q->ready);
        } else {
            claim_xor(s, &c, crc);
        }
    }
    q->reader_done = 1;
    pthread_cond_signal(&q->ready);
    pthread_mutex_unlock(&s->mu);
}

int ckpt__stream_suits(const ckpt__extent *ext, size_t n, int threads)
{
    return ckpt__long_restore(ext, n, threads) &&
           ckpt__first_touch_mode() == CKPT__TOUCH_STRAIGHT;
}

int ckpt__long_restore(const ckpt__extent *ext, size_t n, int threads)
{
    uint64_t bytes = 0;
    if (threads < 2)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (ext[i].size > 0 && !ext[i].dst)
            return 0;
        bytes += ext[i].size;
    }
    return bytes >= CKPT__STREAM_MIN_BYTES;
}

int ckpt__read_extents_streamed(const ckpt_fs *fs, ckpt_file *file,
                                const char *path, ckpt__extent *ext, size_t n)
{
    bstream s;
    squeue q;
    pthread_t helper;
    int helped;
    int err = 0;

    for (size_t i = 0; i < n; i++)
        if (ext[i].size > 0 && !ext[i].dst)
            return ckpt__error(CKPT_EINVAL,
                               "%s: the streamed read needs a destination "
                               "for every range (the one at offset %llu "
                               "has none)",
                               path, (unsigned long long)ext[i].offset);
    memset(&s, 0, sizeof(s));
    memset(&q, 0, sizeof(q));
    s.fs = ckpt_fs_or_default(fs);
    s.file = file;
    s.path = path;
    s.ext = ext;
    s.n = n;
    s.cold = 1; /* claims go on into the next extent without a gap */
    q.s = &s;
    for (size_t i = 0; i < n; i++) {
        ext[i].crc = 0;
        q.left += ext[i].size;
    }
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&q.ready, NULL);
    pthread_cond_init(&q.room, NULL);
    helped = !atomic_load(&stream_alone) &&
             ckpt__thread_create(&helper, stream_helper_main, &q) == 0;
    stream_read(&q, helped);
    if (helped)
        pthread_join(helper, NULL);
    pthread_cond_destroy(&q.room);
    pthread_cond_destroy(&q.ready);
    pthread_mutex_destroy(&s.mu);
    if (s.failure.code < 0)
        err = ckpt__error_restore(&s.failure);
    return err;
}
