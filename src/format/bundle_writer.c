/* format/bundle_writer.c - ckpt_bundle_writer: appends tensor records to
 * the data shard(s) of a bundle and, at finish, writes the sorted index and
 * commits every file crash-safely.
 *
 *   <prefix>.data-SSSSS-of-NNNNN:  record | pad | record | pad | ...
 *       fixed-size record: the elements, row-major, host byte order
 *       string record:     varint64 len[n] | fixed32 masked length CRC |
 *                          bytes s[0] .. s[n-1]
 *       pad: zero bytes up to the next multiple of data_alignment
 *   <prefix>.index:  SSTable { "" -> BundleHeaderProto,
 *                              name -> BundleEntryProto (sorted bytewise) }
 *
 * Commit order: every data file is written under
 * "<final>.tempstate<random>", fsynced, closed and renamed into place, the
 * directory is fsynced, then the index is written the same way and renamed
 * LAST, and the directory fsynced again. Any failure removes the temporary
 * files and every file already renamed for this bundle, so no index ever
 * points at missing data. The first error of any call is sticky. */
#include "ckpt/bundle.h"

#include "common/internal.h"
#include "format/bundle_proto.h"
#include "format/bundle_slices.h"
#include "format/bundle_writer_internal.h"
#include "format/string_record.h"
#include "format/table.h"
#include "io/fs_internal.h"
#include "util/coding.h"
#include "util/crc32c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Small writes are gathered up to this size before reaching the fs. */
#define WRITE_BUF_SIZE (256u * 1024u)
#define MSG_MAX 1024
#define TEMP_TAG "tempstate"
#define TEMP_TRIES 8

enum writer_state { W_OPEN, W_FINISHED, W_FAILED };

struct wshard {
    ckpt_file *file;
    ckpt_buf tmp_path;
    ckpt_buf final_path;
    ckpt_buf pending; /* appended, not yet handed to the fs */
    uint64_t size;    /* bytes of the file so far, pending included */
    bool created;     /* tmp_path exists */
    bool renamed;     /* final_path holds our file */
};

/* One added tensor: its name and its encoded BundleEntryProto. */
struct wentry {
    char *name; /* name_len bytes + NUL, then proto_len bytes */
    size_t name_len;
    size_t proto_len;
};

struct ckpt_bundle_writer {
    const ckpt_fs *fs;
    char *prefix;
    ckpt_buf dir;
    int num_shards;
    size_t alignment;
    int open_flags; /* for data files */
    int cur_shard;
    struct wshard *shards;
    struct wentry *entries;
    size_t count;
    size_t cap;
    size_t *slots; /* hash set of entry index + 1; 0 = empty */
    size_t nslots; /* power of two */
    ckpt_file *index_file;
    ckpt_buf index_tmp;
    ckpt_buf index_final;
    bool index_created;
    bool index_renamed;
    uint64_t index_bytes;
    enum writer_state state;
    int status; /* first error */
    char status_msg[MSG_MAX];
    ckpt__slice_set sliced; /* partitioned tensors (add_slice) */
};

static const uint8_t zeros[4096];

/* ---- errors ----------------------------------------------------------------
 */

/* Remember the first error (code and message) and return `rc`. */
static int fail(ckpt_bundle_writer *w, int rc)
{
    if (rc < 0 && w->status == 0) {
        w->status = rc;
        snprintf(w->status_msg, sizeof(w->status_msg), "%s",
                 ckpt_error_last()->message);
    }
    return rc;
}

/* Report the sticky error again. */
static int sticky(const ckpt_bundle_writer *w)
{
    return ckpt__error(w->status, "%s", w->status_msg);
}

/* Checks common to every add: a usable writer and a fresh, non-empty name. */
static int check_open(ckpt_bundle_writer *w)
{
    if (w->state == W_FINISHED)
        return ckpt__error(CKPT_ESTATE, "%s: bundle writer already finished",
                           w->prefix);
    if (w->status < 0)
        return sticky(w);
    return 0;
}

/* ---- names -----------------------------------------------------------------
 */

static size_t hash_name(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (uint8_t)s[i];
        h *= 0x100000001b3ull;
    }
    return (size_t)h;
}

/* Slot of `name` in the hash set: where it is, or the empty slot where it
 * would go. */
