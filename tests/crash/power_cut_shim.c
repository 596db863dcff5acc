/* tests/crash/power_cut_shim.c - an LD_PRELOAD recorder of the file-system
 * calls a real binary (ckpt-train, ckpt) makes under one directory, for the
 * black-box power-cut test (power_cut_replay.c).
 *
 * With CKPT_PC_ROOT (an absolute directory) and CKPT_PC_LOG (a file outside
 * it) set, every successful mutating call on a path under the root, or on a
 * descriptor opened there, is appended to the log in the order the calls
 * completed, with the bytes written. A process-wide mutex and an flock of
 * the log (for several processes, as under mpiexec) are held across the
 * real call and its record, so the log is one linearisation of what the
 * kernel was asked to do. Records (paths relative to the root, "." for it):
 *
 *   O id flags path      open/openat/creat (flags as given to open)
 *   W id offset len      write/pwrite/writev; `len` data bytes and '\n' follow
 *   T id size            ftruncate
 *   S id                 fsync or fdatasync (files and directories alike)
 *   R id                 sync_file_range (makes nothing durable)
 *   C id                 close
 *   X id on|off          O_DIRECT switched by fcntl(F_SETFL)
 *   N from<TAB>to        rename/renameat/renameat2
 *   L from<TAB>to        link/linkat
 *   U path               unlink/unlinkat/rmdir
 *   D path               mkdir/mkdirat
 *   Y                    sync/syncfs (everything durable)
 *   M size               fflush(stdout) returned; stdout (a regular file)
 *                        is `size` bytes long: what it says is said by now
 *   P len                printf/fprintf/puts to stdout or stderr, or
 *                        write(2) to descriptor 1 or 2, is called with this
 *                        text (`len` bytes and '\n' follow): the
 *                        program says it from now on (also under mpiexec,
 *                        where a rank's stdout is a pipe)
 *
 * `id` names one open descriptor (pid and a counter). Nothing is recorded
 * without both variables, and the calls themselves are never changed,
 * except with CKPT_PC_FAIL_SYNC=N (a failing disk): the Nth fsync or
 * fdatasync of a watched descriptor in this process, and every later one,
 * fails with EIO without reaching the kernel (and is not recorded: it made
 * nothing durable). Under mpiexec every rank is one process writing to the
 * same log (the flock orders them); with CKPT_PC_FAIL_RANK=R as well, only
 * the rank R (OMPI_COMM_WORLD_RANK, PMIX_RANK or PMI_RANK in its
 * environment) has the failing disk, the other ranks' syncs work. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_FD 65536

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static char root[4096];
static size_t root_len;
static int log_fd = -1;
static uint64_t next_id;
static uint64_t syncs_seen, fail_sync_from; /* 0: no sync fails */
static uint64_t ids[MAX_FD];                /* 0: not watched */
static char *fd_path[MAX_FD]; /* absolute path of a watched descriptor */

#define DECLARE(ret, name, args) static ret(*real_##name) args

DECLARE(int, open, (const char *, int, ...));
DECLARE(int, open64, (const char *, int, ...));
DECLARE(int, openat, (int, const char *, int, ...));
DECLARE(int, openat64, (int, const char *, int, ...));
DECLARE(int, creat, (const char *, mode_t));
DECLARE(ssize_t, write, (int, const void *, size_t));
DECLARE(ssize_t, pwrite, (int, const void *, size_t, off_t));
DECLARE(ssize_t, pwrite64, (int, const void *, size_t, off_t));
DECLARE(ssize_t, writev, (int, const struct iovec *, int));
DECLARE(ssize_t, pwritev, (int, const struct iovec *, int, off_t));
DECLARE(int, ftruncate, (int, off_t));
DECLARE(int, fsync, (int));
DECLARE(int, fdatasync, (int));
DECLARE(int, sync_file_range, (int, off_t, off_t, unsigned int));
DECLARE(int, close, (int));
DECLARE(int, fcntl, (int, int, ...));
DECLARE(int, fcntl64, (int, int, ...));
DECLARE(int, rename, (const char *, const char *));
DECLARE(int, renameat, (int, const char *, int, const char *));
DECLARE(int, renameat2, (int, const char *, int, const char *, unsigned int));
DECLARE(int, link, (const char *, const char *));
DECLARE(int, linkat, (int, const char *, int, const char *, int));
DECLARE(int, unlink, (const char *));
DECLARE(int, unlinkat, (int, const char *, int));
DECLARE(int, rmdir, (const char *));
DECLARE(int, mkdir, (const char *, mode_t));
DECLARE(int, mkdirat, (int, const char *, mode_t));
DECLARE(void, sync, (void));
DECLARE(int, syncfs, (int));
DECLARE(int, fflush, (FILE *));
DECLARE(int, vprintf, (const char *, va_list));
DECLARE(int, vfprintf, (FILE *, const char *, va_list));
DECLARE(int, puts, (const char *));
DECLARE(int, fputs, (const char *, FILE *));

