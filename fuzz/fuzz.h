/* fuzz/fuzz.h - what the fuzz targets share: the targets themselves (one
 * function per parser, called by libFuzzer through entry.c and by the
 * replay driver standalone_driver.c), the capped counting allocator every
 * target installs, invariant checks that abort, and the read-only
 * in-memory file system of mem_fs.c.
 *
 * A target returns 0 for every input. A bug shows as a crash: a sanitizer
 * report, or abort() from CKPT_FUZZ_CHECK, from an allocation above the cap
 * or from memory still held by the library after the input was handled. */
#ifndef CKPT_FUZZ_FUZZ_H
#define CKPT_FUZZ_FUZZ_H

#include "ckpt/io.h"

#include <stddef.h>
#include <stdint.h>

/* ---- targets ------------------------------------------------------------ */

typedef int (*ckpt_fuzz_target_fn)(const uint8_t *data, size_t size);

/* A .index image: ckpt__table_iterate, then a rebuild with the table
 * builder that must read back the same entries. */
int ckpt_fuzz_table(const uint8_t *data, size_t size);
/* flags[1] | index_len[4, LE] | index | data: the bundle reader over an
 * in-memory bundle (open, find, verify, every record, tensor and string
 * tensor). */
int ckpt_fuzz_bundle(const uint8_t *data, size_t size);
/* One protobuf value decoded as a BundleHeaderProto and as a
 * BundleEntryProto; what decodes must re-encode to a fixed point. */
int ckpt_fuzz_pb(const uint8_t *data, size_t size);
/* A `checkpoint` state file: parse; what parses must format and parse back
 * to the same state. */
int ckpt_fuzz_state(const uint8_t *data, size_t size);

/* flags[1] | index_ext[1] | data_ext[1] | state_ext[1] | index_len[4, LE]
 * | index | rest: a checkpoint directory written to real files (FIFOs,
 * sparse holes) and read through the POSIX file system: state file,
 * bundle open, verify, data sizes, record streams. */
int ckpt_fuzz_files(const uint8_t *data, size_t size);

/* flags[1] | pick[1] | state_len[2, LE] | index_len[4, LE] |
 * data0_len[4, LE] | index | state | data0 | data1: a checkpoint directory
 * of real files restored by a saver (ckpt_saver_open, _add_var,
 * _restore_latest, _restore_subset), each restored variable compared with
 * what the bundle reader reads (fuzz_restore.c). */
int ckpt_fuzz_restore(const uint8_t *data, size_t size);

/* The targets by name, for the replay driver; ends with {NULL, NULL}. */
typedef struct ckpt_fuzz_target {
    const char *name; /* "table", "bundle", "pb", "state", "files", ... */
    ckpt_fuzz_target_fn fn;
} ckpt_fuzz_target;

extern const ckpt_fuzz_target ckpt_fuzz_targets[];

/* The entry points libFuzzer calls (entry.c). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- allocator and checks (fuzz_common.c) ------------------------------- */

/* Largest single allocation the library may ask for while a target runs:
 * inputs are at most 1 MiB, so anything bigger means an allocation sized
 * from a length field that the file's size does not justify. */
#define CKPT_FUZZ_ALLOC_CAP ((size_t)64 << 20)
/* Largest total the library may hold at once. */
#define CKPT_FUZZ_LIVE_CAP ((size_t)256 << 20)

/* Install the capped counting allocator (once per process) and note the
 * library's live allocations; call first thing in every target. */
void ckpt_fuzz_begin(void);
/* Abort unless every allocation made since ckpt_fuzz_begin() was freed. */
void ckpt_fuzz_end(const char *target);

/* Print "fuzz check failed at FILE:LINE: WHAT" and abort. */
void ckpt_fuzz_fail(const char *file, int line, const char *what);
#define CKPT_FUZZ_CHECK(cond)                                                  \
    do {                                                                       \
        if (!(cond))                                                           \
            ckpt_fuzz_fail(__FILE__, __LINE__, #cond);                         \
    } while (0)

/* Read every byte of `p` so a sanitizer sees any out-of-bounds or
 * uninitialised memory handed back by the library. */
void ckpt_fuzz_touch(const void *p, size_t n);

/* Rewrite the masked CRC32C in the trailer of every block of the table
 * image `img` that its footer and (uncompressed) index block point at and
 * that lies inside the image. Returns the number of trailers written. The
 * targets run a mutated table both as is and repaired, so the decoders
 * behind the checksum see mutated blocks too. */
int ckpt_fuzz_fix_table_crcs(uint8_t *img, size_t n);

/* Make a fresh directory "$TMPDIR/ckpt-fuzz-<tag>-XXXXXX" (/tmp without
 * TMPDIR) into `dir` (`cap` bytes); a failure fails the input. For the
 * targets that read real files. */
void ckpt_fuzz_make_temp_dir(char *dir, size_t cap, const char *tag);

/* An input of the bundle and files targets: `header` bytes (a little-
 * endian 32-bit index length at data[len_at]), the index (that long, cut
 * to what there is), then the rest. With fix_crcs the index is a copy
 * repaired by ckpt_fuzz_fix_table_crcs, which `owned` holds (free it). */
typedef struct ckpt_fuzz_split {
    const uint8_t *index;
    size_t index_len;
    const uint8_t *rest;
    size_t rest_len;
    uint8_t *owned; /* the repaired copy, or NULL */
} ckpt_fuzz_split;

/* Split `data` (size >= header) as above. */
void ckpt_fuzz_split_index(ckpt_fuzz_split *s, const uint8_t *data, size_t size,
                           size_t header, size_t len_at, int fix_crcs);

/* ---- in-memory read-only file system (mem_fs.c) ------------------------- */

#define CKPT_FUZZ_MEM_FILES 4

typedef struct ckpt_fuzz_mem_file {
    const char *path;    /* full path; with `prefix`, any path starting so */
    const uint8_t *data; /* borrowed */
    size_t size;
    int prefix;
} ckpt_fuzz_mem_file;

/* A file system holding up to CKPT_FUZZ_MEM_FILES borrowed byte ranges.
 * Reads work (open_read, pread, size, close, stat, list); every method
 * that would change something fails with CKPT_EACCES. */
typedef struct ckpt_fuzz_mem_fs {
    ckpt_fs fs; /* hand &m->fs to the library */
    ckpt_fuzz_mem_file files[CKPT_FUZZ_MEM_FILES];
    int nfiles;
    int open_files; /* opened and not yet closed */
} ckpt_fuzz_mem_fs;

void ckpt_fuzz_mem_fs_init(ckpt_fuzz_mem_fs *m);
/* Add a file at `path` (all paths starting with `path` when `prefix`);
 * the strings and bytes must outlive the file system. */
void ckpt_fuzz_mem_fs_add(ckpt_fuzz_mem_fs *m, const char *path,
                          const uint8_t *data, size_t size, int prefix);

/* A write-only file system: open_write (any path) empties `data` and
 * returns a file whose writes append to it. */
typedef struct ckpt_fuzz_sink {
    ckpt_fs fs;
    ckpt_buf data;
} ckpt_fuzz_sink;

void ckpt_fuzz_sink_init(ckpt_fuzz_sink *s);
void ckpt_fuzz_sink_dispose(ckpt_fuzz_sink *s);

#endif
