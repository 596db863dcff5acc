/* tools/ckpt/diff_tally.c - counting differing tensors once each: a piece's
 * tensor is the name its slice key encodes (ckpt_tensor_entry_piece), an
 * encoding that keeps the names' order, so the pieces of one tensor are
 * neighbours and the tensors they name come in the order of the tensors'
 * own entries. */
#include "diff_tally.h"

#include "cli.h"

#include <stdlib.h>
#include <string.h>

static int name_cmp(const char *a, size_t na, const char *b, size_t nb)
{
    int c = memcmp(a, b, na < nb ? na : nb);
    if (c != 0)
        return c;
    return na < nb ? -1 : na > nb;
}

static void add_piece(diff_tally *t, const ckpt_tensor_entry *e)
{
    ckpt_buf name = CKPT_BUF_INIT;
    size_t last = t->num_owners > 0 ? t->num_owners - 1 : 0;
    int err = ckpt_tensor_entry_piece(&name, NULL, NULL, e);
    if (err == CKPT_ENOMEM)
        cli_out_of_memory();
    if (err < 0) { /* a key of no tensor: a difference of its own */
        ckpt_error_clear();
        ckpt_buf_dispose(&name);
        t->tensors++;
        return;
    }
    if (t->num_owners > 0 && name_cmp(t->owners[last], t->owner_lens[last],
                                      name.ptr, name.size) == 0) {
        ckpt_buf_dispose(&name); /* another piece of the tensor just counted */
        return;
    }
    if (t->num_owners == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 16;
        t->owners = cli_xrealloc(t->owners, t->cap * sizeof(*t->owners));
        t->owner_lens =
            cli_xrealloc(t->owner_lens, t->cap * sizeof(*t->owner_lens));
    }
    /* an empty name left the buffer unallocated */
    t->owners[t->num_owners] = name.ptr ? name.ptr : cli_xstrdup("");
    t->owner_lens[t->num_owners++] = name.size;
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
           name_cmp(t->owners[t->cursor], t->owner_lens[t->cursor], e->name,
                    e->name_len) < 0)
        t->cursor++;
    if (t->cursor < t->num_owners &&
        name_cmp(t->owners[t->cursor], t->owner_lens[t->cursor], e->name,
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