/* POSIX's way to take a function from dlsym without a cast ISO C forbids */
#define LOAD(name) (*(void **)(&real_##name) = dlsym(RTLD_NEXT, #name))

/* Whether this process is the one CKPT_PC_FAIL_RANK names (every process
 * is, without it). */
static int fails_here(void)
{
    const char *want = getenv("CKPT_PC_FAIL_RANK"), *rank = NULL;
    const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
    if (!want || !*want)
        return 1;
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]) && !rank; i++)
        rank = getenv(vars[i]);
    return rank && strtol(rank, NULL, 10) == strtol(want, NULL, 10);
}

static void init(void)
{
    const char *r = getenv("CKPT_PC_ROOT"), *l = getenv("CKPT_PC_LOG");
    LOAD(open);
    LOAD(open64);
    LOAD(openat);
    LOAD(openat64);
    LOAD(creat);
    LOAD(write);
    LOAD(pwrite);
    LOAD(pwrite64);
    LOAD(writev);
    LOAD(pwritev);
    LOAD(ftruncate);
    LOAD(fsync);
    LOAD(fdatasync);
    LOAD(sync_file_range);
    LOAD(close);
    LOAD(fcntl);
    LOAD(fcntl64);
    LOAD(rename);
    LOAD(renameat);
    LOAD(renameat2);
    LOAD(link);
    LOAD(linkat);
    LOAD(unlink);
    LOAD(unlinkat);
    LOAD(rmdir);
    LOAD(mkdir);
    LOAD(mkdirat);
    LOAD(sync);
    LOAD(syncfs);
    LOAD(fflush);
    LOAD(vprintf);
    LOAD(vfprintf);
    LOAD(puts);
    LOAD(fputs);
    if (!r || !l || r[0] != '/' || strlen(r) >= sizeof(root))
        return;
    if (getenv("CKPT_PC_FAIL_SYNC") && fails_here())
        fail_sync_from = strtoull(getenv("CKPT_PC_FAIL_SYNC"), NULL, 10);
    strcpy(root, r);
    root_len = strlen(root);
    while (root_len > 1 && root[root_len - 1] == '/')
        root[--root_len] = '\0';
    log_fd = real_open(l, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    /* keep the log descriptor out of the way of the program's own */
    if (log_fd >= 0 && log_fd < 1000) {
        int high = real_fcntl(log_fd, F_DUPFD_CLOEXEC, 1000);
        if (high >= 0) {
            real_close(log_fd);
            log_fd = high;
        }
    }
}

static int active(void)
{
    pthread_once(&once, init);
    return log_fd >= 0;
}

static void lock(void)
{
    pthread_mutex_lock(&mu);
    flock(log_fd, LOCK_EX);
}

static void unlock(void)
{
    flock(log_fd, LOCK_UN);
    pthread_mutex_unlock(&mu);
}

/* The absolute form of `path` relative to `dirfd` in `out`; 0 or -1. */
static int absolute(int dirfd, const char *path, char *out, size_t cap)
{
    char base[4096];
    if (!path)
        return -1;
    if (path[0] == '/') {
        if (strlen(path) >= cap)
            return -1;
        strcpy(out, path);
        return 0;
    }
    if (dirfd == AT_FDCWD) {
        if (!getcwd(base, sizeof(base)))
            return -1;
    } else if (dirfd >= 0 && dirfd < MAX_FD && fd_path[dirfd]) {
        snprintf(base, sizeof(base), "%s", fd_path[dirfd]);
    } else {
        return -1;
    }
    if ((size_t)snprintf(out, cap, "%s/%s", base, path) >= cap)
        return -1;
    return 0;
}

/* The path relative to the root ("." for the root itself), or NULL when
 * `abs` is not under it. Drops "./" components and doubled slashes. */
static const char *relative(const char *abs, char *out, size_t cap)
{
    const char *p;
    size_t n = 0;
    if (strncmp(abs, root, root_len) != 0 ||
        (abs[root_len] != '\0' && abs[root_len] != '/'))
        return NULL;
    p = abs + root_len;
    while (*p) {
        while (*p == '/')
            p++;
        if (p[0] == '.' && (p[1] == '/' || p[1] == '\0')) {
            p++;
            continue;
        }
        if (!*p)
            break;
        if (n > 0 && n + 1 < cap)
            out[n++] = '/';
        while (*p && *p != '/' && n + 1 < cap)
            out[n++] = *p++;
    }
    if (n == 0 && cap > 1)
        out[n++] = '.';
    out[n] = '\0';
    return out;
}

static const char *watched(int dirfd, const char *path, char *abs,
                           size_t abscap, char *rel, size_t relcap)
{
    if (absolute(dirfd, path, abs, abscap) != 0)
        return NULL;
    return relative(abs, rel, relcap);
}

/* Append one record: the header, then `n` bytes of `data` and '\n'. */
static void record(const void *data, size_t n, const char *fmt, ...)
{
    char head[9000];
    struct iovec v[3];
    va_list ap;
    int len;
    va_start(ap, fmt);
    len = vsnprintf(head, sizeof(head), fmt, ap);
    va_end(ap);
    if (len < 0 || (size_t)len >= sizeof(head) - 1)
        return;
    head[len++] = '\n';
    v[0].iov_base = head;
    v[0].iov_len = (size_t)len;
    v[1].iov_base = (void *)(uintptr_t)data;
    v[1].iov_len = n;
    v[2].iov_base = "\n";
    v[2].iov_len = data ? 1 : 0;
    if (real_writev(log_fd, v, 3) < 0)
        return;
}

static void track(int fd, const char *abs, const char *rel, int flags)
{
    if (fd < 0 || fd >= MAX_FD)
        return;
    ids[fd] = (uint64_t)getpid() * 1000000u + ++next_id;
    free(fd_path[fd]);
    fd_path[fd] = strdup(abs);
    record(NULL, 0, "O %llu %d %s", (unsigned long long)ids[fd], flags, rel);
}

static int do_open(int dirfd, const char *path, int flags, mode_t mode, int at)
{
    char abs[4096], rel[4096];
    int fd;
    if (!active() || !watched(dirfd, path, abs, sizeof(abs), rel, sizeof(rel)))
        return at ? real_openat(dirfd, path, flags, mode)
                  : real_open(path, flags, mode);
    lock();
    fd = at ? real_openat(dirfd, path, flags, mode)
            : real_open(path, flags, mode);
    if (fd >= 0)
        track(fd, abs, rel, flags);
    unlock();
    return fd;
}

static mode_t mode_arg(int flags, va_list ap)
{
    return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...)
{
    va_list ap;
    mode_t m;
    va_start(ap, flags);
    m = mode_arg(flags, ap);
    va_end(ap);
    return do_open(AT_FDCWD, path, flags, m, 0);
}

int open64(const char *path, int flags, ...)
{
    va_list ap;
    mode_t m;
    va_start(ap, flags);
    m = mode_arg(flags, ap);
    va_end(ap);
    return do_open(AT_FDCWD, path, flags, m, 0);
}

int openat(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    mode_t m;
    va_start(ap, flags);
    m = mode_arg(flags, ap);
    va_end(ap);
    return do_open(dirfd, path, flags, m, 1);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    mode_t m;
    va_start(ap, flags);
    m = mode_arg(flags, ap);
    va_end(ap);
    return do_open(dirfd, path, flags, m, 1);
}

int creat(const char *path, mode_t mode)
{
    return do_open(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode, 0);
}

int creat64(const char *path, mode_t mode)
{
    return do_open(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode, 0);
}

static int is_watched_fd(int fd)
{
    return active() && fd >= 0 && fd < MAX_FD && ids[fd] != 0;
}

static void record_write(int fd, const struct iovec *iov, int cnt, off_t off,
                         ssize_t got)
{
    char *buf;
    size_t left = (size_t)got, n = 0;
    if (got <= 0)
        return;
    buf = malloc((size_t)got);
    if (!buf)
        abort();
    for (int i = 0; i < cnt && left > 0; i++) {
        size_t take = iov[i].iov_len < left ? iov[i].iov_len : left;
        memcpy(buf + n, iov[i].iov_base, take);
        n += take;
        left -= take;
    }
    record(buf, n, "W %llu %lld %zu", (unsigned long long)ids[fd],
           (long long)off, n);
    free(buf);
}

ssize_t write(int fd, const void *p, size_t n)
{
    struct iovec one = {(void *)(uintptr_t)p, n};
    ssize_t got;
    off_t at;
    if ((fd == STDOUT_FILENO || fd == STDERR_FILENO) && active()) {
        /* a program's own write(2) of a line (the library's stderr
         * logger): what it says, as a P record */
        size_t len = n < 4095 ? n : 4095;
        lock();
        record(p, len, "P %zu", len);
        unlock();
        return real_write(fd, p, n);
    }
    if (!is_watched_fd(fd))
        return real_write(fd, p, n);
    lock();
    at = lseek(fd, 0, SEEK_CUR);
    got = real_write(fd, p, n);
    if (got > 0) {
        /* O_APPEND or not: where the bytes went is the offset now less
         * what was written */
        off_t now = lseek(fd, 0, SEEK_CUR);
        record_write(fd, &one, 1, now >= 0 ? now - got : at, got);
    }
    unlock();
    return got;
}

static ssize_t do_pwrite(int fd, const void *p, size_t n, off_t off, int is64)
{
    struct iovec one = {(void *)(uintptr_t)p, n};
    ssize_t got;
    if (!is_watched_fd(fd))
        return is64 ? real_pwrite64(fd, p, n, off) : real_pwrite(fd, p, n, off);
    lock();
    got = is64 ? real_pwrite64(fd, p, n, off) : real_pwrite(fd, p, n, off);
    record_write(fd, &one, 1, off, got);
    unlock();
    return got;
}

ssize_t pwrite(int fd, const void *p, size_t n, off_t off)
{
    return do_pwrite(fd, p, n, off, 0);
}

ssize_t pwrite64(int fd, const void *p, size_t n, off_t off)
{
    return do_pwrite(fd, p, n, off, 1);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    ssize_t got;
    if (!is_watched_fd(fd))
        return real_writev(fd, iov, cnt);
    lock();
    got = real_writev(fd, iov, cnt);
    if (got > 0) {
        off_t now = lseek(fd, 0, SEEK_CUR);
        record_write(fd, iov, cnt, now - got, got);
    }
    unlock();
    return got;
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    ssize_t got;
    if (!is_watched_fd(fd))
        return real_pwritev(fd, iov, cnt, off);
    lock();
    got = real_pwritev(fd, iov, cnt, off);
    record_write(fd, iov, cnt, off, got);
    unlock();
    return got;
}

int ftruncate(int fd, off_t size)
{
    int rc;
    if (!is_watched_fd(fd))
        return real_ftruncate(fd, size);
    lock();
    rc = real_ftruncate(fd, size);
    if (rc == 0)
        record(NULL, 0, "T %llu %lld", (unsigned long long)ids[fd],
               (long long)size);
    unlock();
    return rc;
}

static int do_sync(int fd, int data_only)
{
    int rc;
    if (!is_watched_fd(fd))
        return data_only ? real_fdatasync(fd) : real_fsync(fd);
    lock();
    if (fail_sync_from > 0 && ++syncs_seen >= fail_sync_from) {
        unlock();
        errno = EIO;
        return -1;
    }
    rc = data_only ? real_fdatasync(fd) : real_fsync(fd);
    if (rc == 0)
        record(NULL, 0, "S %llu", (unsigned long long)ids[fd]);
    unlock();
    return rc;
}

int fsync(int fd)
{
    return do_sync(fd, 0);
}

int fdatasync(int fd)
{
    return do_sync(fd, 1);
}

int sync_file_range(int fd, off_t off, off_t n, unsigned int flags)
{
    int rc;
    if (!is_watched_fd(fd))
        return real_sync_file_range(fd, off, n, flags);
    lock();
    rc = real_sync_file_range(fd, off, n, flags);
    if (rc == 0)
        record(NULL, 0, "R %llu", (unsigned long long)ids[fd]);
    unlock();
    return rc;
}

int close(int fd)
{
    int rc;
    if (!is_watched_fd(fd))
        return real_close(fd);
    lock();
    record(NULL, 0, "C %llu", (unsigned long long)ids[fd]);
    ids[fd] = 0;
    free(fd_path[fd]);
    fd_path[fd] = NULL;
    rc = real_close(fd);
    unlock();
    return rc;
}

static int do_fcntl(int fd, int cmd, long arg, int is64)
{
    int rc, before = 0;
    int (*f)(int, int, ...) = is64 && real_fcntl64 ? real_fcntl64 : real_fcntl;
    if (!is_watched_fd(fd) || cmd != F_SETFL)
        return f(fd, cmd, arg);
    lock();
    before = f(fd, F_GETFL);
    rc = f(fd, cmd, arg);
    if (rc == 0 && before >= 0 && ((before ^ (int)arg) & O_DIRECT))
        record(NULL, 0, "X %llu %s", (unsigned long long)ids[fd],
               (arg & O_DIRECT) ? "on" : "off");
    unlock();
    return rc;
}

int fcntl(int fd, int cmd, ...)
{
    va_list ap;
    long arg;
    va_start(ap, cmd);
    arg = va_arg(ap, long); /* every argument fcntl takes fits a long */
    va_end(ap);
    (void)active();
    return do_fcntl(fd, cmd, arg, 0);
}

int fcntl64(int fd, int cmd, ...)
{
    va_list ap;
    long arg;
    va_start(ap, cmd);
    arg = va_arg(ap, long);
    va_end(ap);
    (void)active();
    return do_fcntl(fd, cmd, arg, 1);
}

/* Two-path calls (rename, link): recorded when either path is watched;
 * one outside the root is written as "-". */
static int two_paths(char kind, int fd1, const char *a, int fd2, const char *b,
                     int (*call)(void *), void *ctx)
{
    char abs1[4096], abs2[4096], rel1[4096], rel2[4096];
    const char *r1, *r2;
    int rc;
    if (!active())
        return call(ctx);
    r1 = watched(fd1, a, abs1, sizeof(abs1), rel1, sizeof(rel1));
    r2 = watched(fd2, b, abs2, sizeof(abs2), rel2, sizeof(rel2));
    if (!r1 && !r2)
        return call(ctx);
    lock();
    rc = call(ctx);
    if (rc == 0)
        record(NULL, 0, "%c %s\t%s", kind, r1 ? r1 : "-", r2 ? r2 : "-");
    unlock();
    return rc;
}

static int one_path(char kind, int fd, const char *a, int (*call)(void *),
                    void *ctx)
{
    char abs[4096], rel[4096];
    const char *r;
    int rc;
    if (!active())
        return call(ctx);
    r = watched(fd, a, abs, sizeof(abs), rel, sizeof(rel));
    if (!r)
        return call(ctx);
    lock();
    rc = call(ctx);
    if (rc == 0)
        record(NULL, 0, "%c %s", kind, r);
    unlock();
    return rc;
}

struct args {
    int fd1, fd2, flags;
    const char *a, *b;
    mode_t mode;
    unsigned int uflags;
};

static int call_renameat2(void *p)
{
    struct args *x = p;
    if (x->uflags == 0 && x->fd1 == AT_FDCWD && x->fd2 == AT_FDCWD)
        return real_rename(x->a, x->b);
    if (x->uflags == 0)
        return real_renameat(x->fd1, x->a, x->fd2, x->b);
    return real_renameat2(x->fd1, x->a, x->fd2, x->b, x->uflags);
}

int rename(const char *a, const char *b)
{
    struct args x = {AT_FDCWD, AT_FDCWD, 0, a, b, 0, 0};
    return two_paths('N', AT_FDCWD, a, AT_FDCWD, b, call_renameat2, &x);
}

int renameat(int fd1, const char *a, int fd2, const char *b)
{
    struct args x = {fd1, fd2, 0, a, b, 0, 0};
    return two_paths('N', fd1, a, fd2, b, call_renameat2, &x);
}

int renameat2(int fd1, const char *a, int fd2, const char *b, unsigned int fl)
{
    struct args x = {fd1, fd2, 0, a, b, 0, fl};
    return two_paths('N', fd1, a, fd2, b, call_renameat2, &x);
}

static int call_linkat(void *p)
{
    struct args *x = p;
    if (x->fd1 == AT_FDCWD && x->fd2 == AT_FDCWD && x->flags == 0)
        return real_link(x->a, x->b);
    return real_linkat(x->fd1, x->a, x->fd2, x->b, x->flags);
}

int link(const char *a, const char *b)
{
    struct args x = {AT_FDCWD, AT_FDCWD, 0, a, b, 0, 0};
    return two_paths('L', AT_FDCWD, a, AT_FDCWD, b, call_linkat, &x);
}

int linkat(int fd1, const char *a, int fd2, const char *b, int flags)
{
    struct args x = {fd1, fd2, flags, a, b, 0, 0};
    return two_paths('L', fd1, a, fd2, b, call_linkat, &x);
}

static int call_unlinkat(void *p)
{
    struct args *x = p;
    if (x->fd1 == AT_FDCWD && x->flags == 0)
        return real_unlink(x->a);
    if (x->fd1 == AT_FDCWD && x->flags == AT_REMOVEDIR)
        return real_rmdir(x->a);
    return real_unlinkat(x->fd1, x->a, x->flags);
}

int unlink(const char *a)
{
    struct args x = {AT_FDCWD, AT_FDCWD, 0, a, NULL, 0, 0};
    return one_path('U', AT_FDCWD, a, call_unlinkat, &x);
}

int unlinkat(int fd, const char *a, int flags)
{
    struct args x = {fd, AT_FDCWD, flags, a, NULL, 0, 0};
    return one_path('U', fd, a, call_unlinkat, &x);
}

int rmdir(const char *a)
{
    struct args x = {AT_FDCWD, AT_FDCWD, AT_REMOVEDIR, a, NULL, 0, 0};
    return one_path('U', AT_FDCWD, a, call_unlinkat, &x);
}

static int call_mkdirat(void *p)
{
    struct args *x = p;
    if (x->fd1 == AT_FDCWD)
        return real_mkdir(x->a, x->mode);
    return real_mkdirat(x->fd1, x->a, x->mode);
}

int mkdir(const char *a, mode_t mode)
{
    struct args x = {AT_FDCWD, AT_FDCWD, 0, a, NULL, mode, 0};
    return one_path('D', AT_FDCWD, a, call_mkdirat, &x);
}

int mkdirat(int fd, const char *a, mode_t mode)
{
    struct args x = {fd, AT_FDCWD, 0, a, NULL, mode, 0};
    return one_path('D', fd, a, call_mkdirat, &x);
}

void sync(void)
{
    if (!active()) {
        real_sync();
        return;
    }
    lock();
    real_sync();
    record(NULL, 0, "Y");
    unlock();
}

int syncfs(int fd)
{
    int rc;
    if (!active())
        return real_syncfs(fd);
    lock();
    rc = real_syncfs(fd);
    if (rc == 0)
        record(NULL, 0, "Y");
    unlock();
    return rc;
}

int fflush(FILE *f)
{
    struct stat st;
    int rc;
    if (!active() || (f != stdout && f != NULL))
        return real_fflush(f);
    lock();
    rc = real_fflush(f);
    if (fstat(STDOUT_FILENO, &st) == 0 && S_ISREG(st.st_mode))
        record(NULL, 0, "M %lld", (long long)st.st_size);
    unlock();
    return rc;
}

/* ---- what the program prints: P records ---- */

static void record_text(FILE *f, const char *fmt, va_list ap)
{
    char text[4096];
    int n;
    if (!active() || (f != stdout && f != stderr))
        return;
    n = vsnprintf(text, sizeof(text), fmt, ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(text))
        n = (int)sizeof(text) - 1;
    lock();
    record(text, (size_t)n, "P %d", n);
    unlock();
}

int vfprintf(FILE *f, const char *fmt, va_list ap)
{
    va_list copy;
    va_copy(copy, ap);
    record_text(f, fmt, copy);
    va_end(copy);
    return real_vfprintf(f, fmt, ap);
}

int vprintf(const char *fmt, va_list ap)
{
    va_list copy;
    (void)active();
    va_copy(copy, ap);
    record_text(stdout, fmt, copy);
    va_end(copy);
    return real_vprintf(fmt, ap);
}

int printf(const char *fmt, ...)
{
    va_list ap;
    int rc;
    va_start(ap, fmt);
    rc = vprintf(fmt, ap);
    va_end(ap);
    return rc;
}

int fprintf(FILE *f, const char *fmt, ...)
{
    va_list ap;
    int rc;
    (void)active();
    va_start(ap, fmt);
    rc = vfprintf(f, fmt, ap);
    va_end(ap);
    return rc;
}

static void record_plain(FILE *f, const char *text)
{
    size_t n = strlen(text);
    if (!active() || (f != stdout && f != stderr))
        return;
    lock();
    record(text, n, "P %zu", n);
    unlock();
}

int puts(const char *text)
{
    (void)active();
    record_plain(stdout, text);
    return real_puts(text);
}

int fputs(const char *text, FILE *f)
{
    (void)active();
    record_plain(f, text);
    return real_fputs(text, f);
}
