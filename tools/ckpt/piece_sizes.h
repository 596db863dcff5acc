/* tools/ckpt/piece_sizes.h - the bytes a listed tensor holds, for
 * `ckpt inspect`: its record's size; for a partitioned tensor, the byte
 * size of its full shape, or where the dtype has no fixed size (strings)
 * the sum of its pieces' records, found in one pass over the pieces the
 * first time such a tensor is asked for. */
#ifndef CKPT_TOOLS_PIECE_SIZES_H
#define CKPT_TOOLS_PIECE_SIZES_H

#include "ckpt.h"

#include <stddef.h>
#include <stdint.h>

typedef struct piece_sizes {
    /* per tensor with pieces, in the order of the names */
    char **names;
    size_t *name_lens;
    int64_t *bytes;
    size_t num, cap;
    int built;
} piece_sizes;

int64_t piece_sizes_entry_bytes(piece_sizes *t, const ckpt_bundle_reader *r,
                                const ckpt_tensor_entry *e);

void piece_sizes_dispose(piece_sizes *t);

#endif
