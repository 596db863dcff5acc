/* io/probe_file.c - ckpt__probe_file: the in-memory file the probes of the
 * kernel's page-cache copy (alias_probe.c, touch_probe.c) read from: the
 * same copy as a read of a cached file, no disk involved. */
#include "fs_internal.h"

#include "common/internal.h"

#include <errno.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

int ckpt__probe_file(const char *name, uint8_t *buf, size_t bytes)
{
    size_t written;
    /* off 0-2, as every descriptor the library opens */
    int fd = ckpt__posix_fd_off_stdio(memfd_create(name, MFD_CLOEXEC));
    if (fd < 0)
        return -1;
    for (size_t i = 0; i < bytes; i++)
        buf[i] = (uint8_t)(i * 131u + (i >> 12));
    /* a file-size limit (RLIMIT_FSIZE) fails the write, not the process */
    if (ckpt__write_all_no_signal(fd, buf, bytes, SIGXFSZ, EFBIG, &written) !=
        0) {
        close(fd);
        return -1;
    }
    return fd;
}
