/* ckpt/sys/alloc.h - replace the allocator the library uses, e.g. with one
 * that fails on purpose in tests (curl's torture mode, SQLite's malloc
 * faults). */
#ifndef CKPT_SYS_ALLOC_H
#define CKPT_SYS_ALLOC_H

#include "../common.h"

CKPT_BEGIN_DECL

#define CKPT_ALLOCATOR_VERSION 1

/** An allocator; every member is required. */
typedef struct ckpt_allocator {
    int version; /**< CKPT_ALLOCATOR_VERSION */
    void *payload;
    void *(*malloc)(size_t n, void *payload);
    void *(*realloc)(void *p, size_t n, void *payload);
    void (*free)(void *p, void *payload);
} ckpt_allocator;

/** Install `a` for every later allocation of the library (NULL restores the
 *  C library's). Process-wide: call it while no other thread uses ckpt, and
 *  only free memory with the allocator that allocated it. */
CKPT_EXTERN(int) ckpt_set_allocator(const ckpt_allocator *a);

CKPT_END_DECL

#endif
