/* tests/io/aligned_fs.c - the aligned test file system (aligned_fs.h):
 * every file it opens is wrapped so that preads can tell a direct file
 * from an ordinary one; the methods on paths are forwarded to POSIX. */
#include "aligned_fs.h"

#include "common/internal.h"

#include <stdlib.h>
#include <string.h>

#define INNER ckpt_fs_posix()

typedef struct afile {
    ckpt_file *inner;
    int direct;
    char path[];
} afile;

static afile *afile_of(ckpt_file *f)
{
    return (afile *)(void *)f;
}

static int wrap(aligned_fs *a, ckpt_file **out, ckpt_file *inner,
                const char *path, int direct)
{
    size_t n = strlen(path);
    afile *af = malloc(sizeof(*af) + n + 1);
    if (!af) {
        INNER->close(inner, INNER->payload);
        return ckpt__error(CKPT_ENOMEM, "aligned fs: out of memory");
    }
    af->inner = inner;
    af->direct = direct;
    memcpy(af->path, path, n + 1);
    atomic_fetch_add(&a->open_files, 1);
    *out = (ckpt_file *)(void *)af;
    return 0;
}

static int a_open_write(ckpt_file **out, const char *path, int flags, void *p)
{
    ckpt_file *inner = NULL;
    int err = INNER->open_write(&inner, path, flags, INNER->payload);
    *out = NULL;
    if (err < 0)
        return err;
    return wrap(p, out, inner, path, 0);
}

static int a_open_read(ckpt_file **out, const char *path, void *p)
{
    ckpt_file *inner = NULL;
    int err = INNER->open_read(&inner, path, INNER->payload);
    *out = NULL;
    if (err < 0)
        return err;
    return wrap(p, out, inner, path, 0);
}

static int a_open_read_direct(ckpt_file **out, const char *path, void *p)
{
    aligned_fs *a = p;
    ckpt_file *inner = NULL;
    int err;
    *out = NULL;
    if (atomic_load(&a->decline))
        return ckpt__error(CKPT_ENOTSUP,
                           "aligned fs: declining direct reads of %s", path);
    err = INNER->open_read(&inner, path, INNER->payload);
    if (err < 0)
        return err;
    err = wrap(a, out, inner, path, 1);
    if (err == 0)
        atomic_fetch_add(&a->direct_opens, 1);
    return err;
}

static int a_write(ckpt_file *f, const void *buf, size_t n, void *p)
{
    (void)p;
    return INNER->write(afile_of(f)->inner, buf, n, INNER->payload);
}

static int a_pread(ckpt_file *f, void *buf, size_t n, uint64_t off,
                   size_t *nread, void *p)
{
    aligned_fs *a = p;
    afile *af = afile_of(f);
    unsigned long long k;
    int err;
    *nread = 0;
    if (!af->direct) {
        atomic_fetch_add(&a->other_preads, 1);
        err = INNER->pread(af->inner, buf, n, off, nread, INNER->payload);
        atomic_fetch_add(&a->other_bytes, *nread);
        return err;
    }
    k = atomic_fetch_add(&a->direct_preads, 1) + 1;
    if ((uintptr_t)buf % CKPT_DIRECT_ALIGN != 0 ||
        off % CKPT_DIRECT_ALIGN != 0 || n % CKPT_DIRECT_ALIGN != 0) {
        atomic_fetch_add(&a->violations, 1);
        return ckpt__error(CKPT_EINVAL,
                           "aligned fs: unaligned direct pread of %s (buffer "
                           "%p, offset %llu, %zu bytes)",
                           af->path, buf, (unsigned long long)off, n);
    }
    if (k == atomic_load(&a->fail_at)) {
        a->failed_thread = pthread_self();
        atomic_fetch_add(&a->injected, 1);
        if (a->fail_text && !*a->fail_text)
            return CKPT_EIO; /* no message of its own */
        if (a->fail_text)
            return ckpt_error_set(CKPT_EIO, "%s", a->fail_text);
        return ckpt__error(CKPT_EIO,
                           "aligned fs: injected EIO at direct pread %llu of "
                           "%s",
                           k, af->path);
    }
    err = INNER->pread(af->inner, buf, n, off, nread, INNER->payload);
    if (err == 0)
        atomic_fetch_add(&a->direct_bytes, *nread);
    return err;
}

