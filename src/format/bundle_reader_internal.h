/* format/bundle_reader_internal.h - the bundle reader's insides, shared by
 * the files of the reading side. Not installed.
 *
 * The first part is what the record stream (bundle_stream.c) and the
 * partitioned-tensor code (bundle_slices_read.c) use: reading part of a
 * record through the reader's open data file, and the facts about the
 * bundle they need. The second part is the reader itself, for the files
 * that implement ckpt_bundle_reader's public calls, one job each:
 *
 *   bundle_reader.c        open: loading and validating the index; entry
 *                          lookup and the accessors; free
 *   bundle_reader_entries.c  the index entries kept compactly, and the
 *                          public ckpt_tensor_entry made for one when the
 *                          API hands it out
 *   bundle_reader_data.c   the data files: opened on first use, records
 *                          located in them, read, CRC-checked, byte-swapped
 *   bundle_reader_read.c   one tensor: fixed-size, raw record, strings,
 *                          partitioned tensors assembled; data_size
 *   bundle_read_many.c     several tensors at once, planned in file order
 *   bundle_reader_check.c  check (one tensor, bounded memory) and verify */
#ifndef CKPT_FORMAT_BUNDLE_READER_INTERNAL_H
#define CKPT_FORMAT_BUNDLE_READER_INTERNAL_H

#include "ckpt/bundle.h"

#include <stdbool.h>
#include <stdint.h>

/* Open the data file of entry `e` (a record, num_slices == 0) and check
 * that the record lies inside it. 0, CKPT_EINVAL (a partitioned tensor's
 * full entry, or a bad entry), CKPT_ENOTFOUND / CKPT_EIO (data file) or
 * CKPT_ECORRUPT (record past the end of the data file), each naming the
 * data file and the tensor. */
int ckpt__bundle_reader_check_record(ckpt_bundle_reader *r,
                                     const ckpt_tensor_entry *e);

/* Read bytes [off, off + n) of the record of `e` (checked by
 * ckpt__bundle_reader_check_record; off + n <= e->size) into `dst`.
 * CKPT_ECORRUPT when the data file ends early; errors name file and
 * tensor. */
int ckpt__bundle_reader_read_part(ckpt_bundle_reader *r,
                                  const ckpt_tensor_entry *e, uint64_t off,
                                  void *dst, size_t n);

/* Read the record of `e` to its end through a ckpt_record_stream, its CRC
 * checked even when the reader skips checksums (DT_VARIANT excepted);
 * not for DT_STRING. */
int ckpt__bundle_reader_stream_check(ckpt_bundle_reader *r,
                                     const ckpt_tensor_entry *e);

/* Check the record of the unpartitioned entry `e` as
 * ckpt_bundle_reader_check does: streamed with its CRC, or, a string
 * record, read whole with its length checksum. */
int ckpt__bundle_reader_record_check(ckpt_bundle_reader *r,
                                     const ckpt_tensor_entry *e);

/* Whether the bundle's byte order differs from the host's, and whether
 * the reader was told to skip data checksums. */
bool ckpt__bundle_reader_swaps(const ckpt_bundle_reader *r);
bool ckpt__bundle_reader_skips_crc(const ckpt_bundle_reader *r);

/* The data file name of `e` for messages (valid until the next read). */
const char *ckpt__bundle_reader_data_path(const ckpt_bundle_reader *r);

/* ---- the reader itself (bundle_reader*.c, bundle_read_many.c) ---------- */

#include "format/bundle_slices.h"
#include "format/bundle_text.h"
#include "io/direct_read.h"
#include "io/fs_internal.h"

