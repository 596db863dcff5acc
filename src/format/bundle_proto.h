/* format/bundle_proto.h - the two protobuf messages of a bundle's .index:
 * BundleHeaderProto (value of the key "") and BundleEntryProto (value of
 * every tensor key), encoded exactly as TensorFlow writes them and decoded
 * by proto3 rules (unknown fields skipped, a later scalar wins, message
 * fields merge, repeated scalars packed or not).
 *
 *   BundleHeaderProto:  1 num_shards int32 | 2 endianness enum |
 *                       3 version VersionDef
 *   VersionDef:         1 producer int32 | 2 min_consumer int32 |
 *                       3 bad_consumers repeated int32
 *   BundleEntryProto:   1 dtype enum | 2 shape TensorShapeProto |
 *                       3 shard_id int32 | 4 offset int64 | 5 size int64 |
 *                       6 crc32c fixed32 | 7 slices repeated TensorSliceProto
 *   TensorShapeProto:   2 dim repeated Dim {1 size int64, 2 name string} |
 *                       3 unknown_rank bool
 *   TensorSliceProto:   1 extent repeated Extent {1 start int64,
 *                                                 2 length int64 (oneof)}
 *
 * Example (docs/format.md §4.4), float32 [2, 3], size 24:
 *   08 01 | 12 08 12 02 08 02 12 02 08 03 | 28 18 | 35 7a eb f5 ab
 */
#ifndef CKPT_FORMAT_BUNDLE_PROTO_H
#define CKPT_FORMAT_BUNDLE_PROTO_H

#include "ckpt/common.h"
#include "ckpt/tensor.h"

#include <stdbool.h>
#include <stdint.h>

#define CKPT__BUNDLE_LITTLE_ENDIAN 0
#define CKPT__BUNDLE_BIG_ENDIAN 1

/* bad_consumers values kept by the decoder (more are counted, not kept). */
#define CKPT__BUNDLE_MAX_BAD_CONSUMERS 16

typedef struct ckpt__bundle_header {
    int32_t num_shards;
    int32_t endianness; /* CKPT__BUNDLE_*_ENDIAN; other values are invalid */
    int32_t producer;
    int32_t min_consumer;
    size_t num_bad_consumers; /* as decoded; at most the MAX are kept */
    int32_t bad_consumers[CKPT__BUNDLE_MAX_BAD_CONSUMERS];
    bool bans_consumer_1; /* decoder: 1 appeared among bad_consumers */
} ckpt__bundle_header;

/* One TensorSliceProto: one extent per dimension of the full tensor. */
typedef struct ckpt__tensor_slice {
    int rank;
    int64_t start[CKPT_MAX_RANK];
    int64_t length[CKPT_MAX_RANK]; /* -1: the whole dimension */
} ckpt__tensor_slice;

typedef struct ckpt__bundle_entry {
    int32_t dtype;
    ckpt_shape shape;
    bool unknown_rank;
    int32_t shard_id;
    int64_t offset;
    int64_t size;
    uint32_t crc32c; /* masked */
    int num_slices;
    /* Encoder input only: `num_slices` slices (NULL when none). The decoder
     * counts slices and sets this to NULL; fetch them with
     * ckpt__bundle_entry_get_slice. */
    const ckpt__tensor_slice *slices;
} ckpt__bundle_entry;

/* The header TensorFlow writes: num_shards, host endianness, producer 1. */
void ckpt__bundle_header_init(ckpt__bundle_header *h, int32_t num_shards);

/* Append the encoding of `h` to `out` (the version message is always
 * written, its zero fields omitted; bad_consumers packed). 0/ENOMEM. */
int ckpt__bundle_header_encode(ckpt_buf *out, const ckpt__bundle_header *h);

/* Decode a BundleHeaderProto. 0, or CKPT_ECORRUPT with a message giving the
 * offset of the damage (callers prefix the file name). */
int ckpt__bundle_header_decode(ckpt__bundle_header *h, const uint8_t *p,
                               size_t n);

/* TensorFlow's version rule for a reader with consumer version 1 and
 * minimum producer 0: 0, or CKPT_EVERSION with a message. */
int ckpt__bundle_header_check_version(const ckpt__bundle_header *h);

/* Append the encoding of `e` to `out`: zero scalars omitted, the shape
 * always present (`12 00` for a scalar). 0/ENOMEM. */
int ckpt__bundle_entry_encode(ckpt_buf *out, const ckpt__bundle_entry *e);

/* Decode a BundleEntryProto. Rejects (CKPT_ECORRUPT) malformed wire data,
 * wire types other than those of the schema for known fields, a rank above
 * CKPT_MAX_RANK, negative dims and slices with more than CKPT_MAX_RANK
 * extents. Range checks against the bundle are the reader's. */
int ckpt__bundle_entry_decode(ckpt__bundle_entry *e, const uint8_t *p,
                              size_t n);

/* Decode the `index`-th (0-based) slice of the entry encoded in `p`/`n`.
 * 0, CKPT_ENOTFOUND when there are fewer slices, or CKPT_ECORRUPT. */
int ckpt__bundle_entry_get_slice(ckpt__tensor_slice *out, const uint8_t *p,
                                 size_t n, int index);

#endif
