/* io/buffered_read.h - reading extents through the page cache straight
 * into their destinations, checksumming each piece right after its read.
 * Not installed.
 *
 *   extents:  |------ext0------|  |e1|  |---------ext2---------|
 *   pieces:   [ 256K ][ 256K ][ ]  [  ]  [ 256K ][ 256K ][ 256K ]
 *             each piece inside one extent, read with one pread into its
 *             place in the destination (or a per-thread scratch buffer
 *             when the extent has none, when the destination would
 *             alias the file offset, or after a piece showed the kernel's
 *             first write into the destinations slow: then copied on),
 *             then checksummed while hot
 *
 * The calling thread and, when asked for and possible, one helper thread
 * claim the pieces in file order, so the kernel's read-ahead sees one
 * sequential reader. A piece's CRC is shifted past the bytes that follow
 * it in its extent (CRC32C combine) and xored into the extent's CRC, so
 * pieces finish in any order. Against a plain read() this adds only the
 * checksum of data that is still in cache, which for a cold file runs
 * while the read-ahead is on the disk and for a cached file on the second
 * core when there is one. */
#ifndef CKPT_IO_BUFFERED_READ_H
#define CKPT_IO_BUFFERED_READ_H

#include "io/direct_read.h"

/* Bytes one pread of the buffered path reads at most. */
#define CKPT__BUFFERED_PIECE ((size_t)256 << 10)

/* Bytes one request of the cold path reads at most. The kernel sizes its
 * read-ahead by the request (up to the device's largest transfer), so
 * 256 KiB pieces of a file not in the page cache leave the disk idle
 * between them where read_ahead_kb is small. Measured on a virtio disk
 * against one read() of a cold 256 MiB file, medians of paired runs:
 * with read_ahead_kb 128 (the kernel's default), 256 KiB pieces on two
 * threads reached 0.52-0.61 (bare preads) and 0.59-0.70 (a restore), 32
 * MiB requests 0.89-1.10 and 0.74-0.98; with read_ahead_kb 8192, where
 * the kernel reads far ahead anyway, 0.93-1.24 and 0.74-1.02 (pieces)
 * against 1.01-1.03 and 0.69-0.88 (requests), where the checksum of a
 * request no longer in the CPU's cache costs memory bandwidth: hence the
 * cold path only below CKPT__FAR_READ_AHEAD_KB of read-ahead. 16 MiB
 * requests measured 0.73-0.84 with 128 KiB; one thread instead of two
 * 0.79-0.90 with 128 KiB and 0.71-0.81 with 8192. */
#define CKPT__COLD_REQUEST ((size_t)32 << 20)

/* A device whose kernel read-ahead is at least this (KiB) keeps a file's
 * 256 KiB pieces fed by itself, and they checksum in the CPU's cache: the
 * cold path's long requests are for smaller read-ahead.
 * Measured on a virtio disk, restore of a cold 256 MiB file against one
 * read() (medians of 5 batches of 6 paired runs): read_ahead_kb 128,
 * pieces 0.59-0.70, requests 0.74-0.98; 8192, pieces 0.74-1.02, requests
 * 0.69-0.88. Those requests still bounced variables that alias their file
 * offset through a whole request's scratch (see buffered_read.c); reading
 * them straight, at 8192, medians of 3 batches of 7 paired runs with
 * malloc'd variables: 64 MiB pieces 0.76-1.17, requests 0.85-0.90; 256
 * MiB pieces 0.90-0.94, requests 0.76-0.91. The pieces still hold there. */
#define CKPT__FAR_READ_AHEAD_KB 4096

/* A scratch buffer (for extents without a destination) holds one piece
 * placed at its file offset's position in a page: CKPT__SCRATCH_BYTES
 * from a CKPT__SCRATCH_PAGE-aligned start. */
#define CKPT__SCRATCH_PAGE ((size_t)4096)
#define CKPT__SCRATCH_BYTES (CKPT__BUFFERED_PIECE + CKPT__SCRATCH_PAGE)

