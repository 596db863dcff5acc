/* saver/saver_internal.h - the saver's private structures: the directory
 * state (kept checkpoints and retention), the staging images of async
 * saves, the background writer's jobs, and the functions the saver's files
 * share. */
#ifndef CKPT_SAVER_INTERNAL_H
#define CKPT_SAVER_INTERNAL_H

#include "ckpt/bundle.h"
#include "ckpt/saver.h"
#include "ckpt/state.h"
#include "common/internal.h"
#include "format/checkpoint_state_write.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

/* Log through the saver's options (s: ckpt_saver *). */
#define CKPT__SAVER_LOG(s, level, ...)                                         \
    ckpt__log((s)->opts.log, (s)->opts.log_payload, (s)->opts.log_level,       \
              (level), __VA_ARGS__)

/* How a log line names a save's step: "of step 25", or "without a step"
 * for CKPT_NO_STEP (a fixed name); the text lives in `w`. */
typedef struct ckpt__step_words {
    char text[40];
} ckpt__step_words;
const char *ckpt__step_say(ckpt__step_words *w, int64_t step);

/* Saves in a row of one numbered step each overwrite one checkpoint: a loop
 * that never advances the step it passes keeps a single checkpoint and
 * loses its history. ckpt__step_repeats_note counts them (caller thread
 * only) and logs one warning per saver, naming `prefix`, at the third save
 * of one step in a row (a final or preemption save may repeat the last
 * periodic one's step once, legitimately). */
typedef struct ckpt__step_repeats {
    int64_t step; /* of the last save asked for; CKPT_NO_STEP at first */
    int count;    /* saves in a row of it */
    int warned;
} ckpt__step_repeats;
void ckpt__step_repeats_note(ckpt__step_repeats *r, int64_t step,
                             const char *prefix, const ckpt_saver_options *o);

/* ---- directory state: which checkpoints are kept, retention ------------- */

/* Log through the directory state's options (ds: ckpt__dir_state *). */
#define CKPT__DS_LOG(ds, level, ...)                                           \
    ckpt__log((ds)->log, (ds)->log_payload, (ds)->log_level, (level),          \
              __VA_ARGS__)

/* The kept checkpoints, oldest first, and the retention clock: what the
 * state file records. A commit builds the next list as a separate value
 * and swaps it in once the state file has it. */
typedef struct ckpt__kept_list {
    char **paths;              /* as written in the state file */
    double *times;             /* their save times (epoch seconds) */
    ckpt__state_double *texts; /* each time as the state file writes it,
                                  formatted once when the entry is added,
                                  copied with it, reused at every write */
    size_t n, cap;
    double last_preserved; /* keep_every_n_hours: the last one preserved's
                              save time, or the schedule's start */
} ckpt__kept_list;

/* This process's hold on a checkpoint directory (dir_lock.c). */
typedef struct ckpt__dir_lock ckpt__dir_lock;
/* Take (or share, within this process) the directory's lock: 0 with
 * *out set (NULL when the file system is not POSIX's), CKPT_EBUSY when a
 * saver of another process holds it, or an error opening the directory. */
int ckpt__dir_lock_acquire(const ckpt_fs *fs, const char *dir,
                           ckpt__dir_lock **out);
/* Whether another saver of this process holds `lock` too (NULL: no). */
int ckpt__dir_lock_shared(ckpt__dir_lock *lock);
/* Give up one hold (NULL is ignored); the last one drops the lock. */
void ckpt__dir_lock_release(ckpt__dir_lock *lock);
/* How many holders of `lock` have claimed it to save so far (0 for NULL):
 * a saver notes it when it reads the state file. */
unsigned long ckpt__dir_lock_claims(ckpt__dir_lock *lock);
/* Make `saver` the one holder of `lock` that saves, until
 * ckpt__dir_lock_unclaim: 0 (also for a NULL lock, or when it is that
 * holder already), or CKPT_EBUSY naming `dir` when another holder has the
 * claim, or had it since the caller read the state file (`claims_seen`
 * differs: the caller's list of checkpoints is out of date). */
int ckpt__dir_lock_claim(ckpt__dir_lock *lock, const void *saver,
                         unsigned long claims_seen, const char *dir);
/* Drop `saver`'s claim, if it has it (NULL lock: nothing). */
void ckpt__dir_lock_unclaim(ckpt__dir_lock *lock, const void *saver);
/* 0 when `dir` still names the directory `lock` was taken on (or `lock` is
 * NULL); else CKPT_ENOTFOUND saying the directory was moved, replaced or
 * swapped for a link (or, for a relative path, the process changed its
 * working directory): the saver must not write or delete through it. */
int ckpt__dir_lock_check(const ckpt__dir_lock *lock, const char *dir);

