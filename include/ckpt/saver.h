/* ckpt/saver.h - the saver: a set of variables saved to and restored from
 * one checkpoint directory, with TensorFlow's naming (<basename>-<step>),
 * the `checkpoint` state file, retention, and asynchronous saves taken from
 * a consistent snapshot.
 *
 * Commit order of every save: a note of the checkpoint in progress
 * ("checkpoint.pending", fsynced and renamed into place) first; then the
 * data files and then the index, each written under a temporary name,
 * fsynced, renamed into place and followed by a directory fsync; then the
 * state file is replaced atomically and durably, and only then are
 * checkpoints that retention no longer keeps deleted (every index first,
 * their removal made durable by one directory fsync before the data files
 * go), and the note removed. (The first save of a saver opened on more
 * than max_to_keep checkpoints trims that list before it writes: the
 * note, the state file without them, then their deletion; see
 * ckpt_saver_open.) A crash at any point leaves the previous latest
 * checkpoint readable and named (docs/format.md, section 9).
 *
 * Threads: a saver is used from one thread at a time (the training loop).
 * A call that drives it (save, save_async, poll, wait, close, the
 * restores, the mutation fence) made while another thread is inside one
 * returns CKPT_ESTATE saying so, and free is then refused; a saver may be
 * handed to another thread between calls. Async saves run on one
 * background writer thread the saver owns; completion callbacks and the
 * log callback are documented per member below. In a child made by fork()
 * (where that thread does not exist) every call on the parent's saver that
 * would save, wait or restore returns CKPT_ESTATE saying so.
 *
 * NULL arguments: a function returning int rejects a NULL pointer it needs
 * with CKPT_EINVAL ("<function>: <argument> is NULL"); pointers documented
 * as optional may be NULL; the others treat a NULL saver as empty (as each
 * says). */
#ifndef CKPT_SAVER_H
#define CKPT_SAVER_H

#include "clock.h"
#include "io.h"
#include "log.h"
#include "tensor.h"

CKPT_BEGIN_DECL

/* ---- variables ---------------------------------------------------------- */

/** Copy bytes [offset, offset + n) of a variable's value into `dst`; for
 *  memory the library cannot read directly (e.g. a device). 0 or an error
 *  (reported as CKPT_EUSER naming the variable, with the message the
 *  callback recorded with ckpt_error_set, if any). */
typedef int (*ckpt_var_read_fn)(void *dst, uint64_t offset, size_t n,
                                void *payload);
/** Store bytes [offset, offset + n) of a variable's value from `src`; 0 or
 *  an error, reported as for ckpt_var_read_fn. */
typedef int (*ckpt_var_write_fn)(const void *src, uint64_t offset, size_t n,
                                 void *payload);

/** A variable: a named tensor of a fixed-size dtype, in host byte order. */
typedef struct ckpt_var {
    const char *name; /**< checkpoint key (copied by add_var) */
    int dtype;        /**< a fixed-size ckpt_dtype */
    ckpt_shape shape;
    void *data;              /**< the caller's memory, or NULL when the
                                  callbacks below are given; it must stay
                                  valid while the saver is open, and after
                                  save_async unwritten and not freed until
                                  the snapshot completes (the mutation
                                  fence or the next saver call) */
    ckpt_var_read_fn read;   /**< used instead of `data` for saving */
    ckpt_var_write_fn write; /**< used instead of `data` for restoring (a
                                  variable with `read` and neither `data`
                                  nor `write` saves but cannot be
                                  restored: restore says so first) */
    void *payload;           /**< passed to read/write */
} ckpt_var;

/* ---- options ------------------------------------------------------------ */

/** What save_async does when the previous write is still running. */
typedef enum ckpt_busy_policy {
    CKPT_BUSY_SKIP = 0,    /**< count and log the trigger, return CKPT_EBUSY */
    CKPT_BUSY_WAIT = 1,    /**< wait for the write to end, then snapshot */
    CKPT_BUSY_COALESCE = 2 /**< keep at most one pending snapshot; a newer
                                trigger replaces a pending one */
} ckpt_busy_policy;

/** The outcome of one save, reported to `on_save_done`. */
typedef struct ckpt_save_result {
    uint64_t ticket;    /**< as returned by save_async (0 for a sync save) */
    int64_t step;       /**< the step the snapshot was taken at */
    const char *prefix; /**< the checkpoint prefix (borrowed) */
    int status;         /**< 0 when durable and named in the state file;
                             CKPT_ECANCELED when replaced by a newer
                             snapshot (coalesce); else the error */
    const char *error;  /**< message when status != 0 (borrowed) */
    double blocking_s;  /**< time the caller was blocked (snapshot) */
    double write_s;     /**< time from write start to durable commit */
    uint64_t bytes;     /**< bytes of data and index written */
} ckpt_save_result;