static size_t find_slot(const ckpt_bundle_writer *w, const char *name, size_t n)
{
    size_t mask = w->nslots - 1;
    size_t i = hash_name(name, n) & mask;
    while (w->slots[i] != 0) {
        const struct wentry *e = &w->entries[w->slots[i] - 1];
        if (e->name_len == n && memcmp(e->name, name, n) == 0)
            return i;
        i = (i + 1) & mask;
    }
    return i;
}

static int grow_slots(ckpt_bundle_writer *w)
{
    size_t nslots = w->nslots ? w->nslots * 2 : 64;
    size_t *old = w->slots;
    size_t old_n = w->nslots;
    w->slots = ckpt__calloc(nslots, sizeof(*w->slots));
    if (!w->slots) {
        w->slots = old;
        return ckpt__error_oom();
    }
    w->nslots = nslots;
    for (size_t i = 0; i < old_n; i++) {
        if (old[i] != 0) {
            const struct wentry *e = &w->entries[old[i] - 1];
            w->slots[find_slot(w, e->name, e->name_len)] = old[i];
        }
    }
    ckpt__free(old);
    return 0;
}

static int check_name(ckpt_bundle_writer *w, const char *name)
{
    size_t n;
    if (!name || !*name)
        return ckpt__error(CKPT_EINVAL, "%s: tensor name is %s", w->prefix,
                           name ? "empty" : "NULL");
    n = strlen(name);
    if (w->nslots && w->slots[find_slot(w, name, n)] != 0)
        return ckpt__error(CKPT_EEXISTS, "%s: tensor '%s' was already added",
                           w->prefix, name);
    return 0;
}

/* Record an entry under the key `name` (`n` bytes followed by a NUL;
 * slice keys hold 0 bytes) with its proto. */
static int add_key(ckpt_bundle_writer *w, const char *name, size_t n,
                   const ckpt__bundle_entry *be)
{
    ckpt_buf proto = CKPT_BUF_INIT;
    struct wentry *e;
    int err;

    if ((w->count + 1) * 2 > w->nslots) {
        err = grow_slots(w);
        if (err < 0)
            return err;
    }
    if (w->count == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 64;
        struct wentry *p = ckpt__realloc(w->entries, cap * sizeof(*p));
        if (!p)
            return ckpt__error_oom();
        w->entries = p;
        w->cap = cap;
    }
    err = ckpt__bundle_entry_encode(&proto, be);
    if (err < 0)
        goto done;
    e = &w->entries[w->count];
    e->name = ckpt__malloc(n + 1 + proto.size);
    if (!e->name) {
        err = ckpt__error_oom();
        goto done;
    }
    memcpy(e->name, name, n + 1);
    if (proto.size)
        memcpy(e->name + n + 1, proto.ptr, proto.size);
    e->name_len = n;
    e->proto_len = proto.size;
    w->count++;
    w->slots[find_slot(w, name, n)] = w->count;
done:
    ckpt_buf_dispose(&proto);
    return err;
}

/* Record an entry for `name` (checked by check_name) with its proto. */
static int add_entry(ckpt_bundle_writer *w, const char *name,
                     const ckpt__bundle_entry *be)
{
    return add_key(w, name, strlen(name), be);
}

/* Replace the proto of entry `i` (a partitioned tensor's full entry). */
static int replace_proto(ckpt_bundle_writer *w, size_t i,
                         const ckpt__bundle_entry *be)
{
    ckpt_buf proto = CKPT_BUF_INIT;
    struct wentry *e = &w->entries[i];
    char *p;
    int err = ckpt__bundle_entry_encode(&proto, be);
    if (err < 0)
        goto done;
    p = ckpt__realloc(e->name, e->name_len + 1 + proto.size);
    if (!p) {
        err = ckpt__error_oom();
        goto done;
    }
    memcpy(p + e->name_len + 1, proto.ptr, proto.size);
    e->name = p;
    e->proto_len = proto.size;
done:
    ckpt_buf_dispose(&proto);
    return err;
}

/* ---- data shards ------------------------------------------------------------
 */

/* Create a fresh temporary file for `final_path`, exclusively. */
static int create_temp(const ckpt_fs *fs, ckpt_file **out, ckpt_buf *tmp,
                       const char *final_path, int flags)
{
    int err = 0;
    for (int i = 0; i < TEMP_TRIES; i++) {
        err = ckpt__fs_temp_name(tmp, final_path, TEMP_TAG);
        if (err < 0)
            return err;
        err = ckpt__fs_open_write(fs, out, tmp->ptr, CKPT_OPEN_EXCL | flags);
        if (err != CKPT_EEXISTS)
            return err;
    }
    return err;
}

