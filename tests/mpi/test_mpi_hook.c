/* tests/mpi/test_mpi_hook.c - the library's own checkpoint hook and
 * monitored session on every rank, over the distributed saver
 * (ckpt_mpi_saver_as_saver): saves at the trigger steps and at end in both
 * modes, a new session that restores them (global step, a replicated
 * weight, each rank's own data position) and carries on, a session
 * abandoned mid-run whose successor resumes from the last checkpoint and
 * ends with the values of an uninterrupted run, seconds mode decided by
 * rank 0's clock, a listener failing on one rank only, a hook's begin
 * failing on one rank only, and ckpt_training_session_new with the handle
 * as its scaffold saver. */
#include "mpi_model.h"
#include "test_util.h"

#include "ckpt/hooks.h"
#include "common/internal.h"
#include "support/fs_fault.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct state {
    int64_t global_step;
    float w[8];
    int64_t data_pos;
} state;

static int train_step(ckpt_step_context *sc, void *payload)
{
    state *st = payload;
    (void)sc;
    for (int i = 0; i < 8; i++)
        st->w[i] += 1.0f + 0.25f * (float)i;
    st->data_pos += test_rank() + 1;
    st->global_step++;
    return 0;
}

/* A clock the steps drive: global step seconds on rank 0, frozen at 0 on
 * the other ranks (whose own timers would never trigger). */
static double fake_monotonic(void *payload)
{
    const state *st = payload;
    return test_rank() == 0 ? (double)st->global_step : 0.0;
}

/* A listener whose before_save fails at one step on the last rank only. */
typedef struct failing {
    int64_t at_step;
    int calls;
    int after_calls;
    int64_t after_steps[8];
} failing;

static int counting_after_save(ckpt_session *s, int64_t step,
                               const char *prefix, int *stop, void *payload)
{
    failing *f = payload;
    (void)s;
    (void)prefix;
    (void)stop;
    if (f->after_calls < 8)
        f->after_steps[f->after_calls] = step;
    f->after_calls++;
    return 0;
}

static int failing_before_save(ckpt_session *s, int64_t step, void *payload)
{
    failing *f = payload;
    (void)s;
    f->calls++;
    if (step == f->at_step && test_rank() == test_size() - 1)
        return ckpt__error(CKPT_EUSER, "listener refuses step %lld",
                           (long long)step);
    return 0;
}

typedef struct run_opts {
    int mode;
    double save_secs;
    int steps;
    int abandon; /* free the session without close */
    const ckpt_saver_listener *listener;
    int expect_run_error_step; /* on the last rank: run fails at this step */
    test_log *saver_log;       /* each rank's saver logs here (NULL: none) */
} run_opts;

/* The job of one run: a distributed saver on `dir` holding st's step and
 * weights (replicated) and data position (per rank), its ckpt_saver
 * handle, and a graph with st's global step. WAIT: every trigger saves
 * (SKIP would skip while one is in flight, and these steps take no time). */
static void open_job_with(const char *dir, state *st,
                          const ckpt_mpi_saver_options *so, ckpt_mpi_saver **s,
                          ckpt_saver **handle, ckpt_graph **g)
{
    static const int64_t w_dims[] = {8};
    ckpt_var v;
    assert_ckpt_ok(ckpt_mpi_saver_open(s, MPI_COMM_WORLD, dir, so));
    v = model_var("global_step", CKPT_DT_INT64, 0, NULL, &st->global_step);
    assert_ckpt_ok(ckpt_mpi_saver_add_replicated(*s, &v));
    v = model_var("w", CKPT_DT_FLOAT, 1, w_dims, st->w);
    assert_ckpt_ok(ckpt_mpi_saver_add_replicated(*s, &v));
    v = model_var("data_pos", CKPT_DT_INT64, 0, NULL, &st->data_pos);
    assert_ckpt_ok(ckpt_mpi_saver_add_per_rank(*s, &v, 0));
    assert_ckpt_ok(ckpt_mpi_saver_as_saver(*s, handle));
    assert_ckpt_ok(ckpt_graph_new(g));
    assert_ckpt_ok(ckpt_graph_create_global_step(*g, &st->global_step));
}

