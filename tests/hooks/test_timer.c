/* tests/hooks/test_timer.c - SecondOrStepTimer and NeverTriggerTimer
 * (docs/behaviour.md B1-B13), time driven by a fake clock. */
#include "session/session_test_util.h"

static void test_b1_neither_interval_einval(void **state)
{
    ckpt_timer t;
    (void)state;
    assert_ckpt_error(ckpt_timer_init(&t, 0.0, 0, NULL), CKPT_EINVAL,
                      "neither");
}

static void test_b2_both_intervals_einval(void **state)
{
    ckpt_timer t;
    (void)state;
    assert_ckpt_error(ckpt_timer_init(&t, 10.0, 5, NULL), CKPT_EINVAL, "both");
}

static void test_b3_non_positive_interval_einval(void **state)
{
    ckpt_timer t;
    (void)state;
    assert_ckpt_error(ckpt_timer_init(&t, -1.0, 0, NULL), CKPT_EINVAL,
                      "positive");
    assert_ckpt_error(ckpt_timer_init(&t, 0.0, -5, NULL), CKPT_EINVAL,
                      "positive");
    assert_ckpt_error(ckpt_timer_init(&t, 10.0, -1, NULL), CKPT_EINVAL,
                      "positive");
    /* zero is "unset", so a lone zero interval is also rejected */
    assert_ckpt_error(ckpt_timer_init(&t, 0.0, 0, NULL), CKPT_EINVAL, NULL);
    assert_ckpt_ok(ckpt_timer_init(&t, 0.5, 0, NULL));
    assert_ckpt_ok(ckpt_timer_init(&t, 0.0, 1, NULL));
}

static void test_b4_fresh_timer_triggers_any_step(void **state)
{
    ckpt_timer t;
    fake_clock fc;
    (void)state;
    fake_clock_init(&fc, 0.0, 1.7e9 + 0.0);
    assert_ckpt_ok(ckpt_timer_init(&t, 0.0, 5, NULL));
    assert_true(ckpt_timer_should_trigger(&t, 0));
    assert_true(ckpt_timer_should_trigger(&t, -3));
    assert_true(ckpt_timer_should_trigger(&t, 12345));
    assert_ckpt_ok(ckpt_timer_init(&t, 60.0, 0, &fc.clock));
    assert_true(ckpt_timer_should_trigger(&t, 0));
    assert_true(ckpt_timer_should_trigger(&t, -1));
}

static void test_b5_same_step_never_triggers_twice(void **state)
{
    ckpt_timer t;
    fake_clock fc;
    (void)state;
    fake_clock_init(&fc, 100.0, 1.7e9 + 100.0);
    assert_ckpt_ok(ckpt_timer_init(&t, 10.0, 0, &fc.clock));
    ckpt_timer_update(&t, 7, NULL, NULL);
    fc.now += 1000.0;
    assert_false(ckpt_timer_should_trigger(&t, 7));
    assert_true(ckpt_timer_should_trigger(&t, 8));
    assert_ckpt_ok(ckpt_timer_init(&t, 0.0, 1, NULL));
    ckpt_timer_update(&t, 7, NULL, NULL);
    assert_false(ckpt_timer_should_trigger(&t, 7));
}

static void test_b6_steps_mode_inclusive_boundary(void **state)
{
    ckpt_timer t;
    (void)state;
    assert_ckpt_ok(ckpt_timer_init(&t, 0.0, 5, NULL));
    ckpt_timer_update(&t, 10, NULL, NULL);
    for (int64_t s = 11; s <= 14; s++)
        assert_false(ckpt_timer_should_trigger(&t, s));
    assert_true(ckpt_timer_should_trigger(&t, 15));
    assert_true(ckpt_timer_should_trigger(&t, 16));
}

static void test_b7_steps_mode_lower_step_no_trigger(void **state)
{
    ckpt_timer t;
    (void)state;
    assert_ckpt_ok(ckpt_timer_init(&t, 0.0, 5, NULL));
    ckpt_timer_update(&t, 10, NULL, NULL);
    assert_false(ckpt_timer_should_trigger(&t, 3));
    assert_false(ckpt_timer_should_trigger(&t, -100));
    assert_false(ckpt_timer_should_trigger(&t, INT64_MIN));
}

