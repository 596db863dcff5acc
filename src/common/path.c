/* common/path.c - joining, splitting and lexically normalising
 * '/'-separated paths. */
#include "internal.h"

#include <string.h>

int ckpt__path_join(ckpt_buf *out, const char *dir, const char *name)
{
    size_t n = strlen(dir);
    ckpt__buf_clear(out);
    if (n == 0 || (n == 1 && dir[0] == '.'))
        return ckpt__buf_puts(out, name);
    if (ckpt__buf_put(out, dir, n) < 0)
        return CKPT_ENOMEM;
    if (dir[n - 1] != '/' && ckpt__buf_put(out, "/", 1) < 0)
        return CKPT_ENOMEM;
    return ckpt__buf_puts(out, name);
}

int ckpt__path_dirname(ckpt_buf *out, const char *path)
{
    const char *slash = strrchr(path, '/');
    ckpt__buf_clear(out);
    if (!slash)
        return ckpt__buf_puts(out, ".");
    if (slash == path)
        return ckpt__buf_puts(out, "/");
    return ckpt__buf_put(out, path, (size_t)(slash - path));
}

const char *ckpt__path_basename(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

int ckpt__path_normalize(ckpt_buf *out, const char *path)
{
    const char *p = path;
    size_t root = path[0] == '/' ? 1 : 0, keep; /* bytes ".." cannot pop */
    int err = ckpt__buf_set(out, root ? "/" : "");
    keep = root;
    while (err == 0 && *p) {
        size_t n = strcspn(p, "/");
        int up = n == 2 && p[0] == '.' && p[1] == '.';
        if (n == 0 || (n == 1 && p[0] == '.') ||
            (up && root && out->size == 1)) {
            /* an empty or "." component, or ".." at the root: nothing */
        } else if (up && out->size > keep) {
            const char *last = out->ptr + out->size;
            while (last > out->ptr + keep && last[-1] != '/')
                last--;
            out->size = (size_t)(last - out->ptr);
            if (out->size > keep) /* the '/' before the popped component */
                out->size--;
            out->ptr[out->size] = '\0';
        } else {
            if (out->size > root)
                err = ckpt__buf_put(out, "/", 1);
            if (err == 0)
                err = ckpt__buf_put(out, p, n);
            if (err == 0 && up)
                keep = out->size; /* a leading "..": stays */
        }
        p += n;
        if (*p == '/')
            p++;
    }
    return err;
}
