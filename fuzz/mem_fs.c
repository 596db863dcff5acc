/* fuzz/mem_fs.c - a tiny read-only ckpt_fs over byte ranges in memory, so
 * the bundle target reads its index and data files without touching the
 * disk. A file added with `prefix` answers every path that starts with its
 * path (the bundle target serves one data part for every shard name).
 * Writes, renames, removals and directory changes fail with CKPT_EACCES.
 * The sink is the opposite: a file system whose open_write gives a file
 * that appends to one buffer (the table target rebuilds into it). */
#include "fuzz.h"

#include "common/internal.h"

#include <string.h>

struct ckpt_file {
    const ckpt_fuzz_mem_file *mf; /* NULL: a sink file */
    ckpt_fuzz_mem_fs *owner;
    ckpt_fuzz_sink *sink;
};

static const ckpt_fuzz_mem_file *find(const ckpt_fuzz_mem_fs *m,
                                      const char *path)
{
    for (int i = 0; i < m->nfiles; i++) {
        const ckpt_fuzz_mem_file *f = &m->files[i];
        size_t n = strlen(f->path);
        if (f->prefix ? strncmp(path, f->path, n) == 0
                      : strcmp(path, f->path) == 0)
            return f;
    }
    return NULL;
}

static int mem_open_read(ckpt_file **out, const char *path, void *payload)
{
    ckpt_fuzz_mem_fs *m = payload;
    const ckpt_fuzz_mem_file *mf = find(m, path);
    ckpt_file *f;
    *out = NULL;
    if (!mf)
        return ckpt__error(CKPT_ENOTFOUND, "open %s: no such file", path);
    f = ckpt__malloc(sizeof(*f));
    if (!f)
        return ckpt__error_oom();
    f->mf = mf;
    f->owner = m;
    f->sink = NULL;
    m->open_files++;
    *out = f;
    return 0;
}

/* The bytes behind an open file (a sink file reads what was written). */
static void file_bytes(const ckpt_file *f, const uint8_t **data, size_t *size)
{
    if (f->sink) {
        *data = (const uint8_t *)f->sink->data.ptr;
        *size = f->sink->data.size;
    } else {
        *data = f->mf->data;
        *size = f->mf->size;
    }
}

static int mem_pread(ckpt_file *f, void *buf, size_t n, uint64_t offset,
                     size_t *nread, void *payload)
{
    const uint8_t *data;
    size_t size, left;
    (void)payload;
    file_bytes(f, &data, &size);
    *nread = 0;
    if (offset >= size)
        return 0;
    left = size - (size_t)offset;
    if (n > left)
        n = left;
    if (n > 0)
        memcpy(buf, data + offset, n);
    *nread = n;
    return 0;
}

static int mem_size(ckpt_file *f, uint64_t *out, void *payload)
{
    const uint8_t *data;
    size_t size;
    (void)payload;
    file_bytes(f, &data, &size);
    *out = size;
    return 0;
}

static int mem_close(ckpt_file *f, void *payload)
{
    (void)payload;
    if (f->owner)
        f->owner->open_files--;
    ckpt__free(f);
    return 0;
}

static int mem_stat(const char *path, uint64_t *out, double *mtime_out,
                    void *payload)
{
    const ckpt_fuzz_mem_file *mf = find(payload, path);
    if (!mf)
        return ckpt__error(CKPT_ENOTFOUND, "stat %s: no such file", path);
    if (out)
        *out = mf->size;
    if (mtime_out)
        *mtime_out = 0.0;
    return 0;
}

