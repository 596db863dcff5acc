/* ckpt/bundle.h - TensorFlow "tensor bundle" V2 checkpoints: a writer and a
 * reader for <prefix>.index plus <prefix>.data-SSSSS-of-NNNNN.
 *
 * The writer appends tensor records to the data shard(s) in the order they
 * are added and writes the index (sorted by name) at ckpt_bundle_writer_finish,
 * committing crash-safely: every file is written under a temporary name,
 * fsynced, renamed into place (data shards first, the index last) and the
 * directory fsynced. Until finish returns 0 no <prefix>.index exists.
 *
 * The reader loads and validates the whole index when opened, opens data
 * shards lazily, and verifies each record's CRC32C when it reads it.
 *
 * NULL arguments: a function returning int rejects a NULL pointer it needs
 * with CKPT_EINVAL ("<function>: <argument> is NULL"); pointers documented
 * as optional may be NULL; the accessors treat a NULL reader as empty
 * (NULL prefix and entry, 0 shards and tensors) and the free functions
 * ignore NULL. */
#ifndef CKPT_BUNDLE_H
#define CKPT_BUNDLE_H

#include "io.h"
#include "tensor.h"

CKPT_BEGIN_DECL

/* ---- writer ------------------------------------------------------------ */

typedef struct ckpt_bundle_writer ckpt_bundle_writer;

#define CKPT_BUNDLE_WRITER_OPTIONS_VERSION 1

/** Writer options; 0 in a field means its default. */
typedef struct ckpt_bundle_writer_options {
    unsigned int version;  /**< CKPT_BUNDLE_WRITER_OPTIONS_VERSION */
    const ckpt_fs *fs;     /**< NULL: POSIX */
    int num_shards;        /**< data files to write (default 1); finish
                                creates every one, an empty file for a
                                shard given nothing (readers expect all
                                of them), so the count costs files */
    size_t data_alignment; /**< pad records to this multiple (default 1) */
    int direct_io;         /**< 0 (default) or CKPT_DIRECT_IO_ON: open
                                data files with CKPT_OPEN_DIRECT (page-
                                aligned parts of writes bypass the page
                                cache); CKPT_DIRECT_IO_OFF: never */
} ckpt_bundle_writer_options;

#define CKPT_BUNDLE_WRITER_OPTIONS_INIT                                        \
    {                                                                          \
        CKPT_BUNDLE_WRITER_OPTIONS_VERSION, NULL, 0, 0, 0                      \
    }

/** Fill `opts` with defaults. @return 0 or CKPT_EVERSION */
CKPT_EXTERN(int)
ckpt_bundle_writer_options_init(ckpt_bundle_writer_options *opts,
                                unsigned int version);

/** Start a bundle at `prefix` (the directory must exist) with `opts`
 *  (NULL: the defaults, as CKPT_BUNDLE_WRITER_OPTIONS_INIT).
 *  @return 0, CKPT_EINVAL, CKPT_EVERSION, CKPT_ENOTFOUND or an I/O error */
CKPT_EXTERN(int)
ckpt_bundle_writer_open(ckpt_bundle_writer **out, const char *prefix,
                        const ckpt_bundle_writer_options *opts);

/** Direct the following adds to data shard `shard` (0 .. num_shards-1). */
CKPT_EXTERN(int)
ckpt_bundle_writer_select_shard(ckpt_bundle_writer *w, int shard);

/** Add a fixed-size tensor: `nbytes` must equal its byte size, data in
 *  host (little-endian) element order, row-major.
 *  The first error of any call is kept by the writer: every later call
 *  (adds, select_shard, finish) returns it again, its message saying that
 *  an earlier call failed, and nothing more is added; free the writer and
 *  start again (a name added twice included).
 *  @return 0, CKPT_EINVAL (bad name/shape/size), CKPT_ENOTSUP (dtype),
 *          CKPT_EEXISTS (name added before) or an I/O error */
