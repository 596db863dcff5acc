/* mpi/mpi_options_agree.c - the options every rank of a distributed saver
 * must give alike, compared at open against rank 0's: the checkpoints'
 * names (basename, pad_step_number), what the state file records
 * (absolute_paths), retention (max_to_keep, keep_checkpoint_every_n_hours)
 * and the busy policy, which decides which collective each rank makes at a
 * trigger (ranks that differ would wait on each other until the collective
 * timeout). A rank whose options differ fails the open on every rank,
 * naming the option and both values. fs, clock, log, the callbacks,
 * direct_io, fence_from_start and collective_timeout_s are per rank. */
#include "mpi_internal.h"

#include <stdio.h>
#include <string.h>

void ckpt__mpi_options_pack(const ckpt_mpi_saver *s, ckpt__mpi_agreed *out)
{
    const ckpt_saver_options *o = &s->opts.base;
    memset(out, 0, sizeof(*out));
    out->set = 1;
    out->busy_policy = o->busy_policy;
    out->max_to_keep = o->max_to_keep;
    out->pad_step_number = o->pad_step_number != 0;
    out->absolute_paths = o->absolute_paths != 0;
    out->keep_hours = o->keep_checkpoint_every_n_hours;
    snprintf(out->basename, sizeof(out->basename), "%s",
             s->basename ? s->basename : "");
}

static const char *busy_name(int policy)
{
    switch (policy) {
    case CKPT_BUSY_SKIP:
        return "CKPT_BUSY_SKIP";
    case CKPT_BUSY_WAIT:
        return "CKPT_BUSY_WAIT";
    case CKPT_BUSY_COALESCE:
        return "CKPT_BUSY_COALESCE";
    default:
        return "unknown";
    }
}

/* Option `i` (0 .. NUM_AGREED-1) of `a` as text into out[n]; its name. */
enum { NUM_AGREED = 6 };
static const char *describe(const ckpt__mpi_agreed *a, int i, char *out,
                            size_t n)
{
    switch (i) {
    case 0:
        snprintf(out, n, "'%s'", a->basename);
        return "basename";
    case 1:
        snprintf(out, n, "%d", a->pad_step_number);
        return "pad_step_number";
    case 2:
        snprintf(out, n, "%d", a->absolute_paths);
        return "absolute_paths";
    case 3:
        snprintf(out, n, "%d", a->max_to_keep);
        return "max_to_keep";
    case 4: /* every digit: two values apart print apart */
        snprintf(out, n, "%.17g", a->keep_hours);
        return "keep_checkpoint_every_n_hours";
    default:
        snprintf(out, n, "%s", busy_name(a->busy_policy));
        return "busy_policy";
    }
}

int ckpt__mpi_options_compare(const ckpt_mpi_saver *s,
                              const ckpt__mpi_agreed *root)
{
    ckpt__mpi_agreed mine;
    char here[CKPT_BASENAME_MAX + 8], there[CKPT_BASENAME_MAX + 8];
    if (!root->set || s->rank == 0)
        return 0;
    ckpt__mpi_options_pack(s, &mine);
    for (int i = 0; i < NUM_AGREED; i++) {
        const char *name = describe(&mine, i, here, sizeof(here));
        describe(root, i, there, sizeof(there));
        if (strcmp(here, there) != 0)
            return ckpt__error(
                CKPT_EINVAL,
                "mpi saver %s: %s is %s on this rank but %s on rank 0; "
                "basename, pad_step_number, absolute_paths, max_to_keep, "
                "keep_checkpoint_every_n_hours and busy_policy must be the "
                "same on every rank",
                s->ds.dir, name, here, there);
    }
    return 0;
}
