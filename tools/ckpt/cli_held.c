/* tools/ckpt/cli_held.c - output held back until it may be printed (a
 * tensor's values until its checksum is checked, a JSON list until its
 * document is complete): a stream that keeps the first CLI_HELD_IN_MEMORY
 * bytes in memory and moves everything to an unnamed temporary file (in
 * $TMPDIR, else /tmp) once they grow past that, so that holding the text
 * of `inspect --values=all` of a 1 GiB float tensor (about 3 GB) costs
 * disk, not memory. Where no temporary file can be made, or it cannot
 * take the output (a full file system, a file-size limit), the output is
 * held in memory instead (what the file took read back into it). */
#define _GNU_SOURCE /* fopencookie */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cli_held {
    FILE *f;        /* what the caller writes to */
    char *mem;      /* the bytes so far, until spilled */
    size_t len;     /* bytes in mem */
    size_t cap;     /* mem's allocation */
    int fd;         /* the temporary file once spilled, else -1 */
    int write_err;  /* errno of a failed write to it, else 0 */
    size_t limit;   /* bytes kept in memory before spilling */
    size_t in_file; /* bytes written to the temporary file */
};

/* `fd` moved to a descriptor >= 3 when it is 0, 1 or 2 (`fd` closed), so
 * that a tool started with stderr closed does not write its error lines
 * into the held output, nor its output into itself; -1 on failure. */
static int off_stdio(int fd)
{
    int high;
    if (fd < 0 || fd > STDERR_FILENO)
        return fd;
    high = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
    close(fd);
    return high;
}

/* Where temporary files go: $TMPDIR, else (unset or empty) /tmp. */
static const char *temp_dir(void)
{
    const char *dir = getenv("TMPDIR");
    return dir && *dir ? dir : "/tmp";
}

/* A temporary file in temp_dir(), removed from its directory at once, on a
 * descriptor >= 3; -1 when none can be made. */
static int unnamed_temp_file(void)
{
    const char *dir = temp_dir();
    char *path;
    size_t n;
    int fd;
    n = strlen(dir) + sizeof("/ckpt-held-XXXXXX");
    path = malloc(n);
    if (!path)
        return -1;
    snprintf(path, n, "%s/ckpt-held-XXXXXX", dir);
    fd = mkostemp(path, O_CLOEXEC);
    if (fd >= 0)
        (void)unlink(path);
    free(path);
    return off_stdio(fd);
}

/* Write `n` bytes to `fd`, `*done` of them written; 0 or an errno. */
static int write_all(int fd, const char *p, size_t n, size_t *done)
{
    *done = 0;
    while (*done < n) {
        ssize_t w = write(fd, p + *done, n - *done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? errno : EIO;
        *done += (size_t)w;
    }
    return 0;
}

/* Move the bytes in memory to a new temporary file; when no file can be
 * made or it does not take them, they stay where they are and so does
 * what follows. */
static void spill(cli_held *h)
{
    int fd = unnamed_temp_file();
    size_t done;
    if (fd >= 0 && write_all(fd, h->mem, h->len, &done) != 0) {
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        h->limit = SIZE_MAX;
        return;
    }
    h->fd = fd;
    h->in_file = h->len;
    free(h->mem);
    h->mem = NULL;
    h->len = h->cap = 0;
}

/* The temporary file stopped taking the output: read what it holds back
 * into memory and hold the rest there. 0, or an errno (ENOMEM: no room
 * for it; the read's: the file is kept, and the command fails). */
static int unspill(cli_held *h)
{
    size_t cap = h->in_file > 4096 ? h->in_file : 4096, got = 0;
    char *mem = malloc(cap);
    if (!mem)
        return ENOMEM;
    while (got < h->in_file) {
        ssize_t r = pread(h->fd, mem + got, h->in_file - got, (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            free(mem);
            return r < 0 ? errno : EIO;
        }
        got += (size_t)r;
    }
    close(h->fd);
    h->fd = -1;
    h->mem = mem;
    h->len = got;
    h->cap = cap;
    h->limit = SIZE_MAX;
    return 0;
}

static ssize_t held_write(void *cookie, const char *buf, size_t n)
{
    cli_held *h = cookie;
    size_t whole = n, done = 0;
    if (h->fd < 0 && n > h->limit - h->len)
        spill(h);
    if (h->fd >= 0 && h->write_err == 0) {
        int err = write_all(h->fd, buf, n, &done);
        h->in_file += done;
        if (err == 0)
            return (ssize_t)n;
        err = unspill(h);
        if (err != 0)
            h->write_err = err;
        buf += done;
        n -= done;
    }
    if (h->fd >= 0) {
        errno = h->write_err;
        return -1;
    }
    if (n > h->cap - h->len) {
        size_t cap = h->cap ? h->cap : 4096;
        char *p;
        while (cap - h->len < n)
            cap *= 2;
        p = realloc(h->mem, cap);
        if (!p) {
            errno = ENOMEM;
            return -1;
        }
        h->mem = p;
        h->cap = cap;
    }
    memcpy(h->mem + h->len, buf, n);
    h->len += n;
    return (ssize_t)whole;
}

cli_held *cli_held_open(void)
{
    static const cookie_io_functions_t io = {NULL, held_write, NULL, NULL};
    cli_held *h = calloc(1, sizeof(*h));
    if (!h)
        cli_out_of_memory();
    h->fd = -1;
    h->limit = CLI_HELD_IN_MEMORY;
    h->f = fopencookie(h, "w", io);
    if (!h->f)
        cli_out_of_memory();
    return h;
}

FILE *cli_held_stream(const cli_held *h)
{
    return h->f;
}

/* Out of memory, or the temporary file failed: the command cannot go on
 * (exit 2, the failure document under --json). */
static void held_failed(const cli_held *h)
{
    if (h->fd < 0 || h->write_err == 0 || h->write_err == ENOMEM)
        cli_out_of_memory();
    cli_error(NULL, "cannot hold the output in a temporary file in %s: %s",
              temp_dir(), strerror(h->write_err));
    cli_exit(CLI_USAGE);
}

/* Bytes read from the temporary file at a time, through a buffer on the
 * heap: a tool run under a small stack limit (ulimit -s 64) must not
 * overflow its stack here. */
#define HELD_PUT_CHUNK ((size_t)1 << 16)

void cli_held_put(cli_held *h, FILE *out)
{
    char *buf;
    if (fflush(h->f) != 0 || ferror(h->f))
        held_failed(h);
    if (h->fd < 0) {
        if (h->len > 0) /* nothing held: mem may be NULL */
            fwrite(h->mem, 1, h->len, out);
        return;
    }
    if (lseek(h->fd, 0, SEEK_SET) != 0) {
        h->write_err = errno;
        held_failed(h);
    }
    buf = cli_xmalloc(HELD_PUT_CHUNK);
    for (;;) {
        ssize_t got = read(h->fd, buf, HELD_PUT_CHUNK);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            h->write_err = errno;
        if (got <= 0)
            break;
        fwrite(buf, 1, (size_t)got, out);
    }
    free(buf);
    if (h->write_err != 0)
        held_failed(h);
}

void cli_held_dispose(cli_held *h)
{
    if (!h)
        return;
    fclose(h->f);
    if (h->fd >= 0)
        close(h->fd);
    free(h->mem);
    free(h);
}
