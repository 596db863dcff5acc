/* common/ptr_set.c - the tagged pointer set of ptr_set.h (the caller
 * locks). */
#include "common/ptr_set.h"

#include "common/internal.h"

static int matches(const ckpt__ptr_set_entry *e, const void *p,
                   unsigned long long tag)
{
    return e->p == p && e->tag == tag;
}

int ckpt__ptr_set_add(ckpt__ptr_set *s, const void *p, unsigned long long tag)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        ckpt__ptr_set_entry *items =
            ckpt__realloc(s->items, cap * sizeof(*items));
        if (!items)
            return -1;
        s->items = items;
        s->cap = cap;
    }
    s->items[s->n].p = p;
    s->items[s->n].tag = tag;
    s->n++;
    return 0;
}

void ckpt__ptr_set_remove(ckpt__ptr_set *s, const void *p,
                          unsigned long long tag)
{
    for (size_t i = 0; i < s->n; i++)
        if (matches(&s->items[i], p, tag)) {
            s->items[i] = s->items[--s->n];
            break;
        }
    if (s->n == 0) {
        ckpt__free(s->items);
        s->items = NULL;
        s->cap = 0;
    }
}

int ckpt__ptr_set_has(const ckpt__ptr_set *s, const void *p,
                      unsigned long long tag)
{
    for (size_t i = 0; i < s->n; i++)
        if (matches(&s->items[i], p, tag))
            return 1;
    return 0;
}
