/* tools/ckpt/diff_tally.c - counting differing tensors once each: a piece's
 * tensor is the name its slice key encodes (piece_owner.h), an
 * encoding that keeps the names' order, so the pieces of one tensor are
 * neighbours and the tensors they name come in the order of the tensors'
 * own entries. */
#include "diff_tally.h"

#include "cli.h"
#include "piece_owner.h"

#include <stdlib.h>
#include <string.h>

static void add_piece(diff_tally *t, const ckpt_tensor_entry *e)
{
    size_t n = 0, last = t->num_owners > 0 ? t->num_owners - 1 : 0;
    char *name = piece_owner(e, &n);
    if (!name) { /* a key of no tensor: a difference of its own */
        t->tensors++;
        return;
    }
    if (t->num_owners > 0 &&
        piece_name_cmp(t->owners[last], t->owner_lens[last], name, n) == 0) {
        free(name); /* another piece of the tensor just counted */
        return;
    }
    if (t->num_owners == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 16;
        t->owners = cli_xrealloc(t->owners, t->cap * sizeof(*t->owners));
        t->owner_lens =
            cli_xrealloc(t->owner_lens, t->cap * sizeof(*t->owner_lens));
    }
    t->owners[t->num_owners] = name;
    t->owner_lens[t->num_owners++] = n;
    t->tensors++;
}

void diff_tally_add(diff_tally *t, const ckpt_tensor_entry *e)
{
    if (e->is_slice_key) {
        add_piece(t, e);
        return;
    }
    /* counted already when one of its pieces differed */
    while (t->cursor < t->num_owners &&
           piece_name_cmp(t->owners[t->cursor], t->owner_lens[t->cursor],
                          e->name, e->name_len) < 0)
        t->cursor++;
    if (t->cursor < t->num_owners &&
        piece_name_cmp(t->owners[t->cursor], t->owner_lens[t->cursor], e->name,
                       e->name_len) == 0)
        return;
    t->tensors++;
}

void diff_tally_dispose(diff_tally *t)
{
    for (size_t i = 0; i < t->num_owners; i++)
        free(t->owners[i]);
    free(t->owners);
    free(t->owner_lens);
    memset(t, 0, sizeof(*t));
}
