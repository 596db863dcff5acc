/* tests/mpi/fail_open_shim.c - an LD_PRELOAD library for the MPI tests
 * (run_train_setup_fail.sh): open, open64, openat and openat64
 * (tests/support/open_shim.c) fail with EIO for a path that matches the
 * fnmatch(3) pattern CKPT_FAIL_OPEN_MATCH ('*' matches '/' too), in the
 * process whose OMPI_COMM_WORLD_RANK (Open MPI sets it in each rank's
 * environment) equals CKPT_FAIL_OPEN_RANK. Every other call goes to the
 * next definition. Each failure is said on stderr, so a test can see that
 * the fault was reached. */
#include "support/open_shim.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* EIO when `path` is to fail in this process, else 0. */
int open_shim_before(const char *path)
{
    const char *match = getenv("CKPT_FAIL_OPEN_MATCH");
    const char *want = getenv("CKPT_FAIL_OPEN_RANK");
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (!path || !match || !*match || !want || !rank)
        return 0;
    if (strcmp(want, rank) != 0 || fnmatch(match, path, 0) != 0)
        return 0;
    fprintf(stderr, "fail_open_shim: rank %s: open(%s): EIO\n", rank, path);
    return EIO;
}
