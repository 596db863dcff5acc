/* tools/ckpt-train/main.c - ckpt-train, the demo trainer: an MLP trained
 * with Adam on a synthetic data set, in a monitored session with the
 * AsyncCheckpointSaverHook (or the synchronous one, or none), a stop-at-step
 * hook, a NaN check, a progress hook and the check of a restored state.
 * Everything needed to continue exactly is in the checkpoint, so a run started
 * again on the same directory restores the latest checkpoint and continues as
 * if it had never stopped. Uses the public API only. */
#include "ckpt.h"
#include "data.h"
#ifdef CKPT_TRAIN_MPI
#include "distributed.h"
#endif
#include "make_dirs.h"
#include "memory.h"
#include "model.h"
#include "options.h"
#include "report.h"
#include "restored_check.h"
#include "train_var.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the model's variables ------------------------------------------------
 */

typedef struct trainer {
    train_options opt;
    mlp model;
    dataset data;
    int64_t global_step;
    dataset ahead;        /* reading position of the step in progress */
    restored_check check; /* refuses a restored state no run writes */
    float *batch_x;
    int32_t *batch_y;
} trainer;

static int add(ckpt_graph *g, const char *name, int dtype, int rank, int64_t d0,
               int64_t d1, void *data)
{
    ckpt_var v = train_var(name, dtype, rank, d0, d1, data);
    return ckpt_graph_add_var(g, &v);
}

/* Register everything an exact resume needs, with TensorFlow's names. */
static int register_vars(trainer *t, ckpt_graph *g)
{
    int err = ckpt_graph_create_global_step(g, &t->global_step);
    char name[160];
    for (int l = 0; err == 0 && l < t->model.nlayers; l++) {
        layer *L = &t->model.layers[l];
        char scope[32];
        mlp_layer_scope(scope, sizeof(scope), l);
        snprintf(name, sizeof(name), "%s/kernel", scope);
        err = add(g, name, CKPT_DT_FLOAT, 2, L->in, L->out, L->w);
        snprintf(name, sizeof(name), "%s/kernel/Adam", scope);
        if (err == 0)
            err = add(g, name, CKPT_DT_FLOAT, 2, L->in, L->out, L->mw);
        snprintf(name, sizeof(name), "%s/kernel/Adam_1", scope);
        if (err == 0)
            err = add(g, name, CKPT_DT_FLOAT, 2, L->in, L->out, L->vw);
        snprintf(name, sizeof(name), "%s/bias", scope);
        if (err == 0)
            err = add(g, name, CKPT_DT_FLOAT, 1, L->out, 0, L->b);
        snprintf(name, sizeof(name), "%s/bias/Adam", scope);
        if (err == 0)
            err = add(g, name, CKPT_DT_FLOAT, 1, L->out, 0, L->mb);
        snprintf(name, sizeof(name), "%s/bias/Adam_1", scope);
        if (err == 0)
            err = add(g, name, CKPT_DT_FLOAT, 1, L->out, 0, L->vb);
    }
    if (err == 0)
        err = add(g, "beta1_power", CKPT_DT_FLOAT, 0, 0, 0,
                  &t->model.beta1_power);
    if (err == 0)
        err = add(g, "beta2_power", CKPT_DT_FLOAT, 0, 0, 0,
                  &t->model.beta2_power);
    if (err == 0)
        err = add(g, "optimizer/iterations", CKPT_DT_INT64, 0, 0, 0,
                  &t->model.iterations);
    if (err == 0)
        err =
            add(g, "data/order", CKPT_DT_INT32, 1, t->data.n, 0, t->data.order);
    if (err == 0)
        err = add(g, "data/cursor", CKPT_DT_INT64, 0, 0, 0, &t->data.cursor);
    if (err == 0)
        err = add(g, "data/epoch", CKPT_DT_INT64, 0, 0, 0, &t->data.epoch);
    if (err == 0)
        err = add(g, "data/rng_state", CKPT_DT_UINT64, 1, 4, 0,
                  t->data.shuffle.s);
    return err;
}

