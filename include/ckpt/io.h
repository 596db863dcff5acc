/* ckpt/io.h - the file-system interface every read and write of the
 * library goes through, and the POSIX implementation.
 *
 * A ckpt_fs is a table of function pointers plus a payload, in the manner of
 * SQLite's VFS: the library's tests wrap the real one to inject faults (with
 * a fault file system of their own, not part of the library) and users may
 * supply their own. Paths are ordinary '/'-separated strings.
 * Every method returns 0 or a negative ckpt_error_code and, on failure, sets
 * the thread's last error with a message naming the operation and path.
 *
 * NULL arguments: a function returning int rejects a NULL pointer it needs
 * with CKPT_EINVAL ("<function>: <argument> is NULL"); pointers documented
 * as optional may be NULL; ckpt_fs_or_default(NULL) is the POSIX file
 * system. */
#ifndef CKPT_IO_H
#define CKPT_IO_H

#include "common.h"
#include "errors.h" /* the codes and ckpt_error_last() of every call */

CKPT_BEGIN_DECL

/** An open file; its layout belongs to the ckpt_fs that opened it. */
typedef struct ckpt_file ckpt_file;

/** Flags for ckpt_fs.open_write. */
enum ckpt_open_flags {
    CKPT_OPEN_EXCL = 1,  /**< fail with CKPT_EEXISTS if the path exists; never
                              follow a symlink at the path */
    CKPT_OPEN_TRUNC = 2, /**< truncate an existing file (ignored with EXCL) */
    CKPT_OPEN_DIRECT = 4 /**< hint: bypass the page cache where possible */
};

/** Values of the `direct_io` option of every options struct: 0 is the
 *  default, on where the file system allows it (ckpt_saver_options,
 *  ckpt_bundle_writer_options). */
enum ckpt_direct_io {
    CKPT_DIRECT_IO_DEFAULT = 0, /**< on where possible */
    CKPT_DIRECT_IO_ON = 1,      /**< write large aligned parts with O_DIRECT */
    CKPT_DIRECT_IO_OFF = -1     /**< always through the page cache */
};

/** Called once per directory entry by ckpt_fs.list ("." and ".." are not
 *  reported). Return non-zero to stop listing; that value is returned. */
typedef int (*ckpt_dir_cb)(const char *name, void *payload);

/** Current version of struct ckpt_fs. Version 2 added open_read_direct,
 *  version 3 device_id, version 4 preadv, version 5 link; the library
 *  reads each member only from a ckpt_fs of the version that added it or
 *  later, so a table filled in for an older version keeps working. */
#define CKPT_FS_VERSION 5

/** One destination of ckpt_fs.preadv: `len` bytes at `base`. */
typedef struct ckpt_iovec {
    void *base;
    size_t len;
} ckpt_iovec;

/** Alignment of buffers, offsets and lengths for reads of a file opened
 *  with ckpt_fs.open_read_direct (a multiple of every common block size). */
#define CKPT_DIRECT_ALIGN 4096

/** A file system. Members may be NULL only where noted. The saver, the
 *  session, the bundle reader and writer and the state file's functions
 *  check a ckpt_fs given to them: a version outside 1..CKPT_FS_VERSION is
 *  CKPT_EVERSION, a required member left NULL CKPT_EINVAL naming it.
 *  A method returns 0 or a negative ckpt_error_code (not a byte count, as
 *  POSIX write() does: any positive value is taken for a failure, recorded
 *  as CKPT_EIO naming the method and the file; `list` alone passes its
 *  callback's non-zero value on). To say what failed,
 *  record the message with ckpt_error_set before returning: the library
 *  passes it on prefixed with "<method> <path>: " ("rename <from> to
 *  <to>: ", "link <from> to <to>: ") unless it names the path (a rename's
 *  and a link's both paths) already; the methods on an open file (pread,
 *  preadv, size, write, sync and close), which are not given the file's
 *  path, are named with the path it was opened with. Without a message
 *  it records "<method> <path>: <ckpt_strerror>". */
