/* format/bundle_slices.h - partitioned (sliced) tensors of a bundle
 * (docs/format.md §6): the binary slice key of a piece, the checks and
 * bookkeeping the writer needs to add pieces, and assembling a whole tensor
 * from its pieces for the reader.
 *
 *   full entry  "w"                -> BundleEntryProto {dtype, full shape,
 *                                     slices: TensorSliceProto per piece}
 *   piece entry <slice key of w>   -> ordinary BundleEntryProto + record
 *   slice key:  00 | name (00 -> 00 FF, FF -> FF 00) 00 01 | rank (unsigned)
 *               | start, length (signed; full extent: 0, -1) per dimension
 *   ordered-code unsigned: n | n bytes big-endian    (0 -> 00, 300 -> 02 01 2C)
 *   ordered-code signed:   L-byte big-endian two's complement, first L bits
 *                          inverted                  (0 -> 80, -1 -> 7F)
 *
 * The TensorSliceProto itself is encoded and decoded by format/bundle_proto
 * (ckpt__tensor_slice, ckpt__bundle_entry.slices). */
#ifndef CKPT_FORMAT_BUNDLE_SLICES_H
#define CKPT_FORMAT_BUNDLE_SLICES_H

#include "ckpt/bundle.h"
#include "format/bundle_proto.h"

#include <stdbool.h>
#include <stdint.h>

/* ---- slice keys -------------------------------------------------------- */

/* Append the ordered-code encoding of an unsigned / signed number. 0 or
 * CKPT_ENOMEM. */
int ckpt__ordered_put_unsigned(ckpt_buf *out, uint64_t v);
int ckpt__ordered_put_signed(ckpt_buf *out, int64_t v);

/* Decode one ordered-code number at *p (< end), advancing *p. 0, or
 * CKPT_ECORRUPT (truncated or not canonical) without a message. */
int ckpt__ordered_get_unsigned(const uint8_t **p, const uint8_t *end,
                               uint64_t *out);
int ckpt__ordered_get_signed(const uint8_t **p, const uint8_t *end,
                             int64_t *out);

/* The slice key of piece `s` (rank >= 1; a length of -1 is a full extent)
 * of tensor `name` (`name_len` bytes) into `out`, replacing its contents.
 * 0, CKPT_EINVAL (rank out of range) or CKPT_ENOMEM. */
int ckpt__slice_key_encode(ckpt_buf *out, const char *name, size_t name_len,
                           const ckpt__tensor_slice *s);

/* Split a slice key into the tensor name (into `name`, replacing) and the
 * piece (negative lengths become -1). 0, or CKPT_ECORRUPT with a message
 * giving the byte offset of the damage. */
int ckpt__slice_key_decode(ckpt_buf *name, ckpt__tensor_slice *s,
                           const void *key, size_t key_len);

/* The piece in TensorFlow's slice-spec notation, "start,length" per
 * dimension joined by ':' and "-" for a full extent (e.g. "0,2:-"), into
 * `out`, replacing. 0 or CKPT_ENOMEM. */
int ckpt__tensor_slice_format(ckpt_buf *out, const ckpt__tensor_slice *s);

/* Whether extent `d` of `s` lies inside a dimension of `dim` elements: a
 * full extent always does; start >= 0 and start + length <= dim (computed
 * without overflow, so a hostile key's extents may be anything). Check it
 * before ckpt__slice_extent_range. */
int ckpt__slice_extent_inside(const ckpt__tensor_slice *s, int d, int64_t dim);

/* The range [*lo, *hi) of dimension d covered by slice `s` of a tensor
 * whose dimension d has `dim` elements (a full extent covers it all). */
void ckpt__slice_extent_range(const ckpt__tensor_slice *s, int d, int64_t dim,
                              int64_t *lo, int64_t *hi);

/* ---- writer ------------------------------------------------------------ */

/* A piece given to ckpt_bundle_writer_add_slice, checked and prepared. */
typedef struct ckpt__slice_piece {
    ckpt__tensor_slice slice; /* as stored: full extents are (0, -1) */
    ckpt_shape shape;         /* the piece's own shape */
    bool whole;   /* covers the whole tensor: store an ordinary entry */
    ckpt_buf key; /* slice key (empty when whole) */
} ckpt__slice_piece;

/* Check the arguments of an add_slice on the bundle `prefix` (dtype fixed
 * size, full shape, extents inside it, `nbytes` equal to the piece's byte
 * size, data present) and fill `p`. Dispose `p` afterwards, also after an
 * error. 0, CKPT_EINVAL, CKPT_ENOTSUP (string or unsupported dtype) or
 * CKPT_ENOMEM; messages name the bundle and the tensor. */
int ckpt__slice_piece_prepare(ckpt__slice_piece *p, const char *prefix,
                              const char *name, int dtype,
                              const ckpt_shape *full_shape,
                              const ckpt_slice_extent *extents,
                              const void *data, size_t nbytes);
void ckpt__slice_piece_dispose(ckpt__slice_piece *p);

