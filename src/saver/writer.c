/* saver/writer.c - the saver's background writer thread: its job queue,
 * the busy policy, and the handshake by which an idle writer shares a
 * snapshot copy with the caller.
 *
 * Protocol. Everything named below lives in ckpt_saver and is guarded by
 * its `mu`; `cv` is broadcast on every change of it.
 *
 *  - Jobs. At most one job is being written (`active`) and at most one
 *    waits (`pending`). The caller's thread (save_async) picks a staging
 *    image with ckpt__writer_choose_image, which applies the busy policy:
 *    SKIP fails with CKPT_EBUSY while either slot is taken; WAIT waits until
 *    both are free; COALESCE replaces the pending job (its outcome:
 *    CKPT_ECANCELED) and reuses its image, or takes the image the active
 *    job does not use. The chosen image is referenced by no job, so the
 *    caller copies into it without the lock; ckpt__writer_submit then
 *    numbers the job (`next_ticket`) and makes it `pending`.
 *  - The writer takes `pending` into `active`, unlocks, runs the save
 *    pipeline (save_pipeline.c) on the job's image, and relocks to record
 *    the outcome, clear `active` and raise `finished_ticket` in one critical
 *    section: whoever sees the save counted also sees the writer free. It
 *    never touches the variables, only the image.
 *  - Sharing a snapshot (`help_state`): NONE -> ASKED by the caller, only
 *    while the writer is idle (no job, not stopping) and the image is large;
 *    ASKED -> RUNNING when the writer takes it up and, without the lock,
 *    claims pieces of plain-memory variables from `help_work` as the
 *    caller does; RUNNING -> DONE when claims run out. The caller, done
 *    with its own part, waits while RUNNING and then sets NONE, which also
 *    withdraws a request still ASKED: the writer reads help_state under
 *    mu, so it never starts on a withdrawn one. Each claim is an atomic
 *    index, so every piece is copied exactly once. An overlapped snapshot
 *    (overlap.c) is the same handshake with the caller's part deferred to
 *    the next fence: the writer is idle (no job) from ASKED until the
 *    fence submits the job, so it only ever copies or waits meanwhile.
 *  - Before writing, the writer seals the job's image (the records' CRCs
 *    from the pieces', or computed over the image when the snapshot's
 *    copies were plain).
 *  - Deleting what retention evicted (`eviction`, dir_state.c): a save's
 *    commit hands the list back; the writer records the outcome first
 *    (the save is durable and named, its write_s ends there) and then
 *    deletes, as does a synchronous save's caller, which queues the list
 *    for the writer when the thread runs and returns. The writer deletes
 *    before taking the next job, which may reuse an evicted name; wait and
 *    close wait for `eviction.pending` to clear. A trigger meanwhile
 *    still takes its snapshot (the deletion is not a write: `active` stays
 *    NULL) and asks the writer to share the copy, which it takes up once
 *    the files are gone; what it has not claimed by then the caller copies
 *    (for an overlapped snapshot: at the fence). A crash before the
 *    deletion leaves files no state file names: the next open sweeps
 *    them (dir_sweep.c).
 *  - Stopping: `stopping` is set and the thread joined; a pending job is
 *    still written first, so no snapshot taken is lost. */
#include "saver_internal.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

enum { HELP_NONE = 0, HELP_ASKED, HELP_RUNNING, HELP_DONE };

/* Below this many bytes waking the writer to share a snapshot costs more
 * than it saves. */
#define SHARE_MIN_BYTES ((uint64_t)4 << 20)

void ckpt__job_free(ckpt__job *job)
{
    if (!job)
        return;
    ckpt__free(job->prefix);
    ckpt__free(job->stored);
    ckpt__free(job);
}