static void open_job(const char *dir, state *st, test_log *saver_log,
                     ckpt_mpi_saver **s, ckpt_saver **handle, ckpt_graph **g)
{
    ckpt_mpi_saver_options so = test_mpi_options();
    so.base.busy_policy = CKPT_BUSY_WAIT;
    if (saver_log) {
        so.base.log = test_log_capture;
        so.base.log_payload = saver_log;
    }
    open_job_with(dir, st, &so, s, handle, g);
}

/* The saver's metrics into *mt, then close and free the job. */
static void close_job(ckpt_mpi_saver *s, ckpt_graph *g, ckpt_saver_metrics *mt)
{
    ckpt_mpi_saver_get_metrics(s, mt);
    assert_ckpt_ok(ckpt_mpi_saver_close(s));
    ckpt_mpi_saver_free(s);
    ckpt_graph_free(g);
}

/* One monitored session over a distributed saver on `dir`; returns the
 * saver's metrics. */
static void run_session(const char *dir, state *st, const run_opts *ro,
                        ckpt_saver_metrics *mt)
{
    ckpt_clock clock = {CKPT_CLOCK_VERSION, st, fake_monotonic, NULL};
    ckpt_checkpoint_hook_options ho = CKPT_CHECKPOINT_HOOK_OPTIONS_INIT;
    ckpt_session_options sess = CKPT_SESSION_OPTIONS_INIT;
    ckpt_mpi_saver *s = NULL;
    ckpt_saver *handle = NULL;
    ckpt_graph *g = NULL;
    ckpt_monitored_session *ms = NULL;
    ckpt_hook hook;
    open_job(dir, st, ro->saver_log, &s, &handle, &g);
    ho.saver = handle;
    ho.save_steps = ro->save_secs > 0 ? 0 : 4;
    ho.save_secs = ro->save_secs;
    ho.clock = &clock;
    ho.mode = ro->mode;
    ho.listeners = ro->listener;
    ho.num_listeners = ro->listener ? 1 : 0;
    sess.checkpoint_dir = dir;
    sess.scaffold.saver = handle;
    if (test_rank() != 0)
        sess.log_level = CKPT_LOG_OFF; /* rank 0 logs for the job */
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&hook, &ho));
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, g, &hook, 1, &sess));
    for (int i = 0; i < ro->steps; i++) {
        int err = ckpt_monitored_session_run(ms, NULL, train_step, st, NULL);
        if (st->global_step == ro->expect_run_error_step &&
            test_rank() == test_size() - 1)
            assert_ckpt_error(err, CKPT_EUSER, "listener refuses step");
        else
            assert_ckpt_ok(err);
    }
    if (!ro->abandon)
        assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
    close_job(s, g, mt);
}

/* The values `steps` steps of train_step give from zero. */
static void expected_state(state *want, int64_t steps)
{
    memset(want, 0, sizeof(*want));
    for (int64_t k = 0; k < steps; k++)
        train_step(NULL, want);
}

static void assert_state(const state *st, int64_t step)
{
    state want;
    expected_state(&want, step);
    assert_int_equal(st->global_step, step);
    assert_memory_equal(st->w, want.w, sizeof(want.w));
    assert_int_equal(st->data_pos, want.data_pos);
}

static char *make_sub(const char *dir, const char *name)
{
    char *sub = malloc(strlen(dir) + strlen(name) + 2);
    assert_non_null(sub);
    sprintf(sub, "%s/%s", dir, name);
    if (test_rank() == 0)
        assert_int_equal(mkdir(sub, 0755), 0);
    MPI_Barrier(MPI_COMM_WORLD);
    return sub;
}

/* Whether <dir>/model.ckpt-<step>.index exists (rank 0 looks). */
static int has_checkpoint(const char *dir, int step)
{
    char path[4300];
    uint8_t *f;
    size_t n;
    snprintf(path, sizeof(path), "%s/model.ckpt-%d.index", dir, step);
    f = test_read_file(path, &n);
    free(f);
    return f != NULL;
}

