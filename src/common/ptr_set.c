/* common/ptr_set.c - the locked pointer set of ptr_set.h. */
#include "common/ptr_set.h"

#include "common/internal.h"

int ckpt__ptr_set_add(ckpt__ptr_set *s, const void *p)
{
    int rc = 0;
    pthread_mutex_lock(&s->mu);
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        const void **items =
            ckpt__realloc((void *)s->items, cap * sizeof(*items));
        if (items) {
            s->items = items;
            s->cap = cap;
        }
    }
    if (s->n < s->cap)
        s->items[s->n++] = p;
    else
        rc = -1;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

void ckpt__ptr_set_remove(ckpt__ptr_set *s, const void *p)
{
    pthread_mutex_lock(&s->mu);
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
    pthread_mutex_unlock(&s->mu);
}

int ckpt__ptr_set_has(ckpt__ptr_set *s, const void *p)
{
    int found = 0;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->n && !found; i++)
        found = s->items[i] == p;
    pthread_mutex_unlock(&s->mu);
    return found;
}
