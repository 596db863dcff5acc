/* tools/ckpt-train/make_dirs.c - the checkpoint directory made as
 * `mkdir -p` does, each level durable in its parent (fsync of the parent
 * directory) before a checkpoint is saved in it, and the message when that
 * fails. */
#include "make_dirs.h"

#include "ckpt.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The entry of `dir` durable in its parent: the library's
 * ckpt_fs_sync_entry, which finds that parent as the saver does ("a" is
 * in ".", "a/b/" in "a", "a/." in "a/.."). A parent this process may write and
 * enter but not read (CKPT_EACCES: a /scratch at mode 1733) cannot be opened to
 * be synced by any run: passed over, as the library's own directory creation
 * does. */
static int sync_entry(const char *dir)
{
    int err = ckpt_fs_sync_entry(NULL, dir);
    if (err == CKPT_EACCES) {
        ckpt_error_clear();
        return 0;
    }
    return err < 0 ? TRAIN_MAKE_DIRS_SYNC : 0;
}

/* Not the library's durable mkdir (ckpt__fs_make_dirs, which also syncs
 * every level that already exists): that one is internal, and ckpt-train
 * uses the public API only. It needs none here: this mkdir -p only makes
 * the directory there (and says so when it cannot) before the saver opens
 * it, and every save goes through the checkpoint hook, whose begin runs
 * ckpt__fs_make_dirs over the same path (hooks.h checkpoint_dir, B46)
 * before its first save, on every rank with --distributed. So a level a
 * killed run left unsynced is synced before a checkpoint is written below
 * it (tests/crash/train_dir_entry.sh). */
int train_make_dirs(const char *path)
{
    char buf[4096];
    struct stat st;
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof(buf)) {
        errno = n == 0 ? ENOENT : ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == '\0') {
            char c = buf[i];
            buf[i] = '\0';
            /* a level that exists may be one a crashed run created and
             * never synced: the last one's entry is synced either way */
            if (mkdir(buf, 0755) == 0 || (errno == EEXIST && c == '\0')) {
                if (sync_entry(buf) != 0)
                    return TRAIN_MAKE_DIRS_SYNC;
            } else if (errno != EEXIST) {
                return -1;
            }
            buf[i] = c;
        }
    }
    /* an existing file of that name is no directory */
    if (stat(path, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

/* Whether `path` (trailing slashes aside: "link/" names the link too) is
 * a symbolic link whose target does not exist; then `target` holds the
 * link's text as written (cut to fit). */
static int dangling_link(const char *path, char *target, size_t cap)
{
    char name[4096];
    struct stat st;
    size_t n = strlen(path);
    ssize_t got;
    while (n > 1 && path[n - 1] == '/')
        n--;
    if (n >= sizeof(name))
        return 0;
    memcpy(name, path, n);
    name[n] = '\0';
    if (lstat(name, &st) != 0 || !S_ISLNK(st.st_mode))
        return 0;
    if (stat(name, &st) == 0 || errno != ENOENT)
        return 0;
    got = readlink(name, target, cap - 1);
    if (got < 0)
        return 0;
    target[got] = '\0';
    return 1;
}

void train_make_dirs_report(const char *path, int rc)
{
    int err = errno;
    char shown[8192], target[4096], target_shown[8192];
    ckpt_text_printable(shown, sizeof(shown), path);
    if (rc != TRAIN_MAKE_DIRS_SYNC && err == ENOENT &&
        dangling_link(path, target, sizeof(target))) {
        /* mkdir -p stops at the link; the missing name is its target */
        ckpt_text_printable(target_shown, sizeof(target_shown), target);
        fprintf(stderr,
                "ckpt-train: cannot create %s: it is a symbolic link to "
                "'%s', which does not exist (create that directory, or "
                "point --dir elsewhere)\n",
                shown, target_shown);
        return;
    }
    /* the library's message is printable already */
    fprintf(stderr, "ckpt-train: cannot create %s: %s\n", shown,
            rc == TRAIN_MAKE_DIRS_SYNC ? ckpt_error_last()->message
                                       : strerror(err));
}
