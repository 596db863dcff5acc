/* io/fs_posix.c - the POSIX implementation of ckpt_fs (ckpt_fs_posix()):
 * plain file descriptors opened with O_CLOEXEC, writes and reads that loop
 * over short transfers and EINTR, fdatasync for files and fsync of an
 * O_DIRECTORY descriptor for directories. Every failure records
 * "<op> <path>: <strerror>" as the thread's last error, with the errno
 * mapped by ckpt__error_errno (ENOSPC/EDQUOT -> CKPT_ENOSPC and so on; a
 * stat's ENAMETOOLONG and ELOOP -> CKPT_ENOTFOUND: no file has that name).
 *
 * CKPT_OPEN_DIRECT: O_DIRECT needs buffers, file offsets and sizes aligned
 * to the device's block size, so a write on such a file sends its largest
 * aligned part (page-aligned buffer, page-aligned file offset) with O_DIRECT
 * switched on by fcntl, and the unaligned rest through the page cache. A
 * file system that refuses O_DIRECT (EINVAL) silently falls back to
 * buffered writes for the rest of the file. This is how a saver's page-
 * aligned staging image reaches the disk without a second copy through the
 * page cache.
 *
 * open_read_direct opens with O_DIRECT from the start, and declines
 * (CKPT_ENOTSUP) a file that is mostly in the page cache already, where a
 * buffered read is a memory copy and the disk would be slower; reads on such a
 * file come aligned (CKPT_DIRECT_ALIGN) from the caller, and a short read (end
 * of file) ends the request instead of asking again at an unaligned
 * offset.
 *
 * device_id is the file's st_dev: a verdict "O_DIRECT or the page cache"
 * measured on one file of a device serves its other files for a while
 * (io/read_verdicts.h).
 *
 * preadv is preadv(2), looping like pread: the kernel sizes its read-ahead
 * by a request's length, so one request of 32 MiB over several records
 * keeps the disk as busy as one read() of the file where the device's
 * read_ahead_kb is small (128 KiB on most systems); ckpt__posix_read_ahead_kb
 * tells the read path what it is.
 *
 * A write past the process's file-size limit (RLIMIT_FSIZE, `ulimit -f`)
 * fails with EFBIG ("File too large", CKPT_EIO) instead of killing the
 * process: the kernel also sends SIGXFSZ, whose default action ends the
 * process before write() returns: write() here runs with SIGXFSZ blocked
 * on the calling thread only, a SIGXFSZ it raised taken back
 * (ckpt__write_no_signal, common/quiet_write.c); the process's signal
 * dispositions are never changed.
 *
 * No descriptor it opens stays on 0, 1 or 2 (ckpt__posix_fd_off_stdio):
 * in a process started with its standard descriptors closed, a file of
 * ours there would receive the process's printf and log lines. */
#include "ckpt/io.h"
#include "common/internal.h"
#include "fs_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

/* Alignment O_DIRECT transfers use (a multiple of every common logical
 * block size). */
#define DIRECT_ALIGN ((size_t)4096)

/* What a ckpt_file opened by this file system points to. */
struct posix_file {
    int fd;
    int flags; /* ckpt_open_flags given at open (0 for reading) */
    char *path;
    uint64_t written;  /* bytes appended so far (the file offset) */
    int direct_failed; /* O_DIRECT was refused: stay buffered */
    int read_direct;   /* opened by open_read_direct */
};

static struct posix_file *posix_file_of(ckpt_file *f)
{
    return (struct posix_file *)(void *)f;
}

static int posix_file_new(ckpt_file **out, int fd, int flags, const char *path)
{
    struct posix_file *pf = ckpt__malloc(sizeof(*pf));
    if (!pf)
        return ckpt__error_oom();
    pf->path = ckpt__strdup(path);
    if (!pf->path) {
        ckpt__free(pf);
        return ckpt__error_oom();
    }
    pf->fd = fd;
    pf->flags = flags;
    pf->written = 0;
    pf->direct_failed = 0;
    pf->read_direct = 0;
    *out = (ckpt_file *)(void *)pf;
    return 0;
}

