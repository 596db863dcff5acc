/* io/direct_read.h - streaming byte ranges ("extents") of one file around
 * the page cache into their destinations, checksumming them on the way.
 * Not installed.
 *
 *   file:   |--ext0--|  |----ext1----|            |--ext2--|
 *   pieces: [ 512K ][ 512K ][ 512K ]              [ 512K ]    aligned reads
 *
 * Two reader threads read the pieces with O_DIRECT (ckpt_fs
 * open_read_direct) into a ring of aligned buffers, in order; the calling
 * thread copies each piece's bytes to the extents it overlaps with the
 * CRC-32C fused into the copy. The disk never waits for the checksum and
 * the data crosses memory once after the DMA, where reading through the
 * page cache costs a kernel copy plus a separate checksum pass.
 *
 * Whether this stream or the page cache reads a file is chosen by
 * ckpt__read_extents (read_choice.c): by a probe (CKPT__PROBE_ALL over the
 * file's first pieces) or by the verdict of an earlier probe on the same
 * device (read_verdicts.h), then the stream reads with CKPT__PROBE_NONE. */
#ifndef CKPT_IO_DIRECT_READ_H
#define CKPT_IO_DIRECT_READ_H

#include "ckpt/io.h"

#include <stdint.h>

/* One byte range to read. */
typedef struct ckpt__extent {
    uint64_t offset; /* in the file */
    uint64_t size;
    void *dst;    /* `size` bytes; NULL to checksum only */
    uint32_t crc; /* out: CRC-32C of the bytes (finalised, not masked) */
} ckpt__extent;

/* Read the extents of the file at `path` (sorted by offset, not
 * overlapping: CKPT_EINVAL otherwise) and set each one's crc.
 *
 * Returns CKPT_ENOTSUP having read nothing when `fs` offers no direct
 * reads, declines them for this file, or no reader thread can start: the
 * caller then reads through the page cache. CKPT_ECORRUPT when the file
 * ends inside an extent; a failed read returns its error (naming the
 * file). After a failure the destinations hold part of the data. */
int ckpt__read_extents_direct(const ckpt_fs *fs, const char *path,
                              ckpt__extent *ext, size_t n);

enum { CKPT__READ_DIRECT = 1, CKPT__READ_BUFFERED = 2 };

/* How a stream read its file. */
typedef struct ckpt__read_report {
    int mode;           /* what the pieces after the probe were read with */
    int probed;         /* the first pieces were read both ways and timed */
    int remembered;     /* no probe: `mode` is the verdict of an earlier probe
                           on the file's device (ckpt__read_extents,
                           read_verdicts.h), whose rates follow */
    int far_read_ahead; /* no probe: the file was not cached and its device
                           reads far ahead (ckpt__read_extents: one reader
                           through the page cache) */
    int streamed;       /* with far_read_ahead: long requests, checksummed
                           by a helper behind the reader
                           (ckpt__read_extents_streamed) */
    double direct_bytes_per_s, buffered_bytes_per_s; /* probe rates */
    size_t piece_bytes;                              /* size of one read */
    int readers;                                     /* reads in flight */
} ckpt__read_report;

/* The same, filling `report` (may be NULL) when the stream ran: with 16
 * pieces or more and a file `fs` can also open through the page cache,
 * the first 4 pieces are read alternately with O_DIRECT and through the
 * cache, timed, and the faster way reads the rest. */
int ckpt__read_extents_report(const ckpt_fs *fs, const char *path,
                              ckpt__extent *ext, size_t n,
                              ckpt__read_report *report);

enum {
    CKPT__PROBE_FIRST = 0, /* as ckpt__read_extents_report */
    CKPT__PROBE_ALL = 1,   /* every piece alternately direct and buffered,
                              timed (the file must also open with
                              open_read): the head of a file whose rest is
                              read the faster way (ckpt__read_extents) */
    CKPT__PROBE_NONE = 2   /* O_DIRECT throughout */
};

/* The direct stream with the probe `probe` asks for; CKPT_ENOTSUP as
 * ckpt__read_extents_direct. */
int ckpt__read_extents_stream(const ckpt_fs *fs, const char *path,
                              ckpt__extent *ext, size_t n,
                              ckpt__read_report *report, int probe);

/* CKPT_EINVAL naming `path` unless the extents are sorted by offset, do
 * not overlap and fit in an int64_t. */
int ckpt__extents_check(const char *path, const ckpt__extent *ext, size_t n);

/* Where the probe's pieces end: the first non-empty extent's aligned
 * start plus 4 direct pieces (0 when every extent is empty). */
uint64_t ckpt__direct_probe_end(const ckpt__extent *ext, size_t n);

/* How many pieces the direct stream reads for these extents. */
size_t ckpt__direct_piece_count(const ckpt__extent *ext, size_t n);

#endif
