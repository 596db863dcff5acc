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
 * files and every file already renamed for this bundle (an index renamed
 * into place first, its removal made durable before the data files go, or
 * the data files kept when that fsync fails: see abandon), so no index
 * ever points at missing data, even after a power cut. The first error of
 * any call is sticky.
 *
 * This file owns the writer's life (open, data files, first error, finish,
 * free); the add calls and the tensor names are bundle_writer_add.c's. */
#include "ckpt/bundle.h"

#include "common/internal.h"
#include "format/bundle_proto.h"
#include "format/bundle_slices.h"
#include "format/bundle_writer_internal.h"
#include "format/bundle_writer_state.h"
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
#define TEMP_TAG "tempstate"

static const uint8_t zeros[4096];

/* ---- errors ----------------------------------------------------------------
 */

/* Remember the first error (code and message) and return `rc`. */
int ckpt__bundle_writer_fail(ckpt_bundle_writer *w, int rc)
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

/* Report the sticky error to a later call, saying that it is an earlier
 * call's: an add of another tensor reported only "tensor 'f' was already
 * added", as if about the tensor it was given. */
static int sticky_earlier(const ckpt_bundle_writer *w)
{
    return ckpt__error(w->status,
                       "bundle writer: an earlier call failed, so nothing "
                       "more is added and finish fails (free the writer and "
                       "start again): %s",
                       w->status_msg);
}

/* Checks common to every add: a usable writer and a fresh, non-empty name. */
int ckpt__bundle_writer_check_open(ckpt_bundle_writer *w)
{
    if (w->state == W_FINISHED)
        return ckpt__error(CKPT_ESTATE, "%s: bundle writer already finished",
                           w->prefix);
    if (w->status < 0)
        return sticky_earlier(w);
    return 0;
}

/* ---- data shards ------------------------------------------------------------
 */

/* Whether the directory `final_path` would go in is missing: into `dir`.
 * A failing stat leaves the error being reported as it was. */
static int dir_missing(const ckpt_fs *fs, const char *final_path, ckpt_buf *dir)
{
    ckpt__saved_error saved;
    int exists;
    if (ckpt__path_dirname(dir, final_path) < 0)
        return 0;
    ckpt__error_save(&saved);
    exists = ckpt__fs_exists(fs, dir->ptr);
    ckpt__error_restore(&saved);
    return exists == 0;
}

/* The error `err` of creating `tmp` ("<op> <tmp>: <reason>") told about
 * the file the caller asked for: "cannot create <final_path>: <reason>",
 * so a missing directory or a permission is not reported against a
 * temporary name the caller never chose; a missing directory is named
 * ("directory <dir> does not exist", not the system's "No such file or
 * directory", which reads as if the file were expected to exist). */
static int name_final_path(const ckpt_fs *fs, int err, const char *tmp,
                           const char *final_path)
{
    const char *msg = ckpt_error_last()->message;
    size_t shown = 0;
    const char *at = ckpt__message_find(msg, tmp, &shown);
    ckpt_buf dir = CKPT_BUF_INIT;
    char reason[256];
    if (!at || strncmp(at + shown, ": ", 2) != 0)
        return err;
    snprintf(reason, sizeof(reason), "%s", at + shown + 2);
    if (err == CKPT_ENOTFOUND && dir_missing(fs, final_path, &dir))
        err = ckpt__error(err, "cannot create %s: directory %s does not exist",
                          final_path, dir.ptr);
    else
        err = ckpt__error(err, "cannot create %s: %s", final_path, reason);
    ckpt_buf_dispose(&dir);
    return err;
}

/* Create a fresh temporary file for `final_path`, exclusively. */
static int create_temp(const ckpt_fs *fs, ckpt_file **out, ckpt_buf *tmp,
                       const char *final_path, int flags)
{
    int err = ckpt__fs_create_temp(fs, out, tmp, final_path, TEMP_TAG, flags);
    if (err == CKPT_ENOTFOUND || err == CKPT_EACCES)
        return name_final_path(fs, err, tmp->ptr, final_path);
    return err;
}