/* Where in the page-aligned `scratch` the piece at `file_offset` is read
 * to: at the same offset within a page as in the file. The kernel copies
 * a page-cache page to the reader with `rep movsb`, which on some CPUs
 * (measured: AMD EPYC) runs 3-5x slower when the destination sits a few
 * bytes past the source modulo 4 KiB (loads falsely wait on the earlier
 * stores, "4K aliasing"); the same offset in a page never does. */
uint8_t *ckpt__scratch_for(uint8_t *scratch, uint64_t file_offset);

/* The 256 KiB path's two scratch buffers (one a thread), kept for the
 * process between reads (io/scratch_pool.c): CKPT__SCRATCH_POOL_SLOTS
 * page-aligned buffers of CKPT__SCRATCH_BYTES each, one after the other.
 * Take returns the kept ones, or new ones when another read holds those,
 * or NULL when they cannot be mapped (the caller then allocates its
 * own); a read uses the first `bytes` of each (at most
 * CKPT__SCRATCH_BYTES: under AddressSanitizer the rest is poisoned).
 * Give hands them back after the read: kept when none are, else
 * unmapped. */
#define CKPT__SCRATCH_POOL_SLOTS 2
uint8_t *ckpt__scratch_pool_take(size_t bytes);
void ckpt__scratch_pool_give(uint8_t *pool);

/* The kept region's size: 2 MiB (a huge page), aligned to it. */
#define CKPT__SCRATCH_POOL_BYTES ((size_t)2 << 20)

/* The same region for the probes of the kernel's copy, its first `bytes`
 * (at most CKPT__SCRATCH_POOL_BYTES, else NULL) addressable in one span;
 * given back with ckpt__scratch_pool_give. NULL when it cannot be
 * mapped. */
uint8_t *ckpt__scratch_pool_take_span(size_t bytes);

/* Destinations less than this many bytes ahead of their file offset
 * modulo 4 KiB alias it (a cache line; measured on AMD EPYC: 2.6x slower
 * kernel copies 4-8 bytes ahead, 1.5x at 16, none from 32 on). */
#define CKPT__ALIAS_WINDOW 64

/* Whether reading the bytes at `file_offset` straight into `dst` would
 * alias (see above): then, where that is slow on this machine
 * (ckpt__aliased_reads_bounce), the 256 KiB path reads the piece into
 * scratch at its file offset's place and copies it to `dst` with the CRC
 * fused into the copy (the cold path reads it straight: buffered_read.c). */
int ckpt__read_aliases(const void *dst, uint64_t file_offset);

/* Slower than this (the kernel's copy into a destination 16 bytes ahead
 * over one into an aligned destination, best times) and the bounce pays:
 * EPYC's 1.5x clears it, a Xeon's 1.0x and noise do not. */
#define CKPT__ALIAS_SLOW 1.25

/* Whether the 256 KiB path bounces pieces whose destination aliases
 * (above) through scratch on this machine: 1 where the kernel's copy into
 * such a destination was measured CKPT__ALIAS_SLOW times slower than into an
 * aligned one, or could not be measured; 0 where it was not, and the
 * piece is read straight into its destination (io/alias_probe.c, measured
 * once per process). */
int ckpt__aliased_reads_bounce(void);

/* The probe's measurement: the kernel copy's time into a destination 16
 * bytes ahead over an aligned one (best of several); 0 when it could not
 * be measured. */
double ckpt__aliased_read_ratio(void);

/* Tests: 1 or 0 fixes ckpt__aliased_reads_bounce's answer, -1 returns it
 * to the probe's. */
void ckpt__aliased_reads_force(int bounce);

/* The kernel's first copy into pages the program has written, over its
 * next copy into them, from this many times up (best times), makes the
 * 256 KiB path time its first piece (ckpt__first_touch_mode): the VM it
 * was found on measured 16-29x; where the first write costs nothing more,
 * the two are the same copy (about 1x). */
#define CKPT__FIRST_TOUCH_SLOW 3.0

/* How the 256 KiB path treats destinations because of the kernel's first
 * write into the program's pages (io/touch_probe.c, measured once per
 * process). */