static void posix_file_free(struct posix_file *pf)
{
    ckpt__free(pf->path);
    ckpt__free(pf);
}

int ckpt__posix_fd_off_stdio(int fd)
{
    int high, saved;
    if (fd < 0 || fd > STDERR_FILENO)
        return fd;
    high = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
    saved = errno;
    close(fd);
    errno = saved;
    return high;
}

static int posix_open_write(ckpt_file **out, const char *path, int flags,
                            void *payload)
{
    int oflags = O_WRONLY | O_CREAT | O_CLOEXEC;
    int fd;
    int err;
    (void)payload;
    *out = NULL;
    if (flags & CKPT_OPEN_EXCL)
        oflags |= O_EXCL | O_NOFOLLOW;
    else if (flags & CKPT_OPEN_TRUNC)
        oflags |= O_TRUNC;
    do {
        fd = open(path, oflags, 0666);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return ckpt__error_errno(errno, "open_write %s", path);
    fd = ckpt__posix_fd_off_stdio(fd);
    if (fd < 0) {
        int saved = errno;
        if (flags & CKPT_OPEN_EXCL)
            unlink(path); /* we created it: leave nothing behind */
        return ckpt__error_errno(saved, "open_write %s", path);
    }
    err = posix_file_new(out, fd, flags, path);
    if (err < 0) {
        close(fd);
        if (flags & CKPT_OPEN_EXCL)
            unlink(path); /* we created it: leave nothing behind */
    }
    return err;
}

/* What a file of mode `mode` is, for the message refusing it. */
static const char *file_kind(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    return "not a regular file";
}

/* Open `path` for reading (`extra` flags added) without blocking on a FIFO
 * or device, and keep the descriptor only when it is a regular file: the
 * readers trust the size fstat reports and must not wait forever for a
 * writer. O_NONBLOCK is switched off again; it means nothing for a regular
 * file. Returns the descriptor or a negative ckpt_error_code. */
static int open_regular(const char *path, int extra, const char *op)
{
    struct stat st;
    int fd;
    int fl;
    do {
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | extra);
    } while (fd < 0 && errno == EINTR);
    fd = ckpt__posix_fd_off_stdio(fd);
    if (fd < 0) {
        if (errno == EINVAL && (extra & O_DIRECT))
            return ckpt__error(CKPT_ENOTSUP,
                               "%s %s: the file system does not support "
                               "O_DIRECT",
                               op, path);
        if (errno == ELOOP) /* refused as a FIFO is, not a failing disk */
            return ckpt__error(
                CKPT_EIO,
                "%s %s: symbolic links in a loop, " CKPT__NOT_REGULAR_FILE, op,
                path);
        return ckpt__error_errno(errno, "%s %s", op, path);
    }
    if (fstat(fd, &st) != 0) {
        int saved = errno;
        close(fd);
        return ckpt__error_errno(saved, "%s %s", op, path);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return ckpt__error(CKPT_EIO, "%s %s: %s, " CKPT__NOT_REGULAR_FILE, op,
                           path, file_kind(st.st_mode));
    }
    fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int saved = errno;
        close(fd);
        return ckpt__error_errno(saved, "%s %s", op, path);
    }
    return fd;
}

static int posix_open_read(ckpt_file **out, const char *path, void *payload)
{
    int fd;
    int err;
    (void)payload;
    *out = NULL;
    fd = open_regular(path, 0, "open_read");
    if (fd < 0)
        return fd;
    err = posix_file_new(out, fd, 0, path);
    if (err < 0)
        close(fd);
    return err;
}

/* Whether most of the file is in the page cache already (then reading
 * through it is faster than going to the disk): mincore() on a mapping,
 * sampled at up to 16 pages spread over the file. Errors count as "no". */