CKPT_EXTERN(int)
ckpt_bundle_writer_add(ckpt_bundle_writer *w, const char *name, int dtype,
                       const ckpt_shape *shape, const void *data,
                       size_t nbytes);

/** Add a DT_STRING tensor of `n` elements (n must equal the element count
 *  of `shape`); each element is a run of arbitrary bytes. */
CKPT_EXTERN(int)
ckpt_bundle_writer_add_strings(ckpt_bundle_writer *w, const char *name,
                               const ckpt_shape *shape,
                               const ckpt_slice *strings, size_t n);

/** Add a raw entry exactly as given: `record` is the on-disk record
 *  (`record_len` bytes) of a tensor of `dtype`/`shape`; the CRC is computed.
 *  Used to copy records between bundles without decoding them. */
CKPT_EXTERN(int)
ckpt_bundle_writer_add_record(ckpt_bundle_writer *w, const char *name,
                              int dtype, const ckpt_shape *shape,
                              const void *record, size_t record_len);

/** `length` of a ckpt_slice_extent covering its whole dimension. */
#define CKPT_SLICE_FULL (-1)

/** One dimension of a piece of a partitioned tensor: elements
 *  [start, start + length) of that dimension of the full tensor, or the
 *  whole dimension when `length` is CKPT_SLICE_FULL (start must then be 0).
 *  TensorFlow's TensorSliceProto.Extent. */
typedef struct ckpt_slice_extent {
    int64_t start;
    int64_t length;
} ckpt_slice_extent;

/** Add one piece of a partitioned tensor (TensorFlow's
 *  BundleWriter::AddSlice): `name` has the full shape `full_shape`, and
 *  this piece covers `extents[d]` of each dimension d (full_shape->rank
 *  extents). `data`/`nbytes` hold the piece's own elements, row-major in
 *  the piece's shape (the extent lengths), as for ckpt_bundle_writer_add.
 *
 *  A piece covering the whole tensor is stored as an ordinary entry under
 *  `name`. Otherwise the piece becomes an ordinary entry under its binary
 *  slice key (which starts with a 0 byte) and the entry `name` holds dtype,
 *  full shape and the pieces' extents in the order added; its data is read
 *  back assembled by ckpt_bundle_reader_read. Every piece of one name must
 *  have the same dtype and full shape, and pieces may not overlap; whether
 *  they cover the whole tensor is checked when it is read, not at finish
 *  (a bundle may hold some of the pieces only, as each shard of
 *  TensorFlow's sharded save does before MergeV2Checkpoints joins them;
 *  read whole, such a bundle is CKPT_ECORRUPT "slices cover N of M
 *  elements").
 *  @return 0, CKPT_EINVAL (name, shape, extent outside the shape, size,
 *          dtype or full shape unlike an earlier piece, overlap),
 *          CKPT_ENOTSUP (string or unsupported dtype), CKPT_EEXISTS (`name`
 *          was added as an ordinary tensor) or an I/O error. Every error is
 *          kept by the writer, like the other adds'. */
CKPT_EXTERN(int)
ckpt_bundle_writer_add_slice(ckpt_bundle_writer *w, const char *name, int dtype,
                             const ckpt_shape *full_shape,
                             const ckpt_slice_extent *extents, const void *data,
                             size_t nbytes);

/** Write the index and commit. After any failure nothing is renamed into
 *  place and the temporary files are removed; the writer must still be
 *  freed. The first error of any earlier call is returned again here. */
CKPT_EXTERN(int) ckpt_bundle_writer_finish(ckpt_bundle_writer *w);

/** Free the writer; an unfinished bundle is abandoned and its temporary
 *  files removed. NULL is ignored. */
CKPT_EXTERN(void) ckpt_bundle_writer_free(ckpt_bundle_writer *w);

/* ---- reader ------------------------------------------------------------ */

typedef struct ckpt_bundle_reader ckpt_bundle_reader;

#define CKPT_BUNDLE_READER_OPTIONS_VERSION 1