typedef struct ckpt_fs {
    int version;   /**< CKPT_FS_VERSION */
    void *payload; /**< passed as the last argument of every method */

    /** Create or open `path` for writing at offset 0. */
    int (*open_write)(ckpt_file **out, const char *path, int flags,
                      void *payload);
    /** Open an existing `path` for reading; CKPT_ENOTFOUND if missing. */
    int (*open_read)(ckpt_file **out, const char *path, void *payload);
    /** Append all `n` bytes (retrying short writes and EINTR). */
    int (*write)(ckpt_file *f, const void *buf, size_t n, void *payload);
    /** Read up to `n` bytes at `offset`; `*nread` < n only at end of file. */
    int (*pread)(ckpt_file *f, void *buf, size_t n, uint64_t offset,
                 size_t *nread, void *payload);
    /** Size of the open file in bytes. */
    int (*size)(ckpt_file *f, uint64_t *out, void *payload);
    /** Make everything written so far durable (fsync/fdatasync). */
    int (*sync)(ckpt_file *f, void *payload);
    /** Close and free `f` (even when it fails). */
    int (*close)(ckpt_file *f, void *payload);
    /** Atomically rename `from` to `to`, replacing `to`. */
    int (*rename)(const char *from, const char *to, void *payload);
    /** Remove a file; CKPT_ENOTFOUND if it does not exist. */
    int (*remove)(const char *path, void *payload);
    /** Create a directory; CKPT_EEXISTS if it exists. */
    int (*mkdir)(const char *path, void *payload);
    /** Make the directory's entries (creations, renames) durable. */
    int (*sync_dir)(const char *path, void *payload);
    /** Report every entry of directory `path` to `cb`. */
    int (*list)(const char *path, ckpt_dir_cb cb, void *cb_payload,
                void *payload);
    /** Size of the regular file at `path`; CKPT_ENOTFOUND if it does not
     *  exist (the POSIX one: also when no file can have that name, too
     *  long or through symbolic links that loop, as a state file may name
     *  one). `out` may be NULL to test existence. Mtime in seconds since
     *  the epoch goes to `mtime_out` when not NULL. */
    int (*stat)(const char *path, uint64_t *out, double *mtime_out,
                void *payload);
    /** Optional (NULL: not offered). Open an existing `path` for reading
     *  around the page cache (O_DIRECT). `pread` on the file is then called
     *  only with buffers, offsets and lengths that are multiples of
     *  CKPT_DIRECT_ALIGN, from several threads at once, and may end short
     *  only at the end of the file. CKPT_ENOTSUP when the file system
     *  cannot do it, or declines because reading through the page cache
     *  would be faster (the POSIX one does when most of the file is cached
     *  already); callers then read through `open_read`. Offering it also
     *  says that `pread` may be called from several threads at once on a
     *  file opened with `open_read`: restores, checks and verify then read
     *  a data file through the page cache on two threads. A read of 8 MiB
     *  or more opens the file both ways, reads a few pieces each way (from
     *  several threads at once), and O_DIRECT reads the rest when it was
     *  clearly faster, with the checksum fused into the copy to the
     *  destination. Since version 2. */
    int (*open_read_direct)(ckpt_file **out, const char *path, void *payload);
    /** Optional (NULL: not offered). Set `*id` to a number naming the
     *  device (and the caches in front of it) that holds the file at
     *  `path`: files of this ckpt_fs with equal ids read alike. A read that
     *  measured whether O_DIRECT or the page cache is faster on one file
     *  (open_read_direct above) then lets later reads of files with the
     *  same id use that choice without measuring again, for a while
     *  (at most 60 s and 32 reads). Without it every such read measures.
     *  The POSIX file system gives the file's st_dev. Since version 3. */
    int (*device_id)(const char *path, uint64_t *id, void *payload);
    /** Optional (NULL: not offered). Read the consecutive file bytes from
     *  `offset` into the `iovcnt` buffers of `iov` in turn, as `pread`
     *  would into one buffer of their total size (`*nread` less than that
     *  total only at end of file), as one request: the POSIX file system
     *  calls preadv(2), so the kernel sizes its read-ahead by the whole
     *  request. Restores, checks and verify read a data file that is not
     *  in the page cache in requests of 32 MiB spanning several records
     *  (with the POSIX file system, where the device reads ahead less than
     *  4 MiB by itself); without preadv each record's part is a pread of
     *  its own. Like
     *  pread, it may be called from several threads at once on a file
     *  opened with open_read when open_read_direct is offered. Since
     *  version 4. */
    int (*preadv)(ckpt_file *f, const ckpt_iovec *iov, int iovcnt,
                  uint64_t offset, size_t *nread, void *payload);
    /** Optional (NULL: not offered). Give the existing file `from` the
     *  second name `to` in the same directory (a hard link; `to` does not
     *  exist), durable once the directory is synced; CKPT_ENOTSUP when
     *  this file system has no hard links. A save that replaces
     *  a checkpoint of the same name (a step saved again, CKPT_NO_STEP)
     *  first links the old one's files under a second name and names that
     *  in the state file while the new files are put in place, so a power
     *  cut at any moment leaves a complete checkpoint named. Without it
     *  (or when it returns CKPT_ENOTSUP) the old files are removed right
     *  before the renames, and a power cut in those few milliseconds
     *  leaves none of that name; any other failure (or of the directory
     *  sync after it) fails the save, the old checkpoint still named and
     *  whole. Since version 5. */
    int (*link)(const char *from, const char *to, void *payload);
} ckpt_fs;

