/* tests/session/test_coordinator.c - the coordinator (docs/behaviour.md
 * B36-B38): which error is recorded, join's preference for the recorded error
 * over stragglers, clear_stop, and real threads waiting for a stop (run under
 * TSan too). */
#include "session_test_util.h"

#include <pthread.h>
#include <time.h>

static void test_b36_first_error_kept_later_dropped(void **state)
{
    ckpt_coordinator *c;
    (void)state;
    assert_ckpt_ok(ckpt_coordinator_new(&c, NULL));
    assert_false(ckpt_coordinator_should_stop(c));
    assert_int_equal(ckpt_coordinator_recorded_error(c), 0);
    assert_ckpt_ok(ckpt_coordinator_request_stop(c, CKPT_EIO, "first"));
    assert_true(ckpt_coordinator_should_stop(c));
    assert_ckpt_ok(ckpt_coordinator_request_stop(c, CKPT_ENOSPC, "second"));
    assert_ckpt_error(ckpt_coordinator_recorded_error(c), CKPT_EIO, "first");
    ckpt_coordinator_free(c);
}

static void test_b36_error_after_clean_stop_dropped(void **state)
{
    ckpt_coordinator *c;
    (void)state;
    assert_ckpt_ok(ckpt_coordinator_new(&c, NULL));
    assert_ckpt_ok(ckpt_coordinator_request_stop(c, 0, NULL));
    assert_ckpt_ok(ckpt_coordinator_request_stop(c, CKPT_EIO, "late"));
    assert_int_equal(ckpt_coordinator_recorded_error(c), 0);
    ckpt_coordinator_free(c);

    assert_ckpt_ok(ckpt_coordinator_new(&c, NULL));
    assert_ckpt_ok(ckpt_coordinator_request_stop(c, CKPT_EOUT_OF_RANGE,
                                                 "input exhausted"));
    assert_true(ckpt_coordinator_should_stop(c));
    assert_int_equal(ckpt_coordinator_recorded_error(c), 0);
    assert_ckpt_ok(ckpt_coordinator_request_stop(c, CKPT_EIO, "late"));
    assert_int_equal(ckpt_coordinator_recorded_error(c), 0);
    ckpt_coordinator_free(c);
}

static void test_b36_clean_end_codes_never_recorded(void **state)
{
    ckpt_coordinator *c;
    (void)state;
    assert_ckpt_ok(ckpt_coordinator_new(&c, NULL));
    assert_ckpt_ok(ckpt_coordinator_request_stop(c, CKPT_ESTOPITER, "x"));
    assert_int_equal(ckpt_coordinator_recorded_error(c), 0);
    ckpt_coordinator_clear_stop(c);
    assert_ckpt_ok(ckpt_coordinator_request_stop(c, CKPT_EOUT_OF_RANGE, "x"));
    assert_int_equal(ckpt_coordinator_recorded_error(c), 0);
    ckpt_coordinator_free(c);
}

static void test_b37_join_prefers_recorded_error(void **state)
{
    ckpt_coordinator *c;
    int id;
    (void)state;
    assert_ckpt_ok(ckpt_coordinator_new(&c, NULL));
    assert_ckpt_ok(ckpt_coordinator_register_thread(c, "straggler", &id));
    assert_ckpt_ok(ckpt_coordinator_request_stop(c, CKPT_EIO, "disk gone"));
    assert_ckpt_error(ckpt_coordinator_join(c, 0.001, 0), CKPT_EIO,
                      "disk gone");
    ckpt_coordinator_free(c);
}