/** Called once per save outcome, on the thread that calls save, save_async,
 *  poll, wait, close or free (never on the writer thread). It may call the
 *  saver (save, wait, close...) but not free it: ckpt_saver_free from here is
 *  refused (logged at ERROR, on stderr when the saver has no log; the
 *  saver stays, to be freed afterwards).
 *  Outcomes come in the order they happen, not in ticket order: under
 *  COALESCE a pending snapshot replaced by a newer one is reported
 *  (CKPT_ECANCELED) as it is replaced, which may be before the write that
 *  was running when it was taken (a smaller ticket) is reported durable. */
typedef void (*ckpt_save_done_fn)(const ckpt_save_result *result,
                                  void *payload);

/** Version 2 added fence_from_start; a version-1 struct is accepted. */
#define CKPT_SAVER_OPTIONS_VERSION 2

/** Keep (and list in the state file) every checkpoint: TensorFlow's
 *  max_to_keep=0 or None. */
#define CKPT_KEEP_ALL (-1)

/** Saver options. Start from CKPT_SAVER_OPTIONS_INIT (or a zeroed struct
 *  with `version` set); 0 or NULL in every field means its default. A
 *  struct of an older version (1 .. CKPT_SAVER_OPTIONS_VERSION) is
 *  accepted; version 0 is CKPT_EVERSION naming the INIT macro. */
typedef struct ckpt_saver_options {
    unsigned int version;    /**< CKPT_SAVER_OPTIONS_VERSION */
    const ckpt_fs *fs;       /**< NULL: POSIX */
    const ckpt_clock *clock; /**< NULL: the system clock; also read on
                                  the writer thread (an async save's
                                  timestamp and durations): thread-safe */
    const char *basename;    /**< default "model.ckpt"; a file name of at
                                  most CKPT_BASENAME_MAX bytes (no '/', not
                                  "." or "..") */
    int max_to_keep;         /**< default (0) 5; CKPT_KEEP_ALL keeps all
                                  (TensorFlow's 0) */
    /** 0: none preserved. H > 0: a checkpoint retention would delete is
     *  kept on disk (dropped from the state file's list) when it was saved
     *  more than H hours after the last one kept, or at first after the
     *  schedule's start: the state file's last_preserved_timestamp, which
     *  the saver writes (its creation time until one is kept), so a
     *  restarted job goes on with the same schedule. Times are the wall
     *  clock's: one that went back before the last one kept (an NTP step)
     *  restarts the schedule at the save's time, and a checkpoint saved
     *  later than that time is not kept for it (B76). */
    double keep_checkpoint_every_n_hours;
    int pad_step_number; /**< zero-pad steps to 8 digits */
    int absolute_paths;  /**< write absolute paths in the state file
                              (default: relative, as TF2) */
    int busy_policy;     /**< a ckpt_busy_policy (default SKIP) */
    int direct_io;       /**< CKPT_DIRECT_IO_ON: write data with O_DIRECT
                              when possible, CKPT_DIRECT_IO_OFF: never;
                              0: default: the first staging-image writes
                              alternate the two, timed, then O_DIRECT
                              unless the page cache was clearly faster
                              or the file system refuses O_DIRECT (the
                              choice is logged at INFO) */
    ckpt_log_fn log;     /**< may be called from the writer thread,
                              where calls back into this saver (save,
                              wait, close, restore, free...) are
                              refused with CKPT_ESTATE; read-only calls
                              (metrics, latest) work;
                              NULL: a bare saver logs nothing (a
                              checkpoint hook or session that opens one
                              passes its own log, ckpt_log_stderr by
                              default); ckpt_log_stderr for stderr */
    void *log_payload;
    int log_level; /**< lowest level passed to `log`: CKPT_LOG_DEBUG,
                        _INFO, _WARN, _ERROR (log.h; 0: INFO);
                        CKPT_LOG_OFF: none */
    ckpt_save_done_fn on_save_done;
    void *on_save_done_payload;
    /** 1: the caller keeps the mutation-fence rule (see save_async) from
     *  the start, so every async save overlaps the caller's next reads,
     *  the first one included: a checkpoint hook's initial save at session
     *  start then costs the session's creation only the read callbacks and
     *  the small variables, and holds the values of that moment, provided
     *  nothing writes a variable before the first step's fence. The
     *  staging memory is then faulted in by those background copies
     *  rather than up front (ckpt_saver_reserve only maps it). A promise
     *  the library cannot check: a caller that then writes a large
     *  variable before a fence saves it torn (a monitored session whose
     *  loop has never called the fence warns once when a step ends over
     *  an open snapshot). Synchronous saves (ckpt_saver_save, the sync
     *  checkpoint hook) are complete copies either way.
     *  0 (default): overlapped from the first ckpt_saver_mutation_fence
     *  call on. (Version 2.) */
    int fence_from_start;
} ckpt_saver_options;