static int shard_create(ckpt_bundle_writer *w, int i)
{
    struct wshard *s = &w->shards[i];
    int err;
    if (s->created)
        return 0;
    err = ckpt_bundle_data_path(&s->final_path, w->prefix, i, w->num_shards);
    if (err < 0)
        return err;
    err = create_temp(w->fs, &s->file, &s->tmp_path, s->final_path.ptr,
                      w->open_flags);
    if (err < 0)
        return err;
    s->created = true;
    return 0;
}

static int shard_flush(ckpt_bundle_writer *w, struct wshard *s)
{
    int err;
    if (s->pending.size == 0)
        return 0;
    err = ckpt__fs_write(w->fs, s->file, s->pending.ptr, s->pending.size);
    ckpt__buf_clear(&s->pending);
    return err;
}

/* Append `n` bytes to the current shard (buffered). */
static int shard_append(ckpt_bundle_writer *w, const void *data, size_t n)
{
    struct wshard *s = &w->shards[w->cur_shard];
    int err = 0;
    if (n == 0)
        return 0;
    if (s->pending.size + n > WRITE_BUF_SIZE) {
        err = shard_flush(w, s);
        if (err < 0)
            return err;
    }
    if (n >= WRITE_BUF_SIZE)
        err = ckpt__fs_write(w->fs, s->file, data, n);
    else
        err = ckpt__buf_put(&s->pending, data, n);
    if (err == 0)
        s->size += n;
    return err;
}

/* Zero bytes up to the next multiple of the alignment. */
static int shard_pad(ckpt_bundle_writer *w)
{
    struct wshard *s = &w->shards[w->cur_shard];
    uint64_t rem = s->size % w->alignment;
    uint64_t pad = rem ? w->alignment - rem : 0;
    while (pad > 0) {
        size_t chunk = pad < sizeof(zeros) ? (size_t)pad : sizeof(zeros);
        int err = shard_append(w, zeros, chunk);
        if (err < 0)
            return err;
        pad -= chunk;
    }
    return 0;
}

/* ---- open / free
 * -------------------------------------------------------------- */

int ckpt_bundle_writer_options_init(ckpt_bundle_writer_options *opts,
                                    unsigned int version)
{
    static const ckpt_bundle_writer_options defaults =
        CKPT_BUNDLE_WRITER_OPTIONS_INIT;
    CKPT__CHECK_ARG(opts);
    return ckpt__options_init(opts, &defaults, sizeof(defaults), version,
                              CKPT_BUNDLE_WRITER_OPTIONS_VERSION,
                              "bundle writer options",
                              "CKPT_BUNDLE_WRITER_OPTIONS_INIT");
}

int ckpt_bundle_writer_open(ckpt_bundle_writer **out, const char *prefix,
                            const ckpt_bundle_writer_options *opts)
{
    ckpt_bundle_writer *w = NULL;
    int num_shards = 1;
    int err;

    CKPT__CHECK_ARG(out);
    *out = NULL;
    if (!prefix || !*prefix)
        return ckpt__error(CKPT_EINVAL, "bundle writer: empty prefix");
    if (opts) {
        int err_v = ckpt__options_check_version(
            opts->version, CKPT_BUNDLE_WRITER_OPTIONS_VERSION,
            "bundle writer options", "CKPT_BUNDLE_WRITER_OPTIONS_INIT");
        if (err_v < 0)
            return err_v;
    }
    if (opts && opts->num_shards < 0)
        return ckpt__error(CKPT_EINVAL, "%s: num_shards %d is negative", prefix,
                           opts->num_shards);
    if (opts && opts->num_shards > 0)
        num_shards = opts->num_shards;

    w = ckpt__calloc(1, sizeof(*w));
    if (!w)
        return ckpt__error_oom();
    w->fs = ckpt_fs_or_default(opts ? opts->fs : NULL);
    w->num_shards = num_shards;
    w->alignment = opts && opts->data_alignment ? opts->data_alignment : 1;
    /* CKPT_DIRECT_IO_DEFAULT (0) is on, as in the saver's options. */
    w->open_flags = !opts || opts->direct_io >= CKPT_DIRECT_IO_DEFAULT
                        ? CKPT_OPEN_DIRECT
                        : 0;
    w->prefix = ckpt__strdup(prefix);
    w->shards = ckpt__calloc((size_t)num_shards, sizeof(*w->shards));
    if (!w->prefix || !w->shards) {
        err = ckpt__error_oom();
        goto done;
    }
    err = ckpt__path_dirname(&w->dir, prefix);
    if (err == 0)
        err = ckpt_bundle_index_path(&w->index_final, prefix);
    /* Shard 0 now, so a missing directory fails here; the others on first
     * use (or at finish when never used). */
    if (err == 0)
        err = shard_create(w, 0);
done:
    if (err < 0) {
        ckpt__saved_error saved;
        ckpt__error_save(&saved);
        ckpt_bundle_writer_free(w);
        ckpt__error_restore(&saved);
        return err;
    }
    *out = w;
    return 0;
}

