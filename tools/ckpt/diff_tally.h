/* tools/ckpt/diff_tally.h - how many tensors `ckpt diff` found different:
 * a partitioned tensor whose pieces are compared one by one (strings, and
 * dtypes ckpt cannot decode) counts once, however many of its pieces, and
 * its own entry, differ. */
#ifndef CKPT_TOOLS_DIFF_TALLY_H
#define CKPT_TOOLS_DIFF_TALLY_H

#include "ckpt.h"

#include <stddef.h>

typedef struct diff_tally {
    size_t tensors; /* differing tensors counted so far */
    /* the names of the tensors counted through a piece, in key order */
    char **owners;
    size_t *owner_lens;
    size_t num_owners, cap, cursor;
} diff_tally;

/* Count the difference found at entry `e`. Entries come in key order, as
 * both indexes hold them: every piece (a key starting with a 0 byte)
 * before any tensor's own entry. */
void diff_tally_add(diff_tally *t, const ckpt_tensor_entry *e);

void diff_tally_dispose(diff_tally *t);

#endif
