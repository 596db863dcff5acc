/* common/mismatches.c - the error of a restore's checks, which look at
 * every variable before any is written: the first mismatch is the error,
 * and the others are named with it (the first few), so that one run shows
 * everything to fix. Shared by the saver's and the MPI saver's restores. */
#include "internal.h"

#include <string.h>

/* How many mismatches after the first are named; the rest are "...". */
#define MISMATCHES_NAMED 8

void ckpt__mismatches_init(ckpt__mismatches *m)
{
    const ckpt_buf empty = CKPT_BUF_INIT;
    memset(m, 0, sizeof(*m));
    m->others = empty;
}

void ckpt__mismatches_add(ckpt__mismatches *m, int rc, const char *name)
{
    if (rc >= 0)
        return;
    if (m->err == 0) {
        m->err = rc;
        ckpt__error_save(&m->first);
        return;
    }
    if (m->more < MISMATCHES_NAMED)
        (void)ckpt__buf_printf(&m->others, "%s'%s'", m->more ? ", " : ": ",
                               name);
    else if (m->more == MISMATCHES_NAMED)
        (void)ckpt__buf_puts(&m->others, ", ...");
    m->more++;
}

int ckpt__mismatches_finish(ckpt__mismatches *m)
{
    int err = m->err;
    if (err < 0 && m->more > 0)
        err = ckpt__error(m->first.code,
                          "%s (and %zu more %s not match the checkpoint%s)",
                          m->first.message, m->more,
                          m->more == 1 ? "variable does" : "variables do",
                          m->others.ptr ? m->others.ptr : "");
    else if (err < 0)
        (void)ckpt__error_restore(&m->first);
    ckpt_buf_dispose(&m->others);
    return err;
}
