/* io/mapped_read.h - the 256 KiB page-cache path's pieces copied out of a
 * read-only mapping of the file, their CRC32C computed in the same pass.
 * Not installed.
 *
 *   pread:   page cache --kernel copy--> destination --CRC pass--> crc
 *   mapped:  page cache --one user copy, CRC fused, streaming stores-->
 *            destination and crc
 *
 * A pread of a cached piece is the kernel's copy, then a second pass for
 * the CRC; a mapped piece is read once. Measured on an Intel Xeon VM
 * (2 cores, 64 MiB cached file, 31 paired runs, process CPU time against
 * read() in 4 MiB requests, medians): 256 KiB preads with their CRC
 * 0.72-0.81, mapped pieces 0.89-1.13; two processes at once, as two MPI
 * ranks on two cores: wall time 0.67-0.74 against 0.98-1.15. Extents
 * without a destination (verify) are checksummed in the mapping and not
 * copied at all.
 *
 * Only for the POSIX file system (ckpt_fs_posix() itself: another one's
 * pread is its own), for pieces whose pages are all in the page cache
 * (mincore): a mapped page of a file truncated by another process, or one
 * the device fails to read, raises SIGBUS at the access. The first mapped
 * read installs a handler (kept until the library is unloaded or the
 * process exits, when what it found is put back) that turns a SIGBUS
 * inside a piece being copied by this module into CKPT_EIO for that read,
 * and passes any other SIGBUS on to the handler it found (Open MPI installs
 * one at MPI_Init, cmocka one per test, sanitizers their own) or to the
 * default action. A handler installed after it is left alone: pieces are
 * then read with pread. SIG_IGN found at the first read: pread too. */
#ifndef CKPT_IO_MAPPED_READ_H
#define CKPT_IO_MAPPED_READ_H

#include <stddef.h>
#include <stdint.h>

#include "ckpt/io.h"

/* A read of at most this many bytes (all its extents) uses pread: setting
 * a window up (fstat, sigaction, mmap, munmap) would cost more than the
 * copy it saves. */
#define CKPT__MAPPED_MIN ((uint64_t)1 << 20)

/* Bytes of the file one window maps at most (aligned to its size). */
#define CKPT__MAP_WINDOW ((size_t)32 << 20)

/* One thread's mapping of part of a file. */
typedef struct ckpt__map_window {
    int fd;             /* -1: no mapped reads for this file */
    uint64_t file_size; /* when the window was set up */
    uint8_t *base;      /* NULL: nothing mapped */
    uint64_t at;        /* file offset of base */
    size_t len;
} ckpt__map_window;

/* Set `w` up for `file` of `fs`: mapped reads where `fs` is the POSIX file
 * system (or NULL), the file was opened by its open_read and mapped reads
 * are available (below); otherwise every piece answers 1. */
void ckpt__map_window_init(ckpt__map_window *w, const ckpt_fs *fs,
                           ckpt_file *file);
void ckpt__map_window_dispose(ckpt__map_window *w);

/* Copy the `len` bytes at file offset `at` to `dst` (NULL: checksum only)
 * and set `*crc` to their CRC32C (unmasked, as ckpt__crc32c). Returns 0;
 * 1 when this piece is not read through a mapping (none for this file,
 * past the file's size, a page not in the page cache, mmap refused):
 * nothing done, read it with pread; CKPT_EIO naming `path` when the pages
 * went away during the copy (SIGBUS: the file was truncated, or a read
 * error), `dst` then holding part of the bytes. */
int ckpt__mapped_piece(ckpt__map_window *w, const char *path, uint64_t at,
                       size_t len, uint8_t *dst, uint32_t *crc);

/* Whether mapped reads may be used now: SIGBUS has this module's handler
 * (installed by the first call, unless SIGBUS was ignored). */
int ckpt__mapped_reads_available(void);

/* Tests: 0 turns mapped reads off, 1 or -1 back to the default
 * (available where SIGBUS allows it); -2 as -1, and the next call of
 * ckpt__mapped_reads_available installs the handler again in front of
 * what it finds (in a child process, or after cmocka put its own back). */
void ckpt__mapped_reads_force(int on);

/* Tests: `fn(arg)` runs in ckpt__mapped_piece right before each copy (after
 * the residency check), e.g. to truncate the file there; NULL: none. */
void ckpt__mapped_reads_before_copy(void (*fn)(void *arg), void *arg);

/* The guarded copy itself: `len` bytes of a mapping at `src` to `dst`
 * (NULL: checksum only), their CRC32C in `*crc`. Returns 0, 1 when a
 * SIGBUS at an address in [src, src + len) ended it (`*crc` not set), or 2
 * when no guard was free (64 copies in progress at once; nothing done).
 * Only where ckpt__mapped_reads_available() said 1. */
int ckpt__mapped_copy_guarded(const uint8_t *src, size_t len, uint8_t *dst,
                              uint32_t *crc);

/* The POSIX file system's descriptor of `file` when `fs` (NULL: the
 * default) is ckpt_fs_posix() itself and `file` came from its open_read;
 * else -1. */
int ckpt__posix_read_fd(const ckpt_fs *fs, ckpt_file *file);

#endif
