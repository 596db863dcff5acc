/* mpi/mpi_internal.h - the distributed saver's private structures and the
 * functions its files share: registered variables and the collective
 * check (mpi_vars.c), bounded collectives and agreement on an outcome
 * (mpi_collective.c), writing one rank's data file (mpi_shard.c), rank 0's
 * merge and commit (mpi_commit.c), the save pipeline (mpi_saver.c,
 * mpi_save_op.c), restore (mpi_restore.c) and open's check that every
 * rank has the same directory (mpi_shared_dir.c).
 *
 * Two duplicates of the user's communicator keep collectives apart:
 * `comm_op` carries only the agreement of saves (one save at a time, its
 * collectives posted in one order on every rank), `comm_ctl` everything
 * else (open, check, COALESCE's busy agreement, restore), which only runs
 * while no save is in flight on this rank or at a point every rank reaches
 * in the same order; `comm_busy` only SKIP's busy agreement, one allreduce
 * per trigger, which a rank may post ahead of the trigger (mpi_busy.c). */
#ifndef CKPT_MPI_INTERNAL_H
#define CKPT_MPI_INTERNAL_H

#include "ckpt/mpi.h"
#include "format/bundle_proto.h"
#include "saver/saver_internal.h"

#include <pthread.h>

#define CKPT__MPI_MSG 512

enum ckpt__mpi_kind {
    CKPT__MPI_REPLICATED = 0,
    CKPT__MPI_PARTITIONED = 1,
    CKPT__MPI_PER_RANK = 2
};

/* One registered variable as this rank sees it. */
typedef struct ckpt__mvar {
    int kind;
    int flags;    /* CKPT_MPI_OPTIONAL */
    char *name;   /* as registered */
    ckpt_buf key; /* its key in the index: the name, this rank's slice key
                     (partitioned, not whole) or "<name>/rank-<r>" */
    int dtype;
    ckpt_shape global;        /* the tensor's shape in the checkpoint */
    ckpt_shape local;         /* the shape of this rank's value */
    ckpt__tensor_slice slice; /* partitioned: this rank's piece */
    int whole;                /* partitioned piece covering everything */
    ckpt_var user;            /* data / callbacks as registered */
    uint64_t bytes;           /* of the local value */
    int owned;                /* this rank writes it */
} ckpt__mvar;

/* Rank 0's view of one partitioned tensor after the check: every rank's
 * piece, for the full entry of the merged index. */
typedef struct ckpt__mpi_partition {
    char *name;
    int dtype;
    ckpt_shape global;
    int npieces; /* non-empty pieces, in rank order */
    ckpt__tensor_slice *pieces;
} ckpt__mpi_partition;

/* A fixed-size record exchanged in agreements (bytes on the wire). */
typedef struct ckpt__mpi_status {
    int code;
    int rank; /* who reported `code` */
    int32_t blob_len;
    int32_t pad_;
    uint64_t bytes;
    int64_t step; /* the step this rank saves (a save's status only) */
    char msg[CKPT__MPI_MSG];
} ckpt__mpi_status;

/* Failed asynchronous saves not yet returned (mpi_failures.c). */
#define CKPT__MPI_KEPT_FAILURES 4
typedef struct ckpt__mpi_failures {
    uint64_t delivered; /* failed async saves whose outcome this rank has */
    uint64_t returned;  /* of those, returned to the caller */
    size_t nkept;       /* the first unreturned ones, whole */
    ckpt__mpi_status kept[CKPT__MPI_KEPT_FAILURES];
    int later_ok;          /* a save succeeded after the newest failure */
    int64_t later_ok_step; /* the newest such save's step */
} ckpt__mpi_failures;

enum ckpt__op_state {
    OP_IDLE = 0,
    OP_WRITING,     /* the background thread writes this rank's file */
    OP_GATHER_HDR,  /* rank 0: waiting for every rank's status */
    OP_GATHER_BLOB, /* rank 0: waiting for every rank's entries */
    OP_COMMITTING,  /* rank 0: the background thread merges and commits */
    OP_OUTCOME      /* waiting for rank 0's outcome */
};

