/* mpi/mpi_failures.c - failed asynchronous saves kept until the caller is
 * told, so that every rank is told of the same failures by the same call.
 *
 * Ranks deliver a save's outcome at different calls (each when its own
 * copy of rank 0's broadcast completes), so a rank must not return a
 * failure as soon as it has it: a data-parallel loop stopping on one rank
 * would leave the others waiting in their next collective. A failure is
 * returned only where every rank is known to have delivered it: by
 * counting. The saves run in one order on every rank, so failure k is
 * the same on every rank; a call returns the failures up to a count the
 * ranks agree on (every one delivered, when every rank finished its saves;
 * the smallest delivered count, in COALESCE's agreement), combined into
 * one error. The first few are kept whole, later ones only counted, so an
 * unlimited run of failures takes bounded memory. */
#include "mpi_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void ckpt__mpi_failure_add(ckpt__mpi_failures *f, const ckpt__mpi_status *st,
                           int64_t step, const char *prefix)
{
    uint64_t unreturned = f->delivered - f->returned;
    if (f->nkept == unreturned && f->nkept < CKPT__MPI_KEPT_FAILURES) {
        ckpt__mpi_status *k = &f->kept[f->nkept];
        *k = *st;
        k->step = step;
        /* which save it was, as the single-process saver says */
        if (prefix)
            snprintf(k->msg, sizeof(k->msg),
                     "save of step %" PRId64 " to %.120s failed: %.340s", step,
                     prefix, st->msg);
        else /* refused before it was named */
            snprintf(k->msg, sizeof(k->msg),
                     "save of step %" PRId64 " failed: %.340s", step, st->msg);
        f->nkept++;
    }
    f->delivered++;
    f->later_ok = 0;
}

void ckpt__mpi_failures_note_ok(ckpt__mpi_failures *f, int64_t step)
{
    if (f->delivered == f->returned)
        return;
    f->later_ok = 1;
    f->later_ok_step = step;
}

int ckpt__mpi_failures_take(ckpt__mpi_failures *f, uint64_t upto)
{
    char msg[4 * CKPT__MPI_MSG];
    uint64_t k, shown;
    size_t used = 0;
    int code;
    if (upto > f->delivered)
        upto = f->delivered;
    if (upto <= f->returned)
        return 0;
    k = upto - f->returned;
    shown = k < f->nkept ? k : f->nkept;
    msg[0] = '\0';
    if (shown == 0) {
        code = CKPT_EIO;
        used = (size_t)snprintf(
            msg, sizeof(msg),
            "%" PRIu64 " asynchronous save(s) failed (too many failures "
            "in a row to keep their messages)",
            k);
    } else {
        code = f->kept[0].code;
        used = (size_t)snprintf(msg, sizeof(msg), "%s", f->kept[0].msg);
        for (uint64_t i = 1; i < shown && used < sizeof(msg); i++)
            used += (size_t)snprintf(msg + used, sizeof(msg) - used,
                                     "; then %s", f->kept[i].msg);
        if (k > shown && used < sizeof(msg))
            used +=
                (size_t)snprintf(msg + used, sizeof(msg) - used,
                                 "; then %" PRIu64 " more failed", k - shown);
    }
    /* Every failure returned and a save after them succeeded: the reader
     * should not think the latest checkpoint is lost. */
    if (upto == f->delivered && f->later_ok) {
        if (used < sizeof(msg))
            snprintf(msg + used, sizeof(msg) - used,
                     " (a later save, of step %" PRId64 ", succeeded)",
                     f->later_ok_step);
        f->later_ok = 0;
    }
    memmove(f->kept, f->kept + shown,
            (size_t)(f->nkept - shown) * sizeof(f->kept[0]));
    f->nkept -= (size_t)shown;
    f->returned = upto;
    return ckpt__error(code, "%s", msg);
}

int ckpt__mpi_failures_take_all(ckpt__mpi_failures *f)
{
    return ckpt__mpi_failures_take(f, f->delivered);
}
