/* tests/format/hostile_bytes.h - hostile bundle files built byte by byte
 * from the format (not with the library's writer), and running code under
 * a memory and time limit, for the tests of the reader's bounds (issue 14:
 * special files, sizes, shapes, arithmetic, work amplification).
 *
 *   table:  [data block | type | crc] [metaindex | type | crc]
 *           [index block | type | crc] footer(48: handles, padding, magic)
 *   block:  entries (shared 0, non_shared, value_len, key, value), one
 *           restart point per entry, fixed32 restart count
 *   protos: BundleHeaderProto {1: num_shards}; BundleEntryProto {1: dtype,
 *           2: shape {2: dim {1: size}}, 3: shard_id, 4: offset, 5: size,
 *           6: crc32c (fixed32), 7: slices {1: extent {1: start, 2: length}}}
 */
#ifndef CKPT_TESTS_FORMAT_HOSTILE_BYTES_H
#define CKPT_TESTS_FORMAT_HOSTILE_BYTES_H

#include "ckpt.h"

#include <stdbool.h>
#include <stdint.h>

/* ---- protos -------------------------------------------------------------- */

void hb_varint(ckpt_buf *b, uint64_t v);
void hb_fixed32(ckpt_buf *b, uint32_t v);
void hb_fixed64(ckpt_buf *b, uint64_t v);

/* BundleHeaderProto with `num_shards` (little-endian, no version). */
void hb_header(ckpt_buf *out, int num_shards);

/* A BundleEntryProto: `dtype`, shape dims[0..rank), shard 0, `offset`,
 * `size`, masked `crc`; with `slice_lengths` not NULL one slice covering
 * [0, slice_lengths[d]) of each dimension (the entry is then a partitioned
 * tensor's full entry, without offset/size/crc). */
void hb_entry(ckpt_buf *out, int dtype, const int64_t *dims, int rank,
              int64_t offset, int64_t size, uint32_t crc,
              const int64_t *slice_lengths);

/* ---- tables -------------------------------------------------------------- */

/* An index file at `path` whose index block has `n` entries ("k00000000",
 * ...) all naming one data block, `block` of `block_len` bytes stored as
 * `type`: what makes a reader without bounds read it `n` times. */
void hb_write_repeated_handles(const char *path, const void *block,
                               size_t block_len, int type, size_t n);

/* A 1 MiB block without entries and with 262,143 restart points, all 0
 * (malloc'd; *n = its size). */
uint8_t *hb_restart_flood(size_t *n);

/* hb_restart_flood's block compressed with Snappy (malloc'd; *n = its
 * size, under 100,000 bytes: the 49 KB variant). */
uint8_t *hb_restart_flood_snappy(size_t *n);

/* An index file at `path` for a one-shard bundle: the header and the
 * entries name[i] -> entry[i] (names sorted, each below "\xff"), in one
 * data block (bt_write_raw_table). */
void hb_write_index(const char *path, const char *const *names,
                    const ckpt_buf *entries, size_t n);

/* A one-shard bundle holding a partitioned float tensor "w" of shape
 * dims[0..rank) with one piece, [0, lengths[d]) of each dimension, whose
 * record is `piece_bytes` zero bytes (the slice key made by
 * ckpt__slice_key_encode). */
void hb_write_partitioned(const char *index, const char *data,
                          const int64_t *dims, const int64_t *lengths, int rank,
                          uint64_t piece_bytes);

/* A one-shard bundle holding a float tensor "w" of shape [rows, cols]
 * split along its rows into `k` pieces (rows / k each, records of zeros
 * one after the other in the data file). With `repeat_first` 1 the full
 * entry lists the first piece again instead of the last: the sizes add
 * up, but the pieces overlap and leave rows uncovered. With
 * HB_LEAVE_LAST_UNLISTED "w" is rows - rows / k rows, which the first
 * k - 1 pieces cover and its entry lists: the last piece is in the index
 * and its data file, but no reader looks for it. */
#define HB_LEAVE_LAST_UNLISTED 2
void hb_write_row_pieces(const char *index, const char *data, int64_t rows,
                         int64_t cols, int k, int repeat_first);

/* A one-shard bundle of an entry keyed `key` (`key_len` bytes: a slice
 * key, or any key starting with a 0 byte) holding float [2], and a float
 * tensor "x" of shape [2] beside it; both records zeros. */
void hb_write_stray_piece(const char *index, const char *data, const void *key,
                          size_t key_len);

/* The record of the `n` strings `strs` as TensorFlow writes a string
 * tensor's (appended to `rec`): their lengths as varints, the masked
 * checksum of the lengths, the bytes; its entry's masked CRC (over the
 * lengths as 8-byte words, that checksum and the bytes) into `*crc`. With
 * `big_endian` the words and the checksum are a big-endian machine's. */
void hb_string_record(ckpt_buf *rec, uint32_t *crc, const char *const *strs,
                      int n, bool big_endian);

/* The masked CRC32C of `n` zero bytes. */
uint32_t hb_zeros_crc(uint64_t n);

/* Make `path` a sparse file of `size` bytes whose last `n` bytes are
 * `tail` (n may be 0). */
void hb_write_sparse(const char *path, uint64_t size, const void *tail,
                     size_t n);

/* ---- bounded runs -------------------------------------------------------- */

/* Run fn(arg) in a child process with its address space limited to
 * `max_memory` bytes (not under a sanitizer, which reserves terabytes of
 * address space itself; see test_limit_self) and its wall-clock time to
 * `seconds` (SIGALRM). Returns fn's result (a ckpt error code or 0) with the
 * child's last error message copied into msg (`cap` bytes), or HB_KILLED when
 * the child did not finish (killed by the alarm or a crash; msg says which
 * signal). */
#define HB_KILLED 1000
int hb_bounded(int (*fn)(void *), void *arg, uint64_t max_memory,
               unsigned seconds, char *msg, size_t cap);

#endif
