/* common/mem_ranges.h - whether any two of a set of memory ranges
 * overlap (two variables registered over the same memory). Not
 * installed. */
#ifndef CKPT_COMMON_MEM_RANGES_H
#define CKPT_COMMON_MEM_RANGES_H

#include <stddef.h>
#include <stdint.h>

typedef struct ckpt__mem_range {
    uintptr_t start, end; /* [start, end), end > start */
    size_t index;         /* the caller's: which variable */
} ckpt__mem_range;

/* Sort the `n` ranges by start (reordering `r`) and look for two that
 * share a byte: 1 with *first and *second the indexes of one such pair
 * (*first < *second), else 0. O(n log n). */
int ckpt__mem_ranges_overlap(ckpt__mem_range *r, size_t n, size_t *first,
                             size_t *second);

#endif