enum {
    CKPT__TOUCH_STRAIGHT = 0, /* not slow here (or not measured): pieces
                                 go straight into their destinations */
    CKPT__TOUCH_BOUNCED = 1,  /* every piece with a destination is read
                                 into scratch at its file offset's place in
                                 a page and copied on with the CRC fused
                                 into the copy (tests only) */
    CKPT__TOUCH_TIMED = 2     /* slow here: pieces go straight, those of
                                 at least CKPT__TOUCH_TIMED_MIN bytes
                                 timed, until one took longer than
                                 ckpt__first_touch_limit_s (the kernel's
                                 first write there): the rest of the read
                                 bounces as above. The read's first timed
                                 piece is timed in the thread's CPU
                                 seconds (a cold file's first pread waits
                                 on the disk, which is not a first
                                 write), the later ones on the wall
                                 clock. Straight, never-slow
                                 pieces cost nothing; a first write found
                                 costs one piece's; and a bounce keeps the
                                 destination unwritten by the kernel, so
                                 no decision is kept from one read to the
                                 next (a piece found fast says nothing of
                                 the others) */
};

/* A piece shorter than this is not timed (its pread's fixed cost would
 * hide the kernel's per-page one). */
#define CKPT__TOUCH_TIMED_MIN ((size_t)64 << 10)

/* CKPT__TOUCH_TIMED where the kernel's first copy into fresh pages the
 * program wrote was measured CKPT__FIRST_TOUCH_SLOW times slower than its
 * next, else CKPT__TOUCH_STRAIGHT; or what a test forced. Where it is not
 * STRAIGHT the streamed path is not used either (ckpt__stream_suits): its
 * long requests land straight in the variables. */
int ckpt__first_touch_mode(void);

/* The time above which a pread of `bytes` straight into a destination
 * shows a first write by the kernel: the geometric mean of the probe's
 * first and later preads, scaled to `bytes` (0 when not measured). */
double ckpt__first_touch_limit_s(size_t bytes);

/* The probe's measurement: the kernel's first copy into fresh pages the
 * program wrote over its second copy into them (best of several); 0 when
 * it could not be measured. */
double ckpt__first_touch_ratio(void);

/* Tests: a CKPT__TOUCH_* mode fixes ckpt__first_touch_mode's answer, -1
 * returns it to the probe's. */
void ckpt__first_touch_force(int mode);

/* Tests: above 0, ckpt__first_touch_limit_s answers these seconds for any
 * piece; 0 or below returns it to the probe's. */
void ckpt__first_touch_limit_force(double seconds);

/* How many threads the buffered path may use with `fs`: 2 when `fs`
 * allows concurrent preads (it offers open_read_direct, whose contract
 * says so) and this process may run on at least two CPUs, else 1. */
int ckpt__read_threads(const ckpt_fs *fs);

/* The cold path: as ckpt__read_extents_buffered, but each claim is one
 * request of up to CKPT__COLD_REQUEST bytes that goes on from one extent
 * into the next when no gap lies between them (a preadv into their
 * destinations, ckpt__fs_preadv, aliasing ones included: see
 * buffered_read.c), and a thread's scratch buffer holds a whole request. For a
 * file that is not in the page cache on a device that reads ahead little by
 * itself (read_choice.c decides); a cached one reads faster in pieces that stay
 * in the CPU's cache for their CRC. */
int ckpt__read_extents_cold(const ckpt_fs *fs, ckpt_file *file,
                            const char *path, ckpt__extent *ext, size_t n,
                            int threads);

/* The streamed path's requests: half of what is left to read, at least
 * CKPT__STREAM_MIN_REQUEST and at most CKPT__STREAM_MAX_REQUEST bytes
 * (the last one whatever is left). */
#define CKPT__STREAM_MAX_REQUEST ((size_t)64 << 20)
#define CKPT__STREAM_MIN_REQUEST ((size_t)8 << 20)