/* Close one output file (the index or a data file) and remove what this
 * writer made of it: its temporary while not renamed, else the renamed
 * file. Keeps the last error. */
static void abandon_file(const ckpt_fs *fs, ckpt_file **file, bool *created,
                         bool *renamed, const ckpt_buf *tmp_path,
                         const ckpt_buf *final_path)
{
    ckpt__fs_close_quiet(fs, *file);
    *file = NULL;
    if (*created && !*renamed)
        ckpt__fs_remove_quiet(fs, tmp_path->ptr);
    if (*renamed)
        ckpt__fs_remove_quiet(fs, final_path->ptr);
    *created = false;
    *renamed = false;
}

/* Close and remove everything this writer created that a complete bundle
 * does not own: temporaries always; renamed data files and the index too
 * when the commit did not complete. Keeps the last error. */
static void abandon(ckpt_bundle_writer *w)
{
    abandon_file(w->fs, &w->index_file, &w->index_created, &w->index_renamed,
                 &w->index_tmp, &w->index_final);
    for (int i = 0; w->shards && i < w->num_shards; i++) {
        struct wshard *s = &w->shards[i];
        abandon_file(w->fs, &s->file, &s->created, &s->renamed, &s->tmp_path,
                     &s->final_path);
    }
}

void ckpt_bundle_writer_free(ckpt_bundle_writer *w)
{
    if (!w)
        return;
    if (w->state != W_FINISHED)
        abandon(w);
    for (int i = 0; w->shards && i < w->num_shards; i++) {
        ckpt_buf_dispose(&w->shards[i].tmp_path);
        ckpt_buf_dispose(&w->shards[i].final_path);
        ckpt_buf_dispose(&w->shards[i].pending);
    }
    for (size_t i = 0; i < w->count; i++)
        ckpt__free(w->entries[i].name);
    ckpt__free(w->entries);
    ckpt__slice_set_dispose(&w->sliced);
    ckpt__free(w->slots);
    ckpt__free(w->shards);
    ckpt__free(w->prefix);
    ckpt_buf_dispose(&w->dir);
    ckpt_buf_dispose(&w->index_tmp);
    ckpt_buf_dispose(&w->index_final);
    ckpt__free(w);
}

int ckpt_bundle_writer_select_shard(ckpt_bundle_writer *w, int shard)
{
    int err;
    CKPT__CHECK_ARG(w);
    err = check_open(w);
    if (err < 0)
        return err;
    if (shard < 0 || shard >= w->num_shards)
        return fail(w, ckpt__error(CKPT_EINVAL,
                                   "%s: shard %d out of range (%d shards)",
                                   w->prefix, shard, w->num_shards));
    err = shard_create(w, shard);
    if (err < 0)
        return fail(w, err);
    w->cur_shard = shard;
    return 0;
}

/* ---- adds
 * ------------------------------------------------------------------------ */

/* Validate the shape for tensor `name`; the element count to `out`. */
static int check_shape(ckpt_bundle_writer *w, const char *name,
                       const ckpt_shape *shape, int64_t *out)
{
    int err;
    if (!shape)
        return ckpt__error(CKPT_EINVAL, "%s: tensor '%s': NULL shape",
                           w->prefix, name);
    err = ckpt_shape_num_elements(out, shape);
    if (err < 0)
        return ckpt__error_prefix(err, "%s: tensor '%s'", w->prefix, name);
    return 0;
}

/* check_name, then check_shape: the checks of a string tensor. */
static int check_name_and_shape(ckpt_bundle_writer *w, const char *name,
                                const ckpt_shape *shape, int64_t *count)
{
    int err = check_name(w, name);
    if (err == 0)
        err = check_shape(w, name, shape, count);
    return err;
}

