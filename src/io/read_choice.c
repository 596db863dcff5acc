/* io/read_choice.c - ckpt__read_extents: the one entry for reading a data
 * file's extents with their checksums (restores, the MPI restore, checks
 * and verify), choosing by what the machine shows between the direct
 * stream (direct_read.c) and the buffered path (buffered_read.c):
 *
 *   file:  [probe: 4 pieces, direct / buffered alternately][ the rest ]
 *                      timed, both ways                     the faster
 *
 * O_DIRECT must win clearly: a tie goes to the page cache (DIRECT_MARGIN).
 * The probe runs only when the file system offers direct reads, accepts
 * them for this file (the POSIX one declines a file mostly in the page
 * cache: then buffered reads are memcpy-bound and win) and the stream has
 * 16 pieces or more; otherwise the buffered path reads everything. An
 * extent cut by the probe's end gets the CRC of its two parts joined.
 *
 * The probe's verdict is a fact about the device, so when the file system
 * names the file's device (ckpt_fs.device_id) it is remembered
 * (read_verdicts.h) and the next files there are read the same way without
 * a probe, for at most 32 reads and 60 s (an O_DIRECT verdict only once a
 * second probe confirms it); then a read probes again. A
 * direct read the file system declines for one file (it is in the page
 * cache) is a fact about that file: it stores no verdict and leaves the
 * remembered one as it was.
 *
 * Through the page cache, a file that is not cached goes the cold path's
 * way (requests of 32 MiB, buffered_read.h); a cached one in 256 KiB pieces.
 *
 * A file that is not cached on a device that reads far ahead by itself
 * (CKPT__FAR_READ_AHEAD_KB; the POSIX file system only) is read without a
 * probe, through the page cache in 256 KiB pieces by one thread, the
 * kernel's read-ahead streaming ahead of it (FAR_AHEAD_READERS); or, when
 * the read is long and every extent has a destination
 * (ckpt__stream_suits: a restore, not a check), by the streamed path:
 * requests of many MiB, checksummed by a helper behind the reader; or,
 * such a restore where the kernel's first writes into the program's pages
 * are slow, in 256 KiB pieces by two threads (LONG_RESTORE_READERS). */
#include "buffered_read.h"

#include "common/internal.h"
#include "fs_internal.h"
#include "read_verdicts.h"
#include "util/crc32c.h"

#include <string.h>

#define PROBE_MIN_PIECES 16
/* O_DIRECT reads the rest only when its probe reads were this much faster.
 * The probe times single reads, alternately: a buffered one that misses
 * waits for the read-ahead it starts, which serves the reads after it but
 * not the probe, so the page cache is timed at its worst. Measured on a
 * virtio disk: buffered probe reads at 0.7-0.8x the direct ones, yet the
 * whole file read 1.5-2x faster through the cache than the direct stream.
 * Where the device reads ahead little (read_ahead_kb 128) the cold path
 * is timed no better by longer probes: a 4 MiB region read its way
 * measured 0.44-0.53 GB/s against 0.64-0.85 for the direct stream over
 * the region before it, 16 MiB regions 0.61 against 0.62, while over the
 * whole file it ran at 0.74-0.98x of one read() and the direct stream at
 * 0.4-0.6x: its long requests on two threads only pay over many MiB. The
 * single reads (0.36 against 0.52 GB/s there) stay under the margin. */
#define DIRECT_MARGIN 2.0

/* Readers of a file not in the page cache on a device that reads far
 * ahead, with no probe before them. The probe's single reads, alternately
 * around and through the cache, are timed while nothing streams: on a
 * virtio disk with read_ahead_kb 8192 both ways measured 0.3-0.4 GB/s
 * (the latency of one 512 KiB read) while a whole file streamed at 1.0
 * GB/s with O_DIRECT and 3.4 GB/s through the cache, so the probe cost
 * its 2 MiB at a tenth of the stream's speed (3.5-4.7 ms) and never
 * chose O_DIRECT: a read-ahead that far keeps the page cache as fast as
 * the device, and O_DIRECT must be twice as fast to be chosen. A second
 * reader of the file took the read-ahead's pages as fast as one and cost
 * as much again: `ckpt verify` of a cold 145 MiB checkpoint against `cat`
 * of its files, 11 paired runs on a quiet 2-core VM, median (range):
 * probe and two readers 0.89 (0.83-1.16), no probe and two readers 0.88
 * (0.79-1.79), a probe and one reader 0.89 (0.83-1.88), no probe and one
 * reader 0.96 (0.74-2.09); the highs are one repetition where `cat`
 * itself stalled 50 ms, the lows of 0.74-0.79 single stalls of ours.
 * Restores of cold 64 and 256 MiB files against read(), one reader
 * against two, 2 x 5 runs each: alike (1.18-2.29 and 0.78-1.55). This
 * is one VM's disk; a device with read-ahead this far whose O_DIRECT is
 * twice its page cache's speed would lose that here (not seen). */