static void test_hook_saves_and_resumes(void **state_)
{
    char *dir = shared_dir_make();
    state st;
    ckpt_saver_metrics mt;
    int modes[2] = {CKPT_SAVE_ASYNC, CKPT_SAVE_SYNC};
    (void)state_;
    for (int m = 0; m < 2; m++) {
        run_opts ro = {modes[m], 0, 10, 0, NULL, -1, NULL};
        char *sub = make_sub(dir, m == 0 ? "async" : "sync");
        memset(&st, 0, sizeof(st));
        run_session(sub, &st, &ro, &mt);
        assert_state(&st, 10);
        /* step 0 at creation, 4 and 8, then 10 at end */
        assert_int_equal(mt.saves_completed, 4);
        assert_int_equal(mt.last_saved_step, 10);

        /* a new job: the session restores step 10 on every rank */
        memset(&st, 0, sizeof(st));
        ro.steps = 2;
        run_session(sub, &st, &ro, &mt);
        assert_state(&st, 12);
        assert_int_equal(mt.saves_completed, 1); /* 12 at end */
        if (test_rank() == 0) {
            ckpt_buf latest = CKPT_BUF_INIT;
            char want[4300];
            assert_ckpt_ok(ckpt_latest_checkpoint(&latest, NULL, sub));
            snprintf(want, sizeof(want), "%s/model.ckpt-12", sub);
            assert_string_equal(latest.ptr, want);
            ckpt_buf_dispose(&latest);
        }
        free(sub);
    }
    shared_dir_remove(dir);
}

/* A session abandoned after step 7 (no close, no final save: as after a
 * crash, the newest checkpoint is step 4) and its state scribbled over;
 * the next session resumes at 4 and, run to 10, ends with exactly the
 * values of an uninterrupted run. */
static void test_hook_abandoned_then_resumed(void **state_)
{
    char *dir = shared_dir_make();
    ckpt_saver_metrics mt;
    state st;
    run_opts ro = {CKPT_SAVE_ASYNC, 0, 7, 1, NULL, -1, NULL};
    (void)state_;
    memset(&st, 0, sizeof(st));
    run_session(dir, &st, &ro, &mt);
    assert_state(&st, 7);
    assert_int_equal(mt.last_saved_step, 4);
    if (test_rank() == 0)
        assert_false(has_checkpoint(dir, 7));
    memset(&st, 0x5a, sizeof(st)); /* lost with the process */
    st.global_step = 1000;
    ro.abandon = 0;
    ro.steps = 6;
    run_session(dir, &st, &ro, &mt);
    assert_state(&st, 10);
    assert_int_equal(mt.saves_completed, 2); /* 8, then 10 at end */
    shared_dir_remove(dir);
}

/* Seconds mode: rank 0's clock decides for every rank (the others' clocks
 * stand still), one step later (the decision travels in a broadcast
 * completed at the next step): 2.5 s between saves at one second per step
 * asks at steps 3 and 7, so the ranks save at 0, 4 and at end 7. */
static void test_hook_seconds_decided_by_rank0(void **state_)
{
    char *dir = shared_dir_make();
    ckpt_saver_metrics mt;
    state st;
    run_opts ro = {CKPT_SAVE_ASYNC, 2.5, 7, 0, NULL, -1, NULL};
    (void)state_;
    memset(&st, 0, sizeof(st));
    run_session(dir, &st, &ro, &mt);
    assert_state(&st, 7);
    assert_int_equal(mt.saves_completed, 3);
    assert_int_equal(mt.last_saved_step, 7);
    if (test_rank() == 0)
        for (int step = 0; step <= 7; step++)
            assert_int_equal(has_checkpoint(dir, step),
                             step == 0 || step == 4 || step == 7);
    shared_dir_remove(dir);
}

/* A listener failing on the last rank at step 4: that rank still saves
 * with the others (the save is collective) and its run returns the
 * listener's error afterwards; the checkpoint of step 4 is complete and
 * every save reaches after_save on every rank. */