/* Fill the entry for a record about to be appended to the current shard. */
static void entry_init(const ckpt_bundle_writer *w, ckpt__bundle_entry *e,
                       int dtype, const ckpt_shape *shape)
{
    memset(e, 0, sizeof(*e));
    e->dtype = dtype;
    e->shape = *shape;
    e->shard_id = w->cur_shard;
    e->offset = (int64_t)w->shards[w->cur_shard].size;
}

/* Append a record whose CRC is known, pad, and record the entry. */
static int finish_record(ckpt_bundle_writer *w, const char *name,
                         ckpt__bundle_entry *e, uint64_t size, uint32_t crc)
{
    int err;
    e->size = (int64_t)size;
    e->crc32c = ckpt__crc32c_mask(crc);
    err = shard_pad(w);
    if (err == 0)
        err = add_entry(w, name, e);
    return err;
}

/* Checks of a fixed-size tensor's name, dtype, shape and byte size. */
static int check_fixed(ckpt_bundle_writer *w, const char *name, int dtype,
                       const ckpt_shape *shape, uint64_t nbytes)
{
    int64_t count, need;
    int err = check_name(w, name);
    if (err < 0)
        return err;
    if (dtype == CKPT_DT_STRING)
        return ckpt__error(CKPT_EINVAL,
                           "%s: tensor '%s': string tensors are added with "
                           "ckpt_bundle_writer_add_strings",
                           w->prefix, name);
    if (ckpt_dtype_size(dtype) == 0)
        return ckpt__error(CKPT_ENOTSUP,
                           "%s: tensor '%s': dtype %d (%s) is not supported",
                           w->prefix, name, dtype, ckpt__dtype_label(dtype));
    err = check_shape(w, name, shape, &count);
    if (err < 0)
        return err;
    if (ckpt__mul_overflow_i64(count, (int64_t)ckpt_dtype_size(dtype), &need) ||
        (uint64_t)need != nbytes)
        return ckpt__error(CKPT_EINVAL,
                           "%s: tensor '%s': %llu bytes given, a %s tensor "
                           "of %lld elements needs %lld",
                           w->prefix, name, (unsigned long long)nbytes,
                           ckpt__dtype_label(dtype), (long long)count,
                           (long long)need);
    return 0;
}

int ckpt_bundle_writer_add(ckpt_bundle_writer *w, const char *name, int dtype,
                           const ckpt_shape *shape, const void *data,
                           size_t nbytes)
{
    ckpt__bundle_entry e;
    int err;
    CKPT__CHECK_ARG(w);
    err = check_open(w);
    if (err < 0)
        return err;
    err = check_fixed(w, name, dtype, shape, nbytes);
    if (err < 0)
        return fail(w, err);
    if (!data && nbytes > 0)
        return fail(w, ckpt__error(CKPT_EINVAL, "%s: tensor '%s': NULL data",
                                   w->prefix, name));
    entry_init(w, &e, dtype, shape);
    err = shard_append(w, data, nbytes);
    if (err == 0)
        err = finish_record(w, name, &e, nbytes, ckpt__crc32c(data, nbytes));
    return fail(w, err);
}

/* The full entry of piece `p` of `name`: created, or updated with the
 * piece's extents appended. */
static int add_full_entry(ckpt_bundle_writer *w, const char *name, int dtype,
                          const ckpt_shape *full_shape,
                          const ckpt__slice_piece *p, bool is_new, size_t i)
{
    ckpt__bundle_entry full;
    int err;
    if (is_new)
        i = w->count;
    err = ckpt__slice_set_append(&w->sliced, i, dtype, full_shape, p, &full);
    if (err < 0)
        return err;
    return is_new ? add_entry(w, name, &full) : replace_proto(w, i, &full);
}

