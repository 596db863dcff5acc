/* tests/session/test_recoverable.c - session creation with the scaffold
 * (restore the latest checkpoint, explicit restore, init_fn, non-chief) and
 * the recoverable flavour (B31-B34): re-creation from the latest checkpoint
 * on EABORTED / EUNAVAILABLE, bounded retries with back-off. */
#include "common/internal.h"
#include "session_test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct fixture {
    char *dir;
    model m;
    trace t;
    rec_hook a, b;
    ckpt_monitored_session *ms;
    int init_calls;
} fixture;

static int setup(void **state)
{
    fixture *f = test_dir_fixture_new(sizeof(*f), offsetof(fixture, dir));
    model_init(&f->m);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    ckpt_monitored_session_free(f->ms);
    model_free(&f->m);
    return test_dir_fixture_teardown(state);
}

/* Save the model's variables as they are now, at its global step. */
static void save_now(fixture *f)
{
    ckpt_saver *s;
    assert_ckpt_ok(ckpt_saver_open(&s, f->dir, NULL));
    for (size_t i = 0; i < ckpt_graph_num_vars(f->m.graph); i++)
        assert_ckpt_ok(ckpt_saver_add_var(s, ckpt_graph_var(f->m.graph, i)));
    assert_ckpt_ok(ckpt_saver_save(s, f->m.step, NULL));
    ckpt_saver_free(s);
}

/* The model at step 5 with w = 5 is saved, then set to other values. */
static void save_step5(fixture *f)
{
    f->m.step = 5;
    for (int i = 0; i < 4; i++)
        f->m.w[i] = 5.0f;
    save_now(f);
    f->m.step = 0;
    memset(f->m.w, 0, sizeof(f->m.w));
}

static int count_init(ckpt_session *s, void *payload)
{
    fixture *f = payload;
    (void)s;
    f->init_calls++;
    return 0;
}

static ckpt_session_options base_options(fixture *f)
{
    ckpt_session_options o = CKPT_SESSION_OPTIONS_INIT;
    o.checkpoint_dir = f->dir;
    o.scaffold.init_fn = count_init;
    o.scaffold.init_payload = f;
    o.recovery_backoff_s = 1e-6;
    return o;
}

static int open_session(fixture *f, const ckpt_session_options *o)
{
    ckpt_hook hooks[2];
    hooks[0] = rec_hook_make(&f->a, "A", &f->t);
    hooks[1] = rec_hook_make(&f->b, "B", &f->t);
    return ckpt_monitored_session_new(&f->ms, f->m.graph, hooks, 2, o);
}

static int run_step(fixture *f)
{
    return ckpt_monitored_session_run(f->ms, NULL, model_step, &f->m, NULL);
}

static void test_b15_restores_latest_instead_of_init(void **state)
{
    fixture *f = *state;
    ckpt_session_options o = base_options(f);
    save_step5(f);
    assert_ckpt_ok(open_session(f, &o));
    assert_int_equal(f->m.step, 5);
    assert_true(f->m.w[2] == 5.0f);
    assert_int_equal(f->init_calls, 0);
    assert_non_null(ckpt_session_saver(ckpt_monitored_session_session(f->ms)));
}

static void test_b15_init_fn_without_checkpoint(void **state)
{
    fixture *f = *state;
    ckpt_session_options o = base_options(f);
    assert_ckpt_ok(open_session(f, &o));
    assert_int_equal(f->init_calls, 1);
    assert_int_equal(f->m.step, 0);
}

static void test_b15_restore_from_explicit_prefix(void **state)
{
    fixture *f = *state;
    ckpt_session_options o = base_options(f);
    ckpt_buf prefix = CKPT_BUF_INIT;
    save_step5(f);
    f->m.step = 9;
    for (int i = 0; i < 4; i++)
        f->m.w[i] = 9.0f;
    save_now(f); /* newest is step 9 */
    assert_ckpt_ok(ckpt__buf_printf(&prefix, "%s/model.ckpt-5", f->dir));
    o.checkpoint_dir = NULL;
    o.restore_from = prefix.ptr;
    assert_ckpt_ok(open_session(f, &o));
    assert_int_equal(f->m.step, 5);
    assert_true(f->m.w[0] == 5.0f);
    assert_int_equal(f->init_calls, 0);
    ckpt_buf_dispose(&prefix);
}

