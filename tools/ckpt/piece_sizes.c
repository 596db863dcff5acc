/* tools/ckpt/piece_sizes.c - a partitioned tensor's bytes (see
 * piece_sizes.h). The pieces' slice keys start with a 0 byte, so they come
 * first in the index, each tensor's together and in the order of the
 * tensors' names (piece_owner.h). */
#include "piece_sizes.h"

#include "cli.h"
#include "piece_owner.h"

#include <stdlib.h>
#include <string.h>

/* Count piece `e`'s record toward its tensor's; a key that does not decode
 * belongs to no tensor. */
static void add_piece(piece_sizes *t, const ckpt_tensor_entry *e)
{
    size_t n = 0, last = t->num > 0 ? t->num - 1 : 0;
    char *name = piece_owner(e, &n);
    if (!name)
        return;
    if (t->num > 0 &&
        piece_name_cmp(t->names[last], t->name_lens[last], name, n) == 0) {
        if (t->bytes[last] <= INT64_MAX - e->size)
            t->bytes[last] += e->size;
        free(name);
        return;
    }
    if (t->num == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 16;
        t->names = cli_xrealloc(t->names, t->cap * sizeof(*t->names));
        t->name_lens =
            cli_xrealloc(t->name_lens, t->cap * sizeof(*t->name_lens));
        t->bytes = cli_xrealloc(t->bytes, t->cap * sizeof(*t->bytes));
    }
    t->names[t->num] = name;
    t->name_lens[t->num] = n;
    t->bytes[t->num++] = e->size;
}

static void build(piece_sizes *t, const ckpt_bundle_reader *r)
{
    size_t n = ckpt_bundle_reader_count(r);
    t->built = 1;
    for (size_t i = 0; i < n; i++) {
        ckpt_tensor_entry buf;
        const ckpt_tensor_entry *e = cli_entry(r, i, &buf);
        if (!e->is_slice_key)
            break; /* past the pieces */
        add_piece(t, e);
    }
}

int64_t piece_sizes_entry_bytes(piece_sizes *t, const ckpt_bundle_reader *r,
                                const ckpt_tensor_entry *e)
{
    int64_t n = 0;
    size_t lo = 0, hi;
    if (e->num_slices == 0)
        return e->size;
    if (ckpt_tensor_byte_size(&n, e->dtype, &e->shape) == 0)
        return n;
    ckpt_error_clear();
    if (!t->built)
        build(t, r);
    hi = t->num;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = piece_name_cmp(t->names[mid], t->name_lens[mid], e->name,
                               e->name_len);
        if (c == 0)
            return t->bytes[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0; /* no pieces: the index's check refuses that */
}

void piece_sizes_dispose(piece_sizes *t)
{
    for (size_t i = 0; i < t->num; i++)
        free(t->names[i]);
    free(t->names);
    free(t->name_lens);
    free(t->bytes);
    memset(t, 0, sizeof(*t));
}
