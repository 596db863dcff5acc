/* tests/hooks/test_preemption.c - the opt-in preemption handler: a SIGTERM
 * or SIGINT raised in-process during a step stops the loop at the next step
 * boundary, close runs every end (the checkpoint hook writes the final
 * checkpoint) and returns 0; install/remove/EBUSY and the restored signal
 * dispositions. */
#include "session/session_test_util.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

static int handler_is_default(int sig)
{
    struct sigaction cur;
    sigaction(sig, NULL, &cur);
    return cur.sa_handler == SIG_DFL;
}

static void test_preemption_sigterm_stops_at_step_boundary(void **state)
{
    model m;
    trace t;
    rec_hook r;
    ckpt_hook h;
    ckpt_monitored_session *ms;
    int rc = 0;
    (void)state;
    memset(&t, 0, sizeof(t));
    memset(&r, 0, sizeof(r));
    model_init(&m);
    m.raise_at = 3;
    m.raise_signal = SIGTERM;
    h = rec_hook_make(&r, "H", &t);
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, m.graph, &h, 1, NULL));
    assert_ckpt_ok(ckpt_preemption_handler_install(ms));
    assert_int_equal(ckpt_preemption_signal(), 0);
    while (!ckpt_monitored_session_should_stop(ms, NULL)) {
        rc = ckpt_monitored_session_run(ms, NULL, model_step, &m, NULL);
        if (rc != 0)
            break;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(m.step, 3); /* the step that got the signal completed */
    assert_int_equal(r.n_after, 3);
    assert_int_equal(ckpt_preemption_signal(), SIGTERM);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, rc));
    assert_int_equal(r.n_end, 1);
    assert_int_equal(r.n_abort, 0);
    ckpt_preemption_handler_remove();
    assert_true(handler_is_default(SIGTERM));
    assert_true(handler_is_default(SIGINT));
    assert_int_equal(ckpt_preemption_signal(), SIGTERM); /* still reported */
    ckpt_monitored_session_free(ms);
    model_free(&m);
}

static void test_preemption_final_checkpoint_written(void **state)
{
    model m;
    ckpt_hook h;
    ckpt_checkpoint_hook_options co = CKPT_CHECKPOINT_HOOK_OPTIONS_INIT;
    ckpt_monitored_session *ms;
    ckpt_buf latest = CKPT_BUF_INIT;
    char *dir = test_make_temp_dir();
    int rc = 0;
    (void)state;
    model_init(&m);
    m.raise_at = 4;
    m.raise_signal = SIGINT;
    co.checkpoint_dir = dir;
    co.save_steps = 1000;
    assert_ckpt_ok(ckpt_checkpoint_hook_new(&h, &co));
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, m.graph, &h, 1, NULL));
    assert_ckpt_ok(ckpt_preemption_handler_install(ms));
    while (!ckpt_monitored_session_should_stop(ms, NULL)) {
        rc = ckpt_monitored_session_run(ms, NULL, model_step, &m, NULL);
        if (rc != 0)
            break;
    }
    assert_ckpt_ok(rc);
    assert_int_equal(m.step, 4);
    assert_int_equal(ckpt_preemption_signal(), SIGINT);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, rc));
    assert_ckpt_ok(ckpt_latest_checkpoint(&latest, NULL, dir));
    assert_non_null(strstr(latest.ptr, "model.ckpt-4"));
    /* freeing the session removes the handler */
    ckpt_monitored_session_free(ms);
    assert_true(handler_is_default(SIGINT));
    assert_true(handler_is_default(SIGTERM));
    ckpt_buf_dispose(&latest);
    model_free(&m);
    test_remove_tree(dir);
}

static void test_preemption_bracket_inline_step(void **state)
{
    model m;
    ckpt_monitored_session *ms;
    ckpt_step_context *sc;
    int steps = 0;
    (void)state;
    model_init(&m);
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, m.graph, NULL, 0, NULL));
    assert_ckpt_ok(ckpt_preemption_handler_install(ms));
    while (!ckpt_monitored_session_should_stop(ms, NULL) && steps < 100) {
        assert_ckpt_ok(ckpt_monitored_session_before_run(ms, NULL, &sc));
        m.step++;
        if (++steps == 2)
            raise(SIGTERM);
        assert_ckpt_ok(ckpt_monitored_session_after_run(ms, 0, NULL));
    }
    assert_int_equal(steps, 2);
    assert_ckpt_ok(ckpt_monitored_session_close(ms, 0));
    ckpt_monitored_session_free(ms);
    assert_true(handler_is_default(SIGTERM));
    model_free(&m);
}

static void test_preemption_busy_and_reinstall(void **state)
{
    model m1, m2;
    ckpt_monitored_session *a, *b;
    (void)state;
    model_init(&m1);
    model_init(&m2);
    assert_ckpt_ok(ckpt_monitored_session_new(&a, m1.graph, NULL, 0, NULL));
    assert_ckpt_ok(ckpt_monitored_session_new(&b, m2.graph, NULL, 0, NULL));
    assert_ckpt_error(ckpt_preemption_handler_install(NULL), CKPT_EINVAL,
                      "no session");
    assert_ckpt_ok(ckpt_preemption_handler_install(a));
    assert_ckpt_ok(ckpt_preemption_handler_install(a)); /* idempotent */
    assert_false(handler_is_default(SIGTERM));
    assert_ckpt_error(ckpt_preemption_handler_install(b), CKPT_EBUSY,
                      "another monitored session");
    ckpt_preemption_handler_remove();
    ckpt_preemption_handler_remove(); /* no-op */
    assert_ckpt_ok(ckpt_preemption_handler_install(b));
    assert_int_equal(ckpt_preemption_signal(), 0); /* reset by install */
    raise(SIGTERM);
    /* applied to b only, and at the boundary should_stop checks */
    assert_false(ckpt_monitored_session_should_stop(a, NULL));
    assert_true(ckpt_monitored_session_should_stop(b, NULL));
    ckpt_monitored_session_free(b); /* removes the handler */
    assert_true(handler_is_default(SIGTERM));
    assert_ckpt_ok(ckpt_preemption_handler_install(a));
    ckpt_preemption_handler_remove();
    ckpt_monitored_session_free(a);
    model_free(&m1);
    model_free(&m2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_preemption_sigterm_stops_at_step_boundary),
        cmocka_unit_test(test_preemption_final_checkpoint_written),
        cmocka_unit_test(test_preemption_bracket_inline_step),
        cmocka_unit_test(test_preemption_busy_and_reinstall),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
