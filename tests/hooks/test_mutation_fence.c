/* The step's mutation fence with the AsyncCheckpointSaverHook: a step that
 * reads the state, calls ckpt_step_context_mutation_fence and then
 * rewrites every variable gets checkpoints holding exactly the values of
 * their trigger steps, in the step-function API and in the bracket API
 * (run under TSan in CI: the writer still copying after the fence would be
 * a reported race); without a fence the saver never overlaps; a step that
 * writes nothing need not call the fence (the session completes the open
 * snapshot when it ends); read callbacks run on the training thread at the
 * trigger; small variables (the global step, counters) may change before
 * the fence; the fence outside a step is an error; with the saver option
 * fence_from_start the initial checkpoint overlaps the first step too, and
 * a loop that never calls the fence is warned once. */
#include "saver/saver_internal.h"
#include "saver/saver_ops.h"
#include "session/session_internal.h"
#include "test_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W_FLOATS ((size_t)(5u << 20) / 4 + 7) /* three 2 MiB pieces */
#define V_FLOATS ((size_t)300000)
#define CB_FLOATS ((size_t)512)
#define SMALL_FLOATS ((size_t)1000) /* a small variable, copied eagerly */
#define STEPS 12

typedef struct fixture {
    char *dir;
    ckpt_graph *graph;
    int64_t step;
    float *w, *v;
    float cb_vals[CB_FLOATS];
    float small[SMALL_FLOATS];
    pthread_t trainer;
    int cb_calls, cb_wrong_thread;
} fixture;

static float value(int64_t step, size_t i, int which)
{
    return (float)(step * 1000 + (int64_t)(i % 997)) + (which ? 0.5f : 0.0f);
}

static void write_small(fixture *f, int64_t step)
{
    for (size_t i = 0; i < SMALL_FLOATS; i++)
        f->small[i] = value(step, i, 0) + 0.25f;
}

static void write_state(fixture *f, int64_t step)
{
    write_small(f, step);
    for (size_t i = 0; i < W_FLOATS; i++)
        f->w[i] = value(step, i, 0);
    for (size_t i = 0; i < V_FLOATS; i++)
        f->v[i] = value(step, i, 1);
    for (size_t i = 0; i < CB_FLOATS; i++)
        f->cb_vals[i] = (float)(step * 7) - (float)i;
}

static double read_all(const fixture *f)
{
    double sum = 0;
    for (size_t i = 0; i < W_FLOATS; i += 16)
        sum += f->w[i];
    for (size_t i = 0; i < V_FLOATS; i += 16)
        sum += f->v[i];
    return sum;
}

static int cb_read(void *dst, uint64_t off, size_t n, void *payload)
{
    fixture *f = payload;
    if (!pthread_equal(pthread_self(), f->trainer))
        f->cb_wrong_thread = 1;
    f->cb_calls++;
    memcpy(dst, (const uint8_t *)f->cb_vals + off, n);
    return 0;
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    ckpt_var w = {"w",  CKPT_DT_FLOAT, {1, {(int64_t)W_FLOATS}}, NULL, NULL,
                  NULL, NULL};
    ckpt_var v = {"v",  CKPT_DT_FLOAT, {1, {(int64_t)V_FLOATS}}, NULL, NULL,
                  NULL, NULL};
    ckpt_var cb = {"cb", CKPT_DT_FLOAT, {1, {(int64_t)CB_FLOATS}},
                   NULL, cb_read,       NULL,
                   NULL};
    ckpt_var small = {"small", CKPT_DT_FLOAT, {1, {(int64_t)SMALL_FLOATS}},
                      NULL,    NULL,          NULL,
                      NULL};
    assert_non_null(f);
    f->dir = test_make_temp_dir();
    f->w = malloc(W_FLOATS * sizeof(float));
    f->v = malloc(V_FLOATS * sizeof(float));
    assert_non_null(f->w);
    assert_non_null(f->v);
    f->trainer = pthread_self();
    write_state(f, 0);
    w.data = f->w;
    small.data = f->small;
    v.data = f->v;
    cb.payload = f;
    assert_ckpt_ok(ckpt_graph_new(&f->graph));
    assert_ckpt_ok(ckpt_graph_create_global_step(f->graph, &f->step));
    assert_ckpt_ok(ckpt_graph_add_var(f->graph, &w));
    assert_ckpt_ok(ckpt_graph_add_var(f->graph, &cb));
    assert_ckpt_ok(ckpt_graph_add_var(f->graph, &v));
    assert_ckpt_ok(ckpt_graph_add_var(f->graph, &small));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    ckpt_graph_free(f->graph);
    test_remove_tree(f->dir);
    free(f->w);
    free(f->v);
    free(f);
    return 0;
}

