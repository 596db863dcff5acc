/* common/ptr_set.c - the pointer set of ptr_set.h (the caller locks). */
#include "common/ptr_set.h"

#include "common/internal.h"

int ckpt__ptr_set_add(ckpt__ptr_set *s, const void *p)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        const void **items =
            ckpt__realloc((void *)s->items, cap * sizeof(*items));
        if (!items)
            return -1;
        s->items = items;
        s->cap = cap;
    }
    s->items[s->n++] = p;
    return 0;
}

void ckpt__ptr_set_remove(ckpt__ptr_set *s, const void *p)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->items[i] == p) {
            s->items[i] = s->items[--s->n];
            break;
        }
    if (s->n == 0) {
        ckpt__free((void *)s->items);
        s->items = NULL;
        s->cap = 0;
    }
}

int ckpt__ptr_set_has(const ckpt__ptr_set *s, const void *p)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->items[i] == p)
            return 1;
    return 0;
}
