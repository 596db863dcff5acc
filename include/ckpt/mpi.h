/* ckpt/mpi.h - distributed checkpoints over MPI (library ckpt_mpi): every
 * rank of a communicator saves its own part of the state into one
 * TensorFlow checkpoint, and a checkpoint written by N ranks restores onto
 * any number of ranks.
 *
 * Build: `pkg-config --cflags --libs ckpt-mpi` (the package is ckpt-mpi,
 * the library ckpt_mpi; it links libckpt.a and MPI), or with CMake
 * find_package(ckpt COMPONENTS mpi) and ckpt::ckpt_mpi. Include this
 * header beside <ckpt.h>, which does not include it.
 *
 * Variables come in three kinds:
 *   - replicated: the same value on every rank (data-parallel weights).
 *     Written once, by one rank chosen to balance bytes per rank; restored
 *     on every rank. Stored under its name.
 *   - partitioned: this rank holds one piece (start and length per
 *     dimension) of a global tensor. Stored as TensorFlow slices of the
 *     global tensor, so TensorFlow and a single-process ckpt read the whole
 *     tensor under its name; restored onto any partition (resharding).
 *   - per-rank: a different value on each rank (RNG state, data position).
 *     Stored as "<name>/rank-<r>" (r in decimal, no padding) and restored
 *     by rank number.
 *
 * A checkpoint <dir>/<basename>-<step> has one data file per rank,
 * <prefix>.data-<r>-of-<N> (written by rank r), and one <prefix>.index that
 * rank 0 writes over all of them once every rank's file is durable; then
 * rank 0 updates the state file and applies retention. The directory must
 * be shared by all ranks (one file system).
 *
 * Collective calls (every rank of the communicator, in the same order):
 * open, check, save, save_async, restore, restore_latest, close and free.
 * The others are local. Every collective that waits on other ranks is
 * bounded by `collective_timeout_s`, counted from the start of each
 * blocking wait on peers (poll never waits, never times out): past it the
 * job is ended with MPI_Abort (a peer that died or stopped calling cannot
 * be waited out). The caller's own collectives get the same bound through
 * ckpt_mpi_saver_wait_requests.
 *
 * Threads: each saver runs one background thread that writes this rank's
 * data file (and, on rank 0, merges the index and deletes the checkpoints
 * retention evicted); that thread never calls MPI. All MPI calls happen
 * inside the collective and poll/wait calls, on the calling thread, so
 * MPI_THREAD_FUNNELED is enough when those calls are made from the main
 * thread and MPI_THREAD_SERIALIZED otherwise. Asynchronous saves need
 * MPI_THREAD_FUNNELED or higher (CKPT_ENOTSUP under MPI_THREAD_SINGLE);
 * synchronous saves and restores work at any level. Binding: give each
 * rank two cores (docs/mpi.md, "Binding"), one for the training thread
 * and one for this thread and the restore's checksum helper. */
#ifndef CKPT_MPI_H
#define CKPT_MPI_H

#include <mpi.h>

#include "bundle.h"
#include "saver.h"

CKPT_BEGIN_DECL

typedef struct ckpt_mpi_saver ckpt_mpi_saver;

#define CKPT_MPI_SAVER_OPTIONS_VERSION 2

/** Options of a distributed saver. Version 2: `base` is a version-2
 *  ckpt_saver_options (fence_from_start); a version-1 struct, from a
 *  program built against the earlier header, is read in its own layout
 *  (its base without fence_from_start). */
