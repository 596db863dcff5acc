/* common/path.c - joining and splitting '/'-separated paths. */
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
