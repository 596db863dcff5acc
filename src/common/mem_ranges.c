/* common/mem_ranges.c - the overlap search of mem_ranges.h: sort by start,
 * then one pass keeping the range that reaches furthest so far. */
#include "common/mem_ranges.h"

#include <stdlib.h>

static int by_start(const void *a, const void *b)
{
    const ckpt__mem_range *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

int ckpt__mem_ranges_overlap(ckpt__mem_range *r, size_t n, size_t *first,
                             size_t *second)
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