static void test_b8_seconds_mode_uses_clock(void **state)
{
    ckpt_timer t;
    fake_clock fc;
    (void)state;
    fake_clock_init(&fc, 50.0, 1.7e9 + 50.0);
    assert_ckpt_ok(ckpt_timer_init(&t, 30.0, 0, &fc.clock));
    ckpt_timer_update(&t, 4, NULL, NULL);
    fc.now = 79.999;
    assert_false(ckpt_timer_should_trigger(&t, 5));
    fc.now = 80.0;
    assert_true(ckpt_timer_should_trigger(&t, 5));
    /* in seconds mode a lower step can trigger (e.g. after a restore) */
    assert_true(ckpt_timer_should_trigger(&t, 1));
}

/* A caller's clock that goes back (not monotonic, or reset) to before the
 * last update: the timer triggers once, and the update re-anchors it at
 * the new time, from which the interval counts again. It waited for the
 * clock to come back past the old anchor (an hour here: no save for an
 * hour). */
static void test_b8_clock_backwards_triggers_once_reanchors(void **state)
{
    ckpt_timer t;
    fake_clock fc;
    double elapsed = 1.0;
    (void)state;
    fake_clock_init(&fc, 5000.0, 1.7e9);
    assert_ckpt_ok(ckpt_timer_init(&t, 30.0, 0, &fc.clock));
    ckpt_timer_update(&t, 10, NULL, NULL);
    fc.now = 1400.0;                                 /* an hour earlier */
    assert_false(ckpt_timer_should_trigger(&t, 10)); /* B5 still holds */
    assert_true(ckpt_timer_should_trigger(&t, 11));
    assert_int_equal(ckpt_timer_update(&t, 11, &elapsed, NULL), 1);
    assert_true(elapsed == -3600.0); /* what the clock said, reported */
    /* re-anchored at 1400: not at every step, and again after 30 s */
    fc.now = 1400.5;
    assert_false(ckpt_timer_should_trigger(&t, 12));
    fc.now = 1429.999;
    assert_false(ckpt_timer_should_trigger(&t, 13));
    fc.now = 1430.0;
    assert_true(ckpt_timer_should_trigger(&t, 13));
}

static void test_b9_first_update_reports_absent(void **state)
{
    ckpt_timer t;
    fake_clock fc;
    double secs = -1;
    int64_t steps = -1;
    (void)state;
    fake_clock_init(&fc, 5.0, 1.7e9 + 5.0);
    assert_ckpt_ok(ckpt_timer_init(&t, 1.0, 0, &fc.clock));
    assert_int_equal(ckpt_timer_update(&t, 3, &secs, &steps), 0);
    assert_true(secs == 0.0);
    assert_int_equal(steps, 0);
}

static void test_b10_later_update_reports_elapsed(void **state)
{
    ckpt_timer t;
    fake_clock fc;
    double secs = -1;
    int64_t steps = -1;
    (void)state;
    fake_clock_init(&fc, 5.0, 1.7e9 + 5.0);
    assert_ckpt_ok(ckpt_timer_init(&t, 0.0, 2, &fc.clock));
    ckpt_timer_update(&t, 10, NULL, NULL);
    fc.now = 7.5;
    assert_int_equal(ckpt_timer_update(&t, 14, &secs, &steps), 1);
    assert_true(secs == 2.5);
    assert_int_equal(steps, 4);
    fc.now = 8.0;
    assert_int_equal(ckpt_timer_update(&t, 14, &secs, &steps), 1);
    assert_int_equal(steps, 0);
    assert_true(secs == 0.5);
    assert_int_equal(ckpt_timer_update(&t, 9, &secs, &steps), 1);
    assert_int_equal(steps, -5);
}

