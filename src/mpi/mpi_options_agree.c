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

#define ALIKE                                                                  \
    "; basename, pad_step_number, absolute_paths, max_to_keep, "               \
    "keep_checkpoint_every_n_hours and busy_policy must be the same on "       \
    "every rank"

int ckpt__mpi_options_compare(const ckpt_mpi_saver *s,
                              const ckpt__mpi_agreed *root)
{
    ckpt__mpi_agreed mine;
    const char *dir = s->ds.dir;
    if (!root->set || s->rank == 0)
        return 0;
    ckpt__mpi_options_pack(s, &mine);
    if (strcmp(mine.basename, root->basename) != 0)
        return ckpt__error(CKPT_EINVAL,
                           "mpi saver %s: basename is '%s' on this rank but "
                           "'%s' on rank 0" ALIKE,
                           dir, mine.basename, root->basename);
    if (mine.pad_step_number != root->pad_step_number)
        return ckpt__error(CKPT_EINVAL,
                           "mpi saver %s: pad_step_number is %d on this rank "
                           "but %d on rank 0" ALIKE,
                           dir, mine.pad_step_number, root->pad_step_number);
    if (mine.absolute_paths != root->absolute_paths)
        return ckpt__error(CKPT_EINVAL,
                           "mpi saver %s: absolute_paths is %d on this rank "
                           "but %d on rank 0" ALIKE,
                           dir, mine.absolute_paths, root->absolute_paths);
    if (mine.max_to_keep != root->max_to_keep)
        return ckpt__error(CKPT_EINVAL,
                           "mpi saver %s: max_to_keep is %d on this rank but "
                           "%d on rank 0" ALIKE,
                           dir, mine.max_to_keep, root->max_to_keep);
    if (mine.keep_hours != root->keep_hours)
        return ckpt__error(CKPT_EINVAL,
                           "mpi saver %s: keep_checkpoint_every_n_hours is %g "
                           "on this rank but %g on rank 0" ALIKE,
                           dir, mine.keep_hours, root->keep_hours);
    if (mine.busy_policy != root->busy_policy)
        return ckpt__error(CKPT_EINVAL,
                           "mpi saver %s: busy_policy is %s on this rank but "
                           "%s on rank 0" ALIKE,
                           dir, busy_name(mine.busy_policy),
                           busy_name(root->busy_policy));
    return 0;
}