typedef struct ckpt_mpi_saver_options {
    unsigned int version; /**< CKPT_MPI_SAVER_OPTIONS_VERSION */
    /** As for ckpt_saver_open: fs, clock, basename, max_to_keep,
     *  keep_checkpoint_every_n_hours, pad_step_number, absolute_paths, log
     *  (called on any thread; calls back into the saver from its
     *  background thread are refused with CKPT_ESTATE), on_save_done
     *  (called on the thread that calls save, save_async, poll, wait or
     *  close, on every rank, with the outcome every rank agreed on; it
     *  must not free the saver: refused). busy_policy: SKIP, WAIT or
     *  COALESCE, decided alike on every rank (one small allreduce per
     *  trigger for SKIP and COALESCE; SKIP's is posted ahead, by the
     *  first poll or wait after the previous save ended, so a trigger
     *  reached after every rank has polled waits for no rank; see
     *  docs/mpi.md). direct_io: as for ckpt_saver,
     *  each rank's data file is written with O_DIRECT where the file
     *  system allows it unless CKPT_DIRECT_IO_OFF.
     *  `fs`, `clock`, `log`, the callbacks, direct_io, fence_from_start
     *  and collective_timeout_s are per rank; basename, pad_step_number,
     *  absolute_paths, max_to_keep, keep_checkpoint_every_n_hours and
     *  busy_policy must be the same on every rank (open compares them with
     *  rank 0's). */
    ckpt_saver_options base;
    /** Longest wait for the other ranks in any collective step, in seconds
     *  (0: 600), counted from when this rank starts waiting (the later of
     *  the blocking call's start and the step's posting: time spent
     *  between polls or in this rank's own write does not count). Past it
     *  the job is ended with MPI_Abort(comm, 70). Also bounds
     *  ckpt_mpi_saver_wait_requests. INFINITY removes the bound (a dead
     *  or stopped peer then holds every rank, as plain MPI would);
     *  negative or NaN is CKPT_EINVAL. */
    double collective_timeout_s;
} ckpt_mpi_saver_options;

#define CKPT_MPI_SAVER_OPTIONS_INIT                                            \
    {                                                                          \
        CKPT_MPI_SAVER_OPTIONS_VERSION, CKPT_SAVER_OPTIONS_INIT, 0.0           \
    }

/** Fill `opts` with the defaults. @return 0 or CKPT_EVERSION */
CKPT_EXTERN(int)
ckpt_mpi_saver_options_init(ckpt_mpi_saver_options *opts, unsigned int version);

/** Open the shared checkpoint directory `dir` on every rank of `comm`
 *  (collective; the saver works on its own duplicate of `comm`). Rank 0
 *  recovers the directory as ckpt_saver_open does (temporary files and
 *  data files of checkpoints without an index, including a distributed
 *  save's that failed, are removed). Every rank must reach the same
 *  directory (its path may differ: relative, another mount point): rank 0
 *  makes an empty file in it that every rank looks for under its own `dir`,
 *  then removes it (a directory rank 0 cannot write to is not checked).
 *  Every rank gets the outcome: rank 0's, or the lowest rank's that does
 *  not see the file, naming both paths, or whose options that must be
 *  alike differ from rank 0's, naming the option and both values
 *  (CKPT_EINVAL). A bad argument on some ranks only
 *  (a NULL `out` or `dir`, options that do not validate) is every rank's
 *  error too: such a rank still takes part, and every rank gets its
 *  error, naming the rank.
 *  @return 0, CKPT_ENOTFOUND (directory; on a rank where it is missing or
 *          not a directory), CKPT_EINVAL (NULL argument, options, options
 *          unlike rank 0's; a rank's `dir` is not rank 0's), or an I/O
 *          error */
CKPT_EXTERN(int)
ckpt_mpi_saver_open(ckpt_mpi_saver **out, MPI_Comm comm, const char *dir,
                    const ckpt_mpi_saver_options *opts);

/** Register a replicated variable (local; before the first save or
 *  restore). Every rank must register the same replicated variables (name,
 *  dtype, shape), in any order. As for every kind, `var` has data or both
 *  callbacks: a save-only variable (read without write, which ckpt_saver
 *  takes) is refused, since a restore restores every variable. Each of a
 *  rank's variables, of every kind, needs memory of its own: two whose
 *  data overlap fail the first save or restore on every rank, naming the
 *  rank and both (CKPT_EINVAL), as ckpt_saver_add_var says.
 *  @return 0, CKPT_EINVAL, CKPT_ENOTSUP (dtype), CKPT_EEXISTS (name),
 *          CKPT_ESTATE (after the first save or restore) */
CKPT_EXTERN(int)
ckpt_mpi_saver_add_replicated(ckpt_mpi_saver *s, const ckpt_var *var);

