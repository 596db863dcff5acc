/* io/fs_dirs.c - creating a directory and its missing parents durably
 * through a ckpt_fs: each directory created is made durable by a sync_dir
 * of its parent, so a power cut cannot take away a directory (and what
 * was saved in it) after a caller was told it exists. A level that already
 * exists is synced in its parent too: an earlier process may have created
 * it (any level, not only the last: `mkdir -p` of a/b/c killed after
 * creating a) and died before syncing it, and a power cut would then take
 * it away with everything saved below it. The last level's sync must
 * succeed; an existing parent level's is tried, and where it fails that
 * level is left as it was found. One failure is passed over at every
 * level: a parent this process may enter and write but not read
 * (EACCES: `/scratch` at mode 1733, say) cannot be opened to be synced,
 * by this process or by any of its runs, so its entry stays as durable
 * as the file system makes it, as the saver's open leaves it
 * (dir_state.c); refusing would refuse that directory for good.
 * A directory reached through a symbolic link has its real entry synced
 * in its real parent as well (sync_real_parent). ckpt_fs_sync_entry is the
 * public form of ckpt__fs_sync_entry (the `ckpt` tool's repack syncs its
 * destination's directory with it). */
#include "fs_dirs.h"

#include "fs_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* sync_dir of the parent of path[0..n): "/" for "/x", "." for "x"; the
 * parent synced is left in `scratch`. */
static int sync_parent(const ckpt_fs *fs, ckpt_buf *scratch, const char *path,
                       size_t n)
{
    size_t cut = n;
    int err;
    while (cut > 0 && path[cut - 1] != '/')
        cut--; /* cut: just past the last '/' of the parent part */
    while (cut > 1 && path[cut - 1] == '/')
        cut--; /* "a//b": the parent is "a" */
    ckpt__buf_clear(scratch);
    err = cut == 0 ? ckpt__buf_set(scratch, ".")
                   : ckpt__buf_put(scratch, path, cut);
    if (err < 0)
        return err;
    return ckpt__fs_sync_dir(fs, scratch->ptr);
}

/* A directory reached through a symbolic link (`path` itself is one, or
 * "link/." is): its entry is in its real parent, which the sync of
 * `synced` (the parent as `path` spells it: the link's own entry) did not
 * touch. That real parent, the directory of realpath(path), is synced too
 * when it is another directory than realpath(synced). A parent reached
 * through a link ("plink/dir") needs nothing more: opening "plink" to sync
 * it opens the real parent already, and so does "<path>/..". realpath()
 * asks the operating system, not `fs`: a ckpt_fs has no method that reads
 * a link; a path the operating system cannot resolve (a ckpt_fs with
 * names of its own, or a path gone since) has nothing more synced, and so
 * has a real parent `fs` does not find (CKPT_ENOTFOUND: a ckpt_fs whose
 * names happen to resolve on the operating system too, where the
 * operating system's file system, having just resolved it, would find
 * it). The buffers live on the stack, so the allocator seam is kept. */
static int sync_real_parent(const ckpt_fs *fs, const char *path,
                            const char *synced)
{
    char real[PATH_MAX], done[PATH_MAX];
    char *slash;
    int err;
    if (!realpath(path, real) || !realpath(synced, done))
        return 0;
    slash = strrchr(real, '/'); /* realpath's result is absolute */
    if (slash == real)
        real[1] = '\0'; /* a directory in "/" */
    else
        *slash = '\0';
    if (strcmp(real, done) == 0)
        return 0;
    err = ckpt__fs_sync_dir(fs, real);
    if (err == CKPT_ENOTFOUND) {
        ckpt_error_clear(); /* not a name of this fs */
        err = 0;
    }
    return err;
}

int ckpt__fs_sync_entry(const ckpt_fs *fs, const char *path)
{
    ckpt_buf parent = CKPT_BUF_INIT;
    size_t n = strlen(path);
    size_t start;
    int err;
    for (;;) {
        while (n > 1 && path[n - 1] == '/')
            n--; /* "a/b/" is "a/b" */
        start = n;
        while (start > 0 && path[start - 1] != '/')
            start--;
        if (start == 0 || n - start != 1 || path[start] != '.')
            break;
        n = start; /* "a/." is "a" */
    }
    if (n - start == 0) /* "/" or "": no entry in a parent */
        return 0;
    if ((n - start == 1 && path[start] == '.') ||
        (n - start == 2 && path[start] == '.' && path[start + 1] == '.')) {
        /* "." (a program run in the directory it saves to, which a shell's
         * mkdir left unsynced) or "..": the entry is in the parent the
         * kernel finds, "<path>/.." */
        err = n == 1 ? ckpt__buf_set(&parent, "..")
                     : ckpt__buf_printf(&parent, "%.*s/..", (int)n, path);
        if (err == 0)
            err = ckpt__fs_sync_dir(fs, parent.ptr);
    } else {
        err = sync_parent(fs, &parent, path, n);
    }
    if (err == 0)
        err = sync_real_parent(fs, path, parent.ptr);
    ckpt_buf_dispose(&parent);
    return err;
}

int ckpt_fs_sync_entry(const ckpt_fs *fs, const char *path)
{
    CKPT__CHECK_ARG(path);
    if (ckpt__fs_check(fs, "ckpt_fs_sync_entry: fs") < 0)
        return ckpt_error_last()->code;
    return ckpt__fs_sync_entry(ckpt_fs_or_default(fs), path);
}

static int stop_at_first_entry(const char *name, void *payload)
{
    (void)name;
    (void)payload;
    return 1;
}

/* An existing last level must be a directory: a file there would have
 * mkdir -p succeed and the caller go on to announce it (a list of it
 * fails, as not found, where it is a file). */
static int check_is_directory(const ckpt_fs *fs, const char *path)
{
    int err = ckpt__fs_list(fs, path, stop_at_first_entry, NULL);
    if (err != CKPT_ENOTFOUND)
        return err < 0 ? err : 0;
    if (ckpt__fs_stat(fs, path, NULL, NULL) != 0) {
        struct stat st; /* mkdir found an entry: a link to nothing? */
        ckpt_error_clear();
        if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
            return ckpt__error(CKPT_ENOTFOUND,
                               "%s is a symbolic link to something that "
                               "does not exist",
                               path);
        return ckpt__error(CKPT_ENOTFOUND, "%s does not exist", path);
    }
    return ckpt__error(CKPT_ENOTFOUND, "%s is not a directory", path);
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
                    /* a level a crashed run may have created and never
                     * synced: its entry is synced either way */
                    int last = p[strspn(p, "/")] == '\0';
                    ckpt_error_clear();
                    /* (a last level that cannot be listed fails here:
                     * nothing could use it) */
                    err = last ? check_is_directory(fs, level.ptr) : 0;
                    if (err == 0) { /* "." too */
                        err = ckpt__fs_sync_entry(fs, level.ptr);
                        if (err < 0 && (!last || err == CKPT_EACCES)) {
                            ckpt_error_clear(); /* left as found */
                            err = 0;
                        }
                    }
                } else if (err == 0) {
                    err = sync_parent(fs, &parent, dir, n);
                    if (err == CKPT_EACCES) {
                        ckpt_error_clear(); /* a parent it may not read */
                        err = 0;
                    }
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