typedef struct ckpt__dir_state {
    const ckpt_fs *fs;
    const ckpt_clock *clock;
    char *dir;      /* the directory as given */
    char *basename; /* checkpoint names are <basename>-<step> */
    char *abs_dir;  /* realpath of dir when absolute paths are written */
    ckpt__kept_list kept;
    ckpt__kept_list unsure; /* failed saves the state file on disk may name
                               (its update and rollback failed), and
                               evicted checkpoints whose deletion failed:
                               noted in every pending note, deleted once a
                               state file is written without them */
    int max_to_keep;
    double keep_hours;
    ckpt_log_fn log;
    void *log_payload;
    int log_level;
    ckpt__dir_lock *lock;      /* taken by ckpt__dir_state_recover */
    unsigned long lock_claims; /* ckpt__dir_lock_claims when the list was
                                  read from the state file */
    int reconciled; /* ckpt__dir_state_reconcile ran (or had nothing to do) */
    /* The listed paths holding a '/' that led into the directory when
     * recovery read them (indexed by owned_index): the only such paths
     * eviction deletes, so that a symbolic link changed since cannot lead
     * one that named another directory's checkpoint to one of ours. */
    ckpt__kept_list owned_paths;
    ckpt__name_index owned_index;
} ckpt__dir_state;

int ckpt__dir_state_init(ckpt__dir_state *ds, const char *dir,
                         const ckpt_saver_options *opts);
void ckpt__dir_state_dispose(ckpt__dir_state *ds);
/* Load the list from the state file (missing: empty; unparsable: logged,
 * empty), drop entries whose index is missing (rewriting the state file
 * when it changed) and remove what interrupted saves and deletions left:
 * temporary files, and data files of <basename>-<step> checkpoints whose
 * index is missing. Retention is not applied: see reconcile. */
int ckpt__dir_state_recover(ckpt__dir_state *ds);
/* Before the first save writes anything: apply max_to_keep to the list
 * recovered at open (rewriting the state file, then deleting what it
 * evicted), once, so the save finds the room those checkpoints took. A
 * saver that never saves deletes nothing. On failure nothing is deleted
 * and the next save tries again. */
int ckpt__dir_state_reconcile(ckpt__dir_state *ds);
/* The state-file path string and full prefix of a new checkpoint name. */
int ckpt__dir_state_name(ckpt__dir_state *ds, const char *name,
                         ckpt_buf *stored_out, ckpt_buf *prefix_out);
/* The names of the checkpoint a save at `step` makes, as TensorFlow's Saver
 * names it: "<basename>-<step>" (the step zero-padded to 8 digits with
 * `pad_step_number`), or "<basename>" for CKPT_NO_STEP, refused when that
 * is the state file's name; then as ckpt__dir_state_name. */
int ckpt__dir_state_checkpoint_name(ckpt__dir_state *ds, const char *basename,
                                    int pad_step_number, int64_t step,
                                    ckpt_buf *stored, ckpt_buf *prefix);
/* Before overwriting an existing checkpoint of the same name, once the new
 * data is durable under temporary names. A listed one is kept under a
 * second name ("model.ckpt.replaced-25") when the file system offers
 * links: its files linked, the state file naming that in its place, so a
 * complete checkpoint is named at every moment; the next commit evicts
 * it. Otherwise it is unlisted. Then its own files go, index first (so it
 * never looks complete with mixed files), data files of any shard count. */
int ckpt__dir_state_forget(ckpt__dir_state *ds, const char *stored);
/* Record a durable checkpoint: build the next list (the new checkpoint
 * appended, retention applied), write it to the state file and swap it
 * in. What retention evicted is moved into `*evicted_out` (empty on entry;
 * left empty on failure), for the caller to delete afterwards with
 * ckpt__dir_state_delete_evicted: the state file no longer names them, so
 * a crash before that leaves only files the next open sweeps. The caller
 * must finish that deletion before its next commit, which could reuse a
 * name. On failure the list is unchanged and a state file the write may
 * have replaced is put back; when even that fails, *may_be_named is set:
 * the state file on disk may name the new checkpoint, whose files must
 * then be kept. */
int ckpt__dir_state_commit_evicting(ckpt__dir_state *ds, const char *stored,
                                    double save_time, int *may_be_named,
                                    ckpt__kept_list *evicted_out);
/* Delete the checkpoints in `evicted` (never outside the directory; a
 * failure is logged as a warning) and empty the list. Reads only what
 * ckpt__dir_state_init set, so it may run on another thread than the
 * commits, one deletion at a time. */
void ckpt__dir_state_delete_evicted(ckpt__dir_state *ds,
                                    ckpt__kept_list *evicted);

/* Evicted checkpoints handed to a saver's background thread to delete
 * after the commit, off the save's path (ckpt_saver's writer, the MPI
 * saver's rank-0 thread). Guarded by that saver's mutex `mu`; its `cv` is
 * broadcast on every change. `pending` stays 1 from the hand-over until the
 * files are gone: the saver's wait and close, and its next commit (which
 * may reuse an evicted name), wait for it to clear. */
typedef struct ckpt__eviction {
    ckpt__kept_list list; /* handed over, deletion not started */
    int pending;
} ckpt__eviction;

