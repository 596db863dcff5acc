/* tools/ckpt-train/make_dirs.h - creating the checkpoint directory. */
#ifndef CKPT_TRAIN_MAKE_DIRS_H
#define CKPT_TRAIN_MAKE_DIRS_H

/* train_make_dirs' failure to make a level durable (ckpt_fs_sync_entry):
 * the library's last error tells why. */
#define TRAIN_MAKE_DIRS_SYNC (-2)

/* mkdir -p `path`: each level it creates, and the last level whether it
 * was created now or by an earlier run, made durable in its parent. 0, -1
 * with errno (ENOTDIR when a file of that name is no directory), or
 * TRAIN_MAKE_DIRS_SYNC. */
int train_make_dirs(const char *path);

/* After train_make_dirs failed with `rc`: "ckpt-train: cannot create PATH:
 * <errno's text, or the library's message>" on stderr, PATH with control
 * bytes as \xHH (ckpt_text_printable). */
void train_make_dirs_report(const char *path, int rc);

#endif