/* Whether pieces a and b of a tensor of shape `full` share an element. */
bool ckpt__slices_overlap(const ckpt__tensor_slice *a,
                          const ckpt__tensor_slice *b, const ckpt_shape *full);

/* The pieces of one partitioned tensor as an interval tree along one
 * dimension (bundle_slice_overlap.c); the pieces themselves stay in the
 * caller's array, known here by their numbers. */
typedef struct ckpt__slice_overlap_index {
    ckpt_shape full;
    int axis; /* the first dimension the first piece does not cover whole */
    int root; /* -1: empty */
    int *left, *right;
    int64_t *reach; /* the largest end along `axis` in each subtree */
    int cap;
} ckpt__slice_overlap_index;

/* An empty index for the pieces of a tensor of shape `full` whose first
 * piece is `first` (it picks the dimension). */
void ckpt__slice_overlap_init(ckpt__slice_overlap_index *x,
                              const ckpt__tensor_slice *first,
                              const ckpt_shape *full);
/* Room for pieces 0 .. cap - 1. 0 or CKPT_ENOMEM. */
int ckpt__slice_overlap_reserve(ckpt__slice_overlap_index *x, int cap);
/* Add piece number n (slices[n]; room reserved). */
void ckpt__slice_overlap_insert(ckpt__slice_overlap_index *x,
                                const ckpt__tensor_slice *slices, int n);
/* Whether `s` overlaps one of the pieces added. */
bool ckpt__slice_overlap_any(const ckpt__slice_overlap_index *x,
                             const ckpt__tensor_slice *slices,
                             const ckpt__tensor_slice *s);
void ckpt__slice_overlap_dispose(ckpt__slice_overlap_index *x);

/* A writer's partitioned tensors, each known by the index of its full
 * entry among the writer's entries (indices only grow, so the list stays
 * sorted). */
typedef struct ckpt__slice_set {
    struct ckpt__sliced_tensor *items;
    size_t count;
    size_t cap;
} ckpt__slice_set;

#define CKPT__SLICE_SET_INIT                                                   \
    {                                                                          \
        NULL, 0, 0                                                             \
    }

/* Whether the writer entry `entry_index` is a partitioned tensor's full
 * entry. */
bool ckpt__slice_set_has(const ckpt__slice_set *s, size_t entry_index);

/* Check that piece `p` can join tensor `name` (its full entry
 * `entry_index`, or a new tensor when `is_new`): the same dtype and full
 * shape as the pieces before it and no overlap with any of them.
 * 0, CKPT_EEXISTS (entry `entry_index` is an ordinary tensor), CKPT_EINVAL
 * or CKPT_ENOMEM; messages name the bundle and tensor. */
int ckpt__slice_set_check(const ckpt__slice_set *s, const char *prefix,
                          const char *name, size_t entry_index, bool is_new,
                          int dtype, const ckpt_shape *full_shape,
                          const ckpt__slice_piece *p);

/* Record piece `p` of the tensor whose full entry is `entry_index`
 * (created when new) and describe the updated full entry in `full` (dtype,
 * full shape, every slice so far; `full->slices` is borrowed from the set
 * until its next change). 0 or CKPT_ENOMEM. */
int ckpt__slice_set_append(ckpt__slice_set *s, size_t entry_index, int dtype,
                           const ckpt_shape *full_shape,
                           const ckpt__slice_piece *p,
                           ckpt__bundle_entry *full);

/* The full entry of the k-th partitioned tensor of `s` (0 .. s->count - 1),
 * as ckpt__slice_set_append describes it, and the index of that entry. */
void ckpt__slice_set_describe(const ckpt__slice_set *s, size_t k,
                              size_t *entry_index, ckpt__bundle_entry *full);

void ckpt__slice_set_dispose(ckpt__slice_set *s);

/* ---- reader ------------------------------------------------------------ */

/* The encoded BundleEntryProtos of a reader's partitioned tensors, by
 * entry index (added in increasing order while the index is loaded). */
typedef struct ckpt__sliced_entries {
    struct ckpt__sliced_value *items;
    size_t count;
    size_t cap;
} ckpt__sliced_entries;

/* Keep a copy of the value of entry `entry_index`. 0 or CKPT_ENOMEM. */
int ckpt__sliced_entries_add(ckpt__sliced_entries *s, size_t entry_index,
                             const uint8_t *value, size_t n);

/* The value kept for `entry_index` (borrowed). 0 or CKPT_ENOTFOUND. */
int ckpt__sliced_entries_get(const ckpt__sliced_entries *s, size_t entry_index,
                             const uint8_t **value, size_t *n);

void ckpt__sliced_entries_dispose(ckpt__sliced_entries *s);

/* What assembling a partitioned tensor needs from the reader. */
typedef struct ckpt__partitioned_read {
    ckpt_bundle_reader *reader;
    const char *index_path;         /* for messages */
    const ckpt_tensor_entry *entry; /* the full entry (num_slices > 0) */
    const uint8_t *proto;           /* its encoded BundleEntryProto */
    size_t proto_len;
    bool swap; /* the bundle's byte order is not the host's */
    /* Optional (NULL: each piece is looked up in the index): each slice's
     * piece, as an index into reader->entries, in stored order, as
     * ckpt__bundle_partitioned_locate found and checked them. */
    const size_t *pieces;
    size_t npieces;
} ckpt__partitioned_read;

