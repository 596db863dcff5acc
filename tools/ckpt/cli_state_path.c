/* tools/ckpt/cli_state_path.c - whether the checkpoint a directory's state
 * file leads to lies inside that directory or outside it (an absolute path
 * elsewhere, a "..", a symbolic link out of it), also where the
 * directory's path is longer than PATH_MAX, and the warnings the commands
 * print when they follow such a path or fall back from a named checkpoint
 * whose index is missing (see cli.h). */
/* realpath is XSI: asked for before cli.h includes any system header. */
#define _XOPEN_SOURCE 700
#include "cli.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cli_path_within(const char *p, const char *dir)
{
    size_t n = strlen(dir);
    if (strcmp(dir, "/") == 0)
        return p[0] == '/';
    return strncmp(p, dir, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

static int same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* cli_dir_place without paths: from `sub` up through ".." until `dir` or
 * the root (whose ".." is itself), each step an openat of the one before,
 * so no path is built and the depth does not matter. */
static enum cli_dir_place place_by_walking_up(const char *sub, const char *dir)
{
    enum cli_dir_place place = CLI_DIR_UNKNOWN;
    struct stat target, here, up;
    int fd, depth = 0;
    if (stat(dir, &target) != 0)
        return CLI_DIR_UNKNOWN;
    fd = open(sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &here) != 0) {
        if (fd >= 0)
            close(fd);
        return CLI_DIR_UNKNOWN;
    }
    while (place == CLI_DIR_UNKNOWN) {
        int parent;
        if (same_file(&here, &target)) {
            place = depth == 0 ? CLI_DIR_SAME : CLI_DIR_INSIDE;
            break;
        }
        parent = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (parent < 0 || fstat(parent, &up) != 0) {
            if (parent >= 0)
                close(parent);
            break;
        }
        close(fd);
        fd = parent;
        if (same_file(&up, &here))
            place = CLI_DIR_OUTSIDE; /* the root, and `dir` not met */
        here = up;
        depth++;
    }
    close(fd);
    return place;
}

enum cli_dir_place cli_dir_place(const char *sub, const char *dir,
                                 const char *dir_real)
{
    char *sub_real = dir_real ? realpath(sub, NULL) : NULL;
    enum cli_dir_place place;
    if (sub_real) {
        if (strcmp(sub_real, dir_real) == 0)
            place = CLI_DIR_SAME;
        else
            place = cli_path_within(sub_real, dir_real) ? CLI_DIR_INSIDE
                                                        : CLI_DIR_OUTSIDE;
    } else {
        place = place_by_walking_up(sub, dir);
    }
    free(sub_real);
    return place;
}

/* Whether the relative path `rel`, walked component by component, leads
 * above where it starts ("../x", "a/../../x"; not "a/../x"). */
static int climbs_out(const char *rel)
{
    long depth = 0;
    for (const char *p = rel; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            if (--depth < 0)
                return 1;
        } else if (n > 0 && !(n == 1 && p[0] == '.')) {
            depth++;
        }
        p += n;
        p += *p == '/';
    }
    return 0;
}

/* The directory part of `prefix` (malloc'd): "." when it has none, "/" for
 * "/name". */
static char *parent_of(const char *prefix)
{
    const char *slash = strrchr(prefix, '/');
    char *parent;
    if (!slash)
        return cli_xstrdup(".");
    parent = cli_xstrdup(prefix);
    parent[slash == prefix ? 1 : (size_t)(slash - prefix)] = '\0';
    return parent;
}

int cli_outside_dir(const char *dir, const char *prefix, const char *stored)
{
    char *dir_real, *parent;
    enum cli_dir_place place;
    int outside = 0;
    if (stored && !strchr(stored, '/'))
        return 0; /* a bare name: DIR/<name> */
    dir_real = realpath(dir, NULL);
    parent = parent_of(prefix);
    place = cli_dir_place(parent, dir, dir_real);
    if (place != CLI_DIR_UNKNOWN)
        outside = place == CLI_DIR_OUTSIDE;
    else if (stored && stored[0] == '/' && dir_real)
        /* its directory is not there: by the text of the path */
        outside = strcmp(dir_real, "/") != 0 &&
                  (!cli_path_within(stored, dir_real) ||
                   climbs_out(stored + strlen(dir_real)));
    else if (stored)
        outside = climbs_out(stored);
    free(dir_real);
    free(parent);
    return outside;
}

void cli_warn_named_missing(const char *cmd, const char *dir,
                            const char *chosen)
{
    ckpt_state st = CKPT_STATE_INIT;
    ckpt_buf named = CKPT_BUF_INIT;
    ckpt_buf index = CKPT_BUF_INIT;
    struct stat sb;
    size_t n = strlen(dir);
    const char *sep = n && dir[n - 1] == '/' ? "" : "/";
    if (ckpt_state_read(&st, NULL, dir) == 0 && st.model_checkpoint_path &&
        ckpt_state_resolve(&named, dir, st.model_checkpoint_path) == 0 &&
        strcmp(named.ptr, chosen) != 0 &&
        ckpt_bundle_index_path(&index, named.ptr) == 0 &&
        stat(index.ptr, &sb) != 0)
        cli_error(cmd,
                  "warning: %s%s" CKPT_STATE_FILENAME
                  " names %s, which has no index: reading the newest listed "
                  "checkpoint that has one instead, %s",
                  dir, sep, named.ptr, chosen);
    ckpt_buf_dispose(&index);
    ckpt_buf_dispose(&named);
    ckpt_state_dispose(&st);
}

/* How many times cli_warn_outside has warned in this process. */
static unsigned outside_warnings;

unsigned cli_outside_warnings(void)
{
    return outside_warnings;
}

void cli_warn_outside(const char *cmd, const char *dir, const char *prefix)
{
    size_t n = strlen(dir);
    const char *sep = n && dir[n - 1] == '/' ? "" : "/";
    cli_error(cmd,
              "warning: %s%s" CKPT_STATE_FILENAME
              " names a checkpoint outside %s: %s (read all the same, as "
              "TensorFlow reads it)",
              dir, sep, dir, prefix);
    cli_json_failure_detail("outside_directory", json_object_new_boolean(1));
    outside_warnings++;
}
