/* tests/mpi/test_mpi_overlap.c - the distributed saver's overlapped
 * snapshots (ckpt_mpi_saver_mutation_fence, base.fence_from_start) on
 * however many ranks mpiexec starts: a save_async after the first fence
 * leaves its large pieces to the rank's background thread, the fence
 * completes them, and every saved byte is the trigger's although the
 * variables are rewritten right after the fence; small variables are the
 * trigger's even when changed before the fence; without a fence the
 * snapshot is complete at the trigger; the thread alone copies a snapshot
 * nobody fences; and a monitored session over the ckpt_saver handle whose
 * step fences saves exact checkpoints from the initial one on, or warns
 * when its loop never fences. Every test is collective. */
#include "mpi_model.h"
#include "test_util.h"

#include "ckpt/hooks.h"
#include "mpi/mpi_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rows of the partitioned "big" each rank holds: 3 MiB of floats, two
 * snapshot pieces, so every rank has pieces left open. */
#define BIG_ROWS 768
#define BIG_COLS 1024

typedef struct job {
    char *dir;
    float *big; /* this rank's rows */
    float small[16];
    int64_t step;
    ckpt_mpi_saver *s;
} job;

static size_t big_count(void)
{
    return (size_t)BIG_ROWS * BIG_COLS;
}

/* The values of every variable at step `step`. */
static void fill(job *j, int64_t step)
{
    for (size_t k = 0; k < big_count(); k++)
        j->big[k] =
            (float)(k % 65521) + 0.5f * (float)test_rank() + (float)step * 3.0f;
    for (int i = 0; i < 16; i++)
        j->small[i] = (float)i + (float)step;
    j->step = step;
}

static void assert_values(const job *j, int64_t step)
{
    assert_int_equal(j->step, step);
    for (size_t k = 0; k < big_count(); k++)
        if (j->big[k] !=
            (float)(k % 65521) + 0.5f * (float)test_rank() + (float)step * 3.0f)
            fail_msg("big[%zu] is %g, not step %lld's", k, (double)j->big[k],
                     (long long)step);
    for (int i = 0; i < 16; i++)
        assert_true(j->small[i] == (float)i + (float)step);
}

static void register_vars(job *j)
{
    static const int64_t small_dims[] = {16};
    ckpt_slice_extent ext[2] = {{(int64_t)BIG_ROWS * test_rank(), BIG_ROWS},
                                {0, CKPT_SLICE_FULL}};
    int64_t big_dims[2] = {(int64_t)BIG_ROWS * test_size(), BIG_COLS};
    ckpt_var v = model_var("big", CKPT_DT_FLOAT, 2, big_dims, j->big);
    assert_ckpt_ok(ckpt_mpi_saver_add_partitioned(j->s, &v, ext));
    v = model_var("small", CKPT_DT_FLOAT, 1, small_dims, j->small);
    assert_ckpt_ok(ckpt_mpi_saver_add_replicated(j->s, &v));
    v = model_var("global_step", CKPT_DT_INT64, 0, NULL, &j->step);
    assert_ckpt_ok(ckpt_mpi_saver_add_replicated(j->s, &v));
}

static void open_job(job *j, int fence_from_start)
{
    ckpt_mpi_saver_options o = test_mpi_options();
    o.base.busy_policy = CKPT_BUSY_WAIT;
    o.base.fence_from_start = fence_from_start;
    o.base.max_to_keep = CKPT_KEEP_ALL;
    assert_ckpt_ok(ckpt_mpi_saver_open(&j->s, MPI_COMM_WORLD, j->dir, &o));
    register_vars(j);
}

static int setup(void **state)
{
    job *j = calloc(1, sizeof(*j));
    assert_non_null(j);
    j->dir = shared_dir_make();
    j->big = malloc(big_count() * sizeof(float));
    assert_non_null(j->big);
    *state = j;
    return 0;
}

static int teardown(void **state)
{
    job *j = *state;
    ckpt_mpi_saver_free(j->s);
    shared_dir_remove(j->dir);
    free(j->big);
    free(j);
    return 0;
}

/* Restore the checkpoint of `step` (collective) and check its values;
 * rank 0 also checks every record's checksum with the bundle reader. */
