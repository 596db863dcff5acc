/* io/buffered_read.c - ckpt__read_extents_buffered: pieces of the extents
 * read through the page cache into their destinations and checksummed
 * right after (see buffered_read.h); ckpt__read_threads, how many threads
 * may read.
 *
 * Claiming, under `mu`: the next piece is (extent `ext_i`, offset `off` in
 * it); a claim takes at most CKPT__BUFFERED_PIECE bytes of that extent and
 * moves on. The thread then reads and checksums the piece without the
 * lock and, taking it again, xors the piece's CRC, shifted past the rest
 * of the extent, into the extent's crc. The first failure is saved with
 * its message and sets `stop`; every claim checks it.
 *
 * Scratch buffers are page-aligned and a piece lands at its file offset's
 * place in a page, so that the kernel's copy out of the page cache moves
 * every byte to the same position in a page it came from (see
 * ckpt__scratch_for). They take the pieces of extents without a
 * destination, and those of extents whose destination sits just past the
 * file offset modulo 4 KiB (ckpt__read_aliases), which are then copied on
 * with the CRC fused into the copy (ckpt__crc32c_copy); every other piece
 * is read straight into its destination. */
#include "buffered_read.h"

#include "common/internal.h"
#include "fs_internal.h"
#include "util/crc32c.h"

#include <pthread.h>
#include <sched.h>
#include <string.h>

typedef struct bstream {
    const ckpt_fs *fs;
    ckpt_file *file;
    const char *path;
    ckpt__extent *ext;
    size_t n;
    pthread_mutex_t mu;
    size_t ext_i; /* the next piece: extent and offset in it */
    uint64_t off;
    int stop;
    ckpt__saved_error failure; /* the first failure (code 0: none) */
} bstream;

typedef struct claim {
    size_t i;     /* extent */
    uint64_t off; /* in the extent */
    size_t len;
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

/* The next piece (mu held); 0 when none is left or the stream stopped. */
static int next_claim(bstream *s, claim *c)
{
    while (!s->stop && s->ext_i < s->n) {
        const ckpt__extent *e = &s->ext[s->ext_i];
        uint64_t left = e->size - s->off;
        if (left == 0) {
            s->ext_i++;
            s->off = 0;
            continue;
        }
        c->i = s->ext_i;
        c->off = s->off;
        c->len =
            left < CKPT__BUFFERED_PIECE ? (size_t)left : CKPT__BUFFERED_PIECE;
        s->off += c->len;
        return 1;
    }
    return 0;
}

/* Read the piece into `buf`, looping over short reads. */
static int read_piece(const bstream *s, const claim *c, uint8_t *buf)
{
    const ckpt__extent *e = &s->ext[c->i];
    size_t done = 0;
    while (done < c->len) {
        uint64_t at = e->offset + c->off + done;
        size_t got = 0;
        int err =
            ckpt__fs_pread(s->fs, s->file, buf + done, c->len - done, at, &got);
        if (err < 0)
            return err;
        if (got == 0)
            return ckpt__error(CKPT_ECORRUPT,
                               "%s: the file ends at byte %llu, inside the "
                               "range of %llu bytes at offset %llu",
                               s->path, (unsigned long long)at,
                               (unsigned long long)e->size,
                               (unsigned long long)e->offset);
        done += got;
    }
    return 0;
}

/* Claim, read and checksum pieces until none is left or one fails;
 * `scratch` (CKPT__SCRATCH_BYTES, page-aligned) receives pieces of extents
 * without a destination, at the piece's offset in its page
 * (ckpt__scratch_for). */
static void work(bstream *s, uint8_t *scratch)
{
    claim c;
    pthread_mutex_lock(&s->mu);
    while (next_claim(s, &c)) {
        ckpt__extent *e = &s->ext[c.i];
        uint64_t at = e->offset + c.off;
        uint8_t *dst = e->dst ? (uint8_t *)e->dst + c.off : NULL;
        int bounce = dst && scratch && ckpt__read_aliases(dst, at);
        uint8_t *buf = dst && !bounce ? dst : ckpt__scratch_for(scratch, at);
        uint32_t crc = 0;
        int err;
        pthread_mutex_unlock(&s->mu);
        err = read_piece(s, &c, buf);
        if (err == 0)
            crc = ckpt__crc32c_combine(
                bounce ? ckpt__crc32c_copy(0, dst, buf, c.len)
                       : ckpt__crc32c(buf, c.len),
                0, e->size - c.off - c.len);
        pthread_mutex_lock(&s->mu);
        if (err < 0) {
            if (s->failure.code == 0)
                ckpt__error_save(&s->failure);
            s->stop = 1;
        } else {
            e->crc ^= crc;
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

/* Whether the extents hold at least two pieces (worth a second thread). */
static int two_pieces_or_more(const ckpt__extent *ext, size_t n)
{
    uint64_t pieces = 0;
    for (size_t i = 0; i < n && pieces < 2; i++)
        pieces +=
            (ext[i].size + CKPT__BUFFERED_PIECE - 1) / CKPT__BUFFERED_PIECE;
    return pieces >= 2;
}

int ckpt__read_aliases(const void *dst, uint64_t file_offset)
{
    uint64_t ahead =
        ((uint64_t)(uintptr_t)dst - file_offset) % (uint64_t)CKPT__SCRATCH_PAGE;
    return ahead > 0 && ahead < CKPT__ALIAS_WINDOW;
}

/* Whether some piece goes through a scratch buffer: an extent without a
 * destination, or one whose destination aliases its file offset. */
static int needs_scratch(const ckpt__extent *ext, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ext[i].size > 0 &&
            (!ext[i].dst || ckpt__read_aliases(ext[i].dst, ext[i].offset)))
            return 1;
    return 0;
}

int ckpt__read_extents_buffered(const ckpt_fs *fs, ckpt_file *file,
                                const char *path, ckpt__extent *ext, size_t n,
                                int threads)
{
    bstream s;
    helper_arg h;
    pthread_t helper;
    uint8_t *raw[2] = {NULL, NULL}; /* allocations; scratch: page-aligned */
    uint8_t *scratch[2] = {NULL, NULL};
    int scratched = needs_scratch(ext, n);
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
    for (int t = 0; scratched && t < 2; t++) {
        raw[t] = ckpt__malloc(CKPT__SCRATCH_BYTES + CKPT__SCRATCH_PAGE);
        if (!raw[t] && t == 0)
            return ckpt__error_oom();
        if (raw[t])
            scratch[t] = raw[t] + (CKPT__SCRATCH_PAGE -
                                   (uintptr_t)raw[t] % CKPT__SCRATCH_PAGE) %
                                      CKPT__SCRATCH_PAGE;
    }
    pthread_mutex_init(&s.mu, NULL);
    if (threads > 1 && two_pieces_or_more(ext, n) &&
        (!scratched || scratch[1])) {
        h.s = &s;
        h.scratch = scratch[1];
        started = pthread_create(&helper, NULL, helper_main, &h) == 0;
    }
    work(&s, scratch[0]);
    if (started)
        pthread_join(helper, NULL);
    pthread_mutex_destroy(&s.mu);
    if (s.failure.code < 0)
        err = ckpt__error_restore(&s.failure);
    ckpt__free(raw[1]);
    ckpt__free(raw[0]);
    return err;
}
