/* io/fs_internal.h - thin helpers the other layers use to call a ckpt_fs:
 * one wrapper per method (calling through `fs`, which must not be NULL; use
 * ckpt_fs_or_default() first), quiet variants for cleanup paths that keep
 * the error being reported, existence checks, and unique temporary names.
 * Not installed.
 *
 * Every method of a ckpt_fs is meant to set the last error itself. When a
 * method fails without doing so (the last error's code differs from the
 * one returned), the wrapper records "<op> <path>: <description>" so the
 * message still names the operation and, where it knows it, the file. */
#ifndef CKPT_IO_FS_INTERNAL_H
#define CKPT_IO_FS_INTERNAL_H

#include "ckpt/io.h"
#include "common/internal.h"

/* A caller's ckpt_fs before use (`what` names where it was given, e.g.
 * "saver options: fs"): NULL (the default) passes; otherwise its version
 * must be 1..CKPT_FS_VERSION (CKPT_EVERSION) and every member not marked
 * optional set (CKPT_EINVAL naming the member). */
int ckpt__fs_check(const ckpt_fs *fs, const char *what);

int ckpt__fs_open_write(const ckpt_fs *fs, ckpt_file **out, const char *path,
                        int flags);
int ckpt__fs_open_read(const ckpt_fs *fs, ckpt_file **out, const char *path);
/* The end of the POSIX file system's message refusing to read a path that
 * is not a regular file (a FIFO, directory or device, or symbolic links in
 * a loop): never opened, so a FIFO cannot block the reader. */
#define CKPT__NOT_REGULAR_FILE "not a regular file; refused"
/* ckpt__fs_open_read of one of a checkpoint's own files (its index or a
 * data file): one refused as not a regular file stands where the
 * checkpoint's file should, a damaged checkpoint: CKPT_ECORRUPT, the
 * message unchanged. */
int ckpt__fs_open_read_part(const ckpt_fs *fs, ckpt_file **out,
                            const char *path);
/* CKPT_ENOTSUP when `fs` has no open_read_direct (version < 2 or NULL) or
 * the file system refuses O_DIRECT for `path`. */
int ckpt__fs_open_read_direct(const ckpt_fs *fs, ckpt_file **out,
                              const char *path);
/* CKPT_ENOTSUP when `fs` has no device_id (version < 3 or NULL). */
int ckpt__fs_device_id(const ckpt_fs *fs, const char *path, uint64_t *id);
/* write, pread, preadv, size, sync and close of the file `f` opened as
 * `path` (NULL: not known), which their messages name: a method's own
 * message is kept, prefixed with "<op> <path>: " unless it names the path
 * already; a method that sets none gets "<op> <path>: <description>". */
int ckpt__fs_write(const ckpt_fs *fs, ckpt_file *f, const char *path,
                   const void *buf, size_t n);
int ckpt__fs_pread(const ckpt_fs *fs, ckpt_file *f, const char *path, void *buf,
                   size_t n, uint64_t offset, size_t *nread);
/* ckpt_fs.preadv, or one pread per buffer (stopping at a short one) when
 * `fs` does not offer it (version < 4 or NULL). */
int ckpt__fs_preadv(const ckpt_fs *fs, ckpt_file *f, const char *path,
                    const ckpt_iovec *iov, int iovcnt, uint64_t offset,
                    size_t *nread);
/* How far the kernel reads ahead on the block device that holds `path`
 * (its read_ahead_kb in sysfs; a partition's disk), or -1 where that is
 * not known (no such file, not a block device, no sysfs). POSIX only. */
long ckpt__posix_read_ahead_kb(const char *path);
/* 1 when the POSIX file system found O_DIRECT writes refused (and wrote
 * through the page cache instead) on the device that holds `path`, in
 * this process; 0 otherwise. */
int ckpt__posix_direct_refused(const char *path);
/* `fd` itself when it is not 0, 1 or 2 (or negative); otherwise a
 * close-on-exec duplicate >= 3, `fd` closed. A process started with its
 * standard descriptors closed would otherwise get a file of ours there,
 * and its next printf or log line would be written into that file.
 * Returns the descriptor, or -1 with errno set (`fd` closed). POSIX only. */
int ckpt__posix_fd_off_stdio(int fd);
/* An in-memory file (memfd named `name`, close-on-exec, off 0-2) holding
 * `bytes` of a fixed pattern, written into `buf` (the caller's memory, at
 * least `bytes`) on the way: its descriptor, or -1 where it cannot be made
 * (no memfd, no descriptor left, a file-size limit). For the probes of the
 * kernel's copy out of the page cache (io/probe_file.c). */
