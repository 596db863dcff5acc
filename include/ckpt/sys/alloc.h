/* ckpt/sys/alloc.h - replace the allocator the library uses, e.g. with one
 * that fails on purpose in tests (curl's torture mode, SQLite's malloc
 * faults). */
#ifndef CKPT_SYS_ALLOC_H
#define CKPT_SYS_ALLOC_H

#include "../common.h"
#include "../errors.h" /* the codes and ckpt_error_last() of every call */

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
 *  C library's). Process-wide: the allocator is shared by every user of
 *  ckpt in the process, so set it from the application (or test harness)
 *  that owns the process, before any other thread uses ckpt and while no
 *  memory the library allocated is still alive: only the allocator that
 *  allocated a block may free it. The library counts the blocks it holds
 *  (in its objects and in ckpt_bufs and string arrays it filled), so a
 *  change of allocator while any is alive (installing one after the
 *  library has been used, or NULL before everything is freed) is refused
 *  with CKPT_EBUSY giving their number, instead of handing them to the
 *  wrong free. Installing the same allocator again is a no-op;
 *  installing a different one while one is installed is refused, so a
 *  second user learns at once that it does not own the allocator.
 *  @return 0, CKPT_EVERSION, CKPT_EINVAL (a member is NULL), or
 *          CKPT_EBUSY (a different allocator is installed: NULL first; or
 *          blocks of the current one are still alive: free them first) */
CKPT_EXTERN(int) ckpt_set_allocator(const ckpt_allocator *a);

CKPT_END_DECL

#endif
