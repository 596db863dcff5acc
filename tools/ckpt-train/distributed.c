/* tools/ckpt-train/distributed.c - `mpiexec -n R ckpt-train --distributed`:
 * the demo's MLP trained data-parallel. Every rank reads its own shard of
 * the data (its own synthetic data set and shuffling), computes gradients
 * on its batch, averages them with MPI_Allreduce and applies the same Adam
 * update, so the weights stay identical on every rank. Checkpoints go
 * through ckpt_mpi: weights, Adam state and the step are replicated (each
 * written once), each rank's data position is per-rank
 * ("data/cursor/rank-<r>", ...). A run started again on the same directory
 * resumes from the newest complete checkpoint; with another rank count the
 * weights restore and ranks without a stored data position start their
 * shard afresh.
 *
 * Every collective that waits on other ranks is bounded by
 * --collective-timeout (the saver's collective_timeout_s): the saver's
 * own, and this file's, posted non-blocking and waited for with
 * ckpt_mpi_saver_wait_requests; MPI_Init_thread and MPI_Finalize run
 * under a watchdog thread (watchdog.h). Past
 * the bound the job ends with a message and exit status 70 (docs/mpi.md,
 * "Bounded waits"), so a stalled or dead rank never hangs the others. */
#include "distributed.h"

#include "ckpt.h"
#include "ckpt/mpi.h"
#include "data.h"
#include "make_dirs.h"
#include "memory.h"
#include "model.h"
#include "options.h"
#include "report.h"
#include "restored_check.h"
#include "train_var.h"
#include "watchdog.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The parts of a rank's data position, stored per rank. */
#define POSITION_PARTS 4
static const char *const position_names[POSITION_PARTS] = {
    "data/order", "data/cursor", "data/epoch", "data/rng_state"};

/* One part of the data position, registered through callbacks so that a
 * restore says which parts it wrote: a rank with none of them stored
 * starts its shard afresh (more ranks than wrote the checkpoint), one with
 * some but not all would resume from a mixed position. */
typedef struct position_part {
    void *mem;
    unsigned bit;
    unsigned *restored;
} position_part;

typedef struct dist_trainer {
    train_options o;
    int rank, size;
    mlp model;
    dataset data;
    dataset ahead; /* reading position of the step in progress */
    int64_t global_step;
    float *batch_x;
    int32_t *batch_y;
    float *grads; /* every gradient, packed for one allreduce, then the
                     stop vote (grads[ngrads]) */
    size_t ngrads;
    int stopped;           /* some rank caught SIGTERM or SIGINT: all stopped */
    ckpt_mpi_saver *saver; /* bounds this file's collectives too */
    position_part parts[POSITION_PARTS];
    unsigned restored; /* bit i: position_names[i] was restored */
} dist_trainer;

/* ---- stopping on a signal --------------------------------------------------
 * SIGTERM or SIGINT reaches ranks at different steps (or one rank only), so
 * a rank does not stop alone: it votes to stop in the step's allreduce,
 * and every rank stops after the first step in which any rank voted, then
 * closes the session together (the final checkpoint is collective). */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
    stop_signal = sig;
}

/* The handler replaces an ignored SIGTERM, but a SIGTERM blocked in the
 * mask the process started with (inherited across exec) would stay
 * pending: said once, as the library's preemption handler says it. */
static void warn_blocked_term(int rank)
{
    sigset_t mask;
    if (pthread_sigmask(SIG_BLOCK, NULL, &mask) == 0 &&
        sigismember(&mask, SIGTERM) == 1)
        fprintf(stderr,
                "ckpt-train: rank %d: warn: SIGTERM is blocked in the signal "
                "mask ckpt-train started with: a SIGTERM (a preemption "
                "notice) will not stop the training, and no final "
                "checkpoint is written for it\n",
                rank);
}

/* Catch SIGTERM and SIGINT for the training, their dispositions before
 * into saved[0] and saved[1]. */
static void catch_stop_signals(struct sigaction saved[2])
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_stop_signal;
    sigaction(SIGTERM, &sa, &saved[0]);
    sigaction(SIGINT, &sa, &saved[1]);
}

