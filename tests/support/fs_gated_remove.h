/* tests/support/fs_gated_remove.h - a forwarding file system whose removes
 * of data files (".data-" in the name) wait at a gate while the test holds
 * it closed: to observe what a saver does while retention's deletion is
 * still running. Part of the testing library (ckpt_testing).
 *
 *     static ckpt_fs_gated_remove g;
 *     ckpt_fs_gated_remove_init(&g);
 *     opts.fs = &g.fwd.fs;
 *     atomic_store(&g.closed, 1);   ... a remove now waits ...
 *     atomic_store(&g.closed, 0);
 *
 * A remove waits at most 20 s: then `timed_out` is set and the gate opens
 * for good, so a test that forgets to open it fails instead of hanging. */
#ifndef CKPT_TESTS_SUPPORT_FS_GATED_REMOVE_H
#define CKPT_TESTS_SUPPORT_FS_GATED_REMOVE_H

#include "support/fs_forward.h"

#include <stdatomic.h>

typedef struct ckpt_fs_gated_remove {
    ckpt_fs_forward fwd;  /* first: hand &fwd.fs to the library */
    atomic_int closed;    /* set by the test */
    atomic_int waiting;   /* removes held at the gate now */
    atomic_int timed_out; /* a remove waited 20 s and opened the gate */
} ckpt_fs_gated_remove;

/* Forward everything to the POSIX file system, with the gate open. */
void ckpt_fs_gated_remove_init(ckpt_fs_gated_remove *g);

#endif