typedef struct ckpt_bundle_reader_options {
    unsigned int version;    /**< CKPT_BUNDLE_READER_OPTIONS_VERSION */
    const ckpt_fs *fs;       /**< NULL: POSIX */
    int skip_data_checksums; /**< non-zero: do not verify record CRCs */
} ckpt_bundle_reader_options;

#define CKPT_BUNDLE_READER_OPTIONS_INIT                                        \
    {                                                                          \
        CKPT_BUNDLE_READER_OPTIONS_VERSION, NULL, 0                            \
    }

CKPT_EXTERN(int)
ckpt_bundle_reader_options_init(ckpt_bundle_reader_options *opts,
                                unsigned int version);

/** One index entry, as described by its BundleEntryProto. */
typedef struct ckpt_tensor_entry {
    const char *name; /**< key; NUL-terminated (see name_len) */
    size_t name_len;  /**< key length (slice keys contain 0 bytes) */
    int dtype;        /**< ckpt_dtype value as stored */
    ckpt_shape shape;
    int shard_id;     /**< data file holding the record */
    int64_t offset;   /**< byte offset of the record in that file */
    int64_t size;     /**< bytes of the record */
    uint32_t crc32c;  /**< masked CRC32C as stored */
    int num_slices;   /**< > 0: a partitioned tensor's full entry; its data
                           lives in slice entries, not at offset/size */
    int is_slice_key; /**< the key is a binary slice key (starts with 0) */
} ckpt_tensor_entry;

/** Open the bundle at `prefix` (`opts` NULL: the defaults) and validate
 *  its index. The index is read
 *  block by block, never whole (blocks of at most 32 MiB); records that
 *  share bytes of a data file make it corrupt. With the POSIX file system
 *  an index or data file that is not a regular file (a FIFO, a device, a
 *  directory) is refused without blocking, as a damaged checkpoint:
 *  CKPT_ECORRUPT naming the file.
 *  @return 0, CKPT_ENOTFOUND (no <prefix>.index; when `prefix` itself
 *          cannot be looked up, a symbolic link that loops, the message
 *          says so), CKPT_ECORRUPT, CKPT_EIO, CKPT_ENOMEM or CKPT_EVERSION */
CKPT_EXTERN(int)
ckpt_bundle_reader_open(ckpt_bundle_reader **out, const char *prefix,
                        const ckpt_bundle_reader_options *opts);

/** Free the reader; NULL is ignored. */
CKPT_EXTERN(void) ckpt_bundle_reader_free(ckpt_bundle_reader *r);

/** The prefix given to open (borrowed). */
CKPT_EXTERN(const char *)
ckpt_bundle_reader_prefix(const ckpt_bundle_reader *r);

/** num_shards of the bundle header. */
CKPT_EXTERN(int) ckpt_bundle_reader_num_shards(const ckpt_bundle_reader *r);

/** Whether the bundle was written on a big-endian machine: 1 when its
 *  header's endianness is BIG, 0 when it is LITTLE (what every bundle
 *  written on x86 or ARM holds) and for a NULL reader. Such a bundle's
 *  fixed-size values and its string records' length words and length
 *  checksum are in big-endian order: the reads that decode convert them
 *  to the host's, while ckpt_bundle_reader_read_record gives a record as
 *  stored. ckpt_bundle_writer_add_record takes a record in the host's
 *  byte order (the writer's header names the host's), so a record copied
 *  raw between bundles keeps its meaning only when this matches the
 *  host's order; otherwise decode it (ckpt_bundle_reader_read_entry,
 *  ckpt_bundle_reader_read_strings_entry) and add it again. */
CKPT_EXTERN(int) ckpt_bundle_reader_big_endian(const ckpt_bundle_reader *r);

/** Number of tensor entries (the header entry is not counted). */
CKPT_EXTERN(size_t) ckpt_bundle_reader_count(const ckpt_bundle_reader *r);