static int mostly_cached(int fd)
{
    struct stat st;
    long page = sysconf(_SC_PAGESIZE);
    size_t size, samples, resident = 0;
    void *map;
    if (page <= 0 || fstat(fd, &st) != 0 || st.st_size <= 0)
        return 0;
    size = (size_t)st.st_size;
    /* A read-only mapping of the file to ask mincore() about it: this is
     * the POSIX file system itself, below the ckpt_fs seam, and the
     * mapping holds no data of ours, so it is not the allocator's. */
    map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED)
        return 0;
    samples = size / (size_t)page < 16 ? size / (size_t)page + 1 : 16;
    for (size_t i = 0; i < samples; i++) {
        size_t off = size / samples * i / (size_t)page * (size_t)page;
        unsigned char vec = 0;
        if (mincore((char *)map + off, 1, &vec) == 0 && (vec & 1))
            resident++;
    }
    munmap(map, size);
    return resident * 2 > samples;
}

static int posix_open_read_direct(ckpt_file **out, const char *path,
                                  void *payload)
{
    int fd;
    int err;
    (void)payload;
    *out = NULL;
    fd = open_regular(path, O_DIRECT, "open_read_direct");
    if (fd < 0)
        return fd;
    if (mostly_cached(fd)) {
        close(fd);
        return ckpt__error(CKPT_ENOTSUP,
                           "open_read_direct %s: the file is in the page "
                           "cache; reading through it is faster",
                           path);
    }
    err = posix_file_new(out, fd, 0, path);
    if (err < 0) {
        close(fd);
        return err;
    }
    posix_file_of(*out)->read_direct = 1;
    return 0;
}

/* write() all of `n` bytes (ckpt__write_all_no_signal), counting them in
 * pf->written. Returns 0, a negative errno, or 1 when write() made no
 * progress without an errno. */
static int write_all(struct posix_file *pf, const char *p, size_t n)
{
    size_t done;
    int rc = ckpt__write_all_no_signal(pf->fd, p, n, SIGXFSZ, EFBIG, &done);
    pf->written += (uint64_t)done;
    return rc;
}

static int set_direct(struct posix_file *pf, int on)
{
    int fl = fcntl(pf->fd, F_GETFL);
    if (fl < 0)
        return -1;
    fl = on ? (fl | O_DIRECT) : (fl & ~O_DIRECT);
    return fcntl(pf->fd, F_SETFL, fl);
}

/* The devices (st_dev) on which O_DIRECT writes were refused, so that a
 * caller timing "direct" writes can learn they went through the page
 * cache (ckpt__posix_direct_refused): a few slots, filled once each. */
#define REFUSED_SLOTS 8
static _Atomic uint64_t refused_dev[REFUSED_SLOTS]; /* st_dev + 1; 0: free */

static void note_direct_refused(const struct posix_file *pf)
{
    struct stat st;
    uint64_t key;
    if (fstat(pf->fd, &st) != 0)
        return;
    key = (uint64_t)st.st_dev + 1;
    for (int i = 0; i < REFUSED_SLOTS; i++) {
        uint64_t none = 0;
        if (atomic_load(&refused_dev[i]) == key ||
            atomic_compare_exchange_strong(&refused_dev[i], &none, key))
            return;
    }
}

int ckpt__posix_direct_refused(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return 0;
    for (int i = 0; i < REFUSED_SLOTS; i++)
        if (atomic_load(&refused_dev[i]) == (uint64_t)st.st_dev + 1)
            return 1;
    return 0;
}

/* Send the largest aligned prefix of the write with O_DIRECT; returns the
 * bytes it wrote (possibly 0 when direct I/O is not possible here) or a
 * negative errno. */
