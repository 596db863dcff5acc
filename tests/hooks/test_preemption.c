/* tests/hooks/test_preemption.c - the opt-in preemption handler: a SIGTERM
 * or SIGINT raised in-process during a step stops the loop at the next step
 * boundary, close runs every end (the checkpoint hook writes the final
 * checkpoint) and returns 0; install/remove/EBUSY and the restored signal
 * dispositions. */
#include "session/session_test_util.h"

#include <pthread.h>
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
                      "ckpt_preemption_handler_install: ms is NULL");
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

static volatile sig_atomic_t app_handler_calls;

static void app_handler(int sig)
{
    (void)sig;
    app_handler_calls++;
}

/* The handler is process-wide: an application's own SIGTERM handler,
 * installed before, is back in place after remove and gets the signal. */
static void test_preemption_restores_application_handler(void **state)
{
    model m;
    ckpt_monitored_session *ms;
    struct sigaction app, before, cur;
    (void)state;
    model_init(&m);
    memset(&app, 0, sizeof(app));
    app.sa_handler = app_handler;
    sigemptyset(&app.sa_mask);
    assert_int_equal(sigaction(SIGTERM, &app, &before), 0);
    app_handler_calls = 0;
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, m.graph, NULL, 0, NULL));
    assert_ckpt_ok(ckpt_preemption_handler_install(ms));
    raise(SIGTERM);
    assert_int_equal(app_handler_calls, 0); /* ours took it */
    assert_true(ckpt_monitored_session_should_stop(ms, NULL));
    ckpt_preemption_handler_remove();
    sigaction(SIGTERM, NULL, &cur);
    assert_ptr_equal(cur.sa_handler, app_handler);
    raise(SIGTERM);
    assert_int_equal(app_handler_calls, 1);
    ckpt_monitored_session_free(ms);
    assert_int_equal(sigaction(SIGTERM, &before, NULL), 0);
    model_free(&m);
}

/* A signal the process ignores when the handler is installed (SIGINT in
 * a shell's background job) stays ignored: raised, it stops nothing, and
 * after remove it is still ignored. SIGTERM is taken as usual. */
static void test_preemption_leaves_ignored_signal_ignored(void **state)
{
    model m;
    ckpt_monitored_session *ms;
    struct sigaction ign, before, cur;
    (void)state;
    model_init(&m);
    memset(&ign, 0, sizeof(ign));
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    assert_int_equal(sigaction(SIGINT, &ign, &before), 0);
    assert_ckpt_ok(ckpt_monitored_session_new(&ms, m.graph, NULL, 0, NULL));
    assert_ckpt_ok(ckpt_preemption_handler_install(ms));
    sigaction(SIGINT, NULL, &cur);
    assert_ptr_equal(cur.sa_handler, SIG_IGN);
    raise(SIGINT);
    assert_false(ckpt_monitored_session_should_stop(ms, NULL));
    raise(SIGTERM);
    assert_true(ckpt_monitored_session_should_stop(ms, NULL));
    ckpt_preemption_handler_remove();
    sigaction(SIGINT, NULL, &cur);
    assert_ptr_equal(cur.sa_handler, SIG_IGN);
    ckpt_monitored_session_free(ms);
    assert_int_equal(sigaction(SIGINT, &before, NULL), 0);
    model_free(&m);
}

/* SIGTERM ignored, or blocked in the installing thread's mask (both
 * inherited across exec), cannot stop the session: install says so once,
 * a WARN through the session's log naming which, and still succeeds; a
 * usable SIGTERM gets no warning. */