/* Put back what catch_stop_signals found: a signal the process ignored,
 * or handled (a launcher's or a library's handler), means that again
 * for the rest of the run, the exit's MPI_Finalize included. */
static void restore_stop_signals(const struct sigaction saved[2])
{
    sigaction(SIGTERM, &saved[0], NULL);
    sigaction(SIGINT, &saved[1], NULL);
}

int ckpt_train_wants_distributed(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--distributed") == 0)
            return 1;
    return 0;
}

/* ---- variables ----------------------------------------------------------- */

static int rep(ckpt_mpi_saver *s, ckpt_var v)
{
    return ckpt_mpi_saver_add_replicated(s, &v);
}

static int part_read(void *dst, uint64_t offset, size_t n, void *payload)
{
    const position_part *p = payload;
    memcpy(dst, (const char *)p->mem + offset, n);
    return 0;
}

static int part_write(const void *src, uint64_t offset, size_t n, void *payload)
{
    position_part *p = payload;
    memcpy((char *)p->mem + offset, src, n);
    *p->restored |= p->bit;
    return 0;
}

/* The data position per rank, optional so a run on more ranks than wrote
 * the checkpoint works (position_names' order). */
static int register_position(dist_trainer *t, ckpt_mpi_saver *s)
{
    ckpt_var v[POSITION_PARTS];
    int err = 0;
    v[0] = train_var("data/order", CKPT_DT_INT32, 1, t->data.n, 0, NULL);
    v[1] = train_var("data/cursor", CKPT_DT_INT64, 0, 0, 0, NULL);
    v[2] = train_var("data/epoch", CKPT_DT_INT64, 0, 0, 0, NULL);
    v[3] = train_var("data/rng_state", CKPT_DT_UINT64, 1, 4, 0, NULL);
    t->parts[0].mem = t->data.order;
    t->parts[1].mem = &t->data.cursor;
    t->parts[2].mem = &t->data.epoch;
    t->parts[3].mem = t->data.shuffle.s;
    for (int i = 0; err == 0 && i < POSITION_PARTS; i++) {
        t->parts[i].bit = 1u << i;
        t->parts[i].restored = &t->restored;
        v[i].read = part_read;
        v[i].write = part_write;
        v[i].payload = &t->parts[i];
        err = ckpt_mpi_saver_add_per_rank(s, &v[i], CKPT_MPI_OPTIONAL);
    }
    return err;
}

/* restored_check's `complete`: all of this rank's position restored, or
 * none (a fresh start); else the first part missing is named. */
static int position_complete(char *why, size_t why_n, void *payload)
{
    const dist_trainer *t = payload;
    unsigned all = (1u << POSITION_PARTS) - 1;
    if (t->restored == 0 || t->restored == all)
        return 0;
    for (int i = 0; i < POSITION_PARTS; i++)
        if (!(t->restored & (1u << i))) {
            snprintf(why, why_n,
                     "%s/rank-%d is not in the checkpoint, which holds "
                     "other parts of this rank's data position",
                     position_names[i], t->rank);
            break;
        }
    return -1;
}

/* The same names as the single-process trainer; the data position per
 * rank (register_position). */
static int register_vars(dist_trainer *t, ckpt_mpi_saver *s)
{
    static const char *const suffix[6] = {"kernel",        "kernel/Adam",
                                          "kernel/Adam_1", "bias",
                                          "bias/Adam",     "bias/Adam_1"};
    char name[160];
    int err = rep(
        s, train_var("global_step", CKPT_DT_INT64, 0, 0, 0, &t->global_step));
    for (int l = 0; err == 0 && l < t->model.nlayers; l++) {
        layer *L = &t->model.layers[l];
        float *data[6] = {L->w, L->mw, L->vw, L->b, L->mb, L->vb};
        char scope[32];
        mlp_layer_scope(scope, sizeof(scope), l);
        for (int k = 0; err == 0 && k < 6; k++) {
            snprintf(name, sizeof(name), "%s/%s", scope, suffix[k]);
            err = k < 3 ? rep(s, train_var(name, CKPT_DT_FLOAT, 2, L->in,
                                           L->out, data[k]))
                        : rep(s, train_var(name, CKPT_DT_FLOAT, 1, L->out, 0,
                                           data[k]));
        }
    }
    if (err == 0)
        err = rep(s, train_var("beta1_power", CKPT_DT_FLOAT, 0, 0, 0,
                               &t->model.beta1_power));
    if (err == 0)
        err = rep(s, train_var("beta2_power", CKPT_DT_FLOAT, 0, 0, 0,
                               &t->model.beta2_power));
    if (err == 0)
        err = rep(s, train_var("optimizer/iterations", CKPT_DT_INT64, 0, 0, 0,
                               &t->model.iterations));
    if (err == 0)
        err = register_position(t, s);
    return err;
}

