/* tests/mpi/test_mpi_hook.c - a monitored session on every rank with the
 * MPI checkpoint hook: async saves every 4 steps and at end, then a new
 * session that restores them (global step, a replicated weight, each
 * rank's own data position) and carries on. */
#include "mpi_model.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
        st->w[i] += 1.0f;
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

static ckpt_var var(const char *name, int dtype, int rank, int64_t dim,
                    void *data)
{
    ckpt_var v;
    memset(&v, 0, sizeof(v));
    v.name = name;
    v.dtype = dtype;
    v.shape.rank = rank;
    v.shape.dims[0] = dim;
    v.data = data;
    return v;
}

/* One monitored session running `steps` steps; returns the saver's
 * metrics. */
static void run_session(const char *dir, state *st, int steps, int mode,
                        ckpt_saver_metrics *mt, double save_secs)
{
    ckpt_clock clock = {CKPT_CLOCK_VERSION, st, fake_monotonic, NULL};
    ckpt_mpi_saver_options so = test_mpi_options();
    ckpt_mpi_checkpoint_hook_options ho = CKPT_MPI_CHECKPOINT_HOOK_OPTIONS_INIT;
    ckpt_mpi_saver *s = NULL;
    ckpt_graph *g = NULL;
    ckpt_monitored_session *ms = NULL;
    ckpt_hook hook;
    ckpt_var v;
    /* WAIT: every trigger saves (SKIP would skip while one is in flight,
     * and these steps take no time). */
    so.base.busy_policy = CKPT_BUSY_WAIT;
    assert_ckpt_ok(ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, dir, &so));
    v = var("global_step", CKPT_DT_INT64, 0, 0, &st->global_step);
    assert_ckpt_ok(ckpt_mpi_saver_add_replicated(s, &v));
    v = var("w", CKPT_DT_FLOAT, 1, 8, st->w);
    assert_ckpt_ok(ckpt_mpi_saver_add_replicated(s, &v));
    v = var("data_pos", CKPT_DT_INT64, 0, 0, &st->data_pos);
    assert_ckpt_ok(ckpt_mpi_saver_add_per_rank(s, &v, 0));

    assert_ckpt_ok(ckpt_graph_new(&g));
    assert_ckpt_ok(ckpt_graph_create_global_step(g, &st->global_step));
    v = var("w", CKPT_DT_FLOAT, 1, 8, st->w);
    assert_ckpt_ok(ckpt_graph_add_var(g, &v));
    ho.saver = s;
    ho.save_steps = save_secs > 0 ? 0 : 4;
    ho.save_secs = save_secs;
    ho.clock = &clock;
    ho.mode = mode;
    assert_ckpt_ok(ckpt_mpi_checkpoint_hook_new(&hook, &ho));
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, g, &hook, 1, NULL));
    for (int i = 0; i < steps; i++)
        assert_ckpt_ok(
            ckpt_monitored_session_run(ms, NULL, train_step, st, NULL));
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
    ckpt_mpi_saver_get_metrics(s, mt);
    assert_ckpt_ok(ckpt_mpi_saver_close(s));
    ckpt_mpi_saver_free(s);
    ckpt_graph_free(g);
}

static void assert_state(const state *st, int64_t step)
{
    assert_int_equal(st->global_step, step);
    for (int i = 0; i < 8; i++)
        assert_true(st->w[i] == (float)step);
    assert_int_equal(st->data_pos, step * (test_rank() + 1));
}

static void test_hook_saves_and_resumes(void **state_)
{
    char *dir = shared_dir_make();
    state st;
    ckpt_saver_metrics mt;
    int modes[2] = {CKPT_SAVE_ASYNC, CKPT_SAVE_SYNC};
    (void)state_;
    for (int m = 0; m < 2; m++) {
        char sub[4200];
        snprintf(sub, sizeof(sub), "%s/m%d", dir, m);
        if (test_rank() == 0)
            assert_int_equal(mkdir(sub, 0755), 0);
        MPI_Barrier(MPI_COMM_WORLD);
        memset(&st, 0, sizeof(st));
        run_session(sub, &st, 10, modes[m], &mt, 0);
        assert_state(&st, 10);
        /* steps 4 and 8, then 10 at end */
        assert_int_equal(mt.saves_completed, 3);
        assert_int_equal(mt.last_saved_step, 10);

        memset(&st, 0, sizeof(st));
        run_session(sub, &st, 2, modes[m], &mt, 0);
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
    }
    shared_dir_remove(dir);
}

/* Seconds mode: rank 0's clock decides for every rank (the others' clocks
 * stand still): 2.5 s between saves at one second per step saves at 3 and
 * 6, and 7 at end. */
static void test_hook_seconds_decided_by_rank0(void **state_)
{
    char *dir = shared_dir_make();
    ckpt_saver_metrics mt;
    state st;
    (void)state_;
    memset(&st, 0, sizeof(st));
    run_session(dir, &st, 7, CKPT_SAVE_ASYNC, &mt, 2.5);
    assert_state(&st, 7);
    assert_int_equal(mt.saves_completed, 3);
    assert_int_equal(mt.last_saved_step, 7);
    if (test_rank() == 0) {
        char path[4300];
        for (int step = 3; step <= 7; step++) {
            uint8_t *f;
            size_t n;
            snprintf(path, sizeof(path), "%s/model.ckpt-%d.index", dir, step);
            f = test_read_file(path, &n);
            assert_true((f != NULL) == (step == 3 || step == 6 || step == 7));
            free(f);
        }
    }
    shared_dir_remove(dir);
}

static void test_hook_rejects_bad_options(void **state_)
{
    ckpt_mpi_checkpoint_hook_options ho = CKPT_MPI_CHECKPOINT_HOOK_OPTIONS_INIT;
    ckpt_hook hook;
    (void)state_;
    assert_ckpt_error(ckpt_mpi_checkpoint_hook_new(&hook, &ho), CKPT_EINVAL,
                      "no saver");
    ho.saver = (ckpt_mpi_saver *)&ho; /* never used: options fail first */
    ho.save_steps = 5;
    ho.save_secs = 2.0;
    assert_ckpt_error(ckpt_mpi_checkpoint_hook_new(&hook, &ho), CKPT_EINVAL,
                      "exactly one of save_steps and save_secs");
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hook_saves_and_resumes),
        cmocka_unit_test(test_hook_seconds_decided_by_rank0),
        cmocka_unit_test(test_hook_rejects_bad_options),
    };
    int provided, failed, any = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    failed = cmocka_run_group_tests(tests, NULL, NULL);
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any;
}