static void test_preemption_warns_unusable_sigterm(void **state)
{
    static const struct {
        int ignore, block;
        const char *want; /* NULL: no warning */
    } cases[] = {
        {0, 0, NULL},
        {1, 0, "preemption handler: SIGTERM is ignored (SIG_IGN"},
        {0, 1,
         "preemption handler: SIGTERM is blocked in the signal mask "
         "of the thread installing the handler"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        model m;
        ckpt_monitored_session *ms;
        ckpt_session_options o = CKPT_SESSION_OPTIONS_INIT;
        struct sigaction ign, before;
        sigset_t term, old_mask;
        test_log log;
        test_log_init(&log, CKPT_LOG_WARN);
        o.log = test_log_capture;
        o.log_payload = &log;
        model_init(&m);
        memset(&ign, 0, sizeof(ign));
        ign.sa_handler = cases[i].ignore ? SIG_IGN : SIG_DFL;
        sigemptyset(&ign.sa_mask);
        assert_int_equal(sigaction(SIGTERM, &ign, &before), 0);
        sigemptyset(&term);
        sigaddset(&term, SIGTERM);
        assert_int_equal(
            pthread_sigmask(cases[i].block ? SIG_BLOCK : SIG_UNBLOCK, &term,
                            &old_mask),
            0);
        assert_ckpt_ok(ckpt_monitored_session_new(&ms, m.graph, NULL, 0, &o));
        assert_ckpt_ok(ckpt_preemption_handler_install(ms));
        assert_ckpt_ok(ckpt_preemption_handler_install(ms)); /* held: once */
        if (cases[i].want) {
            assert_int_equal(test_count(log.text, cases[i].want), 1);
            assert_int_equal(test_count(log.text, "preemption handler"), 1);
            assert_non_null(strstr(log.text, "no final checkpoint"));
        } else {
            assert_string_equal(log.text, "");
        }
        ckpt_preemption_handler_remove();
        ckpt_monitored_session_free(ms);
        assert_int_equal(pthread_sigmask(SIG_SETMASK, &old_mask, NULL), 0);
        assert_int_equal(sigaction(SIGTERM, &before, NULL), 0);
        model_free(&m);
    }
}

typedef struct racer {
    ckpt_monitored_session *ms;
    pthread_barrier_t *start;
    int rc;
} racer;

static void *race_install(void *arg)
{
    racer *r = arg;
    pthread_barrier_wait(r->start);
    r->rc = ckpt_preemption_handler_install(r->ms);
    return NULL;
}

/* Two sessions on two threads ask for the handler at once: exactly one
 * gets it, the other CKPT_EBUSY; the holder's free hands it back. */
static void test_preemption_two_threads_one_holder(void **state)
{
    model m1, m2;
    racer r[2];
    pthread_t th[2];
    pthread_barrier_t start;
    int winner;
    (void)state;
    model_init(&m1);
    model_init(&m2);
    pthread_barrier_init(&start, NULL, 2);
    memset(r, 0, sizeof(r));
    assert_ckpt_ok(
        ckpt_monitored_session_new(&r[0].ms, m1.graph, NULL, 0, NULL));
    assert_ckpt_ok(
        ckpt_monitored_session_new(&r[1].ms, m2.graph, NULL, 0, NULL));
    for (int i = 0; i < 2; i++) {
        r[i].start = &start;
        assert_int_equal(pthread_create(&th[i], NULL, race_install, &r[i]), 0);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    assert_true((r[0].rc == 0 && r[1].rc == CKPT_EBUSY) ||
                (r[0].rc == CKPT_EBUSY && r[1].rc == 0));
    winner = r[0].rc == 0 ? 0 : 1;
    raise(SIGINT);
    assert_true(ckpt_monitored_session_should_stop(r[winner].ms, NULL));
    assert_false(ckpt_monitored_session_should_stop(r[1 - winner].ms, NULL));
    ckpt_monitored_session_free(r[winner].ms); /* hands the handler back */
    assert_true(handler_is_default(SIGINT));
    assert_ckpt_ok(ckpt_preemption_handler_install(r[1 - winner].ms));
    ckpt_monitored_session_free(r[1 - winner].ms);
    assert_true(handler_is_default(SIGTERM));
    pthread_barrier_destroy(&start);
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
        cmocka_unit_test(test_preemption_restores_application_handler),
        cmocka_unit_test(test_preemption_leaves_ignored_signal_ignored),
        cmocka_unit_test(test_preemption_warns_unusable_sigterm),
        cmocka_unit_test(test_preemption_two_threads_one_holder),
    };
    /* Run from a shell's background job, SIGINT arrives ignored, and an
     * ignored signal stays ignored under the handler (and across exec):
     * start from the default so that the signals these tests send act. */
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