/* ---- the step --------------------------------------------------------------
 */

static void pack_grads(dist_trainer *t, int unpack)
{
    size_t at = 0;
    float scale = 1.0f / (float)t->size;
    for (int l = 0; l < t->model.nlayers; l++) {
        layer *L = &t->model.layers[l];
        size_t nw = (size_t)L->in * (size_t)L->out, nb = (size_t)L->out;
        if (!unpack) {
            memcpy(t->grads + at, L->gw, nw * sizeof(float));
            memcpy(t->grads + at + nw, L->gb, nb * sizeof(float));
        } else {
            for (size_t i = 0; i < nw; i++)
                L->gw[i] = t->grads[at + i] * scale;
            for (size_t i = 0; i < nb; i++)
                L->gb[i] = t->grads[at + nw + i] * scale;
        }
        at += nw + nb;
    }
    t->ngrads = at;
}

/* One step. The batch is read through a copy of the reading position, and
 * the gradients computed and averaged while the saved state is only read,
 * so an async checkpoint of the previous step copies meanwhile (on this
 * rank's saver thread); the mutation fence completes it before the
 * position, the weights and the step change. */
static int train_step(ckpt_step_context *sc, void *payload)
{
    dist_trainer *t = payload;
    MPI_Request req;
    float loss;
    int err;
    dataset_position_copy(&t->ahead, &t->data);
    dataset_next_batch(&t->ahead, t->model.batch, t->batch_x, t->batch_y);
    loss = mlp_compute_gradients(&t->model, t->batch_x, t->batch_y);
    pack_grads(t, 0);
    t->grads[t->ngrads] = stop_signal != 0 ? 1.0f : 0.0f;
    /* at most INT_MAX floats: train_memory_check refused more */
    MPI_Iallreduce(MPI_IN_PLACE, t->grads, (int)(t->ngrads + 1), MPI_FLOAT,
                   MPI_SUM, MPI_COMM_WORLD, &req);
    err = ckpt_mpi_saver_wait_requests(t->saver, 1, &req,
                                       "averaging the gradients");
    if (err == 0)
        err = ckpt_step_context_mutation_fence(sc);
    if (err < 0)
        return err;
    dataset_position_copy(&t->data, &t->ahead);
    pack_grads(t, 1);
    mlp_apply_gradients(&t->model);
    t->global_step++;
    if (t->grads[t->ngrads] > 0.0f) {
        t->stopped = 1;
        ckpt_step_context_request_stop(sc); /* every rank, this step */
    }
    if (!t->o.quiet && t->rank == 0 && t->global_step % t->o.save_steps == 0)
        printf("step %" PRId64 " loss %.4f (rank 0's batch)\n", t->global_step,
               (double)loss);
    return ckpt_step_context_publish_float(sc, "loss", loss);
}

/* ---- running
 * ----------------------------------------------------------------- */

/* This rank's memory: a batch, its shard of the data and its reading
 * position, the model, the packed gradients. 0, or -1 after saying on
 * stderr what could not be allocated. */
