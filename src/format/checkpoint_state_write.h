/* format/checkpoint_state_write.h - writing the state file for the saver:
 * knowing whether the one on disk was replaced (its rollback needs it), and
 * timestamps formatted once and reused (a saver keeping thousands of
 * checkpoints would otherwise format every one of them again at each save).
 * Not installed. */
#ifndef CKPT_FORMAT_CHECKPOINT_STATE_WRITE_H
#define CKPT_FORMAT_CHECKPOINT_STATE_WRITE_H

#include "ckpt/state.h"

/* Room for a double as the state file writes it (Python's repr, at most
 * 24 characters) and its NUL. */
#define CKPT__STATE_DOUBLE_MAX 32

/* A double's text as the state file writes it, NUL-terminated. */
typedef struct ckpt__state_double {
    char text[CKPT__STATE_DOUBLE_MAX];
} ckpt__state_double;

/* Format `v` into `out` exactly as ckpt_state_format writes a timestamp.
 * 0 or CKPT_ENOMEM (no "C" locale). */
int ckpt__state_double_format(ckpt__state_double *out, double v);

/* ckpt_state_format, the timestamps taken from `texts` (st->num_timestamps
 * of them, each ckpt__state_double_format of st->timestamps[i]; NULL:
 * formatted now). last_preserved_timestamp is always formatted now. */
int ckpt__state_format_cached(ckpt_buf *out, const ckpt_state *st,
                              const ckpt__state_double *texts);

/* ckpt_state_write, the timestamps' text from `texts` (as
 * ckpt__state_format_cached; may be NULL); *replaced (may be NULL) is 1
 * once the new file was renamed into place (a failure after that, the
 * directory sync, may leave it there), 0 when the state file on disk is as
 * it was. */
int ckpt__state_write(const ckpt_fs *fs, const char *dir, const ckpt_state *st,
                      const ckpt__state_double *texts, int *replaced);

#endif
