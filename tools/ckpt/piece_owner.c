/* tools/ckpt/piece_owner.c - a piece's tensor (see piece_owner.h), through
 * ckpt_tensor_entry_piece. */
#include "piece_owner.h"

#include "cli.h"

#include <string.h>

char *piece_owner(const ckpt_tensor_entry *e, size_t *len)
{
    ckpt_buf name = CKPT_BUF_INIT;
    int err = ckpt_tensor_entry_piece(&name, NULL, NULL, e);
    if (err == CKPT_ENOMEM)
        cli_out_of_memory();
    if (err < 0) {
        ckpt_error_clear();
        ckpt_buf_dispose(&name);
        return NULL;
    }
    *len = name.size;
    /* an empty name leaves the buffer unallocated */
    return name.ptr ? name.ptr : cli_xstrdup("");
}

int piece_name_cmp(const char *a, size_t na, const char *b, size_t nb)
{
    int c = memcmp(a, b, na < nb ? na : nb);
    if (c != 0)
        return c;
    return na < nb ? -1 : na > nb;
}