/* An async hook saving every step (policy WAIT: every trigger saves),
 * keeping every checkpoint; `scaffold`: through the session's saver;
 * saver options of `version` with fence_from_start set to `from_start`
 * (also in a version-1 struct, as bytes a version-1 caller's struct does
 * not have). */
static ckpt_monitored_session *start_with(fixture *f, int scaffold,
                                          unsigned version, int from_start)
{
    static ckpt_saver_options so;
    ckpt_checkpoint_hook_options o = CKPT_CHECKPOINT_HOOK_OPTIONS_INIT;
    ckpt_session_options sess = CKPT_SESSION_OPTIONS_INIT;
    ckpt_monitored_session *ms = NULL;
    ckpt_hook h;
    ckpt_saver_options_init(&so, version);
    so.fence_from_start = from_start;
    so.max_to_keep = CKPT_KEEP_ALL;
    so.busy_policy = CKPT_BUSY_WAIT;
    o.checkpoint_dir = f->dir;
    o.save_steps = 1;
    o.mode = CKPT_SAVE_ASYNC;
    if (scaffold) {
        o.use_scaffold = 1;
        sess.checkpoint_dir = f->dir;
        sess.saver_options = &so;
    } else {
        o.saver_options = &so;
    }
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&h, &o));
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, f->graph, &h, 1, &sess));
    return ms;
}

static ckpt_monitored_session *start(fixture *f, int scaffold)
{
    return start_with(f, scaffold, CKPT_SAVER_OPTIONS_VERSION, 0);
}

/* Every checkpoint in the directory holds its step's values, exactly. */
static int check_checkpoints(fixture *f)
{
    float *got = malloc(W_FLOATS * sizeof(float));
    int count = 0;
    assert_non_null(got);
    for (int64_t step = 0; step <= STEPS; step++) {
        char prefix[4096];
        ckpt_bundle_reader *r = NULL;
        int64_t gs = -1;
        snprintf(prefix, sizeof(prefix), "%s/model.ckpt-%lld", f->dir,
                 (long long)step);
        if (ckpt_bundle_reader_open(&r, prefix, NULL) != 0) {
            ckpt_error_clear();
            continue;
        }
        count++;
        assert_ckpt_ok(ckpt_bundle_reader_read(r, "global_step", &gs, 8));
        assert_int_equal(gs, step);
        assert_ckpt_ok(
            ckpt_bundle_reader_read(r, "w", got, W_FLOATS * sizeof(float)));
        for (size_t i = 0; i < W_FLOATS; i++)
            if (got[i] != value(step, i, 0))
                fail_msg("checkpoint %lld: w[%zu] = %g, expected %g",
                         (long long)step, i, (double)got[i],
                         (double)value(step, i, 0));
        assert_ckpt_ok(
            ckpt_bundle_reader_read(r, "v", got, V_FLOATS * sizeof(float)));
        for (size_t i = 0; i < V_FLOATS; i++)
            if (got[i] != value(step, i, 1))
                fail_msg("checkpoint %lld: v[%zu] = %g", (long long)step, i,
                         (double)got[i]);
        assert_ckpt_ok(
            ckpt_bundle_reader_read(r, "cb", got, CB_FLOATS * sizeof(float)));
        for (size_t i = 0; i < CB_FLOATS; i++)
            assert_true(got[i] == (float)(step * 7) - (float)i);
        assert_ckpt_ok(ckpt_bundle_reader_read(r, "small", got,
                                               SMALL_FLOATS * sizeof(float)));
        for (size_t i = 0; i < SMALL_FLOATS; i++)
            if (got[i] != value(step, i, 0) + 0.25f)
                fail_msg("checkpoint %lld: small[%zu] = %g", (long long)step, i,
                         (double)got[i]);
        ckpt_bundle_reader_free(r);
    }
    free(got);
    return count;
}

/* A step: read the state (forward and backward), fence, rewrite it all. */
static int fenced_step(ckpt_step_context *sc, void *payload)
{
    fixture *f = payload;
    int err;
    (void)read_all(f);
    err = ckpt_step_context_mutation_fence(sc);
    if (err < 0)
        return err;
    write_state(f, f->step + 1);
    f->step++;
    return 0;
}

/* A step that moves its counters on first (the global step and a small
 * variable), then reads, fences and rewrites the large variables: small
 * variables are copied at the trigger, so the checkpoints still hold the
 * trigger step's values. */
