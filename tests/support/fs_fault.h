/* tests/support/fs_fault.h - a fault-injecting file system for tests, in
 * the testing library (ckpt_testing), not in libckpt: tests, fuzzers and
 * reliability tools link it; it is not installed.
 *
 * It wraps another ckpt_fs and forwards every call, counting operations.
 * It can fail the Nth matching operation once or from then on with a chosen
 * errno, make a failing write land part of its bytes first (a short write),
 * and simulate a power cut: drop every byte not yet fsynced and every
 * directory entry created, renamed or removed since its directory was last
 * fsynced (or a random part of all that). It can also record a trace of
 * the operations, and cut every pread short. Not thread-safe: use it from one
 * thread at a time. It offers no open_read_direct, so reads through it always
 * take the page-cache path (one thread). */
#ifndef CKPT_TESTS_SUPPORT_FS_FAULT_H
#define CKPT_TESTS_SUPPORT_FS_FAULT_H

#include "ckpt/io.h"

CKPT_BEGIN_DECL

/** Operations, as counted and matched by the fault file system. */
typedef enum ckpt_fs_op {
    CKPT_FS_OP_OPEN_WRITE = 0,
    CKPT_FS_OP_OPEN_READ,
    CKPT_FS_OP_WRITE,
    CKPT_FS_OP_PREAD,
    CKPT_FS_OP_SIZE,
    CKPT_FS_OP_SYNC,
    CKPT_FS_OP_CLOSE,
    CKPT_FS_OP_RENAME,
    CKPT_FS_OP_REMOVE,
    CKPT_FS_OP_MKDIR,
    CKPT_FS_OP_SYNC_DIR,
    CKPT_FS_OP_LIST,
    CKPT_FS_OP_STAT,
    CKPT_FS_OP_LINK,
    CKPT_FS_OP_COUNT
} ckpt_fs_op;

/** Bit for one operation in an op mask. */
#define CKPT_FS_OP_BIT(op) (1u << (op))
/** Every operation. */
#define CKPT_FS_OP_ALL ((1u << CKPT_FS_OP_COUNT) - 1u)
/** Operations that change the file system or its durability. */
#define CKPT_FS_OP_MUTATING                                                    \
    (CKPT_FS_OP_BIT(CKPT_FS_OP_OPEN_WRITE) |                                   \
     CKPT_FS_OP_BIT(CKPT_FS_OP_WRITE) | CKPT_FS_OP_BIT(CKPT_FS_OP_SYNC) |      \
     CKPT_FS_OP_BIT(CKPT_FS_OP_CLOSE) | CKPT_FS_OP_BIT(CKPT_FS_OP_RENAME) |    \
     CKPT_FS_OP_BIT(CKPT_FS_OP_REMOVE) | CKPT_FS_OP_BIT(CKPT_FS_OP_MKDIR) |    \
     CKPT_FS_OP_BIT(CKPT_FS_OP_SYNC_DIR) | CKPT_FS_OP_BIT(CKPT_FS_OP_LINK))

typedef struct ckpt_fs_fault ckpt_fs_fault;

/** Wrap `inner` (NULL: the POSIX file system). */
int ckpt_fs_fault_new(ckpt_fs_fault **out, const ckpt_fs *inner);

/** Free the wrapper (open files must be closed first); NULL is ignored. */
void ckpt_fs_fault_free(ckpt_fs_fault *ff);

/** The ckpt_fs to hand to the library; valid until ckpt_fs_fault_free(). */
const ckpt_fs *ckpt_fs_fault_fs(ckpt_fs_fault *ff);

/** Arm a fault: the `n`th (1-based) operation from now whose bit is in
 *  `op_mask` fails with `err` (an errno value such as EIO, ENOSPC, EDQUOT,
 *  EACCES, EXDEV), and with `persistent` every later matching operation too.
 *  A failing write first writes `partial_bytes` of its data (capped at its
 *  length), as a short write before the error would. Resets the count. */
void ckpt_fs_fault_fail(ckpt_fs_fault *ff, uint64_t n, unsigned op_mask,
                        int err, int persistent, size_t partial_bytes);

/** Make every later pread return at most `max_bytes` bytes (0: no cap),
 *  the short reads a caller must loop over (the POSIX one retries EINTR
 *  and short reads itself; a ckpt_fs may hand them on). */
void ckpt_fs_fault_short_reads(ckpt_fs_fault *ff, size_t max_bytes);

/** Disarm any fault (counting continues). */
void ckpt_fs_fault_clear(ckpt_fs_fault *ff);

/** Operations seen since creation or the last ckpt_fs_fault_reset_count()
 *  whose bit is in `op_mask`. */
uint64_t ckpt_fs_fault_count(const ckpt_fs_fault *ff, unsigned op_mask);

/** Reset the operation counters. */
void ckpt_fs_fault_reset_count(ckpt_fs_fault *ff);

/** Number of injected failures so far. */
uint64_t ckpt_fs_fault_injected(const ckpt_fs_fault *ff);

/** Simulate a power cut on the underlying file system: truncate every file
 *  written through this wrapper to its last fsynced length, and undo every
 *  creation, rename and removal not followed by a sync_dir of its directory
 *  (a removed file's content is restored). Files must be closed. */
int ckpt_fs_fault_drop_unsynced(ckpt_fs_fault *ff);

/** A power cut on a file system that makes every directory change durable
 *  at once and in order: every creation, rename and removal is kept, and
 *  every file written through this wrapper is truncated to its last
 *  fsynced length. Files must be closed. */
int ckpt_fs_fault_drop_unsynced_data(ckpt_fs_fault *ff);

/** Like ckpt_fs_fault_drop_unsynced(), but a random one of the states a
 *  power cut may leave, chosen by `seed` (the same seed and history give
 *  the same state):
 *  - every unsynced write is kept or lost on its own, so a later write may
 *    survive an earlier one (the gap then reads as zeros); bytes written
 *    before the file's last successful sync are always kept;
 *  - every creation, rename and removal not yet made durable by sync_dir
 *    is kept or undone on its own, except that a change is always kept
 *    when a later kept change names the same path (changes to one entry
 *    reach the disk in order). Files must be closed. */
int ckpt_fs_fault_drop_unsynced_random(ckpt_fs_fault *ff, uint64_t seed);

/** One operation recorded by the trace. */
typedef struct ckpt_fs_fault_event {
    int op;           /**< a ckpt_fs_op */
    const char *path; /**< the path (for file methods: as opened) */
    const char *to;   /**< rename: the destination; else NULL */
    uint64_t bytes;   /**< write: bytes asked for; else 0 */
    int injected;     /**< 1 when the armed fault failed it */
} ckpt_fs_fault_event;

/** Start recording every later operation whose bit is in `op_mask`,
 *  discarding an earlier trace; 0 stops recording (the trace is kept).
 *  Events are dropped, never failing the operation, when memory runs
 *  out. */
void ckpt_fs_fault_trace(ckpt_fs_fault *ff, unsigned op_mask);

/** Number of recorded events. */
size_t ckpt_fs_fault_trace_size(const ckpt_fs_fault *ff);

/** Recorded event `i` (0 = oldest), or NULL when i >= size; valid until
 *  the next ckpt_fs_fault_trace() or ckpt_fs_fault_free(). */
const ckpt_fs_fault_event *ckpt_fs_fault_trace_event(const ckpt_fs_fault *ff,
                                                     size_t i);

/** Name of an operation, e.g. "rename". */
const char *ckpt_fs_op_name(int op);

CKPT_END_DECL

#endif