#define CKPT_SAVER_OPTIONS_INIT                                                \
    {                                                                          \
        CKPT_SAVER_OPTIONS_VERSION, NULL, NULL, NULL, 0, 0.0, 0, 0,            \
            CKPT_BUSY_SKIP, 0, NULL, NULL, 0, NULL, NULL, 0                    \
    }

/** Fill `opts` with the defaults of `version` (1 ..
 *  CKPT_SAVER_OPTIONS_VERSION). @return 0, CKPT_EINVAL (NULL) or
 *  CKPT_EVERSION */
CKPT_EXTERN(int)
ckpt_saver_options_init(ckpt_saver_options *opts, unsigned int version);

/** The longest basename a saver accepts: with "-<step>" (at most 21
 *  bytes), ".data-00000-of-00001" (20) and a temporary suffix (26) its
 *  files' names fit in the 255 bytes a file name may have. */
#define CKPT_BASENAME_MAX 188

/** Pass as `step` to save without a step suffix (prefix = basename).
 *  Each such save, like a step saved again, replaces the checkpoint of
 *  that name: the old one stays whole and named until the new data is
 *  durable, then is kept under a second name ("model.ckpt.replaced", or
 *  "model.ckpt.replaced-25" for a step) that the state file names while
 *  the new files are put in place, and deleted once the new one is named:
 *  a power cut at any moment leaves a complete checkpoint named. (A
 *  ckpt_fs without `link` has a window of a few milliseconds instead,
 *  when no checkpoint of that name exists.) Those second names are the
 *  saver's own: files (or a listed checkpoint) of that name in its
 *  directory are taken for a replacement cut short and deleted, with a
 *  warning, when that checkpoint is replaced; do not save or copy other
 *  checkpoints under them. Numbered steps never share a name. Three saves in a
 * row of one numbered step (a loop that does not advance the step it passes)
 * log a warning, once per saver. */
#define CKPT_NO_STEP INT64_MIN

/* ---- the saver ---------------------------------------------------------- */

typedef struct ckpt_saver ckpt_saver;

/** Open the checkpoint directory `dir` (which must exist) with `opts`
 *  (NULL: every default, as CKPT_SAVER_OPTIONS_INIT). Its own entry is
 *  first made durable in its parent (a sync_dir of the parent, "<dir>/.."
 *  for a `dir` of "." or ".." (a program run in its checkpoint directory;
 *  for a `dir` reached through a symbolic link, the link's parent and the
 *  real directory's parent, the directory of its realpath() at open, B79);
 *  the program,
 *  or an earlier run killed before syncing it, may have created it
 *  unsynced, and a power cut would take it away with every checkpoint
 *  saved in it); where that fails the open goes on, with a warning (none
 *  for a parent it may not read). If it already
 *  holds checkpoints (a restarted job) their list is recovered from the state
 *  file (made durable first), entries whose index is missing (or whose
 *  path no file can have: too long, symbolic links that loop) are dropped,
 *  an entry listed twice counts once (its last place whose index exists),
 *  also under two spellings of one path ("x", "./x", "sub/../x", or the
 *  directory's absolute path before it, resolved or as `dir` spells it:
 *  "/link/dir/x" for a `dir` "/link/dir" through a symbolic link; a path
 *  is compared as the operating system resolves the directory its files
 *  are in: "alias/x" for a link "alias" to `dir` is "x", "link/../x" is
 *  "x" only where "link/.." is `dir`), and the state file's latest
 *  (model_checkpoint_path), when the list leaves it out and its index
 *  exists, is listed last. The state file is then rewritten so (without what
 *  was dropped, the latest last); where it cannot be (a directory this process
 *  may read but not write: a read-only mount) the open goes on with a warning,
 *  to restore, and the next save writes it. Retention is not applied here: the
 *  first save trims the list to max_to_keep (deleting the oldest, in one pass,
 *  before it writes), so a saver opened only to restore deletes no checkpoint
 *  the state file names (as TensorFlow's). The latest the state file names is
 *  taken as the newest wherever its list puts it (moved last, with a warning,
 *  as TensorFlow lists it), so the trim never deletes it; a latest whose index
 *  is missing is not the latest and moves nothing. A listed path whose
 *  directory is this one, however spelt (absolute, "./x", through a symbolic
 *  link), is this directory's checkpoint and evicted as such, when it led here
 *  both at the open and at the eviction (a link changed between them does not
 *  make another directory's entry ours); one elsewhere (another directory, a
 *  subdirectory) is dropped from the list, never deleted. A checkpoint the list
 *  still names under another spelling is never deleted. Then what a crash
 *  during a save or a deletion leaves that nothing can read is removed:
 *  temporary files (names ending in ".tempstate" and hex digits, or
 *  "checkpoint.tmp" and hex digits), data files
 *  "<basename>-<step>.data-*" whose index is missing (after a directory
 *  fsync; left, with a warning, when it fails), index files
 *  "<basename>-<step>.index" the state file (read intact, or absent) does
 *  not name none of whose data files exist (they name data that does not
 *  exist), and the same of the second names of CKPT_NO_STEP
 *  ("<basename>.replaced-<step>", "<basename>.replaced": a replacement or
 *  its deletion cut short); and
 *  the complete
 *  checkpoints an interrupted save noted in "checkpoint.pending" (its own,
 *  before the state file named it; those retention evicted, before they
 *  were deleted) that the state file, read intact (or absent: a first
 *  save cut short), does not list. Nothing
 *  else: any other complete "<basename>-<step>" checkpoint the state file
 *  does not list (files put there, a note a power cut lost) is readable,
 *  so it is left in place (until a save of its step replaces it, which
 *  logs a warning naming it), never listed or deleted by retention, with a
 *  warning in the log (`ckpt ls` shows it as stray); no warning when
 *  keep_checkpoint_every_n_hours is set, whose kept checkpoints are
 *  unlisted ones.
 *  What cannot be removed (a directory of such a name) is logged and left.
 *  An unparsable state file is logged and treated as empty.
 *  One process at a time saves into a directory: on the POSIX file system
 *  the first saver of a process takes an exclusive flock() on it (a
 *  process's later savers share it and, while they do, remove no
 *  leftovers, which may be another saver's save in flight; the kernel
 *  drops it when the process ends), and a saver of another process gets
 *  CKPT_EBUSY, since its recovery would delete the first one's temporary
 *  files. Of the savers of one process sharing a directory, one saves
 *  there: the first to save holds it until it is freed, and another's
 *  save or save_async gets CKPT_EBUSY naming the directory (each writes
 *  the state file from its own list and would drop the other's
 *  checkpoints from it); so does, later, a saver opened before that
 *  first save, whose list is out of date: open a new one. The others may
 *  restore. A child made by fork() holds no part of the lock (its copy
 *  of the lock's descriptor is closed as it starts, so a child that
 *  outlives a killed parent does not keep the directory from the
 *  relaunch) and has no right to save there: its saver gets CKPT_EBUSY
 *  there. Read a
 *  directory another process saves into with ckpt_latest_checkpoint and
 *  the bundle reader.
 *  @return 0, CKPT_ENOTFOUND (no such directory, or not a directory:
 *          the saver does not create it, as TensorFlow's Saver does not;
 *          the checkpoint hook creates its own),
 *          CKPT_EBUSY (another process's saver holds it), CKPT_EINVAL,
 *          CKPT_EVERSION, or an I/O error */