static int counters_first_step(ckpt_step_context *sc, void *payload)
{
    fixture *f = payload;
    int err;
    f->step++;
    write_small(f, f->step);
    (void)read_all(f);
    err = ckpt_step_context_mutation_fence(sc);
    if (err < 0)
        return err;
    write_state(f, f->step);
    return 0;
}

static int unfenced_step(ckpt_step_context *sc, void *payload)
{
    fixture *f = payload;
    (void)sc;
    (void)read_all(f);
    write_state(f, f->step + 1);
    f->step++;
    return 0;
}

static void test_step_function_with_fence(void **state)
{
    fixture *f = *state;
    ckpt_monitored_session *ms = start(f, 1);
    ckpt_saver *sv = ckpt_session_saver(ckpt_monitored_session_session(ms));
    while (f->step < STEPS)
        assert_ckpt_ok(
            ckpt_monitored_session_run(ms, NULL, fenced_step, f, NULL));
    assert_int_equal(sv->overlap, 1);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
    assert_int_equal(check_checkpoints(f), STEPS + 1);
    assert_true(f->cb_calls >= STEPS + 1);
    assert_false(f->cb_wrong_thread);
}

static void test_bracket_with_fence(void **state)
{
    fixture *f = *state;
    ckpt_monitored_session *ms = start(f, 0);
    while (f->step < STEPS) {
        ckpt_step_context *sc = NULL;
        assert_ckpt_ok(ckpt_monitored_session_before_run(ms, NULL, &sc));
        assert_ckpt_ok(fenced_step(sc, f));
        assert_ckpt_ok(ckpt_monitored_session_after_run(ms, 0, NULL));
    }
    assert_int_equal(ms->fence_used, 1);
    assert_int_equal(ms->num_fence_savers, 1);
    assert_int_equal(ms->fence_savers[0]->overlap, 1);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    assert_int_equal(ms->num_fence_savers, 0); /* removed at end */
    ckpt_monitored_session_free(ms);
    assert_int_equal(check_checkpoints(f), STEPS + 1);
    assert_false(f->cb_wrong_thread);
}

static void test_counters_changed_before_fence(void **state)
{
    fixture *f = *state;
    ckpt_monitored_session *ms = start(f, 1);
    ckpt_saver *sv = ckpt_session_saver(ckpt_monitored_session_session(ms));
    while (f->step < STEPS)
        assert_ckpt_ok(
            ckpt_monitored_session_run(ms, NULL, counters_first_step, f, NULL));
    assert_int_equal(sv->overlap, 1);
    assert_int_equal(sv->neager, 2); /* global_step and small */
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
    assert_int_equal(check_checkpoints(f), STEPS + 1);
}

/* A loop that never calls the fence: snapshots complete at the trigger. */
static void test_without_fence_nothing_changes(void **state)
{
    fixture *f = *state;
    ckpt_monitored_session *ms = start(f, 1);
    ckpt_saver *sv = ckpt_session_saver(ckpt_monitored_session_session(ms));
    while (f->step < STEPS) {
        assert_ckpt_ok(
            ckpt_monitored_session_run(ms, NULL, unfenced_step, f, NULL));
        assert_null(sv->deferred);
    }
    assert_int_equal(sv->overlap, 0);
    assert_int_equal(ms->fence_used, 0);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
    assert_int_equal(check_checkpoints(f), STEPS + 1);
}

/* After the first fence, a step that writes nothing and skips the fence
 * still ends with the snapshot completed and dispatched. */
static void test_step_without_writes_needs_no_fence(void **state)
{
    fixture *f = *state;
    ckpt_monitored_session *ms = start(f, 1);
    ckpt_saver *sv = ckpt_session_saver(ckpt_monitored_session_session(ms));
    while (f->step < STEPS) {
        ckpt_step_context *sc = NULL;
        /* a writing step: its trigger leaves a snapshot open */
        assert_ckpt_ok(
            ckpt_monitored_session_run(ms, NULL, fenced_step, f, NULL));
        assert_non_null(sv->deferred);
        /* a step that only reads: no fence, no new trigger (same step) */
        assert_ckpt_ok(ckpt_monitored_session_before_run(ms, NULL, &sc));
        (void)read_all(f);
        assert_ckpt_ok(ckpt_monitored_session_after_run(ms, 0, NULL));
        assert_null(sv->deferred);
    }
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
    assert_int_equal(check_checkpoints(f), STEPS + 1);
}

/* fence_from_start: the initial checkpoint, taken when the session is
 * created, is left to the writer (its staging image not faulted in up
 * front) and completed by the first step's fence; the step then rewrites
 * every byte and checkpoint 0 still holds the initial values. */
