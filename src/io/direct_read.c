/* io/direct_read.c - ckpt__read_extents_direct: plans aligned pieces over
 * the extents, runs the reader threads that fill the ring, and copies and
 * checksums each piece on the calling thread (see direct_read.h).
 *
 * Ring protocol, all under `mu`: a reader claims piece k (`next`), waits
 * until slot k % RING is free (k < consumed + RING), reads into it without
 * the lock, then marks the slot as holding k (`held[slot] = k + 1`). The
 * consumer takes pieces in order, waiting for `held` to name the piece, and
 * frees the slot by advancing `consumed`. The first failure sets `stop`,
 * which every wait also watches. */
#include "direct_read.h"

#include "common/internal.h"
#include "fs_internal.h"
#include "util/crc32c.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define PIECE ((size_t)512 << 10)
#define RING 8
#define READERS 2
#define ALIGN ((uint64_t)CKPT_DIRECT_ALIGN)

typedef struct piece {
    uint64_t offset;
    size_t len;
} piece;

typedef struct stream {
    const ckpt_fs *fs;
    ckpt_file *file;
    const piece *pieces;
    size_t npieces;
    uint8_t *ring[RING];
    size_t got[RING];
    size_t held[RING]; /* piece index + 1 the slot holds; 0: none */
    pthread_mutex_t mu;
    pthread_cond_t filled; /* a slot was filled, or stop was set */
    pthread_cond_t freed;  /* consumed advanced, or stop was set */
    size_t next;
    size_t consumed;
    int stop;
    ckpt__saved_error failure; /* the first reader failure (code 0: none) */
} stream;

static uint64_t align_down(uint64_t x)
{
    return x & ~(ALIGN - 1);
}

static uint64_t align_up(uint64_t x)
{
    return (x + ALIGN - 1) & ~(ALIGN - 1);
}

static int check_extents(const char *path, const ckpt__extent *ext, size_t n)
{
    uint64_t end = 0; /* of the non-empty extents so far */
    for (size_t i = 0; i < n; i++) {
        if (ext[i].offset > (uint64_t)INT64_MAX - ext[i].size ||
            (i > 0 && ext[i].offset < ext[i - 1].offset) ||
            (ext[i].size > 0 && ext[i].offset < end))
            return ckpt__error(CKPT_EINVAL,
                               "direct read %s: extent %zu (offset %llu, %llu "
                               "bytes) is out of order, overlaps or is out of "
                               "range",
                               path, i, (unsigned long long)ext[i].offset,
                               (unsigned long long)ext[i].size);
        if (ext[i].size > 0)
            end = ext[i].offset + ext[i].size;
    }
    return 0;
}

/* Cover the extents with aligned pieces of at most PIECE bytes: extents
 * closer than a piece share a run (the gap is read and dropped). With
 * `out` NULL only counts. */
static size_t plan_pieces(const ckpt__extent *ext, size_t n, piece *out)
{
    size_t count = 0;
    size_t i = 0;
    while (i < n) {
        uint64_t start, end;
        if (ext[i].size == 0) {
            i++;
            continue;
        }
        start = align_down(ext[i].offset);
        end = align_up(ext[i].offset + ext[i].size);
        for (i++; i < n; i++) {
            if (ext[i].size == 0)
                continue;
            if (align_down(ext[i].offset) > end + PIECE)
                break;
            end = align_up(ext[i].offset + ext[i].size);
        }
        for (uint64_t o = start; o < end; o += PIECE) {
            if (out) {
                out[count].offset = o;
                out[count].len = (size_t)(end - o < PIECE ? end - o : PIECE);
            }
            count++;
        }
    }
    return count;
}

