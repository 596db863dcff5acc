/* io/fs.c - what is built on the ckpt_fs method table: the default file
 * system, reading a whole file, the crash-safe whole-file write (temp file,
 * fsync, rename, fsync of the directory), and the wrappers and helpers of
 * fs_internal.h. */
#include "fs_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ckpt_fs_read_file reads by the size the file reports, then probes for
 * more in chunks that start at READ_PROBE_MIN and double up to
 * READ_PROBE_MAX; a file that grows by more than READ_GROWTH_MAX while it
 * is read (or never ends, like a device) is an error, not an endless read. */
#define READ_CHUNK_MAX ((size_t)1 << 30)
#define READ_PROBE_MIN ((size_t)4096)
#define READ_PROBE_MAX ((size_t)1 << 20)
#define READ_GROWTH_MAX ((uint64_t)64 << 20)

const ckpt_fs *ckpt_fs_or_default(const ckpt_fs *fs)
{
    return fs ? fs : ckpt_fs_posix();
}

int ckpt__fs_check(const ckpt_fs *fs, const char *what)
{
    const struct {
        const char *name;
        int set;
    } required[] = {
        {"open_write", fs && fs->open_write != NULL},
        {"open_read", fs && fs->open_read != NULL},
        {"write", fs && fs->write != NULL},
        {"pread", fs && fs->pread != NULL},
        {"size", fs && fs->size != NULL},
        {"sync", fs && fs->sync != NULL},
        {"close", fs && fs->close != NULL},
        {"rename", fs && fs->rename != NULL},
        {"remove", fs && fs->remove != NULL},
        {"mkdir", fs && fs->mkdir != NULL},
        {"sync_dir", fs && fs->sync_dir != NULL},
        {"list", fs && fs->list != NULL},
        {"stat", fs && fs->stat != NULL},
    };
    if (!fs)
        return 0;
    if (fs->version < 1 || fs->version > CKPT_FS_VERSION)
        return ckpt__error(CKPT_EVERSION,
                           "%s: ckpt_fs version %d is not one this library "
                           "knows (1 to %d; set it to CKPT_FS_VERSION)",
                           what, fs->version, CKPT_FS_VERSION);
    for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++)
        if (!required[i].set)
            return ckpt__error(CKPT_EINVAL,
                               "%s: ckpt_fs member '%s' is NULL (it is "
                               "required; ckpt_fs_posix() has one to "
                               "forward to)",
                               what, required[i].name);
    return 0;
}

/* ---- wrappers ----------------------------------------------------------- */

/* The one place that makes sure a failed file-system call leaves a message
 * naming the operation and its file (for a rename, both files):
 * - a method that failed but left another code as the last error did not
 *   set its own, so record a generic one naming `op`, `path` (when known)
 *   and, for a rename, its target `to`;
 * - a method that set its own message ("device 3 is gone") gets
 *   "<op> <path>[ to <to>]: " in front, unless the message names the file
 *   (and a rename's target) already, as the POSIX methods' own do, so the
 *   file is named once. The methods on an open file (write, pread, ...),
 *   which are not given its path, get the path the library opened it with. */
static int check_to(int rc, const char *op, const char *path, const char *to)
{
    const char *msg;
    if (rc > 0) /* e.g. a byte count, as POSIX write() returns: the call's
                   outcome is unknown, so it cannot count as done */
        return ckpt__error(CKPT_EIO,
                           "%s %s: the file system's method returned %d; a "
                           "ckpt_fs method returns 0 on success or a "
                           "negative ckpt_error_code",
                           op, path ? path : "(file)", rc);
    if (rc == 0)
        return rc;
    if (ckpt_error_last()->code == rc) { /* the method's own message */
        msg = ckpt_error_last()->message;
        if (!path || (ckpt__message_names(msg, path) &&
                      (!to || ckpt__message_names(msg, to))))
            return rc;
        if (to)
            return ckpt__error_prefix(rc, "%s %s to %s", op, path, to);
        return ckpt__error_prefix(rc, "%s %s", op, path);
    }
    if (path && to)
        return ckpt__error(rc, "%s %s to %s: %s", op, path, to,
                           ckpt_strerror(rc));
    if (path)
        return ckpt__error(rc, "%s %s: %s", op, path, ckpt_strerror(rc));
    return ckpt__error(rc, "%s: %s", op, ckpt_strerror(rc));
}