/* The save in flight (at most one per saver). */
typedef struct ckpt__save_op {
    int state;
    int is_async;
    uint64_t ticket;
    int64_t step;
    ckpt_buf prefix;    /* full prefix */
    ckpt_buf stored;    /* as named in the state file */
    ckpt_buf temp_path; /* this rank's temporary data file */
    int temp_exists;
    ckpt_buf blob;            /* temp path and entries sent to rank 0 */
    ckpt__mpi_status mine;    /* this rank's write outcome */
    ckpt__mpi_status outcome; /* rank 0's verdict */
    ckpt__mpi_status *all;    /* rank 0: every rank's status */
    int *counts, *displs;     /* rank 0: blob sizes and offsets */
    uint8_t *blobs;           /* rank 0: every rank's blob */
    MPI_Request *from;        /* rank 0: the status receive from each rank
                                 (its own MPI_REQUEST_NULL) */
    MPI_Request req[3];
    int nreq;
    double posted_at; /* when the current wait on peers began */
    double started_at;
    double blocking_s;
    double write_s;
} ckpt__save_op;

enum ckpt__job_kind { JOB_NONE = 0, JOB_WRITE, JOB_COMMIT };

struct ckpt_mpi_saver {
    MPI_Comm comm_user; /* as given: what MPI_Abort ends */
    MPI_Comm comm_op;
    MPI_Comm comm_ctl;
    MPI_Comm comm_busy;
    int rank, size;
    int thread_level;
    ckpt_mpi_saver_options opts;
    char *basename;
    const ckpt_fs *fs;
    ckpt__dir_state ds;
    double timeout_s;

    ckpt__mvar *vars;
    size_t nvars, cap_vars;
    ckpt__name_index names; /* registered names -> var index */
    int checked;            /* the collective check passed; variables fixed */
    int closed;
    ckpt__mpi_partition *parts; /* rank 0 */
    size_t nparts;

    /* This rank's records: the owned variables laid out in one image. */
    ckpt__var *owned;
    size_t *owned_idx; /* index into vars of each owned variable */
    size_t nowned;
    uint64_t image_bytes;
    ckpt__image image;
    /* The snapshot's pieces and where its checksums are computed
     * (mpi_snapshot.c), fixed at the first snapshot. */
    ckpt__piece *pieces;
    size_t npieces;
    int pieces_planned;
    ckpt__checksum_choice cs; /* timed on the first snapshots */
    int checksum_started;     /* cs initialised (at the first image) */
    size_t neager; /* pieces an overlapped snapshot copies at the trigger */
    /* Overlapped snapshots (mpi_snapshot.c): on from the caller's first
     * mutation fence, or from the first save with fence_from_start. An
     * open one (snap_open, caller's thread only) is copied by the
     * background thread as its write job begins and by the caller's next
     * fence, each claiming pieces from snap_work; snap_copied counts the
     * pieces done of snap_target (under mu). */
    int overlap;
    int snap_open;
    int64_t snap_step;
    uint64_t snap_ticket;
    ckpt__snapshot_work snap_work;
    size_t snap_copied, snap_target;

    ckpt__save_op op;
    uint64_t next_ticket;
    ckpt__step_repeats repeats; /* rank 0: a step that does not advance */
    int delivering;             /* on_save_done running (caller thread) */
    /* COALESCE: the one snapshot waiting for the save in flight (the same
     * on every rank: see coalesce() in mpi_saver.c). */
    ckpt__image pending_image;
    int has_pending;
    int64_t pending_step;
    uint64_t pending_ticket;
    double pending_blocking_s;
    int pending_err;               /* its snapshot failed: reported by its op */
    ckpt__mpi_status last_outcome; /* of the last save delivered */
    ckpt__mpi_failures failures;   /* failed async saves to return */
    ckpt_saver_metrics metrics;
    /* SKIP: the next trigger's busy agreement (mpi_busy.c). */
    MPI_Request busy_req;
    int busy_posted; /* this rank's answer is posted */
    int busy_done;   /* and the allreduce completed: busy_any is valid */
    int busy_mine, busy_any;

    /* The background thread: one job at a time, guarded by mu. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    ckpt__bg_thread thread;
    int stopping;
    int job;      /* ckpt__job_kind queued or running */
    int job_done; /* the job's outcome is in op */
    /* Rank 0: the checkpoints the last commit's retention evicted, which
     * the thread deletes after the commit, off the save's path. */
    ckpt__eviction eviction;

    /* The ckpt_saver handle of ckpt_mpi_saver_as_saver (mpi_saver_ops.c),
     * and its pipelined agreement (one MPI_Ibcast on comm_ctl per call,
     * completed by the next call or by close). */
    ckpt_saver *handle;
    MPI_Request agree_req;
    int agree_posted;
    int agree_buf;
};