/* One step. The batch is read through a copy of the reading position and
 * the gradients computed while the saved state is only read, so an async
 * checkpoint of the previous step copies meanwhile; the mutation fence
 * completes it before the position, the weights and the step change. */
static int train_step(ckpt_step_context *sc, void *payload)
{
    trainer *t = payload;
    float loss;
    int err;
    dataset_position_copy(&t->ahead, &t->data);
    dataset_next_batch(&t->ahead, t->model.batch, t->batch_x, t->batch_y);
    loss = mlp_compute_gradients(&t->model, t->batch_x, t->batch_y);
    err = ckpt_step_context_mutation_fence(sc);
    if (err < 0)
        return err;
    dataset_position_copy(&t->data, &t->ahead);
    mlp_apply_gradients(&t->model);
    t->global_step++;
    return ckpt_step_context_publish_float(sc, "loss", loss);
}

/* The trainer's memory: a batch, the data set and its reading position,
 * the model. 0, or -1 after saying on stderr what could not be allocated
 * (main frees what was). */
static int alloc_trainer(trainer *t)
{
    train_alloc_failure f;
    size_t batch = (size_t)t->opt.batch;
    memset(&f, 0, sizeof(f));
    t->batch_x = train_alloc(sizeof(float) * batch * DATA_DIM,
                             "the batch's examples", &f);
    t->batch_y = train_alloc(sizeof(int32_t) * batch, "the batch's labels", &f);
    if (!t->batch_x || !t->batch_y ||
        dataset_init(&t->data, DATA_N, DATA_DIM, DATA_CLASSES, t->opt.seed,
                     &f) ||
        dataset_position_init(&t->ahead, &t->data, &f) ||
        mlp_init(&t->model, DATA_DIM, t->opt.hidden, t->opt.layers,
                 DATA_CLASSES, t->opt.batch, t->opt.lr, t->opt.seed, &f)) {
        train_alloc_report(&f, "ckpt-train: ");
        return -1;
    }
    return 0;
}

/* ---- running
 * ----------------------------------------------------------------- */

/* The scaffold's init_fn: the session restored nothing. */
static int note_fresh_start(ckpt_session *s, void *payload)
{
    (void)s;
    *(int *)payload = 1;
    return 0;
}

static void fail(const char *what)
{
    fprintf(stderr, "ckpt-train: %s: %s\n", what, ckpt_error_last()->message);
}

/* Build the hooks: progress, the restored state's check (before the
 * checkpoint hook's initial save), stop at step, NaN check, and the
 * checkpoint hook unless --mode none. On failure the hooks built so far are
 * destroyed. */
static int build_hooks(trainer *t, report *rep, ckpt_saver_options *so,
                       ckpt_hook *hooks, size_t *nhooks)
{
    int err;
    *nhooks = 0;
    hooks[(*nhooks)++] = report_hook(rep);
    t->check.data = &t->data;
    t->check.model = &t->model;
    hooks[(*nhooks)++] = restored_check_hook(&t->check);
    err = ckpt_stop_at_step_hook_new(&hooks[*nhooks], 0, t->opt.steps);
    if (err == 0)
        (*nhooks)++;
    if (err == 0) {
        ckpt_nan_tensor_hook_options no = CKPT_NAN_TENSOR_HOOK_OPTIONS_INIT;
        no.loss_name = "loss";
        no.fail_on_nan = 1;
        no.log = so->log;
        no.log_payload = so->log_payload;
        err = ckpt_nan_tensor_hook_new(&hooks[*nhooks], &no);
    }
    if (err == 0)
        (*nhooks)++;
    if (err == 0 && t->opt.mode >= 0) {
        ckpt_checkpoint_hook_options co = CKPT_CHECKPOINT_HOOK_OPTIONS_INIT;
        co.checkpoint_dir = t->opt.dir;
        co.save_steps = t->opt.save_steps;
        co.save_secs = t->opt.save_steps > 0 ? 0.0 : t->opt.save_secs;
        co.mode = t->opt.mode;
        co.saver_options = so;
        err = ckpt_checkpoint_hook_new(&hooks[*nhooks], &co);
        if (err == 0)
            (*nhooks)++;
    }
    if (err < 0) {
        for (size_t i = 0; i < *nhooks; i++)
            if (hooks[i].destroy)
                hooks[i].destroy(hooks[i].payload);
        *nhooks = 0;
    }
    return err;
}