#define FAR_AHEAD_READERS 1

/* Readers of such a file for a restore long enough for the streamed path
 * that may not take it because the kernel's first writes into the
 * program's pages are slow here (ckpt__stream_suits): its 256 KiB pieces
 * then mostly bounce through scratch, each copied on with its CRC by the
 * thread that read it, and one reader spent that copy's time on top of
 * the read. Measured on the EPYC VM (read_ahead_kb 8192, such first
 * writes 16x slower), a cold 256 MiB restore against one read() of the
 * file, 5 batches of 7 paired runs, one reader against two in turn:
 * medians 0.78-0.88 and 0.86-0.91 (two ahead in four batches, even in
 * the fifth; single runs 0.28-1.42 and 0.28-2.91, the host's stalls); at
 * 64 MiB (not a long restore) two were no better (medians 0.78-1.10
 * against one's 1.00, 3 batches). One VM's figures: only a machine whose
 * first writes are slow comes here. */
#define LONG_RESTORE_READERS 2

/* The report of a read through the page cache: in 256 KiB pieces, or in
 * the cold path's requests. */
static void report_buffered(ckpt__read_report *rep, int threads, int cold)
{
    rep->mode = CKPT__READ_BUFFERED;
    rep->piece_bytes = cold ? CKPT__COLD_REQUEST : CKPT__BUFFERED_PIECE;
    rep->readers = threads;
}

/* The page-cache paths: 256 KiB pieces (the file is cached) or, with
 * `cold`, requests of 32 MiB (it is not; buffered_read.h). */
static int read_through_cache(const ckpt_fs *fs, ckpt_file *file,
                              const char *path, ckpt__extent *ext, size_t n,
                              int threads, int cold)
{
    return cold ? ckpt__read_extents_cold(fs, file, path, ext, n, threads)
                : ckpt__read_extents_buffered(fs, file, path, ext, n, threads);
}

/* The page cache path over `file`, or over the file opened by `path` when
 * `file` is NULL. */
static int buffered_all(const ckpt_fs *fs, const char *path, ckpt_file *file,
                        ckpt__extent *ext, size_t n, int threads, int cold)
{
    ckpt_file *f = NULL;
    int err;
    if (file)
        return read_through_cache(fs, file, path, ext, n, threads, cold);
    err = ckpt__fs_open_read(fs, &f, path);
    if (err < 0)
        return err;
    err = read_through_cache(fs, f, path, ext, n, threads, cold);
    if (err < 0)
        ckpt__fs_close_quiet(fs, f);
    else
        err = ckpt__fs_close(fs, f, path);
    return err;
}

/* The streamed path (buffered_read.h) over `file`, or over the file
 * opened by `path` when `file` is NULL. */
static int streamed_all(const ckpt_fs *fs, const char *path, ckpt_file *file,
                        ckpt__extent *ext, size_t n)
{
    ckpt_file *f = NULL;
    int err;
    if (file)
        return ckpt__read_extents_streamed(fs, file, path, ext, n);
    err = ckpt__fs_open_read(fs, &f, path);
    if (err < 0)
        return err;
    err = ckpt__read_extents_streamed(fs, f, path, ext, n);
    if (err < 0)
        ckpt__fs_close_quiet(fs, f);
    else
        err = ckpt__fs_close(fs, f, path);
    return err;
}

/* Split every extent at `cut`: head[i] the part before, tail[i] the rest
 * (each possibly empty, offsets still sorted). */
