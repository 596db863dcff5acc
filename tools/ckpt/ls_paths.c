/* tools/ckpt/ls_paths.c - the paths `ckpt ls` lists (see ls_paths.h): a
 * state file that spells one checkpoint many ways ("m", "./m", ".//m") or
 * lists it many times is cut to one row per checkpoint before a row, a
 * joined path or a listing is made for it, so that time and memory follow
 * the checkpoints, not the length of the list. */
#include "ls_paths.h"

#include "cli.h"

#include <stdlib.h>
#include <string.h>

char *ls_path_tidy(const char *path)
{
    size_t len = strlen(path), o = 0;
    char *out = cli_xmalloc(len + 1);
    const char *p = path;
    if (*p == '/')
        out[o++] = *p++;
    while (*p) {
        const char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        /* an empty component (from "//") or a "." with more after it */
        int skip = n == 0 || (n == 1 && p[0] == '.' && end);
        if (!skip) {
            memcpy(out + o, p, n);
            o += n;
            if (end)
                out[o++] = '/';
        }
        p += n;
        if (*p == '/')
            p++;
    }
    out[o] = '\0';
    return out;
}

typedef struct place {
    const char *key; /* the tidied path, in one shared arena */
    size_t index;
} place;

static int by_key_then_index(const void *a, const void *b)
{
    const place *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c != 0)
        return c;
    return (x->index > y->index) - (x->index < y->index);
}

int ls_path_names_prefix(const char *path)
{
    size_t len = strlen(path);
    return len > 0 && path[len - 1] != '/';
}

void ls_paths_last_places(const char *const *paths, size_t n,
                          unsigned char *keep)
{
    size_t total = 1, at = 0;
    char *arena;
    place *order;
    for (size_t i = 0; i < n; i++)
        total += strlen(paths[i]) + 1;
    arena = cli_xmalloc(total);
    order = cli_xmalloc((n ? n : 1) * sizeof(*order));
    for (size_t i = 0; i < n; i++) {
        char *tidy = ls_path_tidy(paths[i]);
        size_t len = strlen(tidy);
        memcpy(arena + at, tidy, len + 1);
        free(tidy);
        order[i].key = arena + at;
        order[i].index = i;
        at += len + 1;
    }
    qsort(order, n, sizeof(*order), by_key_then_index);
    for (size_t i = 0; i < n; i++) {
        size_t idx = order[i].index;
        int later_same =
            i + 1 < n && strcmp(order[i].key, order[i + 1].key) == 0;
        keep[idx] = !later_same || !ls_path_names_prefix(paths[idx]);
    }
    free(order);
    free(arena);
}