static void test_fence_from_start(void **state)
{
    fixture *f = *state;
    for (int scaffold = 0; scaffold <= 1; scaffold++) {
        ckpt_monitored_session *ms =
            start_with(f, scaffold, CKPT_SAVER_OPTIONS_VERSION, 1);
        ckpt_saver *sv =
            scaffold ? ckpt_session_saver(ckpt_monitored_session_session(ms))
                     : ms->fence_savers[0];
        assert_int_equal(ms->num_fence_savers, 1);
        assert_ptr_equal(sv, ms->fence_savers[0]);
        assert_int_equal(sv->overlap, 1);
        assert_non_null(sv->deferred); /* the initial save, still copying */
        assert_int_equal(ms->fence_used, 0);
        while (f->step < STEPS)
            assert_ckpt_ok(
                ckpt_monitored_session_run(ms, NULL, fenced_step, f, NULL));
        assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
        ckpt_monitored_session_free(ms);
        assert_int_equal(check_checkpoints(f), STEPS + 1);
        assert_false(f->cb_wrong_thread);
        /* again from step 0, in a fresh directory */
        test_remove_tree(f->dir);
        f->dir = test_make_temp_dir();
        f->step = 0;
        write_state(f, 0);
    }
}

/* With fence_from_start, a first step that writes nothing and calls no
 * fence still ends with the initial snapshot completed (the loop has not
 * used the fence, so nothing else would have completed it). */
static void test_fence_from_start_first_step_reads_only(void **state)
{
    fixture *f = *state;
    ckpt_monitored_session *ms =
        start_with(f, 1, CKPT_SAVER_OPTIONS_VERSION, 1);
    ckpt_saver *sv = ckpt_session_saver(ckpt_monitored_session_session(ms));
    ckpt_step_context *sc = NULL;
    assert_non_null(sv->deferred);
    assert_ckpt_ok(ckpt_monitored_session_before_run(ms, NULL, &sc));
    (void)read_all(f);
    assert_ckpt_ok(ckpt_monitored_session_after_run(ms, 0, NULL));
    assert_null(sv->deferred);
    write_state(f, 1); /* outside a step, after the snapshot completed */
    f->step = 1;
    assert_ckpt_ok(ckpt_monitored_session_run(ms, NULL, fenced_step, f, NULL));
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
    assert_int_equal(check_checkpoints(f), 2); /* steps 0 and 2 */
}

/* A version-1 saver options struct has no fence_from_start: whatever lies
 * past its end is not read, and the saver overlaps only once fenced. */
static void test_fence_from_start_not_in_version_1(void **state)
{
    fixture *f = *state;
    ckpt_monitored_session *ms = start_with(f, 1, 1, 1);
    ckpt_saver *sv = ckpt_session_saver(ckpt_monitored_session_session(ms));
    assert_int_equal(sv->overlap, 0);
    assert_null(sv->deferred);
    assert_int_equal(ckpt_saver_get_options(sv)->fence_from_start, 0);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
}

typedef struct warn_log {
    int warnings;
    char first[512];
} warn_log;

static void count_warnings(int level, const char *message, void *payload)
{
    warn_log *l = payload;
    if (level != CKPT_LOG_WARN)
        return;
    if (l->warnings++ == 0)
        snprintf(l->first, sizeof(l->first), "%s", message);
}

/* A step that reads the state and moves only the global step (copied at
 * the trigger), calling no fence: the loop a newcomer writes before
 * learning the rule, without the torn write (a data race TSan reports). */
static int unfenced_reading_step(ckpt_step_context *sc, void *payload)
{
    fixture *f = payload;
    (void)sc;
    (void)read_all(f);
    f->step++;
    return 0;
}

/* With fence_from_start, a loop that never calls the fence tore its
 * checkpoints without a word (the option is a promise the library cannot
 * check); the first step that ends over an open snapshot without any
 * fence call so far now says so, once. A loop that fences is not warned. */