/* ---- variables (mpi_vars.c) -------------------------------------------- */

int ckpt__mpi_add_var(ckpt_mpi_saver *s, int kind, const ckpt_var *var,
                      const ckpt_slice_extent *extents, int flags);
void ckpt__mpi_vars_dispose(ckpt_mpi_saver *s);
/* The key a per-rank variable `name` is stored under for rank `rank`,
 * "<name>/rank-<rank>", into `out` (replacing): 0 or CKPT_ENOMEM. */
int ckpt__mpi_per_rank_key(ckpt_buf *out, const char *name, int rank);
/* CKPT_ESTATE naming `what` when called on `s`'s own background thread
 * (a log callback calling back into the saver; mpi_save_op.c). */
int ckpt__mpi_refuse_worker(const ckpt_mpi_saver *s, const char *what);

/* The collective check of ckpt_mpi_saver_check (once). `needs`: NULL, or
 * the save or restore function calling it ("save", "save_async",
 * "restore", "restore_latest"), which also needs variables: with none
 * registered it fails with CKPT_EINVAL on every rank and the list stays
 * open. */
int ckpt__mpi_check(ckpt_mpi_saver *s, const char *needs);

/* ---- collectives (mpi_collective.c) ------------------------------------ */

double ckpt__mpi_now(void);
/* `since` of a call that does not wait (poll): it never times out. */
#define CKPT__MPI_NOT_WAITING (-1.0)
/* One pause of a polling loop that began waiting at `since`
 * (ckpt__mpi_now); `*round` counts them (start at 0). */
void ckpt__mpi_pause(long *round, double since);
/* ckpt__mpi_pause's schedule: the first CKPT__MPI_PAUSE_YIELDS rounds
 * yield (0 returned), later ones sleep `waited_s` / 8 (the seconds waited
 * so far), in nanoseconds clamped to CKPT__MPI_PAUSE_MIN_NS ..
 * CKPT__MPI_PAUSE_MAX_NS (a negative or NaN wait: the shortest). */
#define CKPT__MPI_PAUSE_YIELDS 200
#define CKPT__MPI_PAUSE_MIN_NS 10000L   /* 10 us */
#define CKPT__MPI_PAUSE_MAX_NS 1000000L /* 1 ms */
long ckpt__mpi_pause_ns(long round, double waited_s);
/* Wait for `n` requests, polling, at most the collective timeout; past it
 * log `what` on stderr and MPI_Abort. */
void ckpt__mpi_wait_all(ckpt_mpi_saver *s, MPI_Request *reqs, int n,
                        const char *what);
/* Whether the requests completed, without waiting; aborts when they have
 * been waited for longer than the timeout since `since` (the start of the
 * caller's blocking wait on them; CKPT__MPI_NOT_WAITING: a non-blocking
 * call, which never aborts). */
int ckpt__mpi_test_all(ckpt_mpi_saver *s, MPI_Request *reqs, int n,
                       double since, const char *what);
/* As ckpt__mpi_test_all over reqs[0..n), where reqs[r] is a receive from
 * rank r (MPI_REQUEST_NULL for none): past the timeout the abort's message
 * names the ranks whose receive is still pending. */
int ckpt__mpi_test_from_ranks(ckpt_mpi_saver *s, MPI_Request *reqs, int n,
                              double since, const char *what);
/* Abort the job (MPI_Abort(comm, 70)) after "ckpt_mpi: rank R: <what>;
 * aborting the job (...)" on stderr: a failure this rank cannot report to
 * the others midway through a collective step (out of memory). A wait past
 * the timeout aborts in ckpt__mpi_test_all and ckpt__mpi_wait_all, with a
 * message naming the wait and that the other ranks did not respond. */
void ckpt__mpi_abort(ckpt_mpi_saver *s, const char *what);
/* Agree on one outcome on `comm`: every rank passes its own `err` (0 or a
 * code, with the calling thread's last error as the message); every rank
 * returns the most severe (lowest) code, with the message of the lowest
 * rank reporting it, prefixed "rank <r>: ". */
int ckpt__mpi_agree(ckpt_mpi_saver *s, MPI_Comm comm, int err,
                    const char *what);