/* Call `visit` with each slice the full entry lists, in stored order
 * (`index` from 0), stopping at its first error; `shown` names the tensor
 * in messages. 0, CKPT_ECORRUPT (malformed entry) or visit's error. */
typedef int (*ckpt__slice_visit_fn)(int index, const ckpt__tensor_slice *s,
                                    void *payload);
int ckpt__partitioned_for_each_slice(const ckpt__partitioned_read *pr,
                                     const char *shown,
                                     ckpt__slice_visit_fn visit, void *payload);

/* Read every piece of the partitioned tensor (each record's CRC checked
 * unless the reader skips checksums) and assemble the whole tensor,
 * row-major in its full shape, into `dst` (`dst_size` bytes, which must be
 * its byte size, as the caller has checked along with a fixed-size dtype),
 * in host byte order. 0, CKPT_ECORRUPT (pieces missing, out of
 * range, overlapping, of another dtype or shape, or not covering the
 * tensor; a damaged record), CKPT_ENOTFOUND (data file) or CKPT_EIO. */
int ckpt__bundle_read_partitioned(const ckpt__partitioned_read *pr, void *dst,
                                  size_t dst_size);

/* Check, without reading any data, that the pieces of the partitioned
 * tensor can hold it: each piece has its entry, of the right dtype and
 * shape, with its record inside its data file, and the records' sizes add
 * up to the full shape's byte size (which goes to *bytes), no piece named
 * twice (its record would count twice). For a dtype of no fixed size
 * (strings), whose records' sizes the shape does not fix, each piece's
 * record and all of them together must hold at least a byte per element
 * (a string's length takes one), and their sum goes to *bytes. Whether distinct
 * pieces overlap is found only when the tensor is assembled. 0, CKPT_ECORRUPT,
 * CKPT_ENOTFOUND (data file) or CKPT_EIO. */
int ckpt__bundle_partitioned_size(const ckpt__partitioned_read *pr,
                                  uint64_t *bytes);
/* The same, also handing out the pieces it located: *pieces (freed with
 * ckpt__free; NULL when there are none) holds *npieces indexes into the
 * reader's entries, one per slice in stored order, for
 * ckpt__partitioned_read.pieces: assembling the tensor then looks none of
 * them up again. */
int ckpt__bundle_partitioned_locate(const ckpt__partitioned_read *pr,
                                    uint64_t *bytes, size_t **pieces,
                                    size_t *npieces);

/* Check the partitioned tensor without holding it: its size against the
 * pieces (ckpt__bundle_partitioned_size), then every piece's record
 * streamed and its CRC checked (a string piece read whole with its length
 * checksum), and the pieces covering the tensor exactly once (a bitmap of
 * one bit per element, bounded by the pieces' records). Any dtype: one
 * that is not assembled (strings) is checked all the same. Errors as
 * ckpt__bundle_read_partitioned's. */
int ckpt__bundle_check_partitioned(const ckpt__partitioned_read *pr);
/* The same without reading the pieces' records (for a caller that checks
 * them as records of their own): sizes, shapes, and exact coverage. */
int ckpt__bundle_check_partitioned_layout(const ckpt__partitioned_read *pr);
/* Only the exact coverage, for pieces already located
 * (ckpt__bundle_partitioned_locate, handed in through pr->pieces): that
 * they lie inside the full shape and cover each element once, from the
 * index alone. Errors as ckpt__bundle_read_partitioned's layout errors. */
int ckpt__bundle_partitioned_coverage(const ckpt__partitioned_read *pr);

/* Where a TensorFlow 2 object-based checkpoint (tf.train.Checkpoint,
 * CheckpointManager) stores a variable's value: under its object path
 * followed by this suffix. */
#define CKPT__TF2_VALUE_SUFFIX "/.ATTRIBUTES/VARIABLE_VALUE"
/* Implemented by format/bundle_reader.c: whether `r` lacks the `n` bytes
 * at `name` as a key but has them followed by CKPT__TF2_VALUE_SUFFIX (a
 * TensorFlow user's object path, given for the key). */
int ckpt__bundle_reader_has_tf2_value(const ckpt_bundle_reader *r,
                                      const char *name, size_t n);
/* Implemented by format/bundle_reader.c: whether `r` lacks the `n` bytes
 * at `name` as a key, and they are a TensorFlow 1 partition's name,
 * "<v>/part_<k>", of a partitioned tensor "<v>" that `r` has; `*full`
 * then holds that tensor's entry (a TensorFlow user's name of one part,
 * given for the variable's key). */
int ckpt__bundle_reader_partition_of(const ckpt_bundle_reader *r,
                                     const char *name, size_t n,
                                     ckpt_tensor_entry *full);

#endif