/** The process-wide POSIX file system (open/write/fsync/rename/...).
 *  To change one method, copy the table and replace that member:
 *  `ckpt_fs mine = *ckpt_fs_posix(); mine.write = my_write;` (every method
 *  keeps the POSIX payload, so my_write reaches its own state some other
 *  way, e.g. a global, and calls ckpt_fs_posix()->write(f, buf, n,
 *  ckpt_fs_posix()->payload) to write). A wrapper with a payload of its
 *  own must instead forward every member it does not replace.
 *  A write past the file-size limit (RLIMIT_FSIZE) fails with EFBIG
 *  ("File too large", CKPT_EIO) instead of SIGXFSZ ending the process:
 *  each write() runs with SIGXFSZ blocked on the calling thread, and no
 *  signal disposition is changed (docs/threading.md). No descriptor it
 *  opens stays on 0, 1 or 2: in a process started with those closed, the
 *  process's own output never lands in a checkpoint file. */
CKPT_EXTERN(const ckpt_fs *) ckpt_fs_posix(void);

/** `fs` if not NULL, else ckpt_fs_posix(). */
CKPT_EXTERN(const ckpt_fs *) ckpt_fs_or_default(const ckpt_fs *fs);

/** Read the whole file at `path` into `out` (appended).
 *  @return 0, CKPT_ENOTFOUND, CKPT_EIO or CKPT_ENOMEM; CKPT_EINVAL or
 *  CKPT_EVERSION for a `fs` missing a required member or of an unknown
 *  version (as everywhere a ckpt_fs is given) */
CKPT_EXTERN(int)
ckpt_fs_read_file(ckpt_buf *out, const ckpt_fs *fs, const char *path);

/** Write `n` bytes to `path` crash-safely: a temporary file in the same
 *  directory created exclusively, written, fsynced, renamed over `path`,
 *  then the directory fsynced. On failure the temporary file is removed and
 *  `path` is unchanged. */
CKPT_EXTERN(int)
ckpt_fs_write_file_atomic(const ckpt_fs *fs, const char *path, const void *data,
                          size_t n);

/** Make the entry of `path` in its parent directory durable: sync_dir of
 *  the parent ("." for a name without a '/', "/" for "/x"; "a//b" and
 *  "a/b/" are "a/b"). A crash-safe write (ckpt_fs_write_file_atomic, a
 *  bundle writer, a saver) makes its files and their names durable, but
 *  not the entry of a directory made just before (mkdir): call this for
 *  that directory before writing into it. Nothing to do (0) for "" and
 *  "/", which have no parent; "." and ".." (and a path ending in one, "a/."
 *  being "a") have their entry in "<path>/..", the parent the kernel finds,
 *  and that is synced. A directory reached through a symbolic link ("link"
 *  or "link/." naming one) has its real entry in its real parent: the
 *  directory of its realpath() (the operating system's, whatever `fs`) is
 *  synced too when it is another than the parent above; a path the
 *  operating system cannot resolve has only that parent synced.
 *  @return 0, CKPT_EACCES (the parent cannot be opened to be synced: a
 *          directory this process may enter and write but not read; the
 *          saver passes it over), CKPT_ENOTFOUND or CKPT_EIO, the message
 *          naming the parent; CKPT_EINVAL or CKPT_EVERSION for a `fs`
 *          missing a required member or of an unknown version */
CKPT_EXTERN(int) ckpt_fs_sync_entry(const ckpt_fs *fs, const char *path);

CKPT_END_DECL

#endif
