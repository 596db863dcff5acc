/* tests/support/count_alloc.c - the counting allocator of count_alloc.h:
 * live bytes and their peak over malloc, realloc and free, and failing
 * every allocation when told to. */
#include "count_alloc.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define HEADER 16

static atomic_llong live_bytes;
static atomic_llong peak_bytes;
static atomic_int failing;

static void note_alloc(long long n)
{
    long long now = atomic_fetch_add(&live_bytes, n) + n;
    long long peak = atomic_load(&peak_bytes);
    while (now > peak && !atomic_compare_exchange_weak(&peak_bytes, &peak, now))
        ;
}

static void *count_malloc(size_t n, void *payload)
{
    unsigned char *p = atomic_load(&failing) ? NULL : malloc(n + HEADER);
    (void)payload;
    if (!p)
        return NULL;
    memcpy(p, &n, sizeof(n));
    note_alloc((long long)n);
    return p + HEADER;
}

static void count_free(void *q, void *payload)
{
    unsigned char *p = q;
    size_t n;
    (void)payload;
    if (!p)
        return;
    memcpy(&n, p - HEADER, sizeof(n));
    atomic_fetch_sub(&live_bytes, (long long)n);
    free(p - HEADER);
}

static void *count_realloc(void *q, size_t n, void *payload)
{
    unsigned char *p = q, *r;
    size_t old;
    if (!p)
        return count_malloc(n, payload);
    memcpy(&old, p - HEADER, sizeof(old));
    r = atomic_load(&failing) ? NULL : realloc(p - HEADER, n + HEADER);
    if (!r)
        return NULL;
    memcpy(r, &n, sizeof(n));
    /* the new block before the old is released: both exist for a moment */
    note_alloc((long long)n);
    atomic_fetch_sub(&live_bytes, (long long)old);
    return r + HEADER;
}

const ckpt_allocator count_alloc = {CKPT_ALLOCATOR_VERSION, NULL, count_malloc,
                                    count_realloc, count_free};

long long count_alloc_live(void)
{
    return atomic_load(&live_bytes);
}

long long count_alloc_peak(void)
{
    return atomic_load(&peak_bytes);
}

void count_alloc_reset_peak(void)
{
    atomic_store(&peak_bytes, atomic_load(&live_bytes));
}

void count_alloc_fail(int fail)
{
    atomic_store(&failing, fail != 0);
}