/** Register this rank's piece of a partitioned variable (local). `var`
 *  names the global tensor and gives its global shape; `extents` (one per
 *  dimension of that shape; length CKPT_SLICE_FULL for a whole dimension)
 *  say which piece this rank holds, and var->data (or the callbacks) hold
 *  that piece's elements row-major in the piece's own shape. Every rank
 *  registers one piece of every partitioned variable (an empty piece, with
 *  a zero length and data NULL if it likes, when it holds none); together
 *  they must tile the global
 *  shape exactly, which the first collective call checks.
 *  @return as ckpt_mpi_saver_add_replicated, CKPT_EINVAL for an extent
 *          outside the shape */
CKPT_EXTERN(int)
ckpt_mpi_saver_add_partitioned(ckpt_mpi_saver *s, const ckpt_var *var,
                               const ckpt_slice_extent *extents);

/** ckpt_mpi_saver_add_per_rank flag: a restore onto a rank the checkpoint
 *  has no value for leaves the variable as it is instead of failing, and
 *  returns 0 as on the other ranks. To tell whether a rank got its value,
 *  give the variable a `write` callback: the restore calls it only with a
 *  value the checkpoint holds. */
#define CKPT_MPI_OPTIONAL 1

/** Register a per-rank variable (local), saved as "<name>/rank-<r>". Every
 *  rank registers the same per-rank names with the same dtype and shape.
 *  `flags`: 0 or CKPT_MPI_OPTIONAL.
 *  @return as ckpt_mpi_saver_add_replicated */
CKPT_EXTERN(int)
ckpt_mpi_saver_add_per_rank(ckpt_mpi_saver *s, const ckpt_var *var, int flags);

/** Check the registered variables across ranks and fix them (collective;
 *  done by the first save or restore when not called): the same
 *  replicated and per-rank variables on every rank, every partitioned
 *  variable registered everywhere with one dtype and global shape, and its
 *  pieces tiling the global shape without overlap or hole, no stored name
 *  given twice. Then replicated variables are assigned to writer ranks.
 *  Every rank gets the same outcome; the message names the tensor at
 *  fault and the rank whose registration differs or whose piece overlaps
 *  another (a hole, which no one rank leaves, is said as how many of the
 *  tensor's elements all ranks' pieces cover). Allowed after close, as
 *  the restores are.
 *  @return 0, CKPT_EINVAL, CKPT_ESTATE (on the saver's own thread) */
CKPT_EXTERN(int) ckpt_mpi_saver_check(ckpt_mpi_saver *s);

/** Save every rank's part as `<dir>/<basename>-<step>` (collective, the
 *  same step on every rank: ranks that pass different steps all fail
 *  with CKPT_EINVAL naming them, nothing committed) and wait until it is
 *  committed or failed. The
 *  checkpoints retention evicts are deleted after that, by rank 0's
 *  background thread (inline under MPI_THREAD_SINGLE); ckpt_mpi_saver_wait,
 *  close and the next commit wait for it. A failure on any rank fails the
 *  save on every rank with that rank's message; nothing is named then and
 *  the previous checkpoint stays the latest. On success `prefix_out` (may
 *  be NULL) receives the prefix. An earlier asynchronous save still in
 *  flight is finished first; its failure is not returned here but by the
 *  next save_async, wait or close, and the save goes ahead. A step saved
 *  again replaces its checkpoint as with ckpt_saver_save; three saves in
 *  a row of one step (sync or async) draw one warning, logged by rank 0.
 *  @return 0, or an error as ckpt_saver_save's */
CKPT_EXTERN(int)
ckpt_mpi_saver_save(ckpt_mpi_saver *s, int64_t step, ckpt_buf *prefix_out);

