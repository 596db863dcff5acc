/* format/bundle_index_write.c - ckpt__bundle_index_write: one .index over
 * entries whose records live in data files written by others (the merge of
 * a sharded save). Commit order as the bundle writer's: temporary file,
 * fsync, rename, directory fsync; the index is always the last file to
 * appear, so its presence means the checkpoint is complete. */
#include "format/bundle_index.h"

#include "ckpt/bundle.h"

#include "common/internal.h"
#include "format/block.h"
#include "format/bundle_proto.h"
#include "format/table.h"
#include "io/fs_internal.h"

#include <stdlib.h>

static int cmp_kv(const void *a, const void *b)
{
    const ckpt__index_kv *x = a;
    const ckpt__index_kv *y = b;
    return ckpt__key_compare(x->key, x->key_len, y->key, y->key_len);
}

/* Sort the entries and reject a key given twice. */
static int sort_entries(const char *path, ckpt__index_kv *kvs, size_t n)
{
    if (n > 1)
        qsort(kvs, n, sizeof(*kvs), cmp_kv);
    for (size_t i = 1; i < n; i++)
        if (cmp_kv(&kvs[i - 1], &kvs[i]) == 0)
            return ckpt__error(CKPT_EINVAL, "%s: duplicate tensor '%.*s'", path,
                               (int)kvs[i].key_len, kvs[i].key);
    return 0;
}

/* Header and entries into the open file `f`. */
static int write_table(const ckpt_fs *fs, ckpt_file *f, const char *name,
                       int num_shards, const ckpt__index_kv *kvs, size_t n,
                       uint64_t *size_out)
{
    ckpt__table_builder *t = NULL;
    ckpt__bundle_header h;
    ckpt_buf header = CKPT_BUF_INIT;
    int err;
    ckpt__bundle_header_init(&h, num_shards);
    err = ckpt__bundle_header_encode(&header, &h);
    if (err == 0)
        err = ckpt__table_builder_new(&t, fs, f, name, 0);
    if (err == 0)
        err = ckpt__table_builder_add(t, "", 0, header.ptr, header.size);
    for (size_t i = 0; err == 0 && i < n; i++)
        err = ckpt__table_builder_add(t, kvs[i].key, kvs[i].key_len,
                                      kvs[i].value, kvs[i].value_len);
    if (err == 0)
        err = ckpt__table_builder_finish(t);
    if (err == 0)
        *size_out = ckpt__table_builder_file_size(t);
    ckpt__table_builder_free(t);
    ckpt_buf_dispose(&header);
    return err;
}

int ckpt__bundle_index_write(const ckpt_fs *fs, const char *prefix,
                             int num_shards, ckpt__index_kv *kvs, size_t n,
                             uint64_t *bytes_out)
{
    ckpt_buf final_path = CKPT_BUF_INIT;
    ckpt_buf tmp = CKPT_BUF_INIT;
    ckpt_buf dir = CKPT_BUF_INIT;
    ckpt_file *f = NULL;
    int created = 0;
    uint64_t size = 0;
    int err;

    fs = ckpt_fs_or_default(fs);
    err = ckpt_bundle_index_path(&final_path, prefix);
    if (err == 0)
        err = ckpt__path_dirname(&dir, prefix);
    if (err == 0)
        err = sort_entries(final_path.ptr, kvs, n);
    if (err == 0)
        err =
            ckpt__fs_create_temp(fs, &f, &tmp, final_path.ptr, "tempstate", 0);
    if (err < 0)
        goto done;
    created = 1;
    err = write_table(fs, f, tmp.ptr, num_shards, kvs, n, &size);
    if (err == 0)
        err = ckpt__fs_sync_close(fs, &f, tmp.ptr);
    if (err == 0)
        err = ckpt__fs_rename(fs, tmp.ptr, final_path.ptr);
    if (err == 0) {
        created = 0;
        err = ckpt__fs_sync_dir(fs, dir.ptr);
        if (err < 0)
            ckpt__fs_remove_quiet(fs, final_path.ptr);
    }
    if (err == 0 && bytes_out)
        *bytes_out = size;
done:
    ckpt__fs_close_quiet(fs, f);
    if (created)
        ckpt__fs_remove_quiet(fs, tmp.ptr);
    ckpt_buf_dispose(&final_path);
    ckpt_buf_dispose(&tmp);
    ckpt_buf_dispose(&dir);
    return err;
}