CKPT_EXTERN(int)
ckpt_saver_open(ckpt_saver **out, const char *dir,
                const ckpt_saver_options *opts);

/** Register a variable (before the first save). Each variable needs
 *  memory of its own: two whose data overlap (one buffer under two names)
 *  are refused, naming both, by the first save, ckpt_saver_reserve and a
 *  restore (CKPT_EINVAL), as TensorFlow refuses one variable under two
 *  names; a variable of 0 bytes, or one with both callbacks, uses none.
 *  @return 0, CKPT_EINVAL (no name, bad shape, no data and no callbacks),
 *          CKPT_ENOTSUP (dtype), CKPT_EEXISTS (name), CKPT_ESTATE (after
 *          the first save) */
CKPT_EXTERN(int) ckpt_saver_add_var(ckpt_saver *s, const ckpt_var *var);

/** Whether the saver saves (and restores) a variable named `name` whose
 *  value lives at `data` (NULL: wherever it lives; a variable registered
 *  with callbacks only matches by name). The checkpoint hook asks it of
 *  an explicit or scaffold saver for the graph's global step, which names
 *  the checkpoints: a saver without it would restore step 0 and later
 *  write over the checkpoints of the steps it counts through again.
 *  @return 1 (it does), 0 (it does not), CKPT_EINVAL (NULL saver or
 *          name), CKPT_ENOTSUP (a wrapped saver whose ops lack saves_var) */
CKPT_EXTERN(int)
ckpt_saver_saves_var(ckpt_saver *s, const char *name, const void *data);

/** Save every variable synchronously as `<dir>/<basename>-<step>` and
 *  update the state file; on success `prefix_out` (may be NULL) receives
 *  the prefix. A pending background error is returned instead (once).
 *  Async writes in flight finish first. When staging memory is reserved
 *  (ckpt_saver_reserve or an earlier async save), the variables are copied
 *  into it (an idle writer thread sharing the copy) and written from there
 *  in one piece, with O_DIRECT unless `direct_io` is off; otherwise they
 *  are written straight from their memory. Either way the checkpoint holds
 *  the values at the call and is durable and named when this returns. The
 *  checkpoints retention evicts are deleted after the save: by the writer
 *  thread when one runs (this returns first; ckpt_saver_wait and the next
 *  save wait for the deletion), else before this returns.
 *  @return 0, CKPT_EINVAL (a negative step other than CKPT_NO_STEP; no step
 *          and basename equals the state file name; no variables; two
 *          variables share memory),
 *          CKPT_EBUSY (another saver of this process saves into the
 *          directory, see ckpt_saver_open), CKPT_ENOTFOUND (directory
 *          gone), CKPT_ENOSPC,
 *          CKPT_EIO, CKPT_EUSER (a read callback failed) */