static int setup(dist_trainer *t)
{
    train_alloc_failure f;
    char prefix[48];
    size_t grads = 0;
    memset(&f, 0, sizeof(f));
    t->batch_x = train_alloc(sizeof(float) * (size_t)t->o.batch * DATA_DIM,
                             "the batch's examples", &f);
    t->batch_y = train_alloc(sizeof(int32_t) * (size_t)t->o.batch,
                             "the batch's labels", &f);
    /* Each rank its own shard: its own data set and shuffling. */
    if (t->batch_x && t->batch_y &&
        dataset_init(&t->data, DATA_N, DATA_DIM, DATA_CLASSES,
                     t->o.seed + 7919u * (uint64_t)t->rank, &f) == 0 &&
        dataset_position_init(&t->ahead, &t->data, &f) == 0 &&
        mlp_init(&t->model, DATA_DIM, t->o.hidden, t->o.layers, DATA_CLASSES,
                 t->o.batch, t->o.lr, t->o.seed, &f) == 0) {
        for (int l = 0; l < t->model.nlayers; l++)
            grads += (size_t)(t->model.layers[l].in + 1) *
                     (size_t)t->model.layers[l].out;
        /* + the stop vote */
        t->grads = train_alloc((grads + 1) * sizeof(float),
                               "the packed gradients", &f);
    }
    if (t->grads)
        return 0;
    snprintf(prefix, sizeof(prefix), "ckpt-train: rank %d: ", t->rank);
    train_alloc_report(&f, prefix);
    return -1;
}

/* Rank 0 says so when some rank may run on one core only (its affinity)
 * while the machine has more: the saver's background writer then shares
 * that core with training, and a restore checksums on it too. Open MPI
 * binds each rank to one core when it starts at most 2 ranks on cores to
 * spare. */
static void note_single_core(const dist_trainer *t)
{
    cpu_set_t set;
    MPI_Request req;
    int mine = 2, fewest = 2;
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        mine = CPU_COUNT(&set);
    MPI_Iallreduce(&mine, &fewest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &req);
    ckpt_mpi_saver_wait_requests(t->saver, 1, &req,
                                 "comparing the ranks' cores");
    if (t->rank == 0 && fewest < 2 && sysconf(_SC_NPROCESSORS_ONLN) > 1)
        fprintf(stderr,
                "ckpt-train: note: a rank is bound to one core, which its "
                "checkpoint writer shares with training; give each rank two "
                "(Open MPI: --map-by slot:PE=2, or --bind-to none; see "
                "docs/mpi.md, Binding)\n");
}

static int fail(int rank, const char *what)
{
    fprintf(stderr, "ckpt-train: rank %d: %s: %s\n", rank, what,
            ckpt_error_last()->message);
    return 1;
}

/* Whether `ok` holds on every rank. A step every rank takes before and
 * after the session's creation: that restores collectively, and a rank
 * that stopped on a local error would leave the others waiting in it. */
static int ok_on_every_rank(const dist_trainer *t, int ok, const char *what)
{
    MPI_Request req;
    int all_ok = 0;
    MPI_Iallreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &req);
    ckpt_mpi_saver_wait_requests(t->saver, 1, &req, what);
    return all_ok;
}

/* restored_check's all_ok: whether every rank's restored state is one
 * this program can have written (a fresh one always is). */
static int state_ok_on_every_rank(int ok, void *payload)
{
    return ok_on_every_rank(payload, ok, "checking the restored state");
}