static ssize_t write_direct_prefix(struct posix_file *pf, const char *p,
                                   size_t n)
{
    size_t aligned = n - n % DIRECT_ALIGN;
    uint64_t start = pf->written;
    int rc;
    if (!(pf->flags & CKPT_OPEN_DIRECT) || pf->direct_failed || aligned == 0 ||
        (uintptr_t)p % DIRECT_ALIGN != 0 || pf->written % DIRECT_ALIGN != 0)
        return 0;
    if (set_direct(pf, 1) != 0) {
        pf->direct_failed = 1;
        note_direct_refused(pf);
        return 0;
    }
    rc = write_all(pf, p, aligned);
    set_direct(pf, 0);
    if (rc == -EINVAL && pf->written == start) {
        pf->direct_failed = 1; /* this file system refuses O_DIRECT */
        note_direct_refused(pf);
        return 0;
    }
    if (rc != 0)
        return rc < 0 ? rc : -EIO;
    return (ssize_t)aligned;
}

static int posix_write(ckpt_file *f, const void *buf, size_t n, void *payload)
{
    struct posix_file *pf = posix_file_of(f);
    const char *p = buf;
    ssize_t direct;
    int rc;
    (void)payload;
    direct = write_direct_prefix(pf, p, n);
    if (direct < 0)
        return ckpt__error_errno((int)-direct, "write %s", pf->path);
    rc = write_all(pf, p + direct, n - (size_t)direct);
    if (rc == 1)
        return ckpt__error(CKPT_EIO, "write %s: wrote 0 of %zu bytes", pf->path,
                           n);
    if (rc < 0)
        return ckpt__error_errno(-rc, "write %s", pf->path);
    return 0;
}

/* The iovecs of one preadv(2) call: at most this many, CKPT__IO_CHUNK_MAX bytes
 * in all. */
#define PREADV_SEGMENTS 256

/* Fill `sys` with the bytes of `iov` still to read, `skip` bytes into
 * them; returns how many entries were filled and their total in `*want`. */
static int remaining_iov(struct iovec *sys, const ckpt_iovec *iov, int iovcnt,
                         size_t skip, size_t *want)
{
    int n = 0;
    *want = 0;
    for (int i = 0; i < iovcnt && n < PREADV_SEGMENTS; i++) {
        size_t len = iov[i].len, room = CKPT__IO_CHUNK_MAX - *want;
        if (skip >= len) {
            skip -= len;
            continue;
        }
        len -= skip;
        if (len > room)
            len = room;
        sys[n].iov_base = (char *)iov[i].base + skip;
        sys[n].iov_len = len;
        skip = 0;
        *want += len;
        n++;
        if (*want == CKPT__IO_CHUNK_MAX)
            break;
    }
    return n;
}

/* Read the consecutive file bytes from `offset` into the buffers of
 * `iov` in turn (preadv(2), looping over short reads and EINTR) until they
 * are full or the file ends; `op` names the call in messages. */
static int read_at(struct posix_file *pf, const ckpt_iovec *iov, int iovcnt,
                   uint64_t offset, size_t *nread, const char *op)
{
    struct iovec sys[PREADV_SEGMENTS];
    size_t done = 0;
    *nread = 0;
    if (offset > (uint64_t)INT64_MAX)
        return ckpt__error(CKPT_EINVAL, "%s %s: offset %llu out of range", op,
                           pf->path, (unsigned long long)offset);
    for (;;) {
        size_t want;
        int n = remaining_iov(sys, iov, iovcnt, done, &want);
        ssize_t got;
        if (n == 0)
            break;
        got = preadv(pf->fd, sys, n, (off_t)(offset + done));
        if (got < 0) {
            if (errno == EINTR)
                continue;
            return ckpt__error_errno(errno, "%s %s", op, pf->path);
        }
        if (got == 0)
            break; /* end of file */
        done += (size_t)got;
        if (pf->read_direct && (size_t)got < want)
            break; /* only the end of the file cuts an O_DIRECT read */
    }
    *nread = done;
    return 0;
}