static void test_hook_local_error_does_not_split_ranks(void **state_)
{
    char *dir = shared_dir_make();
    int modes[2] = {CKPT_SAVE_ASYNC, CKPT_SAVE_SYNC};
    (void)state_;
    for (int m = 0; m < 2; m++) {
        failing f = {4, 0, 0, {0}};
        ckpt_saver_listener l;
        memset(&l, 0, sizeof(l));
        l.version = CKPT_LISTENER_VERSION;
        l.payload = &f;
        l.before_save = failing_before_save;
        l.after_save = counting_after_save;
        run_opts ro = {modes[m], 0, 6, 0, &l, 4, NULL};
        ckpt_saver_metrics mt;
        state st;
        char *sub = make_sub(dir, m == 0 ? "async" : "sync");
        memset(&st, 0, sizeof(st));
        run_session(sub, &st, &ro, &mt);
        assert_state(&st, 6);
        /* 0, 4, and 6 at end, on every rank */
        assert_int_equal(mt.saves_completed, 3);
        assert_int_equal(f.calls, 3);
        /* every durable save reaches after_save, sync ones included */
        assert_int_equal(f.after_calls, 3);
        assert_int_equal(f.after_steps[0], 0);
        assert_int_equal(f.after_steps[1], 4);
        assert_int_equal(f.after_steps[2], 6);
        if (test_rank() == 0) {
            assert_true(has_checkpoint(sub, 4));
            assert_true(has_checkpoint(sub, 6));
        }
        free(sub);
    }
    shared_dir_remove(dir);
}

/* A step of train_step whose length differs by rank (rank 0 the
 * slowest), so the ranks reach the outcome of a save at different steps
 * of their own, as ranks of a real job do between collectives. */
static int uneven_step(ckpt_step_context *sc, void *payload)
{
    usleep((useconds_t)(200 * (test_size() - test_rank())));
    return train_step(sc, payload);
}

/* An asynchronous save that fails on the last rank only (its data file
 * cannot be created): under every busy policy, every rank's session run
 * returns that failure at the same step (a data-parallel loop stopping at
 * one rank's step would leave the others in its next collective), and no
 * checkpoint of the failed step is named. */
static void test_hook_async_failure_same_step(void **state_)
{
    static const int policies[3] = {CKPT_BUSY_WAIT, CKPT_BUSY_SKIP,
                                    CKPT_BUSY_COALESCE};
    static const char *names[3] = {"wait", "skip", "coalesce"};
    char *dir = shared_dir_make();
    int victim = test_size() - 1;
    (void)state_;
    for (int p = 0; p < 3; p++) {
        ckpt_checkpoint_hook_options ho = CKPT_CHECKPOINT_HOOK_OPTIONS_INIT;
        ckpt_session_options sess = CKPT_SESSION_OPTIONS_INIT;
        ckpt_mpi_saver_options so;
        ckpt_fs_fault *ff = NULL;
        ckpt_mpi_saver *s = NULL;
        ckpt_saver *handle = NULL;
        ckpt_graph *g = NULL;
        ckpt_monitored_session *ms = NULL;
        ckpt_hook hook;
        ckpt_saver_metrics mt;
        char needle[32];
        int64_t failed_at = -1, *all;
        int err = 0;
        state st;
        char *sub = make_sub(dir, names[p]);
        memset(&st, 0, sizeof(st));
        assert_ckpt_ok(ckpt_fs_fault_new(&ff, NULL));
        so = test_mpi_options();
        so.base.busy_policy = policies[p];
        so.base.fs = ckpt_fs_fault_fs(ff);
        open_job_with(sub, &st, &so, &s, &handle, &g);
        ho.saver = handle;
        ho.save_steps = 4;
        ho.mode = CKPT_SAVE_ASYNC;
        sess.checkpoint_dir = sub;
        sess.scaffold.saver = handle;
        if (test_rank() != 0)
            sess.log_level = CKPT_LOG_OFF;
        assert_ckpt_ok(ckpt_checkpoint_hook_new(&hook, &ho));
        assert_ckpt_ok(ckpt_monitored_session_new(&ms, g, &hook, 1, &sess));
        /* Step 0's checkpoint is durable; the victim's next data file
         * (step 4's: every policy dispatches that save) fails. */
        assert_ckpt_ok(ckpt_mpi_saver_wait(s, -1));
        if (test_rank() == victim)
            ckpt_fs_fault_fail(ff, 1, CKPT_FS_OP_BIT(CKPT_FS_OP_OPEN_WRITE),
                               EIO, 0, 0);
        for (int i = 0; i < 20000 && err == 0; i++) { /* ends at the failure */
            err = ckpt_monitored_session_run(ms, NULL, uneven_step, &st, NULL);
            if (err < 0)
                failed_at = st.global_step;
        }
        snprintf(needle, sizeof(needle), "rank %d: ", victim);
        assert_ckpt_error(err, CKPT_EIO, needle);
        all = calloc((size_t)test_size(), sizeof(*all));
        assert_non_null(all);
        MPI_Allgather(&failed_at, 1, MPI_INT64_T, all, 1, MPI_INT64_T,
                      MPI_COMM_WORLD);
        for (int r = 0; r < test_size(); r++)
            assert_int_equal(all[r], failed_at);
        free(all);
        assert_ckpt_error(ckpt_monitored_session_close(ms, err), CKPT_EIO,
                          needle);
        ckpt_monitored_session_free(ms);
        close_job(s, g, &mt);
        assert_int_equal(mt.saves_failed, 1);
        MPI_Barrier(MPI_COMM_WORLD);
        if (test_rank() == 0) {
            assert_true(has_checkpoint(sub, 0));
            assert_false(has_checkpoint(sub, 4));
            assert_false(has_checkpoint(sub, (int)failed_at));
        }
        ckpt_fs_fault_free(ff);
        free(sub);
    }
    shared_dir_remove(dir);
}