/* One index entry as the reader keeps it: 64 bytes whatever its rank.
 * Its key (then a NUL) lies in a name block, its dimensions in an arena; the
 * public ckpt_tensor_entry (328 bytes, a CKPT_MAX_RANK shape inline) is
 * made only for an entry the API hands out, and then kept until the
 * reader is freed, as bundle.h promises (`cached`: 1 + its place in the
 * pool, 0 while it has none).
 *
 *   recs[i]   name dims_off offset size cached | name_len dtype
 *             shard_id num_slices crc32c | rank is_slice_key
 *   names     key 0 key 0 ...            (blocks that never move: keys
 *             under 8 KiB packed in blocks of up to 64 KiB, a longer one
 *             in a block of its own, so the keys cost their bytes and
 *             little more, at most 8 KiB unused at the end of a block,
 *             never a doubled arena's copy)
 *   dims      d0 d1 | d0 | ...           (int64, `rank` per entry)
 *   pool      chunks of 16, 32, 64, ... public entries, each followed by its
 *             index; a chunk never moves, so handed-out pointers stay */
typedef struct ckpt__entry_rec {
    const char *name; /* its key, in one of the name blocks */
    size_t dims_off;
    int64_t offset;
    int64_t size;
    size_t cached;
    uint32_t name_len; /* a key fits one index block (at most 32 MiB) */
    int32_t dtype;
    int32_t shard_id;
    int32_t num_slices;
    uint32_t crc32c;
    uint8_t rank;
    uint8_t is_slice_key;
} ckpt__entry_rec;

/* The entries of a reader, in key order. */
typedef struct ckpt__entry_table {
    ckpt__entry_rec *recs;
    size_t count, cap;
    struct ckpt__name_block {
        char *bytes;
        size_t size;
        size_t used; /* the bytes keys were written to: the rest of the
                        block is uninitialised, and never read */
    } * name_blocks; /* every block of keys (to free them, and to know
                        a name pointing into one): in address order once
                        the table is trimmed (blocks_sorted) */
    size_t nblocks, blocks_cap;
    bool blocks_sorted; /* name_blocks in address order: binary search */
    char *room;         /* the free end of the block keys are packed in */
    size_t room_block;  /* that block's place in name_blocks (loading) */
    size_t room_left;   /* its bytes */
    size_t next_block;  /* the size of the next packed block */
    int64_t *dims;
    size_t dims_len, dims_cap;
    struct ckpt__entry_pool *pool; /* the public entries handed out */
} ckpt__entry_table;

/* An open data file of the bundle. */
struct ckpt__bundle_shard {
    int id;
    ckpt_file *file;
    uint64_t size;
};

struct ckpt_bundle_reader {
    const ckpt_fs *fs;
    char *prefix;
    ckpt_buf index_path;
    int num_shards;
    int endianness;
    bool skip_crc;
    ckpt__entry_table tab;             /* the entries, key order */
    struct ckpt__bundle_shard *shards; /* open data files, sorted by id */
    size_t nshards;
    size_t shards_cap;
    size_t next_close;           /* the open one to close to open another */
    ckpt_buf path;               /* scratch: a data file's name */
    ckpt__sliced_entries sliced; /* values of partitioned entries */
    ckpt__read_report stream;    /* the last streamed read (mode 0: none) */
    uint64_t stream_bytes;       /* bytes it read */
    uint64_t piece_lookups;      /* a partitioned tensor's pieces looked up in
                                    the index so far (a statistic for tests) */
    uint8_t *piece_marks; /* NULL, or a byte per entry (bundle_reader_check.c):
                             which full entries' slice lists were walked and
                             which pieces they list */
};

/* The name of `e` as messages show it. */
static inline const char *ckpt__bundle_entry_shown(ckpt__shown_name *s,
                                                   const ckpt_tensor_entry *e)
{
    return ckpt__show_name(s, e->name, e->name_len);
}

/* bundle_reader_entries.c */

/* Start an empty table (its pool allocated): 0 or CKPT_ENOMEM. */
int ckpt__entry_table_init(ckpt__entry_table *t);

/* Append the entry `key` (key_len bytes) decoded as `be`, after the
 * entries before it in key order. 0 or CKPT_ENOMEM. */
int ckpt__entry_table_add(ckpt__entry_table *t, const uint8_t *key,
                          size_t key_len, const ckpt__bundle_entry *be);

/* Give the arrays back their unused room once every entry is in (they do
 * not move afterwards: handed-out entries point into them), and order the
 * blocks of keys by address, so that a filled entry's name is placed in
 * its block by a binary search (ckpt__entry_table_name_block). */