void ckpt__saver_evict(ckpt_saver *s, ckpt__kept_list *evicted)
{
    if (!s->thread.started) {
        ckpt__dir_state_delete_evicted(&s->ds, evicted);
        return;
    }
    pthread_mutex_lock(&s->mu);
    ckpt__eviction_queue(&s->eviction, &s->ds, evicted, &s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* Write `job` (called without mu); returns with mu held, the outcome
 * recorded and the writer marked idle in the same critical section. */
static void run_job(ckpt_saver *s, ckpt__job *job)
{
    uint64_t bytes = 0;
    double write_s = 0.0;
    char msg[512] = "";
    ckpt__step_words step;
    ckpt__snapshot_work seal;
    ckpt__kept_list evicted = {0};
    int err;
    ckpt__snapshot_work_init(&seal, s->vars, s->nvars, s->pieces, s->npieces,
                             &s->images[job->image], job->checksum, 0);
    ckpt__image_seal(&seal);
    err = ckpt__saver_write_checkpoint(s, job, &s->images[job->image], &bytes,
                                       &write_s, &evicted);
    if (err < 0) {
        snprintf(msg, sizeof(msg), "save %s to %s failed: %s",
                 ckpt__step_say(&step, job->step), job->prefix,
                 ckpt_error_last()->message);
        CKPT__SAVER_LOG(s, CKPT_LOG_ERROR, "%s", msg);
    } else if (job->step == CKPT_NO_STEP) {
        CKPT__SAVER_LOG(s, CKPT_LOG_INFO,
                        "checkpoint %s is durable: %" PRIu64 " bytes in %.3f s",
                        job->prefix, bytes, write_s);
    } else {
        CKPT__SAVER_LOG(s, CKPT_LOG_INFO,
                        "checkpoint %s (step %" PRId64 ") is durable: %" PRIu64
                        " bytes in %.3f s",
                        job->prefix, job->step, bytes, write_s);
    }
    pthread_mutex_lock(&s->mu);
    ckpt__saver_record_outcome(s, job, err, err < 0 ? msg : NULL, write_s,
                               bytes);
    if (err < 0)
        ckpt__saver_keep_bg_error(s, err, msg);
    s->active = NULL;
    if (job->ticket > s->finished_ticket)
        s->finished_ticket = job->ticket;
    ckpt__eviction_queue(&s->eviction, &s->ds, &evicted, NULL);
}

/* Take up a request to share a snapshot (mu held on entry and exit). */
static void help_with_snapshot(ckpt_saver *s)
{
    s->help_state = HELP_RUNNING;
    pthread_mutex_unlock(&s->mu);
    ckpt__snapshot_claim(&s->help_work);
    pthread_mutex_lock(&s->mu);
    s->help_state = HELP_DONE;
    pthread_cond_broadcast(&s->cv);
}

int ckpt__saver_call_begin(ckpt_saver *s, const char *what)
{
    uintptr_t me = ckpt__thread_token();
    uintptr_t none = 0;
    /* the writer thread and a fork()ed child are told so first */
    if (ckpt__saver_refuse_writer_thread(s, what) < 0)
        return CKPT_ESTATE;
    if (atomic_load(&s->caller) == me) {
        s->call_depth++;
        return 0;
    }
    if (atomic_compare_exchange_strong(&s->caller, &none, me)) {
        s->call_depth = 1;
        /* A cancel inside the call would leave mu held (a condition
         * wait is a cancellation point) and the saver marked as in use:
         * it takes effect after the call instead. */
        s->cancel_state = ckpt__cancel_off();
        return 0;
    }
    return ckpt__error(CKPT_ESTATE,
                       "saver %s: %s: called while another thread is inside a "
                       "call on this saver: a saver is driven from one thread "
                       "at a time (the training loop); hand it over between "
                       "calls, or give each thread a saver of its own",
                       ckpt__saver_say(s), what);
}

void ckpt__saver_call_end(ckpt_saver *s)
{
    if (--s->call_depth == 0) {
        int state = s->cancel_state;
        atomic_store(&s->caller, (uintptr_t)0);
        ckpt__cancel_restore(state);
    }
}

/* This process's id, kept current across fork() by an atfork handler, so
 * the check on every saver call (a step's poll and fence among them) is a
 * load, not a getpid() system call. */
static _Atomic long process_id;
static pthread_once_t process_id_once = PTHREAD_ONCE_INIT;

static void note_process_id(void)
{
    atomic_store_explicit(&process_id, (long)getpid(), memory_order_relaxed);
}

static void watch_process_id(void)
{
    note_process_id();
    (void)pthread_atfork(NULL, NULL, note_process_id);
}

long ckpt__saver_pid(void)
{
    pthread_once(&process_id_once, watch_process_id);
    return atomic_load_explicit(&process_id, memory_order_relaxed);
}

int ckpt__saver_refuse_writer_thread(const ckpt_saver *s, const char *what)
{
    /* A child made by fork() has none of the parent's threads: a call
     * there would wait for a writer that never runs, or write into the
     * directory the parent saves into. */
    if (s->pid != 0 && s->pid != ckpt__saver_pid())
        return ckpt__error(CKPT_ESTATE,
                           "saver %s: %s: the saver was opened by process %ld "
                           "and this is process %ld, a child made by fork(), "
                           "where its writer thread does not run: open a "
                           "saver of the child's own (on another directory), "
                           "or exec",
                           ckpt__saver_say(s), what, s->pid, ckpt__saver_pid());
    if (!ckpt__bg_thread_runs_for(s))
        return 0;
    return ckpt__error(CKPT_ESTATE,
                       "saver %s: %s: called on the saver's own writer thread "
                       "(from a log callback), where it would wait for "
                       "itself; call the saver from the thread that saves",
                       ckpt__saver_say(s), what);
}

static void *writer_main(void *arg)
{
    ckpt_saver *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        ckpt__job *job;
        while (!s->pending && !s->stopping && s->help_state != HELP_ASKED &&
               !s->eviction.pending)
            pthread_cond_wait(&s->cv, &s->mu);
        if (s->help_state == HELP_ASKED) {
            help_with_snapshot(s);
            continue;
        }
        if (s->eviction.pending) {
            ckpt__eviction_run(&s->eviction, &s->ds, &s->mu, &s->cv);
            continue;
        }
        if (!s->pending)
            break;
        job = s->pending;
        s->pending = NULL;
        s->active = job;
        pthread_mutex_unlock(&s->mu);
        run_job(s, job); /* returns with mu held */
        ckpt__job_free(job);
        /* With a deletion queued, whoever waits is woken once, after it
         * (run below): an extra wake-up here made the caller and the
         * writer wake each other often enough that the scheduler placed
         * the writer on the caller's core, where its wake by the next
         * save_async preempted the caller for a time slice (4-6 ms). */
        if (!s->eviction.pending)
            pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

int ckpt__writer_start(ckpt_saver *s)
{
    return ckpt__bg_thread_start(&s->thread, writer_main, s,
                                 "starting the checkpoint writer thread");
}

void ckpt__writer_stop(ckpt_saver *s)
{
    ckpt__bg_thread_stop(&s->thread, &s->mu, &s->cv, &s->stopping);
}

int ckpt__writer_choose_image(ckpt_saver *s, int64_t step)
{
    ckpt__step_words words;
    int busy = s->active || s->pending;
    if (!busy)
        return 0;
    switch (s->opts.busy_policy) {
    case CKPT_BUSY_WAIT:
        while (s->active || s->pending)
            pthread_cond_wait(&s->cv, &s->mu);
        return 0;
    case CKPT_BUSY_COALESCE:
        if (s->pending) {
            ckpt__job *old = s->pending;
            int image = old->image;
            s->pending = NULL;
            /* That trigger now counts as coalesced, not started. */
            ckpt__metrics_coalesced(&s->metrics);
            ckpt__saver_push_result(s, old, CKPT_ECANCELED,
                                    "replaced by a newer snapshot (coalesce)",
                                    0.0, 0);
            if (old->ticket > s->finished_ticket && !s->active)
                s->finished_ticket = old->ticket;
            ckpt__job_free(old);
            return image;
        }
        return s->active->image == 0 ? 1 : 0;
    default:
        s->metrics.saves_skipped++;
        return ckpt__error(CKPT_EBUSY,
                           "saver %s: save %s skipped: the previous "
                           "checkpoint is still being written (ckpt_saver_wait "
                           "waits for it; the saver's busy_policy option "
                           "chooses to wait or coalesce instead)",
                           ckpt__saver_say(s), ckpt__step_say(&words, step));
    }
}

int ckpt__writer_snapshot_begin(ckpt_saver *s, int image, int share,
                                int checksum, int checksum_if_asked,
                                size_t first)
{
    ckpt__snapshot_work *w = &s->help_work;
    int asked = 0;
    ckpt__snapshot_work_init(w, s->vars, s->nvars, s->pieces, s->npieces,
                             &s->images[image], checksum, first);
    if (share && s->npieces > first) {
        pthread_mutex_lock(&s->mu);
        if (!s->active && !s->pending && !s->stopping) {
            w->checksum = checksum_if_asked;
            s->help_state = HELP_ASKED;
            pthread_cond_broadcast(&s->cv);
            asked = 1;
        }
        pthread_mutex_unlock(&s->mu);
    }
    return asked;
}

void ckpt__writer_snapshot_end(ckpt_saver *s, int asked)
{
    ckpt__snapshot_claim(&s->help_work);
    if (!asked)
        return;
    /* A request not taken up yet is withdrawn; one taken up is waited for
     * (at most the copy of one piece, as claims ran out). */
    pthread_mutex_lock(&s->mu);
    while (s->help_state == HELP_RUNNING)
        pthread_cond_wait(&s->cv, &s->mu);
    s->help_state = HELP_NONE;
    pthread_mutex_unlock(&s->mu);
}

int ckpt__writer_snapshot(ckpt_saver *s, int image, int checksum)
{
    int asked = ckpt__writer_snapshot_begin(
        s, image, s->image_bytes >= SHARE_MIN_BYTES && s->npieces >= 2,
        checksum, checksum, 0);
    int err = ckpt__snapshot_callbacks(&s->help_work);
    ckpt__writer_snapshot_end(s, asked);
    return err;
}

uint64_t ckpt__writer_number(ckpt_saver *s, ckpt__job *job)
{
    pthread_mutex_lock(&s->mu);
    job->ticket = ++s->next_ticket;
    pthread_mutex_unlock(&s->mu);
    return job->ticket;
}

uint64_t ckpt__writer_submit(ckpt_saver *s, ckpt__job *job)
{
    uint64_t ticket;
    pthread_mutex_lock(&s->mu);
    if (job->ticket == 0)
        job->ticket = ++s->next_ticket;
    ticket = job->ticket;
    s->pending = job;
    ckpt__saver_count_started(s, job->blocking_s);
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return ticket;
}