/* Rank 0 the chief for logging while every rank's distributed saver has
 * a log of its own (per rank, as its options allow): the sessions of the
 * other ranks are CKPT_LOG_OFF, and their async checkpoint hooks, which
 * log through the saver's log when they have none, stay silent too.
 * They once printed every checkpoint and the totals of the job on every
 * rank, whatever the session's level. */
static void test_hook_logs_on_chief_only(void **state_)
{
    char *dir = shared_dir_make();
    ckpt_saver_metrics mt;
    test_log saver_log;
    run_opts ro = {CKPT_SAVE_ASYNC, 0, 10, 0, NULL, -1, &saver_log};
    state st;
    (void)state_;
    memset(&st, 0, sizeof(st));
    test_log_init(&saver_log, CKPT_LOG_INFO);
    run_session(dir, &st, &ro, &mt); /* rank 0's session alone logs */
    assert_state(&st, 10);
    if (test_rank() == 0) {
        assert_non_null(strstr(saver_log.text, "AsyncCheckpointSaverHook: "
                                               "snapshot of step 0 taken"));
        assert_non_null(strstr(saver_log.text, "AsyncCheckpointSaverHook: "
                                               "session ended: "));
    } else {
        assert_null(strstr(saver_log.text, "CheckpointSaverHook"));
    }
    shared_dir_remove(dir);
}

/* The state file lost beside a job's checkpoints: a monitored session over
 * the distributed saver started afresh saying nothing (ckpt-train
 * --distributed too, its saves then evicting the checkpoints), where one
 * over the single-process saver warns. It now warns, on the chief, with
 * how many there are and the newest. */
static void test_session_warns_of_unlisted_checkpoints(void **state_)
{
    char *dir = shared_dir_make();
    char *state_path = malloc(strlen(dir) + 16);
    ckpt_saver_metrics mt;
    run_opts ro = {CKPT_SAVE_ASYNC, 0, 10, 0, NULL, -1, NULL};
    ckpt_session_options sess = CKPT_SESSION_OPTIONS_INIT;
    ckpt_mpi_saver *s = NULL;
    ckpt_saver *handle = NULL;
    ckpt_graph *g = NULL;
    ckpt_monitored_session *ms = NULL;
    test_log log;
    state st;
    (void)state_;
    assert_non_null(state_path);
    sprintf(state_path, "%s/checkpoint", dir);
    memset(&st, 0, sizeof(st));
    run_session(dir, &st, &ro, &mt);
    MPI_Barrier(MPI_COMM_WORLD);
    if (test_rank() == 0)
        assert_int_equal(unlink(state_path), 0);
    MPI_Barrier(MPI_COMM_WORLD);
    memset(&st, 0, sizeof(st));
    test_log_init(&log, CKPT_LOG_INFO);
    open_job(dir, &st, NULL, &s, &handle, &g);
    sess.checkpoint_dir = dir;
    sess.scaffold.saver = handle;
    sess.log = test_log_capture;
    sess.log_payload = &log;
    if (test_rank() != 0)
        sess.log_level = CKPT_LOG_OFF;
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, g, NULL, 0, &sess));
    assert_int_equal(st.global_step, 0); /* afresh, as the warning says */
    if (test_rank() == 0) {
        assert_non_null(strstr(log.text, "no latest checkpoint ("));
        assert_non_null(strstr(log.text, "the newest model.ckpt-10, not "
                                         "named by a state file"));
        assert_non_null(strstr(log.text, "): initialising"));
    }
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
    close_job(s, g, &mt);
    free(state_path);
    shared_dir_remove(dir);
}