/* Extents holding at least this many bytes in all are read by the
 * streamed path on a device that reads far ahead (read_choice.c); below,
 * 256 KiB pieces read as fast. Measured on a virtio disk with
 * read_ahead_kb 8192 (the Xeon VM), a file just dropped from the page
 * cache against one read() of it, medians of 9-11 paired runs: 256 MiB,
 * pieces 0.86-0.87, streamed 0.94-0.96; 128 MiB, 0.90 and 0.93; 64 MiB,
 * 0.99 and 0.95. */
#define CKPT__STREAM_MIN_BYTES ((uint64_t)128 << 20)

/* The streamed path: the calling thread reads the extents in long
 * requests (see CKPT__STREAM_MAX_REQUEST; one preadv straight into the
 * destinations, going on from one extent into the next where no gap lies
 * between them), one after the other, and a helper thread checksums each
 * request once it has landed, while the next one is read: the kernel sees
 * one sequential reader asking for many MiB at a time, which on a device
 * that reads far ahead by itself streams a file that is not cached faster
 * than 256 KiB pieces do (the CRC of a request out of the CPU's cache
 * costs no time of the reader). Every extent needs a destination
 * (CKPT_EINVAL otherwise; ckpt__stream_suits). Without a helper (it did
 * not start) the calling thread checksums each request after its read.
 * Errors as ckpt__read_extents_buffered. */
int ckpt__read_extents_streamed(const ckpt_fs *fs, ckpt_file *file,
                                const char *path, ckpt__extent *ext, size_t n);

/* Tests: 1 makes the streamed path run without its helper (as when the
 * thread does not start), 0 returns it to normal. */
void ckpt__streamed_alone_force(int alone);

/* Whether the streamed path suits these extents with `threads` threads:
 * two threads, every extent with a destination, CKPT__STREAM_MIN_BYTES
 * or more in all, and a machine where the kernel's first write into the
 * program's pages is not slow (ckpt__first_touch_mode). */
int ckpt__stream_suits(const ckpt__extent *ext, size_t n, int threads);

/* ckpt__stream_suits less its condition on the first writes: two threads,
 * every extent with a destination, CKPT__STREAM_MIN_BYTES or more. */
int ckpt__long_restore(const ckpt__extent *ext, size_t n, int threads);

/* Read the extents (sorted by offset, not overlapping; checked by the
 * caller) of `file`, opened with open_read on `path` (for messages), and
 * set each one's crc. `threads` is 1 (the calling thread only) or 2 (one
 * helper thread too, when there are at least two pieces and it starts).
 * CKPT_ECORRUPT naming the file when it ends inside an extent; a failed
 * read returns its error. The helper is joined before returning on every
 * path and its error is returned once, with its message. After a failure
 * the destinations hold part of the data. */
int ckpt__read_extents_buffered(const ckpt_fs *fs, ckpt_file *file,
                                const char *path, ckpt__extent *ext, size_t n,
                                int threads);

/* Read the extents of the file at `path` the way this machine reads it
 * fastest, filling `report` (may be NULL). Buffered reads go through
 * `file` when not NULL (the caller's file opened with open_read on
 * `path`, which keeps its read-ahead from one call to the next), else
 * through a file opened here. With at least 16 pieces of the
 * direct stream and a file `fs` lets it open around the page cache, the
 * first 4 pieces are read alternately with O_DIRECT and through the page
 * cache, timed, and the faster way reads the rest (the direct stream, or
 * the buffered path above); otherwise the buffered path reads it all.
 * Except on a device that reads far ahead by itself
 * (CKPT__FAR_READ_AHEAD_KB): there a file that is not cached is read
 * through the page cache without a probe (report->far_read_ahead; why:
 * read_choice.c), by one thread in 256 KiB pieces, or by the streamed
 * path when ckpt__stream_suits (report->streamed).
 * When `fs` names the file's device (device_id), that verdict is
 * remembered and the next reads on the device use it without a probe
 * (report->remembered) for at most 32 reads and 60 s (read_verdicts.h).
 * Errors as ckpt__read_extents_buffered (CKPT_EINVAL for extents out of
 * order or overlapping). */
int ckpt__read_extents(const ckpt_fs *fs, const char *path, ckpt_file *file,
                       ckpt__extent *ext, size_t n, ckpt__read_report *report);

#endif
