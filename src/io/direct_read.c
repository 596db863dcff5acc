/* io/direct_read.c - ckpt__read_extents_direct: plans aligned pieces over
 * the extents, runs the reader threads that fill the ring, and copies and
 * checksums each piece on the calling thread (see direct_read.h).
 *
 * Ring protocol, all under `mu`: a reader claims piece k (`next`), waits
 * until slot k % RING is free (k < consumed + RING), reads into it without
 * the lock, then marks the slot as holding k (`held[slot] = k + 1`). The
 * consumer takes pieces in order, waiting for `held` to name the piece, and
 * frees the slot by advancing `consumed`. The first failure sets `stop`,
 * which every wait also watches.
 *
 * Direct or buffered, by what this machine shows: when the file can also
 * be opened through the page cache and has at least PROBE_MIN_PIECES
 * pieces, the first PROBE_PIECES pieces alternate between the direct and
 * the buffered file, each read timed by its reader; a reader about to
 * claim a later piece waits until the probe pieces are in, and the first
 * one there picks the mode with the higher rate for the rest of the file
 * (a fast virtual disk cached by its host can beat O_DIRECT through the
 * page cache's read-ahead; a real disk usually does not). Both modes fill
 * the same ring and the caller copies with the checksum fused either way.
 * The choice and the rates are reported (ckpt__read_report). */
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
#define PROBE_PIECES 4      /* even: direct, odd: buffered */
#define PROBE_MIN_PIECES 16 /* below this the file is read direct only */

typedef struct piece {
    uint64_t offset;
    size_t len;
} piece;