static void split_at(const ckpt__extent *ext, size_t n, uint64_t cut,
                     ckpt__extent *head, ckpt__extent *tail)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t end = ext[i].offset + ext[i].size;
        uint64_t mid = end < cut ? end : cut;
        uint64_t start = ext[i].offset > cut ? ext[i].offset : cut;
        head[i] = ext[i];
        head[i].size = mid > ext[i].offset ? mid - ext[i].offset : 0;
        tail[i] = ext[i];
        tail[i].offset = start;
        tail[i].size = end > start ? end - start : 0;
        if (ext[i].dst && tail[i].size > 0)
            tail[i].dst = (uint8_t *)ext[i].dst + (start - ext[i].offset);
    }
}

/* Whether the kernel reads far ahead on the device of `path` by itself
 * (known for the POSIX file system only). */
static int far_read_ahead(const ckpt_fs *fs, const char *path)
{
    return fs == ckpt_fs_posix() &&
           ckpt__posix_read_ahead_kb(path) >= CKPT__FAR_READ_AHEAD_KB;
}

/* Whether `path` is not (mostly) in the page cache: the file system opens
 * it with open_read_direct, which declines a file that is. */
static int not_cached(const ckpt_fs *fs, const char *path)
{
    ckpt__saved_error saved;
    ckpt_file *f = NULL;
    int cold;
    ckpt__error_save(&saved);
    cold = ckpt__fs_open_read_direct(fs, &f, path) == 0;
    if (cold)
        ckpt__fs_close_quiet(fs, f);
    (void)ckpt__error_restore(&saved);
    return cold;
}

/* Remember the verdict of the probe in `rep` for `key` (NULL: the device is
 * unknown), unless a rate is missing: a probe that timed no read one way
 * (its pieces all fell to the other) says nothing about the device. */
static void remember(const ckpt__device_key *key, const ckpt__read_report *rep)
{
    ckpt__read_verdict v;
    if (!key || rep->direct_bytes_per_s <= 0 || rep->buffered_bytes_per_s <= 0)
        return;
    v.mode = rep->mode;
    v.direct_bytes_per_s = rep->direct_bytes_per_s;
    v.buffered_bytes_per_s = rep->buffered_bytes_per_s;
    ckpt__read_verdict_remember(key, &v);
}

/* The probe on the head, then the rest the faster way; the verdict is
 * remembered for `key`. CKPT_ENOTSUP (nothing read) when direct reads are
 * not possible for this file. */
static int probe_then_read(const ckpt_fs *fs, const char *path, ckpt_file *file,
                           ckpt__extent *ext, size_t n, int threads,
                           const ckpt__device_key *key, ckpt__read_report *rep)
{
    ckpt__extent *head = ckpt__calloc(2 * n, sizeof(*head));
    ckpt__extent *tail;
    int err;
    if (!head)
        return ckpt__error_oom();
    tail = head + n;
    split_at(ext, n, ckpt__direct_probe_end(ext, n), head, tail);
    err = ckpt__read_extents_stream(fs, path, head, n, rep, CKPT__PROBE_ALL);
    if (err < 0)
        goto done;
    rep->probed = 1;
    if (rep->direct_bytes_per_s < DIRECT_MARGIN * rep->buffered_bytes_per_s) {
        /* the file system accepted direct reads: the file is not cached,
         * on a device that does not read far ahead (far_ahead_cold) */
        report_buffered(rep, threads, 1);
        err = buffered_all(fs, path, file, tail, n, threads, 1);
    } else {
        rep->mode = CKPT__READ_DIRECT;
        err = ckpt__read_extents_stream(fs, path, tail, n, NULL,
                                        CKPT__PROBE_NONE);
        if (err == CKPT_ENOTSUP) /* declined now: the rest through the cache */
            err = buffered_all(fs, path, file, tail, n, threads, 0);
    }
    remember(key, rep); /* the probe's verdict, whatever the rest did */
    for (size_t i = 0; i < n && err == 0; i++)
        ext[i].crc =
            ckpt__crc32c_combine(head[i].crc, tail[i].crc, tail[i].size);
done:
    ckpt__free(head);
    return err;
}

/* All of the file the way `v`, remembered for its device, says. The
 * direct stream answers CKPT_ENOTSUP (nothing read) when the file system
 * declines this file; the caller then reads it through the page cache. */