static int posix_pread(ckpt_file *f, void *buf, size_t n, uint64_t offset,
                       size_t *nread, void *payload)
{
    ckpt_iovec one = {buf, n};
    (void)payload;
    return read_at(posix_file_of(f), &one, 1, offset, nread, "pread");
}

static int posix_preadv(ckpt_file *f, const ckpt_iovec *iov, int iovcnt,
                        uint64_t offset, size_t *nread, void *payload)
{
    (void)payload;
    return read_at(posix_file_of(f), iov, iovcnt, offset, nread, "preadv");
}

static int posix_size(ckpt_file *f, uint64_t *out, void *payload)
{
    struct posix_file *pf = posix_file_of(f);
    struct stat st;
    (void)payload;
    if (fstat(pf->fd, &st) != 0)
        return ckpt__error_errno(errno, "size %s", pf->path);
    *out = st.st_size > 0 ? (uint64_t)st.st_size : 0;
    return 0;
}

static int posix_sync(ckpt_file *f, void *payload)
{
    struct posix_file *pf = posix_file_of(f);
    int rc;
    (void)payload;
    do {
        rc = fdatasync(pf->fd);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0)
        return ckpt__error_errno(errno, "sync %s", pf->path);
    return 0;
}

static int posix_close(ckpt_file *f, void *payload)
{
    struct posix_file *pf = posix_file_of(f);
    int err = 0;
    (void)payload;
    if (!pf)
        return 0;
    /* On Linux the descriptor is released even when close() reports EINTR,
     * so it is never retried; EINTR itself is not a failure. */
    if (close(pf->fd) != 0 && errno != EINTR)
        err = ckpt__error_errno(errno, "close %s", pf->path);
    posix_file_free(pf);
    return err;
}

static int posix_rename(const char *from, const char *to, void *payload)
{
    (void)payload;
    if (rename(from, to) != 0)
        return ckpt__error_errno(errno, "rename %s to %s", from, to);
    return 0;
}

static int posix_link(const char *from, const char *to, void *payload)
{
    (void)payload;
    if (link(from, to) == 0)
        return 0;
    /* A file system without hard links (vfat, some network ones) says so
     * in several ways: CKPT_ENOTSUP, which callers may work around, unlike
     * an I/O error or a full disk. */
    if (errno == EPERM || errno == ENOSYS || errno == EOPNOTSUPP ||
        errno == EXDEV || errno == EMLINK)
        return ckpt__error(CKPT_ENOTSUP, "link %s to %s: %s", from, to,
                           strerror(errno));
    return ckpt__error_errno(errno, "link %s to %s", from, to);
}

static int posix_remove(const char *path, void *payload)
{
    (void)payload;
    if (unlink(path) != 0)
        return ckpt__error_errno(errno, "remove %s", path);
    return 0;
}

static int posix_mkdir(const char *path, void *payload)
{
    (void)payload;
    if (mkdir(path, 0777) != 0)
        return ckpt__error_errno(errno, "mkdir %s", path);
    return 0;
}