int ckpt_bundle_writer_add_slice(ckpt_bundle_writer *w, const char *name,
                                 int dtype, const ckpt_shape *full_shape,
                                 const ckpt_slice_extent *extents,
                                 const void *data, size_t nbytes)
{
    ckpt__slice_piece piece;
    ckpt__bundle_entry e;
    size_t slot = 0;
    int err;
    CKPT__CHECK_ARG(w);
    err = check_open(w);
    if (err < 0)
        return err;
    err = ckpt__slice_piece_prepare(&piece, w->prefix, name, dtype, full_shape,
                                    extents, data, nbytes);
    if (err == 0 && piece.whole) {
        ckpt__slice_piece_dispose(&piece);
        return ckpt_bundle_writer_add(w, name, dtype, full_shape, data, nbytes);
    }
    if (err == 0 && w->nslots) {
        slot = w->slots[find_slot(w, name, strlen(name))];
        if (w->slots[find_slot(w, piece.key.ptr, piece.key.size)] != 0)
            err = ckpt__error(CKPT_EEXISTS,
                              "%s: tensor '%s': this piece was already added",
                              w->prefix, name);
    }
    if (err == 0)
        err = ckpt__slice_set_check(&w->sliced, w->prefix, name,
                                    slot ? slot - 1 : 0, slot == 0, dtype,
                                    full_shape, &piece);
    if (err == 0) {
        entry_init(w, &e, dtype, &piece.shape);
        err = shard_append(w, data, nbytes);
    }
    if (err == 0) {
        e.size = (int64_t)nbytes;
        e.crc32c = ckpt__crc32c_mask(ckpt__crc32c(data, nbytes));
        err = shard_pad(w);
    }
    if (err == 0)
        err = add_full_entry(w, name, dtype, full_shape, &piece, slot == 0,
                             slot ? slot - 1 : 0);
    if (err == 0)
        err = add_key(w, piece.key.ptr, piece.key.size, &e);
    ckpt__slice_piece_dispose(&piece);
    return fail(w, err);
}

int ckpt__bundle_writer_append_raw(ckpt_bundle_writer *w, const void *data,
                                   size_t n)
{
    struct wshard *s;
    int err = check_open(w);
    if (err < 0)
        return err;
    if (!data && n > 0)
        return fail(w, ckpt__error(CKPT_EINVAL, "%s: NULL data", w->prefix));
    s = &w->shards[w->cur_shard];
    /* Straight to the fs, so an aligned buffer stays aligned. */
    err = shard_flush(w, s);
    if (err == 0 && n > 0)
        err = ckpt__fs_write(w->fs, s->file, data, n);
    if (err == 0)
        s->size += n;
    return fail(w, err);
}

int ckpt__bundle_writer_add_written(ckpt_bundle_writer *w, const char *name,
                                    int dtype, const ckpt_shape *shape,
                                    uint64_t offset, uint64_t size,
                                    uint32_t masked_crc)
{
    ckpt__bundle_entry e;
    uint64_t written;
    int err = check_open(w);
    if (err < 0)
        return err;
    err = check_fixed(w, name, dtype, shape, size);
    if (err < 0)
        return fail(w, err);
    written = w->shards[w->cur_shard].size;
    if (offset > written || size > written - offset)
        return fail(w, ckpt__error(CKPT_EINVAL,
                                   "%s: tensor '%s': record [%llu, +%llu) "
                                   "lies beyond the %llu bytes written",
                                   w->prefix, name, (unsigned long long)offset,
                                   (unsigned long long)size,
                                   (unsigned long long)written));
    entry_init(w, &e, dtype, shape);
    e.offset = (int64_t)offset;
    e.size = (int64_t)size;
    e.crc32c = masked_crc;
    return fail(w, add_entry(w, name, &e));
}