static void test_b15_restore_from_missing_fails(void **state)
{
    fixture *f = *state;
    ckpt_session_options o = base_options(f);
    ckpt_buf prefix = CKPT_BUF_INIT;
    assert_ckpt_ok(ckpt__buf_printf(&prefix, "%s/model.ckpt-77", f->dir));
    o.restore_from = prefix.ptr;
    assert_ckpt_error(open_session(f, &o), CKPT_ENOTFOUND, "model.ckpt-77");
    assert_null(f->ms);
    assert_int_equal(f->a.n_create, 0);
    assert_int_equal(f->a.n_destroy, 1);
    ckpt_buf_dispose(&prefix);
}

static void test_b43_not_chief_never_restores_or_inits(void **state)
{
    fixture *f = *state;
    ckpt_session_options o = base_options(f);
    save_step5(f);
    o.not_chief = 1;
    assert_ckpt_ok(open_session(f, &o));
    assert_int_equal(f->m.step, 0);
    assert_int_equal(f->init_calls, 0);
    assert_int_equal(f->a.n_create, 1);
}

static void test_b15_missing_checkpoint_dir_initialises(void **state)
{
    fixture *f = *state;
    ckpt_session_options o = base_options(f);
    ckpt_buf dir = CKPT_BUF_INIT;
    assert_ckpt_ok(ckpt__buf_printf(&dir, "%s/not-there", f->dir));
    o.checkpoint_dir = dir.ptr;
    assert_ckpt_ok(open_session(f, &o));
    assert_int_equal(f->init_calls, 1);
    assert_null(ckpt_session_saver(ckpt_monitored_session_session(f->ms)));
    ckpt_buf_dispose(&dir);
}

/* A state file that does not parse: no latest checkpoint (B77), so the
 * session initialises, and says why with a warning. */
static void test_b77_unreadable_state_warns_and_initialises(void **state)
{
    fixture *f = *state;
    ckpt_session_options o = base_options(f);
    test_log logged;
    char path[4200];
    save_step5(f);
    snprintf(path, sizeof(path), "%s/checkpoint", f->dir);
    test_write_file(path, "not a state file\n", 17);
    test_log_init(&logged, CKPT_LOG_WARN);
    o.log = test_log_capture;
    o.log_payload = &logged;
    assert_ckpt_ok(open_session(f, &o));
    assert_int_equal(f->init_calls, 1);
    assert_non_null(strstr(logged.text, "unreadable state file"));
    assert_non_null(strstr(logged.text, "): initialising"));
    assert_non_null(strstr(logged.text, "checkpoint:1:1"));
    /* and names the checkpoint it initialises beside */
    assert_non_null(strstr(logged.text, "; 1 checkpoint of this saver's "
                                        "naming is in the directory, the "
                                        "newest model.ckpt-5"));
}

/* No state file beside a complete checkpoint: no latest checkpoint either
 * (B77), so the session initialises, and warns, naming what it leaves. An
 * empty directory initialises without a warning. */
static void test_b77_missing_state_warns_and_initialises(void **state)
{
    fixture *f = *state;
    ckpt_session_options o = base_options(f);
    test_log logged;
    char path[4200];
    test_log_init(&logged, CKPT_LOG_WARN);
    o.log = test_log_capture;
    o.log_payload = &logged;
    assert_ckpt_ok(open_session(f, &o));
    assert_int_equal(f->init_calls, 1);
    assert_string_equal(logged.text, "");
    ckpt_monitored_session_free(f->ms);
    f->ms = NULL;
    save_step5(f);
    snprintf(path, sizeof(path), "%s/checkpoint", f->dir);
    assert_int_equal(unlink(path), 0);
    assert_ckpt_ok(open_session(f, &o));
    assert_int_equal(f->init_calls, 2);
    assert_int_equal(f->m.step, 0);
    assert_non_null(strstr(logged.text, ": no latest checkpoint ("));
    assert_non_null(strstr(logged.text, "): initialising"));
    assert_non_null(strstr(logged.text, "; 1 checkpoint of this saver's "
                                        "naming is in the directory, the "
                                        "newest model.ckpt-5"));
    assert_null(strstr(logged.text, "unreadable state file"));
}

