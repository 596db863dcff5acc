/* bench/bench_util.h - what the benchmark programs share: the machine's
 * monotonic clock in seconds, and the comparator that sorts timings. */
#ifndef CKPT_BENCH_UTIL_H
#define CKPT_BENCH_UTIL_H

#include "ckpt.h"

/* Seconds on the machine's monotonic clock (the library's, unfaked). */
static inline double now(void)
{
    return ckpt_clock_monotonic(NULL);
}

/* qsort comparator of doubles, ascending. */
static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#endif
