/* common/mem_ranges.h - whether each of a set of variables has memory of
 * its own: two whose data overlap are refused by name. Shared by the
 * saver and the MPI saver. Not installed. */
#ifndef CKPT_COMMON_MEM_RANGES_H
#define CKPT_COMMON_MEM_RANGES_H

#include <stddef.h>
#include <stdint.h>

/* The memory of the caller's variable `i` of `vars`: its name, data and
 * size. Returns 0 when the variable uses no memory of its own (no data, no
 * bytes, or callbacks that never touch it), which the check passes over. */
typedef int (*ckpt__var_memory_fn)(const void *vars, size_t i,
                                   const char **name, const void **data,
                                   uint64_t *bytes);

/* 0 when no two of the `n` variables' memory share a byte, else
 * CKPT_EINVAL with "variables 'a' (N bytes at P) and 'b' (M bytes at Q)
 * share memory: give each variable its own ..." (the caller prefixes which
 * saver and operation). O(n log n); CKPT_ENOMEM when the ranges cannot be
 * held. */
int ckpt__check_own_memory(const void *vars, size_t n,
                           ckpt__var_memory_fn memory_of);

#endif