/* ckpt_training_session_new (MonitoredTrainingSession) over the handle
 * as its scaffold saver: its checkpoint hook writes through it on every
 * rank, and a second job resumes from it. */
static void run_training_session(const char *dir, state *st, int steps,
                                 ckpt_saver_metrics *mt)
{
    ckpt_training_session_options to = CKPT_TRAINING_SESSION_OPTIONS_INIT;
    ckpt_mpi_saver *s = NULL;
    ckpt_saver *handle = NULL;
    ckpt_graph *g = NULL;
    ckpt_monitored_session *ms = NULL;
    open_job(dir, st, NULL, &s, &handle, &g);
    to.checkpoint_dir = dir;
    to.save_checkpoint_steps = 4;
    to.checkpoint_mode = CKPT_SAVE_ASYNC;
    to.log_step_count_steps = CKPT_FREQ_OFF;
    to.session.version = CKPT_SESSION_OPTIONS_VERSION;
    to.session.scaffold.saver = handle;
    if (test_rank() != 0)
        to.session.log_level = CKPT_LOG_OFF;
    assert_ckpt_ok(ckpt_training_session_new(&ms, g, &to));
    for (int i = 0; i < steps; i++)
        assert_ckpt_ok(
            ckpt_monitored_session_run(ms, NULL, train_step, st, NULL));
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
    close_job(s, g, mt);
}

static void test_training_session_over_handle(void **state_)
{
    char *dir = shared_dir_make();
    ckpt_saver_metrics mt;
    state st;
    (void)state_;
    memset(&st, 0, sizeof(st));
    run_training_session(dir, &st, 10, &mt);
    assert_state(&st, 10);
    assert_int_equal(mt.saves_completed, 4); /* 0, 4, 8, 10 */
    memset(&st, 0, sizeof(st));
    run_training_session(dir, &st, 3, &mt);
    assert_state(&st, 13);
    /* the timer restarts at the restored step 10: 13 at end only */
    assert_int_equal(mt.saves_completed, 1);
    if (test_rank() == 0) {
        assert_false(has_checkpoint(dir, 12));
        assert_true(has_checkpoint(dir, 13));
    }
    shared_dir_remove(dir);
}

