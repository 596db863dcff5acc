/* common/mem_ranges.c - the own-memory check of mem_ranges.h: the used
 * ranges sorted by start, then one pass keeping the range that reaches
 * furthest so far. */
#include "common/mem_ranges.h"

#include "common/internal.h"

#include <stdlib.h>

typedef struct mem_range {
    uintptr_t start, end; /* [start, end), end > start */
    size_t index;         /* which variable */
} mem_range;

static int by_start(const void *a, const void *b)
{
    const mem_range *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Sort `r` and find two ranges that share a byte: 1 with their variables'
 * indexes in *first < *second, else 0. */
static int overlap(mem_range *r, size_t n, size_t *first, size_t *second)
{
    size_t reach = 0; /* the range seen so far whose end is furthest */
    if (n < 2)
        return 0;
    qsort(r, n, sizeof(*r), by_start);
    for (size_t i = 1; i < n; i++) {
        if (r[i].start < r[reach].end) {
            size_t a = r[reach].index, b = r[i].index;
            *first = a < b ? a : b;
            *second = a < b ? b : a;
            return 1;
        }
        if (r[i].end > r[reach].end)
            reach = i;
    }
    return 0;
}

int ckpt__check_own_memory(const void *vars, size_t n,
                           ckpt__var_memory_fn memory_of)
{
    mem_range *r = ckpt__malloc((n ? n : 1) * sizeof(*r));
    const char *name[2];
    const void *data[2];
    uint64_t bytes[2];
    size_t used = 0, pair[2];
    int found;
    if (!r)
        return ckpt__error_oom();
    for (size_t i = 0; i < n; i++)
        if (memory_of(vars, i, &name[0], &data[0], &bytes[0])) {
            r[used].start = (uintptr_t)data[0];
            r[used].end = r[used].start + (uintptr_t)bytes[0];
            r[used].index = i;
            used++;
        }
    found = overlap(r, used, &pair[0], &pair[1]);
    ckpt__free(r);
    if (!found)
        return 0;
    for (int k = 0; k < 2; k++)
        memory_of(vars, pair[k], &name[k], &data[k], &bytes[k]);
    return ckpt__error(
        CKPT_EINVAL,
        "variables '%s' (%llu bytes at %p) and '%s' (%llu bytes at %p) share "
        "memory: give each variable its own (one memory under two names is "
        "saved twice and restored from either)",
        name[0], (unsigned long long)bytes[0], data[0], name[1],
        (unsigned long long)bytes[1], data[1]);
}