static int run(dist_trainer *t)
{
    ckpt_mpi_saver_options so = CKPT_MPI_SAVER_OPTIONS_INIT;
    ckpt_checkpoint_hook_options ho = CKPT_CHECKPOINT_HOOK_OPTIONS_INIT;
    ckpt_session_options sess = CKPT_SESSION_OPTIONS_INIT;
    ckpt_mpi_saver *s = NULL;
    ckpt_saver *handle = NULL;
    ckpt_graph *g = NULL;
    ckpt_monitored_session *ms = NULL;
    ckpt_hook hooks[3];
    restored_check check; /* refuses a restored state no run writes */
    report rep;           /* this rank's saves' blocking, for the summary */
    double blocking[2], worst[2] = {0, 0};
    struct sigaction stop_saved[2]; /* SIGTERM's and SIGINT's before */
    MPI_Request req;
    int err, code = 1;
    report_init(&rep, 1, 0, 0);
    so.base.on_save_done = report_on_save_done;
    so.base.on_save_done_payload = &rep;
    so.base.max_to_keep = t->o.keep > 0 ? t->o.keep : CKPT_KEEP_ALL;
    so.base.keep_checkpoint_every_n_hours = t->o.keep_hours;
    so.base.busy_policy = CKPT_BUSY_SKIP;
    /* train_step calls the mutation fence before its first write, so the
     * initial checkpoint overlaps the first step too. */
    so.base.fence_from_start = 1;
    so.collective_timeout_s = t->o.collective_timeout;
    if (t->rank == 0) { /* what recovery finds and does, as ranks agree */
        so.base.log = ckpt_log_stderr;
        so.base.log_level = t->o.quiet ? CKPT_LOG_WARN : CKPT_LOG_INFO;
    }
    if (t->rank == 0) {
        int rc = train_make_dirs(t->o.dir);
        if (rc != 0)
            train_make_dirs_report(t->o.dir, rc);
    }
    err = ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, t->o.dir, &so);
    if (err < 0)
        return fail(t->rank, "opening the checkpoint directory");
    t->saver = s;
    err = register_vars(t, s);
    if (err == 0)
        err = ckpt_graph_new(&g);
    if (err == 0)
        err = ckpt_graph_create_global_step(g, &t->global_step);
    if (err == 0)
        err = ckpt_mpi_saver_as_saver(s, &handle);
    /* The library's checkpoint hook and session on every rank, over the
     * distributed saver: the session restores the latest checkpoint, the
     * hook saves; rank 0 alone logs. */
    ho.saver = handle;
    ho.save_steps = t->o.save_steps;
    ho.mode = t->o.mode;
    sess.checkpoint_dir = t->o.dir;
    sess.scaffold.saver = handle;
    if (t->rank != 0)
        sess.log_level = CKPT_LOG_OFF;
    else if (t->o.quiet)
        sess.log_level = CKPT_LOG_WARN; /* --quiet: warnings and errors */
    /* The restored state is checked first, on every rank together,
     * before the checkpoint hook's initial save could store it. */
    memset(&check, 0, sizeof(check));
    check.data = &t->data;
    check.model = &t->model;
    snprintf(check.suffix, sizeof(check.suffix), "/rank-%d", t->rank);
    check.all_ok = state_ok_on_every_rank;
    check.all_ok_payload = t;
    check.complete = position_complete;
    hooks[0] = restored_check_hook(&check);
    if (err == 0)
        err = ckpt_checkpoint_hook_new(&hooks[1], &ho);
    if (err == 0 && ckpt_stop_at_step_hook_new(&hooks[2], 0, t->o.steps) < 0) {
        hooks[1].destroy(hooks[1].payload);
        err = CKPT_EINVAL;
    }
    if (err < 0)
        fail(t->rank, "setting up the session");
    if (!ok_on_every_rank(t, err == 0, "agreeing on the set-up")) {
        if (err == 0) { /* another rank failed: this one's hooks go */
            hooks[1].destroy(hooks[1].payload);
            hooks[2].destroy(hooks[2].payload);
        }
        goto done;
    }
    /* The hooks' begin runs on every rank before the session's collective
     * restore: the session agrees on it through the distributed saver (a
     * begin failing on one rank fails the creation on every rank). */
    err = ckpt_monitored_session_new(&ms, g, hooks, 3, &sess);
    if (err < 0)
        fail(t->rank, "creating the session");
    if (!ok_on_every_rank(t, err == 0, "agreeing on the session"))
        goto done;
    if (!t->o.quiet)
        note_single_core(t);
    if (t->rank == 0 && t->global_step > 0)
        printf("resumed at step %" PRId64 " on %d ranks\n", t->global_step,
               t->size);
    if (t->rank == 0 && t->global_step >= t->o.steps)
        printf("nothing to train: step %" PRId64 " reached (--steps %" PRId64
               "); nothing saved\n",
               t->global_step, t->o.steps);
    err = 0;
    warn_blocked_term(t->rank);
    catch_stop_signals(stop_saved);
    while (err == 0 && t->global_step < t->o.steps &&
           !ckpt_monitored_session_should_stop(ms, NULL))
        err = ckpt_monitored_session_run(ms, NULL, train_step, t, NULL);
    if (err < 0 && !ckpt_is_clean_end(err))
        fail(t->rank, "training step");
    err = ckpt_monitored_session_close(ms, ckpt_is_clean_end(err) ? 0 : err);
    restore_stop_signals(stop_saved);
    if (err < 0)
        fail(t->rank, "closing the session");
    else
        code = 0;
    if (code == 0 && t->rank == 0 && t->stopped && !t->o.quiet)
        printf("stopped by a signal at step %" PRId64 " on every rank\n",
               t->global_step);
    /* Every rank reaches this (the session's close is collective). */
    blocking[0] = report_blocking_ms_p50(&rep);
    blocking[1] = report_blocking_ms_max(&rep);
    MPI_Ireduce(blocking, worst, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD,
                &req);
    ckpt_mpi_saver_wait_requests(s, 1, &req, "gathering the summary");
    if (code == 0 && t->rank == 0)
        printf("done: step %" PRId64 " on %d ranks\nsummary: steps=%" PRId64
               " ranks=%d blocking_ms_p50=%.3f blocking_ms_max=%.3f\n",
               t->global_step, t->size, t->global_step, t->size, worst[0],
               worst[1]);
