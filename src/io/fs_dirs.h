/* io/fs_dirs.h - creating directories durably through a ckpt_fs
 * (fs_dirs.c). Not installed. */
#ifndef CKPT_IO_FS_DIRS_H
#define CKPT_IO_FS_DIRS_H

#include "ckpt/io.h"

/* mkdir -p: create `dir` and every missing parent, each followed by a
 * sync_dir of its parent so the new entry is durable. An existing level is
 * synced in its parent as well (a crashed run may have created it), which
 * must succeed for `dir` itself and is tried for the levels above it; an
 * existing `dir` that is not a directory is CKPT_ENOTFOUND ("<dir> is not
 * a directory").
 * A sync_dir failing with CKPT_EACCES (a parent this process may not
 * read) is passed over at every level. Returns 0 or the error of the failing
 * mkdir or sync_dir (which names its directory). */
int ckpt__fs_make_dirs(const ckpt_fs *fs, const char *dir);

/* sync_dir of the directory holding `path`'s entry ("." for a name without
 * a '/'), so that an entry an earlier process created and never synced
 * survives a power cut. "a/." is "a"; for "." and ".." (and "a/..") the
 * entry is in "<path>/.." ("..", "../.."): the parent the kernel finds.
 * A directory reached through a symbolic link has its real parent (the
 * directory of its realpath()) synced too, when that is another one.
 * Nothing for "/" (no entry in a parent). 0 or the sync_dir's error. */
int ckpt__fs_sync_entry(const ckpt_fs *fs, const char *path);

#endif
