/* tools/ckpt/piece_owner.h - the tensor a piece of a partitioned tensor
 * (a slice key) belongs to, and names compared as the index sorts its
 * keys: what `diff`'s tally and `inspect`'s sizes both walk the pieces by
 * (the pieces of one tensor are neighbours, in the order of the names). */
#ifndef CKPT_TOOLS_PIECE_OWNER_H
#define CKPT_TOOLS_PIECE_OWNER_H

#include "ckpt.h"

#include <stddef.h>

/* The name of the tensor piece `e` belongs to (malloc'd, NUL-terminated;
 * it may hold 0 bytes: its length in *len), or NULL for a key that does
 * not decode, a piece of no tensor. Exits through cli_out_of_memory. */
char *piece_owner(const ckpt_tensor_entry *e, size_t *len);

/* Byte order of names `a` (na bytes) and `b` (nb bytes), a prefix first. */
int piece_name_cmp(const char *a, size_t na, const char *b, size_t nb);

#endif