static int a_size(ckpt_file *f, uint64_t *out, void *p)
{
    (void)p;
    return INNER->size(afile_of(f)->inner, out, INNER->payload);
}

static int a_sync(ckpt_file *f, void *p)
{
    (void)p;
    return INNER->sync(afile_of(f)->inner, INNER->payload);
}

static int a_close(ckpt_file *f, void *p)
{
    aligned_fs *a = p;
    afile *af = afile_of(f);
    int err = INNER->close(af->inner, INNER->payload);
    atomic_fetch_sub(&a->open_files, 1);
    free(af);
    return err;
}

/* Only files opened by open_read are read with preadv (the direct stream
 * reads aligned pieces with pread): one on a direct file is a violation. */
static int a_preadv(ckpt_file *f, const ckpt_iovec *iov, int iovcnt,
                    uint64_t off, size_t *nread, void *p)
{
    aligned_fs *a = p;
    afile *af = afile_of(f);
    int err;
    *nread = 0;
    if (af->direct) {
        atomic_fetch_add(&a->violations, 1);
        return ckpt__error(CKPT_EINVAL, "aligned fs: preadv of direct file %s",
                           af->path);
    }
    atomic_fetch_add(&a->other_preadvs, 1);
    err = INNER->preadv(af->inner, iov, iovcnt, off, nread, INNER->payload);
    atomic_fetch_add(&a->other_bytes, *nread);
    return err;
}

void aligned_fs_reset(aligned_fs *a)
{
    atomic_store(&a->direct_opens, 0);
    atomic_store(&a->direct_preads, 0);
    atomic_store(&a->direct_bytes, 0);
    atomic_store(&a->other_preads, 0);
    atomic_store(&a->other_preadvs, 0);
    atomic_store(&a->other_bytes, 0);
    atomic_store(&a->violations, 0);
    atomic_store(&a->injected, 0);
}

void aligned_fs_init(aligned_fs *a, int version)
{
    ckpt_fs_forward_init(&a->fwd, INNER);
    a->fwd.fs.version = version;
    a->fwd.fs.open_write = a_open_write;
    a->fwd.fs.open_read = a_open_read;
    a->fwd.fs.write = a_write;
    a->fwd.fs.pread = a_pread;
    a->fwd.fs.size = a_size;
    a->fwd.fs.sync = a_sync;
    a->fwd.fs.close = a_close;
    a->fwd.fs.open_read_direct = a_open_read_direct;
    a->fwd.fs.preadv = a_preadv;
    /* its "direct" files go through the page cache, so POSIX's device says
     * nothing about them: no device, every read probes (a test that wants
     * verdicts remembered sets its own device_id) */
    a->fwd.fs.device_id = NULL;
    atomic_init(&a->direct_opens, 0);
    atomic_init(&a->direct_preads, 0);
    atomic_init(&a->direct_bytes, 0);
    atomic_init(&a->other_preads, 0);
    atomic_init(&a->other_preadvs, 0);
    atomic_init(&a->other_bytes, 0);
    atomic_init(&a->violations, 0);
    atomic_init(&a->open_files, 0);
    atomic_init(&a->fail_at, 0);
    atomic_init(&a->injected, 0);
    atomic_init(&a->decline, 0);
    a->fail_text = NULL;
    memset(&a->failed_thread, 0, sizeof(a->failed_thread));
}

void aligned_fs_fail_nth(aligned_fs *a, uint64_t n)
{
    atomic_store(&a->direct_preads, 0);
    atomic_store(&a->fail_at, n);
}