CKPT_EXTERN(int)
ckpt_saver_save(ckpt_saver *s, int64_t step, ckpt_buf *prefix_out);

/** Snapshot every variable into a staging buffer (the only time the caller
 *  waits) and hand the write to the background writer. When the writer is
 *  idle and the state is 4 MiB or more, it shares the copy of the variables
 *  in plain memory, each thread taking the next piece of at most 2 MiB
 *  (read callbacks always run on the calling thread, inside this call);
 *  the copy is complete when this returns, so the variables may change at
 *  once.
 *
 *  Overlapped snapshots: once ckpt_saver_mutation_fence has been called on
 *  this saver (from the start with the option fence_from_start), a
 *  save_async that finds the writer idle runs the read callbacks and
 *  returns, and the writer copies the variables in plain
 *  memory while the caller goes on reading them. The caller must then call
 *  ckpt_saver_mutation_fence before it next writes any variable larger than
 *  64 KiB (smaller ones, up to 1 MiB of them in all in registration order,
 *  are copied by save_async itself); the values saved are those at
 *  save_async. A variable written before the fence is saved torn, and
 *  nothing can tell (its checksum is that of the bytes written). save,
 * save_async, wait, close, free and the restores complete such a snapshot first
 * too; poll and get_metrics do not. `ticket_out` (may be NULL) receives a
 * number > 0 identifying the save.
 *
 *  The write runs on the saver's thread after this returns: a program that
 *  exits (returns from main) without ckpt_saver_close, _wait or _free
 *  loses the checkpoint being written (its files are left unnamed and
 *  removed when a saver next opens the directory; the state file still
 *  names the one before).
 *  @return 0 when dispatched; CKPT_EBUSY when skipped by policy SKIP
 *          (counted in ckpt_saver_get_metrics' saves_skipped and logged at
 *          CKPT_LOG_DEBUG; nothing was copied), or as ckpt_saver_save's when
 *          another saver of this process saves into the directory (see
 *          ckpt_saver_open; not counted as skipped); an earlier
 *          background failure
 *          (returned once, nothing dispatched); CKPT_ENOMEM when the writer
 *          thread cannot be started ("starting the checkpoint writer
 *          thread: ..."; nothing dispatched, the saver still usable: save
 *          works, the next save_async tries again); or an error of the
 *          snapshot */
CKPT_EXTERN(int)
ckpt_saver_save_async(ckpt_saver *s, int64_t step, uint64_t *ticket_out);

/** The caller is about to write the variables (e.g. the optimizer update
 *  of a step): complete an overlapped snapshot taken by save_async — copy
 *  what the writer has not copied yet, wait for the piece it is copying
 *  (at most 2 MiB) — and dispatch its write. Costs nothing when no
 *  snapshot is open. The first call switches the saver to overlapped
 *  snapshots (see save_async); a caller that never calls it gets complete
 *  copies from save_async, as before. Neither delivers outcomes nor
 *  returns background errors (the next save, poll or wait does). On a
 *  wrapped saver (ckpt_saver_wrap) it calls the ops' mutation_fence, such
 *  as the distributed saver's (ckpt_mpi_saver_mutation_fence), and
 *  returns its result; nothing without one.
 *  @return 0, CKPT_EINVAL for a NULL saver, or CKPT_ESTATE (called on the
 *          writer thread, or in a child made by fork()) */
CKPT_EXTERN(int) ckpt_saver_mutation_fence(ckpt_saver *s);

/** Deliver finished saves to `on_save_done` without blocking. `*busy_out`
 *  (may be NULL) is set to 1 while a write is in flight or pending.
 *  @return 0 or a background failure not yet returned (once) */
CKPT_EXTERN(int) ckpt_saver_poll(ckpt_saver *s, int *busy_out);

/** Wait until the save `ticket` (0: every save dispatched so far) has
 *  finished, and the deletion of what retention evicted with it, at most
 *  `timeout_s` seconds (< 0 or more than 1e9: no limit; NaN is
 *  CKPT_EINVAL).
 *  A ticket whose snapshot COALESCE replaced (reported CKPT_ECANCELED to
 *  on_save_done) counts as finished: wait returns 0 for it.
 *  @return 0, CKPT_ETIMEDOUT (also when a background failure is waiting:
 *          the next call returns that), CKPT_EINVAL (a ticket no
 *          save_async gave), or a background failure (once) */