int ckpt__probe_file(const char *name, uint8_t *buf, size_t bytes);
int ckpt__fs_size(const ckpt_fs *fs, ckpt_file *f, const char *path,
                  uint64_t *out);
int ckpt__fs_sync(const ckpt_fs *fs, ckpt_file *f, const char *path);
/* Close `f`; NULL is a no-op returning 0. */
int ckpt__fs_close(const ckpt_fs *fs, ckpt_file *f, const char *path);
/* Make a file written in full durable and close it: sync `*f`, then close
 * it, *f NULL from the close on, whatever it returns (after a failed sync
 * *f stays open, for the caller's cleanup). 0 or the first error. */
int ckpt__fs_sync_close(const ckpt_fs *fs, ckpt_file **f, const char *path);
int ckpt__fs_rename(const ckpt_fs *fs, const char *from, const char *to);
/* ckpt_fs_write_file_atomic telling whether `path` was replaced: *replaced
 * (may be NULL) is 1 once the rename succeeded (a failure after it, the
 * directory sync, leaves the new content in place, maybe not durable), 0
 * when the failure came before it and `path` is as it was. */
int ckpt__fs_write_file_atomic(const ckpt_fs *fs, const char *path,
                               const void *data, size_t n, int *replaced);
/* A second name `to` for the file `from` (ckpt_fs.link); CKPT_ENOTSUP
 * when `fs` does not offer it (version < 5 or NULL). */
int ckpt__fs_link(const ckpt_fs *fs, const char *from, const char *to);
int ckpt__fs_remove(const ckpt_fs *fs, const char *path);
int ckpt__fs_mkdir(const ckpt_fs *fs, const char *path);
int ckpt__fs_sync_dir(const ckpt_fs *fs, const char *path);
int ckpt__fs_list(const ckpt_fs *fs, const char *path, ckpt_dir_cb cb,
                  void *cb_payload);
int ckpt__fs_stat(const ckpt_fs *fs, const char *path, uint64_t *size,
                  double *mtime);

/* ckpt_fs_read_file refusing a file of more than `max` bytes (by the size
 * it reports, or by what it yields when it grows while read) with
 * CKPT_ECORRUPT, "<path>: N bytes or more, larger than the M bytes this
 * file can need", before reading more than `max` + 512 bytes of it. */
int ckpt__fs_read_file_max(ckpt_buf *out, const ckpt_fs *fs, const char *path,
                           uint64_t max);

/* For cleanup after a failure: close `f` (NULL is ignored) or remove `path`
 * ignoring any error and leaving the thread's last error as it was. */
void ckpt__fs_close_quiet(const ckpt_fs *fs, ckpt_file *f);
void ckpt__fs_remove_quiet(const ckpt_fs *fs, const char *path);

/* 1 if `path` exists, 0 if not (the last error is then left as it was),
 * or a negative ckpt_error_code when stat fails otherwise. */
int ckpt__fs_exists(const ckpt_fs *fs, const char *path);
/* As ckpt__fs_exists, but 1 also for a directory entry that names nothing
 * (a symbolic link to nothing, say a file system not mounted yet, or in a
 * loop), which stat reports as absent: what decides that a file is gone
 * before anything is deleted or forgotten for it. Told apart only through
 * a file system whose stat is the POSIX one (paths are the operating
 * system's); through another, as ckpt__fs_exists. */
int ckpt__fs_entry_exists(const ckpt_fs *fs, const char *path);

/* A fresh name next to `final_path` for a file that will be renamed onto
 * it: "<final_path>.<tag><16 random hex digits>" into `out` (replacing).
 * The randomness comes from getrandom() or /dev/urandom; create the file
 * with CKPT_OPEN_EXCL and pick another name on CKPT_EEXISTS. */
int ckpt__fs_temp_name(ckpt_buf *out, const char *final_path, const char *tag);

/* Create a fresh temporary file for `final_path`: a name from
 * ckpt__fs_temp_name (into `tmp`) opened with CKPT_OPEN_EXCL | `flags`,
 * another name tried while one is taken (CKPT_EEXISTS), up to
 * CKPT__TEMP_TRIES names. 0 with *out open, else the error of the last
 * open and *out NULL: never 0 without a file. */
#define CKPT__TEMP_TRIES 8
int ckpt__fs_create_temp(const ckpt_fs *fs, ckpt_file **out, ckpt_buf *tmp,
                         const char *final_path, const char *tag, int flags);

#endif