/* A regular file where the checkpoint directory should be is an error
 * naming it, not "nothing to restore". */
static void test_file_as_checkpoint_dir_refused(void **state)
{
    fixture *f = *state;
    ckpt_session_options o = base_options(f);
    ckpt_buf file = CKPT_BUF_INIT;
    assert_ckpt_ok(ckpt__buf_printf(&file, "%s/a-file", f->dir));
    test_write_file(file.ptr, "x", 1);
    o.checkpoint_dir = file.ptr;
    assert_ckpt_error(open_session(f, &o), CKPT_ENOTFOUND,
                      "is not a directory");
    assert_int_equal(f->init_calls, 0);
    ckpt_buf_dispose(&file);
}

static void test_b31_aborted_step_recreates_and_retries(void **state)
{
    fixture *f = *state;
    ckpt_session_options o = base_options(f);
    save_step5(f);
    o.recoverable = 1;
    assert_ckpt_ok(open_session(f, &o));
    assert_int_equal(f->m.step, 5);
    assert_ckpt_ok(run_step(f)); /* 6 */
    assert_ckpt_ok(run_step(f)); /* 7 */
    f->m.fail_at_step = 7;
    f->m.fail_code = CKPT_EABORTED;
    f->m.fail_times = 1;
    f->t.buf[0] = '\0';
    assert_ckpt_ok(run_step(f));
    /* restored to 5, then the same run executed once more */
    assert_int_equal(f->m.step, 6);
    assert_true(f->m.w[0] == 6.0f);
    assert_string_equal(f->t.buf, "A.before B.before A.create B.create "
                                  "A.before B.before A.after B.after ");
    assert_int_equal(f->a.n_begin, 1);
    assert_int_equal(f->a.n_end, 0);
    assert_int_equal(f->a.n_abort, 0);
    assert_int_equal(f->a.n_create, 2);
    assert_int_equal(ckpt_monitored_session_recoveries(f->ms), 1);
    assert_false(ckpt_monitored_session_should_stop(f->ms, NULL));
    assert_ckpt_ok(ckpt_monitored_session_close(f->ms, 0));
    assert_int_equal(f->a.n_end, 1);
}

static void test_b31_unavailable_in_hook_recreates(void **state)
{
    fixture *f = *state;
    ckpt_session_options o = base_options(f);
    o.recoverable = 1;
    assert_ckpt_ok(open_session(f, &o));
    f->b.fail_after = CKPT_EUNAVAILABLE;
    f->b.fail_after_times = 1;
    assert_ckpt_ok(run_step(f));
    assert_int_equal(ckpt_monitored_session_recoveries(f->ms), 1);
    assert_int_equal(f->a.n_create, 2);
    assert_int_equal(f->init_calls, 2); /* no checkpoint: init each time */
    assert_int_equal(f->b.n_after, 2);
}

static void test_b34_default_limit_is_ten_attempts(void **state)
{
    fixture *f = *state;
    ckpt_session_options o = base_options(f);
    o.recoverable = 1;
    assert_ckpt_ok(open_session(f, &o));
    f->b.fail_after = CKPT_EUNAVAILABLE;
    assert_ckpt_error(run_step(f), CKPT_EUNAVAILABLE, "after 10 attempt");
    assert_int_equal(ckpt_monitored_session_recoveries(f->ms), 10);
    assert_int_equal(f->a.n_create, 11);
}