static void assert_checkpoint(job *j, int64_t step)
{
    char prefix[4200];
    snprintf(prefix, sizeof(prefix), "%s/model.ckpt-%lld", j->dir,
             (long long)step);
    memset(j->big, 0, big_count() * sizeof(float));
    memset(j->small, 0, sizeof(j->small));
    j->step = -1;
    assert_ckpt_ok(ckpt_mpi_saver_restore(j->s, prefix));
    assert_values(j, step);
    if (test_rank() == 0) {
        ckpt_bundle_reader *r = NULL;
        assert_ckpt_ok(ckpt_bundle_reader_open(&r, prefix, NULL));
        assert_ckpt_ok(ckpt_bundle_reader_verify(r));
        ckpt_bundle_reader_free(r);
    }
}

static void test_fenced_snapshot_holds_the_trigger(void **state)
{
    job *j = *state;
    open_job(j, 0);
    fill(j, 7);
    assert_ckpt_ok(ckpt_mpi_saver_mutation_fence(j->s)); /* nothing open */
    assert_int_equal(j->s->snap_open, 0);
    assert_ckpt_ok(ckpt_mpi_saver_save_async(j->s, 7, NULL));
    /* the large pieces are left to the background thread */
    assert_int_equal(j->s->snap_open, 1);
    assert_ckpt_ok(ckpt_mpi_saver_mutation_fence(j->s));
    assert_int_equal(j->s->snap_open, 0);
    fill(j, 8); /* every byte rewritten right after the fence */
    assert_ckpt_ok(ckpt_mpi_saver_wait(j->s, -1));
    assert_checkpoint(j, 7);
}

static void test_small_variables_copied_at_the_trigger(void **state)
{
    job *j = *state;
    open_job(j, 0);
    assert_ckpt_ok(ckpt_mpi_saver_mutation_fence(j->s));
    fill(j, 11);
    assert_ckpt_ok(ckpt_mpi_saver_save_async(j->s, 11, NULL));
    /* a step may change its counters before its fence */
    j->step = 12;
    for (int i = 0; i < 16; i++)
        j->small[i] = -1.0f;
    assert_ckpt_ok(ckpt_mpi_saver_mutation_fence(j->s));
    assert_ckpt_ok(ckpt_mpi_saver_wait(j->s, -1));
    assert_checkpoint(j, 11);
}

static void test_unfenced_saver_copies_at_the_trigger(void **state)
{
    job *j = *state;
    open_job(j, 0);
    fill(j, 3);
    assert_ckpt_ok(ckpt_mpi_saver_save_async(j->s, 3, NULL));
    assert_int_equal(j->s->snap_open, 0); /* complete: no fence promised */
    fill(j, 4);
    assert_ckpt_ok(ckpt_mpi_saver_wait(j->s, -1));
    assert_checkpoint(j, 3);
}

/* With fence_from_start the first save overlaps; the thread copies and
 * writes it alone while the caller only polls (no fence), and wait, which
 * may let the variables change, completes it. */
static void test_thread_copies_an_unfenced_open_snapshot(void **state)
{
    job *j = *state;
    ckpt_saver_metrics mt;
    int busy = 1;
    long round = 0;
    double since;
    open_job(j, 1);
    fill(j, 20);
    assert_ckpt_ok(ckpt_mpi_saver_save_async(j->s, 20, NULL));
    assert_int_equal(j->s->snap_open, 1);
    since = ckpt__mpi_now();
    while (busy) {
        assert_ckpt_ok(ckpt_mpi_saver_poll(j->s, &busy));
        ckpt__mpi_pause(&round, since);
    }
    ckpt_mpi_saver_get_metrics(j->s, &mt);
    assert_int_equal(mt.saves_completed, 1);
    assert_ckpt_ok(ckpt_mpi_saver_wait(j->s, -1));
    assert_int_equal(j->s->snap_open, 0);
    fill(j, 21);
    assert_checkpoint(j, 20);
    /* a synchronous save is a complete copy even so */
    fill(j, 22);
    assert_ckpt_ok(ckpt_mpi_saver_save(j->s, 22, NULL));
    assert_int_equal(j->s->snap_open, 0);
    fill(j, 23);
    assert_checkpoint(j, 22);
}