/** Entry `i` in key order (borrowed; valid until the reader is freed, and
 *  the same pointer each time), or NULL when i >= count. The reader keeps
 *  its entries compactly and makes this form of one the first time it is
 *  handed out (here or by ckpt_bundle_reader_find), so that call may
 *  allocate: NULL also when memory runs out then (CKPT_ENOMEM in
 *  ckpt_error_last()). A walk over every entry that keeps none of them
 *  uses ckpt_bundle_reader_entry_fill, which keeps nothing. */
CKPT_EXTERN(const ckpt_tensor_entry *)
ckpt_bundle_reader_entry(const ckpt_bundle_reader *r, size_t i);

/** Fill `*out` with entry `i` in key order, in memory the caller owns,
 *  allocating nothing: the way to walk every entry of a large index
 *  (ckpt_bundle_reader_entry keeps the form of each entry it hands out,
 *  about 340 bytes, until the reader is freed).
 *  Lifetime: `out->name` points into the reader and stays valid until the
 *  reader is freed; the other fields are copies, and `*out` is the
 *  caller's to keep or overwrite. A filled entry may be given wherever
 *  one of `r`'s entries is asked for (ckpt_bundle_reader_read_entry,
 *  ckpt_bundle_reader_read_strings_entry, ckpt_bundle_reader_read_record,
 *  ckpt_bundle_reader_data_size, ckpt_bundle_reader_check,
 *  ckpt_record_stream_open, whose stream then needs `*out` to outlive
 *  it); pass it as it was filled. read_entry, read_strings_entry,
 *  data_size and check find it by its name and refuse it (CKPT_EINVAL)
 *  when any field differs from the reader's or it is another reader's;
 *  read_record and ckpt_record_stream_open use its fields as given (a
 *  changed offset or size reads other bytes of the data file, which
 *  then fail the checksum unless checksums are skipped).
 *  Like the other accessors, a call on one reader from one thread at a
 *  time.
 *  @return 0, or CKPT_EINVAL (`out` or `r` NULL, or `i` not less than
 *          ckpt_bundle_reader_count: `*out` is then zeroed) */
CKPT_EXTERN(int)
ckpt_bundle_reader_entry_fill(ckpt_tensor_entry *out,
                              const ckpt_bundle_reader *r, size_t i);

/** The entry's name as the library's messages show it, for a program's
 *  own messages: printable ASCII (backslash excepted) as is, any other
 *  byte as \\xHH, cut after 200 bytes with "..."; a piece of a partitioned
 *  tensor (a slice key) as "<name> (piece <spec>)", spec in TensorFlow's
 *  notation ("0,2:-"). Writes at most `cap` bytes into `out`, NUL
 *  included (cut when longer); returns `out` ("" for a NULL entry). */
CKPT_EXTERN(const char *)
ckpt_tensor_entry_shown_name(char *out, size_t cap, const ckpt_tensor_entry *e);

/** The partitioned tensor that piece `e` (a slice key, `e->is_slice_key`)
 *  belongs to: its name into `name`, replacing the contents (a name may
 *  hold 0 bytes; `name->size` is its length), and when `extents` is not
 *  NULL the piece's extent of each dimension into `extents[0 .. *rank)`
 *  (room for CKPT_MAX_RANK; a whole dimension has length CKPT_SLICE_FULL),
 *  its rank into `*rank` when `rank` is not NULL. The pieces of one tensor
 *  are neighbours in the index, and come in the order of their tensors'
 *  names.
 *  @return 0, CKPT_EINVAL (`e` is no slice key; NULL `name` or `e`),
 *          CKPT_ECORRUPT (the key does not decode; the message gives the
 *          byte) or CKPT_ENOMEM */
CKPT_EXTERN(int)
ckpt_tensor_entry_piece(ckpt_buf *name, ckpt_slice_extent *extents, int *rank,
                        const ckpt_tensor_entry *e);

