/* tests/support/fs_forward.c - the forwarding file system of
 * fs_forward.h: one method per ckpt_fs member, each passing its call to
 * the base unchanged. */
#include "support/fs_forward.h"

#include <string.h>

const ckpt_fs *ckpt_fs_forward_base(const void *payload)
{
    return ((const ckpt_fs_forward *)payload)->base;
}

#define BASE(p) ckpt_fs_forward_base(p)

static int fwd_open_write(ckpt_file **out, const char *path, int flags, void *p)
{
    return BASE(p)->open_write(out, path, flags, BASE(p)->payload);
}

static int fwd_open_read(ckpt_file **out, const char *path, void *p)
{
    return BASE(p)->open_read(out, path, BASE(p)->payload);
}

static int fwd_write(ckpt_file *f, const void *buf, size_t n, void *p)
{
    return BASE(p)->write(f, buf, n, BASE(p)->payload);
}

static int fwd_pread(ckpt_file *f, void *buf, size_t n, uint64_t offset,
                     size_t *nread, void *p)
{
    return BASE(p)->pread(f, buf, n, offset, nread, BASE(p)->payload);
}

static int fwd_size(ckpt_file *f, uint64_t *out, void *p)
{
    return BASE(p)->size(f, out, BASE(p)->payload);
}

static int fwd_sync(ckpt_file *f, void *p)
{
    return BASE(p)->sync(f, BASE(p)->payload);
}

static int fwd_close(ckpt_file *f, void *p)
{
    return BASE(p)->close(f, BASE(p)->payload);
}

static int fwd_rename(const char *from, const char *to, void *p)
{
    return BASE(p)->rename(from, to, BASE(p)->payload);
}

static int fwd_remove(const char *path, void *p)
{
    return BASE(p)->remove(path, BASE(p)->payload);
}

static int fwd_mkdir(const char *path, void *p)
{
    return BASE(p)->mkdir(path, BASE(p)->payload);
}

static int fwd_sync_dir(const char *path, void *p)
{
    return BASE(p)->sync_dir(path, BASE(p)->payload);
}

static int fwd_list(const char *path, ckpt_dir_cb cb, void *cb_payload, void *p)
{
    return BASE(p)->list(path, cb, cb_payload, BASE(p)->payload);
}

static int fwd_stat(const char *path, uint64_t *out, double *mtime_out, void *p)
{
    return BASE(p)->stat(path, out, mtime_out, BASE(p)->payload);
}

static int fwd_open_read_direct(ckpt_file **out, const char *path, void *p)
{
    return BASE(p)->open_read_direct(out, path, BASE(p)->payload);
}

static int fwd_device_id(const char *path, uint64_t *id, void *p)
{
    return BASE(p)->device_id(path, id, BASE(p)->payload);
}

static int fwd_link(const char *from, const char *to, void *p)
{
    return BASE(p)->link(from, to, BASE(p)->payload);
}

void ckpt_fs_forward_init(ckpt_fs_forward *w, const ckpt_fs *base)
{
    memset(w, 0, sizeof(*w));
    w->base = ckpt_fs_or_default(base);
    w->fs.version = CKPT_FS_VERSION;
    w->fs.payload = w;
    w->fs.open_write = fwd_open_write;
    w->fs.open_read = fwd_open_read;
    w->fs.write = fwd_write;
    w->fs.pread = fwd_pread;
    w->fs.size = fwd_size;
    w->fs.sync = fwd_sync;
    w->fs.close = fwd_close;
    w->fs.rename = fwd_rename;
    w->fs.remove = fwd_remove;
    w->fs.mkdir = fwd_mkdir;
    w->fs.sync_dir = fwd_sync_dir;
    w->fs.list = fwd_list;
    w->fs.stat = fwd_stat;
    if (w->base->version >= 2 && w->base->open_read_direct)
        w->fs.open_read_direct = fwd_open_read_direct;
    if (w->base->version >= 3 && w->base->device_id)
        w->fs.device_id = fwd_device_id;
    if (w->base->version >= 5 && w->base->link)
        w->fs.link = fwd_link;
}