void ckpt__entry_table_trim(ckpt__entry_table *t);

void ckpt__entry_table_dispose(ckpt__entry_table *t);

/* The key of entry `rec` (NUL-terminated; rec->name_len bytes). */
static inline const char *ckpt__entry_rec_name(const ckpt__entry_table *t,
                                               const ckpt__entry_rec *rec)
{
    (void)t;
    return rec->name;
}

/* Fill `out` with entry `i` (out->name points into the table): for a
 * caller that uses the entry only while it runs. */
void ckpt__entry_table_fill(const ckpt__entry_table *t, size_t i,
                            ckpt_tensor_entry *out);

/* Entry `i` (< count) in its public form, made the first time it is asked
 * for and kept until the table is disposed; NULL (CKPT_ENOMEM set) when
 * there is no memory for it. */
const ckpt_tensor_entry *ckpt__entry_table_get(const ckpt__entry_table *t,
                                               size_t i);

/* Whether the key of `n` bytes at `key` is an entry's: its index in *at. */
bool ckpt__entry_table_search(const ckpt__entry_table *t, const void *key,
                              size_t n, size_t *at);

/* Whether `e` is one of the public entries the table handed out (by
 * address alone, `e` is not read): its index in *at. */
bool ckpt__entry_table_handed_out(const ckpt__entry_table *t,
                                  const ckpt_tensor_entry *e, size_t *at);

/* The block of keys holding `name` with its `len` bytes and its NUL
 * inside the bytes keys were written to (compared as addresses: nothing
 * is read; a name in a block's unused, uninitialised rest is in none),
 * or SIZE_MAX. A binary search
 * once the table is trimmed: an ownership check costs log(blocks), not
 * one look per block (a walk over every entry of an index of long keys,
 * each in a block of its own, would be quadratic). *probes (when not
 * NULL) is increased by the blocks looked at, for tests. */
size_t ckpt__entry_table_name_block(const ckpt__entry_table *t,
                                    const char *name, size_t len,
                                    size_t *probes);

/* Whether `e` is one of the table's entries as the API gives them: one
 * handed out, or a copy filled by ckpt__entry_table_fill
 * (ckpt_bundle_reader_entry_fill) whose name points into the table and
 * whose fields are all as filled; its index in *at. A foreign entry's
 * name is never read. */
bool ckpt__entry_table_owns(const ckpt__entry_table *t,
                            const ckpt_tensor_entry *e, size_t *at);

/* The index of `e`: an entry handed out, or a copy of one filled by
 * ckpt__entry_table_fill (looked up by its key). */
bool ckpt__entry_table_index_of(const ckpt__entry_table *t,
                                const ckpt_tensor_entry *e, size_t *at);

/* qsort comparator of `const ckpt__entry_rec *` elements: records in
 * data-file order (by shard, offset, then size). */
int ckpt__rec_by_record_position(const void *a, const void *b);

/* bundle_reader.c */

/* Fill `out` with the entry named `name` (out->name points into the
 * reader) and, `at` not NULL, its index in *at: for the library's own
 * lookups, which use the entry only while they run, so that looking up
 * N names keeps nothing per name (ckpt_bundle_reader_find hands out a
 * public entry, kept until the reader is freed). Errors as
 * ckpt_bundle_reader_find's: CKPT_ENOTFOUND with its hints. */
int ckpt__bundle_reader_lookup(ckpt_tensor_entry *out, size_t *at,
                               const ckpt_bundle_reader *r, const char *name);

/* bundle_reader_data.c */

/* Open the record's data file (kept open) and check the record lies
 * inside it; *out is the data file. Leaves the data file's name in
 * r->path. CKPT_ENOTSUP for a partitioned tensor's full entry. */
int ckpt__bundle_reader_locate(ckpt_bundle_reader *r,
                               const ckpt_tensor_entry *e,
                               struct ckpt__bundle_shard **out);

/* Read the record of `e` into dst; with `crc` not NULL also extend *crc
 * over it, piece by piece. */