/* The end of open (mpi_shared_dir.c): rank 0's `err` (its opening of the
 * directory) and, when that succeeded, whether every rank's `dir` is rank
 * 0's and its options are rank 0's (ckpt__mpi_options_compare), agreed on
 * comm_ctl as ckpt__mpi_agree does. */
int ckpt__mpi_open_agree(ckpt_mpi_saver *s, const char *dir, int err);

/* The options every rank must give alike (mpi_options_agree.c), as rank 0
 * sends them at open; `set` 0: rank 0 failed before, nothing to compare. */
typedef struct ckpt__mpi_agreed {
    int set;
    int busy_policy;
    int max_to_keep;
    int pad_step_number;
    int absolute_paths;
    double keep_hours;
    char basename[CKPT_BASENAME_MAX + 1];
} ckpt__mpi_agreed;
void ckpt__mpi_options_pack(const ckpt_mpi_saver *s, ckpt__mpi_agreed *out);
/* CKPT_EINVAL naming the first option of this rank's that differs from
 * rank 0's `root`, else 0 (also on rank 0, or when `root` is not set). */
int ckpt__mpi_options_compare(const ckpt_mpi_saver *s,
                              const ckpt__mpi_agreed *root);
/* Rank 0 decided `err` (its last error the message); every rank returns
 * it. */
int ckpt__mpi_bcast_outcome(ckpt_mpi_saver *s, MPI_Comm comm, int err,
                            const char *what);
/* Fill `st` from `err` and the calling thread's last error. */
void ckpt__mpi_status_set(ckpt__mpi_status *st, int rank, int err);
/* Return st->code with st->msg as the calling thread's error. */
int ckpt__mpi_status_raise(const ckpt__mpi_status *st);

/* ---- SKIP's busy agreement (mpi_busy.c) -------------------------------- */

/* From poll / wait: when this rank is idle, post its answer ("idle") for
 * the next trigger if not yet, and test the allreduce once. Never waits. */
void ckpt__mpi_busy_ahead(ckpt_mpi_saver *s);
/* At a trigger: post this rank's answer now (busy or not) unless posted
 * ahead. Returns whether the agreement has already completed. */
int ckpt__mpi_busy_post_now(ckpt_mpi_saver *s);
/* At a trigger, after ckpt__mpi_busy_post_now: wait for the agreement
 * (bounded) and consume it. Returns 1 when some rank was busy. */
int ckpt__mpi_busy_decide(ckpt_mpi_saver *s);
/* close / free (collective, this rank idle): complete the agreement posted
 * for a trigger that will not come. */
void ckpt__mpi_busy_settle(ckpt_mpi_saver *s);

/* ---- the ckpt_saver handle (mpi_saver_ops.c) ---------------------------- */

/* The handle's fence: ckpt_mpi_saver_mutation_fence (`from_now_on`), or
 * only complete an open overlapped snapshot (0). */
int ckpt__mpi_fence(ckpt_mpi_saver *s, int from_now_on);

/* Complete the agreement posted by the handle's last agree (bounded). */
void ckpt__mpi_agree_finish(ckpt_mpi_saver *s);

/* ---- restore (mpi_restore.c) ------------------------------------------- */

/* Rank 0 reads the state file; every rank gets the latest checkpoint's
 * prefix (collective). 0, CKPT_ENOTFOUND ("no checkpoint to restore") or
 * rank 0's error. */
int ckpt__mpi_latest(ckpt_mpi_saver *s, ckpt_buf *prefix);

/* ---- one rank's data file (mpi_shard.c) -------------------------------- */

/* Lay the owned variables out in the image (after the check). */
int ckpt__mpi_shard_plan(ckpt_mpi_saver *s);
/* Write the image to a temporary file of this rank's data file of
 * `prefix` (fsynced and closed), and describe the temp path and the
 * entries for rank 0 in op->blob. */
int ckpt__mpi_shard_write(ckpt_mpi_saver *s, ckpt__save_op *op);

/* ---- the snapshot (mpi_snapshot.c) -------------------------------------- */

/* Copy this rank's records into `img` (allocated and the snapshot planned
 * at first use). A read callback failure gives CKPT_EUSER naming the
 * variable. */
int ckpt__mpi_snapshot_take(ckpt_mpi_saver *s, ckpt__image *img);
/* The overlapped form, into s->image: the read callbacks and the small
 * variables now, the rest left open (s->snap_open) to the background
 * thread's write job and the caller's next fence. Same errors. */