CKPT_EXTERN(int)
ckpt_saver_wait(ckpt_saver *s, uint64_t ticket, double timeout_s);

/** Wait (at most `timeout_s`, < 0: no limit; NaN: CKPT_EINVAL, the saver
 *  left open) for in-flight writes and stop
 *  the writer thread. A pending snapshot not started yet is still written.
 *  Later saves return CKPT_ESTATE. After CKPT_ETIMEDOUT the saver counts
 *  as closed (a second close is CKPT_ESTATE) while the write goes on:
 *  ckpt_saver_wait still waits for it, and free waits for it and stops
 *  the thread. @return like ckpt_saver_wait */
CKPT_EXTERN(int) ckpt_saver_close(ckpt_saver *s, double timeout_s);

/** Free the saver, first closing it without a time limit if needed. NULL is
 *  ignored. Refused, the saver left as it is and the reason logged at
 *  ERROR (on stderr when the saver has no log), from on_save_done, from a
 *  log callback on the writer thread, or while another thread is inside a
 *  call of this saver. */
CKPT_EXTERN(void) ckpt_saver_free(ckpt_saver *s);

/** Restore every variable from the checkpoint `prefix`. Every variable is
 *  checked (present, dtype, shape, and its record, or a partitioned
 *  tensor's pieces, inside the data files: a data file cut short is
 *  CKPT_ECORRUPT naming file and tensor) before any is written; values are read
 *  with their checksums verified, straight into the variables. Tensors of
 *  the checkpoint that no registered variable names are left alone, as
 *  TensorFlow's Saver restores only its var_list (when a variable is
 *  missing, the message names the first few of them: a renamed variable's
 *  old name). So a
 *  CKPT_ENOTFOUND, CKPT_EINVAL or such a CKPT_ECORRUPT leaves every
 *  variable as it was, but a damaged record (a checksum) or a read error
 *  is found while reading:
 *  some variables, the damaged one among them, may then already hold the
 *  checkpoint's bytes. After such an error initialise the variables again
 *  or restore another checkpoint (ckpt_saver_checkpoint lists them).
 *  A saver with no variables registered would restore nothing:
 *  CKPT_EINVAL (register them with ckpt_saver_add_var first).
 *  A DT_BOOL variable's bytes are saved as they are and restored as 0 or 1
 *  (any other byte reads as 1, as TensorFlow reads a bool): keep 0 and 1
 *  in a bool variable for it to round-trip.
 *  @return 0, CKPT_ENOTFOUND (checkpoint, or a variable it lacks, named),
 *          CKPT_EINVAL (no variables registered; dtype or shape mismatch,
 *          named), CKPT_ECORRUPT (a damaged record, or a data file the
 *          index names missing) */
CKPT_EXTERN(int) ckpt_saver_restore(ckpt_saver *s, const char *prefix);

/** Restore only the `n` named variables, checked and read as
 *  ckpt_saver_restore does (n == 0: none; the checkpoint is still opened,
 *  so a missing one is CKPT_ENOTFOUND). A name no registered variable has
 *  is the caller's mistake, CKPT_EINVAL naming it (not CKPT_ENOTFOUND,
 *  which says the checkpoint or a variable in it is missing). */
CKPT_EXTERN(int)
ckpt_saver_restore_subset(ckpt_saver *s, const char *prefix,
                          const char *const *names, size_t n);

/** Restore the latest checkpoint of the directory; `prefix_out` (may be
 *  NULL) receives its prefix. CKPT_ENOTFOUND means only that no state file
 *  names a complete checkpoint, so a program may start afresh on it: the
 *  directory holds none, or its state file is missing or does not parse
 *  (TensorFlow reads such a directory as holding none; when numbered
 *  checkpoints of the saver's naming are there nonetheless, the message
 *  says how many and the newest, which ckpt_saver_restore restores, and a
 *  monitored session logs it as it initialises). A
 *  latest checkpoint that lacks a registered variable is CKPT_EINVAL
 *  (naming it), like a dtype or shape mismatch, where ckpt_saver_restore
 *  of that prefix answers CKPT_ENOTFOUND. A damaged latest checkpoint is
 *  CKPT_ECORRUPT, its message saying how many older ones are listed; it
 *  does not fall back to one by itself (ckpt_saver_checkpoint gives them,
 *  ckpt_saver_restore restores the one chosen). An asynchronous save
 *  still being written is not waited for: the latest is the newest
 *  checkpoint committed when this is called (call ckpt_saver_wait first to
 *  include it; the distributed saver finishes it first). A saver with no
 *  variables registered is CKPT_EINVAL, also when there is no checkpoint
 *  (register them first: restoring before ckpt_saver_add_var would restore
 *  nothing, and the first saves would evict the checkpoints to resume from).
 *  @return 0, CKPT_ENOTFOUND (no checkpoint), CKPT_EINVAL (no variables
 *          registered, or the checkpoint does not match the variables),
 *          CKPT_ESTATE (as ckpt_saver_latest), or as ckpt_saver_restore */