static void test_handle_refuses_what_it_cannot_do(void **state_)
{
    char *dir = shared_dir_make();
    ckpt_mpi_saver_options so = test_mpi_options();
    ckpt_mpi_saver *s = NULL;
    ckpt_saver *handle = NULL, *again = NULL;
    /* pos is registered as a variable: the save reads it, so it lives as
     * long as the saver does, not in the block that adds it */
    int64_t x = 0, pos = 0;
    ckpt_var v = model_var("x", CKPT_DT_INT64, 0, NULL, &x);
    const char *names[1] = {"x"};
    (void)state_;
    assert_ckpt_error(ckpt_mpi_saver_as_saver(NULL, &handle), CKPT_EINVAL,
                      "ckpt_mpi_saver_as_saver: s is NULL");
    assert_ckpt_ok(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, dir, &so));
    assert_ckpt_ok(ckpt_mpi_saver_as_saver(s, &handle));
    assert_ckpt_ok(ckpt_mpi_saver_as_saver(s, &again));
    assert_ptr_equal(handle, again);
    assert_string_equal(ckpt_saver_get_options(handle)->basename, "model.ckpt");
    assert_ckpt_error(ckpt_saver_add_var(handle, &v), CKPT_ENOTSUP,
                      "'x' goes to the saver this handle wraps");
    assert_ckpt_error(ckpt_saver_restore_subset(handle, "p", names, 1),
                      CKPT_ENOTSUP, "restores every variable");
    assert_int_equal(ckpt_saver_num_checkpoints(handle), 0);
    assert_ckpt_ok(ckpt_mpi_saver_add_replicated(s, &v));
    {
        int64_t other = 0;
        ckpt_var per = model_var("pos", CKPT_DT_INT64, 0, NULL, &pos);
        assert_ckpt_ok(ckpt_mpi_saver_add_per_rank(s, &per, 0));
        assert_int_equal(ckpt_saver_saves_var(handle, "x", &x), 1);
        assert_int_equal(ckpt_saver_saves_var(handle, "x", NULL), 1);
        assert_int_equal(ckpt_saver_saves_var(handle, "x", &other), 0);
        assert_int_equal(ckpt_saver_saves_var(handle, "y", NULL), 0);
        /* a per-rank variable is saved under "<name>/rank-<r>" */
        assert_int_equal(ckpt_saver_saves_var(handle, "pos", &pos), 0);
    }
    assert_ckpt_error(ckpt_saver_restore_latest(handle, NULL), CKPT_ENOTFOUND,
                      "no checkpoint to restore");
    assert_ckpt_ok(ckpt_saver_save(handle, 3, NULL));
    {
        ckpt_buf latest = CKPT_BUF_INIT;
        assert_ckpt_ok(ckpt_saver_latest(handle, &latest));
        assert_non_null(strstr(latest.ptr, "/model.ckpt-3"));
        ckpt_buf_dispose(&latest);
    }
    /* The handle is the distributed saver's: ckpt_saver_free on it freed
     * it, and ckpt_mpi_saver_free then freed it again (a use after free
     * under ASan). Now refused, said on stderr, the handle left working. */
    {
        char path[4200], *text;
        test_stderr capture;
        ckpt_buf latest = CKPT_BUF_INIT;
        snprintf(path, sizeof(path), "%s/stderr-%d.txt", dir, test_rank());
        capture = test_stderr_begin(path);
        ckpt_saver_free(handle);
        text = test_stderr_end(&capture);
        assert_non_null(strstr(text, "ckpt_saver_free: this handle belongs "
                                     "to the saver it was taken from; "
                                     "ckpt_mpi_saver_free frees both"));
        free(text);
        assert_ckpt_ok(ckpt_saver_save(handle, 4, NULL));
        assert_ckpt_ok(ckpt_saver_latest(handle, &latest));
        assert_non_null(strstr(latest.ptr, "/model.ckpt-4"));
        ckpt_buf_dispose(&latest);
    }
    ckpt_mpi_saver_free(s); /* frees the handle too */
    shared_dir_remove(dir);
}

/* A session over a distributed saver that does not hold the graph's global
 * step is refused on every rank before anything is written: it would
 * restore step 0 and then write over the checkpoints of the steps it counts
 * through again. */
static void test_session_refuses_saver_without_global_step(void **state_)
{
    static const int64_t w_dims[] = {8};
    char *dir = shared_dir_make();
    ckpt_mpi_saver_options so = test_mpi_options();
    ckpt_checkpoint_hook_options ho = CKPT_CHECKPOINT_HOOK_OPTIONS_INIT;
    ckpt_session_options sess = CKPT_SESSION_OPTIONS_INIT;
    ckpt_mpi_saver *s = NULL;
    ckpt_saver *handle = NULL;
    ckpt_graph *g = NULL;
    ckpt_monitored_session *ms = NULL;
    ckpt_hook hook;
    state st;
    ckpt_var v;
    (void)state_;
    memset(&st, 0, sizeof(st));
    assert_ckpt_ok(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, dir, &so));
    v = model_var("w", CKPT_DT_FLOAT, 1, w_dims, st.w);
    assert_ckpt_ok(ckpt_mpi_saver_add_replicated(s, &v));
    assert_ckpt_ok(ckpt_mpi_saver_as_saver(s, &handle));
    assert_ckpt_ok(ckpt_graph_new(&g));
    assert_ckpt_ok(ckpt_graph_create_global_step(g, &st.global_step));
    ho.saver = handle;
    ho.save_steps = 4;
    sess.checkpoint_dir = dir;
    sess.scaffold.saver = handle;
    sess.log_level = CKPT_LOG_OFF;
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&hook, &ho));
    assert_ckpt_error(ckpt_monitored_session_new(&ms, g, &hook, 1, &sess),
                      CKPT_EINVAL, "does not save the graph's global step");
    assert_null(ms);
    MPI_Barrier(MPI_COMM_WORLD);
    if (test_rank() == 0)
        assert_false(has_checkpoint(dir, 0));
    ckpt_mpi_saver_free(s);
    ckpt_graph_free(g);
    shared_dir_remove(dir);
}