done:
    ckpt_monitored_session_free(ms);
    ckpt_graph_free(g);
    ckpt_mpi_saver_free(s);
    report_dispose(&rep);
    return code;
}

/* ---- the start and the exit, bounded ----------------------------------------
 * MPI_Init_thread may wait for the other ranks (the launcher's wire-up: a
 * rank that never starts or joins), and MPI_Finalize too (Open MPI
 * synchronises them: a rank that died or stopped after the last
 * collective): either would hold this one forever. Each runs under a
 * watchdog of --collective-timeout seconds (watchdog.h: a thread, so an
 * alarm the process has pending and its SIGALRM handler stay its own),
 * which says which call it was and exits 70, as a timed-out collective
 * does. */

/* Before MPI_Init_thread the rank is not known: the message has none. */
static void init_bounded(int *argc, char ***argv, double timeout_s,
                         int *provided)
{
    train_watchdog w;
    char msg[256];
    snprintf(msg, sizeof(msg),
             "ckpt-train: MPI_Init_thread did not return within %.0f s (a "
             "rank never started or joined the job); exiting with status "
             "70\n",
             timeout_s);
    train_watchdog_arm(&w, timeout_s, msg);
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, provided);
    train_watchdog_disarm(&w);
}

static void finalize_bounded(int rank, double timeout_s)
{
    train_watchdog w;
    char msg[256];
    snprintf(msg, sizeof(msg),
             "ckpt-train: rank %d: MPI_Finalize did not return within %.0f "
             "s (a rank died or stalled); exiting with status 70\n",
             rank, timeout_s);
    train_watchdog_arm(&w, timeout_s, msg);
    MPI_Finalize();
    train_watchdog_disarm(&w);
}

/* ---- agreeing to start ------------------------------------------------ */

/* What a rank decides alone before the training's first collective (its
 * options, the memory check against its own limits, its allocations) is
 * agreed on in one small collective: a rank that stopped there would
 * leave the others waiting in the saver's open until the collective
 * timeout. Every rank posts its outcome (0 to go on, else its exit
 * status, whose reason it said itself); the worst one, and its rank, is
 * every rank's: all start, or all end with that status, each rank that
 * was fine naming the rank that was not. */

/* An outcome as one int that MPI_MAXLOC orders: 0 go on, 1 --help or
 * --version printed, 1 + s a failure of exit status s (the higher the
 * worse: 3, a refusal of the options or the model, over 2, an
 * allocation). */
static int outcome_of(int code)
{
    if (code == 0)
        return 0;
    return code == TRAIN_OPTIONS_HELP ? 1 : 1 + code;
}

/* Why another rank did not start, from its outcome (outcome_of), said by
 * a rank that would have. */
