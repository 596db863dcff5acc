/* common/ptr_set.h - a small set of pointers, for the process-wide
 * registries of hook payloads (which are alive, which a monitored session
 * holds; session/hook_lifetimes.c keeps both under one mutex of its own,
 * so the set has none). Look-ups are linear: such a set holds a few
 * entries per live session. Not installed. */
#ifndef CKPT_COMMON_PTR_SET_H
#define CKPT_COMMON_PTR_SET_H

#include <stddef.h>

typedef struct ckpt__ptr_set {
    const void **items;
    size_t n, cap;
} ckpt__ptr_set;

#define CKPT__PTR_SET_INIT                                                     \
    {                                                                          \
        NULL, 0, 0                                                             \
    }

/* Add `p` (once more, if already there): 0, or -1 without memory (nothing
 * recorded in the last error: the caller decides what that means). */
int ckpt__ptr_set_add(ckpt__ptr_set *s, const void *p);

/* Remove one occurrence of `p`, if any; the storage goes with the last. */
void ckpt__ptr_set_remove(ckpt__ptr_set *s, const void *p);

/* 1 when `p` is in the set, else 0. */
int ckpt__ptr_set_has(const ckpt__ptr_set *s, const void *p);

#endif
