/* common/alloc.c - the library's allocation entry points and the optional
 * replacement allocator of ckpt/sys/alloc.h.
 *
 * The allocator is process-wide state (docs/threading.md, "Process-wide
 * state"): memory leaves the library in caller-owned buffers that are
 * freed later without any object to say which allocator made them, so
 * there is one allocator for all of it. One owner at a time: replacing an
 * installed allocator with a different one is refused (memory the first
 * allocated would reach the second's free); set NULL first. */
#include "ckpt/sys/alloc.h"
#include "internal.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Set while no other thread uses the library (see ckpt_set_allocator). */
static ckpt_allocator current_allocator;
static int have_allocator;
/* Blocks the current allocator gave the library that are not freed yet:
 * while there are any, another allocator would be handed them to free. */
static _Atomic long live_blocks;

/* Refuse to change the allocator while `live` blocks of the current one
 * are alive. */
static int busy(long live)
{
    return ckpt__error(CKPT_EBUSY,
                       "allocator: %ld block(s) the current allocator gave "
                       "the library are not freed yet (a saver, reader, "
                       "session, graph or ckpt_buf still alive); free them "
                       "before changing the allocator",
                       live);
}

static int same_allocator(const ckpt_allocator *a, const ckpt_allocator *b)
{
    return a->payload == b->payload && a->malloc == b->malloc &&
           a->realloc == b->realloc && a->free == b->free;
}

int ckpt_set_allocator(const ckpt_allocator *a)
{
    long live;
    if (!a) {
        if (have_allocator) {
            live = atomic_load(&live_blocks);
            if (live != 0)
                return busy(live);
        }
        have_allocator = 0;
        return 0;
    }
    if (a->version < 1 || a->version > CKPT_ALLOCATOR_VERSION)
        return ckpt__options_check_version((unsigned int)a->version,
                                           CKPT_ALLOCATOR_VERSION, "allocator",
                                           "version = CKPT_ALLOCATOR_VERSION");
    if (!a->malloc || !a->realloc || !a->free)
        return ckpt__error(CKPT_EINVAL, "allocator: every member is required");
    if (have_allocator && !same_allocator(&current_allocator, a))
        return ckpt__error(CKPT_EBUSY,
                           "allocator: another allocator is installed; "
                           "restore the default (NULL) before installing a "
                           "different one");
    if (!have_allocator) {
        live = atomic_load(&live_blocks);
        if (live != 0)
            return busy(live);
    }
    current_allocator = *a;
    have_allocator = 1;
    return 0;
}

void *ckpt__malloc(size_t n)
{
    void *p;
    if (n == 0)
        n = 1;
    if (have_allocator)
        p = current_allocator.malloc(n, current_allocator.payload);
    else
        p = malloc(n);
    if (p)
        atomic_fetch_add_explicit(&live_blocks, 1, memory_order_relaxed);
    return p;
}

void *ckpt__calloc(size_t count, size_t size)
{
    size_t n;
    void *p;
    if (__builtin_mul_overflow(count, size, &n))
        return NULL;
    p = ckpt__malloc(n);
    if (p)
        memset(p, 0, n == 0 ? 1 : n);
    return p;
}

void *ckpt__realloc(void *p, size_t n)
{
    void *q;
    if (n == 0)
        n = 1;
    if (have_allocator)
        q = current_allocator.realloc(p, n, current_allocator.payload);
    else
        q = realloc(p, n);
    if (q && !p)
        atomic_fetch_add_explicit(&live_blocks, 1, memory_order_relaxed);
    return q;
}

int ckpt__reserve_one(void *items, size_t *cap, size_t used, size_t size,
                      size_t first)
{
    void *array, *grown;
    size_t n = *cap ? *cap * 2 : first;
    if (used < *cap)
        return 0;
    if (n < *cap || n > SIZE_MAX / size)
        return ckpt__error_oom();
    /* through memcpy: a T * read and written as the void * it converts to */
    memcpy(&array, items, sizeof(array));
    grown = ckpt__realloc(array, n * size);
    if (!grown)
        return ckpt__error_oom();
    memcpy(items, &grown, sizeof(grown));
    *cap = n;
    return 0;
}

void ckpt__free(void *p)
{
    if (!p)
        return;
    atomic_fetch_sub_explicit(&live_blocks, 1, memory_order_relaxed);
    if (have_allocator)
        current_allocator.free(p, current_allocator.payload);
    else
        free(p);
}

char *ckpt__strndup(const char *s, size_t n)
{
    char *d = ckpt__malloc(n + 1);
    if (!d)
        return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *ckpt__strdup(const char *s)
{
    return ckpt__strndup(s, strlen(s));
}