/** Snapshot this rank's part (the only time the caller waits, besides an
 *  agreement among ranks when the busy policy is SKIP) and let the
 *  background thread write it (collective, the same step on every rank;
 *  different steps fail the save on every rank, as for ckpt_mpi_saver_save).
 *  The ranks' agreement that every part is durable and rank 0's commit are
 *  progressed by later calls to poll, save_async, wait or close, without
 *  blocking them. With CKPT_BUSY_SKIP and a save still in flight on any
 *  rank, every rank skips (CKPT_EBUSY); with CKPT_BUSY_WAIT every rank
 *  finishes the previous save first; with CKPT_BUSY_COALESCE every rank
 *  keeps the snapshot as its one pending snapshot (replacing an older
 *  pending one, reported with CKPT_ECANCELED), written after the save in
 *  flight.
 *  An earlier asynchronous save's failure is returned here, once and on
 *  every rank alike, nothing dispatched, at the first trigger where no
 *  rank has a save in flight (with CKPT_BUSY_WAIT, the first trigger after
 *  the failed save: every rank finishes it first; with CKPT_BUSY_COALESCE,
 *  the first trigger at which every rank has had the failure, even while
 *  a later save is still being written); wait and close return
 *  it too, poll never (ranks learn an outcome at different calls, and a
 *  data-parallel loop must stop at the same step on every rank).
 *  A negative step fails the save as different steps do, on every rank
 *  alike and reported as above (not at once: a rank cannot refuse it
 *  alone without leaving the others waiting for its part).
 *  @return 0 when dispatched, CKPT_EBUSY (skipped), CKPT_ENOTSUP (thread
 *          level below MPI_THREAD_FUNNELED), an earlier save's failure
 *          (once, nothing dispatched) or a snapshot error */
CKPT_EXTERN(int)
ckpt_mpi_saver_save_async(ckpt_mpi_saver *s, int64_t step,
                          uint64_t *ticket_out);

/** The mutation fence, as ckpt_saver_mutation_fence (saver.h): call it in
 *  each step right before the step first writes a registered variable
 *  (e.g. before the optimizer update, after the gradients' allreduce).
 *  From the first call on - or from the first save when base.
 *  fence_from_start is 1 - save_async copies only the read callbacks and
 *  the variables of at most 64 KiB (up to 1 MiB of them) before it
 *  returns, and this rank's background thread copies the rest while the
 *  caller goes on reading the variables; the next fence (or save,
 *  save_async, wait, close, restore) copies what is not copied yet, with
 *  that thread, and returns when every byte is: the loop waits only for
 *  that rest. The values saved are those at save_async. Not collective:
 *  no MPI call, each rank fences its own snapshot. A loop that never calls
 *  it keeps complete copies at each trigger, as before. Synchronous saves
 *  and COALESCE's pending snapshots are always complete copies. The
 *  monitored session's ckpt_step_context_mutation_fence calls it through
 *  the ckpt_mpi_saver_as_saver handle, and completes an open snapshot at
 *  each step's end.
 *  @return 0, CKPT_EINVAL (NULL), CKPT_ESTATE (after close; on the
 *          saver's own thread) */
CKPT_EXTERN(int) ckpt_mpi_saver_mutation_fence(ckpt_mpi_saver *s);

/** Progress the save in flight without blocking (local; the other ranks
 *  progress theirs in their own calls) and deliver finished outcomes to
 *  on_save_done. It never waits, so it never times out either: a loop
 *  that needs the outcome calls ckpt_mpi_saver_wait, which is bounded.
 *  A failure is kept for the next save_async, wait or close, which
 *  return it on every rank alike.
 *  `*busy_out` (may be NULL): 1 while a save is in flight.
 *  @return 0, or CKPT_EINVAL / CKPT_ESTATE for a bad call */
CKPT_EXTERN(int) ckpt_mpi_saver_poll(ckpt_mpi_saver *s, int *busy_out);

/** Wait until the save in flight has an outcome (collective in effect: it
 *  needs the other ranks to progress theirs) and, on rank 0, until the
 *  checkpoints retention evicted are deleted, at most `timeout_s` seconds
 *  (< 0: bounded only by collective_timeout_s). With `timeout_s` < 0
 *  every rank returns a failure not yet returned alike.
 *  @return 0, CKPT_ETIMEDOUT or a save failure not yet returned (once) */
CKPT_EXTERN(int) ckpt_mpi_saver_wait(ckpt_mpi_saver *s, double timeout_s);

/** Finish the save in flight and stop the background thread (collective).
 *  Later saves, and a second close, return CKPT_ESTATE; check and the
 *  restores still work until free.
 *  @return as ckpt_mpi_saver_wait */