static int check(int rc, const char *op, const char *path)
{
    return check_to(rc, op, path, NULL);
}

int ckpt__fs_open_write(const ckpt_fs *fs, ckpt_file **out, const char *path,
                        int flags)
{
    return check(fs->open_write(out, path, flags, fs->payload), "open_write",
                 path);
}

int ckpt__fs_open_read(const ckpt_fs *fs, ckpt_file **out, const char *path)
{
    return check(fs->open_read(out, path, fs->payload), "open_read", path);
}

int ckpt__fs_open_read_part(const ckpt_fs *fs, ckpt_file **out,
                            const char *path)
{
    int err = ckpt__fs_open_read(fs, out, path);
    if (err == CKPT_EIO &&
        strstr(ckpt_error_last()->message, CKPT__NOT_REGULAR_FILE))
        return ckpt__error_recode(CKPT_ECORRUPT);
    return err;
}

int ckpt__fs_open_read_direct(const ckpt_fs *fs, ckpt_file **out,
                              const char *path)
{
    *out = NULL;
    if (fs->version < 2 || !fs->open_read_direct)
        return ckpt__error(CKPT_ENOTSUP,
                           "open_read_direct %s: not offered by this file "
                           "system",
                           path);
    return check(fs->open_read_direct(out, path, fs->payload),
                 "open_read_direct", path);
}

int ckpt__fs_device_id(const ckpt_fs *fs, const char *path, uint64_t *id)
{
    *id = 0;
    if (fs->version < 3 || !fs->device_id)
        return ckpt__error(CKPT_ENOTSUP,
                           "device_id %s: not offered by this file system",
                           path);
    return check(fs->device_id(path, id, fs->payload), "device_id", path);
}

int ckpt__fs_link(const ckpt_fs *fs, const char *from, const char *to)
{
    if (fs->version < 5 || !fs->link)
        return ckpt__error(CKPT_ENOTSUP,
                           "link %s: not offered by this file system", from);
    return check_to(fs->link(from, to, fs->payload), "link", from, to);
}

int ckpt__fs_write(const ckpt_fs *fs, ckpt_file *f, const char *path,
                   const void *buf, size_t n)
{
    return check(fs->write(f, buf, n, fs->payload), "write", path);
}

int ckpt__fs_pread(const ckpt_fs *fs, ckpt_file *f, const char *path, void *buf,
                   size_t n, uint64_t offset, size_t *nread)
{
    return check(fs->pread(f, buf, n, offset, nread, fs->payload), "pread",
                 path);
}

int ckpt__fs_preadv(const ckpt_fs *fs, ckpt_file *f, const char *path,
                    const ckpt_iovec *iov, int iovcnt, uint64_t offset,
                    size_t *nread)
{
    *nread = 0;
    if (fs->version >= 4 && fs->preadv)
        return check(fs->preadv(f, iov, iovcnt, offset, nread, fs->payload),
                     "preadv", path);
    for (int i = 0; i < iovcnt; i++) { /* one pread per buffer */
        size_t got = 0;
        int err = ckpt__fs_pread(fs, f, path, iov[i].base, iov[i].len,
                                 offset + *nread, &got);
        if (err < 0)
            return err;
        *nread += got;
        if (got < iov[i].len)
            break; /* end of file */
    }
    return 0;
}

int ckpt__fs_size(const ckpt_fs *fs, ckpt_file *f, const char *path,
                  uint64_t *out)
{
    return check(fs->size(f, out, fs->payload), "size", path);
}

int ckpt__fs_sync(const ckpt_fs *fs, ckpt_file *f, const char *path)
{
    return check(fs->sync(f, fs->payload), "sync", path);
}

int ckpt__fs_close(const ckpt_fs *fs, ckpt_file *f, const char *path)
{
    if (!f)
        return 0;
    return check(fs->close(f, fs->payload), "close", path);
}