static int read_as_remembered(const ckpt_fs *fs, const char *path,
                              ckpt_file *file, ckpt__extent *ext, size_t n,
                              int threads, const ckpt__read_verdict *v,
                              ckpt__read_report *rep)
{
    int err;
    if (v->mode == CKPT__READ_DIRECT) {
        err =
            ckpt__read_extents_stream(fs, path, ext, n, rep, CKPT__PROBE_NONE);
        if (err == CKPT_ENOTSUP)
            return err;
    } else {
        /* (a device that reads far ahead is never here: choose_and_read) */
        int cold = not_cached(fs, path);
        report_buffered(rep, threads, cold);
        err = buffered_all(fs, path, file, ext, n, threads, cold);
    }
    rep->mode = v->mode;
    rep->probed = 0;
    rep->remembered = 1;
    rep->direct_bytes_per_s = v->direct_bytes_per_s;
    rep->buffered_bytes_per_s = v->buffered_bytes_per_s;
    return err;
}

/* On a device that reads far ahead, a file not cached: one reader through
 * the cache, no probe; a cached one (or one the file system will not open
 * for direct reads): CKPT_ENOTSUP, the caller's pieces through the cache,
 * as a probe or a remembered verdict would end for it after asking again.
 * Otherwise read the way remembered for the file's device, or probe (and
 * remember the verdict when the device is known). */
static int choose_and_read(const ckpt_fs *fs, const char *path, ckpt_file *file,
                           ckpt__extent *ext, size_t n, int threads,
                           ckpt__read_report *rep)
{
    ckpt__device_key key;
    ckpt__read_verdict v;
    int known, readers;
    if (far_read_ahead(fs, path)) {
        if (!not_cached(fs, path))
            return CKPT_ENOTSUP;
        rep->far_read_ahead = 1;
        if (ckpt__stream_suits(ext, n, threads)) {
            report_buffered(rep, 1, 0);
            rep->piece_bytes = CKPT__STREAM_MAX_REQUEST;
            rep->streamed = 1;
            return streamed_all(fs, path, file, ext, n);
        }
        readers = ckpt__long_restore(ext, n, threads) ? LONG_RESTORE_READERS
                                                      : FAR_AHEAD_READERS;
        report_buffered(rep, readers, 0);
        return buffered_all(fs, path, file, ext, n, readers, 0);
    }
    known = ckpt__read_verdict_key(fs, path, &key);
    if (known && ckpt__read_verdict_recall(&key, &v))
        return read_as_remembered(fs, path, file, ext, n, threads, &v, rep);
    return probe_then_read(fs, path, file, ext, n, threads, known ? &key : NULL,
                           rep);
}

static int read_extents(const ckpt_fs *fs, const char *path, ckpt_file *file,
                        ckpt__extent *ext, size_t n, ckpt__read_report *report)
{
    ckpt__read_report rep;
    int threads, err;
    fs = ckpt_fs_or_default(fs);
    threads = ckpt__read_threads(fs);
    err = ckpt__extents_check(path, ext, n);
    if (err < 0)
        return err;
    memset(&rep, 0, sizeof(rep));
    report_buffered(&rep, threads, 0);
    for (size_t i = 0; i < n; i++)
        ext[i].crc = 0;
    err = CKPT_ENOTSUP;
    if (ckpt__direct_piece_count(ext, n) >= PROBE_MIN_PIECES) {
        ckpt__saved_error saved;
        ckpt__error_save(&saved);
        err = choose_and_read(fs, path, file, ext, n, threads, &rep);
        if (err == CKPT_ENOTSUP) {
            ckpt__error_restore(&saved);
            memset(&rep, 0, sizeof(rep));
            report_buffered(&rep, threads, 0);
        }
    }
    if (err == CKPT_ENOTSUP) /* cached, too short or no direct reads */
        err = buffered_all(fs, path, file, ext, n, threads, 0);
    if (report)
        *report = rep;
    return err;
}

int ckpt__read_extents(const ckpt_fs *fs, const char *path, ckpt_file *file,
                       ckpt__extent *ext, size_t n, ckpt__read_report *report)
{
    /* Not cut short by a cancel (pread is a cancellation point): the
     * helper threads would go on writing into the caller's destinations
     * unjoined. */
    CKPT__RETURN_UNCANCELLED(read_extents(fs, path, file, ext, n, report));
}
