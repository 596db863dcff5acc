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
 * shards lazily, and verifies each record's CRC32C when it reads it. */
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
    int num_shards;        /**< data files to write (default 1) */
    size_t data_alignment; /**< pad records to this multiple (default 1) */
    int direct_io;         /**< non-zero: open data files with
                                CKPT_OPEN_DIRECT (bypass the page cache
                                for large aligned writes) */
} ckpt_bundle_writer_options;

#define CKPT_BUNDLE_WRITER_OPTIONS_INIT                                        \
    {CKPT_BUNDLE_WRITER_OPTIONS_VERSION, NULL, 0, 0, 0}

/** Fill `opts` with defaults. @return 0 or CKPT_EVERSION */
CKPT_EXTERN(int) ckpt_bundle_writer_options_init(
    ckpt_bundle_writer_options *opts, unsigned int version);

/** Start a bundle at `prefix` (the directory must exist).
 *  @return 0, CKPT_EINVAL, CKPT_EVERSION, CKPT_ENOTFOUND or an I/O error */
CKPT_EXTERN(int) ckpt_bundle_writer_open(ckpt_bundle_writer **out,
                                         const char *prefix,
                                         const ckpt_bundle_writer_options *opts);

/** Direct the following adds to data shard `shard` (0 .. num_shards-1). */
CKPT_EXTERN(int) ckpt_bundle_writer_select_shard(ckpt_bundle_writer *w,
                                                 int shard);

/** Add a fixed-size tensor: `nbytes` must equal its byte size, data in
 *  host (little-endian) element order, row-major.
 *  @return 0, CKPT_EINVAL (bad name/shape/size), CKPT_ENOTSUP (dtype),
 *          CKPT_EEXISTS (name added before) or an I/O error */
CKPT_EXTERN(int) ckpt_bundle_writer_add(ckpt_bundle_writer *w,
                                        const char *name, int dtype,
                                        const ckpt_shape *shape,
                                        const void *data, size_t nbytes);

/** Add a DT_STRING tensor of `n` elements (n must equal the element count
 *  of `shape`); each element is a run of arbitrary bytes. */
CKPT_EXTERN(int) ckpt_bundle_writer_add_strings(ckpt_bundle_writer *w,
                                                const char *name,
                                                const ckpt_shape *shape,
                                                const ckpt_slice *strings,
                                                size_t n);

/** Add a raw entry exactly as given: `record` is the on-disk record
 *  (`record_len` bytes) of a tensor of `dtype`/`shape`; the CRC is computed.
 *  Used to copy records between bundles without decoding them. */
CKPT_EXTERN(int) ckpt_bundle_writer_add_record(ckpt_bundle_writer *w,
                                               const char *name, int dtype,
                                               const ckpt_shape *shape,
                                               const void *record,
                                               size_t record_len);

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

#define CKPT_BUNDLE_READER_OPTIONS_INIT {CKPT_BUNDLE_READER_OPTIONS_VERSION, NULL, 0}

CKPT_EXTERN(int) ckpt_bundle_reader_options_init(
    ckpt_bundle_reader_options *opts, unsigned int version);

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

/** Open the bundle at `prefix` and validate its index.
 *  @return 0, CKPT_ENOTFOUND (no <prefix>.index), CKPT_ECORRUPT, CKPT_EIO,
 *          CKPT_ENOMEM or CKPT_EVERSION */
CKPT_EXTERN(int) ckpt_bundle_reader_open(ckpt_bundle_reader **out,
                                         const char *prefix,
                                         const ckpt_bundle_reader_options *opts);

/** Free the reader; NULL is ignored. */
CKPT_EXTERN(void) ckpt_bundle_reader_free(ckpt_bundle_reader *r);

/** The prefix given to open (borrowed). */
CKPT_EXTERN(const char *) ckpt_bundle_reader_prefix(const ckpt_bundle_reader *r);

/** num_shards of the bundle header. */
CKPT_EXTERN(int) ckpt_bundle_reader_num_shards(const ckpt_bundle_reader *r);

/** Number of tensor entries (the header entry is not counted). */
CKPT_EXTERN(size_t) ckpt_bundle_reader_count(const ckpt_bundle_reader *r);

/** Entry `i` in key order (borrowed; valid until the reader is freed), or
 *  NULL when i >= count. */
CKPT_EXTERN(const ckpt_tensor_entry *) ckpt_bundle_reader_entry(
    const ckpt_bundle_reader *r, size_t i);

/** Find the entry named `name` (borrowed). @return 0 or CKPT_ENOTFOUND */
CKPT_EXTERN(int) ckpt_bundle_reader_find(const ckpt_tensor_entry **out,
                                         const ckpt_bundle_reader *r,
                                         const char *name);

/** Read a fixed-size tensor into `dst` (`dst_size` must equal its byte
 *  size), verifying its CRC and converting to host byte order.
 *  @return 0, CKPT_ENOTFOUND (tensor or data file), CKPT_EINVAL (size),
 *          CKPT_ENOTSUP (string/partitioned), CKPT_ECORRUPT or CKPT_EIO */
CKPT_EXTERN(int) ckpt_bundle_reader_read(ckpt_bundle_reader *r,
                                         const char *name, void *dst,
                                         size_t dst_size);

/** The elements of a DT_STRING tensor: `strings[i]` points into one block
 *  of memory owned by this struct. Release with ckpt_string_array_dispose. */
typedef struct ckpt_string_array {
    ckpt_slice *strings;
    size_t count;
    void *storage_; /**< private */
} ckpt_string_array;

CKPT_EXTERN(void) ckpt_string_array_dispose(ckpt_string_array *a);

/** Read a DT_STRING tensor, verifying the length and data checksums. */
CKPT_EXTERN(int) ckpt_bundle_reader_read_strings(ckpt_bundle_reader *r,
                                                 const char *name,
                                                 ckpt_string_array *out);

/** Read the raw record of `entry` (as stored, before any byte swapping)
 *  into `out` (appended), verifying its CRC unless checksums are skipped. */
CKPT_EXTERN(int) ckpt_bundle_reader_read_record(ckpt_bundle_reader *r,
                                                const ckpt_tensor_entry *entry,
                                                ckpt_buf *out);

/** Read every record and check every checksum; stops at the first damage.
 *  @return 0, CKPT_ECORRUPT, CKPT_ENOTFOUND (missing shard), CKPT_EIO */
CKPT_EXTERN(int) ckpt_bundle_reader_verify(ckpt_bundle_reader *r);

/* ---- names ------------------------------------------------------------- */

/** "<prefix>.index" into `out` (replacing its contents). */
CKPT_EXTERN(int) ckpt_bundle_index_path(ckpt_buf *out, const char *prefix);

/** "<prefix>.data-%05d-of-%05d" into `out` (replacing its contents). */
CKPT_EXTERN(int) ckpt_bundle_data_path(ckpt_buf *out, const char *prefix,
                                       int shard, int num_shards);

CKPT_END_DECL

#endif