static int shard_create(ckpt_bundle_writer *w, int i)
{
    struct ckpt__writer_shard *s = &w->shards[i];
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

int ckpt__bundle_writer_shard_flush(ckpt_bundle_writer *w,
                                    struct ckpt__writer_shard *s)
{
    int err;
    if (s->pending.size == 0)
        return 0;
    err = ckpt__fs_write(w->fs, s->file, s->tmp_path.ptr, s->pending.ptr,
                         s->pending.size);
    ckpt__buf_clear(&s->pending);
    return err;
}

/* Append `n` bytes to the current shard (buffered). */
int ckpt__bundle_writer_shard_append(ckpt_bundle_writer *w, const void *data,
                                     size_t n)
{
    struct ckpt__writer_shard *s = &w->shards[w->cur_shard];
    int err = 0;
    if (n == 0)
        return 0;
    if (s->pending.size + n > WRITE_BUF_SIZE) {
        err = ckpt__bundle_writer_shard_flush(w, s);
        if (err < 0)
            return err;
    }
    if (n >= WRITE_BUF_SIZE)
        err = ckpt__fs_write(w->fs, s->file, s->tmp_path.ptr, data, n);
    else
        err = ckpt__buf_put(&s->pending, data, n);
    if (err == 0)
        s->size += n;
    return err;
}

/* Zero bytes up to the next multiple of the alignment. */
int ckpt__bundle_writer_shard_pad(ckpt_bundle_writer *w)
{
    struct ckpt__writer_shard *s = &w->shards[w->cur_shard];
    uint64_t rem = s->size % w->alignment;
    uint64_t pad = rem ? w->alignment - rem : 0;
    while (pad > 0) {
        size_t chunk = pad < sizeof(zeros) ? (size_t)pad : sizeof(zeros);
        int err = ckpt__bundle_writer_shard_append(w, zeros, chunk);
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
        if (err_v == 0)
            err_v = ckpt__fs_check(opts->fs, "bundle writer options");
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
 * when the commit did not complete. An index already renamed into place
 * (the last directory fsync failed) goes first and its removal is made
 * durable before any data file goes: removals in one directory reach the
 * disk in any order until it is fsynced, and a power cut keeping a data
 * file's removal but losing the index's would leave an index without its
 * data. When that fsync fails too (a failing disk) the renamed data files
 * stay: a power cut then leaves either the whole checkpoint, unlisted, or
 * data without an index, which the next open removes (dir_sweep.c).
 * Keeps the last error. */
static void abandon(ckpt_bundle_writer *w)
{
    bool index_named = w->index_renamed;
    bool keep_data = false;
    abandon_file(w->fs, &w->index_file, &w->index_created, &w->index_renamed,
                 &w->index_tmp, &w->index_final);
    if (index_named) {
        ckpt__saved_error saved;
        ckpt__error_save(&saved);
        keep_data = ckpt__fs_sync_dir(w->fs, w->dir.ptr) < 0;
        ckpt__error_restore(&saved);
    }
    for (int i = 0; w->shards && i < w->num_shards; i++) {
        struct ckpt__writer_shard *s = &w->shards[i];
        if (keep_data && s->renamed) { /* left under its final name */
            s->created = false;
            s->renamed = false;
        }
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
    err = ckpt__bundle_writer_check_open(w);
    if (err < 0)
        return err;
    if (shard < 0 || shard >= w->num_shards)
        return ckpt__bundle_writer_fail(
            w, ckpt__error(CKPT_EINVAL, "%s: shard %d out of range (%d shards)",
                           w->prefix, shard, w->num_shards));
    err = shard_create(w, shard);
    if (err < 0)
        return ckpt__bundle_writer_fail(w, err);
    w->cur_shard = shard;
    return 0;
}

/* ---- finish
 * ------------------------------------------------------------------------ */

static int cmp_entries(const void *a, const void *b)
{
    const struct ckpt__writer_entry *x = a;
    const struct ckpt__writer_entry *y = b;
    return ckpt__key_compare(x->name, x->name_len, y->name, y->name_len);
}

/* Every data file written, fsynced and closed under its temporary name,
 * then the before_rename call, then the renames into place. */
static int commit_shards(ckpt_bundle_writer *w)
{
    int err = 0;
    for (int i = 0; err == 0 && i < w->num_shards; i++) {
        struct ckpt__writer_shard *s = &w->shards[i];
        err = shard_create(w, i);
        if (err == 0)
            err = ckpt__bundle_writer_shard_flush(w, s);
        if (err == 0)
            err = ckpt__fs_sync_close(w->fs, &s->file, s->tmp_path.ptr);
    }
    if (err == 0 && w->before_rename)
        err = w->before_rename(w->before_rename_payload);
    for (int i = 0; err == 0 && i < w->num_shards; i++) {
        struct ckpt__writer_shard *s = &w->shards[i];
        err = ckpt__fs_rename(w->fs, s->tmp_path.ptr, s->final_path.ptr);
        if (err == 0)
            s->renamed = true;
    }
    return err;
}

void ckpt__bundle_writer_before_rename(ckpt_bundle_writer *w,
                                       int (*fn)(void *payload), void *payload)
{
    w->before_rename = fn;
    w->before_rename_payload = payload;
}

static int write_index(ckpt_bundle_writer *w)
{
    ckpt__table_builder *t = NULL;
    ckpt__bundle_header h;
    ckpt_buf header = CKPT_BUF_INIT;
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
    if (err == 0) /* entry indices change in the sort */
        err = ckpt__bundle_writer_encode_partitioned(w);
    if (w->count > 1)
        qsort(w->entries, w->count, sizeof(*w->entries), cmp_entries);
    for (size_t i = 0; err == 0 && i < w->count; i++) {
        const struct ckpt__writer_entry *e = &w->entries[i];
        err = ckpt__table_builder_add(t, e->name, e->name_len,
                                      e->name + e->name_len + 1, e->proto_len);
    }
    if (err == 0)
        err = ckpt__table_builder_finish(t);
    if (err == 0)
        w->index_bytes = ckpt__table_builder_file_size(t);
    if (err == 0)
        err = ckpt__fs_sync_close(w->fs, &w->index_file, w->index_tmp.ptr);
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
        return sticky_earlier(w);
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
        ckpt__bundle_writer_fail(w, err);
        abandon(w);
        w->state = W_FAILED;
        return sticky(w);
    }
    w->state = W_FINISHED;
    return 0;
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