static int posix_sync_dir(const char *path, void *payload)
{
    int fd;
    int rc;
    int saved;
    (void)payload;
    do {
        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    fd = ckpt__posix_fd_off_stdio(fd);
    if (fd < 0)
        return ckpt__error_errno(errno, "sync_dir %s", path);
    do {
        rc = fsync(fd);
    } while (rc != 0 && errno == EINTR);
    saved = errno;
    close(fd);
    /* Some file systems cannot fsync a directory and say EINVAL; their
     * directory updates need no separate flush. */
    if (rc != 0 && saved != EINVAL)
        return ckpt__error_errno(saved, "sync_dir %s", path);
    return 0;
}

/* opendir(path), its descriptor kept off 0-2. NULL with errno set. */
static DIR *list_open(const char *path)
{
    DIR *d;
    int fd, saved;
    do {
        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    fd = ckpt__posix_fd_off_stdio(fd);
    if (fd < 0)
        return NULL;
    d = fdopendir(fd);
    if (!d) {
        saved = errno;
        close(fd);
        errno = saved;
    }
    return d;
}

static int posix_list(const char *path, ckpt_dir_cb cb, void *cb_payload,
                      void *payload)
{
    DIR *d;
    struct dirent *e;
    int rc = 0;
    (void)payload;
    d = list_open(path);
    if (!d)
        return ckpt__error_errno(errno, "list %s", path);
    for (;;) {
        errno = 0;
        e = readdir(d);
        if (!e) {
            if (errno != 0)
                rc = ckpt__error_errno(errno, "list %s", path);
            break;
        }
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        rc = cb(e->d_name, cb_payload);
        if (rc != 0)
            break;
    }
    closedir(d);
    return rc;
}

/* The error of a failed stat of `path`. A name longer than the system
 * allows, or symbolic links that loop, can lead to no file: that is
 * CKPT_ENOTFOUND, as ENOENT is (the message keeps the cause), so that a
 * state file naming such a path names a missing checkpoint rather than
 * failing every look-up in its directory. */
static int stat_failure(int err, const char *path)
{
    int code = ckpt__error_errno(err, "stat %s", path);
    if (err == ENAMETOOLONG || err == ELOOP)
        code = ckpt__error_recode(CKPT_ENOTFOUND);
    return code;
}

static int posix_stat(const char *path, uint64_t *out, double *mtime_out,
                      void *payload)
{
    struct stat st;
    (void)payload;
    if (stat(path, &st) != 0)
        return stat_failure(errno, path);
    if (out)
        *out = st.st_size > 0 ? (uint64_t)st.st_size : 0;
    if (mtime_out)
        *mtime_out =
            (double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec / 1e9;
    return 0;
}

/* The device the file lives on: st_dev, the key under which the read path
 * remembers whether O_DIRECT or the page cache reads faster there. */
static int posix_device_id(const char *path, uint64_t *id, void *payload)
{
    struct stat st;
    (void)payload;
    if (stat(path, &st) != 0)
        return ckpt__error_errno(errno, "device_id %s", path);
    *id = (uint64_t)st.st_dev;
    return 0;
}

/* The first number in the file at `path`, or -1. */
static long read_number(const char *path)
{
    char text[32];
    long v = -1;
    ssize_t got;
    int fd = ckpt__posix_fd_off_stdio(open(path, O_RDONLY | O_CLOEXEC));
    if (fd < 0)
        return -1;
    got = read(fd, text, sizeof(text) - 1);
    close(fd);
    if (got > 0) {
        text[got] = '\0';
        if (sscanf(text, "%ld", &v) != 1)
            v = -1;
    }
    return v;
}

long ckpt__posix_read_ahead_kb(const char *path)
{
    struct stat st;
    char sys[96];
    long kb;
    if (stat(path, &st) != 0)
        return -1;
    /* a whole disk has queue/, a partition its disk's one level up */
    snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u/queue/read_ahead_kb",
             major(st.st_dev), minor(st.st_dev));
    kb = read_number(sys);
    if (kb >= 0)
        return kb;
    snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u/../queue/read_ahead_kb",
             major(st.st_dev), minor(st.st_dev));
    return read_number(sys);
}

static const ckpt_fs posix_fs = {
    .version = CKPT_FS_VERSION,
    .payload = NULL,
    .open_write = posix_open_write,
    .open_read = posix_open_read,
    .write = posix_write,
    .pread = posix_pread,
    .size = posix_size,
    .sync = posix_sync,
    .close = posix_close,
    .rename = posix_rename,
    .remove = posix_remove,
    .mkdir = posix_mkdir,
    .sync_dir = posix_sync_dir,
    .list = posix_list,
    .stat = posix_stat,
    .open_read_direct = posix_open_read_direct,
    .device_id = posix_device_id,
    .preadv = posix_preadv,
    .link = posix_link,
};

const ckpt_fs *ckpt_fs_posix(void)
{
    return &posix_fs;
}