/* Train until the target step or a stop request; close the session
 * (timed into rep->close_ms). Returns the process exit status. */
static int train(trainer *t, ckpt_monitored_session *ms, report *rep)
{
    double closing;
    int err = 0;
    ckpt_preemption_handler_install(ms);
    while (t->global_step < t->opt.steps &&
           !ckpt_monitored_session_should_stop(ms, NULL)) {
        err = ckpt_monitored_session_run(ms, NULL, train_step, t, NULL);
        if (err < 0)
            break;
    }
    if (err < 0 && !ckpt_is_clean_end(err))
        fail("training step");
    closing = ckpt_clock_monotonic(NULL);
    err = ckpt_monitored_session_close(ms, ckpt_is_clean_end(err) ? 0 : err);
    rep->close_ms = (ckpt_clock_monotonic(NULL) - closing) * 1e3;
    if (err < 0)
        fail("closing the session");
    ckpt_preemption_handler_remove();
    if (ckpt_preemption_signal() && !t->opt.quiet)
        printf("stopped by signal %d at step %" PRId64 "\n",
               ckpt_preemption_signal(), t->global_step);
    return err < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
    train_alloc_failure f;
    trainer *t;
    ckpt_graph *g = NULL;
    ckpt_monitored_session *ms = NULL;
    ckpt_saver_options so = CKPT_SAVER_OPTIONS_INIT;
    ckpt_session_options sess = CKPT_SESSION_OPTIONS_INIT;
    ckpt_hook hooks[5];
    size_t nhooks = 0;
    ckpt_saver_metrics metrics;
    ckpt_buf latest = CKPT_BUF_INIT;
    report rep;
    int64_t resumed_from = -1;
    int have_metrics = 0, exit_code = 1, fresh = 0, dirs;
    double starting;
    char shown[8192];
    int err;

    /* A descriptor 0, 1 or 2 closed at start gets /dev/null before
     * anything (MPI_Init_thread with --distributed) could open a file on
     * it and receive the trainer's output. */
    report_hold_std_streams();
    /* Past a file-size limit (ulimit -f) a save fails with EFBIG, named in
     * its error, and the previous checkpoint stays the latest, instead of
     * the signal killing the trainer silently. */
    signal(SIGXFSZ, SIG_IGN);
    /* A reader of stdout that goes away (`ckpt-train | head`) must not
     * kill the training with SIGPIPE: the writes fail with EPIPE, training
     * and its checkpoints go on, and the exit status says the output was
     * lost (report_exit_status). */
    signal(SIGPIPE, SIG_IGN);
#ifdef CKPT_TRAIN_MPI
    if (ckpt_train_wants_distributed(argc, argv))
        return ckpt_train_distributed(argc, argv);
#endif
    /* The first allocation fails like any other: named, with its bytes,
     * exit status 1 (not a silent 1). */
    memset(&f, 0, sizeof(f));
    t = train_alloc(sizeof(*t), "the trainer's state", &f);
    if (!t) {
        train_alloc_report(&f, "ckpt-train: ");
        return report_exit_status(1);
    }
    report_init(&rep, 1, 0, 0);
    err = train_options_parse(&t->opt, argc, argv, 0);
    if (err) {
        exit_code = err == TRAIN_OPTIONS_HELP ? 0 : err;
        goto done;
    }
    /* A model that cannot fit is refused before anything is made. */
    exit_code = train_memory_check(&t->opt, 0, "ckpt-train: ");
    if (exit_code != 0)
        goto done;
    exit_code = 1;
    dirs = train_make_dirs(t->opt.dir);
    if (dirs != 0) {
        train_make_dirs_report(t->opt.dir, dirs);
        goto done;
    }
    if (alloc_trainer(t) != 0)
        goto done;
    report_init(&rep, t->opt.quiet, t->opt.steps,
                t->opt.save_steps > 0 ? t->opt.save_steps : 100);

    so.max_to_keep = t->opt.keep > 0 ? t->opt.keep : CKPT_KEEP_ALL;
    so.keep_checkpoint_every_n_hours = t->opt.keep_hours;
    so.busy_policy = t->opt.busy;
    so.log = report_on_log;
    so.log_payload = &rep;
    so.on_save_done = report_on_save_done;
    so.on_save_done_payload = &rep;
    /* train_step keeps the fence rule from the first step on, and nothing
     * writes the variables between the session's creation and that step:
     * the initial checkpoint is copied by the writer while step 1 computes
     * its gradients, not while the session starts. */
    so.fence_from_start = 1;

    err = ckpt_graph_new(&g);
    if (err == 0)
        err = register_vars(t, g);
    if (err < 0) {
        fail("registering variables");
        goto done;
    }
    if (build_hooks(t, &rep, &so, hooks, &nhooks) < 0) {
        fail("building hooks");
        exit_code = 2;
        goto done;
    }

    sess.checkpoint_dir = t->opt.dir;
    sess.saver_options = &so;
    sess.log = so.log;
    sess.log_payload = so.log_payload;
    sess.scaffold.init_fn = note_fresh_start; /* nothing was restored */
    sess.scaffold.init_payload = &fresh;
    /* What the session will restore: the directory's latest now (read
     * before the checkpoint hook's initial save, which may write a newer
     * one of the restored step's number when the step stored in the
     * checkpoint is not its name's). */
    if (ckpt_latest_checkpoint(&latest, NULL, t->opt.dir) != 0) {
        ckpt_buf_dispose(&latest);
        ckpt_error_clear();
    }
    /* The session consumes the hooks, also when it fails. */
    starting = ckpt_clock_monotonic(NULL);
    err = ckpt_monitored_session_new(&ms, g, hooks, nhooks, &sess);
    rep.start_ms = (ckpt_clock_monotonic(NULL) - starting) * 1e3;
    if (err < 0) {
        fail("creating the session");
        goto done;
    }
    if (!fresh) {
        /* a path from the state file is data: shown escaped */
        ckpt_text_printable(shown, sizeof(shown),
                            latest.ptr ? latest.ptr : t->opt.dir);
        resumed_from = t->global_step;
        printf("restored %s at step %" PRId64 "\n", shown, t->global_step);
        if (t->global_step >= t->opt.steps)
            printf("nothing to train: step %" PRId64
                   " reached (--steps %" PRId64 "); nothing saved\n",
                   t->global_step, t->opt.steps);
        report_flush(stdout);
    }
    exit_code = train(t, ms, &rep);
    for (size_t i = 0; i < ckpt_monitored_session_num_hooks(ms); i++)
        if (ckpt_checkpoint_hook_metrics(ckpt_monitored_session_hook(ms, i),
                                         &metrics) == 0)
            have_metrics = 1;
    report_summary(&rep, stdout, t->global_step, resumed_from,
                   have_metrics ? &metrics : NULL);
done:
    ckpt_monitored_session_free(ms);
    ckpt_graph_free(g);
    ckpt_buf_dispose(&latest);
    report_dispose(&rep);
    mlp_free(&t->model);
    dataset_position_free(&t->ahead);
    dataset_free(&t->data);
    free(t->batch_x);
    free(t->batch_y);
    free(t);
    return report_exit_status(exit_code);
}