int ckpt__fs_sync_close(const ckpt_fs *fs, ckpt_file **f, const char *path)
{
    ckpt_file *closing;
    int err = ckpt__fs_sync(fs, *f, path);
    if (err < 0)
        return err;
    closing = *f;
    *f = NULL;
    return ckpt__fs_close(fs, closing, path);
}

int ckpt__fs_rename(const ckpt_fs *fs, const char *from, const char *to)
{
    return check_to(fs->rename(from, to, fs->payload), "rename", from, to);
}

int ckpt__fs_remove(const ckpt_fs *fs, const char *path)
{
    return check(fs->remove(path, fs->payload), "remove", path);
}

int ckpt__fs_mkdir(const ckpt_fs *fs, const char *path)
{
    return check(fs->mkdir(path, fs->payload), "mkdir", path);
}

int ckpt__fs_sync_dir(const ckpt_fs *fs, const char *path)
{
    return check(fs->sync_dir(path, fs->payload), "sync_dir", path);
}

int ckpt__fs_list(const ckpt_fs *fs, const char *path, ckpt_dir_cb cb,
                  void *cb_payload)
{
    int rc = fs->list(path, cb, cb_payload, fs->payload);
    /* A positive value is the callback's own, which stopped the listing. */
    return rc > 0 ? rc : check(rc, "list", path);
}

int ckpt__fs_stat(const ckpt_fs *fs, const char *path, uint64_t *size,
                  double *mtime)
{
    return check(fs->stat(path, size, mtime, fs->payload), "stat", path);
}

void ckpt__fs_close_quiet(const ckpt_fs *fs, ckpt_file *f)
{
    ckpt__saved_error saved;
    if (!f)
        return;
    ckpt__error_save(&saved);
    ckpt__fs_close(fs, f, NULL);
    ckpt__error_restore(&saved);
}

void ckpt__fs_remove_quiet(const ckpt_fs *fs, const char *path)
{
    ckpt__saved_error saved;
    ckpt__error_save(&saved);
    ckpt__fs_remove(fs, path);
    ckpt__error_restore(&saved);
}

int ckpt__fs_exists(const ckpt_fs *fs, const char *path)
{
    ckpt__saved_error saved;
    int rc;
    ckpt__error_save(&saved);
    rc = ckpt__fs_stat(fs, path, NULL, NULL);
    if (rc == CKPT_ENOTFOUND) {
        ckpt__error_restore(&saved);
        return 0;
    }
    return rc < 0 ? rc : 1;
}

int ckpt__fs_entry_exists(const ckpt_fs *fs, const char *path)
{
    struct stat st;
    int rc = ckpt__fs_exists(fs, path);
    if (rc != 0 || fs->stat != ckpt_fs_posix()->stat)
        return rc;
    return lstat(path, &st) == 0;
}

/* ---- temporary names ---------------------------------------------------- */

/* Fill `p` with `n` unpredictable bytes: getrandom(), else /dev/urandom,
 * else (neither available) a mix of the clock, the process id and a stack
 * address; uniqueness is then still enforced by CKPT_OPEN_EXCL. */
static void random_bytes(uint8_t *p, size_t n)
{
    size_t done = 0;
    int fd;
    while (done < n) {
        ssize_t got = getrandom(p + done, n - done, GRND_NONBLOCK);
        if (got <= 0)
            break;
        done += (size_t)got;
    }
    if (done == n)
        return;
    fd = ckpt__posix_fd_off_stdio(open("/dev/urandom", O_RDONLY | O_CLOEXEC));
    if (fd >= 0) {
        while (done < n) {
            ssize_t got = read(fd, p + done, n - done);
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0)
                break;
            done += (size_t)got;
        }
        close(fd);
    }
    if (done < n) {
        struct timespec ts;
        uint64_t x;
        clock_gettime(CLOCK_REALTIME, &ts);
        x = (uint64_t)ts.tv_sec * 1000000007u + (uint64_t)ts.tv_nsec;
        x ^= (uint64_t)getpid() << 32;
        x ^= (uint64_t)(uintptr_t)&ts;
        for (; done < n; done++) {
            /* splitmix64 step */
            uint64_t z;
            x += 0x9e3779b97f4a7c15u;
            z = x;
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
            p[done] = (uint8_t)(z ^ (z >> 31));
        }
    }
}