static void test_b11_last_step_none_then_value_then_reset(void **state)
{
    ckpt_timer t;
    int64_t last = 99;
    (void)state;
    assert_ckpt_ok(ckpt_timer_init(&t, 0.0, 3, NULL));
    assert_int_equal(ckpt_timer_last_step(&t, &last), 0);
    assert_int_equal(last, 99);
    ckpt_timer_update(&t, 42, NULL, NULL);
    assert_int_equal(ckpt_timer_last_step(&t, &last), 1);
    assert_int_equal(last, 42);
    ckpt_timer_reset(&t);
    assert_int_equal(ckpt_timer_last_step(&t, &last), 0);
    assert_true(ckpt_timer_should_trigger(&t, 42));
}

static void test_b12_jump_triggers_once_no_catch_up(void **state)
{
    ckpt_timer t;
    (void)state;
    assert_ckpt_ok(ckpt_timer_init(&t, 0.0, 5, NULL));
    ckpt_timer_update(&t, 10, NULL, NULL);
    assert_true(ckpt_timer_should_trigger(&t, 25));
    ckpt_timer_update(&t, 25, NULL, NULL);
    for (int64_t s = 26; s <= 29; s++)
        assert_false(ckpt_timer_should_trigger(&t, s));
    assert_true(ckpt_timer_should_trigger(&t, 30));
}

static void test_b12_schedule_relative_to_last_trigger(void **state)
{
    ckpt_timer t;
    int64_t triggered[8];
    int n = 0;
    (void)state;
    /* start at 7 with N=5: 7, 12, 17 */
    assert_ckpt_ok(ckpt_timer_init(&t, 0.0, 5, NULL));
    for (int64_t s = 7; s <= 19 && n < 8; s++)
        if (ckpt_timer_should_trigger(&t, s)) {
            ckpt_timer_update(&t, s, NULL, NULL);
            triggered[n++] = s;
        }
    assert_int_equal(n, 3);
    assert_int_equal(triggered[1], 12);
    assert_int_equal(triggered[2], 17);
    /* jumps of 3 from 0: 0, 6, 12, 18 (phase drifts) */
    ckpt_timer_reset(&t);
    n = 0;
    for (int64_t s = 0; s <= 18 && n < 8; s += 3)
        if (ckpt_timer_should_trigger(&t, s)) {
            ckpt_timer_update(&t, s, NULL, NULL);
            triggered[n++] = s;
        }
    assert_int_equal(n, 4);
    assert_int_equal(triggered[1], 6);
    assert_int_equal(triggered[3], 18);
}

static void test_b13_never_timer(void **state)
{
    ckpt_timer t;
    double secs = -1;
    int64_t steps = -1, last = 5;
    (void)state;
    ckpt_timer_init_never(&t);
    assert_false(ckpt_timer_should_trigger(&t, 0));
    assert_false(ckpt_timer_should_trigger(&t, 100));
    assert_int_equal(ckpt_timer_update(&t, 3, &secs, &steps), 0);
    assert_true(secs == 0.0);
    assert_int_equal(steps, 0);
    assert_int_equal(ckpt_timer_last_step(&t, &last), 0);
    assert_int_equal(last, 5);
    assert_false(ckpt_timer_should_trigger(&t, 4));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_b1_neither_interval_einval),
        cmocka_unit_test(test_b2_both_intervals_einval),
        cmocka_unit_test(test_b3_non_positive_interval_einval),
        cmocka_unit_test(test_b4_fresh_timer_triggers_any_step),
        cmocka_unit_test(test_b5_same_step_never_triggers_twice),
        cmocka_unit_test(test_b6_steps_mode_inclusive_boundary),
        cmocka_unit_test(test_b7_steps_mode_lower_step_no_trigger),
        cmocka_unit_test(test_b8_seconds_mode_uses_clock),
        cmocka_unit_test(test_b8_clock_backwards_triggers_once_reanchors),
        cmocka_unit_test(test_b9_first_update_reports_absent),
        cmocka_unit_test(test_b10_later_update_reports_elapsed),
        cmocka_unit_test(test_b11_last_step_none_then_value_then_reset),
        cmocka_unit_test(test_b12_jump_triggers_once_no_catch_up),
        cmocka_unit_test(test_b12_schedule_relative_to_last_trigger),
        cmocka_unit_test(test_b13_never_timer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
