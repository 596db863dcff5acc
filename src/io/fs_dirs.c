/* io/fs_dirs.c - creating a directory and its missing parents durably
 * through a ckpt_fs: each directory created is made durable by a sync_dir
 * of its parent, so a power cut cannot take away a directory (and what
 * was saved in it) after a caller was told it exists; the last level is
 * synced in its parent even when it already exists (an earlier process
 * may have created it and died before syncing it). */
#include "fs_dirs.h"

#include "fs_internal.h"

#include <string.h>

/* sync_dir of the parent of path[0..n): "/" for "/x", "." for "x". */
static int sync_parent(const ckpt_fs *fs, ckpt_buf *scratch, const char *path,
                       size_t n)
{
    size_t cut = n;
    while (cut > 0 && path[cut - 1] != '/')
        cut--; /* cut: just past the last '/' of the parent part */
    while (cut > 1 && path[cut - 1] == '/')
        cut--; /* "a//b": the parent is "a" */
    ckpt__buf_clear(scratch);
    if (cut == 0)
        return ckpt__fs_sync_dir(fs, ".");
    {
        int err = ckpt__buf_put(scratch, path, cut);
        if (err < 0)
            return err;
    }
    return ckpt__fs_sync_dir(fs, scratch->ptr);
}

int ckpt__fs_make_dirs(const ckpt_fs *fs, const char *dir)
{
    ckpt_buf level = CKPT_BUF_INIT;
    ckpt_buf parent = CKPT_BUF_INIT;
    int err = 0;
    for (const char *p = dir;; p++) {
        if (*p == '/' || *p == '\0') {
            size_t n = (size_t)(p - dir);
            if (n > 0 && dir[n - 1] != '/') {
                ckpt__buf_clear(&level);
                err = ckpt__buf_put(&level, dir, n);
                if (err == 0)
                    err = ckpt__fs_mkdir(fs, level.ptr);
                if (err == CKPT_EEXISTS) {
                    /* the last level may be one a crashed run created and
                     * never synced: its entry is synced either way */
                    int last = p[strspn(p, "/")] == '\0';
                    ckpt_error_clear();
                    err = last ? sync_parent(fs, &parent, dir, n) : 0;
                } else if (err == 0) {
                    err = sync_parent(fs, &parent, dir, n);
                }
                if (err < 0)
                    break;
            }
            if (*p == '\0')
                break;
        }
    }
    ckpt_buf_dispose(&level);
    ckpt_buf_dispose(&parent);
    return err; /* the failing mkdir or sync_dir named its directory */
}