static void test_b37_join_stragglers_timeout_unless_ignored(void **state)
{
    ckpt_coordinator *c;
    fake_clock fc;
    int id, id2;
    (void)state;
    fake_clock_init(&fc, 10.0, 1.7e9 + 10.0);
    assert_ckpt_ok(ckpt_coordinator_new(&c, &fc.clock));
    assert_ckpt_ok(ckpt_coordinator_register_thread(c, "reader", &id));
    assert_ckpt_ok(ckpt_coordinator_register_thread(c, "writer", &id2));
    ckpt_coordinator_thread_done(c, id2);
    assert_ckpt_ok(ckpt_coordinator_request_stop(c, 0, NULL));
    assert_ckpt_error(ckpt_coordinator_join(c, 0.001, 0), CKPT_ETIMEDOUT,
                      "1 thread(s) still running");
    assert_ckpt_error(CKPT_ETIMEDOUT, CKPT_ETIMEDOUT, "reader");
    /* joined: the registered threads were forgotten */
    assert_ckpt_ok(ckpt_coordinator_join(c, 0.001, 0));
    ckpt_coordinator_clear_stop(c);
    assert_ckpt_ok(ckpt_coordinator_register_thread(c, "reader2", &id));
    assert_ckpt_ok(ckpt_coordinator_request_stop(c, 0, NULL));
    assert_ckpt_ok(ckpt_coordinator_join(c, 0.001, 1));
    ckpt_coordinator_free(c);
}

static void test_b37_error_after_join_returned_immediately(void **state)
{
    ckpt_coordinator *c;
    (void)state;
    assert_ckpt_ok(ckpt_coordinator_new(&c, NULL));
    assert_ckpt_ok(ckpt_coordinator_request_stop(c, 0, NULL));
    assert_ckpt_ok(ckpt_coordinator_join(c, 0, 0));
    assert_ckpt_error(ckpt_coordinator_request_stop(c, CKPT_EIO, "too late"),
                      CKPT_EIO, "too late");
    assert_int_equal(ckpt_coordinator_recorded_error(c), 0);
    assert_ckpt_ok(ckpt_coordinator_request_stop(c, 0, NULL));
    ckpt_coordinator_free(c);
}

static void test_b38_clear_stop_clears_flag_error_joined(void **state)
{
    ckpt_coordinator *c;
    (void)state;
    assert_ckpt_ok(ckpt_coordinator_new(&c, NULL));
    assert_ckpt_ok(ckpt_coordinator_request_stop(c, CKPT_EIO, "boom"));
    assert_int_equal(ckpt_coordinator_join(c, 0, 0), CKPT_EIO);
    ckpt_coordinator_clear_stop(c);
    assert_false(ckpt_coordinator_should_stop(c));
    assert_int_equal(ckpt_coordinator_recorded_error(c), 0);
    /* no longer joined: an error is recorded again, not returned */
    assert_ckpt_ok(ckpt_coordinator_request_stop(c, CKPT_ENOSPC, "full"));
    assert_ckpt_error(ckpt_coordinator_recorded_error(c), CKPT_ENOSPC, "full");
    ckpt_coordinator_free(c);
}

static void test_coordinator_wait_for_stop_timeout(void **state)
{
    ckpt_coordinator *c;
    (void)state;
    assert_ckpt_ok(ckpt_coordinator_new(&c, NULL));
    assert_int_equal(ckpt_coordinator_wait_for_stop(c, 0.001), 0);
    assert_ckpt_ok(ckpt_coordinator_request_stop(c, 0, NULL));
    assert_int_equal(ckpt_coordinator_wait_for_stop(c, 0.0), 1);
    assert_int_equal(ckpt_coordinator_wait_for_stop(c, -1.0), 1);
    ckpt_coordinator_free(c);
}

typedef struct worker {
    ckpt_coordinator *c;
    int id;
    int fail; /* report an error instead of waiting */
    int saw_stop;
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    if (w->fail)
        ckpt_coordinator_request_stop(w->c, CKPT_EIO, "worker: read failed");
    else
        w->saw_stop = ckpt_coordinator_wait_for_stop(w->c, -1.0);
    ckpt_coordinator_thread_done(w->c, w->id);
    return NULL;
}