int ckpt__mpi_snapshot_open(ckpt_mpi_saver *s, int64_t step);
/* Drop an open snapshot whose save is not started (SKIP: a rank was
 * busy): nothing copies it. */
void ckpt__mpi_snapshot_drop(ckpt_mpi_saver *s);
/* Caller's thread: copy what is left of the open snapshot, if any, with
 * the background thread, and wait until every piece is copied (the
 * variables may change after). */
void ckpt__mpi_snapshot_complete(ckpt_mpi_saver *s);
/* Background thread, at a write job: copy what is left of the snapshot
 * (nothing when it was complete at the trigger) and wait until every
 * piece is copied. */
void ckpt__mpi_snapshot_copy_rest(ckpt_mpi_saver *s);
/* Before `img` is written: every record's CRC (combined from the pieces',
 * or computed over the image when the copies were plain). */
void ckpt__mpi_snapshot_seal(const ckpt_mpi_saver *s, ckpt__image *img);

/* ---- restore (mpi_piece_read.c) ---------------------------------------- */

/* Read the record of entry `e` of reader `r` (a piece of `tensor`, for
 * messages) straight into `dst` (e->size bytes) through the data file the
 * reader holds, checking its CRC32C. 0, CKPT_ECORRUPT (record outside its
 * data file, short record, checksum), CKPT_ENOTFOUND or an I/O error. */
int ckpt__mpi_read_piece_into(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                              const char *tensor, void *dst);

/* ---- rank 0's commit (mpi_commit.c) ------------------------------------ */

/* Merge every rank's blob (op->blobs) into the index, rename the data
 * files into place and name the checkpoint in the state file. On failure
 * nothing is named and what was renamed is removed. */
int ckpt__mpi_commit(ckpt_mpi_saver *s, ckpt__save_op *op,
                     uint64_t *index_bytes);

/* ---- the save pipeline (mpi_save_op.c) --------------------------------- */

/* The snapshot is taken (local_err 0: write it) or failed (local_err:
 * report it to the agreement). */
/* mpi_failures.c: keep a failed async save's outcome (`step`: its step);
 * return the failures numbered below `upto` (or all) as one error, 0 if
 * none is left. */
void ckpt__mpi_failure_add(ckpt__mpi_failures *f, const ckpt__mpi_status *st,
                           int64_t step, const char *prefix);
/* A save of `step` succeeded: said with failures still to return. */
void ckpt__mpi_failures_note_ok(ckpt__mpi_failures *f, int64_t step);
int ckpt__mpi_failures_take(ckpt__mpi_failures *f, uint64_t upto);
int ckpt__mpi_failures_take_all(ckpt__mpi_failures *f);

void ckpt__mpi_op_start(ckpt_mpi_saver *s, int local_err);
/* Start the op's agreement once its write is done; advance it without
 * blocking. Returns 1 when the op has an outcome (delivered), else 0.
 * `wait_start`: when the caller's blocking wait began (ckpt__mpi_now()),
 * or CKPT__MPI_NOT_WAITING from a call that does not wait (poll). The
 * collective timeout counts from the later of it and the posting of the
 * collective now pending: the time this rank has been held by its peers,
 * never the time it spent training between polls, nor its own write. */
int ckpt__mpi_op_progress(ckpt_mpi_saver *s, double wait_start);
/* Start the op of the pending snapshot (COALESCE; the op is idle). */
void ckpt__mpi_promote_pending(ckpt_mpi_saver *s);
/* Drive the op in flight to its outcome (bounded). */
void ckpt__mpi_op_finish(ckpt_mpi_saver *s);
/* Hand a job to the background thread / take its outcome. */
int ckpt__mpi_thread_start(ckpt_mpi_saver *s);
void ckpt__mpi_thread_stop(ckpt_mpi_saver *s);
void ckpt__mpi_job_post(ckpt_mpi_saver *s, int job);
int ckpt__mpi_job_done(ckpt_mpi_saver *s);
/* Rank 0, after a commit: hand what its retention evicted to the thread
 * (started if need be; deleted here if it cannot start). */
void ckpt__mpi_evict_later(ckpt_mpi_saver *s, ckpt__kept_list *evicted);
/* Whether the thread is still deleting evicted checkpoints; with
 * `wait`, wait until it is not. */
int ckpt__mpi_evicting(ckpt_mpi_saver *s, int wait);

#endif