static void test_b31_recorded_error_before_run_recovers(void **state)
{
    fixture *f = *state;
    ckpt_session_options o = base_options(f);
    o.recoverable = 1;
    assert_ckpt_ok(open_session(f, &o));
    assert_ckpt_ok(ckpt_coordinator_request_stop(f->a.coord, CKPT_EABORTED,
                                                 "worker lost its peer"));
    assert_ckpt_ok(run_step(f));
    assert_int_equal(ckpt_monitored_session_recoveries(f->ms), 1);
    assert_int_equal(f->m.n_steps, 1);
    assert_int_equal(f->m.step, 1);
}

/* A background thread records EABORTED, then the step fails with EIO. */
static int step_with_background_abort(ckpt_step_context *sc, void *payload)
{
    model *m = payload;
    if (m->failed == 0) {
        ckpt_coordinator *c =
            ckpt_session_coordinator(ckpt_step_context_session(sc));
        m->failed++;
        ckpt_coordinator_request_stop(c, CKPT_EABORTED, "peer aborted");
        return ckpt__error(CKPT_EIO, "queue closed");
    }
    return model_step(sc, payload);
}

static void test_b31_recorded_recoverable_error_is_root_cause(void **state)
{
    fixture *f = *state;
    ckpt_session_options o = base_options(f);
    o.recoverable = 1;
    assert_ckpt_ok(open_session(f, &o));
    assert_ckpt_ok(ckpt_monitored_session_run(
        f->ms, NULL, step_with_background_abort, &f->m, NULL));
    assert_int_equal(ckpt_monitored_session_recoveries(f->ms), 1);
    assert_int_equal(f->m.step, 1);
}

static void test_b33_root_cause_returned_when_not_recoverable(void **state)
{
    fixture *f = *state;
    ckpt_session_options o = base_options(f);
    assert_ckpt_ok(open_session(f, &o));
    assert_ckpt_error(ckpt_monitored_session_run(
                          f->ms, NULL, step_with_background_abort, &f->m, NULL),
                      CKPT_EABORTED, "peer aborted");
}

static void test_b31_should_stop_recovers_recorded_error(void **state)
{
    fixture *f = *state;
    ckpt_session_options o = base_options(f);
    int status = 1;
    o.recoverable = 1;
    assert_ckpt_ok(open_session(f, &o));
    assert_ckpt_ok(ckpt_coordinator_request_stop(f->a.coord, CKPT_EUNAVAILABLE,
                                                 "ps gone"));
    assert_false(ckpt_monitored_session_should_stop(f->ms, &status));
    assert_int_equal(status, 0);
    assert_int_equal(f->a.n_create, 2);
    assert_false(ckpt_coordinator_should_stop(f->a.coord));
}

static void test_b31_bracket_aborted_step_recovers(void **state)
{
    fixture *f = *state;
    ckpt_session_options o = base_options(f);
    ckpt_step_context *sc;
    ckpt_run_values v;
    save_step5(f);
    o.recoverable = 1;
    assert_ckpt_ok(open_session(f, &o));
    assert_ckpt_ok(ckpt_monitored_session_before_run(f->ms, NULL, &sc));
    f->m.step = 6; /* partial work that the restore undoes */
    assert_ckpt_ok(ckpt_monitored_session_after_run(f->ms, CKPT_EABORTED, &v));
    assert_int_equal(f->m.step, 5);
    assert_int_equal(v.step_after, 5);
    assert_int_equal(v.num_results, 0);
    assert_int_equal(f->a.n_after, 0);
    assert_int_equal(f->a.n_create, 2);
}

static void test_b32_other_error_not_recovered(void **state)
{
    fixture *f = *state;
    ckpt_session_options o = base_options(f);
    o.recoverable = 1;
    assert_ckpt_ok(open_session(f, &o));
    f->m.fail_at_step = 0;
    f->m.fail_code = CKPT_EIO;
    assert_int_equal(run_step(f), CKPT_EIO);
    assert_int_equal(f->a.n_create, 1);
    assert_int_equal(ckpt_monitored_session_recoveries(f->ms), 0);
}

