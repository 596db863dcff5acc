/* tests/io/aligned_fs.h - a test file system that offers direct reads on
 * any file system: it forwards to ckpt_fs_posix(), and its open_read_direct
 * opens the file normally (buffered, so tmpfs and cached files work) but
 * then polices the contract of ckpt_fs.open_read_direct. A pread on such a
 * file whose buffer address, offset or length is not a multiple of
 * CKPT_DIRECT_ALIGN is refused with CKPT_EINVAL and counted as a
 * violation. Direct preads, the bytes they return, opens and files still
 * open are counted with atomics (the reads come from reader threads), and
 * the Nth direct pread can be made to fail with CKPT_EIO and a message
 * naming the file (or one of the test's, or none: fail_text). It offers preadv
 * (forwarded to POSIX) on files opened by open_read only. It names no device
 * (device_id NULL), so every read of 16 pieces or more probes unless a test
 * sets a device_id. */
#ifndef CKPT_TESTS_IO_ALIGNED_FS_H
#define CKPT_TESTS_IO_ALIGNED_FS_H

#include "support/fs_forward.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

typedef struct aligned_fs {
    ckpt_fs_forward fwd;         /* hand &fwd.fs to the library */
    atomic_ullong direct_opens;  /* successful open_read_direct calls */
    atomic_ullong direct_preads; /* preads on direct files (incl. failed) */
    atomic_ullong direct_bytes;  /* bytes those preads returned */
    atomic_ullong other_preads;  /* preads on files opened by open_read */
    atomic_ullong other_preadvs; /* preadvs on them (the cold path's) */
    atomic_ullong other_bytes;   /* bytes both returned */
    atomic_ullong violations;    /* unaligned direct preads */
    atomic_llong open_files;     /* opened and not yet closed */
    atomic_ullong fail_at;       /* 1-based direct pread to fail; 0: none */
    atomic_ullong injected;      /* failures injected */
    atomic_int decline;          /* open_read_direct answers CKPT_ENOTSUP */
    const char *fail_text;   /* NULL: the injected failure's message names the
                                file; "": it sets none; else this message
                                (set before the read that is to fail) */
    pthread_t failed_thread; /* the thread of the last injected fault */
} aligned_fs;

/* Set up `a` with every counter 0. `version` 1 gives a table of version 1
 * that still holds open_read_direct (the library must not use it);
 * CKPT_FS_VERSION the current one. */
void aligned_fs_init(aligned_fs *a, int version);

/* Fail the `n`th (1-based, counted from now) direct pread with CKPT_EIO and
 * a message "aligned fs: injected EIO at direct pread <n> of <path>";
 * 0 disarms. Resets direct_preads. */
void aligned_fs_fail_nth(aligned_fs *a, uint64_t n);

/* Reset the counters (not the files open). */
void aligned_fs_reset(aligned_fs *a);

#endif