CKPT_EXTERN(int) ckpt_mpi_saver_close(ckpt_mpi_saver *s);

/** Close when needed (collective), then free. NULL is ignored. */
CKPT_EXTERN(void) ckpt_mpi_saver_free(ckpt_mpi_saver *s);

/** Restore every registered variable from the checkpoint `prefix`
 *  (collective; the checkpoint may have been written by any number of
 *  ranks, or by a single-process saver): replicated variables whole,
 *  partitioned ones assembled from whichever stored pieces overlap this
 *  rank's piece, per-rank ones from "<name>/rank-<r>" (missing: left
 *  unchanged when optional, else an error). Every variable is checked on
 *  every rank before any is written (present, dtype, shape, and a
 *  partitioned one's stored pieces: inside the tensor, matching their
 *  entries, each an entry with a record (not itself partitioned), not
 *  overlapping, covering this rank's piece; every record read, whole
 *  tensor or piece, inside its data file; a replicated or per-rank value
 *  stored as pieces covered by them once); a failure on any
 *  rank fails the restore on every rank with that rank's message, every
 *  variable as it was. A damaged record (a checksum) or a read error is
 *  only found while reading: some variables may then already hold the
 *  checkpoint's bytes, as with ckpt_saver_restore. A NULL or empty
 *  `prefix` on any rank fails the restore on every rank, with that rank's
 *  message ("ckpt_mpi_saver_restore: prefix is NULL" or "... is empty").
 *  Every rank must name the same checkpoint (by any path to it): a rank
 *  whose prefix's index lists other entries than rank 0's (names, shapes,
 *  places or checksums) fails the restore on
 *  every rank ("... is not the checkpoint rank 0 restores"), nothing
 *  written; ckpt_mpi_saver_restore_latest agrees on one by itself.
 *  A saver with no variables registered restores nothing: CKPT_EINVAL on
 *  every rank (register them before restoring).
 *  @return 0, CKPT_ENOTFOUND (checkpoint or tensor, named), CKPT_EINVAL
 *          (no variables, NULL or empty prefix, ranks naming different
 *          checkpoints, dtype or shape),
 *          CKPT_ECORRUPT, CKPT_EIO */
CKPT_EXTERN(int) ckpt_mpi_saver_restore(ckpt_mpi_saver *s, const char *prefix);

/** Restore the directory's latest complete checkpoint (collective): the
 *  variable lists are checked first (as ckpt_mpi_saver_check, also when
 *  there is no checkpoint), then rank 0 reads the state file and every
 *  rank restores the prefix it names (a checkpoint in the saver's
 *  directory by that rank's own path of it, which may differ from rank
 *  0's). A save in flight is finished first
 *  (every rank is at the same call), so the latest includes it, unlike
 *  ckpt_saver_restore_latest, which does not wait for one. A damaged
 *  latest checkpoint is CKPT_ECORRUPT on every rank; it does not fall back
 *  by itself: ckpt_state_read (ckpt/state.h) lists the directory's older
 *  checkpoints, and ckpt_mpi_saver_restore restores the one chosen.
 *  `prefix_out` (may be NULL) receives it. CKPT_ENOTFOUND means only that
 *  there is no checkpoint (start afresh; its message counts the
 *  checkpoints of the saver's naming in the directory that no state file
 *  names, and names the newest, when there are any): one that lacks a
 *  variable or a
 *  rank's per-rank value (more ranks than wrote it) is CKPT_EINVAL, as is
 *  a saver with no variables registered (also when there is no checkpoint).
 *  @return 0, CKPT_ENOTFOUND (no checkpoint), CKPT_EINVAL (no variables,
 *          or the checkpoint does not match the variables or the rank
 *          count), or as restore */
CKPT_EXTERN(int)
ckpt_mpi_saver_restore_latest(ckpt_mpi_saver *s, ckpt_buf *prefix_out);