/* Hand `evicted` (emptied; an empty list is only freed) to the thread (mu
 * held), broadcasting `cv` (NULL: the thread itself queues it, and wakes
 * no one). A list still queued is deleted first, on the calling thread. */
void ckpt__eviction_queue(ckpt__eviction *q, ckpt__dir_state *ds,
                          ckpt__kept_list *evicted, pthread_cond_t *cv);
/* On the thread: delete the queued list without holding mu (held on entry
 * and return), then clear `pending`. */
void ckpt__eviction_run(ckpt__eviction *q, ckpt__dir_state *ds,
                        pthread_mutex_t *mu, pthread_cond_t *cv);
/* A saver's background thread (bg_thread.c): ckpt_saver's writer and the
 * MPI saver's thread. Started once, from the first call that needs it (a
 * failure to start: `what`, with the errno text); stopped by setting the
 * saver's `stopping` flag under `mu`, broadcasting `cv` and joining it (the
 * thread's loop ends when it sees the flag and has no work left). */
typedef struct ckpt__bg_thread {
    pthread_t id;
    int started;
    void *(*main_fn)(void *);
    void *arg;
} ckpt__bg_thread;

int ckpt__bg_thread_start(ckpt__bg_thread *t, void *(*main_fn)(void *),
                          void *arg, const char *what);
/* Whether the calling thread is the background thread started with `arg`
 * (its saver): a callback on it calling back into that saver. */
int ckpt__bg_thread_runs_for(const void *arg);
void ckpt__bg_thread_stop(ckpt__bg_thread *t, pthread_mutex_t *mu,
                          pthread_cond_t *cv, int *stopping);

/* Whether `stored` names a checkpoint inside this directory: a bare name,
 * or an absolute path whose directory is this one (abs_dir as written, or
 * any spelling that leads to the same directory). Only those are ever
 * deleted. */
int ckpt__dir_state_owns(const ckpt__dir_state *ds, const char *stored);
/* The index of `stored` in `l`, or l->n when it is not listed. */
size_t ckpt__kept_find(const ckpt__kept_list *l, const char *stored);
/* Index `l`'s names into `x` (empty, or holding names already: each name
 * not yet in it goes to its first position in `l`), so that many look-ups
 * cost O(1) each instead of a scan of the list. 0 or CKPT_ENOMEM. */
int ckpt__kept_index(ckpt__name_index *x, const ckpt__kept_list *l);

/* ---- leftovers of interrupted saves (dir_sweep.c) ------------------------ */

/* Remove temporary files of interrupted or failed saves from the
 * directory (names matching our temp patterns only). */
int ckpt__dir_state_remove_temps(ckpt__dir_state *ds);
/* Delete what the pending note names that `listed` (the state file as
 * read, empty when there is none; NULL when it did not parse: then
 * nothing) does not, remove
 * temporary files, then data files of <basename>-<step> checkpoints whose
 * index is missing; warn of complete numbered checkpoints the state file
 * does not list (left in place). The last step of
 * ckpt__dir_state_recover. */
int ckpt__dir_state_sweep_leftovers(ckpt__dir_state *ds,
                                    const ckpt_state *listed);
/* How many "<basename>-<step>.index" the directory holds, and the name of
 * the one of the highest step (set when there is one): checkpoints a
 * program would start afresh beside when no state file names them. */
int ckpt__dir_state_numbered(const ckpt__dir_state *ds, size_t *count,
                             ckpt_buf *newest);
/* Remove <prefix>.index, its data files and <prefix>.meta (index first, its
 * removal made durable by a directory fsync before the others). */
int ckpt__remove_checkpoint_files(const ckpt_fs *fs, const char *prefix);
/* A directory's data files ("<checkpoint>.data-<d>-of-<d>"), listed once
 * and sorted by checkpoint, so that removing many checkpoints lists the
 * directory once instead of once per checkpoint. */
typedef struct ckpt__data_files {
    char *dir; /* the directory listed */
    char **names;
    size_t n;
} ckpt__data_files;
/* List `dir`'s data files into `out` (empty). 0, or the listing's error. */
int ckpt__data_files_list(ckpt__data_files *out, const ckpt_fs *fs,
                          const char *dir);
void ckpt__data_files_dispose(ckpt__data_files *l);
/* ckpt__remove_checkpoint_files, the data files taken from `listed` when
 * it is a listing of the prefix's directory (else, or NULL: the directory
 * is listed now). */
int ckpt__remove_checkpoint_files_listed(const ckpt_fs *fs, const char *prefix,
                                         const ckpt__data_files *listed);
/* The two halves of it, for a batch that syncs its directory once between
 * them: remove <prefix>.index (0 also when it is already gone); then, once
 * a sync_dir has made that durable, <prefix>.meta and the data files. */
int ckpt__remove_checkpoint_index(const ckpt_fs *fs, const char *prefix);
int ckpt__remove_checkpoint_rest(const ckpt_fs *fs, const char *prefix,
                                 const ckpt__data_files *listed);
