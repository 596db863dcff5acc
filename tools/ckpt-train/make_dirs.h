/* tools/ckpt-train/make_dirs.h - creating the checkpoint directory. */
#ifndef CKPT_TRAIN_MAKE_DIRS_H
#define CKPT_TRAIN_MAKE_DIRS_H

/* mkdir -p `path`: each level it creates, and the last level whether it
 * was created now or by an earlier run, made durable in its parent. 0, or
 * -1 with errno (ENOTDIR when a file of that name is no directory). */
int train_make_dirs(const char *path);

/* After train_make_dirs failed: "ckpt-train: cannot create PATH: <errno's
 * text>" on stderr, PATH with control bytes as \xHH (ckpt_text_printable). */
void train_make_dirs_report(const char *path);

#endif
