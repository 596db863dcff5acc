/* common/ptr_set.h - a small set of pointers, each with a tag, for the
 * process-wide registries of hook payloads (which are alive, tagged with
 * the hook's serial; which a monitored session holds, tag 0;
 * session/hook_lifetimes.c keeps both under one mutex of its own, so the
 * set has none). An entry matches a look-up when pointer and tag both
 * match. Look-ups are linear: such a set holds a few entries per live
 * session. Not installed. */
#ifndef CKPT_COMMON_PTR_SET_H
#define CKPT_COMMON_PTR_SET_H

#include <stddef.h>

typedef struct ckpt__ptr_set_entry {
    const void *p;
    unsigned long long tag;
} ckpt__ptr_set_entry;

typedef struct ckpt__ptr_set {
    ckpt__ptr_set_entry *items;
    size_t n, cap;
} ckpt__ptr_set;

#define CKPT__PTR_SET_INIT                                                     \
    {                                                                          \
        NULL, 0, 0                                                             \
    }

/* Add (`p`, `tag`) (once more, if already there): 0, or -1 without memory
 * (nothing recorded in the last error: the caller decides what that
 * means). */
int ckpt__ptr_set_add(ckpt__ptr_set *s, const void *p, unsigned long long tag);

/* Remove one occurrence of (`p`, `tag`), if any; the storage goes with the
 * last. */
void ckpt__ptr_set_remove(ckpt__ptr_set *s, const void *p,
                          unsigned long long tag);

/* 1 when (`p`, `tag`) is in the set, else 0. */
int ckpt__ptr_set_has(const ckpt__ptr_set *s, const void *p,
                      unsigned long long tag);

#endif