CKPT_EXTERN(int) ckpt_saver_restore_latest(ckpt_saver *s, ckpt_buf *prefix_out);

/** The latest complete checkpoint of the directory (see
 *  ckpt_latest_checkpoint). The directory's path must still name the
 *  directory the saver opened: after a chdir (a relative path), or once
 *  the directory was moved, removed or swapped for a link, the answer is
 *  CKPT_ESTATE (not "no checkpoint", which would have a program start
 *  afresh), as saves there are refused.
 *  @return 0, CKPT_ENOTFOUND or CKPT_ESTATE */
CKPT_EXTERN(int) ckpt_saver_latest(ckpt_saver *s, ckpt_buf *out);

/** Number of checkpoints the saver currently keeps (listed in the state
 *  file), oldest first; 0 for a NULL saver. */
CKPT_EXTERN(size_t) ckpt_saver_num_checkpoints(ckpt_saver *s);

/** Prefix `i` (0 = oldest) into `out`. @return 0 or CKPT_EINVAL */
CKPT_EXTERN(int) ckpt_saver_checkpoint(ckpt_saver *s, size_t i, ckpt_buf *out);

/** The step of a prefix ending in "-<digits>", or CKPT_NO_STEP. */
CKPT_EXTERN(int64_t) ckpt_checkpoint_step(const char *prefix);

/** The options the saver was opened with (borrowed; valid until the saver
 *  is freed; `fs` and `clock` as given, `basename` the saver's copy); NULL
 *  for a NULL saver. */
CKPT_EXTERN(const ckpt_saver_options *)
ckpt_saver_get_options(const ckpt_saver *s);

/** Replace the on_save_done callback (e.g. to put a hook's callback in
 *  front of the user's and forward to it). Call it from the thread that
 *  drives the saver, which is also the only thread that calls it. Nothing
 *  for a NULL saver. */
CKPT_EXTERN(void)
ckpt_saver_set_on_save_done(ckpt_saver *s, ckpt_save_done_fn fn, void *payload);

/** Cumulative metrics; one event per trigger or outcome: each trigger (a
 *  save or save_async call) counts once in saves_started, saves_skipped or
 *  saves_coalesced (a pending snapshot replaced by a newer one moves from
 *  started to coalesced), and each write once in saves_completed or
 *  saves_failed, so once idle started == completed + failed. The
 *  checkpoint hook retries a due save at every step while a write runs, so
 *  under it saves_skipped counts the steps skipped, not the due saves. */
typedef struct ckpt_saver_metrics {
    uint64_t saves_started;   /**< snapshots taken and dispatched (+ sync) */
    uint64_t saves_skipped;   /**< async triggers skipped (policy SKIP) */
    uint64_t saves_coalesced; /**< pending snapshots replaced (COALESCE) */
    uint64_t saves_completed; /**< durable and named in the state file */
    uint64_t saves_failed;    /**< writes that failed */
    uint64_t bytes_written;   /**< data + index bytes of completed saves */
    double blocking_s_total;  /**< caller time spent in snapshots */
    double blocking_s_max;
    double blocking_s_last;
    double write_s_total; /**< background time of finished writes */
    double write_s_last;
    int64_t last_saved_step; /**< step of the newest durable save, or
                                  CKPT_NO_STEP */
} ckpt_saver_metrics;

/** Copy the metrics (safe while a write is in flight); nothing when `s` or
 *  `out` is NULL. */
CKPT_EXTERN(void)
ckpt_saver_get_metrics(ckpt_saver *s, ckpt_saver_metrics *out);

/** Bytes of staging memory async saves use (known once the variables are
 *  registered): one data image for SKIP and WAIT, two for COALESCE; 0 for
 *  a NULL saver. */
CKPT_EXTERN(uint64_t) ckpt_saver_staging_bytes(ckpt_saver *s);

/** Allocate and pre-fault the staging buffers now rather than at the first
 *  async save (which then blocks only for the copy); synchronous saves use
 *  them too (ckpt_saver_save). With fence_from_start the buffers are only
 *  mapped: the writer's overlapped copies fault them in.
 *  @return 0; CKPT_EINVAL with no variables registered; CKPT_ENOMEM when
 *          the buffers cannot be mapped ("mapping a staging image of N
 *          bytes: ...") or the kernel cannot back their pages, as under a
 *          memory cgroup's limit ("faulting in a staging image of N bytes:
 *          ..."): the save fails instead of the OOM killer ending the
 *          process; nothing is kept, the saver stays usable. The first
 *          save_async reserves the same way and fails the same. */