/** Find the entry named `name` (borrowed; valid until the reader is
 *  freed, the pointer ckpt_bundle_reader_entry gives for it).
 *  @return 0, CKPT_ENOTFOUND (for a graph tensor's name such as
 *  "dense/bias:0" whose variable "dense/bias" is a key, the message says
 *  to use that; so it does for a TensorFlow 2 object path such as "net/w"
 *  whose value is stored as "net/w/.ATTRIBUTES/VARIABLE_VALUE", and for a
 *  TensorFlow 1 partition's name such as "emb/part_0" of a partitioned
 *  tensor "emb", which is read assembled) or
 *  CKPT_ENOMEM (the entry is handed out for the first time and memory
 *  runs out) */
CKPT_EXTERN(int)
ckpt_bundle_reader_find(const ckpt_tensor_entry **out,
                        const ckpt_bundle_reader *r, const char *name);

/** Read a fixed-size tensor into `dst` (`dst_size` must equal its byte
 *  size), verifying its CRC and converting to host byte order (a DT_BOOL's
 *  bytes become 0 or 1: any non-zero stored byte is true, as TensorFlow
 *  reads it, and C's bool holds no other value). A
 *  partitioned tensor (num_slices > 0) is assembled from its slice entries
 *  into its full shape; its pieces must cover it exactly once.
 *  @return 0, CKPT_ENOTFOUND (tensor or data file), CKPT_EINVAL (size),
 *          CKPT_ENOTSUP (string), CKPT_ECORRUPT (damaged record; pieces
 *          missing, overlapping, out of range or not covering the tensor)
 *          or CKPT_EIO */
CKPT_EXTERN(int)
ckpt_bundle_reader_read(ckpt_bundle_reader *r, const char *name, void *dst,
                        size_t dst_size);

/** ckpt_bundle_reader_read of `entry` (one of `r`'s entries) rather than
 *  of a name: the way to read a tensor whose name holds a NUL byte, which a
 *  C-string name would cut short.
 *  @return as ckpt_bundle_reader_read; CKPT_EINVAL also when `entry` is not
 *          one of `r`'s */
CKPT_EXTERN(int)
ckpt_bundle_reader_read_entry(ckpt_bundle_reader *r,
                              const ckpt_tensor_entry *entry, void *dst,
                              size_t dst_size);

/** One destination of ckpt_bundle_reader_read_many. */
typedef struct ckpt_read_request {
    const char *name; /**< the tensor */
    void *dst;        /**< receives its bytes in host order */
    size_t dst_size;  /**< must equal the tensor's byte size */
} ckpt_read_request;

/** Read several fixed-size tensors, each as ckpt_bundle_reader_read would,
 *  checking every request (name, dtype, size, data file) before reading
 *  any (a partitioned tensor's pieces too: each piece's entry and its
 *  record inside its data file, and that the pieces cover the tensor
 *  exactly once, from the index). The records are read
 *  in file order, through the page cache straight into their destinations
 *  in pieces of at most 256 KiB, each piece checksummed right after its
 *  read, by the calling
 *  thread and, when the file system allows concurrent reads (it offers
 *  ckpt_fs.open_read_direct) and the process may run on two CPUs, one
 *  helper thread (joined before the call returns). When the records of
 *  one data file span 8 MiB or more and the file system accepts direct
 *  reads for it (declined for a file already in the page cache), its first
 *  2 MiB are read alternately both ways, timed, and O_DIRECT reads the
 *  rest only when it was clearly faster (two reader threads, the checksum
 *  fused into the copy to the destination).
 *  A request refused by those checks (a bad name, size or slice layout, a
 *  missing or short data file) leaves every destination as it was; a
 *  failure while reading (I/O, a checksum) may leave the destinations
 *  holding part of the data. The error names the tensor or the file.
 *  @return 0, or as ckpt_bundle_reader_read */
CKPT_EXTERN(int)
ckpt_bundle_reader_read_many(ckpt_bundle_reader *r,
                             const ckpt_read_request *reqs, size_t n);

/** The elements of a DT_STRING tensor: `strings[i]` points into one block
 *  of memory owned by this struct. Release with ckpt_string_array_dispose. */
typedef struct ckpt_string_array {
    ckpt_slice *strings;
    size_t count;
    void *storage_; /**< private */
} ckpt_string_array;