int ckpt__fs_temp_name(ckpt_buf *out, const char *final_path, const char *tag)
{
    static const char hex[] = "0123456789abcdef";
    uint8_t rnd[8];
    char digits[2 * sizeof(rnd) + 1];
    random_bytes(rnd, sizeof(rnd));
    for (size_t i = 0; i < sizeof(rnd); i++) {
        digits[2 * i] = hex[rnd[i] >> 4];
        digits[2 * i + 1] = hex[rnd[i] & 15];
    }
    digits[2 * sizeof(rnd)] = '\0';
    ckpt__buf_clear(out);
    return ckpt__buf_printf(out, "%s.%s%s", final_path, tag ? tag : "tmp",
                            digits);
}

int ckpt__fs_create_temp(const ckpt_fs *fs, ckpt_file **out, ckpt_buf *tmp,
                         const char *final_path, const char *tag, int flags)
{
    int err = 0;
    *out = NULL;
    for (int i = 0; i < CKPT__TEMP_TRIES; i++) {
        /* The last refusal's message, not each one's prefixed to the
         * next (a method failing without a message of its own keeps the
         * previous one with the same code). */
        if (i > 0)
            ckpt_error_clear();
        err = ckpt__fs_temp_name(tmp, final_path, tag);
        if (err < 0)
            return err;
        err = ckpt__fs_open_write(fs, out, tmp->ptr, CKPT_OPEN_EXCL | flags);
        if (err != CKPT_EEXISTS)
            break;
    }
    if (err < 0)
        *out = NULL;
    return err;
}

/* ---- whole files -------------------------------------------------------- */

/* Read from `f` into `out` until end of file: first the `size` bytes the
 * file reported, then, while a small peek past them finds more, chunks of
 * growing size. Peeking into a local buffer keeps the common case (the
 * size was right) from growing `out` beyond the file. */
static int too_big(const char *path, uint64_t size, uint64_t max)
{
    return ckpt__error(CKPT_ECORRUPT,
                       "%s: %llu bytes or more, larger than the %llu bytes "
                       "this file can need",
                       path, (unsigned long long)size, (unsigned long long)max);
}

static int read_to_end(ckpt_buf *out, const ckpt_fs *fs, ckpt_file *f,
                       const char *path, uint64_t size, uint64_t max)
{
    uint8_t peek[512];
    uint64_t reported = size;
    uint64_t off = 0;
    size_t probe = READ_PROBE_MIN;
    size_t got = 0;
    int err;
    for (;;) {
        while (off < size) {
            uint64_t left = size - off;
            size_t want = left < READ_CHUNK_MAX ? (size_t)left : READ_CHUNK_MAX;
            err = ckpt__buf_grow(out, want);
            if (err < 0)
                return err;
            err = ckpt__fs_pread(fs, f, path, out->ptr + out->size, want, off,
                                 &got);
            if (err < 0)
                return err;
            if (got > want)
                return ckpt__error(CKPT_EIO, "pread %s: read %zu of %zu bytes",
                                   path, got, want);
            out->size += got;
            out->ptr[out->size] = '\0';
            off += got;
            if (got < want)
                return 0; /* shorter than reported */
        }
        err = ckpt__fs_pread(fs, f, path, peek, sizeof(peek), off, &got);
        if (err < 0)
            return err;
        if (got == 0)
            return 0; /* the usual end */
        if (got > sizeof(peek))
            return ckpt__error(CKPT_EIO, "pread %s: read %zu of %zu bytes",
                               path, got, sizeof(peek));
        if (off + got > max)
            return too_big(path, off + got, max);
        if (off + got - reported > READ_GROWTH_MAX)
            return ckpt__error(CKPT_EIO,
                               "%s: file grew by more than %llu bytes while "
                               "being read",
                               path, (unsigned long long)READ_GROWTH_MAX);
        err = ckpt__buf_put(out, peek, got);
        if (err < 0)
            return err;
        off += got;
        if (got < sizeof(peek))
            return 0;
        /* it grew: read on in chunks of growing size */
        size = off + probe;
        if (probe < READ_PROBE_MAX)
            probe *= 2;
    }
}