static void *reader_main(void *arg)
{
    stream *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        size_t k = s->next;
        size_t slot = k % RING;
        size_t got = 0;
        int err;
        if (s->stop || k >= s->npieces)
            break;
        s->next++;
        while (!s->stop && k >= s->consumed + RING)
            pthread_cond_wait(&s->freed, &s->mu);
        if (s->stop)
            break;
        pthread_mutex_unlock(&s->mu);
        err = ckpt__fs_pread(s->fs, s->file, s->ring[slot], s->pieces[k].len,
                             s->pieces[k].offset, &got);
        pthread_mutex_lock(&s->mu);
        if (err < 0) {
            if (s->failure.code == 0)
                ckpt__error_save(&s->failure);
            s->stop = 1;
            pthread_cond_broadcast(&s->freed);
        } else {
            s->got[slot] = got;
            s->held[slot] = k + 1;
        }
        pthread_cond_broadcast(&s->filled);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Copy (and checksum) the bytes of piece k into the extents it overlaps,
 * starting the search at *first, the first extent not yet complete. */
static int consume_piece(const stream *s, size_t k, const char *path,
                         ckpt__extent *ext, size_t n, size_t *first)
{
    const piece *p = &s->pieces[k];
    const uint8_t *data = s->ring[k % RING];
    uint64_t have_end = p->offset + s->got[k % RING];
    uint64_t piece_end = p->offset + p->len;
    size_t i = *first;
    while (i < n && ext[i].offset + ext[i].size <= p->offset)
        i++;
    *first = i;
    for (; i < n && ext[i].offset < piece_end; i++) {
        uint64_t a, b;
        if (ext[i].size == 0)
            continue;
        a = ext[i].offset > p->offset ? ext[i].offset : p->offset;
        b = ext[i].offset + ext[i].size;
        if (b > piece_end)
            b = piece_end;
        if (b > have_end)
            return ckpt__error(CKPT_ECORRUPT,
                               "%s: the file ends %s byte %llu, inside the "
                               "range of %llu bytes at offset %llu",
                               path, have_end > p->offset ? "at" : "before",
                               (unsigned long long)have_end,
                               (unsigned long long)ext[i].size,
                               (unsigned long long)ext[i].offset);
        if (ext[i].dst)
            ext[i].crc = ckpt__crc32c_copy(
                ext[i].crc, (uint8_t *)ext[i].dst + (a - ext[i].offset),
                data + (a - p->offset), (size_t)(b - a));
        else
            ext[i].crc = ckpt__crc32c_extend(ext[i].crc, data + (a - p->offset),
                                             (size_t)(b - a));
    }
    return 0;
}

/* Take the pieces in order on the calling thread. */
static int consume_all(stream *s, const char *path, ckpt__extent *ext, size_t n)
{
    size_t first = 0;
    int err = 0;
    for (size_t k = 0; k < s->npieces && err == 0; k++) {
        int ready;
        pthread_mutex_lock(&s->mu);
        while (!s->stop && s->held[k % RING] != k + 1)
            pthread_cond_wait(&s->filled, &s->mu);
        ready = s->held[k % RING] == k + 1;
        if (!ready)
            err = s->failure.code;
        pthread_mutex_unlock(&s->mu);
        if (!ready)
            break;
        err = consume_piece(s, k, path, ext, n, &first);
        pthread_mutex_lock(&s->mu);
        s->consumed = k + 1;
        if (err < 0)
            s->stop = 1;
        pthread_cond_broadcast(&s->freed);
        pthread_mutex_unlock(&s->mu);
    }
    return err;
}

static int run_stream(stream *s, const char *path, ckpt__extent *ext, size_t n)
{
    pthread_t threads[READERS];
    int started = 0;
    int err;
    for (int t = 0; t < READERS; t++) {
        if (pthread_create(&threads[t], NULL, reader_main, s) != 0)
            break;
        started++;
    }
    if (started == 0)
        return ckpt__error(
            CKPT_ENOTSUP, "direct read %s: no reader thread could start", path);
    err = consume_all(s, path, ext, n);
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_broadcast(&s->freed);
    pthread_mutex_unlock(&s->mu);
    for (int t = 0; t < started; t++)
        pthread_join(threads[t], NULL);
    if (err == 0 && s->failure.code < 0)
        err = s->failure.code;
    if (err < 0 && err == s->failure.code)
        return ckpt__error_restore(&s->failure);
    return err;
}

int ckpt__read_extents_direct(const ckpt_fs *fs, const char *path,
                              ckpt__extent *ext, size_t n)
{
    stream s;
    piece *pieces = NULL;
    void *raw = NULL;
    size_t npieces;
    int err;

    err = check_extents(path, ext, n);
    if (err < 0)
        return err;
    for (size_t i = 0; i < n; i++)
        ext[i].crc = 0;
    npieces = plan_pieces(ext, n, NULL);
    if (npieces == 0)
        return 0;
    memset(&s, 0, sizeof(s));
    s.fs = fs;
    err = ckpt__fs_open_read_direct(fs, &s.file, path);
    if (err < 0)
        return err;
    pieces = ckpt__malloc(npieces * sizeof(*pieces));
    raw = ckpt__malloc(RING * PIECE + ALIGN);
    if (!pieces || !raw) {
        err = ckpt__error_oom();
        goto done;
    }
    plan_pieces(ext, n, pieces);
    s.pieces = pieces;
    s.npieces = npieces;
    for (int i = 0; i < RING; i++)
        s.ring[i] = (uint8_t *)raw + (ALIGN - (uintptr_t)raw % ALIGN) % ALIGN +
                    (size_t)i * PIECE;
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.filled, NULL);
    pthread_cond_init(&s.freed, NULL);
    err = run_stream(&s, path, ext, n);
    pthread_cond_destroy(&s.freed);
    pthread_cond_destroy(&s.filled);
    pthread_mutex_destroy(&s.mu);
done:
    if (err < 0)
        ckpt__fs_close_quiet(fs, s.file);
    else
        err = ckpt__fs_close(fs, s.file);
    ckpt__free(raw);
    ckpt__free(pieces);
    return err;
}
