/* tests/support/fs_forward.h - a ckpt_fs that forwards every method to a
 * base file system, so that a test changes one method and keeps the rest
 * (LevelDB's EnvWrapper). Part of the testing library (ckpt_testing).
 *
 * Use: embed a ckpt_fs_forward as the FIRST member of the test's own
 * struct, call ckpt_fs_forward_init(), then replace the members of `fs` the
 * test wants to change. Every method receives the ckpt_fs_forward as its
 * payload, which is also a pointer to the embedding struct; a replaced
 * method reaches the base through ckpt_fs_forward_base(payload):
 *
 *     struct full_disk { ckpt_fs_forward fwd; int full; };
 *     static int full_write(ckpt_file *f, const void *p, size_t n, void *pl)
 *     {
 *         struct full_disk *d = pl;
 *         const ckpt_fs *base = ckpt_fs_forward_base(pl);
 *         if (d->full)
 *             return ckpt__error(CKPT_ENOSPC, "write: disk full");
 *         return base->write(f, p, n, base->payload);
 *     }
 *     ...
 *     ckpt_fs_forward_init(&d.fwd, NULL);
 *     d.fwd.fs.write = full_write;
 *     ... hand &d.fwd.fs to the library ...
 *
 * Files are the base's own: a test that must tell its files apart wraps
 * them in every method that opens, uses or closes one. */
#ifndef CKPT_TESTS_SUPPORT_FS_FORWARD_H
#define CKPT_TESTS_SUPPORT_FS_FORWARD_H

#include "ckpt/io.h"

typedef struct ckpt_fs_forward {
    ckpt_fs fs;          /* hand &fs to the library; payload = this struct */
    const ckpt_fs *base; /* where the methods not replaced go */
} ckpt_fs_forward;

/* Fill `w` with version CKPT_FS_VERSION and every method forwarding to
 * `base` (NULL: ckpt_fs_posix()), which must outlive `w`.
 * open_read_direct is forwarded when the base offers it (version >= 2 and
 * not NULL) and NULL otherwise; device_id likewise (version >= 3), and
 * link (version >= 5).
 * preadv is left NULL: the library then reads with one pread per buffer,
 * which a wrapper that replaces pread sees (set preadv to forward it). */
void ckpt_fs_forward_init(ckpt_fs_forward *w, const ckpt_fs *base);

/* The base file system of the ckpt_fs_forward passed as `payload`. */
const ckpt_fs *ckpt_fs_forward_base(const void *payload);

#endif