int ckpt_fs_read_file(ckpt_buf *out, const ckpt_fs *fs, const char *path)
{
    CKPT__CHECK_ARG(out);
    CKPT__CHECK_ARG(path);
    if (ckpt__fs_check(fs, "ckpt_fs_read_file: fs") < 0)
        return ckpt_error_last()->code;
    return ckpt__fs_read_file_max(out, fs, path, UINT64_MAX);
}

int ckpt__fs_read_file_max(ckpt_buf *out, const ckpt_fs *fs, const char *path,
                           uint64_t max)
{
    ckpt_file *f = NULL;
    ckpt_file *closing;
    size_t start;
    uint64_t size = 0;
    int err;
    CKPT__CHECK_ARG(out);
    CKPT__CHECK_ARG(path);
    fs = ckpt_fs_or_default(fs);
    start = out->size;
    err = ckpt__fs_open_read(fs, &f, path);
    if (err < 0)
        goto done;
    err = ckpt__fs_size(fs, f, path, &size);
    if (err < 0)
        goto done;
    if (size > max) {
        err = too_big(path, size, max);
        goto done;
    }
    if (size >= (uint64_t)(SIZE_MAX - out->size - 1)) {
        err = ckpt__error(CKPT_ENOMEM, "%s: %llu bytes do not fit in memory",
                          path, (unsigned long long)size);
        goto done;
    }
    err = read_to_end(out, fs, f, path, size, max);
    if (err < 0)
        goto done;
    closing = f;
    f = NULL;
    err = ckpt__fs_close(fs, closing, path);
done:
    ckpt__fs_close_quiet(fs, f);
    if (err < 0 && out->ptr) {
        out->size = start;
        out->ptr[start] = '\0';
    }
    return err;
}

int ckpt_fs_write_file_atomic(const ckpt_fs *fs, const char *path,
                              const void *data, size_t n)
{
    CKPT__CHECK_ARG(path);
    if (n > 0)
        CKPT__CHECK_ARG(data);
    if (ckpt__fs_check(fs, "ckpt_fs_write_file_atomic: fs") < 0)
        return ckpt_error_last()->code;
    return ckpt__fs_write_file_atomic(fs, path, data, n, NULL);
}

int ckpt__fs_write_file_atomic(const ckpt_fs *fs, const char *path,
                               const void *data, size_t n, int *replaced)
{
    ckpt_buf tmp = CKPT_BUF_INIT;
    ckpt_buf dir = CKPT_BUF_INIT;
    ckpt_file *f = NULL;
    int temp_exists = 0;
    int err;
    if (replaced)
        *replaced = 0;
    if (!*path)
        return ckpt__error(CKPT_EINVAL, "write_file_atomic: empty path");
    fs = ckpt_fs_or_default(fs);
    err = ckpt__path_dirname(&dir, path);
    if (err < 0)
        goto done;
    err = ckpt__fs_create_temp(fs, &f, &tmp, path, "tmp", 0);
    if (err < 0)
        goto done;
    temp_exists = 1;
    err = ckpt__fs_write(fs, f, tmp.ptr, data, n);
    if (err < 0)
        goto done;
    err = ckpt__fs_sync_close(fs, &f, tmp.ptr);
    if (err < 0)
        goto done;
    err = ckpt__fs_rename(fs, tmp.ptr, path);
    if (err < 0)
        goto done;
    temp_exists = 0;
    if (replaced)
        *replaced = 1;
    /* The new content is in place; a failure here means it may not survive
     * a power cut, which the caller must hear about. The message names the
     * directory, so put the file in front. */
    err = ckpt__fs_sync_dir(fs, dir.ptr);
    if (err < 0)
        ckpt__error_prefix(err, "%s", path);
done:
    ckpt__fs_close_quiet(fs, f);
    if (temp_exists)
        ckpt__fs_remove_quiet(fs, tmp.ptr);
    ckpt_buf_dispose(&tmp);
    ckpt_buf_dispose(&dir);
    return err;
}
