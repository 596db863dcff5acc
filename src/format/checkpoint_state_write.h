/* format/checkpoint_state_write.h - writing the state file while knowing
 * whether the one on disk was replaced (the saver's rollback needs it).
 * Not installed. */
#ifndef CKPT_FORMAT_CHECKPOINT_STATE_WRITE_H
#define CKPT_FORMAT_CHECKPOINT_STATE_WRITE_H

#include "ckpt/state.h"

/* ckpt_state_write; *replaced (may be NULL) is 1 once the new file was
 * renamed into place (a failure after that, the directory sync, may leave
 * it there), 0 when the state file on disk is as it was. */
int ckpt__state_write(const ckpt_fs *fs, const char *dir, const ckpt_state *st,
                      int *replaced);

#endif