static const char *not_started_why(int outcome)
{
    switch (outcome) {
    case 1:
        return "printed its help or version and does not train";
    case 3:
        return "refused the options (its message says why)";
    case 2:
        return "could not allocate its memory (its message names what)";
    default:
        return "failed before the training started";
    }
}

/* Agree on `code`, this rank's outcome of `step` (TRAIN_OPTIONS_HELP, 0,
 * or an exit status): 0 when every rank goes on, else the status every
 * rank ends with (TRAIN_OPTIONS_HELP when the worst was a --help). The
 * collective is bounded by `timeout_s` (a watchdog: past it, exit 70). */
static int agree_to_start(int rank, int code, const char *step,
                          double timeout_s)
{
    struct {
        int outcome, rank;
    } mine, worst;
    MPI_Request req;
    train_watchdog w;
    char msg[256];
    mine.outcome = outcome_of(code);
    mine.rank = rank;
    worst = mine;
    snprintf(msg, sizeof(msg),
             "ckpt-train: rank %d: %s: other ranks did not respond within "
             "%.0f s (a rank died or stalled); exiting with status 70\n",
             rank, step, timeout_s);
    /* What this rank printed (its --help or --version) is written out
     * before a wait the watchdog may end with _exit, which flushes no
     * stdio buffer. */
    report_flush(stdout);
    MPI_Iallreduce(&mine, &worst, 1, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD,
                   &req);
    train_watchdog_arm(&w, timeout_s, msg);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    train_watchdog_disarm(&w);
    if (worst.outcome == 0)
        return 0;
    code = worst.outcome == 1 ? TRAIN_OPTIONS_HELP : worst.outcome - 1;
    if (mine.outcome == 0)
        fprintf(stderr,
                "ckpt-train: rank %d: %s: rank %d %s; not starting, exit "
                "status %d\n",
                rank, step, worst.rank, not_started_why(worst.outcome),
                code == TRAIN_OPTIONS_HELP ? 0 : code);
    /* Every rank has said why before any exits: a launcher that ends
     * the job at the first non-zero exit (Open MPI's mpiexec) would
     * otherwise kill a rank still printing. */
    report_flush(stdout);
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    train_watchdog_arm(&w, timeout_s, msg);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    train_watchdog_disarm(&w);
    return code;
}

int ckpt_train_distributed(int argc, char **argv)
{
    train_alloc_failure f;
    dist_trainer *t;
    double timeout_s = train_options_collective_timeout(argc, argv);
    int provided, code, rank;
    memset(&f, 0, sizeof(f));
    t = train_alloc(sizeof(*t), "the trainer's state", &f);
    init_bounded(&argc, &argv, timeout_s, &provided);
    if (!t) { /* named, then the job ends (docs/mpi.md) */
        char prefix[48];
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        snprintf(prefix, sizeof(prefix), "ckpt-train: rank %d: ", rank);
        train_alloc_report(&f, prefix);
        MPI_Abort(MPI_COMM_WORLD, 1);
        return 1;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &t->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &t->size);
    code = train_options_parse(&t->o, argc, argv, 1);
    if (code == 0) { /* a model that cannot fit here */
        char prefix[48];
        snprintf(prefix, sizeof(prefix), "ckpt-train: rank %d: ", t->rank);
        code = train_memory_check(&t->o, t->size, prefix);
    }
    /* the ranks' limits may differ: all agree before any allocates */
    code = agree_to_start(t->rank, code, "checking the options and memory",
                          timeout_s);
    if (code == 0) /* every rank here, or none */
        code = agree_to_start(t->rank, setup(t) != 0 ? 1 : 0,
                              "allocating the model", timeout_s);
    if (code == 0)
        code = run(t);
    /* Before MPI_Finalize, whose watchdog ends the process with _exit (no
     * stdio flush): what this rank printed is written out, and a failure
     * to write it counted, first. */
    code = report_exit_status(code == TRAIN_OPTIONS_HELP ? 0 : code);
    rank = t->rank;
    mlp_free(&t->model);
    dataset_position_free(&t->ahead);
    dataset_free(&t->data);
    free(t->batch_x);
    free(t->batch_y);
    free(t->grads);
    free(t);
    finalize_bounded(rank, timeout_s);
    return code;
}