/* Give <from>.index and every data file of `from` a second name under the
 * prefix `to` (ckpt_fs.link; index first). On failure the links made are
 * left for the caller to remove. */
int ckpt__link_checkpoint_files(const ckpt_fs *fs, const char *from,
                                const char *to);

/* ---- the note of a save in progress (pending_note.c) --------------------- */

#define CKPT__PENDING_NOTE "checkpoint.pending"

/* Note `stored` (may be NULL) and the names in `evicted` (may be NULL) as
 * what the save in progress may leave unnamed; a failure is logged, never
 * returned (the note only helps the next open clean up). */
void ckpt__pending_note_write(const ckpt__dir_state *ds, const char *stored,
                              const ckpt__kept_list *evicted);
/* The save is named and what it evicted deleted, or it failed: forget the
 * note, except for the failed saves still carried (ds->unsure), which a
 * note of their own keeps naming. */
void ckpt__pending_note_remove(const ckpt__dir_state *ds);
/* At open: when the state file was read (`listed` not NULL), delete each
 * complete checkpoint the note names that the directory owns and that no
 * path of the file (model_checkpoint_path or a listed one, compared by
 * their last component, so another spelling of a path still counts) names;
 * then remove the note. Failures are logged. */
void ckpt__pending_note_apply(ckpt__dir_state *ds, const ckpt_state *listed);

/* ---- variables and staging images ---------------------------------------- */

/* Call v->read (var_callbacks.c) for bytes [0, bytes) into dst; a failure
 * is CKPT_EUSER "variable '<name>': read callback failed...". */
int ckpt__var_read(const ckpt_var *v, const char *name, void *dst,
                   size_t bytes);
/* Call v->write for bytes [0, bytes) from src; a failure is CKPT_EUSER
 * "variable '<name>': write callback failed...". */
int ckpt__var_write(const ckpt_var *v, const char *name, const void *src,
                    size_t bytes);

typedef struct ckpt__var {
    ckpt_var v; /* v.name points at `name` */
    char *name;
    uint64_t bytes;  /* record size */
    uint64_t offset; /* offset in the data image */
} ckpt__var;

typedef struct ckpt__image {
    uint8_t *ptr;         /* page-aligned, pre-faulted */
    size_t mapped;        /* bytes mapped (a multiple of the page size) */
    uint32_t *crcs;       /* per variable: CRC32C of its record (unmasked) */
    uint32_t *piece_crcs; /* per piece of the plan, when fused */
    int fused; /* the last snapshot into it fused its checksums (MPI saver;
                  ckpt_saver's jobs carry theirs) */
} ckpt__image;

/* Map a staging image of `bytes` and, when `prefault_now`, fault every
 * page in now (on huge pages where offered); otherwise the first copies
 * into it do (the writer's, for overlapped snapshots; no huge pages asked:
 * snapshot.c's prefault says why). */
int ckpt__image_alloc(ckpt__image *img, uint64_t bytes, size_t nvars,
                      size_t npieces, int prefault_now);
void ckpt__image_free(ckpt__image *img);

/* The largest total of a saver's variables (one rank's, for the MPI
 * saver): offsets in a data file are int64, and two staging images of it
 * must be countable. */
#define CKPT__MAX_STATE_BYTES ((uint64_t)INT64_MAX / 2)

/* Variables in plain memory are copied in pieces of at most this many
 * bytes, claimed one at a time by whichever thread is free. */
#define CKPT__PIECE_BYTES ((uint64_t)2 << 20)

/* A piece of a variable in plain memory: bytes [offset, offset + len). */
typedef struct ckpt__piece {
    size_t var; /* index of the variable */
    uint64_t offset;
    uint64_t len;
} ckpt__piece;

/* Variables of at most this many bytes (counters such as the global step,
 * RNG states, data positions, learning rates) are "small": an overlapped
 * snapshot copies them at the trigger, on the caller's thread, up to
 * CKPT__EAGER_TOTAL_BYTES of them, so changing them before the mutation
 * fence is safe. */
#define CKPT__EAGER_VAR_BYTES ((uint64_t)64 << 10)
#define CKPT__EAGER_TOTAL_BYTES ((uint64_t)1 << 20)

/* Split every variable in plain memory into pieces of at most
 * `piece_bytes`: first the small variables' (one piece each), then the
 * others', each group in variable order (a variable's pieces are
 * consecutive and in offset order); *out is NULL when there are none. */
int ckpt__snapshot_plan(const ckpt__var *vars, size_t n, uint64_t piece_bytes,
                        ckpt__piece **out, size_t *nout);
/* How many of the plan's first pieces an overlapped snapshot copies at the
 * trigger: small variables' pieces, up to CKPT__EAGER_TOTAL_BYTES. */
size_t ckpt__snapshot_eager_pieces(const ckpt__piece *p, size_t n);