/* A hook whose begin fails on the last rank only: the session's creation
 * fails on every rank, promptly (the ranks agree on their set-up through
 * the saver before the restore, which the failed rank would never join),
 * the failed rank with its own error and the others naming it; the saver
 * is left in step (its collective close succeeds everywhere). */
static int refuse_begin_on_last_rank(ckpt_graph *g, void *payload)
{
    (void)g;
    (void)payload;
    if (test_rank() != test_size() - 1)
        return 0;
    return ckpt_error_set(CKPT_EIO, "begin refused on this rank");
}

static void test_session_begin_failing_on_one_rank(void **state_)
{
    char *dir = shared_dir_make();
    ckpt_checkpoint_hook_options ho = CKPT_CHECKPOINT_HOOK_OPTIONS_INIT;
    ckpt_session_options sess = CKPT_SESSION_OPTIONS_INIT;
    ckpt_mpi_saver *s = NULL;
    ckpt_saver *handle = NULL;
    ckpt_graph *g = NULL;
    ckpt_monitored_session *ms = NULL;
    ckpt_saver_metrics mt;
    ckpt_hook hooks[2];
    char want[128];
    state st;
    double t0;
    int rc;
    (void)state_;
    memset(&st, 0, sizeof(st));
    open_job(dir, &st, NULL, &s, &handle, &g);
    ho.saver = handle;
    ho.save_steps = 4;
    sess.checkpoint_dir = dir;
    sess.scaffold.saver = handle;
    sess.log_level = CKPT_LOG_OFF;
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&hooks[0], &ho));
    memset(&hooks[1], 0, sizeof(hooks[1]));
    hooks[1].version = CKPT_HOOK_VERSION;
    hooks[1].name = "refuser";
    hooks[1].begin = refuse_begin_on_last_rank;
    t0 = MPI_Wtime();
    rc = ckpt_monitored_session_new(&ms, g, hooks, 2, &sess);
    if (test_rank() == test_size() - 1)
        snprintf(want, sizeof(want),
                 "hook 'refuser' begin: begin refused on this rank");
    else
        snprintf(want, sizeof(want),
                 "rank %d: hook 'refuser' begin: begin refused on this rank",
                 test_size() - 1);
    assert_ckpt_error(rc, CKPT_EIO, want);
    assert_null(ms);
    /* far below the 60 s collective timeout the others would wait */
    assert_true(MPI_Wtime() - t0 < 20.0);
    close_job(s, g, &mt);
    MPI_Barrier(MPI_COMM_WORLD);
    if (test_rank() == 0)
        assert_false(has_checkpoint(dir, 0));
    shared_dir_remove(dir);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hook_saves_and_resumes),
        cmocka_unit_test(test_hook_abandoned_then_resumed),
        cmocka_unit_test(test_hook_seconds_decided_by_rank0),
        cmocka_unit_test(test_hook_local_error_does_not_split_ranks),
        cmocka_unit_test(test_hook_async_failure_same_step),
        cmocka_unit_test(test_hook_logs_on_chief_only),
        cmocka_unit_test(test_session_warns_of_unlisted_checkpoints),
        cmocka_unit_test(test_training_session_over_handle),
        cmocka_unit_test(test_handle_refuses_what_it_cannot_do),
        cmocka_unit_test(test_session_refuses_saver_without_global_step),
        cmocka_unit_test(test_session_begin_failing_on_one_rank),
    };
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    return mpi_tests_end(cmocka_run_group_tests(tests, NULL, NULL));
}