/** An empty ckpt_string_array (disposing of it does nothing). */
/* clang-format off */
#define CKPT_STRING_ARRAY_INIT {NULL, 0, NULL}
/* clang-format on */

/** Free the strings and empty `a` (NULL is ignored). */
CKPT_EXTERN(void) ckpt_string_array_dispose(ckpt_string_array *a);

/** Read a DT_STRING tensor, verifying the length and data checksums.
 *  `out` is overwritten, not freed (dispose of a previous result first);
 *  after a failure it is empty. */
CKPT_EXTERN(int)
ckpt_bundle_reader_read_strings(ckpt_bundle_reader *r, const char *name,
                                ckpt_string_array *out);

/** ckpt_bundle_reader_read_strings of `entry` (one of `r`'s entries), for
 *  names that hold a NUL byte.
 *  @return as ckpt_bundle_reader_read_strings; CKPT_EINVAL also when
 *          `entry` is not one of `r`'s */
CKPT_EXTERN(int)
ckpt_bundle_reader_read_strings_entry(ckpt_bundle_reader *r,
                                      const ckpt_tensor_entry *entry,
                                      ckpt_string_array *out);

/** Read the raw record of `entry` (as stored, before any byte swapping)
 *  into `out` (appended), verifying its CRC unless checksums are skipped. */
CKPT_EXTERN(int)
ckpt_bundle_reader_read_record(ckpt_bundle_reader *r,
                               const ckpt_tensor_entry *entry, ckpt_buf *out);

/** The bytes the data of `entry` (one of `r`'s entries) takes, checked
 *  against the data files before a caller allocates for it: a record must
 *  lie inside its data file; a partitioned tensor's pieces must each have
 *  an entry of its dtype and their extents' shape, with a record inside its
 *  data file, and the pieces' sizes must add up to the full shape's byte
 *  size (which is then returned: what ckpt_bundle_reader_read needs).
 *  Opens the data files, reads no data, allocates nothing in proportion to
 *  the tensor. Errors name the file and the tensor.
 *  @return 0, CKPT_ECORRUPT (record past the end of its data file, pieces
 *          missing or too small for the shape), CKPT_ENOTFOUND (data file),
 *          CKPT_ENOTSUP (a partitioned string tensor), CKPT_EINVAL or
 *          CKPT_EIO */
CKPT_EXTERN(int)
ckpt_bundle_reader_data_size(ckpt_bundle_reader *r,
                             const ckpt_tensor_entry *entry, uint64_t *bytes);

/** Check one tensor the way reading it would, without holding its data
 *  (a slice entry, is_slice_key, must also be a piece of a partitioned
 *  tensor the index holds, and one that tensor's entry lists: no reader
 *  looks for a piece it does not list):
 *  a record is read as ckpt_bundle_reader_read_many reads (the pieces into
 *  a small buffer per thread instead of a destination) and its CRC compared
 *  (even when the reader skips checksums; DT_VARIANT records have none
 *  this library checks); a string tensor is read whole (its record fits
 *  its data file) with its length checksum; a partitioned tensor is
 *  checked with ckpt_bundle_reader_data_size, then every piece streamed and
 *  checked, and the pieces must cover it exactly once (one bit per element
 *  of memory, bounded by the pieces' records). A partitioned string tensor,
 *  which this library does not assemble, is checked the same way: each
 *  slice its entry lists must have a piece of the slice's shape, read
 *  whole with its length checksum, whose records hold at least a byte per
 *  element, and the pieces must cover it exactly once. Errors name the
 *  file and the tensor (and the piece).
 *  @return 0, CKPT_ECORRUPT, CKPT_ENOTFOUND (data file), CKPT_EINVAL,
 *          CKPT_EIO or CKPT_ENOMEM */
CKPT_EXTERN(int)
ckpt_bundle_reader_check(ckpt_bundle_reader *r, const ckpt_tensor_entry *entry);

