/* common/quiet_write.c - write(2) that cannot end the process by a signal
 * the write itself raises: SIGXFSZ past the file-size limit (RLIMIT_FSIZE)
 * and SIGPIPE on a pipe or socket nobody reads any more, whose default
 * actions kill the process before write() returns. The signal is blocked
 * on the calling thread only for the call, and one that this write raised
 * is taken off the thread's pending set (sigtimedwait, no wait) before the
 * mask is restored, so the call fails with EFBIG or EPIPE like any other
 * write error. The process's signal dispositions are never changed; a
 * thread that blocks the signal itself keeps it pending, as it asked, and
 * a handler the application installed does not run for these writes.
 * Also the loop that writes a whole buffer that way. */
#include "common/internal.h"

#include <errno.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

ssize_t ckpt__write_no_signal(int fd, const void *p, size_t n, int sig,
                              int sig_errno)
{
    static const struct timespec no_wait = {0, 0};
    sigset_t set, old;
    ssize_t got;
    int saved;
    sigemptyset(&set);
    sigaddset(&set, sig);
    if (pthread_sigmask(SIG_BLOCK, &set, &old) != 0)
        return write(fd, p, n);
    got = write(fd, p, n);
    saved = errno;
    /* Only a signal this write raised: when the thread had `sig` blocked
     * already, what is pending is the caller's to handle. */
    if (got < 0 && saved == sig_errno && !sigismember(&old, sig))
        while (sigtimedwait(&set, NULL, &no_wait) < 0 && errno == EINTR)
            ;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = saved;
    return got;
}

int ckpt__write_all_no_signal(int fd, const void *p, size_t n, int sig,
                              int sig_errno, size_t *written)
{
    const char *q = p;
    *written = 0;
    while (*written < n) {
        size_t want = n - *written;
        ssize_t got;
        if (want > CKPT__IO_CHUNK_MAX)
            want = CKPT__IO_CHUNK_MAX;
        got = ckpt__write_no_signal(fd, q + *written, want, sig, sig_errno);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (got == 0) /* no progress and no errno: report, never spin */
            return 1;
        *written += (size_t)got;
    }
    return 0;
}
