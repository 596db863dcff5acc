/* format/table.h - the SSTable file of a bundle's .index (LevelDB table
 * format): data blocks, an empty metaindex block, an index block, each
 * followed by a 5-byte trailer (type, masked CRC32C), then a 48-byte footer
 * ending in the magic 0xdb4775248b80fb57.
 *
 *   [data block | trailer]* [metaindex | trailer] [index | trailer] footer
 *   footer: handle(metaindex) handle(index) zero padding to 40 | magic[8]
 */
#ifndef CKPT_FORMAT_TABLE_H
#define CKPT_FORMAT_TABLE_H

#include "block.h"
#include "ckpt/io.h"

#define CKPT__TABLE_FOOTER_SIZE 48
#define CKPT__TABLE_TRAILER_SIZE 5
#define CKPT__TABLE_MAGIC 0xdb4775248b80fb57ull
#define CKPT__TABLE_BLOCK_SIZE 262144 /* TensorFlow's table block size */
#define CKPT__BLOCK_TYPE_NONE 0
#define CKPT__BLOCK_TYPE_SNAPPY 1

/* ---- builder: streams blocks to an open file ---------------------------- */

typedef struct ckpt__table_builder ckpt__table_builder;

/* Build a table into `file` (opened by `fs` for writing, at offset 0).
 * `name` is used in error messages. block_size 0 = 262144. */
int ckpt__table_builder_new(ckpt__table_builder **out, const ckpt_fs *fs,
                            ckpt_file *file, const char *name,
                            size_t block_size);
/* Add a key/value; keys strictly increasing (asserted). First error sticks
 * and is returned by every later call. */
int ckpt__table_builder_add(ckpt__table_builder *t, const void *key,
                            size_t key_len, const void *value,
                            size_t value_len);
/* Write the last data block, metaindex, index and footer (does not sync or
 * close the file). */
int ckpt__table_builder_finish(ckpt__table_builder *t);
/* Bytes written so far. */
uint64_t ckpt__table_builder_file_size(const ckpt__table_builder *t);
void ckpt__table_builder_free(ckpt__table_builder *t);

/* ---- reader ------------------------------------------------------------- */

/* The largest block a reader accepts, stored or decompressed (32 MiB;
 * TensorFlow's are 256 KiB, or one entry when an entry is larger). */
#define CKPT__TABLE_MAX_BLOCK ((uint64_t)32 << 20)

/* Validate the table image `file`/`n` (footer, magic, handles, every block's
 * trailer type and CRC, Snappy blocks decompressed, block structure, data
 * blocks in file order without overlap, keys strictly increasing across the
 * table, index separators consistent) and report every key/value in order.
 * `name` names the file in errors. Returns 0, the callback's non-zero
 * value, CKPT_ECORRUPT or CKPT_ENOMEM. */
int ckpt__table_iterate(const uint8_t *file, size_t n, const char *name,
                        ckpt__block_entry_cb cb, void *payload);

/* The same for the table in the open file `f` of `size` bytes, read block
 * by block (never whole): the index block and one data block are held at
 * a time, each at most CKPT__TABLE_MAX_BLOCK bytes as stored and as
 * decompressed (so each allocation stays below the fuzzers' 64 MiB cap).
 * I/O errors as ckpt__fs_pread's. */
int ckpt__table_iterate_file(const ckpt_fs *fs, ckpt_file *f, uint64_t size,
                             const char *name, ckpt__block_entry_cb cb,
                             void *payload);

/* Separator helpers (LevelDB's bytewise comparator), exposed for tests:
 * shorten `start` (in place) to a string in [start, limit). */
int ckpt__table_shortest_separator(ckpt_buf *start, const uint8_t *limit,
                                   size_t limit_len);
/* Shorten `key` (in place) to a short string >= key. */
void ckpt__table_short_successor(ckpt_buf *key);

#endif