/** Bytes a record stream hands out at a time when not told (1 MiB). */
#define CKPT_RECORD_STREAM_PIECE ((size_t)1 << 20)

/** One record of a bundle read in pieces of bounded size. */
typedef struct ckpt_record_stream ckpt_record_stream;

/** Start reading the record of `entry` (one of `r`'s entries, not a
 *  partitioned tensor's full entry, not DT_STRING) in pieces of at most
 *  `piece_size` bytes (0: CKPT_RECORD_STREAM_PIECE), so that a tensor of
 *  any size is read with that much memory. The record is first checked to
 *  lie inside its data file. A fixed-size dtype comes in whole elements
 *  (the piece size is rounded down to a multiple of the element size, and
 *  is at least one element) in host byte order, a DT_BOOL's bytes as 0 or
 *  1 (any non-zero byte is true, as TensorFlow reads it); other dtypes as
 *  stored.
 *  The stream uses `r` and `entry`, which must outlive it, and like `r`
 *  belongs to one thread.
 *  @return 0, CKPT_ENOTSUP (a string record: read it with
 *          ckpt_bundle_reader_read_strings; a partitioned tensor: stream its
 *          slice entries), CKPT_ECORRUPT (record past the end of its data
 *          file), CKPT_ENOTFOUND (data file), CKPT_EINVAL, CKPT_EIO or
 *          CKPT_ENOMEM */
CKPT_EXTERN(int)
ckpt_record_stream_open(ckpt_record_stream **out, ckpt_bundle_reader *r,
                        const ckpt_tensor_entry *entry, size_t piece_size);

/** The next piece: `*data` (valid until the next call or the stream is
 *  freed) and its size `*n`; `*n` is 0 at the end of the record. The
 *  record's CRC32C is compared when the end is reached (unless the reader
 *  skips checksums; DT_VARIANT records are not checked): a mismatch is
 *  returned, as CKPT_ECORRUPT, by the call that would report the end, so
 *  the pieces are trustworthy only once the end has been reached.
 *  @return 0, CKPT_ECORRUPT (checksum mismatch, data file ends early) or
 *          CKPT_EIO */
CKPT_EXTERN(int)
ckpt_record_stream_next(ckpt_record_stream *s, const void **data, size_t *n);

/** Free the stream; NULL is ignored. */
CKPT_EXTERN(void) ckpt_record_stream_free(ckpt_record_stream *s);

/** Read every record and check every checksum; stops at the first damage.
 *  First, from the index alone, every entry whose key starts with a 0 byte
 *  must be a slice key naming a partitioned tensor the index holds, and
 *  one of the slices that tensor's entry lists (an unlisted piece is read
 *  by nobody, so nothing else would find it; the error names the piece),
 *  as ckpt_bundle_reader_check of the piece checks.
 *  The fixed-size records of each data file (the pieces of partitioned
 *  tensors among them) are read in one pass in file order as
 *  ckpt_bundle_reader_check reads one (string records whole, after them),
 *  so memory does not grow with a tensor's size; then each partitioned
 *  tensor, of any dtype (strings too, though they are not assembled), must
 *  have every piece its entry lists and be covered by them exactly once
 *  (checked from the index, one bit per element). Together that is what
 *  ckpt_bundle_reader_check of every entry checks, each byte read once.
 *  @return 0, CKPT_ECORRUPT, CKPT_ENOTFOUND (missing shard), CKPT_EIO */
CKPT_EXTERN(int) ckpt_bundle_reader_verify(ckpt_bundle_reader *r);

/* ---- names ------------------------------------------------------------- */

/** "<prefix>.index" into `out` (replacing its contents). */
CKPT_EXTERN(int) ckpt_bundle_index_path(ckpt_buf *out, const char *prefix);

/** "<prefix>.data-%05d-of-%05d" into `out` (replacing its contents). */
CKPT_EXTERN(int)
ckpt_bundle_data_path(ckpt_buf *out, const char *prefix, int shard,
                      int num_shards);

CKPT_END_DECL

#endif