int ckpt__bundle_reader_read_into(ckpt_bundle_reader *r,
                                  const ckpt_tensor_entry *e, void *dst,
                                  uint32_t *crc);

/* The stored (masked) CRC of `e` against the computed `crc`:
 * CKPT_ECORRUPT naming both when they differ. */
int ckpt__bundle_reader_compare_crc(const ckpt_bundle_reader *r,
                                    const ckpt_tensor_entry *e, uint32_t crc);

/* Bring a record read into `dst` to the host's form: its byte order, and
 * a bool's bytes 0 or 1 (ckpt__record_bools_to_host). */
void ckpt__bundle_reader_to_host(const ckpt_bundle_reader *r,
                                 const ckpt_tensor_entry *e, void *dst);

/* Read the checked entry `e` of a fixed-size tensor into dst: CRC
 * compared unless the reader skips checksums, then in host order. */
int ckpt__bundle_reader_read_checked(ckpt_bundle_reader *r,
                                     const ckpt_tensor_entry *e, void *dst);

/* bundle_read_many.c: the checks ckpt_bundle_reader_read_many makes of a
 * request before it reads any, for tensor `name` read into `dst_size`
 * bytes, nothing read: a fixed-size tensor of that size whose record (or
 * each piece's, which then cover it exactly once, none outside its shape)
 * lies inside its data file; errors as read_many's (CKPT_ENOTFOUND for a
 * data file that is not there). For a caller that must check every tensor
 * before it writes any and reads some another way. */
int ckpt__bundle_reader_check_read(ckpt_bundle_reader *r, const char *name,
                                   size_t dst_size);

/* bundle_reader_read.c */

/* Append the record of `e` to `out`, its CRC checked when `check_crc`. */
int ckpt__bundle_reader_load_record(ckpt_bundle_reader *r,
                                    const ckpt_tensor_entry *e, ckpt_buf *out,
                                    bool check_crc);

/* The entry of a fixed-size tensor `name` that may be read into `dst` of
 * `dst_size` bytes, filled into `out` (its index in *at when `at` is not
 * NULL), or an error naming what is wrong. */
int ckpt__bundle_reader_read_target(ckpt_tensor_entry *out, size_t *at,
                                    ckpt_bundle_reader *r, const char *name,
                                    const void *dst, size_t dst_size);

/* What the partitioned-tensor code needs to read `e`. */
int ckpt__bundle_reader_partitioned_read_of(ckpt__partitioned_read *pr,
                                            ckpt_bundle_reader *r,
                                            const ckpt_tensor_entry *e);

/* What assembling the partitioned tensor `e` needs, for a call that sizes
 * or checks it whole: CKPT_ENOTSUP naming the tensor when its dtype is not
 * assembled (strings, dtypes without a fixed size). */
int ckpt__bundle_reader_assembly_of(ckpt__partitioned_read *pr,
                                    ckpt_bundle_reader *r,
                                    const ckpt_tensor_entry *e);

/* 0 when `e` has a record of its own, else (a partitioned tensor's full
 * entry) CKPT_ENOTSUP naming the tensor. */
int ckpt__bundle_reader_has_record(const ckpt_bundle_reader *r,
                                   const ckpt_tensor_entry *e);

/* 0 when `e` is one of r's entries, else CKPT_EINVAL naming the public
 * call `call` and the index. */
int ckpt__bundle_reader_owns(const ckpt_bundle_reader *r,
                             const ckpt_tensor_entry *e, const char *call);

/* Assemble the partitioned tensor `e` from its slice entries into dst. */
int ckpt__bundle_reader_read_partitioned(ckpt_bundle_reader *r,
                                         const ckpt_tensor_entry *e, void *dst,
                                         size_t dst_size);

/* Read the string tensor `e` into `out` (its layout and length checksum
 * always checked, its CRC when `check_crc`). */
int ckpt__bundle_reader_read_strings_entry(ckpt_bundle_reader *r,
                                           const ckpt_tensor_entry *e,
                                           ckpt_string_array *out,
                                           bool check_crc);

#endif
