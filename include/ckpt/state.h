/* ckpt/state.h - the `checkpoint` state file of a checkpoint directory:
 * TensorFlow's CheckpointState message in protobuf text format.
 *
 * NULL arguments: a function returning int rejects a NULL pointer it needs
 * with CKPT_EINVAL ("<function>: <argument> is NULL"); pointers documented
 * as optional may be NULL; ckpt_state_dispose ignores NULL. */
#ifndef CKPT_STATE_H
#define CKPT_STATE_H

#include "io.h"

CKPT_BEGIN_DECL

/** Default name of the state file inside a checkpoint directory. */
#define CKPT_STATE_FILENAME "checkpoint"

/** CheckpointState. Paths are kept exactly as stored (relative or absolute);
 *  ckpt_state_resolve() joins a relative one with the directory. */
typedef struct ckpt_state {
    char *model_checkpoint_path; /**< newest checkpoint prefix */
    char **all_paths; /**< all_model_checkpoint_paths, oldest first */
    size_t num_paths;
    double *timestamps;              /**< all_model_checkpoint_timestamps */
    size_t num_timestamps;           /**< 0 or num_paths */
    double last_preserved_timestamp; /**< 0 when absent */
} ckpt_state;

/* clang-format off */
#define CKPT_STATE_INIT {NULL, NULL, 0, NULL, 0, 0.0}
/* clang-format on */

/** Release the memory of `st` and reset it to empty; NULL is ignored. */
CKPT_EXTERN(void) ckpt_state_dispose(ckpt_state *st);

/** Parse text-format `text` (`len` bytes) into `out` (which must be empty).
 *  Accepts what TensorFlow's text parser accepts for this message: any
 *  field order, comments, quoted strings with escapes, adjacent string
 *  concatenation, inf/nan. `filename` only names the file in errors.
 *  Timestamps whose count differs from the paths' (a path line deleted by
 *  hand) are dropped: num_timestamps is then 0.
 *  @return 0, CKPT_ECORRUPT (malformed text, unknown field, missing
 *          model_checkpoint_path) or CKPT_ENOMEM */
CKPT_EXTERN(int)
ckpt_state_parse(ckpt_state *out, const char *text, size_t len,
                 const char *filename);

/** Text exactly as TensorFlow writes it (fields in number order, one per
 *  line, defaults omitted, doubles in shortest round-trip form), appended
 *  to `out`. @return 0, CKPT_EINVAL (no model path, count mismatch) */
CKPT_EXTERN(int) ckpt_state_format(ckpt_buf *out, const ckpt_state *st);

/** The largest state file ckpt_state_read accepts (16 MiB): TensorFlow's
 *  are a few hundred bytes per listed checkpoint. */
#define CKPT_STATE_MAX_SIZE ((uint64_t)16 << 20)

/** Read and parse `<dir>/checkpoint`. The file must be a regular file of at
 *  most CKPT_STATE_MAX_SIZE bytes: the POSIX file system refuses a FIFO,
 *  device or directory (CKPT_EIO) without blocking, and a larger file is
 *  refused (CKPT_ECORRUPT) without reading it.
 *  @return 0, CKPT_ENOTFOUND (no state file), CKPT_ECORRUPT, CKPT_EIO */
CKPT_EXTERN(int)
ckpt_state_read(ckpt_state *out, const ckpt_fs *fs, const char *dir);

/** Replace `<dir>/checkpoint` atomically and durably (temp file, fsync,
 *  rename, directory fsync). Text larger than CKPT_STATE_MAX_SIZE, which
 *  ckpt_state_read would refuse, is not written: CKPT_EINVAL naming both
 *  sizes, the file on disk left as it was. */
CKPT_EXTERN(int)
ckpt_state_write(const ckpt_fs *fs, const char *dir, const ckpt_state *st);

/** Join `path` with `dir` unless it is absolute, into `out` (replacing). */
CKPT_EXTERN(int)
ckpt_state_resolve(ckpt_buf *out, const char *dir, const char *path);

/** The latest checkpoint prefix of `dir`: model_checkpoint_path resolved,
 *  provided `<prefix>.index` exists; otherwise the newest entry of
 *  all_model_checkpoint_paths whose index exists. A path no file can have
 *  (a name too long, symbolic links that loop) counts as missing.
 *  @return 0, or CKPT_ENOTFOUND (no state file, an unparsable one, as
 *          TensorFlow ignores it: the message gives the parse error; or no
 *          listed checkpoint has its index), CKPT_EIO */
CKPT_EXTERN(int)
ckpt_latest_checkpoint(ckpt_buf *out, const ckpt_fs *fs, const char *dir);

/** What ckpt_latest_checkpoint chooses, from the state `st` the caller
 *  read already (ckpt_state_read of `dir`), without reading the state file
 *  again: a caller that shows both the list and the latest (`ckpt ls`)
 *  sees one state file, even when a save replaces it in between. Each
 *  candidate's `<prefix>.index` is looked up on `fs` (NULL: POSIX).
 *  @return 0, CKPT_ENOTFOUND (no listed checkpoint has its index),
 *          CKPT_EINVAL, CKPT_EIO */
CKPT_EXTERN(int)
ckpt_state_latest(ckpt_buf *out, const ckpt_fs *fs, const char *dir,
                  const ckpt_state *st);

CKPT_END_DECL

#endif