static void test_fence_from_start_unfenced_loop_warned(void **state)
{
    fixture *f = *state;
    for (int fenced = 0; fenced <= 1; fenced++) {
        static ckpt_saver_options so;
        ckpt_checkpoint_hook_options o = CKPT_CHECKPOINT_HOOK_OPTIONS_INIT;
        ckpt_session_options sess = CKPT_SESSION_OPTIONS_INIT;
        ckpt_monitored_session *ms = NULL;
        warn_log log = {0, ""};
        ckpt_hook h;
        ckpt_saver_options_init(&so, CKPT_SAVER_OPTIONS_VERSION);
        so.fence_from_start = 1;
        so.busy_policy = CKPT_BUSY_WAIT;
        so.max_to_keep = CKPT_KEEP_ALL;
        o.checkpoint_dir = f->dir;
        o.save_steps = 1;
        o.mode = CKPT_SAVE_ASYNC;
        o.use_scaffold = 1;
        sess.checkpoint_dir = f->dir;
        sess.saver_options = &so;
        sess.log = count_warnings;
        sess.log_payload = &log;
        assert_ckpt_ok(ckpt_checkpoint_hook_new(&h, &o));
        assert_ckpt_ok(ckpt_monitored_session_new(&ms, f->graph, &h, 1, &sess));
        for (int i = 0; i < 3; i++)
            assert_ckpt_ok(ckpt_monitored_session_run(
                ms, NULL, fenced ? fenced_step : unfenced_reading_step, f,
                NULL));
        assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
        ckpt_monitored_session_free(ms);
        assert_int_equal(log.warnings, fenced ? 0 : 1);
        if (!fenced)
            assert_non_null(strstr(log.first,
                                   "the checkpoint of step 0 was still "
                                   "being copied (saver option "
                                   "fence_from_start), and the loop has "
                                   "never called "
                                   "ckpt_step_context_mutation_fence"));
        test_remove_tree(f->dir);
        f->dir = test_make_temp_dir();
        f->step = 0;
        write_state(f, 0);
    }
}

static void test_fence_outside_step(void **state)
{
    fixture *f = *state;
    ckpt_monitored_session *ms = start(f, 0);
    ckpt_step_context *sc = NULL;
    assert_ckpt_error(ckpt_step_context_mutation_fence(NULL), CKPT_EINVAL,
                      "sc is NULL");
    assert_ckpt_ok(ckpt_monitored_session_before_run(ms, NULL, &sc));
    assert_ckpt_ok(ckpt_step_context_mutation_fence(sc));
    assert_ckpt_ok(ckpt_monitored_session_after_run(ms, 0, NULL));
    assert_ckpt_error(ckpt_step_context_mutation_fence(sc), CKPT_ESTATE,
                      "outside a step");
    assert_ckpt_error(ckpt_saver_mutation_fence(NULL), CKPT_EINVAL,
                      "s is NULL");
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
}

/* A saver the caller lends to a session whose loop never fences is not
 * switched to overlapped snapshots when the session lets it go (it was:
 * the hook's end called the fence on it, so the caller's next save_async
 * left its snapshot open under a loop that had promised nothing). */
static void test_lent_saver_not_switched_at_session_end(void **state)
{
    fixture *f = *state;
    ckpt_saver_options so = CKPT_SAVER_OPTIONS_INIT;
    ckpt_checkpoint_hook_options o = CKPT_CHECKPOINT_HOOK_OPTIONS_INIT;
    ckpt_session_options sess = CKPT_SESSION_OPTIONS_INIT;
    ckpt_monitored_session *ms = NULL;
    ckpt_saver *sv = NULL;
    ckpt_hook h;
    int64_t open_step = -1;
    so.busy_policy = CKPT_BUSY_WAIT;
    assert_ckpt_ok(ckpt_saver_open(&sv, f->dir, &so));
    for (size_t i = 0; i < ckpt_graph_num_vars(f->graph); i++)
        assert_ckpt_ok(ckpt_saver_add_var(sv, ckpt_graph_var(f->graph, i)));
    o.saver = sv;
    o.checkpoint_dir = f->dir;
    o.save_steps = 1;
    o.mode = CKPT_SAVE_ASYNC;
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&h, &o));
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, f->graph, &h, 1, &sess));
    assert_ckpt_ok(
        ckpt_monitored_session_run(ms, NULL, unfenced_step, f, NULL));
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
    assert_int_equal(sv->overlap, 0);
    write_state(f, 40);
    f->step = 40;
    assert_ckpt_ok(ckpt_saver_save_async(sv, 40, NULL));
    assert_int_equal(ckpt__saver_open_snapshot_step(sv, &open_step), 0);
    write_state(f, 41); /* no fence promised: the snapshot is complete */
    assert_ckpt_ok(ckpt_saver_wait(sv, 0, -1));
    assert_ckpt_ok(ckpt_saver_close(sv, -1));
    ckpt_saver_free(sv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_step_function_with_fence, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_bracket_with_fence, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_counters_changed_before_fence,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_without_fence_nothing_changes,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_step_without_writes_needs_no_fence,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_fence_from_start, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_fence_from_start_first_step_reads_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fence_from_start_not_in_version_1,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_fence_from_start_unfenced_loop_warned, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fence_outside_step, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_lent_saver_not_switched_at_session_end, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
