/* tests/support/count_alloc.h - an allocator for ckpt_set_allocator that
 * counts the library's live bytes and their peak, so a test can bound what
 * a call keeps or needs (bytes, never time). Each block carries its size
 * in a 16-byte header; the counters are atomic (library threads allocate
 * too). It can also be told to fail every allocation, for a test of what
 * running out of memory gives. Install it before the library allocates
 * anything. */
#ifndef CKPT_TESTS_COUNT_ALLOC_H
#define CKPT_TESTS_COUNT_ALLOC_H

#include "ckpt/sys/alloc.h"

/** The counting allocator (one per process: the counters are global). */
extern const ckpt_allocator count_alloc;

/** Bytes allocated and not yet freed. */
long long count_alloc_live(void);

/** The largest live count since the last count_alloc_reset_peak. */
long long count_alloc_peak(void);

/** Start a new peak at the live count. */
void count_alloc_reset_peak(void);

/** Non-zero: every malloc and realloc fails (returns NULL) until called
 *  again with 0. */
void count_alloc_fail(int fail);

#endif