static int mem_list(const char *path, ckpt_dir_cb cb, void *cb_payload,
                    void *payload)
{
    const ckpt_fuzz_mem_fs *m = payload;
    size_t n = strlen(path);
    for (int i = 0; i < m->nfiles; i++) {
        const char *p = m->files[i].path;
        int rc;
        if (strncmp(p, path, n) != 0 || p[n] != '/' ||
            strchr(p + n + 1, '/') != NULL)
            continue;
        rc = cb(p + n + 1, cb_payload);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int mem_open_read_none(ckpt_file **out, const char *path, void *payload)
{
    (void)payload;
    *out = NULL;
    return ckpt__error(CKPT_ENOTFOUND, "open %s: no such file", path);
}

static int mem_stat_none(const char *path, uint64_t *out, double *mtime_out,
                         void *payload)
{
    (void)out;
    (void)mtime_out;
    (void)payload;
    return ckpt__error(CKPT_ENOTFOUND, "stat %s: no such file", path);
}

static int mem_list_none(const char *path, ckpt_dir_cb cb, void *cb_payload,
                         void *payload)
{
    (void)path;
    (void)cb;
    (void)cb_payload;
    (void)payload;
    return 0;
}

static int read_only(const char *what)
{
    return ckpt__error(CKPT_EACCES, "%s: the fuzz file system is read-only",
                       what);
}

static int mem_open_write(ckpt_file **out, const char *path, int flags,
                          void *payload)
{
    (void)flags;
    (void)payload;
    *out = NULL;
    return read_only(path);
}

static int mem_write(ckpt_file *f, const void *buf, size_t n, void *payload)
{
    (void)f;
    (void)buf;
    (void)n;
    (void)payload;
    return read_only("write");
}

static int mem_sync(ckpt_file *f, void *payload)
{
    (void)f;
    (void)payload;
    return read_only("sync");
}

static int mem_rename(const char *from, const char *to, void *payload)
{
    (void)to;
    (void)payload;
    return read_only(from);
}

static int mem_path_op(const char *path, void *payload)
{
    (void)payload;
    return read_only(path);
}

void ckpt_fuzz_mem_fs_init(ckpt_fuzz_mem_fs *m)
{
    memset(m, 0, sizeof(*m));
    m->fs.version = CKPT_FS_VERSION;
    m->fs.payload = m;
    m->fs.open_write = mem_open_write;
    m->fs.open_read = mem_open_read;
    m->fs.write = mem_write;
    m->fs.pread = mem_pread;
    m->fs.size = mem_size;
    m->fs.sync = mem_sync;
    m->fs.close = mem_close;
    m->fs.rename = mem_rename;
    m->fs.remove = mem_path_op;
    m->fs.mkdir = mem_path_op;
    m->fs.sync_dir = mem_path_op;
    m->fs.list = mem_list;
    m->fs.stat = mem_stat;
}

void ckpt_fuzz_mem_fs_add(ckpt_fuzz_mem_fs *m, const char *path,
                          const uint8_t *data, size_t size, int prefix)
{
    CKPT_FUZZ_CHECK(m->nfiles < CKPT_FUZZ_MEM_FILES);
    m->files[m->nfiles].path = path;
    m->files[m->nfiles].data = data;
    m->files[m->nfiles].size = size;
    m->files[m->nfiles].prefix = prefix;
    m->nfiles++;
}

/* ---- the write-only sink ------------------------------------------------ */

static int sink_open_write(ckpt_file **out, const char *path, int flags,
                           void *payload)
{
    ckpt_fuzz_sink *s = payload;
    ckpt_file *f;
    (void)path;
    (void)flags;
    f = ckpt__malloc(sizeof(*f));
    if (!f)
        return ckpt__error_oom();
    f->mf = NULL;
    f->owner = NULL;
    f->sink = s;
    ckpt__buf_clear(&s->data);
    *out = f;
    return 0;
}

static int sink_write(ckpt_file *f, const void *buf, size_t n, void *payload)
{
    (void)payload;
    return ckpt__buf_put(&f->sink->data, buf, n);
}

static int sink_sync(ckpt_file *f, void *payload)
{
    (void)f;
    (void)payload;
    return 0;
}

void ckpt_fuzz_sink_init(ckpt_fuzz_sink *s)
{
    memset(s, 0, sizeof(*s));
    s->fs.version = CKPT_FS_VERSION;
    s->fs.payload = s;
    s->fs.open_write = sink_open_write;
    s->fs.open_read = mem_open_read_none;
    s->fs.write = sink_write;
    s->fs.pread = mem_pread;
    s->fs.size = mem_size;
    s->fs.sync = sink_sync;
    s->fs.close = mem_close;
    s->fs.rename = mem_rename;
    s->fs.remove = mem_path_op;
    s->fs.mkdir = mem_path_op;
    s->fs.sync_dir = mem_path_op;
    s->fs.list = mem_list_none;
    s->fs.stat = mem_stat_none;
}

void ckpt_fuzz_sink_dispose(ckpt_fuzz_sink *s)
{
    ckpt_buf_dispose(&s->data);
}