static void test_b37_threads_stop_and_join(void **state)
{
    ckpt_coordinator *c;
    worker w[4];
    pthread_t t[4];
    (void)state;
    assert_ckpt_ok(ckpt_coordinator_new(&c, NULL));
    for (int i = 0; i < 4; i++) {
        w[i].c = c;
        w[i].fail = 0;
        w[i].saw_stop = 0;
        assert_ckpt_ok(ckpt_coordinator_register_thread(c, "w", &w[i].id));
        assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
    }
    assert_ckpt_ok(ckpt_coordinator_request_stop(c, 0, NULL));
    assert_ckpt_ok(ckpt_coordinator_join(c, 30.0, 0));
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(w[i].saw_stop, 1);
    }
    ckpt_coordinator_free(c);
}

static void test_b37_thread_error_reaches_join(void **state)
{
    ckpt_coordinator *c;
    worker good, bad;
    pthread_t tg, tb;
    (void)state;
    assert_ckpt_ok(ckpt_coordinator_new(&c, NULL));
    good.c = bad.c = c;
    good.fail = 0;
    bad.fail = 1;
    assert_ckpt_ok(ckpt_coordinator_register_thread(c, "good", &good.id));
    assert_ckpt_ok(ckpt_coordinator_register_thread(c, "bad", &bad.id));
    assert_int_equal(pthread_create(&tg, NULL, worker_main, &good), 0);
    assert_int_equal(pthread_create(&tb, NULL, worker_main, &bad), 0);
    /* join waits for the stop the failing thread requests */
    assert_ckpt_error(ckpt_coordinator_join(c, 30.0, 0), CKPT_EIO,
                      "read failed");
    pthread_join(tg, NULL);
    pthread_join(tb, NULL);
    assert_int_equal(good.saw_stop, 1);
    ckpt_coordinator_free(c);
}

static void *wait_for_stop_forever(void *arg)
{
    (void)ckpt_coordinator_wait_for_stop(arg, -1);
    return NULL;
}

static void *request_stop(void *arg)
{
    (void)ckpt_coordinator_request_stop(arg, 0, NULL);
    return NULL;
}

/* A thread blocked in wait_for_stop and cancelled (pthread_cancel) left
 * with the mutex held (a cancelled condition wait reacquires it), so every
 * later call on the coordinator, from any thread, blocked for ever. Now
 * the wait stays a cancellation point and the mutex is released. (A
 * request_stop still blocked after 20 s fails the test instead of hanging
 * it.) */
static void test_cancelled_wait_for_stop_releases_the_coordinator(void **state)
{
    ckpt_coordinator *c;
    pthread_t waiter, stopper;
    struct timespec until;
    void *ret = NULL;
    (void)state;
    assert_ckpt_ok(ckpt_coordinator_new(&c, NULL));
    assert_int_equal(pthread_create(&waiter, NULL, wait_for_stop_forever, c),
                     0);
    assert_int_equal(pthread_cancel(waiter), 0);
    assert_int_equal(pthread_join(waiter, &ret), 0);
    assert_ptr_equal(ret, PTHREAD_CANCELED);
    assert_int_equal(pthread_create(&stopper, NULL, request_stop, c), 0);
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 20;
    assert_int_equal(pthread_timedjoin_np(stopper, NULL, &until), 0);
    assert_true(ckpt_coordinator_should_stop(c));
    assert_true(ckpt_coordinator_wait_for_stop(c, -1));
    ckpt_coordinator_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_b36_first_error_kept_later_dropped),
        cmocka_unit_test(test_b36_error_after_clean_stop_dropped),
        cmocka_unit_test(test_b36_clean_end_codes_never_recorded),
        cmocka_unit_test(test_b37_join_prefers_recorded_error),
        cmocka_unit_test(test_b37_join_stragglers_timeout_unless_ignored),
        cmocka_unit_test(test_b37_error_after_join_returned_immediately),
        cmocka_unit_test(test_b37_threads_stop_and_join),
        cmocka_unit_test(test_b37_thread_error_reaches_join),
        cmocka_unit_test(test_b38_clear_stop_clears_flag_error_joined),
        cmocka_unit_test(test_coordinator_wait_for_stop_timeout),
        cmocka_unit_test(test_cancelled_wait_for_stop_releases_the_coordinator),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
