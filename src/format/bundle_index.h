/* format/bundle_index.h - writing a bundle's .index from entries whose
 * data files were written elsewhere: the merge step of a sharded save
 * (docs/format.md §7), where every process wrote its own data file and one
 * process writes the single index over all of them.
 *
 *   <prefix>.index: SSTable { "" -> BundleHeaderProto{num_shards},
 *                             key -> BundleEntryProto (bytewise order) } */
#ifndef CKPT_FORMAT_BUNDLE_INDEX_H
#define CKPT_FORMAT_BUNDLE_INDEX_H

#include "ckpt/io.h"

#include <stddef.h>
#include <stdint.h>

/* One index entry: a key (may contain 0 bytes) and its encoded
 * BundleEntryProto. */
typedef struct ckpt__index_kv {
    const char *key;
    size_t key_len;
    const uint8_t *value;
    size_t value_len;
} ckpt__index_kv;

/* Write <prefix>.index holding `kvs` (sorted here in place; keys must be
 * distinct) under a header of `num_shards` data files: a temporary file,
 * fsynced, renamed into place, the directory fsynced. Nothing is left
 * behind on failure; when the last directory fsync failed, the index's
 * removal is not durable either, so the caller must fsync the directory
 * before removing the data files it names (ckpt__mpi_commit does, through
 * ckpt__remove_checkpoint_files). `bytes_out` (may be NULL) receives the
 * file size.
 * 0, CKPT_EINVAL (duplicate key, named) or an I/O error. */
int ckpt__bundle_index_write(const ckpt_fs *fs, const char *prefix,
                             int num_shards, ckpt__index_kv *kvs, size_t n,
                             uint64_t *bytes_out);

#endif
