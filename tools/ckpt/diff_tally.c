/* tools/ckpt/diff_tally.c - counting differing tensors once each: a piece's
 * tensor is the name its slice key encodes (a 0 byte, the name with 0x00
 * written 00 ff and 0xff written ff 00, then 00 01, then the extents), an
 * encoding that keeps the names' order, so the pieces of one tensor are
 * neighbours and the tensors they name come in the order of the tensors'
 * own entries. */
#include "diff_tally.h"

#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* The tensor name of slice key `e` into `out` (e->name_len bytes at
 * least); its length, or -1 when the key does not hold a well-formed
 * name. The library decodes slice keys too (format/bundle_slice_key.c)
 * but offers no public call for it. */
static long piece_owner(const ckpt_tensor_entry *e, char *out)
{
    const unsigned char *k = (const unsigned char *)e->name;
    size_t n = 0;
    for (size_t i = 1; i + 1 < e->name_len; i++) {
        unsigned char c = k[i], next = k[i + 1];
        if (c == 0x00 && next == 0x01)
            return (long)n;
        if ((c == 0x00 && next != 0xff) || (c == 0xff && next != 0x00))
            return -1;
        out[n++] = (char)c;
        i += c == 0x00 || c == 0xff;
    }
    return -1;
}

static int name_cmp(const char *a, size_t na, const char *b, size_t nb)
{
    int c = memcmp(a, b, na < nb ? na : nb);
    if (c != 0)
        return c;
    return na < nb ? -1 : na > nb;
}

static void add_piece(diff_tally *t, const ckpt_tensor_entry *e)
{
    char *name = cli_xmalloc(e->name_len + 1);
    long n = piece_owner(e, name);
    size_t last = t->num_owners > 0 ? t->num_owners - 1 : 0;
    if (n < 0) { /* a key of no tensor: a difference of its own */
        free(name);
        t->tensors++;
        return;
    }
    if (t->num_owners > 0 &&
        name_cmp(t->owners[last], t->owner_lens[last], name, (size_t)n) == 0) {
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
    t->owner_lens[t->num_owners++] = (size_t)n;
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
