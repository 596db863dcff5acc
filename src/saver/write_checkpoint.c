/* saver/write_checkpoint.c - writing one checkpoint's bundle, either from
 * a staging image (async saves: one large write, CRCs computed here on the
 * writer thread) or straight from the variables (sync saves: no staging
 * memory). The bundle writer commits crash-safely (temp, fsync, rename,
 * index last, directory fsync), calling the caller's hook right before the
 * renames. */
#include "format/bundle_writer_internal.h"
#include "saver_internal.h"
#include "util/crc32c.h"

int ckpt__write_from_image(const ckpt_fs *fs, const char *prefix,
                           const ckpt__var *vars, size_t n,
                           const ckpt__image *img, uint64_t image_bytes,
                           int direct_io, const ckpt__before_rename *hook,
                           uint64_t *bytes_out)
{
    ckpt_bundle_writer_options wo = CKPT_BUNDLE_WRITER_OPTIONS_INIT;
    ckpt_bundle_writer *w = NULL;
    int err;
    wo.fs = fs;
    wo.direct_io = direct_io ? CKPT_DIRECT_IO_ON : CKPT_DIRECT_IO_OFF;
    err = ckpt_bundle_writer_open(&w, prefix, &wo);
    if (err < 0)
        goto done;
    if (hook)
        ckpt__bundle_writer_before_rename(w, hook->fn, hook->payload);
    err = ckpt__bundle_writer_append_raw(w, img->ptr, (size_t)image_bytes);
    if (err < 0)
        goto done;
    for (size_t i = 0; i < n && err == 0; i++) {
        const ckpt__var *v = &vars[i];
        err = ckpt__bundle_writer_add_written(w, v->name, v->v.dtype,
                                              &v->v.shape, v->offset, v->bytes,
                                              ckpt__crc32c_mask(img->crcs[i]));
    }
    if (err < 0)
        goto done;
    err = ckpt_bundle_writer_finish(w);
    if (err == 0 && bytes_out)
        *bytes_out = ckpt__bundle_writer_bytes(w);
done:
    ckpt_bundle_writer_free(w);
    return err;
}

/* Add one variable, through a temporary buffer when it has a callback. */
static int add_var(ckpt_bundle_writer *w, const ckpt__var *v)
{
    void *tmp;
    int err;
    if (!v->v.read)
        return ckpt_bundle_writer_add(w, v->name, v->v.dtype, &v->v.shape,
                                      v->v.data, (size_t)v->bytes);
    tmp = ckpt__malloc((size_t)v->bytes);
    if (!tmp)
        return ckpt__error(CKPT_ENOMEM,
                           "variable '%s': out of memory for a buffer of its "
                           "%llu bytes (its read callback fills it)",
                           v->name, (unsigned long long)v->bytes);
    err = ckpt__var_read(&v->v, v->name, tmp, (size_t)v->bytes);
    if (err == 0)
        err = ckpt_bundle_writer_add(w, v->name, v->v.dtype, &v->v.shape, tmp,
                                     (size_t)v->bytes);
    ckpt__free(tmp);
    return err;
}

int ckpt__write_from_vars(const ckpt_fs *fs, const char *prefix,
                          const ckpt__var *vars, size_t n,
                          const ckpt__before_rename *hook, uint64_t *bytes_out)
{
    ckpt_bundle_writer_options wo = CKPT_BUNDLE_WRITER_OPTIONS_INIT;
    ckpt_bundle_writer *w = NULL;
    int err;
    wo.fs = fs;
    err = ckpt_bundle_writer_open(&w, prefix, &wo);
    if (err == 0 && hook)
        ckpt__bundle_writer_before_rename(w, hook->fn, hook->payload);
    for (size_t i = 0; i < n && err == 0; i++)
        err = add_var(w, &vars[i]);
    if (err == 0)
        err = ckpt_bundle_writer_finish(w);
    if (err == 0 && bytes_out)
        *bytes_out = ckpt__bundle_writer_bytes(w);
    ckpt_bundle_writer_free(w);
    return err;
}