/* One snapshot, which two threads may share: pieces are claimed one at a
 * time (`next`), so whichever thread is free copies the next one and
 * neither waits for the other to start; variables behind read callbacks
 * are copied by the calling thread only. */
typedef struct ckpt__snapshot_work {
    const ckpt__var *vars;
    size_t nvars;
    const ckpt__piece *pieces;
    size_t npieces;
    ckpt__image *img;
    int checksum;       /* 1: each copy computes its CRC (img->piece_crcs,
                           img->crcs for callbacks); 0: plain copies, the
                           writer checksums the image (ckpt__image_seal) */
    atomic_size_t next; /* next piece to claim */
} ckpt__snapshot_work;

/* Point `w` at the variables and pieces to copy into `img`, with
 * `checksum` as above and pieces [0, first) already taken (snapshot.c);
 * every field is set, so `w` may be reused. */
void ckpt__snapshot_work_init(ckpt__snapshot_work *w, const ckpt__var *vars,
                              size_t nvars, const ckpt__piece *pieces,
                              size_t npieces, ckpt__image *img, int checksum,
                              size_t first);
/* Copy every variable into `img` at its offset on the calling thread,
 * whole variables, each record's CRC fused into its copy (img->crcs); a
 * read callback failure gives CKPT_EUSER naming the variable. (For
 * callers with their own images, such as the MPI saver.) */
int ckpt__snapshot_vars(const ckpt__var *vars, size_t n, ckpt__image *img);
/* Copy claimed pieces until none is left (cannot fail); how many this
 * call copied. */
size_t ckpt__snapshot_claim(ckpt__snapshot_work *w);
/* Copy pieces [0, n) on the calling thread: those the work's `next` was
 * started past (ckpt__writer_snapshot_begin's `first`). */
void ckpt__snapshot_copy_first(const ckpt__snapshot_work *w, size_t n);
/* Copy every variable behind a read callback (calling thread only); a
 * failing callback gives CKPT_EUSER naming the variable, and no more
 * pieces are handed out. */
int ckpt__snapshot_callbacks(ckpt__snapshot_work *w);
/* The calling thread's whole part: the callbacks, then claims. */
int ckpt__snapshot_run_caller(ckpt__snapshot_work *w);
/* Once every piece is copied: set img->crcs for every variable (combining
 * the pieces' CRCs, or checksumming the image when the copies were
 * plain). Called by the writer before it writes the image. */
void ckpt__image_seal(const ckpt__snapshot_work *w);
/* Where snapshots' checksums are computed: fused into the copies
 * (checksum 1) or by the writer, which seals the image (0). Both savers
 * time their first CKPT__CHECKSUM_PROBES snapshots, alternately fused and
 * plain (fused first), and keep plain copies only when clearly faster. */
#define CKPT__CHECKSUM_PROBES 4
typedef struct ckpt__checksum_choice {
    int checksum;            /* the placement for the next snapshot */
    int probes;              /* snapshots timed so far (PROBES: decided) */
    double fused_s, plain_s; /* best of each, seconds (-1: none yet) */
} ckpt__checksum_choice;
/* Start choosing for a state of `state_bytes`: fused first; decided at
 * once (no probing) when CKPT_SNAPSHOT_CHECKSUM=copy or =writer forces it
 * or the state is too small to time. Also makes the CRC kernel's one-time
 * choices, so that no snapshot pays them. */
void ckpt__checksum_choice_init(ckpt__checksum_choice *c, uint64_t state_bytes);
/* A snapshot took `seconds` with the checksum `fused` into its copies or
 * not: while probing, sets c->checksum for the next one (the other
 * placement, or the choice once every probe ran). Returns 1 when this call
 * made the choice (for the caller to log it), else 0. */
int ckpt__checksum_choice_timed(ckpt__checksum_choice *c, int fused,
                                double seconds);

/* ---- writing one checkpoint --------------------------------------------- */

/* Called once the checkpoint's data is durable under a temporary name,
 * right before its files are put in place (NULL fn: nothing). */
typedef struct ckpt__before_rename {
    int (*fn)(void *payload);
    void *payload;
} ckpt__before_rename;

/* Write `prefix` from a data image (records at their offsets, CRCs taken
 * by the snapshot): one data file written from the image, then the index;
 * commits crash-safely. `bytes_out` receives data + index bytes. */
int ckpt__write_from_image(const ckpt_fs *fs, const char *prefix,
                           const ckpt__var *vars, size_t n,
                           const ckpt__image *img, uint64_t image_bytes,
                           int direct_io, const ckpt__before_rename *hook,
                           uint64_t *bytes_out);
/* Write `prefix` straight from the variables (sync saves). */
int ckpt__write_from_vars(const ckpt_fs *fs, const char *prefix,
                          const ckpt__var *vars, size_t n,
                          const ckpt__before_rename *hook, uint64_t *bytes_out);

/* ---- the saver ---------------------------------------------------------- */