static void test_b33_non_recoverable_returns_aborted(void **state)
{
    fixture *f = *state;
    ckpt_session_options o = base_options(f);
    assert_ckpt_ok(open_session(f, &o));
    f->m.fail_at_step = 0;
    f->m.fail_code = CKPT_EABORTED;
    assert_int_equal(run_step(f), CKPT_EABORTED);
    f->m.fail_code = CKPT_EUNAVAILABLE;
    assert_int_equal(run_step(f), CKPT_EUNAVAILABLE);
    assert_int_equal(f->a.n_create, 1);
    assert_int_equal(ckpt_monitored_session_recoveries(f->ms), 0);
}

static void test_b34_retries_bounded_last_error_returned(void **state)
{
    fixture *f = *state;
    ckpt_session_options o = base_options(f);
    o.recoverable = 1;
    o.max_recovery_attempts = 3;
    assert_ckpt_ok(open_session(f, &o));
    f->m.fail_at_step = 0;
    f->m.fail_code = CKPT_EUNAVAILABLE;
    assert_ckpt_error(run_step(f), CKPT_EUNAVAILABLE, "after 3 attempt");
    assert_int_equal(f->m.n_steps, 4);
    assert_int_equal(f->a.n_create, 4);
    assert_int_equal(ckpt_monitored_session_recoveries(f->ms), 3);
    /* a later run gets a fresh budget */
    f->m.fail_times = 5; /* 4 failures so far: one more, then success */
    assert_ckpt_ok(run_step(f));
    assert_int_equal(f->m.step, 1);
}

static void test_b34_creation_retried_then_succeeds(void **state)
{
    fixture *f = *state;
    ckpt_session_options o = base_options(f);
    o.recoverable = 1;
    f->b.fail_create = CKPT_EABORTED;
    f->b.fail_create_times = 2;
    assert_ckpt_ok(open_session(f, &o));
    assert_int_equal(f->b.n_create, 3);
    assert_int_equal(f->a.n_begin, 1);
    assert_int_equal(ckpt_monitored_session_recoveries(f->ms), 2);
}

static void test_b34_creation_exhausted_fails(void **state)
{
    fixture *f = *state;
    ckpt_session_options o = base_options(f);
    o.recoverable = 1;
    o.max_recovery_attempts = 2;
    f->b.fail_create = CKPT_EABORTED;
    assert_ckpt_error(open_session(f, &o), CKPT_EABORTED, "after 2 attempt");
    assert_null(f->ms);
    assert_int_equal(f->b.n_create, 3);
    assert_int_equal(f->a.n_abort, 1);
    assert_int_equal(f->b.n_destroy, 1);
}

static void test_b34_non_recoverable_creation_not_retried(void **state)
{
    fixture *f = *state;
    ckpt_session_options o = base_options(f);
    f->b.fail_create = CKPT_EABORTED;
    assert_int_equal(open_session(f, &o), CKPT_EABORTED);
    assert_int_equal(f->b.n_create, 1);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_b15_restores_latest_instead_of_init),
        T(test_b15_init_fn_without_checkpoint),
        T(test_b15_restore_from_explicit_prefix),
        T(test_b15_restore_from_missing_fails),
        T(test_b15_missing_checkpoint_dir_initialises),
        T(test_file_as_checkpoint_dir_refused),
        T(test_b77_unreadable_state_warns_and_initialises),
        T(test_b77_missing_state_warns_and_initialises),
        T(test_b43_not_chief_never_restores_or_inits),
        T(test_b31_aborted_step_recreates_and_retries),
        T(test_b31_unavailable_in_hook_recreates),
        T(test_b34_default_limit_is_ten_attempts),
        T(test_b31_recorded_error_before_run_recovers),
        T(test_b31_recorded_recoverable_error_is_root_cause),
        T(test_b33_root_cause_returned_when_not_recoverable),
        T(test_b31_should_stop_recovers_recorded_error),
        T(test_b31_bracket_aborted_step_recovers),
        T(test_b32_other_error_not_recovered),
        T(test_b33_non_recoverable_returns_aborted),
        T(test_b34_retries_bounded_last_error_returned),
        T(test_b34_creation_retried_then_succeeds),
        T(test_b34_creation_exhausted_fails),
        T(test_b34_non_recoverable_creation_not_retried),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