/* ---- through the monitored session --------------------------------------
 */

typedef struct step_payload {
    job *j;
    int fence;
    double sum; /* what the step read */
} step_payload;

/* Read every variable (a forward pass), fence, then write every byte.
 * Without the fence only the step advances (a step writing the large
 * variables there would tear the open snapshot: the race the warning is
 * about). */
static int train_step(ckpt_step_context *sc, void *payload)
{
    step_payload *p = payload;
    job *j = p->j;
    for (size_t k = 0; k < big_count(); k += 4096)
        p->sum += j->big[k];
    if (!p->fence) {
        j->step++;
        return 0;
    }
    assert_ckpt_ok(ckpt_step_context_mutation_fence(sc));
    fill(j, j->step + 1);
    return 0;
}

static void run_session(job *j, int fence, int steps, char *warnings)
{
    ckpt_checkpoint_hook_options ho = CKPT_CHECKPOINT_HOOK_OPTIONS_INIT;
    ckpt_session_options sess = CKPT_SESSION_OPTIONS_INIT;
    ckpt_monitored_session *ms = NULL;
    ckpt_saver *handle = NULL;
    ckpt_graph *g = NULL;
    ckpt_hook hook;
    step_payload p = {j, fence, 0.0};
    open_job(j, 1);
    fill(j, 0);
    assert_ckpt_ok(ckpt_mpi_saver_as_saver(j->s, &handle));
    assert_ckpt_ok(ckpt_graph_new(&g));
    assert_ckpt_ok(ckpt_graph_create_global_step(g, &j->step));
    ho.saver = handle;
    ho.save_steps = 2;
    ho.mode = CKPT_SAVE_ASYNC;
    sess.checkpoint_dir = j->dir;
    sess.scaffold.saver = handle;
    sess.log = keep_warnings;
    sess.log_payload = warnings;
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&hook, &ho));
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, g, &hook, 1, &sess));
    for (int i = 0; i < steps; i++)
        assert_ckpt_ok(
            ckpt_monitored_session_run(ms, NULL, train_step, &p, NULL));
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
    ckpt_graph_free(g);
}

static void test_session_fence_saves_exact_checkpoints(void **state)
{
    job *j = *state;
    char warnings[WARNINGS_SIZE] = "";
    run_session(j, 1, 6, warnings);
    assert_null(strstr(warnings, "mutation_fence"));
    /* the initial checkpoint (overlapped with the first step), the
     * triggers and the end */
    for (int64_t step = 0; step <= 6; step += 2)
        assert_checkpoint(j, step);
}

static void test_session_warns_when_never_fenced(void **state)
{
    job *j = *state;
    char warnings[WARNINGS_SIZE] = "";
    run_session(j, 0, 2, warnings);
    assert_non_null(strstr(warnings, "checkpoint of step 0 was still being "
                                     "copied"));
    assert_non_null(strstr(warnings, "never called "
                                     "ckpt_step_context_mutation_fence"));
    /* said once */
    assert_null(strstr(strstr(warnings, "never called") + 1, "never called"));
}

static void test_fence_arguments(void **state)
{
    job *j = *state;
    assert_ckpt_error(ckpt_mpi_saver_mutation_fence(NULL), CKPT_EINVAL,
                      "ckpt_mpi_saver_mutation_fence: s is NULL");
    open_job(j, 0);
    assert_ckpt_ok(ckpt_mpi_saver_close(j->s));
    assert_ckpt_error(ckpt_mpi_saver_mutation_fence(j->s), CKPT_ESTATE,
                      "mutation fence after close");
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fenced_snapshot_holds_the_trigger,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_small_variables_copied_at_the_trigger, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_unfenced_saver_copies_at_the_trigger, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_thread_copies_an_unfenced_open_snapshot, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_session_fence_saves_exact_checkpoints, setup, teardown),
        cmocka_unit_test_setup_teardown(test_session_warns_when_never_fenced,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_fence_arguments, setup, teardown),
    };
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    return mpi_tests_end(cmocka_run_group_tests(tests, NULL, NULL));
}