typedef struct ckpt__job {
    uint64_t ticket;
    int64_t step;
    char *prefix; /* full prefix */
    char *stored; /* as named in the state file */
    int image;    /* index into saver->images */
    int checksum; /* the snapshot's copies computed the CRCs */
    double blocking_s;
} ckpt__job;

typedef struct ckpt__result {
    ckpt_save_result r;
    char *prefix;
    char *error;
} ckpt__result;

struct ckpt_saver {
    /* A handle of ckpt_saver_wrap: everything else is unused (saver_ops.c) */
    const ckpt_saver_ops *ops;
    void *ops_self;
    /* A handle its owner frees (ckpt__saver_ops_set_owner): the call that
     * does, which ckpt_saver_free names when refusing it. */
    const char *owner_free;
    long pid; /* the process that opened it (a fork()ed child is refused) */
    /* The thread inside a call that drives the saver (save, save_async,
     * poll, wait, close, restore, fence), 0 when none, and how deep (an
     * on_save_done callback may call the saver again); another thread's
     * call meanwhile is refused (ckpt__saver_call_begin). */
    _Atomic uintptr_t caller;
    int call_depth;
    int cancel_state; /* the caller's, restored when its call ends */

    ckpt_saver_options opts;
    char *basename;
    const ckpt_fs *fs;
    ckpt__dir_state ds;
    pthread_mutex_t ds_mu; /* guards ds: the writer thread commits to it */

    ckpt__var *vars;
    size_t nvars, cap_vars;
    ckpt__name_index var_names; /* each var's name -> its index */
    uint64_t image_bytes;       /* sum of record sizes */
    int frozen;                 /* variables fixed after the first save */
    size_t memory_checked;      /* nvars when their memory was last found
                                   distinct (var_memory.c) */
    int need_cleanup;           /* a save failed: sweep temp files before the
                                   next one (written by whoever saves: one save
                                   runs the pipeline at a time) */
    int closed;
    ckpt__step_repeats repeats; /* a step that does not advance */
    int delivering; /* on_save_done callbacks running (caller thread) */
    /* Direct or buffered image writes (direct_io 0), measured by the first
     * writes (save_pipeline.c); like need_cleanup, used by whoever runs
     * the pipeline. */
    int write_probes;          /* image writes timed so far */
    int write_direct;          /* the choice, once every probe ran */
    double probe_direct_bps;   /* best O_DIRECT rate timed, bytes/s */
    double probe_buffered_bps; /* best page-cache rate timed, bytes/s */

    ckpt__image images[2];
    int num_images;
    ckpt__piece *pieces; /* the snapshot plan (fixed with the variables) */
    size_t npieces;
    size_t neager; /* pieces an overlapped snapshot copies at the trigger */
    ckpt__checksum_choice cs; /* where snapshots' checksums are computed */
    int overlap;         /* a mutation fence was called: save_async may leave
                            the copy to the writer until the next fence */
    ckpt__job *deferred; /* triggered, copy not yet complete (caller
                            thread only; the writer helps through
                            help_work) */

    /* Everything below is shared with the writer thread: guarded by mu. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    ckpt__bg_thread thread;
    int stopping;
    ckpt__job *active;  /* being written */
    ckpt__job *pending; /* snapshot taken, waiting for the writer */
    /* An idle writer helps with a snapshot: asked, it claims pieces
     * from help_work as save_async does; save_async withdraws a request
     * the writer has not taken up yet, or waits for it to finish. */
    int help_state; /* HELP_NONE, _ASKED, _RUNNING or _DONE (writer.c) */
    ckpt__snapshot_work help_work;
    /* What retention evicted, for the writer thread to delete after the
     * save that evicted it is counted. */
    ckpt__eviction eviction;
    uint64_t next_ticket;
    uint64_t finished_ticket; /* highest ticket with an outcome */
    ckpt__result *done;       /* outcomes not yet delivered */
    size_t ndone, cap_done;
    int bg_error;          /* first undelivered background failure */
    char bg_message[2048]; /* room for a later failure too */
    ckpt_saver_metrics metrics;
};

/* ---- the save pipeline (save_pipeline.c) ------------------------------- */

/* What every save runs once its data is ready: sweep the temporary files a
 * failed save left, forget an existing checkpoint named job->stored, write
 * job->prefix (from `img` when not NULL, else straight from the variables),
 * and commit it to the state file, removing its files when that fails. On
 * failure the next save sweeps first. `bytes_out` receives the bytes
 * written, `seconds_out` the time all of it took, and `evicted` (empty on
 * entry) the checkpoints retention no longer keeps, named no more, for
 * ckpt__saver_evict: their deletion is not part of the save. Called by one
 * thread at a time: the caller's (sync saves, after the writer went idle,
 * deletions included) or the writer's. */
/* 0 when no two registered variables share memory (checked once per set
 * of variables); CKPT_EINVAL naming both, in a message prefixed with the
 * saver and `op`. var_memory.c. */