uint64_t ckpt__bundle_writer_bytes(const ckpt_bundle_writer *w)
{
    uint64_t total;
    if (!w)
        return 0;
    total = w->index_bytes;
    for (int i = 0; i < w->num_shards; i++)
        total += w->shards[i].size;
    return total;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define HOST_BIG_ENDIAN 1
#else
#define HOST_BIG_ENDIAN 0
#endif

int ckpt_bundle_writer_add_strings(ckpt_bundle_writer *w, const char *name,
                                   const ckpt_shape *shape,
                                   const ckpt_slice *strings, size_t n)
{
    ckpt_buf head = CKPT_BUF_INIT;
    ckpt__bundle_entry e;
    int64_t count;
    uint64_t total;
    uint32_t crc = 0;
    uint32_t masked;
    uint8_t word[8];
    int err;
    CKPT__CHECK_ARG(w);
    err = check_open(w);
    if (err < 0)
        return err;
    err = check_name_and_shape(w, name, shape, &count);
    if (err < 0)
        return fail(w, err);
    if ((uint64_t)count != (uint64_t)n)
        return fail(w, ckpt__error(CKPT_EINVAL,
                                   "%s: tensor '%s': %zu strings given, the "
                                   "shape has %lld elements",
                                   w->prefix, name, n, (long long)count));
    if (!strings && n > 0)
        return fail(w, ckpt__error(CKPT_EINVAL, "%s: tensor '%s': NULL strings",
                                   w->prefix, name));
    for (size_t i = 0; i < n; i++) {
        if (!strings[i].ptr && strings[i].len > 0)
            return fail(w, ckpt__error(CKPT_EINVAL,
                                       "%s: tensor '%s': string %zu is NULL",
                                       w->prefix, name, i));
        err = ckpt__put_varint64(&head, strings[i].len);
        if (err < 0)
            goto done;
        crc = ckpt__string_length_crc(crc, strings[i].len, HOST_BIG_ENDIAN);
    }
    masked = ckpt__crc32c_mask(crc);
    ckpt__string_checksum_put(word, masked, HOST_BIG_ENDIAN);
    err = ckpt__buf_put(&head, word, 4);
    if (err < 0)
        goto done;
    crc = ckpt__crc32c_extend(crc, word, 4);
    total = head.size;
    for (size_t i = 0; i < n; i++) {
        if (ckpt__add_overflow_u64(total, strings[i].len, &total) ||
            total > INT64_MAX) {
            err = ckpt__error(CKPT_EINVAL, "%s: tensor '%s': too many bytes",
                              w->prefix, name);
            goto done;
        }
    }
    entry_init(w, &e, CKPT_DT_STRING, shape);
    err = shard_append(w, head.ptr, head.size);
    for (size_t i = 0; err == 0 && i < n; i++) {
        crc = ckpt__crc32c_extend(crc, strings[i].ptr, strings[i].len);
        err = shard_append(w, strings[i].ptr, strings[i].len);
    }
    if (err == 0)
        err = finish_record(w, name, &e, total, crc);
done:
    ckpt_buf_dispose(&head);
    return fail(w, err);
}

/* Check that `rec` is a well-formed string record of `count` elements
 * (layout and length checksum) and compute its CRC as TensorFlow defines
 * it: the length words in place of the varints, then the rest. */
static int string_record_crc(const ckpt_bundle_writer *w, const char *name,
                             const uint8_t *rec, size_t len, int64_t count,
                             uint32_t *crc_out)
{
    const uint8_t *p = rec;
    const uint8_t *end = rec + len;
    uint64_t sum = 0;
    uint32_t crc = 0;
    uint32_t stored;
    if (count == 0 && len == 0) {
        *crc_out = 0; /* TensorFlow reads an empty record as no strings */
        return 0;
    }
    for (int64_t i = 0; i < count; i++) {
        uint64_t l;
        if (!ckpt__get_varint64(&p, end, &l) ||
            ckpt__add_overflow_u64(sum, l, &sum))
            goto bad;
        crc = ckpt__string_length_crc(crc, l, HOST_BIG_ENDIAN);
    }
    if ((size_t)(end - p) < 4 || (uint64_t)(end - p) - 4 != sum)
        goto bad;
    stored = ckpt__string_checksum_get(p, HOST_BIG_ENDIAN);
    if (stored != ckpt__crc32c_mask(crc))
        return ckpt__error(CKPT_EINVAL,
                           "%s: tensor '%s': string record's length checksum "
                           "does not match",
                           w->prefix, name);
    *crc_out = ckpt__crc32c_extend(crc, p, (size_t)(end - p));
    return 0;
bad:
    return ckpt__error(CKPT_EINVAL,
                       "%s: tensor '%s': not a string record of %lld "
                       "elements",
                       w->prefix, name, (long long)count);
}

int ckpt_bundle_writer_add_record(ckpt_bundle_writer *w, const char *name,
                                  int dtype, const ckpt_shape *shape,
                                  const void *record, size_t record_len)
{
    ckpt__bundle_entry e;
    int64_t count, need;
    uint32_t crc = 0;
    int err;
    CKPT__CHECK_ARG(w);
    err = check_open(w);
    if (err < 0)
        return err;
    err = check_name_and_shape(w, name, shape, &count);
    if (err < 0)
        return fail(w, err);
    if (!record && record_len > 0)
        return fail(w, ckpt__error(CKPT_EINVAL, "%s: tensor '%s': NULL record",
                                   w->prefix, name));
    if (dtype == CKPT_DT_STRING) {
        err = string_record_crc(w, name, record, record_len, count, &crc);
    } else if (ckpt_dtype_size(dtype) > 0) {
        if (ckpt__mul_overflow_i64(count, (int64_t)ckpt_dtype_size(dtype),
                                   &need) ||
            (uint64_t)need != (uint64_t)record_len)
            err = ckpt__error(CKPT_EINVAL,
                              "%s: tensor '%s': record of %zu bytes, a %s "
                              "tensor of %lld elements needs %lld",
                              w->prefix, name, record_len,
                              ckpt__dtype_label(dtype), (long long)count,
                              (long long)need);
    } else {
        err = ckpt__error(CKPT_ENOTSUP,
                          "%s: tensor '%s': dtype %d (%s) is not supported",
                          w->prefix, name, dtype, ckpt__dtype_label(dtype));
    }
    if (err < 0)
        return fail(w, err);
    entry_init(w, &e, dtype, shape);
    if (dtype != CKPT_DT_STRING)
        crc = ckpt__crc32c(record, record_len);
    err = shard_append(w, record, record_len);
    if (err == 0)
        err = finish_record(w, name, &e, record_len, crc);
    return fail(w, err);
}

/* ---- finish
 * ------------------------------------------------------------------------ */

static int cmp_entries(const void *a, const void *b)
{
    const struct wentry *x = a;
    const struct wentry *y = b;
    return ckpt__key_compare(x->name, x->name_len, y->name, y->name_len);
}

/* Sync, close and rename every data file into place. */
static int commit_shards(ckpt_bundle_writer *w)
{
    int err = 0;
    for (int i = 0; err == 0 && i < w->num_shards; i++) {
        struct wshard *s = &w->shards[i];
        err = shard_create(w, i);
        if (err == 0)
            err = shard_flush(w, s);
        if (err == 0)
            err = ckpt__fs_sync(w->fs, s->file);
        if (err == 0) {
            ckpt_file *f = s->file;
            s->file = NULL;
            err = ckpt__fs_close(w->fs, f);
        }
        if (err == 0)
            err = ckpt__fs_rename(w->fs, s->tmp_path.ptr, s->final_path.ptr);
        if (err == 0)
            s->renamed = true;
    }
    return err;
}

static int write_index(ckpt_bundle_writer *w)
{
    ckpt__table_builder *t = NULL;
    ckpt__bundle_header h;
    ckpt_buf header = CKPT_BUF_INIT;
    ckpt_file *f;
    int err;

    ckpt__bundle_header_init(&h, w->num_shards);
    err = ckpt__bundle_header_encode(&header, &h);
    if (err < 0)
        goto done;
    err = create_temp(w->fs, &w->index_file, &w->index_tmp, w->index_final.ptr,
                      0);
    if (err < 0)
        goto done;
    w->index_created = true;
    err =
        ckpt__table_builder_new(&t, w->fs, w->index_file, w->index_tmp.ptr, 0);
    if (err == 0)
        err = ckpt__table_builder_add(t, "", 0, header.ptr, header.size);
    if (w->count > 1)
        qsort(w->entries, w->count, sizeof(*w->entries), cmp_entries);
    for (size_t i = 0; err == 0 && i < w->count; i++) {
        const struct wentry *e = &w->entries[i];
        err = ckpt__table_builder_add(t, e->name, e->name_len,
                                      e->name + e->name_len + 1, e->proto_len);
    }
    if (err == 0)
        err = ckpt__table_builder_finish(t);
    if (err == 0)
        w->index_bytes = ckpt__table_builder_file_size(t);
    if (err == 0)
        err = ckpt__fs_sync(w->fs, w->index_file);
    if (err == 0) {
        f = w->index_file;
        w->index_file = NULL;
        err = ckpt__fs_close(w->fs, f);
    }
    if (err == 0)
        err = ckpt__fs_rename(w->fs, w->index_tmp.ptr, w->index_final.ptr);
    if (err == 0)
        w->index_renamed = true;
done:
    ckpt__table_builder_free(t);
    ckpt_buf_dispose(&header);
    return err;
}

int ckpt_bundle_writer_finish(ckpt_bundle_writer *w)
{
    int err;
    CKPT__CHECK_ARG(w);
    if (w->state == W_FINISHED)
        return ckpt__error(CKPT_ESTATE, "%s: bundle writer already finished",
                           w->prefix);
    if (w->status < 0) {
        if (w->state == W_OPEN)
            abandon(w);
        w->state = W_FAILED;
        return sticky(w);
    }
    err = commit_shards(w);
    /* The data names must be durable before an index can refer to them. */
    if (err == 0)
        err = ckpt__fs_sync_dir(w->fs, w->dir.ptr);
    if (err == 0)
        err = write_index(w);
    if (err == 0)
        err = ckpt__fs_sync_dir(w->fs, w->dir.ptr);
    if (err < 0) {
        fail(w, err);
        abandon(w);
        w->state = W_FAILED;
        return sticky(w);
    }
    w->state = W_FINISHED;
    return 0;
}