/** Wait for `n` of the caller's own non-blocking MPI requests (an
 *  MPI_Iallreduce of gradients, an MPI_Ibarrier, ...) under the saver's
 *  collective timeout, so that the caller's collectives have the same
 *  bounded outcome as the saver's: past collective_timeout_s, counted from
 *  this call's start, the job is ended with MPI_Abort(comm, 70) on the
 *  communicator given to open, after a message on stderr naming this rank
 *  and `what` ("ckpt_mpi: rank R: <what>: other ranks did not respond
 *  within T s; aborting the job (a rank died or stalled, or did not post
 *  its part of the caller's collectives waited for here
 *  (ckpt_mpi_saver_wait_requests): every rank posts them all, in the
 *  same order); saver of <dir>": the caller's collectives, not the
 *  saver's; `<dir>` is the directory given to open). Use it in
 *  place of MPI_Wait/MPI_Waitall (post MPI_Iallreduce instead of calling
 *  MPI_Allreduce): a blocking MPI call on a dead or stopped peer never
 *  returns. Local (the requests may belong to any communicator); the
 *  requests complete as with MPI_Waitall (statuses ignored; each becomes
 *  MPI_REQUEST_NULL). Allowed after close (until free), not from the
 *  saver's own thread (a log callback). Polls with MPI_Testall, yielding
 *  then sleeping up to 1 ms between tests.
 *  @param s     the saver whose collective timeout bounds the wait
 *  @param n     the number of requests (0: returns at once)
 *  @param reqs  the requests (may be NULL when `n` is 0, as with
 *               MPI_Waitall(0, NULL, ...))
 *  @param what  what is waited for, for the message (may be NULL:
 *               "waiting for the caller's requests")
 *  @return 0 once every request completed (at once for `n` 0),
 *          CKPT_EINVAL (NULL `s`, NULL `reqs` with `n` > 0, `n` < 0),
 *          CKPT_ESTATE (on the saver's own thread) */
CKPT_EXTERN(int)
ckpt_mpi_saver_wait_requests(ckpt_mpi_saver *s, int n, MPI_Request *reqs,
                             const char *what);

/** This rank's cumulative metrics (local; same meaning as the
 *  single-process saver's; bytes_written counts this rank's data file, and
 *  on rank 0 also the index). */
CKPT_EXTERN(void)
ckpt_mpi_saver_get_metrics(ckpt_mpi_saver *s, ckpt_saver_metrics *out);

/** This rank and the number of ranks of the saver's communicator. */
CKPT_EXTERN(int) ckpt_mpi_saver_rank(const ckpt_mpi_saver *s);
CKPT_EXTERN(int) ckpt_mpi_saver_size(const ckpt_mpi_saver *s);

/* ---- the standard hook and session over a distributed saver ------------- */

/** The saver as a ckpt_saver handle (created at the first call; borrowed:
 *  it belongs to `s` and is freed with it: ckpt_saver_free refuses it,
 *  saying so on stderr, and leaves it as it is) for
 *  the library's checkpoint hook (ckpt_checkpoint_hook_options.saver) and
 *  monitored session (scaffold.saver, with checkpoint_dir set to the
 *  saver's directory). On every rank build the same hooks and session:
 *  the session restores the latest checkpoint at creation (rank 0 reads
 *  the state file, every rank restores its part), the hook saves at the
 *  same steps on every rank (sync or async, as its mode says) and at end.
 *  In seconds mode rank 0's timer decides: one MPI_Ibcast per step, posted
 *  at a step and completed at the next, so a save rank 0's timer asks for
 *  at step k happens at step k+1 on every rank. The handle's saves,
 *  restores, latest, wait and close are collective. Local errors a rank
 *  has (a listener's) never make it skip a save the others make; they are
 *  returned afterwards. Make rank 0 the chief for logging and summaries by
 *  giving the other ranks' sessions log_level CKPT_LOG_OFF (their
 *  sessions must not set not_chief: every rank restores); the checkpoint
 *  hook follows that level also where it logs through this saver's log
 *  (base.log), whose own lines stay each rank's.
 *  @return 0, CKPT_EINVAL (NULL), CKPT_ENOMEM */
CKPT_EXTERN(int) ckpt_mpi_saver_as_saver(ckpt_mpi_saver *s, ckpt_saver **out);

CKPT_END_DECL

#endif