int ckpt__saver_check_own_memory(ckpt_saver *s, const char *op);
int ckpt__saver_write_checkpoint(ckpt_saver *s, const ckpt__job *job,
                                 const ckpt__image *img, uint64_t *bytes_out,
                                 double *seconds_out, ckpt__kept_list *evicted);
/* A synchronous save's write (the writer idle): through staging image 0
 * when one is reserved (copied there first, by both threads), else
 * straight from the variables; `seconds_out` covers the copy too. */
int ckpt__saver_write_sync(ckpt_saver *s, const ckpt__job *job,
                           uint64_t *bytes_out, double *seconds_out,
                           ckpt__kept_list *evicted);

/* ---- outcomes (outcomes.c) ------------------------------------------------
 * The functions marked "mu held" are called with s->mu locked. */

/* Queue an outcome for on_save_done (mu held). */
void ckpt__saver_push_result(ckpt_saver *s, const ckpt__job *job, int status,
                             const char *error, double write_s, uint64_t bytes);
/* Count a save as started and its blocking time (mu held). */
void ckpt__saver_count_started(ckpt_saver *s, double blocking_s);

/* The metrics rules of both savers (metrics.c): a save started after
 * blocking the caller blocking_s; a started save replaced by a newer
 * snapshot (coalesced, no longer started); a save finished, completed
 * (ok: bytes written, its step the last saved) or failed, after write_s
 * seconds of writing. */
void ckpt__metrics_started(ckpt_saver_metrics *m, double blocking_s);
void ckpt__metrics_coalesced(ckpt_saver_metrics *m);
void ckpt__metrics_finished(ckpt_saver_metrics *m, int ok, int64_t step,
                            uint64_t bytes, double write_s);
/* Count a finished save in the metrics and queue its outcome (mu held). */
void ckpt__saver_record_outcome(ckpt_saver *s, const ckpt__job *job, int err,
                                const char *error, double write_s,
                                uint64_t bytes);
/* Keep `err` as the background error unless one is waiting (mu held). */
void ckpt__saver_keep_bg_error(ckpt_saver *s, int err, const char *message);
/* Hand queued outcomes to on_save_done, on the calling thread. */
void ckpt__saver_deliver(ckpt_saver *s);
/* Common entry of save, save_async, poll, wait: deliver outcomes and return
 * a pending background failure once. */
int ckpt__saver_enter(ckpt_saver *s);
/* CKPT_ESTATE naming `what` when called on `s`'s own writer thread (a log
 * callback calling back into the saver, which would wait for itself). */
int ckpt__saver_refuse_writer_thread(const ckpt_saver *s, const char *what);
/* Begin a call that drives the saver on this thread: 0, or CKPT_ESTATE
 * naming `what` when another thread is inside such a call (a saver is
 * driven from one thread at a time). ckpt__saver_call_end ends it. */
int ckpt__saver_call_begin(ckpt_saver *s, const char *what);
void ckpt__saver_call_end(ckpt_saver *s);
/* The process id to record in a new saver (ckpt__saver_refuse_writer_
 * thread refuses the calls of a child made by fork()). */
long ckpt__saver_pid(void);

/* ---- the writer thread (writer.c; its top comment is the protocol) ------- */

void ckpt__job_free(ckpt__job *job);
/* Delete what a save's commit evicted (`evicted`, emptied): on the writer
 * thread when it runs (queued; caller's thread only), else now. */
void ckpt__saver_evict(ckpt_saver *s, ckpt__kept_list *evicted);
/* Start the writer thread if it is not running. */
int ckpt__writer_start(ckpt_saver *s);
/* Stop and join it; a pending job is written first. */
void ckpt__writer_stop(ckpt_saver *s);
/* The image the next snapshot goes to under the busy policy (mu held), or
 * CKPT_EBUSY when the save is skipped. */
int ckpt__writer_choose_image(ckpt_saver *s, int64_t step);
/* Copy every variable into images[image], fusing the checksum into the
 * copies when `checksum` (else ckpt__image_seal computes it); an idle
 * writer shares the copy of the variables in plain memory when the state
 * is large. */
int ckpt__writer_snapshot(ckpt_saver *s, int image, int checksum);
/* The two halves of a snapshot: set up help_work for images[image] and,
 * when `share` and the writer is idle, ask it to claim pieces (returns
 * whether it was asked); the copies fuse the checksum when `checksum`, or
 * `checksum_if_asked` once the writer was asked. Claims start at piece
 * `first`: the caller copies the ones before it itself
 * (ckpt__snapshot_copy_first). Then copy the pieces left and wait for the
 * writer's last one, or withdraw the request. */
int ckpt__writer_snapshot_begin(ckpt_saver *s, int image, int share,
                                int checksum, int checksum_if_asked,
                                size_t first);
void ckpt__writer_snapshot_end(ckpt_saver *s, int asked);
/* Number `job` now (takes mu), before it is submitted. */
uint64_t ckpt__writer_number(ckpt_saver *s, ckpt__job *job);
/* Number `job` unless it is numbered already and queue it as pending
 * (takes mu; the writer owns the job afterwards). Returns its ticket. */
