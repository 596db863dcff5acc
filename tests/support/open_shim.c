/* tests/support/open_shim.c - open, open64, openat and openat64 for an
 * LD_PRELOAD shim: each asks the shim's open_shim_before(path) first and
 * fails with its errno, or goes on to the next definition
 * (dlsym(RTLD_NEXT)), passing the mode only when the flags create a
 * file. */
#undef _FORTIFY_SOURCE /* its inline open() would clash with ours */
#include "support/open_shim.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);

/* The mode argument is there only when the flags create a file. */
static int needs_mode(int flags)
{
#ifdef O_TMPFILE
    if ((flags & O_TMPFILE) == O_TMPFILE)
        return 1;
#endif
    return (flags & O_CREAT) != 0;
}

/* The next definition of `name` into `*out` (a function pointer of
 * `size` bytes; copied, since ISO C has no cast from void *). */
static void next_symbol(const char *name, void *out, size_t size)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) {
        fprintf(stderr, "open_shim: no next %s\n", name);
        abort();
    }
    memcpy(out, &f, size);
}

static int do_open(const char *name, const char *path, int flags, mode_t mode)
{
    open_fn next;
    int fail = open_shim_before(path);
    if (fail != 0) {
        errno = fail;
        return -1;
    }
    next_symbol(name, &next, sizeof(next));
    return needs_mode(flags) ? next(path, flags, mode) : next(path, flags);
}

static int do_openat(const char *name, int dirfd, const char *path, int flags,
                     mode_t mode)
{
    openat_fn next;
    int fail = open_shim_before(path);
    if (fail != 0) {
        errno = fail;
        return -1;
    }
    next_symbol(name, &next, sizeof(next));
    return needs_mode(flags) ? next(dirfd, path, flags, mode)
                             : next(dirfd, path, flags);
}

/* The mode from the variadic argument list, when the flags say it is
 * there (reading it otherwise is undefined). */
#define MODE_ARG(flags, last, mode)                                            \
    do {                                                                       \
        if (needs_mode(flags)) {                                               \
            va_list ap;                                                        \
            va_start(ap, last);                                                \
            mode = (mode_t)va_arg(ap, int);                                    \
            va_end(ap);                                                        \
        }                                                                      \
    } while (0)

int open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    MODE_ARG(flags, flags, mode);
    return do_open("open", path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
    mode_t mode = 0;
    MODE_ARG(flags, flags, mode);
    return do_open("open64", path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...)
{
    mode_t mode = 0;
    MODE_ARG(flags, flags, mode);
    return do_openat("openat", dirfd, path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
    mode_t mode = 0;
    MODE_ARG(flags, flags, mode);
    return do_openat("openat64", dirfd, path, flags, mode);
}
