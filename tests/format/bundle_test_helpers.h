/* tests/format/bundle_test_helpers.h - small helpers shared by the bundle
 * tests: paths in a temporary directory, listing it, and building index
 * files from raw key/value pairs (to inject bad entries). */
#ifndef CKPT_TESTS_BUNDLE_TEST_HELPERS_H
#define CKPT_TESTS_BUNDLE_TEST_HELPERS_H

#include "test_util.h"

#include "common/internal.h"
#include "format/bundle_proto.h"

#include <stdbool.h>

/* Number of entries in `dir`; with `suffix`, only names ending in it; with
 * `contains`, only names containing it (either may be NULL). */
size_t bt_count_files(const char *dir, const char *suffix,
                      const char *contains);

/* Print the entries of `dir` (for failure diagnostics). */
void bt_list_files(const char *dir);

/* One key/value of a hand-made index. */
typedef struct bt_kv {
    const void *key;
    size_t key_len;
    const void *value;
    size_t value_len;
} bt_kv;

/* Write a table of `kvs` (keys strictly increasing) to `path` with the
 * library's table builder. */
void bt_write_table(const char *path, const bt_kv *kvs, size_t n);

/* ---- tables byte by byte (not with the library's table builder) ---- */

/* Append a block of `n` entries kvs[i] (keys as given, not checked) to
 * `out`: each entry a restart point, then the restart array and count. */
void bt_block(ckpt_buf *out, const bt_kv *kvs, size_t n);

/* Append `block` to `file` with its trailer (type 0, or 1 = Snappy, and
 * the masked CRC32C of the stored bytes and the type); the block's handle
 * (offset, size) is appended to `handle` when not NULL. */
void bt_put_block(ckpt_buf *file, const void *block, size_t n, int type,
                  ckpt_buf *handle);

/* Append the 48-byte footer naming the two handles. */
void bt_put_footer(ckpt_buf *file, const ckpt_buf *meta_handle,
                   const ckpt_buf *index_handle);

/* Write a single-data-block table by hand, keys in the given order, not
 * checked (for out-of-order keys); every entry is a restart point and the
 * index key is `index_key`. */
void bt_write_raw_table(const char *path, const bt_kv *kvs, size_t n,
                        const char *index_key);

/* Encoded BundleHeaderProto / BundleEntryProto into `out` (replacing). */
void bt_header(ckpt_buf *out, int num_shards, int endianness);
void bt_entry(ckpt_buf *out, const ckpt__bundle_entry *e);

/* An entry of `dtype` and rank-1 shape [dim0] (rank 0 when dim0 < 0). */
ckpt__bundle_entry bt_make_entry(int dtype, int64_t dim0, int shard,
                                 int64_t offset, int64_t size, uint32_t crc);

/* The usual fixture: a fresh temporary directory and the paths of a
 * one-shard bundle "ckpt" in it, with its state file. */
typedef struct bt_fixture {
    char *dir;
    char *prefix; /* <dir>/ckpt */
    char *index;  /* <dir>/ckpt.index */
    char *data0;  /* <dir>/ckpt.data-00000-of-00001 */
    char *state;  /* <dir>/checkpoint */
} bt_fixture;

/* Make the directory and fill in the paths; bt_fixture_remove deletes the
 * tree and frees them. */
void bt_fixture_make(bt_fixture *f);
void bt_fixture_remove(bt_fixture *f);

/* cmocka setup and teardown making and removing a bt_fixture. */
int bt_setup(void **state);
int bt_teardown(void **state);

/* A shape of `rank` dimensions `dims`. */
ckpt_shape bt_shape(int rank, const int64_t *dims);

/* The index file `index` read two ways, as "<hexkey> <hexvalue>" lines
 * ("-" for an empty key or value): by our table reader into `ours`, and by
 * LevelDB (leveldb_table_dump); asserts that the two are the same bytes.
 * Defined only in tests built with CKPT_LEVELDB_DUMP
 * (ckpt_use_leveldb_dump in tests/format/CMakeLists.txt). */
void bt_expect_leveldb_reads_same(const char *index, ckpt_buf *ours);

#endif