uint64_t ckpt__writer_submit(ckpt_saver *s, ckpt__job *job);

/* ---- snapshot setup and overlapped snapshots (overlap.c) ---------------- */

/* Once, at the first image: where snapshots' checksums are computed,
 * fused into the copy (s->cs.checksum 1) or by the writer (0). The first
 * snapshots alternate between the two and are timed
 * (ckpt__saver_snapshot_timed), unless CKPT_SNAPSHOT_CHECKSUM=copy or
 * =writer forces a choice or the state is too small to time. */
void ckpt__saver_choose_checksum(ckpt_saver *s);
/* A snapshot on the caller's thread took `seconds` with the checksum fused
 * into the copies (`fused`) or not: while probing, sets s->cs.checksum for
 * the next one (the other placement, or once every probe ran, plain copies
 * only when clearly faster). */
void ckpt__saver_snapshot_timed(ckpt_saver *s, int fused, double seconds);
/* save_async's snapshot once the fence is in use: the callbacks on the
 * caller's thread, then, if the writer is idle, the plain pieces are left
 * to it and `job` becomes s->deferred (returns 1); otherwise the copy is
 * completed here (0). An error leaves no snapshot open. */
int ckpt__saver_overlap_snapshot(ckpt_saver *s, ckpt__job *job);
/* Complete an open overlapped snapshot and submit its job; nothing when
 * none is open. Every saver call but poll and get_metrics calls it before
 * it could let the variables change. */
void ckpt__saver_complete_snapshot(ckpt_saver *s);

/* The defaults every saver applies to a zero field of ckpt_saver_options
 * (ckpt_saver and ckpt_mpi_saver alike). */
#define CKPT__DEFAULT_MAX_TO_KEEP 5
#define CKPT__DEFAULT_BASENAME "model.ckpt"

/* The basename of checkpoints a saver with options basename `basename`
 * writes: that one, else (NULL) CKPT__DEFAULT_BASENAME. */
static inline const char *ckpt__saver_basename(const char *basename)
{
    return basename ? basename : CKPT__DEFAULT_BASENAME;
}

/* How a message names saver `s`, so that a user with several savers
 * sees which one: its directory; "(wrapped)" for a ckpt_saver_wrap
 * handle, which has none of its own (its saver's messages name theirs). */
static inline const char *ckpt__saver_say(const ckpt_saver *s)
{
    return s->ds.dir ? s->ds.dir : "(wrapped)";
}

/* Whether `basename` can name a checkpoint's files in its directory: not
 * empty, no '/', and not "." or ".." (a step-less save's prefix would be
 * the directory itself or its parent). */
static inline int ckpt__basename_is_file_name(const char *basename)
{
    return *basename && !strchr(basename, '/') && strcmp(basename, ".") != 0 &&
           strcmp(basename, "..") != 0;
}

/* The checks every saver makes of a ckpt_saver_options (its version,
 * max_to_keep, direct_io, keep_checkpoint_every_n_hours, busy_policy,
 * basename): 0, or CKPT_EVERSION / CKPT_EINVAL with a message that starts
 * with `what` (e.g. "saver options"). */
int ckpt__saver_options_check(const ckpt_saver_options *o, const char *what);
/* 0 when `dir` is a directory; else CKPT_ENOTFOUND saying it does not
 * exist (with a hint when it reads as TensorFlow's save_path,
 * "<directory>/<basename or *.ckpt>") or is not a directory; or the error
 * listing it. For the single-process and the distributed saver's open. */
int ckpt__saver_check_dir(const ckpt_fs *fs, const char *dir,
                          const char *basename);

/* restore_latest's outcome from its restore of the checkpoint the state
 * file names (restore.c; both savers): CKPT_ENOTFOUND (a variable, or a
 * rank's value, the checkpoint lacks) becomes CKPT_EINVAL, so that
 * restore_latest's CKPT_ENOTFOUND means only "no checkpoint". */
int ckpt__restore_latest_outcome(int err);

/* When no state file names a latest checkpoint (there is none, or it does
 * not parse) while numbered checkpoints are in the saver's directory: what
 * to tell a program about to start afresh beside them, appended to `note`
 * (nothing when there are none, `s` is a wrapped saver, or `dir`, when not
 * NULL, is not the saver's directory). */
void ckpt__saver_unnamed_note(ckpt_saver *s, const char *dir, ckpt_buf *note);
/* The same for the directory `ds` of any saver; `restore` names the call
 * that restores one checkpoint by its prefix. */
void ckpt__dir_state_unnamed_note(const ckpt__dir_state *ds,
                                  const char *restore, ckpt_buf *note);
/* Part of that note, for a caller that only has the message it ends. */
#define CKPT__UNNAMED_NOTE_MARK "not named by a state file and so not restored"

#endif