typedef struct stream {
    const ckpt_fs *fs;
    const char *path;    /* the file's, for messages */
    ckpt_file *file;     /* opened with O_DIRECT */
    ckpt_file *buffered; /* through the page cache; NULL: no probe */
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
    /* the probe (see the top comment) */
    size_t probe_pieces; /* 0: no probe, direct throughout */
    size_t probed;       /* probe pieces read so far */
    double probe_s[2];   /* read time per mode (0: direct, 1: buffered) */
    uint64_t probe_bytes[2];
    int mode; /* after the probe: CKPT__READ_DIRECT or _BUFFERED */
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

static double rate(const stream *s, int m)
{
    return s->probe_s[m] > 0 ? (double)s->probe_bytes[m] / s->probe_s[m] : 0;
}

/* The mode piece k is read with (mu held); for a piece after the probe,
 * waits for the probe to end and makes the choice. */
static int piece_mode(stream *s, size_t k)
{
    if (k < s->probe_pieces)
        return k % 2 ? CKPT__READ_BUFFERED : CKPT__READ_DIRECT;
    if (s->probe_pieces == 0)
        return CKPT__READ_DIRECT;
    while (!s->stop && s->probed < s->probe_pieces)
        pthread_cond_wait(&s->filled, &s->mu);
    if (s->mode == 0)
        s->mode =
            rate(s, 1) > rate(s, 0) ? CKPT__READ_BUFFERED : CKPT__READ_DIRECT;
    return s->mode;
}

static void *reader_main(void *arg)
{
    stream *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        size_t k = s->next;
        size_t slot = k % RING;
        size_t got = 0;
        int mode, err;
        double t0;
        if (s->stop || k >= s->npieces)
            break;
        s->next++;
        while (!s->stop && k >= s->consumed + RING)
            pthread_cond_wait(&s->freed, &s->mu);
        mode = s->stop ? 0 : piece_mode(s, k);
        if (s->stop)
            break;
        pthread_mutex_unlock(&s->mu);
        t0 = ckpt__seconds_now();
        err = ckpt__fs_pread(
            s->fs, mode == CKPT__READ_BUFFERED ? s->buffered : s->file, s->path,
            s->ring[slot], s->pieces[k].len, s->pieces[k].offset, &got);
        t0 = ckpt__seconds_now() - t0;
        pthread_mutex_lock(&s->mu);
        if (k < s->probe_pieces) {
            int m = mode == CKPT__READ_BUFFERED;
            s->probe_s[m] += t0;
            s->probe_bytes[m] += got;
            s->probed++;
        }
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
            ext[i].crc = ckpt__crc32c_copy_unprobed(
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
        if (s->stop) /* a reader may wait for the probe on `filled` */
            pthread_cond_broadcast(&s->filled);
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
        if (ckpt__thread_create(&threads[t], reader_main, s) != 0)
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
    pthread_cond_broadcast(&s->filled);
    pthread_mutex_unlock(&s->mu);
    for (int t = 0; t < started; t++)
        pthread_join(threads[t], NULL);
    if (err == 0 && s->failure.code < 0)
        err = s->failure.code;
    if (err < 0 && err == s->failure.code)
        return ckpt__error_restore(&s->failure);
    return err;
}

static int stream_extents(const ckpt_fs *fs, const char *path,
                          ckpt__extent *ext, size_t n,
                          ckpt__read_report *report, int probe);

int ckpt__read_extents_direct(const ckpt_fs *fs, const char *path,
                              ckpt__extent *ext, size_t n)
{
    return ckpt__read_extents_report(fs, path, ext, n, NULL);
}

int ckpt__read_extents_report(const ckpt_fs *fs, const char *path,
                              ckpt__extent *ext, size_t n,
                              ckpt__read_report *report)
{
    return stream_extents(fs, path, ext, n, report, CKPT__PROBE_FIRST);
}

int ckpt__read_extents_stream(const ckpt_fs *fs, const char *path,
                              ckpt__extent *ext, size_t n,
                              ckpt__read_report *report, int probe)
{
    return stream_extents(fs, path, ext, n, report, probe);
}

int ckpt__extents_check(const char *path, const ckpt__extent *ext, size_t n)
{
    return check_extents(path, ext, n);
}

uint64_t ckpt__direct_probe_end(const ckpt__extent *ext, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ext[i].size > 0)
            return align_down(ext[i].offset) + PROBE_PIECES * PIECE;
    return 0;
}

size_t ckpt__direct_piece_count(const ckpt__extent *ext, size_t n)
{
    return plan_pieces(ext, n, NULL);
}

/* The stream, probing as `probe` says (CKPT__PROBE_*). */
static int stream_extents(const ckpt_fs *fs, const char *path,
                          ckpt__extent *ext, size_t n,
                          ckpt__read_report *report, int probe)
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
    s.path = path;
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
    if (probe == CKPT__PROBE_ALL) {
        err = ckpt__fs_open_read(fs, &s.buffered, path);
        if (err < 0)
            goto done;
        s.probe_pieces = npieces;
    } else if (probe == CKPT__PROBE_FIRST && npieces >= PROBE_MIN_PIECES) {
        ckpt__saved_error saved;
        ckpt__error_save(&saved);
        if (ckpt__fs_open_read(fs, &s.buffered, path) == 0)
            s.probe_pieces = PROBE_PIECES;
        else
            ckpt__error_restore(&saved); /* no probe: direct throughout */
    }
    for (int i = 0; i < RING; i++)
        s.ring[i] = (uint8_t *)raw + (ALIGN - (uintptr_t)raw % ALIGN) % ALIGN +
                    (size_t)i * PIECE;
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.filled, NULL);
    pthread_cond_init(&s.freed, NULL);
    err = run_stream(&s, path, ext, n);
    if (report) {
        memset(report, 0, sizeof(*report));
        report->mode = s.mode ? s.mode : CKPT__READ_DIRECT;
        report->probed = s.probe_pieces > 0;
        report->direct_bytes_per_s = rate(&s, 0);
        report->buffered_bytes_per_s = rate(&s, 1);
        report->piece_bytes = PIECE;
        report->readers = READERS;
    }
    pthread_cond_destroy(&s.freed);
    pthread_cond_destroy(&s.filled);
    pthread_mutex_destroy(&s.mu);
done:
    ckpt__fs_close_quiet(fs, s.buffered); /* read-only: nothing to lose */
    if (err < 0)
        ckpt__fs_close_quiet(fs, s.file);
    else
        err = ckpt__fs_close(fs, s.file, path);
    ckpt__free(raw);
    ckpt__free(pieces);
    return err;
}