CKPT_EXTERN(int) ckpt_saver_reserve(ckpt_saver *s);

/* ---- savers implemented elsewhere -----------------------------------------
 */

#define CKPT_SAVER_OPS_VERSION 4

/** The functions of a saver implemented outside this library, such as the
 *  distributed saver of ckpt_mpi (ckpt_mpi_saver_as_saver). ckpt_saver_wrap
 *  turns one into a ckpt_saver handle that the checkpoint hook and the
 *  monitored session (scaffold.saver) use like the library's own: each
 *  ckpt_saver_* function on the handle calls the member below with `self`,
 *  after the NULL-argument checks. On a wrapped saver ckpt_saver_add_var
 *  and ckpt_saver_restore_subset are CKPT_ENOTSUP (register variables with
 *  the implementation), ckpt_saver_num_checkpoints is 0,
 *  ckpt_saver_checkpoint CKPT_ENOTSUP, ckpt_saver_staging_bytes 0, and
 *  ckpt_saver_reserve does nothing; ckpt_saver_mutation_fence calls
 *  `mutation_fence`, and does nothing without one (save_async must then
 *  take a complete snapshot before it returns). Every member is required
 *  unless marked optional. */
typedef struct ckpt_saver_ops {
    unsigned int version; /**< CKPT_SAVER_OPS_VERSION */
    /** 1 when save, save_async, wait, close, restore, restore_latest,
     *  latest, agree and agree_outcome are collective among processes
     *  (every process
     *  makes the same calls in the same order): the checkpoint hook then
     *  makes those calls whatever a process's own earlier errors (it
     *  returns them afterwards), and in seconds mode asks `agree` whether
     *  to save; the monitored session restores through restore_latest. */
    int collective;
    int (*save)(void *self, int64_t step, ckpt_buf *prefix_out);
    int (*save_async)(void *self, int64_t step, uint64_t *ticket_out);
    int (*poll)(void *self, int *busy_out);
    int (*wait)(void *self, uint64_t ticket, double timeout_s);
    int (*close)(void *self, double timeout_s);
    int (*restore)(void *self, const char *prefix);
    int (*restore_latest)(void *self, ckpt_buf *prefix_out);
    int (*latest)(void *self, ckpt_buf *out);
    void (*get_metrics)(void *self, ckpt_saver_metrics *out);
    /** Its options; `basename` must be set (the checkpoints' names). */
    const ckpt_saver_options *(*get_options)(const void *self);
    void (*set_on_save_done)(void *self, ckpt_save_done_fn fn, void *payload);
    /** Optional (collective savers): make `*flag` the same on every
     *  process, a decision one process takes (e.g. rank 0's timer). It may
     *  answer with the decision of its previous call (a pipelined,
     *  non-blocking agreement), but then a 1 is followed by a 0. */
    int (*agree)(void *self, int *flag);
    /** Optional: called by ckpt_saver_free on the handle. */
    void (*release)(void *self);
    /** Optional (version 2 on): ckpt_saver_saves_var on the handle; 1 or
     *  0. Without it the checkpoint hook cannot check that the saver
     *  saves the global step. */
    int (*saves_var)(const void *self, const char *name, const void *data);
    /** Optional (version 3 on; collective savers): every process's
     *  outcome `err` (0 or an error code, its message the last error) of
     *  a step they all took, agreed: 0 on every process when every one's
     *  was 0, else an error on every process naming the failed one and
     *  its message. The monitored session calls it after the hooks' begin
     *  and before its restore, so that a begin failing on one process
     *  ends the creation on every process instead of leaving the others
     *  waiting in the restore. */
    int (*agree_outcome)(void *self, int err);
    /** Optional (version 4 on): the mutation fence. With `from_now_on` 1
     *  (ckpt_saver_mutation_fence) the caller keeps the fence rule from
     *  now on: save_async may leave its snapshot open (overlapped), and
     *  any open one is completed before this returns. With 0 (a monitored
     *  session at each step's end) only complete an open one. 0 or an
     *  error. */
    int (*mutation_fence)(void *self, int from_now_on);
    /** Optional (version 4 on): 1 with its trigger's step in `*step` while
     *  an overlapped snapshot is open, else 0 (a monitored session warns
     *  when a loop that never fenced ends a step over one). */
    int (*open_snapshot)(const void *self, int64_t *step);
} ckpt_saver_ops;

/** A ckpt_saver handle over `ops` (borrowed; must outlive the handle) and
 *  `self`. Free it with ckpt_saver_free.
 *  @return 0, CKPT_EINVAL (NULL, or a required member missing, named),
 *          CKPT_EVERSION, CKPT_ENOMEM */
CKPT_EXTERN(int)
ckpt_saver_wrap(ckpt_saver **out, const ckpt_saver_ops *ops, void *self);

CKPT_END_DECL

#endif
