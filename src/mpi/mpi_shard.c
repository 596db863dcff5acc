/* mpi/mpi_shard.c - one rank's part of a distributed save: the variables
 * it owns laid out back to back in a staging image (the same layout as its
 * data file), and the write of that image to a temporary name of
 * <prefix>.data-<rank>-of-<size> in one write (its page-aligned part with
 * O_DIRECT unless direct_io is off, as ckpt_saver writes), fsynced once
 * and closed. Rank 0 renames it
 * into place when every rank's file is durable. What rank 0 needs to build
 * the index travels as one blob, the temporary file named by its name in
 * the directory alone (each rank may reach the directory by another path:
 * rank 0 joins the name to its own):
 *
 *   u32 temp_name_len | temp_name | u32 count |
 *   count x (u32 key_len | key | u32 proto_len | BundleEntryProto)
 */
#include "mpi_internal.h"

#include "io/fs_internal.h"
#include "util/crc32c.h"

#include <string.h>

int ckpt__mpi_shard_plan(ckpt_mpi_saver *s)
{
    size_t n = 0;
    uint64_t offset = 0;
    for (size_t i = 0; i < s->nvars; i++)
        n += s->vars[i].owned != 0;
    ckpt__free(s->owned); /* a check that failed here before */
    ckpt__free(s->owned_idx);
    s->nowned = 0;
    s->owned = ckpt__calloc(n ? n : 1, sizeof(*s->owned));
    s->owned_idx = ckpt__calloc(n ? n : 1, sizeof(*s->owned_idx));
    if (!s->owned || !s->owned_idx)
        return ckpt__error_oom();
    for (size_t i = 0; i < s->nvars; i++) {
        const ckpt__mvar *v = &s->vars[i];
        ckpt__var *o;
        if (!v->owned)
            continue;
        o = &s->owned[s->nowned];
        o->v = v->user;
        o->v.shape = v->local;
        o->name = v->name;
        o->bytes = v->bytes;
        o->offset = offset;
        if (v->bytes > CKPT__MAX_STATE_BYTES - offset)
            return ckpt__error(CKPT_EINVAL,
                               "mpi saver %s: variable '%s': this rank's "
                               "variables exceed the largest state a saver "
                               "holds (%llu bytes); spread them over more "
                               "ranks or savers",
                               s->ds.dir, v->name,
                               (unsigned long long)CKPT__MAX_STATE_BYTES);
        offset += v->bytes;
        s->owned_idx[s->nowned++] = i;
    }
    s->image_bytes = offset;
    return 0;
}

static int put_u32(ckpt_buf *b, uint32_t v)
{
    return ckpt__buf_put(b, &v, sizeof(v));
}

static int put_bytes(ckpt_buf *b, const void *p, size_t n)
{
    int err = put_u32(b, (uint32_t)n);
    if (err == 0)
        err = ckpt__buf_put(b, p, n);
    return err;
}

/* The blob for rank 0: the temporary file's name in the directory and
 * one entry per record. */
static int describe(ckpt_mpi_saver *s, ckpt__save_op *op)
{
    ckpt_buf proto = CKPT_BUF_INIT;
    const char *name = ckpt__path_basename(op->temp_path.ptr);
    int err;
    ckpt__buf_clear(&op->blob);
    err = put_bytes(&op->blob, name, strlen(name));
    if (err == 0)
        err = put_u32(&op->blob, (uint32_t)s->nowned);
    for (size_t i = 0; err == 0 && i < s->nowned; i++) {
        const ckpt__mvar *v = &s->vars[s->owned_idx[i]];
        ckpt__bundle_entry e;
        memset(&e, 0, sizeof(e));
        e.dtype = v->dtype;
        e.shape = v->local;
        e.shard_id = s->rank;
        e.offset = (int64_t)s->owned[i].offset;
        e.size = (int64_t)v->bytes;
        e.crc32c = ckpt__crc32c_mask(s->image.crcs[i]);
        ckpt__buf_clear(&proto);
        err = ckpt__bundle_entry_encode(&proto, &e);
        if (err == 0)
            err = put_bytes(&op->blob, v->key.ptr, v->key.size);
        if (err == 0)
            err = put_bytes(&op->blob, proto.ptr, proto.size);
    }
    ckpt_buf_dispose(&proto);
    return err;
}

static int create_temp(ckpt_mpi_saver *s, ckpt__save_op *op, ckpt_file **f)
{
    ckpt_buf final_path = CKPT_BUF_INIT;
    /* As ckpt_saver writes its image: O_DIRECT for the aligned part unless
     * the options turn it off (the image is page-aligned). */
    int flags =
        s->opts.base.direct_io >= CKPT_DIRECT_IO_DEFAULT ? CKPT_OPEN_DIRECT : 0;
    int err =
        ckpt_bundle_data_path(&final_path, op->prefix.ptr, s->rank, s->size);
    if (err == 0)
        err = ckpt__fs_create_temp(s->fs, f, &op->temp_path, final_path.ptr,
                                   "tempstate", flags);
    if (err == 0)
        op->temp_exists = 1;
    ckpt_buf_dispose(&final_path);
    return err;
}

int ckpt__mpi_shard_write(ckpt_mpi_saver *s, ckpt__save_op *op)
{
    ckpt_file *f = NULL;
    int err = create_temp(s, op, &f);
    if (err == 0 && s->image_bytes > 0)
        err = ckpt__fs_write(s->fs, f, op->temp_path.ptr, s->image.ptr,
                             (size_t)s->image_bytes);
    if (err == 0)
        err = ckpt__fs_sync_close(s->fs, &f, op->temp_path.ptr);
    ckpt__fs_close_quiet(s->fs, f);
    if (err == 0)
        err = describe(s, op);
    if (err < 0 && op->temp_exists) {
        ckpt__fs_remove_quiet(s->fs, op->temp_path.ptr);
        op->temp_exists = 0;
    }
    op->mine.bytes = err == 0 ? s->image_bytes : 0;
    return err;
}
