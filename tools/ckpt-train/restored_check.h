/* tools/ckpt-train/restored_check.h - the hook that refuses a restored
 * state no run of ckpt-train can have written (a reading position out of
 * range, a non-finite weight, a beta power of 1), first in the hook list:
 * its after_create_session runs right after the restore and before the
 * checkpoint hook's, whose initial save would otherwise store that state
 * as a new checkpoint (and, with --keep, delete an older good one for
 * it). */
#ifndef CKPT_TRAIN_RESTORED_CHECK_H
#define CKPT_TRAIN_RESTORED_CHECK_H

#include "data.h"
#include "model.h"

#include "ckpt.h"

typedef struct restored_check {
    const dataset *data; /* the position the session restores into */
    const mlp *model;    /* the model it restores into */
    /* Appended to the position's tensor names in the message ("/rank-1"
     * for a distributed run's per-rank values; "" otherwise). */
    char suffix[32];
    /* Distributed: whether `ok` holds on every rank (collective; every
     * rank reaches the hook, the restore before it having been agreed).
     * NULL: this process alone. */
    int (*all_ok)(int ok, void *payload);
    void *all_ok_payload;
    /* Optional, checked first: whether the restore left the position
     * whole (0), or -1 with what is missing in why[0..why_n). Its payload
     * is all_ok_payload. */
    int (*complete)(char *why, size_t why_n, void *payload);
} restored_check;

/* The hook over `c` (borrowed; it outlives the session). Its
 * after_create_session fails with CKPT_ECORRUPT and says what is wrong
 * (the session adds the checkpoint restored). A fresh start passes. */
ckpt_hook restored_check_hook(restored_check *c);

#endif
